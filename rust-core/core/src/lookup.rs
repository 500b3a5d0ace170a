//! Finding an object's manifest from its path alone, without asking every node.
//!
//! Every holder of an object keeps its manifest, and the holders are what
//! [`placement::place`] chose for the path over the writer's view of the live
//! nodes. A reader ranks its own view the same way and asks the best
//! [`lookup_candidates`] first: in steady state they are the holders, so the
//! lookup is one round trip to `k + m` nodes however large the cluster.
//!
//! The first round settles the lookup only when it cannot have missed a newer
//! write of the path ([`first_round_settles`]); otherwise the caller asks every
//! other live node (the lookup of a small cluster, and the bounded fallback of
//! a large one after churn). Why `m + 1` copies settle it: a committed write
//! removes every older write of its path from all live nodes before its close
//! returns, so an older copy survives only on a node that was down then. The
//! code survives up to `m` nodes down at once; more than `m` answers holding
//! the same write cannot all be such leftovers.

use crate::format::Manifest;
use crate::ids::NodeId;
use crate::placement::{self, NodeInfo, PlacementPolicy};

/// The nodes a reader asks first for the manifest of `key`: the `count` nodes
/// placement would choose for it over `live` with `policy` (the writer's
/// holders while the view is the writer's). All of `live` when placement
/// cannot choose `count` (too few nodes or failure domains).
pub fn lookup_candidates(key: &[u8], live: &[NodeInfo], count: usize, policy: PlacementPolicy) -> Vec<NodeId> {
    let everyone = || live.iter().map(|n| n.id.clone()).collect();
    if count >= live.len() {
        return everyone();
    }
    // (count, 0): the coding parameters only word placement's error, which is not used here.
    placement::place(key, live, count, &Default::default(), &Default::default(), policy, (count, 0))
        .map_or_else(|_| everyone(), |p| p.nodes.into_iter().map(|n| n.id).collect())
}

/// Whether a first round that found `newest` — the newest write of the path
/// among the answers — at `copies` of the nodes asked (any revision of that
/// write) can end the lookup: more than `m` copies of one write cannot all be
/// left over from before a newer write committed (module docs).
pub fn first_round_settles(newest: &Manifest, copies: usize) -> bool {
    copies > newest.params.m()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{CodingParams, Compression};
    use std::sync::Arc;

    fn nodes(n: usize) -> Vec<NodeInfo> {
        (0..n).map(|i| NodeInfo { id: NodeId::from(format!("node-{i}")), domain: Arc::from(format!("d{i}").as_str()), free_bytes: 1 << 30 }).collect()
    }

    #[test]
    fn candidates_are_the_holders_placement_chooses_in_the_same_view() {
        let live = nodes(40);
        for i in 0..200 {
            let key = format!("job/chk-{i}/state");
            let holders: Vec<NodeId> =
                placement::place(key.as_bytes(), &live, 6, &Default::default(), &Default::default(), PlacementPolicy::default(), (4, 2))
                    .unwrap()
                    .nodes
                    .into_iter()
                    .map(|n| n.id)
                    .collect();
            assert_eq!(lookup_candidates(key.as_bytes(), &live, 6, PlacementPolicy::default()), holders);
        }
    }

    #[test]
    fn a_view_too_small_to_choose_from_is_asked_whole() {
        let live = nodes(5);
        assert_eq!(lookup_candidates(b"p", &live, 6, PlacementPolicy::default()).len(), 5);
        // ten nodes in two failure domains: one fragment per domain cannot place six
        let mut shared = nodes(10);
        for (i, n) in shared.iter_mut().enumerate() {
            n.domain = Arc::from(if i % 2 == 0 { "a" } else { "b" });
        }
        assert_eq!(lookup_candidates(b"p", &shared, 6, PlacementPolicy::default()).len(), 10);
        assert_eq!(lookup_candidates(b"p", &shared, 6, PlacementPolicy { allow_shared_domains: true }).len(), 6);
    }

    #[test]
    fn more_than_m_copies_settle_the_first_round() {
        let manifest = Manifest {
            path: "p".into(),
            write_id: Default::default(),
            revision: 0,
            length: 0,
            params: CodingParams::new(4, 2, 4096, Compression::None).unwrap(),
            holders: Vec::new(),
            stripes: Vec::new(),
            created_unix_ms: 1,
            writer: String::new(),
        };
        assert!(!first_round_settles(&manifest, 2));
        assert!(first_round_settles(&manifest, 3));
    }
}
