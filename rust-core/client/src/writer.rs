//! The write pipeline: bytes are buffered into one stripe at a time, encoded
//! into `k + m` cells and streamed to the `k + m` holders concurrently. A
//! holder that fails or is full is replaced at once: the new holder receives
//! that fragment's earlier cells rebuilt from the others, so `close` commits
//! with full redundancy or not at all. Memory is bounded by about one stripe.

use fragstate_core::dir_index::{entries_of, Change};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use futures::future::join_all;

use crate::ctx::{bump, broadcast_delete, Ctx};
use fragstate_core::codec::{EncodedStripe, StripeCodec};
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{self, Manifest, StripeInfo};
use fragstate_core::ids::WriteId;
use fragstate_core::params::CodingParams;
use crate::repair::{publish_manifest, Fragments, Published};
use crate::transport::FragmentSink;
use fragstate_core::delete::DeleteTarget;
use fragstate_core::ids::NodeId;
use fragstate_core::version::WriteVersion;

pub struct ObjectWriter {
    ctx: Arc<Ctx>,
    path: Arc<str>,
    write_id: WriteId,
    created_unix_ms: u64,
    codec: StripeCodec,
    overwrite: bool,
    holders: Vec<NodeId>,
    sinks: Vec<Box<dyn FragmentSink>>,
    /// Nodes that failed this write; never chosen again for it.
    failed: HashSet<NodeId>,
    /// Per fragment: bytes sent to its holder and the time spent in those
    /// sends, measuring the holder for adaptive mode at commit.
    upload: Vec<Upload>,
    /// When the first stripe went out: the object's upload span starts there.
    first_send: Option<Instant>,
    buf: BytesMut,
    stripes: Vec<StripeInfo>,
    length: u64,
    started: Instant,
    state: State,
}

/// One holder's share of a write: bytes sent and seconds the sends took.
#[derive(Clone, Copy, Default)]
struct Upload {
    bytes: u64,
    seconds: f64,
}

/// Fragments smaller than this are not measured: their time is round trips, not bandwidth.
const MIN_MEASURED_UPLOAD: u64 = 256 << 10;

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    /// A write failed: only `abort` (or drop) is left, and it cleans up.
    Failed,
    /// Committed or aborted: nothing left to clean up.
    Done,
}

impl ObjectWriter {
    pub(crate) async fn start(ctx: Arc<Ctx>, path: &str, params: CodingParams, overwrite: bool, created_unix_ms: u64) -> Result<Self> {
        let codec = StripeCodec::new(params)?;
        let mut p = ctx.place_new_object(path.as_bytes(), params).inspect_err(|_| bump(&ctx.counters.placement_failures, 1))?;
        ctx.data_holders_first(&mut p, params);
        ctx.probe_stale_peers(&p.nodes);
        if p.shared_domains {
            tracing::warn!(path, k = params.k(), m = params.m(), "fewer failure domains than fragments: some fragments share a domain");
        }
        let mut w = ObjectWriter {
            ctx,
            path: Arc::from(path),
            write_id: uuid::Uuid::new_v4().as_u128(),
            created_unix_ms,
            buf: BytesMut::new(),
            codec,
            overwrite,
            holders: p.nodes.into_iter().map(|n| n.id).collect(),
            sinks: Vec::new(),
            failed: HashSet::new(),
            upload: vec![Upload::default(); params.fragments()],
            first_send: None,
            stripes: Vec::new(),
            length: 0,
            started: Instant::now(),
            state: State::Open,
        };
        let opened = join_all((0..w.holders.len()).map(|i| {
            let header = w.fragments().header(i);
            w.ctx.transport.open_fragment(&w.holders[i], header)
        }))
        .await;
        let mut sinks = Vec::with_capacity(opened.len());
        let mut to_replace = Vec::new();
        for (i, r) in opened.into_iter().enumerate() {
            match r {
                Ok(s) => sinks.push(Some(s)),
                Err(e) if e.is_node_fault() => {
                    tracing::warn!(path, fragment = i, node = %w.holders[i], error = %e, "holder refused the fragment, placing it elsewhere");
                    sinks.push(None);
                    to_replace.push(i);
                }
                Err(e) => return Err(e),
            }
        }
        for i in to_replace {
            let (node, sink) = w.rebuild(i).await?;
            w.holders[i] = node;
            sinks[i] = Some(sink);
        }
        w.sinks = sinks.into_iter().map(|s| s.expect("every fragment has a sink")).collect();
        Ok(w)
    }

