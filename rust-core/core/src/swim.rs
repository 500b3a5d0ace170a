//! Membership without a full mesh (issue 13): SWIM (Das, Gupta, Motivala,
//! DSN 2002) as an I/O-free state machine, in the manner of `quinn-proto`:
//! the caller feeds it time ([`Swim::tick`]) and received messages
//! ([`Swim::handle`]) and drains what to send ([`Swim::poll_send`]) and what
//! changed ([`Swim::poll_event`]). The same code runs in the simulator
//! (`fragstate-sim --measure membership`) and, later, over libp2p.
//!
//! - **Probing.** Every `protocol_period` a node pings one of its
//!   `monitors` ring successors (`swim/monitors.rs`), in a shuffled
//!   round-robin order; every member has about as many ring predecessors, so
//!   it is probed about once per period, by peers that keep their connection
//!   to it open. No ack within
//!   `probe_timeout`: `indirect_probes` of the prober's other successors are asked to ping it
//!   (`PingReq`), which tells a dead node from a lossy link between two live
//!   ones. No ack by the end of the period: the member is *suspect*.
//! - **Suspicion.** A suspect is still a member. Every node that hears of the
//!   suspicion starts its own timer of `suspicion_mult × max(1, log10 N)`
//!   periods (at least `min_suspicion`) and declares the suspect *dead* when it expires, so a death
//!   needs no further message. Only the suspect can refute, by announcing
//!   itself alive with a higher incarnation number (a restarted node starts
//!   from the caller's clock, so it is newer than what it was).
//! - **Dissemination.** Every message carries up to `max_piggyback` updates,
//!   least-sent first; each update is sent `retransmit_mult × ⌈log10(N+1)⌉`
//!   times, and while updates are pending a node also gossips them to
//!   `gossip_fanout` of its ring successors per period: epidemic spread in
//!   O(log N) periods over the rings' random graph. An idle node sends one ping and one ack per period: membership
//!   traffic per node does not grow with N.
//! - **Anti-entropy.** A joining node asks its seeds for their full member
//!   lists (`Sync`), then swaps full lists with other random members 1, 3, 7
//!   and 15 s after the answer (a seed that was joining itself may not have
//!   known everyone yet); every `sync_interval × max(1, N / 128)` a node swaps full
//!   lists with one random member, which heals what gossip missed (the
//!   interval grows with N so that the bytes per node and second do not).
//!
//! Precedence of updates about one member (higher incarnation wins; at equal
//! incarnation Dead > Suspect > Alive) is SWIM's. Dead members are kept for
//! `dead_retention` so that late rumours of them do not bring them back.
//! - **Local health** (Lifeguard, `swim/health.rs`). A node whose probes go
//!   unanswered, or that must refute a suspicion of itself, stretches its
//!   own probe period and timeout up to `1 + max_local_health` times: a slow
//!   node suspects less and loads its host less. And every message to a
//!   member this node holds suspect or dead carries that belief (Lifeguard's
//!   buddy system), so the member refutes at its next ping instead of when
//!   gossip happens to reach it.
//!
//! Not built: Lifeguard's suspicion timeouts that shrink with independent
//! confirmations, and its nacks.

mod anti_entropy;
mod broadcasts;
mod config;
mod health;
mod messages;
pub mod monitors;
mod probe;
mod view;

use std::collections::{HashMap, HashSet, VecDeque};

use crate::ids::NodeId;
use crate::sample::Rng;
use broadcasts::Broadcasts;
use health::LocalHealth;
use anti_entropy::{SyncPhase, SEED_RETRY_PERIODS};
use probe::{Probe, Relay, CONNECT_PERIODS};
pub use config::SwimConfig;
pub use messages::{Event, Liveness, Member, Message, SwimStats, Update};

/// Milliseconds on the caller's monotonic clock.
pub type Millis = u64;

