/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <syncband/condvar.h>

#include "check.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

static int poll_with(sb_condvar_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_condvar_wait_poll(f, &w);
}

/* Locks m (uncontended in these single-thread tests) and starts a wait. */
static void start_wait(sb_condvar_wait *f, sb_condvar *cv, sb_mutex *m, counting_waker *c)
{
	assert_int_equal(sb_mutex_try_lock(m), 0);
	sb_condvar_wait_init(f, cv, m);
	assert_int_equal(poll_with(f, c), SB_PENDING);
	assert_false(sb_mutex_is_locked(m)); /* given up after registering */
}

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	assert_true(sizeof(sb_condvar) <= 32);
	assert_true(sizeof(sb_condvar_wait) <= 96);
}

static void notify_with_nobody_waiting_is_not_stored(void **state)
{
	(void)state;
	static sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar_notify_one(&cv);
	sb_condvar_notify_all(&cv);
	sb_condvar_wait f;
	counting_waker c;
	counting_waker_init(&c);
	start_wait(&f, &cv, &m, &c);
	assert_int_equal(poll_with(&f, &c), SB_PENDING);
	assert_int_equal(atomic_load(&c.wakes), 0);
	sb_condvar_wait_cancel(&f);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_condvar_destroy(&cv), 0);
}

static void wait_completes_holding_the_mutex_after_notify(void **state)
{
	(void)state;
	sb_condvar cv;
	sb_condvar_init(&cv);
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar_wait f;
	counting_waker c;
	counting_waker_init(&c);
	start_wait(&f, &cv, &m, &c);
	assert_int_equal(sb_condvar_destroy(&cv), -EBUSY);
	sb_condvar_notify_one(&cv);
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(poll_with(&f, &c), 0); /* done stays done */
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_condvar_destroy(&cv), 0);
}

static void first_poll_with_an_unlocked_mutex_is_refused(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar_wait f;
	counting_waker c;
	counting_waker_init(&c);
	sb_condvar_wait_init(&f, &cv, &m);
	assert_int_equal(poll_with(&f, &c), -EPERM);
	assert_int_equal(atomic_load(&c.clones), 0);
	/* the failed wait is done: polling repeats the error, cancel does
	 * nothing, even once someone else holds the mutex */
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(poll_with(&f, &c), -EPERM);
	sb_condvar_wait_cancel(&f);
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_condvar_destroy(&cv), 0);
	assert_int_equal(sb_condvar_wait_blocking(&cv, &m, 0), -EPERM);
	assert_false(sb_mutex_is_locked(&m));
}

static void notify_one_wakes_exactly_one_in_fifo_order(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	enum { N = 4 };
	sb_condvar_wait f[N];
	counting_waker c[N];
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		start_wait(&f[i], &cv, &m, &c[i]);
	}
	for (int i = 0; i < N; i++) {
		sb_condvar_notify_one(&cv);
		for (int j = 0; j < N; j++)
			assert_int_equal(atomic_load(&c[j].wakes), j <= i ? 1 : 0);
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
		assert_int_equal(sb_mutex_unlock(&m), 0);
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
}

static void notify_all_wakes_those_registered_before_and_none_after(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	enum { N = 40 }; /* more than one wake batch */
	sb_condvar_wait f[N], late;
	counting_waker c[N], cl;
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		start_wait(&f[i], &cv, &m, &c[i]);
	}
	sb_condvar_notify_all(&cv);
	counting_waker_init(&cl);
	start_wait(&late, &cv, &m, &cl);
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&c[i].wakes), 1);
	/* they re-acquire the mutex one at a time, in order */
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	for (int i = 1; i < N; i++)
		assert_int_equal(poll_with(&f[i], &c[i]), SB_PENDING);
	for (int i = 1; i < N; i++) {
		assert_int_equal(sb_mutex_unlock(&m), 0);
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
	}
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&cl.wakes), 0);
	assert_int_equal(poll_with(&late, &cl), SB_PENDING);
	sb_condvar_notify_all(&cv);
	assert_int_equal(poll_with(&late, &cl), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_condvar_destroy(&cv), 0);
}

