/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A controlled scheduler for systematic interleaving tests (README.md in
 * this folder).
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
 *
 * Two memory models.  Sequentially consistent (sb_model_explore,
 * sb_model_random): every load reads the latest store.  Weak
 * (sb_model_explore_weak, sb_model_random_weak): C11 release/acquire, with
 * happens-before tracked by vector clocks; a load may also read an older
 * store that coherence and happens-before still allow (a further choice
 * point, bounded per execution by `stale_reads`), and plain data the
 * scenario marks with MODEL_PLAIN_WRITE / MODEL_PLAIN_READ must be ordered
 * by happens-before.
 */
#ifndef SYNCBAND_MODEL_SCHED_H
#define SYNCBAND_MODEL_SCHED_H

#include <stdatomic.h>
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
	long stale;         /* executions in which a load read an older store */
	bool complete;      /* every schedule within the bounds was run */
	bool filtered;      /* SB_MODEL_SCENARIO/MEMORY left it out, or a replay */
	bool failed;        /* sb_model_catch_failures: a schedule failed */
	const char *failure; /* then what failed, until the next exploration */
} sb_model_result;

/* Every schedule with at most `preemptions` preemptions, up to `limit` runs. */
sb_model_result sb_model_explore(const sb_model_scenario *s, int preemptions, long limit);

/* The same under the weak model, with at most `stale_reads` older reads each. */
sb_model_result sb_model_explore_weak(const sb_model_scenario *s, int preemptions,
				      int stale_reads, long limit);

/* `runs` random schedules from `seed` (no preemption bound). */
sb_model_result sb_model_random(const sb_model_scenario *s, unsigned seed, long runs);

/* The same under the weak model. */
sb_model_result sb_model_random_weak(const sb_model_scenario *s, unsigned seed, long runs,
				     int stale_reads);

/*
 * A program's whole set of `n` scenarios: explored (under sequential
 * consistency when stale_reads < 0, else under the weak model), printing each
 * one's schedule count and the total; or `runs` random schedules each.  False,
 * with the scenario named, when one did not finish within `limit` or explored a
 * single schedule (nothing raced), or ran fewer random schedules.  Scenarios
 * left out by SB_MODEL_SCENARIO, SB_MODEL_MEMORY or a replay are skipped.
 */
bool sb_model_explore_all(const sb_model_scenario *set, size_t n, int preemptions,
			  int stale_reads, long limit);
bool sb_model_random_all(const sb_model_scenario *set, size_t n, unsigned seed, long runs,
			 int stale_reads);

/*
 * How many atomic operations the library has performed so far (every call
 * of the hook, scheduled or not): for tests that count a path's atomics.
 */
long sb_model_points(void);
/* Of those, the read-modify-writes (CAS, exchange, fetch-op). */
long sb_model_rmws(void);

/*
 * For a scenario's setup: in this execution, up to `n` weak CASes that would
 * succeed may fail spuriously instead (C11 allows it; a choice point each),
 * which is what sends an inline fast path to its out-of-line retry.
 */
void sb_model_allow_spurious_failures(int n);

/* For scenarios: fail the whole run, printing the schedule that led here. */
void sb_model_fail(const char *file, int line, const char *what);

/*
 * For tests of the explorer itself: with `on`, a failure ends the
 * exploration (sb_model_explore*) and is reported in its result instead.
 */
void sb_model_catch_failures(bool on);

#define MODEL_CHECK(cond)                                              \
	do {                                                           \
		if (!(cond))                                           \
			sb_model_fail(__FILE__, __LINE__, #cond);      \
	} while (0)

/*
 * Plain (non-atomic) data, keyed by address.  Under the weak model a read
 * fails the run unless the last write to `addr` happens-before it (writes
 * by setup happen-before everything; check is not checked).  No-ops under
 * sequential consistency.
 */
void sb_model_plain_write(const void *addr, const char *file, int line);
void sb_model_plain_read(const void *addr, const char *file, int line);
#define MODEL_PLAIN_WRITE(addr) sb_model_plain_write((addr), __FILE__, __LINE__)
#define MODEL_PLAIN_READ(addr) sb_model_plain_read((addr), __FILE__, __LINE__)

/*
 * For a logical thread: blocks while *word == old (a wake-up it waits for,
 * e.g. a counting waker's `wakes`).  Returns true once it changed, false when
 * it gave up because every other thread had finished or blocked.  Having
 * seen the change it synchronises with every sb_model_signal(word) so far,
 * as an executor's wake happens-before the poll it causes.
 */
bool sb_model_await_change(const atomic_int *word, int old);
void sb_model_signal(const void *word);

#endif
