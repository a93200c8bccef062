/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The executor on one thread: tasks, joins, yield, sleep, timeouts, block_on,
 * shutdown and the error paths.  (Cross-thread behaviour: test_executor_threads.c.)
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
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <syncband/executor.h>
#include <syncband/semaphore.h>

#include "exec_support.h"
#include "watchdog.h"
#include "zeroed_future.h"

static int setup_executor(void **state)
{
	sb_executor *ex = malloc(sizeof *ex);
	assert_non_null(ex);
	assert_int_equal(sb_executor_init(ex, NULL), 0);
	*state = ex;
	return 0;
}

static int teardown_executor(void **state)
{
	sb_executor *ex = *state;
	assert_int_equal(sb_executor_destroy(ex, NULL), 0);
	free(ex);
	return 0;
}

/* ---------------------------------------------------------------- tasks */

/* Yields `yields` times, logging its id at every poll, then returns `result`. */
typedef struct yield_task {
	sb_task task;
	sb_yield y;
	int yields;
	int id;
	int result;
	int *log;
	size_t *log_len;
} yield_task;

static int yield_task_poll(sb_task *t, const sb_waker *w)
{
	yield_task *yt = SB_CONTAINER_OF(t, yield_task, task);
	if (yt->log)
		yt->log[(*yt->log_len)++] = yt->id;
	while (yt->yields > 0) {
		if (sb_yield_poll(&yt->y, w) == SB_PENDING)
			return SB_PENDING;
		yt->yields--;
		sb_yield_init(&yt->y);
	}
	return yt->result;
}

static void yield_task_init(yield_task *yt, int yields, int result)
{
	memset(yt, 0, sizeof *yt);
	sb_task_init(&yt->task, yield_task_poll, NULL, NULL);
	sb_yield_init(&yt->y);
	yt->yields = yields;
	yt->result = result;
}

/* Acquires `n` permits, optionally under a timeout; keeps them on success. */
typedef struct acquire_task {
	sb_task task;
	sb_semaphore *sem;
	size_t n;
	uint64_t timeout_ns; /* 0: no timeout */
	sb_semaphore_acquire acq;
	sb_timeout to;
	int started;
	uint64_t finished_at;
} acquire_task;

static int acquire_task_poll(sb_task *t, const sb_waker *w)
{
	acquire_task *at = SB_CONTAINER_OF(t, acquire_task, task);
	if (!at->started) {
		at->started = 1;
		sb_semaphore_acquire_init(&at->acq, at->sem, at->n);
		if (at->timeout_ns)
			sb_timeout_init(&at->to, &at->acq, &sb_semaphore_acquire_ops, at->timeout_ns);
	}
	int r = at->timeout_ns ? sb_timeout_poll(&at->to, w) : sb_semaphore_acquire_poll(&at->acq, w);
	if (r != SB_PENDING)
		at->finished_at = sb_now_ns();
	return r;
}

static void acquire_task_cancel(sb_task *t)
{
	acquire_task *at = SB_CONTAINER_OF(t, acquire_task, task);
	if (!at->started)
		return;
	if (at->timeout_ns)
		sb_timeout_cancel(&at->to);
	else
		sb_semaphore_acquire_cancel(&at->acq);
}

static void acquire_task_init(acquire_task *at, sb_semaphore *sem, size_t n, uint64_t timeout_ns)
{
	memset(at, 0, sizeof *at);
	sb_task_init(&at->task, acquire_task_poll, acquire_task_cancel, NULL);
	at->sem = sem;
	at->n = n;
	at->timeout_ns = timeout_ns;
}

/* Releases `n` permits when polled. */
typedef struct release_task {
	sb_task task;
	sb_semaphore *sem;
	size_t n;
} release_task;

static int release_task_poll(sb_task *t, const sb_waker *w)
{
	(void)w;
	release_task *rt = SB_CONTAINER_OF(t, release_task, task);
	return sb_semaphore_release(rt->sem, rt->n);
}

