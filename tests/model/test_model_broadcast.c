/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of syncband/broadcast.h (sched.c, README.md in
 * this folder): a send overwriting the slot a lagging receiver reads (ints,
 * and wide items copied unit by unit without the lock), a receive without
 * the lock racing a send's publication (ints, and the inline 8-byte
 * receive), a subscribe racing sends, an unsubscribe racing a
 * back-pressured sender's re-poll or cancel, and close racing waiting sends and receives, each
 * explored over every schedule within the bounds, then over random ones,
 * under sequential consistency and under the weak (release/acquire) model.
 *
 * Items are ints: item i has the value i + 1 while its sender owns it, and
 * 0 once its send settled (the sender reuses the memory).  Item memory (the
 * senders' items, the ring, the receivers' buffers) is watched as in
 * test_model_channel.c: the library's copies (memcpy, wrapped at link time)
 * are reported as plain accesses, so under the weak model a receiver that
 * reads its buffer must happen-after the copy that filled it, and a copy out
 * of an item after its send settled delivers a 0, which the receiver
 * rejects.  Each check says which items each receiver got, in order, what
 * a lag told it, that every waker clone was woken or dropped, and that the
 * broadcast destroys.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/broadcast.h>

#include "sched.h"

#define COUNTING_WAKER_CLONED(c) MODEL_PLAIN_WRITE(c)
#define COUNTING_WAKER_USED(c) MODEL_PLAIN_READ(c)
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

enum { PREEMPTIONS = 4, LIMIT = 2000000, RANDOM_RUNS = 3000, SEED = 20261205 };
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum { NITEMS = 4, NRX = 2, NWAKERS = 3, MAXSEQ = 6 };

/* A wide item: up to WIDE bytes, each the item's value (a torn one shows). */
enum { WIDE = 16 };

typedef struct bc_mem {
	int item[NITEMS];
	int slots[2];
	int buf[NRX][MAXSEQ];
	unsigned char wide[2][WIDE];
	unsigned char wide_slot[WIDE] __attribute__((aligned(16)));
	unsigned char wide_buf[WIDE];
} bc_mem;

typedef struct bc_ctx {
	sb_broadcast bc;
	sb_broadcast_receiver rx[NRX];
	sb_broadcast_send s;
	sb_broadcast_recv r;
	counting_waker w[NWAKERS];
	bc_mem mem;
	int sent[NITEMS];        /* 1: its send returned 0 */
	int seq[NRX][MAXSEQ];    /* what each receiver got, in order */
	int nseq[NRX];
	long missed[NRX];        /* what its lags counted */
	int res[3];
	bool closed;
	size_t wide_size; /* the wide scenarios' item size */
} bc_ctx;

static bc_mem *watched;

static bool is_watched(const void *p)
{
	const char *c = p, *lo = (const char *)watched;
	return watched && c >= lo && c < lo + sizeof *watched;
}

void *__real_memcpy(void *dst, const void *src, size_t n);
void *__wrap_memcpy(void *dst, const void *src, size_t n);
void *__wrap_memcpy(void *dst, const void *src, size_t n)
{
	for (size_t i = 0; i + sizeof(int) <= n; i += sizeof(int)) {
		if (is_watched((const char *)src + i))
			sb_model_plain_access((const char *)src + i, false);
		if (is_watched((char *)dst + i))
			sb_model_plain_access((char *)dst + i, true);
	}
	return __real_memcpy(dst, src, n);
}

static void put(bc_ctx *c, int i)
{
	c->mem.item[i] = i + 1;
	sb_model_plain_access(&c->mem.item[i], true);
}

/* Item i's send settled with r; the sender reuses its memory. */
static void settle(bc_ctx *c, int i, int r)
{
	c->sent[i] = r == 0;
	c->mem.item[i] = 0;
	sb_model_plain_access(&c->mem.item[i], true);
}

/* Receiver k's read result r: an item in its next buffer slot, or a lag. */
static void took(bc_ctx *c, int k, int r)
{
	if (r == -EOVERFLOW) {
		c->missed[k] += (long)sb_broadcast_receiver_missed(&c->rx[k]);
		return;
	}
	MODEL_CHECK(r == 0);
	const int *p = &c->mem.buf[k][c->nseq[k]];
	MODEL_PLAIN_READ(p);
	int v = *p;
	MODEL_CHECK(v >= 1 && v <= NITEMS); /* 0: copied after its sender reused it */
	MODEL_CHECK(c->nseq[k] < MAXSEQ);
	c->seq[k][c->nseq[k]++] = v - 1;
}

