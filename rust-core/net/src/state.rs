//! The state a network node's tasks share ([`Inner`]): its configuration,
//! peers, stream pool, tombstones, directory index records, counters and the
//! shutdown signal. The modules above add behaviour to it (`membership`,
//! `tombstones`, `index_holder`, `pool`)
//! or run on it (`swarm`, `server`); [`crate::node::NetNode`] owns it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use fragstate_core::error::{Error, Result};
use fragstate_core::ids::NodeId;
use fragstate_client::scrubber::ScrubShared;
use fragstate_client::ClientStats;
use fragstate_store::FragmentStore;
use libp2p::{Multiaddr, PeerId, Stream};
use tokio::sync::{mpsc, oneshot, watch, Notify};

use crate::config::{Membership, NetConfig};
use crate::hints::HintSet;
use crate::index_holder::IndexHolder;
use crate::peer_limit::{FrameBytes, PeerLimit};
use crate::swim_wire::SwimMessage;
use crate::tombstone_log::TombstoneLog;
use crate::tombstone_set::TombstoneSet;
use crate::wire::{Hello, NodeStats};

/// The node's tombstones and, on disk-backed nodes, their file.
pub(crate) struct Tombstones {
    pub set: TombstoneSet,
    pub log: Option<TombstoneLog>,
}

/// What a node's connections and membership cost it so far (`fragstate bench swarm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Peers with an open connection now.
    pub connected_peers: usize,
    /// Connections established since the start, both directions.
    pub connections_opened: u64,
    /// Membership messages sent (SWIM messages; hellos and their replies under the mesh) and their bytes.
    pub membership_messages_sent: u64,
    pub membership_bytes_sent: u64,
    /// Connections this node asked for to peers it had no connection to, by
    /// [`DialCause`] (indexed by `cause as usize`; asks at once to one peer share one dial).
    pub dials: [u64; DialCause::ALL.len()],
    /// Connections closed because they were idle, because they broke (an I/O
    /// error: a reset, a peer gone), and by this node (failed pings, shutdown).
    pub closed_idle: u64,
    pub closed_broken: u64,
    pub closed_here: u64,
    /// Membership updates this node still has to pass on (SWIM's gossip
    /// queue; 0 under the mesh): 0 at every node is a cluster whose news
    /// has spread.
    pub news_pending: u64,
}

/// Why a node dialled a peer it had no connection to (`Traffic::dials`):
/// each connection costs both ends a Noise handshake, which at a few hundred
/// nodes in one process is what saturates it (NETWORK.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialCause {
    /// A SWIM probe's ping.
    Probe,
    /// A ping sent for another node's indirect probe.
    Relay,
    /// A SWIM ack (to a prober whose connection closed meanwhile).
    Ack,
    /// A SWIM ping request (an indirect probe's helper).
    PingReq,
    /// SWIM gossip.
    Gossip,
    /// A SWIM full-list exchange (a join, the periodic sync).
    Sync,
    /// A new ring successor, connected ahead of its probes.
    Successor,
    /// A request on the data path (fragments, manifests, hellos).
    Request,
}

impl DialCause {
    pub const ALL: [DialCause; 8] = [Self::Probe, Self::Relay, Self::Ack, Self::PingReq, Self::Gossip, Self::Sync, Self::Successor, Self::Request];

    /// Its name in figures (`bench swarm`'s JSON).
    pub fn name(self) -> &'static str {
        match self {
            Self::Probe => "probe",
            Self::Relay => "relay",
            Self::Ack => "ack",
            Self::PingReq => "ping_req",
            Self::Gossip => "gossip",
            Self::Sync => "sync",
            Self::Successor => "successor",
            Self::Request => "request",
        }
    }
}

#[derive(Default)]
pub(crate) struct Counters {
    pub objects_degraded: AtomicU64,
    pub bytes_to_repair: AtomicU64,
    pub objects_repaired: AtomicU64,
    pub fragments_repaired: AtomicU64,
    pub repair_failures: AtomicU64,
    pub tombstone_deletes: AtomicU64,
    /// Manifest copies removed by `Delete` requests this node served.
    pub manifests_deleted: AtomicU64,
    pub reclaimed_fragments: AtomicU64,
    /// The holder check's passes, copies checked and stale copies dropped.
    pub holder_check_passes: AtomicU64,
    pub holder_checked: AtomicU64,
    pub stale_copies_dropped: AtomicU64,
    /// Fragments (and their bytes) moved to nodes that joined; moves that failed.
    pub fragments_rebalanced: AtomicU64,
    pub bytes_rebalanced: AtomicU64,
    pub rebalance_failures: AtomicU64,
    pub protocol_violations: AtomicU64,
    /// Streams closed unanswered because their peer had its share open.
    pub streams_refused: AtomicU64,
    /// Uploads refused because their peer had its share in progress.
    pub uploads_refused: AtomicU64,
    /// Connections established since the start (both directions).
    pub connections_opened: AtomicU64,
    /// Membership messages sent (SWIM messages; hellos and their replies under the mesh) and their bytes.
    pub membership_messages_sent: AtomicU64,
    pub membership_bytes_sent: AtomicU64,
    /// See [`Traffic`].
    pub dials: [AtomicU64; DialCause::ALL.len()],
    pub closed_idle: AtomicU64,
    pub closed_broken: AtomicU64,
    pub closed_here: AtomicU64,
    /// A gauge: see [`Traffic::news_pending`].
    pub news_pending: AtomicU64,
}

