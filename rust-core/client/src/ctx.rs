//! What the pipelines share: the client's transport, configuration, request
//! budget and counters ([`Ctx`]), a timeout around one request, and the
//! broadcast delete. Below `writer`, `reader` and `repair`, which only
//! depend downwards on it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::Semaphore;

use fragstate_core::delete::{DeleteStats, DeleteTarget};
use fragstate_core::error::{Error, Result};
use fragstate_core::format::ObjectSummary;
use fragstate_core::ids::{now_unix_ms, NodeId};
use fragstate_core::params::CodingParams;
use fragstate_core::placement::{self, NodeInfo, Placement};
use fragstate_core::restore_model::{PeerEstimate, TRUSTED_FOR_MS, TRUSTED_SAMPLES};

use crate::adaptive::Adaptive;
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
    /// Holders of new objects moved to a parity position for being slow (adaptive mode).
    pub holders_moved_to_parity: AtomicU64,
    /// Speed probes answered (adaptive mode).
    pub speed_probes: AtomicU64,
    /// Manifest lookups (opens, stats, creates), the requests they sent, and those
    /// the first round settled ([`fragstate_core::lookup`]).
    pub manifest_lookups: AtomicU64,
    pub manifest_requests: AtomicU64,
    pub manifest_lookups_by_path: AtomicU64,
    /// Directory index reads, those that settled, the index requests sent
    /// (reads, changes, births, fills: `crate::dir_index`) and the rebuilds.
    pub index_reads: AtomicU64,
    pub index_reads_settled: AtomicU64,
    pub index_requests: AtomicU64,
    pub index_rebuilds: AtomicU64,
    /// Nodes that served at least one cell to this client.
    pub fetch_sources: std::sync::Mutex<HashSet<NodeId>>,
}

/// One peer as this client's transfers measured it.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerStats {
    pub node: String,
    /// Smoothed bytes per second of whole requests (round trip included).
    pub bytes_per_s: u64,
    pub samples: u64,
    /// Milliseconds since the last sample.
    pub age_ms: u64,
    /// Whether reads and adaptive mode go by it (enough samples, recent enough).
    pub trusted: bool,
}

/// Bytes of one speed probe: enough for a 20 Mbit/s link to show its rate
/// (0.1 s), little on a fast one.
pub const PROBE_BYTES: u32 = 256 << 10;
/// A peer whose last sample is older than this is probed: half the time an
/// estimate is trusted, so that a peer adaptive placement avoids (a slow one,
/// which no upload measures any more) stays measured, neither mistaken for
/// an unmeasured one nor left out once its link has recovered.
pub const PROBE_AFTER_MS: u64 = TRUSTED_FOR_MS / 2;
/// Peers probed at once by one client, at most.
pub const MAX_PROBES_IN_FLIGHT: usize = 4;

/// What this client measured of each peer's cell answers, uploads and speed
/// probes (issue 14): effective throughput of whole requests, queueing
/// included. At most [`PeerSpeeds::MAX_PEERS`] peers; the longest unseen goes first.
#[derive(Default)]
pub(crate) struct PeerSpeeds {
    estimates: std::sync::Mutex<HashMap<NodeId, PeerEstimate>>,
    /// When each peer was last probed (Unix ms).
    probed: std::sync::Mutex<HashMap<NodeId, u64>>,
}

impl PeerSpeeds {
    pub const MAX_PEERS: usize = 4096;

    /// Of `nodes`, those without a sample for [`PROBE_AFTER_MS`] and not
    /// probed as long; they count as probed from now.
    pub fn due_for_probe(&self, nodes: &[NodeInfo], now: u64) -> Vec<NodeId> {
        let estimates = self.estimates.lock().unwrap_or_else(|p| p.into_inner());
        let mut probed = self.probed.lock().unwrap_or_else(|p| p.into_inner());
        if probed.len() >= Self::MAX_PEERS {
            probed.retain(|_, t| now.saturating_sub(*t) <= PROBE_AFTER_MS);
        }
        let recent = |t: u64| now.saturating_sub(t) <= PROBE_AFTER_MS;
        let mut due = Vec::new();
        for n in nodes {
            let measured = estimates.get(&n.id).is_some_and(|e| e.samples >= TRUSTED_SAMPLES && recent(e.updated_unix_ms));
            if !measured && !probed.get(&n.id).is_some_and(|&t| recent(t)) {
                probed.insert(n.id.clone(), now);
                due.push(n.id.clone());
            }
        }
        due
    }

