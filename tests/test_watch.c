/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/blocking.h>
#include <syncband/watch.h>

#include "check.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

/* What an output buffer holds before anything is read into it. */
#define UNTOUCHED (-1)

/* Polls with a counting waker, so the waker contract is checked too. */
static int changed_poll(sb_watch_changed *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_watch_changed_poll(f, &w);
}

/* A changed future on `rx` that waits: polled once, pending, one clone held. */
static void start_changed(sb_watch_changed *f, sb_watch_receiver *rx, counting_waker *c)
{
	counting_waker_init(c);
	sb_watch_changed_init(f, rx);
	assert_int_equal(changed_poll(f, c), SB_PENDING);
	assert_int_equal(atomic_load(&c->clones), 1);
}

static void send_int(sb_watch *w, int v)
{
	assert_int_equal(sb_watch_send(w, &v), 0);
}

/* read must succeed; returns the value. */
static int read_int(sb_watch_receiver *rx)
{
	int v = UNTOUCHED;
	assert_int_equal(sb_watch_read(rx, &v), 0);
	return v;
}

/* An int watch holding `initial` in `*storage`, and one receiver. */
static void setup_int(sb_watch *w, int *storage, int initial, sb_watch_receiver *rx)
{
	*storage = initial;
	assert_int_equal(sb_watch_init(w, storage, sizeof *storage), 0);
	assert_int_equal(sb_watch_subscribe(w, rx), 0);
}

static void teardown_int(sb_watch *w, sb_watch_receiver *rx)
{
	assert_int_equal(sb_watch_unsubscribe(rx), 0);
	assert_int_equal(sb_watch_destroy(w), 0);
}

/* ---- layout and initialisation ---- */

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	assert_int_equal(sizeof(sb_watch), 56);
	assert_int_equal(sizeof(sb_watch_receiver), 24);
	assert_true(sizeof(sb_watch_changed) <= 64);
}

static void the_static_initialiser_gives_an_open_watch_at_version_0(void **state)
{
	(void)state;
	static int storage = 7;
	static sb_watch w = SB_WATCH_INIT(&storage, sizeof(int));
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	assert_false(sb_watch_is_closed(&w));
	assert_int_equal(sb_watch_version(&w), 0);
	assert_int_equal(sb_watch_subscribe(&w, &rx), 0);
	assert_int_equal(sb_watch_seen(&rx), 0);
	assert_int_equal(read_int(&rx), 7);
	send_int(&w, 8);
	assert_int_equal(sb_watch_version(&w), 1);
	assert_int_equal(read_int(&rx), 8);
	teardown_int(&w, &rx);
}

static void init_refuses_bad_arguments_and_leaves_the_watch_unchanged(void **state)
{
	(void)state;
	int storage = 1;
	sb_watch w, before;
	memset(&w, 0xa5, sizeof w);
	before = w;
	assert_int_equal(sb_watch_init(&w, NULL, sizeof(int)), -EINVAL);
	assert_int_equal(sb_watch_init(&w, &storage, 0), -EINVAL);
	assert_int_equal(sb_watch_init(&w, &storage, (size_t)PTRDIFF_MAX + 1), -EOVERFLOW);
	assert_int_equal(sb_watch_init(&w, &storage, SIZE_MAX), -EOVERFLOW);
	assert_memory_equal(&w, &before, sizeof w);
	assert_int_equal(sb_watch_init(&w, &storage, 1), 0);
	assert_int_equal(sb_watch_destroy(&w), 0);
}

/* ---- values and versions ---- */

static void a_new_receiver_has_seen_the_current_version_and_reads_the_current_value(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT, late = SB_WATCH_RECEIVER_INIT;
	setup_int(&w, &storage, 10, &rx);
	assert_int_equal(sb_watch_try_changed(&rx), -EAGAIN);
	send_int(&w, 11);
	send_int(&w, 12);
	assert_int_equal(sb_watch_subscribe(&w, &late), 0);
	assert_int_equal(sb_watch_seen(&late), 2);
	assert_int_equal(sb_watch_try_changed(&late), -EAGAIN);
	assert_int_equal(read_int(&late), 12);
	assert_int_equal(sb_watch_unsubscribe(&late), 0);
	teardown_int(&w, &rx);
}

static void send_replaces_the_value_and_grows_the_version_by_one(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	setup_int(&w, &storage, 0, &rx);
	for (int i = 1; i <= 5; i++) {
		send_int(&w, 100 + i);
		assert_int_equal(sb_watch_version(&w), i);
		assert_int_equal(storage, 100 + i);
	}
	assert_int_equal(read_int(&rx), 105); /* one value kept, not a queue */
	teardown_int(&w, &rx);
}

