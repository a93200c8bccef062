/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Floating tasks (SB_GROUP_FLOATING): where a woken task runs next, what
 * keeps it in place, a mutex handed between tasks that move, shutdown, the
 * join rules and spawning a finished task again.  Every suite runs twice:
 * with the MSG_RING doorbell (when the kernel has it) and with the eventfd
 * fallback.  No test sleeps to order anything: hop_task.h says how a test
 * knows a task is idle, and has the relay and hop tasks they are built of.
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
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include <syncband/event.h>
#include <syncband/executor.h>
#include <syncband/mutex.h>
#include <syncband/semaphore.h>

#include "exec_suites.h"
#include "exec_support.h"
#include "hop_task.h"
#include "watchdog.h"

/* ------------------------------------------------------------ where it runs */

static void a_floating_task_woken_from_another_group_thread_runs_on_the_wakers_thread(void **state)
{
	(void)state;
	enum { TASKS = 12 };
	static const hop_stage stages[] = {
		{ FROM_NEXT_THREAD, BARE }, { FROM_NEXT_THREAD, BARE }, { FROM_NEXT_THREAD, BARE },
		{ FROM_NEXT_THREAD, BARE }, { FROM_NEXT_THREAD, BARE }, { FROM_NEXT_THREAD, BARE },
	};
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "floating tasks woken from the next group thread");
	static group_view v;
	static hop_task h[TASKS];
	hop_run_floating(&v, 3, h, TASKS, stages, 6);
	/* Six hops round three threads: each task ended on the thread after its first. */
	for (int i = 0; i < TASKS; i++)
		assert_ptr_equal(h[i].woke_on[5], v.ex[view_index(&v, h[i].waited_on[0])]);
	sb_watchdog_stop(&wd);
}

static void a_floating_task_woken_from_a_plain_thread_stays_on_its_last_thread(void **state)
{
	(void)state;
	enum { TASKS = 8 };
	/* It moves first, so its last thread is not the one it was spawned on. */
	static const hop_stage stages[] = {
		{ FROM_NEXT_THREAD, BARE },
		{ FROM_PLAIN_THREAD, BARE },
		{ FROM_PLAIN_THREAD, BARE },
		{ FROM_NEXT_THREAD, BARE },
		{ FROM_PLAIN_THREAD, BARE },
	};
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "floating tasks woken from a plain thread");
	static group_view v;
	static hop_task h[TASKS];
	hop_run_floating(&v, 3, h, TASKS, stages, 5);
	for (int i = 0; i < TASKS; i++)
		assert_ptr_not_equal(h[i].woke_on[2], h[i].waited_on[0]);
	sb_watchdog_stop(&wd);
}

static void a_floating_task_with_an_armed_timeout_stays_on_its_thread(void **state)
{
	(void)state;
	enum { TASKS = 8 };
	static const hop_stage stages[] = {
		{ FROM_NEXT_THREAD, UNDER_TIMEOUT },
		{ FROM_NEXT_THREAD, BESIDE_A_SLEEP },
		{ FROM_NEXT_THREAD, UNDER_TIMEOUT },
	};
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "floating tasks with armed timers");
	static group_view v;
	static hop_task h[TASKS];
	hop_run_floating(&v, 2, h, TASKS, stages, 3);
	for (int i = 0; i < TASKS; i++)
		assert_ptr_equal(h[i].woke_on[2], h[i].waited_on[0]);
	sb_watchdog_stop(&wd);
}

static void a_floating_task_moves_again_once_its_timers_are_disarmed(void **state)
{
	(void)state;
	enum { TASKS = 8 };
	static const hop_stage stages[] = {
		{ FROM_NEXT_THREAD, UNDER_TIMEOUT },
		{ FROM_NEXT_THREAD, BARE },
		{ FROM_NEXT_THREAD, BESIDE_A_SLEEP },
		{ FROM_NEXT_THREAD, BARE },
	};
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "floating tasks after their timers");
	static group_view v;
	static hop_task h[TASKS];
	hop_run_floating(&v, 2, h, TASKS, stages, 4);
	/* Two moves on two threads: back where it started. */
	for (int i = 0; i < TASKS; i++)
		assert_ptr_equal(h[i].woke_on[3], h[i].waited_on[0]);
	sb_watchdog_stop(&wd);
}

