//! Multi-process tests of the network: real `fragstate node` processes on
//! loopback (free ports), the `fragstate` client commands, `kill -9`, the
//! cluster key, restarts of disk-backed nodes, missed deletes, repair,
//! reclaim and malformed frames. The tests run one at a time (a lock), so
//! that two clusters never compete for the two cores.
//!
//! Waiting loops poll for a state with a generous deadline; no assertion
//! is about speed.

mod common;

use common::*;
use fragstate_core::sample::noise as payload;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SMALL_CELLS: &[&str] = &["--cell-size", "64KiB"];

#[test]
fn sizes_round_trip_and_survive_m_kills_at_once_but_not_m_plus_1() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    c.start(6, false, &["--repair-rate", "0"]);
    let sizes = [0usize, 1, 65535, 4 * 65536 + 3, 3 << 20, 24 << 20];
    let mut objs = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let data = payload(n, i as u64);
        let path = format!("/job/chk-1/obj-{n}");
        let h = c.put(&data, &path, SMALL_CELLS);
        assert_eq!(h.len(), 6);
        assert_eq!(c.get(&path).unwrap(), data, "{path}");
        objs.push((path, data, h));
    }
    let out = c.cli(&["ls", "/job/"], 6);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), sizes.len(), "{}", text(&out));
    // Too few nodes for k + m: an error with the numbers, nothing written.
    let src = c.dir.path().join("small.bin");
    std::fs::write(&src, b"x").unwrap();
    let out = c.cli(&["put", src.to_str().unwrap(), "/job/too-wide", "--k", "6", "--m", "2"], 6);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot place 8 fragments (k=6 + m=2)"), "{err}");

    // Kill m = 2 holders of the largest object at once (not the first node, the others' bootstrap).
    let (path, data, h) = objs.last().unwrap().clone();
    let victims: Vec<usize> = h.iter().map(|p| c.index_of(p)).filter(|&i| i != 0).take(2).collect();
    for &v in &victims {
        c.kill9(v);
    }
    for (p, d, _) in &objs {
        assert_eq!(&c.get(p).unwrap(), d, "{p} after killing 2 holders");
    }

    // One more (m + 1 lost): the read fails and names the missing fragments.
    let third = h.iter().map(|p| c.index_of(p)).find(|&i| i != 0 && !victims.contains(&i)).unwrap();
    c.kill9(third);
    let e = c.get(&path).unwrap_err();
    assert!(e.contains("cannot be rebuilt") && e.contains("missing fragments"), "{e}");
    let _ = data;

    // A recursive delete removes everything under the prefix on the live nodes.
    let out = c.cli(&["rm", "-r", "/job"], c.alive());
    assert!(out.status.success(), "{}", text(&out));
    let out = c.cli(&["ls", "/job/"], c.alive());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "", "{}", text(&out));
}

