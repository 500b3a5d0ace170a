//! [`Membership::Swim`](crate::config::Membership): `fragstate_core::swim`
//! over libp2p. One task per node owns the I/O-free [`Swim`] state machine:
//! it feeds it time and the messages other tasks receive, sends what it
//! hands out — one message per `/fragstate/swim/1.0.0` stream, over a
//! connection opened on demand — and turns its events into the node's view
//! (`Peer::member`, descriptions, addresses), which `live()`, `down_since`
//! and the request pool read.
//!
//! What the mesh's hellos did is done here: role, failure domain, free bytes
//! and listen addresses travel in SWIM's meta ([`NodeMeta`]; free bytes
//! re-announced when they moved by 1/64 of the node's capacity), and
//! tombstones (deletes a node missed while away) reach a node that joins or
//! returns in hellos from [`GREETERS`] members chosen by rendezvous over the
//! view, not from everyone.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libp2p::{Multiaddr, PeerId};
use tokio::sync::{mpsc, Semaphore};

use fragstate_core::ids::{now_unix_ms, NodeId};
use fragstate_core::placement::{self, NodeInfo, PlacementPolicy};
use fragstate_core::swim::{Event, Swim};

use crate::membership::{exchange_hello, violation_or_log};
use crate::state::{lock, DialCause, Inner, SwimInput};
use crate::swim_wire::{self, NodeMeta, SwimMessage, MAX_ADDRS, SWIM_PROTOCOL};
use crate::wire::{Hello, Role, PROTOCOL_VERSION};

/// Members that greet a node joining or returning with this node's tombstones.
pub(crate) const GREETERS: usize = 3;
/// Greetings tried this often, this many protocol periods apart (1 s at the default 200 ms).
const GREET_ATTEMPTS: u32 = 5;
const GREET_RETRY_PERIODS: u64 = 5;
/// Membership messages being sent, and being received, at once at most; beyond, a
/// message is dropped (SWIM takes lost messages for what they are).
const MESSAGES_IN_FLIGHT: usize = 256;
/// One message's connection, stream and bytes must be done within this many
/// protocol periods (2 s at the default 200 ms).
const MESSAGE_TIMEOUT_PERIODS: u64 = 10;
/// How often, in protocol periods, the node's own description is checked for changes.
const META_CHECK_PERIODS: u64 = 5;

/// `periods` of this node's SWIM protocol period. The task's timings are
/// counted in periods so that they stretch with `SwimConfig::dilated`.
fn periods(inner: &Inner, periods: u64) -> Duration {
    Duration::from_millis(inner.cfg.swim.protocol_period * periods)
}

impl Inner {
    /// Passes `input` to the swim task (nothing under the mesh).
    pub(crate) fn to_swim(&self, input: SwimInput) {
        if let Some(tx) = &self.swim {
            let _ = tx.send(input);
        }
    }

    /// A dial to `peer` failed or its connection broke: no requests go to it
    /// from this node until a new connection, and SWIM probes it next.
    pub(crate) fn connection_failed(&self, peer: PeerId) {
        lock(&self.peers).entry(peer).or_default().unreachable = true;
        self.to_swim(SwimInput::ConnectionFailed(peer));
    }

    /// Live SWIM members this node knows, of any role.
    pub(crate) fn live_members(&self) -> usize {
        lock(&self.peers).values().filter(|p| p.member).count()
    }

    /// What this node, started at `started_ms`, says about itself.
    fn my_meta(&self, started_ms: u64) -> NodeMeta {
        NodeMeta {
            protocol_version: PROTOCOL_VERSION,
            role: self.cfg.role,
            domain: self.cfg.domain.clone(),
            free_bytes: self.cfg.store.as_ref().map_or(0, |s| s.usage().free_bytes()),
            addrs: lock(&self.listen_addrs).iter().take(MAX_ADDRS).map(|a| a.to_string()).collect(),
            started_ms,
        }
    }
}

/// Whether `new` differs from the `announced` description enough to tell
/// the cluster: another address or role, or free bytes moved by more than
/// 1/64 of the node's capacity (placement needs no finer weights, and every
/// announcement is a message to all).
pub(crate) fn worth_announcing(announced: &NodeMeta, new: &NodeMeta, capacity: u64) -> bool {
    let same_rest = NodeMeta { free_bytes: announced.free_bytes, ..new.clone() } == *announced;
    !same_rest || announced.free_bytes.abs_diff(new.free_bytes) > capacity / 64
}

