//! [`NetNode`]: one fragstate node on a libp2p network — the swarm task
//! (TCP → pnet → noise → yamux, identify, ping, Kademlia in server mode,
//! raw streams), membership from hello exchanges, a pool of request
//! streams per peer, the server side of the fragment protocol, and the
//! [`Transport`] implementation that lets [`crate::Client`] run unchanged
//! over the network. Requests addressed to the node itself go straight to
//! its local store.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{AsyncWriteExt, StreamExt};
use libp2p::core::muxing::StreamMuxerBox;
use libp2p::core::transport::Boxed;
use libp2p::core::upgrade;
use libp2p::identity::Keypair;
use libp2p::kad;
use libp2p::pnet::{PnetConfig, PreSharedKey};
use libp2p::swarm::dial_opts::{DialOpts, PeerCondition};
use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
use libp2p::{identify, noise, ping, tcp, yamux, Multiaddr, PeerId, Stream, StreamProtocol, Swarm, Transport as _};
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;

use super::wire::{self, Frame, GetCellReq, Hello, Kind, NodeStats, Role, Tombstone, WireDelete, WireDeleteStats, WireError};
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{self, CellFrame, FragmentHeader, Manifest, ObjectSummary};
use fragstate_core::ids::FragmentKey;
use fragstate_store::FragmentStore;
use fragstate_client::transport::{FragmentSink, Transport};
use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::ids::{now_unix_ms, NodeId};
use fragstate_core::placement::NodeInfo;

pub const FRAG_PROTOCOL: StreamProtocol = StreamProtocol::new("/fragstate/frag/1.0.0");
const KAD_PROTOCOL: StreamProtocol = StreamProtocol::new("/fragstate/kad/1.0.0");
const IDENTIFY_PROTOCOL: &str = "/fragstate/id/1.0.0";
/// Tombstones carried in one hello (newest first).
const MAX_TOMBSTONES_PER_HELLO: usize = 1000;

/// How a node runs. [`NetConfig::new`] gives the defaults.
#[derive(Clone)]
pub struct NetConfig {
    pub identity: Keypair,
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
    pub ping_interval: Duration,
    pub ping_timeout: Duration,
    /// Opening a stream, and each response or frame, must happen within this.
    pub request_timeout: Duration,
    /// Connections without traffic are closed after this (libp2p's default, 10 s, is too short).
    pub idle_connection_timeout: Duration,
    /// Hello refresh period (free bytes, tombstones).
    pub hello_interval: Duration,
    /// Where tombstones survive a restart (disk-backed nodes).
    pub tombstone_file: Option<std::path::PathBuf>,
    pub tombstone_ttl: Duration,
}

impl NetConfig {
    pub fn new(identity: Keypair, role: Role, cluster_key: Option<PreSharedKey>) -> Self {
        NetConfig {
            identity,
            listen: vec!["/ip4/127.0.0.1/tcp/0".parse().expect("valid multiaddr")],
            bootstrap: Vec::new(),
            cluster_key,
            role,
            domain: hostname(),
            store: None,
            include_self: true,
            ping_interval: Duration::from_millis(300),
            ping_timeout: Duration::from_millis(650),
            request_timeout: Duration::from_secs(30),
            idle_connection_timeout: Duration::from_secs(3600),
            hello_interval: Duration::from_secs(2),
            tombstone_file: None,
            tombstone_ttl: Duration::from_secs(24 * 3600),
        }
    }
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_else(|_| "localhost".into())
}

#[derive(NetworkBehaviour)]
struct Behaviour {
    identify: identify::Behaviour,
    ping: ping::Behaviour,
    kad: kad::Behaviour<kad::store::MemoryStore>,
    stream: libp2p_stream::Behaviour,
}

enum Cmd {
    Disconnect(PeerId),
}

#[derive(Default)]
struct Peer {
    connections: usize,
    hello: Option<Hello>,
    /// Set when the last connection closed.
    left_at: Option<Instant>,
    /// Times the peer went from connected to not connected.
    departures: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub objects_degraded: AtomicU64,
    pub bytes_to_repair: AtomicU64,
    pub objects_repaired: AtomicU64,
    pub fragments_repaired: AtomicU64,
    pub repair_failures: AtomicU64,
    pub tombstone_deletes: AtomicU64,
    pub reclaimed_fragments: AtomicU64,
    pub protocol_violations: AtomicU64,
}

