/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/event.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "wait_future.h"

/* ------------------------------------------------------------------------
 * Manual-reset event.  The state word (its layout is ABI, in
 * <syncband/event.h>): the queue's bits and SB_EVENT_STATE_SET ("SET"
 * below).  The uncontended set, is_set and first poll are inline in the
 * header; what they cannot finish comes here (the *_slow functions).
 *
 * set() and a registering wait both change the word with a CAS, so a set()
 * that finds nobody waiting or queueing and skips the lock cannot miss a
 * wait: the wait's CAS (which takes the queue lock) fails and it re-reads
 * SET.  A set() that finds waiters sets SET in the CAS that takes the lock
 * (acq_rel: SET is read without the lock) and releases every queued wait at
 * once (sb_waitq_release_all); waits that register after it see SET, or,
 * after a reset(), queue for the next set().
 *
 * SET is published by release operations only (the fast path's CAS, the
 * slow path's acq_rel lock CAS), and every lock-free reader reads it with
 * acquire, so a wait or is_set() that sees the event set sees what the
 * set() wrote before.
 */

int sb_event_init(sb_event *e, bool set)
{
	*e = (sb_event)SB_EVENT_INIT(set);
	return 0;
}

int sb_event_destroy(sb_event *e)
{
	if (sb_waitq_may_have_waiters(sb_waitq_load(&e->q)))
		return -EBUSY;
	sb_waitq_poison(&e->q);
	return 0;
}

/* The inline is_set found the lock held (or, after destroy, every bit set). */
bool sb_event_is_set_slow(const sb_event *e)
{
	/* acquire: a caller that sees the event set sees what set() published
	 * (pairs with set()'s release operations). */
	size_t state = atomic_load_explicit((_Atomic size_t *)&e->q.state, memory_order_acquire);
	assert(state != SB_WAITQ_DESTROYED && "event used after destroy");
	return state & SB_EVENT_STATE_SET;
}

void sb_event_reset(sb_event *e)
{
	/* relaxed: reset publishes nothing; waits re-check under the lock. */
	atomic_fetch_and_explicit(&e->q.state, ~SB_EVENT_STATE_SET, memory_order_relaxed);
}

void sb_event_set_slow(sb_event *e)
{
	size_t state = sb_waitq_load(&e->q);
	for (;;) {
		/* Waits queue only while SET is clear, so a set event has nobody
		 * to release: only to publish our writes. */
		if (!(state & SB_EVENT_STATE_SET) && sb_waitq_may_have_waiters(state))
			break;
		/* release: a wait or is_set() that sees SET sees what we wrote
		 * before.  Also when it is set already: the RMW (which may leave
		 * the word as it was) heads a release sequence of its own, so a
		 * reader that sees it or a later value sees this set()'s writes. */
		if (atomic_compare_exchange_weak_explicit(&e->q.state, &state,
							  state | SB_EVENT_STATE_SET,
							  memory_order_release, memory_order_relaxed))
			return;
	}
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	/* Set from the moment we hold the lock: the CAS that takes it sets SET,
	 * with acq_rel (sb_qlock_try_take). */
	sb_waitq_lock(&e->q, SB_EVENT_STATE_SET);
	sb_waitq_release_all(&e->q, SB_WAITER_GRANTED, &batch);
	sb_waitq_unlock(&e->q);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

/* A first poll that did not find the event set inline: queue, unless set meanwhile. */
static int event_wait_first_poll(void *future, const sb_waker *w)
{
	sb_event_wait *f = future;
	sb_event *e = f->event;
	/* Before the lock (a clone may re-enter the library), and before the
	 * word is read: the inline poll found the event clear, so a wait that
	 * comes here nearly always queues. */
	sb_waker clone = sb_waker_clone(w);
	size_t state = sb_waitq_load(&e->q);
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&e->q.state, state);
			continue;
		}
		if (state & SB_EVENT_STATE_SET) {
			/* The reads above were relaxed: read again with acquire
			 * (pairs with the release that set SET). */
			if (!sb_event_is_set(e)) {
				state = sb_waitq_load(&e->q);
				continue; /* reset meanwhile */
			}
			sb_waker_drop(clone);
			return 0;
		}
		/* acquire: the queue lock (sb_qlock_try_take). */
		if (sb_qlock_try_take(&e->q.state, &state, state | SB_QLOCK_HELD, 0))
			break;
	}
	sb_waitq_push_and_unlock(&e->q, &f->waiter, 1, clone);
	return SB_PENDING;
}

static int event_wait_repoll(void *future, const sb_waker *w)
{
	sb_event_wait *f = future;
	return sb_future_repoll(&f->status, &f->event->q, &f->waiter, w);
}

/* A first poll comes here when the inline one found the event clear (or locked). */
int sb_event_wait_poll_slow(sb_event_wait *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->event, f, w, event_wait_first_poll,
				   event_wait_repoll);
}

void sb_event_wait_cancel(sb_event_wait *f)
{
	if (sb_future_begin_cancel(&f->status))
		(void)sb_waitq_cancel(&f->event->q, &f->waiter); /* nothing to pass on */
}

SB_FUTURE_OPS(sb_event_wait_ops, sb_event_wait, sb_event_wait_poll, sb_event_wait_cancel);

int sb_event_wait_blocking(sb_event *e, uint64_t timeout_ns)
{
	sb_event_wait f;
	sb_event_wait_init(&f, e);
	return sb_park_block_on(&f, &sb_event_wait_ops, timeout_ns);
}

