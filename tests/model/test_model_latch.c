/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of syncband/latch.h (sched.c): count_downs,
 * reopening adds, first polls and cancels racing each other, each explored
 * over every schedule with up to four preemptions under sequential
 * consistency and three preemptions and two stale reads under the weak
 * model, then over random schedules under both.  Each check says where the
 * count must end, that every wait registered before a zero was woken once
 * and completes, and that no waker clone is left; under the weak model also
 * that what a counter wrote before its count_down (its payload) and a
 * waker's clone happen-before the wait that the zero lets through.  The
 * model build's wake batch holds 2, so a broadcast to 3 waits drops and
 * re-takes its lock mid-way.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include <syncband/latch.h>

#include "sched.h"

/* Under the weak model: a clone happens-before every use of that clone. */
#define COUNTING_WAKER_CLONED(c) MODEL_PLAIN_WRITE(c)
#define COUNTING_WAKER_USED(c) MODEL_PLAIN_READ(c)
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

/* The bounds of model_common.h (README.md in this folder). */
enum { PREEMPTIONS = 4, LIMIT = 2000000, RANDOM_RUNS = 3000, SEED = 20261201 };
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

enum { WAITS = 3 };

typedef struct latch_ctx {
	sb_latch l;
	sb_latch_wait f[WAITS];
	counting_waker w[WAITS];
	int r[WAITS];
	int payload[2]; /* each counter's */
	int add_result;
	int down_result;
	long down_rmws; /* the read-modify-writes of t0's count_down */
} latch_ctx;

static int poll_wait(sb_latch_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_latch_wait_poll(f, &w);
}

/* What a counter writes before its count_down, for the waits it lets through. */
static void publish(int *payload)
{
	*payload = 1;
	MODEL_PLAIN_WRITE(payload);
}

/* After a wait completed or a try_wait returned 0. */
static void consume(const int *payload)
{
	MODEL_PLAIN_READ(payload);
	MODEL_CHECK(*payload == 1);
}

/* Waits (in a logical thread) until `w` is woken; false if that never comes. */
static bool await_wake(counting_waker *w)
{
	return sb_model_await_change(&w->wakes, 0);
}

/*
 * A first poll of wait i, then (if it went pending) the re-poll its wake
 * causes: true once it completed.  A poll before any wake owes its result to
 * the latch's own publication.
 */
static bool wait_until_open(latch_ctx *c, int i)
{
	sb_latch_wait_init(&c->f[i], &c->l);
	c->r[i] = poll_wait(&c->f[i], &c->w[i]);
	if (c->r[i] == 0)
		return true;
	MODEL_CHECK(c->r[i] == SB_PENDING);
	return await_wake(&c->w[i]) && poll_wait(&c->f[i], &c->w[i]) == 0;
}

static void setup_latch(latch_ctx *c, size_t count, int queued)
{
	MODEL_CHECK(sb_latch_init(&c->l, count) == 0);
	for (int i = 0; i < WAITS; i++)
		counting_waker_init(&c->w[i]);
	for (int i = 0; i < queued; i++) {
		sb_latch_wait_init(&c->f[i], &c->l);
		c->r[i] = poll_wait(&c->f[i], &c->w[i]);
		MODEL_CHECK(c->r[i] == SB_PENDING);
	}
}

/* Every clone was woken or dropped, and nothing is left registered. */
static void expect_clean(latch_ctx *c)
{
	for (int i = 0; i < WAITS; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_latch_destroy(&c->l) == 0);
}

/* A wait queued in setup: released by the zero, woken once, completes. */
static void expect_released(latch_ctx *c, int i)
{
	MODEL_CHECK(atomic_load(&c->w[i].wakes) == 1);
	MODEL_CHECK(poll_wait(&c->f[i], &c->w[i]) == 0);
}

/* --- count_down to zero racing a new wait's first poll ------------------- */

/* A wait is queued, so the count_down takes the broadcast path. */
static void cd1_setup(void *p)
{
	setup_latch(p, 1, 1);
}
static void cd1_t0(void *p)
{
	latch_ctx *c = p;
	publish(&c->payload[0]);
	MODEL_CHECK(sb_latch_count_down(&c->l, 1) == 0);
}
static void cd1_t1(void *p)
{
	latch_ctx *c = p;
	if (wait_until_open(c, 1))
		consume(&c->payload[0]);
}
static void cd1_t2(void *p)
{
	latch_ctx *c = p;
	if (sb_latch_try_wait(&c->l) == 0)
		consume(&c->payload[0]);
}
static void cd1_check(void *p)
{
	latch_ctx *c = p;
	MODEL_CHECK(sb_latch_count(&c->l) == 0);
	expect_released(c, 0);
	/* pending means it queued before the zero: released too */
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == (c->r[1] == SB_PENDING));
	MODEL_CHECK(poll_wait(&c->f[1], &c->w[1]) == 0);
	expect_clean(c);
}

