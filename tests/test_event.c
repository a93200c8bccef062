/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <syncband/event.h>

#include "check.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

static int poll_wait(sb_event_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_event_wait_poll(f, &w);
}

static int poll_auto(sb_auto_event_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_auto_event_wait_poll(f, &w);
}

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	assert_true(sizeof(sb_event) <= 32);
	assert_true(sizeof(sb_auto_event) <= 32);
	assert_true(sizeof(sb_event_wait) <= 64);
	assert_true(sizeof(sb_auto_event_wait) <= 64);
	/* A lone wait's address goes into the word above its low 4 bits. */
	assert_int_equal(_Alignof(sb_auto_event_wait), 16);
}

/* --- manual-reset --- */

static void static_events_start_as_asked(void **state)
{
	(void)state;
	static sb_event unset = SB_EVENT_INIT(0), set = SB_EVENT_INIT(1);
	assert_false(sb_event_is_set(&unset));
	assert_true(sb_event_is_set(&set));
	assert_int_equal(sb_event_try_wait(&unset), -EAGAIN);
	assert_int_equal(sb_event_try_wait(&set), 0);
	sb_event e;
	sb_event_init(&e, true);
	assert_true(sb_event_is_set(&e));
	sb_event_reset(&e);
	assert_false(sb_event_is_set(&e));
	assert_int_equal(sb_event_destroy(&e), 0);
}

static void wait_on_a_set_event_is_ready_without_cloning(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(1);
	sb_event_wait f;
	counting_waker c;
	counting_waker_init(&c);
	sb_event_wait_init(&f, &e);
	assert_int_equal(poll_wait(&f, &c), 0);
	assert_int_equal(atomic_load(&c.clones), 0);
}

static void set_releases_every_registered_wait(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(0);
	enum { N = 3 };
	sb_event_wait f[N];
	counting_waker c[N];
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		sb_event_wait_init(&f[i], &e);
		assert_int_equal(poll_wait(&f[i], &c[i]), SB_PENDING);
	}
	assert_int_equal(sb_event_destroy(&e), -EBUSY);
	sb_event_set(&e);
	assert_true(sb_event_is_set(&e));
	for (int i = 0; i < N; i++) {
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(poll_wait(&f[i], &c[i]), 0);
		assert_int_equal(atomic_load(&c[i].live), 0);
	}
	assert_int_equal(sb_event_destroy(&e), 0);
}

static void a_released_wait_stays_ready_after_a_later_reset(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(0);
	sb_event_wait f;
	counting_waker c;
	counting_waker_init(&c);
	sb_event_wait_init(&f, &e);
	assert_int_equal(poll_wait(&f, &c), SB_PENDING);
	sb_event_set(&e);
	sb_event_reset(&e);
	assert_int_equal(poll_wait(&f, &c), 0);
}

static void set_then_reset_before_the_first_poll_does_not_release_the_wait(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(0);
	sb_event_wait f;
	counting_waker c;
	counting_waker_init(&c);
	sb_event_wait_init(&f, &e);
	sb_event_set(&e);
	sb_event_reset(&e);
	assert_int_equal(poll_wait(&f, &c), SB_PENDING);
	sb_event_wait_cancel(&f);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_event_destroy(&e), 0);
}

static void set_on_a_set_event_changes_nothing(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(0);
	sb_event_set(&e);
	sb_event_set(&e);
	assert_true(sb_event_is_set(&e));
	sb_event_reset(&e);
	sb_event_reset(&e);
	assert_false(sb_event_is_set(&e));
}