/* From the first wake of a notify_all: complete, wait again, notify_one. */
typedef struct rewait {
	sb_condvar_wait *first;
	counting_waker *first_waker;
	sb_condvar_wait *again;
	counting_waker *again_waker;
	bool done;
} rewait;

static void wait_again_and_notify_one(void *arg)
{
	rewait *r = arg;
	if (r->done)
		return;
	r->done = true;
	sb_condvar_wait *f = r->first;
	CHECK(poll_with(f, r->first_waker) == 0); /* holds the mutex */
	sb_condvar_wait_init(r->again, f->cv, f->lock.mutex);
	CHECK(poll_with(r->again, r->again_waker) == SB_PENDING);
	sb_condvar_notify_one(f->cv);
}

/*
 * notify_all() is atomic for any number of waits: every wait registered
 * before it is notified from the moment it takes its lock, even those it has
 * not woken yet (it wakes them in batches of 32, outside the lock).  So a
 * notify_one() made meanwhile goes to a wait registered after, never to one
 * that notify_all() already owes - no notification is lost.
 */
static void a_notify_one_during_notify_all_goes_to_a_wait_registered_after_it(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	enum { N = 40 }; /* more than one wake batch */
	sb_condvar_wait f[N], again;
	counting_waker c[N], ca;
	counting_waker_init(&ca);
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		start_wait(&f[i], &cv, &m, &c[i]);
	}
	rewait r = { &f[0], &c[0], &again, &ca, false };
	c[0].on_wake = wait_again_and_notify_one;
	c[0].hook_arg = &r;
	sb_condvar_notify_all(&cv);
	assert_true(r.done);
	/* `again` was notified: it now only waits for the mutex */
	assert_int_equal(atomic_load(&ca.wakes), 1);
	for (int i = 1; i < N; i++)
		assert_int_equal(atomic_load(&c[i].wakes), 1);
	/* (`again`'s first poll gave the mutex up.)  Each re-acquires it in turn. */
	for (int i = 1; i < N; i++) {
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
		assert_int_equal(sb_mutex_unlock(&m), 0);
	}
	assert_int_equal(poll_with(&again, &ca), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(atomic_load(&ca.live), 0);
	assert_int_equal(sb_condvar_destroy(&cv), 0);
}

static void notify_one_of(void *cv)
{
	sb_condvar_notify_one(cv);
}

/*
 * A waker may re-enter the library from any of its callbacks, clone
 * included: a registering wait clones before it takes the queue lock.
 */
static void a_wait_whose_waker_clone_notifies_does_not_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on the queued path");
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar_wait a, b;
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	start_wait(&a, &cv, &m, &ca);
	cb.on_clone = notify_one_of;
	cb.hook_arg = &cv;
	start_wait(&b, &cv, &m, &cb); /* its clone notifies a, then b registers */
	assert_int_equal(atomic_load(&ca.wakes), 1);
	assert_int_equal(poll_with(&a, &ca), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&cb.wakes), 0);
	sb_condvar_notify_one(&cv);
	assert_int_equal(poll_with(&b, &cb), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live), 0);
	assert_int_equal(sb_condvar_destroy(&cv), 0);
	sb_watchdog_stop(&wd);
}

static void cancel_of_a_notified_waiter_before_repoll_passes_the_notification_on(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar_wait a, b;
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	start_wait(&a, &cv, &m, &ca);
	start_wait(&b, &cv, &m, &cb);
	sb_condvar_notify_one(&cv);
	assert_int_equal(atomic_load(&ca.wakes), 1);
	assert_int_equal(atomic_load(&cb.wakes), 0);
	sb_condvar_wait_cancel(&a);
	assert_int_equal(atomic_load(&cb.wakes), 1);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(poll_with(&b, &cb), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live), 0);
}

static void cancel_while_reacquiring_passes_the_notification_and_leaves_the_mutex_consistent(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar_wait a, b;
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	start_wait(&a, &cv, &m, &ca);
	start_wait(&b, &cv, &m, &cb);
	assert_int_equal(sb_mutex_try_lock(&m), 0); /* the notifier holds the mutex */
	sb_condvar_notify_one(&cv);
	assert_int_equal(poll_with(&a, &ca), SB_PENDING); /* now queued on the mutex */
	sb_condvar_wait_cancel(&a);
	assert_int_equal(atomic_load(&cb.wakes), 1); /* the notification moved on */
	assert_true(sb_mutex_is_locked(&m));         /* still the notifier's */
	assert_int_equal(poll_with(&b, &cb), SB_PENDING);
	assert_int_equal(sb_mutex_unlock(&m), 0);    /* handed to b, not to a */
	assert_int_equal(poll_with(&b, &cb), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live), 0);
}

