//! A counting global allocator.
//!
//! Wraps [`std::alloc::System`] and counts every allocation (`alloc`,
//! `alloc_zeroed`, `realloc`) while counting is switched on. The harness
//! switches it on only for the untimed warm-up batch, so the timed batches
//! pay one relaxed load per allocation and never write a shared counter
//! (which would add cross-core traffic to the multi-thread rows).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Whether allocations are being counted. Relaxed: the flag is flipped on the
/// main thread between batches, and a batch that spawns threads publishes it
/// to them through the spawn itself.
static COUNTING: AtomicBool = AtomicBool::new(false);

/// Allocations seen while counting. Relaxed: only the total matters, and it
/// is read after the batch's threads were joined (or on the one thread).
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

pub struct CountingAllocator;

impl CountingAllocator {
    #[inline(always)]
    fn note(&self) {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the counter has no effect on the memory returned.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.note();
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.note();
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.note();
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

/// Switches counting on or off.
pub fn set_counting(on: bool) {
    COUNTING.store(on, Ordering::Relaxed);
}

/// Allocations counted so far (monotonic).
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}