    fn fragments(&self) -> Fragments<'_> {
        Fragments {
            path: &self.path,
            write_id: self.write_id,
            created_unix_ms: self.created_unix_ms,
            codec: &self.codec,
            holders: &self.holders,
            stripes: &self.stripes,
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.length
    }

    /// Current holder of each fragment.
    pub fn holders(&self) -> &[NodeId] {
        &self.holders
    }

    fn check_open(&self) -> Result<()> {
        match self.state {
            State::Open => Ok(()),
            State::Failed => Err(Error::InvalidState { path: self.path.to_string(), reason: "an earlier write failed; the object can only be aborted".into() }),
            State::Done => Err(Error::InvalidState { path: self.path.to_string(), reason: "writer is closed".into() }),
        }
    }

    pub async fn write(&mut self, mut data: &[u8]) -> Result<()> {
        self.check_open()?;
        let stripe_len = self.codec.params().stripe_data_len() as usize;
        while !data.is_empty() {
            if self.buf.capacity() == 0 {
                // Taken when bytes arrive, not when the last stripe leaves:
                // the last flush of an object takes none it would not use.
                self.buf = self.ctx.stripe_buffers.take(self.codec.buffer_capacity());
            }
            let take = data.len().min(stripe_len - self.buf.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            self.length += take as u64;
            if self.buf.len() == stripe_len {
                self.flush_stripe().await.inspect_err(|_| self.state = State::Failed)?;
            }
        }
        Ok(())
    }

    async fn flush_stripe(&mut self) -> Result<()> {
        let params = *self.codec.params();
        let max = format::max_stripes(params.fragments());
        if self.stripes.len() as u64 >= max {
            let most = max * params.stripe_data_len();
            return Err(Error::invalid(
                "object size",
                format!("more than {} bytes for {}", self.length - self.buf.len() as u64, self.path),
                format!(
                    "at most {most} bytes with cell size {} and k = {} (one manifest describes at most {max} stripes); \
                     raise fragstate.cell-size for objects this large",
                    params.cell_size(),
                    params.k()
                ),
            ));
        }
        let full = std::mem::take(&mut self.buf);
        if let Some(a) = &self.ctx.adaptive {
            a.offer_sample(&full);
        }
        let (len, encoding) = (full.len(), Instant::now());
        let enc = self.codec.encode(full);
        if let Some(a) = &self.ctx.adaptive {
            a.observe_encode(len, encoding.elapsed().as_secs_f64());
        }
        self.ctx.stripe_buffers.lend(enc.buffer.clone(), enc.buffer_capacity);
        let s = self.stripes.len() as u32;
        self.stripes.push(enc.info.clone());
        self.send_stripe(s, &enc).await
    }

    async fn send_stripe(&mut self, s: u32, enc: &EncodedStripe) -> Result<()> {
        self.first_send.get_or_insert_with(Instant::now);
        let puts = self.sinks.iter_mut().enumerate().map(|(i, sink)| async move {
            let t = Instant::now();
            let r = sink.put_cell(s, enc.info.cell_checksums[i], enc.cells[i].clone()).await;
            (r, t.elapsed().as_secs_f64())
        });
        let results = join_all(puts).await;
        for (i, (r, seconds)) in results.into_iter().enumerate() {
            let u = &mut self.upload[i];
            u.bytes += enc.cells[i].len() as u64;
            u.seconds += seconds;
            if let Err(e) = r {
                if !e.is_node_fault() {
                    return Err(e);
                }
                tracing::warn!(path = %self.path, fragment = i, stripe = s, node = %self.holders[i], error = %e, "holder failed during write, re-placing its fragment");
                // Rebuild stripes 0..s on a new node, then send stripe s from memory.
                let next = (s, enc.info.cell_checksums[i], enc.cells[i].clone());
                let (node, sink) = self.rebuild_upto(i, s as usize, Some(next)).await?;
                self.holders[i] = node;
                self.sinks[i] = sink;
            }
        }
        Ok(())
    }

    /// Moves fragment `index` to a new node with every cell of the stripes
    /// recorded so far.
    async fn rebuild(&mut self, index: usize) -> Result<(NodeId, Box<dyn FragmentSink>)> {
        let n = self.stripes.len();
        self.rebuild_upto(index, n, None).await
    }

    async fn rebuild_upto(&mut self, index: usize, stripes: usize, next_cell: Option<(u32, u64, bytes::Bytes)>) -> Result<(NodeId, Box<dyn FragmentSink>)> {
        self.failed.insert(self.holders[index].clone());
        let mut avoid = self.failed.clone();
        let frags = Fragments { stripes: &self.stripes[..stripes], ..self.fragments() };
        let r = frags.rebuild_onto_new_node(&self.ctx, index, &mut avoid, next_cell).await;
        self.failed.extend(avoid);
        let r = r?;
        // the new holder got a burst of rebuilt cells: not a measurement of the write
        self.upload[index] = Upload::default();
        bump(&self.ctx.counters.fragments_replaced, 1);
        tracing::info!(path = %self.path, fragment = index, node = %r.0, "fragment re-placed");
        Ok(r)
    }

    /// Flushes the last stripe, waits until every holder has acknowledged its
    /// fragment and publishes the manifest; only then is the object visible.
    pub async fn close(mut self) -> Result<Arc<Manifest>> {
        self.check_open()?;
        self.state = State::Done;
        let result = self.commit().await;
        if result.is_err() {
            self.abort_remote().await;
        }
        result
    }

    async fn commit(&mut self) -> Result<Arc<Manifest>> {
        // The name goes into its parent's index (before the manifest is published: a visible
        // object is always named there) while the last fragments are acknowledged, so the
        // index round adds no time to a commit that waits for its holders anyway.
        let version = WriteVersion { created_unix_ms: self.created_unix_ms, write_id: self.write_id };
        let (ctx, path) = (self.ctx.clone(), self.path.to_string());
        let (stored, named) = tokio::join!(self.finish_fragments(), ctx.index_commit(&path, version));
        if let Err(e) = named.and(stored) {
            if let Some((dir, name)) = entries_of(&path).into_iter().next() {
                ctx.index_remove(dir, vec![(name, Change::Remove(version))]).await;
            }
            return Err(e);
        }
        self.publish().await
    }

    /// Flushes the last stripe and waits until every holder acknowledged its
    /// fragment, re-placing the fragments of holders that failed.
    async fn finish_fragments(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.flush_stripe().await?;
        }
        loop {
            let acks = join_all(self.sinks.iter_mut().map(|s| async move {
                let t = Instant::now();
                (s.finish().await, t.elapsed().as_secs_f64())
            }))
            .await;
            let mut failed = Vec::new();
            for (i, (r, seconds)) in acks.into_iter().enumerate() {
                match r {
                    Ok(()) => self.upload[i].seconds += seconds,
                    Err(e) => failed.push((i, e)),
                }
            }
            if failed.is_empty() {
                break;
            }
            for (i, e) in failed {
                if !e.is_node_fault() {
                    return Err(e);
                }
                tracing::warn!(path = %self.path, fragment = i, node = %self.holders[i], error = %e, "holder failed to acknowledge, re-placing its fragment");
                let (node, sink) = self.rebuild(i).await?;
                self.holders[i] = node;
                self.sinks[i] = sink;
            }
        }
        Ok(())
    }

