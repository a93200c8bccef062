//! The read-write lock, barrier and once-cell rows, polled by hand with the
//! no-op waker like the other primitive rows (src/primitives.rs).
//!
//! Each scenario is written once, generic over a small trait that says how a
//! peer spells the operation; `tokio` and `async_lock` below implement the
//! traits by forwarding to the peer's own method, so the round measured is
//! the peer's code and the harness's checks, nothing else. The reused
//! primitive is made before the measured segment; the fresh once-cell of
//! `once/16-waiters` is made and dropped inside every round.

use std::cell::Cell;
use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};

use crate::harness::{expect_pending, expect_ready, noop_waker, pin_elem, Meter, Params};

/// Read guards held when the writer queues in `rwlock/write-queued-behind-readers`.
pub const READERS_AHEAD: usize = 4;
/// Parties of the `barrier/generation-of-8` barrier.
pub const BARRIER_PARTIES: usize = 8;
/// get_or_init callers per round in `once/16-waiters` (the runner included).
pub const ONCE_CALLERS: usize = 16;
/// What the initialiser of `once/16-waiters` stores.
const ONCE_VALUE: u64 = 0x5eed;

/// A peer's asynchronous read-write lock.
pub trait PeerRwLock {
    fn new_unlocked() -> Self;
    fn read(&self) -> impl Future<Output = impl Sized + '_> + '_;
    fn write(&self) -> impl Future<Output = impl Sized + '_> + '_;
}

/// A peer's reusable barrier.
pub trait PeerBarrier {
    type WaitResult;
    fn with_parties(n: usize) -> Self;
    fn wait(&self) -> impl Future<Output = Self::WaitResult> + '_;
    fn is_leader(result: &Self::WaitResult) -> bool;
}

/// A peer's asynchronous once-cell holding a `u64`.
pub trait PeerOnceCell {
    fn new_empty() -> Self;
    fn get_or_init<'a, F, Fut>(&'a self, init: F) -> impl Future<Output = &'a u64> + 'a
    where
        F: FnOnce() -> Fut + 'a,
        Fut: Future<Output = u64> + 'a;
}

/// The initialiser's future in `once/16-waiters`: Pending until the round
/// opens the gate, then Ready with the value. It registers no waker: the
/// round re-polls the runner itself once it has opened the gate, as the
/// no-op waker would not run anything anyway.
struct GatedInit<'a> {
    open: &'a Cell<bool>,
}

impl Future for GatedInit<'_> {
    type Output = u64;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u64> {
        if self.open.get() {
            Poll::Ready(ONCE_VALUE)
        } else {
            Poll::Pending
        }
    }
}

/// One lock reused every round; a read future Ready on its first poll; the
/// guard dropped.
pub fn rwlock_uncontended_read<L: PeerRwLock>(p: &Params, m: &mut Meter) -> u64 {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let lock = L::new_unlocked();
    let lock = black_box(&lock);
    m.time(|| {
        for _ in 0..p.rounds {
            let mut read = pin!(lock.read());
            let guard = expect_ready(read.as_mut(), &mut cx, "read on a free rwlock");
            drop(guard);
        }
    });
    p.rounds
}

/// The same with a write future.
pub fn rwlock_uncontended_write<L: PeerRwLock>(p: &Params, m: &mut Meter) -> u64 {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let lock = L::new_unlocked();
    let lock = black_box(&lock);
    m.time(|| {
        for _ in 0..p.rounds {
            let mut write = pin!(lock.write());
            let guard = expect_ready(write.as_mut(), &mut cx, "write on a free rwlock");
            drop(guard);
        }
    });
    p.rounds
}

/// Four read futures Ready on their first poll; a write future → Pending;
/// the four read guards dropped in order; the writer Ready on its next poll;
/// its guard dropped.
pub fn rwlock_write_queued_behind_readers<L: PeerRwLock>(p: &Params, m: &mut Meter) -> u64 {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let lock = L::new_unlocked();
    let lock = black_box(&lock);
    m.time(|| {
        for _ in 0..p.rounds {
            let reads: [_; READERS_AHEAD] = std::array::from_fn(|_| lock.read());
            let mut reads = pin!(reads);
            let guards: [_; READERS_AHEAD] = std::array::from_fn(|i| {
                expect_ready(
                    pin_elem(reads.as_mut(), i),
                    &mut cx,
                    "read on a read-held rwlock",
                )
            });
            let mut write = pin!(lock.write());
            expect_pending(
                write.as_mut(),
                &mut cx,
                "write while readers hold the rwlock",
            );
            drop(guards);
            let guard = expect_ready(write.as_mut(), &mut cx, "write after the readers left");
            drop(guard);
        }
    });
    p.rounds
}

/// One barrier of 8 parties reused every round: 8 wait futures polled in
/// turn (7 → Pending, the 8th → Ready: it completes the generation), then
/// the 7 re-polled → Ready. Exactly one of the 8 results of each round must
/// say it is the leader.
pub fn barrier_generation_of_8<B: PeerBarrier>(p: &Params, m: &mut Meter) -> u64 {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let barrier = B::with_parties(BARRIER_PARTIES);
    let barrier = black_box(&barrier);
    m.time(|| {
        for _ in 0..p.rounds {
            let waits: [_; BARRIER_PARTIES] = std::array::from_fn(|_| barrier.wait());
            let mut waits = pin!(waits);
            let last = BARRIER_PARTIES - 1;
            for i in 0..last {
                expect_pending(
                    pin_elem(waits.as_mut(), i),
                    &mut cx,
                    "wait before the 8th arrival",
                );
            }
            let result = expect_ready(pin_elem(waits.as_mut(), last), &mut cx, "the 8th wait");
            let mut leaders = usize::from(B::is_leader(&result));
            for i in 0..last {
                let result = expect_ready(
                    pin_elem(waits.as_mut(), i),
                    &mut cx,
                    "wait after the generation completed",
                );
                leaders += usize::from(B::is_leader(&result));
            }
            if leaders != 1 {
                panic!("wrong result at step `count leaders`: {leaders} leaders in one generation");
            }
        }
    });
    p.rounds
}

