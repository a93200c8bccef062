/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manual- and auto-reset events' races (src/event.c), explored
 * (model_common.h): set racing reset, is_set, try_wait, first polls and
 * cancels, an inline CAS that fails spuriously, a set past a wake batch, a
 * waker clone that re-enters; the read-modify-writes of their uncontended
 * paths and handoffs.
 */
#include "model_common.h"

typedef struct event_ctx {
	sb_event e;
	sb_auto_event a;
	sb_event_wait f[2];
	sb_auto_event_wait g[2];
	counting_waker w[3];
	int r1;
	int r2;
	int payload;
	int payload2;  /* a second setter's */
	bool done[2];  /* plain: setter i has returned (the real-time order) */
} event_ctx;

/* set racing reset and a new wait's first poll. */
static void ev1_setup(void *p)
{
	event_ctx *c = p;
	sb_event_init(&c->e, false);
	counting_waker_init(&c->w[0]);
	counting_waker_init(&c->w[1]);
	sb_event_wait_init(&c->f[0], &c->e);
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == SB_PENDING);
	sb_event_wait_init(&c->f[1], &c->e);
}
static void ev1_t0(void *p)
{
	event_ctx *c = p;
	publish(&c->payload);
	sb_event_set(&c->e);
}
static void ev1_t1(void *p)
{
	event_ctx *c = p;
	sb_event_reset(&c->e);
}
static void ev1_t2(void *p)
{
	event_ctx *c = p;
	c->r1 = poll_event(&c->f[1], &c->w[1]);
	if (c->r1 == 0) /* only set() sets it */
		consume(&c->payload);
}
static void ev1_check(void *p)
{
	event_ctx *c = p;
	/* registered before set(): released, and stays released after reset() */
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == 0);
	if (c->r1 == SB_PENDING) {
		if (atomic_load(&c->w[1].wakes) == 1) {
			MODEL_CHECK(poll_event(&c->f[1], &c->w[1]) == 0);
		} else {
			/* registered after set(), so a reset() came between them */
			MODEL_CHECK(!sb_event_is_set(&c->e));
			sb_event_wait_cancel(&c->f[1]);
		}
	} else {
		MODEL_CHECK(c->r1 == 0);
	}
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* set of an idle event (its lock-free path) racing is_set and try_wait. */
static void ev2_setup(void *p)
{
	event_ctx *c = p;
	sb_event_init(&c->e, false);
}
static void ev2_t0(void *p)
{
	event_ctx *c = p;
	publish(&c->payload);
	sb_event_set(&c->e);
}
static void ev2_t1(void *p)
{
	event_ctx *c = p;
	if (sb_event_is_set(&c->e))
		consume(&c->payload);
}
static void ev2_t2(void *p)
{
	event_ctx *c = p;
	if (sb_event_try_wait(&c->e) == 0)
		consume(&c->payload);
}
static void ev2_check(void *p)
{
	event_ctx *c = p;
	MODEL_CHECK(sb_event_is_set(&c->e));
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
}

/*
 * set() with a wait queued takes its slow path, which sets EV_SET when it
 * takes the queue lock (issue 10: that CAS was acquire-only).  A lock-free
 * reader (is_set, or a new wait's first poll) that sees the bit must also
 * see what the setter wrote before set().
 */
static void ev3_setup(void *p)
{
	event_ctx *c = p;
	sb_event_init(&c->e, false);
	for (int i = 0; i < 2; i++)
		counting_waker_init(&c->w[i]);
	sb_event_wait_init(&c->f[0], &c->e);
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == SB_PENDING);
	sb_event_wait_init(&c->f[1], &c->e);
}
static void ev3_t2(void *p)
{
	event_ctx *c = p;
	c->r1 = poll_event(&c->f[1], &c->w[1]);
	if (c->r1 == 0) {
		consume(&c->payload);
		return;
	}
	/* Polled again before any wake (a poll the executor makes for another
	 * reason): it owes what it sees to set()'s release alone. */
	if (poll_event(&c->f[1], &c->w[1]) == 0)
		consume(&c->payload);
	else if (await_wake(&c->w[1]) && poll_event(&c->f[1], &c->w[1]) == 0)
		consume(&c->payload);
}
static void ev3_check(void *p)
{
	event_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == 0);
	/* no reset: a second wait completes at once or is released by the set */
	if (c->r1 == SB_PENDING)
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_event(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_event_is_set(&c->e));
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* set of an idle event racing a first poll (its CAS may fail on EV_SET). */
static void ev4_setup(void *p)
{
	event_ctx *c = p;
	sb_event_init(&c->e, false);
	counting_waker_init(&c->w[0]);
	sb_event_wait_init(&c->f[0], &c->e);
}
static void ev4_t1(void *p)
{
	event_ctx *c = p;
	c->r1 = poll_event(&c->f[0], &c->w[0]);
	if (c->r1 == SB_PENDING && await_wake(&c->w[0]) && poll_event(&c->f[0], &c->w[0]) == 0)
		consume(&c->payload);
	else if (c->r1 == 0)
		consume(&c->payload);
}
static void ev4_check(void *p)
{
	event_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == (c->r1 == SB_PENDING));
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == 0);
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

