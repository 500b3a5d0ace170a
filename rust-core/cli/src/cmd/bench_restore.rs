//! `fragstate bench restore write|read`: one TaskManager's checkpoint and its
//! restore, as two client processes of a running cluster — the measurement of
//! issue 14's proof (`ci/bench-adaptive.sh` runs it between emulated hosts
//! with shaped links).
//!
//! `write` plays the TaskManager: warm-up objects first (its earlier, smaller
//! checkpoints, which let adaptive mode measure its peers), then — in adaptive
//! mode after the first phase has ended — the state as `--objects` objects.
//! With `--rounds 2` it then waits for the driver to change the cluster
//! (`--round-gate`), writes a phase of small checkpoints and the state again
//! (issue 14's "follows a change"). It then exits, as a killed TaskManager would. `read` plays the TaskManager
//! that takes over: a fresh process that reads every object of the state,
//! `--parallel` at a time (Flink's RocksDB restore downloads files with 4
//! threads by default), compares every byte, and prints its figures. Both
//! print one JSON line on stdout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use futures::stream::{self, StreamExt, TryStreamExt};
use serde_json::json;

use fragstate_client::transport::Transport;
use fragstate_client::{AdaptiveConfig, Client};
use fragstate_core::sample::state_like;
use fragstate_core::{Error, Result};

use crate::args::{parse_bytes, parse_secs, ClusterArgs, CodingArgs};
use crate::bench::median;
use crate::cluster::{client, connect, read_and_compare, runtime};

#[derive(Subcommand)]
pub(crate) enum BenchRestore {
    /// Writes the warm-up objects and the state (the TaskManager before it dies).
    Write(WriteArgs),
    /// Reads the state back, timed, and checks it (the TaskManager that takes over).
    Read(ReadArgs),
}

/// What the state is: `objects` objects of `state / objects` bytes each under `prefix`.
#[derive(Args, Clone)]
pub(crate) struct StateArgs {
    /// Path prefix of this run's objects.
    #[arg(long)]
    prefix: String,
    /// Bytes of state, split evenly over the objects.
    #[arg(long, default_value = "300MiB", value_parser = parse_bytes)]
    state: u64,
    /// Objects the state is split into (RocksDB files).
    #[arg(long, default_value_t = 30)]
    objects: usize,
}

impl StateArgs {
    fn object_bytes(&self) -> Result<usize> {
        if self.objects == 0 || self.state < self.objects as u64 {
            return Err(Error::invalid("--objects", self.objects, format!("1 ≤ objects ≤ --state = {} bytes", self.state)));
        }
        Ok((self.state / self.objects as u64) as usize)
    }

    fn path(&self, i: usize) -> String {
        format!("{}/state-{i:04}", self.prefix.trim_end_matches('/'))
    }
}

#[derive(Args)]
pub(crate) struct WriteArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    #[command(flatten)]
    coding: CodingArgs,
    #[command(flatten)]
    state: StateArgs,
    /// Adaptive mode on, with the coding arguments as the configured parameters.
    #[arg(long)]
    adaptive: bool,
    /// Adaptive mode's phase (seconds); the state is written once the first phase ended.
    #[arg(long, default_value = "30", value_parser = parse_secs)]
    phase: Duration,
    /// Adaptive mode's largest (k+m)/k (default: the coding arguments' own).
    #[arg(long)]
    max_storage_overhead: Option<f64>,
    /// Warm-up objects of 4 MiB written first (earlier checkpoints).
    #[arg(long, default_value_t = 6)]
    warmup_objects: usize,
    /// Times the state is written: round r ≥ 2 under `<prefix>/round-<r>`, each
    /// after --round-gate exists and a phase of 4 MiB checkpoints one a second
    /// (the phase after a change in the cluster: adaptive mode's measurements).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// File the writer waits for (up to 10 minutes) before each further round;
    /// the driver creates it once it changed the cluster (e.g. slowed a link).
    #[arg(long)]
    round_gate: Option<std::path::PathBuf>,
}

