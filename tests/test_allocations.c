/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Zero heap allocations on every primitive path: this program interposes the
 * allocator and counts every call while it drives each path.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <syncband/syncband.h>

#include "counting_waker.h"
#include "watchdog.h"

/* This program exists to count: it interposes in every build it is built in. */
#define SB_TEST_COUNT_ALLOCATIONS
#include "count_allocations.h"

static void the_counter_sees_an_allocation(void **state)
{
	(void)state;
	long before = atomic_load(&allocations);
	void *volatile p = malloc(16);
	free(p);
	assert_int_equal(atomic_load(&allocations) - before, 1);
}

static void every_semaphore_path_allocates_nothing(void **state)
{
	(void)state;
	counting_waker c, d;
	counting_waker_init(&c);
	counting_waker_init(&d);
	sb_waker wc = counting_waker_ref(&c), wd = counting_waker_ref(&d);
	long before = atomic_load(&allocations);

	sb_semaphore s;
	assert_int_equal(sb_semaphore_init(&s, 1), 0);
	assert_int_equal(sb_semaphore_try_acquire(&s, 1), 0);
	assert_int_equal(sb_semaphore_release(&s, 1), 0);

	/* ready, pending, handoff, re-registration, partial grant, cancels */
	enum { N = 40 };
	sb_semaphore_acquire f[N];
	for (int i = 0; i < N; i++) {
		sb_semaphore_acquire_init(&f[i], &s, 2);
		assert_int_equal(sb_semaphore_acquire_poll(&f[i], &wc), SB_PENDING);
	}
	assert_int_equal(sb_semaphore_acquire_poll(&f[1], &wd), SB_PENDING);
	sb_semaphore_acquire_cancel(&f[0]); /* after a partial grant */
	assert_int_equal(sb_semaphore_release(&s, 2 * 34 + 1), 0); /* > one wake batch */
	sb_semaphore_acquire_cancel(&f[1]); /* after a full grant */
	sb_semaphore_acquire_cancel(&f[N - 1]); /* nothing granted */
	for (int i = 2; i < 37; i++)
		assert_int_equal(sb_semaphore_acquire_poll(&f[i], &wc), 0);
	sb_semaphore_close(&s);
	for (int i = 37; i < N - 1; i++)
		assert_int_equal(sb_semaphore_acquire_poll(&f[i], &wc), -ESHUTDOWN);
	assert_int_equal(sb_semaphore_release(&s, SIZE_MAX), -EOVERFLOW);
	assert_int_equal(sb_semaphore_destroy(&s), 0);

	/* the thread-parking path, timed out */
	sb_semaphore t = SB_SEMAPHORE_INIT(0);
	assert_int_equal(sb_semaphore_acquire_blocking(&t, 1, 1000000), -ETIMEDOUT);

	assert_int_equal(atomic_load(&allocations) - before, 0);
	assert_int_equal(atomic_load(&c.live) + atomic_load(&d.live), 0);
}

