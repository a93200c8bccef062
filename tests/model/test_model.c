/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleaving tests: the races that matter, each explored over
 * every schedule with up to four preemptions (sched.c), then over random
 * schedules, under sequential consistency; then again under the weak
 * (release/acquire) memory model with fewer preemptions and a few stale
 * reads (README.md in this folder).  Each scenario checks conservation
 * (permits, notifications, the mutex) and that every registered waiter was
 * woken or is rightly waiting; under the weak model also that what a
 * releasing thread wrote before its release (a "payload") and a waker's
 * clone happen-before whoever the release lets through or runs the waker.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <syncband/syncband.h>

#include "clock.h"
#include "sched.h"

/* Under the weak model: a clone happens-before every use of that clone. */
#define COUNTING_WAKER_CLONED(c) MODEL_PLAIN_WRITE(c)
#define COUNTING_WAKER_USED(c) MODEL_PLAIN_READ(c)
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

enum { PREEMPTIONS = 4, LIMIT = 10000000, RANDOM_RUNS = 3000, SEED = 20261130 };
/* The weak model: fewer preemptions, each load may read an older store. */
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

/* A bound, or what the environment says instead (README.md: exploring further). */
static int bound(const char *name, int fallback)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : fallback;
}

/* What a releasing thread writes before it releases, for the one it lets through. */
static void publish(int *payload)
{
	*payload = 1;
	MODEL_PLAIN_WRITE(payload);
}

/* After the operation that the publisher's release let complete. */
static void consume(const int *payload)
{
	MODEL_PLAIN_READ(payload);
	MODEL_CHECK(*payload == 1);
}

/*
 * Waits (in a logical thread) until `w` is woken; false if that never comes.
 * The wake happens-before what follows, as with an executor.
 */
static bool await_wake(counting_waker *w)
{
	return sb_model_await_change(&w->wakes, 0);
}

static int poll_sem(sb_semaphore_acquire *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_semaphore_acquire_poll(f, &w);
}

static int poll_lock(sb_mutex_lock *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_mutex_lock_poll(f, &w);
}

static int poll_cv(sb_condvar_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_condvar_wait_poll(f, &w);
}

static int poll_event(sb_event_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_event_wait_poll(f, &w);
}

static int poll_auto(sb_auto_event_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_auto_event_wait_poll(f, &w);
}

/* ---------------------------------------------------------------- semaphore */

typedef struct sem_ctx {
	sb_semaphore sem;
	sb_semaphore_acquire f[3];
	counting_waker w[3];
	int r[3];
	int payload;
	int payload2; /* a second releaser's */
} sem_ctx;

static void sem_setup_empty(void *p)
{
	sem_ctx *c = p;
	sb_semaphore_init(&c->sem, 0);
	for (int i = 0; i < 3; i++)
		counting_waker_init(&c->w[i]);
}

/* A future the model says was granted: woken exactly once, ready on re-poll. */
static void expect_woken_and_ready(sb_semaphore_acquire *f, counting_waker *w)
{
	MODEL_CHECK(atomic_load(&w->wakes) == 1);
	MODEL_CHECK(poll_sem(f, w) == 0);
}

/*
 * release(1) racing the first registration of acquire(1); the acquirer
 * re-polls once woken, and reads what the releaser wrote once it has the permit.
 */
