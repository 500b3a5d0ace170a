//! `Membership::Swim` over real libp2p on loopback: nodes join through one
//! seed without a full mesh, objects are written and read back, a node that
//! stops answering is found dead by every other within SWIM's bound, one
//! that leaves is known gone at once, and a node that was away gets the
//! deletes it missed from the members greeting it.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fragstate_client::transport::Transport;
use fragstate_client::Client;
use fragstate_core::ids::NodeId;
use fragstate_core::params::{CodingParams, Compression};
use fragstate_net::{DialCause, Membership, NetConfig, NetNode, Role};
use fragstate_store::FragmentStore;
use libp2p::identity::Keypair;

fn config(role: Role, name: &str, bootstrap: &[libp2p::Multiaddr]) -> NetConfig {
    let mut cfg = NetConfig::new(Keypair::generate_ed25519(), role, None);
    cfg.set_membership(Membership::Swim);
    cfg.domain = name.to_string();
    cfg.bootstrap = bootstrap.to_vec();
    if role == Role::Storage {
        cfg.store = Some(Arc::new(FragmentStore::in_memory(name, 1 << 30)));
    }
    cfg
}

async fn start(role: Role, name: &str, bootstrap: &[libp2p::Multiaddr]) -> NetNode {
    crate::init_logs();
    NetNode::start(config(role, name, bootstrap)).await.unwrap()
}