/// One node's membership protocol (module docs).
pub struct Swim<M> {
    me: NodeId,
    meta: M,
    incarnation: u64,
    cfg: SwimConfig,
    members: HashMap<NodeId, Member<M>>,
    suspects: HashSet<NodeId>,
    /// Alive and suspect members, sorted (random picks from it are then
    /// reproducible for a seed); kept in step by `set_reachable`.
    reachable: Vec<NodeId>,
    /// This node's ring successors among `reachable`: from `ring_next`, or
    /// every reachable member while there are at most `monitors`.
    successors: Vec<NodeId>,
    /// Per ring, the reachable member next after this node, with its distance
    /// (`monitors::ring_next`): a new member is offered to it, a lost
    /// successor has it recomputed.
    ring_next: Vec<Option<(u64, NodeId)>>,
    /// This node's own positions on the monitoring rings.
    ring: Box<[u64]>,
    successors_dirty: bool,
    probe_order: Vec<NodeId>,
    probe: Option<Probe>,
    health: LocalHealth,
    next_period: Millis,
    /// Gossip keeps the unstretched period: a slow node probes less, but
    /// what it knows (its own refutations first) must not spread slower.
    next_gossip: Millis,
    last_sync: Millis,
    /// The member of the last full-list swap this node asked for.
    last_synced: Option<NodeId>,
    sync_phase: SyncPhase,
    seeds: Vec<NodeId>,
    seeds_asked: Millis,
    relays: HashMap<u64, Relay>,
    broadcasts: Broadcasts<M>,
    seq: u64,
    rng: Rng,
    out: VecDeque<(NodeId, Message<M>)>,
    events: VecDeque<Event<M>>,
    stats: SwimStats,
}

impl<M: Clone + PartialEq> Swim<M> {
    /// Node `me` described by `meta`, starting at `incarnation` (the caller's
    /// wall clock in ms, so that a restarted node is newer than its former
    /// self), with `seed` for its random choices.
    pub fn new(me: NodeId, meta: M, incarnation: u64, cfg: SwimConfig, now: Millis, seed: u64) -> Self {
        let health = LocalHealth::new(cfg.max_local_health);
        let ring = monitors::ring_positions(&me, cfg.monitors);
        let ring_next = vec![None; ring.len()];
        let mut s = Swim {
            ring,
            me,
            meta,
            incarnation,
            next_period: now,
            next_gossip: now,
            last_sync: now,
            last_synced: None,
            sync_phase: SyncPhase::Regular,
            seeds: Vec::new(),
            seeds_asked: now,
            cfg,
            members: HashMap::new(),
            suspects: HashSet::new(),
            reachable: Vec::new(),
            successors: Vec::new(),
            successors_dirty: false,
            ring_next,
            probe_order: Vec::new(),
            probe: None,
            health,
            relays: HashMap::new(),
            broadcasts: Broadcasts::default(),
            seq: 0,
            rng: Rng::new(seed),
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: SwimStats::default(),
        };
        // Spread anti-entropy rounds out: nodes started together would
        // otherwise swap full lists in the same second.
        s.last_sync += s.rng.below(s.cfg.sync_interval as usize) as Millis;
        s
    }

    /// This node's id.
    pub fn id(&self) -> &NodeId {
        &self.me
    }

    /// Announce a new `meta` (free capacity changed, new address).
    pub fn set_meta(&mut self, meta: M) {
        self.meta = meta;
        self.incarnation += 1;
        let me = self.my_update(Liveness::Alive);
        self.enqueue(me);
    }

    /// Probe `node` in the next period instead of at its turn in the round:
    /// its connection just closed with an error (a `kill -9` resets it).
    pub fn probe_next(&mut self, node: &NodeId) {
        if self.members.get(node).is_some_and(|m| m.liveness != Liveness::Dead) {
            self.probe_order.retain(|n| n != node);
            self.probe_order.push(node.clone());
        }
    }

    /// Leave on purpose: tell `gossip_fanout` members (and they the rest)
    /// that this node is gone. The caller sends what [`Swim::poll_send`]
    /// gives, then stops.
    pub fn leave(&mut self) {
        let bye = self.my_update(Liveness::Dead);
        for to in self.random_reachable(self.cfg.gossip_fanout.max(1), None) {
            self.send(to, Message::Gossip { updates: vec![bye.clone()] });
        }
    }

    /// The members known, dead ones until they are forgotten.
    pub fn members(&self) -> impl Iterator<Item = (&NodeId, &Member<M>)> {
        self.members.iter()
    }

