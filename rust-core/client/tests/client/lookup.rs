//! Manifest lookups by path (`fragstate_core::lookup`): in steady state a
//! read asks only the `k + m` nodes placement ranks first for the path; when
//! their answers cannot settle it, every other live node, and the newest
//! write is still what a read returns.

use fragstate_client::mesh::Mesh;
use fragstate_client::transport::Transport;
use fragstate_client::{Client, ClientConfig, ClientStats};
use fragstate_core::ids::NodeId;
use fragstate_core::lookup::{create_candidates, lookup_candidates};
use fragstate_core::Error;
use fragstate_core::placement::PlacementPolicy;
use fragstate_core::sample::noise as payload;

use crate::common::{client, params, read, rt, write};

const NODES: usize = 16;

/// (lookups, requests, lookups settled by the first round) since `before`.
fn lookups_since(c: &Client, before: &ClientStats) -> (u64, u64, u64) {
    let now = c.stats();
    (
        now.manifest_lookups - before.manifest_lookups,
        now.manifest_requests - before.manifest_requests,
        now.manifest_lookups_by_path - before.manifest_lookups_by_path,
    )
}

fn first_asked(mesh: &Mesh, path: &str) -> Vec<NodeId> {
    lookup_candidates(path.as_bytes(), &mesh.live_nodes(), 6, PlacementPolicy::default())
}

#[test]
fn a_read_in_steady_state_asks_only_the_k_plus_m_nodes_placement_ranks_first() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(NODES, 1 << 30);
        let c = client(&mesh, params(4, 2));
        for i in 0..20 {
            let path = format!("job/chk-1/state-{i}");
            let data = payload(50_000, i);
            let manifest = write(&c, &path, &data, 10_000).await;
            let mut holders = manifest.holders.clone();
            let mut asked = first_asked(&mesh, &path);
            holders.sort();
            asked.sort();
            assert_eq!(asked, holders, "{path}: the nodes asked first are the holders");
            let before = c.stats();
            assert_eq!(read(&c, &path).await.unwrap(), data);
            assert_eq!(lookups_since(&c, &before), (1, 6, 1), "{path}: one lookup, one round of k + m requests");
        }
    });
}

#[test]
fn an_object_placed_while_the_first_ranked_nodes_were_down_is_found_by_asking_everyone() {
    rt().block_on(async {
        // 3 of the 6 first-ranked nodes down while writing: the object goes to
        // the next ones, and after they come back the first round finds at most
        // 3 copies among its 6 — too few to rule out a newer write elsewhere —
        // then 4, 5 and 6 down: 2, 1 and no copies.
        for down in 3..=6 {
            let mesh = Mesh::in_memory(NODES, 1 << 30);
            let c = client(&mesh, params(4, 2));
            let path = format!("job/chk-2/state-{down}");
            let first = first_asked(&mesh, &path);
            for n in &first[..down] {
                mesh.kill(n).unwrap();
            }
            let data = payload(30_000, down as u64);
            let manifest = write(&c, &path, &data, 10_000).await;
            for n in &first[..down] {
                mesh.revive(n).unwrap();
            }
            let copies_first = manifest.holders.iter().filter(|h| first.contains(h)).count();
            assert_eq!(copies_first, 6 - down, "the holders among the first-ranked");
            let before = c.stats();
            assert_eq!(read(&c, &path).await.unwrap(), data, "{down} down while writing");
            let settled = u64::from(copies_first > 2);
            let requests = if settled == 1 { 6 } else { NODES as u64 };
            assert_eq!(lookups_since(&c, &before), (1, requests, settled), "{down} down while writing");
        }
    });
}

#[test]
fn a_path_that_does_not_exist_is_missing_only_after_every_node_said_so() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(NODES, 1 << 30);
        let c = client(&mesh, params(4, 2));
        let before = c.stats();
        assert!(c.stat("job/chk-3/never-written").await.unwrap().is_none());
        assert_eq!(lookups_since(&c, &before), (1, NODES as u64, 0));
    });
}

#[test]
fn an_overwrite_is_read_after_its_old_holders_return() {
    rt().block_on(async {
        // The old write on the first-ranked nodes; two of them (m) down while
        // the path is overwritten, so they keep the old write's copies. Back,
        // they are asked first again: the newer write must still win.
        let mesh = Mesh::in_memory(NODES, 1 << 30);
        let c = client(&mesh, params(4, 2));
        let path = "job/shared/_metadata";
        let old = write(&c, path, &payload(20_000, 1), 5_000).await;
        for n in &old.holders[..2] {
            mesh.kill(n).unwrap();
        }
        let newer = payload(25_000, 2);
        let mut w = c.create(path, true).await.unwrap();
        w.write(&newer).await.unwrap();
        w.close().await.unwrap();
        for n in &old.holders[..2] {
            mesh.revive(n).unwrap();
        }
        assert_eq!(read(&c, path).await.unwrap(), newer);
    });
}

