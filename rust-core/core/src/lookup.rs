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

/// How many times `k + m` nodes a create asks whether its path exists
/// ([`create_candidates`]).
pub const CREATE_WINDOW: usize = 3;

/// The nodes a create asks whether `key` exists, in one round: the `count`
/// nodes a reader asks first ([`lookup_candidates`]: the holders of an
/// existing object while the view is the writer's) and the nodes ranked next,
/// up to [`CREATE_WINDOW`] × `count` in all (other failure domains first, then
/// any). An existing object is missed only when none of its holders ranks in
/// the window any more — after enough nodes joined to push every one of them
/// out — which the simulator counts (`create window misses`). All of `live`
/// when it has no more nodes than the window.
pub fn create_candidates(key: &[u8], live: &[NodeInfo], count: usize, policy: PlacementPolicy) -> Vec<NodeId> {
    let wide = count.saturating_mul(CREATE_WINDOW);
    let mut asked = lookup_candidates(key, live, count, policy);
    if wide >= live.len() || asked.len() >= live.len() {
        return live.iter().map(|n| n.id.clone()).collect();
    }
    let any_domain = PlacementPolicy { allow_shared_domains: true };
    match placement::place(key, live, wide, &Default::default(), &Default::default(), any_domain, (wide, 0)) {
        Ok(p) => {
            for n in p.nodes {
                if !asked.contains(&n.id) {
                    asked.push(n.id);
                }
            }
            asked
        }
        Err(_) => live.iter().map(|n| n.id.clone()).collect(),
    }
}

/// What a create's round over [`create_candidates`] tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateLookup {
    /// The newest write found is settled ([`first_round_settles`]).
    Found,
    /// No node asked holds the path and every one answered: it does not exist.
    Missing,
    /// Copies too few to settle, or nodes that did not answer: ask every node.
    AskEveryone,
}

/// The outcome of a create's round that found `newest` at `copies` nodes,
/// with `failed` nodes that did not answer.
pub fn create_round(newest: Option<&Manifest>, copies: usize, failed: usize) -> CreateLookup {
    match newest {
        Some(m) if first_round_settles(m, copies) => CreateLookup::Found,
        None if failed == 0 => CreateLookup::Missing,
        _ => CreateLookup::AskEveryone,
    }
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
    fn a_create_asks_the_readers_candidates_and_the_next_ranked_up_to_the_window() {
        let live = nodes(100);
        for i in 0..100 {
            let key = format!("job/chk-{i}/{i:032x}");
            let first = lookup_candidates(key.as_bytes(), &live, 6, PlacementPolicy::default());
            let wide = create_candidates(key.as_bytes(), &live, 6, PlacementPolicy::default());
            assert_eq!(wide.len(), 18);
            assert!(first.iter().all(|n| wide.contains(n)), "{key}: the holders in steady state are asked");
        }
        // a cluster no larger than the window: everyone
        assert_eq!(create_candidates(b"p", &nodes(18), 6, PlacementPolicy::default()).len(), 18);
        // fewer failure domains than the window: the other nodes fill it
        let mut shared = nodes(40);
        for (i, n) in shared.iter_mut().enumerate() {
            n.domain = Arc::from(format!("rack-{}", i % 8).as_str());
        }
        let wide = create_candidates(b"p", &shared, 6, PlacementPolicy::default());
        assert_eq!(wide.len(), 18);
        let first = lookup_candidates(b"p", &shared, 6, PlacementPolicy::default());
        assert!(first.iter().all(|n| wide.contains(n)));
    }

    #[test]
    fn a_create_round_concludes_missing_only_when_every_node_asked_answered() {
        let m = manifest();
        assert_eq!(create_round(Some(&m), 3, 0), CreateLookup::Found);
        assert_eq!(create_round(Some(&m), 3, 5), CreateLookup::Found);
        assert_eq!(create_round(Some(&m), 2, 0), CreateLookup::AskEveryone);
        assert_eq!(create_round(None, 0, 0), CreateLookup::Missing);
        assert_eq!(create_round(None, 0, 1), CreateLookup::AskEveryone);
    }

    #[test]
    fn more_than_m_copies_settle_the_first_round() {
        let manifest = manifest();
        assert!(!first_round_settles(&manifest, 2));
        assert!(first_round_settles(&manifest, 3));
    }

    fn manifest() -> Manifest {
        Manifest {
            path: "p".into(),
            write_id: Default::default(),
            revision: 0,
            length: 0,
            params: CodingParams::new(4, 2, 4096, Compression::None).unwrap(),
            holders: Vec::new(),
            stripes: Vec::new(),
            created_unix_ms: 1,
            writer: String::new(),
        }
    }
}
