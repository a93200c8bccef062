/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/semaphore.h>

#include <assert.h>
#include <errno.h>

#include "fairness.h"
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
 * Strict FIFO mode: while anyone waits, permits flow from release()
 * straight into the head waiter's `remaining` under the lock (direct
 * handoff), and only the head can hold a partial grant.
 *
 * Eventually fair mode, by the rules of src/fairness.h (shared with the
 * mutex).  While waiters are queued (not a lone one), free permits live in
 * `spare`, under the queue lock, not in the word: the word's count field is
 * the lone waiter's, and a count there could read as an address.  So:
 *   - a release with waiters adds to `spare` and, if the head is owed no
 *     more than that, wakes it: SB_WAITER_WOKEN, still queued at the front,
 *     its waker moved into the wake batch (the node keeps a stale copy, never
 *     woken or dropped), its partial grant, if any, moved into `spare` too,
 *     so that a woken head holds none and is owed all its permits;
 *   - a newcomer (first poll, try_acquire) that finds waiters takes the
 *     queue lock and takes from `spare` if it holds enough (barging), unless
 *     a handoff phase runs;
 *   - the woken head's next poll retries (sem_retry): it takes its permits
 *     from `spare` and leaves, or re-arms at the front.
 * `spare` is 0 whenever the queue is empty: the unlock that empties it
 * moves `spare` into the word (sem_unlock_fair), so the lock-free paths see
 * every free permit again.  The lone waiter is handed its permit by a
 * release as in strict mode: it is alone, with nobody queued behind it, and
 * the single-thread handoff stays one CAS on each side.
 *
 * Starvation: the queue is timed (passed_since) from the first time a
 * barger passes its head: takes permits and leaves fewer in `spare` than the
 * head is owed, or a woken head finds too few left.  The future has no room
 * for a stamp of its own (64 bytes), so the semaphore keeps one for the
 * queue: a waiter behind the head was passed at least as long as the head
 * was, and the next head inherits the stamp, which is no later than its own
 * would be - it is handed its permits sooner, never later, than the mutex's
 * rules would.  A release that finds the queue timed compares the stamp
 * with the bound at every 16th release (sb_fair_is_check; releases_timed
 * counts them, from 0 at the stamp); past the bound it starts a handoff
 * phase: handoff_left = the waiters queued then, and from then on every
 * release feeds `spare` to the queue in order (sem_feed_locked), as strict
 * mode does, a woken head accumulating it in `spare` until it is owed no
 * more (then detached, GRANTED), and bargers take nothing.  Each waiter the
 * phase completes counts one off handoff_left; the last one ends the phase
 * and stamps the queue as sb_fair_phase_stamp says, or clears the stamp when
 * the queue is empty.  A cancelled waiter is not counted off: the phase may
 * cover one newcomer more, never one fewer.
 *
 * The budget: while the head is WOKEN, outside a phase, in a timed queue,
 * a release that is not the one that compares the stamp with the bound
 * only adds to `spare`, and a newcomer only takes from it (the queue being
 * timed already, passing the head changes nothing else).  So the unlock
 * that leaves such a head WOKEN writes a budget into bits 4-7 of the word
 * (NONEMPTY with no lone address: src/lone.h keeps addresses at or above
 * 256): bits 4-5, the releases up to the next check (at most 3), counted
 * in releases_timed at once, as the mutex's unlock budget; bits 6-7, the
 * free permits (all of `spare`, at most 3, or no budget).  A release the
 * budget lets by is one CAS that takes one release and adds its permits
 * (at most 3 free in all); a newcomer's take is one CAS that takes its
 * permits; both only from a word without HELD, so that whoever holds the
 * lock sees the budget still.  Every locked step of this mode shuts it in
 * the CAS that takes the lock (sem_lock_fair; a cancel's lock and a full
 * wake batch's relock, taken by the queue's own code, with one more RMW:
 * sem_shut_budget_locked): its permits go back into `spare` and its unused
 * releases out of releases_timed, so the locked code below never sees a
 * budget, and the stamp is compared at exactly the releases it was
 * compared at without one; every unlock of this mode decides afresh
 * (sem_open_budget_locked).  Steps of the queue's generic code that lock
 * and unlock (a re-poll's new waker, a cancel that finds its node
 * detached) leave it as it was: they change neither the head nor the
 * permits.  With 16 blocking threads on 2 cores, the queue lock was about
 * 70 % of the profile (sem_unlock_fair, sb_waitq_lock_lone, sb_qlock_wait):
 * every release and every acquire that found waiters took it.
 *
 * So the head holds a partial grant only in strict mode, in a phase, or as a
 * first waiter that took what the counter had (a multi-permit first poll, a
 * lone waiter that took n - 1); and never while woken.
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

