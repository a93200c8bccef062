/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/uv.h, the libuv adapter: the doorbell closes once closed and
 * idle, with every handle gone; spawns after the close fail; wakes from
 * other threads during the close reach a live doorbell; deadline timers
 * keep their task until their handle is closed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <syncband/semaphore.h>
#include <syncband/uv.h>

#include "check.h"
#include "watchdog.h"

static int closed_calls;

static void count_closed(sb_uv *u)
{
	(void)u;
	closed_calls++;
}

/* A task that is pending until woken `wakes` times, then finishes. */
typedef struct job {
	sb_loop_task task;
	int polls;
	int finish_at;
	int releases;
	sb_waker saved;
	sb_semaphore *saved_signal; /* released once `saved` holds a clone */
} job;

static int job_poll(sb_loop_task *t, const sb_waker *w)
{
	job *j = SB_CONTAINER_OF(t, job, task);
	if (++j->polls >= j->finish_at)
		return 0;
	if (j->saved_signal) {
		j->saved = sb_waker_clone(w);
		sb_semaphore_release(j->saved_signal, 1);
		j->saved_signal = NULL;
	}
	return SB_PENDING;
}

static void job_release(sb_loop_task *t)
{
	SB_CONTAINER_OF(t, job, task)->releases++;
}

static void job_init(job *j, int finish_at)
{
	memset(j, 0, sizeof *j);
	j->finish_at = finish_at;
	sb_loop_task_init(&j->task, job_poll, job_release);
}

static void close_closes_the_doorbell_once_every_task_is_released(void **state)
{
	(void)state;
	uv_loop_t uvl;
	assert_int_equal(uv_loop_init(&uvl), 0);
	sb_uv u;
	closed_calls = 0;
	assert_int_equal(sb_uv_init(&u, &uvl, count_closed), 0);
	job a, b;
	job_init(&a, 1);
	job_init(&b, 1);
	assert_int_equal(sb_uv_spawn(&u, &a.task), 0);
	assert_int_equal(sb_uv_spawn(&u, &b.task), 0);
	assert_int_equal(sb_uv_close(&u), 0);
	assert_int_equal(sb_uv_close(&u), -EALREADY);
	assert_int_equal(uv_run(&uvl, UV_RUN_DEFAULT), 0);
	assert_int_equal(closed_calls, 1);
	assert_int_equal(a.releases + b.releases, 2);
	assert_int_equal(uv_loop_close(&uvl), 0); /* no handle left open */
}

static void a_spawn_after_the_close_fails_with_eshutdown(void **state)
{
	(void)state;
	uv_loop_t uvl;
	assert_int_equal(uv_loop_init(&uvl), 0);
	sb_uv u;
	assert_int_equal(sb_uv_init(&u, &uvl, NULL), 0);
	assert_int_equal(sb_uv_close(&u), 0);
	assert_int_equal(uv_run(&uvl, UV_RUN_NOWAIT), 0); /* the closer runs, the bell closes */
	job a;
	job_init(&a, 1);
	assert_int_equal(sb_uv_spawn(&u, &a.task), -ESHUTDOWN);
	assert_int_equal(uv_run(&uvl, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&uvl), 0);
	assert_int_equal(a.releases, 0);
}

typedef struct remote {
	sb_semaphore saved;   /* the task saved its waker */
	job *j;
} remote;

static void *wake_later(void *arg)
{
	remote *r = arg;
	CHECK(sb_semaphore_acquire_blocking(&r->saved, 1, SB_TIMEOUT_INFINITE) == 0);
	sb_waker_wake(r->j->saved); /* rings the doorbell of a closing loop */
	return NULL;
}

static void a_wake_from_another_thread_while_closing_reaches_a_live_doorbell(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "wake while closing");
	uv_loop_t uvl;
	assert_int_equal(uv_loop_init(&uvl), 0);
	sb_uv u;
	closed_calls = 0;
	assert_int_equal(sb_uv_init(&u, &uvl, count_closed), 0);
	job a;
	job_init(&a, 2);
	remote r = { .j = &a };
	assert_int_equal(sb_semaphore_init(&r.saved, 0), 0);
	a.saved_signal = &r.saved;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, wake_later, &r), 0);
	assert_int_equal(sb_uv_spawn(&u, &a.task), 0);
	assert_int_equal(sb_uv_close(&u), 0);
	assert_int_equal(uv_run(&uvl, UV_RUN_DEFAULT), 0);
	pthread_join(th, NULL);
	assert_int_equal(a.polls, 2);
	assert_int_equal(a.releases, 1);
	assert_int_equal(closed_calls, 1);
	assert_int_equal(uv_loop_close(&uvl), 0);
	sb_watchdog_stop(&wd);
}

