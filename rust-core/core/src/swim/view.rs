//! What a node derives from its member table: who is reachable, its ring
//! successors, random picks among them, and the timings that grow with N or
//! stretch with its local health.

use super::monitors::{self, pick};
use super::{Liveness, Member, Millis, Swim, Update};
use crate::ids::NodeId;

impl<M: Clone + PartialEq> Swim<M> {
    /// Anti-entropy is due `sync_interval × max(1, N / 128)` after the last;
    /// a joined node's catch-up syncs come sooner (`CATCH_UP_SYNC_PERIODS`, doubling).
    pub(super) fn next_sync(&self) -> Millis {
        if let super::anti_entropy::SyncPhase::CatchUp(done) = self.sync_phase {
            return self.last_sync + ((super::anti_entropy::CATCH_UP_SYNC_PERIODS * self.cfg.protocol_period) << done);
        }
        let n = self.members.len() as u64 + 1;
        self.last_sync + self.cfg.sync_interval * (n / 128).max(1)
    }

    /// This node and its members, in id order: the receiver applies them in
    /// that order and draws a random probe position for each newcomer, so a
    /// hash map's per-process order would make seeded runs differ.
    pub(super) fn full_list(&self) -> Vec<Update<M>> {
        let mut members: Vec<(&NodeId, &Member<M>)> = self.members.iter().collect();
        members.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut v = vec![self.my_update(Liveness::Alive)];
        v.extend(members.into_iter().map(|(n, m)| Update { node: n.clone(), incarnation: m.incarnation, liveness: m.liveness, meta: m.meta.clone() }));
        v
    }

    /// The alive and suspect members (sorted), with this node's successors among them brought up to date.
    pub(super) fn reachable(&mut self) -> &[NodeId] {
        if self.successors_dirty {
            let reachable = self.members.iter().filter(|(_, m)| m.liveness != Liveness::Dead).map(|(n, m)| (n, &m.ring[..]));
            self.ring_next = monitors::ring_next(&self.me, &self.ring, reachable);
            self.successors = monitors::successors_from(&self.ring_next, &self.reachable);
            self.successors_dirty = false;
        }
        &self.reachable
    }

    /// `node` (a member) became reachable (alive or suspect: new, or back
    /// from the dead) or not (dead, forgotten). Kept in step one member at a
    /// time: rebuilding the list and the successors on every change was most
    /// of a 1,000-node formation's CPU in one process (NETWORK.md, "Swarm
    /// runs"). A newcomer only competes with each ring's current successor; a
    /// successor lost has them recomputed at the next use.
    pub(super) fn set_reachable(&mut self, node: &NodeId, reachable: bool) {
        match (self.reachable.binary_search(node), reachable) {
            (Err(at), true) => {
                self.reachable.insert(at, node.clone());
                if self.successors_dirty {
                    return;
                }
                match self.members.get(node) {
                    Some(m) => {
                        monitors::offer(&self.ring, &mut self.ring_next, node, &m.ring);
                        self.successors = monitors::successors_from(&self.ring_next, &self.reachable);
                    }
                    None => self.successors_dirty = true,
                }
            }
            (Ok(at), false) => {
                self.reachable.remove(at);
                if self.successors.contains(node) || self.reachable.len() <= self.ring.len() {
                    self.successors_dirty = true;
                }
            }
            _ => {}
        }
    }

    /// Up to `count` distinct random reachable members, never `except`.
    pub(super) fn random_reachable(&mut self, count: usize, except: Option<&NodeId>) -> Vec<NodeId> {
        self.reachable();
        pick(&mut self.rng, &self.reachable, count, except)
    }

    /// Up to `count` distinct random ring successors, never `except`.
    pub(super) fn random_successors(&mut self, count: usize, except: Option<&NodeId>) -> Vec<NodeId> {
        self.reachable();
        pick(&mut self.rng, &self.successors, count, except)
    }

    /// The protocol period, stretched by this node's local health.
    pub(super) fn period(&self) -> Millis {
        self.health.scale(self.cfg.protocol_period)
    }

    /// The probe timeout, stretched by this node's local health.
    pub(super) fn probe_timeout(&self) -> Millis {
        self.health.scale(self.cfg.probe_timeout)
    }

    pub(super) fn suspicion_timeout(&self) -> Millis {
        let n = (self.members.len() + 1) as f64;
        let scaled = (self.cfg.suspicion_mult as f64 * n.log10().max(1.0) * self.cfg.protocol_period as f64) as Millis;
        scaled.max(self.cfg.min_suspicion)
    }

    pub(super) fn retransmit_limit(&self) -> u32 {
        let n = (self.members.len() + 2) as f64;
        self.cfg.retransmit_mult * (n.log10().ceil() as u32).max(1)
    }
}
