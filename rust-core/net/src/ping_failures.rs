//! When a peer counts as gone: after several failed pings in a row on one
//! connection, not after the first two.
//!
//! A ping travels in the same TCP connection as the fragment bytes, so while
//! a node writes or serves hundreds of megabytes it queues behind them, and a
//! host whose cores are saturated runs the node late. The recovery benchmark
//! (six TaskManagers filling 3 GB of RocksDB state on two cores) saw live
//! holders dropped mid-write with libp2p's default of dropping at the second
//! failure (300 ms interval, 650 ms timeout): writers re-placed fragments,
//! found no spare node and checkpoints failed. A longer timeout instead
//! (2 s) kept nodes from meeting in the peer_bounds tests, cause not found;
//! counting failures keeps the short timeout and tolerates a stall of several
//! seconds, while a frozen process still leaves within about
//! `failed_pings × (interval + timeout)`.

use std::collections::HashMap;

use libp2p::swarm::ConnectionId;

/// Consecutive failed pings per connection; the caller feeds every ping
/// result libp2p reports and closes the connection when told.
#[derive(Debug)]
pub(crate) struct PingFailures {
    /// Failed pings in a row after which the peer is dropped (≥ 2).
    drop_after: u32,
    failed: HashMap<ConnectionId, u32>,
}

/// What to do after a ping result.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PingVerdict {
    Keep,
    /// The connection's pings failed this many times in a row.
    Drop { failed_in_a_row: u32 },
}

impl PingFailures {
    pub(crate) fn new(drop_after: u32) -> Self {
        PingFailures { drop_after: drop_after.max(2), failed: HashMap::new() }
    }

    /// A ping on `conn` succeeded.
    pub(crate) fn succeeded(&mut self, conn: ConnectionId) {
        self.failed.remove(&conn);
    }

    /// libp2p reported a failed ping on `conn`. libp2p stays silent on the
    /// first failure of a run (its handler counts it, then reports every
    /// further one), so the first report is already the second failure.
    pub(crate) fn failed(&mut self, conn: ConnectionId) -> PingVerdict {
        let n = self.failed.entry(conn).or_insert(1);
        *n += 1;
        if *n >= self.drop_after {
            let failed_in_a_row = *n;
            self.failed.remove(&conn);
            PingVerdict::Drop { failed_in_a_row }
        } else {
            PingVerdict::Keep
        }
    }

    /// The connection closed: forget it (the map holds open connections only).
    pub(crate) fn closed(&mut self, conn: ConnectionId) {
        self.failed.remove(&conn);
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.failed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_dropped_only_after_the_configured_failures_in_a_row() {
        let c = ConnectionId::new_unchecked(1);
        let mut p = PingFailures::new(5);
        // reports 1..3 are failures 2..4
        for _ in 0..3 {
            assert_eq!(p.failed(c), PingVerdict::Keep);
        }
        assert_eq!(p.failed(c), PingVerdict::Drop { failed_in_a_row: 5 });
        assert_eq!(p.tracked(), 0);
    }

    #[test]
    fn a_success_starts_the_count_again_and_connections_count_apart() {
        let (a, b) = (ConnectionId::new_unchecked(1), ConnectionId::new_unchecked(2));
        let mut p = PingFailures::new(4);
        assert_eq!(p.failed(a), PingVerdict::Keep);
        assert_eq!(p.failed(a), PingVerdict::Keep);
        p.succeeded(a);
        assert_eq!(p.failed(a), PingVerdict::Keep);
        assert_eq!(p.failed(b), PingVerdict::Keep);
        assert_eq!(p.failed(a), PingVerdict::Keep);
        assert_eq!(p.failed(a), PingVerdict::Drop { failed_in_a_row: 4 });
        assert_eq!(p.failed(b), PingVerdict::Keep);
        p.closed(b);
        assert_eq!(p.tracked(), 0);
    }

    #[test]
    fn libp2ps_own_rule_is_the_least_that_can_be_asked_for() {
        // drop_after 2 (or less) is libp2p's rule: the first report drops.
        let c = ConnectionId::new_unchecked(7);
        assert_eq!(PingFailures::new(0).failed(c), PingVerdict::Drop { failed_in_a_row: 2 });
        assert_eq!(PingFailures::new(2).failed(c), PingVerdict::Drop { failed_in_a_row: 2 });
    }
}
