//! How many of a directory's index holders a change must reach and a reader
//! must hear, so that a reader never misses a change that counted as done —
//! through holders that were down, holders replaced after joins and leaves,
//! and records started late (NETWORK.md, directory index: "Quorums"). No I/O.
//!
//! A directory's index lives on its `k + m` holders (the first candidates for
//! its path). A change (an add or a remove) counts as done once
//! [`change_acks`] = `m + 1` holders acknowledged it (a directory's birth once
//! [`birth_acks`] = `k` did). A holder's
//! [`Record`] of a directory is *complete* while it holds every change that
//! reached it since the directory began: it was created when the directory
//! was born ([`Records::create`]) or filled from a settled read
//! ([`Records::fill`]), and the holder has kept it since without a restart,
//! without being declared dead and without leaving the directory's holders
//! ([`Records::forget_completeness`]). A change that finds no record starts a
//! *partial* one: its entries count, its answer does not.
//!
//! A reader merges every answer and trusts the merge once `k` answers were
//! complete ([`settle`]). Why `k` suffice: a done change reached `m + 1` holders
//! of the set at the time. Each of them that has since left the set left a
//! newcomer, whose record is partial until filled from a settled read (which
//! then holds the change); a holder that restarted, was declared dead or
//! dropped the record for its byte bound counts as a newcomer. So of today's `k + m` holders, the complete ones that miss
//! the change are among the holders of that time that missed it — at most
//! `k - 1` — and any `k` complete answers include one that has it. The
//! argument needs the writer and the holders to agree on the directory's
//! holders when the change is made (views converged): a holder that the writer
//! did not count but that counts itself complete could miss a change.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Change, DirIndex, ENTRY_OVERHEAD};

/// Acknowledgements a change needs from the directory's `k + m` holders: `m + 1`.
pub fn change_acks(m: usize) -> usize {
    m + 1
}

/// Acknowledgements a directory's birth needs: `k`, so that reads can settle
/// from the start (for the argument above a birth is a change like any other;
/// with fewer, the directory's reads fall back to every node until enough
/// holders are filled).
pub fn birth_acks(k: usize) -> usize {
    k
}

/// One holder's record of a directory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The entries it holds.
    pub index: DirIndex,
    /// Whether it holds every change that reached this holder since the directory began.
    pub complete: bool,
}

/// What one holder answers for a directory: its record, or none.
pub type Answer = Option<Record>;

/// What a writer or a reader sends a holder of a directory's index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexUpdate {
    /// A change to one name ([`Records::apply`]).
    Apply {
        /// The child's name (`x`, or `x/` for a subdirectory).
        name: String,
        /// What happened to it.
        change: Change,
    },
    /// The directory's birth ([`Records::create`]).
    Create,
    /// A settled read's merge, for a holder whose answer was partial or
    /// missing ([`Records::fill`]: read repair).
    Fill(DirIndex),
    /// Changes to several names at once (a recursive delete's removes).
    Batch(Vec<(String, Change)>),
}

/// Bytes a record counts for besides its directory's name and its entries.
pub const RECORD_OVERHEAD: usize = 96;

/// A record as a holder keeps it: with what it counts for and when it last changed.
#[derive(Clone, Debug, Default)]
struct Held {
    record: Record,
    bytes: usize,
    touched: u64,
}

/// The records one holder keeps, by directory, within a byte bound: past it
/// the least recently changed records are dropped whole. A dropped record
/// answers nothing, like a newcomer's — safe by the argument above, as a
/// holder that lost its record is one more newcomer — and the directory's
/// reads settle from the other holders or fall back to every node.
#[derive(Clone, Debug)]
pub struct Records {
    dirs: BTreeMap<String, Held>,
    bytes: usize,
    max_bytes: usize,
    clock: u64,
    dropped: u64,
}

impl Default for Records {
    fn default() -> Self {
        Records::with_max_bytes(usize::MAX)
    }
}

