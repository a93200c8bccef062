/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <syncband/latch.h>

#include "check.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

static int poll_wait(sb_latch_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_latch_wait_poll(f, &w);
}

/* Initialises `f` on `l` and polls it once with `c`. */
static int start_wait(sb_latch_wait *f, sb_latch *l, counting_waker *c)
{
	sb_latch_wait_init(f, l);
	return poll_wait(f, c);
}

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	assert_int_equal(sizeof(sb_latch), 24);
	assert_int_equal(sizeof(sb_latch_wait), 56);
	/* every bit above the queue's three */
	assert_true(SB_LATCH_MAX_COUNT == (SIZE_MAX >> 3));
}

static void a_latch_initialised_at_zero_is_open_at_once(void **state)
{
	(void)state;
	static sb_latch open = SB_LATCH_INIT(0);
	sb_latch l;
	assert_int_equal(sb_latch_init(&l, 0), 0);
	counting_waker c;
	counting_waker_init(&c);
	sb_latch *both[] = { &open, &l };
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sb_latch_count(both[i]), 0);
		assert_int_equal(sb_latch_try_wait(both[i]), 0);
		sb_latch_wait f;
		assert_int_equal(start_wait(&f, both[i], &c), 0);
		assert_int_equal(sb_latch_wait_blocking(both[i], 0), 0);
	}
	assert_int_equal(atomic_load(&c.clones), 0); /* nothing registered */
	assert_int_equal(sb_latch_destroy(&l), 0);
}

static void static_and_initialised_latches_start_at_their_count(void **state)
{
	(void)state;
	static sb_latch s = SB_LATCH_INIT(3);
	sb_latch l;
	assert_int_equal(sb_latch_init(&l, SB_LATCH_MAX_COUNT), 0);
	assert_int_equal(sb_latch_count(&s), 3);
	assert_true(sb_latch_count(&l) == SB_LATCH_MAX_COUNT);
	assert_int_equal(sb_latch_try_wait(&s), -EAGAIN);
	assert_int_equal(sb_latch_try_wait(&l), -EAGAIN);
	assert_int_equal(sb_latch_destroy(&l), 0); /* a count left does not keep it */
}

static void init_refuses_a_count_above_the_maximum_and_leaves_the_latch_as_it_was(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(3);
	assert_int_equal(sb_latch_init(&l, SB_LATCH_MAX_COUNT + 1), -EINVAL);
	assert_int_equal(sb_latch_init(&l, SIZE_MAX), -EINVAL);
	assert_int_equal(sb_latch_count(&l), 3);
}

static void count_down_to_zero_releases_every_registered_wait(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(2);
	enum { N = 3 };
	sb_latch_wait f[N];
	counting_waker c[N];
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		assert_int_equal(start_wait(&f[i], &l, &c[i]), SB_PENDING);
	}
	assert_int_equal(sb_latch_destroy(&l), -EBUSY);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(atomic_load(&c[i].wakes), 0); /* one still to come */
		assert_int_equal(poll_wait(&f[i], &c[i]), SB_PENDING);
	}
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(sb_latch_count(&l), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(poll_wait(&f[i], &c[i]), 0);
		assert_int_equal(poll_wait(&f[i], &c[i]), 0); /* and again */
		assert_int_equal(atomic_load(&c[i].live), 0);
	}
	assert_int_equal(sb_latch_try_wait(&l), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
}

static void count_down_of_several_at_once_opens_the_latch_when_it_takes_the_rest(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(5);
	sb_latch_wait f;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(start_wait(&f, &l, &c), SB_PENDING);
	assert_int_equal(sb_latch_count_down(&l, 3), 0);
	assert_int_equal(sb_latch_count(&l), 2);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(sb_latch_count_down(&l, 2), 0);
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(poll_wait(&f, &c), 0);
}

