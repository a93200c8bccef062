/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server's request logic, shared by its three loops (see
 * http_server.h): the connection task, the worker pool, and the summary.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "http_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static sb_semaphore limit;       /* the concurrency limit */
static int permits = 8, workers = 2;
static int in_flight, max_in_flight; /* the loop's thread only */
static long served;                  /* the loop's thread only */
static atomic_long refused;
atomic_long http_spawned, http_released;
static pthread_t *threads;

/* ------------------------------------------------------------ workers */

static http_conn **jobs;         /* a ring of conn pointers, under jobs_mutex */
static size_t jobs_cap, jobs_head, jobs_len;
static sb_mutex jobs_mutex = SB_MUTEX_INIT;
static sb_semaphore jobs_ready = SB_SEMAPHORE_INIT(0);

static void submit(http_conn *c)
{
	sb_mutex_lock_blocking(&jobs_mutex, SB_TIMEOUT_INFINITE);
	jobs[(jobs_head + jobs_len++) % jobs_cap] = c; /* never full: see http_start */
	sb_mutex_unlock(&jobs_mutex);
	sb_semaphore_release(&jobs_ready, 1);
}

static void *worker_main(void *arg)
{
	(void)arg;
	for (;;) {
		sb_semaphore_acquire_blocking(&jobs_ready, 1, SB_TIMEOUT_INFINITE);
		sb_mutex_lock_blocking(&jobs_mutex, SB_TIMEOUT_INFINITE);
		http_conn *c = jobs[jobs_head];
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

/* ------------------------------------------------------------ connections */

int http_read_request(http_conn *c)
{
	for (;;) {
		if (strstr(c->in, "\r\n\r\n")) {
			c->quit = strncmp(c->in, "GET /quit ", 10) == 0;
			return 0;
		}
		if (c->in_len == sizeof c->in - 1)
			return -1;
		ssize_t n = read(c->fd, c->in + c->in_len, sizeof c->in - 1 - c->in_len);
		if (n < 0)
			return errno == EAGAIN ? SB_PENDING : -1;
		if (n == 0)
			return -1; /* closed before a whole request */
		c->in_len += (size_t)n;
		c->in[c->in_len] = '\0';
	}
}

/* Writes the answer: 0 when all of it is out, SB_PENDING, or -1. */
static int write_answer(http_conn *c)
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
	http_conn *c = SB_CONTAINER_OF(t, http_conn, task);
	int r = -1; /* every step sets it */
	switch (c->step) {
	case HTTP_READING:
		r = http_read_request(c);
		if (r != 0)
			break;
		sb_semaphore_acquire_init(&c->acquire, &limit, 1);
		c->step = HTTP_ACQUIRING;
		/* fall through */
	case HTTP_ACQUIRING:
		r = sb_semaphore_acquire_poll(&c->acquire, w);
		if (r != 0)
			break;
		c->in_flight_seen = ++in_flight;
		if (in_flight > max_in_flight)
			max_in_flight = in_flight;
		c->worker = sb_waker_clone(w);
		c->step = HTTP_WORKING;
		submit(c);
		return SB_PENDING;
	case HTTP_WORKING:
		/* Socket events wake us too: poll again means look again. */
		/* acquire: pairs with the worker's release store; c->out is ready. */
		if (!atomic_load_explicit(&c->work_done, memory_order_acquire))
			return SB_PENDING;
		in_flight--;
		sb_semaphore_release(&limit, 1);
		c->step = HTTP_WRITING;
		/* fall through */
	case HTTP_WRITING:
		r = write_answer(c);
		if (r == 0)
			served++;
		break;
	}
	if (r == SB_PENDING)
		return SB_PENDING;
	http_conn_finished(c);
	if (r == 0 && c->quit)
		http_quit();
	return r;
}

static void conn_release(sb_loop_task *t)
{
	free(SB_CONTAINER_OF(t, http_conn, task));
	/* relaxed: a count read after the loop finished (thread joins order it). */
	atomic_fetch_add_explicit(&http_released, 1, memory_order_relaxed);
}

http_conn *http_conn_new(int fd)
{
	http_conn *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	c->fd = fd;
	atomic_init(&c->work_done, false);
	sb_loop_task_init(&c->task, conn_poll, conn_release);
	return c;
}

int http_spawn(sb_loop *l, http_conn *c)
{
	int rc = sb_loop_spawn(l, &c->task);
	if (rc != 0) {
		http_refuse(c->fd); /* the loop is closed: answer, never ring it */
		free(c);
		return rc;
	}
	/* relaxed: a count read after the loop finished. */
	atomic_fetch_add_explicit(&http_spawned, 1, memory_order_relaxed);
	return 0;
}

void http_refuse(int fd)
{
	static const char answer[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
				     "Connection: close\r\n\r\n";
	/* Best effort: the client counts a reset as a refusal too. */
	ssize_t n = write(fd, answer, sizeof answer - 1);
	(void)n;
	close(fd);
	/* relaxed: a count read after the threads were joined. */
	atomic_fetch_add_explicit(&refused, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------ start, finish */

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

int http_start(int argc, char **argv)
{
	int port = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--permits"))
			permits = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--workers"))
			workers = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--port"))
			port = atoi(argv[i + 1]);
	}
	if (permits < 1 || workers < 1 || sb_semaphore_init(&limit, (size_t)permits) != 0)
		return -1;
	/* At most `permits` jobs are queued (each holds a permit), plus the stops. */
	jobs_cap = (size_t)permits + (size_t)workers;
	jobs = calloc(jobs_cap, sizeof *jobs);
	threads = calloc((size_t)workers, sizeof *threads);
	if (!jobs || !threads)
		return -1;
	for (int i = 0; i < workers; i++)
		pthread_create(&threads[i], NULL, worker_main, NULL);
	return listen_on(port);
}

int http_finish(bool loop_clean)
{
	for (int i = 0; i < workers; i++)
		submit(NULL);
	for (int i = 0; i < workers; i++)
		pthread_join(threads[i], NULL);
	long spawned = atomic_load(&http_spawned), released = atomic_load(&http_released);
	bool ok = loop_clean && max_in_flight <= permits && in_flight == 0 &&
		  sb_semaphore_available(&limit) == (size_t)permits && spawned == released;
	printf("served=%ld refused=%ld max_in_flight=%d permits=%d spawned=%ld released=%ld\n",
	       served, atomic_load(&refused), max_in_flight, permits, spawned, released);
	free(jobs);
	free(threads);
	return ok ? 0 : 1;
}