    /// Alive and suspect members (not this node).
    pub fn live_count(&self) -> usize {
        self.members.values().filter(|m| m.liveness != Liveness::Dead).count()
    }

    /// Updates this node still has to pass on (0: nothing new in the cluster
    /// for a while).
    pub fn pending_updates(&self) -> usize {
        self.broadcasts.len()
    }

    /// The ping of probe `seq` waits for a connection to its target: a
    /// handshake on a busy host takes longer than `probe_timeout`, and a
    /// member must not be suspected for this node's own dial. The probe's
    /// timers start at [`Swim::sent`] (at the latest `CONNECT_PERIODS` periods on).
    /// Whether `seq` is this node's probe (a ping with another `seq` is sent
    /// for another node's indirect probe).
    pub fn connecting(&mut self, seq: u64) -> bool {
        match self.probe.as_mut().filter(|p| p.seq == seq && !p.acked) {
            Some(p) => {
                p.connecting = true;
                true
            }
            None => false,
        }
    }

    /// The ping of probe `seq` left, or its connection failed, at `now`.
    pub fn sent(&mut self, seq: u64, now: Millis) {
        if let Some(p) = self.probe.as_mut().filter(|p| p.seq == seq && p.connecting) {
            p.connecting = false;
            p.started = now;
            self.next_period = self.next_period.max(now + self.period());
        }
    }

    /// Whom this node probes and gossips to (`monitors` ring successors):
    /// the caller keeps connections to them open, so probes find them warm.
    pub fn successors(&mut self) -> &[NodeId] {
        self.reachable();
        &self.successors
    }

    /// Updates this node still has to pass on (each until sent its
    /// retransmit limit of times).
    pub fn news_pending(&self) -> usize {
        self.broadcasts.len()
    }

    /// What this node did so far.
    pub fn stats(&self) -> &SwimStats {
        &self.stats
    }

    /// The next message to send, if any.
    pub fn poll_send(&mut self) -> Option<(NodeId, Message<M>)> {
        self.out.pop_front()
    }

    /// The next membership change, if any.
    pub fn poll_event(&mut self) -> Option<Event<M>> {
        self.events.pop_front()
    }

    /// When [`Swim::tick`] has something to do next.
    pub fn next_timeout(&self) -> Millis {
        let mut t = self.next_period.min(self.next_sync());
        if !self.broadcasts.is_empty() {
            t = t.min(self.next_gossip);
        }
        if let Some(p) = self.probe.as_ref().filter(|p| !p.acked && !p.indirect_sent && !p.connecting) {
            t = t.min(p.started + self.probe_timeout());
        }
        let timeout = self.suspicion_timeout();
        for s in &self.suspects {
            if let Some(m) = self.members.get(s) {
                t = t.min(m.since + timeout);
            }
        }
        t
    }

    /// Run the timers due at `now`.
    pub fn tick(&mut self, now: Millis) {
        let probe_timeout = self.probe_timeout();
        let due = self.probe.as_ref().is_some_and(|p| !p.acked && !p.indirect_sent && !p.connecting && now >= p.started + probe_timeout);
        if due {
            self.probe_indirectly();
        }
        if now >= self.next_period {
            let connecting = self.probe.as_ref().is_some_and(|p| p.connecting && !p.acked && now < p.started + CONNECT_PERIODS * self.period());
            if !connecting {
                match self.probe.take() {
                    Some(p) if p.acked => self.health.answered(),
                    Some(p) => {
                        self.health.missed();
                        self.suspect(&p.target, now);
                    }
                    None => {}
                }
            }
            if now >= self.seeds_asked + SEED_RETRY_PERIODS * self.cfg.protocol_period && self.reachable().is_empty() {
                self.seeds_asked = now;
                self.ask_seeds();
            }
            self.next_period = now + self.period();
            if !connecting {
                self.start_probe(now);
            }
            let retention = self.cfg.dead_retention;
            // Only the dead are forgotten: `reachable` does not hold them.
            self.members.retain(|_, m| m.liveness != Liveness::Dead || now < m.since + retention);
            self.relays.retain(|_, r| r.expires > now);
        }
        if now >= self.next_gossip {
            self.next_gossip = now + self.cfg.protocol_period;
            self.gossip();
        }
        self.expire_suspicions(now);
        self.sync_if_due(now);
    }

