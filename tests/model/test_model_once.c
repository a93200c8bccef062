/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of sb_once (sched.c, README.md in this folder):
 * a runner's report - success, failure, or its future's cancel - racing
 * waiters that cancel, re-poll or arrive, each explored over every schedule
 * within the bounds, then over random ones, under sequential consistency and
 * under the weak (release/acquire) model.  Each check says who must have
 * run the initialiser and that every waker was woken or dropped; under the
 * weak model the initialiser's write (`payload`) must happen-before
 * everyone who sees the once done, and a failed runner's write (`partial`)
 * before the runner that retries.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <syncband/once.h>

#include "sched.h"

/* Under the weak model: a clone happens-before every use of that clone. */
#define COUNTING_WAKER_CLONED(c) MODEL_PLAIN_WRITE(c)
#define COUNTING_WAKER_USED(c) MODEL_PLAIN_READ(c)
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

/* The bounds of model_common.h (README.md in this folder). */
enum { PREEMPTIONS = 4, LIMIT = 10000000, RANDOM_RUNS = 3000, SEED = 20261130 };
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct once_ctx {
	sb_once once;
	sb_once_wait f[4];
	counting_waker w[5];
	int runs;    /* the initialiser runs that started in the threads */
	int payload; /* the successful initialiser's write */
	int partial; /* a failed runner's write */
} once_ctx;

static void publish(int *x)
{
	*x = 1;
	MODEL_PLAIN_WRITE(x);
}

static void consume(const int *x)
{
	MODEL_PLAIN_READ(x);
	MODEL_CHECK(*x == 1);
}

static int poll_with(sb_once_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_once_wait_poll(f, &w);
}

/* Until `f` completes: poll with `c`, and while pending wait for its wake. */
static int poll_until_done(sb_once_wait *f, counting_waker *c)
{
	int r;
	int wakes = 0;
	while ((r = poll_with(f, c)) == SB_PENDING) {
		if (!sb_model_await_change(&c->wakes, wakes))
			return SB_PENDING; /* nobody will wake it */
		wakes = atomic_load(&c->wakes);
	}
	return r;
}

/* Told to run: sees what a failed runner wrote, runs, succeeds. */
static void run_and_complete(once_ctx *c)
{
	consume(&c->partial);
	c->runs++;
	publish(&c->payload);
	MODEL_CHECK(sb_once_complete(&c->once) == 0);
}

static void setup_runner(once_ctx *c, int waiters)
{
	sb_once_init(&c->once);
	for (int i = 0; i < 5; i++)
		counting_waker_init(&c->w[i]);
	sb_once_wait_init(&c->f[0], &c->once);
	MODEL_CHECK(poll_with(&c->f[0], &c->w[0]) == SB_ONCE_RUN);
	for (int i = 1; i <= waiters; i++) {
		sb_once_wait_init(&c->f[i], &c->once);
		MODEL_CHECK(poll_with(&c->f[i], &c->w[i]) == SB_PENDING);
	}
}

/* Done, with one successful run in the threads, and no waker left behind. */
static void check_done(once_ctx *c)
{
	MODEL_CHECK(sb_once_is_done(&c->once));
	MODEL_CHECK(c->runs == 1);
	for (int i = 0; i < 5; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_once_destroy(&c->once) == 0);
}

static void fail_t0(void *p)
{
	once_ctx *c = p;
	publish(&c->partial);
	MODEL_CHECK(sb_once_fail(&c->once) == 0);
}

static void cancel_f1_t1(void *p)
{
	once_ctx *c = p;
	sb_once_wait_cancel(&c->f[1]);
}

/* --- a runner's failure racing a waiter's cancel, a second waiter behind - */

static void fc_setup(void *p)
{
	setup_runner(p, 2);
}
static void fc_t2(void *p)
{
	once_ctx *c = p;
	/* The job reaches f[2]: from the runner, or from f[1]'s cancel. */
	MODEL_CHECK(poll_until_done(&c->f[2], &c->w[2]) == SB_ONCE_RUN);
	run_and_complete(c);
}
static void fc_check(void *p)
{
	once_ctx *c = p;
	MODEL_CHECK(poll_with(&c->f[1], &c->w[1]) == -ECANCELED);
	/* handed the job (woken) before its cancel, or never */
	MODEL_CHECK(atomic_load(&c->w[1].wakes) + atomic_load(&c->w[1].drops) == 1);
	MODEL_CHECK(atomic_load(&c->w[2].wakes) == 1);
	check_done(c);
}

