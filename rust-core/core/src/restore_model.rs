//! The restore-time model of adaptive mode (issue 14, started): what a
//! restore of `S` bytes of state costs under coding parameters `(k, m, cell,
//! compression)`, from what the reader knows about each holder and itself.
//! No I/O: the measurements come in as numbers ([`PeerEstimate`] keeps them).
//!
//! The model. The reader fetches one fragment from each of `k` holders,
//! chosen fastest first (data holders first among equals: no reconstruction).
//! On the wire go `W = S · r` bytes (`r`: the compression ratio, 1 without),
//! `W/k` from each chosen holder. Three stages run as a pipeline, so the
//! slowest bounds the restore:
//! - network: `max(max_i (W/k)/bw_i, W/ingress)` — the slowest chosen holder,
//!   or the reader's own link;
//! - requests: `rtt_max · ⌈stripes / in flight⌉` with `stripes = ⌈S/(k·cell)⌉`
//!   and the stripes in flight per object from [`stripes_in_flight`] —
//!   round trips the read-ahead cannot hide (small cells on long links);
//! - CPU: `W/reconstruct` when a parity holder is among the `k`, plus
//!   `S/decompress` when compressed.
//!
//! The choice ([`choose_params`]) minimises the expected restore when one
//! node fails, each node as likely ([`expected_over_one_failure`]; of the
//! settings within [`NEAR_BEST`] of the lowest, the fastest intact): the
//! writer's own TaskManager (it holds none of its state's fragments, so its
//! replacement reads them all intact), one of the object's holders (the
//! restore, after a restart of the whole job, reads around the loss), or any
//! other node (intact again). Data fragments are planned on the fastest nodes
//! and parity on the next, within the bounds: at least the configured parity,
//! at most the storage overhead `(k+m)/k` allowed. (Before 2026-12-02's third run it was
//! the mean over the loss of each holder only, which charged every setting as
//! if a holder were always lost and so favoured wide stripes over a layout
//! that keeps every data fragment on the fast nodes; `adaptive.rs` tests.)

use serde::Serialize;

use crate::error::{Error, Result};
use crate::params::{CodingParams, Compression};

/// What a node's own transfers with one peer show: smoothed throughput and
/// round-trip time, with how many samples and when the last came.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PeerEstimate {
    /// Smoothed bytes per second of transfers with the peer.
    pub bytes_per_s: f64,
    /// Smoothed seconds to the first byte of an answer.
    pub rtt_s: f64,
    /// Transfers seen.
    pub samples: u64,
    /// When the last one was seen (Unix ms).
    pub updated_unix_ms: u64,
}

impl PeerEstimate {
    /// Weight of a new sample in the moving averages.
    pub const SMOOTHING: f64 = 0.2;

    /// A transfer of `bytes` that took `seconds` (first byte after `rtt_s`), seen at `now_unix_ms`.
    /// Samples of nothing or of no time are ignored.
    pub fn observe(&mut self, bytes: u64, seconds: f64, rtt_s: f64, now_unix_ms: u64) {
        if bytes == 0 || !(seconds.is_finite() && seconds > 0.0) || !rtt_s.is_finite() {
            return;
        }
        let rate = bytes as f64 / seconds;
        if self.samples == 0 {
            (self.bytes_per_s, self.rtt_s) = (rate, rtt_s);
        } else {
            let a = Self::SMOOTHING;
            self.bytes_per_s = a * rate + (1.0 - a) * self.bytes_per_s;
            self.rtt_s = a * rtt_s + (1.0 - a) * self.rtt_s;
        }
        self.samples += 1;
        self.updated_unix_ms = now_unix_ms;
    }

    /// Milliseconds since the last sample.
    pub fn age_ms(&self, now_unix_ms: u64) -> u64 {
        now_unix_ms.saturating_sub(self.updated_unix_ms)
    }

    /// Whether decisions may rest on it: at least [`TRUSTED_SAMPLES`], the
    /// last no older than [`TRUSTED_FOR_MS`], a positive rate.
    pub fn trusted(&self, now_unix_ms: u64) -> bool {
        self.samples >= TRUSTED_SAMPLES && self.age_ms(now_unix_ms) <= TRUSTED_FOR_MS && self.bytes_per_s > 0.0
    }
}

