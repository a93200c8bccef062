/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/rwlock.h>

#include <assert.h>
#include <errno.h>

#include "park.h"
#include "wait_future.h"

/*
 * The state word (its layout is ABI, in <syncband/rwlock.h>): the queue's
 * bits, WRITER, UPGRADABLE, UPGRADING, and the plain readers' count.
 *
 * One FIFO holds every waiter, readers, writers and upgradable readers
 * alike; a node's kind is its future's `kind`.  Nobody passes the queue: a
 * lock-free taker needs NONEMPTY clear, and one that must wait queues at the
 * tail.  So phases follow arrival order.  Whoever lets something in (an
 * unlock, a downgrade, a cancel) walks the head of the queue under the lock
 * (rw_grant_locked): a writer there gets the lock once no one holds it; a
 * run of readers there - plain readers, and an upgradable one if the
 * upgradable read is free - gets it all at once, up to the next writer.
 *
 * "All at once" even past a wake batch: the whole run is counted into the
 * word and its nodes marked SB_WAITER_RELEASED_GRANTED while the lock is
 * held, before any is detached; the marked nodes stay at the head and are
 * detached a batch at a time, the lock dropped between batches.  An owner
 * that sees its mark takes the lock and unlinks itself (src/waitq.c does
 * that for every queue), and whoever walks the head next detaches the
 * marked ones first.  Newcomers queue behind them.  (sb_waitq_release_all
 * is not for us: it releases the whole queue, and a run of readers ends at
 * the next writer.)
 *
 * The pending upgrade is the one waiter that must go ahead of the queue
 * (the writers there wait for the upgradable read to end), so its node is
 * kept aside in sb_rwlock.upgrading, with UPGRADING in the word: readers see
 * that bit lock-free and queue, and the reader that leaves last takes the
 * slow path and grants the upgrade.  It is served before the queue's head.
 *
 * While the queue lock is held the word's rwlock bits change only by the
 * holder: every lock-free path needs HELD clear.  So a holder reads them
 * once, keeps them in `word`, and publishes them in the unlock's CAS.
 */

/* The rwlock's bits of the word (the queue's are below). */
#define RW_BITS (~(size_t)SB_WAITQ_BITS)

static inline size_t rw_readers(size_t state)
{
	return state >> SB_RWLOCK_STATE_READERS_SHIFT;
}

static inline size_t rw_load(const sb_rwlock *rw)
{
	return sb_waitq_load(&rw->q);
}

static inline int rw_kind(const sb_waiter *w)
{
	return SB_CONTAINER_OF(w, sb_rwlock_lock, waiter)->kind;
}

/* Takes the queue lock; returns the rwlock's bits of the word. */
static inline size_t rw_lock(sb_rwlock *rw)
{
	return sb_waitq_lock(&rw->q, 0) & RW_BITS;
}

/* Under the lock: unlocks, publishing `word` as the rwlock's bits. */
static inline void rw_unlock_publish(sb_rwlock *rw, size_t word)
{
	/* release (the unlock's CAS): a lock-free taker of what `word` frees
	 * sees the critical section. */
	sb_waitq_unlock_update(&rw->q, SIZE_MAX, word);
}

/*
 * What `kind` may do on a word `state` (with the queue's bits, lock-free; or
 * under the lock, the rwlock's bits alone, for the head of the queue): 0 with
 * *next the word that takes it, SB_PENDING when it must wait, or the error
 * it fails with.
 */