/* Receiver k tries once; returns the result (recorded). */
static int try_recv(bc_ctx *c, int k)
{
	MODEL_CHECK(c->nseq[k] < MAXSEQ);
	int r = sb_broadcast_try_recv(&c->rx[k], &c->mem.buf[k][c->nseq[k]]);
	if (r == 0 || r == -EOVERFLOW)
		took(c, k, r);
	return r;
}

static int wake_count(counting_waker *cw)
{
	return __atomic_load_n((int *)&cw->wakes, __ATOMIC_SEQ_CST);
}

static int poll_send(bc_ctx *c, int cw)
{
	sb_waker w = counting_waker_ref(&c->w[cw]);
	return sb_broadcast_send_poll(&c->s, &w);
}

static int poll_recv(bc_ctx *c, int cw)
{
	sb_waker w = counting_waker_ref(&c->w[cw]);
	return sb_broadcast_recv_poll(&c->r, &w);
}

/*
 * Polls until done, waiting for a wake after each pending poll; SB_PENDING
 * when nobody is left to wake it.  `wakes`: the count the caller knows of
 * (0 for a future that setup left pending: a wake that came before this
 * thread ran must still be awaited, which orders it before the next poll).
 */
static int drive_send(bc_ctx *c, int cw, int wakes)
{
	int r;
	while ((r = poll_send(c, cw)) == SB_PENDING) {
		if (!sb_model_await_change(&c->w[cw].wakes, wakes))
			return SB_PENDING;
		wakes = wake_count(&c->w[cw]);
	}
	return r;
}

static int drive_recv(bc_ctx *c, int cw, int wakes)
{
	int r;
	while ((r = poll_recv(c, cw)) == SB_PENDING) {
		if (!sb_model_await_change(&c->w[cw].wakes, wakes))
			return SB_PENDING;
		wakes = wake_count(&c->w[cw]);
	}
	return r;
}

/* ---------------------------------------------------------------- setup */

static void setup_bc(bc_ctx *c, size_t capacity, int policy)
{
	watched = &c->mem;
	MODEL_CHECK(sb_broadcast_init(&c->bc, c->mem.slots, sizeof(int), capacity, policy) == 0);
	for (int i = 0; i < NWAKERS; i++)
		counting_waker_init(&c->w[i]);
}

static void setup_subscribe(bc_ctx *c, int k)
{
	MODEL_CHECK(sb_broadcast_subscribe(&c->bc, &c->rx[k]) == 0);
}

static void setup_send(bc_ctx *c, int i)
{
	put(c, i);
	MODEL_CHECK(sb_broadcast_try_send(&c->bc, &c->mem.item[i]) == 0);
	settle(c, i, 0);
}

/* In setup: item i's send future waits, with waker cw. */
static void setup_waiting_send(bc_ctx *c, int i, int cw)
{
	put(c, i);
	sb_broadcast_send_init(&c->s, &c->bc, &c->mem.item[i]);
	MODEL_CHECK(poll_send(c, cw) == SB_PENDING);
}

/* In setup: receiver k's receive future waits, with waker cw. */
static void setup_waiting_recv(bc_ctx *c, int k, int cw)
{
	sb_broadcast_recv_init(&c->r, &c->rx[k], &c->mem.buf[k][c->nseq[k]]);
	MODEL_CHECK(poll_recv(c, cw) == SB_PENDING);
}

/* ---------------------------------------------------------------- check */

/*
 * Every subscribed receiver drains (each item in order, lags counted) to
 * -EAGAIN, or -EPIPE once closed; then: every receiver's items are distinct
 * and increasing; every clone was woken or dropped; everything unsubscribes
 * and the broadcast destroys.
 */
static void drain_and_finish(bc_ctx *c)
{
	for (int k = 0; k < NRX; k++) {
		if (c->rx[k].bc == NULL)
			continue;
		int r;
		while ((r = try_recv(c, k)) == 0 || r == -EOVERFLOW)
			;
		MODEL_CHECK(r == (c->closed ? -EPIPE : -EAGAIN));
		for (int a = 1; a < c->nseq[k]; a++)
			MODEL_CHECK(c->seq[k][a - 1] < c->seq[k][a]);
		MODEL_CHECK(sb_broadcast_unsubscribe(&c->rx[k]) == 0);
	}
	for (int i = 0; i < NWAKERS; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_broadcast_is_closed(&c->bc) == c->closed);
	MODEL_CHECK(sb_broadcast_destroy(&c->bc) == 0);
}

