//! The libp2p swarm: transport (DNS → TCP → noise keyed by the cluster key → yamux), behaviours
//! (identify, ping, Kademlia in server mode, raw streams), and the task that
//! drives it and turns its events into membership changes.

use std::sync::atomic::Ordering;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::StreamExt;
use libp2p::core::muxing::StreamMuxerBox;
use libp2p::core::transport::{Boxed, MemoryTransport};
use libp2p::core::upgrade;
use libp2p::identity::Keypair;
use libp2p::kad;
use libp2p::pnet::PreSharedKey;
use libp2p::swarm::dial_opts::{DialOpts, PeerCondition};
use libp2p::multiaddr::Protocol;
use libp2p::swarm::behaviour::toggle::Toggle;
use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
use libp2p::core::transport::{DialOpts as TransportDialOpts, ListenerId, PortUse, TransportError, TransportEvent};
use libp2p::{connection_limits, dns, identify, noise, ping, tcp, yamux, Multiaddr, PeerId, Swarm, Transport};
use tokio::sync::mpsc;

use fragstate_core::error::{Error, Result};
use fragstate_core::ids::NodeId;

use crate::config::{Membership, IDENTIFY_PROTOCOL, KAD_PROTOCOL, NetConfig};
use crate::dials::{BootstrapDials, DialWaiters};
use crate::membership::{exchange_hello, peer_left};
use crate::pending_limit;
use crate::ping_failures::{PingFailures, PingVerdict};
use crate::state::{lock, Cmd, Inner, SwimInput};

/// Connections being set up from outside (TCP accepted, noise handshake not
/// done; each an fd in the Flink JVM for up to the 10 s handshake timeout):
/// beyond this a new one is closed at once, so a flood of keyless dialers
/// cannot run the process out of descriptors. One address gets at most
/// [`NetConfig::pending_incoming_per_address`] of them, so one dialer cannot keep
/// honest nodes from joining.
pub const MAX_PENDING_INCOMING: u32 = 128;
/// Established connections with one peer (two when both dial at once, and a
/// redial while an old one closes).
pub const MAX_ESTABLISHED_PER_PEER: u32 = 4;
/// Established connections in all: a full mesh of this many peers.
pub const MAX_ESTABLISHED: u32 = 2048;

#[derive(NetworkBehaviour)]
pub(crate) struct Behaviour {
    pending_per_address: pending_limit::Behaviour,
    limits: connection_limits::Behaviour,
    /// Mesh only (off under SWIM, whose meta carries what they tell: each new
    /// connection would cost their exchanges, and SWIM opens many).
    identify: Toggle<identify::Behaviour>,
    ping: ping::Behaviour,
    kad: Toggle<kad::Behaviour<kad::store::MemoryStore>>,
    stream: libp2p_stream::Behaviour,
}