static int poll_join_now(sb_join *j)
{
	sb_waker noop = sb_waker_noop();
	return sb_join_poll(j, &noop);
}

/* ---------------------------------------------------------------- basics */

static void spawned_task_runs_and_its_join_returns_the_result(void **state)
{
	sb_executor *ex = *state;
	yield_task a;
	yield_task_init(&a, 0, -ENOENT);
	sb_join j;
	assert_int_equal(sb_spawn(ex, &a.task, &j), 0);
	assert_int_equal(poll_join_now(&j), SB_PENDING);
	assert_int_equal(sb_executor_run(ex), 0);
	assert_int_equal(poll_join_now(&j), -ENOENT);
	assert_int_equal(poll_join_now(&j), -ENOENT);
	assert_true(sb_task_is_released(&a.task));
}

static void yield_sends_the_task_to_the_back_of_the_run_queue(void **state)
{
	sb_executor *ex = *state;
	int log[16];
	size_t len = 0;
	yield_task a, b;
	yield_task_init(&a, 2, 0);
	yield_task_init(&b, 2, 0);
	a.id = 1, b.id = 2;
	a.log = b.log = log;
	a.log_len = b.log_len = &len;
	assert_int_equal(sb_spawn(ex, &a.task, NULL), 0);
	assert_int_equal(sb_spawn(ex, &b.task, NULL), 0);
	assert_int_equal(sb_executor_run(ex), 0);
	int expect[] = { 1, 2, 1, 2, 1, 2 };
	assert_int_equal(len, 6);
	assert_memory_equal(log, expect, sizeof expect);
	assert_true(sb_task_is_released(&a.task));
	assert_true(sb_task_is_released(&b.task));
}

static void detached_task_is_released_when_it_finishes(void **state)
{
	sb_executor *ex = *state;
	yield_task a;
	yield_task_init(&a, 3, 0);
	assert_int_equal(sb_spawn(ex, &a.task, NULL), 0);
	assert_false(sb_task_is_released(&a.task));
	assert_int_equal(sb_executor_run(ex), 0);
	assert_true(sb_task_is_released(&a.task));
}

static void cancelled_join_detaches_and_the_task_still_runs(void **state)
{
	sb_executor *ex = *state;
	yield_task a;
	yield_task_init(&a, 1, 0);
	sb_join j;
	assert_int_equal(sb_spawn(ex, &a.task, &j), 0);
	sb_join_cancel(&j);
	assert_int_equal(poll_join_now(&j), -ECANCELED);
	assert_int_equal(sb_executor_run(ex), 0);
	assert_int_equal(a.yields, 0);
	assert_true(sb_task_is_released(&a.task));
}

/* A parent that spawns a child on its own executor and awaits it. */
typedef struct parent_task {
	sb_task task;
	yield_task child;
	sb_join join;
	int spawned;
} parent_task;

static int parent_poll(sb_task *t, const sb_waker *w)
{
	parent_task *p = SB_CONTAINER_OF(t, parent_task, task);
	if (!p->spawned) {
		p->spawned = 1;
		int rc = sb_spawn(sb_executor_current(), &p->child.task, &p->join);
		if (rc)
			return rc;
	}
	return sb_join_poll(&p->join, w);
}

static void task_spawned_from_a_task_is_awaited_through_its_join(void **state)
{
	sb_executor *ex = *state;
	parent_task p;
	memset(&p, 0, sizeof p);
	sb_task_init(&p.task, parent_poll, NULL, NULL);
	yield_task_init(&p.child, 3, -EXDEV);
	sb_join j;
	assert_int_equal(sb_spawn(ex, &p.task, &j), 0);
	assert_int_equal(sb_executor_run(ex), 0);
	assert_int_equal(poll_join_now(&j), -EXDEV);
	assert_true(sb_task_is_released(&p.child.task));
	assert_true(sb_task_is_released(&p.task));
}

