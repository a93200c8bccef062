/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The clock of the time rules inside the primitives (the mutex's fairness
 * bound) and of the thread driver's timers (src/driver.c).  Tests and the
 * model build install their own clock, so that such a rule is tested by
 * moving time forward by hand instead of sleeping.  Timeouts and executor
 * timers read the public sb_now_ns (syncband/blocking.h), which no test
 * replaces.
 */
#ifndef SYNCBAND_SRC_CLOCK_H
#define SYNCBAND_SRC_CLOCK_H

#include <stdint.h>

/* sb_now_ns(), or the clock a test installed. */
uint64_t sb__clock_now_ns(void);

/*
 * Installs `now` as the clock (NULL: CLOCK_MONOTONIC again).  For tests:
 * call it while no other thread uses the library.
 */
void sb__clock_set(uint64_t (*now)(void));

#endif
