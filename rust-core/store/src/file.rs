//! Fragment files: one append-only file per fragment (header envelope, then
//! cell frames; `FORMAT.md`), scanned on open, a torn tail cut off.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::SystemTime;

use fragstate_core::error::{Error, Result};
use fragstate_core::format::{self, CellFrame, FragmentHeader, CELL_FRAME_HEADER_LEN, ENVELOPE_PREFIX_LEN, FRAGMENT_MAGIC};

use crate::{CellSlot, Fragment, FragmentFile};

/// A fragment file as found on disk: its header and the cells that are whole.
pub struct ScannedFragment {
    pub header: FragmentHeader,
    /// Offset of each cell's bytes and its frame, stripe order.
    pub cells: Vec<(u64, CellFrame)>,
    /// End of the last whole frame; bytes after it are a torn append.
    pub end: u64,
    pub file_len: u64,
}

/// Reads a fragment file's header and frame index (not the cell bytes).
pub fn scan_fragment_file(file: &File, path: &Path) -> Result<ScannedFragment> {
    let ctx = |e| Error::io(format!("read {}", path.display()), e);
    let file_len = file.metadata().map_err(ctx)?.len();
    let mut prefix = [0u8; ENVELOPE_PREFIX_LEN];
    let got = file.read_at(&mut prefix, 0).map_err(ctx)?;
    let header_len = format::envelope_len(FRAGMENT_MAGIC, "fragment header", &prefix[..got])?;
    if header_len as u64 > file_len {
        return Err(Error::format(format!("fragment file {}", path.display()), format!("truncated header: {file_len} of {header_len} bytes")));
    }
    let mut header_bytes = vec![0u8; header_len];
    file.read_exact_at(&mut header_bytes, 0).map_err(ctx)?;
    let header = format::decode_fragment_header(&header_bytes)?;
    let cell_size = header.params.cell_size() as u32;
    let mut cells = Vec::new();
    let mut pos = header_len as u64;
    let mut frame_buf = [0u8; CELL_FRAME_HEADER_LEN];
    while pos + CELL_FRAME_HEADER_LEN as u64 <= file_len {
        file.read_exact_at(&mut frame_buf, pos).map_err(ctx)?;
        let frame = match CellFrame::decode(&frame_buf, cell_size) {
            Ok(f) if f.stripe == cells.len() as u32 => f,
            _ => break,
        };
        let data_at = pos + CELL_FRAME_HEADER_LEN as u64;
        if data_at + frame.len as u64 > file_len {
            break;
        }
        cells.push((data_at, frame));
        pos = data_at + frame.len as u64;
    }
    Ok(ScannedFragment { header, cells, end: pos, file_len })
}

/// Loads a fragment into the index (as file `id`; the file is closed again,
/// reads reopen it). A torn last frame (the process died mid-append) is cut
/// off; everything before it is kept.
pub(crate) fn load_fragment(path: &Path, id: u64) -> Result<Fragment> {
    let ctx = |e| Error::io(format!("open {}", path.display()), e);
    let file = OpenOptions::new().read(true).write(true).open(path).map_err(ctx)?;
    let scan = scan_fragment_file(&file, path)?;
    if scan.end < scan.file_len {
        tracing::warn!(file = %path.display(), kept_cells = scan.cells.len(), cut_bytes = scan.file_len - scan.end, "cutting a torn fragment tail");
        file.set_len(scan.end).map_err(ctx)?;
    }
    let bytes = scan.cells.iter().map(|(_, f)| f.len as u64).sum();
    let cells = scan.cells.iter().map(|&(offset, f)| CellSlot::Disk { checksum: f.checksum, offset, len: f.len }).collect();
    // Idle since its last write: an upload the restart cut off is reclaimed
    // once that is long enough ago.
    let last_active = file.metadata().and_then(|m| m.modified()).unwrap_or_else(|_| SystemTime::now());
    Ok(Fragment {
        header: scan.header,
        cells,
        bytes,
        last_active,
        file: Some(FragmentFile { id, path: path.to_path_buf(), writer: None }),
        end: scan.end,
        appending: false,
        uploading: false,
    })
}