static void spawning_a_task_that_is_still_referenced_fails_with_ebusy(void **state)
{
	sb_executor *ex = *state;
	yield_task a;
	yield_task_init(&a, 0, 0);
	sb_join j;
	assert_int_equal(sb_spawn(ex, &a.task, &j), 0);
	assert_int_equal(sb_spawn(ex, &a.task, NULL), -EBUSY);
	assert_int_equal(sb_executor_run(ex), 0);
	assert_false(sb_task_is_released(&a.task)); /* the join still holds it */
	assert_int_equal(poll_join_now(&j), 0);
	assert_true(sb_task_is_released(&a.task));
	/* Released: it may be spawned again. */
	yield_task_init(&a, 1, -EAGAIN);
	assert_int_equal(sb_spawn(ex, &a.task, &j), 0);
	assert_int_equal(sb_executor_run(ex), 0);
	assert_int_equal(poll_join_now(&j), -EAGAIN);
}

static void block_on_drives_a_join_to_completion(void **state)
{
	sb_executor *ex = *state;
	yield_task a;
	yield_task_init(&a, 5, -E2BIG);
	sb_join j;
	assert_int_equal(sb_spawn(ex, &a.task, &j), 0);
	assert_int_equal(sb_block_on(ex, &j, &sb_join_ops), -E2BIG);
	assert_true(sb_task_is_released(&a.task));
}

/* ---------------------------------------------------------------- timers */

static void block_on_a_sleep_returns_after_its_deadline(void **state)
{
	sb_executor *ex = *state;
	sb_sleep s;
	uint64_t start = sb_now_ns();
	sb_sleep_init(&s, 2 * SB_NSEC_PER_MSEC);
	assert_int_equal(sb_block_on(ex, &s, &sb_sleep_ops), 0);
	assert_true(sb_now_ns() - start >= 2 * SB_NSEC_PER_MSEC);
}

typedef struct sleep_task {
	sb_task task;
	sb_sleep s;
	int id;
	int *log;
	size_t *log_len;
} sleep_task;

static int sleep_task_poll(sb_task *t, const sb_waker *w)
{
	sleep_task *st = SB_CONTAINER_OF(t, sleep_task, task);
	int r = sb_sleep_poll(&st->s, w);
	if (r == 0)
		st->log[(*st->log_len)++] = st->id;
	return r;
}

static void sleep_task_cancel(sb_task *t)
{
	sb_sleep_cancel(&SB_CONTAINER_OF(t, sleep_task, task)->s);
}

static void sleeps_complete_in_deadline_order(void **state)
{
	sb_executor *ex = *state;
	int log[3];
	size_t len = 0;
	sleep_task st[3];
	const uint64_t ms[3] = { 6, 2, 4 };
	for (int i = 0; i < 3; i++) {
		sb_task_init(&st[i].task, sleep_task_poll, sleep_task_cancel, NULL);
		sb_sleep_init(&st[i].s, ms[i] * SB_NSEC_PER_MSEC);
		st[i].id = i;
		st[i].log = log;
		st[i].log_len = &len;
		assert_int_equal(sb_spawn(ex, &st[i].task, NULL), 0);
	}
	assert_int_equal(sb_executor_run(ex), 0);
	int expect[] = { 1, 2, 0 };
	assert_int_equal(len, 3);
	assert_memory_equal(log, expect, sizeof expect);
}

static void sleep_polled_outside_an_executor_fails_with_eperm(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_sleep s;
	sb_sleep_init(&s, SB_NSEC_PER_SEC);
	assert_int_equal(sb_sleep_poll(&s, &noop), -EPERM);
	sb_sleep_cancel(&s);
	sb_sleep_until_init(&s, 0); /* already past */
	assert_int_equal(sb_sleep_poll(&s, &noop), 0);
}

