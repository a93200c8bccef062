/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The torture of the channel: every contender sends and receives, through
 * every entry point (blocking, try_*, try_*_many, force_send, futures, some
 * cancelled, some under deadlines).  Every ~50 ms the controller opens a
 * fresh channel for newcomers (capacity 0, 1 and 4 in turn, every other
 * round of three a stamped ring: sb_channel_init_ring) and closes the
 * current one; once nobody is left in a closed channel it drains what is
 * left and checks that the round conserved its items: as many received (or
 * evicted by force_send, or drained) as sent, the same checksum sum.  Every
 * receive checks the item (not torn, sent by a contender) and that each
 * sender's items reach each receiver in the order sent.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "torture.h"

enum { CH_MAX_CAPACITY = 4 };
static const size_t ch_capacities[] = { 0, 1, CH_MAX_CAPACITY };

static struct {
	sb_channel ch;
	_Alignas(64) unsigned char storage[SB_CHANNEL_RING_STORAGE_SIZE(sizeof(torture_item),
									CH_MAX_CAPACITY)];
	atomic_long sent, received;
	atomic_ullong sent_sum, received_sum;
} chans[TORTURE_SLOTS];
static torture_slots ch_slots;
static atomic_long ch_rounds, ch_sent, ch_received, ch_evicted, ch_drained, ch_epipe;
static unsigned ch_ticks;

enum { ROLE_SEND, ROLE_RECV };

static uint64_t item_check(uint32_t sender, uint32_t seq)
{
	uint64_t x = ((uint64_t)sender << 32 | seq) * 0x9e3779b97f4a7c15u;
	return x ^ (x >> 29) ^ 0x5bd1e9955bd1e995u;
}

static void ch_open(int i, size_t capacity, bool ring)
{
	void *storage = capacity ? chans[i].storage : NULL;
	int r = ring ? sb_channel_init_ring(&chans[i].ch, storage, sizeof(torture_item), capacity)
		     : sb_channel_init(&chans[i].ch, storage, sizeof(torture_item), capacity);
	if (r != 0)
		VIOLATION(NULL, "channel init: %d", r);
	atomic_store(&chans[i].sent, 0);
	atomic_store(&chans[i].received, 0);
	atomic_store(&chans[i].sent_sum, 0);
	atomic_store(&chans[i].received_sum, 0);
}

static void ch_setup(void)
{
	memset(&ch_slots, 0, sizeof ch_slots);
	for (int i = 0; i < TORTURE_SLOTS; i++)
		ch_open(i, ch_capacities[i], false);
	atomic_store(&ch_rounds, 0);
	atomic_store(&ch_sent, 0);
	atomic_store(&ch_received, 0);
	atomic_store(&ch_evicted, 0);
	atomic_store(&ch_drained, 0);
	atomic_store(&ch_epipe, 0);
	ch_ticks = 0;
}

/* The contender's next `n` items (not sent yet: only a send that takes them
 * advances its sequence). */
static void ch_make(torture_contender *c, torture_item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t seq = c->send_seq + (uint32_t)i;
		items[i] = (torture_item){ (uint32_t)c->id, seq, item_check((uint32_t)c->id, seq) };
	}
}

static void ch_sent_items(torture_contender *c, const torture_item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (items[i].seq != c->send_seq)
			VIOLATION(c, "sent seq %u, expected %u", items[i].seq, c->send_seq);
		c->send_seq++;
		atomic_fetch_add(&chans[c->slot].sent_sum, items[i].check);
	}
	atomic_fetch_add(&chans[c->slot].sent, (long)n);
	atomic_fetch_add(&ch_sent, (long)n);
}

static void ch_valid(const torture_contender *c, const torture_item *it)
{
	if ((int)it->sender >= torture_ncontenders || it->check != item_check(it->sender, it->seq))
		VIOLATION(c, "a torn or unknown item (sender %u, seq %u, check %llx)", it->sender,
			  it->seq, (unsigned long long)it->check);
}

/* Items taken out of slot i's channel other than by a receive: no order. */
static void ch_removed(const torture_contender *c, int i, const torture_item *it)
{
	ch_valid(c, it);
	atomic_fetch_add(&chans[i].received, 1);
	atomic_fetch_add(&chans[i].received_sum, it->check);
}

