//! The disk store's open fragment files: a least-recently-used set of at most
//! `max` handles, reopened on demand, so a node holding thousands of
//! fragments keeps a bounded number of file descriptors (they are the JVM's
//! too: Flink's sockets and RocksDB need them).

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::{Arc, Mutex};

use fragstate_core::error::{Error, Result};
use lru::LruCache;

use crate::lock;

/// How many fragment files a disk store keeps open for reads and resumed
/// appends unless told otherwise ([`crate::FragmentStore::with_max_open_files`]).
/// Uploads in progress hold their own file in addition, from
/// `begin_fragment` to `finish_fragment`.
pub const DEFAULT_MAX_OPEN_FILES: usize = 128;

/// Fragment files are keyed by a number the store gives each fragment file it
/// creates or loads, never reused: a handle cached for a file that was since
/// deleted (and perhaps created again under the same name) is never found.
pub(crate) struct OpenFiles {
    lru: Mutex<LruCache<u64, Arc<File>>>,
}

impl OpenFiles {
    pub(crate) fn new(max: usize) -> Self {
        OpenFiles { lru: Mutex::new(LruCache::new(max.max(1))) }
    }

    /// The open handle of file `id` at `path`, opened (read and write) if it
    /// is not; the least recently used one is closed to make room. A caller
    /// still using an evicted handle keeps it open until it lets go.
    pub(crate) fn get(&self, id: u64, path: &Path) -> Result<Arc<File>> {
        if let Some(f) = lock(&self.lru).get(&id) {
            return Ok(f.clone());
        }
        // Opened outside the lock: one slow open does not stall the other reads.
        let file = Arc::new(
            OpenOptions::new().read(true).write(true).open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?,
        );
        let mut lru = lock(&self.lru);
        if let Some(f) = lru.get(&id) {
            return Ok(f.clone());
        }
        lru.put(id, file.clone());
        Ok(file)
    }

    /// Closes file `id` (its fragment is gone).
    pub(crate) fn forget(&self, id: u64) {
        lock(&self.lru).pop(&id);
    }
}
