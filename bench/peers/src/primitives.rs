//! Single-thread primitive scenarios, polled by hand with the no-op waker.
//! No runtime is involved: each round creates (or reuses) the primitive,
//! polls its futures directly and checks every Pending/Ready on the way.
//!
//! Every primitive is passed through `black_box` by reference so that the
//! compiler has to treat it as escaped, as the C side's out-of-line calls do.

use std::hint::black_box;
use std::pin::pin;
use std::task::Context;

use crate::harness::{expect_pending, expect_ready, noop_waker, pin_elem, Meter, Params};

/// Waiters queued behind the holder in `mutex/four-queued-waiters`.
const QUEUED_WAITERS: usize = 4;
/// Waiters released at once in `event/fan-out-16`.
const FAN_OUT: usize = 16;

/// Tokio 1.24: `tokio::sync::{Semaphore, Mutex, Notify}`.
pub mod tokio_peer {
    use super::*;
    use tokio::sync::{Mutex, Notify, Semaphore};

    /// Fresh zero-permit semaphore; acquire → Pending; add_permits(1);
    /// acquire → Ready; forget the permit.
    pub fn semaphore_pending_handoff(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        m.time(|| {
            for _ in 0..p.rounds {
                let sem = Semaphore::new(0);
                let sem = black_box(&sem);
                let mut acquire = pin!(sem.acquire());
                expect_pending(
                    acquire.as_mut(),
                    &mut cx,
                    "acquire on a zero-permit semaphore",
                );
                sem.add_permits(1);
                let permit =
                    expect_ready(acquire.as_mut(), &mut cx, "acquire after add_permits(1)")
                        .expect("semaphore closed");
                permit.forget();
            }
        });
        p.rounds
    }

    /// The same on one semaphore created per batch.
    pub fn semaphore_reused_handoff(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let sem = Semaphore::new(0);
        let sem = black_box(&sem);
        m.time(|| {
            for _ in 0..p.rounds {
                let mut acquire = pin!(sem.acquire());
                expect_pending(
                    acquire.as_mut(),
                    &mut cx,
                    "acquire on a zero-permit semaphore",
                );
                sem.add_permits(1);
                let permit =
                    expect_ready(acquire.as_mut(), &mut cx, "acquire after add_permits(1)")
                        .expect("semaphore closed");
                permit.forget();
            }
        });
        assert_eq!(
            sem.available_permits(),
            0,
            "permits leaked into the semaphore"
        );
        p.rounds
    }

    /// One 1-permit semaphore; try_acquire; acquire → Pending; drop the first
    /// permit (release); acquire → Ready; drop the second permit (release).
    pub fn semaphore_reused_handoff_guard_drop(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let sem = Semaphore::new(1);
        let sem = black_box(&sem);
        m.time(|| {
            for _ in 0..p.rounds {
                let held = sem
                    .try_acquire()
                    .expect("try_acquire on a free 1-permit semaphore");
                let mut acquire = pin!(sem.acquire());
                expect_pending(
                    acquire.as_mut(),
                    &mut cx,
                    "acquire while the permit is held",
                );
                drop(held);
                let permit = expect_ready(acquire.as_mut(), &mut cx, "acquire after the release")
                    .expect("semaphore closed");
                drop(permit);
            }
        });
        assert_eq!(sem.available_permits(), 1, "permit lost");
        p.rounds
    }

    /// 1-permit semaphore; try_acquire succeeds; drop the permit.
    pub fn semaphore_try_one_and_return(p: &Params, m: &mut Meter) -> u64 {
        let sem = Semaphore::new(1);
        let sem = black_box(&sem);
        m.time(|| {
            for _ in 0..p.rounds {
                let permit = sem
                    .try_acquire()
                    .expect("try_acquire on a free 1-permit semaphore");
                drop(permit);
            }
        });
        p.rounds
    }

    /// One mutex; the lock future is Ready on its first poll; unlock.
    pub fn mutex_uncontended_reuse(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mutex = Mutex::new(());
        let mutex = black_box(&mutex);
        m.time(|| {
            for _ in 0..p.rounds {
                let mut lock = pin!(mutex.lock());
                let guard = expect_ready(lock.as_mut(), &mut cx, "lock on a free mutex");
                drop(guard);
            }
        });
        p.rounds
    }

