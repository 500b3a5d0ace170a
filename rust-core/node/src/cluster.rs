//! The cluster-mode node of a Flink process: a `fragstate-net` storage node
//! built from the plugin's [`NodeConfig`], with repair and reclaim running.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fragstate_core::error::{Error, Result};
use fragstate_client::scrub::ScrubConfig;
use fragstate_net::{failure_domain, key, open_disk_node, NetConfig, NetNode, Role, ServiceConfig};
use fragstate_store::{claim_slot, FragmentStore};

use crate::config::NodeConfig;

/// `node-N` store directories a Flink host's processes may claim under `fragstate.store.dir`.
const STORE_SLOTS: usize = 64;

/// Starts the storage node of a Flink process (`node::Mode::Cluster`) from
/// the plugin's settings, with repair, scrub and reclaim running, and waits up to
/// 5 s for `fragments` other storage nodes (a write needs `k + m` nodes
/// besides the writer's own); fewer is logged, not an error. A `store_dir`
/// is a parent: the node claims its first free `node-N` ([`claim_slot`]).
pub(crate) async fn start_cluster_member(config: &NodeConfig, fragments: usize) -> Result<NetNode> {
    let psk = match (&config.cluster_key_file, config.insecure_no_cluster_key) {
        (Some(f), false) => Some(key::load_cluster_key(Path::new(f))?),
        (None, true) => None,
        (Some(_), true) => return Err(Error::invalid("insecureNoClusterKey", true, "false when clusterKeyFile is set")),
        (None, false) => {
            return Err(Error::invalid(
                "clusterKeyFile",
                "none",
                "a cluster key file (`fragstate keygen FILE`), or insecureNoClusterKey = true for an open cluster",
            ))
        }
    };
    let (identity, store, tombstones) = match &config.store_dir {
        Some(parent) => {
            // Several Flink processes on one host share the setting: each takes a free node-N.
            let slot = claim_slot(Path::new(parent), STORE_SLOTS)?;
            let (identity, store, tombstones) = open_disk_node(slot, config.store_memory, true)?;
            (identity, store, Some(tombstones))
        }
        None => {
            let identity = libp2p::identity::Keypair::generate_ed25519();
            let name = identity.public().to_peer_id().to_base58();
            (identity, FragmentStore::in_memory(name, config.store_memory), None)
        }
    };
    let mut cfg = NetConfig::new(identity, Role::Storage, psk);
    let listen = config.listen.clone().unwrap_or_else(|| "/ip4/0.0.0.0/tcp/0".into());
    cfg.listen = vec![listen.parse().map_err(|_| Error::invalid("listen", &listen, "a multiaddr such as /ip4/0.0.0.0/tcp/7710"))?];
    cfg.bootstrap = config
        .bootstrap
        .iter()
        .map(|b| b.parse().map_err(|_| Error::invalid("bootstrap", b, "multiaddrs such as /ip4/10.0.0.1/tcp/7710")))
        .collect::<Result<_>>()?;
    cfg.store = Some(Arc::new(store));
    cfg.tombstone_file = tombstones;
    cfg.domain = failure_domain(config.failure_domain.as_deref());
    cfg.set_membership(config.membership.parse()?);
    let node = NetNode::start(cfg).await?;
    node.start_services(ServiceConfig { scrub: ScrubConfig { rate: config.scrub_rate, ..ScrubConfig::default() }, ..ServiceConfig::default() });
    tracing::info!(peer = %node.id(), addrs = ?node.listen_addrs(), "fragstate cluster node started");
    if let Err(e) = node.wait_for_storage_nodes(fragments + 1, Duration::from_secs(5)).await {
        tracing::warn!(error = %e, "not enough storage nodes yet; writes fail until k + m other nodes are live");
    }
    Ok(node)
}

