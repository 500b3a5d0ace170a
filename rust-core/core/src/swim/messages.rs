//! What SWIM nodes tell each other, and what a node tells its caller.

use serde::{Deserialize, Serialize};

use crate::ids::NodeId;

use super::Millis;

/// What a node believes of a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Liveness {
    /// Answers probes.
    Alive,
    /// Did not answer a probe; dead unless it refutes in time.
    Suspect,
    /// Declared dead (or left).
    Dead,
}

/// One piece of membership news: `node` at `incarnation` is `liveness`,
/// described by `meta` (its addresses, role, failure domain, capacity).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Update<M> {
    /// Whom it is about.
    pub node: NodeId,
    /// Only the node itself raises it.
    pub incarnation: u64,
    /// Its state.
    pub liveness: Liveness,
    /// What the node says about itself.
    pub meta: M,
}

/// The protocol's messages. `seq` pairs a ping with its ack; `updates` are
/// the piggybacked news.
#[allow(missing_docs)] // the fields are named in the variant docs
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message<M> {
    /// Are you alive? (answer: `Ack` with the same `seq`)
    Ping { seq: u64, updates: Vec<Update<M>> },
    /// Yes.
    Ack { seq: u64, updates: Vec<Update<M>> },
    /// Ping `target` for me and send me its ack under `seq`.
    PingReq { seq: u64, target: NodeId, updates: Vec<Update<M>> },
    /// News only.
    Gossip { updates: Vec<Update<M>> },
    /// The sender's full member list (`members`, itself included); `reply`: send yours back.
    Sync { members: Vec<Update<M>>, reply: bool },
}

/// A change the caller acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<M> {
    /// `node` is a live member now, described by `meta` (joined, refuted a
    /// suspicion, came back, or changed its meta).
    #[allow(missing_docs)]
    Up { node: NodeId, meta: M },
    /// `node` did not answer a probe; still a member.
    Suspect(NodeId),
    /// `node` is dead or left.
    Down(NodeId),
}

/// A member as this node sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member<M> {
    /// The newest incarnation heard of.
    pub incarnation: u64,
    /// Its state at that incarnation.
    pub liveness: Liveness,
    /// What it says about itself.
    pub meta: M,
    /// When it entered `liveness` (this node's clock).
    pub since: Millis,
    /// Where it sits on the monitoring rings (`monitors::ring_positions`),
    /// hashed once instead of on every change of the member list.
    pub(super) ring: Box<[u64]>,
}

/// Counters of what this node did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SwimStats {
    /// Messages handed to the caller to send.
    pub messages_sent: u64,
    /// Updates piggybacked or gossiped in them.
    pub updates_sent: u64,
    /// Probes started.
    pub probes: u64,
    /// Probes that needed other members' help.
    pub indirect_probes: u64,
    /// Members this node declared suspect.
    pub suspicions_raised: u64,
    /// Suspicions of this node it refuted.
    pub refutations: u64,
    /// Of those, declarations of this node's death: the others stopped
    /// counting it meanwhile, so it may have missed what they did then
    /// (a directory index holder forgets its records' completeness).
    pub declared_dead: u64,
}
