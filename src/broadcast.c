/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/broadcast.h>
#include <syncband/channel.h> /* sb__channel_copy */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "park.h"
#include "wait_future.h"

/*
 * One lock, a ring addressed by 64-bit sequence numbers, the subscribers'
 * cursors, and two FIFOs of waiters (docs/design.md, "Broadcast").  The
 * lock is the queue lock of the state word; it guards the ring (`tail`,
 * the slots, `min`: only lock holders write them), the subscriber list and
 * every subscriber's cursor (a lagging receiver's own lock-free read moves
 * its cursor too, below), the waiting receives (bc->q) and the waiting
 * sends (send_head/send_tail).
 * CLOSED is set only by the CAS that takes the lock (close), and
 * BACKPRESSURE only by init, so a lock holder's view of both stays true.
 *
 * Item `s` lives in slot s % capacity.  A receiver reads item `cursor`
 * while cursor < tail:
 *   - lagging: the ring holds the last `capacity` items, so a cursor below
 *     tail - capacity was overwritten: the receive reports how many were
 *     missed and moves the cursor to the oldest item held;
 *   - back-pressure: item `tail` may be written only when every cursor is
 *     above tail - capacity, i.e. tail - (the smallest cursor) < capacity.
 *     `min` is a lower bound of the smallest cursor (cursors only grow, and
 *     a subscriber starts at tail), recomputed by a scan of the subscribers
 *     only when it says "full"; so a slot is reused only once every
 *     subscriber read it, and an unsubscribe - which unlinks the cursor -
 *     releases what it held with no per-item count to fix.
 *
 * Lock-free receives (lagging, items of at most BC_FREE_MAX bytes): a
 * receive whose next item is there reads it without the lock, as a
 * sequence lock over the ring (for an item of uint64_t size, inline in the
 * caller: sb__broadcast_recv_word in broadcast.h).  The sender, under the lock, announces the
 * item it overwrites (`min`, unused by a lagging ring, becomes `begun`: the
 * items whose writes began), writes the slot with release stores, then
 * publishes `tail` with a release store.  A receiver loads `tail`
 * (acquire), copies the slot with acquire loads into a buffer of its own,
 * then loads `begun`: a word written by a later send was stored after that
 * send's announcement, which the acquire load of the word then makes
 * visible, so `begun - cursor <= capacity` means no word came from a later
 * item.  Anything else (nothing there, a lag, an overwrite seen) goes to the
 * lock, which decides as before.  Every access of those slots is atomic, so
 * there is no plain race for C11 or TSan; the receiver's copy out of its
 * buffer happens only once the item is known whole.  Back-pressure and
 * larger items keep the lock for every receive (a read may have to let
 * waiting senders in).
 *
 * A waiting receive waits only while its cursor == tail.  A send that
 * finds receives waiting releases them all (sb_waitq_release_all): each is
 * woken to poll again and copies the item itself, under the lock.  So a
 * receive takes an item only in the poll that returns 0, and its cancel
 * never has anything to hand back.
 *
 * Waiting sends (back-pressure) are the channel's: a read that moved the
 * slowest cursor, or an unsubscribe, moves waiting senders' items into the
 * ring, oldest first, completing each GRANTED with release order; a cancel
 * that finds its node detached GRANTED reports the send done (0).
 *
 * Wakes are collected in a batch and run after unlocking; a batch that
 * fills is flushed by unlocking, after which a holder re-reads everything.
 */

/* A linked waiter's `remaining`: one operation owed. */
#define BC_WAITING 1

/* Takes the lock; returns the state word (CLOSED, BACKPRESSURE stable until unlock). */
static inline size_t bc_lock(sb_broadcast *bc)
{
	return sb_waitq_lock(&bc->q, 0);
}

static inline void bc_unlock(sb_broadcast *bc)
{
	sb_waitq_unlock(&bc->q);
}

/* Under the lock (the bits change only when the lock is taken). */
static inline size_t bc_state_locked(const sb_broadcast *bc)
{
	return sb_waitq_load(&bc->q);
}

static inline bool bc_is_closed_locked(const sb_broadcast *bc)
{
	return bc_state_locked(bc) & SB_BROADCAST_STATE_CLOSED;
}

