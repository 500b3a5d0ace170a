//! How the versions of one path are ordered, and what a node does with a
//! manifest or a delete that names a version.
//!
//! A path may be written again (`overwrite`); each write is a version,
//! ordered by [`WriteVersion`]: first the time the write began, then its
//! random write id (two writes in one millisecond still order the same way
//! on every node). The newest version is the object; older ones are deleted
//! by the newer write when it commits. Two writers of one path at once
//! therefore never delete each other's work: the older one loses, whatever
//! order they commit in, and learns it from [`ManifestPut::KeptNewer`].

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ids::WriteId;

/// The order of one path's writes: newer compares greater.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WriteVersion {
    /// Milliseconds since the Unix epoch when the write began.
    pub created_unix_ms: u64,
    /// The write's random id; breaks ties within one millisecond.
    pub write_id: WriteId,
}

impl WriteVersion {
    /// The start time of a write that replaces `previous` (if any): `now`, or
    /// one millisecond after the previous version when the clock is behind it.
    /// A previous version dated at the end of time (a garbled or hostile
    /// manifest) is an error instead of a wrap to 0, which would order the
    /// new write before the old one forever.
    pub fn next_created(previous: Option<u64>, now_unix_ms: u64, path: &str) -> Result<u64> {
        match previous {
            None => Ok(now_unix_ms),
            Some(p) => p.checked_add(1).map(|n| n.max(now_unix_ms)).ok_or_else(|| Error::InvalidState {
                path: path.to_string(),
                reason: format!("the existing version is dated {p} ms since the epoch, the largest time there is; delete the path before writing it again"),
            }),
        }
    }
}

/// What a node did with a manifest it was asked to store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ManifestPut {
    /// Stored: it is the newest copy of the path this node holds.
    Stored,
    /// Not stored: the node holds a newer copy of the path, of this version
    /// (a later repair of the same write) or of a newer write.
    KeptNewer(WriteVersion),
}

/// The next revision of a manifest whose holders changed; an error instead
/// of a wrap to 0 (which would make every node keep the stale copy).
pub fn next_revision(revision: u32, path: &str) -> Result<u32> {
    revision.checked_add(1).ok_or_else(|| Error::InvalidState {
        path: path.to_string(),
        reason: format!("manifest revision {revision} cannot be raised any further; rewrite the object"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_by_time_then_write_id() {
        let v = |t, w| WriteVersion { created_unix_ms: t, write_id: w };
        assert!(v(2, 0) > v(1, u128::MAX));
        assert!(v(1, 2) > v(1, 1));
    }

    #[test]
    fn next_created_follows_the_clock_but_never_goes_back() {
        assert_eq!(WriteVersion::next_created(None, 50, "p").unwrap(), 50);
        assert_eq!(WriteVersion::next_created(Some(10), 50, "p").unwrap(), 50);
        assert_eq!(WriteVersion::next_created(Some(50), 50, "p").unwrap(), 51);
        assert_eq!(WriteVersion::next_created(Some(90), 50, "p").unwrap(), 91);
        let e = WriteVersion::next_created(Some(u64::MAX), 50, "job/x").unwrap_err().to_string();
        assert!(e.contains("job/x") && e.contains(&u64::MAX.to_string()), "{e}");
    }

    #[test]
    fn revisions_do_not_wrap() {
        assert_eq!(next_revision(0, "p").unwrap(), 1);
        assert!(next_revision(u32::MAX, "job/x").unwrap_err().to_string().contains("job/x"));
    }
}
