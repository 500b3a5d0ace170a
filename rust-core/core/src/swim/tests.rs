use super::*;

/// Nodes in one process, every message delivered 1 ms after it was sent
/// unless its link is cut or an end is dead; time advances 1 ms per step.
struct Net {
    nodes: Vec<Swim<u32>>,
    dead: HashSet<usize>,
    cut: HashSet<(usize, usize)>,
    in_flight: Vec<(Millis, usize, usize, Message<u32>)>,
    now: Millis,
    events: Vec<(Millis, usize, Event<u32>)>,
}

fn id(i: usize) -> NodeId {
    NodeId::from(format!("n{i}"))
}

impl Net {
    /// `n` nodes; node `i` joins through node 0 at `i` ms.
    fn joined(n: usize) -> Net {
        let mut net = Net { nodes: Vec::new(), dead: HashSet::new(), cut: HashSet::new(), in_flight: Vec::new(), now: 0, events: Vec::new() };
        for i in 0..n {
            net.start(i, 1);
            net.run(1);
        }
        net
    }

    fn start(&mut self, i: usize, incarnation: u64) {
        let mut s = Swim::new(id(i), i as u32, incarnation, SwimConfig::default(), self.now, 7 + i as u64);
        s.join(&[id(0)]);
        if i < self.nodes.len() {
            self.nodes[i] = s;
            self.dead.remove(&i);
        } else {
            self.nodes.push(s);
        }
    }

    fn index(n: &NodeId) -> usize {
        n.as_str()[1..].parse().unwrap()
    }

    fn run(&mut self, ms: Millis) {
        for _ in 0..ms {
            self.now += 1;
            let now = self.now;
            let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.in_flight).into_iter().partition(|m| m.0 <= now);
            self.in_flight = later;
            for (_, from, to, msg) in due {
                if !self.dead.contains(&to) {
                    self.nodes[to].handle(now, id(from), msg);
                }
            }
            for i in 0..self.nodes.len() {
                if self.dead.contains(&i) {
                    continue;
                }
                if self.nodes[i].next_timeout() <= now {
                    self.nodes[i].tick(now);
                }
                while let Some((to, msg)) = self.nodes[i].poll_send() {
                    let to = Self::index(&to);
                    if !self.cut.contains(&(i.min(to), i.max(to))) {
                        self.in_flight.push((now + 1, i, to, msg));
                    }
                }
                while let Some(e) = self.nodes[i].poll_event() {
                    self.events.push((now, i, e));
                }
            }
        }
        self.check_reachable();
    }

    /// Every node's incrementally kept `reachable` list and its successors
    /// equal what a rebuild from its member list gives.
    fn check_reachable(&mut self) {
        for node in &mut self.nodes {
            let mut rebuilt: Vec<NodeId> = node.members.iter().filter(|(_, m)| m.liveness != Liveness::Dead).map(|(n, _)| n.clone()).collect();
            rebuilt.sort_unstable();
            let me = node.me.clone();
            assert_eq!(node.reachable(), rebuilt.as_slice(), "{me}'s reachable members");
            let successors = monitors::ring_successors(&me, &rebuilt, node.cfg.monitors);
            assert_eq!(node.successors(), successors.as_slice(), "{me}'s ring successors");
        }
    }

    fn liveness(&self, at: usize, of: usize) -> Option<Liveness> {
        self.nodes[at].members.get(&id(of)).map(|m| m.liveness)
    }

    fn downs_of(&self, of: usize) -> Vec<usize> {
        self.events.iter().filter(|(_, _, e)| *e == Event::Down(id(of))).map(|(_, at, _)| *at).collect()
    }
}

#[test]
fn nodes_joining_through_one_seed_learn_of_each_other() {
    let mut net = Net::joined(12);
    net.run(2_000);
    for i in 0..12 {
        assert_eq!(net.nodes[i].live_count(), 11, "node {i} sees {} members", net.nodes[i].live_count());
        for j in (0..12).filter(|j| *j != i) {
            assert_eq!(net.nodes[i].members.get(&id(j)).map(|m| m.meta), Some(j as u32));
        }
    }
    assert!(net.events.iter().all(|(_, _, e)| matches!(e, Event::Up { .. })), "no suspicion in a healthy cluster");
}

