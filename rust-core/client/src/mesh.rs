//! The in-process mesh: N storage nodes in one process, each with its own
//! [`FragmentStore`], reached through the same [`Transport`] trait as the
//! network. It is the test bed of the pipelines (with fault injection: kill a
//! node, fail its next requests, drop or corrupt a fragment, slow a node down) and the embedded
//! default of local Flink execution.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use fragstate_core::error::{Error, Result};
use fragstate_core::format::{FragmentHeader, Manifest, ObjectSummary};
use fragstate_core::ids::FragmentKey;
use fragstate_store::FragmentStore;
use crate::scrubber::ScrubShared;
use crate::transport::{FragmentSink, Transport};
use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::ids::NodeId;
use fragstate_core::dir_index::{self, quorum::{Answer, IndexUpdate, Records}};
use fragstate_core::placement::{NodeInfo, PlacementPolicy};
use fragstate_core::version::ManifestPut;

struct MeshNode {
    id: NodeId,
    domain: Arc<str>,
    store: Arc<FragmentStore>,
    alive: AtomicBool,
    delay_micros: AtomicU64,
    /// Requests still to fail while the node stays live (a transient fault).
    failing_requests: AtomicU64,
    /// Requests that reached the node (down or not), for tests that count them.
    requests: AtomicU64,
    /// Where readers' corrupt-cell reports go (a [`crate::scrubber::Scrubber`] of the node takes them).
    scrub: Arc<ScrubShared>,
    /// The directory indexes it holds (kept while down, as its store is).
    index: Mutex<Records>,
}

impl MeshNode {
    fn index(&self) -> std::sync::MutexGuard<'_, Records> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl MeshNode {
    /// Applies the injected delay, then fails if the node is down.
    async fn enter(&self) -> Result<()> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let delay = self.delay_micros.load(Ordering::Relaxed);
        if delay > 0 {
            tokio::time::sleep(Duration::from_micros(delay)).await;
        }
        if !self.alive.load(Ordering::Acquire) {
            return Err(Error::NodeUnavailable { node: self.id.clone(), reason: "node is down (mesh fault injection)".into() });
        }
        if self.failing_requests.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok() {
            return Err(Error::NodeUnavailable { node: self.id.clone(), reason: "request failed (mesh fault injection)".into() });
        }
        Ok(())
    }
}

/// N nodes in one process.
pub struct Mesh {
    nodes: Vec<Arc<MeshNode>>,
    /// Where each node is in `nodes` (meshes of thousands answer requests by id).
    by_id: HashMap<NodeId, usize>,
}

impl Mesh {
    /// `n` nodes with in-memory stores of `budget` bytes each, every node its
    /// own failure domain.
    pub fn in_memory(n: usize, budget: u64) -> Arc<Mesh> {
        Self::from_stores((0..n).map(|i| (format!("mesh-{i}"), FragmentStore::in_memory(format!("mesh-{i}"), budget))).collect())
    }

