/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/channel.h - a bounded multi-producer, multi-consumer channel of
 * fixed-size items, over slots the caller provides.
 *
 *   - Items are copied by value through the caller's slots; nothing
 *     allocates.  Capacity 0 is a rendezvous: a send completes only when a
 *     receiver takes its item.  force_send() never waits: it evicts the
 *     oldest item when full.
 *   - One sender's items arrive in order; waiting senders, and receivers,
 *     are served in arrival order, and nobody barges.
 *   - Close is end-of-stream: sends fail with -EPIPE (a waiting sender's
 *     item stays its own); receivers get every item sent before the close,
 *     in order, then -EPIPE.
 *   - Cancel loses and doubles nothing: it returns 0 when the operation had
 *     completed (the item taken, or received into the caller's memory),
 *     else -ECANCELED; a later poll returns the same.  A deadline or a
 *     timed-out wait reports such a completion instead.
 *
 * Ordering: a send happens-before the receive that gets its item.
 * Thread safety: any thread, except init/destroy; one future is driven by
 * one thread at a time, and stays put, with its item memory, until it
 * completes or is cancelled.
 *
 * Errors (negative errno; the channel stays unchanged; -EINVAL for bad
 * arguments comes before -EPIPE)
 *   -EINVAL      init() (see there); a NULL item pointer; a batch of more
 *                than INT_MAX items or a receive of 0; a zeroed future
 *   -EOVERFLOW   init(): capacity * item_size does not fit in a size_t
 *   -EAGAIN      try_*(): full (send) or empty and not closed (receive); on
 *                a rendezvous, no receiver (send) or sender (receive) waits;
 *                force_send() on a rendezvous with no receiver waiting
 *   -EPIPE       sends after close; receives once closed and drained
 *   -EBUSY       destroy() while futures wait
 *   -ETIMEDOUT   a blocking wait ran out of time (nothing moved)
 *   -ECANCELED   poll or cancel of a future cancelled before it completed
 */
#ifndef SYNCBAND_CHANNEL_H
#define SYNCBAND_CHANNEL_H

#include <errno.h>
#include <limits.h>
#include <string.h>

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest capacity: ring indices stay 32-bit with room to add. */
#define SB_CHANNEL_MAX_CAPACITY (SB_CAST(uint32_t, 1) << 30)

/* Bytes of slot storage a channel of `capacity` items of `item_size` needs. */
#define SB_CHANNEL_STORAGE_SIZE(item_size, capacity) \
	(SB_CAST(size_t, item_size) * SB_CAST(size_t, capacity))

/*
 * Bytes of storage a stamped-ring channel (sb_channel_init_ring) of
 * `capacity` items of `item_size` needs: a cache line each for the ring's
 * head and tail, then a slot per item: a stamp word, then the item (at 8,
 * or at 16 when item_size is a multiple of 16), padded to a multiple of 8.
 * 0 at capacity 0.
 */
#define SB_CHANNEL_RING_STORAGE_SIZE(item_size, capacity)                     \
	(SB_CAST(size_t, capacity) == 0                                       \
		 ? SB_CAST(size_t, 0)                                         \
		 : SB_CAST(size_t, 128) + SB__CHANNEL_RING_STRIDE(item_size) *  \
						  SB_CAST(size_t, capacity))

/* Where a stamped ring's item sits in its slot, and the slots' stride. */
#define SB__CHANNEL_RING_ITEM_AT(item_size) \
	(SB_CAST(size_t, item_size) % 16 == 0 ? SB_CAST(size_t, 16) : SB_CAST(size_t, 8))
#define SB__CHANNEL_RING_STRIDE(item_size)      \
	(SB__CHANNEL_RING_ITEM_AT(item_size) +  \
	 ((SB_CAST(size_t, item_size) + 7) & ~SB_CAST(size_t, 7)))

/* 64 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_channel {
	sb_waitq q;            /* the lock (its word) and the waiting receivers */
	sb_waiter *send_head;  /* the waiting senders, oldest first */
	sb_waiter *send_tail;
	void *slots;           /* the caller's storage */
	uint32_t item_size;
	uint32_t capacity;     /* SB__CHANNEL_RING_MODE: a stamped ring */
	uint32_t head;         /* the oldest item's slot (a stamped ring: stride / 8) */
	uint32_t len;          /* items in the ring (a stamped ring: where the item sits) */
} sb_channel;