    /// A transfer of `bytes` with `node` that took `seconds`: a cell from
    /// request to answer, or an uploaded fragment's time in its sends and ack.
    pub fn observe(&self, node: &NodeId, bytes: u64, seconds: f64) {
        let now = now_unix_ms();
        let mut m = self.estimates.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= Self::MAX_PEERS && !m.contains_key(node) {
            if let Some(oldest) = m.iter().min_by_key(|(_, e)| e.updated_unix_ms).map(|(n, _)| n.clone()) {
                m.remove(&oldest);
            }
        }
        // the round trip is inside `seconds`: the rate is what a whole request yields
        m.entry(node.clone()).or_default().observe(bytes, seconds, 0.0, now);
    }

    /// Every peer's estimate, by node id.
    pub fn snapshot(&self) -> Vec<PeerStats> {
        let now = now_unix_ms();
        let m = self.estimates.lock().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<_> = m
            .iter()
            .map(|(n, e)| PeerStats {
                node: n.to_string(),
                bytes_per_s: e.bytes_per_s as u64,
                samples: e.samples,
                age_ms: e.age_ms(now),
                trusted: e.trusted(now),
            })
            .collect();
        all.sort_by(|a, b| a.node.cmp(&b.node));
        all
    }

    /// The estimates of `nodes`, in their order (`None`: not measured).
    pub fn of<'a>(&self, nodes: impl Iterator<Item = &'a NodeId>) -> Vec<Option<PeerEstimate>> {
        let m = self.estimates.lock().unwrap_or_else(|p| p.into_inner());
        nodes.map(|n| m.get(n).copied()).collect()
    }
}

/// Pauses before asking nodes whose request failed again, one per round (a
/// stripe's holders, a manifest lookup's nodes); at most about 1.7 s in all.
pub(crate) const RETRY_BACKOFF: [std::time::Duration; 3] =
    [std::time::Duration::from_millis(200), std::time::Duration::from_millis(500), std::time::Duration::from_secs(1)];

pub(crate) fn bump(c: &AtomicU64, by: u64) {
    c.fetch_add(by, Ordering::Relaxed);
}

/// The client's budget of stored bytes in stripes requested and not yet
/// arrived ([`ClientConfig::max_inflight_bytes`]), shared FIFO by its readers.
pub(crate) struct InflightBytes {
    /// Permits are KiB (a semaphore takes at most `u32` permits at once).
    kib: Semaphore,
    total_kib: u32,
}

impl InflightBytes {
    pub fn new(bytes: u64) -> Self {
        let total_kib = bytes.div_ceil(1024).clamp(1, u32::MAX as u64) as u32;
        InflightBytes { kib: Semaphore::new(total_kib as usize), total_kib }
    }

    /// Waits for `bytes` of the budget (all of it for a larger stripe, which
    /// then goes alone); given back when the permit drops.
    pub async fn acquire(&self, bytes: u64) -> tokio::sync::SemaphorePermit<'_> {
        let kib = bytes.div_ceil(1024).clamp(1, self.total_kib as u64) as u32;
        self.kib.acquire_many(kib).await.expect("the in-flight budget is never closed")
    }
}

pub(crate) struct Ctx {
    pub transport: Arc<dyn Transport>,
    pub cfg: ClientConfig,
    pub requests: Semaphore,
    pub inflight_bytes: InflightBytes,
    pub counters: Counters,
    pub stripe_buffers: StripeBuffers,
    /// Corrupt-cell reports sent and not yet answered ([`crate::Client::settle_reports`]).
    pub reports_in_flight: Arc<AtomicU64>,
    /// How fast each peer answered cell requests and took uploads; orders the
    /// holders a read asks, and feeds adaptive mode.
    pub peer_speeds: PeerSpeeds,
    /// Adaptive mode's phase state; `None` when off.
    pub adaptive: Option<Adaptive>,
    /// Speed probes in flight ([`MAX_PROBES_IN_FLIGHT`]).
    pub probes: Semaphore,
    /// Directories this client saw born or settled, and those it cannot bear.
    pub known_dirs: crate::known_dirs::KnownDirs,
}

