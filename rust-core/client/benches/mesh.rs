//! Write and read throughput of a 1 GiB object through the in-process mesh
//! (6 nodes, RS(4,2), 1 MiB cells, 1 MiB writes and reads), intact and with
//! two holders down: `cargo bench -p fragstate --bench mesh`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragstate_client::mesh::Mesh;
use fragstate_client::{Client, ClientConfig};

const SIZE: usize = 1 << 30;
const CHUNK: usize = 1 << 20;

fn mesh(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mesh = Mesh::in_memory(6, u64::MAX);
    let client = Client::new(mesh.clone(), ClientConfig::default()).unwrap();
    let block: Vec<u8> = (0..CHUNK).map(|i| (i * 31 + i / 4096) as u8).collect();
    let write = |path: &'static str| {
        let client = client.clone();
        let block = &block;
        async move {
            let mut w = client.create(path, true).await.unwrap();
            for _ in 0..SIZE / CHUNK {
                w.write(block).await.unwrap();
            }
            w.close().await.unwrap()
        }
    };
    let read = || async {
        let mut r = client.open("bench/read").await.unwrap();
        let mut buf = vec![0u8; CHUNK];
        let mut total = 0;
        while total < SIZE {
            total += r.read(&mut buf).await.unwrap();
        }
    };
    let mut g = c.benchmark_group("mesh-1GiB");
    g.sample_size(10).measurement_time(Duration::from_secs(30)).throughput(Throughput::Bytes(SIZE as u64));
    g.bench_function("write", |b| b.iter(|| rt.block_on(write("bench/write"))));
    let man = rt.block_on(write("bench/read"));
    g.bench_function("read", |b| b.iter(|| rt.block_on(read())));
    mesh.kill(&man.holders[0]).unwrap();
    mesh.kill(&man.holders[1]).unwrap();
    g.bench_function("read-2-data-holders-down", |b| b.iter(|| rt.block_on(read())));
    g.finish();
}

criterion_group!(benches, mesh);
criterion_main!(benches);