static void close_t(void *p)
{
	bc_ctx *c = p;
	sb_broadcast_close(&c->bc);
}

/* --- a send overwriting the slot a lagging receiver reads (capacity 1) --- */

/*
 * Receiver 0 subscribed, item 0 in the ring.  t0 sends item 1 (it never
 * waits, and overwrites item 0's slot); t1 reads once: item 0 (before the
 * overwrite) or a lag of one.  Either way receiver 0 ends with item 1, and
 * items got plus items missed are the two sent.
 */
static void lag_setup(void *p)
{
	bc_ctx *c = p;
	setup_bc(c, 1, SB_BROADCAST_LAGGING);
	setup_subscribe(c, 0);
	setup_send(c, 0);
}
static void lag_t0(void *p)
{
	bc_ctx *c = p;
	put(c, 1);
	int r = sb_broadcast_try_send(&c->bc, &c->mem.item[1]);
	MODEL_CHECK(r == 0);
	settle(c, 1, r);
}
static void lag_t1(void *p)
{
	bc_ctx *c = p;
	int r = try_recv(c, 0);
	MODEL_CHECK(r == 0 || r == -EOVERFLOW);
	if (r == 0)
		MODEL_CHECK(c->seq[0][0] == 0);
	else
		MODEL_CHECK(c->missed[0] == 1);
}
static void lag_check(void *p)
{
	bc_ctx *c = p;
	drain_and_finish(c);
	MODEL_CHECK(c->nseq[0] + c->missed[0] == 2);
	MODEL_CHECK(c->seq[0][c->nseq[0] - 1] == 1);
}

/*
 * The same with a receive future: it waits (waker 0) in setup, with
 * nothing sent; t0 sends items 0 and 1; t1 drives the receive, woken once,
 * which gets item 0, or - both sent before its re-poll - a lag of one; the
 * drain gets the rest.
 */
static void lagf_setup(void *p)
{
	bc_ctx *c = p;
	setup_bc(c, 1, SB_BROADCAST_LAGGING);
	setup_subscribe(c, 0);
	setup_waiting_recv(c, 0, 0);
}
static void lagf_t0(void *p)
{
	bc_ctx *c = p;
	for (int i = 0; i < 2; i++) {
		put(c, i);
		int r = sb_broadcast_try_send(&c->bc, &c->mem.item[i]);
		MODEL_CHECK(r == 0);
		settle(c, i, r);
	}
}
static void lagf_t1(void *p)
{
	bc_ctx *c = p;
	int r = drive_recv(c, 0, 0);
	MODEL_CHECK(r == 0 || r == -EOVERFLOW);
	took(c, 0, r);
	c->res[0] = r;
}
static void lagf_check(void *p)
{
	bc_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	if (c->res[0] == 0)
		MODEL_CHECK(c->seq[0][0] == 0);
	drain_and_finish(c);
	MODEL_CHECK(c->nseq[0] + c->missed[0] == 2);
}

/*
 * A receive without the lock racing a send's publication (lagging, capacity
 * 2, receiver 0 subscribed, nothing sent): t0 sends item 0, t1 reads once,
 * getting item 0 whole or -EAGAIN; the drain gets it otherwise.
 */
static void pub_setup(void *p)
{
	bc_ctx *c = p;
	setup_bc(c, 2, SB_BROADCAST_LAGGING);
	setup_subscribe(c, 0);
}
static void pub_t0(void *p)
{
	bc_ctx *c = p;
	put(c, 0);
	int r = sb_broadcast_try_send(&c->bc, &c->mem.item[0]);
	MODEL_CHECK(r == 0);
	settle(c, 0, r);
}
static void pub_t1(void *p)
{
	bc_ctx *c = p;
	int r = try_recv(c, 0);
	MODEL_CHECK(r == 0 || r == -EAGAIN);
	if (r == 0)
		MODEL_CHECK(c->seq[0][0] == 0);
}
static void pub_check(void *p)
{
	bc_ctx *c = p;
	drain_and_finish(c);
	MODEL_CHECK(c->missed[0] == 0 && c->nseq[0] == 1 && c->seq[0][0] == 0);
}

/*
 * A send overwriting the slot of a wide item while a lagging receiver
 * copies it without the lock (capacity 1): 16 bytes (two 8-byte units), 8
 * (the inline one-unit path) or 3 (three 1-byte units), each unit its own
 * atomic location.  The
 * receiver gets item 0 whole (every byte 1) or a lag of one, never a mix of
 * items 0 and 1.
 */
