/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/loop.h>

#include <errno.h>
#include <limits.h>
#include <sched.h>

#include "cpu.h"
#ifdef SB_MODEL_CHECK
#include "futex.h"
#endif

/*
 * A task's state word:
 *
 *   bit 0    QUEUED  in the inbox or in the batch being run; the queue owns
 *                    one reference
 *   bit 1    DONE    its poll returned a result: it is never polled again
 *   bits 2-  references: the spawn's (until DONE), the queue's (while
 *                    QUEUED), one per waker clone, and a spawner's or
 *                    waker's own for the length of its push and ring
 *
 * Running a queued task clears QUEUED and drops the queue's reference in
 * one RMW (the spawn's reference keeps an unfinished task alive through its
 * poll), polls, and drops the spawn's reference when the task finished.  A wake that finds the task queued still writes the word,
 * so that the clear of QUEUED before the poll reads from it (release, then
 * acquire): whatever the waker's caller did happens-before that poll.
 *
 * The inbox is a LIFO stack: pushes CAS a task on top, the loop takes the
 * whole stack with one exchange and reverses it.  While the loop runs its
 * tasks the inbox's "empty" is AWAKE rather than NULL: a push onto AWAKE
 * does not ring, and at the end of the run the loop swaps AWAKE back to
 * NULL, or rings itself when it stopped for its budget with tasks queued.
 * So a push rings exactly when it makes the inbox non-empty and nobody is
 * going to look.
 * Only the loop takes from the inbox (single consumer), so there is no ABA:
 * a task cannot leave and come back between a pusher's load and its CAS.
 *
 * Wakes during a run, from any thread: the AWAKE marker is what tells a
 * pusher that the loop will look again before it sleeps, so a wake from a
 * task on the loop's own thread (or from anywhere else) while the loop runs
 * never calls ring.  The run itself looks again: after each batch it takes
 * the inbox once more, and only when that finds nothing (or its budget is
 * spent) does it try to swap AWAKE back to NULL.  That CAS is the end of the
 * run as pushers see it: a push that lands before it makes it fail (the run
 * takes the push, or rings for it when out of budget), one after it finds
 * NULL and rings.  No thread-local "current loop" is needed: the marker is
 * in the word every pusher already CASes.
 *
 * Close: the top bit of `tasks` (LOOP_CLOSED).  A spawn counts itself in
 * `tasks` with a CAS that fails once the bit is set, so every spawn either
 * comes before the close in the word's modification order (and keeps the
 * loop from being idle until its task is released) or fails.
 *
 * Release: whoever drops the last reference off the loop's thread pushes the
 * task (with no references: "release me") and rings, so the release function
 * always runs on the loop's thread.  Between that push and its ring the
 * dropper holds nothing that keeps the loop busy, so it counts itself in
 * `ringing`, which sb_loop_idle waits out.  Everyone else who rings (a waker,
 * a spawner) holds a task reference across push and ring, and a task with
 * references keeps the loop from being idle.
 */
#define QUEUED ((size_t)1)
#define DONE ((size_t)2)
#define REF_SHIFT 2
#define REF_ONE ((size_t)1 << REF_SHIFT)

/* sb_loop.tasks: the count of spawned, unreleased tasks, and this bit. */
#define LOOP_CLOSED ((size_t)1 << (sizeof(size_t) * CHAR_BIT - 1))

/* The inbox's "empty, and the loop is running its tasks". */
static sb_loop_task loop_awake;
#define AWAKE (&loop_awake)

static const sb_waker_vtable loop_waker_vtable;

static inline size_t refs_of(size_t state)
{
	return state >> REF_SHIFT;
}

static inline sb_loop_task *task_of(const void *data)
{
	return (sb_loop_task *)data; /* our wakers carry the task itself */
}

/*
 * A task's link and loop are plain fields that the orders below hand from
 * thread to thread: the model-check build (tests/model) checks every access
 * to them for a data race, a write against the reads before it too.
 */
static inline void plain_access(const void *field, bool write)
{
#ifdef SB_MODEL_CHECK
	sb_model_plain_access(field, write);
#else
	(void)field;
	(void)write;
#endif
}

static inline sb_loop_task *next_of(const sb_loop_task *t)
{
	plain_access(&t->next, false);
	return t->next;
}

