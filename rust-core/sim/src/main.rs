//! `fragstate-sim`: the placement and membership measurements of the crate
//! docs for clusters of several sizes; tables on stdout and, with `--out`,
//! `summary.json` and `table.md` in that folder.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use fragstate_core::swim::SwimConfig;
use fragstate_sim::cpu::CpuModel;
use fragstate_sim::membership;
use fragstate_sim::sim::{self, Strategy, View};
use serde_json::json;

#[derive(Parser)]
#[command(about = "Placement and membership at scale with the real code: balance, moves per join, lookups after churn; SWIM convergence, idle traffic, failure detection")]
struct Args {
    /// Cluster sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "50,100,200,500,1000")]
    nodes: Vec<usize>,
    /// Objects placed in each cluster.
    #[arg(long, default_value_t = 100_000)]
    objects: u64,
    /// Data fragments per object.
    #[arg(long, default_value_t = 4)]
    k: usize,
    /// Parity fragments per object.
    #[arg(long, default_value_t = 2)]
    m: usize,
    /// Share of the nodes replaced (left, and as many new ones joined) before the lookups.
    #[arg(long, default_value_t = 0.05)]
    churn: f64,
    /// Free capacities of the writer's and the reader's view differ by up to this share of a
    /// node's capacity (nodes filled unevenly between write and read; 0: equal weights).
    #[arg(long, default_value_t = 0.0)]
    drift: f64,
    /// Nodes fill as objects land (each placement lowers its holders' free capacity, which
    /// weighted placement sees), ending this full; 0: capacities stay equal.
    #[arg(long, default_value_t = 0.0)]
    fill: f64,
    /// Share of the nodes an adaptive writer measured clearly slow (strategy adaptive-rendezvous).
    #[arg(long, default_value_t = 0.25)]
    slow: f64,
    /// Strategies to measure (default: all).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "rendezvous,adaptive-rendezvous,xor-neighbours")]
    strategy: Vec<Strategy>,
    /// What to measure: placement (every --strategy), membership (SWIM, one run per cluster size).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "placement,membership")]
    measure: Vec<Measure>,
    /// Membership: share of messages lost on the way.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Membership: nodes stopped one after another, 30 s apart; failure detection is
    /// reported over all of them (one stop is one draw of when its probers come round).
    #[arg(long, default_value_t = 1)]
    stops: usize,
    /// Membership: run every node on this many shared cores (0: each message handled the
    /// moment it arrives) — the one-process swarm runs' situation (fragstate-sim's `cpu.rs`).
    #[arg(long, default_value_t = 0)]
    cpu_cores: usize,
    /// With --cpu-cores: µs to handle one message or timer tick.
    #[arg(long, default_value_t = 20)]
    cpu_message_us: u64,
    /// With --cpu-cores: µs of one end of a Noise handshake, paid by both ends of a message
    /// between nodes that exchanged nothing for --cpu-idle-ms.
    #[arg(long, default_value_t = 250)]
    cpu_handshake_us: u64,
    /// With --cpu-cores: connections unused this long are closed (the network's idle timeout).
    #[arg(long, default_value_t = 5_000)]
    cpu_idle_ms: u64,
    /// Folder for summary.json and table.md.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Measure {
    Placement,
    Membership,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("fragstate-sim: {e}");
        std::process::exit(2);
    }
}

