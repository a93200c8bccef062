/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/semaphore.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "wait_future.h"

/*
 * The state word (its layout is ABI, in <syncband/semaphore.h>): the
 * queue's bits, SB_SEMAPHORE_STATE_CLOSED, and the counter from bit
 * SB_SEMAPHORE_STATE_COUNT_SHIFT up, always 0 while anyone waits.
 *
 * The uncontended try_acquire, release and first poll are inline in the
 * header; what they cannot finish comes here (the *_slow functions).
 *
 * "Someone waits or is about to" (SB_QLOCK_HELD | SB_WAITQ_NONEMPTY) and
 * the count share the word: a release that finds neither adds its permits
 * with one CAS, and a first waiter takes what the counter has and the queue
 * lock with one CAS on the same word, so whichever comes second in the
 * word's modification order sees the other; permits are never parked in the
 * counter while a waiter sleeps.
 *
 * While anyone waits, permits flow from release() straight into the head
 * waiter's `remaining` under the lock (direct handoff, strict FIFO), and
 * only the head can hold a partial grant.
 *
 * The count field holds SEM_COUNT_CAP = 2 * SB_SEMAPHORE_MAX_PERMITS + 1.
 * release() keeps it at or below the maximum.  Returning a grant that is
 * already out (cancel) is never refused and may take it past the maximum;
 * past SEM_COUNT_CAP it saturates instead of wrapping (see semaphore.h).
 *
 * The lone waiter (src/lone.h): a first waiter owed exactly one permit (an
 * acquire(1) on an empty counter, the common case; or acquire(n) with n - 1
 * there, which it takes) installs its node's address in the count field,
 * which is 0 while anyone waits; a release claims it with one CAS, to a
 * counter of n - 1.  The future is 16-byte aligned for it.
 */
#define SEM_COUNT_CAP (SIZE_MAX >> SB_SEMAPHORE_STATE_COUNT_SHIFT)
_Static_assert(SB_SEMAPHORE_STATE_COUNT_SHIFT == SB_WAITQ_LONE_SHIFT,
	       "a lone address takes the count field");
_Static_assert(SEM_COUNT_CAP == 2 * SB_SEMAPHORE_MAX_PERMITS + 1, "count field headroom");

/* The most of `n` that fits in the count field on top of `count`. */
static inline size_t sem_fit(size_t count, size_t n)
{
	return n > SEM_COUNT_CAP - count ? SEM_COUNT_CAP - count : n;
}

/* The counter: 0 while anyone waits (a lone waiter's address is no count). */
static inline size_t sem_count(size_t state)
{
	return (state & SB_WAITQ_NONEMPTY) ? 0 : state >> SB_SEMAPHORE_STATE_COUNT_SHIFT;
}

static inline size_t sem_load(const sb_semaphore *s)
{
	return sb_waitq_load(&s->q);
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
	if (sb_waitq_may_have_waiters(sem_load(s)))
		return -EBUSY;
	sb_waitq_poison(&s->q);
	return 0;
}

size_t sb_semaphore_available(const sb_semaphore *s)
{
	return sem_count(sem_load(s));
}

bool sb_semaphore_is_closed(const sb_semaphore *s)
{
	return sem_load(s) & SB_SEMAPHORE_STATE_CLOSED;
}

/*
 * Takes n permits from the counter unless closed, short, or someone waits.
 * A first waiter that holds the lock has already emptied the counter, so
 * a lock-free taker can never pass it.
 */
static int sem_try_take(sb_semaphore *s, size_t n)
{
	size_t state = sem_load(s);
	for (;;) {
		if (state & SB_SEMAPHORE_STATE_CLOSED)
			return -ESHUTDOWN;
		if (n == 0)
			return 0;
		if ((state & SB_WAITQ_NONEMPTY) || sem_count(state) < n)
			return -EAGAIN;
		/* acquire: the permits come with what their releaser wrote. */
		if (atomic_compare_exchange_weak_explicit(&s->q.state, &state,
							  state - n * SB_SEMAPHORE_STATE_COUNT_ONE,
							  memory_order_acquire, memory_order_relaxed))
			return 0;
	}
}

int sb_semaphore_try_acquire_slow(sb_semaphore *s, size_t n)
{
	if (n > SB_SEMAPHORE_MAX_PERMITS)
		return -EINVAL;
	return sem_try_take(s, n);
}

