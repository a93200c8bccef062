/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The soak's awaiting: a task drives the future it waits on by a plan
 * picked at random (wait, cancel at once, cancel after a few yields, cancel
 * when woken but before polling again), maybe under a random deadline, and
 * counts what it saw; and holds what it got for a few yields.
 */
#include <errno.h>

#include "soak.h"

/* Deadlines: mostly short enough to fire often, sometimes a few ms. */
static uint64_t pick_deadline(soak_task *t)
{
	unsigned r = below(t, 10);
	if (r < 4)
		return below(t, 20000);                              /* 0-20 us */
	if (r < 8)
		return 20000 + below(t, 180000);                     /* 20-200 us */
	return SB_NSEC_PER_MSEC + below(t, 4 * SB_NSEC_PER_MSEC);   /* 1-5 ms */
}

/* ------------------------------------------------------------ awaiting */

/*
 * White-box, for the statistics and one check: the node's `remaining`
 * (src/waitq.h): 0 granted and detached, SIZE_MAX closed (or notified by
 * notify_all), else what is still owed (for a condvar's queue, a sequence
 * number).  Only read while the future is pending, before its cancel.
 */
size_t peek_remaining(const sb_waiter *node)
{
	/* acquire: pairs with the detaching store, so a 0 shows us the grant's
	 * cause (the phaser relies on seeing the set that released it). */
	return atomic_load_explicit((SB_ATOMIC(size_t) *)&node->remaining, memory_order_acquire);
}

/* The wakes (by value) of the task's clones so far: a grant or notification. */
static long fw_wakes(soak_task *t)
{
	return atomic_load(&t->fw.woken);
}

/*
 * Starts awaiting `fut` (whose queue node is `node`; `permits` for a
 * semaphore acquire, else 0).  ANY_PLAN: pick one at random.
 */
void aw_start(soak_task *t, void *fut, const sb_future_ops *ops, const sb_waiter *node,
		     size_t permits, int plan, enum timing timing)
{
	awaiter *a = &t->aw;
	a->fut = fut;
	a->ops = ops;
	a->node = node;
	a->permits = permits;
	a->saw_partial = false;
	a->cancelled_granted = false;
	a->wakes_seen = 0;
	a->wake_target = 1 + (t->kind == K_PROD || t->kind == K_CONS || t->kind == K_HAND
				      ? (int)below(t, 2) : 0);
	a->yields = 1 + (int)below(t, 3);
	if (plan < 0) {
		unsigned r = below(t, 100);
		plan = r < 55 ? PLAN_WAIT : r < 67 ? PLAN_CANCEL_NOW : r < 83 ? PLAN_CANCEL_LATER
									: PLAN_CANCEL_ON_WAKE;
	}
	a->plan = plan;
	a->timed = timing == DEADLINE || (timing == MAYBE_DEADLINE && below(t, 100) < 22);
	if (a->timed)
		sb_timeout_init(&a->to, fut, ops, pick_deadline(t));
	stat_add(t, (enum stat)(ST_PLAN0 + plan), 1);
	if (a->timed)
		stat_add(t, ST_TIMED, 1);
	aw_set_state(t, AW_IDLE);
}

/* Locks `m` through t->lock, with a random plan and maybe a deadline. */
void await_lock(soak_task *t, sb_mutex *m)
{
	sb_mutex_lock_init(&t->lock, m);
	aw_start(t, &t->lock, &sb_mutex_lock_ops, &t->lock.waiter, 0, ANY_PLAN, MAYBE_DEADLINE);
}

/* Waits on the condvar wait already initialised in t->cw, likewise. */
void await_cv(soak_task *t)
{
	aw_start(t, &t->cw, &sb_condvar_wait_ops, &t->cw.lock.waiter, 0, ANY_PLAN, MAYBE_DEADLINE);
}

/* The first poll comes only after `yields` yields (the future was polled before). */
void aw_delay(soak_task *t, int yields)
{
	aw_set_state(t, AW_DELAY);
	t->aw.yields = yields;
	sb_yield_init(&t->aw.y);
}

static void *aw_target(awaiter *a, const sb_future_ops **ops)
{
	*ops = a->timed ? &sb_timeout_ops : a->ops;
	return a->timed ? (void *)&a->to : a->fut;
}

