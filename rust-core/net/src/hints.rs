//! Hinted handoff of deletes: a holder that deletes an object while another
//! holder of it is down keeps the tombstone for that holder and hands it over
//! in the next hello to it, when it is back. Deletes of one path go to its
//! holders only (`fragstate_client::Client::delete`), so the greeters of a
//! returning node — any members — need not have the tombstone; its
//! co-holders do. No I/O: bounded and tested here, used by `tombstones.rs`
//! (recorded) and `membership.rs` (handed over).
//!
//! Bounds: [`MAX_HINTS_PER_NODE`] per down holder (the oldest go first),
//! [`MAX_HINTED_NODES`] down holders (the one with the oldest hint goes
//! first), [`MAX_HINT_BYTES`] of paths (a new hint beyond is not kept), paths
//! of at most [`MAX_TOMBSTONE_PATH`] bytes, and [`HINT_TTL_MS`]: a holder
//! away longer is left to the holder check (its objects have been repaired
//! elsewhere by then, and a node that never returns — a TaskManager restarted
//! with a new identity — must not keep hints alive for a day).
//! A hint dropped on a bound is counted; the holder check (`holder_check`)
//! still finds what it would have said, as long as another holder keeps the
//! tombstone.

use std::collections::HashMap;

use fragstate_core::ids::NodeId;

use crate::tombstone_set::MAX_TOMBSTONE_PATH;
use crate::wire::Tombstone;

/// Tombstones kept for one down holder, at most: one hello carries them.
pub const MAX_HINTS_PER_NODE: usize = crate::config::MAX_TOMBSTONES_PER_HELLO;
/// Down holders hints are kept for, at most.
pub const MAX_HINTED_NODES: usize = 256;
/// Bytes of hints kept, at most: their paths plus [`HINT_OVERHEAD`] each.
pub const MAX_HINT_BYTES: usize = 8 << 20;
/// Hints older than this are dropped (1 hour).
pub const HINT_TTL_MS: u64 = 3_600_000;
/// Bytes one hint counts for besides its path.
const HINT_OVERHEAD: usize = 48;

/// The hints of one node, bounded.
#[derive(Debug, Default)]
pub struct HintSet {
    by_node: HashMap<NodeId, Vec<Tombstone>>,
    bytes: usize,
    dropped: u64,
}

fn hint_bytes(t: &Tombstone) -> usize {
    t.path.len() + HINT_OVERHEAD
}

impl HintSet {
    /// Keeps `t` for `node`; a hint for the same path and flag moves to the later time.
    pub fn add(&mut self, node: &NodeId, t: Tombstone) {
        if let Some(h) = self.by_node.get_mut(node).and_then(|h| h.iter_mut().find(|h| h.prefix == t.prefix && h.path == t.path)) {
            h.at_unix_ms = h.at_unix_ms.max(t.at_unix_ms);
            return;
        }
        if t.path.len() > MAX_TOMBSTONE_PATH || self.bytes + hint_bytes(&t) > MAX_HINT_BYTES {
            self.dropped += 1;
            return;
        }
        if !self.by_node.contains_key(node) && self.by_node.len() >= MAX_HINTED_NODES {
            let oldest = self.by_node.iter().min_by_key(|(_, h)| h.iter().map(|t| t.at_unix_ms).min()).map(|(n, _)| n.clone());
            if let Some(gone) = oldest.and_then(|n| self.by_node.remove(&n)) {
                self.dropped += gone.len() as u64;
                self.bytes -= gone.iter().map(hint_bytes).sum::<usize>();
            }
        }
        let hints = self.by_node.entry(node.clone()).or_default();
        if hints.len() >= MAX_HINTS_PER_NODE {
            self.bytes -= hint_bytes(&hints.remove(0));
            self.dropped += 1;
        }
        self.bytes += hint_bytes(&t);
        hints.push(t);
    }

    /// The hints kept for `node` (to hand over; [`HintSet::delivered`] drops them).
    pub fn for_node(&self, node: &NodeId) -> Vec<Tombstone> {
        self.by_node.get(node).cloned().unwrap_or_default()
    }

    /// Whether any hint is kept for `node`.
    pub fn has(&self, node: &NodeId) -> bool {
        self.by_node.contains_key(node)
    }

