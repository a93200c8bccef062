/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/mutex.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "waitq.h"

/*
 * The state word (its layout is ABI, in <syncband/mutex.h>): the queue's
 * bits and SB_MUTEX_STATE_LOCKED ("LOCKED" below).
 *
 * SB_WAITQ_NONEMPTY implies LOCKED: a handoff never clears LOCKED.  So the
 * uncontended lock is CAS(0 -> LOCKED) and the uncontended unlock
 * CAS(LOCKED -> 0), both inline in the header: any other value means
 * someone waits or is deciding to, and sends them here (the *_slow
 * functions).
 *
 * The lost wake-up that this layout closes: an unlocker that sees "no
 * waiters" and a locker that has just decided to wait.  Both sides change
 * the one word with a CAS, so one of them sees the other:
 *
 *   unlocker                          locker
 *   --------                          ------
 *                                     CAS(LOCKED -> LOCKED|QLOCK)   (a)
 *   CAS(LOCKED -> 0)  (b)             push node
 *                                     unlock queue: LOCKED|NONEMPTY
 *
 *   - (b) before (a): (a) fails, the locker re-reads 0 and takes the mutex.
 *   - (a) before (b): (b) fails (the word is not LOCKED alone), and the
 *     unlocker takes the queue lock, which the locker holds until its node
 *     is pushed, and hands the mutex to it.
 *
 * No load-then-decide on separate words, so no barrier pairing is needed
 * beyond the CASes themselves (contrast waitqueue_active() in Linux).
 *
 * Bits 4 and up are free, so a first waiter waits as a lone waiter (see
 * src/waitq.h): `node | NONEMPTY | LOCKED`, installed with one CAS (the
 * CAS (a) above); unlock claims it with one CAS back to LOCKED alone, the
 * mutex now the waiter's.  Both are still one CAS on the one word.
 */
static inline size_t mutex_load(const sb_mutex *m)
{
	return sb_waitq_load(&m->q);
}

int sb_mutex_init(sb_mutex *m)
{
	*m = (sb_mutex)SB_MUTEX_INIT;
	return 0;
}

int sb_mutex_destroy(sb_mutex *m)
{
	if (mutex_load(m) != 0)
		return -EBUSY;
	sb_waitq_poison(&m->q);
	return 0;
}

bool sb_mutex_is_locked(const sb_mutex *m)
{
	return mutex_load(m) & SB_MUTEX_STATE_LOCKED;
}

/* The inline try_lock's CAS failed: held, or a spurious failure of a weak CAS. */
int sb_mutex_try_lock_slow(sb_mutex *m)
{
	size_t expected = mutex_load(m);
	if (expected != 0)
		return -EBUSY;
	/* acquire: the critical section sees what the last holder wrote (pairs
	 * with the release CAS of an unlock). */
	if (atomic_compare_exchange_strong_explicit(&m->q.state, &expected, SB_MUTEX_STATE_LOCKED,
						    memory_order_acquire, memory_order_relaxed))
		return 0;
	assert(expected != SB_WAITQ_DESTROYED && "mutex used after destroy");
	return -EBUSY;
}

/* Under the queue lock: hand the mutex to the head, or unlock it. */
static void mutex_pass_locked(sb_mutex *m)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	if (sb_waitq_detach_front(&m->q, SB_WAITER_GRANTED, &batch))
		sb_waitq_unlock(&m->q); /* still LOCKED: it is the head's now */
	else
		/* release (in the unlock): as a plain unlock. */
		sb_waitq_unlock_update(&m->q, SB_MUTEX_STATE_LOCKED, 0);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

