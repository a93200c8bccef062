/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduler: every placement decision of the executor (scheduler.h
 * lists them), the inbox other threads push onto, and the lists of
 * unfinished tasks.  See internal.h for the floating-task and lifetime rules.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <errno.h>

_Thread_local char sb__exec_thread_tag __attribute__((tls_model("initial-exec")));
_Thread_local sb_executor *sb__exec_current __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------ the inbox */

void sb__sched_take_inbox(sb_executor *ex)
{
	/* acquire: pairs with the pushers' release (seq_cst) CAS, so the tasks
	 * and their next links are visible. */
	sb_task *t = atomic_exchange_explicit(&ex->inbox, NULL, memory_order_acquire);
	task_queue_push_lifo(&ex->impl->runq, t);
}

/* Pushes onto ex's inbox, holding a reference on ex, which this consumes. */
static void push_remote_with_ref(sb_executor *ex, sb_task *t)
{
	/* relaxed: a first guess for the CAS. */
	sb_task *head = atomic_load_explicit(&ex->inbox, memory_order_relaxed);
	do {
		t->next = head;
		/* seq_cst: release publishes the task and its link to the owner's
		 * acquire exchange, and the push and our read of `sleeping` below
		 * form a Dekker pair with park() (store sleeping, read inbox).
		 * relaxed on failure: retry. */
	} while (!atomic_compare_exchange_weak_explicit(&ex->inbox, &head, t, memory_order_seq_cst,
							memory_order_relaxed));
	/* seq_cst (both): the other half of the Dekker pair; only the waker that
	 * flips 1 -> 0 rings, so one doorbell serves every wake of one sleep. */
	if (atomic_load_explicit(&ex->sleeping, memory_order_seq_cst) &&
	    atomic_exchange_explicit(&ex->sleeping, 0, memory_order_seq_cst))
		sb__ring_doorbell(exec_current(), ex);
	else
		exec_unref(ex);
}

static void push_remote(sb_executor *ex, sb_task *t)
{
	/* relaxed: we hold a reference on an unfinished task of ex, so destroy
	 * cannot finish before it receives this push; the push (a release) is
	 * sequenced after this increment, so once destroy has the task it also
	 * sees the increment. */
	atomic_fetch_add_explicit(&ex->refs, 1, memory_order_relaxed);
	push_remote_with_ref(ex, t);
}

/* ------------------------------------------------------------ wakes */

/*
 * A floating task we just made SCHEDULED (so no thread runs or queues it, and
 * we own its placement until the push): runs it on this thread when this is
 * a live loop of its group and no armed timer holds it where it is.
 */
static bool take_floating_task(sb_task *t)
{
	sb_executor *cur = exec_current();
	if (!cur || !cur->impl->takes_floating || cur->impl->group != t->group)
		return false;
	/* relaxed: our own loop's stop request, read on our own thread; a
	 * request we miss leaves the task in a queue that shutdown drains. */
	if (atomic_load_explicit(&cur->flags, memory_order_relaxed) & EX_STOP_REQ)
		return false;
	/* acquire: pairs with the release decrement of the thread that disarmed
	 * the timer, so its last touches of the sleep happen-before the poll we
	 * are about to run here.  An increment comes from a poll that our CAS on
	 * the state word already ordered before us. */
	if (atomic_load_explicit(&t->pins, memory_order_acquire) != 0)
		return false;
	t->exec = cur;
	t->owner = cur->owner;
	sched_push_local(cur, t);
	return true;
}

void sb__sched_wake_elsewhere(sb_task *t, uint64_t state)
{
	if (!(state & T_FLOATING) || !take_floating_task(t))
		push_remote(t->exec, t);
}

/* ------------------------------------------------------------ while polled */

/*
 * An armed timer keeps a floating task on this thread (the timer heap is
 * ours alone).  Pinned when it is armed, unpinned after the last touch of
 * the sleep by this thread.
 */
