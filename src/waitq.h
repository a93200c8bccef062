/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The intrusive FIFO waiter queue: the only queue in the library.
 *
 * A primitive is an sb_waitq: one state word plus the head and tail of a
 * FIFO of sb_waiter nodes, which live in the callers' futures.  The word's
 * low bits belong to the queue (their definitions are ABI, in
 * <syncband/future.h>, because the inline fast paths read them):
 *
 *   bit 0  SB_QLOCK_HELD       the queue lock (src/lock.h)
 *   bit 1  SB_QLOCK_PARKED     someone sleeps waiting for the lock
 *   bit 2  SB_WAITQ_NONEMPTY   the queue had waiters when last unlocked
 *   bits SB_WAITQ_STATE_SHIFT and up: the primitive's own state
 *
 * Links and wakers are guarded by the lock.  SB_WAITQ_NONEMPTY is recomputed
 * by every unlock, in the same CAS that releases the lock, so a lock-free
 * reader that sees neither HELD nor NONEMPTY knows that nobody waits and
 * nobody is about to: a first waiter sets HELD in the CAS with which it
 * decides to wait, and NONEMPTY in the one that unlocks.  Lock-free paths
 * that hand something to waiters (a release, a set) therefore take the slow
 * path whenever HELD or NONEMPTY is set.
 *
 * sb_waiter.remaining is what the waiter is still owed (permits for a
 * semaphore, 1 for a lock or a notification).  It is the one field the owner
 * reads without the lock, and it says who owns the node:
 *
 *   0 < remaining < SB_WAITER_WOKEN
 *                                 queued: the lock holder owns the node
 *   SB_WAITER_WOKEN               queued, its waker spent (the mutex's woken
 *                                 head, src/mutex.c): the owner must act
 *   SB_WAITER_RELEASED_*          released by a broadcast but still linked
 *                                 (sb_waitq_release_all): the lock holder
 *                                 owns the node; an owner that sees this
 *                                 takes the lock and unlinks it itself
 *   SB_WAITER_LONE                a lone waiter (src/lone.h)
 *   SB_WAITER_GRANTED (0)         detached, everything granted
 *   SB_WAITER_CLOSED              detached, completed with an error
 *   SB_WAITER_RETRY               detached, nothing happened: a select's
 *                                 claim sent it back (the channel's cases,
 *                                 src/select_claim.h); its owner starts over
 *
 * `waker` is written only by the node's owner (when it registers, and when
 * it re-registers under the lock); a lock holder only reads it.  So the
 * owner may compare it with a new waker without the lock.
 *
 * A lock holder detaches a waiter by unlinking it, moving its waker into a
 * wake batch, and only then storing the final value with release order.
 * From that store on, the owner may free the node, so the lock holder never
 * touches it again; the wakers in the batch are run after the lock is
 * released, and a registering owner clones its waker before it takes the
 * lock: no waker callback runs under the lock (any may re-enter the
 * primitive).
 */
#ifndef SYNCBAND_SRC_WAITQ_H
#define SYNCBAND_SRC_WAITQ_H

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <syncband/future.h>

#include "lock.h"
#include "select_claim.h"

/* The bits of the word are defined in <syncband/future.h> (they are ABI). */
#define SB_WAITQ_BITS (SB_QLOCK_BITS | SB_WAITQ_NONEMPTY)
_Static_assert(SB_WAITQ_BITS < ((size_t)1 << SB_WAITQ_STATE_SHIFT),
	       "a primitive's bits start above the queue's");

/* "No waker", for when there is nothing to drop. */
#define SB_NO_WAKER ((sb_waker){ NULL, NULL })

/* SB_WAITER_GRANTED (0) is ABI, in <syncband/future.h>. */
#define SB_WAITER_CLOSED SIZE_MAX
/* A lone waiter (src/lone.h), owed one unit, outside head/tail. */
#define SB_WAITER_LONE (SIZE_MAX - 1)
/* Released by sb_waitq_release_all, to become GRANTED or CLOSED; still linked. */
#define SB_WAITER_RELEASED_GRANTED (SIZE_MAX - 2)
#define SB_WAITER_RELEASED_CLOSED (SIZE_MAX - 3)
/*
 * Still queued, but its registered waker was moved out and woken (the
 * node keeps a stale copy, never to be woken or dropped): the eventually fair
 * mutex's woken head.  A re-poll returns it to the caller, untouched.
 */
