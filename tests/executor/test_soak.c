/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The soak: every primitive at once, driven by real tasks on a group of
 * executor threads, with random cancellations and random deadlines, and
 * conservation checked at the end.
 *
 *   semaphore         random multi-permit acquires (try, plain, with a
 *                     deadline through sb_timeout), held across yields; the
 *                     number held never exceeds the permits
 *   mutex             a plain counter it protects, against a count of the
 *                     critical sections kept with atomics
 *   condvar           a bounded producer/consumer queue: every item is
 *                     delivered exactly once; and a strict handshake (one
 *                     ticket at a time, dealt with notify_one to takers that
 *                     wait for it and quitters that walk away from their
 *                     waits), where a notification lost by a cancelled wait
 *                     is a hang
 *   manual event      a phaser (a reusable barrier) over two events, each
 *                     phase released by a set that either stays set or is
 *                     reset at once ("pulse": released waits must complete)
 *   auto-reset event  one signal passed from task to task: never two holders,
 *                     every set consumed, the last one still stored
 *
 * Every wait is, at random, waited for, cancelled right after its first
 * poll (before any grant), cancelled after a few yields (with a partial
 * grant, a full one, or none), cancelled when woken but before it is polled
 * again (a grant nobody observed), or given a random deadline (which can
 * fire while a multi-permit acquire is partly granted).  Tasks poll through
 * a counting waker (tests/support) that forwards to the task's own, so
 * every clone the library makes is shown woken or dropped.  At the end a few tasks are left
 * waiting on purpose and the group shutdown must cancel exactly those,
 * handing back what they held.
 *
 * Environment:
 *   SB_SOAK_OPS      primitive operations in total (default 10^6: a few
 *                    seconds; SB_SOAK_OPS=10000000 is the full soak, see
 *                    tests/executor/soak.sh and ./x soak)
 *   SB_SOAK_SEED     the seed of every task's PRNG (default 0x5eed); the
 *                    choices are reproducible, the interleavings are not
 *   SB_SOAK_THREADS  executor threads (default 4)
 *   SB_SOAK_EVENTFD  1: use the eventfd doorbell instead of MSG_RING
 *   SB_SOAK_STALL    seconds without progress that count as a hang (60)
 *
 * An operation is one call that acts on a primitive: a try_*, a future
 * (however often it is polled; a re-registration is a new one), a release,
 * unlock, notify, set or reset.
 *
 * The soak's files are listed in soak/soak.h; this one sets up the world,
 * runs it, and checks it at rest, after the shutdown and in the summary.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec_support.h"
#include "soak/soak.h"
#include "watchdog.h"

const char *const kind_name[KINDS] = {
	"semaphore", "mutex", "producer", "consumer", "dealer", "hand", "phaser", "auto_event",
	"pending",
};
const char *const plan_name[PLANS] = { "wait", "cancel_now", "cancel_later", "cancel_on_wake" };
const char *const aw_state_name[] = { "delay", "idle", "pending", "done" };

static struct {
	long ops;
	uint64_t seed;
	size_t threads;
	bool eventfd;
	unsigned stall_s;
} cfg;

/* ------------------------------------------------------------ dispatch */

static int soak_task_poll(sb_task *task, const sb_waker *w)
{
	soak_task *t = SB_CONTAINER_OF(task, soak_task, task);
	if (!t->fwd_ready) {
		t->fw.forward = *w;
		t->fwd_ready = true;
	}
	CHECK(sb_waker_will_wake(&t->fw.forward, w));
	const sb_waker fw = counting_waker_ref(&t->fw);
	switch (t->kind) {
	case K_SEM:
		return sem_poll(t, &fw);
	case K_MUTEX:
		return mutex_poll(t, &fw);
	case K_PROD:
	case K_CONS:
		return queue_poll(t, &fw);
	case K_DEALER:
		return dealer_poll(t, &fw);
	case K_HAND:
		return hand_poll(t, &fw);
	case K_PHASE:
		return phase_poll(t, &fw);
	case K_AUTO:
		return auto_poll(t, &fw);
	default:
		return pend_poll(t, &fw);
	}
}

