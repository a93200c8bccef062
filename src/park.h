/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blocking a plain thread on a future: the thread polls it with a waker that
 * unparks it through a futex.  Shared by every primitive's *_blocking wait;
 * exported as sb_future_wait_blocking (syncband/blocking.h), which the
 * executor's sb_join_wait uses too.
 */
#ifndef SYNCBAND_SRC_PARK_H
#define SYNCBAND_SRC_PARK_H

#include <stdbool.h>
#include <stdint.h>

#include <syncband/blocking.h>

/*
 * Polls `future` until it completes, parking between polls.  When
 * `timeout_ns` passes first (SB_TIMEOUT_INFINITE: never), polls once more,
 * then cancels the future and returns -ETIMEDOUT.  Returns only after every
 * clone of its waker has been woken or dropped, so no waker outlives the
 * parker on this thread's stack.
 */
static inline int sb_park_block_on(void *future, const sb_future_ops *ops, uint64_t timeout_ns)
{
	return sb_future_wait_blocking(future, ops, timeout_ns);
}

/*
 * Every spinning wait in the library (the parker's before it sleeps, the
 * eventually fair locks' before they queue) first takes one of the spinning
 * slots, as many as the cores less one: with more threads than cores, a
 * waiter that spins takes the core that the holder needs to finish (and
 * with it the wake or the release the waiter waits for).  A waiter that
 * finds no free slot sleeps at once.  True if there was a slot; give it
 * back when the spin ends.
 */
bool sb_park_take_spin_slot(void);
void sb_park_give_spin_slot(void);

/*
 * Before a blocking operation that cannot complete now queues a waiter,
 * retries it for a short, bounded while: calls `try_op(arg)` after each of
 * up to `spin_steps` short pauses (a CPU spin-wait hint 1, 2, then 4 times
 * each: looks, which take no spinning slot), then after each of up to
 * SB_PARK_RETRY_YIELDS sched_yield() calls - which hand the core to
 * whichever thread can run there, so unlike a spin they need no spinning
 * slot either.  Looks that all found -EAGAIN make this thread's next
 * retries skip their looks: the next one, then 2, 4, ... up to
 * SB_PARK_LOOKS_MAX_SKIP after each such miss in a row, none again once
 * looks found something.  Returns try_op's result once it is not -EAGAIN,
 * or -EAGAIN when the retries ran out or `*timeout_ns` passed (0: no retry
 * at all); takes what it spent off *timeout_ns.  None in the model-check
 * build.  Why and the measurements: docs/design.md ("Channels: retrying
 * before waiting").
 */
#define SB_PARK_RETRY_YIELDS 8u
#define SB_PARK_LOOKS_MAX_SKIP 64u
int sb_park_retry_before_wait(int (*try_op)(void *arg), void *arg, uint64_t *timeout_ns,
			      unsigned spin_steps);

/*
 * The spin of an eventually fair lock's blocking wait before it queues (the
 * mutex's, the rwlock's and the semaphore's; src/mutex.c says why, with the
 * measurements): calls `look(arg)` once every SB_PARK_SPIN_POLL_NS, pausing
 * in between and timed by the clock, for at most SB_PARK_SPIN_NS.  look says
 * whether it took the lock (SB_PARK_LOOK_TAKEN), saw waiters queued and so
 * must queue too (SB_PARK_LOOK_QUEUE), or looks again later
 * (SB_PARK_LOOK_AGAIN).  It spins only with a spinning slot and while this
 * thread's contention streak allows it (sb_park_streak_allows_spin), never
 * for a timeout shorter than the spin, and not in the model-check build.
 * True if look took the lock; otherwise takes what it spent off *timeout_ns.
 */
enum sb_park_look { SB_PARK_LOOK_AGAIN, SB_PARK_LOOK_TAKEN, SB_PARK_LOOK_QUEUE };
#define SB_PARK_SPIN_NS 5000u
#define SB_PARK_SPIN_POLL_NS 1000u
bool sb_park_spin_before_queueing(enum sb_park_look (*look)(void *arg), void *arg,
				  uint64_t *timeout_ns);

/*
 * A thread that only ever passes a mutex back and forth with another by
 * spinning never sleeps, and the kernel takes its core away only at a tick
 * (every 4 ms at HZ=250): with more threads than cores, a thread it
 * preempted anywhere else - even outside any lock call - waits that long
 * for a core.  So the eventually fair mutex's spin before queueing (the one
 * spin that lets two threads trade the mutex without sleeping) asks this
 * first, at `now`: false once this thread has been contending for
 * SB_PARK_STREAK_SPIN_NS without sleeping in the library, so that it queues
 * and sleeps instead, handing its core to whichever thread waits for one.
 * A streak ends when the thread sleeps (a futex wait that blocked), or when
 * it goes SB_PARK_STREAK_GAP_NS without asking (it was doing something
 * else, whose time is not the lock's to hand over).  Once it has said
 * false, the thread's parker does not spin either until the thread has
 * slept: its queued wait must really hand the core over (a parker that
 * spun was mostly woken while spinning, never slept, and so kept the streak
 * running: two threads then never spun again, 21 -> 68 ns an operation).
 * SB_PARK_STREAK_SPIN_NS is half the mutex's fairness bound: a thread
 * preempted while two others trade the mutex gets a core back well within
 * the bound, and a pair that does not oversubscribe the cores pays one sleep
 * and wake-up each per half a millisecond.
 */
#define SB_PARK_STREAK_SPIN_NS 500000u
#define SB_PARK_STREAK_GAP_NS 50000u
bool sb_park_streak_allows_spin(uint64_t now);

#endif
