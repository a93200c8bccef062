/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sb_future_ops table of a future type, for the core and the executor
 * alike (src/wait_future.h says how a wait future is written).
 */
#ifndef SYNCBAND_SRC_FUTURE_OPS_H
#define SYNCBAND_SRC_FUTURE_OPS_H

#include <errno.h>
#include <stddef.h>

#include <syncband/future.h>

/*
 * A done future's result, again.  A future that was never initialised (all
 * bytes zero) would read as done with 0: a pointer that its init sets and
 * nothing clears (the primitive, the inner future's ops, the joined task)
 * tells it apart, and it gets -EINVAL.  Only a done future's re-poll comes
 * here: no first poll or wait pays for the check.
 */
static inline int sb_future_done_result(int status, const void *set_by_init)
{
	return status == 0 && set_by_init == NULL ? -EINVAL : status;
}

/*
 * Defines `const sb_future_ops name` for futures of type `type` whose poll
 * and cancel are `poll` and `cancel` (the typed public functions).  A macro
 * because it defines the two untyped trampolines the table points to.
 */
#define SB_FUTURE_OPS(name, type, poll, cancel)                \
	static int name##_poll(void *future, const sb_waker *waker) \
	{                                                      \
		return poll((type *)future, waker);             \
	}                                                      \
	static void name##_cancel(void *future)                \
	{                                                      \
		cancel((type *)future);                        \
	}                                                      \
	const sb_future_ops name = { name##_poll, name##_cancel }

#endif
