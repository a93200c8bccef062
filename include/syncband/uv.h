/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/uv.h - drive an sb_loop (syncband/loop.h) from a libuv loop:
 * a uv_async_t doorbell, uv_timer_t deadlines, and a shutdown that closes
 * the doorbell only when nothing can ring it any more.
 *
 * Header-only: every function is static inline, compiled into the program
 * that includes it (which needs libuv; the library and syncband.h do not).
 *
 *   sb_uv_init(&sbuv, uv_default_loop(), on_closed);
 *   sb_uv_spawn(&sbuv, &req->task);            any thread
 *   sb_uv_close(&sbuv);                        any thread, once
 *   uv_run(uv_default_loop(), UV_RUN_DEFAULT); returns once all is closed
 *
 * sb_uv_close() stops spawns; the doorbell closes once every task is
 * released.  A timer (sb_uv_timer_start, from a task's poll on the loop's
 * thread) holds a reference on its task until its handle's close callback,
 * so the task's release runs only after libuv is done with the handle:
 * close every timer you start (sb_uv_timer_close), or the loop never goes
 * idle.  docs/integration.md has a whole example.
 *
 * Errors are libuv's (negative errno values on Unix) or loop.h's.
 * Compiled as strict C11 (-std=c11), it needs _POSIX_C_SOURCE or _GNU_SOURCE
 * defined before the first include, as libuv's own header does.
 */
#ifndef SYNCBAND_UV_H
#define SYNCBAND_UV_H

#include <errno.h>

#include <uv.h>

#include <syncband/deadline.h>
#include <syncband/loop.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sb_uv sb_uv;

/* Called once the doorbell is closed: `u` may be freed. */
typedef void (*sb_uv_closed_fn)(sb_uv *u);

/* Caller-owned; lives until its sb_uv_closed_fn ran.  Fields are private. */
struct sb_uv {
	sb_loop loop;
	uv_async_t doorbell;
	sb_loop_task closer;      /* spawned by sb_uv_close: closes on the loop's thread */
	int state;                /* 0 open, 1 closing, 2 doorbell closing; loop thread */
	sb_uv_closed_fn on_closed;
};

/* Caller-owned, embedded in the task it times.  Fields are private. */
typedef struct sb_uv_timer {
	uv_timer_t handle;
	sb_deadline *deadline;
	sb_loop_task *task;
	void (*on_closed)(struct sb_uv_timer *tm);
} sb_uv_timer;

/* --- private helpers ------------------------------------------------------ */

static inline uv_handle_t *sb__uv_handle(void *h)
{
	return SB_CAST(uv_handle_t *, h);
}

/* Any thread: a task was queued while the loop was not looking. */
static inline void sb__uv_ring(void *ctx)
{
	uv_async_send(SB_CAST(uv_async_t *, ctx));
}

static inline void sb__uv_doorbell_closed(uv_handle_t *h)
{
	sb_uv *u = SB_CAST(sb_uv *, h->data);
	if (u->on_closed)
		u->on_closed(u);
}

/*
 * Closes the doorbell once closing and idle.  sb_loop_close happened on this
 * thread before (in the closer), so idle is final: no wake, drop or spawn
 * will ring again, and every ring made before hit the live handle.
 */
static inline void sb__uv_finish(sb_uv *u)
{
	if (u->state != 1 || !sb_loop_idle(&u->loop))
		return;
	u->state = 2;
	uv_close(sb__uv_handle(&u->doorbell), sb__uv_doorbell_closed);
}

static inline void sb__uv_on_doorbell(uv_async_t *a)
{
	sb_uv *u = SB_CAST(sb_uv *, a->data);
	/* Out of budget, the loop rings itself: libuv calls again after its
	 * other events. */
	(void)sb_loop_run(&u->loop, SB_LOOP_BUDGET, NULL);
	sb__uv_finish(u);
}

/* The closer's one poll, on the loop's thread: close the loop to spawns.
 * Being a spawned task, it kept the loop busy from the closing thread's
 * spawn (which rang a live doorbell) until its release. */
static inline int sb__uv_close_poll(sb_loop_task *t, const sb_waker *w)
{
	(void)w;
	sb_uv *u = SB_CONTAINER_OF(t, sb_uv, closer);
	sb_loop_close(&u->loop);
	if (u->state == 0)
		u->state = 1;
	return 0;
}

/* --- the loop ------------------------------------------------------------- */

