/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_semaphore - model-based fuzzing of sb_semaphore (see fuzz_common.h;
 * the future lifecycle is fuzz_lifecycle.h's).
 *
 * Reference model (include/syncband/semaphore.h), for both modes (bit 1 of
 * the first input byte picks strict FIFO) and a clock the input moves
 * (OP_TIME).  Strict FIFO:
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
 * Eventually fair (src/semaphore.c, src/fairness.h), on top of that:
 *   lone      a first waiter owed exactly one permit waits outside the queue;
 *             a release hands it its permit (the rest to the counter), and
 *             whatever takes the queue's lock (a second waiter, its re-poll
 *             with another waker, close) moves it into the queue
 *   spare     free permits while the queue (not a lone waiter) is non-empty;
 *             to the counter whenever the queue empties
 *   woken     the head, woken once `spare` covered it (its partial grant, if
 *             any, moved into `spare`): its next poll takes its permits from
 *             `spare`, or re-registers at the front
 *   barging   try_acquire and a first poll take from `spare` past the queue,
 *             unless a phase runs; leaving the head short times the queue
 *             (passed, once), as does a woken head that finds too few
 *   release   adds to `spare`; a timed queue is compared with the bound at
 *             every 16th such release; past it, a phase covers everyone then
 *             queued: `spare` goes to the queue in order (partial grants; a
 *             woken head gathers it in `spare`), each waiter served counting
 *             one off, the last stamping the queue half a bound back
 *   cancel    a partial grant goes to `spare` (a woken one holds none)
 *
 * Input: a sequence of operations, one opcode byte (see `ops` below) and its
 * argument bytes each.  tests/fuzz/make_seeds.py writes the seed corpus with
 * the same encoding.
 */
#include "fuzz_lifecycle.h"

#include "clock.h"

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
	bool fifo;
	/* eventually fair mode */
	bool lone[FZ_NALL];
	bool woken[FZ_NALL];
	size_t spare;
	uint32_t handoff;
	uint64_t passed_since; /* 0: not timed */
	uint16_t releases_timed;
	uint64_t now;
} M;

/* The library's clock is the model's (src/clock.h). */
static uint64_t model_clock(void)
{
	return M.now;
}

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

/* ------------------------------------------- the eventually fair mode */

static size_t fit(size_t count, size_t n)
{
	return n > COUNT_CAP - count ? COUNT_CAP - count : n;
}

static size_t owed_of(int h)
{
	return M.woken[h] ? A[h].n : A[h].owed;
}

static void f_time_pass(void)
{
	if (M.passed_since)
		return;
	M.passed_since = M.now ? M.now : 1;
	M.releases_timed = 0;
}

/* A phase served a waiter: after its last, the queue is timed half a bound back. */
static void f_served(void)
{
	const uint64_t credit = SB_FAIRNESS_BOUND_NS - SB_FAIRNESS_BOUND_NS / 2;
	if (--M.handoff != 0 && M.q.len > 0)
		return;
	M.handoff = 0;
	M.passed_since = M.q.len == 0 ? 0 : (M.now > credit ? M.now - credit : 1);
	M.releases_timed = 0;
}

/* The end of every locked step: feed a phase, wake a covered head, or empty. */
static void f_unlock(void)
{
	while (M.handoff && M.spare && M.q.len > 0) {
		int h = M.q.q[0];
		if (M.woken[h]) {
			if (A[h].n > M.spare)
				break;
			M.spare -= A[h].n;
			fz_q_remove(&M.q, h);
			M.woken[h] = false;
			fz_complete_woken(h, 0);
		} else if (A[h].owed > M.spare) {
			A[h].owed -= M.spare;
			M.spare = 0;
			break;
		} else {
			M.spare -= A[h].owed;
			A[h].owed = 0;
			fz_q_remove(&M.q, h);
			fz_complete(h, 0);
		}
		f_served();
	}
	if (M.q.len == 0) {
		M.count += fit(M.count, M.spare);
		M.spare = 0;
		M.handoff = 0;
		M.passed_since = 0;
		return;
	}
	int h = M.q.q[0];
	if (M.handoff || M.woken[h] || A[h].owed > M.spare)
		return;
	M.spare += A[h].n - A[h].owed;
	A[h].owed = A[h].n;
	M.woken[h] = true;
	fz_wake_registered(h);
}

