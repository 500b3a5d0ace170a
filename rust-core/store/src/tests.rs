//! Unit tests of the fragment store, in memory and on disk.

use std::time::Duration;

use super::*;
use fragstate_core::delete::DeleteTarget;
use fragstate_core::format::CellFrame;
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::version::WriteVersion;

#[test]
fn a_store_directory_has_one_owner_and_slots_go_to_the_next_process() {
    let parent = tempfile::tempdir().unwrap();
    let a = FragmentStore::open_dir("a", &parent.path().join("x"), u64::MAX, false).unwrap();
    let e = FragmentStore::open_dir("b", &parent.path().join("x"), u64::MAX, false).err().unwrap();
    assert!(matches!(e, Error::StoreInUse { .. }), "{e}");
    assert!(e.to_string().contains("is in use by another process"), "{e}");
    drop(a);
    let _a_again = FragmentStore::open_dir("a", &parent.path().join("x"), u64::MAX, false).unwrap();

    let first = claim_slot(parent.path(), 2).unwrap();
    let second = claim_slot(parent.path(), 2).unwrap();
    assert_eq!(first.dir(), parent.path().join("node-0"));
    assert_eq!(second.dir(), parent.path().join("node-1"));
    let e = claim_slot(parent.path(), 2).unwrap_err().to_string();
    assert!(e.contains("all 2 are held by running processes"), "{e}");
    // A slot freed by its process (or by kill -9) goes to the next claimant.
    drop(first);
    assert_eq!(claim_slot(parent.path(), 2).unwrap().dir(), parent.path().join("node-0"));
}

fn header(path: &str, index: u8) -> FragmentHeader {
    FragmentHeader {
        path: path.into(),
        write_id: 42,
        index,
        params: CodingParams::new(2, 1, 4096, Compression::None).unwrap(),
        created_unix_ms: 0,
    }
}

fn fill(store: &FragmentStore, path: &str, cells: u32) -> FragmentKey {
    let h = header(path, 0);
    store.begin_fragment(&h).unwrap();
    for s in 0..cells {
        let cell = Bytes::from(vec![s as u8; 100]);
        store.append_cell(&h.key(), s, format::cell_checksum(&cell), cell).unwrap();
    }
    store.finish_fragment(&h.key()).unwrap();
    h.key()
}

/// The manifest of an empty object of write 42 at `path`.
fn empty_manifest(path: &str) -> Manifest {
    Manifest {
        path: path.into(),
        write_id: 42,
        revision: 0,
        length: 0,
        params: CodingParams::new(2, 1, 4096, Compression::None).unwrap(),
        holders: vec!["a".into(), "b".into(), "c".into()],
        stripes: vec![],
        created_unix_ms: 1,
        writer: "t".into(),
    }
}

#[test]
fn budget_refuses_with_numbers() {
    let store = FragmentStore::in_memory("n0", 250);
    let h = header("p", 0);
    store.begin_fragment(&h).unwrap();
    store.append_cell(&h.key(), 0, 0, Bytes::from(vec![0; 100])).unwrap();
    store.append_cell(&h.key(), 1, 0, Bytes::from(vec![0; 100])).unwrap();
    let e = store.append_cell(&h.key(), 2, 0, Bytes::from(vec![0; 100])).unwrap_err().to_string();
    assert_eq!(e, "node n0: store full: 200 of 250 bytes used, 100 more requested");
    assert_eq!(store.usage().bytes, 200);
}

#[test]
fn cells_must_arrive_in_order_and_retries_are_idempotent() {
    let store = FragmentStore::in_memory("n0", u64::MAX);
    let h = header("p", 0);
    store.begin_fragment(&h).unwrap();
    let e = store.append_cell(&h.key(), 1, 0, Bytes::from_static(b"x")).unwrap_err().to_string();
    assert!(e.contains("expected stripe 0"), "{e}");
    store.append_cell(&h.key(), 0, 7, Bytes::from_static(b"x")).unwrap();
    store.append_cell(&h.key(), 0, 7, Bytes::from_static(b"x")).unwrap();
    assert_eq!(store.usage().cells, 1);
    let e = store.append_cell(&h.key(), 0, 8, Bytes::from_static(b"y")).unwrap_err().to_string();
    assert!(e.contains("expected stripe 1"), "{e}");
}

#[test]
fn disk_store_survives_reopen_and_cuts_torn_tails() {
    let dir = tempfile::tempdir().unwrap();
    let key = {
        let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
        let key = fill(&store, "fragstate://c/j/chk-1/a", 3);
        store.put_manifest(Arc::new(empty_manifest("fragstate://c/j/chk-1/a"))).unwrap();
        key
    };
    // Simulate a crash in the middle of appending a fourth cell.
    let file = fs::read_dir(dir.path().join("fragments")).unwrap().next().unwrap().unwrap().path();
    let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
    std::io::Write::write_all(&mut f, &CellFrame { stripe: 3, len: 100, checksum: 0 }.encode()).unwrap();
    std::io::Write::write_all(&mut f, &[1u8; 40]).unwrap();
    drop(f);
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
    let u = store.usage();
    assert_eq!((u.fragments, u.cells, u.bytes, u.manifests), (1, 3, 300, 1));
    assert_eq!(store.get_cell(&key, 2).unwrap(), vec![2u8; 100]);
    assert!(store.get_cell(&key, 3).is_err());
    assert_eq!(store.list("fragstate://c/j/").len(), 1);
    // Appending continues after the cut tail.
    let cell = Bytes::from(vec![9u8; 100]);
    store.append_cell(&key, 3, format::cell_checksum(&cell), cell).unwrap();
    drop(store);
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
    assert_eq!(store.get_cell(&key, 3).unwrap(), vec![9u8; 100]);
}

