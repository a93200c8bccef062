/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lone waiter: a handoff to a first waiter in one read-modify-write
 * on each side.
 *
 * A primitive whose own bits above SB_WAITQ_LONE_SHIFT are
 * zero (or hold nothing it needs) while anyone waits may let a first waiter
 * that is owed one unit wait without the lock: the waiter fills in its node
 * (remaining = SB_WAITER_LONE) and installs the node's address in those bits
 * with one CAS, as `node | SB_WAITQ_NONEMPTY | the primitive's low bits`
 * ("lone form"; nodes of such primitives are 16-byte aligned).  Then:
 *   - a releaser claims it with one CAS to the word without the address and
 *     NONEMPTY, and owns the node: sb_waitq_claim_lone, which then grants
 *     and wakes it (sb_waitq_grant_lone);
 *   - whoever needs the queue locks with sb_waitq_lock_lone, whose CAS also
 *     clears the address, and which then makes the node the queue's only
 *     one, owed 1;
 *   - its owner's cancel withdraws it with one CAS (sb_waitq_cancel_lone).
 * An owner that finds SB_WAITER_LONE after its node left the word knows that
 * a releaser owns the node for a few instructions and waits for the final
 * value (sb_waitq_lone_settle).  So a handoff to a lone waiter is one
 * read-modify-write on each side instead of two.
 *
 * No node lives below SB_WAITQ_LONE_MIN (the first page is never mapped), so
 * a word whose bits from SB_WAITQ_LONE_SHIFT up read 1 to 15 holds no
 * address: a primitive may keep a small count there while NONEMPTY, with
 * its waiters in the queue (the mutex's unlock budget, src/mutex.c).
 */
#ifndef SYNCBAND_SRC_LONE_H
#define SYNCBAND_SRC_LONE_H

#include <assert.h>

#include "waitq.h"

#define SB_WAITQ_LONE_LOW (((size_t)1 << SB_WAITQ_LONE_SHIFT) - 1)
#define SB_WAITQ_LONE_MIN ((size_t)256)

/* Lone form: the word carries a lone waiter's address (see the top of the file). */
static inline bool sb_waitq_is_lone(size_t state)
{
	return (state & SB_WAITQ_NONEMPTY) && state >= SB_WAITQ_LONE_MIN;
}

static inline sb_waiter *sb_waitq_lone(size_t state)
{
	return (sb_waiter *)(uintptr_t)(state & ~SB_WAITQ_LONE_LOW);
}

/* Whether `w` may wait as a lone waiter (its address leaves the low bits). */
static inline bool sb_waiter_may_be_lone(const sb_waiter *w)
{
	return ((uintptr_t)w & SB_WAITQ_LONE_LOW) == 0;
}

/*
 * The word that takes the lock from `state` (also setting `bits`), less a
 * lone address: what a CAS that takes the queue lock by hand installs.
 */
static inline size_t sb_waitq_lock_word(size_t state, size_t bits)
{
	return (sb_waitq_is_lone(state) ? state & SB_WAITQ_LONE_LOW : state) | SB_QLOCK_HELD | bits;
}

/*
 * Takes the lock (also setting `bits`, published as by sb_qlock_try_take) of
 * a queue that may hold a lone waiter, which becomes the queue's only node.
 * Returns the word as it was, less the lone address.
 */
size_t sb_waitq_lock_lone(sb_waitq *q, size_t bits);

/* Having locked the word from `state` by hand: what sb_waitq_lock_lone does after. */
static inline size_t sb_waitq_adopt_lone(sb_waitq *q, size_t state)
{
	if (!sb_waitq_is_lone(state))
		return state;
	sb_waiter *w = sb_waitq_lone(state);
	q->head = q->tail = w;
	sb_waiter_set_remaining_locked(w, 1);
	return state & SB_WAITQ_LONE_LOW;
}

/*
 * sb_waitq_lock_lone that also clears the bits `clear` from a word holding
 * a queue (NONEMPTY, no lone address) in the CAS that takes the lock, and
 * says in *cleared which of them were set: a primitive that keeps a value of
 * its own in those bits while waiters queue (the fair semaphore's budget)
 * takes it back with the lock.  Returns the word as it was, less the lone
 * address and the cleared bits.
 */
static inline size_t sb_waitq_lock_lone_clearing(sb_waitq *q, size_t bits, size_t clear,
						 size_t *cleared)
{
	size_t state = sb_waitq_load(q);
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&q->state, state);
			continue;
		}
		size_t gone = (state & SB_WAITQ_NONEMPTY) && !sb_waitq_is_lone(state) ? state & clear : 0;
		/* The CAS's acquire also sees a lone node as its owner filled it
		 * in before installing it (with release), and what was released
		 * into the cleared bits (each such release RMW heads a release
		 * sequence that this RMW continues). */
		if (sb_qlock_try_take(&q->state, &state, sb_waitq_lock_word(state, bits) - gone, bits)) {
			*cleared = gone;
			return sb_waitq_adopt_lone(q, state) - gone;
		}
	}
}

