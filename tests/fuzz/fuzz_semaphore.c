/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_semaphore - model-based fuzzing of sb_semaphore (see fuzz_common.h).
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
#include "fuzz_common.h"

#define MAXP SB_SEMAPHORE_MAX_PERMITS
#define COUNT_CAP (2 * MAXP + 1)

typedef struct slot {
	int st;
	size_t n;    /* requested */
	size_t owed; /* while queued */
	int result;  /* FS_DETACHED / FS_DONE */
	sb_semaphore_acquire *f;
} slot;

static slot S[FZ_NALL];
static sb_semaphore *sem;

static struct {
	size_t count;
	bool closed;
	int q[FZ_NALL];
	int qlen;
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

static void q_push(int s)
{
	M.q[M.qlen++] = s;
}

static void q_remove(int s)
{
	int i = 0;
	while (i < M.qlen && M.q[i] != s)
		i++;
	FZ_ASSERT_MODEL(i < M.qlen);
	memmove(&M.q[i], &M.q[i + 1], (size_t)(M.qlen - i - 1) * sizeof M.q[0]);
	M.qlen--;
}

/* Hands n permits to the queue in FIFO order; the rest to the counter once
 * nobody is queued. */
static void m_grant(size_t n)
{
	while (n > 0 && M.qlen > 0) {
		int h = M.q[0];
		if (S[h].owed > n) {
			S[h].owed -= n;
			return;
		}
		n -= S[h].owed;
		S[h].owed = 0;
		q_remove(h);
		S[h].st = FS_DETACHED;
		S[h].result = 0;
		fz_wake_registered(h);
	}
	if (M.qlen == 0) /* the counter saturates instead of wrapping (semaphore.h) */
		M.count = M.count > COUNT_CAP - n ? COUNT_CAP : M.count + n;
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(M.qlen == 0 || M.count == 0);
	FZ_EXPECT_SIZE("sb_semaphore_available", M.count, sb_semaphore_available(sem));
	FZ_EXPECT("sb_semaphore_is_closed", M.closed, sb_semaphore_is_closed(sem));
}

/* ---------------------------------------------------------------- the ops */

static void op_cancel(int s, bool free_it);

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
	M.qlen = 0;
}

static void op_init(int s, size_t n)
{
	if (S[s].st == FS_QUEUED || S[s].st == FS_DETACHED)
		op_cancel(s, true);
	fz_step_begin("acquire_init(slot %d, n=%s)", s, pname(n));
	free(S[s].f);
	S[s].f = fz_xmalloc(sizeof *S[s].f);
	sb_semaphore_acquire_init(S[s].f, sem, n);
	S[s].st = FS_IDLE;
	S[s].n = n;
	step_end();
}

static void op_poll(int s, fz_wid w)
{
	slot *x = &S[s];
	if (x->st == FS_UNUSED)
		return;
	fz_step_begin("acquire_poll(slot %d [n=%s], waker %s)", s, pname(x->n), fz_wname(w));
	int exp;
	switch (x->st) {
	case FS_IDLE:
		if (x->n > MAXP) {
			exp = -EINVAL;
		} else if (M.closed) {
			exp = -ESHUTDOWN;
		} else if (x->n == 0) {
			exp = 0;
		} else if (M.qlen == 0 && M.count >= x->n) {
			M.count -= x->n;
			exp = 0;
		} else {
			if (M.qlen == 0) {
				x->owed = x->n - M.count; /* the first waiter takes a partial grant */
				M.count = 0;
			} else {
				x->owed = x->n;
			}
			q_push(s);
			fz_register(s, w);
			exp = SB_PENDING;
		}
		if (exp != SB_PENDING) {
			x->st = FS_DONE;
			x->result = exp;
		} else {
			x->st = FS_QUEUED;
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
	case FS_DONE:
		exp = x->result;
		break;
	default: /* FS_CANCELLED */
		exp = -ECANCELED;
		break;
	}
	sb_waker wk = fz_waker(w);
	int r = sb_semaphore_acquire_poll(x->f, &wk);
	FZ_EXPECT_RES("sb_semaphore_acquire_poll", exp, r);
	step_end();
}

static void op_cancel(int s, bool free_it)
{
	slot *x = &S[s];
	if (x->st == FS_UNUSED)
		return;
	fz_step_begin("acquire_cancel(slot %d [n=%s])%s", s, pname(x->n),
		      free_it ? " + free" : "");
	switch (x->st) {
	case FS_IDLE:
		x->st = FS_CANCELLED;
		break;
	case FS_QUEUED: {
		size_t partial = x->n - x->owed;
		q_remove(s);
		fz_drop_registered(s);
		m_grant(partial);
		x->st = FS_CANCELLED;
		break;
	}
	case FS_DETACHED:
		if (x->result == 0)
			m_grant(x->n); /* a full grant nobody observed goes back */
		x->st = FS_CANCELLED;
		break;
	default: /* FS_DONE, FS_CANCELLED: nothing */
		break;
	}
	sb_semaphore_acquire_cancel(x->f);
	if (free_it) {
		free(x->f);
		x->f = NULL;
		x->st = FS_UNUSED;
	}
	step_end();
}

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
	else if (M.qlen > 0 || M.count < n)
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
	else if (M.qlen == 0 && M.count > MAXP - n)
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
	while (M.qlen > 0) {
		int h = M.q[0];
		returned += S[h].n - S[h].owed;
		q_remove(h);
		S[h].st = FS_DETACHED;
		S[h].result = -ESHUTDOWN;
		fz_wake_registered(h);
	}
	M.count += returned;
	sb_semaphore_close(sem);
	step_end();
}

