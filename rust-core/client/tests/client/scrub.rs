//! Background scrub over the in-process mesh with disk stores: bytes flipped
//! in a fragment file are found and rebuilt from the other holders, a
//! reader's report of a corrupt cell gets it rebuilt at once, and a scrubber
//! reads no more than its rate allows.

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fragstate_client::mesh::Mesh;
use fragstate_client::scrub::ScrubConfig;
use fragstate_client::scrubber::{ScrubStats, Scrubber};
use fragstate_client::{Client, ClientConfig};
use fragstate_core::format::Manifest;
use fragstate_core::ids::{FragmentKey, NodeId};
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::sample::noise as payload;
use fragstate_store::{scan_fragment_file, FragmentStore};

use crate::common::rt;

const CELL: u64 = 4096;

fn disk_mesh(dir: &Path, n: usize) -> Arc<Mesh> {
    Mesh::from_stores(
        (0..n)
            .map(|i| {
                let name = format!("mesh-{i}");
                (name.clone(), FragmentStore::open_dir(name.clone(), &dir.join(&name), u64::MAX, true).unwrap())
            })
            .collect(),
    )
}

fn client(mesh: &Arc<Mesh>) -> Client {
    let params = CodingParams::new(4, 2, CELL, Compression::None).unwrap();
    Client::new(mesh.clone(), ClientConfig { params, hedge: 0, ..ClientConfig::default() }).unwrap()
}

async fn write(c: &Client, path: &str, data: &[u8]) -> Arc<Manifest> {
    let mut w = c.create(path, false).await.unwrap();
    w.write(data).await.unwrap();
    w.close().await.unwrap()
}

fn key(m: &Manifest, index: u8) -> FragmentKey {
    FragmentKey { path: Arc::from(m.path.as_str()), write_id: m.write_id, index }
}

/// The one fragment file of a node's disk store that holds a single fragment.
fn fragment_file(dir: &Path, node: &NodeId) -> PathBuf {
    let files: Vec<_> = fs::read_dir(dir.join(node.as_str()).join("fragments")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// Flips `n` bytes of the cell of `stripe` in a fragment file, behind the store's back.
fn flip_on_disk(file: &Path, stripe: usize, n: usize) {
    let f = fs::OpenOptions::new().read(true).write(true).open(file).unwrap();
    let scan = scan_fragment_file(&f, file).unwrap();
    let (offset, frame) = scan.cells[stripe];
    for i in 0..n.min(frame.len as usize) {
        let at = offset + (i * 97 % frame.len as usize) as u64;
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, at).unwrap();
        f.write_all_at(&[!b[0]], at).unwrap();
    }
}

async fn read_back(c: &Client, path: &str) -> (Vec<u8>, u64) {
    let mut r = c.open(path).await.unwrap();
    let data = r.read_to_end().await.unwrap();
    (data, r.stats().reconstructed_stripes)
}

#[test]
fn scrub_rebuilds_a_cell_whose_bytes_were_flipped_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let mesh = disk_mesh(dir.path(), 6);
        let c = client(&mesh);
        let data = payload(5 * 4 * CELL as usize + 100, 11);
        let m = write(&c, "fragstate://c/j/chk-1/scrubbed", &data).await;
        // Data fragment 1: a read of stripe 2 needs it (or a fallback to parity).
        let holder = m.holders[1].clone();
        let file = fragment_file(dir.path(), &holder);
        let good = fs::read(&file).unwrap();
        flip_on_disk(&file, 2, 5);
        assert_ne!(fs::read(&file).unwrap(), good);

        let shared = mesh.scrub_shared(&holder).unwrap();
        let cfg = ScrubConfig { rate: u64::MAX / 4, ..ScrubConfig::default() };
        let mut scrubber = Scrubber::new(mesh.store(&holder).unwrap(), client(&mesh), shared.clone(), cfg);
        scrubber.run_pass().await;
        let st = shared.stats();
        assert_eq!(
            (st.passes, st.cells_scrubbed, st.corrupt_found, st.cells_rebuilt, st.rebuild_failures),
            (1, m.stripes.len() as u64, 1, 1, 0),
            "{st:?}"
        );
        assert_eq!(fs::read(&file).unwrap(), good, "the fragment file is as written again");
        let (back, reconstructed) = read_back(&c, &m.path).await;
        assert_eq!(back, data);
        assert_eq!(reconstructed, 0, "the read needed no parity");
        assert_eq!(c.stats().corrupt_cells, 0);

        // A second pass finds nothing; the other nodes' passes find nothing either.
        scrubber.run_pass().await;
        assert_eq!(shared.stats().corrupt_found, 1);
        for id in mesh.node_ids().into_iter().filter(|id| *id != holder) {
            let sh = mesh.scrub_shared(&id).unwrap();
            Scrubber::new(mesh.store(&id).unwrap(), client(&mesh), sh.clone(), ScrubConfig { rate: u64::MAX / 4, ..ScrubConfig::default() })
                .run_pass()
                .await;
            let st = sh.stats();
            assert_eq!((st.corrupt_found, st.cells_rebuilt), (0, 0), "{id}: {st:?}");
        }
    });
}

