/* SPDX-License-Identifier: Apache-2.0 */
#include "waitq.h"

#include <sched.h>

#include "cpu.h"
#include "futex.h"

void sb_waitq_flush(sb_waitq *q, sb_wake_batch *b)
{
	sb_waitq_unlock(q);
	sb_wake_batch_run(b);
	sb_waitq_lock_lone(q, 0);
}

/* Moves every queued waiter onto the list headed by `guard`, emptying the queue. */
static void waitq_move_to_guard(sb_waitq *q, sb_waiter *guard)
{
	guard->next = q->head;
	guard->prev = q->tail;
	q->head->prev = guard;
	q->tail->next = guard;
	q->head = q->tail = NULL;
}

/*
 * Under the lock: detaches every queued waiter, which all fit in `b`, from
 * the front, publishing `final`; empties the queue.  Taking them all needs no
 * unlinking one by one.
 */
static void waitq_detach_all(sb_waitq *q, size_t final, sb_wake_batch *b)
{
	sb_waiter *w = sb_waitq_front(q);
	q->head = q->tail = NULL;
	while (w) {
		sb_waiter *next = w->next;
		b->wakers[b->count++] = w->waker;
		w->next = w->prev = NULL;
		/* release: hands the node, and what it was granted, back to its
		 * owner (as sb_waitq_detach); `w` is not touched afterwards. */
		atomic_store_explicit(&w->remaining, final, memory_order_release);
		w = next;
	}
}

void sb_waitq_release_all(sb_waitq *q, size_t final, sb_wake_batch *b)
{
	if (sb_waitq_is_empty(q))
		return;
	/* Every one marked before any is detached: whoever sees one detached
	 * (the release store in sb_waitq_detach) sees all the marks. */
	size_t mark = final == SB_WAITER_GRANTED ? SB_WAITER_RELEASED_GRANTED
						 : SB_WAITER_RELEASED_CLOSED;
	unsigned queued = 0;
	for (sb_waiter *w = sb_waitq_front(q); w; w = w->next, queued++)
		sb_waiter_set_remaining_locked(w, mark);
	if (queued <= SB_WAKE_BATCH_MAX - b->count) {
		/* One batch takes them all and the lock is never dropped: an
		 * owner that sees its mark takes the lock, and by then its node
		 * is detached. */
		waitq_detach_all(q, final, b);
		return;
	}
	sb_waiter guard;
	waitq_move_to_guard(q, &guard);
	for (;;) {
		if (sb_wake_batch_is_full(b))
			sb_waitq_flush(q, b); /* owners may unlink themselves meanwhile */
		if (guard.next == &guard)
			return;
		sb_waitq_detach(q, guard.next, final, b);
	}
}

/* Under the lock: a released `w` unlinks itself; unlocks and drops its waker. */
static size_t waitq_leave_released(sb_waitq *q, sb_waiter *w, size_t released, sb_waker clone)
{
	sb_waker mine = sb_waitq_unlink(q, w);
	sb_waitq_unlock(q);
	sb_waker_drop(mine);
	sb_waker_drop_if(clone);
	return sb_waiter_released_final(released);
}

bool sb_waitq_cancel_held(sb_waitq *q, sb_waiter *w, size_t *remaining, sb_waker *waker)
{
	size_t r = sb_waiter_remaining_locked(w);
	if (sb_waiter_is_released(r)) {
		*remaining = waitq_leave_released(q, w, r, SB_NO_WAKER);
		return false;
	}
	*remaining = r;
	if (!sb_waiter_is_detached(r)) {
		*waker = sb_waitq_unlink(q, w);
		return true;
	}
	sb_waitq_unlock(q);
	return false;
}

bool sb_waitq_cancel_locked(sb_waitq *q, sb_waiter *w, size_t *remaining, sb_waker *waker)
{
	size_t r = sb_waiter_load(w);
	if (!sb_waiter_is_detached(r)) {
		sb_waitq_lock(q, 0);
		return sb_waitq_cancel_held(q, w, remaining, waker);
	}
	*remaining = r;
	return false;
}

size_t sb_waitq_repoll_held(sb_waitq *q, sb_waiter *w, sb_waker clone)
{
	size_t remaining = sb_waiter_remaining_locked(w);
	if (sb_waiter_is_released(remaining))
		return waitq_leave_released(q, w, remaining, clone);
	sb_waker old = clone;
	if (!sb_waiter_is_detached(remaining) && remaining != SB_WAITER_WOKEN && clone.vtable) {
		old = w->waker;
		w->waker = clone;
	}
	sb_waitq_unlock(q);
	sb_waker_drop_if(old);
	return remaining;
}

/* The clone a re-poll registers: none when the waiter keeps its waker. */
static sb_waker waitq_repoll_clone(const sb_waiter *w, size_t remaining, const sb_waker *waker)
{
	if (sb_waiter_is_released(remaining) || sb_waker_will_wake(&w->waker, waker))
		return SB_NO_WAKER;
	return sb_waker_clone(waker);
}

size_t sb_waitq_repoll_queued(sb_waitq *q, sb_waiter *w, const sb_waker *waker)
{
	sb_waker clone = waitq_repoll_clone(w, sb_waiter_load(w), waker);
	sb_waitq_lock(q, 0);
	return sb_waitq_repoll_held(q, w, clone);
}

/* ------------------------------------------------------------ the lone waiter */

size_t sb_waitq_lock_lone(sb_waitq *q, size_t bits)
{
	size_t state = sb_waitq_load(q);
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&q->state, state);
			continue;
		}
		/* The CAS's acquire also sees a lone node as its owner filled it
		 * in before installing it (with release). */
		if (sb_qlock_try_take(&q->state, &state, sb_waitq_locked(state, bits), bits))
			return sb_waitq_adopt_lone(q, state);
	}
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
	sb_waker clone = waitq_repoll_clone(w, remaining, waker);
	sb_waitq_lock_lone(q, 0);
	if (sb_waiter_remaining_locked(w) == SB_WAITER_LONE) {
		/* Not in the queue: a releaser claimed it and is finishing. */
		sb_waitq_unlock(q);
		sb_waker_drop_if(clone);
		return sb_waitq_lone_settle(w);
	}
	return sb_waitq_repoll_held(q, w, clone);
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
	if (!sb_waiter_is_detached(r)) {
		sb_waitq_lock_lone(q, 0);
		if (sb_waitq_cancel_held(q, w, remaining, waker))
			return SB_CANCEL_UNLINKED;
		return SB_CANCEL_DETACHED;
	}
	*remaining = r;
	return SB_CANCEL_DETACHED;
}