#[test]
fn killing_holders_in_the_middle_of_a_write_re_places_their_fragments() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    c.start(6, false, &["--repair-rate", "0"]);
    // RS(2,2) over 6 nodes: two spare nodes take the fragments of the killed ones.
    let coding = ["--k", "2", "--m", "2", "--cell-size", "64KiB"];
    let path = "/job/chk-2/big";
    // The same path and nodes give the same placement: learn the holders first.
    let planned = c.put(&payload(10, 0), path, &coding);
    let victims: Vec<usize> = planned.iter().map(|p| c.index_of(p)).filter(|&i| i != 0).take(2).collect();
    assert_eq!(victims.len(), 2);

    let data = payload(16 << 20, 7);
    let mut args: Vec<String> = ["put", "--overwrite", "-", path].iter().map(|s| s.to_string()).collect();
    args.extend(coding.iter().map(|s| s.to_string()));
    args.extend(c.bootstrap_args());
    args.extend(["--key-file".into(), c.key.display().to_string(), "--wait-nodes".into(), "6".into()]);
    let mut put = Command::new(EXE).args(&args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = put.stdin.take().unwrap();
    // Once the first half is taken from the pipe, its stripes are on the wire.
    stdin.write_all(&data[..8 << 20]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    for &v in &victims {
        c.kill9(v);
    }
    stdin.write_all(&data[8 << 20..]).unwrap();
    drop(stdin);
    let out = put.wait_with_output().unwrap();
    assert!(out.status.success(), "put with kills failed: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let h = holders(&stdout);
    for &v in &victims {
        assert!(!h.contains(&c.nodes[v].peer), "a killed node is still a holder: {stdout}");
    }
    // Both victims hold a fragment of the new version too (placement is a
    // function of the path and the live set): the writer replaced both.
    assert!(stdout.contains("replaced 2"), "{stdout}");
    assert_eq!(c.get(path).unwrap(), data);
}

#[test]
fn cluster_key_keeps_others_out_and_bad_frames_drop_the_connection() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    c.start(6, false, &[]);
    let data = payload(1 << 20, 3);
    c.put(&data, "/k/obj", SMALL_CELLS);

    // A node without a key refuses to start unless told to run an open cluster.
    let out = Command::new(EXE).args(["node", "--listen", "/ip4/127.0.0.1/tcp/0", "--memory", "1MiB"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--key-file"), "{}", text(&out));

    // Wrong key, and no key: cannot join, so cannot read.
    let other = c.dir.path().join("other.key");
    assert!(Command::new(EXE).arg("keygen").arg(&other).output().unwrap().status.success());
    for key in [vec!["--key-file", other.to_str().unwrap()], vec!["--insecure-no-cluster-key"]] {
        let out = Command::new(EXE)
            .args(["get", "/k/obj", "-"])
            .args(c.bootstrap_args())
            .args(&key)
            .args(["--wait-nodes", "1", "--wait-timeout", "3"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "read with {key:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("only 0 of the 1 storage nodes"), "{err}");
    }
    // A storage node with the wrong key does not become a member.
    let log = c.dir.path().join("intruder.log");
    let args: Vec<String> = ["--listen", "/ip4/127.0.0.1/tcp/0", "--memory", "1GiB", "--key-file", other.to_str().unwrap(), "--bootstrap", &c.nodes[0].addr]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (mut intruder, intruder_peer, _) = spawn_node(&args, &log);
    std::thread::sleep(Duration::from_secs(2));
    let members: Vec<String> = c.stats().into_iter().map(|m| m["node"].clone()).collect();
    assert_eq!(members.len(), 6);
    assert!(!members.contains(&intruder_peer));
    let _ = intruder.kill();
    let _ = intruder.wait();

    // Malformed and oversized frames from a keyed peer: connection dropped, node keeps serving.
    for bad in ["oversized", "unknown-kind", "garbage"] {
        let out = c.cli(&["debug-frame", "--bad", bad], 6);
        assert!(out.status.success(), "{}", text(&out));
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("DROPPED"), "{bad}: {}", text(&out));
        assert_eq!(c.get("/k/obj").unwrap(), data, "after a {bad} frame");
    }
    assert!(c.stat_sum("violations") >= 3);

    // A frozen node (SIGSTOP) leaves the live set through ping failures, and joins again when it resumes.
    let pid = c.nodes[5].child.as_ref().unwrap().id().to_string();
    let frozen = c.nodes[5].peer.clone();
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    let frozen_at = Instant::now();
    // Every other node's own view (its stats' live count) drops to 5.
    c.wait_for("the frozen node to leave the others' live sets", |c| {
        let out = c.cli(&["stats"], 5);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.lines().filter(|l| l.starts_with("node=")).count() == 5 && text.lines().filter(|l| l.starts_with("node=")).all(|l| l.contains(" live=5 "))
    });
    // five failed pings in a row at 300 ms + 650 ms, plus the polling of stats
    eprintln!("frozen node left every live set after {:.2} s", frozen_at.elapsed().as_secs_f64());
    assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
    c.wait_for("the resumed node to rejoin", |c| {
        let st = c.stats();
        st.len() == 6 && st.iter().any(|m| m["node"] == frozen) && st.iter().all(|m| m["live"] == "6")
    });
    assert_eq!(c.get("/k/obj").unwrap(), data);
}

#[test]
fn restarted_disk_node_serves_again_and_applies_deletes_it_missed() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    // no holder check: the missed deletes must arrive as tombstones (the check is tested below)
    c.start(6, true, &["--repair-rate", "0", "--holder-check-interval", "0"]);
    let keep = payload(2 << 20, 11);
    let h = c.put(&keep, "/keep/obj", SMALL_CELLS);
    let gone = [c.put(&payload(100_000, 12), "/gone/chk-1/a", SMALL_CELLS), c.put(&payload(100_000, 13), "/gone/chk-1/b", SMALL_CELLS)];

    // A path overwritten while one of its holders is away (RS(2,2): four of the five left).
    let small = ["--cell-size", "64KiB", "--k", "2", "--m", "2"];
    let first_write = c.put(&payload(50_000, 14), "/over/_metadata", &small);

    let x = first_write.iter().map(|p| c.index_of(p)).find(|&i| i != 0).unwrap();
    c.kill9(x);
    let out = c.cli(&["rm", "-r", "/gone"], 5);
    assert!(out.status.success(), "{}", text(&out));
    let newer = payload(60_000, 15);
    let second_write = c.put(&newer, "/over/_metadata", &small);
    c.restart(x);
    c.wait_live(6);
    // The returning node learns the deletes from its peers' tombstones: the two
    // objects removed, and the older write of the overwritten path.
    let peer = c.nodes[x].peer.clone();
    c.wait_for("the missed deletes to reach the restarted node", |c| {
        c.stats().iter().any(|m| m["node"] == peer && m["manifests"] == "1" && m["tombstone_deletes"] == "3")
    });
    assert_eq!(c.get("/over/_metadata").unwrap(), newer);
    let out = c.cli(&["ls", "/gone/"], 6);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "");
    // Each live holder counted the manifest copy the delete removed (`stats --json`, one object per line).
    let (counted, json) = manifests_deleted(&c, 6);
    // (a holder of both writes of /over/_metadata had its older manifest replaced by the newer one, not deleted)
    let older_manifests_deleted = first_write.iter().filter(|p| c.index_of(p) != x && !second_write.contains(p));
    let removed_by_requests = gone.iter().flatten().filter(|p| c.index_of(p) != x).chain(older_manifests_deleted).count();
    assert_eq!(counted, removed_by_requests as u64, "{json}");

    // Its fragment of /keep/obj is needed once two other holders are gone.
    let others: Vec<usize> = h.iter().map(|p| c.index_of(p)).filter(|&i| i != 0 && i != x).take(2).collect();
    for &o in &others {
        c.kill9(o);
    }
    assert_eq!(c.get("/keep/obj").unwrap(), keep);

    // SIGTERM: a clean shutdown with exit status 0.
    let mut n0 = c.nodes[0].child.take().unwrap();
    assert!(Command::new("kill").args(["-TERM", &n0.id().to_string()]).status().unwrap().success());
    let status = n0.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(std::fs::read_to_string(&c.nodes[0].log).unwrap().contains("node stopped"));
}

#[test]
fn repair_restores_redundancy_and_uncommitted_fragments_are_reclaimed() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    // Seven nodes: one spare for the repaired fragment.
    c.start(7, false, &["--repair-after", "1", "--reclaim-after", "4", "--reclaim-interval", "1"]);
    let data = payload(3 << 20, 21);
    let h = c.put(&data, "/r/obj", SMALL_CELLS);
    let lost = h.iter().map(|p| c.index_of(p)).find(|&i| i != 0).unwrap();
    c.kill9(lost);
    c.wait_for("the repair of /r/obj", |c| c.stat_sum("repaired") >= 1 && c.stat_sum("degraded") == 0);
    // Back at k + m: two more original holders may go (three in all, m = 2).
    let more: Vec<usize> = h.iter().map(|p| c.index_of(p)).filter(|&i| i != 0 && i != lost).take(2).collect();
    for &o in &more {
        c.kill9(o);
    }
    assert_eq!(c.get("/r/obj").unwrap(), data);

    // A writer killed before commit leaves fragments that are reclaimed later.
    let mut args: Vec<String> = ["put", "-", "/r/orphan", "--k", "2", "--m", "1", "--cell-size", "64KiB"].iter().map(|s| s.to_string()).collect();
    args.extend(c.bootstrap_args());
    args.extend(["--key-file".into(), c.key.display().to_string(), "--wait-nodes".into(), c.alive().to_string()]);
    let mut put = Command::new(EXE).args(&args).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = put.stdin.take().unwrap();
    stdin.write_all(&payload(1 << 20, 22)).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    put.kill().unwrap();
    put.wait().unwrap();
    drop(stdin);
    c.wait_for("the orphan fragments to be reclaimed", |c| c.stat_sum("reclaimed") >= 3);
    let out = c.cli(&["ls", "/r/"], c.alive());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1, "{}", text(&out));
}