/* Nobody queued: the count_down's lock-free CAS racing a first poll. */
static void cd2_setup(void *p)
{
	setup_latch(p, 1, 0);
}
static void cd2_check(void *p)
{
	latch_ctx *c = p;
	MODEL_CHECK(sb_latch_count(&c->l) == 0);
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == (c->r[1] == SB_PENDING));
	MODEL_CHECK(poll_wait(&c->f[1], &c->w[1]) == 0);
	expect_clean(c);
}

/* --- two count_downs racing to zero, a wait queued and another arriving --- */

static void two_setup(void *p)
{
	setup_latch(p, 2, 1);
}
static void two_t1(void *p)
{
	latch_ctx *c = p;
	publish(&c->payload[1]);
	MODEL_CHECK(sb_latch_count_down(&c->l, 1) == 0);
}
/* A new wait: once open, it sees both counters' writes. */
static void two_t2(void *p)
{
	latch_ctx *c = p;
	if (wait_until_open(c, 1)) {
		consume(&c->payload[0]);
		consume(&c->payload[1]);
	}
}
static void two_check(void *p)
{
	latch_ctx *c = p;
	MODEL_CHECK(sb_latch_count(&c->l) == 0);
	expect_released(c, 0);
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == (c->r[1] == SB_PENDING));
	MODEL_CHECK(poll_wait(&c->f[1], &c->w[1]) == 0);
	expect_clean(c);
}

/*
 * Nobody waits, and the count_down's inline CAS to zero fails spuriously (as
 * C11 lets a weak CAS): its out-of-line retry must still take the count to
 * zero with one CAS and no queue lock, as the inline path would have (the
 * lock is for waits queued or registering).  t1 only loads, so every
 * read-modify-write counted around the count_down is its own: the failed
 * inline CAS, if it failed, and the retry's.
 */
static void spurious_setup(void *p)
{
	setup_latch(p, 1, 0);
	sb_model_allow_spurious_failures(1);
}
static void spurious_t0(void *p)
{
	latch_ctx *c = p;
	publish(&c->payload[0]);
	long before = sb_model_rmws();
	c->down_result = sb_latch_count_down(&c->l, 1);
	c->down_rmws = sb_model_rmws() - before;
}
static void spurious_check(void *p)
{
	latch_ctx *c = p;
	MODEL_CHECK(c->down_result == 0);
	MODEL_CHECK(c->down_rmws == 1 || c->down_rmws == 2);
	MODEL_CHECK(sb_latch_count(&c->l) == 0);
	expect_clean(c);
}

/* --- a reopening add racing a count_down and a new wait ------------------ */

/*
 * Count 1.  t0 counts down (publishing); t1 adds 1 and counts down again;
 * t2's wait: every zero comes after t0's count_down (t1's add precedes its
 * own), so a wait that completes sees t0's payload.  The count ends at zero,
 * so a wait that went pending is woken.
 */
static void add_setup(void *p)
{
	setup_latch(p, 1, 0);
}
static void add_t1(void *p)
{
	latch_ctx *c = p;
	c->add_result = sb_latch_add(&c->l, 1);
	MODEL_CHECK(sb_latch_count_down(&c->l, 1) == 0);
}
static void add_t2(void *p)
{
	latch_ctx *c = p;
	if (wait_until_open(c, 2))
		consume(&c->payload[0]);
}
static void add_check(void *p)
{
	latch_ctx *c = p;
	MODEL_CHECK(c->add_result == 0);
	MODEL_CHECK(sb_latch_count(&c->l) == 0);
	MODEL_CHECK(atomic_load(&c->w[2].wakes) == (c->r[2] == SB_PENDING));
	MODEL_CHECK(poll_wait(&c->f[2], &c->w[2]) == 0);
	expect_clean(c);
}

