//! Tombstones: path and prefix deletes remembered for `tombstone_ttl`, sent
//! in hellos, and applied by nodes that were away when the delete ran.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::error::Result;
use fragstate_core::ids::now_unix_ms;

use crate::state::{lock, Inner};
use crate::wire::{self, Tombstone};

pub(crate) fn load_tombstones(f: &std::path::Path) -> HashSet<Tombstone> {
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
    /// Applies a delete to the local store and remembers path and prefix
    /// deletes as tombstones, which travel to every peer in hellos.
    pub(crate) fn local_delete(&self, target: &DeleteTarget) -> Result<DeleteStats> {
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

    pub(crate) fn apply_tombstones(&self, tombs: Vec<Tombstone>) {
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

    pub(crate) fn save_tombstones(&self) {
        let Some(f) = &self.cfg.tombstone_file else { return };
        let v: Vec<Tombstone> = lock(&self.tombstones).iter().cloned().collect();
        let tmp = f.with_extension("tmp");
        if let Err(e) = std::fs::write(&tmp, wire::encode(&v)).and_then(|_| std::fs::rename(&tmp, f)) {
            tracing::warn!(file = %f.display(), error = %e, "could not save tombstones");
        }
    }
}