#[test]
fn a_holder_back_after_its_fragment_was_repaired_elsewhere_drops_its_stale_copy() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    // Seven disk nodes (one spare for the rebuilt fragment), a holder check every 2 s.
    c.start(7, true, &["--repair-after", "1", "--holder-check-interval", "2"]);
    let data = payload(1 << 20, 31);
    let h = c.put(&data, "/s/obj", SMALL_CELLS);
    let away = h.iter().map(|p| c.index_of(p)).find(|&i| i != 0).unwrap();
    c.kill9(away);
    c.wait_for("the repair of /s/obj", |c| c.stat_sum("repaired") >= 1 && c.stat_sum("degraded") == 0);
    // Back with its fragment and the manifest revision that still names it.
    c.restart(away);
    c.wait_live(7);
    let peer = c.nodes[away].peer.clone();
    c.wait_for("the returning holder to drop its stale copy", |c| {
        c.stats().iter().any(|m| m["node"] == peer && m["stale_dropped"] == "1" && m["manifests"] == "0" && m["fragments"] == "0")
    });
    // The other holders keep theirs: the object reads from the holders the repair chose.
    assert_eq!(c.stat_sum("stale_dropped"), 1);
    assert_eq!(c.stat_sum("manifests"), 6);
    assert_eq!(c.get("/s/obj").unwrap(), data);
}

