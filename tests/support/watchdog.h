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

typedef struct sb_watchdog {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	unsigned seconds;
	const char *what;
} sb_watchdog;

static void *sb_watchdog_main(void *arg)
{
	sb_watchdog *wd = (sb_watchdog *)arg;
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += wd->seconds;
	pthread_mutex_lock(&wd->mu);
	while (!wd->done) {
		if (pthread_cond_timedwait(&wd->cv, &wd->mu, &deadline) == ETIMEDOUT && !wd->done) {
			fprintf(stderr, "WATCHDOG: '%s' still running after %u s: hang\n",
				wd->what, wd->seconds);
			fflush(stderr);
			_exit(3);
		}
	}
	pthread_mutex_unlock(&wd->mu);
	return NULL;
}

static inline void sb_watchdog_start(sb_watchdog *wd, unsigned seconds, const char *what)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&wd->cv, &attr);
	pthread_condattr_destroy(&attr);
	pthread_mutex_init(&wd->mu, NULL);
	wd->done = false;
	wd->seconds = seconds;
	wd->what = what;
	if (pthread_create(&wd->thread, NULL, sb_watchdog_main, wd) != 0)
		abort();
}

static inline void sb_watchdog_stop(sb_watchdog *wd)
{
	pthread_mutex_lock(&wd->mu);
	wd->done = true;
	pthread_cond_signal(&wd->cv);
	pthread_mutex_unlock(&wd->mu);
	pthread_join(wd->thread, NULL);
	pthread_cond_destroy(&wd->cv);
	pthread_mutex_destroy(&wd->mu);
}

#endif
