/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The executor: the loop and its sleep protocol, and the public
 * calls that start, drive, stop and destroy it.  The ring is ring.c's, where
 * tasks go is scheduler.c's.  See internal.h for the lifetime rules.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "../cpu.h"

/* How long the loop watches its inbox before it sleeps (a few microseconds;
 * 14 us where a pause takes 55 ns, as on the 2-core VM). */
#define INBOX_SPINS 256

/* Tasks polled per loop iteration before the inbox, CQEs and timers are looked at. */
#define RUN_BUDGET 64

/* ------------------------------------------------------------ the loop */

/* The executor this thread runs from now on (and for wakes made here). */
static sb_executor *exec_enter(sb_executor *ex)
{
	sb_executor *prev = sb__exec_current;
	sb__exec_current = ex;
	ex->impl->running = 1;
	return prev;
}

static void exec_leave(sb_executor *ex, sb_executor *prev)
{
	ex->impl->running = 0;
	sb__exec_current = prev;
}

/*
 * Before sleeping, watch the inbox for a moment (`looks` reads, a pause
 * after each): a wake from a busy thread (a mutex or permit handed over)
 * often arrives within a microsecond, and catching it here saves the waker
 * its doorbell and us a trip through the kernel.  Returns true when work
 * arrived.  The idle spin below is made of such looks too.
 */
static bool spin_for_inbox(sb_executor *ex, int looks)
{
	for (int i = 0; i < looks; i++) {
		/* relaxed: a hint; the loop's sched_drain_inbox takes it with acquire. */
		if (atomic_load_explicit(&ex->inbox, memory_order_relaxed) != NULL)
			return true;
		sb_cpu_relax();
	}
	return false;
}

/*
 * The idle spin, after the short one: an idle loop goes on watching its
 * inbox (and its ring, a stop request, its earliest timer) for up to
 * IDLE_SPIN_NS, calling sched_yield() between looks, but only while another
 * loop of the process is awake and not spinning itself: only a running loop
 * can hand us work this soon (an idle server's loops sleep at once), and two
 * idle spinners would otherwise keep each other spinning.  A loop that a
 * waker has rung counts as awake from the ring.  Never on one core, where
 * the loop that could hand us work cannot run while we spin.
 *
 * Why: when tasks on two threads hand a mutex or a permit back and forth,
 * each handoff to a sleeping loop costs a wake-up of its thread (28 us at the
 * median on the 2-core VM, syncband's own futex probe) while nobody else can
 * take the mutex.  With pinned tasks on 4, 8 and 16 executor threads on 2
 * cores (contention/mutex-N-threads, 7 interleaved runs, medians), the spin
 * took an operation from 42.6, 64.4 and 71.8 ns to 29.8, 38.7 and 45.5 ns,
 * and the longest acquire wait from 2.91, 3.77 and 7.12 ms to 1.23, 1.55
 * and 3.34 ms; on 2 threads, from 22.4-43.7 ns (two modes) to 23.3-27.9 ns
 * and from 2.28 to 1.09 ms.  IDLE_SPIN_NS outlasts that wake-up with room to
 * spare.  The yield lets a thread that the kernel queued behind the spinner
 * on its core run at once, instead of after the spin or at the next tick:
 * without it, 6 of 12 runs of the 2-thread row waited longer than 2.1 ms (up
 * to 5.4), with it 1 of 12 (3.5).
 *
 * The spin had two more limits once: no more loops awake than cores, and
 * at most half the cores spinning.  With more loops than cores those kept
 * nearly every idle loop asleep, so a strict-FIFO handoff to a pinned task
 * nearly always woke its thread: without them, on the Intel 2-core VM (9
 * interleaved runs, medians), contention/semaphore-N-threads with pinned
 * tasks took 730 instead of 1201 ns an operation at 8 threads and 1324
 * instead of 2333 at 16 (and less processor time: 6.4 against 9.4 s of user
 * and system time for one 16-thread run), and the longest wait of pinned
 * mutex tasks at 16 threads was 2.18 instead of 2.48 ms (8 runs); dropping
 * either limit alone gained nothing, and no other contention row moved
 * beyond its noise.  The yield is what makes that safe: a loop with work
 * that waits for a spinner's core gets it within a look.
 */
#define IDLE_SPIN_NS 50000
#define IDLE_SPIN_LOOKS 64 /* inbox looks (pauses) between two clock reads and yields */

/*
 * The idle spinners over every executor loop of the process (the awake ones
 * are counted by ring.c, which rings them awake).  Relaxed throughout: it
 * only decides whether an idle loop spins a while longer, publishes nothing,
 * and a stale value costs a spin or a sleep, never a wake.
 */
