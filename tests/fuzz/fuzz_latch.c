/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_latch - model-based fuzzing of sb_latch (see fuzz_common.h; the
 * future lifecycle is fuzz_lifecycle.h's).
 *
 * Reference model (include/syncband/latch.h):
 *   count     the latch's count, 0 to SB_LATCH_MAX_COUNT
 *   queue     the registered waits, in order; empty whenever count is 0
 *   count_down(n)  n > count: -ERANGE, nothing changes; n == 0: 0, nothing
 *                  changes; else count -= n, and at 0 every registered wait
 *                  is released (woken)
 *   add(n)         count + n > MAX: -EOVERFLOW, nothing changes; else
 *                  count += n (on an open latch: closed again; released
 *                  waits stay released)
 *   try_wait       count == 0 ? 0 : -EAGAIN;  count() == count
 *   first poll     count 0: 0; else register, SB_PENDING (what the count was
 *                  at init does not matter)
 *   later poll     SB_PENDING while registered (waker replacement); 0 once
 *                  released, and again on every later poll; -ECANCELED after
 *                  cancel
 *   cancel         registered: unregister, drop the waker; otherwise nothing
 *                  (a released wait holds nothing to pass on)
 *   init           count > MAX: -EINVAL
 *   destroy        -EBUSY while waits are registered (the latch keeps working)
 *
 * Input: two header bytes (static initialiser or init; the count), then a
 * sequence of operations, one opcode byte (see `ops` below) and its argument
 * bytes each.  tests/fuzz/make_seeds.py writes the seed corpus.
 */
#include "fuzz_lifecycle.h"

static sb_latch *latch;

static struct {
	size_t count;
	fz_queue q;
} M;

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(M.count > 0 || M.q.len == 0);
	FZ_EXPECT_SIZE("sb_latch_count", M.count, sb_latch_count(latch));
}

/*
 * A count or an amount from one byte: 0..7 mostly, else a value near the
 * edges, some relative to the model's count (so that count_down and add hit
 * "exactly all", "one too many" and "exactly up to the maximum").
 */
static size_t amount(uint8_t b)
{
	if (b < 192)
		return b % 8;
	switch (b % 10) {
	case 0: return SB_LATCH_MAX_COUNT;
	case 1: return SB_LATCH_MAX_COUNT - 1;
	case 2: return SIZE_MAX;
	case 3: return SB_LATCH_MAX_COUNT / 2 + 1;
	case 4: return M.count;
	case 5: return M.count + 1;
	case 6: return 100;
	case 7: return SB_LATCH_MAX_COUNT - M.count;
	case 8: return SB_LATCH_MAX_COUNT - M.count + 1;
	default: return 33;
	}
}

/*
 * A fresh latch.  A count above the maximum: init refuses it and leaves the
 * latch as it was, which here is one made by SB_LATCH_INIT(1).
 */
static void new_latch(bool static_init, size_t count)
{
	latch = fz_xmalloc(sizeof *latch);
	fz_locks[0] = FZ_LOCKWORD(latch);
	M.q.len = 0;
	if (count > SB_LATCH_MAX_COUNT) {
		*latch = (sb_latch)SB_LATCH_INIT(1);
		FZ_EXPECT_RES("sb_latch_init", -EINVAL, sb_latch_init(latch, count));
		M.count = 1;
		return;
	}
	M.count = count;
	if (static_init)
		*latch = (sb_latch)SB_LATCH_INIT(count);
	else
		FZ_EXPECT_RES("sb_latch_init", 0, sb_latch_init(latch, count));
}

static void wait_init(void *f, int s)
{
	(void)s;
	sb_latch_wait_init(f, latch);
}

static int first_poll(int s)
{
	if (M.count == 0)
		return 0;
	fz_q_push(&M.q, s);
	return SB_PENDING;
}

/* A released wait holds nothing to pass on: cancel_detached is NULL. */
static const fz_model model = {
	.future = "wait",
	.poll_name = "sb_latch_wait_poll",
	.ops = &sb_latch_wait_ops,
	.size = sizeof(sb_latch_wait),
	.queue = &M.q,
	.init = wait_init,
	.first_poll = first_poll,
	.step_end = step_end,
};

