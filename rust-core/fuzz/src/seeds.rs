//! Seed inputs: one or a few valid inputs per target, made by the real
//! encoders, so the fuzzer starts inside each format instead of having to
//! guess magic numbers and checksums. Committed under `corpus/<target>/`
//! (`seed-*` files) beside what the fuzzer kept; `tests/corpus.rs` checks
//! that the committed seeds still match what this module makes.

use bytes::BytesMut;

use fragstate_core::codec::StripeCodec;
use fragstate_core::dir_index::quorum::{IndexUpdate, Record};
use fragstate_core::dir_index::{Change, DirIndex};
use fragstate_core::format::{self, FragmentHeader, Manifest, ObjectSummary};
use fragstate_core::ids::NodeId;
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::swim::{Liveness, Message, Update};
use fragstate_core::version::{ManifestPut, WriteVersion};
use fragstate_net::swim_wire::{self, NodeMeta};
use fragstate_net::tombstone_log::TombstoneLog;
use fragstate_net::tombstone_set::{TombstoneLimits, TombstoneSet};
use fragstate_net::wire::{self, GetCellReq, Hello, Kind, ListPage, ListReq, NodeStats, Role, Tombstone, WireDelete, WireDeleteStats, WireError};

use crate::{framed_cell, NOW_MS};

/// One seed: the target it is for, a file name, the bytes.
pub struct Seed {
    pub target: &'static str,
    pub name: String,
    pub bytes: Vec<u8>,
}

/// An object written as the writer does: its manifest and, per fragment, its cells in stripe order.
struct Object {
    manifest: Manifest,
    fragments: Vec<Vec<Vec<u8>>>,
}

fn object(params: CodingParams, data: &[u8]) -> Object {
    let codec = StripeCodec::new(params).expect("seed parameters are valid");
    let mut stripes = Vec::new();
    let mut fragments = vec![Vec::new(); params.fragments()];
    for chunk in data.chunks(params.stripe_data_len() as usize) {
        let encoded = codec.encode(BytesMut::from(chunk));
        for (i, cell) in encoded.cells.iter().enumerate() {
            fragments[i].push(cell.to_vec());
        }
        stripes.push(encoded.info);
    }
    let manifest = Manifest {
        path: "fragstate://seed/job/chk-7/state".into(),
        write_id: 0x5eed_0000_0000_0000_0000_0000_0000_0001,
        revision: 0,
        length: data.len() as u64,
        params,
        holders: (0..params.fragments()).map(|i| NodeId::from(format!("node-{i}"))).collect(),
        stripes,
        created_unix_ms: NOW_MS,
        writer: "seed".into(),
    };
    Object { manifest, fragments }
}

/// Compressible but not constant bytes.
fn sample_bytes(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i / 7 % 251) as u8 ^ (i % 3) as u8).collect()
}

fn header(o: &Object, index: u8) -> FragmentHeader {
    let m = &o.manifest;
    FragmentHeader { path: m.path.clone(), write_id: m.write_id, index, params: m.params, created_unix_ms: m.created_unix_ms }
}

/// One frame as a node writes it.
fn frame(kind: Kind, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    futures::executor::block_on(wire::write_frame(&mut out, kind, body, &[])).expect("a frame writes into memory");
    out
}

fn hello_body() -> Vec<u8> {
    wire::encode(&Hello {
        protocol_version: wire::PROTOCOL_VERSION,
        role: Role::Storage,
        domain: "rack-1".into(),
        free_bytes: 1 << 30,
        tombstones: vec![Tombstone { prefix: true, path: "fragstate://seed/job/chk-6/".into(), at_unix_ms: NOW_MS }],
    })
}

