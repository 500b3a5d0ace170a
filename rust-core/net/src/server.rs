//! The server side of the fragment protocol: accepts streams, answers
//! requests from the local store, receives fragment uploads.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::{AsyncWriteExt, StreamExt};
use libp2p::{PeerId, Stream};

use fragstate_core::delete::DeleteTarget;
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{self, CellFrame, FragmentHeader};
use fragstate_core::ids::{FragmentKey, NodeId};

use crate::membership::violation_or_log;
use crate::peer_limit::{FramePermit, PeerLimit, MAX_STREAMS, STREAMS_PER_PEER};
use crate::state::{blocking, Inner};
use crate::wire::{self, Expect, Frame, GetCellReq, HeldCheckReq, IndexReadReq, IndexUpdateReq, Kind, ListReq, WireDelete, WireDeleteStats, WireError};

pub(crate) async fn accept_task(inner: Arc<Inner>, mut incoming: libp2p_stream::IncomingStreams) {
    let mut shutdown = inner.shutdown.subscribe();
    let limit = Arc::new(tokio::sync::Semaphore::new(MAX_STREAMS));
    let per_peer = PeerLimit::new(STREAMS_PER_PEER);
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            next = incoming.next() => {
                let Some((peer, stream)) = next else { break };
                // Dropping the stream closes it unanswered; the peer's client retries on a new one.
                let Some(peer_permit) = per_peer.try_acquire(&peer) else {
                    inner.counters.streams_refused.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(%peer, limit = STREAMS_PER_PEER, "the peer has its share of open streams: refusing one");
                    continue;
                };
                let Ok(permit) = limit.clone().try_acquire_owned() else {
                    inner.counters.streams_refused.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(%peer, limit = MAX_STREAMS, "too many open streams: refusing one");
                    continue;
                };
                let inner = inner.clone();
                let mut shutdown = inner.shutdown.subscribe();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = shutdown.changed() => {}
                        _ = serve_stream(&inner, peer, stream) => {}
                    }
                    drop((permit, peer_permit));
                });
            }
        }
    }
}

/// How long a server waits for the next request on an idle pooled stream.
pub(crate) const IDLE_STREAM: Duration = Duration::from_secs(60);

/// What came next on a stream.
enum Next {
    /// A frame, and its bytes taken from the sender's budget until it is dropped.
    Frame(Frame, FramePermit),
    /// The peer closed the stream between frames.
    End,
    /// No frame started within the wait.
    Idle,
}

/// Reads the next frame from `peer`: its header within `wait`, then its
/// body's bytes from the peer's and the node's frame budgets
/// ([`FRAME_BYTES_PER_PEER`](crate::FRAME_BYTES_PER_PEER)), then the body, both within the request
/// timeout. The header is checked against `expect` before anything else.
async fn next_frame(inner: &Inner, peer: PeerId, node: &NodeId, s: &mut Stream, expect: Expect, wait: Duration) -> Result<Next> {
    let head = match tokio::time::timeout(wait, wire::read_frame_header(s, expect)).await {
        Err(_) => return Ok(Next::Idle),
        Ok(head) => head?,
    };
    let Some((kind, len)) = head else { return Ok(Next::End) };
    let permit = inner.timed(node, async { Ok(inner.frame_bytes.acquire(&peer, len).await) }).await?;
    let frame = inner.timed(node, wire::read_frame_body(s, kind, len)).await?;
    Ok(Next::Frame(frame, permit))
}

pub(crate) async fn serve_stream(inner: &Arc<Inner>, peer: PeerId, mut s: Stream) {
    let node = NodeId::from(peer.to_base58());
    loop {
        let (frame, _budget) = match next_frame(inner, peer, &node, &mut s, Expect::Request, IDLE_STREAM).await {
            Ok(Next::Frame(f, budget)) => (f, budget),
            Ok(Next::End | Next::Idle) => break,
            Err(e) => {
                violation_or_log(inner, peer, &e);
                break;
            }
        };
        if let Err(e) = serve_request(inner, peer, &node, &mut s, frame).await {
            violation_or_log(inner, peer, &e);
            break;
        }
    }
    // Closing flushes: bounded too, for a peer that stopped reading.
    let _ = tokio::time::timeout(inner.cfg.request_timeout, s.close()).await;
}

async fn reply_err(inner: &Inner, node: &NodeId, s: &mut Stream, e: &Error) -> Result<()> {
    inner.send(node, s, Kind::Err, &wire::encode(&WireError::from_error(e)), &[]).await
}