/*
 * Workers always finish before the shutdown; if one is cancelled anyway the
 * shutdown's count says so, and this hands back what a pending future holds.
 */
static void soak_task_cancel(sb_task *task)
{
	soak_task *t = SB_CONTAINER_OF(task, soak_task, task);
	if (t->kind == K_PEND)
		pend_cancel(t);
	else
		aw_abandon(t);
}

/* ------------------------------------------------------------ the world */

static void world_init(struct soak *s)
{
	memset(s, 0, sizeof *s);
	s->seed = cfg.seed;
	s->threads = cfg.threads;
	assert_int_equal(sb_semaphore_init(&s->sem, SEM_PERMITS), 0);
	assert_int_equal(sb_mutex_init(&s->m), 0);
	assert_int_equal(sb_mutex_init(&s->qm), 0);
	assert_int_equal(sb_condvar_init(&s->not_empty), 0);
	assert_int_equal(sb_condvar_init(&s->not_full), 0);
	assert_int_equal(sb_mutex_init(&s->hm), 0);
	assert_int_equal(sb_condvar_init(&s->ticket_cv), 0);
	assert_int_equal(sb_condvar_init(&s->taken_cv), 0);
	atomic_init(&s->tickets_taken, 0);
	atomic_init(&s->h_holders, 0);
	assert_int_equal(sb_event_init(&s->ev[0], false), 0);
	assert_int_equal(sb_event_init(&s->ev[1], false), 0);
	assert_int_equal(sb_event_init(&s->gate, false), 0);
	assert_int_equal(sb_auto_event_init(&s->ae, true), 0); /* the one signal */
	assert_int_equal(sb_semaphore_init(&s->started, 0), 0);
	atomic_init(&s->sem_in_use, 0);
	atomic_init(&s->m_holders, 0);
	atomic_init(&s->sections, 0);
	atomic_init(&s->q_holders, 0);
	atomic_init(&s->arrived[0], 0);
	atomic_init(&s->arrived[1], 0);
	atomic_init(&s->published, -1);
	atomic_init(&s->token_holders, 0);
	atomic_init(&s->token_takes, 0);
	atomic_init(&s->token_sets, 0);
	s->mode[0] = MODE_KEEP;
	s->mode[1] = MODE_KEEP;
}

/* The operations' shares (in ops, or units of so many ops), at least one each. */
struct budgets {
	long sem, mutex, autoev;
};

static long at_least_one(long n)
{
	return n < 1 ? 1 : n;
}

static void share_out(struct soak *s, long ops, struct budgets *b)
{
	/* Shares of the operations: estimated ops per unit in the comments. */
	b->sem = at_least_one(ops * 30 / 100 / SEM_TASKS);               /* budgets in ops */
	b->mutex = at_least_one(ops * 20 / 100 / MUTEX_TASKS);
	b->autoev = at_least_one(ops * 15 / 100 / AUTO_TASKS);
	s->per_producer = at_least_one(ops * 12 / 100 / 7 / PRODUCERS); /* ~7 ops per item */
	s->per_taker = at_least_one(ops * 5 / 100 / 8 / TAKERS);        /* ~8 ops per ticket */
	s->quitter_rounds = at_least_one(ops * 3 / 100 / 4 / QUITTERS); /* ~4 ops per round */
	s->phases = at_least_one(ops * 15 / 100 / 9);                   /* ~9 ops per phase */
	s->tickets = s->per_taker * TAKERS;
	s->total_items = s->per_producer * PRODUCERS;
	s->per_consumer = s->total_items / CONSUMERS; /* PRODUCERS == CONSUMERS */
	assert_int_equal(s->per_consumer * CONSUMERS, s->total_items);
	s->seen = calloc((size_t)s->total_items, 1);
	assert_non_null(s->seen);
}

