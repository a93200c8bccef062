/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of syncband/barrier.h (sched.c): the last arrival
 * racing a cancel of a waiting party, two generations back to back, a
 * blocking wait timing out as its generation completes, and a generation
 * wider than a wake batch released while a party cancels and the next
 * generation arrives.  Each explored over every schedule with up to four
 * preemptions and then over random ones, under sequential consistency and
 * under the weak model (README.md in this folder).  Every check counts the
 * leaders of each generation (exactly one), that every wait completed or is
 * rightly waiting, and that every waker clone was woken or dropped; under
 * the weak model also that what each party wrote before it arrived
 * happens-before whatever another party of its generation does after its
 * wait completed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <syncband/barrier.h>

#include "sched.h"

/* Under the weak model: a clone happens-before every use of that clone. */
#define COUNTING_WAKER_CLONED(c) MODEL_PLAIN_WRITE(c)
#define COUNTING_WAKER_USED(c) MODEL_PLAIN_READ(c)
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

enum { PREEMPTIONS = 4, LIMIT = 10000000, RANDOM_RUNS = 3000, SEED = 20261201 };
/* The weak model, with the bounds of model_common.h. */
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

enum { WAITS = 6 };

typedef struct barrier_ctx {
	sb_barrier b;
	sb_barrier_wait f[WAITS];
	counting_waker w[WAITS];
	int r[WAITS];      /* each wait's last poll */
	int blocking;      /* sb_barrier_wait_blocking's result */
	int payload[WAITS]; /* written by wait i's party before it arrives */
} barrier_ctx;

static void setup_barrier(barrier_ctx *c, size_t parties)
{
	MODEL_CHECK(sb_barrier_init(&c->b, parties) == 0);
	for (int i = 0; i < WAITS; i++) {
		counting_waker_init(&c->w[i]);
		sb_barrier_wait_init(&c->f[i], &c->b);
	}
}

static int poll_wait(barrier_ctx *c, int i)
{
	sb_waker w = counting_waker_ref(&c->w[i]);
	return c->r[i] = sb_barrier_wait_poll(&c->f[i], &w);
}

/* Wait i's party writes its payload, then arrives. */
static int arrive(barrier_ctx *c, int i)
{
	c->payload[i] = 1;
	MODEL_PLAIN_WRITE(&c->payload[i]);
	return poll_wait(c, i);
}

/*
 * Polls a pending wait i again once its waker was woken (each wait has its
 * own, woken at most once), which must complete it; false if no wake comes
 * (every other thread finished or blocked): it rightly waits.  The wake
 * happens-before the poll it causes, as with an executor.
 */
static bool complete(barrier_ctx *c, int i)
{
	if (c->r[i] == SB_PENDING) {
		if (!sb_model_await_change(&c->w[i].wakes, 0))
			return false;
		poll_wait(c, i);
	}
	MODEL_CHECK(c->r[i] == 0);
	return true;
}

/* After wait i completed: what party j wrote before arriving is visible. */
static void sees(const barrier_ctx *c, int j)
{
	MODEL_PLAIN_READ(&c->payload[j]);
	MODEL_CHECK(c->payload[j] == 1);
}

static bool leads(const barrier_ctx *c, int i)
{
	return sb_barrier_wait_is_leader(&c->f[i]);
}

/* No clone left: every registered waker was woken or dropped. */
static void check_no_live_wakers(barrier_ctx *c)
{
	for (int i = 0; i < WAITS; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_barrier_destroy(&c->b) == 0);
}

/* --- the last arrival racing a cancel of a waiting party ---------------- */

/*
 * Three parties; waits 0 and 1 arrived in setup.  Thread 0 cancels wait 0
 * while thread 1 arrives with wait 2.  Either the cancel withdrew wait 0
 * first (wait 2 then waits with wait 1 for a third party, which the check
 * supplies, and it leads; wait 2 may find itself not the last under the
 * lock after it guessed it was, and clone then), or wait 2 came first, led
 * and released wait 0, whose cancel then changed nothing.
 */
