//! How a network node runs: [`NetConfig`] and the protocol names.

use std::sync::Arc;
use std::time::Duration;

use libp2p::identity::Keypair;
use libp2p::pnet::PreSharedKey;
use libp2p::{Multiaddr, StreamProtocol};

use fragstate_store::FragmentStore;

use fragstate_core::error::Error;
use fragstate_core::swim::SwimConfig;

use crate::tombstone_set::TombstoneLimits;
use crate::wire::Role;

pub const FRAG_PROTOCOL: StreamProtocol = StreamProtocol::new("/fragstate/frag/1.0.0");
pub(crate) const KAD_PROTOCOL: StreamProtocol = StreamProtocol::new("/fragstate/kad/1.0.0");
pub(crate) const IDENTIFY_PROTOCOL: &str = "/fragstate/id/1.0.0";
/// Tombstones carried in one hello (newest first).
pub(crate) const MAX_TOMBSTONES_PER_HELLO: usize = 1000;

/// How nodes learn who is live (one mode per cluster: nodes of different
/// modes do not see each other as live). The default, [`Membership::Swim`],
/// is what `fragstate node`, the CLI and the Flink plugin run unless told
/// otherwise; [`NetConfig::new`] starts from the mesh, and
/// [`NetConfig::set_membership`] switches (with SWIM's connection timings).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Membership {
    /// Every node connects to every other, pings each and sends each a hello
    /// every `hello_interval`; live means connected. Right for tens of nodes.
    Mesh,
    /// SWIM over `/fragstate/swim/1.0.0` (`swim_node.rs`, NETWORK.md
    /// "Membership without a full mesh"): connections only to the peers a node
    /// talks to, closed after [`SWIM_IDLE_CONNECTION_TIMEOUT`] unused; live
    /// means a SWIM member that is not dead.
    #[default]
    Swim,
}

impl std::str::FromStr for Membership {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim() {
            "mesh" => Ok(Membership::Mesh),
            "swim" => Ok(Membership::Swim),
            other => Err(Error::invalid("membership", other, "mesh (every node connected to every other) or swim (gossip, connections on demand)")),
        }
    }
}

impl std::fmt::Display for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Membership::Mesh => "mesh",
            Membership::Swim => "swim",
        })
    }
}

/// Connections unused for this long close in [`Membership::Swim`] (a node
/// probes a different member every period, so at 1,000 nodes a longer
/// timeout would keep hundreds open).
pub const SWIM_IDLE_CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// How often [`Membership::Swim`] pings each open connection (a backstop for
/// connections that stopped carrying anything; SWIM finds failed members).
pub const SWIM_PING_INTERVAL: Duration = Duration::from_secs(5);

/// How a node runs. [`NetConfig::new`] gives the defaults.
#[derive(Clone)]
pub struct NetConfig {
    pub identity: Keypair,
    /// Set with [`NetConfig::set_membership`].
    pub membership: Membership,
    /// SWIM's timings ([`Membership::Swim`]).
    pub swim: SwimConfig,
    pub listen: Vec<Multiaddr>,
    pub bootstrap: Vec<Multiaddr>,
    /// `None` only when the operator chose an open cluster explicitly.
    pub cluster_key: Option<PreSharedKey>,
    pub role: Role,
    /// Failure-domain label (host name by default).
    pub domain: String,
    /// The node's fragments; required for storage nodes.
    pub store: Option<Arc<FragmentStore>>,
    /// A storage node lists itself among the live nodes (so that its own
    /// client and repair can place fragments on it).
    pub include_self: bool,
    /// A peer whose pings fail `ping_failures_to_drop` times in a row on a
    /// connection is dropped: a frozen process leaves the live set within
    /// about `ping_failures_to_drop × (interval + timeout)`. A ping queues
    /// behind the fragment bytes already in the same TCP connection, and a
    /// saturated host runs its node late, so one or two late pings are no
    /// sign of a dead peer (`ping_failures.rs`).
    pub ping_interval: Duration,
    pub ping_timeout: Duration,
    pub ping_failures_to_drop: u32,
    /// Opening a stream, and each response or frame, must happen within this.
    pub request_timeout: Duration,
    /// Connections without traffic are closed after this (libp2p's default, 10 s, is too short).
    pub idle_connection_timeout: Duration,
    /// Incoming connections from one address that may be in their handshake
    /// at once ([`MAX_PENDING_INCOMING_PER_ADDRESS`](crate::MAX_PENDING_INCOMING_PER_ADDRESS)
    /// by default). Raise it only where one address stands for many nodes:
    /// `fragstate bench swarm` runs hundreds of nodes in one process, all
    /// dialling from 127.0.0.1.
    pub pending_incoming_per_address: u32,
    /// Hello refresh period (free bytes, tombstones).
    pub hello_interval: Duration,
    /// Where tombstones survive a restart (disk-backed nodes).
    pub tombstone_file: Option<std::path::PathBuf>,
    /// How many tombstones the node keeps, and for how long.
    pub tombstone_limits: TombstoneLimits,
    /// Answer the benchmark frames of `fragstate bench net` (off by default;
    /// production nodes are built without the `bench` feature).
    #[cfg(feature = "bench")]
    pub serve_bench_frames: bool,
    /// Listen and dial over libp2p's in-process `MemoryTransport` (`listen`
    /// must then be `/memory/0` or `/memory/<port>`) instead of TCP: Noise,
    /// yamux and every protocol above run unchanged, without the two file
    /// descriptors each TCP connection holds when both its ends are in one
    /// process (`fragstate bench swarm --transport memory`). Off by default.
    #[cfg(feature = "bench")]
    pub in_memory_transport: bool,
}