#[test]
fn a_delete_goes_to_the_holders_and_one_that_was_down_gets_it_from_them_when_it_returns() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    // No holder check: the delete must reach the returning holder as a hint from the others.
    c.start(7, true, &["--repair-rate", "0", "--holder-check-interval", "0"]);
    let h = c.put(&payload(200_000, 41), "/d/obj", SMALL_CELLS);
    let away = h.iter().map(|p| c.index_of(p)).find(|&i| i != 0).unwrap();
    c.kill9(away);
    c.wait_for("every node to see the holder gone", |c| c.stats().iter().all(|m| m["live"] == "6"));
    let out = c.cli(&["rm", "/d/obj"], 6);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(c.stat_sum("manifests"), 0, "the live holders deleted their copies");
    let (counted, json) = manifests_deleted(&c, 6);
    assert_eq!(counted, 5, "{json}");
    assert_eq!(c.stat_sum("hints"), 5, "each live holder keeps the tombstone for the one away");
    c.restart(away);
    c.wait_live(7);
    let peer = c.nodes[away].peer.clone();
    c.wait_for("the returning holder to apply the delete it missed", |c| {
        let s = c.stats();
        s.iter().any(|m| m["node"] == peer && m["manifests"] == "0" && m["fragments"] == "0" && m["tombstone_deletes"] == "1")
            && s.iter().all(|m| m["hints"] == "0")
    });
    let handed_over = (0..c.nodes.len())
        .filter(|&i| i != away && std::fs::read_to_string(&c.nodes[i].log).unwrap().contains("handed over the deletes a returning holder missed"))
        .count();
    assert!(handed_over >= 1, "no holder handed over its hint; logs in {}", c.dir.path().display());
    let e = c.get("/d/obj").unwrap_err();
    assert!(e.contains("no such object"), "{e}");
    let out = c.cli(&["ls", "/d/"], 7);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "");
}

