//! The client side of the fragment protocol: pooled request streams per
//! peer, one request/response with timeouts, retried on a new stream when
//! a stream broke before its answer.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use libp2p::{PeerId, Stream};
use tokio::sync::oneshot;

use fragstate_core::error::{Error, Result};
use fragstate_core::ids::NodeId;

use crate::config::{Membership, FRAG_PROTOCOL};
use crate::state::{lock, Cmd, DialCause, Inner};
use crate::wire::{self, Expect, Frame, Kind, WireError};

pub(crate) fn node_fault(node: &NodeId, e: impl std::fmt::Display) -> Error {
    Error::NodeUnavailable { node: node.clone(), reason: e.to_string() }
}

pub(crate) fn expect_kind(node: &NodeId, f: &Frame, want: Kind) -> Result<()> {
    if f.kind == want {
        Ok(())
    } else {
        Err(node_fault(node, format!("protocol error: expected a {want:?} frame, got {:?}", f.kind)))
    }
}

impl Inner {
    pub(crate) fn peer_of(&self, node: &NodeId) -> Result<PeerId> {
        let pid: PeerId = node.as_str().parse().map_err(|_| node_fault(node, "not a peer id"))?;
        if lock(&self.peers).get(&pid).is_none_or(|p| !p.reachable(self.cfg.membership)) {
            return Err(node_fault(node, match self.cfg.membership {
                Membership::Mesh => "not connected",
                Membership::Swim => "not a live member",
            }));
        }
        Ok(pid)
    }

