/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every primitive driven by real tasks on a group of executor threads:
 * a mutex-protected counter, a condvar producer/consumer, event fan-out.
 * (The semaphore limiter lives in test_executor_threads.c.)
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
#include <stdatomic.h>

#include <syncband/condvar.h>
#include <syncband/event.h>
#include <syncband/executor.h>
#include <syncband/mutex.h>
#include <syncband/semaphore.h>

#include "exec_support.h"
#include "watchdog.h"

#define THREADS 4

/* ------------------------------------------------------------ mutex */

struct counter {
	sb_mutex m;
	long value; /* plain: the mutex is the only thing ordering it */
};

typedef struct increment_task {
	sb_task task;
	struct counter *c;
	sb_mutex_lock lock;
	sb_yield y;
	int left;
	int stage; /* 0: idle, 1: locking, 2: holding (yielding inside) */
} increment_task;

static int increment_poll(sb_task *t, const sb_waker *w)
{
	increment_task *it = SB_CONTAINER_OF(t, increment_task, task);
	for (;;) {
		if (it->stage == 0) {
			if (it->left == 0)
				return 0;
			sb_mutex_lock_init(&it->lock, &it->c->m);
			it->stage = 1;
		}
		if (it->stage == 1) {
			int r = sb_mutex_lock_poll(&it->lock, w);
			if (r)
				return r;
			it->stage = 2;
			sb_yield_init(&it->y);
		}
		long v = it->c->value;
		/* Every 8th increment yields while holding the lock. */
		if (it->left % 8 == 0 && sb_yield_poll(&it->y, w) == SB_PENDING)
			return SB_PENDING;
		it->c->value = v + 1;
		sb_mutex_unlock(&it->c->m);
		it->stage = 0;
		it->left--;
	}
}

static void increment_cancel(sb_task *t)
{
	increment_task *it = SB_CONTAINER_OF(t, increment_task, task);
	if (it->stage == 1)
		sb_mutex_lock_cancel(&it->lock);
	else if (it->stage == 2)
		sb_mutex_unlock(&it->c->m);
}

static void mutex_protected_counter_is_exact_across_threads(void **state)
{
	(void)state;
	enum { TASKS = 32, EACH = 200 };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "mutex-protected counter across executor threads");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, THREADS, NULL), 0);
	struct counter c = { SB_MUTEX_INIT, 0 };
	static increment_task tasks[TASKS];
	sb_join joins[TASKS];
	for (int i = 0; i < TASKS; i++) {
		memset(&tasks[i], 0, sizeof tasks[i]);
		sb_task_init(&tasks[i].task, increment_poll, increment_cancel, NULL);
		tasks[i].c = &c;
		tasks[i].left = EACH;
		assert_int_equal(sb_executor_group_spawn(&g, SB_GROUP_ANY, &tasks[i].task, &joins[i]), 0);
	}
	for (int i = 0; i < TASKS; i++)
		assert_int_equal(sb_join_wait(&joins[i]), 0);
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), 0);
	/* The last unlock happened-before our join (through the join's release). */
	assert_int_equal(sb_mutex_lock_blocking(&c.m, BLOCKING_WAIT), 0);
	assert_int_equal(c.value, TASKS * EACH);
	assert_int_equal(sb_mutex_unlock(&c.m), 0);
	assert_int_equal(sb_mutex_destroy(&c.m), 0);
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ condvar */

#define CAP 4

struct bounded {
	sb_mutex m;
	sb_condvar not_empty;
	sb_condvar not_full;
	long items[CAP];
	int head, count;
};

typedef struct pc_task {
	sb_task task;
	struct bounded *b;
	int producer;
	int left;
	long next;     /* producer: next value to push */
	long sum;      /* consumer: sum of values popped */
	int stage;     /* 0: idle, 1: locking, 2: holding, 3: waiting on a condvar */
	sb_mutex_lock lock;
	sb_condvar_wait wait;
} pc_task;

