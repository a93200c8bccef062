/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A group of N executor threads, one ring each, and the group's floating
 * tasks.
 *
 * Shutdown runs in three phases so that a floating task, which may sit on any
 * thread, is cancelled exactly once and never under a running loop:
 *   1. every loop is stopped, and each thread reports that and waits;
 *   2. the shutting-down thread, while they wait (the mutex orders their
 *      queues and timer heaps before us and our changes before them),
 *      cancels every unfinished floating task: those in run queues and
 *      inboxes, then the idle ones on the group's list, until the list is
 *      empty (a cancel may wake others, which land in inboxes);
 *   3. then each thread destroys its executor, cancelling its pinned tasks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

struct sb_group_thread {
	pthread_t thread;
	sb_executor ex;
	struct sb_group_impl *gi;
	size_t cancelled;
	int init_rc;
	bool started;
};

struct sb_group_impl {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t ready;              /* threads that finished sb_executor_init */
	size_t stopped;            /* threads whose loop has returned */
	bool destroy;              /* shutdown phase 3: threads may destroy */
	struct sb_sched_group sched; /* the unfinished floating tasks */
	bool has_cfg;
	sb_executor_config cfg;
	struct sb_group_thread *threads;
	size_t n;
};

static void *group_main(void *arg)
{
	struct sb_group_thread *gt = arg;
	struct sb_group_impl *gi = gt->gi;
	/* The ring is created on its own thread: SINGLE_ISSUER binds it here. */
	int rc = sb_executor_init(&gt->ex, gi->has_cfg ? &gi->cfg : NULL);
	pthread_mutex_lock(&gi->mu);
	gt->init_rc = rc;
	gi->ready++;
	pthread_cond_broadcast(&gi->cv);
	pthread_mutex_unlock(&gi->mu);
	if (rc == 0) {
		gt->ex.impl->group = &gi->sched;
		sb__exec_loop(&gt->ex, LOOP_UNTIL_STOPPED, NULL);
		pthread_mutex_lock(&gi->mu);
		gi->stopped++;
		pthread_cond_broadcast(&gi->cv);
		while (!gi->destroy)
			pthread_cond_wait(&gi->cv, &gi->mu);
		pthread_mutex_unlock(&gi->mu);
		sb_executor_destroy(&gt->ex, &gt->cancelled);
	}
	return NULL;
}

/* Cancels the floating tasks in ex's run queue and inbox, keeping the rest. */
static size_t cancel_queued_floating(sb_executor *ex)
{
	task_queue floating = { NULL, NULL };
	sb__sched_take_floating(ex, &floating);
	size_t n = 0;
	sb_task *t;
	while ((t = task_queue_pop(&floating)))
		n += sb__task_cancel(ex, t, true);
	return n;
}

/* Shutdown phase 2 (see the top of the file).  Every loop has stopped. */
static size_t cancel_floating(struct sb_group_impl *gi)
{
	size_t n = 0;
	for (;;) {
		for (size_t i = 0; i < gi->n; i++)
			if (gi->threads[i].started && gi->threads[i].init_rc == 0)
				n += cancel_queued_floating(&gi->threads[i].ex);
		/* Only this thread finishes tasks now, so the list changes only
		 * under our own cancels, each unlinking its own task. */
		pthread_mutex_lock(&gi->sched.mu);
		sb_task *t = gi->sched.floating.head;
		pthread_mutex_unlock(&gi->sched.mu);
		if (!t)
			return n;
		while (t) {
			sb_task *next = t->live_next;
			/* false: SCHEDULED, on its way to an inbox; the next round
			 * finds it there. */
			n += sb__task_cancel(t->exec, t, false);
			t = next;
		}
		sched_yield();
	}
}

static void group_free(struct sb_group_impl *gi)
{
	pthread_mutex_destroy(&gi->sched.mu);
	pthread_cond_destroy(&gi->cv);
	pthread_mutex_destroy(&gi->mu);
	free(gi->threads);
	free(gi);
}

/* Stops and joins every started thread; returns the cancelled total. */
static size_t group_stop(struct sb_group_impl *gi)
{
	size_t looping = 0;
	for (size_t i = 0; i < gi->n; i++)
		if (gi->threads[i].started && gi->threads[i].init_rc == 0) {
			sb_executor_stop(&gi->threads[i].ex);
			looping++;
		}
	pthread_mutex_lock(&gi->mu);
	while (gi->stopped < looping)
		pthread_cond_wait(&gi->cv, &gi->mu);
	pthread_mutex_unlock(&gi->mu);
	size_t total = cancel_floating(gi);
	pthread_mutex_lock(&gi->mu);
	gi->destroy = true;
	pthread_cond_broadcast(&gi->cv);
	pthread_mutex_unlock(&gi->mu);
	for (size_t i = 0; i < gi->n; i++) {
		if (!gi->threads[i].started)
			continue;
		pthread_join(gi->threads[i].thread, NULL);
		total += gi->threads[i].cancelled;
	}
	return total;
}

