//! Placement at scale, simulated (issue 13): clusters of up to thousands of
//! storage nodes and up to millions of objects, in memory, with the real
//! placement code ([`fragstate_core::placement::place`]) — nothing of it is
//! re-implemented here. What a strategy is judged by:
//!
//! - **load balance**: fragments per node over the mean (max and p99), all
//!   nodes of equal capacity;
//! - **data moved per join**: fragments whose holder changes when one node
//!   joins, against the ideal `total / (N + 1)`;
//! - **lookups after churn**: a reader that knows only the path and the
//!   current membership view asks the `k + m` nodes the strategy names (for
//!   rendezvous the client's own [`fragstate_core::lookup::lookup_candidates`]);
//!   the lookup is settled in one round trip when more than `m` of the
//!   object's holders (placed under the old view, none repaired yet) are among
//!   them ([`fragstate_core::lookup::first_round_settles`]; a client asks
//!   every other node otherwise); a manifest hit when at least one is (every
//!   holder keeps the manifest); the fragments could come straight from them
//!   when `k` are.
//!
//! Strategies: [`Strategy::Rendezvous`](sim::Strategy::Rendezvous), today's weighted rendezvous over
//! every live node; [`Strategy::AdaptiveRendezvous`](sim::Strategy::AdaptiveRendezvous), what an adaptive-mode
//! writer chooses around nodes it measured slow (readers rank plainly);
//! [`Strategy::XorNeighbours`](sim::Strategy::XorNeighbours), the `k + m` nodes whose ids are XOR-closest to
//! the key's hash (Kademlia's notion of "responsible for a key"), the design
//! card's starting point. Each node is its own failure domain here.
//!
//! [`membership`] runs the real SWIM state machine
//! ([`fragstate_core::swim`]) for every node of a simulated network: time to
//! converge, idle traffic per node, and how soon a stopped node is dead at
//! every other.

pub mod cpu;
pub mod membership;
pub mod sim;
