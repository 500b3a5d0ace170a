//! A node's fragment store: the cells and manifests it holds, in memory under
//! a byte budget or on disk under a directory that survives a restart.
//!
//! Both modes share one index (fragments by key, manifests by path, bytes
//! used); only where a cell's bytes live differs. Disk layout and fsync
//! policy are described in `FORMAT.md` ("Store directory"): one append-only
//! file per fragment (header envelope, then cell frames), one file per
//! manifest written by rename. Disk reads and writes happen outside the index
//! lock, so one slow file operation does not stall the other requests. A
//! disk store keeps at most [`DEFAULT_MAX_OPEN_FILES`] (or
//! [`FragmentStore::with_max_open_files`]) fragment files open for reads,
//! plus one per upload in progress, and its free bytes are the lesser of its
//! budget left and what its file system has left.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use bytes::Bytes;
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{self, FragmentHeader, Manifest, ObjectSummary};
use fragstate_core::ids::{FragmentKey, NodeId};
use fragstate_core::version::ManifestPut;
use xxhash_rust::xxh3::xxh3_128;

mod append;
mod dir;
#[cfg(test)]
mod disk_tests;
mod file;
mod handles;
mod manifest_index;
mod remove;
mod rewrite;
mod space;
#[cfg(test)]
mod tests;

pub use dir::{claim_slot, create_private, create_private_dir, private_file, DirLock};
pub use file::{scan_fragment_file, ScannedFragment};
pub use handles::DEFAULT_MAX_OPEN_FILES;
use dir::{fsync_dir, read_dir};
use file::load_fragment;
use handles::OpenFiles;
use manifest_index::Manifests;
use space::DiskSpace;

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
    /// Bytes the file system under a disk store has left (`statvfs` on the
    /// store directory, sampled about once a second); `None` in memory.
    pub disk_available: Option<u64>,
}

impl StoreUsage {
    /// What the store can still take: its budget left, and no more than its
    /// file system has left. Placement weighs nodes by it.
    pub fn free_bytes(&self) -> u64 {
        self.budget.saturating_sub(self.bytes).min(self.disk_available.unwrap_or(u64::MAX))
    }
}

enum Backend {
    Memory,
    Disk(Box<Disk>),
}

struct Disk {
    root: PathBuf,
    fsync: bool,
    _lock: DirLock,
    files: OpenFiles,
    space: DiskSpace,
    /// The id of the next fragment file created or loaded ([`FragmentFile::id`]).
    next_file: AtomicU64,
    /// Test hook: the next append writes only this many bytes, then fails
    /// as on a full disk.
    #[cfg(test)]
    short_write: Mutex<Option<usize>>,
}

/// A disk fragment's file.
#[derive(Clone)]
pub(crate) struct FragmentFile {
    /// Unique in this store, never reused: the key of its open handle.
    id: u64,
    path: PathBuf,
    /// The file's own handle while its upload is open (`begin_fragment` to
    /// `finish_fragment`); otherwise reads and appends take one from the
    /// store's bounded set of open files.
    writer: Option<Arc<File>>,
}

#[derive(Clone)]
pub(crate) enum CellSlot {
    Memory { checksum: u64, bytes: Bytes },
    Disk { checksum: u64, offset: u64, len: u32 },
}

impl CellSlot {
    /// A cell kept in memory, in an allocation of its own. A cell handed in
    /// is often a slice of a larger buffer (a writer's whole stripe of
    /// `(k + m) × cell_size` capacity, a received frame): keeping the slice
    /// would keep that whole buffer alive for as long as the cell is stored,
    /// so a store of small objects held many times its counted bytes.
    fn memory(checksum: u64, cell: &[u8]) -> Self {
        CellSlot::Memory { checksum, bytes: Bytes::copy_from_slice(cell) }
    }
}

pub(crate) struct Fragment {
    header: FragmentHeader,
    cells: Vec<CellSlot>,
    bytes: u64,
    /// The last append or finish (after a restart, the file's mtime):
    /// uncommitted fragments are reclaimed once idle for long enough.
    last_active: SystemTime,
    /// `None` in memory.
    file: Option<FragmentFile>,
    /// Next append offset in the file.
    end: u64,
    /// An append is writing after the last whole cell: no other append of
    /// this fragment may start until it is done or undone.
    appending: bool,
    /// Between `begin_fragment` and `finish_fragment` (false once loaded
    /// from disk: a restart ends every upload).
    uploading: bool,
}

