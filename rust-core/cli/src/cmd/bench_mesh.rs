//! `fragstate bench mesh`: one object written and read through an in-process mesh.

use std::time::{Duration, Instant};

use fragstate_client::mesh::Mesh;
use fragstate_client::{Client, ClientConfig};

use fragstate_core::sample::state_like;
use crate::args::CodingArgs;
use crate::bench::gbps;

pub(crate) fn bench_mesh(coding: &CodingArgs, nodes: usize, failed: usize, size: u64, chunk: u64, threads: usize) -> fragstate_core::Result<()> {
    let params = coding.params()?;
    if failed > params.fragments() {
        return Err(fragstate_core::Error::invalid("failed", failed, format!("0 ≤ failed ≤ k + m = {}", params.fragments())));
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(threads.max(1)).enable_all().build().map_err(|e| fragstate_core::Error::io("start runtime", e))?;
    rt.block_on(async {
        let mesh = Mesh::in_memory(nodes, u64::MAX);
        let client = Client::new(mesh.clone(), ClientConfig { params, ..ClientConfig::default() })?;
        let block = state_like(chunk as usize);
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
