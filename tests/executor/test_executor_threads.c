/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The executor across threads: groups, remote wakes (both doorbells), the
 * sleep protocol, shutdown and lifetimes.  Every suite runs twice: with the
 * MSG_RING doorbell (when the kernel has it) and with the eventfd fallback.
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
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <syncband/executor.h>
#include <syncband/semaphore.h>

#include "exec_suites.h"
#include "exec_support.h"
#include "watchdog.h"

/* ------------------------------------------------------------ limiter */

typedef struct limited_task {
	sb_task task;
	sb_semaphore *sem;
	atomic_int *holders;
	atomic_int *max_holders;
	sb_executor *ran_on;
	sb_semaphore_acquire acq;
	sb_yield y;
	int stage;
	int yields;
} limited_task;

static int limited_poll(sb_task *t, const sb_waker *w)
{
	limited_task *lt = SB_CONTAINER_OF(t, limited_task, task);
	int r;
	switch (lt->stage) {
	case 0:
		lt->ran_on = sb_executor_current();
		sb_semaphore_acquire_init(&lt->acq, lt->sem, 1);
		lt->stage = 1;
		/* fallthrough */
	case 1:
		r = sb_semaphore_acquire_poll(&lt->acq, w);
		if (r)
			return r;
		int now = atomic_fetch_add(lt->holders, 1) + 1;
		int seen = atomic_load(lt->max_holders);
		while (now > seen && !atomic_compare_exchange_weak(lt->max_holders, &seen, now))
			;
		lt->stage = 2;
		lt->yields = 3;
		sb_yield_init(&lt->y);
		/* fallthrough */
	case 2:
		while (lt->yields > 0) {
			if (sb_yield_poll(&lt->y, w) == SB_PENDING)
				return SB_PENDING;
			lt->yields--;
			sb_yield_init(&lt->y);
		}
		atomic_fetch_sub(lt->holders, 1);
		return sb_semaphore_release(lt->sem, 1);
	}
	return -EINVAL;
}

static void limited_cancel(sb_task *t)
{
	limited_task *lt = SB_CONTAINER_OF(t, limited_task, task);
	if (lt->stage == 1)
		sb_semaphore_acquire_cancel(&lt->acq);
	else if (lt->stage == 2) {
		atomic_fetch_sub(lt->holders, 1);
		sb_semaphore_release(lt->sem, 1);
	}
}

static void semaphore_limiter_keeps_at_most_k_holders_across_4_threads(void **state)
{
	(void)state;
	enum { THREADS = 4, TASKS = 64, K = 3 };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "semaphore limiter, 64 tasks on 4 threads");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, THREADS, &suite_cfg), 0);
	sb_semaphore sem = SB_SEMAPHORE_INIT(K);
	atomic_int holders = 0, max_holders = 0;
	/* Fresh tasks each round: a finished task may still be referenced by a
	 * wake in flight until its executor's thread has moved on. */
	static limited_task all_tasks[3][TASKS];
	static sb_join joins[TASKS];
	for (int round = 0; round < 3; round++) {
		limited_task *tasks = all_tasks[round];
		for (int i = 0; i < TASKS; i++) {
			memset(&tasks[i], 0, sizeof tasks[i]);
			sb_task_init(&tasks[i].task, limited_poll, limited_cancel, NULL);
			tasks[i].sem = &sem;
			tasks[i].holders = &holders;
			tasks[i].max_holders = &max_holders;
			assert_int_equal(sb_executor_group_spawn(&g, SB_GROUP_ANY, &tasks[i].task,
								 &joins[i]), 0);
		}
		for (int i = 0; i < TASKS; i++)
			assert_int_equal(sb_join_wait(&joins[i]), 0);
		for (int i = 0; i < TASKS; i++)
			assert_ptr_equal(tasks[i].ran_on,
					 sb_executor_group_executor(&g, (size_t)(round * TASKS + i) % THREADS));
	}
	assert_true(atomic_load(&max_holders) <= K);
	assert_true(atomic_load(&max_holders) >= 1);
	assert_int_equal(atomic_load(&holders), 0);
	size_t cancelled = 99;
	assert_int_equal(sb_executor_group_shutdown(&g, &cancelled), 0);
	assert_int_equal(cancelled, 0);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < TASKS; i++)
			assert_true(sb_task_is_released(&all_tasks[round][i].task));
	assert_int_equal(sb_semaphore_available(&sem), K);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ ping-pong */