/*
 * The state word (ABI; the queue's bits are in future.h):
 *
 *   bit 2     SB_WAITQ_NONEMPTY         receivers wait
 *   bit 3     SB_CHANNEL_STATE_CLOSED   close() was called; final
 *   bit 4     SB_CHANNEL_STATE_SENDERS  senders wait
 *   bit 5     SB__CHANNEL_STATE_RING    a stamped ring (fixed at init)
 *
 * Both waiting bits are written by the unlocks, so a word with neither
 * them, CLOSED nor the lock's bits says that an operation may run on the
 * ring alone: the inline paths below take the lock with one CAS from such a
 * word and release it with one CAS back.  The ring and the lists are
 * guarded by the lock (src/channel.c).
 */
#define SB_CHANNEL_STATE_CLOSED (SB_CAST(size_t, 1) << SB_WAITQ_STATE_SHIFT)
#define SB_CHANNEL_STATE_SENDERS (SB_CAST(size_t, 1) << (SB_WAITQ_STATE_SHIFT + 1))
/* A stamped ring's word keeps this bit: the lock's inline paths and first
 * polls, which test the word anyway, leave such a channel to its own. */
#define SB__CHANNEL_STATE_RING (SB_CAST(size_t, 1) << (SB_WAITQ_STATE_SHIFT + 2))

/*
 * Static initialiser: an open, empty channel over `storage` (capacity *
 * item_size bytes; may be NULL when capacity is 0).  Nothing is checked:
 * the arguments must be what sb_channel_init() would accept.
 */
#define SB_CHANNEL_INIT(storage, item_size, capacity) \
	{ SB_WAITQ_INIT(0), NULL, NULL, (storage), (item_size), (capacity), 0, 0 }

/*
 * The top bit of `capacity`: the channel is a stamped ring (ABI: the inline
 * paths read it, and then `head` and `len` hold its slots' stride / 8 and
 * where the item sits in a slot).  Its storage (SB_CHANNEL_RING_STORAGE_SIZE)
 * starts with the ring's head and tail words, a cache line each, then the
 * slots, each a stamp word and an item.  Each ring word is a position - its
 * slot's index in bits 0-30 (bit 31 is 0), the lap in bits 32-59 - and four
 * flags in bits 60-63 (below); a stamp says whether its slot is free for the
 * position of a lap (twice the lap, modulo 2^29) or holds its item (that,
 * plus 1).  Zeroed storage is an empty ring.
 */
#define SB__CHANNEL_RING_MODE (SB_CAST(uint32_t, 1) << 31)
#define SB__CHANNEL_RING_FROZEN (SB_CAST(uint64_t, 1) << 60)    /* a lock holder owns both words */
#define SB__CHANNEL_RING_RECEIVERS (SB_CAST(uint64_t, 1) << 61) /* tail: receivers wait */
#define SB__CHANNEL_RING_SENDERS (SB_CAST(uint64_t, 1) << 62)   /* head and tail: senders wait */
#define SB__CHANNEL_RING_CLOSED (SB_CAST(uint64_t, 1) << 63)    /* tail: closed */
#define SB__CHANNEL_RING_FLAGS (SB_CAST(uint64_t, 15) << 60)
#define SB__CHANNEL_RING_STEP SB_CAST(uint64_t, 1)
#define SB__CHANNEL_RING_LAP (SB_CAST(uint64_t, 1) << 32)
#define SB__CHANNEL_RING_LAP_BITS (SB_CAST(uint64_t, 0x0fffffff) << 32)

/*
 * Static initialiser of a stamped ring (sb_channel_init_ring): an open,
 * empty channel over `storage`, SB_CHANNEL_RING_STORAGE_SIZE bytes that
 * must be zero (a static array is).  Nothing is checked.
 */