static void every_mutex_condvar_and_event_path_allocates_nothing(void **state)
{
	(void)state;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	long before = atomic_load(&allocations);

	/* mutex: fast paths, queue, handoff, cancel after handoff */
	sb_mutex m = SB_MUTEX_INIT;
	sb_mutex_lock l[3];
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	for (int i = 0; i < 3; i++) {
		sb_mutex_lock_init(&l[i], &m);
		assert_int_equal(sb_mutex_lock_poll(&l[i], &w), SB_PENDING);
	}
	assert_int_equal(sb_mutex_unlock(&m), 0);
	sb_mutex_lock_cancel(&l[0]);
	assert_int_equal(sb_mutex_lock_poll(&l[1], &w), 0);
	sb_mutex_lock_cancel(&l[2]);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_lock_blocking(&m, 0), 0);
	assert_int_equal(sb_mutex_lock_blocking(&m, 1000), -ETIMEDOUT);
	assert_int_equal(sb_mutex_unlock(&m), 0);

	/* condvar: wait, notify_one, notify_all, cancel in each phase */
	sb_condvar cv = SB_CONDVAR_INIT;
	sb_condvar_wait cw[3];
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sb_mutex_try_lock(&m), 0);
		sb_condvar_wait_init(&cw[i], &cv, &m);
		assert_int_equal(sb_condvar_wait_poll(&cw[i], &w), SB_PENDING);
	}
	sb_condvar_notify_one(&cv);
	sb_condvar_wait_cancel(&cw[0]); /* passes the notification to cw[1] */
	assert_int_equal(sb_condvar_wait_poll(&cw[1], &w), 0);
	sb_condvar_notify_all(&cv);
	assert_int_equal(sb_condvar_wait_poll(&cw[2], &w), SB_PENDING); /* re-acquiring */
	sb_condvar_wait_cancel(&cw[2]);
	assert_int_equal(sb_mutex_unlock(&m), 0);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	assert_int_equal(sb_condvar_wait_blocking(&cv, &m, 1000), -ETIMEDOUT);
	assert_int_equal(sb_mutex_unlock(&m), 0);

	/* events */
	sb_event e = SB_EVENT_INIT(0);
	sb_event_wait ew[40];
	for (int i = 0; i < 40; i++) {
		sb_event_wait_init(&ew[i], &e);
		assert_int_equal(sb_event_wait_poll(&ew[i], &w), SB_PENDING);
	}
	sb_event_wait_cancel(&ew[0]);
	sb_event_set(&e);
	sb_event_reset(&e);
	for (int i = 1; i < 40; i++)
		assert_int_equal(sb_event_wait_poll(&ew[i], &w), 0);
	assert_int_equal(sb_event_wait_blocking(&e, 1000), -ETIMEDOUT);
	sb_auto_event a = SB_AUTO_EVENT_INIT(0);
	sb_auto_event_wait aw[2];
	for (int i = 0; i < 2; i++) {
		sb_auto_event_wait_init(&aw[i], &a);
		assert_int_equal(sb_auto_event_wait_poll(&aw[i], &w), SB_PENDING);
	}
	sb_auto_event_set(&a);
	sb_auto_event_wait_cancel(&aw[0]);
	assert_int_equal(sb_auto_event_wait_poll(&aw[1], &w), 0);
	sb_auto_event_set(&a);
	assert_int_equal(sb_auto_event_try_wait(&a), 0);
	assert_int_equal(sb_auto_event_wait_blocking(&a, 1000), -ETIMEDOUT);

	assert_int_equal(atomic_load(&allocations) - before, 0);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void every_barrier_path_allocates_nothing(void **state)
{
	(void)state;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	long before = atomic_load(&allocations);

	/* a generation of 40 (past a wake batch), a cancel that withdraws, a
	 * cancel of a released wait, the blocking wait */
	sb_barrier b;
	assert_int_equal(sb_barrier_init(&b, 40), 0);
	sb_barrier_wait f[41];
	for (int i = 0; i < 40; i++) {
		sb_barrier_wait_init(&f[i], &b);
		assert_int_equal(sb_barrier_wait_poll(&f[i], &w), SB_PENDING);
		if (i == 0)
			sb_barrier_wait_cancel(&f[0]); /* withdrawn */
	}
	sb_barrier_wait_init(&f[40], &b);
	assert_int_equal(sb_barrier_wait_poll(&f[40], &w), 0);
	sb_barrier_wait_cancel(&f[1]); /* released, not observed */
	for (int i = 2; i < 40; i++)
		assert_int_equal(sb_barrier_wait_poll(&f[i], &w), 0);
	assert_int_equal(sb_barrier_wait_blocking(&b, 1000), -ETIMEDOUT);
	assert_int_equal(sb_barrier_destroy(&b), 0);

	assert_int_equal(atomic_load(&allocations) - before, 0);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void every_once_path_allocates_nothing(void **state)
{
	(void)state;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	long before = atomic_load(&allocations);

	/* run, queue past a wake batch, fail (hand on), cancel the handed
	 * waiter, the runner's cancel, success to many, the done fast paths */
	sb_once o = SB_ONCE_INIT;
	sb_once_wait f[40];
	for (int i = 0; i < 40; i++) {
		sb_once_wait_init(&f[i], &o);
		assert_int_equal(sb_once_wait_poll(&f[i], &w), i == 0 ? SB_ONCE_RUN : SB_PENDING);
	}
	assert_int_equal(sb_once_fail(&o), 0);
	sb_once_wait_cancel(&f[1]); /* handed the job, never told: passes it to f[2] */
	assert_int_equal(sb_once_wait_poll(&f[2], &w), SB_ONCE_RUN);
	sb_once_wait_cancel(&f[2]);
	assert_int_equal(sb_once_wait_poll(&f[3], &w), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	for (int i = 4; i < 40; i++)
		assert_int_equal(sb_once_wait_poll(&f[i], &w), 0);
	assert_true(sb_once_is_done(&o));
	assert_int_equal(sb_once_try(&o), 0);
	assert_int_equal(sb_once_wait_blocking(&o, 0), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
	sb_once b = SB_ONCE_INIT;
	assert_int_equal(sb_once_wait_blocking(&b, 0), SB_ONCE_RUN);
	assert_int_equal(sb_once_wait_blocking(&b, 1000), -ETIMEDOUT); /* parked, timed out */
	assert_int_equal(sb_once_complete(&b), 0);

	assert_int_equal(atomic_load(&allocations) - before, 0);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void every_rwlock_path_allocates_nothing(void **state)
{
	(void)state;
	counting_waker c, d;
	counting_waker_init(&c);
	counting_waker_init(&d);
	sb_waker wc = counting_waker_ref(&c), wd = counting_waker_ref(&d);
	long before = atomic_load(&allocations);

	sb_rwlock rw;
	assert_int_equal(sb_rwlock_init(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_write(&rw), 0);

	/* a run longer than a wake batch, a writer behind it, re-registration,
	 * cancels before and after a grant, downgrade, upgrade */
	enum { N = 40 };
	sb_rwlock_lock f[N], w, u, up;
	for (int i = 0; i < N; i++) {
		sb_rwlock_read_init(&f[i], &rw);
		assert_int_equal(sb_rwlock_lock_poll(&f[i], &wc), SB_PENDING);
	}
	sb_rwlock_write_init(&w, &rw);
	assert_int_equal(sb_rwlock_lock_poll(&w, &wc), SB_PENDING);
	assert_int_equal(sb_rwlock_lock_poll(&f[1], &wd), SB_PENDING);
	sb_rwlock_lock_cancel(&f[0]); /* nothing granted */
	assert_int_equal(sb_rwlock_downgrade(&rw), 0);
	sb_rwlock_lock_cancel(&f[1]); /* granted */
	for (int i = 2; i < N; i++)
		assert_int_equal(sb_rwlock_lock_poll(&f[i], &wc), 0);
	for (int i = 2; i < N + 1; i++)
		assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_lock_poll(&w, &wc), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	sb_rwlock_upgradable_read_init(&u, &rw);
	assert_int_equal(sb_rwlock_lock_poll(&u, &wc), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	sb_rwlock_upgrade_init(&up, &rw);
	assert_int_equal(sb_rwlock_lock_poll(&up, &wc), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_lock_poll(&up, &wc), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);

	/* the thread-parking path, timed out */
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_write_blocking(&rw, 1000000), -ETIMEDOUT);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);

	assert_int_equal(atomic_load(&allocations) - before, 0);
	assert_int_equal(atomic_load(&c.live) + atomic_load(&d.live), 0);
}

static void every_latch_path_allocates_nothing(void **state)
{
	(void)state;
	counting_waker c, d;
	counting_waker_init(&c);
	counting_waker_init(&d);
	sb_waker w = counting_waker_ref(&c), wd = counting_waker_ref(&d);
	long before = atomic_load(&allocations);

	/* a crowd past one wake batch, a re-registration, a cancel, a reopen */
	sb_latch l = SB_LATCH_INIT(2);
	enum { N = 40 };
	sb_latch_wait f[N];
	for (int i = 0; i < N; i++) {
		sb_latch_wait_init(&f[i], &l);
		assert_int_equal(sb_latch_wait_poll(&f[i], &w), SB_PENDING);
	}
	assert_int_equal(sb_latch_wait_poll(&f[1], &wd), SB_PENDING);
	sb_latch_wait_cancel(&f[0]);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	for (int i = 1; i < N; i++)
		assert_int_equal(sb_latch_wait_poll(&f[i], i == 1 ? &wd : &w), 0);
	assert_int_equal(sb_latch_try_wait(&l), 0);
	assert_int_equal(sb_latch_add(&l, 1), 0);
	assert_int_equal(sb_latch_wait_blocking(&l, 1000), -ETIMEDOUT);
	assert_int_equal(sb_latch_count_down(&l, 1), 0);
	assert_int_equal(sb_latch_wait_blocking(&l, 0), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);

	assert_int_equal(atomic_load(&allocations) - before, 0);
	assert_int_equal(atomic_load(&c.live) + atomic_load(&d.live), 0);
}

/* send_if's callback: changes the first long, tells receivers if *arg. */
static bool watch_touch(void *value, void *arg)
{
	((long *)value)[0]++;
	return *(bool *)arg;
}

static void every_watch_path_allocates_nothing(void **state)
{
	(void)state;
	counting_waker c, d;
	counting_waker_init(&c);
	counting_waker_init(&d);
	sb_waker w = counting_waker_ref(&c), wd = counting_waker_ref(&d);
	long before = atomic_load(&allocations);

	/* sends inline and to waiters past one wake batch, send_if both ways,
	 * reads, re-polls with a new waker, cancels, blocking timeouts, close */
	long storage[4] = { 0 }, value[4] = { 1, 2, 3, 4 }, out[4];
	sb_watch wt;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	assert_int_equal(sb_watch_init(&wt, storage, sizeof storage), 0);
	assert_int_equal(sb_watch_subscribe(&wt, &rx), 0);
	assert_int_equal(sb_watch_send(&wt, value), 0);
	assert_int_equal(sb_watch_read(&rx, out), 0);
	assert_int_equal(sb_watch_changed_blocking(&rx, 1000), -ETIMEDOUT);
	enum { N = 40 };
	sb_watch_changed f[N];
	for (int i = 0; i < N; i++) {
		sb_watch_changed_init(&f[i], &rx);
		assert_int_equal(sb_watch_changed_poll(&f[i], &w), SB_PENDING);
	}
	assert_int_equal(sb_watch_changed_poll(&f[1], &wd), SB_PENDING);
	sb_watch_changed_cancel(&f[0]);
	assert_int_equal(sb_watch_send_if(&wt, watch_touch, &(bool){ false }), 0);
	assert_int_equal(sb_watch_send_if(&wt, watch_touch, &(bool){ true }), 1);
	for (int i = 1; i < N; i++)
		assert_int_equal(sb_watch_changed_poll(&f[i], &w), 0);
	assert_int_equal(sb_watch_changed_blocking(&rx, 0), 0);
	assert_int_equal(sb_watch_read(&rx, out), 0);
	for (int i = 0; i < N; i++) {
		sb_watch_changed_init(&f[i], &rx);
		assert_int_equal(sb_watch_changed_poll(&f[i], &w), SB_PENDING);
	}
	sb_watch_close(&wt);
	for (int i = 0; i < N; i++)
		assert_int_equal(sb_watch_changed_poll(&f[i], &w), -EPIPE);
	assert_int_equal(sb_watch_send(&wt, value), -EPIPE);
	assert_int_equal(sb_watch_unsubscribe(&rx), 0);
	assert_int_equal(sb_watch_destroy(&wt), 0);

	assert_int_equal(atomic_load(&allocations) - before, 0);
	assert_int_equal(atomic_load(&c.live) + atomic_load(&d.live), 0);
}

static void every_channel_path_allocates_nothing(void **state)
{
	(void)state;
	counting_waker c, d;
	counting_waker_init(&c);
	counting_waker_init(&d);
	sb_waker w = counting_waker_ref(&c), wd = counting_waker_ref(&d);
	long before = atomic_load(&allocations);

	/* the ring, batches, eviction, handoffs both ways, cancels, a close
	 * past one wake batch, blocking timeouts */
	long slots[4], items[8], out[8];
	for (int i = 0; i < 8; i++)
		items[i] = i;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(long), 4), 0);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 8), 4);
	assert_int_equal(sb_channel_force_send(&ch, &items[5], &out[0]), 1);
	sb_channel_send s[2];
	for (int i = 0; i < 2; i++) {
		sb_channel_send_init(&s[i], &ch, &items[i]);
		assert_int_equal(sb_channel_send_poll(&s[i], &w), SB_PENDING);
	}
	assert_int_equal(sb_channel_send_poll(&s[1], &wd), SB_PENDING);
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 5), 5); /* 4, then from s[0] */
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 8), 1); /* s[1] refilled the ring */
	assert_int_equal(sb_channel_send_poll(&s[0], &w), 0);
	assert_int_equal(sb_channel_send_cancel(&s[1]), 0); /* taken already */
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 8), -EAGAIN);
	assert_int_equal(sb_channel_recv_blocking(&ch, &out[0], 1000), -ETIMEDOUT);
	enum { N = 40 };
	sb_channel_recv r[N];
	for (int i = 0; i < N; i++) {
		sb_channel_recv_many_init(&r[i], &ch, &out[i % 8], 1);
		assert_int_equal(sb_channel_recv_poll(&r[i], &w), SB_PENDING);
	}
	assert_int_equal(sb_channel_try_send(&ch, &items[3]), 0); /* straight to r[0] */
	assert_int_equal(sb_channel_recv_cancel(&r[0]), 0);
	assert_int_equal(sb_channel_recv_cancel(&r[1]), -ECANCELED);
	sb_channel_close(&ch);
	for (int i = 2; i < N; i++)
		assert_int_equal(sb_channel_recv_poll(&r[i], &w), -EPIPE);
	assert_int_equal(sb_channel_send_blocking(&ch, &items[0], 0), -EPIPE);
	assert_int_equal(sb_channel_destroy(&ch), 0);

	sb_channel rv = SB_CHANNEL_INIT(NULL, sizeof(long), 0);
	sb_channel_recv one;
	sb_channel_recv_init(&one, &rv, &out[0]);
	assert_int_equal(sb_channel_recv_poll(&one, &w), SB_PENDING);
	assert_int_equal(sb_channel_send_blocking(&rv, &items[7], 0), 0);
	assert_int_equal(sb_channel_recv_poll(&one, &w), 0);
	assert_int_equal(out[0], 7);
	assert_int_equal(sb_channel_destroy(&rv), 0);

	assert_int_equal(atomic_load(&allocations) - before, 0);
	assert_int_equal(atomic_load(&c.live) + atomic_load(&d.live), 0);
}

