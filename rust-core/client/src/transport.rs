//! The seam between the pipelines and whatever moves fragments: the
//! in-process [`crate::mesh::Mesh`] or the libp2p network (`fragstate-net`).
//! The write and read pipelines, placement and repair only ever talk to a
//! node through these traits.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::error::Result;
use fragstate_core::format::{FragmentHeader, Manifest, ObjectSummary};
use fragstate_core::ids::{FragmentKey, NodeId};
use fragstate_core::placement::NodeInfo;
use fragstate_core::version::ManifestPut;

/// One node's operations, as seen from a client.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// Storage nodes currently believed alive (membership view).
    fn live_nodes(&self) -> Vec<NodeInfo>;

    /// Starts storing one fragment on `node`. Cells follow through the sink.
    async fn open_fragment(&self, node: &NodeId, header: FragmentHeader) -> Result<Box<dyn FragmentSink>>;

    /// One cell of one fragment, as stored (the caller verifies its checksum).
    /// `len` is the cell's length by the manifest: a transport that reads
    /// the answer from a peer refuses a longer one before reading its body.
    async fn get_cell(&self, node: &NodeId, key: &FragmentKey, stripe: u32, len: u32) -> Result<Bytes>;

    /// Stores (or replaces) the manifest of `manifest.path` on `node`, unless
    /// the node holds a newer copy of the path ([`ManifestPut::KeptNewer`]).
    async fn put_manifest(&self, node: &NodeId, manifest: Arc<Manifest>) -> Result<ManifestPut>;

    async fn get_manifest(&self, node: &NodeId, path: &str) -> Result<Option<Arc<Manifest>>>;

    /// Committed objects on `node` whose path starts with `prefix`.
    async fn list(&self, node: &NodeId, prefix: &str) -> Result<Vec<ObjectSummary>>;

    async fn delete(&self, node: &NodeId, target: &DeleteTarget) -> Result<DeleteStats>;

    /// Tells `node` that its cell of `key` in `stripe` failed its checksum at
    /// a reader, so that it verifies the cell and rebuilds it from the other
    /// holders. Best effort: a node that cannot take reports ignores them.
    async fn report_corrupt(&self, _node: &NodeId, _key: &FragmentKey, _stripe: u32) -> Result<()> {
        Ok(())
    }

    /// Asks `node` for `bytes` of nothing: a speed probe of a peer that no
    /// transfer measured lately (adaptive mode). A transport without probes
    /// fails it, and the peer stays unmeasured.
    async fn probe(&self, node: &NodeId, _bytes: u32) -> Result<()> {
        Err(fragstate_core::error::Error::NodeUnavailable { node: node.clone(), reason: "this transport has no speed probes".into() })
    }
}

/// The receiving end of one fragment upload.
#[async_trait]
pub trait FragmentSink: Send {
    /// Appends the cell of stripe `stripe`; stripes arrive in order.
    async fn put_cell(&mut self, stripe: u32, checksum: u64, cell: Bytes) -> Result<()>;

    /// Returns once the holder has the whole fragment durably (the ack).
    async fn finish(&mut self) -> Result<()>;
}
