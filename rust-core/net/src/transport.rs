//! [`Transport`] for [`NetNode`]: what `fragstate-client` runs over. Calls
//! for the node itself go straight to its store.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use libp2p::{PeerId, Stream};

use fragstate_client::transport::{FragmentSink, Transport};
use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::dir_index::quorum::{Answer, IndexUpdate};
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{self, CellFrame, FragmentHeader, Manifest, ObjectSummary};
use fragstate_core::ids::{FragmentKey, NodeId};
use fragstate_core::placement::{NodeInfo, PlacementPolicy};
use fragstate_core::version::ManifestPut;
use fragstate_store::FragmentStore;

use crate::node::NetNode;
use crate::pool::{expect_kind, node_fault};
use crate::state::{blocking, Inner};
use crate::wire::{self, Expect, GetCellReq, IndexReadReq, IndexUpdateReq, Kind, ListPage, ListReq, WireDelete, WireDeleteStats};

pub(crate) struct LocalSink {
    store: Arc<FragmentStore>,
    key: FragmentKey,
}

#[async_trait]
impl FragmentSink for LocalSink {
    async fn put_cell(&mut self, stripe: u32, checksum: u64, cell: Bytes) -> Result<()> {
        blocking(|| self.store.append_cell(&self.key, stripe, checksum, cell))
    }

    async fn finish(&mut self) -> Result<()> {
        blocking(|| self.store.finish_fragment(&self.key))
    }
}

pub(crate) struct NetSink {
    inner: Arc<Inner>,
    node: NodeId,
    peer: PeerId,
    stream: Option<Stream>,
}

#[async_trait]
impl FragmentSink for NetSink {
    async fn put_cell(&mut self, stripe: u32, checksum: u64, cell: Bytes) -> Result<()> {
        let s = self.stream.as_mut().ok_or_else(|| node_fault(&self.node, "upload stream already failed"))?;
        let head = CellFrame { stripe, len: cell.len() as u32, checksum }.encode();
        let r = self.inner.send(&self.node, s, Kind::Cell, &head, &cell).await;
        r.map_err(|e| {
            self.stream = None;
            if matches!(e, Error::Io { .. }) { node_fault(&self.node, e) } else { e }
        })
    }

    async fn finish(&mut self) -> Result<()> {
        let mut s = self.stream.take().ok_or_else(|| node_fault(&self.node, "upload stream already failed"))?;
        self.inner
            .send(&self.node, &mut s, Kind::Finish, &[], &[])
            .await
            .map_err(|e| node_fault(&self.node, e))?;
        let f = self.inner.response(&self.node, &mut s, Expect::response(Kind::Finish)).await?;
        expect_kind(&self.node, &f, Kind::Ok)?;
        self.inner.put_back(self.peer, s);
        Ok(())
    }
}

#[async_trait]
impl Transport for NetNode {
    fn live_nodes(&self) -> Vec<NodeInfo> {
        self.inner.live()
    }

    fn is_live(&self, node: &NodeId) -> bool {
        self.inner.is_live_node(node)
    }

    async fn open_fragment(&self, node: &NodeId, header: FragmentHeader) -> Result<Box<dyn FragmentSink>> {
        let inner = &self.inner;
        if node == &inner.id {
            let store = inner.store()?.clone();
            blocking(|| store.begin_fragment(&header))?;
            return Ok(Box::new(LocalSink { store, key: header.key() }));
        }
        if !inner.is_live_storage(&inner.peer_of(node)?) {
            return Err(node_fault(node, "not a live storage node"));
        }
        let (f, peer, s) = inner.exchange(node, Kind::OpenFragment, &format::encode_fragment_header(&header), &[], Expect::response(Kind::OpenFragment)).await?;
        expect_kind(node, &f, Kind::Ok)?;
        Ok(Box::new(NetSink { inner: inner.clone(), node: node.clone(), peer, stream: Some(s) }))
    }

    async fn get_cell(&self, node: &NodeId, key: &FragmentKey, stripe: u32, len: u32) -> Result<Bytes> {
        let inner = &self.inner;
        if node == &inner.id {
            let store = inner.store()?;
            return blocking(|| store.get_cell(key, stripe));
        }
        let req = GetCellReq { path: key.path.to_string(), write_id: key.write_id, index: key.index, stripe };
        let expect = Expect::Response { to: Kind::GetCell, max_cell: Some(len) };
        let f = inner.request_expecting(node, Kind::GetCell, &wire::encode(&req), expect).await?;
        expect_kind(node, &f, Kind::CellData)?;
        let (frame, cell) = wire::split_cell("cell data", f.body, len).map_err(|e| node_fault(node, e))?;
        if frame.stripe != stripe {
            return Err(node_fault(node, format!("asked for stripe {stripe}, got stripe {}", frame.stripe)));
        }
        Ok(cell)
    }

