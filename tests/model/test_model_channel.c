/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of syncband/channel.h (sched.c, README.md in this
 * folder): sends, receives, cancels, force_send, batch operations, re-polls
 * with a new waker and close racing on one channel of capacity 1 or 0, each
 * explored over every schedule within the bounds, then over random ones,
 * under sequential consistency and under the weak (release/acquire) model,
 * each over both kinds of channel: the lock's and the stamped ring.
 *
 * Items are ints: item i (0..NITEMS-1) has the value i + 1 while its sender
 * owns it; items 0-3 are sender A's, 4-7 sender B's, each sent in index
 * order.  Each check says that every item a sender saw sent (0) was received
 * exactly once - by a thread, by an eviction, or by check's drain of the
 * ring - and every item it saw not sent (-EAGAIN, -EPIPE, -ECANCELED) never
 * was; that each receiver got each sender's items in order; that nothing
 * is left waiting where the channel's invariants forbid it; that every
 * waker clone was woken or dropped; and that the channel destroys.
 *
 * Item memory (the senders' items, the ring's slots, the receivers'
 * buffers) is watched: the library's copies of it (memcpy, wrapped at link
 * time for this program) are reported to the explorer as plain accesses
 * (sb_model_plain_access).  So under the weak model a receiver that reads
 * its buffer must happen-after the copy that filled it, and a sender that
 * reuses its item's memory once its send settled (it overwrites it with 0)
 * must happen-after every copy out of it; under either model a copy made
 * after the sender was told it may reuse its memory delivers a 0, which the
 * receiver rejects.  (The inline paths of channel.h copy with a constant
 * size, which gcc expands in place: those copies are not reported; they
 * run in the caller's own thread under the lock.)
 *
 * Some threads also leave a plain witness (`started`) before they begin a
 * cancel: a receive that returns while the cancel has not begun raced
 * nothing, so it must have served the waiter as if no cancel came.
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

#include <syncband/channel.h>

#include "sched.h"

/* Under the weak model: a clone happens-before every use of that clone. */
#define COUNTING_WAKER_CLONED(c) MODEL_PLAIN_WRITE(c)
#define COUNTING_WAKER_USED(c) MODEL_PLAIN_READ(c)
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

/* The bounds of model_common.h (README.md in this folder). */
enum { PREEMPTIONS = 4, LIMIT = 2000000, RANDOM_RUNS = 3000, SEED = 20261207 };
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum { NITEMS = 8, PER_SENDER = 4, NFUT = 3, NWAKERS = 4, NSEQ = 3, MAXSEQ = 8, MANY = 3 };

/* What the sender of an item saw. */
enum { UNSENT = 0, SENT, KEPT };

typedef struct chan_mem {
	int item[NITEMS];         /* the senders' items */
	int slots[2];             /* the ring */
	_Alignas(64) unsigned char ring[SB_CHANNEL_RING_STORAGE_SIZE(sizeof(int), 2)]; /* a stamped one */
	int buf[NFUT][MANY];      /* receive futures' memory */
	int tbuf[NSEQ][MANY];     /* try_recv's and force_send's memory, per thread */
} chan_mem;

typedef struct chan_ctx {
	sb_channel ch;
	size_t capacity;
	sb_channel_send s[NFUT];
	sb_channel_recv r[NFUT];
	counting_waker w[NWAKERS];
	chan_mem mem;
	int fate[NITEMS];
	int got[NITEMS];          /* times each item was received */
	int seq[NSEQ][MAXSEQ];    /* what each receiving thread got, in order */
	int nseq[NSEQ];
	int receivers;            /* receive futures setup left waiting */
	int res[6];               /* results the checks look at */
	int started;              /* witness: a cancel has begun */
	int witness;              /* witness: a receive returned before it */
	bool closed;              /* a thread closes the channel */
	int payload;              /* written before a close, read once it is seen closed */
} chan_ctx;

/* ------------------------------------------------------- watched memory */

/* The current execution's item memory, for the wrapped memcpy. */
static chan_mem *watched;

static bool is_watched(const void *p)
{
	const char *c = p, *lo = (const char *)watched;
	return watched && c >= lo && c < lo + sizeof *watched;
}

/*
 * The library's copies (and the explorer's own, which never touch the item
 * memory): each int of watched memory read or written is reported.
 */
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

/* A sender writes item i before it sends it. */
static void put(chan_ctx *c, int i)
{
	c->mem.item[i] = i + 1;
	sb_model_plain_access(&c->mem.item[i], true);
}

/*
 * Item i's send settled with `r`: sent (0), or still the sender's.  Either
 * way the sender owns its memory again and reuses it: every copy out of it
 * must happen-before, and none may follow.
 */
static void settle(chan_ctx *c, int i, int r)
{
	MODEL_CHECK(c->fate[i] == UNSENT);
	c->fate[i] = r == 0 ? SENT : KEPT;
	c->mem.item[i] = 0;
	sb_model_plain_access(&c->mem.item[i], true);
}

/* Thread `t` received the item at `p` (its buffer, filled by the library). */
static void took(chan_ctx *c, int t, const int *p)
{
	MODEL_PLAIN_READ(p);
	int v = *p;
	MODEL_CHECK(v >= 1 && v <= NITEMS); /* 0: copied after its sender reused it */
	c->got[v - 1]++;
	MODEL_CHECK(c->nseq[t] < MAXSEQ);
	c->seq[t][c->nseq[t]++] = v - 1;
}

/* -------------------------------------------------------------- futures */

static int poll_send(sb_channel_send *f, counting_waker *cw)
{
	sb_waker w = counting_waker_ref(cw);
	return sb_channel_send_poll(f, &w);
}

static int poll_recv(sb_channel_recv *f, counting_waker *cw)
{
	sb_waker w = counting_waker_ref(cw);
	return sb_channel_recv_poll(f, &w);
}

/* A send future (`send`) or a receive future at `f`, polled with `cw`. */
static int poll_either(bool send, void *f, counting_waker *cw)
{
	return send ? poll_send(f, cw) : poll_recv(f, cw);
}

/*
 * The test's own read of a wake count: not a scheduling point (the counting
 * waker's own atomics are not either), so that it adds no schedules.
 */
static int wake_count(counting_waker *cw)
{
	return __atomic_load_n((int *)&cw->wakes, __ATOMIC_SEQ_CST);
}

/*
 * Polls with `cw` until done, waiting for a wake after each pending poll;
 * SB_PENDING when nobody is left to wake it (check then cancels it).  The
 * wakes are counted before each poll: a wake may come before the poll
 * returns.
 */
static int drive(bool send, void *f, counting_waker *cw)
{
	int wakes = wake_count(cw);
	int r;
	while ((r = poll_either(send, f, cw)) == SB_PENDING) {
		if (!sb_model_await_change(&cw->wakes, wakes))
			return SB_PENDING;
		wakes = wake_count(cw);
	}
	return r;
}

static int drive_send(sb_channel_send *f, counting_waker *cw)
{
	return drive(true, f, cw);
}

static int drive_recv(sb_channel_recv *f, counting_waker *cw)
{
	return drive(false, f, cw);
}

/* A receive future's items, once it returned 0, go to thread t's record. */
static void took_all(chan_ctx *c, int t, sb_channel_recv *f, const int *buf)
{
	size_t n = sb_channel_recv_count(f);
	MODEL_CHECK(n >= 1 && n <= MANY);
	for (size_t k = 0; k < n; k++)
		took(c, t, &buf[k]);
}

/* The item send future f sends. */
static int item_of(const chan_ctx *c, int f)
{
	return (int)((const int *)c->s[f].item - c->mem.item);
}

/* ----------------------------------------------------------- operations */

/* Item i's sender tries to send it without waiting; it owns it again after. */
static int try_send_item(chan_ctx *c, int i)
{
	put(c, i);
	int r = sb_channel_try_send(&c->ch, &c->mem.item[i]);
	settle(c, i, r);
	return r;
}

/* Thread t's k-th try_recv, into its own memory: an item it took, or why not. */
static int try_recv_into(chan_ctx *c, int t, int k)
{
	int *into = &c->mem.tbuf[t][k];
	int r = sb_channel_try_recv(&c->ch, into);
	if (r == 0)
		took(c, t, into);
	return r;
}

/* Thread t takes item 0, which the ring holds; then whatever its second try_recv says. */
static int recv_first_then_try(chan_ctx *c, int t)
{
	MODEL_CHECK(try_recv_into(c, t, 0) == 0);
	MODEL_CHECK(c->seq[t][0] == 0);
	return try_recv_into(c, t, 1);
}

/* Items first..first+n-1, written by their sender. */
static void put_range(chan_ctx *c, int first, int n)
{
	for (int i = first; i < first + n; i++)
		put(c, i);
}

/* Items first..first+n-1 settled after a batch that sent `sent` of them (or an error). */
static void settle_range(chan_ctx *c, int first, int n, int sent)
{
	for (int i = first; i < first + n; i++)
		settle(c, i, i - first < sent ? 0 : -EAGAIN);
}

/* --------------------------------------------------- the channel's kind */

/*
 * Every scenario runs over both kinds of channel: the lock's
 * (sb_channel_init, over plain slots) and the stamped ring
 * (sb_channel_init_ring), whose inline paths CAS the ring's words instead
 * of taking the lock.  The explorer's setups take no argument: the test in
 * progress sets `kind` (its cmocka state) before it explores.
 */
typedef struct channel_kind {
	const char *name;
	int (*init)(chan_ctx *c, size_t capacity);
} channel_kind;

static int init_lock_channel(chan_ctx *c, size_t capacity)
{
	return sb_channel_init(&c->ch, capacity ? c->mem.slots : NULL, sizeof(int), capacity);
}

static int init_ring_channel(chan_ctx *c, size_t capacity)
{
	return sb_channel_init_ring(&c->ch, capacity ? c->mem.ring : NULL, sizeof(int), capacity);
}

static channel_kind lock_channel = { "the lock's channel", init_lock_channel };
static channel_kind ring_channel = { "a stamped ring", init_ring_channel };
static const channel_kind *kind = &lock_channel;

/* ---------------------------------------------------------------- setup */

static void setup_channel(chan_ctx *c, size_t capacity)
{
	watched = &c->mem;
	c->capacity = capacity;
	MODEL_CHECK(kind->init(c, capacity) == 0);
	for (int i = 0; i < NWAKERS; i++)
		counting_waker_init(&c->w[i]);
}

/* In setup: item i into the ring (try_send). */
static void setup_in_ring(chan_ctx *c, int i)
{
	MODEL_CHECK(try_send_item(c, i) == 0);
}

/* In setup: item i's send future f waits, with waker cw. */
static void setup_waiting_send(chan_ctx *c, int f, int i, int cw)
{
	put(c, i);
	sb_channel_send_init(&c->s[f], &c->ch, &c->mem.item[i]);
	MODEL_CHECK(poll_send(&c->s[f], &c->w[cw]) == SB_PENDING);
}

/* In setup: receive future f waits for one item, with waker cw. */
static void setup_waiting_recv(chan_ctx *c, int f, int cw)
{
	sb_channel_recv_init(&c->r[f], &c->ch, c->mem.buf[f]);
	MODEL_CHECK(poll_recv(&c->r[f], &c->w[cw]) == SB_PENDING);
	c->receivers++;
}

/* The setups several scenarios share: an empty ring of one slot... */
static void cap1_setup(void *p)
{
	setup_channel(p, 1);
}

/* ...of two... */
static void cap2_setup(void *p)
{
	setup_channel(p, 2);
}

/* ...a ring of one slot holding item 0... */
static void one_in_ring_setup(void *p)
{
	setup_channel(p, 1);
	setup_in_ring(p, 0);
}

/* ...and behind it item 1's send future 0, waiting with waker 0. */
static void sender_waits_setup(void *p)
{
	one_in_ring_setup(p);
	setup_waiting_send(p, 0, 1, 0);
}

/* ---------------------------------------------------------------- check */

static bool pending_send(const chan_ctx *c, int f)
{
	return c->s[f].channel && c->s[f].status == SB_PENDING;
}

static bool pending_recv(const chan_ctx *c, int f)
{
	return c->r[f].channel && c->r[f].status == SB_PENDING;
}

/*
 * Everything settled: nothing waits where the invariants forbid it (a
 * sender only on a full ring with no receiver waiting, a receiver only on
 * an empty one with no sender waiting, nobody once closed); the futures
 * that nobody was left to wake are cancelled (nothing happened to them);
 * check's drain receives what the ring holds, appended to thread t's
 * record.
 */
static void settle_all(chan_ctx *c, int t)
{
	bool senders = false, receivers = false;
	for (int f = 0; f < NFUT; f++) {
		senders |= pending_send(c, f);
		receivers |= pending_recv(c, f);
	}
	size_t len = sb_channel_len(&c->ch);
	MODEL_CHECK(!(senders && receivers));
	if (senders)
		MODEL_CHECK(len == c->capacity && !c->closed);
	if (receivers)
		MODEL_CHECK(len == 0 && !c->closed);
	for (int f = 0; f < NFUT; f++) {
		if (pending_send(c, f)) {
			MODEL_CHECK(sb_channel_send_cancel(&c->s[f]) == -ECANCELED);
			settle(c, item_of(c, f), -ECANCELED);
		}
		if (pending_recv(c, f))
			MODEL_CHECK(sb_channel_recv_cancel(&c->r[f]) == -ECANCELED);
	}
	int r;
	int *into = c->mem.tbuf[t];
	while ((r = sb_channel_try_recv(&c->ch, into)) == 0)
		took(c, t, into);
	MODEL_CHECK(r == (c->closed ? -EPIPE : -EAGAIN));
	MODEL_CHECK(sb_channel_is_closed(&c->ch) == c->closed);
}

/*
 * Every item sent was received once, every other never; each record has
 * each sender's items in order; every clone was woken or dropped; the
 * channel destroys.
 */
static void check_ledger(chan_ctx *c)
{
	for (int i = 0; i < NITEMS; i++)
		MODEL_CHECK(c->got[i] == (c->fate[i] == SENT));
	for (int t = 0; t < NSEQ; t++)
		for (int a = 0; a < c->nseq[t]; a++)
			for (int b = a + 1; b < c->nseq[t]; b++)
				if (c->seq[t][a] / PER_SENDER == c->seq[t][b] / PER_SENDER)
					MODEL_CHECK(c->seq[t][a] < c->seq[t][b]);
	for (int i = 0; i < NWAKERS; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_channel_destroy(&c->ch) == 0);
}

/* settle_all, its drain into thread t's record, then check_ledger. */
static void settle_and_check(chan_ctx *c, int t)
{
	settle_all(c, t);
	check_ledger(c);
}

/* The checks of scenarios that check nothing more, by the drain's record. */
static void check_into_0(void *p)
{
	settle_and_check(p, 0);
}

static void check_into_1(void *p)
{
	settle_and_check(p, 1);
}

static void check_into_2(void *p)
{
	settle_and_check(p, 2);
}

/* A waker whose future waited once: woken once if its operation settled, else dropped. */
static void expect_woken_or_dropped(chan_ctx *c, int cw, bool woken)
{
	MODEL_CHECK(atomic_load(&c->w[cw].wakes) == (woken ? 1 : 0));
	MODEL_CHECK(atomic_load(&c->w[cw].drops) == (woken ? 0 : 1));
}

/* Exactly one of wakers 0 and 1 was woken: the one registered when its future completed. */
static void expect_one_of_two_woken(chan_ctx *c)
{
	MODEL_CHECK(atomic_load(&c->w[0].wakes) + atomic_load(&c->w[1].wakes) == 1);
}

/* ------------------------------------------------ threads several share */

static void close_t(void *p)
{
	chan_ctx *c = p;
	sb_channel_close(&c->ch);
}

/*
 * Cancels send future 0, which waited: 0 when its item went (to a receiver,
 * or moved into the ring), else -ECANCELED and it never arrives; a poll
 * after says the same.  `started` says the cancel has begun.
 */
static void cancel_send_t(void *p)
{
	chan_ctx *c = p;
	c->started = 1;
	int r = sb_channel_send_cancel(&c->s[0]);
	MODEL_CHECK(r == 0 || r == -ECANCELED);
	c->res[0] = r;
	MODEL_CHECK(poll_send(&c->s[0], &c->w[3]) == r);
	settle(c, item_of(c, 0), r);
}

/* force_send of item 1: into a free slot (0), or it evicts the oldest into its own memory (1). */
static void force_t(void *p)
{
	chan_ctx *c = p;
	put(c, 1);
	int r = sb_channel_force_send(&c->ch, &c->mem.item[1], c->mem.tbuf[0]);
	MODEL_CHECK(r == 0 || r == 1);
	settle(c, 1, 0);
	if (r == 1)
		took(c, 0, c->mem.tbuf[0]); /* the evicted item is the forcer's now */
}

/* A try_send_many of items 0-2: at least one goes, at most one per free slot and waiting receiver. */
static void send_batch_t(void *p)
{
	chan_ctx *c = p;
	put_range(c, 0, MANY);
	int n = sb_channel_try_send_many(&c->ch, c->mem.item, MANY);
	MODEL_CHECK(n >= 1 && (size_t)n <= c->capacity + (size_t)c->receivers);
	settle_range(c, 0, MANY, n);
}

/* --- a send waiting on a full ring, a receiver and close (capacity 1) ---- */

static void full_setup(void *p)
{
	chan_ctx *c = p;
	one_in_ring_setup(c);
	c->closed = true;
}
/* Item 1 waits for room: a receive moves it in, or close refuses it. */
static void full_t0(void *p)
{
	chan_ctx *c = p;
	put(c, 1);
	sb_channel_send_init(&c->s[0], &c->ch, &c->mem.item[1]);
	int r = drive_send(&c->s[0], &c->w[0]);
	MODEL_CHECK(r == 0 || r == -EPIPE);
	settle(c, 1, r);
}
/* Item 0 is there, closed or not; then item 1, nothing yet, or the end. */
static void full_t1(void *p)
{
	chan_ctx *c = p;
	int r = recv_first_then_try(c, 0);
	MODEL_CHECK(r == 0 || r == -EAGAIN || r == -EPIPE);
	c->res[1] = r;
}
static void full_check(void *p)
{
	chan_ctx *c = p;
	settle_all(c, 0);
	/* the stream ends after what was sent: a receive that saw its end
	 * means item 1 was refused */
	if (c->res[1] == -EPIPE)
		MODEL_CHECK(c->fate[1] == KEPT);
	/* woken once: moved into the ring, or refused by close */
	MODEL_CHECK(atomic_load(&c->w[0].wakes) <= 1);
	check_ledger(c);
}

/* --- a rendezvous receive, a try_send and close (capacity 0) ------------ */

static void rdv_setup(void *p)
{
	chan_ctx *c = p;
	setup_channel(c, 0);
	c->closed = true;
}
/* Item 0 goes only to a receiver already waiting. */
static void rdv_t0(void *p)
{
	int r = try_send_item(p, 0);
	MODEL_CHECK(r == 0 || r == -EAGAIN || r == -EPIPE);
}
/* The receive gets item 0 or, once closed, the end of the stream. */
static void rdv_t1(void *p)
{
	chan_ctx *c = p;
	sb_channel_recv_init(&c->r[0], &c->ch, c->mem.buf[0]);
	int r = drive_recv(&c->r[0], &c->w[1]);
	MODEL_CHECK(r == 0 || r == -EPIPE);
	if (r == 0)
		took_all(c, 0, &c->r[0], c->mem.buf[0]);
}

/* --- a direct handoff to a waiting receiver racing its cancel ----------- */

/*
 * Receive future 0 waits (waker 0).  t0 sends item 0 (to the receiver, or,
 * cancelled first, into the ring or - rendezvous - nowhere), then item 1;
 * t1 cancels the receive: 0 with item 0 in its buffer, or -ECANCELED with
 * nothing received; a poll after it says the same.  A send that returned
 * before the cancel began found the receiver waiting.
 */
static void hand_setup(chan_ctx *c, size_t capacity)
{
	setup_channel(c, capacity);
	setup_waiting_recv(c, 0, 0);
}
static void hand1_setup(void *p)
{
	hand_setup(p, 1);
}
static void hand0_setup(void *p)
{
	hand_setup(p, 0);
}
static void hand_t0(void *p)
{
	chan_ctx *c = p;
	int r = try_send_item(c, 0);
	c->witness = !c->started;
	MODEL_CHECK(r == 0 || (r == -EAGAIN && c->capacity == 0));
	r = try_send_item(c, 1);
	MODEL_CHECK(r == 0 || r == -EAGAIN);
}
static void hand_t1(void *p)
{
	chan_ctx *c = p;
	c->started = 1;
	int r = sb_channel_recv_cancel(&c->r[0]);
	MODEL_CHECK(r == 0 || r == -ECANCELED);
	c->res[0] = r;
	MODEL_CHECK(poll_recv(&c->r[0], &c->w[1]) == r);
	if (r == 0) {
		MODEL_CHECK(sb_channel_recv_count(&c->r[0]) == 1);
		took(c, 0, c->mem.buf[0]);
		MODEL_CHECK(c->seq[0][0] == 0); /* the first item sent */
	}
	if (c->capacity > 0) {
		r = try_recv_into(c, 0, 0);
		MODEL_CHECK(r == 0 || r == -EAGAIN);
	}
}
/*
 * A cancel raced the operation it cancels: an operation that returned
 * before the cancel began (the witness) happened, and the waker is woken
 * when it happened, else its clone dropped.  Thread 0 received.
 */
static void cancel_raced_check(void *p)
{
	chan_ctx *c = p;
	if (c->witness)
		MODEL_CHECK(c->res[0] == 0);
	expect_woken_or_dropped(c, 0, c->res[0] == 0);
	settle_and_check(c, 0);
}

/* --- a rendezvous send future racing its own cancel --------------------- */

/*
 * Send future 0 (item 0, waker 0) waits on a rendezvous channel.  t0
 * cancels it (cancel_send_t): 0 exactly when the receiver took the item.
 * t1's receive future takes it at its first poll if the cancel had not
 * begun, else may wait (and is cancelled by check).
 */
static void rsc_setup(void *p)
{
	chan_ctx *c = p;
	setup_channel(c, 0);
	setup_waiting_send(c, 0, 0, 0);
}
static void rsc_t1(void *p)
{
	chan_ctx *c = p;
	sb_channel_recv_init(&c->r[0], &c->ch, c->mem.buf[0]);
	int r = poll_recv(&c->r[0], &c->w[1]);
	if (!c->started)
		MODEL_CHECK(r == 0); /* it raced nothing: the sender was waiting */
	if (r == SB_PENDING)
		r = drive_recv(&c->r[0], &c->w[1]); /* a re-poll, then its wake */
	if (r == 0)
		took_all(c, 0, &c->r[0], c->mem.buf[0]);
	else
		MODEL_CHECK(r == SB_PENDING);
}
/* --- force_send racing a receiver, a sender waiting (capacity 1) -------- */

/*
 * The ring holds item 0 and send future 0 (sender B's item 4, waker 0)
 * waits.  t0's force_send of item 1 never waits (force_t), while the
 * waiting sender keeps its place.  t1 receives twice; the first receive
 * frees a slot, which the waiting sender takes, so it always completes.
 */
static void force_setup(void *p)
{
	one_in_ring_setup(p);
	setup_waiting_send(p, 0, PER_SENDER, 0);
}
static void force_t1(void *p)
{
	chan_ctx *c = p;
	for (int k = 0; k < 2; k++) {
		sb_channel_recv_init(&c->r[k], &c->ch, c->mem.buf[k]);
		int r = drive_recv(&c->r[k], &c->w[1 + k]);
		MODEL_CHECK(r == 0);
		took_all(c, 1, &c->r[k], c->mem.buf[k]);
	}
}
/* Send future 0 was moved into the ring by t1's first receive: woken, and done. */
static void moved_in_check(chan_ctx *c)
{
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(poll_send(&c->s[0], &c->w[0]) == 0);
	settle(c, item_of(c, 0), 0);
}
static void force_check(void *p)
{
	chan_ctx *c = p;
	moved_in_check(c);
	settle_and_check(c, 2);
}

/* --- a receive-many future racing try_send_many (capacity 1) ------------ */

/*
 * t0's receive future asks for up to 3 items; t1 sends items 0-2 with
 * try_send_many (to the waiting receiver, as many as it asks, or one into
 * the ring), then the rest with a second one.
 */
static void many_t0(void *p)
{
	chan_ctx *c = p;
	sb_channel_recv_many_init(&c->r[0], &c->ch, c->mem.buf[0], MANY);
	int r = drive_recv(&c->r[0], &c->w[0]);
	if (r == 0)
		took_all(c, 0, &c->r[0], c->mem.buf[0]);
	else
		MODEL_CHECK(r == SB_PENDING);
}
static void many_t1(void *p)
{
	chan_ctx *c = p;
	put_range(c, 0, MANY);
	int n = sb_channel_try_send_many(&c->ch, c->mem.item, MANY);
	MODEL_CHECK(n >= 1 && n <= MANY);
	settle_range(c, 0, n, n);
	int left = MANY - n;
	if (left == 0)
		return;
	int m = sb_channel_try_send_many(&c->ch, &c->mem.item[n], (size_t)left);
	MODEL_CHECK(m == -EAGAIN || (m >= 1 && m <= left));
	settle_range(c, n, left, m);
}

/* --- a waiting sender's item moved into the ring racing its cancel ------ */

/*
 * The ring holds item 0; send future 0 (item 1, waker 0) waits.  t0 cancels
 * it (cancel_send_t): 0 when a receive had moved item 1 into the ring, else
 * -ECANCELED and item 1 never arrives.  t1 receives item 0 and then tries
 * for item 1: a first receive that returned before the cancel began moved
 * it.
 */
static void move_t1(void *p)
{
	chan_ctx *c = p;
	MODEL_CHECK(try_recv_into(c, 0, 0) == 0);
	bool moved = !c->started;
	MODEL_CHECK(c->seq[0][0] == 0);
	int r = try_recv_into(c, 0, 1);
	MODEL_CHECK(r == 0 || r == -EAGAIN);
	if (moved)
		MODEL_CHECK(r == 0 && c->seq[0][1] == 1);
	c->witness = moved;
}

/* --- close racing a waiting receive's re-poll with a new waker ---------- */

/*
 * Receive future 0 waits with waker 0.  t1 re-polls it with waker 1 (then
 * waits for waker 1's wake), while t0 closes and t2 tries to send item 0:
 * the receive gets item 0 or the end of the stream, and exactly one of the
 * two wakers is woken - the one registered when it completed.
 */
static void rrp_setup(void *p)
{
	chan_ctx *c = p;
	setup_channel(c, 1);
	setup_waiting_recv(c, 0, 0);
	c->closed = true;
}
static void rrp_t1(void *p)
{
	chan_ctx *c = p;
	int r = drive_recv(&c->r[0], &c->w[1]);
	MODEL_CHECK(r == 0 || r == -EPIPE);
	if (r == 0)
		took_all(c, 0, &c->r[0], c->mem.buf[0]);
	c->res[0] = r;
}
static void rrp_t2(void *p)
{
	int r = try_send_item(p, 0);
	MODEL_CHECK(r == 0 || r == -EPIPE);
}
static void rrp_check(void *p)
{
	chan_ctx *c = p;
	expect_one_of_two_woken(c);
	settle_and_check(c, 2);
}

/*
 * The same for a rendezvous send future (item 0, waker 0): t1 re-polls it
 * with waker 1 while t0 closes; the send ends refused, woken once.
 */
static void srp_setup(void *p)
{
	chan_ctx *c = p;
	setup_channel(c, 0);
	setup_waiting_send(c, 0, 0, 0);
	c->closed = true;
}
static void srp_t1(void *p)
{
	chan_ctx *c = p;
	int r = drive_send(&c->s[0], &c->w[1]);
	MODEL_CHECK(r == -EPIPE);
	settle(c, 0, r);
}
static void srp_check(void *p)
{
	chan_ctx *c = p;
	expect_one_of_two_woken(c);
	settle_and_check(c, 0);
}

/* ------------------------------------ inline operations racing the lock */

/*
 * The scenarios below were written for the stamped ring's inline CASes,
 * and hold over the lock's channel too, whose inline paths take the lock
 * only when it is idle.
 *
 * A try_send racing a receive future that finds the ring empty and queues
 * (the lost wake): on a stamped ring the receiver sets RECEIVERS in the
 * tail under the lock, so either the send's CAS came first and the
 * receiver's look finds the claimed item, or the CAS fails and the send
 * takes the lock and hands the item over.  The receive always gets item 0.
 */
static void lw_t0(void *p)
{
	MODEL_CHECK(try_send_item(p, 0) == 0);
}
static void lw_t1(void *p)
{
	chan_ctx *c = p;
	sb_channel_recv_init(&c->r[0], &c->ch, c->mem.buf[0]);
	MODEL_CHECK(drive_recv(&c->r[0], &c->w[0]) == 0);
	took_all(c, 0, &c->r[0], c->mem.buf[0]);
}

/*
 * A try_recv racing a send future that finds the ring full and queues: on
 * a stamped ring the sender sets SENDERS in the head under the lock, so
 * either the receive's CAS came first and the sender finds room, or the
 * CAS fails and the receive takes the lock and moves the sender's item in.
 * The send always completes.
 */
static void lr_t0(void *p)
{
	chan_ctx *c = p;
	put(c, 1);
	sb_channel_send_init(&c->s[0], &c->ch, &c->mem.item[1]);
	MODEL_CHECK(drive_send(&c->s[0], &c->w[0]) == 0);
	settle(c, 1, 0);
}
static void lr_t1(void *p)
{
	int r = recv_first_then_try(p, 1);
	MODEL_CHECK(r == 0 || r == -EAGAIN);
}

/*
 * Nobody barges past a waiting sender: the ring holds item 0 and sender A's
 * item 1 waits; t0 receives twice, t1 try_sends sender B's item 4.  Item 4
 * may go only once item 1 is in the ring, so every record has item 1 first.
 */
static void nb_t0(void *p)
{
	int r = recv_first_then_try(p, 0);
	MODEL_CHECK(r == 0 || r == -EAGAIN);
}
/* Sender B's item 4 tries to go. */
static void send_b_t(void *p)
{
	int r = try_send_item(p, PER_SENDER);
	MODEL_CHECK(r == 0 || r == -EAGAIN);
}
static void nb_check(void *p)
{
	chan_ctx *c = p;
	moved_in_check(c); /* by t0's first receive */
	settle_all(c, 0);
	int at1 = -1, at4 = -1;
	for (int k = 0; k < c->nseq[0]; k++) {
		if (c->seq[0][k] == 1)
			at1 = k;
		if (c->seq[0][k] == PER_SENDER)
			at4 = k;
	}
	MODEL_CHECK(at1 >= 0);
	if (at4 >= 0)
		MODEL_CHECK(at1 < at4);
	check_ledger(c);
}

/*
 * try_sends racing close (capacity 2): once a send fails with -EPIPE, or
 * the sender saw the channel closed, no later send is accepted, and what
 * the closer wrote before close() is visible; what was accepted is
 * received (check's drain).
 */
static void cl_setup(void *p)
{
	chan_ctx *c = p;
	setup_channel(c, 2);
	c->closed = true;
}
static void cl_t0(void *p)
{
	chan_ctx *c = p;
	int r0 = try_send_item(c, 0);
	MODEL_CHECK(r0 == 0 || r0 == -EPIPE);
	bool saw = sb_channel_is_closed(&c->ch);
	if (saw) { /* the closer's writes before close() are visible */
		MODEL_PLAIN_READ(&c->payload);
		MODEL_CHECK(c->payload == 1);
	}
	int r1 = try_send_item(c, 1);
	MODEL_CHECK(r1 == 0 || r1 == -EPIPE);
	if (r0 == -EPIPE || saw)
		MODEL_CHECK(r1 == -EPIPE);
}
static void cl_t1(void *p)
{
	chan_ctx *c = p;
	c->payload = 1;
	MODEL_PLAIN_WRITE(&c->payload);
	sb_channel_close(&c->ch);
	MODEL_CHECK(try_send_item(c, PER_SENDER) == -EPIPE);
}

/*
 * force_send racing a try_recv (capacity 1, item 0 in the ring): whoever
 * takes item 0 - the receive, or the eviction - takes it once, and item 1
 * is in the ring or received.
 */
static void fr_t1(void *p)
{
	for (int k = 0; k < 2; k++) {
		int r = try_recv_into(p, 1, k);
		MODEL_CHECK(r == 0 || r == -EAGAIN);
	}
}

/*
 * try_send_many (the lock's path) racing a try_send (capacity 2), then a
 * try_recv: each sender's items stay in order and are conserved.
 */
static void bs_t1(void *p)
{
	chan_ctx *c = p;
	send_b_t(c);
	MODEL_CHECK(try_recv_into(c, 1, 0) == 0);
}

/*
 * A batch send that fills its wake batch (2 in this build) and flushes it,
 * then pushes into the ring: two receive futures wait (capacity 1); t0's
 * try_send_many of items 0-2 hands two over, flushes (the lock dropped and
 * taken again) and puts the third in the ring, while t1 takes the lock in
 * between (len, which thaws a stamped ring) and try_sends sender B's item 4.
 * The relock must freeze the ring again, or the batch's push and the inline
 * send claim one slot.
 */
static void fl_setup(void *p)
{
	chan_ctx *c = p;
	setup_channel(c, 1);
	setup_waiting_recv(c, 0, 0);
	setup_waiting_recv(c, 1, 1);
}
static void fl_t1(void *p)
{
	chan_ctx *c = p;
	(void)sb_channel_len(&c->ch);
	send_b_t(c);
}
static void fl_check(void *p)
{
	chan_ctx *c = p;
	for (int f = 0; f < 2; f++) /* both were handed an item: woken, done */
		if (poll_recv(&c->r[f], &c->w[f]) == 0)
			took_all(c, f, &c->r[f], c->mem.buf[f]);
	settle_and_check(c, 2);
}

/* Two threads: explored within the bounds of model_common.h. */
static const sb_model_scenario pairs[] = {
	{ "channel: a direct handoff to a waiting receiver racing its cancel (capacity 1)", 2,
	  sizeof(chan_ctx), hand1_setup, { hand_t0, hand_t1 }, cancel_raced_check },
	{ "channel: a direct handoff to a waiting receiver racing its cancel (capacity 0)", 2,
	  sizeof(chan_ctx), hand0_setup, { hand_t0, hand_t1 }, cancel_raced_check },
	{ "channel: a rendezvous send's cancel racing a receive future", 2,
	  sizeof(chan_ctx), rsc_setup, { cancel_send_t, rsc_t1 }, cancel_raced_check },
	{ "channel: force_send racing two receives, a sender waiting (capacity 1)", 2,
	  sizeof(chan_ctx), force_setup, { force_t, force_t1 }, force_check },
	{ "channel: a receive-many future racing try_send_many (capacity 1)", 2,
	  sizeof(chan_ctx), cap1_setup, { many_t0, many_t1 }, check_into_0 },
	{ "channel: a waiting sender moved into the ring racing its cancel", 2,
	  sizeof(chan_ctx), sender_waits_setup, { cancel_send_t, move_t1 }, cancel_raced_check },
	{ "channel: close racing a rendezvous send's re-poll with a new waker", 2,
	  sizeof(chan_ctx), srp_setup, { close_t, srp_t1 }, srp_check },
	{ "channel: an inline send racing a receiver that queues (capacity 1)", 2,
	  sizeof(chan_ctx), cap1_setup, { lw_t0, lw_t1 }, check_into_0 },
	{ "channel: an inline receive racing a sender that queues (capacity 1)", 2,
	  sizeof(chan_ctx), one_in_ring_setup, { lr_t0, lr_t1 }, check_into_1 },
	{ "channel: an inline send racing a receive that moves a waiting sender in", 2,
	  sizeof(chan_ctx), sender_waits_setup, { nb_t0, send_b_t }, nb_check },
	{ "channel: inline sends racing close (capacity 2)", 2,
	  sizeof(chan_ctx), cl_setup, { cl_t0, cl_t1 }, check_into_0 },
	{ "channel: force_send racing inline receives (capacity 1)", 2,
	  sizeof(chan_ctx), one_in_ring_setup, { force_t, fr_t1 }, check_into_2 },
	{ "channel: try_send_many racing an inline send (capacity 2)", 2,
	  sizeof(chan_ctx), cap2_setup, { send_batch_t, bs_t1 }, check_into_0 },
	{ "channel: a batch send's flush and push racing len and an inline send", 2,
	  sizeof(chan_ctx), fl_setup, { send_batch_t, fl_t1 }, fl_check },
};

/* Three threads: one preemption and one stale read fewer (see main). */
static const sb_model_scenario trios[] = {
	{ "channel: a send future on a full ring racing two try_recvs and close (capacity 1)",
	  3, sizeof(chan_ctx), full_setup, { full_t0, full_t1, close_t }, full_check },
	{ "channel: a rendezvous receive future racing try_send and close (capacity 0)", 3,
	  sizeof(chan_ctx), rdv_setup, { rdv_t0, rdv_t1, close_t }, check_into_0 },
	{ "channel: close racing a receive's re-poll with a new waker and a try_send", 3,
	  sizeof(chan_ctx), rrp_setup, { close_t, rrp_t1, rrp_t2 }, rrp_check },
};

/*
 * Under sequential consistency when stale_reads < 0, else the weak model:
 * the pairs within the given bounds, the trios within one preemption and
 * one stale read fewer (SB_MODEL_TRIO_PREEMPTIONS and
 * SB_MODEL_TRIO_STALE_READS override those, to explore further by hand).
 */
static int bound_from_env(const char *name, int fallback)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : fallback;
}