static inline bool bc_backpressure(const sb_broadcast *bc)
{
	return bc_state_locked(bc) & SB_BROADCAST_STATE_BACKPRESSURE;
}

static inline unsigned char *bc_slot(const sb_broadcast *bc, uint64_t seq)
{
	return (unsigned char *)bc->slots + sb__broadcast_index(bc->capacity, seq) * bc->item_size;
}

/* The largest item a lagging broadcast's receive reads without the lock. */
#define BC_FREE_MAX 64

static inline _Atomic uint64_t *bc_tail_atomic(sb_broadcast *bc)
{
	return (_Atomic uint64_t *)&bc->tail;
}

/* A lagging ring's `min`: the items whose slot writes began (tail, or tail + 1 mid-write). */
static inline _Atomic uint64_t *bc_begun_atomic(sb_broadcast *bc)
{
	return (_Atomic uint64_t *)&bc->min;
}

static inline _Atomic uint64_t *bc_cursor_atomic(sb_broadcast_receiver *rx)
{
	return (_Atomic uint64_t *)&rx->cursor;
}

/* Moves rx's cursor (its owner only; unread() loads it from any thread). */
static inline void bc_set_cursor(sb_broadcast_receiver *rx, uint64_t cursor)
{
	/* relaxed: unread() takes the lock and wants a snapshot only. */
	atomic_store_explicit(bc_cursor_atomic(rx), cursor, memory_order_relaxed);
}

/* The unit of a slot's atomic copies: 8 bytes, 4, or 1, as the storage's alignment allows. */
static inline uint32_t bc_unit(uint32_t item_size)
{
	return item_size % 8 == 0 ? 8 : item_size % 4 == 0 ? 4 : 1;
}

/*
 * Under the lock (a lagging ring of items up to BC_FREE_MAX bytes): writes
 * `item` into `slot` one unit at a time.  Inline, so that a constant size
 * leaves one store.
 */
static inline __attribute__((always_inline)) void bc_slot_store(unsigned char *slot,
								 const void *item, uint32_t size)
{
	const unsigned char *in = item;
	uint32_t unit = bc_unit(size);
	for (uint32_t i = 0; i < size; i += unit) {
		if (unit == 8) {
			uint64_t v;
			memcpy(&v, in + i, 8);
			/* release: a receiver that loads it (acquire) sees this send's
			 * `begun` store, made before (the overwrite check of bc_recv_free
			 * and sb__broadcast_recv_word). */
			atomic_store_explicit((_Atomic uint64_t *)(slot + i), v, memory_order_release);
		} else if (unit == 4) {
			uint32_t v;
			memcpy(&v, in + i, 4);
			/* release: as the 8-byte unit's. */
			atomic_store_explicit((_Atomic uint32_t *)(slot + i), v, memory_order_release);
		} else {
			/* release: as the 8-byte unit's. */
			atomic_store_explicit((_Atomic unsigned char *)(slot + i), in[i],
					      memory_order_release);
		}
	}
}

/* Without the lock (a lagging ring of items up to BC_FREE_MAX bytes):
 * copies `slot` into `out`, one unit at a time. */
static inline __attribute__((always_inline)) void bc_slot_load(void *out,
								const unsigned char *slot,
								uint32_t size)
{
	unsigned char *o = out;
	uint32_t unit = bc_unit(size);
	for (uint32_t i = 0; i < size; i += unit) {
		if (unit == 8) {
			/* acquire: a unit of a later send carries that send's
			 * `begun` store (pairs with bc_slot_store's release). */
			uint64_t v = atomic_load_explicit((_Atomic uint64_t *)(slot + i),
							  memory_order_acquire);
			memcpy(o + i, &v, 8);
		} else if (unit == 4) {
			/* acquire: as the 8-byte unit's. */
			uint32_t v = atomic_load_explicit((_Atomic uint32_t *)(slot + i),
							  memory_order_acquire);
			memcpy(o + i, &v, 4);
		} else {
			/* acquire: as the 8-byte unit's. */
			o[i] = atomic_load_explicit((_Atomic unsigned char *)(slot + i),
						    memory_order_acquire);
		}
	}
}

/*
 * Without the lock, for bc_recv_free: item `cursor` (no further than the
 * capacity behind the tail it loaded) into `item`, or SB_PENDING when a send
 * overwrote its slot meanwhile (`item` untouched).
 */
