//! Channel rows: bounded channels of `u64` items on Tokio
//! (`tokio::sync::mpsc`), async-channel 1.8, flume 0.10 (async and
//! blocking), crossbeam-channel 0.5 and `std::sync::mpsc::sync_channel`,
//! the same scenarios and checks as syncband's bench/channel.cc.
//!
//! Items: producer p sends `(p << 32) | seq`, seq = 0, 1, ... A receiver
//! checks that each producer's items reach it in increasing order and adds
//! up count, sum and sum of squares (wrapping); after the joins they must
//! equal what was sent: every item received once. A receiver runs until its
//! channel reports every sender gone and the channel drained (the C side:
//! the last producer closes the channel).
//!
//! `--waits` (the multi-producer/consumer rows): every receive that got an
//! item is timed, from the call (`.await` polls the future at once) until it
//! returns, into a histogram per receiver made before the segment.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use crate::harness::{Meter, Params, WaitHistogram};

/// Executor threads of the task rows (the C side's executor group has the
/// same): a Tokio multi-thread runtime of 2 workers, an async-executor run by
/// 2 threads.
pub const CHANNEL_WORKERS: usize = 2;
const MAX_PRODUCERS: usize = 16;

/// What one receiver got.
#[derive(Clone)]
pub struct Received {
    count: u64,
    sum: u64,
    squares: u64,
    next_seq: [u64; MAX_PRODUCERS],
}

impl Received {
    fn new() -> Self {
        Received {
            count: 0,
            sum: 0,
            squares: 0,
            next_seq: [0; MAX_PRODUCERS],
        }
    }

    #[inline(always)]
    fn take(&mut self, v: u64) {
        let producer = (v >> 32) as usize;
        let seq = v & 0xffff_ffff;
        if producer >= MAX_PRODUCERS || seq < self.next_seq[producer] {
            panic!("wrong result at step `one producer's items arrive in order`: {v:#x}");
        }
        self.next_seq[producer] = seq + 1;
        self.count += 1;
        self.sum = self.sum.wrapping_add(v);
        self.squares = self.squares.wrapping_add(v.wrapping_mul(v));
    }
}

/// Items producer `p` of `producers` sends, of `total`.
fn items_of(total: u64, producers: usize, p: usize) -> u64 {
    total / producers as u64 + u64::from((p as u64) < total % producers as u64)
}

fn check_received(received: &[Received], total: u64, producers: usize) {
    let (mut count, mut sum, mut squares) = (0u64, 0u64, 0u64);
    for r in received {
        count += r.count;
        sum = sum.wrapping_add(r.sum);
        squares = squares.wrapping_add(r.squares);
    }
    let (mut want_sum, mut want_squares) = (0u64, 0u64);
    for p in 0..producers {
        for i in 0..items_of(total, producers, p) {
            let v = (p as u64) << 32 | i;
            want_sum = want_sum.wrapping_add(v);
            want_squares = want_squares.wrapping_add(v.wrapping_mul(v));
        }
    }
    assert_eq!(count, total, "wrong result: items received (count)");
    assert!(
        sum == want_sum && squares == want_squares,
        "wrong result: every item received once (sum, sum of squares)"
    );
}

#[derive(Clone, Copy)]
pub struct Shape {
    pub producers: usize,
    pub consumers: usize,
    pub capacity: usize,
}

/// Times one receive (`None`, no clock read, without `--waits`).
#[inline(always)]
fn wait_begin<const WAITS: bool>() -> Option<Instant> {
    WAITS.then(Instant::now)
}

#[inline(always)]
fn wait_end(h: &mut Option<Box<WaitHistogram>>, started: Option<Instant>) {
    if let (Some(h), Some(t)) = (h.as_mut(), started) {
        h.record_since(t);
    }
}

fn histograms<const WAITS: bool>(n: usize) -> Vec<Option<Box<WaitHistogram>>> {
    (0..n).map(|_| WAITS.then(WaitHistogram::new)).collect()
}