static void a_pinned_task_woken_from_another_thread_never_moves(void **state)
{
	(void)state;
	enum { TASKS = 9 };
	static const hop_stage stages[] = {
		{ FROM_NEXT_THREAD, BARE },
		{ FROM_NEXT_THREAD, BARE },
		{ FROM_PLAIN_THREAD, BARE },
		{ FROM_NEXT_THREAD, BARE },
		{ FROM_NEXT_THREAD, UNDER_TIMEOUT },
	};
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "pinned tasks woken from other threads");
	static group_view v;
	view_init(&v, 3);
	static hop_task h[TASKS];
	size_t where[TASKS];
	for (int i = 0; i < TASKS; i++) {
		hop_init(&h[i], &v, stages, 5);
		/* By index, and round-robin. */
		where[i] = i % 3 == 2 ? SB_GROUP_ANY : (size_t)i % 3;
	}
	hop_run_all(&v, h, TASKS, where, false);
	for (int i = 0; i < TASKS; i++) {
		if (where[i] != SB_GROUP_ANY)
			assert_ptr_equal(h[i].waited_on[0], v.ex[where[i]]);
		assert_ptr_equal(h[i].woke_on[4], h[i].waited_on[0]);
	}
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ mutex */

struct lock_scene {
	group_view *v;
	sb_mutex m;
	long value;            /* plain: only the mutex orders it */
	atomic_int holders;    /* tasks inside the critical section */
	atomic_int overlaps;   /* entries that found another holder inside */
	atomic_int reentered;  /* polls that found the same task mid-poll */
	atomic_int strays;     /* polls on no executor of the group */
	atomic_long polls_on[MAX_THREADS];
	atomic_long finished_on[MAX_THREADS];
};

typedef struct locker_task {
	sb_task task;
	struct lock_scene *sc;
	sb_mutex_lock lock;
	sb_yield y;
	sb_executor *last; /* plain: consecutive polls are ordered, wherever they run */
	long moves;        /* plain, as `last` */
	atomic_int in_poll;
	int left;
	int stage; /* 0: idle, 1: locking, 2: holding (every 4th time yielding inside) */
} locker_task;

static int locker_step(locker_task *lt, const sb_waker *w)
{
	struct lock_scene *sc = lt->sc;
	for (;;) {
		if (lt->stage == 0) {
			if (lt->left == 0)
				return 0;
			sb_mutex_lock_init(&lt->lock, &sc->m);
			lt->stage = 1;
		}
		if (lt->stage == 1) {
			int r = sb_mutex_lock_poll(&lt->lock, w);
			if (r)
				return r;
			if (atomic_fetch_add(&sc->holders, 1) != 0)
				atomic_fetch_add(&sc->overlaps, 1);
			sc->value++;
			lt->stage = 2;
			sb_yield_init(&lt->y);
		}
		if (lt->left % 4 == 0 && sb_yield_poll(&lt->y, w) == SB_PENDING)
			return SB_PENDING;
		atomic_fetch_sub(&sc->holders, 1);
		int r = sb_mutex_unlock(&sc->m);
		if (r)
			return r;
		lt->stage = 0;
		lt->left--;
	}
}

static int locker_poll(sb_task *t, const sb_waker *w)
{
	locker_task *lt = SB_CONTAINER_OF(t, locker_task, task);
	struct lock_scene *sc = lt->sc;
	if (atomic_exchange(&lt->in_poll, 1))
		atomic_fetch_add(&sc->reentered, 1);
	sb_executor *cur = sb_executor_current();
	size_t i = view_index(sc->v, cur);
	if (i == SIZE_MAX) {
		atomic_fetch_add(&sc->strays, 1);
		i = 0;
	}
	atomic_fetch_add(&sc->polls_on[i], 1);
	if (lt->last && lt->last != cur)
		lt->moves++;
	lt->last = cur;
	int r = locker_step(lt, w);
	if (r != SB_PENDING)
		atomic_fetch_add(&sc->finished_on[i], 1);
	atomic_store(&lt->in_poll, 0);
	return r;
}

