//! Half-open incoming connections per remote address. libp2p's
//! `connection_limits` bounds them in total ([`MAX_PENDING_INCOMING`](crate::MAX_PENDING_INCOMING)),
//! so one keyless dialer could take every slot and keep honest nodes from
//! joining until its handshakes time out. Here each remote address (an IPv4
//! address, an IPv6 /64) gets at most [`MAX_PENDING_INCOMING_PER_ADDRESS`]
//! of them: filling the total takes that many addresses at once.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv6Addr};
use std::task::{Context, Poll};

use libp2p::core::transport::PortUse;
use libp2p::core::Endpoint;
use libp2p::multiaddr::Protocol;
use libp2p::swarm::{dummy, FromSwarm, ConnectionDenied, ConnectionId, NetworkBehaviour, THandler, THandlerInEvent, THandlerOutEvent, ToSwarm};
use libp2p::{Multiaddr, PeerId};

/// Half-open incoming connections from one address. An honest node opens one
/// or two at a time, but every node of a host shares its address — several
/// TaskManagers, and in tests and demos a whole cluster on loopback, dialling
/// a node that just started — so the bound leaves room for a host's worth.
/// A flood needs 128 / 16 = 8 addresses to fill the pending slots.
pub const MAX_PENDING_INCOMING_PER_ADDRESS: u32 = 16;

/// Where a connection comes from, for counting: an IPv4 address, or the
/// /64 network of an IPv6 address (one host usually owns a whole /64).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Source {
    V4([u8; 4]),
    V6Net([u8; 8]),
}

impl Source {
    /// The source of `addr` (`/ip4/…` or `/ip6/…` first); `None` for any other address.
    pub(crate) fn of(addr: &Multiaddr) -> Option<Source> {
        let ip = match addr.iter().next()? {
            Protocol::Ip4(ip) => IpAddr::V4(ip),
            Protocol::Ip6(ip) => IpAddr::V6(ip),
            _ => return None,
        };
        Some(match ip.to_canonical() {
            IpAddr::V4(v4) => Source::V4(v4.octets()),
            IpAddr::V6(v6) => Source::V6Net(net64(&v6)),
        })
    }
}

fn net64(ip: &Ipv6Addr) -> [u8; 8] {
    let mut n = [0u8; 8];
    n.copy_from_slice(&ip.octets()[..8]);
    n
}

/// The count of half-open connections per source: no I/O, driven by the behaviour below.
#[derive(Debug)]
pub(crate) struct PendingCounts {
    limit: u32,
    by_connection: HashMap<ConnectionId, Source>,
    by_source: HashMap<Source, u32>,
}

/// A connection refused because its address has its share of half-open connections.
#[derive(Debug, thiserror::Error)]
#[error("{limit} incoming connections from {from} are still in their handshake (the per-address limit)")]
pub struct TooManyPendingFromAddress {
    pub from: String,
    pub limit: u32,
}

impl PendingCounts {
    pub(crate) fn new(limit: u32) -> Self {
        PendingCounts { limit, by_connection: HashMap::new(), by_source: HashMap::new() }
    }

    /// Admits connection `id` from `remote`, or refuses it when its source has `limit` pending.
    pub(crate) fn admit(&mut self, id: ConnectionId, remote: &Multiaddr) -> Result<(), TooManyPendingFromAddress> {
        let Some(source) = Source::of(remote) else { return Ok(()) };
        let n = self.by_source.entry(source).or_default();
        if *n >= self.limit {
            return Err(TooManyPendingFromAddress { from: remote.to_string(), limit: self.limit });
        }
        *n += 1;
        self.by_connection.insert(id, source);
        Ok(())
    }

    /// Connection `id` is no longer half-open (established, failed or refused elsewhere).
    pub(crate) fn settled(&mut self, id: ConnectionId) {
        let Some(source) = self.by_connection.remove(&id) else { return };
        if let Some(n) = self.by_source.get_mut(&source) {
            *n -= 1;
            if *n == 0 {
                self.by_source.remove(&source);
            }
        }
    }

    /// Half-open connections in all.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.by_connection.len()
    }
}

/// The behaviour that applies [`PendingCounts`] to a swarm's incoming connections.
pub(crate) struct Behaviour {
    counts: PendingCounts,
}

impl Behaviour {
    pub(crate) fn new(limit: u32) -> Self {
        Behaviour { counts: PendingCounts::new(limit) }
    }
}

