//! Removing fragments and manifests: deletes, reclaim of abandoned uploads,
//! and the fault injections of the tests.

use std::collections::HashMap;
use std::fs;
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
        self.remove_where(
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
            let committed: HashMap<&str, u128> = st.manifests.iter().map(|(p, m)| (p.as_str(), m.write_id)).collect();
            st.fragments
                .iter()
                .filter(|(k, f)| committed.get(&*k.path) != Some(&k.write_id) && f.last_active < cutoff)
                .map(|(k, _)| k.clone())
                .collect()
        };
        self.remove_where(|k, _| idle_uncommitted.contains(k), |_| false)
    }

    /// Fault injection: forgets one fragment, as if its disk sector were gone.
    pub fn drop_fragment(&self, key: &FragmentKey) -> Result<DeleteStats> {
        self.remove_where(|k, _| k == key, |_| false)
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

    pub(crate) fn remove_where(&self, frag: impl Fn(&FragmentKey, &Fragment) -> bool, manifest: impl Fn(&Manifest) -> bool) -> Result<DeleteStats> {
        let _io = lock(&self.manifest_io);
        let mut stats = DeleteStats::default();
        let mut files = Vec::new();
        {
            let mut st = lock(&self.state);
            let keys: Vec<FragmentKey> = st.fragments.iter().filter(|(k, f)| frag(k, f)).map(|(k, _)| k.clone()).collect();
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
            let paths: Vec<String> = st.manifests.values().filter(|m| manifest(m)).map(|m| m.path.clone()).collect();
            for p in paths {
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
