/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_event - model-based fuzzing of the manual-reset sb_event (see
 * fuzz_common.h; the future lifecycle is fuzz_lifecycle.h's).
 *
 * Reference model (include/syncband/event.h):
 *   set       the event is set
 *   queue     the registered waits, in order
 *   set()        every registered wait is released (woken); set = true
 *   reset()      set = false; released waits stay released
 *   is_set / try_wait   set / (set ? 0 : -EAGAIN)
 *   first poll   set: 0; else register, SB_PENDING (a set() then reset()
 *                between init and the first poll is not owed to it)
 *   later poll   SB_PENDING while registered (waker replacement); 0 once
 *                released, even after a later reset(), and again on every
 *                later poll; -ECANCELED after cancel
 *   cancel       registered: unregister, drop the waker; otherwise nothing
 *   destroy      -EBUSY while waits are registered (the event keeps working)
 *
 * Input: a sequence of operations, one opcode byte (see `ops` below) and its
 * argument bytes each.  tests/fuzz/make_seeds.py writes the seed corpus.
 */
#include "fuzz_lifecycle.h"

static sb_event *ev;

static struct {
	bool set;
	fz_queue q;
} M;

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(!M.set || M.q.len == 0);
	FZ_EXPECT("sb_event_is_set", M.set, sb_event_is_set(ev));
}

static void new_event(bool set, bool static_init)
{
	ev = fz_xmalloc(sizeof *ev);
	if (static_init)
		*ev = (sb_event)SB_EVENT_INIT(set);
	else
		FZ_EXPECT_RES("sb_event_init", 0, sb_event_init(ev, set));
	fz_locks[0] = FZ_LOCKWORD(ev);
	M.set = set;
	M.q.len = 0;
}

static void wait_init(void *f, int s)
{
	(void)s;
	sb_event_wait_init(f, ev);
}

static int first_poll(int s)
{
	if (M.set)
		return 0;
	fz_q_push(&M.q, s);
	return SB_PENDING;
}

/* A released wait holds nothing to pass on: cancel_detached is NULL. */
static const fz_model model = {
	.future = "wait",
	.poll_name = "sb_event_wait_poll",
	.ops = &sb_event_wait_ops,
	.size = sizeof(sb_event_wait),
	.queue = &M.q,
	.init = wait_init,
	.first_poll = first_poll,
	.step_end = step_end,
};

static const fz_slot_ops slot_ops = { .model = &model };

static void op_set(void)
{
	fz_step_begin("set()%s", M.set ? " (already set)" : "");
	while (M.q.len > 0)
		fz_complete(fz_q_pop(&M.q), 0);
	M.set = true;
	sb_event_set(ev);
	step_end();
}

static void op_reset(void)
{
	fz_step_begin("reset()");
	M.set = false;
	sb_event_reset(ev);
	step_end();
}

static void op_try_wait(void)
{
	fz_step_begin("try_wait()");
	FZ_EXPECT_RES("sb_event_try_wait", M.set ? 0 : -EAGAIN, sb_event_try_wait(ev));
	step_end();
}

static void op_destroy(uint8_t a)
{
	if (M.q.len > 0) {
		fz_step_begin("destroy() while %d wait(s) registered", M.q.len);
		FZ_EXPECT_RES("sb_event_destroy", -EBUSY, sb_event_destroy(ev));
		step_end();
		return;
	}
	fz_step_begin("destroy(), then %s(%d)", (a & 2) ? "SB_EVENT_INIT" : "sb_event_init", a & 1);
	FZ_EXPECT_RES("sb_event_destroy", 0, sb_event_destroy(ev));
	fz_forget_slots();
	free(ev);
	new_event(a & 1, a & 2);
	step_end();
}

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_SET, OP_RESET, OP_TRY, OP_DESTROY, OP_CROWD,
};

static const uint8_t ops[17] = {
	OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL,
	OP_SET, OP_SET, OP_RESET, OP_RESET, OP_TRY, OP_DESTROY, OP_CROWD, OP_CANCEL_CROWD,
	OP_POLL_ALL,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	fz_reset_slots();

	uint8_t b0 = fz_byte(&in);
	fz_step_begin("event %s(%d)", (b0 & 2) ? "SB_EVENT_INIT" : "sb_event_init", b0 & 1);
	new_event(b0 & 1, b0 & 2);
	step_end();

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		int kind = ops[op % 17];
		switch (kind) {
		case OP_INIT:
			fz_init(&model, fz_byte(&in) % FZ_NSLOTS);
			break;
		case OP_SET:
			op_set();
			break;
		case OP_RESET:
			op_reset();
			break;
		case OP_TRY:
			op_try_wait();
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
	op_try_wait();
	fz_step_begin("final: destroy");
	FZ_EXPECT_RES("sb_event_destroy", 0, sb_event_destroy(ev));
	free(ev);
	ev = NULL;
	return 0;
}
