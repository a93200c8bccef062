/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/rwlock.h>

#include <assert.h>
#include <errno.h>

#include "fairness.h"
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
 *
 * All of the above is the strict FIFO mode (SB_RWLOCK_FIFO), and the
 * handoff phase of the eventually fair mode (the default), which differs
 * thus (docs/design.md, "Eventual fairness"; the time rules are
 * src/fairness.h's, shared with the mutex and the semaphore):
 *
 *   - Whoever lets something in wakes the waiters at the head that may
 *     enter now (rw_wake_run_locked: a writer, or the run of readers up to
 *     the next writer), marking them SB_WAITER_WOKEN, still queued in their
 *     place (the node keeps a stale copy of its waker, never woken or
 *     dropped again); nothing is counted into the word for them.  A woken
 *     waiter's next poll tries again under the queue lock (rw_retry): it
 *     takes what it asked for if the holders allow it, leaving the queue,
 *     or re-arms in its place with a new clone of its waker.
 *   - A newcomer that finds NONEMPTY set, and the holders allowing what it
 *     asks for, takes the queue lock and decides there (rw_barge_locked):
 *     outside a handoff phase it takes the lock past the queue.  The inline
 *     fast paths are unchanged: they need NONEMPTY clear, so every barge
 *     goes through here, and the lock sees each one but the readers' that
 *     the hints let by (below), which it has counted in advance.
 *   - A barge "passes" the head when the head could not share what the
 *     barger took (a writer either way, or a reader behind a writer); so
 *     does a woken waiter's retry that finds the lock taken.  The first
 *     pass times every waiter not yet timed (sb_rwlock_lock.passed_since),
 *     and then every SB_FAIR_CHECKS_EVERY-th barge that passes the same
 *     head compares it with the bound (sb_fair_is_check): the passes are
 *     this lock's hand-overs in the sense of src/fairness.h (a reader's
 *     unlock that is not the last one lets nobody in, and a writer at the
 *     head of a stream of readers is never woken).  An overdue head starts
 *     a handoff phase: handoff_left counts the waiters queued then, the
 *     barger is refused (it queues, a try gets -EAGAIN), and from then on
 *     what frees up is granted in order as in FIFO mode, handoff_left
 *     counting the grants down, until it reaches 0 or the queue empties.
 *     The phase's last grant times the waiters that queued during it at
 *     sb_fair_phase_stamp.
 *   - A waiter granted while WOKEN (by a phase) is unlinked and set
 *     SB_WAITER_GRANTED without a wake: its waker was spent, and its owner
 *     finds the grant when it polls.  A woken waiter that cancels passes
 *     its wake on (it never tried), and one granted passes the grant on.
 *   - The pending upgrade is granted as in FIFO mode, ahead of the queue:
 *     its holder holds the upgradable read already, and UPGRADING stops
 *     barging readers as it stops queued ones.
 *   - The hints, bits 6-11 of the word, let readers pass the queue without
 *     the queue lock where they would find nothing to do under it (as the
 *     mutex's unlock budget, src/mutex.c, lets its unlocks):
 *       SHARED: the head is a woken plain reader.  A reader that enters
 *         beside it passes nobody, and the last reader's unlock has nobody
 *         to wake (see rw_grant_locked): each is one CAS.
 *       QUIET: the head is a woken writer.  The last reader's unlock has
 *         nobody to wake (the writer's retry decides): one CAS.
 *       The budget (bits 6-9): the head is a timed writer (woken or not),
 *         and this many reader barges may pass it before the next one that
 *         compares it with the bound; whoever grants it counts them into
 *         the writer's passes_at_front at once.  Each is one CAS that adds
 *         a reader and takes one from the budget.  A barge that takes the
 *         queue lock (the budget spent, or a writer's) first takes what is
 *         left back out of that count, so the head is checked at exactly
 *         the passes it was checked at before there were hints.
 *     They are set under the queue lock by whoever finds or leaves the head
 *     so: an unlock that wakes it (if it is timed: a queue that nobody
 *     passes needs no hints), a barge that passes it or enters beside it,
 *     the last reader's unlock that finds a woken reader there.  They are
 *     cleared by whoever ends that state under the lock: a retry (SHARED
 *     and QUIET when it waits again, all of them when it takes the lock:
 *     it was the head, the budget's owner), the head's cancel (all of
 *     them), a handoff phase's start (all: a phase has none).  So
 *     they are nonzero only in the eventually fair mode, outside a phase,
 *     with waiters queued; lock-free readers and unlocks read them only
 *     from a word without HELD, and never while an upgrade is pending.
 *     With a writer queued nearly all the time, the read-mostly rows took
 *     the queue lock at 0.9-1.1 barges and 0.6-0.8 last-reader unlocks an
 *     operation, 60 % of their profile; with the hints they take it 5 to
 *     23 times less often (docs/measurements.md).
 */

/* The rwlock's bits of the word (the queue's are below). */
#define RW_BITS (~(size_t)SB_WAITQ_BITS)

/*
 * The hints (see the top of the file), bits 6-11 of the word: the budget of
 * reader barges past a timed writer at the head, SHARED (the head is a woken
 * plain reader) and QUIET (the head is a woken writer).  Nonzero only in the
 * eventually fair mode, outside a handoff phase, with waiters queued.
 */
#define RW_BUDGET_ONE ((size_t)1 << (SB_WAITQ_STATE_SHIFT + 3))
#define RW_BUDGET_MAX 15u
#define RW_BUDGET_BITS ((size_t)RW_BUDGET_MAX * RW_BUDGET_ONE)
#define RW_SHARED (RW_BUDGET_ONE << 4)
#define RW_QUIET (RW_BUDGET_ONE << 5)
#define RW_HINT_BITS (RW_BUDGET_BITS | RW_SHARED | RW_QUIET)
_Static_assert(RW_BUDGET_MAX >= SB_FAIR_CHECKS_EVERY - 1, "a budget reaches the next check");
_Static_assert(RW_QUIET * 2 == SB_RWLOCK_STATE_READER_ONE &&
		       RW_BUDGET_ONE == SB_RWLOCK_STATE_UPGRADING * 2,
	       "the hints lie between the upgrade's bit and the readers' count");

/* What the holders hold and the pending upgrade: the rwlock's bits but the hints. */
#define RW_HELD_BITS (RW_BITS & ~RW_HINT_BITS)

/* The reader barges left in the budget of `state`. */
static inline uint32_t rw_budget_of(size_t state)
{
	return (uint32_t)((state & RW_BUDGET_BITS) / RW_BUDGET_ONE);
}

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

static inline sb_rwlock_lock *rw_future_of(sb_waiter *w)
{
	return SB_CONTAINER_OF(w, sb_rwlock_lock, waiter);
}

static inline bool rw_is_fifo(const sb_rwlock *rw)
{
	return rw->mode & SB_RWLOCK_FIFO;
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
static inline __attribute__((always_inline)) int rw_decide(size_t state, int kind, size_t *next)
{
	/* Tests, not a switch: a jump table cost rwlock/write-queued-behind-
	 * readers 7 instructions at each of its four decisions, most of them a
	 * reader's or a writer's. */
	bool queued = state & (SB_WAITQ_NONEMPTY | SB_RWLOCK_STATE_UPGRADING);
	if (kind == SB_RWLOCK_READ) {
		if (queued || (state & SB_RWLOCK_STATE_WRITER))
			return SB_PENDING;
		if (rw_readers(state) == SB_RWLOCK_MAX_READERS)
			return -EOVERFLOW;
		*next = state + SB_RWLOCK_STATE_READER_ONE;
		return 0;
	}
	if (kind == SB_RWLOCK_WRITE) {
		if (queued || (state & RW_HELD_BITS))
			return SB_PENDING;
		*next = state | SB_RWLOCK_STATE_WRITER;
		return 0;
	}
	if (kind == SB_RWLOCK_UPGRADABLE) {
		if (queued || (state & (SB_RWLOCK_STATE_WRITER | SB_RWLOCK_STATE_UPGRADABLE)))
			return SB_PENDING;
		*next = state | SB_RWLOCK_STATE_UPGRADABLE;
		return 0;
	}
	if (kind == SB_RWLOCK_UPGRADE) {
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

static void rw_grant_and_unlock(sb_rwlock *rw, size_t word, sb_waker drop, bool reader_left);

/* Under the queue lock: sb_fair_time_passed_locked on our futures. */
static void rw_time_passed_locked(sb_rwlock *rw, uint64_t now)
{
	sb_fair_time_passed_locked(rw->q.tail, SB_FAIR_AT(sb_rwlock_lock, passed_since),
				   SB_FAIR_AT(sb_rwlock_lock, passes_at_front), now);
}

/*
 * Under the queue lock, eventually fair mode outside a phase: the hints that
 * the head `w` gives, with the rwlock's bits `word` (see the top of the
 * file): SHARED for a woken plain reader; QUIET for a woken writer, and for
 * a timed one the budget of the reader barges up to its next check, counted
 * now, unless `word` has one.  The caller ORs them into the word.
 */
static size_t rw_hints_locked(sb_waiter *w, size_t word)
{
	int kind = rw_kind(w);
	bool woken = sb_waiter_remaining_locked(w) == SB_WAITER_WOKEN;
	if (kind == SB_RWLOCK_READ)
		return woken ? RW_SHARED : 0;
	if (kind != SB_RWLOCK_WRITE)
		return 0;
	size_t hints = woken ? RW_QUIET : 0;
	sb_rwlock_lock *f = rw_future_of(w);
	if (f->passed_since && !(word & (RW_BUDGET_BITS | SB_RWLOCK_STATE_UPGRADING))) {
		uint32_t budget = sb_fair_budget(f->passes_at_front, RW_BUDGET_MAX);
		f->passes_at_front += budget;
		hints |= budget * RW_BUDGET_ONE;
	}
	return hints;
}

/*
 * Under the queue lock, its head unchanged since the budget in the rwlock's
 * bits `word` was granted to it: the word without the budget, what was left
 * of it taken back out of the head's count.
 */
static inline size_t rw_budget_back_locked(sb_rwlock *rw, size_t word)
{
	uint32_t left = rw_budget_of(word);
	if (left) /* counted, never used */
		rw_future_of(sb_waitq_front(&rw->q))->passes_at_front -= left;
	return word & ~RW_BUDGET_BITS;
}

/* What a newcomer that the holders let in may do (rw_barge_locked). */
enum rw_barge { RW_BARGE, RW_BARGE_REFUSED, RW_BARGE_PHASE_STARTED };

/*
 * Under the queue lock, eventually fair mode: whether a newcomer whose take
 * turns the rwlock bits into *next may pass the waiters, timing the head
 * it passes and comparing it with the bound when it is its turn (see the
 * top of the file); an overdue head starts a handoff phase.  A pass takes
 * the budget back first, so that it is counted where it would be without
 * one, and grants the next one into *next.
 */
static enum rw_barge rw_barge_locked(sb_rwlock *rw, size_t *next)
{
	if (rw->handoff_left)
		return RW_BARGE_REFUSED;
	sb_waiter *head = sb_waitq_front(&rw->q);
	if (head == NULL)
		return RW_BARGE; /* (the last waiter left while we decided) */
	if (sb_waiter_remaining_locked(head) == SB_WAITER_RELEASED_GRANTED)
		return RW_BARGE_REFUSED; /* a granted run on its way out */
	size_t unused;
	if (rw_decide(*next, rw_kind(head), &unused) == 0) {
		*next |= rw_hints_locked(head, *next); /* SHARED, if woken */
		return RW_BARGE; /* the head could share it: not a pass */
	}
	*next = rw_budget_back_locked(rw, *next);
	sb_rwlock_lock *f = rw_future_of(head);
	bool first = !f->passed_since;
	if (first || sb_fair_is_check(f->passes_at_front++)) {
		uint64_t now = sb_fair_now();
		rw_time_passed_locked(rw, now); /* newcomers, and the head if first */
		if (first) {
			f->passes_at_front = 1; /* this pass was its first check */
		} else if (sb_fair_overdue(f->passed_since, now)) {
			rw->handoff_left = sb_waitq_count_from(rw->q.head);
			return RW_BARGE_PHASE_STARTED;
		}
	}
	*next |= rw_hints_locked(head, *next);
	return RW_BARGE;
}

/* What the barge path tells rw_take_or_lock to do. */
enum { RW_DECIDE_AGAIN = SB_PENDING + 2 }; /* none of its other results */

/*
 * Eventually fair mode, `state` (without HELD) having NONEMPTY and the
 * holders letting `kind` in as `next`: takes the queue lock and decides
 * there whether to pass the queue (0, the rwlock taken), to wait (SB_PENDING,
 * the lock held and *locked the word it found; only once *cloned), or to
 * fail (-EAGAIN, a try); or it drops the lock to clone `waker`, or after
 * starting a handoff phase, and says RW_DECIDE_AGAIN.  Out of line and
 * cold: the strict mode's paths, and the fair mode's uncontended ones, keep
 * the code they had without it.
 */
__attribute__((noinline, cold)) static int rw_barge_or_lock(sb_rwlock *rw, size_t state,
							    size_t next, const sb_waker *waker,
							    sb_waker *clone, bool *cloned,
							    size_t *locked)
{
	/* acquire (sb_qlock_try_take): the queue, and when we take the rwlock
	 * too, what its last holders wrote (pairs with the release of every
	 * unlock). */
	if (!sb_qlock_try_take(&rw->q.state, &state, state | SB_QLOCK_HELD, 0))
		return RW_DECIDE_AGAIN;
	size_t word = state & RW_BITS;
	next &= RW_BITS;
	enum rw_barge barge = rw_barge_locked(rw, &next);
	if (barge == RW_BARGE) {
		rw_unlock_publish(rw, next);
		return 0;
	}
	if (barge == RW_BARGE_PHASE_STARTED) {
		/* Grant in order what the word allows, then decide again
		 * (refused now, unless the queue drained); no hints in a
		 * phase. */
		rw_grant_and_unlock(rw, word & ~RW_HINT_BITS, SB_NO_WAKER, false);
		return RW_DECIDE_AGAIN;
	}
	assert(!(word & RW_HINT_BITS)); /* refused: a phase, or a granted run */
	if (waker == NULL) {
		sb_waitq_unlock(&rw->q);
		return -EAGAIN;
	}
	if (!*cloned) {
		/* Refused, we wait: clone the waker, which may re-enter the
		 * library, without the lock, then decide again (a barge clones
		 * nothing). */
		sb_waitq_unlock(&rw->q);
		sb_waker_clone_once(waker, clone);
		*cloned = true;
		return RW_DECIDE_AGAIN;
	}
	*locked = state;
	return SB_PENDING;
}

/*
 * One CAS decides: takes `kind` (0), fails with its error (-EAGAIN when it
 * must wait and `waker` is NULL: a try), or takes the queue lock to wait
 * (SB_PENDING; *clone holds a clone of `waker`, made before the lock, and
 * *locked the word as the lock found it).  The caller drops *clone unless
 * it queues it.  Eventually fair mode: a newcomer that only the queue
 * stops decides under the queue lock whether it may pass it
 * (rw_barge_or_lock).
 */
static int rw_take_or_lock(sb_rwlock *rw, int kind, const sb_waker *waker, sb_waker *clone,
			   size_t *locked)
{
	bool cloned = false; /* by a refused barge */
	size_t state = rw_load(rw);
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&rw->q.state, state);
			continue;
		}
		size_t next;
		int rc = rw_decide(state, kind, &next);
		if (rc == SB_PENDING && (state & SB_WAITQ_NONEMPTY) && !rw_is_fifo(rw) &&
		    rw_decide(state & ~SB_WAITQ_NONEMPTY, kind, &next) == 0) {
			if (kind == SB_RWLOCK_READ && (state & (RW_SHARED | RW_BUDGET_BITS))) {
				/* Beside a woken reader at the head, or past a
				 * writer there within its budget: one CAS. */
				next = state + SB_RWLOCK_STATE_READER_ONE -
				       (state & RW_SHARED ? 0 : RW_BUDGET_ONE);
				rc = 0;
			} else {
				rc = rw_barge_or_lock(rw, state, next, waker, clone, &cloned,
						      locked);
				if (rc != RW_DECIDE_AGAIN)
					return rc;
				state = rw_load(rw);
				continue;
			}
		}
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

int sb_rwlock_init_fifo(sb_rwlock *rw)
{
	*rw = (sb_rwlock)SB_RWLOCK_INIT_FIFO;
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
 * Under the lock, eventually fair mode, a handoff phase: `n` waiters were
 * granted; the phase ends when it has granted every waiter it covers
 * (timing those that queued during it) or when the queue is empty.
 */
__attribute__((noinline, cold)) static void rw_phase_count_slow_locked(sb_rwlock *rw,
									uint32_t n)
{
	if (rw->handoff_left > n) {
		rw->handoff_left -= n;
		return;
	}
	rw->handoff_left = 0;
	rw_time_passed_locked(rw, sb_fair_phase_stamp(sb_fair_now()));
}

static inline void rw_phase_count_locked(sb_rwlock *rw, uint32_t n)
{
	if (rw->handoff_left != 0) /* never in FIFO mode */
		rw_phase_count_slow_locked(rw, n);
}

/*
 * Under the lock: grants `w` what its kind asks for, counted into the word
 * by the caller: detached, its waker into `b`; or, woken already
 * (eventually fair mode, its waker spent), unlinked and set GRANTED, which
 * its owner finds when it polls.
 */
__attribute__((noinline, cold)) static void rw_hand_woken_locked(sb_rwlock *rw, sb_waiter *w)
{
	(void)sb_waitq_unlink(&rw->q, w); /* the stale copy of its waker */
	/* release: hands it the node and the lock (pairs with the acquire
	 * load of its poll, or with our unlock through its retry's lock). */
	atomic_store_explicit(&w->remaining, SB_WAITER_GRANTED, memory_order_release);
}

static inline void rw_hand_locked(sb_rwlock *rw, sb_waiter *w, sb_wake_batch *b)
{
	if (sb_waiter_remaining_locked(w) != SB_WAITER_WOKEN)
		sb_waitq_detach(&rw->q, w, SB_WAITER_GRANTED, b);
	else
		rw_hand_woken_locked(rw, w);
}

/*
 * Under the lock: the head `w` (a reader of some kind) was found grantable:
 * grants it and the run of readers behind it, up to the first that may not
 * enter (a writer, a second upgradable reader, a full count), counting them
 * all into *word and marking them released (see the top of the file); a
 * woken one is granted at once (rw_hand_locked).
 */
static void rw_release_run_locked(sb_rwlock *rw, sb_waiter *w, size_t *word)
{
	size_t next;
	uint32_t n = 0;
	while (w && rw_decide(*word, rw_kind(w), &next) == 0) {
		sb_waiter *after = w->next;
		*word = next;
		if (sb_waiter_remaining_locked(w) == SB_WAITER_WOKEN)
			rw_hand_woken_locked(rw, w); /* no wake */
		else
			sb_waiter_set_remaining_locked(w, SB_WAITER_RELEASED_GRANTED);
		n++;
		w = after;
	}
	rw_phase_count_locked(rw, n);
}

/*
 * Under the lock, eventually fair mode outside a handoff phase: wakes the
 * head `w`, which the caller found may enter as `next`, and, if it is a
 * reader, the run of readers behind it that may enter with it, up to the
 * next writer, leaving them queued (see the top of the file); those woken
 * already are skipped.  Returns false when `b` filled up before the run
 * ended.  The head's decision is the caller's: deciding it again here cost
 * every wake a second rw_decide.  Inlined into rw_grant_locked: out of line
 * it kept the strict mode's grant small, but costs the fair mode's wake a
 * call; a strict-mode variant of rwlock/write-queued-behind-readers runs 355
 * instructions a round inlined, 353 out of line.
 */
static bool rw_wake_run_locked(sb_waiter *w, size_t next, sb_wake_batch *b)
{
	for (;;) {
		bool writer = rw_kind(w) == SB_RWLOCK_WRITE;
		if (sb_waiter_remaining_locked(w) != SB_WAITER_WOKEN) {
			if (sb_wake_batch_is_full(b))
				return false;
			b->wakers[b->count++] = w->waker;
			/* relaxed: the owner acts on WOKEN only under the queue
			 * lock (its retry), whose acquire pairs with our unlock. */
			sb_waiter_set_remaining_locked(w, SB_WAITER_WOKEN);
		}
		if (writer)
			return true;
		size_t word = next; /* as if it entered: one upgradable reader at most */
		w = w->next;
		if (!w || rw_kind(w) == SB_RWLOCK_WRITE || rw_decide(word, rw_kind(w), &next) != 0)
			return true;
	}
}

/*
 * Under the lock (which it may drop between batches, and holds again when it
 * returns): grants what the word `*word` now allows - the pending upgrade
 * first, then the head of the queue - updating *word; or, eventually fair
 * mode outside a handoff phase, wakes the head that may enter.  Wakes go
 * into `b`.
 *
 * `reader_left`: a plain reader's unlock got us here.  Then, eventually fair
 * mode outside a handoff phase, a woken plain reader at the head means there
 * is nobody to wake: the run is not walked again.  A reader's unlock lets in
 * no reader that could not enter before it (readers share; an upgradable
 * reader waits for the upgradable read, not for them), only a writer at the
 * head or the pending upgrade (served above); and the run at the head was
 * woken by whoever let it in: those who queued in it or re-armed there
 * since did so while a writer held the lock or a phase ran, and that
 * writer's unlock, or the phase's end, walks the run again.  Walking it at
 * every last reader's unlock cost the read-mostly task rows about a quarter
 * of their time (docs/design.md, "The read-write lock").
 */
static void rw_grant_locked(sb_rwlock *rw, size_t *word, sb_wake_batch *b, bool reader_left)
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
		if (w == NULL)
			rw->handoff_left = 0; /* the phase ends with the queue */
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
		if (!rw_is_fifo(rw) && rw->handoff_left == 0) {
			if (reader_left && kind == SB_RWLOCK_READ &&
			    sb_waiter_remaining_locked(w) == SB_WAITER_WOKEN) {
				*word |= RW_SHARED;
				return; /* nobody to wake (see above) */
			}
			if (rw_wake_run_locked(w, next, b)) {
				/* w is WOKEN; a queue that nobody passes needs no hints */
				if (rw_future_of(w)->passed_since)
					*word |= rw_hints_locked(w, *word);
				return;
			}
			continue; /* the batch is full: flush, then wake the rest */
		}
		if (kind == SB_RWLOCK_WRITE) {
			*word = next;
			rw_phase_count_locked(rw, 1);
			rw_hand_locked(rw, w, b);
			if (sb_waitq_is_empty(q))
				rw->handoff_left = 0; /* the phase ends with the queue */
			return;
		}
		rw_release_run_locked(rw, w, word);
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

/*
 * Under the lock, holding the rwlock's bits `word`: grants, unlocks, wakes
 * (`reader_left`: see rw_grant_locked).
 */
static void rw_grant_and_unlock(sb_rwlock *rw, size_t word, sb_waker drop, bool reader_left)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	rw_grant_locked(rw, &word, &batch, reader_left);
	rw_unlock_publish(rw, word);
	sb_waitq_after_unlock(&batch, drop);
}

/*
 * Gives back `what` under the lock and hands on what that frees.  Inlined
 * into each caller, whose `what` is mostly constant, so that the switches on
 * it fold: rwlock/write-queued-behind-readers went from 482 instructions a
 * round (487 with reader_left passed on) to 471.
 */
static inline __attribute__((always_inline)) int rw_release(sb_rwlock *rw, enum rw_giveback what)
{
	size_t word = rw_lock(rw);
	int rc = rw_giveback_word(&word, what);
	if (rc) {
		sb_waitq_unlock(&rw->q);
		return rc;
	}
	rw_grant_and_unlock(rw, word, SB_NO_WAKER, what == RW_READ_UNLOCK);
	return 0;
}

int sb_rwlock_read_unlock_slow(sb_rwlock *rw)
{
	size_t state = rw_load(rw);
	/* With SHARED or QUIET the head is woken: nobody to let in (see the
	 * top of the file), unless an upgrade waits for us. */
	while ((state & (RW_SHARED | RW_QUIET)) && rw_readers(state) &&
	       !(state & (SB_QLOCK_HELD | SB_RWLOCK_STATE_UPGRADING))) {
		/* release: the next writer sees our reads done (pairs with the
		 * acquire of its lock: the queue lock of its retry, or its CAS). */
		if (atomic_compare_exchange_weak_explicit(&rw->q.state, &state,
							  state - SB_RWLOCK_STATE_READER_ONE,
							  memory_order_release, memory_order_relaxed))
			return 0;
	}
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
	/* Here, not in init: only a future that waits reads it. */
	f->passed_since = 0;
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

/*
 * Eventually fair mode, a woken future tries again: under the queue lock it
 * takes what it asked for if the holders allow it and no handoff phase is
 * on, leaving the queue; finds it was granted meanwhile (by a phase); or
 * re-arms in its place with `waker`, passed.
 */
static int rw_retry(sb_rwlock_lock *f, const sb_waker *waker)
{
	sb_rwlock *rw = f->rwlock;
	sb_waiter *node = &f->waiter;
	sb_waker clone = SB_NO_WAKER;
	bool cloned = false;
	for (;;) {
		/* acquire (the queue lock): the critical sections of the holders
		 * before us when we take the rwlock (pairs with their release). */
		size_t word = rw_lock(rw);
		size_t r = sb_waiter_remaining_locked(node);
		size_t next;
		if (r == SB_WAITER_GRANTED) {
			/* Granted by a phase: unlinked, counted in the word. */
			sb_waitq_unlock(&rw->q);
			sb_waker_drop_if(clone);
			return 0;
		}
		assert(r == SB_WAITER_WOKEN);
		if (rw->handoff_left == 0 && rw_decide(word, f->kind, &next) == 0) {
			/* The hints go with us: a woken waiter behind a writer
			 * at the head, the budget's owner, cannot be. */
			next &= ~RW_HINT_BITS;
			(void)sb_waitq_unlink(&rw->q, node); /* its waker was spent */
			rw_unlock_publish(rw, next);
			sb_waker_drop_if(clone);
			return 0;
		}
		if (!cloned) {
			/* We wait again: clone the waker, which may re-enter the
			 * library, without the lock (still WOKEN meanwhile: only
			 * a phase's grant changes that), then decide again. */
			sb_waitq_unlock(&rw->q);
			sb_waker_clone_once(waker, &clone);
			cloned = true;
			continue;
		}
		/* Taken by a newcomer first (or a phase serves those ahead):
		 * wait in place, woken by the next that lets us in. */
		if (!f->passed_since)
			rw_time_passed_locked(rw, sb_fair_now());
		word &= ~(RW_SHARED | RW_QUIET); /* no longer woken */
		node->waker = clone;
		sb_waiter_set_remaining_locked(node, 1);
		rw_unlock_publish(rw, word); /* re-armed: the last reader wakes us */
		return SB_PENDING;
	}
}

/* A queued future: woken, it retries; otherwise a plain re-poll. */
static int rw_lock_repoll(void *future, const sb_waker *waker)
{
	sb_rwlock_lock *f = future;
	size_t r = sb_waiter_load(&f->waiter);
	/* (woken meanwhile: the re-poll leaves the node alone and says so) */
	if (r != SB_WAITER_WOKEN)
		r = sb_waitq_repoll(&f->rwlock->q, &f->waiter, waker);
	if (r == SB_WAITER_WOKEN)
		return rw_retry(f, waker);
	return sb_future_settle(&f->status, r);
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
	rw_grant_and_unlock(rw, word, mine, false);
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
	/* sb_waitq_lock_for_cancel, with a look at the head in between */
	size_t remaining = sb_waiter_load(&f->waiter);
	sb_waker mine;
	if (!sb_waiter_is_detached(remaining)) {
		size_t word = rw_lock(rw);
		bool head = sb_waitq_front(&rw->q) == &f->waiter;
		if (sb_waitq_cancel_or_unlock(&rw->q, &f->waiter, &remaining, &mine)) {
			/* Unlinked: if it was the head, those behind may enter
			 * now, and its hints go with it (a budget's count with
			 * its owner); behind it, the head keeps them.  Woken but
			 * never tried, it passes the wake on (the node's waker
			 * is a stale copy, already woken). */
			if (remaining == SB_WAITER_WOKEN)
				mine = SB_NO_WAKER;
			rw_grant_and_unlock(rw, head ? word & ~RW_HINT_BITS : word, mine, false);
			return;
		}
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

/*
 * Eventually fair mode: a thread about to queue in a blocking read or write
 * first spins as the mutex's blocking lock does (sb_park_spin_before_queueing;
 * src/mutex.c says why), taking the lock when the holders let it in with
 * nobody queued, and stopping when it finds waiters queued.  What it waits
 * for:
 */
typedef struct rw_spin {
	sb_rwlock *rw;
	int kind;
} rw_spin;

/* One look of the spin: the lock taken, or waiters to queue behind. */
static enum sb_park_look rw_spin_look(void *arg)
{
	const rw_spin *spin = arg;
	size_t state = rw_load(spin->rw);
	size_t next;
	if (state & SB_WAITQ_NONEMPTY)
		return SB_PARK_LOOK_QUEUE;
	if (rw_decide(state, spin->kind, &next) == 0 &&
	    rw_take_or_lock(spin->rw, spin->kind, NULL, NULL, NULL) == 0)
		return SB_PARK_LOOK_TAKEN;
	return SB_PARK_LOOK_AGAIN;
}

/* The spin, in eventually fair mode: true if it took `kind`. */
static bool rw_spin_before_queueing(sb_rwlock *rw, int kind, uint64_t *timeout_ns)
{
	rw_spin spin = { rw, kind };
	return !rw_is_fifo(rw) && sb_park_spin_before_queueing(rw_spin_look, &spin, timeout_ns);
}

int sb_rwlock_read_blocking(sb_rwlock *rw, uint64_t timeout_ns)
{
	/* The future's first poll decides the same way; this skips the parker. */
	if (sb_rwlock_try_read(rw) == 0)
		return 0;
	if (rw_spin_before_queueing(rw, SB_RWLOCK_READ, &timeout_ns))
		return 0;
	return rw_block_on(rw, SB_RWLOCK_READ, timeout_ns);
}

int sb_rwlock_write_blocking(sb_rwlock *rw, uint64_t timeout_ns)
{
	if (sb_rwlock_try_write(rw) == 0)
		return 0;
	if (rw_spin_before_queueing(rw, SB_RWLOCK_WRITE, &timeout_ns))
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