static void count_down_past_the_count_is_refused_with_erange_and_takes_nothing(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(3);
	sb_latch_wait f;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(start_wait(&f, &l, &c), SB_PENDING);
	assert_int_equal(sb_latch_count_down(&l, 4), -ERANGE);
	assert_int_equal(sb_latch_count_down(&l, SB_LATCH_MAX_COUNT), -ERANGE);
	assert_int_equal(sb_latch_count_down(&l, SIZE_MAX), -ERANGE);
	assert_int_equal(sb_latch_count(&l), 3);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(poll_wait(&f, &c), SB_PENDING);
	assert_int_equal(sb_latch_count_down(&l, 3), 0);
	assert_int_equal(poll_wait(&f, &c), 0);
	/* at zero: any count_down but of 0 is past the count */
	assert_int_equal(sb_latch_count_down(&l, 1), -ERANGE);
	assert_int_equal(sb_latch_count(&l), 0);
	assert_int_equal(sb_latch_try_wait(&l), 0);
}

static void count_down_of_zero_and_add_of_zero_change_nothing(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1), open = SB_LATCH_INIT(0);
	sb_latch_wait f;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(start_wait(&f, &l, &c), SB_PENDING);
	assert_int_equal(sb_latch_count_down(&l, 0), 0);
	assert_int_equal(sb_latch_add(&l, 0), 0);
	assert_int_equal(sb_latch_count(&l), 1);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(sb_latch_count_down(&open, 0), 0);
	assert_int_equal(sb_latch_add(&open, 0), 0);
	assert_int_equal(sb_latch_try_wait(&open), 0);
	sb_latch_wait_cancel(&f);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void add_raises_the_count_so_that_the_release_waits_for_more_count_downs(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait f;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(start_wait(&f, &l, &c), SB_PENDING);
	assert_int_equal(sb_latch_add(&l, 2), 0);
	assert_int_equal(sb_latch_count(&l), 3);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(poll_wait(&f, &c), SB_PENDING);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(poll_wait(&f, &c), 0);
}

static void add_past_the_maximum_is_refused_with_eoverflow_and_adds_nothing(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(2);
	assert_int_equal(sb_latch_add(&l, SB_LATCH_MAX_COUNT - 1), -EOVERFLOW);
	assert_int_equal(sb_latch_add(&l, SIZE_MAX), -EOVERFLOW);
	assert_int_equal(sb_latch_count(&l), 2);
	assert_int_equal(sb_latch_add(&l, SB_LATCH_MAX_COUNT - 2), 0);
	assert_true(sb_latch_count(&l) == SB_LATCH_MAX_COUNT);
	assert_int_equal(sb_latch_add(&l, 1), -EOVERFLOW);
	assert_true(sb_latch_count(&l) == SB_LATCH_MAX_COUNT);
	assert_int_equal(sb_latch_count_down(&l, SB_LATCH_MAX_COUNT), 0);
	assert_int_equal(sb_latch_try_wait(&l), 0);
}

