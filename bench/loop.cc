// SPDX-License-Identifier: Apache-2.0
//
// bench/loop.cc - the loop rows of bench/README.md (syncband/loop.h driven
// as an event loop drives it).
//
//   loop/ping-pong-same-thread   two tasks on one sb_loop hand one item back
//                                and forth through two auto-reset events
//                                (A sets ab and waits on ba; B waits on ab and
//                                sets ba); one round = one round trip.  The
//                                doorbell is real: ring() writes an eventfd
//                                that an epoll set watches, and the driver
//                                is an epoll loop's: epoll_wait, read the
//                                eventfd, sb_loop_run_ready.  What it
//                                measures is the cost of a wake from one
//                                task to another on the loop's own thread,
//                                doorbell included.
//
// The peer is Tokio's current-thread runtime with two tasks and a
// tokio::sync::Notify each way (notify_one stores a permit when nobody waits:
// an auto-reset event).
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <memory>

#include <syncband/event.h>
#include <syncband/loop.h>

#include "harness.h"

namespace {

using sbb::expect;

struct SameThread {
	sb_loop_task a, b;
	sb_auto_event ab, ba;
	sb_auto_event_wait wait_a, wait_b;
	uint64_t left_a, left_b, trips;
	bool waiting_a, waiting_b;
	bool done_a, done_b;

	// A: set ab, wait on ba; one round trip per wait that completes.
	static int poll_a(sb_loop_task *t, const sb_waker *w)
	{
		SameThread *s = SB_CONTAINER_OF(t, SameThread, a);
		while (s->left_a > 0) {
			if (!s->waiting_a) {
				sb_auto_event_set(&s->ab);
				sb_auto_event_wait_init(&s->wait_a, &s->ba);
				s->waiting_a = true;
			}
			int r = sb_auto_event_wait_poll(&s->wait_a, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "A's wait for the pong");
			s->waiting_a = false;
			s->left_a--;
			s->trips++;
		}
		s->done_a = true;
		return 0;
	}
	// B: wait on ab, then set ba.
	static int poll_b(sb_loop_task *t, const sb_waker *w)
	{
		SameThread *s = SB_CONTAINER_OF(t, SameThread, b);
		while (s->left_b > 0) {
			if (!s->waiting_b) {
				sb_auto_event_wait_init(&s->wait_b, &s->ab);
				s->waiting_b = true;
			}
			int r = sb_auto_event_wait_poll(&s->wait_b, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "B's wait for the ping");
			s->waiting_b = false;
			s->left_b--;
			sb_auto_event_set(&s->ba);
		}
		s->done_b = true;
		return 0;
	}
};

// The doorbell: an eventfd, as an epoll loop's.
void eventfd_ring(void *ctx)
{
	uint64_t one = 1;
	if (write(*(int *)ctx, &one, sizeof one) != (ssize_t)sizeof one)
		sbb::wrong_result("the doorbell's eventfd write", 8, 0);
}

// Waits for the doorbell (it must have rung: a timeout of 0) and clears it;
// false when it was not rung.
bool doorbell_wait(int epfd, int fd)
{
	struct epoll_event ev;
	if (epoll_wait(epfd, &ev, 1, 0) != 1)
		return false;
	uint64_t n;
	return read(fd, &n, sizeof n) == (ssize_t)sizeof n;
}

uint64_t ping_pong_same_thread(const sbb::Params &p, sbb::Meter &m)
{
	std::unique_ptr<SameThread> s(new SameThread());
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {};
	ev.events = EPOLLIN;
	expect(fd >= 0 && epfd >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0, true,
	       "the doorbell's eventfd in an epoll set");
	expect(sb_auto_event_init(&s->ab, false), 0, "init ab");
	expect(sb_auto_event_init(&s->ba, false), 0, "init ba");
	s->left_a = s->left_b = p.rounds;
	sb_loop loop;
	sb_loop_init(&loop, eventfd_ring, &fd);
	sb_loop_task_init(&s->a, SameThread::poll_a, nullptr);
	sb_loop_task_init(&s->b, SameThread::poll_b, nullptr);
	m.start();
	expect(sb_loop_spawn(&loop, &s->a), 0, "spawn A");
	expect(sb_loop_spawn(&loop, &s->b), 0, "spawn B");
	// The driver: sleep on the doorbell (here: find it rung), clear it, run.
	while (!(s->done_a && s->done_b)) {
		if (!doorbell_wait(epfd, fd))
			sbb::wrong_result("the doorbell rings while tasks are ready", 1, 0);
		sb_loop_run_ready(&loop);
	}
	m.stop();
	for (int k = 0; k < 4 && !sb_loop_idle(&loop); k++)
		sb_loop_run_ready(&loop);
	expect(sb_loop_idle(&loop), true, "the loop is idle");
	expect(s->trips, p.rounds, "every round trip ran");
	expect(sb_auto_event_destroy(&s->ab), 0, "destroy ab");
	expect(sb_auto_event_destroy(&s->ba), 0, "destroy ba");
	close(epfd);
	close(fd);
	return p.rounds;
}
SBB_BATCH(ping_pong_same_thread, "loop/ping-pong-same-thread", sbb::SYNCBAND, 1000000);

} // namespace
