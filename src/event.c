/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/event.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "waitq.h"

static inline size_t state_load(const void *state)
{
	/* relaxed: a snapshot; decisions are confirmed by a CAS or the lock. */
	return atomic_load_explicit((_Atomic size_t *)state, memory_order_relaxed);
}

/* ------------------------------------------------------------------------
 * Manual-reset event.  The state word:
 *
 *   bit 0   EV_SET      the event is set
 *   bit 1   EV_WAITERS  the queue is not empty; changed under the queue lock
 *   bits 2- the sequence number of the latest registration (under the lock)
 *
 * A queued wait's `remaining` is its sequence number, so set() releases the
 * waits registered before it and no later ones (sb_waitq_detach_through).
 * set() and a registering wait both change the word with a CAS, so a set()
 * that finds EV_WAITERS clear and skips the lock cannot miss a wait: the
 * wait's CAS fails and it re-reads EV_SET.
 */
#define EV_SET ((size_t)1)
#define EV_WAITERS ((size_t)2)
#define EV_SEQ_SHIFT 2

int sb_event_init(sb_event *e, bool set)
{
	*e = (sb_event)SB_EVENT_INIT(set);
	return 0;
}

int sb_event_destroy(sb_event *e)
{
	return (state_load(&e->state) & EV_WAITERS) ? -EBUSY : 0;
}

bool sb_event_is_set(const sb_event *e)
{
	/* acquire: a caller that sees the event set sees what set() published. */
	return atomic_load_explicit((_Atomic size_t *)&e->state, memory_order_acquire) & EV_SET;
}

int sb_event_try_wait(const sb_event *e)
{
	return sb_event_is_set(e) ? 0 : -EAGAIN;
}

void sb_event_reset(sb_event *e)
{
	/* relaxed: reset publishes nothing; waits re-check under the lock. */
	atomic_fetch_and_explicit(&e->state, ~EV_SET, memory_order_relaxed);
}

void sb_event_set(sb_event *e)
{
	size_t state = state_load(&e->state);
	for (;;) {
		if (state & EV_SET)
			return; /* a wait queued now belongs to the set() running */
		if (state & EV_WAITERS)
			break;
		/* release: waits that see EV_SET see what we wrote before. */
		if (atomic_compare_exchange_weak_explicit(&e->state, &state, state | EV_SET,
							  memory_order_release, memory_order_relaxed))
			return;
	}
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_lock(&e->waitq);
	/* release: as above; an RMW because reset() runs without the lock. */
	size_t limit = atomic_fetch_or_explicit(&e->state, EV_SET, memory_order_release) >> EV_SEQ_SHIFT;
	sb_waitq_detach_through(&e->waitq, limit, SB_WAITER_GRANTED, &batch);
	sb_waitq_clear_flag_if_empty(&e->waitq, &e->state, EV_WAITERS);
	sb_waitq_unlock_and_wake(&e->waitq, &batch, SB_NO_WAKER);
}

void sb_event_wait_init(sb_event_wait *f, sb_event *e)
{
	f->event = e;
	f->status = SB_FUTURE_IDLE;
}

static int event_register(sb_event_wait *f, const sb_waker *w)
{
	sb_event *e = f->event;
	sb_waitq_lock(&e->waitq);
	/* acquire: if we find the event set, we see what set() published. */
	size_t state = atomic_load_explicit(&e->state, memory_order_acquire);
	size_t seq;
	do {
		if (state & EV_SET) {
			sb_waitq_unlock(&e->waitq);
			return 0;
		}
		seq = (state >> EV_SEQ_SHIFT) + 1;
		/* acquire (both ways): on failure we may find EV_SET in the value
		 * returned, and then complete seeing what set() published. */
	} while (!atomic_compare_exchange_weak_explicit(&e->state, &state,
							(seq << EV_SEQ_SHIFT) | EV_WAITERS,
							memory_order_acquire, memory_order_acquire));
	sb_waitq_push(&e->waitq, &f->waiter, seq, w);
	sb_waitq_unlock(&e->waitq);
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
	return sb_future_repoll(&f->status, &f->event->waitq, &f->waiter, w);
}

void sb_event_wait_cancel(sb_event_wait *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_event *e = f->event;
	size_t remaining;
	sb_waker mine;
	if (!sb_waitq_cancel_locked(&e->waitq, &f->waiter, &remaining, &mine))
		return; /* released already: a manual event has nothing to pass on */
	sb_waitq_clear_flag_if_empty(&e->waitq, &e->state, EV_WAITERS);
	sb_waitq_unlock_and_drop(&e->waitq, mine);
}

static int event_wait_poll_fn(void *f, const sb_waker *w)
{
	return sb_event_wait_poll(f, w);
}

static void event_wait_cancel_fn(void *f)
{
	sb_event_wait_cancel(f);
}

int sb_event_wait_blocking(sb_event *e, uint64_t timeout_ns)
{
	sb_event_wait f;
	sb_event_wait_init(&f, e);
	return sb_park_block_on(&f, event_wait_poll_fn, event_wait_cancel_fn, timeout_ns);
}