#[test]
fn delete_by_prefix_and_reclaim() {
    let dir = tempfile::tempdir().unwrap();
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, false).unwrap();
    fill(&store, "job/chk-1/a", 2);
    fill(&store, "job/chk-10/a", 2);
    fill(&store, "job/chk-2/a", 2);
    let st = store.delete(&DeleteTarget::Prefix("job/chk-1/".into())).unwrap();
    assert_eq!((st.fragments, st.bytes), (1, 200));
    assert_eq!(store.usage().fragments, 2);
    assert_eq!(fs::read_dir(dir.path().join("fragments")).unwrap().count(), 2);
    // Uncommitted fragments are reclaimed only once old enough.
    assert_eq!(store.reclaim_uncommitted(Duration::from_secs(3600)).unwrap().fragments, 0);
    assert_eq!(store.reclaim_uncommitted(Duration::ZERO).unwrap().fragments, 2);
    let u = store.usage();
    assert_eq!((u.fragments, u.cells, u.bytes, u.manifests, u.budget), (0, 0, 0, 0, u64::MAX));
}

#[test]
fn unknown_layout_marker_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(STORE_MARKER), "something else").unwrap();
    let e = FragmentStore::open_dir("n0", dir.path(), u64::MAX, false).err().unwrap().to_string();
    assert!(e.contains("unknown layout marker"), "{e}");
}

#[test]
fn a_new_disk_store_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::tempdir().unwrap();
    let store = claim_slot(&parent.path().join("stores"), 2)
        .and_then(|lock| FragmentStore::open_claimed("n0", lock, u64::MAX, false))
        .unwrap();
    fill(&store, "fragstate://c/j/chk-1/a", 2);
    store.put_manifest(Arc::new(empty_manifest("fragstate://c/j/chk-1/a"))).unwrap();
    let mut seen = Vec::new();
    let mut todo = vec![parent.path().join("stores")];
    while let Some(p) = todo.pop() {
        let meta = fs::metadata(&p).unwrap();
        if meta.is_dir() {
            todo.extend(read_dir(&p).unwrap());
        }
        seen.push(format!("{:o} {}", meta.permissions().mode() & 0o777, p.display()));
        assert_eq!(meta.permissions().mode() & 0o077, 0, "{} has mode {:o}", p.display(), meta.permissions().mode() & 0o777);
    }
    // stores, node-0, LOCK, the marker, fragments/ and manifests/ with a file each
    assert!(seen.len() >= 8, "{seen:?}");
}

proptest::proptest! {
    /// A delete removes exactly what its target matches, however the stored
    /// paths share prefixes with it: the range it scans is the whole of it.
    #[test]
    fn a_delete_removes_exactly_what_its_target_matches(
        stored in proptest::collection::btree_set(("[ab/]{0,4}", 1u128..4), 0..24),
        with_manifest in proptest::collection::vec(proptest::bool::ANY, 24),
        target_path in "[ab/]{0,3}",
        kind in 0u8..4,
        write in 1u128..4,
    ) {
        let store = FragmentStore::in_memory("n0", u64::MAX);
        for (i, (path, write_id)) in stored.iter().enumerate() {
            let h = FragmentHeader { write_id: *write_id, ..header(path, 0) };
            store.begin_fragment(&h).unwrap();
            store.finish_fragment(&h.key()).unwrap();
            if with_manifest[i] {
                // (a later write of the same path replaces the manifest)
                let _ = store.put_manifest(Arc::new(Manifest { write_id: *write_id, ..empty_manifest(path) }));
            }
        }
        let target = match kind {
            0 => DeleteTarget::Path(target_path),
            1 => DeleteTarget::Prefix(target_path),
            2 => DeleteTarget::Write { path: target_path, write_id: write },
            _ => DeleteTarget::OlderWrites { path: target_path, newest: WriteVersion { created_unix_ms: 0, write_id: write } },
        };
        let keys_before = store.fragment_keys();
        let manifests_before: Vec<Arc<Manifest>> = stored.iter().filter_map(|(p, _)| store.get_manifest(p)).collect();
        let st = store.delete(&target).unwrap();
        let version = |k: &FragmentKey| WriteVersion { created_unix_ms: 0, write_id: k.write_id };
        let kept: Vec<FragmentKey> = keys_before.iter().filter(|k| !target.matches(&k.path, version(k))).cloned().collect();
        proptest::prop_assert_eq!(store.fragment_keys(), kept.clone());
        proptest::prop_assert_eq!(st.fragments as usize, keys_before.len() - kept.len());
        for m in manifests_before {
            proptest::prop_assert_eq!(store.get_manifest(&m.path).is_some(), !target.matches(&m.path, m.write_version()), "{}", m.path);
        }
    }
}