/* Releases `give` then acquires `take`, `rounds` times (or the other order). */
typedef struct pingpong_task {
	sb_task task;
	sb_semaphore *give;
	sb_semaphore *take;
	int rounds;
	int take_first;
	int stage;
	sb_semaphore_acquire acq;
} pingpong_task;

static int pingpong_poll(sb_task *t, const sb_waker *w)
{
	pingpong_task *p = SB_CONTAINER_OF(t, pingpong_task, task);
	for (;;) {
		if (p->rounds == 0)
			return 0;
		if (p->stage == 0) {
			if (!p->take_first)
				sb_semaphore_release(p->give, 1);
			sb_semaphore_acquire_init(&p->acq, p->take, 1);
			p->stage = 1;
		}
		int r = sb_semaphore_acquire_poll(&p->acq, w);
		if (r)
			return r;
		if (p->take_first)
			sb_semaphore_release(p->give, 1);
		p->stage = 0;
		p->rounds--;
	}
}

static void pingpong_cancel(sb_task *t)
{
	pingpong_task *p = SB_CONTAINER_OF(t, pingpong_task, task);
	if (p->stage == 1)
		sb_semaphore_acquire_cancel(&p->acq);
}

static void remote_wakes_between_two_threads_lose_no_wake(void **state)
{
	(void)state;
	enum { ROUNDS = 20000 };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "ping-pong between two executor threads");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, 2, &suite_cfg), 0);
	sb_semaphore ping = SB_SEMAPHORE_INIT(0), pong = SB_SEMAPHORE_INIT(0);
	pingpong_task a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	sb_task_init(&a.task, pingpong_poll, pingpong_cancel, NULL);
	sb_task_init(&b.task, pingpong_poll, pingpong_cancel, NULL);
	a.give = &ping, a.take = &pong, a.rounds = ROUNDS;
	b.give = &pong, b.take = &ping, b.rounds = ROUNDS, b.take_first = 1;
	sb_join ja, jb;
	assert_int_equal(sb_executor_group_spawn(&g, 0, &a.task, &ja), 0);
	assert_int_equal(sb_executor_group_spawn(&g, 1, &b.task, &jb), 0);
	assert_int_equal(sb_join_wait(&ja), 0);
	assert_int_equal(sb_join_wait(&jb), 0);
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), 0);
	assert_int_equal(sb_semaphore_available(&ping), 0);
	assert_int_equal(sb_semaphore_available(&pong), 0);
	sb_watchdog_stop(&wd);
}

static void wakes_from_a_plain_thread_reach_a_sleeping_executor(void **state)
{
	(void)state;
	enum { ROUNDS = 3000 };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "wakes from a plain thread");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, 1, &suite_cfg), 0);
	sb_semaphore ping = SB_SEMAPHORE_INIT(0), pong = SB_SEMAPHORE_INIT(0);
	pingpong_task b;
	memset(&b, 0, sizeof b);
	sb_task_init(&b.task, pingpong_poll, pingpong_cancel, NULL);
	b.give = &pong, b.take = &ping, b.rounds = ROUNDS, b.take_first = 1;
	sb_join jb;
	assert_int_equal(sb_executor_group_spawn(&g, 0, &b.task, &jb), 0);
	for (int i = 0; i < ROUNDS; i++) {
		assert_int_equal(sb_semaphore_release(&ping, 1), 0);
		assert_int_equal(sb_semaphore_acquire_blocking(&pong, 1, BLOCKING_WAIT), 0);
	}
	assert_int_equal(sb_join_wait(&jb), 0);
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), 0);
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ placement */

