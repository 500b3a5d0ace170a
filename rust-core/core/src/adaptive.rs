//! Adaptive mode's decisions (issue 14): once per phase, the coding
//! parameters of a writer's new objects, and at every write which of an
//! object's holders take its data fragments. No I/O: the measurements come in
//! as numbers ([`PeerEstimate`]s, the writer's own codec figures).
//!
//! Adaptive mode decides
//! - which nodes hold a new object ([`place_new_object`]): [`placement`]'s
//!   capacity-weighted rendezvous, one per failure domain, but over the nodes
//!   not clearly slow first; a clearly slow node gets only the fragments the
//!   others cannot take. This trades balance for restore speed: fast nodes
//!   fill faster, so one that is nearly full loses its preference
//!   ([`NEARLY_FULL_BELOW_MEDIAN`]). Without slow nodes it is plain placement;
//! - which chosen holders take data fragments ([`data_first`]): a holder
//!   measured at least [`SLOW_FACTOR`] times slower than the median of the
//!   object's measured holders takes a parity fragment, up to `m` of them. A
//!   restore that loses no holder then reads only the fast ones and never
//!   reconstructs;
//! - the parameters ([`decide_phase`]): every setting within the bounds is
//!   scored by the model of [`crate::restore_model`] over the holders that
//!   [`place_new_object`] gives [`LAYOUT_SAMPLES`] sample keys, fragments assigned by
//!   [`data_first`], its expected restore when one node fails (the writer's
//!   own or any candidate, [`expected_over_one_failure`]); of the settings
//!   within [`NEAR_BEST`] of the lowest, the one fastest with every holder up
//!   wins ([`choose_params_over`]). It replaces the configured parameters
//!   unless those are among the near-best and it is not [`MIN_GAIN`] faster
//!   intact either, so noise in the estimates does not flip settings.
//!
//! What the estimates mean. A writer measures each peer by the time it spends
//! in that peer's sends and acknowledgement while it uploads to `k + m` of them
//! at once. A slow peer fills its socket buffers and shows its own rate; a fast
//! one's bytes mostly vanish into buffers, so its rate is an overestimate and
//! only says "not slow". The writer's link is therefore measured over whole
//! objects (all wire bytes from the first send to the last acknowledgement,
//! [`PhaseInput::link_bytes_per_s`]; an underestimate when a slow holder paces
//! the stripes, which errs towards compression), and only without that taken
//! as the sum of the `k + m` fastest estimates. A peer within [`SLOW_FACTOR`]
//! of the fastest counts as bound by the shared link, not its own; only a
//! clearly slower peer is bound by its own rate. The restoring TaskManager is
//! assumed to have a link like the writer's.
//! Nodes without a trusted estimate count at the median of those with one;
//! with fewer than [`MIN_MEASURED_NODES`] measured, the configured parameters
//! are kept (the decision says so).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::params::{CodingParams, Compression};
use crate::ids::NodeId;
use crate::placement::{self, NodeInfo, Placement, PlacementPolicy};
use crate::restore_model::{choose_params_over, expected_over_one_failure, intact_restore, median, AdaptiveBounds, Holder, ParamChoice, PeerEstimate, ReaderFigures, NEAR_BEST};

/// A holder this many times slower than the median of an object's holders takes parity.
pub const SLOW_FACTOR: f64 = 2.0;
/// Sample keys whose placements score a setting.
pub const LAYOUT_SAMPLES: usize = 16;
/// A setting replaces the configured one only when predicted this much faster (fraction).
pub const MIN_GAIN: f64 = 0.1;
/// Nodes with a trusted estimate needed before the parameters change.
pub const MIN_MEASURED_NODES: usize = 2;

/// Bytes per second of each node's trusted estimate (`None`: unmeasured, too
/// few samples or too old).
pub fn trusted_speeds(estimates: &[Option<PeerEstimate>], now_unix_ms: u64) -> Vec<Option<f64>> {
    estimates.iter().map(|e| e.filter(|e| e.trusted(now_unix_ms)).map(|e| e.bytes_per_s)).collect()
}