static void cancel_setup(void *p)
{
	barrier_ctx *c = p;
	setup_barrier(c, 3);
	MODEL_CHECK(arrive(c, 0) == SB_PENDING);
	MODEL_CHECK(arrive(c, 1) == SB_PENDING);
}
static void cancel_t0(void *p)
{
	barrier_ctx *c = p;
	sb_barrier_wait_cancel(&c->f[0]);
}
static void cancel_t1(void *p)
{
	barrier_ctx *c = p;
	if (arrive(c, 2) == 0)
		sees(c, 1);
}
static void cancel_check(void *p)
{
	barrier_ctx *c = p;
	MODEL_CHECK(poll_wait(c, 0) == -ECANCELED);
	MODEL_CHECK(!leads(c, 0));
	if (c->r[2] == SB_PENDING) {
		/* withdrawn first: its generation had not completed */
		MODEL_CHECK(atomic_load(&c->w[0].drops) == 1);
		MODEL_CHECK(atomic_load(&c->w[0].wakes) == 0);
		MODEL_CHECK(poll_wait(c, 1) == SB_PENDING && poll_wait(c, 2) == SB_PENDING);
		MODEL_CHECK(atomic_load(&c->w[1].wakes) + atomic_load(&c->w[2].wakes) == 0);
		MODEL_CHECK(arrive(c, 3) == 0 && leads(c, 3));
		MODEL_CHECK(poll_wait(c, 2) == 0);
	} else {
		/* released before the cancel looked: the generation completed */
		MODEL_CHECK(c->r[2] == 0 && leads(c, 2));
		MODEL_CHECK(atomic_load(&c->w[0].woken) == 1);
		MODEL_CHECK(atomic_load(&c->w[2].clones) == 0); /* the leader keeps none */
	}
	MODEL_CHECK(poll_wait(c, 1) == 0);
	MODEL_CHECK(leads(c, 1) + leads(c, 2) + leads(c, 3) == 1);
	check_no_live_wakers(c);
}

/* --- two generations back to back --------------------------------------- */

/*
 * Two parties, each arriving twice (waits 0, 2 and 1, 3): the leader of the
 * first generation arrives again at once, before the other party observed
 * its release, and belongs to the second.
 */
static void twice_setup(void *p)
{
	setup_barrier(p, 2);
}
static void twice_party(barrier_ctx *c, int first, int other)
{
	arrive(c, first);
	MODEL_CHECK(complete(c, first));
	sees(c, other);
	arrive(c, first + 2);
	MODEL_CHECK(complete(c, first + 2));
	sees(c, other + 2);
}
static void twice_t0(void *p)
{
	twice_party(p, 0, 1);
}
static void twice_t1(void *p)
{
	twice_party(p, 1, 0);
}
static void twice_check(void *p)
{
	barrier_ctx *c = p;
	MODEL_CHECK(leads(c, 0) + leads(c, 1) == 1);
	MODEL_CHECK(leads(c, 2) + leads(c, 3) == 1);
	check_no_live_wakers(c);
}

/* --- a blocking wait timing out as its generation completes ------------- */

/*
 * Two parties: thread 0 waits blocking with a timeout of 0 (it arrives,
 * polls once more, and withdraws unless released), thread 1 arrives with a
 * future.  -ETIMEDOUT only if the arrival was withdrawn; released at any
 * point up to the withdrawal, also between the parker's last poll and its
 * cancel, the blocking wait returns 0.
 */
static void timeout_setup(void *p)
{
	setup_barrier(p, 2);
}
static void timeout_t0(void *p)
{
	barrier_ctx *c = p;
	c->payload[0] = 1;
	MODEL_PLAIN_WRITE(&c->payload[0]);
	c->blocking = sb_barrier_wait_blocking(&c->b, 0);
	if (c->blocking >= 0)
		sees(c, 1);
}
static void timeout_t1(void *p)
{
	barrier_ctx *c = p;
	arrive(c, 1);
	if (complete(c, 1))
		sees(c, 0);
}
static void timeout_check(void *p)
{
	barrier_ctx *c = p;
	switch (c->blocking) {
	case -ETIMEDOUT: /* withdrawn before wait 1 arrived: it is the first of two */
		MODEL_CHECK(poll_wait(c, 1) == SB_PENDING);
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 0);
		MODEL_CHECK(arrive(c, 2) == 0 && leads(c, 2));
		MODEL_CHECK(poll_wait(c, 1) == 0 && !leads(c, 1));
		break;
	case 0: /* wait 1 arrived second and led */
		MODEL_CHECK(c->r[1] == 0 && leads(c, 1));
		break;
	case SB_BARRIER_LEADER: /* wait 1 arrived first */
		MODEL_CHECK(c->r[1] == 0 && !leads(c, 1));
		break;
	default:
		MODEL_CHECK(!"an unexpected result of sb_barrier_wait_blocking");
	}
	check_no_live_wakers(c);
}

/* --- a generation wider than a wake batch --------------------------------- */

/*
 * Four parties, waits 0-2 arrived in setup; the model build's wake batch is
 * 2, so the leader marks the generation released, wakes it in two batches
 * and drops the lock between them.  Thread 0 arrives with wait 3; thread 1
 * cancels wait 2, then arrives with wait 4.  If the cancel came first, 3
 * and 4 both belong to the first generation and the later one leads it;
 * otherwise 3 leads, the cancel changes nothing (wait 2 was released, also
 * when it finds itself still on the broadcast's list), and 4 - perhaps while
 * the broadcast still wakes - is the next generation's first, not released.
 */