static __attribute__((noinline)) int bc_recv_free_copy(sb_broadcast *bc, uint64_t cursor,
						       void *item)
{
	unsigned char buf[BC_FREE_MAX] __attribute__((aligned(16)));
	bc_slot_load(buf, bc_slot(bc, cursor), bc->item_size);
	/* relaxed: after the acquire loads above, it shows the begun store of
	 * every send whose unit the copy read (bc_slot_store). */
	uint64_t begun = atomic_load_explicit(bc_begun_atomic(bc), memory_order_relaxed);
	if (begun - cursor > bc->capacity) /* item cursor + capacity began: maybe torn */
		return SB_PENDING;
	sb__channel_copy(item, buf, bc->item_size);
	return 0;
}

/*
 * Without the lock: rx's next item into `item` (0), or SB_PENDING when the
 * lock must decide: back-pressure or a large item, nothing new, a lag, or a
 * send overwriting the slot during the copy (`item` untouched).  A receiver
 * with a `ring` (bc_inline_ring) takes the header's inline read
 * (sb__broadcast_recv_word: one unit, in a register); the others go through
 * a buffer.
 */
static inline int bc_recv_free(sb_broadcast_receiver *rx, void *item)
{
	if (rx->ring != 0)
		return sb__broadcast_recv_word(rx, item);
	sb_broadcast *bc = rx->bc;
	uint32_t size = bc->item_size;
	/* relaxed: BACKPRESSURE is written by init only. */
	size_t state = atomic_load_explicit((_Atomic size_t *)&bc->q.state, memory_order_relaxed);
	if ((state & SB_BROADCAST_STATE_BACKPRESSURE) || size > BC_FREE_MAX)
		return SB_PENDING;
	uint64_t cursor = rx->cursor; /* its owner's */
	/* acquire: the slot holds item `cursor` or a later one (pairs with
	 * bc_publish's release store of tail). */
	uint64_t tail = atomic_load_explicit(bc_tail_atomic(bc), memory_order_acquire);
	if (tail - cursor - 1 >= bc->capacity) /* nothing new, or lagged */
		return SB_PENDING;
	if (bc_recv_free_copy(bc, cursor, item) != 0)
		return SB_PENDING;
	bc_set_cursor(rx, cursor + 1);
	return 0;
}

/*
 * Whether rx's receives may take the header's inline read: a lagging ring of
 * uint64_t-sized items whose capacity is a power of two (its index is
 * `cursor & mask`).  Fixed at init, so subscribe decides it once.
 */
static bool bc_inline_ring(const sb_broadcast *bc)
{
	return !bc_backpressure(bc) && bc->item_size == sizeof(uint64_t) &&
	       (bc->capacity & (bc->capacity - 1)) == 0;
}

/* Under the lock: a full batch is run with the lock dropped. */
static inline void bc_make_room(sb_broadcast *bc, sb_wake_batch *b)
{
	if (sb_wake_batch_is_full(b))
		sb_waitq_flush(&bc->q, b);
}

/* ------------------------------------------------------------ the ring */

/* Under the lock: the smallest cursor, or tail with nobody subscribed. */
static uint64_t bc_min_cursor(const sb_broadcast *bc)
{
	uint64_t min = bc->tail;
	for (const sb_broadcast_receiver *r = bc->subs; r; r = r->next)
		if (r->cursor < min)
			min = r->cursor;
	return min;
}

/* Under the lock: whether item `tail` may be written now. */
static bool bc_has_room(sb_broadcast *bc)
{
	if (!bc_backpressure(bc) || bc->tail - bc->min < bc->capacity)
		return true;
	bc->min = bc_min_cursor(bc);
	return bc->tail - bc->min < bc->capacity;
}

/* Under the lock, with room: item `tail` is written (the receives waiting for it are
 * released by the caller). */
