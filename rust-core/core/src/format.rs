//! Versioned binary encoding of manifests, fragment headers and cell frames.
//! The byte layout is specified in `FORMAT.md`; this module is its only
//! implementation. Decoding never panics and never allocates more than
//! [`MAX_ENVELOPE_BODY`] for a header, whatever the input.

use std::sync::Arc;

use bincode::Options;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::params::CodingParams;
use crate::ids::{FragmentKey, NodeId, WriteId};
use crate::version::WriteVersion;

/// First four bytes of a manifest envelope.
pub const MANIFEST_MAGIC: [u8; 4] = *b"FSMF";
/// First four bytes of a fragment header envelope.
pub const FRAGMENT_MAGIC: [u8; 4] = *b"FSFG";
/// The envelope version this build writes and the only one it reads.
pub const FORMAT_VERSION: u16 = 1;
/// Largest encoded manifest or fragment header body. A manifest of a 64 GiB
/// object with RS(4,2) and 1 MiB cells is about 600 KiB.
pub const MAX_ENVELOPE_BODY: u32 = 16 * 1024 * 1024;
/// magic (4) + version (2) + body length (4).
pub const ENVELOPE_PREFIX_LEN: usize = 10;
/// stripe (4) + length (4) + xxh3-64 checksum (8).
pub const CELL_FRAME_HEADER_LEN: usize = 16;

/// Room a manifest body keeps for everything but its stripes (path, holders,
/// writer; paths and node ids are far shorter in practice).
pub const MANIFEST_HEADROOM: u32 = 1024 * 1024;

/// Stripes one manifest can describe when every stripe has `fragments` cells,
/// so that its body stays within [`MAX_ENVELOPE_BODY`]: a stripe costs 13
/// bytes (length, flag, list length) plus 8 per cell checksum. With 1 MiB
/// cells and RS(4,2) that is ≈ 245,000 stripes (≈ 960 GiB of object bytes);
/// with 4 KiB cells ≈ 3.7 GiB.
pub fn max_stripes(fragments: usize) -> u64 {
    ((MAX_ENVELOPE_BODY - MANIFEST_HEADROOM) as u64) / (13 + 8 * fragments as u64)
}

/// What a reader needs to know of one stripe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StripeInfo {
    /// Bytes of the (possibly compressed) payload that the `k` data cells
    /// carry; the cells are `ceil(stored_len / k)` bytes each, zero padded.
    pub stored_len: u32,
    /// The payload is a zstd frame of the stripe's object bytes.
    pub compressed: bool,
    /// xxh3-64 of each of the `k + m` cells, in fragment order.
    pub cell_checksums: Vec<u64>,
}

impl StripeInfo {
    /// Bytes of each of the stripe's `k + m` cells, `ceil(stored_len / k)`;
    /// `k` is the object's data fragment count.
    pub fn cell_len(&self, k: usize) -> usize {
        (self.stored_len as usize).div_ceil(k)
    }
}

/// The self-describing record of one committed object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Path of the object, e.g. `fragstate://cluster/job/chk-7/3f2a…`.
    pub path: String,
    /// Random per write: a path written again gets a new id, and its
    /// fragments carry it.
    pub write_id: WriteId,
    /// Bumped each time the holders change (repair), so that the newest copy wins.
    pub revision: u32,
    /// Object bytes, before compression.
    pub length: u64,
    /// How the object is cut, coded and compressed.
    pub params: CodingParams,
    /// `holders[i]` holds fragment `i`.
    pub holders: Vec<NodeId>,
    /// One entry per stripe, in stripe order: `ceil(length / (k × cell_size))` entries.
    pub stripes: Vec<StripeInfo>,
    /// Milliseconds since the Unix epoch when the write began; orders the
    /// versions of one path (an overwrite takes `max(now, previous + 1)`).
    pub created_unix_ms: u64,
    /// Who wrote the object (process or node id); informational.
    pub writer: String,
}

