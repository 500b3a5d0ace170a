//! `fragstate bench codec`: encode, decode and reconstruct throughput of one core.

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use fragstate_core::codec::StripeCodec;

use fragstate_core::sample::state_like;
use crate::args::CodingArgs;
use crate::bench::{gbps, median};

pub(crate) fn bench_codec(coding: &CodingArgs, size: u64, lost: Option<usize>, repeat: usize) -> fragstate_core::Result<()> {
    let params = coding.params()?;
    let codec = StripeCodec::new(params)?;
    let (k, m) = (params.k(), params.m());
    let lost = lost.unwrap_or(m.min(k));
    if lost > m {
        return Err(fragstate_core::Error::invalid("lost", lost, format!("0 ≤ lost ≤ m = {m}")));
    }
    let stripe_len = params.stripe_data_len() as usize;
    let stripes = (size as usize).div_ceil(stripe_len).max(1);
    let data = state_like(stripe_len);
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
