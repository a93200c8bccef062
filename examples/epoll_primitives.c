/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband on a hand-written epoll loop: the primitives tour
 * (primitives_tour.c) driven by an eventfd doorbell and timerfd deadlines.
 * This file is all the glue such a loop needs.  Exits 0 when every check of
 * the tour passed.
 *
 * Build: cc -std=c11 epoll_primitives.c primitives_tour.c \
 *           $(pkg-config --cflags --libs syncband) -pthread
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <syncband/syncband.h>

#include "primitives_tour.h"

static sb_loop loop;
static int epfd, bell;

/* Any thread: a task was queued while the loop was not looking. */
static void ring(void *ctx)
{
	(void)ctx;
	uint64_t one = 1;
	if (write(bell, &one, sizeof one) != sizeof one)
		abort();
}

struct tour_timer {
	int fd;
	sb_deadline *deadline;
	sb_loop_task *task;
};

tour_timer *tour_timer_start(unsigned ms, sb_deadline *d, sb_loop_task *t)
{
	tour_timer *tm = malloc(sizeof *tm);
	if (!tm)
		abort();
	*tm = (tour_timer){ timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC), d, t };
	struct itimerspec when = { .it_value = { ms / 1000, (long)(ms % 1000) * 1000000 } };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tm };
	if (tm->fd < 0 || timerfd_settime(tm->fd, 0, &when, NULL) != 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, tm->fd, &ev) != 0)
		abort();
	return tm;
}

void tour_timer_stop(tour_timer *tm)
{
	close(tm->fd); /* leaves the epoll set with it */
	free(tm);
}

int main(void)
{
	epfd = epoll_create1(EPOLL_CLOEXEC);
	bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event bell_ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (epfd < 0 || bell < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, bell, &bell_ev) != 0)
		return 1;
	sb_loop_init(&loop, ring, NULL);
	if (tour_start(&loop) != 0)
		return 1;
	sb_loop_close(&loop); /* every task is spawned: idle then means drained */
	/* Until every task is done and every waker clone dropped. */
	while (!sb_loop_idle(&loop)) {
		struct epoll_event evs[16];
		int n = epoll_wait(epfd, evs, 16, -1);
		for (int i = 0; i < n; i++) {
			tour_timer *tm = evs[i].data.ptr;
			uint64_t count;
			/* Clear the doorbell (or the timer) before running the tasks. */
			if (read(tm ? tm->fd : bell, &count, sizeof count) < 0)
				continue;
			if (tm) {
				sb_deadline_expire(tm->deadline);
				sb_loop_wake(tm->task); /* its next poll times the future out */
			}
		}
		/* Last: a poll may stop (free) a timer whose event was in this batch. */
		sb_loop_run_ready(&loop);
	}
	close(bell);
	close(epfd);
	return tour_finish();
}
