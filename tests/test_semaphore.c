/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/semaphore.h>

#include "check.h"
#include "clock.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

/* Polls `f` with a counting waker, so the waker contract is checked too. */
static int poll_with(sb_semaphore_acquire *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_semaphore_acquire_poll(f, &w);
}

static int poll_noop(sb_semaphore_acquire *f)
{
	sb_waker w = sb_waker_noop();
	return sb_semaphore_acquire_poll(f, &w);
}

/*
 * The tests of the strict-FIFO contract (head-of-line order, partial grants,
 * no barging) run on SB_SEMAPHORE_INIT_FIFO semaphores; the eventually fair
 * mode's own tests follow the blocking waits.
 */

static void static_initialiser_gives_the_permits(void **state)
{
	(void)state;
	static sb_semaphore s = SB_SEMAPHORE_INIT(3);
	assert_int_equal(sb_semaphore_available(&s), 3);
	assert_int_equal(sb_semaphore_try_acquire(&s, 3), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_false(sb_semaphore_is_closed(&s));
	assert_int_equal(sb_semaphore_release(&s, 3), 0);
}

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	/* The queue, the mode and the eventually fair mode's state. */
	assert_int_equal(sizeof(sb_semaphore), 48);
	assert_true(sizeof(sb_semaphore_acquire) <= 64);
	/* A lone waiter's address goes into the word above its low 4 bits. */
	assert_int_equal(_Alignof(sb_semaphore_acquire), 16);
}

static void init_rejects_a_count_above_the_maximum(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(7);
	assert_int_equal(sb_semaphore_init(&s, SB_SEMAPHORE_MAX_PERMITS + 1), -EINVAL);
	assert_int_equal(sb_semaphore_available(&s), 7);
	assert_int_equal(sb_semaphore_init(&s, SB_SEMAPHORE_MAX_PERMITS), 0);
	assert_int_equal(sb_semaphore_available(&s), SB_SEMAPHORE_MAX_PERMITS);
}

static void try_acquire_takes_permits_until_short(void **state)
{
	(void)state;
	sb_semaphore s;
	assert_int_equal(sb_semaphore_init(&s, 5), 0);
	assert_int_equal(sb_semaphore_try_acquire(&s, 2), 0);
	assert_int_equal(sb_semaphore_try_acquire(&s, 4), -EAGAIN);
	assert_int_equal(sb_semaphore_available(&s), 3);
	assert_int_equal(sb_semaphore_try_acquire(&s, 3), 0);
	assert_int_equal(sb_semaphore_try_acquire(&s, 0), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

static void acquire_of_zero_is_ready_at_once(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire blocker, zero;
	sb_semaphore_acquire_init(&blocker, &s, 1);
	assert_int_equal(poll_noop(&blocker), SB_PENDING);
	sb_semaphore_acquire_init(&zero, &s, 0);
	assert_int_equal(poll_noop(&zero), 0);
	sb_semaphore_acquire_cancel(&blocker);
}

static void ready_acquire_completes_on_first_poll_without_cloning(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(2);
	counting_waker c;
	counting_waker_init(&c);
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, &s, 2);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	/* a completed future reports its result again and changes nothing */
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	sb_semaphore_acquire_cancel(&f);
	assert_int_equal(sb_semaphore_available(&s), 0);
}

static void waiters_are_served_in_fifo_order(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(0);
	enum { N = 8 };
	sb_semaphore_acquire f[N];
	counting_waker c[N];
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		sb_semaphore_acquire_init(&f[i], &s, 1);
		assert_int_equal(poll_with(&f[i], &c[i]), SB_PENDING);
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(sb_semaphore_release(&s, 1), 0);
		for (int j = 0; j < N; j++)
			assert_int_equal(atomic_load(&c[j].wakes), j <= i ? 1 : 0);
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
		if (i + 1 < N)
			assert_int_equal(poll_with(&f[i + 1], &c[i + 1]), SB_PENDING);
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
}

static void multi_permit_head_blocks_a_smaller_request_behind_it(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(0);
	sb_semaphore_acquire big, small;
	counting_waker cb, cs;
	counting_waker_init(&cb);
	counting_waker_init(&cs);
	sb_semaphore_acquire_init(&big, &s, 3);
	sb_semaphore_acquire_init(&small, &s, 1);
	assert_int_equal(poll_with(&big, &cb), SB_PENDING);
	assert_int_equal(poll_with(&small, &cs), SB_PENDING);

	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(poll_with(&small, &cs), SB_PENDING);
	assert_int_equal(atomic_load(&cs.wakes), 0);
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), -EAGAIN);
	assert_int_equal(sb_semaphore_available(&s), 0);

	assert_int_equal(sb_semaphore_release(&s, 2), 0);
	assert_int_equal(atomic_load(&cb.wakes), 1);
	assert_int_equal(poll_with(&big, &cb), 0);
	assert_int_equal(poll_with(&small, &cs), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 2), 0);
	assert_int_equal(poll_with(&small, &cs), 0);
	assert_int_equal(sb_semaphore_available(&s), 1);
}