static int rw_decide(size_t state, int kind, size_t *next)
{
	bool queued = state & (SB_WAITQ_NONEMPTY | SB_RWLOCK_STATE_UPGRADING);
	switch (kind) {
	case SB_RWLOCK_READ:
		if (queued || (state & SB_RWLOCK_STATE_WRITER))
			return SB_PENDING;
		if (rw_readers(state) == SB_RWLOCK_MAX_READERS)
			return -EOVERFLOW;
		*next = state + SB_RWLOCK_STATE_READER_ONE;
		return 0;
	case SB_RWLOCK_WRITE:
		if (queued || (state & RW_BITS))
			return SB_PENDING;
		*next = state | SB_RWLOCK_STATE_WRITER;
		return 0;
	case SB_RWLOCK_UPGRADABLE:
		if (queued || (state & (SB_RWLOCK_STATE_WRITER | SB_RWLOCK_STATE_UPGRADABLE)))
			return SB_PENDING;
		*next = state | SB_RWLOCK_STATE_UPGRADABLE;
		return 0;
	case SB_RWLOCK_UPGRADE:
		if (!(state & SB_RWLOCK_STATE_UPGRADABLE))
			return -EPERM;
		if (state & SB_RWLOCK_STATE_UPGRADING)
			return -EBUSY;
		if (rw_readers(state))
			return SB_PENDING;
		*next = (state & ~SB_RWLOCK_STATE_UPGRADABLE) | SB_RWLOCK_STATE_WRITER;
		return 0;
	}
	return -EINVAL;
}

/*
 * One CAS decides: takes `kind` (0), fails with its error (-EAGAIN when it
 * must wait and `waker` is NULL: a try), or takes the queue lock to wait
 * (SB_PENDING; *clone holds a clone of `waker`, made before the lock, and
 * *locked the word as the lock found it).  The caller drops *clone unless
 * it queues it.
 */
