/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The eventually fair mutex's fairness (src/mutex.c), explored (sched.c):
 * who gets timed when a barger passes the woken head, the unlock that finds
 * the head passed for longer than SB_MUTEX_FAIRNESS_BOUND_NS and starts a
 * handoff phase, the phase's last handoff and the gap after it, and the
 * unlock budget (bits 4-7 of the word) spent by lock-free unlocks while the
 * head retries.  The races are short; each check then plays bargers with
 * the model's clock moved past the bound and counts the unlocks until one
 * hands the mutex over, so a waiter timed wrongly, a budget spent wrongly
 * or a phase that ends early shows up as a wrong count, a barger let in or
 * a waiter served out of order.  Every critical section reads and writes
 * `inside`, a plain field: mutual exclusion under both models, and under
 * the weak one the previous holder's section happens-before the next.
 * test_model_mutex_races has the races of the fair mode without the clock.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <syncband/mutex.h>

#include "clock.h"
#include "sched.h"

/* Under the weak model: a clone happens-before every use of that clone. */
#define COUNTING_WAKER_CLONED(c) MODEL_PLAIN_WRITE(c)
#define COUNTING_WAKER_USED(c) MODEL_PLAIN_READ(c)
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

/* The bounds of model_common.h. */
enum { PREEMPTIONS = 4, LIMIT = 10000000, RANDOM_RUNS = 3000, SEED = 20261130 };
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

static const uint64_t BOUND = SB_MUTEX_FAIRNESS_BOUND_NS;
/* After a phase, lockers get half a bound before its newcomers are handed
 * the mutex (src/fairness.h, SB_FAIR_PHASE_GAP_NS). */
static const uint64_t GAP = SB_MUTEX_FAIRNESS_BOUND_NS / 2;
/* A passed head is compared with the bound at every 16th unlock. */
enum { UNLOCKS_PER_CHECK = 16 };

/*
 * The model's clock (src/clock.h), installed in main: only setups and
 * checks move it, so every unlock of an execution reads the same time.
 */
static uint64_t model_now;
static uint64_t model_clock(void)
{
	return model_now;
}

typedef struct fm_ctx {
	sb_mutex m;
	sb_mutex_lock f[3];
	counting_waker w[3];
	int r[3];
	int inside;   /* holders inside a critical section */
	int unlocks;  /* the holder thread's unlocks */
	int wakes0;   /* w[0].wakes at the end of the setup */
	uint64_t t;   /* the clock while the threads run */
} fm_ctx;

static int poll_lock(fm_ctx *c, int i)
{
	sb_waker w = counting_waker_ref(&c->w[i]);
	return sb_mutex_lock_poll(&c->f[i], &w);
}

/* Queues f[i] behind the holder. */
static void queue(fm_ctx *c, int i)
{
	sb_mutex_lock_init(&c->f[i], &c->m);
	MODEL_CHECK(poll_lock(c, i) == SB_PENDING);
}

/* The critical section: nobody else inside, and the last one's exit
 * happens-before our entry. */
static void enter(fm_ctx *c)
{
	MODEL_PLAIN_READ(&c->inside);
	MODEL_CHECK(c->inside == 0);
	c->inside = 1;
	MODEL_PLAIN_WRITE(&c->inside);
}
static void leave(fm_ctx *c)
{
	c->inside = 0;
	MODEL_PLAIN_WRITE(&c->inside);
}
static void unlock(fm_ctx *c)
{
	leave(c);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
}
static void try_lock_must(fm_ctx *c)
{
	MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	enter(c);
}

/* An eventually fair mutex, held by the setup (inside), the clock at 1000. */
static void fm_setup_locked(fm_ctx *c)
{
	model_now = 1000;
	sb_mutex_init(&c->m);
	for (int i = 0; i < 3; i++)
		counting_waker_init(&c->w[i]);
	try_lock_must(c);
}

static bool has_budget(fm_ctx *c)
{
	size_t high = atomic_load(&c->m.q.state) >> SB_WAITQ_LONE_SHIFT;
	return high >= 1 && high <= 15;
}

/*
 * In a check, holding the mutex: unlocks, and while the unlock left it free
 * (the head only woken) takes it again, as a barger, up to `max` unlocks.
 * Returns the unlock that handed it over (the mutex still locked), or
 * max + 1.
 */
static int unlocks_until_handoff(fm_ctx *c, int max)
{
	for (int i = 1; i <= max; i++) {
		unlock(c);
		if (sb_mutex_is_locked(&c->m))
			return i;
		try_lock_must(c);
	}
	return max + 1;
}