/// `nodes` (placement's holders, fragment order) with the slow ones moved to
/// the parity positions: a node whose speed times [`SLOW_FACTOR`] is below the
/// median of the measured ones, slowest first, at most `m`. The others keep
/// their order. Returns the order and how many moved.
pub fn data_first<T: Clone>(nodes: &[T], speeds: &[Option<f64>], m: usize) -> (Vec<T>, usize) {
    let Some(median) = median(speeds.iter().flatten().copied().collect()) else { return (nodes.to_vec(), 0) };
    let mut slow: Vec<usize> = (0..nodes.len()).filter(|&i| speeds[i].is_some_and(|s| s * SLOW_FACTOR < median)).collect();
    slow.sort_by(|&a, &b| speeds[a].unwrap_or(0.0).total_cmp(&speeds[b].unwrap_or(0.0)).then(a.cmp(&b)));
    slow.truncate(m);
    // Already in a parity position: nothing to move for it.
    let k = nodes.len() - m;
    let moved = slow.iter().filter(|&&i| i < k).count();
    let mut order: Vec<T> = (0..nodes.len()).filter(|i| !slow.contains(i)).map(|i| nodes[i].clone()).collect();
    order.extend(slow.iter().rev().map(|&i| nodes[i].clone()));
    (order, moved)
}

/// A fast node counts as preferred only while its free bytes are at least the
/// candidates' median over this (it would otherwise fill first: fast nodes
/// take more fragments in adaptive mode).
pub const NEARLY_FULL_BELOW_MEDIAN: u64 = 4;

/// The holders of a new object in adaptive mode: the `params.fragments()`
/// nodes placement chooses among the preferred candidates — not clearly slow
/// (the test of [`data_first`], against the median of all measured
/// candidates; an unmeasured one is not slow) and not nearly full
/// ([`NEARLY_FULL_BELOW_MEDIAN`]) — and only the fragments those cannot take
/// (too few of them or of their failure domains) on the others, ranked by
/// placement too. Without a measured speed, or with every candidate
/// preferred, it is exactly [`placement::place`]. `speeds` are the
/// candidates' trusted speeds ([`trusted_speeds`]), in their order.
pub fn place_new_object(key: &[u8], candidates: &[NodeInfo], speeds: &[Option<f64>], params: &CodingParams, policy: PlacementPolicy) -> Result<Placement> {
    let (count, km) = (params.fragments(), (params.k(), params.m()));
    let plain = || placement::place(key, candidates, count, &HashSet::new(), &HashSet::new(), policy, km);
    let Some(median_speed) = median(speeds.iter().flatten().copied().collect()) else { return plain() };
    let median_free = median(candidates.iter().map(|n| n.free_bytes as f64).collect()).unwrap_or(0.0);
    let preferred: Vec<NodeInfo> = candidates
        .iter()
        .zip(speeds)
        .filter(|(n, s)| !s.is_some_and(|s| s * SLOW_FACTOR < median_speed) && n.free_bytes as f64 * NEARLY_FULL_BELOW_MEDIAN as f64 >= median_free)
        .map(|(n, _)| n.clone())
        .collect();
    let preferred_domains = preferred.iter().map(|n| &*n.domain).collect::<HashSet<_>>().len();
    let first_count = count.min(preferred_domains);
    if preferred.len() == candidates.len() || first_count == 0 {
        return plain();
    }
    let tiered = || -> Result<Placement> {
        let first = placement::place(key, &preferred, first_count, &HashSet::new(), &HashSet::new(), PlacementPolicy::default(), km)?;
        let avoid: HashSet<NodeId> = first.nodes.iter().map(|n| n.id.clone()).collect();
        let taken: HashSet<&str> = first.nodes.iter().map(|n| &*n.domain).collect();
        let rest = placement::place(key, candidates, count - first_count, &avoid, &taken, policy, km)?;
        let mut nodes: Vec<NodeInfo> = first.nodes.into_iter().chain(rest.nodes).collect();
        // data or parity is data_first's to decide, as after plain placement
        placement::fragment_order(key, &mut nodes);
        Ok(Placement { nodes, shared_domains: rest.shared_domains })
    };
    // the plain placement's error names the real shortage (all candidates)
    tiered().or_else(|_| plain())
}

