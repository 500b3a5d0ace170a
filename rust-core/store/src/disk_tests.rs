//! Unit tests of the disk store's resource bounds: open files, reclaim of
//! idle uploads, failed appends, and free bytes from the file system.

use std::thread::sleep;
use std::time::{Duration, Instant};

use super::*;
use fragstate_core::format::CELL_FRAME_HEADER_LEN;
use fragstate_core::params::{CodingParams, Compression};

fn header(path: &str, index: u8) -> FragmentHeader {
    FragmentHeader {
        path: path.into(),
        write_id: 7,
        index,
        params: CodingParams::new(2, 1, 4096, Compression::None).unwrap(),
        created_unix_ms: 0,
    }
}

fn cell(path: &str, stripe: u32) -> Bytes {
    let seed = xxh3_128(path.as_bytes()) as u8;
    Bytes::from((0..100 + stripe as usize).map(|i| seed.wrapping_add(i as u8).wrapping_add(stripe as u8)).collect::<Vec<u8>>())
}

fn append(store: &FragmentStore, key: &FragmentKey, stripe: u32) -> Result<()> {
    let c = cell(&key.path, stripe);
    store.append_cell(key, stripe, format::cell_checksum(&c), c)
}

/// The process's open file descriptors whose target is inside `dir`.
fn open_fds_under(dir: &Path) -> usize {
    let dir = fs::canonicalize(dir).unwrap();
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.starts_with(&dir))
        .count()
}

#[test]
fn open_files_stay_within_the_bound_however_many_fragments_are_stored() {
    const BOUND: usize = 16;
    const FRAGMENTS: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, false).unwrap().with_max_open_files(BOUND);
    let frags = dir.path().join("fragments");
    let mut keys = Vec::new();
    for i in 0..FRAGMENTS {
        let h = header(&format!("fragstate://c/j/chk-1/{i}"), (i % 3) as u8);
        store.begin_fragment(&h).unwrap();
        for s in 0..3 {
            append(&store, &h.key(), s).unwrap();
        }
        store.finish_fragment(&h.key()).unwrap();
        keys.push(h.key());
        assert!(open_fds_under(&frags) <= BOUND, "{} fragment files open after writing {} fragments", open_fds_under(&frags), i + 1);
    }
    let mut most = 0;
    for round in 0..2 {
        for i in 0..keys.len() {
            let key = &keys[(i * 7 + round) % keys.len()];
            for s in 0..3 {
                assert_eq!(store.get_cell(key, s).unwrap(), cell(&key.path, s), "{} stripe {s}", key.path);
            }
            most = most.max(open_fds_under(&frags));
        }
    }
    assert!(most <= BOUND, "{most} fragment files open while reading, bound {BOUND}");
    // The whole store directory: the bound plus the LOCK file.
    assert!(open_fds_under(dir.path()) <= BOUND + 1, "{} files open under the store directory", open_fds_under(dir.path()));
    // Reopened, the store still reads everything with the default bound.
    drop(store);
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, false).unwrap();
    for key in &keys {
        assert_eq!(store.get_cell(key, 2).unwrap(), cell(&key.path, 2));
    }
    assert!(open_fds_under(&frags) <= DEFAULT_MAX_OPEN_FILES);
}

#[test]
fn reclaim_spares_uploads_that_keep_receiving_cells() {
    let dir = tempfile::tempdir().unwrap();
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, false).unwrap();
    let age = Duration::from_millis(400);
    let busy = header("fragstate://c/j/chk-1/busy", 0).key();
    let idle = header("fragstate://c/j/chk-1/idle", 0).key();
    store.begin_fragment(&header("fragstate://c/j/chk-1/busy", 0)).unwrap();
    store.begin_fragment(&header("fragstate://c/j/chk-1/idle", 0)).unwrap();
    append(&store, &idle, 0).unwrap();
    // The busy upload lasts three times the reclaim age, one cell every 50 ms.
    let start = Instant::now();
    let mut stripe = 0;
    while start.elapsed() < age * 3 {
        append(&store, &busy, stripe).unwrap();
        stripe += 1;
        store.reclaim_uncommitted(age).unwrap();
        assert!(store.fragment_keys().contains(&busy), "the busy upload was reclaimed after {:?}", start.elapsed());
        sleep(Duration::from_millis(50));
    }
    store.finish_fragment(&busy).unwrap();
    assert_eq!(store.fragment_keys(), vec![busy.clone()], "the idle upload is reclaimed, the busy one is not");
    assert_eq!(store.usage().cells, stripe as u64);
    // Once it is idle for the reclaim age (never committed), it goes too.
    sleep(age + Duration::from_millis(50));
    assert_eq!(store.reclaim_uncommitted(age).unwrap().fragments, 1);
    assert_eq!(fs::read_dir(dir.path().join("fragments")).unwrap().count(), 0);
}