static void every_broadcast_path_allocates_nothing(void **state)
{
	(void)state;
	counting_waker c, d;
	counting_waker_init(&c);
	counting_waker_init(&d);
	sb_waker w = counting_waker_ref(&c), wd = counting_waker_ref(&d);
	long before = atomic_load(&allocations);

	/* subscribe, fan-out to more waiting receives than a wake batch, a
	 * lag, back-pressured senders let in by a read and an unsubscribe,
	 * cancels, close, blocking timeouts */
	enum { N = 40 };
	long slots[2], item = 1, out[N];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(long), 2, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx[N];
	sb_broadcast_recv r[N];
	for (int i = 0; i < N; i++) {
		rx[i] = (sb_broadcast_receiver)SB_BROADCAST_RECEIVER_INIT;
		assert_int_equal(sb_broadcast_subscribe(&bc, &rx[i]), 0);
		sb_broadcast_recv_init(&r[i], &rx[i], &out[i]);
		assert_int_equal(sb_broadcast_recv_poll(&r[i], &w), SB_PENDING);
	}
	assert_int_equal(sb_broadcast_try_send(&bc, &item), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(sb_broadcast_recv_poll(&r[i], &w), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(sb_broadcast_try_send(&bc, &item), 0);
	assert_int_equal(sb_broadcast_try_recv(&rx[0], &out[0]), -EOVERFLOW);
	assert_int_equal(sb_broadcast_recv_blocking(&rx[0], &out[0], 0), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(sb_broadcast_unsubscribe(&rx[i]), 0);
	sb_broadcast_close(&bc);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);

	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(long), 1, SB_BROADCAST_BACKPRESSURE),
			 0);
	assert_int_equal(sb_broadcast_subscribe(&bc, &rx[0]), 0);
	assert_int_equal(sb_broadcast_subscribe(&bc, &rx[1]), 0);
	assert_int_equal(sb_broadcast_send_blocking(&bc, &item, 0), 0);
	assert_int_equal(sb_broadcast_send_blocking(&bc, &item, 1000), -ETIMEDOUT);
	sb_broadcast_send s[3];
	for (int i = 0; i < 3; i++) {
		sb_broadcast_send_init(&s[i], &bc, &item);
		assert_int_equal(sb_broadcast_send_poll(&s[i], i ? &wd : &w), SB_PENDING);
	}
	assert_int_equal(sb_broadcast_try_recv(&rx[0], &out[0]), 0);
	assert_int_equal(sb_broadcast_try_recv(&rx[1], &out[0]), 0); /* lets s[0] in */
	assert_int_equal(sb_broadcast_send_poll(&s[0], &w), 0);
	assert_int_equal(sb_broadcast_try_recv(&rx[1], &out[0]), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&rx[0]), 0); /* lets s[1] in */
	assert_int_equal(sb_broadcast_send_cancel(&s[1]), 0);
	assert_int_equal(sb_broadcast_send_cancel(&s[2]), -ECANCELED);
	sb_broadcast_recv_init(&r[0], &rx[1], &out[0]);
	assert_int_equal(sb_broadcast_recv_poll(&r[0], &w), 0);
	sb_broadcast_recv_init(&r[0], &rx[1], &out[0]);
	assert_int_equal(sb_broadcast_recv_poll(&r[0], &w), SB_PENDING);
	assert_int_equal(sb_broadcast_recv_cancel(&r[0]), -ECANCELED);
	assert_int_equal(sb_broadcast_recv_blocking(&rx[1], &out[0], 1000), -ETIMEDOUT);
	sb_broadcast_recv_init(&r[0], &rx[1], &out[0]);
	assert_int_equal(sb_broadcast_recv_poll(&r[0], &w), SB_PENDING);
	sb_broadcast_close(&bc);
	assert_int_equal(sb_broadcast_recv_poll(&r[0], &w), -EPIPE);
	assert_int_equal(sb_broadcast_unsubscribe(&rx[1]), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);

	assert_int_equal(atomic_load(&allocations) - before, 0);
	assert_int_equal(atomic_load(&c.live) + atomic_load(&d.live), 0);
}