static int aw_cancel(soak_task *t)
{
	awaiter *a = &t->aw;
	size_t rem = peek_remaining(a->node);
	a->cancelled_granted = rem == 0 || rem == SIZE_MAX;
	if (a->cancelled_granted)
		stat_add(t, ST_CANCEL_GRANTED, 1);
	else if (a->permits && rem < a->permits)
		stat_add(t, ST_CANCEL_PARTIAL, 1);
	else
		stat_add(t, ST_CANCEL_QUEUED, 1);
	const sb_future_ops *ops;
	void *f = aw_target(a, &ops);
	ops->cancel(f);
	aw_set_state(t, AW_DONE);
	return -ECANCELED;
}

/*
 * Drives the awaited future by its plan: SB_PENDING, 0 (completed),
 * -ECANCELED (the plan cancelled it) or -ETIMEDOUT.
 */
int aw_poll(soak_task *t, const sb_waker *w)
{
	awaiter *a = &t->aw;
	const sb_future_ops *ops;
	void *f = aw_target(a, &ops);
	int r;
	if (a->state == AW_DELAY) {
		while (a->yields > 0) {
			if (sb_yield_poll(&a->y, w) == SB_PENDING)
				return SB_PENDING;
			a->yields--;
			sb_yield_init(&a->y);
		}
		aw_set_state(t, AW_IDLE);
		a->yields = 1 + (int)below(t, 3);
	}
	if (a->state == AW_IDLE) {
		long w0 = fw_wakes(t);
		r = ops->poll(f, w);
		if (r != SB_PENDING)
			goto done;
		aw_set_state(t, AW_PENDING);
		a->wakes_at = w0;
		if (a->plan == PLAN_CANCEL_NOW)
			return aw_cancel(t);
		if (a->plan == PLAN_CANCEL_LATER) {
			sb_yield_init(&a->y);
			CHECK(sb_yield_poll(&a->y, w) == SB_PENDING);
		}
		return SB_PENDING;
	}
	CHECK(a->state == AW_PENDING);
	if (a->plan == PLAN_CANCEL_LATER) {
		if (sb_yield_poll(&a->y, w) == SB_PENDING)
			return SB_PENDING;
		if (--a->yields == 0)
			return aw_cancel(t);
		sb_yield_init(&a->y);
		CHECK(sb_yield_poll(&a->y, w) == SB_PENDING);
		return SB_PENDING;
	}
	long now = fw_wakes(t);
	if (a->plan == PLAN_CANCEL_ON_WAKE && now != a->wakes_at) {
		if (++a->wakes_seen >= a->wake_target)
			return aw_cancel(t);
	}
	a->wakes_at = now;
	if (a->timed && a->permits) {
		size_t rem = peek_remaining(a->node);
		if (rem != 0 && rem < a->permits)
			a->saw_partial = true;
	}
	r = ops->poll(f, w);
	if (r == SB_PENDING)
		return r;
done:
	aw_set_state(t, AW_DONE);
	if (r == -ETIMEDOUT) {
		CHECK(a->timed);
		stat_add(t, ST_TIMEOUTS, 1);
		if (a->saw_partial)
			stat_add(t, ST_TIMEOUT_PARTIAL, 1);
		return r;
	}
	CHECK(r == 0);
	return 0;
}

/* Task shutdown: cancels the awaited future if one is pending. */
void aw_abandon(soak_task *t)
{
	awaiter *a = &t->aw;
	if (a->state == AW_PENDING || a->state == AW_DELAY) {
		const sb_future_ops *ops;
		void *f = aw_target(a, &ops);
		ops->cancel(f);
	}
	aw_set_state(t, AW_DONE);
}

/* Holding something: `holds` yields; true when they are over. */
bool hold_done(soak_task *t, const sb_waker *w)
{
	while (t->holds > 0) {
		if (sb_yield_poll(&t->y, w) == SB_PENDING)
			return false;
		t->holds--;
		sb_yield_init(&t->y);
	}
	return true;
}

void start_hold(soak_task *t, unsigned max)
{
	t->holds = (int)below(t, max + 1);
	sb_yield_init(&t->y);
}