pub(crate) struct Inner {
    pub id: NodeId,
    pub peer_id: PeerId,
    pub cfg: NetConfig,
    pub(crate) control: libp2p_stream::Control,
    pub(crate) peers: Mutex<HashMap<PeerId, Peer>>,
    pub(crate) pool: Mutex<HashMap<PeerId, Vec<(Stream, Instant)>>>,
    pub(crate) cmd: mpsc::UnboundedSender<Cmd>,
    pub(crate) listen_addrs: Mutex<Vec<Multiaddr>>,
    pub(crate) tombstones: Mutex<Tombstones>,
    /// Tombstones kept for co-holders that were down when this node deleted (`hints`).
    pub(crate) hints: Mutex<HintSet>,
    /// Directory index records (storage nodes; in memory only: `index_holder`).
    pub(crate) index: Mutex<IndexHolder>,
    pub(crate) membership: Notify,
    /// The SWIM task's inbox ([`Membership::Swim`] only).
    pub(crate) swim: Option<mpsc::UnboundedSender<SwimInput>>,
    pub counters: Counters,
    /// Corrupt-cell reports for this node's scrubber, and its counters.
    pub(crate) scrub: Arc<ScrubShared>,
    pub(crate) started: Instant,
    pub(crate) shutdown: watch::Sender<bool>,
    /// Fragment uploads in progress, per writing peer ([`UPLOADS_PER_PEER`]).
    pub(crate) uploads: Arc<PeerLimit<PeerId>>,
    /// Bytes of received frames in memory, per peer and in all.
    pub(crate) frame_bytes: Arc<FrameBytes>,
    /// The stats of the client that uses this node, if one reported them
    /// ([`crate::NetNode::report_client_stats`]).
    pub(crate) client_stats: Mutex<Option<ClientStatsSource>>,
}

pub(crate) type ClientStatsSource = Box<dyn Fn() -> Option<ClientStats> + Send + Sync>;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Default)]
pub(crate) struct Peer {
    pub(crate) connections: usize,
    /// Its description: from its hello (mesh) or its SWIM meta (swim; its
    /// hello, exchanged when it joins, carries tombstones only).
    pub(crate) hello: Option<Hello>,
    /// A live SWIM member ([`Membership::Swim`]).
    pub(crate) member: bool,
    /// Where it listens, from its SWIM meta or the address it was dialled at.
    pub(crate) addrs: Vec<Multiaddr>,
    /// When its process started, from its SWIM meta (0: not known).
    pub(crate) started_ms: u64,
    /// Set when a dial to it failed or its last connection broke, cleared by a
    /// new connection ([`Membership::Swim`]): such a member is not used for
    /// requests until SWIM's next probe of it connects (or declares it dead),
    /// so a `kill -9`'d node drops out of this node's requests at once, as
    /// under the mesh, while the cluster takes SWIM's bound to agree.
    pub(crate) unreachable: bool,
    /// When this node last asked for a connection to it or reused a pooled
    /// stream to it ([`Inner::connect`]): a connection closed with an I/O
    /// error after [`NetConfig::idle_connection_timeout`] unused was most
    /// likely closed by the peer's own idle timeout, not broken.
    pub(crate) last_used: Option<Instant>,
    /// Set when the last connection closed (mesh) or it was declared dead (swim).
    pub(crate) left_at: Option<Instant>,
    /// Connections to the peer that closed, for whatever reason (a second
    /// connection may already be open when one closes).
    pub(crate) connections_closed: u64,
    /// Its id as the core names nodes (its peer id in base58), encoded once:
    /// [`Inner::live`] runs for every placement and lookup, and base58 is a
    /// long division per id (15 % of a 200-node bench process's CPU when it
    /// was encoded per call).
    pub(crate) node_id: std::cell::OnceCell<NodeId>,
}

impl Peer {
    /// Requests can go to it: connected (mesh), or a live SWIM member,
    /// connected on demand (swim).
    pub(crate) fn reachable(&self, membership: Membership) -> bool {
        match membership {
            Membership::Mesh => self.connections > 0,
            Membership::Swim => self.member && !self.unreachable,
        }
    }

    /// It counts among the live nodes: reachable and described.
    pub(crate) fn live(&self, membership: Membership) -> bool {
        self.reachable(membership) && self.hello.is_some()
    }

    /// It is not down (for [`Inner::down_since`] and so repair): live (mesh),
    /// or a SWIM member even while this node cannot reach it (swim: a broken
    /// connection is SWIM's to judge, within its suspicion timeout).
    pub(crate) fn up(&self, membership: Membership) -> bool {
        match membership {
            Membership::Mesh => self.live(membership),
            Membership::Swim => self.member && self.hello.is_some(),
        }
    }
}

