//! Random bit flips in stored fragment files (issue 12): each of at least
//! 10,000 single-bit flips in a cell's bytes on disk is found, no read ever
//! returns a wrong byte, and the flipped cell is rebuilt from the other
//! holders, byte for byte. Set `FRAGSTATE_FLIPS` for more (or fewer) flips.
//!
//! One flip at a time, each followed by a read of the object through a client
//! (which must return the written bytes, using parity where the flipped cell
//! is a data cell, and reports that cell) and a scrub pass of the flipped
//! node (which must find exactly one corrupt cell, the reported one or one it
//! reads from its store, and rewrite the file as it was).

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use fragstate_client::mesh::Mesh;
use fragstate_client::scrub::ScrubConfig;
use fragstate_client::scrubber::Scrubber;
use fragstate_client::{Client, ClientConfig};
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::sample::noise as payload;
use fragstate_store::{scan_fragment_file, FragmentStore};

const CELL: u64 = 4096;
const NODES: usize = 6;

/// splitmix64: a reproducible sequence of positions to flip.
struct Positions(u64);

impl Positions {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % below
    }
}

fn fragment_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for i in 0..NODES {
        let node = format!("mesh-{i}");
        for e in fs::read_dir(dir.join(&node).join("fragments")).unwrap() {
            out.push((node.clone(), e.unwrap().path()));
        }
    }
    out.sort();
    out
}

#[test]
fn every_flipped_bit_in_a_stored_cell_is_found_and_never_read_back() {
    let flips: usize = std::env::var("FRAGSTATE_FLIPS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mesh = Mesh::from_stores(
            (0..NODES)
                .map(|i| {
                    let name = format!("mesh-{i}");
                    (name.clone(), FragmentStore::open_dir(name.clone(), &dir.path().join(&name), u64::MAX, false).unwrap())
                })
                .collect(),
        );
        let params = CodingParams::new(4, 2, CELL, Compression::None).unwrap();
        let client = || Client::new(mesh.clone(), ClientConfig { params, hedge: 0, ..ClientConfig::default() }).unwrap();
        let c = client();
        // Three stripes, the last one short: cells of two lengths.
        let data = payload(2 * 4 * CELL as usize + 5_000, 7);
        let path = "fragstate://c/j/chk-1/flipped";
        let mut w = c.create(path, false).await.unwrap();
        w.write(&data).await.unwrap();
        w.close().await.unwrap();

        let files = fragment_files(dir.path());
        assert_eq!(files.len(), NODES, "one fragment per node");
        let mut scrubbers: Vec<_> = files
            .iter()
            .map(|(node, _)| {
                let id = fragstate_core::ids::NodeId::from(node.clone());
                let shared = mesh.scrub_shared(&id).unwrap();
                let s = Scrubber::new(mesh.store(&id).unwrap(), client(), shared.clone(), ScrubConfig { rate: u64::MAX / 4, ..ScrubConfig::default() });
                (s, shared)
            })
            .collect();
        let mut at = Positions(0x5eed);
        let (mut found, mut reported, mut rebuilt, mut read_through_parity) = (0u64, 0u64, 0u64, 0u64);
        for flip in 0..flips {
            let which = at.next(files.len() as u64) as usize;
            let file = &files[which].1;
            let good = fs::read(file).unwrap();
            let f = fs::OpenOptions::new().read(true).write(true).open(file).unwrap();
            let cells = scan_fragment_file(&f, file).unwrap().cells;
            let (offset, frame) = cells[at.next(cells.len() as u64) as usize];
            let byte = offset + at.next(frame.len as u64);
            let bit = at.next(8);
            let mut b = [0u8; 1];
            f.read_exact_at(&mut b, byte).unwrap();
            f.write_all_at(&[b[0] ^ (1 << bit)], byte).unwrap();
            drop(f);

            let mut r = c.open(path).await.unwrap();
            let back = r.read_to_end().await.unwrap();
            assert!(back == data, "flip {flip} (file {}, byte {byte}, bit {bit}): a wrong byte was read", file.display());
            read_through_parity += r.stats().reconstructed_stripes;

            let (scrubber, shared) = &mut scrubbers[which];
            let before = shared.stats();
            scrubber.run_pass().await;
            let after = shared.stats();
            // A data cell the read used was reported by the reader (and is
            // confirmed first in the pass); any other is found by the pass.
            let by_report = after.corrupt_reports_confirmed - before.corrupt_reports_confirmed;
            let by_pass = after.corrupt_found - before.corrupt_found;
            assert_eq!(
                (by_report + by_pass, after.cells_rebuilt - before.cells_rebuilt),
                (1, 1),
                "flip {flip} (file {}, byte {byte}, bit {bit}) not found and rebuilt once: {after:?}",
                file.display()
            );
            found += 1;
            reported += by_report;
            rebuilt += 1;
            assert!(fs::read(file).unwrap() == good, "flip {flip}: the rebuilt file differs from the written one");
        }
        assert_eq!((found, rebuilt), (flips as u64, flips as u64));
        // About 4 of 6 flips hit a data cell, which the read replaces with parity.
        assert!(read_through_parity > 0, "no flip made a read use parity");
        println!("{flips} single-bit flips: {found} found ({reported} reported by the reader, the rest by the scrub pass), {rebuilt} rebuilt, {read_through_parity} reads through parity, 0 wrong bytes");
    });
}