fn finish(
    m: &mut Meter,
    back: Vec<(Received, Option<Box<WaitHistogram>>)>,
    total: u64,
    producers: usize,
) -> u64 {
    let mut received = Vec::with_capacity(back.len());
    for (r, h) in back {
        if let (Some(total), Some(h)) = (m.waits.as_mut(), h) {
            total.merge(&h);
        }
        received.push(r);
    }
    check_received(&received, total, producers);
    total
}

// ---------------------------------------------------------------------------
// Blocking threads
// ---------------------------------------------------------------------------

pub trait BlockingTx: Send {
    fn send(&self, v: u64);
}
pub trait BlockingRx: Send {
    /// `None` once every sender is gone and the channel is drained.
    fn recv(&self) -> Option<u64>;
}

impl BlockingTx for crossbeam_channel::Sender<u64> {
    #[inline(always)]
    fn send(&self, v: u64) {
        crossbeam_channel::Sender::send(self, v).expect("receivers gone");
    }
}
impl BlockingRx for crossbeam_channel::Receiver<u64> {
    #[inline(always)]
    fn recv(&self) -> Option<u64> {
        crossbeam_channel::Receiver::recv(self).ok()
    }
}
impl BlockingTx for flume::Sender<u64> {
    #[inline(always)]
    fn send(&self, v: u64) {
        flume::Sender::send(self, v).expect("receivers gone");
    }
}
impl BlockingRx for flume::Receiver<u64> {
    #[inline(always)]
    fn recv(&self) -> Option<u64> {
        flume::Receiver::recv(self).ok()
    }
}
impl BlockingTx for std::sync::mpsc::SyncSender<u64> {
    #[inline(always)]
    fn send(&self, v: u64) {
        std::sync::mpsc::SyncSender::send(self, v).expect("receiver gone");
    }
}
impl BlockingRx for std::sync::mpsc::Receiver<u64> {
    #[inline(always)]
    fn recv(&self) -> Option<u64> {
        std::sync::mpsc::Receiver::recv(self).ok()
    }
}

/// P producer threads and C receiver threads, created before the segment
/// and released by a start flag; the segment ends at the last join.
fn blocking_on<T: BlockingTx, R: BlockingRx, const WAITS: bool>(
    s: Shape,
    p: &Params,
    m: &mut Meter,
    make: fn(usize, usize, usize) -> (Vec<T>, Vec<R>),
) -> u64 {
    let (txs, rxs) = make(s.capacity, s.producers, s.consumers);
    let ready = AtomicUsize::new(0);
    let go = AtomicBool::new(false);
    let total = p.rounds;
    let wait_go = || {
        ready.fetch_add(1, Ordering::Relaxed);
        while !go.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    };
    let back = std::thread::scope(|scope| {
        let consumers: Vec<_> = rxs
            .into_iter()
            .zip(histograms::<WAITS>(s.consumers))
            .map(|(rx, mut h)| {
                let wait_go = &wait_go;
                scope.spawn(move || {
                    let mut r = Received::new();
                    wait_go();
                    loop {
                        let started = wait_begin::<WAITS>();
                        let Some(v) = rx.recv() else { break };
                        wait_end(&mut h, started);
                        r.take(v);
                    }
                    (r, h)
                })
            })
            .collect();
        let producers: Vec<_> = txs
            .into_iter()
            .enumerate()
            .map(|(q, tx)| {
                let wait_go = &wait_go;
                let n = items_of(total, s.producers, q);
                scope.spawn(move || {
                    wait_go();
                    for i in 0..n {
                        tx.send((q as u64) << 32 | i);
                    }
                    drop(tx);
                })
            })
            .collect();
        while ready.load(Ordering::Relaxed) < s.producers + s.consumers {
            std::thread::yield_now();
        }
        m.start();
        go.store(true, Ordering::Release);
        for t in producers {
            t.join().expect("producer thread");
        }
        let back: Vec<_> = consumers
            .into_iter()
            .map(|t| t.join().expect("receiver thread"))
            .collect();
        m.stop();
        back
    });
    finish(m, back, total, s.producers)
}

