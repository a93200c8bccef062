//! Read-write lock contention rows, `contention/rwlock-{read-mostly,mixed,
//! write-heavy}-N-threads`: the shape of the mutex rows (src/contention.rs:
//! N executor threads × 64 tasks, `rounds` operations a task, time per
//! operation over all of them) on a read-write lock guarding two words.
//!
//! Operation i of task k writes iff (7 i + k) mod 20 < W, W = 1, 10 or 19
//! (95 %, 50 % or 5 % reads), exactly as syncband's
//! bench/rwlock_contention.cc: a write increments both words, a read checks
//! that they are equal. Afterwards both must equal the number of writes.
//!
//! `--waits`: every lock timed from the call of `read()`/`write()` until the
//! guard is held, into a read and a write histogram per task (made before
//! the segment, handed back by the task), merged into the meter's totals and
//! into its `read_waits` / `write_waits`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::harness::{Meter, Params, WaitHistogram};

/// Tasks per executor thread (as the mutex rows).
const TASKS_PER_THREAD: usize = 64;

/// Writes per 20 operations.
pub const READ_MOSTLY: u64 = 1;
pub const MIXED: u64 = 10;
pub const WRITE_HEAVY: u64 = 19;

#[inline(always)]
fn is_write<const W: u64>(i: u64, k: u64) -> bool {
    (i * 7 + k) % 20 < W
}

fn writes<const W: u64>(p: &Params) -> u64 {
    let mut n = 0;
    for k in 0..(p.threads * TASKS_PER_THREAD) as u64 {
        for i in 0..p.rounds {
            n += is_write::<W>(i, k) as u64;
        }
    }
    n
}

fn operations(p: &Params) -> u64 {
    (p.threads * TASKS_PER_THREAD) as u64 * p.rounds
}

/// A task's read and write histograms (`None` without `--waits`).
type Sides = Option<(Box<WaitHistogram>, Box<WaitHistogram>)>;

fn task_sides<const WAITS: bool>(p: &Params) -> Vec<Sides> {
    (0..p.threads * TASKS_PER_THREAD)
        .map(|_| WAITS.then(|| (WaitHistogram::new(), WaitHistogram::new())))
        .collect()
}

fn merge_sides(m: &mut Meter, back: Vec<Sides>) {
    for (reads, writes) in back.iter().flatten() {
        if let Some(total) = m.waits.as_mut() {
            total.merge(reads);
            total.merge(writes);
        }
        if let Some(total) = m.read_waits.as_mut() {
            total.merge(reads);
        }
        if let Some(total) = m.write_waits.as_mut() {
            total.merge(writes);
        }
    }
}

#[inline(always)]
fn wait_begin<const WAITS: bool>() -> Option<Instant> {
    WAITS.then(Instant::now)
}

#[inline(always)]
fn wait_end(sides: &mut Sides, write: bool, started: Option<Instant>) {
    if let (Some((reads, writes)), Some(t)) = (sides.as_mut(), started) {
        if write {
            writes.record_since(t)
        } else {
            reads.record_since(t)
        }
    }
}

fn check(words: (u64, u64), expected: u64) {
    assert_eq!(
        words.0, expected,
        "wrong result: writes lost under the rwlock"
    );
    assert_eq!(words.1, words.0, "wrong result: a write half done");
}

/// Tokio 1.24: `tokio::sync::RwLock` on a multi-thread runtime.
pub mod tokio_mt {
    use super::*;

    pub fn rwlock<const W: u64>(p: &Params, m: &mut Meter) -> u64 {
        if m.waits.is_some() {
            rwlock_on::<W, true>(p, m)
        } else {
            rwlock_on::<W, false>(p, m)
        }
    }

    fn rwlock_on<const W: u64, const WAITS: bool>(p: &Params, m: &mut Meter) -> u64 {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(p.threads)
            .build()
            .expect("building a multi-thread runtime");
        let lock = Arc::new(tokio::sync::RwLock::new((0u64, 0u64)));
        let rounds = p.rounds;
        let sides = task_sides::<WAITS>(p);
        let back = m.time(|| {
            rt.block_on(async {
                let tasks: Vec<_> = sides
                    .into_iter()
                    .enumerate()
                    .map(|(k, mut sides)| {
                        let lock = lock.clone();
                        tokio::spawn(async move {
                            for i in 0..rounds {
                                let write = is_write::<W>(i, k as u64);
                                let started = wait_begin::<WAITS>();
                                if write {
                                    let mut g = lock.write().await;
                                    wait_end(&mut sides, true, started);
                                    g.0 += 1;
                                    g.1 += 1;
                                } else {
                                    let g = lock.read().await;
                                    wait_end(&mut sides, false, started);
                                    assert_eq!(g.0, g.1, "wrong result: a write half done");
                                }
                            }
                            sides
                        })
                    })
                    .collect();
                let mut back = Vec::with_capacity(if WAITS { tasks.len() } else { 0 });
                for task in tasks {
                    let sides = task.await.expect("contention task");
                    if WAITS {
                        back.push(sides);
                    }
                }
                back
            })
        });
        drop(rt);
        merge_sides(m, back);
        check(
            *lock.try_read().expect("rwlock left locked"),
            writes::<W>(p),
        );
        operations(p)
    }
}

/// async-lock 2.6's `RwLock` on an `async_executor::Executor` run by N
/// threads (as src/contention.rs' smol_mt).
pub mod smol_mt {
    use super::*;
    use async_executor::Executor;
    use event_listener::Event;
    use futures_lite::future::block_on;

    /// Tells the executor threads to return once the work is done.
    struct Stop {
        flag: AtomicBool,
        event: Event,
    }

    impl Stop {
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

    pub fn rwlock<const W: u64>(p: &Params, m: &mut Meter) -> u64 {
        if m.waits.is_some() {
            rwlock_on::<W, true>(p, m)
        } else {
            rwlock_on::<W, false>(p, m)
        }
    }

    fn rwlock_on<const W: u64, const WAITS: bool>(p: &Params, m: &mut Meter) -> u64 {
        let lock = async_lock::RwLock::new((0u64, 0u64));
        let lock = &lock;
        let rounds = p.rounds;
        let sides = task_sides::<WAITS>(p);
        let ex = Executor::new();
        let stop = Stop {
            flag: AtomicBool::new(false),
            event: Event::new(),
        };
        let back = std::thread::scope(|scope| {
            let runners: Vec<_> = (0..p.threads)
                .map(|_| scope.spawn(|| block_on(ex.run(stop.wait()))))
                .collect();
            let back = m.time(|| {
                let tasks: Vec<_> = sides
                    .into_iter()
                    .enumerate()
                    .map(|(k, mut sides)| {
                        ex.spawn(async move {
                            for i in 0..rounds {
                                let write = is_write::<W>(i, k as u64);
                                let started = wait_begin::<WAITS>();
                                if write {
                                    let mut g = lock.write().await;
                                    wait_end(&mut sides, true, started);
                                    g.0 += 1;
                                    g.1 += 1;
                                } else {
                                    let g = lock.read().await;
                                    wait_end(&mut sides, false, started);
                                    assert_eq!(g.0, g.1, "wrong result: a write half done");
                                }
                            }
                            sides
                        })
                    })
                    .collect();
                block_on(async {
                    let mut back = Vec::with_capacity(if WAITS { tasks.len() } else { 0 });
                    for task in tasks {
                        let sides = task.await;
                        if WAITS {
                            back.push(sides);
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
        });
        drop(ex);
        merge_sides(m, back);
        check(
            *lock.try_read().expect("rwlock left locked"),
            writes::<W>(p),
        );
        operations(p)
    }
}
