/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The soak: every primitive at once, driven by real tasks on a group of
 * executor threads, with random cancellations and random deadlines, and
 * conservation checked at the end.
 *
 *   semaphore         random multi-permit acquires (try, plain, with a
 *                     deadline through sb_timeout), held across yields; the
 *                     number held never exceeds the permits
 *   mutex             a plain counter it protects, against a count of the
 *                     critical sections kept with atomics
 *   condvar           a bounded producer/consumer queue: every item is
 *                     delivered exactly once; and a strict handshake (one
 *                     ticket at a time, dealt with notify_one to takers that
 *                     wait for it and quitters that walk away from their
 *                     waits), where a notification lost by a cancelled wait
 *                     is a hang
 *   manual event      a phaser (a reusable barrier) over two events, each
 *                     phase released by a set that either stays set or is
 *                     reset at once ("pulse": released waits must complete)
 *   auto-reset event  one signal passed from task to task: never two holders,
 *                     every set consumed, the last one still stored
 *
 * Every wait is, at random, waited for, cancelled right after its first
 * poll (before any grant), cancelled after a few yields (with a partial
 * grant, a full one, or none), cancelled when woken but before it is polled
 * again (a grant nobody observed), or given a random deadline (which can
 * fire while a multi-permit acquire is partly granted).  Tasks poll through
 * a counting waker that forwards to the task's own, so every clone the
 * library makes is shown woken or dropped.  At the end a few tasks are left
 * waiting on purpose and the group shutdown must cancel exactly those,
 * handing back what they held.
 *
 * Environment:
 *   SB_SOAK_OPS      primitive operations in total (default 10^6: a few
 *                    seconds; SB_SOAK_OPS=10000000 is the full soak, see
 *                    tests/executor/soak.sh and ./x soak)
 *   SB_SOAK_SEED     the seed of every task's PRNG (default 0x5eed); the
 *                    choices are reproducible, the interleavings are not
 *   SB_SOAK_THREADS  executor threads (default 4)
 *   SB_SOAK_EVENTFD  1: use the eventfd doorbell instead of MSG_RING
 *   SB_SOAK_STALL    seconds without progress that count as a hang (60)
 *
 * An operation is one call that acts on a primitive: a try_*, a future
 * (however often it is polled; a re-registration is a new one), a release,
 * unlock, notify, set or reset.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <syncband/condvar.h>
#include <syncband/event.h>
#include <syncband/executor.h>
#include <syncband/mutex.h>
#include <syncband/semaphore.h>

#include "check.h"
#include "exec_support.h"

#define DEFAULT_OPS 1000000L
#define DEFAULT_SEED UINT64_C(0x5eed)

enum {
	SEM_PERMITS = 6,
	QUEUE_CAP = 4,
	SEM_TASKS = 8,
	MUTEX_TASKS = 6,
	PRODUCERS = 3,
	CONSUMERS = 3,
	DEALERS = 1,
	TAKERS = 2,
	QUITTERS = 4,
	HANDS = TAKERS + QUITTERS,
	PHASERS = 6,
	AUTO_TASKS = 5,
	WORKERS = SEM_TASKS + MUTEX_TASKS + PRODUCERS + CONSUMERS + DEALERS + HANDS + PHASERS +
		  AUTO_TASKS,
};

/* The tasks deliberately left waiting at shutdown. */
enum {
	PEND_SEM_PARTIAL, /* acquire(SEM_PERMITS + 1): holds every permit, owes one */
	PEND_SEM_TIMEOUT, /* acquire(1) behind it, with a deadline an hour away */
	PEND_MUTEX,       /* lock of a mutex the test's main thread holds */
	PEND_CONDVAR,     /* wait on not_empty of the (empty) queue */
	PEND_EVENT,       /* wait on a manual event nobody sets */
	PEND_AUTO,        /* wait on the auto event whose signal main took */
	PENDERS,
};

enum kind { K_SEM, K_MUTEX, K_PROD, K_CONS, K_DEALER, K_HAND, K_PHASE, K_AUTO, K_PEND, KINDS };
static const char *const kind_name[KINDS] = {
	"semaphore", "mutex", "producer", "consumer", "dealer", "hand", "phaser", "auto_event",
	"pending",
};

/* ------------------------------------------------------------ the world */

struct soak {
	uint64_t seed;
	size_t threads;
	sb_executor_group g;

	sb_semaphore sem;
	atomic_int sem_in_use;       /* permits held by completed acquires */

	sb_mutex m;
	long counter;                /* plain: only the mutex orders it */
	atomic_int m_holders;
	atomic_long sections;        /* critical sections completed */

	sb_mutex qm;
	sb_condvar not_empty, not_full;
	long items[QUEUE_CAP];       /* the queue; plain, under qm */
	int q_head, q_count;
	unsigned char *seen;         /* deliveries per item, under qm */
	long total_items, per_producer, per_consumer;
	long popped, popped_sum;     /* under qm */
	atomic_int q_holders;

	sb_mutex hm;                 /* the handshake */
	sb_condvar ticket_cv, taken_cv;
	int slot;                    /* 1: a ticket is on the table; plain, under hm */
	long per_taker;              /* tickets each taker takes */
	long quitter_rounds;         /* waits each quitter walks away from */
	long tickets;                /* dealt, all told */
	atomic_long tickets_taken;
	atomic_int h_holders;

	sb_event ev[2];              /* phase p waits on ev[p & 1] */
	atomic_int arrived[2];
	int mode[2];                 /* KEEP or PULSE for the phase using that slot; plain,
				      * ordered by the phaser's arrivals and sets */
	atomic_long published;       /* the last phase whose set was made */
	long phases;

	sb_auto_event ae;
	atomic_int token_holders;
	atomic_long token_takes, token_sets;

	sb_event gate;               /* never set: PEND_EVENT waits on it */
	sb_semaphore started;        /* penders release one once registered */
};

enum { MODE_KEEP, MODE_PULSE };

/* ------------------------------------------------------------ wakers */

/*
 * A waker that counts what the library does with it and forwards to the
 * task's own waker.  Each clone takes a real reference on the task (so a
 * wake arriving after the task finished is as safe as with the plain task
 * waker), and each wake or drop gives it back.
 */
typedef struct fwd_waker {
	sb_waker task;               /* the task's waker, as given to poll; set on the first poll */
	atomic_long clones, wakes, wake_refs, drops;
} fwd_waker;

static sb_waker fwd_clone(const void *data);
static void fwd_wake(const void *data)
{
	fwd_waker *f = (fwd_waker *)(uintptr_t)data;
	/* Counted before the task can run: the task's re-poll reads `wakes`
	 * (see PLAN_CANCEL_ON_WAKE), and the wake below orders this before it. */
	atomic_fetch_add(&f->wakes, 1);
	sb_waker_wake(f->task);
}
static void fwd_wake_by_ref(const void *data)
{
	fwd_waker *f = (fwd_waker *)(uintptr_t)data;
	atomic_fetch_add(&f->wake_refs, 1);
	sb_waker_wake_by_ref(&f->task);
}
static void fwd_drop(const void *data)
{
	fwd_waker *f = (fwd_waker *)(uintptr_t)data;
	atomic_fetch_add(&f->drops, 1);
	sb_waker_drop(f->task);
}
static const sb_waker_vtable fwd_vtable = { fwd_clone, fwd_wake, fwd_wake_by_ref, fwd_drop };
static sb_waker fwd_clone(const void *data)
{
	fwd_waker *f = (fwd_waker *)(uintptr_t)data;
	sb_waker c = sb_waker_clone(&f->task);
	CHECK(sb_waker_will_wake(&c, &f->task)); /* a task waker's clones are all alike */
	atomic_fetch_add(&f->clones, 1);
	return (sb_waker){ &fwd_vtable, f };
}

