/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server (http_server.h) on a hand-written epoll loop: an eventfd
 * doorbell, the listening socket and every connection in one epoll set, and
 * loop.h used directly.  syncband/driver.h and syncband/uv.h do all of this
 * for you (driver_http_server.c, uv_http_server.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_server.h"

static sb_loop loop;
static int epfd, bell, lfd;
static bool quitting;

static void ring(void *ctx)
{
	(void)ctx;
	uint64_t one = 1;
	if (write(bell, &one, sizeof one) != sizeof one)
		abort();
}

void http_conn_finished(http_conn *c)
{
	close(c->fd); /* leaves the epoll set */
}

void http_quit(void)
{
	quitting = true;
	sb_loop_close(&loop);
	close(lfd); /* no new connections (the backlog is reset); the open ones finish */
	lfd = -1;
}

static char listener_mark; /* epoll data of the listening socket */

static void accept_all(void)
{
	while (lfd >= 0) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		http_conn *c = http_conn_new(fd);
		/* Spawned first (refused and freed once closed); it runs at the
		 * next sb_loop_run_ready, on this thread, after the registration. */
		if (http_spawn(&loop, c) != 0)
			continue;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
					  .data.ptr = c };
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
			abort();
	}
}

int main(int argc, char **argv)
{
	lfd = http_start(argc, argv);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event bell_ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct epoll_event listen_ev = { .events = EPOLLIN, .data.ptr = &listener_mark };
	if (lfd < 0 || epfd < 0 || bell < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, bell, &bell_ev) != 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &listen_ev) != 0)
		return 2;
	sb_loop_init(&loop, ring, NULL);

	while (!(quitting && sb_loop_idle(&loop))) {
		struct epoll_event evs[64];
		int n = epoll_wait(epfd, evs, 64, -1);
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			uint64_t count;
			if (p == NULL) {
				if (read(bell, &count, sizeof count) < 0)
					continue; /* cleared before the run below */
			} else if (p == &listener_mark) {
				accept_all();
			} else {
				sb_loop_wake(&((http_conn *)p)->task);
			}
		}
		/* Last: a poll may finish a connection whose event was in this batch. */
		sb_loop_run_ready(&loop);
	}
	close(bell);
	close(epfd);
	return http_finish(true);
}