static int pc_poll(sb_task *t, const sb_waker *w)
{
	pc_task *p = SB_CONTAINER_OF(t, pc_task, task);
	struct bounded *b = p->b;
	for (;;) {
		int r;
		switch (p->stage) {
		case 0:
			if (p->left == 0)
				return 0;
			sb_mutex_lock_init(&p->lock, &b->m);
			p->stage = 1;
			/* fallthrough */
		case 1:
			r = sb_mutex_lock_poll(&p->lock, w);
			if (r)
				return r;
			p->stage = 2;
			break;
		case 3:
			r = sb_condvar_wait_poll(&p->wait, w);
			if (r)
				return r;
			p->stage = 2;
			break;
		}
		/* stage 2: holding the mutex */
		if (p->producer ? b->count == CAP : b->count == 0) {
			sb_condvar_wait_init(&p->wait, p->producer ? &b->not_full : &b->not_empty, &b->m);
			p->stage = 3;
			continue;
		}
		if (p->producer) {
			b->items[(b->head + b->count) % CAP] = p->next++;
			b->count++;
			sb_condvar_notify_one(&b->not_empty);
		} else {
			p->sum += b->items[b->head];
			b->head = (b->head + 1) % CAP;
			b->count--;
			sb_condvar_notify_one(&b->not_full);
		}
		sb_mutex_unlock(&b->m);
		p->left--;
		p->stage = 0;
	}
}

static void pc_cancel(sb_task *t)
{
	pc_task *p = SB_CONTAINER_OF(t, pc_task, task);
	if (p->stage == 1)
		sb_mutex_lock_cancel(&p->lock);
	else if (p->stage == 3)
		sb_condvar_wait_cancel(&p->wait);
}

static void condvar_producers_and_consumers_move_every_item_across_threads(void **state)
{
	(void)state;
	enum { PAIRS = 3, EACH = 300 };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "condvar producer/consumer across executor threads");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, THREADS, NULL), 0);
	struct bounded b;
	memset(&b, 0, sizeof b);
	sb_mutex_init(&b.m);
	sb_condvar_init(&b.not_empty);
	sb_condvar_init(&b.not_full);
	static pc_task tasks[2 * PAIRS];
	sb_join joins[2 * PAIRS];
	for (int i = 0; i < 2 * PAIRS; i++) {
		memset(&tasks[i], 0, sizeof tasks[i]);
		sb_task_init(&tasks[i].task, pc_poll, pc_cancel, NULL);
		tasks[i].b = &b;
		tasks[i].producer = i < PAIRS;
		tasks[i].left = EACH;
		tasks[i].next = (long)i * 1000000;
		assert_int_equal(sb_executor_group_spawn(&g, SB_GROUP_ANY, &tasks[i].task, &joins[i]), 0);
	}
	for (int i = 0; i < 2 * PAIRS; i++)
		assert_int_equal(sb_join_wait(&joins[i]), 0);
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), 0);
	long expect = 0, got = 0;
	for (int i = 0; i < PAIRS; i++)
		for (long k = 0; k < EACH; k++)
			expect += (long)i * 1000000 + k;
	for (int i = PAIRS; i < 2 * PAIRS; i++)
		got += tasks[i].sum;
	assert_int_equal(got, expect);
	assert_int_equal(b.count, 0);
	assert_int_equal(sb_condvar_destroy(&b.not_empty), 0);
	assert_int_equal(sb_condvar_destroy(&b.not_full), 0);
	assert_int_equal(sb_mutex_destroy(&b.m), 0);
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ events */

typedef struct event_task {
	sb_task task;
	sb_event *manual;
	sb_auto_event *automatic;
	sb_semaphore *started;
	sb_event_wait mw;
	sb_auto_event_wait aw;
	int signalled;
} event_task;