/* A newcomer takes n from `spare` past the queue, if it may. */
static bool f_barge(size_t n)
{
	if (M.handoff || M.spare < n)
		return false;
	M.spare -= n;
	if (M.q.len > 0 && M.spare < owed_of(M.q.q[0]))
		f_time_pass();
	return true;
}

/* Whatever takes the queue's lock moves a lone waiter into the queue. */
static void f_adopt(void)
{
	if (M.q.len == 1 && M.lone[M.q.q[0]])
		M.lone[M.q.q[0]] = false;
}

static bool f_is_lone(void)
{
	return M.q.len == 1 && M.lone[M.q.q[0]];
}

/* release(n), 0 < n, `checked` by the maximum: the result. */
static int f_release(size_t n, bool checked)
{
	if (f_is_lone()) { /* one permit pays it, the rest to the counter */
		int h = M.q.q[0];
		fz_q_remove(&M.q, h);
		M.lone[h] = false;
		A[h].owed = 0;
		fz_complete(h, 0);
		M.count = n - 1;
		return 0;
	}
	if (M.q.len == 0) {
		if (checked && M.count > MAXP - n)
			return -EOVERFLOW;
		M.count += checked ? n : fit(M.count, n);
		return 0;
	}
	if (checked && M.spare > MAXP - n)
		return -EOVERFLOW;
	M.spare += fit(M.spare, n);
	if (!M.handoff && M.passed_since && M.releases_timed++ % 16 == 0 &&
	    M.now - M.passed_since > SB_FAIRNESS_BOUND_NS)
		M.handoff = (uint32_t)M.q.len;
	f_unlock();
	return 0;
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(M.q.len == 0 || M.count == 0);
	FZ_ASSERT_MODEL(M.q.len > 0 || M.spare == 0);
	/* Eventually fair, no phase: a head `spare` covers has been woken. */
	FZ_ASSERT_MODEL(M.fifo || M.handoff || M.q.len == 0 || M.woken[M.q.q[0]] ||
			A[M.q.q[0]].owed > M.spare);
	FZ_EXPECT_SIZE("sb_semaphore_available", M.count, sb_semaphore_available(sem));
	FZ_EXPECT("sb_semaphore_is_closed", M.closed, sb_semaphore_is_closed(sem));
}

