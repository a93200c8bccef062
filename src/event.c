/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/event.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "waitq.h"

/* ------------------------------------------------------------------------
 * Manual-reset event.  The state word (the queue's, see src/waitq.h, with
 * these above it):
 *
 *   bit 3   EV_SET  the event is set
 *   bits 4- the sequence number of the latest registration
 *
 * A queued wait's `remaining` is its sequence number, so set() releases the
 * waits registered before it and no later ones (sb_waitq_detach_through).
 * set() and a registering wait both change the word with a CAS, so a set()
 * that finds nobody waiting or queueing and skips the lock cannot miss a
 * wait: the wait's CAS (which takes the queue lock) fails and it re-reads
 * EV_SET.
 */
#define EV_SET ((size_t)1 << SB_WAITQ_STATE_SHIFT)
#define EV_SEQ_SHIFT (SB_WAITQ_STATE_SHIFT + 1)

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

bool sb_event_is_set(const sb_event *e)
{
	/* acquire: a caller that sees the event set sees what set() published. */
	size_t state = atomic_load_explicit((_Atomic size_t *)&e->q.state, memory_order_acquire);
	assert(state != SB_WAITQ_DESTROYED && "event used after destroy");
	return state & EV_SET;
}

int sb_event_try_wait(const sb_event *e)
{
	return sb_event_is_set(e) ? 0 : -EAGAIN;
}

void sb_event_reset(sb_event *e)
{
	/* relaxed: reset publishes nothing; waits re-check under the lock. */
	atomic_fetch_and_explicit(&e->q.state, ~EV_SET, memory_order_relaxed);
}

void sb_event_set(sb_event *e)
{
	size_t state = sb_waitq_load(&e->q);
	for (;;) {
		if (state & EV_SET)
			return; /* a wait queued now belongs to the set() running */
		if (sb_waitq_may_have_waiters(state))
			break;
		/* release: waits that see EV_SET see what we wrote before. */
		if (atomic_compare_exchange_weak_explicit(&e->q.state, &state, state | EV_SET,
							  memory_order_release, memory_order_relaxed))
			return;
	}
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	/* Set from the moment we hold the lock (release: by the unlock CAS). */
	size_t limit = sb_waitq_lock(&e->q, EV_SET) >> EV_SEQ_SHIFT;
	sb_waitq_detach_through(&e->q, limit, SB_WAITER_GRANTED, &batch);
	sb_waitq_unlock(&e->q);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

void sb_event_wait_init(sb_event_wait *f, sb_event *e)
{
	f->event = e;
	f->status = SB_FUTURE_IDLE;
}

static int event_register(sb_event_wait *f, const sb_waker *w)
{
	sb_event *e = f->event;
	/* acquire: if we find the event set, we see what set() published. */
	size_t state = atomic_load_explicit(&e->q.state, memory_order_acquire);
	assert(state != SB_WAITQ_DESTROYED && "event used after destroy");
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&e->q.state, state);
			continue;
		}
		if (state & EV_SET) {
			/* acquire: pairs with set()'s release (the wait-loop and
			 * CAS-failure reads above were relaxed). */
			atomic_thread_fence(memory_order_acquire);
			return 0;
		}
		/* acquire: the queue lock. */
		if (atomic_compare_exchange_weak_explicit(&e->q.state, &state, state | SB_QLOCK_HELD,
							  memory_order_acquire, memory_order_relaxed))
			break;
	}
	sb_waitq_push(&e->q, &f->waiter, (state >> EV_SEQ_SHIFT) + 1, w);
	sb_waitq_unlock_update(&e->q, 0, (size_t)1 << EV_SEQ_SHIFT);
	return SB_PENDING;
}

int sb_event_wait_poll(sb_event_wait *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		f->status = sb_event_is_set(f->event) ? 0 : event_register(f, w);
		return f->status;
	}
	if (f->status != SB_PENDING)
		return f->status;
	return sb_future_repoll(&f->status, &f->event->q, &f->waiter, w);
}

void sb_event_wait_cancel(sb_event_wait *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_event *e = f->event;
	size_t remaining;
	sb_waker mine;
	if (!sb_waitq_cancel_locked(&e->q, &f->waiter, &remaining, &mine))
		return; /* released already: a manual event has nothing to pass on */
	sb_waitq_unlock(&e->q);
	sb_waitq_after_unlock(NULL, mine);
}

static int event_wait_poll_fn(void *f, const sb_waker *w)
{
	return sb_event_wait_poll(f, w);
}

static void event_wait_cancel_fn(void *f)
{
	sb_event_wait_cancel(f);
}

const sb_future_ops sb_event_wait_ops = { event_wait_poll_fn, event_wait_cancel_fn };

