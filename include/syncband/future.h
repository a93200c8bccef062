/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/future.h - the poll-style future API shared by every primitive.
 *
 * An operation that can wait is a caller-owned future: `*_init` prepares it
 * (registering nothing), `*_poll(future, waker)` drives it and returns
 * SB_PENDING (> 0) while it waits, 0 when it completed, or a negative errno
 * when it completed with an error; `*_cancel` is its destructor.
 *
 *   - A pending future holds one clone of the waker it was last polled with,
 *     and the primitive wakes or drops that clone exactly once.  Re-polling
 *     with a waker for which sb_waker_will_wake() is true clones nothing;
 *     another waker is cloned and the old clone dropped.
 *   - A wake means "poll again", not "the next poll completes".
 *   - A wake or a drop may arrive after poll returned 0 and after cancel
 *     returned: a waker must point at something that outlives every clone
 *     (a refcounted task, such as syncband/loop.h provides).
 *   - Every waker callback (clone, wake, wake_by_ref, drop) runs outside the
 *     library's locks, so it may re-enter the library; it must not fail or
 *     wait.  Wakers may be invoked from any thread.
 *   - A pending future must not be moved or copied (its waiter node is
 *     linked into the primitive); before its first poll and once done, it may.
 *   - cancel unlinks a pending future and hands on what it was granted but
 *     did not consume; then its memory may be freed or reused.  It does
 *     nothing on a completed or never-polled future.  A completed future
 *     polls to its result again; one cancelled before it completed, to
 *     -ECANCELED.
 *   - A never-initialised (zeroed) future polls to -EINVAL, its cancel does
 *     nothing, and the primitive is left as it was.
 *   - One future is driven by one thread at a time: its poll and cancel
 *     must not race.
 */
