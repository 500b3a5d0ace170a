//! The stripe codec: one stripe of object bytes in, `k + m` checksummed cells
//! out, and back. Pure computation, no I/O.
//!
//! Layout of an encoded stripe: the payload (the stripe's object bytes, or
//! their zstd frame when that is smaller) is cut into `k` data cells of
//! `ceil(len / k)` bytes, the last one zero padded, followed by `m` parity
//! cells of the same length. The encoder works in place in one buffer of
//! `(k + m) × cell_len` bytes and hands out the cells as zero-copy slices of
//! it, so the only full passes over the data are the Reed–Solomon math and
//! the checksums.

use bytes::{Bytes, BytesMut};
use reed_solomon_erasure::galois_8::ReedSolomon;

use crate::error::{Error, Result};
use crate::format::{self, StripeInfo};
use crate::params::{CodingParams, Compression};

/// A stripe after encoding: what the writer sends and records.
pub struct EncodedStripe {
    /// The manifest's record of the stripe: payload length, compression, cell checksums.
    pub info: StripeInfo,
    /// `k + m` cells, fragment order.
    pub cells: Vec<Bytes>,
    /// The whole buffer the cells are slices of: a writer may take it back
    /// for the next stripe once every cell is dropped.
    pub buffer: Bytes,
    /// The allocation behind `buffer` (its length is only what the stripe used).
    pub buffer_capacity: usize,
}

/// Encodes and decodes the stripes of objects with one set of [`CodingParams`].
pub struct StripeCodec {
    params: CodingParams,
    /// `None` when `m = 0` (the library needs at least one parity shard).
    rs: Option<ReedSolomon>,
}

impl StripeCodec {
    /// A codec for `params`; fails if they are out of bounds.
    pub fn new(params: CodingParams) -> Result<Self> {
        params.validate()?;
        let rs = if params.m() > 0 {
            Some(ReedSolomon::new(params.k(), params.m()).map_err(|e| {
                Error::invalid("fragment counts", format!("k={} m={}", params.k(), params.m()), format!("accepted by Reed–Solomon ({e:?})"))
            })?)
        } else {
            None
        };
        Ok(StripeCodec { params, rs })
    }

    /// The coding parameters of this codec.
    pub fn params(&self) -> &CodingParams {
        &self.params
    }

    /// Capacity a stripe buffer needs so that [`encode`](Self::encode) never reallocates.
    pub fn buffer_capacity(&self) -> usize {
        self.params.fragments() * self.params.cell_size()
    }

    /// Encodes one stripe. `stripe` holds the stripe's object bytes (1 to
    /// `k × cell_size`); its spare capacity is reused for the parity cells.
    pub fn encode(&self, mut stripe: BytesMut) -> EncodedStripe {
        let k = self.params.k();
        let n = self.params.fragments();
        assert!(
            !stripe.is_empty() && stripe.len() as u64 <= self.params.stripe_data_len(),
            "stripe length {} outside 1..={}",
            stripe.len(),
            self.params.stripe_data_len()
        );
        let mut compressed = false;
        if let Compression::Zstd { level } = self.params.compression() {
            // Compression only replaces the payload when it saves space, so a
            // compressed stripe never needs more than the stripe's cells. The
            // frame goes back into the stripe's own buffer: a buffer of its
            // own would be small, the writer's pool (which lends full-size
            // buffers) could never reuse it, and it would keep up to its
            // bound of them — a JobManager's 10 KiB `_metadata` stripes grew
            // its heap 0.35 MB a minute (NETWORK.md, "The 90-minute soak").
            if let Ok(frame) = zstd::bulk::compress(&stripe, level) {
                if frame.len() < stripe.len() {
                    stripe.clear();
                    stripe.extend_from_slice(&frame);
                    compressed = true;
                }
            }
        }
        let stored_len = stripe.len();
        let cell_len = stored_len.div_ceil(k);
        stripe.resize(n * cell_len, 0);
        if let Some(rs) = &self.rs {
            let (data, parity) = stripe.split_at_mut(k * cell_len);
            let data: Vec<&[u8]> = data.chunks(cell_len).collect();
            let mut parity: Vec<&mut [u8]> = parity.chunks_mut(cell_len).collect();
            rs.encode_sep(&data, &mut parity).expect("shard counts and lengths are consistent");
        }
        let buffer_capacity = stripe.capacity();
        let all = stripe.freeze();
        let cells: Vec<Bytes> = (0..n).map(|i| all.slice(i * cell_len..(i + 1) * cell_len)).collect();
        let cell_checksums = cells.iter().map(|c| format::cell_checksum(c)).collect();
        EncodedStripe {
            info: StripeInfo { stored_len: stored_len as u32, compressed, cell_checksums },
            cells,
            buffer: all,
            buffer_capacity,
        }
    }