int sb_mutex_unlock_slow(sb_mutex *m)
{
	size_t state = mutex_load(m);
	for (;;) {
		if (!(state & SB_MUTEX_STATE_LOCKED))
			return -EPERM;
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&m->q.state, state);
			continue;
		}
		if (state == SB_MUTEX_STATE_LOCKED) {
			/* release: the next holder sees our critical section. */
			if (atomic_compare_exchange_weak_explicit(&m->q.state, &state, 0,
								  memory_order_release,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (sb_waitq_is_lone(state)) {
			/* Hand it to the lone waiter: still LOCKED, now its. */
			if (sb_waitq_claim_lone(&m->q, &state, SB_MUTEX_STATE_LOCKED))
				return 0;
			continue;
		}
		/* Someone waits, and only we can clear LOCKED. acquire: the lock. */
		if (atomic_compare_exchange_weak_explicit(&m->q.state, &state, state | SB_QLOCK_HELD,
							  memory_order_acquire, memory_order_relaxed))
			break;
	}
	mutex_pass_locked(m);
	return 0;
}

/* First poll: take the mutex, wait alone, or queue (one CAS decides which). */
static int mutex_lock_enqueue(sb_mutex_lock *f, const sb_waker *w)
{
	sb_mutex *m = f->mutex;
	sb_waiter *node = &f->waiter;
	bool may_be_lone = sb_waiter_may_be_lone(node);
	sb_waker clone = SB_NO_WAKER;
	size_t state = mutex_load(m);
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&m->q.state, state);
			continue;
		}
		size_t next;
		if (!(state & SB_MUTEX_STATE_LOCKED)) {
			next = state | SB_MUTEX_STATE_LOCKED;
		} else if (!(state & SB_WAITQ_NONEMPTY) && may_be_lone) {
			sb_waiter_prepare_lone(node, w, &clone);
			next = (uintptr_t)node | SB_WAITQ_NONEMPTY | SB_MUTEX_STATE_LOCKED;
		} else {
			sb_waker_clone_once(w, &clone); /* before the lock: it may re-enter */
			next = sb_waitq_locked(state, 0);
		}
		/* acq_rel: acquire, as try_lock when we take the mutex, as the
		 * queue lock otherwise (see the diagram above); release, a lone
		 * node is filled in before an unlocker can see it. */
		if (atomic_compare_exchange_weak_explicit(&m->q.state, &state, next,
							  memory_order_acq_rel, memory_order_relaxed))
			return sb_waitq_finish_first_poll(&m->q, node, state, next, clone, 1);
	}
}

int sb_mutex_lock_poll_slow(sb_mutex_lock *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		f->status = mutex_lock_enqueue(f, w);
		return f->status;
	}
	if (f->status != SB_PENDING)
		return f->status;
	return sb_future_settle(&f->status, sb_waitq_repoll_lone(&f->mutex->q, &f->waiter, w));
}

void sb_mutex_lock_cancel(sb_mutex_lock *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_mutex *m = f->mutex;
	size_t remaining;
	sb_waker mine;
	switch (sb_waitq_cancel_lone(&m->q, &f->waiter, SB_MUTEX_STATE_LOCKED, &remaining, &mine)) {
	case SB_CANCEL_WITHDRAWN:
		sb_waker_drop(mine);
		return;
	case SB_CANCEL_UNLINKED:
		sb_waitq_unlock(&m->q);
		sb_waitq_after_unlock(NULL, mine);
		return;
	case SB_CANCEL_DETACHED:
		/* Handed the mutex but never observed it: pass it on. */
		sb_mutex_unlock(m);
		return;
	}
}

static int mutex_lock_poll_fn(void *f, const sb_waker *w)
{
	return sb_mutex_lock_poll(f, w);
}

static void mutex_lock_cancel_fn(void *f)
{
	sb_mutex_lock_cancel(f);
}

const sb_future_ops sb_mutex_lock_ops = { mutex_lock_poll_fn, mutex_lock_cancel_fn };

int sb_mutex_lock_blocking(sb_mutex *m, uint64_t timeout_ns)
{
	/* The future's first poll would take a free, unqueued mutex the same
	 * way; this skips the parker. */
	if (sb_mutex_try_lock(m) == 0)
		return 0;
	sb_mutex_lock f;
	sb_mutex_lock_init(&f, m);
	return sb_park_block_on(&f, &sb_mutex_lock_ops, timeout_ns);
}
