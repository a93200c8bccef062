/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The io_uring side of an executor: setup and teardown, the doorbells other
 * threads ring, the kernel timeout for the earliest timer, and reaping
 * completions.  Everything but the doorbell runs on the owner thread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* The setup flags tried in turn (executor.h says why each). */
static const struct ring_mode {
	unsigned setup;
	unsigned features;
} ring_modes[] = {
	{ IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
	  SB_EXECUTOR_FEAT_SINGLE_ISSUER | SB_EXECUTOR_FEAT_DEFER_TASKRUN },
	{ IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
	  SB_EXECUTOR_FEAT_SINGLE_ISSUER | SB_EXECUTOR_FEAT_COOP_TASKRUN },
	{ IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG, SB_EXECUTOR_FEAT_COOP_TASKRUN },
	{ 0, 0 },
};

/* The first mode the kernel accepts (each step falls back on -EINVAL only). */
static int ring_setup(struct io_uring *ring, unsigned entries, unsigned cflags,
		      unsigned *features)
{
	const size_t nmodes = sizeof ring_modes / sizeof ring_modes[0];
	int r = -EINVAL;
	for (size_t i = (cflags & SB_EXECUTOR_PLAIN_SETUP) ? nmodes - 1 : 0; i < nmodes; i++) {
		struct io_uring_params p;
		memset(&p, 0, sizeof p);
		p.flags = ring_modes[i].setup;
		r = io_uring_queue_init_params(entries, ring, &p);
		if (r != -EINVAL) {
			*features = ring_modes[i].features;
			break;
		}
	}
	return r;
}

static bool ring_has_msg_ring(struct io_uring *ring)
{
	struct io_uring_probe *probe = io_uring_get_probe_ring(ring);
	if (!probe)
		return false;
	bool has = io_uring_opcode_supported(probe, IORING_OP_MSG_RING);
	io_uring_free_probe(probe);
	return has;
}

int sb__ring_open(sb_executor *ex, struct sb_executor_impl *impl, const sb_executor_config *cfg)
{
	unsigned entries = cfg && cfg->entries ? cfg->entries : 64;
	unsigned cflags = cfg ? cfg->flags : 0;
	unsigned features = 0;
	int r = ring_setup(&impl->ring, entries, cflags, &features);
	if (r < 0)
		return r;
	int efd = eventfd(0, EFD_CLOEXEC);
	if (efd < 0) {
		r = -errno;
		io_uring_queue_exit(&impl->ring);
		return r;
	}
	if (!(cflags & SB_EXECUTOR_NO_MSG_RING) && ring_has_msg_ring(&impl->ring))
		features |= SB_EXECUTOR_FEAT_MSG_RING;
	ex->ring_fd = impl->ring.ring_fd;
	ex->event_fd = efd;
	ex->features = features;
	return 0;
}

static struct io_uring_sqe *get_sqe(struct sb_executor_impl *impl)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&impl->ring);
	if (!sqe) {
		io_uring_submit(&impl->ring);
		sqe = io_uring_get_sqe(&impl->ring);
	}
	return sqe;
}

static void eventfd_ring(int fd)
{
	uint64_t one = 1;
	while (write(fd, &one, sizeof one) < 0 && errno == EINTR)
		;
}

/*
 * Rings `target`'s doorbell and consumes the caller's reference on it.  From
 * an executor thread (`src`: the executor it runs, or NULL) with MSG_RING on
 * both sides: a MSG_RING from our own ring, whose CQE (reaped by us) drops
 * the reference, so target's ring stays open until the kernel is done with
 * the message.  Otherwise the eventfd.
 */
/* The awake count (internal.h).  Relaxed throughout: it only decides whether
 * an idle loop spins a while longer, publishes nothing, and a stale value
 * costs a spin or a sleep, never a wake. */
static _Atomic unsigned loops_awake;

void sb__ring_count_woken(void)
{
	/* relaxed: a count (above). */
	atomic_fetch_add_explicit(&loops_awake, 1, memory_order_relaxed);
}

void sb__ring_count_asleep(void)
{
	/* relaxed: a count (above). */
	atomic_fetch_sub_explicit(&loops_awake, 1, memory_order_relaxed);
}

unsigned sb__ring_loops_awake(void)
{
	/* relaxed: a count (above). */
	return atomic_load_explicit(&loops_awake, memory_order_relaxed);
}

void sb__ring_doorbell(sb_executor *src, sb_executor *target)
{
	sb__ring_count_woken(); /* the target is awake from now on, for the idle spin */
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

void sb__ring_arm_eventfd(sb_executor *ex)
{
	struct sb_executor_impl *impl = ex->impl;
	if (impl->efd_armed)
		return;
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

/*
 * Before a sleep: makes sure the kernel wakes us for `earliest` (NULL: no
 * timer).  False when it is already due or cannot be armed: do not sleep.
 */
bool sb__ring_arm_timer(struct sb_executor_impl *impl, const sb_sleep *earliest)
{
	if (!earliest)
		return true;
	return earliest->deadline > sb_now_ns() && arm_timeout(impl, earliest->deadline);
}

/* Sleeps in the kernel until a CQE arrives: a doorbell, the eventfd or the timeout. */
void sb__ring_enter(struct sb_executor_impl *impl)
{
	io_uring_submit_and_wait(&impl->ring, 1); /* errors (EINTR): the loop re-checks */
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

void sb__ring_reap_ready(sb_executor *ex)
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

static void wait_and_reap(sb_executor *ex)
{
	io_uring_submit_and_wait(&ex->impl->ring, 1);
	ring_reap(ex);
}

/*
 * Closes the ring once nothing in flight can still touch it or us: our own
 * MSG_RINGs (which carry references on other executors) and the armed
 * eventfd read (which writes into impl).
 */
void sb__ring_close(sb_executor *ex)
{
	struct sb_executor_impl *impl = ex->impl;
	while (impl->msgs_in_flight)
		wait_and_reap(ex);
	if (impl->efd_armed) {
		struct io_uring_sqe *sqe = get_sqe(impl);
		if (sqe) {
			io_uring_prep_cancel64(sqe, UD_EVENTFD, 0);
			io_uring_sqe_set_data64(sqe, UD_IGNORE);
		}
		while (impl->efd_armed)
			wait_and_reap(ex);
	}
	io_uring_queue_exit(&impl->ring);
	close(ex->event_fd);
	ex->ring_fd = -1;
	ex->event_fd = -1;
}
