/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/deadline.h - give any future a deadline kept by your own loop's
 * timer.  No clock and no executor: the loop arms a timer (uv_timer_t, a
 * timerfd, an io_uring timeout), and when it fires calls sb_deadline_expire()
 * and wakes the task.  The task's next poll polls the inner future once
 * more; if it is still pending, cancels it (a grant it holds is handed on,
 * as its cancel promises) and completes with -ETIMEDOUT.  Inner completion
 * wins ties: then the caller owns what it acquired.
 *
 *   sb_semaphore_acquire_init(&r->acquire, &sem, 1);
 *   sb_deadline_init(&r->deadline, &r->acquire, &sb_semaphore_acquire_ops);
 *   uv_timer_start(&r->timer, on_timer, 5, 0);       your loop's timer
 *   ...
 *   static void on_timer(uv_timer_t *tm)             loop thread
 *   {
 *           struct req *r = tm->data;
 *           sb_deadline_expire(&r->deadline);
 *           sb_loop_wake(&r->task);                 polls again
 *   }
 *   ... in the task's poll:
 *   int rc = sb_deadline_poll(&r->deadline, w);     SB_PENDING, 0, -ETIMEDOUT
 *
 * Thread safety: sb_deadline_expire may be called from any thread, at any
 * time, also concurrently with a poll; the expiry takes effect at the first
 * poll that starts after it.  init, poll and cancel follow the inner future's
 * rule: one thread at a time.
 */
#ifndef SYNCBAND_DEADLINE_H
#define SYNCBAND_DEADLINE_H

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Caller-owned, 24 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_deadline {
	void *inner;
	const sb_future_ops *ops;
	SB_ATOMIC(int) expired;   /* 0, or the error to complete with */
	int status;               /* SB_PENDING until done */
} sb_deadline;

/* Wraps `inner`, driven through `ops`.  Does not poll it. */
SB_API void sb_deadline_init(sb_deadline *d, void *inner, const sb_future_ops *ops);

/*
 * Polls inner: its result (0 or a negative errno) when it completes,
 * SB_PENDING while it waits and the deadline has not expired, or, once it
 * has expired and inner is still pending, cancels inner and returns
 * -ETIMEDOUT (or the error given to sb_deadline_expire_with) - unless the
 * cancel found inner's operation already done (a channel send or receive
 * that happened: inner polls to 0 after its cancel), when it returns 0.  A
 * done deadline returns its result again without touching inner.
 */
SB_API int sb_deadline_poll(sb_deadline *d, const sb_waker *w);

/*
 * The deadline has passed: the next poll completes (see sb_deadline_poll).
 * Does not wake anyone: wake the task afterwards.  Idempotent; the first
 * expiry's error stays.  No-op on a done deadline.  Any thread.
 */
SB_API void sb_deadline_expire(sb_deadline *d);

/*
 * As sb_deadline_expire, but the next poll completes with `err` (a negative
 * errno, e.g. -ECANCELED when the loop shuts down, or the error of a timer
 * that could not be armed) instead of -ETIMEDOUT.  -EINVAL, and nothing
 * changes, when `err` is not negative.
 */
SB_API int sb_deadline_expire_with(sb_deadline *d, int err);

/* True once expire has been called (a snapshot). */
SB_API bool sb_deadline_is_expired(const sb_deadline *d);

/*
 * Cancels inner (which hands on what it was granted) unless the deadline is
 * done; later polls return -ECANCELED.  After it, `d` may be freed.
 */
SB_API void sb_deadline_cancel(sb_deadline *d);

/* This future through sb_future_ops, so that a deadline can be wrapped again. */
SB_API extern const sb_future_ops sb_deadline_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_DEADLINE_H */
