//! `fragstate bench net`: fragstate write/read between processes on
//! loopback versus raw libp2p streams, with and without the cluster key.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use fragstate_client::transport::Transport;
use fragstate_client::Client;
use fragstate_core::{Error, Result};
use fragstate_net::key::write_cluster_key;
use fragstate_net::wire::{self, Kind};
use fragstate_net::{Membership, NetNode};

use libp2p::Multiaddr;

use fragstate_core::sample::state_like;
use crate::args::{ClusterArgs, CodingArgs, KeyArgs, MembershipArgs, parse_bytes};
use crate::cluster::{connect, read_and_compare, runtime, served_stream};

#[derive(Args)]
pub(crate) struct BenchNetArgs {
    #[command(flatten)]
    pub coding: CodingArgs,
    /// Storage node processes to start.
    #[arg(long, default_value_t = 6)]
    pub nodes: usize,
    /// Object size for the write and read figures.
    #[arg(long, default_value = "200MiB", value_parser = parse_bytes)]
    pub size: u64,
    /// Bytes per raw-stream measurement.
    #[arg(long, default_value = "512MiB", value_parser = parse_bytes)]
    pub raw_size: u64,
    /// Also run every figure without the cluster key.
    #[arg(long)]
    pub with_insecure: bool,
    /// Cells asked for beyond the k needed, per stripe (network clients use 0).
    #[arg(long, default_value_t = 0)]
    pub hedge: usize,
    /// Stripes fetched ahead of the reader.
    #[arg(long, default_value_t = 4)]
    pub read_ahead: usize,
}

pub(crate) struct Spawned {
    children: Vec<std::process::Child>,
    addr: Multiaddr,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        for c in &mut self.children {
            unsafe {
                libc_kill(c.id() as i32, 15);
            }
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
    }
}

extern "C" {
    #[link_name = "kill"]
    pub(crate) fn libc_kill(pid: i32, sig: i32) -> i32;
}

pub(crate) fn spawn_nodes(n: usize, key: Option<&std::path::Path>) -> Result<Spawned> {
    use std::io::BufRead;
    let exe = std::env::current_exe().map_err(|e| Error::io("find own executable", e))?;
    let mut sp = Spawned { children: Vec::new(), addr: Multiaddr::empty() };
    for i in 0..n {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["node", "--listen", "/ip4/127.0.0.1/tcp/0", "--memory", "8GiB", "--domain", &format!("bench-{i}"), "--repair-rate", "0", "--serve-bench-frames"]);
        // The fragment path is measured, over the full mesh (no probes or dials on demand in the
        // figures) whatever the environment says; the client below is a mesh node too.
        cmd.args(["--membership", "mesh"]);
        match key {
            Some(k) => cmd.arg("--key-file").arg(k),
            None => cmd.arg("--insecure-no-cluster-key"),
        };
        if i > 0 {
            cmd.arg("--bootstrap").arg(sp.addr.to_string());
        }
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().map_err(|e| Error::io("spawn node", e))?;
        let out = child.stdout.take().expect("piped");
        sp.children.push(child);
        let mut addr = None;
        for line in std::io::BufReader::new(out).lines() {
            let line = line.map_err(|e| Error::io("read node output", e))?;
            if let Some(a) = line.strip_prefix("LISTEN ") {
                addr = a.parse().ok();
                break;
            }
        }
        let addr = addr.ok_or_else(|| Error::format("node output", "no LISTEN line"))?;
        if i == 0 {
            sp.addr = addr;
        }
    }
    Ok(sp)
}