/// Every seed of every target.
pub fn all() -> Vec<Seed> {
    let mut seeds = Vec::new();
    let mut add = |target: &'static str, name: &str, bytes: Vec<u8>| seeds.push(Seed { target, name: format!("seed-{name}"), bytes });

    let plain = object(CodingParams::new(2, 1, 4096, Compression::None).expect("valid"), &sample_bytes(10_000));
    let zstd = object(CodingParams::new(3, 2, 4096, Compression::Zstd { level: 1 }).expect("valid"), &sample_bytes(30_000));
    let manifest = format::encode_manifest(&plain.manifest);
    let header0 = format::encode_fragment_header(&header(&plain, 0));
    let cell0 = framed_cell(0, &plain.fragments[0][0]);
    let get_cell = wire::encode(&GetCellReq { path: plain.manifest.path.clone(), write_id: plain.manifest.write_id, index: 1, stripe: 0 });
    let list = wire::encode(&ListReq { prefix: "fragstate://seed/".into(), after: Some("fragstate://seed/a".into()) });
    let delete = wire::encode(&WireDelete::OlderWrites {
        path: plain.manifest.path.clone(),
        newest: WriteVersion { created_unix_ms: NOW_MS, write_id: 9 },
    });
    let listing = wire::encode(&ListPage { entries: vec![ObjectSummary { path: "p".into(), length: 3, created_unix_ms: NOW_MS, write_id: 1 }], more: true });
    let deleted = wire::encode(&WireDeleteStats { manifests: 1, fragments: 3, bytes: 12_288 });
    let stats = wire::encode(&NodeStats { node: "node-1".into(), role: "storage".into(), fragments: 4, ..Default::default() });
    let error = wire::encode(&WireError::CellNotFound { path: "p".into(), index: 1, stripe: 2, node: "node-1".into() });
    let put = wire::encode(&ManifestPut::KeptNewer(WriteVersion { created_unix_ms: NOW_MS, write_id: 2 }));
    let check_held = wire::encode(&wire::HeldCheckReq { queries: vec![wire::HeldQuery::of(&plain.manifest)] });
    let held = wire::encode(&vec![wire::HeldAnswer::NewerRevision { names_asker: false }, wire::HeldAnswer::Deleted]);
    let (index_update, index_read, index_answer) = index_bodies();

    // A server's requests (mode 0): hello, an upload's header, reads, a manifest, deletes.
    let mut requests = vec![0u8];
    for (kind, body) in [
        (Kind::Hello, &hello_body()),
        (Kind::OpenFragment, &header0),
        (Kind::GetCell, &get_cell),
        (Kind::PutManifest, &manifest),
        (Kind::List, &list),
        (Kind::Delete, &delete),
        (Kind::Stat, &vec![]),
        (Kind::CheckHeld, &check_held),
        (Kind::IndexUpdate, &index_update),
        (Kind::IndexRead, &index_read),
    ] {
        requests.extend(frame(kind, body));
    }
    add("frames", "requests", requests);
    // An upload (mode 1): cells of 4 KiB at most, then Finish.
    let mut upload = vec![1u8];
    upload.extend_from_slice(&4096u32.to_le_bytes());
    for (s, cell) in plain.fragments[0].iter().enumerate() {
        upload.extend(frame(Kind::Cell, &framed_cell(s as u32, cell)));
    }
    upload.extend(frame(Kind::Finish, &[]));
    add("frames", "upload", upload);
    // Answers (mode 2) to each request kind.
    for (to, kind, body) in [
        (Kind::GetCell, Kind::CellData, &cell0.to_vec()),
        (Kind::GetManifest, Kind::ManifestData, &manifest),
        (Kind::List, Kind::Listing, &listing),
        (Kind::Delete, Kind::Deleted, &deleted),
        (Kind::Stat, Kind::Stats, &stats),
        (Kind::PutManifest, Kind::ManifestPut, &put),
        (Kind::Hello, Kind::HelloReply, &hello_body()),
        (Kind::GetCell, Kind::Err, &error),
        (Kind::CheckHeld, Kind::HeldAnswers, &held),
        (Kind::IndexRead, Kind::IndexAnswer, &index_answer),
    ] {
        let mut answer = vec![2u8, to as u8];
        answer.extend_from_slice(&4096u32.to_le_bytes());
        answer.extend(frame(kind, body));
        add("frames", &format!("answer-{kind:?}").to_lowercase(), answer);
    }

    let bodies = [&get_cell, &list, &delete, &8u64.to_le_bytes().to_vec(), &listing, &deleted, &stats, &error, &put, &hello_body(), &get_cell];
    // indexes 12, 13, 14 of targets::bodies' kinds (11, a probe, has no seed)
    let index_kinds = [(12, &index_update), (13, &index_read), (14, &index_answer)];
    for (i, body) in bodies.into_iter().enumerate().chain(index_kinds) {
        let mut b = vec![i as u8];
        b.extend_from_slice(body);
        add("bodies", &format!("{i}"), b);
    }
    add("hello", "storage", hello_body());
    add("manifest", "plain", manifest.clone());
    add("manifest", "zstd", format::encode_manifest(&zstd.manifest));
    add("fragment_header", "plain", header0.clone());
    add("fragment_header", "zstd", format::encode_fragment_header(&header(&zstd, 4)));
    let mut cell = 4096u32.to_le_bytes().to_vec();
    cell.extend_from_slice(&cell0);
    add("cell_frame", "cell", cell);

    // Stripes: a plain one with every cell (layout of targets::stripe_decode),
    // and a compressed one with two cells missing.
    for (name, o, missing) in [("plain", &plain, 0u32), ("zstd", &zstd, 0b01001)] {
        let p = o.manifest.params;
        let info = &o.manifest.stripes[0];
        let mut b = vec![(p.k() - 1) as u8, p.m() as u8, info.compressed as u8];
        b.extend_from_slice(&(info.stored_len - 1).to_le_bytes());
        b.extend_from_slice(&(o.manifest.stripe_len(0) as u32 - 1).to_le_bytes());
        b.extend_from_slice(&missing.to_le_bytes());
        for f in &o.fragments {
            b.extend_from_slice(&f[0]);
        }
        add("stripe_decode", name, b);
    }

    // A fragment file (header, then framed cells; the last one torn) and the manifest.
    let mut file = header0.clone();
    for (s, c) in plain.fragments[0].iter().enumerate() {
        file.extend_from_slice(&framed_cell(s as u32, c));
    }
    file.truncate(file.len() - 100);
    let mut store = (file.len() as u16).to_le_bytes().to_vec();
    store.extend_from_slice(&file);
    store.extend_from_slice(&manifest);
    add("store_reopen", "torn-tail", store);

    add("tombstone_log", "log", tombstone_file());
    add("tombstone_log", "old-layout", wire::encode(&vec![Tombstone { prefix: false, path: "p".into(), at_unix_ms: NOW_MS - 1 }]));
    add(
        "cluster_key",
        "key",
        libp2p::pnet::PreSharedKey::new([0x5e; 32]).to_string().into_bytes(),
    );
    add("swim", "ping", swim_wire::encode(&Message::Ping { seq: 1, updates: vec![member(1), Update { liveness: Liveness::Suspect, ..member(2) }] }));
    add("swim", "ping-req", swim_wire::encode(&Message::PingReq { seq: 2, target: member(3).node, updates: vec![] }));
    add("swim", "sync", swim_wire::encode(&Message::Sync { members: (1..=4).map(member).collect(), reply: true }));
    seeds
}

