//! The counting allocator tracks allocations, frees and reallocations.

use fragstate_core::heap::{live_bytes, CountingAllocator};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn live_bytes_follow_allocations_frees_and_reallocations() {
    const MIB: u64 = 1 << 20;
    let before = live_bytes().expect("installed as the global allocator");
    let mut v: Vec<u8> = Vec::with_capacity(16 << 20);
    let with_vec = live_bytes().unwrap();
    // other test threads may allocate meanwhile: compare with a margin of 1 MiB
    assert!(with_vec >= before + 16 * MIB - MIB, "{before} -> {with_vec}");
    v.shrink_to(4 << 20);
    let shrunk = live_bytes().unwrap();
    assert!(shrunk + 11 * MIB <= with_vec, "shrinking 16 -> 4 MiB: {with_vec} -> {shrunk}");
    drop(v);
    let after = live_bytes().unwrap();
    assert!(after < before + MIB, "{before} -> {after} after the drop");
}
