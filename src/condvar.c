/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/condvar.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "wait_future.h"

/*
 * The state word is the queue's alone (see src/waitq.h).  notify_all()
 * releases every queued wait at once, from the moment it holds the lock
 * (sb_waitq_release_all): waits that register after it, even while it is
 * still waking the others, stay queued for the next notify.
 *
 * A notifier skips the lock when the word shows nobody waiting or queueing.
 * That is safe for the waits that matter: a wait registers - its unlock
 * publishes SB_WAITQ_NONEMPTY with release order - before it unlocks the
 * mutex, and a notifier that changed the predicate under the mutex
 * afterwards is ordered after that registration by the mutex, so it reads
 * the bit (coherence).  A notifier that does not use the mutex can miss a
 * wait that is registering - with any condition variable.
 *
 * The detach value tells the woken future who notified it:
 * NOTIFIED_BY_ONE must be passed on if the future is cancelled.
 */
#define NOTIFIED_BY_ONE SB_WAITER_GRANTED
#define NOTIFIED_BY_ALL SB_WAITER_CLOSED

enum {
	CV_ZEROED,        /* never initialised: poll -EINVAL, cancel nothing */
	CV_IDLE,          /* not polled: the caller holds the mutex */
	CV_WAITING,       /* in the condvar's queue */
	CV_LOCKING_ONE,   /* notified by notify_one, re-acquiring the mutex */
	CV_LOCKING_ALL,   /* notified by notify_all, re-acquiring the mutex */
	CV_DONE,          /* holds the mutex */
	CV_FAILED,        /* first poll found the mutex unlocked: -EPERM, done */
	CV_CANCELLED,
};

int sb_condvar_init(sb_condvar *cv)
{
	*cv = (sb_condvar)SB_CONDVAR_INIT;
	return 0;
}

int sb_condvar_destroy(sb_condvar *cv)
{
	if (sb_waitq_may_have_waiters(sb_waitq_load(&cv->q)))
		return -EBUSY;
	sb_waitq_poison(&cv->q);
	return 0;
}

void sb_condvar_notify_one(sb_condvar *cv)
{
	if (!sb_waitq_may_have_waiters(sb_waitq_load(&cv->q)))
		return;
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_lock(&cv->q, 0);
	sb_waitq_detach_front(&cv->q, NOTIFIED_BY_ONE, &batch);
	sb_waitq_unlock(&cv->q);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

void sb_condvar_notify_all(sb_condvar *cv)
{
	if (!sb_waitq_may_have_waiters(sb_waitq_load(&cv->q)))
		return;
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_lock(&cv->q, 0);
	sb_waitq_release_all(&cv->q, NOTIFIED_BY_ALL, &batch);
	sb_waitq_unlock(&cv->q);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

void sb_condvar_wait_init(sb_condvar_wait *f, sb_condvar *cv, sb_mutex *m)
{
	sb_mutex_lock_init(&f->lock, m);
	f->cv = cv;
	f->phase = CV_IDLE;
}

static void cv_wait_first_poll(sb_condvar_wait *f, const sb_waker *w)
{
	sb_condvar *cv = f->cv;
	sb_waker clone = sb_waker_clone(w); /* before the lock: it may re-enter */
	sb_waitq_lock(&cv->q, 0);
	sb_waitq_push_and_unlock(&cv->q, &f->lock.waiter, 1, clone);
}

/* Notified: re-acquire the mutex with the same node, now in its queue. */
static int cv_start_locking(sb_condvar_wait *f, size_t notified, const sb_waker *w)
{
	f->phase = notified == NOTIFIED_BY_ONE ? CV_LOCKING_ONE : CV_LOCKING_ALL;
	sb_mutex_lock_init(&f->lock, f->lock.mutex);
	int r = sb_mutex_lock_poll(&f->lock, w);
	if (r == 0)
		f->phase = CV_DONE;
	return r;
}

int sb_condvar_wait_poll(sb_condvar_wait *f, const sb_waker *w)
{
	switch (f->phase) {
	case CV_IDLE:
		if (!sb_mutex_is_locked(f->lock.mutex)) {
			f->phase = CV_FAILED;
			return -EPERM;
		}
		cv_wait_first_poll(f, w);
		f->phase = CV_WAITING;
		/* Registered first, so a notify from now on finds us. */
		sb_mutex_unlock(f->lock.mutex);
		return SB_PENDING;
	case CV_WAITING: {
		size_t r = sb_waitq_repoll(&f->cv->q, &f->lock.waiter, w);
		if (!sb_waiter_is_detached(r))
			return SB_PENDING;
		return cv_start_locking(f, r, w);
	}
	case CV_LOCKING_ONE:
	case CV_LOCKING_ALL:
		if (sb_mutex_lock_poll(&f->lock, w) != 0)
			return SB_PENDING;
		f->phase = CV_DONE;
		return 0;
	case CV_DONE:
		return 0;
	case CV_FAILED:
		return -EPERM;
	case CV_ZEROED:
		return -EINVAL;
	default:
		return -ECANCELED;
	}
}

void sb_condvar_wait_cancel(sb_condvar_wait *f)
{
	int phase = f->phase;
	if (phase == CV_DONE || phase == CV_FAILED || phase == CV_CANCELLED || phase == CV_ZEROED)
		return;
	f->phase = CV_CANCELLED;
	sb_condvar *cv = f->cv;
	switch (phase) {
	case CV_IDLE:
		sb_mutex_unlock(f->lock.mutex);
		return;
	case CV_WAITING: {
		/* A notify_one that came first passes to another wait. */
		if (sb_waitq_cancel(&cv->q, &f->lock.waiter) == NOTIFIED_BY_ONE)
			sb_condvar_notify_one(cv);
		return;
	}
	case CV_LOCKING_ONE:
		sb_mutex_lock_cancel(&f->lock);
		sb_condvar_notify_one(cv);
		return;
	case CV_LOCKING_ALL:
		sb_mutex_lock_cancel(&f->lock);
		return;
	}
}

SB_FUTURE_OPS(sb_condvar_wait_ops, sb_condvar_wait, sb_condvar_wait_poll, sb_condvar_wait_cancel);

int sb_condvar_wait_blocking(sb_condvar *cv, sb_mutex *m, uint64_t timeout_ns)
{
	sb_condvar_wait f;
	sb_condvar_wait_init(&f, cv, m);
	int r = sb_park_block_on(&f, &sb_condvar_wait_ops, timeout_ns);
	if (r == -ETIMEDOUT)
		sb_mutex_lock_blocking(m, SB_TIMEOUT_INFINITE);
	return r;
}
