//! End-to-end tests of the write and read pipelines over the in-process mesh,
//! with node kills, lost and corrupted fragments, slow nodes and full stores.

use fragstate_core::sample::noise as payload;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use fragstate_core::ids::FragmentKey;
use fragstate_client::mesh::Mesh;
use fragstate_core::placement::PlacementPolicy;
use fragstate_store::FragmentStore;
use fragstate_client::{Client, ClientConfig};
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::Error;
use proptest::prelude::*;

use crate::common::{client, params, read, rt, write, CELL};

#[test]
fn round_trip_at_stripe_boundaries() {
    rt().block_on(async {
        for (k, m) in [(4, 2), (1, 0), (1, 2), (3, 0), (6, 3), (10, 4)] {
            let mesh = Mesh::in_memory(k + m + 1, u64::MAX);
            let c = client(&mesh, params(k, m));
            let stripe = k * CELL as usize;
            for len in [0, 1, stripe - 1, stripe, stripe + 1, 3 * stripe + 7] {
                let data = payload(len, len as u64);
                let path = format!("fragstate://c/j/chk-1/k{k}m{m}-{len}");
                let man = write(&c, &path, &data, 1000).await;
                assert_eq!(man.length, len as u64);
                assert_eq!(man.stripes.len(), len.div_ceil(stripe));
                assert_eq!(read(&c, &path).await.unwrap(), data, "k={k} m={m} len={len}");
            }
        }
    });
}

#[test]
fn every_loss_of_up_to_m_fragments_is_survived_and_m_plus_1_is_not() {
    rt().block_on(async {
        let (k, m) = (4, 2);
        let mesh = Mesh::in_memory(k + m, u64::MAX);
        let c = client(&mesh, params(k, m));
        let data = payload(5 * k * CELL as usize + 123, 7);
        let man = write(&c, "obj", &data, 65536).await;
        let n = k + m;
        let mut combos: Vec<Vec<usize>> = vec![vec![]];
        for a in 0..n {
            combos.push(vec![a]);
            for b in a + 1..n {
                combos.push(vec![a, b]);
            }
        }
        assert_eq!(combos.len(), 1 + 6 + 15);
        for lost in &combos {
            for &i in lost {
                mesh.kill(&man.holders[i]).unwrap();
            }
            assert_eq!(read(&c, "obj").await.unwrap(), data, "lost fragments {lost:?}");
            for &i in lost {
                mesh.revive(&man.holders[i]).unwrap();
            }
        }
        // m + 1 = 3 losses: the error names the object, the stripe and the missing fragments.
        for lost in [[0usize, 1, 2], [1, 3, 5], [3, 4, 5]] {
            for &i in &lost {
                mesh.kill(&man.holders[i]).unwrap();
            }
            let e = read(&c, "obj").await.unwrap_err();
            match &e {
                Error::StripeUnrecoverable { path, stripe, good, missing, .. } => {
                    assert_eq!(path, "obj");
                    assert_eq!(*stripe, 0);
                    assert_eq!(*good, 3);
                    assert_eq!(missing, &lost.to_vec());
                }
                other => panic!("unexpected error {other}"),
            }
            assert!(e.to_string().contains(&format!("missing fragments {lost:?}")), "{e}");
            for &i in &lost {
                mesh.revive(&man.holders[i]).unwrap();
            }
        }
    });
}

#[test]
fn corrupted_cells_are_rebuilt_and_never_returned() {
    rt().block_on(async {
        let (k, m) = (4, 2);
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh, params(k, m));
        let data = payload(4 * k * CELL as usize, 3);
        let man = write(&c, "obj", &data, 10_000).await;
        let key = |i: usize| FragmentKey { path: Arc::from("obj"), write_id: man.write_id, index: i as u8 };
        // Two corrupt cells in stripe 0 (data), one in stripe 1 (data) and one parity cell.
        mesh.corrupt_cell(&man.holders[0], &key(0), 0).unwrap();
        mesh.corrupt_cell(&man.holders[3], &key(3), 0).unwrap();
        mesh.corrupt_cell(&man.holders[2], &key(2), 1).unwrap();
        mesh.corrupt_cell(&man.holders[5], &key(5), 2).unwrap();
        assert_eq!(read(&c, "obj").await.unwrap(), data);
        assert!(c.stats().corrupt_cells >= 3, "{:?}", c.stats());
        assert!(c.stats().stripes_reconstructed >= 2, "{:?}", c.stats());
        // A third corrupt cell in stripe 0: fewer than k good cells, an error, never wrong bytes.
        mesh.corrupt_cell(&man.holders[4], &key(4), 0).unwrap();
        let e = read(&c, "obj").await.unwrap_err();
        match e {
            Error::StripeUnrecoverable { stripe: 0, corrupt, .. } => assert_eq!(corrupt, vec![0, 3, 4]),
            other => panic!("unexpected error {other}"),
        }
    });
}