static void fan_out_releases_all_waits_registered_before_set_and_none_after(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(0);
	enum { N = 48 }; /* more than one wake batch */
	sb_event_wait f[N], late;
	counting_waker c[N], cl;
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		sb_event_wait_init(&f[i], &e);
		assert_int_equal(poll_wait(&f[i], &c[i]), SB_PENDING);
	}
	sb_event_set(&e);
	sb_event_reset(&e);
	counting_waker_init(&cl);
	sb_event_wait_init(&late, &e);
	assert_int_equal(poll_wait(&late, &cl), SB_PENDING);
	for (int i = 0; i < N; i++) {
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(poll_wait(&f[i], &c[i]), 0);
	}
	assert_int_equal(atomic_load(&cl.wakes), 0);
	sb_event_wait_cancel(&late);
	assert_int_equal(atomic_load(&cl.live), 0);
	assert_int_equal(sb_event_destroy(&e), 0);
}

/* A waker that resets the event and registers a new wait from inside set(). */
typedef struct reentrant {
	sb_event *event;
	sb_event_wait *late;
	counting_waker *late_waker;
	int calls;
} reentrant;

static sb_waker reentrant_clone(const void *data);
static void reentrant_wake(const void *data)
{
	reentrant *r = (reentrant *)data;
	if (r->calls++ == 0) {
		sb_event_reset(r->event);
		sb_event_wait_init(r->late, r->event);
		sb_waker w = counting_waker_ref(r->late_waker);
		CHECK(sb_event_wait_poll(r->late, &w) == SB_PENDING);
	}
}
static void reentrant_drop(const void *data)
{
	(void)data;
}
static const sb_waker_vtable reentrant_vtable = {
	reentrant_clone, reentrant_wake, reentrant_wake, reentrant_drop,
};
static sb_waker reentrant_clone(const void *data)
{
	return (sb_waker){ &reentrant_vtable, data };
}

static void set_releases_exactly_the_earlier_waits_even_if_a_waker_resets_and_waits_again(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(0);
	enum { N = 40 };
	sb_event_wait f[N], late;
	counting_waker cl;
	counting_waker_init(&cl);
	reentrant r = { &e, &late, &cl, 0 };
	sb_waker w = { &reentrant_vtable, &r };
	for (int i = 0; i < N; i++) {
		sb_event_wait_init(&f[i], &e);
		assert_int_equal(sb_event_wait_poll(&f[i], &w), SB_PENDING);
	}
	sb_event_set(&e); /* the first wake resets and queues `late` mid-set */
	assert_int_equal(r.calls, N);
	for (int i = 0; i < N; i++)
		assert_int_equal(sb_event_wait_poll(&f[i], &w), 0);
	assert_false(sb_event_is_set(&e));
	assert_int_equal(atomic_load(&cl.wakes), 0);
	assert_int_equal(poll_wait(&late, &cl), SB_PENDING);
	sb_event_set(&e);
	assert_int_equal(poll_wait(&late, &cl), 0);
}

/* What a wake of one wait saw when it polled another wait of the same set(). */
typedef struct peek {
	sb_event_wait *other;
	counting_waker *other_waker;
	int seen;
} peek;

static void poll_the_other_wait(void *arg)
{
	peek *p = arg;
	if (p->seen == SB_PENDING + 1) /* first wake only */
		p->seen = poll_wait(p->other, p->other_waker);
}

/*
 * set() is atomic for any number of waits: from the moment it takes its lock
 * every earlier wait is released, also those it has not woken yet (it wakes
 * them in batches of 32, outside the lock).
 */
static void a_wait_polled_while_set_is_still_waking_others_is_already_released(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(0);
	enum { N = 48 }; /* more than one wake batch */
	sb_event_wait f[N];
	counting_waker c[N];
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		sb_event_wait_init(&f[i], &e);
		assert_int_equal(poll_wait(&f[i], &c[i]), SB_PENDING);
	}
	peek p = { &f[N - 1], &c[N - 1], SB_PENDING + 1 };
	c[0].on_wake = poll_the_other_wait;
	c[0].hook_arg = &p;
	sb_event_set(&e);
	assert_int_equal(p.seen, 0); /* not SB_PENDING */
	for (int i = 0; i < N; i++) {
		assert_int_equal(poll_wait(&f[i], &c[i]), 0);
		assert_int_equal(atomic_load(&c[i].live), 0);
	}
	/* the last one completed by its own poll: set() never woke it */
	assert_int_equal(atomic_load(&c[N - 1].wakes), 0);
	assert_int_equal(sb_event_destroy(&e), 0);
}

