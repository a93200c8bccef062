/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tour of the primitives on any event loop (primitives_tour.c): loop tasks
 * that take permits released by another thread, consume a queue a thread
 * fills under a mutex and condition variable, play ping-pong with a thread
 * through auto-reset events, and wait under deadlines kept by the loop's own
 * timers.  libuv_primitives.c and epoll_primitives.c are the two loops that
 * run it; everything loop-specific is in them.
 */
#ifndef SYNCBAND_EXAMPLES_PRIMITIVES_TOUR_H
#define SYNCBAND_EXAMPLES_PRIMITIVES_TOUR_H

#include <syncband/syncband.h>

/* --- what the loop provides ---------------------------------------------- */

typedef struct tour_timer tour_timer;

/*
 * Arms a one-shot timer: after `ms` milliseconds, on the loop's thread, it
 * calls sb_deadline_expire(d) and then sb_loop_wake(t).  Called from a task's
 * poll.  The task stops it, exactly once, as soon as its deadline is done
 * (before the task finishes), so the timer never outlives the task.
 */
tour_timer *tour_timer_start(unsigned ms, sb_deadline *d, sb_loop_task *t);
/* Disarms and frees the timer; the loop's thread. */
void tour_timer_stop(tour_timer *tm);

/* --- what the tour provides ---------------------------------------------- */

/* Spawns the tour's tasks on `loop` and starts its threads: 0, or -1. */
int tour_start(sb_loop *loop);

/* Once the loop is idle: joins the threads, checks every result, prints a
 * summary.  0 when all is as it must be, 1 otherwise. */
int tour_finish(void);

#endif
