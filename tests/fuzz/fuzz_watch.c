/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_watch - model-based fuzzing of sb_watch (see fuzz_common.h; the
 * future lifecycle is fuzz_lifecycle.h's).
 *
 * Reference model (include/syncband/watch.h):
 *   value[3]  the watched value (three words, so a torn copy would show)
 *   version   grows by one with every send and every send_if that tells
 *   closed    close() was called
 *   rx[r]     subscribed, seen (the version it last read), pending (its
 *             changed futures that wait or were woken and not yet polled)
 *   queue     the waiting changed futures, in order (slot s watches
 *             receiver s % NRX)
 *   send(v)       closed: -EPIPE; else value = v, version++, every queued
 *                 future completes with 0 (woken)
 *   send_if(a,t)  closed: -EPIPE (callback not called); else value[0] += a,
 *                 and when t, version++ and the queue completes: 1, else 0
 *   close()       closed; every queued future completes with -EPIPE
 *   read(r)       not subscribed: -EINVAL; else the value, seen = version
 *   try_changed(r), changed_blocking(r, 0), first poll
 *                 not subscribed: -EINVAL; version != seen: 0; closed:
 *                 -EPIPE; else -EAGAIN, -ETIMEDOUT, or queue (SB_PENDING)
 *   subscribe(r)  subscribed already: -EINVAL; else subscribed, seen = version
 *   unsubscribe   not subscribed: -EINVAL; pending: -EBUSY; else done
 *   destroy       -EBUSY while anyone is subscribed or a future waits
 *
 * Input: a sequence of operations, one opcode byte (see `ops` below) and its
 * argument bytes each.  tests/fuzz/make_seeds.py writes the seed corpus.
 */
#include <syncband/watch.h>

#include "fuzz_lifecycle.h"

enum { NRX = 3, NWORDS = 3 };

typedef struct fz_value {
	long w[NWORDS];
} fz_value;

static sb_watch *wt;
static fz_value *storage;
/* The watch's value: its first `vwords` words (1: a one-word value on
 * LP64 targets, which sb_watch_read copies without the lock). */
static int vwords;
static sb_watch_receiver rxs[NRX];

static struct {
	fz_value value;
	size_t version;
	bool closed;
	struct {
		bool subscribed;
		size_t seen;
		int pending;
	} rx[NRX];
	fz_queue q;
} M;

static int rx_of(int s)
{
	return s % NRX;
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(!M.closed || M.q.len == 0);
	FZ_EXPECT_SIZE("sb_watch_version", M.version, sb_watch_version(wt));
	FZ_EXPECT("sb_watch_is_closed", M.closed, sb_watch_is_closed(wt));
	for (int r = 0; r < NRX; r++)
		if (M.rx[r].subscribed)
			FZ_EXPECT_SIZE("sb_watch_seen", M.rx[r].seen, sb_watch_seen(&rxs[r]));
}

static fz_value value_of(uint8_t b)
{
	fz_value v;
	for (int i = 0; i < NWORDS; i++)
		v.w[i] = (long)b * 1000 + i;
	return v;
}

static void new_watch(uint8_t b, bool static_init)
{
	wt = fz_xmalloc(sizeof *wt);
	storage = fz_xmalloc(sizeof *storage);
	*storage = value_of(b);
	vwords = (b & 2) ? 1 : NWORDS;
	size_t vsize = (size_t)vwords * sizeof(long);
	if (static_init)
		*wt = (sb_watch)SB_WATCH_INIT(storage, vsize);
	else
		FZ_EXPECT_RES("sb_watch_init", 0, sb_watch_init(wt, storage, vsize));
	fz_locks[0] = FZ_LOCKWORD(wt);
	M.value = *storage;
	M.version = 0;
	M.closed = false;
	M.q.len = 0;
	memset(rxs, 0, sizeof rxs);
	for (int r = 0; r < NRX; r++)
		M.rx[r].subscribed = false;
}

static void free_watch(void)
{
	free(wt);
	free(storage);
	wt = NULL;
	storage = NULL;
}

static void changed_init(void *f, int s)
{
	sb_watch_changed_init(f, &rxs[rx_of(s)]);
}

/* What a changed check of receiver r answers without waiting; SB_PENDING: it would wait. */
static int changed_now(int r)
{
	if (!M.rx[r].subscribed)
		return -EINVAL;
	if (M.version != M.rx[r].seen)
		return 0;
	return M.closed ? -EPIPE : SB_PENDING;
}

static int first_poll(int s)
{
	int r = rx_of(s);
	int res = changed_now(r);
	if (res == SB_PENDING) {
		fz_q_push(&M.q, s);
		M.rx[r].pending++;
	}
	return res;
}

/* A queued future that leaves the queue uncompleted, or a completed one
 * its owner never polled, stops counting against unsubscribe. */
static void leave(int s)
{
	M.rx[rx_of(s)].pending--;
}

static const fz_model model = {
	.future = "changed",
	.poll_name = "sb_watch_changed_poll",
	.ops = &sb_watch_changed_ops,
	.size = sizeof(sb_watch_changed),
	.queue = &M.q,
	.init = changed_init,
	.first_poll = first_poll,
	.cancel_queued = leave,
	.cancel_detached = leave,
	.step_end = step_end,
};

/* A poll that observes a completed future also stops its count. */
static void poll_slot(int s, fz_wid w)
{
	int before = fz_slots[s].st;
	fz_poll(&model, s, w);
	if (before == FS_DETACHED)
		leave(s);
}

static const fz_slot_ops slot_ops = { .model = &model, .poll = poll_slot };

static void complete_queue(int result)
{
	while (M.q.len > 0)
		fz_complete(fz_q_pop(&M.q), result);
}

static void op_send(uint8_t b)
{
	fz_value v = value_of(b);
	fz_step_begin("send(%d)%s", b, M.closed ? " (closed)" : "");
	int exp = 0;
	if (M.closed) {
		exp = -EPIPE;
	} else {
		M.value = v;
		M.version++;
		complete_queue(0);
	}
	FZ_EXPECT_RES("sb_watch_send", exp, sb_watch_send(wt, &v));
	step_end();
}

typedef struct modify_arg {
	long add;
	bool tell;
	int calls;
} modify_arg;

static bool modify(void *value, void *arg)
{
	modify_arg *a = arg;
	((fz_value *)value)->w[0] += a->add;
	a->calls++;
	return a->tell;
}

static void op_send_if(uint8_t b)
{
	modify_arg a = { b >> 1, b & 1, 0 };
	fz_step_begin("send_if(add %ld, tell %d)%s", a.add, a.tell, M.closed ? " (closed)" : "");
	int exp;
	if (M.closed) {
		exp = -EPIPE;
	} else {
		M.value.w[0] += a.add;
		exp = a.tell;
		if (a.tell) {
			M.version++;
			complete_queue(0);
		}
	}
	FZ_EXPECT_RES("sb_watch_send_if", exp, sb_watch_send_if(wt, modify, &a));
	FZ_EXPECT("send_if's callback calls", !M.closed, a.calls);
	step_end();
}

static void op_close(void)
{
	fz_step_begin("close()%s", M.closed ? " (already closed)" : "");
	if (!M.closed)
		complete_queue(-EPIPE);
	M.closed = true;
	sb_watch_close(wt);
	step_end();
}

static void op_read(uint8_t b)
{
	int r = b % NRX;
	fz_step_begin("read(rx %d)", r);
	fz_value out;
	memset(&out, 0xee, sizeof out);
	int exp = M.rx[r].subscribed ? 0 : -EINVAL;
	FZ_EXPECT_RES("sb_watch_read", exp, sb_watch_read(&rxs[r], &out));
	if (exp == 0) {
		M.rx[r].seen = M.version;
		for (int i = 0; i < vwords; i++)
			FZ_EXPECT("sb_watch_read's value", M.value.w[i], out.w[i]);
		fz_value untouched;
		memset(&untouched, 0xee, sizeof untouched);
		for (int i = vwords; i < NWORDS; i++)
			FZ_EXPECT("sb_watch_read copies the value's size only", untouched.w[i], out.w[i]);
	}
	step_end();
}

static void op_try_changed(uint8_t b)
{
	int r = b % NRX;
	bool blocking = b & 0x80;
	fz_step_begin("%s(rx %d)", blocking ? "changed_blocking(0)" : "try_changed", r);
	int exp = changed_now(r);
	if (exp == SB_PENDING)
		exp = blocking ? -ETIMEDOUT : -EAGAIN;
	if (blocking)
		FZ_EXPECT_RES("sb_watch_changed_blocking", exp,
			      sb_watch_changed_blocking(&rxs[r], 0));
	else
		FZ_EXPECT_RES("sb_watch_try_changed", exp, sb_watch_try_changed(&rxs[r]));
	step_end();
}

static void op_subscribe(uint8_t b)
{
	int r = b % NRX;
	if (M.rx[r].subscribed && (b & 0x40)) {
		fz_step_begin("subscribe(rx %d) (subscribed already)", r);
		FZ_EXPECT_RES("sb_watch_subscribe", -EINVAL, sb_watch_subscribe(wt, &rxs[r]));
	} else if (M.rx[r].subscribed) {
		fz_step_begin("unsubscribe(rx %d)%s", r, M.rx[r].pending ? " (pending)" : "");
		int exp = M.rx[r].pending ? -EBUSY : 0;
		FZ_EXPECT_RES("sb_watch_unsubscribe", exp, sb_watch_unsubscribe(&rxs[r]));
		if (exp == 0)
			M.rx[r].subscribed = false;
	} else if (b & 0x80) {
		fz_step_begin("unsubscribe(rx %d) (not subscribed)", r);
		FZ_EXPECT_RES("sb_watch_unsubscribe", -EINVAL, sb_watch_unsubscribe(&rxs[r]));
	} else {
		fz_step_begin("subscribe(rx %d)", r);
		FZ_EXPECT_RES("sb_watch_subscribe", 0, sb_watch_subscribe(wt, &rxs[r]));
		M.rx[r].subscribed = true;
		M.rx[r].seen = M.version;
		M.rx[r].pending = 0;
	}
	step_end();
}

static bool anyone_subscribed(void)
{
	for (int r = 0; r < NRX; r++)
		if (M.rx[r].subscribed)
			return true;
	return false;
}

static void op_destroy(uint8_t a)
{
	if (M.q.len > 0 || anyone_subscribed()) {
		fz_step_begin("destroy() with %d waiting, receivers subscribed", M.q.len);
		FZ_EXPECT_RES("sb_watch_destroy", -EBUSY, sb_watch_destroy(wt));
		step_end();
		return;
	}
	fz_step_begin("destroy(), then %s(%d)", (a & 1) ? "SB_WATCH_INIT" : "sb_watch_init", a);
	FZ_EXPECT_RES("sb_watch_destroy", 0, sb_watch_destroy(wt));
	fz_forget_slots();
	free_watch();
	new_watch(a, a & 1);
	step_end();
}

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_SEND, OP_SEND_IF, OP_CLOSE, OP_READ, OP_TRY, OP_SUBSCRIBE,
	OP_DESTROY, OP_CROWD,
};