/* ------------------------------------------------------------ futures as ops */

static int mutex_lock_poll_fn(void *f, const sb_waker *w)
{
	return sb_mutex_lock_poll(f, w);
}
static void mutex_lock_cancel_fn(void *f)
{
	sb_mutex_lock_cancel(f);
}
static int cv_wait_poll_fn(void *f, const sb_waker *w)
{
	return sb_condvar_wait_poll(f, w);
}
static void cv_wait_cancel_fn(void *f)
{
	sb_condvar_wait_cancel(f);
}
static int event_wait_poll_fn(void *f, const sb_waker *w)
{
	return sb_event_wait_poll(f, w);
}
static void event_wait_cancel_fn(void *f)
{
	sb_event_wait_cancel(f);
}
static int auto_wait_poll_fn(void *f, const sb_waker *w)
{
	return sb_auto_event_wait_poll(f, w);
}
static void auto_wait_cancel_fn(void *f)
{
	sb_auto_event_wait_cancel(f);
}
static const sb_future_ops mutex_lock_ops = { mutex_lock_poll_fn, mutex_lock_cancel_fn };
static const sb_future_ops cv_wait_ops = { cv_wait_poll_fn, cv_wait_cancel_fn };
static const sb_future_ops event_wait_ops = { event_wait_poll_fn, event_wait_cancel_fn };
static const sb_future_ops auto_wait_ops = { auto_wait_poll_fn, auto_wait_cancel_fn };

/* ------------------------------------------------------------ tasks */

/* What the task does with a pending future. */
enum plan {
	PLAN_WAIT,           /* poll until it completes */
	PLAN_CANCEL_NOW,     /* cancel right after the first SB_PENDING */
	PLAN_CANCEL_LATER,   /* yield 1-3 times without polling it, then cancel */
	PLAN_CANCEL_ON_WAKE, /* cancel, without polling, on the 1st (or 2nd) wake */
	PLANS,
};

static const char *const plan_name[PLANS] = { "wait", "cancel_now", "cancel_later",
					      "cancel_on_wake" };

enum aw_state { AW_DELAY, AW_IDLE, AW_PENDING, AW_DONE };
static const char *const aw_state_name[] = { "delay", "idle", "pending", "done" };

/* One future being awaited by a task, with its plan and optional deadline. */
typedef struct awaiter {
	void *fut;
	const sb_future_ops *ops;
	const sb_waiter *node;       /* the future's queue node, for the statistics */
	size_t permits;              /* semaphore acquires: the request; else 0 */
	sb_timeout to;
	bool timed;
	bool saw_partial;            /* a timed acquire was seen partly granted */
	bool cancelled_granted;      /* aw_cancel found it detached (granted) */
	int plan;
	int state;
	int yields;                  /* PLAN_CANCEL_LATER: yields left; AW_DELAY: too */
	int wake_target;             /* PLAN_CANCEL_ON_WAKE: which wake */
	int wakes_seen;
	long wakes_at;
	sb_yield y;
} awaiter;

/*
 * Per-task counters.  Each is written only by the task's owner thread and
 * read by the watchdog and, after the joins, by main: relaxed atomics, so
 * the watchdog's reads are not races.
 */
enum stat {
	ST_OPS,
	ST_DONE,            /* completed units: acquires held, sections, items, phases, signals */
	ST_TRY_FAILED,
	ST_CANCEL_QUEUED,   /* cancelled with nothing granted */
	ST_CANCEL_PARTIAL,  /* cancelled while partly granted (semaphore) */
	ST_CANCEL_GRANTED,  /* cancelled after the grant or notification, before observing it */
	ST_CANCEL_IDLE,     /* a condvar wait cancelled before its first poll */
	ST_TIMEOUTS,
	ST_TIMEOUT_PARTIAL, /* timed out after being seen partly granted */
	ST_PULSES,
	ST_QUITS,           /* handshake rounds that walked away */
	ST_PLAN0,           /* futures started with each plan */
	ST_TIMED = ST_PLAN0 + PLANS,
	STATS,
};

typedef struct soak_task {
	sb_task task;
	struct soak *s;
	int kind;
	int index;
	uint64_t rng;
	long budget;                 /* ops left (semaphore, mutex, auto), items left (queue) */
	int stage;
	atomic_int where;            /* a copy of `stage` for the watchdog's report */
	atomic_int awaiting;         /* and of the awaiter: plan | timed << 4 | state << 8 */
	bool fwd_ready;
	fwd_waker fw;
	awaiter aw;
	sb_semaphore_acquire acq;
	sb_mutex_lock lock;
	sb_condvar_wait cw;
	sb_event_wait ew;
	sb_auto_event_wait aew;
	sb_timeout pend_to;
	sb_yield y;
	size_t n;                    /* semaphore: permits of this round */
	int holds;                   /* yields left while holding */
	long value;                  /* mutex: the counter read; producer: next item;
				      * hand: rounds done */
	long phase;                  /* phaser: current phase */
	sb_join join;
	atomic_long st[STATS];
} soak_task;

static void stat_add(soak_task *t, enum stat s, long n)
{
	/* relaxed: a statistic with one writer; see enum stat. */
	atomic_fetch_add_explicit(&t->st[s], n, memory_order_relaxed);
}

static long stat_get(soak_task *t, enum stat s)
{
	return atomic_load_explicit(&t->st[s], memory_order_relaxed);
}

/* relaxed (both): copies for the watchdog's report, which orders nothing. */
static void set_stage(soak_task *t, int stage)
{
	t->stage = stage;
	atomic_store_explicit(&t->where, stage, memory_order_relaxed);
}

static void aw_set_state(soak_task *t, int state)
{
	t->aw.state = state;
	atomic_store_explicit(&t->awaiting, t->aw.plan | (int)t->aw.timed << 4 | state << 8,
			      memory_order_relaxed);
}

/* One primitive operation; budgets in ops count down here. */
static void op(soak_task *t)
{
	stat_add(t, ST_OPS, 1);
	t->budget -= t->kind == K_SEM || t->kind == K_MUTEX || t->kind == K_AUTO;
}

/* ------------------------------------------------------------ randomness */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static unsigned below(soak_task *t, unsigned n)
{
	return (unsigned)(splitmix64(&t->rng) % n);
}

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
static size_t peek_remaining(const sb_waiter *node)
{
	/* acquire: pairs with the detaching store, so a 0 shows us the grant's
	 * cause (the phaser relies on seeing the set that released it). */
	return atomic_load_explicit((SB_ATOMIC(size_t) *)&node->remaining, memory_order_acquire);
}

static long fw_wakes(soak_task *t)
{
	return atomic_load(&t->fw.wakes);
}

enum timing { NO_DEADLINE, MAYBE_DEADLINE, DEADLINE };
#define ANY_PLAN (-1)

/*
 * Starts awaiting `fut` (whose queue node is `node`; `permits` for a
 * semaphore acquire, else 0).  ANY_PLAN: pick one at random.
 */
