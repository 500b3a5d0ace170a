//! Fuzz targets: one function per decoder that reads bytes from a peer or a
//! disk. Each takes arbitrary bytes and must return normally — an error is
//! the expected answer to garbage; a panic, an abort, a hang or an allocation
//! beyond the decoder's stated bound is a finding — and asserts what a
//! successful decode promises its callers: a value that re-encodes to the
//! same bytes (the formats are canonical), sizes within the limits the
//! callers allocate by, cells that are exactly the bytes on disk.
//!
//! `ci/fuzz.sh` runs each target under AFL++ (the `fragstate-fuzz` binary,
//! feature `afl`); `tests/corpus.rs` replays the committed corpus and every
//! past finding (`regressions/`) through the same functions in every
//! `cargo test`, so a finding stays fixed.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bytes::{Bytes, BytesMut};
use serde::de::DeserializeOwned;
use serde::Serialize;

use fragstate_core::codec::StripeCodec;
use fragstate_core::format::{self, CellFrame, Manifest, CELL_FRAME_HEADER_LEN};
use fragstate_core::params::{CodingParams, Compression, MAX_CELL_SIZE, MIN_CELL_SIZE};
use fragstate_core::version::ManifestPut;
use fragstate_net::swim_wire;
use fragstate_net::tombstone_log::TombstoneLog;
use fragstate_net::tombstone_set::{TombstoneLimits, TombstoneSet, MAX_CLOCK_SKEW_MS, MAX_TOMBSTONE_PATH};
use fragstate_net::wire::{self, Expect, GetCellReq, Kind, ListPage, ListReq, NodeStats, Tombstone, WireDelete, WireDeleteStats, WireError};
use fragstate_store::FragmentStore;

pub mod seeds;

/// One fuzz target: its name (the corpus directory and the binary's argument) and its body.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

