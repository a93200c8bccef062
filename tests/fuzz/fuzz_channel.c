/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_channel - model-based fuzzing of sb_channel, the bounded MPMC channel
 * (see fuzz_common.h).  Slots hold send or receive futures.  Their cancel
 * returns what happened (0: the operation had completed; -ECANCELED: it had
 * not), and a poll after cancel returns the same, so the lifecycle steps are
 * this file's own; they share fuzz_lifecycle.h's slots, queues and bulk
 * operations.
 *
 * Every item carries a unique sequence number (its first 8 bytes, the rest
 * a pattern derived from it), and every receive's memory is compared with
 * the items the model says it took - and the bytes past them must be
 * untouched - so a lost, doubled, reordered or torn item shows at once.
 *
 * Reference model (include/syncband/channel.h):
 *   ring      the items in the slots, oldest first (at most capacity C)
 *   sendq     the waiting send futures, oldest first: only while the ring
 *             is full (at C = 0: always) and no receiver waits
 *   recvq     the waiting receive futures, oldest first: only while the
 *             ring is empty and no sender waits
 *   closed    close() was called
 *   send(item)    to the oldest waiting receiver (which completes with it,
 *                 woken, count 1), else into the ring if it has room, else
 *                 it does not fit
 *   send_many(k)  in order: to waiting receivers first, each taking as many
 *                 as it asked for (up to its n) and completing, then into
 *                 the ring while it has room; "how many fit"
 *   receive(n)    up to n of the oldest items: from the ring, then (the ring
 *                 empty: C = 0) straight from the oldest waiting senders;
 *                 then the slots it freed are refilled from the waiting
 *                 senders, oldest first; every sender whose item was taken
 *                 completes with 0 (woken)
 *   try_send      -EINVAL (NULL), -EPIPE (closed), 0 (sent), -EAGAIN
 *   try_send_many -EINVAL (NULL, n > INT_MAX), 0 (n = 0), -EPIPE, how
 *                 many were sent (>= 1), -EAGAIN (none)
 *   force_send    -EINVAL (NULL), -EPIPE, 0 (sent), else C = 0: -EAGAIN,
 *                 else the oldest ring item is evicted into the caller's
 *                 buffer and the new one goes to the back: 1
 *   try_recv(_many)  -EINVAL (NULL, n = 0, n > INT_MAX), else receive(n):
 *                 how many (try_recv: 0), else closed: -EPIPE, else -EAGAIN
 *   send first poll  -EINVAL (NULL item), -EPIPE (closed), 0 (sent), else
 *                 queue in sendq, SB_PENDING
 *   recv first poll  -EINVAL (NULL items, n = 0, n > INT_MAX), 0 (received
 *                 something), -EPIPE (closed and drained), else queue in
 *                 recvq, SB_PENDING
 *   later poll    SB_PENDING while queued (waker replacement); the result
 *                 once completed, and again on every later poll
 *   cancel        idle or queued: -ECANCELED (a queued one leaves its queue,
 *                 its waker dropped; nothing else changes); completed: its
 *                 result (0: the operation happened, the items are the
 *                 caller's; -EPIPE; -EINVAL); a poll after cancel and a
 *                 second cancel return the same
 *   recv_count    the items taken, once a poll or cancel returned 0; else 0
 *   close         every waiting sender completes with -EPIPE (item not
 *                 taken), every waiting receiver with -EPIPE (woken); the
 *                 ring stays receivable; idempotent
 *   blocking(0)   send: -EPIPE, 0 (sent), else -ETIMEDOUT (not taken);
 *                 recv: 0 (received one), -EPIPE, else -ETIMEDOUT
 *   destroy       -EBUSY while futures wait (and the channel keeps working);
 *                 else 0, the ring's items abandoned (not tried while a
 *                 completed future is unobserved: its poll or cancel may
 *                 still read the channel)
 *   queries       len = ring length, capacity = C, is_closed = closed
 * Argument errors (-EINVAL) are expected before -EPIPE: they are the
 * caller's mistakes whatever the channel's state.
 *
 * Input: two header bytes (init kind, storage, item size, bit 4: a stamped
 * ring; capacity), then a
 * sequence of operations, one opcode byte (see `ops` below) and its
 * argument bytes each.  tests/fuzz/make_seeds.py writes the seed corpus.
 */
#include <limits.h>

#include "fuzz_lifecycle.h"

enum { K_SEND, K_RECV };

/* The largest buffer a receive future or try_recv_many gets: enough for
 * every item that can be available at once (C + every slot a sender). */
#define MAXBUF 48
/* Where the items of a future start in its allocation. */
#define FUT_HDR 64
/* Untouched memory. */
#define POISON 0xa5

_Static_assert(sizeof(sb_channel_send) <= FUT_HDR && sizeof(sb_channel_recv) <= FUT_HDR,
	       "a future fits before its items");
_Static_assert(4 + FZ_NALL <= MAXBUF, "a buffer holds every available item");

static const size_t item_sizes[4] = { 8, 16, 12, 40 };