static void read_marks_the_version_seen_and_try_changed_follows_it(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	setup_int(&w, &storage, 0, &rx);
	send_int(&w, 1);
	/* try_changed marks nothing: asked twice, it says the same */
	assert_int_equal(sb_watch_try_changed(&rx), 0);
	assert_int_equal(sb_watch_try_changed(&rx), 0);
	assert_int_equal(sb_watch_seen(&rx), 0);
	assert_int_equal(read_int(&rx), 1);
	assert_int_equal(sb_watch_seen(&rx), 1);
	assert_int_equal(sb_watch_try_changed(&rx), -EAGAIN);
	/* a read with nothing new still copies the value */
	assert_int_equal(read_int(&rx), 1);
	teardown_int(&w, &rx);
}

static void values_of_any_size_are_copied_whole(void **state)
{
	(void)state;
	static const size_t sizes[] = { 1, 3, 8, 17, 4096 };
	static unsigned char storage[4096], in[4096], out[4096];
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		size_t n = sizes[k];
		sb_watch w;
		sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
		memset(storage, 0, sizeof storage);
		assert_int_equal(sb_watch_init(&w, storage, n), 0);
		assert_int_equal(sb_watch_subscribe(&w, &rx), 0);
		for (size_t i = 0; i < n; i++)
			in[i] = (unsigned char)(i * 7 + k);
		assert_int_equal(sb_watch_send(&w, in), 0);
		memset(out, 0xee, sizeof out);
		assert_int_equal(sb_watch_read(&rx, out), 0);
		assert_memory_equal(out, in, n);
		if (n < sizeof out)
			assert_int_equal(out[n], 0xee); /* and nothing past it */
		teardown_int(&w, &rx);
	}
}

static void a_null_value_or_output_is_refused_and_changes_nothing(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	setup_int(&w, &storage, 4, &rx);
	send_int(&w, 5);
	assert_int_equal(sb_watch_send(&w, NULL), -EINVAL);
	assert_int_equal(sb_watch_version(&w), 1);
	assert_int_equal(sb_watch_read(&rx, NULL), -EINVAL);
	assert_int_equal(sb_watch_seen(&rx), 0);
	assert_int_equal(sb_watch_send_if(&w, NULL, NULL), -EINVAL);
	assert_int_equal(sb_watch_version(&w), 1);
	assert_int_equal(sb_watch_subscribe(&w, NULL), -EINVAL);
	assert_int_equal(sb_watch_subscribe(NULL, &rx), -EINVAL);
	assert_int_equal(read_int(&rx), 5);
	teardown_int(&w, &rx);
}

/* ---- send_if ---- */

typedef struct bump_arg {
	int add;       /* added to the value in place */
	bool tell;     /* what the callback returns */
	int calls;
} bump_arg;

static bool bump(void *value, void *arg)
{
	bump_arg *a = arg;
	*(int *)value += a->add;
	a->calls++;
	return a->tell;
}

static void send_if_that_returns_false_changes_in_place_but_tells_nobody(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 10, &rx);
	start_changed(&f, &rx, &c);
	bump_arg a = { 5, false, 0 };
	assert_int_equal(sb_watch_send_if(&w, bump, &a), 0);
	assert_int_equal(a.calls, 1);
	assert_int_equal(sb_watch_version(&w), 0);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(changed_poll(&f, &c), SB_PENDING);
	assert_int_equal(sb_watch_try_changed(&rx), -EAGAIN);
	assert_int_equal(read_int(&rx), 15); /* the value did change, silently */
	sb_watch_changed_cancel(&f);
	assert_int_equal(atomic_load(&c.live), 0);
	teardown_int(&w, &rx);
}

static void send_if_that_returns_true_grows_the_version_and_wakes_waiting_futures(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 10, &rx);
	start_changed(&f, &rx, &c);
	bump_arg a = { 1, true, 0 };
	assert_int_equal(sb_watch_send_if(&w, bump, &a), 1);
	assert_int_equal(sb_watch_version(&w), 1);
	assert_int_equal(atomic_load(&c.woken), 1);
	assert_int_equal(changed_poll(&f, &c), 0);
	assert_int_equal(read_int(&rx), 11);
	assert_int_equal(atomic_load(&c.live), 0);
	teardown_int(&w, &rx);
}

static void send_if_after_close_fails_without_calling_the_callback(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	setup_int(&w, &storage, 3, &rx);
	sb_watch_close(&w);
	bump_arg a = { 1, true, 0 };
	assert_int_equal(sb_watch_send_if(&w, bump, &a), -EPIPE);
	assert_int_equal(a.calls, 0);
	assert_int_equal(read_int(&rx), 3);
	teardown_int(&w, &rx);
}

/* ---- the changed future ---- */

static void a_changed_future_completes_on_its_first_poll_without_cloning(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	counting_waker_init(&c);
	setup_int(&w, &storage, 0, &rx);
	send_int(&w, 1);
	sb_watch_changed_init(&f, &rx);
	assert_int_equal(changed_poll(&f, &c), 0);
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(changed_poll(&f, &c), 0); /* done: the same result again */
	assert_int_equal(sb_watch_seen(&rx), 0);   /* and nothing marked seen */
	teardown_int(&w, &rx);
}

