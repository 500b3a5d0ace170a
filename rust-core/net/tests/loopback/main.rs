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

/// Logs for a test that fails: `RUST_LOG` as a level or `target=level` directives (e.g.
/// `RUST_LOG=fragstate_net=debug,libp2p_swarm=debug` shows why nodes did not meet); errors only
/// without it.
pub fn init_logs() {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = std::env::var("RUST_LOG").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| Targets::new().with_default(tracing::Level::ERROR));
    let _ = tracing_subscriber::fmt().with_test_writer().finish().with(filter).try_init();
}