static void set_the_event(void *e)
{
	sb_event_set(e);
}

static void set_the_auto_event(void *e)
{
	sb_auto_event_set(e);
}

/*
 * A waker may re-enter the library from any of its callbacks, clone
 * included: a registering wait clones before it takes the queue lock.
 */
static void a_wait_whose_waker_clone_sets_the_event_completes_without_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on the queued path");
	sb_event e = SB_EVENT_INIT(0);
	counting_waker c;
	counting_waker_init(&c);
	c.on_clone = set_the_event;
	c.hook_arg = &e;
	sb_event_wait f;
	sb_event_wait_init(&f, &e);
	assert_int_equal(poll_wait(&f, &c), 0); /* set by its own clone */
	assert_int_equal(atomic_load(&c.clones), 1);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_event_destroy(&e), 0);
	sb_watchdog_stop(&wd);
}

static void repolling_a_wait_with_a_new_waker_whose_clone_sets_the_event_does_not_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on re-poll");
	sb_event e = SB_EVENT_INIT(0);
	counting_waker old, fresh;
	counting_waker_init(&old);
	counting_waker_init(&fresh);
	fresh.on_clone = set_the_event;
	fresh.hook_arg = &e;
	sb_event_wait f;
	sb_event_wait_init(&f, &e);
	assert_int_equal(poll_wait(&f, &old), SB_PENDING);
	assert_int_equal(poll_wait(&f, &fresh), 0);
	assert_int_equal(atomic_load(&old.wakes), 1);
	assert_int_equal(atomic_load(&old.live) + atomic_load(&fresh.live), 0);
	assert_int_equal(sb_event_destroy(&e), 0);
	sb_watchdog_stop(&wd);
}

static void cancel_of_a_manual_wait_leaves_the_others(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(0);
	sb_event_wait a, b;
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	sb_event_wait_init(&a, &e);
	sb_event_wait_init(&b, &e);
	assert_int_equal(poll_wait(&a, &ca), SB_PENDING);
	assert_int_equal(poll_wait(&b, &cb), SB_PENDING);
	sb_event_wait_cancel(&a);
	assert_int_equal(atomic_load(&ca.drops), 1);
	sb_event_set(&e);
	assert_int_equal(atomic_load(&ca.wakes), 0);
	assert_int_equal(poll_wait(&b, &cb), 0);
	assert_int_equal(poll_wait(&a, &ca), -ECANCELED);
	sb_event_wait_cancel(&b); /* completed: nothing to do */
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live), 0);
}

static void blocking_wait_times_out_on_an_unset_event(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(0);
	assert_int_equal(sb_event_wait_blocking(&e, 1000000), -ETIMEDOUT);
	sb_event_set(&e);
	assert_int_equal(sb_event_wait_blocking(&e, 0), 0);
	assert_int_equal(sb_event_destroy(&e), 0);
}

/* --- auto-reset --- */

static void auto_set_with_nobody_waiting_stores_one_signal_and_sets_coalesce(void **state)
{
	(void)state;
	static sb_auto_event e = SB_AUTO_EVENT_INIT(0);
	assert_int_equal(sb_auto_event_try_wait(&e), -EAGAIN);
	sb_auto_event_set(&e);
	sb_auto_event_set(&e);
	sb_auto_event_set(&e);
	assert_int_equal(sb_auto_event_try_wait(&e), 0);
	assert_int_equal(sb_auto_event_try_wait(&e), -EAGAIN);
	sb_auto_event s;
	sb_auto_event_init(&s, true);
	assert_int_equal(sb_auto_event_try_wait(&s), 0);
	assert_int_equal(sb_auto_event_destroy(&s), 0);
}