/// The swarm of a node: its transport and behaviours, listening on
/// `cfg.listen`, and the control handle of its raw-stream behaviour.
pub(crate) fn build_swarm(cfg: &NetConfig) -> Result<(Swarm<Behaviour>, libp2p_stream::Control)> {
    let peer_id = cfg.identity.public().to_peer_id();
    let transport = build_transport(&cfg.identity, cfg.cluster_key, Duration::from_secs(10), in_memory(cfg))?;
    let mut kad_cfg = kad::Config::new(KAD_PROTOCOL);
    kad_cfg.set_query_timeout(Duration::from_secs(10));
    let mut kademlia = kad::Behaviour::with_config(peer_id, kad::store::MemoryStore::new(peer_id), kad_cfg);
    // In automatic mode a node without a confirmed external address stays a client and is never added to routing tables.
    kademlia.set_mode(Some(kad::Mode::Server));
    let mesh = cfg.membership == Membership::Mesh;
    let stream = libp2p_stream::Behaviour::new();
    let control = stream.new_control();
    let behaviour = Behaviour {
        pending_per_address: pending_limit::Behaviour::new(cfg.pending_incoming_per_address),
        limits: connection_limits::Behaviour::new(
            connection_limits::ConnectionLimits::default()
                .with_max_pending_incoming(Some(MAX_PENDING_INCOMING))
                .with_max_established_per_peer(Some(MAX_ESTABLISHED_PER_PEER))
                .with_max_established(Some(MAX_ESTABLISHED)),
        ),
        identify: Toggle::from(mesh.then(|| {
            identify::Behaviour::new(
                identify::Config::new(IDENTIFY_PROTOCOL.to_string(), cfg.identity.public())
                    .with_agent_version(format!("fragstate/{}", env!("CARGO_PKG_VERSION"))),
            )
        })),
        ping: ping::Behaviour::new(ping::Config::new().with_interval(cfg.ping_interval).with_timeout(cfg.ping_timeout)),
        kad: Toggle::from(mesh.then_some(kademlia)),
        stream,
    };
    let swarm_cfg = libp2p::swarm::Config::with_tokio_executor()
        .with_idle_connection_timeout(cfg.idle_connection_timeout)
        .with_substream_upgrade_protocol_override(upgrade::Version::V1Lazy);
    let mut swarm = Swarm::new(transport, behaviour, peer_id, swarm_cfg);
    for addr in &cfg.listen {
        if !in_memory(cfg) {
            check_listen_addr(addr)?;
        }
        swarm.listen_on(addr.clone()).map_err(|e| Error::invalid("listen address", addr, format!("a listenable TCP multiaddr ({e})")))?;
    }
    Ok((swarm, control))
}

/// What a node can listen on: an IP address and a TCP port (a trailing
/// `/p2p/<id>` is allowed). Host names (`/dns4/…`) are resolved only when
/// dialing; the error says so instead of libp2p's "multiaddr not supported".
pub(crate) fn check_listen_addr(addr: &Multiaddr) -> Result<()> {
    let mut parts = addr.iter();
    let ip = matches!(parts.next(), Some(Protocol::Ip4(_) | Protocol::Ip6(_)));
    let tcp = matches!(parts.next(), Some(Protocol::Tcp(_)));
    let rest = matches!(parts.next(), None | Some(Protocol::P2p(_))) && parts.next().is_none();
    if ip && tcp && rest {
        return Ok(());
    }
    Err(Error::invalid(
        "listen address",
        addr,
        "an IP address and a TCP port, such as /ip4/0.0.0.0/tcp/7710 or /ip6/::/tcp/7710 \
         (host names such as /dns4/HOST/tcp/PORT are accepted where the node dials: bootstrap addresses)",
    ))
}

/// TCP (no Nagle) behind libp2p's DNS transport: dialing `/dns4`, `/dns6`,
/// `/dns` (and `/dnsaddr`) addresses resolves the name first, with the system
/// resolver configuration (`/etc/resolv.conf`, `/etc/hosts`; `localhost` is
/// always the loopback address). Listening is TCP's unchanged.
fn dns_tcp() -> dns::tokio::Transport<NewPortDials<tcp::tokio::Transport>> {
    let tcp = || NewPortDials(tcp::tokio::Transport::new(tcp::Config::default().nodelay(true)));
    dns::tokio::Transport::system(tcp()).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot read the system DNS configuration: host names resolve through /etc/hosts only");
        dns::tokio::Transport::custom(tcp(), dns::ResolverConfig::default(), dns::ResolverOpts::default())
    })
}

/// A transport whose every dial takes a fresh local port. libp2p dials from
/// the node's listen port by default (for hole punching, which fragstate does
/// not do), so a connection between two listen ports leaves its 4-tuple in
/// TIME_WAIT when it closes, and a node that listens on the same port again
/// — a restarted TaskManager with a fixed port, or on loopback any new node
/// the kernel gives a recently used port — cannot dial the same peer for up
/// to a minute: `connect` fails with EADDRINUSE, which libp2p-tcp 0.45 does
/// not retry (only EADDRNOTAVAIL). Seen as nodes that never met in the
/// peer_bounds tests. Peers learn our listen addresses from identify.
struct NewPortDials<T>(T);

