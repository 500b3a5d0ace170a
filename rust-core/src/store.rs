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
use xxhash_rust::xxh3::xxh3_128;

use crate::error::{Error, Result};
use crate::format::{
    self, CellFrame, FragmentHeader, FragmentKey, Manifest, ObjectSummary, CELL_FRAME_HEADER_LEN, ENVELOPE_PREFIX_LEN,
    FRAGMENT_MAGIC,
};
use crate::transport::{DeleteStats, DeleteTarget};

const STORE_MARKER: &str = "FRAGSTATE-STORE";
const LOCK_FILE: &str = "LOCK";
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

/// An exclusive claim on a store directory: an advisory lock (`flock`) on
/// `DIR/LOCK`, released when dropped or when the process ends, also by
/// `kill -9`. Two processes never open one store.
#[derive(Debug)]
pub struct DirLock {
    dir: PathBuf,
    _file: File,
}

impl DirLock {
    /// Creates `dir` if needed and locks it; [`Error::StoreInUse`] if another
    /// holder has it.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        fs::create_dir_all(dir).map_err(|e| Error::io(format!("create store directory {}", dir.display()), e))?;
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(format!("open {}", path.display()), e))?;
        match file.try_lock() {
            Ok(()) => Ok(DirLock { dir: dir.to_path_buf(), _file: file }),
            Err(fs::TryLockError::WouldBlock) => Err(Error::StoreInUse { dir: dir.display().to_string() }),
            Err(fs::TryLockError::Error(e)) => Err(Error::io(format!("lock {}", path.display()), e)),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The first `PARENT/node-N` (N < `slots`) that no other process holds: how
/// several processes on one host share one configured store directory. A
/// process restarted on the host takes over a free slot with the fragments
/// (and, for network nodes, the identity) it holds.
pub fn claim_slot(parent: &Path, slots: usize) -> Result<DirLock> {
    for i in 0..slots {
        match DirLock::acquire(&parent.join(format!("node-{i}"))) {
            Err(Error::StoreInUse { .. }) => continue,
            claimed => return claimed,
        }
    }
    Err(Error::invalid(
        "store directory",
        parent.display(),
        format!("a directory with a free node-N slot; all {slots} are held by running processes"),
    ))
}

#[derive(Clone)]
enum CellSlot {
    Memory { checksum: u64, bytes: Bytes },
    Disk { checksum: u64, offset: u64, len: u32 },
}

struct Fragment {
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

fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(format!("fsync directory {}", dir.display()), e))
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

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).map_err(|e| Error::io(format!("list {}", dir.display()), e))? {
        out.push(e.map_err(|e| Error::io(format!("list {}", dir.display()), e))?.path());
    }
    out.sort();
    Ok(out)
}

/// A fragment file as found on disk: its header and the cells that are whole.
pub struct ScannedFragment {
    pub header: FragmentHeader,
    /// Offset of each cell's bytes and its frame, stripe order.
    pub cells: Vec<(u64, CellFrame)>,
    /// End of the last whole frame; bytes after it are a torn append.
    pub end: u64,
    pub file_len: u64,
}

/// Reads a fragment file's header and frame index (not the cell bytes).
pub fn scan_fragment_file(file: &File, path: &Path) -> Result<ScannedFragment> {
    let ctx = |e| Error::io(format!("read {}", path.display()), e);
    let file_len = file.metadata().map_err(ctx)?.len();
    let mut prefix = [0u8; ENVELOPE_PREFIX_LEN];
    let got = file.read_at(&mut prefix, 0).map_err(ctx)?;
    let header_len = format::envelope_len(FRAGMENT_MAGIC, "fragment header", &prefix[..got])?;
    if header_len as u64 > file_len {
        return Err(Error::format(format!("fragment file {}", path.display()), format!("truncated header: {file_len} of {header_len} bytes")));
    }
    let mut header_bytes = vec![0u8; header_len];
    file.read_exact_at(&mut header_bytes, 0).map_err(ctx)?;
    let header = format::decode_fragment_header(&header_bytes)?;
    let cell_size = header.params.cell_size() as u32;
    let mut cells = Vec::new();
    let mut pos = header_len as u64;
    let mut frame_buf = [0u8; CELL_FRAME_HEADER_LEN];
    while pos + CELL_FRAME_HEADER_LEN as u64 <= file_len {
        file.read_exact_at(&mut frame_buf, pos).map_err(ctx)?;
        let frame = match CellFrame::decode(&frame_buf, cell_size) {
            Ok(f) if f.stripe == cells.len() as u32 => f,
            _ => break,
        };
        let data_at = pos + CELL_FRAME_HEADER_LEN as u64;
        if data_at + frame.len as u64 > file_len {
            break;
        }
        cells.push((data_at, frame));
        pos = data_at + frame.len as u64;
    }
    Ok(ScannedFragment { header, cells, end: pos, file_len })
}

