//! The network commands of the `fragstate` binary: `node` (a standalone
//! node), `put`/`get`/`rm`/`ls`/`stats` (a client node that joins the
//! cluster, waits for storage peers and uses [`Client`]), `keygen`,
//! `bench net`, and `debug-frame` (sends a malformed frame, for tests).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use fragstate_net::key::{load_cluster_key, write_cluster_key};
use fragstate_net::wire::{self, Kind};
use fragstate_net::{open_disk_node, NetConfig, NetNode, Role, ServiceConfig};
use fragstate_store::{DirLock, FragmentStore};
use fragstate_client::transport::Transport;
use fragstate_client::Client;
use fragstate_core::{Error, Result};
use futures::AsyncWriteExt;
use libp2p::identity::Keypair;
use libp2p::pnet::PreSharedKey;
use libp2p::Multiaddr;

use crate::{parse_bytes, CodingArgs};

fn parse_secs(s: &str) -> std::result::Result<Duration, String> {
    let v: f64 = s.trim_end_matches('s').parse().map_err(|_| format!("{s:?} is not a number of seconds (e.g. 10, 0.5s)"))?;
    if !(0.0..=1e7).contains(&v) {
        return Err(format!("{s:?}: allowed 0 to 10000000 seconds"));
    }
    Ok(Duration::from_secs_f64(v))
}

#[derive(Args, Clone)]
pub struct KeyArgs {
    /// Cluster key file (libp2p swarm key: "/key/swarm/psk/1.0.0/", "/base16/", 64 hex digits); see `fragstate keygen`.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Run an open cluster without a key: anyone who reaches the port can join, read and write.
    #[arg(long)]
    pub insecure_no_cluster_key: bool,
}

impl KeyArgs {
    fn load(&self) -> Result<Option<PreSharedKey>> {
        match (&self.key_file, self.insecure_no_cluster_key) {
            (Some(_), true) => Err(Error::invalid("--insecure-no-cluster-key", "set", "not together with --key-file")),
            (Some(f), false) => Ok(Some(load_cluster_key(f)?)),
            (None, true) => Ok(None),
            (None, false) => Err(Error::invalid(
                "cluster key",
                "none",
                "--key-file FILE (create one with `fragstate keygen FILE`), or --insecure-no-cluster-key for an open cluster",
            )),
        }
    }
}

#[derive(Args)]
pub struct NodeArgs {
    /// Listen address (repeatable).
    #[arg(long, default_value = "/ip4/0.0.0.0/tcp/7710")]
    pub listen: Vec<Multiaddr>,
    /// Multiaddr of a running node to join through (repeatable).
    #[arg(long)]
    pub bootstrap: Vec<Multiaddr>,
    #[command(flatten)]
    pub key: KeyArgs,
    /// Store fragments in this directory (survives restarts; the node identity is kept there too).
    #[arg(long, conflicts_with = "memory")]
    pub store_dir: Option<PathBuf>,
    /// Keep fragments in memory, at most this many bytes.
    #[arg(long, value_parser = parse_bytes)]
    pub memory: Option<u64>,
    /// Capacity of a disk store (default: unlimited).
    #[arg(long, value_parser = parse_bytes)]
    pub capacity: Option<u64>,
    /// Do not fsync fragments and manifests (tests, benchmarks).
    #[arg(long)]
    pub no_fsync: bool,
    /// Failure domain: `host` (default: the host name), `process`
    /// (`<hostname>/<pid>`) or a literal label.
    #[arg(long)]
    pub domain: Option<String>,
    /// storage (holds fragments) or client.
    #[arg(long, default_value = "storage")]
    pub role: Role,
    /// Seconds a holder must be gone before its fragments are rebuilt elsewhere.
    #[arg(long, default_value = "10", value_parser = parse_secs)]
    pub repair_after: Duration,
    /// Repair rate limit in bytes per second (0 disables repair).
    #[arg(long, default_value = "200MiB", value_parser = parse_bytes)]
    pub repair_rate: u64,
    /// Seconds after which fragments that no manifest commits are reclaimed.
    #[arg(long, default_value = "600", value_parser = parse_secs)]
    pub reclaim_after: Duration,
    /// Seconds between reclaim scans.
    #[arg(long, default_value = "30", value_parser = parse_secs)]
    pub reclaim_interval: Duration,
}