static void partial_grants_accumulate_until_the_request_is_met(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(2);
	sb_semaphore_acquire f;
	counting_waker c;
	counting_waker_init(&c);
	sb_semaphore_acquire_init(&f, &s, 5);
	assert_int_equal(poll_with(&f, &c), SB_PENDING);
	assert_int_equal(sb_semaphore_available(&s), 0); /* the 2 went to the waiter */
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(poll_with(&f, &c), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 4), 0); /* 1 completes it, 3 remain */
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(sb_semaphore_available(&s), 3);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void cancel_with_nothing_granted_leaves_the_count_exact(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire a, b;
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	sb_semaphore_acquire_init(&a, &s, 2);
	sb_semaphore_acquire_init(&b, &s, 1);
	assert_int_equal(poll_with(&a, &ca), SB_PENDING);
	assert_int_equal(poll_with(&b, &cb), SB_PENDING);
	sb_semaphore_acquire_cancel(&a);
	assert_int_equal(atomic_load(&ca.drops), 1);
	assert_int_equal(atomic_load(&ca.live), 0);
	assert_int_equal(atomic_load(&cb.wakes), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(poll_with(&b, &cb), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

static void cancel_after_partial_grant_passes_permits_on(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(0);
	sb_semaphore_acquire a, b, c;
	counting_waker ca, cb, cc;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	counting_waker_init(&cc);
	sb_semaphore_acquire_init(&a, &s, 5);
	sb_semaphore_acquire_init(&b, &s, 2);
	sb_semaphore_acquire_init(&c, &s, 2);
	assert_int_equal(poll_with(&a, &ca), SB_PENDING);
	assert_int_equal(poll_with(&b, &cb), SB_PENDING);
	assert_int_equal(poll_with(&c, &cc), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 3), 0); /* a holds 3 of 5 */
	sb_semaphore_acquire_cancel(&a);                  /* b gets 2, c gets 1 of 2 */
	assert_int_equal(atomic_load(&cb.wakes), 1);
	assert_int_equal(atomic_load(&cc.wakes), 0);
	assert_int_equal(poll_with(&b, &cb), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(poll_with(&c, &cc), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live) + atomic_load(&cc.live), 0);
}

static void cancel_after_partial_grant_with_nobody_behind_returns_permits_to_the_count(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(1);
	sb_semaphore_acquire a;
	sb_semaphore_acquire_init(&a, &s, 4);
	assert_int_equal(poll_noop(&a), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 2), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	sb_semaphore_acquire_cancel(&a);
	assert_int_equal(sb_semaphore_available(&s), 3);
	assert_int_equal(sb_semaphore_try_acquire(&s, 3), 0);
}

static void cancel_after_full_grant_passes_permits_to_the_next_waiter(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(0);
	sb_semaphore_acquire a, b;
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	sb_semaphore_acquire_init(&a, &s, 2);
	sb_semaphore_acquire_init(&b, &s, 3);
	assert_int_equal(poll_with(&a, &ca), SB_PENDING);
	assert_int_equal(poll_with(&b, &cb), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 3), 0); /* a granted fully, b holds 1 */
	assert_int_equal(atomic_load(&ca.wakes), 1);
	sb_semaphore_acquire_cancel(&a); /* granted, never observed: 2 go to b */
	assert_int_equal(atomic_load(&cb.wakes), 1);
	assert_int_equal(poll_with(&b, &cb), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(sb_semaphore_release(&s, 3), 0);
	assert_int_equal(sb_semaphore_available(&s), 3);
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live), 0);
}

static void cancel_after_full_grant_with_nobody_behind_restores_the_count(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(0);
	sb_semaphore_acquire a;
	sb_semaphore_acquire_init(&a, &s, 2);
	assert_int_equal(poll_noop(&a), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 2), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	sb_semaphore_acquire_cancel(&a);
	assert_int_equal(sb_semaphore_available(&s), 2);
}

/*
 * acquire(2) with one permit there takes it and waits, alone, for one more
 * (the lone-waiter path): cancelling it returns the permit it took.
 */
static void a_lone_waiter_that_took_a_permit_returns_it_when_cancelled(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(1);
	counting_waker c;
	counting_waker_init(&c);
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, &s, 2);
	assert_int_equal(poll_with(&f, &c), SB_PENDING);
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), -EAGAIN);
	assert_int_equal(sb_semaphore_destroy(&s), -EBUSY);
	sb_semaphore_acquire_cancel(&f);
	assert_int_equal(sb_semaphore_available(&s), 1);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(poll_with(&f, &c), -ECANCELED);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/* The lone waiter is first in line when others queue behind it. */
static void a_lone_waiter_stays_first_when_others_queue_behind_it(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	counting_waker c[3];
	sb_semaphore_acquire f[3];
	for (int i = 0; i < 3; i++) {
		counting_waker_init(&c[i]);
		sb_semaphore_acquire_init(&f[i], &s, i == 1 ? 2 : 1);
		assert_int_equal(poll_with(&f[i], &c[i]), SB_PENDING);
	}
	assert_int_equal(sb_semaphore_release(&s, 2), 0); /* 1 to the first, 1 of 2 to the second */
	assert_int_equal(atomic_load(&c[0].wakes), 1);
	assert_int_equal(atomic_load(&c[1].wakes), 0);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_semaphore_release(&s, 2), 0); /* the second's last, then the third */
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(poll_with(&f[2], &c[2]), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
}

static void cancel_of_a_completed_or_unpolled_future_changes_nothing(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(3);
	sb_semaphore_acquire done, idle;
	sb_semaphore_acquire_init(&done, &s, 2);
	assert_int_equal(poll_noop(&done), 0);
	sb_semaphore_acquire_cancel(&done);
	sb_semaphore_acquire_cancel(&done);
	assert_int_equal(sb_semaphore_available(&s), 1);
	sb_semaphore_acquire_init(&idle, &s, 1);
	sb_semaphore_acquire_cancel(&idle);
	assert_int_equal(sb_semaphore_available(&s), 1);
	assert_int_equal(poll_noop(&idle), -ECANCELED);
	assert_int_equal(sb_semaphore_available(&s), 1);
}

static void cancel_twice_is_harmless(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire a;
	counting_waker c;
	counting_waker_init(&c);
	sb_semaphore_acquire_init(&a, &s, 1);
	assert_int_equal(poll_with(&a, &c), SB_PENDING);
	sb_semaphore_acquire_cancel(&a);
	sb_semaphore_acquire_cancel(&a);
	assert_int_equal(atomic_load(&c.drops), 1);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(sb_semaphore_available(&s), 1);
}

static void try_acquire_does_not_barge_past_a_queued_waiter(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(1);
	sb_semaphore_acquire a;
	sb_semaphore_acquire_init(&a, &s, 3);
	assert_int_equal(poll_noop(&a), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	/* two permits exist, held by the waiter; nobody else can take one */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), -EAGAIN);
	sb_semaphore_acquire b;
	sb_semaphore_acquire_init(&b, &s, 1);
	assert_int_equal(poll_noop(&b), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 2), 0); /* a done, b gets 1 */
	assert_int_equal(poll_noop(&a), 0);
	assert_int_equal(poll_noop(&b), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
}

static void close_wakes_all_waiters_with_the_error_and_later_acquires_fail(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(1);
	enum { N = 40 }; /* more than one wake batch */
	sb_semaphore_acquire f[N];
	counting_waker c[N];
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		sb_semaphore_acquire_init(&f[i], &s, 2);
		assert_int_equal(poll_with(&f[i], &c[i]), SB_PENDING);
	}
	assert_int_equal(sb_semaphore_available(&s), 0); /* f[0] holds 1 of 2 */
	sb_semaphore_close(&s);
	assert_true(sb_semaphore_is_closed(&s));
	for (int i = 0; i < N; i++) {
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(atomic_load(&c[i].live), 0);
		assert_int_equal(poll_with(&f[i], &c[i]), -ESHUTDOWN);
	}
	/* the head's partial grant went back to the counter */
	assert_int_equal(sb_semaphore_available(&s), 1);
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), -ESHUTDOWN);
	sb_semaphore_acquire late;
	sb_semaphore_acquire_init(&late, &s, 1);
	assert_int_equal(poll_noop(&late), -ESHUTDOWN);
	assert_int_equal(sb_semaphore_acquire_blocking(&s, 1, SB_TIMEOUT_INFINITE), -ESHUTDOWN);
	/* holders can still give permits back; close is idempotent */
	assert_int_equal(sb_semaphore_release(&s, 2), 0);
	assert_int_equal(sb_semaphore_available(&s), 3);
	sb_semaphore_close(&s);
	assert_int_equal(sb_semaphore_available(&s), 3);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