/// Samples a [`PeerEstimate`] needs before reads are ordered by it.
pub const TRUSTED_SAMPLES: u64 = 2;
/// Milliseconds after its last sample an estimate is no longer trusted.
pub const TRUSTED_FOR_MS: u64 = 60_000;
/// A parity holder is asked before a data holder only when it answers this
/// many times sooner: a parity cell costs a reconstruction, a data cell a copy.
pub const PARITY_PENALTY: f64 = 1.5;
/// Answer times below this are taken as equal: on one host (an in-process
/// mesh, loopback) they differ by scheduler noise, not by the peers' links.
pub const TIMING_FLOOR_S: f64 = 0.002;

/// Bytes a client keeps requested and not yet arrived — the stored bytes of
/// the stripes its readers fetch, all readers together (the default of the
/// client's `max_inflight_bytes`). More only lengthens the queue in front of
/// the reader's link. Measured with `ci/bench-adaptive.sh`, setting c (300 MiB
/// over 1 Gbit/s, 4 objects read at once, RS(4,2) with 1 MiB cells): with 4
/// stripes ahead per object and no budget (up to 64 MiB in flight) 3.75 s
/// uncompressed and 1.85 s with zstd:1; with this budget 2.68 s and 1.41 s
/// (limit 2.52 s and 1.28 s) — the manifest lookups of the next objects had
/// waited behind the queued cells. README "How much a reader keeps in flight".
pub const READ_AHEAD_BYTES: u64 = 8 << 20;

/// Stripes one reader keeps in flight when it reads alone, for stripes of
/// `stripe_wire_bytes` stored bytes: `max_stripes` (the configured
/// read-ahead) as far as [`READ_AHEAD_BYTES`] holds them, at least 1.
pub fn stripes_in_flight(stripe_wire_bytes: f64, max_stripes: usize) -> usize {
    ((READ_AHEAD_BYTES as f64 / stripe_wire_bytes.max(1.0)) as usize).clamp(1, max_stripes.max(1))
}

/// The (upper) median of `v`; `None` when empty.
pub(crate) fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The order in which a reader asks the holders of one stripe for their
/// cells: positions in `holders` (fragment order, the first `k` data; `None`:
/// lost, left out). Without trusted estimates (fewer than
/// [`TRUSTED_SAMPLES`], older than [`TRUSTED_FOR_MS`]) the order is data
/// first, as before measurements; a holder not measured yet is taken at the
/// median of those that are, so a parity holder gets its chance when a data
/// holder is measured slow. The cost of a holder is
/// `cell_bytes / bytes_per_s + rtt_s` (at least [`TIMING_FLOOR_S`]), times
/// [`PARITY_PENALTY`] for parity; ties keep fragment order.
pub fn fetch_order(k: usize, cell_bytes: f64, holders: &[Option<Option<PeerEstimate>>], now_unix_ms: u64) -> Vec<usize> {
    let trusted = |e: &PeerEstimate| e.trusted(now_unix_ms);
    let cost = |e: &PeerEstimate| (cell_bytes / e.bytes_per_s + e.rtt_s).max(TIMING_FLOOR_S);
    let known: Vec<f64> = holders.iter().flatten().flatten().filter(|e| trusted(e)).map(cost).collect();
    let live: Vec<usize> = holders.iter().enumerate().filter(|(_, h)| h.is_some()).map(|(i, _)| i).collect();
    let Some(median) = median(known) else { return live };
    let mut costed: Vec<(f64, usize)> = live
        .into_iter()
        .map(|i| {
            let c = holders[i].flatten().filter(|e| trusted(e)).map_or(median, |e| cost(&e));
            (if i >= k { c * PARITY_PENALTY } else { c }, i)
        })
        .collect();
    costed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    costed.into_iter().map(|(_, i)| i).collect()
}

