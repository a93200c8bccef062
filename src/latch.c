/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/latch.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "wait_future.h"

/*
 * The state word (its layout is ABI, in <syncband/latch.h>): the queue's
 * bits and the count from bit SB_LATCH_STATE_COUNT_SHIFT up.  The
 * uncontended count_down, try_wait and first poll are inline in the header;
 * what they cannot finish comes here (the *_slow functions).
 *
 * Waits queue only while the count is above zero, and the count reaches
 * zero only in a CAS that either finds neither HELD nor NONEMPTY (nobody
 * waits or is registering: nothing to release) or takes the queue lock (the
 * broadcast).  A registering wait takes the lock in the CAS that found the
 * count above zero, so a count_down to zero waits for it and then releases
 * it, or comes first and makes that CAS fail.  While the lock is held the
 * count can rise (add) or fall short of zero (count_down) lock-free: the
 * holder's decision stays true, and the unlock's CAS keeps the new count.
 *
 * The broadcast is sb_waitq_release_all: every wait queued when the count
 * reached zero is released from the moment the zeroing CAS took the lock.
 * An add that reopens the latch meanwhile lets new waits queue, into the
 * emptied queue, for the next zero.  The count occupies the bits where other
 * primitives keep a lone waiter's address, so the latch never uses
 * src/lone.h: its locks are sb_waitq_lock, and the broadcast's (which
 * re-takes the lock between batches) is one too.
 *
 * Publication: the count_downs are release RMWs, and every later RMW of the
 * word (lock, unlock, add) continues their release sequences; the zero is
 * read with acquire by try_wait and a first poll, and a released wait
 * acquires its node's final value, stored with release by the broadcaster
 * after its acq_rel zeroing CAS.
 */
_Static_assert(SB_LATCH_STATE_COUNT_SHIFT == SB_WAITQ_STATE_SHIFT,
	       "the count takes every bit above the queue's");

static inline size_t latch_count_of(size_t state)
{
	return state >> SB_LATCH_STATE_COUNT_SHIFT;
}

int sb_latch_init(sb_latch *l, size_t count)
{
	if (count > SB_LATCH_MAX_COUNT)
		return -EINVAL;
	*l = (sb_latch)SB_LATCH_INIT(count);
	return 0;
}

int sb_latch_destroy(sb_latch *l)
{
	if (sb_waitq_may_have_waiters(sb_waitq_load(&l->q)))
		return -EBUSY;
	sb_waitq_poison(&l->q);
	return 0;
}

size_t sb_latch_count(const sb_latch *l)
{
	return latch_count_of(sb_waitq_load(&l->q));
}

/* Under the lock, which the zeroing CAS took: releases every queued wait. */
static void latch_open_and_unlock(sb_latch *l)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_release_all(&l->q, SB_WAITER_GRANTED, &batch);
	sb_waitq_unlock(&l->q);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

int sb_latch_count_down_slow(sb_latch *l, size_t n)
{
	size_t state = sb_waitq_load(&l->q);
	for (;;) {
		size_t count = latch_count_of(state);
		if (n > count)
			return -ERANGE;
		if (n == 0)
			return 0;
		size_t next = state - n * SB_LATCH_STATE_COUNT_ONE;
		if (n < count || !sb_waitq_may_have_waiters(state)) {
			/* release: a wait or try_wait that sees the zero this
			 * leads to sees our writes; relaxed on failure, the loop
			 * re-reads and re-decides. */
			if (atomic_compare_exchange_weak_explicit(&l->q.state, &state, next,
								  memory_order_release,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		/* To zero with waits queued or registering: wait for a holder
		 * (a registering wait must be queued to be released). */
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&l->q.state, state);
			continue;
		}
		/* acq_rel: release, the zero is read without the lock, and a
		 * reader that sees it must see our writes (an acquire-only lock
		 * CAS would publish nothing); acquire, the queue lock. */
		if (atomic_compare_exchange_weak_explicit(&l->q.state, &state, next | SB_QLOCK_HELD,
							  memory_order_acq_rel,
							  memory_order_relaxed))
			break;
	}
	latch_open_and_unlock(l);
	return 0;
}

int sb_latch_add(sb_latch *l, size_t n)
{
	size_t state = sb_waitq_load(&l->q);
	for (;;) {
		if (n > SB_LATCH_MAX_COUNT - latch_count_of(state))
			return -EOVERFLOW;
		if (n == 0)
			return 0;
		/* relaxed: an add publishes nothing, and it cannot open the latch;
		 * as an RMW it still continues the count_downs' release
		 * sequences.  Also while the lock is held: see the top. */
		if (atomic_compare_exchange_weak_explicit(&l->q.state, &state,
							  state + n * SB_LATCH_STATE_COUNT_ONE,
							  memory_order_relaxed, memory_order_relaxed))
			return 0;
	}
}

/* A first poll that did not find the count zero inline: queue, unless it got there. */
static int latch_wait_first_poll(void *future, const sb_waker *w)
{
	sb_latch_wait *f = future;
	sb_latch *l = f->latch;
	/* Before the lock (a clone may re-enter the library), and before the
	 * word is read: the inline poll found the count above zero, so a wait
	 * that comes here nearly always queues. */
	sb_waker clone = sb_waker_clone(w);
	size_t state = sb_waitq_load(&l->q);
	for (;;) {
		if (latch_count_of(state) == 0) {
			/* The reads above were relaxed: read again with acquire
			 * (pairs with the release that took the count to zero). */
			if (sb_latch_try_wait(l) != 0) {
				state = sb_waitq_load(&l->q);
				continue; /* reopened meanwhile */
			}
			sb_waker_drop(clone);
			return 0;
		}
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&l->q.state, state);
			continue;
		}
		/* acquire: the queue lock (sb_qlock_try_take).  Taken only if the
		 * count is still above zero, and it cannot reach zero until we
		 * unlock. */
		if (sb_qlock_try_take(&l->q.state, &state, state | SB_QLOCK_HELD, 0))
			break;
	}
	sb_waitq_push_and_unlock(&l->q, &f->waiter, 1, clone);
	return SB_PENDING;
}

static int latch_wait_repoll(void *future, const sb_waker *w)
{
	sb_latch_wait *f = future;
	return sb_future_repoll(&f->status, &f->latch->q, &f->waiter, w);
}

/* A first poll comes here when the inline one found the count above zero. */
int sb_latch_wait_poll_slow(sb_latch_wait *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->latch, f, w, latch_wait_first_poll,
				   latch_wait_repoll);
}

void sb_latch_wait_cancel(sb_latch_wait *f)
{
	if (sb_future_begin_cancel(&f->status))
		(void)sb_waitq_cancel(&f->latch->q, &f->waiter); /* nothing to pass on */
}

SB_FUTURE_OPS(sb_latch_wait_ops, sb_latch_wait, sb_latch_wait_poll, sb_latch_wait_cancel);

int sb_latch_wait_blocking(sb_latch *l, uint64_t timeout_ns)
{
	if (sb_latch_try_wait(l) == 0)
		return 0;
	sb_latch_wait f;
	sb_latch_wait_init(&f, l);
	return sb_park_block_on(&f, &sb_latch_wait_ops, timeout_ns);
}
