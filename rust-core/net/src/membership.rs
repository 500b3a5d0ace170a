//! Who is live: peers and their hellos (role, failure domain, free bytes,
//! recent tombstones), exchanged on every new connection and every
//! `hello_interval` in [`Membership::Mesh`]; in [`Membership::Swim`] the
//! swim task (`swim_node`) marks members live and hellos only greet joiners.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use libp2p::{PeerId};

use fragstate_core::error::Error;
use fragstate_core::ids::{now_unix_ms, NodeId};
use fragstate_core::placement::NodeInfo;
use fragstate_store::FragmentStore;

use crate::config::{Membership, MAX_TOMBSTONES_PER_HELLO};
use crate::state::{lock, Cmd, Inner};
use crate::wire::{self, Hello, Kind, Role};

impl Inner {
    pub(crate) fn is_live_storage(&self, peer: &PeerId) -> bool {
        let m = self.cfg.membership;
        lock(&self.peers).get(peer).is_some_and(|p| p.live(m) && p.hello.as_ref().is_some_and(|h| h.role == Role::Storage))
    }

    pub fn live(&self) -> Vec<NodeInfo> {
        let m = self.cfg.membership;
        let mut v: Vec<NodeInfo> = lock(&self.peers)
            .iter()
            .filter(|(_, p)| p.reachable(m))
            .filter_map(|(id, p)| {
                let h = p.hello.as_ref()?;
                (h.role == Role::Storage).then(|| NodeInfo { id: p.node_id.get_or_init(|| NodeId::from(id.to_base58())).clone(), domain: h.domain.clone(), free_bytes: h.free_bytes })
            })
            .collect();
        if let Some(s) = self.listed_store() {
            v.push(NodeInfo { id: self.id.clone(), domain: Arc::from(self.cfg.domain.as_str()), free_bytes: s.usage().free_bytes() });
        }
        v
    }

    /// Whether `node` is among [`Inner::live`], without building it.
    pub(crate) fn is_live_node(&self, node: &NodeId) -> bool {
        if node == &self.id {
            return self.listed_store().is_some();
        }
        node.as_str().parse().is_ok_and(|peer| self.is_live_storage(&peer))
    }

    /// This node's store when it lists itself among the live nodes.
    fn listed_store(&self) -> Option<&Arc<FragmentStore>> {
        self.cfg.store.as_ref().filter(|_| self.cfg.role == Role::Storage && self.cfg.include_self)
    }

    /// When `node` was last seen live (`None`: live now).
    pub fn down_since(&self, node: &NodeId) -> Option<Instant> {
        if node == &self.id {
            return None;
        }
        let Ok(pid) = node.as_str().parse::<PeerId>() else { return Some(self.started) };
        match lock(&self.peers).get(&pid) {
            Some(p) if p.up(self.cfg.membership) => None,
            Some(p) => Some(p.left_at.unwrap_or(self.started)),
            None => Some(self.started),
        }
    }

    /// This node's hello. Tombstones: all of them (newest first, bounded) in
    /// the first hello on a new connection, else only those of the last 10 s.
    pub(crate) fn my_hello(&self, all_tombstones: bool) -> Hello {
        let recent = now_unix_ms().saturating_sub(10_000);
        let t = lock(&self.tombstones).set.newest(MAX_TOMBSTONES_PER_HELLO, if all_tombstones { 0 } else { recent });
        Hello {
            protocol_version: wire::PROTOCOL_VERSION,
            role: self.cfg.role,
            domain: Arc::from(self.cfg.domain.as_str()),
            free_bytes: self.cfg.store.as_ref().map_or(0, |s| s.usage().free_bytes()),
            tombstones: t,
        }
    }