    /// True when `cell` is cell `index` of the stripe described by `info`.
    pub fn cell_is_valid(&self, info: &StripeInfo, index: usize, cell: &[u8]) -> bool {
        cell.len() == info.cell_len(self.params.k()) && info.cell_checksums.get(index) == Some(&format::cell_checksum(cell))
    }

    /// [`Self::decode`] without joining: the stripe's object bytes as parts
    /// in order. When all `k` data cells are there and the stripe is not
    /// compressed, the parts are the data cells themselves (no copy: a
    /// reader copies each byte once, into its caller's buffer); otherwise one
    /// rebuilt or decompressed buffer.
    pub fn decode_parts(&self, what: &str, stripe: u32, info: &StripeInfo, logical_len: usize, cells: &[Option<Bytes>]) -> Result<Vec<Bytes>> {
        let k = self.params.k();
        if info.compressed || k == 1 || !cells[..k].iter().all(Option::is_some) {
            return Ok(vec![self.decode(what, stripe, info, logical_len, cells)?]);
        }
        Ok(Self::stored_data_parts(info, &cells[..k]))
    }

    /// The stored bytes of a stripe whose data cells are all here: each data
    /// cell, cut where the stored bytes end (the last ones are padding).
    fn stored_data_parts(info: &StripeInfo, data_cells: &[Option<Bytes>]) -> Vec<Bytes> {
        let mut left = info.stored_len as usize;
        let mut parts = Vec::with_capacity(data_cells.len());
        for c in data_cells.iter().flatten() {
            let n = left.min(c.len());
            if n == 0 {
                break;
            }
            parts.push(c.slice(..n));
            left -= n;
        }
        parts
    }

    /// Rebuilds the stripe's object bytes from at least `k` verified cells
    /// (`cells[i]` is cell `i` or `None`). `logical_len` is the number of
    /// object bytes in the stripe.
    pub fn decode(&self, what: &str, stripe: u32, info: &StripeInfo, logical_len: usize, cells: &[Option<Bytes>]) -> Result<Bytes> {
        let k = self.params.k();
        let stored = info.stored_len as usize;
        let payload = if cells[..k].iter().all(Option::is_some) {
            match Self::stored_data_parts(info, &cells[..k]).as_slice() {
                [one] => one.clone(),
                parts => Bytes::from(parts.concat()),
            }
        } else {
            let mut shards = self.reconstruct(what, stripe, info, cells, false)?;
            shards.truncate(stored);
            shards.freeze()
        };
        if !info.compressed {
            return Ok(payload);
        }
        let out = zstd::bulk::decompress(&payload, logical_len)
            .map_err(|e| Error::format(format!("{what} stripe {stripe}"), format!("zstd payload does not decompress: {e}")))?;
        if out.len() != logical_len {
            return Err(Error::format(
                format!("{what} stripe {stripe}"),
                format!("decompressed to {} bytes, expected {logical_len}", out.len()),
            ));
        }
        Ok(Bytes::from(out))
    }

    /// Recomputes every cell of a stripe from at least `k` verified cells;
    /// used to rebuild a lost fragment. Returns all `k + m` cells.
    pub fn rebuild_cells(&self, what: &str, stripe: u32, info: &StripeInfo, cells: &[Option<Bytes>]) -> Result<Vec<Bytes>> {
        let cell_len = info.cell_len(self.params.k());
        let all = self.reconstruct(what, stripe, info, cells, true)?.freeze();
        Ok((0..self.params.fragments()).map(|i| all.slice(i * cell_len..(i + 1) * cell_len)).collect())
    }

