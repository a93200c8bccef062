//! A one-slot channel of unit tokens for the smol stack.
//!
//! Debian ships no async-channel, so the `executor/channels` row on
//! async-executor builds its channel the way async-channel does: a bounded
//! `ConcurrentQueue` (capacity one) plus two `event_listener::Event`s, one
//! signalled when the slot fills and one when it empties. A blocked side
//! registers a listener, re-checks the slot, and only then waits, so a
//! notification between the check and the wait is never lost.

use std::sync::Arc;

use concurrent_queue::ConcurrentQueue;
use event_listener::{Event, EventListener};

struct Slot {
    queue: ConcurrentQueue<()>,
    /// Notified after a token was pushed (wakes a receiver).
    filled: Event,
    /// Notified after a token was popped (wakes a sender).
    emptied: Event,
}

pub struct Sender(Arc<Slot>);
pub struct Receiver(Arc<Slot>);

/// Creates a channel that holds at most one token.
pub fn one_slot() -> (Sender, Receiver) {
    let slot = Arc::new(Slot {
        queue: ConcurrentQueue::bounded(1),
        filled: Event::new(),
        emptied: Event::new(),
    });
    (Sender(slot.clone()), Receiver(slot))
}

impl Sender {
    /// Puts a token in the slot, waiting while it is full.
    pub async fn send(&self) {
        let mut listener: Option<EventListener> = None;
        loop {
            if self.0.queue.push(()).is_ok() {
                self.0.filled.notify(1);
                return;
            }
            // Full: register first, then try once more before waiting.
            match listener.take() {
                None => listener = Some(self.0.emptied.listen()),
                Some(l) => l.await,
            }
        }
    }
}

impl Receiver {
    /// Takes the token from the slot, waiting while it is empty.
    pub async fn recv(&self) {
        let mut listener: Option<EventListener> = None;
        loop {
            if self.0.queue.pop().is_ok() {
                self.0.emptied.notify(1);
                return;
            }
            // Empty: register first, then try once more before waiting.
            match listener.take() {
                None => listener = Some(self.0.filled.listen()),
                Some(l) => l.await,
            }
        }
    }
}