#define SB_WAITER_WOKEN (SIZE_MAX - 4)
/* Detached by a channel whose claim on the waiter's select failed: nothing
 * happened to it (src/channel.c). */
#define SB_WAITER_RETRY (SIZE_MAX - 5)

/*
 * Wakers collected under the lock, run after it; Tokio uses 32 too.  The
 * model-check build uses 2, so that its scenarios reach past a batch.
 */
#ifdef SB_MODEL_CHECK
#define SB_WAKE_BATCH_MAX 2
#else
#define SB_WAKE_BATCH_MAX 32
#endif

typedef struct sb_wake_batch {
	unsigned count;
	sb_waker wakers[SB_WAKE_BATCH_MAX];
} sb_wake_batch;

static inline bool sb_waiter_is_detached(size_t remaining)
{
	return remaining == SB_WAITER_GRANTED || remaining == SB_WAITER_CLOSED ||
	       remaining == SB_WAITER_RETRY;
}

/* Released by a broadcast, still linked: the owner must unlink it itself. */
static inline bool sb_waiter_is_released(size_t remaining)
{
	return remaining == SB_WAITER_RELEASED_GRANTED || remaining == SB_WAITER_RELEASED_CLOSED;
}

/* The final value a released waiter completes with. */
static inline size_t sb_waiter_released_final(size_t remaining)
{
	return remaining == SB_WAITER_RELEASED_GRANTED ? SB_WAITER_GRANTED : SB_WAITER_CLOSED;
}

/*
 * Clones `waker` into *clone unless it holds one already: every registration
 * clones before it takes the queue lock (a clone may re-enter the library),
 * and keeps the clone across retries of its CAS.
 */
static inline void sb_waker_clone_once(const sb_waker *waker, sb_waker *clone)
{
	if (!clone->vtable)
		*clone = sb_waker_clone(waker);
}

static inline void sb_waker_drop_if(sb_waker w)
{
	if (w.vtable)
		sb_waker_drop(w);
}

/* The owner's lock-free look at its node. */
static inline size_t sb_waiter_load(const sb_waiter *w)
{
	/* acquire: pairs with the detaching store; the grant's writes are visible. */
	return atomic_load_explicit((_Atomic size_t *)&w->remaining, memory_order_acquire);
}

static inline size_t sb_waiter_remaining_locked(const sb_waiter *w)
{
	/* relaxed: written only under the queue lock, which we hold. */
	return atomic_load_explicit((_Atomic size_t *)&w->remaining, memory_order_relaxed);
}

static inline void sb_waiter_set_remaining_locked(sb_waiter *w, size_t remaining)
{
	/* relaxed: the waiter stays linked, so its owner does not act on it
	 * without taking the lock (a released mark sends it there). */
	atomic_store_explicit(&w->remaining, remaining, memory_order_relaxed);
}

/*
 * Stored by a primitive's destroy() in debug builds, so that a later use
 * trips the assertion in sb_waitq_load() instead of going unnoticed.
 */
#define SB_WAITQ_DESTROYED (~(size_t)0)

/* A snapshot of the state word; decisions are confirmed by a CAS. */
static inline size_t sb_waitq_load(const sb_waitq *q)
{
	/* relaxed: only a snapshot, see above. */
	size_t state = atomic_load_explicit((_Atomic size_t *)&q->state, memory_order_relaxed);
	assert(state != SB_WAITQ_DESTROYED && "primitive used after destroy");
	return state;
}

/* destroy(): poisons the word in debug builds (see SB_WAITQ_DESTROYED). */
static inline void sb_waitq_poison(sb_waitq *q)
{
#ifndef NDEBUG
	/* relaxed: destroy must not race with any other use. */
	atomic_store_explicit(&q->state, SB_WAITQ_DESTROYED, memory_order_relaxed);
#else
	(void)q;
#endif
}