/// Loads a fragment into the index. A torn last frame (the process died
/// mid-append) is cut off; everything before it is kept.
fn load_fragment(path: &Path) -> Result<Fragment> {
    let ctx = |e| Error::io(format!("open {}", path.display()), e);
    let file = OpenOptions::new().read(true).write(true).open(path).map_err(ctx)?;
    let scan = scan_fragment_file(&file, path)?;
    if scan.end < scan.file_len {
        tracing::warn!(file = %path.display(), kept_cells = scan.cells.len(), cut_bytes = scan.file_len - scan.end, "cutting a torn fragment tail");
        file.set_len(scan.end).map_err(ctx)?;
    }
    let bytes = scan.cells.iter().map(|(_, f)| f.len as u64).sum();
    let cells = scan.cells.iter().map(|&(offset, f)| CellSlot::Disk { checksum: f.checksum, offset, len: f.len }).collect();
    let created = file.metadata().and_then(|m| m.modified()).unwrap_or_else(|_| SystemTime::now());
    Ok(Fragment { header: scan.header, cells, bytes, created, file: Some(Arc::new(file)), file_path: Some(path.to_path_buf()), end: scan.end })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{CodingParams, Compression};

    #[test]
    fn a_store_directory_has_one_owner_and_slots_go_to_the_next_process() {
        let parent = tempfile::tempdir().unwrap();
        let a = FragmentStore::open_dir("a", &parent.path().join("x"), u64::MAX, false).unwrap();
        let e = FragmentStore::open_dir("b", &parent.path().join("x"), u64::MAX, false).err().unwrap();
        assert!(matches!(e, Error::StoreInUse { .. }), "{e}");
        assert!(e.to_string().contains("is in use by another process"), "{e}");
        drop(a);
        let _a_again = FragmentStore::open_dir("a", &parent.path().join("x"), u64::MAX, false).unwrap();

        let first = claim_slot(parent.path(), 2).unwrap();
        let second = claim_slot(parent.path(), 2).unwrap();
        assert_eq!(first.dir(), parent.path().join("node-0"));
        assert_eq!(second.dir(), parent.path().join("node-1"));
        let e = claim_slot(parent.path(), 2).unwrap_err().to_string();
        assert!(e.contains("all 2 are held by running processes"), "{e}");
        // A slot freed by its process (or by kill -9) goes to the next claimant.
        drop(first);
        assert_eq!(claim_slot(parent.path(), 2).unwrap().dir(), parent.path().join("node-0"));
    }

    fn header(path: &str, index: u8) -> FragmentHeader {
        FragmentHeader {
            path: path.into(),
            write_id: 42,
            index,
            params: CodingParams::new(2, 1, 4096, Compression::None).unwrap(),
            created_unix_ms: 0,
        }
    }

    fn fill(store: &FragmentStore, path: &str, cells: u32) -> FragmentKey {
        let h = header(path, 0);
        store.begin_fragment(&h).unwrap();
        for s in 0..cells {
            let cell = Bytes::from(vec![s as u8; 100]);
            store.append_cell(&h.key(), s, format::cell_checksum(&cell), cell).unwrap();
        }
        store.finish_fragment(&h.key()).unwrap();
        h.key()
    }

    #[test]
    fn budget_refuses_with_numbers() {
        let store = FragmentStore::in_memory("n0", 250);
        let h = header("p", 0);
        store.begin_fragment(&h).unwrap();
        store.append_cell(&h.key(), 0, 0, Bytes::from(vec![0; 100])).unwrap();
        store.append_cell(&h.key(), 1, 0, Bytes::from(vec![0; 100])).unwrap();
        let e = store.append_cell(&h.key(), 2, 0, Bytes::from(vec![0; 100])).unwrap_err().to_string();
        assert_eq!(e, "node n0: store full: 200 of 250 bytes used, 100 more requested");
        assert_eq!(store.usage().bytes, 200);
    }

    #[test]
    fn cells_must_arrive_in_order_and_retries_are_idempotent() {
        let store = FragmentStore::in_memory("n0", u64::MAX);
        let h = header("p", 0);
        store.begin_fragment(&h).unwrap();
        let e = store.append_cell(&h.key(), 1, 0, Bytes::from_static(b"x")).unwrap_err().to_string();
        assert!(e.contains("expected stripe 0"), "{e}");
        store.append_cell(&h.key(), 0, 7, Bytes::from_static(b"x")).unwrap();
        store.append_cell(&h.key(), 0, 7, Bytes::from_static(b"x")).unwrap();
        assert_eq!(store.usage().cells, 1);
        let e = store.append_cell(&h.key(), 0, 8, Bytes::from_static(b"y")).unwrap_err().to_string();
        assert!(e.contains("expected stripe 1"), "{e}");
    }

    #[test]
    fn disk_store_survives_reopen_and_cuts_torn_tails() {
        let dir = tempfile::tempdir().unwrap();
        let key = {
            let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
            let key = fill(&store, "fragstate://c/j/chk-1/a", 3);
            let m = Manifest {
                path: "fragstate://c/j/chk-1/a".into(),
                write_id: 42,
                revision: 0,
                length: 0,
                params: CodingParams::new(2, 1, 4096, Compression::None).unwrap(),
                holders: vec!["a".into(), "b".into(), "c".into()],
                stripes: vec![],
                created_unix_ms: 1,
                writer: "t".into(),
            };
            store.put_manifest(Arc::new(m)).unwrap();
            key
        };
        // Simulate a crash in the middle of appending a fourth cell.
        let file = fs::read_dir(dir.path().join("fragments")).unwrap().next().unwrap().unwrap().path();
        let mut f = OpenOptions::new().append(true).open(&file).unwrap();
        std::io::Write::write_all(&mut f, &CellFrame { stripe: 3, len: 100, checksum: 0 }.encode()).unwrap();
        std::io::Write::write_all(&mut f, &[1u8; 40]).unwrap();
        drop(f);
        let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
        let u = store.usage();
        assert_eq!((u.fragments, u.cells, u.bytes, u.manifests), (1, 3, 300, 1));
        assert_eq!(store.get_cell(&key, 2).unwrap(), vec![2u8; 100]);
        assert!(store.get_cell(&key, 3).is_err());
        assert_eq!(store.list("fragstate://c/j/").len(), 1);
        // Appending continues after the cut tail.
        let cell = Bytes::from(vec![9u8; 100]);
        store.append_cell(&key, 3, format::cell_checksum(&cell), cell).unwrap();
        drop(store);
        let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
        assert_eq!(store.get_cell(&key, 3).unwrap(), vec![9u8; 100]);
    }

    #[test]
    fn delete_by_prefix_and_reclaim() {
        let dir = tempfile::tempdir().unwrap();
        let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, false).unwrap();
        fill(&store, "job/chk-1/a", 2);
        fill(&store, "job/chk-10/a", 2);
        fill(&store, "job/chk-2/a", 2);
        let st = store.delete(&DeleteTarget::Prefix("job/chk-1/".into())).unwrap();
        assert_eq!((st.fragments, st.bytes), (1, 200));
        assert_eq!(store.usage().fragments, 2);
        assert_eq!(fs::read_dir(dir.path().join("fragments")).unwrap().count(), 2);
        // Uncommitted fragments are reclaimed only once old enough.
        assert_eq!(store.reclaim_uncommitted(Duration::from_secs(3600)).unwrap().fragments, 0);
        assert_eq!(store.reclaim_uncommitted(Duration::ZERO).unwrap().fragments, 2);
        assert_eq!(store.usage(), StoreUsage { budget: u64::MAX, ..Default::default() });
    }

    #[test]
    fn unknown_layout_marker_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(STORE_MARKER), "something else").unwrap();
        let e = FragmentStore::open_dir("n0", dir.path(), u64::MAX, false).err().unwrap().to_string();
        assert!(e.contains("unknown layout marker"), "{e}");
    }
}
