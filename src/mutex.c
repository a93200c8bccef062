/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/mutex.h>

#include <assert.h>
#include <errno.h>

#include "fairness.h"
#include "park.h"
#include "wait_future.h"

/*
 * The state word (its layout is ABI, in <syncband/mutex.h>): the queue's
 * bits and SB_MUTEX_STATE_LOCKED ("LOCKED" below).
 *
 * The uncontended lock is CAS(0 -> LOCKED) and the uncontended unlock
 * CAS(LOCKED -> 0), both inline in the header: any other value means someone
 * waits or is deciding to, and sends them here (the *_slow functions).
 *
 * The lost wake-up that this layout closes: an unlocker that sees "no
 * waiters" and a locker that has just decided to wait.  Both sides change
 * the one word with a CAS, so one of them sees the other:
 *
 *   unlocker                          locker
 *   --------                          ------
 *                                     CAS(LOCKED -> LOCKED|QLOCK)   (a)
 *   CAS(LOCKED -> 0)  (b)             push node
 *                                     unlock queue: LOCKED|NONEMPTY
 *
 *   - (b) before (a): (a) fails, the locker re-reads 0 and takes the mutex.
 *   - (a) before (b): (b) fails (the word is not LOCKED alone), and the
 *     unlocker takes the queue lock, which the locker holds until its node
 *     is pushed, and wakes it or hands the mutex to it.
 *
 * No load-then-decide on separate words, so no barrier pairing is needed
 * beyond the CASes themselves (contrast waitqueue_active() in Linux).
 *
 * While someone holds the queue lock, nobody else changes LOCKED
 * (every locker and unlocker waits for the lock bit first), so whatever a
 * lock holder decides from LOCKED stays true until it unlocks.
 *
 * Bits 4 and up are free, so a first waiter waits as a lone waiter (see
 * src/lone.h): `node | NONEMPTY | LOCKED`, installed with one CAS (the
 * CAS (a) above).
 *
 * Strict FIFO mode: SB_WAITQ_NONEMPTY implies LOCKED, since a contended
 * unlock never clears LOCKED but detaches the head with the mutex
 * (SB_WAITER_GRANTED); an unlock claims a lone waiter with one CAS back to
 * LOCKED alone, the mutex now the waiter's.
 *
 * Eventually fair mode: a contended unlock takes the queue lock (adopting a
 * lone waiter into the queue) and, unless the head starves, clears
 * LOCKED and marks the head SB_WAITER_WOKEN: still queued at the
 * front, its registered waker moved into the wake batch (the node keeps a
 * stale copy, which is never woken or dropped again).  While the head is
 * WOKEN, unlocks wake nobody.  A locker that finds the mutex free takes it,
 * waiters or not (barging).  The woken owner's next poll tries again
 * (mutex_retry): it takes the queue lock, with LOCKED too if the
 * mutex is free, and leaves the queue holding it; or it re-arms at the
 * front, with a new clone of its waker.
 *
 * The unlock budget: an unlock that finds the head WOKEN has nothing to do
 * but clear LOCKED, unless it is the one that compares the head with the
 * bound (below).  So the unlock that leaves a timed head WOKEN also writes,
 * in bits 4-7 of the word (with NONEMPTY, and no lone address: src/lone.h),
 * how many unlocks may go by before that check, and counts them in the
 * head's unlocks_at_front at once; each of them is one CAS that clears
 * LOCKED and takes one from the budget, without the queue lock.  Whoever
 * ends the head's WOKEN state under the lock (its retry, its cancel) clears
 * the budget, and a retry that re-arms takes what was left of it back out
 * of unlocks_at_front, so the head is checked at exactly the unlocks it was
 * checked at before there was a budget.  Bits 4-7 are nonzero only while
 * the head is WOKEN and nobody hands off; an unlock spends them only from a
 * word without the queue lock held, and one that finds them zero takes the
 * queue lock as below.  With 8 and 16 threads on
 * 2 cores, the bargers' unlocks were most of the queue lock's traffic:
 * taken off the lock, 8 and 16 blocking threads ran 24 and 34 percent fewer
 * nanoseconds an operation, and 8 and 16 executor threads with pinned tasks
 * 30 percent fewer.
 *
 * Starvation, by the rules of src/fairness.h (shared with the semaphore):
 * a waiter is timed (sb_mutex_lock.passed_since) from the first time a
 * barger passes it: an unlock that finds the head still WOKEN
 * (a barger took the mutex before the head could try), or a woken head that
 * loses its retry, passes the whole queue, and starts the clock of every
 * waiter not yet timed (mutex_time_passed_locked).  An unlock whose head was
 * passed more than SB_MUTEX_FAIRNESS_BOUND_NS ago hands the mutex to it as in
 * FIFO mode (also to a WOKEN head: it finds SB_WAITER_GRANTED when it tries
 * again) and starts a handoff phase: the next unlocks hand off too, to every
 * waiter that was queued behind it then (handoff_left counts them down; the
 * phase also ends when the queue empties, a handoff or a cancel taking its
 * last waiter), so that the waiters queued behind the starving one drain in
 * order instead of each starving in turn - in a deep queue each would
 * otherwise wait for the bound after every one ahead of it.  Newcomers queue
 * behind and are not covered.  The phase's last handoff times them, as if
 * first passed half a bound before it (SB_FAIR_PHASE_GAP_NS): so lockers get
 * half a bound between phases, and a queue that drains by handoffs more
 * slowly than the bound does not go from phase to phase (a convoy, 130
 * times slower with 1024 tasks on 16 pinned executor threads, when they were
 * timed from when they queued).  A queue served in order, nobody barging,
 * is never timed.  Why everyone at the first pass: src/fairness.h (on an
 * executor, a head's task runs only once the barger's task, on the same
 * thread, has finished, so it can lose many races in a row).
 *
 * The clock is read when a barger first passes a head or a head loses its
 * first retry, and then at every 16th unlock that finds the same timed head
 * (sb_fair_is_check); never in FIFO mode, nor in a queue served in order,
 * nor on the uncontended paths.
 */