/* True when a lock-free hand-over (release, set) must take the slow path. */
static inline bool sb_waitq_may_have_waiters(size_t state)
{
	return state & (SB_QLOCK_HELD | SB_WAITQ_NONEMPTY);
}

/*
 * Takes the queue lock, also setting `bits` (published: see
 * sb_qlock_try_take); returns the word before.
 */
static inline size_t sb_waitq_lock(sb_waitq *q, size_t bits)
{
#ifndef NDEBUG
	(void)sb_waitq_load(q); /* a destroyed word looks locked forever */
#endif
	return sb_qlock_acquire(&q->state, bits);
}

/*
 * Releases the queue lock; in the same CAS recomputes SB_WAITQ_NONEMPTY,
 * clears `clear` and adds `add` (so clear == add == a bit sets that bit).
 */
static inline void sb_waitq_unlock_update(sb_waitq *q, size_t clear, size_t add)
{
	size_t nonempty = q->head ? SB_WAITQ_NONEMPTY : 0;
	sb_qlock_release(&q->state, clear | SB_WAITQ_NONEMPTY, add + nonempty);
}

static inline void sb_waitq_unlock(sb_waitq *q)
{
	sb_waitq_unlock_update(q, 0, 0);
}

static inline bool sb_waitq_is_empty(const sb_waitq *q)
{
	return q->head == NULL;
}

static inline sb_waiter *sb_waitq_front(const sb_waitq *q)
{
	return q->head;
}

/*
 * Under the lock: how many wait from `w` to the tail, `w` included (at most
 * UINT32_MAX); a handoff phase counts the waiters it covers this way.
 */
static inline uint32_t sb_waitq_count_from(const sb_waiter *w)
{
	uint32_t n = 0;
	for (; w && n < UINT32_MAX; w = w->next)
		n++;
	return n;
}

static inline void sb_wake_batch_init(sb_wake_batch *b)
{
	b->count = 0;
}

static inline bool sb_wake_batch_is_full(const sb_wake_batch *b)
{
	return b->count == SB_WAKE_BATCH_MAX;
}

/* Wakes every waker in the batch (consuming them) and empties it. */
static inline void sb_wake_batch_run(sb_wake_batch *b)
{
	for (unsigned i = 0; i < b->count; i++)
		sb_waker_wake(b->wakers[i]);
	b->count = 0;
}

/* After unlocking: runs the batch, then drops `drop` (if it holds a waker). */
static inline void sb_waitq_after_unlock(sb_wake_batch *b, sb_waker drop)
{
	if (b)
		sb_wake_batch_run(b);
	sb_waker_drop_if(drop);
}

/*
 * The FIFO itself, on any head and tail guarded by a queue's lock: the
 * queue's own, or a second list under the same lock (the channel's senders).
 * Links `w` at the tail, owing `remaining` (> 0), holding `clone` (made
 * before the lock was taken).  Fills every field of the node.
 */
static inline void sb_waiters_push(sb_waiter **head, sb_waiter **tail, sb_waiter *w,
				   size_t remaining, sb_waker clone)
{
	assert(!sb_waiter_is_detached(remaining) && remaining < SB_WAITER_WOKEN);
	w->next = NULL;
	w->prev = *tail;
	w->waker = clone;
	sb_waiter_set_remaining_locked(w, remaining);
	if (*tail)
		(*tail)->next = w;
	else
		*head = w;
	*tail = w;
}

/* Unlinks a linked `w` and returns its waker (see sb_waitq_unlink). */
static inline sb_waker sb_waiters_unlink(sb_waiter **head, sb_waiter **tail, sb_waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		*head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		*tail = w->prev;
	w->next = w->prev = NULL;
	/* Moved out, not cleared: only the node's owner writes `waker` (see the
	 * top of the file), so that it may compare it without the lock. */
	return w->waker;
}

/* Under the lock: sb_waiters_push on the queue's own list. */
static inline void sb_waitq_push(sb_waitq *q, sb_waiter *w, size_t remaining, sb_waker clone)
{
	sb_waiters_push(&q->head, &q->tail, w, remaining, clone);
}

/*
 * Under the lock: sb_waitq_push, then unlock.  The queue holds `w` now, so
 * the unlock sets SB_WAITQ_NONEMPTY without looking at the queue again.
 */