static inline void bc_publish_as(sb_broadcast *bc, const void *item, bool lagging)
{
	if (lagging && bc->item_size == sizeof(uint64_t)) { /* the common size: one store */
		sb__broadcast_publish_word(bc, item);
		return;
	}
	uint64_t tail = bc->tail; /* written by lock holders only */
	if (lagging && bc->item_size <= BC_FREE_MAX) { /* read without the lock */
		/* relaxed: the slot's release stores below carry it to a receiver
		 * that reads one of them (bc_recv_free). */
		atomic_store_explicit(bc_begun_atomic(bc), tail + 1, memory_order_relaxed);
		bc_slot_store(bc_slot(bc, tail), item, bc->item_size);
	} else {
		sb__channel_copy(bc_slot(bc, tail), item, bc->item_size);
	}
	/* release: a receiver that loads it (acquire, bc_recv_free) sees the
	 * slot written; lock holders read it under the lock. */
	atomic_store_explicit(bc_tail_atomic(bc), tail + 1, memory_order_release);
}

static inline void bc_publish(sb_broadcast *bc, const void *item)
{
	bc_publish_as(bc, item, !bc_backpressure(bc));
}

/*
 * Under the lock: wakes every waiting receive to read what was published.
 * May drop the lock (a batch that fills); returns with it held.
 */
static void bc_release_receivers(sb_broadcast *bc, sb_wake_batch *b)
{
	if (!sb_waitq_is_empty(&bc->q))
		sb_waitq_release_all(&bc->q, SB_WAITER_GRANTED, b);
}

/* ------------------------------------------------------------- senders */

static inline sb_broadcast_send *bc_sender(sb_waiter *w)
{
	return SB_CONTAINER_OF(w, sb_broadcast_send, waiter);
}

static void bc_complete_sender(sb_broadcast *bc, sb_waiter *w, size_t final, sb_wake_batch *b)
{
	sb_waiters_unlink(&bc->send_head, &bc->send_tail, w);
	sb_waiter_detach_unlinked(w, final, b);
}

/*
 * Under the lock (back-pressure): moves waiting senders' items into the
 * ring while there is room, oldest first, then wakes the receives waiting
 * for them.  May drop the lock on the way.
 */
static void bc_refill_from_senders(sb_broadcast *bc, sb_wake_batch *b)
{
	bool published = false;
	for (;;) {
		bc_make_room(bc, b);
		if (bc->send_head == NULL || !bc_has_room(bc))
			break;
		sb_waiter *w = bc->send_head;
		bc_publish(bc, bc_sender(w)->item);
		bc_complete_sender(bc, w, SB_WAITER_GRANTED, b);
		published = true;
	}
	if (published)
		bc_release_receivers(bc, b);
}

/* Under the lock, open: sends one item now if it may (0), else -EAGAIN. */
static int bc_send_locked(sb_broadcast *bc, const void *item, sb_wake_batch *b)
{
	/* Nobody barges past waiting senders. */
	if (bc->send_head || !bc_has_room(bc))
		return -EAGAIN;
	bc_publish(bc, item);
	bc_release_receivers(bc, b);
	return 0;
}

/* ------------------------------------------------------------ receivers */

/*
 * Under the lock: rx's next item into `item` (0), or why not: -EOVERFLOW
 * (lagged; the cursor moved to the oldest item held), -EPIPE, -EAGAIN.  A
 * read of the slowest cursor lets waiting senders in.
 */
static int bc_recv_locked(sb_broadcast_receiver *rx, void *item, sb_wake_batch *b)
{
	sb_broadcast *bc = rx->bc;
	if (bc->tail - rx->cursor > bc->capacity) {
		/* Only a lagging ring overwrites a slot someone has not read. */
		uint64_t oldest = bc->tail - bc->capacity;
		rx->missed = oldest - rx->cursor;
		bc_set_cursor(rx, oldest);
		return -EOVERFLOW;
	}
	if (rx->cursor == bc->tail)
		return bc_is_closed_locked(bc) ? -EPIPE : -EAGAIN;
	sb__channel_copy(item, bc_slot(bc, rx->cursor), bc->item_size);
	bc_set_cursor(rx, rx->cursor + 1);
	if (bc->send_head && rx->cursor - 1 == bc->min)
		bc_refill_from_senders(bc, b);
	return 0;
}

static void subs_link(sb_broadcast *bc, sb_broadcast_receiver *rx)
{
	rx->prev = NULL;
	rx->next = bc->subs;
	if (bc->subs)
		bc->subs->prev = rx;
	bc->subs = rx;
}

