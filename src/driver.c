/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/driver.h>

#include <errno.h>
#include <stddef.h>
#include <time.h>

#include <syncband/blocking.h>

#include "clock.h"
#include "futex.h"

/*
 * The doorbell word:
 *
 *   bit 0  BELL_RUNG      the loop rang (a push while the driver was not
 *                         running its tasks) or the driver was closed
 *   bit 1  BELL_SLEEPING  the driver is (about to be) asleep on the futex
 *   bit 2  BELL_CLOSED    sb_driver_close was called
 *
 * Ringing is one RMW that sets RUNG, plus a futex wake only when that RMW
 * found SLEEPING: a driver that is running its tasks costs a ring no system
 * call.  The driver clears RUNG (and SLEEPING) before each run, as loop.h
 * asks, and sleeps only through a CAS that sets SLEEPING on a word without
 * RUNG; both sides work on the one word, so its modification order decides:
 *
 *   driver                                  ringer (any thread)
 *   ------                                  ------
 *   fetch_and(~(RUNG|SLEEPING))             push onto the loop's inbox
 *   sb_loop_run, fire due timers            fetch_or(RUNG): old
 *   CAS(v -> v|SLEEPING), v without RUNG    if old had SLEEPING: futex_wake
 *   futex_wait(word, v|SLEEPING)
 *
 * A ring before the CAS makes it fail (the driver runs again); after it,
 * the ringer sees SLEEPING and wakes, and a futex_wait that has not started
 * yet returns at once, the word having changed.  The ringer's push comes
 * before its RMW (release), and the driver's clear reads that RMW or a later
 * one (acquire), so the run after it takes the push.
 *
 * Close sets CLOSED and RUNG in its single RMW, after sb_loop_close.  The
 * driver returns only after seeing CLOSED, so the closer's last touch of the
 * driver's memory is that RMW (its futex wake after it only hashes the
 * address, futex.h), and the loop's close happens-before the driver's
 * sb_loop_idle, which makes an idle answer final (loop.h).
 */
#define BELL_RUNG 1u
#define BELL_SLEEPING 2u
#define BELL_CLOSED 4u

static void driver_ring(void *ctx)
{
	sb_driver *d = ctx;
	/* release: the push before this ring is taken by the run after the
	 * driver's acquire clear reads this RMW (or a later one). */
	uint32_t old = atomic_fetch_or_explicit(&d->bell, BELL_RUNG, memory_order_release);
	if (old & BELL_SLEEPING)
		sb_futex_wake(&d->bell, 1);
}

void sb_driver_init(sb_driver *d)
{
	sb_loop_init(&d->loop, driver_ring, d);
	atomic_init(&d->bell, 0);
	d->timers = NULL;
}

sb_loop *sb_driver_loop(sb_driver *d)
{
	return &d->loop;
}

int sb_driver_spawn(sb_driver *d, sb_loop_task *t)
{
	return sb_loop_spawn(&d->loop, t);
}

void sb_driver_close(sb_driver *d)
{
	sb_loop_close(&d->loop);
	/* release: the loop's close (and what the caller did before) happens-
	 * before the driver's return, whose clear reads this RMW (acquire).
	 * The last touch of `d`: the driver may return and be freed after it. */
	uint32_t old = atomic_fetch_or_explicit(&d->bell, BELL_RUNG | BELL_CLOSED,
						memory_order_release);
	if (old & BELL_SLEEPING)
		sb_futex_wake(&d->bell, 1);
}

/* ------------------------------------------------------------ timers */

void sb_driver_timer_init(sb_driver_timer *tm, sb_deadline *deadline, sb_loop_task *task)
{
	*tm = (sb_driver_timer){ .deadline = deadline, .task = task };
}

void sb_driver_timer_init_callback(sb_driver_timer *tm, sb_driver_timer_fn fn)
{
	*tm = (sb_driver_timer){ .fn = fn };
}

bool sb_driver_timer_is_armed(const sb_driver_timer *tm)
{
	return tm->driver != NULL;
}

static uint64_t due_after(uint64_t timeout_ns)
{
	uint64_t now = sb__clock_now_ns();
	return timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
}

/* Links `tm` behind every timer due no later: equal due times keep order. */
static void timer_insert(sb_driver *d, sb_driver_timer *tm)
{
	sb_driver_timer *prev = NULL, *next = d->timers;
	while (next && next->due_ns <= tm->due_ns) {
		prev = next;
		next = next->next;
	}
	tm->prev = prev;
	tm->next = next;
	if (next)
		next->prev = tm;
	if (prev)
		prev->next = tm;
	else
		d->timers = tm;
	tm->driver = d;
}