/*
 * Under the lock: hands `n` permits to the queue in FIFO order, completing
 * the waiters it satisfies.  Returns what is left for the counter: 0 unless
 * the queue is (or becomes) empty.
 */
static size_t sem_grant_locked(sb_semaphore *s, size_t n, sb_wake_batch *b)
{
	sb_waitq *q = &s->q;
	sb_waiter *w;
	while (n > 0 && (w = sb_waitq_front(q)) != NULL) {
		size_t owed = sb_waiter_remaining_locked(w);
		if (owed > n) {
			sb_waiter_set_remaining_locked(w, owed - n);
			return 0;
		}
		n -= owed;
		sb_waitq_detach(q, w, SB_WAITER_GRANTED, b);
		if (sb_wake_batch_is_full(b))
			sb_waitq_flush_lone(&s->q, b);
	}
	return sb_waitq_is_empty(q) ? n : 0;
}

/* Under the lock: grant, then unlock crediting the rest, then wake. */
static void sem_grant_and_unlock(sb_semaphore *s, size_t n, sb_waker drop)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	size_t left = sem_grant_locked(s, n, &batch);
	if (left)
		/* While we hold the lock the count can only fall (lock-free
		 * releases take the slow path), so fitting it now is enough. */
		left = sem_fit(sem_count(sem_load(s)), left);
	/* release (in the unlock): a lock-free taker of the rest sees our writes. */
	sb_waitq_unlock_update(&s->q, 0, left * SB_SEMAPHORE_STATE_COUNT_ONE);
	sb_waitq_after_unlock(&batch, drop);
}

/* `checked`: refuse to take the count past the maximum.  n > 0. */
static int sem_release(sb_semaphore *s, size_t n, bool checked)
{
	size_t state = sem_load(s);
	for (;;) {
		if (sb_waitq_is_lone(state)) {
			/* One permit pays the lone waiter; n - 1 <= the maximum. */
			if (sb_waitq_claim_lone(&s->q, &state, (n - 1) * SB_SEMAPHORE_STATE_COUNT_ONE))
				return 0;
			continue;
		}
		if (sb_waitq_may_have_waiters(state))
			break;
		if (checked && sem_count(state) > SB_SEMAPHORE_MAX_PERMITS - n)
			return -EOVERFLOW;
		size_t add = checked ? n : sem_fit(sem_count(state), n);
		/* release: whoever takes these permits sees our writes; relaxed on
		 * failure, the loop re-reads and re-decides. */
		if (atomic_compare_exchange_weak_explicit(&s->q.state, &state,
							  state + add * SB_SEMAPHORE_STATE_COUNT_ONE,
							  memory_order_release, memory_order_relaxed))
			return 0;
	}
	state = sb_waitq_lock_lone(&s->q, 0);
	/* The counter is 0 while anyone waits; if the queue has emptied since,
	 * the permits may land in the counter, so check against it. */
	if (checked && sem_count(state) > SB_SEMAPHORE_MAX_PERMITS - n) {
		sb_waitq_unlock(&s->q);
		return -EOVERFLOW;
	}
	sem_grant_and_unlock(s, n, SB_NO_WAKER);
	return 0;
}

int sb_semaphore_release_slow(sb_semaphore *s, size_t n)
{
	if (n > SB_SEMAPHORE_MAX_PERMITS)
		return -EOVERFLOW;
	if (n == 0)
		return 0;
	return sem_release(s, n, true);
}

void sb_semaphore_close(sb_semaphore *s)
{
	sb_waitq *q = &s->q;
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);

	/* Closed from the moment we hold the lock (the CAS that takes it sets
	 * SB_SEMAPHORE_STATE_CLOSED, with acq_rel: it is read without the
	 * lock), and every waiter completed with -ESHUTDOWN from then on. */
	sb_waitq_lock_lone(&s->q, SB_SEMAPHORE_STATE_CLOSED);
	/* Only the head ever holds a partial grant, so `returned` < max. */
	size_t returned = 0;
	sb_waiter *head = sb_waitq_front(q);
	if (head)
		returned = SB_CONTAINER_OF(head, sb_semaphore_acquire, waiter)->permits -
			   sb_waiter_remaining_locked(head);
	sb_waitq_release_all(q, SB_WAITER_CLOSED, &batch);
	sb_waitq_unlock_update(q, 0, returned * SB_SEMAPHORE_STATE_COUNT_ONE);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

