/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/condvar.h - an async condition variable over sb_mutex.
 *
 *   - A wait future is given a mutex the caller holds.  Its first poll
 *     registers the future and only then unlocks the mutex, so a notify made
 *     under the mutex after that point always finds it.  Once notified, it
 *     re-acquires the mutex through the mutex's own queue (following its
 *     mode) and completes, returning 0, holding it.
 *   - notify_one() notifies the oldest registered wait; notify_all() notifies,
 *     atomically, every wait registered before the call and none after it (a
 *     notify_one() made while it still wakes goes to a later wait).
 *     Notifications are not stored when nobody waits.
 *   - A wait chosen by notify_one() that is cancelled before it completes
 *     passes the notification on to the next registered wait.
 *   - Cancel leaves the caller NOT holding the mutex, in every state short of
 *     completion (a never-polled wait's cancel unlocks the mutex passed in).
 *     A completed wait holds the mutex; its cancel does nothing.
 *   - No spurious completions, but re-check the predicate in a loop anyway.
 *
 * Memory ordering: a notify happens-before the completion of the wait it
 * notifies; the mutex orders everything else.
 *
 * Thread safety: every function may be called from any thread concurrently,
 * except init/destroy; one future is driven by one thread at a time.
 *
 * Errors
 *   -EPERM       first poll with a mutex that is not locked (nothing changes)
 *   -EBUSY       destroy() while futures are registered
 *   -ETIMEDOUT   wait_blocking() ran out of time (mutex held again)
 *   -ECANCELED   poll of a future after its cancel
 */
#ifndef SYNCBAND_CONDVAR_H
#define SYNCBAND_CONDVAR_H

#include <syncband/future.h>
#include <syncband/mutex.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 24 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_condvar {
	sb_waitq q; /* state word: see src/condvar.c for the bit layout */
} sb_condvar;

#define SB_CONDVAR_INIT { SB_WAITQ_INIT(0) }

/*
 * 80 bytes on 64-bit targets, 16-byte aligned.  Fields are private.  The one waiter node (in
 * `lock`) serves the condvar's queue first and the mutex's queue after.
 */
typedef struct sb_condvar_wait {
	sb_mutex_lock lock;
	sb_condvar *cv;
	int phase;
} sb_condvar_wait;

/* Always returns 0. */
SB_API int sb_condvar_init(sb_condvar *cv);

/*
 * Returns 0, or -EBUSY while futures are registered (the condvar stays
 * usable).  Every wait on it must have completed or been cancelled first.
 */
SB_API int sb_condvar_destroy(sb_condvar *cv);

/* Notifies the oldest registered wait, if any.  Never waits.  Release ordering. */
SB_API void sb_condvar_notify_one(sb_condvar *cv);

/* Notifies every wait registered before the call.  Never waits.  Release ordering. */
SB_API void sb_condvar_notify_all(sb_condvar *cv);

/* Prepares a wait on `cv` that gives up and re-acquires `m`.  Does not register. */
SB_API void sb_condvar_wait_init(sb_condvar_wait *f, sb_condvar *cv, sb_mutex *m);

/*
 * Drives the wait: SB_PENDING while registered or re-acquiring the mutex,
 * 0 once notified and holding the mutex again, or -EPERM (first poll with an
 * unlocked mutex).
 */
SB_API int sb_condvar_wait_poll(sb_condvar_wait *f, const sb_waker *w);

/* Abandons the wait; see the header comment for where the mutex stands. */
SB_API void sb_condvar_wait_cancel(sb_condvar_wait *f);

/*
 * Blocks the calling thread, which holds `m`, until notified: returns 0, or
 * -ETIMEDOUT after `timeout_ns` (SB_TIMEOUT_INFINITE: never), in both cases
 * holding `m` again (as pthread_cond_timedwait does); -EPERM if `m` was not
 * locked.
 */
SB_API int sb_condvar_wait_blocking(sb_condvar *cv, sb_mutex *m, uint64_t timeout_ns);

/* This future through sb_future_ops (executor combinators, sb_block_on). */
SB_API extern const sb_future_ops sb_condvar_wait_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_CONDVAR_H */