/// A node that could hold (or holds) a fragment, as the reader sees it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Holder {
    /// Bytes per second the reader gets from it.
    pub bytes_per_s: f64,
    /// Seconds to the first byte of an answer.
    pub rtt_s: f64,
}

/// The reader's own figures for one compression setting.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ReaderFigures {
    /// Bytes per second its link takes in.
    pub ingress_bytes_per_s: f64,
    /// Bytes per second it reconstructs from parity.
    pub reconstruct_bytes_per_s: f64,
    /// Uncompressed bytes per second it decompresses.
    pub decompress_bytes_per_s: f64,
    /// Compressed / raw size of the state at this setting (1 without compression).
    pub compression_ratio: f64,
    /// Stripes requested ahead of the one being read, at most (the reader
    /// keeps fewer of large stripes: [`stripes_in_flight`]).
    pub read_ahead: usize,
}

/// A predicted restore and what bounds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RestorePrediction {
    /// The restore: the slowest of the three stages.
    pub seconds: f64,
    /// The slowest chosen holder or the reader's link.
    pub network_s: f64,
    /// Round trips the read-ahead cannot hide.
    pub requests_s: f64,
    /// Reconstruction from parity and decompression.
    pub cpu_s: f64,
    /// `network`, `requests` or `cpu`.
    pub bound_by: &'static str,
    /// Positions (in the holders given) of the `k` fetched from.
    pub fetched_from: Vec<usize>,
}

/// The restore of `state_bytes` from `holders` (in fragment order: the first
/// `k` hold data fragments, the rest parity; `None` for a lost one); `None`
/// when fewer than `k` are left.
pub fn predict_restore(state_bytes: f64, params: &CodingParams, holders: &[Option<Holder>], reader: &ReaderFigures) -> Option<RestorePrediction> {
    let k = params.k();
    let compressed = params.compression() != Compression::None;
    let wire = state_bytes * if compressed { reader.compression_ratio } else { 1.0 };
    let per_holder = wire / k as f64;
    // Fastest first; among equals, data fragments (lower index) first.
    let mut live: Vec<(usize, Holder)> = holders.iter().enumerate().filter_map(|(i, h)| h.map(|h| (i, h))).collect();
    if live.len() < k {
        return None;
    }
    let cost = |h: &Holder| per_holder / h.bytes_per_s + h.rtt_s;
    live.sort_by(|(ia, a), (ib, b)| cost(a).total_cmp(&cost(b)).then(ia.cmp(ib)));
    let chosen = &live[..k];
    let network_s = chosen.iter().map(|(_, h)| per_holder / h.bytes_per_s).fold(wire / reader.ingress_bytes_per_s, f64::max);
    // A stripe holds k cells of object bytes before compression.
    let stripes = (state_bytes / params.stripe_data_len() as f64).ceil();
    let rtt = chosen.iter().map(|(_, h)| h.rtt_s).fold(0.0, f64::max);
    let stripe_wire = params.stripe_data_len() as f64 * wire / state_bytes.max(1.0);
    let requests_s = rtt * (stripes / stripes_in_flight(stripe_wire, reader.read_ahead) as f64).ceil();
    let parity_used = chosen.iter().any(|(i, _)| *i >= k);
    let cpu_s = if parity_used { wire / reader.reconstruct_bytes_per_s } else { 0.0 } + if compressed { state_bytes / reader.decompress_bytes_per_s } else { 0.0 };
    let (seconds, bound_by) = [(network_s, "network"), (requests_s, "requests"), (cpu_s, "cpu")].into_iter().fold((0.0, "network"), |a, b| if b.0 > a.0 { b } else { a });
    let mut fetched_from: Vec<usize> = chosen.iter().map(|(i, _)| *i).collect();
    fetched_from.sort_unstable();
    Some(RestorePrediction { seconds, network_s, requests_s, cpu_s, bound_by, fetched_from })
}

/// What adaptive mode may choose from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdaptiveBounds {
    /// Parity fragments at least (the losses every object must survive).
    pub min_parity: usize,
    /// Parity fragments at most.
    pub max_parity: usize,
    /// Data fragments at most.
    pub max_data: usize,
    /// Stored bytes per state byte at most, `(k + m) / k`.
    pub max_overhead: f64,
    /// Cell sizes to choose from (bytes).
    pub cell_sizes: Vec<u64>,
    /// Compression settings to choose from.
    pub compressions: Vec<Compression>,
}