/*
 * Prepares `u` on `uv_loop`: an open sb_loop whose doorbell is a uv_async_t
 * of that loop (an active handle: uv_run keeps running until sb_uv_close
 * has closed it).  `on_closed` may be NULL.  Returns 0 or uv_async_init's
 * error.  The loop's thread, before anything rings.
 */
static inline int sb_uv_init(sb_uv *u, uv_loop_t *uv_loop, sb_uv_closed_fn on_closed)
{
	int rc = uv_async_init(uv_loop, &u->doorbell, sb__uv_on_doorbell);
	if (rc != 0)
		return rc;
	u->doorbell.data = u;
	u->state = 0;
	u->on_closed = on_closed;
	sb_loop_init(&u->loop, sb__uv_ring, &u->doorbell);
	sb_loop_task_init(&u->closer, sb__uv_close_poll, NULL);
	return 0;
}

/* The sb_loop, for everything loop.h offers.  Its doorbell is ours. */
static inline sb_loop *sb_uv_loop(sb_uv *u)
{
	return &u->loop;
}

/* sb_loop_spawn on the loop: 0, -EINVAL, -EBUSY, or -ESHUTDOWN. Any thread. */
static inline int sb_uv_spawn(sb_uv *u, sb_loop_task *t)
{
	return sb_loop_spawn(&u->loop, t);
}

/*
 * Shuts down: on the loop's thread, soon, the loop is closed to spawns
 * (later ones return -ESHUTDOWN), and once every task has been released the
 * doorbell is closed and on_closed runs.  Does not cancel tasks: make them
 * finish (and close their timers).  Any thread, but once, or only while `u`
 * is sure to be alive (a second call may find on_closed already ran).
 * Returns 0, -EALREADY when a close was already under way, or -EINVAL when
 * `u` was never initialised.
 */
static inline int sb_uv_close(sb_uv *u)
{
	/* A spawn of our closer: it rings a doorbell that stays open until the
	 * closer is released, after the close it performs. */
	int rc = sb_loop_spawn(&u->loop, &u->closer);
	return rc == -EBUSY || rc == -ESHUTDOWN ? -EALREADY : rc;
}

/* --- deadline timers ------------------------------------------------------ */

static inline void sb__uv_timer_fired(uv_timer_t *h)
{
	sb_uv_timer *tm = SB_CAST(sb_uv_timer *, h->data);
	if (tm->deadline)
		sb_deadline_expire(tm->deadline);
	sb_loop_wake(tm->task); /* we hold a reference until our close */
}

static inline void sb__uv_timer_closed(uv_handle_t *h)
{
	sb_uv_timer *tm = SB_CAST(sb_uv_timer *, h->data);
	sb_loop_task *task = tm->task;
	if (tm->on_closed)
		tm->on_closed(tm);
	/* Last: the task's release may free the timer (on a later run). */
	sb_loop_task_unref(task);
}

/*
 * Arms a one-shot timer on u's libuv loop: after `timeout_ms` it calls
 * sb_deadline_expire(deadline) (if not NULL) and sb_loop_wake(task).  Takes
 * a reference on `task`, dropped once sb_uv_timer_close's handle close
 * completed.  Returns 0, -EINVAL (no task, or it holds no reference: never
 * spawned, or released), or libuv's error.  The loop's thread (a task's
 * poll); once per timer: close it, and start another.
 */
static inline int sb_uv_timer_start(sb_uv *u, sb_uv_timer *tm, sb_deadline *deadline,
				    sb_loop_task *task, uint64_t timeout_ms)
{
	if (!task || sb_loop_task_ref(task) != 0)
		return -EINVAL;
	int rc = uv_timer_init(u->doorbell.loop, &tm->handle);
	if (rc != 0) {
		sb_loop_task_unref(task);
		return rc;
	}
	tm->handle.data = tm;
	tm->deadline = deadline;
	tm->task = task;
	tm->on_closed = NULL;
	return uv_timer_start(&tm->handle, sb__uv_timer_fired, timeout_ms, 0);
}

/*
 * Stops the timer (it will not fire any more) and closes its handle; once
 * libuv has closed it, calls on_closed(tm) (may be NULL) and drops the
 * task reference.  The loop's thread; once per sb_uv_timer_start that
 * returned 0 (after an error from uv_timer_start, too).
 */
static inline void sb_uv_timer_close(sb_uv_timer *tm, void (*on_closed)(sb_uv_timer *tm))
{
	tm->on_closed = on_closed;
	uv_close(sb__uv_handle(&tm->handle), sb__uv_timer_closed);
}

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_UV_H */
