/* SPDX-License-Identifier: Apache-2.0 */
#include "waitq.h"

#include <assert.h>

void sb_wake_batch_run(sb_wake_batch *b)
{
	for (unsigned i = 0; i < b->count; i++)
		sb_waker_wake(b->wakers[i]);
	b->count = 0;
}

void sb_waitq_after_unlock(sb_wake_batch *b, sb_waker drop)
{
	if (b)
		sb_wake_batch_run(b);
	if (drop.vtable)
		sb_waker_drop(drop);
}

void sb_waitq_push(sb_waitq *q, sb_waiter *w, size_t remaining, const sb_waker *waker)
{
	assert(!sb_waiter_is_detached(remaining));
	w->next = NULL;
	w->prev = q->tail;
	w->waker = sb_waker_clone(waker);
	sb_waiter_set_remaining_locked(w, remaining);
	if (q->tail)
		q->tail->next = w;
	else
		q->head = w;
	q->tail = w;
}

sb_waker sb_waitq_unlink(sb_waitq *q, sb_waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		q->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		q->tail = w->prev;
	w->next = w->prev = NULL;
	sb_waker waker = w->waker;
	w->waker = SB_NO_WAKER;
	return waker;
}

void sb_waitq_detach(sb_waitq *q, sb_waiter *w, size_t final, sb_wake_batch *b)
{
	assert(sb_waiter_is_detached(final));
	assert(!sb_wake_batch_is_full(b));
	b->wakers[b->count++] = sb_waitq_unlink(q, w);
	/* release: hands the node, and what it was granted, back to its owner. */
	atomic_store_explicit(&w->remaining, final, memory_order_release);
}

bool sb_waitq_detach_front(sb_waitq *q, size_t final, sb_wake_batch *b)
{
	sb_waiter *w = sb_waitq_front(q);
	if (w == NULL)
		return false;
	sb_waitq_detach(q, w, final, b);
	return true;
}

void sb_waitq_flush(sb_waitq *q, sb_wake_batch *b)
{
	sb_waitq_unlock(q);
	sb_wake_batch_run(b);
	sb_waitq_lock(q, 0);
}

void sb_waitq_detach_through(sb_waitq *q, size_t limit, size_t final, sb_wake_batch *b)
{
	sb_waiter *w;
	while ((w = sb_waitq_front(q)) != NULL && sb_waiter_remaining_locked(w) <= limit) {
		sb_waitq_detach(q, w, final, b);
		if (sb_wake_batch_is_full(b))
			sb_waitq_flush(q, b);
	}
}

bool sb_waitq_cancel_locked(sb_waitq *q, sb_waiter *w, size_t *remaining, sb_waker *waker)
{
	size_t r = sb_waiter_load(w);
	if (!sb_waiter_is_detached(r)) {
		sb_waitq_lock(q, 0);
		r = sb_waiter_remaining_locked(w);
		if (!sb_waiter_is_detached(r)) {
			*remaining = r;
			*waker = sb_waitq_unlink(q, w);
			return true;
		}
		sb_waitq_unlock(q);
	}
	*remaining = r;
	return false;
}

size_t sb_waitq_repoll(sb_waitq *q, sb_waiter *w, const sb_waker *waker)
{
	size_t remaining = sb_waiter_load(w);
	if (sb_waiter_is_detached(remaining))
		return remaining;

	sb_waker old = SB_NO_WAKER;
	sb_waitq_lock(q, 0);
	remaining = sb_waiter_remaining_locked(w);
	if (!sb_waiter_is_detached(remaining) && !sb_waker_will_wake(&w->waker, waker)) {
		old = w->waker;
		w->waker = sb_waker_clone(waker);
	}
	sb_waitq_unlock(q);
	sb_waitq_after_unlock(NULL, old);
	return remaining;
}

int sb_future_repoll(int *status, sb_waitq *q, sb_waiter *w, const sb_waker *waker)
{
	size_t remaining = sb_waitq_repoll(q, w, waker);
	if (remaining == SB_WAITER_GRANTED)
		*status = 0;
	else if (remaining == SB_WAITER_CLOSED)
		*status = -ESHUTDOWN;
	return *status;
}
