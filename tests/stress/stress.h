/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the stress tests share: their pseudo-random choices, their size
 * (SB_STRESS_OPS), the threads they run and a future's wait for its wake.
 */
#ifndef SYNCBAND_TESTS_STRESS_H
#define SYNCBAND_TESTS_STRESS_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>

#include "check.h"
#include "counting_waker.h"

/* A linear congruential step: reproducible choices per worker seed. */
static inline unsigned stress_next_random(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 16;
}

/* The seed of worker `i`. */
static inline unsigned stress_seed(int i)
{
	return 0x9e3779b9u * (unsigned)(i + 1);
}

/* The number of attempts: SB_STRESS_OPS from the environment, or `fallback`. */
static inline long stress_total_ops(long fallback)
{
	const char *env = getenv("SB_STRESS_OPS");
	return env ? atol(env) : fallback;
}

/* Runs `run` on `n` threads (at most 16), the i-th given `workers + i * size`, and joins them. */
static inline void stress_run_threads(int n, void *(*run)(void *), void *workers, size_t size)
{
	pthread_t t[16];
	CHECK(n <= 16);
	for (int i = 0; i < n; i++)
		CHECK(pthread_create(&t[i], NULL, run, (char *)workers + (size_t)i * size) == 0);
	for (int i = 0; i < n; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
}

/* A future's owner waits until `w` counted a wake past `*wakes`, and records it. */
static inline void stress_await_wake(counting_waker *w, int *wakes)
{
	while (atomic_load(&w->wakes) == *wakes)
		sched_yield();
	*wakes = atomic_load(&w->wakes);
}

#endif