static void release_overflow_returns_the_error_and_changes_nothing(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(SB_SEMAPHORE_MAX_PERMITS - 1);
	assert_int_equal(sb_semaphore_release(&s, 2), -EOVERFLOW);
	assert_int_equal(sb_semaphore_available(&s), SB_SEMAPHORE_MAX_PERMITS - 1);
	assert_int_equal(sb_semaphore_release(&s, SIZE_MAX), -EOVERFLOW);
	assert_int_equal(sb_semaphore_release(&s, SB_SEMAPHORE_MAX_PERMITS + 1), -EOVERFLOW);
	assert_int_equal(sb_semaphore_available(&s), SB_SEMAPHORE_MAX_PERMITS - 1);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(sb_semaphore_available(&s), SB_SEMAPHORE_MAX_PERMITS);
	assert_int_equal(sb_semaphore_release(&s, 1), -EOVERFLOW);
	assert_int_equal(sb_semaphore_available(&s), SB_SEMAPHORE_MAX_PERMITS);
	assert_false(sb_semaphore_is_closed(&s));
}

/* The inline release takes counts and releases up to about half the maximum
 * each (semaphore.h); past either, the slow path adds them, up to the exact
 * bound. */
static void releases_either_side_of_the_inline_bound_reach_the_maximum_exactly(void **state)
{
	(void)state;
	const size_t half = SB_SEMAPHORE_MAX_PERMITS >> 1;
	sb_semaphore inline_path = SB_SEMAPHORE_INIT(half); /* both at the inline bound */
	assert_int_equal(sb_semaphore_release(&inline_path, half + 2), -EOVERFLOW);
	assert_int_equal(sb_semaphore_available(&inline_path), half);
	assert_int_equal(sb_semaphore_release(&inline_path, half + 1), 0);
	assert_int_equal(sb_semaphore_available(&inline_path), SB_SEMAPHORE_MAX_PERMITS);
	assert_int_equal(sb_semaphore_release(&inline_path, 1), -EOVERFLOW);

	sb_semaphore big_count = SB_SEMAPHORE_INIT(half + 1); /* a count past it */
	assert_int_equal(sb_semaphore_release(&big_count, half), 0);
	assert_int_equal(sb_semaphore_available(&big_count), SB_SEMAPHORE_MAX_PERMITS);

	sb_semaphore big_release = SB_SEMAPHORE_INIT(half - 1); /* a release past it */
	assert_int_equal(sb_semaphore_release(&big_release, half + 2), 0);
	assert_int_equal(sb_semaphore_available(&big_release), SB_SEMAPHORE_MAX_PERMITS);
	assert_int_equal(sb_semaphore_release(&big_release, 1), -EOVERFLOW);
}

static void release_overflow_with_a_waiter_queued_changes_nothing(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire a;
	counting_waker c;
	counting_waker_init(&c);
	sb_semaphore_acquire_init(&a, &s, 2);
	assert_int_equal(poll_with(&a, &c), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, SIZE_MAX), -EOVERFLOW);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(poll_with(&a, &c), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 2), 0);
	assert_int_equal(poll_with(&a, &c), 0);
}

/* Found by the fuzzer: cancelled grants used to wrap the counter. */
static void returned_grants_saturate_the_counter_instead_of_wrapping(void **state)
{
	(void)state;
	const size_t max = SB_SEMAPHORE_MAX_PERMITS;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(0);
	sb_semaphore_acquire a, b;
	sb_semaphore_acquire_init(&a, &s, max);
	sb_semaphore_acquire_init(&b, &s, max);
	assert_int_equal(poll_noop(&a), SB_PENDING);
	assert_int_equal(poll_noop(&b), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, max), 0); /* a granted */
	assert_int_equal(sb_semaphore_release(&s, max), 0); /* b granted */
	assert_int_equal(sb_semaphore_release(&s, max), 0); /* counter: max */
	sb_semaphore_acquire_cancel(&a);                    /* counter: 2 max */
	assert_int_equal(sb_semaphore_available(&s), 2 * max);
	sb_semaphore_acquire_cancel(&b);                    /* saturates */
	assert_int_equal(sb_semaphore_available(&s), 2 * max + 1);
	assert_int_equal(sb_semaphore_release(&s, 1), -EOVERFLOW);
	assert_int_equal(sb_semaphore_try_acquire(&s, max), 0);
	assert_int_equal(sb_semaphore_available(&s), max + 1);
}

static void oversize_acquire_fails_cleanly(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(4);
	counting_waker c;
	counting_waker_init(&c);
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, &s, SB_SEMAPHORE_MAX_PERMITS + 1);
	assert_int_equal(poll_with(&f, &c), -EINVAL);
	assert_int_equal(atomic_load(&c.clones), 0);
	sb_semaphore_acquire_cancel(&f);
	assert_int_equal(sb_semaphore_try_acquire(&s, SIZE_MAX), -EINVAL);
	assert_int_equal(sb_semaphore_acquire_blocking(&s, SIZE_MAX, 0), -EINVAL);
	assert_int_equal(sb_semaphore_available(&s), 4);
	assert_int_equal(sb_semaphore_try_acquire(&s, 4), 0);
}