static void a_waiting_changed_future_is_woken_once_by_the_next_send(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 0, &rx);
	start_changed(&f, &rx, &c);
	send_int(&w, 1);
	assert_int_equal(atomic_load(&c.woken), 1);
	assert_int_equal(atomic_load(&c.live), 0);
	send_int(&w, 2); /* nobody waits: nothing more */
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(changed_poll(&f, &c), 0);
	assert_int_equal(read_int(&rx), 2);
	teardown_int(&w, &rx);
}

static void one_send_wakes_every_waiting_future_of_every_receiver(void **state)
{
	(void)state;
	enum { N = 4 };
	int storage;
	sb_watch w;
	sb_watch_receiver rx[N];
	sb_watch_changed f[N];
	counting_waker c[N];
	memset(rx, 0, sizeof rx); /* not subscribed */
	storage = 0;
	assert_int_equal(sb_watch_init(&w, &storage, sizeof storage), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(sb_watch_subscribe(&w, &rx[i]), 0);
		start_changed(&f[i], &rx[i], &c[i]);
	}
	send_int(&w, 9);
	for (int i = 0; i < N; i++) {
		assert_int_equal(atomic_load(&c[i].woken), 1);
		assert_int_equal(changed_poll(&f[i], &c[i]), 0);
		assert_int_equal(read_int(&rx[i]), 9);
		assert_int_equal(sb_watch_unsubscribe(&rx[i]), 0);
	}
	assert_int_equal(sb_watch_destroy(&w), 0);
}

static void a_receiver_behind_the_version_does_not_wait(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver ahead = SB_WATCH_RECEIVER_INIT, behind = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 0, &ahead);
	assert_int_equal(sb_watch_subscribe(&w, &behind), 0);
	send_int(&w, 1);
	(void)read_int(&ahead);
	/* ahead waits, behind completes at once: each has its own version */
	start_changed(&f, &ahead, &c);
	assert_int_equal(sb_watch_try_changed(&behind), 0);
	assert_int_equal(sb_watch_changed_blocking(&behind, 0), 0);
	sb_watch_changed_cancel(&f);
	assert_int_equal(sb_watch_unsubscribe(&behind), 0);
	teardown_int(&w, &ahead);
}

static void repolling_with_the_same_waker_does_not_clone_again(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 0, &rx);
	start_changed(&f, &rx, &c);
	assert_int_equal(changed_poll(&f, &c), SB_PENDING);
	assert_int_equal(changed_poll(&f, &c), SB_PENDING);
	assert_int_equal(atomic_load(&c.clones), 1);
	send_int(&w, 1);
	assert_int_equal(changed_poll(&f, &c), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	teardown_int(&w, &rx);
}

static void a_different_waker_replaces_the_old_one_which_is_dropped(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker a, b;
	setup_int(&w, &storage, 0, &rx);
	start_changed(&f, &rx, &a);
	counting_waker_init(&b);
	assert_int_equal(changed_poll(&f, &b), SB_PENDING);
	assert_int_equal(atomic_load(&a.drops), 1);
	assert_int_equal(atomic_load(&a.live), 0);
	assert_int_equal(atomic_load(&b.live), 1);
	send_int(&w, 1);
	assert_int_equal(atomic_load(&a.wakes), 0);
	assert_int_equal(atomic_load(&b.woken), 1);
	assert_int_equal(changed_poll(&f, &b), 0);
	teardown_int(&w, &rx);
}

/* ---- close ---- */

static void close_wakes_waiting_futures_with_epipe_and_later_sends_fail(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 1, &rx);
	start_changed(&f, &rx, &c);
	sb_watch_close(&w);
	assert_true(sb_watch_is_closed(&w));
	assert_int_equal(atomic_load(&c.woken), 1);
	assert_int_equal(changed_poll(&f, &c), -EPIPE);
	assert_int_equal(sb_watch_send(&w, &(int){ 2 }), -EPIPE);
	assert_int_equal(sb_watch_version(&w), 0);
	assert_int_equal(read_int(&rx), 1); /* still readable */
	assert_int_equal(sb_watch_try_changed(&rx), -EPIPE);
	assert_int_equal(sb_watch_changed_blocking(&rx, SB_TIMEOUT_INFINITE), -EPIPE);
	teardown_int(&w, &rx);
}

static void a_receiver_that_has_not_read_the_last_value_sees_it_before_epipe(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	counting_waker_init(&c);
	setup_int(&w, &storage, 1, &rx);
	send_int(&w, 2);
	sb_watch_close(&w);
	sb_watch_changed_init(&f, &rx);
	assert_int_equal(changed_poll(&f, &c), 0);
	assert_int_equal(sb_watch_try_changed(&rx), 0);
	assert_int_equal(read_int(&rx), 2);
	sb_watch_changed_init(&f, &rx);
	assert_int_equal(changed_poll(&f, &c), -EPIPE);
	assert_int_equal(atomic_load(&c.clones), 0);
	teardown_int(&w, &rx);
}

