/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The yield future, the ready-made sb_future_ops adapters, and the blocking
 * join (the core's blocking wait on the join future).
 */
#include "internal.h"

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

static int yield_poll(void *f, const sb_waker *w)
{
	return sb_yield_poll(f, w);
}
static void yield_cancel(void *f)
{
	sb_yield_cancel(f);
}
static int sleep_poll(void *f, const sb_waker *w)
{
	return sb_sleep_poll(f, w);
}
static void sleep_cancel(void *f)
{
	sb_sleep_cancel(f);
}
static int timeout_poll(void *f, const sb_waker *w)
{
	return sb_timeout_poll(f, w);
}
static void timeout_cancel(void *f)
{
	sb_timeout_cancel(f);
}
static int join_poll(void *f, const sb_waker *w)
{
	return sb_join_poll(f, w);
}
static void join_cancel(void *f)
{
	sb_join_cancel(f);
}

const sb_future_ops sb_yield_ops = { yield_poll, yield_cancel };
const sb_future_ops sb_sleep_ops = { sleep_poll, sleep_cancel };
const sb_future_ops sb_timeout_ops = { timeout_poll, timeout_cancel };
const sb_future_ops sb_join_ops = { join_poll, join_cancel };

/* ------------------------------------------------------------ blocking join */

int sb_join_wait(sb_join *j)
{
	if (j->task && sb__sched_join_would_deadlock(j->task))
		return -EDEADLK;
	return sb_future_wait_blocking(j, &sb_join_ops, SB_TIMEOUT_INFINITE);
}
