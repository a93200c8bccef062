/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/blocking.h - a plain thread waiting on a future, and the clock
 * every timeout and deadline in syncband is measured on.
 *
 * Each primitive's *_blocking wait (sb_semaphore_acquire_blocking, ...) and
 * the executor's sb_join_wait are this wait on one particular future; use it
 * directly for any other future, or a combinator of them, that has
 * sb_future_ops.
 */
#ifndef SYNCBAND_BLOCKING_H
#define SYNCBAND_BLOCKING_H

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SB_NSEC_PER_USEC UINT64_C(1000)
#define SB_NSEC_PER_MSEC UINT64_C(1000000)
#define SB_NSEC_PER_SEC UINT64_C(1000000000)

/* CLOCK_MONOTONIC now, in nanoseconds: the clock of every deadline here. */
SB_API uint64_t sb_now_ns(void);

/*
 * Blocks the calling thread until `future` completes, polling it through
 * `ops` with a waker that unparks this thread (a short spin, then a futex),
 * and returns its result (0 or a negative errno).  When `timeout_ns` passes
 * first (SB_TIMEOUT_INFINITE: never; 0 polls once), polls once more, then
 * cancels the future and returns -ETIMEDOUT.  Returns only after every clone
 * of its waker has been woken or dropped, so the future and the waker may
 * live on the caller's stack.  A wake happens-before the poll it causes
 * (what the waker's caller wrote before waking is visible to that poll), as
 * in any executor.  Never allocates.  Not from inside a task of
 * an event loop: the loop would stop while this thread sleeps.
 */
SB_API int sb_future_wait_blocking(void *future, const sb_future_ops *ops, uint64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_BLOCKING_H */
