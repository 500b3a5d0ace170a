//! The seam between the I/O-free core and whatever moves fragments: the
//! in-process [`crate::mesh::Mesh`] today, a libp2p network later. The write
//! and read pipelines, placement and repair only ever talk to a node through
//! these traits.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::format::{FragmentHeader, FragmentKey, Manifest, ObjectSummary, WriteId};

/// A node's identity: a mesh name (`mesh-3`) or, on the network, a peer id.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeId(Arc<str>);

impl NodeId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for NodeId {
    fn from(s: &str) -> Self {
        NodeId(Arc::from(s))
    }
}

impl From<String> for NodeId {
    fn from(s: String) -> Self {
        NodeId(Arc::from(s))
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A live storage node as placement sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub id: NodeId,
    /// Failure domain (host by default): at most one fragment of an object per domain.
    pub domain: Arc<str>,
    /// Bytes the node can still take; placement weights nodes by it.
    pub free_bytes: u64,
}

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

/// One node's operations, as seen from a client.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// Storage nodes currently believed alive (membership view).
    fn live_nodes(&self) -> Vec<NodeInfo>;

    /// Starts storing one fragment on `node`. Cells follow through the sink.
    async fn open_fragment(&self, node: &NodeId, header: FragmentHeader) -> Result<Box<dyn FragmentSink>>;

    /// One cell of one fragment, as stored (the caller verifies its checksum).
    async fn get_cell(&self, node: &NodeId, key: &FragmentKey, stripe: u32) -> Result<Bytes>;

    /// Stores (or replaces) the manifest of `manifest.path` on `node`.
    async fn put_manifest(&self, node: &NodeId, manifest: Arc<Manifest>) -> Result<()>;

    async fn get_manifest(&self, node: &NodeId, path: &str) -> Result<Option<Arc<Manifest>>>;

    /// Committed objects on `node` whose path starts with `prefix`.
    async fn list(&self, node: &NodeId, prefix: &str) -> Result<Vec<ObjectSummary>>;

    async fn delete(&self, node: &NodeId, target: &DeleteTarget) -> Result<DeleteStats>;
}

/// The receiving end of one fragment upload.
#[async_trait]
pub trait FragmentSink: Send {
    /// Appends the cell of stripe `stripe`; stripes arrive in order.
    async fn put_cell(&mut self, stripe: u32, checksum: u64, cell: Bytes) -> Result<()>;

    /// Returns once the holder has the whole fragment durably (the ack).
    async fn finish(&mut self) -> Result<()>;
}
