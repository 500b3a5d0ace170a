//! Dials the swarm task makes on purpose: to the bootstrap addresses (a
//! failure is a warning naming the address, never this node's own address),
//! again to those whose node is gone (a seed that restarted), and to members
//! on demand for the tasks waiting on them ([`Cmd::Dial`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use libp2p::multiaddr::Protocol;
use libp2p::swarm::dial_opts::{DialOpts, PeerCondition};
use libp2p::swarm::{ConnectionId, NetworkBehaviour, SwarmEvent};
use libp2p::{Multiaddr, PeerId, Swarm};

use crate::config::hostname;
use crate::state::{lock, Inner};

/// Dials of bootstrap addresses in flight, so that a failure (a name that
/// does not resolve, a refused connection) is logged as a warning naming the
/// address — every other failed dial is only a debug line.
#[derive(Default)]
pub(crate) struct BootstrapDials {
    /// Dials in flight: the address, and whether a failure is worth a warning.
    pending: HashMap<ConnectionId, (Multiaddr, bool)>,
    /// When each address's last failure was logged as a warning.
    warned: HashMap<Multiaddr, Instant>,
    /// Bootstrap addresses found to be this node's own (logged once, never dialled).
    own: Vec<Multiaddr>,
    /// The peer each bootstrap address last led to.
    reached: HashMap<Multiaddr, PeerId>,
    last_redial: Option<Instant>,
}

/// While alone, a node redials its bootstrap addresses every tick (3 s); a
/// failing address is logged as a warning at most this often.
const BOOTSTRAP_WARN_EVERY: Duration = Duration::from_secs(30);

/// While not alone, a node redials the bootstrap addresses whose node is gone
/// at most this often ([`BootstrapDials::redial_gone`]).
pub(crate) const REDIAL_GONE_EVERY: Duration = Duration::from_secs(10);

impl BootstrapDials {
    /// Dials every bootstrap address except this node's own (`listen`: the configured and the
    /// reported listen addresses).
    pub(crate) fn dial_all<B: NetworkBehaviour>(&mut self, swarm: &mut Swarm<B>, addrs: &[Multiaddr], listen: &[Multiaddr]) {
        for addr in addrs {
            if is_own_address(addr, listen) {
                if !self.own.contains(addr) {
                    tracing::info!(%addr, "bootstrap address is this node's own listen address: not dialled (the other nodes join this one)");
                    self.own.push(addr.clone());
                }
                continue;
            }
            self.dial(swarm, addr, true);
        }
    }

    /// Once per [`REDIAL_GONE_EVERY`], dials the bootstrap addresses (not this node's own) that
    /// never led to a peer or whose peer is no longer `up` here. A seed that restarted — under
    /// a new peer id (a memory store) or its old one — is dialled again, and the connection
    /// joins through it ([`Self::event`]): the JobManager's node with the README's lines is its
    /// own bootstrap and, restarted alone, dials nobody; without this it would never learn the
    /// cluster again. Failures are debug lines: this node has other peers.
    pub(crate) fn redial_gone<B: NetworkBehaviour>(
        &mut self,
        swarm: &mut Swarm<B>,
        addrs: &[Multiaddr],
        listen: &[Multiaddr],
        up: impl Fn(&PeerId) -> bool,
    ) {
        if self.last_redial.is_some_and(|t| t.elapsed() < REDIAL_GONE_EVERY) {
            return;
        }
        self.last_redial = Some(Instant::now());
        for addr in addrs {
            let gone = self.reached.get(addr).is_none_or(|peer| !up(peer));
            let dialling = self.pending.values().any(|(a, _)| a == addr);
            if gone && !dialling && !is_own_address(addr, listen) {
                self.dial(swarm, addr, false);
            }
        }
    }

    fn dial<B: NetworkBehaviour>(&mut self, swarm: &mut Swarm<B>, addr: &Multiaddr, warn: bool) {
        let opts = DialOpts::from(addr.clone());
        let id = opts.connection_id();
        match swarm.dial(opts) {
            Ok(()) => {
                self.pending.insert(id, (addr.clone(), warn));
            }
            Err(e) => self.failed(addr, &e.to_string(), warn),
        }
    }

    fn failed(&mut self, addr: &Multiaddr, error: &str, warn: bool) {
        let due = warn && self.warned.get(addr).is_none_or(|t| t.elapsed() >= BOOTSTRAP_WARN_EVERY);
        if due {
            self.warned.insert(addr.clone(), Instant::now());
            tracing::warn!(%addr, %error, "cannot reach bootstrap address; retrying every 3 s while no peer is connected");
        } else {
            tracing::debug!(%addr, %error, "cannot reach bootstrap address");
        }
    }