static void wide_setup(void *p)
{
	barrier_ctx *c = p;
	setup_barrier(c, 4);
	for (int i = 0; i < 3; i++)
		MODEL_CHECK(arrive(c, i) == SB_PENDING);
}
static void wide_t0(void *p)
{
	arrive(p, 3);
}
static void wide_t1(void *p)
{
	barrier_ctx *c = p;
	sb_barrier_wait_cancel(&c->f[2]);
	arrive(c, 4);
}
static void wide_check(void *p)
{
	barrier_ctx *c = p;
	for (int i = 0; i < 2; i++) /* released, whoever led */
		MODEL_CHECK(poll_wait(c, i) == 0 && !leads(c, i));
	poll_wait(c, 3);
	poll_wait(c, 4);
	if (c->r[3] == 0 && c->r[4] == 0) {
		/* the cancel withdrew wait 2 first: waits 0, 1, 3 and 4 made the
		 * generation, and the later of 3 and 4 led it */
		MODEL_CHECK(atomic_load(&c->w[2].drops) == 1);
		MODEL_CHECK(atomic_load(&c->w[2].wakes) == 0);
		MODEL_CHECK(leads(c, 3) + leads(c, 4) == 1);
	} else {
		/* 0-3: wait 3 led; the cancel found wait 2 released (woken, or
		 * unlinking itself from the broadcast's list, its clone dropped);
		 * wait 4 is the next generation's first */
		MODEL_CHECK(atomic_load(&c->w[2].wakes) + atomic_load(&c->w[2].drops) == 1);
		MODEL_CHECK(c->r[3] == 0 && leads(c, 3));
		MODEL_CHECK(c->r[4] == SB_PENDING);
		MODEL_CHECK(atomic_load(&c->w[4].wakes) == 0);
		sb_barrier_wait_cancel(&c->f[4]);
	}
	MODEL_CHECK(poll_wait(c, 2) == -ECANCELED && !leads(c, 2));
	check_no_live_wakers(c);
}

static const sb_model_scenario scenarios[] = {
	{ "barrier: the last arrival racing a cancel of a waiting party", 2, sizeof(barrier_ctx),
	  cancel_setup, { cancel_t0, cancel_t1 }, cancel_check },
	{ "barrier: two generations back to back, the leader arriving again at once", 2,
	  sizeof(barrier_ctx), twice_setup, { twice_t0, twice_t1 }, twice_check },
	{ "barrier: a blocking wait timing out as its generation completes", 2,
	  sizeof(barrier_ctx), timeout_setup, { timeout_t0, timeout_t1 }, timeout_check },
	{ "barrier: a broadcast past a wake batch racing a cancel, then a new arrival", 2,
	  sizeof(barrier_ctx), wide_setup, { wide_t0, wide_t1 }, wide_check },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Under sequential consistency when stale_reads < 0, else the weak model. */
static void explore_all(int preemptions, int stale_reads)
{
	assert_true(sb_model_explore_all(scenarios, COUNT(scenarios), preemptions, stale_reads,
					 LIMIT));
}

static void random_all(int stale_reads)
{
	assert_true(sb_model_random_all(scenarios, COUNT(scenarios), SEED, RANDOM_RUNS,
					stale_reads));
}

static void every_barrier_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	explore_all(PREEMPTIONS, -1);
}

static void every_barrier_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	random_all(-1);
}

static void every_barrier_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	explore_all(WEAK_PREEMPTIONS, STALE_READS);
}

static void every_barrier_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	random_all(WEAK_RANDOM_STALE_READS);
}

/*
 * Counting: an arrival that queues takes and releases the queue lock (two
 * read-modify-writes), the leader the same however many it releases, and
 * a released wait's poll reads its node (none).  Single-threaded, outside
 * the scheduler.
 */
static long rmws_before;
#define RMWS(expr) (rmws_before = sb_model_rmws(), (expr), sb_model_rmws() - rmws_before)

static void an_arrival_costs_two_read_modify_writes_and_a_released_poll_none(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_barrier b = SB_BARRIER_INIT(3);
	sb_barrier_wait f[3];
	for (int i = 0; i < 3; i++)
		sb_barrier_wait_init(&f[i], &b);
	assert_int_equal(RMWS(sb_barrier_wait_poll(&f[0], &noop)), 2);
	assert_int_equal(RMWS(sb_barrier_wait_poll(&f[1], &noop)), 2);
	assert_int_equal(RMWS(sb_barrier_wait_poll(&f[2], &noop)), 2);
	assert_true(sb_barrier_wait_is_leader(&f[2]));
	assert_int_equal(RMWS(sb_barrier_wait_poll(&f[0], &noop)), 0);
	assert_int_equal(RMWS(sb_barrier_wait_poll(&f[1], &noop)), 0);
	sb_barrier one = SB_BARRIER_INIT(1);
	sb_barrier_wait g;
	sb_barrier_wait_init(&g, &one);
	assert_int_equal(RMWS(sb_barrier_wait_poll(&g, &noop)), 0);
}

/* test_model_barrier [RUN-PATTERN]: cmocka's test name filter. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_barrier_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_barrier_scenario_holds_over_random_schedules),
		cmocka_unit_test(an_arrival_costs_two_read_modify_writes_and_a_released_poll_none),
		cmocka_unit_test(every_barrier_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_barrier_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