static inline size_t mutex_load(const sb_mutex *m)
{
	return sb_waitq_load(&m->q);
}

static inline bool mutex_is_fifo(const sb_mutex *m)
{
	return m->mode & SB_MUTEX_FIFO;
}

int sb_mutex_init(sb_mutex *m)
{
	*m = (sb_mutex)SB_MUTEX_INIT;
	return 0;
}

int sb_mutex_init_fifo(sb_mutex *m)
{
	*m = (sb_mutex)SB_MUTEX_INIT_FIFO;
	return 0;
}

int sb_mutex_destroy(sb_mutex *m)
{
	if (mutex_load(m) != 0)
		return -EBUSY;
	sb_waitq_poison(&m->q);
	return 0;
}

bool sb_mutex_is_locked(const sb_mutex *m)
{
	return mutex_load(m) & SB_MUTEX_STATE_LOCKED;
}

int sb_mutex_try_lock_slow(sb_mutex *m)
{
	size_t state = mutex_load(m);
	for (;;) {
		/* In FIFO mode the mutex is never free while anyone waits, so
		 * taking a free one never barges there. */
		if (state & SB_MUTEX_STATE_LOCKED)
			return -EBUSY;
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&m->q.state, state);
			continue;
		}
		/* acquire: the critical section sees what the last holder wrote
		 * (pairs with the release of every unlock). */
		if (atomic_compare_exchange_weak_explicit(&m->q.state, &state,
							  state | SB_MUTEX_STATE_LOCKED,
							  memory_order_acquire, memory_order_relaxed))
			return 0;
	}
}

static sb_mutex_lock *mutex_lock_of(sb_waiter *w)
{
	return SB_CONTAINER_OF(w, sb_mutex_lock, waiter);
}

/* Under the queue lock: sb_fair_time_passed_locked on our futures. */
static void mutex_time_passed_locked(sb_mutex *m, uint64_t now)
{
	sb_fair_time_passed_locked(m->q.tail, SB_FAIR_AT(sb_mutex_lock, passed_since),
				   SB_FAIR_AT(sb_mutex_lock, unlocks_at_front), now);
}

/* The unlock budget (see the top of the file): bits 4-7 of the word. */
#define MUTEX_BUDGET_ONE ((size_t)1 << SB_WAITQ_LONE_SHIFT)
#define MUTEX_BUDGET_MAX 15u
#define MUTEX_BUDGET_BITS ((size_t)MUTEX_BUDGET_MAX << SB_WAITQ_LONE_SHIFT)
_Static_assert(MUTEX_BUDGET_MAX >= SB_FAIR_CHECKS_EVERY - 1, "a budget reaches the next check");
_Static_assert(MUTEX_BUDGET_BITS < SB_WAITQ_LONE_MIN, "a budget must never read as a lone address");

