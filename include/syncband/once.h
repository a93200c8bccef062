/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/once.h - an asynchronous call-once that retries a failed
 * initialiser.
 *
 *   - Whoever asks while nobody holds the job (a first poll, try(), a
 *     blocking wait) is told SB_ONCE_RUN: it is the runner, runs the
 *     initialiser however it likes, and reports with sb_once_complete()
 *     (success) or sb_once_fail() (failure).  Whoever asks while a runner
 *     holds the job waits (a future queues; try() returns -EAGAIN).
 *   - complete(): the once is done for good; every waiting future completes
 *     with 0, and every later poll, try() and is_done() sees it done.
 *   - fail(): the job passes to the oldest waiting future (FIFO), whose next
 *     poll returns SB_ONCE_RUN; with nobody waiting, the next caller to ask
 *     becomes the runner.
 *   - Cancelling a future that holds the job before its runner reported is
 *     fail(); after the report it does nothing.  A runner without a future
 *     (told by try() or a blocking wait) must report itself.
 *   - Only the runner reports: complete() and fail() return -EPERM when no
 *     runner holds the job, including while it is handed to a future that
 *     has not yet polled SB_ONCE_RUN (the caller's identity is not checked).
 *
 * Memory ordering: complete() is a release, and everything that sees the once
 * done is an acquire; fail() is a release and becoming the runner an acquire.
 *
 * Thread safety: every function may be called from any thread concurrently,
 * except init/destroy; one future is driven by one thread at a time.
 *
 * Errors (negative errno; every error leaves the once unchanged)
 *   -EAGAIN      try(): not done, and a runner holds the job
 *   -EPERM       complete() / fail(): no runner holds the job
 *   -EBUSY       destroy() while futures wait or a runner holds the job
 *   -ETIMEDOUT   sb_once_wait_blocking() ran out of time
 *   -ECANCELED   poll of a future after its cancel
 */
#ifndef SYNCBAND_ONCE_H
#define SYNCBAND_ONCE_H

#include <errno.h>

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What a poll, try() or a blocking wait returns to the caller who must run
 * the initialiser now.  Negative so that every driver of futures
 * (sb_future_wait_blocking, an executor's combinators) treats it as a
 * completion, not as pending; it is no error, and distinct from every errno
 * the once returns.
 */
#define SB_ONCE_RUN (-EINPROGRESS)

/* 24 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_once {
	sb_waitq q; /* state word: see below */
} sb_once;

/*
 * The state word (ABI; the queue's bits are in future.h):
 *
 *   bit 3     SB_ONCE_STATE_DONE      a runner reported success; final.
 *                                     Published by release operations only,
 *                                     read with acquire
 *   bit 4     SB_ONCE_STATE_RUNNING   a runner holds the job (futures wait
 *                                     only while it is set)
 *   bit 5     SB_ONCE_STATE_HANDED    the job was handed to a queued future
 *                                     whose poll has not yet returned
 *                                     SB_ONCE_RUN (only RUNNING with it)
 *   bits 6-   the tenure: how many times the job has been given to a
 *             runner, one SB_ONCE_STATE_TENURE_ONE each (wrapping); 0 once
 *             done
 *
 * DONE is never cleared, so a lock-free reader that sees it may return at
 * once, whatever else the word holds (src/once.c has the rest).
 */
#define SB_ONCE_STATE_DONE (SB_CAST(size_t, 1) << SB_WAITQ_STATE_SHIFT)
#define SB_ONCE_STATE_RUNNING (SB_CAST(size_t, 1) << (SB_WAITQ_STATE_SHIFT + 1))
#define SB_ONCE_STATE_HANDED (SB_CAST(size_t, 1) << (SB_WAITQ_STATE_SHIFT + 2))
#define SB_ONCE_STATE_TENURE_SHIFT (SB_WAITQ_STATE_SHIFT + 3)
#define SB_ONCE_STATE_TENURE_ONE (SB_CAST(size_t, 1) << SB_ONCE_STATE_TENURE_SHIFT)

/* Static initialiser: not done, nobody running. */
#define SB_ONCE_INIT { SB_WAITQ_INIT(0) }

/* 64 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_once_wait {
	sb_waiter waiter;
	sb_once *once;
	size_t tenure; /* the word's tenure bits while this future holds the job */
	int status;
} sb_once_wait;

/* Always returns 0. */
SB_API int sb_once_init(sb_once *o);

