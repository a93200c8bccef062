/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mutex's races (src/mutex.c), explored (model_common.h): unlock, cancel
 * and try_lock racing waiters, in the eventually fair mode (the default:
 * barging, woken waiters, the switch to handoff, the unlock budget, blocked
 * threads) and in strict FIFO; a waker clone that re-enters; the
 * read-modify-writes of its uncontended paths and handoffs.  The fairness
 * over time, with the model's clock moved past the bound, is
 * test_model_mutex.c's.
 */
#include "model_common.h"

typedef struct mutex_ctx {
	sb_mutex m;
	sb_mutex_lock f[2];
	counting_waker w[2];
	int r[2];
	int payload;
} mutex_ctx;

static void mutex_setup_locked_in(void *p, bool fifo)
{
	mutex_ctx *c = p;
	model_mutex_init(&c->m, fifo);
	MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	counting_waker_init(&c->w[0]);
	counting_waker_init(&c->w[1]);
}

/* Eventually fair (the default), and strict FIFO: every scenario runs on both. */
static void mutex_setup_locked(void *p)
{
	mutex_setup_locked_in(p, false);
}
static void mutex_setup_locked_fifo(void *p)
{
	mutex_setup_locked_in(p, true);
}

/*
 * unlock's "no waiters" fast path racing the first waiter, which re-polls
 * once woken; the new holder reads what the last one wrote.
 */
static void mtx1_t0(void *p)
{
	mutex_ctx *c = p;
	sb_mutex_lock_init(&c->f[0], &c->m);
	c->r[0] = poll_lock(&c->f[0], &c->w[0]);
	if (c->r[0] == SB_PENDING && await_wake(&c->w[0]) && poll_lock(&c->f[0], &c->w[0]) == 0)
		consume(&c->payload);
	else if (c->r[0] == 0)
		consume(&c->payload);
}
static void mtx1_t1(void *p)
{
	mutex_ctx *c = p;
	publish(&c->payload);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
}
static void mtx1_check(void *p)
{
	mutex_ctx *c = p;
	if (c->r[0] == SB_PENDING) {
		MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
		MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == 0);
	} else {
		MODEL_CHECK(c->r[0] == 0);
	}
	MODEL_CHECK(sb_mutex_is_locked(&c->m));
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

/* cancel of the head racing the unlock that hands it the mutex. */
static void mutex_queue_two(mutex_ctx *c)
{
	for (int i = 0; i < 2; i++) {
		sb_mutex_lock_init(&c->f[i], &c->m);
		MODEL_CHECK(poll_lock(&c->f[i], &c->w[i]) == SB_PENDING);
	}
}
static void mtx2_setup(void *p)
{
	mutex_setup_locked(p);
	mutex_queue_two(p);
}
static void mtx2_setup_fifo(void *p)
{
	mutex_setup_locked_fifo(p);
	mutex_queue_two(p);
}
static void mtx2_t0(void *p)
{
	mutex_ctx *c = p;
	sb_mutex_lock_cancel(&c->f[0]);
}
static void mtx2_check(void *p)
{
	mutex_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_lock(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* unlock racing the cancel of a lone waiter (no queue lock). */
static void mtx3_setup(void *p)
{
	mutex_ctx *c = p;
	mutex_setup_locked(p);
	sb_mutex_lock_init(&c->f[0], &c->m);
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == SB_PENDING);
}
static void mtx3_setup_fifo(void *p)
{
	mutex_ctx *c = p;
	mutex_setup_locked_fifo(p);
	sb_mutex_lock_init(&c->f[0], &c->m);
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == SB_PENDING);
}

/* --- eventually fair mode: barging, woken waiters, the switch to handoff */

/* A barger: takes the mutex if free, and gives it back. */
static void mtx_barger(void *p)
{
	mutex_ctx *c = p;
	c->r[1] = sb_mutex_try_lock(&c->m);
	if (c->r[1] == 0)
		MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
}

/* A lone waiter; unlock (wake it) racing a barger. */
static void mtx4_check(void *p)
{
	mutex_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) >= 1); /* woken; if it lost, woken again */
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