/// The parameters chosen and their expected restore time when one node fails ([`expected_over_one_failure`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ParamChoice {
    /// The parameters chosen.
    pub params: CodingParams,
    /// Their expected restore when one node fails (mean over the layouts).
    pub expected_restore_s: f64,
    /// Their restore with every holder up (mean over the layouts).
    pub intact_s: f64,
    /// The lowest expected restore of any setting (this one is within [`NEAR_BEST`] of it).
    pub best_expected_s: f64,
    /// The prediction with every holder up, of the first layout.
    pub intact: RestorePrediction,
    /// Settings compared.
    pub considered: usize,
}

/// The expected restore of `state_bytes` from `layout` (holders in fragment
/// order) when one of `nodes` fails, each as likely (`nodes`: the writer and
/// every candidate; at least the holders): a holder's loss leaves the others,
/// any other node's (the writer's own included, which holds none of its
/// state) leaves the layout intact. Infinite without parity.
pub fn expected_over_one_failure(state_bytes: f64, params: &CodingParams, layout: &[Holder], reader: &ReaderFigures, nodes: usize) -> f64 {
    if params.m() == 0 || layout.is_empty() {
        return f64::INFINITY;
    }
    let planned: Vec<Option<Holder>> = layout.iter().copied().map(Some).collect();
    let restore = |h: &[Option<Holder>]| predict_restore(state_bytes, params, h, reader).map_or(f64::INFINITY, |p| p.seconds);
    let losses: f64 = (0..planned.len())
        .map(|lost| {
            let mut h = planned.clone();
            h[lost] = None;
            restore(&h)
        })
        .sum();
    let nodes = nodes.max(planned.len());
    (losses + (nodes - planned.len()) as f64 * restore(&planned)) / nodes as f64
}

/// Chooses `(k, m, cell, compression)` for `state_bytes` over the candidate
/// `nodes` (the writer's own excluded), data fragments planned on the fastest
/// nodes. `reader(c)` gives the reader's figures for compression `c`. Ties go
/// to fewer fragments, then larger cells, then no compression (the settings'
/// order in `bounds`).
pub fn choose_params(state_bytes: f64, nodes: &[Holder], bounds: &AdaptiveBounds, reader: impl Fn(Compression) -> ReaderFigures) -> Result<ParamChoice> {
    let mut fastest = nodes.to_vec();
    fastest.sort_by(|a, b| b.bytes_per_s.total_cmp(&a.bytes_per_s));
    choose_params_over(state_bytes, nodes.len(), bounds, reader, |p| vec![fastest[..p.fragments()].to_vec()])
}

/// Settings whose expected restore is within this fraction of the lowest
/// count as equally good; among them the fastest with every holder up wins.
pub const NEAR_BEST: f64 = 0.1;

