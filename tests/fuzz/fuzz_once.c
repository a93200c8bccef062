/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_once - model-based fuzzing of sb_once (see fuzz_common.h; the future
 * lifecycle is fuzz_lifecycle.h's, with the runner's own rules below).
 *
 * Reference model (include/syncband/once.h):
 *   done      a runner reported success (final)
 *   runner    who holds the job: a slot (its future returned SB_ONCE_RUN,
 *             or was handed the job and has not polled yet), EXTERNAL (a
 *             caller told SB_ONCE_RUN by try() or a blocking wait, or whose
 *             runner future was dropped without cancel), or NOBODY
 *   queue     the waiting futures, in order (only while a runner holds it)
 *   first poll   done: 0; nobody holds the job: this slot does, SB_ONCE_RUN;
 *                else register, SB_PENDING
 *   later poll   SB_PENDING while registered (waker replacement); then 0
 *                (done) or SB_ONCE_RUN (handed the job), and that again on
 *                every later poll; -ECANCELED after cancel
 *   complete()   nobody holds the job, done, or the job was handed to a
 *                future that has not polled since: -EPERM; else done, every
 *                registered future completes with 0 (woken)
 *   fail()       -EPERM as complete(); else "pass on": the oldest registered
 *                future is handed the job (woken, SB_ONCE_RUN), or nobody
 *                holds it
 *   try()        done: 0; a runner holds it: -EAGAIN; else EXTERNAL holds
 *                it, SB_ONCE_RUN
 *   blocking(0)  done: 0; nobody holds it: EXTERNAL, SB_ONCE_RUN; else
 *                -ETIMEDOUT, nothing changed
 *   cancel       registered: unregister, drop the waker; holding the job
 *                (handed, or told SB_ONCE_RUN) while it is still its own:
 *                pass it on; else nothing
 *   destroy      -EBUSY while futures wait or a runner holds the job
 *
 * Input: a sequence of operations, one opcode byte (see `ops` below) and its
 * argument bytes each.  tests/fuzz/make_seeds.py writes the seed corpus.
 */
#include "fuzz_lifecycle.h"

#define NOBODY (-1)
#define EXTERNAL (-2)

static sb_once *once;

static struct {
	bool done;
	int runner;
	fz_queue q;
} M;

static bool m_running(void)
{
	return !M.done && M.runner != NOBODY;
}

/* Whether complete() and fail() may report: a runner holds the job and, if
 * it was handed to a future, that future's poll has told it so. */
static bool m_may_report(void)
{
	return m_running() && (M.runner < 0 || fz_slots[M.runner].st != FS_DETACHED);
}

/* The runner failed: the oldest waiter is handed the job, or nobody has it. */
static void m_pass_on(void)
{
	if (M.q.len == 0) {
		M.runner = NOBODY;
		return;
	}
	int h = fz_q_pop(&M.q);
	fz_complete(h, SB_ONCE_RUN);
	M.runner = h;
}

static void m_complete(void)
{
	M.done = true;
	M.runner = NOBODY;
	while (M.q.len > 0)
		fz_complete(fz_q_pop(&M.q), 0);
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(M.q.len == 0 || m_running());
	FZ_ASSERT_MODEL(!M.done || M.runner == NOBODY);
	FZ_EXPECT_RES("sb_once_is_done", M.done, sb_once_is_done(once));
}

static void new_once(bool static_init)
{
	once = fz_xmalloc(sizeof *once);
	if (static_init)
		*once = (sb_once)SB_ONCE_INIT;
	else
		FZ_EXPECT_RES("sb_once_init", 0, sb_once_init(once));
	fz_locks[0] = FZ_LOCKWORD(once);
	M.done = false;
	M.runner = NOBODY;
	M.q.len = 0;
}

static void wait_init(void *f, int s)
{
	(void)s;
	sb_once_wait_init(f, once);
}

static int first_poll(int s)
{
	if (M.done)
		return 0;
	if (M.runner == NOBODY) {
		M.runner = s;
		return SB_ONCE_RUN;
	}
	fz_q_push(&M.q, s);
	return SB_PENDING;
}

/* Completed, not observed: handed the job, which it passes on if still its own. */
static void cancel_detached(int s)
{
	if (fz_slots[s].result == SB_ONCE_RUN && M.runner == s)
		m_pass_on();
}

static const fz_model model = {
	.future = "wait",
	.poll_name = "sb_once_wait_poll",
	.ops = &sb_once_wait_ops,
	.size = sizeof(sb_once_wait),
	.queue = &M.q,
	.init = wait_init,
	.first_poll = first_poll,
	.cancel_detached = cancel_detached,
	.step_end = step_end,
};

/* A future that observed SB_ONCE_RUN: done for the lifecycle, but it holds
 * the job until its runner reports. */
static bool told_to_run(int s)
{
	return fz_slots[s].st == FS_DONE && fz_slots[s].result == SB_ONCE_RUN;
}

static bool slot_busy(int s)
{
	return fz_slot_busy(&model, s);
}