static void a_receiver_subscribed_after_close_reads_the_last_value_and_gets_epipe(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT, late = SB_WATCH_RECEIVER_INIT;
	setup_int(&w, &storage, 1, &rx);
	send_int(&w, 6);
	sb_watch_close(&w);
	assert_int_equal(sb_watch_subscribe(&w, &late), 0);
	assert_int_equal(sb_watch_try_changed(&late), -EPIPE);
	assert_int_equal(read_int(&late), 6);
	assert_int_equal(sb_watch_unsubscribe(&late), 0);
	teardown_int(&w, &rx);
}

static void close_is_idempotent(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	setup_int(&w, &storage, 1, &rx);
	sb_watch_close(&w);
	sb_watch_close(&w);
	assert_true(sb_watch_is_closed(&w));
	assert_int_equal(sb_watch_version(&w), 0);
	assert_int_equal(read_int(&rx), 1);
	teardown_int(&w, &rx);
}

static void send_and_close_with_more_waiters_than_a_wake_batch_complete_them_all(void **state)
{
	(void)state;
	enum { N = 70 };
	static sb_watch_changed f[N];
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	counting_waker c;
	setup_int(&w, &storage, 0, &rx);
	for (int round = 0; round < 2; round++) {
		counting_waker_init(&c);
		for (int i = 0; i < N; i++) {
			sb_watch_changed_init(&f[i], &rx);
			assert_int_equal(changed_poll(&f[i], &c), SB_PENDING);
		}
		assert_int_equal(atomic_load(&c.live), N);
		if (round == 0)
			send_int(&w, 1);
		else
			sb_watch_close(&w);
		assert_int_equal(atomic_load(&c.woken), N);
		assert_int_equal(atomic_load(&c.live), 0);
		for (int i = 0; i < N; i++)
			assert_int_equal(changed_poll(&f[i], &c), round == 0 ? 0 : -EPIPE);
		(void)read_int(&rx);
	}
	teardown_int(&w, &rx);
}

typedef struct reentry {
	sb_watch *w;
	sb_watch_receiver *rx;
	int result;
	int value;
} reentry;

static void send_and_read_from_a_wake(void *p)
{
	reentry *r = p;
	int v = 50;
	r->result = sb_watch_send(r->w, &v);
	CHECK(sb_watch_read(r->rx, &r->value) == 0);
}

/* The wakes run after the lock is released: a waker that sends and reads
 * from its wake does not deadlock. */
static void the_wakes_of_send_and_close_run_after_the_lock_is_released(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant wakes of a watch");
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT, other = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 0, &rx);
	assert_int_equal(sb_watch_subscribe(&w, &other), 0);
	reentry r = { &w, &other, 1, UNTOUCHED };
	start_changed(&f, &rx, &c);
	c.on_wake = send_and_read_from_a_wake;
	c.hook_arg = &r;
	send_int(&w, 49);
	assert_int_equal(r.result, 0);
	assert_int_equal(r.value, 50);
	assert_int_equal(changed_poll(&f, &c), 0);
	assert_int_equal(read_int(&rx), 50);
	start_changed(&f, &rx, &c);
	c.on_wake = send_and_read_from_a_wake;
	c.hook_arg = &r;
	sb_watch_close(&w);
	assert_int_equal(r.result, -EPIPE);
	assert_int_equal(changed_poll(&f, &c), -EPIPE);
	assert_int_equal(sb_watch_unsubscribe(&other), 0);
	teardown_int(&w, &rx);
	sb_watchdog_stop(&wd);
}

static void send_from_the_clone(void *p)
{
	reentry *r = p;
	r->result = sb_watch_send(r->w, &(int){ 77 });
}

/* A changed future clones its waker before it takes the lock: a clone that
 * sends does not deadlock, and the future finds that send. */
static void a_future_whose_waker_clone_sends_completes_without_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on a changed future");
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 0, &rx);
	reentry r = { &w, &rx, 1, 0 };
	counting_waker_init(&c);
	c.on_clone = send_from_the_clone;
	c.hook_arg = &r;
	sb_watch_changed_init(&f, &rx);
	assert_int_equal(changed_poll(&f, &c), 0);
	assert_int_equal(r.result, 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(read_int(&rx), 77);
	teardown_int(&w, &rx);
	sb_watchdog_stop(&wd);
}

/* ---- cancel ---- */

static void cancel_of_a_waiting_future_leaves_the_queue_and_drops_its_waker(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f, g;
	counting_waker c, d;
	setup_int(&w, &storage, 0, &rx);
	start_changed(&f, &rx, &c);
	start_changed(&g, &rx, &d);
	sb_watch_changed_cancel(&f);
	assert_int_equal(atomic_load(&c.drops), 1);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(changed_poll(&f, &c), -ECANCELED);
	send_int(&w, 1);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(atomic_load(&d.woken), 1);
	assert_int_equal(changed_poll(&g, &d), 0);
	teardown_int(&w, &rx);
}