/* Each slot's operation, beside its lifecycle (fz_slots). */
static struct {
	int kind;
	bool null_items;   /* NULL item pointer: -EINVAL at the first poll */
	size_t n;          /* recv: the most items asked for */
	size_t bufn;       /* items its buffer holds */
	uint64_t seq;      /* send: its item */
	uint64_t got[MAXBUF]; /* recv: the items the model gave it */
	size_t got_n;
	unsigned char *items;
} A[FZ_NALL];

static sb_channel *ch;
static void *storage;

static struct {
	size_t cap;
	size_t isz;
	bool closed;
	uint64_t ring[4];
	size_t rlen;
	fz_queue sq; /* waiting senders */
	fz_queue rq; /* waiting receivers */
	uint64_t next_seq;
} M;

/* ------------------------------------------------------------- items */

static void item_fill(unsigned char *p, uint64_t seq)
{
	memcpy(p, &seq, sizeof seq);
	for (size_t i = sizeof seq; i < M.isz; i++)
		p[i] = (unsigned char)(seq * 131 + i);
}

static uint64_t item_seq(const unsigned char *p)
{
	uint64_t seq;
	memcpy(&seq, p, sizeof seq);
	return seq;
}

FZ_NOCOV static bool item_is(const unsigned char *p, uint64_t seq)
{
	if (item_seq(p) != seq)
		return false;
	for (size_t i = sizeof seq; i < M.isz; i++)
		if (p[i] != (unsigned char)(seq * 131 + i))
			return false;
	return true;
}

FZ_NOCOV static bool untouched(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != POISON)
			return false;
	return true;
}

/* The name of the memory checked: a call's buffer, or (slot >= 0) a
 * receive future's (formatted only on failure: this runs every step). */
FZ_NOCOV static const char *mem_name(const char *what, int slot)
{
	static char b[64];
	if (slot < 0)
		return what;
	snprintf(b, sizeof b, "recv slot %d's memory", slot);
	return b;
}

/* `buf` (bufn items) holds exactly `got` and nothing past them. */
FZ_NOCOV static void check_items_of(const char *what, int slot, const unsigned char *buf,
				    size_t bufn, const uint64_t *got, size_t got_n)
{
	FZ_ASSERT_MODEL(got_n <= bufn);
	for (size_t i = 0; i < got_n; i++) {
		const unsigned char *p = buf + i * M.isz;
		if (!item_is(p, got[i])) {
			fz_fail("%s: item %zu is #%llu%s, expected #%llu", mem_name(what, slot), i,
				(unsigned long long)item_seq(p),
				item_seq(p) == got[i] ? " (torn)" : "",
				(unsigned long long)got[i]);
		}
	}
	for (size_t i = got_n; i < bufn; i++) {
		if (!untouched(buf + i * M.isz, M.isz)) {
			fz_fail("%s: item %zu written (#%llu), but only %zu item(s) were received",
				mem_name(what, slot), i, (unsigned long long)item_seq(buf + i * M.isz), got_n);
		}
	}
}

#define check_items(what, buf, bufn, got, got_n) check_items_of(what, -1, buf, bufn, got, got_n)

/* A result: counts as numbers (1 is not SB_PENDING here), errors by name. */
static const char *rname(long long r, bool count)
{
	static char buf[4][24];
	static unsigned k;
	if (!count || r < 0)
		return fz_res_name(r);
	char *b = buf[k++ & 3];
	snprintf(b, 24, "%lld", r);
	return b;
}

/* A call that returns a count (or a negative errno). */
#define EXPECT_N(what, expected, actual)                                                   \
	do {                                                                               \
		long long e_ = (expected), a_ = (actual);                                  \
		if (e_ != a_)                                                              \
			fz_fail("%s returned %s, expected %s (%s:%d)", (what),             \
				rname(a_, true), rname(e_, true), __FILE__, __LINE__);     \
	} while (0)

/* Appends to the current step's line (and prints it when tracing). */
__attribute__((format(printf, 1, 2))) FZ_NOCOV static void step_note(const char *fmt, ...)
{
	char *line = fz_hist[(fz_steps - 1) % FZ_HIST];
	size_t len = strlen(line);
	va_list ap;
	va_start(ap, fmt);
	if (len < FZ_LINE)
		vsnprintf(line + len, FZ_LINE - len, fmt, ap);
	va_end(ap);
	if (fz_trace)
		fprintf(stderr, "         %s\n", line + len);
}

FZ_NOCOV static void note_items(const char *pre, const uint64_t *seq, size_t n)
{
	char b[FZ_LINE];
	size_t len = 0;
	b[0] = 0;
	for (size_t i = 0; i < n && len < sizeof b - 24; i++)
		len += (size_t)snprintf(b + len, sizeof b - len, " #%llu", (unsigned long long)seq[i]);
	step_note("%s%s", pre, n ? b : " nothing");
}

/* ------------------------------------------------------------- the model */