static void locker_cancel(sb_task *t)
{
	locker_task *lt = SB_CONTAINER_OF(t, locker_task, task);
	if (lt->stage == 1) {
		sb_mutex_lock_cancel(&lt->lock);
	} else if (lt->stage == 2) {
		atomic_fetch_sub(&lt->sc->holders, 1);
		sb_mutex_unlock(&lt->sc->m);
	}
}

static void floating_tasks_keep_a_mutex_exclusive_and_lose_no_update(void **state)
{
	(void)state;
	enum { THREADS = 2, TASKS = 2 * 32, PINNED = THREADS, EACH = 2000 };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "floating tasks sharing a mutex");
	static group_view v;
	view_init(&v, THREADS);
	static struct lock_scene sc;
	memset(&sc, 0, sizeof sc);
	sc.v = &v;
	sb_mutex_init(&sc.m);
	/* The floating tasks, then one pinned task per thread, so that unlocks
	 * keep happening on every thread and waiters keep being pulled across. */
	static locker_task tasks[TASKS + PINNED];
	static sb_join joins[TASKS + PINNED];
	for (int i = 0; i < TASKS + PINNED; i++) {
		memset(&tasks[i], 0, sizeof tasks[i]);
		sb_task_init(&tasks[i].task, locker_poll, locker_cancel, NULL);
		tasks[i].sc = &sc;
		tasks[i].left = EACH;
		size_t where = i < TASKS ? SB_GROUP_FLOATING : (size_t)(i - TASKS);
		assert_int_equal(sb_executor_group_spawn(&v.g, where, &tasks[i].task, &joins[i]),
				 0);
	}
	long moves = 0;
	for (int i = 0; i < TASKS + PINNED; i++) {
		assert_int_equal(sb_join_wait(&joins[i]), 0);
		/* Joined: its last poll happened-before, and so did its record. */
		if (i < TASKS)
			moves += tasks[i].moves;
		else
			assert_int_equal(tasks[i].moves, 0);
	}
	/* The last unlock and increment happened-before the last join. */
	assert_int_equal(sc.value, (long)(TASKS + PINNED) * EACH);
	assert_int_equal(atomic_load(&sc.overlaps), 0);
	assert_int_equal(atomic_load(&sc.holders), 0);
	assert_int_equal(atomic_load(&sc.reentered), 0);
	assert_int_equal(atomic_load(&sc.strays), 0);
	assert_false(sb_mutex_is_locked(&sc.m));
	long finished = 0;
	for (int i = 0; i < THREADS; i++)
		finished += atomic_load(&sc.finished_on[i]);
	assert_int_equal(finished, TASKS + PINNED);
	print_message("mutex handoffs: polls %ld / %ld, finished %ld / %ld, moves %ld\n",
		      atomic_load(&sc.polls_on[0]), atomic_load(&sc.polls_on[1]),
		      atomic_load(&sc.finished_on[0]), atomic_load(&sc.finished_on[1]),
		      moves);
	size_t cancelled = 99;
	assert_int_equal(sb_executor_group_shutdown(&v.g, &cancelled), 0);
	assert_int_equal(cancelled, 0);
	for (int i = 0; i < TASKS + PINNED; i++)
		assert_true(sb_task_is_released(&tasks[i].task));
	assert_int_equal(sb_mutex_destroy(&sc.m), 0);
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ shutdown */

struct shutdown_scene {
	sb_semaphore sem;     /* K permits, held across the gate wait */
	sb_semaphore gate;    /* never released */
	sb_semaphore started; /* one per task, once it is waiting or spinning */
	pthread_t caller;     /* the thread that shuts the group down */
};

enum { HOLDER, SPINNER, FINISHER };

/*
 * HOLDER: a holder task (exec_support.h) on `sem` and `gate`, its waits
 * under timeouts when `timed` (so a timer is armed).  SPINNER: yields
 * forever (always queued or running).  FINISHER: returns at once.  Every
 * kind that waits releases `started` once.
 */
