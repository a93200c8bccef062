/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/channel.h>

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "futex.h"
#include "park.h"
#include "select_claim.h"
#include "wait_future.h"

/*
 * One lock, a ring and two FIFOs of waiters (Go's hchan, in the caller's
 * memory).  The lock is the queue lock of the state word (src/lock.h); it
 * guards the ring (head, len), the receivers' queue (ch->q) and the
 * senders' list (send_head/send_tail), and CLOSED is set only by the CAS
 * that takes it (close), so a lock holder's view of it stays true.
 *
 * Under the lock, two invariants make every decision local:
 *   - receivers wait only while the ring is empty and no sender waits;
 *   - senders wait only while the ring is full (at capacity 0: always) and
 *     no receiver waits.
 * So a sender that finds a receiver waiting copies its item straight into
 * that receiver's memory and detaches it (no trip through a slot), and a
 * receive takes the oldest item - from the ring, or at capacity 0 straight
 * from the oldest waiting sender - and then moves waiting senders' items
 * into the slots it freed, oldest first, detaching each.  Items from one
 * sender thus stay in order, each side is served first come first served,
 * and every item wakes exactly one waiter (no herd).
 *
 * A waiter's node says what happened to it (src/waitq.h): CH_WAITING while
 * linked; SB_WAITER_GRANTED once its operation happened (a receive's items
 * are in its memory, `count` says how many; a send's item was copied out);
 * SB_WAITER_CLOSED when close() completed it first.  The granter copies
 * under the lock and only then publishes the final value with release order,
 * so the owner that reads it (acquire) sees the items, and never touches
 * the node or its memory again.  That is what makes cancel exact: a cancel
 * that finds its node detached GRANTED reports the operation done (0), one
 * that finds it linked unlinks it and nothing happened (-ECANCELED).
 *
 * Wakes are collected in a batch and run after unlocking; a batch that
 * fills (close, a batch send, a receive refilling from many senders) is
 * flushed by unlocking, so a holder re-reads everything afterwards.
 *
 * A case of a select (src/select_claim.h) waits with its case's address in
 * `remaining` instead of CH_WAITING.  Before it moves an item into or out
 * of such a waiter, a holder must win the select's claim word
 * (ch_claim_front).  One that loses detaches the waiter SB_WAITER_RETRY -
 * nothing happened to it, and its wake makes the select poll again, where
 * the future starts over with a first poll - and goes on to the next
 * waiter.  A waiter of the holder's own select (its first poll runs inside
 * that select's poll) is passed over: a select's cases never meet.  Close
 * needs no claim: a case that completes with -EPIPE took no effect.
 */

/* A linked waiter's `remaining`: one operation owed. */
#define CH_WAITING 1

static inline size_t ch_item_size(const sb_channel *ch)
{
	return ch->item_size;
}

/* Whether the channel is a stamped ring (sb_channel_init_ring); fixed at init. */
static inline bool ch_is_ring(const sb_channel *ch)
{
	return ch->capacity & SB__CHANNEL_RING_MODE;
}

static inline uint32_t ch_capacity(const sb_channel *ch)
{
	return ch->capacity & ~SB__CHANNEL_RING_MODE;
}

/* The address of ring slot `slot`. */
static inline unsigned char *ch_slot(const sb_channel *ch, uint32_t slot)
{
	return (unsigned char *)ch->slots + (size_t)slot * ch_item_size(ch);
}

/* The slot `i` places after the oldest item (i <= capacity). */
static inline uint32_t ch_slot_after_head(const sb_channel *ch, uint32_t i)
{
	uint32_t slot = ch->head + i; /* both below 2^30: no wrap */
	return slot >= ch->capacity ? slot - ch->capacity : slot;
}

/*
 * A stamped ring under the lock.  Every lock holder freezes both ring words
 * (ch_ring_freeze): the inline paths' CASes expect no flags, so they fail
 * and take the lock instead, and the holder alone moves head and tail until
 * ch_ring_thaw stores them back with the flags that say who waits.  An
 * inline operation that claimed a slot before the freeze may still be
 * copying: the holder waits for that slot's stamp (ch_ring_await), a wait
 * as short as one item's copy.
 */
/* The stamped ring's helpers are out of line: the lock's channel, which
 * does not use them, keeps its locked paths as short as before. */
static __attribute__((noinline)) void ch_ring_freeze(sb_channel *ch)
{
	/* relaxed: RMWs, so that no inline CAS claims a slot unseen; the
	 * slots themselves are ordered by their stamps (ch_ring_await). */
	atomic_fetch_or_explicit(sb__channel_ring_tail(ch), SB__CHANNEL_RING_FROZEN,
				 memory_order_relaxed);
	/* relaxed: as the tail's. */
	atomic_fetch_or_explicit(sb__channel_ring_head(ch), SB__CHANNEL_RING_FROZEN,
				 memory_order_relaxed);
}

static inline bool ch_is_closed_locked(const sb_channel *ch);

/* Under the lock: the ring's words back, with the flags that say who waits. */
static __attribute__((noinline)) void ch_ring_thaw(sb_channel *ch)
{
	uint64_t senders = ch->send_head ? SB__CHANNEL_RING_SENDERS : 0;
	uint64_t tail_flags = senders | (ch->q.head ? SB__CHANNEL_RING_RECEIVERS : 0) |
			      (ch_is_closed_locked(ch) ? SB__CHANNEL_RING_CLOSED : 0);
	sb__channel_word *head = sb__channel_ring_head(ch), *tail = sb__channel_ring_tail(ch);
	/* relaxed (both loads and stores): the holder's own words while
	 * frozen; the inline paths take nothing from them but the position
	 * their CAS confirms, and the slots are ordered by their stamps. */
	uint64_t t = atomic_load_explicit(tail, memory_order_relaxed);
	uint64_t h = atomic_load_explicit(head, memory_order_relaxed);
	atomic_store_explicit(tail, (t & ~SB__CHANNEL_RING_FLAGS) | tail_flags,
			      memory_order_relaxed);
	atomic_store_explicit(head, (h & ~SB__CHANNEL_RING_FLAGS) | senders,
			      memory_order_relaxed);
}

