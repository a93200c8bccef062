/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Time: sleep futures (the per-executor timer list) and the timeout
 * combinator.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <errno.h>
#include <time.h>

uint64_t sb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SB_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ timers */

static void timer_insert(struct sb_executor_impl *impl, sb_sleep *s)
{
	/* From the tail: timers of one duration arrive in deadline order. */
	sb_sleep *p = impl->t_tail;
	while (p && p->deadline > s->deadline)
		p = p->prev;
	s->prev = p;
	s->next = p ? p->next : impl->t_head;
	if (s->next)
		s->next->prev = s;
	else
		impl->t_tail = s;
	if (p)
		p->next = s;
	else
		impl->t_head = s;
}

static void timer_unlink(struct sb_executor_impl *impl, sb_sleep *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		impl->t_head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		impl->t_tail = s->prev;
	s->prev = s->next = NULL;
}

/*
 * An armed timer keeps a floating task on this thread (the timer list is
 * ours alone).  Pinned when it is linked, unpinned after the last touch of
 * the sleep by this thread.
 */
static void timer_pin(struct sb_executor_impl *impl, sb_sleep *s)
{
	sb_task *t = impl->current;
	if (!t || !t->group)
		return;
	s->pinned = t;
	/* relaxed: the poll we are in ends with a release CAS on the task's
	 * state, which any waker that could move the task acquires first. */
	atomic_fetch_add_explicit(&t->pins, 1, memory_order_relaxed);
}

static void timer_unpin(sb_sleep *s)
{
	sb_task *t = s->pinned;
	if (!t)
		return;
	s->pinned = NULL;
	/* release: our last touches of the sleep happen-before the poll on the
	 * thread of a waker that sees 0 (its acquire load) and moves the task. */
	atomic_fetch_sub_explicit(&t->pins, 1, memory_order_release);
}

void sb__timers_fire(struct sb_executor_impl *impl, uint64_t now)
{
	sb_sleep *s;
	while ((s = impl->t_head) && s->deadline <= now) {
		timer_unlink(impl, s);
		s->state = SLEEP_FIRED;
		sb_waker w = s->waker;
		s->waker = (sb_waker){ NULL, NULL };
		timer_unpin(s);
		sb_waker_wake(w);
	}
}

void sb__timers_detach_all(struct sb_executor_impl *impl)
{
	sb_sleep *s;
	while ((s = impl->t_head)) {
		timer_unlink(impl, s);
		s->state = SLEEP_FIRED;
		sb_waker w = s->waker;
		s->waker = (sb_waker){ NULL, NULL };
		timer_unpin(s);
		sb_waker_drop(w);
	}
}

void sb_sleep_until_init(sb_sleep *s, uint64_t deadline_ns)
{
	s->prev = s->next = NULL;
	s->deadline = deadline_ns;
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
	if (s->state == SLEEP_FIRED) {
		s->state = SLEEP_DONE;
		return 0;
	}
	sb_executor *ex = sb__exec_current;
	if (s->state == SLEEP_LINKED && s->exec != ex)
		return -EXDEV;
	if (sb_now_ns() >= s->deadline) {
		if (s->state == SLEEP_LINKED) {
			timer_unlink(ex->impl, s);
			sb_waker_drop(s->waker);
			s->waker = (sb_waker){ NULL, NULL };
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
	timer_insert(ex->impl, s);
	timer_pin(ex->impl, s);
	return SB_PENDING;
}

void sb_sleep_cancel(sb_sleep *s)
{
	if (s->state == SLEEP_LINKED) {
		timer_unlink(s->exec->impl, s);
		sb_waker_drop(s->waker);
		s->waker = (sb_waker){ NULL, NULL };
		timer_unpin(s);
	}
	s->state = SLEEP_DONE;
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
		return t->deadline.status;
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
	sb_deadline_cancel(&t->deadline);
	sb_sleep_cancel(&t->sleep);
}
