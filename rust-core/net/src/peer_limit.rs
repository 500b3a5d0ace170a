//! Per-peer bounds on what a node serves at once (open streams, fragment
//! uploads), so that one peer — a busy writer or a misbehaving member —
//! cannot take every slot of a node. NETWORK.md, "Bounded resources".

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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

/// Bytes of received frames one peer may have in memory on this node at
/// once (a request being served, a cell being stored). A frame beyond it
/// waits, before its body is read, until the peer's earlier frames are done
/// with; its stream stops being read meanwhile, which holds the peer back.
pub const FRAME_BYTES_PER_PEER: usize = 256 << 20;
/// Bytes of received frames all peers together may have in memory at once.
pub const MAX_FRAME_BYTES: usize = 1 << 30;

/// The byte budgets of received frames: one per peer and one for the node.
pub(crate) struct FrameBytes {
    node: Arc<Semaphore>,
    peers: Mutex<HashMap<libp2p::PeerId, Arc<Semaphore>>>,
}

/// Budget taken by one frame, given back when dropped.
pub(crate) struct FramePermit {
    _node: OwnedSemaphorePermit,
    _peer: OwnedSemaphorePermit,
}

impl FrameBytes {
    /// Peers beyond which idle entries are dropped from the map (keeps it
    /// bounded by the peers holding some budget, however many came and went).
    const TIDY_ABOVE: usize = 1024;

    pub(crate) fn new() -> Arc<Self> {
        Arc::new(FrameBytes { node: Arc::new(Semaphore::new(MAX_FRAME_BYTES)), peers: Mutex::new(HashMap::new()) })
    }

    /// Waits until `peer` and the node both have `len` bytes left and takes them.
    pub(crate) async fn acquire(&self, peer: &libp2p::PeerId, len: u32) -> FramePermit {
        let sem = {
            let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
            if peers.len() > Self::TIDY_ABOVE {
                peers.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < FRAME_BYTES_PER_PEER);
            }
            peers.entry(*peer).or_insert_with(|| Arc::new(Semaphore::new(FRAME_BYTES_PER_PEER))).clone()
        };
        // A frame never exceeds either budget (frames are at most 64 MiB + 16 B).
        let len = len.min(FRAME_BYTES_PER_PEER as u32);
        let peer = sem.acquire_many_owned(len).await.expect("frame budgets are never closed");
        let node = self.node.clone().acquire_many_owned(len).await.expect("frame budgets are never closed");
        FramePermit { _node: node, _peer: peer }
    }

    #[cfg(test)]
    fn peers(&self) -> usize {
        self.peers.lock().unwrap().len()
    }
}

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
    use std::time::Duration;

    #[tokio::test]
    async fn a_peer_over_its_frame_bytes_waits_and_others_do_not() {
        let budget = FrameBytes::new();
        let (a, b) = (libp2p::PeerId::random(), libp2p::PeerId::random());
        let held = budget.acquire(&a, (FRAME_BYTES_PER_PEER - 10) as u32).await;
        // a has 10 bytes left: a frame of 11 waits ...
        let waiting = tokio::time::timeout(Duration::from_millis(50), budget.acquire(&a, 11)).await;
        assert!(waiting.is_err(), "a frame beyond the peer's budget was let through");
        // ... while b is served.
        let _b = tokio::time::timeout(Duration::from_millis(50), budget.acquire(&b, 1 << 20)).await.expect("b waits for a");
        drop(held);
        tokio::time::timeout(Duration::from_millis(50), budget.acquire(&a, 11)).await.expect("a's budget came back");
    }

    #[tokio::test]
    async fn the_map_keeps_only_peers_that_hold_budget() {
        let budget = FrameBytes::new();
        let keep = libp2p::PeerId::random();
        let _held = budget.acquire(&keep, 1).await;
        for _ in 0..2 * FrameBytes::TIDY_ABOVE {
            drop(budget.acquire(&libp2p::PeerId::random(), 100).await);
        }
        assert!(budget.peers() <= FrameBytes::TIDY_ABOVE + 1, "{} peers kept", budget.peers());
        assert!(budget.peers.lock().unwrap().contains_key(&keep), "a peer holding budget stays");
    }

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