static void cancelled_sleep_leaves_the_timer_heap(void **state)
{
	sb_executor *ex = *state;
	/* A long sleep cancelled by a timeout that wins: run must not wait for it. */
	sb_sleep inner;
	sb_sleep_init(&inner, 60 * SB_NSEC_PER_SEC);
	sb_timeout t;
	sb_timeout_init(&t, &inner, &sb_sleep_ops, SB_NSEC_PER_MSEC);
	uint64_t start = sb_now_ns();
	assert_int_equal(sb_block_on(ex, &t, &sb_timeout_ops), -ETIMEDOUT);
	assert_int_equal(sb_executor_run(ex), 0);
	assert_true(sb_now_ns() - start < 10 * SB_NSEC_PER_SEC);
	assert_int_equal(sb_timeout_poll(&t, NULL), -ETIMEDOUT); /* done: same result */
}

static void timeout_returns_the_inner_result_when_it_completes_first(void **state)
{
	sb_executor *ex = *state;
	sb_semaphore sem = SB_SEMAPHORE_INIT(1);
	sb_semaphore_acquire acq;
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_timeout t;
	sb_timeout_init(&t, &acq, &sb_semaphore_acquire_ops, 10 * SB_NSEC_PER_SEC);
	uint64_t start = sb_now_ns();
	assert_int_equal(sb_block_on(ex, &t, &sb_timeout_ops), 0);
	assert_true(sb_now_ns() - start < 5 * SB_NSEC_PER_SEC);
	assert_int_equal(sb_semaphore_available(&sem), 0);
	assert_int_equal(sb_semaphore_release(&sem, 1), 0);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

static void timeout_on_a_pending_acquire_completes_with_etimedout(void **state)
{
	sb_executor *ex = *state;
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire acq;
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_timeout t;
	uint64_t start = sb_now_ns();
	sb_timeout_init(&t, &acq, &sb_semaphore_acquire_ops, 5 * SB_NSEC_PER_MSEC);
	assert_int_equal(sb_block_on(ex, &t, &sb_timeout_ops), -ETIMEDOUT);
	assert_true(sb_now_ns() - start >= 5 * SB_NSEC_PER_MSEC);
	assert_int_equal(sb_semaphore_destroy(&sem), 0); /* nobody is queued */
}

static void timeout_during_a_partial_grant_hands_the_permits_on(void **state)
{
	sb_executor *ex = *state;
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	acquire_task a, b;
	release_task r;
	acquire_task_init(&a, &sem, 5, 5 * SB_NSEC_PER_MSEC); /* head: will get 3 of 5 */
	acquire_task_init(&b, &sem, 2, 0);                     /* queued behind a */
	memset(&r, 0, sizeof r);
	sb_task_init(&r.task, release_task_poll, NULL, NULL);
	r.sem = &sem;
	r.n = 3;
	sb_join ja, jb, jr;
	uint64_t start = sb_now_ns();
	assert_int_equal(sb_spawn(ex, &a.task, &ja), 0);
	assert_int_equal(sb_spawn(ex, &b.task, &jb), 0);
	assert_int_equal(sb_spawn(ex, &r.task, &jr), 0);
	assert_int_equal(sb_executor_run(ex), 0);
	assert_int_equal(poll_join_now(&jr), 0);
	assert_int_equal(poll_join_now(&ja), -ETIMEDOUT);
	assert_true(a.finished_at - start >= 5 * SB_NSEC_PER_MSEC);
	/* a's 3 partial permits went on: 2 to b, 1 to the counter. */
	assert_int_equal(poll_join_now(&jb), 0);
	assert_true(b.finished_at >= a.finished_at);
	assert_int_equal(sb_semaphore_available(&sem), 1);
	assert_int_equal(sb_semaphore_release(&sem, 2), 0);
	assert_int_equal(sb_semaphore_available(&sem), 3);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

/* ---------------------------------------------------------------- lifetimes */

static atomic_int releases;

/* Keeps a clone of its waker past its own completion. */
typedef struct stash_task {
	sb_task task;
	sb_waker *stash;
} stash_task;

static int stash_task_poll(sb_task *t, const sb_waker *w)
{
	stash_task *st = SB_CONTAINER_OF(t, stash_task, task);
	*st->stash = sb_waker_clone(w);
	return 0;
}

static void stash_task_release(sb_task *t)
{
	atomic_fetch_add(&releases, 1);
	free(SB_CONTAINER_OF(t, stash_task, task));
}

static void wake_after_task_completion_is_harmless(void **state)
{
	sb_executor *ex = *state;
	atomic_store(&releases, 0);
	sb_waker stash;
	stash_task *st = malloc(sizeof *st);
	assert_non_null(st);
	sb_task_init(&st->task, stash_task_poll, NULL, stash_task_release);
	st->stash = &stash;
	assert_int_equal(sb_spawn(ex, &st->task, NULL), 0);
	assert_int_equal(sb_executor_run(ex), 0);
	assert_int_equal(atomic_load(&releases), 0); /* the stashed waker holds it */
	sb_waker_wake_by_ref(&stash);
	sb_waker c = sb_waker_clone(&stash);
	sb_waker_wake(c);
	assert_int_equal(sb_executor_run(ex), 0); /* nothing was scheduled */
	sb_waker_wake(stash);                     /* the last reference: freed here */
	assert_int_equal(atomic_load(&releases), 1);
}

static void wake_after_the_executor_is_destroyed_is_harmless(void **state)
{
	(void)state;
	atomic_store(&releases, 0);
	sb_executor *ex = malloc(sizeof *ex);
	assert_non_null(ex);
	assert_int_equal(sb_executor_init(ex, NULL), 0);
	sb_waker stash;
	stash_task *st = malloc(sizeof *st);
	assert_non_null(st);
	sb_task_init(&st->task, stash_task_poll, NULL, stash_task_release);
	st->stash = &stash;
	assert_int_equal(sb_spawn(ex, &st->task, NULL), 0);
	assert_int_equal(sb_executor_run(ex), 0);
	assert_int_equal(sb_executor_destroy(ex, NULL), 0);
	free(ex);
	sb_waker_wake_by_ref(&stash);
	sb_waker_wake(stash);
	assert_int_equal(atomic_load(&releases), 1);
}

/* ---------------------------------------------------------------- shutdown */

static void destroy_cancels_unfinished_tasks_and_returns_every_permit(void **state)
{
	(void)state;
	sb_executor ex;
	assert_int_equal(sb_executor_init(&ex, NULL), 0);
	sb_semaphore sem = SB_SEMAPHORE_INIT(2), gate = SB_SEMAPHORE_INIT(0);
	enum { N = 6 };
	holder_task h[N];
	sb_join j[N];
	for (int i = 0; i < N; i++) {
		holder_init(&h[i], &sem, &gate, NULL);
		assert_int_equal(sb_spawn(&ex, &h[i].task, &j[i]), 0);
	}
	/* Let every task reach its wait: 2 hold permits, 4 are queued. */
	sb_yield y;
	sb_yield_init(&y);
	assert_int_equal(sb_block_on(&ex, &y, &sb_yield_ops), 0);
	assert_int_equal(sb_semaphore_available(&sem), 0);
	/* Plus one spawned but never polled. */
	holder_task late;
	holder_init(&late, &sem, &gate, NULL);
	sb_join jl;
	assert_int_equal(sb_spawn(&ex, &late.task, &jl), 0);

	size_t cancelled = 0;
	assert_int_equal(sb_executor_destroy(&ex, &cancelled), 0);
	assert_int_equal(cancelled, N + 1);
	for (int i = 0; i < N; i++) {
		assert_int_equal(poll_join_now(&j[i]), -ECANCELED);
		assert_true(sb_task_is_released(&h[i].task));
	}
	assert_int_equal(poll_join_now(&jl), -ECANCELED);
	assert_int_equal(sb_semaphore_available(&sem), 2);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
	assert_int_equal(sb_semaphore_destroy(&gate), 0);
}

static void spawn_on_a_destroyed_executor_fails_with_eshutdown(void **state)
{
	(void)state;
	sb_executor ex;
	assert_int_equal(sb_executor_init(&ex, NULL), 0);
	assert_int_equal(sb_executor_destroy(&ex, NULL), 0);
	yield_task a;
	yield_task_init(&a, 0, 0);
	sb_join j;
	assert_int_equal(sb_spawn(&ex, &a.task, &j), -ESHUTDOWN);
	assert_true(sb_task_is_released(&a.task));
	assert_int_equal(sb_executor_run(&ex), -ESHUTDOWN);
	assert_int_equal(sb_executor_destroy(&ex, NULL), 0); /* twice: nothing to do */
}

/* Its cancel function tries to spawn onto the executor being destroyed. */
typedef struct respawn_task {
	sb_task task;
	yield_task other;
	int spawn_rc;
	sb_semaphore *gate;
	sb_semaphore_acquire acq;
} respawn_task;

static int respawn_poll(sb_task *t, const sb_waker *w)
{
	respawn_task *rt = SB_CONTAINER_OF(t, respawn_task, task);
	return sb_semaphore_acquire_poll(&rt->acq, w);
}

static void respawn_cancel(sb_task *t)
{
	respawn_task *rt = SB_CONTAINER_OF(t, respawn_task, task);
	sb_semaphore_acquire_cancel(&rt->acq);
	rt->spawn_rc = sb_spawn(rt->task.exec, &rt->other.task, NULL);
}

static void spawn_on_a_stopping_executor_fails_with_eshutdown(void **state)
{
	(void)state;
	sb_executor ex;
	assert_int_equal(sb_executor_init(&ex, NULL), 0);
	sb_semaphore gate = SB_SEMAPHORE_INIT(0);
	respawn_task rt;
	memset(&rt, 0, sizeof rt);
	sb_task_init(&rt.task, respawn_poll, respawn_cancel, NULL);
	yield_task_init(&rt.other, 0, 0);
	sb_semaphore_acquire_init(&rt.acq, &gate, 1);
	assert_int_equal(sb_spawn(&ex, &rt.task, NULL), 0);
	sb_yield y;
	sb_yield_init(&y);
	assert_int_equal(sb_block_on(&ex, &y, &sb_yield_ops), 0);
	size_t cancelled;
	assert_int_equal(sb_executor_destroy(&ex, &cancelled), 0);
	assert_int_equal(cancelled, 1);
	assert_int_equal(rt.spawn_rc, -ESHUTDOWN);
	assert_int_equal(sb_semaphore_destroy(&gate), 0);
}

/* ---------------------------------------------------------------- misuse */

typedef struct reentry_task {
	sb_task task;
	int run_rc;
	int block_rc;
	int destroy_rc;
} reentry_task;

static int reentry_poll(sb_task *t, const sb_waker *w)
{
	(void)w;
	reentry_task *rt = SB_CONTAINER_OF(t, reentry_task, task);
	sb_yield y;
	sb_yield_init(&y);
	rt->run_rc = sb_executor_run(sb_executor_current());
	rt->block_rc = sb_block_on(sb_executor_current(), &y, &sb_yield_ops);
	rt->destroy_rc = sb_executor_destroy(sb_executor_current(), NULL);
	return 0;
}

static void run_block_on_and_destroy_inside_a_task_fail_with_ebusy(void **state)
{
	sb_executor *ex = *state;
	reentry_task rt;
	sb_task_init(&rt.task, reentry_poll, NULL, NULL);
	assert_int_equal(sb_spawn(ex, &rt.task, NULL), 0);
	assert_int_equal(sb_executor_run(ex), 0);
	assert_int_equal(rt.run_rc, -EBUSY);
	assert_int_equal(rt.block_rc, -EBUSY);
	assert_int_equal(rt.destroy_rc, -EBUSY);
}

struct foreign_call {
	sb_executor *ex;
	int run_rc;
	int destroy_rc;
};

static void *call_from_another_thread(void *arg)
{
	struct foreign_call *fc = arg;
	fc->run_rc = sb_executor_run(fc->ex);
	fc->destroy_rc = sb_executor_destroy(fc->ex, NULL);
	return NULL;
}

static void run_and_destroy_from_another_thread_fail_with_eperm(void **state)
{
	sb_executor *ex = *state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "run from another thread");
	struct foreign_call fc = { ex, 0, 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, call_from_another_thread, &fc), 0);
	pthread_join(th, NULL);
	sb_watchdog_stop(&wd);
	assert_int_equal(fc.run_rc, -EPERM);
	assert_int_equal(fc.destroy_rc, -EPERM);
}

