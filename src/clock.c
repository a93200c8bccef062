/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one clock.  sb_now_ns is CLOCK_MONOTONIC: every timeout (park.c) and
 * every executor timer reads it.  sb__clock_now_ns is the clock of the time
 * rules inside the primitives (the mutex's fairness bound), which a test may
 * replace.
 */
#include "clock.h"

#include <time.h>

#include <syncband/blocking.h>

static uint64_t (*installed)(void);

uint64_t sb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SB_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t sb__clock_now_ns(void)
{
	if (installed)
		return installed();
	return sb_now_ns();
}

void sb__clock_set(uint64_t (*now)(void))
{
	installed = now;
}
