//! The network layer's tests over real libp2p on loopback, one module per
//! concern, in one test binary (as three binaries each linked and optimised
//! the whole dependency tree again). Run one module with
//! `cargo test --profile ci -p fragstate-net --test loopback swim_cluster::`.

mod dir_index;
mod peer_bounds;
mod swim_cluster;

/// The node-flooding tests of `peer_bounds` take it exclusively, the
/// failure-detection tests of `swim_cluster` shared: a flood on two shared
/// cores must not delay SWIM's probes past the bounds those tests assert.
/// (Nodes that never met in `peer_bounds`, one run in four, were dials from a
/// listen port whose 4-tuple was still in TIME_WAIT: `NewPortDials` in swarm.rs.)
pub static FLOODS_APART: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());
