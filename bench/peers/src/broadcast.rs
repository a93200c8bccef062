//! The broadcast rows (bench/broadcast.cc) on `tokio::sync::broadcast`, whose
//! overflow rule - a receiver that fell behind is told how many items it
//! missed, then resumes at the oldest item held - is sb_broadcast's lagging
//! policy, and (the single-thread fan-out rows) on `async-broadcast`
//! (Debian's librust-async-broadcast-dev), whose default is back-pressure: a
//! fan-out round never fills its capacity, so both policies do the same work.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};

use crate::harness::{Meter, Params};
use crate::registry::TOKIO;

/// broadcast/fan-out-N: capacity 16, N subscribers; a round is one send
/// and N try_recvs that each get the item.
fn fan_out_tokio(n: usize, p: &Params, m: &mut Meter) -> u64 {
    let (tx, _keep) = broadcast::channel::<u64>(16);
    let mut rx: Vec<_> = (0..n).map(|_| tx.subscribe()).collect();
    let (tx, rx) = (std::hint::black_box(&tx), std::hint::black_box(&mut rx));
    m.time(|| {
        for v in 0..p.rounds {
            if tx.send(v).is_err() {
                panic!("wrong result at step `send`");
            }
            for r in rx.iter_mut() {
                if r.try_recv() != Ok(v) {
                    panic!("wrong result at step `try_recv of the item`");
                }
            }
        }
    });
    for r in rx.iter_mut() {
        assert_eq!(r.try_recv(), Err(TryRecvError::Empty), "nothing left");
    }
    p.rounds
}

pub fn fan_out_4_tokio(p: &Params, m: &mut Meter) -> u64 {
    fan_out_tokio(4, p, m)
}

pub fn fan_out_16_tokio(p: &Params, m: &mut Meter) -> u64 {
    fan_out_tokio(16, p, m)
}

pub fn fan_out_64_tokio(p: &Params, m: &mut Meter) -> u64 {
    fan_out_tokio(64, p, m)
}

/// broadcast/fan-out-N on async-broadcast: capacity 16, N receivers (the
/// first from `broadcast`, the rest `new_receiver`s); a round is one
/// `try_broadcast` (never full: every receiver reads each item before the
/// next) and N `try_recv`s that each get the item.
fn fan_out_async_broadcast(n: usize, p: &Params, m: &mut Meter) -> u64 {
    let (tx, first) = async_broadcast::broadcast::<u64>(16);
    let mut rx: Vec<_> = (1..n).map(|_| first.new_receiver()).collect();
    rx.push(first);
    let (tx, rx) = (std::hint::black_box(&tx), std::hint::black_box(&mut rx));
    m.time(|| {
        for v in 0..p.rounds {
            if !matches!(tx.try_broadcast(v), Ok(None)) {
                panic!("wrong result at step `try_broadcast`");
            }
            for r in rx.iter_mut() {
                if r.try_recv() != Ok(v) {
                    panic!("wrong result at step `try_recv of the item`");
                }
            }
        }
    });
    for r in rx.iter_mut() {
        assert_eq!(r.try_recv(), Err(async_broadcast::TryRecvError::Empty), "nothing left");
    }
    p.rounds
}

pub fn fan_out_4_async_broadcast(p: &Params, m: &mut Meter) -> u64 {
    fan_out_async_broadcast(4, p, m)
}

pub fn fan_out_16_async_broadcast(p: &Params, m: &mut Meter) -> u64 {
    fan_out_async_broadcast(16, p, m)
}

pub fn fan_out_64_async_broadcast(p: &Params, m: &mut Meter) -> u64 {
    fan_out_async_broadcast(64, p, m)
}