    async fn probe(&self, node: &NodeId, bytes: u32) -> Result<()> {
        let inner = &self.inner;
        if node == &inner.id {
            return Ok(());
        }
        let expect = Expect::Response { to: Kind::Probe, max_cell: Some(bytes) };
        let f = inner.request_expecting(node, Kind::Probe, &wire::encode(&bytes), expect).await?;
        expect_kind(node, &f, Kind::CellData)?;
        if f.body.len() != bytes as usize {
            return Err(node_fault(node, format!("asked for a probe of {bytes} bytes, got {}", f.body.len())));
        }
        Ok(())
    }

    async fn put_manifest(&self, node: &NodeId, manifest: Arc<Manifest>) -> Result<ManifestPut> {
        let inner = &self.inner;
        if node == &inner.id {
            let store = inner.store()?;
            return blocking(|| store.put_manifest(manifest));
        }
        let f = inner.request(node, Kind::PutManifest, &format::encode_manifest(&manifest), &[]).await?;
        expect_kind(node, &f, Kind::ManifestPut)?;
        wire::decode("manifest put", &f.body).map_err(|e| node_fault(node, e))
    }

    async fn get_manifest(&self, node: &NodeId, path: &str) -> Result<Option<Arc<Manifest>>> {
        let inner = &self.inner;
        if node == &inner.id {
            return Ok(inner.store()?.get_manifest(path));
        }
        let f = inner.request(node, Kind::GetManifest, path.as_bytes(), &[]).await?;
        match f.kind {
            Kind::NoManifest => Ok(None),
            Kind::ManifestData => {
                let m = format::decode_manifest(&f.body).map_err(|e| node_fault(node, e))?;
                if m.path != path {
                    return Err(node_fault(node, format!("asked for the manifest of {path}, got {}", m.path)));
                }
                Ok(Some(Arc::new(m)))
            }
            other => Err(node_fault(node, format!("protocol error: unexpected {other:?} frame"))),
        }
    }

    async fn list(&self, node: &NodeId, prefix: &str) -> Result<Vec<ObjectSummary>> {
        let inner = &self.inner;
        if node == &inner.id {
            return Ok(inner.store()?.list(prefix));
        }
        // Page by page (a prefix may hold more than one frame can carry).
        let mut all = Vec::new();
        let mut req = ListReq { prefix: prefix.to_string(), after: None };
        loop {
            let f = inner.request(node, Kind::List, &wire::encode(&req), &[]).await?;
            expect_kind(node, &f, Kind::Listing)?;
            let page: ListPage = wire::decode("listing", &f.body).map_err(|e| node_fault(node, e))?;
            let last = page.entries.last().map(|s| s.path.clone());
            all.extend(page.entries);
            match (page.more, last) {
                (true, Some(last)) if req.after.as_ref().is_none_or(|a| &last > a) => req.after = Some(last),
                (true, _) => return Err(node_fault(node, "listing page made no progress")),
                (false, _) => return Ok(all),
            }
        }
    }

    async fn report_corrupt(&self, node: &NodeId, key: &FragmentKey, stripe: u32) -> Result<()> {
        let inner = &self.inner;
        if node == &inner.id {
            inner.scrub.report(key.clone(), stripe);
            return Ok(());
        }
        let req = GetCellReq { path: key.path.to_string(), write_id: key.write_id, index: key.index, stripe };
        let f = inner.request(node, Kind::ReportCorrupt, &wire::encode(&req), &[]).await?;
        expect_kind(node, &f, Kind::Ok)
    }

    async fn delete(&self, node: &NodeId, target: &DeleteTarget) -> Result<DeleteStats> {
        let inner = &self.inner;
        if node == &inner.id {
            return blocking(|| inner.local_delete(target));
        }
        let f = inner.request(node, Kind::Delete, &wire::encode(&WireDelete::from(target)), &[]).await?;
        expect_kind(node, &f, Kind::Deleted)?;
        let st: WireDeleteStats = wire::decode("delete stats", &f.body).map_err(|e| node_fault(node, e))?;
        Ok(st.into())
    }

    async fn index_update(&self, node: &NodeId, dir: &str, update: &IndexUpdate) -> Result<()> {
        let inner = &self.inner;
        let req = IndexUpdateReq { dir: dir.to_string(), update: update.clone() };
        if node == &inner.id {
            return inner.index_update(&req);
        }
        // checked here too: a node answers a bad request with an error, and
        // a fill too large for one frame must not reach the encoder's panic
        req.check()?;
        let body = wire::try_encode("index update", &req)?;
        let f = inner.request(node, Kind::IndexUpdate, &body, &[]).await?;
        expect_kind(node, &f, Kind::Ok)
    }

    async fn index_read(&self, node: &NodeId, dir: &str, width: usize, policy: PlacementPolicy) -> Result<Answer> {
        let inner = &self.inner;
        let width = u32::try_from(width).unwrap_or(u32::MAX);
        let req = IndexReadReq { dir: dir.to_string(), width, shared_domains: policy.allow_shared_domains };
        if node == &inner.id {
            return inner.index_read(&req);
        }
        req.check()?;
        let f = inner.request(node, Kind::IndexRead, &wire::encode(&req), &[]).await?;
        expect_kind(node, &f, Kind::IndexAnswer)?;
        wire::decode_canonical("index answer", &f.body).map_err(|e| node_fault(node, e))
    }
}