static void ring_push(uint64_t seq)
{
	FZ_ASSERT_MODEL(M.rlen < M.cap);
	M.ring[M.rlen++] = seq;
}

static uint64_t ring_pop(void)
{
	FZ_ASSERT_MODEL(M.rlen > 0);
	uint64_t seq = M.ring[0];
	memmove(&M.ring[0], &M.ring[1], (M.rlen - 1) * sizeof M.ring[0]);
	M.rlen--;
	return seq;
}

/* The oldest waiting receiver takes up to `k` of `seqs` and completes;
 * returns how many it took. */
static size_t m_hand_to_receiver(const uint64_t *seqs, size_t k)
{
	int h = fz_q_pop(&M.rq);
	size_t take = k < A[h].n ? k : A[h].n;
	FZ_ASSERT_MODEL(take <= A[h].bufn);
	memcpy(A[h].got, seqs, take * sizeof seqs[0]);
	A[h].got_n = take;
	fz_complete(h, 0);
	return take;
}

/* Sends up to k items without waiting; returns how many went. */
static size_t m_send(const uint64_t *seqs, size_t k)
{
	size_t sent = 0;
	while (sent < k && M.rq.len > 0)
		sent += m_hand_to_receiver(seqs + sent, k - sent);
	while (sent < k && M.rlen < M.cap)
		ring_push(seqs[sent++]);
	return sent;
}

/* Receives up to n of the oldest items into out[]; returns how many. */
static size_t m_recv(size_t n, uint64_t *out)
{
	size_t got = 0;
	while (got < n) {
		if (M.rlen > 0) {
			out[got++] = ring_pop();
		} else if (M.sq.len > 0) {
			int h = fz_q_pop(&M.sq);
			out[got++] = A[h].seq;
			fz_complete(h, 0);
		} else {
			break;
		}
	}
	while (M.rlen < M.cap && M.sq.len > 0) {
		int h = fz_q_pop(&M.sq);
		ring_push(A[h].seq);
		fz_complete(h, 0);
	}
	return got;
}

FZ_NOCOV static void check_slots(void)
{
	for (int s = 0; s < FZ_NALL; s++) {
		const fz_slot *x = &fz_slots[s];
		if (x->st == FS_UNUSED || A[s].null_items)
			continue;
		if (A[s].kind == K_SEND) {
			if (!item_is(A[s].items, A[s].seq))
				fz_fail("send slot %d's item (the caller's) changed to #%llu", s,
					(unsigned long long)item_seq(A[s].items));
			continue;
		}
		bool got = (x->st == FS_DETACHED || x->st == FS_DONE || x->st == FS_CANCELLED) &&
			   x->result == 0;
		check_items_of(NULL, s, A[s].items, A[s].bufn, A[s].got, got ? A[s].got_n : 0);
	}
}

/* recv_count of every receive future. */
FZ_NOCOV static void check_counts(void)
{
	for (int s = 0; s < FZ_NALL; s++) {
		const fz_slot *x = &fz_slots[s];
		if (x->st == FS_UNUSED || A[s].kind != K_RECV)
			continue;
		bool returned0 = (x->st == FS_DONE || x->st == FS_CANCELLED) && x->result == 0;
		size_t exp = returned0 ? A[s].got_n : 0, r = sb_channel_recv_count(x->f);
		if (r != exp)
			fz_fail("sb_channel_recv_count(slot %d): expected %zu, got %zu", s, exp, r);
	}
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(M.rq.len == 0 || (M.rlen == 0 && M.sq.len == 0));
	FZ_ASSERT_MODEL(M.sq.len == 0 || M.rlen == M.cap);
	FZ_ASSERT_MODEL((M.sq.len == 0 && M.rq.len == 0) || !M.closed);
	FZ_EXPECT_SIZE("sb_channel_len", M.rlen, sb_channel_len(ch));
	FZ_EXPECT_SIZE("sb_channel_capacity", M.cap, sb_channel_capacity(ch));
	FZ_EXPECT("sb_channel_is_closed", M.closed, sb_channel_is_closed(ch));
	check_slots();
	check_counts();
}

/* ------------------------------------------------------- the futures */

static const char *describe(int s)
{
	static char buf[4][48];
	static unsigned k;
	char *b = buf[k++ & 3];
	if (A[s].kind == K_SEND) {
		if (A[s].null_items)
			snprintf(b, 48, " [send NULL]");
		else
			snprintf(b, 48, " [send #%llu]", (unsigned long long)A[s].seq);
	} else if (A[s].null_items) {
		snprintf(b, 48, " [recv NULL]");
	} else if (A[s].n > MAXBUF) {
		snprintf(b, 48, " [recv n=%s]", A[s].n == INT_MAX ? "INT_MAX" :
			 A[s].n == (size_t)INT_MAX + 1 ? "INT_MAX+1" : "SIZE_MAX");
	} else {
		snprintf(b, 48, " [recv n=%zu]", A[s].n);
	}
	return b;
}

static const char *fname(int s)
{
	return A[s].kind == K_SEND ? "send" : "recv";
}