async fn reply<T>(inner: &Inner, node: &NodeId, s: &mut Stream, r: Result<T>, ok: impl FnOnce(T) -> (Kind, Vec<u8>)) -> Result<()> {
    match r {
        Ok(v) => {
            let (k, b) = ok(v);
            inner.send(node, s, k, &b, &[]).await
        }
        Err(e) => reply_err(inner, node, s, &e).await,
    }
}

/// Serves one request. An `Err` return ends the stream (and, for a protocol
/// violation, the connection); errors of the operation itself are answered.
pub(crate) async fn serve_request(inner: &Arc<Inner>, peer: PeerId, node: &NodeId, s: &mut Stream, f: Frame) -> Result<()> {
    match f.kind {
        Kind::Hello => {
            let h = wire::decode_hello(&f.body)?;
            inner.record_hello(peer, h);
            let reply = wire::encode(&inner.my_hello(false));
            inner.send(node, s, Kind::HelloReply, &reply, &[]).await?;
            inner.count_membership_message(reply.len());
            Ok(())
        }
        Kind::OpenFragment => {
            let header = format::decode_fragment_header(&f.body).map_err(|e| Error::protocol("frame body (fragment header)", e.to_string()))?;
            let Some(_upload) = inner.uploads.try_acquire(&peer) else {
                inner.counters.uploads_refused.fetch_add(1, Ordering::Relaxed);
                let reason = format!("{} uploads from this writer in progress already (the per-peer bound)", inner.uploads.per_peer());
                return reply_err(inner, node, s, &Error::NodeUnavailable { node: inner.id.clone(), reason }).await;
            };
            let opened = inner.store().and_then(|st| blocking(|| st.begin_fragment(&header)));
            let ok = opened.is_ok();
            reply(inner, node, s, opened, |_| (Kind::Ok, vec![])).await?;
            if ok {
                receive_fragment(inner, peer, node, s, header).await?;
            }
            Ok(())
        }
        Kind::GetCell => {
            let r: GetCellReq = wire::decode("get cell", &f.body)?;
            let key = FragmentKey { path: Arc::from(r.path.as_str()), write_id: r.write_id, index: r.index };
            let got = inner.store().and_then(|st| blocking(|| st.get_cell(&key, r.stripe)));
            match got {
                Ok(cell) => {
                    let head = CellFrame { stripe: r.stripe, len: cell.len() as u32, checksum: 0 }.encode();
                    inner.send(node, s, Kind::CellData, &head, &cell).await
                }
                Err(e) => reply_err(inner, node, s, &e).await,
            }
        }
        Kind::PutManifest => {
            let m = format::decode_manifest(&f.body).map_err(|e| Error::protocol("frame body (manifest)", e.to_string()))?;
            let r = inner.store().and_then(|st| blocking(|| st.put_manifest(Arc::new(m))));
            reply(inner, node, s, r, |put| (Kind::ManifestPut, wire::encode(&put))).await
        }
        Kind::GetManifest => {
            let path = std::str::from_utf8(&f.body).map_err(|_| Error::protocol("frame body (path)", "not UTF-8"))?;
            match inner.store().map(|st| st.get_manifest(path)) {
                Ok(Some(m)) => inner.send(node, s, Kind::ManifestData, &format::encode_manifest(&m), &[]).await,
                Ok(None) => inner.send(node, s, Kind::NoManifest, &[], &[]).await,
                Err(e) => reply_err(inner, node, s, &e).await,
            }
        }
        Kind::List => {
            let req: ListReq = wire::decode("list", &f.body)?;
            let r = inner.store().map(|st| wire::list_page(st.list(&req.prefix), req.after.as_deref(), wire::LIST_PAGE_BYTES));
            reply(inner, node, s, r, |page| (Kind::Listing, wire::encode(&page))).await
        }
        Kind::Delete => {
            let t: WireDelete = wire::decode("delete", &f.body)?;
            let target = DeleteTarget::from(t);
            let r = blocking(|| inner.local_delete(&target));
            reply(inner, node, s, r, |st| (Kind::Deleted, wire::encode(&WireDeleteStats::from(st)))).await
        }
        Kind::ReportCorrupt => {
            let r: GetCellReq = wire::decode("report corrupt", &f.body)?;
            let key = FragmentKey { path: Arc::from(r.path.as_str()), write_id: r.write_id, index: r.index };
            tracing::debug!(%peer, path = %key.path, fragment = key.index, stripe = r.stripe, "a reader reports a corrupt cell");
            // A client node holds nothing: the report is ignored.
            if inner.cfg.store.is_some() {
                inner.scrub.report(key, r.stripe);
            }
            inner.send(node, s, Kind::Ok, &[], &[]).await
        }
        Kind::CheckHeld => {
            let req: HeldCheckReq = wire::decode("check held", &f.body)?;
            let r = blocking(|| inner.answer_held(node, &req.queries));
            reply(inner, node, s, r, |answers| (Kind::HeldAnswers, wire::encode(&answers))).await
        }
        Kind::IndexUpdate => {
            let req: IndexUpdateReq = wire::decode_canonical("index update", &f.body)?;
            let r = inner.index_update(&req);
            reply(inner, node, s, r, |_| (Kind::Ok, vec![])).await
        }
        Kind::IndexRead => {
            let req: IndexReadReq = wire::decode("index read", &f.body)?;
            let r = inner.index_read(&req).and_then(|a| wire::try_encode("index answer", &a));
            reply(inner, node, s, r, |body| (Kind::IndexAnswer, body)).await
        }
        Kind::Stat => inner.send(node, s, Kind::Stats, &wire::encode(&inner.stats_with_client()), &[]).await,
        Kind::Probe => {
            static ZEROS: [u8; wire::MAX_PROBE_BYTES as usize] = [0; wire::MAX_PROBE_BYTES as usize];
            let n: u32 = wire::decode("probe", &f.body)?;
            if n > wire::MAX_PROBE_BYTES {
                let e = Error::invalid("probe bytes", n, format!("≤ {}", wire::MAX_PROBE_BYTES));
                return reply_err(inner, node, s, &e).await;
            }
            inner.send(node, s, Kind::CellData, &ZEROS[..n as usize], &[]).await
        }
        #[cfg(feature = "bench")]
        Kind::BenchSink | Kind::BenchSource if inner.cfg.serve_bench_frames => serve_bench(inner, node, s, f).await,
        other => Err(Error::protocol("frame", format!("{other:?} frame where a request was expected"))),
    }
}

