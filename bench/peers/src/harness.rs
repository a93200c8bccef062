//! What every scenario shares: the no-op waker, the checked polls, the meter
//! that times a batch and counts its allocations, and the batch parameters.

use std::future::Future;
use std::pin::Pin;
use std::ptr;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use std::time::{Duration, Instant};

use crate::alloc_count;

// ---------------------------------------------------------------------------
// No-op waker
// ---------------------------------------------------------------------------

/// The vtable of the no-op waker. A `static` (not a `const`) so that every
/// waker points at the same vtable and `Waker::will_wake` recognises clones;
/// the peers use that test to skip re-cloning a waker they already hold.
static NOOP_VTABLE: RawWakerVTable = RawWakerVTable::new(noop_clone, noop, noop, noop);

unsafe fn noop_clone(_data: *const ()) -> RawWaker {
    RawWaker::new(ptr::null(), &NOOP_VTABLE)
}

unsafe fn noop(_data: *const ()) {}

/// A waker that does nothing when woken, cloned or dropped.
pub fn noop_waker() -> Waker {
    // SAFETY: the vtable functions ignore the (null) data pointer, so every
    // contract of `RawWakerVTable` holds trivially, on any thread.
    unsafe { Waker::from_raw(RawWaker::new(ptr::null(), &NOOP_VTABLE)) }
}

// ---------------------------------------------------------------------------
// Checked polls: a wrong Pending/Ready aborts the run
// ---------------------------------------------------------------------------

#[cold]
#[inline(never)]
fn wrong_result(step: &str, expected: &str, got: &str) -> ! {
    panic!("wrong result at step `{step}`: expected {expected}, got {got}");
}

/// Polls `fut` once and panics unless it is still pending.
#[inline(always)]
pub fn expect_pending<F: Future + ?Sized>(fut: Pin<&mut F>, cx: &mut Context<'_>, step: &str) {
    if fut.poll(cx).is_ready() {
        wrong_result(step, "Pending", "Ready");
    }
}

/// Polls `fut` once and panics unless it completed; returns its output.
#[inline(always)]
pub fn expect_ready<F: Future + ?Sized>(
    fut: Pin<&mut F>,
    cx: &mut Context<'_>,
    step: &str,
) -> F::Output {
    match fut.poll(cx) {
        Poll::Ready(out) => out,
        Poll::Pending => wrong_result(step, "Ready", "Pending"),
    }
}

/// Pins one element of a pinned array (structural pinning of arrays).
#[inline(always)]
pub fn pin_elem<T, const N: usize>(array: Pin<&mut [T; N]>, i: usize) -> Pin<&mut T> {
    // SAFETY: the elements of an array live inside it, so while the array is
    // pinned none of them can move; nothing here moves an element out.
    unsafe { array.map_unchecked_mut(|a| &mut a[i]) }
}

/// Runs `fut` to completion while counting how often it was polled.
/// The executor rows use the count to check that a step really waited.
pub async fn counting_polls<F: Future>(fut: F) -> (F::Output, u32) {
    let mut fut = std::pin::pin!(fut);
    let mut polls = 0u32;
    let out = std::future::poll_fn(|cx| {
        polls += 1;
        fut.as_mut().poll(cx)
    })
    .await;
    (out, polls)
}

/// Moves `value` to the heap for the rest of the process. The executor rows
/// use it for objects that `'static` tasks share within one batch (one small
/// leak per batch, created and leaked outside the timed region).
pub fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

// ---------------------------------------------------------------------------
// Batch parameters and the meter
// ---------------------------------------------------------------------------

/// What one batch is asked to do.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Rounds in the batch (for contention rows: lock/unlock per task).
    pub rounds: u64,
    /// Executor threads for the contention rows.
    pub threads: usize,
    /// Permits of the contention semaphore.
    pub permits: usize,
}

/// Times the measured segments of a batch and counts the allocations made in
/// them. Setup and teardown stay outside the segments.
#[derive(Default)]
pub struct Meter {
    elapsed: Duration,
    allocations: u64,
    open: Option<(Instant, u64)>,
}

impl Meter {
    /// Opens a measured segment.
    #[inline(always)]
    pub fn start(&mut self) {
        debug_assert!(self.open.is_none(), "segment already open");
        let allocations = alloc_count::allocations();
        self.open = Some((Instant::now(), allocations));
    }

    /// Closes the open segment and adds it to the totals.
    #[inline(always)]
    pub fn stop(&mut self) {
        let now = Instant::now();
        let allocations = alloc_count::allocations();
        let (started, allocations_then) = self.open.take().expect("no segment open");
        self.elapsed += now - started;
        self.allocations += allocations - allocations_then;
    }

    /// Measures `body` as one segment.
    #[inline(always)]
    pub fn time<R>(&mut self, body: impl FnOnce() -> R) -> R {
        self.start();
        let out = body();
        self.stop();
        out
    }

    pub fn elapsed(&self) -> Duration {
        assert!(self.open.is_none(), "segment left open");
        self.elapsed
    }

    pub fn allocations(&self) -> u64 {
        self.allocations
    }
}

/// One batch of a scenario: does the work for `params`, measuring it with the
/// meter, and returns how many units (rounds, or operations for contention
/// rows) the measured time is divided by.
pub type BatchFn = fn(&Params, &mut Meter) -> u64;