    /// Lock; four lock futures → Pending; unlock; each waiter in FIFO order
    /// is Ready on its next poll and unlocks.
    pub fn mutex_four_queued_waiters(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mutex = Mutex::new(());
        let mutex = black_box(&mutex);
        m.time(|| {
            for _ in 0..p.rounds {
                let mut first = pin!(mutex.lock());
                let holder = expect_ready(first.as_mut(), &mut cx, "lock on a free mutex");
                let waiters: [_; QUEUED_WAITERS] = std::array::from_fn(|_| mutex.lock());
                let mut waiters = pin!(waiters);
                for i in 0..QUEUED_WAITERS {
                    expect_pending(
                        pin_elem(waiters.as_mut(), i),
                        &mut cx,
                        "lock on a held mutex",
                    );
                }
                drop(holder);
                for i in 0..QUEUED_WAITERS {
                    let guard = expect_ready(
                        pin_elem(waiters.as_mut(), i),
                        &mut cx,
                        "queued lock after unlock",
                    );
                    drop(guard);
                }
            }
        });
        p.rounds
    }

    /// Fresh `Notify`; notified → Pending; notify_one; notified → Ready.
    pub fn notify_fresh_one_waiter(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        m.time(|| {
            for _ in 0..p.rounds {
                let notify = Notify::new();
                let notify = black_box(&notify);
                let mut wait = pin!(notify.notified());
                expect_pending(wait.as_mut(), &mut cx, "notified before notify_one");
                notify.notify_one();
                expect_ready(wait.as_mut(), &mut cx, "notified after notify_one");
            }
        });
        p.rounds
    }

    /// The same on one `Notify`.
    pub fn notify_reused_one_waiter(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let notify = Notify::new();
        let notify = black_box(&notify);
        m.time(|| {
            for _ in 0..p.rounds {
                let mut wait = pin!(notify.notified());
                expect_pending(wait.as_mut(), &mut cx, "notified before notify_one");
                notify.notify_one();
                expect_ready(wait.as_mut(), &mut cx, "notified after notify_one");
            }
        });
        p.rounds
    }

    /// 16 `notified()` futures → Pending; notify_waiters; all 16 Ready.
    /// `notify_waiters` stores no state, so the "reset" step is empty.
    pub fn event_fan_out_16(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let notify = Notify::new();
        let notify = black_box(&notify);
        m.time(|| {
            for _ in 0..p.rounds {
                let waits: [_; FAN_OUT] = std::array::from_fn(|_| notify.notified());
                let mut waits = pin!(waits);
                for i in 0..FAN_OUT {
                    expect_pending(
                        pin_elem(waits.as_mut(), i),
                        &mut cx,
                        "notified before notify_waiters",
                    );
                }
                notify.notify_waiters();
                for i in 0..FAN_OUT {
                    expect_ready(
                        pin_elem(waits.as_mut(), i),
                        &mut cx,
                        "notified after notify_waiters",
                    );
                }
            }
        });
        p.rounds
    }
}

/// async-lock 2.6: `async_lock::{Semaphore, Mutex}` (guards release on drop).
pub mod async_lock_peer {
    use super::*;
    use async_lock::{Mutex, Semaphore};

    /// One 1-permit semaphore; try_acquire; acquire → Pending; drop the first
    /// guard (release); acquire → Ready; drop the second guard (release).
    pub fn semaphore_reused_handoff_guard_drop(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let sem = Semaphore::new(1);
        let sem = black_box(&sem);
        m.time(|| {
            for _ in 0..p.rounds {
                let held = sem
                    .try_acquire()
                    .expect("try_acquire on a free 1-permit semaphore");
                let mut acquire = pin!(sem.acquire());
                expect_pending(
                    acquire.as_mut(),
                    &mut cx,
                    "acquire while the permit is held",
                );
                drop(held);
                let guard = expect_ready(acquire.as_mut(), &mut cx, "acquire after the release");
                drop(guard);
            }
        });
        assert!(sem.try_acquire().is_some(), "permit lost");
        p.rounds
    }

    /// 1-permit semaphore; try_acquire succeeds; drop the guard.
    pub fn semaphore_try_one_and_return(p: &Params, m: &mut Meter) -> u64 {
        let sem = Semaphore::new(1);
        let sem = black_box(&sem);
        m.time(|| {
            for _ in 0..p.rounds {
                let guard = sem
                    .try_acquire()
                    .expect("try_acquire on a free 1-permit semaphore");
                drop(guard);
            }
        });
        p.rounds
    }