    /// A message from `from`.
    pub fn handle(&mut self, now: Millis, from: NodeId, msg: Message<M>) {
        match msg {
            Message::Ping { seq, updates } => {
                self.apply_all(updates, now);
                let updates = self.updates_for(&from);
                self.send(from, Message::Ack { seq, updates });
            }
            Message::Ack { seq, updates } => {
                self.apply_all(updates, now);
                if let Some(p) = self.probe.as_mut().filter(|p| p.seq == seq) {
                    p.acked = true;
                } else if let Some(r) = self.relays.remove(&seq) {
                    let updates = self.updates_for(&r.requester);
                    self.send(r.requester, Message::Ack { seq: r.their_seq, updates });
                }
            }
            Message::PingReq { seq, target, updates } => {
                self.apply_all(updates, now);
                let mine = self.next_seq();
                self.relays.insert(mine, Relay { requester: from, their_seq: seq, expires: now + self.period() });
                let updates = self.updates_for(&target);
                self.send(target, Message::Ping { seq: mine, updates });
            }
            Message::Gossip { updates } => self.apply_all(updates, now),
            Message::Sync { members, reply } => self.on_sync(now, from, members, reply),
        }
    }

    fn apply_all(&mut self, updates: Vec<Update<M>>, now: Millis) {
        for u in updates {
            self.apply(u, now);
        }
    }

    /// Take `u` if it is news (precedence in the module docs); pass news on.
    fn apply(&mut self, u: Update<M>, now: Millis) {
        if u.node == self.me {
            if u.liveness != Liveness::Alive && u.incarnation >= self.incarnation {
                self.incarnation = u.incarnation + 1;
                self.stats.refutations += 1;
                self.stats.declared_dead += u64::from(u.liveness == Liveness::Dead);
                self.health.missed();
                let me = self.my_update(Liveness::Alive);
                self.enqueue(me);
            }
            return;
        }
        let old = self.members.get(&u.node);
        let news = match old {
            None => u.liveness != Liveness::Dead,
            Some(m) => u.incarnation > m.incarnation || (u.incarnation == m.incarnation && rank(u.liveness) > rank(m.liveness)),
        };
        if !news {
            return;
        }
        let was = old.map(|m| m.liveness);
        let since = match old {
            Some(m) if m.liveness == u.liveness => m.since,
            _ => now,
        };
        match u.liveness {
            Liveness::Alive => {
                self.suspects.remove(&u.node);
                self.events.push_back(Event::Up { node: u.node.clone(), meta: u.meta.clone() });
            }
            Liveness::Suspect => {
                self.suspects.insert(u.node.clone());
                if was != Some(Liveness::Suspect) {
                    self.events.push_back(Event::Suspect(u.node.clone()));
                }
            }
            Liveness::Dead => {
                self.suspects.remove(&u.node);
                self.events.push_back(Event::Down(u.node.clone()));
            }
        }
        // The member's ring positions move to its new entry (hashed only for a new member).
        let ring = match self.members.remove(&u.node) {
            Some(m) => m.ring,
            None => monitors::ring_positions(&u.node, self.cfg.monitors),
        };
        self.members.insert(u.node.clone(), Member { incarnation: u.incarnation, liveness: u.liveness, meta: u.meta.clone(), since, ring });
        let reachable = u.liveness != Liveness::Dead;
        if was.map(|l| l != Liveness::Dead) != Some(reachable) {
            self.set_reachable(&u.node, reachable);
        }
        self.enqueue(u);
    }

    fn suspect(&mut self, node: &NodeId, now: Millis) {
        let Some(m) = self.members.get(node).filter(|m| m.liveness == Liveness::Alive) else { return };
        let u = Update { node: node.clone(), incarnation: m.incarnation, liveness: Liveness::Suspect, meta: m.meta.clone() };
        self.stats.suspicions_raised += 1;
        self.apply(u, now);
    }