/*
 * set racing a reset followed by is_set in another thread: after its own
 * reset, is_set sees SET only from a later set, whose writes it must see
 * (the reset may also send set() to its slow path).
 */
static void ev5_t1(void *p)
{
	event_ctx *c = p;
	sb_event_reset(&c->e);
	c->r1 = sb_event_is_set(&c->e);
	if (c->r1)
		consume(&c->payload);
}
static void ev5_check(void *p)
{
	event_ctx *c = p;
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
}

/*
 * Two auto-reset sets racing a try_wait.  A set that had returned before the
 * try_wait began is in the release sequence its CAS reads from.
 */
static void ae4_set(event_ctx *c, int i, int *payload)
{
	*payload = 1;
	MODEL_PLAIN_WRITE(payload);
	sb_auto_event_set(&c->a);
	c->done[i] = true;
}
static void ae4_t0(void *p)
{
	event_ctx *c = p;
	ae4_set(c, 0, &c->payload);
}
static void ae4_t1(void *p)
{
	event_ctx *c = p;
	ae4_set(c, 1, &c->payload2);
}
static void ae4_t2(void *p)
{
	event_ctx *c = p;
	bool before[2] = { c->done[0], c->done[1] };
	c->r2 = sb_auto_event_try_wait(&c->a);
	if (c->r2 != 0)
		return;
	if (before[0])
		MODEL_PLAIN_READ(&c->payload);
	if (before[1])
		MODEL_PLAIN_READ(&c->payload2);
}
static void ae4_check(void *p)
{
	event_ctx *c = p;
	/* One signal stored, or two if the try_wait came between the sets. */
	int taken = (c->r2 == 0) + (sb_auto_event_try_wait(&c->a) == 0);
	MODEL_CHECK(taken >= 1 && taken <= 2);
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == -EAGAIN);
	MODEL_CHECK(sb_auto_event_destroy(&c->a) == 0);
}