/*
 * The budget (eventually fair mode; see the top of the file): bits 4-7 of
 * a word with waiters queued (NONEMPTY, no lone address), 0 when shut.
 * Bits 4-5: the releases that may go by without the lock (counted already
 * in releases_timed); bits 6-7: free permits that a newcomer may take
 * without it.  Both are spent with one CAS, from a word without HELD.
 */
#define SEM_BUDGET_RELEASE_ONE SB_SEMAPHORE_STATE_COUNT_ONE
#define SEM_BUDGET_RELEASES (SEM_BUDGET_RELEASE_ONE * 3)
#define SEM_BUDGET_PERMIT_SHIFT (SB_SEMAPHORE_STATE_COUNT_SHIFT + 2)
#define SEM_BUDGET_PERMIT_ONE ((size_t)1 << SEM_BUDGET_PERMIT_SHIFT)
#define SEM_BUDGET_PERMITS (SEM_BUDGET_PERMIT_ONE * 3)
#define SEM_BUDGET_BITS (SEM_BUDGET_RELEASES | SEM_BUDGET_PERMITS)
#define SEM_BUDGET_MAX ((size_t)3) /* of each */
_Static_assert(SEM_BUDGET_BITS < SB_WAITQ_LONE_MIN, "a budget must never read as a lone address");

/* Whether `state` may be spent from: waiters queued, lock free, not closed. */
static inline bool sem_budget_is_spendable(size_t state)
{
	/* NONEMPTY and bits 4-7 only: no lock, no CLOSED, no lone address. */
	return (state & ~SEM_BUDGET_BITS) == SB_WAITQ_NONEMPTY;
}

/* The free permits of a budget in `state`. */
static inline size_t sem_budget_permits(size_t state)
{
	return (state & SEM_BUDGET_PERMITS) >> SEM_BUDGET_PERMIT_SHIFT;
}

int sb_semaphore_init(sb_semaphore *s, size_t permits)
{
	if (permits > SB_SEMAPHORE_MAX_PERMITS)
		return -EINVAL;
	*s = (sb_semaphore)SB_SEMAPHORE_INIT(permits);
	return 0;
}

int sb_semaphore_init_fifo(sb_semaphore *s, size_t permits)
{
	if (permits > SB_SEMAPHORE_MAX_PERMITS)
		return -EINVAL;
	*s = (sb_semaphore)SB_SEMAPHORE_INIT_FIFO(permits);
	return 0;
}

static inline bool sem_is_fifo(const sb_semaphore *s)
{
	return s->mode & SB_SEMAPHORE_FIFO;
}

