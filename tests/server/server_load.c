/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loads examples/epoll_http_server on 127.0.0.1 and checks its invariants:
 * every request is answered (200, the right body), no answer reports more
 * requests in flight than the server has permits, and the server, told to
 * quit, reports as many requests served as were sent and a peak within the
 * permits.
 *
 *   server_load SERVER PERMITS CLIENTS REQUESTS_PER_CLIENT
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
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

/* One request on its own connection: 0, or -1 with a message. */
static int request(const char *path, char *body, size_t body_size, int *in_flight)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { 60, 0 }; /* a hung server fails the test, not the clock */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		perror("connect");
		return -1;
	}
	char req[128];
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
					 "Connection: close\r\n\r\n", path);
	if (write(fd, req, (size_t)n) != n) {
		perror("write");
		close(fd);
		return -1;
	}
	char resp[1024];
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, resp + len, sizeof resp - 1 - len);
		if (r < 0) {
			perror("read");
			close(fd);
			return -1;
		}
		if (r == 0 || (len += (size_t)r) == sizeof resp - 1)
			break;
	}
	close(fd);
	resp[len] = '\0';
	const char *hdr = strstr(resp, "\r\nX-In-Flight: ");
	const char *end = strstr(resp, "\r\n\r\n");
	if (strncmp(resp, "HTTP/1.1 200 OK\r\n", 17) != 0 || !hdr || !end) {
		fprintf(stderr, "bad answer: %s\n", resp);
		return -1;
	}
	*in_flight = atoi(hdr + 15);
	snprintf(body, body_size, "%s", end + 4);
	return 0;
}

static void *client(void *arg)
{
	(void)arg;
	for (int i = 0; i < requests; i++) {
		char body[64];
		int k;
		if (request("/", body, sizeof body, &k) != 0 || strcmp(body, "hello\n") != 0 ||
		    k < 1 || k > permits) {
			atomic_fetch_add(&bad, 1);
			continue;
		}
		atomic_fetch_add(&answered, 1);
		long seen = atomic_load(&peak_seen);
		while (k > seen && !atomic_compare_exchange_weak(&peak_seen, &seen, k)) {
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s SERVER PERMITS CLIENTS REQUESTS_PER_CLIENT\n", argv[0]);
		return 2;
	}
	permits = atoi(argv[2]);
	int clients = atoi(argv[3]);
	requests = atoi(argv[4]);
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
	for (int i = 0; i < clients; i++)
		pthread_join(th[i], NULL);
	free(th);

	char body[64];
	int k;
	int quit_ok = request("/quit", body, sizeof body, &k) == 0 && strcmp(body, "bye\n") == 0;
	long served = -1;
	int max_in_flight = -1, server_permits = -1;
	while (fgets(line, sizeof line, server_out))
		sscanf(line, "served=%ld max_in_flight=%d permits=%d", &served, &max_in_flight,
		       &server_permits);
	int status;
	waitpid(pid, &status, 0);

	long sent = (long)clients * requests;
	printf("%ld requests from %d clients: %ld answered, %ld bad; peak in flight %ld "
	       "(server: served=%ld max_in_flight=%d) with %d permits\n",
	       sent, clients, atomic_load(&answered), atomic_load(&bad), atomic_load(&peak_seen),
	       served, max_in_flight, permits);
	int ok = quit_ok && atomic_load(&answered) == sent && atomic_load(&bad) == 0 &&
		 served == sent + 1 && max_in_flight >= 1 && max_in_flight <= permits &&
		 server_permits == permits && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!ok)
		fprintf(stderr, "FAILED (server exit status %d)\n",
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return ok ? 0 : 1;
}