#[derive(Args, Clone)]
pub struct ClusterArgs {
    /// Multiaddr of a cluster node (repeatable).
    #[arg(long, required = true)]
    pub bootstrap: Vec<Multiaddr>,
    #[command(flatten)]
    pub key: KeyArgs,
    /// Storage nodes to wait for before starting (default: k+m for put, 1 otherwise; then until no more join for 0.5 s).
    #[arg(long)]
    pub wait_nodes: Option<usize>,
    /// Seconds to wait for them.
    #[arg(long, default_value = "15", value_parser = parse_secs)]
    pub wait_timeout: Duration,
    /// Per-request timeout in seconds.
    #[arg(long, default_value = "30", value_parser = parse_secs)]
    pub request_timeout: Duration,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| Error::io("start runtime", e))
}

pub fn keygen(file: &std::path::Path) -> Result<()> {
    write_cluster_key(file)?;
    println!("wrote a new cluster key to {}", file.display());
    Ok(())
}

pub fn node(args: NodeArgs) -> Result<()> {
    let psk = args.key.load()?;
    let rt = runtime()?;
    rt.block_on(async move {
        let (store, identity, tombstones) = match (&args.store_dir, args.memory) {
            (Some(dir), _) => {
                let (identity, store, tombstones) =
                    open_disk_node(DirLock::acquire(dir)?, args.capacity.unwrap_or(u64::MAX), !args.no_fsync)?;
                (Some(Arc::new(store)), identity, Some(tombstones))
            }
            (None, Some(budget)) => {
                let identity = Keypair::generate_ed25519();
                let name = identity.public().to_peer_id().to_base58();
                (Some(Arc::new(FragmentStore::in_memory(name, budget))), identity, None)
            }
            (None, None) if args.role == Role::Client => (None, Keypair::generate_ed25519(), None),
            (None, None) => return Err(Error::invalid("store", "none", "--store-dir DIR or --memory BYTES for a storage node")),
        };
        let store = if args.role == Role::Client { None } else { store };
        let mut cfg = NetConfig::new(identity, args.role, psk);
        cfg.listen = args.listen.clone();
        cfg.bootstrap = args.bootstrap.clone();
        cfg.store = store;
        cfg.tombstone_file = tombstones;
        cfg.domain = fragstate_net::failure_domain(args.domain.as_deref());
        let node = NetNode::start(cfg).await?;
        node.start_services(ServiceConfig {
            repair_after: args.repair_after,
            repair_rate: args.repair_rate,
            reclaim_after: args.reclaim_after,
            reclaim_interval: args.reclaim_interval,
            ..ServiceConfig::default()
        });
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "PEER {}", node.id());
            for a in node.listen_addrs() {
                let _ = writeln!(out, "LISTEN {a}");
            }
            let _ = out.flush();
        }
        tracing::info!(peer = %node.id(), role = ?node.role(), "node running; SIGTERM or Ctrl-C stops it");
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|e| Error::io("install SIGTERM handler", e))?;
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
            _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: shutting down"),
        }
        node.shutdown().await;
        tracing::info!("node stopped");
        Ok(())
    })
}

/// Joins the cluster as a client node and waits for `need` storage nodes,
/// then until no further node joins for half a second.
async fn connect(args: &ClusterArgs, need: usize) -> Result<NetNode> {
    let mut cfg = NetConfig::new(Keypair::generate_ed25519(), Role::Client, args.key.load()?);
    cfg.listen = Vec::new();
    cfg.bootstrap = args.bootstrap.clone();
    cfg.request_timeout = args.request_timeout;
    let node = NetNode::start(cfg).await?;
    node.wait_for_storage_nodes(need, args.wait_timeout).await?;
    if args.wait_nodes.is_some() {
        // The caller said how many to expect: no need to wait for stragglers.
        return Ok(node);
    }
    let mut n = node.live_nodes().len();
    let mut stable_since = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(3);
    while stable_since.elapsed() < Duration::from_millis(500) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = node.live_nodes().len();
        if now != n {
            n = now;
            stable_since = Instant::now();
        }
    }
    tracing::info!(storage_nodes = n, "joined the cluster");
    Ok(node)
}

