/* SPDX-License-Identifier: Apache-2.0 */
/*
 * More threads than cores on one mutex, in each mode: blocking lockers
 * (with no timeout, a short one and none at all, so that a thread woken
 * alone may give up before its retry), future lockers (cancelled while
 * queued and after their wake) and try_lock.  Checks that no two ever hold
 * the mutex at once, that every completed lock was unlocked, that no waker
 * leaks and that the run reached the queue.
 *
 * SB_STRESS_OPS (environment) sets the number of lock attempts per mode;
 * the default is 3 * 10^5.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <syncband/mutex.h>

#include "check.h"
#include "counting_waker.h"
#include "stress.h"
#include "watchdog.h"

enum { THREADS = 6 };

typedef struct stress {
	sb_mutex mutex;
	atomic_long holders;  /* threads inside the critical section */
	atomic_long over;     /* times holders exceeded 1 */
	long counter;         /* guarded by the mutex */
	atomic_long acquired; /* completed locks */
	atomic_long cancelled;
	atomic_long timed_out;
	atomic_long waited;   /* future locks that went pending */
	long ops_per_thread;
} stress;

typedef struct worker {
	stress *st;
	unsigned seed;
	bool blocking;
	counting_waker waker;
} worker;

static void hold_and_unlock(stress *st)
{
	if (atomic_fetch_add(&st->holders, 1) != 0)
		atomic_fetch_add(&st->over, 1);
	st->counter++;
	atomic_fetch_add(&st->acquired, 1);
	atomic_fetch_sub(&st->holders, 1);
	CHECK(sb_mutex_unlock(&st->mutex) == 0);
}

static void blocking_round(worker *w)
{
	stress *st = w->st;
	unsigned pick = stress_next_random(&w->seed) % 8;
	uint64_t timeout = pick == 0 ? 0 : pick == 1 ? 20000 : SB_TIMEOUT_INFINITE;
	int r = sb_mutex_lock_blocking(&st->mutex, timeout);
	if (r == -ETIMEDOUT) {
		atomic_fetch_add(&st->timed_out, 1);
		return;
	}
	CHECK(r == 0);
	hold_and_unlock(st);
}

static void future_round(worker *w)
{
	stress *st = w->st;
	sb_waker waker = counting_waker_ref(&w->waker);
	sb_mutex_lock f;
	sb_mutex_lock_init(&f, &st->mutex);
	int wakes = atomic_load(&w->waker.wakes);
	int r = sb_mutex_lock_poll(&f, &waker);
	unsigned pick = stress_next_random(&w->seed) % 8;
	if (r == SB_PENDING)
		atomic_fetch_add(&st->waited, 1);
	while (r == SB_PENDING) {
		if (pick == 0) { /* cancel while queued */
			sb_mutex_lock_cancel(&f);
			atomic_fetch_add(&st->cancelled, 1);
			return;
		}
		stress_await_wake(&w->waker, &wakes);
		if (pick == 1) { /* cancel after the wake: woken or handed the mutex */
			sb_mutex_lock_cancel(&f);
			atomic_fetch_add(&st->cancelled, 1);
			return;
		}
		r = sb_mutex_lock_poll(&f, &waker);
	}
	CHECK(r == 0);
	hold_and_unlock(st);
}

/* Until the queue was reached (barging can keep futures from waiting for a
 * while): its share of the attempts, and more until a future has waited and
 * one has been cancelled. */
static bool more_to_do(const stress *st, long done)
{
	return done < st->ops_per_thread || atomic_load(&st->waited) == 0 ||
	       atomic_load(&st->cancelled) == 0;
}

static void *run_worker(void *p)
{
	worker *w = p;
	for (long i = 0; more_to_do(w->st, i); i++) {
		if (stress_next_random(&w->seed) % 16 == 0) {
			if (sb_mutex_try_lock(&w->st->mutex) == 0)
				hold_and_unlock(w->st);
			continue;
		}
		if (w->blocking)
			blocking_round(w);
		else
			future_round(w);
	}
	return NULL;
}

static void run_stress(bool fifo, const char *name)
{
	long total = stress_total_ops(300000);
	sb_watchdog wd;
	sb_watchdog_start(&wd, 280, name);

	static stress st;
	st = (stress){ .ops_per_thread = total / THREADS + 1 };
	assert_int_equal(fifo ? sb_mutex_init_fifo(&st.mutex) : sb_mutex_init(&st.mutex), 0);
	worker w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i].st = &st;
		w[i].seed = stress_seed(i);
		w[i].blocking = i % 2 == 0;
		counting_waker_init(&w[i].waker);
	}
	stress_run_threads(THREADS, run_worker, w, sizeof w[0]);
	sb_watchdog_stop(&wd);

	printf("%s: at least %ld attempts, %ld acquired, %ld futures queued, %ld cancelled, "
	       "%ld timed out\n", name, st.ops_per_thread * THREADS, atomic_load(&st.acquired),
	       atomic_load(&st.waited), atomic_load(&st.cancelled), atomic_load(&st.timed_out));
	assert_int_equal(atomic_load(&st.over), 0);
	assert_int_equal(st.counter, atomic_load(&st.acquired));
	assert_false(sb_mutex_is_locked(&st.mutex));
	/* the run exercised the queue, not only the fast path (more_to_do) */
	assert_true(atomic_load(&st.waited) > 0);
	assert_true(atomic_load(&st.cancelled) > 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(atomic_load(&w[i].waker.live), 0);
	assert_int_equal(sb_mutex_destroy(&st.mutex), 0);
}

static void an_eventually_fair_mutex_stays_exclusive_under_mixed_threads_and_cancellations(void **state)
{
	(void)state;
	run_stress(false, "fair mutex stress");
}

static void a_strict_fifo_mutex_stays_exclusive_under_mixed_threads_and_cancellations(void **state)
{
	(void)state;
	run_stress(true, "fifo mutex stress");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(an_eventually_fair_mutex_stays_exclusive_under_mixed_threads_and_cancellations),
		cmocka_unit_test(a_strict_fifo_mutex_stays_exclusive_under_mixed_threads_and_cancellations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
