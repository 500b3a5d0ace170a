//! Adaptive mode over the in-process mesh (issue 14): a writer measures its
//! holders while it uploads, moves slow ones to parity positions at once, and
//! decides each phase's parameters from the measurements.

use std::time::Duration;

use fragstate_client::mesh::Mesh;
use fragstate_client::{AdaptiveConfig, Client, ClientConfig};
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::sample::noise as payload;

use crate::common::{read, rt, write};

fn adaptive(phase: Duration, max_storage_overhead: f64) -> ClientConfig {
    let params = CodingParams::new(4, 2, 64 << 10, Compression::None).unwrap();
    ClientConfig { params, adaptive: Some(AdaptiveConfig { phase, max_storage_overhead }), ..ClientConfig::default() }
}

#[test]
fn slow_holders_take_parity_and_the_next_phase_is_decided_from_the_measurements() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(8, u64::MAX);
        let ids = mesh.node_ids();
        let slow = [ids[1].clone(), ids[6].clone()];
        for n in &slow {
            mesh.slow_down(n, Duration::from_millis(5)).unwrap();
        }
        // a phase long enough for the first twelve writes (about 0.2 s each with the slow nodes)
        let phase = Duration::from_secs(4);
        let c = Client::new(mesh.clone(), adaptive(phase, 1.5)).unwrap();
        let started = std::time::Instant::now();
        let data = payload(4 << 20, 3);
        // phase 1: nothing measured yet, the configured parameters
        for i in 0..6 {
            write(&c, &format!("first-{i}"), &data, 1 << 20).await;
        }
        let st = c.stats().adaptive;
        assert_eq!((st.phase, st.data_fragments, st.parity_fragments), (1, 4, 2), "{st:?}");
        assert!(st.last_decision.as_ref().unwrap().reason.contains("too few measured nodes"), "{st:?}");
        // every node was measured while it took fragments: from now on the slow
        // nodes hold nothing (the six fast ones take RS(4,2)'s six fragments)
        for i in 0..6 {
            let man = write(&c, &format!("measured-{i}"), &data, 1 << 20).await;
            assert!(man.holders.iter().all(|h| !slow.contains(h)), "slow node among the holders of measured-{i}: {:?}", man.holders);
        }
        // the per-peer estimates in the stats: every node measured, the slow ones slowest
        let peers = c.stats().peers;
        assert_eq!(peers.len(), 8, "{peers:?}");
        assert!(peers.iter().all(|p| p.samples > 0 && p.trusted), "{peers:?}");
        let rate = |n: &str| peers.iter().find(|p| p.node == n).unwrap().bytes_per_s;
        let slowest_fast = ids.iter().filter(|n| !slow.contains(n)).map(|n| rate(&n.to_string())).min().unwrap();
        assert!(slow.iter().all(|n| rate(&n.to_string()) < slowest_fast), "{peers:?}");
        // phase 2, decided from the measurements within the bounds (m ≥ 2, overhead ≤ 1.5)
        assert_eq!(c.stats().adaptive.phase, 1, "the writes outlasted the phase");
        tokio::time::sleep((phase + Duration::from_millis(100)).saturating_sub(started.elapsed())).await;
        let man = write(&c, "phase-2", &data, 1 << 20).await;
        let st = c.stats().adaptive;
        let d = st.last_decision.clone().unwrap();
        assert_eq!(st.phase, 2, "{st:?}");
        assert_eq!(d.measured_nodes, 8, "{d:?}");
        assert!(d.params.m() >= 2 && d.params.storage_overhead() <= 1.5 + 1e-9, "{d:?}");
        assert!(d.predicted_restore_s <= d.configured_restore_s, "{d:?}");
        assert_eq!(man.params, d.params, "the phase's parameters are the new object's");
        // objects of both phases read back exactly
        for p in ["first-0", "measured-5", "phase-2"] {
            assert_eq!(read(&c, p).await.unwrap(), data, "{p}");
        }
    });
}

#[test]
fn adaptive_mode_off_reports_nothing_and_keeps_the_parameters() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(8, u64::MAX);
        let c = Client::new(mesh.clone(), ClientConfig { adaptive: None, ..adaptive(Duration::from_secs(1), 1.5) }).unwrap();
        let man = write(&c, "obj", &payload(1 << 20, 1), 1 << 16).await;
        assert_eq!(man.params, c.config().params);
        assert_eq!(c.stats().adaptive, fragstate_client::adaptive::AdaptiveStats::default(), "off: not enabled, all zeros");
        assert_eq!(c.stats().holders_moved_to_parity, 0);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(c.stats().speed_probes, 0, "off: no probes");
    });
}

