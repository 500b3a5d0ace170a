//! Per-peer bounds of a storage node, over real libp2p on loopback: one
//! writer cannot hold more than its share of a node's uploads, a peer that
//! stops reading loses its stream at the write timeout, half-open
//! connections beyond the pending limit are closed at once, and one address
//! gets only its share of them.

use std::sync::Arc;
use std::time::Duration;

use fragstate_client::transport::Transport;
use fragstate_core::format::FragmentHeader;
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::Error;
use fragstate_net::{NetConfig, NetNode, Role};
use fragstate_store::FragmentStore;
use libp2p::identity::Keypair;

fn header(i: u128) -> FragmentHeader {
    FragmentHeader {
        path: format!("bound/{i}"),
        write_id: i,
        index: 0,
        params: CodingParams::new(4, 2, 4096, Compression::None).unwrap(),
        created_unix_ms: 1,
    }
}

/// A storage node over `store` with this request timeout, and a client node joined to it.
async fn storage_and_client(store: FragmentStore, request_timeout: Option<Duration>) -> (NetNode, NetNode) {
    crate::init_logs();
    let mut storage = NetConfig::new(Keypair::generate_ed25519(), Role::Storage, None);
    storage.store = Some(Arc::new(store));
    if let Some(t) = request_timeout {
        storage.request_timeout = t;
    }
    let storage = NetNode::start(storage).await.unwrap();
    let mut client = NetConfig::new(Keypair::generate_ed25519(), Role::Client, None);
    client.bootstrap = storage.listen_addrs();
    let client = NetNode::start(client).await.unwrap();
    client.wait_for_storage_nodes(1, Duration::from_secs(20)).await.unwrap();
    (storage, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_writer_gets_at_most_its_share_of_a_nodes_uploads() {
    let _alone = crate::FLOODS_APART.write().await;
    let (storage, writer) = storage_and_client(FragmentStore::in_memory("storage", u64::MAX), None).await;

    let target = storage.id().clone();
    let mut open = Vec::new();
    let mut i = 0;
    let refused = loop {
        match writer.open_fragment(&target, header(i)).await {
            Ok(sink) => open.push(sink),
            Err(e) => break e,
        }
        i += 1;
        assert!(i <= 1000, "no bound on uploads from one peer");
    };
    assert_eq!(open.len(), 64, "uploads accepted before the bound");
    assert!(matches!(refused, Error::NodeUnavailable { .. }) && refused.is_node_fault(), "{refused}");
    assert!(refused.to_string().contains("64 uploads from this writer"), "{refused}");
    // Counted once per attempt: the client's retry loop tries a refused request a few times.
    assert!(storage.stats().uploads_refused >= 1);

    // A finished upload gives its slot back.
    let mut first = open.remove(0);
    first.finish().await.unwrap();
    drop(first);
    let again = writer.open_fragment(&target, header(5000)).await;
    assert!(again.is_ok(), "{:?}", again.err());
    writer.shutdown().await;
    storage.shutdown().await;
}

/// A peer that asks for a cell and stops reading the answer holds the
/// server's stream (and its slot among the peer's streams) only until the
/// server's write times out: then the stream is closed mid-answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_stops_reading_loses_its_stream_at_the_write_timeout() {
    let _alone = crate::FLOODS_APART.write().await;
    use fragstate_core::format;
    use fragstate_net::wire::{self, GetCellReq, Kind};
    use futures::{AsyncReadExt, AsyncWriteExt};

    const CELL: usize = 8 << 20; // far beyond a stream's flow-control window
    let timeout = Duration::from_secs(2);
    let store = FragmentStore::in_memory("storage", u64::MAX);
    let big = FragmentHeader { params: CodingParams::new(1, 0, CELL as u64, Compression::None).unwrap(), ..header(1) };
    store.begin_fragment(&big).unwrap();
    let cell = bytes::Bytes::from(vec![7u8; CELL]);
    store.append_cell(&big.key(), 0, format::cell_checksum(&cell), cell).unwrap();
    store.finish_fragment(&big.key()).unwrap();
    let (storage, reader) = storage_and_client(store, Some(timeout)).await;
    let target = storage.id().clone();
    let peer: libp2p::PeerId = target.as_str().parse().unwrap();

    let req = wire::encode(&GetCellReq { path: big.path.clone(), write_id: big.write_id, index: 0, stripe: 0 });
    let mut head = [0u8; 5];
    let mut attempts = 0;
    // libp2p-stream drops a new stream while its one-slot accept queue is full: retried.
    let mut s = loop {
        attempts += 1;
        assert!(attempts <= 10, "the node never served the request");
        let mut s = reader.open_raw_stream(peer).await.unwrap();
        wire::write_frame(&mut s, Kind::GetCell, &req, &[]).await.unwrap();
        s.flush().await.unwrap();
        if s.read_exact(&mut head).await.is_ok() {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let announced = u32::from_le_bytes(head[..4].try_into().unwrap()) as usize;
    assert_eq!((head[4], announced), (Kind::CellData as u8, CELL + 16));
    // Stop reading for longer than the server's write timeout, then read what arrives.
    tokio::time::sleep(timeout + Duration::from_secs(1)).await;
    let mut rest = Vec::new();
    let end = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut rest)).await;
    assert!(end.is_ok(), "the stream was neither finished nor closed");
    assert!(rest.len() < announced, "the whole answer ({} bytes) arrived after the pause: the write never timed out", rest.len());
    // The peer is served again on a new stream.
    let stats = reader.remote_stats(&target).await;
    assert!(stats.is_ok(), "{:?}", stats.err());
    reader.shutdown().await;
    storage.shutdown().await;
}

/// `n` TCP connections to `port` on loopback that never start a handshake
/// (no key needed), the i-th from the source address `from(i)`.
async fn half_open(port: u16, n: usize, from: impl Fn(usize) -> std::net::Ipv4Addr) -> Vec<tokio::net::TcpStream> {
    let mut open = Vec::new();
    for i in 0..n {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind((from(i), 0).into()).unwrap();
        open.push(socket.connect(([127, 0, 0, 1], port).into()).await.unwrap());
    }
    // Let the node accept them all.
    tokio::time::sleep(Duration::from_secs(1)).await;
    open
}

/// How many of `open` the node still holds (not closed by it).
async fn held(open: &mut [tokio::net::TcpStream]) -> usize {
    use tokio::io::AsyncReadExt;
    let mut closed = 0;
    for s in open.iter_mut() {
        let mut b = [0u8; 64];
        // Closed by the node: EOF or a reset. Pending: nothing to read yet (the dialer speaks first).
        if let Ok(r) = tokio::time::timeout(Duration::from_millis(20), s.read(&mut b)).await {
            closed += matches!(r, Ok(0) | Err(_)) as usize;
        }
    }
    open.len() - closed
}

fn tcp_port(node: &NetNode) -> u16 {
    node.listen_addrs()
        .iter()
        .find_map(|a| a.iter().find_map(|p| if let libp2p::multiaddr::Protocol::Tcp(port) = p { Some(port) } else { None }))
        .expect("a TCP listen address")
}

/// Dialers that open TCP connections and never finish the handshake (no key
/// needed), each from its own address, hold at most `MAX_PENDING_INCOMING`
/// of them; the rest are closed at once, and established peers keep being served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_beyond_the_pending_limit_are_closed_at_once() {
    let _alone = crate::FLOODS_APART.write().await;
    use fragstate_net::MAX_PENDING_INCOMING;

    const DIALS: usize = 300;
    let (storage, reader) = storage_and_client(FragmentStore::in_memory("storage", u64::MAX), None).await;
    // 127.0.1.1, 127.0.1.2, …: every loopback address is this host's.
    let mut open = half_open(tcp_port(&storage), DIALS, |i| std::net::Ipv4Addr::from(0x7f00_0101 + i as u32)).await;
    let held = held(&mut open).await;
    assert!(held <= MAX_PENDING_INCOMING as usize, "{held} half-open connections held (limit {MAX_PENDING_INCOMING})");
    assert!(held >= MAX_PENDING_INCOMING as usize / 2, "only {held} held: the per-address limit should not bind here");
    // The established peer is served throughout.
    let stats = reader.remote_stats(storage.id()).await;
    assert!(stats.is_ok(), "{:?}", stats.err());
    drop(open);
    reader.shutdown().await;
    storage.shutdown().await;
}