#[test]
fn a_node_that_joins_takes_over_its_share_and_the_holders_it_replaced_drop_theirs() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    let flags = ["--rebalance-after", "2", "--repair-rate", "0"];
    c.start(6, false, &flags);
    // RS(2,1) over 6 nodes: a 7th ranks among the 3 holders of about 3/7 of the objects.
    let objs: Vec<(String, Vec<u8>)> = (0..20).map(|i| (format!("/b/obj-{i}"), payload(150_000 + i * 1_000, 60 + i as u64))).collect();
    for (p, d) in &objs {
        c.put(d, p, &["--k", "2", "--m", "1", "--cell-size", "64KiB"]);
    }
    c.start(1, false, &flags);
    let peer = c.nodes[6].peer.clone();
    c.wait_for("the joined node to take over its share", |c| {
        let s = c.stats();
        let sum = |f: &str| s.iter().map(|m| m[f].parse::<u64>().unwrap()).sum::<u64>();
        let joined: u64 = s.iter().find(|m| m["node"] == peer).map_or(0, |m| m["fragments"].parse().unwrap());
        joined > 0 && sum("rebalanced") == joined && sum("fragments") == 60 && sum("manifests") == 60
    });
    let moved = c.stat_sum("rebalanced");
    assert!((1..=20).contains(&moved), "one fragment per object at most, {moved} moved");
    assert_eq!(c.stat_sum("rebalance_failures"), 0);
    for (p, d) in &objs {
        assert_eq!(&c.get(p).unwrap(), d, "{p} after the move");
    }
}

#[test]
fn library_node_in_cluster_mode_writes_and_reads_over_the_network() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    c.start(6, false, &[]);
    let (rt, node) = library_node(&c);
    let me = node.net().unwrap().id().clone();
    let data = payload(3 << 20, 31);
    let back = rt.block_on(async {
        let mut w = node.client().create("/lib/obj", false).await.unwrap();
        w.write(&data).await.unwrap();
        let m = w.close().await.unwrap();
        assert!(!m.holders.contains(&me), "the writer's own node holds no fragment by default");
        node.client().open("/lib/obj").await.unwrap().read_to_end().await.unwrap()
    });
    assert_eq!(back, data);
    // The object is visible to the command-line client too.
    assert_eq!(c.get("/lib/obj").unwrap(), data);
    assert!(node.stats_json().contains("\"network\""));
    // `fragstate stats` shows what the library node's client measured of each peer it read from
    let json = String::from_utf8_lossy(&c.cli(&["stats", "--json"], 7).stdout).to_string();
    let mine: serde_json::Value = json.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).find(|v| v["node"] == me.as_str()).expect(&json);
    assert_eq!(mine["client"]["objectsWritten"], 1, "{mine}");
    let peers = mine["client"]["peers"].as_array().unwrap();
    // reads measure the data holders, and uploads (adaptive mode, on by default) every holder
    assert!(peers.len() >= 4 && peers.iter().all(|p| p["samples"].as_u64() > Some(0) && p["bytesPerS"].as_u64() > Some(0)), "{mine}");
    // the standalone storage nodes have no client of their own
    assert!(json.lines().filter(|l| !l.contains(me.as_str())).all(|l| l.contains("\"client\":null")), "{json}");
    let human = String::from_utf8_lossy(&c.cli(&["stats"], 7).stdout).to_string();
    assert_eq!(human.lines().filter(|l| l.starts_with("  peer=")).count(), peers.len(), "{human}");
    // a speed probe is answered with the bytes asked for, up to the limit, and refused beyond it
    let net = node.net().unwrap();
    let peer = fragstate_core::ids::NodeId::from(peers[0]["node"].as_str().unwrap().to_string());
    rt.block_on(fragstate_client::transport::Transport::probe(net, &peer, fragstate_net::wire::MAX_PROBE_BYTES)).unwrap();
    let e = rt.block_on(fragstate_client::transport::Transport::probe(net, &peer, fragstate_net::wire::MAX_PROBE_BYTES + 1)).unwrap_err().to_string();
    assert!(e.contains("probe bytes") && e.contains("1048577"), "{e}");
    drop(node);
    drop(rt);
}