typedef struct blocked {
	sb_semaphore sem;
	atomic_int done;
	int result;
} blocked;

static void every_select_path_allocates_nothing(void **state)
{
	(void)state;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	long before = atomic_load(&allocations);

	/* a case ready at once, cases that wait, a claim won and one lost, a
	 * permit handed back, a deadline, a cancel */
	long slots[2][1], got[2], item = 7;
	sb_channel ch[2];
	sb_semaphore sem;
	assert_int_equal(sb_semaphore_init(&sem, 0), 0);
	for (int round = 0; round < 3; round++) {
		sb_channel_recv r[2];
		for (int i = 0; i < 2; i++) {
			assert_int_equal(sb_channel_init(&ch[i], slots[i], sizeof(long), 1), 0);
			sb_channel_recv_init(&r[i], &ch[i], &got[i]);
		}
		sb_semaphore_acquire a;
		sb_semaphore_acquire_init(&a, &sem, 1);
		sb_deadline d;
		sb_deadline_init(&d, &r[1], &sb_channel_recv_ops);
		sb_select_case cases[3] = { SB_SELECT_CASE(&r[0], &sb_channel_recv_ops),
					    SB_SELECT_CASE(&d, &sb_deadline_ops),
					    SB_SELECT_CASE(&a, &sb_semaphore_acquire_ops) };
		sb_select s;
		assert_int_equal(sb_select_init(&s, cases, 3, (uint32_t)round, 0), 0);
		assert_int_equal(sb_select_poll(&s, &w), SB_PENDING);
		assert_int_equal(sb_semaphore_release(&sem, 1), 0);
		if (round == 0) {
			assert_int_equal(sb_channel_try_send(&ch[0], &item), 0);
			assert_int_equal(sb_channel_try_send(&ch[1], &item), 0); /* lost: the ring */
			assert_int_equal(sb_select_poll(&s, &w), 0);
		} else if (round == 1) {
			sb_deadline_expire(&d);
			assert_int_equal(sb_select_poll(&s, &w), 0);
		} else {
			assert_int_equal(sb_select_cancel(&s), -ECANCELED);
		}
		for (int i = 0; i < 2; i++) {
			(void)sb_channel_try_recv(&ch[i], &got[i]);
			assert_int_equal(sb_channel_destroy(&ch[i]), 0);
		}
		(void)sb_semaphore_try_acquire(&sem, 1);
	}
	assert_int_equal(sb_semaphore_destroy(&sem), 0);

	assert_int_equal(atomic_load(&allocations) - before, 0);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void *block(void *p)
{
	blocked *b = p;
	b->result = sb_semaphore_acquire_blocking(&b->sem, 1, SB_TIMEOUT_INFINITE);
	atomic_store(&b->done, 1);
	return NULL;
}

static void a_thread_parked_and_woken_allocates_nothing(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "parked thread allocation count");
	blocked b = { .sem = SB_SEMAPHORE_INIT(0) };
	atomic_init(&b.done, 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, block, &b), 0);
	/* white box: bit 2 of the state word means "someone is queued" */
	while (!(atomic_load(&b.sem.q.state) & 4))
		sched_yield();
	long before = atomic_load(&allocations);
	assert_int_equal(sb_semaphore_release(&b.sem, 1), 0);
	while (!atomic_load(&b.done))
		sched_yield();
	assert_int_equal(atomic_load(&allocations) - before, 0);
	pthread_join(t, NULL);
	assert_int_equal(b.result, 0);
	sb_watchdog_stop(&wd);
}