#[test]
fn dropped_fragments_are_read_around() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let data = payload(100_000, 9);
        let man = write(&c, "obj", &data, 4096).await;
        for i in [1, 4] {
            let key = FragmentKey { path: Arc::from("obj"), write_id: man.write_id, index: i as u8 };
            assert_eq!(mesh.drop_fragment(&man.holders[i], &key).unwrap().fragments, 1);
        }
        assert_eq!(read(&c, "obj").await.unwrap(), data);
    });
}

#[test]
fn a_holder_killed_mid_write_is_replaced_with_full_redundancy() {
    rt().block_on(async {
        let (k, m) = (4, 2);
        let mesh = Mesh::in_memory(9, u64::MAX);
        let c = client(&mesh, params(k, m));
        let data = payload(10 * k * CELL as usize + 5, 11);
        let mut w = c.create("obj", false).await.unwrap();
        let first = w.holders().to_vec();
        w.write(&data[..3 * k * CELL as usize + 100]).await.unwrap();
        // Lose a data holder and a parity holder in the middle of the write.
        mesh.kill(&first[1]).unwrap();
        mesh.kill(&first[5]).unwrap();
        w.write(&data[3 * k * CELL as usize + 100..]).await.unwrap();
        let man = w.close().await.unwrap();
        assert!(!man.holders.contains(&first[1]) && !man.holders.contains(&first[5]));
        assert_eq!(man.holders.iter().collect::<HashSet<_>>().len(), k + m);
        assert_eq!(c.stats().fragments_replaced, 2);
        // Back at k + m: any other two holders may now fail as well.
        mesh.kill(&man.holders[0]).unwrap();
        mesh.kill(&man.holders[2]).unwrap();
        assert_eq!(read(&c, "obj").await.unwrap(), data);
    });
}

#[test]
fn a_holder_killed_before_close_is_replaced() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(7, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let data = payload(50_000, 12);
        let mut w = c.create("obj", false).await.unwrap();
        w.write(&data).await.unwrap();
        let victim = w.holders()[3].clone();
        mesh.kill(&victim).unwrap();
        let man = w.close().await.unwrap();
        assert!(!man.holders.contains(&victim));
        mesh.kill(&man.holders[0]).unwrap();
        mesh.kill(&man.holders[1]).unwrap();
        assert_eq!(read(&c, "obj").await.unwrap(), data);
    });
}

#[test]
fn too_many_losses_during_a_write_fail_it_cleanly() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let mut w = c.create("obj", false).await.unwrap();
        w.write(&payload(20_000, 1)).await.unwrap();
        let holders = w.holders().to_vec();
        mesh.kill(&holders[0]).unwrap();
        let e = w.write(&payload(100_000, 2)).await.unwrap_err().to_string();
        assert!(e.contains("cannot place 1 fragments") && e.contains("only 0 usable storage nodes"), "{e}");
        assert_eq!(c.stats().placement_failures, 1, "the failed replacement is counted");
        let e = w.write(b"more").await.unwrap_err().to_string();
        assert!(e.contains("an earlier write failed"), "{e}");
        assert!(c.open("obj").await.is_err(), "a failed write must not be visible");
        // Aborting the failed writer removes what it sent to the surviving holders.
        w.abort().await;
        let held: u64 = mesh.node_ids().iter().filter(|n| mesh.is_alive(n)).map(|n| mesh.store(n).unwrap().usage().bytes).sum();
        assert_eq!(held, 0);
    });
}

