/* SPDX-License-Identifier: Apache-2.0 */
/*
 * White-box tests of the parker's contention streak (src/park.h): the rule
 * that stops the eventually fair mutex's spin once a thread has contended
 * for half a millisecond without sleeping.  The streak is asked at times the
 * test chooses, so nothing here waits for the clock but the one wait whose
 * sleep is the behaviour under test.  And the bounded retries a blocking
 * operation makes before it queues (sb_park_retry_before_wait: its looks a
 * few pauses apart, then its yields, and the thread's history of looks that
 * found nothing), counted through the operation they retry.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <syncband/blocking.h>
#include <syncband/semaphore.h>

#include "park.h"

static const uint64_t STEP_NS = 10000; /* well inside the gap */

/*
 * Each test starts its own streak far from every other test's times, so
 * that the gap since the last ask starts it whatever ran before on this
 * thread.  Returns the time of the last ask, which still allowed the spin.
 */
static uint64_t contend_for_a_whole_streak(uint64_t start)
{
	uint64_t now = start;
	for (; now - start < SB_PARK_STREAK_SPIN_NS; now += STEP_NS)
		assert_true(sb_park_streak_allows_spin(now));
	assert_false(sb_park_streak_allows_spin(now));
	return now;
}

static void a_thread_contending_without_sleeping_stops_spinning_after_the_streak(void **state)
{
	(void)state;
	uint64_t now = contend_for_a_whole_streak(1000000000ull);
	assert_false(sb_park_streak_allows_spin(now + STEP_NS));
	assert_false(sb_park_streak_allows_spin(now + 2 * STEP_NS));
}

static void a_pause_longer_than_the_gap_starts_a_new_streak(void **state)
{
	(void)state;
	uint64_t now = contend_for_a_whole_streak(2000000000ull);
	assert_true(sb_park_streak_allows_spin(now + SB_PARK_STREAK_GAP_NS + 1));
}

static void a_pause_no_longer_than_the_gap_keeps_the_streak(void **state)
{
	(void)state;
	uint64_t now = contend_for_a_whole_streak(3000000000ull);
	assert_false(sb_park_streak_allows_spin(now + SB_PARK_STREAK_GAP_NS));
}

/*
 * Whether the spin is allowed again just after a whole streak and then a
 * blocking wait for a permit nobody releases, which times out after
 * `timeout_ns`.
 */
static bool spin_allowed_after_a_wait_that_times_out(uint64_t start, uint64_t timeout_ns)
{
	uint64_t now = contend_for_a_whole_streak(start);
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	assert_int_equal(sb_semaphore_acquire_blocking(&s, 1, timeout_ns), -ETIMEDOUT);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
	return sb_park_streak_allows_spin(now + STEP_NS);
}

static void a_blocking_wait_that_sleeps_ends_the_streak(void **state)
{
	(void)state;
	/* It sleeps on its futex until the timeout. */
	assert_true(spin_allowed_after_a_wait_that_times_out(4000000000ull, 1000000));
}

static void a_blocking_wait_that_never_sleeps_keeps_the_streak(void **state)
{
	(void)state;
	/* A timeout of 0 polls, finds no permit and gives up without sleeping. */
	assert_false(spin_allowed_after_a_wait_that_times_out(5000000000ull, 0));
}

/* ------------------------------------------- sb_park_retry_before_wait */

typedef struct tries {
	unsigned calls;
	unsigned eagains; /* how many calls answer -EAGAIN before 0 */
} tries;

static int try_counted(void *arg)
{
	tries *t = arg;
	return t->calls++ < t->eagains ? -EAGAIN : 0;
}

static void a_retry_returns_the_first_answer_that_is_not_eagain(void **state)
{
	(void)state;
	tries t = { 0, 2 };
	uint64_t timeout = SB_TIMEOUT_INFINITE;
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 0), 0);
	assert_int_equal(t.calls, 3);
	assert_true(timeout == SB_TIMEOUT_INFINITE);
}

