//! The tombstone file of a disk-backed node (`<store>/tombstones.bin`): an
//! append-only log, so a delete costs one small append instead of rewriting
//! every tombstone (FORMAT.md, "Tombstone file").
//!
//! Layout: the magic `FSTOMB01`, then records `u32 LE length | u32 LE crc32c
//! of the body | body` (a bincode [`Tombstone`]). Appends are fsynced at most
//! once per hello interval ([`TombstoneLog::sync`]); a crash loses at most the
//! tombstones of that interval, and a torn last record is cut off on load.
//! When the file holds more than twice the live entries (plus
//! [`COMPACT_SLACK`]), it is rewritten from the set: temporary file, fsync,
//! rename, fsync of the directory. A file in the old layout (one bincode list)
//! is read once and rewritten in this one.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use fragstate_core::error::{Error, Result};

use fragstate_store::{create_private, private_file};

use crate::tombstone_set::TombstoneSet;
use crate::wire::{self, Tombstone};

const MAGIC: &[u8; 8] = b"FSTOMB01";
/// Records beyond twice the live entries that are tolerated before a rewrite.
pub const COMPACT_SLACK: usize = 1024;
/// Largest record body accepted on load (a path of at most 4 KiB plus a few fields).
const MAX_RECORD: u32 = 64 * 1024;

/// An open tombstone file.
#[derive(Debug)]
pub struct TombstoneLog {
    path: PathBuf,
    file: File,
    fsync: bool,
    records: usize,
    bytes: u64,
    dirty: bool,
}

fn io_err(what: &str, path: &Path, e: io::Error) -> Error {
    Error::io(format!("{what} {}", path.display()), e)
}

fn record(t: &Tombstone) -> Vec<u8> {
    let body = wire::encode(t);
    let mut r = Vec::with_capacity(8 + body.len());
    r.extend_from_slice(&(body.len() as u32).to_le_bytes());
    r.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    r.extend_from_slice(&body);
    r
}

/// The whole records of a log body (after the magic) and the length they span;
/// a torn or damaged tail ends the list.
fn parse_records(mut b: &[u8]) -> (Vec<Tombstone>, usize) {
    let mut out = Vec::new();
    let mut used = 0;
    while b.len() >= 8 {
        let len = u32::from_le_bytes(b[..4].try_into().unwrap());
        let crc = u32::from_le_bytes(b[4..8].try_into().unwrap());
        if len > MAX_RECORD || b.len() < 8 + len as usize {
            break;
        }
        let body = &b[8..8 + len as usize];
        if crc32c::crc32c(body) != crc {
            break;
        }
        match wire::decode::<Tombstone>("tombstone record", body) {
            Ok(t) => out.push(t),
            Err(_) => break,
        }
        used += 8 + len as usize;
        b = &b[8 + len as usize..];
    }
    (out, used)
}

