//! Membership at scale, simulated: `n` nodes running the real SWIM state
//! machine ([`fragstate_core::swim`]) over a discrete-event network (1–3 ms
//! per message, optional loss), nothing of the protocol re-implemented.
//!
//! One run: nodes `0 .. n - 1` start 2 ms apart (a mass start) and join
//! through node 0; once every one knows every other as alive (*converged*)
//! and no node has news left to pass on (*settled*), one anti-entropy interval (at least 60 s) of idle
//! traffic is counted: messages and bytes sent per node and second (bytes as
//! bincode sizes with 52-character ids and ~60 bytes of metadata, as on the
//! wire), and the distinct peers each node talked to in each second (the
//! connections it would hold if they closed after 1 s unused). Then the last
//! node joins the settled cluster and the time until each other node knows
//! it is recorded; then `stops` nodes, one after another and 30 s apart,
//! stop answering (a `kill -9` whose connections stay silent, or a frozen
//! process: the worst case, no TCP reset) and the time at which each other
//! node declares each dead is recorded — pooled, since one stop is one draw
//! of when its ring predecessors' probes come round. Any live node declared
//! dead meanwhile is a false positive.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

use fragstate_core::ids::NodeId;
use fragstate_core::sample::Rng;
use fragstate_core::swim::{Event, Message, Millis, Swim, SwimConfig};
use serde::Serialize;

use crate::cpu::{Cpu, CpuModel};

/// What a node says about itself, sized like what the network layer will
/// carry: its address, failure domain and free capacity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimMeta {
    addr: String,
    domain: String,
    free_bytes: u64,
}

/// The figures of one run.
#[derive(Clone, Debug, Serialize)]
pub struct MembershipRun {
    pub nodes: usize,
    pub loss: f64,
    /// Mass start: from the last node's start until every node knew all others (`None`: not within 120 s).
    pub converge_ms: Option<Millis>,
    /// ... and until no node had news left to pass on (at most 300 s after convergence).
    pub settled_ms: Millis,
    /// One node joining a settled cluster: when the others knew it (ms after its start).
    pub join_p99_ms: Option<Millis>,
    pub join_max_ms: Option<Millis>,
    /// Idle traffic, per node and second.
    pub idle_messages_per_node_s: f64,
    pub idle_bytes_per_node_s: f64,
    /// Idle: distinct peers a node exchanged messages with in one second (sampled every
    /// second for every node) — the connections it holds if they close after 1 s unused.
    pub idle_peers_per_s_p99: usize,
    pub idle_peers_per_s_max: usize,
    /// Nodes stopped, one after another.
    pub stops: usize,
    /// After each stop: when the others declared it dead (ms after the stop), over all stops.
    pub dead_p50_ms: Option<Millis>,
    pub dead_p99_ms: Option<Millis>,
    pub dead_max_ms: Option<Millis>,
    /// The largest of the stops' own p99s.
    pub dead_p99_worst_stop_ms: Option<Millis>,
    /// Share of the other nodes that declared a stopped node dead within 30 s, over all stops.
    pub dead_share: f64,
    /// Live nodes declared dead by some node after convergence.
    pub false_downs: usize,
    /// With a shared processor (`cpu`): its cores' busy share over the whole
    /// run, and the handshakes the nodes paid.
    pub cpu_busy: Option<f64>,
    pub handshakes: Option<u64>,
    /// Suspicions of live nodes raised (by the prober that found no answer) between
    /// convergence and the stop; each was refuted unless counted in `false_downs`.
    pub false_suspicions: u64,
}

enum Ev {
    Deliver { from: usize, to: usize, msg: Message<Arc<SimMeta>> },
    Tick(usize),
}

struct World {
    nodes: Vec<Option<Swim<Arc<SimMeta>>>>,
    ids: Vec<NodeId>,
    index: HashMap<NodeId, usize>,
    queue: BinaryHeap<Reverse<(Millis, u64)>>,
    /// Each queued event, and whether its processor time was charged (it waited for a core).
    pending: HashMap<u64, (Ev, bool)>,
    cpu: Option<Cpu>,
    seq: u64,
    scheduled: Vec<Millis>,
    stopped: Vec<bool>,
    rng: Rng,
    loss: f64,
    /// Messages and bytes sent while counting, and each node's peers since the last sample.
    counting: bool,
    peers: Vec<HashSet<usize>>,
    messages: u64,
    bytes: u64,
    /// (when, of whom) for every Down event any node reported.
    downs: Vec<(Millis, usize)>,
    /// When each node first knew the node of `watch_up` alive.
    watch_up: Option<usize>,
    ups: Vec<Millis>,
}

