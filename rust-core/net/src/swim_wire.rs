//! The messages of the membership protocol `/fragstate/swim/1.0.0`
//! (`Membership::Swim`, issue 13): SWIM's [`Message`]s carrying each
//! member's description ([`NodeMeta`]), one per stream behind its length
//! (u32, little-endian), and their decoding from an untrusted peer with every
//! size bounded, so that a hostile or broken peer costs at most
//! [`MAX_SWIM_MESSAGE`] bytes and gets a protocol error naming what it broke.

use fragstate_core::error::{Error, Result};
use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use fragstate_core::ids::NodeId;
use fragstate_core::swim::{Message, Update};
use libp2p::{Multiaddr, PeerId, StreamProtocol};
use serde::{Deserialize, Serialize};

use crate::wire::{self, Role};

/// The stream protocol membership messages travel on, one message per stream.
pub const SWIM_PROTOCOL: StreamProtocol = StreamProtocol::new("/fragstate/swim/1.0.0");
/// Encoded bytes of one message at most: a full member list (`Sync`) of
/// [`MAX_SYNC_MEMBERS`] members at about 200 bytes each fits.
pub const MAX_SWIM_MESSAGE: usize = 4 << 20;
/// Piggybacked updates per probe, ack or gossip message at most (SWIM sends
/// up to `max_piggyback`, 32 by default, plus the one that tells a member
/// believed dead so).
pub const MAX_UPDATES_PER_MESSAGE: usize = 64;
/// Members in one full list at most.
pub const MAX_SYNC_MEMBERS: usize = 16_384;
/// Bytes of a failure-domain label at most.
pub const MAX_DOMAIN: usize = 256;
/// Listen addresses a member may announce, and bytes of each, at most.
pub const MAX_ADDRS: usize = 8;
pub const MAX_ADDR: usize = 256;

/// What a node says about itself in membership messages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeMeta {
    /// [`wire::PROTOCOL_VERSION`] of its build: a cluster runs one.
    pub protocol_version: u32,
    pub role: Role,
    /// Its failure domain (one fragment of an object per domain).
    pub domain: String,
    /// What placement weighs it by.
    pub free_bytes: u64,
    /// Where it listens (multiaddrs).
    pub addrs: Vec<String>,
    /// When its process started (Unix ms), also its first incarnation: a
    /// member whose start changed restarted, perhaps before anyone noticed
    /// it was gone, and missed what happened meanwhile.
    pub started_ms: u64,
}

/// A membership message as it travels.
pub type SwimMessage = Message<NodeMeta>;

pub fn encode(m: &SwimMessage) -> Vec<u8> {
    wire::encode(m)
}

/// A message from a peer, every bound of this module checked.
pub fn decode(b: &[u8]) -> Result<SwimMessage> {
    if b.len() > MAX_SWIM_MESSAGE {
        return Err(violation(format!("{} bytes exceed the limit of {MAX_SWIM_MESSAGE} bytes", b.len())));
    }
    let m: SwimMessage = wire::decode("swim message", b)?;
    let (updates, max, what) = match &m {
        Message::Ping { updates, .. } | Message::Ack { updates, .. } | Message::Gossip { updates } => (updates, MAX_UPDATES_PER_MESSAGE, "updates"),
        Message::PingReq { target, updates, .. } => {
            check_id(target)?;
            (updates, MAX_UPDATES_PER_MESSAGE, "updates")
        }
        Message::Sync { members, .. } => (members, MAX_SYNC_MEMBERS, "members"),
    };
    if updates.len() > max {
        return Err(violation(format!("{} {what} exceed the limit of {max}", updates.len())));
    }
    updates.iter().try_for_each(check_update)?;
    Ok(m)
}

/// Writes `m` behind its length and closes the stream; the bytes written.
pub async fn write_message<W: AsyncWrite + Unpin>(w: &mut W, m: &SwimMessage) -> Result<usize> {
    let body = encode(m);
    let io = |e| Error::io("send a membership message", e);
    w.write_all(&(body.len() as u32).to_le_bytes()).await.map_err(io)?;
    w.write_all(&body).await.map_err(io)?;
    w.close().await.map_err(io)?;
    Ok(4 + body.len())
}

