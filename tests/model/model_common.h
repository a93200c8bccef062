/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the explorer programs of the semaphore, the mutex's races, the
 * condvar, the events, blocking waits and deadlines share (one program per
 * primitive: test_model_semaphore.c, ...).  Each scenario is explored over
 * every schedule with up to four preemptions (sched.c), then over random
 * schedules, under sequential consistency; then again under the weak
 * (release/acquire) memory model with fewer preemptions and a few stale
 * reads (README.md in this folder).  Each scenario checks conservation
 * (permits, notifications, the mutex) and that every registered waiter was
 * woken or is rightly waiting; under the weak model also that what a
 * releasing thread wrote before its release (a "payload") and a waker's
 * clone happen-before whoever the release lets through or runs the waker.
 */
#ifndef SYNCBAND_TESTS_MODEL_COMMON_H
#define SYNCBAND_TESTS_MODEL_COMMON_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <syncband/syncband.h>

#include "clock.h"
#include "sched.h"

/* Under the weak model: a clone happens-before every use of that clone. */
#define COUNTING_WAKER_CLONED(c) MODEL_PLAIN_WRITE(c)
#define COUNTING_WAKER_USED(c) MODEL_PLAIN_READ(c)
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

enum { PREEMPTIONS = 4, LIMIT = 10000000, RANDOM_RUNS = 3000, SEED = 20261130 };
/* The weak model: fewer preemptions, each load may read an older store. */
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

/* A bound, or what the environment says instead (README.md: exploring further). */
static inline int bound(const char *name, int fallback)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : fallback;
}

/* What a releasing thread writes before it releases, for the one it lets through. */
static inline void publish(int *payload)
{
	*payload = 1;
	MODEL_PLAIN_WRITE(payload);
}

/* After the operation that the publisher's release let complete. */
static inline void consume(const int *payload)
{
	MODEL_PLAIN_READ(payload);
	MODEL_CHECK(*payload == 1);
}

/*
 * Waits (in a logical thread) until `w` is woken; false if that never comes.
 * The wake happens-before what follows, as with an executor.
 */
static inline bool await_wake(counting_waker *w)
{
	return sb_model_await_change(&w->wakes, 0);
}

static inline int poll_sem(sb_semaphore_acquire *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_semaphore_acquire_poll(f, &w);
}

static inline int poll_lock(sb_mutex_lock *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_mutex_lock_poll(f, &w);
}

static inline int poll_cv(sb_condvar_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_condvar_wait_poll(f, &w);
}

static inline int poll_event(sb_event_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_event_wait_poll(f, &w);
}

static inline int poll_auto(sb_auto_event_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_auto_event_wait_poll(f, &w);
}

/*
 * The model's clock (src/clock.h), installed for every scenario
 * (model_main_setup): a mutex waiter is timed from when a barger first
 * passes it, and real time passing between a setup and its threads would
 * change what an unlock does.  A setup moves it forward; model_mutex_init,
 * which makes every scenario's mutex, first starts it at MODEL_CLOCK_START,
 * so an unlock reads the same time in every execution, whichever scenario
 * ran before (at 0, a waiter first passed then would be timed as 1, 0
 * meaning never, and look overdue at once).
 */
static uint64_t model_now;
static const uint64_t MODEL_CLOCK_START = 1000;
static inline uint64_t model_clock(void)
{
	return model_now;
}

static inline void model_mutex_init(sb_mutex *m, bool fifo)
{
	model_now = MODEL_CLOCK_START;
	if (fifo)
		sb_mutex_init_fifo(m);
	else
		sb_mutex_init(m);
}

/*
 * The model build wakes in batches of 2 (src/waitq.h), so three waiters take
 * a broadcast past its first batch: the rest are marked released and moved
 * onto its guard list while it wakes the first two with the lock dropped.
 * The event's and the condvar's such scenarios share this context.
 */
typedef struct bcast_ctx {
	sb_event e;
	sb_condvar cv;
	sb_mutex m;
	sb_event_wait f[3];
	sb_condvar_wait g[4];
	counting_waker w[4];
	int seen; /* what a wake saw when it polled a later wait */
	int cancelled; /* the wait a thread cancels */
} bcast_ctx;

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* A program's scenarios, handed to the tests below as their cmocka state. */
typedef struct model_set {
	const sb_model_scenario *scenarios;
	size_t n;
} model_set;

/* Every scenario in `set`, printing the schedule counts (sb_model_explore_all). */
static inline void explore_all(const model_set *set, int preemptions, int stale_reads)
{
	assert_true(sb_model_explore_all(set->scenarios, set->n, preemptions, stale_reads, LIMIT));
}

static inline int weak_preemptions(void)
{
	return bound("SB_MODEL_PREEMPTIONS", WEAK_PREEMPTIONS);
}

static inline int stale_reads(void)
{
	return bound("SB_MODEL_STALE_READS", STALE_READS);
}

static inline void every_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	explore_all(*state, PREEMPTIONS, -1);
}

static inline void every_scenario_holds_over_random_schedules(void **state)
{
	const model_set *set = *state;
	assert_true(sb_model_random_all(set->scenarios, set->n, SEED, RANDOM_RUNS, -1));
	printf("random: %d schedules per scenario from seed %d\n", RANDOM_RUNS, SEED);
}

static inline void every_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	printf("weak model: %d preemptions, %d stale reads per schedule\n", weak_preemptions(),
	       stale_reads());
	explore_all(*state, weak_preemptions(), stale_reads());
}

static inline void every_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	const model_set *set = *state;
	assert_true(sb_model_random_all(set->scenarios, set->n, SEED, RANDOM_RUNS,
					WEAK_RANDOM_STALE_READS));
	printf("random, weak: %d schedules per scenario from seed %d, %d stale reads each\n",
	       RANDOM_RUNS, SEED, WEAK_RANDOM_STALE_READS);
}

/*
 * Counting tests: the atomic read-modify-writes (CAS, exchange, fetch-op:
 * the ones that cost) on the paths that must stay cheap.  Single-threaded,
 * outside the scheduler.
 */
static long rmws_before __attribute__((unused));
#define RMWS(expr) (rmws_before = sb_model_rmws(), (expr), sb_model_rmws() - rmws_before)

/* PROGRAM [RUN-PATTERN [SKIP-PATTERN]]: cmocka's test name filters; the
 * model's clock. */
static inline void model_main_setup(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	if (argc > 2)
		cmocka_set_skip_filter(argv[2]);
	sb__clock_set(model_clock);
}

#endif
