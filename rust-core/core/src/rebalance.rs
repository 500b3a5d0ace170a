//! Rebalancing after a join: which holder of an object a node that joined
//! takes the place of, decided from the object's holders and the new node
//! alone — O(k + m) per object, no ranking of the whole view.
//!
//! Placement ([`placement::place`]) takes the best-scoring nodes of the view,
//! one per failure domain. A node that joins changes the choice only for the
//! objects where it outscores a holder it may replace: the holder in its own
//! failure domain if there is one (a domain keeps one fragment), else the
//! lowest-scoring holder. It takes that holder's fragment; every other
//! object stays where it is. So a join moves the new node's share and
//! nothing else, and the holders afterwards are what placement over the new
//! view chooses (the property test below) — the nodes a reader asks first.
//!
//! Only joins move data: nodes filling up shift the capacity weights and so
//! the ranking at its margin, and chasing that would move fragments back and
//! forth for nothing (lookups tolerate holders a few ranks off: a create
//! asks [`crate::lookup::CREATE_WINDOW`] × `k + m` nodes, a read settles
//! with `m + 1` holders among the first `k + m`). A holder that leaves is
//! repair's: the lost fragment is rebuilt on the best-ranked node that is
//! not a holder, the choice placement would make.

use std::collections::{BTreeSet, HashSet};
use std::time::{Duration, Instant};

use crate::ids::NodeId;
use crate::placement::{self, NodeInfo};

/// The index of the holder (in `holders`, fragment order) whose fragment
/// `joined` takes over for the object at `key`, or `None` when the object
/// stays. `cap` is the weight cap of the view with the new node
/// ([`placement::weight_cap`]).
pub fn displaced_by(key: &[u8], holders: &[NodeInfo], joined: &NodeInfo, cap: u64) -> Option<usize> {
    if holders.iter().any(|h| h.id == joined.id) {
        return None;
    }
    let same_domain = holders.iter().any(|h| h.domain == joined.domain);
    let (weakest, weakest_score) = holders
        .iter()
        .enumerate()
        .filter(|(_, h)| !same_domain || h.domain == joined.domain)
        .map(|(i, h)| (i, placement::score(key, h, cap)))
        .min_by(|a, b| placement::better(&(a.1, &holders[a.0]), &(b.1, &holders[b.0])).reverse())?;
    let joined_score = placement::score(key, joined, cap);
    placement::better(&(joined_score, joined), &(weakest_score, &holders[weakest])).is_lt().then_some(weakest)
}

/// The moves that bring an object's holders to what placement chooses over
/// a view that the `joined` nodes entered: (fragment index, new holder), at
/// most one per fragment. The joined nodes are taken in turn, each against
/// the holders the ones before it left.
pub fn plan_moves(key: &[u8], holders: &[NodeInfo], joined: &[NodeInfo], cap: u64) -> Vec<(usize, NodeInfo)> {
    let mut now = holders.to_vec();
    let mut moves: Vec<(usize, NodeInfo)> = Vec::new();
    for j in joined {
        if let Some(i) = displaced_by(key, &now, j, cap) {
            now[i] = j.clone();
            moves.retain(|(x, _)| *x != i);
            moves.push((i, j.clone()));
        }
    }
    moves
}

/// The longest wait before a pass is tried again after passes that failed
/// ([`JoinWatch::failed`]).
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(600);

/// Which nodes joined the view, and when it has been stable long enough
/// to move data to them: a node that flaps, or a view still filling in
/// after a start, moves nothing. After a pass that left moves undone, the
/// next one waits: `settle`, doubled per failed pass up to
/// [`MAX_RETRY_WAIT`], so a joined node that refuses fragments (full, or
/// failing) is not asked again at every look at the view.
#[derive(Debug)]
pub struct JoinWatch {
    settle: Duration,
    /// Nodes seen before this instant (the view a start discovers) are not joins.
    baseline_until: Instant,
    known: HashSet<NodeId>,
    joined: BTreeSet<NodeId>,
    changed_at: Instant,
    failed_passes: u32,
    retry_at: Option<Instant>,
}

impl JoinWatch {
    /// A watch that a node starts at `now`: the view must stay unchanged for
    /// `settle` before data moves, and the nodes that appear within `settle`
    /// of the start are the view it found, not joins.
    pub fn new(now: Instant, settle: Duration) -> Self {
        JoinWatch { settle, baseline_until: now + settle, known: HashSet::new(), joined: BTreeSet::new(), changed_at: now, failed_passes: 0, retry_at: None }
    }