static void auto_set_hands_the_signal_to_the_oldest_wait(void **state)
{
	(void)state;
	sb_auto_event e = SB_AUTO_EVENT_INIT(0);
	enum { N = 3 };
	sb_auto_event_wait f[N];
	counting_waker c[N];
	for (int i = 0; i < N; i++) {
		counting_waker_init(&c[i]);
		sb_auto_event_wait_init(&f[i], &e);
		assert_int_equal(poll_auto(&f[i], &c[i]), SB_PENDING);
	}
	assert_int_equal(sb_auto_event_destroy(&e), -EBUSY);
	for (int i = 0; i < N; i++) {
		sb_auto_event_set(&e);
		for (int j = 0; j < N; j++)
			assert_int_equal(atomic_load(&c[j].wakes), j <= i ? 1 : 0);
		/* the signal went to the waiter: nothing for try_wait to steal */
		assert_int_equal(sb_auto_event_try_wait(&e), -EAGAIN);
		assert_int_equal(poll_auto(&f[i], &c[i]), 0);
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_auto_event_destroy(&e), 0);
}

static void auto_wait_takes_a_stored_signal_on_first_poll(void **state)
{
	(void)state;
	sb_auto_event e = SB_AUTO_EVENT_INIT(1);
	sb_auto_event_wait a, b;
	counting_waker c;
	counting_waker_init(&c);
	sb_auto_event_wait_init(&a, &e);
	sb_auto_event_wait_init(&b, &e);
	assert_int_equal(poll_auto(&a, &c), 0);
	assert_int_equal(poll_auto(&b, &c), SB_PENDING);
	sb_auto_event_wait_cancel(&b);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_auto_event_try_wait(&e), -EAGAIN);
}

static void cancelled_auto_wait_that_held_the_signal_passes_it_to_the_next(void **state)
{
	(void)state;
	sb_auto_event e = SB_AUTO_EVENT_INIT(0);
	sb_auto_event_wait a, b;
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	sb_auto_event_wait_init(&a, &e);
	sb_auto_event_wait_init(&b, &e);
	assert_int_equal(poll_auto(&a, &ca), SB_PENDING);
	assert_int_equal(poll_auto(&b, &cb), SB_PENDING);
	sb_auto_event_set(&e);
	sb_auto_event_wait_cancel(&a);
	assert_int_equal(atomic_load(&cb.wakes), 1);
	assert_int_equal(poll_auto(&b, &cb), 0);
	assert_int_equal(sb_auto_event_try_wait(&e), -EAGAIN);
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live), 0);
}

static void cancelled_auto_wait_that_held_the_signal_stores_it_when_alone(void **state)
{
	(void)state;
	sb_auto_event e = SB_AUTO_EVENT_INIT(0);
	sb_auto_event_wait a;
	counting_waker ca;
	counting_waker_init(&ca);
	sb_auto_event_wait_init(&a, &e);
	assert_int_equal(poll_auto(&a, &ca), SB_PENDING);
	sb_auto_event_set(&e);
	assert_int_equal(sb_auto_event_try_wait(&e), -EAGAIN);
	sb_auto_event_wait_cancel(&a);
	assert_int_equal(sb_auto_event_try_wait(&e), 0);
	assert_int_equal(sb_auto_event_destroy(&e), 0);
}

static void cancelled_auto_wait_without_the_signal_takes_nothing(void **state)
{
	(void)state;
	sb_auto_event e = SB_AUTO_EVENT_INIT(0);
	sb_auto_event_wait a;
	counting_waker ca;
	counting_waker_init(&ca);
	sb_auto_event_wait_init(&a, &e);
	assert_int_equal(poll_auto(&a, &ca), SB_PENDING);
	sb_auto_event_wait_cancel(&a);
	assert_int_equal(atomic_load(&ca.drops), 1);
	sb_auto_event_set(&e);
	assert_int_equal(sb_auto_event_try_wait(&e), 0);
}