/* Under the lock: waits until slot `slot`'s stamp is `want` (an inline operation finishing its copy). */
static void ch_ring_await(sb_channel *ch, uint32_t slot, uint64_t want)
{
	sb__channel_word *stamp = sb__channel_ring_stamp(ch, slot);
	for (unsigned spins = 0;; spins++) {
		/* acquire: the item copied in, or out, before the stamp's
		 * release store (ring push and pop, inline or here). */
		uint64_t s = atomic_load_explicit(stamp, memory_order_acquire);
		if (s == want)
			return;
#ifdef SB_MODEL_CHECK
		/* The explorer runs the copying thread until the stamp changes
		 * (twice a lap, below 2^29: all in its low half). */
		sb_model_futex_wait(sb_futex_low_half((_Atomic size_t *)(void *)stamp),
				    (uint32_t)s);
#else
		if (spins < 64)
			sb_cpu_relax();
		else
			sched_yield();
#endif
	}
}

/* Under the lock (frozen): items in a stamped ring, claimed ones included. */
static __attribute__((noinline)) uint32_t ch_ring_len(const sb_channel *ch)
{
	/* relaxed: the holder's own words while frozen. */
	uint64_t h = atomic_load_explicit(sb__channel_ring_head(ch), memory_order_relaxed);
	/* relaxed: as the head's. */
	uint64_t t = atomic_load_explicit(sb__channel_ring_tail(ch), memory_order_relaxed);
	uint32_t hi = sb__channel_ring_index(h), ti = sb__channel_ring_index(t);
	if ((h & SB__CHANNEL_RING_LAP_BITS) == (t & SB__CHANNEL_RING_LAP_BITS))
		return ti - hi;
	return ch_capacity(ch) - hi + ti;
}

/*
 * The inline paths' one attempt, retried without the lock while the ring
 * word moved (another operation won the CAS, or the guess was stale): 0,
 * -EAGAIN, or SB_PENDING when the lock must decide (flags set, nothing
 * moved: a spurious CAS failure, or an operation still copying).
 */
static int ch_ring_retry(sb_channel *ch, void *item, bool send)
{
	sb__channel_word *word = send ? sb__channel_ring_tail(ch) : sb__channel_ring_head(ch);
	/* relaxed: only whether the word moved; the attempt re-reads it. */
	uint64_t seen = atomic_load_explicit(word, memory_order_relaxed);
	for (;;) {
		int r = send ? sb__channel_ring_push(ch, ch->capacity, item)
			     : sb__channel_ring_pop(ch, ch->capacity, item);
		if (r != SB_PENDING)
			return r;
		/* relaxed: as above. */
		uint64_t now = atomic_load_explicit(word, memory_order_relaxed);
		if ((now & SB__CHANNEL_RING_FLAGS) || now == seen)
			return SB_PENDING;
		seen = now;
	}
}

/*
 * The locked paths take `ring` (ch_is_ring) as an argument: the hot ones
 * are compiled once per kind with it constant (ch_send_poll_k), so that the
 * lock's channel runs none of the stamped ring's tests.
 */

/* Under the lock: items in the ring. */
static inline uint32_t ch_len(const sb_channel *ch, bool ring)
{
	return ring ? ch_ring_len(ch) : ch->len;
}

/* The capacity, as ch_capacity. */
static inline uint32_t ch_cap(const sb_channel *ch, bool ring)
{
	return ring ? ch->capacity & ~SB__CHANNEL_RING_MODE : ch->capacity;
}

/* The n-th item of an array of them. */
static inline const unsigned char *ch_item_at(const sb_channel *ch, const void *items, size_t n)
{
	return (const unsigned char *)items + n * ch_item_size(ch);
}

static inline unsigned char *ch_item_at_mut(const sb_channel *ch, void *items, size_t n)
{
	return (unsigned char *)items + n * ch_item_size(ch);
}

/* Takes the lock; returns whether the channel is closed (stable until unlock). */
static inline bool ch_lock(sb_channel *ch, bool ring)
{
	bool closed = sb_waitq_lock(&ch->q, 0) & SB_CHANNEL_STATE_CLOSED;
	if (ring)
		ch_ring_freeze(ch);
	return closed;
}

/* Under the lock (CLOSED changes only when the lock is taken). */
static inline bool ch_is_closed_locked(const sb_channel *ch)
{
	return sb_waitq_load(&ch->q) & SB_CHANNEL_STATE_CLOSED;
}

/* Unlocks, recomputing both waiting bits (NONEMPTY: receivers; SENDERS). */
static inline void ch_unlock(sb_channel *ch, bool ring)
{
	if (ring)
		ch_ring_thaw(ch);
	sb_waitq_unlock_update(&ch->q, SB_CHANNEL_STATE_SENDERS,
			       ch->send_head ? SB_CHANNEL_STATE_SENDERS : 0);
}

void sb_channel_unlock_slow(sb_channel *ch)
{
	ch_unlock(ch, ch_is_ring(ch));
}

/*
 * Under the lock: a full batch is run with the lock dropped.  The plain
 * unlock of sb_waitq_flush leaves SENDERS as the last ch_unlock set it,
 * which errs only towards set (senders only leave the list meanwhile): the
 * inline paths then merely take the slow one.
 */
static inline void ch_flush(sb_channel *ch, sb_wake_batch *b, bool ring)
{
	/* The ring stays frozen meanwhile (its inline paths take the lock);
	 * a holder in between thaws it, so it is frozen again. */
	sb_waitq_flush(&ch->q, b);
	if (ring)
		ch_ring_freeze(ch);
}

static inline void ch_make_room(sb_channel *ch, sb_wake_batch *b, bool ring)
{
	if (sb_wake_batch_is_full(b))
		ch_flush(ch, b, ring);
}

/* ------------------------------------------------------------ the ring */

static __attribute__((noinline)) void ring_push_stamped(sb_channel *ch, const void *item);
static __attribute__((noinline)) void ring_pop_stamped(sb_channel *ch, void *item);

static void ring_push(sb_channel *ch, const void *item, bool ring)
{
	assert(ch_len(ch, ring) < ch_cap(ch, ring));
	if (ring) {
		ring_push_stamped(ch, item);
		return;
	}
	sb__channel_copy(ch_slot(ch, ch_slot_after_head(ch, ch->len)), item, ch->item_size);
	ch->len++;
}

static void ring_pop(sb_channel *ch, void *item, bool ring)
{
	assert(ch_len(ch, ring) > 0);
	if (ring) {
		ring_pop_stamped(ch, item);
		return;
	}
	sb__channel_copy(item, ch_slot(ch, ch->head), ch->item_size);
	ch->head = ch_slot_after_head(ch, 1);
	ch->len--;
}