/// Receives the cells of one fragment until `Finish`; answers `Ok` once the
/// fragment is durable, or the first error of the upload.
pub(crate) async fn receive_fragment(inner: &Arc<Inner>, peer: PeerId, writer: &NodeId, s: &mut Stream, header: FragmentHeader) -> Result<()> {
    let key = header.key();
    let cell_size = header.params.cell_size() as u32;
    let store = inner.store()?.clone();
    let mut failed: Option<Error> = None;
    loop {
        let (f, _budget) = match next_frame(inner, peer, writer, s, Expect::Upload { cell_size }, inner.cfg.request_timeout).await? {
            Next::Frame(f, budget) => (f, budget),
            Next::End => return Err(Error::NodeUnavailable { node: writer.clone(), reason: "upload stream closed before Finish (writer gone)".into() }),
            Next::Idle => return Err(Error::Timeout { node: writer.clone(), millis: inner.cfg.request_timeout.as_millis() as u64 }),
        };
        match f.kind {
            Kind::Cell => {
                let (frame, cell) = wire::split_cell("cell", f.body, cell_size)?;
                if failed.is_none() {
                    if let Err(e) = blocking(|| store.append_cell(&key, frame.stripe, frame.checksum, cell)) {
                        tracing::warn!(path = %key.path, fragment = key.index, error = %e, "cell refused");
                        failed = Some(e);
                    }
                }
            }
            Kind::Finish => {
                let r = match failed {
                    Some(e) => Err(e),
                    None => blocking(|| store.finish_fragment(&key)),
                };
                return reply(inner, writer, s, r, |_| (Kind::Ok, vec![])).await;
            }
            _ => unreachable!("Expect::Upload admits Cell and Finish frames only"),
        }
    }
}

/// Benchmark frames (`fragstate bench net`): a sink that acknowledges a
/// payload, a source that sends the bytes asked for. Only in builds with
/// the `bench` feature, and only on nodes started to serve them.
#[cfg(feature = "bench")]
async fn serve_bench(inner: &Inner, node: &NodeId, s: &mut Stream, f: Frame) -> Result<()> {
    match f.kind {
        Kind::BenchSink => {
            // Benchmark: the body was the payload; acknowledge it.
            inner.send(node, s, Kind::Ok, &[], &[]).await
        }
        Kind::BenchSource => {
            let n: u64 = wire::decode("bench source", &f.body)?;
            let chunk = vec![0x5au8; 1 << 20];
            let mut left = n;
            while left > 0 {
                let take = left.min(chunk.len() as u64) as usize;
                inner.send(node, s, Kind::CellData, &chunk[..take], &[]).await?;
                left -= take as u64;
            }
            inner.send(node, s, Kind::Ok, &[], &[]).await
        }
        _ => unreachable!("serve_bench takes bench frames only"),
    }
}
