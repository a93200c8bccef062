/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_mutex - model-based fuzzing of sb_mutex (see fuzz_common.h).
 *
 * Reference model (include/syncband/mutex.h), for both modes (the first
 * input byte picks one) and a clock the input moves (OP_TIME):
 *   locked    the mutex is held (by a task, or handed to a future that has
 *             not observed it yet)
 *   queue     FIFO of queued lock futures; in eventually fair mode the head
 *             may be "woken" (its waker spent), and each future remembers
 *             when it first lost the mutex to a barger
 *   try_lock     locked: -EBUSY; else locked, 0 (in FIFO mode the mutex is
 *                never unlocked while futures are queued)
 *   unlock       not locked: -EPERM; nobody queued: unlocked; else hand the
 *                oldest the mutex (woken, stays locked) if the mutex is FIFO,
 *                in a handoff phase, or the oldest lost more than the bound
 *                (a woken oldest that is still woken at this unlock lost now)
 *                ago (which starts a phase of one more bound, or until the
 *                queue empties by a handoff or a cancel); else unlocked,
 *                and the oldest woken unless it is already
 *   first poll   unlocked: lock, 0; else queue, SB_PENDING
 *   later poll   SB_PENDING while queued (waker replacement); a woken head
 *                takes a free mutex (0) or re-registers, remembering when it
 *                first lost; 0 once handed the mutex, and again on every later
 *                poll; -ECANCELED after cancel
 *   cancel       queued: leave the queue (drop the waker; a woken head's is
 *                spent, and it passes the wake to the next if the mutex is
 *                free); handed but not observed: pass the mutex on (as
 *                unlock); idle, done: nothing
 *   destroy      -EBUSY while locked or waited on (the mutex keeps working)
 *   is_locked    locked
 * The fuzzer unlocks only a mutex that is unlocked (-EPERM) or held by the
 * driving task (try_lock, or a lock future that returned 0): a mutex handed
 * to a future that has not observed it yet belongs to that future, whose
 * cancel passes it on; unlocking it from outside as well would release it
 * twice (caller misuse, as releasing a permit twice).
 *
 * Input: a sequence of operations, one opcode byte (see `ops` below) and its
 * argument bytes each.  tests/fuzz/make_seeds.py writes the seed corpus.
 */
#include "fuzz_common.h"

#include "clock.h"

typedef struct slot {
	int st;
	sb_mutex_lock *f;
} slot;

static slot S[FZ_NALL];
static sb_mutex *mtx;

static struct {
	bool locked;
	bool fifo;
	int q[FZ_NALL];
	int qlen;
	bool woken[FZ_NALL];
	uint64_t lost_since[FZ_NALL];
	uint64_t now;
	uint32_t phase; /* a handoff phase's start (low 32 bits), 0 if none */
} M;

/* The library's clock is the model's (src/clock.h). */
static uint64_t model_clock(void)
{
	return M.now;
}

/* ------------------------------------------------------------- the model */

static void q_remove(int s)
{
	int i = 0;
	while (i < M.qlen && M.q[i] != s)
		i++;
	FZ_ASSERT_MODEL(i < M.qlen);
	memmove(&M.q[i], &M.q[i + 1], (size_t)(M.qlen - i - 1) * sizeof M.q[0]);
	M.qlen--;
}

/* Whether letting go hands the mutex to the oldest waiter `h`. */
static bool m_hands_off(int h)
{
	if (M.fifo)
		return true;
	if (M.woken[h] && !M.lost_since[h]) /* passed before it could try */
		M.lost_since[h] = M.now ? M.now : 1;
	if (!M.phase && !M.lost_since[h])
		return false;
	if (M.phase) {
		if ((uint32_t)M.now - M.phase > SB_MUTEX_FAIRNESS_BOUND_NS)
			M.phase = 0;
		return true;
	}
	if (M.now - M.lost_since[h] <= SB_MUTEX_FAIRNESS_BOUND_NS)
		return false;
	M.phase = (uint32_t)M.now ? (uint32_t)M.now : 1;
	return true;
}

/* Wakes the oldest waiter, unless it is woken already. */
static void m_wake_head(void)
{
	int h = M.q[0];
	if (M.woken[h])
		return;
	M.woken[h] = true;
	fz_wake_registered(h);
}

