/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/watch.h>

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "park.h"
#include "wait_future.h"

/*
 * One lock, one value, one version.  The lock is the queue lock of the
 * state word (src/lock.h); it guards the value, the receivers' count and
 * the queue of waiting changed futures.  The version lives in the word
 * itself (bits SB_WATCH_VERSION_SHIFT and up), beside CLOSED, so that a
 * changed check reads both in one acquire load and a waiter decides to
 * queue from the word its lock-taking CAS saw.
 *
 * Every copy of the caller's storage, in or out, is made under the lock:
 * that is what makes a read untorn for any size without racing the
 * sender's plain stores (a sequence lock over the storage would need every
 * byte copied with atomic loads and stores to be data-race free, and
 * send_if's callback, which writes the storage with plain stores, could
 * not run beside readers at all).  A reader holds the lock for its copy
 * and nothing else.
 *
 * A one-word value (size == sizeof(size_t)) also has an atomic copy,
 * `word`, which every lock holder that changes the storage (send, send_if,
 * and init) stores with release before its unlock; NO_WORD is clear once
 * it does.  sb_watch_read loads the state (acquire), the word (acquire) and
 * the state again: a word stored by a send after the first look carries
 * that send's lock, which the second look then sees, so an unchanged state
 * means the word is that state's version's value (send_if returning false
 * may change it without a version: the value is still the current one of
 * that version).  docs/design.md weighs it against a sequence lock and a
 * double buffer.
 *
 * The version changes only under the lock: the inline send adds one in the
 * CAS that releases the lock, and so do the slow send and send_if when no
 * future waits; otherwise they add it with a
 * release RMW before they wake anyone, so that it is visible before the
 * broadcast (sb_waitq_release_all) may drop the lock between wake batches:
 * a future that registers meanwhile sees the new version and completes
 * instead of queueing for a send that has already happened.
 *
 * Changed futures queue only while the version equals their receiver's
 * seen one and the watch is open (decided under the lock), so every queued
 * future is owed the next send, which releases them all GRANTED; close
 * releases them CLOSED (-EPIPE: they had read the last value).
 */

/* A queued changed future's `remaining`: one notification owed. */
#define WATCH_WAITING 1

static inline size_t watch_version(size_t state)
{
	return state >> SB_WATCH_VERSION_SHIFT;
}

void sb_watch_unlock_slow(sb_watch *w, size_t add)
{
	sb_waitq_unlock_update(&w->q, 0, add);
}

/*
 * Under the lock, after the storage changed: stores a one-word value's copy
 * and returns the NO_WORD bit to clear (set in `state`, the word as the
 * lock was taken), or 0.
 */
static size_t watch_store_word_locked(sb_watch *w, size_t state)
{
	if (w->size != sizeof(size_t))
		return 0;
	size_t v;
	memcpy(&v, w->value, sizeof v);
	/* release: a lock-free read that loads it (acquire) sees this lock
	 * holder's lock in its second look at the state (sb_watch_read). */
	sb__watch_word_store_release(w, v);
	return state & SB_WATCH_STATE_NO_WORD;
}

/*
 * Under the lock: a new version, published before anyone is woken, with
 * `clear` (NO_WORD, or 0) cleared.
 */
static void watch_bump_locked(sb_watch *w, size_t clear)
{
	/* release: a changed check that sees the new version (acquire) sees
	 * what the sender wrote before sending.  The lock holder may change
	 * its bits with an RMW: other CASes on a held word only set PARKED,
	 * and retry.  `clear` is set in the word (only lock holders change
	 * it), so subtracting it clears it. */
	atomic_fetch_add_explicit(&w->q.state, SB_WATCH_VERSION_ONE - clear, memory_order_release);
}

/*
 * Under the lock, after the storage changed (`clear`: NO_WORD, or 0): a new
 * version, then every waiting future released GRANTED (the broadcast may
 * drop and re-take the lock between batches), the lock released and the
 * futures woken.  With nobody waiting, the version goes out in the unlock's
 * CAS, as the inline send's does: one atomic read-modify-write instead of
 * two.
 */