static void add_on_an_open_latch_reopens_it_and_later_waits_wait_for_the_next_zero(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait early, late;
	counting_waker ce, cl;
	counting_waker_init(&ce);
	counting_waker_init(&cl);
	assert_int_equal(start_wait(&early, &l, &ce), SB_PENDING);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(sb_latch_add(&l, 1), 0); /* a wait group reused */
	assert_int_equal(sb_latch_try_wait(&l), -EAGAIN);
	/* released before the add: stays released */
	assert_int_equal(poll_wait(&early, &ce), 0);
	assert_int_equal(start_wait(&late, &l, &cl), SB_PENDING);
	assert_int_equal(atomic_load(&cl.wakes), 0);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(atomic_load(&cl.wakes), 1);
	assert_int_equal(poll_wait(&late, &cl), 0);
	assert_int_equal(atomic_load(&ce.wakes), 1); /* woken once, by the first zero */
	assert_int_equal(atomic_load(&ce.live) + atomic_load(&cl.live), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
}

static void a_wait_first_polled_after_a_count_down_to_zero_completes_without_cloning(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait f;
	counting_waker c;
	counting_waker_init(&c);
	sb_latch_wait_init(&f, &l); /* initialised while closed: registers on its poll */
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(poll_wait(&f, &c), 0);
	assert_int_equal(atomic_load(&c.clones), 0);
}

static void a_wait_initialised_while_open_waits_if_the_latch_closed_before_its_poll(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(0);
	sb_latch_wait f;
	counting_waker c;
	counting_waker_init(&c);
	sb_latch_wait_init(&f, &l);
	assert_int_equal(sb_latch_add(&l, 1), 0);
	assert_int_equal(poll_wait(&f, &c), SB_PENDING);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(poll_wait(&f, &c), 0);
}

static void try_wait_is_eagain_while_the_count_is_above_zero_and_0_once_it_is_zero(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(2);
	assert_int_equal(sb_latch_try_wait(&l), -EAGAIN);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(sb_latch_try_wait(&l), -EAGAIN);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(sb_latch_try_wait(&l), 0);
	assert_int_equal(sb_latch_try_wait(&l), 0);
}

static void repolling_a_pending_wait_with_a_new_waker_swaps_the_clone(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait f;
	counting_waker a, b;
	counting_waker_init(&a);
	counting_waker_init(&b);
	assert_int_equal(start_wait(&f, &l, &a), SB_PENDING);
	assert_int_equal(poll_wait(&f, &a), SB_PENDING); /* same waker: no clone */
	assert_int_equal(atomic_load(&a.clones), 1);
	assert_int_equal(poll_wait(&f, &b), SB_PENDING);
	assert_int_equal(atomic_load(&a.drops), 1);
	assert_int_equal(atomic_load(&b.clones), 1);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(atomic_load(&a.wakes), 0);
	assert_int_equal(atomic_load(&b.wakes), 1);
	assert_int_equal(poll_wait(&f, &b), 0);
	assert_int_equal(atomic_load(&a.live) + atomic_load(&b.live), 0);
}

static void cancel_of_a_wait_leaves_the_others_registered(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait a, b;
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	assert_int_equal(start_wait(&a, &l, &ca), SB_PENDING);
	assert_int_equal(start_wait(&b, &l, &cb), SB_PENDING);
	sb_latch_wait_cancel(&a);
	assert_int_equal(atomic_load(&ca.drops), 1);
	assert_int_equal(sb_latch_count(&l), 1); /* a wait is no arrival */
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(atomic_load(&ca.wakes), 0);
	assert_int_equal(poll_wait(&b, &cb), 0);
	assert_int_equal(poll_wait(&a, &ca), -ECANCELED);
	sb_latch_wait_cancel(&a); /* twice: nothing */
	sb_latch_wait_cancel(&b); /* completed: nothing */
	assert_int_equal(poll_wait(&b, &cb), 0);
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
}

static void a_released_wait_cancelled_before_its_poll_passes_nothing_on_and_the_others_stay_released(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait a, b;
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	assert_int_equal(start_wait(&a, &l, &ca), SB_PENDING);
	assert_int_equal(start_wait(&b, &l, &cb), SB_PENDING);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	sb_latch_wait_cancel(&a); /* released, never observed */
	assert_int_equal(atomic_load(&ca.wakes), 1);
	assert_int_equal(atomic_load(&ca.drops), 0); /* its clone was spent by the wake */
	assert_int_equal(poll_wait(&a, &ca), -ECANCELED);
	assert_int_equal(poll_wait(&b, &cb), 0);
	assert_int_equal(sb_latch_count(&l), 0);
	assert_int_equal(sb_latch_try_wait(&l), 0);
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
}

static void destroy_is_refused_while_a_wait_is_registered_and_the_latch_keeps_working(void **state)
{
	(void)state;
	sb_latch l;
	assert_int_equal(sb_latch_init(&l, 1), 0);
	sb_latch_wait f;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(start_wait(&f, &l, &c), SB_PENDING);
	assert_int_equal(sb_latch_destroy(&l), -EBUSY);
	assert_int_equal(sb_latch_count(&l), 1);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(poll_wait(&f, &c), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
}

/* --- the broadcast: more waits than a wake batch ------------------------ */

enum { CROWD = 48 }; /* more than one wake batch of 32 */

static void count_down_releases_a_crowd_past_one_wake_batch(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait f[CROWD];
	counting_waker c[CROWD];
	for (int i = 0; i < CROWD; i++) {
		counting_waker_init(&c[i]);
		assert_int_equal(start_wait(&f[i], &l, &c[i]), SB_PENDING);
	}
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	for (int i = 0; i < CROWD; i++) {
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(poll_wait(&f[i], &c[i]), 0);
		assert_int_equal(atomic_load(&c[i].live), 0);
	}
	assert_int_equal(sb_latch_destroy(&l), 0);
}

/* What the first wake of a broadcast does, from inside count_down. */
typedef struct reenter {
	sb_latch *latch;
	sb_latch_wait *other;       /* a wait of the same broadcast, or a late one */
	counting_waker *other_waker;
	int seen;                   /* what polling `other` returned */
	int calls;
} reenter;

/* The first wake polls another wait registered before the count_down. */
static void poll_the_other_wait(void *arg)
{
	reenter *r = arg;
	if (r->calls++ == 0)
		r->seen = poll_wait(r->other, r->other_waker);
}

/*
 * The broadcast is atomic: from the moment the count is zero every earlier
 * wait is released, also those count_down has not woken yet (it wakes them
 * in batches of 32, outside the lock).
 */
static void a_wait_polled_while_count_down_is_still_waking_others_is_already_released(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait f[CROWD];
	counting_waker c[CROWD];
	for (int i = 0; i < CROWD; i++) {
		counting_waker_init(&c[i]);
		assert_int_equal(start_wait(&f[i], &l, &c[i]), SB_PENDING);
	}
	reenter r = { &l, &f[CROWD - 1], &c[CROWD - 1], SB_PENDING, 0 };
	c[0].on_wake = poll_the_other_wait;
	c[0].hook_arg = &r;
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(r.seen, 0); /* not SB_PENDING */
	for (int i = 0; i < CROWD; i++) {
		assert_int_equal(poll_wait(&f[i], &c[i]), 0);
		assert_int_equal(atomic_load(&c[i].live), 0);
	}
	/* the last one completed by its own poll: count_down never woke it */
	assert_int_equal(atomic_load(&c[CROWD - 1].wakes), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
}

static void cancel_the_other_wait(void *arg)
{
	reenter *r = arg;
	if (r->calls++ == 0)
		sb_latch_wait_cancel(r->other);
}

static void a_wait_cancelled_while_count_down_is_still_waking_others_leaves_cleanly(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait f[CROWD];
	counting_waker c[CROWD];
	for (int i = 0; i < CROWD; i++) {
		counting_waker_init(&c[i]);
		assert_int_equal(start_wait(&f[i], &l, &c[i]), SB_PENDING);
	}
	reenter r = { &l, &f[CROWD - 1], &c[CROWD - 1], 0, 0 };
	c[0].on_wake = cancel_the_other_wait;
	c[0].hook_arg = &r;
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	/* released but not yet reached: it unlinked itself and dropped its clone */
	assert_int_equal(atomic_load(&c[CROWD - 1].wakes), 0);
	assert_int_equal(atomic_load(&c[CROWD - 1].drops), 1);
	assert_int_equal(poll_wait(&f[CROWD - 1], &c[CROWD - 1]), -ECANCELED);
	for (int i = 0; i < CROWD - 1; i++) {
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(poll_wait(&f[i], &c[i]), 0);
	}
	for (int i = 0; i < CROWD; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
}

/* The first wake reopens the latch and registers a new wait. */
static void reopen_and_wait_again(void *arg)
{
	reenter *r = arg;
	if (r->calls++ == 0) {
		/* 2: a count with bits above SB_WAITQ_LONE_SHIFT, which a
		 * lock that looks for a lone waiter would take for an address */
		CHECK(sb_latch_add(r->latch, 2) == 0);
		r->seen = start_wait(r->other, r->latch, r->other_waker);
	}
}

/*
 * A wait that registers after a reopening add, while count_down is still
 * waking the earlier ones (its lock dropped between batches), joins the
 * emptied queue and waits for the next zero; the broadcast re-takes its lock
 * with the reopened count in the word.
 */
static void a_waker_that_reopens_the_latch_and_waits_again_mid_broadcast_waits_for_the_next_zero(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "latch reopened mid-broadcast");
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait f[CROWD], late;
	counting_waker c[CROWD], cl;
	counting_waker_init(&cl);
	for (int i = 0; i < CROWD; i++) {
		counting_waker_init(&c[i]);
		assert_int_equal(start_wait(&f[i], &l, &c[i]), SB_PENDING);
	}
	reenter r = { &l, &late, &cl, 0, 0 };
	c[0].on_wake = reopen_and_wait_again;
	c[0].hook_arg = &r;
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(r.seen, SB_PENDING);
	for (int i = 0; i < CROWD; i++) {
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(poll_wait(&f[i], &c[i]), 0);
	}
	assert_int_equal(sb_latch_count(&l), 2);
	assert_int_equal(atomic_load(&cl.wakes), 0);
	assert_int_equal(poll_wait(&late, &cl), SB_PENDING);
	assert_int_equal(sb_latch_destroy(&l), -EBUSY);
	assert_int_equal(sb_latch_count_down(&l, 2), 0);
	assert_int_equal(atomic_load(&cl.wakes), 1);
	assert_int_equal(poll_wait(&late, &cl), 0);
	assert_int_equal(atomic_load(&cl.live), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
	sb_watchdog_stop(&wd);
}

/* --- re-entrant wakers --------------------------------------------------- */

static void count_the_latch_down(void *l)
{
	CHECK(sb_latch_count_down(l, 1) == 0);
}

static void add_one_to_the_latch(void *l)
{
	CHECK(sb_latch_add(l, 1) == 0);
}

/*
 * A waker may re-enter the library from any of its callbacks, clone
 * included: a registering wait clones before it takes the queue lock.
 */
static void a_wait_whose_waker_clone_counts_the_latch_down_completes_without_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on the queued path");
	sb_latch l = SB_LATCH_INIT(1);
	counting_waker c;
	counting_waker_init(&c);
	c.on_clone = count_the_latch_down;
	c.hook_arg = &l;
	sb_latch_wait f;
	assert_int_equal(start_wait(&f, &l, &c), 0); /* opened by its own clone */
	assert_int_equal(atomic_load(&c.clones), 1);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
	sb_watchdog_stop(&wd);
}

static void repolling_a_wait_with_a_new_waker_whose_clone_opens_the_latch_does_not_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on re-poll");
	sb_latch l = SB_LATCH_INIT(1);
	counting_waker old, fresh;
	counting_waker_init(&old);
	counting_waker_init(&fresh);
	fresh.on_clone = count_the_latch_down;
	fresh.hook_arg = &l;
	sb_latch_wait f;
	assert_int_equal(start_wait(&f, &l, &old), SB_PENDING);
	assert_int_equal(poll_wait(&f, &fresh), 0);
	assert_int_equal(atomic_load(&old.wakes), 1);
	assert_int_equal(atomic_load(&old.live) + atomic_load(&fresh.live), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
	sb_watchdog_stop(&wd);
}

/* A woken wait's waker counts down a second latch, from inside count_down. */
static void a_wake_that_counts_down_another_latch_runs_outside_the_lock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant wake");
	sb_latch first = SB_LATCH_INIT(1), second = SB_LATCH_INIT(1);
	counting_waker c1, c2;
	counting_waker_init(&c1);
	counting_waker_init(&c2);
	c1.on_wake = count_the_latch_down;
	c1.hook_arg = &second;
	sb_latch_wait a, b, again;
	assert_int_equal(start_wait(&a, &first, &c1), SB_PENDING);
	assert_int_equal(start_wait(&b, &second, &c2), SB_PENDING);
	assert_int_equal(sb_latch_count_down(&first, 1), 0);
	assert_int_equal(atomic_load(&c2.wakes), 1);
	assert_int_equal(poll_wait(&a, &c1), 0);
	assert_int_equal(poll_wait(&b, &c2), 0);
	/* and the first latch again, reopened from its own waiter's wake */
	assert_int_equal(sb_latch_add(&first, 1), 0);
	c1.on_wake = add_one_to_the_latch;
	c1.hook_arg = &first;
	assert_int_equal(start_wait(&again, &first, &c1), SB_PENDING);
	assert_int_equal(sb_latch_count_down(&first, 1), 0);
	assert_int_equal(sb_latch_count(&first), 1);
	assert_int_equal(poll_wait(&again, &c1), 0); /* released before the add */
	assert_int_equal(atomic_load(&c1.live) + atomic_load(&c2.live), 0);
	sb_watchdog_stop(&wd);
}

/* --- blocking ------------------------------------------------------------ */

static void blocking_wait_times_out_while_the_count_is_above_zero(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	assert_int_equal(sb_latch_wait_blocking(&l, 0), -ETIMEDOUT);
	assert_int_equal(sb_latch_wait_blocking(&l, 1000000), -ETIMEDOUT);
	assert_int_equal(sb_latch_count(&l), 1);
	assert_int_equal(sb_latch_destroy(&l), 0); /* the timed-out wait left */
}

typedef struct blocker {
	sb_latch latch;
	atomic_int result;
} blocker;

static void *block_on_latch(void *p)
{
	blocker *b = p;
	atomic_store(&b->result, sb_latch_wait_blocking(&b->latch, SB_TIMEOUT_INFINITE));
	return NULL;
}

static void a_blocked_thread_returns_once_another_counts_the_latch_to_zero(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "blocking latch wait");
	blocker b = { SB_LATCH_INIT(2), 1 };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, block_on_latch, &b), 0);
	/* white box: bit 2 of the state word means "someone is queued" */
	while (!(atomic_load(&b.latch.q.state) & SB_WAITQ_NONEMPTY))
		sched_yield();
	assert_int_equal(sb_latch_count_down(&b.latch, 1), 0);
	assert_int_equal(atomic_load(&b.result), 1); /* still blocked */
	assert_int_equal(sb_latch_count_down(&b.latch, 1), 0);
	pthread_join(t, NULL);
	assert_int_equal(atomic_load(&b.result), 0);
	assert_int_equal(sb_latch_destroy(&b.latch), 0);
	sb_watchdog_stop(&wd);
}

