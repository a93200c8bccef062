/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/driver.h: the thread driver's run until closed and idle, its
 * futex doorbell, and its timers on an injected clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include <syncband/driver.h>
#include <syncband/semaphore.h>

#include "check.h"
#include "clock.h"
#include "watchdog.h"

/* The driver's clock, moved by hand (src/clock.h); only the timer tests
 * read it, on the driver's thread. */
static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

/* ------------------------------------------------------------ tasks */

/* A task that finishes on its first poll, or on the poll `finish_at`. */
typedef struct job {
	sb_loop_task task;
	int polls;
	int finish_at;
	int releases;
	sb_driver *close_on_finish;
} job;

static int job_poll(sb_loop_task *t, const sb_waker *w)
{
	(void)w;
	job *j = SB_CONTAINER_OF(t, job, task);
	if (++j->polls < j->finish_at)
		return SB_PENDING;
	if (j->close_on_finish)
		sb_driver_close(j->close_on_finish);
	return 0;
}

static void job_release(sb_loop_task *t)
{
	SB_CONTAINER_OF(t, job, task)->releases++;
}

static void job_init(job *j, sb_driver *close_on_finish)
{
	memset(j, 0, sizeof *j);
	j->finish_at = 1;
	j->close_on_finish = close_on_finish;
	sb_loop_task_init(&j->task, job_poll, job_release);
}

typedef struct run_arg {
	sb_driver *d;
	int rc;
} run_arg;

static void *run_thread(void *arg)
{
	run_arg *a = arg;
	a->rc = sb_driver_run(a->d);
	return NULL;
}

/* Until the driver thread sleeps on its doorbell (a state, not a time). */
static void wait_until_asleep(sb_driver *d)
{
	/* The bell's SLEEPING bit (src/driver.c). */
	while (!(atomic_load(&d->bell) & 2u))
		sched_yield();
}

/* ------------------------------------------------------------ run and close */

static void run_returns_once_closed_and_every_task_released(void **state)
{
	(void)state;
	sb_driver d;
	sb_driver_init(&d);
	job a, b, c;
	job_init(&a, NULL);
	job_init(&b, NULL);
	job_init(&c, &d); /* the last one closes */
	assert_int_equal(sb_driver_spawn(&d, &a.task), 0);
	assert_int_equal(sb_driver_spawn(&d, &b.task), 0);
	assert_int_equal(sb_loop_spawn(sb_driver_loop(&d), &c.task), 0);
	assert_int_equal(sb_driver_run(&d), 0);
	assert_int_equal(a.releases + b.releases + c.releases, 3);
	assert_int_equal(a.polls + b.polls + c.polls, 3);
	assert_true(sb_loop_idle(sb_driver_loop(&d)));
}

static void a_driver_that_was_never_initialised_runs_to_einval(void **state)
{
	(void)state;
	sb_driver d;
	memset(&d, 0, sizeof d);
	assert_int_equal(sb_driver_run(&d), -EINVAL);
}

static void spawn_after_close_fails_with_eshutdown_and_run_returns_at_once(void **state)
{
	(void)state;
	sb_driver d;
	sb_driver_init(&d);
	sb_driver_close(&d);
	job a;
	job_init(&a, NULL);
	assert_int_equal(sb_driver_spawn(&d, &a.task), -ESHUTDOWN);
	assert_int_equal(sb_driver_run(&d), 0);
	assert_int_equal(a.polls, 0);
	assert_int_equal(a.releases, 0);
}

static void close_from_another_thread_ends_a_sleeping_run(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "close from another thread");
	sb_driver d;
	sb_driver_init(&d);
	run_arg arg = { &d, 1 };
	pthread_t th;
	pthread_create(&th, NULL, run_thread, &arg);
	wait_until_asleep(&d);
	sb_driver_close(&d);
	pthread_join(th, NULL);
	assert_int_equal(arg.rc, 0);
	sb_watchdog_stop(&wd);
}

/* Pending until another thread wakes its saved waker; then closes. */
typedef struct remote {
	sb_loop_task task;
	sb_driver *d;
	sb_waker saved;
	_Atomic int stage; /* 0, 1: waker saved, 2: polled again */
} remote;