/// Where each failure domain's fragments of one object sit: `D` data, `P`
/// parity, `-` none — in the order of the domains given.
fn positions(man: &fragstate_core::format::Manifest, domains: &[(fragstate_core::ids::NodeId, String)]) -> String {
    let k = man.params.k();
    domains
        .iter()
        .map(|(id, _)| match man.holders.iter().position(|h| h == id) {
            Some(i) if i < k => 'D',
            Some(_) => 'P',
            None => '-',
        })
        .collect()
}

#[derive(Args)]
pub(crate) struct ReadArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    #[command(flatten)]
    state: StateArgs,
    /// Objects read at once.
    #[arg(long, default_value_t = 4)]
    parallel: usize,
}

const WARMUP_OBJECT_BYTES: usize = 4 << 20;

pub(crate) fn bench_restore(role: BenchRestore) -> Result<()> {
    match role {
        BenchRestore::Write(a) => write(a),
        BenchRestore::Read(a) => read(a),
    }
}

async fn write_object(c: &Client, path: &str, data: &[u8]) -> Result<Arc<fragstate_core::format::Manifest>> {
    let mut w = c.create(path, true).await?;
    for chunk in data.chunks(1 << 20) {
        w.write(chunk).await?;
    }
    w.close().await
}

/// Waits until `gate` exists (at most 10 minutes).
async fn wait_for_gate(gate: &std::path::Path) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    while !gate.exists() {
        if Instant::now() > deadline {
            return Err(Error::invalid("--round-gate", gate.display(), "a file that appears within 10 minutes"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

fn write(a: WriteArgs) -> Result<()> {
    let per_object = a.state.object_bytes()?;
    let params = a.coding.params()?;
    runtime()?.block_on(async {
        let node = connect(&a.cluster, a.cluster.wait_nodes.unwrap_or(params.fragments())).await?;
        let r = async {
            let mut c = client(&node, &a.cluster, Some(&a.coding))?;
            if a.adaptive {
                let mut cfg = c.config().clone();
                cfg.adaptive = Some(AdaptiveConfig { phase: a.phase, max_storage_overhead: a.max_storage_overhead.unwrap_or(params.storage_overhead()) });
                c = Client::new(Arc::new(node.clone()), cfg)?;
            }
            let started = Instant::now();
            let warm = state_like(WARMUP_OBJECT_BYTES);
            for i in 0..a.warmup_objects {
                write_object(&c, &format!("{}/warmup-{i:04}", a.state.prefix.trim_end_matches('/')), &warm).await?;
            }
            let warmup_s = started.elapsed().as_secs_f64();
            if a.adaptive {
                let left = a.phase.saturating_sub(started.elapsed()) + Duration::from_millis(200);
                eprintln!("bench restore: warm-up written in {warmup_s:.1} s; waiting {:.1} s for the phase to end", left.as_secs_f64());
                tokio::time::sleep(left).await;
            }
            let data = state_like(per_object);
            // Failure domains by node id, in name order: the columns of `positions`.
            let mut domains: Vec<(fragstate_core::ids::NodeId, String)> = node.live_nodes().into_iter().map(|n| (n.id, n.domain.to_string())).collect();
            domains.sort_by(|x, y| x.1.cmp(&y.1));
            let mut rounds = Vec::new();
            let mut after_gate = Vec::new();
            let mut write_s = 0.0;
            for round in 1..=a.rounds {
                let prefix = if round == 1 { a.state.prefix.clone() } else { format!("{}/round-{round}", a.state.prefix.trim_end_matches('/')) };
                if round > 1 {
                    let gate = a.round_gate.as_deref().ok_or_else(|| Error::invalid("--round-gate", "none", "a file path when --rounds > 1"))?;
                    eprintln!("bench restore: round {} written; waiting for {}", round - 1, gate.display());
                    wait_for_gate(gate).await?;
                    let opened = Instant::now();
                    let mut n = 0;
                    while opened.elapsed() < a.phase + Duration::from_millis(200) {
                        let t = Instant::now();
                        let man = write_object(&c, &format!("{prefix}/checkpoint-{n:04}"), &warm).await?;
                        after_gate.push(json!({ "seconds": opened.elapsed().as_secs_f64(), "positions": positions(&man, &domains) }));
                        n += 1;
                        tokio::time::sleep(Duration::from_secs(1).saturating_sub(t.elapsed())).await;
                    }
                }
                let state = StateArgs { prefix, ..a.state.clone() };
                let t = Instant::now();
                let mut placed = Vec::new();
                let mut settings = Vec::new();
                for i in 0..state.objects {
                    let man = write_object(&c, &state.path(i), &data).await?;
                    placed.push(positions(&man, &domains));
                    settings.push(fragstate_core::adaptive::describe(&man.params));
                }
                write_s = t.elapsed().as_secs_f64();
                settings.sort();
                settings.dedup();
                // per domain: how many of the round's objects it holds a data / parity fragment of
                let count = |c: char| -> serde_json::Map<String, serde_json::Value> {
                    domains.iter().enumerate().map(|(d, (_, name))| (name.clone(), json!(placed.iter().filter(|p| p.as_bytes()[d] as char == c).count()))).collect()
                };
                rounds.push(json!({ "round": round, "prefix": state.prefix, "writeSeconds": write_s, "settings": settings, "dataFragments": count('D'), "parityFragments": count('P') }));
            }
            let stats = c.stats();
            let out = json!({
                "role": "write",
                "configured": fragstate_core::adaptive::describe(&params),
                "adaptive": a.adaptive,
                "stateBytes": per_object as u64 * a.state.objects as u64,
                "objects": a.state.objects,
                "warmupSeconds": warmup_s,
                "writeSeconds": write_s,
                "domains": domains.iter().map(|d| d.1.clone()).collect::<Vec<_>>(),
                "rounds": rounds,
                "afterGate": after_gate,
                "client": stats,
            });
            println!("{out}");
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}

fn read(a: ReadArgs) -> Result<()> {
    let per_object = a.state.object_bytes()?;
    if a.parallel == 0 {
        return Err(Error::invalid("--parallel", 0, "≥ 1"));
    }
    let data = Arc::new(state_like(per_object));
    runtime()?.block_on(async {
        let node = connect(&a.cluster, a.cluster.wait_nodes.unwrap_or(1)).await?;
        let r = async {
            let c = client(&node, &a.cluster, None)?;
            let t = Instant::now();
            let objects: Vec<(String, f64, f64)> = stream::iter(0..a.state.objects)
                .map(|i| {
                    let (c, data, path) = (c.clone(), data.clone(), a.state.path(i));
                    async move {
                        let opened = Instant::now();
                        let mut r = c.open(&path).await?;
                        let open_ms = opened.elapsed().as_secs_f64() * 1e3;
                        read_and_compare(&mut r, &data, &path).await?;
                        let object_ms = opened.elapsed().as_secs_f64() * 1e3;
                        Ok::<_, Error>((fragstate_core::adaptive::describe(&r.manifest().params), open_ms, object_ms))
                    }
                })
                .buffer_unordered(a.parallel)
                .try_collect()
                .await?;
            let seconds = t.elapsed().as_secs_f64();
            // Per object: the manifest lookup (open) and open-to-last-byte.
            let spread = |v: Vec<f64>| {
                let max = v.iter().copied().fold(0.0, f64::max);
                json!({ "median": median(v), "max": max })
            };
            let open_ms = spread(objects.iter().map(|o| o.1).collect());
            let object_ms = spread(objects.iter().map(|o| o.2).collect());
            let mut settings: Vec<String> = objects.into_iter().map(|o| o.0).collect();
            settings.sort();
            settings.dedup();
            let bytes = per_object as u64 * a.state.objects as u64;
            let out = json!({
                "role": "read",
                "stateBytes": bytes,
                "seconds": seconds,
                "mbPerS": bytes as f64 / seconds / 1e6,
                "settings": settings,
                "openMs": open_ms,
                "objectMs": object_ms,
                "client": c.stats(),
            });
            println!("{out}");
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}