/// An `IndexUpdate` (a fill, the longest body), an `IndexRead` and the record it answers.
fn index_bodies() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let mut ix = DirIndex::default();
    ix.apply("_metadata", Change::Add(WriteVersion { created_unix_ms: NOW_MS, write_id: 3 }));
    ix.apply("shared/", Change::Add(WriteVersion { created_unix_ms: NOW_MS - 5, write_id: 4 }));
    ix.apply("old", Change::Remove(WriteVersion { created_unix_ms: NOW_MS - 9, write_id: 5 }));
    let dir = "fragstate://seed/job/chk-7/".to_string();
    let update = wire::encode(&wire::IndexUpdateReq { dir: dir.clone(), update: IndexUpdate::Fill(ix.clone()) });
    let read = wire::encode(&wire::IndexReadReq { dir, width: 6, shared_domains: false });
    let answer = wire::encode(&Some(Record { index: ix, complete: true }));
    (update, read, answer)
}

/// Membership news of a storage node with a fixed identity (seed `i`).
fn member(i: u8) -> Update<NodeMeta> {
    let id = libp2p::identity::Keypair::ed25519_from_bytes([i; 32]).expect("32 bytes are an ed25519 secret key");
    Update {
        node: NodeId::from(id.public().to_peer_id().to_base58()),
        incarnation: NOW_MS,
        liveness: Liveness::Alive,
        meta: NodeMeta {
            protocol_version: wire::PROTOCOL_VERSION,
            role: Role::Storage,
            domain: format!("rack-{i}"),
            free_bytes: 1 << 40,
            addrs: vec![format!("/ip4/10.0.0.{i}/tcp/7710")],
            started_ms: NOW_MS,
        },
    }
}

/// A tombstone log as a node writes it: three appends after open.
fn tombstone_file() -> Vec<u8> {
    let dir = crate::scratch("seed-tombstones");
    let path = dir.join("tombstones.bin");
    let _ = std::fs::remove_file(&path);
    let mut set = TombstoneSet::new(TombstoneLimits::default());
    let mut log = TombstoneLog::open(&path, false, &mut set, NOW_MS).expect("open a new tombstone log");
    for (i, prefix) in [false, true, false].into_iter().enumerate() {
        log.append(&Tombstone { prefix, path: format!("fragstate://seed/job/chk-{i}/"), at_unix_ms: NOW_MS - i as u64 })
            .expect("append a tombstone");
    }
    drop(log);
    std::fs::read(&path).expect("read the tombstone log")
}
