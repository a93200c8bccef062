/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/loop.h - drive syncband futures from any event loop: a refcounted
 * task (the wake target), a ready queue, one waker, and the shutdown answer.
 *
 *   - sb_loop_task, embedded in your task: every waker clone and every
 *     sb_loop_task_ref holds a reference, so a late wake or drop (future.h)
 *     touches live memory.  Your release function runs on the loop's thread
 *     once the last reference is gone: free the task there.
 *   - sb_loop: a lock-free multi-producer, single-consumer ready queue.  A
 *     push rings your doorbell (the ring(ctx) hook given to sb_loop_init)
 *     only when the loop is not already due to look: never during
 *     sb_loop_run_ready, which runs tasks woken meanwhile in the same call,
 *     until the queue is empty or SB_LOOP_BUDGET polls are spent.
 *   - A task's poll returns SB_PENDING while it waits (it registered its
 *     waker, or arranged a wake), else 0 or a negative errno: it is then
 *     never polled again.  A wake means "poll again".  Wakes that arrive
 *     while a task is queued are merged; one that arrives during its poll
 *     queues it again, behind the tasks queued before it.
 *   - Shutdown: after sb_loop_close(), spawns fail with -ESHUTDOWN; once
 *     sb_loop_idle() is true nothing rings again: close the doorbell.
 *
 * Deadlines and early stops go through the task's poll (deadline.h,
 * sb_loop_wake); docs/integration.md shows a whole libuv integration.
 *
 * Thread safety: spawn, wake, ref/unref, close and the waker from any
 * thread; run and idle on the loop's thread only.  Ordering: a spawn
 * happens-before the task's first poll.  Errors: spawn -EINVAL, -EBUSY,
 * -ESHUTDOWN; ref -EINVAL.  Nothing here allocates, takes a lock or waits,
 * except that sb_loop_idle() spins for the few instructions between a
 * waker's push and its ring.
 */
#ifndef SYNCBAND_LOOP_H
#define SYNCBAND_LOOP_H

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * sb_loop_run_ready's budget: once it has polled this many tasks it takes no
 * further batch of newly queued ones and returns, so that the loop gets back
 * to its own events (I/O, timers) even while tasks keep waking each other
 * (docs/design.md).
 */
#define SB_LOOP_BUDGET 128u

typedef struct sb_loop sb_loop;
typedef struct sb_loop_task sb_loop_task;

/*
 * Polls the task (see above): SB_PENDING, or 0 / a negative errno when it is
 * finished.  Runs on the loop's thread, inside sb_loop_run_ready, never
 * concurrently with itself.  `w` is borrowed: futures clone it.
 */
typedef int (*sb_loop_poll_fn)(sb_loop_task *t, const sb_waker *w);

/*
 * Called once, on the loop's thread inside sb_loop_run_ready, when the task
 * is finished and no waker, queue or spawn references it: free it here.
 */
typedef void (*sb_loop_release_fn)(sb_loop_task *t);

/*
 * Rings the loop's doorbell, so that the loop thread calls sb_loop_run_ready
 * soon.  Called from any thread, also from inside sb_loop_run_ready (the loop
 * rings itself when it spent its budget with tasks still queued); must not
 * wait, and must not call back into the queue.  Rings are rare: one per
 * wake-up of the loop.
 */
typedef void (*sb_loop_ring_fn)(void *ctx);

/* Embed in your task struct.  Fields are private. */
struct sb_loop_task {
	SB_ATOMIC(size_t) state;   /* references << 2 | DONE | QUEUED; see src/loop.c */
	sb_loop_task *next;        /* the ready queue's link, owned by whoever queued it */
	sb_loop *loop;
	sb_loop_poll_fn poll;      /* read before each poll; syncband.hpp's poll replaces it */
	sb_loop_release_fn release;
};

/* Caller-owned; lives until sb_loop_idle() is true.  Fields are private. */
struct sb_loop {
	SB_ATOMIC(sb_loop_task *) inbox; /* tasks pushed since the loop last took them (LIFO) */
	SB_ATOMIC(size_t) tasks;         /* spawned and not yet released; top bit: closed */
	SB_ATOMIC(size_t) ringing;       /* last-reference drops between their push and ring */
	sb_loop_ring_fn ring;
	void *ring_ctx;
};

/* Prepares an empty loop whose pushes call ring(ctx).  Not thread-safe. */
SB_API void sb_loop_init(sb_loop *l, sb_loop_ring_fn ring, void *ctx);

/*
 * Prepares a task: `poll` is required, `release` may be NULL (the task's
 * memory then belongs to the caller, who may reuse it once sb_loop_idle() or
 * its own bookkeeping says it was released).  Does not spawn it.
 */