/// Waits until every node in `nodes` sees exactly `n` live storage nodes; the time it took.
async fn until_all_see(nodes: &[&NetNode], n: usize, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let seen: Vec<usize> = nodes.iter().map(|x| x.live_nodes().len()).collect();
        if seen.iter().all(|s| *s == n) {
            return started.elapsed();
        }
        assert!(started.elapsed() < within, "after {within:?} the nodes see {seen:?} live storage nodes, not {n} each: {}", missing(nodes));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// For the nodes that miss storage nodes some other node sees live: which,
/// and whether each still counts it up (a member it cannot reach: a dial
/// failed or a connection broke) or down (not a member in its view).
fn missing(nodes: &[&NetNode]) -> String {
    let all: BTreeSet<_> = nodes.iter().flat_map(|x| x.live_nodes()).map(|i| i.id).collect();
    let mut out = Vec::new();
    for (i, x) in nodes.iter().enumerate() {
        let live: BTreeSet<_> = x.live_nodes().into_iter().map(|i| i.id).collect();
        for id in all.iter().filter(|id| !live.contains(*id) && *id != x.id()) {
            let state = match x.down_since(id) {
                None => "up but unreachable".to_string(),
                Some(t) => format!("down for {:?}", t.elapsed()),
            };
            out.push(format!("node {i} misses {id} ({state})"));
        }
    }
    out.join("; ")
}

async fn put(client: &Client, path: &str, data: &[u8]) {
    let params = CodingParams::new(4, 2, 64 << 10, Compression::None).unwrap();
    let mut w = client.create_with(path, params, true).await.unwrap();
    w.write(data).await.unwrap();
    w.close().await.unwrap();
}

async fn get(client: &Client, path: &str) -> Vec<u8> {
    let mut r = client.open(path).await.unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = r.read(&mut buf).await.unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swim_cluster_serves_objects_and_finds_stopped_and_leaving_nodes() {
    let _no_flood = crate::FLOODS_APART.read().await;
    let seed = start(Role::Storage, "n0", &[]).await;
    let mut nodes = vec![seed.clone()];
    for i in 1..7 {
        nodes.push(start(Role::Storage, &format!("n{i}"), &seed.listen_addrs()).await);
    }
    let client_node = start(Role::Client, "client", &nodes[3].listen_addrs()).await;
    let everyone: Vec<&NetNode> = nodes.iter().chain([&client_node]).collect();
    let formed = until_all_see(&everyone, 7, Duration::from_secs(30)).await;
    eprintln!("7 storage nodes and a client know each other after {formed:?}");
    for n in &everyone {
        let t = n.traffic();
        assert!(t.membership_messages_sent > 0 && t.membership_bytes_sent > t.membership_messages_sent, "{t:?}");
        assert!(t.connections_opened > 0 && t.connected_peers <= 7, "{t:?}");
    }

    let client = Client::new(Arc::new(client_node.clone()), client_node.client_config(false)).unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 4096) as u8).collect();
    put(&client, "swim/a", &data).await;
    assert!(get(&client, "swim/a").await == data, "read back differs");

    // A node that stops answering (its tasks end, as when frozen or killed) is
    // dead at every other node after SWIM's suspicion, with no full mesh to notice.
    let stopped = nodes.pop().unwrap();
    stopped.stop();
    // The nodes whose connection to it broke stop sending it requests at once;
    // all others do once SWIM declares it dead.
    let others: Vec<&NetNode> = nodes.iter().chain([&client_node]).collect();
    let avoided_after = until_all_see(&others, 6, Duration::from_secs(20)).await;
    let started = Instant::now() - avoided_after;
    loop {
        let waiting = others.iter().filter(|n| n.down_since(stopped.id()).is_none()).count();
        if waiting == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{waiting} nodes still count the stopped node as up after 20 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let dead_after = started.elapsed();
    eprintln!("a stopped node was out of every other's live view after {avoided_after:?}, dead at every other after {dead_after:?}");
    // A reader asks each holder whether it is live (`Transport::is_live`): the same answer as the whole view.
    for n in &others {
        let view: BTreeSet<NodeId> = n.live_nodes().into_iter().map(|i| i.id).collect();
        for candidate in others.iter().map(|x| x.id()).chain([stopped.id()]) {
            assert_eq!(n.is_live(candidate), view.contains(candidate), "{}: is {candidate} live?", n.id());
        }
    }
    assert!(dead_after >= Duration::from_millis(2_000), "declared dead before the suspicion could run out: {dead_after:?}");
    assert!(get(&client, "swim/a").await == data, "read back differs with a holder gone");

    // A node that leaves tells the others: gone before any suspicion could end.
    let leaving = nodes.pop().unwrap();
    leaving.shutdown().await;
    let others: Vec<&NetNode> = nodes.iter().chain([&client_node]).collect();
    let left_after = until_all_see(&others, 5, Duration::from_secs(20)).await;
    eprintln!("a leaving node was gone at every other after {left_after:?}");
    assert!(left_after < Duration::from_millis(2_000), "a leave took as long as a death: {left_after:?}");

    client_node.shutdown().await;
    for n in nodes {
        n.shutdown().await;
    }
}

/// Larger than the ring monitors (8): connections opened while the cluster
/// formed, to members that are no node's successors in the end, close when
/// idle — and must stay closed. A peer's idle timeout reads as an I/O error
/// at this end; taken for a broken connection, it made the node probe and
/// redial that peer every 5 s for good (~0.9 dials per node and second in an
/// idle 100-node cluster before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_cluster_larger_than_the_monitors_opens_no_connections_for_probes() {
    let _no_flood = crate::FLOODS_APART.read().await;
    let n = 24;
    let mut nodes = Vec::new();
    for i in 0..n {
        let bootstrap = nodes.first().map(|s: &NetNode| s.listen_addrs()).unwrap_or_default();
        nodes.push(start(Role::Storage, &format!("s{i}"), &bootstrap).await);
    }
    until_all_see(&nodes.iter().collect::<Vec<_>>(), n, Duration::from_secs(60)).await;
    // Past the idle timeout (5 s) of the connections the formation opened.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let probe_dials = |nodes: &[NetNode]| nodes.iter().map(|x| x.traffic().dials[DialCause::Probe as usize]).sum::<u64>();
    let before = probe_dials(&nodes);
    tokio::time::sleep(Duration::from_secs(12)).await;
    let dials = probe_dials(&nodes) - before;
    // A false suspicion on a loaded CI host may move a successor; a cycle per stale connection is dozens.
    assert!(dials < n as u64 / 2, "{dials} probes of {n} idle nodes had to connect first in 12 s");
    for x in &nodes {
        x.stop();
    }
}