static bool slot_busy(int s)
{
	return fz_slots[s].st == FS_QUEUED;
}

static void op_cancel(int s, bool free_it);

/* recv sizes: 1..5 (n = 1 through recv_init or recv_many_init), else the
 * edges: 0, INT_MAX (a buffer of MAXBUF), INT_MAX + 1, SIZE_MAX, NULL. */
static void set_recv(int s, uint8_t b, bool *use_init)
{
	A[s].null_items = false;
	A[s].bufn = 1;
	*use_init = false;
	if (b < 250) {
		A[s].n = A[s].bufn = 1 + b % 5;
		*use_init = A[s].n == 1 && (b / 5) % 2 == 0;
		return;
	}
	switch (b) {
	case 250: A[s].n = 0; break;
	case 251: A[s].n = INT_MAX; A[s].bufn = MAXBUF; break;
	case 252: A[s].n = (size_t)INT_MAX + 1; break;
	case 253: A[s].n = SIZE_MAX; break;
	case 254: A[s].n = 1; A[s].null_items = true; break;
	default: A[s].n = 3; A[s].bufn = 3; break;
	}
}

/* A fresh future in slot s: a send of a fresh item, or a receive (b: its
 * size, see set_recv; for a send 255 means a NULL item). */
static void slot_init(int s, int kind, uint8_t b)
{
	if (slot_busy(s))
		op_cancel(s, true);
	fz_slot *x = &fz_slots[s];
	A[s].kind = kind;
	A[s].got_n = 0;
	bool use_init = false;
	if (kind == K_SEND) {
		A[s].null_items = b == 255;
		A[s].n = A[s].bufn = 1;
		A[s].seq = ++M.next_seq;
	} else {
		set_recv(s, b, &use_init);
	}
	fz_step_begin("%s_init(slot %d%s)", fname(s), s, describe(s));
	free(x->f);
	x->f = fz_xmalloc(FUT_HDR + A[s].bufn * M.isz);
	A[s].items = (unsigned char *)x->f + FUT_HDR;
	memset(A[s].items, POISON, A[s].bufn * M.isz);
	if (kind == K_SEND) {
		if (!A[s].null_items)
			item_fill(A[s].items, A[s].seq);
		sb_channel_send_init(x->f, ch, A[s].null_items ? NULL : A[s].items);
	} else if (use_init) {
		sb_channel_recv_init(x->f, ch, A[s].items);
	} else {
		sb_channel_recv_many_init(x->f, ch, A[s].null_items ? NULL : A[s].items, A[s].n);
	}
	x->st = FS_IDLE;
	x->result = 0;
	step_end();
}

static int send_first_poll(int s)
{
	if (A[s].null_items)
		return -EINVAL;
	if (M.closed)
		return -EPIPE;
	if (m_send(&A[s].seq, 1) == 1)
		return 0;
	fz_q_push(&M.sq, s);
	return SB_PENDING;
}

static int recv_first_poll(int s)
{
	if (A[s].null_items || A[s].n == 0 || A[s].n > INT_MAX)
		return -EINVAL;
	size_t got = m_recv(A[s].n, A[s].got);
	FZ_ASSERT_MODEL(got <= A[s].bufn);
	if (got > 0) {
		A[s].got_n = got;
		note_items(" takes", A[s].got, got);
		return 0;
	}
	if (M.closed)
		return -EPIPE;
	fz_q_push(&M.rq, s);
	return SB_PENDING;
}

static void op_poll(int s, fz_wid w)
{
	fz_slot *x = &fz_slots[s];
	if (x->st == FS_UNUSED)
		return;
	/* Odd steps poll through sb_future_ops, even ones through the inline
	 * function. */
	bool via_ops = fz_steps & 1;
	fz_step_begin("%s_poll(slot %d%s, waker %s)%s", fname(s), s, describe(s), fz_wname(w),
		      via_ops ? " via ops" : "");
	int exp;
	switch (x->st) {
	case FS_IDLE:
		exp = A[s].kind == K_SEND ? send_first_poll(s) : recv_first_poll(s);
		if (exp == SB_PENDING) {
			fz_register(s, w);
			x->st = FS_QUEUED;
		} else {
			x->st = FS_DONE;
			x->result = exp;
		}
		break;
	case FS_QUEUED:
		fz_reregister(s, w);
		exp = SB_PENDING;
		break;
	case FS_DETACHED:
		x->st = FS_DONE;
		exp = x->result;
		break;
	default: /* FS_DONE, FS_CANCELLED: what it returned */
		exp = x->result;
		break;
	}
	step_note(" -> %s", fz_res_name(exp));
	sb_waker wk = fz_waker(w);
	int r;
	if (A[s].kind == K_SEND)
		r = via_ops ? sb_channel_send_ops.poll(x->f, &wk) : sb_channel_send_poll(x->f, &wk);
	else
		r = via_ops ? sb_channel_recv_ops.poll(x->f, &wk) : sb_channel_recv_poll(x->f, &wk);
	FZ_EXPECT_RES(A[s].kind == K_SEND ? "sb_channel_send_poll" : "sb_channel_recv_poll", exp, r);
	step_end();
}