/// A node id as long as a libp2p peer id (52 characters of base58).
fn node_id(i: usize) -> NodeId {
    NodeId::from(format!("12D3KooW{i:0>44}"))
}

impl World {
    fn push(&mut self, at: Millis, ev: Ev) {
        self.push_charged(at, ev, false);
    }

    fn push_charged(&mut self, at: Millis, ev: Ev, charged: bool) {
        self.seq += 1;
        self.pending.insert(self.seq, (ev, charged));
        self.queue.push(Reverse((at, self.seq)));
    }


    fn start(&mut self, i: usize, now: Millis, cfg: &SwimConfig) {
        let meta = Arc::new(SimMeta { addr: format!("/ip4/10.{}.{}.{}/tcp/7000", i >> 16, (i >> 8) & 255, i & 255), domain: format!("rack-{}", i % 40), free_bytes: 1 << 40 });
        let mut s = Swim::new(self.ids[i].clone(), meta, now, cfg.clone(), now, 0x5157 + i as u64);
        s.join(&[self.ids[0].clone()]);
        self.nodes[i] = Some(s);
        self.after(i, now);
    }

    /// Hand what node `i` wants sent to the network, note its events, and
    /// schedule its next timer.
    fn after(&mut self, i: usize, now: Millis) {
        let Some(node) = self.nodes[i].as_mut() else { return };
        let mut out = Vec::new();
        while let Some(m) = node.poll_send() {
            out.push(m);
        }
        while let Some(e) = node.poll_event() {
            match e {
                Event::Down(n) => self.downs.push((now, self.index[&n])),
                Event::Suspect(_) => {}
                Event::Up { node, .. } => {
                    if self.watch_up == Some(self.index[&node]) {
                        self.ups.push(now);
                    }
                }
            }
        }
        let next = node.next_timeout().max(now + 1);
        for (to, msg) in out {
            if self.counting {
                self.messages += 1;
                self.bytes += bincode::serialized_size(&msg).unwrap_or(0);
            }
            if self.loss > 0.0 && self.rng.unit() < self.loss {
                continue;
            }
            let to = self.index[&to];
            if self.counting {
                self.peers[i].insert(to);
                self.peers[to].insert(i);
            }
            let latency = 1 + (self.rng.unit() * 3.0) as Millis;
            self.push(now + latency, Ev::Deliver { from: i, to, msg });
        }
        if next < self.scheduled[i] || self.scheduled[i] <= now {
            self.scheduled[i] = next;
            self.push(next, Ev::Tick(i));
        }
    }

    /// Process every event up to `until`.
    fn run_until(&mut self, until: Millis) {
        while let Some(&Reverse((at, seq))) = self.queue.peek() {
            if at > until {
                break;
            }
            self.queue.pop();
            let Some((ev, charged)) = self.pending.remove(&seq) else { continue };
            let wanted = match &ev {
                Ev::Deliver { to, .. } => !self.stopped[*to],
                // A tick that waited for a core stays due; a stale one (rescheduled meanwhile) is dropped.
                Ev::Tick(i) => !self.stopped[*i] && (charged || self.scheduled[*i] == at),
            };
            if !wanted {
                continue;
            }
            if let (false, Some(cpu)) = (charged, self.cpu.as_mut()) {
                let cost = match &ev {
                    Ev::Deliver { from, to, .. } => cpu.message_cost(*from, *to, at),
                    Ev::Tick(_) => cpu.tick_cost(),
                };
                let done = cpu.run(at, cost);
                if done > at {
                    self.push_charged(done, ev, true);
                    continue;
                }
            }
            let i = match ev {
                Ev::Deliver { from, to, msg } => {
                    let Some(node) = self.nodes[to].as_mut() else { continue };
                    node.handle(at, self.ids[from].clone(), msg);
                    to
                }
                Ev::Tick(i) => {
                    let Some(node) = self.nodes[i].as_mut() else { continue };
                    node.tick(at);
                    i
                }
            };
            self.after(i, at);
        }
    }