fn client(node: &NetNode, args: &ClusterArgs, coding: Option<&CodingArgs>) -> Result<Client> {
    let mut cfg = node.client_config(false);
    cfg.request_timeout = args.request_timeout;
    if let Some(c) = coding {
        cfg.params = c.params()?;
    }
    Client::new(Arc::new(node.clone()), cfg)
}

struct Progress {
    what: &'static str,
    total: Option<u64>,
    started: Instant,
    last: Instant,
}

impl Progress {
    fn new(what: &'static str, total: Option<u64>) -> Self {
        Progress { what, total, started: Instant::now(), last: Instant::now() }
    }

    fn update(&mut self, done: u64) {
        if self.last.elapsed() >= Duration::from_secs(1) {
            self.last = Instant::now();
            let rate = done as f64 / self.started.elapsed().as_secs_f64() / 1e6;
            match self.total {
                Some(t) => eprintln!("{}: {} of {} MB, {rate:.0} MB/s", self.what, done / 1_000_000, t / 1_000_000),
                None => eprintln!("{}: {} MB, {rate:.0} MB/s", self.what, done / 1_000_000),
            }
        }
    }

    fn done(&self, bytes: u64) -> String {
        let s = self.started.elapsed().as_secs_f64();
        format!("{bytes} bytes in {s:.3} s ({:.1} MB/s)", bytes as f64 / s.max(1e-9) / 1e6)
    }
}

pub fn put(args: ClusterArgs, coding: CodingArgs, src: PathBuf, path: String, overwrite: bool) -> Result<()> {
    let params = coding.params()?;
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(params.fragments())).await?;
        let r = async {
            let c = client(&node, &args, Some(&coding))?;
            let (mut input, total): (Box<dyn Read + Send>, Option<u64>) = if src.as_os_str() == "-" {
                (Box::new(std::io::stdin()), None)
            } else {
                let f = std::fs::File::open(&src).map_err(|e| Error::io(format!("open {}", src.display()), e))?;
                let len = f.metadata().map(|m| m.len()).ok();
                (Box::new(f), len)
            };
            let mut w = c.create(&path, overwrite).await?;
            let mut progress = Progress::new("put", total);
            let mut buf = vec![0u8; 4 << 20];
            loop {
                let n = tokio::task::block_in_place(|| input.read(&mut buf)).map_err(|e| Error::io(format!("read {}", src.display()), e))?;
                if n == 0 {
                    break;
                }
                w.write(&buf[..n]).await?;
                progress.update(w.position());
            }
            let m = w.close().await?;
            println!("put {path}: {}; replaced {}; holders {:?}", progress.done(m.length), c.stats().fragments_replaced, m.holders);
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}

pub fn get(args: ClusterArgs, path: String, dst: PathBuf) -> Result<()> {
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(1)).await?;
        let r = async {
            let c = client(&node, &args, None)?;
            let mut r = c.open(&path).await?;
            let total = r.len();
            let mut out: Box<dyn Write + Send> = if dst.as_os_str() == "-" {
                Box::new(std::io::stdout())
            } else {
                Box::new(std::fs::File::create(&dst).map_err(|e| Error::io(format!("create {}", dst.display()), e))?)
            };
            let mut progress = Progress::new("get", Some(total));
            let mut buf = vec![0u8; 4 << 20];
            loop {
                let n = r.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                tokio::task::block_in_place(|| out.write_all(&buf[..n])).map_err(|e| Error::io(format!("write {}", dst.display()), e))?;
                progress.update(r.position());
            }
            out.flush().map_err(|e| Error::io(format!("write {}", dst.display()), e))?;
            let st = r.stats();
            eprintln!("get {path}: {}; {st:?}", progress.done(total));
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}

