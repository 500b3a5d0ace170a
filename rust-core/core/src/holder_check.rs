//! A holder's check of the manifests it keeps against the other holders they
//! name: what a copy left behind while the node was away looks like from the
//! others, and when the node may drop it. No I/O: the network layer
//! (`fragstate-net`, `holder_check`) sends the [`HeldQuery`]s, serves them
//! with [`answer`] and applies [`verdict`].
//!
//! A node that was down (or cut off) while something changed an object it
//! held keeps a copy nobody will read again:
//! - *repaired*: its fragment was rebuilt elsewhere and a later revision of the
//!   manifest names the new holder instead of it;
//! - *superseded*: the path was written again (an overwrite) and the older
//!   write's delete did not reach it;
//! - *deleted*: the path (or a prefix of it) was deleted, and the tombstone did
//!   not reach it (a tombstone travels only to the peers a node greets).
//!
//! Each is decided from *positive evidence* of one other holder — a newer
//! revision or write it holds, or a tombstone it keeps — never from holders
//! that merely lack the object: a holder may have lost its disk, or the
//! manifest of a write that is committing right now may not have reached it
//! yet, and a copy that might still be needed is never dropped.

use serde::{Deserialize, Serialize};

use crate::format::Manifest;
use crate::ids::NodeId;
use crate::version::WriteVersion;

/// "Which copy of `path` do you hold?": the asker's copy, by write and revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldQuery {
    /// Path of the object.
    pub path: String,
    /// The write of the asker's copy.
    pub version: WriteVersion,
    /// The revision of the asker's copy (bumped by each repair).
    pub revision: u32,
}

impl HeldQuery {
    /// The query for a held manifest.
    pub fn of(m: &Manifest) -> Self {
        HeldQuery { path: m.path.clone(), version: m.write_version(), revision: m.revision }
    }

    /// Bytes the query takes on the wire (bincode: length-prefixed path,
    /// creation time, write id, revision), for batching.
    pub fn wire_bytes(&self) -> usize {
        8 + self.path.len() + 8 + 16 + 4
    }
}

/// What another holder knows of the asker's copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeldAnswer {
    /// It holds the same write at the same or an older revision, or an older
    /// write of the path: nothing newer is known here.
    NothingNewer,
    /// It holds a later revision of the same write; `names_asker`: whether that
    /// revision still names the asker as a holder.
    NewerRevision {
        /// The later revision lists the asker among its holders.
        names_asker: bool,
    },
    /// It holds a newer write of the path (an overwrite committed).
    NewerWrite,
    /// It holds nothing newer, but keeps a tombstone that covers the asker's
    /// write: the path was deleted after that write began.
    Deleted,
    /// It holds nothing of the path and no tombstone covers it: no evidence
    /// either way (it may have lost its disk, or the copy is still arriving).
    Unknown,
}

/// Why a copy may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaleReason {
    /// A later revision of the manifest no longer names this node.
    Repaired,
    /// A newer write of the path committed.
    Superseded,
    /// The path was deleted after the write began.
    Deleted,
}

impl StaleReason {
    /// A word for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            StaleReason::Repaired => "repaired elsewhere",
            StaleReason::Superseded => "overwritten",
            StaleReason::Deleted => "deleted",
        }
    }
}

/// What a holder answers for `query` from `asker`: `held` is its own newest
/// manifest of the path (if any), `deleted` whether one of its tombstones
/// covers a write created at the given time.
pub fn answer(query: &HeldQuery, asker: &NodeId, held: Option<&Manifest>, deleted: impl FnOnce(u64) -> bool) -> HeldAnswer {
    if let Some(m) = held {
        // The same write (its id names its fragments), whatever date the copy bears: one dated
        // otherwise (garbled, or a member's forgery at the end of time) is no evidence of an
        // overwrite, and dropping the asker's copy would drop fragments that copy still names.
        if m.write_id == query.version.write_id {
            if m.revision > query.revision {
                return HeldAnswer::NewerRevision { names_asker: m.holders.contains(asker) };
            }
            return HeldAnswer::NothingNewer;
        }
        if m.write_version() > query.version {
            return HeldAnswer::NewerWrite;
        }
    }
    if deleted(query.version.created_unix_ms) {
        return HeldAnswer::Deleted;
    }
    if held.is_some() { HeldAnswer::NothingNewer } else { HeldAnswer::Unknown }
}

/// Whether the asker's copy is stale, from the answers of the other holders
/// it asked (any number, in any order): `Some` on the first positive
/// evidence, `None` (keep it) otherwise.
pub fn verdict<'a>(answers: impl IntoIterator<Item = &'a HeldAnswer>) -> Option<StaleReason> {
    answers.into_iter().find_map(|a| match a {
        HeldAnswer::NewerRevision { names_asker: false } => Some(StaleReason::Repaired),
        HeldAnswer::NewerWrite => Some(StaleReason::Superseded),
        HeldAnswer::Deleted => Some(StaleReason::Deleted),
        HeldAnswer::NewerRevision { names_asker: true } | HeldAnswer::NothingNewer | HeldAnswer::Unknown => None,
    })
}

