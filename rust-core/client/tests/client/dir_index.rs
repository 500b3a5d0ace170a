//! The directory index over the in-process mesh: what a JobManager asks once
//! per checkpoint (is `chk-N/_metadata` there? is the subsumed `chk-M` empty?)
//! costs `k + m` requests a round instead of one per node, and every answer
//! equals a model of the objects, through deletes, directory deletes and
//! index holders that go down, come back, freeze or miss a change.

use std::collections::BTreeSet;
use std::sync::Arc;

use fragstate_client::client::PathKind;
use fragstate_client::mesh::Mesh;
use fragstate_client::Client;
use fragstate_core::dir_index::holders;
use fragstate_core::ids::NodeId;
use fragstate_core::placement::PlacementPolicy;
use fragstate_core::sample::noise as payload;
use fragstate_core::Error;
use fragstate_client::transport::Transport;

use crate::common::{client, params, rt, write};

/// Requests every mesh node received since `before` (from [`requests`]).
fn requests_since(mesh: &Mesh, before: u64) -> u64 {
    requests(mesh) - before
}

fn requests(mesh: &Mesh) -> u64 {
    mesh.node_ids().iter().map(|n| mesh.requests(n).unwrap()).sum()
}

/// What a scan of every node answers for `path`: the file system before the index.
async fn scanned_kind(c: &Client, path: &str) -> PathKind {
    if let Some(s) = c.stat(path).await.unwrap() {
        return PathKind::Object(s);
    }
    if c.list(&format!("{path}/")).await.unwrap().is_empty() {
        PathKind::Missing
    } else {
        PathKind::Directory
    }
}

/// A mesh of 12 nodes, a client, directory `dir` made, and its six index holders.
async fn twelve_nodes_and(dir: &str) -> (Arc<Mesh>, Client, Vec<NodeId>) {
    let mesh = Mesh::in_memory(12, 1 << 30);
    let c = client(&mesh, params(4, 2));
    c.mkdirs(dir).await.unwrap();
    let held_by = holders(dir, &mesh.live_nodes(), 6, PlacementPolicy::default());
    (mesh, c, held_by)
}

#[test]
fn a_checkpoints_questions_cost_k_plus_m_requests_a_round_on_40_nodes() {
    rt().block_on(async {
        let nodes = 40;
        let mesh = Mesh::in_memory(nodes, 1 << 30);
        let c = client(&mesh, params(4, 2));
        // the job's start: its directories are born (their parent, the base, has no index)
        c.mkdirs("fs://ns/ck/job/shared").await.unwrap();
        for n in 1..=3 {
            // Flink's JobManager, once per checkpoint: mkdirs, the state files, the
            // existence check of _metadata, then _metadata
            let chk = format!("fs://ns/ck/job/chk-{n}");
            let before = requests(&mesh);
            c.mkdirs(&chk).await.unwrap();
            let mkdirs = requests_since(&mesh, before);
            assert!(mkdirs <= 4 * 6, "checkpoint {n}: mkdirs sent {mkdirs} requests, at most 4 rounds of k + m");
            write(&c, &format!("{chk}/state"), &payload(20_000, n), 10_000).await;
            let before = requests(&mesh);
            assert_eq!(c.path_kind(&format!("{chk}/_metadata")).await.unwrap(), PathKind::Missing);
            assert_eq!(requests_since(&mesh, before), 12, "checkpoint {n}: a missing path is two rounds of k + m requests (its manifest, its parent's index)");
            write(&c, &format!("{chk}/_metadata"), &payload(1_000, n + 10), 10_000).await;
            if n > 1 {
                // the subsumed checkpoint: its files, then its directory (not recursive)
                let old = format!("fs://ns/ck/job/chk-{}", n - 1);
                for f in ["state", "_metadata"] {
                    assert_eq!(c.delete(&format!("{old}/{f}"), false).await.unwrap().objects, 1);
                }
                let before = requests(&mesh);
                assert_eq!(c.delete(&old, false).await.unwrap().objects, 0);
                let sent = requests_since(&mesh, before);
                assert!(sent <= 4 * 6, "checkpoint {n}: the subsumed directory's delete sent {sent} requests, at most 4 rounds of k + m");
                assert_eq!(c.path_kind(&old).await.unwrap(), PathKind::Missing);
                assert_eq!(scanned_kind(&c, &old).await, PathKind::Missing);
            }
        }
        let s = c.stats();
        assert!(s.index_reads_settled > 0 && s.index_reads >= s.index_reads_settled, "{s:?}");
        assert!(matches!(c.path_kind("fs://ns/ck/job/chk-3").await.unwrap(), PathKind::Directory));
        assert!(matches!(c.path_kind("fs://ns/ck/job/chk-3/_metadata").await.unwrap(), PathKind::Object(_)));
    });
}