pub(crate) struct Inner {
    pub id: NodeId,
    pub peer_id: PeerId,
    pub cfg: NetConfig,
    control: libp2p_stream::Control,
    peers: Mutex<HashMap<PeerId, Peer>>,
    pool: Mutex<HashMap<PeerId, Vec<(Stream, Instant)>>>,
    cmd: mpsc::UnboundedSender<Cmd>,
    listen_addrs: Mutex<Vec<Multiaddr>>,
    tombstones: Mutex<HashSet<Tombstone>>,
    membership: Notify,
    pub counters: Counters,
    started: Instant,
    shutdown: watch::Sender<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One node of a fragstate cluster. Cheap to clone; implements [`Transport`].
#[derive(Clone)]
pub struct NetNode {
    pub(crate) inner: Arc<Inner>,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

fn build_transport(key: &Keypair, psk: Option<PreSharedKey>, timeout: Duration) -> Result<Boxed<(PeerId, StreamMuxerBox)>> {
    let noise = noise::Config::new(key).map_err(|e| Error::format("noise configuration", e.to_string()))?;
    let tcp = tcp::tokio::Transport::new(tcp::Config::default().nodelay(true));
    let yamux = yamux::Config::default();
    Ok(match psk {
        Some(psk) => tcp
            .and_then(move |socket, _| PnetConfig::new(psk).handshake(socket))
            .upgrade(upgrade::Version::V1Lazy)
            .authenticate(noise)
            .multiplex(yamux)
            .timeout(timeout)
            .boxed(),
        None => tcp.upgrade(upgrade::Version::V1Lazy).authenticate(noise).multiplex(yamux).timeout(timeout).boxed(),
    })
}

fn node_fault(node: &NodeId, e: impl std::fmt::Display) -> Error {
    Error::NodeUnavailable { node: node.clone(), reason: e.to_string() }
}

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
        let transport = build_transport(&cfg.identity, cfg.cluster_key, Duration::from_secs(10))?;
        let mut kad_cfg = kad::Config::new(KAD_PROTOCOL);
        kad_cfg.set_query_timeout(Duration::from_secs(10));
        let mut kademlia = kad::Behaviour::with_config(peer_id, kad::store::MemoryStore::new(peer_id), kad_cfg);
        // In automatic mode a node without a confirmed external address stays a client and is never added to routing tables.
        kademlia.set_mode(Some(kad::Mode::Server));
        let stream = libp2p_stream::Behaviour::new();
        let mut control = stream.new_control();
        let behaviour = Behaviour {
            identify: identify::Behaviour::new(
                identify::Config::new(IDENTIFY_PROTOCOL.to_string(), cfg.identity.public())
                    .with_agent_version(format!("fragstate/{}", env!("CARGO_PKG_VERSION"))),
            ),
            ping: ping::Behaviour::new(ping::Config::new().with_interval(cfg.ping_interval).with_timeout(cfg.ping_timeout)),
            kad: kademlia,
            stream,
        };
        let swarm_cfg = libp2p::swarm::Config::with_tokio_executor()
            .with_idle_connection_timeout(cfg.idle_connection_timeout)
            .with_substream_upgrade_protocol_override(upgrade::Version::V1Lazy);
        let mut swarm = Swarm::new(transport, behaviour, peer_id, swarm_cfg);
        for addr in &cfg.listen {
            swarm.listen_on(addr.clone()).map_err(|e| Error::invalid("listen address", addr, format!("a listenable TCP multiaddr ({e})")))?;
        }
        let incoming = control
            .accept(FRAG_PROTOCOL)
            .map_err(|_| Error::InvalidState { path: String::new(), reason: "fragment protocol registered twice".into() })?;
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (shutdown, _) = watch::channel(false);
        let tombstones = match &cfg.tombstone_file {
            Some(f) => load_tombstones(f),
            None => HashSet::new(),
        };
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
            membership: Notify::new(),
            counters: Counters::default(),
            started: Instant::now(),
            shutdown,
        });
        let node = NetNode { inner: inner.clone(), tasks: Arc::new(Mutex::new(Vec::new())) };
        node.spawn(swarm_task(inner.clone(), swarm, cmd_rx));
        node.spawn(accept_task(inner.clone(), incoming));
        node.spawn(hello_task(inner.clone()));
        // Wait until the listeners are up, so that the addresses can be printed.
        let deadline = Instant::now() + Duration::from_secs(5);
        while lock(&inner.listen_addrs).len() < inner.cfg.listen.len() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(node)
    }

    pub(crate) fn spawn(&self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        lock(&self.tasks).push(tokio::spawn(f));
    }

    pub fn id(&self) -> &NodeId {
        &self.inner.id
    }

    pub fn peer_id(&self) -> PeerId {
        self.inner.peer_id
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

    /// Peers with at least one open connection (any role).
    pub fn connected_peers(&self) -> Vec<PeerId> {
        lock(&self.inner.peers).iter().filter(|(_, p)| p.connections > 0).map(|(id, _)| *id).collect()
    }

    /// How often `peer` went from connected to disconnected.
    pub fn departures(&self, peer: &PeerId) -> u64 {
        lock(&self.inner.peers).get(peer).map_or(0, |p| p.departures)
    }

    /// Waits until at least `n` storage nodes are live; the error names both numbers.
    pub async fn wait_for_storage_nodes(&self, n: usize, timeout: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.inner.membership.notified();
            let live = self.live_nodes().len();
            if live >= n {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Err(Error::NodeUnavailable {
                    node: self.inner.id.clone(),
                    reason: format!("only {live} of the {n} storage nodes needed are live after {} ms", timeout.as_millis()),
                });
            }
        }
    }

    pub fn stats(&self) -> NodeStats {
        self.inner.stats()
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
    pub async fn shutdown(&self) {
        let _ = self.inner.shutdown.send(true);
        let tasks: Vec<_> = std::mem::take(&mut *lock(&self.tasks));
        for t in tasks {
            let _ = t.await;
        }
        lock(&self.inner.pool).clear();
    }
}

fn expect_kind(node: &NodeId, f: &Frame, want: Kind) -> Result<()> {
    if f.kind == want {
        Ok(())
    } else {
        Err(node_fault(node, format!("protocol error: expected a {want:?} frame, got {:?}", f.kind)))
    }
}

