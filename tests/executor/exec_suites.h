/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two doorbell suites of the multi-thread executor tests: each runs its
 * tests once with the MSG_RING doorbell (when the kernel has it) and once
 * with the eventfd fallback.  Tests pass &suite_cfg to sb_executor_*_init.
 */
#ifndef SYNCBAND_TEST_EXEC_SUITES_H
#define SYNCBAND_TEST_EXEC_SUITES_H

#include <syncband/executor.h>

/* The doorbell of the suite being run. */
static sb_executor_config suite_cfg;

static int use_msg_ring(void **state)
{
	(void)state;
	suite_cfg = (sb_executor_config){ 0, 0 };
	return 0;
}

static int use_eventfd(void **state)
{
	(void)state;
	suite_cfg = (sb_executor_config){ 0, SB_EXECUTOR_NO_MSG_RING };
	return 0;
}

#endif