static int remote_poll(sb_loop_task *t, const sb_waker *w)
{
	remote *r = SB_CONTAINER_OF(t, remote, task);
	if (atomic_load(&r->stage) == 0) {
		r->saved = sb_waker_clone(w);
		atomic_store(&r->stage, 1);
		return SB_PENDING;
	}
	atomic_store(&r->stage, 2);
	sb_driver_close(r->d);
	return 0;
}

static void a_wake_from_another_thread_rings_the_sleeping_driver_awake(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "ring from another thread");
	sb_driver d;
	sb_driver_init(&d);
	remote r = { .d = &d };
	atomic_init(&r.stage, 0);
	sb_loop_task_init(&r.task, remote_poll, NULL);
	assert_int_equal(sb_driver_spawn(&d, &r.task), 0);
	run_arg arg = { &d, 1 };
	pthread_t th;
	pthread_create(&th, NULL, run_thread, &arg);
	while (atomic_load(&r.stage) != 1)
		sched_yield();
	wait_until_asleep(&d); /* parked with a pending task */
	sb_waker_wake(r.saved);
	pthread_join(th, NULL);
	assert_int_equal(arg.rc, 0);
	assert_int_equal(atomic_load(&r.stage), 2);
	sb_watchdog_stop(&wd);
	memset(&r.saved, 0, sizeof r.saved);
}

/* ------------------------------------------------------------ same-thread wakes */

static sb_driver same_d;
static sb_waker same_saved;
static uint32_t same_bell_seen = 0xffffffffu;

static int sleeper_poll(sb_loop_task *t, const sb_waker *w)
{
	(void)t;
	if (same_saved.vtable == NULL) {
		same_saved = sb_waker_clone(w);
		return SB_PENDING;
	}
	/* Woken by the other task in this same run: nothing rang. */
	same_bell_seen = atomic_load(&same_d.bell);
	sb_driver_close(&same_d);
	return 0;
}

static int waker_poll(sb_loop_task *t, const sb_waker *w)
{
	(void)t;
	(void)w;
	sb_waker_wake(same_saved);
	return 0;
}

static void wakes_on_the_drivers_own_thread_run_in_the_same_run_without_ringing(void **state)
{
	(void)state;
	sb_driver_init(&same_d);
	sb_loop_task sleeper, waker;
	sb_loop_task_init(&sleeper, sleeper_poll, NULL);
	sb_loop_task_init(&waker, waker_poll, NULL);
	assert_int_equal(sb_driver_spawn(&same_d, &sleeper), 0);
	assert_int_equal(sb_driver_spawn(&same_d, &waker), 0);
	assert_int_equal(sb_driver_run(&same_d), 0);
	assert_int_equal(same_bell_seen, 0); /* neither rung nor sleeping */
}

/* ------------------------------------------------------------ timers */

typedef struct tick {
	sb_driver_timer timer;
	int id;
} tick;

static int fired[8];
static int fired_count;

static void record_fire(sb_driver_timer *tm)
{
	fired[fired_count++] = SB_CONTAINER_OF(tm, tick, timer)->id;
}

static void reset_clock_and_fires(void)
{
	fake_now = 1000;
	fired_count = 0;
	memset(fired, 0, sizeof fired);
}

static void tick_start(sb_driver *d, tick *t, int id, uint64_t timeout, sb_driver_timer_fn fn)
{
	sb_driver_timer_init_callback(&t->timer, fn);
	t->id = id;
	assert_int_equal(sb_driver_timer_start(d, &t->timer, timeout), 0);
}

static void timers_fire_in_due_order_and_ties_in_start_order(void **state)
{
	(void)state;
	reset_clock_and_fires();
	sb_driver d;
	sb_driver_init(&d);
	tick t30, t10a, t20, t10b;
	tick_start(&d, &t30, 30, 30, record_fire);
	tick_start(&d, &t10a, 10, 10, record_fire);
	tick_start(&d, &t20, 20, 20, record_fire);
	tick_start(&d, &t10b, 11, 10, record_fire);
	fake_now += 100;
	sb_driver_close(&d);
	assert_int_equal(sb_driver_run(&d), 0); /* returns once no timer is armed */
	assert_int_equal(fired_count, 4);
	assert_int_equal(fired[0], 10);
	assert_int_equal(fired[1], 11);
	assert_int_equal(fired[2], 20);
	assert_int_equal(fired[3], 30);
}