sb_task *sb__sched_pin_current(struct sb_executor_impl *impl)
{
	sb_task *t = impl->current;
	if (!t || !t->group)
		return NULL;
	/* relaxed: the poll we are in ends with a release CAS on the task's
	 * state, which any waker that could move the task acquires first. */
	atomic_fetch_add_explicit(&t->pins, 1, memory_order_relaxed);
	return t;
}

void sb__sched_unpin(sb_task *t)
{
	/* release: our last touches of the sleep happen-before the poll on the
	 * thread of a waker that sees 0 (its acquire load) and moves the task. */
	atomic_fetch_sub_explicit(&t->pins, 1, memory_order_release);
}

/* ------------------------------------------------------------ spawn */

static void float_link(struct sb_sched_group *g, sb_task *t)
{
	pthread_mutex_lock(&g->mu);
	task_list_push(&g->floating, t);
	pthread_mutex_unlock(&g->mu);
}

void sb__sched_float_unlink(struct sb_sched_group *g, sb_task *t)
{
	pthread_mutex_lock(&g->mu);
	task_list_remove(&g->floating, t);
	pthread_mutex_unlock(&g->mu);
}

static int spawn_remote(sb_executor *ex, sb_task *t)
{
	/* seq_cst (both): a Dekker pair with destroy, which sets STOPPING and
	 * then reads refs; either we see STOPPING or destroy waits for us. */
	atomic_fetch_add_explicit(&ex->refs, 1, memory_order_seq_cst);
	uint32_t f = atomic_load_explicit(&ex->flags, memory_order_seq_cst);
	if (!(f & EX_LIVE) || (f & EX_STOPPING)) {
		/* release: our reads of ex come before destroy sees refs drop. */
		atomic_fetch_sub_explicit(&ex->refs, 1, memory_order_release);
		return -ESHUTDOWN;
	}
	push_remote_with_ref(ex, t);
	return 0;
}

/* A floating task from the owner thread: its group's list has it. */
static int spawn_local_floating(sb_executor *ex, sb_task *t)
{
	/* relaxed: only the owner thread writes LIVE and STOPPING. */
	uint32_t f = atomic_load_explicit(&ex->flags, memory_order_relaxed);
	if (!(f & EX_LIVE) || (f & EX_STOPPING))
		return -ESHUTDOWN;
	sched_push_local(ex, t);
	return 0;
}

int sb__sched_spawn_elsewhere(sb_executor *ex, sb_task *t, struct sb_sched_group *floating)
{
	if (!floating)
		return spawn_remote(ex, t);
	/* Listed before it can run anywhere, so shutdown always finds it. */
	t->group = floating;
	float_link(floating, t);
	int rc = exec_is_owner(ex) ? spawn_local_floating(ex, t) : spawn_remote(ex, t);
	if (rc)
		sb__sched_float_unlink(floating, t);
	return rc;
}

size_t sb__sched_spawn_thread(sb_executor_group *g, size_t thread)
{
	if (thread != SB_GROUP_ANY && thread != SB_GROUP_FLOATING)
		return thread;
	/* relaxed: any spread will do; only the counter's atomicity matters. */
	return atomic_fetch_add_explicit(&g->next, 1, memory_order_relaxed) % g->n;
}

/* ------------------------------------------------------------ homes */

bool sb__sched_join_would_deadlock(const sb_task *t)
{
	/* A floating task's group, written by its spawn, never changes; the
	 * thread it is on may, so from any thread of its group we refuse. */
	if (t->group) {
		sb_executor *cur = exec_current();
		return cur && cur->impl && cur->impl->group == t->group;
	}
	/* t->owner, not t->exec: the executor may be gone once the task is done. */
	return t->owner == exec_this_thread();
}

void sb__sched_take_floating(sb_executor *ex, task_queue *out)
{
	sched_drain_inbox(ex);
	task_queue *runq = &ex->impl->runq;
	task_queue keep = { NULL, NULL };
	sb_task *t;
	while ((t = task_queue_pop(runq)))
		task_queue_push(t->group ? out : &keep, t);
	*runq = keep;
}