static void destroy_with_waiters_reports_busy_and_keeps_the_semaphore_usable(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire a;
	sb_semaphore_acquire_init(&a, &s, 1);
	assert_int_equal(poll_noop(&a), SB_PENDING);
	assert_int_equal(sb_semaphore_destroy(&s), -EBUSY);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(poll_noop(&a), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

static void repolling_with_the_same_waker_does_not_clone_again(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	counting_waker c;
	counting_waker_init(&c);
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, &s, 1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(poll_with(&f, &c), SB_PENDING);
	assert_int_equal(atomic_load(&c.clones), 1);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(atomic_load(&c.clones), 1);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(atomic_load(&c.drops), 0);
}

static void a_different_waker_replaces_the_old_one_which_is_dropped(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	counting_waker first, second;
	counting_waker_init(&first);
	counting_waker_init(&second);
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, &s, 1);
	assert_int_equal(poll_with(&f, &first), SB_PENDING);
	assert_int_equal(poll_with(&f, &second), SB_PENDING);
	assert_int_equal(atomic_load(&first.drops), 1);
	assert_int_equal(atomic_load(&first.live), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(atomic_load(&first.wakes), 0);
	assert_int_equal(atomic_load(&second.wakes), 1);
	assert_int_equal(atomic_load(&second.live), 0);
	assert_int_equal(poll_with(&f, &second), 0);
}

/* --- waker callbacks that re-enter the semaphore --- */

static void release_one_permit(void *sem)
{
	assert_int_equal(sb_semaphore_release(sem, 1), 0);
}

/*
 * A waker may re-enter the library from any of its callbacks, clone
 * included: every registration clones before it takes the queue lock.
 */
static void a_queued_acquire_whose_waker_clone_releases_a_permit_does_not_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on the queued path");
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(0);
	counting_waker first, second;
	counting_waker_init(&first);
	counting_waker_init(&second);
	second.on_clone = release_one_permit;
	second.hook_arg = &s;
	sb_semaphore_acquire a, b;
	sb_semaphore_acquire_init(&a, &s, 1);
	sb_semaphore_acquire_init(&b, &s, 2);
	assert_int_equal(poll_with(&a, &first), SB_PENDING);
	/* b queues behind a; its clone's release pays a first */
	assert_int_equal(poll_with(&b, &second), SB_PENDING);
	assert_int_equal(atomic_load(&first.wakes), 1);
	assert_int_equal(poll_with(&a, &first), 0);
	assert_int_equal(sb_semaphore_release(&s, 2), 0);
	assert_int_equal(atomic_load(&second.wakes), 1);
	assert_int_equal(poll_with(&b, &second), 0);
	assert_int_equal(atomic_load(&first.live) + atomic_load(&second.live), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	sb_watchdog_stop(&wd);
}

static void repolling_with_a_new_waker_whose_clone_releases_a_permit_does_not_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on re-poll");
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	counting_waker old, fresh;
	counting_waker_init(&old);
	counting_waker_init(&fresh);
	fresh.on_clone = release_one_permit;
	fresh.hook_arg = &s;
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, &s, 2);
	assert_int_equal(poll_with(&f, &old), SB_PENDING);
	/* the clone's release grants one of the two; the new waker stays registered */
	assert_int_equal(poll_with(&f, &fresh), SB_PENDING);
	assert_int_equal(atomic_load(&old.drops) + atomic_load(&old.wakes), 1);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(atomic_load(&fresh.wakes), 1);
	assert_int_equal(poll_with(&f, &fresh), 0);
	assert_int_equal(atomic_load(&old.live) + atomic_load(&fresh.live), 0);
	sb_watchdog_stop(&wd);
}

/* --- blocking waits --- */

static void blocking_acquire_returns_at_once_when_permits_are_there(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(2);
	assert_int_equal(sb_semaphore_acquire_blocking(&s, 2, SB_TIMEOUT_INFINITE), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
}

static void blocking_acquire_times_out_and_holds_nothing(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(1);
	assert_int_equal(sb_semaphore_acquire_blocking(&s, 2, 0), -ETIMEDOUT);
	assert_int_equal(sb_semaphore_acquire_blocking(&s, 2, 2000000), -ETIMEDOUT);
	assert_int_equal(sb_semaphore_available(&s), 1);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/*
 * Both modes: timeouts shorter than the fair mode's spin before queueing
 * (src/semaphore.c), longer than it (it spins, then sleeps), and none at
 * all, each leaving the count as it was.
 */
static void check_blocking_acquire_times_out_around_the_spin(sb_semaphore *s)
{
	assert_int_equal(sb_semaphore_acquire_blocking(s, 2, 0), -ETIMEDOUT);
	assert_int_equal(sb_semaphore_acquire_blocking(s, 2, 2000), -ETIMEDOUT);
	assert_int_equal(sb_semaphore_acquire_blocking(s, 2, 20000), -ETIMEDOUT);
	assert_int_equal(sb_semaphore_acquire_blocking(s, 2, 1000000), -ETIMEDOUT);
	assert_int_equal(sb_semaphore_available(s), 1);
	assert_int_equal(sb_semaphore_destroy(s), 0);
}

static void blocking_acquire_times_out_before_and_after_its_spin_and_holds_nothing(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(1);
	check_blocking_acquire_times_out_around_the_spin(&s);
}

static void strict_blocking_acquire_times_out_and_holds_nothing(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(1);
	check_blocking_acquire_times_out_around_the_spin(&s);
}

/*
 * The counter may hold more than the maximum (returned grants saturate):
 * a blocking acquire of more than the maximum fails all the same, its spin
 * included, and takes nothing.
 */
static void a_blocking_acquire_above_the_maximum_fails_when_the_counter_holds_more(void **state)
{
	(void)state;
	const size_t max = SB_SEMAPHORE_MAX_PERMITS;
	sb_semaphore s = SB_SEMAPHORE_INIT(max - 1);
	sb_semaphore_acquire f;
	sb_semaphore_acquire_init(&f, &s, max);
	assert_int_equal(poll_noop(&f), SB_PENDING);       /* lone: took max - 1 */
	assert_int_equal(sb_semaphore_release(&s, max), 0); /* granted; counter max - 1 */
	sb_semaphore_acquire_cancel(&f);                    /* returned: 2 max - 1 */
	assert_int_equal(sb_semaphore_available(&s), 2 * max - 1);
	assert_int_equal(sb_semaphore_acquire_blocking(&s, max + 1, 20000), -EINVAL);
	assert_int_equal(sb_semaphore_available(&s), 2 * max - 1);
}

typedef struct blocking_arg {
	sb_semaphore *sem;
	atomic_int started;
	int result;
} blocking_arg;

static void *blocking_acquirer(void *p)
{
	blocking_arg *a = p;
	atomic_store(&a->started, 1);
	a->result = sb_semaphore_acquire_blocking(a->sem, 3, SB_TIMEOUT_INFINITE);
	return NULL;
}

/* Both modes: the thread must wait for all three permits, released one at a time. */
static void check_blocking_acquire_is_woken_by_releases(sb_semaphore *s)
{
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "blocking acquire woken by release");
	blocking_arg a = { .sem = s };
	atomic_init(&a.started, 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, blocking_acquirer, &a), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sb_semaphore_release(s, 1), 0);
	pthread_join(t, NULL);
	assert_int_equal(a.result, 0);
	assert_int_equal(sb_semaphore_available(s), 0);
	assert_int_equal(sb_semaphore_destroy(s), 0);
	sb_watchdog_stop(&wd);
}

static void blocking_acquire_is_woken_by_a_release_from_another_thread(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	check_blocking_acquire_is_woken_by_releases(&s);
}

static void strict_blocking_acquire_is_woken_by_a_release_from_another_thread(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(0);
	check_blocking_acquire_is_woken_by_releases(&s);
}

