/* SPDX-License-Identifier: Apache-2.0 */
#include "park.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <syncband/blocking.h>

#include "cpu.h"
#include "futex.h"

/*
 * The parker word:
 *
 *   bit 31     PARK_WOKEN     woken since the last poll
 *   bit 30     PARK_SLEEPING  the thread is (about to be) asleep on the futex
 *   bits 0-29  the waker clones the primitives still hold
 *
 * The blocked thread returns only when the count is 0, which is what makes a
 * wake racing with the return safe: the waker's last access to the parker is
 * the RMW that drops its reference (its futex wake after that touches only
 * the address, see futex.h).  A waker makes the futex system call only when
 * that RMW found PARK_SLEEPING: a thread that is still spinning, or has not
 * parked yet, costs its waker no system call.
 *
 *   sleeper                                waker
 *   -------                                -----
 *   CAS(v -> v|SLEEPING), v without WOKEN  RMW: set WOKEN (and drop a ref)
 *   futex_wait(word, v|SLEEPING)           if the RMW saw SLEEPING: futex_wake
 *
 * If the waker's RMW comes first, the sleeper's CAS fails and it re-reads
 * WOKEN; if the CAS comes first, the waker sees SLEEPING and wakes, and a
 * futex_wait that has not started yet returns at once (the word changed).
 */
#define PARK_WOKEN 0x80000000u
#define PARK_SLEEPING 0x40000000u
#define PARK_REFS 0x3fffffffu

/* Spins before sleeping: a handoff often arrives within a microsecond.
 * None in the model-check build (tests/model): each spin is a scheduling
 * point there, multiplying the schedules while adding no behaviour the
 * sleep (a futex wait that blocks until the word changes) does not have. */
#ifdef SB_MODEL_CHECK
#define PARK_SPINS 0
#else
#define PARK_SPINS 200
#endif

/*
 * But never more spinning threads than cores less one (park.h): a
 * process-wide count, taken only by a wait about to spin.
 */
static _Atomic unsigned park_spinners;

bool sb_park_take_spin_slot(void)
{
	return sb_cpu_take_slot(&park_spinners, sb_cpu_count() - 1);
}

void sb_park_give_spin_slot(void)
{
	sb_cpu_give_slot(&park_spinners);
}

/*
 * This thread's contention streak (park.h): when it began and when the
 * thread last asked, both 0 after a sleep (so that the next ask finds a gap
 * and starts a new streak).  Thread-local, static TLS as in the executor
 * (no allocation on first use).
 */
static _Thread_local uint64_t park_streak_began_ns __attribute__((tls_model("initial-exec")));
static _Thread_local uint64_t park_streak_asked_ns __attribute__((tls_model("initial-exec")));

/* Whether the last ask found the streak over. */
static bool park_streak_is_over(void)
{
	return park_streak_asked_ns - park_streak_began_ns >= SB_PARK_STREAK_SPIN_NS;
}

bool sb_park_streak_allows_spin(uint64_t now)
{
	if (now - park_streak_asked_ns > SB_PARK_STREAK_GAP_NS)
		park_streak_began_ns = now;
	park_streak_asked_ns = now;
	return !park_streak_is_over();
}

/*
 * sb_park_retry_before_wait (park.h): `spin_steps` looks a few pauses
 * apart, then SB_PARK_RETRY_YIELDS yields, each followed by a try.  None of
 * either in the model-check build, for the reason the parker spins none
 * there.  Why yields, why pauses only where the caller asks, and the
 * numbers: docs/design.md ("Channels: retrying before waiting").
 */
#ifdef SB_MODEL_CHECK
static const bool PARK_RETRIES = false;
#else
static const bool PARK_RETRIES = true;
#endif

/*
 * This thread's looks history (park.h): how many of its next retries skip
 * their looks, and how many the last looks that found nothing made it
 * skip (0 once looks found something), doubling up to
 * SB_PARK_LOOKS_MAX_SKIP.  Thread-local as the streak above.
 */
static _Thread_local unsigned park_looks_skip __attribute__((tls_model("initial-exec")));
static _Thread_local unsigned park_looks_backoff __attribute__((tls_model("initial-exec")));

/* The pauses before look `k`: 1, 2, then 4 each. */
static unsigned park_retry_pauses(unsigned k)
{
	return k < 2 ? 1u << k : 4u;
}

/* Whether this retry looks, by the history; counts a skipped one. */
static bool park_looks_allowed(void)
{
	if (park_looks_skip == 0)
		return true;
	park_looks_skip--;
	return false;
}

/* Records what looks found: something (`found`) or nothing. */
static void park_looks_found(bool found)
{
	if (found) {
		park_looks_backoff = 0;
		return;
	}
	park_looks_backoff = park_looks_backoff == 0 ? 1
			     : park_looks_backoff < SB_PARK_LOOKS_MAX_SKIP / 2 ? 2 * park_looks_backoff
									      : SB_PARK_LOOKS_MAX_SKIP;
	park_looks_skip = park_looks_backoff;
}

