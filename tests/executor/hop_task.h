/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The floating-task tests' scaffolding: the relay (a one-shot pinned task
 * that wakes a waiting task from where the test wants) and the hop task
 * (it waits on its auto-reset event once per stage and records where each
 * stage registered and completed), with the runners that spawn, join and
 * check a batch of them.  Needs cmocka, exec_suites.h and exec_support.h.
 *
 * No test sleeps to order anything.  A task is known to be idle when a task
 * it queued behind its own poll, on its own executor, runs: one executor
 * polls its tasks one after another, so by then that poll has returned
 * SB_PENDING.  Such a relay then wakes it from wherever the test wants: the
 * next thread of the group, or the test's own thread.
 */
#ifndef SYNCBAND_TEST_HOP_TASK_H
#define SYNCBAND_TEST_HOP_TASK_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <syncband/event.h>
#include <syncband/executor.h>
#include <syncband/semaphore.h>

#include "exec_suites.h"
#include "exec_support.h"

/* Starts the group under test (its executors in v->ex). */
static void view_init(group_view *v, size_t n)
{
	assert_int_equal(group_view_start(v, n, &suite_cfg), 0);
}

/* ------------------------------------------------------------ relay */

/*
 * Runs once, pinned: spawns `next` onto the group thread after its own, or
 * sets `ev`, or releases `sem`.
 */
typedef struct relay_task {
	sb_task task;
	group_view *v;
	struct relay_task *next;
	sb_auto_event *ev;
	sb_semaphore *sem;
	sb_executor *ran_on;
} relay_task;

static int relay_poll(sb_task *t, const sb_waker *w)
{
	(void)w;
	relay_task *r = SB_CONTAINER_OF(t, relay_task, task);
	r->ran_on = sb_executor_current();
	if (r->next) {
		size_t i = view_index(r->v, r->ran_on);
		if (i == SIZE_MAX)
			return -EPROTO;
		return sb_executor_group_spawn(&r->v->g, (i + 1) % r->v->n, &r->next->task, NULL);
	}
	if (r->ev)
		sb_auto_event_set(r->ev);
	if (r->sem)
		return sb_semaphore_release(r->sem, 1);
	return 0;
}

static void relay_init(relay_task *r, group_view *v, relay_task *next, sb_auto_event *ev,
		       sb_semaphore *sem)
{
	memset(r, 0, sizeof *r);
	sb_task_init(&r->task, relay_poll, NULL, NULL);
	r->v = v, r->next = next, r->ev = ev, r->sem = sem;
}

/* ------------------------------------------------------------ hop task */

/* Who wakes a stage's wait, once the task is idle. */
enum wake_from {
	FROM_NEXT_THREAD,  /* a pinned task on the group thread after the one it waits on */
	FROM_PLAIN_THREAD, /* the test's thread: hop.idle says when */
	FROM_ELSEWHERE,    /* the test arranges it */
};

/* What the task has armed while it waits. */
enum wait_shape {
	BARE,           /* only the event wait */
	UNDER_TIMEOUT,  /* the event wait inside an sb_timeout */
	BESIDE_A_SLEEP, /* the event wait and an armed sb_sleep of its own */
};

typedef struct hop_stage {
	enum wake_from from;
	enum wait_shape shape;
} hop_stage;

#define MAX_STAGES 8

/*
 * Waits on its auto-reset event once per stage, recording the executor each
 * stage registered on and the one whose poll saw it complete.
 */
typedef struct hop_task {
	sb_task task;
	group_view *v;
	const hop_stage *stages;
	int nstages;
	sb_auto_event ev;
	sb_semaphore idle; /* FROM_PLAIN_THREAD: released once the task is idle */
	int stage;
	int registered;
	int polls;
	sb_auto_event_wait wait;
	sb_timeout timeout;
	sb_sleep sleep;
	relay_task relay[MAX_STAGES][2];
	sb_executor *waited_on[MAX_STAGES];
	sb_executor *woke_on[MAX_STAGES];
} hop_task;

