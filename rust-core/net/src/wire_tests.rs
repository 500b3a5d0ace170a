//! Tests of the wire format: frames, limits, hellos, list pages.
use super::*;
use fragstate_core::format::ObjectSummary;
use futures::io::Cursor;

fn block<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

#[test]
fn a_hello_of_another_protocol_version_is_refused_naming_both() {
    let h = Hello { protocol_version: PROTOCOL_VERSION, role: Role::Storage, domain: "d".into(), free_bytes: 1, tombstones: Vec::new() };
    let mut body = encode(&h);
    assert_eq!(&*decode_hello(&body).unwrap().domain, "d");
    body[..4].copy_from_slice(&2u32.to_le_bytes());
    let e = decode_hello(&body).unwrap_err();
    assert!(is_protocol_violation(&e), "{e}");
    assert!(e.to_string().contains("version 2") && e.to_string().contains(&format!("version {PROTOCOL_VERSION}")), "{e}");
    assert!(decode_hello(&[1, 2]).is_err(), "a body shorter than the version is undecodable");
}

#[test]
fn frames_round_trip() {
    let mut buf = Vec::new();
    block(write_frame(&mut buf, Kind::GetManifest, b"abc", b"")).unwrap();
    block(write_frame(&mut buf, Kind::Finish, b"", b"")).unwrap();
    let mut r = Cursor::new(buf);
    let f = block(read_frame(&mut r, Expect::Request)).unwrap().unwrap();
    assert_eq!((f.kind, &f.body[..]), (Kind::GetManifest, &b"abc"[..]));
    assert_eq!(block(read_frame(&mut r, Expect::Upload { cell_size: 4096 })).unwrap().unwrap().kind, Kind::Finish);
    assert!(block(read_frame(&mut r, Expect::Request)).unwrap().is_none());
}

#[test]
fn oversized_and_unknown_frames_are_violations_before_the_body_is_read() {
    let mut head = Vec::new();
    head.extend_from_slice(&(MAX_CONTROL_BODY + 1).to_le_bytes());
    head.push(Kind::List as u8);
    let e = block(read_frame(&mut Cursor::new(head), Expect::Request)).err().unwrap();
    assert!(is_protocol_violation(&e), "{e}");
    assert!(e.to_string().contains("exceeds the limit"), "{e}");
    let e = block(read_frame(&mut Cursor::new(vec![0, 0, 0, 0, 200]), Expect::Request)).err().unwrap();
    assert!(is_protocol_violation(&e) && e.to_string().contains("unknown frame kind 200"), "{e}");
    // A cell bigger than the fragment's cell size.
    let mut head = Vec::new();
    head.extend_from_slice(&(4096u32 + 17).to_le_bytes());
    head.push(Kind::Cell as u8);
    assert!(is_protocol_violation(&block(read_frame(&mut Cursor::new(head), Expect::Upload { cell_size: 4096 })).err().unwrap()));
    // Finish carries no body.
    assert!(block(read_frame(&mut Cursor::new(vec![1, 0, 0, 0, Kind::Finish as u8, 0]), Expect::Upload { cell_size: 4096 })).is_err());
}

/// A frame header announcing `len` bytes of `kind`, and no body: reading it
/// must fail on the header alone (a body read would be a torn-frame I/O error).
fn header_only(kind: Kind, len: u32) -> Cursor<Vec<u8>> {
    let mut v = len.to_le_bytes().to_vec();
    v.push(kind as u8);
    Cursor::new(v)
}