static const fz_slot_ops slot_ops = { .model = &model };

static void op_count_down(size_t n)
{
	fz_step_begin("count_down(%zu) at count %zu, %d wait(s)", n, M.count, M.q.len);
	int exp = 0;
	if (n > M.count) {
		exp = -ERANGE;
	} else if (n > 0) {
		M.count -= n;
		if (M.count == 0)
			while (M.q.len > 0)
				fz_complete(fz_q_pop(&M.q), 0);
	}
	FZ_EXPECT_RES("sb_latch_count_down", exp, sb_latch_count_down(latch, n));
	step_end();
}

static void op_add(size_t n)
{
	fz_step_begin("add(%zu) at count %zu", n, M.count);
	int exp = 0;
	if (n > SB_LATCH_MAX_COUNT - M.count)
		exp = -EOVERFLOW;
	else
		M.count += n;
	FZ_EXPECT_RES("sb_latch_add", exp, sb_latch_add(latch, n));
	step_end();
}

static void op_try_wait(void)
{
	fz_step_begin("try_wait() at count %zu", M.count);
	FZ_EXPECT_RES("sb_latch_try_wait", M.count == 0 ? 0 : -EAGAIN, sb_latch_try_wait(latch));
	step_end();
}

/* The blocking wait that gives up at once: it must leave nothing behind. */
static void op_wait_blocking(void)
{
	fz_step_begin("wait_blocking(0) at count %zu", M.count);
	FZ_EXPECT_RES("sb_latch_wait_blocking", M.count == 0 ? 0 : -ETIMEDOUT,
		      sb_latch_wait_blocking(latch, 0));
	step_end();
}

static void op_destroy(uint8_t a, uint8_t b)
{
	if (M.q.len > 0) {
		fz_step_begin("destroy() while %d wait(s) registered", M.q.len);
		FZ_EXPECT_RES("sb_latch_destroy", -EBUSY, sb_latch_destroy(latch));
		step_end();
		return;
	}
	size_t count = amount(b);
	fz_step_begin("destroy(), then %s(%zu)", (a & 1) ? "SB_LATCH_INIT" : "sb_latch_init", count);
	FZ_EXPECT_RES("sb_latch_destroy", 0, sb_latch_destroy(latch));
	fz_forget_slots();
	free(latch);
	new_latch(a & 1, count);
	step_end();
}

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_COUNT_DOWN, OP_ADD, OP_TRY, OP_BLOCKING, OP_DESTROY,
	OP_CROWD,
};

static const uint8_t ops[18] = {
	OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL, OP_COUNT_DOWN,
	OP_COUNT_DOWN, OP_COUNT_DOWN, OP_ADD, OP_ADD, OP_TRY, OP_BLOCKING, OP_DESTROY, OP_CROWD,
	OP_CANCEL_CROWD, OP_POLL_ALL,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	fz_reset_slots();

	uint8_t b0 = fz_byte(&in);
	size_t count = amount(fz_byte(&in));
	fz_step_begin("latch %s(%zu)", (b0 & 1) ? "SB_LATCH_INIT" : "sb_latch_init", count);
	new_latch(b0 & 1, count);
	step_end();

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		int kind = ops[op % 18];
		switch (kind) {
		case OP_INIT:
			fz_init(&model, fz_byte(&in) % FZ_NSLOTS);
			break;
		case OP_COUNT_DOWN:
			op_count_down(amount(fz_byte(&in)));
			break;
		case OP_ADD:
			op_add(amount(fz_byte(&in)));
			break;
		case OP_TRY:
			op_try_wait();
			break;
		case OP_BLOCKING:
			op_wait_blocking();
			break;
		case OP_DESTROY: {
			uint8_t a = fz_byte(&in);
			op_destroy(a, fz_byte(&in));
			break;
		}
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
	FZ_EXPECT_RES("sb_latch_destroy", 0, sb_latch_destroy(latch));
	free(latch);
	latch = NULL;
	return 0;
}