/* A stamped ring's push and pop under the lock (frozen). */
static void ring_push_stamped(sb_channel *ch, const void *item)
{
	sb__channel_word *tail = sb__channel_ring_tail(ch);
	/* relaxed: the holder's own word while frozen. */
	uint64_t t = atomic_load_explicit(tail, memory_order_relaxed);
	uint32_t i = sb__channel_ring_index(t);
	uint64_t free_stamp = sb__channel_ring_free(t & ~SB__CHANNEL_RING_FLAGS);
	ch_ring_await(ch, i, free_stamp); /* a receive copying the slot's last item out */
	sb__channel_word *stamp = sb__channel_ring_stamp(ch, i);
	sb__channel_ring_put(ch, stamp, item);
	/* release: the item to its receiver (pairs with every receive's
	 * acquire load of the stamp). */
	atomic_store_explicit(stamp, free_stamp | 1, memory_order_release);
	uint64_t pos = t & ~SB__CHANNEL_RING_FLAGS;
	/* relaxed: the holder's own word while frozen. */
	atomic_store_explicit(tail,
			      sb__channel_ring_next(pos, ch->capacity) |
				      (t & SB__CHANNEL_RING_FLAGS),
			      memory_order_relaxed);
}

static void ring_pop_stamped(sb_channel *ch, void *item)
{
	sb__channel_word *head = sb__channel_ring_head(ch);
	/* relaxed: the holder's own word while frozen. */
	uint64_t h = atomic_load_explicit(head, memory_order_relaxed);
	uint32_t i = sb__channel_ring_index(h);
	uint64_t pos = h & ~SB__CHANNEL_RING_FLAGS;
	ch_ring_await(ch, i, sb__channel_ring_free(pos) | 1); /* a send copying its item in */
	sb__channel_word *stamp = sb__channel_ring_stamp(ch, i);
	sb__channel_ring_take(ch, stamp, item);
	/* release: the slot to its next send, after the copy out (pairs with
	 * every send's acquire load of the stamp). */
	atomic_store_explicit(stamp, sb__channel_ring_freed(pos), memory_order_release);
	/* relaxed: the holder's own word while frozen. */
	atomic_store_explicit(head,
			      sb__channel_ring_next(pos, ch->capacity) |
				      (h & SB__CHANNEL_RING_FLAGS),
			      memory_order_relaxed);
}

/* ---------------------------------------------------- handing items over */

/* The value a waiter waits with: CH_WAITING, or its select case's address. */
static inline size_t ch_waiting_value(const sb_waker *w)
{
	sb_select_case *c = sb_select_case_of(w);
	return c ? (size_t)(uintptr_t)c : CH_WAITING;
}

/* ch_claim_front: a loser was sent back; make room and look again. */
static sb_waiter ch_again_node;
#define CH_AGAIN (&ch_again_node)

/*
 * Under the lock, `b` not full: the oldest waiter on the list at
 * `head`/`tail` that may be served now; NULL when there is none.  A select
 * case must win its claim first: one that loses is detached
 * SB_WAITER_RETRY into `b` (CH_AGAIN: the caller makes room and asks
 * again); one of `self` (the select the holder's operation polls for) is
 * passed over and stays.
 */
static sb_waiter *ch_claim_walk(sb_waiter **head, sb_waiter **tail, const sb_select *self,
				sb_wake_batch *b)
{
	for (sb_waiter *w = *head; w; w = w->next) {
		size_t r = sb_waiter_remaining_locked(w);
		if (r == CH_WAITING)
			return w;
		switch (sb_select_claim((sb_select_case *)(uintptr_t)r, self)) {
		case SB_SELECT_CLAIM_WON:
			return w;
		case SB_SELECT_CLAIM_SELF:
			continue;
		case SB_SELECT_CLAIM_LOST:
			sb_waiters_unlink(head, tail, w);
			sb_waiter_detach_unlinked(w, SB_WAITER_RETRY, b);
			return CH_AGAIN;
		}
	}
	return NULL;
}

/*
 * ch_claim_walk, with the common cases inline: nobody waits, or the oldest
 * waiter is no select's case and is served without a claim.  Sets *w to
 * the waiter (or NULL); false when a loser was sent back (CH_AGAIN), which
 * only the walk does, so the inline cases test nothing more.
 */
static inline bool ch_claim_front(sb_waiter **head, sb_waiter **tail, const sb_select *self,
				  sb_wake_batch *b, sb_waiter **w)
{
	*w = *head;
	if (*w == NULL || sb_waiter_remaining_locked(*w) == CH_WAITING)
		return true;
	*w = ch_claim_walk(head, tail, self, b);
	return *w != CH_AGAIN;
}

static inline sb_channel_send *ch_sender(sb_waiter *w)
{
	return SB_CONTAINER_OF(w, sb_channel_send, waiter);
}

static inline sb_channel_recv *ch_receiver(sb_waiter *w)
{
	return SB_CONTAINER_OF(w, sb_channel_recv, waiter);
}

/* Under the lock: the oldest waiting sender's item was copied out. */
static void ch_complete_sender(sb_channel *ch, sb_waiter *w, size_t final, sb_wake_batch *b)
{
	sb_waiters_unlink(&ch->send_head, &ch->send_tail, w);
	sb_waiter_detach_unlinked(w, final, b);
}

/*
 * Under the lock, `b` not full: hands up to `n` items to the waiting
 * receiver `w` (claimed), which completes with them; returns how many it took.
 */
static size_t ch_hand_to_receiver(sb_channel *ch, sb_waiter *w, const void *items, size_t n,
				  sb_wake_batch *b)
{
	sb_channel_recv *r = ch_receiver(w);
	size_t k = n < r->count ? n : r->count;
	if (k == 1)
		sb__channel_copy(r->items, items, ch->item_size);
	else
		memcpy(r->items, items, k * ch_item_size(ch));
	r->count = (uint32_t)k;
	/* The detach's release store hands the receiver its items. */
	sb_waitq_detach(&ch->q, w, SB_WAITER_GRANTED, b);
	return k;
}

/* Under the lock: moves waiting senders' items into free slots, oldest first. */
static void ch_refill_from_senders(sb_channel *ch, const sb_select *self, sb_wake_batch *b,
				   bool ring)
{
	for (;;) {
		ch_make_room(ch, b, ring);
		if (ch_len(ch, ring) == ch_cap(ch, ring))
			return;
		sb_waiter *w;
		if (!ch_claim_front(&ch->send_head, &ch->send_tail, self, b, &w))
			continue;
		if (w == NULL)
			return;
		ring_push(ch, ch_sender(w)->item, ring);
		ch_complete_sender(ch, w, SB_WAITER_GRANTED, b);
	}
}

/*
 * Under the lock: sends up to `n` items without waiting - to waiting
 * receivers, then into the ring - and returns how many.  A flush that lets a
 * close in ends the batch there.
 */
