//! The directory index's frames (NETWORK.md, "Fragment protocol"):
//! `IndexUpdate` (a change, a birth or a fill of one directory's index,
//! [`fragstate_core::dir_index::quorum::IndexUpdate`]) and `IndexRead`
//! (a holder's record of one directory), with the bounds a node checks
//! before it touches its records: a directory ends in `/` and is at most
//! [`MAX_TOMBSTONE_PATH`] bytes (the longest path the protocol keeps
//! anywhere), a reader's width is 1 ..= [`MAX_INDEX_WIDTH`].

use bincode::Options;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use fragstate_core::dir_index::quorum::{IndexUpdate, Record};
use fragstate_core::error::{Error, Result};
use fragstate_core::placement::PlacementPolicy;

use super::{decode, encode, opts};
use crate::tombstone_set::MAX_TOMBSTONE_PATH;

/// An `IndexUpdate` request: what a writer or a reader sends one holder of `dir`'s index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexUpdateReq {
    pub dir: String,
    pub update: IndexUpdate,
}

/// An `IndexRead` request: `dir`'s record, from a holder the reader ranked
/// among the `width` first for `dir` (`fragstate_core::dir_index::holders`)
/// with shared failure domains allowed or not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexReadReq {
    pub dir: String,
    pub width: u32,
    pub shared_domains: bool,
}

/// The body of an `IndexAnswer`: the holder's record of the directory, if it has one.
pub type IndexAnswer = Option<Record>;

/// The widest holder set a reader may name (`k + m` is at most
/// [`fragstate_core::params::MAX_FRAGMENTS`]; the bound keeps a node's
/// ranking of one request cheap).
pub const MAX_INDEX_WIDTH: u32 = u8::MAX as u32;

/// A directory an index request may name: ends in `/`, at most [`MAX_TOMBSTONE_PATH`] bytes.
fn check_dir(dir: &str) -> Result<()> {
    if !dir.ends_with('/') {
        return Err(Error::invalid("index directory", dir.chars().take(64).collect::<String>(), "a directory path ending in /"));
    }
    if dir.len() > MAX_TOMBSTONE_PATH {
        return Err(Error::invalid("index directory", format!("{} bytes", dir.len()), format!("at most {MAX_TOMBSTONE_PATH} bytes")));
    }
    Ok(())
}

impl IndexUpdateReq {
    /// Whether a node takes it: its directory, and the names it changes within the path bound.
    pub fn check(&self) -> Result<()> {
        check_dir(&self.dir)?;
        let names: Vec<&str> = match &self.update {
            IndexUpdate::Apply { name, .. } => vec![name],
            IndexUpdate::Batch(changes) => changes.iter().map(|(name, _)| name.as_str()).collect(),
            IndexUpdate::Create | IndexUpdate::Fill(_) => Vec::new(),
        };
        for name in names {
            if name.is_empty() || self.dir.len() + name.len() > MAX_TOMBSTONE_PATH {
                let allowed = format!("a name of 1 byte or more, at most {MAX_TOMBSTONE_PATH} bytes with its directory");
                return Err(Error::invalid("index entry name", format!("{} bytes", name.len()), allowed));
            }
        }
        Ok(())
    }
}

impl IndexReadReq {
    /// Whether a node takes it: its directory and a width of 1 ..= [`MAX_INDEX_WIDTH`].
    pub fn check(&self) -> Result<()> {
        check_dir(&self.dir)?;
        if self.width == 0 || self.width > MAX_INDEX_WIDTH {
            return Err(Error::invalid("index read width", self.width, format!("1 ..= {MAX_INDEX_WIDTH}")));
        }
        Ok(())
    }

    /// How the reader ranked the holders.
    pub fn policy(&self) -> PlacementPolicy {
        PlacementPolicy { allow_shared_domains: self.shared_domains }
    }
}

/// [`decode`] for a body that carries a map (a directory index's names):
/// bincode reads a map's entries in any order and keeps the last of equal
/// keys, so one index has many encodings; only its own (names sorted, each
/// once) is taken, so that every body is read one way only, as the other
/// frames' are. A body in another order is a protocol violation.
pub fn decode_canonical<T: Serialize + DeserializeOwned>(what: &str, b: &[u8]) -> Result<T> {
    let v: T = decode(what, b)?;
    if encode(&v) != b {
        return Err(Error::protocol(format!("frame body ({what})"), "not in its canonical encoding (names out of order or repeated)"));
    }
    Ok(v)
}

/// [`encode`] for a body that may not fit in a frame (a directory's record
/// or a fill with more names than [`super::MAX_CONTROL_BODY`] holds): an
/// error instead of a panic; the directory's reads then fall back to every node.
pub fn try_encode<T: Serialize>(what: &str, v: &T) -> Result<Vec<u8>> {
    opts().serialize(v).map_err(|e| Error::InvalidState { path: what.to_string(), reason: format!("does not fit in one frame: {e}") })
}