static void a_future_cancelled_after_its_wake_loses_no_change(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 0, &rx);
	start_changed(&f, &rx, &c);
	send_int(&w, 1);
	sb_watch_changed_cancel(&f);
	assert_int_equal(changed_poll(&f, &c), -ECANCELED);
	assert_int_equal(atomic_load(&c.live), 0);
	/* nothing was marked seen: the change is still there */
	assert_int_equal(sb_watch_try_changed(&rx), 0);
	assert_int_equal(read_int(&rx), 1);
	teardown_int(&w, &rx);
}

static void cancel_of_an_idle_or_completed_future_changes_nothing(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	counting_waker_init(&c);
	setup_int(&w, &storage, 0, &rx);
	sb_watch_changed_init(&f, &rx);
	sb_watch_changed_cancel(&f);
	assert_int_equal(changed_poll(&f, &c), -ECANCELED);
	send_int(&w, 1);
	sb_watch_changed_init(&f, &rx);
	assert_int_equal(changed_poll(&f, &c), 0);
	sb_watch_changed_cancel(&f);
	assert_int_equal(changed_poll(&f, &c), 0);
	assert_int_equal(atomic_load(&c.clones), 0);
	teardown_int(&w, &rx); /* no future counted as waiting */
}

static void the_ops_table_drives_the_future(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker k = counting_waker_ref(&c);
	setup_int(&w, &storage, 0, &rx);
	sb_watch_changed_init(&f, &rx);
	assert_int_equal(sb_watch_changed_ops.poll(&f, &k), SB_PENDING);
	send_int(&w, 1);
	assert_int_equal(sb_watch_changed_ops.poll(&f, &k), 0);
	(void)read_int(&rx);
	sb_watch_changed_init(&f, &rx);
	assert_int_equal(sb_watch_changed_ops.poll(&f, &k), SB_PENDING);
	sb_watch_changed_ops.cancel(&f);
	assert_int_equal(sb_watch_changed_poll(&f, &k), -ECANCELED);
	assert_int_equal(atomic_load(&c.live), 0);
	sb_watch_changed_init(&f, &rx);
	assert_int_equal(sb_future_wait_blocking(&f, &sb_watch_changed_ops, 0), -ETIMEDOUT);
	send_int(&w, 2);
	sb_watch_changed_init(&f, &rx);
	assert_int_equal(sb_future_wait_blocking(&f, &sb_watch_changed_ops, 0), 0);
	teardown_int(&w, &rx);
}

/* ---- bad input ---- */

static int changed_poll_typed(void *f, const sb_waker *w)
{
	return sb_watch_changed_poll(f, w);
}

static void a_zeroed_future_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	setup_int(&w, &storage, 3, &rx);
	send_int(&w, 4);
	sb_watch_changed f;
	assert_zeroed_future_is_refused(&f, sizeof f, &sb_watch_changed_ops, changed_poll_typed);
	assert_int_equal(sb_watch_version(&w), 1);
	assert_int_equal(sb_watch_seen(&rx), 0);
	assert_int_equal(read_int(&rx), 4);
	teardown_int(&w, &rx);
}

static void subscribing_a_subscribed_receiver_again_is_einval_and_changes_nothing(void **state)
{
	(void)state;
	int storage;
	sb_watch w, other;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	setup_int(&w, &storage, 3, &rx);
	assert_int_equal(sb_watch_init(&other, &storage, sizeof storage), 0);
	assert_int_equal(sb_watch_subscribe(&w, &rx), -EINVAL);
	assert_int_equal(sb_watch_subscribe(&other, &rx), -EINVAL);
	assert_int_equal(sb_watch_destroy(&other), 0); /* nobody counted there */
	assert_int_equal(sb_watch_unsubscribe(&rx), 0);
	assert_int_equal(sb_watch_destroy(&w), 0);     /* counted once, out once */
}

static void a_receiver_used_after_unsubscribe_or_never_subscribed_is_refused(void **state)
{
	(void)state;
	int storage, out = UNTOUCHED;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT, zeroed = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	counting_waker_init(&c);
	memset(&zeroed, 0, sizeof zeroed);
	setup_int(&w, &storage, 3, &rx);
	assert_int_equal(sb_watch_unsubscribe(&rx), 0);
	sb_watch_receiver *bad[] = { &rx, &zeroed };
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sb_watch_read(bad[i], &out), -EINVAL);
		assert_int_equal(out, UNTOUCHED);
		assert_int_equal(sb_watch_try_changed(bad[i]), -EINVAL);
		assert_int_equal(sb_watch_changed_blocking(bad[i], 0), -EINVAL);
		sb_watch_changed_init(&f, bad[i]);
		assert_int_equal(changed_poll(&f, &c), -EINVAL);
		assert_int_equal(sb_watch_unsubscribe(bad[i]), -EINVAL);
	}
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(sb_watch_destroy(&w), 0); /* counted out once */
}

