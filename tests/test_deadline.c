/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/deadline.h: the deadline combinator the loop's own timer expires.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>

#include <syncband/channel.h>
#include <syncband/condvar.h>
#include <syncband/deadline.h>
#include <syncband/loop.h>
#include <syncband/mutex.h>
#include <syncband/semaphore.h>

#include "check.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

static void a_deadline_is_24_bytes_on_64_bit_targets(void **state)
{
	(void)state;
	if (sizeof(void *) == 8)
		assert_int_equal(sizeof(sb_deadline), 24);
}

static void a_deadline_passes_the_inner_result_through(void **state)
{
	(void)state;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_semaphore sem = SB_SEMAPHORE_INIT(1);
	sb_semaphore_acquire acq;
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_deadline d;
	sb_deadline_init(&d, &acq, &sb_semaphore_acquire_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), 0);
	assert_int_equal(sb_semaphore_available(&sem), 0);
	sb_semaphore_close(&sem);
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_deadline_init(&d, &acq, &sb_semaphore_acquire_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), -ESHUTDOWN); /* errors too */
	assert_int_equal(atomic_load(&c.live), 0);
}

static void before_expiry_a_pending_inner_stays_registered(void **state)
{
	(void)state;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire acq;
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_deadline d;
	sb_deadline_init(&d, &acq, &sb_semaphore_acquire_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	assert_false(sb_deadline_is_expired(&d));
	assert_int_equal(atomic_load(&c.live), 1);
	assert_int_equal(sb_semaphore_destroy(&sem), -EBUSY); /* it waits there */
	sb_deadline_cancel(&d);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

static void an_expired_deadline_cancels_a_pending_inner_with_etimedout(void **state)
{
	(void)state;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire acq;
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_deadline d;
	sb_deadline_init(&d, &acq, &sb_semaphore_acquire_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	sb_deadline_expire(&d);
	assert_true(sb_deadline_is_expired(&d));
	assert_int_equal(atomic_load(&c.live), 1); /* expire alone touches nothing */
	assert_int_equal(sb_deadline_poll(&d, &w), -ETIMEDOUT);
	assert_int_equal(atomic_load(&c.live), 0); /* the inner's clone was dropped */
	assert_int_equal(sb_semaphore_destroy(&sem), 0); /* and it left the queue */
}

static void a_grant_made_before_the_expired_poll_wins(void **state)
{
	(void)state;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire acq;
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_deadline d;
	sb_deadline_init(&d, &acq, &sb_semaphore_acquire_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	sb_semaphore_release(&sem, 1); /* granted, and woken */
	sb_deadline_expire(&d);        /* the timer fires before the poll */
	assert_int_equal(sb_deadline_poll(&d, &w), 0);
	assert_int_equal(sb_semaphore_available(&sem), 0); /* the permit is ours */
	assert_int_equal(atomic_load(&c.live), 0);
	sb_semaphore_release(&sem, 1);
	assert_int_equal(sb_semaphore_available(&sem), 1);
}

static void a_partial_grant_at_expiry_is_handed_to_the_next_waiter(void **state)
{
	(void)state;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire two, one;
	sb_semaphore_acquire_init(&two, &sem, 2);
	sb_semaphore_acquire_init(&one, &sem, 1);
	sb_deadline d;
	sb_deadline_init(&d, &two, &sb_semaphore_acquire_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	assert_int_equal(sb_semaphore_acquire_poll(&one, &w), SB_PENDING);
	sb_semaphore_release(&sem, 1); /* half of what the head wants */
	sb_deadline_expire(&d);
	assert_int_equal(sb_deadline_poll(&d, &w), -ETIMEDOUT);
	assert_int_equal(sb_semaphore_acquire_poll(&one, &w), 0); /* passed on */
	assert_int_equal(sb_semaphore_available(&sem), 0);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void expire_with_completes_with_the_error_given_and_the_first_one_wins(void **state)
{
	(void)state;
	sb_waker w = sb_waker_noop();
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire acq;
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_deadline d;
	sb_deadline_init(&d, &acq, &sb_semaphore_acquire_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	assert_int_equal(sb_deadline_expire_with(&d, 0), -EINVAL);
	assert_int_equal(sb_deadline_expire_with(&d, 5), -EINVAL);
	assert_false(sb_deadline_is_expired(&d)); /* refused: nothing changed */
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	assert_int_equal(sb_deadline_expire_with(&d, -ECANCELED), 0);
	sb_deadline_expire(&d); /* too late: the first expiry's error stays */
	assert_int_equal(sb_deadline_poll(&d, &w), -ECANCELED);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

static void a_done_deadline_returns_its_result_again_and_ignores_expiry(void **state)
{
	(void)state;
	sb_waker w = sb_waker_noop();
	sb_semaphore sem = SB_SEMAPHORE_INIT(1);
	sb_semaphore_acquire acq;
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_deadline d;
	sb_deadline_init(&d, &acq, &sb_semaphore_acquire_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), 0);
	sb_deadline_expire(&d);
	assert_int_equal(sb_deadline_poll(&d, &w), 0);
	sb_deadline_cancel(&d); /* done: leaves the permit with us */
	assert_int_equal(sb_deadline_poll(&d, &w), 0);
	assert_int_equal(sb_semaphore_available(&sem), 0);
}

static void cancel_before_expiry_cancels_the_inner_and_passes_its_grant_on(void **state)
{
	(void)state;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire acq;
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_deadline d;
	sb_deadline_init(&d, &acq, &sb_semaphore_acquire_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	sb_semaphore_release(&sem, 1); /* granted but not observed */
	sb_deadline_cancel(&d);
	assert_int_equal(sb_semaphore_available(&sem), 1); /* came back */
	assert_int_equal(sb_deadline_poll(&d, &w), -ECANCELED);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void an_expired_condvar_wait_leaves_the_mutex_unlocked(void **state)
{
	(void)state;
	sb_waker w = sb_waker_noop();
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar cv = SB_CONDVAR_INIT;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_condvar_wait wait;
	sb_condvar_wait_init(&wait, &cv, &m);
	sb_deadline d;
	sb_deadline_init(&d, &wait, &sb_condvar_wait_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	assert_false(sb_mutex_is_locked(&m)); /* the wait gave it up */
	sb_deadline_expire(&d);
	assert_int_equal(sb_deadline_poll(&d, &w), -ETIMEDOUT);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_condvar_destroy(&cv), 0);
}

static void a_deadline_wraps_a_deadline_through_its_ops(void **state)
{
	(void)state;
	sb_waker w = sb_waker_noop();
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire acq;
	sb_semaphore_acquire_init(&acq, &sem, 1);
	sb_deadline inner, outer;
	sb_deadline_init(&inner, &acq, &sb_semaphore_acquire_ops);
	sb_deadline_init(&outer, &inner, &sb_deadline_ops);
	assert_int_equal(sb_deadline_poll(&outer, &w), SB_PENDING);
	sb_deadline_expire_with(&outer, -ECANCELED); /* the outer, shorter one */
	assert_int_equal(sb_deadline_poll(&outer, &w), -ECANCELED);
	assert_int_equal(sb_deadline_poll(&inner, &w), -ECANCELED); /* cancelled through ops */
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

/* A scripted inner future: pending, and on its first poll the deadline's
 * timer fires (as it may on another thread while inner is being polled). */
struct racy_inner {
	sb_deadline *outer;
	int polls;
	int cancels;
};

static int racy_poll(void *f, const sb_waker *w)
{
	(void)w;
	struct racy_inner *r = f;
	if (r->cancels)
		return -ECANCELED; /* the deadline's look after its cancel */
	if (++r->polls == 1)
		sb_deadline_expire(r->outer);
	return SB_PENDING;
}

static void racy_cancel(void *f)
{
	((struct racy_inner *)f)->cancels++;
}

static const sb_future_ops racy_ops = { racy_poll, racy_cancel };

static void an_expiry_during_the_inner_poll_gives_it_one_more_poll(void **state)
{
	(void)state;
	sb_waker w = sb_waker_noop();
	sb_deadline d;
	struct racy_inner r = { &d, 0, 0 };
	sb_deadline_init(&d, &r, &racy_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING); /* began before the expiry */
	assert_int_equal(r.cancels, 0);
	assert_int_equal(sb_deadline_poll(&d, &w), -ETIMEDOUT);
	assert_int_equal(r.polls, 2);
	assert_int_equal(r.cancels, 1);
}

/* -------------------------------------------- a grant racing the expiry */

/*
 * On a loop: a task acquires one permit under a deadline; one thread
 * releases a permit while another expires the deadline and wakes the task,
 * released together by a barrier, and the loop runs on this thread all the
 * while.  Whichever wins, no permit is lost: the task holds it (0) or it is
 * back in the semaphore (-ETIMEDOUT).
 */
enum { RACES = 2000 };

static void ring_nothing(void *ctx)
{
	(void)ctx;
}

typedef struct timed_task {
	sb_loop_task task;
	sb_semaphore_acquire acq;
	sb_deadline deadline;
	int result;
} timed_task;

static int timed_poll(sb_loop_task *t, const sb_waker *w)
{
	timed_task *tt = SB_CONTAINER_OF(t, timed_task, task);
	tt->result = sb_deadline_poll(&tt->deadline, w);
	return tt->result;
}

struct race {
	pthread_barrier_t go;
	sb_semaphore *sem;
	timed_task *task;
};

static void *race_releaser(void *arg)
{
	struct race *r = arg;
	pthread_barrier_wait(&r->go);
	CHECK(sb_semaphore_release(r->sem, 1) == 0);
	return NULL;
}

static void *race_timer(void *arg)
{
	struct race *r = arg;
	pthread_barrier_wait(&r->go);
	sb_deadline_expire(&r->task->deadline);
	sb_loop_wake(&r->task->task); /* the loop's timer callback */
	return NULL;
}

static void a_grant_racing_the_expiry_never_loses_a_permit(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "grant vs expiry");
	int granted = 0, timed_out = 0;
	for (int i = 0; i < RACES; i++) {
		sb_loop loop;
		sb_loop_init(&loop, ring_nothing, NULL);
		sb_semaphore sem = SB_SEMAPHORE_INIT(0);
		timed_task tt;
		sb_loop_task_init(&tt.task, timed_poll, NULL);
		sb_semaphore_acquire_init(&tt.acq, &sem, 1);
		sb_deadline_init(&tt.deadline, &tt.acq, &sb_semaphore_acquire_ops);
		sb_loop_spawn(&loop, &tt.task);
		sb_loop_run_ready(&loop);
		assert_int_equal(tt.result, SB_PENDING);
		struct race r = { .sem = &sem, .task = &tt };
		pthread_barrier_init(&r.go, NULL, 2);
		pthread_t a, b;
		pthread_create(&a, NULL, race_releaser, &r);
		pthread_create(&b, NULL, race_timer, &r);
		while (tt.result == SB_PENDING) /* the loop, meanwhile, on this thread */
			sb_loop_run_ready(&loop);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		sb_loop_run_ready(&loop); /* a late wake's release, if any */
		assert_true(sb_loop_idle(&loop));
		if (tt.result == 0) {
			granted++;
			assert_int_equal(sb_semaphore_available(&sem), 0);
			sb_semaphore_release(&sem, 1);
		} else {
			assert_int_equal(tt.result, -ETIMEDOUT);
			timed_out++;
		}
		assert_int_equal(sb_semaphore_available(&sem), 1);
		assert_int_equal(sb_semaphore_destroy(&sem), 0);
		pthread_barrier_destroy(&r.go);
	}
	print_message("# %d races: %d granted first, %d timed out first\n", RACES, granted,
		      timed_out);
	sb_watchdog_stop(&wd);
}

/* A never-initialised deadline is bad input, not a completed one. */
static int deadline_poll_typed(void *f, const sb_waker *w)
{
	return sb_deadline_poll(f, w);
}

static void a_zeroed_deadline_polls_to_einval(void **state)
{
	(void)state;
	sb_deadline d;
	assert_zeroed_future_is_refused(&d, sizeof d, &sb_deadline_ops, deadline_poll_typed);
}

/*
 * An inner future whose operation happens between the deadline's last poll
 * of it and its cancel (a channel receive handed an item then): the cancel
 * cannot undo it and leaves it completed, so the deadline reports it.
 */
typedef struct racing_inner {
	bool happened; /* set by cancel: the grant it found */
	int cancels;
} racing_inner;

static int racing_poll(void *f, const sb_waker *w)
{
	(void)w;
	return ((racing_inner *)f)->happened ? 0 : SB_PENDING;
}

static void racing_cancel(void *f)
{
	racing_inner *r = f;
	r->cancels++;
	r->happened = true;
}

static const sb_future_ops racing_ops = { racing_poll, racing_cancel };

static void a_completion_that_the_cancel_finds_wins_over_the_expiry(void **state)
{
	(void)state;
	sb_waker w = sb_waker_noop();
	racing_inner inner = { false, 0 };
	sb_deadline d;
	sb_deadline_init(&d, &inner, &racing_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	sb_deadline_expire(&d);
	assert_int_equal(sb_deadline_poll(&d, &w), 0);
	assert_int_equal(inner.cancels, 1);
	assert_int_equal(sb_deadline_poll(&d, &w), 0); /* and stays so */
}

/* A receive through a deadline: the item handed to it before expiry is received. */
static void an_expired_deadline_over_a_channel_receive_loses_no_item(void **state)
{
	(void)state;
	sb_waker w = sb_waker_noop();
	int slots[2];
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	int got = 0;
	sb_channel_recv r;
	sb_channel_recv_init(&r, &ch, &got);
	sb_deadline d;
	sb_deadline_init(&d, &r, &sb_channel_recv_ops);
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	int item = 42;
	assert_int_equal(sb_channel_try_send(&ch, &item), 0); /* straight to the receive */
	sb_deadline_expire(&d);
	assert_int_equal(sb_deadline_poll(&d, &w), 0);
	assert_int_equal(got, 42);
	assert_int_equal(sb_channel_len(&ch), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_deadline_is_24_bytes_on_64_bit_targets),
		cmocka_unit_test(a_zeroed_deadline_polls_to_einval),
		cmocka_unit_test(a_deadline_passes_the_inner_result_through),
		cmocka_unit_test(before_expiry_a_pending_inner_stays_registered),
		cmocka_unit_test(an_expired_deadline_cancels_a_pending_inner_with_etimedout),
		cmocka_unit_test(a_grant_made_before_the_expired_poll_wins),
		cmocka_unit_test(a_completion_that_the_cancel_finds_wins_over_the_expiry),
		cmocka_unit_test(an_expired_deadline_over_a_channel_receive_loses_no_item),
		cmocka_unit_test(a_partial_grant_at_expiry_is_handed_to_the_next_waiter),
		cmocka_unit_test(an_expiry_during_the_inner_poll_gives_it_one_more_poll),
		cmocka_unit_test(expire_with_completes_with_the_error_given_and_the_first_one_wins),
		cmocka_unit_test(a_done_deadline_returns_its_result_again_and_ignores_expiry),
		cmocka_unit_test(cancel_before_expiry_cancels_the_inner_and_passes_its_grant_on),
		cmocka_unit_test(an_expired_condvar_wait_leaves_the_mutex_unlocked),
		cmocka_unit_test(a_deadline_wraps_a_deadline_through_its_ops),
		cmocka_unit_test(a_grant_racing_the_expiry_never_loses_a_permit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