    /// Every started node knows every other started one as alive.
    fn converged(&self) -> bool {
        let started = self.nodes.iter().filter(|s| s.is_some()).count();
        self.nodes.iter().enumerate().all(|(i, s)| self.stopped[i] || s.as_ref().is_none_or(|s| s.live_count() == started - 1))
    }
}

/// One run at `n` nodes with message `loss` (module docs), on a shared
/// processor when `cpu` is given (`cpu.rs`).
pub fn run(n: usize, cfg: &SwimConfig, loss: f64, seed: u64, stops: usize, cpu: Option<CpuModel>) -> MembershipRun {
    assert!(stops >= 1 && stops + 2 < n, "1 ≤ stops < n - 2 (the seed and the joiner stay)");
    let ids: Vec<NodeId> = (0..n).map(node_id).collect();
    let index = ids.iter().cloned().enumerate().map(|(i, id)| (id, i)).collect();
    let mut w = World {
        nodes: (0..n).map(|_| None).collect(),
        ids,
        index,
        queue: BinaryHeap::new(),
        pending: HashMap::new(),
        cpu: cpu.map(Cpu::new),
        seq: 0,
        scheduled: vec![0; n],
        stopped: vec![false; n],
        rng: Rng::new(seed),
        loss,
        counting: false,
        peers: vec![HashSet::new(); n],
        messages: 0,
        bytes: 0,
        downs: Vec::new(),
        watch_up: None,
        ups: Vec::new(),
    };
    const JOIN_GAP: Millis = 2;
    // One anti-entropy interval (at least 60 s): each node swaps full lists about once in it.
    let idle_window: Millis = (cfg.sync_interval * (n as Millis / 128).max(1)).max(60_000);
    let joiner = n - 1;
    for i in 0..joiner {
        let t = i as Millis * JOIN_GAP;
        w.run_until(t);
        w.start(i, t, cfg);
    }
    let started = (joiner as Millis - 1) * JOIN_GAP;
    let mut now = started;
    let converge_ms = loop {
        now += 100;
        w.run_until(now);
        if w.converged() {
            break Some(now - started);
        }
        if now - started > 120_000 {
            break None;
        }
    };
    let downs_before = w.downs.len();
    let raised = |w: &World| w.nodes.iter().flatten().map(|s| s.stats().suspicions_raised).sum::<u64>();
    let suspicions_before = raised(&w);
    // Let the join news die out (every node passed on all it had, or 300 s), then count the idle traffic.
    let settle_until = now + 300_000;
    while now < settle_until && w.nodes.iter().flatten().any(|s| s.pending_updates() > 0) {
        now += 1_000;
        w.run_until(now);
    }
    let settled_ms = now - started;
    w.counting = true;
    let mut peer_counts = Vec::new();
    for _ in 0..idle_window / 1_000 {
        now += 1_000;
        w.run_until(now);
        peer_counts.extend(w.peers.iter_mut().map(|p| std::mem::take(p).len()));
    }
    w.counting = false;
    peer_counts.sort_unstable();
    w.watch_up = Some(joiner);
    w.start(joiner, now, cfg);
    let joined_at = now;
    now += 10_000;
    w.run_until(now);
    let mut ups: Vec<Millis> = w.ups.iter().map(|t| t - joined_at).collect();
    ups.sort_unstable();
    let all_knew = ups.len() + 1 >= n;
    let false_suspicions = raised(&w) - suspicions_before;
    // Victims spread over the ids, never the seed (0) or the joiner (n - 1).
    let victims: Vec<usize> = (1..=stops).map(|j| j * (n - 1) / (stops + 1)).collect();
    let (mut times, mut observers, mut worst_p99) = (Vec::new(), 0, None);
    for (j, &victim) in victims.iter().enumerate() {
        w.stopped[victim] = true;
        let stopped_at = now;
        now += 30_000;
        w.run_until(now);
        let mut these: Vec<Millis> = w.downs[downs_before..].iter().filter(|(t, of)| *of == victim && *t >= stopped_at).map(|(t, _)| t - stopped_at).collect();
        these.sort_unstable();
        // Every node but the stopped ones observes.
        let watching = n - 1 - j;
        if these.len() >= watching {
            worst_p99 = worst_p99.max(percentile(&these, 99));
        }
        observers += watching;
        times.extend(these);
    }
    times.sort_unstable();
    let everyone_saw = times.len() >= observers;
    MembershipRun {
        nodes: n,
        loss,
        converge_ms,
        settled_ms,
        join_p99_ms: if all_knew { percentile(&ups, 99) } else { None },
        join_max_ms: if all_knew { ups.last().copied() } else { None },
        idle_messages_per_node_s: w.messages as f64 / (n - 1) as f64 / (idle_window as f64 / 1000.0),
        idle_bytes_per_node_s: w.bytes as f64 / (n - 1) as f64 / (idle_window as f64 / 1000.0),
        idle_peers_per_s_p99: percentile(&peer_counts, 99).unwrap_or(0),
        idle_peers_per_s_max: peer_counts.last().copied().unwrap_or(0),
        stops,
        dead_p50_ms: percentile(&times, 50),
        dead_p99_ms: if everyone_saw { percentile(&times, 99) } else { None },
        dead_max_ms: if everyone_saw { times.last().copied() } else { None },
        dead_p99_worst_stop_ms: if everyone_saw { worst_p99 } else { None },
        dead_share: times.len() as f64 / observers as f64,
        false_downs: w.downs[downs_before..].iter().filter(|(_, of)| !victims.contains(of)).count(),
        cpu_busy: w.cpu.as_ref().map(|c| c.busy_us as f64 / 1_000.0 / now.max(1) as f64 / c.cores() as f64),
        handshakes: w.cpu.as_ref().map(|c| c.handshakes),
        false_suspicions,
    }
}

