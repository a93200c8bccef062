/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The executor: ring setup, run queues, the inbox and its doorbells, the
 * loop, and shutdown.  See internal.h for the lifetime rules.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../cpu.h"

/* How long park() watches the inbox before sleeping (a few microseconds). */
#define PARK_SPINS 256


_Thread_local char sb__exec_thread_tag __attribute__((tls_model("initial-exec")));
_Thread_local sb_executor *sb__exec_current __attribute__((tls_model("initial-exec")));

/* Tasks polled per loop iteration before the inbox, CQEs and timers are looked at. */
#define RUN_BUDGET 64

/* ------------------------------------------------------------ queues */

void sb__exec_push_local(sb_executor *ex, sb_task *t)
{
	struct sb_executor_impl *impl = ex->impl;
	t->next = NULL;
	if (impl->q_tail)
		impl->q_tail->next = t;
	else
		impl->q_head = t;
	impl->q_tail = t;
}

static sb_task *pop_local(struct sb_executor_impl *impl)
{
	sb_task *t = impl->q_head;
	if (t) {
		impl->q_head = t->next;
		if (!impl->q_head)
			impl->q_tail = NULL;
	}
	return t;
}

sb_task *sb__exec_pop_local(sb_executor *ex)
{
	return pop_local(ex->impl);
}

void sb__exec_live_link(struct sb_executor_impl *impl, sb_task *t)
{
	task_list_push(&impl->live_head, t);
	impl->live_count++;
}

void sb__exec_live_unlink(struct sb_executor_impl *impl, sb_task *t)
{
	task_list_remove(&impl->live_head, t);
	impl->live_count--;
}

/* Moves everything other threads pushed onto the local queue, oldest first. */
void sb__exec_drain_inbox(sb_executor *ex)
{
	/* relaxed: a cheap emptiness test; a push we miss is seen next iteration,
	 * and park() re-checks with seq_cst before sleeping. */
	if (!atomic_load_explicit(&ex->inbox, memory_order_relaxed))
		return;
	/* acquire: pairs with the pushers' release (seq_cst) CAS, so the tasks
	 * and their next links are visible. */
	sb_task *t = atomic_exchange_explicit(&ex->inbox, NULL, memory_order_acquire);
	sb_task *fifo = NULL;
	while (t) {
		sb_task *next = t->next;
		t->next = fifo;
		fifo = t;
		t = next;
	}
	while (fifo) {
		sb_task *next = fifo->next;
		sb__exec_push_local(ex, fifo);
		fifo = next;
	}
}

/* ------------------------------------------------------------ the ring */

static struct io_uring_sqe *get_sqe(struct sb_executor_impl *impl)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&impl->ring);
	if (!sqe) {
		io_uring_submit(&impl->ring);
		sqe = io_uring_get_sqe(&impl->ring);
	}
	return sqe;
}

static void exec_unref(sb_executor *ex)
{
	/* release: our uses of ex (push, fds) happen-before destroy's load of 0. */
	atomic_fetch_sub_explicit(&ex->refs, 1, memory_order_release);
}

static void eventfd_ring(int fd)
{
	uint64_t one = 1;
	while (write(fd, &one, sizeof one) < 0 && errno == EINTR)
		;
}

/*
 * Rings `target`'s doorbell and consumes the caller's reference on it.  From
 * an executor thread with MSG_RING on both sides: a MSG_RING from our own
 * ring, whose CQE (reaped by us) drops the reference, so target's ring stays
 * open until the kernel is done with the message.  Otherwise the eventfd.
 */
static void doorbell(sb_executor *target)
{
	sb_executor *src = sb__exec_current;
	if (src && (src->features & SB_EXECUTOR_FEAT_MSG_RING) &&
	    (target->features & SB_EXECUTOR_FEAT_MSG_RING)) {
		struct sb_executor_impl *impl = src->impl;
		struct io_uring_sqe *sqe = get_sqe(impl);
		if (sqe) {
			io_uring_prep_msg_ring(sqe, target->ring_fd, 0, UD_DOORBELL, 0);
			io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)target | UD_MSG_SENT);
			impl->msgs_in_flight++;
			if (io_uring_submit(&impl->ring) < 0)
				eventfd_ring(target->event_fd); /* the SQE goes with our next submit */
			return;
		}
	}
	eventfd_ring(target->event_fd);
	exec_unref(target);
}