int sb_park_retry_before_wait(int (*try_op)(void *arg), void *arg, uint64_t *timeout_ns,
			      unsigned spin_steps)
{
	if (!PARK_RETRIES || *timeout_ns == 0)
		return -EAGAIN;
	bool timed = *timeout_ns != SB_TIMEOUT_INFINITE;
	uint64_t start = timed ? sb_now_ns() : 0;
	int r = -EAGAIN;
	if (spin_steps > 0 && park_looks_allowed()) {
		unsigned k = 0;
		for (; k < spin_steps && r == -EAGAIN; k++) {
			if (timed && sb_now_ns() - start >= *timeout_ns)
				break;
			for (unsigned j = park_retry_pauses(k); j > 0; j--)
				sb_cpu_relax();
			r = try_op(arg);
		}
		if (r != -EAGAIN || k == spin_steps) /* not cut short by the timeout */
			park_looks_found(r != -EAGAIN);
	}
	for (unsigned i = 0; i < SB_PARK_RETRY_YIELDS && r == -EAGAIN; i++) {
		if (timed && sb_now_ns() - start >= *timeout_ns)
			break;
		sched_yield();
		r = try_op(arg);
	}
	if (timed && r == -EAGAIN) {
		uint64_t spent = sb_now_ns() - start;
		*timeout_ns = *timeout_ns > spent ? *timeout_ns - spent : 0;
	}
	return r;
}

/*
 * sb_park_spin_before_queueing (park.h).  It reads the lock once every
 * SB_PARK_SPIN_POLL_NS, not on every pause: every read pulls the line away
 * from the holder's core (src/mutex.c has the numbers).  None in the
 * model-check build, where every look would be a scheduling point that adds
 * no behaviour.
 */
#ifdef SB_MODEL_CHECK
static const bool PARK_SPINS_BEFORE_QUEUEING = false;
#else
static const bool PARK_SPINS_BEFORE_QUEUEING = true;
#endif

/* The spin, with its slot taken: true if look took the lock. */
static bool park_spin_for(enum sb_park_look (*look)(void *arg), void *arg, uint64_t start)
{
	uint64_t now = start, next_poll = start + SB_PARK_SPIN_POLL_NS;
	while (now - start < SB_PARK_SPIN_NS) {
		sb_cpu_relax();
		now = sb_now_ns();
		if (now < next_poll)
			continue;
		next_poll = now + SB_PARK_SPIN_POLL_NS;
		enum sb_park_look seen = look(arg);
		if (seen != SB_PARK_LOOK_AGAIN)
			return seen == SB_PARK_LOOK_TAKEN;
	}
	return false;
}

bool sb_park_spin_before_queueing(enum sb_park_look (*look)(void *arg), void *arg,
				  uint64_t *timeout_ns)
{
	if (!PARK_SPINS_BEFORE_QUEUEING || *timeout_ns < SB_PARK_SPIN_NS)
		return false;
	uint64_t start = sb_now_ns();
	if (!sb_park_streak_allows_spin(start) || !sb_park_take_spin_slot())
		return false;
	bool taken = park_spin_for(look, arg, start);
	sb_park_give_spin_slot();
	if (!taken && *timeout_ns != SB_TIMEOUT_INFINITE) {
		uint64_t spent = sb_now_ns() - start;
		*timeout_ns = *timeout_ns > spent ? *timeout_ns - spent : 0;
	}
	return taken;
}

typedef struct sb_parker {
	_Atomic uint32_t word;
} sb_parker;

static sb_waker park_clone(const void *data);
static void park_wake(const void *data);
static void park_wake_by_ref(const void *data);
static void park_drop(const void *data);

static const sb_waker_vtable park_vtable = {
	.clone = park_clone,
	.wake = park_wake,
	.wake_by_ref = park_wake_by_ref,
	.drop = park_drop,
};

static sb_waker park_clone(const void *data)
{
	sb_parker *p = (sb_parker *)data;
	/* relaxed: cloning happens inside a poll on the parked thread's behalf,
	 * which holds the parker alive; nothing is published by the count. */
	atomic_fetch_add_explicit(&p->word, 1, memory_order_relaxed);
	return (sb_waker){ &park_vtable, data };
}

static void park_wake_by_ref(const void *data)
{
	sb_parker *p = (sb_parker *)data;
	/* release: the thread that sees WOKEN sees what the waker did before. */
	uint32_t old = atomic_fetch_or_explicit(&p->word, PARK_WOKEN, memory_order_release);
	if (old & PARK_SLEEPING)
		sb_futex_wake(&p->word, 1);
}

