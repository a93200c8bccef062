/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/once.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "wait_future.h"

/*
 * The state word (its layout is ABI, in <syncband/once.h>): the queue's
 * bits, DONE, RUNNING and the tenure.  The done checks (is_done, try, a
 * first poll) and a re-poll that finds its wait completed are inline in the
 * header; the rest is here.
 *
 * Who holds the job is the word's alone: RUNNING is set by the CAS that
 * takes the job (a first poll, try()), which also numbers the tenure, and
 * cleared by the report.  Futures queue only while RUNNING is set, and
 * every change of RUNNING, DONE and the tenure either takes the queue lock
 * or is a CAS from a word without HELD, so a lock holder's view of them
 * stays true until it unlocks, and a lock-free report or claim (which also
 * needs NONEMPTY clear: nobody waits or is deciding to) cannot miss a
 * waiter: a waiter takes HELD in the CAS with which it decides to wait.
 *
 * A success sets DONE - in one release CAS when nobody waits, else in the
 * CAS that takes the lock (acq_rel, sb_qlock_try_take) - and then releases
 * every queued waiter at once (sb_waitq_release_all).  That CAS also
 * clears RUNNING and the tenure, so that a done word is DONE alone, with
 * nothing above SB_WAITQ_LONE_SHIFT that could ever read as a lone
 * waiter's address (the broadcast relocks with the plain sb_waitq_lock,
 * which reads none of our bits, but no word of ours need rely on that).
 *
 * A failure with waiters hands the job to the head under the lock: it
 * writes the new tenure into the head's future (the lock holder owns the
 * node until the detach), detaches it with ONCE_HANDED (release: the new
 * runner sees the failed one's writes) and unlocks, advancing the tenure.
 * With nobody waiting a failure clears RUNNING in one release CAS, and the
 * next claim (acquire) sees what the failed runner wrote.
 *
 * A future that holds the job keeps its tenure, so that its cancel fails
 * the job only while that tenure lasts: after its runner reported, the job
 * is done, free, or another tenure's.
 *
 * HANDED marks the job as a queued future's that has not been told yet:
 * set with the tenure by the unlock that hands it over, cleared by that
 * future's poll that returns SB_ONCE_RUN (once_mark_told) or by its cancel
 * passing the job on.  While it is set nobody else can have been told to
 * run, so complete() and fail() - which cannot say who calls them - refuse
 * with -EPERM; only the handed future (by its tenure) may change the word.
 */

/* A queued waiter's final value when it was handed the job (GRANTED: done). */
#define ONCE_HANDED SB_WAITER_CLOSED

#define ONCE_TENURE_MASK (~(SB_ONCE_STATE_TENURE_ONE - 1))

_Static_assert(SB_ONCE_STATE_DONE < ((size_t)1 << SB_WAITQ_LONE_SHIFT),
	       "a done word must not look like a lone waiter's (see above)");
_Static_assert(SB_ONCE_RUN < 0 && SB_ONCE_RUN != -EAGAIN && SB_ONCE_RUN != -EPERM &&
		       SB_ONCE_RUN != -EBUSY && SB_ONCE_RUN != -ETIMEDOUT &&
		       SB_ONCE_RUN != -ECANCELED,
	       "SB_ONCE_RUN completes a future and is no error of the once");

static inline size_t once_load(const sb_once *o)
{
	return sb_waitq_load(&o->q);
}

static inline size_t once_tenure(size_t state)
{
	return state & ONCE_TENURE_MASK;
}

/* Whether a runner holds the job in `state`. */
static inline bool once_is_running(size_t state)
{
	return (state & (SB_ONCE_STATE_DONE | SB_ONCE_STATE_RUNNING)) == SB_ONCE_STATE_RUNNING;
}

/* Whether whoever calls complete() or fail() may report in `state`: a runner
 * holds the job and has been told so. */
static inline bool once_may_report(size_t state)
{
	return once_is_running(state) && !(state & SB_ONCE_STATE_HANDED);
}

int sb_once_init(sb_once *o)
{
	*o = (sb_once)SB_ONCE_INIT;
	return 0;
}

int sb_once_destroy(sb_once *o)
{
	size_t state = once_load(o);
	if (sb_waitq_may_have_waiters(state) || once_is_running(state))
		return -EBUSY;
	sb_waitq_poison(&o->q);
	return 0;
}