static void ch_received_items(torture_contender *c, const torture_item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const torture_item *it = &items[i];
		ch_valid(c, it);
		if ((int64_t)it->seq <= c->last_seq[it->sender])
			VIOLATION(c, "sender %u's item %u received after its item %lld", it->sender,
				  it->seq, (long long)c->last_seq[it->sender]);
		c->last_seq[it->sender] = it->seq;
		atomic_fetch_add(&chans[c->slot].received_sum, it->check);
	}
	atomic_fetch_add(&chans[c->slot].received, (long)n);
	atomic_fetch_add(&ch_received, (long)n);
}

/* An operation that did not move items: why. */
static void ch_failed(torture_contender *c, int r)
{
	if (r == -EPIPE)
		atomic_fetch_add(&ch_epipe, 1);
	else if (r != -ETIMEDOUT && r != -ECANCELED && r != -EAGAIN)
		VIOLATION(c, "%s: %d", c->kind == ROLE_SEND ? "send" : "receive", r);
}

static void ch_blocking(torture_contender *c, uint64_t to)
{
	c->slot = torture_slot_enter(&ch_slots);
	sb_channel *ch = &chans[c->slot].ch;
	c->kind = torture_rand(&c->seed) % 2 ? ROLE_SEND : ROLE_RECV;
	int r;
	if (c->kind == ROLE_SEND) {
		ch_make(c, &c->item, 1);
		r = sb_channel_send_blocking(ch, &c->item, to);
		if (r == 0)
			ch_sent_items(c, &c->item, 1);
	} else {
		r = sb_channel_recv_blocking(ch, &c->items[0], to);
		if (r == 0)
			ch_received_items(c, c->items, 1);
	}
	if (r == 0)
		torture_op(c);
	else if (r == -ETIMEDOUT)
		torture_timeout(c);
	if (r != 0)
		ch_failed(c, r);
	torture_slot_leave(&ch_slots, c->slot);
}

/* The operations that never wait. */
static void ch_immediate(torture_contender *c)
{
	sb_channel *ch = &chans[c->slot].ch;
	unsigned op = torture_rand(&c->seed) % 3;
	size_t n = 1 + torture_rand(&c->seed) % TORTURE_MAX_BATCH;
	int r;
	if (c->kind == ROLE_SEND) {
		if (op == 0) {
			ch_make(c, c->items, 1);
			r = sb_channel_try_send(ch, &c->items[0]);
			if (r == 0)
				r = 1;
		} else if (op == 1) {
			ch_make(c, c->items, n);
			r = sb_channel_try_send_many(ch, c->items, n);
			if (r == 0 || r > (int)n)
				VIOLATION(c, "try_send_many of %zu: %d", n, r);
		} else {
			torture_item evicted;
			ch_make(c, c->items, 1);
			r = sb_channel_force_send(ch, &c->items[0], &evicted);
			if (r == 1) {
				ch_removed(c, c->slot, &evicted);
				atomic_fetch_add(&ch_evicted, 1);
			}
			if (r >= 0)
				r = 1;
		}
		if (r > 0) {
			ch_sent_items(c, c->items, (size_t)r);
			torture_op(c);
		} else {
			ch_failed(c, r);
		}
		return;
	}
	if (op == 0) {
		r = sb_channel_try_recv(ch, &c->items[0]);
		if (r == 0)
			r = 1;
	} else {
		r = sb_channel_try_recv_many(ch, c->items, n);
		if (r == 0 || r > (int)n)
			VIOLATION(c, "try_recv_many of %zu: %d", n, r);
	}
	if (r > 0) {
		ch_received_items(c, c->items, (size_t)r);
		torture_op(c);
	} else {
		ch_failed(c, r);
	}
}

