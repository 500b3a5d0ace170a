//! A test model of a file system's objects for the directory index's tests:
//! random operations, the index changes each causes, and what a scan of the
//! objects lists.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::{entries_of, Change};
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
    /// the index and deletes each object it finds).
    DeleteBelow(String),
}

pub fn path() -> impl Strategy<Value = String> {
    proptest::collection::vec(prop_oneof!["a", "b", "c"], 1..4).prop_map(|parts| format!("r/{}", parts.join("/")))
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => path().prop_map(Op::Write),
        2 => path().prop_map(Op::Delete),
        1 => path().prop_map(Op::DeleteBelow),
    ]
}

/// Applies `op` (the `t`-th) to `objects`; returns the index changes it
/// causes as (directory, name, change).
pub fn apply(objects: &mut BTreeMap<String, WriteVersion>, op: &Op, t: usize) -> Vec<(String, String, Change)> {
    let mut changes = Vec::new();
    let deletes: Vec<String> = match op {
        Op::Write(p) => {
            // Paths are files or directories, never both (the file system refuses it).
            let clash = objects.keys().any(|o| o.starts_with(&format!("{p}/")) || p.starts_with(&format!("{o}/")));
            if !clash {
                let version = WriteVersion { created_unix_ms: 100 + t as u64, write_id: t as u128 };
                objects.insert(p.clone(), version);
                for (dir, name) in entries_of(p) {
                    changes.push((dir.to_string(), name, Change::Add(version)));
                }
            }
            Vec::new()
        }
        Op::Delete(p) => objects.get_key_value(p).map(|(p, _)| p.clone()).into_iter().collect(),
        Op::DeleteBelow(p) => objects.keys().filter(|o| o.starts_with(&format!("{p}/"))).cloned().collect(),
    };
    for p in deletes {
        let version = objects.remove(&p).expect("deleting an object that exists");
        let (dir, name) = entries_of(&p).into_iter().next().expect("an object path has a parent");
        changes.push((dir.to_string(), name, Change::Remove(version)));
    }
    changes
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
