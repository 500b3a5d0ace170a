//! What the pipelines share: the client's transport, configuration, request
//! budget and counters ([`Ctx`]), a timeout around one request, and the
//! broadcast delete. Below `writer`, `reader` and `repair`, which only
//! depend downwards on it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::future::join_all;
use tokio::sync::Semaphore;

use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::error::{Error, Result};
use fragstate_core::ids::{now_unix_ms, NodeId};
use fragstate_core::params::CodingParams;
use fragstate_core::placement::{self, Placement};
use fragstate_core::restore_model::PeerEstimate;

use crate::buffers::StripeBuffers;
use crate::config::ClientConfig;
use crate::transport::Transport;

/// Counters of one client since it started.
#[derive(Default)]
pub(crate) struct Counters {
    pub objects_written: AtomicU64,
    pub bytes_written: AtomicU64,
    pub objects_opened: AtomicU64,
    pub bytes_read: AtomicU64,
    pub cells_fetched: AtomicU64,
    pub bytes_fetched: AtomicU64,
    pub stripes_reconstructed: AtomicU64,
    pub corrupt_cells: AtomicU64,
    pub corrupt_cells_reported: AtomicU64,
    pub failed_requests: AtomicU64,
    pub fragments_replaced: AtomicU64,
    pub fragments_repaired: AtomicU64,
    /// Writes that lost to a newer write of the same path committed first.
    pub writes_superseded: AtomicU64,
    /// Writes (or fragment replacements) that found too few live nodes.
    pub placement_failures: AtomicU64,
    /// Nodes that served at least one cell to this client.
    pub fetch_sources: std::sync::Mutex<HashSet<NodeId>>,
}

/// What this client measured of each peer's cell answers (adaptive reads,
/// issue 14): effective throughput of whole requests, queueing included.
/// At most [`PeerSpeeds::MAX_PEERS`] peers; the longest unseen goes first.
#[derive(Default)]
pub(crate) struct PeerSpeeds(std::sync::Mutex<HashMap<NodeId, PeerEstimate>>);

impl PeerSpeeds {
    pub const MAX_PEERS: usize = 4096;

    /// A cell of `bytes` from `node` that took `seconds` from request to answer.
    pub fn observe(&self, node: &NodeId, bytes: u64, seconds: f64) {
        let now = now_unix_ms();
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= Self::MAX_PEERS && !m.contains_key(node) {
            if let Some(oldest) = m.iter().min_by_key(|(_, e)| e.updated_unix_ms).map(|(n, _)| n.clone()) {
                m.remove(&oldest);
            }
        }
        // the round trip is inside `seconds`: the rate is what a whole request yields
        m.entry(node.clone()).or_default().observe(bytes, seconds, 0.0, now);
    }

    /// The estimates of `nodes`, in their order (`None`: not measured).
    pub fn of<'a>(&self, nodes: impl Iterator<Item = &'a NodeId>) -> Vec<Option<PeerEstimate>> {
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        nodes.map(|n| m.get(n).copied()).collect()
    }
}

pub(crate) fn bump(c: &AtomicU64, by: u64) {
    c.fetch_add(by, Ordering::Relaxed);
}

pub(crate) struct Ctx {
    pub transport: Arc<dyn Transport>,
    pub cfg: ClientConfig,
    pub requests: Semaphore,
    pub counters: Counters,
    pub stripe_buffers: StripeBuffers,
    /// Corrupt-cell reports sent and not yet answered ([`crate::Client::settle_reports`]).
    pub reports_in_flight: Arc<AtomicU64>,
    /// How fast each peer answered cell requests; orders the holders a read asks.
    pub peer_speeds: PeerSpeeds,
}

impl Ctx {
    /// The holders of a new object `key` with `params`, among the nodes live now.
    pub fn place_new_object(&self, key: &[u8], params: CodingParams) -> Result<Placement> {
        let live = self.transport.live_nodes();
        let avoid: HashSet<NodeId> = self.cfg.exclude_node.iter().cloned().collect();
        placement::place(key, &live, params.fragments(), &avoid, &HashSet::new(), self.cfg.placement, (params.k(), params.m()))
    }
}

/// Runs one request to `node`, failing it after the configured request timeout.
pub(crate) async fn timed<T>(ctx: &Ctx, node: &NodeId, request: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(ctx.cfg.request_timeout, request).await {
        Ok(r) => r,
        Err(_) => Err(Error::Timeout { node: node.clone(), millis: ctx.cfg.request_timeout.as_millis() as u64 }),
    }
}


/// Sends a delete to every live node; fails only if no node took it.
pub(crate) async fn broadcast_delete(ctx: &Ctx, target: &DeleteTarget) -> Result<DeleteStats> {
    let live = ctx.transport.live_nodes();
    let answers = join_all(live.iter().map(|n| timed(ctx, &n.id, ctx.transport.delete(&n.id, target)))).await;
    let mut total = DeleteStats::default();
    let mut last_err = None;
    let mut ok = 0;
    for a in answers {
        match a {
            Ok(s) => {
                ok += 1;
                total += s;
            }
            Err(e) => {
                tracing::warn!(?target, error = %e, "delete failed on one node");
                last_err = Some(e);
            }
        }
    }
    match last_err {
        Some(e) if ok == 0 => Err(e),
        _ => Ok(total),
    }
}

