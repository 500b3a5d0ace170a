//! `fragstate node`: a standalone storage (or client) node until SIGTERM.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use fragstate_client::scrub::{ScrubConfig, MAX_SCRUB_RATE};
use fragstate_core::{Error, Result};
use fragstate_net::{open_disk_node, NetConfig, NetNode, Role, ServiceConfig};
use fragstate_store::{DirLock, FragmentStore};

use libp2p::identity::Keypair;
use libp2p::Multiaddr;

use crate::args::{KeyArgs, MembershipArgs, parse_bytes, parse_secs};
use crate::cluster::runtime;

#[derive(Args)]
pub(crate) struct NodeArgs {
    /// Listen address (repeatable).
    #[arg(long, default_value = "/ip4/0.0.0.0/tcp/7710")]
    pub listen: Vec<Multiaddr>,
    /// Multiaddr of a running node to join through (repeatable).
    #[arg(long)]
    pub bootstrap: Vec<Multiaddr>,
    #[command(flatten)]
    pub key: KeyArgs,
    #[command(flatten)]
    pub membership: MembershipArgs,
    /// Store fragments in this directory (survives restarts; the node identity is kept there too).
    #[arg(long, conflicts_with = "memory")]
    pub store_dir: Option<PathBuf>,
    /// Keep fragments in memory, at most this many bytes.
    #[arg(long, value_parser = parse_bytes)]
    pub memory: Option<u64>,
    /// Capacity of a disk store (default: no budget; the store never takes more than its file system has left).
    #[arg(long, value_parser = parse_bytes)]
    pub capacity: Option<u64>,
    /// Do not fsync fragments and manifests (tests, benchmarks).
    #[arg(long)]
    pub no_fsync: bool,
    /// Failure domain: `host` (default: the host name), `process`
    /// (`<hostname>/<pid>`) or a literal label.
    #[arg(long)]
    pub domain: Option<String>,
    /// storage (holds fragments) or client.
    #[arg(long, default_value = "storage")]
    pub role: Role,
    /// Seconds a holder must be gone before its fragments are rebuilt elsewhere.
    #[arg(long, default_value = "10", value_parser = parse_secs)]
    pub repair_after: Duration,
    /// Repair rate limit in bytes per second (0 disables repair).
    #[arg(long, default_value = "200MiB", value_parser = parse_bytes)]
    pub repair_rate: u64,
    /// Answer the raw benchmark frames of `fragstate bench net` (its nodes set this).
    #[arg(long)]
    pub serve_bench_frames: bool,
    /// Seconds after which fragments that no manifest commits are reclaimed.
    #[arg(long, default_value = "600", value_parser = parse_secs)]
    pub reclaim_after: Duration,
    /// Stored bytes per second the background scrub re-verifies (0: no
    /// scrub pass; cells that readers report corrupt are still rebuilt).
    #[arg(long, default_value = "8MiB", value_parser = parse_bytes)]
    pub scrub_rate: u64,
    /// Seconds from the start of one scrub pass to the start of the next, at least.
    #[arg(long, default_value = "600", value_parser = parse_secs)]
    pub scrub_interval: Duration,
    /// Seconds between passes of the holder check, which drops the copies the
    /// other holders prove stale (repaired elsewhere, overwritten or deleted
    /// while this node was away); the first pass runs 15 s after the start
    /// (or one interval, if shorter). 0: no check.
    #[arg(long, default_value = "300", value_parser = parse_secs)]
    pub holder_check_interval: Duration,
    /// Seconds the view must stay unchanged after nodes joined before
    /// fragments move to them (rebalancing: each joined node takes over the
    /// fragments placement now gives it, its share of the stored data).
    #[arg(long, default_value = "30", value_parser = parse_secs)]
    pub rebalance_after: Duration,
    /// Rebalancing rate limit in moved fragment bytes per second (0: no rebalancing).
    #[arg(long, default_value = "32MiB", value_parser = parse_bytes)]
    pub rebalance_rate: u64,
    /// Seconds between reclaim scans.
    #[arg(long, default_value = "30", value_parser = parse_secs)]
    pub reclaim_interval: Duration,
}

pub(crate) fn node(args: NodeArgs) -> Result<()> {
    if args.scrub_rate > MAX_SCRUB_RATE {
        return Err(Error::invalid("--scrub-rate", args.scrub_rate, format!("0 (off) ≤ bytes per second ≤ {MAX_SCRUB_RATE}")));
    }
    let psk = args.key.load()?;
    let rt = runtime()?;
    rt.block_on(async move {
        let (store, identity, tombstones) = match (&args.store_dir, args.memory) {
            (Some(dir), _) => {
                let (identity, store, tombstones) =
                    open_disk_node(DirLock::acquire(dir)?, args.capacity.unwrap_or(u64::MAX), !args.no_fsync)?;
                (Some(Arc::new(store)), identity, Some(tombstones))
            }
            (None, Some(budget)) => {
                let identity = Keypair::generate_ed25519();
                let name = identity.public().to_peer_id().to_base58();
                (Some(Arc::new(FragmentStore::in_memory(name, budget))), identity, None)
            }
            (None, None) if args.role == Role::Client => (None, Keypair::generate_ed25519(), None),
            (None, None) => return Err(Error::invalid("store", "none", "--store-dir DIR or --memory BYTES for a storage node")),
        };
        let store = if args.role == Role::Client { None } else { store };
        let mut cfg = NetConfig::new(identity, args.role, psk);
        cfg.set_membership(args.membership.mode);
        cfg.listen = args.listen.clone();
        cfg.bootstrap = args.bootstrap.clone();
        cfg.store = store;
        cfg.tombstone_file = tombstones;
        cfg.domain = fragstate_net::failure_domain(args.domain.as_deref());
        cfg.serve_bench_frames = args.serve_bench_frames;
        let node = NetNode::start(cfg).await?;
        node.start_services(ServiceConfig {
            repair_after: args.repair_after,
            repair_rate: args.repair_rate,
            reclaim_after: args.reclaim_after,
            reclaim_interval: args.reclaim_interval,
            holder_check_interval: args.holder_check_interval,
            rebalance_after: args.rebalance_after,
            rebalance_rate: args.rebalance_rate,
            scrub: ScrubConfig { rate: args.scrub_rate, pass_interval: args.scrub_interval, ..ScrubConfig::default() },
            ..ServiceConfig::default()
        });
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "PEER {}", node.id());
            for a in node.listen_addrs() {
                let _ = writeln!(out, "LISTEN {a}");
            }
            let _ = out.flush();
        }
        tracing::info!(peer = %node.id(), role = ?node.role(), "node running; SIGTERM or Ctrl-C stops it");
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|e| Error::io("install SIGTERM handler", e))?;
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
            _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: shutting down"),
        }
        node.shutdown().await;
        tracing::info!("node stopped");
        Ok(())
    })
}
