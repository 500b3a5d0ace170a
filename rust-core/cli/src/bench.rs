//! Helpers of the benchmark commands.

use std::time::Duration;

pub(crate) fn gbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The nearest-rank `percent` percentile of ascending `sorted` (`None` when empty).
pub(crate) fn percentile<T: Copy>(sorted: &[T], percent: usize) -> Option<T> {
    (!sorted.is_empty()).then(|| sorted[(sorted.len() * percent).div_ceil(100).clamp(1, sorted.len()) - 1])
}
