/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the io_uring executor shared by its source files.
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
 * References: the executor's list of unfinished tasks holds one (from spawn
 * to completion), a run queue / the inbox holds one while T_SCHEDULED (it
 * becomes the poll's reference while T_RUNNING), a join future holds one,
 * and each waker clone holds one.  The last one to go calls `release`.
 *
 * Executor lifetime (sb_executor.refs): a thread other than the owner that
 * pushes onto the inbox holds a reference on the executor from before the
 * push until after the doorbell, so destroy (which waits for refs to reach 0
 * after every unfinished task has come home) cannot close the ring or return
 * under it.  A wake of a finished task touches only the task.
 *
 * Floating tasks (group.c): the waker that takes an idle floating task to
 * SCHEDULED owns it until the push, so it may also choose where it goes:
 * onto its own executor's local queue (rewriting t->exec and t->owner before
 * the push) when it runs on a thread of the same group whose loop is live,
 * and no armed timer pins the task (t->pins).  Everyone else reads t->exec
 * only after winning that CAS, or after the poll that ran there.  A floating
 * task's "list of unfinished tasks" is its group's, under the group's lock,
 * since it may finish on any thread; group shutdown cancels floating tasks
 * first, on the shutting-down thread, while every loop is stopped.
 */
#ifndef SYNCBAND_SRC_EXECUTOR_INTERNAL_H
#define SYNCBAND_SRC_EXECUTOR_INTERNAL_H

#include <liburing.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <syncband/executor.h>

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
	SLEEP_LINKED,      /* in an executor's timer list, holding a waker clone */
	SLEEP_FIRED,       /* the executor unlinked it and woke the waker */
	SLEEP_DONE,
};

/* Everything only the owner thread touches. */
struct sb_executor_impl {
	struct io_uring ring;
	sb_task *q_head;            /* local run queue, FIFO */
	sb_task *q_tail;
	sb_task *live_head;         /* unfinished tasks that have reached the owner */
	size_t live_count;
	sb_sleep *t_head;           /* timers, sorted by deadline */
	sb_sleep *t_tail;
	bool armed;                 /* a kernel timeout is pending for armed_deadline */
	uint64_t armed_deadline;
	uint64_t armed_ud;
	uint64_t timeout_seq;
	struct __kernel_timespec ts;
	uint64_t efd_buf;           /* the armed eventfd read lands here */
	bool efd_armed;
	size_t msgs_in_flight;      /* our MSG_RINGs whose CQE we have not reaped */
	int running;                /* inside run/block_on/destroy */
	struct sb_group_impl *group; /* the group whose thread owns us, or NULL */
	bool takes_floating;        /* a group loop is live: woken floating tasks may come here */
	sb_task *current;           /* the task being polled, for timers to pin */
	bool requeue_current;       /* `current` yielded: requeue it after the poll */
};

/* Per-thread: identity of this thread, and the executor it is running. */
extern _Thread_local char sb__exec_thread_tag __attribute__((tls_model("initial-exec")));
extern _Thread_local sb_executor *sb__exec_current __attribute__((tls_model("initial-exec")));

static inline bool exec_is_owner(const sb_executor *ex)
{
	return ex->owner == (const void *)&sb__exec_thread_tag;
}

/* task.c */
extern const sb_waker_vtable sb__task_waker_vtable;
void sb__task_unref(sb_task *t, uint64_t n);
void sb__task_run(sb_executor *ex, sb_task *t);
bool sb__task_cancel(sb_executor *ex, sb_task *t, bool queued);

/* executor.c */
void sb__exec_push_local(sb_executor *ex, sb_task *t);
void sb__exec_push_remote(sb_executor *ex, sb_task *t);
void sb__exec_push_remote_held(sb_executor *ex, sb_task *t);
void sb__exec_live_link(struct sb_executor_impl *impl, sb_task *t);
void sb__exec_live_unlink(struct sb_executor_impl *impl, sb_task *t);
int sb__exec_loop(sb_executor *ex, enum loop_mode mode, const sb_task *root);
void sb__exec_drain_inbox(sb_executor *ex);
sb_task *sb__exec_pop_local(sb_executor *ex);

/* task.c: sb_spawn, or a floating spawn for group `floating` (non-NULL) */
int sb__spawn(sb_executor *ex, sb_task *t, sb_join *join, struct sb_group_impl *floating);

/*
 * The lists of unfinished tasks (an executor's, and a group's for floating
 * tasks) link through live_prev/live_next; `linked` says the task is on one.
 */
static inline void task_list_push(sb_task **head, sb_task *t)
{
	t->live_prev = NULL;
	t->live_next = *head;
	if (*head)
		(*head)->live_prev = t;
	*head = t;
	t->linked = 1;
}

static inline void task_list_remove(sb_task **head, sb_task *t)
{
	if (t->live_prev)
		t->live_prev->live_next = t->live_next;
	else
		*head = t->live_next;
	if (t->live_next)
		t->live_next->live_prev = t->live_prev;
	t->live_prev = t->live_next = NULL;
	t->linked = 0;
}

/* group.c: the list of a group's unfinished floating tasks */
void sb__group_float_link(struct sb_group_impl *gi, sb_task *t);
void sb__group_float_unlink(struct sb_group_impl *gi, sb_task *t);

/* timer.c */
void sb__timers_fire(struct sb_executor_impl *impl, uint64_t now);
void sb__timers_detach_all(struct sb_executor_impl *impl);

#endif