impl Ctx {
    /// The holders of a new object `key` with `params`, among the nodes live
    /// now; in adaptive mode clearly slow nodes only for what the others
    /// cannot take ([`fragstate_core::adaptive::place_new_object`]).
    pub fn place_new_object(&self, key: &[u8], params: CodingParams) -> Result<Placement> {
        let candidates = self.candidates();
        if self.adaptive.is_none() {
            return placement::place(key, &candidates, params.fragments(), &HashSet::new(), &HashSet::new(), self.cfg.placement, (params.k(), params.m()));
        }
        let estimates = self.peer_speeds.of(candidates.iter().map(|n| &n.id));
        let speeds = fragstate_core::adaptive::trusted_speeds(&estimates, now_unix_ms());
        fragstate_core::adaptive::place_new_object(key, &candidates, &speeds, &params, self.cfg.placement)
    }

    /// In adaptive mode, probes the live candidates that no transfer measured
    /// for [`PROBE_AFTER_MS`], except the `holders` of the object being
    /// written (its uploads measure them): in the background, [`TRUSTED_SAMPLES`]
    /// probes of [`PROBE_BYTES`] each (what a trusted estimate needs), at most
    /// [`MAX_PROBES_IN_FLIGHT`] peers at once. A failed probe is not retried
    /// before [`PROBE_AFTER_MS`].
    pub fn probe_stale_peers(self: &Arc<Self>, holders: &[NodeInfo]) {
        if self.adaptive.is_none() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let mut others = self.candidates();
        others.retain(|n| !holders.iter().any(|h| h.id == n.id));
        for node in self.peer_speeds.due_for_probe(&others, now_unix_ms()) {
            let ctx = self.clone();
            rt.spawn(async move {
                let Ok(_slot) = ctx.probes.acquire().await else { return };
                for _ in 0..TRUSTED_SAMPLES {
                    let asked = std::time::Instant::now();
                    if let Err(e) = timed(&ctx, &node, ctx.transport.probe(&node, PROBE_BYTES)).await {
                        tracing::debug!(%node, error = %e, "speed probe failed");
                        return;
                    }
                    ctx.peer_speeds.observe(&node, PROBE_BYTES as u64, asked.elapsed().as_secs_f64());
                    bump(&ctx.counters.speed_probes, 1);
                }
            });
        }
    }

    /// Live storage nodes a new object may go to (the excluded node left out).
    fn candidates(&self) -> Vec<fragstate_core::placement::NodeInfo> {
        let mut live = self.transport.live_nodes();
        live.retain(|n| self.cfg.exclude_node.as_ref() != Some(&n.id));
        live
    }

    /// The coding parameters of a new object: the configured ones, or in
    /// adaptive mode the current phase's (deciding the next phase when due).
    pub fn new_object_params(&self) -> CodingParams {
        let Some(a) = &self.adaptive else { return self.cfg.params };
        a.params(self.counters.bytes_written.load(Ordering::Relaxed), || {
            let nodes = self.candidates();
            let estimates = self.peer_speeds.of(nodes.iter().map(|n| &n.id));
            (nodes, estimates)
        })
    }

    /// Ends the adaptive phase that chose `params` ([`crate::adaptive::Adaptive::end_phase`]);
    /// false when adaptive mode is off or a new decision cannot help.
    pub fn end_adaptive_phase(&self, params: CodingParams) -> bool {
        self.adaptive.as_ref().is_some_and(|a| a.end_phase(params))
    }

    /// In adaptive mode, moves the clearly slow holders of a new object to its
    /// parity positions ([`fragstate_core::adaptive::data_first`]).
    pub fn data_holders_first(&self, p: &mut Placement, params: CodingParams) {
        if self.adaptive.is_none() {
            return;
        }
        let estimates = self.peer_speeds.of(p.nodes.iter().map(|n| &n.id));
        let speeds = fragstate_core::adaptive::trusted_speeds(&estimates, now_unix_ms());
        let (order, moved) = fragstate_core::adaptive::data_first(&p.nodes, &speeds, params.m());
        if moved > 0 {
            tracing::debug!(moved, holders = ?order.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(), "slow holders take parity fragments");
            bump(&self.counters.holders_moved_to_parity, moved as u64);
        }
        p.nodes = order;
    }
}