/* Cancels what the current stage registered. */
static void hop_unregister(hop_task *h)
{
	if (!h->registered)
		return;
	const hop_stage *st = &h->stages[h->stage];
	if (st->shape == UNDER_TIMEOUT)
		sb_timeout_cancel(&h->timeout);
	else
		sb_auto_event_wait_cancel(&h->wait);
	if (st->shape == BESIDE_A_SLEEP)
		sb_sleep_cancel(&h->sleep);
	h->registered = 0;
}

/* Queues the stage's waker behind this poll, on this thread. */
static int hop_arrange_wake(hop_task *h, sb_executor *cur)
{
	relay_task *q = &h->relay[h->stage][0], *p = &h->relay[h->stage][1];
	switch (h->stages[h->stage].from) {
	case FROM_NEXT_THREAD:
		relay_init(p, h->v, NULL, &h->ev, NULL);
		relay_init(q, h->v, p, NULL, NULL);
		break;
	case FROM_PLAIN_THREAD:
		relay_init(q, h->v, NULL, NULL, &h->idle);
		break;
	default:
		return 0;
	}
	return sb_spawn(cur, &q->task, NULL);
}

static int hop_poll(sb_task *t, const sb_waker *w)
{
	hop_task *h = SB_CONTAINER_OF(t, hop_task, task);
	sb_executor *cur = sb_executor_current();
	h->polls++;
	while (h->stage < h->nstages) {
		const hop_stage *st = &h->stages[h->stage];
		int r;
		if (!h->registered) {
			sb_auto_event_wait_init(&h->wait, &h->ev);
			if (st->shape == UNDER_TIMEOUT)
				sb_timeout_init(&h->timeout, &h->wait, &sb_auto_event_wait_ops,
						BLOCKING_WAIT);
			if (st->shape == BESIDE_A_SLEEP) {
				sb_sleep_init(&h->sleep, BLOCKING_WAIT);
				r = sb_sleep_poll(&h->sleep, w);
				if (r != SB_PENDING)
					return r ? r : -EPROTO;
			}
		}
		if (st->shape == UNDER_TIMEOUT)
			r = sb_timeout_poll(&h->timeout, w);
		else
			r = sb_auto_event_wait_poll(&h->wait, w);
		if (r == SB_PENDING) {
			if (!h->registered) {
				h->registered = 1;
				h->waited_on[h->stage] = cur;
				int rc = hop_arrange_wake(h, cur);
				if (rc) {
					hop_unregister(h);
					return rc;
				}
			}
			return SB_PENDING;
		}
		if (st->shape == BESIDE_A_SLEEP)
			sb_sleep_cancel(&h->sleep);
		h->registered = 0;
		if (r)
			return r;
		h->woke_on[h->stage] = cur;
		h->stage++;
	}
	return 0;
}

static void hop_cancel(sb_task *t)
{
	hop_unregister(SB_CONTAINER_OF(t, hop_task, task));
}

static void hop_init(hop_task *h, group_view *v, const hop_stage *stages, int nstages)
{
	assert_true(nstages <= MAX_STAGES);
	memset(h, 0, sizeof *h);
	sb_task_init(&h->task, hop_poll, hop_cancel, NULL);
	h->v = v, h->stages = stages, h->nstages = nstages;
	sb_auto_event_init(&h->ev, false);
	sb_semaphore_init(&h->idle, 0);
}

/* For spawning the same (released) task again: the record only, no sb_task_init. */
static void hop_reset(hop_task *h)
{
	h->stage = 0, h->registered = 0, h->polls = 0;
	memset(h->waited_on, 0, sizeof h->waited_on);
	memset(h->woke_on, 0, sizeof h->woke_on);
}

/* The test's side of every FROM_PLAIN_THREAD stage `k`: wake once idle. */
static void hop_wake_from_here(hop_task *h, int k)
{
	assert_int_equal(h->stages[k].from, FROM_PLAIN_THREAD);
	assert_int_equal(sb_semaphore_acquire_blocking(&h->idle, 1, BLOCKING_WAIT), 0);
	sb_auto_event_set(&h->ev);
}