    /// Publishes the manifest of the stored fragments: the object is visible.
    async fn publish(&mut self) -> Result<Arc<Manifest>> {
        self.observe_uploads();
        let manifest = Manifest {
            path: self.path.to_string(),
            write_id: self.write_id,
            revision: 0,
            length: self.length,
            params: *self.codec.params(),
            holders: self.holders.clone(),
            stripes: std::mem::take(&mut self.stripes),
            created_unix_ms: self.created_unix_ms,
            writer: self.ctx.cfg.writer_id.clone(),
        };
        let mut avoid = self.failed.clone();
        let manifest = match publish_manifest(&self.ctx, manifest, &self.codec, &mut avoid).await? {
            Published::Visible(m) => m,
            Published::Superseded { manifest, by } => {
                // A newer write of the path committed first. Ours is ordered
                // before it, so the close succeeds; its fragments are garbage.
                tracing::info!(path = %self.path, newer = ?by, "a newer write of the path committed first; this write is superseded");
                bump(&self.ctx.counters.writes_superseded, 1);
                let own = DeleteTarget::Write { path: self.path.to_string(), write_id: self.write_id };
                if let Err(e) = broadcast_delete(&self.ctx, &own).await {
                    tracing::warn!(path = %self.path, error = %e, "superseded write not deleted; it is reclaimed later");
                }
                return Ok(manifest);
            }
        };
        if self.overwrite {
            let target = DeleteTarget::OlderWrites { path: self.path.to_string(), newest: manifest.write_version() };
            if let Err(e) = broadcast_delete(&self.ctx, &target).await {
                tracing::warn!(path = %self.path, error = %e, "older versions not deleted; they are reclaimed later");
            }
        }
        bump(&self.ctx.counters.objects_written, 1);
        bump(&self.ctx.counters.bytes_written, self.length);
        tracing::debug!(
            path = %self.path,
            bytes = self.length,
            stripes = manifest.stripes.len(),
            millis = self.started.elapsed().as_millis() as u64,
            "object committed"
        );
        Ok(manifest)
    }

