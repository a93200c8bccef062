/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server (http_server.h) on libuv through the adapter
 * (syncband/uv.h): a uv_poll_t watches the listening socket and one each
 * connection.  A connection's handle holds a reference on its task
 * (sb_loop_task_ref), dropped by the handle's close callback, so the task's
 * release - which frees it - comes after libuv let go of the handle.  On
 * /quit the listener closes and sb_uv_close closes the doorbell once every
 * task is released; uv_run then returns with no handle left.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <syncband/uv.h>

#include "http_server.h"

static sb_uv sbuv;
static uv_poll_t listener;
static int lfd;

static uv_handle_t *as_handle(uv_poll_t *p)
{
	return (uv_handle_t *)p;
}

static void on_conn_event(uv_poll_t *h, int status, int events)
{
	(void)status;
	(void)events;
	http_conn *c = h->data;
	sb_loop_wake(&c->task); /* the handle's reference keeps c alive */
}

static void on_conn_closed(uv_handle_t *h)
{
	http_conn *c = h->data;
	close(c->fd); /* only now: libuv watched it until the close */
	free(h);
	sb_loop_task_unref(&c->task); /* last: the release frees c */
}

void http_conn_finished(http_conn *c)
{
	uv_close(as_handle(c->loop_data), on_conn_closed); /* also stops it */
}

static void on_listener_closed(uv_handle_t *h)
{
	(void)h;
	close(lfd); /* the backlog is reset: connections not accepted are refused */
}

void http_quit(void)
{
	uv_close(as_handle(&listener), on_listener_closed);
	sb_uv_close(&sbuv); /* the doorbell closes once every task is released */
}

static void on_listener(uv_poll_t *h, int status, int events)
{
	(void)h;
	(void)status;
	(void)events;
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		http_conn *c = http_conn_new(fd);
		if (http_spawn(sb_uv_loop(&sbuv), c) != 0)
			continue; /* refused: the loop is closing */
		uv_poll_t *p = malloc(sizeof *p);
		if (!p || uv_poll_init(uv_default_loop(), p, fd) != 0)
			abort();
		p->data = c;
		c->loop_data = p;
		/* The spawner's reference, on the loop's thread before it runs. */
		sb_loop_task_ref(&c->task);
		/* Readable (the request, or a hang-up): the answers are small, and
		 * a level-triggered writable watch would wake the task always. */
		uv_poll_start(p, UV_READABLE | UV_DISCONNECT, on_conn_event);
	}
}

int main(int argc, char **argv)
{
	lfd = http_start(argc, argv);
	if (lfd < 0 || sb_uv_init(&sbuv, uv_default_loop(), NULL) != 0 ||
	    uv_poll_init(uv_default_loop(), &listener, lfd) != 0 ||
	    uv_poll_start(&listener, UV_READABLE, on_listener) != 0)
		return 2;
	uv_run(uv_default_loop(), UV_RUN_DEFAULT); /* until every handle is closed */
	/* No handle leaked: libuv agrees. */
	return http_finish(uv_loop_close(uv_default_loop()) == 0);
}