#[test]
fn a_read_over_a_corrupt_cell_gets_it_rebuilt_without_waiting_for_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let mesh = disk_mesh(dir.path(), 6);
        let c = client(&mesh);
        let data = payload(3 * 4 * CELL as usize, 12);
        let m = write(&c, "fragstate://c/j/chk-1/reported", &data).await;
        let holder = m.holders[0].clone();
        let file = fragment_file(dir.path(), &holder);
        let good = fs::read(&file).unwrap();
        flip_on_disk(&file, 1, 1);

        // Every node scrubs with the background pass off: only reports are served.
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut tasks = Vec::new();
        for id in mesh.node_ids() {
            let s = Scrubber::new(
                mesh.store(&id).unwrap(),
                client(&mesh),
                mesh.scrub_shared(&id).unwrap(),
                ScrubConfig { rate: 0, ..ScrubConfig::default() },
            );
            let mut stopped = stopped.clone();
            tasks.push(tokio::spawn(s.run(async move {
                let _ = stopped.wait_for(|s| *s).await;
            })));
        }
        let (back, reconstructed) = read_back(&c, &m.path).await;
        assert_eq!(back, data);
        assert_eq!(reconstructed, 1, "the corrupt data cell made one stripe need parity");
        assert_eq!((c.stats().corrupt_cells, c.stats().corrupt_cells_reported), (1, 1));

        let shared = mesh.scrub_shared(&holder).unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while shared.stats().cells_rebuilt == 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let st = shared.stats();
        assert_eq!((st.corrupt_reports, st.corrupt_reports_confirmed, st.cells_rebuilt, st.passes), (1, 1, 1, 0), "{st:?}");
        assert_eq!(fs::read(&file).unwrap(), good, "the reported cell was rebuilt in its file");
        let (back, reconstructed) = read_back(&c, &m.path).await;
        assert_eq!((back == data, reconstructed), (true, 0));
        assert_eq!(c.stats().corrupt_cells, 1, "no corrupt cell the second time");

        // A report of a good cell (a flip on the way, say) rewrites nothing.
        let other = mesh.scrub_shared(&m.holders[2]).unwrap();
        other.report(key(&m, 2), 0);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while other.stats().cells_scrubbed == 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let st = other.stats();
        assert_eq!((st.corrupt_reports, st.cells_scrubbed, st.corrupt_reports_confirmed, st.cells_rebuilt), (1, 1, 0, 0), "{st:?}");
        stop.send(true).unwrap();
        for t in tasks {
            t.await.unwrap();
        }
    });
}

/// The scrubber keeps the planner's pace on a real clock: one node's scrubber,
/// with plenty of work, never reads more than `rate × (elapsed + 1 s)` plus a
/// cell (the token bucket's bound), and does read — at least half the rate,
/// loose because a busy machine may starve it. The exact pace is the
/// planner's proptest (`scrub_keeps_its_rate`, no clock at all). A real
/// clock, not tokio's paused one: `test-util` on tokio here would give every
/// `cargo test --workspace` build other tokio features than the binaries
/// ci/test.sh builds next, and ~3 minutes of CPU to compile it all again.
#[test]
fn scrub_reads_at_its_rate() {
    rt().block_on(async {
        let mesh = Mesh::in_memory(6, u64::MAX);
        let c = client(&mesh);
        // 8 objects of 10 stripes: 80 cells of 4 KiB on each node.
        for i in 0..8 {
            write(&c, &format!("fragstate://c/j/chk-1/{i}"), &payload(10 * 4 * CELL as usize, i)).await;
        }
        let id = mesh.node_ids()[0].clone();
        let shared = mesh.scrub_shared(&id).unwrap();
        let rate = 64 * CELL; // 256 KiB/s: a pass of 80 cells takes 1.25 s
        let cfg = ScrubConfig { rate, pass_interval: Duration::ZERO, ..ScrubConfig::default() };
        let scrubber = Scrubber::new(mesh.store(&id).unwrap(), client(&mesh), shared.clone(), cfg);
        let secs = 3;
        let started = std::time::Instant::now();
        scrubber.run(tokio::time::sleep(Duration::from_secs(secs))).await;
        let elapsed = started.elapsed().as_secs_f64();
        let ScrubStats { bytes_scrubbed, cells_scrubbed, passes, corrupt_found, .. } = shared.stats();
        let most = (rate as f64 * (elapsed + 1.0)) as u64 + CELL;
        assert!(bytes_scrubbed <= most, "{bytes_scrubbed} bytes in {elapsed:.2} s at {rate} B/s: more than {most}");
        assert!(bytes_scrubbed >= rate * secs / 2, "{bytes_scrubbed} bytes in {elapsed:.2} s at {rate} B/s: under half the rate");
        assert_eq!(bytes_scrubbed, cells_scrubbed * CELL);
        assert!(passes >= 1, "{passes} passes of 80 cells at 64 cells/s in {elapsed:.2} s");
        assert_eq!(corrupt_found, 0);
    });
}

/// Figure, not a check: how fast one node verifies its cells with no rate
/// limit (disk store, page cache warm). Run with
/// `cargo test --profile ci -p fragstate-client --test client scrub:: -- --ignored --nocapture`.
#[test]
#[ignore]
fn scrub_throughput_unlimited() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let mesh = disk_mesh(dir.path(), 6);
        let params = CodingParams::new(4, 2, 1 << 20, Compression::None).unwrap();
        let c = Client::new(mesh.clone(), ClientConfig { params, hedge: 0, ..ClientConfig::default() }).unwrap();
        for i in 0..4 {
            write(&c, &format!("fragstate://c/j/chk-1/big-{i}"), &payload(64 << 20, i)).await;
        }
        let id = mesh.node_ids()[0].clone();
        let shared = mesh.scrub_shared(&id).unwrap();
        let mut s = Scrubber::new(mesh.store(&id).unwrap(), client(&mesh), shared.clone(), ScrubConfig { rate: u64::MAX / 4, ..ScrubConfig::default() });
        let t = std::time::Instant::now();
        s.run_pass().await;
        let secs = t.elapsed().as_secs_f64();
        let st = shared.stats();
        println!("scrub: {} cells, {} MiB in {:.3} s = {:.0} MiB/s", st.cells_scrubbed, st.bytes_scrubbed >> 20, secs, st.bytes_scrubbed as f64 / (1 << 20) as f64 / secs);
    });
}