static inline void set_next(sb_loop_task *t, sb_loop_task *next)
{
	plain_access(&t->next, true);
	t->next = next;
}

static inline sb_loop *loop_of(const sb_loop_task *t)
{
	plain_access(&t->loop, false);
	return t->loop;
}

static inline void set_loop(sb_loop_task *t, sb_loop *l)
{
	plain_access(&t->loop, true);
	t->loop = l;
}

void sb_loop_init(sb_loop *l, sb_loop_ring_fn ring, void *ctx)
{
	atomic_init(&l->inbox, NULL);
	atomic_init(&l->tasks, 0);
	atomic_init(&l->ringing, 0);
	l->ring = ring;
	l->ring_ctx = ctx;
}

void sb_loop_task_init(sb_loop_task *t, sb_loop_poll_fn poll, sb_loop_release_fn release)
{
	atomic_init(&t->state, 0);
	set_next(t, NULL);
	set_loop(t, NULL);
	t->poll = poll;
	t->release = release;
}

/* Pushes `t`, which the caller owns; true when the caller must ring. */
static bool inbox_push(sb_loop *l, sb_loop_task *t)
{
	/* relaxed: only a guess at the top; the CAS checks it. */
	sb_loop_task *top = atomic_load_explicit(&l->inbox, memory_order_relaxed);
	do {
		set_next(t, top);
		/* release: t->next and everything before the push (a grant, the
		 * spawner's writes) happen-before the loop's acquire exchange, which
		 * reads the last push and so every earlier one (release sequence). */
	} while (!atomic_compare_exchange_weak_explicit(&l->inbox, &top, t, memory_order_release,
							memory_order_relaxed));
	return top == NULL;
}

static void ring(sb_loop *l)
{
	l->ring(l->ring_ctx);
}

/* The last reference is gone; on the loop's thread.  Frees nothing itself. */
static void task_release(sb_loop *l, sb_loop_task *t)
{
	sb_loop_release_fn release = t->release;
	/* release: a spawn that finds 0 (its acquire CAS) comes after this life
	 * of the task, also when `release` is NULL and the caller reuses it. */
	atomic_store_explicit(&t->state, 0, memory_order_release);
	if (release)
		release(t);
	/* relaxed: only the loop's thread decrements and reads it to 0. */
	atomic_fetch_sub_explicit(&l->tasks, 1, memory_order_relaxed);
}

/* Drops one reference; the last hands the release to the loop's thread
 * (the loop's own drops release in place, in run_one). */
static void task_unref(sb_loop_task *t)
{
	sb_loop *l = loop_of(t);
	/* acq_rel: release orders our touches of the task before its release
	 * function; acquire makes the last dropper see every earlier one's. */
	size_t old = atomic_fetch_sub_explicit(&t->state, REF_ONE, memory_order_acq_rel);
	if (refs_of(old) != 1)
		return;
	/* relaxed: the push below publishes it to the loop, which reads it only
	 * after taking this task (acquire), so before it can find `tasks` at 0. */
	atomic_fetch_add_explicit(&l->ringing, 1, memory_order_relaxed);
	if (inbox_push(l, t))
		ring(l);
	/* release: our push and ring happen-before the acquire load in
	 * sb_loop_idle that reads 0. */
	atomic_fetch_sub_explicit(&l->ringing, 1, memory_order_release);
}

/* Queues a poll of `t`, on which the caller holds a reference. */
static void task_wake(sb_loop_task *t)
{
	/* relaxed: a first guess; the CAS below is what orders. */
	size_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
	size_t next;
	do {
		if (s & DONE)
			return;
		next = (s & QUEUED) ? s : s + QUEUED + REF_ONE;
		/* acq_rel.  release: pairs with the acquire clear of QUEUED before
		 * the next poll (written even when already queued, so that poll reads
		 * from this RMW): what our caller did before the wake is visible to
		 * it.  acquire: pairs with that clear's release, so the loop's last
		 * use of t->next comes before our push rewrites it. */
	} while (!atomic_compare_exchange_weak_explicit(&t->state, &s, next, memory_order_acq_rel,
							memory_order_relaxed));
	if (s & QUEUED)
		return;
	sb_loop *l = loop_of(t);
	if (inbox_push(l, t))
		ring(l);
}