impl Records {
    /// No records yet; at most `max_bytes` kept (names, entries and [`RECORD_OVERHEAD`] each).
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        Records { dirs: BTreeMap::new(), bytes: 0, max_bytes, clock: 0, dropped: 0 }
    }

    /// A change from a writer; a directory with no record here starts a partial one.
    pub fn apply(&mut self, dir: &str, name: &str, change: Change) -> bool {
        self.update(dir, Some(name), |r| r.index.apply(name, change))
    }

    /// The directory was born (a writer found it absent from its parent's
    /// settled index): the record is complete, keeping changes that came first.
    pub fn create(&mut self, dir: &str) {
        self.update(dir, None, |r| !std::mem::replace(&mut r.complete, true));
    }

    /// Fills the record from a settled read (repair, a newcomer, after a restart); complete.
    pub fn fill(&mut self, dir: &str, settled: &DirIndex) {
        self.update(dir, None, |r| r.index.merge(settled) | !std::mem::replace(&mut r.complete, true));
    }

    /// After a restart, after this holder learned it was declared dead, or
    /// for a directory it no longer holds: it may have missed changes others
    /// counted as done, so none of its records answers as complete.
    pub fn forget_completeness(&mut self, mut of_dir: impl FnMut(&str) -> bool) {
        self.dirs.iter_mut().filter(|(d, _)| of_dir(d)).for_each(|(_, h)| h.record.complete = false);
    }

    /// [`Self::forget_completeness`] of one directory's record.
    pub fn forget_completeness_of(&mut self, dir: &str) {
        if let Some(h) = self.dirs.get_mut(dir) {
            h.record.complete = false;
        }
    }

    /// Applies what a writer or reader sent ([`IndexUpdate`]).
    pub fn update_with(&mut self, dir: &str, update: &IndexUpdate) {
        match update {
            IndexUpdate::Apply { name, change } => {
                self.apply(dir, name, *change);
            }
            IndexUpdate::Create => self.create(dir),
            IndexUpdate::Fill(settled) => self.fill(dir, settled),
            IndexUpdate::Batch(changes) => {
                for (name, change) in changes {
                    self.apply(dir, name, *change);
                }
            }
        }
    }

    /// This holder's answer for `dir`.
    pub fn answer(&self, dir: &str) -> Answer {
        self.dirs.get(dir).map(|h| h.record.clone())
    }

    /// Forgets names removed by deletes of versions created before
    /// `cut_unix_ms` ([`DirIndex::prune_removed`]), and the records left with
    /// no name at all (a deleted checkpoint's directory: its reads, rare,
    /// fall back to every node). Returns how many records went.
    pub fn prune_removed(&mut self, cut_unix_ms: u64) -> usize {
        let before = self.dirs.len();
        self.dirs.retain(|dir, h| {
            if h.record.index.prune_removed(cut_unix_ms) > 0 {
                h.bytes = Self::bytes_of(dir, &h.record);
            }
            !h.record.index.is_empty()
        });
        self.bytes = self.dirs.values().map(|h| h.bytes).sum();
        before - self.dirs.len()
    }

    /// Bytes the records count for.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Records kept.
    pub fn len(&self) -> usize {
        self.dirs.len()
    }

    /// Whether no record is kept.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// Records dropped for the byte bound so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn bytes_of(dir: &str, r: &Record) -> usize {
        dir.len() + RECORD_OVERHEAD + r.index.bytes()
    }

    /// Runs `f` on `dir`'s record (a new one if none), keeps the byte count
    /// (`added`: the one name `f` may add, counted without a pass over the
    /// record) and drops records past the bound; returns what `f` returned.
    fn update(&mut self, dir: &str, added: Option<&str>, f: impl FnOnce(&mut Record) -> bool) -> bool {
        self.clock += 1;
        let new = !self.dirs.contains_key(dir);
        let h = self.dirs.entry(dir.to_string()).or_insert_with(|| Held { bytes: Self::bytes_of(dir, &Record::default()), ..Held::default() });
        let (before, len_before) = (if new { 0 } else { h.bytes }, h.record.index.len());
        let changed = f(&mut h.record);
        h.touched = self.clock;
        match (h.record.index.len() - len_before, added) {
            (0, _) => {}
            (1, Some(name)) => h.bytes += name.len() + ENTRY_OVERHEAD,
            _ => h.bytes = Self::bytes_of(dir, &h.record),
        }
        self.bytes = self.bytes - before + h.bytes;
        if self.bytes > self.max_bytes {
            self.drop_oldest();
        }
        changed
    }

    /// Drops the least recently changed records until an eighth below the bound
    /// (one pass for many changes, not one per change at the bound).
    fn drop_oldest(&mut self) {
        let target = self.max_bytes - self.max_bytes / 8;
        let mut by_age: Vec<(u64, String)> = self.dirs.iter().map(|(d, h)| (h.touched, d.clone())).collect();
        by_age.sort_unstable();
        for (_, dir) in by_age {
            if self.bytes <= target {
                break;
            }
            if let Some(h) = self.dirs.remove(&dir) {
                self.bytes -= h.bytes;
                self.dropped += 1;
            }
        }
    }
}

/// What a reader makes of the answers of a directory's holders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled {
    /// Every done change is in this merge of the answers.
    Index(DirIndex),
    /// Too few complete answers: ask every node, as without an index, or
    /// rebuild the record from `merged` and a listing.
    Unsettled {
        /// Complete answers received.
        complete: usize,
        /// Complete answers needed (`k`).
        needed: usize,
        /// The merge of the answers all the same (partial ones included).
        merged: DirIndex,
    },
}