/*
 * After the join: every stage completed on the thread it waited on, except
 * that a floating task woken from the next group thread with no timer armed
 * completed on that (the waker's) thread.  Each stage registered where the
 * previous one completed, and the task was polled exactly once per wake.
 */
static void hop_check(const hop_task *h, bool floating)
{
	const group_view *v = h->v;
	assert_int_equal(h->stage, h->nstages);
	assert_int_equal(h->polls, h->nstages + 1);
	for (int k = 0; k < h->nstages; k++) {
		const hop_stage *st = &h->stages[k];
		size_t at = view_index(v, h->waited_on[k]);
		assert_true(at < v->n);
		assert_true(view_index(v, h->woke_on[k]) < v->n);
		if (k > 0)
			assert_ptr_equal(h->waited_on[k], h->woke_on[k - 1]);
		if (st->from == FROM_ELSEWHERE)
			continue;
		sb_executor *waker_ex = v->ex[(at + 1) % v->n];
		assert_ptr_equal(h->relay[k][0].ran_on, h->waited_on[k]);
		if (st->from == FROM_NEXT_THREAD)
			assert_ptr_equal(h->relay[k][1].ran_on, waker_ex);
		bool moves = floating && st->from == FROM_NEXT_THREAD && st->shape == BARE;
		assert_ptr_equal(h->woke_on[k], moves ? waker_ex : h->waited_on[k]);
	}
}

static void hop_wait_released(const hop_task *h)
{
	wait_released(&h->task);
	for (int k = 0; k < h->nstages; k++) {
		if (h->stages[k].from == FROM_ELSEWHERE)
			continue;
		wait_released(&h->relay[k][0].task);
		if (h->stages[k].from == FROM_NEXT_THREAD)
			wait_released(&h->relay[k][1].task);
	}
}

static void hop_destroy(hop_task *h)
{
	assert_int_equal(sb_auto_event_destroy(&h->ev), 0);
	assert_int_equal(sb_semaphore_available(&h->idle), 0);
	assert_int_equal(sb_semaphore_destroy(&h->idle), 0);
}

/* Spawns every task, joins each, checks each; shuts the group down. */
static void hop_run_all(group_view *v, hop_task *h, int tasks, const size_t *where, bool floating)
{
	sb_join *j = calloc((size_t)tasks, sizeof *j);
	assert_non_null(j);
	for (int i = 0; i < tasks; i++)
		assert_int_equal(sb_executor_group_spawn(&v->g, where[i], &h[i].task, &j[i]), 0);
	for (int k = 0; k < h[0].nstages; k++)
		if (h[0].stages[k].from == FROM_PLAIN_THREAD)
			for (int i = 0; i < tasks; i++)
				hop_wake_from_here(&h[i], k);
	for (int i = 0; i < tasks; i++)
		assert_int_equal(sb_join_wait(&j[i]), 0);
	for (int i = 0; i < tasks; i++)
		hop_check(&h[i], floating);
	size_t cancelled = 99;
	assert_int_equal(sb_executor_group_shutdown(&v->g, &cancelled), 0);
	assert_int_equal(cancelled, 0);
	for (int i = 0; i < tasks; i++) {
		assert_true(sb_task_is_released(&h[i].task));
		hop_wait_released(&h[i]); /* after shutdown: already true */
		hop_destroy(&h[i]);
	}
	free(j);
}

/* Runs `tasks` floating hop tasks through `stages` on a group of `threads`. */
static void hop_run_floating(group_view *v, size_t threads, hop_task *h, int tasks,
			     const hop_stage *stages, int nstages)
{
	size_t *where = calloc((size_t)tasks, sizeof *where);
	assert_non_null(where);
	view_init(v, threads);
	for (int i = 0; i < tasks; i++) {
		hop_init(&h[i], v, stages, nstages);
		where[i] = SB_GROUP_FLOATING;
	}
	hop_run_all(v, h, tasks, where, true);
	free(where);
}

#endif