/// What a phase decision rests on.
pub struct PhaseInput<'a> {
    /// The phase being decided (counted from 1).
    pub phase: u64,
    /// Live storage nodes a new object may be placed on (the writer's own excluded).
    pub candidates: &'a [NodeInfo],
    /// The writer's estimate of each candidate, in the same order.
    pub estimates: &'a [Option<PeerEstimate>],
    /// Now, to judge the estimates' age.
    pub now_unix_ms: u64,
    /// The parameters configured (kept unless beaten by [`MIN_GAIN`]).
    pub configured: CodingParams,
    /// What may be chosen.
    pub bounds: &'a AdaptiveBounds,
    /// Bytes of state one restore reads (the writer's bytes of the last phase).
    pub state_bytes: f64,
    /// The placement policy of new objects.
    pub policy: PlacementPolicy,
    /// The writer's link as measured over whole object uploads (wire bytes
    /// from the first send to the last ack); `None`: [`link_estimate`].
    pub link_bytes_per_s: Option<f64>,
}

/// The parameters of a phase and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseDecision {
    /// The phase (counted from 1).
    pub phase: u64,
    /// Parameters of the phase's new objects.
    pub params: CodingParams,
    /// Their expected restore when one node fails (the writer or a candidate, [`expected_over_one_failure`]).
    pub predicted_restore_s: f64,
    /// The configured parameters' predicted mean restore, same measurements.
    pub configured_restore_s: f64,
    /// The phase's parameters' predicted restore with every holder up (what a
    /// restore after the writer's own loss reads; `ci/bench-adaptive.sh` measures it).
    pub predicted_intact_s: f64,
    /// Candidates with a trusted estimate / all candidates.
    pub measured_nodes: usize,
    /// Live candidates.
    pub candidate_nodes: usize,
    /// The writer's link as the model takes it (bytes per second).
    pub link_bytes_per_s: f64,
    /// The state size the restore times are predicted for (bytes; every
    /// term of the model is proportional to it, so the choice is not).
    pub state_bytes: f64,
    /// Settings scored.
    pub considered: usize,
    /// `chosen`, `configured is within MIN_GAIN`, `too few measured nodes` or the error that kept the configured ones.
    pub reason: String,
}

/// The writer's link as the model takes it: the sum of the `concurrent` fastest estimates.
pub fn link_estimate(speeds: &[Option<f64>], concurrent: usize) -> f64 {
    let mut v: Vec<f64> = speeds.iter().flatten().copied().collect();
    v.sort_by(|a, b| b.total_cmp(a));
    v.iter().take(concurrent).sum()
}

