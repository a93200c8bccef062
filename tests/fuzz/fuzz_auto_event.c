/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_auto_event - model-based fuzzing of sb_auto_event (see fuzz_common.h).
 *
 * Reference model (include/syncband/event.h, auto-reset part):
 *   signal    one stored signal (never while waits are registered)
 *   queue     the registered waits, in order
 *   set()        the oldest registered wait is handed the signal (woken);
 *                nobody registered: signal = true (repeated sets coalesce)
 *   try_wait()   signal: consume it, 0; else -EAGAIN (never a signal that
 *                was handed to a wait)
 *   first poll   signal: consume it, 0; else register, SB_PENDING
 *   later poll   SB_PENDING while registered (waker replacement); 0 once
 *                handed the signal, and again on every later poll;
 *                -ECANCELED after cancel
 *   cancel       registered: unregister, drop the waker; handed the signal
 *                but not observed: pass it on as set() does; else nothing
 *   destroy      -EBUSY while waits are registered (the event keeps working)
 *
 * Input: a sequence of operations, one opcode byte (see `ops` below) and its
 * argument bytes each.  tests/fuzz/make_seeds.py writes the seed corpus.
 */
#include "fuzz_common.h"

typedef struct slot {
	int st;
	sb_auto_event_wait *f;
} slot;

static slot S[FZ_NALL];
static sb_auto_event *ev;

static struct {
	bool signal;
	int q[FZ_NALL];
	int qlen;
} M;

static void q_remove(int s)
{
	int i = 0;
	while (i < M.qlen && M.q[i] != s)
		i++;
	FZ_ASSERT_MODEL(i < M.qlen);
	memmove(&M.q[i], &M.q[i + 1], (size_t)(M.qlen - i - 1) * sizeof M.q[0]);
	M.qlen--;
}

/* set(): hand the signal to the oldest wait, or store it. */
static void m_set(void)
{
	if (M.qlen == 0) {
		M.signal = true;
		return;
	}
	int h = M.q[0];
	q_remove(h);
	S[h].st = FS_DETACHED;
	fz_wake_registered(h);
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(!M.signal || M.qlen == 0);
}

static void op_cancel(int s, bool free_it);

static void new_event(bool set, bool static_init)
{
	ev = fz_xmalloc(sizeof *ev);
	if (static_init)
		*ev = (sb_auto_event)SB_AUTO_EVENT_INIT(set);
	else
		FZ_EXPECT_RES("sb_auto_event_init", 0, sb_auto_event_init(ev, set));
	fz_locks[0] = FZ_LOCKWORD(ev);
	M.signal = set;
	M.qlen = 0;
}

static void op_init(int s)
{
	if (S[s].st == FS_QUEUED || S[s].st == FS_DETACHED)
		op_cancel(s, true);
	fz_step_begin("wait_init(slot %d)", s);
	free(S[s].f);
	S[s].f = fz_xmalloc(sizeof *S[s].f);
	sb_auto_event_wait_init(S[s].f, ev);
	S[s].st = FS_IDLE;
	step_end();
}

static void op_poll(int s, fz_wid w)
{
	slot *x = &S[s];
	if (x->st == FS_UNUSED)
		return;
	fz_step_begin("wait_poll(slot %d, waker %s)", s, fz_wname(w));
	int exp;
	switch (x->st) {
	case FS_IDLE:
		if (M.signal) {
			M.signal = false;
			x->st = FS_DONE;
			exp = 0;
		} else {
			M.q[M.qlen++] = s;
			fz_register(s, w);
			x->st = FS_QUEUED;
			exp = SB_PENDING;
		}
		break;
	case FS_QUEUED:
		fz_reregister(s, w);
		exp = SB_PENDING;
		break;
	case FS_DETACHED:
		x->st = FS_DONE;
		exp = 0;
		break;
	case FS_DONE:
		exp = 0;
		break;
	default:
		exp = -ECANCELED;
		break;
	}
	sb_waker wk = fz_waker(w);
	FZ_EXPECT_RES("sb_auto_event_wait_poll", exp, sb_auto_event_wait_poll(x->f, &wk));
	step_end();
}

static void op_cancel(int s, bool free_it)
{
	slot *x = &S[s];
	if (x->st == FS_UNUSED)
		return;
	fz_step_begin("wait_cancel(slot %d)%s", s, free_it ? " + free" : "");
	switch (x->st) {
	case FS_IDLE:
		x->st = FS_CANCELLED;
		break;
	case FS_QUEUED:
		q_remove(s);
		fz_drop_registered(s);
		x->st = FS_CANCELLED;
		break;
	case FS_DETACHED:
		m_set(); /* handed the signal, never observed: pass it on or store it */
		x->st = FS_CANCELLED;
		break;
	default:
		break;
	}
	sb_auto_event_wait_cancel(x->f);
	if (free_it) {
		free(x->f);
		x->f = NULL;
		x->st = FS_UNUSED;
	}
	step_end();
}

