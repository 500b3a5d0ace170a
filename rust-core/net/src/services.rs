//! The background services of a storage node: repair of objects that lost
//! a holder (rate-limited, counted in stats), rebalancing after joins
//! (`crate::rebalance`), the scrub of its own stored
//! cells (`fragstate_client::scrubber`: bad cells rebuilt from the other
//! holders, reported ones first) and reclaim of fragments whose writer never
//! committed them. They use the node only through its public
//! face: `Transport`, `down_since`, its store, its counters.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use fragstate_client::scrub::ScrubConfig;
use fragstate_client::scrubber::Scrubber;
use fragstate_client::transport::Transport;
use fragstate_client::{Client, ClientConfig};
use fragstate_core::ids::NodeId;

use crate::node::NetNode;

/// How a storage node repairs and collects garbage.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// How often degraded objects are looked for.
    pub repair_interval: Duration,
    /// A holder must be gone this long before its fragments are rebuilt
    /// elsewhere (a restart should not cause a repair).
    pub repair_after: Duration,
    /// Rebuilt fragment bytes per second, at most (0: no repair).
    pub repair_rate: u64,
    /// Fragments that no manifest commits are reclaimed after this age.
    pub reclaim_after: Duration,
    pub reclaim_interval: Duration,
    /// How often the holder check runs (0: never); the first pass runs
    /// `min(15 s, interval)` after the start.
    pub holder_check_interval: Duration,
    /// Rebalancing: the view must be stable this long after nodes joined
    /// before fragments move to them.
    pub rebalance_after: Duration,
    /// Moved fragment bytes per second, at most (0: no rebalancing).
    pub rebalance_rate: u64,
    /// The background scrub: its rate (0: only reported cells are verified)
    /// and how often a pass may start.
    pub scrub: ScrubConfig,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            repair_interval: Duration::from_secs(2),
            repair_after: Duration::from_secs(10),
            repair_rate: 200 * 1024 * 1024,
            reclaim_after: Duration::from_secs(600),
            reclaim_interval: Duration::from_secs(30),
            holder_check_interval: Duration::from_secs(300),
            rebalance_after: Duration::from_secs(30),
            rebalance_rate: 32 * 1024 * 1024,
            scrub: ScrubConfig::default(),
        }
    }
}

impl NetNode {
    /// The client configuration for writing through this node: its own
    /// store is excluded from placement unless `allow_self` is set. Reads ask
    /// for exactly `k` cells (`hedge` 0) and hedge only after `hedge_delay`:
    /// over the network an extra cell per stripe costs 25 % more bytes to
    /// encrypt and decrypt, and `fragstate bench net` read 15–20 % slower with
    /// `hedge` 1 on two cores.
    pub fn client_config(&self, allow_self: bool) -> ClientConfig {
        ClientConfig {
            hedge: 0,
            exclude_node: (!allow_self).then(|| self.id().clone()),
            writer_id: format!("{}@{}", std::process::id(), self.id()),
            ..ClientConfig::default()
        }
    }

    /// Starts the repair, rebalance, scrub, holder check and reclaim loops (storage nodes).
    pub fn start_services(&self, cfg: ServiceConfig) {
        if self.store().is_none() {
            return;
        }
        let node = self.clone();
        let c = cfg.clone();
        self.spawn("repair", async move { repair_loop(node, c).await });
        let node = self.clone();
        let (after, rate) = (cfg.rebalance_after, cfg.rebalance_rate);
        self.spawn("rebalance", async move { crate::rebalance::rebalance_loop(node, after, rate).await });
        let node = self.clone();
        let scrub = cfg.scrub.clone();
        self.spawn("scrub", async move { scrub_loop(node, scrub).await });
        let node = self.clone();
        let every = cfg.holder_check_interval;
        self.spawn("holder check", async move { crate::holder_check::holder_check_loop(node, every).await });
        let node = self.clone();
        self.spawn("reclaim", async move { reclaim_loop(node, cfg).await });
    }
}

/// Bytes of one fragment of an object described by a manifest.
fn fragment_bytes(m: &fragstate_core::format::Manifest) -> u64 {
    let k = m.params.k();
    m.stripes.iter().map(|s| s.cell_len(k) as u64).sum()
}