static sb_waker loop_waker_clone(const void *data)
{
	/* relaxed: the clone is made from a reference its caller holds, which
	 * keeps the count above zero; nothing is published (as Arc::clone). */
	atomic_fetch_add_explicit(&task_of(data)->state, REF_ONE, memory_order_relaxed);
	return (sb_waker){ &loop_waker_vtable, data };
}

static void loop_waker_wake(const void *data)
{
	/* Our reference is kept across the push and ring, then dropped. */
	task_wake(task_of(data));
	task_unref(task_of(data));
}

static void loop_waker_wake_by_ref(const void *data)
{
	task_wake(task_of(data));
}

static void loop_waker_drop(const void *data)
{
	task_unref(task_of(data));
}

static const sb_waker_vtable loop_waker_vtable = {
	.clone = loop_waker_clone,
	.wake = loop_waker_wake,
	.wake_by_ref = loop_waker_wake_by_ref,
	.drop = loop_waker_drop,
};

sb_waker sb_loop_task_waker(sb_loop_task *t)
{
	return (sb_waker){ &loop_waker_vtable, t };
}

void sb_loop_wake(sb_loop_task *t)
{
	task_wake(t);
}

/* Counts a spawn in l->tasks; false once the loop is closed. */
static bool count_spawn(sb_loop *l)
{
	/* relaxed: a first guess; the CAS checks it. */
	size_t n = atomic_load_explicit(&l->tasks, memory_order_relaxed);
	do {
		if (n & LOOP_CLOSED)
			return false;
		/* relaxed: the push after it publishes the count to the loop, which
		 * reads it to 0 only after releasing this task; against the close,
		 * the word's modification order alone decides (see above). */
	} while (!atomic_compare_exchange_weak_explicit(&l->tasks, &n, n + 1, memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

int sb_loop_spawn(sb_loop *l, sb_loop_task *t)
{
	if (!t->poll)
		return -EINVAL;
	size_t idle = 0;
	/* acquire: pairs with the release store of 0 in task_release, so a
	 * respawn comes after the previous life's last touch.  Three references:
	 * the spawn's, the queue's, and ours until we have rung. */
	if (!atomic_compare_exchange_strong_explicit(&t->state, &idle, QUEUED + 3 * REF_ONE,
						     memory_order_acquire, memory_order_relaxed))
		return -EBUSY;
	if (!count_spawn(l)) {
		/* release: nobody else holds a reference (it had none); as the store
		 * of 0 in task_release, so that the next spawn's acquire CAS comes
		 * after the previous life, which our acquire ordered before us. */
		atomic_store_explicit(&t->state, 0, memory_order_release);
		return -ESHUTDOWN;
	}
	set_loop(t, l);
	if (inbox_push(l, t))
		ring(l);
	task_unref(t);
	return 0;
}

/* The stack from `top` (ending in NULL or AWAKE) in push order. */
static sb_loop_task *take_in_order(sb_loop_task *top)
{
	sb_loop_task *fifo = NULL;
	while (top != NULL && top != AWAKE) {
		sb_loop_task *next = next_of(top);
		set_next(top, fifo);
		fifo = top;
		top = next;
	}
	return fifo;
}

/* Runs one task taken from the inbox; returns 1 when it polled it. */
static size_t run_one(sb_loop *l, sb_loop_task *t)
{
	/* relaxed: the exchange that took `t` already ordered its pusher's writes. */
	size_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
	if (refs_of(s) == 0) {
		task_release(l, t); /* pushed by its last reference's drop */
		return 0;
	}
	/* Clear QUEUED and drop the queue's reference in one RMW.  An unfinished
	 * task keeps the spawn's reference through the poll (only a finished
	 * poll drops it, below), so the poll needs none of its own.  acq_rel.
	 * acquire: pairs with the release CAS of every wake since it was queued
	 * and, when this drops the last reference, with the other droppers (as
	 * in task_unref).  release: our reads and writes of t->next (the
	 * batch's links) come before the push of the wake that queues it next. */
	size_t old = atomic_fetch_sub_explicit(&t->state, QUEUED + REF_ONE, memory_order_acq_rel);
	if (old & DONE) {
		/* Queued by a wake that raced its last poll: not polled again. */
		if (refs_of(old) == 1)
			task_release(l, t);
		return 0;
	}
	sb_waker w = { &loop_waker_vtable, t };
	/* t->poll is read here, before each poll: a poll may replace it for
	 * the next (syncband.hpp does, on this thread). */
	if (t->poll(t, &w) == SB_PENDING)
		return 1;
	/* Finished: set DONE and drop the spawn's reference in one RMW (DONE is
	 * clear, so adding DONE - REF_ONE, modulo the word, sets it).  acq_rel:
	 * as in task_unref. */
	old = atomic_fetch_add_explicit(&t->state, DONE - REF_ONE, memory_order_acq_rel);
	if (refs_of(old) == 1)
		task_release(l, t);
	return 1;
}

/* Runs a batch in push order; returns how many tasks it polled. */
static size_t run_batch(sb_loop *l, sb_loop_task *t)
{
	size_t polled = 0;
	while (t) {
		sb_loop_task *next = next_of(t); /* read first: running may release t */
		polled += run_one(l, t);
		t = next;
	}
	return polled;
}

/* Ends a run: true when the inbox was empty and is NULL again (pushes ring
 * from now on), false when tasks arrived since the last take. */
static bool inbox_sleep(sb_loop *l)
{
	sb_loop_task *expected = AWAKE;
	/* relaxed: success publishes nothing (the next push reads NULL and
	 * rings); on failure the new tasks wait for the next take's acquire. */
	return atomic_compare_exchange_strong_explicit(&l->inbox, &expected, NULL,
						       memory_order_relaxed, memory_order_relaxed);
}

bool sb_loop_run(sb_loop *l, size_t budget, size_t *polled_out)
{
	size_t polled = 0;
	bool drained;
	for (;;) {
		/* acquire: pairs with the release CAS of every push in the stack. */
		sb_loop_task *top = atomic_exchange_explicit(&l->inbox, AWAKE,
							     memory_order_acquire);
		if (top == NULL || top == AWAKE) {
			/* Nothing since the last take: sleep, unless a push
			 * landed in between, which the next take gets. */
			if ((drained = inbox_sleep(l)))
				break;
			continue;
		}
		polled += run_batch(l, take_in_order(top));
		if (polled >= budget) {
			drained = inbox_sleep(l);
			if (!drained)
				ring(l); /* out of budget: the doorbell brings us back */
			break;
		}
	}
	if (polled_out)
		*polled_out = polled;
	return drained;
}

size_t sb_loop_run_ready(sb_loop *l)
{
	size_t polled;
	(void)sb_loop_run(l, SB_LOOP_BUDGET, &polled);
	return polled;
}

void sb_loop_close(sb_loop *l)
{
	/* relaxed: the word's modification order alone decides which spawns
	 * came first (count_spawn); nothing else is published by closing. */
	atomic_fetch_or_explicit(&l->tasks, LOOP_CLOSED, memory_order_relaxed);
}

int sb_loop_task_ref(sb_loop_task *t)
{
	/* relaxed: as a waker clone, made from a reference the caller holds. */
	size_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
	do {
		if (refs_of(s) == 0)
			return -EINVAL; /* never spawned, or released */
		/* relaxed: as loop_waker_clone; the check is only against misuse. */
	} while (!atomic_compare_exchange_weak_explicit(&t->state, &s, s + REF_ONE,
							memory_order_relaxed, memory_order_relaxed));
	return 0;
}

void sb_loop_task_unref(sb_loop_task *t)
{
	task_unref(t);
}

bool sb_loop_idle(sb_loop *l)
{
	/* relaxed: only this thread decrements it, in task_release; a spawn's
	 * increment is published to us by its push (see count_spawn). */
	if ((atomic_load_explicit(&l->tasks, memory_order_relaxed) & ~LOOP_CLOSED) != 0)
		return false;
	size_t ringing;
	/* acquire: pairs with the release decrement after a dropper's ring. */
	for (unsigned spins = 0;
	     (ringing = atomic_load_explicit(&l->ringing, memory_order_acquire)) != 0; spins++) {
#ifdef SB_MODEL_CHECK
		/* The model's scheduler runs the dropper instead. */
		(void)spins;
		sb_futex_wait(sb_futex_low_half(&l->ringing), (uint32_t)ringing, NULL);
#else
		(void)ringing;
		if (spins < 64)
			sb_cpu_relax();
		else
			sched_yield(); /* the dropper was preempted between push and ring */
#endif
	}
	return true;
}
