/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The semaphore's races (src/semaphore.c), explored (model_common.h): release,
 * cancel, close and try_acquire racing registrations, the lone waiter and the
 * queue, a blocking acquire, a grant that saturates the counter, an inline
 * CAS that fails spuriously, a waker clone that re-enters; the
 * read-modify-writes of its uncontended paths and handoffs.  Every scenario
 * runs on an eventually fair semaphore (the default) and on a strict-FIFO
 * one ("fifo semaphore: ..."), the mode chosen by the set being explored.
 */
#include "model_common.h"

/* The mode of the semaphores the scenarios create: set by the test running them. */
static bool sem_fifo;

static void sem_init_mode(sb_semaphore *s, size_t permits)
{
	model_now = MODEL_CLOCK_START; /* the same time in every execution */
	MODEL_CHECK((sem_fifo ? sb_semaphore_init_fifo(s, permits) : sb_semaphore_init(s, permits)) == 0);
}

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
	sem_init_mode(&c->sem, 0);
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
	sem_init_mode(&c->sem, 1);
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

/*
 * close racing a release and a new acquire behind a head owed 2 (in the
 * eventually fair mode the acquire may take the released permit past it).
 */
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
	} else if (c->r[1] == 0) {
		/* eventually fair: it took the released permit past the head */
		MODEL_CHECK(!sem_fifo);
		MODEL_CHECK(sb_semaphore_available(&c->sem) == 0);
		MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
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

/*
 * A lone waiter re-polled with a new waker, a second waiter, and a release
 * (in the eventually fair mode the second may take the permit past it).
 */
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
	if (c->r[1] == 0) {
		/* Eventually fair: the second, queueing after the release woke
		 * the first (adopted into the queue by its re-poll), took the
		 * permit past it; the first, woken once, finds none. */
		MODEL_CHECK(!sem_fifo && c->r[0] == SB_PENDING);
		MODEL_CHECK(atomic_load(&c->w[0].wakes) + atomic_load(&c->w[2].wakes) == 1);
		MODEL_CHECK(poll_sem(&c->f[0], &c->w[2]) == SB_PENDING);
		sb_semaphore_acquire_cancel(&c->f[0]);
		MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
		MODEL_CHECK(sb_semaphore_available(&c->sem) == 1);
		for (int i = 0; i < 3; i++)
			MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
		MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
		return;
	}
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
	sem_init_mode(&c->sem, 1);
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
	sem_init_mode(&c->sem, 1);
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
 * Strict FIFO in both sets: grants to queued waiters, never free permits
 * set aside while they wait (which release would refuse past the maximum).
 */
static void sem13_setup(void *p)
{
	sem_ctx *c = p;
	const size_t max = SB_SEMAPHORE_MAX_PERMITS;
	sem_setup_empty(p);
	MODEL_CHECK(sb_semaphore_init_fifo(&c->sem, 0) == 0);
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

/* ------------------------------------------- eventually fair mode only */

/*
 * f[0] and f[1] owed one permit each, queued; a release woke f[0] (the
 * permit set aside, free for bargers too).
 */
static void fair_woken_setup(void *p)
{
	sem_ctx *c = p;
	sem_setup_empty(p);
	MODEL_CHECK(sb_semaphore_init(&c->sem, 0) == 0);
	for (int i = 0; i < 2; i++) {
		sb_semaphore_acquire_init(&c->f[i], &c->sem, 1);
		MODEL_CHECK(poll_sem(&c->f[i], &c->w[i]) == SB_PENDING);
	}
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
}
static void fair1_t0(void *p)
{
	sem_ctx *c = p;
	c->r[0] = poll_sem(&c->f[0], &c->w[0]); /* its retry */
}
static void fair1_t1(void *p)
{
	sem_ctx *c = p;
	c->r[1] = sb_semaphore_try_acquire(&c->sem, 1); /* a barger */
}
static void fair1_check(void *p)
{
	sem_ctx *c = p;
	/* The woken head gets a permit: at its retry, or, passed, woken
	 * again by the release. */
	if (c->r[0] == SB_PENDING) {
		MODEL_CHECK(atomic_load(&c->w[0].wakes) == 2);
		MODEL_CHECK(poll_sem(&c->f[0], &c->w[0]) == 0);
	} else {
		MODEL_CHECK(c->r[0] == 0 && atomic_load(&c->w[0].wakes) == 1);
	}
	/* Two permits: the barger's, or the next waiter's, woken once.  (The
	 * barger may take the released permit after it woke the next waiter,
	 * which then finds none and waits on.) */
	if (c->r[1] == 0) {
		MODEL_CHECK(atomic_load(&c->w[1].wakes) <= 1);
		if (atomic_load(&c->w[1].wakes) == 1)
			MODEL_CHECK(poll_sem(&c->f[1], &c->w[1]) == SB_PENDING);
		sb_semaphore_acquire_cancel(&c->f[1]);
	} else {
		MODEL_CHECK(c->r[1] == -EAGAIN);
		expect_woken_and_ready(&c->f[1], &c->w[1]);
	}
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* The woken head's cancel passes the wake on, racing a barger and a release. */
static void fair2_check(void *p)
{
	sem_ctx *c = p;
	MODEL_CHECK(c->r[1] == 0); /* a permit was free all along */
	expect_woken_and_ready(&c->f[1], &c->w[1]);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/*
 * f[0] owed 2 and f[1] owed 1, queued; a barger took a released permit past
 * f[0] (which times the queue), and the clock is past the bound: the next
 * release starts a handoff phase.
 */
static void fair_phase_setup(void *p)
{
	sem_ctx *c = p;
	sem_setup_empty(p);
	MODEL_CHECK(sb_semaphore_init(&c->sem, 0) == 0);
	model_now = MODEL_CLOCK_START;
	sb_semaphore_acquire_init(&c->f[0], &c->sem, 2);
	MODEL_CHECK(poll_sem(&c->f[0], &c->w[0]) == SB_PENDING);
	sb_semaphore_acquire_init(&c->f[1], &c->sem, 1);
	MODEL_CHECK(poll_sem(&c->f[1], &c->w[1]) == SB_PENDING);
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
	MODEL_CHECK(sb_semaphore_try_acquire(&c->sem, 1) == 0); /* held to the check */
	model_now += SB_FAIRNESS_BOUND_NS + 1;
}
static void fair3_t2(void *p)
{
	sem_ctx *c = p;
	c->r[2] = sb_semaphore_try_acquire(&c->sem, 1);
}
static void fair3_check(void *p)
{
	sem_ctx *c = p;
	/* The release's permit goes to the phase (a partial grant to f[0],
	 * passed on by its cancel) and so to f[1]; no barger gets it. */
	MODEL_CHECK(c->r[2] == -EAGAIN);
	expect_woken_and_ready(&c->f[1], &c->w[1]);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 0);
	MODEL_CHECK(sb_semaphore_release(&c->sem, 2) == 0); /* the setup's barger and f[1] */
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 2);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/*
 * f[0] and f[1] owed one permit each, queued; a release woke f[0], a barger
 * took its permit (timing the queue), a release that was the queue's check
 * found it within the bound and opened the budget (src/semaphore.c) with
 * that permit, and a second barger took it without the lock: nothing is
 * free, the budget lets releases by, f[0] is still WOKEN.
 */
static void fair_budget_setup(void *p)
{
	sem_ctx *c = p;
	fair_woken_setup(p);
	MODEL_CHECK(sb_semaphore_try_acquire(&c->sem, 1) == 0); /* passes f[0]: timed */
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);     /* the check: opens the budget */
	MODEL_CHECK(sb_semaphore_try_acquire(&c->sem, 1) == 0); /* from the budget */
	MODEL_CHECK(atomic_load(&c->w[1].wakes) == 0);
}
static void fair4_t0(void *p)
{
	sem_ctx *c = p;
	c->r[0] = poll_sem(&c->f[0], &c->w[0]); /* its retry */
	if (c->r[0] == 0)
		consume(&c->payload); /* the only free permit was t2's */
}
static void fair4_t1(void *p)
{
	sem_ctx *c = p;
	c->r[1] = sb_semaphore_try_acquire(&c->sem, 1); /* a barger, from the budget or locked */
	if (c->r[1] == 0)
		consume(&c->payload);
}
static void fair4_t2(void *p)
{
	sem_ctx *c = p;
	publish(&c->payload);
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0); /* into the budget, or locked */
}
/*
 * Polls every future woken since its last poll until none is; then no
 * future may wait armed while a permit is free (`total` in circulation,
 * `*held` completed), nor be woken more than once a poll.  Cancels the
 * rest.
 */
static void fair_drain(sem_ctx *c, int *wakes_seen, bool *done, size_t *held, size_t total)
{
	for (bool again = true; again;) {
		again = false;
		for (int i = 0; i < 2; i++) {
			int wakes = (int)atomic_load(&c->w[i].wakes);
			MODEL_CHECK(wakes <= wakes_seen[i] + 1);
			if (done[i] || wakes == wakes_seen[i])
				continue;
			wakes_seen[i] = wakes;
			int r = poll_sem(&c->f[i], &c->w[i]);
			MODEL_CHECK(r == 0 || r == SB_PENDING);
			if (r == 0) {
				done[i] = true;
				(*held)++;
			}
			again = true;
		}
	}
	for (int i = 0; i < 2; i++)
		if (!done[i]) {
			MODEL_CHECK(*held == total); /* armed: nothing free */
			sb_semaphore_acquire_cancel(&c->f[i]);
		}
}
static void fair4_check(void *p)
{
	sem_ctx *c = p;
	size_t held = 2 + (c->r[1] == 0); /* the setup's bargers, t1 */
	int wakes_seen[2] = { 1, 0 }; /* f[0]: its retry saw the setup's wake */
	bool done[2] = { c->r[0] == 0, false };
	held += (c->r[0] == 0);
	MODEL_CHECK(c->r[1] == 0 || c->r[1] == -EAGAIN);
	fair_drain(c, wakes_seen, done, &held, 3);
	MODEL_CHECK(sb_semaphore_release(&c->sem, held) == 0);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 3);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* close racing a release and a barger spending the budget: every permit comes back. */
static void fair5_check(void *p)
{
	sem_ctx *c = p;
	size_t held = 2 + (c->r[1] == 0);
	MODEL_CHECK(c->r[1] == 0 || c->r[1] == -EAGAIN || c->r[1] == -ESHUTDOWN);
	for (int i = 0; i < 2; i++) {
		int r = poll_sem(&c->f[i], &c->w[i]);
		MODEL_CHECK(r == -ESHUTDOWN || r == 0);
		held += (r == 0);
	}
	MODEL_CHECK(sb_semaphore_release(&c->sem, held) == 0);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 3);
	MODEL_CHECK(atomic_load(&c->w[0].live) + atomic_load(&c->w[1].live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

/* The scenarios of the eventually fair mode alone. */
#define FAIR_SCENARIOS \
	{ "semaphore: a woken head's retry racing a barger and a release", 3, sizeof(sem_ctx), \
	  fair_woken_setup, { fair1_t0, fair1_t1, sem2_t1 }, fair1_check }, \
	{ "semaphore: cancel of a woken head racing a barger and a release", 3, sizeof(sem_ctx), \
	  fair_woken_setup, { sem2_t0, fair1_t1, sem2_t1 }, fair2_check }, \
	{ "semaphore: a release that starts a phase racing cancel of the head and a barger", 3, \
	  sizeof(sem_ctx), fair_phase_setup, { sem2_t0, sem2_t1, fair3_t2 }, fair3_check }, \
	{ "semaphore: a woken head's retry racing a barger and a release in the budget", 3, \
	  sizeof(sem_ctx), fair_budget_setup, { fair4_t0, fair4_t1, fair4_t2 }, fair4_check }, \
	{ "semaphore: close racing a barger and a release in the budget", 3, sizeof(sem_ctx), \
	  fair_budget_setup, { sem4_t0, fair4_t1, fair4_t2 }, fair5_check },

/* ---------------------------------------------------------------- scenarios */

/* Every scenario, its name after the prefix P. */
#define SEM_SCENARIOS(P) \
	{ P "release racing a first registration", 2, sizeof(sem_ctx), \
	  sem_setup_empty, { sem1_t0, sem1_t1 }, sem1_check }, \
	{ P "cancel of a partial grant racing release and try_acquire", 3, \
	  sizeof(sem_ctx), sem2_setup, { sem2_t0, sem2_t1, sem2_t2 }, sem2_check }, \
	{ P "cancel racing a full grant", 2, sizeof(sem_ctx), sem3_setup, \
	  { sem2_t0, sem3_t1 }, sem3_check }, \
	{ P "close racing release and acquire", 3, sizeof(sem_ctx), sem4_setup, \
	  { sem4_t0, sem2_t1, sem4_t2 }, sem4_check }, \
	{ P "two releases racing cancel of the head", 3, sizeof(sem_ctx), sem3_setup, \
	  { sem5_t0, sem5_t1, sem2_t0 }, sem5_check }, \
	{ P "cancel of a lone waiter racing release", 2, sizeof(sem_ctx), sem6_setup, \
	  { sem2_t0, sem2_t1 }, sem6_check }, \
	{ P "lone waiter's new waker racing a second waiter and release", 3, \
	  sizeof(sem_ctx), sem6_setup, { sem7_t0, sem7_t1, sem2_t1 }, sem7_check }, \
	{ P "cancel of a lone waiter holding a permit racing close", 2, \
	  sizeof(sem_ctx), sem8_setup, { sem2_t0, sem4_t0 }, sem8_check }, \
	{ P "blocking acquire racing release", 2, sizeof(sem_ctx), sem_setup_empty, \
	  { sem10_t0, sem2_t1 }, sem10_check }, \
	{ P "release racing try_acquire", 2, sizeof(sem_ctx), sem_setup_empty, \
	  { sem2_t1, sem9_t1 }, sem9_check }, \
	{ P "two releases racing a try_acquire of both", 3, sizeof(sem_ctx), \
	  sem_setup_empty, { sem2_t1, sem11_t1, sem11_t2 }, sem11_check }, \
	{ P "a returned grant that saturates the counter racing close", 2, sizeof(sem_ctx), \
	  sem13_setup, { sem13_t0, sem13_t1 }, sem13_check }, \
	{ P "try_acquire of the last permit whose inline CAS fails spuriously racing release", \
	  2, sizeof(sem_ctx), sem12_setup, { sem2_t1, sem12_t1 }, sem12_check }, \
	{ P "a queued acquire whose clone releases, racing a release", 2, \
	  sizeof(sem_ctx), rc_sem_setup, { rc_sem_t0, sem2_t1 }, rc_sem_check },

static const sb_model_scenario scenarios[] = { SEM_SCENARIOS("semaphore: ") FAIR_SCENARIOS };
static const sb_model_scenario fifo_scenarios[] = { SEM_SCENARIOS("fifo semaphore: ") };

/* A set of scenarios and the mode they run in. */
typedef struct sem_mode_set {
	model_set set;
	bool fifo;
} sem_mode_set;

static sem_mode_set fair_set = { { scenarios, COUNT(scenarios) }, false };
static sem_mode_set fifo_set = { { fifo_scenarios, COUNT(fifo_scenarios) }, true };

/* Runs `explore` on the set in *state, in its mode. */
static void in_mode(void **state, void (*explore)(void **))
{
	sem_mode_set *m = *state;
	sem_fifo = m->fifo;
	void *set = &m->set;
	explore(&set);
	sem_fifo = false;
}

static void all_schedules_with_four_preemptions(void **state)
{
	in_mode(state, every_scenario_holds_over_all_schedules_with_four_preemptions);
}

static void random_schedules(void **state)
{
	in_mode(state, every_scenario_holds_over_random_schedules);
}

static void weak_model_with_bounded_stale_reads(void **state)
{
	in_mode(state, every_scenario_holds_under_the_weak_model_with_bounded_stale_reads);
}

static void random_schedules_under_the_weak_model(void **state)
{
	in_mode(state, every_scenario_holds_over_random_schedules_under_the_weak_model);
}

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
}

/*
 * A handoff to a pending future.  A lone acquire(1) installs its node in the
 * semaphore's word with one CAS and a release claims it with one; the woken
 * future reads its node.  One read-modify-write on each side.  With a second
 * waiter the first waiter decides and takes the queue lock in one CAS and
 * unlocks in one more; the releaser locks and unlocks (publishing the new
 * state in the unlock).  Two on each side.
 */
static void a_handoff_costs_one_or_two_read_modify_writes_on_each_side(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(0);
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
}

/*
 * The eventually fair mode: the lone waiter's handoff is the same; a queued
 * head is woken instead of granted (the releaser locks and unlocks), and its
 * re-poll takes the lock to take its permits and unlocks.
 */
static void a_fair_wake_costs_two_read_modify_writes_on_each_side(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire a;
	sb_semaphore_acquire_init(&a, &s, 1);
	assert_int_equal(RMWS(sb_semaphore_acquire_poll(&a, &noop)), 1);
	assert_int_equal(RMWS(sb_semaphore_release(&s, 1)), 1);
	assert_int_equal(RMWS(sb_semaphore_acquire_poll(&a, &noop)), 0);

	sb_semaphore_acquire_init(&a, &s, 2);
	assert_int_equal(RMWS(sb_semaphore_acquire_poll(&a, &noop)), 2);
	assert_int_equal(RMWS(sb_semaphore_release(&s, 2)), 2);
	assert_int_equal(RMWS(sb_semaphore_acquire_poll(&a, &noop)), 2);
	assert_int_equal(sb_semaphore_available(&s), 0);
}

/*
 * The budget (src/semaphore.c): past a woken head in a timed queue, a
 * release that is not the bound's check, and a barger that finds a permit
 * there, are one CAS each, without the queue lock; the check's release takes
 * the lock (two read-modify-writes), and a release past what the budget
 * holds (three permits) takes it too.
 */
static void past_a_woken_timed_head_a_release_or_a_barge_costs_one_read_modify_write(void **state)
{
	(void)state;
	sb_waker noop = sb_waker_noop();
	model_now = MODEL_CLOCK_START; /* the bound is far */
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire a[2];
	for (int i = 0; i < 2; i++) {
		sb_semaphore_acquire_init(&a[i], &s, 1);
		assert_int_equal(sb_semaphore_acquire_poll(&a[i], &noop), SB_PENDING);
	}
	assert_int_equal(RMWS(sb_semaphore_release(&s, 1)), 2);     /* wakes a[0] */
	assert_int_equal(RMWS(sb_semaphore_try_acquire(&s, 1)), 2); /* passes it: timed */
	assert_int_equal(RMWS(sb_semaphore_release(&s, 1)), 2);     /* the check */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(RMWS(sb_semaphore_release(&s, 1)), 1);
		assert_int_equal(RMWS(sb_semaphore_try_acquire(&s, 1)), 1);
	}
	assert_int_equal(RMWS(sb_semaphore_release(&s, 1)), 2); /* the budget's releases spent */
	assert_int_equal(RMWS(sb_semaphore_release(&s, 3)), 2); /* more than it holds */
	sb_semaphore_acquire late;
	sb_semaphore_acquire_init(&late, &s, 1);
	assert_int_equal(RMWS(sb_semaphore_acquire_poll(&late, &noop)), 2); /* 4 free: no budget */
	for (int i = 0; i < 2; i++)
		assert_int_equal(sb_semaphore_acquire_poll(&a[i], &noop), 0);
	assert_int_equal(sb_semaphore_release(&s, 7), 0); /* every acquire's */
	assert_int_equal(sb_semaphore_available(&s), 9);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/* An explorer's test on the eventually fair set, then on the strict-FIFO set. */
#define IN_MODE(name, fn) \
	{ #name, fn, NULL, NULL, &fair_set }, { "fifo_" #name, fn, NULL, NULL, &fifo_set }

/* test_model_semaphore [RUN-PATTERN [SKIP-PATTERN]]: cmocka's test name filters. */
int main(int argc, char **argv)
{
	model_main_setup(argc, argv);
	const struct CMUnitTest tests[] = {
		IN_MODE(every_scenario_holds_over_all_schedules_with_four_preemptions, all_schedules_with_four_preemptions),
		IN_MODE(every_scenario_holds_over_random_schedules, random_schedules),
		cmocka_unit_test(uncontended_paths_cost_one_read_modify_write_and_take_no_lock),
		cmocka_unit_test(a_handoff_costs_one_or_two_read_modify_writes_on_each_side),
		cmocka_unit_test(a_fair_wake_costs_two_read_modify_writes_on_each_side),
		cmocka_unit_test(past_a_woken_timed_head_a_release_or_a_barge_costs_one_read_modify_write),
		IN_MODE(every_scenario_holds_under_the_weak_model_with_bounded_stale_reads,
			weak_model_with_bounded_stale_reads),
		IN_MODE(every_scenario_holds_over_random_schedules_under_the_weak_model,
			random_schedules_under_the_weak_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