#[test]
fn a_killed_node_is_declared_dead_everywhere_within_the_bound() {
    let mut net = Net::joined(20);
    net.run(2_000);
    net.dead.insert(5);
    let killed_at = net.now;
    // Found within two probe rounds of the 19 others in the worst case, then the
    // suspicion (3 × log10 20 periods, at least min_suspicion) and a few periods of spread.
    let cfg = SwimConfig::default();
    let suspicion = ((3.0 * 20f64.log10() * cfg.protocol_period as f64) as Millis).max(cfg.min_suspicion);
    let bound = 2 * cfg.protocol_period + suspicion + 10 * cfg.protocol_period;
    net.run(bound);
    let mut downs = net.downs_of(5);
    downs.sort_unstable();
    assert_eq!(downs, (0..20).filter(|i| *i != 5).collect::<Vec<_>>(), "every other node saw node 5 go down once");
    for i in (0..20).filter(|i| *i != 5) {
        assert_eq!(net.liveness(i, 5), Some(Liveness::Dead));
    }
    let first = net.events.iter().find(|(_, _, e)| *e == Event::Suspect(id(5))).map(|(t, _, _)| *t).unwrap();
    assert!(first > killed_at);
    assert!(net.downs_of(3).is_empty() && net.nodes[0].stats().refutations == 0, "no live node was suspected");
}

#[test]
fn a_cut_link_between_two_live_nodes_is_bridged_by_indirect_probes() {
    let mut net = Net::joined(8);
    net.run(1_000);
    net.cut.insert((2, 6));
    net.run(10_000);
    assert!(net.downs_of(2).is_empty() && net.downs_of(6).is_empty());
    assert!(net.nodes[2].stats().indirect_probes > 0 && net.nodes[6].stats().indirect_probes > 0);
    assert_eq!(net.nodes[2].live_count(), 7);
}

#[test]
fn a_node_that_was_declared_dead_comes_back_with_a_newer_incarnation() {
    let mut net = Net::joined(10);
    net.run(1_000);
    net.dead.insert(4);
    net.run(5_000);
    assert_eq!(net.liveness(0, 4), Some(Liveness::Dead));
    net.events.clear();
    net.start(4, net.now); // a restart: the clock as incarnation
    net.run(3_000);
    for i in (0..10).filter(|i| *i != 4) {
        assert_eq!(net.liveness(i, 4), Some(Liveness::Alive), "node {i}");
    }
    assert_eq!(net.nodes[4].live_count(), 9);
}

#[test]
fn a_node_refutes_a_suspicion_of_itself_with_a_higher_incarnation() {
    let mut s = Swim::new(id(0), 0u32, 10, SwimConfig::default(), 0, 1);
    let rumour = Update { node: id(0), incarnation: 10, liveness: Liveness::Suspect, meta: 0 };
    s.handle(1, id(1), Message::Gossip { updates: vec![rumour] });
    assert_eq!(s.stats().refutations, 1);
    let mine = s.piggyback();
    assert_eq!(mine, vec![Update { node: id(0), incarnation: 11, liveness: Liveness::Alive, meta: 0 }]);
    // an older rumour needs no answer
    let old = Update { node: id(0), incarnation: 9, liveness: Liveness::Dead, meta: 0 };
    s.handle(2, id(1), Message::Gossip { updates: vec![old] });
    assert_eq!(s.stats().refutations, 1);
    assert_eq!(s.stats().declared_dead, 0, "a suspicion is not a death");
    // a declaration of its death: refuted too, and counted apart
    let dead = Update { node: id(0), incarnation: 11, liveness: Liveness::Dead, meta: 0 };
    s.handle(3, id(1), Message::Gossip { updates: vec![dead] });
    assert_eq!((s.stats().refutations, s.stats().declared_dead), (2, 1));
}

#[test]
fn updates_follow_incarnation_then_dead_over_suspect_over_alive() {
    let mut s = Swim::new(id(0), 0u32, 1, SwimConfig::default(), 0, 1);
    let u = |inc, liveness, meta| Update { node: id(1), incarnation: inc, liveness, meta };
    let feed = |s: &mut Swim<u32>, x| s.handle(1, id(2), Message::Gossip { updates: vec![x] });
    feed(&mut s, u(5, Liveness::Dead, 1));
    assert!(!s.members.contains_key(&id(1)), "a death of an unknown node is old news");
    feed(&mut s, u(5, Liveness::Alive, 1));
    feed(&mut s, u(5, Liveness::Suspect, 1));
    assert_eq!(s.members[&id(1)].liveness, Liveness::Suspect);
    feed(&mut s, u(5, Liveness::Alive, 2));
    assert_eq!(s.members[&id(1)].liveness, Liveness::Suspect, "refuting needs a higher incarnation");
    feed(&mut s, u(6, Liveness::Alive, 3));
    assert_eq!((s.members[&id(1)].liveness, s.members[&id(1)].meta), (Liveness::Alive, 3));
    feed(&mut s, u(6, Liveness::Dead, 3));
    feed(&mut s, u(6, Liveness::Alive, 4));
    assert_eq!(s.members[&id(1)].liveness, Liveness::Dead);
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert_eq!(
        events,
        vec![Event::Up { node: id(1), meta: 1 }, Event::Suspect(id(1)), Event::Up { node: id(1), meta: 3 }, Event::Down(id(1))]
    );
}

