//! Executor rows: the same task-level work on Tokio's current-thread runtime
//! and on async-executor's `LocalExecutor` (driven by
//! `futures_lite::future::block_on`), with real wakers. Sizes follow smol's
//! async-executor benches. One round is one iteration of the scenario table.
//!
//! Runtimes and executors are built before the measured segment and dropped
//! after it, except in `executor/create`, where building and dropping them is
//! the work.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::harness::{counting_polls, leak, Meter, Params};

/// Tasks spawned per round by `executor/spawn-batch`.
pub const SPAWN_BATCH: usize = 250;
/// Tasks spawned per round by `executor/spawn-many-local`.
pub const LIGHT_TASKS: usize = 25_000;
/// Chains (spawn-recursively), tasks (yield-now) and ring size (channels).
pub const TASKS: usize = 300;
/// Depth (spawn-recursively), yields per task, trips of the token.
pub const STEPS: u32 = 300;

/// Checks the queued-handoff polls: A must get the permit on its first poll,
/// B must have waited (at least one Pending) behind A.
fn check_handoff(a_polls: u32, b_polls: u32) {
    assert_eq!(
        a_polls, 1,
        "wrong result at step `A acquires`: expected Ready on first poll"
    );
    assert!(
        b_polls >= 2,
        "wrong result at step `B queues`: expected Pending before Ready"
    );
}

/// Tokio 1.24, current-thread runtime (`rt` feature, no I/O or time driver).
pub mod tokio_ct {
    use super::*;
    use tokio::runtime::{Builder, Runtime};
    use tokio::sync::{mpsc, Notify, Semaphore};
    use tokio::task::{yield_now, JoinHandle};

    fn runtime() -> Runtime {
        Builder::new_current_thread()
            .build()
            .expect("building a current-thread runtime")
    }

    /// Build a runtime, spawn one empty task, run it, drop the runtime.
    pub fn create(p: &Params, m: &mut Meter) -> u64 {
        m.time(|| {
            for _ in 0..p.rounds {
                let rt = runtime();
                let task = rt.spawn(async {});
                rt.block_on(task).expect("empty task");
                drop(rt);
            }
        });
        p.rounds
    }

    /// Spawn one empty task and await its join handle.
    pub fn spawn_one(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime();
        m.time(|| {
            rt.block_on(async {
                for _ in 0..p.rounds {
                    tokio::spawn(async {}).await.expect("empty task");
                }
            })
        });
        p.rounds
    }

    /// Spawn 250 tasks that each yield once; only the spawning is measured,
    /// the tasks are then run and joined outside the segment.
    pub fn spawn_batch(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime();
        let mut handles = Vec::with_capacity(SPAWN_BATCH);
        rt.block_on(async {
            for _ in 0..p.rounds {
                m.time(|| {
                    for _ in 0..SPAWN_BATCH {
                        handles.push(tokio::spawn(yield_now()));
                    }
                });
                for handle in handles.drain(..) {
                    handle.await.expect("yielding task");
                }
            }
        });
        p.rounds
    }

    /// Spawn 25,000 empty tasks, then await them in order.
    pub fn spawn_many_local(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime();
        let mut handles = Vec::with_capacity(LIGHT_TASKS);
        m.time(|| {
            rt.block_on(async {
                for _ in 0..p.rounds {
                    for _ in 0..LIGHT_TASKS {
                        handles.push(tokio::spawn(async {}));
                    }
                    for handle in handles.drain(..) {
                        handle.await.expect("empty task");
                    }
                }
            })
        });
        p.rounds
    }

    /// One level of a spawn chain: spawns the next level and waits for it.
    /// A named future (rather than a recursive `async fn`) needs no boxing.
    struct Chain {
        remaining: u32,
        child: Option<JoinHandle<()>>,
    }