#define SB_CHANNEL_RING_INIT(storage, item_size, capacity)                    \
	{ SB_WAITQ_INIT((capacity) == 0 ? 0u : SB__CHANNEL_STATE_RING), NULL, NULL, \
	  (storage), (item_size),                                              \
	  (capacity) == 0 ? 0u : SB_CAST(uint32_t, capacity) | SB__CHANNEL_RING_MODE, \
	  (capacity) == 0 ? 0u : SB_CAST(uint32_t, SB__CHANNEL_RING_STRIDE(item_size) / 8), \
	  (capacity) == 0 ? 0u : SB_CAST(uint32_t, SB__CHANNEL_RING_ITEM_AT(item_size)) }

/* 64 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_channel_send {
	sb_waiter waiter;
	sb_channel *channel;
	const void *item;
	int status;
} sb_channel_send;

/* 64 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_channel_recv {
	sb_waiter waiter;
	sb_channel *channel;
	void *items;
	uint32_t count;  /* the most items to take; once done, how many it took */
	int status;
} sb_channel_recv;

/*
 * Initialises an open, empty channel over `storage`, which must hold
 * `capacity` items of `item_size` bytes (SB_CHANNEL_STORAGE_SIZE) and stay
 * valid until destroy.  `storage` must be aligned to the largest power of
 * two that divides item_size, up to 16 (an array of the item type is).
 * Returns 0; -EINVAL when item_size is 0 or above UINT32_MAX, capacity is
 * above SB_CHANNEL_MAX_CAPACITY, or storage is NULL with a capacity or not
 * so aligned; -EOVERFLOW when capacity * item_size does not fit in a size_t.
 */
SB_API int sb_channel_init(sb_channel *ch, void *storage, size_t item_size, size_t capacity);

/*
 * As sb_channel_init, over SB_CHANNEL_RING_STORAGE_SIZE bytes at `storage`
 * (its contents need not be zero: init clears them), aligned to 8 and to 16
 * when item_size is a multiple of 16 (64 keeps the ring's head and tail on
 * cache lines of their own).  The channel keeps every contract of this
 * header; with nobody waiting, a send or receive that finds room or an item
 * takes one atomic read-modify-write instead of the lock's two.  Same
 * errors.  Capacity 0 is the rendezvous of sb_channel_init.
 */
SB_API int sb_channel_init_ring(sb_channel *ch, void *storage, size_t item_size,
				size_t capacity);

/*
 * Returns 0, or -EBUSY while futures wait (the channel stays usable).  Items
 * still in the ring are simply abandoned.  The channel must not be used
 * after a successful destroy.
 */
SB_API int sb_channel_destroy(sb_channel *ch);

/*
 * Ends the stream: later sends fail with -EPIPE, waiting senders complete
 * with -EPIPE (their items not taken), waiting receivers - whose ring is
 * empty - complete with -EPIPE, and the wakes run after the channel's lock
 * is released.  Items already in the ring stay receivable.  Idempotent.
 */
SB_API void sb_channel_close(sb_channel *ch);

/* Snapshots: whether close() was called; items in the ring; its capacity. */
SB_API bool sb_channel_is_closed(const sb_channel *ch);
SB_API size_t sb_channel_len(const sb_channel *ch);
SB_API size_t sb_channel_capacity(const sb_channel *ch);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API int sb_channel_try_send_slow(sb_channel *ch, const void *item);
SB_API int sb_channel_try_recv_slow(sb_channel *ch, void *item);
SB_API int sb_channel_send_poll_slow(sb_channel_send *f, const sb_waker *w);
SB_API int sb_channel_recv_poll_slow(sb_channel_recv *f, const sb_waker *w);
SB_API void sb_channel_unlock_slow(sb_channel *ch);

/* The word's bits that send an inline path to the out-of-line one. */
#define SB__CHANNEL_BUSY                                                   \
	(SB_QLOCK_HELD | SB_QLOCK_PARKED | SB_WAITQ_NONEMPTY |              \
	 SB_CHANNEL_STATE_CLOSED | SB_CHANNEL_STATE_SENDERS | SB__CHANNEL_STATE_RING)

/*
 * Takes the lock when nobody holds it, waits or closed the channel: one
 * CAS.  False when the word said otherwise (or the CAS lost).
 */