#[test]
fn full_stores_send_fragments_elsewhere_until_the_cluster_is_full() {
    rt().block_on(async {
        // 8 nodes of 40 cells each; every object takes 6 fragments of 5 cells.
        let budget = 40 * CELL;
        let mesh = Mesh::in_memory(8, budget);
        let c = client(&mesh, params(4, 2));
        let mut committed = Vec::new();
        let mut failure = None;
        for i in 0..20 {
            let data = payload(20 * CELL as usize, i);
            let path = format!("obj-{i}");
            let attempt = async {
                let mut w = c.create(&path, false).await?;
                w.write(&data).await?;
                w.close().await
            };
            match attempt.await {
                Ok(_) => committed.push((path, data)),
                Err(e) => {
                    failure = Some(e.to_string());
                    break;
                }
            }
        }
        assert!(committed.len() >= 8, "only {} objects fit", committed.len());
        for n in mesh.node_ids() {
            assert!(mesh.store(&n).unwrap().usage().bytes <= budget);
        }
        for (path, data) in &committed {
            assert_eq!(&read(&c, path).await.unwrap(), data);
        }
        // When no node can take a fragment, the write fails and says why.
        let e = failure.expect("the cluster cannot hold 20 objects");
        assert!(e.contains("cannot place") || e.contains("store full"), "{e}");
    });
}

#[test]
fn a_store_that_fills_up_mid_write_hands_its_fragment_on() {
    rt().block_on(async {
        let budget = 64 * CELL;
        let mesh = Mesh::in_memory(8, budget);
        let c = client(&mesh, params(4, 2));
        let data = payload(40 * CELL as usize, 1);
        let mut w = c.create("obj", false).await.unwrap();
        w.write(&data[..10 * CELL as usize]).await.unwrap();
        // Another writer fills holder 2 up to its budget.
        let victim = w.holders()[2].clone();
        let store = mesh.store(&victim).unwrap();
        let header = fragstate_core::format::FragmentHeader {
            path: "other".into(),
            write_id: 1,
            index: 0,
            params: params(4, 2),
            created_unix_ms: 0,
        };
        store.begin_fragment(&header).unwrap();
        let mut s = 0;
        while store.usage().free_bytes() >= CELL {
            store.append_cell(&header.key(), s, 0, bytes::Bytes::from(vec![0u8; CELL as usize])).unwrap();
            s += 1;
        }
        w.write(&data[10 * CELL as usize..]).await.unwrap();
        let man = w.close().await.unwrap();
        assert!(!man.holders.contains(&victim));
        assert_eq!(c.stats().fragments_replaced, 1);
        assert_eq!(read(&c, "obj").await.unwrap(), data);
    });
}

#[test]
fn a_slow_holder_is_hedged_around() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let cfg = ClientConfig { params: params(4, 2), hedge: 1, hedge_delay: Duration::from_millis(20), ..ClientConfig::default() };
        let c = Client::new(mesh.clone(), cfg).unwrap();
        let data = payload(8 * 4 * CELL as usize, 5);
        let man = write(&c, "obj", &data, 1 << 16).await;
        mesh.slow_down(&man.holders[0], Duration::from_secs(5)).unwrap();
        mesh.slow_down(&man.holders[2], Duration::from_secs(5)).unwrap();
        let mut r = c.open("obj").await.unwrap();
        assert_eq!(r.read_to_end().await.unwrap(), data);
        let st = r.stats();
        assert_eq!(st.reconstructed_stripes, 8, "{st:?}");
        assert!(!st.peers.contains(&man.holders[0]) && !st.peers.contains(&man.holders[2]), "{st:?}");
    });
}

#[test]
fn reads_learn_a_slow_data_holder_and_ask_a_parity_holder_instead() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        // no hedging: only the measured speeds can move a read off the slow holder
        let cfg = ClientConfig { params: params(4, 2), hedge: 0, hedge_delay: Duration::from_secs(60), ..ClientConfig::default() };
        let c = Client::new(mesh.clone(), cfg).unwrap();
        let data = payload(16 * 4 * CELL as usize, 9);
        let man = write(&c, "obj", &data, 1 << 16).await;
        mesh.slow_down(&man.holders[1], Duration::from_millis(40)).unwrap();
        // the first read asks the data holders and measures them, the slow one included
        let mut r = c.open("obj").await.unwrap();
        assert_eq!(r.read_to_end().await.unwrap(), data);
        assert!(r.stats().peers.contains(&man.holders[1]), "{:?}", r.stats());
        // the second asks a parity holder in its place and rebuilds the missing data cells
        let mut r = c.open("obj").await.unwrap();
        assert_eq!(r.read_to_end().await.unwrap(), data);
        let st = r.stats();
        assert!(!st.peers.contains(&man.holders[1]), "{st:?}");
        assert_eq!(st.reconstructed_stripes, 16, "{st:?}");
    });
}