/// One scan: the objects this node must repair (it is their first live
/// holder) and that lost a holder more than `repair_after` ago. Found from
/// the store's index of manifests by holder: the work is the lost holders'
/// objects, not every manifest the node keeps.
fn scan(node: &NetNode, cfg: &ServiceConfig) -> Vec<(String, u64)> {
    let Some(store) = node.store() else { return Vec::new() };
    let live: HashSet<NodeId> = node.live_nodes().into_iter().map(|n| n.id).collect();
    let is_lost = |h: &NodeId| !live.contains(h) && node.down_since(h).is_some_and(|t| t.elapsed() >= cfg.repair_after);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for gone in store.holders_named().into_iter().filter(|h| is_lost(h)) {
        for m in store.manifests_naming(&gone) {
            // Only the first live holder repairs, so that holders do not race.
            if !seen.insert(m.path.clone()) || m.holders.iter().find(|h| live.contains(*h)) != Some(node.id()) {
                continue;
            }
            let lost = m.holders.iter().filter(|h| is_lost(h)).count() as u64;
            out.push((m.path.clone(), lost * fragment_bytes(&m)));
        }
    }
    out
}

async fn repair_loop(node: NetNode, cfg: ServiceConfig) {
    let mut shutdown = node.shutdown_signal();
    let client = match Client::new(std::sync::Arc::new(node.clone()), ClientConfig { writer_id: format!("repair@{}", node.id()), ..ClientConfig::default() }) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "repair disabled");
            return;
        }
    };
    let counters = node.counters();
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = tokio::time::sleep(cfg.repair_interval) => {}
        }
        let todo = tokio::task::block_in_place(|| scan(&node, &cfg));
        counters.objects_degraded.store(todo.len() as u64, Ordering::Relaxed);
        counters.bytes_to_repair.store(todo.iter().map(|t| t.1).sum(), Ordering::Relaxed);
        if cfg.repair_rate == 0 || todo.is_empty() {
            continue;
        }
        tracing::info!(objects = todo.len(), bytes = todo.iter().map(|t| t.1).sum::<u64>(), "repairing degraded objects");
        for (path, bytes) in todo {
            let started = std::time::Instant::now();
            let r = tokio::select! {
                _ = shutdown.changed() => return,
                r = client.repair(&path) => r,
            };
            match r {
                Ok(n) => {
                    counters.objects_repaired.fetch_add(1, Ordering::Relaxed);
                    counters.fragments_repaired.fetch_add(n as u64, Ordering::Relaxed);
                    counters.objects_degraded.fetch_sub(1, Ordering::Relaxed);
                    counters.bytes_to_repair.fetch_sub(bytes.min(counters.bytes_to_repair.load(Ordering::Relaxed)), Ordering::Relaxed);
                    tracing::info!(%path, fragments = n, bytes, millis = started.elapsed().as_millis() as u64, "object repaired");
                }
                Err(e) => {
                    counters.repair_failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(%path, error = %e, "repair failed; retried in the next round");
                }
            }
            // Rate limit: the rebuilt bytes take at least bytes / rate.
            let budget = Duration::from_secs_f64(bytes as f64 / cfg.repair_rate as f64);
            if let Some(wait) = budget.checked_sub(started.elapsed()) {
                tokio::select! {
                    _ = shutdown.changed() => return,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

async fn scrub_loop(node: NetNode, cfg: ScrubConfig) {
    let Some(store) = node.store().cloned() else { return };
    // Rebuilds ask exactly k other holders first (hedge 0), like the node's own reads.
    let client_cfg = ClientConfig { writer_id: format!("scrub@{}", node.id()), ..node.client_config(true) };
    let client = match Client::new(std::sync::Arc::new(node.clone()), client_cfg) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "scrub disabled");
            return;
        }
    };
    let mut shutdown = node.shutdown_signal();
    let scrubber = Scrubber::new(store, client, node.scrub_shared().clone(), cfg);
    scrubber
        .run(async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
        })
        .await;
}

async fn reclaim_loop(node: NetNode, cfg: ServiceConfig) {
    let mut shutdown = node.shutdown_signal();
    let Some(store) = node.store().cloned() else { return };
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = tokio::time::sleep(cfg.reclaim_interval) => {}
        }
        match tokio::task::block_in_place(|| store.reclaim_uncommitted(cfg.reclaim_after)) {
            Ok(st) if st.fragments > 0 => {
                node.counters().reclaimed_fragments.fetch_add(st.fragments, Ordering::Relaxed);
                tracing::info!(fragments = st.fragments, bytes = st.bytes, "reclaimed uncommitted fragments (writer died before commit)");
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "reclaim failed"),
        }
    }
}

