/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A watchdog for multi-threaded tests: cmocka has no timeouts, so a test that
 * hangs must fail on its own, with a message saying what it was doing.
 *
 *   sb_watchdog wd;
 *   sb_watchdog_start(&wd, 60, "semaphore stress");
 *   ...
 *   sb_watchdog_stop(&wd);
 *
 * A long run can be watched for progress too (sb_watchdog_start_progress):
 * once a second the watchdog reads a count that grows while the run gets
 * somewhere, and fails it when the count stays put for `stall_seconds`, or
 * when the run passes its limit, after `report` has said where it stands.
 * sb_watchdog_phase changes what the message says the run is doing.
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

typedef struct sb_watchdog_progress {
	long (*count)(void *arg);   /* grows while the run makes progress */
	void (*report)(void *arg);  /* prints where the run stands, before the exit */
	void *arg;
	unsigned stall_seconds;
} sb_watchdog_progress;

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
	const char *what;              /* under mu */
	sb_watchdog_progress progress; /* count NULL: only the limit */
};

typedef struct sb_watchdog {
	pthread_t thread;
	struct sb_watchdog_state *st;
} sb_watchdog;

static void sb_watchdog_fire(struct sb_watchdog_state *st, const char *why, unsigned elapsed)
{
	fprintf(stderr, "WATCHDOG: '%s' %s after %u s: hang\n", st->what, why, elapsed);
	if (st->progress.report)
		st->progress.report(st->progress.arg);
	fflush(stderr);
	_exit(3);
}

static void *sb_watchdog_main(void *arg)
{
	struct sb_watchdog_state *st = (struct sb_watchdog_state *)arg;
	const sb_watchdog_progress *p = &st->progress;
	/* Counting progress: a tick a second; otherwise one wait for the limit. */
	unsigned step = p->count ? 1 : st->seconds;
	unsigned elapsed = 0, last_change = 0;
	long last = -1;
	struct timespec tick;
	clock_gettime(CLOCK_MONOTONIC, &tick);
	pthread_mutex_lock(&st->mu);
	while (!st->done) {
		tick.tv_sec += step;
		while (!st->done && pthread_cond_timedwait(&st->cv, &st->mu, &tick) != ETIMEDOUT)
			;
		if (st->done)
			break;
		elapsed += step;
		if (p->count) {
			long now = p->count(p->arg);
			if (now != last) {
				last = now;
				last_change = elapsed;
			}
			if (elapsed - last_change >= p->stall_seconds)
				sb_watchdog_fire(st, "made no progress", elapsed);
		}
		if (elapsed >= st->seconds)
			sb_watchdog_fire(st, "still running", elapsed);
	}
	pthread_mutex_unlock(&st->mu);
	return NULL;
}

static inline void sb_watchdog_start_progress(sb_watchdog *wd, unsigned seconds, const char *what,
					      const sb_watchdog_progress *progress)
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
	if (progress)
		st->progress = *progress;
	wd->st = st;
	if (pthread_create(&wd->thread, NULL, sb_watchdog_main, st) != 0)
		abort();
}

static inline void sb_watchdog_start(sb_watchdog *wd, unsigned seconds, const char *what)
{
	sb_watchdog_start_progress(wd, seconds, what, NULL);
}

static inline void sb_watchdog_phase(sb_watchdog *wd, const char *what)
{
	pthread_mutex_lock(&wd->st->mu);
	wd->st->what = what;
	pthread_mutex_unlock(&wd->st->mu);
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
