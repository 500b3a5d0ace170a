//! Free bytes of a disk store's file system (`statvfs` on the store
//! directory), sampled at most about once a second: `usage()` is called for
//! every hello and placement, `append_cell` for every cell.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::lock;

/// How long one `statvfs` sample is used.
const SAMPLE_FOR: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    at: Instant,
    /// Bytes available to an unprivileged writer (`f_bavail × f_frsize`).
    available: u64,
    /// The store's bytes when sampled.
    used_then: u64,
}

impl Sample {
    /// What the file system has left now that the store holds `used` bytes:
    /// the sample less what the store wrote since (deletes are counted only
    /// by the next sample, so this errs low).
    pub(crate) fn left(&self, used: u64) -> u64 {
        self.available.saturating_sub(used.saturating_sub(self.used_then))
    }
}

pub(crate) struct DiskSpace {
    dir: PathBuf,
    last: Mutex<Option<Sample>>,
}

impl DiskSpace {
    pub(crate) fn new(dir: PathBuf) -> Self {
        DiskSpace { dir, last: Mutex::new(None) }
    }

    /// Test hook: the file system has `available` bytes left while the store
    /// holds `used`, for an hour.
    #[cfg(test)]
    pub(crate) fn pin(&self, available: u64, used: u64) {
        *lock(&self.last) = Some(Sample { at: Instant::now() + Duration::from_secs(3600), available, used_then: used });
    }

    /// A sample no older than [`SAMPLE_FOR`], taken now if needed; `used` is
    /// the store's bytes now. If the file system cannot be asked, the sample
    /// says unlimited (only the budget limits the store) and the error is
    /// logged, once per sample period.
    pub(crate) fn sample(&self, used: u64) -> Sample {
        let mut last = lock(&self.last);
        if let Some(s) = *last {
            if s.at.elapsed() < SAMPLE_FOR {
                return s;
            }
        }
        let available = match rustix::fs::statvfs(&self.dir) {
            Ok(v) => v.f_bavail.saturating_mul(v.f_frsize),
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "statvfs failed: free bytes from the budget only");
                u64::MAX
            }
        };
        let s = Sample { at: Instant::now(), available, used_then: used };
        *last = Some(s);
        s
    }
}
