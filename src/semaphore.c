/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/semaphore.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "waitq.h"

/*
 * The state word:
 *
 *   bit 0     SEM_CLOSED   close() was called; set once, under the queue lock
 *   bit 1     SEM_WAITERS  the queue is not empty; changed only under the lock
 *   bits 2-   permits in the counter, always 0 while SEM_WAITERS is set
 *
 * Because "someone waits" and the count share one word, a release that finds
 * SEM_WAITERS clear adds its permits with one CAS and no lock, and a first
 * waiter that sets SEM_WAITERS does so with a CAS on the same word: whichever
 * comes second in the word's modification order sees the other, so permits
 * are never parked in the counter while a waiter sleeps.
 *
 * While SEM_WAITERS is set, permits flow from release() straight into the
 * head waiter's `remaining` under the lock (direct handoff, strict FIFO), and
 * only the head can hold a partial grant.
 *
 * The count field can hold 2 * SB_SEMAPHORE_MAX_PERMITS + 1.  Checked paths
 * keep it at or below the maximum; returning a grant that is already out
 * (cancel) is never refused, and may briefly exceed it, without wrapping.
 */
#define SEM_CLOSED ((size_t)1)
#define SEM_WAITERS ((size_t)2)
#define SEM_SHIFT 2
/* Stored by destroy() so debug builds catch use after destroy. */
#define SEM_DESTROYED (~(size_t)0)

static inline size_t sem_count(size_t state)
{
	return state >> SEM_SHIFT;
}

static inline size_t sem_load(const sb_semaphore *s)
{
	/* relaxed: a snapshot; every decision is confirmed by a CAS or the lock. */
	size_t state = atomic_load_explicit((_Atomic size_t *)&s->state, memory_order_relaxed);
	assert(state != SEM_DESTROYED && "semaphore used after destroy");
	return state;
}

int sb_semaphore_init(sb_semaphore *s, size_t permits)
{
	if (permits > SB_SEMAPHORE_MAX_PERMITS)
		return -EINVAL;
	*s = (sb_semaphore)SB_SEMAPHORE_INIT(permits);
	return 0;
}

int sb_semaphore_destroy(sb_semaphore *s)
{
	if (sem_load(s) & SEM_WAITERS)
		return -EBUSY;
#ifndef NDEBUG
	/* relaxed: destroy must not race with any other use. */
	atomic_store_explicit(&s->state, SEM_DESTROYED, memory_order_relaxed);
#endif
	return 0;
}

size_t sb_semaphore_available(const sb_semaphore *s)
{
	return sem_count(sem_load(s));
}

bool sb_semaphore_is_closed(const sb_semaphore *s)
{
	return sem_load(s) & SEM_CLOSED;
}

/* Takes n permits from the counter unless closed, short, or someone waits. */
static int sem_try_take(sb_semaphore *s, size_t n)
{
	size_t state = sem_load(s);
	for (;;) {
		if (state & SEM_CLOSED)
			return -ESHUTDOWN;
		if (n == 0)
			return 0;
		if ((state & SEM_WAITERS) || sem_count(state) < n)
			return -EAGAIN;
		/* acquire: the permits come with what their releaser wrote. */
		if (atomic_compare_exchange_weak_explicit(&s->state, &state, state - (n << SEM_SHIFT),
							  memory_order_acquire, memory_order_relaxed))
			return 0;
	}
}

int sb_semaphore_try_acquire(sb_semaphore *s, size_t n)
{
	if (n > SB_SEMAPHORE_MAX_PERMITS)
		return -EINVAL;
	return sem_try_take(s, n);
}

/*
 * Under the lock: hands `n` permits to the queue in FIFO order, completing
 * the waiters it satisfies.  When the queue is (or becomes) empty, what is
 * left goes to the counter and SEM_WAITERS is cleared.
 */
static void sem_grant_locked(sb_semaphore *s, size_t n, sb_wake_batch *b)
{
	sb_waitq *q = &s->waitq;
	sb_waiter *w;
	while (n > 0 && (w = sb_waitq_front(q)) != NULL) {
		size_t owed = sb_waiter_remaining_locked(w);
		if (owed > n) {
			sb_waiter_set_remaining_locked(w, owed - n);
			return;
		}
		n -= owed;
		sb_waitq_detach(q, w, SB_WAITER_GRANTED, b);
		if (sb_wake_batch_is_full(b))
			sb_waitq_flush(q, b);
	}
	if (!sb_waitq_is_empty(q))
		return;
	size_t state = sem_load(s);
	if (state & SEM_WAITERS) {
		/*
		 * While SEM_WAITERS is set, lock-free paths only read the word
		 * (their CASes expect a value without the bit and fail), and
		 * everything else holds the queue lock: nobody can change it
		 * under us, so a plain store does.  release: a fast-path
		 * acquirer taking these permits sees the releaser's writes.
		 */
		atomic_store_explicit(&s->state, (state & ~SEM_WAITERS) + (n << SEM_SHIFT),
				      memory_order_release);
		return;
	}
	/* A cancel emptied the queue before we got the lock; lock-free paths
	 * may be changing the word.  release: as above. */
	while (!atomic_compare_exchange_weak_explicit(&s->state, &state, state + (n << SEM_SHIFT),
						      memory_order_release, memory_order_relaxed))
		;
}

static void sem_release_slow(sb_semaphore *s, size_t n)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_lock(&s->waitq);
	sem_grant_locked(s, n, &batch);
	sb_waitq_unlock_and_wake(&s->waitq, &batch, SB_NO_WAKER);
}