/* --- threads ------------------------------------------------------------- */

/*
 * What every counter wrote before its count_down is visible to whoever sees
 * the latch open: a wait's first poll, a queued wait released by the
 * broadcast, a blocking wait, a try_wait.  Meaningful under ThreadSanitizer,
 * which reports the race on `payload` if a count_down is not a release or
 * the wait does not acquire.
 */
enum { COUNTERS = 3 };

typedef struct publish {
	sb_latch latch;
	int payload[COUNTERS];
	int round;
	int index; /* the next counter's */
	pthread_mutex_t index_lock;
} publish;

static void *publish_counter(void *p)
{
	publish *x = p;
	pthread_mutex_lock(&x->index_lock);
	int i = x->index++;
	pthread_mutex_unlock(&x->index_lock);
	x->payload[i] = x->round;
	CHECK(sb_latch_count_down(&x->latch, 1) == 0);
	return NULL;
}

static void *publish_reader(void *p)
{
	publish *x = p;
	sb_waker noop = sb_waker_noop();
	switch (x->round % 3) {
	case 0:
		while (sb_latch_try_wait(&x->latch) != 0)
			sched_yield();
		break;
	case 1: {
		/* fresh first polls: the lock-free zero, or a queued wait's release */
		sb_latch_wait f;
		sb_latch_wait_init(&f, &x->latch);
		while (sb_latch_wait_poll(&f, &noop) == SB_PENDING) {
			sched_yield();
			if (sb_latch_wait_poll(&f, &noop) == 0)
				break;
			sb_latch_wait_cancel(&f);
			sb_latch_wait_init(&f, &x->latch);
		}
		break;
	}
	default:
		CHECK(sb_latch_wait_blocking(&x->latch, SB_TIMEOUT_INFINITE) == 0);
		break;
	}
	for (int i = 0; i < COUNTERS; i++)
		CHECK(x->payload[i] == x->round);
	return NULL;
}