#[test]
fn a_holder_too_slow_to_ever_answer_in_time_is_measured_by_the_wait_and_asked_last() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        // hedging after 20 ms: the parity holders always answer before the slowed data holder
        let cfg = ClientConfig { params: params(4, 2), hedge: 0, hedge_delay: Duration::from_millis(20), ..ClientConfig::default() };
        let c = Client::new(mesh.clone(), cfg).unwrap();
        let data = payload(16 * 4 * CELL as usize, 11);
        let man = write(&c, "obj", &data, 1 << 16).await;
        mesh.slow_down(&man.holders[1], Duration::from_millis(500)).unwrap();
        let mut r = c.open("obj").await.unwrap();
        assert_eq!(r.read_to_end().await.unwrap(), data);
        let first = r.stats();
        assert!(first.hedged_stripes > 0 && !first.peers.contains(&man.holders[1]), "{first:?}");
        // the dropped requests measured it: now it is asked last, and no stripe waits for the hedge
        let mut r = c.open("obj").await.unwrap();
        assert_eq!(r.read_to_end().await.unwrap(), data);
        let st = r.stats();
        assert_eq!(st.hedged_stripes, 0, "{st:?}");
        assert_eq!(st.reconstructed_stripes, 16, "{st:?}");
    });
}

#[test]
fn with_m_holders_dead_a_live_holder_that_fails_a_request_is_asked_again() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(7, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let data = payload(4 * 4 * CELL as usize, 3);
        let man = write(&c, "obj", &data, 1 << 16).await;
        mesh.kill(&man.holders[0]).unwrap();
        mesh.kill(&man.holders[5]).unwrap();
        // No spare holder is left: before the retry, one failed request failed the read.
        mesh.fail_requests(&man.holders[2], 3).unwrap();
        assert_eq!(read(&c, "obj").await.unwrap(), data);
        assert!(c.stats().failed_requests >= 1, "{:?}", c.stats());
        // A holder that keeps failing is given up after the bounded retries, naming it.
        mesh.fail_requests(&man.holders[2], u64::MAX).unwrap();
        let t = std::time::Instant::now();
        let e = read(&c, "obj").await.unwrap_err().to_string();
        assert!(e.contains("3 good cells of the 4 needed") && e.contains("missing fragments [0, 2, 5]"), "{e}");
        // and says why each fragment is missing
        assert!(e.contains(&format!("fragment 0: node {} is not live", man.holders[0])), "{e}");
        assert!(e.contains("fragment 2: ") && e.contains("request failed (mesh fault injection)"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10), "gave up after {:?}", t.elapsed());
    });
}

#[test]
fn a_holder_that_comes_up_during_the_read_is_asked_once_live() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(7, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let data = payload(4 * 4 * CELL as usize, 5);
        let man = write(&c, "obj", &data, 1 << 16).await;
        // m = 2 holders gone for good, a third not live yet when the read starts (a process
        // that has not connected to it, e.g. a TaskManager restoring right after its start)
        mesh.kill(&man.holders[0]).unwrap();
        mesh.kill(&man.holders[5]).unwrap();
        mesh.kill(&man.holders[3]).unwrap();
        let (late, m2) = (man.holders[3].clone(), mesh.clone());
        let comes_up = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            m2.revive(&late).unwrap();
        });
        assert_eq!(read(&c, "obj").await.unwrap(), data);
        comes_up.await.unwrap();
        // one that never comes up is given up after the bounded retries, naming it
        mesh.kill(&man.holders[3]).unwrap();
        let t = std::time::Instant::now();
        let e = read(&c, "obj").await.unwrap_err().to_string();
        assert!(e.contains(&format!("fragment 3: node {} is not live", man.holders[3])), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10), "gave up after {:?}", t.elapsed());
    });
}