#ifndef SYNCBAND_FUTURE_H
#define SYNCBAND_FUTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#include <atomic>
/* Layout-compatible with C11 _Atomic(T) for the lock-free types used here. */
#define SB_ATOMIC(T) std::atomic<T>
extern "C" {
#else
#include <stdatomic.h>
#define SB_ATOMIC(T) _Atomic(T)
#endif

/* Alignment of a struct member, in C11 and C++11. */
#ifdef __cplusplus
#define SB_ALIGNAS(n) alignas(n)
#else
#define SB_ALIGNAS(n) _Alignas(n)
#endif

#if defined(__GNUC__)
#define SB_API __attribute__((visibility("default")))
#else
#define SB_API
#endif

/*
 * Inline fast paths.  The uncontended operations - try_acquire, a release
 * or unlock or set with nobody waiting, try_lock, is_set / try_wait, a
 * future's init, a first poll that completes at once and a later poll that
 * finds its future granted - are defined in these headers as SB_INLINE
 * (static inline) functions, so that they compile into the caller: one
 * atomic read-modify-write (or load) and a few branches, with no call.
 * Whatever they cannot finish they hand to an exported out-of-line function
 * named like them with a `_slow` suffix (sb_mutex_unlock ->
 * sb_mutex_unlock_slow), which callers should not call directly.
 *
 * Every SB_INLINE function is also exported by the library under its own
 * name (sb_mutex_unlock, ...): the library compiles these same definitions
 * once more with SB_INLINE defined as SB_API (src/exported.c, as liburing's
 * ffi.c does), for callers that cannot inline - FFI, dlsym, other languages.
 * SB_INLINE is the library's to define; leave it alone.
 *
 * So the layout of each primitive's state word is ABI: its bits are defined
 * once, below and in each primitive's header, and the library's sources use
 * these definitions.
 */
#ifndef SB_INLINE
#define SB_INLINE static inline
#endif

/* The struct of type `type` whose member `member` is at `ptr`. */
#ifdef __cplusplus
#define SB_CONTAINER_OF(ptr, type, member)                                     \
	(reinterpret_cast<type *>(                                             \
		const_cast<char *>(reinterpret_cast<const char *>(ptr)) -      \
		offsetof(type, member)))
#else
#define SB_CONTAINER_OF(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

/* A conversion usable in static initialisers, in C and in C++. */
#ifdef __cplusplus
#define SB_CAST(type, value) (static_cast<type>(value))
#else
#define SB_CAST(type, value) ((type)(value))
#endif

/* poll result: the future is registered and will be woken. */
#define SB_PENDING 1

typedef struct sb_waker sb_waker;

typedef struct sb_waker_vtable {
	/* Returns a new reference to the same task; must not fail. */
	sb_waker (*clone)(const void *data);
	/* Wakes the task and consumes this reference. */
	void (*wake)(const void *data);
	/* Wakes the task and keeps this reference. */
	void (*wake_by_ref)(const void *data);
	/* Releases this reference without waking. */
	void (*drop)(const void *data);
} sb_waker_vtable;

struct sb_waker {
	const sb_waker_vtable *vtable; /* NULL: no waker */
	const void *data;
};

/* True when waking `a` and waking `b` wake the same task. */
static inline bool sb_waker_will_wake(const sb_waker *a, const sb_waker *b)
{
	return a->vtable == b->vtable && a->data == b->data;
}

static inline sb_waker sb_waker_clone(const sb_waker *w)
{
	return w->vtable->clone(w->data);
}

/* Consumes the reference held in *w. */
static inline void sb_waker_wake(sb_waker w)
{
	w.vtable->wake(w.data);
}

static inline void sb_waker_wake_by_ref(const sb_waker *w)
{
	w->vtable->wake_by_ref(w->data);
}

static inline void sb_waker_drop(sb_waker w)
{
	w.vtable->drop(w.data);
}

/*
 * A future seen through two function pointers, so that combinators (the
 * executor's sb_timeout), sb_block_on and the blocking waits can drive any
 * syncband future.  Every primitive exports one for its future, e.g.
 * sb_semaphore_acquire_ops.  A combinator may poll a future once after
 * cancelling it, to learn whether the cancel found its operation done (a
 * channel's send or receive): such a poll must return the future's final
 * result without registering (syncband's futures return -ECANCELED, or 0
 * when the operation had happened).
 */
typedef struct sb_future_ops {
	int (*poll)(void *future, const sb_waker *waker);
	void (*cancel)(void *future);
} sb_future_ops;

/* A waker whose every operation does nothing; for tests and benchmarks. */
SB_API sb_waker sb_waker_noop(void);

/*
 * Wait without timeout, for the blocking (thread) waits of every primitive.
 */
#define SB_TIMEOUT_INFINITE UINT64_MAX

/*
 * The intrusive waiter node that every pending future embeds.  Its fields
 * are private to the library; it is public only so that futures can live on
 * the caller's stack with no allocation.
 */
typedef struct sb_waiter {
	struct sb_waiter *next;
	struct sb_waiter *prev;
	sb_waker waker;                 /* the registered clone, if any */
	SB_ATOMIC(size_t) remaining;    /* units still owed; see src/waitq.h */
} sb_waiter;

/*
 * The waiter queue every primitive is built on: the primitive's one state
 * word (whose low bits are the queue's lock, see src/waitq.h) and the FIFO of
 * sb_waiter it guards.  Private fields.
 */
typedef struct sb_waitq {
	SB_ATOMIC(size_t) state;
	sb_waiter *head;
	sb_waiter *tail;
} sb_waitq;

/* In C++ the atomic is list-initialised: copying a std::atomic is ill-formed
 * before C++17. */
#ifdef __cplusplus
#define SB_WAITQ_INIT(state) { { (state) }, NULL, NULL }
#else
#define SB_WAITQ_INIT(state) { (state), NULL, NULL }
#endif

/*
 * The state word (ABI: the inline fast paths read and change it).  Its low
 * bits belong to the queue, the rest to the primitive (see its header):
 *
 *   bit 0  SB_QLOCK_HELD       the queue's internal lock is held
 *   bit 1  SB_QLOCK_PARKED     a thread sleeps on the word's futex, waiting
 *                              for that lock (only while HELD)
 *   bit 2  SB_WAITQ_NONEMPTY   someone waits: the queue had waiters when its
 *                              lock was last released, or a lone waiter's
 *                              address is in the word (below)
 *   bits SB_WAITQ_STATE_SHIFT and up: the primitive's own state
 *
 * A lock-free operation that hands something to waiters (a release, an
 * unlock, a set) may finish inline only when it sees neither HELD nor
 * NONEMPTY: nobody waits, and nobody is deciding to (a first waiter sets
 * HELD in the very CAS with which it decides to wait).
 *
 * A lone waiter: in the primitives whose bits from SB_WAITQ_LONE_SHIFT up
 * are free while anyone waits (semaphore, mutex, auto-reset event), a first
 * waiter owed one unit may wait without the lock by installing its
 * 16-byte-aligned future's address in those bits, with NONEMPTY, in one CAS.
 */
#define SB_QLOCK_HELD SB_CAST(size_t, 1)
#define SB_QLOCK_PARKED SB_CAST(size_t, 2)
#define SB_WAITQ_NONEMPTY SB_CAST(size_t, 4)
/* Bits 0-2 of the state belong to the queue; a primitive's own start here. */
#define SB_WAITQ_STATE_SHIFT 3
#define SB_WAITQ_LONE_SHIFT 4

/*
 * The eventually fair mode's bound, shared by the mutex and the semaphore:
 * how long newcomers may pass the oldest waiter (timed from the first one
 * that passed it) before what frees up is handed to the queue in order: 1 ms
 * (docs/design.md says why).
 */
#define SB_FAIRNESS_BOUND_NS 1000000u

/*
 * A future's `status` (ABI too): SB_FUTURE_IDLE from init until its first
 * poll, SB_PENDING while queued, then 0 or -errno (-ECANCELED after cancel).
 */
#define SB_FUTURE_IDLE 2

/*
 * A queued waiter's `remaining` once it has been granted everything and
 * detached from the queue (ABI: the inline polls complete a pending future
 * that finds it so).  Its other values are the library's (src/waitq.h).
 */
#define SB_WAITER_GRANTED SB_CAST(size_t, 0)

/* A fast path's condition that usually holds: its success becomes the
 * straight line, the slow-path call the branch. */
#if defined(__GNUC__)
static inline bool sb__likely(bool b)
{
	return __builtin_expect(b, 1);
}
#else
static inline bool sb__likely(bool b)
{
	return b;
}
#endif

/*
 * The atomic operations of the inline fast paths, on a state word that is
 * _Atomic(size_t) in C and std::atomic<size_t> in C++.  The CASes are weak:
 * a fast path that fails for any reason hands over to its slow path, which
 * re-reads the word.  Each caller says why its order is enough.
 */
#ifdef __cplusplus
static inline size_t sb__state_load_relaxed(const sb_waitq *q)
{
	return q->state.load(std::memory_order_relaxed);
}

static inline size_t sb__state_load_acquire(const sb_waitq *q)
{
	return q->state.load(std::memory_order_acquire);
}

static inline bool sb__state_cas_acquire(sb_waitq *q, size_t *expected, size_t desired)
{
	return q->state.compare_exchange_weak(*expected, desired, std::memory_order_acquire,
					      std::memory_order_relaxed);
}

static inline bool sb__state_cas_release(sb_waitq *q, size_t *expected, size_t desired)
{
	return q->state.compare_exchange_weak(*expected, desired, std::memory_order_release,
					      std::memory_order_relaxed);
}

static inline size_t sb__waiter_load_acquire(const sb_waiter *w)
{
	return w->remaining.load(std::memory_order_acquire);
}
#else
static inline size_t sb__state_load_relaxed(const sb_waitq *q)
{
	return atomic_load_explicit((SB_ATOMIC(size_t) *)&q->state, memory_order_relaxed);
}

static inline size_t sb__state_load_acquire(const sb_waitq *q)
{
	return atomic_load_explicit((SB_ATOMIC(size_t) *)&q->state, memory_order_acquire);
}

static inline bool sb__state_cas_acquire(sb_waitq *q, size_t *expected, size_t desired)
{
	return atomic_compare_exchange_weak_explicit(&q->state, expected, desired,
						     memory_order_acquire, memory_order_relaxed);
}

static inline bool sb__state_cas_release(sb_waitq *q, size_t *expected, size_t desired)
{
	return atomic_compare_exchange_weak_explicit(&q->state, expected, desired,
						     memory_order_release, memory_order_relaxed);
}

static inline size_t sb__waiter_load_acquire(const sb_waiter *w)
{
	return atomic_load_explicit((SB_ATOMIC(size_t) *)&w->remaining, memory_order_acquire);
}
#endif

/*
 * The inline re-poll of a pending future: whether its node has been granted
 * everything (its owner's lock-free look).  Acquire: the future sees what
 * its granter wrote (pairs with the release store that detached the node).
 */
static inline bool sb__future_granted(const int *status, const sb_waiter *w)
{
	return *status == SB_PENDING && sb__waiter_load_acquire(w) == SB_WAITER_GRANTED;
}

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_FUTURE_H */