/* The inline is_done found the lock held (or, after destroy, every bit set). */
bool sb_once_is_done_slow(const sb_once *o)
{
	/* acquire: as sb_once_is_done. */
	size_t state = atomic_load_explicit((_Atomic size_t *)&o->q.state, memory_order_acquire);
	assert(state != SB_WAITQ_DESTROYED && "once used after destroy");
	return state & SB_ONCE_STATE_DONE;
}

/*
 * A snapshot (relaxed) showed DONE: read it again with acquire, which pairs
 * with the report's release, so that the caller sees the initialiser's
 * writes.  DONE is never cleared.
 */
static int once_done(const sb_once *o)
{
	bool done = sb_once_is_done(o);
	assert(done);
	(void)done;
	return 0;
}

/*
 * Takes the job from `state` (neither DONE, RUNNING nor HELD), starting the
 * next tenure.  False, with *state refreshed, when the word changed first.
 */
static bool once_claim(sb_once *o, size_t *state)
{
	size_t next = (*state | SB_ONCE_STATE_RUNNING) + SB_ONCE_STATE_TENURE_ONE;
	/* acquire: a retrying runner sees what the failed one wrote (pairs with
	 * the release CAS of once_pass_on that cleared RUNNING).  relaxed on
	 * failure: the caller re-decides. */
	return atomic_compare_exchange_weak_explicit(&o->q.state, state, next,
						     memory_order_acquire, memory_order_relaxed);
}

int sb_once_try_slow(sb_once *o)
{
	size_t state = once_load(o);
	for (;;) {
		if (state & SB_ONCE_STATE_DONE)
			return once_done(o);
		/* A lock holder decides from RUNNING: never claim under it. */
		if (state & (SB_ONCE_STATE_RUNNING | SB_QLOCK_HELD))
			return -EAGAIN;
		if (once_claim(o, &state))
			return SB_ONCE_RUN;
	}
}

int sb_once_complete(sb_once *o)
{
	size_t state = once_load(o);
	for (;;) {
		if (!once_may_report(state))
			return -EPERM;
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&o->q.state, state);
			continue;
		}
		/* DONE alone: RUNNING and the tenure go (see the top of the file). */
		size_t done = (state & SB_WAITQ_NONEMPTY) | SB_ONCE_STATE_DONE;
		if (!(state & SB_WAITQ_NONEMPTY)) {
			/* release: whoever sees DONE sees the initialiser's writes
			 * (pairs with the acquire loads of is_done and the polls).
			 * relaxed on failure: the loop re-decides. */
			if (atomic_compare_exchange_weak_explicit(&o->q.state, &state, done,
								  memory_order_release,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		/* acq_rel (sb_qlock_try_take with bits): DONE is read without the
		 * lock, so it is published here, not by the unlock. */
		if (sb_qlock_try_take(&o->q.state, &state, done | SB_QLOCK_HELD, SB_ONCE_STATE_DONE))
			break;
	}
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_release_all(&o->q, SB_WAITER_GRANTED, &batch);
	sb_waitq_unlock(&o->q);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
	return 0;
}

/*
 * The runner's failure: hands the job to the oldest waiter, or lets it go.
 * With `any`, whoever holds it (sb_once_fail); otherwise only while the job
 * is in `tenure` (the cancel of a future that held it).  0, or -EPERM.
 */
static int once_pass_on(sb_once *o, bool any, size_t tenure)
{
	size_t state = once_load(o);
	for (;;) {
		/* Under the lock first: a holder handing the job on has already
		 * told its new runner, which may be us, but advances the tenure
		 * only when it unlocks. */
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&o->q.state, state);
			continue;
		}
		if (any ? !once_may_report(state)
			: !once_is_running(state) || once_tenure(state) != tenure)
			return -EPERM;
		if (!(state & SB_WAITQ_NONEMPTY)) {
			/* release: the next runner sees what we wrote (pairs with
			 * the acquire of its claim).  relaxed on failure: the
			 * loop re-decides. */
			if (atomic_compare_exchange_weak_explicit(&o->q.state, &state,
								  state & ~(SB_ONCE_STATE_RUNNING |
									    SB_ONCE_STATE_HANDED),
								  memory_order_release,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		/* acquire: the queue lock (sb_qlock_try_take). */
		if (sb_qlock_try_take(&o->q.state, &state, state | SB_QLOCK_HELD, 0))
			break;
	}
	/* Under the lock RUNNING and the tenure stay as `state` had them.  The
	 * lock was taken from a word with waiters, and waiters leave only
	 * under the lock: there is a head. */
	sb_waiter *head = sb_waitq_front(&o->q);
	assert(head != NULL);
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	SB_CONTAINER_OF(head, sb_once_wait, waiter)->tenure =
		once_tenure(state + SB_ONCE_STATE_TENURE_ONE);
	/* The detach's release store hands the new runner our writes. */
	sb_waitq_detach(&o->q, head, ONCE_HANDED, &batch);
	/* HANDED stays set when a handed future's cancel passes the job on. */
	sb_waitq_unlock_update(&o->q, SB_ONCE_STATE_HANDED,
			       SB_ONCE_STATE_HANDED + SB_ONCE_STATE_TENURE_ONE);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
	return 0;
}

int sb_once_fail(sb_once *o)
{
	return once_pass_on(o, true, 0);
}

/* Done, the job, or the queue: one CAS decides which. */
static int once_wait_first_poll(void *future, const sb_waker *w)
{
	sb_once_wait *f = future;
	sb_once *o = f->once;
	sb_waker clone = SB_NO_WAKER;
	size_t state = once_load(o);
	for (;;) {
		if (state & SB_ONCE_STATE_DONE) {
			sb_waker_drop_if(clone);
			return once_done(o);
		}
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&o->q.state, state);
			continue;
		}
		if (!(state & SB_ONCE_STATE_RUNNING)) {
			if (once_claim(o, &state)) {
				sb_waker_drop_if(clone);
				f->tenure = once_tenure(state + SB_ONCE_STATE_TENURE_ONE);
				return SB_ONCE_RUN;
			}
			continue;
		}
		sb_waker_clone_once(w, &clone); /* before the lock: it may re-enter */
		/* acquire: the queue lock (sb_qlock_try_take). */
		if (sb_qlock_try_take(&o->q.state, &state, state | SB_QLOCK_HELD, 0))
			break;
	}
	sb_waitq_push_and_unlock(&o->q, &f->waiter, 1, clone);
	return SB_PENDING;
}

