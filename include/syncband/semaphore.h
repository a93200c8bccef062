/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/semaphore.h - an async counting semaphore: eventually fair by
 * default, strict FIFO on request.
 *
 * Eventually fair (SB_SEMAPHORE_INIT, sb_semaphore_init), the default: for
 * throughput, with the mutex's contract and bound.
 *   - An acquire (or try_acquire) may take free permits while others wait
 *     ("barging").  Waiters keep FIFO order: a release with waiters wakes
 *     the oldest once there are enough free permits for it; if a barger
 *     takes them first, it keeps its place at the front.  A first waiter
 *     owed one permit is handed it by the next release, as in strict mode.
 *   - Bounded: once bargers have passed the oldest waiter for longer than
 *     SB_FAIRNESS_BOUND_NS (<syncband/future.h>), releases hand their
 *     permits to the queue in order, accumulating partial grants for a
 *     multi-permit head, until every waiter queued at that point is served
 *     (a handoff phase).  So a stream of small requests cannot starve a
 *     large one.
 *
 * Strict FIFO (SB_SEMAPHORE_INIT_FIFO, sb_semaphore_init_fifo): when the
 * order of acquisition is part of the contract.
 *   - Waiters are served strictly in arrival order.  A multi-permit waiter at
 *     the head collects partial grants and blocks smaller requests behind it.
 *   - release() hands permits directly to the head waiter, never through the
 *     counter while anyone waits, so nobody can barge; try_acquire() never
 *     takes permits past a queued waiter.
 *
 * Both modes:
 *   - Cancelling a waiter returns what it was granted (partly or fully) to the
 *     next waiter, or to the counter when nobody waits; cancelling a woken
 *     one passes the wake on.
 *   - close() completes every waiter with -ESHUTDOWN (partial grants go back
 *     to the counter) and makes later acquires fail the same way; release()
 *     keeps working, so holders can still return permits.
 *   - Permits in circulation (counted, held or granted) must stay within
 *     SB_SEMAPHORE_MAX_PERMITS: release() refuses past it with -EOVERFLOW;
 *     permits returned by cancel are never refused (the counter saturates at
 *     2 * SB_SEMAPHORE_MAX_PERMITS + 1 instead of wrapping).
 *
 * Memory ordering: a release() happens-before the acquire it satisfies.
 *
 * Thread safety: every function may be called from any thread concurrently,
 * except init/destroy; one future is driven by one thread at a time.
 *
 * Errors (negative errno; every error leaves the semaphore unchanged)
 *   -EINVAL      a count above SB_SEMAPHORE_MAX_PERMITS asked of init or acquire
 *   -EOVERFLOW   release() would take the count past SB_SEMAPHORE_MAX_PERMITS
 *   -EAGAIN      try_acquire(): not enough permits, or (strict FIFO mode, or
 *                a handoff phase) someone is queued
 *   -ESHUTDOWN   the semaphore is closed (acquires only)
 *   -EBUSY       destroy() while futures are queued
 *   -ETIMEDOUT   acquire_blocking() ran out of time
 *   -ECANCELED   poll of a future after its cancel
 */
#ifndef SYNCBAND_SEMAPHORE_H
#define SYNCBAND_SEMAPHORE_H

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Well below SIZE_MAX, so that a count plus a request never wraps. */
#define SB_SEMAPHORE_MAX_PERMITS (SIZE_MAX >> 5)

/* sb_semaphore.mode: strict FIFO (see the top of the file). */
#define SB_SEMAPHORE_FIFO 1u

/* 48 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_semaphore {
	sb_waitq q;              /* state word: see below */
	uint32_t handoff_left;   /* guarded by q's lock: see src/semaphore.c */
	uint16_t mode;           /* 0 or SB_SEMAPHORE_FIFO, fixed at init */
	uint16_t releases_timed; /* guarded by q's lock */
	size_t spare;            /* guarded by q's lock */
	uint64_t passed_since;   /* guarded by q's lock */
} sb_semaphore;

/*
 * The state word (ABI; the queue's bits are in future.h):
 *
 *   bit 3     SB_SEMAPHORE_STATE_CLOSED   close() was called
 *   bits 4-   the permits in the counter, one SB_SEMAPHORE_STATE_COUNT_ONE
 *             each, while nobody waits; with NONEMPTY set, a lone waiter's
 *             address, or (eventually fair mode) a value below 16 that the
 *             library keeps for itself, free permits being kept under the
 *             queue's lock and there
 *
 * So permits can be taken lock-free when neither CLOSED nor NONEMPTY is set
 * and the count is high enough, and released lock-free when neither HELD nor
 * NONEMPTY is set (src/semaphore.c has the rest of the design).
 */