static void cancel_after_being_handed_the_mutex_passes_it_on(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar_wait a;
	counting_waker ca;
	counting_waker_init(&ca);
	start_wait(&a, &cv, &m, &ca);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_condvar_notify_all(&cv);
	assert_int_equal(poll_with(&a, &ca), SB_PENDING);
	sb_mutex_lock other;
	sb_mutex_lock_init(&other, &m);
	sb_waker noop = sb_waker_noop();
	assert_int_equal(sb_mutex_lock_poll(&other, &noop), SB_PENDING);
	assert_int_equal(sb_mutex_unlock(&m), 0); /* handed to a */
	sb_condvar_wait_cancel(&a);               /* a passes it to other */
	assert_int_equal(sb_mutex_lock_poll(&other, &noop), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_false(sb_mutex_is_locked(&m));
}

static void cancel_of_a_registered_waiter_returns_without_the_mutex(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar_wait a;
	counting_waker ca;
	counting_waker_init(&ca);
	start_wait(&a, &cv, &m, &ca);
	sb_condvar_wait_cancel(&a);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(atomic_load(&ca.drops), 1);
	assert_int_equal(sb_condvar_destroy(&cv), 0);
	assert_int_equal(poll_with(&a, &ca), -ECANCELED);
}

static void cancel_of_a_never_polled_wait_unlocks_the_mutex(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar_wait a;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_condvar_wait_init(&a, &cv, &m);
	sb_condvar_wait_cancel(&a);
	assert_false(sb_mutex_is_locked(&m));
	sb_condvar_wait_cancel(&a);
	assert_false(sb_mutex_is_locked(&m));
}

static void cancel_after_completion_keeps_the_mutex(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar_wait a;
	counting_waker ca;
	counting_waker_init(&ca);
	start_wait(&a, &cv, &m, &ca);
	sb_condvar_notify_one(&cv);
	assert_int_equal(poll_with(&a, &ca), 0);
	sb_condvar_wait_cancel(&a);
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(sb_mutex_unlock(&m), 0);
}

static void blocking_wait_times_out_holding_the_mutex(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(sb_condvar_wait_blocking(&cv, &m, 1000000), -ETIMEDOUT);
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(sb_condvar_destroy(&cv), 0);
	assert_int_equal(sb_mutex_unlock(&m), 0);
}

/* --- producer / consumer across threads --- */

enum { PRODUCERS = 2, CONSUMERS = 3, ITEMS = 20000, CAPACITY = 8 };

typedef struct queue {
	sb_mutex mutex;
	sb_condvar not_empty;
	sb_condvar not_full;
	int items[CAPACITY]; /* plain: protected by the mutex */
	int count;
	long consumed_sum;
	int consumed;
	int produced;
} queue;

static void *producer(void *p)
{
	queue *q = p;
	for (;;) {
		CHECK(sb_mutex_lock_blocking(&q->mutex, SB_TIMEOUT_INFINITE) == 0);
		while (q->count == CAPACITY && q->produced < ITEMS)
			CHECK(sb_condvar_wait_blocking(&q->not_full, &q->mutex, SB_TIMEOUT_INFINITE) == 0);
		if (q->produced == ITEMS) {
			CHECK(sb_mutex_unlock(&q->mutex) == 0);
			return NULL;
		}
		q->items[q->count++] = ++q->produced;
		sb_condvar_notify_one(&q->not_empty);
		CHECK(sb_mutex_unlock(&q->mutex) == 0);
	}
}

/* Consumers drive condvar futures by hand, as an event loop would. */
static void *consumer(void *p)
{
	queue *q = p;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	for (;;) {
		CHECK(sb_mutex_lock_blocking(&q->mutex, SB_TIMEOUT_INFINITE) == 0);
		while (q->count == 0 && q->consumed < ITEMS) {
			sb_condvar_wait f;
			sb_condvar_wait_init(&f, &q->not_empty, &q->mutex);
			int wakes = atomic_load(&c.wakes);
			int r;
			while ((r = sb_condvar_wait_poll(&f, &w)) == SB_PENDING) {
				while (atomic_load(&c.wakes) == wakes)
					sched_yield();
				wakes = atomic_load(&c.wakes);
			}
			CHECK(r == 0);
		}
		if (q->consumed == ITEMS) {
			sb_condvar_notify_all(&q->not_empty); /* let the other consumers out */
			CHECK(sb_mutex_unlock(&q->mutex) == 0);
			/* The thread that woke us drops its clone after the wake: wait
			 * for it (a lost drop hangs here and the watchdog fails the test). */
			while (atomic_load(&c.live) != 0)
				sched_yield();
			return NULL;
		}
		q->consumed_sum += q->items[--q->count];
		q->consumed++;
		sb_condvar_notify_one(&q->not_full);
		if (q->consumed == ITEMS)
			sb_condvar_notify_all(&q->not_empty);
		CHECK(sb_mutex_unlock(&q->mutex) == 0);
	}
}

static void producers_and_consumers_with_a_predicate_loop_move_every_item(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "condvar producer/consumer");
	static queue q = { SB_MUTEX_INIT, SB_CONDVAR_INIT, SB_CONDVAR_INIT, { 0 }, 0, 0, 0, 0 };
	pthread_t t[PRODUCERS + CONSUMERS];
	for (int i = 0; i < PRODUCERS + CONSUMERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, i < PRODUCERS ? producer : consumer, &q), 0);
	for (int i = 0; i < PRODUCERS + CONSUMERS; i++)
		pthread_join(t[i], NULL);
	sb_watchdog_stop(&wd);
	assert_int_equal(q.consumed, ITEMS);
	assert_int_equal(q.consumed_sum, (long)ITEMS * (ITEMS + 1) / 2);
	assert_int_equal(q.count, 0);
	assert_false(sb_mutex_is_locked(&q.mutex));
	assert_int_equal(sb_condvar_destroy(&q.not_empty), 0);
	assert_int_equal(sb_condvar_destroy(&q.not_full), 0);
}