/* A task that waits on a semaphore under a deadline timer of the driver. */
typedef struct driven {
	sb_loop_task task;
	sb_driver *d;
	sb_semaphore sem;
	sb_semaphore_acquire acquire;
	sb_deadline deadline;
	sb_driver_timer timer, spare;
	bool started;
	int result;
} driven;

static void never_called(sb_driver_timer *tm)
{
	(void)tm;
	abort();
}

static int driven_poll(sb_loop_task *t, const sb_waker *w)
{
	driven *x = SB_CONTAINER_OF(t, driven, task);
	if (!x->started) {
		x->started = true;
		sb_semaphore_acquire_init(&x->acquire, &x->sem, 1);
		sb_deadline_init(&x->deadline, &x->acquire, &sb_semaphore_acquire_ops);
		sb_driver_timer_init(&x->timer, &x->deadline, t);
		sb_driver_timer_init_callback(&x->spare, never_called);
		if (sb_driver_timer_start(x->d, &x->timer, 1) != 0 ||
		    sb_driver_timer_start(x->d, &x->spare, SB_NSEC_PER_SEC) != 0 ||
		    !sb_driver_timer_stop(&x->spare))
			abort();
	}
	int r = sb_deadline_poll(&x->deadline, w);
	if (r == SB_PENDING)
		return SB_PENDING;
	x->result = r;
	sb_driver_close(x->d);
	return r;
}