typedef struct where_task {
	sb_task task;
	sb_executor *ran_on;
	int deadlock_rc;
	sb_join self_join;
	struct where_task *child;
} where_task;

static int where_poll(sb_task *t, const sb_waker *w)
{
	(void)w;
	where_task *wt = SB_CONTAINER_OF(t, where_task, task);
	wt->ran_on = sb_executor_current();
	if (wt->child) {
		/* Blocking on a task of one's own executor could never finish. */
		int rc = sb_spawn(wt->ran_on, &wt->child->task, &wt->self_join);
		if (rc)
			return rc;
		wt->deadlock_rc = sb_join_wait(&wt->self_join);
		sb_join_cancel(&wt->self_join);
	}
	return 0;
}

static void where_init(where_task *wt)
{
	memset(wt, 0, sizeof *wt);
	sb_task_init(&wt->task, where_poll, NULL, NULL);
}

static void spawn_onto_a_chosen_thread_runs_there(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "spawn onto a chosen thread");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, 3, &suite_cfg), 0);
	assert_null(sb_executor_group_executor(&g, 3));
	for (size_t i = 0; i < 3; i++) {
		where_task wt;
		where_init(&wt);
		sb_join j;
		assert_int_equal(sb_executor_group_spawn(&g, i, &wt.task, &j), 0);
		assert_int_equal(sb_join_wait(&j), 0);
		assert_ptr_equal(wt.ran_on, sb_executor_group_executor(&g, i));
		unsigned f = sb_executor_features(sb_executor_group_executor(&g, i));
		if (suite_cfg.flags & SB_EXECUTOR_NO_MSG_RING)
			assert_false(f & SB_EXECUTOR_FEAT_MSG_RING);
	}
	where_task wt;
	where_init(&wt);
	assert_int_equal(sb_executor_group_spawn(&g, 3, &wt.task, NULL), -EINVAL);
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), 0);
	sb_watchdog_stop(&wd);
}

static void round_robin_spreads_tasks_over_every_thread(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "round-robin spawn");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, 3, &suite_cfg), 0);
	where_task wt[6];
	sb_join j[6];
	for (int i = 0; i < 6; i++) {
		where_init(&wt[i]);
		assert_int_equal(sb_executor_group_spawn(&g, SB_GROUP_ANY, &wt[i].task, &j[i]), 0);
	}
	int per_thread[3] = { 0, 0, 0 };
	for (int i = 0; i < 6; i++) {
		assert_int_equal(sb_join_wait(&j[i]), 0);
		for (size_t k = 0; k < 3; k++)
			per_thread[k] += wt[i].ran_on == sb_executor_group_executor(&g, k);
	}
	for (int k = 0; k < 3; k++)
		assert_int_equal(per_thread[k], 2);
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), 0);
	sb_watchdog_stop(&wd);
}

static void join_wait_on_the_tasks_own_executor_fails_with_edeadlk(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "join_wait on the owner thread");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, 1, &suite_cfg), 0);
	where_task parent, child;
	where_init(&parent);
	where_init(&child);
	parent.child = &child;
	sb_join j;
	assert_int_equal(sb_executor_group_spawn(&g, 0, &parent.task, &j), 0);
	assert_int_equal(sb_join_wait(&j), 0);
	assert_int_equal(parent.deadlock_rc, -EDEADLK);
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), 0);
	assert_true(sb_task_is_released(&child.task));
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ shutdown */