fn load_tombstones(f: &std::path::Path) -> HashSet<Tombstone> {
    match std::fs::read(f) {
        Ok(b) => match wire::decode::<Vec<Tombstone>>("tombstones", &b) {
            Ok(v) => v.into_iter().collect(),
            Err(e) => {
                tracing::warn!(file = %f.display(), error = %e, "ignoring unreadable tombstone file");
                HashSet::new()
            }
        },
        Err(_) => HashSet::new(),
    }
}

impl Inner {
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    fn is_live_storage(&self, peer: &PeerId) -> bool {
        lock(&self.peers).get(peer).is_some_and(|p| p.connections > 0 && p.hello.as_ref().is_some_and(|h| h.role == Role::Storage))
    }

    pub fn live(&self) -> Vec<NodeInfo> {
        let mut v: Vec<NodeInfo> = lock(&self.peers)
            .iter()
            .filter(|(_, p)| p.connections > 0)
            .filter_map(|(id, p)| {
                let h = p.hello.as_ref()?;
                (h.role == Role::Storage).then(|| NodeInfo { id: NodeId::from(id.to_base58()), domain: Arc::from(h.domain.as_str()), free_bytes: h.free_bytes })
            })
            .collect();
        if self.cfg.role == Role::Storage && self.cfg.include_self {
            if let Some(s) = &self.cfg.store {
                v.push(NodeInfo { id: self.id.clone(), domain: Arc::from(self.cfg.domain.as_str()), free_bytes: s.usage().free_bytes() });
            }
        }
        v
    }

    /// When `node` was last seen live (`None`: live now).
    pub fn down_since(&self, node: &NodeId) -> Option<Instant> {
        if node == &self.id {
            return None;
        }
        let Ok(pid) = node.as_str().parse::<PeerId>() else { return Some(self.started) };
        match lock(&self.peers).get(&pid) {
            Some(p) if p.connections > 0 && p.hello.is_some() => None,
            Some(p) => Some(p.left_at.unwrap_or(self.started)),
            None => Some(self.started),
        }
    }

    /// This node's hello. Tombstones: all of them (newest first, bounded) in
    /// the first hello on a new connection, else only those of the last 10 s.
    fn my_hello(&self, all_tombstones: bool) -> Hello {
        let recent = now_unix_ms().saturating_sub(10_000);
        let mut t: Vec<Tombstone> = lock(&self.tombstones).iter().filter(|t| all_tombstones || t.at_unix_ms >= recent).cloned().collect();
        t.sort_by(|a, b| b.at_unix_ms.cmp(&a.at_unix_ms));
        t.truncate(MAX_TOMBSTONES_PER_HELLO);
        Hello {
            protocol_version: wire::PROTOCOL_VERSION,
            role: self.cfg.role,
            domain: self.cfg.domain.clone(),
            free_bytes: self.cfg.store.as_ref().map_or(0, |s| s.usage().free_bytes()),
            tombstones: t,
        }
    }

    fn record_hello(&self, peer: PeerId, hello: Hello) {
        let tombs = hello.tombstones.clone();
        let joined = {
            let mut peers = lock(&self.peers);
            let p = peers.entry(peer).or_default();
            let joined = p.hello.is_none() && p.connections > 0;
            let h = Hello { tombstones: Vec::new(), ..hello };
            if joined {
                tracing::info!(%peer, role = ?h.role, domain = %h.domain, free_bytes = h.free_bytes, "peer joined");
            }
            p.hello = Some(h);
            joined
        };
        if joined {
            self.membership.notify_waiters();
        }
        self.apply_tombstones(tombs);
    }