static void timer_unlink(sb_driver_timer *tm)
{
	sb_driver *d = tm->driver;
	if (tm->prev)
		tm->prev->next = tm->next;
	else
		d->timers = tm->next;
	if (tm->next)
		tm->next->prev = tm->prev;
	tm->prev = tm->next = NULL;
	tm->driver = NULL;
}

int sb_driver_timer_start(sb_driver *d, sb_driver_timer *tm, uint64_t timeout_ns)
{
	if (!tm->deadline && !tm->task && !tm->fn)
		return -EINVAL;
	if (tm->driver)
		return -EBUSY;
	if (tm->task && sb_loop_task_ref(tm->task) != 0)
		return -EINVAL;
	tm->due_ns = due_after(timeout_ns);
	timer_insert(d, tm);
	return 0;
}

bool sb_driver_timer_stop(sb_driver_timer *tm)
{
	if (!tm->driver)
		return false;
	timer_unlink(tm);
	if (tm->task)
		sb_loop_task_unref(tm->task);
	return true;
}

/* Fires an unlinked timer; touches it no more once its task or callback
 * may have reused or freed it. */
static void timer_fire(sb_driver_timer *tm)
{
	sb_loop_task *task = tm->task;
	sb_driver_timer_fn fn = tm->fn;
	if (tm->deadline)
		sb_deadline_expire(tm->deadline);
	if (task) {
		sb_loop_wake(task);
		sb_loop_task_unref(task); /* its release runs in a later sb_loop_run */
	}
	if (fn)
		fn(tm);
}

/*
 * Fires the timers due now, soonest first, and returns when the next one is
 * due (UINT64_MAX: none).  Only as many as were due on entry: a callback
 * that re-arms its timer for "now" does not keep this pass going.
 */
static uint64_t timers_fire_due(sb_driver *d)
{
	if (!d->timers)
		return UINT64_MAX;
	uint64_t now = sb__clock_now_ns();
	size_t due = 0;
	for (sb_driver_timer *tm = d->timers; tm && tm->due_ns <= now; tm = tm->next)
		due++;
	for (; due > 0 && d->timers && d->timers->due_ns <= now; due--) {
		sb_driver_timer *tm = d->timers;
		timer_unlink(tm);
		timer_fire(tm);
	}
	return d->timers ? d->timers->due_ns : UINT64_MAX;
}

/* ------------------------------------------------------------ running */

/* Sleeps until rung or `due_ns` (UINT64_MAX: no limit); returns at once if
 * rung since the last clear or already due. */
static void driver_sleep(sb_driver *d, uint64_t due_ns)
{
	struct timespec rel, *limit = NULL;
	if (due_ns != UINT64_MAX) {
		uint64_t now = sb__clock_now_ns();
		if (due_ns <= now)
			return;
		uint64_t left = due_ns - now;
		rel = (struct timespec){ (time_t)(left / SB_NSEC_PER_SEC),
					 (long)(left % SB_NSEC_PER_SEC) };
		limit = &rel;
	}
	/* relaxed: the CAS below decides; a stale value only makes it fail. */
	uint32_t v = atomic_load_explicit(&d->bell, memory_order_relaxed);
	if (v & BELL_RUNG)
		return;
	/* relaxed: SLEEPING only asks ringers for a futex wake; the word's
	 * modification order decides who comes first (see above), and the
	 * clear after waking is what orders the ringers' pushes before the run. */
	if (!atomic_compare_exchange_strong_explicit(&d->bell, &v, v | BELL_SLEEPING,
						     memory_order_relaxed, memory_order_relaxed))
		return;
	sb_futex_wait(&d->bell, v | BELL_SLEEPING, limit);
}

int sb_driver_run(sb_driver *d)
{
	if (d->loop.ring != driver_ring || d->loop.ring_ctx != d)
		return -EINVAL;
	for (;;) {
		/* acquire: pairs with the release RMW of every ring and close this
		 * clear reads, so the run below takes their pushes and sees the
		 * loop's close.  Before the run, as loop.h asks. */
		uint32_t bell = atomic_fetch_and_explicit(&d->bell, ~(BELL_RUNG | BELL_SLEEPING),
							  memory_order_acquire);
		/* Out of budget, the loop rings itself: the sleep below returns. */
		(void)sb_loop_run(&d->loop, SB_LOOP_BUDGET, NULL);
		uint64_t next = timers_fire_due(d);
		if ((bell & BELL_CLOSED) && !d->timers && sb_loop_idle(&d->loop))
			return 0;
		driver_sleep(d, next);
	}
}
