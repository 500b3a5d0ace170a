//! Tests of a storage node's directory index records, without a network.
use super::*;
use fragstate_core::dir_index::Change;
use fragstate_core::version::WriteVersion;

fn view(n: usize) -> Vec<NodeInfo> {
    (0..n).map(|i| NodeInfo { id: NodeId::from(format!("node-{i}")), domain: format!("d{i}").into(), free_bytes: 1 << 30 }).collect()
}

fn v(t: u64) -> WriteVersion {
    WriteVersion { created_unix_ms: t, write_id: 1 }
}

fn add(name: &str, t: u64) -> IndexUpdate {
    IndexUpdate::Apply { name: name.into(), change: Change::Add(v(t)) }
}

const RANK: Rank = Rank { width: 2, policy: PlacementPolicy { allow_shared_domains: false } };

/// A directory `me` holds at width 2 over `view`, and one it does not.
fn held_and_not(me: &NodeId, view: &[NodeInfo]) -> (String, String) {
    let dirs: Vec<String> = (0..200).map(|i| format!("job/chk-{i}/")).collect();
    let held = dirs.iter().find(|d| holds(d, RANK, me, view)).expect("some directory is held").clone();
    let not = dirs.iter().find(|d| !holds(d, RANK, me, view)).expect("some directory is not").clone();
    (held, not)
}

#[test]
fn a_change_starts_a_partial_record_and_a_birth_makes_it_complete() {
    let all = view(6);
    let me = all[0].id.clone();
    let (dir, _) = held_and_not(&me, &all);
    let mut h = IndexHolder::new(usize::MAX);
    assert_eq!(h.read(&dir, RANK, &me, || all.clone()), None, "no record: no answer");
    h.update(&dir, &add("x", 5));
    let a = h.read(&dir, RANK, &me, || all.clone()).expect("a record");
    assert!(a.index.contains("x") && !a.complete, "a change alone makes a partial record");
    h.update(&dir, &IndexUpdate::Create);
    let a = h.read(&dir, RANK, &me, || all.clone()).expect("a record");
    assert!(a.index.contains("x") && a.complete, "the birth keeps the change that came first");
    assert_eq!(h.figures().0, 1);
}

#[test]
fn a_node_the_reader_does_not_rank_among_the_holders_answers_incomplete_and_stays_so() {
    let all = view(6);
    let me = all[0].id.clone();
    let (held, not) = held_and_not(&me, &all);
    let mut h = IndexHolder::new(usize::MAX);
    for d in [&held, &not] {
        h.update(d, &IndexUpdate::Create);
        h.update(d, &add("x", 5));
    }
    assert!(h.read(&held, RANK, &me, || all.clone()).unwrap().complete);
    let a = h.read(&not, RANK, &me, || all.clone()).unwrap();
    assert!(!a.complete && a.index.contains("x"), "not a holder: the entries, not the completeness");
    // the loss is kept: at a width that ranks this node again the record is still partial
    let wide = Rank { width: 6, ..RANK };
    assert!(!h.read(&not, wide, &me, || all.clone()).unwrap().complete);
    assert!(h.read(&held, RANK, &me, || all.clone()).unwrap().complete, "only that directory lost it");
}

#[test]
fn the_recheck_forgets_what_this_node_no_longer_holds() {
    let all = view(6);
    let me = all[0].id.clone();
    let (dir, _) = held_and_not(&me, &all);
    let mut h = IndexHolder::new(usize::MAX);
    h.update(&dir, &IndexUpdate::Create);
    h.update("other/", &IndexUpdate::Create);
    // no reader yet: no rank, nothing to rank with
    h.recheck(&me, &view(200));
    assert!(h.read(&dir, RANK, &me, || all.clone()).unwrap().complete);
    assert!(h.records.answer("other/").unwrap().complete, "never ranked: kept");
    h.recheck(&me, &all);
    assert!(h.records.answer(&dir).unwrap().complete, "still a holder");
    // nodes joined that outrank this one for the directory
    let mut grown = all.clone();
    let mut extra = 6;
    while holds(&dir, RANK, &me, &grown) {
        grown.extend(view(extra + 1).into_iter().skip(extra));
        extra += 1;
    }
    h.recheck(&me, &grown);
    assert!(!h.records.answer(&dir).unwrap().complete, "pushed out of the holders: incomplete");
    // the record nobody read is ranked with the last rank any reader sent
    assert_eq!(!h.records.answer("other/").unwrap().complete, !holds("other/", RANK, &me, &grown));
    // back among the holders, the record stays incomplete until filled
    h.recheck(&me, &all);
    assert!(!h.read(&dir, RANK, &me, || all.clone()).unwrap().complete);
}

#[test]
fn rankings_are_kept_only_for_directories_with_a_record() {
    let all = view(3);
    let me = all[0].id.clone();
    let mut h = IndexHolder::new(usize::MAX);
    for i in 0..50 {
        h.read(&format!("none-{i}/"), RANK, &me, || all.clone());
    }
    assert!(h.ranks.is_empty(), "reads of directories with no record keep nothing");
    h.update("a/", &add("x", 1));
    h.read("a/", RANK, &me, || all.clone());
    h.update("a/", &IndexUpdate::Apply { name: "x".into(), change: Change::Remove(v(1)) });
    assert_eq!(h.ranks.len(), 1);
    assert_eq!(h.prune_due(10, Instant::now()), 1, "the record held only an old removed name");
    h.recheck(&me, &all);
    assert!(h.ranks.is_empty(), "the pruned record's ranking goes at the recheck");
}

#[test]
fn pruning_at_the_ttl_runs_at_most_once_a_period() {
    let mut h = IndexHolder::new(usize::MAX);
    let t0 = Instant::now();
    for (dir, t) in [("old/", 100), ("recent/", 5_000)] {
        h.update(dir, &add("f", t));
        h.update(dir, &IndexUpdate::Apply { name: "f".into(), change: Change::Remove(v(t)) });
    }
    h.update("live/", &add("f", 100));
    assert_eq!(h.prune_due(1_000, t0), 1, "only names removed before the cut");
    assert!(h.records.answer("old/").is_none() && h.records.answer("recent/").is_some() && h.records.answer("live/").is_some());
    assert_eq!(h.prune_due(u64::MAX, t0 + PRUNE_EVERY / 2), 0, "not again within the period");
    assert_eq!(h.prune_due(u64::MAX, t0 + PRUNE_EVERY), 1);
    assert_eq!(h.figures().0, 1);
}

#[test]
fn forgetting_all_leaves_the_entries() {
    let mut h = IndexHolder::new(usize::MAX);
    h.update("a/", &IndexUpdate::Create);
    h.update("a/", &add("x", 1));
    h.forget_all();
    let a = h.records.answer("a/").unwrap();
    assert!(!a.complete && a.index.contains("x"));
}

#[test]
fn the_byte_bound_drops_records_and_counts_them() {
    let mut h = IndexHolder::new(4096);
    for i in 0..100 {
        h.update(&format!("dir-{i:03}/"), &add("name", 1));
    }
    let (records, bytes, dropped) = h.figures();
    assert!(bytes <= 4096 && dropped > 0 && records + dropped == 100, "{records} {bytes} {dropped}");
}