static void a_retry_gives_up_after_its_bounded_tries(void **state)
{
	(void)state;
	tries t = { 0, UINT32_MAX };
	uint64_t timeout = SB_TIMEOUT_INFINITE;
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 0), -EAGAIN);
	assert_int_equal(t.calls, SB_PARK_RETRY_YIELDS);
}

static void a_retry_with_a_timeout_of_0_tries_nothing(void **state)
{
	(void)state;
	tries t = { 0, UINT32_MAX };
	uint64_t timeout = 0;
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 0), -EAGAIN);
	assert_int_equal(t.calls, 0);
	assert_true(timeout == 0);
}

static void a_retry_that_gives_up_takes_its_time_off_the_timeout(void **state)
{
	(void)state;
	tries t = { 0, UINT32_MAX };
	uint64_t timeout = 1000000000; /* far longer than the retries */
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 0), -EAGAIN);
	assert_int_equal(t.calls, SB_PARK_RETRY_YIELDS);
	assert_true(timeout > 0 && timeout < 1000000000);
}

static void a_retry_stops_yielding_once_its_timeout_passed(void **state)
{
	(void)state;
	tries t = { 0, UINT32_MAX };
	uint64_t timeout = 1; /* passed before the second yield */
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 0), -EAGAIN);
	assert_true(timeout == 0);
	assert_in_range(t.calls, 0, 1);
}

/*
 * Empties this thread's looks history (park.h): retries whose first try
 * succeeds use up any skips, then one looks, finds something and so ends
 * the backoff.
 */
static void forget_the_looks_history(void)
{
	for (unsigned i = 0; i <= SB_PARK_LOOKS_MAX_SKIP; i++) {
		tries t = { 0, 0 };
		uint64_t timeout = SB_TIMEOUT_INFINITE;
		assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 1), 0);
	}
}

/* Whether a retry of `spin_steps` looks that all find nothing looked. */
static bool a_missing_retry_looked(unsigned spin_steps)
{
	tries t = { 0, UINT32_MAX };
	uint64_t timeout = SB_TIMEOUT_INFINITE;
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, spin_steps), -EAGAIN);
	if (t.calls == SB_PARK_RETRY_YIELDS)
		return false;
	assert_int_equal(t.calls, spin_steps + SB_PARK_RETRY_YIELDS);
	return true;
}

static void a_retry_looks_once_after_each_spin_step_before_its_yields(void **state)
{
	(void)state;
	forget_the_looks_history();
	assert_true(a_missing_retry_looked(5)); /* 5 looks, then the yields */
}

static void a_retry_that_succeeds_while_spinning_returns_at_once(void **state)
{
	(void)state;
	forget_the_looks_history();
	tries t = { 0, 3 };
	uint64_t timeout = SB_TIMEOUT_INFINITE;
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 48), 0);
	assert_int_equal(t.calls, 4); /* no more looks, and no yield */
}

static void looks_that_find_nothing_skip_the_next_retries_looks_twice_as_many_each_time(void **state)
{
	(void)state;
	forget_the_looks_history();
	unsigned skip = 1;
	for (int miss = 0; miss < 10; miss++) {
		assert_true(a_missing_retry_looked(3));
		for (unsigned i = 0; i < skip; i++)
			assert_false(a_missing_retry_looked(3)); /* the yields only */
		skip = skip < SB_PARK_LOOKS_MAX_SKIP ? 2 * skip : SB_PARK_LOOKS_MAX_SKIP;
	}
	assert_true(a_missing_retry_looked(3));
}