/// broadcast/lagging-receiver: capacity 16, a receiver that reads every
/// item and one that reads once every 64 rounds (a lag of 48, then the
/// oldest item held and the rest).
pub fn lagging_receiver_tokio(p: &Params, m: &mut Meter) -> u64 {
    let (tx, mut fast) = broadcast::channel::<u64>(16);
    let mut slow = tx.subscribe();
    let (tx, fast, slow) = (
        std::hint::black_box(&tx),
        std::hint::black_box(&mut fast),
        std::hint::black_box(&mut slow),
    );
    m.time(|| {
        for v in 0..p.rounds {
            if tx.send(v).is_err() {
                panic!("wrong result at step `send`");
            }
            if fast.try_recv() != Ok(v) {
                panic!("wrong result at step `the fast receiver reads it`");
            }
            if v & 63 == 63 {
                if slow.try_recv() != Err(TryRecvError::Lagged(48)) {
                    panic!("wrong result at step `the slow one lagged by 48`");
                }
                for k in (0..16).rev() {
                    if slow.try_recv() != Ok(v - k) {
                        panic!("wrong result at step `then reads the oldest held and the rest`");
                    }
                }
            }
        }
    });
    p.rounds
}

/// broadcast/fan-out-16-threads: one sender thread, 16 receiver threads
/// (each blocking on its future with futures-lite's block_on), capacity 64;
/// the sender never waits.  Each receiver's items plus its counted lags must
/// be every item sent.  ns per item delivered: the time divided by (items
/// received by all 16 receivers together / 16, rounded to the nearest), as
/// bench/broadcast.cc, so that skipping items makes the row slower, never
/// faster; each batch prints the same DELIVERED line on stderr.
pub fn fan_out_16_threads_tokio(p: &Params, m: &mut Meter) -> u64 {
    const N: usize = 16;
    let (tx, _) = broadcast::channel::<u64>(64);
    let ready = Arc::new(AtomicUsize::new(0));
    let go = Arc::new(AtomicBool::new(false));
    let wait_go = |ready: &AtomicUsize, go: &AtomicBool| {
        ready.fetch_add(1, Ordering::Relaxed);
        while !go.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    };
    let mut receivers = Vec::new();
    for _ in 0..N {
        let mut rx = tx.subscribe();
        let (ready, go) = (ready.clone(), go.clone());
        receivers.push(std::thread::spawn(move || {
            wait_go(&ready, &go);
            let (mut got, mut missed, mut last, mut ordered) = (0u64, 0u64, 0u64, true);
            loop {
                match futures_lite::future::block_on(rx.recv()) {
                    Ok(v) => {
                        ordered &= got + missed == 0 || v > last;
                        last = v;
                        got += 1;
                    }
                    Err(RecvError::Lagged(n)) => missed += n,
                    Err(RecvError::Closed) => break,
                }
            }
            (got, missed, ordered)
        }));
    }
    let rounds = p.rounds;
    let sender = {
        let (ready, go) = (ready.clone(), go.clone());
        std::thread::spawn(move || {
            wait_go(&ready, &go);
            for v in 1..=rounds {
                if tx.send(v).is_err() {
                    panic!("wrong result at step `send`");
                }
            }
            drop(tx); // end of stream
        })
    };
    while ready.load(Ordering::Relaxed) < N + 1 {
        std::thread::yield_now();
    }
    m.start();
    go.store(true, Ordering::Release);
    sender.join().unwrap();
    let results: Vec<_> = receivers.into_iter().map(|t| t.join().unwrap()).collect();
    m.stop();
    let (mut received, mut least, mut most) = (0u64, rounds, 0u64);
    for &(got, missed, ordered) in &results {
        assert!(ordered, "each receiver's items in order");
        assert_eq!(got + missed, rounds, "items received + items missed = items sent");
        received += got;
        least = least.min(got);
        most = most.max(got);
    }
    // Items delivered to all receivers: what they read together, / N,
    // rounded to the nearest; never 0, as each receiver reads the last item.
    let delivered = (received + N as u64 / 2) / N as u64;
    assert!(delivered != 0, "some items delivered");
    eprintln!(
        "DELIVERED broadcast/fan-out-16-threads {} sent={rounds} received={received} \
         fraction={:.6} min={:.6} max={:.6}",
        TOKIO,
        received as f64 / (N as u64 * rounds) as f64,
        least as f64 / rounds as f64,
        most as f64 / rounds as f64
    );
    delivered
}