static void op_cancel(int s, bool free_it)
{
	fz_slot *x = &fz_slots[s];
	if (x->st == FS_UNUSED)
		return;
	fz_step_begin("%s_cancel(slot %d%s)%s", fname(s), s, describe(s), free_it ? " + free" : "");
	int exp;
	switch (x->st) {
	case FS_IDLE:
		exp = -ECANCELED;
		break;
	case FS_QUEUED:
		fz_q_remove(A[s].kind == K_SEND ? &M.sq : &M.rq, s);
		fz_drop_registered(s);
		exp = -ECANCELED;
		break;
	default: /* FS_DETACHED, FS_DONE, FS_CANCELLED: what it completed with */
		exp = x->result;
		break;
	}
	x->st = FS_CANCELLED;
	x->result = exp;
	step_note(" -> %s", fz_res_name(exp));
	int r = A[s].kind == K_SEND ? sb_channel_send_cancel(x->f) : sb_channel_recv_cancel(x->f);
	FZ_EXPECT_RES(A[s].kind == K_SEND ? "sb_channel_send_cancel" : "sb_channel_recv_cancel",
		      exp, r);
	step_end(); /* the memory is checked while it is still there */
	if (free_it) {
		free(x->f);
		x->f = NULL;
		x->st = FS_UNUSED;
	}
}

/* The crowd: v & 1 a send, else a receive of 1 + (v >> 1) % 4. */
static void op_crowd_init(int s, uint8_t v)
{
	slot_init(s, (v & 1) ? K_SEND : K_RECV, (uint8_t)((v >> 1) % 4));
}

static const fz_slot_ops slot_ops = { NULL, slot_busy, op_crowd_init, op_poll, op_cancel };

/* ---------------------------------------------------------------- the ops */

static void op_try_send(void)
{
	unsigned char *item = fz_xmalloc(M.isz);
	uint64_t seq = ++M.next_seq;
	item_fill(item, seq);
	fz_step_begin("try_send(#%llu)", (unsigned long long)seq);
	int exp = M.closed ? -EPIPE : m_send(&seq, 1) == 1 ? 0 : -EAGAIN;
	step_note(" -> %s", fz_res_name(exp));
	FZ_EXPECT_RES("sb_channel_try_send", exp, sb_channel_try_send(ch, item));
	if (!item_is(item, seq))
		fz_fail("try_send changed the caller's item");
	free(item);
	step_end();
}

static void op_try_send_many(size_t k)
{
	unsigned char *items = fz_xmalloc(k ? k * M.isz : 1);
	uint64_t seqs[MAXBUF];
	FZ_ASSERT_MODEL(k <= MAXBUF);
	for (size_t i = 0; i < k; i++) {
		seqs[i] = ++M.next_seq;
		item_fill(items + i * M.isz, seqs[i]);
	}
	fz_step_begin("try_send_many(%zu from #%llu)", k, (unsigned long long)(M.next_seq + 1 - k));
	int exp;
	if (k == 0)
		exp = 0;
	else if (M.closed)
		exp = -EPIPE;
	else {
		size_t sent = m_send(seqs, k);
		exp = sent ? (int)sent : -EAGAIN;
	}
	step_note(" -> %s", rname(exp, true));
	EXPECT_N("sb_channel_try_send_many", exp, sb_channel_try_send_many(ch, items, k));
	for (size_t i = 0; i < k; i++)
		if (!item_is(items + i * M.isz, seqs[i]))
			fz_fail("try_send_many changed the caller's item %zu", i);
	free(items);
	step_end();
}

static void op_force_send(void)
{
	unsigned char *item = fz_xmalloc(M.isz);
	unsigned char *evicted = fz_xmalloc(M.isz);
	memset(evicted, POISON, M.isz);
	uint64_t seq = ++M.next_seq;
	item_fill(item, seq);
	fz_step_begin("force_send(#%llu)", (unsigned long long)seq);
	int exp;
	uint64_t out = 0;
	if (M.closed)
		exp = -EPIPE;
	else if (m_send(&seq, 1) == 1)
		exp = 0;
	else if (M.cap == 0)
		exp = -EAGAIN;
	else {
		out = ring_pop();
		ring_push(seq);
		exp = 1;
	}
	step_note(" -> %s", rname(exp, true));
	if (exp == 1)
		note_items(" evicts", &out, 1);
	EXPECT_N("sb_channel_force_send", exp, sb_channel_force_send(ch, item, evicted));
	check_items("force_send's evicted buffer", evicted, 1, &out, exp == 1);
	if (!item_is(item, seq))
		fz_fail("force_send changed the caller's item");
	free(item);
	free(evicted);
	step_end();
}

