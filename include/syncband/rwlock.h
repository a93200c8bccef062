/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/rwlock.h - an async reader-writer lock, eventually fair by
 * default or in strict FIFO phases on request, with downgrade and an
 * upgradable read.
 *
 *   - Readers share the lock, a writer holds it alone.
 *   - Eventually fair (sb_rwlock_init, SB_RWLOCK_INIT): an unlock wakes the
 *     waiters at the head of the queue that may enter instead of handing
 *     the lock to them; until they take it, a newcomer may take the lock in
 *     any way the holders allow, queued waiters or not, try_read() and
 *     try_write() included ("barging").  Once newcomers have passed a waiter
 *     for longer than SB_FAIRNESS_BOUND_NS, what frees up is handed to the
 *     queue in arrival order until every waiter queued then has been served
 *     (a handoff phase), so neither readers nor writers wait beyond the bound
 *     plus that phase.
 *   - Strict FIFO (sb_rwlock_init_fifo, SB_RWLOCK_INIT_FIFO): waiters are
 *     served in arrival order, in phases (a writer waits for the readers
 *     before it, readers after a queued writer wait for it), so neither side
 *     starves.  try_read() and try_write() never pass a queued waiter.
 *   - downgrade() turns the caller's write lock into a read lock atomically
 *     and lets in the readers queued behind it, up to the next writer.
 *   - The upgradable read is a read lock held by at most one caller at a
 *     time; plain readers may still enter while it is held, until its
 *     upgrade is queued (in FIFO mode also until a writer is).  Its upgrade
 *     waits for the other readers to leave, ahead of every queued writer,
 *     and makes the caller the writer.
 *   - Cancelling a future that was granted but never saw it passes the grant
 *     on; cancelling an upgrade never loses the upgradable read.
 *
 * Memory ordering: an unlock (any kind) or a downgrade happens-before every
 * acquisition it lets in; a read lock sees every write lock released before.
 *
 * Thread safety: every function may be called from any thread concurrently,
 * except init/destroy; one future is driven by one thread at a time.  An
 * unlock need not come from the thread that locked.
 *
 * Errors (negative errno; every error leaves the lock unchanged)
 *   -EAGAIN      try_*(): held in a conflicting way, or (FIFO mode, or a
 *                handoff phase) someone is queued ahead
 *   -EPERM       unlock, downgrade or upgrade of a kind the lock is not held in
 *   -EBUSY       destroy() while held or waited on; upgradable_unlock() or a
 *                second upgrade while an upgrade is pending
 *   -EOVERFLOW   a read would pass SB_RWLOCK_MAX_READERS readers
 *   -EINVAL      a future initialised with no kind (zeroed memory)
 *   -ETIMEDOUT   a *_blocking wait ran out of time (nothing changed)
 *   -ECANCELED   poll of a future after its cancel
 */
#ifndef SYNCBAND_RWLOCK_H
#define SYNCBAND_RWLOCK_H

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/* sb_rwlock.mode: strict FIFO phases (SB_RWLOCK_INIT_FIFO). */
#define SB_RWLOCK_FIFO 1u

/* 40 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_rwlock {
	sb_waitq q;             /* state word: see below; the FIFO of waiters */
	sb_waiter *upgrading;   /* the pending upgrade's node, under q's lock */
	uint32_t mode;          /* 0 or SB_RWLOCK_FIFO, fixed at init */
	uint32_t handoff_left;  /* guarded by q's lock: see src/rwlock.c */
} sb_rwlock;

/*
 * The state word (ABI; the queue's bits are in future.h):
 *
 *   bit 3    SB_RWLOCK_STATE_WRITER      a writer holds the lock (or was
 *                                        handed it)
 *   bit 4    SB_RWLOCK_STATE_UPGRADABLE  the upgradable read is held
 *   bit 5    SB_RWLOCK_STATE_UPGRADING   its upgrade is pending (its node is
 *                                        sb_rwlock.upgrading, in no queue)
 *   bits 6-11 private (the eventually fair mode's hints to lock-free
 *            readers, nonzero only with SB_WAITQ_NONEMPTY; src/rwlock.c)
 *   bits 12- the plain readers holding the lock (the upgradable reader is not
 *            counted), one SB_RWLOCK_STATE_READER_ONE each
 *
 * So an uncontended read lock is CAS(+READER_ONE) on a word with none of
 * HELD, NONEMPTY, WRITER, UPGRADING; a read unlock CAS(-READER_ONE), lock-free
 * unless it may be the last reader someone waits for; a write lock
 * CAS(0 -> WRITER) and a write unlock CAS(WRITER -> 0).  The rest goes to the
 * *_slow functions (src/rwlock.c has the design).
 */