/*
 * First poll: take the permits, wait as the lone waiter, or queue; one CAS
 * decides which (queueing behind others takes the lock, and moves a lone
 * waiter into the queue first).
 */
static int sem_acquire_first_poll(void *future, const sb_waker *w)
{
	sb_semaphore_acquire *f = future;
	sb_semaphore *s = f->sem;
	sb_waiter *node = &f->waiter;
	size_t n = f->permits;
	if (n > SB_SEMAPHORE_MAX_PERMITS)
		return -EINVAL;
	bool may_be_lone = sb_waiter_may_be_lone(node);
	sb_waker clone = SB_NO_WAKER;
	size_t state = sem_load(s);
	for (;;) {
		if (state & SB_SEMAPHORE_STATE_CLOSED) {
			sb_waker_drop_if(clone);
			return -ESHUTDOWN;
		}
		if (n == 0)
			return 0;
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&s->q.state, state);
			continue;
		}
		size_t count = sem_count(state);
		size_t next;
		if (state & SB_WAITQ_NONEMPTY) {
			/* others wait: queue behind them (cloning before the lock,
			 * as every registration does: a clone may re-enter) */
			sb_waker_clone_once(w, &clone);
			next = sb_waitq_lock_word(state, 0);
		} else if (count >= n) {
			next = state - n * SB_SEMAPHORE_STATE_COUNT_ONE;
		} else if (n - count == 1 && may_be_lone) {
			sb_waiter_prepare_lone(node, w, &clone);
			next = (uintptr_t)node | SB_WAITQ_NONEMPTY;
		} else {
			sb_waker_clone_once(w, &clone);
			next = (state - count * SB_SEMAPHORE_STATE_COUNT_ONE) | SB_QLOCK_HELD;
		}
		/* acq_rel: acquire, we take permits released by others or the lock;
		 * release, a lone node is filled in before a releaser can see it. */
		if (atomic_compare_exchange_weak_explicit(&s->q.state, &state, next,
							  memory_order_acq_rel, memory_order_relaxed))
			return sb_waitq_finish_first_poll(&s->q, node, state, next, clone,
							  n - count);
	}
}

static int sem_acquire_repoll(void *future, const sb_waker *w)
{
	sb_semaphore_acquire *f = future;
	return sb_future_repoll_lone(&f->status, &f->sem->q, &f->waiter, w);
}

int sb_semaphore_acquire_poll_slow(sb_semaphore_acquire *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->sem, f, w, sem_acquire_first_poll,
				   sem_acquire_repoll);
}

void sb_semaphore_acquire_cancel(sb_semaphore_acquire *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_semaphore *s = f->sem;
	size_t remaining;
	sb_waker mine;
	switch (sb_waitq_cancel_lone(&s->q, &f->waiter, 0, &remaining, &mine)) {
	case SB_CANCEL_WITHDRAWN:
		sb_waker_drop(mine);
		if (f->permits > 1) /* what it took from the counter */
			sem_release(s, f->permits - 1, false);
		return;
	case SB_CANCEL_UNLINKED:
		sem_grant_and_unlock(s, f->permits - remaining, mine);
		return;
	case SB_CANCEL_DETACHED:
		/* Detached before we looked: a full grant nobody consumed goes back. */
		if (remaining == SB_WAITER_GRANTED)
			sem_release(s, f->permits, false);
		return;
	}
}

SB_FUTURE_OPS(sb_semaphore_acquire_ops, sb_semaphore_acquire, sb_semaphore_acquire_poll,
	      sb_semaphore_acquire_cancel);

int sb_semaphore_acquire_blocking(sb_semaphore *s, size_t n, uint64_t timeout_ns)
{
	/* The future's first poll would decide the same way (take the permits
	 * if nobody queues and enough are there); this skips the parker. */
	if (n > 0 && sb_semaphore_try_acquire(s, n) == 0)
		return 0;
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, s, n);
	return sb_park_block_on(&f, &sb_semaphore_acquire_ops, timeout_ns);
}
