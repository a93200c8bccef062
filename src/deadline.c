/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/deadline.h>

#include <errno.h>

#include "future_ops.h"

void sb_deadline_init(sb_deadline *d, void *inner, const sb_future_ops *ops)
{
	d->inner = inner;
	d->ops = ops;
	atomic_init(&d->expired, 0);
	d->status = SB_PENDING;
}

int sb_deadline_poll(sb_deadline *d, const sb_waker *w)
{
	if (d->status != SB_PENDING)
		return sb_future_done_result(d->status, d->ops);
	/* Read before polling inner: an expiry that lands during the poll below
	 * waits for the next one, which then polls inner once more. */
	/* acquire: pairs with the release CAS in sb_deadline_expire_with. */
	int expired = atomic_load_explicit(&d->expired, memory_order_acquire);
	int r = d->ops->poll(d->inner, w);
	if (r != SB_PENDING) {
		d->status = r;
		return r;
	}
	if (!expired)
		return SB_PENDING;
	d->ops->cancel(d->inner);
	/* A cancel that could not undo inner (a channel operation that had
	 * happened) leaves it completed: that completion is the result. */
	r = d->ops->poll(d->inner, w);
	d->status = r == 0 ? 0 : expired;
	return d->status;
}

int sb_deadline_expire_with(sb_deadline *d, int err)
{
	if (err >= 0)
		return -EINVAL;
	int none = 0;
	/* release: what the expirer did before (its timer's bookkeeping) is
	 * visible to the poll that acts on it (acquire load in poll).  The first
	 * expiry wins; relaxed on failure, nothing is read. */
	atomic_compare_exchange_strong_explicit(&d->expired, &none, err, memory_order_release,
						memory_order_relaxed);
	return 0;
}

void sb_deadline_expire(sb_deadline *d)
{
	sb_deadline_expire_with(d, -ETIMEDOUT);
}

bool sb_deadline_is_expired(const sb_deadline *d)
{
	/* relaxed: a snapshot for the caller; poll does the ordered read. */
	return atomic_load_explicit((SB_ATOMIC(int) *)&d->expired, memory_order_relaxed) != 0;
}

void sb_deadline_cancel(sb_deadline *d)
{
	if (d->status != SB_PENDING)
		return;
	d->ops->cancel(d->inner);
	d->status = -ECANCELED;
}

SB_FUTURE_OPS(sb_deadline_ops, sb_deadline, sb_deadline_poll, sb_deadline_cancel);