/// Receives membership messages and hands them to the swim task.
pub(crate) async fn swim_accept_task(inner: Arc<Inner>, mut incoming: libp2p_stream::IncomingStreams) {
    use futures::StreamExt;
    let mut shutdown = inner.shutdown.subscribe();
    let limit = Arc::new(Semaphore::new(MESSAGES_IN_FLIGHT));
    loop {
        let (peer, mut stream) = tokio::select! {
            _ = shutdown.changed() => break,
            next = incoming.next() => match next {
                Some(s) => s,
                None => break,
            },
        };
        let Ok(permit) = limit.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "too many membership messages at once: dropping one");
            continue;
        };
        let inner = inner.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(periods(&inner, MESSAGE_TIMEOUT_PERIODS), swim_wire::read_message(&mut stream)).await {
                Ok(Ok(msg)) => inner.to_swim(SwimInput::Message(peer, msg)),
                Ok(Err(e)) => violation_or_log(&inner, peer, &e),
                Err(_) => tracing::debug!(%peer, "membership message not received in time"),
            }
            drop(permit);
        });
    }
}

/// Runs SWIM for this node until it stops or leaves.
pub(crate) async fn swim_task(inner: Arc<Inner>, mut inbox: mpsc::UnboundedReceiver<SwimInput>) {
    let mut shutdown = inner.shutdown.subscribe();
    let clock = Instant::now();
    let now = || clock.elapsed().as_millis() as u64;
    let seed = inner.peer_id.to_bytes().iter().fold(now_unix_ms(), |h, b| h.rotate_left(7) ^ u64::from(*b));
    // The wall clock as the first incarnation: a restarted node is newer than its former self.
    let started_ms = now_unix_ms();
    let mut announced = inner.my_meta(started_ms);
    let mut swim = Swim::new(inner.id.clone(), announced.clone(), started_ms, inner.cfg.swim.clone(), now(), seed);
    let sends = Arc::new(Semaphore::new(MESSAGES_IN_FLIGHT));
    let mut seeds: Vec<NodeId> = Vec::new();
    let mut incompatible: HashSet<NodeId> = HashSet::new();
    let mut meta_check = tokio::time::interval(periods(&inner, META_CHECK_PERIODS));
    meta_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut leaving = None;
    let mut successors: Vec<NodeId> = Vec::new();
    let mut declared_dead = 0;
    loop {
        let wake = tokio::time::Instant::from_std(clock + Duration::from_millis(swim.next_timeout()));
        tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            input = inbox.recv() => match input {
                None => break,
                Some(SwimInput::Message(peer, msg)) => swim.handle(now(), NodeId::from(peer.to_base58()), msg),
                // (joined again for a seed met before: a bootstrap node that restarted under its
                // old id learns the members from this node's full list, as a new one would)
                Some(SwimInput::Seed(peer)) => {
                    let id = NodeId::from(peer.to_base58());
                    if !seeds.contains(&id) {
                        seeds.push(id);
                    }
                    swim.join(&seeds);
                }
                Some(SwimInput::ConnectionFailed(peer)) => swim.probe_next(&NodeId::from(peer.to_base58())),
                Some(SwimInput::Sent(seq)) => swim.sent(seq, now()),
                Some(SwimInput::Leave(done)) => {
                    swim.leave();
                    leaving = Some(done);
                }
            },
            _ = tokio::time::sleep_until(wake) => swim.tick(now()),
            _ = meta_check.tick() => {
                let meta = inner.my_meta(started_ms);
                let capacity = inner.cfg.store.as_ref().map_or(0, |s| s.usage().bytes + meta.free_bytes);
                if worth_announcing(&announced, &meta, capacity) {
                    swim.set_meta(meta.clone());
                    announced = meta;
                }
            }
        }
        if let Some(done) = leaving.take() {
            let out: Vec<_> = std::iter::from_fn(|| swim.poll_send()).collect();
            let out = out.into_iter().filter_map(|(to, msg)| Some((to.as_str().parse::<PeerId>().ok()?, msg)));
            let sent = futures::future::join_all(out.map(|(peer, msg)| {
                let cause = dial_cause(&msg, false);
                send(&inner, peer, msg, cause)
            }));
            let _ = tokio::time::timeout(periods(&inner, MESSAGE_TIMEOUT_PERIODS), sent).await;
            let _ = done.send(());
            break;
        }
        while let Some((to, msg)) = swim.poll_send() {
            // Member ids are peer ids (base58): decoded once per message, here.
            let Ok(peer) = to.as_str().parse::<PeerId>() else { continue };
            let Ok(permit) = sends.clone().try_acquire_owned() else {
                tracing::debug!(%peer, "too many membership messages in flight: dropping one");
                continue;
            };
            // A probe's ping that must connect first: its timers wait for the handshake.
            let connecting = match &msg {
                SwimMessage::Ping { seq, .. } if !inner.connected(&peer) && swim.connecting(*seq) => Some(*seq),
                _ => None,
            };
            let cause = dial_cause(&msg, connecting.is_some());
            let inner = inner.clone();
            tokio::spawn(async move {
                send(&inner, peer, msg, cause).await;
                if let Some(seq) = connecting {
                    inner.to_swim(SwimInput::Sent(seq));
                }
                drop(permit);
            });
        }
        while let Some(ev) = swim.poll_event() {
            apply(&inner, ev, &mut incompatible);
        }
        if swim.stats().declared_dead > declared_dead {
            // The others stopped counting this node meanwhile: its directory
            // index records may miss changes they counted as done. Checked here,
            // as the refutation is taken, not on the next hello tick.
            declared_dead = swim.stats().declared_dead;
            inner.index_forget_all("this node was declared dead");
        }
        keep_connected(&inner, swim.successors(), &mut successors);
        inner.counters.news_pending.store(swim.news_pending() as u64, std::sync::atomic::Ordering::Relaxed);
    }
    tracing::debug!(stats = ?swim.stats(), "membership stopped");
}

