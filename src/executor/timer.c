/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Time: sleep futures (on the per-executor timer heap, timer_heap.h) and
 * the timeout combinator.  The clock is the core's sb_now_ns.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include "../future_ops.h"

#include <errno.h>

/* ------------------------------------------------------------ timers */

/* An armed timer keeps a floating task on this thread (the scheduler's pin). */
static void timer_arm(struct sb_executor_impl *impl, sb_sleep *s)
{
	timer_heap_insert(&impl->timers, s);
	s->pinned = sb__sched_pin_current(impl);
}

/* After our last touch of the sleep. */
static void timer_unpin(sb_sleep *s)
{
	sb_task *t = s->pinned;
	if (!t)
		return;
	s->pinned = NULL;
	sb__sched_unpin(t);
}

/* Unlinks an armed timer and hands back its waker. */
static sb_waker timer_disarm(struct sb_executor_impl *impl, sb_sleep *s)
{
	timer_heap_remove(&impl->timers, s);
	sb_waker w = s->waker;
	s->waker = (sb_waker){ NULL, NULL };
	return w;
}

void sb__timers_fire(struct sb_executor_impl *impl, uint64_t now)
{
	sb_sleep *s;
	while ((s = timer_heap_min(&impl->timers)) && s->deadline <= now) {
		sb_waker w = timer_disarm(impl, s);
		s->state = SLEEP_FIRED;
		timer_unpin(s);
		sb_waker_wake(w);
	}
}

void sb__timers_detach_all(struct sb_executor_impl *impl)
{
	sb_sleep *s;
	while ((s = timer_heap_min(&impl->timers))) {
		sb_waker w = timer_disarm(impl, s);
		s->state = SLEEP_FIRED;
		timer_unpin(s);
		sb_waker_drop(w);
	}
}

void sb_sleep_until_init(sb_sleep *s, uint64_t deadline_ns)
{
	s->parent = s->left = s->right = NULL;
	s->deadline = deadline_ns;
	s->seq = 0;
	s->waker = (sb_waker){ NULL, NULL };
	s->exec = NULL;
	s->pinned = NULL;
	s->state = SLEEP_IDLE;
}

void sb_sleep_init(sb_sleep *s, uint64_t ns)
{
	uint64_t now = sb_now_ns();
	sb_sleep_until_init(s, ns > UINT64_MAX - now ? UINT64_MAX : now + ns);
}

int sb_sleep_poll(sb_sleep *s, const sb_waker *w)
{
	if (s->state == SLEEP_DONE)
		return 0;
	if (s->state == SLEEP_CANCELLED)
		return -ECANCELED;
	if (s->state == SLEEP_FIRED) {
		s->state = SLEEP_DONE;
		return 0;
	}
	sb_executor *ex = exec_current();
	if (s->state == SLEEP_LINKED && s->exec != ex)
		return -EXDEV;
	if (sb_now_ns() >= s->deadline) {
		if (s->state == SLEEP_LINKED) {
			sb_waker_drop(timer_disarm(ex->impl, s));
			timer_unpin(s);
		}
		s->state = SLEEP_DONE;
		return 0;
	}
	if (s->state == SLEEP_LINKED) {
		if (!sb_waker_will_wake(&s->waker, w)) {
			sb_waker nw = sb_waker_clone(w);
			sb_waker_drop(s->waker);
			s->waker = nw;
		}
		return SB_PENDING;
	}
	if (!ex)
		return -EPERM;
	s->exec = ex;
	s->waker = sb_waker_clone(w);
	s->state = SLEEP_LINKED;
	timer_arm(ex->impl, s);
	return SB_PENDING;
}

void sb_sleep_cancel(sb_sleep *s)
{
	if (s->state == SLEEP_LINKED) {
		sb_waker_drop(timer_disarm(s->exec->impl, s));
		timer_unpin(s);
	}
	if (s->state != SLEEP_DONE)
		s->state = SLEEP_CANCELLED;
}

/* ------------------------------------------------------------ timeout */

/* The timeout is an sb_deadline (src/deadline.c) that this sleep expires. */

void sb_timeout_until_init(sb_timeout *t, void *inner, const sb_future_ops *ops,
			   uint64_t deadline_ns)
{
	sb_sleep_until_init(&t->sleep, deadline_ns);
	sb_deadline_init(&t->deadline, inner, ops);
}

void sb_timeout_init(sb_timeout *t, void *inner, const sb_future_ops *ops, uint64_t ns)
{
	sb_sleep_init(&t->sleep, ns);
	sb_deadline_init(&t->deadline, inner, ops);
}

/* Polls the sleep; once it is over (or cannot run here) expires the deadline. */
static void timeout_check_sleep(sb_timeout *t, const sb_waker *w)
{
	int r = sb_sleep_poll(&t->sleep, w);
	if (r != SB_PENDING)
		sb_deadline_expire_with(&t->deadline, r == 0 ? -ETIMEDOUT : r);
}

int sb_timeout_poll(sb_timeout *t, const sb_waker *w)
{
	if (t->deadline.status != SB_PENDING)
		return sb_future_done_result(t->deadline.status, t->deadline.ops);
	/* An armed timer is looked at first, so that one poll of inner settles
	 * an expiry; the first poll tries inner before it arms anything. */
	bool armed = t->sleep.state != SLEEP_IDLE;
	if (armed)
		timeout_check_sleep(t, w);
	int r = sb_deadline_poll(&t->deadline, w);
	if (r != SB_PENDING) {
		sb_sleep_cancel(&t->sleep);
		return r;
	}
	if (armed)
		return SB_PENDING;
	timeout_check_sleep(t, w);
	if (!sb_deadline_is_expired(&t->deadline))
		return SB_PENDING;
	/* Already past the deadline at the first poll: inner once more. */
	r = sb_deadline_poll(&t->deadline, w);
	sb_sleep_cancel(&t->sleep);
	return r;
}

void sb_timeout_cancel(sb_timeout *t)
{
	if (t->deadline.ops == NULL)
		return; /* never initialised: nothing to undo */
	sb_deadline_cancel(&t->deadline);
	sb_sleep_cancel(&t->sleep);
}
