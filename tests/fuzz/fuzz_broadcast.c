/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_broadcast - model-based fuzzing of sb_broadcast (see fuzz_common.h).
 * Slots hold send or receive futures; receivers are the harness's own
 * array of sb_broadcast_receiver, subscribed and unsubscribed at will.
 *
 * Every item carries a unique id (its first 8 bytes, the rest a pattern
 * derived from it); every receive's memory is compared with the item the
 * model says it got, and must be untouched otherwise.
 *
 * Reference model (include/syncband/broadcast.h):
 *   pub       the ids published, by sequence number (the last capacity C)
 *   tail      the sequence number of the next item
 *   R[i]      subscribed, cursor, missed
 *   sendq     the waiting sends, oldest first (back-pressure only)
 *   recvq     the waiting receive futures; each publish (and close)
 *             releases them all: woken, they read when polled again
 *   room      lagging: always; back-pressure: no send waits and
 *             tail - (the smallest subscribed cursor, or tail) < C
 *   send      -EINVAL (NULL), -EPIPE (closed), room: published, 0, and
 *             the receives released; else -EAGAIN (a future queues)
 *   receive   -EINVAL (NULL item, unsubscribed); tail - cursor > C:
 *             -EOVERFLOW, missed = tail - C - cursor, cursor = tail - C;
 *             cursor == tail: -EPIPE when closed, else -EAGAIN (a future
 *             queues); else the item at cursor, cursor + 1, and then (back-
 *             pressure) waiting sends move in, oldest first, while there is
 *             room, each completing with 0 (woken)
 *   unsubscribe  -EINVAL (not subscribed), -EBUSY (a receive of it is
 *             pending), else gone, and waiting sends move in as above
 *   subscribe -EINVAL (subscribed), -EPIPE (closed), else cursor = tail
 *   close     waiting sends complete with -EPIPE; receives are released
 *   cancel    a queued send: -ECANCELED (dropped); a completed send: its
 *             result; a receive, queued or released: -ECANCELED (nothing
 *             taken; a released one's waker was spent)
 *   destroy   -EBUSY while anything is subscribed or waits; else 0
 *   queries   is_closed, capacity, subscribers, each receiver's unread
 * A receiver has at most one receive in flight (the contract): the driver
 * skips a first poll or a blocking receive that would make two.
 *
 * Input: two header bytes (init kind, item size, policy; capacity), then
 * operations, one opcode byte (see `ops` below) and their argument bytes.
 */
#include "fuzz_lifecycle.h"

enum { K_SEND, K_RECV };

#define NRX FZ_NALL /* receivers: 0..7 for the direct slots, one per crowd slot */
#define PUBRING 8   /* > the largest capacity */
#define FUT_HDR 64
#define POISON 0xa5

_Static_assert(sizeof(sb_broadcast_send) <= FUT_HDR && sizeof(sb_broadcast_recv) <= FUT_HDR,
	       "a future fits before its item");

static const size_t item_sizes[4] = { 8, 16, 12, 40 };

static struct {
	int kind;
	bool null_item;
	int rx;            /* recv: which receiver */
	bool released;     /* recv: woken by a publish or close, not yet polled */
	uint64_t id;       /* send: its item; recv: what it got */
	unsigned char *item;
} A[FZ_NALL];

static sb_broadcast *bc;
static void *storage;
static sb_broadcast_receiver *rxs; /* NRX of them, on the heap */

static struct {
	size_t cap, isz;
	bool bp, closed;
	uint64_t tail;
	uint64_t pub[PUBRING];
	struct {
		bool subscribed;
		uint64_t cursor, missed;
	} R[NRX];
	fz_queue sq, rq;
	uint64_t next_id;
} M;

/* ------------------------------------------------------------- items */

static void item_fill(unsigned char *p, uint64_t id)
{
	memcpy(p, &id, sizeof id);
	for (size_t i = sizeof id; i < M.isz; i++)
		p[i] = (unsigned char)(id * 131 + i);
}

static uint64_t item_id(const unsigned char *p)
{
	uint64_t id;
	memcpy(&id, p, sizeof id);
	return id;
}

FZ_NOCOV static bool item_is(const unsigned char *p, uint64_t id)
{
	if (item_id(p) != id)
		return false;
	for (size_t i = sizeof id; i < M.isz; i++)
		if (p[i] != (unsigned char)(id * 131 + i))
			return false;
	return true;
}

FZ_NOCOV static bool untouched(const unsigned char *p)
{
	for (size_t i = 0; i < M.isz; i++)
		if (p[i] != POISON)
			return false;
	return true;
}

/* `buf` holds item `id` (got) or nothing. */
FZ_NOCOV static void check_buf(const char *what, const unsigned char *buf, bool got, uint64_t id)
{
	if (got && !item_is(buf, id))
		fz_fail("%s holds #%llu, expected #%llu", what, (unsigned long long)item_id(buf),
			(unsigned long long)id);
	if (!got && !untouched(buf))
		fz_fail("%s was written (#%llu), but nothing was received", what,
			(unsigned long long)item_id(buf));
}

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

/* ------------------------------------------------------------- the model */

FZ_NOCOV static bool m_has_room(void)
{
	if (!M.bp)
		return true;
	if (M.sq.len > 0)
		return false;
	uint64_t min = M.tail;
	for (int i = 0; i < NRX; i++)
		if (M.R[i].subscribed && M.R[i].cursor < min)
			min = M.R[i].cursor;
	return M.tail - min < M.cap;
}

/* Room for the oldest waiting send (it is the one at the front). */
static bool m_room_for_waiting_send(void)
{
	int len = M.sq.len;
	M.sq.len = 0;
	bool room = m_has_room();
	M.sq.len = len;
	return room;
}

static void m_release_receivers(void)
{
	while (M.rq.len > 0) {
		int s = fz_q_pop(&M.rq);
		fz_wake_registered(s);
		A[s].released = true;
	}
}

static void m_publish(uint64_t id)
{
	M.pub[M.tail % PUBRING] = id;
	M.tail++;
}

static void m_refill(void)
{
	bool published = false;
	while (M.sq.len > 0 && m_room_for_waiting_send()) {
		int h = fz_q_pop(&M.sq);
		m_publish(A[h].id);
		fz_complete(h, 0);
		published = true;
	}
	if (published)
		m_release_receivers();
}

static int m_send(uint64_t id)
{
	if (M.closed)
		return -EPIPE;
	if (!m_has_room())
		return -EAGAIN;
	m_publish(id);
	m_release_receivers();
	return 0;
}

static int m_recv(int i, uint64_t *id)
{
	if (!M.R[i].subscribed)
		return -EINVAL;
	if (M.tail - M.R[i].cursor > M.cap) {
		M.R[i].missed = M.tail - M.cap - M.R[i].cursor;
		M.R[i].cursor = M.tail - M.cap;
		return -EOVERFLOW;
	}
	if (M.R[i].cursor == M.tail)
		return M.closed ? -EPIPE : -EAGAIN;
	*id = M.pub[M.R[i].cursor % PUBRING];
	M.R[i].cursor++;
	if (M.bp)
		m_refill();
	return 0;
}

/* A receive of receiver i is in flight. */
FZ_NOCOV static bool rx_waiting(int i)
{
	for (int s = 0; s < FZ_NALL; s++)
		if (fz_slots[s].st == FS_QUEUED && A[s].kind == K_RECV && A[s].rx == i)
			return true;
	return false;
}

FZ_NOCOV static void check_slots(void)
{
	for (int s = 0; s < FZ_NALL; s++) {
		const fz_slot *x = &fz_slots[s];
		if (x->st == FS_UNUSED || A[s].null_item)
			continue;
		bool got = A[s].kind == K_SEND ||
			   ((x->st == FS_DONE || x->st == FS_CANCELLED) && x->result == 0);
		if (got ? item_is(A[s].item, A[s].id) : untouched(A[s].item))
			continue;
		char what[48];
		snprintf(what, sizeof what, "%s slot %d's item", A[s].kind == K_SEND ? "send" : "recv", s);
		check_buf(what, A[s].item, got, A[s].id);
	}
}

/* Each receiver's unread count, and how many subscribe. */
FZ_NOCOV static void check_receivers(void)
{
	size_t subs = 0;
	for (int i = 0; i < NRX; i++) {
		if (!M.R[i].subscribed) {
			if (rxs[i].bc != NULL)
				fz_fail("rx%d is not subscribed, but its struct names a broadcast", i);
			continue;
		}
		subs++;
		FZ_EXPECT_SIZE("sb_broadcast_receiver_unread", M.tail - M.R[i].cursor,
			       sb_broadcast_receiver_unread(&rxs[i]));
	}
	FZ_EXPECT_SIZE("sb_broadcast_subscribers", subs, sb_broadcast_subscribers(bc));
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(M.sq.len == 0 || (M.bp && !M.closed));
	FZ_ASSERT_MODEL(M.rq.len == 0 || !M.closed);
	check_receivers();
	FZ_EXPECT_SIZE("sb_broadcast_capacity", M.cap, sb_broadcast_capacity(bc));
	FZ_EXPECT("sb_broadcast_is_closed", M.closed, sb_broadcast_is_closed(bc));
	check_slots();
}

/* ------------------------------------------------------- the futures */

static const char *describe(int s)
{
	static char buf[4][48];
	static unsigned k;
	char *b = buf[k++ & 3];
	if (A[s].null_item)
		snprintf(b, 48, " [%s NULL]", A[s].kind == K_SEND ? "send" : "recv");
	else if (A[s].kind == K_SEND)
		snprintf(b, 48, " [send #%llu]", (unsigned long long)A[s].id);
	else
		snprintf(b, 48, " [recv rx%d%s]", A[s].rx, A[s].released ? ", woken" : "");
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

/* A fresh future in slot s: a send of a fresh item (b == 255: NULL), or a
 * receive (b == 255: into NULL) of receiver `rx`. */
static void slot_init(int s, int kind, uint8_t b, int rx)
{
	if (slot_busy(s))
		op_cancel(s, true);
	fz_slot *x = &fz_slots[s];
	A[s].kind = kind;
	A[s].null_item = b == 255;
	A[s].rx = rx;
	A[s].released = false;
	A[s].id = kind == K_SEND ? ++M.next_id : 0;
	fz_step_begin("%s_init(slot %d%s)", fname(s), s, describe(s));
	free(x->f);
	x->f = fz_xmalloc(FUT_HDR + M.isz);
	A[s].item = (unsigned char *)x->f + FUT_HDR;
	memset(A[s].item, POISON, M.isz);
	if (kind == K_SEND) {
		if (!A[s].null_item)
			item_fill(A[s].item, A[s].id);
		sb_broadcast_send_init(x->f, bc, A[s].null_item ? NULL : A[s].item);
	} else {
		sb_broadcast_recv_init(x->f, &rxs[rx], A[s].null_item ? NULL : A[s].item);
	}
	x->st = FS_IDLE;
	x->result = 0;
	step_end();
}

static int send_first_poll(int s)
{
	if (A[s].null_item)
		return -EINVAL;
	int r = m_send(A[s].id);
	if (r != -EAGAIN)
		return r;
	fz_q_push(&M.sq, s);
	return SB_PENDING;
}

/* A receive's read: its result, or SB_PENDING after queueing. */
static int recv_attempt(int s)
{
	int r = m_recv(A[s].rx, &A[s].id);
	A[s].released = false;
	if (r != -EAGAIN)
		return r;
	fz_q_push(&M.rq, s);
	return SB_PENDING;
}

static int recv_first_poll(int s)
{
	if (A[s].null_item)
		return -EINVAL;
	return recv_attempt(s);
}

static void op_poll(int s, fz_wid w)
{
	fz_slot *x = &fz_slots[s];
	if (x->st == FS_UNUSED)
		return;
	/* The contract: one receive in flight per receiver. */
	if (x->st == FS_IDLE && A[s].kind == K_RECV && !A[s].null_item && rx_waiting(A[s].rx))
		return;
	bool via_ops = fz_steps & 1;
	fz_step_begin("%s_poll(slot %d%s, waker %s)%s", fname(s), s, describe(s), fz_wname(w),
		      via_ops ? " via ops" : "");
	int exp;
	bool fresh = x->st == FS_IDLE || (x->st == FS_QUEUED && A[s].released);
	switch (x->st) {
	case FS_IDLE:
		exp = A[s].kind == K_SEND ? send_first_poll(s) : recv_first_poll(s);
		if (exp == SB_PENDING)
			fz_register(s, w);
		break;
	case FS_QUEUED:
		if (A[s].kind == K_RECV && A[s].released) {
			exp = recv_attempt(s);
			if (exp == SB_PENDING)
				fz_register(s, w);
		} else {
			fz_reregister(s, w);
			exp = SB_PENDING;
		}
		break;
	case FS_DETACHED:
	default: /* FS_DONE, FS_CANCELLED: what it returned */
		exp = x->result;
		break;
	}
	if (x->st != FS_CANCELLED) {
		x->st = exp == SB_PENDING ? FS_QUEUED : FS_DONE;
		x->result = exp;
	}
	step_note(" -> %s", fz_res_name(exp));
	sb_waker wk = fz_waker(w);
	int r;
	if (A[s].kind == K_SEND)
		r = via_ops ? sb_broadcast_send_ops.poll(x->f, &wk) : sb_broadcast_send_poll(x->f, &wk);
	else
		r = via_ops ? sb_broadcast_recv_ops.poll(x->f, &wk) : sb_broadcast_recv_poll(x->f, &wk);
	FZ_EXPECT_RES(A[s].kind == K_SEND ? "sb_broadcast_send_poll" : "sb_broadcast_recv_poll", exp,
		      r);
	/* A lag found by this poll (a done one's result is an old report). */
	if (A[s].kind == K_RECV && r == -EOVERFLOW && fresh)
		FZ_EXPECT_SIZE("sb_broadcast_receiver_missed", M.R[A[s].rx].missed,
			       sb_broadcast_receiver_missed(&rxs[A[s].rx]));
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
		if (A[s].kind == K_RECV && A[s].released) {
			A[s].released = false; /* its waker was spent */
		} else {
			fz_q_remove(A[s].kind == K_SEND ? &M.sq : &M.rq, s);
			fz_drop_registered(s);
		}
		exp = -ECANCELED;
		break;
	default: /* FS_DETACHED, FS_DONE, FS_CANCELLED */
		exp = x->result;
		break;
	}
	x->st = FS_CANCELLED;
	x->result = exp;
	step_note(" -> %s", fz_res_name(exp));
	int r = A[s].kind == K_SEND ? sb_broadcast_send_cancel(x->f) : sb_broadcast_recv_cancel(x->f);
	FZ_EXPECT_RES(A[s].kind == K_SEND ? "sb_broadcast_send_cancel" : "sb_broadcast_recv_cancel",
		      exp, r);
	step_end();
	if (free_it) {
		free(x->f);
		x->f = NULL;
		x->st = FS_UNUSED;
	}
}

/* The crowd: v & 1 a send, else a receive of the slot's own receiver. */
static void op_crowd_init(int s, uint8_t v)
{
	slot_init(s, (v & 1) ? K_SEND : K_RECV, 0, s);
}

static const fz_slot_ops slot_ops = { NULL, slot_busy, op_crowd_init, op_poll, op_cancel };

/* ---------------------------------------------------------------- the ops */

static void op_try_send(void)
{
	unsigned char *item = fz_xmalloc(M.isz);
	uint64_t id = ++M.next_id;
	item_fill(item, id);
	fz_step_begin("try_send(#%llu)", (unsigned long long)id);
	int exp = m_send(id);
	step_note(" -> %s", fz_res_name(exp));
	FZ_EXPECT_RES("sb_broadcast_try_send", exp, sb_broadcast_try_send(bc, item));
	if (!item_is(item, id))
		fz_fail("try_send changed the caller's item");
	free(item);
	step_end();
}

static void op_try_recv(int i)
{
	unsigned char *buf = fz_xmalloc(M.isz);
	memset(buf, POISON, M.isz);
	fz_step_begin("try_recv(rx%d)", i);
	uint64_t id = 0;
	int exp = m_recv(i, &id);
	step_note(" -> %s", fz_res_name(exp));
	FZ_EXPECT_RES("sb_broadcast_try_recv", exp, sb_broadcast_try_recv(&rxs[i], buf));
	if (exp == -EOVERFLOW)
		FZ_EXPECT_SIZE("sb_broadcast_receiver_missed", M.R[i].missed,
			       sb_broadcast_receiver_missed(&rxs[i]));
	check_buf("try_recv's buffer", buf, exp == 0, id);
	free(buf);
	step_end();
}

/* The zero-timeout blocking waits: one try, then -ETIMEDOUT. */
static void op_blocking(uint8_t a)
{
	unsigned char *item = fz_xmalloc(M.isz);
	memset(item, POISON, M.isz);
	if (a & 1) {
		uint64_t id = ++M.next_id;
		item_fill(item, id);
		fz_step_begin("send_blocking(#%llu, 0)", (unsigned long long)id);
		int exp = m_send(id);
		if (exp == -EAGAIN)
			exp = -ETIMEDOUT;
		step_note(" -> %s", fz_res_name(exp));
		FZ_EXPECT_RES("sb_broadcast_send_blocking", exp, sb_broadcast_send_blocking(bc, item, 0));
	} else {
		int i = (a >> 1) % FZ_NSLOTS;
		if (rx_waiting(i)) {
			free(item);
			return; /* the contract: one receive in flight */
		}
		fz_step_begin("recv_blocking(rx%d, 0)", i);
		uint64_t id = 0;
		int exp = m_recv(i, &id);
		if (exp == -EAGAIN)
			exp = -ETIMEDOUT;
		step_note(" -> %s", fz_res_name(exp));
		FZ_EXPECT_RES("sb_broadcast_recv_blocking", exp,
			      sb_broadcast_recv_blocking(&rxs[i], item, 0));
		check_buf("recv_blocking's buffer", item, exp == 0, id);
	}
	free(item);
	step_end();
}

static void op_subscribe(int i)
{
	fz_step_begin("subscribe(rx%d)", i);
	int exp;
	if (M.R[i].subscribed) {
		exp = -EINVAL;
	} else if (M.closed) {
		exp = -EPIPE;
	} else {
		M.R[i].subscribed = true;
		M.R[i].cursor = M.tail;
		exp = 0;
	}
	step_note(" -> %s", fz_res_name(exp));
	FZ_EXPECT_RES("sb_broadcast_subscribe", exp, sb_broadcast_subscribe(bc, &rxs[i]));
	step_end();
}

static void op_unsubscribe(int i)
{
	fz_step_begin("unsubscribe(rx%d)", i);
	int exp;
	if (!M.R[i].subscribed) {
		exp = -EINVAL;
	} else if (rx_waiting(i)) {
		exp = -EBUSY;
	} else {
		M.R[i].subscribed = false;
		m_refill();
		exp = 0;
	}
	step_note(" -> %s", fz_res_name(exp));
	FZ_EXPECT_RES("sb_broadcast_unsubscribe", exp, sb_broadcast_unsubscribe(&rxs[i]));
	step_end();
}

static void op_close(void)
{
	fz_step_begin("close()%s", M.closed ? " again" : "");
	M.closed = true;
	while (M.sq.len > 0)
		fz_complete(fz_q_pop(&M.sq), -EPIPE);
	m_release_receivers();
	sb_broadcast_close(bc);
	step_end();
}

/* Every call here is refused with -EINVAL and changes nothing. */
static void op_bad(uint8_t a)
{
	unsigned char *buf = fz_xmalloc(M.isz);
	item_fill(buf, 0);
	sb_waker wk = fz_waker((fz_wid){ 0, FZ_SHARED2 });
	int r = 0;
	const char *what = "";
	int i = (a >> 3) % FZ_NSLOTS;
	switch (a % 7) {
	case 0:
		fz_step_begin("try_send(NULL)");
		r = sb_broadcast_try_send(bc, NULL), what = "sb_broadcast_try_send";
		break;
	case 1:
		fz_step_begin("try_recv(rx%d, NULL)", i);
		r = sb_broadcast_try_recv(&rxs[i], NULL), what = "sb_broadcast_try_recv";
		break;
	case 2:
		fz_step_begin("send_blocking(NULL, 0)");
		r = sb_broadcast_send_blocking(bc, NULL, 0), what = "sb_broadcast_send_blocking";
		break;
	case 3:
		fz_step_begin("recv_blocking(rx%d, NULL, 0)", i);
		r = sb_broadcast_recv_blocking(&rxs[i], NULL, 0), what = "sb_broadcast_recv_blocking";
		break;
	case 4: {
		fz_step_begin("send_poll(zeroed future)");
		sb_broadcast_send *f = calloc(1, sizeof *f);
		r = sb_broadcast_send_poll(f, &wk), what = "sb_broadcast_send_poll";
		free(f);
		break;
	}
	case 5: {
		fz_step_begin("recv_poll(zeroed future)");
		sb_broadcast_recv *f = calloc(1, sizeof *f);
		r = sb_broadcast_recv_poll(f, &wk), what = "sb_broadcast_recv_poll";
		free(f);
		break;
	}
	default: {
		fz_step_begin("try_recv(zeroed receiver)");
		sb_broadcast_receiver *z = calloc(1, sizeof *z);
		r = sb_broadcast_try_recv(z, buf), what = "sb_broadcast_try_recv";
		free(z);
		break;
	}
	}
	FZ_EXPECT_RES(what, -EINVAL, r);
	if (!item_is(buf, 0))
		fz_fail("%s wrote into the caller's memory", what);
	free(buf);
	step_end();
}

static void op_init_errors(uint8_t a)
{
	static const struct {
		const char *name;
		size_t isz, cap, offset;
		bool null;
		int policy, exp;
	} cases[] = {
		{ "item_size 0", 0, 1, 0, false, 0, -EINVAL },
		{ "capacity 0", 8, 0, 0, false, 0, -EINVAL },
		{ "capacity MAX+1", 8, (size_t)SB_BROADCAST_MAX_CAPACITY + 1, 0, false, 1, -EINVAL },
		{ "NULL storage", 8, 1, 0, true, 0, -EINVAL },
		{ "item_size 8 at 4 mod 8", 8, 1, 4, false, 1, -EINVAL },
		{ "policy 2", 8, 1, 0, false, 2, -EINVAL },
		{ "policy -1", 8, 1, 0, false, -1, -EINVAL },
		{ "SIZE_MAX/2 x 3", SIZE_MAX / 2, 3, 0, false, 0, -EOVERFLOW },
		{ "item_size 12 at 4 mod 16", 12, 1, 4, false, 1, 0 },
		{ "item_size 3 at an odd address", 3, 2, 1, false, 0, 0 },
	};
	size_t i = a % (sizeof cases / sizeof cases[0]);
	fz_step_begin("another broadcast: init(%s)", cases[i].name);
	unsigned char *mem = fz_xmalloc(64 + 16);
	sb_broadcast *tmp = fz_xmalloc(sizeof *tmp);
	void *st = cases[i].null ? NULL : mem + cases[i].offset;
	FZ_EXPECT_RES("sb_broadcast_init", cases[i].exp,
		      sb_broadcast_init(tmp, st, cases[i].isz, cases[i].cap, cases[i].policy));
	if (cases[i].exp == 0) {
		FZ_EXPECT_SIZE("sb_broadcast_capacity", cases[i].cap, sb_broadcast_capacity(tmp));
		FZ_EXPECT_RES("sb_broadcast_destroy", 0, sb_broadcast_destroy(tmp));
	}
	free(tmp);
	free(mem);
	step_end();
}

static void new_broadcast(uint8_t b0, size_t cap)
{
	M.isz = item_sizes[(b0 >> 2) & 3];
	M.cap = cap;
	M.bp = b0 & 2;
	M.closed = false;
	M.tail = 0;
	M.sq.len = M.rq.len = 0;
	for (int i = 0; i < NRX; i++)
		M.R[i].subscribed = false;
	storage = fz_xmalloc(cap * M.isz);
	bc = fz_xmalloc(sizeof *bc);
	int policy = M.bp ? SB_BROADCAST_BACKPRESSURE : SB_BROADCAST_LAGGING;
	if (b0 & 1)
		*bc = (sb_broadcast)SB_BROADCAST_INIT(storage, (uint32_t)M.isz, (uint32_t)cap, policy);
	else
		FZ_EXPECT_RES("sb_broadcast_init", 0, sb_broadcast_init(bc, storage, M.isz, cap, policy));
	for (int i = 0; i < NRX; i++)
		rxs[i] = (sb_broadcast_receiver)SB_BROADCAST_RECEIVER_INIT;
	fz_locks[0] = FZ_LOCKWORD(bc);
}

static const char *broadcast_name(uint8_t b0, size_t cap)
{
	static char b[96];
	snprintf(b, sizeof b, "%s(item_size %zu, capacity %zu, %s)",
		 (b0 & 1) ? "SB_BROADCAST_INIT" : "sb_broadcast_init", item_sizes[(b0 >> 2) & 3],
		 cap, (b0 & 2) ? "back-pressure" : "lagging");
	return b;
}

static void op_destroy(uint8_t a)
{
	size_t subs = 0;
	for (int i = 0; i < NRX; i++)
		subs += M.R[i].subscribed;
	if (M.sq.len > 0 || M.rq.len > 0 || subs > 0) {
		fz_step_begin("destroy() while %zu subscribe(s), %d send(s), %d recv(s) wait", subs,
			      M.sq.len, M.rq.len);
		FZ_EXPECT_RES("sb_broadcast_destroy", -EBUSY, sb_broadcast_destroy(bc));
		step_end();
		return;
	}
	/* A completed send nobody observed may still read the broadcast. */
	if (fz_any_slot(FS_DETACHED))
		return;
	size_t cap = 1 + (a >> 4) % 4;
	fz_step_begin("destroy(), then %s", broadcast_name(a, cap));
	FZ_EXPECT_RES("sb_broadcast_destroy", 0, sb_broadcast_destroy(bc));
	fz_forget_slots();
	free(bc);
	free(storage);
	new_broadcast(a, cap);
	step_end();
}

/* Subscribes (a & 1) or unsubscribes every crowd receiver. */
static void op_crowd_subscription(uint8_t a)
{
	for (int i = FZ_NSLOTS; i < NRX; i++) {
		if (a & 1)
			op_subscribe(i);
		else
			op_unsubscribe(i);
	}
}

/* ------------------------------------------------------------- the driver */

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_TRY_SEND, OP_TRY_RECV, OP_SUBSCRIBE, OP_UNSUBSCRIBE,
	OP_CLOSE, OP_DESTROY, OP_BLOCKING, OP_BAD, OP_CROWD, OP_CROWD_SUBSCRIPTION,
};