/* Stops its own executor, then waits on a gate nobody opens (yet). */
typedef struct stopper_task {
	sb_task task;
	sb_semaphore_acquire acq;
	int stopped;
} stopper_task;

static int stopper_poll(sb_task *t, const sb_waker *w)
{
	stopper_task *st = SB_CONTAINER_OF(t, stopper_task, task);
	if (!st->stopped) {
		st->stopped = 1;
		sb_executor_stop(sb_executor_current());
	}
	return sb_semaphore_acquire_poll(&st->acq, w);
}

static void stop_makes_run_return_eintr_and_a_later_run_resumes(void **state)
{
	sb_executor *ex = *state;
	sb_semaphore gate = SB_SEMAPHORE_INIT(0);
	stopper_task st;
	sb_task_init(&st.task, stopper_poll, NULL, NULL);
	sb_semaphore_acquire_init(&st.acq, &gate, 1);
	st.stopped = 0;
	sb_join j;
	assert_int_equal(sb_spawn(ex, &st.task, &j), 0);
	assert_int_equal(sb_executor_run(ex), -EINTR);
	assert_int_equal(poll_join_now(&j), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&gate, 1), 0); /* wakes it from this thread */
	assert_int_equal(sb_executor_run(ex), 0);
	assert_int_equal(poll_join_now(&j), 0);
	assert_int_equal(sb_semaphore_destroy(&gate), 0);
}

