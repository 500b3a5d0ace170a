//! Directory indexes: the children of a directory, kept apart from the
//! objects so that "is there a file `D/x`?", "is `D/` empty?" and a listing of
//! `D/` can be answered by the `k + m` nodes a reader asks first for `D/`,
//! instead of by every node (NETWORK.md, "What still goes to every node": the
//! plan). Storage nodes keep the records (`fragstate_net`'s `index_holder`)
//! and clients ask them (`fragstate_client`'s `dir_index`); this is the part
//! with no I/O, so its rules are tested here. How many holders a change must reach
//! and a reader must hear: [`quorum`].
//!
//! Directories are implicit, as in the Flink file system above: `D/` exists
//! while some object lies below it. An object at `a/b/c` therefore makes three
//! entries present ([`entries_of`]): `c` in `a/b/`, and the subdirectory
//! entries `b/` in `a/` (and `a/` in the root `""` only for a path with no
//! leading component — see [`entries_of`]). Each entry is a last-writer-wins
//! register over [`WriteVersion`]s:
//! - an object's commit *adds* its name with its write's version, and the
//!   names of its directories with the same version;
//! - a delete of the object *removes* its name up to the version it deleted
//!   (the delete looks the manifest up first, so it knows it): the name stays
//!   present only if a newer write added it again.
//!
//! So applying the same changes in any order, any number of times, on any
//! holder gives the same index, and two holders' indexes merge by taking, per
//! name, the newest add and the newest remove ([`DirIndex::merge`]): what a
//! reader does with the answers of several holders, and what repair does to
//! fill a new holder from a survivor.
//!
//! A subdirectory entry is not removed by the delete of the objects below
//! it: `b/` stays present in `a/` after `a/b/`'s last file is deleted, and
//! whether `a/b/` still holds anything is `a/b/`'s own index's answer
//! ([`DirIndex::has_no_children`]); a listing checks each subdirectory it
//! returns that way (one round per subdirectory, bounded by the listing's
//! length). The delete of the directory itself (recursive, or of an empty
//! one, as Flink deletes a subsumed checkpoint's `chk-N`) removes `b/` and
//! the names of the subdirectories below it up to the delete's time
//! ([`dir_removed_at`], [`dirs_below`]), so nothing of a deleted directory
//! stays once pruning forgets removed names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::NodeId;
use crate::lookup::lookup_candidates;
use crate::placement::{NodeInfo, PlacementPolicy};
use crate::version::WriteVersion;

#[cfg(test)]
mod model;
pub mod quorum;

/// The nodes that keep the index of `dir` (ending in `/`): the `width`
/// (`k + m`) nodes a reader asks first for the path `dir`
/// ([`lookup_candidates`]), as writers, readers and the holders themselves
/// rank them over their views.
pub fn holders(dir: &str, live: &[NodeInfo], width: usize, policy: PlacementPolicy) -> Vec<NodeId> {
    lookup_candidates(dir.as_bytes(), live, width, policy)
}

/// The (directory, child name) entries an object at `path` makes present:
/// its own name in its parent, and each ancestor directory's name with a
/// trailing `/` in the directory above it, the nearest first. Directories
/// are the prefixes of `path` ending in `/`; empty components (`//`) name
/// nothing, so `fs://ns/a` gives `("fs://ns/", "a")` and `("fs://", "ns/")`
/// and stops there (`fs:/` would only hold the empty name).
pub fn entries_of(path: &str) -> Vec<(&str, String)> {
    let mut out = Vec::new();
    let mut end = path.len();
    let mut child_is_dir = false;
    while let Some(slash) = path[..end].rfind('/') {
        let name = &path[slash + 1..end];
        if name.is_empty() {
            break;
        }
        out.push((&path[..=slash], if child_is_dir { format!("{name}/") } else { name.to_string() }));
        end = slash;
        child_is_dir = true;
    }
    out
}

