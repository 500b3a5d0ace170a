//! A process's fragstate node, assembled from one [`NodeConfig`]: the client
//! every stream of the process uses and the storage it reaches — an
//! in-process mesh (`embedded`, for local Flink execution) or, once the
//! network layer is in, a networked node (`cluster`). The JNI layer keeps one
//! per JVM; the CLI can build one too.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mesh::Mesh;
use crate::params::{CodingParams, Compression, ZSTD_LEVELS};
use crate::store::FragmentStore;
use crate::{Client, ClientConfig};

/// Nodes of an embedded mesh (besides: at least `k + m`).
pub const LOCAL_MESH_NODES: std::ops::RangeInclusive<usize> = 1..=64;

/// The bounds of every numeric [`NodeConfig`] field, as the JSON object the
/// Flink plugin validates its options against (`FragstateNative.limits()`):
/// `{"dataFragments": {"min": 1, "max": 32}, …}`. One source of truth: the
/// Java side copies no bound.
pub fn limits_json() -> String {
    use crate::params::{MAX_CELL_SIZE, MAX_FRAGMENTS, MIN_CELL_SIZE};
    let range = |min: u64, max: u64| serde_json::json!({ "min": min, "max": max });
    serde_json::json!({
        "dataFragments": range(1, MAX_FRAGMENTS as u64),
        "parityFragments": range(0, MAX_FRAGMENTS as u64 - 1),
        "totalFragments": range(1, MAX_FRAGMENTS as u64),
        "cellSize": range(MIN_CELL_SIZE as u64, MAX_CELL_SIZE as u64),
        "zstdLevel": range(*ZSTD_LEVELS.start() as u64, *ZSTD_LEVELS.end() as u64),
        "localMeshNodes": range(*LOCAL_MESH_NODES.start() as u64, *LOCAL_MESH_NODES.end() as u64),
        "readAhead": range(*crate::client::READ_AHEAD.start() as u64, *crate::client::READ_AHEAD.end() as u64),
        "storeMemory": range(MIN_CELL_SIZE as u64, i64::MAX as u64),
    })
    .to_string()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// An in-process mesh of `local_mesh_nodes` nodes (MiniCluster, IDE runs).
    #[default]
    Embedded,
    /// A libp2p node that joins the cluster.
    Cluster,
}

/// Everything a node needs; the Flink plugin builds it from `FragstateOptions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeConfig {
    pub mode: Mode,
    pub data_fragments: usize,
    pub parity_fragments: usize,
    pub cell_size: u64,
    /// `none`, `zstd` (level 3) or `zstd:LEVEL`.
    pub compression: String,
    pub local_mesh_nodes: usize,
    /// Disk stores under this directory; in memory when absent.
    pub store_dir: Option<String>,
    /// Byte budget of this process's stores (split evenly over an embedded mesh).
    pub store_memory: u64,
    pub listen: Option<String>,
    pub bootstrap: Vec<String>,
    pub cluster_key_file: Option<String>,
    pub insecure_no_cluster_key: bool,
    pub failure_domain: Option<String>,
    pub read_ahead: usize,
    pub log_level: String,
}

impl Default for NodeConfig {
    fn default() -> Self {
        let p = CodingParams::default();
        NodeConfig {
            mode: Mode::Embedded,
            data_fragments: p.k(),
            parity_fragments: p.m(),
            cell_size: p.cell_size() as u64,
            compression: "none".into(),
            local_mesh_nodes: 6,
            store_dir: None,
            store_memory: 4 << 30,
            listen: None,
            bootstrap: Vec::new(),
            cluster_key_file: None,
            insecure_no_cluster_key: false,
            failure_domain: None,
            read_ahead: ClientConfig::default().read_ahead,
            log_level: "info".into(),
        }
    }
}

/// Parses `none`, `zstd` or `zstd:LEVEL`.
pub fn parse_compression(s: &str) -> Result<Compression> {
    let allowed = || format!("none, zstd or zstd:LEVEL with {} ≤ LEVEL ≤ {}", ZSTD_LEVELS.start(), ZSTD_LEVELS.end());
    match s.trim() {
        "none" | "" => Ok(Compression::None),
        "zstd" => Ok(Compression::Zstd { level: 3 }),
        other => match other.strip_prefix("zstd:").map(str::parse::<i32>) {
            Some(Ok(level)) if ZSTD_LEVELS.contains(&level) => Ok(Compression::Zstd { level }),
            _ => Err(Error::invalid("compression", other, allowed())),
        },
    }
}

impl NodeConfig {
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| Error::invalid("node configuration", json, format!("a JSON object of known keys ({e})")))
    }

    pub fn coding_params(&self) -> Result<CodingParams> {
        CodingParams::new(self.data_fragments, self.parity_fragments, self.cell_size, parse_compression(&self.compression)?)
    }

    pub fn client_config(&self) -> Result<ClientConfig> {
        let min_memory = crate::params::MIN_CELL_SIZE as u64;
        if self.store_memory < min_memory {
            return Err(Error::invalid("store memory", self.store_memory, format!("at least {min_memory} bytes")));
        }
        let params = self.coding_params()?;
        let cfg = ClientConfig { params, read_ahead: self.read_ahead, hedge: params.m().min(1), ..ClientConfig::default() };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// A running node.
pub struct Node {
    config: NodeConfig,
    client: Client,
    mesh: Option<Arc<Mesh>>,
    net: Option<crate::net::NetNode>,
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
                tracing::info!(nodes = n, k = config.data_fragments, m = config.parity_fragments, dir = ?config.store_dir, "embedded fragstate mesh started");
                Ok(Node { config, client, mesh: Some(mesh), net: None })
            }
            Mode::Cluster => {
                // Called from a plain thread that entered the runtime (the JNI layer), never from a task.
                let handle = tokio::runtime::Handle::try_current().map_err(|_| Error::InvalidState {
                    path: "fragstate node".into(),
                    reason: "cluster mode must be started with a tokio runtime entered".into(),
                })?;
                let net = handle.block_on(crate::net::start_cluster_member(&config, client_config.params.fragments()))?;
                // Network defaults (hedge 0, the node itself excluded), the configured coding and read-ahead.
                let client_config = ClientConfig {
                    params: client_config.params,
                    read_ahead: client_config.read_ahead,
                    ..net.client_config(false)
                };
                let client = Client::new(Arc::new(net.clone()), client_config)?;
                Ok(Node { config, client, mesh: None, net: Some(net) })
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
    pub fn net(&self) -> Option<&crate::net::NetNode> {
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
            "client": self.client.stats(),
            "network": self.net.as_ref().map(|n| n.stats()),
        })
        .to_string()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(net) = &self.net {
            // Its tasks end by themselves and close the connections.
            net.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