#[test]
fn a_frame_of_a_kind_not_expected_is_refused_from_its_header() {
    let violation = |kind, len, expect| {
        let e = block(read_frame(&mut header_only(kind, len), expect)).err().expect("refused");
        assert!(is_protocol_violation(&e), "{kind:?} under {expect:?}: {e}");
        e.to_string()
    };
    // Answer kinds and upload frames are not requests, however small.
    for kind in [Kind::CellData, Kind::Ok, Kind::Stats, Kind::Cell, Kind::Finish] {
        let e = violation(kind, 1 << 20, Expect::Request);
        assert!(e.contains("where a request was expected"), "{e}");
    }
    // Requests are not answers; an answer must match its request.
    let e = violation(Kind::GetCell, 16, Expect::response(Kind::Stat));
    assert!(e.contains("where an answer to Stat was expected"), "{e}");
    violation(Kind::CellData, 1 << 20, Expect::response(Kind::Stat));
    violation(Kind::ManifestData, 100, Expect::response(Kind::GetCell));
    // Inside an upload only Cell and Finish.
    violation(Kind::GetCell, 16, Expect::Upload { cell_size: 4096 });
    // A cell answer longer than the cell the reader asked for.
    let e = violation(Kind::CellData, 4096 + 17, Expect::Response { to: Kind::GetCell, max_cell: Some(4096) });
    assert!(e.contains("exceeds the limit"), "{e}");
    // Benchmark frames are requests only in builds that benchmark.
    let bench = block(read_frame(&mut header_only(Kind::BenchSink, 1 << 20), Expect::Request));
    assert_eq!(is_protocol_violation(&bench.err().unwrap()), !cfg!(feature = "bench"));
}

#[test]
fn every_request_has_its_answers_and_err_answers_anything() {
    for kind in [Kind::Hello, Kind::OpenFragment, Kind::GetCell, Kind::PutManifest, Kind::GetManifest, Kind::List, Kind::Delete, Kind::Stat, Kind::ReportCorrupt, Kind::Probe, Kind::CheckHeld, Kind::IndexUpdate, Kind::IndexRead, Kind::Finish] {
        assert!(!kind.answers().is_empty(), "{kind:?}");
        for answer in kind.answers().iter().copied().chain([Kind::Err]) {
            // an empty body: the kind was accepted
            let r = block(read_frame(&mut header_only(answer, 0), Expect::response(kind)));
            assert!(r.is_ok(), "{answer:?} answering {kind:?}: {:?}", r.err());
        }
    }
}

#[test]
fn listings_page_within_the_budget_and_lose_nothing() {
    let all: Vec<ObjectSummary> =
        (0..1000).map(|i| ObjectSummary { path: format!("job/shared/{i:05}"), length: i, created_unix_ms: 1, write_id: 7 }).collect();
    let budget = 4096;
    let (mut got, mut after, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let page = list_page(all.clone(), after.as_deref(), budget);
        assert!(encode(&page).len() <= budget, "page {pages}: {} bytes", encode(&page).len());
        pages += 1;
        after = page.entries.last().map(|s| s.path.clone());
        got.extend(page.entries);
        if !page.more {
            break;
        }
    }
    assert_eq!(got, all);
    assert!(pages > 10, "{pages} pages");
    // One entry larger than the budget still makes progress.
    let big = vec![ObjectSummary { path: "x".repeat(10_000), length: 1, created_unix_ms: 1, write_id: 1 }];
    let page = list_page(big.clone(), None, budget);
    assert_eq!((page.entries, page.more), (big, false));
}

#[test]
fn torn_frames_are_io_errors() {
    let e = block(read_frame(&mut Cursor::new(vec![10, 0, 0, 0, Kind::List as u8, 1, 2]), Expect::Request)).err().unwrap();
    assert!(matches!(e, Error::Io { .. }), "{e}");
}

#[test]
fn cell_bodies_are_checked() {
    let cell = vec![7u8; 100];
    let mut body = CellFrame { stripe: 1, len: 100, checksum: 5 }.encode().to_vec();
    body.extend_from_slice(&cell);
    let (f, c) = split_cell("t", Bytes::from(body.clone()), 4096).unwrap();
    assert_eq!((f.stripe, &c[..]), (1, &cell[..]));
    body.pop();
    assert!(split_cell("t", Bytes::from(body), 4096).is_err());
}