static void a_queued_auto_wait_whose_waker_clone_sets_does_not_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on the queued path");
	sb_auto_event e = SB_AUTO_EVENT_INIT(0);
	counting_waker first, second;
	counting_waker_init(&first);
	counting_waker_init(&second);
	second.on_clone = set_the_auto_event;
	second.hook_arg = &e;
	sb_auto_event_wait a, b;
	sb_auto_event_wait_init(&a, &e);
	sb_auto_event_wait_init(&b, &e);
	assert_int_equal(poll_auto(&a, &first), SB_PENDING);
	/* b queues behind a; its clone's set() hands a the signal */
	assert_int_equal(poll_auto(&b, &second), SB_PENDING);
	assert_int_equal(atomic_load(&first.wakes), 1);
	assert_int_equal(poll_auto(&a, &first), 0);
	sb_auto_event_set(&e);
	assert_int_equal(atomic_load(&second.wakes), 1);
	assert_int_equal(poll_auto(&b, &second), 0);
	assert_int_equal(atomic_load(&first.live) + atomic_load(&second.live), 0);
	assert_int_equal(sb_auto_event_try_wait(&e), -EAGAIN);
	sb_watchdog_stop(&wd);
}

static void blocking_auto_wait_times_out_then_takes_a_signal(void **state)
{
	(void)state;
	sb_auto_event e = SB_AUTO_EVENT_INIT(0);
	assert_int_equal(sb_auto_event_wait_blocking(&e, 1000000), -ETIMEDOUT);
	sb_auto_event_set(&e);
	assert_int_equal(sb_auto_event_wait_blocking(&e, 0), 0);
	assert_int_equal(sb_auto_event_try_wait(&e), -EAGAIN);
}

/* --- threads --- */

enum { FAN_OUT = 16, ROUNDS = 2000 };

typedef struct fan {
	sb_event go;
	sb_auto_event done;
	atomic_int arrived;
	atomic_int round;
} fan;

/* Each round: wait for `go` (blocking or by future), then report. */
static void *fan_waiter(void *p)
{
	fan *f = p;
	static atomic_int next_id;
	int id = atomic_fetch_add(&next_id, 1);
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	for (int r = 1; r <= ROUNDS; r++) {
		if (id % 2) {
			CHECK(sb_event_wait_blocking(&f->go, SB_TIMEOUT_INFINITE) == 0);
		} else {
			sb_event_wait wait;
			sb_event_wait_init(&wait, &f->go);
			int wakes = atomic_load(&c.wakes);
			while (sb_event_wait_poll(&wait, &w) == SB_PENDING) {
				while (atomic_load(&c.wakes) == wakes)
					sched_yield();
				wakes = atomic_load(&c.wakes);
			}
		}
		CHECK(atomic_load(&f->round) == r);
		if (atomic_fetch_add(&f->arrived, 1) + 1 == FAN_OUT)
			sb_auto_event_set(&f->done);
		while (atomic_load(&f->round) == r) /* until the next round opens */
			sched_yield();
	}
	/* The thread that woke us drops its clone after the wake: wait
	 * for it (a lost drop hangs here and the watchdog fails the test). */
	while (atomic_load(&c.live) != 0)
		sched_yield();
	return NULL;
}

/*
 * What set() wrote before is visible to a thread that sees the event set,
 * lock-free (is_set) or through a wait's first poll - also when set() takes
 * its slow path because a wait is queued.  Meaningful under ThreadSanitizer,
 * which reports the race on `payload` if EV_SET is published without a
 * release operation.
 */
typedef struct publish {
	sb_event e;
	int payload;
	int round;
} publish;

static void *publish_setter(void *p)
{
	publish *x = p;
	x->payload = x->round;
	sb_event_set(&x->e);
	return NULL;
}

