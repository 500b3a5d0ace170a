//! The multi-process test harness shared by the cluster tests: real
//! `fragstate node` processes on loopback (free ports) with a cluster key,
//! the `fragstate` client commands against them, `kill -9` and restarts.
//! Tests of one binary run one at a time ([`SERIAL`]), so that two clusters
//! never compete for the two cores.
#![allow(dead_code)] // each test binary uses a part

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

pub const EXE: &str = env!("CARGO_BIN_EXE_fragstate");
pub static SERIAL: Mutex<()> = Mutex::new(());

/// The last panic's message and place, repeated below the node logs that a
/// failing test prints: CI shows the end of the output, where the logs would
/// have buried it.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

fn remember_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            *LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some(info.to_string());
            default(info);
        }));
    });
}

pub struct NodeProc {
    pub child: Option<Child>,
    pub peer: String,
    pub addr: String,
    pub args: Vec<String>,
    pub log: PathBuf,
}

pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub key: PathBuf,
    pub nodes: Vec<NodeProc>,
    /// What new nodes and client commands bootstrap from instead of the
    /// running nodes' `/ip4` addresses (the DNS test).
    pub bootstrap: Option<String>,
}

/// A loopback port free now, for a node that must listen on a known port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn spawn_node(args: &[String], log: &Path) -> (Child, String, String) {
    let logf = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let mut child = Command::new(EXE)
        .arg("node")
        .args(args)
        .env("FRAGSTATE_LOG", "info,libp2p_swarm=warn,libp2p_kad=warn")
        .stdout(Stdio::piped())
        .stderr(logf)
        .spawn()
        .expect("spawn fragstate node");
    let out = BufReader::new(child.stdout.take().unwrap());
    let (mut peer, mut addr) = (String::new(), String::new());
    for line in out.lines() {
        let line = line.unwrap();
        if let Some(p) = line.strip_prefix("PEER ") {
            peer = p.to_string();
        }
        if let Some(a) = line.strip_prefix("LISTEN ") {
            addr = a.to_string();
            break;
        }
    }
    assert!(!addr.is_empty(), "node did not print its address; log:\n{}", std::fs::read_to_string(log).unwrap_or_default());
    (child, peer, addr)
}

impl Cluster {
    pub fn new() -> Cluster {
        remember_panics();
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("cluster.key");
        let out = Command::new(EXE).arg("keygen").arg(&key).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        Cluster { dir, key, nodes: Vec::new(), bootstrap: None }
    }

    /// Starts `n` storage nodes with extra arguments; `disk` gives each a store directory.
    pub fn start(&mut self, n: usize, disk: bool, extra: &[&str]) {
        for _ in 0..n {
            let i = self.nodes.len();
            let mut args: Vec<String> = vec!["--listen".into(), "/ip4/127.0.0.1/tcp/0".into(), "--domain".into(), format!("host-{i}")];
            args.extend(["--key-file".into(), self.key.display().to_string()]);
            if disk {
                args.extend(["--store-dir".into(), self.dir.path().join(format!("store-{i}")).display().to_string(), "--no-fsync".into()]);
            } else {
                args.extend(["--memory".into(), "1GiB".into()]);
            }
            if let Some(b) = &self.bootstrap {
                args.extend(["--bootstrap".into(), b.clone()]);
            } else if let Some(first) = self.nodes.first() {
                args.extend(["--bootstrap".into(), first.addr.clone()]);
            }
            args.extend(extra.iter().map(|s| s.to_string()));
            let log = self.dir.path().join(format!("node-{i}.log"));
            let (child, peer, addr) = spawn_node(&args, &log);
            self.nodes.push(NodeProc { child: Some(child), peer, addr, args, log });
        }
        self.wait_live(self.alive());
    }

    pub fn alive(&self) -> usize {
        self.nodes.iter().filter(|n| n.child.is_some()).count()
    }

    pub fn kill9(&mut self, i: usize) {
        let mut c = self.nodes[i].child.take().expect("node is running");
        c.kill().unwrap();
        c.wait().unwrap();
    }

    /// Starts one memory-store node named `name` (its failure domain and its log file, not its
    /// index) listening on `listen`, with extra arguments such as a bootstrap; it does not wait
    /// for the cluster, as [`Self::start`] does.
    pub fn spawn_named(&mut self, name: &str, listen: &str, extra: &[&str]) {
        let mut args: Vec<String> = ["--listen", listen, "--domain", name, "--memory", "1GiB"].iter().chain(extra).map(|s| s.to_string()).collect();
        args.extend(["--key-file".to_string(), self.key.display().to_string()]);
        let log = self.dir.path().join(format!("node-{name}.log"));
        let (child, peer, addr) = spawn_node(&args, &log);
        self.nodes.push(NodeProc { child: Some(child), peer, addr, args, log });
    }

