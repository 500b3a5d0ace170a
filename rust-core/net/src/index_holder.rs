//! The directory index records a storage node keeps for the directories it
//! holds (`fragstate_core::dir_index`; NETWORK.md, "What still goes to every
//! node": the plan and its quorums) to answer `IndexUpdate` and `IndexRead`
//! requests (served in `index_node`), and what keeps a record's
//! *completeness* honest here:
//!
//! - a read from a reader whose ranking of the directory's holders (its
//!   width and policy, over this node's view) leaves this node out makes
//!   the record incomplete before it is answered: this node is not one of
//!   the holders a writer counted;
//! - every hello interval, each record is ranked again (with the width and
//!   policy its last reader sent, else the last any reader sent) and loses
//!   its completeness once this node is no longer among its holders; names
//!   removed longer ago than the tombstones' TTL are pruned;
//! - under SWIM, when this node learns it was declared dead (the others
//!   stopped counting it, `SwimStats::declared_dead`), and under the mesh,
//!   when the connection to a storage peer broke or its pings failed (that
//!   peer stopped counting this node), every record becomes incomplete.
//!
//! In memory only: a restarted node has no records and answers none, so it is
//! a newcomer to every directory — the case the quorum argument of
//! `fragstate_core::dir_index::quorum` covers (its records come back partial
//! from changes and complete from births and fills). Bounded by
//! [`MAX_INDEX_BYTES`]: past it the least recently changed records are
//! dropped whole (`index_dropped` in stats), one more newcomer each.
//!
//! Not yet: a view change undone between two hello intervals (a node that
//! joined and left within one) is not seen by the recheck; reads still rank
//! this node at the time of each read.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use fragstate_core::dir_index::holders;
use fragstate_core::dir_index::quorum::{Answer, IndexUpdate, Records};
use fragstate_core::ids::NodeId;
use fragstate_core::placement::{NodeInfo, PlacementPolicy};

/// Bytes of directory index records a storage node keeps at most (names,
/// entries and a per-record overhead, `Records::with_max_bytes`).
pub const MAX_INDEX_BYTES: usize = 64 << 20;

/// How often removed names are pruned (at most; on the hello tick).
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// How a reader ranks a directory's holders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rank {
    pub width: usize,
    pub policy: PlacementPolicy,
}

/// A storage node's records and the rankings its readers asked for.
pub(crate) struct IndexHolder {
    records: Records,
    /// Per directory with a record, the rank its last reader sent.
    ranks: HashMap<String, Rank>,
    /// The last rank any reader sent: a record no reader asked for yet (a
    /// birth, changes) is ranked with it (one cluster's readers share `k + m`).
    last_rank: Option<Rank>,
    last_prune: Option<Instant>,
}

impl IndexHolder {
    pub(crate) fn new(max_bytes: usize) -> Self {
        IndexHolder { records: Records::with_max_bytes(max_bytes), ranks: HashMap::new(), last_rank: None, last_prune: None }
    }

    pub(crate) fn update(&mut self, dir: &str, update: &IndexUpdate) {
        self.records.update_with(dir, update);
    }

    /// The answer to a reader that ranks with `rank`; the record loses its
    /// completeness first when `me` is not among the holders over `view`
    /// (asked for only then: a complete record's read).
    pub(crate) fn read(&mut self, dir: &str, rank: Rank, me: &NodeId, view: impl FnOnce() -> Vec<NodeInfo>) -> Answer {
        self.last_rank = Some(rank);
        let mut answer = self.records.answer(dir)?;
        match self.ranks.get_mut(dir) {
            Some(r) => *r = rank,
            None => drop(self.ranks.insert(dir.to_string(), rank)),
        }
        if answer.complete && !holds(dir, rank, me, &view()) {
            self.records.forget_completeness_of(dir);
            answer.complete = false;
        }
        Some(answer)
    }

    /// Ranks every record again over `view`: those `me` no longer holds lose
    /// their completeness; rankings of directories with no record are dropped.
    pub(crate) fn recheck(&mut self, me: &NodeId, view: &[NodeInfo]) {
        let (ranks, last) = (&mut self.ranks, self.last_rank);
        let mut kept = HashMap::with_capacity(ranks.len());
        self.records.forget_completeness(|dir| {
            let rank = match ranks.remove_entry(dir) {
                Some((d, r)) => {
                    kept.insert(d, r);
                    Some(r)
                }
                None => last,
            };
            rank.is_some_and(|r| !holds(dir, r, me, view))
        });
        self.ranks = kept;
    }

    /// Every record becomes incomplete (this node may have missed changes others counted as done).
    pub(crate) fn forget_all(&mut self) {
        self.records.forget_completeness(|_| true);
    }

    /// Prunes names removed before `cut_unix_ms` (and records left empty) if
    /// [`PRUNE_EVERY`] passed since the last pruning; how many records went.
    pub(crate) fn prune_due(&mut self, cut_unix_ms: u64, now: Instant) -> usize {
        if self.last_prune.is_some_and(|t| now.duration_since(t) < PRUNE_EVERY) {
            return 0;
        }
        self.last_prune = Some(now);
        self.records.prune_removed(cut_unix_ms)
    }

    /// Whether no record is kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Records kept, their bytes, and records dropped for the bound so far.
    pub(crate) fn figures(&self) -> (u64, u64, u64) {
        (self.records.len() as u64, self.records.bytes() as u64, self.records.dropped())
    }
}

/// Whether `me` is among the `rank.width` holders of `dir` over `view`.
fn holds(dir: &str, rank: Rank, me: &NodeId, view: &[NodeInfo]) -> bool {
    holders(dir, view, rank.width, rank.policy).contains(me)
}

#[cfg(test)]
#[path = "index_holder_tests.rs"]
mod tests;