static void acquire_init(void *f, int s)
{
	sb_semaphore_acquire_init(f, sem, A[s].n);
	M.lone[s] = false;
	M.woken[s] = false;
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
	if (!M.fifo && M.q.len > 0) {
		f_adopt();
		if (f_barge(n)) { /* under the lock, before it clones its waker */
			f_unlock();
			return 0;
		}
		A[s].owed = n;
		fz_q_push(&M.q, s);
		f_unlock();
		return SB_PENDING;
	}
	if (!M.fifo && n - M.count == 1) { /* waits alone, having taken n - 1 */
		A[s].owed = 1;
		M.count = 0;
		M.lone[s] = true;
		fz_q_push(&M.q, s);
		return SB_PENDING;
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

/* A queued future's later poll: eventually fair, a woken head retries. */
static int queued_poll(int s, fz_wid w)
{
	if (!M.woken[s]) {
		if (M.lone[s] && !(fz_reg[s].vt == w.vt && fz_reg[s].ctr == w.ctr))
			M.lone[s] = false; /* re-registering takes the lock */
		fz_reregister(s, w);
		return SB_PENDING;
	}
	/* The retry clones `w` only to re-register. */
	M.woken[s] = false;
	if (M.spare >= A[s].n) {
		M.spare -= A[s].n;
		A[s].owed = 0;
		fz_q_remove(&M.q, s);
		if (M.handoff)
			f_served();
		f_unlock();
		return 0;
	}
	if (M.handoff) {
		A[s].owed = A[s].n - M.spare; /* the phase's partial grant */
		M.spare = 0;
	} else {
		A[s].owed = A[s].n;
		f_time_pass(); /* a barger took what woke it */
	}
	fz_register(s, w);
	f_unlock();
	return SB_PENDING;
}

static bool woken(int s)
{
	return M.woken[s];
}

/* Its partial grant goes on in FIFO order (eventually fair: as the mode does). */
static void cancel_queued(int s)
{
	if (M.fifo) {
		m_grant(A[s].n - A[s].owed);
		return;
	}
	if (M.lone[s]) { /* withdrawn: what it took from the counter goes back */
		M.lone[s] = false;
		if (A[s].n > 1)
			(void)f_release(A[s].n - 1, false);
		return;
	}
	if (M.woken[s])
		M.woken[s] = false; /* its waker was spent; the unlock passes the wake on */
	else
		M.spare += fit(M.spare, A[s].n - A[s].owed);
	f_unlock();
}

/* A full grant nobody observed goes back (a close's -ESHUTDOWN holds none). */
static void cancel_detached(int s)
{
	if (fz_slots[s].result != 0)
		return;
	if (M.fifo)
		m_grant(A[s].n);
	else
		(void)f_release(A[s].n, false);
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
	.queued_poll = queued_poll,
	.woken = woken,
	.cancel_queued = cancel_queued,
	.cancel_detached = cancel_detached,
	.step_end = step_end,
	.describe = describe,
};

/* ---------------------------------------------------------------- the ops */

static void new_semaphore(size_t permits, bool static_init)
{
	sem = fz_xmalloc(sizeof *sem);
	if (static_init && M.fifo) {
		*sem = (sb_semaphore)SB_SEMAPHORE_INIT_FIFO(permits);
	} else if (static_init) {
		*sem = (sb_semaphore)SB_SEMAPHORE_INIT(permits);
	} else if (M.fifo) {
		int r = sb_semaphore_init_fifo(sem, permits);
		FZ_EXPECT_RES("sb_semaphore_init_fifo", 0, r);
	} else {
		int r = sb_semaphore_init(sem, permits);
		FZ_EXPECT_RES("sb_semaphore_init", 0, r);
	}
	fz_locks[0] = FZ_LOCKWORD(sem);
	M.count = permits;
	M.closed = false;
	M.q.len = 0;
	M.spare = 0;
	M.handoff = 0;
	M.passed_since = 0;
	M.releases_timed = 0;
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
	else if (M.q.len == 0 && M.count >= n) {
		M.count -= n;
		exp = 0;
	} else if (M.fifo || M.q.len == 0 || f_is_lone()) {
		exp = -EAGAIN;
	} else {
		exp = f_barge(n) ? 0 : -EAGAIN; /* under the lock */
		f_unlock();
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
	else if (!M.fifo)
		exp = f_release(n, true);
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
	size_t returned = M.spare;
	M.spare = 0;
	M.handoff = 0;
	M.passed_since = 0;
	f_adopt();
	while (M.q.len > 0) {
		int h = fz_q_pop(&M.q);
		if (M.woken[h]) { /* its waker is spent */
			M.woken[h] = false;
			fz_complete_woken(h, -ESHUTDOWN);
			continue;
		}
		returned += A[h].n - A[h].owed;
		fz_complete(h, -ESHUTDOWN);
	}
	M.count += fit(M.count, returned);
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
	fz_step_begin("destroy(), then %s%s(%s)%s", static_init ? "SB_SEMAPHORE_INIT" : "sb_semaphore_init",
		      M.fifo ? (static_init ? "_FIFO" : "_fifo") : "",
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

/* The clock moves: a little, or past the fairness bound. */
static void op_time(uint8_t how)
{
	uint64_t step = (how & 3) == 0 ? SB_FAIRNESS_BOUND_NS + 1 : (uint64_t)how * 1000;
	fz_step_begin("clock + %llu ns", (unsigned long long)step);
	M.now += step;
	step_end();
}

/* ------------------------------------------------------------- the driver */

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_TRY, OP_RELEASE, OP_CLOSE, OP_DESTROY, OP_CROWD, OP_TIME,
};

/* opcode byte % 20 -> operation: polls and releases are the common ones. */
static const uint8_t ops[20] = {
	OP_INIT, OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL,
	OP_TRY, OP_TRY, OP_RELEASE, OP_RELEASE, OP_RELEASE, OP_CLOSE, OP_DESTROY, OP_CROWD,
	OP_CANCEL_CROWD, OP_POLL_ALL, OP_TIME,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	fz_reset_slots();

	uint8_t b0 = fz_byte(&in);
	M.fifo = b0 & 2;
	M.now = 1000;
	sb__clock_set(model_clock);
	size_t permits = permit_value(fz_byte(&in));
	fz_step_begin("semaphore %s%s(%s)%s", (b0 & 1) ? "SB_SEMAPHORE_INIT" : "sb_semaphore_init",
		      M.fifo ? ((b0 & 1) ? "_FIFO" : "_fifo") : "",
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
		case OP_TIME:
			op_time(fz_byte(&in));
			break;
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
