/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deadlines (src/deadline.c), explored (model_common.h): an expiry racing
 * the polls of a pending acquire.
 */
#include "model_common.h"

/*
 * An expiry racing the polls of a deadline around a pending acquire: the
 * poll that acts on it reads what the expirer wrote before.
 */
typedef struct deadline_ctx {
	sb_semaphore sem;
	sb_semaphore_acquire acq;
	sb_deadline d;
	counting_waker w;
	int r;
	int payload;
} deadline_ctx;

static void dl_setup(void *p)
{
	deadline_ctx *c = p;
	sb_semaphore_init(&c->sem, 0);
	sb_semaphore_acquire_init(&c->acq, &c->sem, 1);
	sb_deadline_init(&c->d, &c->acq, &sb_semaphore_acquire_ops);
	counting_waker_init(&c->w);
}
static void dl_t0(void *p)
{
	deadline_ctx *c = p;
	sb_waker w = counting_waker_ref(&c->w);
	c->r = sb_deadline_poll(&c->d, &w);
	if (c->r == SB_PENDING) /* a re-poll (a timer's wake would cause one) */
		c->r = sb_deadline_poll(&c->d, &w);
	if (c->r == -ETIMEDOUT)
		consume(&c->payload);
}
static void dl_t1(void *p)
{
	deadline_ctx *c = p;
	publish(&c->payload);
	sb_deadline_expire(&c->d);
}
static void dl_check(void *p)
{
	deadline_ctx *c = p;
	MODEL_CHECK(sb_deadline_is_expired(&c->d));
	if (c->r == SB_PENDING) {
		sb_waker w = counting_waker_ref(&c->w);
		c->r = sb_deadline_poll(&c->d, &w);
	}
	MODEL_CHECK(c->r == -ETIMEDOUT); /* inner never completes */
	MODEL_CHECK(atomic_load(&c->w.live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* ---------------------------------------------------------------- scenarios */

static const sb_model_scenario scenarios[] = {
	{ "deadline: an expiry racing the polls of a pending acquire", 2, sizeof(deadline_ctx),
	  dl_setup, { dl_t0, dl_t1 }, dl_check },
};

static model_set set = { scenarios, COUNT(scenarios) };

/* test_model_deadline [RUN-PATTERN [SKIP-PATTERN]]: cmocka's test name filters. */
int main(int argc, char **argv)
{
	model_main_setup(argc, argv);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(every_scenario_holds_over_all_schedules_with_four_preemptions, &set),
		cmocka_unit_test_prestate(every_scenario_holds_over_random_schedules, &set),
		cmocka_unit_test_prestate(every_scenario_holds_under_the_weak_model_with_bounded_stale_reads, &set),
		cmocka_unit_test_prestate(every_scenario_holds_over_random_schedules_under_the_weak_model, &set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
