//! What a client remembers of directories between calls to the directory
//! index (`crate::dir_index`): those it saw born and named, and those it
//! rebuilt (or tried to) lately. Bounded; both forget with time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Directories a client remembers as born or rebuilt, at most; past it
/// the memory starts over (a forgotten directory costs one more read).
const MAX_KNOWN_DIRS: usize = 4096;
/// How long a client takes a directory it saw born and named for still
/// named: a directory's delete removes its name (and its subdirectories'),
/// and a client that remembers the directory does not name it again, so
/// another client's write into a directory deleted less than this ago can
/// leave it unnamed in its parent (NETWORK.md: Flink never writes into a
/// deleted checkpoint's directory).
const KNOWN_FOR: Duration = Duration::from_secs(30);
/// How long after a rebuild of a directory's index (a listing of every
/// node) this client does not rebuild it again: a rebuild that failed (too
/// few holders took it) is not retried at every question, and one that
/// succeeded but is lost again at once (views that keep disagreeing) costs
/// one listing a minute, not one per question.
const UNSETTLED_FOR: Duration = Duration::from_secs(60);

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
    /// Rebuilt (or tried) lately, and when.
    rebuilt: HashMap<String, Instant>,
    /// The checks of directories in progress ([`KnownDirs::check_of`]).
    checks: HashMap<String, Arc<tokio::sync::Mutex<()>>>,
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

    /// Whether this client saw `dir` born and named at some time (it may
    /// since have been renamed away: [`KNOWN_FOR`]).
    pub(crate) fn was_born(&self, dir: &str) -> bool {
        self.lock().born.contains_key(dir)
    }

    /// The lock one check of `dir` holds (the same for concurrent callers).
    pub(crate) fn check_of(&self, dir: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut k = self.lock();
        k.checks.retain(|_, c| Arc::strong_count(c) > 1);
        k.checks.entry(dir.to_string()).or_default().clone()
    }

    pub(crate) fn born(&self, dir: &str) {
        let mut k = self.lock();
        remember(&mut k.born, dir);
    }

    /// Forgets `dir` and everything below it (this client deleted it).
    pub(crate) fn forget_below(&self, dir: &str) {
        self.lock().born.retain(|d, _| !d.starts_with(dir));
    }

    /// Whether `dir` was rebuilt (or tried) less than [`UNSETTLED_FOR`] ago.
    pub(crate) fn rebuilt_lately(&self, dir: &str) -> bool {
        self.lock().rebuilt.get(dir).is_some_and(|t| t.elapsed() < UNSETTLED_FOR)
    }

    pub(crate) fn rebuilt(&self, dir: &str) {
        remember(&mut self.lock().rebuilt, dir);
    }
}