static void aw_start(soak_task *t, void *fut, const sb_future_ops *ops, const sb_waiter *node,
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
static void await_lock(soak_task *t, sb_mutex *m)
{
	sb_mutex_lock_init(&t->lock, m);
	aw_start(t, &t->lock, &mutex_lock_ops, &t->lock.waiter, 0, ANY_PLAN, MAYBE_DEADLINE);
}

/* Waits on the condvar wait already initialised in t->cw, likewise. */
static void await_cv(soak_task *t)
{
	aw_start(t, &t->cw, &cv_wait_ops, &t->cw.lock.waiter, 0, ANY_PLAN, MAYBE_DEADLINE);
}

/* The first poll comes only after `yields` yields (the future was polled before). */
static void aw_delay(soak_task *t, int yields)
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
static int aw_poll(soak_task *t, const sb_waker *w)
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
static void aw_abandon(soak_task *t)
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
static bool hold_done(soak_task *t, const sb_waker *w)
{
	while (t->holds > 0) {
		if (sb_yield_poll(&t->y, w) == SB_PENDING)
			return false;
		t->holds--;
		sb_yield_init(&t->y);
	}
	return true;
}

static void start_hold(soak_task *t, unsigned max)
{
	t->holds = (int)below(t, max + 1);
	sb_yield_init(&t->y);
}

/* ------------------------------------------------------------ semaphore */

static size_t pick_permits(soak_task *t)
{
	unsigned r = below(t, 100);
	if (r < 70)
		return 1 + below(t, 2);
	if (r < 95)
		return 3 + below(t, 3);
	return SEM_PERMITS;
}

static int sem_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		switch (t->stage) {
		case 0: /* the next acquire */
			if (t->budget <= 0)
				return 0;
			t->n = pick_permits(t);
			op(t);
			if (below(t, 100) < 15) {
				int r = sb_semaphore_try_acquire(&s->sem, t->n);
				if (r == -EAGAIN) {
					stat_add(t, ST_TRY_FAILED, 1);
					continue;
				}
				CHECK(r == 0);
				set_stage(t, 2);
				continue;
			}
			sb_semaphore_acquire_init(&t->acq, &s->sem, t->n);
			aw_start(t, &t->acq, &sb_semaphore_acquire_ops, &t->acq.waiter, t->n,
				 ANY_PLAN, MAYBE_DEADLINE);
			set_stage(t, 1);
			/* fallthrough */
		case 1: {
			int r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			set_stage(t, r == 0 ? 2 : 0);
			continue;
		}
		case 2: { /* acquired t->n */
			int now = atomic_fetch_add(&s->sem_in_use, (int)t->n) + (int)t->n;
			CHECK(now <= SEM_PERMITS);
			stat_add(t, ST_DONE, 1);
			start_hold(t, 2);
			set_stage(t, 3);
		}
			/* fallthrough */
		case 3:
			if (!hold_done(t, w))
				return SB_PENDING;
			atomic_fetch_sub(&s->sem_in_use, (int)t->n);
			if (t->n > 1 && below(t, 4) == 0) { /* give them back in two parts */
				op(t);
				CHECK(sb_semaphore_release(&s->sem, 1) == 0);
				t->n--;
			}
			op(t);
			CHECK(sb_semaphore_release(&s->sem, t->n) == 0);
			set_stage(t, 0);
			continue;
		}
	}
}

/* ------------------------------------------------------------ mutex */

static int mutex_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		switch (t->stage) {
		case 0:
			if (t->budget <= 0)
				return 0;
			op(t);
			if (below(t, 100) < 10) {
				int r = sb_mutex_try_lock(&s->m);
				if (r == -EBUSY) {
					stat_add(t, ST_TRY_FAILED, 1);
					continue;
				}
				CHECK(r == 0);
				set_stage(t, 2);
				continue;
			}
			await_lock(t, &s->m);
			set_stage(t, 1);
			/* fallthrough */
		case 1: {
			int r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			set_stage(t, r == 0 ? 2 : 0);
			continue;
		}
		case 2: /* holding the mutex */
			CHECK(atomic_fetch_add(&s->m_holders, 1) == 0);
			t->value = s->counter;
			start_hold(t, 1);
			set_stage(t, 3);
			/* fallthrough */
		case 3:
			if (!hold_done(t, w))
				return SB_PENDING;
			s->counter = t->value + 1;
			atomic_fetch_sub(&s->m_holders, 1);
			atomic_fetch_add(&s->sections, 1);
			stat_add(t, ST_DONE, 1);
			op(t);
			CHECK(sb_mutex_unlock(&s->m) == 0);
			set_stage(t, 0);
			continue;
		}
	}
}

/* ------------------------------------------------------------ condvar queue */

/* Producer and consumer: stage 0 lock, 1 locking, 2 holding, 3 waiting. */
static int queue_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	bool producer = t->kind == K_PROD;
	for (;;) {
		int r;
		switch (t->stage) {
		case 0:
			if (t->budget == 0)
				return 0;
			op(t);
			if (below(t, 100) < 10) {
				r = sb_mutex_try_lock(&s->qm);
				if (r == -EBUSY) {
					stat_add(t, ST_TRY_FAILED, 1);
					continue;
				}
				CHECK(r == 0);
				set_stage(t, 2);
				CHECK(atomic_fetch_add(&s->q_holders, 1) == 0);
				continue;
			}
			await_lock(t, &s->qm);
			set_stage(t, 1);
			/* fallthrough */
		case 1:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r != 0) {
				set_stage(t, 0);
				continue;
			}
			CHECK(atomic_fetch_add(&s->q_holders, 1) == 0);
			set_stage(t, 2);
			/* fallthrough */
		case 2: /* holding qm */
			if (producer ? s->q_count == QUEUE_CAP : s->q_count == 0) {
				/* The wait gives the mutex up on its first poll. */
				atomic_fetch_sub(&s->q_holders, 1);
				op(t);
				sb_condvar_wait_init(&t->cw, producer ? &s->not_full : &s->not_empty,
						     &s->qm);
				if (below(t, 100) < 4) {
					/* Cancelling a never-polled wait unlocks the mutex. */
					sb_condvar_wait_cancel(&t->cw);
					stat_add(t, ST_CANCEL_IDLE, 1);
					set_stage(t, 0);
					continue;
				}
				await_cv(t);
				set_stage(t, 3);
				continue;
			}
			if (producer) {
				s->items[(s->q_head + s->q_count) % QUEUE_CAP] = t->value++;
				s->q_count++;
			} else {
				long v = s->items[s->q_head];
				CHECK(v >= 0 && v < s->total_items);
				CHECK(++s->seen[v] == 1);
				s->popped++;
				s->popped_sum += v;
				s->q_head = (s->q_head + 1) % QUEUE_CAP;
				s->q_count--;
			}
			t->budget--;
			stat_add(t, ST_DONE, 1);
			op(t);
			{
				sb_condvar *other = producer ? &s->not_empty : &s->not_full;
				if (below(t, 100) < 15)
					sb_condvar_notify_all(other);
				else
					sb_condvar_notify_one(other);
			}
			atomic_fetch_sub(&s->q_holders, 1);
			op(t);
			CHECK(sb_mutex_unlock(&s->qm) == 0);
			set_stage(t, 0);
			continue;
		case 3: /* waiting: 0 means notified and holding qm again */
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r != 0) {
				set_stage(t, 0); /* a cancelled or timed-out wait holds nothing */
				continue;
			}
			CHECK(atomic_fetch_add(&s->q_holders, 1) == 0);
			set_stage(t, 2);
			continue;
		}
	}
}

/* ------------------------------------------------------------ condvar handshake */

/*
 * One ticket at a time: the dealer puts it on the table under hm and
 * notify_one()s ticket_cv, then waits on taken_cv until it is gone.  A
 * taker waits, with no deadline and no cancel, until a ticket is there,
 * takes it and notifies the dealer.  A quitter never takes one: it waits on
 * ticket_cv with a cancel plan or a deadline and walks away (a quitter
 * whose wait completes was notified, so it passes the notification on
 * itself).  A quitter never rescues a notification the library drops, and
 * the takers spend their time asleep, so a cancelled wait that swallows one
 * leaves the ticket on the table: the quitters run out of rounds, and the
 * watchdog reports the hang.
 */