void sb__exec_push_remote_held(sb_executor *ex, sb_task *t)
{
	/* relaxed: a first guess for the CAS. */
	sb_task *head = atomic_load_explicit(&ex->inbox, memory_order_relaxed);
	do {
		t->next = head;
		/* seq_cst: release publishes the task and its link to the owner's
		 * acquire exchange, and the push and our read of `sleeping` below
		 * form a Dekker pair with park() (store sleeping, read inbox).
		 * relaxed on failure: retry. */
	} while (!atomic_compare_exchange_weak_explicit(&ex->inbox, &head, t, memory_order_seq_cst,
							memory_order_relaxed));
	/* seq_cst (both): the other half of the Dekker pair; only the waker that
	 * flips 1 -> 0 rings, so one doorbell serves every wake of one sleep. */
	if (atomic_load_explicit(&ex->sleeping, memory_order_seq_cst) &&
	    atomic_exchange_explicit(&ex->sleeping, 0, memory_order_seq_cst))
		doorbell(ex);
	else
		exec_unref(ex);
}

void sb__exec_push_remote(sb_executor *ex, sb_task *t)
{
	/* relaxed: we hold a reference on an unfinished task of ex, so destroy
	 * cannot finish before it receives this push; the push (a release) is
	 * sequenced after this increment, so once destroy has the task it also
	 * sees the increment. */
	atomic_fetch_add_explicit(&ex->refs, 1, memory_order_relaxed);
	sb__exec_push_remote_held(ex, t);
}

static void arm_eventfd(sb_executor *ex)
{
	struct sb_executor_impl *impl = ex->impl;
	struct io_uring_sqe *sqe = get_sqe(impl);
	if (!sqe)
		return;
	io_uring_prep_read(sqe, ex->event_fd, &impl->efd_buf, sizeof impl->efd_buf, 0);
	io_uring_sqe_set_data64(sqe, UD_EVENTFD);
	impl->efd_armed = true;
}

/* Arms one absolute IORING_OP_TIMEOUT for `deadline`; false when no SQE. */
static bool arm_timeout(struct sb_executor_impl *impl, uint64_t deadline)
{
	if (impl->armed && impl->armed_deadline <= deadline)
		return true;
	/* Far deadlines are clamped; the timer is re-armed when it fires. */
	const uint64_t max = (uint64_t)INT64_MAX / 2;
	if (deadline > max)
		deadline = max;
	struct io_uring_sqe *sqe;
	if (impl->armed) {
		sqe = get_sqe(impl);
		if (!sqe)
			return false;
		io_uring_prep_timeout_remove(sqe, impl->armed_ud, 0);
		io_uring_sqe_set_data64(sqe, UD_IGNORE);
		impl->armed = false;
	}
	sqe = get_sqe(impl);
	if (!sqe)
		return false;
	impl->ts.tv_sec = (long long)(deadline / SB_NSEC_PER_SEC);
	impl->ts.tv_nsec = (long long)(deadline % SB_NSEC_PER_SEC);
	io_uring_prep_timeout(sqe, &impl->ts, 0, IORING_TIMEOUT_ABS);
	impl->armed_ud = UD_TIMEOUT | (++impl->timeout_seq << 3);
	io_uring_sqe_set_data64(sqe, impl->armed_ud);
	impl->armed = true;
	impl->armed_deadline = deadline;
	return true;
}

static void handle_cqe(sb_executor *ex, uint64_t ud, int res)
{
	struct sb_executor_impl *impl = ex->impl;
	switch (ud & UD_TAG_MASK) {
	case UD_EVENTFD:
		impl->efd_armed = false; /* re-armed before the next sleep */
		break;
	case UD_TIMEOUT:
		if (impl->armed && ud == impl->armed_ud)
			impl->armed = false;
		break;
	case UD_MSG_SENT: {
		sb_executor *target = (sb_executor *)(uintptr_t)(ud & ~UD_TAG_MASK);
		if (res < 0)
			eventfd_ring(target->event_fd);
		impl->msgs_in_flight--;
		exec_unref(target);
		break;
	}
	default: /* UD_DOORBELL, UD_IGNORE: waking us was the point */
		break;
	}
}

/*
 * With DEFER_TASKRUN (or COOP_TASKRUN) some completions wait for us to enter
 * the kernel; TASKRUN_FLAG makes the kernel say so in sq_flags.  One load.
 */
static void flush_task_work(struct sb_executor_impl *impl)
{
	/* relaxed (IO_URING_READ_ONCE): a hint from the kernel; a stale value
	 * only delays reaping until the next iteration or sleep. */
	if (IO_URING_READ_ONCE(*impl->ring.sq.kflags) & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW))
		io_uring_get_events(&impl->ring);
}