/* Both modes: close wakes a blocked acquirer with the error. */
static void check_blocking_acquire_is_woken_by_close(sb_semaphore *s)
{
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "blocking acquire woken by close");
	blocking_arg a = { .sem = s };
	atomic_init(&a.started, 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, blocking_acquirer, &a), 0);
	/* white box: bit 2 of the state word means "someone is queued" */
	while (!(atomic_load(&s->q.state) & 4))
		sched_yield();
	sb_semaphore_close(s);
	pthread_join(t, NULL);
	assert_int_equal(a.result, -ESHUTDOWN);
	sb_watchdog_stop(&wd);
}

static void blocking_acquire_is_woken_by_close(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	check_blocking_acquire_is_woken_by_close(&s);
}

static void strict_blocking_acquire_is_woken_by_close(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT_FIFO(0);
	check_blocking_acquire_is_woken_by_close(&s);
}

/* --- eventually fair mode (the default) --- */

/*
 * The library's clock, moved by hand (src/clock.h), installed for every test
 * (main), so that the bound is crossed when a test says and never because
 * the test was descheduled.
 */
static uint64_t fake_now = 1000;
static uint64_t fake_clock(void)
{
	return fake_now;
}

/* How often a release compares a timed queue with the bound (src/fairness.h). */
enum { RELEASES_PER_CHECK = 16 };

/* Queues `n` acquires of `permits[i]` on `s`, in order, each pending. */
static void queue_acquires(sb_semaphore *s, int n, const size_t *permits, sb_semaphore_acquire *f,
			   counting_waker *c)
{
	for (int i = 0; i < n; i++) {
		counting_waker_init(&c[i]);
		sb_semaphore_acquire_init(&f[i], s, permits[i]);
		assert_int_equal(poll_with(&f[i], &c[i]), SB_PENDING);
	}
}

/*
 * A blocking acquire behind `n` queued waiters (1: a lone one, whose
 * release is the next, and its spin stops there; 2: a queue that opens no
 * budget, so it spins and then queues): its timeout leaves the first waiter
 * first, woken by the next release, and the second untouched.
 */
static void check_a_blocking_acquire_that_times_out_behind_waiters_leaves_them_first(int n)
{
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	const size_t ones[2] = { 1, 1 };
	queue_acquires(&s, n, ones, f, c);
	assert_int_equal(sb_semaphore_acquire_blocking(&s, 1, 20000), -ETIMEDOUT);
	assert_int_equal(atomic_load(&c[0].wakes), 0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(sb_semaphore_release(&s, 1), 0);
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		if (i + 1 < n)
			assert_int_equal(atomic_load(&c[i + 1].wakes), 0);
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
		assert_int_equal(atomic_load(&c[i].live), 0);
	}
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(sb_semaphore_release(&s, (size_t)n), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

static void a_blocking_acquire_that_times_out_behind_a_lone_waiter_leaves_it_first(void **state)
{
	(void)state;
	check_a_blocking_acquire_that_times_out_behind_waiters_leaves_them_first(1);
}

static void a_blocking_acquire_that_times_out_behind_a_queue_leaves_it_in_order(void **state)
{
	(void)state;
	check_a_blocking_acquire_that_times_out_behind_waiters_leaves_them_first(2);
}

static void init_functions_choose_the_mode(void **state)
{
	(void)state;
	sb_semaphore s;
	assert_int_equal(sb_semaphore_init_fifo(&s, 2), 0);
	assert_int_equal(s.mode, SB_SEMAPHORE_FIFO);
	assert_int_equal(sb_semaphore_available(&s), 2);
	assert_int_equal(sb_semaphore_init(&s, 2), 0);
	assert_int_equal(s.mode, 0);
	assert_int_equal(sb_semaphore_init_fifo(&s, SB_SEMAPHORE_MAX_PERMITS + 1), -EINVAL);
	assert_int_equal(s.mode, 0); /* unchanged */
	static sb_semaphore fifo = SB_SEMAPHORE_INIT_FIFO(3);
	assert_int_equal(fifo.mode, SB_SEMAPHORE_FIFO);
	assert_int_equal(sb_semaphore_available(&fifo), 3);
}

/*
 * Within the bound, a newcomer takes a released permit past the woken head
 * (try_acquire and a first poll alike); the head keeps its place and is
 * woken again by the next release.
 */
static void a_newcomer_takes_free_permits_past_a_woken_head_within_the_bound(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	const size_t ones[2] = { 1, 1 };
	queue_acquires(&s, 2, ones, f, c);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(atomic_load(&c[0].wakes), 1); /* woken, not handed the permit */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0); /* a barger */
	assert_int_equal(poll_with(&f[0], &c[0]), SB_PENDING); /* lost: still first */
	fake_now += SB_FAIRNESS_BOUND_NS; /* at the bound, not past it */
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(atomic_load(&c[0].wakes), 2);
	sb_semaphore_acquire late;
	sb_semaphore_acquire_init(&late, &s, 1);
	assert_int_equal(poll_noop(&late), 0); /* a first poll barges too */
	assert_int_equal(poll_with(&f[0], &c[0]), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* the barger's */
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* the late one's */
	assert_int_equal(atomic_load(&c[1].wakes), 0); /* only the head is woken */
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(atomic_load(&c[1].wakes), 1); /* the permit left wakes the next */
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(sb_semaphore_release(&s, 2), 0);
	assert_int_equal(sb_semaphore_available(&s), 2);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/*
 * Past the bound, releases hand their permits to the queue in order, to
 * every waiter queued when the phase began, and nobody barges meanwhile; a
 * waiter that queues during the phase is not covered, and is woken (not
 * handed the permit) after it.
 */
static void past_the_bound_releases_hand_permits_to_the_queue_in_order(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[3];
	counting_waker c[3];
	const size_t ones[3] = { 1, 1, 1 };
	queue_acquires(&s, 3, ones, f, c);
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* wakes f[0] */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0); /* passes the queue: timed */
	fake_now += SB_FAIRNESS_BOUND_NS + 1;
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* the phase: f[0] is handed it */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), -EAGAIN);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	counting_waker cl;
	counting_waker_init(&cl);
	sb_semaphore_acquire late;
	sb_semaphore_acquire_init(&late, &s, 1);
	assert_int_equal(poll_with(&late, &cl), SB_PENDING); /* queues during the phase */
	for (int i = 1; i < 3; i++) {
		assert_int_equal(sb_semaphore_release(&s, 1), 0);
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(sb_semaphore_try_acquire(&s, 1), -EAGAIN); /* handed over */
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
	}
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* the phase is over */
	assert_int_equal(atomic_load(&cl.wakes), 1);
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0); /* free: a barger takes it */
	assert_int_equal(poll_with(&late, &cl), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(poll_with(&late, &cl), 0);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live) + atomic_load(&c[2].live) +
				 atomic_load(&cl.live),
			 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/*
 * Releases and bargers that go by a woken head without the lock (the
 * budget, src/semaphore.c) move the bound's check no more than locked ones:
 * the release that compares the stamp is the 16th after the last check,
 * however many of those were let by, as when every release took the lock.
 */