#define SB_RWLOCK_STATE_WRITER (SB_CAST(size_t, 1) << SB_WAITQ_STATE_SHIFT)
#define SB_RWLOCK_STATE_UPGRADABLE (SB_CAST(size_t, 1) << (SB_WAITQ_STATE_SHIFT + 1))
#define SB_RWLOCK_STATE_UPGRADING (SB_CAST(size_t, 1) << (SB_WAITQ_STATE_SHIFT + 2))
#define SB_RWLOCK_STATE_READERS_SHIFT (SB_WAITQ_STATE_SHIFT + 9)
#define SB_RWLOCK_STATE_READER_ONE (SB_CAST(size_t, 1) << SB_RWLOCK_STATE_READERS_SHIFT)

/* The most plain readers at once (2^52 - 1 on 64-bit targets). */
#define SB_RWLOCK_MAX_READERS (SIZE_MAX >> SB_RWLOCK_STATE_READERS_SHIFT)

/* Static initialisers: an unlocked eventually fair / strict FIFO rwlock. */
#define SB_RWLOCK_INIT { SB_WAITQ_INIT(0), NULL, 0, 0 }
#define SB_RWLOCK_INIT_FIFO { SB_WAITQ_INIT(0), NULL, SB_RWLOCK_FIFO, 0 }

/* What a sb_rwlock_lock future acquires (sb_rwlock_lock.kind). */
enum {
	SB_RWLOCK_READ = 1,        /* a read lock */
	SB_RWLOCK_WRITE = 2,       /* the write lock */
	SB_RWLOCK_UPGRADABLE = 3,  /* the upgradable read */
	SB_RWLOCK_UPGRADE = 4,     /* upgradable read -> write lock */
};

/* 72 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_rwlock_lock {
	sb_waiter waiter;
	sb_rwlock *rwlock;
	int kind;   /* SB_RWLOCK_READ ... SB_RWLOCK_UPGRADE */
	int status;
	/* when a newcomer first passed it, or 0 (zeroed by its first poll that
	 * waits) */
	uint64_t passed_since;
	uint32_t passes_at_front; /* passes that found it first, once timed */
} sb_rwlock_lock;

/* Initialises an unlocked, eventually fair rwlock.  Always returns 0. */
SB_API int sb_rwlock_init(sb_rwlock *rw);

/* Initialises an unlocked strict-FIFO rwlock.  Always returns 0. */
SB_API int sb_rwlock_init_fifo(sb_rwlock *rw);

/*
 * Returns 0, or -EBUSY when the lock is held (in any way) or futures are
 * queued (it stays usable).  The rwlock must not be used after a successful
 * destroy.
 */
SB_API int sb_rwlock_destroy(sb_rwlock *rw);

/* Snapshots: plain readers holding the lock; whether a writer holds it. */
SB_API size_t sb_rwlock_readers(const sb_rwlock *rw);
SB_API bool sb_rwlock_is_write_locked(const sb_rwlock *rw);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API int sb_rwlock_try_read_slow(sb_rwlock *rw);
SB_API int sb_rwlock_read_unlock_slow(sb_rwlock *rw);
SB_API int sb_rwlock_try_write_slow(sb_rwlock *rw);
SB_API int sb_rwlock_write_unlock_slow(sb_rwlock *rw);
SB_API int sb_rwlock_lock_poll_slow(sb_rwlock_lock *f, const sb_waker *w);

/* Whether a read may be taken lock-free from `state`: nobody queued, deciding
 * to, writing or upgrading, and room in the count. */
static inline bool sb__rwlock_may_read(size_t state)
{
	return !(state & (SB_QLOCK_HELD | SB_WAITQ_NONEMPTY | SB_RWLOCK_STATE_WRITER |
			  SB_RWLOCK_STATE_UPGRADING)) &&
	       state < SB_RWLOCK_MAX_READERS * SB_RWLOCK_STATE_READER_ONE;
}