static void a_waiter_that_sees_the_latch_open_sees_what_every_counter_wrote(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "latch publication");
	for (int round = 1; round <= 300; round++) {
		publish x = { .round = round };
		pthread_mutex_init(&x.index_lock, NULL);
		assert_int_equal(sb_latch_init(&x.latch, COUNTERS), 0);
		/* every other round a wait is queued, so that the last count_down
		 * takes its slow path (the broadcast) */
		sb_latch_wait queued;
		sb_waker noop = sb_waker_noop();
		if (round % 2) {
			sb_latch_wait_init(&queued, &x.latch);
			assert_int_equal(sb_latch_wait_poll(&queued, &noop), SB_PENDING);
		}
		pthread_t reader, counter[COUNTERS];
		assert_int_equal(pthread_create(&reader, NULL, publish_reader, &x), 0);
		for (int i = 0; i < COUNTERS; i++)
			assert_int_equal(pthread_create(&counter[i], NULL, publish_counter, &x), 0);
		for (int i = 0; i < COUNTERS; i++)
			pthread_join(counter[i], NULL);
		pthread_join(reader, NULL);
		if (round % 2)
			assert_int_equal(sb_latch_wait_poll(&queued, &noop), 0);
		assert_int_equal(sb_latch_destroy(&x.latch), 0);
		pthread_mutex_destroy(&x.index_lock);
	}
	sb_watchdog_stop(&wd);
}

