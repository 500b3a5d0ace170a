//! What a client remembers of directories between calls to the directory
//! index (`crate::dir_index`): those it saw born and named, and those it
//! found it cannot bear. Bounded; both forget with time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Directories a client remembers as born or unbornable, at most; past it
/// the memory starts over (a forgotten directory costs one more read).
const MAX_KNOWN_DIRS: usize = 4096;
/// How long a client takes a directory it saw born and named for still
/// named: a directory's delete removes its name (and its subdirectories'),
/// and a client that remembers the directory does not name it again, so
/// another client's write into a directory deleted less than this ago can
/// leave it unnamed in its parent (NETWORK.md: Flink never writes into a
/// deleted checkpoint's directory).
const KNOWN_FOR: Duration = Duration::from_secs(30);
/// How long a directory found unbornable (objects below it, no settled
/// index: a base directory) is not tried again.
const UNBORNABLE_FOR: Duration = Duration::from_secs(60);

/// What a client remembers of directories between calls.
#[derive(Default)]
pub(crate) struct KnownDirs {
    inner: Mutex<Known>,
}

#[derive(Default)]
struct Known {
    /// Born and named in their parents (by this client, or their reads
    /// settled and this client named them), and when that was seen.
    born: HashMap<String, Instant>,
    /// Not bornable when last tried, and when.
    unbornable: HashMap<String, Instant>,
}

/// Remembers `dir` at `now` in `map`, which starts over past [`MAX_KNOWN_DIRS`].
fn remember(map: &mut HashMap<String, Instant>, dir: &str) {
    if map.len() >= MAX_KNOWN_DIRS {
        map.clear();
    }
    map.insert(dir.to_string(), Instant::now());
}

impl KnownDirs {
    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn is_born(&self, dir: &str) -> bool {
        self.lock().born.get(dir).is_some_and(|t| t.elapsed() < KNOWN_FOR)
    }

    pub(crate) fn born(&self, dir: &str) {
        let mut k = self.lock();
        k.unbornable.remove(dir);
        remember(&mut k.born, dir);
    }

    /// Forgets `dir` and everything below it (this client deleted it).
    pub(crate) fn forget_below(&self, dir: &str) {
        self.lock().born.retain(|d, _| !d.starts_with(dir));
    }

    pub(crate) fn unbornable_now(&self, dir: &str) -> bool {
        self.lock().unbornable.get(dir).is_some_and(|t| t.elapsed() < UNBORNABLE_FOR)
    }

    pub(crate) fn unbornable(&self, dir: &str) {
        remember(&mut self.lock().unbornable, dir);
    }
}