static void subs_unlink(sb_broadcast *bc, sb_broadcast_receiver *rx)
{
	if (rx->prev)
		rx->prev->next = rx->next;
	else
		bc->subs = rx->next;
	if (rx->next)
		rx->next->prev = rx->prev;
	rx->next = rx->prev = NULL;
}

/* ------------------------------------------------------------- lifetime */

/* What storage must be aligned to: the largest power of two dividing the item size, at most 16. */
static size_t bc_alignment(size_t item_size)
{
	size_t a = item_size & (~item_size + 1);
	return a > 16 ? 16 : a;
}

int sb_broadcast_init(sb_broadcast *bc, void *storage, size_t item_size, size_t capacity,
		      int policy)
{
	if (item_size == 0 || capacity == 0)
		return -EINVAL;
	if (capacity > SIZE_MAX / item_size)
		return -EOVERFLOW;
	if (item_size > UINT32_MAX || capacity > SB_BROADCAST_MAX_CAPACITY)
		return -EINVAL;
	if (policy != SB_BROADCAST_LAGGING && policy != SB_BROADCAST_BACKPRESSURE)
		return -EINVAL;
	if (storage == NULL || (uintptr_t)storage % bc_alignment(item_size) != 0)
		return -EINVAL;
	*bc = (sb_broadcast)SB_BROADCAST_INIT(storage, (uint32_t)item_size, (uint32_t)capacity,
					      policy);
	return 0;
}

int sb_broadcast_destroy(sb_broadcast *bc)
{
	(void)sb_waitq_load(&bc->q); /* a destroyed broadcast trips its assertion */
	if (bc->q.head || bc->send_head || bc->subs)
		return -EBUSY;
	sb_waitq_poison(&bc->q);
	return 0;
}