#[test]
fn too_few_nodes_is_a_clear_error() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(5, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let e = c.create("obj", false).await.err().unwrap().to_string();
        assert!(e.contains("cannot place 6 fragments (k=4 + m=2): only 5 usable storage nodes in 5 failure domains"), "{e}");
        // The explicit fallback lets fragments share a domain but still needs distinct nodes.
        let stores = (0..6).map(|i| ("one-host".to_string(), FragmentStore::in_memory(format!("n{i}"), u64::MAX))).collect();
        let mesh = Mesh::from_stores(stores);
        let cfg = ClientConfig { params: params(4, 2), placement: PlacementPolicy { allow_shared_domains: true }, ..ClientConfig::default() };
        let c = Client::new(mesh, cfg).unwrap();
        write(&c, "obj", b"hello", 10).await;
        assert_eq!(read(&c, "obj").await.unwrap(), b"hello");
    });
}

#[test]
fn placement_check_follows_the_live_nodes_and_excludes_the_writer() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(7, u64::MAX);
        let ids = mesh.node_ids();
        // The writer's own node never holds its fragments: 6 others are left for k + m = 6.
        let cfg = ClientConfig { params: params(4, 2), exclude_node: Some(ids[0].clone()), ..ClientConfig::default() };
        let c = Client::new(mesh.clone(), cfg).unwrap();
        c.check_placement().unwrap();
        mesh.kill(&ids[3]).unwrap();
        let e = c.check_placement().unwrap_err().to_string();
        assert!(e.contains("cannot place 6 fragments (k=4 + m=2): only 5 usable storage nodes in 5 failure domains"), "{e}");
        assert_eq!(c.stats().placement_failures, 0, "a check is not a failed write");
        // A write fails with the same error the check gave, and is counted.
        assert_eq!(c.create("obj", false).await.err().unwrap().to_string(), e);
        assert_eq!(c.stats().placement_failures, 1);
        mesh.revive(&ids[3]).unwrap();
        c.check_placement().unwrap();
        write(&c, "obj", b"placed", 4).await;
    });
}

#[test]
fn a_read_fetches_from_every_data_holder() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let data = payload(8 * 4 * CELL as usize, 7);
        write(&c, "spread", &data, 10_000).await;
        assert_eq!(c.stats().peers_fetched_from, 0);
        assert_eq!(read(&c, "spread").await.unwrap(), data);
        let s = c.stats();
        assert!(s.cells_fetched >= 8 * 4, "{s:?}");
        // k = 4 cells of every stripe come from 4 different holders
        assert!(s.peers_fetched_from >= 4, "{s:?}");
    });
}

#[test]
fn recursive_delete_respects_directory_boundaries() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh, params(4, 2));
        for p in ["job/chk-1/a", "job/chk-1/b", "job/chk-10/a", "job/chk-2/a"] {
            write(&c, p, &payload(30_000, 1), 7000).await;
        }
        assert_eq!(c.list("job/").await.unwrap().len(), 4);
        let report = c.delete("job/chk-1", true).await.unwrap();
        assert_eq!(report.objects, 2);
        assert_eq!((report.removed.manifests, report.removed.fragments), (2 * 6, 2 * 6));
        let left: Vec<_> = c.list("job/").await.unwrap().into_iter().map(|s| s.path).collect();
        assert_eq!(left, vec!["job/chk-10/a", "job/chk-2/a"]);
        assert!(c.stat("job/chk-1/a").await.unwrap().is_none());
        assert_eq!(c.stat("job/chk-2/a").await.unwrap().unwrap().length, 30_000);
        c.delete("job/chk-2/a", false).await.unwrap();
        assert!(matches!(c.open("job/chk-2/a").await.err().unwrap(), Error::NotFound { .. }));
    });
}

#[test]
fn abort_removes_partial_fragments() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let mut w = c.create("obj", false).await.unwrap();
        w.write(&payload(100_000, 1)).await.unwrap();
        w.abort().await;
        let total: u64 = mesh.node_ids().iter().map(|n| mesh.store(n).unwrap().usage().bytes).sum();
        assert_eq!(total, 0);
        assert!(c.stat("obj").await.unwrap().is_none());
    });
}