static void reap(sb_executor *ex)
{
	struct io_uring *ring = &ex->impl->ring;
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(ring, head, cqe)
	{
		handle_cqe(ex, cqe->user_data, cqe->res);
		n++;
	}
	io_uring_cq_advance(ring, n);
}

/*
 * The sleep protocol: publish "sleeping", re-check the inbox (and a stop
 * request), then enter the kernel until a CQE arrives: a doorbell, the
 * eventfd read, or the timeout armed for the earliest timer.
 */
/*
 * Before sleeping, watch the inbox for a moment: a wake from a busy thread
 * (a mutex or permit handed over) often arrives within a microsecond, and
 * catching it here saves the waker its doorbell and us a trip through the
 * kernel.  Returns true when work arrived.
 */
static bool spin_for_inbox(sb_executor *ex)
{
	for (int i = 0; i < PARK_SPINS; i++) {
		/* relaxed: a hint; the loop's sb__exec_drain_inbox takes it with acquire. */
		if (atomic_load_explicit(&ex->inbox, memory_order_relaxed) != NULL)
			return true;
		sb_cpu_relax();
	}
	return false;
}

static void park(sb_executor *ex, enum loop_mode mode)
{
	struct sb_executor_impl *impl = ex->impl;
	if (spin_for_inbox(ex))
		return;
	if (!impl->efd_armed)
		arm_eventfd(ex);
	/* seq_cst: Dekker with sb__exec_push_remote_held / sb_executor_stop: we
	 * store sleeping then read inbox and flags; they write those then read
	 * sleeping.  One side sees the other, so no wake is lost. */
	atomic_store_explicit(&ex->sleeping, 1, memory_order_seq_cst);
	bool stay = atomic_load_explicit(&ex->inbox, memory_order_seq_cst) != NULL;
	/* seq_cst: the same Dekker pair, for stop requests. */
	if (mode != LOOP_UNTIL_DONE &&
	    (atomic_load_explicit(&ex->flags, memory_order_seq_cst) & EX_STOP_REQ))
		stay = true;
	if (!stay && impl->t_head) {
		if (impl->t_head->deadline <= sb_now_ns() || !arm_timeout(impl, impl->t_head->deadline))
			stay = true;
	}
	if (!stay)
		io_uring_submit_and_wait(&impl->ring, 1); /* errors (EINTR): the loop re-checks */
	/* relaxed: it only tells wakers whether to ring; a stale 0 merely skips a
	 * doorbell we no longer need, since we re-check the inbox before sleeping. */
	atomic_store_explicit(&ex->sleeping, 0, memory_order_relaxed);
}

static void run_batch(sb_executor *ex)
{
	struct sb_executor_impl *impl = ex->impl;
	for (int i = 0; i < RUN_BUDGET; i++) {
		sb_task *t = pop_local(impl);
		if (!t)
			break;
		sb__task_run(ex, t);
	}
}

