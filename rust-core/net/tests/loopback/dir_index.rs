//! Directory index requests between nodes over real libp2p on loopback: a
//! storage node keeps what `IndexUpdate`s tell it and answers `IndexRead`s
//! with its record — partial after a change, complete after a birth, and
//! incomplete when the reader does not rank it among the directory's
//! holders; bad requests are answered with errors, and a client node keeps
//! no index.

use std::sync::Arc;
use std::time::Duration;

use fragstate_client::transport::Transport;
use fragstate_core::dir_index::quorum::{IndexUpdate, Record};
use fragstate_core::dir_index::{self, Change};
use fragstate_core::placement::PlacementPolicy;
use fragstate_core::version::WriteVersion;
use fragstate_core::Error;
use fragstate_net::wire::{self, IndexReadReq, IndexUpdateReq, Kind, WireError};
use fragstate_net::{NetConfig, NetNode, Role};
use fragstate_store::FragmentStore;
use futures::AsyncWriteExt;
use libp2p::identity::Keypair;

const POLICY: PlacementPolicy = PlacementPolicy { allow_shared_domains: false };

async fn storage(domain: &str, bootstrap: Vec<libp2p::Multiaddr>) -> NetNode {
    let mut cfg = NetConfig::new(Keypair::generate_ed25519(), Role::Storage, None);
    cfg.store = Some(Arc::new(FragmentStore::in_memory(domain, u64::MAX)));
    cfg.domain = domain.into();
    cfg.bootstrap = bootstrap;
    NetNode::start(cfg).await.unwrap()
}

/// Two storage nodes in two failure domains and a client node joined to them.
async fn cluster() -> (NetNode, NetNode, NetNode) {
    crate::init_logs();
    let a = storage("rack-a", Vec::new()).await;
    let b = storage("rack-b", a.listen_addrs()).await;
    let mut cfg = NetConfig::new(Keypair::generate_ed25519(), Role::Client, None);
    cfg.bootstrap = a.listen_addrs();
    let c = NetNode::start(cfg).await.unwrap();
    for n in [&a, &b, &c] {
        n.wait_for_storage_nodes(2, Duration::from_secs(20)).await.unwrap();
    }
    (a, b, c)
}

fn add(name: &str) -> IndexUpdate {
    IndexUpdate::Apply { name: name.into(), change: Change::Add(WriteVersion { created_unix_ms: 1_000, write_id: 7 }) }
}