    /// Rebuilds missing cells from at least `k` present ones. With `parity`,
    /// returns all `k + m` cells in one buffer; without, only the `k` data
    /// cells, and only as many parity cells are copied in as data cells are
    /// missing (the degraded read path: no byte is written twice).
    fn reconstruct(&self, what: &str, stripe: u32, info: &StripeInfo, cells: &[Option<Bytes>], parity: bool) -> Result<BytesMut> {
        let k = self.params.k();
        let n = self.params.fragments();
        let cell_len = info.cell_len(k);
        let present = cells.iter().filter(|c| c.is_some()).count();
        if present < k {
            let missing = (0..n).filter(|&i| cells[i].is_none()).collect();
            return Err(Error::StripeUnrecoverable { path: what.to_string(), stripe, k, good: present, missing, corrupt: vec![], causes: String::new() });
        }
        let rebuild = |e| Error::format(format!("{what} stripe {stripe}"), format!("reconstruction failed: {e:?}"));
        if parity {
            let mut buf = BytesMut::with_capacity(n * cell_len);
            for c in cells {
                match c {
                    Some(c) => buf.extend_from_slice(c),
                    None => buf.resize(buf.len() + cell_len, 0),
                }
            }
            if let (Some(rs), true) = (&self.rs, present < n) {
                let mut shards: Vec<(&mut [u8], bool)> = buf.chunks_mut(cell_len).zip(cells).map(|(s, c)| (s, c.is_some())).collect();
                rs.reconstruct(&mut shards).map_err(rebuild)?;
            }
            return Ok(buf);
        }
        let missing_data = cells[..k].iter().filter(|c| c.is_none()).count();
        let used_parity: Vec<usize> = (k..n).filter(|&i| cells[i].is_some()).take(missing_data).collect();
        let mut buf = BytesMut::with_capacity((k + used_parity.len()) * cell_len);
        for c in &cells[..k] {
            match c {
                Some(c) => buf.extend_from_slice(c),
                None => buf.resize(buf.len() + cell_len, 0),
            }
        }
        for &i in &used_parity {
            buf.extend_from_slice(cells[i].as_ref().unwrap());
        }
        if let (Some(rs), true) = (&self.rs, missing_data > 0) {
            let (data, par) = buf.split_at_mut(k * cell_len);
            let mut par = par.chunks_mut(cell_len);
            let mut empty: [[u8; 0]; 32] = [[]; 32];
            let mut empties = empty.iter_mut();
            let mut shards: Vec<(&mut [u8], bool)> = data.chunks_mut(cell_len).zip(cells).map(|(s, c)| (s, c.is_some())).collect();
            for i in k..n {
                if used_parity.contains(&i) {
                    shards.push((par.next().unwrap(), true));
                } else {
                    // Not used: the library neither reads nor initializes it.
                    shards.push((empties.next().unwrap().as_mut_slice(), false));
                }
            }
            rs.reconstruct_data(&mut shards).map_err(rebuild)?;
        }
        buf.truncate(k * cell_len);
        Ok(buf)
    }
}

/// What zstd does to a sample of state: compressed / raw size and how fast it
/// decompresses (raw bytes per second), for adaptive mode's model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZstdSample {
    /// Compressed / raw size (at most 1: stripes that grow are stored raw).
    pub ratio: f64,
    /// Raw bytes per second of decompression.
    pub decompress_bytes_per_s: f64,
}

