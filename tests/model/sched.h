/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A controlled scheduler for systematic interleaving tests.
 *
 * A scenario has 2-3 logical threads, each a straight-line function that
 * calls the library.  They run as coroutines on one OS thread; at every
 * atomic operation of the library (model_hooks.h) the scheduler picks which
 * logical thread runs next.  sb_model_explore() enumerates those choices
 * depth-first, exhaustively up to a bound on preemptions (switching away from
 * a thread that could have gone on), re-running the scenario from scratch
 * for each schedule (stateless model checking, as CHESS does).
 * sb_model_random() samples schedules with a seed that is printed and can
 * be replayed.
 */
#ifndef SYNCBAND_MODEL_SCHED_H
#define SYNCBAND_MODEL_SCHED_H

#include <stdbool.h>
#include <stddef.h>

#define SB_MODEL_MAX_THREADS 3

typedef struct sb_model_scenario {
	const char *name;
	int threads;
	size_t ctx_size;                  /* zeroed before every execution */
	void (*setup)(void *ctx);         /* unscheduled, before the threads */
	void (*thread[SB_MODEL_MAX_THREADS])(void *ctx);
	void (*check)(void *ctx);         /* unscheduled, after all finished */
} sb_model_scenario;

typedef struct sb_model_result {
	long executions;
	long max_choices;   /* deepest schedule, in choice points */
	bool complete;      /* every schedule within the bound was run */
} sb_model_result;

/* Every schedule with at most `preemptions` preemptions, up to `limit` runs. */
sb_model_result sb_model_explore(const sb_model_scenario *s, int preemptions, long limit);

/* `runs` random schedules from `seed` (no preemption bound). */
sb_model_result sb_model_random(const sb_model_scenario *s, unsigned seed, long runs);

/*
 * How many atomic operations the library has performed so far (every call
 * of the hook, scheduled or not): for tests that count a path's atomics.
 */
long sb_model_points(void);
/* Of those, the read-modify-writes (CAS, exchange, fetch-op). */
long sb_model_rmws(void);

/* For scenarios: fail the whole run, printing the schedule that led here. */
void sb_model_fail(const char *file, int line, const char *what);

#define MODEL_CHECK(cond)                                              \
	do {                                                           \
		if (!(cond))                                           \
			sb_model_fail(__FILE__, __LINE__, #cond);      \
	} while (0)

#endif
