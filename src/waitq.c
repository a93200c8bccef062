/* SPDX-License-Identifier: Apache-2.0 */
#include "waitq.h"

void sb_waitq_flush(sb_waitq *q, sb_wake_batch *b)
{
	sb_waitq_unlock(q);
	sb_wake_batch_run(b);
	sb_waitq_lock(q, 0);
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
static size_t waitq_leave_released_and_unlock(sb_waitq *q, sb_waiter *w, size_t released,
					      sb_waker clone)
{
	sb_waker mine = sb_waitq_unlink(q, w);
	sb_waitq_unlock(q);
	sb_waker_drop(mine);
	sb_waker_drop_if(clone);
	return sb_waiter_released_final(released);
}

bool sb_waitq_cancel_locked(sb_waitq *q, sb_waiter *w, size_t *remaining, sb_waker *waker)
{
	size_t r = sb_waiter_remaining_locked(w);
	if (sb_waiter_is_released(r)) {
		*waker = sb_waitq_unlink(q, w);
		*remaining = sb_waiter_released_final(r);
		return false;
	}
	*remaining = r;
	if (sb_waiter_is_detached(r)) {
		*waker = SB_NO_WAKER;
		return false;
	}
	*waker = sb_waitq_unlink(q, w);
	return true;
}

bool sb_waitq_lock_for_cancel(sb_waitq *q, sb_waiter *w, size_t *remaining, sb_waker *waker)
{
	size_t r = sb_waiter_load(w);
	if (sb_waiter_is_detached(r)) {
		*remaining = r;
		return false;
	}
	sb_waitq_lock(q, 0);
	return sb_waitq_cancel_or_unlock(q, w, remaining, waker);
}

size_t sb_waitq_cancel(sb_waitq *q, sb_waiter *w)
{
	size_t remaining;
	sb_waker mine;
	if (sb_waitq_lock_for_cancel(q, w, &remaining, &mine)) {
		sb_waitq_unlock(q);
		sb_waitq_after_unlock(NULL, mine);
	}
	return remaining;
}

size_t sb_waitq_repoll_and_unlock(sb_waitq *q, sb_waiter *w, sb_waker clone)
{
	size_t remaining = sb_waiter_remaining_locked(w);
	if (sb_waiter_is_released(remaining))
		return waitq_leave_released_and_unlock(q, w, remaining, clone);
	sb_waker old = clone;
	if (!sb_waiter_is_detached(remaining) && remaining != SB_WAITER_WOKEN && clone.vtable) {
		old = w->waker;
		w->waker = clone;
	}
	sb_waitq_unlock(q);
	sb_waker_drop_if(old);
	return remaining;
}

size_t sb_waitq_repoll_queued(sb_waitq *q, sb_waiter *w, const sb_waker *waker)
{
	sb_waker clone = sb_waitq_repoll_clone(w, sb_waiter_load(w), waker);
	sb_waitq_lock(q, 0);
	return sb_waitq_repoll_and_unlock(q, w, clone);
}