    /// Follows a swarm event; returns the peer a bootstrap dial reached.
    pub(crate) fn event<E>(&mut self, ev: &SwarmEvent<E>) -> Option<PeerId> {
        match ev {
            SwarmEvent::ConnectionEstablished { connection_id, peer_id, .. } => {
                let (addr, _) = self.pending.remove(connection_id)?;
                if self.warned.remove(&addr).is_some() {
                    tracing::info!(%addr, "bootstrap address reached");
                }
                if self.reached.insert(addr.clone(), *peer_id).is_some_and(|before| before != *peer_id) {
                    tracing::info!(%addr, peer = %peer_id, "bootstrap address leads to another node than before (restarted): joining through it");
                }
                return Some(*peer_id);
            }
            SwarmEvent::OutgoingConnectionError { connection_id, error, .. } => {
                if let Some((addr, warn)) = self.pending.remove(connection_id) {
                    self.failed(&addr, &error.to_string(), warn);
                }
            }
            _ => {}
        }
        None
    }
}

/// Tasks waiting for a connection to a peer ([`Cmd::Dial`]).
#[derive(Default)]
pub(crate) struct DialWaiters(HashMap<PeerId, Vec<tokio::sync::oneshot::Sender<std::result::Result<(), String>>>>);

impl DialWaiters {
    /// Dials `peer` at the addresses its SWIM meta (or a dial to it) gave, unless connected or dialling.
    pub(crate) fn dial<B: NetworkBehaviour>(&mut self, inner: &Inner, swarm: &mut Swarm<B>, peer: PeerId, done: tokio::sync::oneshot::Sender<std::result::Result<(), String>>) {
        if swarm.is_connected(&peer) {
            let _ = done.send(Ok(()));
            return;
        }
        let addrs = lock(&inner.peers).get(&peer).map(|p| p.addrs.clone()).unwrap_or_default();
        let opts = DialOpts::peer_id(peer).addresses(addrs).condition(PeerCondition::DisconnectedAndNotDialing).build();
        match swarm.dial(opts) {
            Ok(()) | Err(libp2p::swarm::DialError::DialPeerConditionFalse(_)) => self.0.entry(peer).or_default().push(done),
            Err(e) => {
                let _ = done.send(Err(e.to_string()));
            }
        }
    }

    pub(crate) fn finish(&mut self, peer: &PeerId, result: std::result::Result<(), String>) {
        for done in self.0.remove(peer).unwrap_or_default() {
            let _ = done.send(result.clone());
        }
    }
}

/// True when `addr` (a bootstrap address) names this node: same TCP port as one it listens on,
/// and either the same IP, or this machine (`localhost`, a loopback address, this host's name)
/// while it listens on all interfaces or on loopback. The JobManager's node of a Flink cluster
/// is its own default bootstrap; dialling itself fails the handshake and would warn every 3 s.
/// (A name that only resolves to this host's address is not recognised: that dial fails and warns.)
pub(crate) fn is_own_address(addr: &Multiaddr, listen: &[Multiaddr]) -> bool {
    let mut parts = addr.iter();
    let (Some(host), Some(Protocol::Tcp(port))) = (parts.next(), parts.next()) else {
        return false;
    };
    let this_machine = match &host {
        Protocol::Dns(n) | Protocol::Dns4(n) | Protocol::Dns6(n) => n.eq_ignore_ascii_case("localhost") || n.eq_ignore_ascii_case(&hostname()),
        Protocol::Ip4(ip) => ip.is_loopback() || ip.is_unspecified(),
        Protocol::Ip6(ip) => ip.is_loopback() || ip.is_unspecified(),
        _ => false,
    };
    listen.iter().any(|l| {
        let mut lp = l.iter();
        match (lp.next(), lp.next()) {
            (Some(lhost), Some(Protocol::Tcp(p))) if p == port && p != 0 => {
                let local = match &lhost {
                    Protocol::Ip4(ip) => ip.is_loopback() || ip.is_unspecified(),
                    Protocol::Ip6(ip) => ip.is_loopback() || ip.is_unspecified(),
                    _ => false,
                };
                lhost == host || (this_machine && local)
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Multiaddr {
        s.parse().unwrap()
    }

    #[test]
    fn own_listen_address_is_recognised_as_bootstrap_address() {
        let any = [a("/ip4/0.0.0.0/tcp/6130")];
        assert!(is_own_address(&a("/dns4/localhost/tcp/6130"), &any));
        assert!(is_own_address(&a(&format!("/dns4/{}/tcp/6130", hostname())), &any));
        assert!(is_own_address(&a("/ip4/127.0.0.1/tcp/6130/p2p/12D3KooWHFNNSCypXdZbbJaQGsihqh2xExDVnXHL9Rx6mFKFCSuh"), &any));
        assert!(!is_own_address(&a("/dns4/localhost/tcp/6131"), &any));
        assert!(!is_own_address(&a("/dns4/jobmanager.example/tcp/6130"), &any));
        assert!(!is_own_address(&a("/ip4/10.0.0.1/tcp/6130"), &any));
        // an ephemeral listen port (0) is never a bootstrap address; a specific IP must match
        assert!(!is_own_address(&a("/dns4/localhost/tcp/6130"), &[a("/ip4/0.0.0.0/tcp/0")]));
        assert!(is_own_address(&a("/ip4/10.0.0.1/tcp/6130"), &[a("/ip4/10.0.0.1/tcp/6130")]));
        assert!(!is_own_address(&a("/dns4/localhost/tcp/6130"), &[a("/ip4/10.0.0.1/tcp/6130")]));
    }
}