/// A node of this process in cluster mode (as a Flink process runs one),
/// joined to `c`, with the runtime it runs on.
fn library_node(c: &Cluster) -> (tokio::runtime::Runtime, fragstate_node::Node) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let config = fragstate_node::NodeConfig {
        mode: fragstate_node::Mode::Cluster,
        listen: Some("/ip4/127.0.0.1/tcp/0".into()),
        bootstrap: vec![c.nodes[0].addr.clone()],
        cluster_key_file: Some(c.key.display().to_string()),
        store_memory: 1 << 30,
        cell_size: 65536,
        // as the command-line nodes of this run (`FRAGSTATE_MEMBERSHIP`, read by `fragstate node`)
        membership: membership(),
        directory_index: true,
        ..Default::default()
    };
    let node = {
        let _enter = rt.enter();
        fragstate_node::Node::start(config).unwrap()
    };
    (rt, node)
}

/// The membership of this run's nodes (`FRAGSTATE_MEMBERSHIP`, read by `fragstate node`).
fn membership() -> String {
    std::env::var("FRAGSTATE_MEMBERSHIP").unwrap_or_else(|_| fragstate_net::Membership::default().to_string())
}

/// The directory index over the network (NETWORK.md, "directory index"): a
/// checkpoint directory's questions — is a file there, is it a directory, is
/// it empty — are answered right after one of the directory's index holders
/// is `kill -9`'d, and under SWIM from the index (`k` complete answers of the
/// five left; under the mesh every node forgets its records' completeness
/// when a peer's connection breaks, and the answers come from every node).
#[test]
fn directory_questions_stay_right_when_an_index_holder_is_killed() {
    use fragstate_client::client::PathKind;
    use fragstate_client::transport::Transport;
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    c.start(8, false, &[]);
    let (rt, node) = library_node(&c);
    let (client, net) = (node.client(), node.net().unwrap());
    let dir = "/ix/job/chk-1";
    rt.block_on(async {
        client.mkdirs("/ix/job").await.unwrap();
        client.mkdirs(dir).await.unwrap();
        for (i, f) in ["a", "b"].iter().enumerate() {
            let mut w = client.create(&format!("{dir}/{f}"), false).await.unwrap();
            w.write(&payload(100_000, 50 + i as u64)).await.unwrap();
            w.close().await.unwrap();
        }
    });
    let holders = fragstate_core::dir_index::holders(&format!("{dir}/"), &net.live_nodes(), 6, Default::default());
    let victim = holders.iter().find_map(|h| c.nodes.iter().position(|n| n.peer == h.as_str())).expect("a holder among the processes");
    c.kill9(victim);
    let gone = c.nodes[victim].peer.clone();
    c.wait_for("the library node to see the index holder gone", |_| net.live_nodes().iter().all(|n| n.id.as_str() != gone));
    let before = client.stats();
    rt.block_on(async {
        assert!(matches!(client.path_kind(&format!("{dir}/a")).await.unwrap(), PathKind::Object(_)));
        assert_eq!(client.path_kind(&format!("{dir}/_metadata")).await.unwrap(), PathKind::Missing);
        assert_eq!(client.path_kind(dir).await.unwrap(), PathKind::Directory);
    });
    let settled = client.stats().index_reads_settled - before.index_reads_settled;
    if membership() == "swim" {
        assert!(settled >= 3, "under SWIM the index answers after one holder's kill: {settled} reads settled");
    }
    let ls = c.cli(&["ls", "/ix/job/chk-1/"], 7);
    assert_eq!(String::from_utf8_lossy(&ls.stdout).lines().count(), 2, "{}", text(&ls));
    rt.block_on(async {
        let e = client.delete(dir, false).await.expect_err("not empty");
        assert!(e.to_string().contains("not empty"), "{e}");
        for f in ["a", "b"] {
            assert_eq!(client.delete(&format!("{dir}/{f}"), false).await.unwrap().objects, 1);
        }
        client.delete(dir, false).await.unwrap();
        assert_eq!(client.path_kind(dir).await.unwrap(), PathKind::Missing);
        assert_eq!(client.path_kind("/ix/job").await.unwrap(), PathKind::Missing);
    });
    drop(node);
    drop(rt);
}