impl NetworkBehaviour for Behaviour {
    type ConnectionHandler = dummy::ConnectionHandler;
    type ToSwarm = Infallible;

    fn handle_pending_inbound_connection(&mut self, id: ConnectionId, _local: &Multiaddr, remote: &Multiaddr) -> Result<(), ConnectionDenied> {
        self.counts.admit(id, remote).map_err(ConnectionDenied::new)
    }

    fn handle_established_inbound_connection(
        &mut self,
        id: ConnectionId,
        _peer: PeerId,
        _local: &Multiaddr,
        _remote: &Multiaddr,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        self.counts.settled(id);
        Ok(dummy::ConnectionHandler)
    }

    fn handle_established_outbound_connection(
        &mut self,
        _id: ConnectionId,
        _peer: PeerId,
        _addr: &Multiaddr,
        _role: Endpoint,
        _port_use: PortUse,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        Ok(dummy::ConnectionHandler)
    }

    fn on_swarm_event(&mut self, event: FromSwarm) {
        // A later behaviour may refuse what this one admitted; the swarm reports that as a listen failure too.
        if let FromSwarm::ListenFailure(f) = event {
            self.counts.settled(f.connection_id);
        }
    }

    fn on_connection_handler_event(&mut self, _peer: PeerId, _id: ConnectionId, event: THandlerOutEvent<Self>) {
        libp2p::core::util::unreachable(event)
    }

    fn poll(&mut self, _cx: &mut Context<'_>) -> Poll<ToSwarm<Self::ToSwarm, THandlerInEvent<Self>>> {
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Multiaddr {
        s.parse().unwrap()
    }

    /// A fresh connection id (the swarm's own counter is private to it).
    fn id() -> ConnectionId {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        ConnectionId::new_unchecked(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    #[test]
    fn one_address_gets_its_share_and_others_still_get_in() {
        let mut c = PendingCounts::new(2);
        let ids: Vec<ConnectionId> = (0..5).map(|_| id()).collect();
        assert!(c.admit(ids[0], &a("/ip4/10.0.0.1/tcp/4001")).is_ok());
        assert!(c.admit(ids[1], &a("/ip4/10.0.0.1/tcp/4002")).is_ok());
        let e = c.admit(ids[2], &a("/ip4/10.0.0.1/tcp/4003")).unwrap_err().to_string();
        assert!(e.contains("10.0.0.1") && e.contains('2'), "{e}");
        assert!(c.admit(ids[3], &a("/ip4/10.0.0.2/tcp/4001")).is_ok(), "another address is not held back");
        // A settled connection frees its slot, once.
        c.settled(ids[0]);
        c.settled(ids[0]);
        assert!(c.admit(ids[4], &a("/ip4/10.0.0.1/tcp/4004")).is_ok());
        assert!(c.admit(id(), &a("/ip4/10.0.0.1/tcp/4005")).is_err());
        assert_eq!(c.pending(), 3);
    }

    #[test]
    fn a_refused_or_unknown_connection_settles_nothing() {
        let mut c = PendingCounts::new(1);
        let held = id();
        c.admit(held, &a("/ip4/10.0.0.1/tcp/1")).unwrap();
        let refused = id();
        assert!(c.admit(refused, &a("/ip4/10.0.0.1/tcp/2")).is_err());
        c.settled(refused);
        c.settled(id());
        assert!(c.admit(id(), &a("/ip4/10.0.0.1/tcp/3")).is_err(), "the held slot is still taken");
        assert_eq!(c.pending(), 1);
    }

    #[test]
    fn ipv6_counts_per_64_network_and_mapped_ipv4_as_ipv4() {
        let mut c = PendingCounts::new(1);
        c.admit(id(), &a("/ip6/2001:db8:1:2::1/tcp/1")).unwrap();
        assert!(c.admit(id(), &a("/ip6/2001:db8:1:2::ffff:1/tcp/1")).is_err(), "same /64");
        assert!(c.admit(id(), &a("/ip6/2001:db8:1:3::1/tcp/1")).is_ok(), "another /64");
        c.admit(id(), &a("/ip4/192.0.2.7/tcp/1")).unwrap();
        assert!(c.admit(id(), &a("/ip6/::ffff:192.0.2.7/tcp/1")).is_err(), "IPv4-mapped is the IPv4 address");
    }

    #[test]
    fn addresses_without_an_ip_are_not_counted() {
        let mut c = PendingCounts::new(0);
        assert!(c.admit(id(), &a("/memory/1")).is_ok());
        assert_eq!(c.pending(), 0);
    }
}
