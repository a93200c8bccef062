/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one-word internal lock that guards a waiter queue.
 *
 * States of the word (a futex):
 *   SB_LOCK_FREE       0  unlocked
 *   SB_LOCK_HELD       1  locked, nobody parked
 *   SB_LOCK_CONTENDED  2  locked, someone may be parked in the kernel
 *
 * Uncontended acquire is one CAS, uncontended release one exchange.  Under
 * contention a thread spins briefly (critical sections are a few pointer
 * writes), then parks on the futex.  Statically initialisable as 0.
 */
#ifndef SYNCBAND_SRC_LOCK_H
#define SYNCBAND_SRC_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SB_LOCK_FREE 0u
#define SB_LOCK_HELD 1u
#define SB_LOCK_CONTENDED 2u

void sb_lock_acquire_slow(_Atomic uint32_t *lock);
void sb_lock_wake_one(_Atomic uint32_t *lock);

static inline bool sb_lock_try_acquire(_Atomic uint32_t *lock)
{
	uint32_t expected = SB_LOCK_FREE;
	/* acquire: the critical section sees everything the last holder wrote. */
	return atomic_compare_exchange_strong_explicit(lock, &expected, SB_LOCK_HELD,
						       memory_order_acquire, memory_order_relaxed);
}

static inline void sb_lock_acquire(_Atomic uint32_t *lock)
{
	if (!sb_lock_try_acquire(lock))
		sb_lock_acquire_slow(lock);
}

static inline void sb_lock_release(_Atomic uint32_t *lock)
{
	/* release: publishes the critical section to the next holder. */
	if (atomic_exchange_explicit(lock, SB_LOCK_FREE, memory_order_release) == SB_LOCK_CONTENDED)
		sb_lock_wake_one(lock);
}

#endif