static void *publish_reader(void *p)
{
	publish *x = p;
	if (x->round % 2) {
		while (!sb_event_is_set(&x->e))
			sched_yield();
	} else {
		sb_event_wait f;
		sb_event_wait_init(&f, &x->e);
		sb_waker noop = sb_waker_noop();
		while (sb_event_wait_poll(&f, &noop) == SB_PENDING) {
			sb_event_wait_cancel(&f);
			sched_yield();
			sb_event_wait_init(&f, &x->e);
		}
	}
	CHECK(x->payload == x->round);
	return NULL;
}

static void a_reader_that_sees_the_event_set_sees_what_the_setter_wrote(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "event publication");
	for (int round = 1; round <= 500; round++) {
		publish x = { .round = round };
		sb_event_init(&x.e, false);
		sb_event_wait queued; /* so that set() takes its slow path */
		sb_event_wait_init(&queued, &x.e);
		sb_waker noop = sb_waker_noop();
		assert_int_equal(sb_event_wait_poll(&queued, &noop), SB_PENDING);
		pthread_t setter, reader;
		assert_int_equal(pthread_create(&reader, NULL, publish_reader, &x), 0);
		assert_int_equal(pthread_create(&setter, NULL, publish_setter, &x), 0);
		pthread_join(setter, NULL);
		pthread_join(reader, NULL);
		assert_int_equal(sb_event_wait_poll(&queued, &noop), 0);
		assert_int_equal(sb_event_destroy(&x.e), 0);
	}
	sb_watchdog_stop(&wd);
}

static void fan_out_of_sixteen_waiters_across_threads_releases_all_each_round(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "event fan-out across threads");
	static fan f = { SB_EVENT_INIT(0), SB_AUTO_EVENT_INIT(0), 0, 0 };
	pthread_t t[FAN_OUT];
	for (int i = 0; i < FAN_OUT; i++)
		assert_int_equal(pthread_create(&t[i], NULL, fan_waiter, &f), 0);
	for (int r = 1; r <= ROUNDS; r++) {
		atomic_store(&f.arrived, 0);
		/* release: a waiter that sees the new round sees arrived == 0 and
		 * the reset of `go` */
		atomic_store_explicit(&f.round, r, memory_order_release);
		sb_event_set(&f.go);
		assert_int_equal(sb_auto_event_wait_blocking(&f.done, SB_TIMEOUT_INFINITE), 0);
		sb_event_reset(&f.go);
	}
	atomic_store(&f.round, ROUNDS + 1);
	for (int i = 0; i < FAN_OUT; i++)
		pthread_join(t[i], NULL);
	sb_watchdog_stop(&wd);
	assert_int_equal(sb_event_destroy(&f.go), 0);
	assert_int_equal(sb_auto_event_destroy(&f.done), 0);
}

/*
 * Cross-thread set/reset racing new waits: whatever the interleaving, every
 * wait is released by a set that follows its registration.
 */
typedef struct toggler {
	sb_event event;
	atomic_int stop;
} toggler;

static void *set_reset_loop(void *p)
{
	toggler *t = p;
	while (!atomic_load(&t->stop)) {
		sb_event_set(&t->event);
		sb_event_reset(&t->event);
	}
	sb_event_set(&t->event); /* the last word: set */
	return NULL;
}

static void waits_racing_set_and_reset_are_all_released(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "event set/reset racing waits");
	static toggler t = { SB_EVENT_INIT(0), 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, set_reset_loop, &t), 0);
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	long pending = 0;
	for (int i = 0; i < 100000; i++) {
		sb_event_wait f;
		sb_event_wait_init(&f, &t.event);
		int wakes = atomic_load(&c.wakes);
		if (sb_event_wait_poll(&f, &w) == SB_PENDING) {
			pending++;
			while (atomic_load(&c.wakes) == wakes)
				sched_yield();
			assert_int_equal(sb_event_wait_poll(&f, &w), 0);
		}
	}
	atomic_store(&t.stop, 1);
	pthread_join(th, NULL);
	sb_watchdog_stop(&wd);
	print_message("set/reset race: %ld of 100000 waits went pending\n", pending);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_true(sb_event_is_set(&t.event));
	assert_int_equal(sb_event_destroy(&t.event), 0);
}

