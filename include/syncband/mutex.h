/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/mutex.h - an async mutex: eventually fair by default, strict FIFO
 * on request.
 *
 * Eventually fair (SB_MUTEX_INIT, sb_mutex_init), the default: for throughput.
 *   - A locker may take a free mutex while others wait ("barging").  An
 *     unlock with waiters wakes the oldest; if a barger got there first, the
 *     woken waiter keeps its place at the front.  Waiters keep FIFO order.
 *   - Bounded: once bargers have passed the oldest waiter for longer than
 *     SB_MUTEX_FAIRNESS_BOUND_NS, unlock hands the mutex straight to it, then
 *     in turn to every waiter queued behind it at that point.  So a wait
 *     lasts about the bound plus that handoff phase, plus the time the kernel
 *     keeps the threads involved from running (docs/design.md).
 *
 * Strict FIFO (SB_MUTEX_INIT_FIFO, sb_mutex_init_fifo): when the order of
 * acquisition is part of the contract.  A contended unlock hands the mutex
 * to the oldest waiter; it never looks unlocked while anyone waits.
 *
 * Both modes: cancelling a waiter that was handed the mutex passes it on (or
 * unlocks it when nobody waits); cancelling a woken one passes the wake on.
 * No owner identity: any thread or task may unlock.
 *
 * Memory ordering: an unlock happens-before the lock it lets complete.
 *
 * Thread safety: every function may be called from any thread concurrently,
 * except init/destroy; one future is driven by one thread at a time.
 *
 * Errors (negative errno; every error leaves the mutex unchanged)
 *   -EBUSY       try_lock(): locked; destroy(): locked or waited on
 *   -EPERM       unlock() of a mutex that is not locked
 *   -ETIMEDOUT   lock_blocking() ran out of time
 *   -ECANCELED   poll of a future after its cancel
 */
#ifndef SYNCBAND_MUTEX_H
#define SYNCBAND_MUTEX_H

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * How long bargers may pass the oldest waiter (timed from the first barger
 * that passed it) before unlock hands the mutex to it: SB_FAIRNESS_BOUND_NS,
 * 1 ms, the semaphore's bound too (docs/design.md says why).
 */
#define SB_MUTEX_FAIRNESS_BOUND_NS SB_FAIRNESS_BOUND_NS

/* sb_mutex.mode: strict FIFO (see the top of the file). */
#define SB_MUTEX_FIFO 1u

/* 32 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_mutex {
	sb_waitq q;             /* state word: see below */
	uint32_t mode;          /* 0 or SB_MUTEX_FIFO, fixed at init */
	uint32_t handoff_left;  /* guarded by q's lock: see src/mutex.c */
} sb_mutex;

/*
 * The state word (ABI; the queue's bits are in future.h):
 *
 *   bit 3    SB_MUTEX_STATE_LOCKED   someone holds the mutex (or is being
 *                                    handed it)
 *   bits 4-  a lone waiter's address (with NONEMPTY), or 0; or, eventually
 *            fair mode, with NONEMPTY and the waiters queued, 1 to 15 in
 *            bits 4-7: unlocks that may pass the woken first waiter
 *            without the queue's lock (src/mutex.c)
 *
 * A free mutex nobody waits for is 0 and a held one nobody waits for is
 * LOCKED alone: the inline lock is CAS(0 -> LOCKED) and the inline unlock
 * CAS(LOCKED -> 0).  Any other word goes to the slow paths (which, in the
 * eventually fair mode, also take a free mutex that others wait for).
 */
#define SB_MUTEX_STATE_LOCKED (SB_CAST(size_t, 1) << SB_WAITQ_STATE_SHIFT)

#define SB_MUTEX_INIT { SB_WAITQ_INIT(0), 0, 0 }
#define SB_MUTEX_INIT_FIFO { SB_WAITQ_INIT(0), SB_MUTEX_FIFO, 0 }

/*
 * 64 bytes on 64-bit targets, 16-byte aligned (a lone waiter's address is
 * stored in the mutex's word with its low 4 bits free).  Fields are private.
 */
typedef struct sb_mutex_lock {
	SB_ALIGNAS(16) sb_waiter waiter;
	sb_mutex *mutex;
	/* when a barger first passed it, or 0 (zeroed by its first poll that
	 * waits) */
	uint64_t passed_since;
	int status;
	uint32_t unlocks_at_front; /* unlocks that found it first, once timed, and
				    * those its unlock budget lets by */
} sb_mutex_lock;

/* Initialises an unlocked, eventually fair mutex.  Always returns 0. */
SB_API int sb_mutex_init(sb_mutex *m);

/* Initialises an unlocked strict-FIFO mutex.  Always returns 0. */
SB_API int sb_mutex_init_fifo(sb_mutex *m);

