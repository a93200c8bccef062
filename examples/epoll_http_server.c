/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small HTTP/1.1 server on an epoll loop that lets at most N requests be
 * in flight (an sb_semaphore of N permits): each connection is a loop task
 * that reads its request, acquires a permit, hands the work to a pool of
 * worker threads, and writes the answer once a worker wakes it.
 *
 *   epoll_http_server [--permits N] [--workers W] [--port P]
 *
 * It prints "listening on 127.0.0.1:PORT" and serves until a request for
 * /quit, then prints "served=S max_in_flight=M permits=N" and exits 0 if
 * never more than N requests held a permit at once.  Every answer carries
 * "X-In-Flight: k", the number in flight when it got its permit.  Load it
 * with tests/server/server_load.c, or e.g. `wrk -t2 -c64 -d5s
 * http://127.0.0.1:PORT/` (Connection: close keeps each request on its own
 * connection, so wrk reports reconnections too).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <syncband/syncband.h>

static sb_loop loop;
static int epfd, bell;
static sb_semaphore limit;       /* the concurrency limit */
static int permits = 8;
static int in_flight, max_in_flight; /* the loop's thread only */
static long served;
static bool quitting;

/* ------------------------------------------------------------ the loop */

static void ring(void *ctx)
{
	(void)ctx;
	uint64_t one = 1;
	if (write(bell, &one, sizeof one) != sizeof one)
		abort();
}

/* ------------------------------------------------------------ workers */

struct conn;
static struct conn **jobs;       /* a ring of conn pointers, under jobs_mutex */
static size_t jobs_cap, jobs_head, jobs_len;
static sb_mutex jobs_mutex = SB_MUTEX_INIT;
static sb_semaphore jobs_ready = SB_SEMAPHORE_INIT(0);

static void submit(struct conn *c)
{
	sb_mutex_lock_blocking(&jobs_mutex, SB_TIMEOUT_INFINITE);
	jobs[(jobs_head + jobs_len++) % jobs_cap] = c; /* never full: see main */
	sb_mutex_unlock(&jobs_mutex);
	sb_semaphore_release(&jobs_ready, 1);
}

/* ------------------------------------------------------------ connections */

enum step { READING, ACQUIRING, WORKING, WRITING };

struct conn {
	sb_loop_task task;
	int fd;
	enum step step;
	char in[2048];
	size_t in_len;
	char out[256];
	size_t out_len, out_done;
	bool quit;
	int in_flight_seen;
	sb_semaphore_acquire acquire;
	sb_waker worker;             /* a clone: keeps the conn alive for the worker */
	atomic_bool work_done;
};

static void *worker_main(void *arg)
{
	(void)arg;
	for (;;) {
		sb_semaphore_acquire_blocking(&jobs_ready, 1, SB_TIMEOUT_INFINITE);
		sb_mutex_lock_blocking(&jobs_mutex, SB_TIMEOUT_INFINITE);
		struct conn *c = jobs[jobs_head];
		jobs_head = (jobs_head + 1) % jobs_cap;
		jobs_len--;
		sb_mutex_unlock(&jobs_mutex);
		if (!c)
			return NULL; /* shutting down */
		const char *body = c->quit ? "bye\n" : "hello\n";
		int n = snprintf(c->out, sizeof c->out,
				 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nX-In-Flight: %d\r\n"
				 "Connection: close\r\n\r\n%s",
				 strlen(body), c->in_flight_seen, body);
		c->out_len = (size_t)n;
		/* release: c->out is written before the loop reads it (acquire load). */
		atomic_store_explicit(&c->work_done, true, memory_order_release);
		sb_waker_wake(c->worker); /* consumes the clone; the last touch of c */
	}
}

/* Reads until the end of the headers: 0, SB_PENDING (would block), or -1. */
static int read_request(struct conn *c)
{
	for (;;) {
		ssize_t n = read(c->fd, c->in + c->in_len, sizeof c->in - 1 - c->in_len);
		if (n < 0)
			return errno == EAGAIN ? SB_PENDING : -1;
		if (n == 0)
			return -1; /* closed before a whole request */
		c->in_len += (size_t)n;
		c->in[c->in_len] = '\0';
		if (strstr(c->in, "\r\n\r\n")) {
			c->quit = strncmp(c->in, "GET /quit ", 10) == 0;
			return 0;
		}
		if (c->in_len == sizeof c->in - 1)
			return -1;
	}
}

/* Writes the answer: 0 when all of it is out, SB_PENDING, or -1. */
static int write_answer(struct conn *c)
{
	while (c->out_done < c->out_len) {
		ssize_t n = write(c->fd, c->out + c->out_done, c->out_len - c->out_done);
		if (n < 0)
			return errno == EAGAIN ? SB_PENDING : -1;
		c->out_done += (size_t)n;
	}
	return 0;
}