#[test]
fn peers_no_upload_measured_are_probed_and_a_slow_one_is_then_left_out() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(8, u64::MAX);
        let ids = mesh.node_ids();
        mesh.slow_down(&ids[7], Duration::from_millis(20)).unwrap();
        let c = Client::new(mesh.clone(), adaptive(Duration::from_secs(3600), 1.5)).unwrap();
        // each write measures its six holders by their uploads and probes the other two
        let data = payload(1 << 20, 1);
        let mut writes = 0;
        let started = std::time::Instant::now();
        while !(c.stats().peers.len() == 8 && c.stats().peers.iter().all(|p| p.trusted)) {
            assert!(started.elapsed() < Duration::from_secs(10), "not every peer measured: {:?}", c.stats());
            write(&c, &format!("first-{writes}"), &data, 1 << 20).await;
            writes += 1;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let st = c.stats();
        assert!(st.speed_probes >= 2 && st.speed_probes <= 2 * 8, "two probes per peer, at most: {st:?}");
        let slowest = st.peers.iter().min_by_key(|p| p.bytes_per_s).unwrap();
        assert_eq!(slowest.node, ids[7].to_string(), "{st:?}");
        // the slow node is left out of new objects (seven fast ones for six fragments)
        for i in 0..4 {
            let man = write(&c, &format!("next-{i}"), &data, 1 << 20).await;
            assert!(!man.holders.contains(&ids[7]), "{:?}", man.holders);
        }
        // no peer is probed again while its estimate is recent
        assert_eq!(c.stats().speed_probes, st.speed_probes);
    });
}

#[test]
fn bad_adaptive_settings_are_errors_naming_the_value_and_the_range() {
    let e = Client::new(Mesh::in_memory(8, u64::MAX), adaptive(Duration::from_millis(10), 1.5)).err().unwrap().to_string();
    assert!(e.contains("adaptive phase") && e.contains("10 ms") && e.contains("1000 ms ≤ phase"), "{e}");
    // below the configured parameters' own overhead (6/4 = 1.5)
    let e = Client::new(Mesh::in_memory(8, u64::MAX), adaptive(Duration::from_secs(60), 1.2)).err().unwrap().to_string();
    assert!(e.contains("adaptive max storage overhead") && e.contains("1.2") && e.contains("1.500 ≤ overhead ≤ 4"), "{e}");
    let e = Client::new(Mesh::in_memory(8, u64::MAX), adaptive(Duration::from_secs(60), f64::NAN)).err().unwrap().to_string();
    assert!(e.contains("NaN"), "{e}");
}

#[test]
fn a_holder_that_becomes_slow_mid_run_loses_its_data_fragments() {
    rt().block_on(async {
        // six nodes for RS(4,2): the slow one must stay a holder, and takes parity
        let mesh = Mesh::in_memory(6, u64::MAX);
        let ids = mesh.node_ids();
        let c = Client::new(mesh.clone(), adaptive(Duration::from_secs(3600), 1.5)).unwrap();
        let data = payload(4 << 20, 5);
        for i in 0..6 {
            write(&c, &format!("before-{i}"), &data, 1 << 20).await;
        }
        // its link degrades: the smoothed estimate falls below half the median within a few fragments
        mesh.slow_down(&ids[3], Duration::from_millis(5)).unwrap();
        let mut last = Vec::new();
        for i in 0..12 {
            let man = write(&c, &format!("after-{i}"), &data, 1 << 20).await;
            last.push(man.holders[..man.params.k()].contains(&ids[3]));
        }
        assert!(c.stats().holders_moved_to_parity > 0, "{:?}", c.stats());
        // the estimate is smoothed (a new sample weighs 0.2): about four fragments before it counts as slow
        assert!(last[8..].iter().all(|&data_on_slow| !data_on_slow), "the slow node still took data fragments late in the run: {last:?}");
    });
}

#[test]
fn a_phase_whose_setting_no_longer_fits_the_live_nodes_ends_at_once() {
    rt().block_on(async {
        // eight equal nodes, each bound by its own rate: once measured, a phase chooses more
        // data fragments than RS(4,2)'s four (a restore reads them in parallel)
        let mesh = Mesh::in_memory(8, u64::MAX);
        let ids = mesh.node_ids();
        for id in &ids {
            mesh.slow_down(id, Duration::from_millis(2)).unwrap();
        }
        let phase = Duration::from_secs(1);
        let c = Client::new(mesh.clone(), adaptive(phase, 1.5)).unwrap();
        let data = payload(1 << 20, 9);
        let started = std::time::Instant::now();
        let mut writes = 0;
        while !(c.stats().peers.len() == 8 && c.stats().peers.iter().all(|p| p.trusted)) {
            assert!(started.elapsed() < Duration::from_secs(10), "not every peer measured: {:?}", c.stats());
            write(&c, &format!("measure-{writes}"), &data, 1 << 20).await;
            writes += 1;
        }
        // phases end by time; the next write decides from the measurements
        tokio::time::sleep(phase + Duration::from_millis(100)).await;
        let wide = write(&c, "wide", &data, 1 << 20).await.params;
        assert!(wide.fragments() > c.config().params.fragments(), "this test needs a phase wider than the configured RS(4,2): {:?}", c.stats().adaptive);
        // lose nodes until that setting cannot be placed but the configured one still can
        for id in &ids[..8 - wide.fragments() + 1] {
            mesh.kill(id).unwrap();
        }
        assert_eq!(c.stats().adaptive.phase, 2, "the phase has not run out by time");
        // the next write does not fail for the rest of the phase: the phase ends and the
        // next one is decided over the live nodes
        let man = write(&c, "after-loss", &data, 1 << 20).await;
        assert!(man.params.fragments() < wide.fragments(), "{:?}", man.params);
        assert!(man.holders.iter().all(|h| mesh.is_alive(h)), "{:?}", man.holders);
        let st = c.stats().adaptive;
        assert_eq!(st.phase, 3, "{st:?}");
        assert_eq!(read(&c, "after-loss").await.unwrap(), data);
    });
}