/*
 * Returns 0, or -EBUSY when the mutex is locked or futures are queued (it
 * stays usable).  The mutex must not be used after a successful destroy, and
 * every lock future on it must have completed or been cancelled first, and
 * every sb_mutex_lock_blocking returned.
 */
SB_API int sb_mutex_destroy(sb_mutex *m);

/* True while the mutex is locked (a snapshot). */
SB_API bool sb_mutex_is_locked(const sb_mutex *m);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API int sb_mutex_try_lock_slow(sb_mutex *m);
SB_API int sb_mutex_unlock_slow(sb_mutex *m);
SB_API int sb_mutex_lock_poll_slow(sb_mutex_lock *f, const sb_waker *w);

/*
 * The inline lock of try_lock and of a lock's first poll: one CAS, tried only
 * on a word that reads free, so that a held mutex costs no failed CAS.  The
 * CAS expects the constant 0, not the value read (one instruction fewer).
 */
static inline bool sb__mutex_take_if_free(sb_mutex *m)
{
	/* relaxed: a guess that the CAS confirms. */
	if (!sb__likely(sb__state_load_relaxed(&m->q) == 0))
		return false;
	size_t expected = 0;
	/* acquire: the critical section sees what the last holder wrote (pairs
	 * with the release of every unlock). */
	return sb__likely(sb__state_cas_acquire(&m->q, &expected, SB_MUTEX_STATE_LOCKED));
}

/*
 * Locks if unlocked: 0, or -EBUSY.  Acquire ordering.  Never waits.  Inline:
 * one CAS on a free mutex.
 */
SB_INLINE int sb_mutex_try_lock(sb_mutex *m)
{
	if (sb__likely(sb__mutex_take_if_free(m)))
		return 0;
	return sb_mutex_try_lock_slow(m);
}

/*
 * Unlocks.  With futures queued, wakes the oldest (eventually fair mode),
 * or hands it the mutex (strict FIFO mode, or a starving oldest waiter); the
 * wake runs after the internal lock is released.  Returns 0, or -EPERM when
 * the mutex was not locked.  Release ordering.  Never waits.  Inline: one
 * CAS when nobody waits.
 */
SB_INLINE int sb_mutex_unlock(sb_mutex *m)
{
	/* relaxed: a guess that the CAS confirms.  Read first, so that an
	 * unlock that must wake or hand over costs no failed CAS. */
	size_t state = sb__state_load_relaxed(&m->q);
	/* release: the next holder sees our critical section (pairs with the
	 * acquire CAS of try_lock or of a lock's first poll). */
	if (state == SB_MUTEX_STATE_LOCKED && sb__state_cas_release(&m->q, &state, 0))
		return 0;
	return sb_mutex_unlock_slow(m);
}

/* Prepares a future that locks `m`.  Does not register. */
SB_INLINE void sb_mutex_lock_init(sb_mutex_lock *f, sb_mutex *m)
{
	f->mutex = m;
	f->status = SB_FUTURE_IDLE; /* passed_since: zeroed by a first poll that waits */
}

/*
 * Drives the lock: 0 when the caller holds the mutex, SB_PENDING when queued
 * (the waker will be woken once per registration; in eventually fair mode a
 * woken future may find a barger holding the mutex and return SB_PENDING
 * again, keeping its place at the front).  Acquire ordering on completion.
 * Inline: a first poll on a free mutex takes it with one CAS, and a later
 * poll that finds it handed over is one load.
 */
SB_INLINE int sb_mutex_lock_poll(sb_mutex_lock *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		sb_mutex *m = f->mutex;
		/* Completed, unless the CAS fails: nobody else knows the future
		 * yet.  Stored before the atomics, it replaces init's store
		 * (the compiler drops that one) instead of following it. */
		f->status = 0;
		if (sb__likely(sb__mutex_take_if_free(m)))
			return 0;
		f->status = SB_FUTURE_IDLE;
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_mutex_lock_poll_slow(f, w);
}

/*
 * Abandons the lock.  A queued future leaves the queue; a future that was
 * handed the mutex but has not observed it passes the mutex on; a woken one
 * passes the wake on.  Drops the registered waker.  A completed future is
 * left alone: the caller holds the mutex and unlocks it.
 */
SB_API void sb_mutex_lock_cancel(sb_mutex_lock *f);

/*
 * Blocks the calling thread until it holds the mutex: 0, or -ETIMEDOUT
 * after `timeout_ns` (SB_TIMEOUT_INFINITE waits forever; 0 tries once).
 */
SB_API int sb_mutex_lock_blocking(sb_mutex *m, uint64_t timeout_ns);

/* This future through sb_future_ops (executor combinators, sb_block_on). */
SB_API extern const sb_future_ops sb_mutex_lock_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_MUTEX_H */