static void init_with_an_impossible_ring_size_fails_with_einval(void **state)
{
	(void)state;
	sb_executor ex;
	sb_executor_config cfg = { .entries = 1u << 20, .flags = 0 };
	assert_int_equal(sb_executor_init(&ex, &cfg), -EINVAL);
	yield_task a;
	yield_task_init(&a, 0, 0);
	assert_int_equal(sb_spawn(&ex, &a.task, NULL), -ESHUTDOWN);
	assert_int_equal(sb_executor_run(&ex), -ESHUTDOWN);
	assert_int_equal(sb_executor_destroy(&ex, NULL), 0);
}

/* In a child: a seccomp filter makes io_uring_setup fail with `err`. */
static int init_under_seccomp(int err)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof filter / sizeof filter[0], filter };
	pid_t pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
			_exit(77);
		sb_executor ex;
		int rc = sb_executor_init(&ex, NULL);
		_exit(rc == -err ? 0 : 1);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

static void init_reports_the_error_when_io_uring_is_blocked(void **state)
{
	(void)state;
	int r = init_under_seccomp(ENOSYS);
	if (r == 77)
		skip();
	assert_int_equal(r, 0);
	assert_int_equal(init_under_seccomp(EPERM), 0);
}

static void features_report_the_setup_flags_in_use(void **state)
{
	(void)state;
	sb_executor ex;
	assert_int_equal(sb_executor_init(&ex, NULL), 0);
	unsigned f = sb_executor_features(&ex);
	printf("# features: single_issuer=%d defer_taskrun=%d coop_taskrun=%d msg_ring=%d\n",
	       !!(f & SB_EXECUTOR_FEAT_SINGLE_ISSUER), !!(f & SB_EXECUTOR_FEAT_DEFER_TASKRUN),
	       !!(f & SB_EXECUTOR_FEAT_COOP_TASKRUN), !!(f & SB_EXECUTOR_FEAT_MSG_RING));
	assert_false((f & SB_EXECUTOR_FEAT_DEFER_TASKRUN) && (f & SB_EXECUTOR_FEAT_COOP_TASKRUN));
	if (f & SB_EXECUTOR_FEAT_DEFER_TASKRUN)
		assert_true(f & SB_EXECUTOR_FEAT_SINGLE_ISSUER);
	assert_int_equal(sb_executor_destroy(&ex, NULL), 0);

	sb_executor_config cfg = { 0, SB_EXECUTOR_PLAIN_SETUP | SB_EXECUTOR_NO_MSG_RING };
	assert_int_equal(sb_executor_init(&ex, &cfg), 0);
	assert_int_equal(sb_executor_features(&ex), 0);
	/* And it works: a sleep needs the ring's timeout and the loop. */
	sb_sleep s;
	sb_sleep_init(&s, SB_NSEC_PER_MSEC);
	assert_int_equal(sb_block_on(&ex, &s, &sb_sleep_ops), 0);
	assert_int_equal(sb_executor_destroy(&ex, NULL), 0);
}