int sb__exec_loop(sb_executor *ex, enum loop_mode mode, const sb_task *root)
{
	struct sb_executor_impl *impl = ex->impl;
	sb_executor *prev = sb__exec_current;
	sb__exec_current = ex;
	impl->running = 1;
	impl->takes_floating = mode == LOOP_UNTIL_STOPPED && impl->group;
	int rc = 0;
	for (;;) {
		sb__exec_drain_inbox(ex);
		flush_task_work(impl);
		if (io_uring_cq_ready(&impl->ring))
			reap(ex);
		if (impl->t_head)
			sb__timers_fire(impl, sb_now_ns());
		run_batch(ex);
		if (mode == LOOP_UNTIL_DONE) {
			/* relaxed: the root runs on this thread; we completed it ourselves. */
			if (atomic_load_explicit(&root->state, memory_order_relaxed) & T_DONE)
				break;
		} else {
			/* relaxed: a hint; park() re-reads it with seq_cst before sleeping. */
			if (atomic_load_explicit(&ex->flags, memory_order_relaxed) & EX_STOP_REQ) {
				/* relaxed: clearing our own request needs no ordering. */
				atomic_fetch_and_explicit(&ex->flags, ~EX_STOP_REQ, memory_order_relaxed);
				rc = mode == LOOP_UNTIL_IDLE ? -EINTR : 0;
				break;
			}
			/* relaxed: a remote spawn racing with the return is simply "after". */
			if (mode == LOOP_UNTIL_IDLE && impl->live_count == 0 && !impl->q_head &&
			    !atomic_load_explicit(&ex->inbox, memory_order_relaxed))
				break;
		}
		if (!impl->q_head)
			park(ex, mode);
	}
	impl->takes_floating = false;
	impl->running = 0;
	sb__exec_current = prev;
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
	ex->owner = &sb__exec_thread_tag;
	ex->impl = NULL;

	unsigned entries = cfg && cfg->entries ? cfg->entries : 64;
	unsigned cflags = cfg ? cfg->flags : 0;
	struct sb_executor_impl *impl = calloc(1, sizeof *impl);
	if (!impl)
		return -ENOMEM;

	static const struct {
		unsigned setup;
		unsigned features;
	} modes[] = {
		{ IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		  SB_EXECUTOR_FEAT_SINGLE_ISSUER | SB_EXECUTOR_FEAT_DEFER_TASKRUN },
		{ IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		  SB_EXECUTOR_FEAT_SINGLE_ISSUER | SB_EXECUTOR_FEAT_COOP_TASKRUN },
		{ IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG, SB_EXECUTOR_FEAT_COOP_TASKRUN },
		{ 0, 0 },
	};
	const size_t nmodes = sizeof modes / sizeof modes[0];
	int r = -EINVAL;
	size_t i;
	for (i = (cflags & SB_EXECUTOR_PLAIN_SETUP) ? nmodes - 1 : 0; i < nmodes; i++) {
		struct io_uring_params p;
		memset(&p, 0, sizeof p);
		p.flags = modes[i].setup;
		r = io_uring_queue_init_params(entries, &impl->ring, &p);
		if (r != -EINVAL)
			break;
	}
	if (r < 0) {
		free(impl);
		return r;
	}
	unsigned features = modes[i].features;

	int efd = eventfd(0, EFD_CLOEXEC);
	if (efd < 0) {
		r = -errno;
		io_uring_queue_exit(&impl->ring);
		free(impl);
		return r;
	}
	if (!(cflags & SB_EXECUTOR_NO_MSG_RING)) {
		struct io_uring_probe *probe = io_uring_get_probe_ring(&impl->ring);
		if (probe && io_uring_opcode_supported(probe, IORING_OP_MSG_RING))
			features |= SB_EXECUTOR_FEAT_MSG_RING;
		if (probe)
			io_uring_free_probe(probe);
	}
	ex->ring_fd = impl->ring.ring_fd;
	ex->event_fd = efd;
	ex->features = features;
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
		doorbell(ex);
	else
		exec_unref(ex);
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
	struct sb_executor_impl *impl = ex->impl;
	if (impl->running)
		return -EBUSY;
	/* seq_cst: Dekker with remote spawners and stoppers, who add to refs and
	 * then read flags; we set STOPPING and then read refs below. */
	atomic_fetch_or_explicit(&ex->flags, EX_STOPPING, memory_order_seq_cst);
	sb_executor *prev = sb__exec_current;
	sb__exec_current = ex;
	impl->running = 1;

	size_t n = 0;
	for (;;) {
		sb__exec_drain_inbox(ex);
		sb_task *t;
		while ((t = pop_local(impl)))
			n += sb__task_cancel(ex, t, true);
		for (t = impl->live_head; t;) {
			sb_task *next = t->live_next;
			n += sb__task_cancel(ex, t, false);
			t = next;
		}
		flush_task_work(impl);
		if (io_uring_cq_ready(&impl->ring))
			reap(ex);
		/* Tasks found SCHEDULED are still on their way: wait for the push.
		 * seq_cst: the Dekker read of refs; once it is 0, every push made
		 * under a reference happened-before, so the inbox read below (also
		 * seq_cst) sees it. */
		if (!impl->live_head && !impl->q_head &&
		    atomic_load_explicit(&ex->refs, memory_order_seq_cst) == 0 &&
		    !atomic_load_explicit(&ex->inbox, memory_order_seq_cst))
			break;
		sched_yield();
	}
	sb__timers_detach_all(impl);

	/* Our own MSG_RINGs still carry references on other executors. */
	while (impl->msgs_in_flight) {
		io_uring_submit_and_wait(&impl->ring, 1);
		reap(ex);
	}
	/* The armed eventfd read writes into impl: cancel it and see it end. */
	if (impl->efd_armed) {
		struct io_uring_sqe *sqe = get_sqe(impl);
		if (sqe) {
			io_uring_prep_cancel64(sqe, UD_EVENTFD, 0);
			io_uring_sqe_set_data64(sqe, UD_IGNORE);
		}
		while (impl->efd_armed) {
			io_uring_submit_and_wait(&impl->ring, 1);
			reap(ex);
		}
	}
	impl->running = 0;
	sb__exec_current = prev;

	io_uring_queue_exit(&impl->ring);
	close(ex->event_fd);
	free(impl);
	ex->impl = NULL;
	ex->ring_fd = -1;
	ex->event_fd = -1;
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