/* Whether `state`, a word without the queue lock held, carries an unlock budget. */
static inline bool mutex_has_budget(size_t state)
{
	return state - MUTEX_BUDGET_ONE < MUTEX_BUDGET_BITS; /* bits 4-7 nonzero, none above */
}

/* The unlocks left in the budget of `state`, which holds no lone address. */
static inline uint32_t mutex_budget_of(size_t state)
{
	return (uint32_t)((state & MUTEX_BUDGET_BITS) >> SB_WAITQ_LONE_SHIFT);
}

/*
 * Under the queue lock, a timed head that this unlock leaves WOKEN: lets the
 * unlocks up to its next check go by without the lock, counting them now.
 */
static void mutex_grant_budget_locked(sb_mutex *m, sb_mutex_lock *f)
{
	uint32_t budget = sb_fair_budget(f->unlocks_at_front, MUTEX_BUDGET_MAX);
	if (budget == 0)
		return; /* the next unlock is its check: nothing to let by */
	f->unlocks_at_front += budget;
	/* relaxed: nobody reads the budget while we hold the lock (its bits
	 * count only in a word without HELD); our unlock's release publishes
	 * it.  An RMW, not a store: a waiter may set PARKED meanwhile. */
	atomic_fetch_add_explicit(&m->q.state, budget * MUTEX_BUDGET_ONE, memory_order_relaxed);
}

/*
 * Under the queue lock, a head that a barger has passed (now, if `first`):
 * whether it was passed longer ago than the bound, looking at the clock
 * only when it is its turn (timing the newcomers then); if not, this unlock
 * leaves it WOKEN, with a budget up to its next turn.  Out of line: the
 * common unlock, a head nobody passed, then needs no more registers than it
 * did before there was a clock (mutex/four-queued-waiters counts them).
 */
__attribute__((noinline)) static bool mutex_head_starves_locked(sb_mutex *m, sb_mutex_lock *f,
								 bool first)
{
	if (first || sb_fair_is_check(f->unlocks_at_front++)) {
		uint64_t now = sb_fair_now();
		mutex_time_passed_locked(m, now); /* newcomers, and the head if first */
		if (first)
			f->unlocks_at_front = 1; /* this unlock was its first check */
		if (sb_fair_overdue(f->passed_since, now))
			return true;
	}
	mutex_grant_budget_locked(m, f);
	return false;
}

/*
 * Under the queue lock: whether this unlock hands the mutex to `head`
 * instead of waking it, updating the handoff phase.
 */
static bool mutex_hands_off_locked(sb_mutex *m, sb_waiter *head)
{
	if (mutex_is_fifo(m))
		return true;
	if (m->handoff_left) {
		m->handoff_left--; /* in a phase: every waiter it covers, in turn */
		return true;
	}
	sb_mutex_lock *f = mutex_lock_of(head);
	/* A head still woken at this unlock was passed by the barger now
	 * unlocking before it could try, even if it is never polled (its
	 * thread busy running that barger). */
	bool first = !f->passed_since;
	if (first && sb_waiter_remaining_locked(head) != SB_WAITER_WOKEN)
		return false; /* nobody barged past it: served in order, no clock */
	if (!mutex_head_starves_locked(m, f, first))
		return false;
	m->handoff_left = sb_waitq_count_from(head->next);
	return true;
}

/*
 * Under the queue lock, at a phase's last handoff: times the waiters that
 * queued during the phase, half a bound before now (SB_FAIR_PHASE_GAP_NS).
 */
static void mutex_time_phase_newcomers_locked(sb_mutex *m)
{
	mutex_time_passed_locked(m, sb_fair_phase_stamp(sb_fair_now()));
}

/*
 * Under the queue lock, eventually fair mode, about to hand the mutex to
 * `handed`: the phase goes on to the waiter behind it, or ends with its
 * newcomers timed, or with the queue.  Called before the handoff, while the
 * node is still the queue's.  Out of line and cold: the common unlock, a
 * wake, then keeps the registers it had without it (a plain noinline call
 * here cost mutex/four-queued-waiters 12 instructions a round, the compiler
 * keeping the mutex in a saved register for it).
 */
__attribute__((noinline, cold)) static void mutex_phase_next_locked(sb_mutex *m,
								    const sb_waiter *handed)
{
	if (!handed->next)
		m->handoff_left = 0; /* the phase ends with the queue */
	else if (!m->handoff_left)
		mutex_time_phase_newcomers_locked(m);
}

