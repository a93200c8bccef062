/* SPDX-License-Identifier: Apache-2.0 */
#include "waitq.h"

#include <assert.h>

void sb_wake_batch_run(sb_wake_batch *b)
{
	for (unsigned i = 0; i < b->count; i++)
		sb_waker_wake(b->wakers[i]);
	b->count = 0;
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
	w->waker.vtable = NULL;
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

void sb_waitq_flush(sb_waitq *q, sb_wake_batch *b)
{
	sb_waitq_unlock(q);
	sb_wake_batch_run(b);
	sb_waitq_lock(q);
}

size_t sb_waitq_repoll(sb_waitq *q, sb_waiter *w, const sb_waker *waker)
{
	size_t remaining = sb_waiter_load(w);
	if (sb_waiter_is_detached(remaining))
		return remaining;

	sb_waker old = { NULL, NULL };
	sb_waitq_lock(q);
	remaining = sb_waiter_remaining_locked(w);
	if (!sb_waiter_is_detached(remaining) && !sb_waker_will_wake(&w->waker, waker)) {
		old = w->waker;
		w->waker = sb_waker_clone(waker);
	}
	sb_waitq_unlock(q);
	if (old.vtable)
		sb_waker_drop(old);
	return remaining;
}