static tick *later;

/* Fires at +10: the +20 timer must still wait; then time moves on. */
static void check_later_waits_then_advance(sb_driver_timer *tm)
{
	record_fire(tm);
	assert_true(sb_driver_timer_is_armed(&later->timer));
	fake_now += 10;
}

static void a_timer_fires_only_once_the_clock_reaches_its_due_time(void **state)
{
	(void)state;
	reset_clock_and_fires();
	sb_driver d;
	sb_driver_init(&d);
	tick t10, t20;
	later = &t20;
	tick_start(&d, &t10, 10, 10, check_later_waits_then_advance);
	tick_start(&d, &t20, 20, 20, record_fire);
	fake_now += 10; /* t10 is due, t20 is not */
	sb_driver_close(&d);
	assert_int_equal(sb_driver_run(&d), 0);
	assert_int_equal(fired_count, 2);
	assert_int_equal(fired[0], 10);
	assert_int_equal(fired[1], 20);
}

static bool stop_result, second_stop_result;

static void stop_later(sb_driver_timer *tm)
{
	record_fire(tm);
	stop_result = sb_driver_timer_stop(&later->timer);
	second_stop_result = sb_driver_timer_stop(&later->timer);
}

static void a_timer_stopped_before_it_is_due_never_fires(void **state)
{
	(void)state;
	reset_clock_and_fires();
	sb_driver d;
	sb_driver_init(&d);
	tick t10, t20;
	later = &t20;
	tick_start(&d, &t10, 10, 10, stop_later);
	tick_start(&d, &t20, 20, 20, record_fire);
	fake_now += 100; /* both due: the first stops the second */
	sb_driver_close(&d);
	assert_int_equal(sb_driver_run(&d), 0);
	assert_int_equal(fired_count, 1);
	assert_int_equal(fired[0], 10);
	assert_true(stop_result);
	assert_false(second_stop_result);
	assert_false(sb_driver_timer_is_armed(&t20.timer));
}

static int rearms;

/* Re-arms itself for "now" three times: each at the driver's next look. */
static void rearm_now(sb_driver_timer *tm)
{
	record_fire(tm);
	if (++rearms < 3)
		assert_int_equal(sb_driver_timer_start(&same_d, tm, 0), 0);
}

static void a_timer_may_be_started_again_from_its_own_callback(void **state)
{
	(void)state;
	reset_clock_and_fires();
	rearms = 0;
	sb_driver_init(&same_d);
	tick t;
	tick_start(&same_d, &t, 1, 0, rearm_now);
	sb_driver_close(&same_d);
	assert_int_equal(sb_driver_run(&same_d), 0);
	assert_int_equal(fired_count, 3);
}

/* A semaphore acquire under a deadline kept by the driver's timer. */
typedef struct timed {
	sb_loop_task task;
	sb_driver *d;
	sb_semaphore sem;
	sb_semaphore_acquire acquire;
	sb_deadline deadline;
	sb_driver_timer timer;
	bool started;
	int result;
	int releases;
} timed;

static int timed_poll(sb_loop_task *t, const sb_waker *w)
{
	timed *x = SB_CONTAINER_OF(t, timed, task);
	if (!x->started) {
		x->started = true;
		sb_semaphore_acquire_init(&x->acquire, &x->sem, 1);
		sb_deadline_init(&x->deadline, &x->acquire, &sb_semaphore_acquire_ops);
		sb_driver_timer_init(&x->timer, &x->deadline, &x->task);
		CHECK(sb_driver_timer_start(x->d, &x->timer, 5 * SB_NSEC_PER_MSEC) == 0);
		CHECK(sb_driver_timer_start(x->d, &x->timer, 1) == -EBUSY);
		fake_now += 5 * SB_NSEC_PER_MSEC;
	}
	int r = sb_deadline_poll(&x->deadline, w);
	if (r == SB_PENDING)
		return SB_PENDING;
	x->result = r;
	sb_driver_close(x->d);
	return r;
}

static void timed_release(sb_loop_task *t)
{
	timed *x = SB_CONTAINER_OF(t, timed, task);
	/* The timer's reference is gone: it fired or was stopped. */
	CHECK(!sb_driver_timer_is_armed(&x->timer));
	x->releases++;
}