/// Every target, in the order `ci/fuzz.sh` runs them.
pub const TARGETS: &[Target] = &[
    Target { name: "frames", run: frames },
    Target { name: "bodies", run: bodies },
    Target { name: "hello", run: hello },
    Target { name: "manifest", run: manifest },
    Target { name: "fragment_header", run: fragment_header },
    Target { name: "cell_frame", run: cell_frame },
    Target { name: "stripe_decode", run: stripe_decode },
    Target { name: "store_reopen", run: store_reopen },
    Target { name: "tombstone_log", run: tombstone_log },
    Target { name: "cluster_key", run: cluster_key },
    Target { name: "swim", run: swim },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The clock the disk targets run at (tombstone times are judged against it).
pub const NOW_MS: u64 = 1_800_000_000_000;

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

/// Decodes `body` as a `T` the way a node does; what decodes must re-encode
/// to the very same bytes (else two nodes could read one frame differently).
fn round_trip<T: Serialize + DeserializeOwned>(what: &str, body: &[u8]) -> Option<T> {
    let v: T = wire::decode(what, body).ok()?;
    assert_eq!(wire::encode(&v), body, "{what}: a decoded body re-encodes to other bytes");
    Some(v)
}

/// [`round_trip`] for a body decoded with `wire::decode_canonical`.
fn canonical<T: Serialize + DeserializeOwned>(what: &str, body: &[u8]) -> Option<T> {
    let v: T = wire::decode_canonical(what, body).ok()?;
    assert_eq!(wire::encode(&v), body, "{what}: a decoded body re-encodes to other bytes");
    Some(v)
}

/// The body of a frame of `kind` as its receiver decodes it; `max_cell` bounds a cell.
fn decode_body(kind: Kind, body: Bytes, max_cell: u32) {
    match kind {
        Kind::Hello | Kind::HelloReply => hello(&body),
        Kind::OpenFragment => fragment_header(&body),
        Kind::PutManifest | Kind::ManifestData => manifest(&body),
        Kind::Cell | Kind::CellData => {
            if let Ok((frame, cell)) = wire::split_cell("cell", body, max_cell) {
                assert!(frame.len <= max_cell && cell.len() == frame.len as usize);
            }
        }
        // A path, as the server takes it.
        Kind::GetManifest => drop(std::str::from_utf8(&body)),
        Kind::GetCell | Kind::ReportCorrupt => drop(round_trip::<GetCellReq>("get cell", &body)),
        Kind::List => drop(round_trip::<ListReq>("list", &body)),
        Kind::Delete => drop(round_trip::<WireDelete>("delete", &body)),
        Kind::BenchSource => drop(round_trip::<u64>("bench source", &body)),
        Kind::Probe => drop(round_trip::<u32>("probe", &body)),
        Kind::Listing => drop(round_trip::<ListPage>("listing", &body)),
        Kind::Deleted => drop(round_trip::<WireDeleteStats>("delete stats", &body)),
        Kind::Stats => drop(round_trip::<NodeStats>("stats", &body)),
        Kind::Err => drop(round_trip::<WireError>("error", &body)),
        Kind::ManifestPut => drop(round_trip::<ManifestPut>("manifest put", &body)),
        Kind::CheckHeld => drop(round_trip::<wire::HeldCheckReq>("check held", &body)),
        Kind::HeldAnswers => drop(round_trip::<Vec<wire::HeldAnswer>>("held answers", &body)),
        // Bodies with maps: only their canonical encoding decodes (wire::decode_canonical).
        Kind::IndexUpdate => {
            if let Some(req) = canonical::<wire::IndexUpdateReq>("index update", &body) {
                let _ = req.check();
            }
        }
        Kind::IndexRead => {
            if let Some(req) = round_trip::<wire::IndexReadReq>("index read", &body) {
                if req.check().is_ok() {
                    assert!(req.dir.ends_with('/') && (1..=wire::MAX_INDEX_WIDTH).contains(&req.width));
                }
            }
        }
        Kind::IndexAnswer => drop(canonical::<wire::IndexAnswer>("index answer", &body)),
        Kind::Finish | Kind::Ok | Kind::NoManifest | Kind::Stat | Kind::BenchSink => {}
    }
}

/// A stream of frames as a server (first byte 0: requests; 1: an upload) or
/// a client (2: answers to the request kind of the next byte) reads it, each
/// body decoded as its receiver does. Every accepted frame must be of a kind
/// the reader expects and within the kind's limit.
pub fn frames(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let (expect, mut stream) = match mode % 3 {
        0 => (Expect::Request, rest),
        1 => {
            let Some(cell_size) = u32_at(rest, 0) else { return };
            (Expect::Upload { cell_size: cell_size.clamp(MIN_CELL_SIZE, MAX_CELL_SIZE) }, &rest[4..])
        }
        _ => {
            let Some((&to, rest)) = rest.split_first() else { return };
            let Some(to) = Kind::from_u8(to) else { return };
            let Some(max_cell) = u32_at(rest, 0) else { return };
            let max_cell = (max_cell != u32::MAX).then_some(max_cell.min(MAX_CELL_SIZE));
            (Expect::Response { to, max_cell }, &rest[4..])
        }
    };
    let cell_bound = match expect {
        Expect::Upload { cell_size } => cell_size,
        Expect::Response { max_cell: Some(c), .. } => c,
        _ => MAX_CELL_SIZE,
    };
    loop {
        let frame = match futures::executor::block_on(wire::read_frame(&mut stream, expect)) {
            Ok(Some(f)) => f,
            Ok(None) | Err(_) => return,
        };
        assert!(frame.body.len() <= frame.kind.max_body() as usize, "{:?} frame over its kind's limit", frame.kind);
        if matches!(frame.kind, Kind::Cell | Kind::CellData) {
            assert!(frame.body.len() <= cell_bound as usize + CELL_FRAME_HEADER_LEN, "cell frame over the expected cell size");
        }
        decode_body(frame.kind, frame.body, cell_bound);
    }
}

/// Every small structured body, selected by the first byte, decoded alone.
pub fn bodies(data: &[u8]) {
    let Some((&which, body)) = data.split_first() else { return };
    const KINDS: [Kind; 15] = [
        Kind::GetCell,
        Kind::List,
        Kind::Delete,
        Kind::BenchSource,
        Kind::Listing,
        Kind::Deleted,
        Kind::Stats,
        Kind::Err,
        Kind::ManifestPut,
        Kind::HelloReply,
        Kind::ReportCorrupt,
        Kind::Probe,
        Kind::IndexUpdate,
        Kind::IndexRead,
        Kind::IndexAnswer,
    ];
    decode_body(KINDS[which as usize % KINDS.len()], Bytes::copy_from_slice(body), MAX_CELL_SIZE);
}

/// A hello body: a peer of another protocol version is refused; what is
/// accepted re-encodes to the same bytes.
pub fn hello(data: &[u8]) {
    if let Ok(h) = wire::decode_hello(data) {
        assert_eq!(h.protocol_version, wire::PROTOCOL_VERSION);
        assert_eq!(wire::encode(&h), data, "hello: re-encodes to other bytes");
    }
}

/// A membership message (`/fragstate/swim/1.0.0`) from a peer: one that
/// decodes is within every bound `swim_wire::decode` checks and re-encodes to
/// the same bytes.
pub fn swim(data: &[u8]) {
    let Ok(m) = swim_wire::decode(data) else { return };
    assert_eq!(swim_wire::encode(&m), data, "swim: re-encodes to other bytes");
}

/// A manifest envelope, from a peer or a store file. A valid one re-encodes
/// to the same bytes, and every size a reader derives from it is bounded by
/// its coding parameters (the reader allocates by them).
pub fn manifest(data: &[u8]) {
    let Ok(m) = format::decode_manifest(data) else { return };
    assert_eq!(format::encode_manifest(&m), data, "manifest: re-encodes to other bytes");
    check_manifest(&m);
}

fn check_manifest(m: &Manifest) {
    let p = &m.params;
    assert_eq!(m.holders.len(), p.fragments());
    assert_eq!(m.stripes.len() as u64, p.stripe_count(m.length));
    let mut total = 0u64;
    for (s, info) in m.stripes.iter().enumerate() {
        assert!(info.cell_len(p.k()) <= p.cell_size(), "stripe {s}: cells larger than the cell size");
        assert_eq!(info.cell_checksums.len(), p.fragments());
        let len = m.stripe_len(s as u64);
        assert!(len > 0 && len <= p.stripe_data_len());
        total += len;
    }
    assert_eq!(total, m.length, "stripe lengths do not add up to the object");
}

/// A fragment header envelope (the first frame of an upload, the head of a fragment file).
pub fn fragment_header(data: &[u8]) {
    let Ok(h) = format::decode_fragment_header(data) else { return };
    assert_eq!(format::encode_fragment_header(&h), data, "fragment header: re-encodes to other bytes");
    assert!((h.index as usize) < h.params.fragments());
}

/// A cell frame (16-byte header and cell) against the cell size in the first four bytes.
pub fn cell_frame(data: &[u8]) {
    let Some(max_len) = u32_at(data, 0) else { return };
    let body = Bytes::copy_from_slice(&data[4..]);
    if let Ok(frame) = CellFrame::decode(&body, max_len) {
        assert!(frame.len <= max_len);
        assert_eq!(frame.encode()[..], body[..CELL_FRAME_HEADER_LEN]);
    }
    if let Ok((frame, cell)) = wire::split_cell("cell", body, max_len) {
        assert!(frame.len <= max_len && cell.len() == frame.len as usize);
    }
}

/// Rebuilding a stripe from cells a peer sent, as the reader does once each
/// cell matched the manifest's checksum (a holder with the cluster key can
/// send a manifest whose checksums fit any cells it likes): layout bytes
/// `k m flags stored:u32 logical:u32 missing:u32 payload…`. The result is an
/// error or exactly the stripe's length — never a panic, never more than the
/// manifest bounds (zstd included) — and data cells that all arrived are
/// returned as they are.
pub fn stripe_decode(data: &[u8]) {
    if data.len() < 15 {
        return;
    }
    let k = 1 + data[0] as usize % 8;
    let m = data[1] as usize % 5;
    let compressed = data[2] & 1 == 1;
    let compression = if compressed { Compression::Zstd { level: 1 } } else { Compression::None };
    let params = CodingParams::new(k, m, MIN_CELL_SIZE as u64, compression).expect("parameters in range");
    let cap = params.stripe_data_len() as u32;
    let logical = 1 + u32_at(data, 7).expect("length checked") % cap;
    // The manifest's own rule (Manifest::validate): a plain stripe stores its
    // object bytes, a compressed one at most a full stripe.
    let stored = if compressed { 1 + u32_at(data, 3).expect("length checked") % cap } else { logical };
    let missing = u32_at(data, 11).expect("length checked");
    let payload = &data[15..];
    if payload.is_empty() {
        return;
    }
    let n = params.fragments();
    let cell_len = (stored as usize).div_ceil(k);
    let mut all = Vec::with_capacity(n * cell_len);
    while all.len() < n * cell_len {
        let take = payload.len().min(n * cell_len - all.len());
        all.extend_from_slice(&payload[..take]);
    }
    let cells: Vec<Bytes> = all.chunks(cell_len).map(Bytes::copy_from_slice).collect();
    let info = format::StripeInfo {
        stored_len: stored,
        compressed,
        cell_checksums: cells.iter().map(|c| format::cell_checksum(c)).collect(),
    };
    let codec = StripeCodec::new(params).expect("valid parameters");
    let given: Vec<Option<Bytes>> =
        cells.iter().enumerate().map(|(i, c)| (missing >> i & 1 == 0).then(|| c.clone())).collect();
    for (i, c) in given.iter().enumerate() {
        if let Some(c) = c {
            assert!(codec.cell_is_valid(&info, i, c));
        }
    }
    if let Ok(out) = codec.decode("fuzz", 0, &info, logical as usize, &given) {
        assert_eq!(out.len(), logical as usize, "decoded stripe of the wrong length");
        if !compressed && given[..k].iter().all(Option::is_some) {
            assert_eq!(out[..], all[..logical as usize], "data cells that arrived were changed");
        }
    }
    if let Ok(rebuilt) = codec.rebuild_cells("fuzz", 0, &info, &given) {
        assert_eq!(rebuilt.len(), n);
        for (i, c) in rebuilt.iter().enumerate() {
            assert_eq!(c.len(), cell_len);
            if let Some(g) = &given[i] {
                assert_eq!(c, g, "a cell that arrived was changed by the rebuild");
            }
        }
    }
}

/// A scratch directory of this process and thread for the disk targets: under
/// `$FRAGSTATE_FUZZ_SCRATCH` (ci/fuzz.sh makes one and removes it after the
/// run; the tests point it into the build directory), else the temp directory.
pub(crate) fn scratch(name: &str) -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    let root = ROOT.get_or_init(|| {
        let base = std::env::var_os("FRAGSTATE_FUZZ_SCRATCH").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!("fragstate-fuzz-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("create the fuzz scratch directory");
        dir
    });
    // One directory per thread too: `cargo test` runs the corpus tests in parallel threads,
    // and two of them writing the same tombstone file raced (seen once in a workspace run).
    let thread = format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_alphanumeric(), "");
    let dir = root.join(format!("{name}-{thread}"));
    fs::create_dir_all(&dir).expect("create a fuzz scratch directory");
    dir
}

