//! The watch rows (bench/README.md) on `tokio::sync::watch` (Tokio 1.24), the
//! peer of syncband's `sb_watch` (bench/watch.cc): the same steps, checked
//! the same way.

use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Context;
use std::time::Instant;

use tokio::sync::watch;

use crate::harness::{expect_pending, expect_ready, noop_waker, pin_elem, Meter, Params};

const RECEIVERS: usize = 16;

/// One watch of a u64 and 16 receivers, made per batch. A round: each
/// receiver's `changed()` is polled -> Pending; `send(v)` wakes all 16; each
/// is polled again -> Ready(Ok), and its receiver reads v
/// (`borrow_and_update`, marking it seen).
pub fn update_16_receivers(p: &Params, m: &mut Meter) -> u64 {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let (tx, rx) = watch::channel(0u64);
    let mut rxs: [watch::Receiver<u64>; RECEIVERS] = std::array::from_fn(|_| rx.clone());
    drop(rx);
    let tx = black_box(&tx);
    let mut v = 0u64;
    m.time(|| {
        for _ in 0..p.rounds {
            {
                let mut it = rxs.iter_mut();
                let futs: [_; RECEIVERS] = std::array::from_fn(|_| it.next().unwrap().changed());
                let mut futs = pin!(futs);
                for i in 0..RECEIVERS {
                    expect_pending(pin_elem(futs.as_mut(), i), &mut cx, "changed before send");
                }
                v += 1;
                if tx.send(v).is_err() {
                    panic!("wrong result at step `send`");
                }
                for i in 0..RECEIVERS {
                    let r = expect_ready(pin_elem(futs.as_mut(), i), &mut cx, "changed after send");
                    assert!(r.is_ok(), "wrong result at step `changed after send`");
                }
            }
            for rx in rxs.iter_mut() {
                let got = *rx.borrow_and_update();
                assert!(got == v, "wrong result at step `read the value sent`");
            }
        }
    });
    p.rounds
}

/// One watch of a u64 holding 42, one receiver. A round: read the value.
pub fn read_latest(p: &Params, m: &mut Meter) -> u64 {
    let (tx, mut rx) = watch::channel(42u64);
    let rx = black_box(&mut rx);
    m.time(|| {
        for _ in 0..p.rounds {
            let got = *rx.borrow_and_update();
            assert!(got == 42, "wrong result at step `read the value`");
        }
    });
    assert!(!rx.has_changed().unwrap(), "wrong result: nothing new");
    drop(tx);
    p.rounds
}

/// Two threads: one sends R values of 8 equal words (k = 1..R), the other
/// reads the latest as fast as it can until it reads R, checking each read
/// untorn and never older than the last. Time per send; with `--waits` every
/// send is timed.
pub fn read_while_sending(p: &Params, m: &mut Meter) -> u64 {
    let (tx, rx) = watch::channel([0u64; 8]);
    let go = AtomicBool::new(false);
    let rounds = p.rounds;
    let mut waits = m.waits.take();
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            while !go.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            let mut last = 0u64;
            let mut reads = 0u64;
            while last < rounds {
                let v = *rx.borrow();
                for w in &v[1..] {
                    assert!(*w == v[0], "wrong result at step `an untorn value`");
                }
                assert!(
                    v[0] >= last,
                    "wrong result at step `never older than the last read`"
                );
                last = v[0];
                reads += 1;
            }
            reads
        });
        m.start();
        go.store(true, Ordering::Release);
        for k in 1..=rounds {
            let started = waits.as_ref().map(|_| Instant::now());
            if tx.send([k; 8]).is_err() {
                panic!("wrong result at step `send`");
            }
            if let (Some(h), Some(t)) = (waits.as_mut(), started) {
                h.record_since(t);
            }
        }
        let reads = reader.join().unwrap();
        m.stop();
        assert!(reads > 0, "wrong result: the reader read");
    });
    m.waits = waits;
    p.rounds
}