    /// In adaptive mode, every holder's upload (sends and ack) as a speed
    /// sample of it; off, only reads measure peers, as before adaptive mode.
    fn observe_uploads(&self) {
        let Some(a) = &self.ctx.adaptive else { return };
        for (node, u) in self.holders.iter().zip(&self.upload) {
            if u.bytes >= MIN_MEASURED_UPLOAD {
                self.ctx.peer_speeds.observe(node, u.bytes, u.seconds);
            }
        }
        // the whole object: every fragment's bytes from the first send to the last ack
        let wire: u64 = self.upload.iter().map(|u| u.bytes).sum();
        if let Some(t) = self.first_send.filter(|_| wire >= MIN_MEASURED_UPLOAD * self.upload.len() as u64) {
            a.observe_object_upload(wire, t.elapsed().as_secs_f64());
        }
    }

    /// Gives up the write: the fragments sent so far are deleted.
    pub async fn abort(mut self) {
        if self.state != State::Done {
            self.state = State::Done;
            self.abort_remote().await;
        }
    }

    async fn abort_remote(&mut self) {
        let target = DeleteTarget::Write { path: self.path.to_string(), write_id: self.write_id };
        let holders = self.holders.clone();
        join_all(holders.iter().map(|h| self.ctx.transport.delete(h, &target))).await;
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        if self.state == State::Done {
            return;
        }
        // Dropped without close or abort: delete the partial fragments in the
        // background if a runtime is at hand; the holders reclaim them later otherwise.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let ctx = self.ctx.clone();
            let holders = self.holders.clone();
            let target = DeleteTarget::Write { path: self.path.to_string(), write_id: self.write_id };
            rt.spawn(async move {
                join_all(holders.iter().map(|h| ctx.transport.delete(h, &target))).await;
            });
        }
    }
}
