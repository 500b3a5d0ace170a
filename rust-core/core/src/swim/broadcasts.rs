//! The news a node still has to pass on: the newest update per member, each
//! until it was sent a given number of times, least-sent first (so that
//! fresh news overtakes news most members already have).

use std::collections::{BTreeSet, HashMap};

use crate::ids::NodeId;

use super::Update;

pub(super) struct Broadcasts<M> {
    /// The update per member and how often it was sent.
    by_node: HashMap<NodeId, (Update<M>, u32)>,
    /// The same entries as (times sent, member), least first.
    order: BTreeSet<(u32, NodeId)>,
}

impl<M> Default for Broadcasts<M> {
    fn default() -> Self {
        Broadcasts { by_node: HashMap::new(), order: BTreeSet::new() }
    }
}

impl<M: Clone> Broadcasts<M> {
    /// Pass `u` on; it replaces older news of the same member.
    pub(super) fn push(&mut self, u: Update<M>) {
        let node = u.node.clone();
        if let Some((_, sent)) = self.by_node.insert(node.clone(), (u, 0)) {
            self.order.remove(&(sent, node.clone()));
        }
        self.order.insert((0, node));
    }

    /// Up to `max` updates for one message, least-sent first; each counts
    /// as sent once more and is dropped once sent `limit` times.
    pub(super) fn take(&mut self, max: usize, limit: u32) -> Vec<Update<M>> {
        let picked: Vec<(u32, NodeId)> = self.order.iter().take(max).cloned().collect();
        let mut out = Vec::with_capacity(picked.len());
        for (sent, node) in picked {
            self.order.remove(&(sent, node.clone()));
            let Some(entry) = self.by_node.get_mut(&node) else { continue };
            out.push(entry.0.clone());
            if sent + 1 >= limit {
                self.by_node.remove(&node);
            } else {
                entry.1 = sent + 1;
                self.order.insert((sent + 1, node));
            }
        }
        out
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.by_node.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swim::Liveness;

    fn u(node: &str, incarnation: u64) -> Update<()> {
        Update { node: NodeId::from(node), incarnation, liveness: Liveness::Alive, meta: () }
    }

    #[test]
    fn least_sent_first_until_the_limit_and_newer_news_replaces_older() {
        let mut b = Broadcasts::default();
        b.push(u("a", 1));
        b.push(u("b", 1));
        assert_eq!(b.take(1, 2), vec![u("a", 1)]);
        assert_eq!(b.take(1, 2), vec![u("b", 1)], "b was sent less");
        b.push(u("a", 2)); // replaces a@1 and starts its count again
        assert_eq!(b.take(5, 2), vec![u("a", 2), u("b", 1)]);
        assert_eq!(b.take(5, 2), vec![u("a", 2)], "b reached its limit");
        assert!(b.is_empty());
    }
}