impl NetConfig {
    pub fn new(identity: Keypair, role: Role, cluster_key: Option<PreSharedKey>) -> Self {
        NetConfig {
            identity,
            membership: Membership::Mesh,
            swim: SwimConfig::default(),
            listen: vec!["/ip4/127.0.0.1/tcp/0".parse().expect("valid multiaddr")],
            bootstrap: Vec::new(),
            cluster_key,
            role,
            domain: hostname(),
            store: None,
            include_self: true,
            // Dropping at libp2p's second failure (≤ 1.9 s) dropped live holders
            // mid-write while six TaskManagers filled 3 GB of RocksDB state on
            // two cores (recovery benchmark); five in a row is ≈ 4.75 s.
            ping_interval: Duration::from_millis(300),
            ping_timeout: Duration::from_millis(650),
            ping_failures_to_drop: 5,
            request_timeout: Duration::from_secs(30),
            idle_connection_timeout: Duration::from_secs(3600),
            pending_incoming_per_address: crate::MAX_PENDING_INCOMING_PER_ADDRESS,
            hello_interval: Duration::from_secs(2),
            tombstone_file: None,
            tombstone_limits: TombstoneLimits::default(),
            #[cfg(feature = "bench")]
            serve_bench_frames: false,
            #[cfg(feature = "bench")]
            in_memory_transport: false,
        }
    }
}

impl NetConfig {
    /// Runs the node with `membership`; [`Membership::Swim`] also closes
    /// unused connections after [`SWIM_IDLE_CONNECTION_TIMEOUT`] (the mesh
    /// keeps them: there a closed connection is a peer gone) and pings each
    /// connection only every [`SWIM_PING_INTERVAL`]: SWIM's probes find dead
    /// and frozen members, the pings only connections that stopped carrying
    /// anything. (Pings every 300 ms on each of a few tens of connections per
    /// node cost ~3 % of a core per idle node and saturated two cores at 64
    /// node processes: NETWORK.md, "Swarm runs".)
    pub fn set_membership(&mut self, membership: Membership) {
        self.membership = membership;
        if membership == Membership::Swim {
            self.idle_connection_timeout = self.idle_connection_timeout.min(SWIM_IDLE_CONNECTION_TIMEOUT);
            self.ping_interval = self.ping_interval.max(SWIM_PING_INTERVAL);
            self.ping_timeout = self.ping_timeout.max(SWIM_PING_INTERVAL);
            self.ping_failures_to_drop = self.ping_failures_to_drop.min(2);
        }
    }
}

#[cfg(feature = "bench")]
impl NetConfig {
    /// Stretches every membership timing `factor` times — SWIM's
    /// (`SwimConfig::dilated`), the connections' idle timeout and pings, the
    /// hello period — so that each node does a period's work per `factor`
    /// periods of wall time (`fragstate bench swarm --time-dilation`: more
    /// nodes in one process than its cores can run at their real pace).
    /// Requests and their timeouts keep their real pace. Call after
    /// [`NetConfig::set_membership`].
    pub fn dilate_time(&mut self, factor: u32) {
        let f = factor.max(1);
        self.swim = self.swim.dilated(f);
        self.idle_connection_timeout *= f;
        self.ping_interval *= f;
        self.ping_timeout *= f;
        self.hello_interval *= f;
    }
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_else(|_| "localhost".into())
}