static void releases_let_by_a_woken_head_keep_the_bound_checked_every_sixteenth(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	const size_t ones[2] = { 1, 1 };
	queue_acquires(&s, 2, ones, f, c);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);     /* wakes f[0] */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0); /* passes it: timed */
	assert_int_equal(sb_semaphore_release(&s, 1), 0);     /* the first check */
	assert_int_equal(sb_semaphore_release(&s, 1), 0);     /* the second release since */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0);
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0);
	assert_int_equal(poll_with(&f[0], &c[0]), SB_PENDING); /* passed: re-armed */
	fake_now += SB_FAIRNESS_BOUND_NS + 1;
	int releases = 1; /* since the first check */
	for (;;) {
		assert_true(releases < RELEASES_PER_CHECK);
		assert_int_equal(sb_semaphore_release(&s, 1), 0);
		releases++;
		if (sb_semaphore_try_acquire(&s, 1) == -EAGAIN)
			break; /* the check: a phase, handed to f[0] */
	}
	assert_int_equal(releases, RELEASES_PER_CHECK);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_semaphore_release(&s, RELEASES_PER_CHECK + 2), 0); /* 17 bargers', f[0]'s */
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(sb_semaphore_available(&s), RELEASES_PER_CHECK + 2);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/*
 * A woken head whose task never runs again (its thread descheduled) does
 * not let bargers go on past the bound: the releases notice the bound
 * themselves (the 16th after the last check at the latest) and start the
 * phase, which hands the head its permit without a poll or a second wake.
 */
static void a_woken_head_that_never_runs_is_handed_its_permit_once_past_the_bound(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	const size_t ones[2] = { 1, 1 };
	queue_acquires(&s, 2, ones, f, c);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);     /* wakes f[0] */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0); /* passes it: timed */
	int barged = 1;
	for (int i = 0; i < 40; i++) {
		assert_int_equal(sb_semaphore_release(&s, 1), 0);
		assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0);
		barged++;
		fake_now += SB_FAIRNESS_BOUND_NS / 100; /* 40 of them: inside the bound */
	}
	fake_now += SB_FAIRNESS_BOUND_NS;
	int releases = 0;
	for (;;) {
		assert_true(releases < RELEASES_PER_CHECK);
		assert_int_equal(sb_semaphore_release(&s, 1), 0);
		releases++;
		if (sb_semaphore_try_acquire(&s, 1) == -EAGAIN)
			break; /* the phase: handed to f[0] */
		barged++;
	}
	assert_int_equal(atomic_load(&c[0].wakes), 1); /* the first wake only */
	assert_int_equal(atomic_load(&c[1].wakes), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* the phase goes on to f[1] */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), -EAGAIN);
	assert_int_equal(atomic_load(&c[1].wakes), 1);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_semaphore_release(&s, (size_t)barged + 2), 0);
	assert_int_equal(sb_semaphore_available(&s), (size_t)barged + 2);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/*
 * A waiter that queued during a phase waited through part of it: the
 * phase's last handoff times it half a bound back (src/fairness.h), so
 * bargers pass it for half a bound after the phase, not a whole one.
 */
static void a_waiter_that_queued_during_a_phase_is_served_half_a_bound_after_it(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	const size_t ones[2] = { 1, 1 };
	queue_acquires(&s, 2, ones, f, c);
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* wakes f[0] */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0); /* passes it: timed */
	fake_now += SB_FAIRNESS_BOUND_NS + 1;
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* the phase: f[0] */
	counting_waker cl;
	counting_waker_init(&cl);
	sb_semaphore_acquire late;
	sb_semaphore_acquire_init(&late, &s, 1);
	assert_int_equal(poll_with(&late, &cl), SB_PENDING); /* queues during it */
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* f[1]: the phase ends */
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	fake_now += SB_FAIRNESS_BOUND_NS / 2 + 1;
	int releases = 0;
	for (;;) {
		assert_true(releases < RELEASES_PER_CHECK);
		assert_int_equal(sb_semaphore_release(&s, 1), 0);
		releases++;
		if (sb_semaphore_try_acquire(&s, 1) == -EAGAIN)
			break; /* handed to `late` */
	}
	assert_int_equal(poll_with(&late, &cl), 0);
	assert_int_equal(sb_semaphore_release(&s, 4), 0); /* 1 barger, f[0], f[1], late */
	assert_int_equal(sb_semaphore_available(&s), 4);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live) + atomic_load(&cl.live), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/*
 * A queue served in order is never timed: releases wake one head after the
 * other and each takes its permit itself, however long they all wait.
 */
static void waiters_that_no_barger_passes_are_woken_in_order_however_long_they_wait(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[3];
	counting_waker c[3];
	const size_t ones[3] = { 1, 1, 1 };
	queue_acquires(&s, 3, ones, f, c);
	for (int i = 0; i < 3; i++) {
		fake_now += 10 * (uint64_t)SB_FAIRNESS_BOUND_NS;
		assert_int_equal(sb_semaphore_release(&s, 1), 0);
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		if (i + 1 < 3)
			assert_int_equal(atomic_load(&c[i + 1].wakes), 0);
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
	}
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/*
 * A 3-permit head against a stream of 1-permit acquirers that take every
 * released permit: within the bound they pass it and it is never woken;
 * once it is past the bound, a release within the next 16 starts a phase,
 * the releases gather for it as partial grants while the stream gets
 * nothing, and the third completes it.
 */
static void a_multi_permit_head_past_the_bound_gathers_releases_against_a_stream_of_small_acquires(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire big;
	counting_waker cb;
	const size_t three = 3;
	queue_acquires(&s, 1, &three, &big, &cb);
	for (int i = 0; i < 40; i++) {
		assert_int_equal(sb_semaphore_release(&s, 1), 0);
		assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0);
		fake_now += SB_FAIRNESS_BOUND_NS / 100; /* 40 of them: inside the bound */
	}
	assert_int_equal(atomic_load(&cb.wakes), 0);
	fake_now += SB_FAIRNESS_BOUND_NS;
	int releases = 0;
	for (;;) {
		assert_true(releases < RELEASES_PER_CHECK);
		assert_int_equal(sb_semaphore_release(&s, 1), 0);
		releases++;
		if (sb_semaphore_try_acquire(&s, 1) == -EAGAIN)
			break; /* that release went to the head */
	}
	assert_int_equal(atomic_load(&cb.wakes), 0); /* 1 of 3 */
	assert_int_equal(poll_with(&big, &cb), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), -EAGAIN);
	assert_int_equal(atomic_load(&cb.wakes), 0); /* 2 of 3 */
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(atomic_load(&cb.wakes), 1);
	assert_int_equal(poll_with(&big, &cb), 0);
	assert_int_equal(atomic_load(&cb.live), 0);
	/* the phase ended with the queue: the stream runs again */
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0);
	assert_int_equal(sb_semaphore_release(&s, 3), 0);
	assert_int_equal(sb_semaphore_available(&s), 3);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/*
 * 0 means "not timed" (src/fairness.h): a pass when the clock reads 0 still
 * times the queue, so the bound runs from it.
 */
