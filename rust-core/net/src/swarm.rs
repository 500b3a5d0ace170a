//! The libp2p swarm: transport (TCP → pnet → noise → yamux), behaviours
//! (identify, ping, Kademlia in server mode, raw streams), and the task that
//! drives it and turns its events into membership changes.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use libp2p::core::muxing::StreamMuxerBox;
use libp2p::core::transport::Boxed;
use libp2p::core::upgrade;
use libp2p::identity::Keypair;
use libp2p::kad;
use libp2p::pnet::{PnetConfig, PreSharedKey};
use libp2p::swarm::dial_opts::{DialOpts, PeerCondition};
use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
use libp2p::{identify, noise, ping, tcp, yamux, PeerId, Swarm, Transport as _};
use tokio::sync::mpsc;

use fragstate_core::error::{Error, Result};

use crate::config::{IDENTIFY_PROTOCOL, KAD_PROTOCOL, NetConfig};
use crate::membership::{exchange_hello, peer_left};
use crate::state::{lock, Cmd, Inner};

#[derive(NetworkBehaviour)]
pub(crate) struct Behaviour {
    identify: identify::Behaviour,
    ping: ping::Behaviour,
    kad: kad::Behaviour<kad::store::MemoryStore>,
    stream: libp2p_stream::Behaviour,
}

/// The swarm of a node: its transport and behaviours, listening on
/// `cfg.listen`, and the control handle of its raw-stream behaviour.
pub(crate) fn build_swarm(cfg: &NetConfig) -> Result<(Swarm<Behaviour>, libp2p_stream::Control)> {
    let peer_id = cfg.identity.public().to_peer_id();
    let transport = build_transport(&cfg.identity, cfg.cluster_key, Duration::from_secs(10))?;
    let mut kad_cfg = kad::Config::new(KAD_PROTOCOL);
    kad_cfg.set_query_timeout(Duration::from_secs(10));
    let mut kademlia = kad::Behaviour::with_config(peer_id, kad::store::MemoryStore::new(peer_id), kad_cfg);
    // In automatic mode a node without a confirmed external address stays a client and is never added to routing tables.
    kademlia.set_mode(Some(kad::Mode::Server));
    let stream = libp2p_stream::Behaviour::new();
    let control = stream.new_control();
    let behaviour = Behaviour {
        identify: identify::Behaviour::new(
            identify::Config::new(IDENTIFY_PROTOCOL.to_string(), cfg.identity.public())
                .with_agent_version(format!("fragstate/{}", env!("CARGO_PKG_VERSION"))),
        ),
        ping: ping::Behaviour::new(ping::Config::new().with_interval(cfg.ping_interval).with_timeout(cfg.ping_timeout)),
        kad: kademlia,
        stream,
    };
    let swarm_cfg = libp2p::swarm::Config::with_tokio_executor()
        .with_idle_connection_timeout(cfg.idle_connection_timeout)
        .with_substream_upgrade_protocol_override(upgrade::Version::V1Lazy);
    let mut swarm = Swarm::new(transport, behaviour, peer_id, swarm_cfg);
    for addr in &cfg.listen {
        swarm.listen_on(addr.clone()).map_err(|e| Error::invalid("listen address", addr, format!("a listenable TCP multiaddr ({e})")))?;
    }
    Ok((swarm, control))
}

pub(crate) fn build_transport(key: &Keypair, psk: Option<PreSharedKey>, timeout: Duration) -> Result<Boxed<(PeerId, StreamMuxerBox)>> {
    let noise = noise::Config::new(key).map_err(|e| Error::format("noise configuration", e.to_string()))?;
    let tcp = tcp::tokio::Transport::new(tcp::Config::default().nodelay(true));
    let yamux = yamux::Config::default();
    Ok(match psk {
        Some(psk) => tcp
            .and_then(move |socket, _| PnetConfig::new(psk).handshake(socket))
            .upgrade(upgrade::Version::V1Lazy)
            .authenticate(noise)
            .multiplex(yamux)
            .timeout(timeout)
            .boxed(),
        None => tcp.upgrade(upgrade::Version::V1Lazy).authenticate(noise).multiplex(yamux).timeout(timeout).boxed(),
    })
}