#[derive(Default)]
struct State {
    /// In path order (`FragmentKey` orders by path first): a delete's paths are a range.
    fragments: BTreeMap<FragmentKey, Fragment>,
    manifests: Manifests,
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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
            create_private_dir(&d)?;
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
                private_file()
                    .write(true)
                    .create_new(true)
                    .open(&marker)
                    .and_then(|mut f| f.write_all(STORE_MARKER_CONTENT.as_bytes()))
                    .map_err(|e| Error::io(format!("write {}", marker.display()), e))?;
            }
            Err(e) => return Err(Error::io(format!("read {}", marker.display()), e)),
        }
        let store = FragmentStore {
            node,
            budget,
            backend: Backend::Disk(Box::new(Disk {
                root: root.clone(),
                fsync,
                _lock: lock,
                files: OpenFiles::new(DEFAULT_MAX_OPEN_FILES),
                space: DiskSpace::new(root.clone()),
                next_file: AtomicU64::new(0),
                #[cfg(test)]
                short_write: Mutex::new(None),
            })),
            state: Mutex::new(State::default()),
            manifest_io: Mutex::new(()),
        };
        store.load(&root)?;
        Ok(store)
    }

    /// Keeps at most `max` (at least 1) fragment files open for reads and
    /// resumed appends instead of [`DEFAULT_MAX_OPEN_FILES`]; uploads in
    /// progress hold their own file in addition. No effect in memory.
    pub fn with_max_open_files(mut self, max: usize) -> Self {
        if let Backend::Disk(d) = &mut self.backend {
            d.files = OpenFiles::new(max);
        }
        self
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    fn disk(&self) -> Option<&Disk> {
        match &self.backend {
            Backend::Memory => None,
            Backend::Disk(d) => Some(d.as_ref()),
        }
    }

    /// An open handle of a fragment's file: its upload's own while the upload
    /// is open, else one from the bounded set (reopened if it was closed).
    fn open_file(&self, file: &FragmentFile) -> Result<Arc<File>> {
        match (&file.writer, self.disk()) {
            (Some(w), _) => Ok(w.clone()),
            (None, Some(d)) => d.files.get(file.id, &file.path),
            (None, None) => unreachable!("fragment files exist in disk mode only"),
        }
    }

    fn load(&self, root: &Path) -> Result<()> {
        let next_file = &self.disk().expect("loading a disk store").next_file;
        let mut st = lock(&self.state);
        for entry in read_dir(&root.join("manifests"))? {
            if entry.extension().is_some_and(|e| e == "manifest") {
                match fs::read(&entry).map_err(|e| Error::io(format!("read {}", entry.display()), e)).and_then(|b| format::decode_manifest(&b)) {
                    Ok(m) => {
                        st.manifests.insert(Arc::new(m));
                    }
                    Err(e) => tracing::warn!(file = %entry.display(), error = %e, "skipping unreadable manifest"),
                }
            }
        }
        for entry in read_dir(&root.join("fragments"))? {
            if entry.extension().is_some_and(|e| e == "frag") {
                match load_fragment(&entry, next_file.fetch_add(1, Ordering::Relaxed)) {
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
        let (file, end) = match self.disk() {
            None => (None, 0),
            Some(d) => {
                let p = d
                    .root
                    .join("fragments")
                    .join(format!("{}-{:032x}-{:02}.frag", path_hash(&header.path), header.write_id, header.index));
                let bytes = format::encode_fragment_header(header);
                let f = private_file()
                    .create(true)
                    .truncate(true)
                    .read(true)
                    .write(true)
                    .open(&p)
                    .map_err(|e| Error::io(format!("create {}", p.display()), e))?;
                if let Err(e) = f.write_all_at(&bytes, 0) {
                    let _ = fs::remove_file(&p);
                    return Err(Error::io(format!("write {}", p.display()), e));
                }
                let id = d.next_file.fetch_add(1, Ordering::Relaxed);
                (Some(FragmentFile { id, path: p, writer: Some(Arc::new(f)) }), bytes.len() as u64)
            }
        };
        let fragment =
            Fragment { header: header.clone(), cells: Vec::new(), bytes: 0, last_active: SystemTime::now(), file, end, appending: false, uploading: true };
        st.fragments.insert(key.clone(), fragment);
        drop(st);
        // The new file's directory entry: without it a power loss could lose
        // the file whose cells were synced and acknowledged.
        if let Some(Disk { root, fsync: true, .. }) = self.disk() {
            if let Err(e) = fsync_dir(&root.join("fragments")) {
                self.drop_fragment(&key)?;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Makes the fragment durable (fsync in disk mode) and ends its upload:
    /// its file is closed, reopened on demand by reads.
    pub fn finish_fragment(&self, key: &FragmentKey) -> Result<()> {
        let file = {
            let mut st = lock(&self.state);
            let f = st.fragments.get_mut(key).ok_or_else(|| Error::InvalidState {
                path: key.path.to_string(),
                reason: format!("fragment {} not started on node {}", key.index, self.node),
            })?;
            f.last_active = SystemTime::now();
            f.uploading = false;
            f.file.as_mut().map(|file| FragmentFile { writer: file.writer.take(), ..file.clone() })
        };
        if let (Some(file), Some(Disk { fsync: true, .. })) = (file, self.disk()) {
            self.open_file(&file)?.sync_data().map_err(|e| Error::io(format!("fsync {}", file.path.display()), e))?;
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
                self.open_file(&file)?
                    .read_exact_at(&mut buf, offset)
                    .map_err(|e| Error::io(format!("node {}: read {} fragment {} stripe {stripe}", self.node, key.path, key.index), e))?;
                Ok(Bytes::from(buf))
            }
            (CellSlot::Disk { .. }, None) => unreachable!("disk cells always have a file"),
        }
    }

    /// Stores a manifest unless a newer copy (see [`Manifest::version_key`]) is already held.
    /// Stores `m` unless this node holds a newer copy of its path (a newer
    /// write, or a later revision of the same write): then the newer copy
    /// stays and the answer names it, so the writer knows it lost.
    pub fn put_manifest(&self, m: Arc<Manifest>) -> Result<ManifestPut> {
        let _io = lock(&self.manifest_io);
        if let Some(old) = lock(&self.state).manifests.get(&m.path) {
            if old.version_key() > m.version_key() {
                return Ok(ManifestPut::KeptNewer(old.write_version()));
            }
        }
        if let Some(Disk { root, fsync, .. }) = self.disk() {
            let dir = root.join("manifests");
            let name = format!("{}.manifest", path_hash(&m.path));
            let tmp = dir.join(format!("{name}.tmp"));
            let dst = dir.join(&name);
            let bytes = format::encode_manifest(&m);
            let write = || -> std::io::Result<()> {
                let f = create_private(&tmp)?;
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
        lock(&self.state).manifests.insert(m);
        Ok(ManifestPut::Stored)
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

    /// Every node that a held manifest names as a holder (repair looks for
    /// the lost ones among them).
    pub fn holders_named(&self) -> Vec<NodeId> {
        lock(&self.state).manifests.holders().cloned().collect()
    }

    /// The held manifests that name `holder`, in path order.
    pub fn manifests_naming(&self, holder: &NodeId) -> Vec<Arc<Manifest>> {
        lock(&self.state).manifests.naming(holder).cloned().collect()
    }

    pub fn usage(&self) -> StoreUsage {
        let space = self.disk().map(|d| d.space.sample(lock(&self.state).used));
        let st = lock(&self.state);
        StoreUsage {
            fragments: st.fragments.len() as u64,
            cells: st.fragments.values().map(|f| f.cells.len() as u64).sum(),
            bytes: st.used,
            manifests: st.manifests.len() as u64,
            budget: self.budget,
            disk_available: space.map(|s| s.left(st.used)),
        }
    }

    /// Keys of the fragments held, in order (for repair scans and tests).
    pub fn fragment_keys(&self) -> Vec<FragmentKey> {
        lock(&self.state).fragments.keys().cloned().collect()
    }
}