/* Two queued, the first woken: its retry racing a barger. */
static void mtx5_setup(void *p)
{
	mtx2_setup(p);
	mutex_ctx *c = p;
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
}
static void mtx5_t0(void *p)
{
	mutex_ctx *c = p;
	c->r[0] = poll_lock(&c->f[0], &c->w[0]);
}
/* After the woken head f[0] retried (r[0]): it holds the mutex. */
static void mutex_woken_head_took_it(mutex_ctx *c)
{
	if (c->r[0] == SB_PENDING) {
		/* lost to the holder: re-armed at the front, woken by its unlock */
		MODEL_CHECK(atomic_load(&c->w[0].wakes) == 2);
		MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == 0);
	} else {
		MODEL_CHECK(c->r[0] == 0);
	}
}
/* f[0] holding the mutex, f[1] queued behind it and never woken: f[1] gets
 * it next, and then nothing is left. */
static void mutex_second_takes_it_last(mutex_ctx *c)
{
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 0); /* one woken at a time */
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_lock(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}
static void mtx5_check(void *p)
{
	mutex_woken_head_took_it(p);
	mutex_second_takes_it_last(p);
}

/* The first woken waiter cancelled, racing a barger: the wake is passed on. */
static void mtx6_t0(void *p)
{
	mutex_ctx *c = p;
	sb_mutex_lock_cancel(&c->f[0]);
}
static void mtx6_check(void *p)
{
	mutex_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_lock(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/*
 * The holder (the setup) gives the mutex back and takes it again `n` times,
 * as bargers do.  An unlock compares a passed head with the bound when it is
 * first passed and at every 16th unlock after (src/mutex.c), so a setup
 * barges until the scenario's unlock is one that checks.
 */
static void mutex_barge(mutex_ctx *c, int n)
{
	for (int i = 0; i < n; i++) {
		MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
		MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	}
}

/* The first waiter lost to bargers more than the bound ago: the holder's
 * unlock (hand-off) racing a barger, which must never get in. */
static void mtx7_setup(void *p)
{
	mutex_ctx *c = p;
	mtx5_setup(p); /* the first unlock that finds f[0] */
	MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == SB_PENDING); /* lost: timed */
	mutex_barge(c, 16); /* wakes f[0] again, and 15 unlocks that do not */
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == SB_PENDING); /* lost again */
	model_now += SB_MUTEX_FAIRNESS_BOUND_NS + 1;
}
/* The oldest waiter, woken and passed by a barger, queued more than the
 * bound ago and has not tried again: the holder's unlock hands it the mutex (it finds
 * it granted, with what the holder wrote) racing its own retry. */