/* The one CAS of an uncontended read lock. */
static inline bool sb__rwlock_read_fast(sb_rwlock *rw)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&rw->q);
	/* acquire: the reader sees what the last writer wrote (pairs with the
	 * release of every write unlock and downgrade). */
	return sb__rwlock_may_read(state) &&
	       sb__state_cas_acquire(&rw->q, &state, state + SB_RWLOCK_STATE_READER_ONE);
}

/* The one CAS of an uncontended write lock. */
static inline bool sb__rwlock_write_fast(sb_rwlock *rw)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&rw->q);
	/* acquire: the writer sees what every earlier holder wrote (pairs with
	 * the release of every unlock). */
	return state == 0 && sb__state_cas_acquire(&rw->q, &state, SB_RWLOCK_STATE_WRITER);
}

/*
 * Takes a read lock if no writer holds it, no upgrade is pending and nobody
 * is queued (eventually fair mode, outside a handoff phase: queued or not):
 * 0, -EAGAIN, or -EOVERFLOW.  Acquire ordering.  Never waits
 * (beyond the internal lock's few instructions).  Inline: one CAS.
 */
SB_INLINE int sb_rwlock_try_read(sb_rwlock *rw)
{
	if (sb__rwlock_read_fast(rw))
		return 0;
	return sb_rwlock_try_read_slow(rw);
}

/*
 * Releases a read lock; the last reader hands the lock to the pending
 * upgrade, or lets in the queued writer (woken after the internal lock is
 * released: handed the lock in FIFO mode or a handoff phase).  Returns 0, or
 * -EPERM when no plain reader holds it.  Release ordering.  Never waits.
 * Inline: one CAS, unless it is the last reader and someone waits.
 */
SB_INLINE int sb_rwlock_read_unlock(sb_rwlock *rw)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&rw->q);
	/* Not the last reader, or the last one with nobody waiting for it. */
	size_t busy = SB_QLOCK_HELD;
	if (state < 2 * SB_RWLOCK_STATE_READER_ONE)
		busy |= SB_WAITQ_NONEMPTY | SB_RWLOCK_STATE_UPGRADING;
	/* release: the next writer sees our reads done (pairs with its acquire
	 * CAS, or the lock acquire of the handoff that grants it). */
	if (state >= SB_RWLOCK_STATE_READER_ONE && !(state & busy) &&
	    sb__state_cas_release(&rw->q, &state, state - SB_RWLOCK_STATE_READER_ONE))
		return 0;
	return sb_rwlock_read_unlock_slow(rw);
}

/*
 * Takes the write lock if it is free and nobody is queued (eventually fair
 * mode, outside a handoff phase: queued or not): 0 or -EAGAIN.
 * Acquire ordering.  Never waits.  Inline: one CAS.
 */
SB_INLINE int sb_rwlock_try_write(sb_rwlock *rw)
{
	if (sb__rwlock_write_fast(rw))
		return 0;
	return sb_rwlock_try_write_slow(rw);
}

/*
 * Releases the write lock, letting in the head of the queue: a writer, or
 * the run of readers there (woken; handed the lock in FIFO mode or a
 * handoff phase).  Returns 0, or -EPERM when no writer holds it.
 * Release ordering.  Never waits.  Inline: one CAS when nobody waits.
 */
SB_INLINE int sb_rwlock_write_unlock(sb_rwlock *rw)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&rw->q);
	/* release: the next holder sees our writes (pairs with its acquire CAS,
	 * or the handoff's). */
	if (state == SB_RWLOCK_STATE_WRITER && sb__state_cas_release(&rw->q, &state, 0))
		return 0;
	return sb_rwlock_write_unlock_slow(rw);
}

/*
 * Turns the caller's write lock into a read lock, atomically, and lets in
 * the run of readers queued at the head, up to the next queued writer
 * (woken; granted in FIFO mode or a handoff phase).  Returns
 * 0, or -EPERM when no writer holds the lock.  Release ordering.  Never waits.
 */
SB_API int sb_rwlock_downgrade(sb_rwlock *rw);