/* ------------------------------------------------------------------------
 * Auto-reset event.  The state word:
 *
 *   bit 0  AE_SIGNALED  one stored signal
 *   bit 1  AE_WAITERS   the queue is not empty; changed under the queue lock
 *
 * Never both: set() hands the signal to the head while anyone waits, and a
 * wait that finds a stored signal takes it instead of queueing.  Both sides
 * change the word with a CAS, so a set() that stores the signal and a wait
 * that queues cannot miss each other.
 */
#define AE_SIGNALED ((size_t)1)
#define AE_WAITERS ((size_t)2)

int sb_auto_event_init(sb_auto_event *e, bool set)
{
	*e = (sb_auto_event)SB_AUTO_EVENT_INIT(set);
	return 0;
}

int sb_auto_event_destroy(sb_auto_event *e)
{
	return (state_load(&e->state) & AE_WAITERS) ? -EBUSY : 0;
}

int sb_auto_event_try_wait(sb_auto_event *e)
{
	size_t state = state_load(&e->state);
	while (state & AE_SIGNALED) {
		/* acquire: we see what the set() that stored the signal wrote. */
		if (atomic_compare_exchange_weak_explicit(&e->state, &state, state & ~AE_SIGNALED,
							  memory_order_acquire, memory_order_relaxed))
			return 0;
	}
	return -EAGAIN;
}

/* Stores the signal unless someone waits; false if someone does. */
static bool auto_event_store_signal(sb_auto_event *e)
{
	size_t state = state_load(&e->state);
	while (!(state & AE_WAITERS)) {
		/* release: the consumer of the signal sees our writes.  Also when
		 * the signal is already stored: the RMW extends the release sequence
		 * to this set() too. */
		if (atomic_compare_exchange_weak_explicit(&e->state, &state, state | AE_SIGNALED,
							  memory_order_release, memory_order_relaxed))
			return true;
	}
	return false;
}

void sb_auto_event_set(sb_auto_event *e)
{
	if (auto_event_store_signal(e))
		return;
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_lock(&e->waitq);
	if (sb_waitq_detach_front(&e->waitq, SB_WAITER_GRANTED, &batch)) {
		sb_waitq_clear_flag_if_empty(&e->waitq, &e->state, AE_WAITERS);
	} else {
		/* Every wait cancelled meanwhile (they cleared AE_WAITERS). */
		auto_event_store_signal(e);
	}
	sb_waitq_unlock_and_wake(&e->waitq, &batch, SB_NO_WAKER);
}

void sb_auto_event_wait_init(sb_auto_event_wait *f, sb_auto_event *e)
{
	f->event = e;
	f->status = SB_FUTURE_IDLE;
}

static int auto_event_register(sb_auto_event_wait *f, const sb_waker *w)
{
	sb_auto_event *e = f->event;
	sb_waitq_lock(&e->waitq);
	size_t state = state_load(&e->state);
	for (;;) {
		if (state & AE_SIGNALED) {
			/* acquire: as try_wait. */
			if (atomic_compare_exchange_weak_explicit(&e->state, &state,
								  state & ~AE_SIGNALED,
								  memory_order_acquire,
								  memory_order_relaxed)) {
				sb_waitq_unlock(&e->waitq);
				return 0;
			}
			continue;
		}
		if (state & AE_WAITERS)
			break;
		/* relaxed: orders only the word; the grant comes by the detach. */
		if (atomic_compare_exchange_weak_explicit(&e->state, &state, state | AE_WAITERS,
							  memory_order_relaxed, memory_order_relaxed))
			break;
	}
	sb_waitq_push(&e->waitq, &f->waiter, 1, w);
	sb_waitq_unlock(&e->waitq);
	return SB_PENDING;
}

int sb_auto_event_wait_poll(sb_auto_event_wait *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		f->status = sb_auto_event_try_wait(f->event) == 0 ? 0 : auto_event_register(f, w);
		return f->status;
	}
	if (f->status != SB_PENDING)
		return f->status;
	return sb_future_repoll(&f->status, &f->event->waitq, &f->waiter, w);
}

void sb_auto_event_wait_cancel(sb_auto_event_wait *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_auto_event *e = f->event;
	size_t remaining;
	sb_waker mine;
	if (!sb_waitq_cancel_locked(&e->waitq, &f->waiter, &remaining, &mine)) {
		/* Handed the signal but never observed it: pass it on. */
		sb_auto_event_set(e);
		return;
	}
	sb_waitq_clear_flag_if_empty(&e->waitq, &e->state, AE_WAITERS);
	sb_waitq_unlock_and_drop(&e->waitq, mine);
}

static int auto_event_wait_poll_fn(void *f, const sb_waker *w)
{
	return sb_auto_event_wait_poll(f, w);
}

static void auto_event_wait_cancel_fn(void *f)
{
	sb_auto_event_wait_cancel(f);
}

int sb_auto_event_wait_blocking(sb_auto_event *e, uint64_t timeout_ns)
{
	sb_auto_event_wait f;
	sb_auto_event_wait_init(&f, e);
	return sb_park_block_on(&f, auto_event_wait_poll_fn, auto_event_wait_cancel_fn, timeout_ns);
}