static void a_queue_passed_when_the_clock_reads_zero_is_timed_all_the_same(void **state)
{
	(void)state;
	uint64_t saved = fake_now;
	fake_now = 0;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	const size_t ones[2] = { 1, 1 };
	queue_acquires(&s, 2, ones, f, c);
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* wakes f[0] */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0); /* passes it at 0 */
	fake_now = SB_FAIRNESS_BOUND_NS + 2; /* (stamped 1: past the bound from there) */
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* the phase: f[0] handed it */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), -EAGAIN);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_semaphore_release(&s, 3), 0);
	assert_int_equal(sb_semaphore_available(&s), 3);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
	fake_now = saved;
}

/*
 * A woken head owed more than the phase has freed yet gathers the permits
 * where bargers could take them outside a phase: during the phase nobody
 * takes them, and the release that covers it completes it (no second wake:
 * its waker was spent by the first).
 */
static void during_a_phase_no_barger_takes_the_permits_a_woken_head_gathers(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	const size_t permits[2] = { 3, 1 };
	queue_acquires(&s, 2, permits, f, c);
	assert_int_equal(sb_semaphore_release(&s, 3), 0); /* wakes f[0] */
	assert_int_equal(atomic_load(&c[0].wakes), 1);
	assert_int_equal(sb_semaphore_try_acquire(&s, 2), 0); /* leaves it short: timed */
	fake_now += SB_FAIRNESS_BOUND_NS + 1;
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* the phase: 2 of 3 gathered */
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), -EAGAIN);
	sb_semaphore_acquire late;
	sb_semaphore_acquire_init(&late, &s, 1);
	assert_int_equal(poll_noop(&late), SB_PENDING); /* a first poll neither */
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* covers it */
	assert_int_equal(atomic_load(&c[0].wakes), 1);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0); /* the phase goes on to f[1] */
	assert_int_equal(atomic_load(&c[1].wakes), 1);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	sb_semaphore_acquire_cancel(&late);
	assert_int_equal(sb_semaphore_release(&s, 2 + 3 + 1), 0);
	assert_int_equal(sb_semaphore_available(&s), 6);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/*
 * Starts a phase with `big` (3 permits, then 1 granted) at the head and
 * `small` (1) behind it: returns with the phase running.
 */
static void phase_with_a_partly_granted_head(sb_semaphore *s, sb_semaphore_acquire *f, counting_waker *c)
{
	const size_t permits[2] = { 3, 1 };
	queue_acquires(s, 2, permits, f, c);
	assert_int_equal(sb_semaphore_release(s, 1), 0);
	assert_int_equal(sb_semaphore_try_acquire(s, 1), 0); /* passes the head: timed */
	fake_now += SB_FAIRNESS_BOUND_NS + 1;
	assert_int_equal(sb_semaphore_release(s, 1), 0); /* the phase: 1 of 3 */
	assert_int_equal(sb_semaphore_try_acquire(s, 1), -EAGAIN);
	assert_int_equal(atomic_load(&c[0].wakes) + atomic_load(&c[1].wakes), 0);
}