static inline void sb_waitq_push_and_unlock(sb_waitq *q, sb_waiter *w, size_t remaining,
					    sb_waker clone)
{
	sb_waitq_push(q, w, remaining, clone);
	sb_qlock_release(&q->state, SB_WAITQ_NONEMPTY, SB_WAITQ_NONEMPTY);
}

/*
 * Under the lock: unlinks a queued `w` and returns its waker, which the
 * caller drops after unlocking.  The node is the caller's again.  Also
 * unlinks from a broadcast's list (sb_waitq_release_all), where no link is
 * NULL.
 */
static inline sb_waker sb_waitq_unlink(sb_waitq *q, sb_waiter *w)
{
	return sb_waiters_unlink(&q->head, &q->tail, w);
}

/*
 * Under the lock: moves the waker of `w`, a waiter the lock holder owns that
 * is linked in no list (unlinked already, or kept aside, as the rwlock's
 * pending upgrade), into `b` (not full) and publishes `final`
 * (SB_WAITER_GRANTED or SB_WAITER_CLOSED).  `w` must not be touched
 * afterwards.
 */
static inline void sb_waiter_detach_unlinked(sb_waiter *w, size_t final, sb_wake_batch *b)
{
	assert(sb_waiter_is_detached(final));
	assert(!sb_wake_batch_is_full(b));
	b->wakers[b->count++] = w->waker;
	/* release: hands the node, and what it was granted, back to its owner. */
	atomic_store_explicit(&w->remaining, final, memory_order_release);
}

/*
 * Under the lock: unlinks `w`, moves its waker into `b` and publishes
 * `final` (SB_WAITER_GRANTED or SB_WAITER_CLOSED).  `w` must not be touched
 * afterwards.  The batch must not be full.
 */
static inline void sb_waitq_detach(sb_waitq *q, sb_waiter *w, size_t final, sb_wake_batch *b)
{
	sb_waitq_unlink(q, w);
	sb_waiter_detach_unlinked(w, final, b);
}

/*
 * Under the lock: detaches the head, publishing `final`, and moves its waker
 * into `b` (not full).  Returns false when the queue is empty.
 */
static inline bool sb_waitq_detach_front(sb_waitq *q, size_t final, sb_wake_batch *b)
{
	sb_waiter *w = sb_waitq_front(q);
	if (w == NULL)
		return false;
	sb_waitq_detach(q, w, final, b);
	return true;
}

/*
 * Under the lock (`b` empty): a broadcast.  Releases every queued waiter
 * with `final` at once - from the moment the caller took the lock, none of
 * them can be seen pending - and queues their wakes in `b`, running full
 * batches with the lock dropped.  The first batch is detached directly; past
 * it, the rest are marked SB_WAITER_RELEASED_* and moved out of the queue
 * onto a list headed by a guard node on this call's stack, from which they
 * are detached a batch at a time.  Their owners may meanwhile cancel or
 * re-poll: they see the mark, take the lock and unlink themselves from that
 * list (sb_waitq_cancel_locked, sb_waitq_repoll_and_unlock).  Waiters that register
 * while the lock is dropped join the emptied queue and are not released.
 * The lock is re-taken with sb_waitq_flush (plain sb_waitq_lock): a
 * broadcaster's primitive lets no waiter wait alone meanwhile (src/lone.h),
 * and its bits above SB_WAITQ_LONE_SHIFT may hold anything (the latch's
 * count).
 * Returns with the lock held and `b` possibly non-empty.
 */
void sb_waitq_release_all(sb_waitq *q, size_t final, sb_wake_batch *b);

/*
 * Under the lock, when `b` is full: unlock, run the batch, re-lock with
 * sb_waitq_lock, which reads nothing in the primitive's bits (so they may
 * hold a count).  A queue whose waiters may wait alone meanwhile uses
 * sb_waitq_flush_lone (src/lone.h) instead.  The queue may have changed
 * meanwhile; callers re-read what they need.
 */
void sb_waitq_flush(sb_waitq *q, sb_wake_batch *b);

