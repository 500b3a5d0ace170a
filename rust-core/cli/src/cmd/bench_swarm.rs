//! `fragstate bench swarm`: N storage nodes and a client in one process, over
//! real TCP on loopback (Noise keyed by a cluster key, yamux), to measure what
//! membership costs as N grows past the point where one process per node
//! saturates a small machine (issue 13; `ci/swarm.sh --in-process` runs it per
//! size and plots the rows). Phases: the cluster forms through one seed, an
//! idle window (CPU, membership messages, connections, memory), restores of
//! objects written by the client (lookup requests, round trips, time), and a
//! stopped node (how long until every other node counts it dead). With
//! `--control-nodes`, a second, smaller cluster in the same process restores
//! its objects alternating with the measured cluster's, so that the two sizes
//! are compared side by side on a noisy machine. Prints progress on stderr and
//! one JSON object on stdout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use fragstate_client::transport::Transport;
use fragstate_client::Client;
use fragstate_core::lookup::lookup_candidates;
use fragstate_core::sample::state_like;
use fragstate_core::{Error, Result};
use fragstate_net::key::{generate_cluster_key_text, parse_cluster_key};
use fragstate_net::{DialCause, NetConfig, NetNode, Role, Traffic, MAX_PENDING_INCOMING};
use fragstate_store::FragmentStore;
use libp2p::identity::Keypair;
use libp2p::pnet::PreSharedKey;
use serde_json::json;

mod proc_self;

use crate::args::{parse_bytes, CodingArgs, MembershipArgs};
use crate::bench::{median, percentile};
use crate::cluster::read_and_compare;
use proc_self::{cpu_seconds, open_files_limit, page_faults, rss_bytes, thread_cpu_seconds};

#[derive(Args)]
pub(crate) struct BenchSwarmArgs {
    #[command(flatten)]
    pub membership: MembershipArgs,
    #[command(flatten)]
    pub coding: CodingArgs,
    /// Storage nodes to start (each its own failure domain, an in-memory store).
    #[arg(long, default_value_t = 50)]
    pub nodes: usize,
    /// Seconds the formed cluster settles, once no node has news left to
    /// pass on, before the idle window (of protocol time: × --time-dilation
    /// of wall time).
    #[arg(long, default_value_t = 10.0)]
    pub settle: f64,
    /// Seconds of idle measured (of protocol time, as --settle).
    #[arg(long, default_value_t = 10.0)]
    pub idle: f64,
    /// Objects the client writes, then restores (reads back and compares) once each.
    #[arg(long, default_value_t = 20)]
    pub objects: usize,
    /// Size of each object.
    #[arg(long, default_value = "1MiB", value_parser = parse_bytes)]
    pub size: u64,
    /// Runtime worker threads (all nodes share them).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Seconds to wait for the cluster to form, and for a stopped node to be found dead.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Nodes started per second (0: each as soon as the one before listens).
    /// A cluster's TaskManagers start over seconds, not all at once: past ~100
    /// nodes the back-to-back start saturates this one process (NETWORK.md).
    #[arg(long, default_value_t = 0.0)]
    pub join_rate: f64,
    /// How the nodes connect: real TCP on loopback (two open files per
    /// connection here, which caps N near 500 SWIM nodes), or libp2p's
    /// in-process memory transport (the same Noise, yamux and protocols, no
    /// sockets).
    #[arg(long, value_enum, default_value_t = SwarmTransport::Tcp)]
    pub transport: SwarmTransport,
    /// Runs every membership timing this many times slower (SWIM's period,
    /// probe timeout and suspicion, the connections' idle timeout and pings;
    /// `NetConfig::dilate_time`), so that each node needs that many times less
    /// CPU per second of wall time: one 2-core process then runs cluster sizes
    /// that storm at the real pace (NETWORK.md, "Swarm runs"). Rates and times
    /// are reported in protocol time too (wall time ÷ this); restores keep
    /// their real pace.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=MAX_TIME_DILATION))]
    pub time_dilation: u32,
    /// Storage nodes of a second, separate cluster (a seed and a client of its
    /// own, another cluster key) started first in the same process; its
    /// restores alternate with the measured cluster's, one by one. Both sizes
    /// then share one process, its load and the machine's moment, so the ratio
    /// of their restore times is the protocol's growth with N, apart from what
    /// the one shared process adds (NETWORK.md, "Time-dilated runs"). 0: none.
    #[arg(long, default_value_t = 0)]
    pub control_nodes: usize,
}

