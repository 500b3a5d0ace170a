//! Whom a node probes and gossips to: its successors on `k` hash rings (the
//! monitoring overlay of Rapid, Suresh et al., USENIX ATC 2018). Ring `r`
//! orders the members by a hash of (id, r); a node's successor on it is the
//! member whose hash comes next, wrapping around. Each ring is a random cycle
//! through all members, so the union of `k` of them is a random graph in
//! which every member has about `k` successors and `k` predecessors: probing
//! the successors round-robin probes every member about once per period,
//! updates spread in O(log N / log k) hops, and a node keeps talking to the
//! same ~2k peers instead of opening a connection (a Noise handshake) to a
//! different random member every period.

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::ids::NodeId;
use crate::sample::Rng;

/// Seeds the ring hashes apart from every other use of xxh3 in fragstate.
const RING_SEED: u64 = 0x7377_696d_7269_6e67;

/// Where `id` sits on rings `0..k`: its hash on each.
pub fn ring_positions(id: &NodeId, k: usize) -> Box<[u64]> {
    (0..k as u64).map(|ring| xxh3_64_with_seed(id.as_str().as_bytes(), RING_SEED ^ ring)).collect()
}

/// The distinct successors of `me` among `members` on rings `0..k`, in ring
/// order (a member that is the successor on several rings appears once);
/// `me` in `members` is ignored. Every member when there are at most `k`.
pub fn ring_successors(me: &NodeId, members: &[NodeId], k: usize) -> Vec<NodeId> {
    let positions: Vec<Box<[u64]>> = members.iter().map(|m| ring_positions(m, k)).collect();
    let next = ring_next(me, &ring_positions(me, k), members.iter().zip(positions.iter().map(|p| &p[..])));
    let others: Vec<NodeId> = members.iter().filter(|m| *m != me).cloned().collect();
    successors_from(&next, &others)
}

/// Per ring, the member next after `me` (at `mine` on the rings) among
/// `members` (with their positions), and its distance forward: one pass, no
/// hashing. `me` among them is ignored.
pub fn ring_next<'a>(me: &NodeId, mine: &[u64], members: impl Iterator<Item = (&'a NodeId, &'a [u64])>) -> Vec<Option<(u64, NodeId)>> {
    let mut next = vec![None; mine.len()];
    for (m, at) in members.filter(|(m, _)| *m != me) {
        offer(mine, &mut next, m, at);
    }
    next
}

/// Offers member `m` (at `at` on the rings) to `next` (what [`ring_next`]
/// gave): on each ring where it comes sooner after `mine`, it is the next
/// one now (the smallest distance forward, wrapping; ties by id, for
/// determinism).
pub fn offer(mine: &[u64], next: &mut [Option<(u64, NodeId)>], m: &NodeId, at: &[u64]) {
    for ((best, pos), my) in next.iter_mut().zip(at).zip(mine) {
        let distance = pos.wrapping_sub(*my).wrapping_sub(1);
        if best.as_ref().is_none_or(|(d, b)| (distance, m.as_str()) < (*d, b.as_str())) {
            *best = Some((distance, m.clone()));
        }
    }
}

/// The successors `next` names, each once, in ring order; every one of
/// `others` (the members but me) while there are at most as many as rings.
pub fn successors_from(next: &[Option<(u64, NodeId)>], others: &[NodeId]) -> Vec<NodeId> {
    if others.len() <= next.len() {
        return others.to_vec();
    }
    let mut out: Vec<NodeId> = Vec::with_capacity(next.len());
    for (_, m) in next.iter().flatten() {
        if !out.contains(m) {
            out.push(m.clone());
        }
    }
    out
}

/// Up to `count` distinct random members of `from` (distinct ids), never `except`.
pub(super) fn pick(rng: &mut Rng, from: &[NodeId], count: usize, except: Option<&NodeId>) -> Vec<NodeId> {
    let eligible = from.len() - usize::from(except.is_some_and(|e| from.contains(e)));
    if eligible <= count {
        return from.iter().filter(|n| Some(*n) != except).cloned().collect();
    }
    let mut picked: Vec<NodeId> = Vec::with_capacity(count);
    while picked.len() < count {
        let c = &from[rng.below(from.len())];
        if Some(c) != except && !picked.contains(c) {
            picked.push(c.clone());
        }
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<NodeId> {
        (0..n).map(|i| NodeId::from(format!("node-{i}"))).collect()
    }

    #[test]
    fn small_clusters_monitor_everyone() {
        let all = ids(5);
        let s = ring_successors(&all[0], &all, 8);
        assert_eq!(s, all[1..].to_vec());
    }

    #[test]
    fn every_member_has_successors_and_about_k_predecessors() {
        let (n, k) = (1000, 8);
        let all = ids(n);
        let mut predecessors = std::collections::HashMap::<NodeId, usize>::new();
        for me in &all {
            let s = ring_successors(me, &all, k);
            assert!(!s.is_empty() && s.len() <= k && !s.contains(me), "{me}: {s:?}");
            for t in s {
                *predecessors.entry(t).or_default() += 1;
            }
        }
        // Each ring is a cycle: every member is some node's successor on every ring (duplicates merged).
        assert_eq!(predecessors.len(), n, "a member nobody probes");
        let max = *predecessors.values().max().unwrap();
        assert!(max <= k, "{max} predecessors (k = {k})");
        let mean = predecessors.values().sum::<usize>() as f64 / n as f64;
        assert!(mean > k as f64 * 0.95, "mean {mean} predecessors");
    }

    #[test]
    fn members_offered_one_at_a_time_give_the_successors_of_all_of_them() {
        let (n, k) = (200, 8);
        let all = ids(n);
        let me = &all[17];
        let mine = ring_positions(me, k);
        let mut next = vec![None; k];
        let mut seen: Vec<NodeId> = Vec::new();
        for m in all.iter().rev().filter(|m| *m != me) {
            offer(&mine, &mut next, m, &ring_positions(m, k));
            seen.push(m.clone());
            seen.sort_unstable();
            assert_eq!(successors_from(&next, &seen), ring_successors(me, &seen, k), "after {} members", seen.len());
        }
    }

    #[test]
    fn a_join_changes_the_successors_of_at_most_k_nodes() {
        let (n, k) = (300, 8);
        let all = ids(n + 1);
        let before: Vec<Vec<NodeId>> = all[..n].iter().map(|me| ring_successors(me, &all[..n], k)).collect();
        let after: Vec<Vec<NodeId>> = all[..n].iter().map(|me| ring_successors(me, &all, k)).collect();
        let changed = before.iter().zip(&after).filter(|(b, a)| b != a).count();
        assert!(changed <= k, "{changed} nodes' successors changed");
    }
}