/// Scores the settings within `input.bounds` and decides the phase's
/// parameters. `reader(c)` gives the CPU figures for compression `c`; its
/// ingress is replaced by [`link_estimate`].
pub fn decide_phase(input: &PhaseInput<'_>, reader: impl Fn(Compression) -> ReaderFigures) -> PhaseDecision {
    let speeds = trusted_speeds(input.estimates, input.now_unix_ms);
    let measured = speeds.iter().flatten().count();
    let link = input.link_bytes_per_s.filter(|l| *l > 0.0).unwrap_or_else(|| link_estimate(&speeds, input.configured.fragments()));
    let keep = |reason: String, configured_restore_s: f64, considered: usize| PhaseDecision {
        phase: input.phase,
        params: input.configured,
        predicted_restore_s: configured_restore_s,
        configured_restore_s,
        predicted_intact_s: f64::NAN,
        measured_nodes: measured,
        candidate_nodes: input.candidates.len(),
        link_bytes_per_s: link,
        state_bytes: input.state_bytes,
        considered,
        reason,
    };
    if measured < MIN_MEASURED_NODES {
        return keep(format!("too few measured nodes ({measured} of {}, {MIN_MEASURED_NODES} needed)", input.candidates.len()), f64::NAN, 0);
    }
    let fill = median(speeds.iter().flatten().copied().collect()).unwrap_or(1.0);
    let fastest = speeds.iter().flatten().copied().fold(0.0, f64::max);
    // a peer near the fastest is bound by the writer's shared link, not its own (module docs)
    let own_rate: Vec<f64> = speeds.iter().map(|s| s.unwrap_or(fill)).map(|s| if s * SLOW_FACTOR >= fastest { f64::INFINITY } else { s }).collect();
    let reader = |c: Compression| ReaderFigures { ingress_bytes_per_s: link, ..reader(c) };
    let layouts = |p: &CodingParams| layouts(input, &speeds, &own_rate, p);
    let score = |p: &CodingParams| {
        let ls = layouts(p);
        if ls.is_empty() {
            return f64::NAN;
        }
        ls.iter().map(|l| expected_over_one_failure(input.state_bytes, p, l, &reader(p.compression()), input.candidates.len() + 1)).sum::<f64>() / ls.len() as f64
    };
    let intact = |p: &CodingParams| {
        let each: Vec<f64> = layouts(p).iter().filter_map(|l| intact_restore(input.state_bytes, p, l, &reader(p.compression()))).map(|r| r.seconds).collect();
        if each.is_empty() { f64::NAN } else { each.iter().sum::<f64>() / each.len() as f64 }
    };
    let configured_restore_s = score(&input.configured);
    let configured_intact_s = intact(&input.configured);
    let choice: Result<_> = choose_params_over(input.state_bytes, input.candidates.len(), input.bounds, reader, layouts);
    // The configured setting stays while it is among the near-best and the
    // choice is not MIN_GAIN faster intact either (the choice's own rule,
    // `choose_params_over`, with a margin against noise). NaN (the configured
    // setting cannot be placed now) never blocks a change.
    let keeps_configured = |c: &ParamChoice| {
        configured_restore_s <= c.best_expected_s * (1.0 + NEAR_BEST) && c.intact_s >= configured_intact_s * (1.0 - MIN_GAIN)
    };
    let decision = match choice {
        Err(e) => keep(e.to_string(), configured_restore_s, 0),
        Ok(c) if keeps_configured(&c) => {
            keep(format!("configured is within {:.0} % of the best ({})", MIN_GAIN * 100.0, describe(&c.params)), configured_restore_s, c.considered)
        }
        Ok(c) => PhaseDecision {
            phase: input.phase,
            params: c.params,
            predicted_restore_s: c.expected_restore_s,
            configured_restore_s,
            measured_nodes: measured,
            candidate_nodes: input.candidates.len(),
            link_bytes_per_s: link,
            state_bytes: input.state_bytes,
            considered: c.considered,
            predicted_intact_s: f64::NAN,
            reason: "chosen".into(),
        },
    };
    PhaseDecision { predicted_intact_s: intact(&decision.params), ..decision }
}

/// The holders placement gives the sample keys for `params`, in the order
/// [`data_first`] assigns fragments (by `speeds`), at their `own_rate`.
fn layouts(input: &PhaseInput<'_>, speeds: &[Option<f64>], own_rate: &[f64], params: &CodingParams) -> Vec<Vec<Holder>> {
    let index_of = |id: &crate::ids::NodeId| input.candidates.iter().position(|c| &c.id == id);
    (0..LAYOUT_SAMPLES)
        .filter_map(|j| {
            let key = format!("fragstate adaptive layout {j}");
            let p = place_new_object(key.as_bytes(), input.candidates, speeds, params, input.policy).ok()?;
            let idx: Vec<usize> = p.nodes.iter().filter_map(|n| index_of(&n.id)).collect();
            let s: Vec<Option<f64>> = idx.iter().map(|&i| speeds[i]).collect();
            let (ordered, _) = data_first(&idx, &s, params.m());
            Some(ordered.into_iter().map(|i| Holder { bytes_per_s: own_rate[i], rtt_s: input.estimates[i].map_or(0.0, |e| e.rtt_s) }).collect())
        })
        .collect()
}

/// `RS(k,m) cell N KiB, compression` for logs.
pub fn describe(p: &CodingParams) -> String {
    let c = match p.compression() {
        Compression::None => "none".to_string(),
        Compression::Zstd { level } => format!("zstd:{level}"),
    };
    format!("RS({},{}) {} KiB cells, {c}", p.k(), p.m(), p.cell_size() / 1024)
}

#[cfg(test)]
mod tests;