    fn stats(&self) -> NodeStats {
        let u = self.cfg.store.as_ref().map(|s| s.usage()).unwrap_or_default();
        let c = &self.counters;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
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
            tombstones: lock(&self.tombstones).len() as u64,
            tombstone_deletes: g(&c.tombstone_deletes),
            reclaimed_fragments: g(&c.reclaimed_fragments),
            protocol_violations: g(&c.protocol_violations),
            uptime_secs: self.started.elapsed().as_secs(),
        }
    }

    fn store(&self) -> Result<&Arc<FragmentStore>> {
        self.cfg.store.as_ref().ok_or_else(|| Error::NodeUnavailable {
            node: self.id.clone(),
            reason: "this is a client node: it holds no fragments".into(),
        })
    }

    // ---- tombstones ----

    /// Applies a delete to the local store and remembers path and prefix
    /// deletes as tombstones, which travel to every peer in hellos.
    fn local_delete(&self, target: &DeleteTarget) -> Result<DeleteStats> {
        let stats = self.store()?.delete(target)?;
        let t = match target {
            DeleteTarget::Path(p) => Some(Tombstone { prefix: false, path: p.clone(), at_unix_ms: now_unix_ms() }),
            DeleteTarget::Prefix(p) => Some(Tombstone { prefix: true, path: p.clone(), at_unix_ms: now_unix_ms() }),
            _ => None,
        };
        if let Some(t) = t {
            lock(&self.tombstones).insert(t);
            self.save_tombstones();
        }
        Ok(stats)
    }

    fn apply_tombstones(&self, tombs: Vec<Tombstone>) {
        if tombs.is_empty() {
            return;
        }
        let ttl_cut = now_unix_ms().saturating_sub(self.cfg.tombstone_ttl.as_millis() as u64);
        let new: Vec<Tombstone> = {
            let mut known = lock(&self.tombstones);
            tombs.into_iter().filter(|t| t.at_unix_ms >= ttl_cut && known.insert(t.clone())).collect()
        };
        if new.is_empty() {
            return;
        }
        if let Some(store) = &self.cfg.store {
            for t in &new {
                let hits = store.list(&t.path);
                for s in hits.into_iter().filter(|s| (t.prefix || s.path == t.path) && s.created_unix_ms <= t.at_unix_ms) {
                    match store.delete(&DeleteTarget::Write { path: s.path.clone(), write_id: s.write_id }) {
                        Ok(st) => {
                            self.counters.tombstone_deletes.fetch_add(1, Ordering::Relaxed);
                            tracing::info!(path = %s.path, tombstone = %t.path, prefix = t.prefix, fragments = st.fragments, "deleted by a tombstone (delete issued while this node was away)");
                        }
                        Err(e) => tracing::warn!(path = %s.path, error = %e, "tombstone delete failed"),
                    }
                }
            }
        }
        self.save_tombstones();
    }

    pub fn prune_tombstones(&self) {
        let cut = now_unix_ms().saturating_sub(self.cfg.tombstone_ttl.as_millis() as u64);
        let removed = {
            let mut t = lock(&self.tombstones);
            let before = t.len();
            t.retain(|t| t.at_unix_ms >= cut);
            before != t.len()
        };
        if removed {
            self.save_tombstones();
        }
    }

    fn save_tombstones(&self) {
        let Some(f) = &self.cfg.tombstone_file else { return };
        let v: Vec<Tombstone> = lock(&self.tombstones).iter().cloned().collect();
        let tmp = f.with_extension("tmp");
        if let Err(e) = std::fs::write(&tmp, wire::encode(&v)).and_then(|_| std::fs::rename(&tmp, f)) {
            tracing::warn!(file = %f.display(), error = %e, "could not save tombstones");
        }
    }

    // ---- client side of the protocol ----

    fn peer_of(&self, node: &NodeId) -> Result<PeerId> {
        let pid: PeerId = node.as_str().parse().map_err(|_| node_fault(node, "not a peer id"))?;
        if !lock(&self.peers).get(&pid).is_some_and(|p| p.connections > 0) {
            return Err(node_fault(node, "not connected"));
        }
        Ok(pid)
    }

    async fn open_stream(&self, peer: PeerId) -> Result<Stream> {
        let mut control = self.control.clone();
        let node = NodeId::from(peer.to_base58());
        match tokio::time::timeout(self.cfg.request_timeout, control.open_stream(peer, FRAG_PROTOCOL)).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(node_fault(&node, e)),
            Err(_) => Err(Error::Timeout { node, millis: self.cfg.request_timeout.as_millis() as u64 }),
        }
    }

    /// A pooled stream to `peer` (and whether it was reused) or a new one.
    async fn take_stream(&self, peer: PeerId) -> Result<(Stream, bool)> {
        {
            let mut pool = lock(&self.pool);
            if let Some(v) = pool.get_mut(&peer) {
                while let Some((s, since)) = v.pop() {
                    // The server closes streams idle for long; don't reuse old ones.
                    if since.elapsed() < Duration::from_secs(20) {
                        return Ok((s, true));
                    }
                }
            }
        }
        Ok((self.open_stream(peer).await?, false))
    }

    fn put_back(&self, peer: PeerId, s: Stream) {
        let mut pool = lock(&self.pool);
        let v = pool.entry(peer).or_default();
        if v.len() < 64 {
            v.push((s, Instant::now()));
        }
    }

    async fn timed<T>(&self, node: &NodeId, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        match tokio::time::timeout(self.cfg.request_timeout, f).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout { node: node.clone(), millis: self.cfg.request_timeout.as_millis() as u64 }),
        }
    }

    /// Reads the response to a request: an `Err` frame becomes the error it carries.
    async fn response(&self, node: &NodeId, s: &mut Stream) -> Result<Frame> {
        let f = self
            .timed(node, wire::read_frame(s, None))
            .await
            .map_err(|e| if matches!(e, Error::Io { .. }) { node_fault(node, e) } else { e })?
            .ok_or_else(|| node_fault(node, "stream closed before the response"))?;
        if f.kind == Kind::Err {
            let we: WireError = wire::decode("error", &f.body)?;
            return Err(we.into_error(node));
        }
        Ok(f)
    }

    /// Whether a failed attempt is worth another one: the stream broke
    /// before an answer (a reused stream the peer closed, or a new one its
    /// accept queue dropped under a burst) while the peer is still connected.
    fn retryable(&self, peer: &PeerId, e: &Error, attempt: usize) -> bool {
        attempt + 1 < REQUEST_ATTEMPTS
            && matches!(e, Error::NodeUnavailable { .. })
            && lock(&self.peers).get(peer).is_some_and(|p| p.connections > 0)
    }

    /// One request and its response on a pooled stream, retried on a new
    /// stream while [`Self::retryable`] says so.
    async fn request(&self, node: &NodeId, kind: Kind, body: &[u8], extra: &[u8]) -> Result<Frame> {
        let peer = self.peer_of(node)?;
        let mut attempt = 0;
        loop {
            let (mut s, reused) = self.take_stream(peer).await?;
            let sent = self.timed(node, wire::write_frame(&mut s, kind, body, extra)).await;
            let r = match sent {
                Ok(()) => self.response(node, &mut s).await,
                Err(e) => Err(node_fault(node, e)),
            };
            match r {
                Ok(f) => {
                    self.put_back(peer, s);
                    return Ok(f);
                }
                Err(e) if self.retryable(&peer, &e, attempt) => {
                    tracing::debug!(%peer, attempt, reused, error = %e, "request failed, retrying on a new stream");
                    if !reused {
                        tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
                    }
                    attempt += 1;
                }
                Err(e) => {
                    // A remote error answer leaves the stream in a clean state.
                    if !matches!(e, Error::NodeUnavailable { .. } | Error::Timeout { .. }) {
                        self.put_back(peer, s);
                    }
                    return Err(e);
                }
            }
        }
    }
}