/// Host names work wherever a node or client dials: `/dns4/localhost/tcp/P`
/// (the form of the Flink plugin's default bootstrap) for nodes and client
/// commands. A node whose bootstrap node is not up yet warns, naming the
/// address, and joins once it is. A host name as a listen address is an
/// error that names it and what is allowed.
#[test]
fn dns_bootstrap_addresses_resolve_for_nodes_and_clients() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    let port = free_port();
    let dns = format!("/dns4/localhost/tcp/{port}");
    c.bootstrap = Some(dns.clone());
    // The first node starts before anything listens on the port (not `start`: it waits for the cluster).
    c.spawn_named("early", "/ip4/127.0.0.1/tcp/0", &["--bootstrap", &dns]);
    c.wait_for("a warning that names the unreachable bootstrap address", |c| {
        let log = std::fs::read_to_string(&c.nodes[0].log).unwrap_or_default();
        log.lines().any(|l| l.contains("WARN") && l.contains("cannot reach bootstrap address") && l.contains(&dns))
    });
    // The node it bootstraps from comes up on that port; four more join through the name.
    c.spawn_named("seed", &format!("/ip4/127.0.0.1/tcp/{port}"), &[]);
    c.start(4, false, &[]);
    c.wait_live(6);
    let data = payload(3 << 20, 11);
    let h = c.put(&data, "/dns/obj", SMALL_CELLS);
    assert_eq!(h.len(), 6);
    assert_eq!(c.get("/dns/obj").unwrap(), data);
    // Every node sees every other one (the early node redialled the name until the seed was up).
    c.wait_for("every node to see all 6", |c| c.stats().iter().all(|s| s.get("live").map(String::as_str) == Some("6")));

    let out = Command::new(EXE)
        .args(["node", "--listen", "/dns4/localhost/tcp/0", "--memory", "64MiB", "--key-file"])
        .arg(&c.key)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("/dns4/localhost/tcp/0") && err.contains("/ip4/0.0.0.0/tcp/7710"), "{}", text(&out));
}

/// The README's layout: the first node (the JobManager's) is its own bootstrap
/// and every other node joins through it. After a `kill -9` of that node and a
/// restart on the same port — with a new peer id, as a memory store has — it
/// dials nobody, so the others must find it: each redials a bootstrap address
/// whose node is gone (`dials.rs`, `redial_gone`) and joins through the node
/// there. A client that knows only the seed's address then sees the whole
/// cluster and reads what was written before. (Before 2026-12-07 the seed
/// stayed alone for good: live 1, every read through it failed.)
#[test]
fn a_seed_that_is_its_own_bootstrap_learns_the_cluster_again_after_a_restart() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    let port = free_port();
    let seed = format!("/ip4/127.0.0.1/tcp/{port}");
    c.spawn_named("seed", &seed, &["--bootstrap", &seed]);
    // the other nodes and every client command join through the seed's address only
    c.bootstrap = Some(seed.clone());
    c.start(6, false, &[]);
    let data = payload(1 << 20, 21);
    c.put(&data, "/seed/obj", SMALL_CELLS);

    let before = c.nodes[0].peer.clone();
    c.kill9(0);
    c.respawn(0);
    assert_ne!(c.nodes[0].peer, before, "a memory-store node restarts under a new peer id");
    c.wait_for("a client through the restarted seed to see all 7 nodes", |c| c.cli(&["ls", "/"], 7).status.success());
    assert_eq!(c.get("/seed/obj").unwrap(), data);
    c.wait_for("every node to see all 7", |c| c.stats().iter().all(|s| s.get("live").map(String::as_str) == Some("7")));
}