/* Under the queue lock: hands the mutex to `head` (LOCKED stays set). */
static void mutex_hand_off_locked(sb_mutex *m, sb_waiter *head, sb_wake_batch *b)
{
	if (sb_waiter_remaining_locked(head) != SB_WAITER_WOKEN) {
		sb_waitq_detach(&m->q, head, SB_WAITER_GRANTED, b);
		return;
	}
	/* Woken already (its waker is spent): it finds the mutex when it
	 * tries again.  release: hands it the node and the mutex. */
	(void)sb_waitq_unlink(&m->q, head);
	atomic_store_explicit(&head->remaining, SB_WAITER_GRANTED, memory_order_release);
}

/*
 * Under the queue lock, the mutex free or about to be: wakes `head` unless
 * it is woken already.  Its waker goes into `b` and the node keeps its place.
 */
static void mutex_wake_locked(sb_waiter *head, sb_wake_batch *b)
{
	if (sb_waiter_remaining_locked(head) == SB_WAITER_WOKEN)
		return;
	b->wakers[b->count++] = head->waker;
	/* relaxed: the owner acts on WOKEN only through the word (its retry
	 * takes the queue lock, whose acquire pairs with our unlock). */
	sb_waiter_set_remaining_locked(head, SB_WAITER_WOKEN);
}

/* Under the queue lock, which `m`'s unlock took: hands over or releases. */
static void mutex_pass_locked(sb_mutex *m)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waiter *head = sb_waitq_front(&m->q);
	if (head && mutex_hands_off_locked(m, head)) {
		if (!mutex_is_fifo(m))
			mutex_phase_next_locked(m, head);
		mutex_hand_off_locked(m, head, &batch);
		sb_waitq_unlock(&m->q); /* still LOCKED: it is the head's now */
	} else {
		if (head)
			mutex_wake_locked(head, &batch);
		else
			m->handoff_left = 0; /* nobody left to hand to */
		/* release (in the unlock): as a plain unlock. */
		sb_waitq_unlock_update(&m->q, SB_MUTEX_STATE_LOCKED, 0);
	}
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

