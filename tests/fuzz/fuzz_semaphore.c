/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_semaphore - model-based fuzzing of sb_semaphore (see fuzz_common.h;
 * the future lifecycle is fuzz_lifecycle.h's).
 *
 * Reference model (include/syncband/semaphore.h):
 *   count     permits in the counter (may exceed the maximum only through a
 *             cancelled, fully granted future returning its permits, and
 *             saturates at COUNT_CAP = 2 * MAX + 1 instead of wrapping)
 *   closed    close() was called
 *   queue     FIFO of queued futures, each (slot, requested, owed); only the
 *             head can hold a partial grant, and count is 0 while it is non-empty
 *   release(n)   n > MAX: -EOVERFLOW; n == 0: 0; nobody queued: -EOVERFLOW if
 *                count + n > MAX, else count += n; otherwise permits go to
 *                the head in FIFO order, completing (waking) each it satisfies,
 *                the rest to the counter once the queue is empty
 *   try_acquire  n > MAX: -EINVAL; closed: -ESHUTDOWN; n == 0: 0; queued or
 *                short: -EAGAIN; else count -= n
 *   first poll   n > MAX: -EINVAL; closed: -ESHUTDOWN; n == 0: 0; nobody
 *                queued and enough: take, 0; else queue (a first waiter takes
 *                what the counter has as a partial grant): SB_PENDING
 *   later poll   SB_PENDING while queued (waker replacement); 0 / -ESHUTDOWN
 *                once completed, and again on every later poll; -ECANCELED
 *                after cancel
 *   cancel       queued: leave the queue, partial grant goes on in FIFO order;
 *                granted but unobserved: all permits go on; closed, idle,
 *                done: nothing
 *   close        every queued future completes with -ESHUTDOWN (woken), its
 *                partial grant returns to the counter; later acquires fail
 *   destroy      -EBUSY while queued (and the semaphore keeps working)
 *   available    count; is_closed: closed
 *
 * Input: a sequence of operations, one opcode byte (see `ops` below) and its
 * argument bytes each.  tests/fuzz/make_seeds.py writes the seed corpus with
 * the same encoding.
 */
#include "fuzz_lifecycle.h"

#define MAXP SB_SEMAPHORE_MAX_PERMITS
#define COUNT_CAP (2 * MAXP + 1)

/* Each slot's request, beside its lifecycle (fz_slots). */
static struct {
	size_t n;    /* requested */
	size_t owed; /* while queued */
} A[FZ_NALL];

static sb_semaphore *sem;

static struct {
	size_t count;
	bool closed;
	fz_queue q;
} M;

static size_t permit_value(uint8_t v)
{
	static const size_t special[16] = {
		8, 3, 100, MAXP / 2, MAXP / 2 + 1, MAXP - 1, MAXP, MAXP + 1,
		SIZE_MAX, SIZE_MAX >> 1, MAXP - 7, (size_t)1 << 20, MAXP / 3, 2, 1, 0,
	};
	if (v < 192)
		return v % 8;
	return special[(v - 192) % 16];
}

static const char *pname(size_t n)
{
	static char buf[4][40];
	static unsigned k;
	char *b = buf[k++ & 3];
	if (n == MAXP)
		return "MAX";
	if (n == SIZE_MAX)
		return "SIZE_MAX";
	if (n > MAXP / 2)
		snprintf(b, 40, "MAX%+lld", (long long)(n - MAXP));
	else
		snprintf(b, 40, "%zu", n);
	return b;
}

/* ------------------------------------------------------------- the model */

/* Hands n permits to the queue in FIFO order; the rest to the counter once
 * nobody is queued. */
static void m_grant(size_t n)
{
	while (n > 0 && M.q.len > 0) {
		int h = M.q.q[0];
		if (A[h].owed > n) {
			A[h].owed -= n;
			return;
		}
		n -= A[h].owed;
		A[h].owed = 0;
		fz_q_remove(&M.q, h);
		fz_complete(h, 0);
	}
	if (M.q.len == 0) /* the counter saturates instead of wrapping (semaphore.h) */
		M.count = M.count > COUNT_CAP - n ? COUNT_CAP : M.count + n;
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(M.q.len == 0 || M.count == 0);
	FZ_EXPECT_SIZE("sb_semaphore_available", M.count, sb_semaphore_available(sem));
	FZ_EXPECT("sb_semaphore_is_closed", M.closed, sb_semaphore_is_closed(sem));
}

static void acquire_init(void *f, int s)
{
	sb_semaphore_acquire_init(f, sem, A[s].n);
}

static int first_poll(int s)
{
	size_t n = A[s].n;
	if (n > MAXP)
		return -EINVAL;
	if (M.closed)
		return -ESHUTDOWN;
	if (n == 0)
		return 0;
	if (M.q.len == 0 && M.count >= n) {
		M.count -= n;
		return 0;
	}
	if (M.q.len == 0) {
		A[s].owed = n - M.count; /* the first waiter takes a partial grant */
		M.count = 0;
	} else {
		A[s].owed = n;
	}
	fz_q_push(&M.q, s);
	return SB_PENDING;
}

/* Its partial grant goes on in FIFO order. */
static void cancel_queued(int s)
{
	m_grant(A[s].n - A[s].owed);
}

/* A full grant nobody observed goes back (a close's -ESHUTDOWN holds none). */
static void cancel_detached(int s)
{
	if (fz_slots[s].result == 0)
		m_grant(A[s].n);
}

static const char *describe(int s)
{
	static char buf[4][56];
	static unsigned k;
	char *b = buf[k++ & 3];
	snprintf(b, 56, " [n=%s]", pname(A[s].n));
	return b;
}

static const fz_model model = {
	.future = "acquire",
	.poll_name = "sb_semaphore_acquire_poll",
	.ops = &sb_semaphore_acquire_ops,
	.size = sizeof(sb_semaphore_acquire),
	.queue = &M.q,
	.init = acquire_init,
	.first_poll = first_poll,
	.cancel_queued = cancel_queued,
	.cancel_detached = cancel_detached,
	.step_end = step_end,
	.describe = describe,
};

/* ---------------------------------------------------------------- the ops */

static void new_semaphore(size_t permits, bool static_init)
{
	sem = fz_xmalloc(sizeof *sem);
	if (static_init) {
		*sem = (sb_semaphore)SB_SEMAPHORE_INIT(permits);
	} else {
		int r = sb_semaphore_init(sem, permits);
		FZ_EXPECT_RES("sb_semaphore_init", 0, r);
	}
	fz_locks[0] = FZ_LOCKWORD(sem);
	M.count = permits;
	M.closed = false;
	M.q.len = 0;
}

static bool slot_busy(int s)
{
	return fz_slot_busy(&model, s);
}
static void op_init(int s, size_t n)
{
	if (slot_busy(s))
		fz_cancel(&model, s, true); /* with its old request */
	A[s].n = n;
	A[s].owed = 0;
	fz_init(&model, s);
}
static void op_crowd_init(int s, uint8_t v)
{
	op_init(s, permit_value(v));
}
static void op_poll(int s, fz_wid w)
{
	fz_poll(&model, s, w);
}
static void op_cancel(int s, bool free_it)
{
	fz_cancel(&model, s, free_it);
}
static const fz_slot_ops slot_ops = { NULL, slot_busy, op_crowd_init, op_poll, op_cancel };

static void op_try_acquire(size_t n)
{
	fz_step_begin("try_acquire(n=%s)", pname(n));
	int exp;
	if (n > MAXP)
		exp = -EINVAL;
	else if (M.closed)
		exp = -ESHUTDOWN;
	else if (n == 0)
		exp = 0;
	else if (M.q.len > 0 || M.count < n)
		exp = -EAGAIN;
	else {
		M.count -= n;
		exp = 0;
	}
	FZ_EXPECT_RES("sb_semaphore_try_acquire", exp, sb_semaphore_try_acquire(sem, n));
	step_end();
}

static void op_release(size_t n)
{
	fz_step_begin("release(n=%s)", pname(n));
	int exp = 0;
	if (n > MAXP)
		exp = -EOVERFLOW;
	else if (n == 0)
		exp = 0;
	else if (M.q.len == 0 && M.count > MAXP - n)
		exp = -EOVERFLOW;
	else
		m_grant(n);
	FZ_EXPECT_RES("sb_semaphore_release", exp, sb_semaphore_release(sem, n));
	step_end();
}

static void op_close(void)
{
	fz_step_begin("close()");
	M.closed = true;
	size_t returned = 0;
	while (M.q.len > 0) {
		int h = fz_q_pop(&M.q);
		returned += A[h].n - A[h].owed;
		fz_complete(h, -ESHUTDOWN);
	}
	M.count += returned;
	sb_semaphore_close(sem);
	step_end();
}

static void op_destroy(size_t permits, bool static_init)
{
	if (M.q.len > 0) {
		fz_step_begin("destroy() while %d future(s) queued", M.q.len);
		FZ_EXPECT_RES("sb_semaphore_destroy", -EBUSY, sb_semaphore_destroy(sem));
		step_end();
		return;
	}
	/* A granted future nobody observed would return its permits to a
	 * destroyed semaphore when cancelled; the caller must not destroy then. */
	if (fz_any_slot(FS_DETACHED))
		return;
	fz_step_begin("destroy(), then %s(%s)%s", static_init ? "SB_SEMAPHORE_INIT" : "sb_semaphore_init",
		      pname(permits > MAXP ? permits & 7 : permits),
		      permits > MAXP ? ", after init(above the maximum) -> -EINVAL" : "");
	FZ_EXPECT_RES("sb_semaphore_destroy", 0, sb_semaphore_destroy(sem));
	fz_forget_slots();
	free(sem);
	if (permits > MAXP) {
		sb_semaphore *tmp = fz_xmalloc(sizeof *tmp);
		FZ_EXPECT_RES("sb_semaphore_init (above the maximum)", -EINVAL,
			      sb_semaphore_init(tmp, permits));
		free(tmp);
		permits &= 7;
	}
	new_semaphore(permits, static_init);
	step_end();
}

/* ------------------------------------------------------------- the driver */

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_TRY, OP_RELEASE, OP_CLOSE, OP_DESTROY, OP_CROWD,
};

