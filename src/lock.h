/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The queue lock: two bits at the bottom of a primitive's state word
 * (defined with the rest of the word's layout in <syncband/future.h>).
 *
 *   bit 0  SB_QLOCK_HELD    the waiter queue is locked
 *   bit 1  SB_QLOCK_PARKED  someone sleeps on the futex waiting for it
 *
 * The lock shares the word with the primitive's own state so that a
 * primitive can decide and lock in one CAS (a first waiter sets "locked"
 * in the same CAS that found no permit or signal), and unlock and publish
 * its new state in one more.  Nothing but the word itself is needed, so
 * primitives stay statically initialisable.
 *
 * Contended lockers spin for up to 10 us on a machine of more than one core
 * (critical sections are a few pointer writes, or a walk of the fair mutex's
 * queue: lock.c says why the spin outlasts those), then set SB_QLOCK_PARKED
 * and sleep on the futex that is the low 32 bits of the word.  An unlock
 * that clears a set SB_QLOCK_PARKED wakes every sleeper: they race again and
 * re-mark the bit if they must sleep.  That costs a thundering herd only
 * when threads actually slept, and no sleeper can be forgotten.
 */
#ifndef SYNCBAND_SRC_LOCK_H
#define SYNCBAND_SRC_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <syncband/future.h>

#define SB_QLOCK_BITS (SB_QLOCK_HELD | SB_QLOCK_PARKED)

/*
 * Called with `state`, a value of the word in which the lock was held:
 * spins, then sleeps, until the lock is seen free.  Returns the word as last
 * read (lock not held, not taken).
 */
size_t sb_qlock_wait(_Atomic size_t *word, size_t state);

/* Wakes every thread sleeping on the word's futex. */
void sb_qlock_wake_all(_Atomic size_t *word);

/*
 * The CAS that takes the lock, moving the word from *state to `next`, which
 * also sets `bits` (the primitive's, or none).  False, with *state
 * refreshed, when the word changed first.
 */
static inline bool sb_qlock_try_take(_Atomic size_t *word, size_t *state, size_t next, size_t bits)
{
	if (bits)
		/* acq_rel: others read `bits` without the lock, and one that sees
		 * them must see what we wrote before setting them: an acquire-only
		 * CAS publishes nothing (a manual-reset event's set() once set
		 * EV_SET so, and a reader that saw it could miss the setter's
		 * writes on a weakly ordered machine).  Acquire: as below. */
		return atomic_compare_exchange_weak_explicit(word, state, next, memory_order_acq_rel,
							     memory_order_relaxed);
	/* acquire: the critical section sees what the last holder wrote (pairs
	 * with the release in sb_qlock_release). */
	return atomic_compare_exchange_weak_explicit(word, state, next, memory_order_acquire,
						     memory_order_relaxed);
}

/* Takes the lock, also setting `bits`; returns the word as it was before. */
static inline size_t sb_qlock_acquire(_Atomic size_t *word, size_t bits)
{
	/* relaxed: a first guess; the CAS below decides. */
	size_t state = atomic_load_explicit(word, memory_order_relaxed);
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(word, state);
			continue;
		}
		if (sb_qlock_try_take(word, &state, state | SB_QLOCK_HELD | bits, bits))
			return state;
	}
}

/*
 * Releases the lock, and in the same atomic step clears `clear` and then adds
 * `add` to the rest of the word.  Returns the new value.
 */
static inline size_t sb_qlock_release(_Atomic size_t *word, size_t clear, size_t add)
{
	/* relaxed: the CAS below re-reads it. */
	size_t state = atomic_load_explicit(word, memory_order_relaxed);
	size_t next;
	do {
		next = (state & ~(SB_QLOCK_BITS | clear)) + add;
		/* release: publishes the critical section to the next holder
		 * and to every lock-free reader of the word. */
	} while (!atomic_compare_exchange_weak_explicit(word, &state, next, memory_order_release,
							memory_order_relaxed));
	if (state & SB_QLOCK_PARKED)
		sb_qlock_wake_all(word);
	return next;
}

#endif