    fn expire_suspicions(&mut self, now: Millis) {
        let timeout = self.suspicion_timeout();
        let expired: Vec<Update<M>> = self
            .suspects
            .iter()
            .filter_map(|s| self.members.get(s).map(|m| (s, m)))
            .filter(|(_, m)| now >= m.since + timeout)
            .map(|(s, m)| Update { node: s.clone(), incarnation: m.incarnation, liveness: Liveness::Dead, meta: m.meta.clone() })
            .collect();
        for u in expired {
            self.apply(u, now);
        }
    }

    fn start_probe(&mut self, now: Millis) {
        let target = loop {
            let Some(t) = self.probe_order.pop() else {
                self.refill_probe_order();
                match self.probe_order.pop() {
                    Some(t) => break t,
                    None => return,
                }
            };
            if self.members.get(&t).is_some_and(|m| m.liveness != Liveness::Dead) {
                break t;
            }
        };
        let seq = self.next_seq();
        self.stats.probes += 1;
        self.probe = Some(Probe { target: target.clone(), seq, started: now, acked: false, indirect_sent: false, connecting: false });
        let updates = self.updates_for(&target);
        self.send(target, Message::Ping { seq, updates });
    }

    fn refill_probe_order(&mut self) {
        self.reachable();
        self.probe_order = self.successors.clone();
        for i in (1..self.probe_order.len()).rev() {
            let j = self.rng.below(i + 1);
            self.probe_order.swap(i, j);
        }
    }

    fn probe_indirectly(&mut self) {
        let Some(p) = self.probe.as_mut() else { return };
        p.indirect_sent = true;
        let (target, seq) = (p.target.clone(), p.seq);
        let helpers = self.random_successors(self.cfg.indirect_probes, Some(&target));
        if !helpers.is_empty() {
            self.stats.indirect_probes += 1;
        }
        for h in helpers {
            let updates = self.updates_for(&h);
            self.send(h, Message::PingReq { seq, target: target.clone(), updates });
        }
    }

    fn gossip(&mut self) {
        if self.broadcasts.is_empty() {
            return;
        }
        for to in self.random_successors(self.cfg.gossip_fanout, None) {
            let updates = self.updates_for(&to);
            if updates.is_empty() {
                break;
            }
            self.send(to, Message::Gossip { updates });
        }
    }

    /// Pending updates for one more message.
    fn piggyback(&mut self) -> Vec<Update<M>> {
        let limit = self.retransmit_limit();
        let out = self.broadcasts.take(self.cfg.max_piggyback, limit);
        self.stats.updates_sent += out.len() as u64;
        out
    }

    /// Pending updates for one more message to `to`, and what this node
    /// believes of `to` when that is suspect or dead: a member wrongly held
    /// so refutes at once — a suspect may hear of its suspicion only when it
    /// is nearly over, and gossip skips the dead (Lifeguard's buddy system).
    fn updates_for(&mut self, to: &NodeId) -> Vec<Update<M>> {
        let mut updates = self.piggyback();
        if let Some(m) = self.members.get(to).filter(|m| m.liveness != Liveness::Alive) {
            if !updates.iter().any(|u| &u.node == to) {
                updates.push(Update { node: to.clone(), incarnation: m.incarnation, liveness: m.liveness, meta: m.meta.clone() });
            }
        }
        updates
    }

    /// How far this node's local health stretches its period and probe
    /// timeout now: 0 (healthy) to `max_local_health`.
    pub fn local_health(&self) -> u32 {
        self.health.score()
    }

    fn enqueue(&mut self, u: Update<M>) {
        self.broadcasts.push(u);
    }

    fn send(&mut self, to: NodeId, msg: Message<M>) {
        self.stats.messages_sent += 1;
        self.out.push_back((to, msg));
    }

    fn my_update(&self, liveness: Liveness) -> Update<M> {
        Update { node: self.me.clone(), incarnation: self.incarnation, liveness, meta: self.meta.clone() }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

}

/// At equal incarnation: Dead beats Suspect beats Alive.
fn rank(l: Liveness) -> u8 {
    match l {
        Liveness::Alive => 0,
        Liveness::Suspect => 1,
        Liveness::Dead => 2,
    }
}

#[cfg(test)]
mod tests;