static void group_shutdown_with_queued_tasks_returns_every_permit(void **state)
{
	(void)state;
	enum { THREADS = 4, TASKS = 16, K = 3 };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "group shutdown with queued tasks");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, THREADS, &suite_cfg), 0);
	sb_semaphore sem = SB_SEMAPHORE_INIT(K), gate = SB_SEMAPHORE_INIT(0),
		     started = SB_SEMAPHORE_INIT(0);
	holder_task h[TASKS];
	sb_join j[TASKS];
	for (int i = 0; i < TASKS; i++) {
		holder_init(&h[i], &sem, &gate, &started);
		assert_int_equal(sb_executor_group_spawn(&g, SB_GROUP_ANY, &h[i].task, &j[i]), 0);
	}
	/* Every task is now waiting: K hold a permit, the rest are queued. */
	assert_int_equal(sb_semaphore_acquire_blocking(&started, TASKS, BLOCKING_WAIT), 0);
	assert_int_equal(sb_semaphore_available(&sem), 0);
	size_t cancelled = 0;
	assert_int_equal(sb_executor_group_shutdown(&g, &cancelled), 0);
	assert_int_equal(cancelled, TASKS);
	for (int i = 0; i < TASKS; i++) {
		assert_int_equal(sb_join_wait(&j[i]), -ECANCELED);
		assert_true(sb_task_is_released(&h[i].task));
	}
	assert_int_equal(sb_semaphore_available(&sem), K);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
	assert_int_equal(sb_semaphore_destroy(&gate), 0);
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), -ESHUTDOWN);
	sb_watchdog_stop(&wd);
}

static void group_spawn_after_shutdown_fails_with_eshutdown(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "group spawn after shutdown");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, 0, &suite_cfg), -EINVAL);
	assert_int_equal(sb_executor_group_init(&g, 2, &suite_cfg), 0);
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), 0);
	where_task wt;
	where_init(&wt);
	sb_join j;
	assert_int_equal(sb_executor_group_spawn(&g, SB_GROUP_ANY, &wt.task, &j), -ESHUTDOWN);
	assert_true(sb_task_is_released(&wt.task));
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ lifetimes */

/*
 * An executor on its own thread whose tasks are woken by other threads
 * while it is stopped, destroyed and freed; the wakes go on afterwards.
 * Under AddressSanitizer this checks the lifetime rules.
 */
typedef struct churn_task {
	sb_task task;
	sb_semaphore *in;
	sb_semaphore *out;
	sb_semaphore *progress;
	sb_semaphore_acquire acq;
	int acquiring;
	int rounds;
} churn_task;

static atomic_int churn_released;

static int churn_poll(sb_task *t, const sb_waker *w)
{
	churn_task *c = SB_CONTAINER_OF(t, churn_task, task);
	for (;;) {
		if (!c->acquiring) {
			sb_semaphore_acquire_init(&c->acq, c->in, 1);
			c->acquiring = 1;
		}
		int r = sb_semaphore_acquire_poll(&c->acq, w);
		if (r)
			return r;
		c->acquiring = 0;
		sb_semaphore_release(c->out, 1);
		if (++c->rounds % 64 == 0)
			sb_semaphore_release(c->progress, 1);
	}
}

static void churn_cancel(sb_task *t)
{
	churn_task *c = SB_CONTAINER_OF(t, churn_task, task);
	if (c->acquiring)
		sb_semaphore_acquire_cancel(&c->acq);
}

static void churn_release(sb_task *t)
{
	atomic_fetch_add(&churn_released, 1);
	free(SB_CONTAINER_OF(t, churn_task, task));
}

struct churn {
	sb_semaphore in, out, progress, ready;
	atomic_int stop_hammers;
	sb_executor *ex;
	size_t cancelled;
	int init_rc;
	int run_rc;
};

enum { CHURN_TASKS = 8 };

static void *churn_owner(void *arg)
{
	struct churn *c = arg;
	sb_executor *ex = malloc(sizeof *ex);
	if (!ex || sb_executor_init(ex, &suite_cfg)) {
		free(ex);
		c->init_rc = -ENOMEM;
		sb_semaphore_release(&c->ready, 1);
		return NULL;
	}
	for (int i = 0; i < CHURN_TASKS; i++) {
		churn_task *t = calloc(1, sizeof *t);
		sb_task_init(&t->task, churn_poll, churn_cancel, churn_release);
		t->in = &c->in, t->out = &c->out, t->progress = &c->progress;
		sb_spawn(ex, &t->task, NULL);
	}
	c->ex = ex;
	sb_semaphore_release(&c->ready, 1);
	c->run_rc = sb_executor_run(ex); /* until stopped */
	sb_executor_destroy(ex, &c->cancelled);
	free(ex);
	return NULL;
}