    /// Takes the live view at `now`.
    pub fn observe(&mut self, live: impl IntoIterator<Item = NodeId>, now: Instant) {
        let live: HashSet<NodeId> = live.into_iter().collect();
        if live == self.known {
            return;
        }
        self.changed_at = now;
        // A new view is new information: the next pass waits for it to settle only.
        self.failed_passes = 0;
        self.retry_at = None;
        if now >= self.baseline_until {
            self.joined.extend(live.difference(&self.known).cloned());
        }
        self.joined.retain(|n| live.contains(n));
        self.known = live;
    }

    /// The joined nodes to move data to, once the view has not changed for
    /// `settle` and no failed pass asks to wait longer; empty before.
    pub fn ready(&self, now: Instant) -> Vec<NodeId> {
        if now.saturating_duration_since(self.changed_at) < self.settle || self.retry_at.is_some_and(|t| now < t) {
            return Vec::new();
        }
        self.joined.iter().cloned().collect()
    }

    /// Forgets joined nodes whose data has moved.
    pub fn done(&mut self, nodes: &[NodeId]) {
        for n in nodes {
            self.joined.remove(n);
        }
        self.failed_passes = 0;
        self.retry_at = None;
    }

    /// A pass that ended at `now` left moves undone: the next one waits
    /// `settle` × 2^(failed passes in a row − 1), at most [`MAX_RETRY_WAIT`].
    pub fn failed(&mut self, now: Instant) {
        let wait = self.settle.saturating_mul(1 << self.failed_passes.min(16)).min(MAX_RETRY_WAIT);
        self.failed_passes = self.failed_passes.saturating_add(1);
        self.retry_at = Some(now + wait);
    }

    /// When the next pass may run after failed ones (`None`: no failed pass waiting).
    pub fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::{place, PlacementPolicy};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn node(i: usize, domain: usize, free: u64) -> NodeInfo {
        NodeInfo { id: format!("node-{i}").into(), domain: format!("d{domain}").into(), free_bytes: free }
    }

    fn ids(nodes: &[NodeInfo]) -> BTreeSet<String> {
        nodes.iter().map(|n| n.id.to_string()).collect()
    }

    fn cap_of(view: &[NodeInfo]) -> u64 {
        placement::weight_cap(&view.iter().collect::<Vec<_>>())
    }

    proptest! {
        /// After joins, the holders with the planned moves made are what
        /// placement over the new view chooses; an object the joins do not
        /// touch keeps exactly its holders. (Weights within 4× of each other,
        /// so the cap does not bind and the new nodes leave every score as it was.)
        #[test]
        fn holders_after_the_moves_are_placement_over_the_new_view(
            weights in proptest::collection::vec(1_000u64..3_000, 7..40),
            domains in proptest::collection::vec(0usize..60, 40),
            joined in proptest::collection::vec((1_000u64..3_000, 0usize..60), 1..4),
            key in proptest::collection::vec(any::<u8>(), 1..16),
        ) {
            let view: Vec<NodeInfo> = weights.iter().enumerate().map(|(i, w)| node(i, domains[i], *w)).collect();
            let count = 6;
            let distinct: BTreeSet<&str> = view.iter().map(|n| &*n.domain).collect();
            prop_assume!(distinct.len() >= count);
            let place_over = |v: &[NodeInfo]| place(&key, v, count, &Default::default(), &Default::default(), PlacementPolicy::default(), (4, 2)).unwrap().nodes;
            let before = place_over(&view);
            let joined: Vec<NodeInfo> = joined.iter().enumerate().map(|(i, (w, d))| node(1000 + i, *d, *w)).collect();
            let mut grown = view.clone();
            grown.extend(joined.iter().cloned());
            let after = place_over(&grown);
            let mut moved = before.clone();
            for (i, to) in plan_moves(&key, &before, &joined, cap_of(&grown)) {
                prop_assert!(joined.contains(&to));
                moved[i] = to;
            }
            prop_assert_eq!(ids(&moved), ids(&after));
        }
    }

    /// A watch started at `t0` with a 30 s settle time, seeing nodes a and b at 1 s.
    fn watch_from_a_b() -> (JoinWatch, impl Fn(u64) -> Instant) {
        let t0 = Instant::now();
        let at = move |secs: u64| t0 + Duration::from_secs(secs);
        let mut w = JoinWatch::new(t0, Duration::from_secs(30));
        w.observe(node_ids(&["a", "b"]), at(1));
        (w, at)
    }