static void op_init(int s, uint8_t arg)
{
	(void)arg;
	/* Its memory goes without a cancel: the caller keeps the job. */
	if (told_to_run(s) && M.runner == s)
		M.runner = EXTERNAL;
	fz_init(&model, s);
}

static void op_poll(int s, fz_wid w)
{
	fz_poll(&model, s, w);
}

static void op_cancel(int s, bool free_it)
{
	if (!told_to_run(s)) {
		fz_cancel(&model, s, free_it);
		return;
	}
	fz_slot *x = &fz_slots[s];
	fz_step_begin("wait_cancel(slot %d, told to run%s)%s", s,
		      M.runner == s ? ", still the runner" : "", free_it ? " + free" : "");
	if (M.runner == s) /* the runner's cancel before its report: a failure */
		m_pass_on();
	x->st = FS_CANCELLED;
	sb_once_wait_cancel(x->f);
	if (free_it) {
		free(x->f);
		x->f = NULL;
		x->st = FS_UNUSED;
	}
	step_end();
}

static const fz_slot_ops slot_ops = { NULL, slot_busy, op_init, op_poll, op_cancel };

static void op_complete(void)
{
	fz_step_begin("complete()%s", m_may_report() ? "" : " (nobody may report)");
	int exp = m_may_report() ? 0 : -EPERM;
	if (exp == 0)
		m_complete();
	FZ_EXPECT_RES("sb_once_complete", exp, sb_once_complete(once));
	step_end();
}

static void op_fail(void)
{
	fz_step_begin("fail()%s", m_may_report() ? "" : " (nobody may report)");
	int exp = m_may_report() ? 0 : -EPERM;
	if (exp == 0)
		m_pass_on();
	FZ_EXPECT_RES("sb_once_fail", exp, sb_once_fail(once));
	step_end();
}

static void op_try(void)
{
	fz_step_begin("try()");
	int exp = M.done ? 0 : M.runner != NOBODY ? -EAGAIN : SB_ONCE_RUN;
	if (exp == SB_ONCE_RUN)
		M.runner = EXTERNAL;
	FZ_EXPECT_RES("sb_once_try", exp, sb_once_try(once));
	step_end();
}

/* timeout 0: it polls, and if it must wait, polls once more and cancels. */
static void op_blocking(void)
{
	fz_step_begin("wait_blocking(0)");
	int exp = M.done ? 0 : M.runner != NOBODY ? -ETIMEDOUT : SB_ONCE_RUN;
	if (exp == SB_ONCE_RUN)
		M.runner = EXTERNAL;
	FZ_EXPECT_RES("sb_once_wait_blocking", exp, sb_once_wait_blocking(once, 0));
	step_end();
}

static void op_destroy(uint8_t a)
{
	if (M.q.len > 0 || m_running()) {
		fz_step_begin("destroy() while %d wait(s) registered, runner %d", M.q.len, M.runner);
		FZ_EXPECT_RES("sb_once_destroy", -EBUSY, sb_once_destroy(once));
		step_end();
		return;
	}
	/* A completed wait nobody observed still reads the once when cancelled
	 * (one told to run, too); the caller must not destroy then. */
	if (fz_any_slot(FS_DETACHED))
		return;
	fz_step_begin("destroy(), then %s", (a & 1) ? "SB_ONCE_INIT" : "sb_once_init");
	FZ_EXPECT_RES("sb_once_destroy", 0, sb_once_destroy(once));
	fz_forget_slots();
	free(once);
	new_once(a & 1);
	step_end();
}

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_COMPLETE, OP_FAIL, OP_TRY, OP_BLOCKING, OP_DESTROY, OP_CROWD,
};

static const uint8_t ops[16] = {
	OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL, OP_FAIL,
	OP_FAIL, OP_COMPLETE, OP_TRY, OP_BLOCKING, OP_DESTROY, OP_CROWD, OP_CANCEL_CROWD,
	OP_POLL_ALL,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	fz_reset_slots();

	uint8_t b0 = fz_byte(&in);
	fz_step_begin("once %s", (b0 & 1) ? "SB_ONCE_INIT" : "sb_once_init");
	new_once(b0 & 1);
	step_end();

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		int kind = ops[op % 16];
		switch (kind) {
		case OP_INIT:
			op_init(fz_byte(&in) % FZ_NSLOTS, 0);
			break;
		case OP_COMPLETE:
			op_complete();
			break;
		case OP_FAIL:
			op_fail();
			break;
		case OP_TRY:
			op_try();
			break;
		case OP_BLOCKING:
			op_blocking();
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
	FZ_ASSERT_MODEL(M.runner == NOBODY || M.runner == EXTERNAL);
	if (M.runner == EXTERNAL)
		op_fail(); /* the caller that kept the job reports */
	op_try();      /* the once is free (or done): SB_ONCE_RUN (or 0) */
	if (!M.done)
		op_complete();
	op_complete(); /* and done for good: -EPERM */
	fz_step_begin("final: destroy");
	FZ_EXPECT_RES("sb_once_destroy", 0, sb_once_destroy(once));
	free(once);
	once = NULL;
	return 0;
}
