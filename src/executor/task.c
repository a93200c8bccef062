/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The task state machine: the state word's transitions (claim at spawn,
 * wake, run, complete, cancel), the task waker, and the join future.  Where
 * a task goes once a transition makes it SCHEDULED is the scheduler's
 * (scheduler.h).  See internal.h for the bit layout and the reference rules.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include "../future_ops.h"

#include <assert.h>
#include <errno.h>

static sb_waker task_clone(const void *data);
static void task_wake(const void *data);
static void task_wake_by_ref(const void *data);
static void task_drop(const void *data);

const sb_waker_vtable sb__task_waker_vtable = {
	.clone = task_clone,
	.wake = task_wake,
	.wake_by_ref = task_wake_by_ref,
	.drop = task_drop,
};

/* The fields one run of a task fills in: cleared by init and by each spawn. */
static void task_clear_run_state(sb_task *t)
{
	t->next = NULL;
	t->live_prev = NULL;
	t->live_next = NULL;
	t->join_waker = (sb_waker){ NULL, NULL };
	t->result = SB_PENDING;
	t->linked = 0;
	t->group = NULL;
	/* relaxed: the task is not shared while it is (re)initialised. */
	atomic_store_explicit(&t->pins, 0, memory_order_relaxed);
}

void sb_task_init(sb_task *t, sb_task_poll_fn poll, sb_task_cancel_fn cancel,
		  sb_task_release_fn release)
{
	/* relaxed: init is not concurrent with any use of the task (it is unreferenced). */
	atomic_store_explicit(&t->state, 0, memory_order_relaxed);
	t->poll = poll;
	t->cancel = cancel;
	t->release = release;
	t->exec = NULL;
	t->owner = NULL;
	task_clear_run_state(t);
}

bool sb_task_is_released(const sb_task *t)
{
	/* acquire: pairs with the acq_rel decrement that dropped the last reference. */
	return task_refs(atomic_load_explicit(&t->state, memory_order_acquire)) == 0;
}

void sb__task_unref(sb_task *t, uint64_t n)
{
	/* Read while we still hold a reference: once ours is gone the task may be freed. */
	sb_task_release_fn release = t->release;
	/* acq_rel: release orders our uses of the task before the last drop; the
	 * last dropper's acquire then sees every other holder's uses before it
	 * calls release (as Arc::drop). */
	uint64_t old = atomic_fetch_sub_explicit(&t->state, n * T_REF_ONE, memory_order_acq_rel);
	assert(task_refs(old) >= n);
	if (task_refs(old) == n && release)
		release(t);
}

static sb_waker task_clone(const void *data)
{
	sb_task *t = (sb_task *)(uintptr_t)data;
	/* relaxed: the caller holds a reference, so the count cannot reach zero
	 * meanwhile; a new reference needs no ordering of its own. */
	atomic_fetch_add_explicit(&t->state, T_REF_ONE, memory_order_relaxed);
	return (sb_waker){ &sb__task_waker_vtable, t };
}

static void task_drop(const void *data)
{
	sb__task_unref((sb_task *)(uintptr_t)data, 1);
}

/*
 * The wake: an idle task becomes SCHEDULED and goes onto a queue; a running
 * task is marked NOTIFIED (the owner requeues it after the poll); a queued,
 * notified or finished task needs nothing.  `consume`: the caller's reference
 * goes with the call (wake) rather than staying (wake_by_ref).
 */
static void task_schedule(sb_task *t, bool consume)
{
	/* relaxed: a first guess for the CAS below. */
	uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
	uint64_t n;
	for (;;) {
		if (s & (T_DONE | T_SCHEDULED | T_NOTIFIED)) {
			if (consume)
				sb__task_unref(t, 1);
			return;
		}
		if (s & T_RUNNING) {
			n = s | T_NOTIFIED;
			if (consume)
				n -= T_REF_ONE; /* the poll's reference keeps it alive */
		} else {
			n = s | T_SCHEDULED;
			if (!consume)
				n += T_REF_ONE; /* the queue's reference */
		}
		/* acq_rel: release so that what the waker did before waking
		 * happens-before the next poll (the owner acquires this word when it
		 * pops the task or ends the running poll); acquire so that our write
		 * of t->next (push) comes after the owner's last use of it.
		 * relaxed on failure: we retry with the fresh value. */
		if (atomic_compare_exchange_weak_explicit(&t->state, &s, n, memory_order_acq_rel,
							  memory_order_relaxed))
			break;
	}
	if (s & T_RUNNING)
		return; /* NOTIFIED: the owner requeues it after the poll */
	sched_wake(t, s);
}

static void task_wake(const void *data)
{
	task_schedule((sb_task *)(uintptr_t)data, true);
}

static void task_wake_by_ref(const void *data)
{
	task_schedule((sb_task *)(uintptr_t)data, false);
}

/*
 * Finishes a task the owner holds as RUNNING (with the poll's reference):
 * leaves the list of unfinished tasks, takes the join waker, publishes the
 * result with T_DONE while dropping the poll's and the list's references
 * (the last touch of the task), then wakes the joiner.
 */