/// One raw request and its answer (retried on a new stream: libp2p-stream
/// drops a new stream while its one-slot accept queue is full).
async fn raw(from: &NetNode, to: &NetNode, kind: Kind, body: &[u8]) -> wire::Frame {
    let peer: libp2p::PeerId = to.id().as_str().parse().unwrap();
    for _ in 0..10 {
        let mut s = from.open_raw_stream(peer).await.unwrap();
        wire::write_frame(&mut s, kind, body, &[]).await.unwrap();
        s.flush().await.unwrap();
        if let Ok(Some(f)) = wire::read_frame(&mut s, wire::Expect::response(kind)).await {
            return f;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the node never answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storage_node_answers_the_records_its_updates_made() {
    let (a, b, c) = cluster().await;
    let view = c.live_nodes();
    assert_eq!(view.len(), 2);

    // a change alone: a partial record; the birth makes it complete
    let dir = "fragstate://t/job/chk-1/";
    assert_eq!(c.index_read(a.id(), dir, 2, POLICY).await.unwrap(), None, "no record yet");
    c.index_update(a.id(), dir, &add("_metadata")).await.unwrap();
    let r = c.index_read(a.id(), dir, 2, POLICY).await.unwrap().expect("a record");
    assert!(r.index.contains("_metadata") && !r.complete, "{r:?}");
    c.index_update(a.id(), dir, &IndexUpdate::Create).await.unwrap();
    let r = c.index_read(a.id(), dir, 2, POLICY).await.unwrap().expect("a record");
    assert!(r.index.contains("_metadata") && r.complete, "{r:?}");

    // at width 1 the reader ranks one holder: a directory the reader ranks b
    // first for is answered incomplete by a, and stays so
    let of = |d: &str| dir_index::holders(d, &view, 1, POLICY);
    // (directories other than `dir`, which has a record already)
    let dirs = || (0..100).map(|i| format!("fragstate://t/ranked/d-{i}/"));
    let not_a = dirs().find(|d| of(d) == [b.id().clone()]).expect("b ranks first for some");
    let is_a = dirs().find(|d| of(d) == [a.id().clone()]).expect("a ranks first for some");
    for d in [&not_a, &is_a] {
        // a name too: pruning drops a record with none
        c.index_update(a.id(), d, &IndexUpdate::Create).await.unwrap();
        c.index_update(a.id(), d, &add("x")).await.unwrap();
    }
    assert!(c.index_read(a.id(), &is_a, 1, POLICY).await.unwrap().is_some_and(|r| r.complete), "a holds it");
    let r: Record = c.index_read(a.id(), &not_a, 1, POLICY).await.unwrap().expect("the record is answered");
    assert!(!r.complete, "a is not among the holders the reader ranks");
    assert!(!c.index_read(a.id(), &not_a, 2, POLICY).await.unwrap().unwrap().complete, "forgotten, not only answered so");
    // a's own reads of its records go to its store, ranked the same way
    assert!(!a.index_read(a.id(), &not_a, 2, POLICY).await.unwrap().unwrap().complete);
    assert!(a.index_read(a.id(), &is_a, 1, POLICY).await.unwrap().unwrap().complete);
    assert_eq!(a.stats().index_records, 3);
    assert!(a.stats().index_bytes > 0);
    assert_eq!(b.stats().index_records, 0, "b was sent nothing");

    // a client node keeps no index
    let e = a.index_update(c.id(), dir, &IndexUpdate::Create).await.expect_err("a client node");
    assert!(matches!(e, Error::NodeUnavailable { .. }) && e.to_string().contains("keeps no directory indexes"), "{e}");
    let e = a.index_read(c.id(), dir, 2, POLICY).await.expect_err("a client node");
    assert!(e.to_string().contains("keeps no directory indexes"), "{e}");
    // the sender checks too
    let e = c.index_read(a.id(), "no-slash", 2, POLICY).await.expect_err("not a directory");
    assert!(matches!(e, Error::InvalidParameter { .. }), "{e}");
    let e = c.index_read(a.id(), dir, 256, POLICY).await.expect_err("too wide");
    assert!(matches!(e, Error::InvalidParameter { .. }), "{e}");

    for n in [c, b, a] {
        n.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_index_requests_are_answered_with_errors_on_a_stream_that_stays_usable() {
    let (a, b, c) = cluster().await;
    let bad = |f: wire::Frame| {
        assert_eq!(f.kind, Kind::Err);
        let e: WireError = wire::decode("error", &f.body).unwrap();
        assert!(matches!(e, WireError::InvalidParameter { .. }));
    };
    for width in [0, 256] {
        let req = IndexReadReq { dir: "d/".into(), width, shared_domains: false };
        bad(raw(&c, &a, Kind::IndexRead, &wire::encode(&req)).await);
    }
    bad(raw(&c, &a, Kind::IndexRead, &wire::encode(&IndexReadReq { dir: "d".into(), width: 2, shared_domains: false })).await);
    let long = format!("{}/", "d".repeat(fragstate_net::tombstone_set::MAX_TOMBSTONE_PATH));
    bad(raw(&c, &a, Kind::IndexUpdate, &wire::encode(&IndexUpdateReq { dir: long, update: IndexUpdate::Create })).await);
    bad(raw(&c, &a, Kind::IndexUpdate, &wire::encode(&IndexUpdateReq { dir: "d/".into(), update: add("") })).await);
    // none was a protocol violation: the client is still connected and served
    let ok = raw(&c, &a, Kind::IndexUpdate, &wire::encode(&IndexUpdateReq { dir: "d/".into(), update: add("x") })).await;
    assert_eq!(ok.kind, Kind::Ok);
    let f = raw(&c, &a, Kind::IndexRead, &wire::encode(&IndexReadReq { dir: "d/".into(), width: 2, shared_domains: false })).await;
    assert_eq!(f.kind, Kind::IndexAnswer);
    let answer: wire::IndexAnswer = wire::decode_canonical("index answer", &f.body).unwrap();
    assert!(answer.is_some_and(|r| r.index.contains("x") && !r.complete));
    assert_eq!(a.stats().protocol_violations, 0);
    for n in [c, b, a] {
        n.shutdown().await;
    }
}