static void unsubscribe_while_a_changed_future_waits_is_ebusy_and_changes_nothing(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 0, &rx);
	start_changed(&f, &rx, &c);
	assert_int_equal(sb_watch_unsubscribe(&rx), -EBUSY);
	send_int(&w, 1);
	assert_int_equal(sb_watch_unsubscribe(&rx), -EBUSY); /* woken, not yet polled */
	assert_int_equal(changed_poll(&f, &c), 0);
	assert_int_equal(read_int(&rx), 1);
	start_changed(&f, &rx, &c);
	sb_watch_changed_cancel(&f);
	teardown_int(&w, &rx);
}

static void destroy_with_receivers_or_waiters_is_ebusy_and_changes_nothing(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	sb_watch_changed f;
	counting_waker c;
	setup_int(&w, &storage, 0, &rx);
	assert_int_equal(sb_watch_destroy(&w), -EBUSY);
	start_changed(&f, &rx, &c);
	assert_int_equal(sb_watch_destroy(&w), -EBUSY);
	send_int(&w, 1);
	assert_int_equal(changed_poll(&f, &c), 0);
	assert_int_equal(read_int(&rx), 1);
	assert_int_equal(sb_watch_destroy(&w), -EBUSY);
	teardown_int(&w, &rx);
}

/* ---- blocking ---- */

static void a_blocking_changed_wait_tries_once_with_timeout_0_and_times_out(void **state)
{
	(void)state;
	int storage;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	setup_int(&w, &storage, 0, &rx);
	assert_int_equal(sb_watch_changed_blocking(&rx, 0), -ETIMEDOUT);
	assert_int_equal(sb_watch_changed_blocking(&rx, 2 * SB_NSEC_PER_MSEC), -ETIMEDOUT);
	send_int(&w, 1);
	assert_int_equal(sb_watch_changed_blocking(&rx, 0), 0);
	teardown_int(&w, &rx); /* the timed-out waits left the queue */
}

typedef struct waiter_arg {
	sb_watch_receiver rx;
	int results[2];
	int values[2];
} waiter_arg;

static void *blocking_watcher(void *p)
{
	waiter_arg *a = p;
	a->results[0] = sb_watch_changed_blocking(&a->rx, SB_TIMEOUT_INFINITE);
	a->values[0] = UNTOUCHED;
	CHECK(sb_watch_read(&a->rx, &a->values[0]) == 0);
	a->results[1] = sb_watch_changed_blocking(&a->rx, SB_TIMEOUT_INFINITE);
	return NULL;
}

/* A thread blocked on a change is woken by a send, then by close. */
static void blocking_changed_waits_are_ended_by_a_send_and_by_close(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "blocking changed waits");
	int storage = 0;
	sb_watch w;
	assert_int_equal(sb_watch_init(&w, &storage, sizeof storage), 0);
	waiter_arg a = { .rx = SB_WATCH_RECEIVER_INIT };
	assert_int_equal(sb_watch_subscribe(&w, &a.rx), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, blocking_watcher, &a), 0);
	send_int(&w, 5);
	/* the watcher reads 5 and waits again (or finds a change it has not
	 * read, when the close came first: both end the wait) */
	sb_watch_close(&w);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(a.results[0], 0);
	assert_int_equal(a.values[0], 5);
	assert_int_equal(a.results[1], -EPIPE);
	assert_int_equal(sb_watch_unsubscribe(&a.rx), 0);
	assert_int_equal(sb_watch_destroy(&w), 0);
	sb_watchdog_stop(&wd);
}

/* ---- torn-free copies across threads ---- */

enum { BIG = 1024, ROUNDS = 20000 };

typedef struct torn_arg {
	sb_watch *w;
	int rounds;
} torn_arg;

static void *big_sender(void *p)
{
	torn_arg *a = p;
	static uint32_t v[BIG / 4];
	for (int k = 1; k <= a->rounds; k++) {
		for (size_t i = 0; i < BIG / 4; i++)
			v[i] = (uint32_t)k;
		CHECK(sb_watch_send(a->w, v) == 0);
	}
	sb_watch_close(a->w);
	return NULL;
}

static void a_large_value_is_never_torn_nor_older_than_one_read_before(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "torn-free reads of a 1 KiB value");
	static uint32_t storage[BIG / 4], out[BIG / 4];
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	assert_int_equal(sb_watch_init(&w, storage, BIG), 0);
	assert_int_equal(sb_watch_subscribe(&w, &rx), 0);
	torn_arg a = { &w, ROUNDS };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, big_sender, &a), 0);
	uint32_t last = 0;
	size_t reads = 0;
	while (sb_watch_changed_blocking(&rx, SB_TIMEOUT_INFINITE) == 0) {
		assert_int_equal(sb_watch_read(&rx, out), 0);
		for (size_t i = 1; i < BIG / 4; i++)
			assert_int_equal(out[i], out[0]);
		assert_true(out[0] >= last);
		/* the version read with the value is the send that wrote it */
		assert_int_equal(sb_watch_seen(&rx), out[0]);
		last = out[0];
		reads++;
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(last, ROUNDS);
	assert_true(reads >= 1);
	assert_int_equal(sb_watch_unsubscribe(&rx), 0);
	assert_int_equal(sb_watch_destroy(&w), 0);
	sb_watchdog_stop(&wd);
}