static int rw_take_or_lock(sb_rwlock *rw, int kind, const sb_waker *waker, sb_waker *clone,
			   size_t *locked)
{
	size_t state = rw_load(rw);
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&rw->q.state, state);
			continue;
		}
		size_t next;
		int rc = rw_decide(state, kind, &next);
		if (rc == 0) {
			/* acquire: a reader sees the last writer's writes, a
			 * writer every earlier holder's (pairs with the release
			 * of every unlock, lock-free or the queue lock's). */
			if (atomic_compare_exchange_weak_explicit(&rw->q.state, &state, next,
								  memory_order_acquire,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (rc != SB_PENDING)
			return rc;
		if (waker == NULL)
			return -EAGAIN;
		sb_waker_clone_once(waker, clone);
		if (sb_qlock_try_take(&rw->q.state, &state, state | SB_QLOCK_HELD, 0)) {
			*locked = state;
			return SB_PENDING;
		}
	}
}

int sb_rwlock_init(sb_rwlock *rw)
{
	*rw = (sb_rwlock)SB_RWLOCK_INIT;
	return 0;
}

int sb_rwlock_destroy(sb_rwlock *rw)
{
	size_t state = rw_load(rw);
	if (sb_waitq_may_have_waiters(state) || (state & RW_BITS))
		return -EBUSY;
	sb_waitq_poison(&rw->q);
	return 0;
}

size_t sb_rwlock_readers(const sb_rwlock *rw)
{
	return rw_readers(rw_load(rw));
}

bool sb_rwlock_is_write_locked(const sb_rwlock *rw)
{
	return rw_load(rw) & SB_RWLOCK_STATE_WRITER;
}

int sb_rwlock_try_read_slow(sb_rwlock *rw)
{
	return rw_take_or_lock(rw, SB_RWLOCK_READ, NULL, NULL, NULL);
}

int sb_rwlock_try_write_slow(sb_rwlock *rw)
{
	return rw_take_or_lock(rw, SB_RWLOCK_WRITE, NULL, NULL, NULL);
}

int sb_rwlock_try_upgradable_read(sb_rwlock *rw)
{
	return rw_take_or_lock(rw, SB_RWLOCK_UPGRADABLE, NULL, NULL, NULL);
}

int sb_rwlock_try_upgrade(sb_rwlock *rw)
{
	return rw_take_or_lock(rw, SB_RWLOCK_UPGRADE, NULL, NULL, NULL);
}

/* Under the lock, `b` full: publishes *word, wakes, re-locks and re-reads it. */
static void rw_flush(sb_rwlock *rw, size_t *word, sb_wake_batch *b)
{
	rw_unlock_publish(rw, *word);
	sb_wake_batch_run(b);
	*word = rw_lock(rw);
}

/*
 * Under the lock: the head `w` (a reader of some kind) was found grantable:
 * grants it and the run of readers behind it, up to the first that may not
 * enter (a writer, a second upgradable reader, a full count), counting them
 * all into *word and marking them released (see the top of the file).
 */
static void rw_release_run_locked(sb_waiter *w, size_t *word)
{
	size_t next;
	for (; w && rw_decide(*word, rw_kind(w), &next) == 0; w = w->next) {
		*word = next;
		sb_waiter_set_remaining_locked(w, SB_WAITER_RELEASED_GRANTED);
	}
}

/*
 * Under the lock (which it may drop between batches, and holds again when it
 * returns): grants what the word `*word` now allows - the pending upgrade
 * first, then the head of the queue - updating *word.  Wakes go into `b`.
 */
static void rw_grant_locked(sb_rwlock *rw, size_t *word, sb_wake_batch *b)
{
	sb_waitq *q = &rw->q;
	for (;;) {
		if (sb_wake_batch_is_full(b))
			rw_flush(rw, word, b);
		sb_waiter *w = sb_waitq_front(q);
		/* A released run first: it is counted in the word already, and an
		 * upgrade that came while the lock was dropped waits for it. */
		if (w && sb_waiter_remaining_locked(w) == SB_WAITER_RELEASED_GRANTED) {
			sb_waitq_detach(q, w, SB_WAITER_GRANTED, b);
			continue;
		}
		if (*word & SB_RWLOCK_STATE_UPGRADING) {
			/* Ahead of the queue; nothing there may enter meanwhile. */
			if (rw_readers(*word) == 0) {
				*word = (*word & ~(SB_RWLOCK_STATE_UPGRADABLE |
						   SB_RWLOCK_STATE_UPGRADING)) |
					SB_RWLOCK_STATE_WRITER;
				sb_waiter_detach_unlinked(rw->upgrading, SB_WAITER_GRANTED, b);
				rw->upgrading = NULL;
			}
			return;
		}
		if (w == NULL)
			return;
		int kind = rw_kind(w);
		size_t next;
		if (rw_decide(*word, kind, &next) != 0)
			return;
		if (kind == SB_RWLOCK_WRITE) {
			*word = next;
			sb_waitq_detach(q, w, SB_WAITER_GRANTED, b);
			return;
		}
		rw_release_run_locked(w, word);
	}
}

/* What a holder gives back (rw_release). */
enum rw_giveback {
	RW_READ_UNLOCK,
	RW_WRITE_UNLOCK,
	RW_DOWNGRADE,
	RW_UPGRADABLE_UNLOCK,
	RW_UNDO_UPGRADE, /* a granted upgrade's cancel: write -> upgradable read */
};

/* The rwlock's bits after `what`, in *word; or -EPERM / -EBUSY (unchanged). */
static int rw_giveback_word(size_t *word, enum rw_giveback what)
{
	size_t w = *word;
	switch (what) {
	case RW_READ_UNLOCK:
		if (rw_readers(w) == 0)
			return -EPERM;
		*word = w - SB_RWLOCK_STATE_READER_ONE;
		return 0;
	case RW_WRITE_UNLOCK:
		if (!(w & SB_RWLOCK_STATE_WRITER))
			return -EPERM;
		*word = w & ~SB_RWLOCK_STATE_WRITER;
		return 0;
	case RW_DOWNGRADE:
		if (!(w & SB_RWLOCK_STATE_WRITER))
			return -EPERM;
		*word = (w & ~SB_RWLOCK_STATE_WRITER) + SB_RWLOCK_STATE_READER_ONE;
		return 0;
	case RW_UPGRADABLE_UNLOCK:
		if (!(w & SB_RWLOCK_STATE_UPGRADABLE))
			return -EPERM;
		if (w & SB_RWLOCK_STATE_UPGRADING)
			return -EBUSY;
		*word = w & ~SB_RWLOCK_STATE_UPGRADABLE;
		return 0;
	case RW_UNDO_UPGRADE:
		assert(w & SB_RWLOCK_STATE_WRITER);
		*word = (w & ~SB_RWLOCK_STATE_WRITER) | SB_RWLOCK_STATE_UPGRADABLE;
		return 0;
	}
	return -EINVAL;
}

/* Under the lock, holding the rwlock's bits `word`: grants, unlocks, wakes. */
static void rw_grant_and_unlock(sb_rwlock *rw, size_t word, sb_waker drop)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	rw_grant_locked(rw, &word, &batch);
	rw_unlock_publish(rw, word);
	sb_waitq_after_unlock(&batch, drop);
}

