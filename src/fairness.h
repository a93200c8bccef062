/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time rules of the eventually fair mode, one set for the mutex
 * (src/mutex.c) and the semaphore (src/semaphore.c): the bound, the clock,
 * when a queue is timed, how often the clock is read, the budget of
 * hand-overs let by without the lock, and the handoff phase with its gap.
 * Each primitive keeps the stamps and counters where its layout has room
 * (docs/design.md, "Eventual fairness"); what they mean and how they are
 * compared is decided here only.
 *
 * The contract, shared: a newcomer may take what is free (the mutex, free
 * permits) while others wait, "barging"; once bargers have passed the first
 * waiter for longer than SB_FAIRNESS_BOUND_NS, the primitive hands what
 * frees up to the queue in order, and goes on handing it to every waiter
 * that was queued then (a handoff phase), so that those behind the starving
 * one drain in order instead of each starving in turn.
 *
 *   - A waiter is timed ("passed since") from the first time a barger passes
 *     the queue it is in, not from when it queued: a queue served in order,
 *     nobody barging, is never timed and never reads the clock.  Everyone
 *     queued is timed at that first pass: a waiter behind the head loses
 *     every race the head loses.  Timed only as the head, each head in turn
 *     could wait just under the bound and then get in by its own retry,
 *     starting no phase, while the waiters behind it added up those waits:
 *     128 tasks on 2 executor threads waited up to 30-100 ms.
 *   - The stamp is compared with the bound when it is set and then at every
 *     SB_FAIR_CHECKS_EVERY-th hand-over (unlock, release) that finds the
 *     same timed head (sb_fair_is_check): a clock read costs about as much
 *     as the rest of a contended unlock (20 ns here), and on every one it
 *     made a run of bargers 2.4 times slower (8 threads on 2 cores).  The
 *     price: a head is served up to 15 hand-overs late.
 *   - The phase's last handoff times the waiters that queued during it as
 *     if first passed SB_FAIR_PHASE_GAP_NS before it (sb_fair_phase_stamp):
 *     see the comment there.
 *
 * The clock is sb__clock_now_ns (src/clock.h): tests and the model build
 * install their own and move it by hand.
 */
#ifndef SYNCBAND_SRC_FAIRNESS_H
#define SYNCBAND_SRC_FAIRNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <syncband/future.h>

#include "clock.h"

/* The bound (public, in <syncband/future.h>). */
#define SB_FAIR_BOUND_NS ((uint64_t)SB_FAIRNESS_BOUND_NS)

/* How often a timed head is compared with the bound (see the top). */
#define SB_FAIR_CHECKS_EVERY 16u

/*
 * Waiters that queue during a handoff phase have waited through part of it,
 * and once they are at the front a barger passes them at once: the phase's
 * last handoff times them as if first passed half a bound earlier, so that
 * they are served SB_FAIR_PHASE_GAP_NS after the phase instead of a whole
 * bound after it.  Timed from that first pass instead, a mutex waiter that
 * queued as a phase began waited for the rest of it, the bound, and then its
 * own place in the next phase: 2.05 to 2.2 ms here at 8 and 16 threads on 2
 * cores, a phase of 8 to 16 wake-ups of sleeping threads taking about 0.5
 * ms.  Half a bound is the time bargers get between two phases, however
 * long a phase took: its newcomers have waited through it already, and what
 * they wait after it adds to that.  (A phase that ran late used to buy
 * bargers as long as it was late, up to a whole bound; with 1024 tasks on 16
 * pinned executor threads on 2 cores, whose phases take 1.3 to 1.9 ms, that
 * made the longest wait 2.35 and 2.66 ms at the median of two sets of 12
 * interleaved runs, against 1.86 and 2.07 ms with the fixed gap, which costs
 * that row 23 to 31 % more time an operation: 68 against 52 to 55 ns.)
 */
