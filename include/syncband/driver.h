/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/driver.h - a ready-made driver for an sb_loop (syncband/loop.h):
 * one thread runs the loop, sleeping on a futex doorbell between wake-ups,
 * and keeps its deadline timers.  For programs that have no event loop of
 * their own (libuv users include syncband/uv.h instead).
 *
 *   static sb_driver drv;
 *   sb_driver_init(&drv);
 *   sb_driver_spawn(&drv, &req->task);          any thread
 *   sb_driver_run(&drv);                        this thread is the loop's,
 *                                               until closed and idle
 *   sb_driver_close(&drv);                      any thread: no more spawns;
 *                                               run returns once the tasks
 *                                               and timers are done
 *
 * A deadline for a task's future, armed in its poll (the driver's thread):
 *
 *   sb_deadline_init(&r->deadline, &r->acquire, &sb_semaphore_acquire_ops);
 *   sb_driver_timer_init(&r->timer, &r->deadline, &r->task);
 *   sb_driver_timer_start(&drv, &r->timer, 5 * SB_NSEC_PER_MSEC);
 *   ... int rc = sb_deadline_poll(&r->deadline, w);
 *   ... once the deadline is done: sb_driver_timer_stop(&r->timer);
 *
 * When a timer is due, the driver calls sb_deadline_expire on its deadline
 * and sb_loop_wake on its task (or calls its callback), on its thread.  An
 * armed timer holds a reference on its task (sb_loop_task_ref), so the task
 * - and the timer inside it - is not released before the timer fired or was
 * stopped.
 *
 * Time: the library's monotonic clock (sb_now_ns, syncband/blocking.h).
 * Timers are kept in a list sorted by due time: start costs O(armed timers),
 * stop and firing O(1).  Nothing here allocates.
 */
#ifndef SYNCBAND_DRIVER_H
#define SYNCBAND_DRIVER_H

#include <syncband/blocking.h>
#include <syncband/deadline.h>
#include <syncband/loop.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sb_driver sb_driver;
typedef struct sb_driver_timer sb_driver_timer;

/* A timer's callback: on the driver's thread, outside any task's poll. */
typedef void (*sb_driver_timer_fn)(sb_driver_timer *tm);

/* Caller-owned; embed it next to what it times.  Fields are private. */
struct sb_driver_timer {
	sb_driver_timer *prev, *next; /* the driver's sorted list, while armed */
	uint64_t due_ns;
	sb_driver *driver;            /* non-NULL while armed */
	sb_deadline *deadline;
	sb_loop_task *task;
	sb_driver_timer_fn fn;
};

/*
 * Caller-owned; lives until sb_driver_run returned and no thread will call
 * sb_driver_spawn or sb_driver_close on it any more.  Fields are private.
 */
struct sb_driver {
	sb_loop loop;
	SB_ATOMIC(uint32_t) bell;     /* doorbell: rung, sleeping, closed; see src/driver.c */
	sb_driver_timer *timers;      /* armed, soonest first; the driver's thread only */
};

/* Prepares a driver with an empty, open loop.  Not thread-safe. */
SB_API void sb_driver_init(sb_driver *d);

/*
 * The driver's loop, for everything loop.h offers (sb_loop_spawn, ...).
 * Its doorbell belongs to the driver: do not call sb_loop_run on it, and
 * close it with sb_driver_close, not sb_loop_close (which would not wake the
 * driver, nor let sb_driver_run return).
 */
SB_API sb_loop *sb_driver_loop(sb_driver *d);

/*
 * sb_loop_spawn on the driver's loop: 0, -EINVAL, -EBUSY, or -ESHUTDOWN once
 * the driver was closed (loop.h).  Any thread.
 */
SB_API int sb_driver_spawn(sb_driver *d, sb_loop_task *t);

/*
 * Runs the loop on the calling thread, which becomes the loop's thread: polls
 * the tasks as they wake, fires the timers as they fall due, and sleeps on
 * the doorbell (a futex) in between.  Returns 0 once the driver was closed
 * (sb_driver_close), every task released and no timer armed; -EINVAL when
 * `d` was not initialised.  One thread at a time.  After it returned, `d` may
 * be freed: no ring or close touches it any more.
 */
SB_API int sb_driver_run(sb_driver *d);

/*
 * Closes the driver: sb_loop_close (later spawns return -ESHUTDOWN), and
 * wakes the driver so that sb_driver_run returns once its tasks are released
 * and its timers done.  Does not cancel tasks or timers: make them finish.
 * Any thread, idempotent; what the caller did before happens-before the
 * driver's return.
 */
SB_API void sb_driver_close(sb_driver *d);

/*
 * Prepares a timer that, when due, calls sb_deadline_expire(deadline) (if
 * not NULL) and then sb_loop_wake(task) (if not NULL).  Does not arm it.
 */
SB_API void sb_driver_timer_init(sb_driver_timer *tm, sb_deadline *deadline, sb_loop_task *task);

/* Prepares a timer that, when due, calls fn(tm).  Does not arm it. */
SB_API void sb_driver_timer_init_callback(sb_driver_timer *tm, sb_driver_timer_fn fn);

/*
 * Arms the timer to fire `timeout_ns` from now (0: at the driver's next
 * look at its timers); timers due at the same time fire in the order they
 * were started.  A timer with a task takes a reference on it
 * (sb_loop_task_ref) until it fires or is stopped.  Returns 0, -EINVAL (the
 * timer was never initialised, or its task holds no reference: not spawned,
 * or released), or -EBUSY (it is armed: stop it first).  After firing, the
 * timer is the caller's again and may be started again, also from its
 * callback.  The driver's thread only (inside its tasks' polls and timer
 * callbacks), or any one thread before sb_driver_run starts.
 */
SB_API int sb_driver_timer_start(sb_driver *d, sb_driver_timer *tm, uint64_t timeout_ns);

/*
 * Disarms the timer: true when it was armed (it will not fire, and the task
 * reference is dropped), false when it was not (it fired already, or never
 * started).  The same threads as sb_driver_timer_start.
 */
SB_API bool sb_driver_timer_stop(sb_driver_timer *tm);

/* True while the timer is armed. */
SB_API bool sb_driver_timer_is_armed(const sb_driver_timer *tm);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_DRIVER_H */