static void task_setup(soak_task *t, struct soak *s, int kind, int index, long budget)
{
	memset(t, 0, sizeof *t);
	sb_task_init(&t->task, soak_task_poll, soak_task_cancel, NULL);
	t->s = s;
	t->kind = kind;
	t->index = index;
	t->budget = budget;
	/* One stream per task, from the seed alone. */
	t->rng = cfg.seed ^ ((uint64_t)(kind + 1) << 56) ^ ((uint64_t)index << 40);
	splitmix64(&t->rng);
	for (int i = 0; i < STATS; i++)
		atomic_init(&t->st[i], 0);
	atomic_init(&t->where, 0);
	atomic_init(&t->awaiting, AW_DONE << 8);
	counting_waker_init(&t->fw);
}

/* Every worker, then every pender: WORKERS + PENDERS tasks. */
static soak_task *tasks_create(struct soak *s, const struct budgets *b)
{
	soak_task *tasks = calloc(WORKERS + PENDERS, sizeof *tasks);
	assert_non_null(tasks);
	size_t n = 0;
	for (int i = 0; i < SEM_TASKS; i++)
		task_setup(&tasks[n++], s, K_SEM, i, b->sem);
	for (int i = 0; i < MUTEX_TASKS; i++)
		task_setup(&tasks[n++], s, K_MUTEX, i, b->mutex);
	for (int i = 0; i < PRODUCERS; i++) {
		task_setup(&tasks[n], s, K_PROD, i, s->per_producer);
		tasks[n++].value = (long)i * s->per_producer;
	}
	for (int i = 0; i < CONSUMERS; i++)
		task_setup(&tasks[n++], s, K_CONS, i, s->per_consumer);
	for (int i = 0; i < DEALERS; i++)
		task_setup(&tasks[n++], s, K_DEALER, i, s->tickets);
	for (int i = 0; i < HANDS; i++)
		task_setup(&tasks[n++], s, K_HAND, i, 0);
	for (int i = 0; i < PHASERS; i++)
		task_setup(&tasks[n++], s, K_PHASE, i, 0);
	for (int i = 0; i < AUTO_TASKS; i++)
		task_setup(&tasks[n++], s, K_AUTO, i, b->autoev);
	assert_int_equal(n, WORKERS);
	for (int i = 0; i < PENDERS; i++)
		task_setup(&tasks[n++], s, K_PEND, i, 0);
	return tasks;
}

static void spawn_on(struct soak *s, soak_task *t, size_t thread)
{
	assert_int_equal(sb_executor_group_spawn(&s->g, thread, &t->task, &t->join), 0);
}

/*
 * A third of the tasks go to a chosen thread, a third round-robin, and a
 * third float (they move to the thread that wakes them).
 */
static void spawn(struct soak *s, soak_task *t, size_t n)
{
	size_t where = n % 3 == 0 ? (n / 3) % s->threads : n % 3 == 1 ? SB_GROUP_ANY
									: SB_GROUP_FLOATING;
	spawn_on(s, t, where);
}

/* ------------------------------------------------------------ the watchdog's report */

struct watched {
	struct soak *s;
	soak_task *tasks;
	size_t ntasks;
};

static long total_ops(void *arg)
{
	struct watched *wt = arg;
	long sum = 0;
	for (size_t i = 0; i < wt->ntasks; i++)
		sum += stat_get(&wt->tasks[i], ST_OPS);
	return sum;
}