/* opcode byte % 24 -> operation. */
static const uint8_t ops[24] = {
	OP_INIT, OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL,
	OP_TRY_SEND, OP_TRY_SEND, OP_TRY_RECV, OP_TRY_RECV, OP_SUBSCRIBE, OP_UNSUBSCRIBE,
	OP_CROWD_SUBSCRIPTION, OP_CLOSE, OP_DESTROY, OP_BLOCKING, OP_BAD, OP_CROWD,
	OP_CANCEL_CROWD, OP_POLL_ALL, OP_TRY_SEND,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	memset(A, 0, sizeof A);
	fz_reset_slots();
	rxs = fz_xmalloc(NRX * sizeof *rxs);

	uint8_t b0 = fz_byte(&in);
	size_t cap = 1 + fz_byte(&in) % 4;
	fz_step_begin("broadcast %s", broadcast_name(b0, cap));
	new_broadcast(b0, cap);
	step_end();

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		int kind = ops[op % 24];
		switch (kind) {
		case OP_INIT: {
			uint8_t a = fz_byte(&in);
			uint8_t b = fz_byte(&in);
			slot_init(a % FZ_NSLOTS, (a & 8) ? K_SEND : K_RECV, b, (a >> 4) % FZ_NSLOTS);
			break;
		}
		case OP_TRY_SEND:
			op_try_send();
			break;
		case OP_TRY_RECV:
			op_try_recv(fz_byte(&in) % FZ_NSLOTS);
			break;
		case OP_SUBSCRIBE:
			op_subscribe(fz_byte(&in) % FZ_NSLOTS);
			break;
		case OP_UNSUBSCRIBE:
			op_unsubscribe(fz_byte(&in) % FZ_NSLOTS);
			break;
		case OP_CROWD_SUBSCRIPTION:
			op_crowd_subscription(fz_byte(&in));
			break;
		case OP_CLOSE:
			op_close();
			break;
		case OP_DESTROY:
			op_destroy(fz_byte(&in));
			break;
		case OP_BLOCKING:
			op_blocking(fz_byte(&in));
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

	/* Cancel everything; then every receiver drains exactly the model's
	 * items, unsubscribes; close, and destroy. */
	fz_cancel_all(&slot_ops);
	FZ_ASSERT_MODEL(M.sq.len == 0 && M.rq.len == 0);
	for (int i = 0; i < NRX; i++) {
		if (!M.R[i].subscribed)
			continue;
		while (M.R[i].cursor != M.tail)
			op_try_recv(i);
		op_unsubscribe(i);
	}
	op_close();
	op_try_send();
	fz_step_begin("final: destroy");
	FZ_EXPECT_RES("sb_broadcast_destroy", 0, sb_broadcast_destroy(bc));
	free(bc);
	free(storage);
	free(rxs);
	bc = NULL;
	storage = NULL;
	rxs = NULL;
	return 0;
}