/// Attempts of one request (libp2p-stream drops inbound streams that arrive
/// while its accept queue, one slot, is full).
const REQUEST_ATTEMPTS: usize = 5;

// ---- the swarm task ----

async fn swarm_task(inner: Arc<Inner>, mut swarm: Swarm<Behaviour>, mut cmds: mpsc::UnboundedReceiver<Cmd>) {
    let mut shutdown = inner.shutdown.subscribe();
    for addr in &inner.cfg.bootstrap {
        if let Err(e) = swarm.dial(addr.clone()) {
            tracing::warn!(%addr, error = %e, "cannot dial bootstrap address");
        }
    }
    let mut tick = tokio::time::interval(Duration::from_secs(3));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            Some(cmd) = cmds.recv() => match cmd {
                Cmd::Disconnect(peer) => {
                    let _ = swarm.disconnect_peer_id(peer);
                }
            },
            _ = tick.tick() => {
                // Find peers that joined elsewhere; redial the bootstrap nodes when alone.
                let connected = swarm.connected_peers().count();
                if connected == 0 {
                    for addr in &inner.cfg.bootstrap {
                        let _ = swarm.dial(addr.clone());
                    }
                } else {
                    let _ = swarm.behaviour_mut().kad.bootstrap();
                }
                // Peers that left recently may be back (restart, or a ping timeout under load).
                let recent: Vec<PeerId> = lock(&inner.peers)
                    .iter()
                    .filter(|(_, p)| p.connections == 0 && p.left_at.is_some_and(|t| t.elapsed() < Duration::from_secs(600)))
                    .map(|(id, _)| *id)
                    .collect();
                for p in recent {
                    let _ = swarm.dial(DialOpts::peer_id(p).condition(PeerCondition::DisconnectedAndNotDialing).build());
                }
            }
            ev = swarm.select_next_some() => handle_event(&inner, &mut swarm, ev),
        }
    }
    let peers: Vec<PeerId> = swarm.connected_peers().cloned().collect();
    for p in peers {
        let _ = swarm.disconnect_peer_id(p);
    }
    // Let the close frames go out.
    let _ = tokio::time::timeout(Duration::from_millis(200), async {
        loop {
            swarm.select_next_some().await;
        }
    })
    .await;
    tracing::info!("network stopped");
}

fn peer_left(inner: &Inner, peer: PeerId, why: &str) {
    let was_live = {
        let mut peers = lock(&inner.peers);
        let p = peers.entry(peer).or_default();
        let was = p.hello.is_some();
        if p.connections > 0 || p.hello.is_some() {
            p.departures += 1;
        }
        p.connections = 0;
        p.hello = None;
        p.left_at = Some(Instant::now());
        was
    };
    lock(&inner.pool).remove(&peer);
    if was_live {
        tracing::info!(%peer, reason = why, "peer left");
        inner.membership.notify_waiters();
    }
}

fn handle_event(inner: &Arc<Inner>, swarm: &mut Swarm<Behaviour>, ev: SwarmEvent<BehaviourEvent>) {
    match ev {
        SwarmEvent::NewListenAddr { address, .. } => {
            tracing::info!(%address, peer = %inner.peer_id, "listening");
            lock(&inner.listen_addrs).push(address);
        }
        SwarmEvent::ConnectionEstablished { peer_id, endpoint, num_established, .. } => {
            lock(&inner.peers).entry(peer_id).or_default().connections = num_established.get() as usize;
            if endpoint.is_dialer() {
                swarm.behaviour_mut().kad.add_address(&peer_id, endpoint.get_remote_address().clone());
            }
            tracing::debug!(%peer_id, "connection established");
            let inner = inner.clone();
            tokio::spawn(async move { exchange_hello(&inner, peer_id, true).await });
        }
        SwarmEvent::ConnectionClosed { peer_id, num_established, cause, .. } => {
            if num_established == 0 {
                let why = cause.map(|c| c.to_string()).unwrap_or_else(|| "closed".into());
                peer_left(inner, peer_id, &why);
            } else {
                lock(&inner.peers).entry(peer_id).or_default().connections = num_established as usize;
            }
        }
        SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received { peer_id, info, .. })) => {
            // Inbound connections come from ephemeral ports: use the listen addresses the peer reports.
            for a in info.listen_addrs {
                swarm.behaviour_mut().kad.add_address(&peer_id, a);
            }
            // Learn the rest of the cluster from the new peer right away.
            let _ = swarm.behaviour_mut().kad.bootstrap();
        }
        SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::RoutingUpdated { peer, addresses, .. })) => {
            if peer != inner.peer_id && !swarm.is_connected(&peer) {
                let opts = DialOpts::peer_id(peer).addresses(addresses.into_vec()).condition(PeerCondition::DisconnectedAndNotDialing).build();
                let _ = swarm.dial(opts);
            }
        }
        SwarmEvent::Behaviour(BehaviourEvent::Ping(ping::Event { peer, result: Err(e), .. })) => {
            tracing::warn!(%peer, error = %e, "ping failed: dropping the peer");
            peer_left(inner, peer, "ping failure");
            let _ = swarm.disconnect_peer_id(peer);
        }
        SwarmEvent::OutgoingConnectionError { peer_id, error, .. } => {
            tracing::debug!(?peer_id, %error, "dial failed");
        }
        SwarmEvent::IncomingConnectionError { send_back_addr, error, .. } => {
            tracing::warn!(from = %send_back_addr, %error, "refused an incoming connection (wrong or missing cluster key?)");
        }
        _ => {}
    }
}

