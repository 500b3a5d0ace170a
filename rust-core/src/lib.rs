//! fragstate: erasure-coded, fragment-based parallel state recovery for
//! Apache Flink.
//!
//! Layers, from the inside out:
//! - I/O-free core: [`params`] (coding parameters and bounds), [`format`]
//!   (versioned manifests, fragment headers, cell frames), [`codec`] (one
//!   stripe ⇄ `k + m` checksummed cells), [`placement`] (who holds what).
//! - Pipelines written against the [`transport`] traits: [`writer`],
//!   [`reader`] (parallel, hedged, read-ahead) and repair, driven by a
//!   [`client::Client`].
//! - Adapters: [`store`] (a node's fragments in memory or on disk) and
//!   [`mesh`] (N nodes in one process, with fault injection), [`net`]
//!   (nodes in separate processes over libp2p).
//!
//! `FORMAT.md` beside this crate specifies every byte that is stored or sent.

pub mod client;
pub mod codec;
pub mod error;
pub mod format;
pub mod jni;
pub mod mesh;
pub mod node;
pub mod net;
pub mod params;
pub mod placement;
pub mod reader;
mod repair;
pub mod store;
pub mod transport;
pub mod writer;

pub use client::{Client, ClientConfig, ClientStats};
pub use error::{Error, Result};
pub use params::{CodingParams, Compression};
