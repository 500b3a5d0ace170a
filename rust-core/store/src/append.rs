//! Appending a cell: the checks and the index update under the lock, the
//! disk write outside it, and a failed write undone (the file cut back to its
//! last whole frame, so no partial frame stays behind).

use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::time::SystemTime;

use bytes::Bytes;
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{CellFrame, CELL_FRAME_HEADER_LEN};
use fragstate_core::ids::FragmentKey;

use crate::{lock, CellSlot, Disk, FragmentFile, FragmentStore};

const FRAME: u64 = CELL_FRAME_HEADER_LEN as u64;

impl FragmentStore {
    /// Appends the cell of `stripe` (stripes arrive in order; re-sending the
    /// last cell with the same checksum is accepted as a retry). Refused with
    /// [`Error::StoreFull`] beyond the budget, and in disk mode beyond what
    /// the file system has left (then `budget` in the error is the bytes held
    /// plus that room). A failed disk write leaves the fragment as it was
    /// before it: its file cut back to the last whole cell, or removed (with
    /// the fragment) if it held none.
    pub fn append_cell(&self, key: &FragmentKey, stripe: u32, checksum: u64, cell: Bytes) -> Result<()> {
        let len = cell.len() as u64;
        let space = self.disk().map(|d| d.space.sample(lock(&self.state).used));
        let (file, offset) = {
            let mut st = lock(&self.state);
            let used = st.used;
            let f = st.fragments.get_mut(key).ok_or_else(|| Error::InvalidState {
                path: key.path.to_string(),
                reason: format!("fragment {} not started on node {}", key.index, self.node),
            })?;
            let have = f.cells.len() as u32;
            if stripe < have {
                let prev = match &f.cells[stripe as usize] {
                    CellSlot::Memory { checksum, .. } | CellSlot::Disk { checksum, .. } => *checksum,
                };
                if prev == checksum {
                    return Ok(());
                }
            }
            if f.appending {
                return Err(Error::InvalidState {
                    path: key.path.to_string(),
                    reason: format!("fragment {}: cell of stripe {stripe} arrived while stripe {have} is being written", key.index),
                });
            }
            if stripe != have {
                return Err(Error::InvalidState {
                    path: key.path.to_string(),
                    reason: format!("fragment {}: cell of stripe {stripe} arrived, expected stripe {have}", key.index),
                });
            }
            if len > f.header.params.cell_size() as u64 {
                return Err(Error::format(
                    format!("{} fragment {}", key.path, key.index),
                    format!("cell of {len} bytes exceeds the cell size {}", f.header.params.cell_size()),
                ));
            }
            if used.saturating_add(len) > self.budget {
                return Err(Error::StoreFull { node: self.node.clone(), budget: self.budget, used, requested: len });
            }
            if let Some(space) = space {
                let left = space.left(used);
                if FRAME + len > left {
                    tracing::warn!(node = %self.node, used, disk_available = left, requested = FRAME + len, "file system full: refusing a cell");
                    return Err(Error::StoreFull { node: self.node.clone(), budget: used.saturating_add(left), used, requested: FRAME + len });
                }
            }
            f.last_active = SystemTime::now();
            match &f.file {
                None => {
                    f.cells.push(CellSlot::memory(checksum, &cell));
                    f.bytes += len;
                    st.used += len;
                    return Ok(());
                }
                Some(file) => {
                    let file = file.clone();
                    let offset = f.end;
                    f.end += FRAME + len;
                    f.bytes += len;
                    f.appending = true;
                    st.used += len;
                    (file, offset)
                }
            }
        };
        let disk = self.disk().expect("fragment files exist in disk mode only");
        let frame = CellFrame { stripe, len: len as u32, checksum }.encode();
        let handle = match self.open_file(&file) {
            Ok(h) => h,
            Err(e) => {
                self.undo_append(disk, key, &file, None, offset, len);
                return Err(e);
            }
        };
        if let Err(e) = write_frame(disk, &handle, offset, &frame, &cell) {
            self.undo_append(disk, key, &file, Some(&handle), offset, len);
            return Err(Error::io(format!("node {}: append to {} fragment {}", self.node, key.path, key.index), e));
        }
        let mut st = lock(&self.state);
        if let Some(f) = st.fragments.get_mut(key).filter(|f| f.file.as_ref().is_some_and(|x| x.id == file.id)) {
            f.cells.push(CellSlot::Disk { checksum, offset: offset + FRAME, len: len as u32 });
            f.appending = false;
            f.last_active = SystemTime::now();
        }
        Ok(())
    }

    /// Undoes a failed append of `len` bytes at `offset`: the file is cut back
    /// to `offset` (the end of its last whole frame) and the index forgets
    /// the cell; a fragment left with no cell is removed with its file.
    fn undo_append(&self, disk: &Disk, key: &FragmentKey, file: &FragmentFile, handle: Option<&File>, offset: u64, len: u64) {
        if let Some(h) = handle {
            if let Err(e) = h.set_len(offset) {
                // The next append overwrites the partial frame; a restart cuts it.
                tracing::warn!(file = %file.path.display(), error = %e, "could not cut a failed append");
            }
        }
        let mut st = lock(&self.state);
        let Some(f) = st.fragments.get_mut(key).filter(|f| f.file.as_ref().is_some_and(|x| x.id == file.id)) else {
            return; // removed meanwhile (delete, reclaim)
        };
        f.end = offset;
        f.bytes -= len;
        f.appending = false;
        let empty = f.cells.is_empty();
        st.used -= len;
        if empty {
            st.fragments.remove(key);
            drop(st);
            disk.files.forget(file.id);
            if let Err(e) = fs::remove_file(&file.path) {
                tracing::warn!(file = %file.path.display(), error = %e, "could not remove a fragment file with no cell");
            }
        }
    }
}

/// Writes a cell frame and its cell at `offset`.
fn write_frame(_disk: &Disk, file: &File, offset: u64, frame: &[u8], cell: &[u8]) -> std::io::Result<()> {
    #[cfg(test)]
    if let Some(n) = lock(&_disk.short_write).take() {
        let all = [frame, cell].concat();
        file.write_all_at(&all[..n.min(all.len())], offset)?;
        return Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "test: no space left on device"));
    }
    file.write_all_at(frame, offset)?;
    file.write_all_at(cell, offset + frame.len() as u64)
}