/// What a directory's delete (recursive, or of an empty directory) sends for
/// the directory's name in its parent and for each subdirectory's name below
/// it ([`dirs_below`]): a remove of every write that began before
/// `now_unix_ms` — what the delete's prefix tombstone deletes — so a deleted
/// checkpoint's `chk-N/` leaves its parent and every record below it holds
/// removed names only, which pruning forgets; a later write brings them back.
pub fn dir_removed_at(now_unix_ms: u64) -> Change {
    Change::Remove(WriteVersion { created_unix_ms: now_unix_ms.saturating_sub(1), write_id: u128::MAX })
}

/// The (directory, name) entries of `dir` (ending in `/`) and of the
/// subdirectories `subdirs` names below it (each ending in `/`): what a
/// directory's delete removes with [`dir_removed_at`].
pub fn dirs_below<'a>(dir: &'a str, subdirs: impl IntoIterator<Item = &'a str>) -> Vec<(&'a str, String)> {
    let below = subdirs.into_iter().filter(|s| s.starts_with(dir) && s.len() > dir.len());
    std::iter::once(dir).chain(below).filter_map(entry_in_parent).collect()
}

/// The entry of directory `dir` (ending in `/`) in its parent: `("a/", "b/")` for `a/b/`.
pub fn entry_in_parent(dir: &str) -> Option<(&str, String)> {
    let (parent, name) = entries_of(dir.strip_suffix('/')?).into_iter().next()?;
    Some((parent, format!("{name}/")))
}

/// One name's state in a directory's index: the newest write that added it
/// and the newest version a delete removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The newest write that added the name.
    pub added: Option<WriteVersion>,
    /// The newest version a delete of the name removed: adds up to it are gone.
    pub removed: Option<WriteVersion>,
}

impl Entry {
    /// Whether the name is there: added by a write newer than every delete of it.
    pub fn present(&self) -> bool {
        match (self.added, self.removed) {
            (Some(added), Some(removed)) => added > removed,
            (added, _) => added.is_some(),
        }
    }

    /// Takes the newer add and the newer remove of the two; true when `self` changed.
    fn merge(&mut self, other: &Entry) -> bool {
        let before = *self;
        self.added = self.added.max(other.added);
        self.removed = self.removed.max(other.removed);
        *self != before
    }
}

/// A change to one name of a directory's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change {
    /// A write of this version committed an object at (or below) the name.
    Add(WriteVersion),
    /// A delete removed the name's object up to this version.
    Remove(WriteVersion),
}

/// Bytes one entry counts for besides its name (two versions, bookkeeping),
/// so that a holder can bound what its indexes keep.
pub const ENTRY_OVERHEAD: usize = 64;

/// The index of one directory: every name ever added or removed, with its
/// [`Entry`]. Present names are the directory's children.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirIndex {
    entries: BTreeMap<String, Entry>,
}

impl DirIndex {
    /// Applies `change` to `name`; true when the index changed (a change
    /// already known, or older than what is known, changes nothing).
    pub fn apply(&mut self, name: &str, change: Change) -> bool {
        let update = match change {
            Change::Add(v) => Entry { added: Some(v), removed: None },
            Change::Remove(v) => Entry { added: None, removed: Some(v) },
        };
        match self.entries.get_mut(name) {
            Some(e) => e.merge(&update),
            None => {
                self.entries.insert(name.to_string(), update);
                true
            }
        }
    }

    /// Takes in everything `other` knows (another holder's answer, or a
    /// survivor's copy during repair); true when `self` changed.
    pub fn merge(&mut self, other: &DirIndex) -> bool {
        let mut changed = false;
        for (name, e) in &other.entries {
            match self.entries.get_mut(name) {
                Some(mine) => changed |= mine.merge(e),
                None => {
                    self.entries.insert(name.clone(), *e);
                    changed = true;
                }
            }
        }
        changed
    }