static void fair_cancel_after_a_partial_grant_passes_the_permits_on(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	phase_with_a_partly_granted_head(&s, f, c);
	sb_semaphore_acquire_cancel(&f[0]); /* its 1 goes to small, in the phase */
	assert_int_equal(atomic_load(&c[0].drops), 1);
	assert_int_equal(atomic_load(&c[1].wakes), 1);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(sb_semaphore_available(&s), 1);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

static void fair_cancel_after_a_full_grant_passes_the_permits_on(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	phase_with_a_partly_granted_head(&s, f, c);
	assert_int_equal(sb_semaphore_release(&s, 2), 0); /* big complete */
	assert_int_equal(atomic_load(&c[0].wakes), 1);
	assert_int_equal(atomic_load(&c[1].wakes), 0);
	sb_semaphore_acquire_cancel(&f[0]); /* granted, never observed: 3 go on */
	assert_int_equal(atomic_load(&c[1].wakes), 1);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_semaphore_available(&s), 2); /* the rest, the queue empty */
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(sb_semaphore_available(&s), 3);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/* A woken head that never tried: its cancel wakes the next waiter instead. */
static void fair_cancel_of_a_woken_waiter_passes_the_wake_on(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	const size_t ones[2] = { 1, 1 };
	queue_acquires(&s, 2, ones, f, c);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(atomic_load(&c[0].wakes), 1);
	sb_semaphore_acquire_cancel(&f[0]);
	assert_int_equal(atomic_load(&c[0].drops), 0); /* its waker was spent by the wake */
	assert_int_equal(atomic_load(&c[1].wakes), 1);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/* The only waiter, woken and cancelled: the permit goes back to the counter. */
static void fair_cancel_of_the_only_woken_waiter_returns_the_permit_to_the_counter(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f;
	counting_waker c;
	const size_t two = 2;
	queue_acquires(&s, 1, &two, &f, &c);
	assert_int_equal(sb_semaphore_release(&s, 2), 0);
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(sb_semaphore_available(&s), 0); /* set aside for it */
	sb_semaphore_acquire_cancel(&f);
	assert_int_equal(sb_semaphore_available(&s), 2);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/* Close completes a woken head with the error and returns the free permits. */
static void fair_close_completes_a_woken_head_and_returns_the_free_permits(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	const size_t permits[2] = { 2, 1 };
	queue_acquires(&s, 2, permits, f, c);
	assert_int_equal(sb_semaphore_release(&s, 2), 0);
	assert_int_equal(atomic_load(&c[0].wakes), 1);
	sb_semaphore_close(&s);
	assert_int_equal(atomic_load(&c[0].wakes), 1); /* spent: not woken again */
	assert_int_equal(atomic_load(&c[1].wakes), 1);
	assert_int_equal(poll_with(&f[0], &c[0]), -ESHUTDOWN);
	assert_int_equal(poll_with(&f[1], &c[1]), -ESHUTDOWN);
	assert_int_equal(sb_semaphore_available(&s), 2);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/* A woken head re-polled with a new waker drops neither waker twice. */
static void a_woken_waiter_repolled_with_a_new_waker_drops_neither_twice(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire f[2];
	counting_waker c[2];
	const size_t ones[2] = { 1, 1 };
	queue_acquires(&s, 2, ones, f, c);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0);
	counting_waker fresh;
	counting_waker_init(&fresh);
	assert_int_equal(poll_with(&f[0], &fresh), SB_PENDING); /* re-armed with `fresh` */
	assert_int_equal(atomic_load(&c[0].live), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(atomic_load(&fresh.wakes), 1);
	assert_int_equal(poll_with(&f[0], &fresh), 0);
	assert_int_equal(atomic_load(&fresh.live), 0);
	sb_semaphore_acquire_cancel(&f[1]);
	assert_int_equal(atomic_load(&c[1].live), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(sb_semaphore_available(&s), 1);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

/* A never-initialised future is bad input, not a completed one. */
static int semaphore_acquire_poll_typed(void *f, const sb_waker *w)
{
	return sb_semaphore_acquire_poll(f, w);
}

static void a_zeroed_future_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	sb_semaphore s = SB_SEMAPHORE_INIT(1);
	sb_semaphore_acquire f;
	assert_zeroed_future_is_refused(&f, sizeof f, &sb_semaphore_acquire_ops,
					semaphore_acquire_poll_typed);
	assert_int_equal(sb_semaphore_available(&s), 1);
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(static_initialiser_gives_the_permits),
		cmocka_unit_test(a_zeroed_future_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(init_rejects_a_count_above_the_maximum),
		cmocka_unit_test(try_acquire_takes_permits_until_short),
		cmocka_unit_test(acquire_of_zero_is_ready_at_once),
		cmocka_unit_test(ready_acquire_completes_on_first_poll_without_cloning),
		cmocka_unit_test(waiters_are_served_in_fifo_order),
		cmocka_unit_test(multi_permit_head_blocks_a_smaller_request_behind_it),
		cmocka_unit_test(partial_grants_accumulate_until_the_request_is_met),
		cmocka_unit_test(cancel_with_nothing_granted_leaves_the_count_exact),
		cmocka_unit_test(cancel_after_partial_grant_passes_permits_on),
		cmocka_unit_test(cancel_after_partial_grant_with_nobody_behind_returns_permits_to_the_count),
		cmocka_unit_test(cancel_after_full_grant_passes_permits_to_the_next_waiter),
		cmocka_unit_test(cancel_after_full_grant_with_nobody_behind_restores_the_count),
		cmocka_unit_test(a_lone_waiter_that_took_a_permit_returns_it_when_cancelled),
		cmocka_unit_test(a_lone_waiter_stays_first_when_others_queue_behind_it),
		cmocka_unit_test(cancel_of_a_completed_or_unpolled_future_changes_nothing),
		cmocka_unit_test(cancel_twice_is_harmless),
		cmocka_unit_test(try_acquire_does_not_barge_past_a_queued_waiter),
		cmocka_unit_test(close_wakes_all_waiters_with_the_error_and_later_acquires_fail),
		cmocka_unit_test(release_overflow_returns_the_error_and_changes_nothing),
		cmocka_unit_test(releases_either_side_of_the_inline_bound_reach_the_maximum_exactly),
		cmocka_unit_test(release_overflow_with_a_waiter_queued_changes_nothing),
		cmocka_unit_test(returned_grants_saturate_the_counter_instead_of_wrapping),
		cmocka_unit_test(oversize_acquire_fails_cleanly),
		cmocka_unit_test(destroy_with_waiters_reports_busy_and_keeps_the_semaphore_usable),
		cmocka_unit_test(repolling_with_the_same_waker_does_not_clone_again),
		cmocka_unit_test(a_different_waker_replaces_the_old_one_which_is_dropped),
		cmocka_unit_test(blocking_acquire_returns_at_once_when_permits_are_there),
		cmocka_unit_test(blocking_acquire_times_out_and_holds_nothing),
		cmocka_unit_test(blocking_acquire_times_out_before_and_after_its_spin_and_holds_nothing),
		cmocka_unit_test(strict_blocking_acquire_times_out_and_holds_nothing),
		cmocka_unit_test(a_blocking_acquire_that_times_out_behind_a_lone_waiter_leaves_it_first),
		cmocka_unit_test(a_blocking_acquire_that_times_out_behind_a_queue_leaves_it_in_order),
		cmocka_unit_test(a_blocking_acquire_above_the_maximum_fails_when_the_counter_holds_more),
		cmocka_unit_test(blocking_acquire_is_woken_by_a_release_from_another_thread),
		cmocka_unit_test(blocking_acquire_is_woken_by_close),
		cmocka_unit_test(strict_blocking_acquire_is_woken_by_a_release_from_another_thread),
		cmocka_unit_test(strict_blocking_acquire_is_woken_by_close),
		cmocka_unit_test(init_functions_choose_the_mode),
		cmocka_unit_test(a_newcomer_takes_free_permits_past_a_woken_head_within_the_bound),
		cmocka_unit_test(past_the_bound_releases_hand_permits_to_the_queue_in_order),
		cmocka_unit_test(waiters_that_no_barger_passes_are_woken_in_order_however_long_they_wait),
		cmocka_unit_test(a_waiter_that_queued_during_a_phase_is_served_half_a_bound_after_it),
		cmocka_unit_test(releases_let_by_a_woken_head_keep_the_bound_checked_every_sixteenth),
		cmocka_unit_test(a_woken_head_that_never_runs_is_handed_its_permit_once_past_the_bound),
		cmocka_unit_test(a_multi_permit_head_past_the_bound_gathers_releases_against_a_stream_of_small_acquires),
		cmocka_unit_test(during_a_phase_no_barger_takes_the_permits_a_woken_head_gathers),
		cmocka_unit_test(a_queue_passed_when_the_clock_reads_zero_is_timed_all_the_same),
		cmocka_unit_test(fair_cancel_after_a_partial_grant_passes_the_permits_on),
		cmocka_unit_test(fair_cancel_after_a_full_grant_passes_the_permits_on),
		cmocka_unit_test(fair_cancel_of_a_woken_waiter_passes_the_wake_on),
		cmocka_unit_test(fair_cancel_of_the_only_woken_waiter_returns_the_permit_to_the_counter),
		cmocka_unit_test(fair_close_completes_a_woken_head_and_returns_the_free_permits),
		cmocka_unit_test(a_woken_waiter_repolled_with_a_new_waker_drops_neither_twice),
		cmocka_unit_test(a_queued_acquire_whose_waker_clone_releases_a_permit_does_not_deadlock),
		cmocka_unit_test(repolling_with_a_new_waker_whose_clone_releases_a_permit_does_not_deadlock),
	};
	sb__clock_set(fake_clock);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