static int ch_begin(torture_contender *c)
{
	c->slot = torture_slot_enter(&ch_slots);
	sb_channel *ch = &chans[c->slot].ch;
	c->kind = torture_rand(&c->seed) % 2 ? ROLE_SEND : ROLE_RECV;
	if (torture_rand(&c->seed) % 4 == 0) {
		ch_immediate(c);
		torture_slot_leave(&ch_slots, c->slot);
		return 1;
	}
	if (c->kind == ROLE_SEND) {
		ch_make(c, &c->item, 1);
		sb_channel_send_init(&c->f.send, ch, &c->item);
		c->fut = &c->f.send;
		c->fops = &sb_channel_send_ops;
	} else {
		c->n = 1 + torture_rand(&c->seed) % TORTURE_MAX_BATCH;
		sb_channel_recv_many_init(&c->f.recv, ch, c->items, c->n);
		c->fut = &c->f.recv;
		c->fops = &sb_channel_recv_ops;
	}
	return 0;
}

static int ch_done(torture_contender *c, int r)
{
	if (r == 0) {
		if (c->kind == ROLE_SEND) {
			ch_sent_items(c, &c->item, 1);
		} else {
			size_t got = sb_channel_recv_count(&c->f.recv);
			if (got < 1 || got > c->n)
				VIOLATION(c, "a receive of up to %zu took %zu", c->n, got);
			ch_received_items(c, c->items, got);
		}
		torture_op(c);
	} else {
		ch_failed(c, r);
	}
	torture_slot_leave(&ch_slots, c->slot);
	return T_DONE;
}

static void ch_no_release(torture_contender *c)
{
	VIOLATION(c, "released without a hold");
}

/* A channel nobody is in any more: closed, drained, and its round's items
 * conserved. */
static void ch_retire(int i)
{
	sb_channel_close(&chans[i].ch);
	torture_item it;
	int r;
	while ((r = sb_channel_try_recv(&chans[i].ch, &it)) == 0) {
		ch_removed(NULL, i, &it);
		atomic_fetch_add(&ch_drained, 1);
	}
	if (r != -EPIPE)
		VIOLATION(NULL, "a closed channel's try_recv: %d, not -EPIPE", r);
	long sent = atomic_load(&chans[i].sent), received = atomic_load(&chans[i].received);
	unsigned long long ss = atomic_load(&chans[i].sent_sum),
			   rs = atomic_load(&chans[i].received_sum);
	if (sent != received || ss != rs)
		VIOLATION(NULL, "a round of capacity %zu lost or doubled items: %ld sent, %ld "
			  "received, evicted or left (checksums %llx, %llx)",
			  sb_channel_capacity(&chans[i].ch), sent, received, ss, rs);
	r = sb_channel_destroy(&chans[i].ch);
	if (r != 0)
		VIOLATION(NULL, "destroy of a drained channel: %d", r);
}

/* Every 50 ms: a fresh channel for newcomers; the current one closed. */
static void ch_tick(void)
{
	if (++ch_ticks % 50)
		return;
	int next = torture_slot_next_free(&ch_slots);
	if (next < 0)
		return;
	ch_retire(next);
	long round = atomic_fetch_add(&ch_rounds, 1) + 1;
	ch_open(next, ch_capacities[(size_t)round % 3], round / 3 % 2 == 1);
	int old = atomic_load(&ch_slots.cur);
	atomic_store(&ch_slots.cur, next);
	sb_channel_close(&chans[old].ch);
}

static void ch_stop_tick(void)
{
	sb_channel_close(&chans[atomic_load(&ch_slots.cur)].ch);
}

static void ch_teardown(void)
{
	for (int i = 0; i < TORTURE_SLOTS; i++) {
		if (atomic_load(&ch_slots.users[i]) != 0)
			VIOLATION(NULL, "a channel still has users after the run");
		ch_retire(i);
	}
}

static void ch_describe(char *buf, size_t size)
{
	snprintf(buf, size, "rounds %ld, items sent %ld, received %ld, evicted %ld, drained %ld, "
		 "-EPIPE %ld", atomic_load(&ch_rounds), atomic_load(&ch_sent),
		 atomic_load(&ch_received), atomic_load(&ch_evicted), atomic_load(&ch_drained),
		 atomic_load(&ch_epipe));
}

const torture_prim torture_channel = {
	"channel", ch_setup, ch_blocking, ch_begin, ch_done, ch_no_release,
	ch_tick, ch_stop_tick, ch_teardown, ch_describe, 950,
};