/* A never-initialised future is bad input, not a completed one. */
static int event_wait_poll_typed(void *f, const sb_waker *w)
{
	return sb_event_wait_poll(f, w);
}

static int auto_event_wait_poll_typed(void *f, const sb_waker *w)
{
	return sb_auto_event_wait_poll(f, w);
}

static void a_zeroed_wait_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	sb_event e = SB_EVENT_INIT(false);
	sb_event_wait f;
	assert_zeroed_future_is_refused(&f, sizeof f, &sb_event_wait_ops, event_wait_poll_typed);
	assert_false(sb_event_is_set(&e));
	assert_int_equal(sb_event_destroy(&e), 0);
}

static void a_zeroed_auto_event_wait_polls_to_einval_and_takes_no_signal(void **state)
{
	(void)state;
	sb_auto_event e = SB_AUTO_EVENT_INIT(true);
	sb_auto_event_wait f;
	assert_zeroed_future_is_refused(&f, sizeof f, &sb_auto_event_wait_ops,
					auto_event_wait_poll_typed);
	assert_int_equal(sb_auto_event_try_wait(&e), 0); /* the signal is still there */
	assert_int_equal(sb_auto_event_destroy(&e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(a_zeroed_wait_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(a_zeroed_auto_event_wait_polls_to_einval_and_takes_no_signal),
		cmocka_unit_test(static_events_start_as_asked),
		cmocka_unit_test(wait_on_a_set_event_is_ready_without_cloning),
		cmocka_unit_test(set_releases_every_registered_wait),
		cmocka_unit_test(a_released_wait_stays_ready_after_a_later_reset),
		cmocka_unit_test(set_then_reset_before_the_first_poll_does_not_release_the_wait),
		cmocka_unit_test(set_on_a_set_event_changes_nothing),
		cmocka_unit_test(fan_out_releases_all_waits_registered_before_set_and_none_after),
		cmocka_unit_test(set_releases_exactly_the_earlier_waits_even_if_a_waker_resets_and_waits_again),
		cmocka_unit_test(cancel_of_a_manual_wait_leaves_the_others),
		cmocka_unit_test(blocking_wait_times_out_on_an_unset_event),
		cmocka_unit_test(auto_set_with_nobody_waiting_stores_one_signal_and_sets_coalesce),
		cmocka_unit_test(auto_set_hands_the_signal_to_the_oldest_wait),
		cmocka_unit_test(auto_wait_takes_a_stored_signal_on_first_poll),
		cmocka_unit_test(cancelled_auto_wait_that_held_the_signal_passes_it_to_the_next),
		cmocka_unit_test(cancelled_auto_wait_that_held_the_signal_stores_it_when_alone),
		cmocka_unit_test(cancelled_auto_wait_without_the_signal_takes_nothing),
		cmocka_unit_test(blocking_auto_wait_times_out_then_takes_a_signal),
		cmocka_unit_test(fan_out_of_sixteen_waiters_across_threads_releases_all_each_round),
		cmocka_unit_test(waits_racing_set_and_reset_are_all_released),
		cmocka_unit_test(a_wait_polled_while_set_is_still_waking_others_is_already_released),
		cmocka_unit_test(a_wait_whose_waker_clone_sets_the_event_completes_without_deadlock),
		cmocka_unit_test(repolling_a_wait_with_a_new_waker_whose_clone_sets_the_event_does_not_deadlock),
		cmocka_unit_test(a_queued_auto_wait_whose_waker_clone_sets_does_not_deadlock),
		cmocka_unit_test(a_reader_that_sees_the_event_set_sees_what_the_setter_wrote),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