/* try_recv (n = 0) or try_recv_many(n). */
static void op_try_recv(size_t n, bool many)
{
	size_t bufn = n > MAXBUF ? MAXBUF : n;
	unsigned char *buf = fz_xmalloc(bufn * M.isz);
	memset(buf, POISON, bufn * M.isz);
	if (many)
		fz_step_begin("try_recv_many(n=%s)", n == INT_MAX ? "INT_MAX" : fz_res_name((long long)n));
	else
		fz_step_begin("try_recv()");
	uint64_t got[MAXBUF];
	size_t k = m_recv(n, got);
	FZ_ASSERT_MODEL(k <= bufn);
	int exp = k ? (many ? (int)k : 0) : M.closed ? -EPIPE : -EAGAIN;
	step_note(" -> %s", rname(exp, many));
	if (k)
		note_items(" takes", got, k);
	int r = many ? sb_channel_try_recv_many(ch, buf, n) : sb_channel_try_recv(ch, buf);
	EXPECT_N(many ? "sb_channel_try_recv_many" : "sb_channel_try_recv", exp, r);
	check_items(many ? "try_recv_many's buffer" : "try_recv's buffer", buf, bufn, got, k);
	free(buf);
	step_end();
}

/* The zero-timeout blocking waits: one try, then -ETIMEDOUT. */
static void op_blocking(bool send)
{
	unsigned char *item = fz_xmalloc(M.isz);
	memset(item, POISON, M.isz);
	uint64_t seq = 0;
	int exp;
	if (send) {
		seq = ++M.next_seq;
		item_fill(item, seq);
		fz_step_begin("send_blocking(#%llu, 0)", (unsigned long long)seq);
		exp = M.closed ? -EPIPE : m_send(&seq, 1) == 1 ? 0 : -ETIMEDOUT;
		step_note(" -> %s", fz_res_name(exp));
		FZ_EXPECT_RES("sb_channel_send_blocking", exp, sb_channel_send_blocking(ch, item, 0));
		if (!item_is(item, seq))
			fz_fail("send_blocking changed the caller's item");
	} else {
		fz_step_begin("recv_blocking(0)");
		size_t k = m_recv(1, &seq);
		exp = k ? 0 : M.closed ? -EPIPE : -ETIMEDOUT;
		step_note(" -> %s", fz_res_name(exp));
		if (k)
			note_items(" takes", &seq, k);
		FZ_EXPECT_RES("sb_channel_recv_blocking", exp, sb_channel_recv_blocking(ch, item, 0));
		check_items("recv_blocking's buffer", item, 1, &seq, k);
	}
	free(item);
	step_end();
}

static void op_close(void)
{
	fz_step_begin("close()%s", M.closed ? " again" : "");
	M.closed = true;
	while (M.sq.len > 0)
		fz_complete(fz_q_pop(&M.sq), -EPIPE);
	while (M.rq.len > 0)
		fz_complete(fz_q_pop(&M.rq), -EPIPE);
	sb_channel_close(ch);
	step_end();
}

/* Every call here is refused with -EINVAL and changes nothing. */
static void op_bad(uint8_t a)
{
	unsigned char *buf = fz_xmalloc(M.isz);
	memset(buf, POISON, M.isz);
	item_fill(buf, 0);
	sb_waker wk = fz_waker((fz_wid){ 0, FZ_SHARED2 });
	int r = 0;
	const char *what = "";
	switch (a % 13) {
	case 0:
		fz_step_begin("try_send(NULL)");
		r = sb_channel_try_send(ch, NULL), what = "sb_channel_try_send";
		break;
	case 1:
		fz_step_begin("try_recv(NULL)");
		r = sb_channel_try_recv(ch, NULL), what = "sb_channel_try_recv";
		break;
	case 2:
		fz_step_begin("try_send_many(NULL, 1)");
		r = sb_channel_try_send_many(ch, NULL, 1), what = "sb_channel_try_send_many";
		break;
	case 3:
		fz_step_begin("try_send_many(item, INT_MAX+1)");
		r = sb_channel_try_send_many(ch, buf, (size_t)INT_MAX + 1),
		what = "sb_channel_try_send_many";
		break;
	case 4:
		fz_step_begin("try_recv_many(buf, 0)");
		r = sb_channel_try_recv_many(ch, buf, 0), what = "sb_channel_try_recv_many";
		break;
	case 5:
		fz_step_begin("try_recv_many(buf, SIZE_MAX)");
		r = sb_channel_try_recv_many(ch, buf, SIZE_MAX), what = "sb_channel_try_recv_many";
		break;
	case 6:
		fz_step_begin("try_recv_many(NULL, 1)");
		r = sb_channel_try_recv_many(ch, NULL, 1), what = "sb_channel_try_recv_many";
		break;
	case 7:
		fz_step_begin("force_send(NULL, evicted)");
		r = sb_channel_force_send(ch, NULL, buf), what = "sb_channel_force_send";
		break;
	case 8:
		fz_step_begin("send_blocking(NULL, 0)");
		r = sb_channel_send_blocking(ch, NULL, 0), what = "sb_channel_send_blocking";
		break;
	case 9:
		fz_step_begin("recv_blocking(NULL, 0)");
		r = sb_channel_recv_blocking(ch, NULL, 0), what = "sb_channel_recv_blocking";
		break;
	case 10: {
		fz_step_begin("send_poll(zeroed future)");
		sb_channel_send *f = calloc(1, sizeof *f);
		r = sb_channel_send_poll(f, &wk), what = "sb_channel_send_poll";
		free(f);
		break;
	}
	case 11: {
		fz_step_begin("recv_poll(zeroed future)");
		sb_channel_recv *f = calloc(1, sizeof *f);
		r = sb_channel_recv_poll(f, &wk), what = "sb_channel_recv_poll";
		free(f);
		break;
	}
	default:
		fz_step_begin("try_recv_many(buf, INT_MAX+1)");
		r = sb_channel_try_recv_many(ch, buf, (size_t)INT_MAX + 1),
		what = "sb_channel_try_recv_many";
		break;
	}
	FZ_EXPECT_RES(what, -EINVAL, r);
	if (!item_is(buf, 0))
		fz_fail("%s wrote into the caller's memory", what);
	free(buf);
	step_end();
}

