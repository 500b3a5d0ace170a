//! `fragstate bench checkpoints`: what one Flink checkpoint's file-system
//! calls cost in requests as the cluster grows, with the directory index and
//! without it (issue 13; NETWORK.md "What still goes to every node"). An
//! in-process mesh of N nodes (every request counted where it arrives) runs
//! the calls Flink 2.2's JobManager and a TaskManager make per checkpoint,
//! as `FragstateFileSystem` turns them into client calls:
//!
//! - the JobManager's *directory calls*: `mkdirs(chk-N)` (each ancestor
//!   checked to be no file, then the directory made known to the index),
//!   `exists(chk-N/_metadata)`, and the subsumed checkpoint's directory
//!   deleted without `recursive` once its files are gone;
//! - the *file calls*: the state files and `_metadata` written, the
//!   subsumed checkpoint's files deleted.
//!
//! Runs each size with the index on and off, side by side, and prints one
//! JSON object per run on stdout (`ci/bench-checkpoints.sh` makes the table
//! and plots); progress on stderr.

use std::time::Instant;

use clap::Args;
use fragstate_client::client::PathKind;
use fragstate_client::mesh::Mesh;
use fragstate_client::{Client, ClientConfig};
use fragstate_core::sample::state_like;
use fragstate_core::{Error, Result};
use serde_json::json;

use crate::args::{parse_bytes, CodingArgs};
use crate::bench::median;

#[derive(Args)]
pub(crate) struct BenchCheckpointsArgs {
    #[command(flatten)]
    pub coding: CodingArgs,
    /// Cluster sizes to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10,40,160,640")]
    pub nodes: Vec<usize>,
    /// Checkpoints per run (the first, which makes the job's directories, is not counted).
    #[arg(long, default_value_t = 10)]
    pub checkpoints: usize,
    /// State files per checkpoint (besides `_metadata`).
    #[arg(long, default_value_t = 4)]
    pub files: usize,
    /// Size of each state file.
    #[arg(long, default_value = "64KiB", value_parser = parse_bytes)]
    pub size: u64,
}

/// Requests of one checkpoint, by kind of call.
#[derive(Default, Clone, Copy)]
struct Cost {
    directory_calls: u64,
    file_calls: u64,
    millis: f64,
}

pub(crate) fn bench_checkpoints(a: BenchCheckpointsArgs) -> Result<()> {
    let params = a.coding.params()?;
    if a.checkpoints < 2 {
        return Err(Error::invalid("checkpoints", a.checkpoints, "at least 2 (the first is not counted)"));
    }
    if let Some(&n) = a.nodes.iter().find(|&&n| n < params.fragments()) {
        return Err(Error::invalid("nodes", n, format!("at least k + m = {} per size", params.fragments())));
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| Error::io("start runtime", e))?;
    let state = state_like(a.size as usize);
    for &nodes in &a.nodes {
        for index in [true, false] {
            let started = Instant::now();
            let costs = rt.block_on(run(&a, nodes, index, &state))?;
            let dir: Vec<f64> = costs.iter().map(|c| c.directory_calls as f64).collect();
            let dir_max = dir.iter().cloned().fold(0.0, f64::max);
            let (dir, file, ms) = (
                median(dir),
                median(costs.iter().map(|c| c.file_calls as f64).collect()),
                median(costs.iter().map(|c| c.millis).collect()),
            );
            eprintln!(
                "bench checkpoints: {nodes} nodes, index {}: {:.0} requests for the directory calls, {:.0} for the files, {:.1} ms a checkpoint (medians of {}; run took {:.1} s)",
                if index { "on" } else { "off" },
                dir,
                file,
                ms,
                costs.len(),
                started.elapsed().as_secs_f64()
            );
            let row = json!({
                "nodes": nodes, "index": index, "k": params.k(), "m": params.m(), "files": a.files, "file_bytes": a.size,
                "checkpoints": costs.len(),
                "directory_requests_median": dir, "directory_requests_max": dir_max,
                "file_requests_median": file, "millis_median": ms,
            });
            println!("{row}");
        }
    }
    Ok(())
}

/// One run: `a.checkpoints` checkpoints of one job on a fresh mesh of `nodes`.
async fn run(a: &BenchCheckpointsArgs, nodes: usize, index: bool, state: &[u8]) -> Result<Vec<Cost>> {
    let mesh = Mesh::in_memory(nodes, u64::MAX);
    let client = Client::new(mesh.clone(), ClientConfig { params: a.coding.params()?, directory_index: index, ..ClientConfig::default() })?;
    let requests = || mesh.node_ids().iter().map(|n| mesh.requests(n).unwrap_or(0)).sum::<u64>();
    let root = "fragstate://bench";
    let job = format!("{root}/ck/job");
    mkdirs(&client, root, &format!("{job}/shared")).await?;
    let mut costs = Vec::new();
    for n in 1..=a.checkpoints {
        let chk = format!("{job}/chk-{n}");
        let t = Instant::now();
        let mut cost = Cost::default();
        let before = requests();
        mkdirs(&client, root, &chk).await?;
        cost.directory_calls += requests() - before;
        let before = requests();
        for f in 0..a.files {
            write(&client, &format!("{chk}/state-{f}"), state).await?;
        }
        cost.file_calls += requests() - before;
        let before = requests();
        if client.path_kind(&format!("{chk}/_metadata")).await? != PathKind::Missing {
            return Err(Error::InvalidState { path: chk, reason: "_metadata exists before it was written".into() });
        }
        cost.directory_calls += requests() - before;
        let before = requests();
        write(&client, &format!("{chk}/_metadata"), &state[..state.len().min(4096)]).await?;
        if n > 1 {
            let old = format!("{job}/chk-{}", n - 1);
            for f in (0..a.files).map(|f| format!("state-{f}")).chain(["_metadata".to_string()]) {
                client.delete(&format!("{old}/{f}"), false).await?;
            }
            cost.file_calls += requests() - before;
            let before = requests();
            client.delete(&old, false).await?;
            cost.directory_calls += requests() - before;
        } else {
            cost.file_calls += requests() - before;
        }
        cost.millis = t.elapsed().as_secs_f64() * 1e3;
        if n > 1 {
            costs.push(cost);
        }
    }
    Ok(costs)
}

/// `FragstateFileSystem.mkdirs`: each ancestor below `root` checked to be no file, then the index.
async fn mkdirs(client: &Client, root: &str, dir: &str) -> Result<()> {
    let mut k = dir;
    while k.len() > root.len() {
        if client.stat_as_create(k).await?.is_some() {
            return Err(Error::InvalidState { path: dir.to_string(), reason: format!("{k} is a file") });
        }
        k = &k[..k.rfind('/').unwrap_or(0)];
    }
    client.mkdirs(dir).await
}

async fn write(client: &Client, path: &str, data: &[u8]) -> Result<()> {
    let mut w = client.create(path, false).await?;
    w.write(data).await?;
    w.close().await.map(|_| ())
}
