/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A watchdog for multi-threaded tests: cmocka has no timeouts, so a test that
 * hangs must fail on its own, with a message saying what it was doing.
 *
 *   sb_watchdog wd;
 *   sb_watchdog_start(&wd, 60, "semaphore stress");
 *   ...
 *   sb_watchdog_stop(&wd);
 */
#ifndef SYNCBAND_TEST_WATCHDOG_H
#define SYNCBAND_TEST_WATCHDOG_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/*
 * The state lives on the heap: a test that fails jumps out (cmocka longjmps)
 * without stopping its watchdog, and the next test's watchdog must not reuse
 * the memory the abandoned one still waits on.  The abandoned one fires
 * later and fails the run, which is right: a test failed.
 */
struct sb_watchdog_state {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	unsigned seconds;
	const char *what;
};

typedef struct sb_watchdog {
	pthread_t thread;
	struct sb_watchdog_state *st;
} sb_watchdog;

static void *sb_watchdog_main(void *arg)
{
	struct sb_watchdog_state *st = (struct sb_watchdog_state *)arg;
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += st->seconds;
	pthread_mutex_lock(&st->mu);
	while (!st->done) {
		if (pthread_cond_timedwait(&st->cv, &st->mu, &deadline) == ETIMEDOUT && !st->done) {
			fprintf(stderr, "WATCHDOG: '%s' still running after %u s: hang\n",
				st->what, st->seconds);
			fflush(stderr);
			_exit(3);
		}
	}
	pthread_mutex_unlock(&st->mu);
	return NULL;
}

static inline void sb_watchdog_start(sb_watchdog *wd, unsigned seconds, const char *what)
{
	struct sb_watchdog_state *st = (struct sb_watchdog_state *)calloc(1, sizeof *st);
	if (!st)
		abort();
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&st->cv, &attr);
	pthread_condattr_destroy(&attr);
	pthread_mutex_init(&st->mu, NULL);
	st->done = false;
	st->seconds = seconds;
	st->what = what;
	wd->st = st;
	if (pthread_create(&wd->thread, NULL, sb_watchdog_main, st) != 0)
		abort();
}

static inline void sb_watchdog_stop(sb_watchdog *wd)
{
	struct sb_watchdog_state *st = wd->st;
	pthread_mutex_lock(&st->mu);
	st->done = true;
	pthread_cond_signal(&st->cv);
	pthread_mutex_unlock(&st->mu);
	pthread_join(wd->thread, NULL);
	pthread_cond_destroy(&st->cv);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

#endif