    pub(crate) async fn open_stream(&self, peer: PeerId) -> Result<Stream> {
        let mut control = self.control.clone();
        let node = NodeId::from(peer.to_base58());
        if self.cfg.membership == Membership::Swim {
            self.connect(peer, self.cfg.request_timeout, DialCause::Request).await.map_err(|e| node_fault(&node, e))?;
        }
        match tokio::time::timeout(self.cfg.request_timeout, control.open_stream(peer, FRAG_PROTOCOL)).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(node_fault(&node, e)),
            Err(_) => Err(Error::Timeout { node, millis: self.cfg.request_timeout.as_millis() as u64 }),
        }
    }

    /// Whether a connection to `peer` is up.
    pub(crate) fn connected(&self, peer: &PeerId) -> bool {
        lock(&self.peers).get(peer).is_some_and(|p| p.connections > 0)
    }

    /// Connects to `peer` at its known addresses unless it is connected
    /// ([`Membership::Swim`] opens connections on demand). libp2p-stream
    /// would dial by itself, but without addresses of its own and with room
    /// for one dial request at a time: a burst of streams to unconnected
    /// peers lost dials and waited out the timeout. `cause` is counted
    /// ([`Traffic::dials`](crate::Traffic)) when a dial is needed.
    pub(crate) async fn connect(&self, peer: PeerId, timeout: Duration, cause: DialCause) -> std::result::Result<(), String> {
        {
            let mut peers = lock(&self.peers);
            let p = peers.entry(peer).or_default();
            p.last_used = Some(Instant::now());
            if p.connections > 0 {
                return Ok(());
            }
        }
        self.counters.dials[cause as usize].fetch_add(1, Ordering::Relaxed);
        tracing::debug!(me = %self.peer_id, %peer, cause = cause.name(), "dialling");
        let (done, answer) = oneshot::channel();
        let stopping = || "the node is stopping".to_string();
        self.cmd.send(Cmd::Dial { peer, done }).map_err(|_| stopping())?;
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(stopping()),
            Err(_) => Err(format!("no connection within {} ms", timeout.as_millis())),
        }
    }

    /// A pooled stream to `peer` (and whether it was reused) or a new one.
    pub(crate) async fn take_stream(&self, peer: PeerId) -> Result<(Stream, bool)> {
        let pooled = {
            let mut pool = lock(&self.pool);
            let v = pool.get_mut(&peer);
            // The server closes streams idle for long; don't reuse old ones.
            v.and_then(|v| std::iter::from_fn(|| v.pop()).find(|(_, since)| since.elapsed() < Duration::from_secs(20)))
        };
        // Noted after the pool's lock is released: one lock at a time.
        if let Some((s, _)) = pooled {
            lock(&self.peers).entry(peer).or_default().last_used = Some(Instant::now());
            return Ok((s, true));
        }
        Ok((self.open_stream(peer).await?, false))
    }

    pub(crate) fn put_back(&self, peer: PeerId, s: Stream) {
        let mut pool = lock(&self.pool);
        let v = pool.entry(peer).or_default();
        if v.len() < 64 {
            v.push((s, Instant::now()));
        }
    }

    pub(crate) async fn timed<T>(&self, node: &NodeId, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        match tokio::time::timeout(self.cfg.request_timeout, f).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout { node: node.clone(), millis: self.cfg.request_timeout.as_millis() as u64 }),
        }
    }

    /// Writes one frame to `node` within the request timeout (both sides: a
    /// peer that stops reading loses the stream instead of holding it).
    pub(crate) async fn send(&self, node: &NodeId, s: &mut Stream, kind: Kind, body: &[u8], extra: &[u8]) -> Result<()> {
        self.timed(node, wire::write_frame(s, kind, body, extra)).await
    }

    /// Reads the response to a request: an `Err` frame becomes the error it carries.
    pub(crate) async fn response(&self, node: &NodeId, s: &mut Stream, expect: Expect) -> Result<Frame> {
        let f = self
            .timed(node, wire::read_frame(s, expect))
            .await
            .map_err(|e| if matches!(e, Error::Io { .. }) { node_fault(node, e) } else { e })?
            .ok_or_else(|| node_fault(node, "stream closed before the response"))?;
        if f.kind == Kind::Err {
            let we: WireError = wire::decode("error", &f.body)?;
            return Err(we.into_error(node));
        }
        Ok(f)
    }

    /// Whether a failed attempt is worth another one: the stream broke
    /// before an answer (a reused stream the peer closed, or a new one its
    /// accept queue dropped under a burst) while the peer is still connected.
    pub(crate) fn retryable(&self, peer: &PeerId, e: &Error, attempt: usize) -> bool {
        attempt + 1 < REQUEST_ATTEMPTS
            && matches!(e, Error::NodeUnavailable { .. })
            && lock(&self.peers).get(peer).is_some_and(|p| p.reachable(self.cfg.membership))
    }

    /// One request and its response on a pooled stream, retried on a new
    /// stream while [`Self::retryable`] says so. Returns the response with
    /// its stream, which the caller puts back or keeps (an upload goes on
    /// on it). The one retry loop of the client side.
    pub(crate) async fn exchange(&self, node: &NodeId, kind: Kind, body: &[u8], extra: &[u8], expect: Expect) -> Result<(Frame, PeerId, Stream)> {
        let peer = self.peer_of(node)?;
        let mut attempt = 0;
        loop {
            let (mut s, reused) = self.take_stream(peer).await?;
            let sent = self.send(node, &mut s, kind, body, extra).await;
            let r = match sent {
                Ok(()) => self.response(node, &mut s, expect).await,
                Err(e) => Err(node_fault(node, e)),
            };
            match r {
                Ok(f) => return Ok((f, peer, s)),
                Err(e) if self.retryable(&peer, &e, attempt) => {
                    tracing::debug!(%peer, attempt, reused, error = %e, "request failed, retrying on a new stream");
                    if !reused {
                        tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
                    }
                    attempt += 1;
                }
                Err(e) => {
                    // A remote error answer leaves the stream in a clean state.
                    if !matches!(e, Error::NodeUnavailable { .. } | Error::Timeout { .. }) {
                        self.put_back(peer, s);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// [`Self::exchange`] for a request whose stream is free again after the response.
    pub(crate) async fn request(&self, node: &NodeId, kind: Kind, body: &[u8], extra: &[u8]) -> Result<Frame> {
        let (f, peer, s) = self.exchange(node, kind, body, extra, Expect::response(kind)).await?;
        self.put_back(peer, s);
        Ok(f)
    }

    /// [`Self::request`] with the answer bounded tighter than its kind's
    /// limit (a cell of the length the manifest says).
    pub(crate) async fn request_expecting(&self, node: &NodeId, kind: Kind, body: &[u8], expect: Expect) -> Result<Frame> {
        let (f, peer, s) = self.exchange(node, kind, body, &[], expect).await?;
        self.put_back(peer, s);
        Ok(f)
    }
}

/// Attempts of one request (libp2p-stream drops inbound streams that arrive
/// while its accept queue, one slot, is full).
pub(crate) const REQUEST_ATTEMPTS: usize = 5;