static inline bool sb__channel_lock_idle(sb_channel *ch, size_t *state)
{
	/* relaxed: a guess that the CAS confirms. */
	*state = sb__state_load_relaxed(&ch->q);
	/* acquire: the ring as the last holder left it (pairs with the
	 * release of every unlock). */
	return !(*state & SB__CHANNEL_BUSY) &&
	       sb__state_cas_acquire(&ch->q, state, *state | SB_QLOCK_HELD);
}

/* Releases a lock taken by sb__channel_lock_idle from `state`. */
static inline void sb__channel_unlock_idle(sb_channel *ch, size_t state)
{
	size_t held = state | SB_QLOCK_HELD;
	/* release: publishes the ring to the next holder.  It fails when a
	 * thread waiting for the lock set PARKED: the slow unlock wakes it. */
	if (!sb__state_cas_release(&ch->q, &held, state))
		sb_channel_unlock_slow(ch);
}

/* The address of ring slot `slot`. */
static inline void *sb__channel_slot(const sb_channel *ch, uint32_t slot)
{
	return SB_CAST(unsigned char *, ch->slots) + SB_CAST(size_t, slot) * ch->item_size;
}

/*
 * Copies one item.  The common sizes get a copy of constant size, which the
 * compiler turns into a move or two instead of a call to memcpy.  The empty
 * asm hides where the pointers come from: the compiler cannot tell that
 * item_size matches the caller's object, and would warn that the cases of
 * other sizes overrun it (-Warray-bounds, -Wstringop-overflow).
 */
static inline void sb__channel_copy(void *dst, const void *src, uint32_t item_size)
{
#if defined(__GNUC__) && !defined(SB__CHANNEL_COPY_BY_MEMCPY) /* the model checker's */
	__asm__("" : "+r"(dst), "+r"(src));
	switch (item_size) {
	case 8:
		memcpy(dst, src, 8);
		return;
	case 4:
		memcpy(dst, src, 4);
		return;
	case 16:
		memcpy(dst, src, 16);
		return;
	default:
		break;
	}
#endif
	memcpy(dst, src, item_size);
}

/* A stamped ring's words (SB__CHANNEL_RING_MODE), in the caller's storage. */
typedef SB_ATOMIC(uint64_t) sb__channel_word;

static inline sb__channel_word *sb__channel_word_at(const sb_channel *ch, size_t offset)
{
	return SB_CAST(sb__channel_word *,
		       SB_CAST(void *, SB_CAST(unsigned char *, ch->slots) + offset));
}

static inline sb__channel_word *sb__channel_ring_head(const sb_channel *ch)
{
	return sb__channel_word_at(ch, 0);
}

static inline sb__channel_word *sb__channel_ring_tail(const sb_channel *ch)
{
	return sb__channel_word_at(ch, 64);
}

/* Slot `slot`'s stamp; its item is `ch->len` bytes further (sb__channel_ring_put). */
static inline sb__channel_word *sb__channel_ring_stamp(const sb_channel *ch, uint32_t slot)
{
	return sb__channel_word_at(ch, 128 + SB_CAST(size_t, slot) * ch->head * 8);
}

/* The stamp of position `pos` (no flags) while its slot is free: twice its
 * lap (the index's bits 0-30 shift out, bit 31 is 0). */
static inline uint64_t sb__channel_ring_free(uint64_t pos)
{
	return pos >> 31;
}

/* The stamp of a slot once the item of `pos` (no flags) was taken: free for the next lap. */
static inline uint64_t sb__channel_ring_freed(uint64_t pos)
{
	return ((pos >> 31) + 2) & 0x1fffffff;
}

/* A ring word's slot index. */
static inline uint32_t sb__channel_ring_index(uint64_t word)
{
	return SB_CAST(uint32_t, word); /* bit 31 is 0, the flags are above */
}

/*
 * The position after `pos` (no flags) in a ring whose capacity word is
 * `capw` (the capacity with SB__CHANNEL_RING_MODE, as ch->capacity holds it):
 * the index plus 1 plus that bit stays below 2^32, and below `capw` exactly
 * when the index plus 1 stays below the capacity.
 */
