//! What a delete removes on one node, and what it removed.

use crate::ids::WriteId;
use crate::version::WriteVersion;

/// What a delete removes on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeleteTarget {
    /// Every version of one path.
    Path(String),
    /// Every path that starts with this string.
    Prefix(String),
    /// The fragments and manifest of one write (an aborted or superseded write).
    Write {
        /// Path of the object.
        path: String,
        /// The write whose fragments and manifest are removed.
        write_id: WriteId,
    },
    /// The versions of a path older than `newest` (after an overwrite
    /// commits). Newer writes still in progress are left alone: they will
    /// replace `newest` in turn.
    OlderWrites {
        /// Path of the object.
        path: String,
        /// The write that just committed; it and newer writes stay.
        newest: WriteVersion,
    },
}

impl DeleteTarget {
    /// True when the delete covers the write `version` of `path`.
    pub fn matches(&self, path: &str, version: WriteVersion) -> bool {
        match self {
            DeleteTarget::Path(p) => path == p,
            DeleteTarget::Prefix(p) => path.starts_with(p.as_str()),
            DeleteTarget::Write { path: p, write_id: w } => path == p && version.write_id == *w,
            DeleteTarget::OlderWrites { path: p, newest } => path == p && version < *newest,
        }
    }
}

/// What a delete removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeleteStats {
    /// Manifests removed.
    pub manifests: u64,
    /// Fragments removed.
    pub fragments: u64,
    /// Cell bytes of the removed fragments (fragment and frame headers not counted).
    pub bytes: u64,
}

impl std::ops::AddAssign for DeleteStats {
    fn add_assign(&mut self, o: Self) {
        self.manifests += o.manifests;
        self.fragments += o.fragments;
        self.bytes += o.bytes;
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overwrite_deletes_only_older_versions() {
        let v = |t, w| WriteVersion { created_unix_ms: t, write_id: w };
        let t = DeleteTarget::OlderWrites { path: "a".into(), newest: v(10, 5) };
        assert!(t.matches("a", v(9, 9)));
        assert!(t.matches("a", v(10, 4)));
        assert!(!t.matches("a", v(10, 5)), "the committed write itself stays");
        assert!(!t.matches("a", v(10, 6)), "a newer write in progress stays");
        assert!(!t.matches("a", v(11, 0)));
        assert!(!t.matches("b", v(1, 1)));
    }
}
