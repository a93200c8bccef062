/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_model_task.c's stand-ins for the executor loop's steps that drive
 * task.c (src/executor/executor.c's loop and destroy, without the ring),
 * compiled with the model hooks like the library, so their atomics are
 * scheduling points too.
 */
#include "internal.h"

void run_queued(sb_executor *ex);
size_t cancel_unfinished(sb_executor *ex);

/* An executor thread's loop, once: what arrived, then everything queued. */
void run_queued(sb_executor *ex)
{
	sched_drain_inbox(ex);
	sb_task *t;
	while ((t = task_queue_pop(&ex->impl->runq)))
		sb__task_run(ex, t);
}

/* As destroy does, once: cancels what came home; how many. */
size_t cancel_unfinished(sb_executor *ex)
{
	size_t n = 0;
	sched_drain_inbox(ex);
	sb_task *t;
	while ((t = task_queue_pop(&ex->impl->runq)))
		n += sb__task_cancel(ex, t, true);
	for (t = ex->impl->live.head; t;) {
		sb_task *next = t->live_next;
		n += sb__task_cancel(ex, t, false);
		t = next;
	}
	return n;
}