void sb_broadcast_close(sb_broadcast *bc)
{
	/* acq_rel (sb_qlock_try_take with bits): CLOSED is read without the
	 * lock (is_closed), so it is published by this CAS, not by the unlock. */
	sb_waitq_lock(&bc->q, SB_BROADCAST_STATE_CLOSED);
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	for (;;) {
		bc_make_room(bc, &batch);
		if (bc->send_head == NULL)
			break;
		bc_complete_sender(bc, bc->send_head, SB_WAITER_CLOSED, &batch);
	}
	/* Released, not failed: each receive drains what it has not read. */
	bc_release_receivers(bc, &batch);
	bc_unlock(bc);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

bool sb_broadcast_is_closed(const sb_broadcast *bc)
{
	/* acquire: pairs with close()'s lock-taking CAS (acq_rel); whoever sees
	 * the broadcast closed sees what the closer did before. */
	return atomic_load_explicit((_Atomic size_t *)&bc->q.state, memory_order_acquire) &
	       SB_BROADCAST_STATE_CLOSED;
}

size_t sb_broadcast_capacity(const sb_broadcast *bc)
{
	return bc->capacity; /* fixed at init */
}

size_t sb_broadcast_subscribers(const sb_broadcast *bc)
{
	sb_broadcast *b = (sb_broadcast *)bc; /* the lock only: nothing changes */
	bc_lock(b);
	size_t n = 0;
	for (const sb_broadcast_receiver *r = b->subs; r; r = r->next)
		n++;
	bc_unlock(b);
	return n;
}

int sb_broadcast_subscribe(sb_broadcast *bc, sb_broadcast_receiver *rx)
{
	if (rx->bc != NULL)
		return -EINVAL;
	if (bc_lock(bc) & SB_BROADCAST_STATE_CLOSED) {
		bc_unlock(bc);
		return -EPIPE;
	}
	bc_set_cursor(rx, bc->tail); /* >= min: min stays a lower bound */
	rx->missed = 0;
	rx->waiting = 0;
	/* Its owner's, read by its own receives (sb__broadcast_recv_word). */
	rx->ring = bc_inline_ring(bc) ? (uintptr_t)&bc->tail - (uintptr_t)&rx->cursor : 0;
	rx->mask = bc->capacity - 1;
	subs_link(bc, rx);
	rx->bc = bc;
	bc_unlock(bc);
	return 0;
}

int sb_broadcast_unsubscribe(sb_broadcast_receiver *rx)
{
	sb_broadcast *bc = rx->bc;
	if (bc == NULL)
		return -EINVAL;
	if (rx->waiting)
		return -EBUSY;
	bc_lock(bc);
	subs_unlink(bc, rx);
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	if (bc->send_head && rx->cursor == bc->min)
		bc_refill_from_senders(bc, &batch); /* it may have been the slowest */
	bc_unlock(bc);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
	rx->ring = 0;
	rx->bc = NULL;
	return 0;
}

uint64_t sb_broadcast_receiver_unread(const sb_broadcast_receiver *rx)
{
	sb_broadcast *bc = rx->bc;
	if (bc == NULL)
		return 0;
	bc_lock(bc);
	/* relaxed: a snapshot; its owner may move it without the lock (bc_recv_free). */
	uint64_t n = bc->tail - atomic_load_explicit(bc_cursor_atomic((sb_broadcast_receiver *)rx),
						      memory_order_relaxed);
	bc_unlock(bc);
	return n;
}

uint64_t sb_broadcast_receiver_missed(const sb_broadcast_receiver *rx)
{
	return rx->missed; /* written by the owner's own receives */
}

/* ------------------------------------------------------------ try_* */

/* Under the lock, open: try_send past its common case (back-pressure, receives waiting). */
static __attribute__((noinline)) int bc_try_send_locked(sb_broadcast *bc, const void *item)
{
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	int r = bc_send_locked(bc, item, &batch);
	bc_unlock(bc);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
	return r;
}

void sb_broadcast_unlock_slow(sb_broadcast *bc)
{
	bc_unlock(bc);
}

/* try_send past its inline case (broadcast.h): other sizes, back-pressure,
 * receives waiting, closed, the lock contended. */
int sb_broadcast_try_send_slow(sb_broadcast *bc, const void *item)
{
	if (item == NULL)
		return -EINVAL;
	size_t state = bc_lock(bc);
	if (state & SB_BROADCAST_STATE_CLOSED) {
		bc_unlock(bc);
		return -EPIPE;
	}
	/* The common case: lagging (a send always goes in), nobody to wake. */
	if (!(state & SB_BROADCAST_STATE_BACKPRESSURE) && sb_waitq_is_empty(&bc->q)) {
		bc_publish_as(bc, item, true);
		bc_unlock(bc);
		return 0;
	}
	return bc_try_send_locked(bc, item);
}

/* Under the lock, which it releases: the receive of try_recv's other cases
 * (a lag, nothing there, a read that lets waiting senders in).  Out of
 * line: its wake batch stays off the common case's stack. */
static __attribute__((noinline)) int bc_try_recv_locked(sb_broadcast_receiver *rx, void *item)
{
	sb_broadcast *bc = rx->bc;
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	int r = bc_recv_locked(rx, item, &batch);
	bc_unlock(bc);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
	return r;
}

/* try_recv past its inline case (broadcast.h): the other rings without
 * the lock, then with it. */
int sb_broadcast_try_recv_slow(sb_broadcast_receiver *rx, void *item)
{
	if (item == NULL || rx->bc == NULL)
		return -EINVAL;
	sb_broadcast *bc = rx->bc;
	if (rx->ring == 0 && bc_recv_free(rx, item) == 0)
		return 0;
	bc_lock(bc);
	/* The common case under the lock: the next item is there, not
	 * overwritten, and no sender waits to be let in by this read: nothing
	 * to wake. */
	uint64_t behind = bc->tail - rx->cursor;
	if (behind == 0 || behind > bc->capacity || bc->send_head)
		return bc_try_recv_locked(rx, item);
	sb__channel_copy(item, bc_slot(bc, rx->cursor), bc->item_size);
	bc_set_cursor(rx, rx->cursor + 1);
	bc_unlock(bc);
	return 0;
}

/* -------------------------------------------------------------- futures */

/* The cancel of a future that is not waiting: idle, done, or never initialised. */
static int bc_cancel_unqueued(int *status, const void *set_by_init)
{
	if (*status == SB_FUTURE_IDLE)
		*status = -ECANCELED;
	return sb_future_done_result(*status, set_by_init);
}

static int bc_send_first_poll(void *future, const sb_waker *w)
{
	sb_broadcast_send *f = future;
	sb_broadcast *bc = f->bc;
	if (f->item == NULL)
		return -EINVAL;
	sb_waker clone = SB_NO_WAKER;
	for (;;) {
		if (bc_lock(bc) & SB_BROADCAST_STATE_CLOSED) {
			bc_unlock(bc);
			sb_waker_drop_if(clone);
			return -EPIPE;
		}
		sb_wake_batch batch;
		sb_wake_batch_init(&batch);
		if (bc_send_locked(bc, f->item, &batch) == 0) {
			bc_unlock(bc);
			sb_waitq_after_unlock(&batch, clone);
			return 0;
		}
		/* Not sent: nothing was batched. */
		if (clone.vtable) {
			sb_waiters_push(&bc->send_head, &bc->send_tail, &f->waiter, BC_WAITING, clone);
			bc_unlock(bc);
			return SB_PENDING;
		}
		bc_unlock(bc);
		clone = sb_waker_clone(w); /* outside the lock: it may re-enter */
	}
}

/* A detached send's result: its item went into the ring, or close came first. */
static inline int bc_send_settle(size_t final)
{
	return final == SB_WAITER_GRANTED ? 0 : -EPIPE;
}

static int bc_send_repoll(void *future, const sb_waker *w)
{
	sb_broadcast_send *f = future;
	size_t r = sb_waitq_repoll(&f->bc->q, &f->waiter, w);
	return sb_waiter_is_detached(r) ? bc_send_settle(r) : SB_PENDING;
}

int sb_broadcast_send_poll(sb_broadcast_send *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->bc, f, w, bc_send_first_poll, bc_send_repoll);
}

