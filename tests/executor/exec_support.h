/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared helpers of the executor tests: skipping when io_uring cannot be
 * used on this machine, and small task shapes.
 */
#ifndef SYNCBAND_TEST_EXEC_SUPPORT_H
#define SYNCBAND_TEST_EXEC_SUPPORT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syncband/executor.h>

/*
 * Exits with 77 (ctest: skipped), saying why, when this machine cannot
 * create an io_uring (disabled by sysctl or seccomp, no kernel support,
 * ENOMEM under a locked-memory limit).
 */
static inline void exec_skip_without_io_uring(const char *program)
{
	sb_executor ex;
	int rc = sb_executor_init(&ex, NULL);
	if (rc) {
		fprintf(stderr, "SKIP %s: cannot create an io_uring executor: %s (%d)\n", program,
			strerror(-rc), rc);
		exit(77);
	}
	sb_executor_destroy(&ex, NULL);
}

#endif