/*
 * Takes the upgradable read if no writer or upgradable reader holds the lock
 * and nobody is queued (eventually fair mode, outside a handoff phase:
 * queued or not): 0, -EAGAIN.  Acquire ordering.  Never waits.
 */
SB_API int sb_rwlock_try_upgradable_read(sb_rwlock *rw);

/*
 * Releases the upgradable read, handing on the lock as an unlock does.
 * Returns 0, -EPERM when it is not held, or -EBUSY while its upgrade is
 * pending (cancel that first).  Release ordering.  Never waits.
 */
SB_API int sb_rwlock_upgradable_unlock(sb_rwlock *rw);

/*
 * The holder of the upgradable read becomes the writer if no plain reader
 * holds the lock: 0, -EAGAIN, -EPERM (no upgradable read held), or -EBUSY
 * (an upgrade is pending).  Acquire ordering.  Never waits.
 */
SB_API int sb_rwlock_try_upgrade(sb_rwlock *rw);

/* Prepares a future that takes a read lock.  Does not register. */
SB_INLINE void sb_rwlock_read_init(sb_rwlock_lock *f, sb_rwlock *rw)
{
	f->rwlock = rw;
	f->kind = SB_RWLOCK_READ;
	f->status = SB_FUTURE_IDLE;
}

/* Prepares a future that takes the write lock.  Does not register. */
SB_INLINE void sb_rwlock_write_init(sb_rwlock_lock *f, sb_rwlock *rw)
{
	f->rwlock = rw;
	f->kind = SB_RWLOCK_WRITE;
	f->status = SB_FUTURE_IDLE;
}

/* Prepares a future that takes the upgradable read.  Does not register. */
SB_API void sb_rwlock_upgradable_read_init(sb_rwlock_lock *f, sb_rwlock *rw);

/*
 * Prepares a future that upgrades the caller's upgradable read to the write
 * lock.  Does not register.
 */
SB_API void sb_rwlock_upgrade_init(sb_rwlock_lock *f, sb_rwlock *rw);

/*
 * Drives the future: 0 when the caller holds what it asked for, SB_PENDING
 * when queued (the waker will be woken once), -EOVERFLOW (a read, the count
 * full), -EPERM (an upgrade without the upgradable read), -EBUSY (a second
 * upgrade), -EINVAL (no kind).  Acquire ordering on completion.  Inline: a
 * first poll of an uncontended read or write takes it with one CAS, and a
 * later poll that finds it granted is one load.
 */
SB_INLINE int sb_rwlock_lock_poll(sb_rwlock_lock *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		sb_rwlock *rw = f->rwlock;
		if ((f->kind == SB_RWLOCK_READ && sb__rwlock_read_fast(rw)) ||
		    (f->kind == SB_RWLOCK_WRITE && sb__rwlock_write_fast(rw))) {
			f->status = 0;
			return 0;
		}
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_rwlock_lock_poll_slow(f, w);
}

/*
 * Abandons the future.  A queued one leaves the queue (which may let the
 * waiters behind it in); one granted but not yet observed passes the grant
 * on (see the top of the file).  Drops the registered waker.  A completed
 * future is left alone: the caller holds what it asked for.
 */
SB_API void sb_rwlock_lock_cancel(sb_rwlock_lock *f);

/*
 * Block the calling thread until it holds a read lock, the write lock, the
 * upgradable read, or (holding the upgradable read) the write lock by
 * upgrade: 0, -ETIMEDOUT after `timeout_ns` (SB_TIMEOUT_INFINITE waits
 * forever; 0 tries once), or the future's errors.  Nothing changes on
 * failure.
 */
SB_API int sb_rwlock_read_blocking(sb_rwlock *rw, uint64_t timeout_ns);
SB_API int sb_rwlock_write_blocking(sb_rwlock *rw, uint64_t timeout_ns);
SB_API int sb_rwlock_upgradable_read_blocking(sb_rwlock *rw, uint64_t timeout_ns);
SB_API int sb_rwlock_upgrade_blocking(sb_rwlock *rw, uint64_t timeout_ns);

/* This future through sb_future_ops (executor combinators, sb_block_on). */
SB_API extern const sb_future_ops sb_rwlock_lock_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_RWLOCK_H */