pub(crate) async fn swarm_task(inner: Arc<Inner>, mut swarm: Swarm<Behaviour>, mut cmds: mpsc::UnboundedReceiver<Cmd>) {
    let mut shutdown = inner.shutdown.subscribe();
    for addr in &inner.cfg.bootstrap {
        if let Err(e) = swarm.dial(addr.clone()) {
            tracing::warn!(%addr, error = %e, "cannot dial bootstrap address");
        }
    }
    let mut tick = tokio::time::interval(Duration::from_secs(3));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            Some(cmd) = cmds.recv() => match cmd {
                Cmd::Disconnect(peer) => {
                    let _ = swarm.disconnect_peer_id(peer);
                }
            },
            _ = tick.tick() => {
                // Find peers that joined elsewhere; redial the bootstrap nodes when alone.
                let connected = swarm.connected_peers().count();
                if connected == 0 {
                    for addr in &inner.cfg.bootstrap {
                        let _ = swarm.dial(addr.clone());
                    }
                } else {
                    let _ = swarm.behaviour_mut().kad.bootstrap();
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
            ev = swarm.select_next_some() => handle_event(&inner, &mut swarm, ev),
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

pub(crate) fn handle_event(inner: &Arc<Inner>, swarm: &mut Swarm<Behaviour>, ev: SwarmEvent<BehaviourEvent>) {
    match ev {
        SwarmEvent::NewListenAddr { address, .. } => {
            tracing::info!(%address, peer = %inner.peer_id, "listening");
            lock(&inner.listen_addrs).push(address);
        }
        SwarmEvent::ConnectionEstablished { peer_id, endpoint, num_established, .. } => {
            lock(&inner.peers).entry(peer_id).or_default().connections = num_established.get() as usize;
            if endpoint.is_dialer() {
                swarm.behaviour_mut().kad.add_address(&peer_id, endpoint.get_remote_address().clone());
            }
            tracing::debug!(%peer_id, "connection established");
            let inner = inner.clone();
            tokio::spawn(async move { exchange_hello(&inner, peer_id, true).await });
        }
        SwarmEvent::ConnectionClosed { peer_id, num_established, cause, .. } => {
            lock(&inner.peers).entry(peer_id).or_default().connections_closed += 1;
            if num_established == 0 {
                let why = cause.map(|c| c.to_string()).unwrap_or_else(|| "closed".into());
                peer_left(inner, peer_id, &why);
            } else {
                lock(&inner.peers).entry(peer_id).or_default().connections = num_established as usize;
            }
        }
        SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received { peer_id, info, .. })) => {
            // Inbound connections come from ephemeral ports: use the listen addresses the peer reports.
            for a in info.listen_addrs {
                swarm.behaviour_mut().kad.add_address(&peer_id, a);
            }
            // Learn the rest of the cluster from the new peer right away.
            let _ = swarm.behaviour_mut().kad.bootstrap();
        }
        SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::RoutingUpdated { peer, addresses, .. })) => {
            if peer != inner.peer_id && !swarm.is_connected(&peer) {
                let opts = DialOpts::peer_id(peer).addresses(addresses.into_vec()).condition(PeerCondition::DisconnectedAndNotDialing).build();
                let _ = swarm.dial(opts);
            }
        }
        SwarmEvent::Behaviour(BehaviourEvent::Ping(ping::Event { peer, result: Err(e), .. })) => {
            tracing::warn!(%peer, error = %e, "ping failed: dropping the peer");
            peer_left(inner, peer, "ping failure");
            let _ = swarm.disconnect_peer_id(peer);
        }
        SwarmEvent::OutgoingConnectionError { peer_id, error, .. } => {
            tracing::debug!(?peer_id, %error, "dial failed");
        }
        SwarmEvent::IncomingConnectionError { send_back_addr, error, .. } => {
            tracing::warn!(from = %send_back_addr, %error, "refused an incoming connection (wrong or missing cluster key?)");
        }
        _ => {}
    }
}