/// [`choose_params`] over the holders `layouts(params)` gives for each
/// setting (one or more layouts in fragment order, each of `k + m` holders;
/// none when the setting cannot be placed). Each setting is scored by its
/// [`expected_over_one_failure`] of one of the `node_count` candidates or the
/// writer, averaged over its layouts; of those within [`NEAR_BEST`] of the
/// lowest, the one with the fastest intact restore wins (the failed
/// TaskManager's own state is read intact in every failure; the expected
/// restore alone can tie a layout that keeps all data on fast nodes with one
/// that reads from slow nodes either way).
pub fn choose_params_over(
    state_bytes: f64,
    node_count: usize,
    bounds: &AdaptiveBounds,
    reader: impl Fn(Compression) -> ReaderFigures,
    layouts: impl Fn(&CodingParams) -> Vec<Vec<Holder>>,
) -> Result<ParamChoice> {
    if node_count < 1 + bounds.min_parity {
        return Err(Error::invalid("storage nodes", node_count, format!("≥ {} (1 data + {} parity fragments)", 1 + bounds.min_parity, bounds.min_parity)));
    }
    let mut scored: Vec<ParamChoice> = Vec::new();
    for n in 2..=node_count {
        for m in bounds.min_parity..=bounds.max_parity.min(n - 1) {
            let k = n - m;
            if k > bounds.max_data || n as f64 / k as f64 > bounds.max_overhead {
                continue;
            }
            for &cell in &bounds.cell_sizes {
                for &compression in &bounds.compressions {
                    let Ok(params) = CodingParams::new(k, m, cell, compression) else { continue };
                    let figures = reader(compression);
                    let layouts = layouts(&params);
                    let Some(first) = layouts.first() else { continue };
                    let Some(intact) = intact_restore(state_bytes, &params, first, &figures) else { continue };
                    let mean = |f: &dyn Fn(&Vec<Holder>) -> f64| layouts.iter().map(f).sum::<f64>() / layouts.len() as f64;
                    let expected_restore_s = mean(&|l| expected_over_one_failure(state_bytes, &params, l, &figures, node_count + 1));
                    let intact_s = mean(&|l| intact_restore(state_bytes, &params, l, &figures).map_or(f64::INFINITY, |p| p.seconds));
                    scored.push(ParamChoice { params, expected_restore_s, intact_s, intact, best_expected_s: f64::NAN, considered: 0 });
                }
            }
        }
    }
    let lowest = scored.iter().map(|c| c.expected_restore_s).fold(f64::INFINITY, f64::min);
    // the first of the fastest intact among the near-best: ties keep the settings' order
    let best = scored
        .iter()
        .filter(|c| c.expected_restore_s <= lowest * (1.0 + NEAR_BEST))
        .fold(None::<&ParamChoice>, |b, c| if b.is_none_or(|b| c.intact_s < b.intact_s) { Some(c) } else { b })
        .cloned()
        .ok_or_else(|| Error::invalid("adaptive bounds", format!("{bounds:?}"), format!("at least one valid setting for {node_count} storage nodes")))?;
    Ok(ParamChoice { best_expected_s: lowest, considered: scored.len(), ..best })
}