typedef struct shut_task {
	holder_task h; /* its task is this task */
	int kind;
	sb_yield y;
	pthread_t caller;
	atomic_int cancels;
	atomic_int cancels_on_caller;
} shut_task;

static int shut_poll(sb_task *t, const sb_waker *w)
{
	shut_task *st = SB_CONTAINER_OF(t, shut_task, h.task);
	if (st->kind == FINISHER)
		return 0;
	if (st->kind == HOLDER)
		return holder_step(&st->h, w);
	sb_yield_init(&st->y);
	int r = sb_yield_poll(&st->y, w);
	holder_signal_once(&st->h);
	return r;
}

static void shut_cancel(sb_task *t)
{
	shut_task *st = SB_CONTAINER_OF(t, shut_task, h.task);
	atomic_fetch_add(&st->cancels, 1);
	if (pthread_equal(pthread_self(), st->caller))
		atomic_fetch_add(&st->cancels_on_caller, 1);
	if (st->kind == HOLDER)
		holder_cancel_step(&st->h);
}

static void shut_init(shut_task *st, struct shutdown_scene *sc, int kind, bool timed)
{
	memset(st, 0, sizeof *st);
	holder_init(&st->h, &sc->sem, &sc->gate, &sc->started);
	sb_task_init(&st->h.task, shut_poll, shut_cancel, NULL);
	st->h.timed = timed;
	st->kind = kind;
	st->caller = sc->caller;
}

static void group_shutdown_cancels_idle_and_queued_floating_tasks(void **state)
{
	(void)state;
	enum { K = 3, TASKS = 19 };
	/* What each task is, and whether it floats. */
	static const struct {
		int kind, timed, floating;
	} plan[TASKS] = {
		{ HOLDER, 0, 1 },   { HOLDER, 0, 1 },   { HOLDER, 1, 1 },   { HOLDER, 0, 1 },
		{ HOLDER, 0, 1 },   { HOLDER, 1, 1 },   { HOLDER, 0, 1 },   { HOLDER, 0, 1 },
		{ HOLDER, 0, 0 },   { HOLDER, 1, 0 },   { HOLDER, 0, 0 },   { HOLDER, 0, 0 },
		{ SPINNER, 0, 1 },  { SPINNER, 0, 1 },  { SPINNER, 0, 0 },
		{ FINISHER, 0, 1 }, { FINISHER, 0, 1 }, { FINISHER, 0, 0 }, { FINISHER, 0, 1 },
	};
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "group shutdown with floating tasks");
	static group_view v;
	view_init(&v, 2);
	static struct shutdown_scene sc;
	sb_semaphore_init(&sc.sem, K);
	sb_semaphore_init(&sc.gate, 0);
	sb_semaphore_init(&sc.started, 0);
	sc.caller = pthread_self();
	static shut_task tasks[TASKS];
	static sb_join joins[TASKS];
	size_t unfinished = 0;
	for (int i = 0; i < TASKS; i++) {
		shut_task *st = &tasks[i];
		shut_init(st, &sc, plan[i].kind, plan[i].timed);
		unfinished += st->kind != FINISHER;
		size_t where = plan[i].floating ? SB_GROUP_FLOATING : SB_GROUP_ANY;
		assert_int_equal(sb_executor_group_spawn(&v.g, where, &st->h.task, &joins[i]), 0);
	}
	/* Every holder is idle now (K on the gate, the rest queued on `sem`), the
	 * spinners are queued or running, the finishers are done. */
	assert_int_equal(sb_semaphore_acquire_blocking(&sc.started, unfinished, BLOCKING_WAIT), 0);
	for (int i = 0; i < TASKS; i++)
		if (plan[i].kind == FINISHER)
			assert_int_equal(sb_join_wait(&joins[i]), 0);
	assert_int_equal(sb_semaphore_available(&sc.sem), 0);
	size_t cancelled = 0;
	assert_int_equal(sb_executor_group_shutdown(&v.g, &cancelled), 0);
	assert_int_equal(cancelled, unfinished);
	for (int i = 0; i < TASKS; i++) {
		shut_task *st = &tasks[i];
		if (plan[i].kind == FINISHER) {
			assert_int_equal(atomic_load(&st->cancels), 0);
		} else {
			assert_int_equal(sb_join_wait(&joins[i]), -ECANCELED);
			assert_int_equal(atomic_load(&st->cancels), 1);
			/* Floating: on the shutdown caller's thread; pinned: on their own. */
			assert_int_equal(atomic_load(&st->cancels_on_caller), plan[i].floating);
		}
		assert_true(sb_task_is_released(&st->h.task));
	}
	assert_int_equal(sb_semaphore_available(&sc.sem), K);
	assert_int_equal(sb_semaphore_destroy(&sc.sem), 0);
	assert_int_equal(sb_semaphore_destroy(&sc.gate), 0);
	assert_int_equal(sb_semaphore_destroy(&sc.started), 0);
	assert_int_equal(sb_executor_group_shutdown(&v.g, NULL), -ESHUTDOWN);
	shut_task late;
	shut_init(&late, &sc, HOLDER, false);
	assert_int_equal(sb_executor_group_spawn(&v.g, SB_GROUP_FLOATING, &late.h.task, NULL),
			 -ESHUTDOWN);
	assert_true(sb_task_is_released(&late.h.task));
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ joins */