fn blocking<T: BlockingTx, R: BlockingRx>(
    s: Shape,
    p: &Params,
    m: &mut Meter,
    make: fn(usize, usize, usize) -> (Vec<T>, Vec<R>),
) -> u64 {
    if m.waits.is_some() {
        blocking_on::<T, R, true>(s, p, m, make)
    } else {
        blocking_on::<T, R, false>(s, p, m, make)
    }
}

fn crossbeam_make(
    cap: usize,
    producers: usize,
    consumers: usize,
) -> (
    Vec<crossbeam_channel::Sender<u64>>,
    Vec<crossbeam_channel::Receiver<u64>>,
) {
    let (tx, rx) = crossbeam_channel::bounded(cap);
    (vec![tx; producers], vec![rx; consumers])
}

fn flume_make(
    cap: usize,
    producers: usize,
    consumers: usize,
) -> (Vec<flume::Sender<u64>>, Vec<flume::Receiver<u64>>) {
    let (tx, rx) = flume::bounded(cap);
    (vec![tx; producers], vec![rx; consumers])
}

fn std_make(
    cap: usize,
    producers: usize,
    consumers: usize,
) -> (
    Vec<std::sync::mpsc::SyncSender<u64>>,
    Vec<std::sync::mpsc::Receiver<u64>>,
) {
    assert_eq!(consumers, 1, "std::sync::mpsc has one receiver");
    let (tx, rx) = std::sync::mpsc::sync_channel(cap);
    (vec![tx; producers], vec![rx])
}

pub fn crossbeam_threads<const P: usize, const C: usize, const CAP: usize>(
    p: &Params,
    m: &mut Meter,
) -> u64 {
    let s = Shape { producers: P, consumers: C, capacity: CAP };
    blocking(s, p, m, crossbeam_make)
}

pub fn flume_threads<const P: usize, const C: usize, const CAP: usize>(
    p: &Params,
    m: &mut Meter,
) -> u64 {
    let s = Shape { producers: P, consumers: C, capacity: CAP };
    blocking(s, p, m, flume_make)
}

pub fn std_threads<const CAP: usize>(p: &Params, m: &mut Meter) -> u64 {
    let s = Shape { producers: 1, consumers: 1, capacity: CAP };
    blocking(s, p, m, std_make)
}

// ---------------------------------------------------------------------------
// Async channels
// ---------------------------------------------------------------------------

pub trait AsyncTx: Send + 'static {
    fn send(&self, v: u64) -> impl Future<Output = ()> + Send;
}
pub trait AsyncRx: Send + 'static {
    /// `None` once every sender is gone and the channel is drained.
    fn recv(&mut self) -> impl Future<Output = Option<u64>> + Send;
}

impl AsyncTx for tokio::sync::mpsc::Sender<u64> {
    #[inline(always)]
    fn send(&self, v: u64) -> impl Future<Output = ()> + Send {
        async move { tokio::sync::mpsc::Sender::send(self, v).await.expect("receiver gone") }
    }
}
impl AsyncRx for tokio::sync::mpsc::Receiver<u64> {
    #[inline(always)]
    fn recv(&mut self) -> impl Future<Output = Option<u64>> + Send {
        tokio::sync::mpsc::Receiver::recv(self)
    }
}
impl AsyncTx for async_channel::Sender<u64> {
    #[inline(always)]
    fn send(&self, v: u64) -> impl Future<Output = ()> + Send {
        async move { async_channel::Sender::send(self, v).await.expect("receivers gone") }
    }
}
impl AsyncRx for async_channel::Receiver<u64> {
    #[inline(always)]
    fn recv(&mut self) -> impl Future<Output = Option<u64>> + Send {
        async move { async_channel::Receiver::recv(self).await.ok() }
    }
}
impl AsyncTx for flume::Sender<u64> {
    #[inline(always)]
    fn send(&self, v: u64) -> impl Future<Output = ()> + Send {
        async move { self.send_async(v).await.expect("receivers gone") }
    }
}
impl AsyncRx for flume::Receiver<u64> {
    #[inline(always)]
    fn recv(&mut self) -> impl Future<Output = Option<u64>> + Send {
        async move { self.recv_async().await.ok() }
    }
}

