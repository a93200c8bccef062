/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/mutex.h - an async mutex with FIFO handoff.
 *
 * Semantics
 *   - Uncontended lock is one CAS on the state word; uncontended unlock is
 *     one CAS back; neither touches the waiter queue or its lock.
 *   - A contended unlock hands the mutex directly to the oldest waiter: the
 *     mutex never looks unlocked while anyone waits, so nobody barges
 *     (try_lock fails while a waiter is being handed the lock).
 *   - Cancelling a waiter that was just handed the lock passes it on to the
 *     next waiter, or unlocks it when nobody waits.
 *   - The mutex has no owner identity: any thread or task may unlock it, as
 *     with a semaphore of one permit.  Unlocking an unlocked mutex is
 *     detected and refused.
 *
 * Memory ordering: an unlock happens-before the lock it lets complete.
 *
 * Thread safety: every function may be called from any thread concurrently,
 * except init/destroy, and except that one future is driven by one thread at
 * a time (its poll and cancel must not race each other).
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

/* 24 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_mutex {
	sb_waitq q; /* state word: see below */
} sb_mutex;

/*
 * The state word (ABI; the queue's bits are in future.h):
 *
 *   bit 3    SB_MUTEX_STATE_LOCKED   someone holds the mutex (or is being
 *                                    handed it)
 *   bits 4-  a lone waiter's address (with NONEMPTY), or 0
 *
 * NONEMPTY implies LOCKED (a handoff never clears LOCKED), so the word of a
 * free mutex is 0 and that of a held one nobody waits for is LOCKED alone:
 * the inline lock and unlock are CAS(0 -> LOCKED) and CAS(LOCKED -> 0).
 */
#define SB_MUTEX_STATE_LOCKED ((size_t)1 << SB_WAITQ_STATE_SHIFT)

#define SB_MUTEX_INIT { SB_WAITQ_INIT(0) }

/*
 * 64 bytes on 64-bit targets, 16-byte aligned (a lone waiter's address is
 * stored in the mutex's word with its low 4 bits free).  Fields are private.
 */
typedef struct sb_mutex_lock {
	SB_ALIGNAS(16) sb_waiter waiter;
	sb_mutex *mutex;
	int status;
} sb_mutex_lock;

/* Initialises an unlocked mutex.  Always returns 0. */
SB_API int sb_mutex_init(sb_mutex *m);

/*
 * Returns 0, or -EBUSY when the mutex is locked or futures are queued (it
 * stays usable).  The mutex must not be used after a successful destroy, and
 * every lock future on it must have completed or been cancelled first.
 */
SB_API int sb_mutex_destroy(sb_mutex *m);

/* True while the mutex is locked (a snapshot). */
SB_API bool sb_mutex_is_locked(const sb_mutex *m);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API int sb_mutex_try_lock_slow(sb_mutex *m);
SB_API int sb_mutex_unlock_slow(sb_mutex *m);
SB_API int sb_mutex_lock_poll_slow(sb_mutex_lock *f, const sb_waker *w);

/* Locks if unlocked: 0, or -EBUSY.  Acquire ordering.  Never waits.  Inline. */
SB_INLINE int sb_mutex_try_lock(sb_mutex *m)
{
	size_t unlocked = 0;
	/* acquire: the critical section sees what the last holder wrote (pairs
	 * with unlock's release CAS, or the release unlock of its slow path). */
	if (sb__state_cas_acquire(&m->q, &unlocked, SB_MUTEX_STATE_LOCKED))
		return 0;
	return sb_mutex_try_lock_slow(m);
}

/*
 * Unlocks, handing the mutex to the oldest queued future if there is one
 * (woken after the internal lock is released).  Returns 0, or -EPERM when
 * the mutex was not locked.  Release ordering.  Never waits.  Inline: one CAS
 * when nobody waits.
 */
SB_INLINE int sb_mutex_unlock(sb_mutex *m)
{
	/* relaxed: a guess that the CAS confirms.  Read first, so that an
	 * unlock that must hand the mutex over costs no failed CAS. */
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
	f->status = SB_FUTURE_IDLE;
}

/*
 * Drives the lock: 0 when the caller holds the mutex, SB_PENDING when queued
 * (the waker will be woken once).  Acquire ordering on completion.  Inline:
 * a first poll on a free mutex takes it with one CAS, and a later poll that
 * finds it handed over is one load.
 */
SB_INLINE int sb_mutex_lock_poll(sb_mutex_lock *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		sb_mutex *m = f->mutex;
		/* relaxed: a guess that the CAS confirms.  Read first, so that a
		 * lock that must wait costs no failed CAS. */
		size_t state = sb__state_load_relaxed(&m->q);
		/* acquire: as try_lock. */
		if (state == 0 && sb__state_cas_acquire(&m->q, &state, SB_MUTEX_STATE_LOCKED)) {
			f->status = 0;
			return 0;
		}
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_mutex_lock_poll_slow(f, w);
}

/*
 * Abandons the lock.  A queued future leaves the queue; a future that was
 * handed the mutex but has not observed it passes the mutex on.  Drops the
 * registered waker.  A completed future is left alone: the caller holds the
 * mutex and unlocks it.
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
