/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband on libuv: the primitives tour (primitives_tour.c) driven through
 * the libuv adapter, syncband/uv.h (a uv_async_t doorbell, uv_timer_t
 * deadlines, and a close that waits for the tasks).  This file is all the
 * glue libuv needs.  Exits 0 when every check of the tour passed and libuv
 * was left with no open handle.
 *
 * Build: cc -std=c11 libuv_primitives.c primitives_tour.c \
 *           $(pkg-config --cflags --libs syncband libuv) -pthread
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* uv.h needs POSIX types that -std=c11 hides */
#endif
#include <stdlib.h>

#include <syncband/syncband.h>
#include <syncband/uv.h>

#include "primitives_tour.h"

static sb_uv sbuv;

struct tour_timer {
	sb_uv_timer uv;
};

tour_timer *tour_timer_start(unsigned ms, sb_deadline *d, sb_loop_task *t)
{
	tour_timer *tm = malloc(sizeof *tm);
	if (!tm || sb_uv_timer_start(&sbuv, &tm->uv, d, t, ms) != 0)
		abort();
	return tm;
}

static void free_timer(sb_uv_timer *uv)
{
	free(SB_CONTAINER_OF(uv, tour_timer, uv));
}

void tour_timer_stop(tour_timer *tm)
{
	sb_uv_timer_close(&tm->uv, free_timer); /* also stops it */
}

int main(void)
{
	if (sb_uv_init(&sbuv, uv_default_loop(), NULL) != 0 || tour_start(sb_uv_loop(&sbuv)) != 0)
		return 1;
	sb_uv_close(&sbuv); /* the tour spawned everything: close once it is done */
	uv_run(uv_default_loop(), UV_RUN_DEFAULT); /* until the doorbell is closed */
	int rc = tour_finish();
	return uv_loop_close(uv_default_loop()) == 0 ? rc : 1;
}
