/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <syncband/mutex.h>

#include "check.h"
#include "clock.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

static int poll_with(sb_mutex_lock *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_mutex_lock_poll(f, &w);
}

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	assert_true(sizeof(sb_mutex) <= 32);
	assert_true(sizeof(sb_mutex_lock) <= 64);
	/* A lone waiter's address goes into the word above its low 4 bits. */
	assert_int_equal(_Alignof(sb_mutex_lock), 16);
}

static void static_mutex_locks_and_unlocks(void **state)
{
	(void)state;
	static sb_mutex m = SB_MUTEX_INIT;
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_try_lock(&m), -EBUSY);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

static void unlock_of_an_unlocked_mutex_is_refused(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	assert_int_equal(sb_mutex_unlock(&m), -EPERM);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_unlock(&m), -EPERM);
}

static void a_fifo_mutex_hands_itself_to_queued_lockers_in_order(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT_FIFO;
	enum { N = 5 };
	sb_mutex_lock f[N];
	counting_waker c[N];
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		sb_mutex_lock_init(&f[i], &m);
		assert_int_equal(poll_with(&f[i], &c[i]), SB_PENDING);
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(sb_mutex_unlock(&m), 0);
		for (int j = 0; j < N; j++)
			assert_int_equal(atomic_load(&c[j].wakes), j <= i ? 1 : 0);
		assert_true(sb_mutex_is_locked(&m)); /* handed over, never unlocked */
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
		for (int j = i + 1; j < N; j++)
			assert_int_equal(poll_with(&f[j], &c[j]), SB_PENDING);
	}
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m));
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

static void a_fifo_mutex_refuses_try_lock_while_a_waiter_is_handed_the_lock(void **state)
{
	(void)state;
	sb_mutex m;
	sb_mutex_init_fifo(&m);
	sb_mutex_lock f;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_init(&f, &m);
	assert_int_equal(poll_with(&f, &c), SB_PENDING);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	/* f owns the mutex now, though it has not been polled yet */
	assert_int_equal(sb_mutex_try_lock(&m), -EBUSY);
	sb_mutex_lock barger;
	sb_mutex_lock_init(&barger, &m);
	sb_waker noop = sb_waker_noop();
	assert_int_equal(sb_mutex_lock_poll(&barger, &noop), SB_PENDING);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_lock_poll(&barger, &noop), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
}

static void cancel_of_a_queued_locker_leaves_the_others_in_order(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock a, b, c;
	counting_waker ca, cb, cc;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	counting_waker_init(&cc);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_init(&a, &m);
	sb_mutex_lock_init(&b, &m);
	sb_mutex_lock_init(&c, &m);
	assert_int_equal(poll_with(&a, &ca), SB_PENDING);
	assert_int_equal(poll_with(&b, &cb), SB_PENDING);
	assert_int_equal(poll_with(&c, &cc), SB_PENDING);
	sb_mutex_lock_cancel(&b);
	assert_int_equal(atomic_load(&cb.drops), 1);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(poll_with(&a, &ca), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&cc.wakes), 1);
	assert_int_equal(poll_with(&c, &cc), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live) + atomic_load(&cc.live), 0);
}

static void cancel_of_the_last_queued_locker_lets_unlock_free_the_mutex(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock a;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_init(&a, &m);
	sb_waker noop = sb_waker_noop();
	assert_int_equal(sb_mutex_lock_poll(&a, &noop), SB_PENDING);
	assert_int_equal(sb_mutex_destroy(&m), -EBUSY);
	sb_mutex_lock_cancel(&a);
	assert_int_equal(sb_mutex_destroy(&m), -EBUSY); /* still locked */
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

static void cancel_after_handoff_passes_the_lock_to_the_next_waiter(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT_FIFO;
	sb_mutex_lock a, b;
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_init(&a, &m);
	sb_mutex_lock_init(&b, &m);
	assert_int_equal(poll_with(&a, &ca), SB_PENDING);
	assert_int_equal(poll_with(&b, &cb), SB_PENDING);
	assert_int_equal(sb_mutex_unlock(&m), 0); /* handed to a */
	sb_mutex_lock_cancel(&a);                 /* ... who passes it to b */
	assert_int_equal(atomic_load(&cb.wakes), 1);
	assert_int_equal(poll_with(&b, &cb), 0);
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m));
}

