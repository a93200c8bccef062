/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/broadcast.h - a bounded broadcast channel: every item sent goes
 * to every subscribed receiver, over slots the caller provides.
 *
 *   - Items are copied by value through the caller's ring; nothing
 *     allocates.  A receiver (caller-owned) gets the items sent after it
 *     subscribed, in the order sent, unless it lags.
 *   - SB_BROADCAST_LAGGING: a send never waits; it overwrites the oldest
 *     item, and a receiver more than capacity behind gets -EOVERFLOW once
 *     (sb_broadcast_receiver_missed() counts), then resumes at the oldest
 *     item held.  SB_BROADCAST_BACKPRESSURE: a send waits until every
 *     subscriber has read the slot it needs; senders are served in arrival
 *     order, and nobody barges.
 *   - Close is end-of-stream: receivers get what they have not read, then
 *     -EPIPE.  Cancel loses and doubles nothing: a cancelled receive took
 *     nothing; a send's cancel returns 0 if its item went in.
 *
 * Ordering: a send happens-before every receive that gets its item.
 * Thread safety: any thread, except init/destroy; a receiver is one
 * reader's (one receive in flight; its receives, unsubscribe and missed()
 * must not race).  Pending futures, their items and subscribed receivers
 * stay put until done, cancelled or unsubscribed.
 *
 * Errors (negative errno; the broadcast and the receiver stay unchanged,
 * except that a lagged receive's -EOVERFLOW moves the receiver on to the
 * oldest item held; -EINVAL for bad arguments comes before -EPIPE)
 *   -EINVAL      init() (see there); a NULL item; a receiver not subscribed
 *                (or subscribe() of one that is); a zeroed future
 *   -EOVERFLOW   init() (see there); a receive that lagged (the next goes on)
 *   -EAGAIN      try_send(): no room, or senders wait; try_recv(): nothing new
 *   -EPIPE       sends and subscribe after close; receives once read out
 *   -EBUSY       destroy() while in use; unsubscribe() while a receive waits
 *   -ETIMEDOUT   a blocking wait ran out of time (nothing moved)
 *   -ECANCELED   poll or cancel of a future cancelled before it completed
 */
#ifndef SYNCBAND_BROADCAST_H
#define SYNCBAND_BROADCAST_H

#include <errno.h>
#include <string.h>

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest capacity, as the channel's. */
#define SB_BROADCAST_MAX_CAPACITY (SB_CAST(uint32_t, 1) << 30)

/* Bytes of slot storage a broadcast of `capacity` items of `item_size` needs. */
#define SB_BROADCAST_STORAGE_SIZE(item_size, capacity) \
	(SB_CAST(size_t, item_size) * SB_CAST(size_t, capacity))

/* The overflow policies (see above). */
#define SB_BROADCAST_LAGGING 0
#define SB_BROADCAST_BACKPRESSURE 1

/*
 * The state word's own bits (the queue's are in future.h):
 *   bit 3  CLOSED        close() was called; final
 *   bit 4  BACKPRESSURE  the policy, fixed at init
 */
#define SB_BROADCAST_STATE_CLOSED (SB_CAST(size_t, 1) << SB_WAITQ_STATE_SHIFT)
#define SB_BROADCAST_STATE_BACKPRESSURE (SB_CAST(size_t, 1) << (SB_WAITQ_STATE_SHIFT + 1))

struct sb_broadcast_receiver;

/* 80 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_broadcast {
	sb_waitq q;                         /* the lock and the waiting receives */
	sb_waiter *send_head;               /* the waiting sends, oldest first */
	sb_waiter *send_tail;
	struct sb_broadcast_receiver *subs; /* the subscribers, in no order */
	void *slots;                        /* the caller's storage */
	uint64_t tail;                      /* the sequence number of the next item */
	uint64_t min;                       /* back-pressure: no cursor is below it;
	                                       lagging: the items whose writes began */
	uint32_t item_size;
	uint32_t capacity;
} sb_broadcast;

/*
 * Static initialiser: an open broadcast with no subscribers over `storage`
 * (capacity * item_size bytes), with `policy`.  Nothing is checked: the
 * arguments must be what sb_broadcast_init() would accept.
 */