static void task_complete(sb_executor *ex, sb_task *t, int result, uint64_t extra)
{
	t->result = result;
	sched_forget(ex, t);
	sb_task_release_fn release = t->release;

	/* relaxed: a first guess for the CAS. */
	uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
	uint64_t n;
	do {
		n = (s & ~T_JOIN_WAKER) | T_COMPLETING;
		/* acquire: sees the join_waker the joiner wrote before its release
		 * CAS that set T_JOIN_WAKER.  relaxed on failure: retry. */
	} while (!atomic_compare_exchange_weak_explicit(&t->state, &s, n, memory_order_acquire,
							memory_order_relaxed));
	sb_waker join_waker = { NULL, NULL };
	if (s & T_JOIN_WAKER)
		join_waker = t->join_waker;

	s = n;
	do {
		n = ((s & ~(T_RUNNING | T_NOTIFIED | T_COMPLETING)) | T_DONE | extra) - 2 * T_REF_ONE;
		/* acq_rel: release publishes `result` (and every use of the task) to
		 * joiners, who load T_DONE with acquire, and to the last dropper;
		 * acquire, should this drop be the last, sees the other holders'
		 * uses before release() runs.  relaxed on failure: retry. */
	} while (!atomic_compare_exchange_weak_explicit(&t->state, &s, n, memory_order_acq_rel,
							memory_order_relaxed));
	if (task_refs(n) == 0 && release)
		release(t);
	if (join_waker.vtable)
		sb_waker_wake(join_waker);
}

void sb__task_run(sb_executor *ex, sb_task *t)
{
	/* relaxed: a first guess for the CAS. */
	uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
	uint64_t n;
	do {
		assert((s & T_SCHEDULED) && !(s & (T_DONE | T_RUNNING)));
		n = (s & ~T_SCHEDULED) | T_RUNNING; /* the queue's reference is now the poll's */
		/* acquire: the waker's release CAS (and the spawner's writes) happen-before
		 * the poll.  relaxed on failure: retry. */
	} while (!atomic_compare_exchange_weak_explicit(&t->state, &s, n, memory_order_acquire,
							memory_order_relaxed));
	struct sb_executor_impl *impl = ex->impl;
	sched_adopt(impl, t);

	sb_waker w = { &sb__task_waker_vtable, t };
	sched_poll_begin(impl, t, &w);
	int r = t->poll(t, &w);
	bool yielded = sched_poll_end(impl);
	if (r <= 0) {
		task_complete(ex, t, r, 0);
		return;
	}
	s = n;
	do {
		if ((s & T_NOTIFIED) || yielded)
			n = (s & ~(T_RUNNING | T_NOTIFIED)) | T_SCHEDULED; /* reference -> queue */
		else
			n = (s & ~T_RUNNING) - T_REF_ONE; /* the list's reference remains */
		/* acq_rel: acquire pairs with the release of a wake that set NOTIFIED;
		 * release orders this poll (and our uses of t->next) before a remote
		 * waker that next finds the task idle and pushes it.  relaxed on
		 * failure: retry. */
	} while (!atomic_compare_exchange_weak_explicit(&t->state, &s, n, memory_order_acq_rel,
							memory_order_relaxed));
	if (n & T_SCHEDULED)
		sched_requeue(ex, t);
}

/*
 * Cancels an unfinished task during destroy: `queued` when we popped it from
 * a queue (we hold the queue's reference).  A task found SCHEDULED outside
 * our queues is on its way to the inbox: returns false and leaves it.
 */
bool sb__task_cancel(sb_executor *ex, sb_task *t, bool queued)
{
	/* relaxed: a first guess for the CAS. */
	uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
	uint64_t n;
	do {
		assert(!(s & (T_DONE | T_RUNNING)));
		if (!queued && (s & T_SCHEDULED))
			return false;
		n = (s & ~T_SCHEDULED) | T_RUNNING;
		if (!queued)
			n += T_REF_ONE; /* the cancelling "poll" holds a reference */
		/* acquire: as for a poll.  relaxed on failure: retry. */
	} while (!atomic_compare_exchange_weak_explicit(&t->state, &s, n, memory_order_acquire,
							memory_order_relaxed));
	sched_adopt(ex->impl, t);
	if (t->cancel)
		t->cancel(t);
	task_complete(ex, t, -ECANCELED, T_CANCELLED);
	return true;
}

/*
 * A spawn's first transition: an unreferenced task becomes SCHEDULED for ex
 * with the list's, the queue's and (with `join`) the join's references.
 * -EBUSY while an earlier spawn still references it.
 */
static int task_claim(sb_task *t, sb_executor *ex, bool join, bool floating)
{
	uint64_t initial = T_SCHEDULED | (join ? 3 : 2) * T_REF_ONE; /* list, queue, join */
	if (floating)
		initial |= T_FLOATING;
	/* relaxed: a first guess for the CAS. */
	uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
	do {
		if (task_refs(s) != 0)
			return -EBUSY;
		/* acquire: the drop of the previous last reference (acq_rel) happens-before
		 * we reuse the task.  relaxed on failure: retry. */
	} while (!atomic_compare_exchange_weak_explicit(&t->state, &s, initial, memory_order_acquire,
							memory_order_relaxed));
	t->exec = ex;
	t->owner = ex->owner;
	task_clear_run_state(t);
	return 0;
}