fn run(a: &Args) -> Result<(), String> {
    if a.k == 0 || a.m == 0 || a.k + a.m > 32 {
        return Err(format!("--k {} --m {}: need k ≥ 1, m ≥ 1, k + m ≤ 32", a.k, a.m));
    }
    if !(0.0..1.0).contains(&a.drift) {
        return Err(format!("--drift {}: must be in [0, 1)", a.drift));
    }
    if !(0.0..=1.0).contains(&a.fill) {
        return Err(format!("--fill {}: must be in [0, 1] (0: no filling)", a.fill));
    }
    if !(0.0..1.0).contains(&a.slow) {
        return Err(format!("--slow {}: must be in [0, 1)", a.slow));
    }
    if !(0.0..1.0).contains(&a.churn) {
        return Err(format!("--churn {}: must be in [0, 1)", a.churn));
    }
    if !(0.0..0.5).contains(&a.loss) {
        return Err(format!("--loss {}: must be in [0, 0.5)", a.loss));
    }
    if let Some(n) = a.nodes.iter().find(|n| a.stops == 0 || a.stops + 2 >= **n) {
        return Err(format!("--stops {}: must be at least 1 and below nodes − 2 = {} (the seed and the joiner keep running)", a.stops, n.saturating_sub(2)));
    }
    if let Some(&n) = a.nodes.iter().find(|&&n| n < a.k + a.m + 1) {
        return Err(format!("--nodes {n}: a cluster needs at least k + m + 1 = {} nodes", a.k + a.m + 1));
    }
    let km = (a.k, a.m);
    let strategies = if a.measure.contains(&Measure::Placement) { &a.strategy[..] } else { &[] };
    let mut table = Vec::new();
    if !strategies.is_empty() {
        let header = "| strategy | nodes | objects | max/mean | p99/mean | uniform max/mean | moved per join / ideal: placement, rebalancing (objects as placed) | after churn: settled in one round trip / manifest hits / k holders asked | after churn: create window misses | seconds |";
        table = vec![header.to_string(), "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |".to_string()];
        println!("{header}");
    }
    let mut rows = Vec::new();
    for &strategy in strategies {
        for &n in &a.nodes {
            let t0 = Instant::now();
            let view = View::numbered(0, n).with_slow(a.slow);
            let balance = sim::balance(&view, strategy, a.objects, km, (a.fill > 0.0).then_some(a.fill));
            let moves = sim::join_moves(&view, strategy, a.objects, km);
            let replaced = ((n as f64) * a.churn).round().max(1.0) as usize;
            let churn = sim::lookups_after_churn(&view, strategy, a.objects, km, replaced, a.drift);
            let secs = t0.elapsed().as_secs_f64();
            let line = format!(
                "| {} | {n} | {} | {:.3} | {:.3} | {:.3} | {:.3}, {:.3} ({:.4}) | {:.4} / {:.4} / {:.4} ({replaced} replaced) | {:.5} | {secs:.1} |",
                serde_json::to_value(strategy).map_err(|e| e.to_string())?.as_str().unwrap_or("?"),
                a.objects, balance.max_over_mean, balance.p99_over_mean, balance.uniform_max_over_mean,
                moves.moved_over_ideal, moves.rebalanced_over_ideal, moves.rebalanced_as_placed, churn.settled_rate, churn.manifest_hit_rate, churn.first_round_trip_hit_rate,
                churn.create_miss_rate
            );
            println!("{line}");
            table.push(line);
            rows.push(json!({"strategy": strategy, "nodes": n, "objects": a.objects, "k": a.k, "m": a.m,
                "drift": a.drift, "slow": a.slow, "fill": a.fill, "balance": balance, "join": moves, "churn": churn, "seconds": secs}));
        }
    }
    let mut swim_rows = Vec::new();
    if a.measure.contains(&Measure::Membership) {
        let header = "| nodes | loss | mass start: converged / settled after (ms) | one join known to all: p99 / max (ms) | idle messages / node / s | idle bytes / node / s | idle peers talked to per node and second: p99 / max | stopped node dead at others: p50 / p99 / max (ms) | worst stop's p99 (ms) | stops | share that saw it | live nodes declared dead | false suspicions | shared cores busy / handshakes | seconds |";
        println!("{header}");
        table.extend(["".to_string(), header.to_string(), "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |".to_string()]);
        for &n in &a.nodes {
            let t0 = Instant::now();
            let cpu = (a.cpu_cores > 0).then_some(CpuModel { cores: a.cpu_cores, message_us: a.cpu_message_us, handshake_us: a.cpu_handshake_us, idle_ms: a.cpu_idle_ms });
            let r = membership::run(n, &SwimConfig::default(), a.loss, 1, a.stops, cpu);
            let ms = |v: Option<u64>| v.map_or("—".to_string(), |v| v.to_string());
            let line = format!(
                "| {n} | {} | {} / {} | {} / {} | {:.1} | {:.0} | {} / {} | {} / {} / {} | {} | {} | {:.4} | {} | {} | {} | {:.1} |",
                a.loss, ms(r.converge_ms), r.settled_ms, ms(r.join_p99_ms), ms(r.join_max_ms), r.idle_messages_per_node_s, r.idle_bytes_per_node_s, r.idle_peers_per_s_p99, r.idle_peers_per_s_max,
                ms(r.dead_p50_ms), ms(r.dead_p99_ms), ms(r.dead_max_ms), ms(r.dead_p99_worst_stop_ms), r.stops, r.dead_share, r.false_downs, r.false_suspicions,
                r.cpu_busy.zip(r.handshakes).map_or("—".to_string(), |(b, h)| format!("{:.0} % / {h}", 100.0 * b)),
                t0.elapsed().as_secs_f64()
            );
            println!("{line}");
            table.push(line);
            swim_rows.push(r);
        }
    }
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let summary = serde_json::to_string_pretty(&json!({"rows": rows, "membership": swim_rows})).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("summary.json"), summary).map_err(|e| format!("cannot write summary.json: {e}"))?;
        std::fs::write(dir.join("table.md"), table.join("\n") + "\n").map_err(|e| format!("cannot write table.md: {e}"))?;
        println!("written: {}/summary.json, table.md", dir.display());
    }
    Ok(())
}