impl<T: Transport + Unpin> Transport for NewPortDials<T> {
    type Output = T::Output;
    type Error = T::Error;
    type ListenerUpgrade = T::ListenerUpgrade;
    type Dial = T::Dial;

    fn listen_on(&mut self, id: ListenerId, addr: Multiaddr) -> std::result::Result<(), TransportError<Self::Error>> {
        self.0.listen_on(id, addr)
    }

    fn remove_listener(&mut self, id: ListenerId) -> bool {
        self.0.remove_listener(id)
    }

    fn dial(&mut self, addr: Multiaddr, opts: TransportDialOpts) -> std::result::Result<Self::Dial, TransportError<Self::Error>> {
        self.0.dial(addr, TransportDialOpts { port_use: PortUse::New, ..opts })
    }

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<TransportEvent<Self::ListenerUpgrade, Self::Error>> {
        Pin::new(&mut self.0).poll(cx)
    }
}

/// DNS → TCP → Noise → yamux. With a cluster key, Noise's handshake prologue
/// is a hash of the key: the prologue is mixed into the handshake hash that
/// authenticates every handshake message, so only nodes holding the same key
/// complete a handshake (a node without it cannot even read the responder's
/// static key), and each connection is encrypted once. (Before protocol 5 a
/// `pnet` stream cipher wrapped Noise: every byte was encrypted twice, which
/// halved the throughput on two cores, DESIGN.md.)
/// `memory`: libp2p's in-process [`MemoryTransport`] in place of DNS → TCP
/// (`NetConfig::in_memory_transport`, benchmarks only).
pub(crate) fn build_transport(key: &Keypair, psk: Option<PreSharedKey>, timeout: Duration, memory: bool) -> Result<Boxed<(PeerId, StreamMuxerBox)>> {
    let mut noise = noise::Config::new(key).map_err(|e| Error::format("noise configuration", e.to_string()))?;
    if let Some(psk) = &psk {
        noise = noise.with_prologue(cluster_prologue(psk));
    }
    let yamux = yamux::Config::default();
    Ok(if memory {
        MemoryTransport::default().upgrade(upgrade::Version::V1Lazy).authenticate(noise).multiplex(yamux).timeout(timeout).boxed()
    } else {
        dns_tcp().upgrade(upgrade::Version::V1Lazy).authenticate(noise).multiplex(yamux).timeout(timeout).boxed()
    })
}

#[cfg(feature = "bench")]
fn in_memory(cfg: &NetConfig) -> bool {
    cfg.in_memory_transport
}

#[cfg(not(feature = "bench"))]
fn in_memory(_: &NetConfig) -> bool {
    false
}

/// The Noise prologue of a cluster: SHA-256 over a domain label and the key
/// file's text. A captured handshake lets an outsider test guesses of the
/// prologue offline, so it must be a 256-bit secret (the random key `fragstate
/// keygen` writes), never a password.
pub(crate) fn cluster_prologue(psk: &PreSharedKey) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"fragstate noise prologue v1\n");
    h.update(psk.to_string().as_bytes());
    h.finalize().to_vec()
}

