//! The holder check of a storage node: it asks the other holders of each
//! object it keeps which copy they have, and drops the copies they prove
//! stale — repaired elsewhere while it was away, overwritten, or deleted
//! ([`fragstate_core::holder_check`] decides). It runs soon after the node
//! starts (a node back from a crash or a partition) and then at an
//! interval, so a node that was only frozen catches up too. One `CheckHeld`
//! request per peer carries every object the two hold in common (in batches
//! of [`MAX_HELD_QUERIES`]), so a pass costs one round trip per peer.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use fragstate_client::transport::Transport;

use fragstate_core::delete::DeleteTarget;
use fragstate_core::error::{Error, Result};
use fragstate_core::format::Manifest;
use fragstate_core::holder_check::{self, HeldAnswer, HeldQuery};
use fragstate_core::ids::NodeId;

use crate::node::NetNode;
use crate::pool::{expect_kind, node_fault};
use crate::state::{blocking, lock, Inner};
use crate::wire::{self, HeldCheckReq, Kind, HELD_CHECK_BATCH_BYTES, MAX_HELD_QUERIES};

/// Peers asked at once during a pass.
const PEERS_AT_ONCE: usize = 4;
/// The first pass after a start waits this long at most (to have met the other holders).
const FIRST_PASS_AFTER: Duration = Duration::from_secs(15);

/// What one pass found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HolderCheckPass {
    /// Copies checked (manifests with at least one other holder live).
    pub checked: u64,
    /// Copies dropped as stale.
    pub dropped: u64,
    /// Peers that did not answer (their objects are checked again next pass).
    pub peers_failed: u64,
}

impl Inner {
    /// The answers to a peer's `CheckHeld`: what this node holds of each path.
    pub(crate) fn answer_held(&self, asker: &NodeId, queries: &[HeldQuery]) -> Result<Vec<HeldAnswer>> {
        if queries.len() > MAX_HELD_QUERIES {
            return Err(Error::invalid("queries in one CheckHeld request", queries.len(), format!("≤ {MAX_HELD_QUERIES}")));
        }
        let store = self.store()?;
        let tombstones = lock(&self.tombstones);
        Ok(queries
            .iter()
            .map(|q| holder_check::answer(q, asker, store.get_manifest(&q.path).as_deref(), |created| tombstones.set.covers(&q.path, created)))
            .collect())
    }
}

impl NetNode {
    /// Asks `node` which copies of these objects it holds (one request).
    pub async fn check_held(&self, node: &NodeId, queries: Vec<HeldQuery>) -> Result<Vec<HeldAnswer>> {
        let asked = queries.len();
        let f = self.inner.request(node, Kind::CheckHeld, &wire::encode(&HeldCheckReq { queries }), &[]).await?;
        expect_kind(node, &f, Kind::HeldAnswers)?;
        let answers: Vec<HeldAnswer> = wire::decode("held answers", &f.body).map_err(|e| node_fault(node, e))?;
        if answers.len() != asked {
            return Err(node_fault(node, format!("asked about {asked} objects, got {} answers", answers.len())));
        }
        Ok(answers)
    }

    /// One holder check over every object this node holds with others.
    pub async fn holder_check_pass(&self) -> HolderCheckPass {
        let Some(store) = self.store().cloned() else { return HolderCheckPass::default() };
        let me = self.id().clone();
        let live: HashSet<NodeId> = self.live_nodes().into_iter().map(|n| n.id).collect();
        // the store's index by holder: the manifests that name this node
        let held: Vec<Arc<Manifest>> = store.manifests_naming(&me);
        // per live peer: the objects it holds with this node
        let mut shared: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
        for (i, m) in held.iter().enumerate() {
            let peers: HashSet<&NodeId> = m.holders.iter().filter(|h| **h != me && live.contains(*h)).collect();
            for p in peers {
                shared.entry(p.clone()).or_default().push(i);
            }
        }
        let queries: Vec<HeldQuery> = held.iter().map(|m| HeldQuery::of(m)).collect();
        let mut answers: Vec<Vec<HeldAnswer>> = vec![Vec::new(); held.len()];
        let mut pass = HolderCheckPass::default();
        let asks = shared.into_iter().map(|(peer, objects)| {
            let queries = &queries;
            async move {
                let mine: Vec<HeldQuery> = objects.iter().map(|&i| queries[i].clone()).collect();
                let mut got = Vec::with_capacity(mine.len());
                for batch in holder_check::batches(&mine, MAX_HELD_QUERIES, HELD_CHECK_BATCH_BYTES) {
                    match self.check_held(&peer, mine[batch].to_vec()).await {
                        Ok(a) => got.extend(a),
                        Err(e) => return (peer, objects, Err(e)),
                    }
                }
                (peer, objects, Ok(got))
            }
        });
        let mut asks = futures::stream::iter(asks).buffer_unordered(PEERS_AT_ONCE);
        while let Some((peer, objects, got)) = asks.next().await {
            match got {
                Ok(got) => objects.into_iter().zip(got).for_each(|(i, a)| answers[i].push(a)),
                Err(e) => {
                    pass.peers_failed += 1;
                    tracing::debug!(%peer, error = %e, "holder check: a peer did not answer; its objects are checked next pass");
                }
            }
        }
        for (m, a) in held.iter().zip(&answers) {
            if a.is_empty() {
                continue;
            }
            pass.checked += 1;
            let Some(reason) = holder_check::verdict(a) else { continue };
            // Only the copy that was checked: one that changed meanwhile (a newer
            // revision naming this node again) is left to the next pass.
            if store.get_manifest(&m.path).is_none_or(|now| now.version_key() != m.version_key()) {
                continue;
            }
            match blocking(|| store.delete(&DeleteTarget::Write { path: m.path.clone(), write_id: m.write_id })) {
                Ok(st) => {
                    pass.dropped += 1;
                    tracing::info!(path = %m.path, revision = m.revision, why = reason.as_str(), fragments = st.fragments, bytes = st.bytes, "dropped a stale copy (the other holders have moved on)");
                }
                Err(e) => tracing::warn!(path = %m.path, error = %e, "could not drop a stale copy; tried again next pass"),
            }
        }
        let c = self.counters();
        c.holder_check_passes.fetch_add(1, Ordering::Relaxed);
        c.holder_checked.fetch_add(pass.checked, Ordering::Relaxed);
        c.stale_copies_dropped.fetch_add(pass.dropped, Ordering::Relaxed);
        pass
    }
}

/// Runs a pass `min(15 s, interval)` after the start, then one every `interval` (0: never).
pub(crate) async fn holder_check_loop(node: NetNode, interval: Duration) {
    if interval.is_zero() {
        return;
    }
    let mut shutdown = node.shutdown_signal();
    let mut wait = interval.min(FIRST_PASS_AFTER);
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        let started = std::time::Instant::now();
        let pass = tokio::select! {
            _ = shutdown.changed() => return,
            p = node.holder_check_pass() => p,
        };
        if pass.dropped > 0 || pass.peers_failed > 0 {
            tracing::info!(checked = pass.checked, dropped = pass.dropped, peers_failed = pass.peers_failed, millis = started.elapsed().as_millis() as u64, "holder check done");
        }
        wait = interval.saturating_sub(started.elapsed());
    }
}