/// One address that floods the node with half-open connections gets
/// `MAX_PENDING_INCOMING_PER_ADDRESS` of them, so a node from another
/// address still joins at once (with only the total limit, it waited for the
/// flood's handshakes to time out: 10 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_flooding_half_open_connections_does_not_keep_others_out() {
    let _alone = crate::FLOODS_APART.write().await;
    use fragstate_net::MAX_PENDING_INCOMING_PER_ADDRESS;

    let (storage, reader) = storage_and_client(FragmentStore::in_memory("storage", u64::MAX), None).await;
    let mut open = half_open(tcp_port(&storage), 300, |_| std::net::Ipv4Addr::new(127, 0, 0, 2)).await;
    let held = held(&mut open).await;
    assert!(held <= MAX_PENDING_INCOMING_PER_ADDRESS as usize, "{held} held from one address (limit {MAX_PENDING_INCOMING_PER_ADDRESS})");
    // A new node (from 127.0.0.1) joins while the flood's connections are still open.
    let mut cfg = NetConfig::new(Keypair::generate_ed25519(), Role::Client, None);
    cfg.bootstrap = storage.listen_addrs();
    let late = NetNode::start(cfg).await.unwrap();
    let t = std::time::Instant::now();
    late.wait_for_storage_nodes(1, Duration::from_secs(5)).await.expect("a new node joins beside the flood");
    println!("joined {:.2} s after the flood from one address", t.elapsed().as_secs_f64());
    drop(open);
    late.shutdown().await;
    reader.shutdown().await;
    storage.shutdown().await;
}