static inline __attribute__((always_inline)) size_t
ch_send_locked_k(sb_channel *ch, const void *items, size_t n, const sb_select *self,
		 sb_wake_batch *b, bool ring)
{
	size_t sent = 0;
	while (sent < n) {
		if (sb_wake_batch_is_full(b)) {
			ch_flush(ch, b, ring);
			if (ch_is_closed_locked(ch))
				return sent;
			continue;
		}
		sb_waiter *w;
		if (!ch_claim_front(&ch->q.head, &ch->q.tail, self, b, &w))
			continue;
		if (w == NULL)
			break;
		sent += ch_hand_to_receiver(ch, w, ch_item_at(ch, items, sent), n - sent, b);
	}
	while (sent < n && ch_len(ch, ring) < ch_cap(ch, ring)) {
		ring_push(ch, ch_item_at(ch, items, sent), ring);
		sent++;
	}
	return sent;
}

/* ch_send_locked_k once per kind (ch_send_poll_k). */
static __attribute__((noinline)) size_t ch_send_locked_lock(sb_channel *ch, const void *items,
							     size_t n, const sb_select *self,
							     sb_wake_batch *b)
{
	return ch_send_locked_k(ch, items, n, self, b, false);
}

static __attribute__((noinline)) size_t ch_send_locked_ring(sb_channel *ch, const void *items,
							     size_t n, const sb_select *self,
							     sb_wake_batch *b)
{
	return ch_send_locked_k(ch, items, n, self, b, true);
}

static inline size_t ch_send_locked(sb_channel *ch, const void *items, size_t n,
				    const sb_select *self, sb_wake_batch *b, bool ring)
{
	return ring ? ch_send_locked_ring(ch, items, n, self, b)
		    : ch_send_locked_lock(ch, items, n, self, b);
}

/*
 * ch_send_locked of one item, with the common cases inline: nobody waits
 * (the ring, if it has room), or the oldest receiver is no select's case.
 */
static inline size_t ch_send_one_locked(sb_channel *ch, const void *item,
					const sb_select *self, sb_wake_batch *b, bool ring)
{
	sb_waiter *w = ch->q.head;
	if (w == NULL) {
		if (ch_len(ch, ring) == ch_cap(ch, ring))
			return 0;
		ring_push(ch, item, ring);
		return 1;
	}
	if (sb_wake_batch_is_full(b) || sb_waiter_remaining_locked(w) != CH_WAITING)
		return ch_send_locked(ch, item, 1, self, b, ring);
	/* One item: every waiting receive takes at least one. */
	sb_channel_recv *r = ch_receiver(w);
	sb__channel_copy(r->items, item, ch->item_size);
	r->count = 1;
	/* The detach's release store hands the receiver its item. */
	sb_waitq_detach(&ch->q, w, SB_WAITER_GRANTED, b);
	return 1;
}

/*
 * Under the lock: receives up to `n` of the oldest items into `items` - from
 * the ring, or (the ring empty) straight from waiting senders - then refills
 * the ring from the senders still waiting.  Returns how many.
 */
static inline __attribute__((always_inline)) size_t
ch_recv_locked_k(sb_channel *ch, void *items, size_t n, const sb_select *self, sb_wake_batch *b,
		 bool ring)
{
	size_t got = 0;
	while (got < n) {
		if (ch_len(ch, ring) > 0) {
			ring_pop(ch, ch_item_at_mut(ch, items, got++), ring);
			continue;
		}
		ch_make_room(ch, b, ring);
		if (ch_len(ch, ring) > 0)
			continue; /* the flush let a sender in */
		sb_waiter *w;
		if (!ch_claim_front(&ch->send_head, &ch->send_tail, self, b, &w))
			continue;
		if (w == NULL)
			break;
		sb__channel_copy(ch_item_at_mut(ch, items, got++), ch_sender(w)->item, ch->item_size);
		ch_complete_sender(ch, w, SB_WAITER_GRANTED, b);
	}
	if (ch->send_head)
		ch_refill_from_senders(ch, self, b, ring);
	return got;
}

/* ch_recv_locked_k once per kind, as the send's. */
static __attribute__((noinline)) size_t ch_recv_locked_lock(sb_channel *ch, void *items, size_t n,
							     const sb_select *self,
							     sb_wake_batch *b)
{
	return ch_recv_locked_k(ch, items, n, self, b, false);
}

static __attribute__((noinline)) size_t ch_recv_locked_ring(sb_channel *ch, void *items, size_t n,
							     const sb_select *self,
							     sb_wake_batch *b)
{
	return ch_recv_locked_k(ch, items, n, self, b, true);
}

static inline size_t ch_recv_locked(sb_channel *ch, void *items, size_t n, const sb_select *self,
				    sb_wake_batch *b, bool ring)
{
	return ring ? ch_recv_locked_ring(ch, items, n, self, b)
		    : ch_recv_locked_lock(ch, items, n, self, b);
}

/*
 * ch_recv_locked of one item, with the common case inline: no sender waits,
 * so there is no sender to take it from nor to refill the ring from.
 */
static inline size_t ch_recv_one_locked(sb_channel *ch, void *item, const sb_select *self,
					sb_wake_batch *b, bool ring)
{
	if (ch->send_head)
		return ch_recv_locked(ch, item, 1, self, b, ring);
	if (ch_len(ch, ring) == 0)
		return 0;
	ring_pop(ch, item, ring);
	return 1;
}

/* ------------------------------------------------------------- lifetime */

/* What storage must be aligned to: the largest power of two dividing the item size, at most 16. */
static size_t ch_alignment(size_t item_size)
{
	size_t a = item_size & (~item_size + 1);
	return a > 16 ? 16 : a;
}

/* sb_channel_init's checks; `ring`: a stamped ring's storage. */
static int ch_check_init(const void *storage, size_t item_size, size_t capacity, bool ring)
{
	if (item_size == 0)
		return -EINVAL;
	if (capacity > SIZE_MAX / item_size)
		return -EOVERFLOW;
	if (item_size > UINT32_MAX || capacity > SB_CHANNEL_MAX_CAPACITY)
		return -EINVAL;
	if (ring && capacity > 0 &&
	    (item_size > SIZE_MAX - 32 ||
	     capacity > (SIZE_MAX - 128) / SB__CHANNEL_RING_STRIDE(item_size)))
		return -EOVERFLOW;
	if (capacity > 0 && storage == NULL)
		return -EINVAL;
	size_t align = ch_alignment(item_size);
	if (ring && capacity > 0 && align < 8)
		align = 8;
	if ((uintptr_t)storage % align != 0)
		return -EINVAL;
	return 0;
}

