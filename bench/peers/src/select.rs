//! Select rows: `tokio::select!` over the same rounds as syncband's
//! bench/select.cc (the Go peer: bench/peers/go/select.go).
//!
//! - `select/two-channels`: two `tokio::sync::mpsc` channels of capacity
//!   16; round i sends item i into channel (i >> 1) & 1 and selects a
//!   receive on each, polled once with a no-op waker (it must complete).
//!   `select!` picks its start at random, so about half the rounds poll the
//!   empty channel first, which registers the waker.
//! - `select/semaphore-or-deadline`: a `tokio::sync::Semaphore` acquire or
//!   a `tokio::time::sleep_until`, on a current-thread runtime with its
//!   timer: even rounds add a permit first (the acquire wins, the sleep is
//!   dropped), odd rounds give the sleep a deadline already past (it wins,
//!   the acquire is dropped).  The select is awaited in `block_on`: an
//!   elapsed sleep is not ready at its first poll but at the runtime's next
//!   turn of its timer driver, so the odd rounds include that turn, which
//!   syncband's deadline.h leaves to the caller's loop (it keeps no clock).

use std::task::Context;
use std::time::Duration;

use crate::harness::{expect_ready, noop_waker, Meter, Params};
use crate::registry::{Row, Support, TOKIO};

pub fn two_channels_tokio(p: &Params, m: &mut Meter) -> u64 {
    let (tx0, mut rx0) = tokio::sync::mpsc::channel::<u64>(16);
    let (tx1, mut rx1) = tokio::sync::mpsc::channel::<u64>(16);
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    m.time(|| {
        for v in 0..p.rounds {
            let target = (v >> 1) & 1;
            let tx = if target == 0 { &tx0 } else { &tx1 };
            if tx.try_send(v).is_err() {
                panic!("wrong result at step `try_send into an empty channel`");
            }
            let (rx0, rx1) = (&mut rx0, &mut rx1);
            let fut = async move {
                tokio::select! {
                    Some(x) = rx0.recv() => (0u64, x),
                    Some(x) = rx1.recv() => (1u64, x),
                }
            };
            tokio::pin!(fut);
            let (i, x) = expect_ready(fut.as_mut(), &mut cx, "the select completes at its first poll");
            if i != target || x != v {
                panic!("wrong result at step `the item received is the item sent`");
            }
        }
    });
    assert!(rx0.try_recv().is_err() && rx1.try_recv().is_err(), "wrong result: the channels are empty");
    p.rounds
}

pub fn semaphore_or_deadline_tokio(p: &Params, m: &mut Meter) -> u64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime");
    let sem = tokio::sync::Semaphore::new(0);
    rt.block_on(async {
        let past = tokio::time::Instant::now();
        let far = past + Duration::from_secs(3600);
        m.start();
        for v in 0..p.rounds {
            let permit = v & 1 == 0;
            if permit {
                sem.add_permits(1);
            }
            let deadline = if permit { far } else { past };
            let sem = &sem;
            let fut = async move {
                tokio::select! {
                    r = sem.acquire() => { r.expect("open").forget(); 0u32 }
                    _ = tokio::time::sleep_until(deadline) => 1u32,
                }
            };
            // Awaited: an elapsed sleep completes at the runtime's next turn
            // of its timer driver, not at its first poll.
            let i = fut.await;
            if i != u32::from(!permit) {
                panic!("wrong result at step `the permit, else the deadline`");
            }
        }
        m.stop();
    });
    assert_eq!(sem.available_permits(), 0, "wrong result: every permit was taken");
    p.rounds
}

/// The rows, for the registry.
pub fn rows() -> Vec<Row> {
    vec![
        Row {
            scenario: "select/two-channels",
            imp: TOKIO,
            rounds: 3_000_000,
            support: Support::Run(two_channels_tokio),
        },
        Row {
            scenario: "select/semaphore-or-deadline",
            imp: TOKIO,
            rounds: 3_000_000,
            support: Support::Run(semaphore_or_deadline_tokio),
        },
    ]
}
