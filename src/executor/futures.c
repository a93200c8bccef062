/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The yield future, the ready-made sb_future_ops adapters, and the blocking
 * join (the core's blocking wait on the join future).
 */
#include "internal.h"

#include "../future_ops.h"

#include <errno.h>

/* ------------------------------------------------------------ yield */

void sb_yield_init(sb_yield *y)
{
	y->yielded = 0;
}

int sb_yield_poll(sb_yield *y, const sb_waker *w)
{
	if (y->yielded)
		return 0;
	y->yielded = 1;
	if (!sched_yield_requeues(w))
		sb_waker_wake_by_ref(w);
	return SB_PENDING;
}

void sb_yield_cancel(sb_yield *y)
{
	(void)y;
}

/* ------------------------------------------------------------ ops */

SB_FUTURE_OPS(sb_yield_ops, sb_yield, sb_yield_poll, sb_yield_cancel);
SB_FUTURE_OPS(sb_sleep_ops, sb_sleep, sb_sleep_poll, sb_sleep_cancel);
SB_FUTURE_OPS(sb_timeout_ops, sb_timeout, sb_timeout_poll, sb_timeout_cancel);
SB_FUTURE_OPS(sb_join_ops, sb_join, sb_join_poll, sb_join_cancel);

/* ------------------------------------------------------------ blocking join */

int sb_join_wait(sb_join *j)
{
	if (j->status == SB_PENDING && sb__sched_join_would_deadlock(j->task))
		return -EDEADLK;
	return sb_future_wait_blocking(j, &sb_join_ops, SB_TIMEOUT_INFINITE);
}
