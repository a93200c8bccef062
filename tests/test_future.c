/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <syncband/future.h>

#include "counting_waker.h"

static void noop_waker_survives_every_operation(void **state)
{
	(void)state;
	sb_waker w = sb_waker_noop();
	assert_non_null(w.vtable);
	sb_waker c = sb_waker_clone(&w);
	assert_true(sb_waker_will_wake(&w, &c));
	sb_waker_wake_by_ref(&c);
	sb_waker_wake(c);
	sb_waker_drop(sb_waker_clone(&w));
}

static void will_wake_compares_vtable_and_data(void **state)
{
	(void)state;
	counting_waker a, b;
	counting_waker_init(&a);
	counting_waker_init(&b);
	sb_waker wa = counting_waker_ref(&a), wb = counting_waker_ref(&b);
	sb_waker noop = sb_waker_noop();
	assert_true(sb_waker_will_wake(&wa, &wa));
	assert_false(sb_waker_will_wake(&wa, &wb));
	assert_false(sb_waker_will_wake(&wa, &noop));
	sb_waker clone = sb_waker_clone(&wa);
	assert_true(sb_waker_will_wake(&wa, &clone));
	sb_waker_drop(clone);
	assert_int_equal(atomic_load(&a.live), 0);
}

static void pending_is_positive_so_errors_and_ready_are_not(void **state)
{
	(void)state;
	assert_true(SB_PENDING > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(noop_waker_survives_every_operation),
		cmocka_unit_test(will_wake_compares_vtable_and_data),
		cmocka_unit_test(pending_is_positive_so_errors_and_ready_are_not),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