#[test]
fn repair_restores_full_redundancy() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(9, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let data = payload(123_456, 4);
        let man = write(&c, "obj", &data, 1 << 20).await;
        mesh.kill(&man.holders[0]).unwrap();
        mesh.kill(&man.holders[4]).unwrap();
        assert_eq!(c.repair("obj").await.unwrap(), 2);
        let repaired = c.find_manifest("obj").await.unwrap().unwrap();
        assert_eq!(repaired.revision, 1);
        assert!(repaired.holders.iter().all(|h| mesh.is_alive(h)));
        assert_eq!(c.repair("obj").await.unwrap(), 0);
        // Two more losses among the new holder set are survived.
        mesh.kill(&repaired.holders[1]).unwrap();
        mesh.kill(&repaired.holders[2]).unwrap();
        assert_eq!(read(&c, "obj").await.unwrap(), data);
    });
}

#[test]
fn a_fragment_moves_back_to_a_holder_that_returned_with_its_old_copy() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(9, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let data = payload(123_456, 8);
        let man = write(&c, "obj", &data, 1 << 20).await;
        let away = man.holders[2].clone();
        mesh.kill(&away).unwrap();
        assert_eq!(c.repair("obj").await.unwrap(), 1);
        let repaired = c.find_manifest("obj").await.unwrap().unwrap();
        assert_ne!(repaired.holders[2], away);
        // Back with fragment 2 of the same write still stored (its holder
        // check has not run): rebalancing gives it fragment 2 again.
        mesh.revive(&away).unwrap();
        let moved = c.move_fragments(repaired.clone(), &[(2, away.clone())]).await.unwrap();
        assert!(moved.is_some(), "the move was skipped");
        let now = c.find_manifest("obj").await.unwrap().unwrap();
        assert_eq!(now.holders[2], away);
        assert_eq!(now.revision, 2);
        // Two other holders lost: the read needs the moved fragment.
        mesh.kill(&now.holders[0]).unwrap();
        mesh.kill(&now.holders[1]).unwrap();
        assert_eq!(read(&c, "obj").await.unwrap(), data);
    });
}

#[test]
fn with_one_spare_node_for_two_lost_fragments_repair_keeps_the_one_it_rebuilt() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(7, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let data = payload(123_456, 6);
        let man = write(&c, "obj", &data, 1 << 20).await;
        mesh.kill(&man.holders[1]).unwrap();
        mesh.kill(&man.holders[3]).unwrap();
        // 5 live nodes: the 4 holders and one spare, so one of the two fragments can move.
        let e = c.repair("obj").await.unwrap_err().to_string();
        assert!(e.contains("cannot place 1 fragments"), "{e}");
        let repaired = c.find_manifest("obj").await.unwrap().unwrap();
        assert_eq!(repaired.revision, 1, "the rebuilt fragment is published");
        assert_eq!(repaired.holders.iter().filter(|h| mesh.is_alive(h)).count(), 5, "{:?}", repaired.holders);
        assert_eq!(c.stats().fragments_repaired, 1);
        // The next round fails at placement at once: nothing rebuilt again.
        assert!(c.repair("obj").await.is_err());
        assert_eq!(c.stats().fragments_repaired, 1);
        // One more loss among the five is survived.
        mesh.kill(&repaired.holders[0]).unwrap();
        assert_eq!(read(&c, "obj").await.unwrap(), data);
    });
}

#[test]
fn disk_backed_mesh_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let open = |fsync| {
        Mesh::from_stores(
            (0..6)
                .map(|i| (format!("host-{i}"), FragmentStore::open_dir(format!("node-{i}"), &dir.path().join(format!("n{i}")), u64::MAX, fsync).unwrap()))
                .collect(),
        )
    };
    let data = payload(77_777, 8);
    rt().block_on(async {
        let mesh = open(true);
        write(&client(&mesh, params(4, 2)), "fragstate://c/j/chk-3/x", &data, 5000).await;
    });
    rt().block_on(async {
        let mesh = open(false);
        let c = client(&mesh, params(4, 2));
        let man = c.find_manifest("fragstate://c/j/chk-3/x").await.unwrap().unwrap();
        mesh.kill(&man.holders[0]).unwrap();
        mesh.kill(&man.holders[5]).unwrap();
        assert_eq!(read(&c, "fragstate://c/j/chk-3/x").await.unwrap(), data);
    });
}

