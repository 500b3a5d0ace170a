//! Per-peer bounds on what a node serves at once (open streams, fragment
//! uploads), so that one peer — a busy writer or a misbehaving member —
//! cannot take every slot of a node. NETWORK.md, "Bounded resources".

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// Streams one peer may have open on this node at once (of
/// [`MAX_STREAMS`] in all); a further stream is closed unanswered and the
/// peer's client retries it on a new one.
pub const STREAMS_PER_PEER: usize = 256;
/// Streams all peers together may have open on this node at once.
pub const MAX_STREAMS: usize = 1024;
/// Fragment uploads one peer may have in progress on this node at once. Each
/// holds at most one cell in memory, so a peer's uploads hold at most this
/// many cells; a further upload is refused with a node error, and the writer
/// places that fragment on another node.
pub const UPLOADS_PER_PEER: usize = 64;

/// Counts what each peer holds of one resource; a peer's entry goes when
/// its count drops to 0, so the map is bounded by the peers holding some.
pub(crate) struct PeerLimit<K: Hash + Eq + Clone> {
    per_peer: usize,
    held: Mutex<HashMap<K, usize>>,
}

/// One unit of a [`PeerLimit`], given back when dropped.
pub(crate) struct PeerPermit<K: Hash + Eq + Clone> {
    limit: Arc<PeerLimit<K>>,
    peer: K,
}

impl<K: Hash + Eq + Clone> PeerLimit<K> {
    pub(crate) fn new(per_peer: usize) -> Arc<Self> {
        Arc::new(PeerLimit { per_peer, held: Mutex::new(HashMap::new()) })
    }

    /// A unit for `peer`, or `None` when it holds its share already.
    pub(crate) fn try_acquire(self: &Arc<Self>, peer: &K) -> Option<PeerPermit<K>> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let n = held.entry(peer.clone()).or_insert(0);
        if *n >= self.per_peer {
            return None;
        }
        *n += 1;
        Some(PeerPermit { limit: self.clone(), peer: peer.clone() })
    }

    pub(crate) fn per_peer(&self) -> usize {
        self.per_peer
    }

    #[cfg(test)]
    fn peers(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

impl<K: Hash + Eq + Clone> Drop for PeerPermit<K> {
    fn drop(&mut self) {
        let mut held = self.limit.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_peer_gets_its_share_and_no_more() {
        let l = PeerLimit::new(2);
        let a1 = l.try_acquire(&"a").unwrap();
        let _a2 = l.try_acquire(&"a").unwrap();
        assert!(l.try_acquire(&"a").is_none(), "a third unit for a");
        let _b = l.try_acquire(&"b").expect("b is not starved by a");
        drop(a1);
        assert!(l.try_acquire(&"a").is_some(), "a unit given back can be taken again");
    }

    #[test]
    fn peers_that_hold_nothing_leave_no_entry() {
        let l = PeerLimit::new(3);
        let permits: Vec<_> = (0..100).map(|i| l.try_acquire(&i).unwrap()).collect();
        assert_eq!(l.peers(), 100);
        drop(permits);
        assert_eq!(l.peers(), 0);
    }
}
