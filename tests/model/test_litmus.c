/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The explorer's own tests: classic litmus tests, written with C11 atomics
 * that go through the model's hooks, each asserting what the weak model
 * must find (a race, an outcome that only a stale read gives) and what it
 * must never produce (an incoherent read, a race across release/acquire).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model_hooks.h"
#include "sched.h"

enum { PREEMPTIONS = 3, STALE_READS = 3, LIMIT = 1000000 };

typedef struct litmus {
	atomic_int x, y;
	int data;
	int a, b;
	bool writer_done; /* plain: the real-time order, which the model sees */
	bool saw_done;
} litmus;

/* Outcomes seen over one exploration (the context is reset every run). */
static long outcomes;

static void count_if(bool outcome)
{
	outcomes += outcome;
}

static sb_model_result explore(const sb_model_scenario *s, bool weak)
{
	outcomes = 0;
	sb_model_result r = weak ? sb_model_explore_weak(s, PREEMPTIONS, STALE_READS, LIMIT)
				 : sb_model_explore(s, PREEMPTIONS, LIMIT);
	assert_false(r.filtered); /* SB_MODEL_SCENARIO or SB_MODEL_MEMORY would skip it */
	return r;
}

/* The result of an exploration that must pass. */
static void expect_pass(const sb_model_scenario *s, bool weak)
{
	sb_model_result r = explore(s, weak);
	if (r.failed)
		fail_msg("%s (%s): %s", s->name, weak ? "weak" : "sc", r.failure);
	assert_true(r.complete);
}

/* ... and one that must fail with a data race. */
static void expect_race(const sb_model_scenario *s)
{
	sb_model_catch_failures(true);
	sb_model_result r = explore(s, true);
	sb_model_catch_failures(false);
	assert_true(r.failed);
	assert_non_null(strstr(r.failure, "data race"));
}

/* ----------------------------------------------------- message passing */

static void mp_writer(litmus *c, memory_order order)
{
	c->data = 1;
	MODEL_PLAIN_WRITE(&c->data);
	atomic_store_explicit(&c->x, 1, order);
}

static void mp_reader(litmus *c, memory_order order)
{
	if (atomic_load_explicit(&c->x, order) == 1) {
		MODEL_PLAIN_READ(&c->data);
		c->a = 1;
	}
}

static void mp_release(void *p)
{
	mp_writer(p, memory_order_release);
}
static void mp_relaxed(void *p)
{
	mp_writer(p, memory_order_relaxed);
}
static void mp_acquire(void *p)
{
	mp_reader(p, memory_order_acquire);
}
static void mp_relaxed_read(void *p)
{
	mp_reader(p, memory_order_relaxed);
}
static void mp_fence_read(void *p)
{
	litmus *c = p;
	if (atomic_load_explicit(&c->x, memory_order_relaxed) == 1) {
		atomic_thread_fence(memory_order_acquire);
		MODEL_PLAIN_READ(&c->data);
	}
}
static void mp_check(void *p)
{
	litmus *c = p;
	count_if(c->a);
}

static const sb_model_scenario mp_ok = { "MP release/acquire", 2, sizeof(litmus), NULL,
					 { mp_release, mp_acquire }, mp_check };
static const sb_model_scenario mp_fence = { "MP release/relaxed+acquire fence", 2,
					    sizeof(litmus), NULL,
					    { mp_release, mp_fence_read }, NULL };
static const sb_model_scenario mp_bad_store = { "MP relaxed/acquire", 2, sizeof(litmus), NULL,
						{ mp_relaxed, mp_acquire }, NULL };
static const sb_model_scenario mp_bad_load = { "MP release/relaxed", 2, sizeof(litmus), NULL,
					       { mp_release, mp_relaxed_read }, NULL };

static void message_passing_needs_a_release_and_an_acquire_under_the_weak_model(void **state)
{
	(void)state;
	expect_pass(&mp_ok, true);
	assert_true(outcomes > 0); /* the reader did see the flag and read */
	expect_pass(&mp_fence, true);
	expect_race(&mp_bad_store);
	expect_race(&mp_bad_load);
	/* Sequential consistency checks no plain data: the same passes there. */
	expect_pass(&mp_bad_store, false);
}

/* ----------------------------------------------------- release sequences */

