//! A node's fragment store: the cells and manifests it holds, in memory under
//! a byte budget or on disk under a directory that survives a restart.
//!
//! Both modes share one index (fragments by key, manifests by path, bytes
//! used); only where a cell's bytes live differs. Disk layout and fsync
//! policy are described in `FORMAT.md` ("Store directory"): one append-only
//! file per fragment (header envelope, then cell frames), one file per
//! manifest written by rename. Disk reads and writes happen outside the index
//! lock, so one slow file operation does not stall the other requests.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{self, CellFrame, FragmentHeader, Manifest, ObjectSummary, CELL_FRAME_HEADER_LEN};
use fragstate_core::ids::FragmentKey;
use xxhash_rust::xxh3::xxh3_128;

mod dir;
mod file;
#[cfg(test)]
mod tests;

pub use dir::{claim_slot, DirLock};
pub use file::{scan_fragment_file, ScannedFragment};
use dir::{fsync_dir, read_dir};
use file::load_fragment;

const STORE_MARKER: &str = "FRAGSTATE-STORE";
const STORE_MARKER_CONTENT: &str = "fragstate store, layout 1\n";

/// What a store holds, for stats and placement weights.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreUsage {
    pub fragments: u64,
    pub cells: u64,
    pub bytes: u64,
    pub manifests: u64,
    /// `u64::MAX` when unlimited.
    pub budget: u64,
}

impl StoreUsage {
    pub fn free_bytes(&self) -> u64 {
        self.budget.saturating_sub(self.bytes)
    }
}

#[derive(Debug)]
enum Backend {
    Memory,
    Disk { root: PathBuf, fsync: bool, _lock: DirLock },
}

#[derive(Clone)]
pub(crate) enum CellSlot {
    Memory { checksum: u64, bytes: Bytes },
    Disk { checksum: u64, offset: u64, len: u32 },
}

pub(crate) struct Fragment {
    header: FragmentHeader,
    cells: Vec<CellSlot>,
    bytes: u64,
    created: SystemTime,
    file: Option<Arc<File>>,
    file_path: Option<PathBuf>,
    /// Next append offset in the file.
    end: u64,
}

#[derive(Default)]
struct State {
    fragments: HashMap<FragmentKey, Fragment>,
    manifests: BTreeMap<String, Arc<Manifest>>,
    used: u64,
}

pub struct FragmentStore {
    node: String,
    budget: u64,
    backend: Backend,
    state: Mutex<State>,
    /// Serializes manifest replacement (decide, write file, publish).
    manifest_io: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves consistent maps behind (every
    // update is a single insert or remove), so poisoning is not fatal.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn path_hash(path: &str) -> String {
    format!("{:032x}", xxh3_128(path.as_bytes()))
}

impl FragmentStore {
    /// A store that keeps cells in memory, refusing cells beyond `budget` bytes.
    pub fn in_memory(node: impl Into<String>, budget: u64) -> Self {
        FragmentStore {
            node: node.into(),
            budget,
            backend: Backend::Memory,
            state: Mutex::new(State::default()),
            manifest_io: Mutex::new(()),
        }
    }

    /// Opens (or creates) a disk store under `root`, locked against other
    /// processes ([`DirLock`]), and loads its index. With `fsync`, a fragment
    /// is synced before it is acknowledged and a manifest before it replaces
    /// the previous one.
    pub fn open_dir(node: impl Into<String>, root: &Path, budget: u64, fsync: bool) -> Result<Self> {
        Self::open_claimed(node, DirLock::acquire(root)?, budget, fsync)
    }