static int event_poll(sb_task *t, const sb_waker *w)
{
	event_task *e = SB_CONTAINER_OF(t, event_task, task);
	int r = e->manual ? sb_event_wait_poll(&e->mw, w) : sb_auto_event_wait_poll(&e->aw, w);
	if (r == SB_PENDING && !e->signalled) {
		e->signalled = 1;
		sb_semaphore_release(e->started, 1); /* registered: a set from now on is ours */
	}
	return r;
}

static void event_cancel(sb_task *t)
{
	event_task *e = SB_CONTAINER_OF(t, event_task, task);
	if (e->manual)
		sb_event_wait_cancel(&e->mw);
	else
		sb_auto_event_wait_cancel(&e->aw);
}

static void event_set_releases_waiters_on_every_thread(void **state)
{
	(void)state;
	enum { TASKS = 32 };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "event fan-out across executor threads");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, THREADS, NULL), 0);
	sb_event ev = SB_EVENT_INIT(false);
	sb_semaphore started = SB_SEMAPHORE_INIT(0);
	static event_task tasks[TASKS];
	sb_join joins[TASKS];
	for (int i = 0; i < TASKS; i++) {
		memset(&tasks[i], 0, sizeof tasks[i]);
		sb_task_init(&tasks[i].task, event_poll, event_cancel, NULL);
		tasks[i].manual = &ev;
		tasks[i].started = &started;
		sb_event_wait_init(&tasks[i].mw, &ev);
		assert_int_equal(sb_executor_group_spawn(&g, SB_GROUP_ANY, &tasks[i].task, &joins[i]), 0);
	}
	assert_int_equal(sb_semaphore_acquire_blocking(&started, TASKS, BLOCKING_WAIT), 0);
	sb_event_set(&ev);
	for (int i = 0; i < TASKS; i++)
		assert_int_equal(sb_join_wait(&joins[i]), 0);
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), 0);
	assert_int_equal(sb_event_destroy(&ev), 0);
	sb_watchdog_stop(&wd);
}

static void auto_event_sets_each_release_exactly_one_waiter_across_threads(void **state)
{
	(void)state;
	enum { TASKS = 16 };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "auto-reset event across executor threads");
	sb_executor_group g;
	assert_int_equal(sb_executor_group_init(&g, THREADS, NULL), 0);
	sb_auto_event ev = SB_AUTO_EVENT_INIT(false);
	sb_semaphore started = SB_SEMAPHORE_INIT(0);
	static event_task tasks[TASKS];
	sb_join joins[TASKS];
	for (int i = 0; i < TASKS; i++) {
		memset(&tasks[i], 0, sizeof tasks[i]);
		sb_task_init(&tasks[i].task, event_poll, event_cancel, NULL);
		tasks[i].automatic = &ev;
		tasks[i].started = &started;
		sb_auto_event_wait_init(&tasks[i].aw, &ev);
		assert_int_equal(sb_executor_group_spawn(&g, SB_GROUP_ANY, &tasks[i].task, &joins[i]), 0);
	}
	assert_int_equal(sb_semaphore_acquire_blocking(&started, TASKS, BLOCKING_WAIT), 0);
	for (int i = 0; i < TASKS; i++)
		sb_auto_event_set(&ev); /* each hands its signal to one queued wait */
	for (int i = 0; i < TASKS; i++)
		assert_int_equal(sb_join_wait(&joins[i]), 0);
	assert_int_equal(sb_auto_event_try_wait(&ev), -EAGAIN); /* none left over */
	assert_int_equal(sb_executor_group_shutdown(&g, NULL), 0);
	assert_int_equal(sb_auto_event_destroy(&ev), 0);
	sb_watchdog_stop(&wd);
}

int main(void)
{
	exec_skip_without_io_uring("test_executor_primitives");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mutex_protected_counter_is_exact_across_threads),
		cmocka_unit_test(condvar_producers_and_consumers_move_every_item_across_threads),
		cmocka_unit_test(event_set_releases_waiters_on_every_thread),
		cmocka_unit_test(auto_event_sets_each_release_exactly_one_waiter_across_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