/// The file system's available bytes under `dir`.
fn statvfs_available(dir: &Path) -> u64 {
    let s = rustix::fs::statvfs(dir).unwrap();
    s.f_bavail.saturating_mul(s.f_frsize)
}

#[test]
fn an_unbudgeted_disk_store_reports_the_file_systems_free_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let before = statvfs_available(dir.path());
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, false).unwrap();
    let h = header("fragstate://c/j/chk-1/a", 0);
    store.begin_fragment(&h).unwrap();
    append(&store, &h.key(), 0).unwrap();
    let free = store.usage().free_bytes();
    let after = statvfs_available(dir.path());
    assert!(free <= before.max(after), "free bytes {free}, the file system has {before} … {after} available");
    assert!(free > 0);
    // A budget below what the disk has left still binds.
    let budgeted = FragmentStore::in_memory("m", 1000);
    assert_eq!(budgeted.usage().free_bytes(), 1000);
}

fn disk(store: &FragmentStore) -> &Disk {
    store.disk().unwrap()
}

#[test]
fn a_failed_append_leaves_no_partial_frame_and_a_reopen_finds_the_whole_cells() {
    let dir = tempfile::tempdir().unwrap();
    let frags = dir.path().join("fragments");
    let h = header("fragstate://c/j/chk-1/a", 0);
    let first = header("fragstate://c/j/chk-1/b", 1);
    let whole_len = {
        let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
        store.begin_fragment(&h).unwrap();
        append(&store, &h.key(), 0).unwrap();
        append(&store, &h.key(), 1).unwrap();
        let file = fs::read_dir(&frags).unwrap().next().unwrap().unwrap().path();
        let whole_len = fs::metadata(&file).unwrap().len();
        // The disk fills up in the middle of the third cell: its frame and 4
        // of its bytes reach the file.
        *lock(&disk(&store).short_write) = Some(CELL_FRAME_HEADER_LEN + 4);
        let e = append(&store, &h.key(), 2).unwrap_err().to_string();
        assert!(e.contains("append to fragstate://c/j/chk-1/a fragment 0") && e.contains("no space left"), "{e}");
        assert_eq!(fs::metadata(&file).unwrap().len(), whole_len, "the partial frame is cut off");
        let u = store.usage();
        assert_eq!((u.fragments, u.cells, u.bytes), (1, 2, 201));
        // A fragment whose first cell fails is removed with its file.
        store.begin_fragment(&first).unwrap();
        *lock(&disk(&store).short_write) = Some(3);
        append(&store, &first.key(), 0).unwrap_err();
        assert_eq!(store.fragment_keys(), vec![h.key()]);
        assert_eq!(fs::read_dir(&frags).unwrap().count(), 1, "no file without a whole cell");
        whole_len
    };
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
    let u = store.usage();
    assert_eq!((u.fragments, u.cells, u.bytes), (1, 2, 201));
    assert_eq!(store.get_cell(&h.key(), 1).unwrap(), cell(&h.key().path, 1));
    // The writer's retry of the failed stripe lands where the cut left off.
    append(&store, &h.key(), 2).unwrap();
    store.finish_fragment(&h.key()).unwrap();
    drop(store);
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
    assert_eq!(store.get_cell(&h.key(), 2).unwrap(), cell(&h.key().path, 2));
    let file = fs::read_dir(&frags).unwrap().next().unwrap().unwrap().path();
    assert_eq!(fs::metadata(&file).unwrap().len(), whole_len + (CELL_FRAME_HEADER_LEN + 102) as u64);
}

