/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/mutex.h - an async mutex: eventually fair by default, strict FIFO
 * on request.
 *
 * Two modes, chosen per mutex when it is initialised
 *
 *   Eventually fair (SB_MUTEX_INIT, sb_mutex_init) - the default.
 *   - A locker may take a free mutex while others wait ("barging"): lock,
 *     try_lock and the blocking lock all may.
 *   - An unlock with waiters releases the mutex and wakes the oldest waiter,
 *     one at a time: while a woken waiter has not tried again, further
 *     unlocks wake nobody.  The woken waiter tries again when it is polled;
 *     if a barger got there first it stays at the front of the queue and is
 *     woken by the next unlock.  Queued waiters keep their FIFO order.
 *   - A waiter is timed from the first time a barger passes it: a locker that
 *     takes the mutex ahead of the woken oldest waiter passes every queued
 *     waiter at once.  Once the oldest waiter has been passed for longer than
 *     SB_MUTEX_FAIRNESS_BOUND_NS, unlock hands the mutex straight to it,
 *     woken or not (it stays locked: nobody can barge until that waiter has
 *     run), and keeps handing it, in turn, to every waiter that was queued
 *     behind it then.  Waiters that queue during such a handoff phase are
 *     timed as if first passed half a bound before its last handoff: lockers
 *     get half a bound between two phases, however long a phase took, so
 *     that a queue slower to drain than the bound does not turn into one
 *     phase after another (a convoy).  A queue served in order, nobody
 *     barging, is never timed.  (An unlock compares the oldest waiter with
 *     the bound when it is first passed and at every 16th unlock after, a
 *     clock read being as costly as the rest of the unlock: a handoff may
 *     come up to 15 of the bargers' critical sections late.  The unlocks in
 *     between are one CAS each, without the queue's lock.)  So an acquire
 *     waits, from the first barger that passes it, about the bound plus the
 *     handoffs of its own phase (critical sections and wake-ups of their
 *     holders); one that queued during a phase, the rest of that phase, half
 *     a bound and its own phase; and on top of either, the
 *     time the kernel keeps a thread from running: its own (with more busy
 *     threads than cores, a time slice: 4 ms on a 250 Hz kernel), and that of
 *     each sleeping waiter the mutex is handed to, from its wake until it
 *     runs (20-30 us at the median on a 2-core virtual machine, whole 4 ms
 *     ticks at worst; the benchmarks measure it beside the contention rows).
 *     A lock can shorten only the first, and only by not keeping its own
 *     lockers busy (the spin's streak, below).
 *   - A thread blocked in sb_mutex_lock_blocking first spins for up to
 *     5 us, looking at the mutex once a microsecond and taking it if it is
 *     free, before it queues and sleeps: most critical sections are far
 *     shorter than a futex wait and wake.  It does not spin when waiters
 *     are queued already (it would only pass them), for a timeout shorter
 *     than the spin, while as many threads spin as there are cores less
 *     one (the holder needs a core to finish), or once the thread has
 *     contended for 0.5 ms without sleeping: two threads trading the mutex
 *     by spinning would keep their cores until the scheduler's tick, and a
 *     thread preempted meanwhile would wait that long (4 ms at HZ=250); it
 *     queues and sleeps instead, and spins again after it has slept.
 *   - Pick it for throughput: when threads or tasks outnumber the cores, a
 *     strict handoff reserves the mutex for a waiter whose thread is not
 *     running, and every locker queues behind it (a convoy: with 8 threads
 *     on 2 cores, 12 to 14 us a lock and unlock, 170 to 410 times
 *     pthread_mutex_t's and 530 to 860 times this mode's); barging lets
 *     whoever runs take it, as pthread, Linux, Go and parking_lot do.
 *
 *   Strict FIFO (SB_MUTEX_INIT_FIFO, sb_mutex_init_fifo).
 *   - A contended unlock hands the mutex directly to the oldest waiter: the
 *     mutex never looks unlocked while anyone waits, so nobody barges
 *     (try_lock fails while a waiter is being handed the lock).
 *   - Pick it when the order of acquisition is part of the contract (a
 *     queue of jobs that must run in arrival order), or when every waiter
 *     runs on a thread that is sure to be running when it is handed the
 *     mutex.
 *
 * Both modes
 *   - Uncontended lock is one CAS on the state word; uncontended unlock is
 *     one CAS back; neither touches the waiter queue or its lock.  Both are
 *     inline (see future.h).
 *   - Cancelling a waiter that was handed the mutex passes it on to the next
 *     waiter, or unlocks it when nobody waits; cancelling a woken waiter
 *     passes the wake on.
 *   - The condition variable's re-acquire follows its mutex's mode.
 *   - The mutex has no owner identity: any thread or task may unlock it, as
 *     with a semaphore of one permit.  Unlocking an unlocked mutex is
 *     detected and refused.
 *
 * Memory ordering: an unlock happens-before the lock it lets complete.
 *
 * Thread safety: every function may be called from any thread concurrently,
 * except init/destroy, and except that one future is driven by one thread at
 * a time (its poll and cancel must not race each other).
 *
 * Errors (negative errno; every error leaves the mutex unchanged)
 *   -EBUSY       try_lock(): locked; destroy(): locked or waited on
 *   -EPERM       unlock() of a mutex that is not locked
 *   -ETIMEDOUT   lock_blocking() ran out of time
 *   -ECANCELED   poll of a future after its cancel
 */
#ifndef SYNCBAND_MUTEX_H
#define SYNCBAND_MUTEX_H

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * How long bargers may pass the oldest waiter (timed from the first barger
 * that passed it) before unlock hands the mutex to it: 1 ms.  Long enough
 * that a busy mutex hands off
 * rarely (a handoff to a waiter whose thread is not running costs a wake-up,
 * tens of microseconds on a loaded machine, and stalls every locker), short
 * enough to stay below a scheduler time slice and a request's latency
 * budget.  Go's sync.Mutex and CPython's PyMutex use 1 ms, parking_lot and
 * WebKit about 0.5 ms, async-lock 0.5 ms.
 */
#define SB_MUTEX_FAIRNESS_BOUND_NS 1000000u

/* sb_mutex.mode: strict FIFO (see the top of the file). */
#define SB_MUTEX_FIFO 1u

/* 32 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_mutex {
	sb_waitq q;             /* state word: see below */
	uint32_t mode;          /* 0 or SB_MUTEX_FIFO, fixed at init */
	uint32_t handoff_left;  /* guarded by q's lock: see src/mutex.c */
} sb_mutex;

/*
 * The state word (ABI; the queue's bits are in future.h):
 *
 *   bit 3    SB_MUTEX_STATE_LOCKED   someone holds the mutex (or is being
 *                                    handed it)
 *   bits 4-  a lone waiter's address (with NONEMPTY), or 0; or, eventually
 *            fair mode, with NONEMPTY and the waiters queued, 1 to 15 in
 *            bits 4-7: unlocks that may pass the woken first waiter
 *            without the queue's lock (src/mutex.c)
 *
 * A free mutex nobody waits for is 0 and a held one nobody waits for is
 * LOCKED alone: the inline lock is CAS(0 -> LOCKED) and the inline unlock
 * CAS(LOCKED -> 0).  Any other word goes to the slow paths (which, in the
 * eventually fair mode, also take a free mutex that others wait for).
 */
#define SB_MUTEX_STATE_LOCKED (SB_CAST(size_t, 1) << SB_WAITQ_STATE_SHIFT)

#define SB_MUTEX_INIT { SB_WAITQ_INIT(0), 0, 0 }
#define SB_MUTEX_INIT_FIFO { SB_WAITQ_INIT(0), SB_MUTEX_FIFO, 0 }

/*
 * 64 bytes on 64-bit targets, 16-byte aligned (a lone waiter's address is
 * stored in the mutex's word with its low 4 bits free).  Fields are private.
 */
typedef struct sb_mutex_lock {
	SB_ALIGNAS(16) sb_waiter waiter;
	sb_mutex *mutex;
	/* when a barger first passed it, or 0 (zeroed by its first poll that
	 * waits) */
	uint64_t passed_since;
	int status;
	uint32_t unlocks_at_front; /* unlocks that found it first, once timed, and
				    * those its unlock budget lets by */
} sb_mutex_lock;

/* Initialises an unlocked, eventually fair mutex.  Always returns 0. */
SB_API int sb_mutex_init(sb_mutex *m);

/* Initialises an unlocked strict-FIFO mutex.  Always returns 0. */
SB_API int sb_mutex_init_fifo(sb_mutex *m);

/*
 * Returns 0, or -EBUSY when the mutex is locked or futures are queued (it
 * stays usable).  The mutex must not be used after a successful destroy, and
 * every lock future on it must have completed or been cancelled first, and
 * every sb_mutex_lock_blocking returned.
 */
SB_API int sb_mutex_destroy(sb_mutex *m);

/* True while the mutex is locked (a snapshot). */
SB_API bool sb_mutex_is_locked(const sb_mutex *m);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API int sb_mutex_try_lock_slow(sb_mutex *m);
SB_API int sb_mutex_unlock_slow(sb_mutex *m);
SB_API int sb_mutex_lock_poll_slow(sb_mutex_lock *f, const sb_waker *w);

/*
 * The inline lock of try_lock and of a lock's first poll: one CAS, tried only
 * on a word that reads free, so that a held mutex costs no failed CAS.  The
 * CAS expects the constant 0, not the value read, which leaves the compiler
 * a register free for LOCKED (mutex/uncontended-reuse: 15 instructions a
 * round, 16 with the value read).
 */
static inline bool sb__mutex_take_if_free(sb_mutex *m)
{
	/* relaxed: a guess that the CAS confirms. */
	if (!sb__likely(sb__state_load_relaxed(&m->q) == 0))
		return false;
	size_t expected = 0;
	/* acquire: the critical section sees what the last holder wrote (pairs
	 * with the release of every unlock). */
	return sb__likely(sb__state_cas_acquire(&m->q, &expected, SB_MUTEX_STATE_LOCKED));
}

/*
 * Locks if unlocked: 0, or -EBUSY.  Acquire ordering.  Never waits.  Inline:
 * one CAS on a free mutex.
 */
SB_INLINE int sb_mutex_try_lock(sb_mutex *m)
{
	if (sb__likely(sb__mutex_take_if_free(m)))
		return 0;
	return sb_mutex_try_lock_slow(m);
}

/*
 * Unlocks.  With futures queued, wakes the oldest (eventually fair mode),
 * or hands it the mutex (strict FIFO mode, or a starving oldest waiter); the
 * wake runs after the internal lock is released.  Returns 0, or -EPERM when
 * the mutex was not locked.  Release ordering.  Never waits.  Inline: one
 * CAS when nobody waits.
 */
SB_INLINE int sb_mutex_unlock(sb_mutex *m)
{
	/* relaxed: a guess that the CAS confirms.  Read first, so that an
	 * unlock that must wake or hand over costs no failed CAS. */
	size_t state = sb__state_load_relaxed(&m->q);
	/* release: the next holder sees our critical section (pairs with the
	 * acquire CAS of try_lock or of a lock's first poll). */
	if (state == SB_MUTEX_STATE_LOCKED && sb__state_cas_release(&m->q, &state, 0))
		return 0;
	return sb_mutex_unlock_slow(m);
}

/* Prepares a future that locks `m`.  Does not register. */
SB_INLINE void sb_mutex_lock_init(sb_mutex_lock *f, sb_mutex *m)
{
	f->mutex = m;
	f->status = SB_FUTURE_IDLE; /* passed_since: zeroed by a first poll that waits */
}

/*
 * Drives the lock: 0 when the caller holds the mutex, SB_PENDING when queued
 * (the waker will be woken once per registration; in eventually fair mode a
 * woken future may find a barger holding the mutex and return SB_PENDING
 * again, keeping its place at the front).  Acquire ordering on completion.
 * Inline: a first poll on a free mutex takes it with one CAS, and a later
 * poll that finds it handed over is one load.
 */
SB_INLINE int sb_mutex_lock_poll(sb_mutex_lock *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		sb_mutex *m = f->mutex;
		/* Completed, unless the CAS fails: nobody else knows the future
		 * yet.  Stored before the atomics, it replaces init's store
		 * (the compiler drops that one) instead of following it. */
		f->status = 0;
		if (sb__likely(sb__mutex_take_if_free(m)))
			return 0;
		f->status = SB_FUTURE_IDLE;
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_mutex_lock_poll_slow(f, w);
}

/*
 * Abandons the lock.  A queued future leaves the queue; a future that was
 * handed the mutex but has not observed it passes the mutex on; a woken one
 * passes the wake on.  Drops the registered waker.  A completed future is
 * left alone: the caller holds the mutex and unlocks it.
 */
SB_API void sb_mutex_lock_cancel(sb_mutex_lock *f);

/*
 * Blocks the calling thread until it holds the mutex: 0, or -ETIMEDOUT
 * after `timeout_ns` (SB_TIMEOUT_INFINITE waits forever; 0 tries once).
 */
SB_API int sb_mutex_lock_blocking(sb_mutex *m, uint64_t timeout_ns);

/* This future through sb_future_ops (executor combinators, sb_block_on). */
SB_API extern const sb_future_ops sb_mutex_lock_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_MUTEX_H */
