/* SPDX-License-Identifier: Apache-2.0 */
#include "lock.h"

#include <syncband/blocking.h>

#include "cpu.h"
#include "futex.h"

/*
 * How long a waiter spins before it sleeps on the futex.  A critical section
 * is a few pointer writes, except the eventually fair mutex's at the start
 * and end of a handoff phase, which walk its queue (src/mutex.c): a few
 * microseconds with hundreds of waiters (2.6 us median, 5 us at the 90th
 * percentile, with 1024 tasks).  A sleep costs much more than that even
 * when the wake comes at once, and a thread the kernel is slow to run again
 * (a busy core, a tick away) keeps its tasks waiting: with a spin of 100
 * pauses alone (1.2 us on the 2-core machine), 16 executor threads slept
 * here 6 to 16 times a run, 22 to 220 us at the median and up to 7.5 ms,
 * and in 13 of 30 runs of contention/mutex-16-threads (floating tasks) an
 * acquire waited past 2.1 ms, in the runs traced right behind such a sleep;
 * with this spin, in 3 of 30 (interleaved).  So after QLOCK_SPINS pauses
 * without reading the clock, which cover the short sections, a waiter goes
 * on spinning, by the clock, until QLOCK_SPIN_NS have passed.  The model
 * checker's scheduler blocks a waiter instead (tests/model).
 */
static const int QLOCK_SPINS = 100;
#ifdef SB_MODEL_CHECK
static const uint64_t QLOCK_SPIN_NS = 0; /* no spin at all */
#else
static const uint64_t QLOCK_SPIN_NS = 10000;
#endif

/*
 * Spins while the lock is held, for up to QLOCK_SPIN_NS; returns the word.
 * Not on one core: there the holder cannot run while we spin.
 */
static size_t qlock_spin(_Atomic size_t *word, size_t state)
{
	if (!QLOCK_SPIN_NS || sb_cpu_count() == 1)
		return state;
	for (int i = 0; i < QLOCK_SPINS && (state & SB_QLOCK_HELD); i++) {
		sb_cpu_relax();
		/* relaxed: only a hint; the caller's CAS decides. */
		state = atomic_load_explicit(word, memory_order_relaxed);
	}
	if (!(state & SB_QLOCK_HELD))
		return state;
	uint64_t start = sb_now_ns();
	do {
		sb_cpu_relax();
		/* relaxed: as above. */
		state = atomic_load_explicit(word, memory_order_relaxed);
	} while ((state & SB_QLOCK_HELD) && sb_now_ns() - start < QLOCK_SPIN_NS);
	return state;
}

size_t sb_qlock_wait(_Atomic size_t *word, size_t state)
{
	state = qlock_spin(word, state);
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
