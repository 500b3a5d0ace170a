//! Adaptive mode in the client (issue 14): the phase clock, the writer's own
//! figures (how fast it encodes, what zstd does to a sample of each phase's
//! state) and the decisions of `fragstate_core::adaptive`, applied to new
//! objects. The decisions themselves are pure and live in the core.
//!
//! A phase starts at the first new object after the last one ended; its
//! parameters are decided then, from the estimates of the live candidates and
//! the bytes this client wrote in the phase before. Objects already written
//! keep theirs (every manifest records its own), so a change never rewrites a
//! checkpoint, and the parity count never drops below the configured one.

use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use fragstate_core::adaptive::{decide_phase, describe, PhaseDecision, PhaseInput};
use fragstate_core::codec::{sample_zstd, ZstdSample};
use fragstate_core::ids::now_unix_ms;
use fragstate_core::params::{CodingParams, Compression, MAX_FRAGMENTS};
use fragstate_core::placement::{NodeInfo, PlacementPolicy};
use fragstate_core::restore_model::{AdaptiveBounds, PeerEstimate, ReaderFigures};

use crate::config::{AdaptiveConfig, ClientConfig};

/// Data fragments adaptive mode may choose at most.
pub const MAX_DATA_FRAGMENTS: usize = 16;
/// The zstd level adaptive mode may choose (besides the configured compression).
pub const ZSTD_LEVEL: i32 = 1;
/// Bytes of a stripe compressed to sample the state's compressibility.
const SAMPLE_BYTES: usize = 1 << 20;
/// Codec speed assumed before the first stripe was encoded (bytes per second).
const DEFAULT_CODEC_BYTES_PER_S: f64 = 1e9;
/// The state size a decision assumes at least (bytes).
const MIN_STATE_BYTES: f64 = (1 << 20) as f64;

/// What adaptive mode did, for stats and metrics (all 0 while off or undecided,
/// so that every gauge exists in either mode).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdaptiveStats {
    /// Adaptive mode is on.
    pub enabled: bool,
    /// Phases decided.
    pub phase: u64,
    /// Phases whose parameters differ from the configured ones.
    pub phases_changed: u64,
    /// The current phase's parameters.
    pub data_fragments: u64,
    pub parity_fragments: u64,
    pub cell_size: u64,
    /// 0: no compression.
    pub zstd_level: u64,
    /// Predicted restore when one node fails (expected over which): chosen, configured (ms).
    pub predicted_restore_ms: u64,
    pub configured_restore_ms: u64,
    /// Candidates with a trusted estimate at the decision.
    pub measured_nodes: u64,
    /// The writer's link as the model took it (bytes per second).
    pub link_bytes_per_s: u64,
    /// How fast this client encodes stripes (bytes per second, smoothed; 0
    /// before the first). Measured on the real stripes as they are written, so
    /// it falls when the CPU is busy or throttled: the model's CPU headroom.
    pub codec_bytes_per_s: u64,
    /// The last decision as logged.
    pub last_decision: Option<PhaseDecision>,
}

struct State {
    phase: u64,
    started: Option<Instant>,
    bytes_at_start: u64,
    params: CodingParams,
    last: Option<PhaseDecision>,
    phases_changed: u64,
    /// Smoothed bytes per second of the writer's own encoding.
    codec_bytes_per_s: Option<f64>,
    /// Smoothed wire bytes per second of whole object uploads (first send to last ack).
    upload_bytes_per_s: Option<f64>,
    /// The last zstd sample, and whether this phase still needs one.
    zstd: Option<ZstdSample>,
    sample_wanted: bool,
}

/// Folds `bytes` in `seconds` into a moving average (new samples weigh 0.2); empty samples are ignored.
fn smooth(avg: &mut Option<f64>, bytes: u64, seconds: f64) {
    if bytes == 0 || seconds.is_nan() || seconds <= 0.0 {
        return;
    }
    let rate = bytes as f64 / seconds;
    *avg = Some(avg.map_or(rate, |r| 0.8 * r + 0.2 * rate));
}

pub(crate) struct Adaptive {
    cfg: AdaptiveConfig,
    configured: CodingParams,
    bounds: AdaptiveBounds,
    read_ahead: usize,
    policy: PlacementPolicy,
    state: Mutex<State>,
}

