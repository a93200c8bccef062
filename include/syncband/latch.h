/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/latch.h - an async latch that is also a wait group.
 *
 * A latch holds a count; waits complete once it reaches zero.  count_down(n)
 * takes n off it, add(n) puts n on it.  As a latch (C++'s std::latch): init
 * with the number of arrivals and wait for them.  As a wait group (Go's
 * sync.WaitGroup): init at 0, add(1) before each piece of work starts,
 * count_down(1) when it ends, and wait for all of them.
 *
 *   - A count of 0 at init is allowed: the latch is open at once.
 *   - The count_down that reaches zero releases every registered wait
 *     atomically: from then on a poll of any of them returns 0.  Waits whose
 *     first poll finds the count zero complete at once; a wait registers on
 *     its first poll, whatever the count was at its init.
 *   - add(n) on an open latch closes it again: waits registered after it wait
 *     for the next zero; waits released before it stay released.
 *   - count_down(0) and add(0) change nothing and return 0.
 *
 * Memory ordering: count_down is a release.  A wait that completes and a
 * try_wait that returns 0 acquire: they see what was written before every
 * count_down before the zero they observed.  add publishes nothing.
 *
 * Thread safety: every function may be called from any thread concurrently,
 * except init/destroy; one future is driven by one thread at a time.
 *
 * Errors (negative errno; every error leaves the latch unchanged)
 *   -EINVAL      init() with a count above SB_LATCH_MAX_COUNT
 *   -ERANGE      count_down(n) with n above the count (nothing is taken)
 *   -EOVERFLOW   add(n) would take the count above SB_LATCH_MAX_COUNT
 *   -EAGAIN      try_wait(): the count is not zero
 *   -EBUSY       destroy() while waits are registered (the latch stays usable)
 *   -ETIMEDOUT   wait_blocking() ran out of time
 *   -ECANCELED   poll of a future after its cancel
 */
#ifndef SYNCBAND_LATCH_H
#define SYNCBAND_LATCH_H

#include <errno.h>

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 24 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_latch {
	sb_waitq q; /* state word: see below */
} sb_latch;

/*
 * The state word (ABI; the queue's bits are in future.h):
 *
 *   bits 3-  the count, one SB_LATCH_STATE_COUNT_ONE each
 *
 * The count reaches zero only by a release operation: the lock-free
 * count_down's CAS when neither HELD nor NONEMPTY is set, or, when someone
 * waits or is registering, the acq_rel CAS that zeroes it and takes the
 * queue lock for the broadcast.  A count_down that leaves the count above
 * zero and an add take no lock, also while it is held: a holder's decision
 * (a wait that queues because the count is not zero) stays true.  Lock-free
 * readers (try_wait, a first poll) read the word with acquire.
 */
#define SB_LATCH_STATE_COUNT_SHIFT SB_WAITQ_STATE_SHIFT
#define SB_LATCH_STATE_COUNT_ONE (SB_CAST(size_t, 1) << SB_LATCH_STATE_COUNT_SHIFT)

/* The largest count: the whole field above the queue's bits (2^61 - 1). */
#define SB_LATCH_MAX_COUNT (SIZE_MAX >> SB_LATCH_STATE_COUNT_SHIFT)

/* Static initialiser for a latch with count `n` (n <= SB_LATCH_MAX_COUNT). */
#define SB_LATCH_INIT(n) { SB_WAITQ_INIT(SB_CAST(size_t, n) << SB_LATCH_STATE_COUNT_SHIFT) }

/* 56 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_latch_wait {
	sb_waiter waiter;
	sb_latch *latch;
	int status;
} sb_latch_wait;

/* Returns 0, or -EINVAL when count > SB_LATCH_MAX_COUNT. */
SB_API int sb_latch_init(sb_latch *l, size_t count);

/*
 * Returns 0, or -EBUSY while waits are registered (the latch stays usable).
 * Every wait must have completed or been cancelled first.  A count above
 * zero does not keep it from being destroyed.
 */
SB_API int sb_latch_destroy(sb_latch *l);

/* The count now.  A snapshot: no ordering. */
SB_API size_t sb_latch_count(const sb_latch *l);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API int sb_latch_count_down_slow(sb_latch *l, size_t n);
SB_API int sb_latch_wait_poll_slow(sb_latch_wait *f, const sb_waker *w);

/*
 * Takes `n` off the count; the count_down that takes it to zero releases
 * every registered wait (waking them after the latch's internal lock is
 * released).  Returns 0, or -ERANGE when n is above the count (nothing is
 * taken).  Release ordering.  Never waits.  Inline: one CAS when the count
 * stays above zero, or reaches it with nobody waiting.
 */
SB_INLINE int sb_latch_count_down(sb_latch *l, size_t n)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&l->q);
	size_t count = state >> SB_LATCH_STATE_COUNT_SHIFT;
	/* 1 <= n <= count, the lock free, and to zero only with nobody
	 * waiting (a destroyed latch's word has the lock held: slow path). */
	size_t busy = n == count ? SB_QLOCK_HELD | SB_WAITQ_NONEMPTY : SB_QLOCK_HELD;
	/* release: a wait or try_wait that sees the zero this leads to sees
	 * our writes (pairs with their acquire loads; the RMWs after this one
	 * continue its release sequence). */
	if (n - 1 < count && !(state & busy) &&
	    sb__state_cas_release(&l->q, &state, state - n * SB_LATCH_STATE_COUNT_ONE))
		return 0;
	return sb_latch_count_down_slow(l, n);
}