    /// One mutex; the lock future is Ready on its first poll; unlock.
    pub fn mutex_uncontended_reuse(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mutex = Mutex::new(());
        let mutex = black_box(&mutex);
        m.time(|| {
            for _ in 0..p.rounds {
                let mut lock = pin!(mutex.lock());
                let guard = expect_ready(lock.as_mut(), &mut cx, "lock on a free mutex");
                drop(guard);
            }
        });
        p.rounds
    }

    /// Lock; four lock futures → Pending; unlock; each waiter in FIFO order
    /// is Ready on its next poll and unlocks.
    pub fn mutex_four_queued_waiters(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mutex = Mutex::new(());
        let mutex = black_box(&mutex);
        m.time(|| {
            for _ in 0..p.rounds {
                let mut first = pin!(mutex.lock());
                let holder = expect_ready(first.as_mut(), &mut cx, "lock on a free mutex");
                let waiters: [_; QUEUED_WAITERS] = std::array::from_fn(|_| mutex.lock());
                let mut waiters = pin!(waiters);
                for i in 0..QUEUED_WAITERS {
                    expect_pending(
                        pin_elem(waiters.as_mut(), i),
                        &mut cx,
                        "lock on a held mutex",
                    );
                }
                drop(holder);
                for i in 0..QUEUED_WAITERS {
                    let guard = expect_ready(
                        pin_elem(waiters.as_mut(), i),
                        &mut cx,
                        "queued lock after unlock",
                    );
                    drop(guard);
                }
            }
        });
        p.rounds
    }
}

/// event-listener 2.5: `event_listener::Event`, the wait primitive async-lock
/// is built on. A listener registers when `listen()` creates it.
pub mod event_listener_peer {
    use super::*;
    use event_listener::{Event, EventListener};
    use std::pin::Pin;

    /// Fresh `Event`; listener → Pending; notify(1); listener → Ready.
    pub fn notify_fresh_one_waiter(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        m.time(|| {
            for _ in 0..p.rounds {
                let event = Event::new();
                let event = black_box(&event);
                let mut listener = event.listen();
                expect_pending(Pin::new(&mut listener), &mut cx, "listener before notify");
                event.notify(1);
                expect_ready(Pin::new(&mut listener), &mut cx, "listener after notify(1)");
            }
        });
        p.rounds
    }

    /// The same on one `Event`.
    pub fn notify_reused_one_waiter(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let event = Event::new();
        let event = black_box(&event);
        m.time(|| {
            for _ in 0..p.rounds {
                let mut listener = event.listen();
                expect_pending(Pin::new(&mut listener), &mut cx, "listener before notify");
                event.notify(1);
                expect_ready(Pin::new(&mut listener), &mut cx, "listener after notify(1)");
            }
        });
        p.rounds
    }

    /// 16 listeners → Pending; notify(usize::MAX); all 16 Ready. An `Event`
    /// stores no state, so the "reset" step is empty.
    pub fn event_fan_out_16(p: &Params, m: &mut Meter) -> u64 {
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let event = Event::new();
        let event = black_box(&event);
        m.time(|| {
            for _ in 0..p.rounds {
                let mut listeners: [EventListener; FAN_OUT] =
                    std::array::from_fn(|_| event.listen());
                for listener in listeners.iter_mut() {
                    expect_pending(Pin::new(listener), &mut cx, "listener before notify");
                }
                event.notify(usize::MAX);
                for listener in listeners.iter_mut() {
                    expect_ready(Pin::new(listener), &mut cx, "listener after notify(all)");
                }
            }
        });
        p.rounds
    }
}

/// Rust std atomics: the `baseline/cas-acquire+store-release` floor, measured
/// by this harness so it can be set beside the C harness's number.
pub mod std_baseline {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// One compare-exchange (acquire) and one release store.
    pub fn cas_acquire_store_release(p: &Params, m: &mut Meter) -> u64 {
        let word = AtomicUsize::new(0);
        let word = black_box(&word);
        m.time(|| {
            for _ in 0..p.rounds {
                if word
                    .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    panic!("wrong result at step `cas 0 -> 1`: the word was not 0");
                }
                word.store(0, Ordering::Release);
            }
        });
        p.rounds
    }
}