/* Gives back `what` under the lock and hands on what that frees. */
static int rw_release(sb_rwlock *rw, enum rw_giveback what)
{
	size_t word = rw_lock(rw);
	int rc = rw_giveback_word(&word, what);
	if (rc) {
		sb_waitq_unlock(&rw->q);
		return rc;
	}
	rw_grant_and_unlock(rw, word, SB_NO_WAKER);
	return 0;
}

int sb_rwlock_read_unlock_slow(sb_rwlock *rw)
{
	return rw_release(rw, RW_READ_UNLOCK);
}

int sb_rwlock_write_unlock_slow(sb_rwlock *rw)
{
	return rw_release(rw, RW_WRITE_UNLOCK);
}

int sb_rwlock_downgrade(sb_rwlock *rw)
{
	size_t state = SB_RWLOCK_STATE_WRITER;
	/* release: readers that enter after us see our writes (pairs with their
	 * acquire CAS); nobody waits, so there is nobody to let in. */
	if (atomic_compare_exchange_strong_explicit(&rw->q.state, &state,
						    SB_RWLOCK_STATE_READER_ONE,
						    memory_order_release, memory_order_relaxed))
		return 0;
	return rw_release(rw, RW_DOWNGRADE);
}

int sb_rwlock_upgradable_unlock(sb_rwlock *rw)
{
	size_t state = rw_load(rw);
	/* Lock-free while nobody waits or is deciding to; else under the lock,
	 * which also gives -EPERM and -EBUSY. */
	while ((state & SB_RWLOCK_STATE_UPGRADABLE) &&
	       !(state & (SB_QLOCK_HELD | SB_WAITQ_NONEMPTY | SB_RWLOCK_STATE_UPGRADING))) {
		/* release: the next writer or upgradable reader sees our reads done
		 * (pairs with its acquire CAS). */
		if (atomic_compare_exchange_weak_explicit(&rw->q.state, &state,
							  state & ~SB_RWLOCK_STATE_UPGRADABLE,
							  memory_order_release, memory_order_relaxed))
			return 0;
	}
	return rw_release(rw, RW_UPGRADABLE_UNLOCK);
}

void sb_rwlock_upgradable_read_init(sb_rwlock_lock *f, sb_rwlock *rw)
{
	f->rwlock = rw;
	f->kind = SB_RWLOCK_UPGRADABLE;
	f->status = SB_FUTURE_IDLE;
}

void sb_rwlock_upgrade_init(sb_rwlock_lock *f, sb_rwlock *rw)
{
	f->rwlock = rw;
	f->kind = SB_RWLOCK_UPGRADE;
	f->status = SB_FUTURE_IDLE;
}

/*
 * First poll: take it, or queue (an upgrade waits aside, see the top of the
 * file); one CAS decides.
 */
static int rw_lock_first_poll(void *future, const sb_waker *waker)
{
	sb_rwlock_lock *f = future;
	sb_rwlock *rw = f->rwlock;
	sb_waker clone = SB_NO_WAKER;
	size_t state;
	int rc = rw_take_or_lock(rw, f->kind, waker, &clone, &state);
	if (rc != SB_PENDING) {
		sb_waker_drop_if(clone);
		return rc;
	}
	sb_waiter *w = &f->waiter;
	if (f->kind != SB_RWLOCK_UPGRADE) {
		sb_waitq_push_and_unlock(&rw->q, w, 1, clone);
		return SB_PENDING;
	}
	w->next = w->prev = NULL;
	w->waker = clone;
	sb_waiter_set_remaining_locked(w, 1);
	rw->upgrading = w;
	rw_unlock_publish(rw, (state & RW_BITS) | SB_RWLOCK_STATE_UPGRADING);
	return SB_PENDING;
}