int sb_event_wait_blocking(sb_event *e, uint64_t timeout_ns)
{
	sb_event_wait f;
	sb_event_wait_init(&f, e);
	return sb_park_block_on(&f, &sb_event_wait_ops, timeout_ns);
}

/* ------------------------------------------------------------------------
 * Auto-reset event.  The state word (the queue's, see src/waitq.h, with
 * this above it):
 *
 *   bit 3  AE_SIGNALED  one stored signal
 *
 * Never stored while anyone waits: set() hands the signal to the head then,
 * and a wait that finds a stored signal takes it instead of queueing.  Both
 * sides change the word with a CAS, so a set() that stores the signal and a
 * wait that queues (taking the queue lock in its CAS) cannot miss each other.
 *
 * Bits 4 and up are free, so a first wait waits as a lone waiter (see
 * src/waitq.h): its address in the word, installed with one CAS; set()
 * claims it with one CAS back to 0.
 */
#define AE_SIGNALED ((size_t)1 << SB_WAITQ_STATE_SHIFT)

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

int sb_auto_event_try_wait(sb_auto_event *e)
{
	size_t state = sb_waitq_load(&e->q);
	while (state & AE_SIGNALED) {
		/* acquire: we see what the set() that stored the signal wrote. */
		if (atomic_compare_exchange_weak_explicit(&e->q.state, &state, state & ~AE_SIGNALED,
							  memory_order_acquire, memory_order_relaxed))
			return 0;
	}
	return -EAGAIN;
}

void sb_auto_event_set(sb_auto_event *e)
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
		if (atomic_compare_exchange_weak_explicit(&e->q.state, &state, state | AE_SIGNALED,
							  memory_order_release, memory_order_relaxed))
			return;
	}
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_lock_lone(&e->q, 0);
	if (sb_waitq_detach_front(&e->q, SB_WAITER_GRANTED, &batch))
		sb_waitq_unlock(&e->q);
	else /* nobody after all (cancelled, or still deciding): store it */
		sb_waitq_unlock_update(&e->q, AE_SIGNALED, AE_SIGNALED);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

void sb_auto_event_wait_init(sb_auto_event_wait *f, sb_auto_event *e)
{
	f->event = e;
	f->status = SB_FUTURE_IDLE;
}

/* Takes a stored signal, waits alone, or queues: one CAS decides which. */
static int auto_event_register(sb_auto_event_wait *f, const sb_waker *w)
{
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
		if (state & AE_SIGNALED) {
			next = state & ~AE_SIGNALED;
		} else if (!(state & SB_WAITQ_NONEMPTY) && may_be_lone) {
			sb_waiter_prepare_lone(node, w, &clone);
			next = (uintptr_t)node | SB_WAITQ_NONEMPTY;
		} else {
			next = sb_waitq_locked(state, 0);
		}
		/* acq_rel: acquire, as try_wait when we take the signal, else the
		 * lock; release, a lone node is filled in before set() sees it. */
		if (atomic_compare_exchange_weak_explicit(&e->q.state, &state, next,
							  memory_order_acq_rel, memory_order_relaxed))
			return sb_waitq_finish_first_poll(&e->q, node, state, next, clone, 1, w);
	}
}

int sb_auto_event_wait_poll(sb_auto_event_wait *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		f->status = sb_auto_event_try_wait(f->event) == 0 ? 0 : auto_event_register(f, w);
		return f->status;
	}
	if (f->status != SB_PENDING)
		return f->status;
	return sb_future_settle(&f->status, sb_waitq_repoll_lone(&f->event->q, &f->waiter, w));
}

void sb_auto_event_wait_cancel(sb_auto_event_wait *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_auto_event *e = f->event;
	size_t remaining;
	sb_waker mine;
	switch (sb_waitq_cancel_lone(&e->q, &f->waiter, 0, &remaining, &mine)) {
	case SB_CANCEL_WITHDRAWN:
		sb_waker_drop(mine);
		return;
	case SB_CANCEL_UNLINKED:
		sb_waitq_unlock(&e->q);
		sb_waitq_after_unlock(NULL, mine);
		return;
	case SB_CANCEL_DETACHED:
		/* Handed the signal but never observed it: pass it on. */
		sb_auto_event_set(e);
		return;
	}
}

static int auto_event_wait_poll_fn(void *f, const sb_waker *w)
{
	return sb_auto_event_wait_poll(f, w);
}

static void auto_event_wait_cancel_fn(void *f)
{
	sb_auto_event_wait_cancel(f);
}

const sb_future_ops sb_auto_event_wait_ops = { auto_event_wait_poll_fn, auto_event_wait_cancel_fn };

int sb_auto_event_wait_blocking(sb_auto_event *e, uint64_t timeout_ns)
{
	sb_auto_event_wait f;
	sb_auto_event_wait_init(&f, e);
	return sb_park_block_on(&f, &sb_auto_event_wait_ops, timeout_ns);
}
