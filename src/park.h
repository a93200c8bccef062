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

/*
 * Every spinning wait in the library (the parker's before it sleeps, the
 * eventually fair mutex's before it queues) first takes one of the spinning
 * slots, as many as the cores less one: with more threads than cores, a
 * waiter that spins takes the core that the holder needs to finish (and
 * with it the wake or the release the waiter waits for).  A waiter that
 * finds no free slot sleeps at once.  True if there was a slot; give it
 * back when the spin ends.
 */
bool sb_park_take_spin_slot(void);
void sb_park_give_spin_slot(void);

#endif
