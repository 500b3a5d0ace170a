//! Removing fragments and manifests: deletes, reclaim of abandoned uploads,
//! and the fault injections of the tests.
//!
//! A delete looks only at the paths it names: fragments and manifests are
//! kept in path order, so one path or a prefix is a range of each map, and a
//! delete costs the entries it removes, not the store's size (before, every
//! delete — one per state file Flink discards — scanned every fragment and
//! manifest the node held).

use std::fs;
use std::ops::Bound;
use std::sync::Arc;
use std::os::unix::fs::FileExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::error::{Error, Result};
use fragstate_core::format::Manifest;
use fragstate_core::ids::FragmentKey;

use crate::{lock, path_hash, CellSlot, Fragment, FragmentStore};

impl FragmentStore {
    pub fn delete(&self, target: &DeleteTarget) -> Result<DeleteStats> {
        // A committed overwrite leaves uploads in progress alone: the older
        // writer learns when it publishes that it lost, and deletes its own
        // fragments (FORMAT.md, "Versions of a path"); a dead one's are reclaimed.
        let spare_uploads = matches!(target, DeleteTarget::OlderWrites { .. });
        let paths = match target {
            DeleteTarget::Prefix(p) => Paths::Prefix(p),
            DeleteTarget::Path(p) | DeleteTarget::Write { path: p, .. } | DeleteTarget::OlderWrites { path: p, .. } => Paths::One(p),
        };
        self.remove_where(
            paths,
            |k, f| !(spare_uploads && f.uploading) && target.matches(&k.path, f.header.write_version()),
            |m| target.matches(&m.path, m.write_version()),
        )
    }

    /// Removes fragments that no manifest commits and that have been idle —
    /// no cell appended, not finished — for `age`: leftovers of writers that
    /// died before `close`, and of writes that were superseded. An upload
    /// that keeps sending cells is never reclaimed, however long it takes.
    pub fn reclaim_uncommitted(&self, age: Duration) -> Result<DeleteStats> {
        let cutoff = SystemTime::now().checked_sub(age).unwrap_or(UNIX_EPOCH);
        let idle_uncommitted: Vec<FragmentKey> = {
            let st = lock(&self.state);
            st.fragments
                .iter()
                .filter(|(k, f)| f.last_active < cutoff && st.manifests.get(&k.path).map(|m| m.write_id) != Some(k.write_id))
                .map(|(k, _)| k.clone())
                .collect()
        };
        let mut stats = DeleteStats::default();
        for key in &idle_uncommitted {
            stats += self.drop_fragment(key)?;
        }
        Ok(stats)
    }

    /// Fault injection: forgets one fragment, as if its disk sector were gone.
    pub fn drop_fragment(&self, key: &FragmentKey) -> Result<DeleteStats> {
        self.remove_where(Paths::One(&key.path), |k, _| k == key, |_| false)
    }

    /// Fault injection: flips one byte of a stored cell (in memory or on disk).
    pub fn corrupt_cell(&self, key: &FragmentKey, stripe: u32) -> Result<()> {
        let mut st = lock(&self.state);
        let not_found = || Error::CellNotFound {
            path: key.path.to_string(),
            index: key.index as usize,
            stripe,
            node: self.node.clone(),
        };
        let f = st.fragments.get_mut(key).ok_or_else(not_found)?;
        let file = f.file.clone();
        let slot = f.cells.get_mut(stripe as usize).ok_or_else(not_found)?;
        match slot {
            CellSlot::Memory { bytes, .. } => {
                let mut v = bytes.to_vec();
                if let Some(b) = v.first_mut() {
                    *b ^= 0xff;
                }
                *bytes = Bytes::from(v);
            }
            CellSlot::Disk { offset, len, .. } => {
                if *len > 0 {
                    let file = self.open_file(&file.expect("disk cells always have a file"))?;
                    let mut b = [0u8; 1];
                    file.read_exact_at(&mut b, *offset)
                        .and_then(|_| file.write_all_at(&[b[0] ^ 0xff], *offset))
                        .map_err(|e| Error::io("corrupt cell", e))?;
                }
            }
        }
        Ok(())
    }

    /// Removes, among the fragments and manifests of `paths`, those `frag`
    /// and `manifest` select: their entries and their files.
    pub(crate) fn remove_where(
        &self,
        paths: Paths<'_>,
        frag: impl Fn(&FragmentKey, &Fragment) -> bool,
        manifest: impl Fn(&Manifest) -> bool,
    ) -> Result<DeleteStats> {
        let _io = lock(&self.manifest_io);
        let mut stats = DeleteStats::default();
        let mut files = Vec::new();
        {
            let mut st = lock(&self.state);
            let keys: Vec<FragmentKey> = st
                .fragments
                .range((Bound::Included(paths.first_key()), Bound::Unbounded))
                .take_while(|(k, _)| paths.contains(&k.path))
                .filter(|(k, f)| frag(k, f))
                .map(|(k, _)| k.clone())
                .collect();
            for k in keys {
                let f = st.fragments.remove(&k).unwrap();
                st.used -= f.bytes;
                stats.fragments += 1;
                stats.bytes += f.bytes;
                if let (Some(file), Some(disk)) = (f.file, self.disk()) {
                    disk.files.forget(file.id);
                    files.push(file.path);
                }
            }
            let removed: Vec<String> = st
                .manifests
                .range(paths.first_path().to_string()..)
                .take_while(|(p, _)| paths.contains(p))
                .filter(|(_, m)| manifest(m))
                .map(|(p, _)| p.clone())
                .collect();
            for p in removed {
                st.manifests.remove(&p);
                stats.manifests += 1;
                if let Some(disk) = self.disk() {
                    files.push(disk.root.join("manifests").join(format!("{}.manifest", path_hash(&p))));
                }
            }
        }
        for f in files {
            if let Err(e) = fs::remove_file(&f) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    return Err(Error::io(format!("node {}: remove {}", self.node, f.display()), e));
                }
            }
        }
        Ok(stats)
    }
}

/// The stored paths a removal looks at: a contiguous range of the store's
/// path-ordered maps.
#[derive(Clone, Copy)]
pub(crate) enum Paths<'a> {
    One(&'a str),
    Prefix(&'a str),
}

impl Paths<'_> {
    fn first_path(&self) -> &str {
        match self {
            Paths::One(p) | Paths::Prefix(p) => p,
        }
    }

    /// The smallest fragment key of the range (keys order by path first).
    fn first_key(&self) -> FragmentKey {
        FragmentKey { path: Arc::from(self.first_path()), write_id: 0, index: 0 }
    }

    fn contains(&self, path: &str) -> bool {
        match self {
            Paths::One(p) => path == *p,
            Paths::Prefix(p) => path.starts_with(p),
        }
    }
}