static void *churn_hammer(void *arg)
{
	struct churn *c = arg;
	while (!atomic_load(&c->stop_hammers)) {
		sb_semaphore_release(&c->in, 1);
		/* Paces the hammer; a timeout (tasks gone) just goes round again. */
		sb_semaphore_acquire_blocking(&c->out, 1, SB_NSEC_PER_MSEC);
	}
	return NULL;
}

static void destroying_an_executor_while_other_threads_wake_its_tasks_is_safe(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "destroy while other threads wake its tasks");
	atomic_store(&churn_released, 0);
	struct churn c;
	memset(&c, 0, sizeof c);
	sb_semaphore_init(&c.in, 0);
	sb_semaphore_init(&c.out, 0);
	sb_semaphore_init(&c.progress, 0);
	sb_semaphore_init(&c.ready, 0);
	pthread_t owner, hammers[2];
	assert_int_equal(pthread_create(&owner, NULL, churn_owner, &c), 0);
	assert_int_equal(sb_semaphore_acquire_blocking(&c.ready, 1, BLOCKING_WAIT), 0);
	assert_int_equal(c.init_rc, 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&hammers[i], NULL, churn_hammer, &c), 0);
	/* Some thousands of cross-thread wakes, then stop it under fire. */
	assert_int_equal(sb_semaphore_acquire_blocking(&c.progress, 40, BLOCKING_WAIT), 0);
	sb_executor_stop(c.ex);
	pthread_join(owner, NULL);
	assert_int_equal(c.run_rc, -EINTR);
	assert_int_equal(c.cancelled, CHURN_TASKS);
	/* Wakes keep arriving at the freed executor's finished tasks. */
	for (int i = 0; i < 200; i++)
		sb_semaphore_release(&c.in, 1);
	atomic_store(&c.stop_hammers, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(hammers[i], NULL);
	assert_int_equal(atomic_load(&churn_released), CHURN_TASKS);
	sb_watchdog_stop(&wd);
}

/*
 * Spawns from other threads race a destroy: each spawn is either refused
 * with -ESHUTDOWN or its task runs or is cancelled; none is lost.
 */
struct spawn_race {
	sb_executor ex;
	sb_semaphore ready, progress, gate;
	atomic_long spawned, refused, ran, released;
	size_t cancelled;
	int run_rc;
};

typedef struct race_task {
	sb_task task;
	struct spawn_race *race;
	sb_semaphore_acquire acq;
	int waits; /* every other task waits on the gate (cancelled at destroy) */
} race_task;

static int race_poll(sb_task *t, const sb_waker *w)
{
	race_task *rt = SB_CONTAINER_OF(t, race_task, task);
	if (rt->waits)
		return sb_semaphore_acquire_poll(&rt->acq, w);
	atomic_fetch_add(&rt->race->ran, 1);
	return 0;
}

static void race_cancel(sb_task *t)
{
	race_task *rt = SB_CONTAINER_OF(t, race_task, task);
	if (rt->waits)
		sb_semaphore_acquire_cancel(&rt->acq);
}

static void race_release(sb_task *t)
{
	race_task *rt = SB_CONTAINER_OF(t, race_task, task);
	atomic_fetch_add(&rt->race->released, 1);
	free(rt);
}