/* init()'s refusals (and two acceptances at the edges), on a channel of
 * their own. */
static void op_init_errors(uint8_t a)
{
	static const struct {
		const char *name;
		size_t isz, cap, offset;
		bool null;
		int exp;
	} cases[] = {
		{ "item_size 0", 0, 1, 0, false, -EINVAL },
		{ "capacity MAX+1", 8, (size_t)SB_CHANNEL_MAX_CAPACITY + 1, 0, false, -EINVAL },
		{ "NULL storage, capacity 1", 8, 1, 0, true, -EINVAL },
		{ "item_size 2 at an odd address", 2, 1, 1, false, -EINVAL },
		{ "item_size 8 at 4 mod 8", 8, 1, 4, false, -EINVAL },
		{ "item_size 16 at 8 mod 16", 16, 1, 8, false, -EINVAL },
		{ "item_size 48 at 8 mod 16", 48, 1, 8, false, -EINVAL },
		{ "item_size 12 at 4 mod 16", 12, 1, 4, false, 0 },
		{ "item_size 3 at an odd address", 3, 1, 1, false, 0 },
		{ "NULL storage, capacity 0", 24, 0, 0, true, 0 },
		{ "item_size 40 at 8 mod 16", 40, 1, 8, false, 0 },
#if SIZE_MAX > UINT32_MAX
		{ "item_size UINT32_MAX+1", (size_t)UINT32_MAX + 1, 0, 0, true, -EINVAL },
#endif
	};
	size_t i = a % (sizeof cases / sizeof cases[0]);
	fz_step_begin("another channel: init(%s)", cases[i].name);
	unsigned char *mem = fz_xmalloc(64 + 16);
	sb_channel *tmp = fz_xmalloc(sizeof *tmp);
	void *st = cases[i].null ? NULL : mem + cases[i].offset;
	FZ_EXPECT_RES("sb_channel_init", cases[i].exp, sb_channel_init(tmp, st, cases[i].isz, cases[i].cap));
	if (cases[i].exp == 0) {
		FZ_EXPECT_SIZE("sb_channel_capacity", cases[i].cap, sb_channel_capacity(tmp));
		FZ_EXPECT_SIZE("sb_channel_len", 0, sb_channel_len(tmp));
		FZ_EXPECT_RES("sb_channel_destroy", 0, sb_channel_destroy(tmp));
	}
	free(tmp);
	free(mem);
	step_end();
}

static void new_channel(uint8_t b0, size_t cap)
{
	M.isz = item_sizes[(b0 >> 2) & 3];
	M.cap = cap;
	M.closed = false;
	M.rlen = 0;
	M.sq.len = M.rq.len = 0;
	bool null_storage = cap == 0 && (b0 & 2);
	bool ring = b0 & 0x10;
	size_t bytes = ring ? SB_CHANNEL_RING_STORAGE_SIZE(M.isz, cap) : cap * M.isz;
	storage = null_storage ? NULL : fz_xmalloc(bytes);
	if (storage && ring && (b0 & 1))
		memset(storage, 0, bytes); /* the ring's static initialiser wants it zeroed */
	ch = fz_xmalloc(sizeof *ch);
	if (ring && (b0 & 1))
		*ch = (sb_channel)SB_CHANNEL_RING_INIT(storage, (uint32_t)M.isz, (uint32_t)cap);
	else if (ring)
		FZ_EXPECT_RES("sb_channel_init_ring", 0, sb_channel_init_ring(ch, storage, M.isz, cap));
	else if (b0 & 1)
		*ch = (sb_channel)SB_CHANNEL_INIT(storage, (uint32_t)M.isz, (uint32_t)cap);
	else
		FZ_EXPECT_RES("sb_channel_init", 0, sb_channel_init(ch, storage, M.isz, cap));
	fz_locks[0] = FZ_LOCKWORD(ch);
}

