//! How many bytes this process's Rust code holds on the heap right now.
//!
//! [`CountingAllocator`] wraps the system allocator and keeps a running total
//! of live bytes; the two binaries (`libfragstate.so` in a Flink JVM and the
//! `fragstate` command) install it as their global allocator. In a JVM the RSS
//! mixes the Java heap, RocksDB and glibc's arenas, so this figure is the one
//! that says whether fragstate's own memory is bounded (the soak samples it).
//! Cost: one relaxed atomic add per allocation and per free.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The system allocator with a count of live bytes (see the module docs).
pub struct CountingAllocator;

// SAFETY: every call is forwarded unchanged to `System`; only a counter is
// updated beside it.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
            INSTALLED.store(true, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
            INSTALLED.store(true, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

/// Live heap bytes of this process's Rust code, or `None` when
/// [`CountingAllocator`] is not the global allocator (tests, other embedders).
pub fn live_bytes() -> Option<u64> {
    INSTALLED.load(Ordering::Relaxed).then(|| LIVE.load(Ordering::Relaxed) as u64)
}