#[test]
fn garbage_bodies_never_panic() {
    for n in 0..64usize {
        let b: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
        let _ = decode::<Hello>("hello", &b);
        let _ = decode::<GetCellReq>("get", &b);
        let _ = decode::<WireDelete>("delete", &b);
        let _ = decode::<WireError>("error", &b);
        let _ = decode::<Vec<ObjectSummary>>("list", &b);
        let _ = decode::<HeldCheckReq>("check held", &b);
        let _ = decode::<Vec<HeldAnswer>>("held answers", &b);
        let _ = decode_canonical::<IndexUpdateReq>("index update", &b);
        let _ = decode::<IndexReadReq>("index read", &b);
        let _ = decode_canonical::<IndexAnswer>("index answer", &b);
    }
}

#[test]
fn held_checks_round_trip_and_every_kind_number_is_its_own() {
    use fragstate_core::version::WriteVersion;
    let req = HeldCheckReq {
        queries: vec![HeldQuery { path: "job/chk-3/a".into(), version: WriteVersion { created_unix_ms: 7, write_id: 9 }, revision: 2 }],
    };
    assert_eq!(decode::<HeldCheckReq>("check held", &encode(&req)).unwrap(), req);
    assert_eq!(encode(&req.queries[0]).len(), req.queries[0].wire_bytes(), "the batching's size estimate is exact");
    let answers = vec![HeldAnswer::NewerRevision { names_asker: false }, HeldAnswer::Deleted, HeldAnswer::Unknown];
    assert_eq!(decode::<Vec<HeldAnswer>>("held answers", &encode(&answers)).unwrap(), answers);
    for b in 0..=255u8 {
        if let Some(k) = Kind::from_u8(b) {
            assert_eq!(k as u8, b);
        }
    }
}

mod index {
    use super::*;
    use crate::tombstone_set::MAX_TOMBSTONE_PATH;
    use fragstate_core::dir_index::quorum::{IndexUpdate, Record};
    use fragstate_core::dir_index::{Change, DirIndex};
    use fragstate_core::version::WriteVersion;

    fn v(t: u64) -> WriteVersion {
        WriteVersion { created_unix_ms: t, write_id: u128::MAX - t as u128 }
    }

    fn frame_of(kind: Kind, body: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        block(write_frame(&mut buf, kind, body, b"")).unwrap();
        buf
    }

    #[test]
    fn index_requests_and_answers_round_trip_as_frames() {
        let mut fill = DirIndex::default();
        fill.apply("b", Change::Add(v(2)));
        fill.apply("a/", Change::Remove(v(1)));
        let updates = [
            IndexUpdate::Apply { name: "_metadata".into(), change: Change::Add(v(7)) },
            IndexUpdate::Create,
            IndexUpdate::Fill(fill.clone()),
            IndexUpdate::Batch(vec![("a/".into(), Change::Remove(v(3))), ("b".into(), Change::Add(v(4)))]),
        ];
        for update in updates {
            let req = IndexUpdateReq { dir: "job/chk-1/".into(), update };
            let mut r = Cursor::new(frame_of(Kind::IndexUpdate, &encode(&req)));
            let f = block(read_frame(&mut r, Expect::Request)).unwrap().unwrap();
            assert_eq!(f.kind, Kind::IndexUpdate);
            assert_eq!(decode_canonical::<IndexUpdateReq>("index update", &f.body).unwrap(), req);
            assert!(req.check().is_ok());
        }
        let read = IndexReadReq { dir: "job/".into(), width: 6, shared_domains: true };
        let f = block(read_frame(&mut Cursor::new(frame_of(Kind::IndexRead, &encode(&read))), Expect::Request)).unwrap().unwrap();
        assert_eq!(decode::<IndexReadReq>("index read", &f.body).unwrap(), read);
        assert!(read.policy().allow_shared_domains);
        for answer in [None, Some(Record { index: fill, complete: true })] {
            let body = try_encode("index answer", &answer).unwrap();
            let f = block(read_frame(&mut Cursor::new(frame_of(Kind::IndexAnswer, &body)), Expect::response(Kind::IndexRead))).unwrap().unwrap();
            assert_eq!(decode_canonical::<IndexAnswer>("index answer", &f.body).unwrap(), answer);
        }
        // an IndexAnswer answers IndexRead only, and is no request
        for (kind, expect) in [(Kind::IndexAnswer, Expect::response(Kind::IndexUpdate)), (Kind::IndexAnswer, Expect::Request), (Kind::Ok, Expect::response(Kind::IndexRead))] {
            let e = block(read_frame(&mut header_only(kind, 0), expect)).err().expect("refused");
            assert!(is_protocol_violation(&e), "{kind:?} under {expect:?}: {e}");
        }
        assert_eq!((Kind::from_u8(16), Kind::from_u8(17), Kind::from_u8(75)), (Some(Kind::IndexUpdate), Some(Kind::IndexRead), Some(Kind::IndexAnswer)));
    }