#[test]
fn a_directory_with_files_is_not_deleted_without_recursive() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(12, 1 << 30);
        let c = client(&mesh, params(4, 2));
        c.mkdirs("fs://ns/ck/job").await.unwrap();
        write(&c, "fs://ns/ck/job/chk-1/a/b", &payload(5_000, 1), 5_000).await;
        for dir in ["fs://ns/ck/job/chk-1", "fs://ns/ck/job/chk-1/a"] {
            let e = c.delete(dir, false).await.expect_err("not empty");
            assert!(matches!(e, Error::InvalidState { .. }), "{e}");
        }
        let r = c.delete("fs://ns/ck/job/chk-1", true).await.unwrap();
        assert_eq!(r.objects, 1);
        for p in ["fs://ns/ck/job/chk-1", "fs://ns/ck/job/chk-1/a", "fs://ns/ck/job/chk-1/a/b"] {
            assert_eq!(c.path_kind(p).await.unwrap(), PathKind::Missing, "{p}");
        }
        // written again after the recursive delete: there again
        write(&c, "fs://ns/ck/job/chk-1/a/c", &payload(5_000, 2), 5_000).await;
        assert_eq!(c.path_kind("fs://ns/ck/job/chk-1/a").await.unwrap(), PathKind::Directory);
        assert_eq!(c.path_kind("fs://ns/ck/job/chk-1/a/b").await.unwrap(), PathKind::Missing);
    });
}

#[test]
fn index_holders_down_and_back_are_refilled_and_the_answers_stay_right() {
    rt().block_on(async {
        let dir = "fs://ns/ck/job/chk-7/";
        let (mesh, c, held_by) = twelve_nodes_and(dir).await;
        // m of the six down: changes still reach m + 1, reads still settle from k
        for n in &held_by[..2] {
            mesh.kill(n).unwrap();
        }
        write(&c, &format!("{dir}x"), &payload(3_000, 1), 3_000).await;
        assert!(matches!(c.path_kind(&format!("{dir}x")).await.unwrap(), PathKind::Object(_)));
        for n in &held_by[..2] {
            mesh.revive(n).unwrap();
            let back = mesh.index_answer(n, dir).unwrap().expect("it kept its record");
            assert!(!back.complete && !back.index.contains("x"), "back from down: missed x, and knows it");
        }
        // the next read settles from the others and fills the two
        let before = c.stats();
        assert_eq!(c.path_kind(&format!("{dir}y")).await.unwrap(), PathKind::Missing);
        assert_eq!(c.stats().index_reads_settled - before.index_reads_settled, 1);
        for n in &held_by[..2] {
            let filled = mesh.index_answer(n, dir).unwrap().expect("filled");
            assert!(filled.complete && filled.index.contains("x"), "read repair filled {n}");
        }
        // now the other four go down one pair at a time: the refilled pair keeps answering
        for pair in [&held_by[2..4], &held_by[4..6]] {
            for n in pair {
                mesh.kill(n).unwrap();
            }
            assert!(matches!(c.path_kind(&format!("{dir}x")).await.unwrap(), PathKind::Object(_)));
            for n in pair {
                mesh.revive(n).unwrap();
            }
            c.path_kind(&format!("{dir}z")).await.unwrap();
        }
    });
}

