/* SPDX-License-Identifier: Apache-2.0 */
/* White-box tests of the shared waiter queue (src/waitq.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "counting_waker.h"
#include "waitq.h"

static void queue_is_fifo_and_unlinks_from_any_position(void **state)
{
	(void)state;
	sb_waitq q = SB_WAITQ_INIT(0);
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_waiter n[4];
	for (int i = 0; i < 4; i++)
		sb_waitq_push(&q, &n[i], 1, sb_waker_clone(&w));
	assert_int_equal(atomic_load(&c.clones), 4);
	sb_waker_drop(sb_waitq_unlink(&q, &n[1])); /* middle */
	sb_waker_drop(sb_waitq_unlink(&q, &n[3])); /* tail */
	assert_ptr_equal(sb_waitq_front(&q), &n[0]);
	assert_ptr_equal(n[0].next, &n[2]);
	assert_ptr_equal(q.tail, &n[2]);
	sb_waker_drop(sb_waitq_unlink(&q, &n[0])); /* head */
	assert_ptr_equal(sb_waitq_front(&q), &n[2]);
	sb_waker_drop(sb_waitq_unlink(&q, &n[2]));
	assert_true(sb_waitq_is_empty(&q));
	assert_null(q.tail);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void detach_publishes_the_final_state_and_defers_the_wake(void **state)
{
	(void)state;
	sb_waitq q = SB_WAITQ_INIT(0);
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_waiter a, b;
	sb_waitq_push(&q, &a, 3, sb_waker_clone(&w));
	sb_waitq_push(&q, &b, 1, sb_waker_clone(&w));
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_detach(&q, &a, SB_WAITER_GRANTED, &batch);
	sb_waitq_detach(&q, &b, SB_WAITER_CLOSED, &batch);
	assert_int_equal(sb_waiter_load(&a), SB_WAITER_GRANTED);
	assert_int_equal(sb_waiter_load(&b), SB_WAITER_CLOSED);
	assert_true(sb_waitq_is_empty(&q));
	assert_int_equal(atomic_load(&c.wakes), 0); /* not yet: after the lock */
	sb_wake_batch_run(&batch);
	assert_int_equal(atomic_load(&c.wakes), 2);
	assert_int_equal(batch.count, 0);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void repoll_of_a_detached_waiter_returns_its_final_state_without_the_lock(void **state)
{
	(void)state;
	sb_waitq q = SB_WAITQ_INIT(0);
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_waiter a;
	sb_waitq_push(&q, &a, 1, sb_waker_clone(&w));
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	sb_waitq_detach(&q, &a, SB_WAITER_GRANTED, &batch);
	sb_wake_batch_run(&batch);
	atomic_store(&q.state, SB_QLOCK_HELD); /* would hang if taken */
	assert_int_equal(sb_waitq_repoll(&q, &a, &w), SB_WAITER_GRANTED);
	atomic_store(&q.state, 0);
	assert_int_equal(atomic_load(&c.clones), 1);
}

static void unlock_publishes_whether_anyone_waits_and_keeps_the_primitive_bits(void **state)
{
	(void)state;
	const size_t mine = (size_t)5 << SB_WAITQ_STATE_SHIFT;
	sb_waitq q = SB_WAITQ_INIT(mine);
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_waiter a;
	assert_int_equal(sb_waitq_lock(&q, 0), mine);
	assert_int_equal(atomic_load(&q.state), mine | SB_QLOCK_HELD);
	sb_waitq_push(&q, &a, 1, sb_waker_clone(&w));
	sb_waitq_unlock(&q);
	assert_int_equal(atomic_load(&q.state), mine | SB_WAITQ_NONEMPTY);
	assert_true(sb_waitq_may_have_waiters(atomic_load(&q.state)));
	sb_waitq_lock(&q, 0);
	sb_waker_drop(sb_waitq_unlink(&q, &a));
	sb_waitq_unlock_update(&q, 0, (size_t)1 << SB_WAITQ_STATE_SHIFT);
	assert_int_equal(atomic_load(&q.state), (size_t)6 << SB_WAITQ_STATE_SHIFT);
	assert_false(sb_waitq_may_have_waiters(atomic_load(&q.state)));
	assert_int_equal(atomic_load(&c.live), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(queue_is_fifo_and_unlinks_from_any_position),
		cmocka_unit_test(detach_publishes_the_final_state_and_defers_the_wake),
		cmocka_unit_test(repoll_of_a_detached_waiter_returns_its_final_state_without_the_lock),
		cmocka_unit_test(unlock_publishes_whether_anyone_waits_and_keeps_the_primitive_bits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
