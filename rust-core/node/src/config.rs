//! [`NodeConfig`]: everything a process's node needs, as the Flink plugin
//! sends it (a JSON object of `FragstateOptions` values), and the bounds of
//! every numeric field ([`limits_json`]), which the plugin validates against.

use serde::{Deserialize, Serialize};

use fragstate_client::config::{ADAPTIVE_PHASE_MS, MAX_STORAGE_OVERHEAD, READ_AHEAD};
use fragstate_client::scrub::{DEFAULT_SCRUB_RATE, MAX_SCRUB_RATE};
use fragstate_client::{AdaptiveConfig, ClientConfig};
use fragstate_core::error::{Error, Result};
use fragstate_core::params::{CodingParams, Compression, MAX_CELL_SIZE, MAX_FRAGMENTS, MIN_CELL_SIZE, ZSTD_LEVELS};

/// Adaptive mode's default phase: five minutes.
pub const DEFAULT_ADAPTIVE_PHASE_MS: u64 = 300_000;

/// Nodes of an embedded mesh (besides: at least `k + m`).
pub const LOCAL_MESH_NODES: std::ops::RangeInclusive<usize> = 1..=64;

/// The bounds of every numeric [`NodeConfig`] field, as the JSON object the
/// Flink plugin validates its options against (`FragstateNative.limits()`):
/// `{"dataFragments": {"min": 1, "max": 32}, …}`. One source of truth: the
/// Java side copies no bound.
pub fn limits_json() -> String {

    let range = |min: u64, max: u64| serde_json::json!({ "min": min, "max": max });
    serde_json::json!({
        "dataFragments": range(1, MAX_FRAGMENTS as u64),
        "parityFragments": range(0, MAX_FRAGMENTS as u64 - 1),
        "totalFragments": range(1, MAX_FRAGMENTS as u64),
        "cellSize": range(MIN_CELL_SIZE as u64, MAX_CELL_SIZE as u64),
        "zstdLevel": range(*ZSTD_LEVELS.start() as u64, *ZSTD_LEVELS.end() as u64),
        "localMeshNodes": range(*LOCAL_MESH_NODES.start() as u64, *LOCAL_MESH_NODES.end() as u64),
        "readAhead": range(*READ_AHEAD.start() as u64, *READ_AHEAD.end() as u64),
        "storeMemory": range(MIN_CELL_SIZE as u64, i64::MAX as u64),
        "scrubRate": range(0, MAX_SCRUB_RATE),
        "adaptivePhaseMs": range(*ADAPTIVE_PHASE_MS.start(), *ADAPTIVE_PHASE_MS.end()),
        // the lower bound is the configured parameters' own (k+m)/k
        "maxStorageOverhead": range(1, MAX_STORAGE_OVERHEAD as u64),
    })
    .to_string()
}

/// Adaptive mode (issue 14): on (the default), or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Adaptive {
    /// Every object gets the configured parameters, placed by free space alone.
    Off,
    /// Parameters chosen per phase from measurements; slow nodes take parity, and only what the others cannot.
    #[default]
    On,
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// `swim` (the default) or `mesh` (`fragstate_net::Membership`).
    pub membership: String,
    pub read_ahead: usize,
    /// Stored bytes per second the background scrub verifies (per process:
    /// split over an embedded mesh); 0: off (reported cells are still rebuilt).
    pub scrub_rate: u64,
    pub log_level: String,
    pub adaptive: Adaptive,
    /// Adaptive mode's phase length (milliseconds).
    pub adaptive_phase_ms: u64,
    /// Adaptive mode's largest `(k+m)/k`; absent: the configured parameters' own.
    pub adaptive_max_storage_overhead: Option<f64>,
    /// The directory index (`ClientConfig::directory_index`; Flink's
    /// `fragstate.directory-index`); off by default (NETWORK.md: the
    /// 10-minute soaks with it on).
    pub directory_index: bool,
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
            membership: fragstate_net::Membership::default().to_string(),
            read_ahead: ClientConfig::default().read_ahead,
            scrub_rate: DEFAULT_SCRUB_RATE,
            log_level: "info".into(),
            adaptive: Adaptive::default(),
            adaptive_phase_ms: DEFAULT_ADAPTIVE_PHASE_MS,
            adaptive_max_storage_overhead: None,
            directory_index: false,
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
        let min_memory = MIN_CELL_SIZE as u64;
        if self.store_memory < min_memory {
            return Err(Error::invalid("store memory", self.store_memory, format!("at least {min_memory} bytes")));
        }
        if self.scrub_rate > MAX_SCRUB_RATE {
            return Err(Error::invalid("scrub rate", self.scrub_rate, format!("0 (off) ≤ bytes per second ≤ {MAX_SCRUB_RATE}")));
        }
        let params = self.coding_params()?;
        let adaptive = (self.adaptive == Adaptive::On).then(|| AdaptiveConfig {
            phase: std::time::Duration::from_millis(self.adaptive_phase_ms),
            max_storage_overhead: self.adaptive_max_storage_overhead.unwrap_or(params.storage_overhead()),
        });
        let cfg = ClientConfig {
            params,
            read_ahead: self.read_ahead,
            hedge: params.m().min(1),
            adaptive,
            directory_index: self.directory_index,
            ..ClientConfig::default()
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