int sb_mutex_unlock_slow(sb_mutex *m)
{
	size_t state = mutex_load(m);
	for (;;) {
		if (!(state & SB_MUTEX_STATE_LOCKED))
			return -EPERM;
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&m->q.state, state);
			continue;
		}
		if (state == SB_MUTEX_STATE_LOCKED) {
			/* release: the next holder sees our critical section. */
			if (atomic_compare_exchange_weak_explicit(&m->q.state, &state, 0,
								  memory_order_release,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (mutex_has_budget(state)) {
			/* Past a woken head, not its check: as a plain unlock
			 * (release: the next holder sees our critical section). */
			if (atomic_compare_exchange_weak_explicit(&m->q.state, &state,
								  state - SB_MUTEX_STATE_LOCKED - MUTEX_BUDGET_ONE,
								  memory_order_release,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (sb_waitq_is_lone(state) && mutex_is_fifo(m)) {
			/* Hand it to the lone waiter: still LOCKED, now its. */
			if (sb_waitq_claim_lone(&m->q, &state, SB_MUTEX_STATE_LOCKED))
				return 0;
			continue;
		}
		/* Someone waits, and only we can clear LOCKED: take the queue
		 * lock (acquire, sb_qlock_try_take), adopting a lone waiter. */
		if (sb_qlock_try_take(&m->q.state, &state, sb_waitq_lock_word(state, 0), 0)) {
			sb_waitq_adopt_lone(&m->q, state);
			break;
		}
	}
	mutex_pass_locked(m);
	return 0;
}

/* First poll: take the mutex, wait alone, or queue (one CAS decides which). */
static int mutex_lock_first_poll(void *future, const sb_waker *w)
{
	sb_mutex_lock *f = future;
	sb_mutex *m = f->mutex;
	sb_waiter *node = &f->waiter;
	/* Here, not in init: only a future that waits reads it. */
	f->passed_since = 0;
	bool may_be_lone = sb_waiter_may_be_lone(node);
	sb_waker clone = SB_NO_WAKER;
	size_t state = mutex_load(m);
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&m->q.state, state);
			continue;
		}
		size_t next;
		if (!(state & SB_MUTEX_STATE_LOCKED)) {
			next = state | SB_MUTEX_STATE_LOCKED; /* free: ours, waiters or not */
		} else if (!(state & SB_WAITQ_NONEMPTY) && may_be_lone) {
			sb_waiter_prepare_lone(node, w, &clone);
			next = (uintptr_t)node | SB_WAITQ_NONEMPTY | SB_MUTEX_STATE_LOCKED;
		} else {
			sb_waker_clone_once(w, &clone); /* before the lock: it may re-enter */
			next = sb_waitq_lock_word(state, 0);
		}
		/* acq_rel: acquire, as try_lock when we take the mutex, as the
		 * queue lock otherwise (see the diagram above); release, a lone
		 * node is filled in before an unlocker can see it. */
		if (atomic_compare_exchange_weak_explicit(&m->q.state, &state, next,
							  memory_order_acq_rel, memory_order_relaxed))
			return sb_waitq_finish_first_poll(&m->q, node, state, next, clone, 1);
	}
}

/*
 * A woken future tries again: takes the queue lock, and the mutex with it
 * when it is free.  Then it leaves the queue holding the mutex, or finds it
 * was handed the mutex meanwhile, or re-arms at the front with `w`.
 */
static int mutex_retry(sb_mutex_lock *f, const sb_waker *w)
{
	sb_mutex *m = f->mutex;
	sb_waiter *node = &f->waiter;
	sb_waker clone = SB_NO_WAKER;
	size_t state = mutex_load(m);
	for (;;) {
		if (state & SB_QLOCK_HELD) {
			state = sb_qlock_wait(&m->q.state, state);
			continue;
		}
		if (state & SB_MUTEX_STATE_LOCKED)
			sb_waker_clone_once(w, &clone); /* we may have to wait again */
		/* acquire: the queue lock, and the critical section of the last
		 * holder when we take the mutex too (pairs with unlock's release).
		 * A lone waiter can be there only if we were handed the mutex and
		 * left the queue: it joins the queue. */
		if (sb_qlock_try_take(&m->q.state, &state, sb_waitq_lock_word(state, 0) | SB_MUTEX_STATE_LOCKED,
				      0)) {
			state = sb_waitq_adopt_lone(&m->q, state);
			break;
		}
	}
	size_t r = sb_waiter_remaining_locked(node);
	if (r == SB_WAITER_GRANTED || !(state & SB_MUTEX_STATE_LOCKED)) {
		/* Handed the mutex (detached), or took it: leave the queue, and
		 * its budget with it (the next head is not woken). */
		if (r != SB_WAITER_GRANTED)
			(void)sb_waitq_unlink(&m->q, node); /* its waker was spent */
		sb_waitq_unlock_update(&m->q, MUTEX_BUDGET_BITS, 0);
		sb_waker_drop_if(clone);
		return 0;
	}
	/* A barger holds it: stay at the front, woken by the next unlock. */
	assert(r == SB_WAITER_WOKEN);
	if (!f->passed_since)
		mutex_time_passed_locked(m, sb_fair_now());
	f->unlocks_at_front -= mutex_budget_of(state); /* counted, never used */
	node->waker = clone;
	sb_waiter_set_remaining_locked(node, 1);
	sb_waitq_unlock_update(&m->q, MUTEX_BUDGET_BITS, 0); /* re-armed: unlocks wake it */
	return SB_PENDING;
}

/* A queued future: woken, it retries; otherwise a plain re-poll. */
static int mutex_lock_repoll(void *future, const sb_waker *w)
{
	sb_mutex_lock *f = future;
	size_t r = sb_waiter_load(&f->waiter);
	/* (woken meanwhile: the re-poll leaves the node alone and says so) */
	if (r != SB_WAITER_WOKEN)
		r = sb_waitq_repoll_lone(&f->mutex->q, &f->waiter, w);
	/* One call site, so that mutex_retry is inlined here. */
	if (r == SB_WAITER_WOKEN)
		return mutex_retry(f, w);
	return sb_future_settle(&f->status, r);
}

int sb_mutex_lock_poll_slow(sb_mutex_lock *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->mutex, f, w, mutex_lock_first_poll,
				   mutex_lock_repoll);
}

/* Under the queue lock: a woken future left; wake the next if the mutex is free. */
static void mutex_pass_wake_and_unlock(sb_mutex *m)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waiter *head = sb_waitq_front(&m->q);
	/* A holder's unlock wakes the new head; only a free mutex needs us. */
	if (head && !(mutex_load(m) & SB_MUTEX_STATE_LOCKED))
		mutex_wake_locked(head, &batch);
	sb_waitq_unlock_update(&m->q, MUTEX_BUDGET_BITS, 0); /* the budget was the woken one's */
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