static const char *channel_name(uint8_t b0, size_t cap)
{
	static char b[96];
	snprintf(b, sizeof b, "%s(%s, item_size %zu, capacity %zu)",
		 (b0 & 0x10) ? ((b0 & 1) ? "SB_CHANNEL_RING_INIT" : "sb_channel_init_ring")
			     : ((b0 & 1) ? "SB_CHANNEL_INIT" : "sb_channel_init"),
		 cap == 0 && (b0 & 2) ? "NULL" : "storage", item_sizes[(b0 >> 2) & 3], cap);
	return b;
}

static void op_destroy(uint8_t a)
{
	if (M.sq.len > 0 || M.rq.len > 0) {
		fz_step_begin("destroy() while %d send(s), %d recv(s) wait", M.sq.len, M.rq.len);
		FZ_EXPECT_RES("sb_channel_destroy", -EBUSY, sb_channel_destroy(ch));
		step_end();
		return;
	}
	/* A completed future nobody observed may still read the channel when
	 * polled or cancelled; the caller must not destroy then. */
	if (fz_any_slot(FS_DETACHED))
		return;
	size_t cap = (a >> 4) % 5;
	fz_step_begin("destroy() (%zu item(s) abandoned), then %s", M.rlen, channel_name(a, cap));
	FZ_EXPECT_RES("sb_channel_destroy", 0, sb_channel_destroy(ch));
	fz_forget_slots();
	free(ch);
	free(storage);
	new_channel(a, cap);
	step_end();
}

/* ------------------------------------------------------------- the driver */

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_TRY_SEND, OP_TRY_RECV, OP_SEND_MANY, OP_RECV_MANY,
	OP_FORCE, OP_CLOSE, OP_DESTROY, OP_BLOCKING, OP_BAD, OP_CROWD,
};

/* opcode byte % 24 -> operation. */
static const uint8_t ops[24] = {
	OP_INIT, OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL,
	OP_TRY_SEND, OP_TRY_SEND, OP_TRY_RECV, OP_TRY_RECV, OP_SEND_MANY, OP_RECV_MANY,
	OP_FORCE, OP_CLOSE, OP_DESTROY, OP_BLOCKING, OP_BAD, OP_CROWD, OP_CANCEL_CROWD,
	OP_POLL_ALL, OP_TRY_SEND,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	fz_reset_slots();

	uint8_t b0 = fz_byte(&in);
	size_t cap = fz_byte(&in) % 5;
	fz_step_begin("channel %s", channel_name(b0, cap));
	new_channel(b0, cap);
	step_end();

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		int kind = ops[op % 24];
		switch (kind) {
		case OP_INIT: {
			uint8_t a = fz_byte(&in);
			slot_init(a % FZ_NSLOTS, (a & 8) ? K_SEND : K_RECV, fz_byte(&in));
			break;
		}
		case OP_TRY_SEND:
			op_try_send();
			break;
		case OP_TRY_RECV:
			op_try_recv(1, false);
			break;
		case OP_SEND_MANY: {
			/* 0..6 items, or 33..47: more receivers served than one
			 * wake batch holds */
			uint8_t v = fz_byte(&in);
			op_try_send_many(v >= 248 ? 33 + (size_t)(v - 248) * 2 : v % 7);
			break;
		}
		case OP_RECV_MANY: {
			uint8_t v = fz_byte(&in);
			op_try_recv(v >= 250 ? INT_MAX : 1 + v % 6, true);
			break;
		}
		case OP_FORCE:
			op_force_send();
			break;
		case OP_CLOSE:
			op_close();
			break;
		case OP_DESTROY:
			op_destroy(fz_byte(&in));
			break;
		case OP_BLOCKING:
			op_blocking(fz_byte(&in) & 1);
			break;
		case OP_BAD: {
			uint8_t a = fz_byte(&in);
			if (a & 0x80)
				op_init_errors(a & 0x7f);
			else
				op_bad(a);
			break;
		}
		case OP_CROWD: {
			uint8_t k = fz_byte(&in);
			uint8_t v = fz_byte(&in);
			fz_crowd(&slot_ops, 1 + k % FZ_NCROWD, v, fz_byte(&in));
			break;
		}
		default:
			fz_shared_op(&slot_ops, &in, kind);
			break;
		}
	}

	/* Cancel everything; nothing may stay registered.  Then the ring must
	 * hold exactly the model's items: drain it, close, and destroy. */
	fz_cancel_all(&slot_ops);
	FZ_ASSERT_MODEL(M.sq.len == 0 && M.rq.len == 0);
	while (M.rlen > 0)
		op_try_recv(2, true);
	op_try_recv(1, false);
	op_close();
	op_try_send();
	op_try_recv(1, false);
	fz_step_begin("final: destroy");
	FZ_EXPECT_RES("sb_channel_destroy", 0, sb_channel_destroy(ch));
	free(ch);
	free(storage);
	ch = NULL;
	storage = NULL;
	return 0;
}
