//! The `fragstate` command: benchmarks of the codec and the in-process mesh,
//! and `inspect` for manifest and fragment files.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use clap::{Args, Parser, Subcommand};
use fragstate_core::codec::StripeCodec;
use fragstate_core::format::{self, FRAGMENT_MAGIC, MANIFEST_MAGIC};
use fragstate_client::mesh::Mesh;
use fragstate_client::{Client, ClientConfig};
use fragstate_core::params::{CodingParams, Compression};
use fragstate_store as store;

mod netcli;

#[derive(Parser)]
#[command(name = "fragstate", version, about = "Erasure-coded, fragment-based state storage for Apache Flink")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Throughput benchmarks.
    #[command(subcommand)]
    Bench(Bench),
    /// Decodes a manifest or fragment file and prints its header.
    Inspect {
        file: PathBuf,
    },
    /// Runs a node of a fragstate cluster until SIGTERM.
    Node(netcli::NodeArgs),
    /// Writes a new random cluster key file.
    Keygen {
        file: PathBuf,
    },
    /// Stores a local file (or stdin: -) as an object.
    Put {
        #[command(flatten)]
        cluster: netcli::ClusterArgs,
        #[command(flatten)]
        coding: CodingArgs,
        /// Replace an existing object.
        #[arg(long)]
        overwrite: bool,
        src: PathBuf,
        path: String,
    },
    /// Reads an object into a local file (or stdout: -).
    Get {
        #[command(flatten)]
        cluster: netcli::ClusterArgs,
        path: String,
        dst: PathBuf,
    },
    /// Deletes an object (with -r, everything under path/ too).
    Rm {
        #[command(flatten)]
        cluster: netcli::ClusterArgs,
        #[arg(short, long)]
        recursive: bool,
        path: String,
    },
    /// Lists objects under a prefix.
    Ls {
        #[command(flatten)]
        cluster: netcli::ClusterArgs,
        #[arg(default_value = "")]
        prefix: String,
    },
    /// Per-node usage, degraded objects and bytes to repair.
    Stats {
        #[command(flatten)]
        cluster: netcli::ClusterArgs,
        /// The full debug-formatted record of each node.
        #[arg(long)]
        raw: bool,
    },
    /// Sends one malformed frame to a node and reports whether it dropped the connection (tests).
    #[command(hide = true)]
    DebugFrame {
        #[command(flatten)]
        cluster: netcli::ClusterArgs,
        #[arg(long, value_enum)]
        bad: netcli::BadFrame,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// Encode, decode and reconstruct throughput of one core, checksums included.
    Codec {
        #[command(flatten)]
        coding: CodingArgs,
        /// Object bytes per measurement.
        #[arg(long, default_value = "1GiB", value_parser = parse_bytes)]
        size: u64,
        /// Data cells lost per stripe in the reconstruct measurement (default: min(m, k)).
        #[arg(long)]
        lost: Option<usize>,
        /// Measurements per figure; the median is reported.
        #[arg(long, default_value_t = 5)]
        repeat: usize,
    },
    /// Writes then reads one object through an in-process mesh with failed holders.
    Mesh {
        #[command(flatten)]
        coding: CodingArgs,
        /// Nodes in the mesh.
        #[arg(long, default_value_t = 6)]
        nodes: usize,
        /// Holders of the object killed before it is read back.
        #[arg(long, default_value_t = 0)]
        failed: usize,
        /// Object size.
        #[arg(long, default_value = "1GiB", value_parser = parse_bytes)]
        size: u64,
        /// Bytes per write and read call (Flink's stream buffers are small; the JNI layer batches).
        #[arg(long, default_value = "1MiB", value_parser = parse_bytes)]
        chunk: u64,
        /// Runtime worker threads.
        #[arg(long, default_value_t = 2)]
        threads: usize,
    },
    /// Throughput between processes on loopback: fragstate write/read versus raw libp2p streams.
    Net(netcli::BenchNetArgs),
}