impl TombstoneLog {
    /// Opens (or creates) the file at `path`, puts what it holds into `set`
    /// as of `now_ms` (bounds apply), and rewrites it compactly.
    pub fn open(path: &Path, fsync: bool, set: &mut TombstoneSet, now_ms: u64) -> Result<TombstoneLog> {
        let mut bytes = Vec::new();
        match File::open(path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(|e| io_err("read", path, e))?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("open", path, e)),
        }
        let found: Vec<Tombstone> = if bytes.is_empty() {
            Vec::new()
        } else if let Some(body) = bytes.strip_prefix(MAGIC.as_slice()) {
            let (records, used) = parse_records(body);
            if used < body.len() {
                tracing::warn!(file = %path.display(), kept = records.len(), cut_bytes = body.len() - used, "cutting a torn tombstone file tail");
            }
            records
        } else {
            // The layout before the log: one bincode list.
            wire::decode::<Vec<Tombstone>>("tombstones", &bytes).unwrap_or_else(|e| {
                tracing::warn!(file = %path.display(), error = %e, "ignoring unreadable tombstone file");
                Vec::new()
            })
        };
        for t in &found {
            set.insert(t, now_ms);
        }
        set.prune(now_ms);
        let mut log = TombstoneLog {
            path: path.to_path_buf(),
            file: private_file().create(true).append(true).open(path).map_err(|e| io_err("open", path, e))?,
            fsync,
            records: found.len(),
            bytes: bytes.len() as u64,
            dirty: false,
        };
        log.rewrite(set)?;
        Ok(log)
    }

    /// Appends one tombstone (durable at the next [`Self::sync`]).
    pub fn append(&mut self, t: &Tombstone) -> Result<()> {
        let r = record(t);
        self.file.write_all(&r).map_err(|e| io_err("append to", &self.path, e))?;
        self.records += 1;
        self.bytes += r.len() as u64;
        self.dirty = true;
        Ok(())
    }

    /// Makes the appends so far durable (with the node's fsync policy).
    pub fn sync(&mut self) -> Result<()> {
        if self.dirty && self.fsync {
            self.file.sync_data().map_err(|e| io_err("fsync", &self.path, e))?;
        }
        self.dirty = false;
        Ok(())
    }

    /// Rewrites the file from `set` when it holds more than twice the live
    /// entries plus [`COMPACT_SLACK`] records.
    pub fn compact_if_needed(&mut self, set: &TombstoneSet) -> Result<()> {
        if self.records > 2 * set.len() + COMPACT_SLACK {
            self.rewrite(set)?;
        }
        Ok(())
    }

    /// Size of the file in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.bytes
    }

    /// Writes the live set to a new file and renames it over the log. Records
    /// stream through a small buffer: building the whole (≤ 16 MB) file in one
    /// growing `Vec` on a blocking thread left each glibc arena holding its
    /// high-water mark, which the first soak saw as RSS steps.
    fn rewrite(&mut self, set: &TombstoneSet) -> Result<()> {
        let tmp = self.path.with_extension("tmp");
        let mut records = 0;
        let mut bytes = MAGIC.len() as u64;
        let mut write = || -> io::Result<()> {
            let mut f = io::BufWriter::with_capacity(64 << 10, create_private(&tmp)?);
            f.write_all(MAGIC)?;
            for t in set.all() {
                let r = record(&t);
                f.write_all(&r)?;
                bytes += r.len() as u64;
                records += 1;
            }
            let f = f.into_inner().map_err(|e| e.into_error())?;
            if self.fsync {
                f.sync_all()?;
            }
            std::fs::rename(&tmp, &self.path)?;
            if self.fsync {
                if let Some(dir) = self.path.parent() {
                    File::open(dir)?.sync_all()?;
                }
            }
            Ok(())
        };
        write().map_err(|e| io_err("rewrite", &self.path, e))?;
        self.file = OpenOptions::new().append(true).open(&self.path).map_err(|e| io_err("open", &self.path, e))?;
        self.records = records;
        self.bytes = bytes;
        self.dirty = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tombstone_set::TombstoneLimits;

    const NOW: u64 = 1_800_000_000_000;

    fn t(path: &str, at: u64) -> Tombstone {
        Tombstone { prefix: false, path: path.into(), at_unix_ms: at }
    }

    #[test]
    fn appends_survive_a_reopen_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("tombstones.bin");
        let mut set = TombstoneSet::new(TombstoneLimits::default());
        let mut log = TombstoneLog::open(&f, true, &mut set, NOW).unwrap();
        for i in 0..10 {
            let x = t(&format!("p{i}"), NOW - 10 + i);
            set.insert(&x, NOW);
            log.append(&x).unwrap();
        }
        log.sync().unwrap();
        drop(log);
        // A crash in the middle of an append.
        let mut raw = std::fs::read(&f).unwrap();
        raw.extend_from_slice(&record(&t("torn", NOW))[..7]);
        std::fs::write(&f, &raw).unwrap();

        let mut again = TombstoneSet::new(TombstoneLimits::default());
        let log = TombstoneLog::open(&f, true, &mut again, NOW).unwrap();
        assert_eq!(again.all().collect::<Vec<_>>(), set.all().collect::<Vec<_>>());
        assert_eq!(log.file_bytes(), std::fs::metadata(&f).unwrap().len());
        assert!(log.file_bytes() < raw.len() as u64, "the torn record is gone");
    }

    #[test]
    fn repeated_deletes_keep_the_file_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("tombstones.bin");
        let limits = TombstoneLimits { max_count: 100, ..TombstoneLimits::default() };
        let mut set = TombstoneSet::new(limits);
        let mut log = TombstoneLog::open(&f, false, &mut set, NOW).unwrap();
        for i in 0..20_000u64 {
            let x = t(&format!("job/chk-{i}/state"), NOW - 20_000 + i);
            set.insert(&x, NOW);
            log.append(&x).unwrap();
            log.compact_if_needed(&set).unwrap();
        }
        assert_eq!(set.len(), 100);
        let records_bound = 2 * 100 + COMPACT_SLACK + 1;
        let record_bytes = record(&t("job/chk-19999/state", NOW)).len() as u64;
        assert!(log.file_bytes() <= MAGIC.len() as u64 + records_bound as u64 * record_bytes, "{} bytes", log.file_bytes());
        assert_eq!(log.file_bytes(), std::fs::metadata(&f).unwrap().len());
    }

    #[test]
    fn the_old_single_list_layout_is_read_and_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("tombstones.bin");
        std::fs::write(&f, wire::encode(&vec![t("a", NOW - 5), t("b", NOW - 4)])).unwrap();
        let mut set = TombstoneSet::new(TombstoneLimits::default());
        TombstoneLog::open(&f, true, &mut set, NOW).unwrap();
        assert_eq!(set.len(), 2);
        assert!(std::fs::read(&f).unwrap().starts_with(MAGIC));
        let mut again = TombstoneSet::new(TombstoneLimits::default());
        TombstoneLog::open(&f, true, &mut again, NOW).unwrap();
        assert_eq!(again.len(), 2);
    }
}