static void *race_owner(void *arg)
{
	struct spawn_race *r = arg;
	int rc = sb_executor_init(&r->ex, &suite_cfg);
	if (rc == 0) {
		/* One gate waiter from the start, so run never finds the executor idle. */
		race_task *first = calloc(1, sizeof *first);
		sb_task_init(&first->task, race_poll, race_cancel, race_release);
		first->race = r;
		first->waits = 1;
		sb_semaphore_acquire_init(&first->acq, &r->gate, 1);
		sb_spawn(&r->ex, &first->task, NULL);
		atomic_fetch_add(&r->spawned, 1);
	}
	sb_semaphore_release(&r->ready, 1);
	if (rc)
		return NULL;
	r->run_rc = sb_executor_run(&r->ex); /* the gate waiters keep it busy until stopped */
	sb_executor_destroy(&r->ex, &r->cancelled);
	return NULL;
}

static void *race_spawner(void *arg)
{
	struct spawn_race *r = arg;
	for (long i = 0;; i++) {
		race_task *rt = calloc(1, sizeof *rt);
		sb_task_init(&rt->task, race_poll, race_cancel, race_release);
		rt->race = r;
		rt->waits = (int)(i & 1);
		sb_semaphore_acquire_init(&rt->acq, &r->gate, 1);
		int rc = sb_spawn(&r->ex, &rt->task, NULL);
		if (rc == -ESHUTDOWN) {
			free(rt);
			atomic_fetch_add(&r->refused, 1);
			return NULL;
		}
		atomic_fetch_add(&r->spawned, 1);
		if (i % 64 == 0)
			sb_semaphore_release(&r->progress, 1);
	}
}

static void spawns_racing_a_destroy_are_refused_or_run_or_cancelled(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "spawns racing a destroy");
	static struct spawn_race r;
	memset(&r, 0, sizeof r);
	sb_semaphore_init(&r.ready, 0);
	sb_semaphore_init(&r.progress, 0);
	sb_semaphore_init(&r.gate, 0);
	pthread_t owner, spawners[2];
	assert_int_equal(pthread_create(&owner, NULL, race_owner, &r), 0);
	assert_int_equal(sb_semaphore_acquire_blocking(&r.ready, 1, BLOCKING_WAIT), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&spawners[i], NULL, race_spawner, &r), 0);
	assert_int_equal(sb_semaphore_acquire_blocking(&r.progress, 8, BLOCKING_WAIT), 0);
	sb_executor_stop(&r.ex);
	pthread_join(owner, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(spawners[i], NULL);
	assert_int_equal(r.run_rc, -EINTR);
	assert_int_equal(atomic_load(&r.refused), 2);
	assert_int_equal(atomic_load(&r.spawned), atomic_load(&r.ran) + (long)r.cancelled);
	assert_int_equal(atomic_load(&r.released), atomic_load(&r.spawned));
	assert_int_equal(sb_semaphore_destroy(&r.gate), 0);
	sb_watchdog_stop(&wd);
}

int main(void)
{
	exec_skip_without_io_uring("test_executor_threads");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(semaphore_limiter_keeps_at_most_k_holders_across_4_threads),
		cmocka_unit_test(remote_wakes_between_two_threads_lose_no_wake),
		cmocka_unit_test(wakes_from_a_plain_thread_reach_a_sleeping_executor),
		cmocka_unit_test(spawn_onto_a_chosen_thread_runs_there),
		cmocka_unit_test(round_robin_spreads_tasks_over_every_thread),
		cmocka_unit_test(join_wait_on_the_tasks_own_executor_fails_with_edeadlk),
		cmocka_unit_test(group_shutdown_with_queued_tasks_returns_every_permit),
		cmocka_unit_test(group_spawn_after_shutdown_fails_with_eshutdown),
		cmocka_unit_test(destroying_an_executor_while_other_threads_wake_its_tasks_is_safe),
		cmocka_unit_test(spawns_racing_a_destroy_are_refused_or_run_or_cancelled),
	};
	int failed = cmocka_run_group_tests_name("msg_ring doorbell", tests, use_msg_ring, NULL);
	failed += cmocka_run_group_tests_name("eventfd doorbell", tests, use_eventfd, NULL);
	return failed ? 1 : 0;
}
