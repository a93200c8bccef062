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

// ---------------------------------------------------------------------------
// Acquire waits
// ---------------------------------------------------------------------------

/// Buckets per power of two (2^5 = 32): a percentile is reported as its
/// bucket's upper edge, at most 1/32 (3.1%) above the true value.
const SUB_BITS: u32 = 5;
/// Waits of 2^41 ns (37 minutes) and longer share the last bucket.
const TOP_BIT: u32 = 40;
const BUCKETS: usize = ((TOP_BIT - SUB_BITS + 2) as usize) << SUB_BITS;

/// How long acquires waited, from the lock/acquire call (the future's first
/// poll) until the task held the mutex or permit. Log-linear, exact below
/// 32 ns; the maximum is exact. The same buckets as syncband's C harness
/// (bench/harness.h), so both sides report the same way. Fixed size: one
/// per task, allocated before the measured segment, merged after it.
pub struct WaitHistogram {
    counts: [u64; BUCKETS],
    max: u64,
}

impl WaitHistogram {
    pub fn new() -> Box<Self> {
        Box::new(WaitHistogram {
            counts: [0; BUCKETS],
            max: 0,
        })
    }

    fn bucket(ns: u64) -> usize {
        if ns < 1 << SUB_BITS {
            return ns as usize;
        }
        let top = 63 - ns.leading_zeros();
        if top > TOP_BIT {
            return BUCKETS - 1;
        }
        let shift = top - SUB_BITS;
        (((shift + 1) as usize) << SUB_BITS) | ((ns >> shift) as usize & ((1 << SUB_BITS) - 1))
    }

    fn upper_edge(i: usize) -> u64 {
        let (group, sub) = (i >> SUB_BITS, (i & ((1 << SUB_BITS) - 1)) as u64);
        if group == 0 {
            return sub;
        }
        (((1u64 << SUB_BITS) + sub + 1) << (group - 1)) - 1
    }

    /// Records one wait that began at `started`.
    #[inline(always)]
    pub fn record_since(&mut self, started: Instant) {
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.counts[Self::bucket(ns)] += 1;
        self.max = self.max.max(ns);
    }

    pub fn merge(&mut self, other: &WaitHistogram) {
        for (c, o) in self.counts.iter_mut().zip(other.counts.iter()) {
            *c += o;
        }
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// The smallest recorded value v such that a fraction q of the records
    /// are <= v, rounded up to its bucket's upper edge (never above max()).
    pub fn percentile(&self, q: f64) -> u64 {
        let n = self.count();
        if n == 0 {
            return 0;
        }
        let rank = ((q * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                // The last bucket has no upper edge: its values end at max.
                return if i + 1 < BUCKETS {
                    Self::upper_edge(i).min(self.max)
                } else {
                    self.max
                };
            }
        }
        self.max
    }
}

/// Times the measured segments of a batch and counts the allocations made in
/// them. Setup and teardown stay outside the segments. With `waits` set
/// (`--waits`), a contention batch also times every acquire into it (and,
/// a row with read and write locks, into `read_waits` or `write_waits`).
#[derive(Default)]
pub struct Meter {
    elapsed: Duration,
    allocations: u64,
    open: Option<(Instant, u64)>,
    pub waits: Option<Box<WaitHistogram>>,
    /// With `waits`: the read locks' and the write locks' waits apart (the
    /// rwlock contention rows add each lock into one of them too).
    pub read_waits: Option<Box<WaitHistogram>>,
    pub write_waits: Option<Box<WaitHistogram>>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_within_a_thirty_second_above_the_true_value_and_max_is_exact() {
        let mut h = WaitHistogram::new();
        let mut values: Vec<u64> = (0..100_000u64)
            .map(|i| (i * 2_654_435_761) % (1 << 36))
            .collect();
        for &v in &values {
            h.counts[WaitHistogram::bucket(v)] += 1;
            h.max = h.max.max(v);
        }
        values.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999] {
            let truth = values[(q * values.len() as f64).ceil() as usize - 1];
            let got = h.percentile(q);
            assert!(
                got >= truth && got <= truth + truth / 32,
                "q={q}: {got} vs {truth}"
            );
        }
        assert_eq!(h.percentile(1.0), *values.last().unwrap());
        assert_eq!(h.max(), *values.last().unwrap());
        assert_eq!(h.count(), values.len() as u64);
    }
}
