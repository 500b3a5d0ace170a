//! A test model of a file system's objects for the directory index's tests:
//! random operations, the index changes each causes, and what a scan of the
//! objects lists.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::{dir_removed_at, dirs_below, entries_of, Change};
use crate::version::WriteVersion;

/// What a test cluster does to its objects.
#[derive(Clone, Debug)]
pub enum Op {
    /// Writes (or overwrites) the object at this path.
    Write(String),
    /// Deletes the object at this path, as a client does: it finds the
    /// newest version first and removes up to it.
    Delete(String),
    /// Deletes everything below this directory (a recursive delete walks
    /// the index and deletes each object it finds), and the directory.
    DeleteBelow(String),
    /// Deletes this directory if nothing lies below it (Flink's delete of a
    /// checkpoint's directory once its files are gone).
    DeleteDir(String),
}

pub fn path() -> impl Strategy<Value = String> {
    proptest::collection::vec(prop_oneof!["a", "b", "c"], 1..4).prop_map(|parts| format!("r/{}", parts.join("/")))
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => path().prop_map(Op::Write),
        2 => path().prop_map(Op::Delete),
        1 => path().prop_map(Op::DeleteBelow),
        1 => path().prop_map(Op::DeleteDir),
    ]
}

/// The objects of a test cluster, and every directory ever written.
#[derive(Default)]
pub struct Model {
    pub objects: BTreeMap<String, WriteVersion>,
    pub dirs: BTreeSet<String>,
}

impl Model {
    /// Applies `op`, the `t`-th (writes begin at `100 + t` ms, deletes run
    /// then); returns the index changes it causes as (directory, name, change).
    pub fn apply(&mut self, op: &Op, t: usize) -> Vec<(String, String, Change)> {
        let now = 100 + t as u64;
        let mut changes = Vec::new();
        let below = |p: &str| format!("{p}/");
        let deletes: Vec<String> = match op {
            Op::Write(p) => {
                // Paths are files or directories, never both (the file system refuses it).
                let clash = self.objects.keys().any(|o| o.starts_with(&below(p)) || p.starts_with(&below(o)));
                if !clash {
                    let version = WriteVersion { created_unix_ms: now, write_id: t as u128 };
                    self.objects.insert(p.clone(), version);
                    for (dir, name) in entries_of(p) {
                        self.dirs.insert(dir.to_string());
                        changes.push((dir.to_string(), name, Change::Add(version)));
                    }
                }
                Vec::new()
            }
            Op::Delete(p) => self.objects.get_key_value(p).map(|(p, _)| p.clone()).into_iter().collect(),
            Op::DeleteBelow(p) => self.objects.keys().filter(|o| o.starts_with(&below(p))).cloned().collect(),
            Op::DeleteDir(_) => Vec::new(),
        };
        for p in deletes {
            let version = self.objects.remove(&p).expect("deleting an object that exists");
            let (dir, name) = entries_of(&p).into_iter().next().expect("an object path has a parent");
            changes.push((dir.to_string(), name, Change::Remove(version)));
        }
        if let Op::DeleteBelow(p) | Op::DeleteDir(p) = op {
            let dir = below(p);
            let empty = !self.objects.keys().any(|o| o.starts_with(&dir));
            if empty && !self.objects.contains_key(p) {
                for (parent, name) in dirs_below(&dir, self.dirs.iter().map(String::as_str)) {
                    changes.push((parent.to_string(), name, dir_removed_at(now)));
                }
            }
        }
        changes
    }
}

/// The children of `dir` from a scan of the objects: what a listing answers today.
pub fn scanned(objects: &BTreeMap<String, WriteVersion>, dir: &str) -> BTreeSet<String> {
    objects
        .keys()
        .filter_map(|p| p.strip_prefix(dir))
        .map(|rest| match rest.split_once('/') {
            Some((name, _)) => format!("{name}/"),
            None => rest.to_string(),
        })
        .collect()
}