/*
 * An open latch with a wait released but not yet observed: an add reopens
 * it while a count_down tries its one unit and a new wait registers.  The
 * count_down finds 1 (after the add) or 0 (-ERANGE, nothing taken); the new
 * wait completes only through a zero, and the released one stays released.
 */
static void reopen_setup(void *p)
{
	latch_ctx *c = p;
	setup_latch(c, 1, 1);
	MODEL_CHECK(sb_latch_count_down(&c->l, 1) == 0);
}
static void reopen_t0(void *p)
{
	latch_ctx *c = p;
	c->add_result = sb_latch_add(&c->l, 1);
}
static void reopen_t1(void *p)
{
	latch_ctx *c = p;
	c->down_result = sb_latch_count_down(&c->l, 1);
}
static void reopen_t2(void *p)
{
	latch_ctx *c = p;
	sb_latch_wait_init(&c->f[1], &c->l);
	c->r[1] = poll_wait(&c->f[1], &c->w[1]);
	MODEL_CHECK(poll_wait(&c->f[0], &c->w[0]) == 0); /* released before the add */
}
static void reopen_check(void *p)
{
	latch_ctx *c = p;
	MODEL_CHECK(c->add_result == 0);
	MODEL_CHECK(c->down_result == 0 || c->down_result == -ERANGE);
	MODEL_CHECK(sb_latch_count(&c->l) == (c->down_result == 0 ? 0u : 1u));
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	if (c->r[1] == SB_PENDING) {
		/* queued after the add: only a count_down after it releases it */
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == (c->down_result == 0));
		if (c->down_result == 0)
			MODEL_CHECK(poll_wait(&c->f[1], &c->w[1]) == 0);
		else
			sb_latch_wait_cancel(&c->f[1]);
	} else {
		MODEL_CHECK(c->r[1] == 0);
	}
	expect_clean(c);
}

/* --- cancel racing the release ------------------------------------------ */

/*
 * Two waits queued; t0's count_down releases them while t1 cancels the
 * first: it leaves the queue (its clone dropped) or finds itself released
 * (its clone woken); either way the other is released and nothing is left.
 */
static void cancel_setup(void *p)
{
	setup_latch(p, 1, 2);
}
static void cancel_t1(void *p)
{
	latch_ctx *c = p;
	sb_latch_wait_cancel(&c->f[0]);
	MODEL_CHECK(poll_wait(&c->f[0], &c->w[0]) == -ECANCELED);
}
static void cancel_check(void *p)
{
	latch_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) + atomic_load(&c->w[0].drops) == 1);
	expect_released(c, 1);
	MODEL_CHECK(sb_latch_count(&c->l) == 0);
	expect_clean(c);
}

/* --- the broadcast past a wake batch ------------------------------------ */

/*
 * Three waits queued, a wake batch of 2: the count_down wakes two, drops its
 * lock, then releases the third.  t1, the first wait's owner, woken, polls
 * the third: it must find it released, never pending, even before the
 * count_down reached it.
 */
static void crowd_setup(void *p)
{
	setup_latch(p, 1, 3);
}
static void crowd_t1(void *p)
{
	latch_ctx *c = p;
	if (!await_wake(&c->w[0]))
		return;
	MODEL_CHECK(poll_wait(&c->f[0], &c->w[0]) == 0);
	consume(&c->payload[0]);
	MODEL_CHECK(poll_wait(&c->f[2], &c->w[2]) == 0);
}
static void crowd_check(void *p)
{
	latch_ctx *c = p;
	MODEL_CHECK(sb_latch_count(&c->l) == 0);
	expect_released(c, 0);
	expect_released(c, 1);
	/* woken by the count_down, or completed by t1's poll before it got there */
	MODEL_CHECK(atomic_load(&c->w[2].wakes) + atomic_load(&c->w[2].drops) == 1);
	MODEL_CHECK(poll_wait(&c->f[2], &c->w[2]) == 0);
	expect_clean(c);
}

/*
 * The same broadcast while the third wait's owner cancels it: still queued,
 * released but not yet reached (it unlinks itself from the broadcast's
 * list), or detached; its clone is dropped or woken, once.
 */
static void crowd_cancel_t1(void *p)
{
	latch_ctx *c = p;
	sb_latch_wait_cancel(&c->f[2]);
	MODEL_CHECK(poll_wait(&c->f[2], &c->w[2]) == -ECANCELED);
}
static void crowd_cancel_check(void *p)
{
	latch_ctx *c = p;
	MODEL_CHECK(sb_latch_count(&c->l) == 0);
	expect_released(c, 0);
	expect_released(c, 1);
	MODEL_CHECK(atomic_load(&c->w[2].wakes) + atomic_load(&c->w[2].drops) == 1);
	expect_clean(c);
}