static void mtx10_setup(void *p)
{
	mutex_ctx *c = p;
	mtx3_setup(p);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0); /* wakes f[0] */
	MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0); /* f[0] passed */
	MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	mutex_barge(c, 15); /* the scenario's unlock is the 16th after the pass */
	model_now += SB_MUTEX_FAIRNESS_BOUND_NS + 1;
}
static void mtx10_t1(void *p)
{
	mutex_ctx *c = p;
	c->r[0] = poll_lock(&c->f[0], &c->w[0]);
	if (c->r[0] == 0)
		consume(&c->payload);
}
static void mtx10_check(void *p)
{
	mutex_ctx *c = p;
	if (c->r[0] == SB_PENDING) /* tried first, lost to the holder, handed it after */
		MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

static void mtx7_check(void *p)
{
	mutex_ctx *c = p;
	MODEL_CHECK(c->r[1] == -EBUSY);
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 3);
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0); /* the phase hands on to f[1] */
	MODEL_CHECK(poll_lock(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}
/* Two queued; a barger passed the first, timing both, more than the bound
 * ago; the first got in by its retry.  The holder's unlock hands the mutex
 * to the second, never woken, racing a barger that must never get in. */
static void mtx11_setup(void *p)
{
	mutex_ctx *c = p;
	mtx5_setup(p); /* wakes f[0] */
	MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == SB_PENDING); /* lost: both timed */
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0); /* within the bound: wakes f[0] */
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == 0); /* holds it now */
	model_now += SB_MUTEX_FAIRNESS_BOUND_NS + 1;
}
static void mtx11_check(void *p)
{
	mutex_ctx *c = p;
	MODEL_CHECK(c->r[1] == -EBUSY);
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_lock(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/*
 * A handoff phase down to its last waiter: f[0] and f[1] passed more than
 * the bound ago, the phase handed f[0] the mutex (the setup holds it through
 * f[0]) and covers f[1].  The holder's unlock, the phase's last handoff,
 * which times the waiters that queued during the phase, races a newcomer
 * (f[0] reused) that queues and cancels.
 */
static void mtx14_setup(void *p)
{
	mutex_ctx *c = p;
	mtx7_setup(p);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0); /* the phase: to f[0], covering f[1] */
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == 0);
}
static void mtx14_t1(void *p)
{
	mutex_ctx *c = p;
	sb_mutex_lock_init(&c->f[0], &c->m);
	c->r[1] = poll_lock(&c->f[0], &c->w[0]);
	sb_mutex_lock_cancel(&c->f[0]);
}
static void mtx14_check(void *p)
{
	mutex_ctx *c = p;
	MODEL_CHECK(c->r[1] == SB_PENDING); /* handed over, the mutex never looked free */
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_lock(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/*
 * A woken head that bargers pass (first pass, so timed) and a barger holding
 * the mutex again: its unlock is one of those the unlock budget lets by
 * without the queue lock (src/mutex.c).  Raced by the head's retry, and by
 * its cancel.
 */
static bool mutex_word_has_budget(mutex_ctx *c)
{
	size_t high = atomic_load(&c->m.q.state) >> SB_WAITQ_LONE_SHIFT;
	return high >= 1 && high <= 15;
}
/* The setup, the mutex free and its head woken: passes the head (the first
 * pass, timing the queue) and takes the mutex again, within the budget. */
static void mutex_hold_within_budget(mutex_ctx *c)
{
	MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0); /* the first pass */
	MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	MODEL_CHECK(mutex_word_has_budget(c));
}
static void mtx15_setup(void *p)
{
	mtx5_setup(p); /* f[0] woken, f[1] behind it, the mutex free */
	mutex_hold_within_budget(p);
}
static void mtx15_check(void *p)
{
	mutex_ctx *c = p;
	/* (a head that lost its retry re-armed: the unlock took the lock to wake it) */
	mutex_woken_head_took_it(c);
	MODEL_CHECK(!mutex_word_has_budget(c)); /* it left with its budget */
	mutex_second_takes_it_last(c);
}

/*
 * The same budget, a lone waiter woken and passed (so adopted into the
 * queue and timed): the holder's unlock within it racing a newcomer's first
 * poll, which takes the mutex if the unlock came first (and reads what the
 * holder wrote) or queues behind the woken head, the queue lock it takes
 * for that keeping the budget.
 */
static void mtx16_setup(void *p)
{
	mutex_ctx *c = p;
	mtx3_setup(p); /* f[0] waits alone */
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0); /* wakes it, into the queue */
	mutex_hold_within_budget(c);
}
static void mtx16_check(void *p)
{
	mutex_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1); /* the budget's unlocks wake nobody */
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 0);
	if (c->r[1] == 0)
		MODEL_CHECK(sb_mutex_unlock(&c->m) == 0); /* the newcomer barged */
	else
		MODEL_CHECK(c->r[1] == SB_PENDING);
	MODEL_CHECK(mutex_word_has_budget(c));
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == 0); /* the head's retry takes it */
	MODEL_CHECK(!mutex_word_has_budget(c)); /* and leaves with the budget */
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	if (c->r[1] == SB_PENDING) {
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
		MODEL_CHECK(poll_lock(&c->f[1], &c->w[1]) == 0);
		MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	}
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