static sb_semaphore_acquire *sem_acquire_of(sb_waiter *w)
{
	return SB_CONTAINER_OF(w, sb_semaphore_acquire, waiter);
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

/* --- eventually fair mode (see the top of the file) --- */

/*
 * Under the lock: the budget that `state` (the word as the lock was taken)
 * held is shut: moves its permits into `spare` and takes the releases it did
 * not let by back out of releases_timed, so that the bound is compared at
 * the same releases as without a budget.
 */
static void sem_budget_shut_locked(sb_semaphore *s, size_t state)
{
	s->spare += sem_budget_permits(state);
	s->releases_timed -= (uint16_t)((state & SEM_BUDGET_RELEASES) / SEM_BUDGET_RELEASE_ONE);
}

/* Whether the word `state` holds a budget (nonzero, shut or not). */
static inline bool sem_has_budget(size_t state)
{
	return (state & SB_WAITQ_NONEMPTY) && !sb_waitq_is_lone(state) && (state & SEM_BUDGET_BITS);
}

/*
 * Takes the queue lock, also setting `bits`, and shuts the budget in the
 * same CAS (a lone waiter joins the queue, as sb_waitq_lock_lone).  Every
 * locked step of eventually fair mode takes the lock so (a cancel's through
 * sem_shut_budget_locked): while it is held the word has no budget, and
 * nothing is counted twice.  Returns the word as it was, less a lone
 * address and the budget.
 */
static size_t sem_lock_fair(sb_semaphore *s, size_t bits)
{
	size_t budget;
	size_t state = sb_waitq_lock_lone_clearing(&s->q, bits, SEM_BUDGET_BITS, &budget);
	if (budget)
		sem_budget_shut_locked(s, budget);
	return state;
}

/* Under a lock taken otherwise (a cancel's, a flush's): shuts the budget. */
static void sem_shut_budget_locked(sb_semaphore *s)
{
	/* relaxed: with the lock held nobody else changes bits 4-7 (a budget
	 * is spent only from a word without HELD), and the CAS that took the
	 * lock (acquire) made the permits released into it ours. */
	size_t state = sem_load(s);
	if (!sem_has_budget(state))
		return;
	sem_budget_shut_locked(s, state);
	/* relaxed: published by our unlock (release).  An RMW, not a store:
	 * a locker may set PARKED meanwhile. */
	atomic_fetch_sub_explicit(&s->q.state, state & SEM_BUDGET_BITS, memory_order_relaxed);
}

/*
 * Under the lock: runs a full wake batch with the lock dropped (as
 * sb_waitq_flush_lone).  Another step may open a budget meanwhile: shut it
 * again once the lock is back.
 */
static void sem_flush_fair(sb_semaphore *s, sb_wake_batch *b)
{
	sb_waitq_flush_lone(&s->q, b);
	sem_shut_budget_locked(s);
}

/*
 * A newcomer that found waiters queued: takes `n` permits from an open
 * budget with one CAS.  False when the budget is shut, the lock held, or
 * the budget short: the caller takes the lock.
 */
static bool sem_budget_take(sb_semaphore *s, size_t n)
{
	size_t state = sem_load(s);
	while (sem_budget_is_spendable(state) && sem_budget_permits(state) >= n) {
		/* acquire: the permits come with what their releaser wrote (pairs
		 * with the release CAS of a budget release, or the release unlock
		 * that opened the budget).  relaxed on failure: we look again. */
		if (atomic_compare_exchange_weak_explicit(&s->q.state, &state, state - n * SEM_BUDGET_PERMIT_ONE,
							  memory_order_acquire, memory_order_relaxed))
			return true;
	}
	return false;
}

/*
 * Under the lock, unlocking: the budget to write into bits 4-7.  Only for a
 * WOKEN head of a timed queue outside a phase: then a release that is not a
 * check only adds to `spare`, and a barger only takes from it (the queue
 * being timed already), which the budget does without the lock.  Lets by
 * the releases up to the next check (at most 3), counting them now, and
 * moves `spare` into the word if it fits (at most 3: otherwise nothing is
 * let by, as releases could then overflow unseen).  A queue nobody passed
 * yet gets none: the barger that passes it first takes the lock, and times
 * it.
 */
static size_t sem_open_budget_locked(sb_semaphore *s)
{
	sb_waiter *head = sb_waitq_front(&s->q);
	if (!head || !s->passed_since || s->handoff_left || s->spare > SEM_BUDGET_MAX ||
	    sb_waiter_remaining_locked(head) != SB_WAITER_WOKEN)
		return 0;
	uint32_t r = sb_fair_budget(s->releases_timed, SEM_BUDGET_MAX);
	s->releases_timed += (uint16_t)r;
	size_t budget = r * SEM_BUDGET_RELEASE_ONE + s->spare * SEM_BUDGET_PERMIT_ONE;
	s->spare = 0;
	return budget;
}

/* Under the lock, nothing changed: unlocks, opening the budget as it was. */
static void sem_unlock_unchanged(sb_semaphore *s)
{
	/* release (in the unlock): a budget taker sees our writes. */
	sb_waitq_unlock_update(&s->q, 0, sem_open_budget_locked(s));
}

/* Under the lock: what the queued `w` is still owed (a woken one, everything). */
static size_t sem_owed_locked(sb_waiter *w)
{
	size_t r = sb_waiter_remaining_locked(w);
	return r == SB_WAITER_WOKEN ? sem_acquire_of(w)->permits : r;
}

/* Under the lock: adds `n` to `spare`, saturating as the counter does. */
static void sem_add_spare_locked(sb_semaphore *s, size_t n)
{
	s->spare += sem_fit(s->spare, n);
}

/* Under the lock: a barger passed the head; starts the queue's clock. */
static void sem_time_pass_locked(sb_semaphore *s)
{
	if (s->passed_since)
		return;
	s->passed_since = sb_fair_stamp(sb_fair_now());
	s->releases_timed = 0; /* the next release compares it with the bound */
}

/*
 * Under the lock, in a phase: the phase completed a waiter.  After its last
 * one, the waiters queued meanwhile are timed half a bound back
 * (sb_fair_phase_stamp), or the clock stops with the queue.
 */
static void sem_phase_served_locked(sb_semaphore *s)
{
	if (--s->handoff_left != 0 && !sb_waitq_is_empty(&s->q))
		return;
	s->handoff_left = 0;
	s->passed_since = sb_waitq_is_empty(&s->q) ? 0 : sb_fair_phase_stamp(sb_fair_now());
	s->releases_timed = 0;
}

/*
 * Under the lock, in a phase: feeds `spare` to the queue in order, as strict
 * mode's releases do; a woken head (its waker spent) gathers it in `spare`
 * until that covers it, and is then detached without a wake: its next poll,
 * which it owes its wake, finds SB_WAITER_GRANTED.
 */
static void sem_feed_locked(sb_semaphore *s, sb_wake_batch *b)
{
	sb_waiter *w;
	while (s->handoff_left && s->spare && (w = sb_waitq_front(&s->q)) != NULL) {
		size_t r = sb_waiter_remaining_locked(w);
		if (r == SB_WAITER_WOKEN) {
			size_t owed = sem_acquire_of(w)->permits;
			if (owed > s->spare)
				return;
			s->spare -= owed;
			(void)sb_waitq_unlink(&s->q, w); /* its waker was spent */
			/* release: hands it the node and the permits. */
			atomic_store_explicit(&w->remaining, SB_WAITER_GRANTED, memory_order_release);
		} else if (r > s->spare) {
			sb_waiter_set_remaining_locked(w, r - s->spare);
			s->spare = 0;
			return;
		} else {
			s->spare -= r;
			sb_waitq_detach(&s->q, w, SB_WAITER_GRANTED, b);
		}
		sem_phase_served_locked(s);
		if (sb_wake_batch_is_full(b))
			sem_flush_fair(s, b);
	}
}

/*
 * Under the lock, eventually fair mode: feeds a phase, wakes the head if
 * `spare` covers it (moving its partial grant, if any, into `spare`), or,
 * the queue empty, moves `spare` into the word; then unlocks, runs the
 * wakes and drops `drop`.
 */
static void sem_unlock_fair(sb_semaphore *s, sb_wake_batch *b, sb_waker drop)
{
	size_t add = 0;
	for (;;) {
		sem_feed_locked(s, b);
		sb_waiter *head = sb_waitq_front(&s->q);
		if (!head) {
			/* While we hold the lock the count can only fall, so fitting
			 * it now is enough (as sem_grant_and_unlock). */
			add = sem_fit(sem_count(sem_load(s)), s->spare);
			s->spare = 0;
			s->handoff_left = 0;
			s->passed_since = 0;
			break;
		}
		size_t r = sb_waiter_remaining_locked(head);
		if (s->handoff_left || r == SB_WAITER_WOKEN || r > s->spare)
			break;
		if (sb_wake_batch_is_full(b)) {
			sem_flush_fair(s, b); /* the queue may change: look again */
			continue;
		}
		s->spare += sem_acquire_of(head)->permits - r; /* its partial grant, if any */
		b->wakers[b->count++] = head->waker;
		/* relaxed: the owner acts on WOKEN only through the lock (its
		 * retry takes it, whose acquire pairs with our unlock). */
		sb_waiter_set_remaining_locked(head, SB_WAITER_WOKEN);
		break;
	}
	/* With waiters queued, `add` is 0, and a woken head opens the budget. */
	add = add * SB_SEMAPHORE_STATE_COUNT_ONE + sem_open_budget_locked(s);
	/* release (in the unlock): a lock-free taker of `add`, or a budget
	 * taker, sees our writes. */
	sb_waitq_unlock_update(&s->q, 0, add);
	sb_waitq_after_unlock(b, drop);
}

/*
 * Under the lock, eventually fair mode, waiters queued: a newcomer takes `n`
 * from `spare` if no phase runs and it holds enough; leaving the head short
 * passes it.
 */
static bool sem_barge_locked(sb_semaphore *s, size_t n)
{
	if (s->handoff_left || s->spare < n)
		return false;
	s->spare -= n;
	sb_waiter *head = sb_waitq_front(&s->q);
	if (head && s->spare < sem_owed_locked(head))
		sem_time_pass_locked(s);
	return true;
}

/*
 * Under the lock, eventually fair mode: a release of `n` with waiters.  A
 * timed queue is compared with the bound at every 16th such release; past
 * it, a phase starts, covering everyone queued now.
 */
static void sem_release_fair_locked(sb_semaphore *s, size_t n)
{
	sem_add_spare_locked(s, n);
	if (!s->handoff_left && s->passed_since && !sb_waitq_is_empty(&s->q) &&
	    sb_fair_is_check(s->releases_timed++) && sb_fair_overdue(s->passed_since, sb_fair_now()))
		s->handoff_left = sb_waitq_count_from(s->q.head);
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sem_unlock_fair(s, &batch, SB_NO_WAKER);
}

/*
 * A try_acquire that found waiters queued (the word's NONEMPTY; not a lone
 * one, which leaves no spare): barges under the lock if it may.
 */
static int sem_try_barge(sb_semaphore *s, size_t n)
{
	size_t state = sem_load(s);
	if (!(state & SB_WAITQ_NONEMPTY) || sb_waitq_is_lone(state))
		return -EAGAIN;
	if (sem_budget_take(s, n))
		return 0;
	state = sem_lock_fair(s, 0);
	int ret = -EAGAIN;
	if (state & SB_SEMAPHORE_STATE_CLOSED)
		ret = -ESHUTDOWN;
	else if (sem_barge_locked(s, n))
		ret = 0;
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sem_unlock_fair(s, &batch, SB_NO_WAKER);
	return ret;
}

/* sem_first_poll_fair found the queue empty: the first poll starts over. */
#define SEM_START_OVER SB_FUTURE_IDLE

/*
 * Eventually fair mode, a first poll that found waiters queued: takes the
 * lock (a lone waiter joins the queue) and barges if it may; otherwise it
 * queues owed all its permits (the counter is 0 while anyone waits), with a
 * clone of its waker made with the lock dropped (a clone may re-enter), so a
 * barger clones nothing.  The clone lives in its node's `waker` (the first
 * poll's loop leaves one there, or none).  If the queue emptied meanwhile,
 * or closed: SEM_START_OVER, the clone left in the node for the loop.  Out
 * of line, the clone passed through the node, not a register: kept live
 * across a call in the loop, the clone went to the stack on every first
 * poll, a lone waiter's included (3 to 7 instructions a round of
 * semaphore/reused-handoff).
 */
__attribute__((noinline)) static int sem_first_poll_fair(sb_semaphore_acquire *f, const sb_waker *w)
{
	sb_semaphore *s = f->sem;
	size_t n = f->permits;
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	if (sem_budget_take(s, n)) {
		sb_waker_drop_if(f->waiter.waker);
		return 0;
	}
	for (;;) {
		size_t state = sem_lock_fair(s, 0);
		if ((state & SB_SEMAPHORE_STATE_CLOSED) || sb_waitq_is_empty(&s->q)) {
			sem_unlock_unchanged(s);
			return SEM_START_OVER;
		}
		if (sem_barge_locked(s, n)) {
			sem_unlock_fair(s, &batch, f->waiter.waker);
			return 0;
		}
		if (f->waiter.waker.vtable)
			break;
		sem_unlock_unchanged(s);
		f->waiter.waker = sb_waker_clone(w);
	}
	sb_waitq_push(&s->q, &f->waiter, n, f->waiter.waker);
	sem_unlock_fair(s, &batch, SB_NO_WAKER);
	return SB_PENDING;
}

/*
 * A woken future tries again under the lock: takes its permits from `spare`
 * and leaves the queue, or finds them granted (a phase) or itself closed, or
 * re-arms at the front with a clone of `w` (made with the lock dropped, so
 * that a head that gets its permits clones nothing) - in a phase with what
 * `spare` holds as a partial grant.
 */
__attribute__((noinline)) static int sem_retry(sb_semaphore_acquire *f, const sb_waker *w)
{
	sb_semaphore *s = f->sem;
	sb_waiter *node = &f->waiter;
	sb_waker clone = SB_NO_WAKER;
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	size_t owed = f->permits;
	for (;;) {
		(void)sem_lock_fair(s, 0);
		size_t r = sb_waiter_remaining_locked(node);
		if (r != SB_WAITER_WOKEN) {
			/* Detached meanwhile (a phase's grant, close): final. */
			assert(sb_waiter_is_detached(r));
			sem_unlock_unchanged(s);
			sb_waker_drop_if(clone);
			return sb_future_settle(&f->status, r);
		}
		if (s->spare >= owed) {
			s->spare -= owed;
			(void)sb_waitq_unlink(&s->q, node); /* its waker was spent */
			if (s->handoff_left)
				sem_phase_served_locked(s); /* (a flush let the spare build up) */
			sem_unlock_fair(s, &batch, clone);
			return 0;
		}
		if (clone.vtable)
			break;
		sem_unlock_unchanged(s);
		clone = sb_waker_clone(w);
	}
	if (s->handoff_left) {
		owed -= s->spare; /* the phase's: it is the head */
		s->spare = 0;
	} else {
		sem_time_pass_locked(s); /* a barger took what woke it */
	}
	node->waker = clone;
	sb_waiter_set_remaining_locked(node, owed);
	sem_unlock_fair(s, &batch, SB_NO_WAKER);
	return SB_PENDING;
}

int sb_semaphore_try_acquire_slow(sb_semaphore *s, size_t n)
{
	if (n > SB_SEMAPHORE_MAX_PERMITS)
		return -EINVAL;
	int ret = sem_try_take(s, n);
	if (ret != -EAGAIN || sem_is_fifo(s))
		return ret;
	return sem_try_barge(s, n);
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
		if (sem_budget_is_spendable(state) && (state & SEM_BUDGET_RELEASES) &&
		    n <= SEM_BUDGET_MAX - sem_budget_permits(state)) {
			/* A release the budget lets by (never in strict FIFO mode;
			 * the permits free, at most SEM_BUDGET_MAX, cannot overflow).
			 * release: a budget taker sees our writes; relaxed on
			 * failure, the loop re-decides. */
			if (atomic_compare_exchange_weak_explicit(&s->q.state, &state,
								  state - SEM_BUDGET_RELEASE_ONE +
									  n * SEM_BUDGET_PERMIT_ONE,
								  memory_order_release,
								  memory_order_relaxed))
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
	state = sem_lock_fair(s, 0);
	/* The counter is 0 while anyone waits; if the queue has emptied since,
	 * the permits may land in the counter, so check against it (and
	 * against the spare, the free permits while anyone waits). */
	if (checked && (sem_count(state) > SB_SEMAPHORE_MAX_PERMITS - n ||
			s->spare > SB_SEMAPHORE_MAX_PERMITS - n)) {
		sem_unlock_unchanged(s);
		return -EOVERFLOW;
	}
	if (sem_is_fifo(s))
		sem_grant_and_unlock(s, n, SB_NO_WAKER);
	else
		sem_release_fair_locked(s, n);
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
	size_t state = sem_lock_fair(s, SB_SEMAPHORE_STATE_CLOSED);
	/* Only the head ever holds a partial grant, never a woken one; the
	 * spare (eventually fair mode) goes back too. */
	size_t returned = s->spare;
	s->spare = 0;
	s->handoff_left = 0;
	s->passed_since = 0;
	sb_waiter *head = sb_waitq_front(q);
	if (head && sb_waiter_remaining_locked(head) == SB_WAITER_WOKEN) {
		/* Its waker is spent: its next poll, which it owes the wake,
		 * finds it closed.  release: hands the node back. */
		(void)sb_waitq_unlink(q, head);
		atomic_store_explicit(&head->remaining, SB_WAITER_CLOSED, memory_order_release);
	} else if (head) {
		returned += sem_acquire_of(head)->permits - sb_waiter_remaining_locked(head);
	}
	sb_waitq_release_all(q, SB_WAITER_CLOSED, &batch);
	returned = sem_fit(sem_count(state), returned);
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
			if (!sem_is_fifo(s)) { /* eventually fair: barge or queue */
				node->waker = clone; /* (a lone try's, or none) */
				int r = sem_first_poll_fair(f, w);
				if (r != SEM_START_OVER)
					return r;
				clone = node->waker;
				state = sem_load(s);
				continue;
			}
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

/*
 * A queued future: woken (eventually fair mode), it retries; otherwise a
 * plain re-poll.  Out of line: inlined into the poll beside the first poll,
 * it made the first poll keep its waker clone on the stack.
 */
__attribute__((noinline)) static int sem_acquire_repoll(void *future, const sb_waker *w)
{
	sb_semaphore_acquire *f = future;
	size_t r = sb_waiter_load(&f->waiter);
	/* (woken meanwhile: the re-poll leaves the node alone and says so) */
	if (r != SB_WAITER_WOKEN)
		r = sb_waitq_repoll_lone(&f->sem->q, &f->waiter, w);
	if (r == SB_WAITER_WOKEN)
		return sem_retry(f, w);
	return sb_future_settle(&f->status, r);
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
		if (sem_is_fifo(s)) {
			sem_grant_and_unlock(s, f->permits - remaining, mine);
			return;
		}
		sem_shut_budget_locked(s);
		if (remaining == SB_WAITER_WOKEN) {
			/* Woken but never tried: its waker is spent (`mine` a stale
			 * copy); the unlock passes the wake on. */
			mine = SB_NO_WAKER;
		} else {
			sem_add_spare_locked(s, f->permits - remaining); /* a partial grant */
		}
		sb_wake_batch batch;
		sb_wake_batch_init(&batch);
		sem_unlock_fair(s, &batch, mine);
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

/*
 * Eventually fair mode: a thread about to queue in
 * sb_semaphore_acquire_blocking first watches the word for SB_PARK_SPIN_NS
 * (sb_park_spin_before_queueing), as the mutex's blocking lock does
 * (src/mutex.c has the reasons and its numbers), taking the permits if it
 * sees enough that a newcomer may take: the counter's, with nobody queued,
 * or an open budget's (a woken head in a timed queue outside a phase, where
 * any newcomer may take them).  Permits are mostly held far shorter than
 * the spin, and a thread that queues instead pays a futex wait, its
 * releaser the queue lock and a futex wake.  So the spinner is a barger that
 * takes only what the fairness rules let a barger take without the lock: a
 * phase, or a queue nobody has passed yet, opens no budget, and the spinner
 * then waits for one or for the end of its spin, and queues (its first poll
 * may still barge under the lock, by the same rules).  It queues at once
 * behind a lone waiter (the next release is its) and on CLOSED.  Strict FIFO
 * mode, whose newcomers never pass a queued waiter, does not spin, as the
 * mutex's does not.  The spinning slot and the contention streak (park.h)
 * keep spinners off the cores that holders need.
 */
struct sem_spin {
	sb_semaphore *sem;
	size_t permits;
};

/* One look of the spin (park.h): the permits taken, or a lone waiter to queue behind. */
static enum sb_park_look sem_spin_look(void *arg)
{
	const struct sem_spin *p = arg;
	size_t state = sem_load(p->sem);
	if (state & SB_SEMAPHORE_STATE_CLOSED)
		return SB_PARK_LOOK_QUEUE;
	if (state & SB_WAITQ_NONEMPTY) {
		if (sb_waitq_is_lone(state))
			return SB_PARK_LOOK_QUEUE;
		return sem_budget_take(p->sem, p->permits) ? SB_PARK_LOOK_TAKEN : SB_PARK_LOOK_AGAIN;
	}
	if (sem_count(state) >= p->permits && sem_try_take(p->sem, p->permits) == 0)
		return SB_PARK_LOOK_TAKEN;
	return SB_PARK_LOOK_AGAIN;
}

int sb_semaphore_acquire_blocking(sb_semaphore *s, size_t n, uint64_t timeout_ns)
{
	/* The future's first poll would decide the same way (take the permits
	 * if nobody queues and enough are there); this skips the parker. */
	if (n > 0 && sb_semaphore_try_acquire(s, n) == 0)
		return 0;
	struct sem_spin spin = { s, n };
	/* (n above the maximum: the first poll refuses it; the counter may
	 * hold more than the maximum, saturated, so it must not be taken.) */
	if (!sem_is_fifo(s) && n > 0 && n <= SB_SEMAPHORE_MAX_PERMITS &&
	    sb_park_spin_before_queueing(sem_spin_look, &spin, &timeout_ns))
		return 0;
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, s, n);
	return sb_park_block_on(&f, &sb_semaphore_acquire_ops, timeout_ns);
}
