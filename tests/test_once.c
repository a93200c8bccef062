/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <syncband/once.h>

#include "check.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

static int poll_once(sb_once_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_once_wait_poll(f, &w);
}

/* A fresh future on `o`, polled once with `c`. */
static int start(sb_once_wait *f, sb_once *o, counting_waker *c)
{
	sb_once_wait_init(f, o);
	return poll_once(f, c);
}

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	assert_int_equal(sizeof(sb_once), 24);
	assert_int_equal(sizeof(sb_once_wait), 64);
}

static void the_run_value_is_a_completion_and_no_error_of_the_once(void **state)
{
	(void)state;
	assert_true(SB_ONCE_RUN < 0); /* drivers stop polling at <= 0 */
	assert_int_not_equal(SB_ONCE_RUN, -EAGAIN);
	assert_int_not_equal(SB_ONCE_RUN, -EPERM);
	assert_int_not_equal(SB_ONCE_RUN, -EBUSY);
	assert_int_not_equal(SB_ONCE_RUN, -ETIMEDOUT);
	assert_int_not_equal(SB_ONCE_RUN, -ECANCELED);
}

static void a_static_once_starts_not_done_with_nobody_running(void **state)
{
	(void)state;
	static sb_once o = SB_ONCE_INIT;
	assert_false(sb_once_is_done(&o));
	assert_int_equal(sb_once_complete(&o), -EPERM);
	assert_int_equal(sb_once_fail(&o), -EPERM);
	assert_int_equal(sb_once_destroy(&o), 0);
	sb_once d;
	assert_int_equal(sb_once_init(&d), 0);
	assert_false(sb_once_is_done(&d));
	assert_int_equal(sb_once_destroy(&d), 0);
}

