/* SPDX-License-Identifier: Apache-2.0 */
#include "lock.h"

#include "cpu.h"
#include "futex.h"

/* About a microsecond of spinning: longer than any queue critical section.
 * The model checker's scheduler blocks a waiter instead (tests/model). */
#ifdef SB_MODEL_CHECK
#define SB_QLOCK_SPINS 0
#else
#define SB_QLOCK_SPINS 100
#endif


size_t sb_qlock_wait(_Atomic size_t *word, size_t state)
{
	for (int i = 0; i < SB_QLOCK_SPINS && (state & SB_QLOCK_HELD); i++) {
		sb_cpu_relax();
		/* relaxed: only a hint; the caller's CAS decides. */
		state = atomic_load_explicit(word, memory_order_relaxed);
	}
	while (state & SB_QLOCK_HELD) {
		/* relaxed: the bit only asks the holder for a wake; the futex
		 * re-checks the word in the kernel, so no wake is lost. */
		if (!(state & SB_QLOCK_PARKED) &&
		    !atomic_compare_exchange_weak_explicit(word, &state, state | SB_QLOCK_PARKED,
							   memory_order_relaxed, memory_order_relaxed))
			continue;
		sb_futex_wait(sb_futex_low_half(word), (uint32_t)(state | SB_QLOCK_PARKED), NULL);
		/* relaxed: as above. */
		state = atomic_load_explicit(word, memory_order_relaxed);
	}
	return state;
}

void sb_qlock_wake_all(_Atomic size_t *word)
{
	sb_futex_wake(sb_futex_low_half(word), INT32_MAX);
}