/// A small universe of paths, written, deleted and deleted as directories in
/// a fixed pseudo-random order, with nodes killed and revived in between
/// (one at a time: at most `m` of any directory's six holders): after every
/// step each path's kind by the index equals its kind by a model of the
/// objects. (Not a scan: the mesh has no tombstones, so a node down during
/// a delete brings its copy back, which a scan finds and the index rightly
/// does not.)
#[test]
fn answers_equal_a_model_of_the_objects_through_deletes_and_holders_down() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(12, 1 << 30);
        let c = client(&mesh, params(4, 2));
        let base = "fs://ns/ck/";
        let paths: Vec<String> = ["a", "b", "a/x", "a/y", "b/x", "a/x/1", "a/x/2", "b/x/1"].iter().map(|p| format!("{base}{p}")).collect();
        c.mkdirs(base).await.unwrap();
        let mut objects = BTreeSet::new();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        let mut down: Option<NodeId> = None;
        let mut checked = 0;
        for step in 0..150 {
            let p = &paths[next(paths.len())];
            let below = format!("{p}/");
            match next(10) {
                0..=3 => {
                    // a path is a file or a directory, never both
                    let clash = objects.iter().any(|o: &String| o.starts_with(&below) || p.starts_with(&format!("{o}/")));
                    if !clash {
                        let mut w = c.create(p, true).await.unwrap();
                        w.write(&payload(500, step as u64)).await.unwrap();
                        w.close().await.unwrap();
                        objects.insert(p.clone());
                    }
                }
                4..=5 => {
                    let r = c.delete(p, false).await;
                    let non_empty_dir = !objects.contains(p) && objects.iter().any(|o| o.starts_with(&below));
                    assert_eq!(r.is_err(), non_empty_dir, "step {step}: delete {p}: {r:?}");
                    objects.remove(p);
                }
                6 => {
                    c.delete(p, true).await.unwrap();
                    objects.retain(|o| o != p && !o.starts_with(&below));
                }
                7 => c.mkdirs(p).await.unwrap(),
                _ => match down.take() {
                    Some(n) => mesh.revive(&n).unwrap(),
                    None => {
                        let n = mesh.node_ids()[next(12)].clone();
                        mesh.kill(&n).unwrap();
                        down = Some(n);
                    }
                },
            }
            for q in &paths {
                let expected = if objects.contains(q) {
                    "object"
                } else if objects.iter().any(|o| o.starts_with(&format!("{q}/"))) {
                    "directory"
                } else {
                    "missing"
                };
                let kind = match c.path_kind(q).await.unwrap() {
                    PathKind::Object(_) => "object",
                    PathKind::Directory => "directory",
                    PathKind::Missing => "missing",
                };
                assert_eq!(kind, expected, "step {step}: {q}");
                checked += 1;
            }
        }
        let s = c.stats();
        assert!(s.index_reads_settled * 10 > s.index_reads * 9, "nearly every read settles: {s:?}");
        assert_eq!(checked, 150 * paths.len());
    });
}

/// A holder of a directory's index that answers nothing for a long time (a
/// frozen process) holds no question about the directory and no change to
/// it for the request timeout: once enough holders answered, the rest get a
/// short grace. (The holder frozen is none of the nodes the manifest
/// lookups of the paths asked go to first: a lookup of a path that is no
/// object waits for every node it asks, index or not.)
#[test]
fn a_frozen_index_holder_holds_no_read_and_no_change() {
    rt().block_on(async {
        let dir = "fs://ns/ck/job/chk-9/";
        let (mesh, c, held_by) = twelve_nodes_and(dir).await;
        let asked: Vec<NodeId> = [format!("{dir}_metadata"), "fs://ns/ck/job/chk-9".to_string()]
            .iter()
            .flat_map(|p| fragstate_core::lookup::lookup_candidates(p.as_bytes(), &mesh.live_nodes(), 6, PlacementPolicy::default()))
            .collect();
        let frozen = held_by.iter().find(|h| !asked.contains(h)).expect("an index holder no lookup asks first").clone();
        mesh.slow_down(&frozen, std::time::Duration::from_secs(60)).unwrap();
        let questions = async {
            assert_eq!(c.path_kind(&format!("{dir}_metadata")).await.unwrap(), PathKind::Missing);
            let e = c.delete("fs://ns/ck/job/chk-9", false).await;
            assert!(e.is_ok(), "{e:?}");
        };
        tokio::time::timeout(std::time::Duration::from_secs(20), questions).await.expect("the frozen holder held a read for 20 s");
    });
}

/// A holder whose record stayed complete but missed a change (a request that
/// failed: up to k - 1 may) is brought level by the next settled read, so that
/// once the others prune the removed name after the tombstones' TTL, its old
/// add cannot come back into the merge.
#[test]
fn a_complete_holder_that_missed_a_remove_is_filled_by_the_next_read() {
    use fragstate_core::dir_index::quorum::IndexUpdate;
    use fragstate_core::dir_index::Change;
    use fragstate_client::transport::Transport;
    rt().block_on(async {
        let dir = "fs://ns/ck/job/chk-11/";
        let (mesh, c, held_by) = twelve_nodes_and(dir).await;
        let x = write(&c, &format!("{dir}x"), &payload(2_000, 3), 2_000).await;
        // the remove of x reaches every holder but the first, which stays complete
        let remove = IndexUpdate::Apply { name: "x".into(), change: Change::Remove(x.write_version()) };
        for n in &held_by[1..] {
            mesh.index_update(n, dir, &remove).await.unwrap();
        }
        let behind = mesh.index_answer(&held_by[0], dir).unwrap().unwrap();
        assert!(behind.complete && behind.index.contains("x"));
        assert_eq!(c.path_kind(&format!("{dir}y")).await.unwrap(), PathKind::Missing);
        let level = mesh.index_answer(&held_by[0], dir).unwrap().unwrap();
        assert!(level.complete && !level.index.contains("x"), "the settled read filled the holder that missed the remove");
        assert_eq!(level.index, mesh.index_answer(&held_by[1], dir).unwrap().unwrap().index);
    });
}