static void put_wide(bc_ctx *c, int i)
{
	memset(c->mem.wide[i], i + 1, sizeof c->mem.wide[i]);
}
static int try_recv_wide(bc_ctx *c)
{
	int r = sb_broadcast_try_recv(&c->rx[0], c->mem.wide_buf);
	if (r == 0) {
		for (size_t k = 0; k < c->wide_size; k++)
			MODEL_CHECK(c->mem.wide_buf[k] == c->mem.wide_buf[0]); /* untorn */
		int v = c->mem.wide_buf[0];
		MODEL_CHECK(v >= 1 && v <= 2);
		MODEL_CHECK(c->nseq[0] < MAXSEQ);
		c->seq[0][c->nseq[0]++] = v - 1;
	} else if (r == -EOVERFLOW) {
		c->missed[0] += (long)sb_broadcast_receiver_missed(&c->rx[0]);
	}
	return r;
}
static void torn_setup_size(bc_ctx *c, size_t size)
{
	watched = &c->mem;
	c->wide_size = size;
	MODEL_CHECK(sb_broadcast_init(&c->bc, c->mem.wide_slot, size, 1, SB_BROADCAST_LAGGING) ==
		    0);
	for (int i = 0; i < NWAKERS; i++)
		counting_waker_init(&c->w[i]);
	setup_subscribe(c, 0);
	put_wide(c, 0);
	MODEL_CHECK(sb_broadcast_try_send(&c->bc, c->mem.wide[0]) == 0);
}
static void torn16_setup(void *p)
{
	torn_setup_size(p, 16);
}
static void torn8_setup(void *p)
{
	torn_setup_size(p, 8);
}
static void torn3_setup(void *p)
{
	torn_setup_size(p, 3);
}
static void torn_t0(void *p)
{
	bc_ctx *c = p;
	put_wide(c, 1);
	MODEL_CHECK(sb_broadcast_try_send(&c->bc, c->mem.wide[1]) == 0);
}
static void torn_t1(void *p)
{
	bc_ctx *c = p;
	int r = try_recv_wide(c);
	MODEL_CHECK(r == 0 || r == -EOVERFLOW);
	if (r == 0)
		MODEL_CHECK(c->seq[0][0] == 0);
}
/*
 * The inline receive of an 8-byte item racing the publication of the item
 * that overwrites the slot it read last (capacity 1: receiver 0 read item 0
 * in setup): t0 sends item 1, t1 reads once, getting item 1 or -EAGAIN,
 * never item 0 again (a read that saw the send begun but not published).
 */
static void pub8_setup(void *p)
{
	bc_ctx *c = p;
	torn_setup_size(c, 8);
	MODEL_CHECK(try_recv_wide(c) == 0 && c->seq[0][0] == 0);
}
static void pub8_t1(void *p)
{
	bc_ctx *c = p;
	int r = try_recv_wide(c);
	MODEL_CHECK(r == 0 || r == -EAGAIN);
	if (r == 0)
		MODEL_CHECK(c->seq[0][1] == 1);
}
static void torn_check(void *p)
{
	bc_ctx *c = p;
	int r;
	while ((r = try_recv_wide(c)) == 0 || r == -EOVERFLOW)
		;
	MODEL_CHECK(r == -EAGAIN);
	MODEL_CHECK(c->nseq[0] + c->missed[0] == 2);
	MODEL_CHECK(c->seq[0][c->nseq[0] - 1] == 1);
	MODEL_CHECK(sb_broadcast_unsubscribe(&c->rx[0]) == 0);
	MODEL_CHECK(sb_broadcast_destroy(&c->bc) == 0);
}

/* --- subscribe racing sends (back-pressure, capacity 2) ----------------- */

/*
 * t0 sends items 0 and 1; t1 subscribes receiver 0 and reads twice.  It
 * sees exactly the items sent after it subscribed: none, item 1, or both,
 * in order.
 */
