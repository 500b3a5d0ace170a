//! The simulated cluster and the three measurements (see the crate docs).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use fragstate_core::adaptive;
use fragstate_core::ids::NodeId;
use fragstate_core::lookup;
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::rebalance;
use fragstate_core::placement::{self, NodeInfo, PlacementPolicy};
use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// How the holders of an object are chosen from the membership view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// `placement::place`: weighted rendezvous over every node of the view.
    Rendezvous,
    /// The `k + m` nodes XOR-closest to the key's hash in a 64-bit id space.
    XorNeighbours,
    /// What a writer in adaptive mode does (`adaptive::place_new_object`: nodes it measured
    /// clearly slow only for what the others cannot take), with the share of slow nodes of
    /// [`View::with_slow`]; readers, who do not know the writer's measurements, rank as
    /// [`Strategy::Rendezvous`].
    AdaptiveRendezvous,
}

/// Equal capacity for every simulated node: placement weights by free bytes.
const CAPACITY: u64 = 1 << 40;
const KEY_SEED: u64 = 0x6b65_7973;

/// A membership view: the live nodes, each its own failure domain.
#[derive(Clone, Debug)]
pub struct View {
    nodes: Vec<NodeInfo>,
    /// Each node's position in the XOR space (a hash of its id).
    positions: Vec<u64>,
    /// Each node's speed as an adaptive writer measured it (1 = the median).
    speeds: Vec<Option<f64>>,
}