/* auto-reset set racing the cancel of the wait it hands the signal to. */
static void ae1_setup(void *p)
{
	event_ctx *c = p;
	sb_auto_event_init(&c->a, false);
	for (int i = 0; i < 2; i++) {
		counting_waker_init(&c->w[i]);
		sb_auto_event_wait_init(&c->g[i], &c->a);
		MODEL_CHECK(poll_auto(&c->g[i], &c->w[i]) == SB_PENDING);
	}
}
static void ae1_t0(void *p)
{
	event_ctx *c = p;
	publish(&c->payload);
	sb_auto_event_set(&c->a);
}
static void ae1_t1(void *p)
{
	event_ctx *c = p;
	sb_auto_event_wait_cancel(&c->g[0]);
}
static void ae1_check(void *p)
{
	event_ctx *c = p;
	/* exactly one signal, and it reached the survivor */
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_auto(&c->g[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == -EAGAIN);
	MODEL_CHECK(sb_auto_event_destroy(&c->a) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* auto-reset set racing the cancel of a lone wait (no queue lock). */
static void ae3_setup(void *p)
{
	event_ctx *c = p;
	sb_auto_event_init(&c->a, false);
	counting_waker_init(&c->w[0]);
	sb_auto_event_wait_init(&c->g[0], &c->a);
	MODEL_CHECK(poll_auto(&c->g[0], &c->w[0]) == SB_PENDING);
}
static void ae3_check(void *p)
{
	event_ctx *c = p;
	/* Withdrawn before the set, or handed it and passed it back: stored once. */
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == 0);
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == -EAGAIN);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
	MODEL_CHECK(sb_auto_event_destroy(&c->a) == 0);
}

/* auto-reset set racing a first poll and a try_wait: one signal, one taker. */
static void ae2_setup(void *p)
{
	event_ctx *c = p;
	sb_auto_event_init(&c->a, false);
	counting_waker_init(&c->w[0]);
	sb_auto_event_wait_init(&c->g[0], &c->a);
}
static void ae2_t1(void *p)
{
	event_ctx *c = p;
	c->r1 = poll_auto(&c->g[0], &c->w[0]);
	if (c->r1 == SB_PENDING && await_wake(&c->w[0]) && poll_auto(&c->g[0], &c->w[0]) == 0)
		consume(&c->payload);
	else if (c->r1 == 0)
		consume(&c->payload);
}
static void ae2_t2(void *p)
{
	event_ctx *c = p;
	c->r2 = sb_auto_event_try_wait(&c->a);
	if (c->r2 == 0)
		consume(&c->payload);
}
static void ae2_check(void *p)
{
	event_ctx *c = p;
	int waited = c->r1 == 0 || (c->r1 == SB_PENDING && atomic_load(&c->w[0].wakes) == 1);
	int tried = c->r2 == 0;
	MODEL_CHECK(waited + tried == 1);
	if (c->r1 == SB_PENDING && !waited)
		sb_auto_event_wait_cancel(&c->g[0]);
	else if (c->r1 == SB_PENDING)
		MODEL_CHECK(poll_auto(&c->g[0], &c->w[0]) == 0);
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == -EAGAIN);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

/*
 * The inline fast paths' CASes are weak: one that fails spuriously (C11
 * lets it) sends set() and try_wait() to their out-of-line retry, whose own
 * CAS must then publish (set) or synchronise (try_wait) as the inline one.
 */
static void ev_spurious_setup(void *p)
{
	ev2_setup(p);
	sb_model_allow_spurious_failures(1);
}
static void ae_spurious_setup(void *p)
{
	event_ctx *c = p;
	sb_auto_event_init(&c->a, false);
	sb_model_allow_spurious_failures(1);
}
static void ae_spurious_check(void *p)
{
	event_ctx *c = p;
	/* The signal was taken, or is still stored. */
	MODEL_CHECK((c->r2 == 0) == (sb_auto_event_try_wait(&c->a) == -EAGAIN));
}

/* ------------------------------------------------- broadcasts past a batch */

/* Three waits, the batch of 2 (bcast_ctx, model_common.h). */
static void bc_poll_last_event_wait(void *p)
{
	bcast_ctx *c = p;
	if (c->seen == SB_PENDING + 1)
		c->seen = poll_event(&c->f[2], &c->w[2]);
}

static void bc_event_setup(void *p)
{
	bcast_ctx *c = p;
	sb_event_init(&c->e, false);
	for (int i = 0; i < 3; i++) {
		counting_waker_init(&c->w[i]);
		sb_event_wait_init(&c->f[i], &c->e);
		MODEL_CHECK(poll_event(&c->f[i], &c->w[i]) == SB_PENDING);
	}
	c->seen = SB_PENDING + 1;
	c->w[0].on_wake = bc_poll_last_event_wait;
	c->w[0].hook_arg = c;
}
static void bc_event_t0(void *p)
{
	bcast_ctx *c = p;
	sb_event_set(&c->e);
}
static void bc_event_t1(void *p)
{
	bcast_ctx *c = p;
	sb_event_wait_cancel(&c->f[1]);
}
static void bc_event_t2(void *p)
{
	bcast_ctx *c = p;
	sb_event_reset(&c->e);
}
static void bc_event_check(void *p)
{
	bcast_ctx *c = p;
	/* the wake of the first saw the third released, before set() reached it */
	MODEL_CHECK(c->seen == 0);
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == 0);
	MODEL_CHECK(atomic_load(&c->w[1].wakes) <= 1);
	MODEL_CHECK(atomic_load(&c->w[2].wakes) <= 1); /* 0 when it left by itself */
	for (int i = 0; i < 3; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
}

/* ------------------------------------------- waker clones that re-enter */

/*
 * A clone that re-enters the primitive would deadlock if it ran under the
 * queue lock; the scheduler reports a deadlock when every thread blocks.
 */
static void reenter_auto_set(void *p)
{
	event_ctx *c = p;
	sb_auto_event_set(&c->a);
}
static void rc_auto_setup(void *p)
{
	event_ctx *c = p;
	sb_auto_event_init(&c->a, false);
	for (int i = 0; i < 2; i++) {
		counting_waker_init(&c->w[i]);
		sb_auto_event_wait_init(&c->g[i], &c->a);
	}
	MODEL_CHECK(poll_auto(&c->g[0], &c->w[0]) == SB_PENDING); /* lone */
	c->w[1].on_clone = reenter_auto_set;
	c->w[1].hook_arg = c;
}
static void rc_auto_t0(void *p)
{
	event_ctx *c = p;
	c->r1 = poll_auto(&c->g[1], &c->w[1]);
}
static void rc_auto_check(void *p)
{
	event_ctx *c = p;
	/* two sets, two waits: both served, no signal left over */
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(poll_auto(&c->g[0], &c->w[0]) == 0);
	if (c->r1 == SB_PENDING) {
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
		MODEL_CHECK(poll_auto(&c->g[1], &c->w[1]) == 0);
	} else {
		MODEL_CHECK(c->r1 == 0);
	}
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == -EAGAIN);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* ---------------------------------------------------------------- scenarios */

static const sb_model_scenario scenarios[] = {
	{ "event: set racing reset and a new wait", 3, sizeof(event_ctx), ev1_setup,
	  { ev1_t0, ev1_t1, ev1_t2 }, ev1_check },
	{ "event: set of an idle event racing is_set and try_wait", 3, sizeof(event_ctx),
	  ev2_setup, { ev2_t0, ev2_t1, ev2_t2 }, ev2_check },
	{ "event: set of an idle event racing a first poll", 2, sizeof(event_ctx), ev4_setup,
	  { ev2_t0, ev4_t1 }, ev4_check },
	{ "event: set racing a reset and is_set", 2, sizeof(event_ctx), ev2_setup,
	  { ev2_t0, ev5_t1 }, ev5_check },
	{ "event: set with a wait queued racing is_set and a first poll", 3,
	  sizeof(event_ctx), ev3_setup, { ev2_t0, ev2_t1, ev3_t2 }, ev3_check },
	{ "event: set whose inline CAS fails spuriously racing is_set", 2, sizeof(event_ctx),
	  ev_spurious_setup, { ev2_t0, ev2_t1 }, ev2_check },
	{ "auto event: try_wait whose inline CAS fails spuriously racing set", 2,
	  sizeof(event_ctx), ae_spurious_setup, { ae1_t0, ae2_t2 }, ae_spurious_check },
	{ "auto event: set racing cancel of the chosen wait", 2, sizeof(event_ctx), ae1_setup,
	  { ae1_t0, ae1_t1 }, ae1_check },
	{ "auto event: set racing a first poll and try_wait", 3, sizeof(event_ctx), ae2_setup,
	  { ae1_t0, ae2_t1, ae2_t2 }, ae2_check },
	{ "auto event: two sets racing try_wait", 3, sizeof(event_ctx), ae2_setup,
	  { ae4_t0, ae4_t1, ae4_t2 }, ae4_check },
	{ "auto event: set racing cancel of a lone wait", 2, sizeof(event_ctx), ae3_setup,
	  { ae1_t0, ae1_t1 }, ae3_check },
	{ "event: set past a batch racing cancel and reset; a wake polls a later wait", 3,
	  sizeof(bcast_ctx), bc_event_setup, { bc_event_t0, bc_event_t1, bc_event_t2 },
	  bc_event_check },
	{ "auto event: a queued wait whose clone sets, racing a set", 2, sizeof(event_ctx),
	  rc_auto_setup, { rc_auto_t0, ae1_t0 }, rc_auto_check },
};

static model_set set = { scenarios, COUNT(scenarios) };

static void uncontended_paths_cost_one_read_modify_write_and_take_no_lock(void **state)
{
	(void)state;
	/* one CAS each (is_set none): a lock would cost two more */
	sb_event e = SB_EVENT_INIT(0);
	assert_int_equal(RMWS(sb_event_set(&e)), 1);
	assert_int_equal(RMWS(sb_event_is_set(&e)), 0);
	assert_int_equal(RMWS(sb_event_reset(&e)), 1);
	sb_auto_event ae = SB_AUTO_EVENT_INIT(0);
	assert_int_equal(RMWS(sb_auto_event_set(&ae)), 1);
	assert_int_equal(RMWS(sb_auto_event_try_wait(&ae)), 1);
}

/*
 * A handoff to a pending future.  The auto-reset event's lone wait installs
 * its node in the event's word with one CAS and a set claims it with one;
 * the woken future reads its node.  One read-modify-write on each side.
 */
static void a_handoff_costs_one_or_two_read_modify_writes_on_each_side(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_auto_event e = SB_AUTO_EVENT_INIT(0);
	sb_auto_event_wait f;
	sb_auto_event_wait_init(&f, &e);
	assert_int_equal(RMWS(sb_auto_event_wait_poll(&f, &noop)), 1);
	assert_int_equal(RMWS(sb_auto_event_set(&e)), 1);
	assert_int_equal(RMWS(sb_auto_event_wait_poll(&f, &noop)), 0);
}

/* test_model_event [RUN-PATTERN [SKIP-PATTERN]]: cmocka's test name filters. */
int main(int argc, char **argv)
{
	model_main_setup(argc, argv);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(every_scenario_holds_over_all_schedules_with_four_preemptions, &set),
		cmocka_unit_test_prestate(every_scenario_holds_over_random_schedules, &set),
		cmocka_unit_test(uncontended_paths_cost_one_read_modify_write_and_take_no_lock),
		cmocka_unit_test(a_handoff_costs_one_or_two_read_modify_writes_on_each_side),
		cmocka_unit_test_prestate(every_scenario_holds_under_the_weak_model_with_bounded_stale_reads, &set),
		cmocka_unit_test_prestate(every_scenario_holds_over_random_schedules_under_the_weak_model, &set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
