/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/future.h - the poll-style future API shared by every primitive.
 *
 * An operation that can wait is a caller-owned future: initialise it with
 * `*_init`, drive it with `*_poll(future, waker)`, abandon it with `*_cancel`.
 *
 *   poll returns SB_PENDING (> 0) while it waits, 0 when the operation
 *   completed, or a negative errno when it completed with an error.
 *
 * A pending future holds one clone of the waker it was last polled with and
 * the primitive wakes or drops that clone exactly once.  Polling again with a
 * waker for which sb_waker_will_wake() is true clones nothing; polling with a
 * different waker clones the new one and drops the old one.  A waker may be
 * invoked from any thread.
 *
 * `cancel` is the destructor: it unlinks a pending future and hands on what it
 * was granted but did not consume.  After it returns the future's memory may
 * be freed or reused.  `cancel` on a completed or never-polled future does
 * nothing.  A completed future returns its result again if polled again.
 *
 * What a loop author must know about wakers:
 *
 *   - A wake or a drop may arrive after poll returned 0 and after cancel
 *     returned.  The primitive publishes a grant before it runs the wake, so
 *     the owner can see the grant, complete and free its future while the
 *     granting thread is still about to call wake (or drop) on the clone it
 *     took out of the future.  A waker must therefore point at something
 *     that outlives every clone - a refcounted task - never at memory freed
 *     when the future completes.  syncband/loop.h provides such a task.
 *   - A wake means "poll again", not "the next poll completes".  The next
 *     poll may return SB_PENDING and register again: a condition variable
 *     wait that was notified re-polls to SB_PENDING while it waits for its
 *     mutex, and is woken again when the mutex is handed over.
 *   - A pending future stays where it is: it must not be moved or copied
 *     (its waiter node is linked into the primitive) until it has completed
 *     or been cancelled.  Before its first poll, and after it is done, it may.
 *   - Every waker callback - clone, wake, wake_by_ref and drop - runs outside
 *     the library's internal locks (a future clones its waker before it takes
 *     the lock), so each of them may re-enter the library
 *     (release a permit, poll or cancel another future).  They must not fail
 *     or wait.
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
 * sb_semaphore_acquire_ops.
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

/* Bits 0-2 of the state belong to the queue; a primitive's own start here. */
#define SB_WAITQ_STATE_SHIFT 3

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_FUTURE_H */
