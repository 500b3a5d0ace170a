//! The tombstones a node remembers, with every bound enforced: no I/O, so
//! the rules are tested without a network or a disk.
//!
//! A tombstone says "objects under this path (or prefix) created before this
//! time were deleted". One entry per (prefix flag, path): deleting a path
//! again moves its time forward instead of adding an entry. Bounds (see
//! NETWORK.md, "Bounded resources"):
//! - age: entries older than the TTL are dropped;
//! - clock skew: a time more than [`MAX_CLOCK_SKEW_MS`] ahead of this node's
//!   clock is taken as now + that skew, so nothing stays forever;
//! - path length: a tombstone for a path longer than [`MAX_TOMBSTONE_PATH`]
//!   bytes is not kept (the object is still deleted where the delete ran);
//! - count and bytes: beyond [`TombstoneLimits::max_count`] or
//!   [`TombstoneLimits::max_bytes`] the oldest entries are evicted (counted).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::wire::Tombstone;

/// Longest path a tombstone is kept for, in bytes.
pub const MAX_TOMBSTONE_PATH: usize = 4096;
/// How far ahead of this node's clock a tombstone's time may be.
pub const MAX_CLOCK_SKEW_MS: u64 = 5 * 60 * 1000;
/// Bytes one entry counts for besides its path (flag, time, bookkeeping).
const ENTRY_OVERHEAD: usize = 32;

/// How many tombstones a node keeps, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TombstoneLimits {
    /// Entries older than this are dropped.
    pub ttl_ms: u64,
    /// Entries kept at most; the oldest go first.
    pub max_count: usize,
    /// Path bytes (plus a small per-entry overhead) kept at most.
    pub max_bytes: usize,
}

impl Default for TombstoneLimits {
    fn default() -> Self {
        TombstoneLimits { ttl_ms: 24 * 3600 * 1000, max_count: 100_000, max_bytes: 8 << 20 }
    }
}

/// What [`TombstoneSet::insert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    /// A new entry.
    New,
    /// An entry for the same path and flag moved to a later time.
    Later,
    /// Nothing new: the same or a later time is already known.
    Known,
    /// Not kept: older than the TTL, or the path is too long.
    Refused,
}

/// The tombstones of one node, bounded.
#[derive(Debug, Default)]
pub struct TombstoneSet {
    limits: TombstoneLimits,
    at: HashMap<(bool, String), u64>,
    /// (time, prefix flag, path): the oldest first, for eviction and pruning.
    order: BTreeSet<(u64, bool, String)>,
    /// Prefix entries by path length, so that [`TombstoneSet::covers`] looks
    /// up only the prefixes of a path that can have an entry.
    prefix_lens: BTreeMap<usize, usize>,
    bytes: usize,
    evicted: u64,
}

fn entry_bytes(path: &str) -> usize {
    path.len() + ENTRY_OVERHEAD
}

