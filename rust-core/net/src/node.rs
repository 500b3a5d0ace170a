//! [`NetNode`]: one fragstate node on a libp2p network, and its shared state
//! ([`Inner`]) that the swarm, membership, pool, server and transport
//! modules work on. Requests addressed to the node itself go straight to its
//! local store.

use std::collections::HashMap;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use libp2p::{Multiaddr, PeerId, Stream};
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;

use fragstate_client::scrubber::ScrubShared;
use fragstate_client::transport::Transport;
use fragstate_core::error::{Error, Result};
use fragstate_core::ids::{now_unix_ms, NodeId};
use fragstate_store::FragmentStore;

use crate::config::{Membership, FRAG_PROTOCOL, NetConfig};
use crate::index_holder::{IndexHolder, MAX_INDEX_BYTES};
use crate::membership::hello_task;
use crate::peer_limit::{FrameBytes, PeerLimit, UPLOADS_PER_PEER};
use crate::pool::expect_kind;
use crate::server::accept_task;
use crate::state::{lock, Counters, Inner, SwimInput, Tombstones, Traffic};
use crate::swarm::{build_swarm, swarm_task};
use crate::swim_node::{swim_accept_task, swim_task};
use crate::swim_wire::SWIM_PROTOCOL;
use crate::tombstone_log::TombstoneLog;
use crate::tombstone_set::TombstoneSet;
use crate::wire::{self, Kind, NodeStats, Role};

/// One node of a fragstate cluster. Cheap to clone; implements [`Transport`].
#[derive(Clone)]
pub struct NetNode {
    pub(crate) inner: Arc<Inner>,
    tasks: Arc<Mutex<Vec<NamedTask>>>,
}

