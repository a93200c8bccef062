/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband on libuv: the primitives tour (primitives_tour.c) driven by a
 * uv_async_t doorbell and uv_timer_t deadlines.  This file is all the glue
 * libuv needs.  Exits 0 when every check of the tour passed.
 *
 * Build: cc -std=c11 libuv_primitives.c primitives_tour.c \
 *           $(pkg-config --cflags --libs syncband libuv) -pthread
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* uv.h needs POSIX types that -std=c11 hides */
#endif
#include <stdlib.h>

#include <uv.h>

#include <syncband/syncband.h>

#include "primitives_tour.h"

static sb_loop loop;
static uv_async_t doorbell;

/* Any thread: a task was queued while the loop was not looking. */
static void ring(void *ctx)
{
	uv_async_send(ctx);
}

/* The loop's thread: run what was queued; close the doorbell once every
 * task is done and every waker clone dropped (nothing will ring again). */
static void on_doorbell(uv_async_t *async)
{
	sb_loop_run_ready(&loop);
	if (sb_loop_idle(&loop))
		uv_close((uv_handle_t *)async, NULL);
}

struct tour_timer {
	uv_timer_t uv;
	sb_deadline *deadline;
	sb_loop_task *task;
};

static void on_timer(uv_timer_t *uv)
{
	tour_timer *tm = uv->data;
	sb_deadline_expire(tm->deadline);
	sb_loop_wake(tm->task); /* its next poll times the future out */
}

tour_timer *tour_timer_start(unsigned ms, sb_deadline *d, sb_loop_task *t)
{
	tour_timer *tm = malloc(sizeof *tm);
	if (!tm)
		abort();
	*tm = (tour_timer){ .deadline = d, .task = t };
	uv_timer_init(uv_default_loop(), &tm->uv);
	tm->uv.data = tm;
	uv_timer_start(&tm->uv, on_timer, ms, 0);
	return tm;
}

static void free_timer(uv_handle_t *uv)
{
	free(uv->data);
}

void tour_timer_stop(tour_timer *tm)
{
	uv_close((uv_handle_t *)&tm->uv, free_timer); /* also stops it */
}

int main(void)
{
	uv_async_init(uv_default_loop(), &doorbell, on_doorbell);
	sb_loop_init(&loop, ring, &doorbell);
	if (tour_start(&loop) != 0)
		return 1;
	sb_loop_close(&loop); /* every task is spawned: idle then means drained */
	uv_run(uv_default_loop(), UV_RUN_DEFAULT); /* until the doorbell is closed */
	int rc = tour_finish();
	return uv_loop_close(uv_default_loop()) == 0 ? rc : 1;
}