int sb_broadcast_send_cancel(sb_broadcast_send *f)
{
	if (f->status != SB_PENDING)
		return bc_cancel_unqueued(&f->status, f->bc);
	sb_broadcast *bc = f->bc;
	size_t r = sb_waiter_load(&f->waiter);
	if (sb_waiter_is_detached(r))
		return f->status = bc_send_settle(r);
	bc_lock(bc);
	r = sb_waiter_remaining_locked(&f->waiter);
	sb_waker mine = SB_NO_WAKER;
	if (!sb_waiter_is_detached(r))
		mine = sb_waiters_unlink(&bc->send_head, &bc->send_tail, &f->waiter);
	bc_unlock(bc);
	sb_waker_drop_if(mine);
	return f->status = sb_waiter_is_detached(r) ? bc_send_settle(r) : -ECANCELED;
}

/*
 * A receive's attempt: reads rx's next item, or queues with a clone of `w`
 * (made outside the lock) and returns SB_PENDING.
 */
static int bc_recv_attempt(sb_broadcast_recv *f, const sb_waker *w)
{
	sb_broadcast_receiver *rx = f->rx;
	sb_broadcast *bc = rx->bc;
	if (bc_recv_free(rx, f->item) == 0) {
		rx->waiting = 0;
		return 0;
	}
	sb_waker clone = SB_NO_WAKER;
	for (;;) {
		bc_lock(bc);
		sb_wake_batch batch;
		sb_wake_batch_init(&batch);
		int r = bc_recv_locked(rx, f->item, &batch);
		if (r != -EAGAIN) {
			bc_unlock(bc);
			sb_waitq_after_unlock(&batch, clone);
			rx->waiting = 0;
			return r;
		}
		/* Nothing moved, so nothing was batched. */
		if (clone.vtable) {
			sb_waitq_push(&bc->q, &f->waiter, BC_WAITING, clone);
			bc_unlock(bc);
			rx->waiting = 1;
			return SB_PENDING;
		}
		bc_unlock(bc);
		clone = sb_waker_clone(w); /* outside the lock: it may re-enter */
	}
}

static int bc_recv_first_poll(void *future, const sb_waker *w)
{
	sb_broadcast_recv *f = future;
	if (f->item == NULL || f->rx == NULL || f->rx->bc == NULL)
		return -EINVAL;
	return bc_recv_attempt(f, w);
}

/* Still queued: SB_PENDING; released by a send or a close: read again. */
static int bc_recv_repoll(void *future, const sb_waker *w)
{
	sb_broadcast_recv *f = future;
	size_t r = sb_waitq_repoll(&f->rx->bc->q, &f->waiter, w);
	if (!sb_waiter_is_detached(r))
		return SB_PENDING;
	/* The release's wake consumed the clone: this attempt clones anew. */
	return bc_recv_attempt(f, w);
}