/* Never-initialised joins and timeouts are bad input, not completed futures. */
static int join_poll_typed(void *f, const sb_waker *w)
{
	return sb_join_poll(f, w);
}

static int timeout_poll_typed(void *f, const sb_waker *w)
{
	return sb_timeout_poll(f, w);
}

static void zeroed_joins_and_timeouts_poll_to_einval(void **state)
{
	(void)state;
	sb_join j;
	assert_zeroed_future_is_refused(&j, sizeof j, &sb_join_ops, join_poll_typed);
	sb_timeout t;
	assert_zeroed_future_is_refused(&t, sizeof t, &sb_timeout_ops, timeout_poll_typed);
}

int main(void)
{
	exec_skip_without_io_uring("test_executor");
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup_executor, teardown_executor)
		T(spawned_task_runs_and_its_join_returns_the_result),
		T(yield_sends_the_task_to_the_back_of_the_run_queue),
		T(detached_task_is_released_when_it_finishes),
		T(cancelled_join_detaches_and_the_task_still_runs),
		T(task_spawned_from_a_task_is_awaited_through_its_join),
		T(spawning_a_task_that_is_still_referenced_fails_with_ebusy),
		T(block_on_drives_a_join_to_completion),
		T(block_on_a_sleep_returns_after_its_deadline),
		T(sleeps_complete_in_deadline_order),
		T(sleep_polled_outside_an_executor_fails_with_eperm),
		T(cancelled_sleep_leaves_the_timer_heap),
		T(timeout_returns_the_inner_result_when_it_completes_first),
		T(timeout_on_a_pending_acquire_completes_with_etimedout),
		T(timeout_during_a_partial_grant_hands_the_permits_on),
		T(wake_after_task_completion_is_harmless),
		T(run_block_on_and_destroy_inside_a_task_fail_with_ebusy),
		T(run_and_destroy_from_another_thread_fail_with_eperm),
		T(stop_makes_run_return_eintr_and_a_later_run_resumes),
#undef T
		cmocka_unit_test(wake_after_the_executor_is_destroyed_is_harmless),
		cmocka_unit_test(destroy_cancels_unfinished_tasks_and_returns_every_permit),
		cmocka_unit_test(spawn_on_a_destroyed_executor_fails_with_eshutdown),
		cmocka_unit_test(spawn_on_a_stopping_executor_fails_with_eshutdown),
		cmocka_unit_test(init_with_an_impossible_ring_size_fails_with_einval),
		cmocka_unit_test(init_reports_the_error_when_io_uring_is_blocked),
		cmocka_unit_test(features_report_the_setup_flags_in_use),
		cmocka_unit_test(zeroed_joins_and_timeouts_poll_to_einval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
