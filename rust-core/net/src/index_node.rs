//! A storage node's side of the directory index: `IndexUpdate` and
//! `IndexRead` requests served from its records, and their upkeep on the
//! hello tick (the records and the rules: `index_holder`).

use std::time::Instant;

use fragstate_core::dir_index::quorum::Answer;
use fragstate_core::error::{Error, Result};
use fragstate_core::ids::now_unix_ms;
use fragstate_core::placement::NodeInfo;

use crate::index_holder::Rank;
use crate::state::{lock, Inner};
use crate::wire::{IndexReadReq, IndexUpdateReq};

/// How long a holder keeps a name removed from a directory's index. A late
/// add of a version that old (a holder that missed the remove and kept its
/// add, a delayed change) then makes the name present again: a stale name,
/// which every reader checks against the object's manifest before it counts
/// (`fragstate_client`'s `dir_index`), so this bounds the records — `shared/`
/// of RocksDB's incremental checkpoints names every file written — at the
/// cost of a lookup now and then, never of a wrong answer.
pub const INDEX_REMOVES_KEPT_MS: u64 = 10 * 60 * 1000;

impl Inner {
    /// The view a reader ranks this node in. A client ranks over its
    /// `Transport::live_nodes` (`Inner::live`: the live storage peers, and
    /// itself when it is a storage node with `include_self`, the default), so
    /// the reader's view holds this node as a storage peer described by its
    /// hello or SWIM meta. This node's own `live` holds itself only with
    /// `include_self`: it is added here when missing, so that the ranking is
    /// over the same nodes. (Its free bytes, which weigh the ranking, are
    /// its current ones here and its last announced ones at the reader: views
    /// converge within a hello interval or SWIM's meta threshold, the
    /// agreement the quorum argument assumes.)
    fn index_view(&self) -> Vec<NodeInfo> {
        let mut view = self.live();
        if let (false, Some(store)) = (view.iter().any(|n| n.id == self.id), &self.cfg.store) {
            view.push(NodeInfo { id: self.id.clone(), domain: self.cfg.domain.as_str().into(), free_bytes: store.usage().free_bytes() });
        }
        view
    }

    /// A client node keeps no indexes.
    fn index_holder(&self) -> Result<()> {
        match self.cfg.store {
            Some(_) => Ok(()),
            None => Err(Error::NodeUnavailable { node: self.id.clone(), reason: "this is a client node: it keeps no directory indexes".into() }),
        }
    }

    /// Serves an `IndexUpdate` (from a peer or this node's own client).
    pub(crate) fn index_update(&self, req: &IndexUpdateReq) -> Result<()> {
        self.index_holder()?;
        req.check()?;
        lock(&self.index).update(&req.dir, &req.update);
        Ok(())
    }

    /// Serves an `IndexRead` (from a peer or this node's own client).
    pub(crate) fn index_read(&self, req: &IndexReadReq) -> Result<Answer> {
        self.index_holder()?;
        req.check()?;
        let rank = Rank { width: req.width as usize, policy: req.policy() };
        // the view is taken under the index's lock: the one nesting of the two (index, then peers)
        Ok(lock(&self.index).read(&req.dir, rank, &self.id, || self.index_view()))
    }

    /// The hello tick's upkeep: rankings rechecked, names removed more than
    /// [`INDEX_REMOVES_KEPT_MS`] ago pruned (or at the tombstones' TTL if shorter).
    pub(crate) fn maintain_index(&self) {
        if self.cfg.store.is_none() {
            return;
        }
        let view = self.index_view();
        let cut = now_unix_ms().saturating_sub(self.cfg.tombstone_limits.ttl_ms.min(INDEX_REMOVES_KEPT_MS));
        let mut index = lock(&self.index);
        index.recheck(&self.id, &view);
        index.prune_due(cut, Instant::now());
    }

    /// Every record becomes incomplete, for `why` (logged).
    pub(crate) fn index_forget_all(&self, why: &str) {
        if self.cfg.store.is_none() {
            return;
        }
        let mut index = lock(&self.index);
        if index.is_empty() {
            return;
        }
        tracing::info!(reason = why, records = index.figures().0, "directory index records are incomplete until filled again");
        index.forget_all();
    }
}
