//! The scrub planner driven by a made-up clock: every cell once per pass,
//! reports first, the rate kept by counting bytes, the verdicts.

use super::*;
use fragstate_core::format::StripeInfo;
use fragstate_core::params::{CodingParams, Compression};
use proptest::prelude::*;

const CELL: u64 = 4096;

fn me() -> NodeId {
    NodeId::from("me")
}

/// A manifest of `stripes` full stripes (k = 2, m = 1) whose fragment `index` is on `holder`.
fn manifest(path: &str, write_id: u128, stripes: usize, index: usize, holder: &NodeId) -> Arc<Manifest> {
    let params = CodingParams::new(2, 1, CELL, Compression::None).unwrap();
    let mut holders: Vec<NodeId> = (0..3).map(|i| NodeId::from(format!("n{i}").as_str())).collect();
    holders[index] = holder.clone();
    let info = |s: usize| StripeInfo { stored_len: 2 * CELL as u32, compressed: false, cell_checksums: vec![s as u64; 3] };
    Arc::new(Manifest {
        path: path.into(),
        write_id,
        revision: 0,
        length: stripes as u64 * 2 * CELL,
        params,
        holders,
        stripes: (0..stripes).map(info).collect(),
        created_unix_ms: 1,
        writer: "t".into(),
    })
}

fn key(path: &str, write_id: u128, index: u8) -> FragmentKey {
    FragmentKey { path: Arc::from(path), write_id, index }
}

fn held(n: usize, stripes: usize) -> Vec<(FragmentKey, Arc<Manifest>)> {
    (0..n).map(|i| {
        let p = format!("/o{i}");
        (key(&p, 7, 1), manifest(&p, 7, stripes, 1, &me()))
    })
    .collect()
}

fn cfg(rate: u64) -> ScrubConfig {
    ScrubConfig { rate, pass_interval: Duration::from_secs(60), max_reports: 4 }
}

/// Runs the planner until `end`, sleeping as told; returns the cells verified and when.
fn drive(p: &mut ScrubPlanner, work: &[(FragmentKey, Arc<Manifest>)], end: Duration) -> Vec<(Duration, Task)> {
    let mut now = Duration::ZERO;
    let mut out = Vec::new();
    while now < end {
        match p.next(now) {
            Step::Verify(t) => out.push((now, t)),
            Step::Wait(d) => now += d,
            Step::NewPass => p.begin_pass(now, work.to_vec()),
            Step::Idle => break,
        }
    }
    out
}

