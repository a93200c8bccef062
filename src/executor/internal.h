/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the io_uring executor shared by its source files.
 *
 * The modules, each calling only those below it (no cycles):
 *
 *   group.c      executor groups: threads, the floating tasks' shutdown
 *   executor.c   the loop, its sleep protocol, init / run / stop / destroy
 *   futures.c    yield, the ready-made ops, sb_join_wait
 *   timer.c      sleeps on the timer heap (timer_heap.h), sb_timeout
 *   task.c       the task state machine (spawn, wake, run, complete,
 *                cancel), its waker, the join future
 *   scheduler.c  where a task goes: every placement decision (scheduler.h)
 *   ring.c       the io_uring: setup, doorbells, the kernel timeout, CQEs
 *   queue.h      the run queue and task lists, for all of the above
 *
 * Task state word (sb_task.state, one atomic uint64_t):
 *
 *   bit 0  T_SCHEDULED  in a run queue or the inbox, or about to be pushed
 *                       there; the queue owns one reference
 *   bit 1  T_RUNNING    being polled (or cancelled) by the owner thread
 *   bit 2  T_NOTIFIED   woken while running: requeue after the poll
 *   bit 3  T_DONE       finished; result is published; never scheduled again
 *   bit 4  T_CANCELLED  finished by cancellation
 *   bit 5  T_JOIN_WAKER join_waker holds a clone that the joiner set up
 *   bit 6  T_COMPLETING the owner took the join waker and is about to set
 *                       T_DONE; the joiner may not register meanwhile
 *   bit 7  T_FLOATING   spawned with SB_GROUP_FLOATING: may move (see below)
 *   bits 8-             reference count
 *
 * Completion is two CASes: the first takes the join waker (setting
 * T_COMPLETING), the second sets T_DONE and drops the owner's references.
 * The second is the owner's last touch of the task, so a join that has seen
 * T_DONE knows the executor is done with the task's memory.
 *
 * Because the count and the flags share a word, a same-thread wake is one
 * CAS on this word and a plain push onto the owner's run queue: no other
 * atomic is touched.
 *
 * References: the list of unfinished tasks a task is on holds one (from
 * spawn to completion), a run queue / the inbox holds one while T_SCHEDULED
 * (it becomes the poll's reference while T_RUNNING), a join future holds
 * one, and each waker clone holds one.  The last one to go calls `release`.
 *
 * Executor lifetime (sb_executor.refs): a thread other than the owner that
 * pushes onto the inbox holds a reference on the executor from before the
 * push until after the doorbell, so destroy (which waits for refs to reach 0
 * after every unfinished task has come home) cannot close the ring or return
 * under it.  A wake of a finished task touches only the task.
 *
 * Floating tasks (scheduler.c): the waker that takes an idle floating task
 * to SCHEDULED owns it until the push, so it may also choose where it goes:
 * onto its own executor's local queue (rewriting t->exec and t->owner before
 * the push) when it runs on a thread of the same group whose loop is live,
 * and no armed timer pins the task (t->pins).  Everyone else reads t->exec
 * only after winning that CAS, or after the poll that ran there.  A floating
 * task's list of unfinished tasks is its group's, under the group's lock,
 * since it may finish on any thread; group shutdown cancels floating tasks
 * first, on the shutting-down thread, while every loop is stopped.
 */
#ifndef SYNCBAND_SRC_EXECUTOR_INTERNAL_H
#define SYNCBAND_SRC_EXECUTOR_INTERNAL_H

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <errno.h>

#include <syncband/executor.h>

#include "queue.h"
#include "timer_heap.h"

#define T_SCHEDULED ((uint64_t)1 << 0)
#define T_RUNNING ((uint64_t)1 << 1)
#define T_NOTIFIED ((uint64_t)1 << 2)
#define T_DONE ((uint64_t)1 << 3)
#define T_CANCELLED ((uint64_t)1 << 4)
#define T_JOIN_WAKER ((uint64_t)1 << 5)
#define T_COMPLETING ((uint64_t)1 << 6)
#define T_FLOATING ((uint64_t)1 << 7)
#define T_REF_SHIFT 8
#define T_REF_ONE ((uint64_t)1 << T_REF_SHIFT)

static inline uint64_t task_refs(uint64_t state)
{
	return state >> T_REF_SHIFT;
}

/* sb_executor.flags */
#define EX_LIVE 1u       /* initialised and not yet destroyed */
#define EX_STOPPING 2u   /* destroy has begun: spawns are refused */
#define EX_STOP_REQ 4u   /* sb_executor_stop() asked the loop to return */

/*
 * io_uring user_data: the low 3 bits are a tag; pointers are 8-aligned.
 */
#define UD_TAG_MASK UINT64_C(7)
#define UD_DOORBELL UINT64_C(1)   /* an incoming MSG_RING: nothing to do but wake */
#define UD_EVENTFD UINT64_C(2)    /* the armed eventfd read */
#define UD_TIMEOUT UINT64_C(3)    /* | seq << 3: the armed kernel timeout */
#define UD_IGNORE UINT64_C(4)     /* timeout removals, cancels */
#define UD_MSG_SENT UINT64_C(5)   /* | target executor pointer: our MSG_RING */

enum loop_mode {
	LOOP_UNTIL_IDLE,      /* sb_executor_run */
	LOOP_UNTIL_DONE,      /* sb_block_on: until the root task finishes */
	LOOP_UNTIL_STOPPED,   /* a group thread: until sb_executor_stop */
};