int sb_channel_init(sb_channel *ch, void *storage, size_t item_size, size_t capacity)
{
	int r = ch_check_init(storage, item_size, capacity, false);
	if (r == 0)
		*ch = (sb_channel)SB_CHANNEL_INIT(storage, (uint32_t)item_size, (uint32_t)capacity);
	return r;
}

int sb_channel_init_ring(sb_channel *ch, void *storage, size_t item_size, size_t capacity)
{
	int r = ch_check_init(storage, item_size, capacity, true);
	if (r != 0)
		return r;
	if (capacity > 0) /* zero is an empty ring */
		memset(storage, 0, SB_CHANNEL_RING_STORAGE_SIZE(item_size, capacity));
	*ch = (sb_channel)SB_CHANNEL_RING_INIT(storage, (uint32_t)item_size, (uint32_t)capacity);
	return 0;
}

int sb_channel_destroy(sb_channel *ch)
{
	(void)sb_waitq_load(&ch->q); /* a destroyed channel trips its assertion */
	if (ch->q.head || ch->send_head)
		return -EBUSY;
	sb_waitq_poison(&ch->q);
	return 0;
}

void sb_channel_close(sb_channel *ch)
{
	bool ring = ch_is_ring(ch);
	if (ring) {
		/* The ring frozen first: whoever sees CLOSED below finds its
		 * inline paths shut until the thaw adds CLOSED to the tail. */
		ch_lock(ch, ring);
		/* release: CLOSED is read without the lock (is_closed), so it is
		 * published here (pairs with is_closed's acquire), after the freeze. */
		atomic_fetch_or_explicit(&ch->q.state, SB_CHANNEL_STATE_CLOSED,
					 memory_order_release);
	} else {
		/* acq_rel (sb_qlock_try_take with bits): CLOSED is read without
		 * the lock (is_closed), so it is published by this CAS, not by
		 * the unlock. */
		sb_waitq_lock(&ch->q, SB_CHANNEL_STATE_CLOSED);
	}
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	for (;;) {
		ch_make_room(ch, &batch, ring);
		if (ch->send_head)
			ch_complete_sender(ch, ch->send_head, SB_WAITER_CLOSED, &batch);
		else if (!sb_waitq_detach_front(&ch->q, SB_WAITER_CLOSED, &batch))
			break;
	}
	ch_unlock(ch, ring);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
}

bool sb_channel_is_closed(const sb_channel *ch)
{
	/* acquire: pairs with close()'s lock-taking CAS (acq_rel); whoever sees
	 * the channel closed sees what the closer did before. */
	return atomic_load_explicit((_Atomic size_t *)&ch->q.state, memory_order_acquire) &
	       SB_CHANNEL_STATE_CLOSED;
}

size_t sb_channel_len(const sb_channel *ch)
{
	sb_channel *c = (sb_channel *)ch; /* the lock only: nothing changes */
	bool ring = ch_is_ring(c);
	ch_lock(c, ring);
	size_t len = ch_len(c, ring);
	ch_unlock(c, ring);
	return len;
}

size_t sb_channel_capacity(const sb_channel *ch)
{
	return ch_capacity(ch); /* fixed at init */
}

/* ------------------------------------------------------------ try_* */

int sb_channel_try_send_many(sb_channel *ch, const void *items, size_t n)
{
	if (items == NULL || n > INT_MAX)
		return -EINVAL;
	if (n == 0)
		return 0;
	bool ring = ch_is_ring(ch);
	if (ch_lock(ch, ring)) {
		ch_unlock(ch, ring);
		return -EPIPE;
	}
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	size_t sent = ch_send_locked(ch, items, n, NULL, &batch, ring);
	bool closed = ch_is_closed_locked(ch); /* a flush may have let a close in */
	ch_unlock(ch, ring);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
	if (sent)
		return (int)sent;
	return closed ? -EPIPE : -EAGAIN;
}

int sb_channel_try_send_slow(sb_channel *ch, const void *item)
{
	if (item && ch_is_ring(ch)) {
		int r = ch_ring_retry(ch, (void *)item, true);
		if (r != SB_PENDING)
			return r;
	}
	int r = sb_channel_try_send_many(ch, item, 1);
	return r > 0 ? 0 : r;
}

int sb_channel_force_send(sb_channel *ch, const void *item, void *evicted)
{
	if (item == NULL || evicted == NULL)
		return -EINVAL;
	bool ring = ch_is_ring(ch);
	if (ch_lock(ch, ring)) {
		ch_unlock(ch, ring);
		return -EPIPE;
	}
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	int r = 0;
	if (ch_send_locked(ch, item, 1, NULL, &batch, ring) == 0) {
		if (ch_is_closed_locked(ch)) {
			r = -EPIPE; /* a flush let a close in */
		} else if (ch_cap(ch, ring) == 0) {
			r = -EAGAIN; /* nothing held, nothing to evict */
		} else {
			ring_pop(ch, evicted, ring);
			ring_push(ch, item, ring);
			r = 1;
		}
	}
	ch_unlock(ch, ring);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
	return r;
}

int sb_channel_try_recv_many(sb_channel *ch, void *items, size_t n)
{
	if (items == NULL || n == 0 || n > INT_MAX)
		return -EINVAL;
	bool ring = ch_is_ring(ch);
	ch_lock(ch, ring);
	sb_wake_batch batch;
	sb_wake_batch_init(&batch);
	size_t got = ch_recv_locked(ch, items, n, NULL, &batch, ring);
	bool closed = ch_is_closed_locked(ch); /* after: a flush may have let a close in */
	ch_unlock(ch, ring);
	sb_waitq_after_unlock(&batch, SB_NO_WAKER);
	if (got)
		return (int)got;
	return closed ? -EPIPE : -EAGAIN;
}

int sb_channel_try_recv_slow(sb_channel *ch, void *item)
{
	if (item && ch_is_ring(ch)) {
		int r = ch_ring_retry(ch, item, false);
		if (r != SB_PENDING)
			return r;
	}
	int r = sb_channel_try_recv_many(ch, item, 1);
	return r > 0 ? 0 : r;
}

/* -------------------------------------------------------------- futures */

/*
 * A detached waiter's result: its operation happened, close came first, or
 * a select's claim sent it back (RETRY: nothing happened).
 */
static inline int ch_settle(size_t final)
{
	if (final == SB_WAITER_RETRY)
		return -ECANCELED;
	return final == SB_WAITER_GRANTED ? 0 : -EPIPE;
}