#define SB_FAIR_PHASE_GAP_NS (SB_FAIR_BOUND_NS / 2)

/* The clock of these rules. */
static inline uint64_t sb_fair_now(void)
{
	return sb__clock_now_ns();
}

/* A stamp taken at `now`: never 0, which means "not timed". */
static inline uint64_t sb_fair_stamp(uint64_t now)
{
	return now ? now : 1;
}

/* Whether a waiter timed at `since` (nonzero) has starved at `now`. */
static inline bool sb_fair_overdue(uint64_t since, uint64_t now)
{
	return now - since > SB_FAIR_BOUND_NS;
}

/*
 * The stamp of the waiters that queued during a handoff phase, at its last
 * handoff `now` (see SB_FAIR_PHASE_GAP_NS).
 */
static inline uint64_t sb_fair_phase_stamp(uint64_t now)
{
	const uint64_t credit = SB_FAIR_BOUND_NS - SB_FAIR_PHASE_GAP_NS;
	return now > credit ? now - credit : 1;
}

/*
 * Whether the hand-over that finds a timed head for the `seen`-th time
 * (counting from 0, the one at which it was timed) compares it with the
 * bound.
 */
static inline bool sb_fair_is_check(uint32_t seen)
{
	return seen % SB_FAIR_CHECKS_EVERY == 0;
}

/*
 * Once `counted` hand-overs have found a timed head: how many more go by
 * before the one that sb_fair_is_check picks (0 when that is the next).
 */
static inline uint32_t sb_fair_until_check(uint32_t counted)
{
	return (SB_FAIR_CHECKS_EVERY - counted % SB_FAIR_CHECKS_EVERY) % SB_FAIR_CHECKS_EVERY;
}

/*
 * The budget of an eventually fair primitive (the mutex's unlocks, the
 * semaphore's releases): while its head is WOKEN and timed, outside a
 * phase, a hand-over that is not a check has nothing to do under the queue
 * lock, so the unlock of that lock that leaves the head so lets the
 * hand-overs up to the next check go by without it.  Given `counted`, the hand-overs that have
 * found the head timed (the one that counts them, sb_fair_is_check's
 * argument), and `most`, what the primitive's bits hold: how many to let by,
 * which the caller adds to `counted` at once.  Whoever shuts the budget
 * under the lock takes the ones not used back out of `counted`, so that the
 * check falls on exactly the hand-over it would without a budget.
 */
static inline uint32_t sb_fair_budget(uint32_t counted, uint32_t most)
{
	uint32_t budget = sb_fair_until_check(counted);
	return budget < most ? budget : most;
}

/*
 * Where a waiter's stamp (uint64_t, 0 when not timed) and its count of
 * hand-overs at the front (uint32_t) lie in its future `type`, as bytes from
 * its node, the member `waiter`: the arguments of sb_fair_time_passed_locked.
 */
#define SB_FAIR_AT(type, member) \
	((ptrdiff_t)offsetof(type, member) - (ptrdiff_t)offsetof(type, waiter))

/*
 * Under the queue lock whose tail is `tail`, a barger having passed the head
 * (and so everyone behind it), or a phase's last handoff: starts the clock of
 * every waiter whose clock has not started, at `now`, and zeroes its count.
 * Those are the newest ones, a run at the tail, so the walk stops at the
 * first timed one and times each waiter once.  `since_at` and `count_at`
 * locate the stamp and the count (SB_FAIR_AT).
 */
static inline void sb_fair_time_passed_locked(sb_waiter *tail, ptrdiff_t since_at,
					      ptrdiff_t count_at, uint64_t now)
{
	for (sb_waiter *w = tail; w; w = w->prev) {
		uint64_t *since = (uint64_t *)(void *)((char *)w + since_at);
		if (*since)
			return;
		*since = sb_fair_stamp(now); /* 0 means "never passed" */
		*(uint32_t *)(void *)((char *)w + count_at) = 0;
	}
}

#endif