/// A disk store opened on a fragment file and a manifest file of the input
/// (`split:u16 fragment… manifest…`), as a node restarting on a damaged
/// disk does: unreadable files are skipped, a torn tail is cut, and every
/// cell it then serves is exactly the bytes its frame covers in the file.
pub fn store_reopen(data: &[u8]) {
    let Some(split) = data.get(..2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize) else { return };
    let rest = &data[2..];
    let (fragment, manifest) = rest.split_at(split.min(rest.len()));
    let root = scratch("store");
    for (dir, file, bytes) in [("fragments", "0.frag", fragment), ("manifests", "0.manifest", manifest)] {
        fs::create_dir_all(root.join(dir)).expect("create store directory");
        fs::write(root.join(dir).join(file), bytes).expect("write store file");
    }
    let Ok(store) = FragmentStore::open_dir("fuzz", &root, u64::MAX, false) else { return };
    let frag_path = root.join("fragments/0.frag");
    let mut served = 0u64;
    for key in store.fragment_keys() {
        let file = fs::File::open(&frag_path).expect("the store kept the fragment file");
        let scan = fragstate_store::scan_fragment_file(&file, &frag_path).expect("a loaded fragment rescans");
        assert_eq!(scan.end, scan.file_len, "the torn tail was not cut");
        let on_disk = fs::read(&frag_path).expect("read fragment file");
        for (stripe, (offset, frame)) in scan.cells.iter().enumerate() {
            let cell = store.get_cell(&key, stripe as u32).expect("a scanned cell is served");
            assert_eq!(cell[..], on_disk[*offset as usize..*offset as usize + frame.len as usize]);
            served += cell.len() as u64;
        }
        assert!(store.get_cell(&key, scan.cells.len() as u32).is_err(), "a cell past the scanned ones was served");
    }
    assert_eq!(store.usage().bytes, served, "the store counts other bytes than it serves");
    for summary in store.list("") {
        check_manifest(&store.get_manifest(&summary.path).expect("a listed manifest is held"));
    }
}

