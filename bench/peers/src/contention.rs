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
//!
//! `--waits` (`Meter::waits` set): the same batch with every acquire timed,
//! from the call of `lock()`/`acquire()` (its future is polled at once by
//! the `.await`) until the task holds the guard, into a histogram per task
//! that is allocated before the segment and handed back by the task. The
//! throughput batches are the `WAITS = false` instances: no clock read, no
//! histogram.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::harness::{Meter, Params, WaitHistogram};

/// Tasks per executor thread.
pub const TASKS_PER_THREAD: usize = 64;

fn operations(p: &Params) -> u64 {
    (p.threads * TASKS_PER_THREAD) as u64 * p.rounds
}

/// One histogram per task under `--waits` (made here, before the measured
/// segment), none otherwise.
fn task_histograms<const WAITS: bool>(p: &Params) -> Vec<Option<Box<WaitHistogram>>> {
    (0..p.threads * TASKS_PER_THREAD)
        .map(|_| WAITS.then(WaitHistogram::new))
        .collect()
}

/// Adds the tasks' histograms (handed back when they finished) into the
/// meter's.
fn merge_waits(m: &mut Meter, histograms: Vec<Option<Box<WaitHistogram>>>) {
    if let Some(total) = m.waits.as_mut() {
        for h in histograms.iter().flatten() {
            total.merge(h);
        }
    }
}

/// Starts timing one acquire (`None`, and no clock read, without `--waits`).
#[inline(always)]
fn wait_begin<const WAITS: bool>() -> Option<Instant> {
    WAITS.then(Instant::now)
}

/// Ends timing one acquire begun by `wait_begin`.
#[inline(always)]
fn wait_end(histogram: &mut Option<Box<WaitHistogram>>, started: Option<Instant>) {
    if let (Some(h), Some(t)) = (histogram.as_mut(), started) {
        h.record_since(t);
    }
}

