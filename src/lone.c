/* SPDX-License-Identifier: Apache-2.0 */
#include "lone.h"

#include <sched.h>

#include "cpu.h"
#include "futex.h"

size_t sb_waitq_lock_lone(sb_waitq *q, size_t bits)
{
	size_t cleared;
	return sb_waitq_lock_lone_clearing(q, bits, 0, &cleared);
}

void sb_waitq_grant_lone(sb_waiter *w)
{
	sb_waker waker = w->waker;
	/* release: hands the node, and what it was granted, back to its owner. */
	atomic_store_explicit(&w->remaining, SB_WAITER_GRANTED, memory_order_release);
	sb_waker_wake(waker);
}

size_t sb_waitq_lone_settle(sb_waiter *w)
{
	size_t r;
	for (unsigned spins = 0; (r = sb_waiter_load(w)) == SB_WAITER_LONE; spins++) {
#ifdef SB_MODEL_CHECK
		/* The model's scheduler runs the releaser instead. */
		(void)spins;
		sb_futex_wait(sb_futex_low_half(&w->remaining), (uint32_t)SB_WAITER_LONE, NULL);
#else
		if (spins < 100)
			sb_cpu_relax();
		else
			sched_yield(); /* the releaser was preempted between its CAS and store */
#endif
	}
	return r;
}

size_t sb_waitq_repoll_lone(sb_waitq *q, sb_waiter *w, const sb_waker *waker)
{
	size_t remaining = sb_waiter_load(w);
	if (sb_waitq_repoll_is_settled(w, remaining, waker))
		return remaining;
	sb_waker clone = sb_waitq_repoll_clone(w, remaining, waker);
	sb_waitq_lock_lone(q, 0);
	if (sb_waiter_remaining_locked(w) == SB_WAITER_LONE) {
		/* Not in the queue: a releaser claimed it and is finishing. */
		sb_waitq_unlock(q);
		sb_waker_drop_if(clone);
		return sb_waitq_lone_settle(w);
	}
	return sb_waitq_repoll_and_unlock(q, w, clone);
}

enum sb_lone_cancel sb_waitq_cancel_lone(sb_waitq *q, sb_waiter *w, size_t keep,
					 size_t *remaining, sb_waker *waker)
{
	size_t r = sb_waiter_load(w);
	if (r == SB_WAITER_LONE) {
		size_t lone = (uintptr_t)w | SB_WAITQ_NONEMPTY | keep;
		/* relaxed: withdrawing publishes nothing, and the node stays ours. */
		if (atomic_compare_exchange_strong_explicit(&q->state, &lone, keep,
							    memory_order_relaxed,
							    memory_order_relaxed)) {
			*remaining = SB_WAITER_LONE;
			*waker = w->waker;
			return SB_CANCEL_WITHDRAWN;
		}
		r = sb_waitq_lone_settle(w); /* claimed, or moved into the queue */
	}
	if (sb_waiter_is_detached(r)) {
		*remaining = r;
		return SB_CANCEL_DETACHED;
	}
	sb_waitq_lock_lone(q, 0);
	return sb_waitq_cancel_or_unlock(q, w, remaining, waker) ? SB_CANCEL_UNLINKED
								 : SB_CANCEL_DETACHED;
}

void sb_waitq_flush_lone(sb_waitq *q, sb_wake_batch *b)
{
	sb_waitq_unlock(q);
	sb_wake_batch_run(b);
	sb_waitq_lock_lone(q, 0);
}

bool sb_waitq_cancel_one(sb_waitq *q, sb_waiter *w, size_t keep)
{
	size_t remaining;
	sb_waker mine;
	switch (sb_waitq_cancel_lone(q, w, keep, &remaining, &mine)) {
	case SB_CANCEL_WITHDRAWN:
		sb_waker_drop(mine);
		return false;
	case SB_CANCEL_UNLINKED:
		sb_waitq_unlock(q);
		sb_waitq_after_unlock(NULL, mine);
		return false;
	case SB_CANCEL_DETACHED:
		break;
	}
	return remaining == SB_WAITER_GRANTED;
}