/*
 * Fills in `w` to be installed as the lone waiter; `*clone` keeps the waker
 * clone across retries of the installing CAS (drop it if the CAS never wins).
 */
static inline void sb_waiter_prepare_lone(sb_waiter *w, const sb_waker *waker, sb_waker *clone)
{
	assert((uintptr_t)w >= SB_WAITQ_LONE_MIN); /* its address must read as one */
	sb_waker_clone_once(waker, clone);
	w->next = w->prev = NULL;
	w->waker = *clone;
	/* relaxed: published by the installing CAS (release). */
	atomic_store_explicit(&w->remaining, SB_WAITER_LONE, memory_order_relaxed);
}

/* A releaser that claimed the lone waiter `w` (its CAS, acquire): grants and wakes it. */
void sb_waitq_grant_lone(sb_waiter *w);

/*
 * A releaser that found the word in lone form (*state): claims the lone
 * waiter by moving the word to `next`, then grants and wakes it.  False,
 * with *state refreshed, when the word changed first.
 */
static inline bool sb_waitq_claim_lone(sb_waitq *q, size_t *state, size_t next)
{
	/* acq_rel: acquire sees the node its owner filled in before installing
	 * it; release, the woken waiter sees what we wrote before.  relaxed on
	 * failure: the caller re-decides. */
	if (!atomic_compare_exchange_weak_explicit(&q->state, state, next, memory_order_acq_rel,
						   memory_order_relaxed))
		return false;
	sb_waitq_grant_lone(sb_waitq_lone(*state));
	return true;
}

/* Owner: waits until a releaser that claimed `w` has published its final value. */
size_t sb_waitq_lone_settle(sb_waiter *w);

/* sb_waitq_repoll for a queue that may hold a lone waiter. */
size_t sb_waitq_repoll_lone(sb_waitq *q, sb_waiter *w, const sb_waker *waker);

enum sb_lone_cancel {
	SB_CANCEL_WITHDRAWN, /* was lone, is gone; *waker to drop, nothing granted */
	SB_CANCEL_UNLINKED,  /* was queued: unlinked, lock HELD, as sb_waitq_lock_for_cancel */
	SB_CANCEL_DETACHED,  /* detached before we looked: *remaining is final */
};

/*
 * Owner's cancel in a queue that may hold a lone waiter.  `keep`: the
 * primitive's low bits in the word while `w` is lone (restored on
 * withdrawal).
 */
enum sb_lone_cancel sb_waitq_cancel_lone(sb_waitq *q, sb_waiter *w, size_t keep,
					 size_t *remaining, sb_waker *waker);

/* sb_waitq_flush for a queue that may hold a lone waiter: it joins the queue. */
void sb_waitq_flush_lone(sb_waitq *q, sb_wake_batch *b);

/*
 * Owner's cancel of a wait owed one unit (a lock, a signal) whose only hand-on
 * is a grant it never observed: withdraws or unlinks `w` and drops its waker.
 * True when it had been granted: the caller passes the unit on.  `keep` as in
 * sb_waitq_cancel_lone.
 */
bool sb_waitq_cancel_one(sb_waitq *q, sb_waiter *w, size_t keep);

/*
 * The end of a first poll that may wait alone, after its CAS moved the word
 * from `state` to `next`: without the lock, it either installed `w` as the
 * lone waiter (NONEMPTY: pending; `w` keeps `clone`) or took what it wanted
 * (0: drops `clone`, if it made one); with the lock, it moves a lone waiter
 * into the queue, queues `w` owed `owed` with `clone` and unlocks (pending).
 */
static inline int sb_waitq_finish_first_poll(sb_waitq *q, sb_waiter *w, size_t state,
					     size_t next, sb_waker clone, size_t owed)
{
	if (!(next & SB_QLOCK_HELD)) {
		/* NONEMPTY and our address: we installed it (a barging mutex
		 * locker leaves others queued, with no address in the word; a
		 * semaphore's count is there only without NONEMPTY) */
		if ((next & SB_WAITQ_NONEMPTY) && sb_waitq_lone(next) == w)
			return SB_PENDING;
		sb_waker_drop_if(clone);
		return 0;
	}
	sb_waitq_adopt_lone(q, state);
	sb_waitq_push_and_unlock(q, w, owed, clone);
	return SB_PENDING;
}

#endif