#[test]
fn a_cell_beyond_what_the_file_system_has_left_is_refused_with_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, false).unwrap();
    let h = header("fragstate://c/j/chk-1/a", 0);
    store.begin_fragment(&h).unwrap();
    append(&store, &h.key(), 0).unwrap();
    disk(&store).space.pin(150, store.usage().bytes);
    assert_eq!(store.usage().free_bytes(), 150);
    append(&store, &h.key(), 1).unwrap(); // 16 + 101 bytes of 150
    let e = append(&store, &h.key(), 2).unwrap_err();
    assert!(matches!(e, Error::StoreFull { .. }), "{e}");
    // 201 bytes held; the disk has 150 − 101 = 49 left (the sample less the
    // cell bytes written since); the third cell needs its frame too.
    assert_eq!(e.to_string(), "node n0: store full: 201 of 250 bytes used, 118 more requested");
    assert_eq!(store.usage().cells, 2);
}

#[test]
fn scrub_rewrites_a_bad_cell_in_place_and_appends_a_lost_tail() {
    let dir = tempfile::tempdir().unwrap();
    let h = header("fragstate://c/j/chk-1/scrubbed", 1);
    let key = h.key();
    {
        let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
        store.begin_fragment(&h).unwrap();
        for s in 0..3 {
            append(&store, &key, s).unwrap();
        }
        store.finish_fragment(&key).unwrap();
        let m = Manifest {
            path: h.path.clone(),
            write_id: 7,
            revision: 0,
            length: 1,
            params: h.params,
            holders: vec![],
            stripes: vec![],
            created_unix_ms: 0,
            writer: "t".into(),
        };
        // Committed only while the manifest names the write.
        assert!(store.committed_fragments().is_empty());
        lock(&store.state).manifests.insert(Arc::new(m.clone()));
        assert_eq!(store.committed_fragments().iter().map(|f| f.0.clone()).collect::<Vec<_>>(), vec![key.clone()]);
        lock(&store.state).manifests.insert(Arc::new(Manifest { write_id: 8, ..m }));
        assert!(store.committed_fragments().is_empty());

        store.corrupt_cell(&key, 1).unwrap();
        assert_ne!(store.get_cell(&key, 1).unwrap(), cell(&key.path, 1));
        let good = cell(&key.path, 1);
        assert!(store.rewrite_cell(&key, 1, format::cell_checksum(&good), good.clone()).unwrap());
        assert_eq!(store.get_cell(&key, 1).unwrap(), good);
        // Another length is not rewritten in place; a stripe past the next is refused.
        let e = store.rewrite_cell(&key, 1, 0, Bytes::from(vec![0u8; 5])).unwrap_err().to_string();
        assert!(e.contains("not rewritten in place"), "{e}");
        assert!(store.rewrite_cell(&key, 5, 0, good).is_err());
        let other = FragmentKey { index: 2, ..key.clone() };
        assert!(!store.rewrite_cell(&other, 0, 0, Bytes::from_static(b"x")).unwrap(), "a fragment not held");
    }
    // The rewrite is on disk: a reopened store reads the good cell. Then the
    // file loses its last cell and a half (a torn tail is cut on open).
    let file = fs::read_dir(dir.path().join("fragments")).unwrap().next().unwrap().unwrap().path();
    {
        let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
        assert_eq!(store.get_cell(&key, 1).unwrap(), cell(&key.path, 1));
    }
    let len = fs::metadata(&file).unwrap().len();
    fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(len - 50).unwrap();
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
    assert!(matches!(store.get_cell(&key, 2), Err(Error::CellNotFound { .. })));
    let c2 = cell(&key.path, 2);
    assert!(store.rewrite_cell(&key, 2, format::cell_checksum(&c2), c2.clone()).unwrap());
    drop(store);
    let store = FragmentStore::open_dir("n0", dir.path(), u64::MAX, true).unwrap();
    for s in 0..3 {
        assert_eq!(store.get_cell(&key, s).unwrap(), cell(&key.path, s), "stripe {s}");
    }
    assert_eq!(fs::metadata(&file).unwrap().len(), len);
}