/// The nearest-rank `percent` percentile of `sorted` (`None` when empty).
fn percentile<T: Copy>(sorted: &[T], percent: usize) -> Option<T> {
    (!sorted.is_empty()).then(|| sorted[(sorted.len() * percent).div_ceil(100).clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_cluster_converges_and_finds_a_stopped_node_dead_everywhere() {
        let r = run(40, &SwimConfig::default(), 0.0, 1, 3, None);
        assert!(r.converge_ms.is_some_and(|t| t < 10_000), "{r:?}");
        assert!(r.join_max_ms.is_some_and(|t| t < 5_000), "{r:?}");
        assert_eq!(r.dead_share, 1.0, "{r:?}");
        assert!(r.dead_max_ms.is_some_and(|t| t < 5_000), "{r:?}");
        assert!(r.dead_p99_worst_stop_ms.is_some_and(|t| t <= r.dead_max_ms.unwrap()), "{r:?}");
        assert_eq!(r.false_downs, 0);
        // one ping and one ack per node and 200 ms period, plus rare syncs
        assert!((9.0..12.0).contains(&r.idle_messages_per_node_s), "{r:?}");
        assert!(r.cpu_busy.is_none() && r.handshakes.is_none());
    }

    #[test]
    fn on_a_shared_processor_a_cluster_forms_while_it_has_cores_to_spare_and_storms_when_not() {
        let cpu = |handshake_us| Some(CpuModel { cores: 2, message_us: 50, handshake_us, idle_ms: 5_000 });
        let calm = run(40, &SwimConfig::default(), 0.0, 1, 1, cpu(250));
        assert!(calm.converge_ms.is_some() && calm.false_downs == 0, "{calm:?}");
        assert!(calm.handshakes.is_some_and(|h| h >= 40) && calm.cpu_busy.is_some_and(|b| b > 0.0 && b < 0.5), "{calm:?}");
        // 40 nodes whose every new connection costs 100 ms of a core: probes time out, false deaths follow.
        let starved = run(40, &SwimConfig::default(), 0.0, 1, 1, cpu(50_000));
        assert!(starved.false_downs > 0 || starved.converge_ms.is_none(), "{starved:?}");
    }
}
