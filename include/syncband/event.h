/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/event.h - manual-reset and auto-reset async events.
 *
 * Manual-reset event (sb_event)
 *   - set() releases every wait registered before it, atomically: from that
 *     moment a poll of any of them returns 0, and no wait registered after
 *     it is released.  While set, new waits complete at once; reset() makes
 *     later waits wait again.
 *   - A released wait stays ready after a later reset().  A wait registers on
 *     its first poll, so set(); reset(); before that poll does not release it.
 *
 * Auto-reset event (sb_auto_event)
 *   - set() hands the signal to the oldest wait, or stores one signal if
 *     nobody waits; repeated sets with nobody waiting coalesce into one.
 *   - try_wait() consumes a stored signal, never one already handed to a
 *     wait.  A wait cancelled after it was handed the signal passes it to the
 *     next wait, or stores it again.
 *
 * Memory ordering (both): a set() happens-before every wait, try_wait or
 * is_set that it lets complete or return true (manual-reset: also a set()
 * that found the event set already).
 *
 * Thread safety: every function may be called from any thread concurrently,
 * except init/destroy; one future is driven by one thread at a time.
 *
 * Errors
 *   -EAGAIN      try_wait(): not set / no signal
 *   -EBUSY       destroy() while futures are registered (the event stays usable)
 *   -ETIMEDOUT   *_wait_blocking() ran out of time
 *   -ECANCELED   poll of a future after its cancel
 */
#ifndef SYNCBAND_EVENT_H
#define SYNCBAND_EVENT_H

#include <errno.h>

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 24 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_event {
	sb_waitq q; /* state word: see below */
} sb_event;

/* 24 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_auto_event {
	sb_waitq q; /* state word: see below */
} sb_auto_event;

/*
 * The state words (ABI; the queue's bits are in future.h).  Manual-reset:
 *
 *   bit 3  SB_EVENT_STATE_SET   the event is set; published by release
 *                               operations only, read with acquire
 *
 * Auto-reset:
 *
 *   bit 3    SB_AUTO_EVENT_STATE_SIGNALED   one stored signal, never while
 *                                           anyone waits
 *   bits 4-  a lone wait's address (with NONEMPTY), or 0
 */
#define SB_EVENT_STATE_SET (SB_CAST(size_t, 1) << SB_WAITQ_STATE_SHIFT)
#define SB_AUTO_EVENT_STATE_SIGNALED (SB_CAST(size_t, 1) << SB_WAITQ_STATE_SHIFT)

/* 56 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_event_wait {
	sb_waiter waiter;
	sb_event *event;
	int status;
} sb_event_wait;

/*
 * 64 bytes on 64-bit targets, 16-byte aligned (a lone wait's address is
 * stored in the event's word with its low 4 bits free).  Fields are private.
 */
typedef struct sb_auto_event_wait {
	SB_ALIGNAS(16) sb_waiter waiter;
	sb_auto_event *event;
	int status;
} sb_auto_event_wait;

/* Static initialisers: `set` is 0 or 1. */
#define SB_EVENT_INIT(set) { SB_WAITQ_INIT((set) ? SB_EVENT_STATE_SET : SB_CAST(size_t, 0)) }
#define SB_AUTO_EVENT_INIT(set) \
	{ SB_WAITQ_INIT((set) ? SB_AUTO_EVENT_STATE_SIGNALED : SB_CAST(size_t, 0)) }

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API void sb_event_set_slow(sb_event *e);
SB_API bool sb_event_is_set_slow(const sb_event *e);
SB_API int sb_event_wait_poll_slow(sb_event_wait *f, const sb_waker *w);
SB_API void sb_auto_event_set_slow(sb_auto_event *e);
SB_API int sb_auto_event_try_wait_slow(sb_auto_event *e);
SB_API int sb_auto_event_wait_poll_slow(sb_auto_event_wait *f, const sb_waker *w);

/* --- manual-reset --- */

/* Always returns 0. */
SB_API int sb_event_init(sb_event *e, bool set);
/*
 * Returns 0, or -EBUSY while futures are registered.  Every wait must have
 * completed or been cancelled first.
 */
SB_API int sb_event_destroy(sb_event *e);

/*
 * Sets the event, releasing every registered wait.  Never waits.  Release
 * ordering.  Inline: one CAS when nobody waits.
 */
SB_INLINE void sb_event_set(sb_event *e)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&e->q);
	/* Nobody waits or is deciding to.  release: a wait or is_set() that
	 * sees SB_EVENT_STATE_SET sees what we wrote before (pairs with their
	 * acquire loads); also when it is set already, as the slow path says. */
	if (!(state & (SB_QLOCK_HELD | SB_WAITQ_NONEMPTY)) &&
	    sb__state_cas_release(&e->q, &state, state | SB_EVENT_STATE_SET))
		return;
	sb_event_set_slow(e);
}

/* Clears the event.  One atomic RMW, no lock.  Never waits. */
SB_API void sb_event_reset(sb_event *e);

/*
 * Whether the event is set (acquire ordering: true means every set() before
 * it happened-before).  Inline: one atomic load, and another only while the
 * event's internal lock is held.
 */