/// Merges `answers` (one per holder that answered); settled once `k` were complete.
pub fn settle<'a>(answers: impl IntoIterator<Item = &'a Answer>, k: usize) -> Settled {
    let mut merged = DirIndex::default();
    let mut complete = 0;
    for r in answers.into_iter().flatten() {
        merged.merge(&r.index);
        complete += usize::from(r.complete);
    }
    if complete >= k {
        Settled::Index(merged)
    } else {
        Settled::Unsettled { complete, needed: k, merged }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir_index::model::{self, Op};
    use proptest::prelude::*;
    use std::collections::{BTreeSet, HashSet};

    const K: usize = 4;
    const M: usize = 2;

    /// Something that happens to a directory's holders between the object operations.
    #[derive(Clone, Debug)]
    enum Event {
        Op(Op),
        /// The holder in this slot leaves; a newcomer takes its place, filled
        /// from a settled read when the flag is set.
        Replace(usize, bool),
        /// The holder in this slot restarts (or learns it was declared dead),
        /// refilled from a settled read when the flag is set.
        Restart(usize, bool),
        /// A holder that left comes back (the view changed back) and takes
        /// this slot; the one there leaves.
        Return(usize, usize, bool),
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            8 => model::op().prop_map(Event::Op),
            1 => (0..K + M, any::<bool>()).prop_map(|(s, f)| Event::Replace(s, f)),
            1 => (0..K + M, any::<bool>()).prop_map(|(s, f)| Event::Restart(s, f)),
            1 => (0..K + M, any::<usize>(), any::<bool>()).prop_map(|(s, d, f)| Event::Return(s, d, f)),
        ]
    }

    /// Settles `dir` from the holders in `answering`.
    fn read(holders: &[Records], answering: &[usize], dir: &str) -> Settled {
        let answers: Vec<Answer> = answering.iter().map(|&s| holders[s].answer(dir)).collect();
        settle(&answers, K)
    }

    proptest! {
        /// Each change reaches a random `m + 1` or more of the directory's
        /// holders; holders are replaced, restarted and come back in between,
        /// and some drop records for their byte bound; a read that settles
        /// from any holders that answer holds every done change.
        #[test]
        fn a_settled_read_holds_every_done_change(
            events in proptest::collection::vec(event(), 1..80),
            reach in proptest::collection::vec(proptest::collection::vec(any::<bool>(), K + M), 400),
            answering in proptest::collection::vec(proptest::collection::vec(proptest::bool::weighted(0.9), K + M), 400),
            bounds in proptest::collection::vec(prop_oneof![3 => Just(usize::MAX), 1 => 200..2_000usize], K + M),
        ) {
            // One holder set for every directory (placement is not what is tested here);
            // some holders keep little, and drop records for it.
            let mut holders: Vec<Records> = bounds.iter().map(|&b| Records::with_max_bytes(b)).collect();
            // holders that left the set, with what they kept
            let mut departed: Vec<Records> = Vec::new();
            let mut m = model::Model::default();
            let mut born: HashSet<String> = HashSet::new();
            let mut draws = 0usize;
            // the holders a change reaches: the drawn ones, topped up to `at_least`
            let reached = |draws: &mut usize, at_least: usize| -> Vec<usize> {
                let pick = &reach[*draws % reach.len()];
                *draws += 1;
                let mut slots: Vec<usize> = (0..K + M).filter(|&s| pick[s]).collect();
                for s in (0..K + M).rev() {
                    if slots.len() >= at_least { break; }
                    if !slots.contains(&s) { slots.push(s); }
                }
                slots
            };
            for (t, e) in events.iter().enumerate() {
                match e {
                    Event::Op(op) => {
                        for (dir, name, change) in m.apply(op, t) {
                            if matches!(change, Change::Add(_)) && born.insert(dir.clone()) {
                                // the writer found the directory absent: it is born first
                                for s in reached(&mut draws, birth_acks(K)) { holders[s].create(&dir); }
                            }
                            let slots = reached(&mut draws, change_acks(M));
                            for &s in &slots { holders[s].apply(&dir, &name, change); }
                        }
                    }
                    Event::Replace(slot, filled) | Event::Restart(slot, filled) | Event::Return(slot, _, filled) => {
                        match e {
                            Event::Restart(..) => holders[*slot].forget_completeness(|_| true),
                            Event::Return(_, d, _) if !departed.is_empty() => {
                                let back = departed.swap_remove(d % departed.len());
                                let mut gone = std::mem::replace(&mut holders[*slot], back);
                                gone.forget_completeness(|_| true);
                                departed.push(gone);
                            }
                            Event::Return(..) => continue,
                            _ => {
                                // it no longer holds these directories: it forgets their completeness
                                let mut gone = std::mem::replace(&mut holders[*slot], Records::with_max_bytes(bounds[*slot]));
                                gone.forget_completeness(|_| true);
                                departed.push(gone);
                            }
                        }
                        if *filled {
                            let others: Vec<usize> = (0..K + M).filter(|s| s != slot).collect();
                            for dir in born.iter() {
                                if let Settled::Index(ix) = read(&holders, &others, dir) {
                                    holders[*slot].fill(dir, &ix);
                                }
                            }
                        }
                    }
                }
                // a read of every directory ever written, from some of the holders
                for dir in born.iter() {
                    let pick = &answering[draws % answering.len()];
                    draws += 1;
                    let who: Vec<usize> = (0..K + M).filter(|&s| pick[s]).collect();
                    if let Settled::Index(ix) = read(&holders, &who, dir) {
                        let files: BTreeSet<String> = ix.present().filter(|n| !n.ends_with('/')).map(str::to_string).collect();
                        let scanned = model::scanned(&m.objects, dir);
                        prop_assert_eq!(files, scanned.iter().filter(|n| !n.ends_with('/')).cloned().collect::<BTreeSet<_>>(), "files of {}", dir);
                        for sub in scanned.iter().filter(|n| n.ends_with('/')) {
                            prop_assert!(ix.contains(sub), "subdirectory {} of {} missing", sub, dir);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn partial_answers_are_merged_but_not_counted() {
        let v = |t| crate::version::WriteVersion { created_unix_ms: t, write_id: 1 };
        let mut complete = Records::default();
        complete.create("d/");
        let mut partial = Records::default();
        partial.apply("d/", "late", Change::Add(v(5)));
        let answers = vec![complete.answer("d/"), partial.answer("d/"), None];
        match settle(&answers, 2) {
            Settled::Unsettled { complete: 1, needed: 2, merged } => assert!(merged.contains("late"), "merged all the same"),
            other => panic!("{other:?}"),
        }
        match settle(&answers, 1) {
            Settled::Index(ix) => assert!(ix.contains("late"), "a partial answer's entries are merged"),
            other => panic!("{other:?}"),
        }
        partial.fill("d/", &DirIndex::default());
        assert!(partial.answer("d/").is_some_and(|r| r.complete && r.index.contains("late")));
        partial.forget_completeness(|d| d == "d/");
        assert!(!partial.answer("d/").unwrap().complete);
    }

    #[test]
    fn past_the_bound_the_least_recently_changed_records_go() {
        let v = |t| crate::version::WriteVersion { created_unix_ms: t, write_id: 1 };
        let one = "d0/".len() + RECORD_OVERHEAD + "x".len() + ENTRY_OVERHEAD;
        let mut r = Records::with_max_bytes(4 * one);
        for i in 0..4 {
            r.apply(&format!("d{i}/"), "x", Change::Add(v(1)));
        }
        assert_eq!((r.len(), r.bytes(), r.dropped()), (4, 4 * one, 0));
        r.apply("d0/", "x", Change::Remove(v(1))); // d0 changed last: d1 and d2 are the oldest
        r.apply("d4/", "x", Change::Add(v(2)));
        assert_eq!(r.dropped(), 2, "dropped until an eighth below the bound");
        let kept: Vec<bool> = (0..5).map(|i| r.answer(&format!("d{i}/")).is_some()).collect();
        assert_eq!(kept, [true, false, false, true, true]);
        assert_eq!(r.bytes(), 3 * one);
        // the byte count follows new names, and a fill's merge
        let mut big = DirIndex::default();
        big.apply("yy", Change::Add(v(3)));
        big.apply("x", Change::Add(v(3)));
        let mut u = Records::default();
        u.apply("d/", "x", Change::Add(v(1)));
        u.fill("d/", &big);
        assert_eq!(u.bytes(), "d/".len() + RECORD_OVERHEAD + "x".len() + "yy".len() + 2 * ENTRY_OVERHEAD);
    }

    #[test]
    fn pruning_drops_the_records_left_with_no_name() {
        let v = |t| crate::version::WriteVersion { created_unix_ms: t, write_id: 1 };
        let mut r = Records::default();
        r.create("job/chk-1/");
        r.apply("job/chk-1/", "_metadata", Change::Add(v(10)));
        r.apply("job/chk-1/", "_metadata", Change::Remove(v(10)));
        r.apply("job/", "chk-1/", Change::Add(v(10)));
        assert_eq!(r.prune_removed(5), 0, "removed after the cut: kept");
        assert_eq!(r.prune_removed(20), 1);
        assert!(r.answer("job/chk-1/").is_none(), "a deleted checkpoint's directory leaves no record");
        assert!(r.answer("job/").is_some_and(|a| a.index.contains("chk-1/")));
        assert_eq!(r.bytes(), "job/".len() + RECORD_OVERHEAD + "chk-1/".len() + ENTRY_OVERHEAD);
    }
}