static _Atomic unsigned idle_spinners;

/*
 * Whether an idle loop may spin: some other loop awake and not spinning
 * itself.  `self` is 1 before the caller counts among the spinners (it is
 * awake, but not working), 0 once it does.
 */
static bool idle_spin_allowed(int self)
{
	/* relaxed: a count (above); signed, since two relaxed loads may see a
	 * spinner that is not yet or no longer counted awake. */
	int awake = (int)sb__ring_loops_awake();
	int spinning = (int)atomic_load_explicit(&idle_spinners, memory_order_relaxed);
	return awake - spinning > self;
}

/* Whether anything but the inbox has work for the loop: the ring, a stop
 * request, a timer due. */
static bool idle_spin_interrupted(sb_executor *ex, enum loop_mode mode, uint64_t now)
{
	struct sb_executor_impl *impl = ex->impl;
	if (ring_task_work_pending(impl) || io_uring_cq_ready(&impl->ring))
		return true;
	/* relaxed: a hint, as in loop_returns. */
	if (mode != LOOP_UNTIL_DONE && (atomic_load_explicit(&ex->flags, memory_order_relaxed) & EX_STOP_REQ))
		return true;
	const sb_sleep *earliest = timer_heap_min(&impl->timers);
	return earliest && earliest->deadline <= now;
}

/* The idle spin above; true when work arrived. */
static bool idle_spin(sb_executor *ex, enum loop_mode mode)
{
	if (sb_cpu_count() == 1 || !idle_spin_allowed(1))
		return false;
	/* relaxed: a count (above). */
	atomic_fetch_add_explicit(&idle_spinners, 1, memory_order_relaxed);
	bool work = false;
	uint64_t start = sb_now_ns(), now = start;
	while (!work && now - start < IDLE_SPIN_NS && idle_spin_allowed(0)) {
		work = spin_for_inbox(ex, IDLE_SPIN_LOOKS);
		now = sb_now_ns();
		work = work || idle_spin_interrupted(ex, mode, now);
		if (!work)
			sched_yield();
	}
	/* relaxed: a count (above). */
	atomic_fetch_sub_explicit(&idle_spinners, 1, memory_order_relaxed);
	return work;
}

/*
 * Whether the short spin (spin_for_inbox's INBOX_SPINS looks, no yield) may
 * run: only while no more loops are awake than cores.  With more, a loop
 * that pauses without yielding keeps one that has work off its core, and
 * the idle spin (which yields between looks) watches the inbox instead.
 * On the 2-core VM a pause takes 55 ns, so the short spin is 14 us, and
 * with pinned tasks on 16 executor threads (contention/semaphore-16-threads)
 * it was 19 % of the processor time, and a handoff to a task on another
 * thread could wait for it (docs/measurements.md, "Pinned tasks and the
 * executor's short spin").
 */
static bool short_spin_allowed(void)
{
	return sb__ring_loops_awake() <= sb_cpu_count();
}

/*
 * The sleep protocol: publish "sleeping", re-check the inbox (and a stop
 * request), then enter the kernel until a CQE arrives: a doorbell, the
 * eventfd read, or the timeout armed for the earliest timer.
 */
static void park(sb_executor *ex, enum loop_mode mode)
{
	struct sb_executor_impl *impl = ex->impl;
	if ((short_spin_allowed() && spin_for_inbox(ex, INBOX_SPINS)) || idle_spin(ex, mode))
		return;
	sb__ring_arm_eventfd(ex);
	sb__ring_count_asleep(); /* a waker that rings us counts us back */
	/* seq_cst: Dekker with the scheduler's inbox push / sb_executor_stop: we
	 * store sleeping then read inbox and flags; they write those then read
	 * sleeping.  One side sees the other, so no wake is lost. */
	atomic_store_explicit(&ex->sleeping, 1, memory_order_seq_cst);
	bool stay = atomic_load_explicit(&ex->inbox, memory_order_seq_cst) != NULL;
	/* seq_cst: the same Dekker pair, for stop requests. */
	if (mode != LOOP_UNTIL_DONE &&
	    (atomic_load_explicit(&ex->flags, memory_order_seq_cst) & EX_STOP_REQ))
		stay = true;
	if (!stay && sb__ring_arm_timer(impl, timer_heap_min(&impl->timers)))
		sb__ring_enter(impl);
	/* relaxed: it only tells wakers whether to ring; a stale 0 merely skips a
	 * doorbell we no longer need, since we re-check the inbox before sleeping.
	 * An exchange, so that exactly one of us and a ringing waker counts us
	 * awake again: whoever flips it from 1. */
	if (atomic_exchange_explicit(&ex->sleeping, 0, memory_order_relaxed))
		sb__ring_count_woken();
}