#[test]
fn compressed_objects_round_trip_and_seek() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let p = CodingParams::new(4, 2, CELL, Compression::Zstd { level: 3 }).unwrap();
        let c = client(&mesh, p);
        // Half compressible text, half noise.
        let mut data: Vec<u8> = (0..60_000).map(|i| b"flink state "[i % 12]).collect();
        data.extend(payload(40_000, 2));
        let man = write(&c, "obj", &data, 3000).await;
        assert!(man.stripes.iter().any(|s| s.compressed) && man.stripes.iter().any(|s| !s.compressed));
        mesh.kill(&man.holders[0]).unwrap();
        let mut r = c.open("obj").await.unwrap();
        r.seek(50_000).unwrap();
        let mut buf = vec![0u8; 20_000];
        let mut got = 0;
        while got < buf.len() {
            got += r.read(&mut buf[got..]).await.unwrap();
        }
        assert_eq!(&buf[..], &data[50_000..70_000]);
    });
}

/// A compressed stripe must come back to the writer's buffer pool like any
/// other: a JobManager writing a small compressible `_metadata` per
/// checkpoint kept one small buffer per write (the pool could never reuse it)
/// until the pool's 64 MiB bound, 0.35 MB a minute (NETWORK.md).
#[test]
fn small_compressed_objects_reuse_the_stripe_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let stores = (0..6).map(|i| (format!("host-{i}"), FragmentStore::open_dir(format!("node-{i}"), &dir.path().join(format!("n{i}")), u64::MAX, false).unwrap()));
    let mesh = Mesh::from_stores(stores.collect());
    let c = client(&mesh, CodingParams::new(4, 2, CELL, Compression::Zstd { level: 1 }).unwrap());
    rt().block_on(async {
        for i in 0..40 {
            let data: Vec<u8> = (0..9_000).map(|j| b"chk metadata "[(i + j) % 13]).collect();
            let man = write(&c, &format!("job/chk-{i}/_metadata"), &data, 9_000).await;
            assert!(man.stripes[0].compressed);
        }
    });
    let s = c.stats();
    // Disk stores drop the cells once written, so every buffer but the first few is reused.
    assert!(s.stripe_buffers_allocated <= 4 && s.stripe_buffers_reused >= 36, "allocated {}, reused {}", s.stripe_buffers_allocated, s.stripe_buffers_reused);
}

#[test]
fn concurrent_writers_and_readers() {
    let rt = rt();
    let mesh = Mesh::in_memory(8, u64::MAX);
    let c = client(&mesh, params(4, 2));
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..12u64 {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                let data = payload(30_000 + i as usize * 7_001, i);
                let path = format!("w/{i}");
                let mut w = c.create(&path, false).await.unwrap();
                for part in data.chunks(3333) {
                    w.write(part).await.unwrap();
                }
                w.close().await.unwrap();
                // Many readers of the same and of other objects at once.
                let readers: Vec<_> = (0..4)
                    .map(|_| {
                        let (c, path, data) = (c.clone(), path.clone(), data.clone());
                        tokio::spawn(async move { assert_eq!(read(&c, &path).await.unwrap(), data) })
                    })
                    .collect();
                for r in readers {
                    r.await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(c.stats().objects_written, 12);
}

#[test]
fn seek_out_of_range_is_an_error() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh, params(4, 2));
        write(&c, "obj", b"0123456789", 3).await;
        let mut r = c.open("obj").await.unwrap();
        r.seek(10).unwrap();
        assert_eq!(r.read(&mut [0u8; 4]).await.unwrap(), 0);
        let e = r.seek(11).unwrap_err().to_string();
        assert_eq!(e, "invalid seek to 11 in obj: allowed 0 ≤ offset ≤ 10");
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_objects_losses_and_seeks(
        k in 1usize..6,
        m in 0usize..3,
        len in 0usize..(5 * 5 * CELL as usize),
        chunk in 1usize..20_000,
        lost_seed in any::<u64>(),
        seeks in proptest::collection::vec((any::<u64>(), 1usize..30_000), 1..6),
    ) {
        let runtime = rt();
        runtime.block_on(async {
            let mesh = Mesh::in_memory(k + m, u64::MAX);
            let c = client(&mesh, params(k, m));
            let data = payload(len, lost_seed);
            let man = write(&c, "obj", &data, chunk).await;
            // Lose up to m fragments.
            let lost = (lost_seed as usize) % (m + 1);
            for i in 0..lost {
                mesh.kill(&man.holders[(i * 7 + lost_seed as usize) % (k + m)]).unwrap();
            }
            assert_eq!(read(&c, "obj").await.unwrap(), data);
            let mut r = c.open("obj").await.unwrap();
            for (at, n) in seeks {
                let at = if len == 0 { 0 } else { at % (len as u64 + 1) };
                r.seek(at).unwrap();
                let mut buf = vec![0u8; n];
                let mut got = 0;
                loop {
                    let x = r.read(&mut buf[got..]).await.unwrap();
                    if x == 0 { break; }
                    got += x;
                    if got == n { break; }
                }
                let end = (at as usize + n).min(len);
                assert_eq!(&buf[..got], &data[at as usize..end]);
                assert_eq!(r.position(), end as u64);
            }
        });
    }
}

