/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blocking a plain thread on a future: the thread polls it with a waker that
 * unparks it through a futex.  Shared by every primitive's *_blocking wait;
 * exported as sb_future_wait_blocking (syncband/blocking.h), which the
 * executor's sb_join_wait uses too.
 */
#ifndef SYNCBAND_SRC_PARK_H
#define SYNCBAND_SRC_PARK_H

#include <stdbool.h>
#include <stdint.h>

#include <syncband/blocking.h>

/*
 * Polls `future` until it completes, parking between polls.  When
 * `timeout_ns` passes first (SB_TIMEOUT_INFINITE: never), polls once more,
 * then cancels the future and returns -ETIMEDOUT.  Returns only after every
 * clone of its waker has been woken or dropped, so no waker outlives the
 * parker on this thread's stack.
 */
static inline int sb_park_block_on(void *future, const sb_future_ops *ops, uint64_t timeout_ns)
{
	return sb_future_wait_blocking(future, ops, timeout_ns);
}

/* The waker of a thread blocked in sb_park_block_on / sb_park_wait. */
extern const sb_waker_vtable sb_park_vtable;

static inline bool sb_waker_unparks_thread(const sb_waker *w)
{
	return w->vtable == &sb_park_vtable;
}

/* sb_park_block_on, spinning before each sleep only if `may_spin`. */
int sb_park_wait(void *future, const sb_future_ops *ops, uint64_t timeout_ns, bool may_spin);

#endif