static inline uint64_t sb__channel_ring_next(uint64_t pos, uint32_t capw)
{
	return sb__channel_ring_index(pos) + 1 + SB__CHANNEL_RING_MODE < capw
		       ? pos + SB__CHANNEL_RING_STEP
		       : ((pos & SB__CHANNEL_RING_LAP_BITS) + SB__CHANNEL_RING_LAP) &
				 SB__CHANNEL_RING_LAP_BITS;
}

/*
 * Copies the item at `item` into the slot at `stamp`.  The common sizes
 * know where the item sits (SB__CHANNEL_RING_ITEM_AT: 8 for 4 and 8, 16 for
 * 16) and copy a constant size (the empty asm as in sb__channel_copy hides
 * where the caller's item comes from); the others read ch->len.
 */
static inline void sb__channel_ring_put(const sb_channel *ch, sb__channel_word *stamp,
					const void *item)
{
	unsigned char *slot = SB_CAST(unsigned char *, SB_CAST(void *, stamp));
	uint32_t item_size = ch->item_size;
#if defined(__GNUC__) && !defined(SB__CHANNEL_COPY_BY_MEMCPY)
	__asm__("" : "+r"(item));
	switch (item_size) {
	case 8:
		memcpy(slot + 8, item, 8);
		return;
	case 4:
		memcpy(slot + 8, item, 4);
		return;
	case 16:
		memcpy(slot + 16, item, 16);
		return;
	default:
		break;
	}
#endif
	memcpy(slot + ch->len, item, item_size);
}

/* The same out of the slot, into `item`. */
static inline void sb__channel_ring_take(const sb_channel *ch, sb__channel_word *stamp,
					 void *item)
{
	unsigned char *slot = SB_CAST(unsigned char *, SB_CAST(void *, stamp));
	uint32_t item_size = ch->item_size;
#if defined(__GNUC__) && !defined(SB__CHANNEL_COPY_BY_MEMCPY)
	__asm__("" : "+r"(item));
	switch (item_size) {
	case 8:
		memcpy(item, slot + 8, 8);
		return;
	case 4:
		memcpy(item, slot + 8, 4);
		return;
	case 16:
		memcpy(item, slot + 16, 16);
		return;
	default:
		break;
	}
#endif
	memcpy(item, slot + ch->len, item_size);
}

/* The stamped ring's atomics (C11 and C++); each caller says why its order is enough. */
#ifdef __cplusplus
static inline uint64_t sb__channel_load_relaxed(const sb__channel_word *w)
{
	return w->load(std::memory_order_relaxed);
}

static inline uint64_t sb__channel_load_acquire(const sb__channel_word *w)
{
	return w->load(std::memory_order_acquire);
}

static inline void sb__channel_store_release(sb__channel_word *w, uint64_t v)
{
	w->store(v, std::memory_order_release);
}

static inline bool sb__channel_cas_relaxed(sb__channel_word *w, uint64_t *expected,
					   uint64_t desired)
{
	return w->compare_exchange_weak(*expected, desired, std::memory_order_relaxed,
					std::memory_order_relaxed);
}
#else
static inline uint64_t sb__channel_load_relaxed(const sb__channel_word *w)
{
	return atomic_load_explicit(SB_CAST(sb__channel_word *, w), memory_order_relaxed);
}

static inline uint64_t sb__channel_load_acquire(const sb__channel_word *w)
{
	return atomic_load_explicit(SB_CAST(sb__channel_word *, w), memory_order_acquire);
}

static inline void sb__channel_store_release(sb__channel_word *w, uint64_t v)
{
	atomic_store_explicit(w, v, memory_order_release);
}

static inline bool sb__channel_cas_relaxed(sb__channel_word *w, uint64_t *expected,
					   uint64_t desired)
{
	return atomic_compare_exchange_weak_explicit(w, expected, desired, memory_order_relaxed,
						     memory_order_relaxed);
}
#endif

