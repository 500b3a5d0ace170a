//! The parallel read pipeline: stripes are fetched ahead of the reader, each
//! from several holders at once (hedged), and decoded from the first `k`
//! cells whose checksum matches the manifest. `seek` fetches only the stripes
//! that the new position needs.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::task::JoinHandle;

use crate::ctx::{bump, timed, Ctx, RETRY_BACKOFF};
use fragstate_core::codec::StripeCodec;
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{Manifest, StripeInfo};
use fragstate_core::ids::{FragmentKey, WriteId};
use fragstate_core::ids::{now_unix_ms, NodeId};
use fragstate_core::restore_model::{fetch_order, PeerEstimate};

/// The cells of one stripe and where they came from.
pub(crate) struct FetchedStripe {
    /// `k + m` slots; at least `k` hold verified cells.
    pub cells: Vec<Option<Bytes>>,
    pub served_by: Vec<NodeId>,
    pub reconstructed: bool,
    /// The hedge delay passed before `k` good cells were in: every other holder was asked.
    pub hedged: bool,
}

/// One object's fragments as seen by a fetch: its path, write, holders and codec.
pub(crate) struct FragmentSet<'a> {
    pub path: &'a Arc<str>,
    pub write_id: WriteId,
    pub holders: &'a [NodeId],
    pub codec: &'a StripeCodec,
}

