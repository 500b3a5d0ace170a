//! What the one-shot network commands share: a runtime, a client node that
//! joins the cluster, a [`Client`] over it, progress lines.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fragstate_client::transport::Transport;
use fragstate_client::Client;
use fragstate_core::ids::NodeId;
use fragstate_core::{Error, Result};
use fragstate_net::wire::{self, Kind};
use fragstate_net::{Membership, NetConfig, NetNode, Role};
use libp2p::identity::Keypair;

use crate::args::{ClusterArgs, CodingArgs};

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| Error::io("start runtime", e))
}

/// Joins the cluster as a client node and waits for `need` storage nodes,
/// then until no further node joins for half a second.
pub(crate) async fn connect(args: &ClusterArgs, need: usize) -> Result<NetNode> {
    let mut cfg = NetConfig::new(Keypair::generate_ed25519(), Role::Client, args.key.load()?);
    cfg.set_membership(args.membership.mode);
    // Under the mesh the storage nodes hold the connection to the client; SWIM members
    // probe it over connections of their own, so it must be reachable.
    cfg.listen = match args.membership.mode {
        Membership::Mesh => Vec::new(),
        Membership::Swim => vec!["/ip4/0.0.0.0/tcp/0".parse().expect("valid multiaddr")],
    };
    cfg.bootstrap = args.bootstrap.clone();
    cfg.request_timeout = args.request_timeout;
    let node = NetNode::start(cfg).await?;
    node.wait_for_storage_nodes(need, args.wait_timeout).await?;
    if args.wait_nodes.is_some() {
        // The caller said how many to expect: no need to wait for stragglers.
        return Ok(node);
    }
    let mut n = node.live_nodes().len();
    let mut stable_since = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(3);
    while stable_since.elapsed() < Duration::from_millis(500) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = node.live_nodes().len();
        if now != n {
            n = now;
            stable_since = Instant::now();
        }
    }
    tracing::info!(storage_nodes = n, "joined the cluster");
    Ok(node)
}

pub(crate) fn client(node: &NetNode, args: &ClusterArgs, coding: Option<&CodingArgs>) -> Result<Client> {
    let mut cfg = node.client_config(false);
    cfg.request_timeout = args.request_timeout;
    if let Some(c) = coding {
        cfg.params = c.params()?;
    }
    Client::new(Arc::new(node.clone()), cfg)
}

pub(crate) struct Progress {
    what: &'static str,
    total: Option<u64>,
    started: Instant,
    last: Instant,
}

impl Progress {
    pub(crate) fn new(what: &'static str, total: Option<u64>) -> Self {
        Progress { what, total, started: Instant::now(), last: Instant::now() }
    }

    pub(crate) fn update(&mut self, done: u64) {
        if self.last.elapsed() >= Duration::from_secs(1) {
            self.last = Instant::now();
            let rate = done as f64 / self.started.elapsed().as_secs_f64() / 1e6;
            match self.total {
                Some(t) => eprintln!("{}: {} of {} MB, {rate:.0} MB/s", self.what, done / 1_000_000, t / 1_000_000),
                None => eprintln!("{}: {} MB, {rate:.0} MB/s", self.what, done / 1_000_000),
            }
        }
    }

    pub(crate) fn done(&self, bytes: u64) -> String {
        let s = self.started.elapsed().as_secs_f64();
        format!("{bytes} bytes in {s:.3} s ({:.1} MB/s)", bytes as f64 / s.max(1e-9) / 1e6)
    }
}

/// Reads an object in 4 MiB calls (as a consumer would, without keeping it) and compares it.
pub(crate) async fn read_and_compare(r: &mut fragstate_client::reader::ObjectReader, data: &[u8], what: &str) -> Result<()> {
    let mut buf = vec![0u8; 4 << 20];
    let mut at = 0usize;
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        if at + n > data.len() || buf[..n] != data[at..at + n] {
            return Err(Error::format(what, format!("read back differs at byte {at}")));
        }
        at += n;
    }
    if at != data.len() {
        return Err(Error::format(what, format!("read back {at} of {} bytes", data.len())));
    }
    Ok(())
}

/// The libp2p peer id of a node of the network (its id is the base58 peer id).
pub(crate) fn peer_id(node: &NodeId) -> Result<libp2p::PeerId> {
    node.as_str().parse().map_err(|_| Error::format("peer id", node.to_string()))
}

/// A raw stream that the peer is known to serve: a `Stat` request is answered
/// first (libp2p-stream drops inbound streams that arrive in a burst).
pub(crate) async fn served_stream(node: &NetNode, peer: libp2p::PeerId) -> Result<libp2p::Stream> {
    let mut last = None;
    for attempt in 0..5u32 {
        let mut s = node.open_raw_stream(peer).await?;
        let ok = async {
            wire::write_frame(&mut s, Kind::Stat, &[], &[]).await?;
            match wire::read_frame(&mut s, wire::Expect::response(Kind::Stat)).await? {
                Some(f) if f.kind == Kind::Stats => Ok(()),
                other => Err(Error::format("stat reply", format!("unexpected {:?}", other.map(|f| f.kind)))),
            }
        }
        .await;
        match ok {
            Ok(()) => return Ok(s),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
    }
    Err(last.expect("at least one attempt"))
}