/*
 * A stamped ring's send with nobody waiting (the tail's flags clear), one
 * attempt: one CAS on the tail claims the slot its stamp says is free, the
 * item is copied in, and the stamp's release store publishes it.  `capw` is
 * ch->capacity.  0 (sent), -EAGAIN (full), or SB_PENDING: the out-of-line
 * path decides (flags set, a lost CAS, or a receive of the slot's last item
 * not done copying it out).  A flag in the tail puts a bit at 2^29 or above
 * into the stamp it expects, which no stamp holds: the stamp's test sends
 * such a tail to the slow branch, and the CAS expects no flags.
 */
static inline int sb__channel_ring_push(sb_channel *ch, uint32_t capw, const void *item)
{
	sb__channel_word *tailw = sb__channel_ring_tail(ch);
	/* relaxed: a guess that the CAS confirms; the stamps order the items. */
	uint64_t t = sb__channel_load_relaxed(tailw);
	uint64_t free_stamp = sb__channel_ring_free(t);
	sb__channel_word *stamp = sb__channel_ring_stamp(ch, sb__channel_ring_index(t));
	/* acquire: the receive that freed the slot copied its item out first
	 * (pairs with the release store that freed it). */
	if (sb__channel_load_acquire(stamp) != free_stamp) {
		if (t & SB__CHANNEL_RING_FLAGS)
			return SB_PENDING;
		/* relaxed: a snapshot.  Full: the head a lap behind. */
		uint64_t h = sb__channel_load_relaxed(sb__channel_ring_head(ch));
		return (((h + SB__CHANNEL_RING_LAP) ^ t) & ~SB__CHANNEL_RING_FLAGS) == 0 ? -EAGAIN
											   : SB_PENDING;
	}
	/* relaxed: the stamp said the slot is free; the CAS only claims it. */
	if (!sb__channel_cas_relaxed(tailw, &t, sb__channel_ring_next(t, capw)))
		return SB_PENDING;
	sb__channel_ring_put(ch, stamp, item);
	/* release: the item to its receiver (pairs with the acquire load of
	 * the stamp in every receive). */
	sb__channel_store_release(stamp, free_stamp | 1);
	return 0;
}

/* The same for a receive: 0 (received), -EAGAIN (empty, not closed), or SB_PENDING. */
static inline int sb__channel_ring_pop(sb_channel *ch, uint32_t capw, void *item)
{
	sb__channel_word *headw = sb__channel_ring_head(ch);
	/* relaxed: a guess that the CAS confirms; the stamps order the items. */
	uint64_t h = sb__channel_load_relaxed(headw);
	sb__channel_word *stamp = sb__channel_ring_stamp(ch, sb__channel_ring_index(h));
	/* acquire: the item its send copied in (pairs with the release store
	 * that published it). */
	uint64_t s = sb__channel_load_acquire(stamp);
	if (s != (sb__channel_ring_free(h) | 1)) {
		if (h & SB__CHANNEL_RING_FLAGS)
			return SB_PENDING;
		/* relaxed: a snapshot.  Empty: the tail where the head is;
		 * closed, or a lock holder at work: the slow path says. */
		uint64_t t = sb__channel_load_relaxed(sb__channel_ring_tail(ch));
		return (t & ~(SB__CHANNEL_RING_RECEIVERS | SB__CHANNEL_RING_SENDERS)) == h ? -EAGAIN
											    : SB_PENDING;
	}
	/* relaxed: the stamp said the item is there; the CAS only claims it. */
	if (!sb__channel_cas_relaxed(headw, &h, sb__channel_ring_next(h, capw)))
		return SB_PENDING;
	sb__channel_ring_take(ch, stamp, item);
	/* release: the slot to its next send, after the copy out (pairs with
	 * the acquire load of the stamp in every send).  Freed: the stamp of
	 * the item plus 1 (sb__channel_ring_freed). */
	sb__channel_store_release(stamp, (s + 1) & 0x1fffffff);
	return 0;
}

/*
 * The lock's ring alone, nobody waiting: 0 (sent), -EAGAIN (full), or
 * SB_PENDING when the word sends it to the out-of-line path - as a stamped
 * ring's always does (SB__CHANNEL_STATE_RING; the futures' polls try the
 * ring there: inline, both kinds would make the polls too big to inline).
 */