pub fn rm(args: ClusterArgs, path: String, recursive: bool) -> Result<()> {
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(1)).await?;
        let r = async {
            let st = client(&node, &args, None)?.delete(&path, recursive).await?;
            println!("deleted {path}: {} objects; {} manifest copies, {} fragments, {} bytes", st.objects, st.removed.manifests, st.removed.fragments, st.removed.bytes);
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}

pub fn ls(args: ClusterArgs, prefix: String) -> Result<()> {
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(1)).await?;
        let r = async {
            for s in client(&node, &args, None)?.list(&prefix).await? {
                println!("{:>14} {} {}", s.length, s.created_unix_ms, s.path);
            }
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}

pub fn stats(args: ClusterArgs, json: bool) -> Result<()> {
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(1)).await?;
        let r = async {
            let mut all = Vec::new();
            for n in node.live_nodes() {
                match node.remote_stats(&n.id).await {
                    Ok(s) => all.push(s),
                    Err(e) => eprintln!("stats of {}: {e}", n.id),
                }
            }
            all.sort_by(|a, b| a.node.cmp(&b.node));
            let deg: u64 = all.iter().map(|s| s.objects_degraded).sum();
            let rep: u64 = all.iter().map(|s| s.bytes_to_repair).sum();
            for s in &all {
                if json {
                    println!("{s:?}");
                } else {
                    println!(
                        "node={} domain={} live={} fragments={} bytes={} manifests={} degraded={} to_repair={} repaired={} repair_failures={} tombstone_deletes={} reclaimed={} violations={}",
                        s.node, s.domain, s.live_storage_peers, s.fragments, s.bytes, s.manifests, s.objects_degraded, s.bytes_to_repair, s.objects_repaired,
                        s.repair_failures, s.tombstone_deletes, s.reclaimed_fragments, s.protocol_violations
                    );
                }
            }
            println!("cluster: {} storage nodes live, objects degraded {deg}, bytes to repair {rep}", all.len());
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum BadFrame {
    /// A frame announcing more bytes than any frame may carry.
    Oversized,
    /// A frame of an unknown kind.
    UnknownKind,
    /// A request whose body does not decode.
    Garbage,
}

/// Connects as a keyed client, sends one bad frame on the fragment protocol
/// and reports whether the peer dropped the connection (prints DROPPED or KEPT).
pub fn debug_frame(args: ClusterArgs, bad: BadFrame) -> Result<()> {
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(1)).await?;
        let target = node.live_nodes().into_iter().next().ok_or_else(|| Error::invalid("peers", 0, "≥ 1"))?;
        let peer: libp2p::PeerId = target.id.as_str().parse().map_err(|_| Error::format("peer id", target.id.to_string()))?;
        // A stream the peer is known to serve (a valid request answered first).
        let mut s = served_stream(&node, peer).await?;
        let frame: Vec<u8> = match bad {
            BadFrame::Oversized => {
                let mut v = (u32::MAX - 1).to_le_bytes().to_vec();
                v.push(Kind::List as u8);
                v.extend_from_slice(&[0u8; 64]);
                v
            }
            BadFrame::UnknownKind => vec![3, 0, 0, 0, 0xee, 1, 2, 3],
            BadFrame::Garbage => vec![5, 0, 0, 0, Kind::GetCell as u8, 1, 2, 3, 4, 5],
        };
        let before = node.departures(&peer);
        let _ = s.write_all(&frame).await;
        let _ = s.flush().await;
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut dropped = false;
        while Instant::now() < deadline {
            if node.departures(&peer) > before {
                dropped = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        println!("{} {}", if dropped { "DROPPED" } else { "KEPT" }, target.id);
        node.shutdown().await;
        Ok(())
    })
}