/* Where every task stands (the watchdog prints it before failing the run). */
static void report(void *arg)
{
	struct watched *wt = arg;
	struct soak *s = wt->s;
	fprintf(stderr, "  seed=0x%" PRIx64 " ops=%ld sections=%ld token takes=%ld sets=%ld"
		" published phase=%ld/%ld sem in use=%d\n",
		s->seed, total_ops(wt), atomic_load(&s->sections), atomic_load(&s->token_takes),
		atomic_load(&s->token_sets), atomic_load(&s->published), s->phases,
		atomic_load(&s->sem_in_use));
	for (size_t i = 0; i < wt->ntasks; i++) {
		soak_task *t = &wt->tasks[i];
		int aw = atomic_load_explicit(&t->awaiting, memory_order_relaxed);
		fprintf(stderr, "  task %2zu %-10s #%d stage=%d awaiting(plan=%s%s state=%s) ops=%ld"
			" done=%ld wakes=%d clones=%d drops=%d released=%d\n",
			i, kind_name[t->kind], t->index,
			atomic_load_explicit(&t->where, memory_order_relaxed),
			plan_name[aw & 15], aw & 16 ? "+deadline" : "", aw_state_name[aw >> 8],
			stat_get(t, ST_OPS), stat_get(t, ST_DONE), atomic_load(&t->fw.woken),
			atomic_load(&t->fw.clones), atomic_load(&t->fw.drops),
			(int)sb_task_is_released(&t->task));
	}
}

/* ------------------------------------------------------------ the phases */

/* Spawns the workers, the kinds interleaved so every thread gets a mix, and joins them. */
static void run_workers(struct soak *s, soak_task *tasks)
{
	size_t order = 0;
	for (int round = 0; order < WORKERS; round++)
		for (size_t i = 0; i < WORKERS; i++)
			if (tasks[i].index == round)
				spawn(s, &tasks[i], order++);
	for (size_t i = 0; i < WORKERS; i++)
		assert_int_equal(sb_join_wait(&tasks[i].join), 0);
}

/* Every worker finished: the state at rest. */
static void check_at_rest(struct soak *s)
{
	assert_int_equal(atomic_load(&s->sem_in_use), 0);
	assert_int_equal(sb_semaphore_available(&s->sem), SEM_PERMITS);
	assert_int_equal(sb_mutex_is_locked(&s->m), false);
	/* The last unlock happened-before our join. */
	assert_int_equal(s->counter, atomic_load(&s->sections));
	assert_int_equal(sb_mutex_is_locked(&s->qm), false);
	assert_int_equal(s->q_count, 0);
	assert_int_equal(s->popped, s->total_items);
	assert_true(s->popped_sum == s->total_items * (s->total_items - 1) / 2);
	for (long v = 0; v < s->total_items; v++)
		if (s->seen[v] != 1)
			fail_msg("item %ld delivered %d times", v, s->seen[v]);
	assert_int_equal(sb_mutex_is_locked(&s->hm), false);
	assert_int_equal(s->slot, 0);
	assert_int_equal(atomic_load(&s->tickets_taken), s->tickets);
	assert_int_equal(atomic_load(&s->published), s->phases - 1);
	assert_int_equal(atomic_load(&s->token_takes), atomic_load(&s->token_sets));
	assert_int_equal(atomic_load(&s->token_holders), 0);
	/* The signal every set passed on is stored, once. */
	assert_int_equal(sb_auto_event_try_wait(&s->ae), 0);
	assert_int_equal(sb_auto_event_try_wait(&s->ae), -EAGAIN);
}