static inline int sb__channel_push_idle(sb_channel *ch, const void *item)
{
	size_t state;
	if (!sb__channel_lock_idle(ch, &state))
		return SB_PENDING;
	int r = -EAGAIN;
	if (ch->len < ch->capacity) {
		uint32_t tail = ch->head + ch->len; /* both below 2^30 */
		if (tail >= ch->capacity)
			tail -= ch->capacity;
		sb__channel_copy(sb__channel_slot(ch, tail), item, ch->item_size);
		ch->len++;
		r = 0;
	}
	sb__channel_unlock_idle(ch, state);
	return r;
}

/* The same for a receive: 0 (received), -EAGAIN (empty), or SB_PENDING. */
static inline int sb__channel_pop_idle(sb_channel *ch, void *item)
{
	size_t state;
	if (!sb__channel_lock_idle(ch, &state))
		return SB_PENDING;
	int r = -EAGAIN;
	if (ch->len > 0) {
		sb__channel_copy(item, sb__channel_slot(ch, ch->head), ch->item_size);
		ch->head = ch->head + 1 == ch->capacity ? 0 : ch->head + 1;
		ch->len--;
		r = 0;
	}
	sb__channel_unlock_idle(ch, state);
	return r;
}

/*
 * Sends the item at `item` (item_size bytes) without waiting: to the oldest
 * waiting receiver, or into the ring.  0, -EAGAIN (full; on a rendezvous
 * channel: no receiver waits), -EPIPE or -EINVAL.  Inline: with nobody
 * waiting, one CAS to take the channel's lock and one to release it; one
 * CAS in all on a stamped ring (sb_channel_init_ring).
 */
SB_INLINE int sb_channel_try_send(sb_channel *ch, const void *item)
{
	if (item) {
		uint32_t capw = ch->capacity;
		int r = capw & SB__CHANNEL_RING_MODE ? sb__channel_ring_push(ch, capw, item)
						     : sb__channel_push_idle(ch, item);
		if (r != SB_PENDING)
			return r;
	}
	return sb_channel_try_send_slow(ch, item);
}

/*
 * Sends as many of the `n` items at `items` as fit without waiting, in
 * order: to waiting receivers first, then into the ring.  Returns how many
 * were sent (1..n), 0 when n is 0, or -EAGAIN (none fit), -EPIPE, -EINVAL.
 */
SB_API int sb_channel_try_send_many(sb_channel *ch, const void *items, size_t n);

/*
 * Sends without waiting, making room if it must: when the ring is full, the
 * oldest item is moved to `evicted` (item_size bytes) and this one goes to
 * the back.  Returns 0 (nothing evicted), 1 (one item evicted into
 * `evicted`), -EAGAIN (a rendezvous channel with no receiver waiting: it
 * holds no item to evict), -EPIPE or -EINVAL.  Waiting senders keep their
 * place: the ring stays full.
 */
SB_API int sb_channel_force_send(sb_channel *ch, const void *item, void *evicted);

/*
 * Receives the oldest item into `item` (item_size bytes) without waiting:
 * 0, -EAGAIN (empty, and not closed; a rendezvous channel: no sender
 * waits), -EPIPE (closed and drained) or -EINVAL.  Inline as try_send.
 */
SB_INLINE int sb_channel_try_recv(sb_channel *ch, void *item)
{
	if (item) {
		uint32_t capw = ch->capacity;
		int r = capw & SB__CHANNEL_RING_MODE ? sb__channel_ring_pop(ch, capw, item)
						     : sb__channel_pop_idle(ch, item);
		if (r != SB_PENDING)
			return r;
	}
	return sb_channel_try_recv_slow(ch, item);
}

/*
 * Receives up to `n` of the oldest items into `items` without waiting, in
 * order.  Returns how many (1..n), or -EAGAIN, -EPIPE, -EINVAL (n is 0).
 */
SB_API int sb_channel_try_recv_many(sb_channel *ch, void *items, size_t n);

/*
 * Prepares a future that sends the item at `item`, which must stay valid
 * and unchanged until the future completes or is cancelled.  Does not
 * register.
 */
