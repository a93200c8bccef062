/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of syncband/driver.h's doorbell (sched.c): a
 * wake, a spawn and a close from another thread racing the driver's run and
 * its futex sleep, explored over every schedule with a few preemptions and
 * then over random ones.  A lost ring leaves the driver asleep on its futex
 * with the other thread finished: the explorer reports the deadlock.  Under
 * the weak model the loop's plain links (src/loop.c) handed over through the
 * doorbell must be ordered too; the wake-to-poll ordering itself is
 * test_model_loop's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include <errno.h>

#include <syncband/driver.h>

#include "sched.h"

enum { PREEMPTIONS = 4, LIMIT = 2000000, RANDOM_RUNS = 3000, SEED = 20261205 };
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

typedef struct driver_ctx {
	sb_driver d;
	sb_loop_task t;
	sb_waker kept;        /* a clone for the waking thread */
	_Atomic int posted;
	int payload;
	int polls, released, seen;
	int run_result;
	int spawn_result;
} driver_ctx;

static driver_ctx *cur;

/* Pending until it sees the post; then closes the driver and finishes. */
static int posted_poll(sb_loop_task *t, const sb_waker *w)
{
	(void)t;
	(void)w;
	driver_ctx *c = cur;
	c->polls++;
	/* acquire: pairs with the release store below; the payload is ready. */
	if (!atomic_load_explicit(&c->posted, memory_order_acquire))
		return SB_PENDING;
	MODEL_PLAIN_READ(&c->payload);
	c->seen = c->payload;
	sb_driver_close(&c->d);
	return 0;
}

static int finish_poll(sb_loop_task *t, const sb_waker *w)
{
	(void)t;
	(void)w;
	cur->polls++;
	return 0;
}

static void count_release(sb_loop_task *t)
{
	(void)t;
	cur->released++;
}

static void run_t1(void *p)
{
	driver_ctx *c = p;
	c->run_result = sb_driver_run(&c->d);
}

/* --- a wake from another thread racing the driver's sleep --------------- */

static void wake_setup(void *p)
{
	driver_ctx *c = p;
	cur = c;
	sb_driver_init(&c->d);
	sb_loop_task_init(&c->t, posted_poll, count_release);
	sb_driver_spawn(&c->d, &c->t);
	sb_waker w = sb_loop_task_waker(&c->t);
	c->kept = sb_waker_clone(&w); /* the spawner's, before the driver runs */
}
static void wake_t0(void *p)
{
	driver_ctx *c = p;
	c->payload = 7;
	MODEL_PLAIN_WRITE(&c->payload);
	/* release: the payload before the post (the poll's acquire load). */
	atomic_store_explicit(&c->posted, 1, memory_order_release);
	sb_waker_wake(c->kept);
}
static void wake_check(void *p)
{
	driver_ctx *c = p;
	MODEL_CHECK(c->run_result == 0);
	MODEL_CHECK(c->seen == 7);
	MODEL_CHECK(c->released == 1);
	MODEL_CHECK(sb_loop_idle(sb_driver_loop(&c->d)));
}

/* --- a close from another thread racing the driver's sleep -------------- */

static void close_setup(void *p)
{
	driver_ctx *c = p;
	cur = c;
	sb_driver_init(&c->d);
}
static void close_t0(void *p)
{
	sb_driver_close(&((driver_ctx *)p)->d);
}
static void close_check(void *p)
{
	MODEL_CHECK(((driver_ctx *)p)->run_result == 0);
}

/* --- a spawn then a close from another thread racing the run ------------ */

static void spawn_t0(void *p)
{
	driver_ctx *c = p;
	sb_loop_task_init(&c->t, finish_poll, count_release);
	c->spawn_result = sb_driver_spawn(&c->d, &c->t);
	sb_driver_close(&c->d);
}
static void spawn_check(void *p)
{
	driver_ctx *c = p;
	MODEL_CHECK(c->run_result == 0);
	MODEL_CHECK(c->spawn_result == 0); /* the close came after it */
	MODEL_CHECK(c->polls == 1);
	MODEL_CHECK(c->released == 1);
}

static const sb_model_scenario scenarios[] = {
	{ "driver: a wake from another thread racing the driver's sleep", 2,
	  sizeof(driver_ctx), wake_setup, { wake_t0, run_t1 }, wake_check },
	{ "driver: a close from another thread racing the driver's sleep", 2,
	  sizeof(driver_ctx), close_setup, { close_t0, run_t1 }, close_check },
	{ "driver: a spawn and a close from another thread racing the run", 2,
	  sizeof(driver_ctx), close_setup, { spawn_t0, run_t1 }, spawn_check },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void every_driver_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	assert_true(sb_model_explore_all(scenarios, COUNT(scenarios), PREEMPTIONS, -1, LIMIT));
}

static void every_driver_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	assert_true(sb_model_random_all(scenarios, COUNT(scenarios), SEED, RANDOM_RUNS, -1));
}

static void every_driver_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	assert_true(sb_model_explore_all(scenarios, COUNT(scenarios), WEAK_PREEMPTIONS,
					 STALE_READS, LIMIT));
}

static void every_driver_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	assert_true(sb_model_random_all(scenarios, COUNT(scenarios), SEED, RANDOM_RUNS,
					WEAK_RANDOM_STALE_READS));
}

/* test_model_driver [RUN-PATTERN]: cmocka's test name filter. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_driver_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_driver_scenario_holds_over_random_schedules),
		cmocka_unit_test(every_driver_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_driver_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