    /// A mesh over the given stores: `(failure domain, store)`, node ids are the store names.
    pub fn from_stores(stores: Vec<(String, FragmentStore)>) -> Arc<Mesh> {
        let nodes = stores
            .into_iter()
            .map(|(domain, store)| {
                Arc::new(MeshNode {
                    id: NodeId::from(store.node()),
                    domain: Arc::from(domain.as_str()),
                    store: Arc::new(store),
                    alive: AtomicBool::new(true),
                    delay_micros: AtomicU64::new(0),
                    failing_requests: AtomicU64::new(0),
                    requests: AtomicU64::new(0),
                    scrub: ScrubShared::new(),
                    index: Mutex::new(Records::default()),
                })
            })
            .collect::<Vec<Arc<MeshNode>>>();
        let by_id = nodes.iter().enumerate().map(|(i, n)| (n.id.clone(), i)).collect();
        Arc::new(Mesh { nodes, by_id })
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node_ids(&self) -> Vec<NodeId> {
        self.nodes.iter().map(|n| n.id.clone()).collect()
    }

    fn node(&self, id: &NodeId) -> Result<&Arc<MeshNode>> {
        self.by_id
            .get(id)
            .map(|&i| &self.nodes[i])
            .ok_or_else(|| Error::NodeUnavailable { node: id.clone(), reason: "no such node in the mesh".into() })
    }

    pub fn store(&self, id: &NodeId) -> Result<Arc<FragmentStore>> {
        Ok(self.node(id)?.store.clone())
    }

    /// The node's scrub inbox and counters (run a [`crate::scrubber::Scrubber`] with it).
    pub fn scrub_shared(&self, id: &NodeId) -> Result<Arc<ScrubShared>> {
        Ok(self.node(id)?.scrub.clone())
    }

    /// Fault injection: the node stops answering (its store is kept, as on a
    /// disk that survives; [`revive`](Self::revive) brings it back).
    pub fn kill(&self, id: &NodeId) -> Result<()> {
        self.node(id)?.alive.store(false, Ordering::Release);
        Ok(())
    }

    /// Brings a killed node back. Its index records answer as incomplete
    /// (it may have missed changes while down), as a restarted node's do.
    pub fn revive(&self, id: &NodeId) -> Result<()> {
        let n = self.node(id)?;
        n.index().forget_completeness(|_| true);
        n.alive.store(true, Ordering::Release);
        Ok(())
    }

    /// The directory index records node `id` keeps (tests look at them).
    pub fn index_answer(&self, id: &NodeId, dir: &str) -> Result<Answer> {
        Ok(self.node(id)?.index().answer(dir))
    }

    /// Requests sent to node `id` so far (each cell of an upload counts).
    pub fn requests(&self, id: &NodeId) -> Result<u64> {
        Ok(self.node(id)?.requests.load(Ordering::Relaxed))
    }

    pub fn is_alive(&self, id: &NodeId) -> bool {
        self.node(id).map(|n| n.alive.load(Ordering::Acquire)).unwrap_or(false)
    }

    /// Fault injection: every request to the node waits `delay` first.
    pub fn slow_down(&self, id: &NodeId, delay: Duration) -> Result<()> {
        self.node(id)?.delay_micros.store(delay.as_micros() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Fault injection: the node's next `n` requests fail while it stays
    /// live (a busy peer that dropped a stream, a reset connection).
    pub fn fail_requests(&self, id: &NodeId, n: u64) -> Result<()> {
        self.node(id)?.failing_requests.store(n, Ordering::Release);
        Ok(())
    }

    /// Fault injection: the node loses one fragment.
    pub fn drop_fragment(&self, id: &NodeId, key: &FragmentKey) -> Result<DeleteStats> {
        self.node(id)?.store.drop_fragment(key)
    }

    /// Fault injection: one stored cell gets a flipped byte.
    pub fn corrupt_cell(&self, id: &NodeId, key: &FragmentKey, stripe: u32) -> Result<()> {
        self.node(id)?.store.corrupt_cell(key, stripe)
    }
}

struct MeshSink {
    node: Arc<MeshNode>,
    key: FragmentKey,
}

#[async_trait]
impl FragmentSink for MeshSink {
    async fn put_cell(&mut self, stripe: u32, checksum: u64, cell: Bytes) -> Result<()> {
        self.node.enter().await?;
        self.node.store.append_cell(&self.key, stripe, checksum, cell)
    }

    async fn finish(&mut self) -> Result<()> {
        self.node.enter().await?;
        self.node.store.finish_fragment(&self.key)
    }
}

#[async_trait]
impl Transport for Mesh {
    fn live_nodes(&self) -> Vec<NodeInfo> {
        self.nodes
            .iter()
            .filter(|n| n.alive.load(Ordering::Acquire))
            .map(|n| NodeInfo { id: n.id.clone(), domain: n.domain.clone(), free_bytes: n.store.usage().free_bytes() })
            .collect()
    }

    async fn open_fragment(&self, node: &NodeId, header: FragmentHeader) -> Result<Box<dyn FragmentSink>> {
        let n = self.node(node)?.clone();
        n.enter().await?;
        n.store.begin_fragment(&header)?;
        Ok(Box::new(MeshSink { node: n, key: header.key() }))
    }

    async fn get_cell(&self, node: &NodeId, key: &FragmentKey, stripe: u32, _len: u32) -> Result<Bytes> {
        let n = self.node(node)?;
        n.enter().await?;
        n.store.get_cell(key, stripe)
    }

    async fn put_manifest(&self, node: &NodeId, manifest: Arc<Manifest>) -> Result<ManifestPut> {
        let n = self.node(node)?;
        n.enter().await?;
        n.store.put_manifest(manifest)
    }

    async fn probe(&self, node: &NodeId, _bytes: u32) -> Result<()> {
        self.node(node)?.enter().await
    }

    async fn get_manifest(&self, node: &NodeId, path: &str) -> Result<Option<Arc<Manifest>>> {
        let n = self.node(node)?;
        n.enter().await?;
        Ok(n.store.get_manifest(path))
    }

    async fn list(&self, node: &NodeId, prefix: &str) -> Result<Vec<ObjectSummary>> {
        let n = self.node(node)?;
        n.enter().await?;
        Ok(n.store.list(prefix))
    }

    async fn delete(&self, node: &NodeId, target: &DeleteTarget) -> Result<DeleteStats> {
        let n = self.node(node)?;
        n.enter().await?;
        n.store.delete(target)
    }

    async fn report_corrupt(&self, node: &NodeId, key: &FragmentKey, stripe: u32) -> Result<()> {
        let n = self.node(node)?;
        n.enter().await?;
        n.scrub.report(key.clone(), stripe);
        Ok(())
    }

    async fn index_update(&self, node: &NodeId, dir: &str, update: &IndexUpdate) -> Result<()> {
        let n = self.node(node)?;
        n.enter().await?;
        n.index().update_with(dir, update);
        Ok(())
    }

    async fn index_read(&self, node: &NodeId, dir: &str, width: usize, policy: PlacementPolicy) -> Result<Answer> {
        let n = self.node(node)?;
        n.enter().await?;
        // The mesh's view is every node's: one that no longer ranks among the
        // directory's holders may miss changes from now on.
        if !dir_index::holders(dir, &self.live_nodes(), width, policy).contains(node) {
            n.index().forget_completeness(|d| d == dir);
        }
        Ok(n.index().answer(dir))
    }
}