async fn exchange_hello(inner: &Arc<Inner>, peer: PeerId, all_tombstones: bool) {
    let node = NodeId::from(peer.to_base58());
    let body = wire::encode(&inner.my_hello(all_tombstones));
    match inner.request(&node, Kind::Hello, &body, &[]).await {
        Ok(f) if f.kind == Kind::HelloReply => match wire::decode::<Hello>("hello", &f.body) {
            Ok(h) => inner.record_hello(peer, h),
            Err(e) => tracing::warn!(%peer, error = %e, "bad hello reply"),
        },
        Ok(f) => tracing::warn!(%peer, kind = ?f.kind, "unexpected hello reply"),
        Err(e) => tracing::debug!(%peer, error = %e, "hello failed"),
    }
}

async fn hello_task(inner: Arc<Inner>) {
    let mut shutdown = inner.shutdown.subscribe();
    let mut tick = tokio::time::interval(inner.cfg.hello_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            _ = tick.tick() => {
                let peers: Vec<PeerId> = lock(&inner.peers).iter().filter(|(_, p)| p.connections > 0).map(|(id, _)| *id).collect();
                futures::future::join_all(peers.into_iter().map(|p| exchange_hello(&inner, p, false))).await;
                inner.prune_tombstones();
            }
        }
    }
}

// ---- the server side ----

async fn accept_task(inner: Arc<Inner>, mut incoming: libp2p_stream::IncomingStreams) {
    let mut shutdown = inner.shutdown.subscribe();
    let limit = Arc::new(tokio::sync::Semaphore::new(1024));
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            next = incoming.next() => {
                let Some((peer, stream)) = next else { break };
                let Ok(permit) = limit.clone().try_acquire_owned() else {
                    tracing::warn!(%peer, "too many open streams: refusing one");
                    continue;
                };
                let inner = inner.clone();
                let mut shutdown = inner.shutdown.subscribe();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = shutdown.changed() => {}
                        _ = serve_stream(&inner, peer, stream) => {}
                    }
                    drop(permit);
                });
            }
        }
    }
}

/// How long a server waits for the next request on an idle pooled stream.
const IDLE_STREAM: Duration = Duration::from_secs(60);

async fn serve_stream(inner: &Arc<Inner>, peer: PeerId, mut s: Stream) {
    let node = NodeId::from(peer.to_base58());
    loop {
        let frame = match tokio::time::timeout(IDLE_STREAM, wire::read_frame(&mut s, None)).await {
            Err(_) | Ok(Ok(None)) => break,
            Ok(Ok(Some(f))) => f,
            Ok(Err(e)) => {
                violation_or_log(inner, peer, &e);
                break;
            }
        };
        if let Err(e) = serve_request(inner, peer, &node, &mut s, frame).await {
            violation_or_log(inner, peer, &e);
            break;
        }
    }
    let _ = s.close().await;
}

fn violation_or_log(inner: &Inner, peer: PeerId, e: &Error) {
    if wire::is_protocol_violation(e) {
        inner.counters.protocol_violations.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(%peer, error = %e, "protocol violation: dropping the connection");
        peer_left(inner, peer, "protocol violation");
        let _ = inner.cmd.send(Cmd::Disconnect(peer));
    } else {
        tracing::debug!(%peer, error = %e, "stream ended");
    }
}

async fn reply_err(s: &mut Stream, e: &Error) -> Result<()> {
    wire::write_frame(s, Kind::Err, &wire::encode(&WireError::from_error(e)), &[]).await
}

async fn reply<T>(s: &mut Stream, r: Result<T>, ok: impl FnOnce(T) -> (Kind, Vec<u8>)) -> Result<()> {
    match r {
        Ok(v) => {
            let (k, b) = ok(v);
            wire::write_frame(s, k, &b, &[]).await
        }
        Err(e) => reply_err(s, &e).await,
    }
}