static void looks_that_find_something_end_the_skipping(void **state)
{
	(void)state;
	forget_the_looks_history();
	assert_true(a_missing_retry_looked(3));  /* skip 1 */
	assert_false(a_missing_retry_looked(3));
	assert_true(a_missing_retry_looked(3));  /* skip 2 */
	assert_false(a_missing_retry_looked(3));
	assert_false(a_missing_retry_looked(3));
	tries t = { 0, 1 }; /* the second look finds it */
	uint64_t timeout = SB_TIMEOUT_INFINITE;
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 3), 0);
	assert_int_equal(t.calls, 2);
	assert_true(a_missing_retry_looked(3)); /* skip 1 again, not 4 */
	assert_false(a_missing_retry_looked(3));
	assert_true(a_missing_retry_looked(3));
}

static void a_retry_without_spin_steps_neither_looks_nor_uses_up_a_skip(void **state)
{
	(void)state;
	forget_the_looks_history();
	assert_true(a_missing_retry_looked(3)); /* skip 1 */
	assert_false(a_missing_retry_looked(0));
	assert_false(a_missing_retry_looked(3)); /* the skip was still there */
	assert_true(a_missing_retry_looked(3));
}

static void a_retry_with_spin_steps_and_a_timeout_of_0_tries_nothing(void **state)
{
	(void)state;
	forget_the_looks_history();
	tries t = { 0, UINT32_MAX };
	uint64_t timeout = 0;
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 48), -EAGAIN);
	assert_int_equal(t.calls, 0);
}

static void a_retry_stops_spinning_once_its_timeout_passed(void **state)
{
	(void)state;
	forget_the_looks_history();
	tries t = { 0, UINT32_MAX };
	uint64_t timeout = 1; /* passed before the second look */
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 1000000), -EAGAIN);
	assert_true(timeout == 0);
	assert_in_range(t.calls, 0, 1);
	assert_true(a_missing_retry_looked(3)); /* looks cut short by the timeout: no skip */
}

static void a_retry_that_spins_and_gives_up_takes_its_time_off_the_timeout(void **state)
{
	(void)state;
	forget_the_looks_history();
	tries t = { 0, UINT32_MAX };
	uint64_t timeout = 1000000000; /* far longer than the retries */
	assert_int_equal(sb_park_retry_before_wait(try_counted, &t, &timeout, 48), -EAGAIN);
	assert_int_equal(t.calls, 48 + SB_PARK_RETRY_YIELDS);
	assert_true(timeout > 0 && timeout < 1000000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_thread_contending_without_sleeping_stops_spinning_after_the_streak),
		cmocka_unit_test(a_pause_longer_than_the_gap_starts_a_new_streak),
		cmocka_unit_test(a_pause_no_longer_than_the_gap_keeps_the_streak),
		cmocka_unit_test(a_blocking_wait_that_sleeps_ends_the_streak),
		cmocka_unit_test(a_blocking_wait_that_never_sleeps_keeps_the_streak),
		cmocka_unit_test(a_retry_returns_the_first_answer_that_is_not_eagain),
		cmocka_unit_test(a_retry_gives_up_after_its_bounded_tries),
		cmocka_unit_test(a_retry_with_a_timeout_of_0_tries_nothing),
		cmocka_unit_test(a_retry_that_gives_up_takes_its_time_off_the_timeout),
		cmocka_unit_test(a_retry_stops_yielding_once_its_timeout_passed),
		cmocka_unit_test(a_retry_looks_once_after_each_spin_step_before_its_yields),
		cmocka_unit_test(a_retry_that_succeeds_while_spinning_returns_at_once),
		cmocka_unit_test(looks_that_find_nothing_skip_the_next_retries_looks_twice_as_many_each_time),
		cmocka_unit_test(looks_that_find_something_end_the_skipping),
		cmocka_unit_test(a_retry_without_spin_steps_neither_looks_nor_uses_up_a_skip),
		cmocka_unit_test(a_retry_with_spin_steps_and_a_timeout_of_0_tries_nothing),
		cmocka_unit_test(a_retry_stops_spinning_once_its_timeout_passed),
		cmocka_unit_test(a_retry_that_spins_and_gives_up_takes_its_time_off_the_timeout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
