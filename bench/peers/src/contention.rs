//! Contention rows: N executor threads × 64 tasks, each task locking and
//! unlocking one shared mutex (or acquiring and releasing one permit of a
//! shared k-permit semaphore) `rounds` times. The reported time is per
//! operation over all threads: measured time / (N × 64 × rounds).
//!
//! Tokio: one multi-thread runtime with N worker threads (Debian's tokio
//! package provides `rt-multi-thread`). The smol stack: one
//! `async_executor::Executor` run by N threads, each in
//! `futures_lite::future::block_on(ex.run(..))`. In both, the spawning
//! thread waits for the tasks without running any of them, and the measured
//! segment covers spawning and joining all tasks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::harness::{Meter, Params};

/// Tasks per executor thread.
pub const TASKS_PER_THREAD: usize = 64;

fn operations(p: &Params) -> u64 {
    (p.threads * TASKS_PER_THREAD) as u64 * p.rounds
}

/// Tokio 1.24: `tokio::sync::{Mutex, Semaphore}` on a multi-thread runtime.
pub mod tokio_mt {
    use super::*;
    use tokio::runtime::{Builder, Runtime};

    fn runtime(threads: usize) -> Runtime {
        Builder::new_multi_thread()
            .worker_threads(threads)
            .build()
            .expect("building a multi-thread runtime")
    }

    pub fn mutex(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime(p.threads);
        // The guarded counter checks mutual exclusion: a lost update would
        // leave it short of the number of operations.
        let counter = Arc::new(tokio::sync::Mutex::new(0u64));
        let rounds = p.rounds;
        m.time(|| {
            rt.block_on(async {
                let tasks: Vec<_> = (0..p.threads * TASKS_PER_THREAD)
                    .map(|_| {
                        let counter = counter.clone();
                        tokio::spawn(async move {
                            for _ in 0..rounds {
                                *counter.lock().await += 1;
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("contention task");
                }
            })
        });
        drop(rt);
        let total = *counter.try_lock().expect("mutex left locked");
        assert_eq!(
            total,
            operations(p),
            "wrong result: lost updates under the mutex"
        );
        operations(p)
    }

    pub fn semaphore(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime(p.threads);
        let sem = Arc::new(tokio::sync::Semaphore::new(p.permits));
        let rounds = p.rounds;
        m.time(|| {
            rt.block_on(async {
                let tasks: Vec<_> = (0..p.threads * TASKS_PER_THREAD)
                    .map(|_| {
                        let sem = sem.clone();
                        tokio::spawn(async move {
                            for _ in 0..rounds {
                                drop(sem.acquire().await.expect("semaphore closed"));
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("contention task");
                }
            })
        });
        drop(rt);
        assert_eq!(
            sem.available_permits(),
            p.permits,
            "wrong result: permits lost or gained"
        );
        operations(p)
    }
}

/// async-lock 2.6 on an `async_executor::Executor` run by N threads.
pub mod smol_mt {
    use super::*;
    use async_executor::{Executor, Task};
    use event_listener::Event;
    use futures_lite::future::block_on;

    /// Tells the executor threads to return once the work is done.
    struct Stop {
        flag: AtomicBool,
        event: Event,
    }

    impl Stop {
        fn new() -> Self {
            Stop {
                flag: AtomicBool::new(false),
                event: Event::new(),
            }
        }

        fn signal(&self) {
            // Release/Acquire: the executor threads see every task finished
            // before they return.
            self.flag.store(true, Ordering::Release);
            self.event.notify(usize::MAX);
        }

        async fn wait(&self) {
            loop {
                if self.flag.load(Ordering::Acquire) {
                    return;
                }
                let listener = self.event.listen();
                if self.flag.load(Ordering::Acquire) {
                    return;
                }
                listener.await;
            }
        }
    }

    /// Runs `spawn_all` (which spawns the tasks onto the executor) and waits
    /// for the tasks while `threads` threads drive the executor; the
    /// measured segment covers spawning and joining.
    fn drive<'a>(
        ex: &Executor<'a>,
        threads: usize,
        m: &mut Meter,
        spawn_all: impl FnOnce(&Executor<'a>) -> Vec<Task<()>>,
    ) {
        let stop = Stop::new();
        std::thread::scope(|scope| {
            let runners: Vec<_> = (0..threads)
                .map(|_| scope.spawn(|| block_on(ex.run(stop.wait()))))
                .collect();
            m.time(|| {
                let tasks = spawn_all(ex);
                block_on(async {
                    for task in tasks {
                        task.await;
                    }
                });
            });
            stop.signal();
            for runner in runners {
                runner.join().expect("executor thread panicked");
            }
        });
    }

    pub fn mutex(p: &Params, m: &mut Meter) -> u64 {
        let counter = async_lock::Mutex::new(0u64);
        let counter = &counter;
        let rounds = p.rounds;
        let ex = Executor::new();
        drive(&ex, p.threads, m, |ex| {
            (0..p.threads * TASKS_PER_THREAD)
                .map(|_| {
                    ex.spawn(async move {
                        for _ in 0..rounds {
                            *counter.lock().await += 1;
                        }
                    })
                })
                .collect()
        });
        drop(ex);
        let total = *counter.try_lock().expect("mutex left locked");
        assert_eq!(
            total,
            operations(p),
            "wrong result: lost updates under the mutex"
        );
        operations(p)
    }

    pub fn semaphore(p: &Params, m: &mut Meter) -> u64 {
        let sem = async_lock::Semaphore::new(p.permits);
        let sem = &sem;
        let rounds = p.rounds;
        let ex = Executor::new();
        drive(&ex, p.threads, m, |ex| {
            (0..p.threads * TASKS_PER_THREAD)
                .map(|_| {
                    ex.spawn(async move {
                        for _ in 0..rounds {
                            drop(sem.acquire().await);
                        }
                    })
                })
                .collect()
        });
        drop(ex);
        // Every permit must be back: take them all, then find none left.
        let guards: Vec<_> = (0..p.permits)
            .map(|_| sem.try_acquire().expect("wrong result: permits lost"))
            .collect();
        assert!(sem.try_acquire().is_none(), "wrong result: permits gained");
        drop(guards);
        operations(p)
    }
}