/* f[i], handed the mutex or woken with it free: takes it at its poll. */
static void gets_it(fm_ctx *c, int i)
{
	MODEL_CHECK(poll_lock(c, i) == 0);
	enter(c);
}

static void fm_end(fm_ctx *c)
{
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	MODEL_CHECK(!has_budget(c));
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	for (int i = 0; i < 3; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
}

/* --- a barger passing the woken head, racing the head's retry ----------- */

/*
 * f[0] and f[1] queued, f[0] woken, the mutex free: the head's retry races
 * a barger.  Whoever passes the head (the barger's unlock finding it still
 * woken, or the head losing its retry) times both waiters, now; if the head
 * got in first nobody barged and nobody is timed.  The check moves the
 * clock past the bound and counts the unlocks until a handoff: the head is
 * compared with the bound when first passed and at every 16th unlock after.
 */
static void pass_setup(void *p)
{
	fm_ctx *c = p;
	fm_setup_locked(c);
	queue(c, 0);
	queue(c, 1);
	unlock(c); /* wakes f[0] */
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	c->t = model_now;
}
static void head_retry_t0(void *p)
{
	fm_ctx *c = p;
	c->r[0] = poll_lock(c, 0);
	if (c->r[0] == 0)
		enter(c); /* and holds it into the check */
}
static void barger_t1(void *p)
{
	fm_ctx *c = p;
	c->r[1] = sb_mutex_try_lock(&c->m);
	if (c->r[1] != 0)
		return;
	enter(c);
	unlock(c);
}
static void pass_check(void *p)
{
	fm_ctx *c = p;
	if (c->r[0] == SB_PENDING) {
		/* lost to the barger, which held it: timed by the retry, then
		 * woken again by the barger's unlock (the first check, with a
		 * budget of 15 unlocks after it) */
		MODEL_CHECK(c->r[1] == 0);
		MODEL_CHECK(atomic_load(&c->w[0].wakes) == 2);
		MODEL_CHECK(c->f[0].passed_since == c->t && c->f[1].passed_since == c->t);
		try_lock_must(c);
		model_now = c->t + BOUND + 1;
		MODEL_CHECK(unlocks_until_handoff(c, 2 * UNLOCKS_PER_CHECK) == UNLOCKS_PER_CHECK);
		MODEL_CHECK(atomic_load(&c->w[0].wakes) == 2); /* woken already: no new wake */
		gets_it(c, 0);
		unlock(c); /* the phase goes on to f[1] */
		MODEL_CHECK(sb_mutex_is_locked(&c->m));
	} else {
		MODEL_CHECK(c->r[0] == 0); /* holding it (inside) */
		MODEL_CHECK(!has_budget(c));
		model_now = c->t + BOUND + 1;
		if (c->r[1] == 0) { /* the barger passed f[0] first: f[1] timed then */
			MODEL_CHECK(c->f[1].passed_since == c->t);
			MODEL_CHECK(unlocks_until_handoff(c, 1) == 1);
		} else { /* served in order: never timed, woken */
			MODEL_CHECK(c->r[1] == -EBUSY);
			MODEL_CHECK(c->f[1].passed_since == 0);
			unlock(c);
			MODEL_CHECK(!sb_mutex_is_locked(&c->m));
		}
	}
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	gets_it(c, 1);
	unlock(c);
	fm_end(c);
}

/* --- the unlock that starts a phase, racing the head's cancel and a newcomer */

/*
 * f[0] passed more than the bound ago and re-armed at the front, f[1]
 * behind it passed half a bound later (not overdue itself), and the holder's
 * unlock is one that compares f[0] with the bound.
 */
static void phase_setup(void *p)
{
	fm_ctx *c = p;
	fm_setup_locked(c);
	uint64_t start = model_now;
	queue(c, 0);
	unlock(c); /* wakes f[0] */
	try_lock_must(c);
	MODEL_CHECK(poll_lock(c, 0) == SB_PENDING); /* lost: timed */
	model_now += BOUND / 2;
	queue(c, 1);
	unlock(c); /* f[0]'s first check: times f[1], wakes f[0] */
	try_lock_must(c);
	MODEL_CHECK(poll_lock(c, 0) == SB_PENDING); /* lost again */
	for (int i = 0; i < UNLOCKS_PER_CHECK - 1; i++) { /* up to the next check */
		unlock(c);
		try_lock_must(c);
	}
	MODEL_CHECK(poll_lock(c, 0) == SB_PENDING); /* lost again: re-armed */
	MODEL_CHECK(c->f[0].passed_since == start);
	MODEL_CHECK(c->f[1].passed_since == start + BOUND / 2);
	MODEL_CHECK(c->f[0].unlocks_at_front % UNLOCKS_PER_CHECK == 0); /* the next unlock checks */
	model_now = start + BOUND + 1;
	c->t = model_now;
	c->wakes0 = atomic_load(&c->w[0].wakes);
}
static void holder_unlock_t0(void *p)
{
	fm_ctx *c = p;
	unlock(c);
}
static void head_cancel_t1(void *p)
{
	fm_ctx *c = p;
	sb_mutex_lock_cancel(&c->f[0]);
}
static void newcomer_t2(void *p)
{
	fm_ctx *c = p;
	sb_mutex_lock_init(&c->f[2], &c->m);
	c->r[2] = poll_lock(c, 2);
	if (c->r[2] == 0)
		enter(c); /* and holds it into the check */
}
static void phase_check(void *p)
{
	fm_ctx *c = p;
	if (atomic_load(&c->w[0].wakes) > c->wakes0) {
		/* The unlock handed f[0] the mutex and began a phase covering
		 * f[1]; the cancel found it handed and passed it on, to f[1].
		 * The mutex never looked free: the newcomer queued. */
		MODEL_CHECK(c->r[2] == SB_PENDING);
		MODEL_CHECK(sb_mutex_is_locked(&c->m));
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	}
	/* (else the cancel came first: f[1], not overdue, was woken, and the
	 * newcomer may have taken the free mutex before its retry) */
	if (c->r[2] == 0) {
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
		unlock(c);
	} else {
		MODEL_CHECK(c->r[2] == SB_PENDING);
	}
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	gets_it(c, 1);
	if (c->r[2] == SB_PENDING) {
		MODEL_CHECK(atomic_load(&c->w[2].wakes) == 0); /* behind f[1] */
		unlock(c);
		MODEL_CHECK(atomic_load(&c->w[2].wakes) == 1);
		gets_it(c, 2);
	}
	unlock(c);
	fm_end(c);
}

/* --- the phase's last handoff, the next holder and a barger; the gap ---- */

/*
 * The phase has handed f[0] the mutex (the setup holds it through f[0]) and
 * covers f[1]; f[2] queued during the phase, a quarter bound before the
 * holder's unlock, the phase's last handoff, which times f[2] as passed half
 * a bound before it.  f[1] runs once woken and unlocks; a barger may get in
 * after it, never before.  Then bargers pass f[2] for half a bound (through
 * its checks) and the first check past that hands it the mutex.
 */
static void last_handoff_setup(void *p)
{
	fm_ctx *c = p;
	phase_setup(p);
	unlock(c); /* the phase: to f[0], covering f[1] */
	MODEL_CHECK(sb_mutex_is_locked(&c->m));
	gets_it(c, 0);
	model_now += BOUND / 4;
	queue(c, 2); /* a newcomer, queued during the phase */
	MODEL_CHECK(c->f[2].passed_since == 0);
	c->t = model_now;
}
static void next_holder_t1(void *p)
{
	fm_ctx *c = p;
	if (!sb_model_await_change(&c->w[1].wakes, 0))
		return;
	c->r[1] = poll_lock(c, 1);
	if (c->r[1] != 0)
		return;
	enter(c);
	unlock(c);
}
static void barger_t2(void *p)
{
	fm_ctx *c = p;
	c->r[2] = sb_mutex_try_lock(&c->m);
	if (c->r[2] != 0)
		return;
	enter(c);
	unlock(c);
}
static void last_handoff_check(void *p)
{
	fm_ctx *c = p;
	MODEL_CHECK(c->r[1] == 0); /* handed the mutex by the phase */
	MODEL_CHECK(c->m.handoff_left == 0);
	MODEL_CHECK(c->f[2].passed_since == c->t - (BOUND - GAP));
	/* f[1]'s unlock checked f[2] (not overdue), woke it and left a budget
	 * of 15, of which the barger's unlock took one */
	MODEL_CHECK(atomic_load(&c->w[2].wakes) == 1);
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	int budget = UNLOCKS_PER_CHECK - 1 - (c->r[2] == 0);
	try_lock_must(c);
	model_now = c->t + GAP; /* passed for exactly the bound: not yet */
	MODEL_CHECK(unlocks_until_handoff(c, budget + 1) == budget + 2);
	model_now += 1;
	MODEL_CHECK(unlocks_until_handoff(c, UNLOCKS_PER_CHECK) == UNLOCKS_PER_CHECK);
	MODEL_CHECK(atomic_load(&c->w[2].wakes) == 1);
	gets_it(c, 2);
	unlock(c);
	fm_end(c);
}

/* --- lock-free unlocks within the head's budget racing its retry -------- */

/*
 * f[0] woken, f[1] behind it; a barger passed f[0] (its first check, timing
 * both, then a budget of 15 lock-free unlocks) and holds the mutex again.
 * The holder unlocks and barges once more, racing the head's retry.  A head
 * that loses re-arms and gives back the budget it did not use: however the
 * race went, it is compared with the bound at the 16th unlock after its
 * first check.
 */
static void budget_setup(void *p)
{
	fm_ctx *c = p;
	pass_setup(p);
	try_lock_must(c);
	unlock(c); /* the first pass */
	try_lock_must(c);
	MODEL_CHECK(has_budget(c));
}
static void holder_twice_t1(void *p)
{
	fm_ctx *c = p;
	unlock(c);
	c->unlocks = 1;
	if (sb_mutex_try_lock(&c->m) != 0)
		return;
	enter(c);
	unlock(c);
	c->unlocks = 2;
}
static void budget_check(void *p)
{
	fm_ctx *c = p;
	model_now = c->t + BOUND + 1;
	if (c->r[0] == 0) {
		/* took it, leaving the queue and the budget: f[1] is checked at
		 * the first unlock */
		MODEL_CHECK(!has_budget(c));
		MODEL_CHECK(c->f[1].unlocks_at_front == 0);
		MODEL_CHECK(unlocks_until_handoff(c, 1) == 1);
	} else {
		MODEL_CHECK(c->r[0] == SB_PENDING);
		MODEL_CHECK(!sb_mutex_is_locked(&c->m));
		try_lock_must(c);
		/* the first pass was unlock 1, the holder's 2 to 1 + unlocks */
		int left = UNLOCKS_PER_CHECK - c->unlocks;
		MODEL_CHECK(unlocks_until_handoff(c, left) == left);
		gets_it(c, 0);
		unlock(c); /* the phase goes on to f[1] */
		MODEL_CHECK(sb_mutex_is_locked(&c->m));
	}
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	gets_it(c, 1);
	unlock(c);
	fm_end(c);
}

static const sb_model_scenario scenarios[] = {
	{ "fair mutex: a barger passing the woken head racing its retry, then the bound", 2,
	  sizeof(fm_ctx), pass_setup, { head_retry_t0, barger_t1 }, pass_check },
	{ "fair mutex: the unlock that starts a phase racing the head's cancel and a newcomer", 3,
	  sizeof(fm_ctx), phase_setup, { holder_unlock_t0, head_cancel_t1, newcomer_t2 },
	  phase_check },
	{ "fair mutex: a phase's last handoff racing its next holder and a barger, then the gap",
	  3, sizeof(fm_ctx), last_handoff_setup, { holder_unlock_t0, next_holder_t1, barger_t2 },
	  last_handoff_check },
	{ "fair mutex: unlocks within the budget racing the head's retry, then its 16th-unlock check",
	  2, sizeof(fm_ctx), budget_setup, { head_retry_t0, holder_twice_t1 }, budget_check },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* A bound, or what the environment says instead (README.md: exploring further). */
static int bound(const char *name, int fallback)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : fallback;
}

static void every_fairness_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	assert_true(sb_model_explore_all(scenarios, COUNT(scenarios), PREEMPTIONS, -1, LIMIT));
}

static void every_fairness_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	assert_true(sb_model_random_all(scenarios, COUNT(scenarios), SEED, RANDOM_RUNS, -1));
}

static void every_fairness_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	assert_true(sb_model_explore_all(scenarios, COUNT(scenarios),
					 bound("SB_MODEL_PREEMPTIONS", WEAK_PREEMPTIONS),
					 bound("SB_MODEL_STALE_READS", STALE_READS), LIMIT));
}

static void every_fairness_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	assert_true(sb_model_random_all(scenarios, COUNT(scenarios), SEED, RANDOM_RUNS,
					WEAK_RANDOM_STALE_READS));
}

/* test_model_mutex [RUN-PATTERN]: cmocka's test name filter. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_fairness_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_fairness_scenario_holds_over_random_schedules),
		cmocka_unit_test(every_fairness_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_fairness_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	sb__clock_set(model_clock);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