/*
 * Calls sb_join_wait on `target` from a group thread, then spawns `next`
 * onto thread `next_thread` (an index, or SB_GROUP_FLOATING); the last one
 * releases `done` and sets `ev`.
 */
typedef struct joiner_task {
	sb_task task;
	group_view *v;
	sb_join *target;
	struct joiner_task *next;
	size_t next_thread;
	sb_semaphore *done;
	sb_auto_event *ev;
	sb_executor *ran_on;
	int rc;
} joiner_task;

static int joiner_poll(sb_task *t, const sb_waker *w)
{
	(void)w;
	joiner_task *jt = SB_CONTAINER_OF(t, joiner_task, task);
	jt->ran_on = sb_executor_current();
	jt->rc = sb_join_wait(jt->target);
	if (jt->next)
		return sb_executor_group_spawn(&jt->v->g, jt->next_thread, &jt->next->task, NULL);
	sb_semaphore_release(jt->done, 1);
	sb_auto_event_set(jt->ev);
	return 0;
}

static void join_wait_on_a_floating_task_from_a_group_thread_fails_with_edeadlk(void **state)
{
	(void)state;
	static const hop_stage stages[] = { { FROM_ELSEWHERE, BARE } };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "join_wait on a floating task from its group");
	static group_view v;
	view_init(&v, 2);
	static hop_task f;
	hop_init(&f, &v, stages, 1);
	sb_join jf;
	assert_int_equal(sb_executor_group_spawn(&v.g, SB_GROUP_FLOATING, &f.task, &jf), 0);
	/* From thread 0, from thread 1, then from another floating task. */
	sb_semaphore done = SB_SEMAPHORE_INIT(0);
	static joiner_task jt[3];
	for (int i = 0; i < 3; i++) {
		memset(&jt[i], 0, sizeof jt[i]);
		sb_task_init(&jt[i].task, joiner_poll, NULL, NULL);
		jt[i].v = &v, jt[i].target = &jf;
	}
	jt[0].next = &jt[1], jt[0].next_thread = 1;
	jt[1].next = &jt[2], jt[1].next_thread = SB_GROUP_FLOATING;
	jt[2].done = &done, jt[2].ev = &f.ev;
	assert_int_equal(sb_executor_group_spawn(&v.g, 0, &jt[0].task, NULL), 0);
	assert_int_equal(sb_semaphore_acquire_blocking(&done, 1, BLOCKING_WAIT), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(jt[i].rc, -EDEADLK);
	assert_ptr_equal(jt[0].ran_on, v.ex[0]);
	assert_ptr_equal(jt[1].ran_on, v.ex[1]);
	assert_true(view_index(&v, jt[2].ran_on) < v.n);
	/* The refusals left the join alone: from here it waits for the task. */
	assert_int_equal(sb_join_wait(&jf), 0);
	hop_check(&f, true);
	size_t cancelled = 99;
	assert_int_equal(sb_executor_group_shutdown(&v.g, &cancelled), 0);
	assert_int_equal(cancelled, 0);
	assert_true(sb_task_is_released(&f.task));
	for (int i = 0; i < 3; i++)
		assert_true(sb_task_is_released(&jt[i].task));
	hop_destroy(&f);
	assert_int_equal(sb_semaphore_destroy(&done), 0);
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ spawned inside */

/*
 * Spawns `count` floating children from its group thread (round-robin, so
 * some land on this very thread), releases `spawned`, then passes on to
 * `next` on the next thread.
 */
typedef struct spawner_task {
	sb_task task;
	group_view *v;
	hop_task *children;
	sb_join *joins;
	int count;
	struct spawner_task *next;
	sb_semaphore *spawned;
	sb_executor *ran_on;
	int rc;
} spawner_task;

static int spawner_poll(sb_task *t, const sb_waker *w)
{
	(void)w;
	spawner_task *sp = SB_CONTAINER_OF(t, spawner_task, task);
	sp->ran_on = sb_executor_current();
	sb_executor_group *g = &sp->v->g;
	for (int i = 0; i < sp->count && sp->rc == 0; i++)
		sp->rc = sb_executor_group_spawn(g, SB_GROUP_FLOATING, &sp->children[i].task,
						 &sp->joins[i]);
	sb_semaphore_release(sp->spawned, 1);
	if (sp->next) {
		size_t i = view_index(sp->v, sp->ran_on);
		if (i == SIZE_MAX)
			return -EPROTO;
		return sb_executor_group_spawn(g, (i + 1) % sp->v->n, &sp->next->task, NULL);
	}
	return 0;
}

static void floating_tasks_spawned_from_group_threads_run_and_are_cancelled_at_shutdown(void **state)
{
	(void)state;
	enum { THREADS = 2, EACH = 4 };
	/* Three children of each spawner hop twice and finish; the last waits
	 * for nobody and is left to the shutdown. */
	static const hop_stage hops[] = { { FROM_NEXT_THREAD, BARE }, { FROM_NEXT_THREAD, BARE } };
	static const hop_stage forever[] = { { FROM_ELSEWHERE, BARE } };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "floating tasks spawned from group threads");
	static group_view v;
	view_init(&v, THREADS);
	sb_semaphore spawned = SB_SEMAPHORE_INIT(0);
	static hop_task children[THREADS][EACH];
	static sb_join joins[THREADS][EACH];
	static spawner_task sp[THREADS];
	for (int s = 0; s < THREADS; s++) {
		memset(&sp[s], 0, sizeof sp[s]);
		sb_task_init(&sp[s].task, spawner_poll, NULL, NULL);
		sp[s].v = &v, sp[s].children = children[s], sp[s].joins = joins[s];
		sp[s].count = EACH, sp[s].spawned = &spawned;
		sp[s].next = s + 1 < THREADS ? &sp[s + 1] : NULL;
		for (int i = 0; i < EACH; i++) {
			if (i < EACH - 1)
				hop_init(&children[s][i], &v, hops, 2);
			else
				hop_init(&children[s][i], &v, forever, 1);
		}
	}
	/* One spawner after the other: each takes EACH consecutive turns of the
	 * round-robin cursor, so half its children start on its own thread. */
	assert_int_equal(sb_executor_group_spawn(&v.g, 0, &sp[0].task, NULL), 0);
	assert_int_equal(sb_semaphore_acquire_blocking(&spawned, THREADS, BLOCKING_WAIT), 0);
	int own = 0;
	for (int s = 0; s < THREADS; s++) {
		assert_int_equal(sp[s].rc, 0);
		assert_ptr_equal(sp[s].ran_on, v.ex[s]);
		for (int i = 0; i < EACH - 1; i++) {
			assert_int_equal(sb_join_wait(&joins[s][i]), 0);
			hop_check(&children[s][i], true);
			own += children[s][i].waited_on[0] == sp[s].ran_on;
		}
	}
	print_message("floating children started on their spawner's thread: %d of %d\n", own,
		      THREADS * (EACH - 1));
	size_t cancelled = 0;
	assert_int_equal(sb_executor_group_shutdown(&v.g, &cancelled), 0);
	assert_int_equal(cancelled, THREADS);
	for (int s = 0; s < THREADS; s++) {
		assert_int_equal(sb_join_wait(&joins[s][EACH - 1]), -ECANCELED);
		assert_true(sb_task_is_released(&sp[s].task));
		for (int i = 0; i < EACH; i++) {
			assert_true(sb_task_is_released(&children[s][i].task));
			hop_wait_released(&children[s][i]);
			hop_destroy(&children[s][i]);
		}
	}
	assert_int_equal(sb_semaphore_destroy(&spawned), 0);
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ respawn */

static void a_finished_floating_task_can_be_spawned_again(void **state)
{
	(void)state;
	enum { ROUNDS = 30 };
	/* It moves (when floating), then waits for the test, which can meanwhile
	 * try to spawn it again. */
	static const hop_stage stages[] = {
		{ FROM_NEXT_THREAD, BARE },
		{ FROM_PLAIN_THREAD, BARE },
	};
	static const size_t modes[] = { SB_GROUP_FLOATING, 0, SB_GROUP_FLOATING, 1,
					SB_GROUP_ANY, SB_GROUP_FLOATING };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "spawning a finished floating task again");
	static group_view v;
	view_init(&v, 2);
	static hop_task h;
	hop_init(&h, &v, stages, 2);
	for (int round = 0; round < ROUNDS; round++) {
		size_t mode = modes[round % 6];
		bool floating = mode == SB_GROUP_FLOATING;
		/* The task itself is not re-initialised: a released task may be spawned again. */
		hop_reset(&h);
		sb_join j;
		assert_int_equal(sb_executor_group_spawn(&v.g, mode, &h.task, &j), 0);
		/* Still live (it waits for us): every other spawn is refused. */
		assert_int_equal(sb_executor_group_spawn(&v.g, SB_GROUP_FLOATING, &h.task, NULL),
				 -EBUSY);
		assert_int_equal(sb_executor_group_spawn(&v.g, 0, &h.task, NULL), -EBUSY);
		hop_wake_from_here(&h, 1);
		assert_int_equal(sb_join_wait(&j), 0);
		hop_check(&h, floating);
		if (!floating && mode != SB_GROUP_ANY)
			assert_ptr_equal(h.woke_on[1], v.ex[mode]);
		hop_wait_released(&h);
	}
	size_t cancelled = 99;
	assert_int_equal(sb_executor_group_shutdown(&v.g, &cancelled), 0);
	assert_int_equal(cancelled, 0);
	assert_true(sb_task_is_released(&h.task));
	hop_destroy(&h);
	sb_watchdog_stop(&wd);
}

