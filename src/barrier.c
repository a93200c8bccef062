/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/barrier.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "wait_future.h"

/*
 * The state word is the queue's alone (bits 0-2, <syncband/future.h>); the
 * barrier's own state - the parties and the arrivals of the current
 * generation - is beside it, `arrived` written under the queue lock.  (It
 * cannot live in the word: a broadcast that drops the lock between wake
 * batches re-locks with sb_waitq_lock_lone, which reads the bits from
 * SB_WAITQ_LONE_SHIFT up as a lone waiter's address while NONEMPTY is set.)
 *
 * Every arrival takes the lock, since it either queues or releases the
 * queue; under it, `arrived` equals the number of queued waits.  The
 * arrival that finds parties - 1 others is the leader: it releases the whole
 * queue at once (sb_waitq_release_all), starts the next generation at zero
 * and completes without waiting.  So the leader is chosen under the lock, by
 * arrival order, and a cancel can never take the role from anyone: a cancel
 * either finds its wait queued (its generation has not completed: it unlinks
 * it and withdraws the arrival) or released (it changes nothing).  Waits
 * that arrive while a broadcast wakes a large generation in batches join the
 * emptied queue: the next generation.
 *
 * A waker is cloned before the lock (a clone may re-enter the library), but
 * only by an arrival that will queue: the leader keeps no clone, so it makes
 * none.  Which one an arrival is, it guesses from a lock-free look at
 * `arrived`; a wrong guess costs the leader a clone it drops, or a queueing
 * arrival a second lock to clone between (a cancel withdrew meanwhile).
 *
 * Ordering: each arrival's unlock is a release CAS on the word, and the
 * leader's lock CAS (acquire) reads the latest value, after every earlier
 * arrival's unlock in the word's chain of read-modify-writes; the leader's
 * release store that detaches each waiter (or, for one a broadcast marked
 * released, the lock it then takes) passes that on to every party.
 */

/* Under the lock. */
static inline uint32_t barrier_arrived_locked(const sb_barrier *b)
{
	/* relaxed: written only under the queue lock, which we hold. */
	return atomic_load_explicit((_Atomic uint32_t *)&b->arrived, memory_order_relaxed);
}

static inline void barrier_set_arrived_locked(sb_barrier *b, uint32_t arrived)
{
	/* relaxed: read with the lock held, or as barrier_guess_last's guess. */
	atomic_store_explicit(&b->arrived, arrived, memory_order_relaxed);
}

/* Without the lock: whether this arrival will lead, to decide on a clone. */
static inline bool barrier_guess_last(const sb_barrier *b, uint32_t parties)
{
	/* relaxed: only a guess; the decision is made under the lock. */
	return atomic_load_explicit((_Atomic uint32_t *)&b->arrived, memory_order_relaxed) ==
	       parties - 1;
}

int sb_barrier_init(sb_barrier *b, size_t parties)
{
	if (parties == 0 || parties > SB_BARRIER_MAX_PARTIES)
		return -EINVAL;
	*b = (sb_barrier)SB_BARRIER_INIT(parties);
	return 0;
}

int sb_barrier_destroy(sb_barrier *b)
{
	if (sb_waitq_may_have_waiters(sb_waitq_load(&b->q)))
		return -EBUSY;
	sb_waitq_poison(&b->q);
	return 0;
}

/* Under the lock: the leader releases its generation, unlocks, then wakes it. */
static int barrier_release_and_unlock(sb_barrier *b, sb_barrier_wait *f, sb_waker clone)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	barrier_set_arrived_locked(b, 0); /* the next generation; it may start while we wake */
	sb_waitq_release_all(&b->q, SB_WAITER_GRANTED, &batch);
	sb_waitq_unlock(&b->q);
	sb_waitq_after_unlock(&batch, clone);
	f->leader = true;
	return 0;
}

/* The arrival: queue, or, as the last of its generation, release it. */
static int barrier_wait_first_poll(void *future, const sb_waker *w)
{
	sb_barrier_wait *f = future;
	sb_barrier *b = f->barrier;
	uint32_t parties = b->parties;
	if (parties == 0)
		return -EINVAL;
	if (parties == 1) {
		(void)sb_waitq_load(&b->q); /* the debug check of a destroyed barrier */
		f->leader = true;
		return 0;
	}
	sb_waker clone = barrier_guess_last(b, parties) ? SB_NO_WAKER : sb_waker_clone(w);
	uint32_t arrived;
	for (;;) {
		sb_waitq_lock(&b->q, 0);
		arrived = barrier_arrived_locked(b);
		if (arrived == parties - 1)
			return barrier_release_and_unlock(b, f, clone);
		if (clone.vtable)
			break;
		/* Not the last after all: clone outside the lock, and look again. */
		sb_waitq_unlock(&b->q);
		clone = sb_waker_clone(w);
	}
	barrier_set_arrived_locked(b, arrived + 1);
	sb_waitq_push_and_unlock(&b->q, &f->waiter, 1, clone);
	return SB_PENDING;
}

static int barrier_wait_repoll(void *future, const sb_waker *w)
{
	sb_barrier_wait *f = future;
	return sb_future_repoll(&f->status, &f->barrier->q, &f->waiter, w);
}

int sb_barrier_wait_poll_slow(sb_barrier_wait *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->barrier, f, w, barrier_wait_first_poll,
				   barrier_wait_repoll);
}

void sb_barrier_wait_cancel(sb_barrier_wait *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_barrier *b = f->barrier;
	size_t remaining;
	sb_waker mine;
	if (sb_waitq_lock_for_cancel(&b->q, &f->waiter, &remaining, &mine)) {
		/* Still queued, so its generation has not completed: withdraw. */
		uint32_t arrived = barrier_arrived_locked(b);
		assert(arrived > 0);
		barrier_set_arrived_locked(b, arrived - 1);
		sb_waitq_unlock(&b->q);
		sb_waitq_after_unlock(NULL, mine);
		return;
	}
	/* Released before we looked: the generation completed with it. */
	f->released = true;
}

SB_FUTURE_OPS(sb_barrier_wait_ops, sb_barrier_wait, sb_barrier_wait_poll, sb_barrier_wait_cancel);

int sb_barrier_wait_blocking(sb_barrier *b, uint64_t timeout_ns)
{
	sb_barrier_wait f;
	sb_barrier_wait_init(&f, b);
	int r = sb_park_block_on(&f, &sb_barrier_wait_ops, timeout_ns);
	if (r == -ETIMEDOUT && f.released)
		return 0; /* released between the parker's last poll and its cancel */
	if (r == 0 && f.leader)
		return SB_BARRIER_LEADER;
	return r;
}