/// Runs one request to `node`, failing it after the configured request timeout.
pub(crate) async fn timed<T>(ctx: &Ctx, node: &NodeId, request: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(ctx.cfg.request_timeout, request).await {
        Ok(r) => r,
        Err(_) => Err(Error::Timeout { node: node.clone(), millis: ctx.cfg.request_timeout.as_millis() as u64 }),
    }
}


/// How long a read's manifest lookup waits for the other nodes once a
/// manifest has come ([`crate::Client::open`], [`crate::Client::stat`]), and
/// a directory index read or change for the holders left once enough answered.
pub const STRAGGLER_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Runs `requests` together and keeps their results until `enough` holds
/// of them; the rest then get [`STRAGGLER_GRACE`] (or twice the time that
/// took) and are dropped, so that one frozen holder does not hold every
/// commit and read of its directories for the whole request timeout.
pub(crate) async fn gather<T, F: Future<Output = T>>(requests: impl IntoIterator<Item = F>, mut enough: impl FnMut(&[T]) -> bool) -> Vec<T> {
    let started = Instant::now();
    let mut pending: FuturesUnordered<F> = requests.into_iter().collect();
    let mut got = Vec::with_capacity(pending.len());
    let mut deadline = None;
    loop {
        let next = match deadline {
            None => pending.next().await,
            Some(d) => match tokio::time::timeout_at(d, pending.next()).await {
                Ok(next) => next,
                Err(_) => break,
            },
        };
        let Some(r) = next else { break };
        got.push(r);
        if deadline.is_none() && enough(&got) {
            deadline = Some(tokio::time::Instant::now() + STRAGGLER_GRACE.max(started.elapsed() * 2));
        }
    }
    got
}

/// Committed objects under `prefix` on every live node, the newest version of each path.
pub(crate) async fn list_everywhere(ctx: &Ctx, prefix: &str) -> Vec<ObjectSummary> {
    let live = ctx.transport.live_nodes();
    let answers = join_all(live.iter().map(|n| timed(ctx, &n.id, ctx.transport.list(&n.id, prefix)))).await;
    let mut by_path: BTreeMap<String, ObjectSummary> = BTreeMap::new();
    for a in answers {
        match a {
            Ok(v) => {
                for s in v {
                    let newer = by_path.get(&s.path).is_none_or(|o| (s.created_unix_ms, s.write_id) > (o.created_unix_ms, o.write_id));
                    if newer {
                        by_path.insert(s.path.clone(), s);
                    }
                }
            }
            Err(e) => tracing::debug!(prefix, error = %e, "list failed on one node"),
        }
    }
    by_path.into_values().collect()
}

/// Sends a delete to every live node; fails only if no node took it.
pub(crate) async fn broadcast_delete(ctx: &Ctx, target: &DeleteTarget) -> Result<DeleteStats> {
    let live: Vec<NodeId> = ctx.transport.live_nodes().into_iter().map(|n| n.id).collect();
    delete_on(ctx, &live, target).await
}

/// Runs `target` on `nodes` at once: the removals summed, an error only when
/// every node failed (the others are logged).
pub(crate) async fn delete_on(ctx: &Ctx, nodes: &[NodeId], target: &DeleteTarget) -> Result<DeleteStats> {
    let answers = join_all(nodes.iter().map(|n| timed(ctx, n, ctx.transport.delete(n, target)))).await;
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


#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_in_flight_budget_holds_back_what_exceeds_it_and_lets_a_larger_stripe_go_alone() {
        let budget = InflightBytes::new(8 << 20);
        let first = budget.acquire(5 << 20).await;
        // 4 MiB more would exceed 8 MiB: it waits until the first is back.
        let second = budget.acquire(4 << 20);
        tokio::pin!(second);
        assert!(futures::poll!(second.as_mut()).is_pending());
        drop(first);
        let second = second.await;
        drop(second);
        // A stripe larger than the whole budget takes all of it and goes.
        let huge = budget.acquire(64 << 20).await;
        assert_eq!(budget.kib.available_permits(), 0);
        drop(huge);
        assert_eq!(budget.kib.available_permits(), 8 << 10);
    }
}
