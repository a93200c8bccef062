/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Many threads, blocking and future-based acquirers mixed, random
 * multi-permit sizes, timeouts and cancellations at every stage.  Checks that
 * permits are never over-granted while held and are all back at the end.
 *
 * SB_STRESS_OPS (environment) sets the total number of acquire attempts;
 * the default is 10^6.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/semaphore.h>

#include "check.h"
#include "counting_waker.h"
#include "stress.h"
#include "watchdog.h"

enum { PERMITS = 4, THREADS = 6, MAX_REQUEST = 3 };

typedef struct stress {
	sb_semaphore sem;
	atomic_long in_use;   /* permits held by completed acquires */
	atomic_long over;     /* times in_use exceeded PERMITS */
	atomic_long acquired; /* completed acquires */
	atomic_long cancelled;
	atomic_long timed_out;
	atomic_long waited;   /* future acquires that went pending */
	long ops_per_thread;
} stress;

typedef struct worker {
	stress *st;
	unsigned seed;
	bool blocking;
	counting_waker waker;
} worker;

static void hold_and_release(stress *st, size_t n)
{
	long now = atomic_fetch_add(&st->in_use, (long)n) + (long)n;
	if (now > PERMITS)
		atomic_fetch_add(&st->over, 1);
	atomic_fetch_add(&st->acquired, 1);
	atomic_fetch_sub(&st->in_use, (long)n);
	CHECK(sb_semaphore_release(&st->sem, n) == 0);
}

static void blocking_round(worker *w, size_t n)
{
	stress *st = w->st;
	unsigned pick = stress_next_random(&w->seed) % 8;
	uint64_t timeout = pick == 0 ? 0 : pick == 1 ? 20000 : SB_TIMEOUT_INFINITE;
	int r = sb_semaphore_acquire_blocking(&st->sem, n, timeout);
	if (r == -ETIMEDOUT) {
		atomic_fetch_add(&st->timed_out, 1);
		return;
	}
	CHECK(r == 0);
	hold_and_release(st, n);
}

static void future_round(worker *w, size_t n)
{
	stress *st = w->st;
	sb_waker waker = counting_waker_ref(&w->waker);
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, &st->sem, n);
	int wakes = atomic_load(&w->waker.wakes);
	int r = sb_semaphore_acquire_poll(&f, &waker);
	unsigned pick = stress_next_random(&w->seed) % 8;
	if (r == SB_PENDING)
		atomic_fetch_add(&st->waited, 1);
	while (r == SB_PENDING) {
		if (pick == 0) { /* cancel while queued: maybe partly granted */
			sb_semaphore_acquire_cancel(&f);
			atomic_fetch_add(&st->cancelled, 1);
			return;
		}
		stress_await_wake(&w->waker, &wakes);
		if (pick == 1) { /* cancel after the wake: granted, never observed */
			sb_semaphore_acquire_cancel(&f);
			atomic_fetch_add(&st->cancelled, 1);
			return;
		}
		r = sb_semaphore_acquire_poll(&f, &waker);
	}
	CHECK(r == 0);
	hold_and_release(st, n);
}

static void *run_worker(void *p)
{
	worker *w = p;
	for (long i = 0; i < w->st->ops_per_thread; i++) {
		size_t n = 1 + stress_next_random(&w->seed) % MAX_REQUEST;
		if (stress_next_random(&w->seed) % 16 == 0) {
			if (sb_semaphore_try_acquire(&w->st->sem, n) == 0)
				hold_and_release(w->st, n);
			continue;
		}
		if (w->blocking)
			blocking_round(w, n);
		else
			future_round(w, n);
	}
	return NULL;
}

/* Half the attempts in each mode, so that the run takes as long as it did. */
static void check_permits_are_conserved(bool fifo)
{
	long total = stress_total_ops(1000000) / 2 + 1;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 280, "semaphore stress");

	static stress st;
	memset(&st, 0, sizeof st);
	assert_int_equal(fifo ? sb_semaphore_init_fifo(&st.sem, PERMITS) : sb_semaphore_init(&st.sem, PERMITS),
			 0);
	st.ops_per_thread = total / THREADS + 1;
	worker w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i].st = &st;
		w[i].seed = stress_seed(i);
		w[i].blocking = i % 2 == 0;
		counting_waker_init(&w[i].waker);
	}
	stress_run_threads(THREADS, run_worker, w, sizeof w[0]);
	sb_watchdog_stop(&wd);

	printf("stress: %ld attempts, %ld acquired, %ld futures queued, %ld cancelled, "
	       "%ld timed out\n", st.ops_per_thread * THREADS, atomic_load(&st.acquired),
	       atomic_load(&st.waited), atomic_load(&st.cancelled), atomic_load(&st.timed_out));
	assert_int_equal(atomic_load(&st.over), 0);
	assert_int_equal(atomic_load(&st.in_use), 0);
	assert_int_equal(sb_semaphore_available(&st.sem), PERMITS);
	/* the run must have exercised the queue, not only the fast path */
	assert_true(atomic_load(&st.waited) > 0);
	assert_true(atomic_load(&st.cancelled) > 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(atomic_load(&w[i].waker.live), 0);
	assert_int_equal(sb_semaphore_destroy(&st.sem), 0);
}

static void permits_are_conserved_under_mixed_threads_and_cancellations(void **state)
{
	(void)state;
	check_permits_are_conserved(false);
}

static void strict_fifo_permits_are_conserved_under_mixed_threads_and_cancellations(void **state)
{
	(void)state;
	check_permits_are_conserved(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(permits_are_conserved_under_mixed_threads_and_cancellations),
		cmocka_unit_test(strict_fifo_permits_are_conserved_under_mixed_threads_and_cancellations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
