//! `fragstate debug-attack` (hidden, for the adversarial tests of issue 12):
//! a hostile peer against one node of a running cluster (or, lying about
//! its capacity, against placement) for a while, then a line of what it
//! achieved (`ATTACK mode=… key=value …`). Every attack but `keyless` holds
//! the cluster key — the worst a member can do; `keyless` is anyone who
//! reaches the port. The tests run honest traffic beside it and check that
//! it keeps working (cli/tests/adversarial.rs).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use fragstate_client::transport::Transport;
use fragstate_core::format::Manifest;
use fragstate_core::ids::{FragmentKey, NodeId};
use fragstate_core::{Error, Result};
use fragstate_net::wire::{self, GetCellReq, Kind};
use fragstate_net::{NetConfig, NetNode, Role};
use fragstate_store::FragmentStore;
use futures::AsyncWriteExt;
use libp2p::identity::Keypair;

use crate::args::ClusterArgs;
use crate::cluster::{client, connect, peer_id, runtime};

#[derive(Args)]
pub(crate) struct AttackArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    #[arg(long, value_enum)]
    attack: Attack,
    /// How long the attack lasts (counted from the start, joining the cluster included).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Peer id of the node attacked (default: the first live storage node).
    #[arg(long)]
    target: Option<String>,
    /// HOST:PORT of the node attacked, for `keyless`.
    #[arg(long)]
    tcp: Option<String>,
    /// Local address `keyless` dials from (default: the system's choice).
    #[arg(long)]
    from: Option<IpAddr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Attack {
    /// Requests 1 MiB cells on as many streams as the target grants and never reads the answers.
    NeverRead,
    /// Opens streams as fast as the target grants them and sends nothing on them.
    StreamFlood,
    /// Sends oversize, unknown-kind and mistyped frames, one per stream, over and over.
    BadFrames,
    /// Stores on every node a copy of every manifest it finds with the largest write version.
    ForgedManifests,
    /// Opens TCP connections to the target's address without the key (no handshake) and holds them.
    Keyless,
    /// Joins as a storage node claiming unlimited free space (in its own failure domain),
    /// acknowledges every fragment uploaded to it and then drops it, keeping the manifest.
    CapacityLiar,
}

/// Runs the attack against `target` (a peer id; default: the first live storage node) for `seconds`.
pub(crate) fn debug_attack(a: AttackArgs) -> Result<()> {
    let (args, attack, target) = (&a.cluster, a.attack, &a.target);
    let until = Instant::now() + Duration::from_secs(a.seconds);
    runtime()?.block_on(async {
        match attack {
            Attack::Keyless => {
                let addr = a.tcp.as_deref().ok_or_else(|| Error::invalid("--tcp", "none", "HOST:PORT of the target, for keyless"))?;
                return keyless(addr, a.from, until).await;
            }
            Attack::CapacityLiar => return capacity_liar(args, until).await,
            _ => {}
        }
        let node = connect(args, args.wait_nodes.unwrap_or(1)).await?;
        let victim = match &target {
            Some(t) => {
                let id = NodeId::from(t.as_str());
                if !node.wait_for_live_node(&id, args.wait_timeout).await {
                    return Err(Error::invalid("--target", t, format!("a storage node live within {} s", args.wait_timeout.as_secs())));
                }
                id
            }
            None => node.live_nodes().first().ok_or_else(|| Error::invalid("storage nodes", 0, "≥ 1"))?.id.clone(),
        };
        let peer = peer_id(&victim)?;
        let line = match attack {
            Attack::NeverRead => never_read(&node, args, &victim, peer, until).await?,
            Attack::StreamFlood => stream_flood(&node, peer, until).await,
            Attack::BadFrames => bad_frames(&node, peer, until).await,
            Attack::ForgedManifests => forged_manifests(&node, until).await?,
            Attack::Keyless | Attack::CapacityLiar => unreachable!("handled above"),
        };
        println!("ATTACK mode={attack:?} target={victim} {line}");
        node.shutdown().await;
        Ok(())
    })
}

/// A new stream to `peer`, or `None` when the victim does not grant one within a second.
async fn open_stream(node: &NetNode, peer: libp2p::PeerId) -> Option<libp2p::Stream> {
    tokio::time::timeout(Duration::from_secs(1), node.open_raw_stream(peer)).await.ok()?.ok()
}