/* ------------------------------------------------------------------------
 * Auto-reset event.  The state word (its layout is ABI, in
 * <syncband/event.h>): the queue's bits, SB_AUTO_EVENT_STATE_SIGNALED (one
 * stored signal), and a lone wait's address.  The uncontended set, try_wait
 * and first poll are inline in the header; what they cannot finish comes
 * here (the *_slow functions).
 *
 * A signal is never stored while anyone waits: set() hands it to the head
 * then, and a wait that finds a stored signal takes it instead of queueing.
 * Both sides change the word with a CAS, so a set() that stores the signal
 * and a wait that queues (taking the queue lock in its CAS) cannot miss each
 * other.
 *
 * Bits 4 and up are free, so a first wait waits as a lone waiter (see
 * src/lone.h): its address in the word, installed with one CAS; set()
 * claims it with one CAS back to 0.
 */

int sb_auto_event_init(sb_auto_event *e, bool set)
{
	*e = (sb_auto_event)SB_AUTO_EVENT_INIT(set);
	return 0;
}

int sb_auto_event_destroy(sb_auto_event *e)
{
	if (sb_waitq_may_have_waiters(sb_waitq_load(&e->q)))
		return -EBUSY;
	sb_waitq_poison(&e->q);
	return 0;
}

int sb_auto_event_try_wait_slow(sb_auto_event *e)
{
	size_t state = sb_waitq_load(&e->q);
	while (state & SB_AUTO_EVENT_STATE_SIGNALED) {
		/* acquire: we see what the set() that stored the signal wrote
		 * (pairs with its release CAS). */
		if (atomic_compare_exchange_weak_explicit(&e->q.state, &state,
							  state & ~SB_AUTO_EVENT_STATE_SIGNALED,
							  memory_order_acquire, memory_order_relaxed))
			return 0;
	}
	return -EAGAIN;
}

void sb_auto_event_set_slow(sb_auto_event *e)
{
	size_t state = sb_waitq_load(&e->q);
	for (;;) {
		if (sb_waitq_is_lone(state)) {
			if (sb_waitq_claim_lone(&e->q, &state, 0))
				return;
			continue;
		}
		if (sb_waitq_may_have_waiters(state))
			break;
		/* release: the consumer of the signal sees our writes.  Also when
		 * the signal is already stored: the RMW extends the release
		 * sequence to this set() too. */
		if (atomic_compare_exchange_weak_explicit(&e->q.state, &state,
							  state | SB_AUTO_EVENT_STATE_SIGNALED,
							  memory_order_release, memory_order_relaxed))
			return;
	}
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_lock_lone(&e->q, 0);
	if (sb_waitq_detach_front(&e->q, SB_WAITER_GRANTED, &batch))
		sb_waitq_unlock(&e->q);
	else /* nobody after all (cancelled, or still deciding): store it */
		sb_waitq_unlock_update(&e->q, SB_AUTO_EVENT_STATE_SIGNALED, SB_AUTO_EVENT_STATE_SIGNALED);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

/* Takes a stored signal, waits alone, or queues: one CAS decides which. */
static int auto_event_wait_first_poll(void *future, const sb_waker *w)
{
	sb_auto_event_wait *f = future;
	sb_auto_event *e = f->event;
	sb_waiter *node = &f->waiter;
	bool may_be_lone = sb_waiter_may_be_lone(node);
	sb_waker clone = SB_NO_WAKER;
	size_t state = sb_waitq_load(&e->q);
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&e->q.state, state);
			continue;
		}
		size_t next;
		if (state & SB_AUTO_EVENT_STATE_SIGNALED) {
			next = state & ~SB_AUTO_EVENT_STATE_SIGNALED;
		} else if (!(state & SB_WAITQ_NONEMPTY) && may_be_lone) {
			sb_waiter_prepare_lone(node, w, &clone);
			next = (uintptr_t)node | SB_WAITQ_NONEMPTY;
		} else {
			sb_waker_clone_once(w, &clone); /* before the lock: it may re-enter */
			next = sb_waitq_lock_word(state, 0);
		}
		/* acq_rel: acquire, as try_wait when we take the signal, else the
		 * lock; release, a lone node is filled in before set() sees it. */
		if (atomic_compare_exchange_weak_explicit(&e->q.state, &state, next,
							  memory_order_acq_rel, memory_order_relaxed))
			return sb_waitq_finish_first_poll(&e->q, node, state, next, clone, 1);
	}
}

static int auto_event_wait_repoll(void *future, const sb_waker *w)
{
	sb_auto_event_wait *f = future;
	return sb_future_repoll_lone(&f->status, &f->event->q, &f->waiter, w);
}

/* The first poll takes a signal stored since the inline poll looked. */
int sb_auto_event_wait_poll_slow(sb_auto_event_wait *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->event, f, w, auto_event_wait_first_poll,
				   auto_event_wait_repoll);
}

void sb_auto_event_wait_cancel(sb_auto_event_wait *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	/* Handed the signal but never observed it: pass it on. */
	if (sb_waitq_cancel_one(&f->event->q, &f->waiter, 0))
		sb_auto_event_set(f->event);
}

SB_FUTURE_OPS(sb_auto_event_wait_ops, sb_auto_event_wait, sb_auto_event_wait_poll,
	      sb_auto_event_wait_cancel);

int sb_auto_event_wait_blocking(sb_auto_event *e, uint64_t timeout_ns)
{
	sb_auto_event_wait f;
	sb_auto_event_wait_init(&f, e);
	return sb_park_block_on(&f, &sb_auto_event_wait_ops, timeout_ns);
}