/// Runs the `WAITS` instance of a batch when the meter asks for waits.
fn dispatch(
    p: &Params,
    m: &mut Meter,
    plain: fn(&Params, &mut Meter) -> u64,
    timed: fn(&Params, &mut Meter) -> u64,
) -> u64 {
    if m.waits.is_some() {
        timed(p, m)
    } else {
        plain(p, m)
    }
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
        dispatch(p, m, mutex_on::<false>, mutex_on::<true>)
    }

    fn mutex_on<const WAITS: bool>(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime(p.threads);
        // The guarded counter checks mutual exclusion: a lost update would
        // leave it short of the number of operations.
        let counter = Arc::new(tokio::sync::Mutex::new(0u64));
        let rounds = p.rounds;
        let histograms = task_histograms::<WAITS>(p);
        let histograms = m.time(|| {
            rt.block_on(async {
                let tasks: Vec<_> = histograms
                    .into_iter()
                    .map(|mut histogram| {
                        let counter = counter.clone();
                        tokio::spawn(async move {
                            for _ in 0..rounds {
                                let started = wait_begin::<WAITS>();
                                let mut guard = counter.lock().await;
                                wait_end(&mut histogram, started);
                                *guard += 1;
                            }
                            histogram
                        })
                    })
                    .collect();
                let mut back = Vec::with_capacity(if WAITS { tasks.len() } else { 0 });
                for task in tasks {
                    let histogram = task.await.expect("contention task");
                    if WAITS {
                        back.push(histogram);
                    }
                }
                back
            })
        });
        drop(rt);
        merge_waits(m, histograms);
        let total = *counter.try_lock().expect("mutex left locked");
        assert_eq!(
            total,
            operations(p),
            "wrong result: lost updates under the mutex"
        );
        operations(p)
    }

    pub fn semaphore(p: &Params, m: &mut Meter) -> u64 {
        dispatch(p, m, semaphore_on::<false>, semaphore_on::<true>)
    }

    fn semaphore_on<const WAITS: bool>(p: &Params, m: &mut Meter) -> u64 {
        let rt = runtime(p.threads);
        let sem = Arc::new(tokio::sync::Semaphore::new(p.permits));
        let rounds = p.rounds;
        let histograms = task_histograms::<WAITS>(p);
        let histograms = m.time(|| {
            rt.block_on(async {
                let tasks: Vec<_> = histograms
                    .into_iter()
                    .map(|mut histogram| {
                        let sem = sem.clone();
                        tokio::spawn(async move {
                            for _ in 0..rounds {
                                let started = wait_begin::<WAITS>();
                                let permit = sem.acquire().await.expect("semaphore closed");
                                wait_end(&mut histogram, started);
                                drop(permit);
                            }
                            histogram
                        })
                    })
                    .collect();
                let mut back = Vec::with_capacity(if WAITS { tasks.len() } else { 0 });
                for task in tasks {
                    let histogram = task.await.expect("contention task");
                    if WAITS {
                        back.push(histogram);
                    }
                }
                back
            })
        });
        drop(rt);
        merge_waits(m, histograms);
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
    /// The tasks hand back their wait histograms (`None` without `--waits`).
    fn drive<'a>(
        ex: &Executor<'a>,
        threads: usize,
        m: &mut Meter,
        spawn_all: impl FnOnce(&Executor<'a>) -> Vec<Task<Option<Box<WaitHistogram>>>>,
    ) -> Vec<Option<Box<WaitHistogram>>> {
        let stop = Stop::new();
        let waits = m.waits.is_some();
        std::thread::scope(|scope| {
            let runners: Vec<_> = (0..threads)
                .map(|_| scope.spawn(|| block_on(ex.run(stop.wait()))))
                .collect();
            let back = m.time(|| {
                let tasks = spawn_all(ex);
                block_on(async {
                    let mut back = Vec::with_capacity(if waits { tasks.len() } else { 0 });
                    for task in tasks {
                        let histogram = task.await;
                        if waits {
                            back.push(histogram);
                        }
                    }
                    back
                })
            });
            stop.signal();
            for runner in runners {
                runner.join().expect("executor thread panicked");
            }
            back
        })
    }

    pub fn mutex(p: &Params, m: &mut Meter) -> u64 {
        dispatch(p, m, mutex_on::<false>, mutex_on::<true>)
    }

    fn mutex_on<const WAITS: bool>(p: &Params, m: &mut Meter) -> u64 {
        let counter = async_lock::Mutex::new(0u64);
        let counter = &counter;
        let rounds = p.rounds;
        let histograms = task_histograms::<WAITS>(p);
        let ex = Executor::new();
        let histograms = drive(&ex, p.threads, m, |ex| {
            histograms
                .into_iter()
                .map(|mut histogram| {
                    ex.spawn(async move {
                        for _ in 0..rounds {
                            let started = wait_begin::<WAITS>();
                            let mut guard = counter.lock().await;
                            wait_end(&mut histogram, started);
                            *guard += 1;
                        }
                        histogram
                    })
                })
                .collect()
        });
        drop(ex);
        merge_waits(m, histograms);
        let total = *counter.try_lock().expect("mutex left locked");
        assert_eq!(
            total,
            operations(p),
            "wrong result: lost updates under the mutex"
        );
        operations(p)
    }

    pub fn semaphore(p: &Params, m: &mut Meter) -> u64 {
        dispatch(p, m, semaphore_on::<false>, semaphore_on::<true>)
    }

    fn semaphore_on<const WAITS: bool>(p: &Params, m: &mut Meter) -> u64 {
        let sem = async_lock::Semaphore::new(p.permits);
        let sem = &sem;
        let rounds = p.rounds;
        let histograms = task_histograms::<WAITS>(p);
        let ex = Executor::new();
        let histograms = drive(&ex, p.threads, m, |ex| {
            histograms
                .into_iter()
                .map(|mut histogram| {
                    ex.spawn(async move {
                        for _ in 0..rounds {
                            let started = wait_begin::<WAITS>();
                            let guard = sem.acquire().await;
                            wait_end(&mut histogram, started);
                            drop(guard);
                        }
                        histogram
                    })
                })
                .collect()
        });
        drop(ex);
        merge_waits(m, histograms);
        // Every permit must be back: take them all, then find none left.
        let guards: Vec<_> = (0..p.permits)
            .map(|_| sem.try_acquire().expect("wrong result: permits lost"))
            .collect();
        assert!(sem.try_acquire().is_none(), "wrong result: permits gained");
        drop(guards);
        operations(p)
    }
}