static int rw_lock_repoll(void *future, const sb_waker *waker)
{
	sb_rwlock_lock *f = future;
	return sb_future_repoll(&f->status, &f->rwlock->q, &f->waiter, waker);
}

int sb_rwlock_lock_poll_slow(sb_rwlock_lock *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->rwlock, f, w, rw_lock_first_poll,
				   rw_lock_repoll);
}

/*
 * A pending upgrade's cancel: withdrawn, it lets in the readers queued
 * behind UPGRADING; granted, the write lock turns back into the upgradable
 * read the caller still holds.
 */
static void rw_upgrade_cancel(sb_rwlock_lock *f)
{
	sb_rwlock *rw = f->rwlock;
	size_t word = rw_lock(rw);
	sb_waker mine = SB_NO_WAKER;
	if (rw->upgrading == &f->waiter) {
		rw->upgrading = NULL;
		mine = f->waiter.waker;
		word &= ~SB_RWLOCK_STATE_UPGRADING;
	} else {
		rw_giveback_word(&word, RW_UNDO_UPGRADE);
	}
	rw_grant_and_unlock(rw, word, mine);
}

/* How a granted future of `kind` gives back what it never observed. */
static enum rw_giveback rw_giveback_of(int kind)
{
	if (kind == SB_RWLOCK_WRITE)
		return RW_WRITE_UNLOCK;
	if (kind == SB_RWLOCK_UPGRADABLE)
		return RW_UPGRADABLE_UNLOCK;
	return RW_READ_UNLOCK;
}

void sb_rwlock_lock_cancel(sb_rwlock_lock *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_rwlock *rw = f->rwlock;
	if (f->kind == SB_RWLOCK_UPGRADE) {
		rw_upgrade_cancel(f);
		return;
	}
	size_t remaining;
	sb_waker mine;
	if (sb_waitq_lock_for_cancel(&rw->q, &f->waiter, &remaining, &mine)) {
		/* Unlinked: if it was the head, those behind may enter now. */
		rw_grant_and_unlock(rw, rw_load(rw) & RW_BITS, mine);
		return;
	}
	if (remaining == SB_WAITER_GRANTED)
		rw_release(rw, rw_giveback_of(f->kind));
}

SB_FUTURE_OPS(sb_rwlock_lock_ops, sb_rwlock_lock, sb_rwlock_lock_poll, sb_rwlock_lock_cancel);

static int rw_block_on(sb_rwlock *rw, int kind, uint64_t timeout_ns)
{
	sb_rwlock_lock f;
	f.rwlock = rw;
	f.kind = kind;
	f.status = SB_FUTURE_IDLE;
	return sb_park_block_on(&f, &sb_rwlock_lock_ops, timeout_ns);
}

int sb_rwlock_read_blocking(sb_rwlock *rw, uint64_t timeout_ns)
{
	/* The future's first poll decides the same way; this skips the parker. */
	if (sb_rwlock_try_read(rw) == 0)
		return 0;
	return rw_block_on(rw, SB_RWLOCK_READ, timeout_ns);
}

int sb_rwlock_write_blocking(sb_rwlock *rw, uint64_t timeout_ns)
{
	if (sb_rwlock_try_write(rw) == 0)
		return 0;
	return rw_block_on(rw, SB_RWLOCK_WRITE, timeout_ns);
}

int sb_rwlock_upgradable_read_blocking(sb_rwlock *rw, uint64_t timeout_ns)
{
	return rw_block_on(rw, SB_RWLOCK_UPGRADABLE, timeout_ns);
}

int sb_rwlock_upgrade_blocking(sb_rwlock *rw, uint64_t timeout_ns)
{
	return rw_block_on(rw, SB_RWLOCK_UPGRADE, timeout_ns);
}