impl Manifest {
    /// Object bytes in stripe `s` (the last stripe may be short).
    pub fn stripe_len(&self, s: u64) -> u64 {
        let full = self.params.stripe_data_len();
        self.length.saturating_sub(s * full).min(full)
    }

    /// Orders copies of a path's manifest: newer writes first, then later repairs.
    pub fn version_key(&self) -> (WriteVersion, u32) {
        (self.write_version(), self.revision)
    }

    /// Which write of the path this is ([`crate::version`]).
    pub fn write_version(&self) -> WriteVersion {
        WriteVersion { created_unix_ms: self.created_unix_ms, write_id: self.write_id }
    }

    /// Checks the invariants that the reader relies on, so that a garbled or
    /// hostile manifest gives an error instead of a panic or a wrong read.
    pub fn validate(&self) -> Result<()> {
        let what = || format!("manifest of {}", self.path);
        self.params.validate()?;
        let n = self.params.fragments();
        if self.holders.len() != n {
            return Err(Error::format(what(), format!("{} holders for k + m = {n}", self.holders.len())));
        }
        let expected = self.params.stripe_count(self.length);
        if self.stripes.len() as u64 != expected {
            return Err(Error::format(
                what(),
                format!("{} stripes for length {} (expected {expected})", self.stripes.len(), self.length),
            ));
        }
        let cap = self.params.stripe_data_len();
        for (s, info) in self.stripes.iter().enumerate() {
            if info.cell_checksums.len() != n {
                return Err(Error::format(what(), format!("stripe {s}: {} checksums for {n} cells", info.cell_checksums.len())));
            }
            let logical = self.stripe_len(s as u64);
            let ok = if info.compressed {
                info.stored_len > 0 && info.stored_len as u64 <= cap
            } else {
                info.stored_len as u64 == logical
            };
            if !ok {
                return Err(Error::format(
                    what(),
                    format!("stripe {s}: stored length {} for {logical} object bytes", info.stored_len),
                ));
            }
        }
        Ok(())
    }

    /// What `list` and `stat` report of this object.
    pub fn summary(&self) -> ObjectSummary {
        ObjectSummary {
            path: self.path.clone(),
            length: self.length,
            created_unix_ms: self.created_unix_ms,
            write_id: self.write_id,
        }
    }
}

/// What `list` and `stat` report of an object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectSummary {
    /// Path of the object.
    pub path: String,
    /// Object bytes, before compression.
    pub length: u64,
    /// The version's [`Manifest::created_unix_ms`].
    pub created_unix_ms: u64,
    /// The version's write id.
    pub write_id: WriteId,
}

impl ObjectSummary {
    /// Which write of the path it is.
    pub fn write_version(&self) -> WriteVersion {
        WriteVersion { created_unix_ms: self.created_unix_ms, write_id: self.write_id }
    }
}

/// The header at the start of every stored or transferred fragment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragmentHeader {
    /// Path of the object.
    pub path: String,
    /// The write the fragment belongs to (the manifest's `write_id`).
    pub write_id: WriteId,
    /// Fragment index, `< k + m`: the fragment is cell `index` of every stripe.
    pub index: u8,
    /// The object's coding parameters; `cell_size` bounds every cell of the fragment.
    pub params: CodingParams,
    /// The write's [`Manifest::created_unix_ms`].
    pub created_unix_ms: u64,
}

impl FragmentHeader {
    /// Which write of the path the fragment belongs to.
    pub fn write_version(&self) -> WriteVersion {
        WriteVersion { created_unix_ms: self.created_unix_ms, write_id: self.write_id }
    }

    /// The key a store indexes this fragment by.
    pub fn key(&self) -> FragmentKey {
        FragmentKey {
            path: Arc::from(self.path.as_str()),
            write_id: self.write_id,
            index: self.index,
        }
    }
}

fn bincode_options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_little_endian()
        .with_limit(MAX_ENVELOPE_BODY as u64)
        .reject_trailing_bytes()
}