/// Runs a store call that may touch the disk without stalling the runtime.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Serves one request. An `Err` return ends the stream (and, for a protocol
/// violation, the connection); errors of the operation itself are answered.
async fn serve_request(inner: &Arc<Inner>, peer: PeerId, _node: &NodeId, s: &mut Stream, f: Frame) -> Result<()> {
    match f.kind {
        Kind::Hello => {
            let h: Hello = wire::decode("hello", &f.body)?;
            inner.record_hello(peer, h);
            wire::write_frame(s, Kind::HelloReply, &wire::encode(&inner.my_hello(false)), &[]).await
        }
        Kind::OpenFragment => {
            let header = format::decode_fragment_header(&f.body).map_err(|e| Error::format("frame body (fragment header)", e.to_string()))?;
            let opened = inner.store().and_then(|st| blocking(|| st.begin_fragment(&header)));
            let ok = opened.is_ok();
            reply(s, opened, |_| (Kind::Ok, vec![])).await?;
            if ok {
                receive_fragment(inner, s, header).await?;
            }
            Ok(())
        }
        Kind::GetCell => {
            let r: GetCellReq = wire::decode("get cell", &f.body)?;
            let key = FragmentKey { path: Arc::from(r.path.as_str()), write_id: r.write_id, index: r.index };
            let got = inner.store().and_then(|st| blocking(|| st.get_cell(&key, r.stripe)));
            match got {
                Ok(cell) => {
                    let head = CellFrame { stripe: r.stripe, len: cell.len() as u32, checksum: 0 }.encode();
                    wire::write_frame(s, Kind::CellData, &head, &cell).await
                }
                Err(e) => reply_err(s, &e).await,
            }
        }
        Kind::PutManifest => {
            let m = format::decode_manifest(&f.body).map_err(|e| Error::format("frame body (manifest)", e.to_string()))?;
            let r = inner.store().and_then(|st| blocking(|| st.put_manifest(Arc::new(m))));
            reply(s, r, |_| (Kind::Ok, vec![])).await
        }
        Kind::GetManifest => {
            let path = std::str::from_utf8(&f.body).map_err(|_| Error::format("frame body (path)", "not UTF-8"))?;
            match inner.store().map(|st| st.get_manifest(path)) {
                Ok(Some(m)) => wire::write_frame(s, Kind::ManifestData, &format::encode_manifest(&m), &[]).await,
                Ok(None) => wire::write_frame(s, Kind::NoManifest, &[], &[]).await,
                Err(e) => reply_err(s, &e).await,
            }
        }
        Kind::List => {
            let prefix = std::str::from_utf8(&f.body).map_err(|_| Error::format("frame body (prefix)", "not UTF-8"))?;
            let r = inner.store().map(|st| st.list(prefix));
            reply(s, r, |v| (Kind::Listing, wire::encode(&v))).await
        }
        Kind::Delete => {
            let t: WireDelete = wire::decode("delete", &f.body)?;
            let target = DeleteTarget::from(t);
            let r = blocking(|| inner.local_delete(&target));
            reply(s, r, |st| (Kind::Deleted, wire::encode(&WireDeleteStats::from(st)))).await
        }
        Kind::Stat => wire::write_frame(s, Kind::Stats, &wire::encode(&inner.stats()), &[]).await,
        Kind::BenchSink => {
            // Benchmark: the body was the payload; acknowledge it.
            wire::write_frame(s, Kind::Ok, &[], &[]).await
        }
        Kind::BenchSource => {
            let n: u64 = wire::decode("bench source", &f.body)?;
            let chunk = vec![0x5au8; 1 << 20];
            let mut left = n;
            while left > 0 {
                let take = left.min(chunk.len() as u64) as usize;
                wire::write_frame(s, Kind::CellData, &chunk[..take], &[]).await?;
                left -= take as u64;
            }
            wire::write_frame(s, Kind::Ok, &[], &[]).await
        }
        other => Err(Error::format("frame", format!("{other:?} frame where a request was expected"))),
    }
}

/// Receives the cells of one fragment until `Finish`; answers `Ok` once the
/// fragment is durable, or the first error of the upload.
async fn receive_fragment(inner: &Arc<Inner>, s: &mut Stream, header: FragmentHeader) -> Result<()> {
    let key = header.key();
    let cell_size = header.params.cell_size() as u32;
    let store = inner.store()?.clone();
    let mut failed: Option<Error> = None;
    loop {
        let f = match tokio::time::timeout(inner.cfg.request_timeout, wire::read_frame(s, Some(cell_size))).await {
            Ok(Ok(Some(f))) => f,
            Ok(Ok(None)) => return Err(Error::format("upload", "stream closed before Finish (writer gone)")),
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(Error::format("upload", "no frame within the request timeout")),
        };
        match f.kind {
            Kind::Cell => {
                let (frame, cell) = wire::split_cell("cell", f.body, cell_size)?;
                if failed.is_none() {
                    if let Err(e) = blocking(|| store.append_cell(&key, frame.stripe, frame.checksum, cell)) {
                        tracing::warn!(path = %key.path, fragment = key.index, error = %e, "cell refused");
                        failed = Some(e);
                    }
                }
            }
            Kind::Finish => {
                let r = match failed {
                    Some(e) => Err(e),
                    None => blocking(|| store.finish_fragment(&key)),
                };
                return reply(s, r, |_| (Kind::Ok, vec![])).await;
            }
            other => return Err(Error::format("frame", format!("{other:?} frame inside a fragment upload"))),
        }
    }
}

// ---- Transport ----

struct LocalSink {
    store: Arc<FragmentStore>,
    key: FragmentKey,
}

#[async_trait]
impl FragmentSink for LocalSink {
    async fn put_cell(&mut self, stripe: u32, checksum: u64, cell: Bytes) -> Result<()> {
        blocking(|| self.store.append_cell(&self.key, stripe, checksum, cell))
    }

    async fn finish(&mut self) -> Result<()> {
        blocking(|| self.store.finish_fragment(&self.key))
    }
}

struct NetSink {
    inner: Arc<Inner>,
    node: NodeId,
    peer: PeerId,
    stream: Option<Stream>,
}