/* ---- one-word values (read without the lock) ---- */

static size_t read_word(sb_watch_receiver *rx)
{
	size_t v = 0;
	assert_int_equal(sb_watch_read(rx, &v), 0);
	return v;
}

static bool add_word(void *value, void *arg)
{
	bump_arg *a = arg;
	*(size_t *)value += (size_t)a->add;
	a->calls++;
	return a->tell;
}

static void a_one_word_value_reads_what_send_and_send_if_left(void **state)
{
	(void)state;
	size_t storage = 10, v;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	assert_int_equal(sb_watch_init(&w, &storage, sizeof storage), 0);
	assert_int_equal(sb_watch_subscribe(&w, &rx), 0);
	assert_int_equal(read_word(&rx), 10);
	v = 11;
	assert_int_equal(sb_watch_send(&w, &v), 0);
	assert_int_equal(read_word(&rx), 11);
	assert_int_equal(sb_watch_seen(&rx), 1);
	bump_arg a = { 5, false, 0 };
	assert_int_equal(sb_watch_send_if(&w, add_word, &a), 0);
	assert_int_equal(read_word(&rx), 16); /* changed in place, silently */
	assert_int_equal(sb_watch_seen(&rx), 1);
	a.tell = true;
	assert_int_equal(sb_watch_send_if(&w, add_word, &a), 1);
	assert_int_equal(sb_watch_try_changed(&rx), 0);
	assert_int_equal(read_word(&rx), 21);
	assert_int_equal(sb_watch_seen(&rx), 2);
	sb_watch_close(&w);
	assert_int_equal(read_word(&rx), 21);
	assert_int_equal(sb_watch_try_changed(&rx), -EPIPE);
	teardown_int(&w, &rx);
}

static void a_statically_initialised_one_word_value_reads_its_initial_value_then_sends(void **state)
{
	(void)state;
	static size_t storage = 7;
	static sb_watch w = SB_WATCH_INIT(&storage, sizeof(size_t));
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT, rx2 = SB_WATCH_RECEIVER_INIT;
	assert_int_equal(sb_watch_subscribe(&w, &rx), 0);
	assert_int_equal(sb_watch_subscribe(&w, &rx2), 0);
	assert_int_equal(read_word(&rx), 7);
	assert_int_equal(read_word(&rx), 7);
	size_t v = 8;
	assert_int_equal(sb_watch_send(&w, &v), 0);
	assert_int_equal(read_word(&rx), 8);
	assert_int_equal(read_word(&rx2), 8);
	assert_int_equal(sb_watch_seen(&rx2), 1);
	assert_int_equal(sb_watch_unsubscribe(&rx2), 0);
	teardown_int(&w, &rx);
}

/* A read of the version it read last returns the value again, for any
 * size: a multi-word value from the storage (its receiver's seen state has
 * NO_WORD), a one-word one from the word, also when another receiver
 * stored that word after this one subscribed. */
static void a_read_of_an_unchanged_version_returns_the_value_again(void **state)
{
	(void)state;
	size_t pair[2] = { 5, 6 }, got[2] = { 0, 0 };
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	assert_int_equal(sb_watch_init(&w, pair, sizeof pair), 0);
	assert_int_equal(sb_watch_subscribe(&w, &rx), 0);
	for (int i = 0; i < 2; i++) {
		memset(got, 0, sizeof got);
		assert_int_equal(sb_watch_read(&rx, got), 0);
		assert_int_equal(got[0], 5);
		assert_int_equal(got[1], 6);
		assert_int_equal(sb_watch_seen(&rx), 0);
	}
	assert_int_equal(sb_watch_unsubscribe(&rx), 0);
	assert_int_equal(sb_watch_destroy(&w), 0);

	static size_t storage = 9;
	static sb_watch sw = SB_WATCH_INIT(&storage, sizeof(size_t));
	sb_watch_receiver a = SB_WATCH_RECEIVER_INIT, b = SB_WATCH_RECEIVER_INIT;
	assert_int_equal(sb_watch_subscribe(&sw, &a), 0);
	assert_int_equal(sb_watch_subscribe(&sw, &b), 0);
	assert_int_equal(read_word(&b), 9); /* stores the word */
	assert_int_equal(read_word(&a), 9);
	assert_int_equal(read_word(&a), 9);
	size_t v = 10;
	assert_int_equal(sb_watch_send(&sw, &v), 0);
	assert_int_equal(read_word(&a), 10);
	assert_int_equal(read_word(&a), 10);
	assert_int_equal(sb_watch_seen(&a), 1);
	assert_int_equal(sb_watch_unsubscribe(&b), 0);
	teardown_int(&sw, &a);
}

typedef struct word_arg {
	sb_watch *w;
	size_t rounds;
} word_arg;