/*
 * Returns 0, or -EBUSY while futures wait or a runner holds the job (the
 * once stays usable).  The once must not be used after a successful destroy:
 * a future that returned SB_ONCE_RUN reads it when cancelled, so cancel such
 * futures before destroy, or not at all.
 */
SB_API int sb_once_destroy(sb_once *o);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API bool sb_once_is_done_slow(const sb_once *o);
SB_API int sb_once_try_slow(sb_once *o);
SB_API int sb_once_wait_poll_slow(sb_once_wait *f, const sb_waker *w);

/*
 * Whether a runner has reported success (acquire ordering: true means the
 * initialiser's writes are visible).  Inline: one atomic load, and another
 * only while the once's internal lock is held.
 */
SB_INLINE bool sb_once_is_done(const sb_once *o)
{
	/* acquire: pairs with the release operation of sb_once_complete()
	 * that set DONE (every later RMW of the word continues its release
	 * sequence). */
	size_t state = sb__state_load_acquire(&o->q);
	if (!(state & SB_QLOCK_HELD))
		return state & SB_ONCE_STATE_DONE;
	return sb_once_is_done_slow(o);
}

/*
 * Never waits: 0 when done (acquire ordering); SB_ONCE_RUN when nobody held
 * the job, which the caller now holds (it must report with complete() or
 * fail()); -EAGAIN when a runner holds it.  Inline: the done case is one
 * atomic load; taking the job is one CAS more.
 */
SB_INLINE int sb_once_try(sb_once *o)
{
	if (sb_once_is_done(o))
		return 0;
	return sb_once_try_slow(o);
}

/*
 * Reports success: the once is done; every waiting future completes with 0
 * and is woken (after the once's internal lock is released; nothing
 * allocates, whatever the number of waiters).  Release ordering.  Returns 0,
 * or -EPERM when no runner holds the job.  Never waits for another runner.
 */
SB_API int sb_once_complete(sb_once *o);

/*
 * Reports failure: the job passes to the oldest waiting future, which is
 * woken and told SB_ONCE_RUN by its next poll; with nobody waiting the once
 * is as it was before anyone ran it.  Release ordering.  Returns 0, or
 * -EPERM when no runner holds the job.
 */
SB_API int sb_once_fail(sb_once *o);

/* Prepares a future that waits for the once.  Does not register. */
SB_INLINE void sb_once_wait_init(sb_once_wait *f, sb_once *o)
{
	f->once = o;
	f->status = SB_FUTURE_IDLE;
}

/*
 * Drives the wait: 0 once the once is done (acquire ordering: the
 * initialiser's writes are visible); SB_ONCE_RUN when this future holds the
 * job (nobody held it at its first poll, or a failed runner passed it on):
 * the caller runs the initialiser and reports; SB_PENDING while it waits
 * (the waker will be woken once).  A completed future returns the same again
 * (SB_ONCE_RUN included, even after the report).  Inline: a first poll that
 * finds the once done, and a later poll that finds the wait completed, are
 * one load each.
 */
SB_INLINE int sb_once_wait_poll(sb_once_wait *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		if (sb_once_is_done(f->once)) {
			f->status = 0;
			return 0;
		}
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_once_wait_poll_slow(f, w);
}

/*
 * Abandons the wait.  A waiting future leaves the queue and drops its waker.
 * A future that holds the job - it returned SB_ONCE_RUN, or was handed the
 * job and not yet polled - and whose runner has not reported yet, fails it
 * (as sb_once_fail(): the job passes on).  Otherwise nothing.
 */
SB_API void sb_once_wait_cancel(sb_once_wait *f);

/*
 * Blocks the calling thread until the once is done or the job is its own:
 * 0 (done, acquire ordering), SB_ONCE_RUN (the caller holds the job: it
 * runs the initialiser, then reports with complete() or fail() - nobody
 * else will), or -ETIMEDOUT after `timeout_ns` nanoseconds
 * (SB_TIMEOUT_INFINITE waits forever; 0 tries once), holding nothing.  So:
 *
 *     int r = sb_once_wait_blocking(&once, SB_TIMEOUT_INFINITE);
 *     if (r == SB_ONCE_RUN) {
 *             if (init() == 0) {
 *                     sb_once_complete(&once);
 *                     r = 0;
 *             } else {
 *                     sb_once_fail(&once);    (the next waiter retries)
 *                     r = -EIO;
 *             }
 *     }
 */
SB_API int sb_once_wait_blocking(sb_once *o, uint64_t timeout_ns);

/* This future through sb_future_ops (executor combinators, sb_block_on). */
SB_API extern const sb_future_ops sb_once_wait_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_ONCE_H */