int main(void)
{
	exec_skip_without_io_uring("test_executor_floating");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_floating_task_woken_from_another_group_thread_runs_on_the_wakers_thread),
		cmocka_unit_test(a_floating_task_woken_from_a_plain_thread_stays_on_its_last_thread),
		cmocka_unit_test(a_floating_task_with_an_armed_timeout_stays_on_its_thread),
		cmocka_unit_test(a_floating_task_moves_again_once_its_timers_are_disarmed),
		cmocka_unit_test(a_pinned_task_woken_from_another_thread_never_moves),
		cmocka_unit_test(floating_tasks_keep_a_mutex_exclusive_and_lose_no_update),
		cmocka_unit_test(group_shutdown_cancels_idle_and_queued_floating_tasks),
		cmocka_unit_test(join_wait_on_a_floating_task_from_a_group_thread_fails_with_edeadlk),
		cmocka_unit_test(floating_tasks_spawned_from_group_threads_run_and_are_cancelled_at_shutdown),
		cmocka_unit_test(a_finished_floating_task_can_be_spawned_again),
	};
	int failed = cmocka_run_group_tests_name("msg_ring doorbell", tests, use_msg_ring, NULL);
	failed += cmocka_run_group_tests_name("eventfd doorbell", tests, use_eventfd, NULL);
	return failed ? 1 : 0;
}