#[test]
fn a_delete_asks_and_reaches_only_the_holders_of_the_path() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(NODES, 1 << 30);
        let c = client(&mesh, params(4, 2));
        let path = "job/chk-3/state";
        let manifest = write(&c, path, &payload(40_000, 3), 10_000).await;
        let nodes = mesh.node_ids();
        let index_holders = fragstate_core::dir_index::holders("job/chk-3/", &mesh.live_nodes(), 6, PlacementPolicy::default());
        let before: Vec<u64> = nodes.iter().map(|n| mesh.requests(n).unwrap()).collect();
        let report = c.delete(path, false).await.unwrap();
        assert_eq!((report.objects, report.removed.manifests, report.removed.fragments), (1, 6, 6));
        for (n, b) in nodes.iter().zip(before) {
            let sent = mesh.requests(n).unwrap() - b;
            // a holder: the lookup's request and the delete; a holder of the
            // directory's index: the name's removal; any other node: nothing
            let expected = 2 * u64::from(manifest.holders.contains(n)) + u64::from(index_holders.contains(n));
            assert_eq!(sent, expected, "requests to {n}");
            assert!(mesh.store(n).unwrap().get_manifest(path).is_none());
        }
        assert!(read(&c, path).await.is_err());
        // a path that does not exist: the lookup asks everyone, and nothing is deleted
        let report = c.delete("job/chk-3/none", false).await.unwrap();
        assert_eq!((report.objects, report.removed.manifests), (0, 0));
    });
}

#[test]
fn a_create_asks_three_times_k_plus_m_nodes_in_one_round_and_everyone_only_when_unsure() {
    rt().block_on(async {
        let nodes = 40;
        let mesh = Mesh::in_memory(nodes, 1 << 30);
        let c = client(&mesh, params(4, 2));
        let window = |path: &str| create_candidates(path.as_bytes(), &mesh.live_nodes(), 6, PlacementPolicy::default());
        // a new path: 18 of the 40 asked, none holds it, the write goes ahead
        let before = c.stats();
        write(&c, "job/chk-4/new", &payload(20_000, 7), 10_000).await;
        assert_eq!(lookups_since(&c, &before), (1, 18, 1));
        // it exists now: a create without overwrite fails, from the same 18
        let before = c.stats();
        let e = c.create("job/chk-4/new", false).await.err().expect("the path exists");
        assert!(matches!(e, Error::AlreadyExists { .. }), "{e}");
        assert_eq!(lookups_since(&c, &before), (1, 18, 1));
        // written while its six first-ranked nodes were down (holders ranked further down):
        // still in the window, so a create still finds it
        let path = "job/chk-4/moved";
        let first = first_asked(&mesh, path);
        for n in &first {
            mesh.kill(n).unwrap();
        }
        let manifest = write(&c, path, &payload(10_000, 8), 10_000).await;
        for n in &first {
            mesh.revive(n).unwrap();
        }
        assert!(manifest.holders.iter().all(|h| window(path).contains(h)), "the holders rank within the window");
        assert!(matches!(c.create(path, false).await.err(), Some(Error::AlreadyExists { .. })));
        // a node of the window that does not answer: it might hold the path, so a read's
        // lookup follows; its first round finds nothing and the directory index of
        // job/chk-4/ says the path is no object, so no other node is asked
        let path = "job/chk-4/unsure";
        mesh.fail_requests(&window(path)[0], 1).unwrap();
        let before = c.stats();
        c.create(path, false).await.unwrap().abort().await;
        let (lookups, requests, settled) = lookups_since(&c, &before);
        assert_eq!((lookups, settled), (1, 0));
        assert_eq!(requests, 18 + 6, "the window, then the read lookup's first round");
        // without the index (every client of the cluster off): every node
        let plain = Client::new(mesh.clone(), ClientConfig { params: params(4, 2), directory_index: false, ..ClientConfig::default() }).unwrap();
        mesh.fail_requests(&window(path)[0], 1).unwrap();
        let before = plain.stats();
        plain.create(path, false).await.unwrap().abort().await;
        assert_eq!(lookups_since(&plain, &before).1, 18 + nodes as u64, "the window, then every node");
    });
}

#[test]
fn a_file_check_asks_the_create_window_where_a_stat_of_a_path_that_is_no_file_asks_everyone() {
    rt().block_on(async {
        let nodes = 40;
        let mesh = Mesh::in_memory(nodes, 1 << 30);
        let c = client(&mesh, params(4, 2));
        write(&c, "job/chk-5/state", &payload(30_000, 9), 10_000).await;
        // a directory's creation checks each ancestor: none is a file, 18 requests each
        for dir in ["job/chk-6", "job", "job/chk-5"] {
            let before = c.stats();
            assert_eq!(c.stat_as_create(dir).await.unwrap(), None, "{dir}");
            assert_eq!(lookups_since(&c, &before), (1, 18, 1), "{dir}");
        }
        // a read's stat of a missing path: the first round, then the parent's index (job/,
        // a top directory, was rebuilt from a listing by the write) says it is no object;
        // without the index, every node
        let before = c.stats();
        assert_eq!(c.stat("job/chk-6").await.unwrap(), None);
        assert_eq!(lookups_since(&c, &before).1, 6, "the first round only");
        assert_eq!(c.stats().index_reads_settled - before.index_reads_settled, 1);
        let plain = Client::new(mesh.clone(), ClientConfig { params: params(4, 2), directory_index: false, ..ClientConfig::default() }).unwrap();
        let before = plain.stats();
        assert_eq!(plain.stat("job/chk-6").await.unwrap(), None);
        assert_eq!(lookups_since(&plain, &before).1, nodes as u64, "without the index a stat of a missing path asks every node");
        // a file is found, with its length, from the same window
        let before = c.stats();
        let found = c.stat_as_create("job/chk-5/state").await.unwrap().expect("the object is there");
        assert_eq!(found.length, 30_000);
        assert_eq!(lookups_since(&c, &before), (1, 18, 1));
    });
}