/* Tasks left waiting on purpose, cancelled by the shutdown: returns its count. */
static size_t leave_pending_and_shut_down(struct soak *s, soak_task *penders)
{
	assert_int_equal(sb_mutex_try_lock(&s->m), 0); /* PEND_MUTEX queues behind main */
	/*
	 * Both semaphore waiters on one thread: cancelling the first hands its
	 * permits to the second, whose executor must then cancel it unpolled
	 * (on another thread it could still be polled and complete).
	 */
	spawn_on(s, &penders[PEND_SEM_PARTIAL], 0);
	assert_int_equal(sb_semaphore_acquire_blocking(&s->started, 1, 30 * SB_NSEC_PER_SEC), 0);
	assert_int_equal(sb_semaphore_available(&s->sem), 0); /* all SEM_PERMITS are its partial grant */
	spawn_on(s, &penders[PEND_SEM_TIMEOUT], 0);
	for (int i = PEND_SEM_TIMEOUT + 1; i < PENDERS; i++)
		spawn(s, &penders[i], (size_t)i);
	assert_int_equal(sb_semaphore_acquire_blocking(&s->started, PENDERS - 1, 30 * SB_NSEC_PER_SEC), 0);
	assert_int_equal(sb_mutex_is_locked(&s->qm), false); /* the condvar wait gave it up */
	assert_int_equal(sb_semaphore_available(&s->sem), 0);
	assert_int_equal(sb_event_destroy(&s->gate), -EBUSY);
	assert_int_equal(sb_auto_event_destroy(&s->ae), -EBUSY);
	assert_int_equal(sb_condvar_destroy(&s->not_empty), -EBUSY);
	size_t cancelled = 99;
	assert_int_equal(sb_executor_group_shutdown(&s->g, &cancelled), 0);
	assert_int_equal(cancelled, PENDERS);
	for (int i = 0; i < PENDERS; i++)
		assert_int_equal(sb_join_wait(&penders[i].join), -ECANCELED);
	return cancelled;
}

/* After the shutdown: every task released, every clone accounted for, every
 * primitive back where it started. */
static void check_conservation(struct soak *s, soak_task *tasks, size_t ntasks)
{
	for (size_t i = 0; i < ntasks; i++) {
		soak_task *t = &tasks[i];
		if (!sb_task_is_released(&t->task))
			fail_msg("task %zu (%s #%d) still referenced", i, kind_name[t->kind], t->index);
		int clones = atomic_load(&t->fw.clones), wakes = atomic_load(&t->fw.woken),
		    drops = atomic_load(&t->fw.drops);
		if (clones != wakes + drops)
			fail_msg("task %zu (%s #%d): %d waker clones, %d woken, %d dropped", i,
				 kind_name[t->kind], t->index, clones, wakes, drops);
	}
	assert_int_equal(sb_semaphore_available(&s->sem), SEM_PERMITS);
	assert_int_equal(sb_mutex_unlock(&s->m), 0);
	assert_int_equal(sb_mutex_try_lock(&s->m), 0);
	assert_int_equal(sb_mutex_unlock(&s->m), 0);
	assert_int_equal(s->counter, atomic_load(&s->sections));
	assert_int_equal(sb_mutex_is_locked(&s->qm), false);
	assert_int_equal(sb_auto_event_try_wait(&s->ae), -EAGAIN); /* cancelled unsignalled */
	sb_auto_event_set(&s->ae);                                  /* main's signal goes back */
	assert_int_equal(sb_auto_event_try_wait(&s->ae), 0);
	assert_int_equal(sb_auto_event_try_wait(&s->ae), -EAGAIN);
}

static void world_destroy(struct soak *s)
{
	assert_int_equal(sb_semaphore_destroy(&s->sem), 0);
	assert_int_equal(sb_semaphore_destroy(&s->started), 0);
	assert_int_equal(sb_mutex_destroy(&s->m), 0);
	assert_int_equal(sb_mutex_destroy(&s->qm), 0);
	assert_int_equal(sb_condvar_destroy(&s->not_empty), 0);
	assert_int_equal(sb_condvar_destroy(&s->not_full), 0);
	assert_int_equal(sb_mutex_destroy(&s->hm), 0);
	assert_int_equal(sb_condvar_destroy(&s->ticket_cv), 0);
	assert_int_equal(sb_condvar_destroy(&s->taken_cv), 0);
	assert_int_equal(sb_event_destroy(&s->ev[0]), 0);
	assert_int_equal(sb_event_destroy(&s->ev[1]), 0);
	assert_int_equal(sb_event_destroy(&s->gate), 0);
	assert_int_equal(sb_auto_event_destroy(&s->ae), 0);
	free(s->seen);
}

/* ------------------------------------------------------------ the summary */

struct totals {
	long v[STATS];
};