type Make<T, R> = fn(usize, usize, usize) -> (Vec<T>, Vec<R>);

fn tokio_make(
    cap: usize,
    producers: usize,
    consumers: usize,
) -> (
    Vec<tokio::sync::mpsc::Sender<u64>>,
    Vec<tokio::sync::mpsc::Receiver<u64>>,
) {
    assert_eq!(consumers, 1, "tokio::sync::mpsc has one receiver");
    let (tx, rx) = tokio::sync::mpsc::channel(cap);
    (vec![tx; producers], vec![rx])
}

fn async_channel_make(
    cap: usize,
    producers: usize,
    consumers: usize,
) -> (Vec<async_channel::Sender<u64>>, Vec<async_channel::Receiver<u64>>) {
    let (tx, rx) = async_channel::bounded(cap);
    (vec![tx; producers], vec![rx; consumers])
}

async fn produce<T: AsyncTx>(tx: T, q: usize, n: u64) {
    for i in 0..n {
        tx.send((q as u64) << 32 | i).await;
    }
}

async fn consume<R: AsyncRx, const WAITS: bool>(
    mut rx: R,
    mut h: Option<Box<WaitHistogram>>,
) -> (Received, Option<Box<WaitHistogram>>) {
    let mut r = Received::new();
    loop {
        let started = wait_begin::<WAITS>();
        let Some(v) = rx.recv().await else { break };
        wait_end(&mut h, started);
        r.take(v);
    }
    (r, h)
}

/// Tokio: a multi-thread runtime of CHANNEL_WORKERS workers; receivers
/// spawned first, then producers; the segment covers spawning and joining.
fn tokio_tasks_on<const WAITS: bool>(s: Shape, p: &Params, m: &mut Meter) -> u64 {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(CHANNEL_WORKERS)
        .build()
        .expect("building a multi-thread runtime");
    let (txs, rxs) = tokio_make(s.capacity, s.producers, s.consumers);
    let hs = histograms::<WAITS>(s.consumers);
    let total = p.rounds;
    let back = m.time(|| {
        rt.block_on(async {
            let consumers: Vec<_> = rxs
                .into_iter()
                .zip(hs)
                .map(|(rx, h)| tokio::spawn(consume::<_, WAITS>(rx, h)))
                .collect();
            let producers: Vec<_> = txs
                .into_iter()
                .enumerate()
                .map(|(q, tx)| tokio::spawn(produce(tx, q, items_of(total, s.producers, q))))
                .collect();
            for t in producers {
                t.await.expect("producer task");
            }
            let mut back = Vec::with_capacity(consumers.len());
            for t in consumers {
                back.push(t.await.expect("receiver task"));
            }
            back
        })
    });
    drop(rt);
    finish(m, back, total, s.producers)
}

pub fn tokio_tasks<const P: usize, const C: usize>(p: &Params, m: &mut Meter) -> u64 {
    let s = Shape { producers: P, consumers: C, capacity: 64 };
    if m.waits.is_some() {
        tokio_tasks_on::<true>(s, p, m)
    } else {
        tokio_tasks_on::<false>(s, p, m)
    }
}