/// A name the index still holds for an object that is gone (its removes
/// pruned while a holder kept the add, or an object deleted around the
/// index) does not make its directory look non-empty: the object the index
/// names is checked against its manifest.
#[test]
fn a_stale_name_in_the_index_does_not_keep_a_directory() {
    use fragstate_client::transport::Transport;
    use fragstate_core::delete::DeleteTarget;
    rt().block_on(async {
        let dir = "fs://ns/ck/job/chk-12/";
        let (mesh, c, _) = twelve_nodes_and(dir).await;
        let path = format!("{dir}x");
        write(&c, &path, &payload(2_000, 4), 2_000).await;
        for n in mesh.node_ids() {
            mesh.delete(&n, &DeleteTarget::Path(path.clone())).await.unwrap();
        }
        assert_eq!(c.path_kind(&path).await.unwrap(), PathKind::Missing);
        assert_eq!(c.path_kind("fs://ns/ck/job/chk-12").await.unwrap(), PathKind::Missing);
        assert_eq!(c.delete("fs://ns/ck/job/chk-12", false).await.unwrap().objects, 0);
    });
}

/// Holders that lost their records' completeness without losing their
/// contents (m + 1 of them declared dead at once: SWIM under a stalled
/// machine) leave too few complete answers to settle a read. The next read
/// rebuilds the record from every answer and a listing of the directory, so
/// the directory's questions settle again, right, and cost two rounds of
/// `k + m` requests again instead of one listing of every node each.
#[test]
fn a_directory_whose_holders_lost_their_completeness_settles_again() {
    rt().block_on(async {
        let dir = "fs://ns/ck/job/shared/";
        let (mesh, c, held_by) = twelve_nodes_and(dir).await;
        write(&c, &format!("{dir}x"), &payload(2_000, 5), 2_000).await;
        for n in &held_by[..3] {
            mesh.kill(n).unwrap();
            mesh.revive(n).unwrap();
        }
        let complete = held_by.iter().filter(|n| mesh.index_answer(n, dir).unwrap().is_some_and(|r| r.complete)).count();
        assert_eq!(complete, 3, "three complete of six: fewer than k");
        // a file written and one deleted while the record is rebuilt are kept right
        write(&c, &format!("{dir}y"), &payload(2_000, 6), 2_000).await;
        assert_eq!(c.delete(&format!("{dir}x"), false).await.unwrap().objects, 1);
        assert_eq!(c.path_kind(&format!("{dir}z")).await.unwrap(), PathKind::Missing);
        for n in &held_by {
            let r = mesh.index_answer(n, dir).unwrap().expect("a record");
            assert!(r.complete && r.index.contains("y") && !r.index.contains("x"), "{n}: rebuilt and complete: {r:?}");
        }
        let before = (requests(&mesh), c.stats());
        assert_eq!(c.path_kind(&format!("{dir}w")).await.unwrap(), PathKind::Missing);
        assert_eq!(requests_since(&mesh, before.0), 12, "settled again: two rounds of k + m");
        assert_eq!(c.stats().index_reads_settled - before.1.index_reads_settled, 1);
        assert!(matches!(c.path_kind("fs://ns/ck/job/shared").await.unwrap(), PathKind::Directory));
        assert!(matches!(c.path_kind(&format!("{dir}y")).await.unwrap(), PathKind::Object(_)));
    });
}

/// Commits into a directory this client has not checked yet (a new
/// checkpoint's files, written by several subtasks at once) wait for one
/// check of it: one read of the directory, one of its parent and one birth,
/// not one of each per commit (without the per-directory lock: 32 reads). And
/// the creates read no index: in a cluster no larger than the create window
/// (12 nodes here) a create's lookup read the parent's index (18 reads).
#[test]
fn concurrent_commits_into_a_new_directory_check_it_once() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(12, 1 << 30);
        let c = client(&mesh, params(4, 2));
        c.mkdirs("fs://ns/ck/job").await.unwrap();
        // every request takes a while, so that the sixteen commits overlap
        for n in mesh.node_ids() {
            mesh.slow_down(&n, std::time::Duration::from_millis(5)).unwrap();
        }
        let before = c.stats();
        let writes = (0..16).map(|i| {
            let c = &c;
            async move { write(c, &format!("fs://ns/ck/job/chk-1/f{i}"), &payload(1_000, i), 1_000).await }
        });
        futures::future::join_all(writes).await;
        let reads = c.stats().index_reads - before.index_reads;
        assert!(reads <= 2, "16 concurrent commits into a new directory read {reads} indexes (its own and its parent's once)");
        for i in 0..16 {
            assert!(matches!(c.path_kind(&format!("fs://ns/ck/job/chk-1/f{i}")).await.unwrap(), PathKind::Object(_)));
        }
        assert!(matches!(c.path_kind("fs://ns/ck/job/chk-1").await.unwrap(), PathKind::Directory));
    });
}