/*
 * A re-poll of either future: settled, still waiting, re-registered, or -
 * sent back by a select's claim - SB_FUTURE_IDLE: the caller starts over
 * with a first poll.
 */
static int ch_repoll(sb_channel *ch, sb_waiter *w, const sb_waker *waker)
{
	size_t r = sb_waitq_repoll(&ch->q, w, waker);
	if (r == SB_WAITER_RETRY)
		return SB_FUTURE_IDLE;
	return sb_waiter_is_detached(r) ? ch_settle(r) : SB_PENDING;
}

/*
 * The owner's cancel of a waiter on the list at `head`/`tail`: unlinks it if
 * it is still linked (nothing happened: -ECANCELED), else returns what it
 * was detached with.
 */
static int ch_cancel_waiter(sb_channel *ch, sb_waiter *w, sb_waiter **head, sb_waiter **tail)
{
	size_t r = sb_waiter_load(w);
	if (sb_waiter_is_detached(r))
		return ch_settle(r);
	bool ring = ch_is_ring(ch);
	ch_lock(ch, ring);
	r = sb_waiter_remaining_locked(w);
	sb_waker mine = SB_NO_WAKER;
	if (!sb_waiter_is_detached(r))
		mine = sb_waiters_unlink(head, tail, w);
	ch_unlock(ch, ring);
	sb_waker_drop_if(mine);
	return sb_waiter_is_detached(r) ? ch_settle(r) : -ECANCELED;
}

/* The cancel of a future that is not waiting: idle, done, or never initialised. */
static int ch_cancel_unqueued(int *status, const sb_channel *ch)
{
	if (*status == SB_FUTURE_IDLE)
		*status = -ECANCELED;
	return sb_future_done_result(*status, ch);
}

/*
 * The clone a slow first poll makes before it takes the lock.  When the
 * word shows the lock free, the channel open and nobody waiting on the
 * other side (`other`), the inline path before it has just found the ring
 * full (a send) or empty (a receive): the future will most likely wait, and
 * cloning first saves a second round of the lock (a select's case that is
 * not ready pays it in every round).  A guess: a clone it turns out not to
 * need is dropped after the unlock.  `kind`: the lock's copy's test of a
 * stamped ring's bit (ch_other_kind), folded into this one.
 */
static inline bool ch_wait_likely(size_t state, size_t other, size_t kind)
{
	return !(state & (SB_QLOCK_HELD | SB_CHANNEL_STATE_CLOSED | other | kind));
}

/*
 * The bit of the word that sends the lock's copy of a first poll (!ring) to
 * the stamped ring's: the lock's slow polls serve both kinds and find a
 * ring in the word they read anyway.
 */
static inline size_t ch_other_kind(bool ring)
{
	return ring ? 0 : SB__CHANNEL_STATE_RING;
}

static int ch_ring_send_first_poll_retrying(void *future, const sb_waker *w);
static int ch_ring_recv_first_poll_retrying(void *future, const sb_waker *w);
static int ch_ring_send_poll_slow(sb_channel_send *f, const sb_waker *w);
static int ch_ring_recv_poll_slow(sb_channel_recv *f, const sb_waker *w);

/*
 * Done, or queued with a clone of `w`: the lock decides, the clone is made
 * outside it.  Inlined into the slow poll (as is the receive's: the slow
 * polls are flattened): a first poll that hands over or waits is every round
 * of two tasks that take turns.  Not always_inline: called through the
 * skeleton's function pointer, gcc refuses that at -O1 (a parent project's
 * flags), where flatten inlines what it can.
 */
static inline int ch_send_first_poll_k(void *future, const sb_waker *w, bool ring)
{
	sb_channel_send *f = future;
	sb_channel *ch = f->channel;
	if (f->item == NULL)
		return -EINVAL;
	const sb_select *self = sb_select_of(w);
	size_t state = sb_waitq_load(&ch->q);
	sb_waker clone = SB_NO_WAKER;
	if (ch_wait_likely(state, SB_WAITQ_NONEMPTY, ch_other_kind(ring)))
		clone = sb_waker_clone(w);
	else if (state & ch_other_kind(ring))
		return ch_ring_send_first_poll_retrying(f, w);
	for (;;) {
		if (ch_lock(ch, ring)) {
			ch_unlock(ch, ring);
			sb_waker_drop_if(clone);
			return -EPIPE;
		}
		sb_wake_batch batch;
		sb_wake_batch_init(&batch);
		if (ch_send_one_locked(ch, f->item, self, &batch, ring) == 1) {
			ch_unlock(ch, ring);
			sb_waitq_after_unlock(&batch, clone);
			return 0;
		}
		/* A flush in ch_send_locked may have let a close in. */
		if (clone.vtable && !ch_is_closed_locked(ch)) {
			sb_waiters_push(&ch->send_head, &ch->send_tail, &f->waiter,
					ch_waiting_value(w), clone);
			ch_unlock(ch, ring);
			sb_waitq_after_unlock(&batch, SB_NO_WAKER);
			return SB_PENDING;
		}
		ch_unlock(ch, ring);
		sb_waitq_after_unlock(&batch, SB_NO_WAKER); /* waiters a claim sent back */
		if (!clone.vtable)
			clone = sb_waker_clone(w); /* outside the lock: it may re-enter */
	}
}

/* The first poll of each kind, for the skeleton's function pointer. */
static int ch_send_first_poll(void *future, const sb_waker *w)
{
	return ch_send_first_poll_k(future, w, false);
}

static int ch_ring_send_first_poll(void *future, const sb_waker *w)
{
	return ch_send_first_poll_k(future, w, true);
}

/* The lock's first poll met a stamped ring: the ring's, after a try without the lock
 * (flatten: the ring's first poll inline here, as the lock's is in its slow poll). */
static __attribute__((noinline, flatten)) int ch_ring_send_first_poll_retrying(void *future,
								      const sb_waker *w)
{
	sb_channel_send *f = future;
	if (ch_ring_retry(f->channel, (void *)f->item, true) == 0) /* item checked */
		return 0;
	return ch_ring_send_first_poll(f, w);
}

static inline int ch_send_repoll_k(void *future, const sb_waker *w, bool ring)
{
	sb_channel_send *f = future;
	int r = ch_repoll(f->channel, &f->waiter, w);
	return r == SB_FUTURE_IDLE ? ch_send_first_poll_k(f, w, ring) : r;
}

static int ch_send_repoll(void *future, const sb_waker *w)
{
	return ch_send_repoll_k(future, w, false);
}

static int ch_ring_send_repoll(void *future, const sb_waker *w)
{
	return ch_send_repoll_k(future, w, true);
}