    /// Starts node `i` again with its arguments; a memory-store node comes back under a new peer id.
    pub fn respawn(&mut self, i: usize) {
        assert!(self.nodes[i].child.is_none());
        let (child, peer, addr) = spawn_node(&self.nodes[i].args, &self.nodes[i].log);
        let node = &mut self.nodes[i];
        (node.child, node.peer, node.addr) = (Some(child), peer, addr);
    }

    /// [`Self::respawn`] of a disk-backed node, which keeps its peer id.
    pub fn restart(&mut self, i: usize) {
        let before = self.nodes[i].peer.clone();
        self.respawn(i);
        assert_eq!(self.nodes[i].peer, before, "a disk-backed node keeps its peer id");
    }

    pub fn index_of(&self, peer: &str) -> usize {
        self.nodes.iter().position(|n| n.peer == peer).unwrap_or_else(|| panic!("unknown peer {peer}"))
    }

    pub fn bootstrap_args(&self) -> Vec<String> {
        if let Some(b) = &self.bootstrap {
            return vec!["--bootstrap".into(), b.clone()];
        }
        let mut v = Vec::new();
        for n in self.nodes.iter().filter(|n| n.child.is_some()) {
            v.extend(["--bootstrap".to_string(), n.addr.clone()]);
        }
        v
    }

    /// Runs a client command against the running nodes (with the key), waiting for `nodes` storage nodes.
    pub fn cli(&self, args: &[&str], nodes: usize) -> Output {
        self.cli_with_key(args, nodes, &["--key-file", &self.key.display().to_string()])
    }

    pub fn cli_with_key(&self, args: &[&str], nodes: usize, key: &[&str]) -> Output {
        Command::new(EXE)
            .args(args)
            .args(self.bootstrap_args())
            .args(key)
            .args(["--wait-nodes", &nodes.to_string(), "--wait-timeout", "20"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    pub fn put(&self, data: &[u8], path: &str, coding: &[&str]) -> Vec<String> {
        self.put_waiting(data, path, coding, self.alive())
    }

    /// [`Self::put`] once `nodes` storage nodes are live (the cluster's own and any others joined).
    pub fn put_waiting(&self, data: &[u8], path: &str, coding: &[&str], nodes: usize) -> Vec<String> {
        let src = self.dir.path().join("put.tmp");
        std::fs::write(&src, data).unwrap();
        let mut args = vec!["put", "--overwrite", src.to_str().unwrap(), path];
        args.extend_from_slice(coding);
        let out = self.cli(&args, nodes);
        assert!(out.status.success(), "put {path} failed: {}", text(&out));
        holders(&String::from_utf8_lossy(&out.stdout))
    }

    pub fn get(&self, path: &str) -> Result<Vec<u8>, String> {
        self.get_waiting(path, self.alive())
    }

    /// `get` once `nodes` storage nodes are live (more than the started ones when others joined).
    pub fn get_waiting(&self, path: &str, nodes: usize) -> Result<Vec<u8>, String> {
        let dst = self.dir.path().join("get.tmp");
        let _ = std::fs::remove_file(&dst);
        let out = self.cli(&["get", path, dst.to_str().unwrap()], nodes);
        if out.status.success() {
            Ok(std::fs::read(&dst).unwrap())
        } else {
            Err(text(&out))
        }
    }

    /// `key=value` records of `fragstate stats`, one map per node.
    pub fn stats(&self) -> Vec<std::collections::HashMap<String, String>> {
        let out = self.cli(&["stats"], self.alive());
        assert!(out.status.success(), "stats failed: {}", text(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("node="))
            .map(|l| l.split(' ').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect())
            .collect()
    }

    pub fn stat_sum(&self, field: &str) -> u64 {
        self.stats().iter().map(|m| m[field].parse::<u64>().unwrap()).sum()
    }

    /// Polls `cond` for up to 60 s.
    pub fn wait_for(&self, what: &str, mut cond: impl FnMut(&Cluster) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if cond(self) {
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("timed out waiting for {what}; logs in {}", self.dir.path().display());
    }

    pub fn wait_live(&self, n: usize) {
        let out = self.cli(&["ls", "/"], n);
        assert!(out.status.success(), "cluster of {n} did not form: {}", text(&out));
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if std::thread::panicking() {
            for n in &self.nodes {
                eprintln!("---- {} ----\n{}", n.log.display(), std::fs::read_to_string(&n.log).unwrap_or_default());
            }
            if let Some(failure) = LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()).take() {
                eprintln!("---- the failure (as above the node logs) ----\n{failure}");
            }
        }
    }
}

pub fn text(o: &Output) -> String {
    format!("status {:?}\nstdout: {}\nstderr: {}", o.status, String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

pub fn holders(put_stdout: &str) -> Vec<String> {
    let list = put_stdout.split("holders [").nth(1).and_then(|s| s.split(']').next()).unwrap_or_else(|| panic!("no holders in {put_stdout:?}"));
    list.split(", ").map(|s| s.to_string()).collect()
}