    /// The changes that bring `other` level with `self` (what `self` knows
    /// newer of each name), to merge into a holder whose answer was `other`.
    pub fn changes_beyond(&self, other: &DirIndex) -> Vec<(String, Change)> {
        let mut out = Vec::new();
        for (name, e) in &self.entries {
            let theirs = other.entries.get(name).copied().unwrap_or_default();
            if let Some(added) = e.added.filter(|a| theirs.added.is_none_or(|t| *a > t)) {
                out.push((name.clone(), Change::Add(added)));
            }
            if let Some(removed) = e.removed.filter(|r| theirs.removed.is_none_or(|t| *r > t)) {
                out.push((name.clone(), Change::Remove(removed)));
            }
        }
        out
    }

    /// The names present, in order: objects by name, subdirectories with a
    /// trailing `/` (which may since have emptied: module docs).
    pub fn present(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().filter(|(_, e)| e.present()).map(|(n, _)| n.as_str())
    }

    /// Whether `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.get(name).is_some_and(Entry::present)
    }

    /// Whether no object name is present and every subdirectory named is
    /// empty by `is_empty_dir` (its own index's answer).
    pub fn has_no_children(&self, mut is_empty_dir: impl FnMut(&str) -> bool) -> bool {
        self.present().all(|name| name.strip_suffix('/').is_some_and(&mut is_empty_dir))
    }

    /// Names kept, present or not.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no name is kept at all (present or not).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes the entries count for: their names and [`ENTRY_OVERHEAD`] each.
    pub fn bytes(&self) -> usize {
        self.entries.keys().map(|n| n.len() + ENTRY_OVERHEAD).sum()
    }

    /// The index a listing of every node gives of `dir` (ending in `/`):
    /// each object directly below it added with its version, each
    /// subdirectory with the newest version of the objects below it. What a
    /// rebuild merges with the holders' answers (the client's
    /// `dir_index`): it names every object whose manifest was published,
    /// but knows no removes and no empty subdirectory.
    pub fn from_listing<'a>(dir: &str, objects: impl IntoIterator<Item = (&'a str, WriteVersion)>) -> DirIndex {
        let mut index = DirIndex::default();
        for (path, version) in objects {
            let Some(rest) = path.strip_prefix(dir) else { continue };
            let name = match rest.find('/') {
                Some(slash) => &rest[..=slash],
                None => rest,
            };
            if !name.is_empty() && name != "/" {
                index.apply(name, Change::Add(version));
            }
        }
        index
    }

    /// Forgets the names removed by deletes of versions created before
    /// `cut_unix_ms` and not added again: a late add of a version that old
    /// would then be taken as present, so the cut must be older than any
    /// write still in flight (the tombstones' TTL). Returns how many went.
    pub fn prune_removed(&mut self, cut_unix_ms: u64) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, e| e.present() || e.removed.is_none_or(|r| r.created_unix_ms >= cut_unix_ms));
        before - self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::model;
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeSet, HashMap};

    fn v(t: u64) -> WriteVersion {
        WriteVersion { created_unix_ms: t, write_id: 7 }
    }

    #[test]
    fn an_object_makes_its_name_and_its_directories_present() {
        assert_eq!(
            entries_of("fragstate://flink/ck/job/chk-5/_metadata"),
            vec![
                ("fragstate://flink/ck/job/chk-5/", "_metadata".to_string()),
                ("fragstate://flink/ck/job/", "chk-5/".to_string()),
                ("fragstate://flink/ck/", "job/".to_string()),
                ("fragstate://flink/", "ck/".to_string()),
                ("fragstate://", "flink/".to_string()),
            ]
        );
        assert_eq!(entries_of("a/b"), vec![("a/", "b".to_string())]);
        assert!(entries_of("plain").is_empty());
        assert!(entries_of("dir/").is_empty(), "a path ending in / names no object");
    }

    #[test]
    fn the_changes_beyond_an_answer_bring_it_level() {
        let mut behind = DirIndex::default();
        behind.apply("a", Change::Add(v(1)));
        behind.apply("b", Change::Add(v(2)));
        let mut merged = behind.clone();
        merged.apply("a", Change::Remove(v(1)));
        merged.apply("c", Change::Add(v(3)));
        merged.apply("b", Change::Add(v(4)));
        let changes = merged.changes_beyond(&behind);
        assert_eq!(changes.len(), 3, "{changes:?}");
        for (name, change) in changes {
            behind.apply(&name, change);
        }
        assert_eq!(behind, merged);
        assert!(merged.changes_beyond(&behind).is_empty());
    }

    #[test]
    fn a_listing_names_the_objects_and_subdirectories_directly_below() {
        let listed = [("d/x", v(5)), ("d/sub/a", v(3)), ("d/sub/deeper/b", v(9)), ("d/y", v(1)), ("e/z", v(2)), ("d//w", v(4)), ("d/", v(6))];
        let index = DirIndex::from_listing("d/", listed);
        assert_eq!(index.present().collect::<Vec<_>>(), ["sub/", "x", "y"]);
        assert_eq!(index.entries["sub/"].added, Some(v(9)), "a subdirectory: the newest version below it");
        // merged with a holder's answer, a remove newer than a listed copy (a node that missed the delete) wins
        let mut answer = DirIndex::default();
        answer.apply("x", Change::Remove(v(5)));
        answer.merge(&index);
        assert!(!answer.contains("x") && answer.contains("y"));
    }

    #[test]
    fn a_delete_removes_the_version_it_found_and_a_newer_write_comes_back() {
        let mut d = DirIndex::default();
        assert!(d.apply("x", Change::Add(v(10))));
        assert!(!d.apply("x", Change::Add(v(10))), "the same add again changes nothing");
        assert!(d.apply("x", Change::Remove(v(10))));
        assert!(!d.contains("x"));
        assert!(!d.apply("x", Change::Add(v(9))), "an older write's late add stays removed");
        assert!(!d.contains("x"));
        assert!(d.apply("x", Change::Add(v(11))));
        assert!(d.contains("x"), "written again after the delete");
        // a delete that found an older version than the newest add leaves the newer write
        d.apply("y", Change::Add(v(20)));
        d.apply("y", Change::Remove(v(15)));
        assert!(d.contains("y"));
    }

    #[test]
    fn emptiness_asks_the_subdirectories_own_indexes() {
        let mut d = DirIndex::default();
        d.apply("sub/", Change::Add(v(1)));
        assert!(d.has_no_children(|sub| sub == "sub"), "only an emptied subdirectory is named");
        assert!(!d.has_no_children(|_| false));
        d.apply("f", Change::Add(v(2)));
        assert!(!d.has_no_children(|_| true));
        d.apply("f", Change::Remove(v(2)));
        assert!(d.has_no_children(|_| true));
    }

    #[test]
    fn a_directory_delete_names_the_directory_and_its_subdirectories() {
        let subdirs = ["job/chk-5/", "job/chk-5/a/", "job/chk-5/a/b/", "job/chk-50/", "job/"];
        assert_eq!(
            dirs_below("job/chk-5/", subdirs),
            vec![("job/", "chk-5/".to_string()), ("job/chk-5/", "a/".to_string()), ("job/chk-5/a/", "b/".to_string())],
            "not chk-50/, not the parent"
        );
        let mut d = DirIndex::default();
        d.apply("chk-5/", Change::Add(WriteVersion { created_unix_ms: 999, write_id: u128::MAX }));
        d.apply("chk-5/", dir_removed_at(1_000));
        assert!(!d.contains("chk-5/"), "every write that began before the delete");
        d.apply("chk-5/", Change::Add(WriteVersion { created_unix_ms: 1_000, write_id: 0 }));
        assert!(d.contains("chk-5/"), "a write that began at the delete's time or later comes back");
    }

    #[test]
    fn pruning_forgets_only_old_removed_names() {
        let mut d = DirIndex::default();
        d.apply("old", Change::Add(v(1)));
        d.apply("old", Change::Remove(v(1)));
        d.apply("recent", Change::Add(v(50)));
        d.apply("recent", Change::Remove(v(50)));
        d.apply("live", Change::Add(v(2)));
        assert_eq!(d.bytes(), "old".len() + "recent".len() + "live".len() + 3 * ENTRY_OVERHEAD);
        assert_eq!(d.prune_removed(10), 1);
        assert_eq!(d.len(), 2);
        assert!(d.contains("live"));
    }

    /// The children of `dir` from the indexes, each subdirectory checked against its own index.
    fn indexed(indexes: &HashMap<String, DirIndex>, dir: &str) -> BTreeSet<String> {
        let Some(d) = indexes.get(dir) else { return BTreeSet::new() };
        d.present()
            .filter(|name| match name.strip_suffix('/') {
                Some(sub) => !indexed(indexes, &format!("{dir}{sub}/")).is_empty(),
                None => true,
            })
            .map(str::to_string)
            .collect()
    }

    proptest! {
        /// Whatever the writes and deletes, and in whatever order (and how
        /// often) two holders receive the index changes they cause, each
        /// holder's indexes and their merge list what a scan of the objects
        /// lists, in every directory.
        #[test]
        fn the_indexes_list_what_a_scan_of_the_objects_lists(
            ops in proptest::collection::vec(model::op(), 1..60),
            shuffle in proptest::collection::vec(any::<u64>(), 200),
            repeats in proptest::collection::vec(any::<bool>(), 200),
        ) {
            let mut m = model::Model::default();
            let changes: Vec<(String, String, Change)> =
                ops.iter().enumerate().flat_map(|(t, op)| m.apply(op, t)).collect();
            let objects = &m.objects;
            // Holder one receives the changes in order, holder two shuffled and some twice.
            let mut one: HashMap<String, DirIndex> = HashMap::new();
            for (dir, name, c) in &changes {
                one.entry(dir.clone()).or_default().apply(name, *c);
            }
            let mut order: Vec<usize> = (0..changes.len()).collect();
            order.sort_by_key(|&i| shuffle[i % shuffle.len()].wrapping_mul(i as u64 + 1));
            let mut two: HashMap<String, DirIndex> = HashMap::new();
            for i in order {
                let (dir, name, c) = &changes[i];
                for _ in 0..(1 + repeats[i % repeats.len()] as usize) {
                    two.entry(dir.clone()).or_default().apply(name, *c);
                }
            }
            prop_assert_eq!(&one, &two, "the order and repetition of changes do not matter");
            // A third holder missed the second half of the changes; merging holder one's copy repairs it.
            let mut three: HashMap<String, DirIndex> = HashMap::new();
            for (dir, name, c) in &changes[..changes.len() / 2] {
                three.entry(dir.clone()).or_default().apply(name, *c);
            }
            for (dir, d) in &one {
                three.entry(dir.clone()).or_default().merge(d);
            }
            prop_assert_eq!(&one, &three);

            let mut dirs: BTreeSet<String> = one.keys().cloned().collect();
            dirs.insert("r/".to_string());
            for dir in &dirs {
                prop_assert_eq!(indexed(&one, dir), model::scanned(objects, dir), "children of {}", dir);
            }

            // Pruning every removed name changes no answer, and a deleted
            // directory leaves nothing: not its name in its parent, no record.
            let mut gone: BTreeSet<String> = BTreeSet::new();
            for (dir, name, c) in changes.iter().filter(|(_, name, _)| name.ends_with('/')) {
                match c {
                    Change::Remove(_) => gone.insert(format!("{dir}{name}")),
                    Change::Add(_) => gone.remove(&format!("{dir}{name}")),
                };
            }
            one.retain(|_, d| {
                d.prune_removed(u64::MAX);
                !d.is_empty()
            });
            for dir in &dirs {
                prop_assert_eq!(indexed(&one, dir), model::scanned(objects, dir), "children of {} after pruning", dir);
            }
            for d in &gone {
                let (parent, name) = entry_in_parent(d).expect("below r/");
                prop_assert!(!one.get(parent).is_some_and(|p| p.contains(&name)), "{} still named in {}", d, parent);
                prop_assert!(!one.contains_key(d), "a record left for the deleted {}", d);
            }
        }
    }
}