#[derive(Args)]
pub struct BenchNetArgs {
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

struct Spawned {
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
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

fn spawn_nodes(n: usize, key: Option<&std::path::Path>) -> Result<Spawned> {
    use std::io::BufRead;
    let exe = std::env::current_exe().map_err(|e| Error::io("find own executable", e))?;
    let mut sp = Spawned { children: Vec::new(), addr: Multiaddr::empty() };
    for i in 0..n {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["node", "--listen", "/ip4/127.0.0.1/tcp/0", "--memory", "8GiB", "--domain", &format!("bench-{i}"), "--repair-rate", "0"]);
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

pub fn bench_net(a: BenchNetArgs) -> Result<()> {
    let params = a.coding.params()?;
    let dir = std::env::temp_dir().join(format!("fragstate-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create temp dir", e))?;
    let keyfile = dir.join("cluster.key");
    let _ = std::fs::remove_file(&keyfile);
    write_cluster_key(&keyfile)?;
    let mut modes = vec![("pnet+noise+yamux", Some(keyfile.clone()))];
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
    let data = Arc::new(crate::sample_bytes(a.size as usize));
    for (name, key) in modes {
        let nodes = spawn_nodes(a.nodes, key.as_deref())?;
        let args = ClusterArgs {
            bootstrap: vec![nodes.addr.clone()],
            key: KeyArgs { key_file: key.clone(), insecure_no_cluster_key: key.is_none() },
            wait_nodes: Some(a.nodes),
            wait_timeout: Duration::from_secs(20),
            request_timeout: Duration::from_secs(60),
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
            println!("  fragstate write (object bytes)   {:8.1} MB/s  ({:.2} s; wire bytes ×{:.2})", mb(a.size, wt), wt.as_secs_f64(), params.fragments() as f64 / params.k() as f64);
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
                100.0 * mb(a.size, wt) * params.fragments() as f64 / params.k() as f64 / raww
            );
            node.shutdown().await;
            Ok::<_, Error>(())
        })?;
        drop(nodes);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Reads an object in 4 MiB calls (as a consumer would, without keeping it) and compares it.
async fn read_and_compare(r: &mut fragstate_client::reader::ObjectReader, data: &[u8], what: &str) -> Result<()> {
    let mut buf = vec![0u8; 4 << 20];
    let mut at = 0usize;
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        if at + n > data.len() || buf[..n] != data[at..at + n] {
            return Err(Error::format(what, format!("read back differs at byte {at}")));
        }
        at += n;
    }
    if at != data.len() {
        return Err(Error::format(what, format!("read back {at} of {} bytes", data.len())));
    }
    Ok(())
}

/// A raw stream that the peer is known to serve: a `Stat` request is answered
/// first (libp2p-stream drops inbound streams that arrive in a burst).
async fn served_stream(node: &NetNode, peer: libp2p::PeerId) -> Result<libp2p::Stream> {
    let mut last = None;
    for attempt in 0..5u32 {
        let mut s = node.open_raw_stream(peer).await?;
        let ok = async {
            wire::write_frame(&mut s, Kind::Stat, &[], &[]).await?;
            match wire::read_frame(&mut s, None).await? {
                Some(f) if f.kind == Kind::Stats => Ok(()),
                other => Err(Error::format("stat reply", format!("unexpected {:?}", other.map(|f| f.kind)))),
            }
        }
        .await;
        match ok {
            Ok(()) => return Ok(s),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
    }
    Err(last.expect("at least one attempt"))
}

/// Reads `total` bytes split over `peers` in parallel through raw frames; MB/s.
async fn raw_read(node: &NetNode, peers: &[libp2p::PeerId], total: u64) -> Result<f64> {
    let per = total / peers.len() as u64;
    let t = Instant::now();
    let jobs = peers.iter().map(|&p| async move {
        let mut s = served_stream(node, p).await?;
        wire::write_frame(&mut s, Kind::BenchSource, &wire::encode(&per), &[]).await?;
        let mut got = 0u64;
        loop {
            match wire::read_frame(&mut s, None).await? {
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
async fn raw_write(node: &NetNode, peers: &[libp2p::PeerId], total: u64) -> Result<f64> {
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
                match wire::read_frame(&mut s, None).await? {
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
