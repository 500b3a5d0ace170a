//! An in-memory store holds its cells' bytes, not the buffers they came in.
//!
//! Writers hand the store slices of a whole stripe buffer (capacity
//! `(k + m) × cell_size`, mostly untouched for a small object): kept as such,
//! each stored cell pinned its stripe's buffer, and a TaskManager's counted
//! heap read ~27 GB beside 1 GB of RSS in the soak.

use bytes::{Bytes, BytesMut};
use fragstate_core::format::{self, FragmentHeader};
use fragstate_core::heap::{live_bytes, CountingAllocator};
use fragstate_core::params::{CodingParams, Compression};
use fragstate_store::FragmentStore;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const CELL: usize = 4096;
const STRIPE_BUFFER: usize = 6 << 20;
const OBJECTS: usize = 32;

/// A cell as a writer hands it over: the first cell of a fresh stripe buffer.
fn cell_of_a_stripe_buffer(seed: u8) -> Bytes {
    let mut stripe = BytesMut::with_capacity(STRIPE_BUFFER);
    stripe.resize(3 * CELL, seed);
    stripe.freeze().slice(..CELL)
}

#[test]
fn stored_cells_do_not_pin_the_buffers_they_were_sliced_from() {
    let store = FragmentStore::in_memory("n0", u64::MAX);
    let before = live_bytes().expect("installed as the global allocator");
    for i in 0..OBJECTS {
        let header = FragmentHeader {
            path: format!("chk-1/state-{i}"),
            write_id: i as u128,
            index: 0,
            params: CodingParams::new(2, 1, 1 << 20, Compression::None).unwrap(),
            created_unix_ms: 0,
        };
        store.begin_fragment(&header).unwrap();
        let cell = cell_of_a_stripe_buffer(i as u8);
        store.append_cell(&header.key(), 0, format::cell_checksum(&cell), cell).unwrap();
        store.finish_fragment(&header.key()).unwrap();
    }
    let grown = live_bytes().unwrap().saturating_sub(before);
    // Each object costs its cell plus index entries (far below 64 KiB);
    // pinned stripe buffers would cost 32 × 6 MiB = 192 MiB.
    let bound = (OBJECTS * (CELL + (64 << 10))) as u64;
    assert!(grown <= bound, "{OBJECTS} stored cells of {CELL} bytes grew the heap by {grown} bytes (bound {bound})");
    assert!(grown >= (OBJECTS * CELL) as u64, "the cells are counted: {grown}");
}