#[test]
fn a_leaving_node_is_down_everywhere_without_a_suspicion() {
    let mut net = Net::joined(10);
    net.run(1_000);
    net.nodes[3].leave();
    net.run(1); // hand its goodbyes to the network
    net.dead.insert(3);
    net.run(1_000);
    assert_eq!(net.downs_of(3).len(), 9);
    assert!(!net.events.iter().any(|(_, _, e)| *e == Event::Suspect(id(3))));
}

#[test]
fn an_idle_cluster_sends_a_ping_and_an_ack_per_node_and_period() {
    let mut net = Net::joined(30);
    net.run(20_000);
    let before: u64 = net.nodes.iter().map(|n| n.stats().messages_sent).sum();
    net.run(10_000);
    let after: u64 = net.nodes.iter().map(|n| n.stats().messages_sent).sum();
    let periods = 10_000 / SwimConfig::default().protocol_period;
    let per_node_and_period = (after - before) as f64 / (30 * periods) as f64;
    assert!((1.9..=2.1).contains(&per_node_and_period), "{per_node_and_period} messages per node and period");
}

#[test]
fn a_live_node_declared_dead_learns_it_from_the_first_member_it_probes_and_comes_back() {
    let mut net = Net::joined(10);
    net.run(1_000);
    // Everyone but node 7 itself believes node 7 dead (a partition that healed, say).
    let inc = net.nodes[7].incarnation;
    for i in (0..10).filter(|i| *i != 7) {
        let rumour = Update { node: id(7), incarnation: inc, liveness: Liveness::Dead, meta: 7 };
        net.nodes[i].handle(net.now, id(1), Message::Gossip { updates: vec![rumour] });
        assert_eq!(net.liveness(i, 7), Some(Liveness::Dead));
    }
    // Within a few periods (not an anti-entropy interval) node 7 refutes and is alive everywhere again.
    net.run(2_000);
    assert_eq!(net.nodes[7].stats().refutations, 1);
    for i in (0..10).filter(|i| *i != 7) {
        assert_eq!(net.liveness(i, 7), Some(Liveness::Alive), "node {i}");
    }
}

#[test]
fn a_node_whose_join_was_lost_asks_its_seed_again() {
    let mut net = Net::joined(3);
    net.run(500);
    net.cut.insert((0, 3));
    net.start(3, 1);
    net.run(500);
    assert_eq!(net.nodes[3].live_count(), 0, "the seed never heard of it");
    net.cut.clear();
    net.run(3_000);
    assert_eq!(net.nodes[3].live_count(), 3);
    assert_eq!(net.liveness(1, 3), Some(Liveness::Alive));
}

/// A seed that was itself still joining (a mass start) may not know every
/// member, and the news of those that joined before has died out by then:
/// the joiner learns them from its catch-up syncs with other members within
/// seconds, not at its first regular anti-entropy round 30–60 s later.
#[test]
fn a_node_that_joins_through_a_seed_that_misses_a_member_learns_it_within_seconds() {
    let mut net = Net::joined(6);
    net.run(20_000);
    // node 3 has not heard of node 5 (yet)
    net.nodes[3].members.remove(&id(5));
    net.nodes[3].set_reachable(&id(5), false);
    let mut joiner = Swim::new(id(6), 6, 1, SwimConfig::default(), net.now, 13);
    joiner.join(&[id(3)]);
    net.nodes.push(joiner);
    net.run(500);
    assert_eq!(net.liveness(6, 5), None, "the seed's list lacked node 5");
    net.run(1_500);
    assert_eq!(net.liveness(6, 5), Some(Liveness::Alive), "the first catch-up sync, 1 s after the seed's answer");
    assert_eq!(net.liveness(5, 6), Some(Liveness::Alive));
}

/// The catch-up asks another member than the last one, but a node that knows
/// only its seed asks the seed again rather than nobody.
#[test]
fn a_catch_up_sync_goes_to_the_seed_when_it_is_the_only_member() {
    let mut net = Net::joined(2);
    net.run(10);
    assert_eq!(net.nodes[1].last_synced, Some(id(0)), "the seed answered");
    let start = net.now;
    let mut syncs = 0;
    while net.now < start + 1_100 {
        net.now += 1;
        let now = net.now;
        net.nodes[1].tick(now);
        while let Some((to, msg)) = net.nodes[1].poll_send() {
            if matches!(msg, Message::Sync { reply: true, .. }) {
                assert_eq!(to, id(0));
                syncs += 1;
            }
        }
    }
    assert_eq!(syncs, 1, "the first catch-up sync, 1 s after the seed's answer");
}