    /// `node` took `sent`: they are dropped (hints added since stay).
    pub fn delivered(&mut self, node: &NodeId, sent: &[Tombstone]) {
        self.drop_where(|n, t| n == node && sent.contains(t));
    }

    /// Drops the hints made before `cut_ms` (the tombstones' age limit).
    pub fn prune(&mut self, cut_ms: u64) {
        self.drop_where(|_, t| t.at_unix_ms < cut_ms);
    }

    fn drop_where(&mut self, gone: impl Fn(&NodeId, &Tombstone) -> bool) {
        let mut freed = 0;
        self.by_node.retain(|n, h| {
            h.retain(|t| {
                let drop = gone(n, t);
                freed += if drop { hint_bytes(t) } else { 0 };
                !drop
            });
            !h.is_empty()
        });
        self.bytes -= freed;
    }

    /// Bytes the hints count for (bounded by [`MAX_HINT_BYTES`]).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Hints kept, over all nodes.
    pub fn len(&self) -> usize {
        self.by_node.values().map(Vec::len).sum()
    }

    /// Whether no hint is kept.
    pub fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }

    /// Hints dropped because a bound was reached.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(path: &str, at: u64) -> Tombstone {
        Tombstone { prefix: false, path: path.into(), at_unix_ms: at }
    }

    #[test]
    fn hints_are_kept_per_node_until_delivered_and_a_path_again_moves_forward() {
        let (a, b) = (NodeId::from("a"), NodeId::from("b"));
        let mut s = HintSet::default();
        s.add(&a, t("p", 10));
        s.add(&a, t("p", 12));
        s.add(&a, t("q", 11));
        s.add(&b, t("p", 10));
        assert_eq!(s.for_node(&a), vec![t("p", 12), t("q", 11)]);
        assert_eq!(s.len(), 3);
        let sent = s.for_node(&a);
        s.add(&a, t("r", 13)); // made while the hello was on its way
        s.delivered(&a, &sent);
        assert_eq!(s.for_node(&a), vec![t("r", 13)]);
        s.delivered(&a, &[t("r", 13)]);
        assert!(!s.has(&a));
        assert!(s.has(&b));
        assert_eq!(s.bytes(), hint_bytes(&t("p", 10)));
        s.prune(11);
        assert!(s.is_empty());
        assert_eq!((s.dropped(), s.bytes()), (0, 0));
    }

    #[test]
    fn bounds_drop_the_oldest_hints_and_nodes() {
        let a = NodeId::from("a");
        let mut s = HintSet::default();
        for i in 0..MAX_HINTS_PER_NODE as u64 + 5 {
            s.add(&a, t(&format!("p{i}"), i));
        }
        let kept = s.for_node(&a);
        assert_eq!(kept.len(), MAX_HINTS_PER_NODE);
        assert_eq!(kept[0], t("p5", 5), "the oldest went first");
        assert_eq!(s.dropped(), 5);

        let mut s = HintSet::default();
        for i in 0..MAX_HINTED_NODES as u64 + 1 {
            s.add(&NodeId::from(format!("n{i}")), t("p", 100 + i));
        }
        assert_eq!(s.len(), MAX_HINTED_NODES);
        assert!(!s.has(&NodeId::from("n0")), "the node with the oldest hint went");
        assert!(s.has(&NodeId::from(format!("n{MAX_HINTED_NODES}"))));
        assert_eq!(s.bytes(), MAX_HINTED_NODES * hint_bytes(&t("p", 0)));

        let mut s = HintSet::default();
        let long = "x".repeat(MAX_TOMBSTONE_PATH);
        let fit = MAX_HINT_BYTES / hint_bytes(&t(&long, 0));
        for i in 0..fit + 3 {
            s.add(&NodeId::from(format!("n{}", i % 100)), Tombstone { prefix: i % 2 == 0, path: format!("{long:.4090}{i:06}"), at_unix_ms: 1 });
        }
        assert!(s.bytes() <= MAX_HINT_BYTES);
        assert_eq!(s.len(), fit);
        assert_eq!(s.dropped(), 3);
        s.add(&NodeId::from("n0"), t(&"y".repeat(MAX_TOMBSTONE_PATH + 1), 1));
        assert_eq!(s.dropped(), 4, "a path longer than a tombstone's is not kept");
    }
}