fn encode_envelope<T: Serialize>(magic: [u8; 4], value: &T) -> Vec<u8> {
    let body = bincode_options()
        .serialize(value)
        .expect("serializing a manifest or header cannot fail below the size limit");
    let mut out = Vec::with_capacity(ENVELOPE_PREFIX_LEN + body.len() + 4);
    out.extend_from_slice(&magic);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out
}

/// Checksum of one cell: xxh3-64, about 30 GB/s per core here (the
/// `crc32c` crate reaches only about 5 GB/s, which would halve the codec).
pub fn cell_checksum(cell: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(cell)
}

/// Length of the whole envelope starting at `prefix`, from its first
/// [`ENVELOPE_PREFIX_LEN`] bytes alone.
/// Used by readers of files and streams to know how much to read.
pub fn envelope_len(magic: [u8; 4], what: &str, prefix: &[u8]) -> Result<usize> {
    if prefix.len() < ENVELOPE_PREFIX_LEN {
        return Err(Error::format(what, format!("truncated: {} bytes, header needs {ENVELOPE_PREFIX_LEN}", prefix.len())));
    }
    if prefix[..4] != magic {
        return Err(Error::format(
            what,
            format!("bad magic {:02x?} (expected {:?})", &prefix[..4], String::from_utf8_lossy(&magic)),
        ));
    }
    let version = u16::from_le_bytes([prefix[4], prefix[5]]);
    if version != FORMAT_VERSION {
        return Err(Error::format(what, format!("unsupported format version {version} (this build reads {FORMAT_VERSION})")));
    }
    let body_len = u32::from_le_bytes(prefix[6..10].try_into().unwrap());
    if body_len > MAX_ENVELOPE_BODY {
        return Err(Error::format(what, format!("body length {body_len} exceeds the limit {MAX_ENVELOPE_BODY}")));
    }
    Ok(ENVELOPE_PREFIX_LEN + body_len as usize + 4)
}

fn decode_envelope<T: for<'de> Deserialize<'de>>(magic: [u8; 4], what: &str, bytes: &[u8]) -> Result<T> {
    let total = envelope_len(magic, what, bytes)?;
    if bytes.len() < total {
        return Err(Error::format(what, format!("truncated: {} of {total} bytes", bytes.len())));
    }
    if bytes.len() > total {
        return Err(Error::format(what, format!("{} trailing bytes", bytes.len() - total)));
    }
    let body = &bytes[ENVELOPE_PREFIX_LEN..total - 4];
    let stored = u32::from_le_bytes(bytes[total - 4..].try_into().unwrap());
    let actual = crc32c::crc32c(body);
    if stored != actual {
        return Err(Error::format(what, format!("checksum mismatch (stored {stored:08x}, computed {actual:08x})")));
    }
    bincode_options()
        .deserialize(body)
        .map_err(|e| Error::format(what, format!("undecodable body: {e}")))
}

/// Encodes a manifest as an `FSMF` envelope. Panics only if the body would
/// exceed [`MAX_ENVELOPE_BODY`].
pub fn encode_manifest(m: &Manifest) -> Vec<u8> {
    encode_envelope(MANIFEST_MAGIC, m)
}

/// Decodes and validates a manifest.
pub fn decode_manifest(bytes: &[u8]) -> Result<Manifest> {
    let m: Manifest = decode_envelope(MANIFEST_MAGIC, "manifest", bytes)?;
    m.validate()?;
    Ok(m)
}

/// Encodes a fragment header as an `FSFG` envelope.
pub fn encode_fragment_header(h: &FragmentHeader) -> Vec<u8> {
    encode_envelope(FRAGMENT_MAGIC, h)
}

/// Decodes a fragment header and checks its parameters and its index.
pub fn decode_fragment_header(bytes: &[u8]) -> Result<FragmentHeader> {
    let h: FragmentHeader = decode_envelope(FRAGMENT_MAGIC, "fragment header", bytes)?;
    h.params.validate()?;
    if h.index as usize >= h.params.fragments() {
        return Err(Error::format(
            "fragment header",
            format!("index {} out of range 0..{}", h.index, h.params.fragments()),
        ));
    }
    Ok(h)
}