static void a_due_deadline_timer_expires_the_deadline_and_wakes_its_task(void **state)
{
	(void)state;
	reset_clock_and_fires();
	sb_driver d;
	sb_driver_init(&d);
	timed x = { .d = &d };
	sb_semaphore_init(&x.sem, 0);
	sb_loop_task_init(&x.task, timed_poll, timed_release);
	assert_int_equal(sb_driver_spawn(&d, &x.task), 0);
	assert_int_equal(sb_driver_run(&d), 0);
	assert_int_equal(x.result, -ETIMEDOUT);
	assert_int_equal(x.releases, 1);
	assert_int_equal(sb_semaphore_available(&x.sem), 0);
}

/* Finishes at once, leaving its timer armed; a second timer checks it was
 * not released, then moves the clock past the first. */
static job holder;
static sb_driver_timer holder_timer;

static int holder_poll(sb_loop_task *t, const sb_waker *w)
{
	(void)w;
	sb_driver_timer_init(&holder_timer, NULL, t);
	CHECK(sb_driver_timer_start(&same_d, &holder_timer, 50) == 0);
	return 0;
}

static void check_holder_kept(sb_driver_timer *tm)
{
	record_fire(tm);
	assert_int_equal(holder.releases, 0);
	fake_now += 100;
}

static void an_armed_timer_keeps_its_finished_task_until_it_fires(void **state)
{
	(void)state;
	reset_clock_and_fires();
	sb_driver_init(&same_d);
	job_init(&holder, NULL);
	sb_loop_task_init(&holder.task, holder_poll, job_release);
	tick check;
	tick_start(&same_d, &check, 40, 40, check_holder_kept);
	assert_int_equal(sb_driver_spawn(&same_d, &holder.task), 0);
	fake_now += 40;
	sb_driver_close(&same_d);
	assert_int_equal(sb_driver_run(&same_d), 0);
	assert_int_equal(fired_count, 1);
	assert_int_equal(holder.releases, 1);
}

static void start_refuses_a_bare_timer_an_unspawned_task_and_an_armed_timer(void **state)
{
	(void)state;
	sb_driver d;
	sb_driver_init(&d);
	sb_driver_timer bare;
	memset(&bare, 0, sizeof bare);
	assert_int_equal(sb_driver_timer_start(&d, &bare, 1), -EINVAL);
	assert_false(sb_driver_timer_stop(&bare));
	job a;
	job_init(&a, NULL);
	sb_driver_timer tm;
	sb_driver_timer_init(&tm, NULL, &a.task);
	assert_int_equal(sb_driver_timer_start(&d, &tm, 1), -EINVAL); /* not spawned */
	assert_false(sb_driver_timer_is_armed(&tm));
	tick t;
	tick_start(&d, &t, 1, 1, record_fire);
	assert_int_equal(sb_driver_timer_start(&d, &t.timer, 1), -EBUSY);
	assert_true(sb_driver_timer_stop(&t.timer));
	assert_false(sb_driver_timer_is_armed(&t.timer));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(run_returns_once_closed_and_every_task_released),
		cmocka_unit_test(a_driver_that_was_never_initialised_runs_to_einval),
		cmocka_unit_test(spawn_after_close_fails_with_eshutdown_and_run_returns_at_once),
		cmocka_unit_test(close_from_another_thread_ends_a_sleeping_run),
		cmocka_unit_test(a_wake_from_another_thread_rings_the_sleeping_driver_awake),
		cmocka_unit_test(wakes_on_the_drivers_own_thread_run_in_the_same_run_without_ringing),
		cmocka_unit_test(timers_fire_in_due_order_and_ties_in_start_order),
		cmocka_unit_test(a_timer_fires_only_once_the_clock_reaches_its_due_time),
		cmocka_unit_test(a_timer_stopped_before_it_is_due_never_fires),
		cmocka_unit_test(a_timer_may_be_started_again_from_its_own_callback),
		cmocka_unit_test(a_due_deadline_timer_expires_the_deadline_and_wakes_its_task),
		cmocka_unit_test(an_armed_timer_keeps_its_finished_task_until_it_fires),
		cmocka_unit_test(start_refuses_a_bare_timer_an_unspawned_task_and_an_armed_timer),
	};
	sb__clock_set(fake_clock);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