static void *close_from_thread(void *arg)
{
	CHECK(sb_uv_close(arg) == 0);
	return NULL;
}

static void a_close_from_another_thread_ends_the_run(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "close from another thread");
	uv_loop_t uvl;
	assert_int_equal(uv_loop_init(&uvl), 0);
	sb_uv u;
	closed_calls = 0;
	assert_int_equal(sb_uv_init(&u, &uvl, count_closed), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, close_from_thread, &u), 0);
	assert_int_equal(uv_run(&uvl, UV_RUN_DEFAULT), 0); /* the doorbell keeps it alive */
	pthread_join(th, NULL);
	assert_int_equal(closed_calls, 1);
	assert_int_equal(uv_loop_close(&uvl), 0);
	sb_watchdog_stop(&wd);
}

/* A semaphore acquire under a uv_timer_t deadline. */
typedef struct timed {
	sb_loop_task task;
	sb_uv *u;
	sb_semaphore sem;
	sb_semaphore_acquire acquire;
	sb_deadline deadline;
	sb_uv_timer timer;
	bool started, timer_closed;
	int result, releases;
} timed;

static void timer_closed(sb_uv_timer *tm)
{
	SB_CONTAINER_OF(tm, timed, timer)->timer_closed = true;
}

static int timed_poll(sb_loop_task *t, const sb_waker *w)
{
	timed *x = SB_CONTAINER_OF(t, timed, task);
	if (!x->started) {
		x->started = true;
		sb_semaphore_acquire_init(&x->acquire, &x->sem, 1);
		sb_deadline_init(&x->deadline, &x->acquire, &sb_semaphore_acquire_ops);
		CHECK(sb_uv_timer_start(x->u, &x->timer, &x->deadline, t, 1) == 0);
	}
	int r = sb_deadline_poll(&x->deadline, w);
	if (r == SB_PENDING)
		return SB_PENDING;
	x->result = r;
	sb_uv_timer_close(&x->timer, timer_closed);
	return r;
}

static void timed_release(sb_loop_task *t)
{
	timed *x = SB_CONTAINER_OF(t, timed, task);
	CHECK(x->timer_closed); /* libuv is done with the handle inside the task */
	x->releases++;
}

static void a_deadline_timer_times_out_and_its_task_outlives_the_handle(void **state)
{
	(void)state;
	uv_loop_t uvl;
	assert_int_equal(uv_loop_init(&uvl), 0);
	sb_uv u;
	assert_int_equal(sb_uv_init(&u, &uvl, NULL), 0);
	timed x = { .u = &u };
	assert_int_equal(sb_semaphore_init(&x.sem, 0), 0);
	sb_loop_task_init(&x.task, timed_poll, timed_release);
	assert_int_equal(sb_uv_spawn(&u, &x.task), 0);
	assert_int_equal(sb_uv_close(&u), 0);
	assert_int_equal(uv_run(&uvl, UV_RUN_DEFAULT), 0);
	assert_int_equal(x.result, -ETIMEDOUT);
	assert_int_equal(x.releases, 1);
	assert_int_equal(uv_loop_close(&uvl), 0);
}

static void a_timer_refuses_a_task_that_holds_no_reference(void **state)
{
	(void)state;
	uv_loop_t uvl;
	assert_int_equal(uv_loop_init(&uvl), 0);
	sb_uv u;
	assert_int_equal(sb_uv_init(&u, &uvl, NULL), 0);
	job a;
	job_init(&a, 1);
	sb_uv_timer tm;
	assert_int_equal(sb_uv_timer_start(&u, &tm, NULL, &a.task, 1), -EINVAL);
	assert_int_equal(sb_uv_timer_start(&u, &tm, NULL, NULL, 1), -EINVAL);
	assert_int_equal(sb_uv_close(&u), 0);
	assert_int_equal(uv_run(&uvl, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&uvl), 0); /* no timer handle was left */
}

static void a_close_of_an_adapter_never_initialised_is_einval(void **state)
{
	(void)state;
	sb_uv u;
	memset(&u, 0, sizeof u);
	assert_int_equal(sb_uv_close(&u), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(close_closes_the_doorbell_once_every_task_is_released),
		cmocka_unit_test(a_spawn_after_the_close_fails_with_eshutdown),
		cmocka_unit_test(a_wake_from_another_thread_while_closing_reaches_a_live_doorbell),
		cmocka_unit_test(a_close_from_another_thread_ends_the_run),
		cmocka_unit_test(a_deadline_timer_times_out_and_its_task_outlives_the_handle),
		cmocka_unit_test(a_timer_refuses_a_task_that_holds_no_reference),
		cmocka_unit_test(a_close_of_an_adapter_never_initialised_is_einval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