/* The holder lets go: hand to the oldest waiter, or unlock (and wake it). */
static void m_pass(void)
{
	FZ_ASSERT_MODEL(M.locked);
	if (M.qlen == 0) {
		M.locked = false;
		M.phase = 0;
		return;
	}
	int h = M.q[0];
	if (m_hands_off(h)) {
		q_remove(h);
		S[h].st = FS_DETACHED;
		if (!M.woken[h])
			fz_wake_registered(h); /* a woken one's waker is spent */
		M.woken[h] = false;
		if (M.qlen == 0)
			M.phase = 0; /* the phase ends with the queue */
		return;
	}
	M.locked = false;
	m_wake_head();
}

static void step_end(void)
{
	fz_step_check_wakers();
	/* A free mutex with futures queued has woken the oldest (fair mode). */
	FZ_ASSERT_MODEL(M.locked || M.qlen == 0 || (!M.fifo && M.woken[M.q[0]]));
	FZ_EXPECT("sb_mutex_is_locked", M.locked, sb_mutex_is_locked(mtx));
}

/* ---------------------------------------------------------------- the ops */

static void op_cancel(int s, bool free_it);

static void new_mutex(bool static_init)
{
	mtx = fz_xmalloc(sizeof *mtx);
	if (static_init)
		*mtx = M.fifo ? (sb_mutex)SB_MUTEX_INIT_FIFO : (sb_mutex)SB_MUTEX_INIT;
	else if (M.fifo)
		FZ_EXPECT_RES("sb_mutex_init_fifo", 0, sb_mutex_init_fifo(mtx));
	else
		FZ_EXPECT_RES("sb_mutex_init", 0, sb_mutex_init(mtx));
	fz_locks[0] = FZ_LOCKWORD(mtx);
	M.locked = false;
	M.qlen = 0;
	M.phase = 0;
}

static void op_init(int s)
{
	if (S[s].st == FS_QUEUED || S[s].st == FS_DETACHED)
		op_cancel(s, true);
	fz_step_begin("lock_init(slot %d)", s);
	free(S[s].f);
	S[s].f = fz_xmalloc(sizeof *S[s].f);
	sb_mutex_lock_init(S[s].f, mtx);
	S[s].st = FS_IDLE;
	M.woken[s] = false;
	M.lost_since[s] = 0;
	step_end();
}

