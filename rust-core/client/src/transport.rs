//! The seam between the pipelines and whatever moves fragments: the
//! in-process [`crate::mesh::Mesh`] or the libp2p network (`fragstate-net`).
//! The write and read pipelines, placement and repair only ever talk to a
//! node through these traits.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::dir_index::quorum::{Answer, IndexUpdate};
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{FragmentHeader, Manifest, ObjectSummary};
use fragstate_core::ids::{FragmentKey, NodeId};
use fragstate_core::placement::{NodeInfo, PlacementPolicy};
use fragstate_core::version::ManifestPut;

/// One node's operations, as seen from a client.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// Storage nodes currently believed alive (membership view).
    fn live_nodes(&self) -> Vec<NodeInfo>;

    /// Whether `node` is among [`Transport::live_nodes`]. A transport with a
    /// large view answers it without building the whole view: a reader asks
    /// it of an object's holders for every stripe.
    fn is_live(&self, node: &NodeId) -> bool {
        self.live_nodes().iter().any(|n| &n.id == node)
    }

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
        Err(Error::NodeUnavailable { node: node.clone(), reason: "this transport has no speed probes".into() })
    }

    /// Sends a change, a birth or a fill of directory `dir`'s index to
    /// `node`, one of its holders (`fragstate_core::dir_index`). A transport
    /// without indexes fails it, and the directory's reads fall back to
    /// every node.
    async fn index_update(&self, node: &NodeId, _dir: &str, _update: &IndexUpdate) -> Result<()> {
        Err(no_index(node))
    }

    /// `node`'s record of directory `dir`. `width` and `policy` are how the
    /// reader ranks the directory's holders
    /// (`fragstate_core::dir_index::holders`): a node that does not rank
    /// among them in its own view answers its record as incomplete.
    async fn index_read(&self, node: &NodeId, _dir: &str, _width: usize, _policy: PlacementPolicy) -> Result<Answer> {
        Err(no_index(node))
    }
}

fn no_index(node: &NodeId) -> Error {
    Error::NodeUnavailable { node: node.clone(), reason: "this transport keeps no directory indexes".into() }
}

/// The receiving end of one fragment upload.
#[async_trait]
pub trait FragmentSink: Send {
    /// Appends the cell of stripe `stripe`; stripes arrive in order.
    async fn put_cell(&mut self, stripe: u32, checksum: u64, cell: Bytes) -> Result<()>;

    /// Returns once the holder has the whole fragment durably (the ack).
    async fn finish(&mut self) -> Result<()>;
}
