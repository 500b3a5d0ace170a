//! Coding parameters of an object and their documented bounds.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Largest `k + m`: placement needs that many distinct nodes, and the
/// manifest stores one checksum per cell.
pub const MAX_FRAGMENTS: usize = 32;
/// Smallest cell: below this the per-cell framing and request overhead
/// dominates.
pub const MIN_CELL_SIZE: u32 = 4 * 1024;
/// Largest cell: a writer buffers `(k+m) × cell_size` bytes.
pub const MAX_CELL_SIZE: u32 = 64 * 1024 * 1024;
/// zstd levels accepted for compression.
pub const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = 1..=19;

/// Default `k`: 4 data fragments.
pub const DEFAULT_DATA_FRAGMENTS: usize = 4;
/// Default `m`: 2 parity fragments, so an object survives the loss of any two.
pub const DEFAULT_PARITY_FRAGMENTS: usize = 2;
/// Default cell size in bytes: 1 MiB.
pub const DEFAULT_CELL_SIZE: u32 = 1024 * 1024;

/// Per-stripe compression of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Compression {
    /// Stripes are stored as they are.
    #[default]
    None,
    /// Each stripe is zstd-compressed, and stored compressed only when that
    /// is smaller.
    Zstd {
        /// zstd level, within [`ZSTD_LEVELS`] (1 ..= 19).
        level: i32,
    },
}

/// How an object is cut: `k` data cells and `m` parity cells per stripe, each
/// cell at most `cell_size` bytes, optional compression of each stripe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodingParams {
    k: u8,
    m: u8,
    cell_size: u32,
    compression: Compression,
}

impl Default for CodingParams {
    fn default() -> Self {
        CodingParams {
            k: DEFAULT_DATA_FRAGMENTS as u8,
            m: DEFAULT_PARITY_FRAGMENTS as u8,
            cell_size: DEFAULT_CELL_SIZE,
            compression: Compression::None,
        }
    }
}

impl CodingParams {
    /// Checks every bound and names the offending value in the error.
    pub fn new(k: usize, m: usize, cell_size: u64, compression: Compression) -> Result<Self> {
        if !(1..=MAX_FRAGMENTS).contains(&k) {
            return Err(Error::invalid(
                "data fragments (k)",
                k,
                format!("1 ≤ k ≤ {MAX_FRAGMENTS}"),
            ));
        }
        if m > MAX_FRAGMENTS - k {
            return Err(Error::invalid(
                "parity fragments (m)",
                m,
                format!("0 ≤ m and k + m ≤ {MAX_FRAGMENTS} (k = {k})"),
            ));
        }
        if !(MIN_CELL_SIZE as u64..=MAX_CELL_SIZE as u64).contains(&cell_size) {
            return Err(Error::invalid(
                "cell size",
                cell_size,
                format!("{MIN_CELL_SIZE} (4 KiB) ≤ cell size ≤ {MAX_CELL_SIZE} (64 MiB) bytes"),
            ));
        }
        if let Compression::Zstd { level } = compression {
            if !ZSTD_LEVELS.contains(&level) {
                return Err(Error::invalid(
                    "zstd level",
                    level,
                    format!("{} ≤ level ≤ {}", ZSTD_LEVELS.start(), ZSTD_LEVELS.end()),
                ));
            }
        }
        Ok(CodingParams {
            k: k as u8,
            m: m as u8,
            cell_size: cell_size as u32,
            compression,
        })
    }

    /// Re-checks parameters that came from outside (a decoded manifest).
    pub fn validate(&self) -> Result<()> {
        Self::new(self.k(), self.m(), self.cell_size as u64, self.compression).map(|_| ())
    }

    /// Data fragments `k`, 1 ≤ k ≤ [`MAX_FRAGMENTS`]: any `k` fragments rebuild the object.
    pub fn k(&self) -> usize {
        self.k as usize
    }
    /// Parity fragments `m`, with `k + m` ≤ [`MAX_FRAGMENTS`]: how many
    /// fragments the object can lose.
    pub fn m(&self) -> usize {
        self.m as usize
    }
    /// `k + m`, the number of fragments (and holders) of an object.
    pub fn fragments(&self) -> usize {
        self.k() + self.m()
    }
    /// Stored bytes per object byte, `(k + m) / k` (before compression).
    pub fn storage_overhead(&self) -> f64 {
        self.fragments() as f64 / self.k() as f64
    }
    /// Largest cell in bytes, [`MIN_CELL_SIZE`] ..= [`MAX_CELL_SIZE`]; cells
    /// of a short or compressed stripe are shorter.
    pub fn cell_size(&self) -> usize {
        self.cell_size as usize
    }
    /// Compression of each stripe.
    pub fn compression(&self) -> Compression {
        self.compression
    }
    /// Object bytes covered by one full stripe.
    pub fn stripe_data_len(&self) -> u64 {
        self.k() as u64 * self.cell_size as u64
    }
    /// Number of stripes of an object of `length` bytes.
    pub fn stripe_count(&self, length: u64) -> u64 {
        length.div_ceil(self.stripe_data_len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let p = CodingParams::default();
        p.validate().unwrap();
        assert_eq!((p.k(), p.m(), p.cell_size()), (4, 2, 1 << 20));
    }

    #[test]
    fn bounds_are_enforced_with_named_values() {
        let e = CodingParams::new(0, 2, 65536, Compression::None).unwrap_err().to_string();
        assert!(e.contains("data fragments (k) = 0") && e.contains("1 ≤ k ≤ 32"), "{e}");
        let e = CodingParams::new(30, 3, 65536, Compression::None).unwrap_err().to_string();
        assert!(e.contains("parity fragments (m) = 3") && e.contains("k + m ≤ 32"), "{e}");
        let e = CodingParams::new(4, 2, 4095, Compression::None).unwrap_err().to_string();
        assert!(e.contains("cell size = 4095"), "{e}");
        let e = CodingParams::new(4, 2, (64 << 20) + 1, Compression::None).unwrap_err().to_string();
        assert!(e.contains("cell size = 67108865"), "{e}");
        let e = CodingParams::new(4, 2, 65536, Compression::Zstd { level: 0 }).unwrap_err().to_string();
        assert!(e.contains("zstd level = 0"), "{e}");
        CodingParams::new(1, 0, 4096, Compression::None).unwrap();
        CodingParams::new(16, 16, 64 << 20, Compression::Zstd { level: 19 }).unwrap();
    }

    #[test]
    fn stripe_arithmetic() {
        let p = CodingParams::new(4, 2, 4096, Compression::None).unwrap();
        assert_eq!(p.stripe_data_len(), 16384);
        assert_eq!(p.stripe_count(0), 0);
        assert_eq!(p.stripe_count(1), 1);
        assert_eq!(p.stripe_count(16384), 1);
        assert_eq!(p.stripe_count(16385), 2);
    }
}