static void sum_kind(soak_task *tasks, size_t n, int kind, struct totals *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < n; i++)
		if (tasks[i].kind == kind)
			for (int k = 0; k < STATS; k++)
				out->v[k] += stat_get(&tasks[i], (enum stat)k);
}

static long cancels(const struct totals *t)
{
	return t->v[ST_CANCEL_QUEUED] + t->v[ST_CANCEL_PARTIAL] + t->v[ST_CANCEL_GRANTED] +
	       t->v[ST_CANCEL_IDLE];
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void print_summary(struct soak *s, soak_task *tasks, size_t ntasks, size_t cancelled,
			  const struct timespec *t0, double work_s)
{
	struct totals k[KINDS], all;
	memset(&all, 0, sizeof all);
	for (int i = 0; i < KINDS; i++) {
		sum_kind(tasks, ntasks, i, &k[i]);
		for (int j = 0; j < STATS; j++)
			all.v[j] += k[i].v[j];
	}
	struct totals q; /* every condvar user */
	for (int j = 0; j < STATS; j++)
		q.v[j] = k[K_PROD].v[j] + k[K_CONS].v[j] + k[K_DEALER].v[j] + k[K_HAND].v[j];
	printf("soak: seed=0x%" PRIx64 " threads=%zu doorbell=%s target=%ld ops=%ld cancels=%ld"
	       " timeouts=%ld plans(wait/cancel_now/cancel_later/cancel_on_wake/timed)="
	       "%ld/%ld/%ld/%ld/%ld"
	       " | semaphore ops=%ld acquired=%ld try_failed=%ld cancels=%ld(queued=%ld partial=%ld"
	       " granted=%ld) timeouts=%ld(partial=%ld)"
	       " | mutex ops=%ld sections=%ld try_failed=%ld cancels=%ld(granted=%ld) timeouts=%ld"
	       " | condvar ops=%ld items=%ld tickets=%ld quits=%ld cancels=%ld(idle=%ld"
	       " notified_or_handed=%ld) timeouts=%ld"
	       " | event ops=%ld phases=%ld pulses=%ld cancels=%ld(released=%ld) timeouts=%ld"
	       " | auto_event ops=%ld signals=%ld cancels=%ld(granted=%ld) timeouts=%ld"
	       " | shutdown cancelled=%zu | %.2f s (workers %.2f s)\n",
	       cfg.seed, cfg.threads, cfg.eventfd ? "eventfd" : "msg_ring", cfg.ops, all.v[ST_OPS],
	       cancels(&all), all.v[ST_TIMEOUTS], all.v[ST_PLAN0 + PLAN_WAIT],
	       all.v[ST_PLAN0 + PLAN_CANCEL_NOW], all.v[ST_PLAN0 + PLAN_CANCEL_LATER],
	       all.v[ST_PLAN0 + PLAN_CANCEL_ON_WAKE], all.v[ST_TIMED],
	       k[K_SEM].v[ST_OPS], k[K_SEM].v[ST_DONE], k[K_SEM].v[ST_TRY_FAILED], cancels(&k[K_SEM]),
	       k[K_SEM].v[ST_CANCEL_QUEUED], k[K_SEM].v[ST_CANCEL_PARTIAL],
	       k[K_SEM].v[ST_CANCEL_GRANTED], k[K_SEM].v[ST_TIMEOUTS], k[K_SEM].v[ST_TIMEOUT_PARTIAL],
	       k[K_MUTEX].v[ST_OPS], atomic_load(&s->sections), k[K_MUTEX].v[ST_TRY_FAILED],
	       cancels(&k[K_MUTEX]), k[K_MUTEX].v[ST_CANCEL_GRANTED], k[K_MUTEX].v[ST_TIMEOUTS],
	       q.v[ST_OPS], s->total_items, s->tickets, q.v[ST_QUITS], cancels(&q), q.v[ST_CANCEL_IDLE],
	       q.v[ST_CANCEL_GRANTED],
	       q.v[ST_TIMEOUTS],
	       k[K_PHASE].v[ST_OPS], s->phases, k[K_PHASE].v[ST_PULSES], cancels(&k[K_PHASE]),
	       k[K_PHASE].v[ST_CANCEL_GRANTED], k[K_PHASE].v[ST_TIMEOUTS],
	       k[K_AUTO].v[ST_OPS], atomic_load(&s->token_takes), cancels(&k[K_AUTO]),
	       k[K_AUTO].v[ST_CANCEL_GRANTED], k[K_AUTO].v[ST_TIMEOUTS],
	       cancelled, seconds_since(t0), work_s);
	fflush(stdout);
}

/* ------------------------------------------------------------ the test */

static void all_primitives_under_cancellation_and_deadlines_conserve_everything(void **state)
{
	(void)state;
	/*
	 * A crash on an executor thread must kill the process with its own
	 * signal (and a core): cmocka's handlers would longjmp to this thread's
	 * frame from another thread, and exit silently.
	 */
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	signal(SIGILL, SIG_DFL);
	signal(SIGFPE, SIG_DFL);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);

	static struct soak s;
	world_init(&s);
	struct budgets b;
	share_out(&s, cfg.ops, &b);
	size_t ntasks = WORKERS + PENDERS;
	soak_task *tasks = tasks_create(&s, &b);

	struct watched watched = { &s, tasks, ntasks };
	const sb_watchdog_progress progress = { total_ops, report, &watched, cfg.stall_s };
	sb_watchdog wd;
	/* Generous: 2 minutes plus 100 us per op (10^7 ops: 19 minutes). */
	sb_watchdog_start_progress(&wd, 120 + (unsigned)(cfg.ops / 10000), "soak: workers",
				   &progress);

	sb_executor_config ecfg = { 0, cfg.eventfd ? SB_EXECUTOR_NO_MSG_RING : 0 };
	assert_int_equal(sb_executor_group_init(&s.g, s.threads, &ecfg), 0);
	run_workers(&s, tasks);
	double work_s = seconds_since(&t0);

	sb_watchdog_phase(&wd, "soak: checks at rest");
	check_at_rest(&s);
	sb_watchdog_phase(&wd, "soak: pending tasks and shutdown");
	size_t cancelled = leave_pending_and_shut_down(&s, &tasks[WORKERS]);
	sb_watchdog_phase(&wd, "soak: final checks");
	check_conservation(&s, tasks, ntasks);
	sb_watchdog_stop(&wd);

	print_summary(&s, tasks, ntasks, cancelled, &t0, work_s);
	world_destroy(&s);
	free(tasks);
}