/* opcode byte % 20 -> operation: polls and releases are the common ones. */
static const uint8_t ops[20] = {
	OP_INIT, OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL,
	OP_TRY, OP_TRY, OP_RELEASE, OP_RELEASE, OP_RELEASE, OP_CLOSE, OP_DESTROY, OP_CROWD,
	OP_CANCEL_CROWD, OP_POLL_ALL, OP_RELEASE,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	fz_reset_slots();

	uint8_t b0 = fz_byte(&in);
	size_t permits = permit_value(fz_byte(&in));
	fz_step_begin("semaphore %s(%s)%s", (b0 & 1) ? "SB_SEMAPHORE_INIT" : "sb_semaphore_init",
		      pname(permits > MAXP ? permits & 7 : permits),
		      permits > MAXP ? ", after init(above the maximum) -> -EINVAL" : "");
	if (permits > MAXP) {
		sb_semaphore tmp;
		FZ_EXPECT_RES("sb_semaphore_init (above the maximum)", -EINVAL,
			      sb_semaphore_init(&tmp, permits));
		permits &= 7;
	}
	new_semaphore(permits, b0 & 1);
	step_end();

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		int kind = ops[op % 20];
		switch (kind) {
		case OP_INIT: {
			uint8_t a = fz_byte(&in);
			op_init(a % FZ_NSLOTS, permit_value(fz_byte(&in)));
			break;
		}
		case OP_TRY:
			op_try_acquire(permit_value(fz_byte(&in)));
			break;
		case OP_RELEASE:
			op_release(permit_value(fz_byte(&in)));
			break;
		case OP_CLOSE:
			op_close();
			break;
		case OP_DESTROY: {
			uint8_t a = fz_byte(&in);
			op_destroy(permit_value(a), a & 1);
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

	/* Cancel everything; nothing may stay registered or be lost. */
	fz_cancel_all(&slot_ops);
	FZ_ASSERT_MODEL(M.q.len == 0);
	fz_step_begin("final: available, is_closed, destroy");
	FZ_EXPECT_SIZE("sb_semaphore_available", M.count, sb_semaphore_available(sem));
	FZ_EXPECT("sb_semaphore_is_closed", M.closed, sb_semaphore_is_closed(sem));
	FZ_EXPECT_RES("sb_semaphore_destroy", 0, sb_semaphore_destroy(sem));
	free(sem);
	sem = NULL;
	return 0;
}