/* --- success racing a new poller and a lock-free look ------------------- */

static void sn_setup(void *p)
{
	setup_runner(p, 0);
}
static void sn_t0(void *p)
{
	once_ctx *c = p;
	c->runs++;
	publish(&c->payload);
	MODEL_CHECK(sb_once_complete(&c->once) == 0);
}
static void sn_t1(void *p)
{
	once_ctx *c = p;
	sb_once_wait_init(&c->f[1], &c->once);
	MODEL_CHECK(poll_until_done(&c->f[1], &c->w[1]) == 0);
	consume(&c->payload);
}
static void sn_t2(void *p)
{
	once_ctx *c = p;
	if (sb_once_is_done(&c->once))
		consume(&c->payload);
	int r = sb_once_try(&c->once);
	MODEL_CHECK(r == 0 || r == -EAGAIN); /* the runner holds the job until done */
	if (r == 0)
		consume(&c->payload);
}
static void sn_check(void *p)
{
	once_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[1].wakes) <= 1);
	check_done(c);
}

/* --- the job handed to a waiter that cancels, racing a new poller ------- */

static void hc_setup(void *p)
{
	setup_runner(p, 1);
}
static void hc_t2(void *p)
{
	once_ctx *c = p;
	/* The job is free (it claims it) or passes to it (it queued). */
	sb_once_wait_init(&c->f[2], &c->once);
	MODEL_CHECK(poll_until_done(&c->f[2], &c->w[2]) == SB_ONCE_RUN);
	run_and_complete(c);
}
static void hc_check(void *p)
{
	once_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[1].wakes) + atomic_load(&c->w[1].drops) == 1);
	check_done(c);
}

/* --- the runner's cancel racing a waiter's re-poll with a new waker ----- */

static void rc_setup(void *p)
{
	setup_runner(p, 1);
}
static void rc_t0(void *p)
{
	once_ctx *c = p;
	publish(&c->partial);
	sb_once_wait_cancel(&c->f[0]); /* before it reported: a failure */
}
static void rc_t1(void *p)
{
	once_ctx *c = p;
	/* A new waker: the wake goes to the old one if the job came first. */
	int r = poll_with(&c->f[1], &c->w[4]);
	if (r == SB_PENDING)
		r = poll_until_done(&c->f[1], &c->w[4]);
	MODEL_CHECK(r == SB_ONCE_RUN);
	run_and_complete(c);
}
static void rc_check(void *p)
{
	once_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[1].wakes) + atomic_load(&c->w[4].wakes) == 1);
	check_done(c);
}

/* --- a former runner's late cancel racing the next runner --------------- */

static void lc_setup(void *p)
{
	setup_runner(p, 0);
}
static void lc_t0(void *p)
{
	once_ctx *c = p;
	publish(&c->partial);
	MODEL_CHECK(sb_once_fail(&c->once) == 0);
	sb_once_wait_cancel(&c->f[0]); /* reported: must not fail the next tenure */
}
static void lc_t1(void *p)
{
	once_ctx *c = p;
	sb_once_wait_init(&c->f[1], &c->once);
	MODEL_CHECK(poll_until_done(&c->f[1], &c->w[1]) == SB_ONCE_RUN);
	run_and_complete(c); /* complete() == 0: the job was still its own */
}
static void lc_check(void *p)
{
	check_done(p);
}

/* --- success to more waiters than a wake batch, racing a cancel, then a poll */