/*
 * The handed future's poll tells its caller to run: from now on the caller
 * reports.  Only this future changes the word while HANDED is set (see the
 * top of the file), so nothing but a lock holder can make the CAS fail.
 */
static void once_mark_told(sb_once *o)
{
	size_t state = once_load(o);
	for (;;) {
		/* The hand-over sets HANDED as it unlocks, after the detach
		 * that our poll may have seen first. */
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&o->q.state, state);
			continue;
		}
		assert(state & SB_ONCE_STATE_HANDED);
		/* relaxed: publishes nothing; we saw the failed runner's writes
		 * through the detach (acquire in sb_waitq_repoll), and our own
		 * report is a release.  relaxed on failure: the loop re-decides. */
		if (atomic_compare_exchange_weak_explicit(&o->q.state, &state,
							  state & ~SB_ONCE_STATE_HANDED,
							  memory_order_relaxed, memory_order_relaxed))
			return;
	}
}

static int once_wait_repoll(void *future, const sb_waker *w)
{
	sb_once_wait *f = future;
	size_t r = sb_waitq_repoll(&f->once->q, &f->waiter, w);
	if (r == SB_WAITER_GRANTED)
		return 0;
	if (r != ONCE_HANDED)
		return SB_PENDING;
	once_mark_told(f->once);
	return SB_ONCE_RUN;
}

int sb_once_wait_poll_slow(sb_once_wait *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->once, f, w, once_wait_first_poll,
				   once_wait_repoll);
}

void sb_once_wait_cancel(sb_once_wait *f)
{
	if (f->status == SB_ONCE_RUN) {
		/* The runner's cancel: a failure, unless it reported already. */
		f->status = -ECANCELED;
		(void)once_pass_on(f->once, false, f->tenure);
		return;
	}
	if (!sb_future_begin_cancel(&f->status))
		return;
	/* Handed the job but never told: pass it on. */
	if (sb_waitq_cancel(&f->once->q, &f->waiter) == ONCE_HANDED)
		(void)once_pass_on(f->once, false, f->tenure);
}

SB_FUTURE_OPS(sb_once_wait_ops, sb_once_wait, sb_once_wait_poll, sb_once_wait_cancel);

int sb_once_wait_blocking(sb_once *o, uint64_t timeout_ns)
{
	/* The future's first poll would decide the same way (done, or take a
	 * free job); this skips the parker. */
	int r = sb_once_try(o);
	if (r != -EAGAIN)
		return r;
	sb_once_wait f;
	sb_once_wait_init(&f, o);
	return sb_park_block_on(&f, &sb_once_wait_ops, timeout_ns);
}