    /// [`Self::open_dir`] on a directory this process has already locked.
    pub fn open_claimed(node: impl Into<String>, lock: DirLock, budget: u64, fsync: bool) -> Result<Self> {
        let node = node.into();
        let root = lock.dir().to_path_buf();
        for sub in ["fragments", "manifests"] {
            let d = root.join(sub);
            fs::create_dir_all(&d).map_err(|e| Error::io(format!("create store directory {}", d.display()), e))?;
        }
        let marker = root.join(STORE_MARKER);
        match fs::read_to_string(&marker) {
            Ok(s) if s == STORE_MARKER_CONTENT => {}
            Ok(s) => {
                return Err(Error::format(
                    format!("store {}", root.display()),
                    format!("unknown layout marker {:?} (this build reads {:?})", s.trim(), STORE_MARKER_CONTENT.trim()),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::write(&marker, STORE_MARKER_CONTENT).map_err(|e| Error::io(format!("write {}", marker.display()), e))?;
            }
            Err(e) => return Err(Error::io(format!("read {}", marker.display()), e)),
        }
        let store = FragmentStore {
            node,
            budget,
            backend: Backend::Disk { root: root.clone(), fsync, _lock: lock },
            state: Mutex::new(State::default()),
            manifest_io: Mutex::new(()),
        };
        store.load(&root)?;
        Ok(store)
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    fn load(&self, root: &Path) -> Result<()> {
        let mut st = lock(&self.state);
        for entry in read_dir(&root.join("manifests"))? {
            if entry.extension().is_some_and(|e| e == "manifest") {
                match fs::read(&entry).map_err(|e| Error::io(format!("read {}", entry.display()), e)).and_then(|b| format::decode_manifest(&b)) {
                    Ok(m) => {
                        st.manifests.insert(m.path.clone(), Arc::new(m));
                    }
                    Err(e) => tracing::warn!(file = %entry.display(), error = %e, "skipping unreadable manifest"),
                }
            }
        }
        for entry in read_dir(&root.join("fragments"))? {
            if entry.extension().is_some_and(|e| e == "frag") {
                match load_fragment(&entry) {
                    Ok(f) => {
                        st.used += f.bytes;
                        st.fragments.insert(f.header.key(), f);
                    }
                    Err(e) => tracing::warn!(file = %entry.display(), error = %e, "skipping unreadable fragment"),
                }
            }
        }
        tracing::info!(
            node = %self.node,
            dir = %root.display(),
            fragments = st.fragments.len(),
            manifests = st.manifests.len(),
            bytes = st.used,
            "fragment store loaded"
        );
        Ok(())
    }

    /// Starts a fragment. Starting one that exists with no cells yet is a no-op
    /// (a retried open); one that already has cells is an error.
    pub fn begin_fragment(&self, header: &FragmentHeader) -> Result<()> {
        header.params.validate()?;
        let key = header.key();
        let mut st = lock(&self.state);
        if let Some(f) = st.fragments.get(&key) {
            if f.cells.is_empty() {
                return Ok(());
            }
            return Err(Error::InvalidState {
                path: header.path.clone(),
                reason: format!("fragment {} of write {:x} already started on node {}", header.index, header.write_id, self.node),
            });
        }
        let (file, file_path, end) = match &self.backend {
            Backend::Memory => (None, None, 0),
            Backend::Disk { root, .. } => {
                let p = root
                    .join("fragments")
                    .join(format!("{}-{:032x}-{:02}.frag", path_hash(&header.path), header.write_id, header.index));
                let bytes = format::encode_fragment_header(header);
                let f = OpenOptions::new()
                    .create(true)
                    .truncate(true)
                    .read(true)
                    .write(true)
                    .open(&p)
                    .map_err(|e| Error::io(format!("create {}", p.display()), e))?;
                f.write_all_at(&bytes, 0).map_err(|e| Error::io(format!("write {}", p.display()), e))?;
                (Some(Arc::new(f)), Some(p), bytes.len() as u64)
            }
        };
        st.fragments.insert(
            key,
            Fragment { header: header.clone(), cells: Vec::new(), bytes: 0, created: SystemTime::now(), file, file_path, end },
        );
        Ok(())
    }

    /// Appends the cell of `stripe` (stripes arrive in order; re-sending the
    /// last cell with the same checksum is accepted as a retry).
    pub fn append_cell(&self, key: &FragmentKey, stripe: u32, checksum: u64, cell: Bytes) -> Result<()> {
        let len = cell.len() as u64;
        let (file, offset) = {
            let mut st = lock(&self.state);
            let used = st.used;
            let f = st.fragments.get_mut(key).ok_or_else(|| Error::InvalidState {
                path: key.path.to_string(),
                reason: format!("fragment {} not started on node {}", key.index, self.node),
            })?;
            let have = f.cells.len() as u32;
            if stripe < have {
                let prev = match &f.cells[stripe as usize] {
                    CellSlot::Memory { checksum, .. } | CellSlot::Disk { checksum, .. } => *checksum,
                };
                if prev == checksum {
                    return Ok(());
                }
            }
            if stripe != have {
                return Err(Error::InvalidState {
                    path: key.path.to_string(),
                    reason: format!("fragment {}: cell of stripe {stripe} arrived, expected stripe {have}", key.index),
                });
            }
            if len > f.header.params.cell_size() as u64 {
                return Err(Error::format(
                    format!("{} fragment {}", key.path, key.index),
                    format!("cell of {len} bytes exceeds the cell size {}", f.header.params.cell_size()),
                ));
            }
            if used.saturating_add(len) > self.budget {
                return Err(Error::StoreFull { node: self.node.clone(), budget: self.budget, used, requested: len });
            }
            match &f.file {
                None => {
                    f.cells.push(CellSlot::Memory { checksum, bytes: cell });
                    f.bytes += len;
                    st.used += len;
                    return Ok(());
                }
                Some(file) => {
                    let file = file.clone();
                    let offset = f.end;
                    f.end += CELL_FRAME_HEADER_LEN as u64 + len;
                    f.bytes += len;
                    st.used += len;
                    (file, offset)
                }
            }
        };
        let frame = CellFrame { stripe, len: len as u32, checksum }.encode();
        let written = file
            .write_all_at(&frame, offset)
            .and_then(|_| file.write_all_at(&cell, offset + CELL_FRAME_HEADER_LEN as u64));
        let mut st = lock(&self.state);
        match written {
            Ok(()) => {
                if let Some(f) = st.fragments.get_mut(key) {
                    f.cells.push(CellSlot::Disk { checksum, offset: offset + CELL_FRAME_HEADER_LEN as u64, len: len as u32 });
                }
                Ok(())
            }
            Err(e) => {
                // The fragment is unusable from here on: the writer re-places it.
                if let Some(f) = st.fragments.remove(key) {
                    st.used -= f.bytes;
                }
                Err(Error::io(format!("node {}: append to {} fragment {}", self.node, key.path, key.index), e))
            }
        }
    }

    /// Makes the fragment durable (fsync in disk mode).
    pub fn finish_fragment(&self, key: &FragmentKey) -> Result<()> {
        let (file, path) = {
            let st = lock(&self.state);
            let f = st.fragments.get(key).ok_or_else(|| Error::InvalidState {
                path: key.path.to_string(),
                reason: format!("fragment {} not started on node {}", key.index, self.node),
            })?;
            (f.file.clone(), f.file_path.clone())
        };
        if let (Some(file), Some(path), Backend::Disk { fsync: true, .. }) = (file, path, &self.backend) {
            file.sync_data().map_err(|e| Error::io(format!("fsync {}", path.display()), e))?;
        }
        Ok(())
    }

    pub fn get_cell(&self, key: &FragmentKey, stripe: u32) -> Result<Bytes> {
        let (slot, file) = {
            let st = lock(&self.state);
            let f = st.fragments.get(key).and_then(|f| f.cells.get(stripe as usize).map(|c| (c.clone(), f.file.clone())));
            f.ok_or_else(|| Error::CellNotFound {
                path: key.path.to_string(),
                index: key.index as usize,
                stripe,
                node: self.node.clone(),
            })?
        };
        match (slot, file) {
            (CellSlot::Memory { bytes, .. }, _) => Ok(bytes),
            (CellSlot::Disk { offset, len, .. }, Some(file)) => {
                let mut buf = vec![0u8; len as usize];
                file.read_exact_at(&mut buf, offset)
                    .map_err(|e| Error::io(format!("node {}: read {} fragment {} stripe {stripe}", self.node, key.path, key.index), e))?;
                Ok(Bytes::from(buf))
            }
            (CellSlot::Disk { .. }, None) => unreachable!("disk cells always have a file"),
        }
    }

    /// Stores a manifest unless a newer copy (see [`Manifest::version_key`]) is already held.
    pub fn put_manifest(&self, m: Arc<Manifest>) -> Result<()> {
        let _io = lock(&self.manifest_io);
        if let Some(old) = lock(&self.state).manifests.get(&m.path) {
            if old.version_key() > m.version_key() {
                return Ok(());
            }
        }
        if let Backend::Disk { root, fsync, .. } = &self.backend {
            let dir = root.join("manifests");
            let name = format!("{}.manifest", path_hash(&m.path));
            let tmp = dir.join(format!("{name}.tmp"));
            let dst = dir.join(&name);
            let bytes = format::encode_manifest(&m);
            let write = || -> std::io::Result<()> {
                let f = File::create(&tmp)?;
                f.write_all_at(&bytes, 0)?;
                if *fsync {
                    f.sync_all()?;
                }
                fs::rename(&tmp, &dst)
            };
            write().map_err(|e| Error::io(format!("node {}: write manifest {}", self.node, dst.display()), e))?;
            if *fsync {
                fsync_dir(&dir)?;
            }
        }
        lock(&self.state).manifests.insert(m.path.clone(), m);
        Ok(())
    }

    pub fn get_manifest(&self, path: &str) -> Option<Arc<Manifest>> {
        lock(&self.state).manifests.get(path).cloned()
    }

    /// Committed objects whose path starts with `prefix`, in path order.
    pub fn list(&self, prefix: &str) -> Vec<ObjectSummary> {
        let st = lock(&self.state);
        st.manifests
            .range(prefix.to_string()..)
            .take_while(|(p, _)| p.starts_with(prefix))
            .map(|(_, m)| m.summary())
            .collect()
    }

    pub fn delete(&self, target: &DeleteTarget) -> Result<DeleteStats> {
        self.remove_where(|k| target.matches(&k.path, k.write_id), |m| target.matches(&m.path, m.write_id))
    }

    /// Removes fragments that no manifest commits and that are older than
    /// `age`: leftovers of writers that died before `close`, and of writes
    /// that were superseded.
    pub fn reclaim_uncommitted(&self, age: Duration) -> Result<DeleteStats> {
        let cutoff = SystemTime::now().checked_sub(age).unwrap_or(UNIX_EPOCH);
        let committed: HashMap<String, u128> = {
            let st = lock(&self.state);
            st.manifests.iter().map(|(p, m)| (p.clone(), m.write_id)).collect()
        };
        let old_uncommitted: Vec<FragmentKey> = {
            let st = lock(&self.state);
            st.fragments
                .iter()
                .filter(|(k, f)| committed.get(&*k.path) != Some(&k.write_id) && f.created < cutoff)
                .map(|(k, _)| k.clone())
                .collect()
        };
        self.remove_where(|k| old_uncommitted.contains(k), |_| false)
    }

    /// Fault injection: forgets one fragment, as if its disk sector were gone.
    pub fn drop_fragment(&self, key: &FragmentKey) -> Result<DeleteStats> {
        self.remove_where(|k| k == key, |_| false)
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
                    let file = file.expect("disk cells always have a file");
                    let mut b = [0u8; 1];
                    file.read_exact_at(&mut b, *offset).and_then(|_| file.write_all_at(&[b[0] ^ 0xff], *offset))
                        .map_err(|e| Error::io("corrupt cell", e))?;
                }
            }
        }
        Ok(())
    }