pub(crate) fn bench_net(a: BenchNetArgs) -> Result<()> {
    let params = a.coding.params()?;
    let dir = std::env::temp_dir().join(format!("fragstate-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create temp dir", e))?;
    let keyfile = dir.join("cluster.key");
    let _ = std::fs::remove_file(&keyfile);
    write_cluster_key(&keyfile)?;
    let mut modes = vec![("keyed-noise+yamux", Some(keyfile.clone()))];
    if a.with_insecure {
        modes.push(("noise+yamux (no key)", None));
    }
    println!(
        "bench net: {} storage processes on loopback, RS({},{}) cell {} B, object {} MB, raw {} MB",
        a.nodes,
        params.k(),
        params.m(),
        params.cell_size(),
        a.size / 1_000_000,
        a.raw_size / 1_000_000
    );
    let data = Arc::new(state_like(a.size as usize));
    for (name, key) in modes {
        let nodes = spawn_nodes(a.nodes, key.as_deref())?;
        let args = ClusterArgs {
            bootstrap: vec![nodes.addr.clone()],
            key: KeyArgs { key_file: key.clone(), insecure_no_cluster_key: key.is_none() },
            wait_nodes: Some(a.nodes),
            wait_timeout: Duration::from_secs(20),
            request_timeout: Duration::from_secs(60),
            membership: MembershipArgs { mode: Membership::Mesh },
        };
        let data = data.clone();
        runtime()?.block_on(async {
            let node = connect(&args, a.nodes).await?;
            let mut cfg = node.client_config(false);
            cfg.params = params;
            cfg.hedge = a.hedge;
            cfg.read_ahead = a.read_ahead;
            cfg.request_timeout = args.request_timeout;
            let c = Client::new(Arc::new(node.clone()), cfg)?;
            // Raw streams: the same connections and security, no fragstate protocol.
            let peers: Vec<libp2p::PeerId> = node.live_nodes().iter().filter_map(|n| n.id.as_str().parse().ok()).collect();
            let raw1 = raw_read(&node, &peers[..1], a.raw_size).await?;
            let rawk = raw_read(&node, &peers[..params.k().min(peers.len())], a.raw_size).await?;
            let raww = raw_write(&node, &peers[..params.fragments().min(peers.len())], a.raw_size).await?;
            // fragstate write and read of one object.
            let t = Instant::now();
            let mut w = c.create("bench/object", true).await?;
            for chunk in data.chunks(4 << 20) {
                w.write(chunk).await?;
            }
            w.close().await?;
            let wt = t.elapsed();
            let t = Instant::now();
            let mut r = c.open("bench/object").await?;
            read_and_compare(&mut r, &data, "bench/object").await?;
            let rt = t.elapsed();
            let fetched = r.stats().bytes_fetched;
            // The same object from a single peer: k=1, m=1 keeps a whole copy per holder.
            let single = fragstate_core::params::CodingParams::new(1, 1, params.cell_size() as u64, params.compression())?;
            let mut w = c.create_with("bench/single", single, true).await?;
            for chunk in data.chunks(4 << 20) {
                w.write(chunk).await?;
            }
            w.close().await?;
            let c1 = Client::new(Arc::new(node.clone()), fragstate_client::ClientConfig { hedge: 0, ..node.client_config(false) })?;
            let t = Instant::now();
            read_and_compare(&mut c1.open("bench/single").await?, &data, "bench/single").await?;
            let st = t.elapsed();
            let mb = |b: u64, d: Duration| b as f64 / d.as_secs_f64() / 1e6;
            println!("[{name}]");
            println!("  raw stream read, 1 peer          {:8.1} MB/s", raw1);
            println!("  raw stream read, {} peers         {:8.1} MB/s", params.k(), rawk);
            println!("  raw stream write, {} peers        {:8.1} MB/s", params.fragments(), raww);
            println!("  fragstate write (object bytes)   {:8.1} MB/s  ({:.2} s; wire bytes ×{:.2})", mb(a.size, wt), wt.as_secs_f64(), params.storage_overhead());
            println!(
                "  fragstate read, {} peers          {:8.1} MB/s  ({:.2} s; hedge {}, read-ahead {}: {:.0} MB fetched)",
                params.k(),
                mb(a.size, rt),
                rt.as_secs_f64(),
                a.hedge,
                a.read_ahead,
                fetched as f64 / 1e6
            );
            println!("  fragstate read, 1 peer (k=1)     {:8.1} MB/s  ({:.2} s)", mb(a.size, st), st.as_secs_f64());
            println!(
                "  read vs raw (k peers): {:.0} %   write wire bytes vs raw write: {:.0} %",
                100.0 * mb(a.size, rt) / rawk,
                100.0 * mb(a.size, wt) * params.storage_overhead() / raww
            );
            node.shutdown().await;
            Ok::<_, Error>(())
        })?;
        drop(nodes);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Reads `total` bytes split over `peers` in parallel through raw frames; MB/s.
pub(crate) async fn raw_read(node: &NetNode, peers: &[libp2p::PeerId], total: u64) -> Result<f64> {
    let per = total / peers.len() as u64;
    let t = Instant::now();
    let jobs = peers.iter().map(|&p| async move {
        let mut s = served_stream(node, p).await?;
        wire::write_frame(&mut s, Kind::BenchSource, &wire::encode(&per), &[]).await?;
        let mut got = 0u64;
        loop {
            match wire::read_frame(&mut s, wire::Expect::response(Kind::BenchSource)).await? {
                Some(f) if f.kind == Kind::CellData => got += f.body.len() as u64,
                Some(f) if f.kind == Kind::Ok => break,
                other => return Err(Error::format("bench stream", format!("unexpected {:?}", other.map(|f| f.kind)))),
            }
        }
        Ok::<u64, Error>(got)
    });
    let got: u64 = futures::future::try_join_all(jobs).await?.into_iter().sum();
    Ok(got as f64 / t.elapsed().as_secs_f64() / 1e6)
}

/// Writes `total` bytes split over `peers` in parallel as 1 MiB frames; MB/s.
pub(crate) async fn raw_write(node: &NetNode, peers: &[libp2p::PeerId], total: u64) -> Result<f64> {
    let per = total / peers.len() as u64;
    let t = Instant::now();
    let chunk = vec![0xa5u8; 1 << 20];
    let jobs = peers.iter().map(|&p| {
        let chunk = &chunk;
        async move {
            let mut s = served_stream(node, p).await?;
            let mut left = per;
            let mut frames = 0;
            // Pipelined like an upload: all frames first, then their acks.
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                wire::write_frame(&mut s, Kind::BenchSink, &chunk[..n], &[]).await?;
                frames += 1;
                left -= n as u64;
            }
            for _ in 0..frames {
                match wire::read_frame(&mut s, wire::Expect::response(Kind::BenchSink)).await? {
                    Some(f) if f.kind == Kind::Ok => {}
                    _ => return Err(Error::format("bench stream", "no ack")),
                }
            }
            Ok::<u64, Error>(per)
        }
    });
    let sent: u64 = futures::future::try_join_all(jobs).await?.into_iter().sum();
    Ok(sent as f64 / t.elapsed().as_secs_f64() / 1e6)
}
