//! Adversarial multi-process tests (issue 12): `fragstate debug-attack` as a
//! hostile peer against one node of a running cluster — a member that never
//! reads its answers, floods streams, sends oversize and mistyped frames or
//! forges manifests with the largest version, an outsider without the key
//! that opens connections by the thousand — and m members that claim
//! unlimited space and drop what they are given, while an honest client
//! keeps writing and reading 8 MiB objects.
//!
//! Asserted: every honest operation succeeds with the right bytes, every
//! node process stays up, bad frames are counted as protocol violations,
//! keyless connections are closed by the victim, the liars were given
//! fragments and dropped them, and an honest overwrite of a forged path
//! fails with a clear error. Printed, not asserted (two shared cores): the
//! honest rounds' median time before and during each attack, and the share
//! of fragments the liars attracted.
//!
//! Each attack lasts `FRAGSTATE_ATTACK_SECONDS` (default 15; CI's quick tier
//! sets 8).

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use fragstate_core::sample::noise as payload;

const OBJECT: usize = 8 << 20;
const NODES: usize = 7;

/// One honest round once `nodes` storage nodes are live: put, then get and
/// compare an 8 MiB object; its seconds and the object's holders.
fn honest_round(c: &Cluster, round: u64, nodes: usize) -> (f64, Vec<String>) {
    let data = payload(OBJECT, round);
    let path = format!("fragstate://honest/obj-{round}");
    let t = Instant::now();
    let holders = c.put_waiting(&data, &path, &[], nodes);
    // waiting for every storage node (the liars too): a reader that starts before it has
    // connected to an honest holder while two liars drop theirs has no spare fragment
    let back = c.get_waiting(&path, nodes).unwrap_or_else(|e| panic!("honest get of {path} failed: {e}"));
    assert!(back == data, "honest get of {path} returned other bytes");
    (t.elapsed().as_secs_f64(), holders)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn assert_all_up(c: &mut Cluster) {
    for n in &mut c.nodes {
        let child = n.child.as_mut().expect("node started");
        assert!(child.try_wait().unwrap().is_none(), "node {} died; log {}", n.peer, n.log.display());
    }
}

/// Starts `fragstate debug-attack <attack>` for `seconds` against node 0.
fn spawn_attacker(c: &Cluster, attack: &[&str], seconds: u64) -> Child {
    let mut cmd = Command::new(EXE);
    cmd.arg("debug-attack").args(attack).args(["--seconds", &seconds.to_string()]);
    cmd.args(c.bootstrap_args()).args(["--key-file", &c.key.display().to_string(), "--wait-nodes", &NODES.to_string()]);
    if attack.contains(&"keyless") {
        // /ip4/127.0.0.1/tcp/PORT/p2p/ID -> 127.0.0.1:PORT (the keyless attacker does not use the key)
        let parts: Vec<&str> = c.nodes[0].addr.split('/').collect();
        cmd.args(["--tcp", &format!("{}:{}", parts[2], parts[4])]);
    } else {
        cmd.args(["--target", &c.nodes[0].peer]);
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start the attacker")
}

/// The report line of an attacker that has ended.
fn report_of(attacker: Child) -> String {
    let out = attacker.wait_with_output().expect("attacker ends");
    assert!(out.status.success(), "attacker failed: {}", String::from_utf8_lossy(&out.stderr));
    let report = String::from_utf8_lossy(&out.stdout).lines().find(|l| l.starts_with("ATTACK ")).unwrap_or_default().to_string();
    assert!(!report.is_empty(), "attacker printed no report: {}", String::from_utf8_lossy(&out.stderr));
    report
}

/// Honest rounds (at least one) for `seconds`, once `nodes` storage nodes are live: times and holders.
fn rounds_for(c: &Cluster, seconds: u64, nodes: usize, round: &mut u64) -> (Vec<f64>, Vec<Vec<String>>) {
    let started = Instant::now();
    let (mut times, mut holders) = (Vec::new(), Vec::new());
    while times.is_empty() || started.elapsed() < Duration::from_secs(seconds) {
        *round += 1;
        let (t, h) = honest_round(c, *round, nodes);
        times.push(t);
        holders.push(h);
    }
    (times, holders)
}

/// Runs `fragstate debug-attack <attack>` for `seconds` against node 0 and
/// honest rounds while it lasts; the honest round times and the attacker's report line.
fn under_attack(c: &mut Cluster, attack: &[&str], seconds: u64, round: &mut u64) -> (Vec<f64>, String) {
    let attacker = spawn_attacker(c, attack, seconds);
    let (times, _) = rounds_for(c, seconds, NODES, round);
    let report = report_of(attacker);
    assert_all_up(c);
    (times, report)
}

/// A line of the printed table: the honest rounds during `attack` against those before (`base`).
fn row(attack: &str, rounds: &[f64], base: f64, detail: &str) -> String {
    let m = median(rounds.to_vec());
    format!("{attack}: {} rounds, median {m:.2} s ({:.2}x); {detail}", rounds.len(), m / base)
}

/// A `key=value` figure of the attacker's report line.
fn figure(report: &str, key: &str) -> u64 {
    field(report, key).parse().unwrap_or_else(|_| panic!("{key} in {report:?} is not a number"))
}

/// A `key=value` field of the attacker's report line.
fn field<'a>(report: &'a str, key: &str) -> &'a str {
    report.split(' ').find_map(|kv| kv.strip_prefix(&format!("{key}="))).unwrap_or_else(|| panic!("no {key} in {report:?}"))
}