static int dealer_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		int r;
		switch (t->stage) {
		case 0:
			if (t->budget == 0)
				return 0;
			op(t);
			await_lock(t, &s->hm);
			set_stage(t, 1);
			/* fallthrough */
		case 1:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r != 0) {
				set_stage(t, 0);
				continue;
			}
			CHECK(atomic_fetch_add(&s->h_holders, 1) == 0);
			set_stage(t, 2);
			/* fallthrough */
		case 2: /* holding hm */
			if (s->slot) {
				atomic_fetch_sub(&s->h_holders, 1);
				op(t);
				sb_condvar_wait_init(&t->cw, &s->taken_cv, &s->hm);
				await_cv(t);
				set_stage(t, 3);
				continue;
			}
			s->slot = 1;
			t->budget--;
			stat_add(t, ST_DONE, 1);
			op(t);
			sb_condvar_notify_one(&s->ticket_cv);
			atomic_fetch_sub(&s->h_holders, 1);
			op(t);
			CHECK(sb_mutex_unlock(&s->hm) == 0);
			set_stage(t, 0);
			continue;
		case 3:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r != 0) {
				set_stage(t, 0); /* the dealer does come back */
				continue;
			}
			CHECK(atomic_fetch_add(&s->h_holders, 1) == 0);
			set_stage(t, 2);
			continue;
		}
	}
}

static int hand_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		bool taker = t->index < TAKERS;
		int r;
		switch (t->stage) {
		case 0:
			if (t->value == (taker ? s->per_taker : s->quitter_rounds))
				return 0;
			op(t);
			await_lock(t, &s->hm);
			set_stage(t, 1);
			/* fallthrough */
		case 1:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r != 0) {
				set_stage(t, 0); /* not waiting on ticket_cv yet: lock again */
				continue;
			}
			CHECK(atomic_fetch_add(&s->h_holders, 1) == 0);
			set_stage(t, 2);
			/* fallthrough */
		case 2: /* holding hm */
			if (s->slot && taker) {
				s->slot = 0;
				atomic_fetch_add(&s->tickets_taken, 1);
				stat_add(t, ST_DONE, 1);
				op(t);
				sb_condvar_notify_one(&s->taken_cv);
			} else if (!s->slot || !taker) {
				atomic_fetch_sub(&s->h_holders, 1);
				op(t);
				sb_condvar_wait_init(&t->cw, &s->ticket_cv, &s->hm);
				if (taker) {
					aw_start(t, &t->cw, &cv_wait_ops, &t->cw.lock.waiter, 0,
						 PLAN_WAIT, NO_DEADLINE);
				} else {
					/*
					 * A quitter: a cancel plan, or a deadline.  A
					 * wait cancelled when woken also has a deadline:
					 * it must leave even if no notification comes.
					 */
					int plan = PLAN_CANCEL_NOW + (int)below(t, 4);
					if (plan > PLAN_CANCEL_ON_WAKE)
						plan = PLAN_WAIT;
					aw_start(t, &t->cw, &cv_wait_ops, &t->cw.lock.waiter, 0, plan,
						 plan == PLAN_CANCEL_NOW || plan == PLAN_CANCEL_LATER
							 ? NO_DEADLINE : DEADLINE);
				}
				set_stage(t, 3);
				continue;
			}
			atomic_fetch_sub(&s->h_holders, 1);
			op(t);
			CHECK(sb_mutex_unlock(&s->hm) == 0);
			t->value++;
			set_stage(t, 0);
			continue;
		case 3:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (taker) {
				CHECK(r == 0);
				CHECK(atomic_fetch_add(&s->h_holders, 1) == 0);
				set_stage(t, 2); /* re-check: another taker may have been first */
				continue;
			}
			stat_add(t, ST_QUITS, 1);
			if (r == 0) {
				/* Notified, and holding hm: hand the notification on. */
				CHECK(atomic_fetch_add(&s->h_holders, 1) == 0);
				op(t);
				sb_condvar_notify_one(&s->ticket_cv);
				atomic_fetch_sub(&s->h_holders, 1);
				op(t);
				CHECK(sb_mutex_unlock(&s->hm) == 0);
			}
			t->value++;
			set_stage(t, 0);
			continue;
		}
	}
}

/* ------------------------------------------------------------ phaser (manual events) */

/*
 * Every phaser takes part in every phase p: it registers a wait on
 * ev[p & 1], then arrives.  The last to arrive leads: it resets the other
 * event (everybody has left the previous phase), picks the next phase's
 * mode, publishes p and sets ev[p & 1]; in PULSE mode it resets it at once,
 * so the waits the set released must complete although the event is clear.
 * Stage 0 registers and arrives, 1 waits.
 */
static int phase_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		long p = t->phase;
		int slot = (int)(p & 1);
		int r;
		switch (t->stage) {
		case 0: {
			if (p == s->phases)
				return 0;
			op(t);
			sb_event_wait_init(&t->ew, &s->ev[slot]);
			/* Nobody sets ev[slot] before we arrive, and the previous
			 * phase's leader reset it before releasing us. */
			CHECK(sb_event_wait_poll(&t->ew, w) == SB_PENDING);
			if (below(t, 100) < 10) {
				/* Cancel before any set, and register again. */
				stat_add(t, ST_CANCEL_QUEUED, 1);
				sb_event_wait_cancel(&t->ew);
				op(t);
				sb_event_wait_init(&t->ew, &s->ev[slot]);
				CHECK(sb_event_wait_poll(&t->ew, w) == SB_PENDING);
			}
			/* acq_rel: the leader (the last to arrive) sees every
			 * registration, and its own later writes are ordered after
			 * every participant's use of the previous phase. */
			int a = atomic_fetch_add(&s->arrived[slot], 1) + 1;
			int mode = s->mode[slot];
			if (a < PHASERS) {
				int plan = ANY_PLAN;
				if (mode == MODE_PULSE) /* a cancelled wait would miss the pulse */
					plan = PLAN_WAIT;
				aw_start(t, &t->ew, &event_wait_ops, &t->ew.waiter, 0, plan,
					 mode == MODE_KEEP ? MAYBE_DEADLINE : NO_DEADLINE);
				/* Often: poll it again only after the pulse. */
				if (mode == MODE_PULSE && below(t, 2))
					aw_delay(t, 1 + (int)below(t, 3));
				set_stage(t, 1);
				continue;
			}
			/* The leader. */
			CHECK(a == PHASERS);
			CHECK(atomic_load(&s->published) == p - 1);
			/* relaxed: the next arrival on this slot (phase p + 2) comes
			 * after ev[slot]'s set below and the next phase's arrivals. */
			atomic_store_explicit(&s->arrived[slot], 0, memory_order_relaxed);
			op(t);
			sb_event_reset(&s->ev[slot ^ 1]);
			s->mode[slot ^ 1] = below(t, 100) < 35 ? MODE_PULSE : MODE_KEEP;
			atomic_store(&s->published, p);
			op(t);
			sb_event_set(&s->ev[slot]);
			if (mode == MODE_PULSE) {
				op(t);
				sb_event_reset(&s->ev[slot]);
				stat_add(t, ST_PULSES, 1);
			}
			/* Our own wait was registered before the set: released. */
			CHECK(sb_event_wait_poll(&t->ew, w) == 0);
			stat_add(t, ST_DONE, 1);
			t->phase++;
			continue;
		}
		case 1:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r == 0) {
				CHECK(atomic_load(&s->published) >= p);
				stat_add(t, ST_DONE, 1);
				t->phase++;
				set_stage(t, 0);
				continue;
			}
			/* Cancelled or timed out (KEEP mode only): wait again.  If the
			 * set had already released the cancelled wait, the event is
			 * still set (only the next phase's leader resets it), so the
			 * new wait completes at once. */
			CHECK(s->mode[slot] == MODE_KEEP);
			op(t);
			sb_event_wait_init(&t->ew, &s->ev[slot]);
			if (r == -ECANCELED && t->aw.cancelled_granted) {
				CHECK(sb_event_wait_poll(&t->ew, w) == 0);
				CHECK(atomic_load(&s->published) >= p);
				stat_add(t, ST_DONE, 1);
				t->phase++;
				set_stage(t, 0);
				continue;
			}
			aw_start(t, &t->ew, &event_wait_ops, &t->ew.waiter, 0, ANY_PLAN,
				 MAYBE_DEADLINE);
			continue;
		}
	}
}