static void sem1_t0(void *p)
{
	sem_ctx *c = p;
	sb_semaphore_acquire_init(&c->f[0], &c->sem, 1);
	c->r[0] = poll_sem(&c->f[0], &c->w[0]);
	if (c->r[0] == SB_PENDING && await_wake(&c->w[0]) && poll_sem(&c->f[0], &c->w[0]) == 0)
		consume(&c->payload);
	else if (c->r[0] == 0)
		consume(&c->payload);
}
static void sem1_t1(void *p)
{
	sem_ctx *c = p;
	publish(&c->payload);
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
}
static void sem1_check(void *p)
{
	sem_ctx *c = p;
	/* Ready at once: never woken.  (A first poll that loses the race for
	 * the lone slot to this release may have cloned its waker for the node;
	 * it drops the clone, which the `live` check below sees.) */
	if (c->r[0] == SB_PENDING)
		expect_woken_and_ready(&c->f[0], &c->w[0]);
	else
		MODEL_CHECK(c->r[0] == 0 && atomic_load(&c->w[0].wakes) == 0);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* cancel of a partly granted head racing a release and a try_acquire. */
static void sem2_setup(void *p)
{
	sem_ctx *c = p;
	sem_setup_empty(p);
	sb_semaphore_init(&c->sem, 1);
	sb_semaphore_acquire_init(&c->f[0], &c->sem, 3);
	MODEL_CHECK(poll_sem(&c->f[0], &c->w[0]) == SB_PENDING); /* holds 1 of 3 */
	sb_semaphore_acquire_init(&c->f[1], &c->sem, 1);
	MODEL_CHECK(poll_sem(&c->f[1], &c->w[1]) == SB_PENDING);
}
static void sem2_t0(void *p)
{
	sem_ctx *c = p;
	sb_semaphore_acquire_cancel(&c->f[0]);
}
static void sem2_t1(void *p)
{
	sem_ctx *c = p;
	publish(&c->payload);
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
}
static void sem2_t2(void *p)
{
	sem_ctx *c = p;
	c->r[2] = sb_semaphore_try_acquire(&c->sem, 1);
}
static void sem2_check(void *p)
{
	sem_ctx *c = p;
	expect_woken_and_ready(&c->f[1], &c->w[1]);
	size_t held = 1 + (c->r[2] == 0);
	MODEL_CHECK(sb_semaphore_available(&c->sem) + held == 2);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* cancel racing a release that grants the head fully. */
static void sem3_setup(void *p)
{
	sem_ctx *c = p;
	sem_setup_empty(p);
	sb_semaphore_acquire_init(&c->f[0], &c->sem, 2);
	MODEL_CHECK(poll_sem(&c->f[0], &c->w[0]) == SB_PENDING);
	sb_semaphore_acquire_init(&c->f[1], &c->sem, 1);
	MODEL_CHECK(poll_sem(&c->f[1], &c->w[1]) == SB_PENDING);
}
static void sem3_t1(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(sb_semaphore_release(&c->sem, 2) == 0);
}
static void sem3_check(void *p)
{
	sem_ctx *c = p;
	expect_woken_and_ready(&c->f[1], &c->w[1]);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 1);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* close racing a release and a new acquire behind a partly granted head. */
static void sem4_setup(void *p)
{
	sem_ctx *c = p;
	sem_setup_empty(p);
	sb_semaphore_acquire_init(&c->f[0], &c->sem, 2);
	MODEL_CHECK(poll_sem(&c->f[0], &c->w[0]) == SB_PENDING);
}
static void sem4_t0(void *p)
{
	sem_ctx *c = p;
	sb_semaphore_close(&c->sem);
}
static void sem4_t2(void *p)
{
	sem_ctx *c = p;
	sb_semaphore_acquire_init(&c->f[1], &c->sem, 1);
	c->r[1] = poll_sem(&c->f[1], &c->w[1]);
}
static void sem4_check(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(poll_sem(&c->f[0], &c->w[0]) == -ESHUTDOWN);
	if (c->r[1] == SB_PENDING) {
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
		MODEL_CHECK(poll_sem(&c->f[1], &c->w[1]) == -ESHUTDOWN);
	} else {
		MODEL_CHECK(c->r[1] == -ESHUTDOWN);
	}
	/* the one released permit is back in the counter, nobody holds it */
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 1);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* two releases racing the cancel of the head of a multi-permit queue. */
static void sem5_t0(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
}
static void sem5_t1(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(sb_semaphore_release(&c->sem, 2) == 0);
}
static void sem5_check(void *p)
{
	sem_ctx *c = p;
	expect_woken_and_ready(&c->f[1], &c->w[1]);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 2);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* The lone waiter (one permit owed, no queue lock): its cancel racing a release. */
static void sem6_setup(void *p)
{
	sem_ctx *c = p;
	sem_setup_empty(p);
	sb_semaphore_acquire_init(&c->f[0], &c->sem, 1);
	MODEL_CHECK(poll_sem(&c->f[0], &c->w[0]) == SB_PENDING);
}
static void sem6_check(void *p)
{
	sem_ctx *c = p;
	/* Withdrawn or granted and handed back: the permit is in the counter. */
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 1);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* A lone waiter re-polled with a new waker, a second waiter, and a release. */
static void sem7_t0(void *p)
{
	sem_ctx *c = p;
	c->r[0] = poll_sem(&c->f[0], &c->w[2]);
	if (c->r[0] == 0) /* the permit of the release in sem2_t1 */
		consume(&c->payload);
}
static void sem7_t1(void *p)
{
	sem_ctx *c = p;
	sb_semaphore_acquire_init(&c->f[1], &c->sem, 1);
	c->r[1] = poll_sem(&c->f[1], &c->w[1]);
}
static void sem7_check(void *p)
{
	sem_ctx *c = p;
	/* FIFO: the first waiter gets the one permit, woken once if it waited. */
	if (c->r[0] == SB_PENDING) {
		MODEL_CHECK(atomic_load(&c->w[0].wakes) + atomic_load(&c->w[2].wakes) == 1);
		MODEL_CHECK(poll_sem(&c->f[0], &c->w[2]) == 0);
	} else {
		MODEL_CHECK(c->r[0] == 0);
	}
	MODEL_CHECK(c->r[1] == SB_PENDING && atomic_load(&c->w[1].wakes) == 0);
	sb_semaphore_acquire_cancel(&c->f[1]);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 0);
	for (int i = 0; i < 3; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* A lone waiter that took one permit of two: its cancel racing close. */
static void sem8_setup(void *p)
{
	sem_ctx *c = p;
	sem_setup_empty(p);
	sb_semaphore_init(&c->sem, 1);
	sb_semaphore_acquire_init(&c->f[0], &c->sem, 2);
	MODEL_CHECK(poll_sem(&c->f[0], &c->w[0]) == SB_PENDING);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 0);
}
static void sem8_check(void *p)
{
	sem_ctx *c = p;
	/* The permit it took is back, whoever finished it. */
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 1);
	MODEL_CHECK(sb_semaphore_is_closed(&c->sem));
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* release racing try_acquire: the permit comes with what the releaser wrote. */
static void sem9_t1(void *p)
{
	sem_ctx *c = p;
	c->r[1] = sb_semaphore_try_acquire(&c->sem, 1);
	if (c->r[1] == 0)
		consume(&c->payload);
}
static void sem9_check(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(sb_semaphore_available(&c->sem) == (c->r[1] == 0 ? 0 : 1));
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/*
 * A blocking acquire racing release: the parker (src/park.c) under the
 * model, its futex sleeps blocking the logical thread.
 */
static void sem10_t0(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(sb_semaphore_acquire_blocking(&c->sem, 1, SB_TIMEOUT_INFINITE) == 0);
	consume(&c->payload);
}
static void sem10_check(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* Two releases racing a try_acquire of both permits: the inline CAS of one
 * release fails on the other's, and its slow path adds the permit. */
static void sem11_t1(void *p)
{
	sem_ctx *c = p;
	c->payload2 = 1;
	MODEL_PLAIN_WRITE(&c->payload2);
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
}
static void sem11_t2(void *p)
{
	sem_ctx *c = p;
	c->r[2] = sb_semaphore_try_acquire(&c->sem, 2);
	if (c->r[2] == 0) { /* both permits: both releases came before */
		consume(&c->payload);
		MODEL_PLAIN_READ(&c->payload2);
	}
}
static void sem11_check(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(sb_semaphore_available(&c->sem) == (c->r[2] == 0 ? 0 : 2));
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/*
 * try_acquire of the semaphore's last permit whose inline CAS fails
 * spuriously (C11 lets a weak CAS), racing a release: its out-of-line retry
 * finds at least the permit it asks for, exactly that many unless the
 * release came first, and must take it.  Nothing else takes permits, so it
 * never fails.
 */
static void sem12_setup(void *p)
{
	sem_ctx *c = p;
	sem_setup_empty(p);
	sb_semaphore_init(&c->sem, 1);
	sb_model_allow_spurious_failures(1);
}
static void sem12_t1(void *p)
{
	sem_ctx *c = p;
	c->r[1] = sb_semaphore_try_acquire(&c->sem, 1);
}
static void sem12_check(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(c->r[1] == 0);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 1);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/*
 * The cancel of a full grant nobody observed hands back the maximum while
 * the counter already holds twice the maximum (earlier grants returned):
 * the counter saturates at 2 * max + 1 (semaphore.h).  Racing close, the
 * cancel may find close holding the queue lock and return the permits
 * under the lock, to an empty queue: the same saturation applies there.
 */
static void sem13_setup(void *p)
{
	sem_ctx *c = p;
	const size_t max = SB_SEMAPHORE_MAX_PERMITS;
	sem_setup_empty(p);
	for (int i = 0; i < 2; i++) {
		sb_semaphore_acquire_init(&c->f[i], &c->sem, max);
		MODEL_CHECK(poll_sem(&c->f[i], &c->w[i]) == SB_PENDING);
	}
	for (int i = 0; i < 3; i++) /* both granted, then max in the counter */
		MODEL_CHECK(sb_semaphore_release(&c->sem, max) == 0);
	sb_semaphore_acquire_cancel(&c->f[0]);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 2 * max);
}
static void sem13_t0(void *p)
{
	sem_ctx *c = p;
	sb_semaphore_close(&c->sem);
}
static void sem13_t1(void *p)
{
	sem_ctx *c = p;
	sb_semaphore_acquire_cancel(&c->f[1]);
}
static void sem13_check(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(sb_semaphore_is_closed(&c->sem));
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 2 * (size_t)SB_SEMAPHORE_MAX_PERMITS + 1);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/*
 * sb_future_wait_blocking on a future of the caller's own: its first poll
 * hands a clone of the parker's waker to another thread, which writes a
 * payload and wakes it; the poll that wake causes reads the payload.  Only
 * the parker orders the two (its wakes release, the fetch_and before each
 * poll acquires), as an executor's wake happens-before the poll it causes.
 * By reference, the waker then drops its clone: the call returns only once
 * that drop happened-before (the parker lives in its frame, which the model
 * treats as freed when the thread returns).
 */
typedef struct handoff_ctx {
	sb_waker waker;     /* the clone the first poll hands over */
	atomic_int handed;  /* 1 once `waker` is filled in */
	int polls;
	int r;
	int payload;
} handoff_ctx;

static int handoff_poll(void *f, const sb_waker *w)
{
	handoff_ctx *c = f;
	if (c->polls++ > 0) { /* woken: after the wake */
		consume(&c->payload);
		return 0;
	}
	c->waker = sb_waker_clone(w);
	MODEL_PLAIN_WRITE(&c->waker);
	/* relaxed: the handover itself is the model's signal below. */
	atomic_store_explicit(&c->handed, 1, memory_order_relaxed);
	sb_model_signal(&c->handed);
	return SB_PENDING;
}

static void handoff_cancel(void *f)
{
	(void)f;
	MODEL_CHECK(!"an infinite wait never cancels");
}

static const sb_future_ops handoff_ops = { handoff_poll, handoff_cancel };

static void handoff_waiter(void *p)
{
	handoff_ctx *c = p;
	c->r = sb_future_wait_blocking(c, &handoff_ops, SB_TIMEOUT_INFINITE);
}
/* Waits for the clone: the waiter's first poll happens-before what follows. */
static bool handoff_receive(handoff_ctx *c)
{
	if (!sb_model_await_change(&c->handed, 0))
		return false;
	MODEL_PLAIN_READ(&c->waker);
	publish(&c->payload);
	return true;
}
static void handoff_wake(void *p)
{
	handoff_ctx *c = p;
	if (handoff_receive(c))
		sb_waker_wake(c->waker);
}
static void handoff_wake_by_ref(void *p)
{
	handoff_ctx *c = p;
	if (!handoff_receive(c))
		return;
	sb_waker_wake_by_ref(&c->waker);
	sb_waker_drop(c->waker);
}
static void handoff_check(void *p)
{
	handoff_ctx *c = p;
	MODEL_CHECK(c->r == 0 && c->polls == 2);
}

/* ----------------------------------------------------------------- deadline */

/*
 * An expiry racing the polls of a deadline around a pending acquire: the
 * poll that acts on it reads what the expirer wrote before.
 */
typedef struct deadline_ctx {
	sb_semaphore sem;
	sb_semaphore_acquire acq;
	sb_deadline d;
	counting_waker w;
	int r;
	int payload;
} deadline_ctx;

static void dl_setup(void *p)
{
	deadline_ctx *c = p;
	sb_semaphore_init(&c->sem, 0);
	sb_semaphore_acquire_init(&c->acq, &c->sem, 1);
	sb_deadline_init(&c->d, &c->acq, &sb_semaphore_acquire_ops);
	counting_waker_init(&c->w);
}
static void dl_t0(void *p)
{
	deadline_ctx *c = p;
	sb_waker w = counting_waker_ref(&c->w);
	c->r = sb_deadline_poll(&c->d, &w);
	if (c->r == SB_PENDING) /* a re-poll (a timer's wake would cause one) */
		c->r = sb_deadline_poll(&c->d, &w);
	if (c->r == -ETIMEDOUT)
		consume(&c->payload);
}
static void dl_t1(void *p)
{
	deadline_ctx *c = p;
	publish(&c->payload);
	sb_deadline_expire(&c->d);
}
static void dl_check(void *p)
{
	deadline_ctx *c = p;
	MODEL_CHECK(sb_deadline_is_expired(&c->d));
	if (c->r == SB_PENDING) {
		sb_waker w = counting_waker_ref(&c->w);
		c->r = sb_deadline_poll(&c->d, &w);
	}
	MODEL_CHECK(c->r == -ETIMEDOUT); /* inner never completes */
	MODEL_CHECK(atomic_load(&c->w.live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* -------------------------------------------------------------------- mutex */

typedef struct mutex_ctx {
	sb_mutex m;
	sb_mutex_lock f[2];
	counting_waker w[2];
	int r[2];
	int payload;
} mutex_ctx;

/*
 * The model's clock (src/clock.h), installed for every scenario (main): a
 * mutex waiter is timed from when a barger first passes it, and real time
 * passing between a setup and its threads would change what an unlock does.
 * A setup moves it forward; model_mutex_init, which makes every scenario's
 * mutex, first starts it at MODEL_CLOCK_START, so an unlock reads the same
 * time in every execution, whichever scenario ran before (at 0, a waiter
 * first passed then would be timed as 1, 0 meaning never, and look overdue
 * at once).
 */
static uint64_t model_now;
static const uint64_t MODEL_CLOCK_START = 1000;
static uint64_t model_clock(void)
{
	return model_now;
}

static void model_mutex_init(sb_mutex *m, bool fifo)
{
	model_now = MODEL_CLOCK_START;
	if (fifo)
		sb_mutex_init_fifo(m);
	else
		sb_mutex_init(m);
}

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

/* ------------------------------------------------------------------ condvar */

typedef struct cv_ctx {
	sb_mutex m;
	sb_condvar cv;
	sb_condvar_wait f[2];
	counting_waker w[2];
	int notified;
	bool repolled_pending; /* woken, re-polled, and waiting for the mutex */
	int payload;
} cv_ctx;

static void cv_setup_two_waits(void *p)
{
	cv_ctx *c = p;
	model_mutex_init(&c->m, false);
	sb_condvar_init(&c->cv);
	for (int i = 0; i < 2; i++) {
		counting_waker_init(&c->w[i]);
		MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
		sb_condvar_wait_init(&c->f[i], &c->cv, &c->m);
		MODEL_CHECK(poll_cv(&c->f[i], &c->w[i]) == SB_PENDING);
	}
}

/* notify_one racing the cancel of the waiter it may choose. */
static void cv1_t0(void *p)
{
	cv_ctx *c = p;
	sb_condvar_notify_one(&c->cv);
}
static void cv1_t1(void *p)
{
	cv_ctx *c = p;
	sb_condvar_wait_cancel(&c->f[0]);
}
static void cv1_check(void *p)
{
	cv_ctx *c = p;
	/* the one notification reaches the survivor, whoever won the race */
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_cv(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_mutex_is_locked(&c->m));
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	MODEL_CHECK(sb_condvar_destroy(&c->cv) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* a wait giving up the mutex racing a notifier that takes it. */
static void cv2_setup(void *p)
{
	cv_ctx *c = p;
	model_mutex_init(&c->m, false);
	sb_condvar_init(&c->cv);
	counting_waker_init(&c->w[0]);
	MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
	sb_condvar_wait_init(&c->f[0], &c->cv, &c->m);
}
static void cv2_t0(void *p)
{
	cv_ctx *c = p;
	MODEL_CHECK(poll_cv(&c->f[0], &c->w[0]) == SB_PENDING);
	/* Notified: re-polled, it holds the mutex and sees the notifier's writes,
	 * or waits for the notifier's unlock to hand it over. */
	if (!await_wake(&c->w[0]))
		return;
	if (poll_cv(&c->f[0], &c->w[0]) == 0)
		consume(&c->payload);
	else
		c->repolled_pending = true;
}
static void cv2_t1(void *p)
{
	cv_ctx *c = p;
	if (sb_mutex_try_lock(&c->m) != 0)
		return; /* the waiter still holds it: nothing to notify about */
	c->notified = 1;
	publish(&c->payload);
	sb_condvar_notify_one(&c->cv);
	MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
}
static void cv2_check(void *p)
{
	cv_ctx *c = p;
	if (c->notified) { /* notified under the mutex after the wait gave it up */
		MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1 + c->repolled_pending);
		MODEL_CHECK(poll_cv(&c->f[0], &c->w[0]) == 0);
		MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	} else {
		MODEL_CHECK(atomic_load(&c->w[0].wakes) == 0);
		sb_condvar_wait_cancel(&c->f[0]);
	}
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	MODEL_CHECK(sb_condvar_destroy(&c->cv) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

/* ------------------------------------------------------------------- events */

typedef struct event_ctx {
	sb_event e;
	sb_auto_event a;
	sb_event_wait f[2];
	sb_auto_event_wait g[2];
	counting_waker w[3];
	int r1;
	int r2;
	int payload;
	int payload2;  /* a second setter's */
	bool done[2];  /* plain: setter i has returned (the real-time order) */
} event_ctx;

/* set racing reset and a new wait's first poll. */
static void ev1_setup(void *p)
{
	event_ctx *c = p;
	sb_event_init(&c->e, false);
	counting_waker_init(&c->w[0]);
	counting_waker_init(&c->w[1]);
	sb_event_wait_init(&c->f[0], &c->e);
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == SB_PENDING);
	sb_event_wait_init(&c->f[1], &c->e);
}
static void ev1_t0(void *p)
{
	event_ctx *c = p;
	publish(&c->payload);
	sb_event_set(&c->e);
}
static void ev1_t1(void *p)
{
	event_ctx *c = p;
	sb_event_reset(&c->e);
}
static void ev1_t2(void *p)
{
	event_ctx *c = p;
	c->r1 = poll_event(&c->f[1], &c->w[1]);
	if (c->r1 == 0) /* only set() sets it */
		consume(&c->payload);
}
static void ev1_check(void *p)
{
	event_ctx *c = p;
	/* registered before set(): released, and stays released after reset() */
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == 0);
	if (c->r1 == SB_PENDING) {
		if (atomic_load(&c->w[1].wakes) == 1) {
			MODEL_CHECK(poll_event(&c->f[1], &c->w[1]) == 0);
		} else {
			/* registered after set(), so a reset() came between them */
			MODEL_CHECK(!sb_event_is_set(&c->e));
			sb_event_wait_cancel(&c->f[1]);
		}
	} else {
		MODEL_CHECK(c->r1 == 0);
	}
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* set of an idle event (its lock-free path) racing is_set and try_wait. */
static void ev2_setup(void *p)
{
	event_ctx *c = p;
	sb_event_init(&c->e, false);
}
static void ev2_t0(void *p)
{
	event_ctx *c = p;
	publish(&c->payload);
	sb_event_set(&c->e);
}
static void ev2_t1(void *p)
{
	event_ctx *c = p;
	if (sb_event_is_set(&c->e))
		consume(&c->payload);
}
static void ev2_t2(void *p)
{
	event_ctx *c = p;
	if (sb_event_try_wait(&c->e) == 0)
		consume(&c->payload);
}
static void ev2_check(void *p)
{
	event_ctx *c = p;
	MODEL_CHECK(sb_event_is_set(&c->e));
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
}

/*
 * set() with a wait queued takes its slow path, which sets EV_SET when it
 * takes the queue lock (issue 10: that CAS was acquire-only).  A lock-free
 * reader (is_set, or a new wait's first poll) that sees the bit must also
 * see what the setter wrote before set().
 */
static void ev3_setup(void *p)
{
	event_ctx *c = p;
	sb_event_init(&c->e, false);
	for (int i = 0; i < 2; i++)
		counting_waker_init(&c->w[i]);
	sb_event_wait_init(&c->f[0], &c->e);
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == SB_PENDING);
	sb_event_wait_init(&c->f[1], &c->e);
}
static void ev3_t2(void *p)
{
	event_ctx *c = p;
	c->r1 = poll_event(&c->f[1], &c->w[1]);
	if (c->r1 == 0) {
		consume(&c->payload);
		return;
	}
	/* Polled again before any wake (a poll the executor makes for another
	 * reason): it owes what it sees to set()'s release alone. */
	if (poll_event(&c->f[1], &c->w[1]) == 0)
		consume(&c->payload);
	else if (await_wake(&c->w[1]) && poll_event(&c->f[1], &c->w[1]) == 0)
		consume(&c->payload);
}
static void ev3_check(void *p)
{
	event_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == 0);
	/* no reset: a second wait completes at once or is released by the set */
	if (c->r1 == SB_PENDING)
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_event(&c->f[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_event_is_set(&c->e));
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* set of an idle event racing a first poll (its CAS may fail on EV_SET). */
static void ev4_setup(void *p)
{
	event_ctx *c = p;
	sb_event_init(&c->e, false);
	counting_waker_init(&c->w[0]);
	sb_event_wait_init(&c->f[0], &c->e);
}
static void ev4_t1(void *p)
{
	event_ctx *c = p;
	c->r1 = poll_event(&c->f[0], &c->w[0]);
	if (c->r1 == SB_PENDING && await_wake(&c->w[0]) && poll_event(&c->f[0], &c->w[0]) == 0)
		consume(&c->payload);
	else if (c->r1 == 0)
		consume(&c->payload);
}
static void ev4_check(void *p)
{
	event_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == (c->r1 == SB_PENDING));
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == 0);
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

/*
 * set racing a reset followed by is_set in another thread: after its own
 * reset, is_set sees SET only from a later set, whose writes it must see
 * (the reset may also send set() to its slow path).
 */
static void ev5_t1(void *p)
{
	event_ctx *c = p;
	sb_event_reset(&c->e);
	c->r1 = sb_event_is_set(&c->e);
	if (c->r1)
		consume(&c->payload);
}
static void ev5_check(void *p)
{
	event_ctx *c = p;
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
}

/*
 * Two auto-reset sets racing a try_wait.  A set that had returned before the
 * try_wait began is in the release sequence its CAS reads from.
 */
static void ae4_set(event_ctx *c, int i, int *payload)
{
	*payload = 1;
	MODEL_PLAIN_WRITE(payload);
	sb_auto_event_set(&c->a);
	c->done[i] = true;
}
static void ae4_t0(void *p)
{
	event_ctx *c = p;
	ae4_set(c, 0, &c->payload);
}
static void ae4_t1(void *p)
{
	event_ctx *c = p;
	ae4_set(c, 1, &c->payload2);
}
static void ae4_t2(void *p)
{
	event_ctx *c = p;
	bool before[2] = { c->done[0], c->done[1] };
	c->r2 = sb_auto_event_try_wait(&c->a);
	if (c->r2 != 0)
		return;
	if (before[0])
		MODEL_PLAIN_READ(&c->payload);
	if (before[1])
		MODEL_PLAIN_READ(&c->payload2);
}
static void ae4_check(void *p)
{
	event_ctx *c = p;
	/* One signal stored, or two if the try_wait came between the sets. */
	int taken = (c->r2 == 0) + (sb_auto_event_try_wait(&c->a) == 0);
	MODEL_CHECK(taken >= 1 && taken <= 2);
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == -EAGAIN);
	MODEL_CHECK(sb_auto_event_destroy(&c->a) == 0);
}

/* auto-reset set racing the cancel of the wait it hands the signal to. */
static void ae1_setup(void *p)
{
	event_ctx *c = p;
	sb_auto_event_init(&c->a, false);
	for (int i = 0; i < 2; i++) {
		counting_waker_init(&c->w[i]);
		sb_auto_event_wait_init(&c->g[i], &c->a);
		MODEL_CHECK(poll_auto(&c->g[i], &c->w[i]) == SB_PENDING);
	}
}
static void ae1_t0(void *p)
{
	event_ctx *c = p;
	publish(&c->payload);
	sb_auto_event_set(&c->a);
}
static void ae1_t1(void *p)
{
	event_ctx *c = p;
	sb_auto_event_wait_cancel(&c->g[0]);
}
static void ae1_check(void *p)
{
	event_ctx *c = p;
	/* exactly one signal, and it reached the survivor */
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
	MODEL_CHECK(poll_auto(&c->g[1], &c->w[1]) == 0);
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == -EAGAIN);
	MODEL_CHECK(sb_auto_event_destroy(&c->a) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}

/* auto-reset set racing the cancel of a lone wait (no queue lock). */
static void ae3_setup(void *p)
{
	event_ctx *c = p;
	sb_auto_event_init(&c->a, false);
	counting_waker_init(&c->w[0]);
	sb_auto_event_wait_init(&c->g[0], &c->a);
	MODEL_CHECK(poll_auto(&c->g[0], &c->w[0]) == SB_PENDING);
}
static void ae3_check(void *p)
{
	event_ctx *c = p;
	/* Withdrawn before the set, or handed it and passed it back: stored once. */
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == 0);
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == -EAGAIN);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
	MODEL_CHECK(sb_auto_event_destroy(&c->a) == 0);
}

/* auto-reset set racing a first poll and a try_wait: one signal, one taker. */
static void ae2_setup(void *p)
{
	event_ctx *c = p;
	sb_auto_event_init(&c->a, false);
	counting_waker_init(&c->w[0]);
	sb_auto_event_wait_init(&c->g[0], &c->a);
}
static void ae2_t1(void *p)
{
	event_ctx *c = p;
	c->r1 = poll_auto(&c->g[0], &c->w[0]);
	if (c->r1 == SB_PENDING && await_wake(&c->w[0]) && poll_auto(&c->g[0], &c->w[0]) == 0)
		consume(&c->payload);
	else if (c->r1 == 0)
		consume(&c->payload);
}
static void ae2_t2(void *p)
{
	event_ctx *c = p;
	c->r2 = sb_auto_event_try_wait(&c->a);
	if (c->r2 == 0)
		consume(&c->payload);
}
static void ae2_check(void *p)
{
	event_ctx *c = p;
	int waited = c->r1 == 0 || (c->r1 == SB_PENDING && atomic_load(&c->w[0].wakes) == 1);
	int tried = c->r2 == 0;
	MODEL_CHECK(waited + tried == 1);
	if (c->r1 == SB_PENDING && !waited)
		sb_auto_event_wait_cancel(&c->g[0]);
	else if (c->r1 == SB_PENDING)
		MODEL_CHECK(poll_auto(&c->g[0], &c->w[0]) == 0);
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == -EAGAIN);
	MODEL_CHECK(atomic_load(&c->w[0].live) == 0);
}

/*
 * The inline fast paths' CASes are weak: one that fails spuriously (C11
 * lets it) sends set() and try_wait() to their out-of-line retry, whose own
 * CAS must then publish (set) or synchronise (try_wait) as the inline one.
 */
static void ev_spurious_setup(void *p)
{
	ev2_setup(p);
	sb_model_allow_spurious_failures(1);
}
static void ae_spurious_setup(void *p)
{
	event_ctx *c = p;
	sb_auto_event_init(&c->a, false);
	sb_model_allow_spurious_failures(1);
}
static void ae_spurious_check(void *p)
{
	event_ctx *c = p;
	/* The signal was taken, or is still stored. */
	MODEL_CHECK((c->r2 == 0) == (sb_auto_event_try_wait(&c->a) == -EAGAIN));
}

/* ------------------------------------------------- broadcasts past a batch */

/*
 * The model build wakes in batches of 2 (src/waitq.h), so three waiters take
 * a broadcast past its first batch: the rest are marked released and moved
 * onto its guard list while it wakes the first two with the lock dropped.
 */
typedef struct bcast_ctx {
	sb_event e;
	sb_condvar cv;
	sb_mutex m;
	sb_event_wait f[3];
	sb_condvar_wait g[4];
	counting_waker w[4];
	int seen; /* what a wake saw when it polled a later wait */
	int cancelled; /* the wait a thread cancels */
} bcast_ctx;

static void bc_poll_last_event_wait(void *p)
{
	bcast_ctx *c = p;
	if (c->seen == SB_PENDING + 1)
		c->seen = poll_event(&c->f[2], &c->w[2]);
}

static void bc_event_setup(void *p)
{
	bcast_ctx *c = p;
	sb_event_init(&c->e, false);
	for (int i = 0; i < 3; i++) {
		counting_waker_init(&c->w[i]);
		sb_event_wait_init(&c->f[i], &c->e);
		MODEL_CHECK(poll_event(&c->f[i], &c->w[i]) == SB_PENDING);
	}
	c->seen = SB_PENDING + 1;
	c->w[0].on_wake = bc_poll_last_event_wait;
	c->w[0].hook_arg = c;
}
static void bc_event_t0(void *p)
{
	bcast_ctx *c = p;
	sb_event_set(&c->e);
}
static void bc_event_t1(void *p)
{
	bcast_ctx *c = p;
	sb_event_wait_cancel(&c->f[1]);
}
static void bc_event_t2(void *p)
{
	bcast_ctx *c = p;
	sb_event_reset(&c->e);
}
static void bc_event_check(void *p)
{
	bcast_ctx *c = p;
	/* the wake of the first saw the third released, before set() reached it */
	MODEL_CHECK(c->seen == 0);
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(poll_event(&c->f[0], &c->w[0]) == 0);
	MODEL_CHECK(atomic_load(&c->w[1].wakes) <= 1);
	MODEL_CHECK(atomic_load(&c->w[2].wakes) <= 1); /* 0 when it left by itself */
	for (int i = 0; i < 3; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_event_destroy(&c->e) == 0);
}

static void bc_cv_setup(void *p)
{
	bcast_ctx *c = p;
	c->cancelled = 2;
	sb_condvar_init(&c->cv);
	model_mutex_init(&c->m, false);
	for (int i = 0; i < 3; i++) {
		counting_waker_init(&c->w[i]);
		MODEL_CHECK(sb_mutex_try_lock(&c->m) == 0);
		sb_condvar_wait_init(&c->g[i], &c->cv, &c->m);
		MODEL_CHECK(poll_cv(&c->g[i], &c->w[i]) == SB_PENDING);
	}
	counting_waker_init(&c->w[3]);
}

/* From the first wake of notify_all: complete, wait again, notify_one. */
static void bc_wait_again_and_notify_one(void *p)
{
	bcast_ctx *c = p;
	if (c->seen != SB_PENDING + 1)
		return;
	c->seen = poll_cv(&c->g[0], &c->w[0]);
	if (c->seen != 0)
		return; /* the mutex is busy: nothing to test from here */
	sb_condvar_wait_init(&c->g[3], &c->cv, &c->m);
	MODEL_CHECK(poll_cv(&c->g[3], &c->w[3]) == SB_PENDING);
	sb_condvar_notify_one(&c->cv);
}

static void bc_cv_rewait_setup(void *p)
{
	bcast_ctx *c = p;
	bc_cv_setup(p);
	c->seen = SB_PENDING + 1;
	c->cancelled = 1; /* one notify_all released, whose cancel passes nothing on */
	c->w[0].on_wake = bc_wait_again_and_notify_one;
	c->w[0].hook_arg = c;
}
static void bc_cv_t0(void *p)
{
	bcast_ctx *c = p;
	sb_condvar_notify_all(&c->cv);
}
static void bc_cv_t1(void *p)
{
	bcast_ctx *c = p;
	sb_condvar_wait_cancel(&c->g[c->cancelled]);
}
static void bc_cv_t2(void *p)
{
	bcast_ctx *c = p;
	sb_condvar_notify_one(&c->cv);
}
/* Every wait that was not cancelled completes, holding the mutex in turn. */
static void bc_cv_drain(bcast_ctx *c, int first, int last)
{
	for (int i = first; i <= last; i++) {
		if (i == c->cancelled)
			continue;
		MODEL_CHECK(atomic_load(&c->w[i].wakes) >= 1);
		MODEL_CHECK(poll_cv(&c->g[i], &c->w[i]) == 0);
		MODEL_CHECK(sb_mutex_unlock(&c->m) == 0);
	}
}
static void bc_cv_check(void *p)
{
	bcast_ctx *c = p;
	bc_cv_drain(c, 0, 1);
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	for (int i = 0; i < 3; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_condvar_destroy(&c->cv) == 0);
	MODEL_CHECK(sb_mutex_destroy(&c->m) == 0);
}
static void bc_cv_rewait_check(void *p)
{
	bcast_ctx *c = p;
	if (c->seen == 0) {
		/* notify_one went to the wait registered after notify_all, not to
		 * one notify_all owed: no notification lost */
		MODEL_CHECK(atomic_load(&c->w[3].wakes) == 1);
		bc_cv_drain(c, 1, 3); /* g[0] completed in the wake */
	} else {
		bc_cv_drain(c, 0, 2);
	}
	MODEL_CHECK(!sb_mutex_is_locked(&c->m));
	for (int i = 0; i < 4; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_condvar_destroy(&c->cv) == 0);
}

/* ------------------------------------------- waker clones that re-enter */

/*
 * A clone that re-enters the primitive would deadlock if it ran under the
 * queue lock; the scheduler reports a deadlock when every thread blocks.
 */
static void reenter_release(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
}
static void rc_sem_setup(void *p)
{
	sem_ctx *c = p;
	sem_setup_empty(p);
	sb_semaphore_acquire_init(&c->f[0], &c->sem, 1);
	MODEL_CHECK(poll_sem(&c->f[0], &c->w[0]) == SB_PENDING); /* lone */
	c->w[1].on_clone = reenter_release;
	c->w[1].hook_arg = c;
}
static void rc_sem_t0(void *p)
{
	sem_ctx *c = p;
	sb_semaphore_acquire_init(&c->f[1], &c->sem, 1);
	c->r[1] = poll_sem(&c->f[1], &c->w[1]);
}
static void rc_sem_check(void *p)
{
	sem_ctx *c = p;
	/* two permits released, two acquires of one: both served, none left */
	expect_woken_and_ready(&c->f[0], &c->w[0]);
	if (c->r[1] == SB_PENDING)
		expect_woken_and_ready(&c->f[1], &c->w[1]);
	else
		MODEL_CHECK(c->r[1] == 0);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

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

static void reenter_auto_set(void *p)
{
	event_ctx *c = p;
	sb_auto_event_set(&c->a);
}
static void rc_auto_setup(void *p)
{
	event_ctx *c = p;
	sb_auto_event_init(&c->a, false);
	for (int i = 0; i < 2; i++) {
		counting_waker_init(&c->w[i]);
		sb_auto_event_wait_init(&c->g[i], &c->a);
	}
	MODEL_CHECK(poll_auto(&c->g[0], &c->w[0]) == SB_PENDING); /* lone */
	c->w[1].on_clone = reenter_auto_set;
	c->w[1].hook_arg = c;
}
static void rc_auto_t0(void *p)
{
	event_ctx *c = p;
	c->r1 = poll_auto(&c->g[1], &c->w[1]);
}
static void rc_auto_check(void *p)
{
	event_ctx *c = p;
	/* two sets, two waits: both served, no signal left over */
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(poll_auto(&c->g[0], &c->w[0]) == 0);
	if (c->r1 == SB_PENDING) {
		MODEL_CHECK(atomic_load(&c->w[1].wakes) == 1);
		MODEL_CHECK(poll_auto(&c->g[1], &c->w[1]) == 0);
	} else {
		MODEL_CHECK(c->r1 == 0);
	}
	MODEL_CHECK(sb_auto_event_try_wait(&c->a) == -EAGAIN);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
}


/* ---------------------------------------------------------------- scenarios */

static const sb_model_scenario scenarios[] = {
	{ "semaphore: release racing a first registration", 2, sizeof(sem_ctx),
	  sem_setup_empty, { sem1_t0, sem1_t1 }, sem1_check },
	{ "semaphore: cancel of a partial grant racing release and try_acquire", 3,
	  sizeof(sem_ctx), sem2_setup, { sem2_t0, sem2_t1, sem2_t2 }, sem2_check },
	{ "semaphore: cancel racing a full grant", 2, sizeof(sem_ctx), sem3_setup,
	  { sem2_t0, sem3_t1 }, sem3_check },
	{ "semaphore: close racing release and acquire", 3, sizeof(sem_ctx), sem4_setup,
	  { sem4_t0, sem2_t1, sem4_t2 }, sem4_check },
	{ "semaphore: two releases racing cancel of the head", 3, sizeof(sem_ctx), sem3_setup,
	  { sem5_t0, sem5_t1, sem2_t0 }, sem5_check },
	{ "semaphore: cancel of a lone waiter racing release", 2, sizeof(sem_ctx), sem6_setup,
	  { sem2_t0, sem2_t1 }, sem6_check },
	{ "semaphore: lone waiter's new waker racing a second waiter and release", 3,
	  sizeof(sem_ctx), sem6_setup, { sem7_t0, sem7_t1, sem2_t1 }, sem7_check },
	{ "semaphore: cancel of a lone waiter holding a permit racing close", 2,
	  sizeof(sem_ctx), sem8_setup, { sem2_t0, sem4_t0 }, sem8_check },
	{ "semaphore: blocking acquire racing release", 2, sizeof(sem_ctx), sem_setup_empty,
	  { sem10_t0, sem2_t1 }, sem10_check },
	{ "blocking: a wake from another thread racing the parker's sleep", 2,
	  sizeof(handoff_ctx), NULL, { handoff_waiter, handoff_wake }, handoff_check },
	{ "blocking: a wake by reference and a drop racing the parker's sleep and return", 2,
	  sizeof(handoff_ctx), NULL, { handoff_waiter, handoff_wake_by_ref }, handoff_check },
	{ "deadline: an expiry racing the polls of a pending acquire", 2, sizeof(deadline_ctx),
	  dl_setup, { dl_t0, dl_t1 }, dl_check },
	{ "semaphore: release racing try_acquire", 2, sizeof(sem_ctx), sem_setup_empty,
	  { sem2_t1, sem9_t1 }, sem9_check },
	{ "semaphore: two releases racing a try_acquire of both", 3, sizeof(sem_ctx),
	  sem_setup_empty, { sem2_t1, sem11_t1, sem11_t2 }, sem11_check },
	{ "semaphore: a returned grant that saturates the counter racing close", 2, sizeof(sem_ctx),
	  sem13_setup, { sem13_t0, sem13_t1 }, sem13_check },
	{ "semaphore: try_acquire of the last permit whose inline CAS fails spuriously racing release",
	  2, sizeof(sem_ctx), sem12_setup, { sem2_t1, sem12_t1 }, sem12_check },
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
	{ "condvar: notify_one racing cancel", 2, sizeof(cv_ctx), cv_setup_two_waits,
	  { cv1_t0, cv1_t1 }, cv1_check },
	{ "condvar: wait giving up the mutex racing a notifier", 2, sizeof(cv_ctx), cv2_setup,
	  { cv2_t0, cv2_t1 }, cv2_check },
	{ "event: set racing reset and a new wait", 3, sizeof(event_ctx), ev1_setup,
	  { ev1_t0, ev1_t1, ev1_t2 }, ev1_check },
	{ "event: set of an idle event racing is_set and try_wait", 3, sizeof(event_ctx),
	  ev2_setup, { ev2_t0, ev2_t1, ev2_t2 }, ev2_check },
	{ "event: set of an idle event racing a first poll", 2, sizeof(event_ctx), ev4_setup,
	  { ev2_t0, ev4_t1 }, ev4_check },
	{ "event: set racing a reset and is_set", 2, sizeof(event_ctx), ev2_setup,
	  { ev2_t0, ev5_t1 }, ev5_check },
	{ "event: set with a wait queued racing is_set and a first poll", 3,
	  sizeof(event_ctx), ev3_setup, { ev2_t0, ev2_t1, ev3_t2 }, ev3_check },
	{ "event: set whose inline CAS fails spuriously racing is_set", 2, sizeof(event_ctx),
	  ev_spurious_setup, { ev2_t0, ev2_t1 }, ev2_check },
	{ "auto event: try_wait whose inline CAS fails spuriously racing set", 2,
	  sizeof(event_ctx), ae_spurious_setup, { ae1_t0, ae2_t2 }, ae_spurious_check },
	{ "auto event: set racing cancel of the chosen wait", 2, sizeof(event_ctx), ae1_setup,
	  { ae1_t0, ae1_t1 }, ae1_check },
	{ "auto event: set racing a first poll and try_wait", 3, sizeof(event_ctx), ae2_setup,
	  { ae1_t0, ae2_t1, ae2_t2 }, ae2_check },
	{ "auto event: two sets racing try_wait", 3, sizeof(event_ctx), ae2_setup,
	  { ae4_t0, ae4_t1, ae4_t2 }, ae4_check },
	{ "auto event: set racing cancel of a lone wait", 2, sizeof(event_ctx), ae3_setup,
	  { ae1_t0, ae1_t1 }, ae3_check },
	{ "event: set past a batch racing cancel and reset; a wake polls a later wait", 3,
	  sizeof(bcast_ctx), bc_event_setup, { bc_event_t0, bc_event_t1, bc_event_t2 },
	  bc_event_check },
	{ "condvar: notify_all past a batch racing notify_one and a cancel", 3, sizeof(bcast_ctx),
	  bc_cv_setup, { bc_cv_t0, bc_cv_t1, bc_cv_t2 }, bc_cv_check },
	{ "condvar: a wake of notify_all waits again and notifies one, racing a cancel", 2,
	  sizeof(bcast_ctx), bc_cv_rewait_setup, { bc_cv_t0, bc_cv_t1 }, bc_cv_rewait_check },
	{ "semaphore: a queued acquire whose clone releases, racing a release", 2,
	  sizeof(sem_ctx), rc_sem_setup, { rc_sem_t0, sem2_t1 }, rc_sem_check },
	{ "mutex: a queued locker whose clone unlocks, racing the lone waiter's cancel", 2,
	  sizeof(mutex_ctx), rc_mutex_setup, { rc_mutex_t0, rc_mutex_t1 }, rc_mutex_check },
	{ "auto event: a queued wait whose clone sets, racing a set", 2, sizeof(event_ctx),
	  rc_auto_setup, { rc_auto_t0, ae1_t0 }, rc_auto_check },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Every scenario in `set`, printing the schedule counts (sb_model_explore_all). */
static void explore_all(const sb_model_scenario *set, size_t n, int preemptions,
			int stale_reads)
{
	assert_true(sb_model_explore_all(set, n, preemptions, stale_reads, LIMIT));
}

static int weak_preemptions(void)
{
	return bound("SB_MODEL_PREEMPTIONS", WEAK_PREEMPTIONS);
}

static int stale_reads(void)
{
	return bound("SB_MODEL_STALE_READS", STALE_READS);
}

static void every_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	explore_all(scenarios, COUNT(scenarios), PREEMPTIONS, -1);
}

static void every_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	printf("weak model: %d preemptions, %d stale reads per schedule\n", weak_preemptions(),
	       stale_reads());
	explore_all(scenarios, COUNT(scenarios), weak_preemptions(), stale_reads());
}

static void every_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	assert_true(sb_model_random_all(scenarios, COUNT(scenarios), SEED, RANDOM_RUNS,
					WEAK_RANDOM_STALE_READS));
	printf("random, weak: %d schedules per scenario from seed %d, %d stale reads each\n",
	       RANDOM_RUNS, SEED, WEAK_RANDOM_STALE_READS);
}

/*
 * Counting tests: the atomic read-modify-writes (CAS, exchange, fetch-op:
 * the ones that cost) on the paths that must stay cheap.  Single-threaded,
 * outside the scheduler.
 */
static long rmws_before;
#define RMWS(expr) (rmws_before = sb_model_rmws(), (expr), sb_model_rmws() - rmws_before)

static void uncontended_paths_cost_one_read_modify_write_and_take_no_lock(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_semaphore s = SB_SEMAPHORE_INIT(1);
	/* one CAS each: a lock would cost two more */
	assert_int_equal(RMWS(sb_semaphore_release(&s, 1)), 1);
	assert_int_equal(RMWS(sb_semaphore_try_acquire(&s, 1)), 1);
	sb_semaphore_acquire a;
	sb_semaphore_acquire_init(&a, &s, 1);
	assert_int_equal(RMWS(sb_semaphore_release(&s, 1)), 1);
	assert_int_equal(RMWS(sb_semaphore_acquire_poll(&a, &noop)), 1);

	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock l;
	sb_mutex_lock_init(&l, &m);
	assert_int_equal(RMWS(sb_mutex_lock_poll(&l, &noop)), 1);
	assert_int_equal(RMWS(sb_mutex_unlock(&m)), 1);
	assert_int_equal(RMWS(sb_mutex_try_lock(&m)), 1);
	assert_int_equal(RMWS(sb_mutex_unlock(&m)), 1);

	sb_event e = SB_EVENT_INIT(0);
	assert_int_equal(RMWS(sb_event_set(&e)), 1);
	assert_int_equal(RMWS(sb_event_is_set(&e)), 0);
	assert_int_equal(RMWS(sb_event_reset(&e)), 1);
	sb_auto_event ae = SB_AUTO_EVENT_INIT(0);
	assert_int_equal(RMWS(sb_auto_event_set(&ae)), 1);
	assert_int_equal(RMWS(sb_auto_event_try_wait(&ae)), 1);

	sb_condvar cv = SB_CONDVAR_INIT;
	assert_int_equal(RMWS(sb_condvar_notify_one(&cv)), 0); /* nobody waits */
}

/*
 * A handoff to a pending future.  A lone acquire(1) installs its node in the
 * semaphore's word with one CAS and a release claims it with one; the woken
 * future reads its node.  One read-modify-write on each side (the auto-reset
 * event's and the mutex's lone waiter likewise).  With a second waiter the
 * first waiter decides and takes
 * the queue lock in one CAS and unlocks in one more; the releaser locks and
 * unlocks (publishing the new state in the unlock).  Two on each side.
 */
static void a_handoff_costs_one_or_two_read_modify_writes_on_each_side(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire a;
	sb_semaphore_acquire_init(&a, &s, 1);
	assert_int_equal(RMWS(sb_semaphore_acquire_poll(&a, &noop)), 1);
	assert_int_equal(RMWS(sb_semaphore_release(&s, 1)), 1);
	assert_int_equal(RMWS(sb_semaphore_acquire_poll(&a, &noop)), 0);

	/* Two permits owed: the queue, with its lock. */
	sb_semaphore_acquire_init(&a, &s, 2);
	assert_int_equal(RMWS(sb_semaphore_acquire_poll(&a, &noop)), 2);
	assert_int_equal(RMWS(sb_semaphore_release(&s, 2)), 2);
	assert_int_equal(RMWS(sb_semaphore_acquire_poll(&a, &noop)), 0);

	sb_auto_event e = SB_AUTO_EVENT_INIT(0);
	sb_auto_event_wait f;
	sb_auto_event_wait_init(&f, &e);
	assert_int_equal(RMWS(sb_auto_event_wait_poll(&f, &noop)), 1);
	assert_int_equal(RMWS(sb_auto_event_set(&e)), 1);
	assert_int_equal(RMWS(sb_auto_event_wait_poll(&f, &noop)), 0);

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

static void every_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	assert_true(sb_model_random_all(scenarios, COUNT(scenarios), SEED, RANDOM_RUNS, -1));
	printf("random: %d schedules per scenario from seed %d\n", RANDOM_RUNS, SEED);
}

/* test_model [RUN-PATTERN [SKIP-PATTERN]]: cmocka's test name filters. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	if (argc > 2)
		cmocka_set_skip_filter(argv[2]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_scenario_holds_over_random_schedules),
		cmocka_unit_test(uncontended_paths_cost_one_read_modify_write_and_take_no_lock),
		cmocka_unit_test(a_handoff_costs_one_or_two_read_modify_writes_on_each_side),
		cmocka_unit_test(every_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	sb__clock_set(model_clock);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