static void cancel_after_handoff_with_nobody_behind_unlocks(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT_FIFO;
	sb_mutex_lock a;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_init(&a, &m);
	sb_waker noop = sb_waker_noop();
	assert_int_equal(sb_mutex_lock_poll(&a, &noop), SB_PENDING);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_true(sb_mutex_is_locked(&m));
	sb_mutex_lock_cancel(&a);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

static void cancel_before_poll_and_after_completion_change_nothing(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock idle, done;
	sb_mutex_lock_init(&idle, &m);
	sb_mutex_lock_cancel(&idle);
	assert_false(sb_mutex_is_locked(&m));
	sb_waker noop = sb_waker_noop();
	assert_int_equal(sb_mutex_lock_poll(&idle, &noop), -ECANCELED);
	sb_mutex_lock_init(&done, &m);
	assert_int_equal(sb_mutex_lock_poll(&done, &noop), 0);
	sb_mutex_lock_cancel(&done);
	sb_mutex_lock_cancel(&done);
	assert_true(sb_mutex_is_locked(&m)); /* the caller still holds it */
	assert_int_equal(sb_mutex_lock_poll(&done, &noop), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
}

static void a_different_waker_replaces_the_old_one(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f;
	counting_waker first, second;
	counting_waker_init(&first);
	counting_waker_init(&second);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_init(&f, &m);
	assert_int_equal(poll_with(&f, &first), SB_PENDING);
	assert_int_equal(poll_with(&f, &first), SB_PENDING);
	assert_int_equal(atomic_load(&first.clones), 1);
	assert_int_equal(poll_with(&f, &second), SB_PENDING);
	assert_int_equal(atomic_load(&first.drops), 1);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&second.wakes), 1);
	assert_int_equal(atomic_load(&first.wakes), 0);
	assert_int_equal(poll_with(&f, &second), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
}

static void unlock_the_mutex(void *m)
{
	assert_int_equal(sb_mutex_unlock(m), 0);
}

/*
 * A waker may re-enter the library from any of its callbacks, clone
 * included: a locker queueing behind a lone waiter clones before it takes
 * the queue lock, so a clone that unlocks finds the lock free.
 */
static void a_queued_locker_whose_waker_clone_unlocks_does_not_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on the queued path");
	sb_mutex m = SB_MUTEX_INIT_FIFO;
	counting_waker first, second;
	counting_waker_init(&first);
	counting_waker_init(&second);
	second.on_clone = unlock_the_mutex;
	second.hook_arg = &m;
	sb_mutex_lock a, b;
	sb_mutex_lock_init(&a, &m);
	sb_mutex_lock_init(&b, &m);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(poll_with(&a, &first), SB_PENDING);
	/* the clone's unlock hands the mutex to a; b waits behind it */
	assert_int_equal(poll_with(&b, &second), SB_PENDING);
	assert_int_equal(atomic_load(&first.wakes), 1);
	assert_int_equal(poll_with(&a, &first), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&second.wakes), 1);
	assert_int_equal(poll_with(&b, &second), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&first.live) + atomic_load(&second.live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
	sb_watchdog_stop(&wd);
}

/* --- eventually fair mode (the default) --- */

/*
 * The library's clock, moved by hand (src/clock.h), installed for every test
 * (main): a waiter is timed from when it queued, so on the real clock a
 * test descheduled for the bound between a queueing and an unlock would see
 * a handoff where it expects a wake.
 */
static uint64_t fake_now = 1000;
static uint64_t fake_clock(void)
{
	return fake_now;
}

/* How often an unlock compares its head with the bound (src/mutex.c). */
enum { UNLOCKS_PER_CHECK = 16 };

/*
 * The caller holds `m`: bargers give it back and take it again until an
 * unlock hands it over (it stays locked).  Returns how many unlocks that
 * took, or max + 1 (still held by the caller) if none of `max` did.
 */
static int unlocks_until_handed_over(sb_mutex *m, int max)
{
	for (int n = 1; n <= max; n++) {
		assert_int_equal(sb_mutex_unlock(m), 0);
		if (sb_mutex_is_locked(m))
			return n;
		assert_int_equal(sb_mutex_try_lock(m), 0);
	}
	return max + 1;
}

/* A mutex held by the caller with `n` lockers queued behind it. */
static void hold_with_queued(sb_mutex *m, int n, sb_mutex_lock *f, counting_waker *c)
{
	assert_int_equal(sb_mutex_try_lock(m), 0);
	for (int i = 0; i < n; i++) {
		counting_waker_init(&c[i]);
		sb_mutex_lock_init(&f[i], m);
		assert_int_equal(poll_with(&f[i], &c[i]), SB_PENDING);
	}
}

static void an_unlock_with_waiters_frees_the_mutex_and_wakes_only_the_oldest(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[3];
	counting_waker c[3];
	hold_with_queued(&m, 3, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m)); /* released, not handed over */
	assert_int_equal(atomic_load(&c[0].wakes), 1);
	assert_int_equal(atomic_load(&c[1].wakes) + atomic_load(&c[2].wakes), 0);
	for (int i = 0; i < 3; i++) { /* nobody barges: FIFO order */
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
		for (int j = i + 1; j < 3; j++)
			assert_int_equal(poll_with(&f[j], &c[j]), SB_PENDING);
		assert_int_equal(sb_mutex_unlock(&m), 0);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

static void a_locker_may_take_the_mutex_before_the_woken_waiter_runs(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[1], barger;
	counting_waker c[1], cb;
	counting_waker_init(&cb);
	hold_with_queued(&m, 1, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_try_lock(&m), 0); /* barges */
	assert_int_equal(sb_mutex_unlock(&m), 0);
	sb_mutex_lock_init(&barger, &m);
	assert_int_equal(poll_with(&barger, &cb), 0); /* so does a lock future */
	assert_int_equal(atomic_load(&cb.clones), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[0].live), 0);
}

