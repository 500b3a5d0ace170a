//! fragstate over libp2p: nodes in separate processes form one cluster,
//! and `fragstate_client::Client` runs over it unchanged because [`NetNode`]
//! implements `fragstate_client::transport::Transport`.
//!
//! - [`key`]: the cluster key (a pre-shared key file in libp2p's `pnet` format) and node identities.
//! - [`wire`]: the frames of the fragment protocol.
//! - [`config`]: how a node runs ([`NetConfig`]).
//! - [`node`]: [`NetNode`], which starts and owns everything below.
//! - `state`: what the node's tasks share.
//! - `swarm`: transport, behaviours and the task that drives them.
//! - `pending_limit`: half-open incoming connections per remote address.
//! - `membership`: live peers from hellos (mesh).
//! - `swim_node`: live peers from SWIM ([`config::Membership::Swim`]).
//! - `tombstones`: deletes remembered for nodes that were away.
//! - `index_holder`: directory index records of a storage node (in memory); `index_node` serves them.
//! - `pool`: request streams per peer, one request with its retry.
//! - `server`: answers requests from the local store.
//! - `transport`: the `Transport` implementation.
//! - [`services`]: repair and reclaim on storage nodes.
//! - [`swim_wire`]: the SWIM protocol's messages and their bounded decoding.
//!
//! `NETWORK.md` beside this crate describes the protocol, the security
//! model and the pitfalls met on the way.

pub mod config;
mod dials;
pub mod hints;
mod holder_check;
mod index_holder;
mod index_node;
pub mod key;
mod membership;
mod peer_limit;
mod pending_limit;
mod ping_failures;
pub mod node;
mod node_stats;
mod pool;
mod rebalance;
mod server;
pub mod services;
mod state;
mod swarm;
mod swim_node;
pub mod swim_wire;
pub mod tombstone_log;
pub mod tombstone_set;
mod tombstones;
mod transport;
pub mod wire;

pub use config::{hostname, Membership, NetConfig, FRAG_PROTOCOL, SWIM_IDLE_CONNECTION_TIMEOUT, SWIM_PING_INTERVAL};
pub use node::NetNode;
pub use state::{DialCause, Traffic};
pub use peer_limit::{FRAME_BYTES_PER_PEER, MAX_FRAME_BYTES, MAX_STREAMS, STREAMS_PER_PEER, UPLOADS_PER_PEER};
pub use pending_limit::MAX_PENDING_INCOMING_PER_ADDRESS;
pub use swarm::{MAX_ESTABLISHED, MAX_ESTABLISHED_PER_PEER, MAX_PENDING_INCOMING};
pub use holder_check::HolderCheckPass;
pub use index_holder::MAX_INDEX_BYTES;
pub use services::ServiceConfig;
pub use wire::{NodeStats, Role};

/// The failure-domain label of this process's node from the configured
/// value: `host` or unset → the host name (one fragment per machine),
/// `process` → `<hostname>/<pid>` (one fragment per process: every JVM of a
/// cluster on one host, as in tests and demos), anything else → that literal
/// label (e.g. `rack1-host3`).
pub fn failure_domain(value: Option<&str>) -> String {
    match value.map(str::trim) {
        None | Some("") | Some("host") => hostname(),
        Some("process") => format!("{}/{}", hostname(), std::process::id()),
        Some(label) => label.to_string(),
    }
}

/// A disk-backed storage node's state in a directory this process has
/// locked: its identity (`node.identity`, created on first use, so a
/// restarted node keeps its peer id), its fragment store, and the path of
/// its tombstone file.
pub fn open_disk_node(
    dir: fragstate_store::DirLock,
    budget: u64,
    fsync: bool,
) -> fragstate_core::Result<(libp2p::identity::Keypair, fragstate_store::FragmentStore, std::path::PathBuf)> {
    let path = dir.dir().to_path_buf();
    let identity = key::load_or_create_identity(&path.join("node.identity"))?;
    let name = identity.public().to_peer_id().to_base58();
    tracing::info!(dir = %path.display(), node = %name, "fragment store opened");
    let store = fragstate_store::FragmentStore::open_claimed(name, dir, budget, fsync)?;
    Ok((identity, store, path.join("tombstones.bin")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_domain_host_process_and_literal() {
        let host = hostname();
        assert!(!host.is_empty());
        assert_eq!(failure_domain(None), host);
        assert_eq!(failure_domain(Some("")), host);
        assert_eq!(failure_domain(Some("host")), host);
        assert_eq!(failure_domain(Some(" process ")), format!("{host}/{}", std::process::id()));
        assert_ne!(failure_domain(Some("process")), failure_domain(Some("host")));
        assert_eq!(failure_domain(Some("rack1-host3")), "rack1-host3");
    }
}