/// A fresh once-cell per round; 16 get_or_init futures. The first poll of
/// the first runs the initialiser, whose future (`GatedInit`) stays Pending
/// while the gate is shut, so that future → Pending; the other 15 → Pending
/// (waiting for the runner). The gate opens; the runner → Ready, then the 15
/// → Ready, each with the runner's value. The initialiser must have run
/// exactly once.
pub fn once_16_waiters<C: PeerOnceCell>(p: &Params, m: &mut Meter) -> u64 {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let open = Cell::new(false);
    let runs = Cell::new(0u32);
    m.time(|| {
        for _ in 0..p.rounds {
            open.set(false);
            runs.set(0);
            let cell = C::new_empty();
            let cell = black_box(&cell);
            let calls: [_; ONCE_CALLERS] = std::array::from_fn(|_| {
                cell.get_or_init(|| {
                    runs.set(runs.get() + 1);
                    GatedInit { open: &open }
                })
            });
            let mut calls = pin!(calls);
            expect_pending(
                pin_elem(calls.as_mut(), 0),
                &mut cx,
                "runner while the initialiser pends",
            );
            for i in 1..ONCE_CALLERS {
                expect_pending(
                    pin_elem(calls.as_mut(), i),
                    &mut cx,
                    "caller while initialising",
                );
            }
            if runs.get() != 1 {
                panic!(
                    "wrong result at step `initialiser started`: it ran {} times",
                    runs.get()
                );
            }
            open.set(true);
            for i in 0..ONCE_CALLERS {
                let value = expect_ready(pin_elem(calls.as_mut(), i), &mut cx, "caller after init");
                if *value != ONCE_VALUE {
                    panic!("wrong result at step `caller after init`: got {value:#x}");
                }
            }
            if runs.get() != 1 {
                panic!(
                    "wrong result at step `initialised`: the initialiser ran {} times",
                    runs.get()
                );
            }
        }
    });
    p.rounds
}

/// Tokio 1.24: `tokio::sync::{RwLock, Barrier, OnceCell}`.
pub mod tokio_peer {
    use super::*;

    impl PeerRwLock for tokio::sync::RwLock<()> {
        fn new_unlocked() -> Self {
            tokio::sync::RwLock::new(())
        }
        fn read(&self) -> impl Future<Output = impl Sized + '_> + '_ {
            tokio::sync::RwLock::read(self)
        }
        fn write(&self) -> impl Future<Output = impl Sized + '_> + '_ {
            tokio::sync::RwLock::write(self)
        }
    }

    impl PeerBarrier for tokio::sync::Barrier {
        type WaitResult = tokio::sync::BarrierWaitResult;
        fn with_parties(n: usize) -> Self {
            tokio::sync::Barrier::new(n)
        }
        fn wait(&self) -> impl Future<Output = Self::WaitResult> + '_ {
            tokio::sync::Barrier::wait(self)
        }
        fn is_leader(result: &Self::WaitResult) -> bool {
            result.is_leader()
        }
    }

    impl PeerOnceCell for tokio::sync::OnceCell<u64> {
        fn new_empty() -> Self {
            tokio::sync::OnceCell::new()
        }
        fn get_or_init<'a, F, Fut>(&'a self, init: F) -> impl Future<Output = &'a u64> + 'a
        where
            F: FnOnce() -> Fut + 'a,
            Fut: Future<Output = u64> + 'a,
        {
            tokio::sync::OnceCell::get_or_init(self, init)
        }
    }
}

/// async-lock 2.6: `async_lock::{RwLock, Barrier, OnceCell}`.
pub mod async_lock_peer {
    use super::*;

    impl PeerRwLock for async_lock::RwLock<()> {
        fn new_unlocked() -> Self {
            async_lock::RwLock::new(())
        }
        fn read(&self) -> impl Future<Output = impl Sized + '_> + '_ {
            async_lock::RwLock::read(self)
        }
        fn write(&self) -> impl Future<Output = impl Sized + '_> + '_ {
            async_lock::RwLock::write(self)
        }
    }

    impl PeerBarrier for async_lock::Barrier {
        type WaitResult = async_lock::BarrierWaitResult;
        fn with_parties(n: usize) -> Self {
            async_lock::Barrier::new(n)
        }
        fn wait(&self) -> impl Future<Output = Self::WaitResult> + '_ {
            async_lock::Barrier::wait(self)
        }
        fn is_leader(result: &Self::WaitResult) -> bool {
            result.is_leader()
        }
    }

    impl PeerOnceCell for async_lock::OnceCell<u64> {
        fn new_empty() -> Self {
            async_lock::OnceCell::new()
        }
        fn get_or_init<'a, F, Fut>(&'a self, init: F) -> impl Future<Output = &'a u64> + 'a
        where
            F: FnOnce() -> Fut + 'a,
            Fut: Future<Output = u64> + 'a,
        {
            async_lock::OnceCell::get_or_init(self, init)
        }
    }
}
