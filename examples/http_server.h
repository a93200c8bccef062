/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The small HTTP/1.1 server of the examples, on any loop (http_server.c):
 * at most N requests in flight (an sb_semaphore of N permits); each
 * connection is a loop task that reads its request, acquires a permit, hands
 * the work to a pool of worker threads, and writes the answer once a worker
 * wakes it.  Three loops run it, each in its own file, with the same
 * command line and output:
 *
 *   epoll_http_server   a hand-written epoll loop (loop.h directly)
 *   driver_http_server  the thread driver (driver.h) and an accept thread
 *   uv_http_server      libuv through the adapter (uv.h)
 *
 *   SERVER [--permits N] [--workers W] [--port P]
 *
 * It prints "listening on 127.0.0.1:PORT" and serves until a request for
 * /quit, then closes its loop while other requests may be in flight: every
 * connection it accepted is answered (200) or, once closed, refused with
 * 503; it then prints "served=S refused=R max_in_flight=M permits=N
 * spawned=T released=U" and exits 0 if never more than N requests held a
 * permit at once and every spawned task was released.  Every answer carries
 * "X-In-Flight: k", the number in flight when it got its permit.  Loaded by
 * tests/server/server_load.c.
 */
#ifndef SYNCBAND_EXAMPLES_HTTP_SERVER_H
#define SYNCBAND_EXAMPLES_HTTP_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <syncband/syncband.h>

enum http_step { HTTP_READING, HTTP_ACQUIRING, HTTP_WORKING, HTTP_WRITING };

typedef struct http_conn {
	sb_loop_task task;
	int fd;
	enum http_step step;
	char in[2048];
	size_t in_len;
	char out[256];
	size_t out_len, out_done;
	bool quit;
	int in_flight_seen;
	sb_semaphore_acquire acquire;
	sb_waker worker;             /* a clone: keeps the conn alive for the worker */
	atomic_bool work_done;
	void *loop_data;             /* the loop's own (a libuv handle) */
} http_conn;

/* --- what the loop provides ---------------------------------------------- */

/* The connection's task finished (its socket may still be registered):
 * close the socket, on the loop's thread.  Called from inside its poll. */
void http_conn_finished(http_conn *c);

/* /quit was answered: stop accepting and close the loop.  The loop's thread. */
void http_quit(void);

/* --- what the server provides --------------------------------------------- */

/* Parses the command line, starts the workers, listens (printing where):
 * the listening socket, non-blocking, or -1. */
int http_start(int argc, char **argv);

/* A new connection on `fd` (the loop owns it), ready to spawn. */
http_conn *http_conn_new(int fd);

/* Spawns c on `l`: 0; or, once `l` is closed, refuses and frees it and
 * returns the error.  Any thread. */
int http_spawn(sb_loop *l, http_conn *c);

/* Reads until the end of the headers: 0 (also when it already has them),
 * SB_PENDING (would block), or -1. */
int http_read_request(http_conn *c);

/* Answers 503 on `fd` and closes it: a connection the closed loop refused. */
void http_refuse(int fd);

/* After the loop finished: stops the workers, prints the summary; the exit
 * status (0 when every invariant held and `loop_clean`). */
int http_finish(bool loop_clean);

/* Counts of the run, for the loops' own checks. */
extern atomic_long http_spawned, http_released;

#endif