/*
 * A wait group reused across rounds: add(1) before each worker starts,
 * count_down(1) when it ends; the main thread's wait completes only once
 * every worker of the round has counted down.
 */
enum { WORKERS = 4, GROUP_ROUNDS = 200 };

typedef struct group {
	sb_latch wg;
	atomic_int finished;
} group;

static void *group_worker(void *p)
{
	group *g = p;
	atomic_fetch_add(&g->finished, 1);
	CHECK(sb_latch_count_down(&g->wg, 1) == 0);
	return NULL;
}

static void a_wait_group_reused_every_round_waits_for_all_of_its_workers(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "wait group rounds");
	static group g = { SB_LATCH_INIT(0), 0 };
	for (int r = 1; r <= GROUP_ROUNDS; r++) {
		pthread_t t[WORKERS];
		for (int i = 0; i < WORKERS; i++) {
			assert_int_equal(sb_latch_add(&g.wg, 1), 0);
			assert_int_equal(pthread_create(&t[i], NULL, group_worker, &g), 0);
		}
		assert_int_equal(sb_latch_wait_blocking(&g.wg, SB_TIMEOUT_INFINITE), 0);
		assert_int_equal(atomic_load(&g.finished), r * WORKERS);
		for (int i = 0; i < WORKERS; i++)
			pthread_join(t[i], NULL);
	}
	assert_int_equal(sb_latch_destroy(&g.wg), 0);
	sb_watchdog_stop(&wd);
}

