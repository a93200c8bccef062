/* SPDX-License-Identifier: Apache-2.0 */
#include "waitq.h"

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

bool sb_waitq_cancel_held(sb_waitq *q, sb_waiter *w, size_t *remaining, sb_waker *waker)
{
	size_t r = sb_waiter_remaining_locked(w);
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

size_t sb_waitq_repoll_held(sb_waitq *q, sb_waiter *w, const sb_waker *waker)
{
	sb_waker old = SB_NO_WAKER;
	size_t remaining = sb_waiter_remaining_locked(w);
	if (!sb_waiter_is_detached(remaining) && !sb_waker_will_wake(&w->waker, waker)) {
		old = w->waker;
		w->waker = sb_waker_clone(waker);
	}
	sb_waitq_unlock(q);
	sb_waitq_after_unlock(NULL, old);
	return remaining;
}

size_t sb_waitq_repoll_queued(sb_waitq *q, sb_waiter *w, const sb_waker *waker)
{
	sb_waitq_lock(q, 0);
	return sb_waitq_repoll_held(q, w, waker);
}