    pub fn usage(&self) -> StoreUsage {
        let st = lock(&self.state);
        StoreUsage {
            fragments: st.fragments.len() as u64,
            cells: st.fragments.values().map(|f| f.cells.len() as u64).sum(),
            bytes: st.used,
            manifests: st.manifests.len() as u64,
            budget: self.budget,
        }
    }

    /// Keys of the fragments held (for repair scans and tests).
    pub fn fragment_keys(&self) -> Vec<FragmentKey> {
        let mut v: Vec<_> = lock(&self.state).fragments.keys().cloned().collect();
        v.sort();
        v
    }

    fn remove_where(&self, frag: impl Fn(&FragmentKey) -> bool, manifest: impl Fn(&Manifest) -> bool) -> Result<DeleteStats> {
        let _io = lock(&self.manifest_io);
        let mut stats = DeleteStats::default();
        let mut files = Vec::new();
        {
            let mut st = lock(&self.state);
            let keys: Vec<FragmentKey> = st.fragments.keys().filter(|k| frag(k)).cloned().collect();
            for k in keys {
                let f = st.fragments.remove(&k).unwrap();
                st.used -= f.bytes;
                stats.fragments += 1;
                stats.bytes += f.bytes;
                files.extend(f.file_path);
            }
            let paths: Vec<String> = st.manifests.values().filter(|m| manifest(m)).map(|m| m.path.clone()).collect();
            for p in paths {
                st.manifests.remove(&p);
                stats.manifests += 1;
                if let Backend::Disk { root, .. } = &self.backend {
                    files.push(root.join("manifests").join(format!("{}.manifest", path_hash(&p))));
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