/*
 * Puts `n` on the count; on an open latch, closes it again (waits that
 * register afterwards wait for the next zero).  Returns 0, or -EOVERFLOW
 * when the count would pass SB_LATCH_MAX_COUNT (nothing is added).  One
 * atomic read-modify-write, no lock.  Never waits.
 */
SB_API int sb_latch_add(sb_latch *l, size_t n);

/*
 * 0 if the count is zero (acquire ordering: every count_down before that
 * zero happened-before), else -EAGAIN.  Inline: one atomic load.
 */
SB_INLINE int sb_latch_try_wait(const sb_latch *l)
{
	/* acquire: pairs with the release of the count_down that took the
	 * count to zero, whose release sequence carries the earlier ones. */
	size_t state = sb__state_load_acquire(&l->q);
	return state >> SB_LATCH_STATE_COUNT_SHIFT ? -EAGAIN : 0;
}

/* Prepares a wait on `l`.  Does not register. */
SB_INLINE void sb_latch_wait_init(sb_latch_wait *f, sb_latch *l)
{
	f->latch = l;
	f->status = SB_FUTURE_IDLE;
}

/*
 * 0 once the count has reached zero, SB_PENDING while registered (the waker
 * will be woken once).  Acquire ordering on completion, as try_wait.  Inline:
 * a first poll that finds the count zero, or a later one that finds the
 * wait released, is one load.
 */
SB_INLINE int sb_latch_wait_poll(sb_latch_wait *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		if (sb_latch_try_wait(f->latch) == 0) {
			f->status = 0;
			return 0;
		}
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_latch_wait_poll_slow(f, w);
}

/* Unregisters the wait and drops its waker; a released wait holds nothing to pass on. */
SB_API void sb_latch_wait_cancel(sb_latch_wait *f);

/*
 * Blocks the calling thread until the count is zero: 0, or -ETIMEDOUT after
 * `timeout_ns` nanoseconds (SB_TIMEOUT_INFINITE waits forever; 0 tries once).
 */
SB_API int sb_latch_wait_blocking(sb_latch *l, uint64_t timeout_ns);

/* This future through sb_future_ops (executor combinators, sb_block_on). */
SB_API extern const sb_future_ops sb_latch_wait_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_LATCH_H */