impl View {
    /// `n` nodes named `node-<first>` .. `node-<first + n - 1>`.
    pub fn numbered(first: usize, n: usize) -> View {
        let mut v = View { nodes: Vec::with_capacity(n), positions: Vec::with_capacity(n), speeds: Vec::with_capacity(n) };
        for i in first..first + n {
            v.add(&format!("node-{i}"));
        }
        v
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn add(&mut self, name: &str) {
        let id = NodeId::from(name);
        self.positions.push(xxh3_64_with_seed(name.as_bytes(), KEY_SEED));
        self.speeds.push(Some(1.0));
        self.nodes.push(NodeInfo { id, domain: Arc::from(name), free_bytes: CAPACITY });
    }

    /// This view with each node's free capacity lowered by a pseudo-random share
    /// in `[0, fraction)` of it (drawn from `seed` and the node's name): nodes
    /// filled unevenly between two moments, as weighted placement sees them.
    pub fn drifted(&self, fraction: f64, seed: u64) -> View {
        let mut v = self.clone();
        for n in &mut v.nodes {
            let u = (xxh3_64_with_seed(n.id.as_str().as_bytes(), seed) >> 11) as f64 / (1u64 << 53) as f64;
            n.free_bytes = (CAPACITY as f64 * (1.0 - fraction * u)) as u64;
        }
        v
    }

    /// This view with a pseudo-random `share` of its nodes measured 4 times slower than the rest.
    pub fn with_slow(&self, share: f64) -> View {
        let mut v = self.clone();
        for (n, s) in v.nodes.iter().zip(v.speeds.iter_mut()) {
            let u = (xxh3_64_with_seed(n.id.as_str().as_bytes(), 0x736c_6f77) >> 11) as f64 / (1u64 << 53) as f64;
            *s = Some(if u < share { 0.25 } else { 1.0 });
        }
        v
    }

    /// Removes the node at `index` (the last one takes its place).
    pub fn remove(&mut self, index: usize) -> NodeId {
        self.positions.swap_remove(index);
        self.speeds.swap_remove(index);
        self.nodes.swap_remove(index).id
    }

    /// The `k + m` nodes a reader asks for `key` in this view (it knows the path and the view only):
    /// for rendezvous what the client asks ([`lookup::lookup_candidates`]), whoever wrote.
    pub fn candidates(&self, strategy: Strategy, key: &[u8], (k, m): (usize, usize)) -> Vec<NodeId> {
        match strategy {
            Strategy::Rendezvous | Strategy::AdaptiveRendezvous => lookup::lookup_candidates(key, &self.nodes, k + m, PlacementPolicy::default()),
            Strategy::XorNeighbours => self.holders(strategy, key, (k, m)),
        }
    }

    /// The nodes a create asks whether `key` exists, in this view: for rendezvous what the
    /// client asks ([`lookup::create_candidates`]); for XOR neighbours its `k + m` candidates.
    pub fn create_candidates(&self, strategy: Strategy, key: &[u8], (k, m): (usize, usize)) -> Vec<NodeId> {
        match strategy {
            Strategy::Rendezvous | Strategy::AdaptiveRendezvous => lookup::create_candidates(key, &self.nodes, k + m, PlacementPolicy::default()),
            Strategy::XorNeighbours => self.candidates(strategy, key, (k, m)),
        }
    }

    /// The `k + m` holders a writer with `strategy` chooses for `key` in this view, in fragment order.
    pub fn holders(&self, strategy: Strategy, key: &[u8], (k, m): (usize, usize)) -> Vec<NodeId> {
        match strategy {
            Strategy::AdaptiveRendezvous => {
                let params = CodingParams::new(k, m, 1 << 20, Compression::None).expect("validated k, m");
                adaptive::place_new_object(key, &self.nodes, &self.speeds, &params, PlacementPolicy::default())
                    .map(|p| p.nodes.into_iter().map(|n| n.id).collect())
                    .unwrap_or_default()
            }
            Strategy::Rendezvous => placement::place(key, &self.nodes, k + m, &HashSet::new(), &HashSet::new(),
                PlacementPolicy::default(), (k, m))
                .map(|p| p.nodes.into_iter().map(|n| n.id).collect())
                .unwrap_or_default(),
            Strategy::XorNeighbours => {
                let target = xxh3_64_with_seed(key, KEY_SEED);
                let mut order: Vec<usize> = (0..self.nodes.len()).collect();
                let n = (k + m).min(order.len());
                if n == 0 {
                    return Vec::new();
                }
                order.select_nth_unstable_by_key(n - 1, |&i| self.positions[i] ^ target);
                order.truncate(n);
                order.sort_by_key(|&i| self.positions[i] ^ target);
                order.into_iter().map(|i| self.nodes[i].id.clone()).collect()
            }
        }
    }
}

/// The key of object `i` (a checkpoint file path, as Flink names them).
pub fn object_key(i: u64) -> Vec<u8> {
    format!("flink/job-{}/chk-{}/{:016x}", i % 97, i / 97 % 1000, xxh3_64_with_seed(&i.to_le_bytes(), 7)).into_bytes()
}

/// Fragments per node over the mean.
#[derive(Clone, Debug, Serialize)]
pub struct Balance {
    pub mean_fragments: f64,
    pub max_over_mean: f64,
    pub p99_over_mean: f64,
    /// The max/mean that independent uniform placement would show at this load:
    /// mean + √(2 ln N) standard deviations of a binomial (about the expected
    /// maximum of N such counts), the statistical floor of any hash placement.
    pub uniform_max_over_mean: f64,
}

/// Where `objects` objects of `k + m` fragments land in `view`. With `fill`, every node
/// starts with room for `total / N / fill` fragments and each placement lowers its holders'
/// free capacity, which weighted placement sees at the next object — as in a real cluster,
/// which ends `fill` full; without, capacities stay equal (the placement function alone).
pub fn balance(view: &View, strategy: Strategy, objects: u64, km: (usize, usize), fill: Option<f64>) -> Balance {
    const FRAGMENT: u64 = 1 << 20;
    let mut view = view.clone();
    let room = fill.map(|f| ((objects * (km.0 + km.1) as u64) as f64 / view.len() as f64 / f).ceil() as u64 * FRAGMENT);
    if let Some(room) = room {
        view.nodes.iter_mut().for_each(|n| n.free_bytes = room);
    }
    let index: HashMap<NodeId, usize> = view.nodes.iter().enumerate().map(|(i, n)| (n.id.clone(), i)).collect();
    let mut per_node = vec![0u64; view.len()];
    for i in 0..objects {
        for h in view.holders(strategy, &object_key(i), km) {
            let at = index[&h];
            per_node[at] += 1;
            if room.is_some() {
                let n = &mut view.nodes[at];
                n.free_bytes = n.free_bytes.saturating_sub(FRAGMENT).max(1);
            }
        }
    }
    let mut counts = per_node;
    counts.sort_unstable();
    let mean = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
    let p99 = counts[((counts.len() as f64 * 0.99) as usize).min(counts.len() - 1)] as f64;
    let p = (km.0 + km.1) as f64 / view.len() as f64;
    let sd = (objects as f64 * p * (1.0 - p)).sqrt();
    Balance {
        mean_fragments: mean,
        max_over_mean: *counts.last().unwrap_or(&0) as f64 / mean,
        p99_over_mean: p99 / mean,
        uniform_max_over_mean: (mean + (2.0 * (view.len() as f64).ln()).sqrt() * sd) / mean,
    }
}

/// Fragments that change holder when one node joins.
#[derive(Clone, Debug, Serialize)]
pub struct JoinMoves {
    pub fragments: u64,
    pub moved: u64,
    /// `fragments / (N + 1)`: the new node's fair share, nothing else moved.
    pub ideal: f64,
    pub moved_over_ideal: f64,
    /// Fragments the rebalancing moves ([`rebalance::plan_moves`] from each
    /// object's holders; for XOR neighbours the placement difference), over `ideal`.
    pub rebalanced_over_ideal: f64,
    /// Share of the objects whose holders after the rebalancing's moves are
    /// what the writer's placement over the new view chooses.
    pub rebalanced_as_placed: f64,
}

/// Places `objects` in `view`, adds one node, places them again and counts the fragments
/// whose holder set lost a member (each such fragment must be copied to its new holder),
/// and the moves the rebalancing makes.
pub fn join_moves(view: &View, strategy: Strategy, objects: u64, km: (usize, usize)) -> JoinMoves {
    let mut after = view.clone();
    after.add("node-joining");
    let joined = after.nodes.last().expect("a node was added").clone();
    let cap = placement::weight_cap(&after.nodes.iter().collect::<Vec<_>>());
    let info: HashMap<&NodeId, &NodeInfo> = view.nodes.iter().map(|n| (&n.id, n)).collect();
    let (mut moved, mut rebalanced, mut as_placed) = (0, 0, 0);
    for i in 0..objects {
        let key = object_key(i);
        let before = view.holders(strategy, &key, km);
        let placed: HashSet<NodeId> = after.holders(strategy, &key, km).into_iter().collect();
        moved += placed.iter().filter(|h| !before.contains(*h)).count() as u64;
        let mut now: HashSet<NodeId> = before.iter().cloned().collect();
        if strategy == Strategy::XorNeighbours {
            now.clone_from(&placed);
        } else {
            let holders: Vec<NodeInfo> = before.iter().map(|h| info[h].clone()).collect();
            for (i, to) in rebalance::plan_moves(&key, &holders, std::slice::from_ref(&joined), cap) {
                now.remove(&before[i]);
                now.insert(to.id);
            }
        }
        rebalanced += now.iter().filter(|h| !before.contains(*h)).count() as u64;
        as_placed += u64::from(now == placed);
    }
    let fragments = objects * (km.0 + km.1) as u64;
    let ideal = fragments as f64 / after.len() as f64;
    JoinMoves {
        fragments,
        moved,
        ideal,
        moved_over_ideal: moved as f64 / ideal,
        rebalanced_over_ideal: rebalanced as f64 / ideal,
        rebalanced_as_placed: as_placed as f64 / objects.max(1) as f64,
    }
}

/// Lookups by path alone after some nodes were replaced.
#[derive(Clone, Debug, Serialize)]
pub struct ChurnLookups {
    pub replaced_nodes: usize,
    /// Objects that still have `k` live holders (readable at all).
    pub readable: u64,
    /// Of those, the share whose `k + m` candidates in the new view include `k` live holders
    /// (the fragments could be fetched from the nodes asked, without a manifest first).
    pub first_round_trip_hit_rate: f64,
    /// Of those, the share whose candidates include at least one live holder: every holder
    /// keeps the object's manifest, which names all holders.
    pub manifest_hit_rate: f64,
    /// Of those, the share whose candidates include more than `m` live holders: what a
    /// client's lookup takes as settled in one round trip ([`lookup::first_round_settles`]);
    /// the rest ask every other node.
    pub settled_rate: f64,
    /// Of those, the share none of whose live holders is among the nodes a create of the path
    /// asks ([`View::create_candidates`]): a create without overwrite would take the path for
    /// missing and write it anew.
    pub create_miss_rate: f64,
}

/// Places `objects` in `view`, replaces `replaced` nodes (every `view.len() / replaced`-th
/// leaves, as many new ones join), and asks each object's candidates in the new view.
/// With `drift` > 0 the writer and the reader weigh the nodes by free capacities that differ
/// ([`View::drifted`], up to that share of a node's capacity): what a reader of weighted
/// rendezvous computes when nodes filled between the write and the read.
pub fn lookups_after_churn(view: &View, strategy: Strategy, objects: u64, km: (usize, usize), replaced: usize, drift: f64) -> ChurnLookups {
    let written = view.drifted(drift, 1);
    let mut after = view.drifted(drift, 2);
    let step = (view.len() / replaced.max(1)).max(1);
    let mut gone = HashSet::new();
    for r in 0..replaced.min(view.len()) {
        let index = (r * step) % after.len();
        gone.insert(after.remove(index));
        after.add(&format!("node-new-{r}"));
    }
    let (mut readable, mut hits, mut manifest_hits, mut settled, mut create_misses) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for i in 0..objects {
        let key = object_key(i);
        let live: Vec<NodeId> = written.holders(strategy, &key, km).into_iter().filter(|h| !gone.contains(h)).collect();
        if live.len() < km.0 {
            continue;
        }
        readable += 1;
        let asked: HashSet<NodeId> = after.candidates(strategy, &key, km).into_iter().collect();
        let found = live.iter().filter(|h| asked.contains(*h)).count();
        hits += (found >= km.0) as u64;
        manifest_hits += (found >= 1) as u64;
        settled += (found > km.1) as u64;
        let window: HashSet<NodeId> = after.create_candidates(strategy, &key, km).into_iter().collect();
        create_misses += (!live.iter().any(|h| window.contains(h))) as u64;
    }
    let rate = |n: u64| if readable == 0 { 0.0 } else { n as f64 / readable as f64 };
    ChurnLookups {
        replaced_nodes: replaced,
        readable,
        first_round_trip_hit_rate: rate(hits),
        manifest_hit_rate: rate(manifest_hits),
        settled_rate: rate(settled),
        create_miss_rate: rate(create_misses),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KM: (usize, usize) = (4, 2);

    #[test]
    fn both_strategies_name_k_plus_m_distinct_nodes_of_the_view() {
        let view = View::numbered(0, 20);
        for s in [Strategy::Rendezvous, Strategy::XorNeighbours] {
            for i in 0..50 {
                let h = view.holders(s, &object_key(i), KM);
                assert_eq!(h.iter().collect::<HashSet<_>>().len(), 6, "{s:?}");
            }
        }
    }

    #[test]
    fn rendezvous_moves_the_joining_nodes_share_and_no_more() {
        let view = View::numbered(0, 30);
        let j = join_moves(&view, Strategy::Rendezvous, 3_000, KM);
        // every moved fragment went to the new node: about fragments / 31
        assert!((0.8..1.2).contains(&j.moved_over_ideal), "{j:?}");
        // the rebalancing makes exactly those moves, from each object's holders alone
        assert_eq!(j.rebalanced_over_ideal, j.moved_over_ideal, "{j:?}");
        assert_eq!(j.rebalanced_as_placed, 1.0, "{j:?}");
    }

    #[test]
    fn without_churn_every_lookup_hits() {
        let view = View::numbered(0, 30);
        for s in [Strategy::Rendezvous, Strategy::XorNeighbours] {
            let c = lookups_after_churn(&view, s, 500, KM, 0, 0.0);
            assert_eq!(c.readable, 500);
            assert_eq!(c.first_round_trip_hit_rate, 1.0, "{s:?}");
            assert_eq!(c.create_miss_rate, 0.0, "{s:?}");
        }
    }

    #[test]
    fn drifting_weights_cost_weighted_rendezvous_lookups_but_not_xor_ones() {
        let view = View::numbered(0, 40);
        let weighted = lookups_after_churn(&view, Strategy::Rendezvous, 2_000, KM, 0, 0.5);
        assert!(weighted.first_round_trip_hit_rate < 1.0, "{weighted:?}");
        let xor = lookups_after_churn(&view, Strategy::XorNeighbours, 2_000, KM, 0, 0.5);
        assert_eq!(xor.first_round_trip_hit_rate, 1.0, "{xor:?}");
    }

    #[test]
    fn adaptive_writers_keep_slow_nodes_out_and_readers_still_find_a_holder() {
        let view = View::numbered(0, 40).with_slow(0.25);
        let slow: HashSet<NodeId> = view.nodes.iter().zip(&view.speeds).filter(|(_, s)| **s == Some(0.25)).map(|(n, _)| n.id.clone()).collect();
        assert!(!slow.is_empty());
        let on_slow: usize = (0..500).map(|i| view.holders(Strategy::AdaptiveRendezvous, &object_key(i), KM).iter().filter(|h| slow.contains(*h)).count()).sum();
        assert_eq!(on_slow, 0, "30 fast nodes can take every fragment");
        let c = lookups_after_churn(&view, Strategy::AdaptiveRendezvous, 1_000, KM, 0, 0.0);
        assert!(c.manifest_hit_rate > 0.95, "{c:?}");
        assert_eq!(c.create_miss_rate, 0.0, "a create's window reaches past the slow nodes: {c:?}");
        assert!(c.first_round_trip_hit_rate < c.manifest_hit_rate, "{c:?}");
    }

    #[test]
    fn rendezvous_balance_is_near_the_statistical_floor() {
        let view = View::numbered(0, 50);
        let b = balance(&view, Strategy::Rendezvous, 20_000, KM, None);
        assert!((b.mean_fragments - 2_400.0).abs() < 1e-9, "{b:?}");
        assert!(b.max_over_mean < b.uniform_max_over_mean + 0.05, "{b:?}");
    }

    #[test]
    fn weighing_by_free_capacity_as_nodes_fill_balances_below_the_uniform_floor() {
        let view = View::numbered(0, 50);
        let fixed = balance(&view, Strategy::Rendezvous, 5_000, KM, None);
        let filling = balance(&view, Strategy::Rendezvous, 5_000, KM, Some(0.8));
        assert!(filling.max_over_mean < fixed.max_over_mean, "{filling:?} vs {fixed:?}");
        assert!(filling.max_over_mean < filling.uniform_max_over_mean, "{filling:?}");
    }
}