/* ------------------------------------------------------------ auto event */

static int auto_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		switch (t->stage) {
		case 0:
			if (t->budget <= 0)
				return 0;
			op(t);
			if (below(t, 100) < 15) {
				int r = sb_auto_event_try_wait(&s->ae);
				if (r == 0) {
					set_stage(t, 2);
					continue;
				}
				CHECK(r == -EAGAIN);
				stat_add(t, ST_TRY_FAILED, 1);
				op(t);
			}
			sb_auto_event_wait_init(&t->aew, &s->ae);
			aw_start(t, &t->aew, &auto_wait_ops, &t->aew.waiter, 0, ANY_PLAN,
				 MAYBE_DEADLINE);
			set_stage(t, 1);
			/* fallthrough */
		case 1: {
			int r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			set_stage(t, r == 0 ? 2 : 0);
			continue;
		}
		case 2: /* holding the signal */
			CHECK(atomic_fetch_add(&s->token_holders, 1) == 0);
			atomic_fetch_add(&s->token_takes, 1);
			stat_add(t, ST_DONE, 1);
			start_hold(t, 1);
			set_stage(t, 3);
			/* fallthrough */
		case 3:
			if (!hold_done(t, w))
				return SB_PENDING;
			atomic_fetch_sub(&s->token_holders, 1);
			atomic_fetch_add(&s->token_sets, 1);
			op(t);
			sb_auto_event_set(&s->ae);
			set_stage(t, 0);
			continue;
		}
	}
}

/* ------------------------------------------------------------ left pending */

static int pend_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	int r;
	if (t->stage == 0) {
		switch (t->index) {
		case PEND_SEM_PARTIAL:
			sb_semaphore_acquire_init(&t->acq, &s->sem, SEM_PERMITS + 1);
			break;
		case PEND_SEM_TIMEOUT:
			sb_semaphore_acquire_init(&t->acq, &s->sem, 1);
			sb_timeout_init(&t->pend_to, &t->acq, &sb_semaphore_acquire_ops,
					3600 * SB_NSEC_PER_SEC);
			break;
		case PEND_MUTEX:
			sb_mutex_lock_init(&t->lock, &s->m);
			break;
		case PEND_CONDVAR:
			CHECK(sb_mutex_try_lock(&s->qm) == 0);
			sb_condvar_wait_init(&t->cw, &s->not_empty, &s->qm);
			break;
		case PEND_EVENT:
			sb_event_wait_init(&t->ew, &s->gate);
			break;
		case PEND_AUTO:
			sb_auto_event_wait_init(&t->aew, &s->ae);
			break;
		}
	}
	switch (t->index) {
	case PEND_SEM_PARTIAL:
		r = sb_semaphore_acquire_poll(&t->acq, w);
		break;
	case PEND_SEM_TIMEOUT:
		r = sb_timeout_poll(&t->pend_to, w);
		break;
	case PEND_MUTEX:
		r = sb_mutex_lock_poll(&t->lock, w);
		break;
	case PEND_CONDVAR:
		r = sb_condvar_wait_poll(&t->cw, w);
		break;
	case PEND_EVENT:
		r = sb_event_wait_poll(&t->ew, w);
		break;
	default:
		r = sb_auto_event_wait_poll(&t->aew, w);
		break;
	}
	if (r != SB_PENDING) {
		fprintf(stderr, "pending task %d (stage %d): poll returned %d\n", t->index,
			t->stage, r);
		CHECK(r == SB_PENDING);
	}
	if (t->stage == 0) {
		set_stage(t, 1);
		CHECK(sb_semaphore_release(&s->started, 1) == 0);
	}
	return SB_PENDING;
}

static void pend_cancel(soak_task *t)
{
	switch (t->index) {
	case PEND_SEM_PARTIAL:
		sb_semaphore_acquire_cancel(&t->acq);
		break;
	case PEND_SEM_TIMEOUT:
		sb_timeout_cancel(&t->pend_to);
		break;
	case PEND_MUTEX:
		sb_mutex_lock_cancel(&t->lock);
		break;
	case PEND_CONDVAR:
		sb_condvar_wait_cancel(&t->cw); /* leaves qm unlocked */
		break;
	case PEND_EVENT:
		sb_event_wait_cancel(&t->ew);
		break;
	default:
		sb_auto_event_wait_cancel(&t->aew);
		break;
	}
}

/* ------------------------------------------------------------ dispatch */

static int soak_task_poll(sb_task *task, const sb_waker *w)
{
	soak_task *t = SB_CONTAINER_OF(task, soak_task, task);
	if (!t->fwd_ready) {
		t->fw.task = *w;
		t->fwd_ready = true;
	}
	CHECK(sb_waker_will_wake(&t->fw.task, w));
	const sb_waker fw = { &fwd_vtable, &t->fw };
	switch (t->kind) {
	case K_SEM:
		return sem_poll(t, &fw);
	case K_MUTEX:
		return mutex_poll(t, &fw);
	case K_PROD:
	case K_CONS:
		return queue_poll(t, &fw);
	case K_DEALER:
		return dealer_poll(t, &fw);
	case K_HAND:
		return hand_poll(t, &fw);
	case K_PHASE:
		return phase_poll(t, &fw);
	case K_AUTO:
		return auto_poll(t, &fw);
	default:
		return pend_poll(t, &fw);
	}
}

/*
 * Workers always finish before the shutdown; if one is cancelled anyway the
 * shutdown's count says so, and this hands back what a pending future holds.
 */
static void soak_task_cancel(sb_task *task)
{
	soak_task *t = SB_CONTAINER_OF(task, soak_task, task);
	if (t->kind == K_PEND)
		pend_cancel(t);
	else
		aw_abandon(t);
}

/* ------------------------------------------------------------ watchdog */

/*
 * Fails the test, with a report of where every task stands, when the soak
 * makes no progress for `stall_s` seconds or runs past `limit_s`.  Its
 * one-second tick is the only timer apart from the deadlines under test.
 */
typedef struct monitor {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	unsigned stall_s, limit_s;
	const char *phase; /* what main is doing; under mu */
	struct soak *s;
	soak_task *tasks;
	size_t ntasks;
} monitor;

static long total_ops(monitor *mon)
{
	long sum = 0;
	for (size_t i = 0; i < mon->ntasks; i++)
		sum += stat_get(&mon->tasks[i], ST_OPS);
	return sum;
}

