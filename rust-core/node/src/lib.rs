//! A process's fragstate node, assembled from one [`NodeConfig`]: the client
//! every stream of the process uses and the storage it reaches — an
//! in-process mesh (`embedded`, for local Flink execution) or a networked
//! storage node that joins the cluster (`cluster`). The JNI layer keeps one
//! per JVM.

mod cluster;
pub mod config;

use std::path::Path;
use std::sync::Arc;

use fragstate_client::mesh::Mesh;
use fragstate_client::scrub::ScrubConfig;
use fragstate_client::scrubber::{ScrubStats, Scrubber};
use fragstate_client::{Client, ClientConfig};
use fragstate_core::error::{Error, Result};
use fragstate_net::NetNode;
use fragstate_store::FragmentStore;

pub use config::{limits_json, parse_compression, Adaptive, Mode, NodeConfig, LOCAL_MESH_NODES};

/// A running node.
pub struct Node {
    config: NodeConfig,
    client: Client,
    mesh: Option<Arc<Mesh>>,
    net: Option<NetNode>,
    /// Stops the embedded mesh's scrubbers.
    stop_scrub: Option<tokio::sync::watch::Sender<bool>>,
}

impl Node {
    pub fn start(config: NodeConfig) -> Result<Node> {
        let client_config = config.client_config()?;
        match config.mode {
            Mode::Embedded => {
                let n = config.local_mesh_nodes;
                let needed = client_config.params.fragments();
                let max = *LOCAL_MESH_NODES.end();
                if n < needed {
                    return Err(Error::invalid(
                        "local mesh nodes",
                        n,
                        format!("at least k + m = {needed} (one node per fragment), at most {max}"),
                    ));
                }
                if n > max {
                    return Err(Error::invalid("local mesh nodes", n, format!("{needed} ≤ nodes ≤ {max}")));
                }
                let budget = config.store_memory / n as u64;
                let stores = (0..n)
                    .map(|i| {
                        let name = format!("mesh-{i}");
                        let store = match &config.store_dir {
                            Some(dir) => FragmentStore::open_dir(name.clone(), &Path::new(dir).join(&name), budget, true)?,
                            None => FragmentStore::in_memory(name.clone(), budget),
                        };
                        Ok((name, store))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let mesh = Mesh::from_stores(stores);
                let client = Client::new(mesh.clone(), client_config)?;
                let stop_scrub = start_mesh_scrub(&mesh, &client, config.scrub_rate);
                tracing::info!(nodes = n, k = config.data_fragments, m = config.parity_fragments, dir = ?config.store_dir, "embedded fragstate mesh started");
                Ok(Node { config, client, mesh: Some(mesh), net: None, stop_scrub })
            }
            Mode::Cluster => {
                // Called from a plain thread that entered the runtime (the JNI layer), never from a task.
                let handle = tokio::runtime::Handle::try_current().map_err(|_| Error::Usage {
                    component: "fragstate node",
                    reason: "cluster mode must be started with a tokio runtime entered".into(),
                })?;
                let net = handle.block_on(cluster::start_cluster_member(&config, client_config.params.fragments()))?;
                // Network defaults (hedge 0, the node itself excluded), the configured coding and read-ahead.
                let client_config = ClientConfig {
                    params: client_config.params,
                    read_ahead: client_config.read_ahead,
                    adaptive: client_config.adaptive,
                    directory_index: client_config.directory_index,
                    ..net.client_config(false)
                };
                let client = Client::new(Arc::new(net.clone()), client_config)?;
                net.report_client_stats(client.stats_source());
                Ok(Node { config, client, mesh: None, net: Some(net), stop_scrub: None })
            }
        }
    }

    /// Waits until a new object could be placed ([`Client::check_placement`]),
    /// checking every 100 ms; after `timeout`, the placement error names the
    /// live node and failure-domain counts.
    pub async fn await_placement(&self, timeout: std::time::Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match self.client.check_placement() {
                Ok(()) => return Ok(()),
                Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
            }
        }
    }

    /// The network node, in cluster mode.
    pub fn net(&self) -> Option<&NetNode> {
        self.net.as_ref()
    }

    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The in-process mesh, in embedded mode (fault injection for tests).
    pub fn mesh(&self) -> Option<&Arc<Mesh>> {
        self.mesh.as_ref()
    }

    /// The scrub counters of this process's storage: its network node, or
    /// every node of its embedded mesh summed.
    pub fn scrub_stats(&self) -> ScrubStats {
        let mut total = self.net.as_ref().map(|n| n.stats().scrub).unwrap_or_default();
        if let Some(mesh) = &self.mesh {
            for id in mesh.node_ids() {
                if let Ok(s) = mesh.scrub_shared(&id) {
                    total += s.stats();
                }
            }
        }
        total
    }

    /// Counters and holdings as one JSON object, for metrics.
    pub fn stats_json(&self) -> String {
        let live = self.client.transport().live_nodes();
        let (mut fragments, mut bytes, mut manifests) = (0u64, 0u64, 0u64);
        if let Some(u) = self.net.as_ref().and_then(|n| n.store()).map(|s| s.usage()) {
            fragments += u.fragments;
            bytes += u.bytes;
            manifests += u.manifests;
        }
        if let Some(mesh) = &self.mesh {
            for id in mesh.node_ids() {
                if let Ok(s) = mesh.store(&id) {
                    let u = s.usage();
                    fragments += u.fragments;
                    bytes += u.bytes;
                    manifests += u.manifests;
                }
            }
        }
        serde_json::json!({
            "mode": self.config.mode,
            "liveNodes": live.len(),
            "fragmentsHeld": fragments,
            "bytesHeld": bytes,
            "manifestsHeld": manifests,
            "heapBytes": fragstate_core::heap::live_bytes(),
            "client": self.client.stats(),
            "scrub": self.scrub_stats(),
            "network": self.net.as_ref().map(|n| n.stats()),
        })
        .to_string()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(stop) = &self.stop_scrub {
            let _ = stop.send(true);
        }
        if let Some(net) = &self.net {
            // Its tasks end by themselves and close the connections.
            net.stop();
        }
    }
}

/// Starts a scrubber for every node of an embedded mesh, the process's rate
/// split evenly over them, when a runtime is entered (the JNI layer enters
/// one); without a runtime the mesh is not scrubbed.
fn start_mesh_scrub(mesh: &Arc<Mesh>, client: &Client, rate: u64) -> Option<tokio::sync::watch::Sender<bool>> {
    let handle = tokio::runtime::Handle::try_current().ok()?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let share = if rate == 0 { 0 } else { (rate / mesh.len().max(1) as u64).max(1) };
    for id in mesh.node_ids() {
        let (Ok(store), Ok(shared)) = (mesh.store(&id), mesh.scrub_shared(&id)) else { continue };
        let scrubber = Scrubber::new(store, client.clone(), shared, ScrubConfig { rate: share, ..ScrubConfig::default() });
        let mut stopped = stopped.clone();
        handle.spawn(scrubber.run(async move {
            let _ = stopped.wait_for(|s| *s).await;
        }));
    }
    Some(stop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstate_core::params::Compression;

    #[test]
    fn config_json_defaults_and_errors() {
        let c = NodeConfig::from_json("{}").unwrap();
        assert_eq!(c, NodeConfig::default());
        let c = NodeConfig::from_json(r#"{"dataFragments":6,"parityFragments":3,"compression":"zstd:5","localMeshNodes":9}"#).unwrap();
        assert_eq!(c.coding_params().unwrap().compression(), Compression::Zstd { level: 5 });
        let e = NodeConfig::from_json(r#"{"dataFragmentz":6}"#).unwrap_err().to_string();
        assert!(e.contains("unknown field `dataFragmentz`"), "{e}");
        let e = parse_compression("zstd:30").unwrap_err().to_string();
        assert!(e.contains("invalid compression = zstd:30") && e.contains("1 ≤ LEVEL ≤ 19"), "{e}");
        let e = Node::start(NodeConfig { local_mesh_nodes: 5, ..NodeConfig::default() }).err().unwrap().to_string();
        assert!(e.contains("invalid local mesh nodes = 5: allowed at least k + m = 6"), "{e}");
        let e = Node::start(NodeConfig { local_mesh_nodes: 65, ..NodeConfig::default() }).err().unwrap().to_string();
        assert!(e.contains("invalid local mesh nodes = 65: allowed 6 ≤ nodes ≤ 64"), "{e}");
        let e = NodeConfig { store_memory: 4095, ..NodeConfig::default() }.client_config().unwrap_err().to_string();
        assert!(e.contains("invalid store memory = 4095: allowed at least 4096 bytes"), "{e}");
    }

    #[test]
    fn limits_are_the_bounds_the_config_checks() {
        let limits: serde_json::Value = serde_json::from_str(&limits_json()).unwrap();
        let bound = |name: &str, end: &str| limits[name][end].as_u64().unwrap_or_else(|| panic!("{name}.{end} in {limits}"));
        let config = |k: u64, m: u64, cell: u64| NodeConfig {
            data_fragments: k as usize,
            parity_fragments: m as usize,
            cell_size: cell,
            local_mesh_nodes: 64,
            ..NodeConfig::default()
        };
        let (k_max, m_max) = (bound("dataFragments", "max"), bound("parityFragments", "max"));
        assert!(config(k_max, 0, 4096).coding_params().is_ok());
        assert!(config(k_max + 1, 0, 4096).coding_params().is_err());
        assert!(config(1, m_max, 4096).coding_params().is_ok());
        assert!(config(1, m_max + 1, 4096).coding_params().is_err());
        assert!(config(bound("dataFragments", "min") - 1, 0, 4096).coding_params().is_err());
        assert_eq!(bound("totalFragments", "max"), k_max);
        let (cell_min, cell_max) = (bound("cellSize", "min"), bound("cellSize", "max"));
        assert!(config(4, 2, cell_min).coding_params().is_ok() && config(4, 2, cell_max).coding_params().is_ok());
        assert!(config(4, 2, cell_min - 1).coding_params().is_err() && config(4, 2, cell_max + 1).coding_params().is_err());
        for (level, ok) in [(bound("zstdLevel", "min"), true), (bound("zstdLevel", "max"), true), (bound("zstdLevel", "max") + 1, false)] {
            assert_eq!(parse_compression(&format!("zstd:{level}")).is_ok(), ok, "zstd:{level}");
        }
        for (n, ok) in [(bound("readAhead", "min"), true), (bound("readAhead", "max"), true), (bound("readAhead", "max") + 1, false)] {
            assert_eq!(NodeConfig { read_ahead: n as usize, ..NodeConfig::default() }.client_config().is_ok(), ok, "read-ahead {n}");
        }
        let mesh_max = bound("localMeshNodes", "max") as usize;
        assert!(Node::start(NodeConfig { local_mesh_nodes: mesh_max + 1, ..NodeConfig::default() }).is_err());
        let memory_min = bound("storeMemory", "min");
        assert!(NodeConfig { store_memory: memory_min, ..NodeConfig::default() }.client_config().is_ok());
        assert!(NodeConfig { store_memory: memory_min - 1, ..NodeConfig::default() }.client_config().is_err());
        let (scrub_min, scrub_max) = (bound("scrubRate", "min"), bound("scrubRate", "max"));
        assert_eq!(scrub_min, 0, "0 turns the scrub off");
        for (rate, ok) in [(scrub_min, true), (scrub_max, true), (scrub_max + 1, false)] {
            assert_eq!(NodeConfig { scrub_rate: rate, ..NodeConfig::default() }.client_config().is_ok(), ok, "scrub rate {rate}");
        }
        let e = NodeConfig::from_json(r#"{"scrubRate":1}"#).unwrap();
        assert_eq!(e.scrub_rate, 1);
        let on = |phase_ms: u64, overhead: Option<f64>| NodeConfig { adaptive: Adaptive::On, adaptive_phase_ms: phase_ms, adaptive_max_storage_overhead: overhead, ..NodeConfig::default() };
        let (phase_min, phase_max) = (bound("adaptivePhaseMs", "min"), bound("adaptivePhaseMs", "max"));
        for (ms, ok) in [(phase_min, true), (phase_max, true), (phase_min - 1, false), (phase_max + 1, false)] {
            assert_eq!(on(ms, None).client_config().is_ok(), ok, "adaptive phase {ms} ms");
        }
        let overhead_max = bound("maxStorageOverhead", "max") as f64;
        assert!(on(60_000, Some(overhead_max)).client_config().is_ok() && on(60_000, Some(overhead_max + 0.01)).client_config().is_err());
        assert!(on(60_000, Some(1.49)).client_config().is_err(), "below RS(4,2)'s own 1.5");
    }

    #[test]
    fn adaptive_mode_is_on_by_default_with_the_configured_overhead_and_can_be_turned_off() {
        let a = NodeConfig::default().client_config().unwrap().adaptive.unwrap();
        assert_eq!((a.phase, a.max_storage_overhead), (std::time::Duration::from_millis(crate::config::DEFAULT_ADAPTIVE_PHASE_MS), 1.5));
        assert_eq!(NodeConfig::from_json(r#"{"adaptive":"off"}"#).unwrap().client_config().unwrap().adaptive, None);
        let c = NodeConfig::from_json(r#"{"adaptive":"on","adaptivePhaseMs":60000}"#).unwrap().client_config().unwrap();
        let a = c.adaptive.unwrap();
        assert_eq!((a.phase, a.max_storage_overhead), (std::time::Duration::from_secs(60), 1.5));
        let e = NodeConfig::from_json(r#"{"adaptive":"maybe"}"#).unwrap_err().to_string();
        assert!(e.contains("maybe"), "{e}");
    }

    #[test]
    fn the_directory_index_is_off_by_default_and_turned_on_by_the_flink_option() {
        assert!(!NodeConfig::default().client_config().unwrap().directory_index);
        assert!(NodeConfig::from_json(r#"{"directoryIndex":true}"#).unwrap().client_config().unwrap().directory_index);
    }
}