/// What the swim task is told by the node's other tasks.
pub(crate) enum SwimInput {
    /// A message `from` a peer (its peer id is authenticated by the connection).
    Message(PeerId, SwimMessage),
    /// A bootstrap address was reached: this peer is a seed to join through.
    Seed(PeerId),
    /// A connection to the peer failed (reset, pings lost): probe it next.
    ConnectionFailed(PeerId),
    /// The ping of probe `seq` went out, or its connection failed (it had to connect first).
    Sent(u64),
    /// Tell some members this node leaves, then stop; answered when the messages are out.
    Leave(oneshot::Sender<()>),
}

pub(crate) enum Cmd {
    Disconnect(PeerId),
    /// Connect to the peer at its known addresses; the answer comes when a
    /// connection is up or the dial failed.
    Dial { peer: PeerId, done: oneshot::Sender<std::result::Result<(), String>> },
}

impl Inner {
    pub(crate) fn count_membership_message(&self, bytes: usize) {
        self.counters.membership_messages_sent.fetch_add(1, Ordering::Relaxed);
        self.counters.membership_bytes_sent.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub(crate) fn traffic(&self) -> Traffic {
        let c = &self.counters;
        Traffic {
            connected_peers: lock(&self.peers).values().filter(|p| p.connections > 0).count(),
            connections_opened: c.connections_opened.load(Ordering::Relaxed),
            membership_messages_sent: c.membership_messages_sent.load(Ordering::Relaxed),
            membership_bytes_sent: c.membership_bytes_sent.load(Ordering::Relaxed),
            dials: std::array::from_fn(|i| c.dials[i].load(Ordering::Relaxed)),
            closed_idle: c.closed_idle.load(Ordering::Relaxed),
            closed_broken: c.closed_broken.load(Ordering::Relaxed),
            closed_here: c.closed_here.load(Ordering::Relaxed),
            news_pending: c.news_pending.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn stats(&self) -> NodeStats {
        let u = self.cfg.store.as_ref().map(|s| s.usage()).unwrap_or_default();
        let c = &self.counters;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        // One lock for the three figures (a guard in the literal below would
        // live to the end of the statement, and a second `lock` would deadlock).
        let tombstones = {
            let t = lock(&self.tombstones);
            (t.set.len() as u64, t.log.as_ref().map_or(0, |l| l.file_bytes()), t.set.evicted())
        };
        let hints = {
            let h = lock(&self.hints);
            (h.len() as u64, h.dropped())
        };
        let index = lock(&self.index).figures();
        NodeStats {
            node: self.id.to_string(),
            role: format!("{:?}", self.cfg.role).to_lowercase(),
            domain: self.cfg.domain.clone(),
            fragments: u.fragments,
            cells: u.cells,
            bytes: u.bytes,
            manifests: u.manifests,
            budget: u.budget,
            live_storage_peers: self.live().len() as u64,
            objects_degraded: g(&c.objects_degraded),
            bytes_to_repair: g(&c.bytes_to_repair),
            objects_repaired: g(&c.objects_repaired),
            fragments_repaired: g(&c.fragments_repaired),
            repair_failures: g(&c.repair_failures),
            tombstones: tombstones.0,
            tombstone_file_bytes: tombstones.1,
            tombstones_evicted: tombstones.2,
            tombstone_deletes: g(&c.tombstone_deletes),
            tombstone_hints: hints.0,
            tombstone_hints_dropped: hints.1,
            index_records: index.0,
            index_bytes: index.1,
            index_dropped: index.2,
            manifests_deleted: g(&c.manifests_deleted),
            reclaimed_fragments: g(&c.reclaimed_fragments),
            holder_check_passes: g(&c.holder_check_passes),
            holder_checked: g(&c.holder_checked),
            stale_copies_dropped: g(&c.stale_copies_dropped),
            fragments_rebalanced: g(&c.fragments_rebalanced),
            bytes_rebalanced: g(&c.bytes_rebalanced),
            rebalance_failures: g(&c.rebalance_failures),
            protocol_violations: g(&c.protocol_violations),
            streams_refused: g(&c.streams_refused),
            uploads_refused: g(&c.uploads_refused),
            uptime_secs: self.started.elapsed().as_secs(),
            heap_bytes: fragstate_core::heap::live_bytes().unwrap_or(0),
            scrub: self.scrub.stats(),
            client: None,
        }
    }

    /// [`Inner::stats`] with the figures of the client that uses this node
    /// (the answer to a peer's `Stat`: `fragstate stats`). Not in `stats`
    /// itself: the node's own metrics report that client beside it.
    pub(crate) fn stats_with_client(&self) -> NodeStats {
        NodeStats { client: lock(&self.client_stats).as_ref().and_then(|f| f()), ..self.stats() }
    }

    pub(crate) fn store(&self) -> Result<&Arc<FragmentStore>> {
        self.cfg.store.as_ref().ok_or_else(|| Error::NodeUnavailable {
            node: self.id.clone(),
            reason: "this is a client node: it holds no fragments".into(),
        })
    }
}

/// Runs a store call that may touch the disk without stalling the runtime.
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}
