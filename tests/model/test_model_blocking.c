/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blocking waits (src/park.c, sb_future_wait_blocking), explored
 * (model_common.h): a wake from another thread, by value and by reference,
 * racing the parker's sleep and return.
 */
#include "model_common.h"

/*
 * sb_future_wait_blocking on a future of the caller's own: its first poll
 * hands a clone of the parker's waker to another thread, which writes a
 * payload and wakes it; the poll that wake causes reads the payload.  Only
 * the parker orders the two (its wakes release, the fetch_and before each
 * poll acquires), as an executor's wake happens-before the poll it causes.
 * By reference, the waker then drops its clone: the call returns only once
 * that drop happened-before (the parker lives in its frame, which the model
 * treats as freed when the thread returns).
 */
typedef struct handoff_ctx {
	sb_waker waker;     /* the clone the first poll hands over */
	atomic_int handed;  /* 1 once `waker` is filled in */
	int polls;
	int r;
	int payload;
} handoff_ctx;

static int handoff_poll(void *f, const sb_waker *w)
{
	handoff_ctx *c = f;
	if (c->polls++ > 0) { /* woken: after the wake */
		consume(&c->payload);
		return 0;
	}
	c->waker = sb_waker_clone(w);
	MODEL_PLAIN_WRITE(&c->waker);
	/* relaxed: the handover itself is the model's signal below. */
	atomic_store_explicit(&c->handed, 1, memory_order_relaxed);
	sb_model_signal(&c->handed);
	return SB_PENDING;
}

static void handoff_cancel(void *f)
{
	(void)f;
	MODEL_CHECK(!"an infinite wait never cancels");
}

static const sb_future_ops handoff_ops = { handoff_poll, handoff_cancel };

static void handoff_waiter(void *p)
{
	handoff_ctx *c = p;
	c->r = sb_future_wait_blocking(c, &handoff_ops, SB_TIMEOUT_INFINITE);
}
/* Waits for the clone: the waiter's first poll happens-before what follows. */
static bool handoff_receive(handoff_ctx *c)
{
	if (!sb_model_await_change(&c->handed, 0))
		return false;
	MODEL_PLAIN_READ(&c->waker);
	publish(&c->payload);
	return true;
}
static void handoff_wake(void *p)
{
	handoff_ctx *c = p;
	if (handoff_receive(c))
		sb_waker_wake(c->waker);
}
static void handoff_wake_by_ref(void *p)
{
	handoff_ctx *c = p;
	if (!handoff_receive(c))
		return;
	sb_waker_wake_by_ref(&c->waker);
	sb_waker_drop(c->waker);
}
static void handoff_check(void *p)
{
	handoff_ctx *c = p;
	MODEL_CHECK(c->r == 0 && c->polls == 2);
}

/* ---------------------------------------------------------------- scenarios */

static const sb_model_scenario scenarios[] = {
	{ "blocking: a wake from another thread racing the parker's sleep", 2,
	  sizeof(handoff_ctx), NULL, { handoff_waiter, handoff_wake }, handoff_check },
	{ "blocking: a wake by reference and a drop racing the parker's sleep and return", 2,
	  sizeof(handoff_ctx), NULL, { handoff_waiter, handoff_wake_by_ref }, handoff_check },
};

static model_set set = { scenarios, COUNT(scenarios) };

/* test_model_blocking [RUN-PATTERN [SKIP-PATTERN]]: cmocka's test name filters. */
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