/// Reads one message written by [`write_message`]; a length beyond
/// [`MAX_SWIM_MESSAGE`] is refused before anything is allocated.
pub async fn read_message<R: AsyncRead + Unpin>(r: &mut R) -> Result<SwimMessage> {
    let io = |e| Error::io("receive a membership message", e);
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await.map_err(io)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_SWIM_MESSAGE {
        return Err(violation(format!("a length of {len} bytes exceeds the limit of {MAX_SWIM_MESSAGE} bytes")));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await.map_err(io)?;
    decode(&body)
}

fn check_update(u: &Update<NodeMeta>) -> Result<()> {
    check_id(&u.node)?;
    let m = &u.meta;
    if m.domain.len() > MAX_DOMAIN {
        return Err(violation(format!("failure domain of {} bytes exceeds the limit of {MAX_DOMAIN}", m.domain.len())));
    }
    if m.addrs.len() > MAX_ADDRS {
        return Err(violation(format!("{} listen addresses exceed the limit of {MAX_ADDRS}", m.addrs.len())));
    }
    for a in &m.addrs {
        if a.len() > MAX_ADDR {
            return Err(violation(format!("a listen address of {} bytes exceeds the limit of {MAX_ADDR}", a.len())));
        }
        a.parse::<Multiaddr>().map_err(|e| violation(format!("listen address {a:?} is not a multiaddr: {e}")))?;
    }
    Ok(())
}

/// Node ids on the network are base58 peer ids.
fn check_id(id: &NodeId) -> Result<()> {
    let s = id.as_str();
    if s.len() > 128 {
        return Err(violation(format!("a node id of {} bytes is not a peer id", s.len())));
    }
    s.parse::<PeerId>().map(|_| ()).map_err(|e| violation(format!("node id {s:?} is not a peer id: {e}")))
}

fn violation(reason: String) -> Error {
    Error::protocol("swim message", reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstate_core::swim::Liveness;

    fn peer() -> NodeId {
        NodeId::from(libp2p::identity::Keypair::generate_ed25519().public().to_peer_id().to_base58())
    }

    fn meta() -> NodeMeta {
        NodeMeta { protocol_version: wire::PROTOCOL_VERSION, role: Role::Storage, domain: "rack-1".into(), free_bytes: 1 << 40, addrs: vec!["/ip4/10.0.0.1/tcp/7710".into()], started_ms: 1_700_000_000_000 }
    }

    fn update(meta: NodeMeta) -> Update<NodeMeta> {
        Update { node: peer(), incarnation: 7, liveness: Liveness::Alive, meta }
    }

    fn rejected(m: &SwimMessage) -> String {
        decode(&encode(m)).unwrap_err().to_string()
    }

    #[test]
    fn every_message_kind_round_trips() {
        let u = vec![update(meta()), Update { liveness: Liveness::Suspect, ..update(meta()) }];
        for m in [
            Message::Ping { seq: 1, updates: u.clone() },
            Message::Ack { seq: 1, updates: vec![] },
            Message::PingReq { seq: 2, target: peer(), updates: u.clone() },
            Message::Gossip { updates: u.clone() },
            Message::Sync { members: u, reply: true },
        ] {
            assert_eq!(decode(&encode(&m)).unwrap(), m);
        }
    }

    #[test]
    fn each_bound_is_refused_with_a_message_that_names_it() {
        let many = Message::Gossip { updates: (0..MAX_UPDATES_PER_MESSAGE + 1).map(|_| update(meta())).collect() };
        assert!(rejected(&many).contains("65 updates exceed the limit of 64"), "{}", rejected(&many));
        let domain = Message::Gossip { updates: vec![update(NodeMeta { domain: "d".repeat(MAX_DOMAIN + 1), ..meta() })] };
        assert!(rejected(&domain).contains("failure domain of 257 bytes"));
        let addrs = Message::Gossip { updates: vec![update(NodeMeta { addrs: vec!["/ip4/1.2.3.4/tcp/1".into(); MAX_ADDRS + 1], ..meta() })] };
        assert!(rejected(&addrs).contains("9 listen addresses"));
        let bad_addr = Message::Gossip { updates: vec![update(NodeMeta { addrs: vec!["not an address".into()], ..meta() })] };
        assert!(rejected(&bad_addr).contains("\"not an address\" is not a multiaddr"));
        let bad_id = Message::PingReq { seq: 1, target: NodeId::from("mesh-3"), updates: vec![] };
        assert!(rejected(&bad_id).contains("node id \"mesh-3\" is not a peer id"));
        let too_big = vec![0u8; MAX_SWIM_MESSAGE + 1];
        assert!(decode(&too_big).unwrap_err().to_string().contains("exceed the limit of 4194304 bytes"));
    }

    #[test]
    fn framed_messages_round_trip_and_a_huge_length_is_refused_unread() {
        let m = Message::Gossip { updates: vec![update(meta())] };
        let mut buf = futures::io::Cursor::new(Vec::new());
        futures::executor::block_on(write_message(&mut buf, &m)).unwrap();
        let mut read = futures::io::Cursor::new(buf.into_inner());
        assert_eq!(futures::executor::block_on(read_message(&mut read)).unwrap(), m);
        let mut huge = futures::io::Cursor::new(u32::MAX.to_le_bytes().to_vec());
        let e = futures::executor::block_on(read_message(&mut huge)).unwrap_err();
        assert!(wire::is_protocol_violation(&e) && e.to_string().contains("4294967295 bytes exceeds"), "{e}");
        let mut cut = futures::io::Cursor::new(vec![10, 0, 0, 0, 1, 2]);
        assert!(!wire::is_protocol_violation(&futures::executor::block_on(read_message(&mut cut)).unwrap_err()));
    }

    #[test]
    fn garbage_and_truncated_messages_are_errors() {
        let m = Message::Sync { members: vec![update(meta())], reply: false };
        let bytes = encode(&m);
        for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(decode(&[0xff; 64]).is_err());
    }
}