/// Splits `queries` into batches of at most `max_count` queries and about
/// `max_bytes` wire bytes (a single larger query goes alone), keeping order.
pub fn batches(queries: &[HeldQuery], max_count: usize, max_bytes: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, q) in queries.iter().enumerate() {
        let b = q.wire_bytes();
        if i > start && (i - start == max_count || bytes + b > max_bytes) {
            out.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += b;
    }
    if start < queries.len() {
        out.push(start..queries.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{CodingParams, Compression};

    fn manifest(created: u64, write: u128, revision: u32, holders: &[&str]) -> Manifest {
        Manifest {
            path: "job/chk-1/state".into(),
            write_id: write,
            revision,
            length: 1,
            params: CodingParams::new(2, 1, 4096, Compression::None).unwrap(),
            holders: holders.iter().map(|h| NodeId::from(*h)).collect(),
            stripes: Vec::new(),
            created_unix_ms: created,
            writer: String::new(),
        }
    }

    fn ask(mine: &Manifest, theirs: Option<&Manifest>, tombstone_at: Option<u64>) -> HeldAnswer {
        answer(&HeldQuery::of(mine), &NodeId::from("me"), theirs, |created| tombstone_at.is_some_and(|t| created <= t))
    }

    #[test]
    fn a_repair_that_replaced_the_asker_makes_its_copy_stale_one_that_kept_it_does_not() {
        let mine = manifest(10, 1, 0, &["me", "b", "c"]);
        let moved = manifest(10, 1, 1, &["x", "b", "c"]);
        let kept = manifest(10, 1, 1, &["me", "b", "x"]);
        assert_eq!(ask(&mine, Some(&moved), None), HeldAnswer::NewerRevision { names_asker: false });
        assert_eq!(ask(&mine, Some(&kept), None), HeldAnswer::NewerRevision { names_asker: true });
        assert_eq!(verdict(&[ask(&mine, Some(&moved), None)]), Some(StaleReason::Repaired));
        assert_eq!(verdict(&[ask(&mine, Some(&kept), None)]), None);
        // the peer is behind the asker (it missed the repair that the asker knows of)
        let newer_mine = manifest(10, 1, 2, &["me", "b", "c"]);
        assert_eq!(ask(&newer_mine, Some(&moved), None), HeldAnswer::NothingNewer);
    }

    #[test]
    fn the_same_write_dated_otherwise_is_no_newer_write() {
        let mine = manifest(10, 1, 0, &["me", "b", "c"]);
        // a forged copy: the write's own id and holders, dated at the end of time
        let forged = manifest(u64::MAX, 1, u32::MAX, &["me", "b", "c"]);
        assert_eq!(ask(&mine, Some(&forged), None), HeldAnswer::NewerRevision { names_asker: true });
        assert_eq!(verdict(&[ask(&mine, Some(&forged), None)]), None);
        assert_eq!(ask(&mine, Some(&manifest(u64::MAX, 1, 0, &["me", "b", "c"])), None), HeldAnswer::NothingNewer);
        // a later revision of it that no longer names the asker is still a repair
        let moved = manifest(9, 1, 3, &["x", "b", "c"]);
        assert_eq!(verdict(&[ask(&mine, Some(&moved), None)]), Some(StaleReason::Repaired));
        // another write (another id) at the same time or later is an overwrite
        assert_eq!(ask(&mine, Some(&manifest(10, 2, 0, &["b"])), None), HeldAnswer::NewerWrite);
    }

    #[test]
    fn a_newer_write_or_a_covering_tombstone_makes_a_copy_stale() {
        let mine = manifest(10, 1, 0, &["me", "b", "c"]);
        assert_eq!(ask(&mine, Some(&manifest(11, 0, 0, &["b"])), None), HeldAnswer::NewerWrite);
        // same millisecond, larger write id: the newer write (WriteVersion's order)
        assert_eq!(ask(&mine, Some(&manifest(10, 2, 0, &["b"])), None), HeldAnswer::NewerWrite);
        assert_eq!(ask(&mine, None, Some(10)), HeldAnswer::Deleted);
        assert_eq!(ask(&mine, None, Some(9)), HeldAnswer::Unknown, "deleted before the write began: the write is newer");
        // an older write held there, and the delete that came after ours
        assert_eq!(ask(&mine, Some(&manifest(5, 9, 3, &["b"])), Some(12)), HeldAnswer::Deleted);
        assert_eq!(ask(&mine, Some(&manifest(5, 9, 3, &["b"])), None), HeldAnswer::NothingNewer);
        assert_eq!(verdict(&[HeldAnswer::Unknown, HeldAnswer::NewerWrite]), Some(StaleReason::Superseded));
        assert_eq!(verdict(&[HeldAnswer::NothingNewer, HeldAnswer::Deleted]), Some(StaleReason::Deleted));
    }

    #[test]
    fn holders_that_only_lack_the_object_are_no_evidence() {
        // every other holder lost its disk, or the manifest is still on its way to them
        assert_eq!(verdict(&[HeldAnswer::Unknown; 5]), None);
        assert_eq!(verdict(&[]), None);
        // the same copy elsewhere: a tombstone there is older than the write
        let mine = manifest(10, 1, 0, &["me", "b"]);
        assert_eq!(ask(&mine, Some(&mine.clone()), Some(100)), HeldAnswer::NothingNewer, "the peer holds this very write: it was not deleted");
    }

    #[test]
    fn batches_keep_order_and_bounds_and_let_an_oversized_query_go_alone() {
        let q = |len: usize| HeldQuery { path: "p".repeat(len), version: WriteVersion { created_unix_ms: 1, write_id: 1 }, revision: 0 };
        let qs: Vec<HeldQuery> = (0..10).map(|_| q(4)).collect();
        assert_eq!(batches(&qs, 4, 1 << 20), vec![0..4, 4..8, 8..10]);
        let each = q(4).wire_bytes();
        assert_eq!(batches(&qs, 100, 3 * each), vec![0..3, 3..6, 6..9, 9..10]);
        let mixed = vec![q(1), q(1000), q(1)];
        assert_eq!(batches(&mixed, 100, 100), vec![0..1, 1..2, 2..3]);
        assert!(batches(&[], 4, 100).is_empty());
    }
}