static void mtx3_check(void *p)
{
	mutex_ctx *c = p;
	/* Withdrawn, then unlocked; or handed the mutex and passed it on. */
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

/*
 * unlock racing a first waiter (lone) and a second (which moves the first
 * into the queue): the unlocker wakes a waker that another thread cloned.
 */
static void mtx8_t2(void *p)
{
	mutex_ctx *c = p;
	sb_mutex_lock_init(&c->f[1], &c->m);
	c->r[1] = poll_lock(&c->f[1], &c->w[1]);
	if (c->r[1] == 0)
		consume(&c->payload);
}
static void mtx8_check(void *p)
{
	mutex_ctx *c = p;
	/* One unlock: at most one wake.  FIFO hands the mutex to the woken
	 * waiter; a fair unlock leaves it free for whoever polls first, which
	 * may be the other (a barger), so the woken one may lose and re-arm. */
	int holders = 0;
	for (int i = 0; i < 2; i++)
		holders += c->r[i] == 0;
	for (int i = 0; i < 2; i++) {
		MODEL_CHECK(atomic_load(&c->w[i].wakes) <= 1);
		if (c->r[i] != 0 && atomic_load(&c->w[i].wakes) == 1 && !holders &&
		    poll_lock(&c->f[i], &c->w[i]) == 0)
			holders++;
	}
	for (int i = 0; i < 2; i++)
		if (poll_lock(&c->f[i], &c->w[i]) != 0)
			sb_mutex_lock_cancel(&c->f[i]);
	MODEL_CHECK(holders == 1);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* unlock racing a lone waiter's cancel and a try_lock: the unlock's inline
 * CAS fails on the lone form, its slow path may find the waiter withdrawn. */
static void mtx9_t2(void *p)
{
	mutex_ctx *c = p;
	c->r[1] = sb_mutex_try_lock(&c->m);
	if (c->r[1] == 0) /* unlocked by mtx1_t1 (or passed on by the cancel) */
		consume(&c->payload);
}
static void mtx9_check(void *p)
{
	mutex_ctx *c = p;
	if (c->r[1] == 0)
		MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

/*
 * Eventually fair, a thread blocked in sb_mutex_lock_blocking: it waits
 * alone, an unlock releases the mutex and wakes it (queued, at the front),
 * and a barger may take the mutex before it retries; it then waits again at
 * the front.  (The model-check build has no spin before queueing.)  The
 * critical sections write one plain field, so the explorer's race check
 * proves them exclusive.
 */
static void mutex_critical_section(mutex_ctx *c)
{
	c->r[0]++;
	MODEL_PLAIN_WRITE(&c->r[0]);
}
/* The blocked thread, holding the mutex: reads what the holder published. */
static void mutex_blocked_thread_holds(mutex_ctx *c)
{
	consume(&c->payload);
	mutex_critical_section(c);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
}
/* The holder publishes and unlocks, then barges once: true if it got in. */
static bool mutex_unlock_then_barge(mutex_ctx *c)
{
	publish(&c->payload);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	return sb_mutex_try_lock(&c->m) == 0;
}
static void mtx12_t0(void *p)
{
	mutex_ctx *c = p;
	MODEL_CHECK(sb_mutex_lock_blocking(&c->m, SB_TIMEOUT_INFINITE) == 0);
	mutex_blocked_thread_holds(c);
}
static void mtx12_t1(void *p)
{
	mutex_ctx *c = p;
	if (!mutex_unlock_then_barge(c))
		return;
	mutex_critical_section(c);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
}
static void mtx12_check(void *p)
{
	mutex_ctx *c = p;
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
}

/* A task queues behind the woken thread: the thread's retry, lost, keeps it
 * at the front; or the thread gives up (timeout 0) woken and passes the wake
 * on.  Either way the task is woken once and gets the mutex. */
static void mtx13_t0(void *p)
{
	mutex_ctx *c = p;
	c->r[1] = sb_mutex_lock_blocking(&c->m, 0);
	if (c->r[1] != 0) {
		MODEL_CHECK(c->r[1] == -ETIMEDOUT);
		return;
	}
	mutex_blocked_thread_holds(c);
}
/* The barger, holding the mutex, queues a task behind the woken thread. */
static void mtx13_t1(void *p)
{
	mutex_ctx *c = p;
	if (!mutex_unlock_then_barge(c))
		return;
	sb_mutex_lock_init(&c->f[1], &c->m);
	MODEL_CHECK(poll_lock(&c->f[1], &c->w[1]) == SB_PENDING); /* we hold it */
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
}
static void mtx13_check(void *p)
{
	mutex_ctx *c = p;
	if (c->f[1].mutex) {
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
		MODEL_CHECK(poll_lock(&c->f[1], &c->w[1]) == 0);
		MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	}
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[1].live) == 0);
}

/* ------------------------------------------- waker clones that re-enter */

/*
 * A clone that re-enters the primitive would deadlock if it ran under the
 * queue lock; the scheduler reports a deadlock when every thread blocks.
 */
static void reenter_unlock(void *p)
{
	mutex_ctx *c = p;
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
}
static void rc_mutex_setup(void *p)
{
	mutex_ctx *c = p;
	mutex_setup_locked(p);
	sb_mutex_lock_init(&c->f[0], &c->m);
	MODEL_CHECK(poll_lock(&c->f[0], &c->w[0]) == SB_PENDING); /* lone */
	c->w[1].on_clone = reenter_unlock; /* the holder's unlock, from a clone */
	c->w[1].hook_arg = c;
}
static void rc_mutex_t0(void *p)
{
	mutex_ctx *c = p;
	sb_mutex_lock_init(&c->f[1], &c->m);
	c->r[1] = poll_lock(&c->f[1], &c->w[1]);
}
static void rc_mutex_t1(void *p)
{
	mutex_ctx *c = p;
	sb_mutex_lock_cancel(&c->f[0]);
}
static void rc_mutex_check(void *p)
{
	mutex_ctx *c = p;
	/* f[0] gave up whatever it was handed: f[1] ends holding the mutex */
	if (c->r[1] == SB_PENDING) {
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
		MODEL_CHECK(poll_lock(&c->f[1], &c->w[1]) == 0);
	} else {
		MODEL_CHECK(c->r[1] == 0);
	}
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* ---------------------------------------------------------------- scenarios */

static const sb_model_scenario scenarios[] = {
	{ "mutex: unlock racing the first waiter", 2, sizeof(mutex_ctx), mutex_setup_locked,
	  { mtx1_t0, mtx1_t1 }, mtx1_check },
	{ "mutex: cancel of the head racing the handoff", 2, sizeof(mutex_ctx), mtx2_setup,
	  { mtx2_t0, mtx1_t1 }, mtx2_check },
	{ "mutex: cancel of a lone waiter racing unlock", 2, sizeof(mutex_ctx), mtx3_setup,
	  { mtx2_t0, mtx1_t1 }, mtx3_check },
	{ "fifo mutex: unlock racing the first waiter", 2, sizeof(mutex_ctx),
	  mutex_setup_locked_fifo, { mtx1_t0, mtx1_t1 }, mtx1_check },
	{ "fifo mutex: cancel of the head racing the handoff", 2, sizeof(mutex_ctx),
	  mtx2_setup_fifo, { mtx2_t0, mtx1_t1 }, mtx2_check },
	{ "fifo mutex: cancel of a lone waiter racing unlock", 2, sizeof(mutex_ctx),
	  mtx3_setup_fifo, { mtx2_t0, mtx1_t1 }, mtx3_check },
	{ "fair mutex: a barger racing unlock-and-wake of a lone waiter", 2, sizeof(mutex_ctx),
	  mtx3_setup, { mtx1_t1, mtx_barger }, mtx4_check },
	{ "fair mutex: the woken waiter's retry racing a barger", 2, sizeof(mutex_ctx),
	  mtx5_setup, { mtx5_t0, mtx_barger }, mtx5_check },
	{ "fair mutex: cancel of the woken waiter racing a barger", 2, sizeof(mutex_ctx),
	  mtx5_setup, { mtx6_t0, mtx_barger }, mtx6_check },
	{ "fair mutex: the switch to handoff racing a barger", 2, sizeof(mutex_ctx), mtx7_setup,
	  { mtx1_t1, mtx_barger }, mtx7_check },
	{ "fair mutex: the handoff to a passed woken head racing its retry", 2, sizeof(mutex_ctx),
	  mtx10_setup, { mtx1_t1, mtx10_t1 }, mtx10_check },
	{ "fair mutex: the handoff to a never-woken waiter passed behind the head racing a barger",
	  2, sizeof(mutex_ctx), mtx11_setup, { mtx1_t1, mtx_barger }, mtx11_check },
	{ "fair mutex: a phase's last handoff racing a newcomer's queueing and cancel", 2,
	  sizeof(mutex_ctx), mtx14_setup, { mtx1_t1, mtx14_t1 }, mtx14_check },
	{ "fair mutex: an unlock within the woken head's budget racing its retry", 2,
	  sizeof(mutex_ctx), mtx15_setup, { mtx10_t1, mtx1_t1 }, mtx15_check },
	{ "fair mutex: an unlock within the woken head's budget racing its cancel", 2,
	  sizeof(mutex_ctx), mtx15_setup, { mtx6_t0, mtx1_t1 }, mtx6_check },
	{ "fair mutex: an unlock within the woken head's budget racing a newcomer", 2,
	  sizeof(mutex_ctx), mtx16_setup, { mtx1_t1, mtx8_t2 }, mtx16_check },
	{ "fair mutex: a blocked thread's wake racing a barger", 2, sizeof(mutex_ctx),
	  mutex_setup_locked, { mtx12_t0, mtx12_t1 }, mtx12_check },
	{ "fair mutex: a blocked thread woken, a task queueing and the thread's timeout",
	  2, sizeof(mutex_ctx), mutex_setup_locked, { mtx13_t0, mtx13_t1 }, mtx13_check },
	{ "mutex: unlock racing a lone waiter's cancel and a try_lock", 3, sizeof(mutex_ctx),
	  mtx3_setup, { mtx2_t0, mtx1_t1, mtx9_t2 }, mtx9_check },
	{ "mutex: unlock racing a first and a second waiter", 3, sizeof(mutex_ctx),
	  mutex_setup_locked, { mtx1_t0, mtx1_t1, mtx8_t2 }, mtx8_check },
	{ "fifo mutex: unlock racing a first and a second waiter", 3, sizeof(mutex_ctx),
	  mutex_setup_locked_fifo, { mtx1_t0, mtx1_t1, mtx8_t2 }, mtx8_check },
	{ "mutex: a queued locker whose clone unlocks, racing the lone waiter's cancel", 2,
	  sizeof(mutex_ctx), rc_mutex_setup, { rc_mutex_t0, rc_mutex_t1 }, rc_mutex_check },
};

static model_set set = { scenarios, COUNT(scenarios) };

static void uncontended_paths_cost_one_read_modify_write_and_take_no_lock(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock l;
	sb_mutex_lock_init(&l, &m);
	/* one CAS each: a lock would cost two more */
	assert_int_equal(RMWS(sb_mutex_lock_poll(&l, &noop)), 1);
	assert_int_equal(RMWS(sb_mutex_unlock(&m)), 1);
	assert_int_equal(RMWS(sb_mutex_try_lock(&m)), 1);
	assert_int_equal(RMWS(sb_mutex_unlock(&m)), 1);
}

/*
 * A handoff to a pending future.  A strict FIFO mutex's lone waiter installs
 * its node in the mutex's word with one CAS and unlock claims it with one;
 * the woken future reads its node.  One read-modify-write on each side.
 */
static void a_handoff_costs_one_or_two_read_modify_writes_on_each_side(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_mutex m = SB_MUTEX_INIT_FIFO;
	sb_mutex_lock l;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_init(&l, &m);
	assert_int_equal(RMWS(sb_mutex_lock_poll(&l, &noop)), 1);
	assert_int_equal(RMWS(sb_mutex_unlock(&m)), 1);
	assert_int_equal(RMWS(sb_mutex_lock_poll(&l, &noop)), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);

	/* Eventually fair: unlock takes the queue lock (adopting the lone
	 * waiter), marks it woken and releases; its retry takes the queue lock
	 * with the mutex and leaves the queue. */
	sb_mutex fair = SB_MUTEX_INIT;
	assert_int_equal(sb_mutex_try_lock(&fair), 0);
	sb_mutex_lock_init(&l, &fair);
	assert_int_equal(RMWS(sb_mutex_lock_poll(&l, &noop)), 1);
	assert_int_equal(RMWS(sb_mutex_unlock(&fair)), 2);
	assert_int_equal(RMWS(sb_mutex_lock_poll(&l, &noop)), 2);
	assert_int_equal(sb_mutex_unlock(&fair), 0);
}

/* test_model_mutex_races [RUN-PATTERN [SKIP-PATTERN]]: cmocka's test name filters. */
int main(int argc, char **argv)
{
	model_main_setup(argc, argv);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(every_scenario_holds_over_all_schedules_with_four_preemptions, &set),
		cmocka_unit_test_prestate(every_scenario_holds_over_random_schedules, &set),
		cmocka_unit_test(uncontended_paths_cost_one_read_modify_write_and_take_no_lock),
		cmocka_unit_test(a_handoff_costs_one_or_two_read_modify_writes_on_each_side),
		cmocka_unit_test_prestate(every_scenario_holds_under_the_weak_model_with_bounded_stale_reads, &set),
		cmocka_unit_test_prestate(every_scenario_holds_over_random_schedules_under_the_weak_model, &set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