pub(crate) async fn swarm_task(inner: Arc<Inner>, mut swarm: Swarm<Behaviour>, mut cmds: mpsc::UnboundedReceiver<Cmd>) {
    let mut shutdown = inner.shutdown.subscribe();
    let mut bootstrap = BootstrapDials::default();
    let mut refused = RefusedConnections::default();
    let mut pings = PingFailures::new(inner.cfg.ping_failures_to_drop);
    let mut dials = DialWaiters::default();
    let mesh = inner.cfg.membership == Membership::Mesh;
    bootstrap.dial_all(&mut swarm, &inner.cfg.bootstrap, &inner.cfg.listen);
    let mut tick = tokio::time::interval(Duration::from_secs(3));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            Some(cmd) = cmds.recv() => match cmd {
                Cmd::Disconnect(peer) => {
                    let _ = swarm.disconnect_peer_id(peer);
                }
                Cmd::Dial { peer, done } => dials.dial(&inner, &mut swarm, peer, done),
            },
            _ = tick.tick() => {
                // Find peers that joined elsewhere; redial the bootstrap nodes when alone, and
                // those whose node is gone (restarted) when not.
                let alone = if mesh { swarm.connected_peers().count() == 0 } else { inner.live_members() == 0 };
                let listen: Vec<Multiaddr> = inner.cfg.listen.iter().chain(lock(&inner.listen_addrs).iter()).cloned().collect();
                if alone {
                    bootstrap.dial_all(&mut swarm, &inner.cfg.bootstrap, &listen);
                } else {
                    let membership = inner.cfg.membership;
                    let up = |peer: &PeerId| lock(&inner.peers).get(peer).is_some_and(|p| p.up(membership));
                    bootstrap.redial_gone(&mut swarm, &inner.cfg.bootstrap, &listen, up);
                    if mesh {
                        kad_bootstrap(&mut swarm);
                    }
                }
                if !mesh {
                    continue;
                }
                // Peers that left recently may be back (restart, or a ping timeout under load).
                let recent: Vec<PeerId> = lock(&inner.peers)
                    .iter()
                    .filter(|(_, p)| p.connections == 0 && p.left_at.is_some_and(|t| t.elapsed() < Duration::from_secs(600)))
                    .map(|(id, _)| *id)
                    .collect();
                for p in recent {
                    let _ = swarm.dial(DialOpts::peer_id(p).condition(PeerCondition::DisconnectedAndNotDialing).build());
                }
            }
            ev = swarm.select_next_some() => {
                if let Some(seed) = bootstrap.event(&ev) {
                    inner.to_swim(SwimInput::Seed(seed));
                }
                match &ev {
                    SwarmEvent::ConnectionEstablished { peer_id, .. } => dials.finish(peer_id, Ok(())),
                    SwarmEvent::OutgoingConnectionError { peer_id: Some(p), error, .. } if !swarm.is_connected(p) => {
                        dials.finish(p, Err(error.to_string()));
                        if !mesh {
                            inner.connection_failed(*p);
                        }
                    }
                    _ => {}
                }
                if let SwarmEvent::IncomingConnectionError { send_back_addr, error, .. } = &ev {
                    refused.record(send_back_addr, error);
                } else {
                    handle_event(&inner, &mut swarm, &mut pings, ev);
                }
            }
        }
    }
    let peers: Vec<PeerId> = swarm.connected_peers().cloned().collect();
    for p in peers {
        let _ = swarm.disconnect_peer_id(p);
    }
    // Let the close frames go out.
    let _ = tokio::time::timeout(Duration::from_millis(200), async {
        loop {
            swarm.select_next_some().await;
        }
    })
    .await;
    tracing::info!("network stopped");
}

/// Refused incoming connections (a wrong or missing cluster key, a limit
/// above, or a dialer that closed during the handshake — a TCP port probe,
/// or a peer that dialed several of our addresses at once and kept the first
/// that answered): the first is logged at once, later ones as one summary
/// line per [`Self::EVERY`], so a flood of dialers cannot flood the Flink
/// log too.
#[derive(Default)]
struct RefusedConnections {
    last_logged: Option<Instant>,
    unlogged: u64,
}

impl RefusedConnections {
    const EVERY: Duration = Duration::from_secs(10);

    fn record(&mut self, from: &Multiaddr, error: &libp2p::swarm::ListenError) {
        if self.last_logged.is_some_and(|t| t.elapsed() < Self::EVERY) {
            self.unlogged += 1;
            return;
        }
        let more = std::mem::take(&mut self.unlogged);
        tracing::warn!(%from, %error, more_since_last_line = more, "refused an incoming connection (wrong or missing cluster key, a connection limit, or a dialer that closed during the handshake: a port probe, a duplicate dial)");
        self.last_logged = Some(Instant::now());
    }
}