impl TombstoneSet {
    /// An empty set with these limits.
    pub fn new(limits: TombstoneLimits) -> Self {
        TombstoneSet { limits, ..TombstoneSet::default() }
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// Whether no entry is kept.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Bytes the entries count for (bounded by `max_bytes`).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Entries evicted because a count or byte bound was reached.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Remembers `t` as of `now_ms`, within every bound; evicts the oldest
    /// entries when a bound is exceeded.
    pub fn insert(&mut self, t: &Tombstone, now_ms: u64) -> Inserted {
        let at = t.at_unix_ms.min(now_ms.saturating_add(MAX_CLOCK_SKEW_MS));
        if t.path.len() > MAX_TOMBSTONE_PATH || at < now_ms.saturating_sub(self.limits.ttl_ms) {
            return Inserted::Refused;
        }
        let key = (t.prefix, t.path.clone());
        let result = match self.at.get(&key) {
            Some(&old) if old >= at => return Inserted::Known,
            Some(&old) => {
                self.order.remove(&(old, t.prefix, t.path.clone()));
                Inserted::Later
            }
            None => {
                self.bytes += entry_bytes(&t.path);
                if t.prefix {
                    *self.prefix_lens.entry(t.path.len()).or_default() += 1;
                }
                Inserted::New
            }
        };
        self.at.insert(key, at);
        self.order.insert((at, t.prefix, t.path.clone()));
        while self.at.len() > self.limits.max_count || self.bytes > self.limits.max_bytes {
            self.remove_oldest();
            self.evicted += 1;
        }
        result
    }

    fn remove_oldest(&mut self) {
        if let Some((_, prefix, path)) = self.order.pop_first() {
            self.bytes -= entry_bytes(&path);
            if prefix {
                if let Some(n) = self.prefix_lens.get_mut(&path.len()) {
                    *n -= 1;
                    if *n == 0 {
                        self.prefix_lens.remove(&path.len());
                    }
                }
            }
            self.at.remove(&(prefix, path));
        }
    }

    /// Drops the entries older than the TTL; returns how many.
    pub fn prune(&mut self, now_ms: u64) -> usize {
        let cut = now_ms.saturating_sub(self.limits.ttl_ms);
        let mut removed = 0;
        while self.order.first().is_some_and(|(at, _, _)| *at < cut) {
            self.remove_oldest();
            removed += 1;
        }
        removed
    }

    /// Whether an entry covers a write of `path` created at `created_ms`: a
    /// tombstone of the path itself or of a prefix of it, made at or after it.
    pub fn covers(&self, path: &str, created_ms: u64) -> bool {
        let at = |prefix: bool, p: &str| self.at.get(&(prefix, p.to_string())).is_some_and(|&t| t >= created_ms);
        at(false, path) || self.prefix_lens.range(..=path.len()).any(|(&len, _)| path.is_char_boundary(len) && at(true, &path[..len]))
    }

    /// At most `n` entries with a time of at least `since_ms`, the newest first.
    pub fn newest(&self, n: usize, since_ms: u64) -> Vec<Tombstone> {
        self.order
            .iter()
            .rev()
            .take_while(|(at, _, _)| *at >= since_ms)
            .take(n)
            .map(|(at, prefix, path)| Tombstone { prefix: *prefix, path: path.clone(), at_unix_ms: *at })
            .collect()
    }

    /// Every entry, the oldest first.
    pub fn all(&self) -> impl Iterator<Item = Tombstone> + '_ {
        self.order.iter().map(|(at, prefix, path)| Tombstone { prefix: *prefix, path: path.clone(), at_unix_ms: *at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: u64 = 1_800_000_000_000;

    fn t(prefix: bool, path: &str, at: u64) -> Tombstone {
        Tombstone { prefix, path: path.into(), at_unix_ms: at }
    }

    #[test]
    fn a_path_deleted_again_moves_forward_instead_of_adding_an_entry() {
        let mut s = TombstoneSet::new(TombstoneLimits::default());
        assert_eq!(s.insert(&t(false, "a", NOW - 10), NOW), Inserted::New);
        assert_eq!(s.insert(&t(false, "a", NOW - 20), NOW), Inserted::Known);
        assert_eq!(s.insert(&t(false, "a", NOW), NOW), Inserted::Later);
        assert_eq!(s.insert(&t(true, "a", NOW), NOW), Inserted::New, "a prefix is another entry");
        assert_eq!(s.len(), 2);
        assert_eq!(s.newest(10, 0), vec![t(true, "a", NOW), t(false, "a", NOW)]);
    }

    #[test]
    fn a_write_is_covered_by_a_later_tombstone_of_its_path_or_of_any_prefix() {
        let mut s = TombstoneSet::new(TombstoneLimits::default());
        s.insert(&t(false, "job/chk-1/a", NOW - 10), NOW);
        s.insert(&t(true, "job/chk-2/", NOW - 10), NOW);
        s.insert(&t(true, "", NOW - 100), NOW);
        assert!(s.covers("job/chk-1/a", NOW - 10));
        assert!(!s.covers("job/chk-1/a", NOW - 9), "created after the delete");
        assert!(!s.covers("job/chk-1/ab", NOW - 50), "a path tombstone is not a prefix");
        assert!(s.covers("job/chk-2/x/y", NOW - 11));
        assert!(s.covers("job/chk-2/", NOW - 11));
        assert!(!s.covers("job/chk-2", NOW - 11));
        assert!(s.covers("anything", NOW - 100), "the empty prefix covers every path");
        assert!(!s.covers("anything", NOW - 99));
        assert!(s.covers("é/ü", NOW - 100), "prefixes end at character boundaries");
    }

    #[test]
    fn future_times_are_clamped_so_they_are_pruned_like_others() {
        let mut s = TombstoneSet::new(TombstoneLimits { ttl_ms: 1000, ..TombstoneLimits::default() });
        s.insert(&t(false, "future", u64::MAX), NOW);
        assert_eq!(s.newest(1, 0)[0].at_unix_ms, NOW + MAX_CLOCK_SKEW_MS);
        assert_eq!(s.prune(NOW + MAX_CLOCK_SKEW_MS + 1000), 0);
        assert_eq!(s.prune(NOW + MAX_CLOCK_SKEW_MS + 1001), 1);
        assert!(s.is_empty());
    }

    #[test]
    fn expired_and_overlong_tombstones_are_refused() {
        let mut s = TombstoneSet::new(TombstoneLimits { ttl_ms: 1000, ..TombstoneLimits::default() });
        assert_eq!(s.insert(&t(false, "old", NOW - 1001), NOW), Inserted::Refused);
        assert_eq!(s.insert(&t(false, &"x".repeat(MAX_TOMBSTONE_PATH + 1), NOW), NOW), Inserted::Refused);
        assert_eq!(s.insert(&t(false, &"x".repeat(MAX_TOMBSTONE_PATH), NOW), NOW), Inserted::New);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn count_and_byte_bounds_evict_the_oldest() {
        let mut s = TombstoneSet::new(TombstoneLimits { max_count: 3, ..TombstoneLimits::default() });
        for i in 0..5u64 {
            s.insert(&t(false, &format!("p{i}"), NOW - 100 + i), NOW);
        }
        assert_eq!(s.len(), 3);
        assert_eq!(s.evicted(), 2);
        let kept: Vec<String> = s.all().map(|t| t.path).collect();
        assert_eq!(kept, ["p2", "p3", "p4"]);

        let mut s = TombstoneSet::new(TombstoneLimits { max_bytes: 3 * (100 + ENTRY_OVERHEAD), ..TombstoneLimits::default() });
        for i in 0..10u64 {
            s.insert(&t(true, &format!("{i:0>100}"), NOW - 100 + i), NOW);
        }
        assert_eq!(s.len(), 3);
        assert!(s.bytes() <= 3 * (100 + ENTRY_OVERHEAD));
    }

    proptest! {
        /// Whatever arrives (any paths, times, flags, in any order), every
        /// bound holds and the bookkeeping agrees with the entries.
        #[test]
        fn bounds_hold_for_any_input(ops in proptest::collection::vec((any::<bool>(), "[a-c]{0,6}", 0u64..3_000, 0u64..200), 0..300)) {
            let limits = TombstoneLimits { ttl_ms: 1_000, max_count: 20, max_bytes: 20 * (3 + ENTRY_OVERHEAD) };
            let mut s = TombstoneSet::new(limits);
            let mut now = NOW;
            for (prefix, path, at_offset, advance) in ops {
                now += advance;
                // Times from well before the TTL to well after the skew bound.
                let at = now - 1_500 + at_offset * 1_000;
                s.insert(&Tombstone { prefix, path, at_unix_ms: at }, now);
                if advance % 7 == 0 {
                    s.prune(now);
                }
                prop_assert!(s.len() <= limits.max_count);
                prop_assert!(s.bytes() <= limits.max_bytes);
                let all: Vec<Tombstone> = s.all().collect();
                prop_assert_eq!(all.len(), s.len());
                prop_assert_eq!(all.iter().map(|t| entry_bytes(&t.path)).sum::<usize>(), s.bytes());
                prop_assert!(all.iter().all(|t| t.at_unix_ms <= now + MAX_CLOCK_SKEW_MS));
                prop_assert_eq!(s.prefix_lens.values().sum::<usize>(), all.iter().filter(|t| t.prefix).count());
                for t in &all {
                    let longer = t.path.clone() + "x";
                    prop_assert!(s.covers(&t.path, t.at_unix_ms));
                    prop_assert!(!t.prefix || s.covers(&longer, t.at_unix_ms));
                }
            }
        }
    }
}