/*
 * A select's first look (sb_select_probing): the inline path just found the
 * ring full or empty, and the word says nobody waits on the other side, so
 * the operation cannot happen now - answer SB_PENDING without waiting.  A
 * word that says otherwise (the lock held, the channel closed, waiters)
 * gets a first poll, which may wait.
 */
#define CH_PROBE_NOT_NOW 1
#define CH_PROBE_RING 2 /* the lock's copy met a stamped ring: the ring's own probes it */

/* CH_PROBE_NOT_NOW, CH_PROBE_RING, or 0: a first poll. */
static int ch_probe(const sb_channel *ch, size_t other, const sb_waker *w, bool ring)
{
	if (!sb_select_probing(w))
		return 0;
	size_t state = sb_waitq_load(&ch->q);
	if (state & ch_other_kind(ring))
		return CH_PROBE_RING;
	return state & (SB_QLOCK_HELD | SB_CHANNEL_STATE_CLOSED | other) ? 0 : CH_PROBE_NOT_NOW;
}

static inline int ch_send_poll_k(sb_channel_send *f, const sb_waker *w, bool ring)
{
	/* A stamped ring's first poll tries the ring here, without the lock
	 * (the inline poll leaves it out); the look below then knows it full. */
	if (ring && f->status == SB_FUTURE_IDLE && f->item &&
	    ch_ring_retry(f->channel, (void *)f->item, true) == 0) {
		f->status = 0;
		return 0;
	}
	if (f->status == SB_FUTURE_IDLE && f->item) {
		int p = ch_probe(f->channel, SB_WAITQ_NONEMPTY, w, ring);
		if (p == CH_PROBE_NOT_NOW)
			return SB_PENDING; /* left unpolled */
		if (p == CH_PROBE_RING)
			return ch_ring_send_poll_slow(f, w);
	}
	return sb_wait_future_poll(&f->status, f->channel, f, w,
				   ring ? ch_ring_send_first_poll : ch_send_first_poll,
				   ring ? ch_ring_send_repoll : ch_send_repoll);
}

/*
 * A stamped ring's slow poll: its own copy, so the lock's runs none of its
 * tests.  The lock's serves every poll and hands a ring's first poll and
 * select probe over where it reads the word anyway.
 */
static __attribute__((noinline, flatten)) int ch_ring_send_poll_slow(sb_channel_send *f,
								     const sb_waker *w)
{
	return ch_send_poll_k(f, w, true);
}

/* flatten: the first poll and the skeleton inline here (ch_send_first_poll). */
__attribute__((flatten)) int sb_channel_send_poll_slow(sb_channel_send *f, const sb_waker *w)
{
	return ch_send_poll_k(f, w, false);
}

int sb_channel_send_cancel(sb_channel_send *f)
{
	if (f->status != SB_PENDING)
		return ch_cancel_unqueued(&f->status, f->channel);
	sb_channel *ch = f->channel;
	return f->status = ch_cancel_waiter(ch, &f->waiter, &ch->send_head, &ch->send_tail);
}

static inline int ch_recv_first_poll_k(void *future, const sb_waker *w, bool ring)
{
	sb_channel_recv *f = future;
	sb_channel *ch = f->channel;
	if (f->items == NULL || f->count == 0)
		return -EINVAL;
	const sb_select *self = sb_select_of(w);
	size_t state = sb_waitq_load(&ch->q);
	sb_waker clone = SB_NO_WAKER;
	/* Only a receive of one item tried the inline path. */
	if (f->count == 1 && ch_wait_likely(state, SB_CHANNEL_STATE_SENDERS, ch_other_kind(ring)))
		clone = sb_waker_clone(w);
	else if (state & ch_other_kind(ring))
		return ch_ring_recv_first_poll_retrying(f, w);
	for (;;) {
		ch_lock(ch, ring);
		sb_wake_batch batch;
		sb_wake_batch_init(&batch);
		size_t got = f->count == 1
				     ? ch_recv_one_locked(ch, f->items, self, &batch, ring)
				     : ch_recv_locked(ch, f->items, f->count, self, &batch, ring);
		/* Read after: a flush in ch_recv_locked may have let a close in. */
		bool closed = ch_is_closed_locked(ch);
		if (got > 0 || closed) {
			ch_unlock(ch, ring);
			sb_waitq_after_unlock(&batch, clone);
			f->count = (uint32_t)got;
			return got > 0 ? 0 : -EPIPE;
		}
		/* Only waiters a claim sent back may be in the batch. */
		if (clone.vtable) {
			sb_waitq_push(&ch->q, &f->waiter, ch_waiting_value(w), clone);
			ch_unlock(ch, ring);
			sb_waitq_after_unlock(&batch, SB_NO_WAKER);
			return SB_PENDING;
		}
		ch_unlock(ch, ring);
		sb_waitq_after_unlock(&batch, SB_NO_WAKER);
		clone = sb_waker_clone(w); /* outside the lock: it may re-enter */
	}
}

static int ch_recv_first_poll(void *future, const sb_waker *w)
{
	return ch_recv_first_poll_k(future, w, false);
}

static int ch_ring_recv_first_poll(void *future, const sb_waker *w)
{
	return ch_recv_first_poll_k(future, w, true);
}

/* As the send's (only a receive of one item tries without the lock). */
static __attribute__((noinline, flatten)) int ch_ring_recv_first_poll_retrying(void *future,
								      const sb_waker *w)
{
	sb_channel_recv *f = future;
	if (f->count == 1 && ch_ring_retry(f->channel, f->items, false) == 0) /* items checked */
		return 0;
	return ch_ring_recv_first_poll(f, w);
}

static inline int ch_recv_repoll_k(void *future, const sb_waker *w, bool ring)
{
	sb_channel_recv *f = future;
	int r = ch_repoll(f->channel, &f->waiter, w);
	return r == SB_FUTURE_IDLE ? ch_recv_first_poll_k(f, w, ring) : r;
}

static int ch_recv_repoll(void *future, const sb_waker *w)
{
	return ch_recv_repoll_k(future, w, false);
}

static int ch_ring_recv_repoll(void *future, const sb_waker *w)
{
	return ch_recv_repoll_k(future, w, true);
}

/*
 * The probe of a receive never polled (only a receive of one item tried the
 * inline path).  Out of line: it reads f->count, which a sender writes once
 * the future is registered, so it must run only after status said IDLE; a
 * compiler that inlined it could merge that read with status's into one
 * wider load, which ThreadSanitizer reports as racing with that write.
 */
