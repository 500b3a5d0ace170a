//! Store directories: the exclusive claim of one process on a directory
//! (`LOCK`), the `node-N` slots several processes on a host share, and the
//! small file-system helpers of the disk store.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use fragstate_core::error::{Error, Result};

const LOCK_FILE: &str = "LOCK";

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
        create_private_dir(dir)?;
        let path = dir.join(LOCK_FILE);
        let file = private_file()
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

/// Creates `dir` and its missing parents readable by the owner only (0700):
/// a store holds checkpointed state. A directory that exists keeps its mode.
pub fn create_private_dir(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io(format!("create store directory {}", dir.display()), e))
}

/// Options that create a file readable and writable by the owner only (0600).
pub fn private_file() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.mode(0o600);
    o
}

/// `File::create` for a file readable and writable by the owner only.
pub fn create_private(path: &Path) -> std::io::Result<File> {
    private_file().write(true).create(true).truncate(true).open(path)
}

pub(crate) fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(format!("fsync directory {}", dir.display()), e))
}

pub(crate) fn read_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).map_err(|e| Error::io(format!("list {}", dir.display()), e))? {
        out.push(e.map_err(|e| Error::io(format!("list {}", dir.display()), e))?.path());
    }
    out.sort();
    Ok(out)
}