static const uint8_t ops[20] = {
	OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL, OP_SEND, OP_SEND,
	OP_SEND_IF, OP_CLOSE, OP_READ, OP_READ, OP_TRY, OP_SUBSCRIBE, OP_SUBSCRIBE, OP_DESTROY,
	OP_CROWD, OP_CANCEL_CROWD, OP_POLL_ALL,
};

/* The end of an input: every receiver unsubscribed (none has a future left). */
static void unsubscribe_all(void)
{
	for (int r = 0; r < NRX; r++) {
		if (!M.rx[r].subscribed)
			continue;
		FZ_ASSERT_MODEL(M.rx[r].pending == 0);
		fz_step_begin("final: unsubscribe(rx %d)", r);
		FZ_EXPECT_RES("sb_watch_unsubscribe", 0, sb_watch_unsubscribe(&rxs[r]));
		M.rx[r].subscribed = false;
		step_end();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	fz_reset_slots();

	uint8_t b0 = fz_byte(&in);
	fz_step_begin("watch %s(%d)", (b0 & 1) ? "SB_WATCH_INIT" : "sb_watch_init", b0);
	new_watch(b0, b0 & 1);
	step_end();
	/* Receivers 0 and 1 start subscribed; 2 only when the input says so. */
	op_subscribe(0);
	op_subscribe(1);

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		int kind = ops[op % 20];
		switch (kind) {
		case OP_INIT:
			fz_init(&model, fz_byte(&in) % FZ_NSLOTS);
			break;
		case OP_SEND:
			op_send(fz_byte(&in));
			break;
		case OP_SEND_IF:
			op_send_if(fz_byte(&in));
			break;
		case OP_CLOSE:
			op_close();
			break;
		case OP_READ:
			op_read(fz_byte(&in));
			break;
		case OP_TRY:
			op_try_changed(fz_byte(&in));
			break;
		case OP_SUBSCRIBE:
			op_subscribe(fz_byte(&in));
			break;
		case OP_DESTROY:
			op_destroy(fz_byte(&in));
			break;
		case OP_CROWD: {
			uint8_t k = fz_byte(&in);
			fz_crowd(&slot_ops, 1 + k % FZ_NCROWD, 0, fz_byte(&in));
			break;
		}
		default:
			fz_shared_op(&slot_ops, &in, kind);
			break;
		}
	}

	fz_cancel_all(&slot_ops);
	FZ_ASSERT_MODEL(M.q.len == 0);
	unsubscribe_all();
	fz_step_begin("final: destroy");
	FZ_EXPECT_RES("sb_watch_destroy", 0, sb_watch_destroy(wt));
	free_watch();
	return 0;
}
