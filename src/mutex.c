/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/mutex.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "waitq.h"

/*
 * The state word:
 *
 *   bit 0  MUTEX_LOCKED   someone holds the mutex (or is being handed it)
 *   bit 1  MUTEX_WAITERS  the queue is not empty; changed only under the
 *                         queue lock, and only while MUTEX_LOCKED is set
 *
 * MUTEX_WAITERS implies MUTEX_LOCKED: a handoff never clears MUTEX_LOCKED.
 *
 * The lost wake-up that this layout closes: an unlocker that sees "no
 * waiters" and a locker that has just decided to wait.  Both sides change the
 * one word with a CAS, so one of them sees the other:
 *
 *   unlocker                          locker (holding the queue lock)
 *   --------                          ------
 *                                     CAS(LOCKED -> LOCKED|WAITERS)  (a)
 *   CAS(LOCKED -> 0)  (b)             push node
 *                                     unlock queue
 *
 *   - (b) before (a): (a) fails, the locker re-reads 0 and takes the mutex.
 *   - (a) before (b): (b) fails, the unlocker takes the queue lock, which
 *     the locker holds until its node is pushed, and hands the mutex to it.
 *
 * No load-then-decide on separate words, so no barrier pairing is needed
 * beyond the CASes themselves (contrast waitqueue_active() in Linux).
 */
#define MUTEX_LOCKED ((size_t)1)
#define MUTEX_WAITERS ((size_t)2)
/* Stored by destroy() so debug builds catch use after destroy. */
#define MUTEX_DESTROYED (~(size_t)0)

static inline size_t mutex_load(const sb_mutex *m)
{
	/* relaxed: a snapshot; every decision is confirmed by a CAS. */
	size_t state = atomic_load_explicit((_Atomic size_t *)&m->state, memory_order_relaxed);
	assert(state != MUTEX_DESTROYED && "mutex used after destroy");
	return state;
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
#ifndef NDEBUG
	/* relaxed: destroy must not race with any other use. */
	atomic_store_explicit(&m->state, MUTEX_DESTROYED, memory_order_relaxed);
#endif
	return 0;
}

bool sb_mutex_is_locked(const sb_mutex *m)
{
	return mutex_load(m) & MUTEX_LOCKED;
}

int sb_mutex_try_lock(sb_mutex *m)
{
	size_t expected = 0;
	assert(mutex_load(m) != MUTEX_DESTROYED);
	/* acquire: the critical section sees what the last holder wrote. */
	if (atomic_compare_exchange_strong_explicit(&m->state, &expected, MUTEX_LOCKED,
						    memory_order_acquire, memory_order_relaxed))
		return 0;
	return -EBUSY;
}

/* Under the queue lock: hand the mutex to the head, or unlock it. */
static void mutex_pass_locked(sb_mutex *m, sb_wake_batch *b)
{
	if (sb_waitq_detach_front(&m->waitq, SB_WAITER_GRANTED, b)) {
		sb_waitq_clear_flag_if_empty(&m->waitq, &m->state, MUTEX_WAITERS);
		return;
	}
	/* Every waiter cancelled: nobody to hand to. release: as a plain unlock. */
	atomic_store_explicit(&m->state, 0, memory_order_release);
}

static void mutex_unlock_slow(sb_mutex *m)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_lock(&m->waitq);
	mutex_pass_locked(m, &batch);
	sb_waitq_unlock_and_wake(&m->waitq, &batch, SB_NO_WAKER);
}

int sb_mutex_unlock(sb_mutex *m)
{
	size_t state = MUTEX_LOCKED;
	/* release: the next holder sees our critical section. */
	if (atomic_compare_exchange_strong_explicit(&m->state, &state, 0, memory_order_release,
						    memory_order_relaxed))
		return 0;
	assert(state != MUTEX_DESTROYED && "mutex used after destroy");
	if (!(state & MUTEX_LOCKED))
		return -EPERM;
	/* MUTEX_WAITERS is set and only we (the holder) can clear LOCKED. */
	mutex_unlock_slow(m);
	return 0;
}

void sb_mutex_lock_init(sb_mutex_lock *f, sb_mutex *m)
{
	f->mutex = m;
	f->status = SB_FUTURE_IDLE;
}

static int mutex_lock_enqueue(sb_mutex_lock *f, const sb_waker *w)
{
	sb_mutex *m = f->mutex;
	sb_waitq_lock(&m->waitq);
	size_t state = mutex_load(m);
	for (;;) {
		if (!(state & MUTEX_LOCKED)) {
			/* acquire: as try_lock. */
			if (atomic_compare_exchange_weak_explicit(&m->state, &state, state | MUTEX_LOCKED,
								  memory_order_acquire,
								  memory_order_relaxed)) {
				sb_waitq_unlock(&m->waitq);
				return 0;
			}
			continue;
		}
		if (state & MUTEX_WAITERS)
			break;
		/* relaxed: orders nothing but the word itself (see the diagram);
		 * the handoff is published by the detach's release store. */
		if (atomic_compare_exchange_weak_explicit(&m->state, &state, state | MUTEX_WAITERS,
							  memory_order_relaxed, memory_order_relaxed))
			break;
	}
	sb_waitq_push(&m->waitq, &f->waiter, 1, w);
	sb_waitq_unlock(&m->waitq);
	return SB_PENDING;
}

int sb_mutex_lock_poll(sb_mutex_lock *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		f->status = sb_mutex_try_lock(f->mutex) == 0 ? 0 : mutex_lock_enqueue(f, w);
		return f->status;
	}
	if (f->status != SB_PENDING)
		return f->status;
	return sb_future_repoll(&f->status, &f->mutex->waitq, &f->waiter, w);
}

void sb_mutex_lock_cancel(sb_mutex_lock *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_mutex *m = f->mutex;
	size_t remaining;
	sb_waker mine;
	if (sb_waitq_cancel_locked(&m->waitq, &f->waiter, &remaining, &mine)) {
		sb_waitq_clear_flag_if_empty(&m->waitq, &m->state, MUTEX_WAITERS);
		sb_waitq_unlock_and_drop(&m->waitq, mine);
		return;
	}
	/* Handed the mutex but never observed it: pass it on. */
	sb_mutex_unlock(m);
}

static int mutex_lock_poll_fn(void *f, const sb_waker *w)
{
	return sb_mutex_lock_poll(f, w);
}

static void mutex_lock_cancel_fn(void *f)
{
	sb_mutex_lock_cancel(f);
}

int sb_mutex_lock_blocking(sb_mutex *m, uint64_t timeout_ns)
{
	sb_mutex_lock f;
	sb_mutex_lock_init(&f, m);
	return sb_park_block_on(&f, mutex_lock_poll_fn, mutex_lock_cancel_fn, timeout_ns);
}
