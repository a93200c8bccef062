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
#include "counting_waker.h"
#include "watchdog.h"

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

static void queued_lockers_get_the_mutex_in_fifo_order(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
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

static void try_lock_never_succeeds_while_a_waiter_is_handed_the_lock(void **state)
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
	sb_mutex m = SB_MUTEX_INIT;
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
	sb_mutex m = SB_MUTEX_INIT;
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
	sb_mutex m = SB_MUTEX_INIT;
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

static void blocking_lock_times_out_while_held(void **state)
{
	(void)state;
	sb_mutex m = SB_MUTEX_INIT;
	assert_int_equal(sb_mutex_lock_blocking(&m, 0), 0);
	assert_int_equal(sb_mutex_lock_blocking(&m, 0), -ETIMEDOUT);
	assert_int_equal(sb_mutex_lock_blocking(&m, 1000000), -ETIMEDOUT);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(static_mutex_locks_and_unlocks),
		cmocka_unit_test(unlock_of_an_unlocked_mutex_is_refused),
		cmocka_unit_test(queued_lockers_get_the_mutex_in_fifo_order),
		cmocka_unit_test(try_lock_never_succeeds_while_a_waiter_is_handed_the_lock),
		cmocka_unit_test(cancel_of_a_queued_locker_leaves_the_others_in_order),
		cmocka_unit_test(cancel_of_the_last_queued_locker_lets_unlock_free_the_mutex),
		cmocka_unit_test(cancel_after_handoff_passes_the_lock_to_the_next_waiter),
		cmocka_unit_test(cancel_after_handoff_with_nobody_behind_unlocks),
		cmocka_unit_test(cancel_before_poll_and_after_completion_change_nothing),
		cmocka_unit_test(a_different_waker_replaces_the_old_one),
		cmocka_unit_test(blocking_lock_times_out_while_held),
		cmocka_unit_test(mutual_exclusion_holds_across_threads_so_a_plain_counter_ends_exact),
		cmocka_unit_test(unlock_racing_the_first_waiter_never_loses_the_wake),
		cmocka_unit_test(a_queued_locker_whose_waker_clone_unlocks_does_not_deadlock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
