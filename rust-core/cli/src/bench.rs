//! Helpers of the benchmark commands.

use std::time::Duration;



pub(crate) fn gbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Bytes that look like serialized state: half structure, half noise.
pub(crate) fn sample_bytes(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 16 < 8 { (i / 64) as u8 } else { x as u8 }
        })
        .collect()
}