#define SB_BROADCAST_INIT(storage, item_size, capacity, policy)                            \
	{ SB_WAITQ_INIT((policy) == SB_BROADCAST_BACKPRESSURE ? SB_BROADCAST_STATE_BACKPRESSURE \
							       : 0),                          \
	  NULL, NULL, NULL, (storage), 0, 0, (item_size), (capacity) }

/* 64 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_broadcast_receiver {
	sb_broadcast *bc;                     /* NULL while not subscribed */
	struct sb_broadcast_receiver *next;   /* the subscriber list */
	struct sb_broadcast_receiver *prev;
	uint64_t cursor;                      /* the sequence number it reads next */
	uint64_t missed;                      /* what its last -EOVERFLOW missed */
	uintptr_t ring;                       /* the inline receive's: the address of
	                                         bc->tail less that of cursor, or 0 */
	uint64_t mask;                        /* with `ring`: bc's capacity less 1 */
	int waiting;                          /* a receive of it is pending */
} sb_broadcast_receiver;

/* An unsubscribed receiver (so is an all-zero one). */
#define SB_BROADCAST_RECEIVER_INIT { NULL, NULL, NULL, 0, 0, 0, 0, 0 }

/* 64 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_broadcast_send {
	sb_waiter waiter;
	sb_broadcast *bc;
	const void *item;
	int status;
} sb_broadcast_send;

/* 64 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_broadcast_recv {
	sb_waiter waiter;
	sb_broadcast_receiver *rx;
	void *item;
	int status;
} sb_broadcast_recv;

/*
 * Initialises an open broadcast with no subscribers over `storage`, which
 * must hold `capacity` (>= 1) items of `item_size` bytes
 * (SB_BROADCAST_STORAGE_SIZE), aligned to the largest power of two that
 * divides item_size, up to 16 (an array of the item type is), and stay
 * valid until destroy.  `policy`: SB_BROADCAST_LAGGING or
 * SB_BROADCAST_BACKPRESSURE.  Returns 0; -EINVAL when item_size is 0 or
 * above UINT32_MAX, capacity is 0 or above SB_BROADCAST_MAX_CAPACITY,
 * storage is NULL or not so aligned, or the policy is unknown; -EOVERFLOW
 * when capacity * item_size does not fit in a size_t.
 */
SB_API int sb_broadcast_init(sb_broadcast *bc, void *storage, size_t item_size, size_t capacity,
			     int policy);

/*
 * Returns 0, or -EBUSY while receivers are subscribed or futures wait (the
 * broadcast stays usable).  It must not be used after a successful destroy.
 */
SB_API int sb_broadcast_destroy(sb_broadcast *bc);

/*
 * Ends the stream: later sends and subscribes fail with -EPIPE, waiting
 * senders complete with -EPIPE (their items not taken), and waiting
 * receives are woken to drain what they have not read, then get -EPIPE.
 * The wakes run after the lock is released.  Idempotent.
 */
SB_API void sb_broadcast_close(sb_broadcast *bc);

/* Snapshots: whether close() was called; the capacity; how many subscribe. */
SB_API bool sb_broadcast_is_closed(const sb_broadcast *bc);
SB_API size_t sb_broadcast_capacity(const sb_broadcast *bc);
SB_API size_t sb_broadcast_subscribers(const sb_broadcast *bc);

/*
 * Subscribes `rx`, which must not be subscribed (zeroed, initialised with
 * SB_BROADCAST_RECEIVER_INIT, or unsubscribed): it will receive every item
 * sent from now on.  Returns 0, -EINVAL (subscribed already) or -EPIPE
 * (closed: nothing will be sent).
 */
SB_API int sb_broadcast_subscribe(sb_broadcast *bc, sb_broadcast_receiver *rx);

/*
 * Unsubscribes `rx`: the items it had not read are no longer held for it
 * (with back-pressure, senders waiting for it go on).  Afterwards it may be
 * freed, or subscribed again.  Returns 0, -EINVAL (not subscribed) or -EBUSY
 * (a receive of it waits: cancel it first).
 */
SB_API int sb_broadcast_unsubscribe(sb_broadcast_receiver *rx);

/*
 * How many items were sent since rx's cursor: more than the capacity when a
 * lagging receiver fell behind.  0 when not subscribed.  A snapshot.
 */
SB_API uint64_t sb_broadcast_receiver_unread(const sb_broadcast_receiver *rx);

