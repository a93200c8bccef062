/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sb_future_ops table of a future type, for the core and the executor
 * alike (src/wait_future.h says how a wait future is written).
 */
#ifndef SYNCBAND_SRC_FUTURE_OPS_H
#define SYNCBAND_SRC_FUTURE_OPS_H

#include <syncband/future.h>

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