static void watch_publish_and_unlock(sb_watch *w, size_t clear)
{
	if (sb_waitq_is_empty(&w->q)) {
		/* release (the unlock CAS): a changed check or lock-free read
		 * that sees the new version sees the value (and the word)
		 * stored before it. */
		sb_waitq_unlock_update(&w->q, clear, SB_WATCH_VERSION_ONE);
		return;
	}
	watch_bump_locked(w, clear);
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_release_all(&w->q, SB_WAITER_GRANTED, &batch);
	sb_waitq_unlock(&w->q);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

/* ------------------------------------------------------------- lifetime */

int sb_watch_init(sb_watch *w, void *storage, size_t size)
{
	if (storage == NULL || size == 0)
		return -EINVAL;
	if (size > PTRDIFF_MAX)
		return -EOVERFLOW;
	*w = (sb_watch)SB_WATCH_INIT(storage, size);
	if (size == sizeof(size_t)) {
		size_t v;
		memcpy(&v, storage, sizeof v);
		/* relaxed: init happens-before every other use of the watch. */
		atomic_store_explicit(&w->word, v, memory_order_relaxed);
		atomic_store_explicit(&w->q.state, 0, memory_order_relaxed);
	}
	return 0;
}

int sb_watch_destroy(sb_watch *w)
{
	size_t state = sb_waitq_load(&w->q); /* a destroyed watch trips its assertion */
	if (w->receivers > 0 || sb_waitq_may_have_waiters(state))
		return -EBUSY;
	sb_waitq_poison(&w->q);
	return 0;
}

void sb_watch_close(sb_watch *w)
{
	/* acq_rel (sb_qlock_try_take with bits): CLOSED is read without the
	 * lock, so it is published by this CAS, not by the unlock. */
	sb_waitq_lock(&w->q, SB_WATCH_STATE_CLOSED);
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	if (!sb_waitq_is_empty(&w->q))
		sb_waitq_release_all(&w->q, SB_WAITER_CLOSED, &batch);
	sb_waitq_unlock(&w->q);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

bool sb_watch_is_closed(const sb_watch *w)
{
	/* acquire: pairs with close()'s lock-taking CAS (acq_rel). */
	return sb__state_load_acquire(&w->q) & SB_WATCH_STATE_CLOSED;
}

size_t sb_watch_version(const sb_watch *w)
{
	/* acquire: pairs with the release that published the version; whoever
	 * sees it sees what that send wrote before. */
	return watch_version(sb__state_load_acquire(&w->q));
}

/* --------------------------------------------------------------- sending */

int sb_watch_send_slow(sb_watch *w, const void *value)
{
	if (value == NULL)
		return -EINVAL;
	size_t state = sb_waitq_lock(&w->q, 0);
	if (state & SB_WATCH_STATE_CLOSED) {
		sb_waitq_unlock(&w->q);
		return -EPIPE;
	}
	memcpy(w->value, value, w->size);
	watch_publish_and_unlock(w, watch_store_word_locked(w, state));
	return 0;
}

int sb_watch_send_if(sb_watch *w, sb_watch_modify_fn modify, void *arg)
{
	if (modify == NULL)
		return -EINVAL;
	size_t state = sb_waitq_lock(&w->q, 0);
	if (state & SB_WATCH_STATE_CLOSED) {
		sb_waitq_unlock(&w->q);
		return -EPIPE;
	}
	bool told = modify(w->value, arg);
	/* Also when not told: the callback may have changed the value. */
	size_t clear = watch_store_word_locked(w, state);
	if (!told) {
		sb_waitq_unlock_update(&w->q, clear, 0);
		return 0;
	}
	watch_publish_and_unlock(w, clear);
	return 1;
}

/* ------------------------------------------------------------- receivers */

int sb_watch_subscribe(sb_watch *w, sb_watch_receiver *rx)
{
	/* A subscribed receiver is counted by its watch: subscribing it again
	 * would count it twice, and its watch could never be destroyed. */
	if (w == NULL || rx == NULL || rx->watch != NULL)
		return -EINVAL;
	size_t state = sb_waitq_lock(&w->q, 0);
	w->receivers++;
	sb_waitq_unlock(&w->q);
	rx->watch = w;
	rx->seen = state;
	rx->pending = 0;
	return 0;
}

int sb_watch_unsubscribe(sb_watch_receiver *rx)
{
	sb_watch *w = rx->watch;
	if (w == NULL)
		return -EINVAL;
	if (rx->pending > 0)
		return -EBUSY;
	sb_waitq_lock(&w->q, 0);
	assert(w->receivers > 0);
	w->receivers--;
	sb_waitq_unlock(&w->q);
	rx->watch = NULL;
	return 0;
}

size_t sb_watch_seen(const sb_watch_receiver *rx)
{
	return watch_version(rx->seen);
}

int sb_watch_read_slow(sb_watch_receiver *rx, void *out)
{
	sb_watch *w = rx->watch;
	if (w == NULL || out == NULL)
		return -EINVAL;
	size_t state = sb_waitq_lock(&w->q, 0); /* the version is stable while held */
	memcpy(out, w->value, w->size);
	rx->seen = state;
	/* A one-word watch made by SB_WATCH_INIT: its word starts here, so
	 * later reads need no lock. */
	size_t clear = state & SB_WATCH_STATE_NO_WORD ? watch_store_word_locked(w, state) : 0;
	sb_waitq_unlock_update(&w->q, clear, 0);
	return 0;
}

/* --------------------------------------------------------------- futures */

/*
 * Done (changed, closed), or queued with a clone of `waker`.  The inline
 * poll (every caller's way here: sb_watch_changed_poll, and the ops table
 * through it) has just found no newer version without the lock, so only a
 * closed watch is looked for before the clone (it never clones); a send in
 * between costs a clone and a lock that it drops at once.
 */
static int watch_changed_first_poll(void *future, const sb_waker *waker)
{
	sb_watch_changed *f = future;
	sb_watch_receiver *rx = f->rx;
	if (rx == NULL || rx->watch == NULL)
		return -EINVAL;
	sb_watch *w = rx->watch;
	/* acquire: as try_changed (pairs with close()'s CAS, or the release
	 * of the version it then reports). */
	size_t state = sb__state_load_acquire(&w->q);
	if (state & SB_WATCH_STATE_CLOSED)
		return sb__watch_changed(state, rx->seen);
	sb_waker clone = sb_waker_clone(waker); /* before the lock: it may re-enter */
	/* acquire (the lock CAS): a version or CLOSED seen here comes with
	 * what its sender or closer published. */
	int r = sb__watch_changed(sb_waitq_lock(&w->q, 0), rx->seen);
	if (r != -EAGAIN) {
		sb_waitq_unlock(&w->q);
		sb_waker_drop(clone);
		return r;
	}
	sb_waitq_push_and_unlock(&w->q, &f->waiter, WATCH_WAITING, clone);
	rx->pending++;
	return SB_PENDING;
}

static int watch_changed_repoll(void *future, const sb_waker *waker)
{
	sb_watch_changed *f = future;
	size_t r = sb_waitq_repoll(&f->rx->watch->q, &f->waiter, waker);
	if (!sb_waiter_is_detached(r))
		return SB_PENDING;
	f->rx->pending--;
	return r == SB_WAITER_GRANTED ? 0 : -EPIPE;
}

int sb_watch_changed_poll_slow(sb_watch_changed *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->rx, f, w, watch_changed_first_poll,
				   watch_changed_repoll);
}

void sb_watch_changed_cancel(sb_watch_changed *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	/* Nothing to pass on: a change it was told of is still there to see. */
	(void)sb_waitq_cancel(&f->rx->watch->q, &f->waiter);
	f->rx->pending--;
}

SB_FUTURE_OPS(sb_watch_changed_ops, sb_watch_changed, sb_watch_changed_poll,
	      sb_watch_changed_cancel);

int sb_watch_changed_blocking(sb_watch_receiver *rx, uint64_t timeout_ns)
{
	/* The future's first poll would decide the same way; this skips the
	 * parker when the answer is there at once. */
	int r = sb_watch_try_changed(rx);
	if (r != -EAGAIN)
		return r;
	sb_watch_changed f;
	sb_watch_changed_init(&f, rx);
	return sb_park_block_on(&f, &sb_watch_changed_ops, timeout_ns);
}