static void sub_setup(void *p)
{
	bc_ctx *c = p;
	setup_bc(c, 2, SB_BROADCAST_BACKPRESSURE);
}
static void sub_t0(void *p)
{
	bc_ctx *c = p;
	for (int i = 0; i < 2; i++) {
		put(c, i);
		int r = sb_broadcast_try_send(&c->bc, &c->mem.item[i]);
		MODEL_CHECK(r == 0);
		settle(c, i, r);
	}
}
static void sub_t1(void *p)
{
	bc_ctx *c = p;
	MODEL_CHECK(sb_broadcast_subscribe(&c->bc, &c->rx[0]) == 0);
	for (int k = 0; k < 2; k++) {
		int r = try_recv(c, 0);
		MODEL_CHECK(r == 0 || r == -EAGAIN);
	}
}
static void sub_check(void *p)
{
	bc_ctx *c = p;
	drain_and_finish(c);
	/* a suffix of 0, 1 */
	MODEL_CHECK(c->missed[0] == 0);
	if (c->nseq[0] > 0)
		MODEL_CHECK(c->seq[0][c->nseq[0] - 1] == 1);
}

/* --- unsubscribe racing a back-pressured sender (capacity 1) ------------ */

/*
 * Receivers 0 and 1 subscribed; item 0 sent, read by receiver 1 only; item
 * 1's send waits (waker 0) on receiver 0.  t0 unsubscribes receiver 0; t1
 * re-polls the send with waker 1 and drives it: it completes, woken once
 * (whichever waker was registered then), and receiver 1 gets item 1.
 */
static void uns_setup(void *p)
{
	bc_ctx *c = p;
	setup_bc(c, 1, SB_BROADCAST_BACKPRESSURE);
	setup_subscribe(c, 0);
	setup_subscribe(c, 1);
	setup_send(c, 0);
	MODEL_CHECK(try_recv(c, 1) == 0);
	setup_waiting_send(c, 1, 0);
}
static void uns_t0(void *p)
{
	bc_ctx *c = p;
	MODEL_CHECK(sb_broadcast_unsubscribe(&c->rx[0]) == 0);
}
static void uns_t1(void *p)
{
	bc_ctx *c = p;
	int r = drive_send(c, 1, 0);
	MODEL_CHECK(r == 0);
	settle(c, 1, r);
}
static void uns_check(void *p)
{
	bc_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) + atomic_load(&c->w[1].wakes) == 1);
	drain_and_finish(c);
	MODEL_CHECK(c->nseq[1] == 2 && c->seq[1][1] == 1);
}

/*
 * The same, t1 cancelling the send instead: 0 when the unsubscribe had
 * let it in (then receiver 1 gets item 1), else -ECANCELED (it never does).
 */
static void unc_t1(void *p)
{
	bc_ctx *c = p;
	int r = sb_broadcast_send_cancel(&c->s);
	MODEL_CHECK(r == 0 || r == -ECANCELED);
	settle(c, 1, r);
	MODEL_CHECK(poll_send(c, 1) == r);
}
static void unc_check(void *p)
{
	bc_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->w[0].wakes) + atomic_load(&c->w[0].drops) == 1);
	drain_and_finish(c);
	MODEL_CHECK((c->nseq[1] == 2) == (c->sent[1] == 1));
}

/*
 * As uns_setup; t0 has receiver 0 - the slowest - read item 0 instead,
 * while t1 drives the send with waker 1: the read lets it in, and both
 * receivers get item 1.
 */
static void slow_t0(void *p)
{
	bc_ctx *c = p;
	MODEL_CHECK(try_recv(c, 0) == 0);
	MODEL_CHECK(c->seq[0][0] == 0);
}
static void slow_check(void *p)
{
	bc_ctx *c = p;
	MODEL_CHECK(c->sent[1] == 1);
	drain_and_finish(c);
	MODEL_CHECK(c->nseq[0] == 2 && c->seq[0][1] == 1);
	MODEL_CHECK(c->nseq[1] == 2 && c->seq[1][1] == 1);
}

/* --- close racing waiting sends and receives (capacity 1) --------------- */

/*
 * As uns_setup, and receiver 1's receive waits (waker 1).  t0 closes; t1
 * drives the receive; t2 has receiver 0 read item 0, which may let item 1
 * in.  The send (checked at the end) went in or was refused; receiver 1
 * gets item 1 exactly when it went in, from its receive or from the drain,
 * and the stream then ends.
 */