/// The smol stack: one `async_executor::Executor` run by CHANNEL_WORKERS
/// threads (`block_on(ex.run(..))`), the spawning thread only waits.
fn smol_tasks_on<T: AsyncTx, R: AsyncRx, const WAITS: bool>(
    s: Shape,
    p: &Params,
    m: &mut Meter,
    make: Make<T, R>,
) -> u64 {
    use async_executor::Executor;
    use futures_lite::future::block_on;
    let (txs, rxs) = make(s.capacity, s.producers, s.consumers);
    let hs = histograms::<WAITS>(s.consumers);
    let total = p.rounds;
    let ex = Executor::new();
    let stop = event_listener::Event::new();
    let stopped = AtomicBool::new(false);
    let back = std::thread::scope(|scope| {
        let runners: Vec<_> = (0..CHANNEL_WORKERS)
            .map(|_| {
                scope.spawn(|| {
                    block_on(ex.run(async {
                        loop {
                            if stopped.load(Ordering::Acquire) {
                                return;
                            }
                            let l = stop.listen();
                            if stopped.load(Ordering::Acquire) {
                                return;
                            }
                            l.await;
                        }
                    }))
                })
            })
            .collect();
        let back = m.time(|| {
            let consumers: Vec<_> = rxs
                .into_iter()
                .zip(hs)
                .map(|(rx, h)| ex.spawn(consume::<_, WAITS>(rx, h)))
                .collect();
            let producers: Vec<_> = txs
                .into_iter()
                .enumerate()
                .map(|(q, tx)| ex.spawn(produce(tx, q, items_of(total, s.producers, q))))
                .collect();
            block_on(async {
                for t in producers {
                    t.await;
                }
                let mut back = Vec::with_capacity(consumers.len());
                for t in consumers {
                    back.push(t.await);
                }
                back
            })
        });
        stopped.store(true, Ordering::Release);
        stop.notify(usize::MAX);
        for r in runners {
            r.join().expect("executor thread");
        }
        back
    });
    finish(m, back, total, s.producers)
}

fn smol_tasks<T: AsyncTx, R: AsyncRx>(s: Shape, p: &Params, m: &mut Meter, make: Make<T, R>) -> u64 {
    if m.waits.is_some() {
        smol_tasks_on::<T, R, true>(s, p, m, make)
    } else {
        smol_tasks_on::<T, R, false>(s, p, m, make)
    }
}

pub fn async_channel_tasks<const P: usize, const C: usize>(p: &Params, m: &mut Meter) -> u64 {
    let s = Shape { producers: P, consumers: C, capacity: 64 };
    smol_tasks(s, p, m, async_channel_make)
}

pub fn flume_tasks<const P: usize, const C: usize>(p: &Params, m: &mut Meter) -> u64 {
    let s = Shape { producers: P, consumers: C, capacity: 64 };
    smol_tasks(s, p, m, flume_make)
}

// ---------------------------------------------------------------------------
// Single thread: try_send + try_recv
// ---------------------------------------------------------------------------

pub fn try_tokio(p: &Params, m: &mut Meter) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(16);
    let (tx, rx) = (std::hint::black_box(&tx), std::hint::black_box(&mut rx));
    m.time(|| {
        for v in 0..p.rounds {
            if tx.try_send(v).is_err() {
                panic!("wrong result at step `try_send into an empty channel`");
            }
            if rx.try_recv() != Ok(v) {
                panic!("wrong result at step `try_recv of the item`");
            }
        }
    });
    assert!(rx.try_recv().is_err(), "wrong result: the channel is empty");
    p.rounds
}

pub fn try_async_channel(p: &Params, m: &mut Meter) -> u64 {
    let (tx, rx) = async_channel::bounded::<u64>(16);
    let (tx, rx) = (std::hint::black_box(&tx), std::hint::black_box(&rx));
    m.time(|| {
        for v in 0..p.rounds {
            if tx.try_send(v).is_err() {
                panic!("wrong result at step `try_send into an empty channel`");
            }
            if rx.try_recv() != Ok(v) {
                panic!("wrong result at step `try_recv of the item`");
            }
        }
    });
    assert!(rx.try_recv().is_err(), "wrong result: the channel is empty");
    p.rounds
}

pub fn try_flume(p: &Params, m: &mut Meter) -> u64 {
    let (tx, rx) = flume::bounded::<u64>(16);
    let (tx, rx) = (std::hint::black_box(&tx), std::hint::black_box(&rx));
    m.time(|| {
        for v in 0..p.rounds {
            if tx.try_send(v).is_err() {
                panic!("wrong result at step `try_send into an empty channel`");
            }
            if rx.try_recv() != Ok(v) {
                panic!("wrong result at step `try_recv of the item`");
            }
        }
    });
    assert!(rx.try_recv().is_err(), "wrong result: the channel is empty");
    p.rounds
}

