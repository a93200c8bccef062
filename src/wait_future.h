/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One way to write a wait future.
 *
 * Every wait future in the library has an `int status` and an sb_waiter
 * node in the caller's memory, and the same life:
 *
 *   SB_FUTURE_IDLE --first poll--> 0 or an error (done at once),
 *                                  or SB_PENDING (its node waits)
 *   SB_PENDING     --re-poll-----> SB_PENDING, or 0 or an error
 *   IDLE, PENDING  --cancel------> -ECANCELED, after handing on what the
 *                                  node held (a grant it never observed)
 *   done           --anything----> the same result again
 *
 * The uncontended first poll and a re-poll that finds the node granted are
 * inline in the public header.  A primitive writes only what differs:
 *
 *   <future>_first_poll   one CAS decides: done, wait alone (src/lone.h),
 *                         or queue; returns the new status
 *   <future>_repoll       the queued future's later poll; usually
 *                         sb_future_repoll or sb_future_repoll_lone
 *   <future>_cancel       sb_future_begin_cancel, then the hand-on
 *
 * and gets the rest here: the out-of-line poll (sb_wait_future_poll) and the
 * sb_future_ops table (SB_FUTURE_OPS, src/future_ops.h).  The blocking wait is
 * sb_park_block_on (src/park.h) on that table.
 */
#ifndef SYNCBAND_SRC_WAIT_FUTURE_H
#define SYNCBAND_SRC_WAIT_FUTURE_H

#include "future_ops.h"
#include "lone.h"
#include "waitq.h"

/* A step of a poll: returns the new status of `future` (of the primitive's type). */
typedef int (*sb_wait_step_fn)(void *future, const sb_waker *waker);

/*
 * The out-of-line poll of every wait future: a first poll goes to
 * `first_poll`, a pending one to `repoll`, and the status either returns is
 * stored; a done one returns its result again (sb_future_done_result:
 * `primitive` is the one the future was initialised with).
 */
static inline int sb_wait_future_poll(int *status, const void *primitive, void *future,
				      const sb_waker *waker, sb_wait_step_fn first_poll,
				      sb_wait_step_fn repoll)
{
	if (*status == SB_FUTURE_IDLE)
		return *status = first_poll(future, waker);
	if (*status != SB_PENDING)
		return sb_future_done_result(*status, primitive);
	return *status = repoll(future, waker);
}

/*
 * Records a detached waiter's result in `status` (SB_WAITER_GRANTED: 0,
 * SB_WAITER_CLOSED: -ESHUTDOWN); anything else leaves it pending.  Returns
 * the status.  sb_future_repoll and sb_future_repoll_lone: a later poll of
 * a queued future (in a queue without or with a lone waiter), which
 * re-registers `waker` and then settles.
 */
static inline int sb_future_settle(int *status, size_t remaining)
{
	if (remaining == SB_WAITER_GRANTED)
		*status = 0;
	else if (remaining == SB_WAITER_CLOSED)
		*status = -ESHUTDOWN;
	return *status;
}

static inline int sb_future_repoll(int *status, sb_waitq *q, sb_waiter *w,
				   const sb_waker *waker)
{
	return sb_future_settle(status, sb_waitq_repoll(q, w, waker));
}

static inline int sb_future_repoll_lone(int *status, sb_waitq *q, sb_waiter *w,
					const sb_waker *waker)
{
	return sb_future_settle(status, sb_waitq_repoll_lone(q, w, waker));
}

/*
 * Start of every cancel: marks the future cancelled and returns true when
 * it was queued (there is work to undo), false when it was idle or done.
 */
static inline bool sb_future_begin_cancel(int *status)
{
	int was = *status;
	if (was == SB_PENDING || was == SB_FUTURE_IDLE)
		*status = -ECANCELED;
	return was == SB_PENDING;
}

#endif
