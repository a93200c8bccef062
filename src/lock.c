/* SPDX-License-Identifier: Apache-2.0 */
#include "lock.h"

#include "futex.h"

/* About a microsecond of spinning: longer than any queue critical section.
 * The model checker's scheduler blocks a waiter instead (tests/model). */
#ifdef SB_MODEL_CHECK
#define SB_LOCK_SPINS 0
#else
#define SB_LOCK_SPINS 100
#endif

static inline void sb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

void sb_lock_acquire_slow(_Atomic uint32_t *lock)
{
	for (int i = 0; i < SB_LOCK_SPINS; i++) {
		sb_cpu_relax();
		/* relaxed: only a hint; the CAS below carries the ordering. */
		if (atomic_load_explicit(lock, memory_order_relaxed) == SB_LOCK_FREE &&
		    sb_lock_try_acquire(lock))
			return;
	}
	/*
	 * Mark the lock contended before sleeping, so the holder's release sees
	 * CONTENDED and wakes us.  Having taken the lock this way we leave it
	 * CONTENDED: at worst one unneeded wake, never a lost one.
	 * acquire: on success this is the lock acquisition.
	 */
	while (atomic_exchange_explicit(lock, SB_LOCK_CONTENDED, memory_order_acquire) != SB_LOCK_FREE)
		sb_futex_wait(lock, SB_LOCK_CONTENDED, NULL);
}

void sb_lock_wake_one(_Atomic uint32_t *lock)
{
	sb_futex_wake(lock, 1);
}
