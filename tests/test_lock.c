/* SPDX-License-Identifier: Apache-2.0 */
/* White-box tests of the queue lock in the low bits of a state word (src/lock.h). */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "check.h"
#include "lock.h"
#include "watchdog.h"

static void lock_bits_sit_below_the_primitive_state_and_leave_it_alone(void **state)
{
	(void)state;
	static _Atomic size_t word = (size_t)7 << 3;
	assert_int_equal(sb_qlock_acquire(&word, 0), (size_t)7 << 3);
	assert_int_equal(atomic_load(&word), ((size_t)7 << 3) | SB_QLOCK_HELD);
	/* release can clear and add primitive bits in the same step */
	assert_int_equal(sb_qlock_release(&word, (size_t)1 << 3, (size_t)1 << 4),
			 ((size_t)6 << 3) + ((size_t)1 << 4));
	assert_int_equal(atomic_load(&word) & SB_QLOCK_BITS, 0);
	/* acquire can set bits as it locks */
	assert_int_equal(sb_qlock_acquire(&word, (size_t)1 << 3), (size_t)8 << 3);
	assert_int_equal(atomic_load(&word), ((size_t)9 << 3) | SB_QLOCK_HELD);
	sb_qlock_release(&word, 0, 0);
}

enum { THREADS = 4, ROUNDS = 200000 };

typedef struct shared {
	_Atomic size_t word;
	unsigned long counter; /* plain: protected by the lock */
} shared;

static void *hammer(void *p)
{
	shared *s = p;
	for (int i = 0; i < ROUNDS; i++) {
		sb_qlock_acquire(&s->word, 0);
		s->counter++;
		sb_qlock_release(&s->word, 0, 0);
	}
	return NULL;
}

static void lock_excludes_threads_so_a_plain_counter_ends_exact(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "lock exclusion");
	static shared s = { 0, 0 };
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, &s), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(s.counter, (unsigned long)THREADS * ROUNDS);
	assert_int_equal(atomic_load(&s.word), 0);
	sb_watchdog_stop(&wd);
}

static void *take_once(void *p)
{
	_Atomic size_t *word = p;
	sb_qlock_acquire(word, 0);
	sb_qlock_release(word, 0, 0);
	return NULL;
}

/* Lockers that outlast the spin must sleep, mark the word, and be woken. */
static void lockers_that_park_are_woken_by_the_release(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "parked lockers woken by release");
	static _Atomic size_t word = 0;
	sb_qlock_acquire(&word, 0);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, take_once, (void *)&word), 0);
	while (!(atomic_load(&word) & SB_QLOCK_PARKED))
		sched_yield();
	sb_qlock_release(&word, 0, 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&word), 0);
	sb_watchdog_stop(&wd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lock_bits_sit_below_the_primitive_state_and_leave_it_alone),
		cmocka_unit_test(lock_excludes_threads_so_a_plain_counter_ends_exact),
		cmocka_unit_test(lockers_that_park_are_woken_by_the_release),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
