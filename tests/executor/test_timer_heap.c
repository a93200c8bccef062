/* SPDX-License-Identifier: Apache-2.0 */
/*
 * White-box tests of the executor's timer heap (src/executor/timer_heap.h):
 * timers come out by deadline, equal deadlines in the order they were
 * armed, and removing any armed timer keeps every link and the order intact.
 * Each step is checked against a plain array that holds the same timers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "executor/timer_heap.h"

enum { N = 300 };

static uint64_t rng_state;

static uint64_t rng(void)
{
	uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Every link agrees with its other end, no child comes before its parent,
 * and the tree holds exactly `count` nodes. */
static size_t check_subtree(const sb_sleep *s, const sb_sleep *parent)
{
	if (!s)
		return 0;
	assert_ptr_equal(s->parent, parent);
	if (parent)
		assert_false(timer_heap_before(s, parent));
	if (!s->left)
		assert_null(s->right); /* complete: a right child only beside a left one */
	return 1 + check_subtree(s->left, s) + check_subtree(s->right, s);
}

static void check_heap(const timer_heap *h)
{
	assert_int_equal(check_subtree(h->root, NULL), h->count);
}

/* The earliest of the `n` timers in `set` (deadline, then arming order). */
static size_t earliest(sb_sleep *const *set, size_t n)
{
	size_t best = 0;
	for (size_t i = 1; i < n; i++)
		if (timer_heap_before(set[i], set[best]))
			best = i;
	return best;
}

static void arm(timer_heap *h, sb_sleep *s, uint64_t deadline)
{
	memset(s, 0, sizeof *s);
	s->deadline = deadline;
	timer_heap_insert(h, s);
}

static void timers_come_out_by_deadline_and_ties_in_arming_order(void **state)
{
	(void)state;
	static sb_sleep s[N];
	timer_heap h = { NULL, 0, 0 };
	rng_state = 1;
	for (size_t i = 0; i < N; i++) {
		arm(&h, &s[i], rng() % 20); /* few distinct deadlines: many ties */
		check_heap(&h);
	}
	const sb_sleep *prev = NULL;
	for (size_t i = 0; i < N; i++) {
		sb_sleep *min = timer_heap_min(&h);
		assert_non_null(min);
		if (prev) {
			assert_true(prev->deadline <= min->deadline);
			if (prev->deadline == min->deadline)
				assert_true(prev < min); /* armed in array order */
		}
		timer_heap_remove(&h, min);
		assert_null(min->parent);
		assert_null(min->left);
		assert_null(min->right);
		check_heap(&h);
		prev = min;
	}
	assert_null(timer_heap_min(&h));
	assert_int_equal(h.count, 0);
}

static void removing_any_armed_timer_keeps_the_heap_in_order(void **state)
{
	(void)state;
	static sb_sleep s[N];
	sb_sleep *armed[N], *idle[N];
	size_t n = 0, n_idle = N;
	for (size_t i = 0; i < N; i++)
		idle[i] = &s[i];
	timer_heap h = { NULL, 0, 0 };
	rng_state = 2;
	for (int step = 0; step < 20000; step++) {
		unsigned op = (unsigned)(rng() % 3);
		if (n_idle && (n == 0 || op == 0)) {
			armed[n] = idle[--n_idle];
			arm(&h, armed[n++], rng() % 1000);
		} else {
			/* fire the earliest, or cancel one from anywhere in the heap */
			size_t k = op == 1 ? earliest(armed, n) : (size_t)(rng() % n);
			if (op == 1)
				assert_ptr_equal(timer_heap_min(&h), armed[k]);
			timer_heap_remove(&h, armed[k]);
			idle[n_idle++] = armed[k];
			armed[k] = armed[--n];
		}
		check_heap(&h);
		if (n)
			assert_ptr_equal(timer_heap_min(&h), armed[earliest(armed, n)]);
		else
			assert_null(timer_heap_min(&h));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(timers_come_out_by_deadline_and_ties_in_arming_order),
		cmocka_unit_test(removing_any_armed_timer_keeps_the_heap_in_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