#[test]
fn an_open_does_not_wait_for_a_straggling_node_but_a_create_of_a_new_path_does() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(7, u64::MAX);
        let c = client(&mesh, params(4, 2));
        let data = payload(3 * 4 * CELL as usize, 11);
        let man = write(&c, "obj", &data, 4096).await;
        // a node holding no fragment of it answers every request only after 30 s
        let straggler = mesh.node_ids().into_iter().find(|n| !man.holders.contains(n)).unwrap();
        mesh.slow_down(&straggler, Duration::from_secs(30)).unwrap();
        let opened = tokio::time::timeout(Duration::from_secs(10), read(&c, "obj")).await;
        assert_eq!(opened.expect("the open waited for the straggler").unwrap(), data);
        let stat = tokio::time::timeout(Duration::from_secs(10), c.stat("obj")).await;
        assert_eq!(stat.expect("stat waited for the straggler").unwrap().unwrap().length, data.len() as u64);
        // an overwrite takes its version from the holders, settled by path (fragstate_core::lookup)
        let overwrite = tokio::time::timeout(Duration::from_secs(10), c.create("obj", true)).await;
        assert!(overwrite.expect("the overwrite waited for the straggler").is_ok());
        // that a path does not exist only every node can say: a new path's create waits
        assert!(tokio::time::timeout(Duration::from_secs(1), c.create("new", false)).await.is_err(), "a create did not wait for every node");
    });
}

#[test]
fn a_manifest_lookup_asks_failed_nodes_again_and_never_calls_an_existing_object_missing() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh, params(2, 1));
        let data = payload(4 * CELL as usize, 9);
        let man = write(&c, "obj", &data, 1 << 16).await;
        // one holder lost; the other two fail their next request (as a node that has
        // not taken a new client's hello yet): before the retry, "no such object"
        mesh.kill(&man.holders[0]).unwrap();
        mesh.fail_requests(&man.holders[1], 1).unwrap();
        mesh.fail_requests(&man.holders[2], 1).unwrap();
        assert_eq!(read(&c, "obj").await.unwrap(), data);
        // holders that keep failing: an error naming one of them, after the bounded retries
        mesh.fail_requests(&man.holders[1], u64::MAX).unwrap();
        mesh.fail_requests(&man.holders[2], u64::MAX).unwrap();
        let t = std::time::Instant::now();
        let e = c.stat("obj").await.unwrap_err().to_string();
        assert!(e.contains("manifest lookup of obj failed on it") && e.contains("and on 1 other live nodes"), "{e}");
        assert!(e.contains(man.holders[1].as_str()) || e.contains(man.holders[2].as_str()), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10), "gave up after {:?}", t.elapsed());
        // what no live node holds is still simply not there
        mesh.fail_requests(&man.holders[1], 0).unwrap();
        mesh.fail_requests(&man.holders[2], 0).unwrap();
        assert!(c.stat("never-written").await.unwrap().is_none());
    });
}
