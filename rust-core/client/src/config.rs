//! How a client writes and reads: [`ClientConfig`] and its bounds.

use std::time::Duration;

use fragstate_core::error::{Error, Result};
use fragstate_core::ids::NodeId;
use fragstate_core::params::CodingParams;
use fragstate_core::placement::PlacementPolicy;

/// Stripes a reader may fetch ahead of the one being read.
pub const READ_AHEAD: std::ops::RangeInclusive<usize> = 1..=64;
/// Allowed [`ClientConfig::max_inflight_bytes`]: 64 KiB to 4 GiB.
pub const MAX_INFLIGHT_BYTES: std::ops::RangeInclusive<u64> = (64 << 10)..=(4 << 30);
/// Phase lengths of adaptive mode, in milliseconds: 1 s to one day.
pub const ADAPTIVE_PHASE_MS: std::ops::RangeInclusive<u64> = 1_000..=86_400_000;
/// The largest storage overhead `(k + m) / k` adaptive mode may be allowed.
pub const MAX_STORAGE_OVERHEAD: f64 = 4.0;

/// Adaptive mode (issue 14, `fragstate_core::adaptive`): once per phase the
/// coding parameters of new objects are chosen from what this client
/// measured of its peers, and slow holders take parity fragments.
#[derive(Clone, Debug, PartialEq)]
pub struct AdaptiveConfig {
    /// How long one phase lasts: parameters change at most this often.
    pub phase: Duration,
    /// Stored bytes per state byte at most, `(k + m) / k`; at least the
    /// configured parameters' own (the default: exactly theirs).
    pub max_storage_overhead: f64,
}

/// How a client writes and reads. Every field has a sensible default.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Coding parameters of new objects.
    pub params: CodingParams,
    /// Stripes a reader fetches ahead of the one being read (1 to 64), as
    /// far as [`Self::max_inflight_bytes`] allows.
    pub read_ahead: usize,
    /// Cells asked for beyond the `k` needed, at once (0 to m).
    pub hedge: usize,
    /// After this long without `k` good cells, a stripe read asks every other holder too.
    pub hedge_delay: Duration,
    /// A cell request that has not answered by then counts as failed.
    pub request_timeout: Duration,
    /// Cell requests in flight per client; shared fairly (FIFO) by all readers.
    pub max_inflight_requests: usize,
    /// Stored bytes of stripes requested and not yet arrived, all readers of
    /// the client together (FIFO; a stripe larger than this goes alone):
    /// enough to keep a link busy, little enough that its queue stays short
    /// ([`fragstate_core::restore_model::READ_AHEAD_BYTES`] says what more cost).
    pub max_inflight_bytes: u64,
    /// A node that must not hold fragments (the writer's own node).
    pub exclude_node: Option<NodeId>,
    pub placement: PlacementPolicy,
    /// Recorded in manifests: who wrote the object.
    pub writer_id: String,
    /// Adaptive mode; `None`: off, every object gets `params`.
    pub adaptive: Option<AdaptiveConfig>,
    /// Keep and use the directory index (`crate::dir_index`; Flink's
    /// `fragstate.directory-index`). Off by default: on 8 nodes it cost a
    /// 10-minute soak 1.2x the checkpoint time, and it pays from about 20
    /// nodes up (NETWORK.md, "What still goes to every node": "Off by default").
    /// Off, every question about a directory asks every node, as before the
    /// index — what `fragstate bench checkpoints` compares against. Every
    /// client of a cluster must agree: a client with it off names nothing
    /// it writes, so the others' index answers would miss its files.
    pub directory_index: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            params: CodingParams::default(),
            read_ahead: 4,
            hedge: 1,
            hedge_delay: Duration::from_millis(100),
            request_timeout: Duration::from_secs(30),
            max_inflight_requests: 64,
            max_inflight_bytes: fragstate_core::restore_model::READ_AHEAD_BYTES,
            exclude_node: None,
            placement: PlacementPolicy::default(),
            writer_id: format!("pid-{}", std::process::id()),
            adaptive: None,
            directory_index: false,
        }
    }
}

impl ClientConfig {
    pub fn validate(&self) -> Result<()> {
        self.params.validate()?;
        if !READ_AHEAD.contains(&self.read_ahead) {
            return Err(Error::invalid(
                "read-ahead",
                self.read_ahead,
                format!("{} ≤ read-ahead ≤ {} stripes", READ_AHEAD.start(), READ_AHEAD.end()),
            ));
        }
        if self.hedge > self.params.m() {
            return Err(Error::invalid("hedge", self.hedge, format!("0 ≤ hedge ≤ m = {}", self.params.m())));
        }
        if self.max_inflight_requests == 0 {
            return Err(Error::invalid("max in-flight requests", 0, "≥ 1"));
        }
        if !MAX_INFLIGHT_BYTES.contains(&self.max_inflight_bytes) {
            return Err(Error::invalid(
                "max in-flight bytes",
                self.max_inflight_bytes,
                format!("{} ≤ bytes ≤ {}", MAX_INFLIGHT_BYTES.start(), MAX_INFLIGHT_BYTES.end()),
            ));
        }
        if let Some(a) = &self.adaptive {
            let ms = a.phase.as_millis() as u64;
            if !ADAPTIVE_PHASE_MS.contains(&ms) {
                return Err(Error::invalid("adaptive phase", format!("{ms} ms"), format!("{} ms ≤ phase ≤ {} ms", ADAPTIVE_PHASE_MS.start(), ADAPTIVE_PHASE_MS.end())));
            }
            let own = self.params.storage_overhead();
            if !(a.max_storage_overhead >= own - 1e-9 && a.max_storage_overhead <= MAX_STORAGE_OVERHEAD) {
                return Err(Error::invalid(
                    "adaptive max storage overhead",
                    a.max_storage_overhead,
                    format!("(k+m)/k of the configured parameters = {own:.3} ≤ overhead ≤ {MAX_STORAGE_OVERHEAD}"),
                ));
            }
        }
        Ok(())
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_in_flight_budget_out_of_range_is_named_with_its_range() {
        for (bytes, ok) in [(0, false), ((64 << 10) - 1, false), (64 << 10, true), (8 << 20, true), (4 << 30, true), ((4 << 30) + 1, false)] {
            let r = ClientConfig { max_inflight_bytes: bytes, ..ClientConfig::default() }.validate();
            assert_eq!(r.is_ok(), ok, "{bytes}: {r:?}");
            if let Err(e) = r {
                let e = e.to_string();
                assert!(e.contains("max in-flight bytes") && e.contains(&bytes.to_string()) && e.contains("65536"), "{e}");
            }
        }
    }
}