#[test]
fn a_member_hinted_as_gone_is_probed_in_the_next_period() {
    let mut net = Net::joined(30);
    net.run(2_000);
    net.dead.insert(9);
    net.nodes[0].probe_next(&id(9));
    let probes = net.nodes[0].stats().probes;
    while net.nodes[0].stats().probes == probes {
        net.run(1);
    }
    assert_eq!(net.nodes[0].probe.as_ref().map(|p| p.target.clone()), Some(id(9)), "not at its turn among 29 members");
}

#[test]
fn a_probe_waiting_for_its_connection_suspects_nobody_until_its_ping_left() {
    let cfg = SwimConfig::default();
    let mut a = Swim::new(id(0), 0u32, 1, cfg.clone(), 0, 7);
    a.handle(0, id(1), Message::Gossip { updates: vec![Update { node: id(1), incarnation: 1, liveness: Liveness::Alive, meta: 1 }] });
    a.tick(0);
    let seq = std::iter::from_fn(|| a.poll_send()).find_map(|(to, m)| match m {
        Message::Ping { seq, .. } if to == id(1) => Some(seq),
        _ => None,
    });
    let seq = seq.expect("a probe of the only member");
    a.connecting(seq);
    // Five periods of handshake: no indirect probe, no suspicion.
    for t in (10..5 * cfg.protocol_period).step_by(10) {
        a.tick(t);
    }
    assert_eq!(a.members().find(|(n, _)| **n == id(1)).unwrap().1.liveness, Liveness::Alive);
    assert!(std::iter::from_fn(|| a.poll_send()).all(|(_, m)| !matches!(m, Message::PingReq { .. })), "an indirect probe while connecting");
    // The ping leaves; no ack within a period: suspect.
    let sent = 5 * cfg.protocol_period;
    a.sent(seq, sent);
    a.tick(sent + cfg.protocol_period - 1);
    assert_eq!(a.members().find(|(n, _)| **n == id(1)).unwrap().1.liveness, Liveness::Alive, "suspected before a period after the ping left");
    a.tick(sent + cfg.protocol_period);
    assert_eq!(a.members().find(|(n, _)| **n == id(1)).unwrap().1.liveness, Liveness::Suspect);
}

#[test]
fn a_suspect_hears_of_its_suspicion_in_the_next_ping_to_it_even_when_news_fills_the_piggyback() {
    let cfg = SwimConfig::default();
    let mut a = Swim::new(id(0), 0u32, 1, cfg.clone(), 0, 7);
    let mut b = Swim::new(id(99), 99u32, 1, cfg.clone(), 0, 8);
    // More news than a message carries, least-sent first in id order: b's suspicion ("n99") last.
    let mut news: Vec<Update<u32>> = (1..2 + 2 * cfg.max_piggyback).map(|i| Update { node: id(i), incarnation: 1, liveness: Liveness::Alive, meta: i as u32 }).collect();
    news.push(Update { node: id(99), incarnation: 1, liveness: Liveness::Suspect, meta: 99 });
    a.handle(0, id(1), Message::Gossip { updates: news });
    a.probe_next(&id(99));
    a.tick(0);
    let ping = std::iter::from_fn(|| a.poll_send()).find_map(|(to, m)| matches!(m, Message::Ping { .. } if to == id(99)).then_some(m));
    let Some(Message::Ping { seq, updates }) = ping else { panic!("no probe of node 99") };
    assert!(updates.len() > cfg.max_piggyback, "its suspicion rides on top of a full piggyback");
    assert!(updates.iter().any(|u| u.node == id(99) && u.liveness == Liveness::Suspect));
    b.handle(1, id(0), Message::Ping { seq, updates });
    assert_eq!(b.stats().refutations, 1, "the suspect refutes at once");
    assert_eq!(b.local_health(), 1, "being suspected counts against its own health");
}

#[test]
fn a_node_cut_off_from_everyone_probes_less_often_and_recovers_its_health_when_its_links_return() {
    let mut net = Net::joined(6);
    net.run(2_000);
    assert_eq!(net.nodes[0].local_health(), 0);
    for j in 1..6 {
        net.cut.insert((0, j));
    }
    let probes = net.nodes[0].stats().probes;
    net.run(1_600);
    // Periods of 200, 400, 600, … ms instead of eight of 200 ms.
    let probed = net.nodes[0].stats().probes - probes;
    assert!(probed <= 5, "{probed} probes in 1.6 s while nothing answered");
    assert!(net.nodes[0].local_health() >= 2, "health {}", net.nodes[0].local_health());
    net.cut.clear();
    net.run(6_000);
    assert!(net.downs_of(0).is_empty(), "node 0 refuted its suspicion before it expired");
    assert_eq!(net.nodes[0].local_health(), 0);
    assert_eq!(net.nodes[0].live_count(), 5);
}
