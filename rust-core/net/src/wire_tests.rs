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
    assert_eq!(decode_hello(&body).unwrap().domain, "d");
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
    let f = block(read_frame(&mut r, None)).unwrap().unwrap();
    assert_eq!((f.kind, &f.body[..]), (Kind::GetManifest, &b"abc"[..]));
    assert_eq!(block(read_frame(&mut r, None)).unwrap().unwrap().kind, Kind::Finish);
    assert!(block(read_frame(&mut r, None)).unwrap().is_none());
}

#[test]
fn oversized_and_unknown_frames_are_violations_before_the_body_is_read() {
    let mut head = Vec::new();
    head.extend_from_slice(&(MAX_CONTROL_BODY + 1).to_le_bytes());
    head.push(Kind::List as u8);
    let e = block(read_frame(&mut Cursor::new(head), None)).err().unwrap();
    assert!(is_protocol_violation(&e), "{e}");
    assert!(e.to_string().contains("exceeds the limit"), "{e}");
    let e = block(read_frame(&mut Cursor::new(vec![0, 0, 0, 0, 200]), None)).err().unwrap();
    assert!(is_protocol_violation(&e) && e.to_string().contains("unknown frame kind 200"), "{e}");
    // A cell bigger than the fragment's cell size.
    let mut head = Vec::new();
    head.extend_from_slice(&(4096u32 + 17).to_le_bytes());
    head.push(Kind::Cell as u8);
    assert!(is_protocol_violation(&block(read_frame(&mut Cursor::new(head), Some(4096))).err().unwrap()));
    // Finish carries no body.
    assert!(block(read_frame(&mut Cursor::new(vec![1, 0, 0, 0, Kind::Finish as u8, 0]), None)).is_err());
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
    let e = block(read_frame(&mut Cursor::new(vec![10, 0, 0, 0, Kind::List as u8, 1, 2]), None)).err().unwrap();
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
    }
}