static void op_set(void)
{
	fz_step_begin("set()%s", M.signal ? " (signal already stored)" : "");
	m_set();
	sb_auto_event_set(ev);
	step_end();
}

static void op_try_wait(void)
{
	fz_step_begin("try_wait()");
	int exp = M.signal ? 0 : -EAGAIN;
	M.signal = false;
	FZ_EXPECT_RES("sb_auto_event_try_wait", exp, sb_auto_event_try_wait(ev));
	step_end();
}

static void op_destroy(uint8_t a)
{
	if (M.qlen > 0) {
		fz_step_begin("destroy() while %d wait(s) registered", M.qlen);
		FZ_EXPECT_RES("sb_auto_event_destroy", -EBUSY, sb_auto_event_destroy(ev));
		step_end();
		return;
	}
	/* A wait handed the signal but not observed would pass it to a
	 * destroyed event when cancelled; the caller must not destroy then. */
	for (int s = 0; s < FZ_NALL; s++)
		if (S[s].st == FS_DETACHED)
			return;
	fz_step_begin("destroy(), then %s(%d)", (a & 2) ? "SB_AUTO_EVENT_INIT" : "sb_auto_event_init",
		      a & 1);
	FZ_EXPECT_RES("sb_auto_event_destroy", 0, sb_auto_event_destroy(ev));
	for (int s = 0; s < FZ_NALL; s++) {
		free(S[s].f);
		S[s] = (slot){ .st = FS_UNUSED };
	}
	free(ev);
	new_event(a & 1, a & 2);
	step_end();
}

static void op_crowd(int k, uint8_t wbyte)
{
	for (int i = 0; i < k; i++) {
		int s = FZ_NSLOTS + i;
		if (S[s].st == FS_QUEUED || S[s].st == FS_DETACHED)
			continue;
		op_init(s);
		op_poll(s, fz_waker_choice(s, wbyte));
	}
}

static void op_cancel_crowd(uint8_t how)
{
	for (int i = 0; i < FZ_NCROWD; i++)
		op_cancel((how & 1) ? FZ_NALL - 1 - i : FZ_NSLOTS + i, how & 2);
}

static void op_poll_all(uint8_t wbyte)
{
	for (int s = 0; s < FZ_NALL; s++)
		op_poll(s, fz_waker_choice(s, wbyte));
}

enum {
	OP_INIT, OP_POLL, OP_CANCEL, OP_SET, OP_TRY, OP_DESTROY, OP_CROWD, OP_CANCEL_CROWD,
	OP_POLL_ALL,
};

static const uint8_t ops[16] = {
	OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL,
	OP_SET, OP_SET, OP_SET, OP_TRY, OP_DESTROY, OP_CROWD, OP_CANCEL_CROWD, OP_POLL_ALL,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	for (int s = 0; s < FZ_NALL; s++)
		S[s] = (slot){ .st = FS_UNUSED };

	uint8_t b0 = fz_byte(&in);
	fz_step_begin("auto event %s(%d)", (b0 & 2) ? "SB_AUTO_EVENT_INIT" : "sb_auto_event_init",
		      b0 & 1);
	new_event(b0 & 1, b0 & 2);
	step_end();

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		switch (ops[op % 16]) {
		case OP_INIT:
			op_init(fz_byte(&in) % FZ_NSLOTS);
			break;
		case OP_POLL: {
			int s = fz_byte(&in) % FZ_NSLOTS;
			op_poll(s, fz_waker_choice(s, fz_byte(&in)));
			break;
		}
		case OP_CANCEL: {
			uint8_t a = fz_byte(&in);
			op_cancel(a % FZ_NSLOTS, a & 0x80);
			break;
		}
		case OP_SET:
			op_set();
			break;
		case OP_TRY:
			op_try_wait();
			break;
		case OP_DESTROY:
			op_destroy(fz_byte(&in));
			break;
		case OP_CROWD: {
			uint8_t k = fz_byte(&in);
			op_crowd(1 + k % FZ_NCROWD, fz_byte(&in));
			break;
		}
		case OP_CANCEL_CROWD:
			op_cancel_crowd(fz_byte(&in));
			break;
		case OP_POLL_ALL:
			op_poll_all(fz_byte(&in));
			break;
		}
	}

	fz_in_final = true;
	for (int s = 0; s < FZ_NALL; s++)
		op_cancel(s, true);
	FZ_ASSERT_MODEL(M.qlen == 0);
	fz_check_no_live_wakers();
	op_try_wait(); /* the stored signal, if the model says there is one */
	op_try_wait(); /* and none after it */
	fz_step_begin("final: destroy");
	FZ_EXPECT_RES("sb_auto_event_destroy", 0, sb_auto_event_destroy(ev));
	free(ev);
	ev = NULL;
	return 0;
}