/// Dials the members that became this node's ring successors: a probe
/// timeout (80 ms) is shorter than a Noise handshake on a busy host, so a
/// probe that had to connect first would make its target suspect.
fn keep_connected(inner: &Arc<Inner>, now: &[NodeId], before: &mut Vec<NodeId>) {
    if now == before.as_slice() {
        return;
    }
    for node in now.iter().filter(|n| !before.contains(n)) {
        let Ok(peer) = node.as_str().parse::<PeerId>() else { continue };
        let inner = inner.clone();
        tokio::spawn(async move {
            if let Err(e) = inner.connect(peer, periods(&inner, MESSAGE_TIMEOUT_PERIODS), DialCause::Successor).await {
                tracing::debug!(%peer, error = %e, "ring successor not connected");
            }
        });
    }
    *before = now.to_vec();
}

/// What a dial to send `msg` is counted as (`probe`: it is this node's probe's ping).
fn dial_cause(msg: &SwimMessage, probe: bool) -> DialCause {
    match msg {
        SwimMessage::Ping { .. } if probe => DialCause::Probe,
        SwimMessage::Ping { .. } => DialCause::Relay,
        SwimMessage::Ack { .. } => DialCause::Ack,
        SwimMessage::PingReq { .. } => DialCause::PingReq,
        SwimMessage::Gossip { .. } => DialCause::Gossip,
        SwimMessage::Sync { .. } => DialCause::Sync,
    }
}

/// Sends one message to `peer` over a new stream, connecting first if needed.
async fn send(inner: &Arc<Inner>, peer: PeerId, msg: SwimMessage, cause: DialCause) {
    let attempt = async {
        inner.connect(peer, periods(inner, MESSAGE_TIMEOUT_PERIODS), cause).await?;
        let mut s = inner.control.clone().open_stream(peer, SWIM_PROTOCOL).await.map_err(|e| e.to_string())?;
        swim_wire::write_message(&mut s, &msg).await.map_err(|e| e.to_string())
    };
    match tokio::time::timeout(periods(inner, MESSAGE_TIMEOUT_PERIODS), attempt).await {
        Ok(Ok(bytes)) => inner.count_membership_message(bytes),
        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "membership message not sent"),
        Err(_) => tracing::debug!(%peer, "membership message not sent in time"),
    }
}