/// A stat of node 0, the victim.
fn victim_stat(c: &Cluster, field: &str) -> u64 {
    let stats = c.stats();
    let victim = stats.iter().find(|m| m["node"] == c.nodes[0].peer).expect("victim in stats");
    victim[field].parse().unwrap()
}

#[test]
fn honest_traffic_survives_every_attack_on_a_node() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Cluster::new();
    c.start(NODES, false, &[]);
    let seconds: u64 = match std::env::var("FRAGSTATE_ATTACK_SECONDS") {
        Ok(v) => v.parse().ok().filter(|s| *s >= 6).unwrap_or_else(|| panic!("FRAGSTATE_ATTACK_SECONDS={v}: expected seconds, at least 6")),
        Err(_) => 15,
    };
    let mut round = 0;
    let before: Vec<f64> = (0..3).map(|_| {
        round += 1;
        honest_round(&c, round, NODES).0
    }).collect();
    let base = median(before);
    let mut table = vec![format!("no attack: honest put+get of 8 MiB, median {base:.2} s")];

    // A never-reading peer and silent streams: what holds them back is libp2p's own caps as much
    // as fragstate's (yamux: 512 streams per connection, receive windows that may buffer a whole
    // answer; the victim: 4 connections per peer, 256 streams per peer, every write within the
    // request timeout), so which counter moves varies from run to run; printed, not asserted.
    // Asserted for both: the honest rounds (inside under_attack) and every node up.
    for attack in ["never-read", "stream-flood"] {
        let refused = victim_stat(&c, "streams_refused");
        let (t, report) = under_attack(&mut c, &["--attack", attack], seconds, &mut round);
        let refused = victim_stat(&c, "streams_refused") - refused;
        table.push(row(attack, &t, base, &format!("victim refused {refused} streams; {report}")));
    }

    let violations = victim_stat(&c, "violations");
    let (t, report) = under_attack(&mut c, &["--attack", "bad-frames"], seconds, &mut round);
    assert!(figure(&report, "frames_sent") > 0);
    assert!(victim_stat(&c, "violations") > violations, "bad frames were not counted as violations: {report}");
    table.push(row("bad-frames", &t, base, &report));

    // From another address than the honest nodes' (127.0.0.1): the victim gives one address
    // only its share of half-open connections, so the honest client still connects.
    let (t, report) = under_attack(&mut c, &["--attack", "keyless", "--from", "127.0.0.2"], seconds, &mut round);
    assert!(figure(&report, "connections_closed_by_target") > 0, "the victim held every keyless connection: {report}");
    table.push(row("keyless", &t, base, &report));

    // m = 2 liars claiming unlimited space in two failure domains of their own: they attract
    // fragments up to the placement cap (4x the median free space), each holds at most one
    // fragment of an object (one per failure domain), and what they drop is read around.
    let liars: Vec<Child> = (0..2).map(|_| spawn_attacker(&c, &["--attack", "capacity-liar"], seconds)).collect();
    let (t, holders) = rounds_for(&c, seconds.saturating_sub(3), NODES + 2, &mut round);
    let reports: Vec<String> = liars.into_iter().map(report_of).collect();
    let liar_peers: Vec<String> = reports.iter().map(|r| field(r, "peer").to_string()).collect();
    for r in &reports {
        assert!(figure(r, "fragments_dropped") > 0, "a liar was given no fragment to drop: {r}");
    }
    let on_liars: usize = holders.iter().map(|h| h.iter().filter(|n| liar_peers.contains(n)).count()).sum();
    let fragments: usize = holders.iter().map(Vec::len).sum();
    table.push(row(
        "capacity-liar x2",
        &t,
        base,
        &format!(
            "{on_liars} of {fragments} fragments placed on the liars ({:.0} %; equal capacity would give {:.0} %, one per object each at most {:.0} %; \
             every dropped fragment read around); {}",
            100.0 * on_liars as f64 / fragments as f64,
            100.0 * 2.0 / (NODES + 2) as f64,
            100.0 * 2.0 / fragments.div_ceil(holders.len()) as f64,
            reports.join("; ")
        ),
    ));
    assert_all_up(&mut c);
    // The liars are gone once every node has found so: a member that left still counts for a
    // while, and the next attack's phase starts from the cluster's own nodes.
    c.wait_for("every node to count the cluster's nodes only, the liars gone", |c| c.stats().iter().all(|m| m["live"] == NODES.to_string()));

    // Last: forged manifests pin every path at the largest version. Reads go on (same
    // content); an honest overwrite gets a clear error naming the path and the version.
    let (t, report) = under_attack(&mut c, &["--attack", "forged-manifests"], 5, &mut round);
    assert!(figure(&report, "manifests_forged") > 0, "{report}");
    table.push(row("forged-manifests", &t, base, &report));
    let path = "fragstate://honest/obj-1";
    assert!(c.get(path).expect("a forged-version path still reads") == payload(OBJECT, 1));
    let src = c.dir.path().join("overwrite.tmp");
    std::fs::write(&src, b"new").unwrap();
    let out = c.cli(&["put", "--overwrite", src.to_str().unwrap(), path], NODES);
    assert!(!out.status.success(), "an overwrite past u64::MAX succeeded: {}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(path) && err.contains(&u64::MAX.to_string()), "unclear error: {err}");
    assert_all_up(&mut c);

    println!("{}", table.join("\n"));
}