/* Whether an idle receive is of one item (out of line: f->count, as below). */
static __attribute__((noinline)) bool ch_recv_one_of_ring(const sb_channel_recv *f)
{
	return f->count == 1 && f->items;
}

static __attribute__((noinline)) int ch_recv_probe(const sb_channel_recv *f, const sb_waker *w,
						   bool ring)
{
	return f->count == 1 && f->items ? ch_probe(f->channel, SB_CHANNEL_STATE_SENDERS, w, ring)
					 : 0;
}

static inline int ch_recv_poll_k(sb_channel_recv *f, const sb_waker *w, bool ring)
{
	/* As the send's, for a receive of one item. */
	if (ring && f->status == SB_FUTURE_IDLE && ch_recv_one_of_ring(f) &&
	    ch_ring_retry(f->channel, f->items, false) == 0) {
		f->status = 0;
		return 0;
	}
	/* sb_select_probing first: a poll of no select's makes no call. */
	if (f->status == SB_FUTURE_IDLE && sb_select_probing(w)) {
		int p = ch_recv_probe(f, w, ring);
		if (p == CH_PROBE_NOT_NOW)
			return SB_PENDING; /* left unpolled */
		if (p == CH_PROBE_RING)
			return ch_ring_recv_poll_slow(f, w);
	}
	return sb_wait_future_poll(&f->status, f->channel, f, w,
				   ring ? ch_ring_recv_first_poll : ch_recv_first_poll,
				   ring ? ch_ring_recv_repoll : ch_recv_repoll);
}

/* As the send's. */
static __attribute__((noinline, flatten)) int ch_ring_recv_poll_slow(sb_channel_recv *f,
								     const sb_waker *w)
{
	return ch_recv_poll_k(f, w, true);
}

/* flatten: as the send's. */
__attribute__((flatten)) int sb_channel_recv_poll_slow(sb_channel_recv *f, const sb_waker *w)
{
	return ch_recv_poll_k(f, w, false);
}

int sb_channel_recv_cancel(sb_channel_recv *f)
{
	if (f->status != SB_PENDING)
		return ch_cancel_unqueued(&f->status, f->channel);
	return f->status = ch_cancel_waiter(f->channel, &f->waiter, &f->channel->q.head,
					    &f->channel->q.tail);
}

size_t sb_channel_recv_count(const sb_channel_recv *f)
{
	return f->status == 0 && f->channel ? f->count : 0;
}

static void ch_send_cancel_op(sb_channel_send *f)
{
	(void)sb_channel_send_cancel(f);
}

static void ch_recv_cancel_op(sb_channel_recv *f)
{
	(void)sb_channel_recv_cancel(f);
}

SB_FUTURE_OPS(sb_channel_send_ops, sb_channel_send, sb_channel_send_poll, ch_send_cancel_op);
SB_FUTURE_OPS(sb_channel_recv_ops, sb_channel_recv, sb_channel_recv_poll, ch_recv_cancel_op);

/* ------------------------------------------------------------- blocking */

/* A wait that ran out of time reports a completion its cancel found. */
static int ch_blocking_result(int r, int status)
{
	return r == -ETIMEDOUT && status == 0 ? 0 : r;
}

/* What sb_park_retry_before_wait retries. */
typedef struct ch_try_args {
	sb_channel *ch;
	void *item;
} ch_try_args;

static int ch_try_send_op(void *arg)
{
	ch_try_args *a = arg;
	return sb_channel_try_send(a->ch, a->item);
}

static int ch_try_recv_op(void *arg)
{
	ch_try_args *a = arg;
	return sb_channel_try_recv(a->ch, a->item);
}

/*
 * The looks, a few pauses apart, that a blocking send or receive on a small
 * channel makes before its yields (sb_park_retry_before_wait's spin_steps),
 * and the largest capacity that makes them.  With a few slots nothing
 * batches: nearly every item is a hand-over, which the other side makes
 * within a microsecond or so, while each yield costs a system call.  With
 * more, a thread that yields comes back to a run of free slots (or items)
 * and moves them without a hand-over each, where one that looks again
 * within a pause moves one.  (Looks that find nothing make the thread skip
 * them for a while: park.h.)  Both numbers are measured, not derived
 * (spsc-cap-1 from 1.3 x crossbeam to 1.1 x; at capacity 8 one sender
 * and one receiver already slower with the looks): docs/design.md
 * ("Retrying before waiting").
 * None on a rendezvous (no slot; its send does not retry at all).
 */
#define CH_SPIN_STEPS 48u
#define CH_SPIN_MAX_CAPACITY 4u

static unsigned ch_retry_spin_steps(const sb_channel *ch)
{
	uint32_t cap = ch_capacity(ch); /* fixed at init */
	return cap >= 1 && cap <= CH_SPIN_MAX_CAPACITY ? CH_SPIN_STEPS : 0;
}

int sb_channel_send_blocking(sb_channel *ch, const void *item, uint64_t timeout_ns)
{
	/* The future's first poll would decide the same way; this skips the
	 * parker when the item goes at once. */
	int r = sb_channel_try_send(ch, item);
	if (r != -EAGAIN)
		return r;
	/* A few retries (pauses, then yields) before queueing: a slot often frees
	 * meanwhile, and a sender that waits without queueing costs the
	 * receivers no handoff nor wake (docs/design.md).  Not on a
	 * rendezvous: its item moves only to a receiver that finds it queued
	 * (a retrying receiver), so there it queues at once. */
	if (ch_capacity(ch) > 0) { /* fixed at init */
		r = sb_park_retry_before_wait(ch_try_send_op,
					      &(ch_try_args){ ch, (void *)item }, &timeout_ns,
					      ch_retry_spin_steps(ch));
		if (r != -EAGAIN)
			return r;
	}
	sb_channel_send f;
	sb_channel_send_init(&f, ch, item);
	r = sb_park_block_on(&f, &sb_channel_send_ops, timeout_ns);
	return ch_blocking_result(r, f.status); /* f.status read after the wait */
}

int sb_channel_recv_blocking(sb_channel *ch, void *item, uint64_t timeout_ns)
{
	int r = sb_channel_try_recv(ch, item); /* as in the send */
	if (r != -EAGAIN)
		return r;
	r = sb_park_retry_before_wait(ch_try_recv_op, &(ch_try_args){ ch, item }, &timeout_ns,
				       ch_retry_spin_steps(ch));
	if (r != -EAGAIN)
		return r;
	sb_channel_recv f;
	sb_channel_recv_init(&f, ch, item);
	r = sb_park_block_on(&f, &sb_channel_recv_ops, timeout_ns);
	return ch_blocking_result(r, f.status); /* f.status read after the wait */
}
