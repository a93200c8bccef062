/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server (http_server.h) on the thread driver (syncband/driver.h):
 * the main thread runs the driver; an accept thread takes each connection,
 * reads its request (a blocking socket), and spawns its task, which the
 * closed driver refuses (503) once /quit was answered.  No doorbell, timer
 * or shutdown code of our own: sb_driver_run returns once the driver is
 * closed and every connection's task released.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_server.h"

static sb_driver driver;
static int lfd;

void http_conn_finished(http_conn *c)
{
	close(c->fd);
}

void http_quit(void)
{
	sb_driver_close(&driver);
	shutdown(lfd, SHUT_RD); /* the accept thread's accept fails: it stops */
}

static void *accept_main(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL; /* shut down */
		}
		http_conn *c = http_conn_new(fd);
		if (http_read_request(c) != 0) {
			close(fd);
			free(c);
			continue;
		}
		/* Answered from the driver's thread: the write would not block. */
		http_spawn(sb_driver_loop(&driver), c);
	}
}

int main(int argc, char **argv)
{
	lfd = http_start(argc, argv);
	/* A blocking listener for the accept thread. */
	if (lfd < 0 || fcntl(lfd, F_SETFL, 0) != 0)
		return 2;
	sb_driver_init(&driver);
	pthread_t acceptor;
	pthread_create(&acceptor, NULL, accept_main, NULL);
	int rc = sb_driver_run(&driver); /* until /quit and every task released */
	pthread_join(acceptor, NULL); /* its last spawns were refused */
	close(lfd);
	return http_finish(rc == 0);
}
