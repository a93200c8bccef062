/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loads one of the example HTTP servers (examples/http_server.h) on
 * 127.0.0.1 and checks its invariants: every request is answered (200, the
 * right body), no answer reports more requests in flight than the server has
 * permits, and the server, told to quit, reports as many requests served as
 * were sent, a peak within the permits, and every task it spawned released.
 *
 * With --quit-under-load, /quit is sent once half the requests were
 * answered, while the clients go on: every request must then be answered or
 * refused cleanly (a 503, or a connection refused or reset before any byte
 * of an answer), the server must have served exactly the answered ones (and
 * the quit), and it must exit cleanly (no task, and for libuv no handle,
 * left).  Clients stop at their first refusal.
 *
 *   server_load [--quit-under-load] SERVER PERMITS CLIENTS REQUESTS_PER_CLIENT
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static int port, permits, requests;
static atomic_long answered, bad, peak_seen;

enum outcome { ANSWERED, REFUSED, BAD };

static bool quit_under_load;
static long quit_after;            /* answers before /quit is sent */
static atomic_long refused;
static pthread_mutex_t quit_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t quit_cv = PTHREAD_COND_INITIALIZER;

/* A refusal: the connection failed, or was reset or closed before a byte. */
static bool is_refusal(int err)
{
	return err == ECONNREFUSED || err == ECONNRESET || err == EPIPE;
}

/* One request on its own connection; the body and X-In-Flight of a 200. */
static enum outcome request(const char *path, char *body, size_t body_size, int *in_flight)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { 60, 0 }; /* a hung server fails the test, not the clock */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		if (quit_under_load && is_refusal(err))
			return REFUSED;
		perror("connect");
		return BAD;
	}
	char req[128];
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
					 "Connection: close\r\n\r\n", path);
	if (write(fd, req, (size_t)n) != n) {
		int err = errno;
		close(fd);
		if (quit_under_load && is_refusal(err))
			return REFUSED;
		perror("write");
		return BAD;
	}
	char resp[1024];
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, resp + len, sizeof resp - 1 - len);
		if (r < 0) {
			int err = errno;
			close(fd);
			if (quit_under_load && len == 0 && is_refusal(err))
				return REFUSED;
			perror("read");
			return BAD;
		}
		if (r == 0 || (len += (size_t)r) == sizeof resp - 1)
			break;
	}
	close(fd);
	resp[len] = '\0';
	if (quit_under_load && (len == 0 || strncmp(resp, "HTTP/1.1 503 ", 13) == 0))
		return REFUSED;
	const char *hdr = strstr(resp, "\r\nX-In-Flight: ");
	const char *end = strstr(resp, "\r\n\r\n");
	if (strncmp(resp, "HTTP/1.1 200 OK\r\n", 17) != 0 || !hdr || !end) {
		fprintf(stderr, "bad answer: %s\n", resp);
		return BAD;
	}
	*in_flight = atoi(hdr + 15);
	snprintf(body, body_size, "%s", end + 4);
	return ANSWERED;
}

static void *client(void *arg)
{
	(void)arg;
	for (int i = 0; i < requests; i++) {
		char body[64];
		int k = 0;
		enum outcome o = request("/", body, sizeof body, &k);
		if (o == REFUSED) {
			atomic_fetch_add(&refused, 1);
			break; /* the server is going away */
		}
		if (o != ANSWERED || strcmp(body, "hello\n") != 0 || k < 1 || k > permits) {
			atomic_fetch_add(&bad, 1);
			continue;
		}
		if (atomic_fetch_add(&answered, 1) + 1 == quit_after) {
			pthread_mutex_lock(&quit_mu);
			pthread_cond_signal(&quit_cv);
			pthread_mutex_unlock(&quit_mu);
		}
		long seen = atomic_load(&peak_seen);
		while (k > seen && !atomic_compare_exchange_weak(&peak_seen, &seen, k)) {
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[1], "--quit-under-load") == 0) {
		quit_under_load = true;
		argv++;
		argc--;
	}
	if (argc != 5) {
		fprintf(stderr, "usage: %s [--quit-under-load] SERVER PERMITS CLIENTS "
				"REQUESTS_PER_CLIENT\n", argv[0]);
		return 2;
	}
	permits = atoi(argv[2]);
	int clients = atoi(argv[3]);
	requests = atoi(argv[4]);
	long sent = (long)clients * requests;
	quit_after = quit_under_load ? sent / 2 : -1;
	signal(SIGPIPE, SIG_IGN);

	int out[2];
	if (pipe(out) != 0)
		return 2;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		close(out[0]);
		close(out[1]);
		execl(argv[1], argv[1], "--permits", argv[2], "--workers", "2", (char *)NULL);
		perror("exec");
		_exit(127);
	}
	close(out[1]);
	FILE *server_out = fdopen(out[0], "r");
	char line[256];
	if (!fgets(line, sizeof line, server_out) ||
	    sscanf(line, "listening on 127.0.0.1:%d", &port) != 1) {
		fprintf(stderr, "the server did not say where it listens\n");
		kill(pid, SIGKILL);
		return 1;
	}

	pthread_t *th = calloc((size_t)clients, sizeof *th);
	for (int i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, client, NULL);
	if (quit_under_load) {
		/* Until half the requests were answered: a state, not a time. */
		pthread_mutex_lock(&quit_mu);
		while (atomic_load(&answered) < quit_after && atomic_load(&bad) == 0)
			pthread_cond_wait(&quit_cv, &quit_mu);
		pthread_mutex_unlock(&quit_mu);
	} else {
		for (int i = 0; i < clients; i++)
			pthread_join(th[i], NULL);
	}

	char body[64];
	int k;
	int quit_ok = request("/quit", body, sizeof body, &k) == ANSWERED &&
		      strcmp(body, "bye\n") == 0;
	if (quit_under_load)
		for (int i = 0; i < clients; i++)
			pthread_join(th[i], NULL);
	free(th);
	long served = -1, server_refused = -1, spawned = -1, released = -2;
	int max_in_flight = -1, server_permits = -1;
	while (fgets(line, sizeof line, server_out))
		sscanf(line, "served=%ld refused=%ld max_in_flight=%d permits=%d spawned=%ld "
			     "released=%ld",
		       &served, &server_refused, &max_in_flight, &server_permits, &spawned,
		       &released);
	int status;
	waitpid(pid, &status, 0);

	long got = atomic_load(&answered);
	printf("%ld requests from %d clients: %ld answered, %ld refused, %ld bad; peak in flight "
	       "%ld (server: served=%ld refused=%ld max_in_flight=%d spawned=%ld released=%ld) "
	       "with %d permits\n",
	       sent, clients, got, atomic_load(&refused), atomic_load(&bad),
	       atomic_load(&peak_seen), served, server_refused, max_in_flight, spawned, released,
	       permits);
	/* Every request answered, or (quitting under load) answered or refused,
	 * and the server served exactly the answered ones and the quit. */
	bool all_accounted = quit_under_load ? got >= quit_after && atomic_load(&refused) >= 1
					     : got == sent;
	int ok = quit_ok && all_accounted && atomic_load(&bad) == 0 && served == got + 1 &&
		 max_in_flight >= 1 && max_in_flight <= permits && server_permits == permits &&
		 spawned == released && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!ok)
		fprintf(stderr, "FAILED (server exit status %d)\n",
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return ok ? 0 : 1;
}