static void explore_all(int preemptions, int stale_reads)
{
	printf("over %s\n", kind->name);
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

/* Each test runs over the kind of channel its state names. */
static void every_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	kind = *state;
	explore_all(PREEMPTIONS, -1);
}

static void every_scenario_holds_over_random_schedules(void **state)
{
	kind = *state;
	random_all(-1);
}

static void every_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	kind = *state;
	explore_all(WEAK_PREEMPTIONS, STALE_READS);
}

static void every_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	kind = *state;
	random_all(WEAK_RANDOM_STALE_READS);
}

/* A test named `name` running `f` over channels of kind `k`. */
static struct CMUnitTest over(const char *name, CMUnitTestFunction f, channel_kind *k)
{
	return (struct CMUnitTest){ .name = name, .test_func = f, .initial_state = k };
}

/* test_model_channel [RUN-PATTERN]: cmocka's test name filter ('every_ring*': the stamped rings). */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		over("every_channel_scenario_holds_over_all_schedules_with_four_preemptions",
		     every_scenario_holds_over_all_schedules_with_four_preemptions, &lock_channel),
		over("every_channel_scenario_holds_over_random_schedules",
		     every_scenario_holds_over_random_schedules, &lock_channel),
		over("every_channel_scenario_holds_under_the_weak_model_with_bounded_stale_reads",
		     every_scenario_holds_under_the_weak_model_with_bounded_stale_reads,
		     &lock_channel),
		over("every_channel_scenario_holds_over_random_schedules_under_the_weak_model",
		     every_scenario_holds_over_random_schedules_under_the_weak_model, &lock_channel),
		over("every_ring_scenario_holds_over_all_schedules_with_four_preemptions",
		     every_scenario_holds_over_all_schedules_with_four_preemptions, &ring_channel),
		over("every_ring_scenario_holds_over_random_schedules",
		     every_scenario_holds_over_random_schedules, &ring_channel),
		over("every_ring_scenario_holds_under_the_weak_model_with_bounded_stale_reads",
		     every_scenario_holds_under_the_weak_model_with_bounded_stale_reads,
		     &ring_channel),
		over("every_ring_scenario_holds_over_random_schedules_under_the_weak_model",
		     every_scenario_holds_over_random_schedules_under_the_weak_model, &ring_channel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