/// Applies a membership change to the node's view.
fn apply(inner: &Arc<Inner>, ev: Event<NodeMeta>, incompatible: &mut HashSet<NodeId>) {
    match ev {
        Event::Up { node, meta } => {
            let Ok(peer) = node.as_str().parse::<PeerId>() else { return };
            if meta.protocol_version != PROTOCOL_VERSION {
                if incompatible.insert(node.clone()) {
                    tracing::warn!(%peer, theirs = meta.protocol_version, ours = PROTOCOL_VERSION, "member speaks another fragstate protocol version: not used (run one fragstate version across the cluster)");
                }
                return;
            }
            let addrs: Vec<Multiaddr> = meta.addrs.iter().filter_map(|a| a.parse().ok()).collect();
            let (joined, restarted) = {
                let mut peers = lock(&inner.peers);
                let p = peers.entry(peer).or_default();
                let joined = !p.member;
                // Killed and back within the suspicion timeout: never declared dead,
                // but it missed the deletes meanwhile just as a joiner did.
                let restarted = !joined && p.started_ms != 0 && p.started_ms != meta.started_ms;
                p.started_ms = meta.started_ms;
                p.member = true;
                if joined || restarted {
                    // A new process: the failed connections were its predecessor's.
                    p.unreachable = false;
                }
                p.left_at = None;
                if !addrs.is_empty() {
                    p.addrs = addrs;
                }
                p.hello = Some(Hello { protocol_version: meta.protocol_version, role: meta.role, domain: meta.domain.as_str().into(), free_bytes: meta.free_bytes, tombstones: Vec::new() });
                (joined, restarted)
            };
            if joined {
                tracing::info!(%peer, role = ?meta.role, domain = %meta.domain, free_bytes = meta.free_bytes, "peer joined");
                inner.membership.notify_waiters();
            } else if restarted {
                tracing::info!(%peer, "peer restarted");
            }
            // its co-holders hand over the deletes it missed (hints), the greeters their newest tombstones
            if (joined || restarted) && (greets(inner, &node) || lock(&inner.hints).has(&node)) {
                tokio::spawn(greet(inner.clone(), peer));
            }
        }
        Event::Suspect(node) => tracing::debug!(%node, "member suspected"),
        Event::Down(node) => {
            let Ok(peer) = node.as_str().parse::<PeerId>() else { return };
            let was_member = {
                let mut peers = lock(&inner.peers);
                let p = peers.entry(peer).or_default();
                let was = p.member;
                p.member = false;
                p.left_at = Some(Instant::now());
                was
            };
            // Its connections stay: a live member declared dead refutes over
            // them, and they close when idle or their pings fail. Closing them
            // here made every false suspicion on a loaded host cost two
            // handshakes more, which fed the next suspicions (NETWORK.md).
            lock(&inner.pool).remove(&peer);
            if was_member {
                tracing::info!(%peer, reason = "declared dead or left (SWIM)", "peer left");
                inner.membership.notify_waiters();
            }
        }
    }
}

/// Sends a joining (or returning) member this node's tombstones, retried
/// while it is a member: it may still be starting to listen, and a returning
/// node's tombstones are the only way it learns the deletes it missed.
async fn greet(inner: Arc<Inner>, peer: PeerId) {
    for attempt in 1..=GREET_ATTEMPTS {
        if exchange_hello(&inner, peer, true).await {
            return;
        }
        if attempt == GREET_ATTEMPTS || !lock(&inner.peers).get(&peer).is_some_and(|p| p.member) {
            tracing::warn!(%peer, attempt, "could not greet a joining member with this node's tombstones (the other greeters may have)");
            return;
        }
        tokio::time::sleep(periods(&inner, GREET_RETRY_PERIODS)).await;
    }
}

/// Whether this node is one of the [`GREETERS`] that send a joining (or
/// returning) `node` their tombstones: the first by rendezvous over the live
/// storage nodes, unweighted so that every node with the same view picks
/// the same ones. Nodes without tombstones have nothing to send.
fn greets(inner: &Inner, node: &NodeId) -> bool {
    if inner.cfg.role != Role::Storage || lock(&inner.tombstones).set.is_empty() {
        return false;
    }
    let mut live: Vec<NodeInfo> = inner.live().into_iter().filter(|n| &n.id != node).map(|n| NodeInfo { free_bytes: 1, ..n }).collect();
    if !live.iter().any(|n| n.id == inner.id) {
        live.push(NodeInfo { id: inner.id.clone(), domain: Arc::from(inner.cfg.domain.as_str()), free_bytes: 1 });
    }
    let count = GREETERS.min(live.len());
    let policy = PlacementPolicy { allow_shared_domains: true };
    placement::place(node.as_str().as_bytes(), &live, count, &HashSet::new(), &HashSet::new(), policy, (count, 0))
        .is_ok_and(|p| p.nodes.iter().any(|n| n.id == inner.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(free: u64) -> NodeMeta {
        NodeMeta { protocol_version: PROTOCOL_VERSION, role: Role::Storage, domain: "h".into(), free_bytes: free, addrs: vec!["/ip4/10.0.0.1/tcp/7710".into()], started_ms: 1_700_000_000_000 }
    }

    #[test]
    fn free_bytes_are_announced_only_when_they_moved_by_a_64th_of_the_capacity() {
        let cap = 64 << 20;
        assert!(!worth_announcing(&meta(10 << 20), &meta((10 << 20) - (1 << 20)), cap));
        assert!(worth_announcing(&meta(10 << 20), &meta((10 << 20) - (1 << 20) - 1), cap));
        assert!(worth_announcing(&meta(10 << 20), &meta((10 << 20) + (2 << 20)), cap));
        let moved = NodeMeta { addrs: vec!["/ip4/10.0.0.2/tcp/7710".into()], ..meta(10 << 20) };
        assert!(worth_announcing(&meta(10 << 20), &moved, cap), "a new address is always news");
    }
}