SB_INLINE bool sb_event_is_set(const sb_event *e)
{
	/* acquire: a caller that sees the event set sees what set() wrote
	 * before (pairs with set()'s release operations). */
	size_t state = sb__state_load_acquire(&e->q);
	if (!(state & SB_QLOCK_HELD))
		return state & SB_EVENT_STATE_SET;
	return sb_event_is_set_slow(e);
}

/* 0 if set (acquire ordering), else -EAGAIN.  Inline. */
SB_INLINE int sb_event_try_wait(const sb_event *e)
{
	return sb_event_is_set(e) ? 0 : -EAGAIN;
}

/* Prepares a wait on `e`.  Does not register. */
SB_INLINE void sb_event_wait_init(sb_event_wait *f, sb_event *e)
{
	f->event = e;
	f->status = SB_FUTURE_IDLE;
}

/*
 * 0 once released, SB_PENDING while registered.  Acquire ordering on
 * completion.  Inline: a first poll that finds the event set, or a later one
 * that finds the wait released, is one load.
 */
SB_INLINE int sb_event_wait_poll(sb_event_wait *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		/* acquire: as is_set. */
		size_t state = sb__state_load_acquire(&f->event->q);
		if ((state & (SB_EVENT_STATE_SET | SB_QLOCK_HELD)) == SB_EVENT_STATE_SET) {
			f->status = 0;
			return 0;
		}
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_event_wait_poll_slow(f, w);
}

/* Unregisters the wait and drops its waker; nothing to pass on. */
SB_API void sb_event_wait_cancel(sb_event_wait *f);
/* Blocks the thread until set: 0 or -ETIMEDOUT. */
SB_API int sb_event_wait_blocking(sb_event *e, uint64_t timeout_ns);

/* This future through sb_future_ops (executor combinators, sb_block_on). */
SB_API extern const sb_future_ops sb_event_wait_ops;

/* --- auto-reset --- */

/* Always returns 0. */
SB_API int sb_auto_event_init(sb_auto_event *e, bool set);
/*
 * Returns 0, or -EBUSY while futures are registered.  Every wait must have
 * completed or been cancelled first.
 */
SB_API int sb_auto_event_destroy(sb_auto_event *e);

/*
 * Hands the signal to the oldest wait, or stores it.  Never waits.  Release
 * ordering.  Inline: one CAS when nobody waits.
 */
SB_INLINE void sb_auto_event_set(sb_auto_event *e)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&e->q);
	/* Nobody waits or is deciding to: store the signal.  release: its
	 * consumer sees our writes (pairs with the acquire CAS of try_wait or
	 * of a first poll).  Also when the signal is stored already: the RMW
	 * extends the release sequence to this set() too. */
	if (!(state & (SB_QLOCK_HELD | SB_WAITQ_NONEMPTY)) &&
	    sb__state_cas_release(&e->q, &state, state | SB_AUTO_EVENT_STATE_SIGNALED))
		return;
	sb_auto_event_set_slow(e);
}

/* Consumes a stored signal: 0 (acquire ordering), or -EAGAIN.  Inline. */
SB_INLINE int sb_auto_event_try_wait(sb_auto_event *e)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&e->q);
	if (!(state & SB_AUTO_EVENT_STATE_SIGNALED))
		return -EAGAIN;
	/* acquire: we see what the set() that stored the signal wrote (pairs
	 * with its release CAS). */
	if (!(state & SB_QLOCK_HELD) &&
	    sb__state_cas_acquire(&e->q, &state, state & ~SB_AUTO_EVENT_STATE_SIGNALED))
		return 0;
	return sb_auto_event_try_wait_slow(e);
}

/* Prepares a wait on `e`.  Does not register. */
SB_INLINE void sb_auto_event_wait_init(sb_auto_event_wait *f, sb_auto_event *e)
{
	f->event = e;
	f->status = SB_FUTURE_IDLE;
}

/*
 * 0 once it holds the signal, SB_PENDING while registered.  Acquire ordering
 * on completion.  Inline: a first poll that finds a stored signal takes it
 * with one CAS, and a later poll that finds the signal handed over is one
 * load.
 */
SB_INLINE int sb_auto_event_wait_poll(sb_auto_event_wait *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		sb_auto_event *e = f->event;
		/* relaxed: a guess that the CAS confirms. */
		size_t state = sb__state_load_relaxed(&e->q);
		/* acquire: as try_wait. */
		if ((state & (SB_AUTO_EVENT_STATE_SIGNALED | SB_QLOCK_HELD)) ==
			    SB_AUTO_EVENT_STATE_SIGNALED &&
		    sb__state_cas_acquire(&e->q, &state, state & ~SB_AUTO_EVENT_STATE_SIGNALED)) {
			f->status = 0;
			return 0;
		}
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_auto_event_wait_poll_slow(f, w);
}
/* Unregisters; a signal handed to it but not observed is passed on or stored. */
SB_API void sb_auto_event_wait_cancel(sb_auto_event_wait *f);
/* Blocks the thread until it takes a signal: 0 or -ETIMEDOUT. */
SB_API int sb_auto_event_wait_blocking(sb_auto_event *e, uint64_t timeout_ns);

/* This future through sb_future_ops (executor combinators, sb_block_on). */
SB_API extern const sb_future_ops sb_auto_event_wait_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_EVENT_H */
