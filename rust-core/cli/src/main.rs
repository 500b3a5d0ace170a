//! The `fragstate` command: standalone storage nodes, object operations on a
//! cluster (put, get, rm, ls, stats), cluster keys, benchmarks of the codec,
//! the in-process mesh and the network, `inspect` for stored files, and `tune`,
//! the checkpoint-interval controller.

mod args;
mod bench;
mod cluster;
mod cmd;
mod flink_rest;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::args::{parse_bytes, ClusterArgs, CodingArgs};
use crate::cmd::*;

/// Counts the live heap bytes `fragstate stats` reports (`fragstate_core::heap`).
#[global_allocator]
static ALLOCATOR: fragstate_core::heap::CountingAllocator = fragstate_core::heap::CountingAllocator;

#[derive(Parser)]
#[command(name = "fragstate", version, about = "Erasure-coded, fragment-based state storage for Apache Flink")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Throughput benchmarks.
    #[command(subcommand)]
    Bench(Bench),
    /// Decodes a manifest or fragment file and prints its header.
    Inspect {
        file: PathBuf,
    },
    /// Runs a node of a fragstate cluster until SIGTERM.
    Node(node::NodeArgs),
    /// Writes a new random cluster key file.
    Keygen {
        file: PathBuf,
    },
    /// Stores a local file (or stdin: -) as an object.
    Put {
        #[command(flatten)]
        cluster: ClusterArgs,
        #[command(flatten)]
        coding: CodingArgs,
        /// Replace an existing object.
        #[arg(long)]
        overwrite: bool,
        src: PathBuf,
        path: String,
    },
    /// Reads an object into a local file (or stdout: -).
    Get {
        #[command(flatten)]
        cluster: ClusterArgs,
        path: String,
        dst: PathBuf,
    },
    /// Deletes an object (with -r, everything under path/ too).
    Rm {
        #[command(flatten)]
        cluster: ClusterArgs,
        #[arg(short, long)]
        recursive: bool,
        path: String,
    },
    /// Lists objects under a prefix.
    Ls {
        #[command(flatten)]
        cluster: ClusterArgs,
        #[arg(default_value = "")]
        prefix: String,
    },
    /// Per-node usage, degraded objects and bytes to repair.
    Stats {
        #[command(flatten)]
        cluster: ClusterArgs,
        /// One JSON object per node and line (every field of the node's stats, camelCase keys).
        #[arg(long)]
        json: bool,
    },
    /// Sends one malformed frame to a node and reports whether it dropped the connection (tests).
    #[command(hide = true)]
    DebugFrame {
        #[command(flatten)]
        cluster: ClusterArgs,
        #[arg(long, value_enum)]
        bad: debug_frame::BadFrame,
    },
    /// Tunes the checkpoint interval of a running Flink job (Khaos): models from failure
    /// experiments, a throughput forecast, checkpoints triggered through the REST API.
    Tune(Box<tune::TuneArgs>),
    /// Attacks one node of a running cluster for a while as a hostile peer (tests).
    #[command(hide = true)]
    DebugAttack(debug_attack::AttackArgs),
}

#[derive(Subcommand)]
enum Bench {
    /// Encode, decode and reconstruct throughput of one core, checksums included.
    Codec {
        #[command(flatten)]
        coding: CodingArgs,
        /// Object bytes per measurement.
        #[arg(long, default_value = "1GiB", value_parser = parse_bytes)]
        size: u64,
        /// Data cells lost per stripe in the reconstruct measurement (default: min(m, k)).
        #[arg(long)]
        lost: Option<usize>,
        /// Measurements per figure; the median is reported.
        #[arg(long, default_value_t = 5)]
        repeat: usize,
    },
    /// Writes then reads one object through an in-process mesh with failed holders.
    Mesh {
        #[command(flatten)]
        coding: CodingArgs,
        /// Nodes in the mesh.
        #[arg(long, default_value_t = 6)]
        nodes: usize,
        /// Holders of the object killed before it is read back.
        #[arg(long, default_value_t = 0)]
        failed: usize,
        /// Object size.
        #[arg(long, default_value = "1GiB", value_parser = parse_bytes)]
        size: u64,
        /// Bytes per write and read call (Flink's stream buffers are small; the JNI layer batches).
        #[arg(long, default_value = "1MiB", value_parser = parse_bytes)]
        chunk: u64,
        /// Runtime worker threads.
        #[arg(long, default_value_t = 2)]
        threads: usize,
    },
    /// Throughput between processes on loopback: fragstate write/read versus raw libp2p streams.
    Net(bench_net::BenchNetArgs),
    /// A TaskManager's checkpoint (`write`) and its restore by another process (`read`),
    /// between the nodes of a running cluster (ci/bench-adaptive.sh).
    #[command(subcommand)]
    Restore(bench_restore::BenchRestore),
    /// N storage nodes and a client in one process over loopback TCP: formation, idle cost,
    /// restores and failure detection as N grows (ci/swarm.sh --in-process).
    Swarm(bench_swarm::BenchSwarmArgs),
    /// The requests of one Flink checkpoint's file-system calls on in-process meshes of
    /// growing size, with the directory index and without it (ci/bench-checkpoints.sh).
    Checkpoints(bench_checkpoints::BenchCheckpointsArgs),
}