    impl Future for Chain {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let this = self.get_mut(); // `Chain` is Unpin
            if this.remaining == 0 {
                return Poll::Ready(());
            }
            let next = this.remaining - 1;
            let child = this.child.get_or_insert_with(|| {
                tokio::spawn(Chain {
                    remaining: next,
                    child: None,
                })
            });
            Pin::new(child)
                .poll(cx)
                .map(|joined| joined.expect("chain task"))
        }
    }

    /// 300 chains, each 300 spawns deep (the root counts as the first).
    pub fn spawn_recursively(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime();
        let mut roots = Vec::with_capacity(TASKS);
        m.time(|| {
            rt.block_on(async {
                for _ in 0..p.rounds {
                    for _ in 0..TASKS {
                        roots.push(tokio::spawn(Chain {
                            remaining: STEPS - 1,
                            child: None,
                        }));
                    }
                    for root in roots.drain(..) {
                        root.await.expect("chain root");
                    }
                }
            })
        });
        p.rounds
    }

    /// 300 tasks × 300 `yield_now`.
    pub fn yield_now_row(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime();
        let mut tasks = Vec::with_capacity(TASKS);
        m.time(|| {
            rt.block_on(async {
                for _ in 0..p.rounds {
                    for _ in 0..TASKS {
                        tasks.push(tokio::spawn(async {
                            for _ in 0..STEPS {
                                yield_now().await;
                            }
                        }));
                    }
                    for task in tasks.drain(..) {
                        task.await.expect("yielding task");
                    }
                }
            })
        });
        p.rounds
    }

    /// A ring of 300 tasks joined by `tokio::sync::mpsc::channel(1)`; one
    /// token goes round 300 times. Building the ring is part of the round.
    pub fn channels(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime();
        let mut tasks = Vec::with_capacity(TASKS);
        m.time(|| {
            rt.block_on(async {
                for _ in 0..p.rounds {
                    let (first_tx, mut from_last) = mpsc::channel::<()>(1);
                    for _ in 0..TASKS {
                        let (tx, rx) = mpsc::channel::<()>(1);
                        let mut rx_in = std::mem::replace(&mut from_last, rx);
                        tasks.push(tokio::spawn(async move {
                            for _ in 0..STEPS {
                                rx_in.recv().await.expect("ring channel closed");
                                tx.send(()).await.expect("ring channel closed");
                            }
                        }));
                    }
                    for _ in 0..STEPS {
                        first_tx.send(()).await.expect("ring channel closed");
                        from_last.recv().await.expect("ring channel closed");
                    }
                    for task in tasks.drain(..) {
                        task.await.expect("ring task");
                    }
                }
            })
        });
        p.rounds
    }

    /// One-permit `Semaphore`: A takes the permit and yields, B queues, A
    /// releases, B gets the permit and finishes. One round = one pair.
    pub fn queued_handoff(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime();
        let sem: &'static Semaphore = leak(Semaphore::new(1));
        m.time(|| {
            rt.block_on(async {
                for _ in 0..p.rounds {
                    let a = tokio::spawn(async move {
                        let (permit, polls) = counting_polls(sem.acquire()).await;
                        let permit = permit.expect("semaphore closed");
                        yield_now().await;
                        drop(permit);
                        polls
                    });
                    let b = tokio::spawn(async move {
                        let (permit, polls) = counting_polls(sem.acquire()).await;
                        drop(permit.expect("semaphore closed"));
                        polls
                    });
                    let a_polls = a.await.expect("task A");
                    let b_polls = b.await.expect("task B");
                    check_handoff(a_polls, b_polls);
                }
            })
        });
        assert_eq!(sem.available_permits(), 1, "permit lost");
        p.rounds
    }

    /// `loop/ping-pong-same-thread`: two tasks hand one item back and forth
    /// through a `Notify` each way (`notify_one` stores a permit when nobody
    /// waits: an auto-reset event). A notifies `ab` and waits on `ba`; B
    /// waits on `ab` and notifies `ba`. One round = one round trip.
    pub fn ping_pong_same_thread(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime();
        let ab: &'static Notify = leak(Notify::new());
        let ba: &'static Notify = leak(Notify::new());
        let rounds = p.rounds;
        let trips = m.time(|| {
            rt.block_on(async {
                let a = tokio::spawn(async move {
                    let mut trips = 0u64;
                    for _ in 0..rounds {
                        ab.notify_one();
                        ba.notified().await;
                        trips += 1;
                    }
                    trips
                });
                let b = tokio::spawn(async move {
                    for _ in 0..rounds {
                        ab.notified().await;
                        ba.notify_one();
                    }
                });
                let trips = a.await.expect("task A");
                b.await.expect("task B");
                trips
            })
        });
        assert_eq!(trips, rounds, "wrong result: every round trip ran");
        p.rounds
    }

    /// N long-lived waiter tasks on one `Notify`; each round waits until all
    /// N are registered (`enable`d), then `notify_waiters` releases them all.
    pub fn notify_fan_out<const N: usize>(p: &Params, m: &mut Meter) -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        let rt = runtime();
        let notify: &'static Notify = leak(Notify::new());
        // Registrations so far. Relaxed suffices: all tasks share one thread.
        let registered: &'static AtomicU64 = leak(AtomicU64::new(0));
        let rounds = p.rounds;
        rt.block_on(async {
            let waiters: Vec<_> = (0..N)
                .map(|_| {
                    tokio::spawn(async move {
                        for _ in 0..rounds {
                            let mut wait = std::pin::pin!(notify.notified());
                            wait.as_mut().enable();
                            registered.fetch_add(1, Ordering::Relaxed);
                            wait.await;
                        }
                    })
                })
                .collect();
            m.start();
            for round in 1..=rounds {
                while registered.load(Ordering::Relaxed) < round * N as u64 {
                    yield_now().await;
                }
                notify.notify_waiters();
            }
            for waiter in waiters {
                waiter.await.expect("waiter task");
            }
            m.stop();
        });
        rounds
    }
}