void sb_mutex_lock_cancel(sb_mutex_lock *f)
{
	if (!sb_future_begin_cancel(&f->status))
		return;
	sb_mutex *m = f->mutex;
	size_t remaining;
	sb_waker mine;
	switch (sb_waitq_cancel_lone(&m->q, &f->waiter, SB_MUTEX_STATE_LOCKED, &remaining, &mine)) {
	case SB_CANCEL_WITHDRAWN:
		sb_waker_drop(mine);
		return;
	case SB_CANCEL_UNLINKED:
		if (sb_waitq_is_empty(&m->q))
			m->handoff_left = 0; /* the phase ends with the queue */
		if (remaining == SB_WAITER_WOKEN) {
			/* Woken but never tried: its waker is spent; pass the wake on. */
			mutex_pass_wake_and_unlock(m);
			return;
		}
		sb_waitq_unlock(&m->q);
		sb_waitq_after_unlock(NULL, mine);
		return;
	case SB_CANCEL_DETACHED:
		/* Handed the mutex but never observed it: pass it on. */
		sb_mutex_unlock(m);
		return;
	}
}

SB_FUTURE_OPS(sb_mutex_lock_ops, sb_mutex_lock, sb_mutex_lock_poll, sb_mutex_lock_cancel);

/*
 * Eventually fair mode: a thread about to queue in sb_mutex_lock_blocking
 * first watches the word for SB_PARK_SPIN_NS (sb_park_spin_before_queueing),
 * taking the mutex if it sees it free.  Critical sections are mostly far shorter than that, and a thread
 * that queues instead pays a futex wait, its unlocker a futex wake, and both
 * their slow paths until it retries: two threads pinned to two cores that
 * queued at once ran 20 to 101 ns an operation, against 12 to 20 with this
 * spin (pthread_mutex_t: 26 to 46).
 *
 * It reads the word once every SB_PARK_SPIN_POLL_NS, pausing in between and
 * timing itself by the clock, not by a count of pauses (whose length differs
 * tenfold between CPUs): every read pulls the line away from the holder's
 * core, and polled every 200 ns instead the same two threads ran 17 to 40
 * ns.  It stops early, and queues, on finding waiters queued: they sleep
 * because the mutex stayed held through their own spins, and a spinner that
 * barged past them would only lengthen their wait.  It spins only with a
 * spinning slot (park.h), so that with more threads than cores the spinners
 * leave the holder a core, and only while this thread's contention streak
 * lasts (park.h): two threads that trade the mutex by spinning never sleep,
 * so a thread the kernel preempted meanwhile, anywhere, waited a whole
 * scheduler tick for a core (at 4 threads on 2 cores, 95 % of the acquires
 * that waited over 2.1 ms had been preempted before the lock call or inside
 * its fast path); ending the spin after half a millisecond hands a core over
 * by then.  It never spins for a timeout shorter than the spin (a timeout
 * of 0 never waits), nor in the model-check build, where every poll would be
 * a scheduling point that adds no behaviour.
 */
/* One look of the spin (park.h): the mutex taken, or waiters to queue behind. */
static enum sb_park_look mutex_spin_look(void *arg)
{
	sb_mutex *m = arg;
	size_t state = mutex_load(m);
	if (state & SB_WAITQ_NONEMPTY)
		return SB_PARK_LOOK_QUEUE;
	if (!(state & SB_MUTEX_STATE_LOCKED) && sb_mutex_try_lock(m) == 0)
		return SB_PARK_LOOK_TAKEN;
	return SB_PARK_LOOK_AGAIN;
}

int sb_mutex_lock_blocking(sb_mutex *m, uint64_t timeout_ns)
{
	/* The future's first poll would take a free mutex the same way (and
	 * in FIFO mode a free mutex has nobody queued); this skips the parker. */
	if (sb_mutex_try_lock(m) == 0)
		return 0;
	if (!mutex_is_fifo(m) && sb_park_spin_before_queueing(mutex_spin_look, m, &timeout_ns))
		return 0;
	sb_mutex_lock f;
	sb_mutex_lock_init(&f, m);
	return sb_park_block_on(&f, &sb_mutex_lock_ops, timeout_ns);
}
