/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/executor.h - a small io_uring executor (library syncband_uring).
 *
 * The runtime syncband's own tests, benchmarks and examples run on, offered
 * as is: installed only when built (-DSYNCBAND_BUILD_URING=ON), and without
 * the core library's compatibility promise - its API and ABI may change in
 * any minor release (the library's SONAME carries the minor version).
 *
 * One executor = one io_uring driven by one thread: the thread that called
 * sb_executor_init() (its "owner").  Tasks are intrusive: a user struct embeds
 * an sb_task and names a poll function; spawning links the task into a run
 * queue and never allocates.  A waker clone holds a reference on its task, so
 * a wake that arrives after the task finished (or was cancelled, or its
 * executor destroyed) does nothing.  Wakes may come from any thread.
 *
 *   struct my_task { sb_task task; sb_semaphore_acquire acq; int step; };
 *   static int my_poll(sb_task *t, const sb_waker *w) { ... return 0; }
 *
 *   sb_executor ex;
 *   sb_executor_init(&ex, NULL);
 *   sb_task_init(&mt.task, my_poll, my_cancel, NULL);
 *   sb_spawn(&ex, &mt.task, NULL);
 *   sb_executor_run(&ex);                 (returns when no task is left)
 *   sb_executor_destroy(&ex, NULL);
 *
 * Timers (sb_sleep, sb_timeout) are on sb_now_ns()'s clock; equal deadlines
 * fire in the order they were armed.  sb_executor_features() reports which
 * io_uring setup flags the running kernel accepted (docs/design.md says
 * which are tried).  Errors are negative errno values, as in the rest of
 * syncband.
 */
#ifndef SYNCBAND_EXECUTOR_H
#define SYNCBAND_EXECUTOR_H

#include <syncband/blocking.h>
#include <syncband/deadline.h>
#include <syncband/future.h>
#include <syncband/semaphore.h>

#ifdef __cplusplus
extern "C" {
#endif

/* sb_future_ops (future.h) lets sb_timeout and sb_block_on drive any future. */

/* ------------------------------------------------------------------ tasks */

typedef struct sb_task sb_task;
typedef struct sb_executor sb_executor;

/*
 * Polls the task: SB_PENDING while it waits (it must have registered `waker`
 * somewhere that will wake it), 0 or a negative errno when it is finished.
 * Runs on the executor's owner thread (a floating task's: on a thread of its
 * group, see SB_GROUP_FLOATING), never concurrently with itself.
 */
typedef int (*sb_task_poll_fn)(sb_task *task, const sb_waker *waker);
/*
 * Cancels the task's pending futures (calls their *_cancel) and releases
 * whatever it holds; used when an executor shuts down with the task unfinished.
 * Runs on the owner thread (a floating task's: on the thread that shuts its
 * group down); the task is never polled afterwards.
 */
typedef void (*sb_task_cancel_fn)(sb_task *task);
/*
 * Called once, on whichever thread drops the last reference, when the library
 * and every waker are done with the task: the caller may free it now.
 */
typedef void (*sb_task_release_fn)(sb_task *task);

/* Embed in your task struct.  Fields are private. */
struct sb_task {
	SB_ATOMIC(uint64_t) state;  /* reference count << 8 | flags; see src/executor/internal.h */
	sb_task_poll_fn poll;
	sb_task_cancel_fn cancel;
	sb_task_release_fn release;
	sb_executor *exec;
	const void *owner;          /* exec's owner thread, kept past exec's lifetime */
	sb_task *next;              /* run queue or inbox link */
	sb_task *live_prev;         /* the executor's list of unfinished tasks */
	sb_task *live_next;
	sb_waker join_waker;
	int result;
	int linked;
	void *group;                /* a floating task's group (NULL: pinned) */
	SB_ATOMIC(uint32_t) pins;   /* armed timers that hold a floating task in place */
};

/*
 * Prepares a task.  `poll` is required; `cancel` may be NULL when the task
 * never holds a pending future across a poll; `release` may be NULL when the
 * caller keeps the task alive until sb_task_is_released() is true.
 * Not thread-safe with respect to the task; does not spawn it.
 */
SB_API void sb_task_init(sb_task *t, sb_task_poll_fn poll, sb_task_cancel_fn cancel,
			 sb_task_release_fn release);

/*
 * True when no executor, join future or waker references the task any more,
 * so its memory may be freed or the task spawned again.  Acquire ordering:
 * everything the library did with the task happens-before a true result.
 */
SB_API bool sb_task_is_released(const sb_task *t);

/*
 * The join future of a spawned task: completes with the task's result (0 or
 * the task's negative errno), or -ECANCELED when the task was cancelled by a
 * shutdown.  It holds a reference on the task until it completes or is
 * cancelled.  Fields are private.
 */
typedef struct sb_join {
	sb_task *task;
	int status;
} sb_join;

/*
 * Spawns `t` onto `ex`: the task will be polled on ex's owner thread.
 * `join` (may be NULL: the task is detached) is initialised to await it.
 * Returns 0; -ESHUTDOWN when ex is not initialised, stopping or destroyed;
 * -EBUSY when `t` is still referenced from an earlier spawn; -EINVAL for a
 * task without a poll function.  Never allocates and never waits.
 * Thread-safe: from the owner thread the task goes onto the local run queue;
 * from any other thread onto the inbox (and the owner is woken).  Everything
 * the spawner did before sb_spawn happens-before the task's first poll.
 */
SB_API int sb_spawn(sb_executor *ex, sb_task *t, sb_join *join);

/*
 * Polls the join: SB_PENDING, or the task's result (see sb_join).  Once done
 * it returns the same result again.  May be polled from any thread, by one
 * thread at a time.  The task's last poll (or its cancel function) happens-
 * before completion, and once the join has completed the executor no longer
 * touches the task: only waker clones still held elsewhere can (see
 * sb_task_is_released).
 */
SB_API int sb_join_poll(sb_join *j, const sb_waker *w);

/*
 * Detaches: drops the join's interest and reference (the task keeps running).
 * No-op on a completed join.  Afterwards the join may be freed or reused.
 */
SB_API void sb_join_cancel(sb_join *j);

/*
 * Blocks the calling thread until the task completes; returns its result.
 * -EDEADLK when called on the owner thread of the task's executor, or for a
 * floating task on any thread of its group (the task could never run).  For
 * threads that are not executors (or that drive a different executor, which
 * then does not run meanwhile).
 */
SB_API int sb_join_wait(sb_join *j);

/* ------------------------------------------------------------- executor */

/* sb_executor_config.flags */
#define SB_EXECUTOR_NO_MSG_RING (1u << 0)  /* always use the eventfd doorbell */
#define SB_EXECUTOR_PLAIN_SETUP (1u << 1)  /* no optional io_uring setup flags */

typedef struct sb_executor_config {
	unsigned entries;   /* submission queue size; 0: 64 */
	unsigned flags;     /* SB_EXECUTOR_* above */
} sb_executor_config;

/* sb_executor_features() bits */
#define SB_EXECUTOR_FEAT_SINGLE_ISSUER (1u << 0)
#define SB_EXECUTOR_FEAT_DEFER_TASKRUN (1u << 1)
#define SB_EXECUTOR_FEAT_COOP_TASKRUN (1u << 2)
#define SB_EXECUTOR_FEAT_MSG_RING (1u << 3)

/* Caller-owned; fields are private. */
struct sb_executor {
	SB_ATOMIC(sb_task *) inbox;     /* tasks pushed by other threads (LIFO stack) */
	SB_ATOMIC(uint32_t) sleeping;   /* 1: the owner is, or is about to be, in the kernel */
	SB_ATOMIC(uint32_t) flags;      /* LIVE, STOPPING, STOP_REQ */
	SB_ATOMIC(size_t) refs;         /* other threads inside push + doorbell */
	int ring_fd;
	int event_fd;
	unsigned features;
	const void *owner;              /* identifies the owner thread */
	struct sb_executor_impl *impl;  /* owner-thread state: ring, queues, timers */
};

/*
 * Creates the executor's io_uring (see the flags above) and its eventfd; the
 * calling thread becomes the owner.  `cfg` may be NULL.  Returns 0, or the
 * negative errno of the failure with `ex` left unusable (sb_spawn on it
 * returns -ESHUTDOWN, destroy does nothing): -ENOSYS (no io_uring), -EPERM
 * (io_uring disabled by sysctl or seccomp), -ENOMEM, -EMFILE, -EINVAL (bad
 * entries).  Allocates; not for hot paths.
 */
SB_API int sb_executor_init(sb_executor *ex, const sb_executor_config *cfg);

/*
 * Shuts the executor down: later spawns fail with -ESHUTDOWN, every task that
 * has not finished is cancelled (its cancel function runs on this thread, its
 * join completes with -ECANCELED), and *cancelled (may be NULL) receives how
 * many.  Waits, briefly, for other threads still inside a push or doorbell on
 * this executor (and for its own MSG_RINGs to be reaped), then closes the
 * ring.  Sleep futures still registered are detached (they complete).
 * Afterwards the struct may be freed: wakes of its tasks arriving later are
 * harmless; only calls that name the executor itself (sb_spawn, stop) must
 * be over by then.  Destroying a never-initialised or failed executor does
 * nothing.  Owner thread only (-EPERM otherwise); -EBUSY from inside one of
 * its own tasks.  Returns 0.
 */
SB_API int sb_executor_destroy(sb_executor *ex, size_t *cancelled);

/*
 * Runs tasks until none is left unfinished: returns 0.  Sleeps in the kernel
 * while every task waits.  Returns -EINTR early when sb_executor_stop() was
 * called (unfinished tasks stay, and a later run resumes them).  Owner thread
 * only (-EPERM); -EBUSY when called from one of its own tasks.
 */
SB_API int sb_executor_run(sb_executor *ex);

/*
 * Drives one future to completion on the calling (owner) thread, running the
 * executor's tasks meanwhile; returns the future's result.  Returns only
 * after every waker clone of the future has been woken or dropped, so the
 * future and its waker may live on the caller's stack.  -EPERM / -EBUSY as
 * for sb_executor_run; -ESHUTDOWN on a destroyed executor.  Ignores stop.
 */
SB_API int sb_block_on(sb_executor *ex, void *future, const sb_future_ops *ops);

/*
 * Asks sb_executor_run (and a group thread's loop) to return at its next
 * iteration, waking the owner if it sleeps.  Thread-safe, never waits; a no-op
 * on a stopping or destroyed executor.
 */
SB_API void sb_executor_stop(sb_executor *ex);

/* SB_EXECUTOR_FEAT_* bits of what this executor's ring uses.  Thread-safe. */
SB_API unsigned sb_executor_features(const sb_executor *ex);

/* The executor running on the calling thread, or NULL.  Thread-local. */
SB_API sb_executor *sb_executor_current(void);

/* -------------------------------------------------------------- futures */

/*
 * Yield: the first poll wakes its own task and returns SB_PENDING (the task
 * goes to the back of the run queue); the second returns 0.  Works with any
 * waker.  Cancel does nothing.
 */
typedef struct sb_yield {
	int yielded;
} sb_yield;

/* Prepares a yield.  Never waits; no thread rules beyond the future's. */
SB_API void sb_yield_init(sb_yield *y);
/* SB_PENDING (after waking `w` by reference) the first time, then 0. */
SB_API int sb_yield_poll(sb_yield *y, const sb_waker *w);
/* Does nothing: a yield holds no registration. */
SB_API void sb_yield_cancel(sb_yield *y);

/* Every deadline here is on sb_now_ns()'s clock (syncband/blocking.h). */

/*
 * Sleep: completes with 0 once CLOCK_MONOTONIC reaches the deadline.  Fields
 * are private (an intrusive node of the executor's timer heap).
 */
typedef struct sb_sleep {
	struct sb_sleep *parent;    /* the timer heap's links */
	struct sb_sleep *left;
	struct sb_sleep *right;
	uint64_t deadline;
	uint64_t seq;               /* arming order: equal deadlines fire first come, first served */
	sb_waker waker;
	sb_executor *exec;
	sb_task *pinned;            /* the floating task this armed timer holds in place */
	int state;
} sb_sleep;

/* Deadline = now + `ns` (saturating).  Does not register. */
SB_API void sb_sleep_init(sb_sleep *s, uint64_t ns);
/* Deadline = `deadline_ns` on sb_now_ns()'s clock.  Does not register. */
SB_API void sb_sleep_until_init(sb_sleep *s, uint64_t deadline_ns);
/*
 * 0 when the deadline has passed; SB_PENDING (the timer is armed on the
 * current executor and will wake `w`); -EPERM when polled outside an
 * executor's task with the deadline still ahead; -EXDEV when polled on a
 * different executor than the one it registered with.  Owner thread only.
 */
SB_API int sb_sleep_poll(sb_sleep *s, const sb_waker *w);
/*
 * Unregisters and drops the waker; a later poll returns -ECANCELED (0 if
 * it had completed).  On the thread that polled it, or in the cancel
 * function of a floating task that a group shutdown cancels (on the
 * shutting-down thread, while every group thread waits).
 */
SB_API void sb_sleep_cancel(sb_sleep *s);

/*
 * Timeout combinator: the core's deadline combinator (syncband/deadline.h)
 * with this executor's timer.  Drives `inner` through `ops`; once the
 * deadline has passed, polls it once more and, if it is still pending,
 * cancels it through ops->cancel (so a partial grant is handed on) and
 * completes with -ETIMEDOUT.  Inner completion wins ties.  "acquire with a
 * 5 ms deadline":
 *
 *   sb_timeout_init(&t, &acq, &sb_semaphore_acquire_ops, 5 * SB_NSEC_PER_MSEC);
 */
typedef struct sb_timeout {
	sb_sleep sleep;
	sb_deadline deadline;
} sb_timeout;

/* Deadline = now + `ns`.  Does not poll `inner`. */
SB_API void sb_timeout_init(sb_timeout *t, void *inner, const sb_future_ops *ops, uint64_t ns);
/* Deadline = `deadline_ns` on sb_now_ns()'s clock.  Does not poll `inner`. */
SB_API void sb_timeout_until_init(sb_timeout *t, void *inner, const sb_future_ops *ops,
				  uint64_t deadline_ns);
/*
 * The inner result (0 or -errno), -ETIMEDOUT (inner was cancelled), or
 * SB_PENDING.  Same thread rules as sb_sleep_poll; -EPERM / -EXDEV from the
 * timer also cancel inner.  Done futures return their result again.
 */
SB_API int sb_timeout_poll(sb_timeout *t, const sb_waker *w);
/* Cancels inner and the timer; no-op once done. */
SB_API void sb_timeout_cancel(sb_timeout *t);

/* Ready-made sb_future_ops for the futures above (the core's primitives
 * export theirs: sb_semaphore_acquire_ops, sb_mutex_lock_ops, ...). */
SB_API extern const sb_future_ops sb_yield_ops;
SB_API extern const sb_future_ops sb_sleep_ops;
SB_API extern const sb_future_ops sb_timeout_ops;
SB_API extern const sb_future_ops sb_join_ops;

/* ------------------------------------------------------ executor group */

/* sb_executor_group_spawn(): pick a thread round-robin. */
#define SB_GROUP_ANY SIZE_MAX
/*
 * sb_executor_group_spawn(): a floating task.  It starts on a thread picked
 * round-robin and afterwards runs where it is woken: when code running on
 * another thread of the group wakes it while it is idle, it moves to that
 * thread and runs there (after the task that woke it), rather than crossing
 * to its old thread.  A mutex or a permit handed from task to task thus stays
 * on one thread instead of paying a cross-thread wake per handoff (what a
 * work-stealing runtime does by moving woken tasks to the waking worker).
 *
 * What a floating task may assume: it is polled by one thread at a time, and
 * everything one poll did happens-before the next, wherever that runs; but
 * consecutive polls may run on different threads of the group (so no
 * thread-local state across polls, and sb_executor_current() may change).
 * While a sleep or a timeout it polled is armed, it stays on that thread.
 * A wake from a thread outside the group, or from a thread that is stopping,
 * sends it back to the thread it last ran on.  Pinned tasks (a thread index
 * or SB_GROUP_ANY) never move.  There is no stealing: floating tasks that
 * keep waking each other gather on one thread (which is the point for a
 * contended lock) and an idle thread does not take work from a busy one.
 */
#define SB_GROUP_FLOATING (SIZE_MAX - 1)

/* N threads, each owning one executor.  Caller-owned; fields private. */
typedef struct sb_executor_group {
	struct sb_group_impl *impl;
	size_t n;
	SB_ATOMIC(size_t) next;     /* round-robin cursor */
	SB_ATOMIC(size_t) users;    /* spawners inside the group */
	SB_ATOMIC(uint32_t) closed;
} sb_executor_group;

/*
 * Starts `n` threads, each creating its own executor (with `cfg`, may be
 * NULL) and running it until shutdown.  Returns 0 once every executor is
 * ready, or the first thread's init error (everything started is torn down),
 * -EINVAL for n == 0, -EAGAIN / -ENOMEM when threads cannot be made.
 */
SB_API int sb_executor_group_init(sb_executor_group *g, size_t n, const sb_executor_config *cfg);

/* The executor of thread `i` (< n), for sb_spawn or features; NULL past n. */
SB_API sb_executor *sb_executor_group_executor(sb_executor_group *g, size_t i);

/*
 * sb_spawn onto thread `thread`, round-robin with SB_GROUP_ANY, or as a
 * floating task with SB_GROUP_FLOATING (see above).  Returns as sb_spawn,
 * -EINVAL for a thread index out of range, -ESHUTDOWN once the group shuts
 * down.  Thread-safe, also against shutdown.  Never allocates; a floating
 * spawn takes the group's list lock once (and its completion once more).
 */
SB_API int sb_executor_group_spawn(sb_executor_group *g, size_t thread, sb_task *t,
				   sb_join *join);

/*
 * Stops every thread's loop, then cancels the unfinished tasks: first the
 * floating ones, on the calling thread while every group thread waits; then
 * each thread destroys its executor, cancelling its pinned tasks on their
 * own thread.  Cancel functions return what the tasks held; *cancelled (may
 * be NULL) receives the total.  Waits for the threads to exit.  Call from a
 * thread outside the group.  Returns 0, or -ESHUTDOWN when already shut down.
 * A group thread whose loop was stopped by hand (sb_executor_stop) before
 * the shutdown waits for the shutdown to destroy its executor.
 */
SB_API int sb_executor_group_shutdown(sb_executor_group *g, size_t *cancelled);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_EXECUTOR_H */
