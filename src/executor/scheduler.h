/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduler: where a task goes.  Every placement decision of the
 * executor is made here, inline where it is on the path of every poll or
 * wake, and in scheduler.c for the rest:
 *
 *   a new task      the local run queue when spawned on the owner thread,
 *                   the inbox from any other (sched_spawn);
 *   a woken task    the local run queue when woken on its owner thread; a
 *                   floating one the waking thread's own queue when that is
 *                   a live loop of its group and no timer pins it; else its
 *                   executor's inbox, ringing the doorbell (sched_wake);
 *   after a poll    the local queue again when it was woken meanwhile or
 *                   yielded (sched_requeue);
 *   while polled    the task a timer pins (sb__sched_pin_current) and the
 *                   yield that requeues it without a wake (sched_yield_requeues);
 *   its home        the list of unfinished tasks it is on: its executor's,
 *                   or its group's when it floats (sched_adopt, forget);
 *   at shutdown     the floating tasks taken out of a stopped loop's queues
 *                   (sb__sched_take_floating); a group spawn's thread; and
 *                   whether blocking this thread on a task could deadlock.
 *
 * It decides and pushes; it never runs a task or touches the state word
 * (task.c does, and calls in here once its CAS made the task SCHEDULED).
 */
#ifndef SYNCBAND_SRC_EXECUTOR_SCHEDULER_H
#define SYNCBAND_SRC_EXECUTOR_SCHEDULER_H

/* Included by internal.h, after its definitions. */

/* ------------------------------------------------ scheduler.c: the slow paths */

/* A woken task whose owner thread is not this one: a move or the inbox. */
void sb__sched_wake_elsewhere(sb_task *t, uint64_t state);

/* A new task that floats or comes from another thread. */
int sb__sched_spawn_elsewhere(sb_executor *ex, sb_task *t, struct sb_sched_group *floating);

/* Moves what other threads pushed onto ex's inbox (not empty) to its run queue. */
void sb__sched_take_inbox(sb_executor *ex);

/* Unlinks a floating task from its group's list. */
void sb__sched_float_unlink(struct sb_sched_group *g, sb_task *t);

/* Shutdown of a group whose loops all stopped: moves ex's floating tasks
 * (queued or in its inbox) to `out`, keeping the others' order. */
void sb__sched_take_floating(sb_executor *ex, task_queue *out);

/* The thread of a group spawn: `thread`, or one round-robin. */
size_t sb__sched_spawn_thread(sb_executor_group *g, size_t thread);

/* True when blocking this thread on `t` could keep it from ever running. */
bool sb__sched_join_would_deadlock(const sb_task *t);

/* The armed timer pinning the task polled here (NULL: none to pin), and its end. */
sb_task *sb__sched_pin_current(struct sb_executor_impl *impl);
void sb__sched_unpin(sb_task *t);

/* ------------------------------------------------ inline: on every poll's path */

/* A task the owner just polled (or spawned) goes on the local queue. */
static inline void sched_push_local(sb_executor *ex, sb_task *t)
{
	task_queue_push(&ex->impl->runq, t);
}

/* After a poll that was woken meanwhile or yielded: it runs here again. */
static inline void sched_requeue(sb_executor *ex, sb_task *t)
{
	sched_push_local(ex, t);
}

/* A task that this thread's CAS took from idle to SCHEDULED (`state` is the
 * word before it): pushes it where it should run next. */
static inline void sched_wake(sb_task *t, uint64_t state)
{
	if (t->owner == exec_this_thread())
		sched_push_local(t->exec, t);
	else
		sb__sched_wake_elsewhere(t, state);
}

/* A new task, already SCHEDULED: onto ex's queues, or -ESHUTDOWN.  From the
 * owner thread, a pinned task goes straight onto the local queue. */
static inline int sched_spawn(sb_executor *ex, sb_task *t, struct sb_sched_group *floating)
{
	if (floating || !exec_is_owner(ex))
		return sb__sched_spawn_elsewhere(ex, t, floating);
	/* relaxed: only the owner thread writes LIVE and STOPPING. */
	uint32_t f = atomic_load_explicit(&ex->flags, memory_order_relaxed);
	if (!(f & EX_LIVE) || (f & EX_STOPPING))
		return -ESHUTDOWN;
	task_list_push(&ex->impl->live, t);
	sched_push_local(ex, t);
	return 0;
}

/* Moves what other threads pushed onto ex's inbox to its run queue, oldest first. */
static inline void sched_drain_inbox(sb_executor *ex)
{
	/* relaxed: a cheap emptiness test; a push we miss is seen next iteration,
	 * and park() re-checks with seq_cst before sleeping. */
	if (atomic_load_explicit(&ex->inbox, memory_order_relaxed))
		sb__sched_take_inbox(ex);
}

/* The task's first run (or cancel) here: it joins this executor's list,
 * unless it floats (its group's list has had it since the spawn). */
static inline void sched_adopt(struct sb_executor_impl *impl, sb_task *t)
{
	if (!t->linked)
		task_list_push(&impl->live, t);
}

/* A finished task leaves the list of unfinished tasks it is on. */
static inline void sched_forget(sb_executor *ex, sb_task *t)
{
	if (t->group)
		sb__sched_float_unlink(t->group, t);
	else
		task_list_remove(&ex->impl->live, t);
}

/* A loop starts or stops: while a group loop runs, floating tasks may come here. */
static inline void sched_loop_begin(struct sb_executor_impl *impl, enum loop_mode mode)
{
	impl->takes_floating = mode == LOOP_UNTIL_STOPPED && impl->group;
}

static inline void sched_loop_end(struct sb_executor_impl *impl)
{
	impl->takes_floating = false;
}

/* The poll bracket: which task runs here (with which waker), for timers and yields. */
static inline void sched_poll_begin(struct sb_executor_impl *impl, sb_task *t, const sb_waker *w)
{
	impl->current = t;
	impl->current_waker = w;
}

/* Ends it; true when the task yielded and must be requeued. */
static inline bool sched_poll_end(struct sb_executor_impl *impl)
{
	impl->current = NULL;
	bool yielded = impl->requeue_current;
	impl->requeue_current = false;
	return yielded;
}

/* A yield: when it is the task polled here, with its own waker, its executor
 * requeues it after the poll, with no CAS on its state word (true). */
static inline bool sched_yield_requeues(const sb_waker *w)
{
	sb_executor *ex = exec_current();
	if (!ex || !ex->impl->current || !sb_waker_will_wake(w, ex->impl->current_waker))
		return false;
	ex->impl->requeue_current = true;
	return true;
}

#endif