int sb_broadcast_recv_poll(sb_broadcast_recv *f, const sb_waker *w)
{
	return sb_wait_future_poll(&f->status, f->rx, f, w, bc_recv_first_poll, bc_recv_repoll);
}

int sb_broadcast_recv_cancel(sb_broadcast_recv *f)
{
	if (f->status != SB_PENDING)
		return bc_cancel_unqueued(&f->status, f->rx);
	/* Queued or released: nothing was read either way (a release only
	 * woke it), so the item stays the receiver's next. */
	(void)sb_waitq_cancel(&f->rx->bc->q, &f->waiter);
	f->rx->waiting = 0;
	return f->status = -ECANCELED;
}

static void bc_send_cancel_op(sb_broadcast_send *f)
{
	(void)sb_broadcast_send_cancel(f);
}

static void bc_recv_cancel_op(sb_broadcast_recv *f)
{
	(void)sb_broadcast_recv_cancel(f);
}

SB_FUTURE_OPS(sb_broadcast_send_ops, sb_broadcast_send, sb_broadcast_send_poll,
	      bc_send_cancel_op);
SB_FUTURE_OPS(sb_broadcast_recv_ops, sb_broadcast_recv, sb_broadcast_recv_poll,
	      bc_recv_cancel_op);

/* ------------------------------------------------------------- blocking */

/* What sb_park_retry_before_wait retries. */
typedef struct bc_try_send_args {
	sb_broadcast *bc;
	const void *item;
} bc_try_send_args;

static int bc_try_send_op(void *arg)
{
	bc_try_send_args *a = arg;
	return sb_broadcast_try_send(a->bc, a->item);
}

int sb_broadcast_send_blocking(sb_broadcast *bc, const void *item, uint64_t timeout_ns)
{
	int r = sb_broadcast_try_send(bc, item); /* skips the parker when it goes at once */
	if (r != -EAGAIN)
		return r;
	/* Back-pressure (only it says -EAGAIN): a few yields and retries before
	 * queueing, as the channel's.  The receivers run meanwhile and free
	 * slots; a sender that queued instead would be woken - a futex wake and
	 * a context switch - for every slot the slowest receiver frees
	 * (docs/design.md). */
	r = sb_park_retry_before_wait(bc_try_send_op, &(bc_try_send_args){ bc, item }, &timeout_ns,
				      0); /* no looks: measured for the channel only */
	if (r != -EAGAIN)
		return r;
	sb_broadcast_send f;
	sb_broadcast_send_init(&f, bc, item);
	r = sb_park_block_on(&f, &sb_broadcast_send_ops, timeout_ns);
	/* A wait that ran out of time reports a completion its cancel found
	 * (f.status read after the wait). */
	return r == -ETIMEDOUT && f.status == 0 ? 0 : r;
}

/* What sb_park_retry_before_wait retries. */
typedef struct bc_try_recv_args {
	sb_broadcast_receiver *rx;
	void *item;
} bc_try_recv_args;

static int bc_try_recv_op(void *arg)
{
	bc_try_recv_args *a = arg;
	return sb_broadcast_try_recv(a->rx, a->item);
}

int sb_broadcast_recv_blocking(sb_broadcast_receiver *rx, void *item, uint64_t timeout_ns)
{
	int r = sb_broadcast_try_recv(rx, item); /* as in the send */
	if (r != -EAGAIN)
		return r;
	/* A few yields and retries before queueing, as the channel's: with more
	 * threads than cores the sender runs meanwhile, and a receiver that
	 * finds the next item without queueing costs the sender no wake (one
	 * futex wake per waiting receiver per item otherwise; docs/design.md). */
	r = sb_park_retry_before_wait(bc_try_recv_op, &(bc_try_recv_args){ rx, item }, &timeout_ns,
				      0); /* no looks: measured for the channel only */
	if (r != -EAGAIN)
		return r;
	sb_broadcast_recv f;
	sb_broadcast_recv_init(&f, rx, item);
	return sb_park_block_on(&f, &sb_broadcast_recv_ops, timeout_ns);
}
