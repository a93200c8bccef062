/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The condvar's races (src/condvar.c), explored (model_common.h): notify_one
 * racing a cancel, a wait giving up the mutex racing a notifier, notify_all
 * past a wake batch; its uncontended notify's read-modify-writes.
 */
#include "model_common.h"

typedef struct cv_ctx {
	sb_mutex m;
	sb_condvar cv;
	sb_condvar_wait f[2];
	counting_waker w[2];
	int notified;
	bool repolled_pending; /* woken, re-polled, and waiting for the mutex */
	int payload;
} cv_ctx;

static void cv_setup_two_waits(void *p)
{
	cv_ctx *c = p;
	model_mutex_init(&c->m, false);
	sb_condvar_init(&c->cv);
	for (int i = 0; i < 2; i++) {
		counting_waker_init(&c->w[i]);
		MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
		sb_condvar_wait_init(&c->f[i], &c->cv, &c->m);
		MODEL_CHECK(poll_cv(&c->f[i], &c->w[i]) == SB_PENDING);
	}
}

/* notify_one racing the cancel of the waiter it may choose. */
static void cv1_t0(void *p)
{
	cv_ctx *c = p;
	sb_condvar_notify_one(&c->cv);
}
static void cv1_t1(void *p)
{
	cv_ctx *c = p;
	sb_condvar_wait_cancel(&c->f[0]);
}
static void cv1_check(void *p)
{
	cv_ctx *c = p;
	/* the one notification reaches the survivor, whoever won the race */
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_cv(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_mutex_is_locked(&c->m));
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_condvar_destroy(&c->cv) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* a wait giving up the mutex racing a notifier that takes it. */
static void cv2_setup(void *p)
{
	cv_ctx *c = p;
	model_mutex_init(&c->m, false);
	sb_condvar_init(&c->cv);
	counting_waker_init(&c->w[0]);
	MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	sb_condvar_wait_init(&c->f[0], &c->cv, &c->m);
}
static void cv2_t0(void *p)
{
	cv_ctx *c = p;
	MODEL_CHECK(poll_cv(&c->f[0], &c->w[0]) == SB_PENDING);
	/* Notified: re-polled, it holds the mutex and sees the notifier's writes,
	 * or waits for the notifier's unlock to hand it over. */
	if (!await_wake(&c->w[0]))
		return;
	if (poll_cv(&c->f[0], &c->w[0]) == 0)
		consume(&c->payload);
	else
		c->repolled_pending = true;
}
static void cv2_t1(void *p)
{
	cv_ctx *c = p;
	if (sb_mutex_try_lock(&c->m) != 0)
		return; /* the waiter still holds it: nothing to notify about */
	c->notified = 1;
	publish(&c->payload);
	sb_condvar_notify_one(&c->cv);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
}
static void cv2_check(void *p)
{
	cv_ctx *c = p;
	if (c->notified) { /* notified under the mutex after the wait gave it up */
		MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1 + c->repolled_pending);
		MODEL_CHECK(poll_cv(&c->f[0], &c->w[0]) == 0);
		MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	} else {
		MODEL_CHECK(atomic_load(&c->w[0].wakes) == 0);
		sb_condvar_wait_cancel(&c->f[0]);
	}
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	MODEL_CHECK(sb_condvar_destroy(&c->cv) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

/* ------------------------------------------------- broadcasts past a batch */

/* Three waits, the batch of 2 (bcast_ctx, model_common.h). */
static void bc_cv_setup(void *p)
{
	bcast_ctx *c = p;
	c->cancelled = 2;
	sb_condvar_init(&c->cv);
	model_mutex_init(&c->m, false);
	for (int i = 0; i < 3; i++) {
		counting_waker_init(&c->w[i]);
		MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
		sb_condvar_wait_init(&c->g[i], &c->cv, &c->m);
		MODEL_CHECK(poll_cv(&c->g[i], &c->w[i]) == SB_PENDING);
	}
	counting_waker_init(&c->w[3]);
}

/* From the first wake of notify_all: complete, wait again, notify_one. */
static void bc_wait_again_and_notify_one(void *p)
{
	bcast_ctx *c = p;
	if (c->seen != SB_PENDING + 1)
		return;
	c->seen = poll_cv(&c->g[0], &c->w[0]);
	if (c->seen != 0)
		return; /* the mutex is busy: nothing to test from here */
	sb_condvar_wait_init(&c->g[3], &c->cv, &c->m);
	MODEL_CHECK(poll_cv(&c->g[3], &c->w[3]) == SB_PENDING);
	sb_condvar_notify_one(&c->cv);
}

static void bc_cv_rewait_setup(void *p)
{
	bcast_ctx *c = p;
	bc_cv_setup(p);
	c->seen = SB_PENDING + 1;
	c->cancelled = 1; /* one notify_all released, whose cancel passes nothing on */
	c->w[0].on_wake = bc_wait_again_and_notify_one;
	c->w[0].hook_arg = c;
}
static void bc_cv_t0(void *p)
{
	bcast_ctx *c = p;
	sb_condvar_notify_all(&c->cv);
}
static void bc_cv_t1(void *p)
{
	bcast_ctx *c = p;
	sb_condvar_wait_cancel(&c->g[c->cancelled]);
}
static void bc_cv_t2(void *p)
{
	bcast_ctx *c = p;
	sb_condvar_notify_one(&c->cv);
}
/* Every wait that was not cancelled completes, holding the mutex in turn. */
static void bc_cv_drain(bcast_ctx *c, int first, int last)
{
	for (int i = first; i <= last; i++) {
		if (i == c->cancelled)
			continue;
		MODEL_CHECK(atomic_load(&c->w[i].wakes) >= 1);
		MODEL_CHECK(poll_cv(&c->g[i], &c->w[i]) == 0);
		MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	}
}
static void bc_cv_check(void *p)
{
	bcast_ctx *c = p;
	bc_cv_drain(c, 0, 1);
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	for (int i = 0; i < 3; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_condvar_destroy(&c->cv) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
}
static void bc_cv_rewait_check(void *p)
{
	bcast_ctx *c = p;
	if (c->seen == 0) {
		/* notify_one went to the wait registered after notify_all, not to
		 * one notify_all owed: no notification lost */
		MODEL_CHECK(atomic_load(&c->w[3].wakes) == 1);
		bc_cv_drain(c, 1, 3); /* g[0] completed in the wake */
	} else {
		bc_cv_drain(c, 0, 2);
	}
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	for (int i = 0; i < 4; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_condvar_destroy(&c->cv) == 0);
}

/* ---------------------------------------------------------------- scenarios */

static const sb_model_scenario scenarios[] = {
	{ "condvar: notify_one racing cancel", 2, sizeof(cv_ctx), cv_setup_two_waits,
	  { cv1_t0, cv1_t1 }, cv1_check },
	{ "condvar: wait giving up the mutex racing a notifier", 2, sizeof(cv_ctx), cv2_setup,
	  { cv2_t0, cv2_t1 }, cv2_check },
	{ "condvar: notify_all past a batch racing notify_one and a cancel", 3, sizeof(bcast_ctx),
	  bc_cv_setup, { bc_cv_t0, bc_cv_t1, bc_cv_t2 }, bc_cv_check },
	{ "condvar: a wake of notify_all waits again and notifies one, racing a cancel", 2,
	  sizeof(bcast_ctx), bc_cv_rewait_setup, { bc_cv_t0, bc_cv_t1 }, bc_cv_rewait_check },
};

static model_set set = { scenarios, COUNT(scenarios) };

static void a_notify_with_nobody_waiting_costs_no_read_modify_write(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	assert_int_equal(RMWS(sb_condvar_notify_one(&cv)), 0);
}

/* test_model_condvar [RUN-PATTERN [SKIP-PATTERN]]: cmocka's test name filters. */
int main(int argc, char **argv)
{
	model_main_setup(argc, argv);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(every_scenario_holds_over_all_schedules_with_four_preemptions, &set),
		cmocka_unit_test_prestate(every_scenario_holds_over_random_schedules, &set),
		cmocka_unit_test(a_notify_with_nobody_waiting_costs_no_read_modify_write),
		cmocka_unit_test_prestate(every_scenario_holds_under_the_weak_model_with_bounded_stale_reads, &set),
		cmocka_unit_test_prestate(every_scenario_holds_over_random_schedules_under_the_weak_model, &set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