/// Refreshes the Kademlia routing table (mesh: it finds the peers to connect to).
fn kad_bootstrap(swarm: &mut Swarm<Behaviour>) {
    if let Some(kad) = swarm.behaviour_mut().kad.as_mut() {
        let _ = kad.bootstrap();
    }
}

fn handle_event(inner: &Arc<Inner>, swarm: &mut Swarm<Behaviour>, pings: &mut PingFailures, ev: SwarmEvent<BehaviourEvent>) {
    match ev {
        SwarmEvent::NewListenAddr { address, .. } => {
            tracing::info!(%address, peer = %inner.peer_id, "listening");
            lock(&inner.listen_addrs).push(address);
        }
        SwarmEvent::ConnectionEstablished { peer_id, endpoint, num_established, .. } => {
            inner.counters.connections_opened.fetch_add(1, Ordering::Relaxed);
            {
                let mut peers = lock(&inner.peers);
                let p = peers.entry(peer_id).or_default();
                p.connections = num_established.get() as usize;
                p.unreachable = false;
                if endpoint.is_dialer() && p.addrs.is_empty() {
                    p.addrs.push(endpoint.get_remote_address().clone());
                }
            }
            if let (true, Some(kad)) = (endpoint.is_dialer(), swarm.behaviour_mut().kad.as_mut()) {
                kad.add_address(&peer_id, endpoint.get_remote_address().clone());
            }
            tracing::debug!(me = %inner.peer_id, %peer_id, dialer = endpoint.is_dialer(), "connection established");
            // the mesh starts every connection with hellos; under SWIM a hello goes only to
            // a holder that is back and missed deletes of this node's (the hints it carries)
            let mesh = inner.cfg.membership == Membership::Mesh;
            if mesh || lock(&inner.hints).has(&NodeId::from(peer_id.to_base58())) {
                let inner = inner.clone();
                tokio::spawn(async move { exchange_hello(&inner, peer_id, mesh).await });
            }
        }
        SwarmEvent::ConnectionClosed { peer_id, connection_id, num_established, cause, .. } => {
            pings.closed(connection_id);
            lock(&inner.peers).entry(peer_id).or_default().connections_closed += 1;
            let c = &inner.counters;
            match &cause {
                Some(libp2p::swarm::ConnectionError::KeepAliveTimeout) => &c.closed_idle,
                Some(libp2p::swarm::ConnectionError::IO(_)) => &c.closed_broken,
                None => &c.closed_here,
            }
            .fetch_add(1, Ordering::Relaxed);
            tracing::debug!(me = %inner.peer_id, %peer_id, ?cause, num_established, "connection closed");
            if num_established == 0 && inner.cfg.membership == Membership::Swim {
                // Not a sign of death under SWIM (unused connections close), but an I/O
                // error (a reset: `kill -9`) makes the peer unreachable here until SWIM's
                // probe, asked for now, connects again. The peer's own idle timeout
                // closing an unused connection reads as an I/O error here too (yamux
                // "connection is closed"): taken for a failure, it made this node probe
                // and redial the peer, whose end closed it idle 5 s later, and so on —
                // most of the connections a formed cluster opened (NETWORK.md).
                let idle = {
                    let mut peers = lock(&inner.peers);
                    let p = peers.entry(peer_id).or_default();
                    p.connections = 0;
                    p.last_used.is_none_or(|t| t.elapsed() >= inner.cfg.idle_connection_timeout)
                };
                lock(&inner.pool).remove(&peer_id);
                if matches!(cause, Some(libp2p::swarm::ConnectionError::IO(_))) && !idle {
                    tracing::debug!(%peer_id, cause = ?cause, "connection broke");
                    inner.connection_failed(peer_id);
                }
            } else if num_established == 0 {
                if matches!(cause, Some(libp2p::swarm::ConnectionError::IO(_))) && inner.is_live_storage(&peer_id) {
                    // the peer stopped counting this node (mesh: a view is its connections)
                    inner.index_forget_all("the connection to a storage peer broke");
                }
                let why = cause.map(|c| c.to_string()).unwrap_or_else(|| "closed".into());
                peer_left(inner, peer_id, &why);
            } else {
                lock(&inner.peers).entry(peer_id).or_default().connections = num_established as usize;
            }
        }
        SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received { peer_id, info, .. })) => {
            // Inbound connections come from ephemeral ports: use the listen addresses the peer reports.
            if let Some(kad) = swarm.behaviour_mut().kad.as_mut() {
                for a in info.listen_addrs {
                    kad.add_address(&peer_id, a);
                }
            }
            // Learn the rest of the cluster from the new peer right away.
            kad_bootstrap(swarm);
        }
        SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::RoutingUpdated { peer, addresses, .. }))
            if peer != inner.peer_id && !swarm.is_connected(&peer) && inner.cfg.membership == Membership::Mesh =>
        {
            let opts = DialOpts::peer_id(peer).addresses(addresses.into_vec()).condition(PeerCondition::DisconnectedAndNotDialing).build();
            let _ = swarm.dial(opts);
        }
        SwarmEvent::Behaviour(BehaviourEvent::Ping(ping::Event { connection, result: Ok(_), .. })) => pings.succeeded(connection),
        SwarmEvent::Behaviour(BehaviourEvent::Ping(ping::Event { peer, connection, result: Err(e) })) => match pings.failed(connection) {
            PingVerdict::Keep => tracing::debug!(%peer, error = %e, "ping failed"),
            PingVerdict::Drop { failed_in_a_row } if inner.cfg.membership == Membership::Swim => {
                // SWIM decides who is dead; a connection whose pings fail is closed and its peer probed next.
                tracing::debug!(%peer, error = %e, failed_in_a_row, "pings failed: closing the connection");
                let _ = swarm.disconnect_peer_id(peer);
                inner.to_swim(SwimInput::ConnectionFailed(peer));
            }
            PingVerdict::Drop { failed_in_a_row } => {
                tracing::warn!(%peer, error = %e, failed_in_a_row, "pings failed: dropping the peer");
                if inner.is_live_storage(&peer) {
                    inner.index_forget_all("pings to a storage peer failed");
                }
                peer_left(inner, peer, "ping failures");
                let _ = swarm.disconnect_peer_id(peer);
            }
        },
        SwarmEvent::OutgoingConnectionError { peer_id, error, .. } => {
            tracing::debug!(?peer_id, %error, "dial failed");
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Multiaddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_prologue_is_a_function_of_the_whole_key_and_never_the_key_itself() {
        let k = |b: u8| PreSharedKey::new([b; 32]);
        let mut almost = [7u8; 32];
        almost[31] = 8;
        assert_eq!(cluster_prologue(&k(7)), cluster_prologue(&k(7)));
        assert_ne!(cluster_prologue(&k(7)), cluster_prologue(&PreSharedKey::new(almost)));
        assert_eq!(cluster_prologue(&k(7)).len(), 32);
        assert!(!cluster_prologue(&k(7)).windows(8).any(|w| w == [7u8; 8]), "the prologue must not carry key bytes");
    }

    #[test]
    fn listen_addresses_need_an_ip_and_a_tcp_port() {
        assert!(check_listen_addr(&a("/ip4/0.0.0.0/tcp/0")).is_ok());
        assert!(check_listen_addr(&a("/ip6/::/tcp/7710")).is_ok());
        let e = check_listen_addr(&a("/dns4/localhost/tcp/7710")).unwrap_err().to_string();
        assert!(e.contains("/dns4/localhost/tcp/7710") && e.contains("/ip4/0.0.0.0/tcp/7710"), "{e}");
        assert!(check_listen_addr(&a("/ip4/0.0.0.0/udp/7710")).is_err());
    }
}
