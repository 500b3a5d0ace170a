//! The probe a node has in flight, and the pings it sends for others.

use super::Millis;
use crate::ids::NodeId;

/// The probe in flight this period.
pub(super) struct Probe {
    pub(super) target: NodeId,
    pub(super) seq: u64,
    pub(super) started: Millis,
    pub(super) acked: bool,
    pub(super) indirect_sent: bool,
    /// The caller is still connecting to the target ([`Swim::connecting`](super::Swim::connecting)):
    /// the probe's timers start when the ping leaves ([`Swim::sent`](super::Swim::sent)).
    pub(super) connecting: bool,
}

/// Periods a probe waits for the caller's connection before its target is
/// suspected anyway (a dial that neither succeeds nor fails).
pub(super) const CONNECT_PERIODS: Millis = 10;

/// A ping sent for another member's `PingReq`.
pub(super) struct Relay {
    pub(super) requester: NodeId,
    pub(super) their_seq: u64,
    pub(super) expires: Millis,
}