/* `checked`: refuse to take the count past the maximum. */
static int sem_release(sb_semaphore *s, size_t n, bool checked)
{
	size_t state = sem_load(s);
	while (!(state & SEM_WAITERS)) {
		if (checked && sem_count(state) > SB_SEMAPHORE_MAX_PERMITS - n)
			return -EOVERFLOW;
		/* release: whoever takes these permits sees our writes; relaxed on
		 * failure, the loop re-reads and re-decides. */
		if (atomic_compare_exchange_weak_explicit(&s->state, &state, state + (n << SEM_SHIFT),
							  memory_order_release, memory_order_relaxed))
			return 0;
	}
	/* Someone waits, so the count is 0 and any n <= max fits. */
	sem_release_slow(s, n);
	return 0;
}

int sb_semaphore_release(sb_semaphore *s, size_t n)
{
	if (n > SB_SEMAPHORE_MAX_PERMITS)
		return -EOVERFLOW;
	if (n == 0)
		return 0;
	return sem_release(s, n, true);
}

void sb_semaphore_close(sb_semaphore *s)
{
	sb_waitq *q = &s->waitq;
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	size_t returned = 0;

	sb_waitq_lock(q);
	/* relaxed: every path that must see it re-checks under the lock, which
	 * orders it; lock-free acquirers may miss it only while racing close(). */
	atomic_fetch_or_explicit(&s->state, SEM_CLOSED, memory_order_relaxed);
	sb_waiter *w;
	while ((w = sb_waitq_front(q)) != NULL) {
		sb_semaphore_acquire *f = sb_container_of(w, sb_semaphore_acquire, waiter);
		returned += f->permits - sb_waiter_remaining_locked(w);
		sb_waitq_detach(q, w, SB_WAITER_CLOSED, &batch);
		if (sb_wake_batch_is_full(&batch))
			sb_waitq_flush(q, &batch);
	}
	/* Only the head ever holds a partial grant, so `returned` < max. */
	sem_grant_locked(s, returned, &batch);
	sb_waitq_unlock_and_wake(q, &batch, SB_NO_WAKER);
}

void sb_semaphore_acquire_init(sb_semaphore_acquire *f, sb_semaphore *s, size_t n)
{
	f->sem = s;
	f->permits = n;
	f->status = SB_FUTURE_IDLE;
}

/* First poll that could not take the permits at once: queue, or finish. */
static int sem_acquire_enqueue(sb_semaphore_acquire *f, const sb_waker *w)
{
	sb_semaphore *s = f->sem;
	sb_waitq_lock(&s->waitq);
	size_t state = sem_load(s);
	size_t taken = 0;
	for (;;) {
		if (state & SEM_CLOSED) {
			sb_waitq_unlock(&s->waitq);
			return -ESHUTDOWN;
		}
		if (state & SEM_WAITERS)
			break; /* the count is 0 and only the lock holder changes the bit */
		taken = sem_count(state);
		size_t next = taken >= f->permits ? state - (f->permits << SEM_SHIFT)
						  : (state & SEM_CLOSED) | SEM_WAITERS;
		/* acquire: we take permits released by others. */
		if (atomic_compare_exchange_weak_explicit(&s->state, &state, next,
							  memory_order_acquire, memory_order_relaxed)) {
			if (taken >= f->permits) {
				sb_waitq_unlock(&s->waitq);
				return 0;
			}
			break;
		}
		taken = 0;
	}
	sb_waitq_push(&s->waitq, &f->waiter, f->permits - taken, w);
	sb_waitq_unlock(&s->waitq);
	return SB_PENDING;
}

static int sem_acquire_first_poll(sb_semaphore_acquire *f, const sb_waker *w)
{
	if (f->permits > SB_SEMAPHORE_MAX_PERMITS)
		return -EINVAL;
	int r = sem_try_take(f->sem, f->permits);
	if (r != -EAGAIN)
		return r;
	return sem_acquire_enqueue(f, w);
}

int sb_semaphore_acquire_poll(sb_semaphore_acquire *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		f->status = sem_acquire_first_poll(f, w);
		return f->status;
	}
	if (f->status != SB_PENDING)
		return f->status;
	return sb_future_repoll(&f->status, &f->sem->waitq, &f->waiter, w);
}

void sb_semaphore_acquire_cancel(sb_semaphore_acquire *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_semaphore *s = f->sem;
	size_t remaining;
	sb_waker mine;
	if (sb_waitq_cancel_locked(&s->waitq, &f->waiter, &remaining, &mine)) {
		sb_wake_batch batch;
		sb_wake_batch_init(&batch);
		sem_grant_locked(s, f->permits - remaining, &batch);
		sb_waitq_unlock_and_wake(&s->waitq, &batch, mine);
		return;
	}
	/* Detached before we looked: a full grant nobody consumed goes back. */
	if (remaining == SB_WAITER_GRANTED)
		sem_release(s, f->permits, false);
}

static int sem_acquire_poll_fn(void *f, const sb_waker *w)
{
	return sb_semaphore_acquire_poll(f, w);
}

static void sem_acquire_cancel_fn(void *f)
{
	sb_semaphore_acquire_cancel(f);
}

int sb_semaphore_acquire_blocking(sb_semaphore *s, size_t n, uint64_t timeout_ns)
{
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, s, n);
	return sb_park_block_on(&f, sem_acquire_poll_fn, sem_acquire_cancel_fn, timeout_ns);
}
