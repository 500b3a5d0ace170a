//! Product-path codec throughput (checksums on), per core:
//! `cargo bench -p fragstate-core --bench codec`.

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fragstate_core::codec::StripeCodec;
use fragstate_core::params::{CodingParams, Compression};
use fragstate_core::sample::noise;

fn codec(c: &mut Criterion) {
    for (k, m) in [(4, 2), (6, 3), (10, 4)] {
        for cell in [64 * 1024u64, 1024 * 1024] {
            let params = CodingParams::new(k, m, cell, Compression::None).unwrap();
            let codec = StripeCodec::new(params).unwrap();
            let data = noise(params.stripe_data_len() as usize, 7);
            let label = format!("RS({k},{m})/{}KiB", cell / 1024);
            let mut g = c.benchmark_group("codec");
            g.throughput(Throughput::Bytes(data.len() as u64));
            let encode = || {
                let mut buf = BytesMut::with_capacity(codec.buffer_capacity());
                buf.extend_from_slice(&data);
                codec.encode(buf)
            };
            g.bench_function(BenchmarkId::new("encode", &label), |b| b.iter(encode));
            let enc = encode();
            // Worst case: m data cells lost, every remaining cell verified.
            let mut cells: Vec<Option<Bytes>> = enc.cells.iter().cloned().map(Some).collect();
            for c in cells.iter_mut().take(m) {
                *c = None;
            }
            g.bench_function(BenchmarkId::new("reconstruct", &label), |b| {
                b.iter(|| {
                    for (i, c) in cells.iter().enumerate() {
                        if let Some(c) = c {
                            assert!(codec.cell_is_valid(&enc.info, i, c));
                        }
                    }
                    codec.decode("bench", 0, &enc.info, data.len(), &cells).unwrap()
                })
            });
            g.finish();
        }
    }
}

criterion_group!(benches, codec);
criterion_main!(benches);