static void run_batch(sb_executor *ex)
{
	struct sb_executor_impl *impl = ex->impl;
	for (int i = 0; i < RUN_BUDGET; i++) {
		sb_task *t = task_queue_pop(&impl->runq);
		if (!t)
			break;
		sb__task_run(ex, t);
	}
}

/* Whether the loop returns after this iteration, and with what (*rc). */
static bool loop_returns(sb_executor *ex, enum loop_mode mode, const sb_task *root, int *rc)
{
	struct sb_executor_impl *impl = ex->impl;
	*rc = 0;
	if (mode == LOOP_UNTIL_DONE)
		/* relaxed: the root runs on this thread; we completed it ourselves. */
		return atomic_load_explicit(&root->state, memory_order_relaxed) & T_DONE;
	/* relaxed: a hint; park() re-reads it with seq_cst before sleeping. */
	if (atomic_load_explicit(&ex->flags, memory_order_relaxed) & EX_STOP_REQ) {
		/* relaxed: clearing our own request needs no ordering. */
		atomic_fetch_and_explicit(&ex->flags, ~EX_STOP_REQ, memory_order_relaxed);
		*rc = mode == LOOP_UNTIL_IDLE ? -EINTR : 0;
		return true;
	}
	/* relaxed: a remote spawn racing with the return is simply "after". */
	return mode == LOOP_UNTIL_IDLE && impl->live.count == 0 && task_queue_empty(&impl->runq) &&
	       !atomic_load_explicit(&ex->inbox, memory_order_relaxed);
}

int sb__exec_loop(sb_executor *ex, enum loop_mode mode, const sb_task *root)
{
	struct sb_executor_impl *impl = ex->impl;
	sb_executor *prev = exec_enter(ex);
	sb__ring_count_woken(); /* this loop runs: awake */
	sched_loop_begin(impl, mode);
	int rc;
	for (;;) {
		sched_drain_inbox(ex);
		ring_reap(ex);
		if (timer_heap_min(&impl->timers))
			sb__timers_fire(impl, sb_now_ns());
		run_batch(ex);
		if (loop_returns(ex, mode, root, &rc))
			break;
		if (task_queue_empty(&impl->runq))
			park(ex, mode);
	}
	sched_loop_end(impl);
	sb__ring_count_asleep(); /* this loop no longer runs */
	exec_leave(ex, prev);
	return rc;
}

/* ------------------------------------------------------------ public */

int sb_executor_init(sb_executor *ex, const sb_executor_config *cfg)
{
	/* atomic_init (plain stores): ex is not shared with any thread yet. */
	atomic_init(&ex->inbox, NULL);
	atomic_init(&ex->sleeping, 0);
	atomic_init(&ex->flags, 0);
	atomic_init(&ex->refs, 0);
	ex->ring_fd = -1;
	ex->event_fd = -1;
	ex->features = 0;
	ex->owner = exec_this_thread();
	ex->impl = NULL;

	struct sb_executor_impl *impl = calloc(1, sizeof *impl);
	if (!impl)
		return -ENOMEM;
	int r = sb__ring_open(ex, impl, cfg);
	if (r < 0) {
		free(impl);
		return r;
	}
	ex->impl = impl;
	/* release: other threads learn of ex through their own synchronisation
	 * (thread start, a mutex); this just keeps the fields before LIVE. */
	atomic_store_explicit(&ex->flags, EX_LIVE, memory_order_release);
	return 0;
}

static int check_owner(sb_executor *ex)
{
	/* relaxed: only the owner thread writes LIVE and STOPPING. */
	uint32_t f = atomic_load_explicit(&ex->flags, memory_order_relaxed);
	if (!(f & EX_LIVE) || (f & EX_STOPPING))
		return -ESHUTDOWN;
	if (!exec_is_owner(ex))
		return -EPERM;
	if (ex->impl->running)
		return -EBUSY;
	return 0;
}

int sb_executor_run(sb_executor *ex)
{
	int rc = check_owner(ex);
	if (rc)
		return rc;
	return sb__exec_loop(ex, LOOP_UNTIL_IDLE, NULL);
}

struct root_task {
	sb_task task;
	void *future;
	const sb_future_ops *ops;
};

static int root_poll(sb_task *t, const sb_waker *w)
{
	struct root_task *r = SB_CONTAINER_OF(t, struct root_task, task);
	return r->ops->poll(r->future, w);
}

static void root_cancel(sb_task *t)
{
	struct root_task *r = SB_CONTAINER_OF(t, struct root_task, task);
	r->ops->cancel(r->future);
}