static const sb_model_scenario scenarios[] = {
	{ "latch: count_down to zero with a wait queued racing a new wait and try_wait", 3,
	  sizeof(latch_ctx), cd1_setup, { cd1_t0, cd1_t1, cd1_t2 }, cd1_check },
	{ "latch: lock-free count_down to zero racing a new wait and try_wait", 3,
	  sizeof(latch_ctx), cd2_setup, { cd1_t0, cd1_t1, cd1_t2 }, cd2_check },
	{ "latch: a count_down to zero whose inline CAS fails spuriously, racing try_wait, takes no lock",
	  2, sizeof(latch_ctx), spurious_setup, { spurious_t0, cd1_t2 }, spurious_check },
	{ "latch: two count_downs racing to zero with a waiter", 3, sizeof(latch_ctx),
	  two_setup, { cd1_t0, two_t1, two_t2 }, two_check },
	{ "latch: add and count_down racing another count_down and a new wait", 3,
	  sizeof(latch_ctx), add_setup, { cd1_t0, add_t1, add_t2 }, add_check },
	{ "latch: a reopening add racing a count_down and a new wait", 3, sizeof(latch_ctx),
	  reopen_setup, { reopen_t0, reopen_t1, reopen_t2 }, reopen_check },
	{ "latch: cancel racing the count_down that releases it", 2, sizeof(latch_ctx),
	  cancel_setup, { cd1_t0, cancel_t1 }, cancel_check },
	{ "latch: a woken wait polling another while the broadcast passes a batch", 2,
	  sizeof(latch_ctx), crowd_setup, { cd1_t0, crowd_t1 }, crowd_check },
	{ "latch: a cancel while the broadcast passes a batch", 2, sizeof(latch_ctx),
	  crowd_setup, { cd1_t0, crowd_cancel_t1 }, crowd_cancel_check },
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

static void every_latch_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	explore_all(PREEMPTIONS, -1);
}

static void every_latch_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	random_all(-1);
}

static void every_latch_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	explore_all(WEAK_PREEMPTIONS, STALE_READS);
}

static void every_latch_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	random_all(WEAK_RANDOM_STALE_READS);
}

/*
 * The uncontended paths the header promises: one atomic each, the
 * read-modify-writes counted (sb_model_rmws) outside the scheduler.
 */
static long rmws_before;
#define RMWS(expr) (rmws_before = sb_model_rmws(), (expr), sb_model_rmws() - rmws_before)

static void uncontended_count_down_and_try_wait_cost_one_atomic_and_take_no_lock(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_latch l = SB_LATCH_INIT(2);
	long points = sb_model_points();
	assert_int_equal(sb_latch_try_wait(&l), -EAGAIN);
	assert_int_equal(sb_model_points() - points, 1); /* one load */
	assert_int_equal(RMWS(sb_latch_count_down(&l, 1)), 1);
	assert_int_equal(RMWS(sb_latch_count_down(&l, 1)), 1); /* to zero, nobody waits */
	points = sb_model_points();
	assert_int_equal(sb_latch_try_wait(&l), 0);
	assert_int_equal(sb_model_points() - points, 1);
	sb_latch_wait f;
	sb_latch_wait_init(&f, &l);
	assert_int_equal(RMWS(sb_latch_wait_poll(&f, &noop)), 0); /* open: one load */
	assert_int_equal(RMWS(sb_latch_add(&l, 1)), 1);

	/* A wait queues: it decides and locks in one CAS, unlocks in one more;
	 * the count_down to zero locks in its zeroing CAS and unlocks. */
	sb_latch_wait_init(&f, &l);
	assert_int_equal(RMWS(sb_latch_wait_poll(&f, &noop)), 2);
	assert_int_equal(RMWS(sb_latch_count_down(&l, 1)), 2);
	assert_int_equal(RMWS(sb_latch_wait_poll(&f, &noop)), 0);
}

/* test_model_latch [RUN-PATTERN]: cmocka's test name filter. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_latch_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_latch_scenario_holds_over_random_schedules),
		cmocka_unit_test(uncontended_count_down_and_try_wait_cost_one_atomic_and_take_no_lock),
		cmocka_unit_test(every_latch_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_latch_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