static void op_poll(int s, fz_wid w)
{
	slot *x = &S[s];
	if (x->st == FS_UNUSED)
		return;
	fz_step_begin("lock_poll(slot %d, waker %s)", s, fz_wname(w));
	int exp;
	switch (x->st) {
	case FS_IDLE:
		if (!M.locked) {
			M.locked = true;
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
		exp = SB_PENDING;
		if (!M.woken[s]) {
			fz_reregister(s, w);
		} else if (!M.locked) { /* a woken head takes the free mutex */
			q_remove(s);
			M.woken[s] = false;
			M.locked = true;
			x->st = FS_DONE;
			exp = 0;
		} else { /* lost to a barger: at the front again */
			if (!M.lost_since[s])
				M.lost_since[s] = M.now ? M.now : 1;
			M.woken[s] = false;
			fz_register(s, w);
		}
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
	FZ_EXPECT_RES("sb_mutex_lock_poll", exp, sb_mutex_lock_poll(x->f, &wk));
	step_end();
}

static void op_cancel(int s, bool free_it)
{
	slot *x = &S[s];
	if (x->st == FS_UNUSED)
		return;
	fz_step_begin("lock_cancel(slot %d)%s", s, free_it ? " + free" : "");
	switch (x->st) {
	case FS_IDLE:
		x->st = FS_CANCELLED;
		break;
	case FS_QUEUED:
		q_remove(s);
		if (M.qlen == 0)
			M.phase = 0; /* the phase ends with the queue */
		if (M.woken[s]) { /* its waker is spent; the wake goes on */
			M.woken[s] = false;
			if (!M.locked && M.qlen > 0)
				m_wake_head();
		} else {
			fz_drop_registered(s);
		}
		x->st = FS_CANCELLED;
		break;
	case FS_DETACHED:
		m_pass(); /* handed the mutex but never observed it: pass it on */
		x->st = FS_CANCELLED;
		break;
	default: /* done (the caller holds the mutex), cancelled: nothing */
		break;
	}
	sb_mutex_lock_cancel(x->f);
	if (free_it) {
		free(x->f);
		x->f = NULL;
		x->st = FS_UNUSED;
	}
	step_end();
}

static void op_try_lock(void)
{
	fz_step_begin("try_lock()");
	int exp = M.locked ? -EBUSY : 0;
	M.locked = true;
	FZ_EXPECT_RES("sb_mutex_try_lock", exp, sb_mutex_try_lock(mtx));
	step_end();
}

/* True while the mutex was handed to a future that has not observed it: it
 * is that future's, and only its poll or cancel may act on it. */
static bool handed_to_a_future(void)
{
	for (int s = 0; s < FZ_NALL; s++)
		if (S[s].st == FS_DETACHED)
			return true;
	return false;
}

static void op_unlock(void)
{
	if (handed_to_a_future())
		return; /* a task unlocking what it does not hold: misuse, not modelled */
	fz_step_begin("unlock()%s", M.locked ? "" : " of an unlocked mutex");
	int exp = 0;
	if (M.locked)
		m_pass();
	else
		exp = -EPERM;
	FZ_EXPECT_RES("sb_mutex_unlock", exp, sb_mutex_unlock(mtx));
	step_end();
}

/* The clock moves: a little, or past the fairness bound. */
static void op_time(uint8_t how)
{
	uint64_t step = (how & 3) == 0 ? SB_MUTEX_FAIRNESS_BOUND_NS + 1 : (uint64_t)how * 1000;
	fz_step_begin("clock + %llu ns", (unsigned long long)step);
	M.now += step;
	step_end();
}

static void op_destroy(bool static_init)
{
	if (M.locked || M.qlen > 0) {
		fz_step_begin("destroy() while locked or waited on, %d future(s) queued", M.qlen);
		FZ_EXPECT_RES("sb_mutex_destroy", -EBUSY, sb_mutex_destroy(mtx));
		step_end();
		return;
	}
	fz_step_begin("destroy(), then %s%s", static_init ? "SB_MUTEX_INIT" : "sb_mutex_init",
		      M.fifo ? " (FIFO)" : "");
	FZ_EXPECT_RES("sb_mutex_destroy", 0, sb_mutex_destroy(mtx));
	for (int s = 0; s < FZ_NALL; s++) {
		FZ_ASSERT_MODEL(S[s].st != FS_QUEUED && S[s].st != FS_DETACHED);
		free(S[s].f);
		S[s] = (slot){ .st = FS_UNUSED };
	}
	free(mtx);
	new_mutex(static_init);
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

/* ------------------------------------------------------------- the driver */

enum {
	OP_INIT, OP_POLL, OP_CANCEL, OP_TRY, OP_UNLOCK, OP_DESTROY, OP_CROWD,
	OP_CANCEL_CROWD, OP_POLL_ALL, OP_TIME,
};

static const uint8_t ops[16] = {
	OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_TIME,
	OP_TRY, OP_UNLOCK, OP_UNLOCK, OP_UNLOCK, OP_DESTROY, OP_CROWD, OP_CANCEL_CROWD,
	OP_POLL_ALL,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	for (int s = 0; s < FZ_NALL; s++)
		S[s] = (slot){ .st = FS_UNUSED };

	uint8_t b0 = fz_byte(&in);
	M.fifo = b0 & 2;
	M.now = 1000;
	sb__clock_set(model_clock);
	fz_step_begin("mutex %s%s", (b0 & 1) ? "SB_MUTEX_INIT" : "sb_mutex_init",
		      M.fifo ? " (FIFO)" : " (eventually fair)");
	new_mutex(b0 & 1);
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
		case OP_TRY:
			op_try_lock();
			break;
		case OP_UNLOCK:
			op_unlock();
			break;
		case OP_DESTROY:
			op_destroy(fz_byte(&in) & 1);
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
		case OP_TIME:
			op_time(fz_byte(&in));
			break;
		}
	}

	fz_in_final = true;
	for (int s = 0; s < FZ_NALL; s++)
		op_cancel(s, true);
	FZ_ASSERT_MODEL(M.qlen == 0);
	fz_check_no_live_wakers();
	if (M.locked)
		op_unlock(); /* the last holder lets go: nobody waits now */
	op_unlock();         /* and again: -EPERM, nothing changes */
	fz_step_begin("final: destroy");
	FZ_EXPECT_RES("sb_mutex_destroy", 0, sb_mutex_destroy(mtx));
	free(mtx);
	mtx = NULL;
	return 0;
}
