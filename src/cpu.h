/* SPDX-License-Identifier: Apache-2.0 */
/* The spin-wait hint and the core count shared by every spinning loop in the library. */
#ifndef SYNCBAND_SRC_CPU_H
#define SYNCBAND_SRC_CPU_H

#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

static inline void sb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* The cores online (at least 1), read once per translation unit. */
static inline unsigned sb_cpu_count(void)
{
	static _Atomic int cached = -1;
	/* relaxed: a cached sysconf() result; racing writers store the same. */
	int n = atomic_load_explicit(&cached, memory_order_relaxed);
	if (n < 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n = cpus > 1 ? (int)cpus : 1;
		/* relaxed: as above. */
		atomic_store_explicit(&cached, n, memory_order_relaxed);
	}
	return (unsigned)n;
}

/*
 * A spinning slot out of `slots`, counted in `*spinners`: true if there was
 * one (give it back with sb_cpu_give_slot).  Relaxed: a head count that
 * publishes nothing; a wrong guess only changes whether a waiter spins.
 */
static inline bool sb_cpu_take_slot(_Atomic unsigned *spinners, unsigned slots)
{
	/* relaxed: a head count (above). */
	if (atomic_fetch_add_explicit(spinners, 1, memory_order_relaxed) < slots)
		return true;
	/* relaxed: as above. */
	atomic_fetch_sub_explicit(spinners, 1, memory_order_relaxed);
	return false;
}

static inline void sb_cpu_give_slot(_Atomic unsigned *spinners)
{
	/* relaxed: a head count (sb_cpu_take_slot). */
	atomic_fetch_sub_explicit(spinners, 1, memory_order_relaxed);
}

#endif