#define SB_SEMAPHORE_STATE_CLOSED (SB_CAST(size_t, 1) << SB_WAITQ_STATE_SHIFT)
#define SB_SEMAPHORE_STATE_COUNT_SHIFT (SB_WAITQ_STATE_SHIFT + 1)
#define SB_SEMAPHORE_STATE_COUNT_ONE (SB_CAST(size_t, 1) << SB_SEMAPHORE_STATE_COUNT_SHIFT)

/*
 * Static initialisers for a semaphore with `n` permits (n <= the maximum):
 * eventually fair, and strict FIFO.
 */
#define SB_SEMAPHORE_INIT(n) \
	{ SB_WAITQ_INIT(SB_CAST(size_t, n) << SB_SEMAPHORE_STATE_COUNT_SHIFT), 0, 0, 0, 0, 0 }
#define SB_SEMAPHORE_INIT_FIFO(n) \
	{ SB_WAITQ_INIT(SB_CAST(size_t, n) << SB_SEMAPHORE_STATE_COUNT_SHIFT), 0, SB_SEMAPHORE_FIFO, 0, 0, 0 }

/*
 * 64 bytes on 64-bit targets, 16-byte aligned (a lone waiter's address is
 * stored in the semaphore's word with its low 4 bits free).  Fields are
 * private.
 */
typedef struct sb_semaphore_acquire {
	SB_ALIGNAS(16) sb_waiter waiter;
	sb_semaphore *sem;
	size_t permits;
	int status;
} sb_semaphore_acquire;

/*
 * Initialises an eventually fair semaphore.  Returns 0, or -EINVAL when
 * permits > SB_SEMAPHORE_MAX_PERMITS.
 */
SB_API int sb_semaphore_init(sb_semaphore *s, size_t permits);

/* The same for a strict-FIFO semaphore. */
SB_API int sb_semaphore_init_fifo(sb_semaphore *s, size_t permits);

/*
 * Returns 0, or -EBUSY when futures are still queued (the semaphore stays
 * usable).  The semaphore must not be used after a successful destroy, and
 * every future on it must have completed or been cancelled first (a granted
 * future that was never polled again still returns its permits on cancel).
 */
SB_API int sb_semaphore_destroy(sb_semaphore *s);

/* Permits in the counter now; 0 while anyone waits.  A snapshot. */
SB_API size_t sb_semaphore_available(const sb_semaphore *s);

/* True once close() has been called. */
SB_API bool sb_semaphore_is_closed(const sb_semaphore *s);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API int sb_semaphore_try_acquire_slow(sb_semaphore *s, size_t n);
SB_API int sb_semaphore_release_slow(sb_semaphore *s, size_t n);
SB_API int sb_semaphore_acquire_poll_slow(sb_semaphore_acquire *f, const sb_waker *w);

/*
 * Whether `n` (1 to the maximum) permits may be taken lock-free from a word
 * `state`, which *next receives: neither CLOSED nor NONEMPTY, and at least n
 * in the count.  Too few borrows from the top bit (n is below 2^59 and the
 * count field starts at bit 4), which one test then catches with the others;
 * so does a count above 2^59 - 1, which only cancels can leave and the slow
 * path serves.
 */
static inline bool sb__semaphore_may_take(size_t state, size_t n, size_t *next)
{
	*next = state - n * SB_SEMAPHORE_STATE_COUNT_ONE;
	return n - 1 < SB_SEMAPHORE_MAX_PERMITS &&
	       !(*next & (~(SIZE_MAX >> 1) | SB_SEMAPHORE_STATE_CLOSED | SB_WAITQ_NONEMPTY));
}

/*
 * Whether `n` permits may be added lock-free to a word `state`: nobody
 * waits or is deciding to (neither HELD nor NONEMPTY), and the sum stays
 * within the maximum.  Conservatively, so that the word takes one bit test:
 * a count below 2^(w-6) (no bit set above bit w-3 of a w-bit size_t) and n
 * from 1 to 2^(w-6), about half the maximum each, sum to at most the maximum
 * (2^(w-5) - 1).  Releases past that, rare and the only ones that can
 * overflow, take the slow path, which checks the exact bound.
 */
static inline bool sb__semaphore_may_give(size_t state, size_t n)
{
	return n - 1 < (SB_SEMAPHORE_MAX_PERMITS >> 1) + 1 &&
	       !(state & (~(SIZE_MAX >> 2) | SB_QLOCK_HELD | SB_WAITQ_NONEMPTY));
}