static void the_first_poll_is_told_to_run_and_later_polls_wait(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c[3];
	sb_once_wait f[3];
	for (int i = 0; i < 3; i++)
		counting_waker_init(&c[i]);
	assert_int_equal(start(&f[0], &o, &c[0]), SB_ONCE_RUN);
	assert_int_equal(atomic_load(&c[0].clones), 0); /* the runner registers nothing */
	assert_int_equal(start(&f[1], &o, &c[1]), SB_PENDING);
	assert_int_equal(start(&f[2], &o, &c[2]), SB_PENDING);
	assert_int_equal(poll_once(&f[1], &c[1]), SB_PENDING);
	assert_int_equal(atomic_load(&c[1].clones), 1); /* same waker: no new clone */
	assert_false(sb_once_is_done(&o));
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(poll_once(&f[1], &c[1]), 0);
	assert_int_equal(poll_once(&f[2], &c[2]), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void success_completes_every_waiter_and_later_callers_see_it_done_at_once(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c[4];
	sb_once_wait f[4];
	for (int i = 0; i < 4; i++)
		counting_waker_init(&c[i]);
	assert_int_equal(start(&f[0], &o, &c[0]), SB_ONCE_RUN);
	for (int i = 1; i < 3; i++)
		assert_int_equal(start(&f[i], &o, &c[i]), SB_PENDING);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_true(sb_once_is_done(&o));
	for (int i = 1; i < 3; i++) {
		assert_int_equal(atomic_load(&c[i].woken), 1);
		assert_int_equal(poll_once(&f[i], &c[i]), 0);
		assert_int_equal(atomic_load(&c[i].live), 0);
	}
	/* later: done at once, nothing cloned */
	assert_int_equal(start(&f[3], &o, &c[3]), 0);
	assert_int_equal(atomic_load(&c[3].clones), 0);
	assert_int_equal(sb_once_try(&o), 0);
	assert_int_equal(sb_once_wait_blocking(&o, 0), 0);
	/* reported once and for all */
	assert_int_equal(sb_once_complete(&o), -EPERM);
	assert_int_equal(sb_once_fail(&o), -EPERM);
	assert_true(sb_once_is_done(&o));
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void failure_hands_the_job_to_the_oldest_waiter_in_fifo_order(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c[4];
	sb_once_wait f[4];
	for (int i = 0; i < 4; i++)
		counting_waker_init(&c[i]);
	assert_int_equal(start(&f[0], &o, &c[0]), SB_ONCE_RUN);
	for (int i = 1; i < 4; i++)
		assert_int_equal(start(&f[i], &o, &c[i]), SB_PENDING);

	assert_int_equal(sb_once_fail(&o), 0);
	assert_int_equal(atomic_load(&c[1].woken), 1);
	assert_int_equal(atomic_load(&c[2].wakes) + atomic_load(&c[3].wakes), 0);
	assert_int_equal(poll_once(&f[3], &c[3]), SB_PENDING);
	assert_int_equal(poll_once(&f[1], &c[1]), SB_ONCE_RUN);
	assert_int_equal(sb_once_try(&o), -EAGAIN); /* f[1] holds it now */
	assert_int_equal(sb_once_destroy(&o), -EBUSY);

	assert_int_equal(sb_once_fail(&o), 0);
	assert_int_equal(atomic_load(&c[2].woken), 1);
	assert_int_equal(atomic_load(&c[3].wakes), 0);
	assert_int_equal(poll_once(&f[2], &c[2]), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(atomic_load(&c[3].woken), 1);
	assert_int_equal(poll_once(&f[3], &c[3]), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void failure_with_nobody_waiting_lets_the_next_caller_run_it(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c;
	counting_waker_init(&c);
	sb_once_wait f, g;
	assert_int_equal(start(&f, &o, &c), SB_ONCE_RUN);
	assert_int_equal(sb_once_fail(&o), 0);
	assert_false(sb_once_is_done(&o));
	assert_int_equal(sb_once_fail(&o), -EPERM); /* nobody holds it now */
	assert_int_equal(sb_once_destroy(&o), 0);   /* as before anyone ran it */
	assert_int_equal(sb_once_init(&o), 0);
	assert_int_equal(start(&f, &o, &c), SB_ONCE_RUN);
	assert_int_equal(sb_once_fail(&o), 0);
	assert_int_equal(start(&g, &o, &c), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void a_cancelled_waiter_leaves_the_queue_and_is_skipped(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c[3];
	sb_once_wait f[3];
	for (int i = 0; i < 3; i++)
		counting_waker_init(&c[i]);
	assert_int_equal(start(&f[0], &o, &c[0]), SB_ONCE_RUN);
	assert_int_equal(start(&f[1], &o, &c[1]), SB_PENDING);
	assert_int_equal(start(&f[2], &o, &c[2]), SB_PENDING);
	sb_once_wait_cancel(&f[1]);
	assert_int_equal(atomic_load(&c[1].drops), 1);
	assert_int_equal(poll_once(&f[1], &c[1]), -ECANCELED);
	assert_int_equal(sb_once_fail(&o), 0);
	assert_int_equal(atomic_load(&c[1].wakes), 0);
	assert_int_equal(poll_once(&f[2], &c[2]), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void a_waiter_handed_the_job_and_cancelled_before_observing_it_passes_it_on(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c[3];
	sb_once_wait f[3];
	for (int i = 0; i < 3; i++)
		counting_waker_init(&c[i]);
	assert_int_equal(start(&f[0], &o, &c[0]), SB_ONCE_RUN);
	assert_int_equal(start(&f[1], &o, &c[1]), SB_PENDING);
	assert_int_equal(start(&f[2], &o, &c[2]), SB_PENDING);
	assert_int_equal(sb_once_fail(&o), 0); /* handed to f[1] */
	sb_once_wait_cancel(&f[1]);            /* which never saw it */
	assert_int_equal(atomic_load(&c[1].drops), 0); /* its wake spent the clone */
	assert_int_equal(atomic_load(&c[2].woken), 1);
	assert_int_equal(poll_once(&f[2], &c[2]), SB_ONCE_RUN);
	/* alone: handed, cancelled, and the job is free again */
	sb_once_wait_cancel(&f[2]);
	assert_int_equal(sb_once_try(&o), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

/*
 * The job handed to a future that has not polled yet is that future's alone:
 * a second report from anyone else (here the failed runner reporting twice)
 * is refused, so exactly one caller is told to run.
 */
static void reports_are_refused_until_the_handed_future_has_polled(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c[3];
	sb_once_wait f[3];
	for (int i = 0; i < 3; i++)
		counting_waker_init(&c[i]);
	assert_int_equal(start(&f[0], &o, &c[0]), SB_ONCE_RUN);
	assert_int_equal(start(&f[1], &o, &c[1]), SB_PENDING);
	assert_int_equal(start(&f[2], &o, &c[2]), SB_PENDING);
	assert_int_equal(sb_once_fail(&o), 0); /* handed to f[1], not yet told */
	assert_int_equal(sb_once_fail(&o), -EPERM);
	assert_int_equal(sb_once_complete(&o), -EPERM);
	assert_int_equal(sb_once_try(&o), -EAGAIN);
	assert_int_equal(atomic_load(&c[2].woken), 0); /* f[2] still waits */
	assert_int_equal(poll_once(&f[2], &c[2]), SB_PENDING);
	assert_int_equal(poll_once(&f[1], &c[1]), SB_ONCE_RUN); /* the one runner */
	assert_int_equal(sb_once_fail(&o), 0); /* f[1]'s report: on to f[2] */
	assert_int_equal(sb_once_complete(&o), -EPERM);
	assert_int_equal(poll_once(&f[2], &c[2]), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(sb_once_fail(&o), -EPERM);
	for (int i = 0; i < 3; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void the_runners_cancel_before_it_reports_passes_the_job_on(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c[2];
	sb_once_wait f[2];
	for (int i = 0; i < 2; i++)
		counting_waker_init(&c[i]);
	assert_int_equal(start(&f[0], &o, &c[0]), SB_ONCE_RUN);
	assert_int_equal(start(&f[1], &o, &c[1]), SB_PENDING);
	sb_once_wait_cancel(&f[0]);
	assert_int_equal(poll_once(&f[0], &c[0]), -ECANCELED);
	assert_int_equal(atomic_load(&c[1].woken), 1);
	assert_int_equal(poll_once(&f[1], &c[1]), SB_ONCE_RUN);
	sb_once_wait_cancel(&f[1]); /* nobody waits: the job is free */
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void the_runners_cancel_after_it_reported_does_nothing(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c[2];
	sb_once_wait f[2];
	for (int i = 0; i < 2; i++)
		counting_waker_init(&c[i]);
	/* after success: still done */
	assert_int_equal(start(&f[0], &o, &c[0]), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(poll_once(&f[0], &c[0]), SB_ONCE_RUN); /* its result again */
	sb_once_wait_cancel(&f[0]);
	assert_true(sb_once_is_done(&o));
	assert_int_equal(sb_once_destroy(&o), 0);

	/* after failure: the job it handed on stays with its new holder */
	assert_int_equal(sb_once_init(&o), 0);
	assert_int_equal(start(&f[0], &o, &c[0]), SB_ONCE_RUN);
	assert_int_equal(start(&f[1], &o, &c[1]), SB_PENDING);
	assert_int_equal(sb_once_fail(&o), 0);
	sb_once_wait_cancel(&f[0]);
	assert_int_equal(poll_once(&f[1], &c[1]), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

/*
 * A former runner's cancel comes after it failed and a later runner took
 * the job with nobody waiting in between: the tenure tells them apart.
 */
static void a_late_cancel_of_a_former_runner_does_not_fail_a_later_runners_job(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c[3];
	sb_once_wait f[3];
	for (int i = 0; i < 3; i++)
		counting_waker_init(&c[i]);
	assert_int_equal(start(&f[0], &o, &c[0]), SB_ONCE_RUN);
	assert_int_equal(sb_once_fail(&o), 0);
	assert_int_equal(start(&f[1], &o, &c[1]), SB_ONCE_RUN);
	assert_int_equal(start(&f[2], &o, &c[2]), SB_PENDING);
	sb_once_wait_cancel(&f[0]);
	assert_int_equal(atomic_load(&c[2].wakes), 0);
	assert_int_equal(sb_once_try(&o), -EAGAIN);
	/* the same through try(): a runner without a future */
	assert_int_equal(sb_once_fail(&o), 0); /* f[1]'s report: handed to f[2] */
	sb_once_wait_cancel(&f[1]);
	assert_int_equal(poll_once(&f[2], &c[2]), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void try_takes_a_free_job_and_refuses_while_a_runner_holds_it(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c;
	counting_waker_init(&c);
	sb_once_wait f;
	assert_int_equal(sb_once_try(&o), SB_ONCE_RUN);
	assert_int_equal(sb_once_try(&o), -EAGAIN);
	assert_int_equal(start(&f, &o, &c), SB_PENDING);
	assert_int_equal(sb_once_destroy(&o), -EBUSY);
	assert_int_equal(sb_once_fail(&o), 0);
	assert_int_equal(sb_once_try(&o), -EAGAIN); /* f holds it, unobserved */
	assert_int_equal(poll_once(&f, &c), SB_ONCE_RUN);
	assert_int_equal(sb_once_fail(&o), 0);
	assert_int_equal(sb_once_try(&o), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(sb_once_try(&o), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void destroy_is_refused_while_a_runner_holds_the_job_or_futures_wait(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c;
	counting_waker_init(&c);
	sb_once_wait f, g;
	assert_int_equal(start(&f, &o, &c), SB_ONCE_RUN);
	assert_int_equal(sb_once_destroy(&o), -EBUSY);
	assert_int_equal(start(&g, &o, &c), SB_PENDING);
	assert_int_equal(sb_once_destroy(&o), -EBUSY);
	sb_once_wait_cancel(&g);
	assert_int_equal(sb_once_destroy(&o), -EBUSY);
	/* refused, and unchanged: the runner still reports */
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void a_new_waker_replaces_the_registered_one(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker a, b;
	counting_waker_init(&a);
	counting_waker_init(&b);
	sb_once_wait f;
	assert_int_equal(sb_once_try(&o), SB_ONCE_RUN);
	assert_int_equal(start(&f, &o, &a), SB_PENDING);
	assert_int_equal(poll_once(&f, &b), SB_PENDING);
	assert_int_equal(atomic_load(&a.drops), 1);
	assert_int_equal(atomic_load(&b.clones), 1);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(atomic_load(&a.wakes), 0);
	assert_int_equal(atomic_load(&b.woken), 1);
	assert_int_equal(poll_once(&f, &a), 0);
	assert_int_equal(atomic_load(&a.live) + atomic_load(&b.live), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void cancel_of_an_idle_or_completed_wait_does_nothing(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c;
	counting_waker_init(&c);
	sb_once_wait f;
	sb_once_wait_init(&f, &o);
	sb_once_wait_cancel(&f);
	assert_int_equal(poll_once(&f, &c), -ECANCELED);
	assert_int_equal(sb_once_try(&o), SB_ONCE_RUN); /* the idle cancel took nothing */
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(start(&f, &o, &c), 0);
	sb_once_wait_cancel(&f);
	assert_int_equal(poll_once(&f, &c), 0); /* done stays done */
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void success_releases_more_waiters_than_one_wake_batch(void **state)
{
	(void)state;
	enum { N = 70 };
	sb_once o = SB_ONCE_INIT;
	counting_waker c;
	counting_waker_init(&c);
	static sb_once_wait f[N];
	assert_int_equal(sb_once_try(&o), SB_ONCE_RUN);
	for (int i = 0; i < N; i++)
		assert_int_equal(start(&f[i], &o, &c), SB_PENDING);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(atomic_load(&c.woken), N);
	for (int i = 0; i < N; i++)
		assert_int_equal(poll_once(&f[i], &c), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

/* --- wakers that re-enter the once from their clone --- */

static void complete_the_once(void *o)
{
	CHECK(sb_once_complete(o) == 0);
}

static void fail_the_job(void *o)
{
	CHECK(sb_once_fail(o) == 0);
}

static void a_waiter_whose_waker_clone_completes_the_once_completes_without_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on the queued path");
	sb_once o = SB_ONCE_INIT;
	counting_waker c;
	counting_waker_init(&c);
	c.on_clone = complete_the_once;
	c.hook_arg = &o;
	sb_once_wait f;
	assert_int_equal(sb_once_try(&o), SB_ONCE_RUN);
	assert_int_equal(start(&f, &o, &c), 0); /* done by its own clone */
	assert_int_equal(atomic_load(&c.clones), 1);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
	sb_watchdog_stop(&wd);
}

static void a_waiter_whose_waker_clone_fails_the_job_becomes_the_runner(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone that frees the job");
	sb_once o = SB_ONCE_INIT;
	counting_waker c;
	counting_waker_init(&c);
	c.on_clone = fail_the_job;
	c.hook_arg = &o;
	sb_once_wait f;
	assert_int_equal(sb_once_try(&o), SB_ONCE_RUN);
	assert_int_equal(start(&f, &o, &c), SB_ONCE_RUN);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
	sb_watchdog_stop(&wd);
}

static void repolling_with_a_new_waker_whose_clone_completes_the_once_does_not_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on re-poll");
	sb_once o = SB_ONCE_INIT;
	counting_waker old, fresh;
	counting_waker_init(&old);
	counting_waker_init(&fresh);
	fresh.on_clone = complete_the_once;
	fresh.hook_arg = &o;
	sb_once_wait f;
	assert_int_equal(sb_once_try(&o), SB_ONCE_RUN);
	assert_int_equal(start(&f, &o, &old), SB_PENDING);
	assert_int_equal(poll_once(&f, &fresh), 0);
	assert_int_equal(atomic_load(&old.woken), 1);
	assert_int_equal(atomic_load(&old.live) + atomic_load(&fresh.live), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
	sb_watchdog_stop(&wd);
}

/* --- blocking --- */

static void blocking_wait_runs_a_free_job_times_out_behind_a_runner_and_sees_it_done(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	assert_int_equal(sb_once_wait_blocking(&o, 0), SB_ONCE_RUN);
	assert_int_equal(sb_once_wait_blocking(&o, 0), -ETIMEDOUT);
	assert_int_equal(sb_once_wait_blocking(&o, 1000000), -ETIMEDOUT);
	assert_int_equal(sb_once_destroy(&o), -EBUSY); /* the job is still ours */
	assert_int_equal(sb_once_fail(&o), 0);
	assert_int_equal(sb_once_wait_blocking(&o, SB_TIMEOUT_INFINITE), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(sb_once_wait_blocking(&o, 0), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

/* The future through its ops table, as sb_block_on and combinators drive it. */
static void the_ops_table_drives_the_future(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_once_wait f, g;
	sb_once_wait_init(&f, &o);
	sb_once_wait_init(&g, &o);
	assert_int_equal(sb_once_wait_ops.poll(&f, &w), SB_ONCE_RUN);
	assert_int_equal(sb_once_wait_ops.poll(&g, &w), SB_PENDING);
	sb_once_wait_ops.cancel(&f); /* the runner's cancel: g runs it */
	assert_int_equal(sb_once_wait_ops.poll(&g, &w), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

/* --- threads --- */

enum { THREADS = 8, FAILURES = 5, ROUNDS = 300 };

typedef struct race {
	sb_once once;
	int payload;           /* the initialiser's write */
	atomic_int runs;       /* times the initialiser ran */
	atomic_int failures_left;
} race;

/*
 * Until done: run the initialiser when told to, failing the first few times;
 * every other thread polls a future instead of blocking.
 */
typedef struct racer {
	race *x;
	bool by_future;
	/* Outlives the thread: the thread that hands this one the job drops
	 * its waker clone after the wake, maybe after this thread is done. */
	counting_waker c;
} racer;

static void *race_thread(void *p)
{
	racer *me = p;
	race *x = me->x;
	sb_waker w = counting_waker_ref(&me->c);
	counting_waker *c = &me->c;
	for (;;) {
		int r;
		if (me->by_future) {
			sb_once_wait f;
			sb_once_wait_init(&f, &x->once);
			int wakes = atomic_load(&c->wakes);
			while ((r = sb_once_wait_poll(&f, &w)) == SB_PENDING) {
				while (atomic_load(&c->wakes) == wakes)
					sched_yield();
				wakes = atomic_load(&c->wakes);
			}
		} else {
			r = sb_once_wait_blocking(&x->once, SB_TIMEOUT_INFINITE);
		}
		if (r == 0)
			break;
		CHECK(r == SB_ONCE_RUN);
		CHECK(x->payload == 0); /* nobody succeeded before */
		atomic_fetch_add(&x->runs, 1);
		if (atomic_fetch_sub(&x->failures_left, 1) > 0) {
			CHECK(sb_once_fail(&x->once) == 0);
			continue;
		}
		x->payload = 42;
		CHECK(sb_once_complete(&x->once) == 0);
		break;
	}
	CHECK(x->payload == 42); /* the initialiser's write, published */
	return NULL;
}

/*
 * Threads racing for a fresh once each round, by future and by blocking
 * wait: the initialiser runs until one success, failures are retried by
 * whoever the job passes to, and every thread sees the successful run's
 * write (under ThreadSanitizer: without a release/acquire pair, a race).
 */
static void racing_callers_run_the_initialiser_until_it_succeeds_and_all_see_its_writes(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "once race");
	for (int round = 0; round < ROUNDS; round++) {
		race x = { .payload = 0 };
		assert_int_equal(sb_once_init(&x.once), 0);
		atomic_init(&x.runs, 0);
		atomic_init(&x.failures_left, round % (FAILURES + 1));
		pthread_t t[THREADS];
		racer r[THREADS];
		for (int i = 0; i < THREADS; i++) {
			r[i] = (racer){ .x = &x, .by_future = i % 2 };
			counting_waker_init(&r[i].c);
			assert_int_equal(pthread_create(&t[i], NULL, race_thread, &r[i]), 0);
		}
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		/* Every clone dropped once every thread, waker included, is done. */
		for (int i = 0; i < THREADS; i++)
			assert_int_equal(atomic_load(&r[i].c.live), 0);
		assert_int_equal(atomic_load(&x.runs), round % (FAILURES + 1) + 1);
		assert_true(sb_once_is_done(&x.once));
		assert_int_equal(sb_once_destroy(&x.once), 0);
	}
	sb_watchdog_stop(&wd);
}

/* A never-initialised future is bad input, not a completed one. */
static int once_wait_poll_typed(void *f, const sb_waker *w)
{
	return sb_once_wait_poll(f, w);
}

static void a_zeroed_future_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	sb_once o = SB_ONCE_INIT;
	sb_once_wait f;
	assert_zeroed_future_is_refused(&f, sizeof f, &sb_once_wait_ops, once_wait_poll_typed);
	assert_int_equal(sb_once_try(&o), SB_ONCE_RUN); /* nobody took the job */
	assert_int_equal(sb_once_complete(&o), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(a_zeroed_future_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(the_run_value_is_a_completion_and_no_error_of_the_once),
		cmocka_unit_test(a_static_once_starts_not_done_with_nobody_running),
		cmocka_unit_test(the_first_poll_is_told_to_run_and_later_polls_wait),
		cmocka_unit_test(success_completes_every_waiter_and_later_callers_see_it_done_at_once),
		cmocka_unit_test(failure_hands_the_job_to_the_oldest_waiter_in_fifo_order),
		cmocka_unit_test(failure_with_nobody_waiting_lets_the_next_caller_run_it),
		cmocka_unit_test(a_cancelled_waiter_leaves_the_queue_and_is_skipped),
		cmocka_unit_test(a_waiter_handed_the_job_and_cancelled_before_observing_it_passes_it_on),
		cmocka_unit_test(reports_are_refused_until_the_handed_future_has_polled),
		cmocka_unit_test(the_runners_cancel_before_it_reports_passes_the_job_on),
		cmocka_unit_test(the_runners_cancel_after_it_reported_does_nothing),
		cmocka_unit_test(a_late_cancel_of_a_former_runner_does_not_fail_a_later_runners_job),
		cmocka_unit_test(try_takes_a_free_job_and_refuses_while_a_runner_holds_it),
		cmocka_unit_test(destroy_is_refused_while_a_runner_holds_the_job_or_futures_wait),
		cmocka_unit_test(a_new_waker_replaces_the_registered_one),
		cmocka_unit_test(cancel_of_an_idle_or_completed_wait_does_nothing),
		cmocka_unit_test(success_releases_more_waiters_than_one_wake_batch),
		cmocka_unit_test(a_waiter_whose_waker_clone_completes_the_once_completes_without_deadlock),
		cmocka_unit_test(a_waiter_whose_waker_clone_fails_the_job_becomes_the_runner),
		cmocka_unit_test(repolling_with_a_new_waker_whose_clone_completes_the_once_does_not_deadlock),
		cmocka_unit_test(blocking_wait_runs_a_free_job_times_out_behind_a_runner_and_sees_it_done),
		cmocka_unit_test(the_ops_table_drives_the_future),
		cmocka_unit_test(racing_callers_run_the_initialiser_until_it_succeeds_and_all_see_its_writes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