    #[test]
    fn index_requests_name_a_directory_within_the_path_bound_and_a_width_in_range() {
        let read = |dir: &str, width| IndexReadReq { dir: dir.into(), width, shared_domains: false }.check();
        assert!(read("a/", 1).is_ok() && read("a/", MAX_INDEX_WIDTH).is_ok());
        let longest = format!("{}/", "d".repeat(MAX_TOMBSTONE_PATH - 1));
        assert!(read(&longest, 6).is_ok());
        for (dir, width) in [("a", 6), ("", 6), ("a/", 0), ("a/", MAX_INDEX_WIDTH + 1), (&format!("d{longest}"), 6)] {
            let e = read(dir, width).expect_err("refused");
            assert!(matches!(e, Error::InvalidParameter { .. }), "{dir:.10} {width}: {e}");
        }
        let update = |dir: &str, name: &str| IndexUpdateReq { dir: dir.into(), update: IndexUpdate::Apply { name: name.into(), change: Change::Add(v(1)) } }.check();
        assert!(update("a/", "x").is_ok());
        assert!(update("a", "x").is_err(), "not a directory");
        assert!(update("a/", "").is_err(), "an empty name");
        assert!(update("a/", &"x".repeat(MAX_TOMBSTONE_PATH - 1)).is_err(), "a path over the bound with its directory");
        assert!(update("a/", &"x".repeat(MAX_TOMBSTONE_PATH - 2)).is_ok());
        let batch = |names: &[&str]| {
            let changes = names.iter().map(|n| (n.to_string(), Change::Remove(v(1)))).collect();
            IndexUpdateReq { dir: "a/".into(), update: IndexUpdate::Batch(changes) }.check()
        };
        assert!(batch(&["x", "y/"]).is_ok());
        assert!(batch(&["x", ""]).is_err(), "every name of a batch is checked");
        let create = IndexUpdateReq { dir: longest.clone() + "x/", update: IndexUpdate::Create };
        assert!(create.check().is_err());
    }

    #[test]
    fn an_index_body_in_another_order_than_its_own_is_refused() {
        let mut ix = DirIndex::default();
        ix.apply("a", Change::Add(v(1)));
        ix.apply("b", Change::Add(v(2)));
        let body = encode(&IndexUpdateReq { dir: "d/".into(), update: IndexUpdate::Fill(ix) });
        // the two entries (name length 8 + 1 byte + entry) swapped
        let entry = (body.len() - (8 + 2 + 4 + 8)) / 2;
        let start = body.len() - 2 * entry;
        let mut swapped = body[..start].to_vec();
        swapped.extend_from_slice(&body[start + entry..]);
        swapped.extend_from_slice(&body[start..start + entry]);
        assert_ne!(swapped, body);
        let lax: IndexUpdateReq = decode("index update", &swapped).expect("bincode reads either order");
        assert_eq!(encode(&lax), body);
        let e = decode_canonical::<IndexUpdateReq>("index update", &swapped).expect_err("refused");
        assert!(is_protocol_violation(&e) && e.to_string().contains("canonical"), "{e}");
    }

    #[test]
    fn a_record_too_large_for_a_frame_is_an_error_not_a_panic() {
        let mut ix = DirIndex::default();
        let name = "n".repeat(4000);
        for i in 0..(MAX_CONTROL_BODY as usize / 4000 + 10) {
            ix.apply(&format!("{name}{i}"), Change::Add(v(1)));
        }
        let e = try_encode("index answer", &Some(Record { index: ix, complete: true })).expect_err("over the frame limit");
        assert!(e.to_string().contains("does not fit in one frame"), "{e}");
    }
}
