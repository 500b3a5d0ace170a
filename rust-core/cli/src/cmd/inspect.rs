//! `fragstate inspect FILE`: decodes a manifest or fragment file.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use fragstate_core::format::{self, FRAGMENT_MAGIC, MANIFEST_MAGIC};
use fragstate_store as store;


pub(crate) fn inspect(path: &PathBuf) -> fragstate_core::Result<()> {
    let file = File::open(path).map_err(|e| fragstate_core::Error::io(format!("open {}", path.display()), e))?;
    let mut magic = [0u8; 4];
    let got = file.read_at(&mut magic, 0).map_err(|e| fragstate_core::Error::io(format!("read {}", path.display()), e))?;
    if got == 4 && magic == MANIFEST_MAGIC {
        let bytes = std::fs::read(path).map_err(|e| fragstate_core::Error::io(format!("read {}", path.display()), e))?;
        let m = format::decode_manifest(&bytes)?;
        println!("manifest (format v{})", format::FORMAT_VERSION);
        println!("  path        {}", m.path);
        println!("  length      {} bytes in {} stripes", m.length, m.stripes.len());
        println!("  coding      k={} m={} cell {} B, {:?}", m.params.k(), m.params.m(), m.params.cell_size(), m.params.compression());
        println!("  write id    {:032x} revision {}", m.write_id, m.revision);
        println!("  created     {} ms since epoch by {}", m.created_unix_ms, m.writer);
        for (i, h) in m.holders.iter().enumerate() {
            println!("  fragment {i:2} on {h}");
        }
        println!("  compressed stripes {}", m.stripes.iter().filter(|s| s.compressed).count());
        Ok(())
    } else if got == 4 && magic == FRAGMENT_MAGIC {
        let scan = store::scan_fragment_file(&file, path)?;
        let h = &scan.header;
        println!("fragment (format v{})", format::FORMAT_VERSION);
        println!("  path        {}", h.path);
        println!("  index       {} of k={} + m={}", h.index, h.params.k(), h.params.m());
        println!("  write id    {:032x}", h.write_id);
        println!("  cell size   {} B, {:?}", h.params.cell_size(), h.params.compression());
        let mut bad = Vec::new();
        let mut bytes = 0u64;
        for (offset, frame) in &scan.cells {
            let mut cell = vec![0u8; frame.len as usize];
            file.read_exact_at(&mut cell, *offset).map_err(|e| fragstate_core::Error::io("read cell", e))?;
            if format::cell_checksum(&cell) != frame.checksum {
                bad.push(frame.stripe);
            }
            bytes += frame.len as u64;
        }
        println!("  cells       {} ({} bytes), checksum mismatches: {:?}", scan.cells.len(), bytes, bad);
        if scan.end < scan.file_len {
            println!("  torn tail   {} bytes after the last whole cell", scan.file_len - scan.end);
        }
        Ok(())
    } else {
        Err(fragstate_core::Error::format(
            path.display().to_string(),
            format!("not a fragstate manifest or fragment (starts with {:02x?})", &magic[..got]),
        ))
    }
}
