//! The protocol's timings and fan-outs.

use super::Millis;

/// Timings and fan-outs of the protocol (the `swim` module docs say what each does).
#[derive(Clone, Debug, PartialEq)]
pub struct SwimConfig {
    /// One probe per period.
    pub protocol_period: Millis,
    /// Wait for a direct ack before asking others to probe.
    pub probe_timeout: Millis,
    /// Members asked to probe a target that did not answer directly.
    pub indirect_probes: usize,
    /// Suspicion lasts this many periods × max(1, log10 N), and at least `min_suspicion`.
    pub suspicion_mult: u32,
    /// The shortest suspicion: how long a stalled node (a long GC pause, a
    /// host whose cores a restore saturates) has to answer again before it is
    /// declared dead.
    pub min_suspicion: Millis,
    /// Each update is sent this many times × ⌈log10(N + 1)⌉.
    pub retransmit_mult: u32,
    /// Members an update is gossiped to per period while updates are pending.
    pub gossip_fanout: usize,
    /// The members a node probes, asks for indirect probes and gossips to:
    /// its successors on this many hash rings (`swim/monitors.rs`). Each
    /// member is probed by about this many others, each every `monitors`
    /// periods: once per period on average, as with probes of random members,
    /// but every node talks to the same ~2 × `monitors` peers, so connections
    /// stay open instead of a new one (a Noise handshake) per probe.
    pub monitors: usize,
    /// The most a node's local health (`swim/health.rs`) stretches its
    /// probe period and timeout: up to `1 + max_local_health` times (0: off).
    pub max_local_health: u32,
    /// Updates carried by one message at most.
    pub max_piggyback: usize,
    /// Full-list exchange with a random member, every this × max(1, N / 128).
    pub sync_interval: Millis,
    /// Dead members are forgotten after this.
    pub dead_retention: Millis,
}

impl Default for SwimConfig {
    /// Sized so that a `kill -9`'d node is dead at 99 % of a 1,000-node
    /// cluster within 5 s (NETWORK.md, "Membership without a full mesh").
    fn default() -> Self {
        SwimConfig {
            protocol_period: 200,
            probe_timeout: 80,
            indirect_probes: 3,
            suspicion_mult: 3,
            // The full mesh tolerated ~4.75 s of missed pings because
            // shorter bounds dropped live holders mid-write on two saturated
            // cores (net/src/ping_failures.rs); SWIM adds up to a period of
            // probing and the gossip, so 3 s keeps a kill within 5 s.
            min_suspicion: 3_000,
            retransmit_mult: 6,
            gossip_fanout: 3,
            monitors: 8,
            // Lifeguard's default.
            max_local_health: 8,
            max_piggyback: 32,
            sync_interval: 30_000,
            dead_retention: 60_000,
        }
    }
}

impl SwimConfig {
    /// Every timing stretched `factor` times, fan-outs and counts unchanged:
    /// each node then does one period's work per `factor` periods of wall
    /// time. `fragstate bench swarm --time-dilation` runs this so that one
    /// process on two cores can hold more nodes than it can run at their real
    /// pace; figures in protocol time are the wall figures divided by `factor`.
    pub fn dilated(&self, factor: u32) -> SwimConfig {
        let f = u64::from(factor.max(1));
        SwimConfig {
            protocol_period: self.protocol_period * f,
            probe_timeout: self.probe_timeout * f,
            min_suspicion: self.min_suspicion * f,
            sync_interval: self.sync_interval * f,
            dead_retention: self.dead_retention * f,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SwimConfig;

    #[test]
    fn dilation_stretches_every_timing_and_nothing_else() {
        let base = SwimConfig::default();
        let slow = base.dilated(4);
        assert_eq!(slow.protocol_period, 4 * base.protocol_period);
        assert_eq!(slow.probe_timeout, 4 * base.probe_timeout);
        assert_eq!(slow.min_suspicion, 4 * base.min_suspicion);
        assert_eq!(slow.sync_interval, 4 * base.sync_interval);
        assert_eq!(slow.dead_retention, 4 * base.dead_retention);
        // With the timings put back, fan-outs and counts are the base's.
        let undone = SwimConfig { protocol_period: base.protocol_period, probe_timeout: base.probe_timeout, min_suspicion: base.min_suspicion, sync_interval: base.sync_interval, dead_retention: base.dead_retention, ..slow };
        assert_eq!(undone, base);
        assert_eq!(base.dilated(0), base, "a factor of 0 is taken as 1");
    }
}