    fn node_ids(names: &[&str]) -> Vec<NodeId> {
        names.iter().map(|n| NodeId::from(*n)).collect()
    }

    #[test]
    fn joins_are_ready_once_the_view_is_stable_and_the_start_s_view_is_no_join() {
        let (mut w, at) = watch_from_a_b();
        w.observe(node_ids(&["a", "b", "c"]), at(20));
        assert!(w.ready(at(100)).is_empty(), "found while the view filled in after the start");
        w.observe(node_ids(&["a", "b", "c", "d"]), at(100));
        assert!(w.ready(at(129)).is_empty(), "the view changed 29 s ago");
        // A node that joins and leaves again before the view settles moves nothing.
        w.observe(node_ids(&["a", "b", "c", "d", "e"]), at(110));
        w.observe(node_ids(&["a", "b", "c", "d"]), at(115));
        assert!(w.ready(at(140)).is_empty());
        assert_eq!(w.ready(at(145)), node_ids(&["d"]));
        w.done(&node_ids(&["d"]));
        assert!(w.ready(at(200)).is_empty());
        // A node that left and came back is a join again (its objects were repaired elsewhere).
        w.observe(node_ids(&["a", "b", "c"]), at(300));
        w.observe(node_ids(&["a", "b", "c", "d"]), at(310));
        assert_eq!(w.ready(at(340)), node_ids(&["d"]));
    }

    #[test]
    fn a_failed_pass_waits_doubling_up_to_the_cap_and_a_new_view_or_a_success_ends_the_wait() {
        let (mut w, at) = watch_from_a_b();
        w.observe(node_ids(&["a", "b", "c"]), at(100));
        assert_eq!(w.ready(at(130)), node_ids(&["c"]));
        // Failed passes at 130, then whenever the watch allows the next: waits of 30, 60, 120, ... s.
        let mut now = 130;
        let mut waits = Vec::new();
        for _ in 0..8 {
            w.failed(at(now));
            let next = w.retry_at().unwrap().duration_since(at(now)).as_secs();
            assert!(w.ready(at(now + next - 1)).is_empty(), "ready before the wait of {next} s ended");
            assert_eq!(w.ready(at(now + next)), node_ids(&["c"]));
            waits.push(next);
            now += next;
        }
        assert_eq!(waits, [30, 60, 120, 240, 480, 600, 600, 600]);
        // A success ends the wait.
        w.failed(at(now));
        w.done(&[]);
        assert_eq!(w.ready(at(now)), node_ids(&["c"]));
        // So does a new view, once it has settled.
        w.failed(at(now));
        w.observe(node_ids(&["a", "b", "c", "d"]), at(now + 1));
        assert!(w.ready(at(now + 30)).is_empty());
        assert_eq!(w.ready(at(now + 31)), node_ids(&["c", "d"]));
    }

    #[test]
    fn a_holder_is_never_displaced_by_itself_and_a_domain_keeps_one_fragment() {
        let holders: Vec<NodeInfo> = (0..6).map(|i| node(i, i, 1000)).collect();
        let cap = cap_of(&holders);
        assert_eq!(displaced_by(b"k", &holders, &holders[2], cap), None);
        // A new node in holder 3's domain can only take holder 3's place.
        for key in 0..200u32 {
            let key = key.to_le_bytes();
            let joined = node(99, 3, 1000);
            if let Some(i) = displaced_by(&key, &holders, &joined, cap) {
                assert_eq!(i, 3);
            }
        }
    }

    #[test]
    fn a_join_moves_about_its_share_of_the_objects() {
        // 49 nodes hold 2,000 objects of 6 fragments; the 50th takes about 6/50 of them.
        let view: Vec<NodeInfo> = (0..49).map(|i| node(i, i, 1000)).collect();
        let joined = node(49, 49, 1000);
        let mut grown = view.clone();
        grown.push(joined.clone());
        let cap = cap_of(&grown);
        let moved = (0..2_000u32)
            .filter(|key| {
                let key = key.to_le_bytes();
                let holders = place(&key, &view, 6, &Default::default(), &Default::default(), PlacementPolicy::default(), (4, 2)).unwrap().nodes;
                displaced_by(&key, &holders, &joined, cap).is_some()
            })
            .count();
        let share = 2_000.0 * 6.0 / 50.0;
        assert!((moved as f64 - share).abs() < share * 0.25, "moved {moved}, share {share}");
    }
}