/// The restore from `layout` with every holder up.
pub fn intact_restore(state_bytes: f64, params: &CodingParams, layout: &[Holder], reader: &ReaderFigures) -> Option<RestorePrediction> {
    predict_restore(state_bytes, params, &layout.iter().copied().map(Some).collect::<Vec<_>>(), reader)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBIT: f64 = 125e6;
    const MBIT: f64 = 125e3;

    fn reader(c: Compression) -> ReaderFigures {
        ReaderFigures {
            ingress_bytes_per_s: GBIT,
            reconstruct_bytes_per_s: 3e9,
            decompress_bytes_per_s: 800e6,
            compression_ratio: if c == Compression::None { 1.0 } else { 0.5 },
            read_ahead: 4,
        }
    }

    fn node(bw: f64) -> Holder {
        Holder { bytes_per_s: bw, rtt_s: 0.0005 }
    }

    fn rs(k: usize, m: usize) -> CodingParams {
        CodingParams::new(k, m, 1 << 20, Compression::None).unwrap()
    }

    fn bounds() -> AdaptiveBounds {
        AdaptiveBounds {
            min_parity: 2,
            max_parity: 3,
            max_data: 6,
            max_overhead: 2.0,
            cell_sizes: vec![1 << 20, 256 << 10],
            compressions: vec![Compression::None, Compression::Zstd { level: 1 }],
        }
    }

    #[test]
    fn equal_fast_holders_are_bound_by_the_readers_link() {
        let h = vec![Some(node(GBIT)); 6];
        let p = predict_restore(300e6, &rs(4, 2), &h, &reader(Compression::None)).unwrap();
        assert_eq!(p.bound_by, "network");
        assert!((p.seconds - 300e6 / GBIT).abs() < 1e-9, "{p:?}");
        assert_eq!(p.fetched_from, vec![0, 1, 2, 3], "data fragments first among equals");
        assert_eq!(p.cpu_s, 0.0);
    }

    #[test]
    fn a_slow_data_holder_is_read_around_at_the_cost_of_a_reconstruction() {
        let mut h = vec![Some(node(GBIT)); 6];
        h[1] = Some(node(20.0 * MBIT));
        let p = predict_restore(300e6, &rs(4, 2), &h, &reader(Compression::None)).unwrap();
        assert_eq!(p.fetched_from, vec![0, 2, 3, 4]);
        assert!((p.cpu_s - 300e6 / 3e9).abs() < 1e-9);
        // With the slow holder and one more lost, it must be read: 75 MB at 2.5 MB/s.
        h[0] = None;
        h[4] = None;
        h[5] = None;
        assert!(predict_restore(300e6, &rs(4, 2), &h, &reader(Compression::None)).is_none(), "3 left of k = 4");
        h[5] = Some(node(GBIT));
        let p = predict_restore(300e6, &rs(4, 2), &h, &reader(Compression::None)).unwrap();
        assert!((p.seconds - 75e6 / (20.0 * MBIT)).abs() < 1e-6, "{p:?}");
    }

    #[test]
    fn small_cells_on_a_long_link_are_bound_by_requests() {
        let h = vec![Some(Holder { bytes_per_s: GBIT, rtt_s: 0.05 }); 6];
        let small = CodingParams::new(4, 2, 4096, Compression::None).unwrap();
        let p = predict_restore(300e6, &small, &h, &reader(Compression::None)).unwrap();
        assert_eq!(p.bound_by, "requests", "{p:?}");
    }

    #[test]
    fn two_slow_nodes_of_eight_get_parity_and_the_choice_beats_the_default() {
        let mut nodes = vec![node(GBIT); 6];
        nodes.extend([node(20.0 * MBIT); 2]);
        let c = choose_params(300e6, &nodes, &bounds(), reader).unwrap();
        assert!(c.params.m() >= 2 && c.params.storage_overhead() <= 2.0, "{c:?}");
        // The default RS(4,2) on nodes taken in any order may put a slow node among the data.
        let mut default_slow = vec![Some(node(20.0 * MBIT)), Some(node(GBIT)), Some(node(GBIT)), Some(node(GBIT)), Some(node(20.0 * MBIT)), Some(node(GBIT))];
        let d = predict_restore(300e6, &rs(4, 2), &default_slow, &reader(Compression::None)).unwrap();
        default_slow[1] = None;
        let d_lost = predict_restore(300e6, &rs(4, 2), &default_slow, &reader(Compression::None)).unwrap();
        assert!(c.expected_restore_s < d_lost.seconds && c.intact.seconds <= d.seconds + 1e-9, "{c:?} vs {d:?} / {d_lost:?}");
        assert!(c.considered > 10);
    }

    #[test]
    fn compression_only_where_the_links_are_slower_than_zstd() {
        let fast = vec![node(10.0 * GBIT); 8];
        let fast_reader = |c: Compression| ReaderFigures { ingress_bytes_per_s: 10.0 * GBIT, ..reader(c) };
        assert_eq!(choose_params(300e6, &fast, &bounds(), fast_reader).unwrap().params.compression(), Compression::None);
        let slow = vec![node(100.0 * MBIT); 8];
        let slow_reader = |c: Compression| ReaderFigures { ingress_bytes_per_s: 100.0 * MBIT, ..reader(c) };
        assert_eq!(choose_params(300e6, &slow, &bounds(), slow_reader).unwrap().params.compression(), Compression::Zstd { level: 1 });
    }

    #[test]
    fn the_bounds_are_kept_and_too_few_nodes_is_an_error_naming_the_count() {
        let nodes = vec![node(GBIT); 8];
        let b = AdaptiveBounds { min_parity: 3, max_overhead: 1.6, ..bounds() };
        let c = choose_params(300e6, &nodes, &b, reader).unwrap();
        assert_eq!((c.params.k(), c.params.m()), (5, 3), "the only setting within 8 nodes: {c:?}");
        // m ≥ 3 at an overhead ≤ 1.5 needs k ≥ 6: 9 nodes.
        let e = choose_params(300e6, &nodes, &AdaptiveBounds { max_overhead: 1.5, ..b }, reader).unwrap_err().to_string();
        assert!(e.contains("8 storage nodes"), "{e}");
        let e = choose_params(300e6, &nodes[..2], &bounds(), reader).unwrap_err().to_string();
        assert!(e.contains("= 2") && e.contains("≥ 3"), "{e}");
    }

    #[test]
    fn read_ahead_is_bounded_by_bytes_and_is_at_least_one_stripe() {
        const MIB: f64 = (1 << 20) as f64;
        assert_eq!(stripes_in_flight(MIB, 4), 4, "1 MiB stripes: the configured 4");
        assert_eq!(stripes_in_flight(MIB, 64), 8, "8 MiB in flight at most");
        assert_eq!(stripes_in_flight(3.0 * MIB, 4), 2);
        assert_eq!(stripes_in_flight(32.0 * MIB, 4), 1, "a stripe larger than the budget still goes");
        assert_eq!(stripes_in_flight(0.0, 0), 1);
    }

    #[test]
    fn estimates_smooth_and_ignore_empty_samples() {
        let mut e = PeerEstimate::default();
        e.observe(100, 1.0, 0.01, 1_000);
        assert_eq!((e.bytes_per_s, e.samples), (100.0, 1));
        e.observe(200, 1.0, 0.01, 2_000);
        assert!((e.bytes_per_s - 120.0).abs() < 1e-9);
        e.observe(0, 1.0, 0.01, 3_000);
        e.observe(10, 0.0, 0.01, 3_000);
        assert_eq!(e.samples, 2);
        assert_eq!(e.age_ms(5_000), 3_000);
    }

    fn est(bytes_per_s: f64, samples: u64) -> Option<Option<PeerEstimate>> {
        Some(Some(PeerEstimate { bytes_per_s, rtt_s: 0.0, samples, updated_unix_ms: 1_000 }))
    }

    #[test]
    fn reads_keep_data_first_until_holders_are_measured() {
        let unknown = Some(None);
        assert_eq!(fetch_order(4, 1e6, &[unknown, unknown, unknown, unknown, unknown, unknown], 1_000), vec![0, 1, 2, 3, 4, 5]);
        // one sample is not yet trusted; a lost holder is left out
        assert_eq!(fetch_order(4, 1e6, &[est(1.0, 1), None, unknown, unknown, unknown, unknown], 1_000), vec![0, 2, 3, 4, 5]);
        // trusted but stale
        assert_eq!(fetch_order(4, 1e6, &[est(1.0, 9), unknown, unknown, unknown, unknown, unknown], 1_000 + TRUSTED_FOR_MS + 1), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_data_holder_measured_slow_goes_behind_the_parity_holders() {
        let fast = est(100e6, 5);
        let order = fetch_order(4, 1e6, &[est(10e6, 5), fast, fast, fast, Some(None), Some(None)], 1_000);
        // the unmeasured parity holders count at the median (fast) times the parity penalty
        assert_eq!(order, vec![1, 2, 3, 4, 5, 0]);
    }

    #[test]
    fn answer_times_within_the_timer_noise_are_equal() {
        // microseconds apart, as on one host: data first regardless
        let order = fetch_order(4, 4096.0, &[est(4096.0 / 9e-6, 5), est(4096.0 / 2e-6, 5), est(4096.0 / 2e-6, 5), est(4096.0 / 2e-6, 5), est(4096.0 / 1e-6, 5), est(4096.0 / 1e-6, 5)], 1_000);
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_parity_holder_must_be_clearly_faster_to_go_first() {
        let fast = est(100e6, 5);
        // 1.2x faster than data holder 0: not enough to pay for a reconstruction
        let mut first = fetch_order(4, 1e6, &[est(100e6 / 1.2, 5), fast, fast, fast, fast, fast], 1_000)[..4].to_vec();
        first.sort_unstable();
        assert_eq!(first, [0, 1, 2, 3]);
        // 2x faster: it is
        assert_eq!(fetch_order(4, 1e6, &[est(50e6, 5), fast, fast, fast, fast, fast], 1_000)[..4], [1, 2, 3, 4]);
    }
}