static void unlocks_do_not_wake_another_waiter_while_the_woken_one_has_not_run(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[2];
	counting_waker c[2];
	hold_with_queued(&m, 2, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0); /* wakes f[0] */
	for (int i = 0; i < 3; i++) {            /* bargers come and go */
		assert_int_equal(sb_mutex_try_lock(&m), 0);
		assert_int_equal(sb_mutex_unlock(&m), 0);
	}
	assert_int_equal(atomic_load(&c[0].wakes), 1);
	assert_int_equal(atomic_load(&c[1].wakes), 0);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[1].wakes), 1);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
}

static void a_woken_waiter_that_loses_to_a_barger_stays_at_the_front(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[2];
	counting_waker c[2];
	hold_with_queued(&m, 2, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_try_lock(&m), 0);     /* a barger */
	assert_int_equal(poll_with(&f[0], &c[0]), SB_PENDING); /* lost, re-armed */
	assert_int_equal(atomic_load(&c[0].clones), 2);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[0].wakes), 2); /* the front again */
	assert_int_equal(atomic_load(&c[1].wakes), 0);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
}

static void once_the_oldest_waiter_has_lost_for_longer_than_the_bound_no_barger_passes_it(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[2];
	counting_waker c[2];
	hold_with_queued(&m, 2, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(poll_with(&f[0], &c[0]), SB_PENDING); /* lost */
	/* within the bound, bargers still pass it, through two checks */
	fake_now += SB_MUTEX_FAIRNESS_BOUND_NS;
	assert_int_equal(unlocks_until_handed_over(&m, 2 * UNLOCKS_PER_CHECK), 2 * UNLOCKS_PER_CHECK + 1);
	assert_int_equal(poll_with(&f[0], &c[0]), SB_PENDING); /* lost again */
	/* past it, an unlock hands the mutex over by the next check, and nobody barges */
	fake_now += 1;
	assert_true(unlocks_until_handed_over(&m, UNLOCKS_PER_CHECK) <= UNLOCKS_PER_CHECK);
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_try_lock(&m), -EBUSY);
	sb_mutex_lock late;
	sb_waker noop = sb_waker_noop();
	sb_mutex_lock_init(&late, &m);
	assert_int_equal(sb_mutex_lock_poll(&late, &noop), SB_PENDING); /* queues behind */
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	/* the handoff phase goes on for the waiters queued behind it then */
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_try_lock(&m), -EBUSY);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	/* ... and no further: `late` came after it began, and is woken */
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_lock_poll(&late, &noop), 0);
	sb_mutex_lock last;
	counting_waker cl;
	counting_waker_init(&cl);
	sb_mutex_lock_init(&last, &m);
	assert_int_equal(poll_with(&last, &cl), SB_PENDING);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m)); /* woken, not handed over */
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(poll_with(&last, &cl), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(atomic_load(&cl.live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

/* The first poll that waits starts the record of being passed afresh (init
 * leaves it to that poll), so a reused future does not inherit its last one. */
static void a_reused_lock_future_does_not_inherit_when_it_last_lost(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_init(&f, &m);
	assert_int_equal(poll_with(&f, &c), SB_PENDING);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(poll_with(&f, &c), SB_PENDING); /* lost at fake_now */
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	/* Long after: the same future waits again, and has not lost yet. */
	fake_now += 2 * SB_MUTEX_FAIRNESS_BOUND_NS;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_init(&f, &m);
	assert_int_equal(poll_with(&f, &c), SB_PENDING);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m)); /* woken, not handed over */
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

/*
 * A woken waiter whose task is never polled (its thread busy running the
 * barger) still gets the mutex: an unlock that finds it still woken counts it
 * as passed, and once that is more than the bound ago, hands it the mutex.
 */
static void a_woken_waiter_that_never_runs_is_handed_the_mutex_once_passed_for_the_bound(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[1];
	counting_waker c[1];
	hold_with_queued(&m, 1, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0); /* wakes f[0] */
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0); /* f[0] passed, at fake_now */
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	fake_now += SB_MUTEX_FAIRNESS_BOUND_NS; /* within the bound: still barging */
	assert_int_equal(unlocks_until_handed_over(&m, 2 * UNLOCKS_PER_CHECK), 2 * UNLOCKS_PER_CHECK + 1);
	fake_now += 1; /* past it: handed over by the next check */
	assert_true(unlocks_until_handed_over(&m, UNLOCKS_PER_CHECK) <= UNLOCKS_PER_CHECK);
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_try_lock(&m), -EBUSY);
	assert_int_equal(atomic_load(&c[0].wakes), 1); /* woken once: no new wake */
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[0].live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

/*
 * The unlock budget in `m`'s word (src/mutex.c): bits 4-7, nonzero only
 * with the waiters queued and the head woken.
 */
static size_t unlock_budget(sb_mutex *m)
{
	size_t high = atomic_load(&m->q.state) >> SB_WAITQ_LONE_SHIFT;
	assert_true(high < 16); /* never a lone address while a head is woken */
	return high;
}

/*
 * A mutex held by a barger that has passed its woken head, f[0], once: the
 * head is timed from that pass, which checked it against the bound.
 */
static void hold_past_a_woken_head(sb_mutex *m, sb_mutex_lock *f, counting_waker *c)
{
	hold_with_queued(m, 1, f, c);
	assert_int_equal(sb_mutex_unlock(m), 0); /* wakes f[0]: not timed, no budget */
	assert_int_equal(unlock_budget(m), 0);
	assert_int_equal(sb_mutex_try_lock(m), 0);
	assert_int_equal(sb_mutex_unlock(m), 0); /* the first pass: timed, checked */
	assert_int_equal(sb_mutex_try_lock(m), 0);
}

/*
 * An unlock that finds the head woken and is not due to check it has only to
 * free the mutex: the unlock that last took the queue lock leaves a budget of
 * such unlocks in the word, up to the head's next check, and each of them
 * takes one from it with one CAS instead of taking the queue lock.
 */
static void unlocks_between_the_checks_of_a_woken_head_spend_a_budget_left_in_the_word(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[1];
	counting_waker c[1];
	hold_past_a_woken_head(&m, f, c);
	for (size_t left = UNLOCKS_PER_CHECK - 1; left > 0; left--) {
		assert_int_equal(unlock_budget(&m), left);
		assert_int_equal(sb_mutex_unlock(&m), 0);
		assert_int_equal(sb_mutex_try_lock(&m), 0);
	}
	assert_int_equal(unlock_budget(&m), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0); /* the next check, under the lock */
	assert_int_equal(unlock_budget(&m), UNLOCKS_PER_CHECK - 1);
	assert_int_equal(atomic_load(&c[0].wakes), 1); /* none of them woke it again */
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(unlock_budget(&m), 0); /* it left with the budget */
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[0].live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

/*
 * A woken head whose retry loses re-arms, and the unlocks of its budget it
 * never saw are not counted: it is checked at the 16th unlock after the
 * pass, as if there were no budget.
 */
static void a_head_that_re_arms_mid_budget_is_still_checked_at_the_16th_unlock_after_the_pass(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[1];
	counting_waker c[1];
	hold_past_a_woken_head(&m, f, c);
	fake_now += SB_MUTEX_FAIRNESS_BOUND_NS + 1;
	enum { BEFORE_RETRY = 5 };
	assert_int_equal(unlocks_until_handed_over(&m, BEFORE_RETRY), BEFORE_RETRY + 1);
	assert_int_equal(poll_with(&f[0], &c[0]), SB_PENDING); /* loses: re-armed */
	assert_int_equal(unlock_budget(&m), 0);
	assert_int_equal(unlocks_until_handed_over(&m, 2 * UNLOCKS_PER_CHECK),
			 UNLOCKS_PER_CHECK - BEFORE_RETRY);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[0].live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

/*
 * A clock read costs as much as the rest of a contended unlock, so a passed
 * head is compared with the bound when it is first passed and then at every
 * 16th unlock that finds it: past the bound, the 16th unlock after the pass
 * hands the mutex over, and none before it.
 */
static void a_passed_head_is_checked_against_the_bound_when_passed_and_at_every_16th_unlock_after(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[1];
	counting_waker c[1];
	hold_past_a_woken_head(&m, f, c);
	fake_now += SB_MUTEX_FAIRNESS_BOUND_NS + 1;
	assert_int_equal(unlocks_until_handed_over(&m, 2 * UNLOCKS_PER_CHECK), UNLOCKS_PER_CHECK);
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[0].live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

/*
 * A queue served in order is never timed: unlocks wake one head after the
 * other and each takes the mutex, however long they all wait, and no clock
 * decides anything.
 */
static void waiters_that_no_barger_passes_are_woken_in_order_however_long_they_wait(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[3];
	counting_waker c[3];
	hold_with_queued(&m, 3, f, c);
	for (int i = 0; i < 3; i++) {
		fake_now += 10 * SB_MUTEX_FAIRNESS_BOUND_NS;
		assert_int_equal(sb_mutex_unlock(&m), 0);
		assert_false(sb_mutex_is_locked(&m)); /* woken, not handed over */
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
	}
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live) + atomic_load(&c[2].live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

/*
 * A barger that passes the head passes everyone behind it, so every waiter
 * is timed from that first pass, not from when it itself first lost at the
 * front: a waiter behind the head loses every race the head loses.  Here the
 * head gets in by its retry just inside the bound; the waiter behind it,
 * passed as long, is handed the mutex by the first unlock that finds it at
 * the front, never woken to race a barger.
 */
static void a_waiter_behind_a_passed_head_is_timed_from_that_pass_and_handed_the_mutex_at_the_front(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[2];
	counting_waker c[2];
	hold_with_queued(&m, 2, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0); /* wakes f[0] */
	assert_int_equal(sb_mutex_try_lock(&m), 0); /* a barger */
	assert_int_equal(poll_with(&f[0], &c[0]), SB_PENDING); /* lost: both timed */
	fake_now += SB_MUTEX_FAIRNESS_BOUND_NS;
	assert_int_equal(sb_mutex_unlock(&m), 0); /* within the bound: woken again */
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(poll_with(&f[0], &c[0]), 0); /* the head gets in itself */
	fake_now += 1;
	assert_int_equal(sb_mutex_unlock(&m), 0); /* f[1] at the front, passed past the bound */
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_try_lock(&m), -EBUSY); /* no barger passes it */
	assert_int_equal(atomic_load(&c[1].wakes), 1);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

/*
 * Waiters that queue during a handoff phase: f[0] and f[1] queued and passed
 * at once, then past the bound a phase hands the mutex to both, `late`
 * queueing while it runs.  `stagger` moves the clock between f[0]'s pass and
 * f[1]'s (so f[1] is timed later), `phase_takes` between the phase's two
 * handoffs.  Returns with the phase over, the mutex free and `late` woken
 * at the front, the clock at the phase's last handoff.
 */
static void phase_with_a_newcomer(sb_mutex *m, sb_mutex_lock *f, counting_waker *c, sb_mutex_lock *late,
				  counting_waker *cl, uint64_t stagger, uint64_t phase_takes)
{
	hold_with_queued(m, 1, f, c);
	assert_int_equal(sb_mutex_unlock(m), 0); /* wakes f[0] */
	assert_int_equal(sb_mutex_try_lock(m), 0);
	assert_int_equal(poll_with(&f[0], &c[0]), SB_PENDING); /* lost: timed */
	fake_now += stagger;
	counting_waker_init(&c[1]);
	sb_mutex_lock_init(&f[1], m);
	assert_int_equal(poll_with(&f[1], &c[1]), SB_PENDING);
	assert_int_equal(sb_mutex_unlock(m), 0); /* f[0] woken again */
	assert_int_equal(sb_mutex_try_lock(m), 0); /* passes f[0] and f[1]: f[1] timed */
	fake_now += SB_MUTEX_FAIRNESS_BOUND_NS + 1 - stagger; /* f[0] past the bound */
	assert_true(unlocks_until_handed_over(m, UNLOCKS_PER_CHECK) <= UNLOCKS_PER_CHECK);
	counting_waker_init(cl);
	sb_mutex_lock_init(late, m);
	assert_int_equal(poll_with(late, cl), SB_PENDING); /* queues during the phase */
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	fake_now += phase_takes;
	assert_int_equal(sb_mutex_unlock(m), 0); /* the phase's last handoff */
	assert_true(sb_mutex_is_locked(m));
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_mutex_unlock(m), 0);
	assert_false(sb_mutex_is_locked(m)); /* `late` is woken, not handed the mutex */
	assert_int_equal(atomic_load(&cl->wakes), 1);
}

/*
 * After the phase, bargers pass `late` for `gap` (through two checks) and
 * one unlock past it, by the next check, hands it the mutex.
 */
static void bargers_pass_the_newcomer_for(sb_mutex *m, counting_waker *c, sb_mutex_lock *late,
					  counting_waker *cl, uint64_t gap)
{
	assert_int_equal(sb_mutex_try_lock(m), 0);
	fake_now += gap;
	assert_int_equal(unlocks_until_handed_over(m, 2 * UNLOCKS_PER_CHECK), 2 * UNLOCKS_PER_CHECK + 1);
	fake_now += 1;
	assert_true(unlocks_until_handed_over(m, UNLOCKS_PER_CHECK) <= UNLOCKS_PER_CHECK);
	assert_int_equal(sb_mutex_try_lock(m), -EBUSY);
	assert_int_equal(poll_with(late, cl), 0);
	assert_int_equal(sb_mutex_unlock(m), 0);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
	assert_int_equal(atomic_load(&cl->live), 0);
	assert_int_equal(sb_mutex_destroy(m), 0);
}

/*
 * The two above: a phase with a newcomer (`stagger`, `phase_takes`), then
 * bargers pass the newcomer for `gap` and no longer.
 */
static void after_a_phase_bargers_pass_its_newcomer_for(uint64_t stagger, uint64_t phase_takes,
							 uint64_t gap)
{
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[2], late;
	counting_waker c[2], cl;
	phase_with_a_newcomer(&m, f, c, &late, &cl, stagger, phase_takes);
	bargers_pass_the_newcomer_for(&m, c, &late, &cl, gap);
}

/*
 * A waiter that queued during a phase waited through part of it, so the
 * phase's last handoff times it as if passed half a bound before: lockers
 * get half a bound, not a whole one, before it is handed the mutex.
 */
static void a_waiter_that_queued_during_a_quick_handoff_phase_is_handed_the_mutex_half_a_bound_after_it(void **state)
{
	(void)state;
	after_a_phase_bargers_pass_its_newcomer_for(0, 0, SB_MUTEX_FAIRNESS_BOUND_NS / 2);
}

/*
 * However long a phase took (here 3/4 of a bound), its newcomers are handed
 * the mutex half a bound after it, not later: they waited through the phase
 * already, and what bargers take after it adds to that wait.
 */
static void after_a_long_phase_its_newcomers_are_still_handed_the_mutex_half_a_bound_after_it(void **state)
{
	(void)state;
	after_a_phase_bargers_pass_its_newcomer_for(0, SB_MUTEX_FAIRNESS_BOUND_NS / 4 * 3,
						     SB_MUTEX_FAIRNESS_BOUND_NS / 2);
}

/*
 * A queue that drains more slowly than the bound would otherwise go from one
 * handoff phase to the next and never let a running locker in (a convoy).
 * So even after a phase three bounds long, whose covered waiters were passed
 * at different times, lockers get half a bound before its newcomers are
 * handed the mutex.
 */
static void after_a_phase_however_long_lockers_get_half_a_bound_before_its_newcomers(void **state)
{
	(void)state;
	after_a_phase_bargers_pass_its_newcomer_for(SB_MUTEX_FAIRNESS_BOUND_NS / 2, 3 * SB_MUTEX_FAIRNESS_BOUND_NS,
						     SB_MUTEX_FAIRNESS_BOUND_NS / 2);
}

static void cancel_of_a_woken_waiter_passes_the_wake_on(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[2];
	counting_waker c[2];
	hold_with_queued(&m, 2, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	sb_mutex_lock_cancel(&f[0]);
	assert_int_equal(atomic_load(&c[0].live), 0); /* its spent waker: not dropped again */
	assert_int_equal(atomic_load(&c[0].drops), 0);
	assert_int_equal(atomic_load(&c[1].wakes), 1);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

static void cancel_of_a_woken_waiter_while_a_barger_holds_leaves_the_wake_to_its_unlock(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[2];
	counting_waker c[2];
	hold_with_queued(&m, 2, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_cancel(&f[0]);
	assert_int_equal(atomic_load(&c[1].wakes), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[1].wakes), 1);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c[0].live) + atomic_load(&c[1].live), 0);
}

static void cancel_of_the_only_woken_waiter_leaves_the_mutex_free(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[1];
	counting_waker c[1];
	hold_with_queued(&m, 1, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	sb_mutex_lock_cancel(&f[0]);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(atomic_load(&c[0].live), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

static void a_woken_waiter_repolled_with_a_new_waker_drops_neither_twice(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f[1];
	counting_waker c[1], other;
	counting_waker_init(&other);
	hold_with_queued(&m, 1, f, c);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(poll_with(&f[0], &other), SB_PENDING); /* lost; now `other` */
	assert_int_equal(atomic_load(&c[0].live), 0);
	assert_int_equal(atomic_load(&c[0].drops), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&other.wakes), 1);
	assert_int_equal(poll_with(&f[0], &other), 0);
	assert_int_equal(atomic_load(&other.live), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
}

static void blocking_lock_times_out_while_held(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	assert_int_equal(sb_mutex_lock_blocking(&m, 0), 0);
	assert_int_equal(sb_mutex_lock_blocking(&m, 0), -ETIMEDOUT);
	assert_int_equal(sb_mutex_lock_blocking(&m, 2000), -ETIMEDOUT); /* shorter than the spin */
	assert_int_equal(sb_mutex_lock_blocking(&m, 20000), -ETIMEDOUT); /* spins, then sleeps */
	assert_int_equal(sb_mutex_lock_blocking(&m, 1000000), -ETIMEDOUT);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

/* A blocking lock behind a queued waiter (its spin stops there, and it queues
 * behind it): its timeout leaves that waiter first, woken once by the unlock. */
static void a_blocking_lock_that_times_out_behind_a_queued_waiter_leaves_it_first(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	counting_waker c;
	counting_waker_init(&c);
	sb_mutex_lock f;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_mutex_lock_init(&f, &m);
	assert_int_equal(poll_with(&f, &c), SB_PENDING);
	assert_int_equal(sb_mutex_lock_blocking(&m, 20000), -ETIMEDOUT);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

/* --- threads --- */

enum { THREADS = 4, ROUNDS = 50000 };

typedef struct counter {
	sb_mutex mutex;
	unsigned long value; /* plain: protected by the mutex */
} counter;

typedef struct locker {
	counter *shared;
	int index;
	counting_waker waker;
} locker;

static void *lock_blocking_loop(void *p)
{
	locker *l = p;
	for (int i = 0; i < ROUNDS; i++) {
		CHECK(sb_mutex_lock_blocking(&l->shared->mutex, SB_TIMEOUT_INFINITE) == 0);
		l->shared->value++;
		CHECK(sb_mutex_unlock(&l->shared->mutex) == 0);
	}
	return NULL;
}

/* Future-based locker: polls, waits for its wake, cancels now and then. */
static void *lock_future_loop(void *p)
{
	locker *l = p;
	sb_waker w = counting_waker_ref(&l->waker);
	unsigned seed = 7u * (unsigned)l->index + 1;
	for (int i = 0; i < ROUNDS;) {
		sb_mutex_lock f;
		sb_mutex_lock_init(&f, &l->shared->mutex);
		int wakes = atomic_load(&l->waker.wakes);
		int r = sb_mutex_lock_poll(&f, &w);
		seed = seed * 1103515245u + 12345u;
		bool cancel = (seed >> 16) % 8 == 0;
		while (r == SB_PENDING) {
			while (atomic_load(&l->waker.wakes) == wakes)
				sched_yield();
			wakes = atomic_load(&l->waker.wakes);
			if (cancel)
				break;
			r = sb_mutex_lock_poll(&f, &w);
		}
		if (r == SB_PENDING) { /* woken: handed the lock, never observed */
			sb_mutex_lock_cancel(&f);
			continue;
		}
		CHECK(r == 0);
		l->shared->value++;
		CHECK(sb_mutex_unlock(&l->shared->mutex) == 0);
		i++;
	}
	return NULL;
}

static void mutual_exclusion_holds_across_threads_so_a_plain_counter_ends_exact(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "mutex exclusion across threads");
	static counter shared = { SB_MUTEX_INIT, 0 };
	locker l[THREADS];
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		l[i].shared = &shared;
		l[i].index = i;
		counting_waker_init(&l[i].waker);
		assert_int_equal(pthread_create(&t[i], NULL,
						i % 2 ? lock_future_loop : lock_blocking_loop, &l[i]),
				 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	sb_watchdog_stop(&wd);
	assert_int_equal(shared.value, (unsigned long)THREADS * ROUNDS);
	assert_false(sb_mutex_is_locked(&shared.mutex));
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(atomic_load(&l[i].waker.live), 0);
	assert_int_equal(sb_mutex_destroy(&shared.mutex), 0);
}

/*
 * The lost-wake race of the "no waiters" fast path: one thread unlocks with
 * a single CAS while another decides to queue.  Both start from the same
 * spin barrier and the locker waits a random few cycles, so the unlock lands
 * on both sides of the locker's decision.  A lost wake-up hangs the round
 * and the watchdog fails the test.
 */
typedef struct race {
	sb_mutex mutex;
	atomic_int round;
	atomic_int unlocked;
} race;

static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void *unlock_racer(void *p)
{
	race *r = p;
	for (int i = 1; i <= ROUNDS; i++) {
		while (atomic_load(&r->round) != i)
			spin_pause();
		CHECK(sb_mutex_unlock(&r->mutex) == 0);
		atomic_store(&r->unlocked, i);
	}
	return NULL;
}

static void unlock_racing_the_first_waiter_never_loses_the_wake(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "unlock racing the first waiter");
	static race r = { SB_MUTEX_INIT, 0, 0 };
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, unlock_racer, &r), 0);
	long queued = 0, immediate = 0;
	unsigned seed = 1;
	for (int i = 1; i <= ROUNDS; i++) {
		assert_int_equal(sb_mutex_try_lock(&r.mutex), 0);
		int wakes = atomic_load(&c.wakes);
		seed = seed * 1103515245u + 12345u;
		unsigned delay = (seed >> 16) % 256;
		atomic_store(&r.round, i); /* the other thread unlocks now ... */
		for (unsigned k = 0; k < delay; k++)
			spin_pause();
		sb_mutex_lock f; /* ... while we decide to lock or queue */
		sb_mutex_lock_init(&f, &r.mutex);
		int res = sb_mutex_lock_poll(&f, &w);
		if (res == SB_PENDING) {
			queued++;
			while (atomic_load(&c.wakes) == wakes)
				sched_yield();
			res = sb_mutex_lock_poll(&f, &w);
		} else {
			immediate++;
		}
		assert_int_equal(res, 0);
		while (atomic_load(&r.unlocked) != i)
			spin_pause();
		assert_int_equal(sb_mutex_unlock(&r.mutex), 0);
	}
	pthread_join(t, NULL);
	sb_watchdog_stop(&wd);
	print_message("unlock race: %d rounds, %ld queued, %ld locked at once\n", ROUNDS, queued,
		      immediate);
	assert_int_equal(queued + immediate, ROUNDS);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_false(sb_mutex_is_locked(&r.mutex));
}

/* A never-initialised future is bad input, not a completed one. */
static int mutex_lock_poll_typed(void *f, const sb_waker *w)
{
	return sb_mutex_lock_poll(f, w);
}

static void a_zeroed_future_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock f;
	assert_zeroed_future_is_refused(&f, sizeof f, &sb_mutex_lock_ops, mutex_lock_poll_typed);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(a_zeroed_future_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(static_mutex_locks_and_unlocks),
		cmocka_unit_test(unlock_of_an_unlocked_mutex_is_refused),
		cmocka_unit_test(a_fifo_mutex_hands_itself_to_queued_lockers_in_order),
		cmocka_unit_test(a_fifo_mutex_refuses_try_lock_while_a_waiter_is_handed_the_lock),
		cmocka_unit_test(cancel_of_a_queued_locker_leaves_the_others_in_order),
		cmocka_unit_test(cancel_of_the_last_queued_locker_lets_unlock_free_the_mutex),
		cmocka_unit_test(cancel_after_handoff_passes_the_lock_to_the_next_waiter),
		cmocka_unit_test(cancel_after_handoff_with_nobody_behind_unlocks),
		cmocka_unit_test(cancel_before_poll_and_after_completion_change_nothing),
		cmocka_unit_test(a_different_waker_replaces_the_old_one),
		cmocka_unit_test(blocking_lock_times_out_while_held),
		cmocka_unit_test(a_blocking_lock_that_times_out_behind_a_queued_waiter_leaves_it_first),
		cmocka_unit_test(mutual_exclusion_holds_across_threads_so_a_plain_counter_ends_exact),
		cmocka_unit_test(unlock_racing_the_first_waiter_never_loses_the_wake),
		cmocka_unit_test(a_queued_locker_whose_waker_clone_unlocks_does_not_deadlock),
		cmocka_unit_test(an_unlock_with_waiters_frees_the_mutex_and_wakes_only_the_oldest),
		cmocka_unit_test(a_locker_may_take_the_mutex_before_the_woken_waiter_runs),
		cmocka_unit_test(unlocks_do_not_wake_another_waiter_while_the_woken_one_has_not_run),
		cmocka_unit_test(a_woken_waiter_that_loses_to_a_barger_stays_at_the_front),
		cmocka_unit_test(once_the_oldest_waiter_has_lost_for_longer_than_the_bound_no_barger_passes_it),
		cmocka_unit_test(a_reused_lock_future_does_not_inherit_when_it_last_lost),
		cmocka_unit_test(a_woken_waiter_that_never_runs_is_handed_the_mutex_once_passed_for_the_bound),
		cmocka_unit_test(a_passed_head_is_checked_against_the_bound_when_passed_and_at_every_16th_unlock_after),
		cmocka_unit_test(unlocks_between_the_checks_of_a_woken_head_spend_a_budget_left_in_the_word),
		cmocka_unit_test(a_head_that_re_arms_mid_budget_is_still_checked_at_the_16th_unlock_after_the_pass),
		cmocka_unit_test(waiters_that_no_barger_passes_are_woken_in_order_however_long_they_wait),
		cmocka_unit_test(a_waiter_behind_a_passed_head_is_timed_from_that_pass_and_handed_the_mutex_at_the_front),
		cmocka_unit_test(a_waiter_that_queued_during_a_quick_handoff_phase_is_handed_the_mutex_half_a_bound_after_it),
		cmocka_unit_test(after_a_long_phase_its_newcomers_are_still_handed_the_mutex_half_a_bound_after_it),
		cmocka_unit_test(after_a_phase_however_long_lockers_get_half_a_bound_before_its_newcomers),
		cmocka_unit_test(cancel_of_a_woken_waiter_passes_the_wake_on),
		cmocka_unit_test(cancel_of_a_woken_waiter_while_a_barger_holds_leaves_the_wake_to_its_unlock),
		cmocka_unit_test(cancel_of_the_only_woken_waiter_leaves_the_mutex_free),
		cmocka_unit_test(a_woken_waiter_repolled_with_a_new_waker_drops_neither_twice),
	};
	sb__clock_set(fake_clock);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