/// Samples of each awaited control measured beside the restores (one request, k + m at once, a yield).
const CONTROL_SAMPLES: usize = 200;

/// The median time of `samples` calls of `f` (given the call's number), in µs.
fn median_us(samples: usize, mut f: impl FnMut(usize)) -> f64 {
    median(
        (0..samples)
            .map(|i| {
                let t = Instant::now();
                f(i);
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect(),
    )
}

/// [`median_us`] of [`CONTROL_SAMPLES`] awaited steps; the first error ends it.
async fn median_us_async(mut f: impl AsyncFnMut() -> Result<()>) -> Result<f64> {
    let mut us = Vec::with_capacity(CONTROL_SAMPLES);
    for _ in 0..CONTROL_SAMPLES {
        let t = Instant::now();
        f().await?;
        us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(median(us))
}

/// The largest `--time-dilation` (the default 3 s suspicion becomes 5 minutes).
const MAX_TIME_DILATION: i64 = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SwarmTransport {
    Tcp,
    Memory,
}

pub(crate) fn bench_swarm(a: BenchSwarmArgs) -> Result<()> {
    let params = a.coding.params()?;
    if a.nodes <= params.fragments() {
        return Err(Error::invalid("nodes", a.nodes, format!("> k + m = {} (holders for every object, one more to stop)", params.fragments())));
    }
    if !(a.join_rate >= 0.0 && a.join_rate.is_finite()) {
        return Err(Error::invalid("join-rate", a.join_rate, "nodes per second ≥ 0 (0: as fast as they start)"));
    }
    if !(a.idle > 0.0 && a.settle >= 0.0) {
        return Err(Error::invalid("idle/settle", format!("{}/{}", a.idle, a.settle), "idle > 0 and settle ≥ 0 seconds"));
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(a.threads.max(1)).enable_all().build().map_err(|e| Error::io("start runtime", e))?;
    let row = rt.block_on(run(&a, params))?;
    println!("{row}");
    Ok(())
}

async fn run(a: &BenchSwarmArgs, params: fragstate_core::params::CodingParams) -> Result<serde_json::Value> {
    let mode = a.membership.mode;
    let name = format!("{mode:?}").to_lowercase();
    let timeout = Duration::from_secs(a.timeout);
    let key = parse_cluster_key(&generate_cluster_key_text()?, std::path::Path::new("(generated for the run)"))?;
    let rss_before = rss_bytes();
    let (transport, dilation) = (a.transport, a.time_dilation);
    eprintln!("{name}, {} nodes in one process over {transport:?}, membership timings {dilation}× slower than real (open files allowed: {}; a TCP connection holds two here)", a.nodes, open_files_limit());
    // Every node's live view costs a vector of N: polled every N ms (at least 50), not every 50,
    // and the progress line (every node's counters) only when it is printed.
    let poll = Duration::from_millis((a.nodes.max(a.control_nodes) as u64).max(50));
    let control = if a.control_nodes == 0 {
        None
    } else {
        if a.control_nodes <= params.fragments() {
            return Err(Error::invalid("control-nodes", a.control_nodes, format!("0 or > k + m = {}", params.fragments())));
        }
        let control_key = parse_cluster_key(&generate_cluster_key_text()?, std::path::Path::new("(generated for the control cluster)"))?;
        eprintln!("{name}: first a control cluster of {} nodes in this process, whose restores alternate with the measured cluster's", a.control_nodes);
        let nodes = start_cluster(a, &control_key, "c", a.control_nodes).await?;
        let client = start(mode, transport, dilation, &control_key, Role::Client, "control-client".into(), nodes[0].listen_addrs()).await?;
        let formed = until(timeout, poll, "every control node and its client to see every control node", |report| {
            let complete = nodes.iter().chain([&client]).filter(|n| n.live_nodes().len() == nodes.len()).count();
            (complete == nodes.len() + 1, if report { format!("{complete} of {} see all", nodes.len() + 1) } else { String::new() })
        })
        .await?;
        eprintln!("{name}: the control cluster formed after {formed:.1?}; now the measured cluster");
        Some((nodes, client))
    };
    let control_nodes: Vec<&NetNode> = control.iter().flat_map(|(nodes, client)| nodes.iter().chain([client])).collect();
    let mut nodes = start_cluster(a, &key, "n", a.nodes).await?;
    let seed = nodes[0].clone();
    let client_node = start(mode, transport, dilation, &key, Role::Client, "client".into(), seed.listen_addrs()).await?;
    let churn = || churn_line(&nodes.iter().map(|n| n.traffic()).collect::<Vec<_>>());
    let formed_client = until(timeout, poll, "the client to see every storage node", |report| {
        let seen = client_node.live_nodes().len();
        (seen == a.nodes, if report { format!("the client sees {seen} of {} storage nodes; since the start: {}", a.nodes, churn()) } else { String::new() })
    })
    .await?;
    let formed_all = formed_client
        + until(timeout, poll, "every node to see every storage node", |report| {
            let seen: Vec<usize> = nodes.iter().map(|n| n.live_nodes().len()).collect();
            let complete = seen.iter().filter(|&&s| s == a.nodes).count();
            let fewest = seen.iter().min().copied().unwrap_or(0);
            let progress = if report { format!("{complete} of {} nodes see every storage node; the fewest seen by one: {fewest}; since the start: {}", nodes.len(), churn()) } else { String::new() };
            (complete == nodes.len(), progress)
        })
        .await?;
    // The news of the formation (every join, retransmitted ~log N times by every node) takes a
    // while to die out after the last join; the idle window starts once it has (at 1,000 nodes
    // the drain is tens of seconds of protocol time, and an idle window inside it measures it).
    let drained = until(timeout, poll, "every node to have passed on its news", |report| {
        let pending: Vec<u64> = nodes.iter().chain([&client_node]).chain(control_nodes.iter().copied()).map(|n| n.traffic().news_pending).collect();
        let busy = pending.iter().filter(|&&p| p > 0).count();
        (busy == 0, if report { format!("{busy} nodes still pass on news, {} updates in all", pending.iter().sum::<u64>()) } else { String::new() })
    })
    .await?;
    // Protocol time × the dilation is wall time.
    let f = f64::from(dilation);
    let wall = |protocol_s: f64| Duration::from_secs_f64(protocol_s * f);
    eprintln!("{name}, {} nodes: the client sees all after {formed_client:.1?}, every node after {formed_all:.1?}, no news left after {drained:.1?} more; settling {:.0?}", a.nodes, wall(a.settle));
    tokio::time::sleep(wall(a.settle)).await;

    // Idle: the process's CPU and every node's connections and membership messages.
    // The process's CPU and memory are shared by every node in it, the control cluster's too.
    let population = a.nodes + 1 + control_nodes.len();
    let traffic = || nodes.iter().chain([&client_node]).map(|n| n.traffic()).collect::<Vec<_>>();
    let (t0, cpu0, traffic0) = (Instant::now(), cpu_seconds(), traffic());
    tokio::time::sleep(wall(a.idle)).await;
    let (span, cpu1, traffic1) = (t0.elapsed().as_secs_f64(), cpu_seconds(), traffic());
    let rss_per_node = rss_bytes().saturating_sub(rss_before) as f64 / population as f64;
    // Every connection has both its ends in this process: the file limit caps N here, not in a cluster.
    let open_files = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let measured_nodes = a.nodes + 1;
    let per_node_rate = |f: &dyn Fn(&Traffic) -> u64| (total(&traffic1, f) - total(&traffic0, f)) as f64 / span / measured_nodes as f64;
    let mut connected: Vec<usize> = traffic1.iter().map(|t| t.connected_peers).collect();
    connected.sort_unstable();
    let cpu_all = (cpu1 - cpu0) / span;
    eprintln!("{name}, {} nodes: idle CPU {:.1} % of a core in all, {:.0} membership messages per node/s", a.nodes, 100.0 * cpu_all, per_node_rate(&|t| t.membership_messages_sent));
    eprintln!("{name}, {} nodes: since the start, {}", a.nodes, churn_line(&traffic1));

    // What the client's whole view costs to build (readers used to build it for every stripe).
    let view_us = median_us(50, |_| drop(std::hint::black_box(client_node.live_nodes())));

    // Restores: every object written, then each read back once.
    // A client's settings with the run's coding parameters (the measured cluster's and the control's).
    let config_of = |node: &NetNode| fragstate_client::ClientConfig { params, ..node.client_config(false) };
    let client_config = config_of(&client_node);
    // What ranking the lookup's k + m candidates over that view costs (rendezvous: every node scored).
    let view = client_node.live_nodes();
    let rank_us = median_us(50, |i| drop(std::hint::black_box(lookup_candidates(format!("swarm/obj-{i}").as_bytes(), &view, params.fragments(), client_config.placement))));
    let client = Client::new(Arc::new(client_node.clone()), client_config)?;
    let control_client = match &control {
        Some((_, node)) => Some(Client::new(Arc::new(node.clone()), config_of(node))?),
        None => None,
    };
    let data = state_like(a.size as usize);
    for c in [Some(&client), control_client.as_ref()].into_iter().flatten() {
        for i in 0..a.objects {
            let mut w = c.create(&format!("swarm/obj-{i}"), true).await?;
            w.write(&data).await?;
            w.close().await?;
        }
    }
    // Controls beside the restores, in the same process: one request's round trip to a
    // holder (a manifest, a few hundred bytes: the protocol's work per hop is the same at any
    // N), and how long a task that yields waits for the runtime's other ready tasks (every
    // node's, in one process; a node of a real cluster has a process of its own).
    let written = client.find_manifest("swarm/obj-0").await?.ok_or_else(|| Error::NotFound { path: "swarm/obj-0".into() })?;
    let holder = written.holders.last().cloned().ok_or_else(|| Error::invalid("holders of swarm/obj-0", 0, "k + m"))?;
    let found = |answer: Result<Option<Arc<fragstate_core::format::Manifest>>>| answer?.map(|_| ()).ok_or_else(|| Error::NotFound { path: written.path.clone() });
    let request_us = median_us_async(async || found(client_node.get_manifest(&holder, &written.path).await)).await?;
    // The lookup's requests alone: the same k + m at once to the object's holders, without
    // the view and ranking the lookup does first (its time is the slowest answer's).
    let holders_us = median_us_async(async || {
        let answers = futures::future::join_all(written.holders.iter().map(|h| client_node.get_manifest(h, &written.path))).await;
        answers.into_iter().try_for_each(found)
    })
    .await?;
    let yield_us = median_us_async(async || {
        tokio::task::yield_now().await;
        Ok(())
    })
    .await?;
    eprintln!("{name}, {} nodes: a request's round trip to a holder {request_us:.0} µs, to all k + m at once {holders_us:.0} µs, a yield {yield_us:.2} µs, the client's view {view_us:.0} µs, ranking k + m candidates over it {rank_us:.0} µs (medians)", a.nodes);
    let before = client.stats();
    let (faults0, cpu_restores0, restores_t0) = (page_faults(), thread_cpu_seconds(), Instant::now());
    let (mut restores, mut control_restores) = (Restores::default(), Restores::default());
    for i in 0..a.objects {
        // With a control cluster, the two alternate which goes first.
        if let (Some(c), true) = (&control_client, i % 2 == 1) {
            control_restores.restore(c, i, &data).await?;
        }
        restores.restore(&client, i, &data).await?;
        if let (Some(c), true) = (&control_client, i % 2 == 0) {
            control_restores.restore(c, i, &data).await?;
        }
    }
    // What the restores cost the process: page faults (a first touch of memory) and CPU per restore.
    let (faults1, restores_done) = (page_faults(), (restores.total_ms.len() + control_restores.total_ms.len()).max(1) as f64);
    let minor_faults_per_restore = (faults1.0 - faults0.0) as f64 / restores_done;
    let major_faults = faults1.1 - faults0.1;
    let cpu_per_restore_ms = (thread_cpu_seconds() - cpu_restores0) * 1e3 / restores_done;
    let restores_wall_ms = restores_t0.elapsed().as_secs_f64() * 1e3 / restores_done;
    eprintln!("{name}, {} nodes: the restores took {restores_wall_ms:.1} ms each of wall time, {cpu_per_restore_ms:.2} ms of the process's CPU (all nodes), {minor_faults_per_restore:.0} minor page faults, {major_faults} major in all", a.nodes);
    let after = client.stats();
    let lookups = (after.manifest_lookups - before.manifest_lookups).max(1) as f64;
    let requests_per_restore = (after.manifest_requests - before.manifest_requests) as f64 / lookups;
    let first_round_share = (after.manifest_lookups_by_path - before.manifest_lookups_by_path) as f64 / lookups;
    let restore_median = restores.median_ms();
    eprintln!("{name}, {} nodes: restore median {restore_median:.1} ms, {requests_per_restore:.1} lookup requests each", a.nodes);
    let control_median = control.is_some().then(|| control_restores.median_ms());
    if let Some(control_median) = control_median {
        eprintln!(
            "{name}, {} nodes: the control cluster's ({} nodes) restores, alternating with these, median {control_median:.1} ms: {:.2}× ",
            a.nodes,
            a.control_nodes,
            restore_median / control_median
        );
    }

    // A node stops answering (as when killed): when does each other node count it dead?
    let stopped = nodes.pop().expect("more than k + m nodes");
    stopped.stop();
    let t0 = Instant::now();
    let others: Vec<&NetNode> = nodes.iter().chain([&client_node]).collect();
    let mut dead_at: Vec<Option<f64>> = vec![None; others.len()];
    while dead_at.iter().any(Option::is_none) && t0.elapsed() < timeout {
        for (n, at) in others.iter().zip(dead_at.iter_mut()) {
            if at.is_none() && n.down_since(stopped.id()).is_some() {
                *at = Some(t0.elapsed().as_secs_f64());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let missed = dead_at.iter().filter(|d| d.is_none()).count();
    let mut dead: Vec<f64> = dead_at.into_iter().flatten().collect();
    dead.sort_by(f64::total_cmp);
    let dead_p99 = percentile(&dead, 99).unwrap_or(f64::NAN);
    eprintln!("{name}, {} nodes: the stopped node dead at p99 of the others after {dead_p99:.2} s ({:.2} s of protocol time; {missed} never)", a.nodes, dead_p99 / f);
    for n in nodes.iter().chain([&client_node]).chain(control_nodes.iter().copied()) {
        n.stop();
    }
    let round = |x: f64, digits: i32| (x * 10f64.powi(digits)).round() / 10f64.powi(digits);
    // Wall time ÷ dilation: what a cluster running at the real pace would take.
    let protocol = |wall_s: f64| round(wall_s / f, 2);
    // Connections asked for per node and second while idle, by cause; and in all since the start.
    let by_cause = |value: &dyn Fn(DialCause) -> serde_json::Value| DialCause::ALL.iter().map(|c| (c.name().to_string(), value(*c))).collect::<serde_json::Map<_, _>>();
    let dials_idle = by_cause(&|c| json!(round(per_node_rate(&|t| t.dials[c as usize]), 3)));
    let dials_total = by_cause(&|c| json!(total(&traffic1, &|t| t.dials[c as usize])));
    let closed_total = json!({
        "idle": total(&traffic1, &|t| t.closed_idle),
        "broken": total(&traffic1, &|t| t.closed_broken),
        "here": total(&traffic1, &|t| t.closed_here),
    });
    let mut row = json!({
        "mode": name, "nodes": a.nodes, "control_nodes": a.control_nodes, "in_process": true, "join_rate": a.join_rate, "transport": format!("{transport:?}").to_lowercase(),
        "formed_client_s": round(formed_client.as_secs_f64(), 2), "formed_all_s": round(formed_all.as_secs_f64(), 2),
        "idle_cpu_all_pct": round(100.0 * cpu_all, 1), "idle_cpu_per_node_pct": round(100.0 * cpu_all / population as f64, 3),
        "membership_msgs_per_node_s": round(per_node_rate(&|t| t.membership_messages_sent), 2),
        "membership_bytes_per_node_s": round(per_node_rate(&|t| t.membership_bytes_sent), 0),
        "connections_opened_per_node_s": round(per_node_rate(&|t| t.connections_opened), 3),
        "dials_per_node_s_idle": dials_idle, "dials_since_start": dials_total, "connections_closed_since_start": closed_total,
        "connected_peers_p50": percentile(&connected, 50), "connected_peers_p99": percentile(&connected, 99),
        "connected_peers_max": connected.last(), "rss_per_node_mib": round(rss_per_node / f64::from(1 << 20), 2),
        "restore_median_ms": round(restore_median, 1), "restore_p90_ms": round(restores.p90_ms(), 1),
        "lookup_requests_per_restore": round(requests_per_restore, 2), "restores_settled_first_round": round(first_round_share, 3),
        "object_bytes": a.size, "objects": a.objects, "k": params.k(), "m": params.m(),
        "dead_p50_s": round(percentile(&dead, 50).unwrap_or(f64::NAN), 2), "dead_p99_s": round(percentile(&dead, 99).unwrap_or(f64::NAN), 2),
        "dead_max_s": round(dead.last().copied().unwrap_or(f64::NAN), 2), "dead_never": missed,
        "open_files_idle": open_files, "open_files_limit": open_files_limit(), "client_view_us": round(view_us, 1), "client_rank_us": round(rank_us, 1),
        "restore_lookup_median_ms": round(median(restores.lookup_ms.clone()), 2), "request_rtt_us": round(request_us, 0), "holders_rtt_us": round(holders_us, 0), "yield_us": round(yield_us, 2),
    });
    // In protocol time (wall time ÷ --time-dilation), and what a node would spend at the real pace.
    let protocol_time = json!({
        "time_dilation": dilation,
        "formed_all_protocol_s": protocol(formed_all.as_secs_f64()),
        "news_drained_s": round(drained.as_secs_f64(), 2), "news_drained_protocol_s": protocol(drained.as_secs_f64()),
        // At the real pace a node does `dilation` times the work per second (an estimate: the per-node cost measured, scaled).
        "idle_cpu_per_node_at_real_pace_pct": round(100.0 * f * cpu_all / population as f64, 3),
        "membership_msgs_per_node_protocol_s": round(f * per_node_rate(&|t| t.membership_messages_sent), 2),
        "membership_bytes_per_node_protocol_s": round(f * per_node_rate(&|t| t.membership_bytes_sent), 0),
        "dead_p50_protocol_s": protocol(percentile(&dead, 50).unwrap_or(f64::NAN)), "dead_p99_protocol_s": protocol(dead_p99),
    });
    let restore_costs = json!({
        "restore_wall_ms_each": round(restores_wall_ms, 2), "restore_cpu_ms_each": round(cpu_per_restore_ms, 2),
        "restore_minor_faults_each": round(minor_faults_per_restore, 0), "restore_major_faults": major_faults,
    });
    for more in [protocol_time, restore_costs] {
        if let (Some(row), serde_json::Value::Object(more)) = (row.as_object_mut(), more) {
            row.extend(more);
        }
    }
    if let (Some(row), Some(control_median)) = (row.as_object_mut(), control_median) {
        row.extend([
            ("control_restore_median_ms".to_string(), json!(round(control_median, 1))),
            ("control_restore_p90_ms".to_string(), json!(round(control_restores.p90_ms(), 1))),
            ("control_restore_lookup_median_ms".to_string(), json!(round(median(control_restores.lookup_ms.clone()), 2))),
            ("restore_ratio_to_control".to_string(), json!(round(restore_median / control_median, 2))),
        ]);
    }
    Ok(row)
}

/// One cluster's restore times (ms): whole, and the lookup (opening ends once the manifest is found).
#[derive(Default)]
struct Restores {
    total_ms: Vec<f64>,
    lookup_ms: Vec<f64>,
}

impl Restores {
    /// Restores `swarm/obj-{i}` through `client`, compares its bytes with `data` and records the times.
    async fn restore(&mut self, client: &Client, i: usize, data: &[u8]) -> Result<()> {
        let t = Instant::now();
        let mut r = client.open(&format!("swarm/obj-{i}")).await?;
        self.lookup_ms.push(t.elapsed().as_secs_f64() * 1e3);
        read_and_compare(&mut r, data, "a restored object").await?;
        self.total_ms.push(t.elapsed().as_secs_f64() * 1e3);
        Ok(())
    }

    fn median_ms(&self) -> f64 {
        median(self.total_ms.clone())
    }

    fn p90_ms(&self) -> f64 {
        let mut sorted = self.total_ms.clone();
        sorted.sort_by(f64::total_cmp);
        percentile(&sorted, 90).unwrap_or(f64::NAN)
    }
}

/// `count` storage nodes named `{prefix}0`, `{prefix}1`, … of the cluster of `key`,
/// started at `--join-rate`, each joining through the first.
async fn start_cluster(a: &BenchSwarmArgs, key: &PreSharedKey, prefix: &str, count: usize) -> Result<Vec<NetNode>> {
    let started = Instant::now();
    let start_node = |name: String, bootstrap| start(a.membership.mode, a.transport, a.time_dilation, key, Role::Storage, name, bootstrap);
    let seed = start_node(format!("{prefix}0"), Vec::new()).await?;
    let mut nodes = vec![seed.clone()];
    for i in 1..count {
        if a.join_rate > 0.0 {
            tokio::time::sleep_until((started + Duration::from_secs_f64(i as f64 / a.join_rate)).into()).await;
        }
        nodes.push(start_node(format!("{prefix}{i}"), seed.listen_addrs()).await?);
        if (i + 1) % 100 == 0 {
            eprintln!("  {} nodes started ({:.1} s)", i + 1, started.elapsed().as_secs_f64());
        }
    }
    Ok(nodes)
}

async fn start(mode: fragstate_net::Membership, transport: SwarmTransport, dilation: u32, key: &PreSharedKey, role: Role, name: String, bootstrap: Vec<libp2p::Multiaddr>) -> Result<NetNode> {
    let mut cfg = NetConfig::new(Keypair::generate_ed25519(), role, Some(*key));
    cfg.set_membership(mode);
    cfg.dilate_time(dilation);
    if transport == SwarmTransport::Memory {
        cfg.in_memory_transport = true;
        cfg.listen = vec!["/memory/0".parse().expect("a memory multiaddr")];
    }
    cfg.bootstrap = bootstrap;
    // Every dial here comes from 127.0.0.1: the per-address bound of half-open
    // connections (room for one host's nodes) would refuse most of a join's
    // fan-in, so only the total bound applies.
    cfg.pending_incoming_per_address = MAX_PENDING_INCOMING;
    if role == Role::Storage {
        cfg.store = Some(Arc::new(FragmentStore::in_memory(&name, 1 << 30)));
    }
    cfg.domain = name;
    NetNode::start(cfg).await
}

/// Polls `check` every `poll` (done?, and the progress when asked for) and
/// prints the progress every 10 s; the time it took, or an error naming the
/// last progress after `timeout`.
async fn until(timeout: Duration, poll: Duration, what: &str, check: impl Fn(bool) -> (bool, String)) -> Result<Duration> {
    let t = Instant::now();
    let mut reported = t;
    loop {
        let (report, late) = (reported.elapsed() >= PROGRESS_EVERY, t.elapsed() > timeout);
        let (done, progress) = check(report || late);
        if done {
            return Ok(t.elapsed());
        }
        if late {
            return Err(Error::Usage { component: "bench swarm", reason: format!("waited --timeout {} s for {what}; it did not happen (last: {progress})", timeout.as_secs()) });
        }
        if report {
            reported = Instant::now();
            eprintln!("  {:.0} s: {progress}", t.elapsed().as_secs_f64());
        }
        tokio::time::sleep(poll).await;
    }
}

/// Connections asked for by cause, and closed by cause, summed over `traffic`
/// (what a run that does not form shows first: NETWORK.md, "Swarm runs").
fn churn_line(traffic: &[Traffic]) -> String {
    let dials: Vec<String> = DialCause::ALL.iter().map(|c| format!("{} {}", c.name(), total(traffic, &|t| t.dials[*c as usize]))).collect();
    format!(
        "dials asked for: {}; connections opened {}, closed idle {}, broken {}, here {}",
        dials.join(", "),
        total(traffic, &|t| t.connections_opened),
        total(traffic, &|t| t.closed_idle),
        total(traffic, &|t| t.closed_broken),
        total(traffic, &|t| t.closed_here)
    )
}

/// `f` of every node's traffic, summed.
fn total(traffic: &[Traffic], f: &dyn Fn(&Traffic) -> u64) -> u64 {
    traffic.iter().map(f).sum()
}

/// How often a long wait prints where it stands.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);