SB_API void sb_loop_task_init(sb_loop_task *t, sb_loop_poll_fn poll, sb_loop_release_fn release);

/*
 * Queues the task's first poll on `l` and rings the doorbell if needed.
 * Returns 0, -EINVAL (no poll function), -EBUSY (the task is still
 * referenced from an earlier spawn), or -ESHUTDOWN (sb_loop_close was called:
 * nothing is queued, nothing rings, and the task may be spawned elsewhere or
 * freed).  Any thread.  Everything the spawner did before happens-before the
 * task's first poll.
 */
SB_API int sb_loop_spawn(sb_loop *l, sb_loop_task *t);

/*
 * Queues a poll of a spawned task, as its waker's wake_by_ref does: for the
 * loop's own events (a socket became readable, a timer fired).  The caller
 * must hold a reference on the task (a waker clone, or be its poll function,
 * or know it is unfinished and its release cannot have run).  Any thread.
 * A finished task is not polled again.
 */
SB_API void sb_loop_wake(sb_loop_task *t);

/*
 * The task's waker, borrowed (no reference is taken): pass it to a future's
 * poll, which clones it.  Usable only while the caller holds a reference.
 */
SB_API sb_waker sb_loop_task_waker(sb_loop_task *t);

/*
 * Runs ready tasks until none is left or the budget is spent: polls every
 * task queued when it is called, once each, in the order they were queued,
 * then the tasks queued meanwhile (woken by these polls, or from other
 * threads, without a ring), batch after batch, and releases the finished
 * tasks nobody references any more as it finds them.  It takes a further
 * batch only while it has polled fewer than `budget` tasks (a batch is run
 * whole, so it may poll a batch more; 0 or 1: the tasks queued at the call,
 * once each).
 *
 * Returns true when it left the ready queue empty: every wake so far has
 * been served, and the next one rings.  Returns false when it stopped for
 * the budget with tasks still queued; it has rung the doorbell for them, so
 * handle your loop's events and run again.  Stores how many tasks it polled
 * in *polled unless `polled` is NULL.
 *
 * The loop's thread only; not from inside a poll function.  Clear your
 * doorbell (read the eventfd) before calling, not after, or a ring made
 * during the call may be lost.
 */
SB_API bool sb_loop_run(sb_loop *l, size_t budget, size_t *polled);

/*
 * sb_loop_run(l, SB_LOOP_BUDGET, ...): returns how many tasks it polled.
 * Whether tasks are left needs no answer here: if they are, it rang.
 */
SB_API size_t sb_loop_run_ready(sb_loop *l);

/*
 * Keeps the task alive for a handle of yours: one more reference, which
 * sb_loop_task_unref drops.  The task's release function runs (on the
 * loop's thread) only once it finished and every reference is gone, so a
 * task that several handles point at is freed once, there.  The caller must
 * hold a reference already: be the task's poll function, hold a waker clone
 * or reference, or be the spawner on the loop's thread before the loop runs
 * again.  Returns 0, or -EINVAL when the task has no reference (never
 * spawned, or released).  Any thread; no ordering (as a waker clone).
 */
SB_API int sb_loop_task_ref(sb_loop_task *t);

/*
 * Drops a reference taken by sb_loop_task_ref.  When it is the last, the
 * release is queued to the loop's thread (ringing if needed), never run
 * here.  Any thread.  Release ordering: what the caller did before
 * happens-before the release function.
 */
SB_API void sb_loop_task_unref(sb_loop_task *t);

/*
 * Closes the loop to spawns: every sb_loop_spawn that does not come before
 * it returns -ESHUTDOWN.  Tasks already spawned run on (wakes, references and
 * releases work as before) until they finish; close does not cancel them.
 * Any thread; idempotent.  Once the close happens-before an sb_loop_idle
 * (as when the loop's thread closed it), a true answer is final: the loop
 * is closed and drained, and nothing will ever ring again.
 */
SB_API void sb_loop_close(sb_loop *l);

/*
 * True when every spawned task has been released, and with it every waker
 * clone woken or dropped and every reference unref'd: no wake, drop or
 * spawn made so far will ring the doorbell again, so it may be closed and
 * `l` freed (provided nobody spawns again: sb_loop_close sees to that).  False while a task is unfinished, queued, or referenced by a
 * clone somewhere (a late wake still to come, or a release still to run:
 * call sb_loop_run_ready when the doorbell rings, then ask again).  The
 * loop's thread only.  Acquire ordering: every touch of `l` by another
 * thread happens-before a true result.
 */
SB_API bool sb_loop_idle(sb_loop *l);

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_LOOP_H */