static void monitor_report(monitor *mon, const char *why, unsigned elapsed)
{
	struct soak *s = mon->s;
	fprintf(stderr, "WATCHDOG: soak (seed=0x%" PRIx64 ", %s) %s after %u s: hang\n", s->seed,
		mon->phase, why, elapsed);
	fprintf(stderr, "  ops=%ld sections=%ld token takes=%ld sets=%ld published phase=%ld/%ld"
		" sem in use=%d\n",
		total_ops(mon), atomic_load(&s->sections), atomic_load(&s->token_takes),
		atomic_load(&s->token_sets), atomic_load(&s->published), s->phases,
		atomic_load(&s->sem_in_use));
	for (size_t i = 0; i < mon->ntasks; i++) {
		soak_task *t = &mon->tasks[i];
		int aw = atomic_load_explicit(&t->awaiting, memory_order_relaxed);
		fprintf(stderr, "  task %2zu %-10s #%d stage=%d awaiting(plan=%s%s state=%s) ops=%ld"
			" done=%ld wakes=%ld clones=%ld drops=%ld released=%d\n",
			i, kind_name[t->kind], t->index,
			atomic_load_explicit(&t->where, memory_order_relaxed),
			plan_name[aw & 15], aw & 16 ? "+deadline" : "", aw_state_name[aw >> 8],
			stat_get(t, ST_OPS), stat_get(t, ST_DONE), atomic_load(&t->fw.wakes),
			atomic_load(&t->fw.clones), atomic_load(&t->fw.drops),
			(int)sb_task_is_released(&t->task));
	}
	fflush(stderr);
	_exit(3);
}

static void *monitor_main(void *arg)
{
	monitor *mon = arg;
	unsigned elapsed = 0, last_change = 0;
	long last = -1;
	struct timespec tick;
	clock_gettime(CLOCK_MONOTONIC, &tick);
	pthread_mutex_lock(&mon->mu);
	while (!mon->done) {
		tick.tv_sec += 1;
		while (!mon->done && pthread_cond_timedwait(&mon->cv, &mon->mu, &tick) != ETIMEDOUT)
			;
		if (mon->done)
			break;
		elapsed++;
		long now = total_ops(mon);
		if (now != last) {
			last = now;
			last_change = elapsed;
		}
		if (elapsed - last_change >= mon->stall_s)
			monitor_report(mon, "made no progress", elapsed);
		if (elapsed >= mon->limit_s)
			monitor_report(mon, "still running", elapsed);
	}
	pthread_mutex_unlock(&mon->mu);
	return NULL;
}

static void monitor_start(monitor *mon)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&mon->cv, &attr);
	pthread_condattr_destroy(&attr);
	pthread_mutex_init(&mon->mu, NULL);
	mon->done = false;
	if (pthread_create(&mon->thread, NULL, monitor_main, mon) != 0)
		abort();
}

static void monitor_phase(monitor *mon, const char *phase)
{
	pthread_mutex_lock(&mon->mu);
	mon->phase = phase;
	pthread_mutex_unlock(&mon->mu);
}

static void monitor_stop(monitor *mon)
{
	pthread_mutex_lock(&mon->mu);
	mon->done = true;
	pthread_cond_signal(&mon->cv);
	pthread_mutex_unlock(&mon->mu);
	pthread_join(mon->thread, NULL);
	pthread_cond_destroy(&mon->cv);
	pthread_mutex_destroy(&mon->mu);
}

/* ------------------------------------------------------------ the test */

static struct {
	long ops;
	uint64_t seed;
	size_t threads;
	bool eventfd;
	unsigned stall_s;
} cfg;

static uint64_t env_u64(const char *name, uint64_t dflt, uint64_t min)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 0);
	if (*end || errno || n < min || n > (unsigned long long)INT64_MAX) {
		fprintf(stderr, "%s=%s: expected a number >= %" PRIu64 "\n", name, v, min);
		exit(2);
	}
	return n;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void task_setup(soak_task *t, struct soak *s, int kind, int index, long budget)
{
	memset(t, 0, sizeof *t);
	sb_task_init(&t->task, soak_task_poll, soak_task_cancel, NULL);
	t->s = s;
	t->kind = kind;
	t->index = index;
	t->budget = budget;
	/* One stream per task, from the seed alone. */
	t->rng = cfg.seed ^ ((uint64_t)(kind + 1) << 56) ^ ((uint64_t)index << 40);
	splitmix64(&t->rng);
	for (int i = 0; i < STATS; i++)
		atomic_init(&t->st[i], 0);
	atomic_init(&t->where, 0);
	atomic_init(&t->awaiting, AW_DONE << 8);
	atomic_init(&t->fw.clones, 0);
	atomic_init(&t->fw.wakes, 0);
	atomic_init(&t->fw.wake_refs, 0);
	atomic_init(&t->fw.drops, 0);
}

static void spawn_on(struct soak *s, soak_task *t, size_t thread)
{
	assert_int_equal(sb_executor_group_spawn(&s->g, thread, &t->task, &t->join), 0);
}

/*
 * A third of the tasks go to a chosen thread, a third round-robin, and a
 * third float (they move to the thread that wakes them).
 */
static void spawn(struct soak *s, soak_task *t, size_t n)
{
	size_t where = n % 3 == 0 ? (n / 3) % s->threads : n % 3 == 1 ? SB_GROUP_ANY
									: SB_GROUP_FLOATING;
	spawn_on(s, t, where);
}

struct totals {
	long v[STATS];
};

static void sum_kind(soak_task *tasks, size_t n, int kind, struct totals *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < n; i++)
		if (tasks[i].kind == kind)
			for (int k = 0; k < STATS; k++)
				out->v[k] += stat_get(&tasks[i], (enum stat)k);
}

static long cancels(const struct totals *t)
{
	return t->v[ST_CANCEL_QUEUED] + t->v[ST_CANCEL_PARTIAL] + t->v[ST_CANCEL_GRANTED] +
	       t->v[ST_CANCEL_IDLE];
}

