/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A never-initialised future (all bytes zero) is bad input: every poll says
 * -EINVAL, through its typed function and its sb_future_ops alike, and its
 * cancel does nothing.  The caller checks the primitive afterwards.
 */
#ifndef SYNCBAND_TEST_ZEROED_FUTURE_H
#define SYNCBAND_TEST_ZEROED_FUTURE_H

#include <errno.h>
#include <string.h>

#include <syncband/future.h>

/* Zeroes `future` (`size` bytes), and checks that it is refused. */
static inline void assert_zeroed_future_is_refused(void *future, size_t size,
						   const sb_future_ops *ops,
						   int (*typed_poll)(void *, const sb_waker *))
{
	sb_waker w = sb_waker_noop();
	memset(future, 0, size);
	assert_int_equal(typed_poll(future, &w), -EINVAL);
	assert_int_equal(ops->poll(future, &w), -EINVAL);
	ops->cancel(future);
	assert_int_equal(typed_poll(future, &w), -EINVAL);
	unsigned char zero[256] = { 0 };
	assert_true(size <= sizeof zero);
	assert_memory_equal(future, zero, size); /* nothing written */
}

#endif
