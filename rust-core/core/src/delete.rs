//! What a delete removes on one node, and what it removed.

use crate::ids::WriteId;

/// What a delete removes on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeleteTarget {
    /// Every version of one path.
    Path(String),
    /// Every path that starts with this string.
    Prefix(String),
    /// The fragments and manifest of one write (an aborted or superseded write).
    Write { path: String, write_id: WriteId },
    /// Every version of a path except this write (after an overwrite commits).
    OtherWrites { path: String, keep: WriteId },
}

impl DeleteTarget {
    /// True when the delete covers the write `write_id` of `path`.
    pub fn matches(&self, path: &str, write_id: WriteId) -> bool {
        match self {
            DeleteTarget::Path(p) => path == p,
            DeleteTarget::Prefix(p) => path.starts_with(p.as_str()),
            DeleteTarget::Write { path: p, write_id: w } => path == p && write_id == *w,
            DeleteTarget::OtherWrites { path: p, keep } => path == p && write_id != *keep,
        }
    }
}

/// What a delete removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeleteStats {
    pub manifests: u64,
    pub fragments: u64,
    pub bytes: u64,
}

impl std::ops::AddAssign for DeleteStats {
    fn add_assign(&mut self, o: Self) {
        self.manifests += o.manifests;
        self.fragments += o.fragments;
        self.bytes += o.bytes;
    }
}

