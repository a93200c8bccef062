/* SPDX-License-Identifier: Apache-2.0 */
#include "clock.h"

#include <time.h>

static uint64_t (*installed)(void);

uint64_t sb__clock_now_ns(void)
{
	if (installed)
		return installed();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sb__clock_set(uint64_t (*now)(void))
{
	installed = now;
}