/* The spawn was refused: the task is unreferenced again. */
static void task_unclaim(sb_task *t)
{
	/* release: our writes to the task come before a later spawn's acquire. */
	atomic_store_explicit(&t->state, 0, memory_order_release);
}

int sb_spawn(sb_executor *ex, sb_task *t, sb_join *join)
{
	return sb__spawn(ex, t, join, NULL);
}

int sb__spawn(sb_executor *ex, sb_task *t, sb_join *join, struct sb_sched_group *floating)
{
	if (!t->poll)
		return -EINVAL;
	int rc = task_claim(t, ex, join != NULL, floating != NULL);
	if (rc)
		return rc;
	rc = sched_spawn(ex, t, floating);
	if (rc) {
		task_unclaim(t);
		return rc;
	}
	if (join) {
		join->task = t;
		join->status = SB_PENDING;
	}
	return 0;
}

/* The task is done (T_DONE seen with acquire): the join takes its result. */
static int join_complete(sb_join *j, sb_task *t)
{
	/* j->task stays, never read again but as "spawn set it" (a zeroed
	 * join has none: sb_future_done_result). */
	j->status = t->result;
	sb__task_unref(t, 1);
	return j->status;
}

/*
 * Completion has begun (`s` has T_DONE or T_COMPLETING).  Between its two
 * steps (a few instructions, no waiting) the owner holds the join waker:
 * poll again soon rather than miss the end.
 */
static int join_completing(sb_join *j, sb_task *t, uint64_t s, const sb_waker *w)
{
	if (s & T_DONE)
		return join_complete(j, t);
	sb_waker_wake_by_ref(w);
	return SB_PENDING;
}

/* Takes back the waker we registered (*s has T_JOIN_WAKER), to replace it;
 * false when completion began first. */
static bool join_take_back(sb_task *t, uint64_t *s)
{
	do {
		if (*s & (T_DONE | T_COMPLETING))
			return false;
		/* acquire (both): on failure we may find T_DONE and read result.
		 * Success takes the field back; our own earlier write needs no
		 * ordering. */
	} while (!atomic_compare_exchange_weak_explicit(&t->state, s, *s & ~T_JOIN_WAKER,
							memory_order_acquire, memory_order_acquire));
	sb_waker_drop(t->join_waker);
	return true;
}

/* Registers a clone of `w` for the completer; false when completion began first. */
static bool join_register(sb_task *t, uint64_t *s, const sb_waker *w)
{
	t->join_waker = sb_waker_clone(w);
	do {
		if (*s & (T_DONE | T_COMPLETING)) {
			sb_waker_drop(t->join_waker);
			return false;
		}
		/* release: the completer's acquire CAS that clears T_JOIN_WAKER sees
		 * the join_waker written above.  acquire on failure: we may find
		 * T_DONE and read result. */
	} while (!atomic_compare_exchange_weak_explicit(&t->state, s, *s | T_JOIN_WAKER,
							memory_order_release, memory_order_acquire));
	return true;
}

int sb_join_poll(sb_join *j, const sb_waker *w)
{
	if (j->status != SB_PENDING)
		return sb_future_done_result(j->status, j->task);
	sb_task *t = j->task;
	/* acquire: when T_DONE is set, the completer's release makes result visible. */
	uint64_t s = atomic_load_explicit(&t->state, memory_order_acquire);
	if (s & T_DONE)
		return join_complete(j, t);
	if (s & T_JOIN_WAKER) {
		/* Reading the field while the flag is set is a read shared with the
		 * completer; nobody writes it until the flag is clear. */
		if (sb_waker_will_wake(&t->join_waker, w))
			return SB_PENDING;
		if (!join_take_back(t, &s))
			return join_completing(j, t, s, w);
	} else if (s & T_COMPLETING) {
		return join_completing(j, t, s, w);
	}
	if (!join_register(t, &s, w))
		return join_completing(j, t, s, w);
	return SB_PENDING;
}

void sb_join_cancel(sb_join *j)
{
	if (j->status != SB_PENDING)
		return;
	sb_task *t = j->task;
	/* relaxed: a first guess for the CAS. */
	uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);
	for (;;) {
		if (s & (T_DONE | T_COMPLETING))
			break; /* the completer took (and wakes) a registered join waker */
		/* relaxed: we only take back the field we wrote ourselves. */
		if (atomic_compare_exchange_weak_explicit(&t->state, &s, s & ~T_JOIN_WAKER,
							  memory_order_relaxed,
							  memory_order_relaxed)) {
			if (s & T_JOIN_WAKER)
				sb_waker_drop(t->join_waker);
			break;
		}
	}
	j->status = -ECANCELED;
	sb__task_unref(t, 1);
}