/// The log filter: `FRAGSTATE_LOG` — a level, or comma-separated `target=level` directives
/// (tracing-subscriber's `Targets`, e.g. `info,libp2p_swarm=warn`) — else `default`. A value
/// that does not parse is reported on stderr, naming it, and the default is used.
fn log_filter(value: Option<&str>, default: &str) -> Targets {
    if let Some(v) = value {
        match v.parse() {
            Ok(filter) => return filter,
            Err(e) => eprintln!(
                "fragstate: FRAGSTATE_LOG={v:?} is not a log filter ({e}): expected error, warn, info, debug, trace or target=level directives such as info,libp2p_swarm=warn; using {default:?}"
            ),
        }
    }
    default.parse().unwrap_or_default()
}

fn main() {
    let cli = Cli::parse();
    // A node logs what it does; the one-shot commands only warnings.
    let default_filter = if matches!(cli.command, Command::Node(_)) { "info,libp2p_swarm=warn,libp2p_kad=warn" } else { "warn" };
    let filter = log_filter(std::env::var("FRAGSTATE_LOG").ok().as_deref(), default_filter);
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .finish()
        .with(filter)
        .init();
    let result = match cli.command {
        Command::Bench(Bench::Codec { coding, size, lost, repeat }) => bench_codec::bench_codec(&coding, size, lost, repeat),
        Command::Bench(Bench::Mesh { coding, nodes, failed, size, chunk, threads }) => bench_mesh::bench_mesh(&coding, nodes, failed, size, chunk, threads),
        Command::Inspect { file } => inspect::inspect(&file),
        Command::Bench(Bench::Net(a)) => bench_net::bench_net(a),
        Command::Bench(Bench::Restore(r)) => bench_restore::bench_restore(r),
        Command::Bench(Bench::Swarm(a)) => bench_swarm::bench_swarm(a),
        Command::Bench(Bench::Checkpoints(a)) => bench_checkpoints::bench_checkpoints(a),
        Command::Node(a) => node::node(a),
        Command::Keygen { file } => keygen::keygen(&file),
        Command::Put { cluster, coding, overwrite, src, path } => put::put(cluster, coding, src, path, overwrite),
        Command::Get { cluster, path, dst } => get::get(cluster, path, dst),
        Command::Rm { cluster, recursive, path } => rm::rm(cluster, path, recursive),
        Command::Ls { cluster, prefix } => ls::ls(cluster, prefix),
        Command::Stats { cluster, json } => stats::stats(cluster, json),
        Command::DebugFrame { cluster, bad } => debug_frame::debug_frame(cluster, bad),
        Command::DebugAttack(a) => debug_attack::debug_attack(a),
        Command::Tune(a) => tune::tune(*a),
    };
    if let Err(e) = result {
        eprintln!("fragstate: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::log_filter;
    use tracing::Level;

    #[test]
    fn log_filters_take_levels_and_target_directives_and_fall_back_on_bad_values() {
        let node_default = "info,libp2p_swarm=warn,libp2p_kad=warn";
        let f = log_filter(None, node_default);
        assert!(f.would_enable("fragstate_net::swarm", &Level::INFO));
        assert!(!f.would_enable("libp2p_swarm::connection", &Level::INFO));
        assert!(f.would_enable("libp2p_swarm", &Level::WARN));

        let f = log_filter(Some("warn,fragstate_net=debug"), node_default);
        assert!(f.would_enable("fragstate_net::dials", &Level::DEBUG));
        assert!(!f.would_enable("fragstate_client", &Level::INFO));

        // not a filter: the default, not nothing
        let f = log_filter(Some("fragstate_net=loud"), "warn");
        assert!(f.would_enable("anything", &Level::WARN));
        assert!(!f.would_enable("anything", &Level::INFO));
    }
}