/// The one fragment file in node `i`'s store directory.
fn only_fragment_file(c: &Cluster, i: usize) -> PathBuf {
    let dir = c.dir.path().join(format!("store-{i}")).join("fragments");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// Flips three bytes of the cell of `stripe` in a fragment file, behind its node's back.
fn flip_cell_on_disk(file: &Path, stripe: usize) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().read(true).write(true).open(file).unwrap();
    let (offset, frame) = fragstate_store::scan_fragment_file(&f, file).unwrap().cells[stripe];
    for at in [offset, offset + frame.len as u64 / 2, offset + frame.len as u64 - 1] {
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, at).unwrap();
        f.write_all_at(&[!b[0]], at).unwrap();
    }
}

/// `manifestsDeleted` summed over the nodes (`stats --json`, one object per line), and the JSON.
fn manifests_deleted(c: &Cluster, nodes: usize) -> (u64, String) {
    let json = String::from_utf8_lossy(&c.cli(&["stats", "--json"], nodes).stdout).to_string();
    let sum = json.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["manifestsDeleted"].as_u64().unwrap()).sum();
    (sum, json)
}

fn node_stat(c: &Cluster, peer: &str, field: &str) -> u64 {
    c.stats().iter().find(|m| m["node"] == peer).map_or(0, |m| m[field].parse().unwrap())
}

#[test]
fn corrupt_cells_are_rebuilt_when_a_reader_reports_them_and_by_the_scrub() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    // No scrub pass at first: only a reader's report can get a cell rebuilt.
    c.start(6, true, &["--scrub-rate", "0"]);
    let data = payload(1 << 20, 31);
    let h = c.put(&data, "/s/obj", SMALL_CELLS);

    // A data cell flipped on disk: the read falls back to parity and reports it.
    let x = c.index_of(&h[0]);
    let file = only_fragment_file(&c, x);
    let good = std::fs::read(&file).unwrap();
    flip_cell_on_disk(&file, 1);
    assert_eq!(c.get("/s/obj").unwrap(), data);
    c.wait_for("the reported cell to be rebuilt", |c| node_stat(c, &h[0], "cells_rebuilt") == 1);
    assert_eq!(node_stat(&c, &h[0], "corrupt_reports_confirmed"), 1);
    assert_eq!(node_stat(&c, &h[0], "scrub_passes"), 0);
    assert_eq!(std::fs::read(&file).unwrap(), good, "the cell's bytes are good again");

    // Rot while a node is down; it comes back scrubbing and finds it itself.
    // (Not node 0: it bootstraps from nobody, and comes back on a new port.)
    let (fy, y) = h.iter().enumerate().skip(1).map(|(f, p)| (f, c.index_of(p))).find(|&(_, i)| i != 0).unwrap();
    c.kill9(y);
    let file = only_fragment_file(&c, y);
    let good = std::fs::read(&file).unwrap();
    flip_cell_on_disk(&file, 3);
    let args = &mut c.nodes[y].args;
    let at = args.iter().position(|a| a == "--scrub-rate").unwrap();
    args[at + 1] = "64MiB".into();
    args.extend(["--scrub-interval".into(), "1".into()]);
    c.restart(y);
    c.wait_live(6);
    c.wait_for("the scrub to rebuild the rotten cell", |c| node_stat(c, &h[fy], "cells_rebuilt") == 1);
    // (Found more than once if the first pass ran before the peers were back: that rebuild failed.)
    assert!(node_stat(&c, &h[fy], "scrub_corrupt") >= 1);
    assert!(node_stat(&c, &h[fy], "scrubbed_cells") >= 4);
    assert_eq!(std::fs::read(&file).unwrap(), good, "the cell's bytes are good again");
    assert_eq!(c.get("/s/obj").unwrap(), data);
}