static void cls_setup(void *p)
{
	bc_ctx *c = p;
	uns_setup(c);
	setup_waiting_recv(c, 1, 1);
	c->closed = true;
}
static void cls_t1(void *p)
{
	bc_ctx *c = p;
	int r = drive_recv(c, 1, 0);
	MODEL_CHECK(r == 0 || r == -EPIPE);
	if (r == 0)
		took(c, 1, r);
	c->res[1] = r;
}
static void cls_t2(void *p)
{
	bc_ctx *c = p;
	MODEL_CHECK(try_recv(c, 0) == 0);
	MODEL_CHECK(c->seq[0][0] == 0);
}
static void cls_check(void *p)
{
	bc_ctx *c = p;
	int r = poll_send(c, 0);
	MODEL_CHECK(r == 0 || r == -EPIPE); /* closed: nobody waits */
	settle(c, 1, r);
	if (c->res[1] == 0)
		MODEL_CHECK(c->sent[1] && c->seq[1][1] == 1);
	drain_and_finish(c);
	MODEL_CHECK((c->nseq[1] == 2) == (c->sent[1] == 1));
	MODEL_CHECK(c->nseq[0] == 1 + c->sent[1]);
}

static const sb_model_scenario pairs[] = {
	{ "broadcast: a send overwriting the slot a lagging receiver reads", 2, sizeof(bc_ctx),
	  lag_setup, { lag_t0, lag_t1 }, lag_check },
	{ "broadcast: two sends racing a lagging receive future", 2, sizeof(bc_ctx), lagf_setup,
	  { lagf_t0, lagf_t1 }, lagf_check },
	{ "broadcast: a receive without the lock racing a send's publication", 2, sizeof(bc_ctx),
	  pub_setup, { pub_t0, pub_t1 }, pub_check },
	{ "broadcast: a send overwriting a 16-byte item a lagging receiver copies", 2,
	  sizeof(bc_ctx), torn16_setup, { torn_t0, torn_t1 }, torn_check },
	{ "broadcast: a send overwriting an 8-byte item a lagging receiver copies", 2,
	  sizeof(bc_ctx), torn8_setup, { torn_t0, torn_t1 }, torn_check },
	{ "broadcast: an inline 8-byte receive racing a send's publication", 2, sizeof(bc_ctx),
	  pub8_setup, { torn_t0, pub8_t1 }, torn_check },
	{ "broadcast: a send overwriting a 3-byte item a lagging receiver copies", 2,
	  sizeof(bc_ctx), torn3_setup, { torn_t0, torn_t1 }, torn_check },
	{ "broadcast: subscribe racing sends", 2, sizeof(bc_ctx), sub_setup, { sub_t0, sub_t1 },
	  sub_check },
	{ "broadcast: unsubscribe racing a back-pressured send's re-poll with a new waker", 2,
	  sizeof(bc_ctx), uns_setup, { uns_t0, uns_t1 }, uns_check },
	{ "broadcast: unsubscribe racing a back-pressured send's cancel", 2, sizeof(bc_ctx),
	  uns_setup, { uns_t0, unc_t1 }, unc_check },
	{ "broadcast: the slowest receiver's read racing a back-pressured send's re-poll", 2,
	  sizeof(bc_ctx), uns_setup, { slow_t0, uns_t1 }, slow_check },
};

static const sb_model_scenario trios[] = {
	{ "broadcast: close racing a waiting receive and a read that lets a waiting send in", 3,
	  sizeof(bc_ctx), cls_setup, { close_t, cls_t1, cls_t2 }, cls_check },
};

static int bound_from_env(const char *name, int fallback)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : fallback;
}

static void explore_all(int preemptions, int stale_reads)
{
	bool ok = sb_model_explore_all(pairs, COUNT(pairs), preemptions, stale_reads, LIMIT);
	int trio_preemptions = bound_from_env("SB_MODEL_TRIO_PREEMPTIONS", preemptions - 1);
	int trio_stale = stale_reads < 0 ? -1
					 : bound_from_env("SB_MODEL_TRIO_STALE_READS", stale_reads - 1);
	ok &= sb_model_explore_all(trios, COUNT(trios), trio_preemptions, trio_stale, LIMIT);
	assert_true(ok);
}

static void random_all(int stale_reads)
{
	bool ok = sb_model_random_all(pairs, COUNT(pairs), SEED, RANDOM_RUNS, stale_reads);
	ok &= sb_model_random_all(trios, COUNT(trios), SEED, RANDOM_RUNS, stale_reads);
	assert_true(ok);
}

static void every_broadcast_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	explore_all(PREEMPTIONS, -1);
}

static void every_broadcast_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	random_all(-1);
}

static void every_broadcast_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	explore_all(WEAK_PREEMPTIONS, STALE_READS);
}

static void every_broadcast_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	random_all(WEAK_RANDOM_STALE_READS);
}

/* test_model_broadcast [RUN-PATTERN]: cmocka's test name filter. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_broadcast_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_broadcast_scenario_holds_over_random_schedules),
		cmocka_unit_test(every_broadcast_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_broadcast_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