static int conn_poll(sb_loop_task *t, const sb_waker *w)
{
	struct conn *c = SB_CONTAINER_OF(t, struct conn, task);
	int r = -1; /* every step sets it */
	switch (c->step) {
	case READING:
		r = read_request(c);
		if (r != 0)
			break;
		sb_semaphore_acquire_init(&c->acquire, &limit, 1);
		c->step = ACQUIRING;
		/* fall through */
	case ACQUIRING:
		r = sb_semaphore_acquire_poll(&c->acquire, w);
		if (r != 0)
			break;
		c->in_flight_seen = ++in_flight;
		if (in_flight > max_in_flight)
			max_in_flight = in_flight;
		c->worker = sb_waker_clone(w);
		c->step = WORKING;
		submit(c);
		return SB_PENDING;
	case WORKING:
		/* Socket events wake us too: poll again means look again. */
		/* acquire: pairs with the worker's release store; c->out is ready. */
		if (!atomic_load_explicit(&c->work_done, memory_order_acquire))
			return SB_PENDING;
		in_flight--;
		sb_semaphore_release(&limit, 1);
		c->step = WRITING;
		/* fall through */
	case WRITING:
		r = write_answer(c);
		if (r == 0) {
			served++;
			if (c->quit)
				quitting = true;
		}
		break;
	}
	if (r == SB_PENDING)
		return SB_PENDING;
	close(c->fd); /* leaves the epoll set */
	return r;
}

static void conn_release(sb_loop_task *t)
{
	free(SB_CONTAINER_OF(t, struct conn, task));
}

/* ------------------------------------------------------------ main */

static char listener_mark; /* epoll data of the listening socket */

static void accept_all(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct conn *c = calloc(1, sizeof *c);
		if (!c)
			abort();
		c->fd = fd;
		atomic_init(&c->work_done, false);
		sb_loop_task_init(&c->task, conn_poll, conn_release);
		/* Spawned first: it runs at the next sb_loop_run_ready, on this
		 * thread, after the epoll registration below. */
		if (sb_loop_spawn(&loop, &c->task) != 0) {
			close(fd); /* -ESHUTDOWN: quitting, the loop takes no more */
			free(c);
			continue;
		}
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
					  .data.ptr = c };
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
			abort();
	}
}

static int listen_on(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 512) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
	fflush(stdout);
	return fd;
}

int main(int argc, char **argv)
{
	int workers = 2, port = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--permits"))
			permits = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--workers"))
			workers = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--port"))
			port = atoi(argv[i + 1]);
	}
	if (permits < 1 || workers < 1 || sb_semaphore_init(&limit, (size_t)permits) != 0)
		return 2;
	/* At most `permits` jobs are queued (each holds a permit), plus the stops. */
	jobs_cap = (size_t)permits + (size_t)workers;
	jobs = calloc(jobs_cap, sizeof *jobs);
	pthread_t *threads = calloc((size_t)workers, sizeof *threads);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int lfd = listen_on(port);
	struct epoll_event bell_ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct epoll_event listen_ev = { .events = EPOLLIN, .data.ptr = &listener_mark };
	if (!jobs || !threads || epfd < 0 || bell < 0 || lfd < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, bell, &bell_ev) != 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &listen_ev) != 0)
		return 2;
	sb_loop_init(&loop, ring, NULL);
	for (int i = 0; i < workers; i++)
		pthread_create(&threads[i], NULL, worker_main, NULL);

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
				accept_all(lfd);
			} else {
				sb_loop_wake(&((struct conn *)p)->task);
			}
		}
		/* Last: a poll may finish a connection whose event was in this batch. */
		sb_loop_run_ready(&loop);
		if (quitting && lfd >= 0) {
			/* No new connections; the open ones finish.  Once closed, an
			 * idle loop is closed and drained: nothing rings any more. */
			sb_loop_close(&loop);
			close(lfd);
			lfd = -1;
		}
	}

	for (int i = 0; i < workers; i++)
		submit(NULL);
	for (int i = 0; i < workers; i++)
		pthread_join(threads[i], NULL);
	close(bell);
	close(epfd);
	bool ok = max_in_flight <= permits && in_flight == 0 &&
		  sb_semaphore_available(&limit) == (size_t)permits;
	printf("served=%ld max_in_flight=%d permits=%d\n", served, max_in_flight, permits);
	free(jobs);
	free(threads);
	return ok ? 0 : 1;
}