static struct sb_group_impl *group_alloc(size_t n, const sb_executor_config *cfg)
{
	struct sb_group_impl *gi = calloc(1, sizeof *gi);
	if (!gi)
		return NULL;
	gi->threads = calloc(n, sizeof *gi->threads);
	if (!gi->threads) {
		free(gi);
		return NULL;
	}
	gi->n = n;
	if (cfg) {
		gi->has_cfg = true;
		gi->cfg = *cfg;
	}
	pthread_mutex_init(&gi->mu, NULL);
	pthread_cond_init(&gi->cv, NULL);
	pthread_mutex_init(&gi->sched.mu, NULL);
	return gi;
}

/* Starts the threads and waits until each has its executor: 0 or the first error. */
static int group_start(struct sb_group_impl *gi)
{
	int err = 0;
	size_t started = 0;
	for (size_t i = 0; i < gi->n; i++) {
		gi->threads[i].gi = gi;
		int rc = pthread_create(&gi->threads[i].thread, NULL, group_main, &gi->threads[i]);
		if (rc) {
			err = -rc;
			break;
		}
		gi->threads[i].started = true;
		started++;
	}
	pthread_mutex_lock(&gi->mu);
	while (gi->ready < started)
		pthread_cond_wait(&gi->cv, &gi->mu);
	pthread_mutex_unlock(&gi->mu);
	for (size_t i = 0; i < started && !err; i++)
		err = gi->threads[i].init_rc;
	return err;
}

int sb_executor_group_init(sb_executor_group *g, size_t n, const sb_executor_config *cfg)
{
	g->impl = NULL;
	g->n = 0;
	/* atomic_init (plain stores): g is not shared with any thread yet. */
	atomic_init(&g->next, 0);
	atomic_init(&g->users, 0);
	atomic_init(&g->closed, 1);
	if (n == 0)
		return -EINVAL;
	struct sb_group_impl *gi = group_alloc(n, cfg);
	if (!gi)
		return -ENOMEM;
	int err = group_start(gi);
	if (err) {
		group_stop(gi);
		group_free(gi);
		return err;
	}
	g->impl = gi;
	g->n = n;
	/* release: impl and n are visible to a spawner whose seq_cst load sees 0. */
	atomic_store_explicit(&g->closed, 0, memory_order_release);
	return 0;
}

sb_executor *sb_executor_group_executor(sb_executor_group *g, size_t i)
{
	if (!g->impl || i >= g->n)
		return NULL;
	return &g->impl->threads[i].ex;
}

int sb_executor_group_spawn(sb_executor_group *g, size_t thread, sb_task *t, sb_join *join)
{
	/* seq_cst (both): Dekker with shutdown, which sets closed and then reads
	 * users: either we see closed or shutdown waits for us. */
	atomic_fetch_add_explicit(&g->users, 1, memory_order_seq_cst);
	int rc;
	if (atomic_load_explicit(&g->closed, memory_order_seq_cst)) {
		rc = -ESHUTDOWN;
	} else {
		size_t i = sb__sched_spawn_thread(g, thread);
		if (i >= g->n)
			rc = -EINVAL;
		else
			rc = sb__spawn(&g->impl->threads[i].ex, t, join,
				       thread == SB_GROUP_FLOATING ? &g->impl->sched : NULL);
	}
	/* release: our reads of the group come before shutdown frees it. */
	atomic_fetch_sub_explicit(&g->users, 1, memory_order_release);
	return rc;
}

int sb_executor_group_shutdown(sb_executor_group *g, size_t *cancelled)
{
	if (cancelled)
		*cancelled = 0;
	/* seq_cst: the Dekker pair with group_spawn (set closed, then read users). */
	if (atomic_exchange_explicit(&g->closed, 1, memory_order_seq_cst))
		return -ESHUTDOWN;
	/* seq_cst: the read half of that pair; acquire orders spawners' reads
	 * before we free the group. */
	while (atomic_load_explicit(&g->users, memory_order_seq_cst) != 0)
		sched_yield();
	struct sb_group_impl *gi = g->impl;
	size_t total = group_stop(gi);
	group_free(gi);
	g->impl = NULL;
	if (cancelled)
		*cancelled = total;
	return 0;
}