/// async-executor 1.5: `LocalExecutor` run by `futures_lite::future::block_on`
/// on the benchmark thread; the sync primitives are the smol stack's
/// (async-lock, event-listener).
pub mod async_exec {
    use super::*;
    use crate::one_slot::one_slot;
    use async_executor::{LocalExecutor, Task};
    use event_listener::Event;
    use futures_lite::future::{block_on, yield_now};

    /// Create an executor, spawn one empty task, run it, drop the executor.
    pub fn create(p: &Params, m: &mut Meter) -> u64 {
        m.time(|| {
            for _ in 0..p.rounds {
                let ex = LocalExecutor::new();
                let task = ex.spawn(async {});
                block_on(ex.run(task));
                drop(ex);
            }
        });
        p.rounds
    }

    /// Spawn one empty task and await it.
    pub fn spawn_one(p: &Params, m: &mut Meter) -> u64 {
        let ex = LocalExecutor::new();
        m.time(|| {
            block_on(ex.run(async {
                for _ in 0..p.rounds {
                    ex.spawn(async {}).await;
                }
            }))
        });
        p.rounds
    }

    /// Spawn 250 tasks that each yield once; only the spawning is measured,
    /// the tasks are then run and awaited outside the segment.
    pub fn spawn_batch(p: &Params, m: &mut Meter) -> u64 {
        let ex = LocalExecutor::new();
        let mut tasks = Vec::with_capacity(SPAWN_BATCH);
        block_on(ex.run(async {
            for _ in 0..p.rounds {
                m.time(|| {
                    for _ in 0..SPAWN_BATCH {
                        tasks.push(ex.spawn(yield_now()));
                    }
                });
                for task in tasks.drain(..) {
                    task.await;
                }
            }
        }));
        p.rounds
    }

    /// Spawn 25,000 empty tasks, then await them in order.
    pub fn spawn_many_local(p: &Params, m: &mut Meter) -> u64 {
        let ex = LocalExecutor::new();
        let mut tasks = Vec::with_capacity(LIGHT_TASKS);
        m.time(|| {
            block_on(ex.run(async {
                for _ in 0..p.rounds {
                    for _ in 0..LIGHT_TASKS {
                        tasks.push(ex.spawn(async {}));
                    }
                    for task in tasks.drain(..) {
                        task.await;
                    }
                }
            }))
        });
        p.rounds
    }

    /// One level of a spawn chain (see the Tokio version). The executor is
    /// `'static` because tasks that refer to their executor must outlive it.
    struct Chain {
        ex: &'static LocalExecutor<'static>,
        remaining: u32,
        child: Option<Task<()>>,
    }

