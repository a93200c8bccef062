/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Assertions for worker threads: cmocka's assert_* longjmp to the test's
 * frame, which is only valid on the thread running the test.  A failed check
 * on another thread prints where and aborts the program, failing the test.
 */
#ifndef SYNCBAND_TEST_CHECK_H
#define SYNCBAND_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                       \
			abort();                                                      \
		}                                                                     \
	} while (0)

#endif