static void rs_rmw(void *p)
{
	litmus *c = p;
	atomic_fetch_add_explicit(&c->x, 1, memory_order_relaxed);
}
static void rs_store(void *p)
{
	litmus *c = p;
	if (atomic_load_explicit(&c->x, memory_order_relaxed) == 1)
		atomic_store_explicit(&c->x, 2, memory_order_relaxed);
}
static void rs_reader(void *p)
{
	litmus *c = p;
	if (atomic_load_explicit(&c->x, memory_order_acquire) == 2)
		MODEL_PLAIN_READ(&c->data);
}

static const sb_model_scenario rs_ok = { "release sequence through an RMW", 3,
					 sizeof(litmus), NULL,
					 { mp_release, rs_rmw, rs_reader }, NULL };
static const sb_model_scenario rs_bad = { "no release sequence through a plain store", 3,
					  sizeof(litmus), NULL,
					  { mp_release, rs_store, rs_reader }, NULL };

static void only_read_modify_writes_continue_a_release_sequence(void **state)
{
	(void)state;
	expect_pass(&rs_ok, true);
	expect_race(&rs_bad);
}

/* ------------------------------------------------ stale reads, coherence */

/* Store buffering: both loads read 0, which release/acquire allows. */
static void sb_t0(void *p)
{
	litmus *c = p;
	atomic_store_explicit(&c->x, 1, memory_order_release);
	c->a = atomic_load_explicit(&c->y, memory_order_acquire);
}
static void sb_t1(void *p)
{
	litmus *c = p;
	atomic_store_explicit(&c->y, 1, memory_order_release);
	c->b = atomic_load_explicit(&c->x, memory_order_acquire);
}
static void sb_check(void *p)
{
	litmus *c = p;
	count_if(c->a == 0 && c->b == 0);
}

static const sb_model_scenario store_buffering = { "SB", 2, sizeof(litmus), NULL,
						   { sb_t0, sb_t1 }, sb_check };

static void store_buffering_reads_two_zeros_only_under_the_weak_model(void **state)
{
	(void)state;
	expect_pass(&store_buffering, false);
	assert_int_equal(outcomes, 0);
	expect_pass(&store_buffering, true);
	assert_true(outcomes > 0);
}

/* Coherence: two reads of one location never go back in its order. */
static void co_writer(void *p)
{
	litmus *c = p;
	atomic_store_explicit(&c->x, 1, memory_order_relaxed);
	atomic_store_explicit(&c->x, 2, memory_order_relaxed);
	atomic_store_explicit(&c->y, 1, memory_order_release);
	c->writer_done = true;
}
static void co_reader(void *p)
{
	litmus *c = p;
	c->a = atomic_load_explicit(&c->x, memory_order_relaxed);
	c->b = atomic_load_explicit(&c->x, memory_order_relaxed);
	MODEL_CHECK(c->b >= c->a);
}
/*
 * ... nor older than a store that happens-before the read, though without
 * happens-before it may read an old value after the writer has finished.
 */
static void hb_reader(void *p)
{
	litmus *c = p;
	c->saw_done = c->writer_done;
	c->a = atomic_load_explicit(&c->x, memory_order_relaxed);
	if (atomic_load_explicit(&c->y, memory_order_acquire) == 1)
		MODEL_CHECK(atomic_load_explicit(&c->x, memory_order_relaxed) == 2);
}
static void hb_check(void *p)
{
	litmus *c = p;
	count_if(c->saw_done && c->a == 0);
}

static const sb_model_scenario coherence = { "CoRR", 2, sizeof(litmus), NULL,
					     { co_writer, co_reader }, NULL };
static const sb_model_scenario hb_floor = { "a read after an acquire", 2, sizeof(litmus), NULL,
					    { co_writer, hb_reader }, hb_check };

static void a_load_never_reads_older_than_coherence_and_happens_before_allow(void **state)
{
	(void)state;
	expect_pass(&coherence, true);
	expect_pass(&hb_floor, false);
	assert_int_equal(outcomes, 0);
	expect_pass(&hb_floor, true);
	assert_true(outcomes > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(message_passing_needs_a_release_and_an_acquire_under_the_weak_model),
		cmocka_unit_test(only_read_modify_writes_continue_a_release_sequence),
		cmocka_unit_test(store_buffering_reads_two_zeros_only_under_the_weak_model),
		cmocka_unit_test(a_load_never_reads_older_than_coherence_and_happens_before_allow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
