//! Full member lists: a joiner's request to its seeds, its catch-up swaps
//! after the answer, and the regular anti-entropy rounds (module docs of
//! `swim`, "Anti-entropy").

use super::{Liveness, Message, Millis, Swim, Update};
use crate::ids::NodeId;

/// How often, in protocol periods, a node that knows no live member asks
/// its seeds again (1 s at the default 200 ms). Timings here count periods so
/// that they stretch with `SwimConfig::dilated`.
pub(super) const SEED_RETRY_PERIODS: Millis = 5;
/// After its seed answered, a joining node swaps full lists with another
/// random member this many protocol periods later (1 s at the default
/// 200 ms), then twice, four and eight times as long
/// ([`CATCH_UP_SYNCS`] in all) before the regular anti-entropy rounds take over:
/// a seed that was itself still joining (a mass start) may not have known
/// every member yet, and the news of those that joined before it may have
/// died out, so without these the joiner misses them until its first
/// regular round, 30–60 s later.
pub(super) const CATCH_UP_SYNC_PERIODS: Millis = 5;
const CATCH_UP_SYNCS: u32 = 4;

/// Where a node is in its full-list exchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SyncPhase {
    /// Joined through seeds whose answer has not come yet.
    Joining,
    /// The seeds answered; this many catch-up syncs are done.
    CatchUp(u32),
    /// Every `sync_interval × max(1, N / 128)`.
    Regular,
}

impl<M: Clone + PartialEq> Swim<M> {
    /// Ask `seeds` for their member lists, and announce this node: to the
    /// seeds in the request, to the rest by gossip (a seed's own gossip of a
    /// newcomer can die out while few members know it, during a mass start).
    /// Asked again every `SEED_RETRY_PERIODS` while this node knows no live member
    /// (a request or its answer lost, a seed not up yet, everyone else gone).
    pub fn join(&mut self, seeds: &[NodeId]) {
        let hello = self.my_update(Liveness::Alive);
        self.enqueue(hello);
        self.seeds = seeds.iter().filter(|s| **s != self.me).cloned().collect();
        if !self.seeds.is_empty() {
            self.sync_phase = SyncPhase::Joining;
        }
        self.ask_seeds();
    }

    pub(super) fn ask_seeds(&mut self) {
        for s in self.seeds.clone() {
            let members = self.full_list();
            self.send(s, Message::Sync { members, reply: true });
        }
    }

    /// Swaps full lists with a random member when a catch-up or a regular round is due.
    pub(super) fn sync_if_due(&mut self, now: Millis) {
        if now < self.next_sync() {
            return;
        }
        self.last_sync = now;
        if let SyncPhase::CatchUp(done) = self.sync_phase {
            self.sync_phase = if done + 1 < CATCH_UP_SYNCS { SyncPhase::CatchUp(done + 1) } else { SyncPhase::Regular };
        }
        // another member than the last one asked (a catch-up learns from a second
        // view), unless that one is the only member left to ask
        let last = self.last_synced.take();
        let to = self.random_reachable(1, last.as_ref()).pop().or_else(|| last.filter(|l| self.reachable().contains(l)));
        if let Some(to) = to {
            let members = self.full_list();
            self.last_synced = Some(to.clone());
            self.send(to, Message::Sync { members, reply: true });
        }
    }

    /// A full list from `from`: a request to answer with this node's, or an answer.
    pub(super) fn on_sync(&mut self, now: Millis, from: NodeId, members: Vec<Update<M>>, reply: bool) {
        self.apply_all(members, now);
        if !reply && self.sync_phase == SyncPhase::Joining {
            // the seed's answer: the catch-up syncs start from now
            self.sync_phase = SyncPhase::CatchUp(0);
            self.last_sync = now;
            self.last_synced = Some(from.clone());
        }
        if reply {
            let members = self.full_list();
            self.send(from, Message::Sync { members, reply: false });
        }
    }
}