/// One of a node's long-running tasks, with its name for the shutdown's report.
type NamedTask = (&'static str, JoinHandle<()>);

/// How long [`NetNode::shutdown`] waits for the node's tasks to end before it
/// aborts the rest: every task watches the shutdown signal, so one still
/// running after this is a bug, named in an error line, and a Flink
/// TaskManager's close must not hang on it.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

impl NetNode {
    /// Starts the node: listens, dials the bootstrap addresses and serves.
    pub async fn start(cfg: NetConfig) -> Result<NetNode> {
        if cfg.role == Role::Storage && cfg.store.is_none() {
            return Err(Error::invalid("store", "none", "a storage node needs a store directory or a memory budget"));
        }
        match &cfg.cluster_key {
            Some(k) => tracing::info!(fingerprint = %k.fingerprint(), "private network: cluster key loaded"),
            None => tracing::warn!("OPEN CLUSTER: started without a cluster key (--insecure-no-cluster-key); any host that reaches this port can join, read and write"),
        }
        let peer_id = cfg.identity.public().to_peer_id();
        let (swarm, mut control) = build_swarm(&cfg)?;
        let incoming = control
            .accept(FRAG_PROTOCOL)
            .map_err(|_| Error::Usage { component: "fragstate network node", reason: "fragment protocol registered twice".into() })?;
        let swim = match cfg.membership {
            Membership::Mesh => None,
            Membership::Swim => {
                let incoming = control
                    .accept(SWIM_PROTOCOL)
                    .map_err(|_| Error::Usage { component: "fragstate network node", reason: "membership protocol registered twice".into() })?;
                Some((mpsc::unbounded_channel(), incoming))
            }
        };
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (shutdown, _) = watch::channel(false);
        let mut set = TombstoneSet::new(cfg.tombstone_limits);
        let log = match &cfg.tombstone_file {
            Some(f) => Some(TombstoneLog::open(f, true, &mut set, now_unix_ms())?),
            None => None,
        };
        let tombstones = Tombstones { set, log };
        let inner = Arc::new(Inner {
            id: NodeId::from(peer_id.to_base58()),
            peer_id,
            cfg,
            control,
            peers: Mutex::new(HashMap::new()),
            pool: Mutex::new(HashMap::new()),
            cmd: cmd_tx,
            listen_addrs: Mutex::new(Vec::new()),
            tombstones: Mutex::new(tombstones),
            hints: Mutex::default(),
            index: Mutex::new(IndexHolder::new(MAX_INDEX_BYTES)),
            membership: Notify::new(),
            swim: swim.as_ref().map(|((tx, _), _)| tx.clone()),
            counters: Counters::default(),
            scrub: ScrubShared::new(),
            started: Instant::now(),
            shutdown,
            uploads: PeerLimit::new(UPLOADS_PER_PEER),
            frame_bytes: FrameBytes::new(),
            client_stats: Mutex::new(None),
        });
        let node = NetNode { inner: inner.clone(), tasks: Arc::new(Mutex::new(Vec::new())) };
        node.spawn("swarm", swarm_task(inner.clone(), swarm, cmd_rx));
        node.spawn("accept", accept_task(inner.clone(), incoming));
        node.spawn("hello", hello_task(inner.clone()));
        // Wait until the listeners are up, so that the addresses can be printed
        // (and SWIM announces them).
        let deadline = Instant::now() + Duration::from_secs(5);
        while lock(&inner.listen_addrs).len() < inner.cfg.listen.len() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if let Some(((_, inbox), incoming)) = swim {
            node.spawn("swim accept", swim_accept_task(inner.clone(), incoming));
            node.spawn("swim", swim_task(inner.clone(), inbox));
        }
        Ok(node)
    }

    pub(crate) fn spawn(&self, name: &'static str, f: impl std::future::Future<Output = ()> + Send + 'static) {
        lock(&self.tasks).push((name, tokio::spawn(f)));
    }

    pub fn id(&self) -> &NodeId {
        &self.inner.id
    }

    pub fn role(&self) -> Role {
        self.inner.cfg.role
    }

    pub fn store(&self) -> Option<&Arc<FragmentStore>> {
        self.inner.cfg.store.as_ref()
    }

    /// Addresses the node listens on, each ending in `/p2p/<peer id>`.
    pub fn listen_addrs(&self) -> Vec<Multiaddr> {
        lock(&self.inner.listen_addrs).iter().map(|a| a.clone().with(libp2p::multiaddr::Protocol::P2p(self.inner.peer_id))).collect()
    }

    /// Connections to `peer` that have closed since this node started.
    pub fn connections_closed(&self, peer: &PeerId) -> u64 {
        lock(&self.inner.peers).get(peer).map_or(0, |p| p.connections_closed)
    }

    /// Waits until at least `n` storage nodes are live; the error names both numbers.
    pub async fn wait_for_storage_nodes(&self, n: usize, timeout: Duration) -> Result<()> {
        if self.wait_for_view(timeout, || self.live_nodes().len() >= n).await {
            return Ok(());
        }
        let live = self.live_nodes().len();
        Err(Error::NodeUnavailable {
            node: self.inner.id.clone(),
            reason: format!("only {live} of the {n} storage nodes needed are live after {} ms", timeout.as_millis()),
        })
    }

    /// Waits until `node` is a live storage node here (the number of nodes
    /// waited for may be reached while one that just left still counts and
    /// `node` is not known yet); whether it became one within `timeout`.
    pub async fn wait_for_live_node(&self, node: &NodeId, timeout: Duration) -> bool {
        self.wait_for_view(timeout, || self.inner.is_live_node(node)).await
    }

    /// Waits until `ready` holds, asked again at every join or leave and at
    /// least every 100 ms (a member that becomes reachable again, or a
    /// hello's change, notifies nobody); whether it did within `timeout`.
    async fn wait_for_view(&self, timeout: Duration, ready: impl Fn() -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.inner.membership.notified();
            if ready() {
                return true;
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return false;
            }
            let _ = tokio::time::timeout_at(deadline.min(now + Duration::from_millis(100)), notified).await;
        }
    }

    /// This node's own figures; `client` is `None` here (a peer's `Stat`
    /// gets the client's too: [`NetNode::report_client_stats`]).
    pub fn stats(&self) -> NodeStats {
        self.inner.stats()
    }

    /// Connections and membership messages of this node so far.
    pub fn traffic(&self) -> Traffic {
        self.inner.traffic()
    }

    /// Makes this node's answer to peers' `Stat` (`fragstate stats`) include what `source` gives:
    /// the client that uses the node ([`fragstate_client::Client::stats_source`]).
    /// The last one reported counts.
    pub fn report_client_stats(&self, source: impl Fn() -> Option<fragstate_client::ClientStats> + Send + Sync + 'static) {
        *lock(&self.inner.client_stats) = Some(Box::new(source));
    }

    /// When `node` was last seen live (`None`: live now, or this node).
    pub fn down_since(&self, node: &NodeId) -> Option<Instant> {
        self.inner.down_since(node)
    }

    /// Changes to `true` when the node stops.
    pub(crate) fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.inner.shutdown.subscribe()
    }

    /// The scrub's report inbox and counters.
    pub(crate) fn scrub_shared(&self) -> &Arc<ScrubShared> {
        &self.inner.scrub
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    /// Asks `node` for its stats.
    pub async fn remote_stats(&self, node: &NodeId) -> Result<NodeStats> {
        if node == &self.inner.id {
            return Ok(self.inner.stats());
        }
        let f = self.inner.request(node, Kind::Stat, &[], &[]).await?;
        expect_kind(node, &f, Kind::Stats)?;
        wire::decode("stats", &f.body)
    }

    /// Opens a raw fragment-protocol stream to `peer` (tests and benchmarks).
    pub async fn open_raw_stream(&self, peer: PeerId) -> Result<Stream> {
        self.inner.open_stream(peer).await
    }

    /// Tells every task to stop without waiting (for `Drop` of a synchronous owner).
    pub fn stop(&self) {
        let _ = self.inner.shutdown.send(true);
    }

    /// Stops every task, closes the connections and waits for the tasks to end.
    /// Under SWIM the node first tells some members that it leaves, so that
    /// the others need not wait out a suspicion.
    pub async fn shutdown(&self) {
        if self.inner.swim.is_some() && !*self.inner.shutdown.borrow() {
            let (done, left) = tokio::sync::oneshot::channel();
            self.inner.to_swim(SwimInput::Leave(done));
            let _ = tokio::time::timeout(Duration::from_secs(3), left).await;
        }
        let _ = self.inner.shutdown.send(true);
        let tasks: Vec<_> = std::mem::take(&mut *lock(&self.tasks));
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        for (name, mut task) in tasks {
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                tracing::error!(task = name, node = %self.inner.id, grace_s = SHUTDOWN_GRACE.as_secs(), "a task did not stop within the grace after the shutdown signal: aborted");
                task.abort();
            }
        }
        lock(&self.inner.pool).clear();
    }
}