static void every_driver_path_allocates_nothing(void **state)
{
	(void)state;
	long before = atomic_load(&allocations);
	sb_driver d;
	sb_driver_init(&d);
	driven x = { .d = &d, .sem = SB_SEMAPHORE_INIT(0) };
	sb_loop_task_init(&x.task, driven_poll, NULL);
	assert_int_equal(sb_driver_spawn(&d, &x.task), 0);
	assert_int_equal(sb_driver_run(&d), 0);
	assert_int_equal(x.result, -ETIMEDOUT);
	assert_int_equal(sb_driver_spawn(&d, &x.task), -ESHUTDOWN);
	assert_int_equal(atomic_load(&allocations) - before, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_counter_sees_an_allocation),
		cmocka_unit_test(every_semaphore_path_allocates_nothing),
		cmocka_unit_test(every_mutex_condvar_and_event_path_allocates_nothing),
		cmocka_unit_test(every_barrier_path_allocates_nothing),
		cmocka_unit_test(every_once_path_allocates_nothing),
		cmocka_unit_test(every_rwlock_path_allocates_nothing),
		cmocka_unit_test(every_latch_path_allocates_nothing),
		cmocka_unit_test(every_channel_path_allocates_nothing),
		cmocka_unit_test(every_broadcast_path_allocates_nothing),
		cmocka_unit_test(every_watch_path_allocates_nothing),
		cmocka_unit_test(every_select_path_allocates_nothing),
		cmocka_unit_test(a_thread_parked_and_woken_allocates_nothing),
		cmocka_unit_test(every_driver_path_allocates_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