impl Adaptive {
    /// `None` when the configuration has adaptive mode off.
    pub fn new(cfg: &ClientConfig) -> Option<Self> {
        let a = cfg.adaptive.clone()?;
        let p = cfg.params;
        // larger cells first: ties go to fewer requests
        let mut cell_sizes: Vec<u64> = vec![p.cell_size() as u64, 1 << 20, 256 << 10];
        cell_sizes.sort_unstable_by(|a, b| b.cmp(a));
        cell_sizes.dedup();
        let mut compressions = vec![Compression::None, Compression::Zstd { level: ZSTD_LEVEL }];
        if !compressions.contains(&p.compression()) {
            compressions.push(p.compression());
        }
        let bounds = AdaptiveBounds {
            min_parity: p.m(),
            max_parity: (p.m() + 1).min(MAX_FRAGMENTS - 1),
            max_data: MAX_DATA_FRAGMENTS,
            max_overhead: a.max_storage_overhead,
            cell_sizes,
            compressions,
        };
        let state = State {
            phase: 0,
            started: None,
            bytes_at_start: 0,
            params: p,
            last: None,
            phases_changed: 0,
            codec_bytes_per_s: None,
            upload_bytes_per_s: None,
            zstd: None,
            sample_wanted: true,
        };
        Some(Adaptive { cfg: a, configured: p, bounds, read_ahead: cfg.read_ahead, policy: cfg.placement, state: Mutex::new(state) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends the phase that chose `params` now, when they are not the configured
    /// ones: a node was lost since the phase was decided and `params` need more
    /// live storage nodes than are left, so the next object decides anew over
    /// the nodes live now (or the configured parameters). Without this every
    /// new object fails until the phase runs out — a checkpoint every second
    /// fails for a whole phase. False when a new decision cannot help.
    pub fn end_phase(&self, params: CodingParams) -> bool {
        if params == self.configured {
            return false;
        }
        let mut s = self.lock();
        // another writer may have ended it already (then the new phase is tried as well)
        if s.params == params {
            s.started = None;
        }
        true
    }

    /// The parameters of a new object. When the phase has ended, decides the
    /// next from `candidates` and their `estimates` (same order), given that
    /// this client has written `bytes_written` bytes in all.
    pub fn params(&self, bytes_written: u64, candidates: impl FnOnce() -> (Vec<NodeInfo>, Vec<Option<PeerEstimate>>)) -> CodingParams {
        let mut s = self.lock();
        if s.started.is_some_and(|t| t.elapsed() < self.cfg.phase) {
            return s.params;
        }
        let (nodes, estimates) = candidates();
        let phase = s.phase + 1;
        let codec = s.codec_bytes_per_s.unwrap_or(DEFAULT_CODEC_BYTES_PER_S);
        let zstd = s.zstd;
        let read_ahead = self.read_ahead;
        let reader = |c: Compression| ReaderFigures {
            ingress_bytes_per_s: f64::INFINITY,
            reconstruct_bytes_per_s: codec,
            // unsampled state counts as incompressible: zstd is then never chosen
            decompress_bytes_per_s: zstd.map_or(f64::INFINITY, |z| z.decompress_bytes_per_s),
            compression_ratio: if c == Compression::None { 1.0 } else { zstd.map_or(1.0, |z| z.ratio) },
            read_ahead,
        };
        let input = PhaseInput {
            phase,
            candidates: &nodes,
            estimates: &estimates,
            now_unix_ms: now_unix_ms(),
            configured: self.configured,
            bounds: &self.bounds,
            state_bytes: (bytes_written.saturating_sub(s.bytes_at_start) as f64).max(MIN_STATE_BYTES),
            policy: self.policy,
            link_bytes_per_s: s.upload_bytes_per_s,
        };
        let d = decide_phase(&input, reader);
        let speeds: Vec<String> = nodes
            .iter()
            .zip(&estimates)
            .map(|(n, e)| format!("{}={}", n.id, e.map_or("?".into(), |e| format!("{:.1}MB/s×{}", e.bytes_per_s / 1e6, e.samples))))
            .collect();
        tracing::info!(
            phase,
            params = %describe(&d.params),
            predicted_ms = (d.predicted_restore_s * 1e3) as u64,
            configured_ms = (d.configured_restore_s * 1e3) as u64,
            measured = d.measured_nodes,
            candidates = d.candidate_nodes,
            link_mb_per_s = d.link_bytes_per_s / 1e6,
            codec_mb_per_s = codec / 1e6,
            zstd_ratio = zstd.map(|z| z.ratio),
            zstd_decompress_mb_per_s = zstd.map(|z| z.decompress_bytes_per_s / 1e6),
            state_bytes = input.state_bytes as u64,
            estimates = %speeds.join(","),
            reason = %d.reason,
            "adaptive phase decided"
        );
        if d.params != self.configured {
            s.phases_changed += 1;
        }
        s.phase = phase;
        s.started = Some(Instant::now());
        s.bytes_at_start = bytes_written;
        s.params = d.params;
        s.sample_wanted = true;
        s.last = Some(d);
        s.params
    }

    /// The writer encoded `bytes` in `seconds`.
    pub fn observe_encode(&self, bytes: usize, seconds: f64) {
        smooth(&mut self.lock().codec_bytes_per_s, bytes as u64, seconds);
    }

    /// An object's fragments, `wire_bytes` in all, went out in `seconds`
    /// from its first send to its last acknowledgement.
    pub fn observe_object_upload(&self, wire_bytes: u64, seconds: f64) {
        smooth(&mut self.lock().upload_bytes_per_s, wire_bytes, seconds);
    }

    /// Offers a stripe's data as this phase's compressibility sample (taken once a phase).
    pub fn offer_sample(&self, stripe: &[u8]) {
        if !self.lock().sample_wanted || stripe.is_empty() {
            return;
        }
        let sample = sample_zstd(&stripe[..stripe.len().min(SAMPLE_BYTES)], ZSTD_LEVEL);
        let mut s = self.lock();
        s.sample_wanted = false;
        if sample.is_some() {
            s.zstd = sample;
        }
    }

    pub fn stats(&self) -> AdaptiveStats {
        let s = self.lock();
        let ms = |x: f64| if x.is_finite() { (x * 1e3) as u64 } else { 0 };
        AdaptiveStats {
            enabled: true,
            phase: s.phase,
            phases_changed: s.phases_changed,
            data_fragments: s.params.k() as u64,
            parity_fragments: s.params.m() as u64,
            cell_size: s.params.cell_size() as u64,
            zstd_level: match s.params.compression() {
                Compression::None => 0,
                Compression::Zstd { level } => level as u64,
            },
            predicted_restore_ms: s.last.as_ref().map_or(0, |d| ms(d.predicted_restore_s)),
            configured_restore_ms: s.last.as_ref().map_or(0, |d| ms(d.configured_restore_s)),
            measured_nodes: s.last.as_ref().map_or(0, |d| d.measured_nodes as u64),
            link_bytes_per_s: s.last.as_ref().map_or(0, |d| d.link_bytes_per_s as u64),
            codec_bytes_per_s: s.codec_bytes_per_s.map_or(0, |r| r as u64),
            last_decision: s.last.clone(),
        }
    }
}
