//! fragstate's I/O-free core: everything about an object that can be
//! decided without a network, a disk or an async runtime.
//!
//! - [`ids`]: node ids, write ids, fragment keys, the clock.
//! - [`error`]: the one error type of every fragstate crate.
//! - [`params`]: coding parameters (`k`, `m`, cell size, compression) and their bounds.
//! - [`format`](mod@format): versioned manifests, fragment headers and cell frames (`FORMAT.md`).
//! - [`codec`]: one stripe ⇄ `k + m` checksummed cells (Reed–Solomon).
//! - [`placement`]: which live nodes hold an object's fragments.
//! - [`lookup`]: which nodes a reader asks for an object's manifest, and when their answers suffice.
//! - [`swim`]: membership without a full mesh (SWIM probes, suspicion, gossip) as a state machine.
//! - [`restore_model`]: the predicted restore time of coding parameters over measured holders, and adaptive mode's choice of them.
//! - [`adaptive`]: adaptive mode's phase decisions and which holders take data fragments.
//! - [`delete`]: what a delete removes on a node.
//! - [`dir_index`]: a directory's children as last-writer-wins entries, and the quorums that keep a reader from missing a change (the directory index's rules; not wired in yet).
//! - [`version`]: how the versions of one path are ordered (overwrites).
//! - [`sample`]: deterministic bytes for tests and benchmarks.
//! - [`heap`]: live heap bytes of the process (a counting global allocator).
//!
//! The layers above: `fragstate-store` keeps fragments, `fragstate-client`
//! runs the write/read/repair pipelines over a `Transport`, `fragstate-net`
//! is that transport over libp2p. Writing and reading an object through the
//! in-process mesh of `fragstate-client`:
//!
//! ```
//! use fragstate_client::mesh::Mesh;
//! use fragstate_client::{Client, ClientConfig};
//! use fragstate_core::params::{CodingParams, Compression};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! // Six storage nodes in this process, 64 MiB each; RS(4,2) with 4 KiB cells.
//! let mesh = Mesh::in_memory(6, 64 << 20);
//! let params = CodingParams::new(4, 2, 4096, Compression::None)?;
//! let client = Client::new(mesh.clone(), ClientConfig { params, ..ClientConfig::default() })?;
//!
//! let state = vec![7u8; 100_000];
//! let mut w = client.create("job/chk-1/state", false).await?;
//! w.write(&state).await?;
//! w.close().await?; // every fragment acknowledged, manifest published
//!
//! // Any k = 4 of the 6 fragments rebuild the object: lose two holders.
//! let ids = mesh.node_ids();
//! mesh.kill(&ids[0])?;
//! mesh.kill(&ids[1])?;
//! let mut r = client.open("job/chk-1/state").await?;
//! assert_eq!(r.read_to_end().await?, state);
//! # Ok::<(), fragstate_core::error::Error>(())
//! # }).unwrap();
//! ```
#![warn(missing_docs)]

pub mod adaptive;
pub mod codec;
pub mod delete;
pub mod dir_index;
pub mod error;
pub mod format;
pub mod heap;
pub mod holder_check;
pub mod ids;
pub mod lookup;
pub mod params;
pub mod placement;
pub mod rebalance;
pub mod restore_model;
pub mod sample;
pub mod swim;
pub mod version;

pub use error::{Error, Result};