static void all_primitives_under_cancellation_and_deadlines_conserve_everything(void **state)
{
	(void)state;
	/*
	 * A crash on an executor thread must kill the process with its own
	 * signal (and a core): cmocka's handlers would longjmp to this thread's
	 * frame from another thread, and exit silently.
	 */
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	signal(SIGILL, SIG_DFL);
	signal(SIGFPE, SIG_DFL);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);

	static struct soak s;
	memset(&s, 0, sizeof s);
	s.seed = cfg.seed;
	s.threads = cfg.threads;
	assert_int_equal(sb_semaphore_init(&s.sem, SEM_PERMITS), 0);
	assert_int_equal(sb_mutex_init(&s.m), 0);
	assert_int_equal(sb_mutex_init(&s.qm), 0);
	assert_int_equal(sb_condvar_init(&s.not_empty), 0);
	assert_int_equal(sb_condvar_init(&s.not_full), 0);
	assert_int_equal(sb_mutex_init(&s.hm), 0);
	assert_int_equal(sb_condvar_init(&s.ticket_cv), 0);
	assert_int_equal(sb_condvar_init(&s.taken_cv), 0);
	atomic_init(&s.tickets_taken, 0);
	atomic_init(&s.h_holders, 0);
	assert_int_equal(sb_event_init(&s.ev[0], false), 0);
	assert_int_equal(sb_event_init(&s.ev[1], false), 0);
	assert_int_equal(sb_event_init(&s.gate, false), 0);
	assert_int_equal(sb_auto_event_init(&s.ae, true), 0); /* the one signal */
	assert_int_equal(sb_semaphore_init(&s.started, 0), 0);
	atomic_init(&s.sem_in_use, 0);
	atomic_init(&s.m_holders, 0);
	atomic_init(&s.sections, 0);
	atomic_init(&s.q_holders, 0);
	atomic_init(&s.arrived[0], 0);
	atomic_init(&s.arrived[1], 0);
	atomic_init(&s.published, -1);
	atomic_init(&s.token_holders, 0);
	atomic_init(&s.token_takes, 0);
	atomic_init(&s.token_sets, 0);
	s.mode[0] = MODE_KEEP;
	s.mode[1] = MODE_KEEP;

	/* Shares of the operations: estimated ops per unit in the comments. */
	long ops = cfg.ops;
	long sem_budget = ops * 30 / 100 / SEM_TASKS;        /* budgets in ops */
	long mutex_budget = ops * 20 / 100 / MUTEX_TASKS;
	long auto_budget = ops * 15 / 100 / AUTO_TASKS;
	s.per_producer = ops * 12 / 100 / 7 / PRODUCERS;     /* ~7 ops per item */
	s.per_taker = ops * 5 / 100 / 8 / TAKERS;            /* ~8 ops per ticket */
	s.quitter_rounds = ops * 3 / 100 / 4 / QUITTERS;     /* ~4 ops per round */
	s.phases = ops * 15 / 100 / 9;                       /* ~9 ops per phase */
	if (sem_budget < 1)
		sem_budget = 1;
	if (mutex_budget < 1)
		mutex_budget = 1;
	if (auto_budget < 1)
		auto_budget = 1;
	if (s.per_producer < 1)
		s.per_producer = 1;
	if (s.phases < 1)
		s.phases = 1;
	if (s.per_taker < 1)
		s.per_taker = 1;
	if (s.quitter_rounds < 1)
		s.quitter_rounds = 1;
	s.tickets = s.per_taker * TAKERS;
	s.total_items = s.per_producer * PRODUCERS;
	s.per_consumer = s.total_items / CONSUMERS; /* PRODUCERS == CONSUMERS */
	assert_int_equal(s.per_consumer * CONSUMERS, s.total_items);
	s.seen = calloc((size_t)s.total_items, 1);
	assert_non_null(s.seen);

	size_t ntasks = WORKERS + PENDERS;
	soak_task *tasks = calloc(ntasks, sizeof *tasks);
	assert_non_null(tasks);
	size_t n = 0;
	for (int i = 0; i < SEM_TASKS; i++)
		task_setup(&tasks[n++], &s, K_SEM, i, sem_budget);
	for (int i = 0; i < MUTEX_TASKS; i++)
		task_setup(&tasks[n++], &s, K_MUTEX, i, mutex_budget);
	for (int i = 0; i < PRODUCERS; i++) {
		task_setup(&tasks[n], &s, K_PROD, i, s.per_producer);
		tasks[n++].value = (long)i * s.per_producer;
	}
	for (int i = 0; i < CONSUMERS; i++)
		task_setup(&tasks[n++], &s, K_CONS, i, s.per_consumer);
	for (int i = 0; i < DEALERS; i++)
		task_setup(&tasks[n++], &s, K_DEALER, i, s.tickets);
	for (int i = 0; i < HANDS; i++)
		task_setup(&tasks[n++], &s, K_HAND, i, 0);
	for (int i = 0; i < PHASERS; i++)
		task_setup(&tasks[n++], &s, K_PHASE, i, 0);
	for (int i = 0; i < AUTO_TASKS; i++)
		task_setup(&tasks[n++], &s, K_AUTO, i, auto_budget);
	assert_int_equal(n, WORKERS);
	for (int i = 0; i < PENDERS; i++)
		task_setup(&tasks[n++], &s, K_PEND, i, 0);

	monitor mon;
	memset(&mon, 0, sizeof mon);
	mon.s = &s;
	mon.tasks = tasks;
	mon.ntasks = ntasks;
	mon.stall_s = cfg.stall_s;
	/* Generous: 2 minutes plus 100 us per op (10^7 ops: 19 minutes). */
	mon.limit_s = 120 + (unsigned)(cfg.ops / 10000);
	mon.phase = "workers";
	monitor_start(&mon);

	sb_executor_config ecfg = { 0, cfg.eventfd ? SB_EXECUTOR_NO_MSG_RING : 0 };
	assert_int_equal(sb_executor_group_init(&s.g, s.threads, &ecfg), 0);

	/* Interleave the kinds in the spawn order, so every thread gets a mix. */
	size_t order = 0;
	for (int round = 0; order < WORKERS; round++)
		for (size_t i = 0; i < WORKERS; i++)
			if (tasks[i].index == round)
				spawn(&s, &tasks[i], order++);
	for (size_t i = 0; i < WORKERS; i++)
		assert_int_equal(sb_join_wait(&tasks[i].join), 0);
	double work_s = seconds_since(&t0);

	/* ---- every worker finished: the state at rest */
	monitor_phase(&mon, "checks at rest");
	assert_int_equal(atomic_load(&s.sem_in_use), 0);
	assert_int_equal(sb_semaphore_available(&s.sem), SEM_PERMITS);
	assert_int_equal(sb_mutex_is_locked(&s.m), false);
	/* The last unlock happened-before our join. */
	assert_int_equal(s.counter, atomic_load(&s.sections));
	assert_int_equal(sb_mutex_is_locked(&s.qm), false);
	assert_int_equal(s.q_count, 0);
	assert_int_equal(s.popped, s.total_items);
	assert_true(s.popped_sum == s.total_items * (s.total_items - 1) / 2);
	for (long v = 0; v < s.total_items; v++)
		if (s.seen[v] != 1)
			fail_msg("item %ld delivered %d times", v, s.seen[v]);
	assert_int_equal(sb_mutex_is_locked(&s.hm), false);
	assert_int_equal(s.slot, 0);
	assert_int_equal(atomic_load(&s.tickets_taken), s.tickets);
	assert_int_equal(atomic_load(&s.published), s.phases - 1);
	assert_int_equal(atomic_load(&s.token_takes), atomic_load(&s.token_sets));
	assert_int_equal(atomic_load(&s.token_holders), 0);
	/* The signal every set passed on is stored, once. */
	assert_int_equal(sb_auto_event_try_wait(&s.ae), 0);
	assert_int_equal(sb_auto_event_try_wait(&s.ae), -EAGAIN);

	/* ---- tasks left waiting on purpose, cancelled by the shutdown */
	monitor_phase(&mon, "pending tasks and shutdown");
	assert_int_equal(sb_mutex_try_lock(&s.m), 0); /* PEND_MUTEX queues behind main */
	/*
	 * Both semaphore waiters on one thread: cancelling the first hands its
	 * permits to the second, whose executor must then cancel it unpolled
	 * (on another thread it could still be polled and complete).
	 */
	spawn_on(&s, &tasks[WORKERS + PEND_SEM_PARTIAL], 0);
	assert_int_equal(sb_semaphore_acquire_blocking(&s.started, 1, 30 * SB_NSEC_PER_SEC), 0);
	assert_int_equal(sb_semaphore_available(&s.sem), 0); /* all SEM_PERMITS are its partial grant */
	spawn_on(&s, &tasks[WORKERS + PEND_SEM_TIMEOUT], 0);
	for (int i = PEND_SEM_TIMEOUT + 1; i < PENDERS; i++)
		spawn(&s, &tasks[WORKERS + i], (size_t)i);
	assert_int_equal(sb_semaphore_acquire_blocking(&s.started, PENDERS - 1, 30 * SB_NSEC_PER_SEC), 0);
	assert_int_equal(sb_mutex_is_locked(&s.qm), false); /* the condvar wait gave it up */
	assert_int_equal(sb_semaphore_available(&s.sem), 0);
	assert_int_equal(sb_event_destroy(&s.gate), -EBUSY);
	assert_int_equal(sb_auto_event_destroy(&s.ae), -EBUSY);
	assert_int_equal(sb_condvar_destroy(&s.not_empty), -EBUSY);
	size_t cancelled = 99;
	assert_int_equal(sb_executor_group_shutdown(&s.g, &cancelled), 0);
	assert_int_equal(cancelled, PENDERS);
	for (int i = 0; i < PENDERS; i++)
		assert_int_equal(sb_join_wait(&tasks[WORKERS + i].join), -ECANCELED);

	/* ---- conservation after the shutdown */
	monitor_phase(&mon, "final checks");
	for (size_t i = 0; i < ntasks; i++) {
		soak_task *t = &tasks[i];
		if (!sb_task_is_released(&t->task))
			fail_msg("task %zu (%s #%d) still referenced", i, kind_name[t->kind], t->index);
		long clones = atomic_load(&t->fw.clones), wakes = atomic_load(&t->fw.wakes),
		     drops = atomic_load(&t->fw.drops);
		if (clones != wakes + drops)
			fail_msg("task %zu (%s #%d): %ld waker clones, %ld woken, %ld dropped", i,
				 kind_name[t->kind], t->index, clones, wakes, drops);
	}
	assert_int_equal(sb_semaphore_available(&s.sem), SEM_PERMITS);
	assert_int_equal(sb_mutex_unlock(&s.m), 0);
	assert_int_equal(sb_mutex_try_lock(&s.m), 0);
	assert_int_equal(sb_mutex_unlock(&s.m), 0);
	assert_int_equal(s.counter, atomic_load(&s.sections));
	assert_int_equal(sb_mutex_is_locked(&s.qm), false);
	assert_int_equal(sb_auto_event_try_wait(&s.ae), -EAGAIN); /* cancelled unsignalled */
	sb_auto_event_set(&s.ae);                                  /* main's signal goes back */
	assert_int_equal(sb_auto_event_try_wait(&s.ae), 0);
	assert_int_equal(sb_auto_event_try_wait(&s.ae), -EAGAIN);
	assert_int_equal(sb_semaphore_destroy(&s.sem), 0);
	assert_int_equal(sb_semaphore_destroy(&s.started), 0);
	assert_int_equal(sb_mutex_destroy(&s.m), 0);
	assert_int_equal(sb_mutex_destroy(&s.qm), 0);
	assert_int_equal(sb_condvar_destroy(&s.not_empty), 0);
	assert_int_equal(sb_condvar_destroy(&s.not_full), 0);
	assert_int_equal(sb_mutex_destroy(&s.hm), 0);
	assert_int_equal(sb_condvar_destroy(&s.ticket_cv), 0);
	assert_int_equal(sb_condvar_destroy(&s.taken_cv), 0);
	assert_int_equal(sb_event_destroy(&s.ev[0]), 0);
	assert_int_equal(sb_event_destroy(&s.ev[1]), 0);
	assert_int_equal(sb_event_destroy(&s.gate), 0);
	assert_int_equal(sb_auto_event_destroy(&s.ae), 0);
	monitor_stop(&mon);

	/* ---- the summary */
	struct totals k[KINDS], all;
	memset(&all, 0, sizeof all);
	for (int i = 0; i < KINDS; i++) {
		sum_kind(tasks, ntasks, i, &k[i]);
		for (int j = 0; j < STATS; j++)
			all.v[j] += k[i].v[j];
	}
	struct totals q; /* every condvar user */
	for (int j = 0; j < STATS; j++)
		q.v[j] = k[K_PROD].v[j] + k[K_CONS].v[j] + k[K_DEALER].v[j] + k[K_HAND].v[j];
	printf("soak: seed=0x%" PRIx64 " threads=%zu doorbell=%s target=%ld ops=%ld cancels=%ld"
	       " timeouts=%ld plans(wait/cancel_now/cancel_later/cancel_on_wake/timed)="
	       "%ld/%ld/%ld/%ld/%ld"
	       " | semaphore ops=%ld acquired=%ld try_failed=%ld cancels=%ld(queued=%ld partial=%ld"
	       " granted=%ld) timeouts=%ld(partial=%ld)"
	       " | mutex ops=%ld sections=%ld try_failed=%ld cancels=%ld(granted=%ld) timeouts=%ld"
	       " | condvar ops=%ld items=%ld tickets=%ld quits=%ld cancels=%ld(idle=%ld"
	       " notified_or_handed=%ld) timeouts=%ld"
	       " | event ops=%ld phases=%ld pulses=%ld cancels=%ld(released=%ld) timeouts=%ld"
	       " | auto_event ops=%ld signals=%ld cancels=%ld(granted=%ld) timeouts=%ld"
	       " | shutdown cancelled=%zu | %.2f s (workers %.2f s)\n",
	       cfg.seed, cfg.threads, cfg.eventfd ? "eventfd" : "msg_ring", cfg.ops, all.v[ST_OPS],
	       cancels(&all), all.v[ST_TIMEOUTS], all.v[ST_PLAN0 + PLAN_WAIT],
	       all.v[ST_PLAN0 + PLAN_CANCEL_NOW], all.v[ST_PLAN0 + PLAN_CANCEL_LATER],
	       all.v[ST_PLAN0 + PLAN_CANCEL_ON_WAKE], all.v[ST_TIMED],
	       k[K_SEM].v[ST_OPS], k[K_SEM].v[ST_DONE], k[K_SEM].v[ST_TRY_FAILED], cancels(&k[K_SEM]),
	       k[K_SEM].v[ST_CANCEL_QUEUED], k[K_SEM].v[ST_CANCEL_PARTIAL],
	       k[K_SEM].v[ST_CANCEL_GRANTED], k[K_SEM].v[ST_TIMEOUTS], k[K_SEM].v[ST_TIMEOUT_PARTIAL],
	       k[K_MUTEX].v[ST_OPS], atomic_load(&s.sections), k[K_MUTEX].v[ST_TRY_FAILED],
	       cancels(&k[K_MUTEX]), k[K_MUTEX].v[ST_CANCEL_GRANTED], k[K_MUTEX].v[ST_TIMEOUTS],
	       q.v[ST_OPS], s.total_items, s.tickets, q.v[ST_QUITS], cancels(&q), q.v[ST_CANCEL_IDLE],
	       q.v[ST_CANCEL_GRANTED],
	       q.v[ST_TIMEOUTS],
	       k[K_PHASE].v[ST_OPS], s.phases, k[K_PHASE].v[ST_PULSES], cancels(&k[K_PHASE]),
	       k[K_PHASE].v[ST_CANCEL_GRANTED], k[K_PHASE].v[ST_TIMEOUTS],
	       k[K_AUTO].v[ST_OPS], atomic_load(&s.token_takes), cancels(&k[K_AUTO]),
	       k[K_AUTO].v[ST_CANCEL_GRANTED], k[K_AUTO].v[ST_TIMEOUTS],
	       cancelled, seconds_since(&t0), work_s);
	fflush(stdout);
	free(s.seen);
	free(tasks);
}

int main(void)
{
	cfg.ops = (long)env_u64("SB_SOAK_OPS", DEFAULT_OPS, 1);
	cfg.seed = env_u64("SB_SOAK_SEED", DEFAULT_SEED, 0);
	cfg.threads = (size_t)env_u64("SB_SOAK_THREADS", 4, 1);
	cfg.eventfd = env_u64("SB_SOAK_EVENTFD", 0, 0) != 0;
	cfg.stall_s = (unsigned)env_u64("SB_SOAK_STALL", 60, 1);
	/* Printed first, so that a crash or hang still names its seed. */
	printf("soak: seed=0x%" PRIx64 " ops=%ld threads=%zu (SB_SOAK_SEED, SB_SOAK_OPS,"
	       " SB_SOAK_THREADS)\n",
	       cfg.seed, cfg.ops, cfg.threads);
	fflush(stdout);
	exec_skip_without_io_uring("test_soak");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(all_primitives_under_cancellation_and_deadlines_conserve_everything),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
