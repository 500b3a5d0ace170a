//! The rebalance service of a storage node: when nodes join and the view
//! has been stable for `rebalance_after`, it moves to them the fragments
//! placement now gives them (`fragstate_core::rebalance` decides which, from
//! each object's holders alone), for the objects whose first live holder it
//! is — one mover per object, as for repair. Rate-limited in fragment bytes
//! per second; objects that miss a holder are repair's and wait.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fragstate_client::transport::Transport;
use fragstate_client::{Client, ClientConfig};
use fragstate_core::format::Manifest;
use fragstate_core::ids::NodeId;
use fragstate_core::placement::{self, NodeInfo};
use fragstate_core::rebalance::{self, JoinWatch};

use crate::node::NetNode;

/// How often the view is looked at.
const TICK: Duration = Duration::from_secs(1);

/// Moves fragments to joined nodes once the view has been stable for
/// `after`, at most `rate` bytes per second (0: never).
pub(crate) async fn rebalance_loop(node: NetNode, after: Duration, rate: u64) {
    if rate == 0 {
        return;
    }
    let client = match Client::new(std::sync::Arc::new(node.clone()), ClientConfig { writer_id: format!("rebalance@{}", node.id()), ..node.client_config(false) }) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "rebalancing disabled");
            return;
        }
    };
    let mut shutdown = node.shutdown_signal();
    let mut watch = JoinWatch::new(Instant::now(), after);
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = tokio::time::sleep(TICK) => {}
        }
        watch.observe(node.live_nodes().into_iter().map(|n| n.id), Instant::now());
        let joined = watch.ready(Instant::now());
        if joined.is_empty() {
            continue;
        }
        let started = Instant::now();
        let pass = tokio::select! {
            _ = shutdown.changed() => return,
            p = rebalance_pass(&node, &client, &joined, rate) => p,
        };
        tracing::info!(
            joined = joined.len(),
            objects = pass.objects,
            fragments = pass.fragments,
            bytes = pass.bytes,
            failures = pass.failures,
            millis = started.elapsed().as_millis() as u64,
            "rebalanced after nodes joined"
        );
        if pass.failures == 0 {
            watch.done(&joined);
        } else {
            watch.failed(Instant::now());
            tracing::warn!(
                failures = pass.failures,
                retry_in_s = watch.retry_at().map_or(0, |t| t.saturating_duration_since(Instant::now()).as_secs()),
                "some fragments were not moved to joined nodes; the next pass waits"
            );
        }
    }
}

#[derive(Debug, Default)]
struct Pass {
    objects: u64,
    fragments: u64,
    bytes: u64,
    failures: u64,
}

/// Moves the fragments `joined` take over, of the objects this node is the
/// first live holder of and whose holders are all live.
async fn rebalance_pass(node: &NetNode, client: &Client, joined: &[NodeId], rate: u64) -> Pass {
    let mut pass = Pass::default();
    let Some(store) = node.store() else { return pass };
    let view = node.live_nodes();
    let cap = placement::weight_cap(&view.iter().collect::<Vec<_>>());
    let by_id: HashMap<&NodeId, &NodeInfo> = view.iter().map(|n| (&n.id, n)).collect();
    let joined: Vec<NodeInfo> = joined.iter().filter_map(|j| by_id.get(j).map(|n| (*n).clone())).collect();
    let held = tokio::task::block_in_place(|| store.manifests_naming(node.id()));
    for m in held {
        let Some(moves) = plan(node.id(), &m, &by_id, &joined, cap) else { continue };
        let started = Instant::now();
        let bytes = match client.move_fragments(m.clone(), &moves).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => continue,
            Err(e) => {
                pass.failures += 1;
                node.counters().rebalance_failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(path = %m.path, error = %e, "rebalance move failed; tried again in the next pass");
                continue;
            }
        };
        pass.objects += 1;
        pass.fragments += moves.len() as u64;
        pass.bytes += bytes;
        let c = node.counters();
        c.fragments_rebalanced.fetch_add(moves.len() as u64, Ordering::Relaxed);
        c.bytes_rebalanced.fetch_add(bytes, Ordering::Relaxed);
        tracing::debug!(path = %m.path, fragments = moves.len(), bytes, "fragments moved to joined nodes");
        // Rate limit: the moved bytes take at least bytes / rate.
        if let Some(wait) = Duration::from_secs_f64(bytes as f64 / rate as f64).checked_sub(started.elapsed()) {
            tokio::time::sleep(wait).await;
        }
    }
    pass
}

/// The moves of `m` (fragment index, new holder) if this node moves them:
/// it is the first holder and every holder is live.
fn plan(me: &NodeId, m: &Manifest, view: &HashMap<&NodeId, &NodeInfo>, joined: &[NodeInfo], cap: u64) -> Option<Vec<(usize, NodeId)>> {
    if m.holders.first() != Some(me) {
        return None;
    }
    let holders: Vec<NodeInfo> = m.holders.iter().map(|h| view.get(h).map(|n| (*n).clone())).collect::<Option<_>>()?;
    let moves = rebalance::plan_moves(m.path.as_bytes(), &holders, joined, cap);
    (!moves.is_empty()).then(|| moves.into_iter().map(|(i, n)| (i, n.id)).collect())
}