int sb_block_on(sb_executor *ex, void *future, const sb_future_ops *ops)
{
	int rc = check_owner(ex);
	if (rc)
		return rc;
	struct root_task r;
	sb_task_init(&r.task, root_poll, root_cancel, NULL);
	r.future = future;
	r.ops = ops;
	rc = sb_spawn(ex, &r.task, NULL);
	if (rc)
		return rc;
	sb__exec_loop(ex, LOOP_UNTIL_DONE, &r.task);
	/* A waker on another thread may still be inside its wake or drop. */
	while (!sb_task_is_released(&r.task))
		sched_yield();
	return r.task.result;
}

void sb_executor_stop(sb_executor *ex)
{
	if (exec_is_owner(ex)) {
		/* relaxed: only the owner writes LIVE and STOPPING. */
		uint32_t f = atomic_load_explicit(&ex->flags, memory_order_relaxed);
		if ((f & EX_LIVE) && !(f & EX_STOPPING))
			/* relaxed: our own loop reads it on this thread. */
			atomic_fetch_or_explicit(&ex->flags, EX_STOP_REQ, memory_order_relaxed);
		return;
	}
	/* seq_cst (both): Dekker with destroy, as in sb_spawn. */
	atomic_fetch_add_explicit(&ex->refs, 1, memory_order_seq_cst);
	uint32_t f = atomic_load_explicit(&ex->flags, memory_order_seq_cst);
	if (!(f & EX_LIVE) || (f & EX_STOPPING)) {
		exec_unref(ex);
		return;
	}
	/* seq_cst: Dekker with park(): we set the request, then read sleeping. */
	atomic_fetch_or_explicit(&ex->flags, EX_STOP_REQ, memory_order_seq_cst);
	/* seq_cst: the other half of that pair; the one that flips it rings. */
	if (atomic_load_explicit(&ex->sleeping, memory_order_seq_cst) &&
	    atomic_exchange_explicit(&ex->sleeping, 0, memory_order_seq_cst))
		sb__ring_doorbell(exec_current(), ex);
	else
		exec_unref(ex);
}

/* Cancels every unfinished task that has come home; returns how many. */
static size_t cancel_unfinished(sb_executor *ex)
{
	struct sb_executor_impl *impl = ex->impl;
	size_t n = 0;
	sched_drain_inbox(ex);
	sb_task *t;
	while ((t = task_queue_pop(&impl->runq)))
		n += sb__task_cancel(ex, t, true);
	for (t = impl->live.head; t;) {
		sb_task *next = t->live_next;
		n += sb__task_cancel(ex, t, false);
		t = next;
	}
	return n;
}

/*
 * True once every task is done and no other thread is inside a push: tasks
 * found SCHEDULED are still on their way to the inbox, so wait for the push.
 */
static bool nothing_in_flight(sb_executor *ex)
{
	struct sb_executor_impl *impl = ex->impl;
	/* seq_cst: the Dekker read of refs; once it is 0, every push made
	 * under a reference happened-before, so the inbox read below (also
	 * seq_cst) sees it. */
	return !impl->live.head && task_queue_empty(&impl->runq) &&
	       atomic_load_explicit(&ex->refs, memory_order_seq_cst) == 0 &&
	       !atomic_load_explicit(&ex->inbox, memory_order_seq_cst);
}

int sb_executor_destroy(sb_executor *ex, size_t *cancelled)
{
	if (cancelled)
		*cancelled = 0;
	/* relaxed: only the owner thread writes LIVE. */
	if (!(atomic_load_explicit(&ex->flags, memory_order_relaxed) & EX_LIVE))
		return 0;
	if (!exec_is_owner(ex))
		return -EPERM;
	if (ex->impl->running)
		return -EBUSY;
	/* seq_cst: Dekker with remote spawners and stoppers, who add to refs and
	 * then read flags; we set STOPPING and then read refs below. */
	atomic_fetch_or_explicit(&ex->flags, EX_STOPPING, memory_order_seq_cst);
	sb_executor *prev = exec_enter(ex);
	size_t n = 0;
	for (;;) {
		n += cancel_unfinished(ex);
		ring_reap(ex);
		if (nothing_in_flight(ex))
			break;
		sched_yield();
	}
	sb__timers_detach_all(ex->impl);
	sb__ring_close(ex);
	exec_leave(ex, prev);
	free(ex->impl);
	ex->impl = NULL;
	/* release: nothing to publish; later spawns only need to see !LIVE. */
	atomic_store_explicit(&ex->flags, EX_STOPPING, memory_order_release);
	if (cancelled)
		*cancelled = n;
	return 0;
}

unsigned sb_executor_features(const sb_executor *ex)
{
	return ex->features;
}

sb_executor *sb_executor_current(void)
{
	return sb__exec_current;
}