/// The tombstone file of a disk node (log records, a torn tail, or the old
/// one-list layout) loaded as on restart, with small bounds so eviction is
/// reached: what is loaded respects every bound, and the rewritten file
/// loads to the same set (recovery is idempotent).
pub fn tombstone_log(data: &[u8]) {
    let path = scratch("tombstones").join("tombstones.bin");
    fs::write(&path, data).expect("write tombstone file");
    let limits = TombstoneLimits { ttl_ms: 3_600_000, max_count: 64, max_bytes: 16 << 10 };
    let mut set = TombstoneSet::new(limits);
    if TombstoneLog::open(&path, false, &mut set, NOW_MS).is_err() {
        return;
    }
    let first: Vec<Tombstone> = set.all().collect();
    assert!(first.len() <= limits.max_count && set.bytes() <= limits.max_bytes);
    for t in &first {
        assert!(t.path.len() <= MAX_TOMBSTONE_PATH);
        assert!(t.at_unix_ms <= NOW_MS + MAX_CLOCK_SKEW_MS && t.at_unix_ms >= NOW_MS - limits.ttl_ms);
    }
    let mut again = TombstoneSet::new(limits);
    TombstoneLog::open(&path, false, &mut again, NOW_MS).expect("a rewritten tombstone file loads");
    assert_eq!(again.all().collect::<Vec<_>>(), first, "reloading the rewritten file changed the set");
}

/// The cluster key file's text: what parses prints back to text that parses to the same key.
pub fn cluster_key(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(key) = fragstate_net::key::parse_cluster_key(text, Path::new("fuzz.key")) else { return };
    let again = fragstate_net::key::parse_cluster_key(&key.to_string(), Path::new("fuzz.key")).expect("a printed key parses");
    assert_eq!(again.fingerprint().to_string(), key.fingerprint().to_string());
}

/// `bytes` with a cell frame in front, as a cell travels and is stored.
pub fn framed_cell(stripe: u32, cell: &[u8]) -> BytesMut {
    let mut out = BytesMut::with_capacity(CELL_FRAME_HEADER_LEN + cell.len());
    out.extend_from_slice(&CellFrame { stripe, len: cell.len() as u32, checksum: format::cell_checksum(cell) }.encode());
    out.extend_from_slice(cell);
    out
}