pub fn try_crossbeam(p: &Params, m: &mut Meter) -> u64 {
    let (tx, rx) = crossbeam_channel::bounded::<u64>(16);
    let (tx, rx) = (std::hint::black_box(&tx), std::hint::black_box(&rx));
    m.time(|| {
        for v in 0..p.rounds {
            if tx.try_send(v).is_err() {
                panic!("wrong result at step `try_send into an empty channel`");
            }
            if rx.try_recv() != Ok(v) {
                panic!("wrong result at step `try_recv of the item`");
            }
        }
    });
    assert!(rx.try_recv().is_err(), "wrong result: the channel is empty");
    p.rounds
}

// ---------------------------------------------------------------------------
// Single thread: ping-pong between two tasks on one loop
// ---------------------------------------------------------------------------

/// A sends i and waits for i + 1; B echoes each item + 1. One round = one
/// round trip.
async fn ping<T: AsyncTx, R: AsyncRx>(tx: T, mut rx: R, rounds: u64) -> u64 {
    let mut out = 0u64;
    for _ in 0..rounds {
        tx.send(out).await;
        let back = rx.recv().await.expect("pong channel closed");
        if back != out + 1 {
            panic!("wrong result at step `the pong is the ping + 1`");
        }
        out += 2;
    }
    out
}

async fn pong<T: AsyncTx, R: AsyncRx>(tx: T, mut rx: R, rounds: u64) {
    for _ in 0..rounds {
        let v = rx.recv().await.expect("ping channel closed");
        tx.send(v + 1).await;
    }
}

fn check_trips(out: u64, rounds: u64) {
    assert_eq!(out, 2 * rounds, "wrong result: every round trip ran");
}

/// Tokio's current-thread runtime, `tokio::sync::mpsc::channel(1)` both ways.
pub fn ping_pong_tokio(p: &Params, m: &mut Meter) -> u64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("building a current-thread runtime");
    let (ab_tx, ab_rx) = tokio::sync::mpsc::channel::<u64>(1);
    let (ba_tx, ba_rx) = tokio::sync::mpsc::channel::<u64>(1);
    let rounds = p.rounds;
    let out = m.time(|| {
        rt.block_on(async {
            let a = tokio::spawn(ping(ab_tx, ba_rx, rounds));
            let b = tokio::spawn(pong(ba_tx, ab_rx, rounds));
            let out = a.await.expect("task A");
            b.await.expect("task B");
            out
        })
    });
    check_trips(out, rounds);
    p.rounds
}

/// async-executor's `LocalExecutor` driven by `futures_lite::future::block_on`.
fn ping_pong_local<T: AsyncTx, R: AsyncRx>(p: &Params, m: &mut Meter, cap: usize, make: Make<T, R>) -> u64 {
    use async_executor::LocalExecutor;
    use futures_lite::future::block_on;
    let ex = LocalExecutor::new();
    let (mut ab_tx, mut ab_rx) = make(cap, 1, 1);
    let (mut ba_tx, mut ba_rx) = make(cap, 1, 1);
    let (ab_tx, ab_rx) = (ab_tx.pop().unwrap(), ab_rx.pop().unwrap());
    let (ba_tx, ba_rx) = (ba_tx.pop().unwrap(), ba_rx.pop().unwrap());
    let rounds = p.rounds;
    let out = m.time(|| {
        let a = ex.spawn(ping(ab_tx, ba_rx, rounds));
        let b = ex.spawn(pong(ba_tx, ab_rx, rounds));
        block_on(ex.run(async {
            let out = a.await;
            b.await;
            out
        }))
    });
    check_trips(out, rounds);
    p.rounds
}

pub fn ping_pong_async_channel(p: &Params, m: &mut Meter) -> u64 {
    ping_pong_local(p, m, 1, async_channel_make)
}

pub fn ping_pong_flume(p: &Params, m: &mut Meter) -> u64 {
    ping_pong_local(p, m, 1, flume_make)
}

pub fn rendezvous_ping_pong_flume(p: &Params, m: &mut Meter) -> u64 {
    ping_pong_local(p, m, 0, flume_make)
}