static uint64_t env_u64(const char *name, uint64_t dflt, uint64_t min)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 0);
	if (*end || errno || n < min || n > (unsigned long long)INT64_MAX) {
		fprintf(stderr, "%s=%s: expected a number >= %" PRIu64 "\n", name, v, min);
		exit(2);
	}
	return n;
}

int main(void)
{
	cfg.ops = (long)env_u64("SB_SOAK_OPS", DEFAULT_OPS, 1);
	cfg.seed = env_u64("SB_SOAK_SEED", DEFAULT_SEED, 0);
	cfg.threads = (size_t)env_u64("SB_SOAK_THREADS", 4, 1);
	cfg.eventfd = env_u64("SB_SOAK_EVENTFD", 0, 0) != 0;
	cfg.stall_s = (unsigned)env_u64("SB_SOAK_STALL", 60, 1);
	/* Printed first, so that a crash or hang still names its seed. */
	printf("soak: seed=0x%" PRIx64 " ops=%ld threads=%zu (SB_SOAK_SEED, SB_SOAK_OPS,"
	       " SB_SOAK_THREADS)\n",
	       cfg.seed, cfg.ops, cfg.threads);
	fflush(stdout);
	exec_skip_without_io_uring("test_soak");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(all_primitives_under_cancellation_and_deadlines_conserve_everything),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