/*
 * Owner's cancel.  If `w` is still queued: takes the lock, unlinks `w`, sets
 * *remaining to what it was still owed and *waker to its waker, and returns
 * true WITH THE LOCK HELD; the caller hands on what `w` held, unlocks, and
 * drops the waker (sb_waitq_after_unlock).  Otherwise returns false, lock not
 * held, with *remaining the final state `w` was detached with (a waiter a
 * broadcast released but had not reached yet counts as detached: it is
 * unlinked here and its waker dropped).
 */
bool sb_waitq_lock_for_cancel(sb_waitq *q, sb_waiter *w, size_t *remaining, sb_waker *waker);

/*
 * Under the lock, which it keeps: the owner's cancel of `w`.  True when `w`
 * was queued: unlinked, *remaining what it was still owed, *waker its waker.
 * False when it was detached: *remaining is its final value, and *waker the
 * waker to drop after unlocking (a released `w` is unlinked here; one
 * detached already has none, SB_NO_WAKER).
 */
bool sb_waitq_cancel_locked(sb_waitq *q, sb_waiter *w, size_t *remaining, sb_waker *waker);

/*
 * Under the lock: sb_waitq_cancel_locked, then, when `w` was not queued,
 * unlocks and drops its waker; true (still holding the lock) when it was.
 * The second half of sb_waitq_lock_for_cancel and sb_waitq_cancel_lone.
 */
static inline bool sb_waitq_cancel_or_unlock(sb_waitq *q, sb_waiter *w, size_t *remaining,
					     sb_waker *waker)
{
	if (sb_waitq_cancel_locked(q, w, remaining, waker))
		return true;
	sb_waitq_unlock(q);
	sb_waker_drop_if(*waker);
	return false;
}

/*
 * Owner's cancel of a queued wait that has nothing to hand on (a manual
 * event's wait, a condvar's): unlinks `w` and drops its waker after
 * unlocking.  Returns what it was still owed, or its final value when it had
 * been detached first (test with sb_waiter_is_detached).
 */
size_t sb_waitq_cancel(sb_waitq *q, sb_waiter *w);

/* The clone a re-poll registers: none when the waiter keeps its waker. */
static inline sb_waker sb_waitq_repoll_clone(const sb_waiter *w, size_t remaining, const sb_waker *waker)
{
	if (sb_waiter_is_released(remaining) ||
	    sb_waker_will_wake(&w->waker, sb_waker_resolve(waker)))
		return SB_NO_WAKER;
	return sb_waker_clone(waker);
}

/*
 * sb_waitq_repoll() for a waiter still queued: clones `waker` if it is a new
 * one, then takes the lock.
 */
size_t sb_waitq_repoll_queued(sb_waitq *q, sb_waiter *w, const sb_waker *waker);

/*
 * The same for a caller that took the lock, holding `clone` of the new waker
 * (or none); unlocks (the rule of docs/design.md section 7: `_and_unlock`).  A waiter a broadcast released unlinks itself and
 * returns its final value; a WOKEN one is left as it is (clone dropped).
 */
size_t sb_waitq_repoll_and_unlock(sb_waitq *q, sb_waiter *w, sb_waker clone);

/* Whether a re-poll that read `remaining` may return it without the lock. */
static inline bool sb_waitq_repoll_is_settled(const sb_waiter *w, size_t remaining,
					      const sb_waker *waker)
{
	if (sb_waiter_is_detached(remaining))
		return true;
	/* A select's branch waker stands for its caller's (src/select_claim.h). */
	return !sb_waiter_is_released(remaining) &&
	       sb_waker_will_wake(&w->waker, sb_waker_resolve(waker));
}

/*
 * Owner's poll of a queued waiter: returns the final value if it was
 * detached, or what it is still owed if `waker` will wake the registered one
 * (one load each, no lock); otherwise re-registers `waker` under the lock,
 * or, released by a broadcast, unlinks itself and returns the final value.
 */
static inline size_t sb_waitq_repoll(sb_waitq *q, sb_waiter *w, const sb_waker *waker)
{
	size_t remaining = sb_waiter_load(w);
	if (sb_waitq_repoll_is_settled(w, remaining, waker))
		return remaining;
	return sb_waitq_repoll_queued(q, w, waker);
}

#endif
