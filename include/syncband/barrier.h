/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/barrier.h - an async, reusable barrier of N parties with a leader.
 *
 *   - A barrier has `parties` parties (1 to SB_BARRIER_MAX_PARTIES).  A party
 *     arrives with its wait future's first poll; the waits complete when the
 *     N-th party of their generation arrives.
 *   - That N-th arrival is the generation's leader: its first poll returns 0
 *     at once and sb_barrier_wait_is_leader() is true for it alone.  Exactly
 *     one party of each generation is told it is the leader.
 *   - Reusable: after a generation completes the next one counts from zero
 *     (a wait that arrives after that belongs to the next generation).
 *   - The leader releases its generation atomically: from then on a poll of
 *     any of its waits returns 0, even one not woken yet.
 *   - Cancelling a wait whose generation has not completed withdraws its
 *     arrival; cancelling one whose generation completed changes nothing.
 *
 * Memory ordering: everything a party did before its wait's first poll
 * happens-before everything any party of the same generation does after its
 * wait completed (the leader's included).
 *
 * Thread safety: every function may be called from any thread concurrently,
 * except init/destroy; one future is driven by one thread at a time.
 *
 * Errors (negative errno; every error leaves the barrier as it was)
 *   -EINVAL      init() with 0 or more than SB_BARRIER_MAX_PARTIES parties; a
 *                wait on a barrier statically initialised with 0 parties
 *   -EBUSY       destroy() while waits are registered (the barrier stays
 *                usable)
 *   -ETIMEDOUT   wait_blocking() ran out of time; its arrival was withdrawn
 *   -ECANCELED   poll of a future after its cancel
 */
#ifndef SYNCBAND_BARRIER_H
#define SYNCBAND_BARRIER_H

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most parties a barrier can have. */
#define SB_BARRIER_MAX_PARTIES SB_CAST(size_t, UINT32_MAX)

/* What sb_barrier_wait_blocking() returns to the leader (pthread_barrier_wait's
 * PTHREAD_BARRIER_SERIAL_THREAD); the other parties get 0. */
#define SB_BARRIER_LEADER 1

/*
 * 32 bytes on 64-bit targets.  Fields are private.  The state word holds the
 * queue's bits only (future.h); the arrivals of the current generation are
 * counted in `arrived`, written under the queue lock, where it equals the
 * number of queued waits (read without the lock only as a guess).
 */
typedef struct sb_barrier {
	sb_waitq q;
	uint32_t parties;
	SB_ATOMIC(uint32_t) arrived;
} sb_barrier;

/* Static initialiser for a barrier of `n` parties (1 to the maximum). */
#ifdef __cplusplus
#define SB_BARRIER_INIT(n) { SB_WAITQ_INIT(SB_CAST(size_t, 0)), SB_CAST(uint32_t, n), { 0 } }
#else
#define SB_BARRIER_INIT(n) { SB_WAITQ_INIT(SB_CAST(size_t, 0)), SB_CAST(uint32_t, n), 0 }
#endif

/* 56 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_barrier_wait {
	sb_waiter waiter;
	sb_barrier *barrier;
	int status;
	bool leader;   /* completed as the generation's last arrival */
	bool released; /* its cancel found its generation completed */
} sb_barrier_wait;

/* Returns 0, or -EINVAL when parties is 0 or above SB_BARRIER_MAX_PARTIES. */
SB_API int sb_barrier_init(sb_barrier *b, size_t parties);

/*
 * Returns 0, or -EBUSY while waits are registered (the barrier stays usable).
 * Every wait must have completed or been cancelled first; the barrier must
 * not be used after a successful destroy.
 */
SB_API int sb_barrier_destroy(sb_barrier *b);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API int sb_barrier_wait_poll_slow(sb_barrier_wait *f, const sb_waker *w);

/* Prepares a wait on `b`.  Does not arrive: its first poll does. */
SB_INLINE void sb_barrier_wait_init(sb_barrier_wait *f, sb_barrier *b)
{
	f->barrier = b;
	f->status = SB_FUTURE_IDLE;
	f->leader = false;
	f->released = false;
}

/*
 * The first poll arrives: 0 if it is the generation's last arrival (the
 * leader), else SB_PENDING (registered; the waker will be woken once).  Later
 * polls: SB_PENDING until the generation completes, then 0.  -EINVAL on a
 * barrier of 0 parties, -ECANCELED after cancel.  Acquire ordering on
 * completion.  Inline: a later poll that finds its generation completed is
 * one load.
 */
SB_INLINE int sb_barrier_wait_poll(sb_barrier_wait *f, const sb_waker *w)
{
	if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_barrier_wait_poll_slow(f, w);
}

/*
 * Whether this wait completed as its generation's leader (its last arrival):
 * true for exactly one wait of each generation, once its poll returned 0.
 * False before, and for every other wait.
 */
SB_INLINE bool sb_barrier_wait_is_leader(const sb_barrier_wait *f)
{
	return f->status == 0 && f->leader;
}

/*
 * Abandons the wait.  Pending and its generation not complete: withdraws the
 * arrival (the generation needs one more party again) and drops the waker.
 * Its generation completed but not yet observed: nothing changes (the
 * generation completed with it).  Idle or done: nothing.
 */
SB_API void sb_barrier_wait_cancel(sb_barrier_wait *f);

/*
 * Blocks the calling thread as one party: SB_BARRIER_LEADER for the
 * generation's leader, 0 for the others, -ETIMEDOUT after `timeout_ns`
 * nanoseconds (SB_TIMEOUT_INFINITE waits forever; 0 arrives, and withdraws
 * unless that completed the generation), or -EINVAL.  -ETIMEDOUT means the
 * arrival was withdrawn: a generation that completed with this party, even
 * as the time ran out, returns 0.
 */
SB_API int sb_barrier_wait_blocking(sb_barrier *b, uint64_t timeout_ns);

/* This future through sb_future_ops (executor combinators, sb_block_on). */
SB_API extern const sb_future_ops sb_barrier_wait_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_BARRIER_H */