/*
 * Takes `n` permits if they are available: in strict FIFO mode only when
 * nobody is queued; in eventually fair mode also past queued futures, unless
 * a handoff phase runs.  Returns 0, -EAGAIN, -ESHUTDOWN, or -EINVAL (n above
 * the maximum).  n == 0 succeeds
 * unless closed.  Acquire ordering on success.  Never waits.  Inline: one
 * CAS when the permits are there.
 */
SB_INLINE int sb_semaphore_try_acquire(sb_semaphore *s, size_t n)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&s->q);
	/* acquire: the permits come with what their releaser wrote (pairs with
	 * release()'s release CAS, or the release unlock of its slow path). */
	size_t next;
	if (sb__semaphore_may_take(state, n, &next) && sb__state_cas_acquire(&s->q, &state, next))
		return 0;
	return sb_semaphore_try_acquire_slow(s, n);
}

/*
 * Adds `n` permits.  With futures queued: strict FIFO mode (or a handoff
 * phase) hands them to the queue in order and wakes the ones it completes;
 * eventually fair mode otherwise frees them and wakes the oldest if they are
 * enough for it (wakes run after the internal lock is released).  Returns 0, or
 * -EOVERFLOW (nothing changed).  Release ordering.  Never waits.  Inline:
 * one CAS when nobody waits.
 */
SB_INLINE int sb_semaphore_release(sb_semaphore *s, size_t n)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&s->q);
	if (sb__semaphore_may_give(state, n) &&
	    /* release: whoever takes these permits sees our writes (pairs with
	     * the acquire CAS of try_acquire or of an acquire's first poll). */
	    sb__state_cas_release(&s->q, &state, state + n * SB_SEMAPHORE_STATE_COUNT_ONE))
		return 0;
	return sb_semaphore_release_slow(s, n);
}

/*
 * Closes the semaphore: every queued future completes with -ESHUTDOWN and is
 * woken; its partial grant returns to the counter.  Idempotent.
 */
SB_API void sb_semaphore_close(sb_semaphore *s);

/* Prepares a future that acquires `n` permits.  Does not register. */
SB_INLINE void sb_semaphore_acquire_init(sb_semaphore_acquire *f, sb_semaphore *s, size_t n)
{
	f->sem = s;
	f->permits = n;
	f->status = SB_FUTURE_IDLE;
}

/*
 * Drives the acquire: 0 when the permits are the caller's, SB_PENDING when
 * queued (the waker will be woken once per registration; in eventually fair
 * mode a woken future may find that a barger took the permits and return
 * SB_PENDING again, keeping its place at the front), -ESHUTDOWN, or -EINVAL
 * (n above the maximum).  n == 0 completes at once.  Acquire ordering on completion.
 * Inline: a first poll that finds the permits takes them with one CAS, and a
 * later poll that finds them granted is one load.
 */
SB_INLINE int sb_semaphore_acquire_poll(sb_semaphore_acquire *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		sb_semaphore *s = f->sem;
		/* relaxed: a guess that the CAS confirms. */
		size_t state = sb__state_load_relaxed(&s->q);
		size_t next;
		/* acquire: as try_acquire. */
		if (sb__semaphore_may_take(state, f->permits, &next) &&
		    sb__state_cas_acquire(&s->q, &state, next)) {
			f->status = 0;
			return 0;
		}
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_semaphore_acquire_poll_slow(f, w);
}

/*
 * Abandons the acquire.  A queued future leaves the queue and its partial
 * grant goes to the next waiter; a future whose permits were granted but not
 * yet observed by poll returns them; a woken one passes the wake on.  Drops the registered waker.  A future
 * that completed (poll returned 0 or an error) is left alone: permits it
 * returned 0 for belong to the caller, who releases them.
 */
SB_API void sb_semaphore_acquire_cancel(sb_semaphore_acquire *f);

/*
 * Blocks the calling thread until `n` permits are acquired: 0, -ETIMEDOUT
 * after `timeout_ns` nanoseconds (SB_TIMEOUT_INFINITE waits forever; 0 tries
 * once), -ESHUTDOWN, or -EINVAL.  Nothing is held on failure.
 */
SB_API int sb_semaphore_acquire_blocking(sb_semaphore *s, size_t n, uint64_t timeout_ns);

/* This future through sb_future_ops (executor combinators, sb_block_on). */
SB_API extern const sb_future_ops sb_semaphore_acquire_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_SEMAPHORE_H */
