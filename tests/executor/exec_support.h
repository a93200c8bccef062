/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared scaffolding of the executor tests: skipping when io_uring cannot
 * be used on this machine, the bound on every blocking wait, waiting for a
 * task's last reference, a group with its executors at hand, and the
 * holder task the shutdown tests cancel.
 */
#ifndef SYNCBAND_TEST_EXEC_SUPPORT_H
#define SYNCBAND_TEST_EXEC_SUPPORT_H

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syncband/executor.h>
#include <syncband/semaphore.h>

/* Bounds every blocking wait (and every timer) of the tests. */
#define BLOCKING_WAIT (30 * SB_NSEC_PER_SEC)

/*
 * Exits with 77 (ctest: skipped), saying why, when this machine cannot
 * create an io_uring (disabled by sysctl or seccomp, no kernel support,
 * ENOMEM under a locked-memory limit).
 */
static inline void exec_skip_without_io_uring(const char *program)
{
	sb_executor ex;
	int rc = sb_executor_init(&ex, NULL);
	if (rc) {
		fprintf(stderr, "SKIP %s: cannot create an io_uring executor: %s (%d)\n", program,
			strerror(-rc), rc);
		exit(77);
	}
	sb_executor_destroy(&ex, NULL);
}

/*
 * Waits until nothing references `t` any more: a wake's drop may still be on
 * its way on an executor thread after a join completed.  A condition, not a
 * pause: the test's watchdog bounds it.
 */
static inline void wait_released(const sb_task *t)
{
	while (!sb_task_is_released(t))
		sched_yield();
}

/* ------------------------------------------------------------ group view */

#define MAX_THREADS 4

/* A group and its executors, for finding which thread a task ran on. */
typedef struct group_view {
	sb_executor_group g;
	size_t n;
	sb_executor *ex[MAX_THREADS];
} group_view;

/* Starts a group of `n` threads with `cfg`; 0 or the init error. */
static inline int group_view_start(group_view *v, size_t n, const sb_executor_config *cfg)
{
	if (n > MAX_THREADS)
		return -EINVAL;
	int rc = sb_executor_group_init(&v->g, n, cfg);
	if (rc)
		return rc;
	v->n = n;
	for (size_t i = 0; i < n; i++)
		v->ex[i] = sb_executor_group_executor(&v->g, i);
	return 0;
}

/* The index of `ex` in the group, or SIZE_MAX for NULL or a stranger. */
static inline size_t view_index(const group_view *v, const sb_executor *ex)
{
	for (size_t i = 0; i < v->n; i++)
		if (ex && v->ex[i] == ex)
			return i;
	return SIZE_MAX;
}

/* ------------------------------------------------------------ holder task */

/*
 * Takes a permit of `sem`, then waits forever on `gate` (each wait under a
 * BLOCKING_WAIT timeout when `timed`, so a timer is armed), releasing
 * `started` (when set) once it waits.  The tests never open the gate: a
 * shutdown cancels the task, and its cancel hands the permit back.
 */
typedef struct holder_task {
	sb_task task;
	sb_semaphore *sem;
	sb_semaphore *gate;
	sb_semaphore *started;   /* may be NULL */
	bool timed;
	int stage;               /* 0: not started, 1: acquiring sem, 2: holding, waiting on gate */
	bool signalled;
	sb_semaphore_acquire acq;
	sb_timeout timeout;
} holder_task;

/* Releases `started` the first time the task waits. */
static inline void holder_signal_once(holder_task *h)
{
	if (h->started && !h->signalled) {
		h->signalled = true;
		sb_semaphore_release(h->started, 1);
	}
}

static inline int holder_wait(holder_task *h, sb_semaphore *s, bool fresh, const sb_waker *w)
{
	if (fresh) {
		sb_semaphore_acquire_init(&h->acq, s, 1);
		if (h->timed)
			sb_timeout_init(&h->timeout, &h->acq, &sb_semaphore_acquire_ops,
					BLOCKING_WAIT);
	}
	if (h->timed)
		return sb_timeout_poll(&h->timeout, w);
	return sb_semaphore_acquire_poll(&h->acq, w);
}

/* The holder's poll, for tasks that hold among other things. */
static inline int holder_step(holder_task *h, const sb_waker *w)
{
	int r;
	if (h->stage <= 1) {
		r = holder_wait(h, h->sem, h->stage == 0, w);
		h->stage = 1;
		if (r < 0)
			return r;
		if (r == SB_PENDING) {
			holder_signal_once(h);
			return r;
		}
		h->stage = 2;
		r = holder_wait(h, h->gate, true, w);
	} else {
		r = holder_wait(h, h->gate, false, w);
	}
	if (r != SB_PENDING) {
		sb_semaphore_release(h->sem, 1); /* the gate opened, or its wait failed */
		return r;
	}
	holder_signal_once(h);
	return SB_PENDING;
}

static inline void holder_cancel_step(holder_task *h)
{
	if (h->stage == 0)
		return;
	if (h->timed)
		sb_timeout_cancel(&h->timeout);
	else
		sb_semaphore_acquire_cancel(&h->acq);
	if (h->stage == 2)
		sb_semaphore_release(h->sem, 1); /* the permit this task held */
}

static inline int holder_poll(sb_task *t, const sb_waker *w)
{
	return holder_step(SB_CONTAINER_OF(t, holder_task, task), w);
}

static inline void holder_cancel(sb_task *t)
{
	holder_cancel_step(SB_CONTAINER_OF(t, holder_task, task));
}

static inline void holder_init(holder_task *h, sb_semaphore *sem, sb_semaphore *gate,
			       sb_semaphore *started)
{
	memset(h, 0, sizeof *h);
	sb_task_init(&h->task, holder_poll, holder_cancel, NULL);
	h->sem = sem;
	h->gate = gate;
	h->started = started;
}

#endif