impl FragmentSet<'_> {
    fn key(&self, index: usize) -> FragmentKey {
        FragmentKey { path: self.path.clone(), write_id: self.write_id, index: index as u8 }
    }

    /// The holders live now: asked of each holder, not by building the whole
    /// view (at 1,000 nodes that was most of what a restore's stripes cost
    /// the client beyond its requests).
    fn live_holders(&self, ctx: &Ctx) -> HashSet<NodeId> {
        self.holders.iter().filter(|h| ctx.transport.is_live(h)).cloned().collect()
    }

    /// Fetches `k` verified cells of `stripe`, never from fragment `skip`.
    /// Holders are asked in [`fetch_order`]: data cells first (decoding them
    /// is a copy) unless this client measured a data holder clearly slower
    /// than a parity holder; `k` plus `hedge` at once, and a failed, corrupt
    /// or late cell brings in the next holder. When every holder has been
    /// asked and fewer than `k` cells came back, holders whose request failed
    /// or that were not live are asked again once live, after each pause of
    /// [`RETRY_BACKOFF`]: with `m` holders dead there is no spare, and one
    /// request lost to a busy peer, or a holder this process has not connected
    /// to yet (a restoring TaskManager just started), must not fail a read
    /// whose cells all exist (each failed read restarts every subtask's
    /// restore in Flink).
    pub async fn fetch(&self, ctx: &Ctx, stripe: u32, info: &StripeInfo, skip: Option<usize>) -> Result<FetchedStripe> {
        let k = self.codec.params().k();
        let n = self.codec.params().fragments();
        let live = self.live_holders(ctx);
        let mut missing: Vec<usize> = Vec::new();
        // Fragments whose request failed or whose holder was not live (not absent, not
        // corrupt): asked again in the retry rounds once live.
        let mut failed: Vec<usize> = Vec::new();
        let mut retries = RETRY_BACKOFF.iter();
        let mut corrupt: Vec<usize> = Vec::new();
        // The last reason each missing fragment is missing, for the error.
        let mut causes: Vec<(usize, String)> = Vec::new();
        let speeds = ctx.peer_speeds.of(self.holders.iter());
        let mut candidates: Vec<Option<Option<PeerEstimate>>> = vec![None; n];
        for i in 0..n {
            if Some(i) == skip {
                continue;
            }
            if live.contains(&self.holders[i]) {
                candidates[i] = Some(speeds[i]);
            } else {
                missing.push(i);
                failed.push(i);
                causes.push((i, format!("node {} is not live", self.holders[i])));
            }
        }
        let cell_len = info.cell_len(k) as u32;
        let mut queue: VecDeque<usize> = fetch_order(k, cell_len as f64, &candidates, now_unix_ms()).into();
        let mut cells: Vec<Option<Bytes>> = vec![None; n];
        let mut served_by = Vec::with_capacity(k);
        let mut good = 0usize;
        // Per fragment, when its request went out (µs after `t0`, + 1; 0: none pending).
        let t0 = Instant::now();
        let pending: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
        let mut inflight = FuturesUnordered::new();
        let request = |i: usize| {
            let node = self.holders[i].clone();
            let key = self.key(i);
            let pending = &pending[i];
            async move {
                let _permit = ctx.requests.acquire().await.expect("the request semaphore is never closed");
                pending.store(t0.elapsed().as_micros() as u64 + 1, Ordering::Relaxed);
                let asked = Instant::now();
                let r = timed(ctx, &node, ctx.transport.get_cell(&node, &key, stripe, cell_len)).await;
                pending.store(0, Ordering::Relaxed);
                if let Ok(cell) = &r {
                    ctx.peer_speeds.observe(&node, cell.len() as u64, asked.elapsed().as_secs_f64());
                }
                (i, node, r)
            }
        };
        let first = (k + ctx.cfg.hedge).min(queue.len());
        for i in queue.drain(..first) {
            inflight.push(request(i));
        }
        let hedge_timer = tokio::time::sleep(ctx.cfg.hedge_delay);
        tokio::pin!(hedge_timer);
        let mut hedged = false;
        while good < k {
            // Keep enough requests in flight to reach k if all of them succeed.
            while inflight.len() < k - good && !queue.is_empty() {
                inflight.push(request(queue.pop_front().unwrap()));
            }
            if inflight.is_empty() && !failed.is_empty() {
                if let Some(backoff) = retries.next() {
                    tokio::time::sleep(*backoff).await;
                    let live = self.live_holders(ctx);
                    // those still not live wait for the next round
                    let (again, later): (Vec<usize>, Vec<usize>) = failed.drain(..).partition(|&i| live.contains(&self.holders[i]));
                    failed = later;
                    missing.retain(|i| !again.contains(i));
                    tracing::debug!(path = %self.path, stripe, fragments = ?again, "asking live holders again after failed requests");
                    inflight.extend(again.into_iter().map(&request));
                    continue;
                }
            }
            if inflight.is_empty() {
                causes.sort_by_key(|c| c.0);
                return Err(Error::StripeUnrecoverable {
                    path: self.path.to_string(),
                    stripe,
                    k,
                    good,
                    missing: sorted(missing),
                    corrupt: sorted(corrupt),
                    causes: causes.iter().map(|(i, why)| format!("; fragment {i}: {why}")).collect(),
                });
            }
            tokio::select! {
                Some((i, node, r)) = inflight.next() => match r {
                    Ok(cell) if self.codec.cell_is_valid(info, i, &cell) => {
                        bump(&ctx.counters.cells_fetched, 1);
                        bump(&ctx.counters.bytes_fetched, cell.len() as u64);
                        ctx.counters.fetch_sources.lock().unwrap_or_else(|p| p.into_inner()).insert(node.clone());
                        cells[i] = Some(cell);
                        served_by.push(node);
                        good += 1;
                    }
                    Ok(_) => {
                        bump(&ctx.counters.corrupt_cells, 1);
                        tracing::warn!(path = %self.path, stripe, fragment = i, %node, "cell checksum mismatch: treating the cell as missing and reporting it to its holder");
                        corrupt.push(i);
                        self.report_corrupt(ctx, node, i, stripe);
                    }
                    Err(e) => {
                        bump(&ctx.counters.failed_requests, 1);
                        tracing::debug!(path = %self.path, stripe, fragment = i, %node, error = %e, "cell request failed");
                        missing.push(i);
                        failed.push(i);
                        causes.retain(|c| c.0 != i);
                        causes.push((i, e.to_string()));
                    }
                },
                _ = &mut hedge_timer, if !hedged => {
                    hedged = true;
                    inflight.extend(queue.drain(..).map(&request));
                }
            }
        }
        // Requests still pending are dropped now. Their holders count as having
        // taken at least the time waited for the cell: without this sample a
        // holder too slow to ever win the race is never measured, stays first
        // in the fetch order, and every stripe waits out the hedge delay.
        let now = t0.elapsed().as_micros() as u64 + 1;
        for (i, p) in pending.iter().enumerate() {
            let since = p.load(Ordering::Relaxed);
            if since > 0 {
                ctx.peer_speeds.observe(&self.holders[i], cell_len as u64, now.saturating_sub(since) as f64 / 1e6);
            }
        }
        let reconstructed = cells[..k].iter().any(Option::is_none);
        if reconstructed {
            bump(&ctx.counters.stripes_reconstructed, 1);
        }
        Ok(FetchedStripe { cells, served_by, reconstructed, hedged })
    }
}