static void forget_all_slots(void)
{
	for (int s = 0; s < FZ_NALL; s++) {
		FZ_ASSERT_MODEL(S[s].st != FS_QUEUED && S[s].st != FS_DETACHED);
		free(S[s].f);
		S[s].f = NULL;
		S[s].st = FS_UNUSED;
	}
}

static void op_destroy(size_t permits, bool static_init)
{
	if (M.qlen > 0) {
		fz_step_begin("destroy() while %d future(s) queued", M.qlen);
		FZ_EXPECT_RES("sb_semaphore_destroy", -EBUSY, sb_semaphore_destroy(sem));
		step_end();
		return;
	}
	/* A granted future nobody observed would return its permits to a
	 * destroyed semaphore when cancelled; the caller must not destroy then. */
	for (int s = 0; s < FZ_NALL; s++)
		if (S[s].st == FS_DETACHED)
			return;
	fz_step_begin("destroy(), then %s(%s)%s", static_init ? "SB_SEMAPHORE_INIT" : "sb_semaphore_init",
		      pname(permits > MAXP ? permits & 7 : permits),
		      permits > MAXP ? ", after init(above the maximum) -> -EINVAL" : "");
	FZ_EXPECT_RES("sb_semaphore_destroy", 0, sb_semaphore_destroy(sem));
	forget_all_slots();
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

static bool slot_reusable(int s)
{
	return S[s].st != FS_QUEUED && S[s].st != FS_DETACHED;
}

/* Initialise and poll crowd slots [0, k): enough of them to need more than
 * one wake batch. */
static void op_crowd(int k, size_t n, uint8_t wbyte)
{
	for (int i = 0; i < k; i++) {
		int s = FZ_NSLOTS + i;
		if (!slot_reusable(s))
			continue;
		op_init(s, n);
		op_poll(s, fz_waker_choice(s, wbyte));
	}
}

static void op_cancel_crowd(uint8_t how)
{
	for (int i = 0; i < FZ_NCROWD; i++) {
		int s = (how & 1) ? FZ_NALL - 1 - i : FZ_NSLOTS + i;
		op_cancel(s, how & 2);
	}
}

static void op_poll_all(uint8_t wbyte)
{
	for (int s = 0; s < FZ_NALL; s++)
		op_poll(s, fz_waker_choice(s, wbyte));
}

/* ------------------------------------------------------------- the driver */

enum {
	OP_INIT, OP_POLL, OP_CANCEL, OP_TRY, OP_RELEASE, OP_CLOSE, OP_DESTROY,
	OP_CROWD, OP_CANCEL_CROWD, OP_POLL_ALL,
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
	for (int s = 0; s < FZ_NALL; s++)
		S[s] = (slot){ .st = FS_UNUSED };

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
		switch (ops[op % 20]) {
		case OP_INIT: {
			uint8_t a = fz_byte(&in);
			op_init(a % FZ_NSLOTS, permit_value(fz_byte(&in)));
			break;
		}
		case OP_POLL: {
			uint8_t a = fz_byte(&in);
			op_poll(a % FZ_NSLOTS, fz_waker_choice(a % FZ_NSLOTS, fz_byte(&in)));
			break;
		}
		case OP_CANCEL: {
			uint8_t a = fz_byte(&in);
			op_cancel(a % FZ_NSLOTS, a & 0x80);
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
			op_crowd(1 + k % FZ_NCROWD, permit_value(v), fz_byte(&in));
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

	/* Cancel everything; nothing may stay registered or be lost. */
	fz_in_final = true;
	for (int s = 0; s < FZ_NALL; s++)
		op_cancel(s, true);
	FZ_ASSERT_MODEL(M.qlen == 0);
	fz_check_no_live_wakers();
	fz_step_begin("final: available, is_closed, destroy");
	FZ_EXPECT_SIZE("sb_semaphore_available", M.count, sb_semaphore_available(sem));
	FZ_EXPECT("sb_semaphore_is_closed", M.closed, sb_semaphore_is_closed(sem));
	FZ_EXPECT_RES("sb_semaphore_destroy", 0, sb_semaphore_destroy(sem));
	free(sem);
	sem = NULL;
	return 0;
}
