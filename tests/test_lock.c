/* SPDX-License-Identifier: Apache-2.0 */
/* White-box tests of the internal one-word lock (src/lock.h). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lock.h"
#include "watchdog.h"

static void lock_is_one_word_and_statically_free(void **state)
{
	(void)state;
	static _Atomic uint32_t lock = SB_LOCK_FREE;
	assert_int_equal(sizeof(lock), 4);
	assert_true(sb_lock_try_acquire(&lock));
	assert_false(sb_lock_try_acquire(&lock));
	assert_int_equal(atomic_load(&lock), SB_LOCK_HELD);
	sb_lock_release(&lock);
	assert_int_equal(atomic_load(&lock), SB_LOCK_FREE);
}

enum { THREADS = 4, ROUNDS = 200000 };

typedef struct shared {
	_Atomic uint32_t lock;
	unsigned long counter; /* plain: protected by the lock */
} shared;

static void *hammer(void *p)
{
	shared *s = p;
	for (int i = 0; i < ROUNDS; i++) {
		sb_lock_acquire(&s->lock);
		s->counter++;
		sb_lock_release(&s->lock);
	}
	return NULL;
}

static void lock_excludes_threads_so_a_plain_counter_ends_exact(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "lock exclusion");
	shared s = { SB_LOCK_FREE, 0 };
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, &s), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(s.counter, (unsigned long)THREADS * ROUNDS);
	assert_int_equal(atomic_load(&s.lock), SB_LOCK_FREE);
	sb_watchdog_stop(&wd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lock_is_one_word_and_statically_free),
		cmocka_unit_test(lock_excludes_threads_so_a_plain_counter_ends_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