#[derive(Args)]
struct CodingArgs {
    /// Data fragments per object (k).
    #[arg(long, default_value_t = 4)]
    k: usize,
    /// Parity fragments per object (m).
    #[arg(long, default_value_t = 2)]
    m: usize,
    /// Cell size (bytes, or with a unit: 64KiB, 1MiB).
    #[arg(long, default_value = "1MiB", value_parser = parse_bytes)]
    cell_size: u64,
    /// zstd level for per-stripe compression (off when absent).
    #[arg(long)]
    zstd: Option<i32>,
}

impl CodingArgs {
    fn params(&self) -> fragstate_core::Result<CodingParams> {
        let c = self.zstd.map_or(Compression::None, |level| Compression::Zstd { level });
        CodingParams::new(self.k, self.m, self.cell_size, c)
    }
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    parse_size::parse_size(s).map_err(|e| format!("{s:?} is not a size ({e}); use e.g. 4096, 64KiB, 1MiB, 1GiB"))
}

fn main() {
    let cli = Cli::parse();
    // A node logs what it does; the one-shot commands only warnings.
    let default_filter = if matches!(cli.command, Command::Node(_)) { "info,libp2p_swarm=warn,libp2p_kad=warn" } else { "warn" };
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("FRAGSTATE_LOG").unwrap_or_else(|_| default_filter.into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let result = match cli.command {
        Command::Bench(Bench::Codec { coding, size, lost, repeat }) => bench_codec(&coding, size, lost, repeat),
        Command::Bench(Bench::Mesh { coding, nodes, failed, size, chunk, threads }) => bench_mesh(&coding, nodes, failed, size, chunk, threads),
        Command::Inspect { file } => inspect(&file),
        Command::Bench(Bench::Net(a)) => netcli::bench_net(a),
        Command::Node(a) => netcli::node(a),
        Command::Keygen { file } => netcli::keygen(&file),
        Command::Put { cluster, coding, overwrite, src, path } => netcli::put(cluster, coding, src, path, overwrite),
        Command::Get { cluster, path, dst } => netcli::get(cluster, path, dst),
        Command::Rm { cluster, recursive, path } => netcli::rm(cluster, path, recursive),
        Command::Ls { cluster, prefix } => netcli::ls(cluster, prefix),
        Command::Stats { cluster, raw } => netcli::stats(cluster, raw),
        Command::DebugFrame { cluster, bad } => netcli::debug_frame(cluster, bad),
    };
    if let Err(e) = result {
        eprintln!("fragstate: {e}");
        std::process::exit(1);
    }
}

fn gbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Bytes that look like serialized state: half structure, half noise.
fn sample_bytes(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 16 < 8 { (i / 64) as u8 } else { x as u8 }
        })
        .collect()
}

fn bench_codec(coding: &CodingArgs, size: u64, lost: Option<usize>, repeat: usize) -> fragstate_core::Result<()> {
    let params = coding.params()?;
    let codec = StripeCodec::new(params)?;
    let (k, m) = (params.k(), params.m());
    let lost = lost.unwrap_or(m.min(k));
    if lost > m {
        return Err(fragstate_core::Error::invalid("lost", lost, format!("0 ≤ lost ≤ m = {m}")));
    }
    let stripe_len = params.stripe_data_len() as usize;
    let stripes = (size as usize).div_ceil(stripe_len).max(1);
    let data = sample_bytes(stripe_len);
    println!(
        "bench codec: RS({k},{m}) cell {} B, {} stripes of {} B per run, {lost} data cells lost in 'reconstruct', median of {repeat}",
        params.cell_size(),
        stripes,
        stripe_len
    );
    let encode_one = || {
        let mut buf = BytesMut::with_capacity(codec.buffer_capacity());
        buf.extend_from_slice(&data);
        codec.encode(buf)
    };
    let sample = encode_one();
    let all: Vec<Option<Bytes>> = sample.cells.iter().cloned().map(Some).collect();
    let mut degraded = all.clone();
    for c in degraded.iter_mut().take(lost) {
        *c = None;
    }
    let (mut enc, mut dec, mut rec) = (Vec::new(), Vec::new(), Vec::new());
    let bytes = (stripes * stripe_len) as u64;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        for _ in 0..stripes {
            std::hint::black_box(encode_one());
        }
        enc.push(gbps(bytes, t.elapsed()));
        for (cells, out) in [(&all, &mut dec), (&degraded, &mut rec)] {
            let t = Instant::now();
            for _ in 0..stripes {
                // Verify every cell as the reader does, then decode.
                let ok = cells.iter().enumerate().all(|(i, c)| c.as_ref().is_none_or(|c| codec.cell_is_valid(&sample.info, i, c)));
                assert!(ok);
                std::hint::black_box(codec.decode("bench", 0, &sample.info, stripe_len, cells)?);
            }
            out.push(gbps(bytes, t.elapsed()));
        }
    }
    println!("encode       {:6.2} GB/s  (object bytes in; buffer copy, RS parity, xxh3 of k+m cells)", median(enc));
    println!("decode       {:6.2} GB/s  (all data cells present: verify + concatenate)", median(dec));
    println!("reconstruct  {:6.2} GB/s  ({lost} data cells missing: verify + RS reconstruct)", median(rec));
    Ok(())
}