static void *word_sender(void *p)
{
	word_arg *a = p;
	for (size_t k = 1; k <= a->rounds; k++)
		CHECK(sb_watch_send(a->w, &k) == 0);
	sb_watch_close(a->w);
	return NULL;
}

static void a_one_word_value_read_beside_a_sender_is_the_version_it_marks_seen(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "lock-free reads of a one-word value");
	size_t storage = 0;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	assert_int_equal(sb_watch_init(&w, &storage, sizeof storage), 0);
	assert_int_equal(sb_watch_subscribe(&w, &rx), 0);
	word_arg a = { &w, 200000 };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, word_sender, &a), 0);
	size_t last = 0, reads = 0;
	/* Reads as fast as it can (no wait between them), so that reads land
	 * inside sends. */
	while (sb_watch_try_changed(&rx) != -EPIPE) {
		size_t v = read_word(&rx);
		/* the version marked seen is the send that wrote the value */
		assert_int_equal(sb_watch_seen(&rx), v);
		assert_true(v >= last);
		last = v;
		reads++;
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(last, a.rounds);
	assert_true(reads >= 1);
	assert_int_equal(sb_watch_unsubscribe(&rx), 0);
	assert_int_equal(sb_watch_destroy(&w), 0);
	sb_watchdog_stop(&wd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(a_one_word_value_reads_what_send_and_send_if_left),
		cmocka_unit_test(a_statically_initialised_one_word_value_reads_its_initial_value_then_sends),
		cmocka_unit_test(a_one_word_value_read_beside_a_sender_is_the_version_it_marks_seen),
		cmocka_unit_test(a_read_of_an_unchanged_version_returns_the_value_again),
		cmocka_unit_test(the_static_initialiser_gives_an_open_watch_at_version_0),
		cmocka_unit_test(init_refuses_bad_arguments_and_leaves_the_watch_unchanged),
		cmocka_unit_test(a_new_receiver_has_seen_the_current_version_and_reads_the_current_value),
		cmocka_unit_test(send_replaces_the_value_and_grows_the_version_by_one),
		cmocka_unit_test(read_marks_the_version_seen_and_try_changed_follows_it),
		cmocka_unit_test(values_of_any_size_are_copied_whole),
		cmocka_unit_test(a_null_value_or_output_is_refused_and_changes_nothing),
		cmocka_unit_test(send_if_that_returns_false_changes_in_place_but_tells_nobody),
		cmocka_unit_test(send_if_that_returns_true_grows_the_version_and_wakes_waiting_futures),
		cmocka_unit_test(send_if_after_close_fails_without_calling_the_callback),
		cmocka_unit_test(a_changed_future_completes_on_its_first_poll_without_cloning),
		cmocka_unit_test(a_waiting_changed_future_is_woken_once_by_the_next_send),
		cmocka_unit_test(one_send_wakes_every_waiting_future_of_every_receiver),
		cmocka_unit_test(a_receiver_behind_the_version_does_not_wait),
		cmocka_unit_test(repolling_with_the_same_waker_does_not_clone_again),
		cmocka_unit_test(a_different_waker_replaces_the_old_one_which_is_dropped),
		cmocka_unit_test(close_wakes_waiting_futures_with_epipe_and_later_sends_fail),
		cmocka_unit_test(a_receiver_that_has_not_read_the_last_value_sees_it_before_epipe),
		cmocka_unit_test(a_receiver_subscribed_after_close_reads_the_last_value_and_gets_epipe),
		cmocka_unit_test(close_is_idempotent),
		cmocka_unit_test(send_and_close_with_more_waiters_than_a_wake_batch_complete_them_all),
		cmocka_unit_test(the_wakes_of_send_and_close_run_after_the_lock_is_released),
		cmocka_unit_test(a_future_whose_waker_clone_sends_completes_without_deadlock),
		cmocka_unit_test(cancel_of_a_waiting_future_leaves_the_queue_and_drops_its_waker),
		cmocka_unit_test(a_future_cancelled_after_its_wake_loses_no_change),
		cmocka_unit_test(cancel_of_an_idle_or_completed_future_changes_nothing),
		cmocka_unit_test(the_ops_table_drives_the_future),
		cmocka_unit_test(a_zeroed_future_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(subscribing_a_subscribed_receiver_again_is_einval_and_changes_nothing),
		cmocka_unit_test(a_receiver_used_after_unsubscribe_or_never_subscribed_is_refused),
		cmocka_unit_test(unsubscribe_while_a_changed_future_waits_is_ebusy_and_changes_nothing),
		cmocka_unit_test(destroy_with_receivers_or_waiters_is_ebusy_and_changes_nothing),
		cmocka_unit_test(a_blocking_changed_wait_tries_once_with_timeout_0_and_times_out),
		cmocka_unit_test(blocking_changed_waits_are_ended_by_a_send_and_by_close),
		cmocka_unit_test(a_large_value_is_never_torn_nor_older_than_one_read_before),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