/* How many items the receive that last returned -EOVERFLOW on `rx` missed. */
SB_API uint64_t sb_broadcast_receiver_missed(const sb_broadcast_receiver *rx);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API int sb_broadcast_try_send_slow(sb_broadcast *bc, const void *item);
SB_API int sb_broadcast_try_recv_slow(sb_broadcast_receiver *rx, void *item);
SB_API void sb_broadcast_unlock_slow(sb_broadcast *bc);

/*
 * The 64-bit fields an inline receive reads without the lock (`tail`,
 * `min`, a receiver's `cursor`): plain uint64_t in the struct, accessed
 * atomically by every thread that races on them (src/broadcast.c).  Each
 * caller says why its order is enough.  sb__broadcast_ring_tail: the word a
 * receiver's `ring` leads to (integer arithmetic: two objects).
 */
#if defined(__cplusplus) && defined(__GNUC__)
#define SB__BROADCAST_INLINE 1
static inline uint64_t sb__broadcast_load_acquire(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline uint64_t sb__broadcast_load_relaxed(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void sb__broadcast_store_relaxed(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline void sb__broadcast_store_release(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline const uint64_t *sb__broadcast_ring_tail(const sb_broadcast_receiver *rx)
{
	return reinterpret_cast<const uint64_t *>(reinterpret_cast<uintptr_t>(&rx->cursor) +
						  rx->ring);
}
#elif !defined(__cplusplus)
#define SB__BROADCAST_INLINE 1
static inline uint64_t sb__broadcast_load_acquire(const uint64_t *p)
{
	return atomic_load_explicit((SB_ATOMIC(uint64_t) *)p, memory_order_acquire);
}

static inline uint64_t sb__broadcast_load_relaxed(const uint64_t *p)
{
	return atomic_load_explicit((SB_ATOMIC(uint64_t) *)p, memory_order_relaxed);
}

static inline void sb__broadcast_store_relaxed(uint64_t *p, uint64_t v)
{
	atomic_store_explicit((SB_ATOMIC(uint64_t) *)p, v, memory_order_relaxed);
}

static inline void sb__broadcast_store_release(uint64_t *p, uint64_t v)
{
	atomic_store_explicit((SB_ATOMIC(uint64_t) *)p, v, memory_order_release);
}

static inline const uint64_t *sb__broadcast_ring_tail(const sb_broadcast_receiver *rx)
{
	return (const uint64_t *)((uintptr_t)&rx->cursor + rx->ring);
}
#endif

/* The slot index of item `seq`: a mask, not a division, for a power-of-two capacity. */
static inline size_t sb__broadcast_index(uint32_t capacity, uint64_t seq)
{
	return (capacity & (capacity - 1)) == 0 ? SB_CAST(size_t, seq & (capacity - 1))
						 : SB_CAST(size_t, seq % capacity);
}

#ifdef SB__BROADCAST_INLINE
/*
 * Under the lock, a lagging ring of uint64_t-sized items: writes item `tail`
 * (the sequence lock's writer side, src/broadcast.c): announces it in
 * `begun` (`min`), stores the slot, then publishes `tail`.
 */
static inline void sb__broadcast_publish_word(sb_broadcast *bc, const void *item)
{
	uint64_t tail = bc->tail; /* written by lock holders only */
	uint64_t v;
#if defined(__GNUC__)
	__asm__("" : "+r"(item)); /* as in sb__broadcast_recv_word's copy */
#endif
	memcpy(&v, item, sizeof v);
	/* relaxed: the slot's release store below carries it to a receiver
	 * that reads the slot (sb__broadcast_recv_word's overwrite check). */
	sb__broadcast_store_relaxed(&bc->min, tail + 1);
	/* release: a receiver that loads the word (acquire) sees the `begun`
	 * store above (pairs with sb__broadcast_recv_word's slot load). */
	sb__broadcast_store_release(SB_CAST(uint64_t *, bc->slots) +
					    sb__broadcast_index(bc->capacity, tail),
				    v);
	/* release: a receiver that loads tail (acquire, sb__broadcast_recv_word)
	 * sees the slot written; lock holders read it under the lock. */
	sb__broadcast_store_release(&bc->tail, tail + 1);
}

/* The word's bits that send the inline send to the out-of-line one. */
#define SB__BROADCAST_SEND_BUSY                                            \
	(SB_QLOCK_HELD | SB_QLOCK_PARKED | SB_WAITQ_NONEMPTY |              \
	 SB_BROADCAST_STATE_CLOSED | SB_BROADCAST_STATE_BACKPRESSURE)

/*
 * The send of a lagging ring's uint64_t-sized item when nobody holds the
 * lock, waits or closed the broadcast: one CAS takes the lock, one releases
 * it.  0, or SB_PENDING when the library must decide (another size,
 * back-pressure, receives waiting, closed, the lock held, a CAS lost).
 */
static inline int sb__broadcast_send_idle(sb_broadcast *bc, const void *item)
{
	/* relaxed: a guess that the CAS confirms. */
	size_t state = sb__state_load_relaxed(&bc->q);
	if ((state & SB__BROADCAST_SEND_BUSY) || bc->item_size != sizeof(uint64_t))
		return SB_PENDING;
	/* acquire: the ring as the last holder left it (pairs with the
	 * release of every unlock). */
	if (!sb__state_cas_acquire(&bc->q, &state, state | SB_QLOCK_HELD))
		return SB_PENDING;
	sb__broadcast_publish_word(bc, item);
	size_t held = state | SB_QLOCK_HELD;
	/* release: publishes the ring to the next holder.  It fails when a
	 * thread waiting for the lock set PARKED: the slow unlock wakes it. */
	if (!sb__state_cas_release(&bc->q, &held, state))
		sb_broadcast_unlock_slow(bc);
	return 0;
}

/*
 * The receive of a lagging ring's next uint64_t-sized item without the lock
 * (the sequence lock of src/broadcast.c and docs/design.md): 0 with the
 * item copied and the cursor moved, or SB_PENDING, `item` untouched, when
 * the library must decide: not such a ring (back-pressure, another size, a
 * capacity not a power of two, not subscribed: `ring` is 0), nothing new,
 * a lag, or a send that began overwriting the slot during the read.
 */
static inline int sb__broadcast_recv_word(sb_broadcast_receiver *rx, void *item)
{
	uint64_t cursor = rx->cursor; /* its owner's */
	/* &bc->tail, or &rx->cursor itself when `ring` is 0: then it reads as
	 * "nothing new" with no test of its own (an all-zero receiver too). */
	const uint64_t *seq = sb__broadcast_ring_tail(rx);
#if defined(__GNUC__)
	/* Hides that a receiver the compiler knows to be all-zero leads to its
	 * own cursor: the reads past the test below would warn for it (they
	 * are dead then). */
	__asm__("" : "+r"(seq));
#endif
	/* acquire: item `cursor` is in its slot, or a later one is (pairs with
	 * sb__broadcast_publish_word's release store of tail). */
	if (sb__broadcast_load_acquire(seq) == cursor) /* nothing new */
		return SB_PENDING;
	const sb_broadcast *bc = SB_CONTAINER_OF(seq, sb_broadcast, tail);
	uint64_t next = cursor + 1;
	/* acquire: a word of a later send carries that send's `begun` store
	 * (pairs with sb__broadcast_publish_word's release store of it). */
	uint64_t v = sb__broadcast_load_acquire(SB_CAST(const uint64_t *, bc->slots) +
						(cursor & rx->mask));
	/* relaxed: after the acquire loads above, it shows the `begun` store
	 * (`min`) of the send whose word the slot load read, if a later one,
	 * and of item tail - 1 (so begun >= tail: a lag fails it too). */
	uint64_t begun = sb__broadcast_load_relaxed(&bc->min);
	if (begun - next > rx->mask) /* lagged, or item cursor + capacity began */
		return SB_PENDING;
#if defined(__GNUC__)
	/* An object the compiler knows to be smaller than the item is not a
	 * caller's of such a ring: the branch is dead for it, which the copy
	 * would otherwise warn overruns it. */
	if (__builtin_object_size(item, 0) < sizeof v)
		return SB_PENDING;
#endif
	memcpy(item, &v, sizeof v);
	/* relaxed: unread() takes the lock and wants a snapshot only. */
	sb__broadcast_store_relaxed(&rx->cursor, next);
	return 0;
}
#endif

/*
 * Sends the item at `item` (item_size bytes) to every subscriber without
 * waiting: 0, -EAGAIN (back-pressure: a subscriber has yet to read the slot
 * it needs, or senders wait), -EPIPE or -EINVAL.  Inline: a lagging
 * broadcast's item of uint64_t size, with no receive waiting, is one CAS
 * to take the lock and one to release it.
 */
SB_INLINE int sb_broadcast_try_send(sb_broadcast *bc, const void *item)
{
#ifdef SB__BROADCAST_INLINE
	if (item && sb__broadcast_send_idle(bc, item) == 0)
		return 0;
#endif
	return sb_broadcast_try_send_slow(bc, item);
}

/*
 * Receives rx's next item into `item` without waiting: 0, -EAGAIN (nothing
 * new), -EOVERFLOW (lagged: see sb_broadcast_receiver_missed; nothing was
 * copied, and the next receive gets the oldest item held), -EPIPE (closed,
 * and rx has read everything) or -EINVAL.  Inline: a lagging broadcast's
 * next item of uint64_t size, when its capacity is a power of two, is read
 * with no call, no lock and no read-modify-write.
 */
SB_INLINE int sb_broadcast_try_recv(sb_broadcast_receiver *rx, void *item)
{
#ifdef SB__BROADCAST_INLINE
	if (item && sb__broadcast_recv_word(rx, item) == 0)
		return 0;
#endif
	return sb_broadcast_try_recv_slow(rx, item);
}

/*
 * Prepares a future that sends the item at `item`, which must stay valid
 * and unchanged until the future completes or is cancelled.  Does not
 * register.
 */
SB_INLINE void sb_broadcast_send_init(sb_broadcast_send *f, sb_broadcast *bc, const void *item)
{
	f->bc = bc;
	f->item = item;
	f->status = SB_FUTURE_IDLE;
}

/*
 * Drives the send: 0 when the item went into the ring, SB_PENDING while it
 * waits for room (back-pressure only; the waker will be woken once), -EPIPE
 * (closed; the item was not taken), -EINVAL.
 */
SB_API int sb_broadcast_send_poll(sb_broadcast_send *f, const sb_waker *w);

/*
 * Abandons the send: 0 when its item had already gone into the ring, else
 * -ECANCELED (the item was not sent) or the error it completed with.  Drops
 * the registered waker.  After it the future may be freed.
 */
SB_API int sb_broadcast_send_cancel(sb_broadcast_send *f);

/*
 * Prepares a future that receives rx's next item into `item` (item_size
 * bytes).  Does not register.
 */
SB_INLINE void sb_broadcast_recv_init(sb_broadcast_recv *f, sb_broadcast_receiver *rx,
				      void *item)
{
	f->rx = rx;
	f->item = item;
	f->status = SB_FUTURE_IDLE;
}

/*
 * Drives the receive: 0 when an item was copied into `item`, SB_PENDING
 * while it waits (the waker will be woken once: then poll again),
 * -EOVERFLOW (lagged, as try_recv), -EPIPE, -EINVAL.
 */
SB_API int sb_broadcast_recv_poll(sb_broadcast_recv *f, const sb_waker *w);

/*
 * Abandons the receive: -ECANCELED unless it had completed (then its
 * result); nothing was taken from the receiver.  Drops the registered
 * waker.  After it the future may be freed.
 */
SB_API int sb_broadcast_recv_cancel(sb_broadcast_recv *f);

/*
 * Blocks the calling thread until the item is sent: 0, -ETIMEDOUT after
 * `timeout_ns` nanoseconds (SB_TIMEOUT_INFINITE waits forever; 0 tries
 * once; the item was not sent), -EPIPE or -EINVAL.
 */
SB_API int sb_broadcast_send_blocking(sb_broadcast *bc, const void *item, uint64_t timeout_ns);

/*
 * Blocks the calling thread until rx's next item is received into `item`:
 * 0, -ETIMEDOUT (nothing received), -EOVERFLOW, -EPIPE or -EINVAL.
 */
SB_API int sb_broadcast_recv_blocking(sb_broadcast_receiver *rx, void *item,
				      uint64_t timeout_ns);

/* These futures through sb_future_ops (deadlines, executors, sb_block_on). */
SB_API extern const sb_future_ops sb_broadcast_send_ops;
SB_API extern const sb_future_ops sb_broadcast_recv_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_BROADCAST_H */