fn bench_mesh(coding: &CodingArgs, nodes: usize, failed: usize, size: u64, chunk: u64, threads: usize) -> fragstate_core::Result<()> {
    let params = coding.params()?;
    if failed > params.fragments() {
        return Err(fragstate_core::Error::invalid("failed", failed, format!("0 ≤ failed ≤ k + m = {}", params.fragments())));
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(threads.max(1)).enable_all().build().map_err(|e| fragstate_core::Error::io("start runtime", e))?;
    rt.block_on(async {
        let mesh = Mesh::in_memory(nodes, u64::MAX);
        let client = Client::new(mesh.clone(), ClientConfig { params, ..ClientConfig::default() })?;
        let block = sample_bytes(chunk as usize);
        println!(
            "bench mesh: {nodes} nodes, RS({},{}) cell {} B, object {size} B in {chunk} B writes, {failed} holders failed for the read, {threads} runtime threads",
            params.k(),
            params.m(),
            params.cell_size()
        );
        let t = Instant::now();
        let mut w = client.create("bench/object", true).await?;
        let mut left = size;
        let mut last = Instant::now();
        while left > 0 {
            let n = left.min(chunk) as usize;
            w.write(&block[..n]).await?;
            left -= n as u64;
            if last.elapsed() > Duration::from_secs(2) {
                eprintln!("  written {} MiB", (size - left) >> 20);
                last = Instant::now();
            }
        }
        let man = w.close().await?;
        let write = t.elapsed();
        for h in man.holders.iter().take(failed) {
            mesh.kill(h)?;
        }
        let t = Instant::now();
        let mut r = client.open("bench/object").await?;
        let mut buf = vec![0u8; chunk as usize];
        let mut total = 0u64;
        loop {
            let n = match r.read(&mut buf).await {
                Ok(n) => n,
                // More losses than m: show what a reader is told, then stop.
                Err(e) if failed > params.m() => {
                    println!("write  {:6.2} GB/s  ({:.2} s)", gbps(size, write), write.as_secs_f64());
                    println!("read   failed after {total} bytes, as it must with {failed} > m = {} holders lost:\n       {e}", params.m());
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        let read = t.elapsed();
        assert_eq!(total, size);
        let st = r.stats();
        println!("write  {:6.2} GB/s  ({:.2} s)", gbps(size, write), write.as_secs_f64());
        println!(
            "read   {:6.2} GB/s  ({:.2} s; {} stripes, {} reconstructed, {} cells from {} peers)",
            gbps(size, read),
            read.as_secs_f64(),
            st.stripes,
            st.reconstructed_stripes,
            st.cells,
            st.peers.len()
        );
        Ok(())
    })
}

fn inspect(path: &PathBuf) -> fragstate_core::Result<()> {
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