#[async_trait]
impl FragmentSink for NetSink {
    async fn put_cell(&mut self, stripe: u32, checksum: u64, cell: Bytes) -> Result<()> {
        let s = self.stream.as_mut().ok_or_else(|| node_fault(&self.node, "upload stream already failed"))?;
        let head = CellFrame { stripe, len: cell.len() as u32, checksum }.encode();
        let r = self.inner.timed(&self.node, wire::write_frame(s, Kind::Cell, &head, &cell)).await;
        r.map_err(|e| {
            self.stream = None;
            if matches!(e, Error::Io { .. }) { node_fault(&self.node, e) } else { e }
        })
    }

    async fn finish(&mut self) -> Result<()> {
        let mut s = self.stream.take().ok_or_else(|| node_fault(&self.node, "upload stream already failed"))?;
        self.inner
            .timed(&self.node, wire::write_frame(&mut s, Kind::Finish, &[], &[]))
            .await
            .map_err(|e| node_fault(&self.node, e))?;
        let f = self.inner.response(&self.node, &mut s).await?;
        expect_kind(&self.node, &f, Kind::Ok)?;
        self.inner.put_back(self.peer, s);
        Ok(())
    }
}

#[async_trait]
impl Transport for NetNode {
    fn live_nodes(&self) -> Vec<NodeInfo> {
        self.inner.live()
    }

    async fn open_fragment(&self, node: &NodeId, header: FragmentHeader) -> Result<Box<dyn FragmentSink>> {
        let inner = &self.inner;
        if node == &inner.id {
            let store = inner.store()?.clone();
            blocking(|| store.begin_fragment(&header))?;
            return Ok(Box::new(LocalSink { store, key: header.key() }));
        }
        let peer = inner.peer_of(node)?;
        if !inner.is_live_storage(&peer) {
            return Err(node_fault(node, "not a live storage node"));
        }
        let body = format::encode_fragment_header(&header);
        let mut attempt = 0;
        loop {
            let (mut s, reused) = inner.take_stream(peer).await?;
            let r = async {
                inner.timed(node, wire::write_frame(&mut s, Kind::OpenFragment, &body, &[])).await.map_err(|e| node_fault(node, e))?;
                let f = inner.response(node, &mut s).await?;
                expect_kind(node, &f, Kind::Ok)
            }
            .await;
            match r {
                Ok(()) => return Ok(Box::new(NetSink { inner: inner.clone(), node: node.clone(), peer, stream: Some(s) })),
                Err(e) if inner.retryable(&peer, &e, attempt) => {
                    if !reused {
                        tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
                    }
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn get_cell(&self, node: &NodeId, key: &FragmentKey, stripe: u32) -> Result<Bytes> {
        let inner = &self.inner;
        if node == &inner.id {
            let store = inner.store()?;
            return blocking(|| store.get_cell(key, stripe));
        }
        let req = GetCellReq { path: key.path.to_string(), write_id: key.write_id, index: key.index, stripe };
        let f = inner.request(node, Kind::GetCell, &wire::encode(&req), &[]).await?;
        expect_kind(node, &f, Kind::CellData)?;
        let (frame, cell) = wire::split_cell("cell data", f.body, fragstate_core::params::MAX_CELL_SIZE).map_err(|e| node_fault(node, e))?;
        if frame.stripe != stripe {
            return Err(node_fault(node, format!("asked for stripe {stripe}, got stripe {}", frame.stripe)));
        }
        Ok(cell)
    }

    async fn put_manifest(&self, node: &NodeId, manifest: Arc<Manifest>) -> Result<()> {
        let inner = &self.inner;
        if node == &inner.id {
            let store = inner.store()?;
            return blocking(|| store.put_manifest(manifest));
        }
        let f = inner.request(node, Kind::PutManifest, &format::encode_manifest(&manifest), &[]).await?;
        expect_kind(node, &f, Kind::Ok)
    }

    async fn get_manifest(&self, node: &NodeId, path: &str) -> Result<Option<Arc<Manifest>>> {
        let inner = &self.inner;
        if node == &inner.id {
            return Ok(inner.store()?.get_manifest(path));
        }
        let f = inner.request(node, Kind::GetManifest, path.as_bytes(), &[]).await?;
        match f.kind {
            Kind::NoManifest => Ok(None),
            Kind::ManifestData => {
                let m = format::decode_manifest(&f.body).map_err(|e| node_fault(node, e))?;
                if m.path != path {
                    return Err(node_fault(node, format!("asked for the manifest of {path}, got {}", m.path)));
                }
                Ok(Some(Arc::new(m)))
            }
            other => Err(node_fault(node, format!("protocol error: unexpected {other:?} frame"))),
        }
    }

    async fn list(&self, node: &NodeId, prefix: &str) -> Result<Vec<ObjectSummary>> {
        let inner = &self.inner;
        if node == &inner.id {
            return Ok(inner.store()?.list(prefix));
        }
        let f = inner.request(node, Kind::List, prefix.as_bytes(), &[]).await?;
        expect_kind(node, &f, Kind::Listing)?;
        wire::decode("listing", &f.body).map_err(|e| node_fault(node, e))
    }

    async fn delete(&self, node: &NodeId, target: &DeleteTarget) -> Result<DeleteStats> {
        let inner = &self.inner;
        if node == &inner.id {
            return blocking(|| inner.local_delete(target));
        }
        let f = inner.request(node, Kind::Delete, &wire::encode(&WireDelete::from(target)), &[]).await?;
        expect_kind(node, &f, Kind::Deleted)?;
        let st: WireDeleteStats = wire::decode("delete stats", &f.body).map_err(|e| node_fault(node, e))?;
        Ok(st.into())
    }
}