    impl Future for Chain {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let this = self.get_mut(); // `Chain` is Unpin
            if this.remaining == 0 {
                return Poll::Ready(());
            }
            let (ex, next) = (this.ex, this.remaining - 1);
            let child = this.child.get_or_insert_with(|| {
                ex.spawn(Chain {
                    ex,
                    remaining: next,
                    child: None,
                })
            });
            Pin::new(child).poll(cx)
        }
    }

    /// 300 chains, each 300 spawns deep (the root counts as the first).
    pub fn spawn_recursively(p: &Params, m: &mut Meter) -> u64 {
        let ex: &'static LocalExecutor<'static> = leak(LocalExecutor::new());
        let mut roots = Vec::with_capacity(TASKS);
        m.time(|| {
            block_on(ex.run(async {
                for _ in 0..p.rounds {
                    for _ in 0..TASKS {
                        roots.push(ex.spawn(Chain {
                            ex,
                            remaining: STEPS - 1,
                            child: None,
                        }));
                    }
                    for root in roots.drain(..) {
                        root.await;
                    }
                }
            }))
        });
        p.rounds
    }

    /// 300 tasks × 300 `yield_now`.
    pub fn yield_now_row(p: &Params, m: &mut Meter) -> u64 {
        let ex = LocalExecutor::new();
        let mut tasks = Vec::with_capacity(TASKS);
        m.time(|| {
            block_on(ex.run(async {
                for _ in 0..p.rounds {
                    for _ in 0..TASKS {
                        tasks.push(ex.spawn(async {
                            for _ in 0..STEPS {
                                yield_now().await;
                            }
                        }));
                    }
                    for task in tasks.drain(..) {
                        task.await;
                    }
                }
            }))
        });
        p.rounds
    }

    /// A ring of 300 tasks joined by one-slot channels (ConcurrentQueue +
    /// event-listener, see `one_slot`); one token goes round 300 times.
    pub fn channels(p: &Params, m: &mut Meter) -> u64 {
        let ex = LocalExecutor::new();
        let mut tasks = Vec::with_capacity(TASKS);
        m.time(|| {
            block_on(ex.run(async {
                for _ in 0..p.rounds {
                    let (first_tx, mut from_last) = one_slot();
                    for _ in 0..TASKS {
                        let (tx, rx) = one_slot();
                        let rx_in = std::mem::replace(&mut from_last, rx);
                        tasks.push(ex.spawn(async move {
                            for _ in 0..STEPS {
                                rx_in.recv().await;
                                tx.send().await;
                            }
                        }));
                    }
                    for _ in 0..STEPS {
                        first_tx.send().await;
                        from_last.recv().await;
                    }
                    for task in tasks.drain(..) {
                        task.await;
                    }
                }
            }))
        });
        p.rounds
    }

    /// One-permit `async_lock::Semaphore`: A takes the permit and yields, B
    /// queues, A drops its guard, B gets the permit and finishes.
    pub fn queued_handoff(p: &Params, m: &mut Meter) -> u64 {
        // Declared before the executor: its tasks borrow it, so it must
        // outlive the executor.
        let sem = async_lock::Semaphore::new(1);
        let sem = &sem;
        let ex = LocalExecutor::new();
        m.time(|| {
            block_on(ex.run(async {
                for _ in 0..p.rounds {
                    let a = ex.spawn(async move {
                        let (guard, polls) = counting_polls(sem.acquire()).await;
                        yield_now().await;
                        drop(guard);
                        polls
                    });
                    let b = ex.spawn(async move {
                        let (guard, polls) = counting_polls(sem.acquire()).await;
                        drop(guard);
                        polls
                    });
                    let a_polls = a.await;
                    let b_polls = b.await;
                    check_handoff(a_polls, b_polls);
                }
            }))
        });
        assert!(sem.try_acquire().is_some(), "permit lost");
        p.rounds
    }

    /// N long-lived waiter tasks on one `Event`; each round waits until all N
    /// hold a listener, then `notify(usize::MAX)` releases them all.
    pub fn notify_fan_out<const N: usize>(p: &Params, m: &mut Meter) -> u64 {
        use std::cell::Cell;
        // Declared before the executor: its tasks borrow them.
        let event = Event::new();
        let registered = Cell::new(0u64); // one thread: a Cell is enough
        let (event, registered, rounds) = (&event, &registered, p.rounds);
        let ex = LocalExecutor::new();
        block_on(ex.run(async {
            let waiters: Vec<_> = (0..N)
                .map(|_| {
                    ex.spawn(async move {
                        for _ in 0..rounds {
                            let listener = event.listen();
                            registered.set(registered.get() + 1);
                            listener.await;
                        }
                    })
                })
                .collect();
            m.start();
            for round in 1..=rounds {
                while registered.get() < round * N as u64 {
                    yield_now().await;
                }
                event.notify(usize::MAX);
            }
            for waiter in waiters {
                waiter.await;
            }
            m.stop();
        }));
        rounds
    }
}