/*
 * Waits racing reopening adds and count_downs to zero on another thread:
 * whatever the interleaving, every wait that went pending is woken by a
 * zero that follows its registration.
 */
typedef struct toggler {
	sb_latch latch;
	atomic_int stop;
} toggler;

static void *add_and_count_down_loop(void *p)
{
	toggler *t = p;
	while (!atomic_load(&t->stop)) {
		CHECK(sb_latch_add(&t->latch, 2) == 0);
		CHECK(sb_latch_count_down(&t->latch, 1) == 0);
		CHECK(sb_latch_count_down(&t->latch, 1) == 0);
	}
	return NULL;
}

static void waits_racing_reopens_and_count_downs_are_all_released(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "latch reopen racing waits");
	static toggler t = { SB_LATCH_INIT(0), 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, add_and_count_down_loop, &t), 0);
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	long pending = 0;
	for (int i = 0; i < 100000; i++) {
		sb_latch_wait f;
		sb_latch_wait_init(&f, &t.latch);
		int wakes = atomic_load(&c.wakes);
		if (sb_latch_wait_poll(&f, &w) == SB_PENDING) {
			pending++;
			while (atomic_load(&c.wakes) == wakes)
				sched_yield();
			assert_int_equal(sb_latch_wait_poll(&f, &w), 0);
		}
	}
	atomic_store(&t.stop, 1);
	pthread_join(th, NULL);
	sb_watchdog_stop(&wd);
	print_message("reopen race: %ld of 100000 waits went pending\n", pending);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_latch_count(&t.latch), 0);
	assert_int_equal(sb_latch_destroy(&t.latch), 0);
}

