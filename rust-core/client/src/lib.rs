//! fragstate's pipelines: objects written as erasure-coded stripes to `k + m`
//! nodes, read back from any `k` of them, and repaired when a holder is
//! lost — all over the [`transport::Transport`] trait, so the same code runs
//! over the in-process [`mesh`] and over the network (`fragstate-net`).
//!
//! Dependencies point down only: [`client`] → [`writer`] → [`repair`] →
//! [`reader`] → `dir_index` (the directory index's reads, changes and births)
//! → [`ctx`] (shared context, counters, broadcast delete) → [`adaptive`] (adaptive mode's
//! phases), `buffers` (stripe buffers reused across writes),
//! [`config`], [`transport`]. [`mesh`] is a `Transport` of N in-process
//! nodes over `fragstate-store`, with fault injection for tests.
//! [`scrub`] decides what a node's background scrub verifies next (pure,
//! no I/O); [`scrubber`] runs it on a store and rebuilds bad cells through
//! a [`Client`] (above `client`, below `mesh`).

pub mod adaptive;
pub mod client;
pub mod config;
mod buffers;
mod ctx;
mod dir_index;
mod known_dirs;
mod manifest_lookup;
pub mod mesh;
pub mod reader;
mod rebalance;
mod repair;
pub mod scrub;
pub mod scrubber;
pub mod transport;
pub mod writer;

pub use client::{Client, ClientStats};
pub use ctx::PeerStats;
pub use config::{AdaptiveConfig, ClientConfig};
