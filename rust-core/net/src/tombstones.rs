//! Tombstones in use: a delete run here (of a path, a prefix, or the older
//! writes of an overwritten path) is remembered (when it removed something)
//! and travels to every peer in hellos; tombstones from peers are applied to
//! the local store (deletes this node missed while it was away).
//! The set and its bounds: `tombstone_set`; the file: `tombstone_log`.

use std::sync::atomic::Ordering;

use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::error::Result;
use fragstate_core::ids::{now_unix_ms, NodeId};

use crate::state::{lock, Inner, Tombstones};
use crate::tombstone_set::Inserted;
use crate::wire::Tombstone;

impl Tombstones {
    /// Remembers `t`; true when it was new or later than what was known.
    fn remember(&mut self, t: &Tombstone, now_ms: u64) -> bool {
        match self.set.insert(t, now_ms) {
            Inserted::New | Inserted::Later => {
                if let Some(log) = &mut self.log {
                    if let Err(e) = log.append(t) {
                        tracing::warn!(error = %e, "could not append a tombstone");
                    }
                }
                true
            }
            Inserted::Known | Inserted::Refused => false,
        }
    }
}

impl Inner {
    /// Applies a delete to the local store and, when it removed something,
    /// remembers a path or prefix delete as a tombstone.
    pub(crate) fn local_delete(&self, target: &DeleteTarget) -> Result<DeleteStats> {
        let store = self.store()?;
        // a path's other holders: those down now get the tombstone as a hint
        let holders = match target {
            DeleteTarget::Path(p) => store.get_manifest(p).map(|m| m.holders.clone()),
            _ => None,
        };
        let stats = store.delete(target)?;
        self.counters.manifests_deleted.fetch_add(stats.manifests, Ordering::Relaxed);
        if stats.manifests + stats.fragments == 0 {
            return Ok(stats);
        }
        let now = now_unix_ms();
        let t = match target {
            DeleteTarget::Path(p) => Tombstone { prefix: false, path: p.clone(), at_unix_ms: now },
            DeleteTarget::Prefix(p) => Tombstone { prefix: true, path: p.clone(), at_unix_ms: now },
            // An overwrite's commit: a node away then must not keep the older
            // writes, which a lookup by path could ask first (fragstate_core::lookup).
            // Every older write was created before the newest, in the writer's clock.
            DeleteTarget::OlderWrites { path, newest } => {
                Tombstone { prefix: false, path: path.clone(), at_unix_ms: newest.created_unix_ms.saturating_sub(1) }
            }
            _ => return Ok(stats),
        };
        lock(&self.tombstones).remember(&t, now);
        // not live here: the client that sent this delete could not reach it either
        // (a hint for a holder that did get the delete costs one tombstone in a hello)
        let unreachable = |h: &NodeId| self.peer_of(h).map_or(true, |p| !self.is_live_storage(&p));
        for h in holders.iter().flatten().filter(|h| **h != self.id && unreachable(h)) {
            tracing::debug!(path = %t.path, holder = %h, "a holder of the deleted object is not live: its tombstone is kept for it");
            lock(&self.hints).add(h, t.clone());
        }
        Ok(stats)
    }

    /// Applies tombstones from a peer: deletes what this node holds that they
    /// cover and was created before them.
    pub(crate) fn apply_tombstones(&self, tombs: Vec<Tombstone>) {
        if tombs.is_empty() {
            return;
        }
        let now = now_unix_ms();
        let new: Vec<Tombstone> = {
            let mut known = lock(&self.tombstones);
            tombs.into_iter().filter(|t| known.remember(t, now)).collect()
        };
        let Some(store) = &self.cfg.store else { return };
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

    /// Drops expired tombstones, makes the appends since the last call
    /// durable and compacts the file when it has grown (every hello interval).
    pub(crate) fn maintain_tombstones(&self) {
        let mut t = lock(&self.tombstones);
        let Tombstones { set, log } = &mut *t;
        set.prune(now_unix_ms());
        lock(&self.hints).prune(now_unix_ms().saturating_sub(crate::hints::HINT_TTL_MS));
        if let Some(log) = log {
            if let Err(e) = log.sync().and_then(|_| log.compact_if_needed(set)) {
                tracing::warn!(error = %e, "could not save tombstones");
            }
        }
    }
}