static void park_wake(const void *data)
{
	sb_parker *p = (sb_parker *)data;
	/* relaxed: the CAS below re-reads it. */
	uint32_t old = atomic_load_explicit(&p->word, memory_order_relaxed);
	/* release: set WOKEN and drop our reference in one step; after it the
	 * parker may be gone, so nothing but the futex address is used. */
	while (!atomic_compare_exchange_weak_explicit(&p->word, &old, (old | PARK_WOKEN) - 1,
						      memory_order_release, memory_order_relaxed))
		;
	/* The parker lives in the blocked thread's stack frame, which may have
	 * returned by now (valgrind reports the system call's address): the
	 * kernel only hashes the address, and what it can reach is a futex
	 * that lives there next, woken spuriously - every futex sleeper
	 * re-checks its word (futex.h).  Holding the reference across the
	 * system call would only move the same wake to the drop after it. */
	if (old & PARK_SLEEPING)
		sb_futex_wake(&p->word, 1);
}

static void park_drop(const void *data)
{
	sb_parker *p = (sb_parker *)data;
	/* release: our last access; the thread waiting for 0 acquires it. */
	uint32_t old = atomic_fetch_sub_explicit(&p->word, 1, memory_order_release);
	/* After the last reference, as in park_wake: only the address is used. */
	if ((old & PARK_REFS) == 1 && (old & PARK_SLEEPING))
		sb_futex_wake(&p->word, 1);
}


/*
 * Sleeps on the word (whose value was `v`) unless it changed: marks
 * PARK_SLEEPING first so that the next waker makes the system call.
 */
static void park_sleep(sb_parker *p, uint32_t v, const struct timespec *rel)
{
	/* relaxed: the mark only asks wakers for a futex_wake; the kernel
	 * re-checks the word, so no wake is lost (see the diagram above). */
	if (!(v & PARK_SLEEPING) &&
	    !atomic_compare_exchange_strong_explicit(&p->word, &v, v | PARK_SLEEPING,
						     memory_order_relaxed, memory_order_relaxed))
		return; /* changed under us: the caller re-reads */
	if (sb_futex_wait(&p->word, v | PARK_SLEEPING, rel))
		park_streak_began_ns = park_streak_asked_ns = 0; /* its core went to another: the streak ends */
}

/* Waits until woken or `deadline` (UINT64_MAX: none); false on timeout. */
static bool park_until_woken(sb_parker *p, uint64_t deadline)
{
	/* No spinning for a wait that has already run out (a timeout of 0),
	 * nor while as many threads spin as there are other cores, nor once
	 * this thread's contention streak is over, until it sleeps (nor in the
	 * model-check build). */
	bool spinning = PARK_SPINS > 0 && !park_streak_is_over() &&
			(deadline == UINT64_MAX || sb_now_ns() < deadline) && sb_park_take_spin_slot();
	for (int i = 0;; i++) {
		/* relaxed: it only says whether to go on waiting; the caller's
		 * fetch_and before its next poll (acquire, an RMW reading the
		 * waker's release RMW or later) is what orders the waker's writes
		 * before that poll.  (The model's mutation runner finds this load
		 * needs no more: weakened alone it is never caught.) */
		uint32_t v = atomic_load_explicit(&p->word, memory_order_relaxed);
		if (v & PARK_WOKEN) {
			if (spinning)
				sb_park_give_spin_slot();
			return true;
		}
		if (spinning && i < PARK_SPINS) {
			sb_cpu_relax();
			continue;
		}
		if (spinning) {
			sb_park_give_spin_slot();
			spinning = false;
		}
		if (deadline == UINT64_MAX) {
			park_sleep(p, v, NULL);
			continue;
		}
		uint64_t now = sb_now_ns();
		if (now >= deadline)
			return false;
		uint64_t left = deadline - now;
		struct timespec rel = { (time_t)(left / SB_NSEC_PER_SEC), (long)(left % SB_NSEC_PER_SEC) };
		park_sleep(p, v, &rel);
	}
}

static void park_wait_for_no_refs(sb_parker *p)
{
	for (;;) {
		/* acquire: pairs with the release of the last drop or wake. */
		uint32_t v = atomic_load_explicit(&p->word, memory_order_acquire);
		if ((v & PARK_REFS) == 0)
			return;
		park_sleep(p, v, NULL);
	}
}

int sb_future_wait_blocking(void *future, const sb_future_ops *ops, uint64_t timeout_ns)
{
	sb_parker parker = { 0 };
	const sb_waker waker = { &park_vtable, &parker };
	uint64_t deadline = UINT64_MAX;
	if (timeout_ns != SB_TIMEOUT_INFINITE) {
		uint64_t now = sb_now_ns();
		deadline = timeout_ns > UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + timeout_ns;
	}

	int r;
	for (;;) {
		/* acquire: a wake before this poll is seen by it.  Awake now, so
		 * SLEEPING goes too. */
		atomic_fetch_and_explicit(&parker.word, ~(PARK_WOKEN | PARK_SLEEPING),
					  memory_order_acquire);
		r = ops->poll(future, &waker);
		if (r <= 0)
			break;
		if (!park_until_woken(&parker, deadline)) {
			r = ops->poll(future, &waker);
			if (r > 0) {
				ops->cancel(future);
				r = -ETIMEDOUT;
			}
			break;
		}
	}
	park_wait_for_no_refs(&parker);
	return r;
}