/* A never-initialised future is bad input, not a completed one. */
static int condvar_wait_poll_typed(void *f, const sb_waker *w)
{
	return sb_condvar_wait_poll(f, w);
}

static void a_zeroed_future_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_mutex m = SB_MUTEX_INIT;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	sb_condvar_wait f;
	assert_zeroed_future_is_refused(&f, sizeof f, &sb_condvar_wait_ops, condvar_wait_poll_typed);
	assert_true(sb_mutex_is_locked(&m)); /* its cancel did not unlock */
	sb_mutex_unlock(&m);
	assert_int_equal(sb_condvar_destroy(&cv), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(a_zeroed_future_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(notify_with_nobody_waiting_is_not_stored),
		cmocka_unit_test(wait_completes_holding_the_mutex_after_notify),
		cmocka_unit_test(first_poll_with_an_unlocked_mutex_is_refused),
		cmocka_unit_test(notify_one_wakes_exactly_one_in_fifo_order),
		cmocka_unit_test(notify_all_wakes_those_registered_before_and_none_after),
		cmocka_unit_test(cancel_of_a_notified_waiter_before_repoll_passes_the_notification_on),
		cmocka_unit_test(cancel_while_reacquiring_passes_the_notification_and_leaves_the_mutex_consistent),
		cmocka_unit_test(cancel_after_being_handed_the_mutex_passes_it_on),
		cmocka_unit_test(cancel_of_a_registered_waiter_returns_without_the_mutex),
		cmocka_unit_test(cancel_of_a_never_polled_wait_unlocks_the_mutex),
		cmocka_unit_test(cancel_after_completion_keeps_the_mutex),
		cmocka_unit_test(blocking_wait_times_out_holding_the_mutex),
		cmocka_unit_test(producers_and_consumers_with_a_predicate_loop_move_every_item),
		cmocka_unit_test(a_notify_one_during_notify_all_goes_to_a_wait_registered_after_it),
		cmocka_unit_test(a_wait_whose_waker_clone_notifies_does_not_deadlock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
