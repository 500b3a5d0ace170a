//! A processor shared by every simulated node, for runs that ask for one:
//! the one-process swarm runs (`fragstate bench swarm`) put hundreds of
//! nodes on two cores, and there a message waits for a core — and a message
//! between two nodes that had not talked within the idle timeout first pays a
//! Noise handshake on each end. Without this model a node handles each
//! message the moment it arrives, which is why the simulator never showed the
//! storm the swarm runs show from ~300 nodes (NETWORK.md, "Swarm runs").

use std::collections::HashMap;

use fragstate_core::swim::Millis;
use serde::Serialize;

/// Cores and costs (`fragstate-sim --cpu-*`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuModel {
    /// Cores all nodes share.
    pub cores: usize,
    /// Handling one message or one timer tick, in µs.
    pub message_us: u64,
    /// One end of a Noise handshake, in µs (a new connection costs two).
    pub handshake_us: u64,
    /// Two nodes that exchanged nothing for this long are not connected any more.
    pub idle_ms: Millis,
}

/// The shared cores' state and what they did.
pub(crate) struct Cpu {
    model: CpuModel,
    /// When each core is free, in µs.
    free_at_us: Vec<u64>,
    /// When each pair of nodes last exchanged a message (smaller index first).
    last_talk: HashMap<(u32, u32), Millis>,
    /// Work done, in µs, and handshakes paid.
    pub busy_us: u64,
    pub handshakes: u64,
}

impl Cpu {
    pub(crate) fn new(model: CpuModel) -> Self {
        Cpu { free_at_us: vec![0; model.cores.max(1)], model, last_talk: HashMap::new(), busy_us: 0, handshakes: 0 }
    }

    /// Work of `cost_us` that arrived at `at`, run on the core free first
    /// (first come, first served): when it is done, in ms (rounded up).
    pub(crate) fn run(&mut self, at: Millis, cost_us: u64) -> Millis {
        let (core, free) = self.free_at_us.iter().copied().enumerate().min_by_key(|(_, f)| *f).expect("at least one core");
        let end = (at * 1_000).max(free) + cost_us;
        self.free_at_us[core] = end;
        self.busy_us += cost_us;
        end.div_ceil(1_000)
    }

    /// The cost of a message between nodes `a` and `b` sent at `at`: its
    /// handling, and a handshake on each end when the two were not connected.
    pub(crate) fn message_cost(&mut self, a: usize, b: usize, at: Millis) -> u64 {
        let key = (a.min(b) as u32, a.max(b) as u32);
        let connected = self.last_talk.insert(key, at).is_some_and(|t| at.saturating_sub(t) < self.model.idle_ms);
        if connected {
            self.model.message_us
        } else {
            self.handshakes += 1;
            self.model.message_us + 2 * self.model.handshake_us
        }
    }

    pub(crate) fn cores(&self) -> usize {
        self.free_at_us.len()
    }

    /// A timer tick's cost.
    pub(crate) fn tick_cost(&self) -> u64 {
        self.model.message_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> CpuModel {
        CpuModel { cores: 2, message_us: 100, handshake_us: 400, idle_ms: 5_000 }
    }

    #[test]
    fn work_queues_for_the_cores_first_come_first_served() {
        let mut cpu = Cpu::new(model());
        // Three jobs of 1.5 ms at t = 10 ms on two cores: two end at 11.5, the third at 13.
        assert_eq!(cpu.run(10, 1_500), 12);
        assert_eq!(cpu.run(10, 1_500), 12);
        assert_eq!(cpu.run(10, 1_500), 13);
        // Idle cores start at the arrival.
        assert_eq!(cpu.run(100, 100), 101);
        assert_eq!(cpu.busy_us, 4_600);
    }

    #[test]
    fn a_message_between_nodes_not_talking_within_the_idle_timeout_pays_two_handshake_ends() {
        let mut cpu = Cpu::new(model());
        assert_eq!(cpu.message_cost(3, 7, 0), 900);
        assert_eq!(cpu.message_cost(7, 3, 4_000), 100, "either direction uses the connection");
        assert_eq!(cpu.message_cost(3, 7, 8_999), 100, "4,000 → 8,999: still within 5 s");
        assert_eq!(cpu.message_cost(3, 7, 13_999), 900, "closed after 5 s unused");
        assert_eq!(cpu.handshakes, 2);
    }
}