/* A never-initialised future is bad input, not a completed one. */
static int latch_wait_poll_typed(void *f, const sb_waker *w)
{
	return sb_latch_wait_poll(f, w);
}

static void a_zeroed_future_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	sb_latch l = SB_LATCH_INIT(1);
	sb_latch_wait f;
	assert_zeroed_future_is_refused(&f, sizeof f, &sb_latch_wait_ops, latch_wait_poll_typed);
	assert_int_equal(sb_latch_try_wait(&l), -EAGAIN);
	assert_int_equal(sb_latch_destroy(&l), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(a_zeroed_future_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(a_latch_initialised_at_zero_is_open_at_once),
		cmocka_unit_test(static_and_initialised_latches_start_at_their_count),
		cmocka_unit_test(init_refuses_a_count_above_the_maximum_and_leaves_the_latch_as_it_was),
		cmocka_unit_test(count_down_to_zero_releases_every_registered_wait),
		cmocka_unit_test(count_down_of_several_at_once_opens_the_latch_when_it_takes_the_rest),
		cmocka_unit_test(count_down_past_the_count_is_refused_with_erange_and_takes_nothing),
		cmocka_unit_test(count_down_of_zero_and_add_of_zero_change_nothing),
		cmocka_unit_test(add_raises_the_count_so_that_the_release_waits_for_more_count_downs),
		cmocka_unit_test(add_past_the_maximum_is_refused_with_eoverflow_and_adds_nothing),
		cmocka_unit_test(add_on_an_open_latch_reopens_it_and_later_waits_wait_for_the_next_zero),
		cmocka_unit_test(a_wait_first_polled_after_a_count_down_to_zero_completes_without_cloning),
		cmocka_unit_test(a_wait_initialised_while_open_waits_if_the_latch_closed_before_its_poll),
		cmocka_unit_test(try_wait_is_eagain_while_the_count_is_above_zero_and_0_once_it_is_zero),
		cmocka_unit_test(repolling_a_pending_wait_with_a_new_waker_swaps_the_clone),
		cmocka_unit_test(cancel_of_a_wait_leaves_the_others_registered),
		cmocka_unit_test(a_released_wait_cancelled_before_its_poll_passes_nothing_on_and_the_others_stay_released),
		cmocka_unit_test(destroy_is_refused_while_a_wait_is_registered_and_the_latch_keeps_working),
		cmocka_unit_test(count_down_releases_a_crowd_past_one_wake_batch),
		cmocka_unit_test(a_wait_polled_while_count_down_is_still_waking_others_is_already_released),
		cmocka_unit_test(a_wait_cancelled_while_count_down_is_still_waking_others_leaves_cleanly),
		cmocka_unit_test(a_waker_that_reopens_the_latch_and_waits_again_mid_broadcast_waits_for_the_next_zero),
		cmocka_unit_test(a_wait_whose_waker_clone_counts_the_latch_down_completes_without_deadlock),
		cmocka_unit_test(repolling_a_wait_with_a_new_waker_whose_clone_opens_the_latch_does_not_deadlock),
		cmocka_unit_test(a_wake_that_counts_down_another_latch_runs_outside_the_lock),
		cmocka_unit_test(blocking_wait_times_out_while_the_count_is_above_zero),
		cmocka_unit_test(a_blocked_thread_returns_once_another_counts_the_latch_to_zero),
		cmocka_unit_test(a_waiter_that_sees_the_latch_open_sees_what_every_counter_wrote),
		cmocka_unit_test(a_wait_group_reused_every_round_waits_for_all_of_its_workers),
		cmocka_unit_test(waits_racing_reopens_and_count_downs_are_all_released),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