/// Writes 4 MiB objects of 1 MiB cells until the victim holds a fragment of one (placement picks k + m of the live nodes), then asks the victim for its cell
/// on stream after stream and never reads: each answer stalls in the
/// stream's flow-control window and holds one of the victim's stream slots
/// until its write timeout.
async fn never_read(node: &NetNode, args: &ClusterArgs, victim: &NodeId, peer: libp2p::PeerId, until: Instant) -> Result<String> {
    let c = client(node, args, None)?;
    // k + m holders of more live nodes: write until the victim holds a fragment.
    let mut held_by_victim = None;
    for attempt in 0..20 {
        let path = format!("fragstate://attack/never-read-{}-{attempt}", std::process::id());
        let mut w = c.create(&path, true).await?;
        w.write(&vec![0x5au8; 4 << 20]).await?;
        w.close().await?;
        if let Some(m) = node.get_manifest(victim, &path).await? {
            if let Some(index) = m.holders.iter().position(|h| h == victim) {
                held_by_victim = Some((path, m, index));
                break;
            }
        }
    }
    let (path, m, index) = held_by_victim.ok_or_else(|| Error::invalid("victim", victim, "a holder of one of 20 objects written"))?;
    let request = wire::encode(&GetCellReq { path: path.clone(), write_id: m.write_id, index: index as u8, stripe: 0 });
    let (mut held, mut refused) = (Vec::new(), 0u64);
    while Instant::now() < until {
        match open_stream(node, peer).await {
            Some(mut s) => {
                if wire::write_frame(&mut s, Kind::GetCell, &request, &[]).await.is_ok() {
                    held.push(s);
                } else {
                    refused += 1;
                }
            }
            None => {
                refused += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    Ok(format!("streams_opened={} streams_refused={refused}", held.len()))
}

/// Opens streams without sending a byte on them, as fast as they are granted.
async fn stream_flood(node: &NetNode, peer: libp2p::PeerId, until: Instant) -> String {
    let (mut held, mut refused) = (Vec::new(), 0u64);
    while Instant::now() < until {
        match open_stream(node, peer).await {
            Some(s) => held.push(s),
            None => refused += 1,
        }
    }
    format!("streams_opened={} streams_refused={refused}", held.len())
}

/// One bad frame per stream, cycling through the kinds of bad; the victim
/// drops the connection on each, and the attacker dials again.
async fn bad_frames(node: &NetNode, peer: libp2p::PeerId, until: Instant) -> String {
    let frames: [Vec<u8>; 4] = [
        // Oversize: a List of nearly 4 GiB.
        [&(u32::MAX - 1).to_le_bytes()[..], &[Kind::List as u8], &[0u8; 64]].concat(),
        // Unknown kind.
        vec![3, 0, 0, 0, 0xee, 1, 2, 3],
        // Mistyped: an answer kind (CellData) sent as a request, with a 1 MiB body announced.
        [&(1u32 << 20).to_le_bytes()[..], &[Kind::CellData as u8]].concat(),
        // A Cell outside an upload.
        [&16u32.to_le_bytes()[..], &[Kind::Cell as u8], &[0u8; 16]].concat(),
    ];
    let (mut sent, mut failed) = (0u64, 0u64);
    while Instant::now() < until {
        let frame = &frames[sent as usize % frames.len()];
        match open_stream(node, peer).await {
            Some(mut s) => {
                let _ = s.write_all(frame).await;
                let _ = s.flush().await;
                sent += 1;
            }
            None => {
                failed += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    format!("frames_sent={sent} streams_failed={failed} connections_closed={}", node.connections_closed(&peer))
}

/// The forged copy of `m`: the largest write version and revision there
/// are, so every node prefers it over any honest copy.
fn forge(m: &Manifest) -> Manifest {
    let mut f = m.clone();
    f.created_unix_ms = u64::MAX;
    f.revision = u32::MAX;
    f.writer = "attacker".into();
    f
}

/// Lists every object, and stores a forged copy of each manifest (same
/// content, largest version) on every live node, in path order until `until`.
/// What this shows: a member can pin any path's version at the top
/// (SECURITY.md); honest writers then get a clear error on that path instead
/// of a wrapped counter.
async fn forged_manifests(node: &NetNode, until: Instant) -> Result<String> {
    let (mut forged, mut stored) = (0u64, 0u64);
    let nodes: Vec<NodeId> = node.live_nodes().into_iter().map(|n| n.id).collect();
    // In path order, whichever node answers first: the paths of one node's listing first
    // put an object that node does not hold behind all of them, past the time allowed
    // (the adversarial test's first object stayed honest in one run of CI).
    let mut paths = std::collections::BTreeSet::new();
    for n in &nodes {
        paths.extend(node.list(n, "").await.unwrap_or_default().into_iter().map(|s| s.path));
    }
    for path in &paths {
        if Instant::now() >= until {
            break;
        }
        // the newest copy (a repair's revision names the holders of now)
        let copies = futures::future::join_all(nodes.iter().map(|n| node.get_manifest(n, path))).await;
        let Some(m) = copies.into_iter().flatten().flatten().max_by_key(|m| m.version_key()) else {
            continue;
        };
        let f = Arc::new(forge(&m));
        forged += 1;
        let puts = futures::future::join_all(nodes.iter().map(|n| node.put_manifest(n, f.clone()))).await;
        stored += puts.iter().filter(|r| r.is_ok()).count() as u64;
    }
    tokio::time::sleep(until.saturating_duration_since(Instant::now())).await;
    Ok(format!("manifests_forged={forged} copies_stored={stored}"))
}

/// A storage node that claims `u64::MAX` free bytes, in a failure domain of
/// its own, and drops every fragment it holds of a committed object (its
/// manifest kept, so it still looks like a holder) until the end.
async fn capacity_liar(args: &ClusterArgs, until: Instant) -> Result<()> {
    let identity = Keypair::generate_ed25519();
    let me = NodeId::from(identity.public().to_peer_id().to_base58());
    let store = Arc::new(FragmentStore::in_memory(me.to_string(), u64::MAX));
    let mut cfg = NetConfig::new(identity, Role::Storage, args.key.load()?);
    cfg.set_membership(args.membership.mode);
    cfg.bootstrap = args.bootstrap.clone();
    cfg.domain = format!("liar-{}", std::process::id());
    cfg.store = Some(store.clone());
    let node = NetNode::start(cfg).await?;
    let (mut dropped, mut bytes) = (0u64, 0u64);
    while Instant::now() < until {
        for o in store.list("") {
            let Some(m) = store.get_manifest(&o.path) else { continue };
            let Some(index) = m.holders.iter().position(|h| h == &me) else { continue };
            let key = FragmentKey { path: Arc::from(o.path.as_str()), write_id: m.write_id, index: index as u8 };
            let st = store.drop_fragment(&key)?;
            dropped += st.fragments;
            bytes += st.bytes;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    node.shutdown().await;
    println!("ATTACK mode=CapacityLiar peer={me} advertised_free={} fragments_dropped={dropped} bytes_dropped={bytes}", u64::MAX);
    Ok(())
}

/// Connections to `addr` without libp2p (from the local address `from`):
/// each sends a few garbage bytes and is held open until the end.
async fn keyless(addr: &str, from: Option<IpAddr>, until: Instant) -> Result<()> {
    use tokio::io::AsyncWriteExt as _;
    let target: std::net::SocketAddr = addr.parse().map_err(|_| Error::invalid("--tcp", addr, "IP:PORT"))?;
    let dial = || async move {
        let socket = if target.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        if let Some(ip) = from {
            socket.bind((ip, 0).into())?;
        }
        socket.connect(target).await
    };
    let (mut held, mut refused) = (Vec::new(), 0u64);
    while Instant::now() < until {
        match tokio::time::timeout(Duration::from_secs(1), dial()).await {
            Ok(Ok(mut s)) => {
                let _ = s.write_all(b"\x13/multistream/1.0.0\nnot a fragstate peer\n").await;
                held.push(s);
            }
            _ => refused += 1,
        }
        if held.len() >= 4096 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // How many the target has closed by now (a read of 0 bytes or an error).
    let mut closed = 0;
    for s in &held {
        let mut b = [0u8; 256];
        loop {
            match s.try_read(&mut b) {
                Ok(0) => closed += 1,
                Ok(_) => continue,
                Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => closed += 1,
                Err(_) => {}
            }
            break;
        }
    }
    println!("ATTACK mode=Keyless target={addr} connections_opened={} connections_closed_by_target={closed} refused={refused}", held.len());
    Ok(())
}