    pub(crate) fn record_hello(&self, peer: PeerId, hello: Hello) {
        let tombs = hello.tombstones.clone();
        let joined = {
            let mut peers = lock(&self.peers);
            let p = peers.entry(peer).or_default();
            // Under SWIM the swim task logs and announces joins.
            let joined = self.cfg.membership == Membership::Mesh && p.hello.is_none() && p.connections > 0;
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
}

/// Sends `peer` this node's hello, with the tombstones kept for it as hints
/// (`hints`), and records its reply; whether both went through.
pub(crate) async fn exchange_hello(inner: &Arc<Inner>, peer: PeerId, all_tombstones: bool) -> bool {
    let node = NodeId::from(peer.to_base58());
    let mut hello = inner.my_hello(all_tombstones);
    let hinted = lock(&inner.hints).for_node(&node);
    hello.tombstones.extend(hinted.iter().filter(|h| !hello.tombstones.contains(h)).cloned().collect::<Vec<_>>());
    let body = wire::encode(&hello);
    let answer = inner.request(&node, Kind::Hello, &body, &[]).await;
    if answer.is_ok() {
        inner.count_membership_message(body.len());
    }
    match answer {
        Ok(f) if f.kind == Kind::HelloReply => match wire::decode_hello(&f.body) {
            Ok(h) => {
                inner.record_hello(peer, h);
                if !hinted.is_empty() {
                    tracing::info!(%peer, tombstones = hinted.len(), "handed over the deletes a returning holder missed");
                    lock(&inner.hints).delivered(&node, &hinted);
                }
                return true;
            }
            Err(e) => violation_or_log(inner, peer, &e),
        },
        Ok(f) => tracing::warn!(%peer, kind = ?f.kind, "unexpected hello reply"),
        Err(e) => tracing::debug!(%peer, error = %e, "hello failed"),
    }
    false
}

pub(crate) async fn hello_task(inner: Arc<Inner>) {
    let mut shutdown = inner.shutdown.subscribe();
    let mut tick = tokio::time::interval(inner.cfg.hello_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Shutdown first, also during a round: a hello to a peer that does not
        // answer waits up to the request timeout, and a random pick between a
        // due tick and the shutdown held `shutdown` for one such wait after
        // another (2–6 minutes with a 120 s timeout in ci/bench-adaptive.sh).
        tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            _ = tick.tick() => {
                if inner.cfg.membership == Membership::Swim {
                    // SWIM carries what hellos did; tombstones travel in the hellos greeting a joiner.
                    inner.maintain_tombstones();
                    inner.maintain_index();
                    continue;
                }
                let peers: Vec<PeerId> = lock(&inner.peers).iter().filter(|(_, p)| p.connections > 0).map(|(id, _)| *id).collect();
                tokio::select! {
                    biased;
                    _ = shutdown.changed() => break,
                    _ = futures::future::join_all(peers.into_iter().map(|p| exchange_hello(&inner, p, false))) => {}
                }
                inner.maintain_tombstones();
                inner.maintain_index();
            }
        }
    }
}

pub(crate) fn peer_left(inner: &Inner, peer: PeerId, why: &str) {
    let was_live = {
        let mut peers = lock(&inner.peers);
        let p = peers.entry(peer).or_default();
        let was = p.hello.is_some();
        p.connections = 0;
        p.hello = None;
        p.member = false;
        p.left_at = Some(Instant::now());
        was
    };
    lock(&inner.pool).remove(&peer);
    if was_live {
        tracing::info!(%peer, reason = why, "peer left");
        inner.membership.notify_waiters();
    }
}

/// Ends the connection of a peer that broke the protocol (counted, logged
/// as a WARN naming the error); any other stream error is only logged at debug.
pub(crate) fn violation_or_log(inner: &Inner, peer: PeerId, e: &Error) {
    if wire::is_protocol_violation(e) {
        inner.counters.protocol_violations.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(%peer, error = %e, "protocol violation: dropping the connection");
        peer_left(inner, peer, "protocol violation");
        let _ = inner.cmd.send(Cmd::Disconnect(peer));
    } else {
        tracing::debug!(%peer, error = %e, "stream ended");
    }
}