/// The 16-byte header in front of every stored or transferred cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellFrame {
    /// Stripe number of the cell, counted from 0.
    pub stripe: u32,
    /// Cell length in bytes, at most the fragment's cell size.
    pub len: u32,
    /// xxh3-64 of the cell ([`cell_checksum`]).
    pub checksum: u64,
}

impl CellFrame {
    /// The frame header's 16 bytes, little-endian.
    pub fn encode(&self) -> [u8; CELL_FRAME_HEADER_LEN] {
        let mut out = [0u8; CELL_FRAME_HEADER_LEN];
        out[0..4].copy_from_slice(&self.stripe.to_le_bytes());
        out[4..8].copy_from_slice(&self.len.to_le_bytes());
        out[8..16].copy_from_slice(&self.checksum.to_le_bytes());
        out
    }

    /// Decodes a frame header; `max_len` bounds the cell length it announces.
    pub fn decode(bytes: &[u8], max_len: u32) -> Result<Self> {
        if bytes.len() < CELL_FRAME_HEADER_LEN {
            return Err(Error::format("cell frame", format!("truncated: {} of {CELL_FRAME_HEADER_LEN} bytes", bytes.len())));
        }
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let frame = CellFrame { stripe: word(0), len: word(4), checksum: u64::from_le_bytes(bytes[8..16].try_into().unwrap()) };
        if frame.len > max_len {
            return Err(Error::format("cell frame", format!("cell length {} exceeds the cell size {max_len}", frame.len)));
        }
        Ok(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Compression;
    use proptest::prelude::*;

    fn sample_manifest() -> Manifest {
        let params = CodingParams::new(2, 1, 4096, Compression::None).unwrap();
        Manifest {
            path: "fragstate://c/job/chk-1/a".into(),
            write_id: 7,
            revision: 0,
            length: 9000,
            params,
            holders: vec![NodeId::from("n0"), NodeId::from("n1"), NodeId::from("n2")],
            stripes: vec![
                StripeInfo { stored_len: 8192, compressed: false, cell_checksums: vec![1, 2, 3] },
                StripeInfo { stored_len: 808, compressed: false, cell_checksums: vec![4, 5, 6] },
            ],
            created_unix_ms: 1,
            writer: "w".into(),
        }
    }

    #[test]
    fn a_manifest_of_max_stripes_fits_its_envelope_and_one_more_stripe_would_not_fit_the_headroom() {
        for (k, m) in [(1, 0), (4, 2), (16, 16)] {
            let params = CodingParams::new(k, m, 4096, Compression::None).unwrap();
            let n = max_stripes(k + m) as usize;
            let stripe = StripeInfo { stored_len: params.stripe_data_len() as u32, compressed: false, cell_checksums: vec![u64::MAX; k + m] };
            let big = Manifest {
                // A long path and peer-id-sized holders: what the headroom is for.
                path: "p".repeat(64 * 1024),
                holders: (0..k + m).map(|i| NodeId::from(format!("12D3KooW{i:0>44}"))).collect(),
                stripes: vec![stripe; n],
                length: n as u64 * params.stripe_data_len(),
                params,
                writer: "w".repeat(1024),
                ..sample_manifest()
            };
            let bytes = encode_manifest(&big);
            assert!(bytes.len() <= MAX_ENVELOPE_BODY as usize + ENVELOPE_PREFIX_LEN + 4, "k={k} m={m}: {} bytes", bytes.len());
            let back = decode_manifest(&bytes).map_err(|e| e.to_string().chars().rev().take(200).collect::<String>());
            assert_eq!(back.map(|m| m.stripes.len()), Ok(n), "k={k} m={m}");
        }
    }

    #[test]
    fn manifest_round_trip() {
        let m = sample_manifest();
        let bytes = encode_manifest(&m);
        assert_eq!(&bytes[..4], b"FSMF");
        assert_eq!(decode_manifest(&bytes).unwrap(), m);
    }

    #[test]
    fn header_round_trip_and_index_check() {
        let h = FragmentHeader {
            path: "p".into(),
            write_id: 3,
            index: 2,
            params: CodingParams::new(2, 1, 4096, Compression::None).unwrap(),
            created_unix_ms: 5,
        };
        assert_eq!(decode_fragment_header(&encode_fragment_header(&h)).unwrap(), h);
        let bad = FragmentHeader { index: 3, ..h };
        let e = decode_fragment_header(&encode_fragment_header(&bad)).unwrap_err().to_string();
        assert!(e.contains("index 3 out of range"), "{e}");
    }

    #[test]
    fn damaged_envelopes_are_errors() {
        let bytes = encode_manifest(&sample_manifest());
        let mut v = bytes.clone();
        v[4] = 9;
        assert!(decode_manifest(&v).unwrap_err().to_string().contains("unsupported format version 9"));
        let mut v = bytes.clone();
        v[0] = b'X';
        assert!(decode_manifest(&v).unwrap_err().to_string().contains("bad magic"));
        let mut v = bytes.clone();
        let mid = v.len() / 2;
        v[mid] ^= 0x40;
        assert!(decode_manifest(&v).unwrap_err().to_string().contains("checksum mismatch"));
        assert!(decode_manifest(&bytes[..bytes.len() - 1]).unwrap_err().to_string().contains("truncated"));
        let mut v = bytes.clone();
        v.push(0);
        assert!(decode_manifest(&v).unwrap_err().to_string().contains("trailing"));
        // A fragment header is not a manifest.
        let e = decode_fragment_header(&bytes).unwrap_err().to_string();
        assert!(e.contains("bad magic"), "{e}");
    }

    #[test]
    fn inconsistent_manifest_is_rejected() {
        let mut m = sample_manifest();
        m.length = 100_000;
        let e = decode_manifest(&encode_manifest(&m)).unwrap_err().to_string();
        assert!(e.contains("2 stripes for length 100000"), "{e}");
        let mut m = sample_manifest();
        m.holders.pop();
        assert!(decode_manifest(&encode_manifest(&m)).is_err());
        let mut m = sample_manifest();
        m.stripes[1].stored_len = 9999;
        assert!(decode_manifest(&encode_manifest(&m)).is_err());
    }

    #[test]
    fn cell_frame_round_trip_and_bound() {
        let f = CellFrame { stripe: 3, len: 100, checksum: 0xdead_beef_0bad_cafe };
        assert_eq!(CellFrame::decode(&f.encode(), 100).unwrap(), f);
        assert!(CellFrame::decode(&f.encode(), 99).is_err());
        assert!(CellFrame::decode(&f.encode()[..15], 100).is_err());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode_manifest(&bytes);
            let _ = decode_fragment_header(&bytes);
        }

        #[test]
        fn garbage_body_behind_valid_prefix_never_panics(body in proptest::collection::vec(any::<u8>(), 0..512)) {
            // Correct magic, version and checksum around random bytes: this reaches bincode.
            let mut v = Vec::new();
            v.extend_from_slice(&MANIFEST_MAGIC);
            v.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
            v.extend_from_slice(&(body.len() as u32).to_le_bytes());
            v.extend_from_slice(&body);
            v.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
            let _ = decode_manifest(&v);
            v[..4].copy_from_slice(&FRAGMENT_MAGIC);
            let _ = decode_fragment_header(&v);
        }

        #[test]
        fn truncations_are_errors(cut in 0usize..400) {
            let bytes = encode_manifest(&sample_manifest());
            let cut = cut.min(bytes.len() - 1);
            prop_assert!(decode_manifest(&bytes[..cut]).is_err());
        }
    }
}