SB_INLINE void sb_channel_send_init(sb_channel_send *f, sb_channel *ch, const void *item)
{
	f->channel = ch;
	f->item = item;
	f->status = SB_FUTURE_IDLE;
}

/*
 * Drives the send: 0 when the item was taken (by a receiver, or into the
 * ring), SB_PENDING while it waits (the waker will be woken once), -EPIPE
 * (closed; the item was not taken), -EINVAL.  Inline: a first poll that
 * finds room and nobody waiting is try_send's two CASes (a stamped ring's
 * one CAS is out of line), and a later poll that finds its item taken is
 * one load.
 */
SB_INLINE int sb_channel_send_poll(sb_channel_send *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		if (f->item && sb__channel_push_idle(f->channel, f->item) == 0) {
			f->status = 0;
			return 0;
		}
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_channel_send_poll_slow(f, w);
}

/*
 * Abandons the send: 0 when its item had already been taken (the send
 * happened), else -ECANCELED (the item is still the caller's; a waiting
 * send leaves the queue) or the error it completed with.  Drops the
 * registered waker.  After it the future may be freed.
 */
SB_API int sb_channel_send_cancel(sb_channel_send *f);

/*
 * Prepares a future that receives 1 to `n` items into `items` (n <= INT_MAX;
 * 0 fails at the first poll with -EINVAL).  A first poll takes up to n of
 * the oldest items there are; a future that had to wait completes with what
 * the send that reaches it hands over: one item, or up to n from
 * try_send_many.  Does not register.
 */
SB_INLINE void sb_channel_recv_many_init(sb_channel_recv *f, sb_channel *ch, void *items,
					 size_t n)
{
	f->channel = ch;
	f->items = items;
	f->count = n > INT_MAX ? 0 : SB_CAST(uint32_t, n); /* 0: -EINVAL when polled */
	f->status = SB_FUTURE_IDLE;
}

/* Prepares a future that receives one item into `item`.  Does not register. */
SB_INLINE void sb_channel_recv_init(sb_channel_recv *f, sb_channel *ch, void *item)
{
	sb_channel_recv_many_init(f, ch, item, 1);
}

/*
 * Drives the receive: 0 when items were copied into the caller's memory
 * (sb_channel_recv_count() says how many), SB_PENDING while it waits (the
 * waker will be woken once), -EPIPE (closed and drained), -EINVAL.  Inline
 * as the send's poll (a first poll for one item).
 */
SB_INLINE int sb_channel_recv_poll(sb_channel_recv *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		if (f->count == 1 && f->items && sb__channel_pop_idle(f->channel, f->items) == 0) {
			f->status = 0;
			return 0;
		}
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->status = 0;
		return 0;
	}
	return sb_channel_recv_poll_slow(f, w);
}

/*
 * Abandons the receive: 0 when items had already been copied into the
 * caller's memory (they are the caller's: sb_channel_recv_count() says how
 * many), else -ECANCELED (nothing was received; a waiting receive leaves
 * the queue) or the error it completed with.  Drops the registered waker.
 */
SB_API int sb_channel_recv_cancel(sb_channel_recv *f);

/* How many items a receive that returned 0 took; 0 before. */
SB_API size_t sb_channel_recv_count(const sb_channel_recv *f);

/*
 * Blocks the calling thread until the item is sent: 0, -ETIMEDOUT after
 * `timeout_ns` nanoseconds (SB_TIMEOUT_INFINITE waits forever; 0 tries
 * once; the item was not taken), -EPIPE or -EINVAL.
 */
SB_API int sb_channel_send_blocking(sb_channel *ch, const void *item, uint64_t timeout_ns);

/*
 * Blocks the calling thread until an item is received into `item`: 0,
 * -ETIMEDOUT (nothing received), -EPIPE (closed and drained) or -EINVAL.
 */
SB_API int sb_channel_recv_blocking(sb_channel *ch, void *item, uint64_t timeout_ns);

/* These futures through sb_future_ops (deadlines, executors, sb_block_on). */
SB_API extern const sb_future_ops sb_channel_send_ops;
SB_API extern const sb_future_ops sb_channel_recv_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_CHANNEL_H */
