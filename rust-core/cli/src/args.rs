//! Arguments shared by several subcommands: coding parameters, sizes and
//! durations, the cluster key, how to join a cluster.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::{Error, Result};
use fragstate_net::key::load_cluster_key;
use fragstate_net::Membership;
use libp2p::pnet::PreSharedKey;
use libp2p::Multiaddr;


pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    parse_size::parse_size(s).map_err(|e| format!("{s:?} is not a size ({e}); use e.g. 4096, 64KiB, 1MiB, 1GiB"))
}

pub(crate) fn parse_secs(s: &str) -> std::result::Result<Duration, String> {
    let v: f64 = s.trim_end_matches('s').parse().map_err(|_| format!("{s:?} is not a number of seconds (e.g. 10, 0.5s)"))?;
    if !(0.0..=1e7).contains(&v) {
        return Err(format!("{s:?}: allowed 0 to 10000000 seconds"));
    }
    Ok(Duration::from_secs_f64(v))
}

#[derive(Args)]
pub(crate) struct CodingArgs {
    /// Data fragments per object (k).
    #[arg(long, default_value_t = 4)]
    k: usize,
    /// Parity fragments per object (m).
    #[arg(long, default_value_t = 2)]
    m: usize,
    /// Cell size (bytes, or with a unit: 64KiB, 1MiB).
    #[arg(long, default_value = "1MiB", value_parser = parse_bytes)]
    cell_size: u64,
    /// zstd level for per-stripe compression (off when absent).
    #[arg(long)]
    zstd: Option<i32>,
}

impl CodingArgs {
    pub(crate) fn params(&self) -> fragstate_core::Result<CodingParams> {
        let c = self.zstd.map_or(Compression::None, |level| Compression::Zstd { level });
        CodingParams::new(self.k, self.m, self.cell_size, c)
    }
}

#[derive(Args, Clone)]
pub(crate) struct KeyArgs {
    /// Cluster key file (libp2p swarm key: "/key/swarm/psk/1.0.0/", "/base16/", 64 hex digits); see `fragstate keygen`.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Run an open cluster without a key: anyone who reaches the port can join, read and write.
    #[arg(long)]
    pub insecure_no_cluster_key: bool,
}

impl KeyArgs {
    pub(crate) fn load(&self) -> Result<Option<PreSharedKey>> {
        match (&self.key_file, self.insecure_no_cluster_key) {
            (Some(_), true) => Err(Error::invalid("--insecure-no-cluster-key", "set", "not together with --key-file")),
            (Some(f), false) => Ok(Some(load_cluster_key(f)?)),
            (None, true) => Ok(None),
            (None, false) => Err(Error::invalid(
                "cluster key",
                "none",
                "--key-file FILE (create one with `fragstate keygen FILE`), or --insecure-no-cluster-key for an open cluster",
            )),
        }
    }
}

#[derive(Args, Clone)]
pub(crate) struct ClusterArgs {
    /// Multiaddr of a cluster node (repeatable).
    #[arg(long, required = true)]
    pub bootstrap: Vec<Multiaddr>,
    #[command(flatten)]
    pub key: KeyArgs,
    /// Storage nodes to wait for before starting (default: k+m for put, 1 otherwise; then until no more join for 0.5 s).
    #[arg(long)]
    pub wait_nodes: Option<usize>,
    /// Seconds to wait for them.
    #[arg(long, default_value = "15", value_parser = parse_secs)]
    pub wait_timeout: Duration,
    /// Per-request timeout in seconds.
    #[arg(long, default_value = "30", value_parser = parse_secs)]
    pub request_timeout: Duration,
    #[command(flatten)]
    pub membership: MembershipArgs,
}

#[derive(Args, Clone)]
pub(crate) struct MembershipArgs {
    /// How nodes learn who is live, the same on every node of a cluster: `swim` (gossip,
    /// connections on demand; NETWORK.md "Membership without a full mesh") or `mesh` (every
    /// node connected to every other; tens of nodes; the default before 2026-12-05).
    #[arg(long = "membership", env = "FRAGSTATE_MEMBERSHIP", default_value_t = Membership::default())]
    pub mode: Membership,
}