/// Compresses `data` at `level` and decompresses it again, timed (the fastest
/// of three decompressions: one preemption on a busy machine must not make
/// zstd look slow); `None` for an empty sample or a zstd error.
pub fn sample_zstd(data: &[u8], level: i32) -> Option<ZstdSample> {
    if data.is_empty() {
        return None;
    }
    let frame = zstd::bulk::compress(data, level).ok()?;
    let mut seconds = f64::INFINITY;
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let raw = zstd::bulk::decompress(&frame, data.len()).ok()?;
        seconds = seconds.min(started.elapsed().as_secs_f64().max(1e-6));
        debug_assert_eq!(raw.len(), data.len());
    }
    Some(ZstdSample { ratio: (frame.len() as f64 / data.len() as f64).min(1.0), decompress_bytes_per_s: data.len() as f64 / seconds })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_zstd_sample_measures_ratio_and_speed() {
        let repetitive = vec![7u8; 1 << 20];
        let s = sample_zstd(&repetitive, 1).unwrap();
        assert!(s.ratio < 0.01 && s.decompress_bytes_per_s > 0.0, "{s:?}");
        let random = crate::sample::noise(1 << 20, 5);
        assert!(sample_zstd(&random, 1).unwrap().ratio > 0.99);
        assert_eq!(sample_zstd(&[], 1), None);
    }

    fn params(k: usize, m: usize, compression: Compression) -> CodingParams {
        CodingParams::new(k, m, 4096, compression).unwrap()
    }

    fn data(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 9) as u8).collect()
    }

    fn encode(codec: &StripeCodec, bytes: &[u8]) -> EncodedStripe {
        let mut buf = BytesMut::with_capacity(codec.buffer_capacity());
        buf.extend_from_slice(bytes);
        codec.encode(buf)
    }

    #[test]
    fn checksums_cover_every_cell() {
        let codec = StripeCodec::new(params(4, 2, Compression::None)).unwrap();
        let enc = encode(&codec, &data(10_000, 1));
        assert_eq!(enc.cells.len(), 6);
        assert_eq!(enc.info.cell_len(4), 2500);
        for (i, c) in enc.cells.iter().enumerate() {
            assert!(codec.cell_is_valid(&enc.info, i, c));
            let mut bad = c.to_vec();
            bad[17] ^= 1;
            assert!(!codec.cell_is_valid(&enc.info, i, &bad));
            assert!(!codec.cell_is_valid(&enc.info, (i + 1) % 6, c) || enc.info.cell_checksums[i] == enc.info.cell_checksums[(i + 1) % 6]);
        }
    }

    #[test]
    fn compression_applies_only_when_smaller() {
        let codec = StripeCodec::new(params(4, 2, Compression::Zstd { level: 1 })).unwrap();
        let zeros = encode(&codec, &vec![0u8; 16384]);
        assert!(zeros.info.compressed && zeros.info.stored_len < 1000);
        let cells: Vec<Option<Bytes>> = zeros.cells.into_iter().map(Some).collect();
        assert_eq!(codec.decode("t", 0, &zeros.info, 16384, &cells).unwrap(), vec![0u8; 16384]);
        // Incompressible bytes are stored as they are.
        let enc = encode(&codec, &crate::sample::noise(16384, 1));
        assert!(!enc.info.compressed);
    }

    #[test]
    fn a_compressed_stripe_stays_in_the_buffer_it_came_in() {
        let codec = StripeCodec::new(params(4, 2, Compression::Zstd { level: 1 })).unwrap();
        let mut buf = BytesMut::with_capacity(codec.buffer_capacity());
        buf.extend_from_slice(&vec![5u8; 10_000]);
        let start = buf.as_ptr();
        let enc = codec.encode(buf);
        assert!(enc.info.compressed);
        assert_eq!(enc.buffer.as_ptr(), start, "the writer's buffer, not a new one");
        assert_eq!(enc.buffer_capacity, codec.buffer_capacity(), "so the writer's pool can reuse it");
        let cells: Vec<Option<Bytes>> = enc.cells.into_iter().map(Some).collect();
        assert_eq!(codec.decode("t", 0, &enc.info, 10_000, &cells).unwrap(), vec![5u8; 10_000]);
    }

    #[test]
    fn too_few_cells_name_the_missing_fragments() {
        let codec = StripeCodec::new(params(3, 2, Compression::None)).unwrap();
        let enc = encode(&codec, &data(5000, 2));
        let mut cells: Vec<Option<Bytes>> = enc.cells.into_iter().map(Some).collect();
        cells[0] = None;
        cells[2] = None;
        cells[4] = None;
        let e = codec.decode("obj", 9, &enc.info, 5000, &cells).unwrap_err().to_string();
        assert!(e.contains("obj: stripe 9") && e.contains("missing fragments [0, 2, 4]"), "{e}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn any_k_cells_decode(k in 1usize..8, m in 0usize..5, len in 1usize..20000, lost_seed in any::<u64>(), zstd in any::<bool>()) {
            let compression = if zstd { Compression::Zstd { level: 3 } } else { Compression::None };
            let codec = StripeCodec::new(params(k, m, compression)).unwrap();
            let len = len.min(k * 4096);
            let bytes = data(len, lost_seed as u8);
            let enc = encode(&codec, &bytes);
            // Drop m cells chosen by the seed.
            let mut order: Vec<usize> = (0..k + m).collect();
            let mut s = lost_seed;
            for i in (1..order.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                order.swap(i, (s >> 33) as usize % (i + 1));
            }
            let mut cells: Vec<Option<Bytes>> = enc.cells.iter().cloned().map(Some).collect();
            for &i in &order[..m] {
                cells[i] = None;
            }
            let out = codec.decode("p", 0, &enc.info, len, &cells).unwrap();
            prop_assert_eq!(&out[..], &bytes[..]);
            let parts = codec.decode_parts("p", 0, &enc.info, len, &cells).unwrap();
            prop_assert_eq!(parts.concat(), bytes.clone());
            // With every data cell there, nothing is copied: each part is a data cell (or its start).
            let all: Vec<Option<Bytes>> = enc.cells.iter().cloned().map(Some).collect();
            if !enc.info.compressed && k > 1 {
                let parts = codec.decode_parts("p", 0, &enc.info, len, &all).unwrap();
                prop_assert_eq!(parts.concat(), bytes.clone());
                for (p, c) in parts.iter().zip(&enc.cells) {
                    prop_assert_eq!(p.as_ptr(), c.as_ptr());
                }
            }
            let rebuilt = codec.rebuild_cells("p", 0, &enc.info, &cells).unwrap();
            prop_assert_eq!(rebuilt, enc.cells);
        }
    }
}