impl FragmentSet<'_> {
    /// Tells the holder of fragment `index` that its cell of `stripe` is
    /// corrupt, without waiting: it verifies the cell and rebuilds it.
    fn report_corrupt(&self, ctx: &Ctx, node: NodeId, index: usize, stripe: u32) {
        bump(&ctx.counters.corrupt_cells_reported, 1);
        let (transport, key, in_flight) = (ctx.transport.clone(), self.key(index), ctx.reports_in_flight.clone());
        in_flight.fetch_add(1, Ordering::AcqRel);
        tokio::spawn(async move {
            if let Err(e) = transport.report_corrupt(&node, &key, stripe).await {
                tracing::debug!(path = %key.path, fragment = key.index, stripe, %node, error = %e, "corrupt cell report not delivered");
            }
            in_flight.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v.dedup();
    v
}

/// What one reader fetched, for progress and recovery timelines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub stripes: u64,
    pub reconstructed_stripes: u64,
    /// Stripes that waited out the hedge delay (a holder asked first was slow or gone).
    pub hedged_stripes: u64,
    pub cells: u64,
    pub bytes_fetched: u64,
    /// Distinct nodes that served at least one cell.
    pub peers: BTreeSet<NodeId>,
}

struct Object {
    manifest: Arc<Manifest>,
    path: Arc<str>,
    codec: StripeCodec,
}

impl Object {
    async fn stripe(&self, ctx: &Ctx, s: u64, stats: &Mutex<ReadStats>) -> Result<Vec<Bytes>> {
        let info = &self.manifest.stripes[s as usize];
        let set = FragmentSet { path: &self.path, write_id: self.manifest.write_id, holders: &self.manifest.holders, codec: &self.codec };
        let fetched = {
            // The stripe's stored bytes: what crosses the network.
            let _budget = ctx.inflight_bytes.acquire(info.stored_len as u64).await;
            set.fetch(ctx, s as u32, info, None).await?
        };
        let logical = self.manifest.stripe_len(s) as usize;
        let data = self.codec.decode_parts(&self.path, s as u32, info, logical, &fetched.cells)?;
        let mut st = stats.lock().unwrap_or_else(|p| p.into_inner());
        st.stripes += 1;
        st.reconstructed_stripes += fetched.reconstructed as u64;
        st.hedged_stripes += fetched.hedged as u64;
        st.cells += fetched.served_by.len() as u64;
        st.bytes_fetched += fetched.cells.iter().flatten().map(|c| c.len() as u64).sum::<u64>();
        st.peers.extend(fetched.served_by);
        Ok(data)
    }
}

/// Reads one committed object. Must be used inside a tokio runtime (the
/// read-ahead runs as tasks on it).
pub struct ObjectReader {
    ctx: Arc<Ctx>,
    obj: Arc<Object>,
    pos: u64,
    /// The stripe being read, as [`StripeCodec::decode_parts`] gave it.
    current: Option<(u64, Vec<Bytes>)>,
    ahead: VecDeque<(u64, JoinHandle<Result<Vec<Bytes>>>)>,
    stats: Arc<Mutex<ReadStats>>,
    bytes_read: AtomicU64,
}

impl ObjectReader {
    pub(crate) fn new(ctx: Arc<Ctx>, manifest: Arc<Manifest>) -> Result<Self> {
        manifest.validate()?;
        let codec = StripeCodec::new(manifest.params)?;
        let path = Arc::from(manifest.path.as_str());
        Ok(ObjectReader {
            ctx,
            obj: Arc::new(Object { manifest, path, codec }),
            pos: 0,
            current: None,
            ahead: VecDeque::new(),
            stats: Arc::default(),
            bytes_read: AtomicU64::new(0),
        })
    }

    pub fn manifest(&self) -> &Arc<Manifest> {
        &self.obj.manifest
    }

    pub fn len(&self) -> u64 {
        self.obj.manifest.length
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn position(&self) -> u64 {
        self.pos
    }

    pub fn stats(&self) -> ReadStats {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Moves the read position; only the stripes needed from there on are fetched.
    pub fn seek(&mut self, offset: u64) -> Result<()> {
        if offset > self.len() {
            return Err(Error::InvalidSeek { path: self.obj.manifest.path.clone(), offset, length: self.len() });
        }
        self.pos = offset;
        Ok(())
    }

    /// Reads up to `buf.len()` bytes at the current position; 0 at the end.
    pub async fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        if buf.is_empty() || self.pos >= self.len() {
            return Ok(0);
        }
        let stripe_len = self.obj.manifest.params.stripe_data_len();
        let s = self.pos / stripe_len;
        if self.current.as_ref().map(|c| c.0) != Some(s) {
            let data = self.fetch_stripe(s).await?;
            self.current = Some((s, data));
        }
        let parts = &self.current.as_ref().unwrap().1;
        let off = (self.pos - s * stripe_len) as usize;
        let n = copy_from_parts(parts, off, buf);
        if n == 0 {
            // Never 0 before the end: a short stripe must not read as the end of the object.
            return Err(Error::InvalidState { path: self.obj.manifest.path.clone(), reason: format!("stripe {s} ends before offset {off}") });
        }
        self.pos += n as u64;
        self.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
        bump(&self.ctx.counters.bytes_read, n as u64);
        Ok(n)
    }

    /// Reads from the current position to the end. The buffer grows with
    /// the bytes actually read, not with the length the manifest claims (a
    /// manifest from a hostile peer may claim terabytes).
    pub async fn read_to_end(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut chunk = vec![0u8; (self.len() - self.pos).min(4 << 20) as usize];
        loop {
            let n = self.read(&mut chunk).await?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }

    /// Returns stripe `s`, keeping the next `read_ahead` stripes scheduled
    /// (each waits for its share of the client's in-flight bytes).
    async fn fetch_stripe(&mut self, s: u64) -> Result<Vec<Bytes>> {
        if self.ahead.front().map(|a| a.0) != Some(s) {
            // A seek: what was fetched ahead is for another position.
            for (_, h) in self.ahead.drain(..) {
                h.abort();
            }
        }
        let total = self.obj.manifest.stripes.len() as u64;
        let mut next = self.ahead.back().map(|a| a.0 + 1).unwrap_or(s);
        while self.ahead.len() < self.ctx.cfg.read_ahead && next < total {
            let (ctx, obj, stats) = (self.ctx.clone(), self.obj.clone(), self.stats.clone());
            self.ahead.push_back((next, tokio::spawn(async move { obj.stripe(&ctx, next, &stats).await })));
            next += 1;
        }
        let (_, handle) = self.ahead.pop_front().expect("the stripe being read is always scheduled");
        match handle.await {
            Ok(r) => r,
            Err(e) => Err(Error::InvalidState { path: self.obj.manifest.path.clone(), reason: format!("stripe {s} fetch task failed: {e}") }),
        }
    }
}

/// Copies the bytes of `parts` (in order) from `off` on into `buf`, as many
/// as fit; 0 when `off` is at or past their end.
fn copy_from_parts(parts: &[Bytes], mut off: usize, buf: &mut [u8]) -> usize {
    let mut n = 0;
    for p in parts {
        if off >= p.len() {
            off -= p.len();
            continue;
        }
        let m = (p.len() - off).min(buf.len() - n);
        buf[n..n + m].copy_from_slice(&p[off..off + m]);
        n += m;
        off = 0;
        if n == buf.len() {
            break;
        }
    }
    n
}

impl Drop for ObjectReader {
    fn drop(&mut self) {
        for (_, h) in self.ahead.drain(..) {
            h.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_cross_part_boundaries_and_stop_at_the_end() {
        let parts = [Bytes::from_static(b"abc"), Bytes::from_static(b"de"), Bytes::from_static(b"fgh")];
        let mut buf = [0u8; 4];
        assert_eq!(copy_from_parts(&parts, 0, &mut buf), 4);
        assert_eq!(&buf, b"abcd");
        assert_eq!(copy_from_parts(&parts, 2, &mut buf), 4);
        assert_eq!(&buf, b"cdef");
        assert_eq!(copy_from_parts(&parts, 6, &mut buf), 2);
        assert_eq!(&buf[..2], b"gh");
        assert_eq!(copy_from_parts(&parts, 8, &mut buf), 0);
        assert_eq!(copy_from_parts(&parts, 80, &mut buf), 0);
        assert_eq!(copy_from_parts(&parts, 1, &mut []), 0);
    }
}
