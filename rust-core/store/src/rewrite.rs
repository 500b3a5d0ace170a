//! What the scrub needs of a store: the committed fragments it holds, and a
//! rebuilt cell written back — in place over a bad one (same offset, same
//! length, frame header and bytes rewritten, then synced), or appended when
//! it is the next cell of a fragment whose tail was lost.

use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;
use fragstate_core::error::{Error, Result};
use fragstate_core::format::{CellFrame, Manifest, CELL_FRAME_HEADER_LEN};
use fragstate_core::ids::FragmentKey;

use crate::{lock, CellSlot, Disk, FragmentStore};

const FRAME: u64 = CELL_FRAME_HEADER_LEN as u64;

impl FragmentStore {
    /// The fragments held whose write is the committed one of their path
    /// (the manifest held has the same write id), with that manifest.
    pub fn committed_fragments(&self) -> Vec<(FragmentKey, Arc<Manifest>)> {
        let st = lock(&self.state);
        st.fragments
            .keys()
            .filter_map(|k| st.manifests.get(&k.path).filter(|m| m.write_id == k.write_id).map(|m| (k.clone(), m.clone())))
            .collect()
    }

    /// Whether the store holds this fragment.
    pub fn has_fragment(&self, key: &FragmentKey) -> bool {
        lock(&self.state).fragments.contains_key(key)
    }

    /// Stores a rebuilt cell of a fragment the store holds: over the cell of
    /// `stripe` if it has one of the same length (in place; synced when the
    /// store syncs), or after its last cell if `stripe` is the next one.
    /// A fragment no longer held is `Ok(false)` (deleted meanwhile); a cell
    /// of another length, or a stripe beyond the next, is an error.
    pub fn rewrite_cell(&self, key: &FragmentKey, stripe: u32, checksum: u64, cell: Bytes) -> Result<bool> {
        let (slot, file, have) = {
            let mut st = lock(&self.state);
            let Some(f) = st.fragments.get_mut(key) else { return Ok(false) };
            let have = f.cells.len() as u32;
            match f.cells.get_mut(stripe as usize) {
                Some(CellSlot::Memory { bytes, .. }) if bytes.len() == cell.len() => {
                    f.cells[stripe as usize] = CellSlot::memory(checksum, &cell);
                    return Ok(true);
                }
                Some(slot) => (Some(slot.clone()), f.file.clone(), have),
                None => (None, f.file.clone(), have),
            }
        };
        let wrong_len = |len: usize| Error::InvalidState {
            path: key.path.to_string(),
            reason: format!(
                "fragment {} stripe {stripe} on node {}: stored cell has {len} bytes, the rebuilt one {}; not rewritten in place",
                key.index,
                self.node,
                cell.len()
            ),
        };
        match slot {
            None if stripe == have => {
                self.append_cell(key, stripe, checksum, cell)?;
                self.finish_fragment(key)?;
                Ok(true)
            }
            None => Err(Error::InvalidState {
                path: key.path.to_string(),
                reason: format!("fragment {} on node {} has {have} cells; stripe {stripe} cannot be appended", key.index, self.node),
            }),
            Some(CellSlot::Memory { bytes, .. }) => Err(wrong_len(bytes.len())),
            Some(CellSlot::Disk { offset, len, .. }) => {
                if len as usize != cell.len() {
                    return Err(wrong_len(len as usize));
                }
                let file = file.expect("disk cells always have a file");
                let disk: &Disk = self.disk().expect("fragment files exist in disk mode only");
                let frame = CellFrame { stripe, len, checksum }.encode();
                let h = self.open_file(&file)?;
                let ctx = |e| Error::io(format!("node {}: rewrite {} fragment {} stripe {stripe}", self.node, key.path, key.index), e);
                h.write_all_at(&frame, offset - FRAME).map_err(ctx)?;
                h.write_all_at(&cell, offset).map_err(ctx)?;
                if disk.fsync {
                    h.sync_data().map_err(ctx)?;
                }
                let mut st = lock(&self.state);
                if let Some(CellSlot::Disk { checksum: c, .. }) = st.fragments.get_mut(key).and_then(|f| f.cells.get_mut(stripe as usize)) {
                    *c = checksum;
                }
                Ok(true)
            }
        }
    }
}