static void sb_setup(void *p)
{
	setup_runner(p, 3); /* the model build's batch holds 2: the broadcast flushes */
}
static void sb_t1(void *p)
{
	once_ctx *c = p;
	sb_once_wait_cancel(&c->f[2]);
	MODEL_CHECK(poll_until_done(&c->f[3], &c->w[3]) == 0);
	consume(&c->payload);
}
static void sb_check(void *p)
{
	once_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_with(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(atomic_load(&c->w[2].wakes) + atomic_load(&c->w[2].drops) == 1);
	/* woken, or released before the broadcast reached it: it unlinked itself */
	MODEL_CHECK(atomic_load(&c->w[3].wakes) + atomic_load(&c->w[3].drops) == 1);
	check_done(c);
}

static const sb_model_scenario scenarios[] = {
	{ "once: a runner's failure racing a waiter's cancel, a waiter behind", 3,
	  sizeof(once_ctx), fc_setup, { fail_t0, cancel_f1_t1, fc_t2 }, fc_check },
	{ "once: success racing a new poller, is_done and try", 3, sizeof(once_ctx), sn_setup,
	  { sn_t0, sn_t1, sn_t2 }, sn_check },
	{ "once: the job handed to a waiter that cancels, racing a new poller", 3,
	  sizeof(once_ctx), hc_setup, { fail_t0, cancel_f1_t1, hc_t2 }, hc_check },
	{ "once: the runner's cancel racing a waiter's re-poll with a new waker", 2,
	  sizeof(once_ctx), rc_setup, { rc_t0, rc_t1 }, rc_check },
	{ "once: a former runner's late cancel racing the next runner", 2, sizeof(once_ctx),
	  lc_setup, { lc_t0, lc_t1 }, lc_check },
	{ "once: success to more waiters than a wake batch racing a cancel, then a poll", 2,
	  sizeof(once_ctx), sb_setup, { sn_t0, sb_t1 }, sb_check },
};

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

static void every_once_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	explore_all(PREEMPTIONS, -1);
}

static void every_once_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	random_all(-1);
}

static void every_once_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	explore_all(WEAK_PREEMPTIONS, STALE_READS);
}

static void every_once_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	random_all(WEAK_RANDOM_STALE_READS);
}

/*
 * The atomic read-modify-writes of the once's paths (single-threaded,
 * outside the scheduler): seeing it done costs none, taking the job and a
 * report with nobody waiting one CAS, queueing and a report to waiters two
 * (lock and unlock), a re-poll that finds its wait done none, and one that
 * finds the job handed to it one (clearing HANDED).
 */
static long rmws_before;
#define RMWS(expr) (rmws_before = sb_model_rmws(), (expr), sb_model_rmws() - rmws_before)

static void once_paths_cost_at_most_two_read_modify_writes(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_once o = SB_ONCE_INIT;
	sb_once_wait f, g;
	sb_once_wait_init(&f, &o);
	sb_once_wait_init(&g, &o);
	assert_int_equal(RMWS(sb_once_is_done(&o)), 0);
	assert_int_equal(RMWS(sb_once_wait_poll(&f, &noop)), 1); /* SB_ONCE_RUN */
	assert_int_equal(RMWS(sb_once_fail(&o)), 1);             /* nobody waits */
	assert_int_equal(RMWS(sb_once_try(&o)), 1);              /* SB_ONCE_RUN */
	assert_int_equal(RMWS(sb_once_wait_poll(&g, &noop)), 2); /* queued */
	assert_int_equal(RMWS(sb_once_fail(&o)), 2);             /* handed to g */
	assert_int_equal(RMWS(sb_once_wait_poll(&g, &noop)), 1); /* SB_ONCE_RUN: told */
	assert_int_equal(RMWS(sb_once_complete(&o)), 1);
	sb_once_wait_init(&f, &o);
	assert_int_equal(RMWS(sb_once_wait_poll(&f, &noop)), 0); /* done */
	assert_int_equal(RMWS(sb_once_try(&o)), 0);

	sb_once p = SB_ONCE_INIT;
	sb_once_wait_init(&f, &p);
	sb_once_wait_init(&g, &p);
	assert_int_equal(sb_once_try(&p), SB_ONCE_RUN);
	assert_int_equal(RMWS(sb_once_wait_poll(&f, &noop)), 2);
	assert_int_equal(RMWS(sb_once_wait_poll(&g, &noop)), 2);
	assert_int_equal(RMWS(sb_once_complete(&p)), 2); /* both released */
	assert_int_equal(RMWS(sb_once_wait_poll(&f, &noop)), 0);
	assert_int_equal(RMWS(sb_once_wait_poll(&g, &noop)), 0);
}

/* test_model_once [RUN-PATTERN]: cmocka's test name filter. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_once_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_once_scenario_holds_over_random_schedules),
		cmocka_unit_test(once_paths_cost_at_most_two_read_modify_writes),
		cmocka_unit_test(every_once_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_once_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