/* sb_sleep.state */
enum {
	SLEEP_IDLE = 0,
	SLEEP_LINKED,      /* in an executor's timer heap, holding a waker clone */
	SLEEP_FIRED,       /* the executor unlinked it and woke the waker */
	SLEEP_DONE,
	SLEEP_CANCELLED,   /* polls to -ECANCELED, as every cancelled future */
};

/*
 * A group as the scheduler sees it: the list of its unfinished floating
 * tasks.  t->group and an executor's impl->group point here.
 */
struct sb_sched_group {
	pthread_mutex_t mu;       /* guards floating */
	task_list floating;
};

/* Everything only the owner thread touches. */
struct sb_executor_impl {
	struct io_uring ring;
	task_queue runq;            /* local run queue */
	task_list live;             /* unfinished tasks that have reached the owner */
	timer_heap timers;
	bool armed;                 /* a kernel timeout is pending for armed_deadline */
	uint64_t armed_deadline;
	uint64_t armed_ud;
	uint64_t timeout_seq;
	struct __kernel_timespec ts;
	uint64_t efd_buf;           /* the armed eventfd read lands here */
	bool efd_armed;
	size_t msgs_in_flight;      /* our MSG_RINGs whose CQE we have not reaped */
	int running;                /* inside run/block_on/destroy */
	struct sb_sched_group *group; /* the group whose thread owns us, or NULL */
	bool takes_floating;        /* a group loop is live: woken floating tasks may come here */
	sb_task *current;           /* the task being polled, for timers to pin */
	const sb_waker *current_waker; /* ... and the waker its poll was given */
	bool requeue_current;       /* `current` yielded: requeue it after the poll */
};

/* Per-thread: identity of this thread, and the executor it is running. */
extern _Thread_local char sb__exec_thread_tag __attribute__((tls_model("initial-exec")));
extern _Thread_local sb_executor *sb__exec_current __attribute__((tls_model("initial-exec")));

#ifdef SB_MODEL_CHECK
/*
 * The model-check build (tests/model) runs logical threads as coroutines of
 * one OS thread, which share its thread-locals: the test says which
 * executor each logical thread runs, and who it is.
 */
sb_executor *sb_model_exec_current(void);
const void *sb_model_exec_thread(void);
static inline sb_executor *exec_current(void)
{
	return sb_model_exec_current();
}
static inline const void *exec_this_thread(void)
{
	return sb_model_exec_thread();
}
#else
static inline sb_executor *exec_current(void)
{
	return sb__exec_current;
}
static inline const void *exec_this_thread(void)
{
	return &sb__exec_thread_tag;
}
#endif

static inline bool exec_is_owner(const sb_executor *ex)
{
	return ex->owner == exec_this_thread();
}

static inline void exec_unref(sb_executor *ex)
{
	/* release: our uses of ex (push, fds) happen-before destroy's load of 0. */
	atomic_fetch_sub_explicit(&ex->refs, 1, memory_order_release);
}

/* ring.c: the io_uring side of an executor; the owner thread's, except the doorbell */
int sb__ring_open(sb_executor *ex, struct sb_executor_impl *impl, const sb_executor_config *cfg);
void sb__ring_close(sb_executor *ex);
void sb__ring_doorbell(sb_executor *src, sb_executor *target);
void sb__ring_reap_ready(sb_executor *ex);
void sb__ring_arm_eventfd(sb_executor *ex);
bool sb__ring_arm_timer(struct sb_executor_impl *impl, const sb_sleep *earliest);
void sb__ring_enter(struct sb_executor_impl *impl);
/* The loops of the process that are awake (running and not asleep in the
 * kernel), for the idle spin: a loop counts itself awake when it starts and
 * asleep before it sleeps or returns; a waker that rings a sleeping loop
 * (the doorbell) or a loop that finds it was not rung counts it awake. */
void sb__ring_count_woken(void);
void sb__ring_count_asleep(void);
unsigned sb__ring_loops_awake(void);

/*
 * With DEFER_TASKRUN (or COOP_TASKRUN) some completions wait for us to enter
 * the kernel; TASKRUN_FLAG makes the kernel say so in sq_flags.  One load.
 */
static inline bool ring_task_work_pending(const struct sb_executor_impl *impl)
{
	/* relaxed (IO_URING_READ_ONCE): a hint from the kernel; a stale value
	 * only delays reaping until the next iteration or sleep. */
	return IO_URING_READ_ONCE(*impl->ring.sq.kflags) & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW);
}

static inline void ring_flush_task_work(struct sb_executor_impl *impl)
{
	if (ring_task_work_pending(impl))
		io_uring_get_events(&impl->ring);
}

/* Handles every completion that has arrived (ring.c, when there are some). */
static inline void ring_reap(sb_executor *ex)
{
	ring_flush_task_work(ex->impl);
	if (io_uring_cq_ready(&ex->impl->ring))
		sb__ring_reap_ready(ex);
}

/* task.c: the state machine */
extern const sb_waker_vtable sb__task_waker_vtable;
void sb__task_unref(sb_task *t, uint64_t n);
void sb__task_run(sb_executor *ex, sb_task *t);
bool sb__task_cancel(sb_executor *ex, sb_task *t, bool queued);
/* sb_spawn, or a floating spawn for group `floating` (non-NULL) */
int sb__spawn(sb_executor *ex, sb_task *t, sb_join *join, struct sb_sched_group *floating);

/* executor.c */
int sb__exec_loop(sb_executor *ex, enum loop_mode mode, const sb_task *root);

/* timer.c */
void sb__timers_fire(struct sb_executor_impl *impl, uint64_t now);
void sb__timers_detach_all(struct sb_executor_impl *impl);

#include "scheduler.h"

#endif