#[test]
fn a_pass_verifies_every_cell_once_in_order_then_waits_for_the_interval() {
    let work = held(3, 4);
    let mut p = ScrubPlanner::new(cfg(u64::MAX / 4), Duration::ZERO);
    // The first pass waits until the node has had time to meet its peers.
    assert!(matches!(p.next(Duration::ZERO), Step::Wait(d) if d == FIRST_PASS_DELAY));
    assert!(matches!(p.next(FIRST_PASS_DELAY), Step::NewPass));
    p.begin_pass(Duration::ZERO, work.clone());
    let mut seen = Vec::new();
    let mut now = Duration::ZERO;
    loop {
        assert_eq!(p.pass_done(), seen.len() == 12);
        match p.next(now) {
            Step::Verify(t) => seen.push(t.cell),
            // The rate's wait (tiny at this rate) until every cell is done, then the interval's.
            Step::Wait(d) if seen.len() < 12 => now += d,
            Step::Wait(d) => {
                assert_eq!(now + d, Duration::from_secs(60), "the next pass waits for the interval");
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(now < Duration::from_secs(1), "{now:?}");
    let want: Vec<CellRef> = work.iter().flat_map(|(k, _)| (0..4).map(|s| CellRef { key: k.clone(), stripe: s })).collect();
    assert_eq!(seen, want);
    assert!(matches!(p.next(Duration::from_secs(60)), Step::NewPass));
}

#[test]
fn only_fragments_this_node_holds_for_the_committed_write_are_scrubbed() {
    let other = NodeId::from("other");
    let held = vec![
        (key("/a", 1, 1), manifest("/a", 1, 2, 1, &me())),
        // The manifest moved fragment 1 elsewhere (repaired while this node was away).
        (key("/b", 1, 1), manifest("/b", 1, 2, 1, &other)),
        // A fragment of another write than the committed one.
        (key("/c", 2, 1), manifest("/c", 1, 2, 1, &me())),
        (key("/0", 1, 1), manifest("/0", 1, 2, 1, &me())),
    ];
    let work = pass_work(&me(), held);
    let paths: Vec<&str> = work.iter().map(|(k, _)| &*k.path).collect();
    assert_eq!(paths, vec!["/0", "/a"]);
}

#[test]
fn reported_cells_go_first_once_each_and_the_queue_is_bounded() {
    let work = held(1, 8);
    let mut p = ScrubPlanner::new(cfg(CELL), Duration::ZERO);
    p.begin_pass(Duration::ZERO, work.clone());
    let (k, m) = &work[0];
    let task = |s: u32| Task { cell: CellRef { key: k.clone(), stripe: s }, manifest: m.clone(), reported: false };
    assert!(p.report(task(5)));
    assert!(!p.report(task(5)), "a cell already queued is not queued twice");
    assert!(!p.report(task(8)), "a stripe the manifest does not have");
    for s in 0..3 {
        assert!(p.report(task(s)));
    }
    assert!(!p.report(task(3)), "the queue holds 4");
    assert_eq!(p.pending_reports(), 4);
    // Reports are served at once, even in debt; then the pass waits for the rate.
    let order: Vec<u32> = (0..4)
        .map(|_| match p.next(Duration::ZERO) {
            Step::Verify(t) => {
                assert!(t.reported);
                t.cell.stripe
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(order, vec![5, 0, 1, 2]);
    assert!(matches!(p.next(Duration::ZERO), Step::Wait(_)));
    // Served reports may be reported again.
    assert!(p.report(task(5)));
}

#[test]
fn rate_zero_scrubs_nothing_but_still_serves_reports() {
    let work = held(2, 2);
    let mut p = ScrubPlanner::new(cfg(0), Duration::ZERO);
    assert!(matches!(p.next(Duration::ZERO), Step::Idle));
    let (k, m) = &work[1];
    assert!(p.report(Task { cell: CellRef { key: k.clone(), stripe: 1 }, manifest: m.clone(), reported: false }));
    assert!(matches!(p.next(Duration::ZERO), Step::Verify(t) if t.cell.stripe == 1 && t.reported));
    assert!(matches!(p.next(Duration::from_secs(3600)), Step::Idle));
}

#[test]
fn verdicts() {
    let m = manifest("/v", 1, 1, 0, &me());
    let cell = Bytes::from(vec![9u8; CELL as usize]);
    let mut m2 = (*m).clone();
    m2.stripes[0].cell_checksums[0] = cell_checksum(&cell);
    let t = Task { cell: CellRef { key: key("/v", 1, 0), stripe: 0 }, manifest: Arc::new(m2), reported: false };
    assert_eq!(classify(&t, &Ok(cell.clone()), true), Verdict::Good);
    let mut flipped = cell.to_vec();
    flipped[100] ^= 1;
    assert_eq!(classify(&t, &Ok(Bytes::from(flipped)), true), Verdict::Corrupt);
    assert_eq!(classify(&t, &Ok(cell.slice(..100)), true), Verdict::Torn);
    let eof = Error::io("read", std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
    assert_eq!(classify(&t, &Err(eof), true), Verdict::Torn);
    let nf = || Error::CellNotFound { path: "/v".into(), index: 0, stripe: 0, node: "me".into() };
    assert_eq!(classify(&t, &Err(nf()), true), Verdict::Missing);
    assert_eq!(classify(&t, &Err(nf()), false), Verdict::Gone);
    assert!(Verdict::Corrupt.needs_rebuild() && Verdict::Torn.needs_rebuild() && Verdict::Missing.needs_rebuild());
    assert!(!Verdict::Good.needs_rebuild() && !Verdict::Gone.needs_rebuild());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Counting, not timing: over any span the planner lets at most
    /// `rate × (span + 1 s)` plus one cell be read, and (with enough work)
    /// at least `rate × span` minus two cells.
    #[test]
    fn scrub_keeps_its_rate(rate_cells in 1u64..64, secs in 1u64..120, objects in 1usize..6, stripes in 1usize..50, reports in 0usize..4) {
        let rate = rate_cells * CELL;
        let work = held(objects, stripes);
        let mut p = ScrubPlanner::new(ScrubConfig { rate, pass_interval: Duration::ZERO, max_reports: 16 }, Duration::ZERO);
        p.begin_pass(Duration::ZERO, work.clone());
        for r in 0..reports {
            let (k, m) = &work[r % work.len()];
            p.report(Task { cell: CellRef { key: k.clone(), stripe: 0 }, manifest: m.clone(), reported: false });
        }
        let end = Duration::from_secs(secs);
        let verified = drive(&mut p, &work, end);
        let bytes: u64 = verified.iter().filter(|(t, _)| *t < end).map(|(_, t)| t.expected_len() as u64).sum();
        prop_assert!(bytes <= rate * (secs + 1) + CELL, "{bytes} bytes in {secs} s at {rate} B/s");
        prop_assert!(bytes + 2 * CELL >= rate * secs, "{bytes} bytes in {secs} s at {rate} B/s: too slow");
        // Every window of one second reads at most two seconds' worth plus a cell.
        for (i, (t0, _)) in verified.iter().enumerate() {
            let w: u64 = verified[i..].iter().take_while(|(t, _)| *t < *t0 + Duration::from_secs(1)).map(|(_, t)| t.expected_len() as u64).sum();
            prop_assert!(w <= 2 * rate + (1 + reports as u64) * CELL, "{w} bytes in the second from {t0:?}");
        }
    }
}
