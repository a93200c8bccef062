/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_mutex - model-based fuzzing of sb_mutex (see fuzz_common.h; the
 * future lifecycle is fuzz_lifecycle.h's).
 *
 * Reference model (include/syncband/mutex.h), for both modes (the first
 * input byte picks one) and a clock the input moves (OP_TIME):
 *   locked    the mutex is held (by a task, or handed to a future that has
 *             not observed it yet)
 *   queue     FIFO of queued lock futures; in eventually fair mode the head
 *             may be "woken" (its waker spent), and each future remembers
 *             when a barger first passed it (passing the head passes
 *             everyone queued: all not yet timed are timed then)
 *   try_lock     locked: -EBUSY; else locked, 0 (in FIFO mode the mutex is
 *                never unlocked while futures are queued)
 *   unlock       not locked: -EPERM; nobody queued: unlocked; else hand the
 *                oldest the mutex (woken, stays locked) if the mutex is FIFO,
 *                in a handoff phase, or the oldest was passed more than the
 *                bound ago (a woken oldest still woken at this unlock is
 *                passed now), as seen when it is first passed or at every
 *                16th unlock after that finds it first, which starts a phase
 *                that hands it to every waiter then queued behind the
 *                oldest, in turn, ending early when the queue empties by a
 *                handoff or a cancel (its last handoff times the waiters
 *                that queued meanwhile half a bound back); else unlocked,
 *                and the oldest woken unless it is already
 *   first poll   unlocked: lock, 0; else queue, SB_PENDING
 *   later poll   SB_PENDING while queued (waker replacement); a woken head
 *                takes a free mutex (0) or re-registers at the front (passed:
 *                the queue is timed); 0 once
 *                handed the mutex, and again on every later
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
#include "fuzz_lifecycle.h"

#include "clock.h"

static sb_mutex *mtx;

static struct {
	bool locked;
	bool fifo;
	fz_queue q;
	bool woken[FZ_NALL];
	uint64_t passed_since[FZ_NALL]; /* 0: not timed */
	uint32_t unlocks_at_front[FZ_NALL]; /* unlocks that found it first, once timed */
	uint64_t now;
	uint32_t phase; /* handoffs left in a handoff phase, 0 if none */
} M;

/* The library's clock is the model's (src/clock.h). */
static uint64_t model_clock(void)
{
	return M.now;
}

/* ------------------------------------------------------------- the model */

/* Every queued waiter not yet timed (a run at the tail) is timed at `t`. */
static void m_time_passed_at(uint64_t t)
{
	for (int i = M.q.len - 1; i >= 0 && !M.passed_since[M.q.q[i]]; i--) {
		M.passed_since[M.q.q[i]] = t ? t : 1;
		M.unlocks_at_front[M.q.q[i]] = 0;
	}
}

/* A barger passed the head: every queued waiter not yet timed is timed now. */
static void m_time_passed(void)
{
	m_time_passed_at(M.now);
}

/*
 * Fair mode, about to hand the mutex to the oldest waiter: with nobody behind
 * it the phase ends; at the phase's last handoff the waiters that queued
 * during it are timed so that bargers may pass them for half a bound after
 * it, however long it took.
 */
static void m_phase_next(void)
{
	const uint64_t credit = SB_MUTEX_FAIRNESS_BOUND_NS / 2;
	if (M.q.len < 2) {
		M.phase = 0;
		return;
	}
	if (!M.phase)
		m_time_passed_at(M.now > credit ? M.now - credit : 1);
}

/* Whether letting go hands the mutex to the oldest waiter `h`. */
static bool m_hands_off(int h)
{
	if (M.fifo)
		return true;
	if (M.phase) {
		M.phase--; /* in a phase: every waiter it covers, in turn */
		return true;
	}
	bool first = !M.passed_since[h];
	if (first && !M.woken[h]) /* a woken head still woken now was passed */
		return false;
	if (!first && M.unlocks_at_front[h]++ % 16 != 0)
		return false; /* checked when first passed and every 16th (src/mutex.c) */
	m_time_passed();
	if (first)
		M.unlocks_at_front[h] = 1;
	if (M.now - M.passed_since[h] <= SB_MUTEX_FAIRNESS_BOUND_NS)
		return false;
	M.phase = (uint32_t)(M.q.len - 1); /* the waiters behind h now */
	return true;
}

/* Wakes the oldest waiter, unless it is woken already. */
static void m_wake_head(void)
{
	int h = M.q.q[0];
	if (M.woken[h])
		return;
	M.woken[h] = true;
	fz_wake_registered(h);
}

/* The holder lets go: hand to the oldest waiter, or unlock (and wake it). */
static void m_pass(void)
{
	FZ_ASSERT_MODEL(M.locked);
	if (M.q.len == 0) {
		M.locked = false;
		M.phase = 0;
		return;
	}
	int h = M.q.q[0];
	if (m_hands_off(h)) {
		if (!M.fifo)
			m_phase_next();
		fz_q_remove(&M.q, h);
		if (M.woken[h])
			fz_complete_woken(h, 0); /* a woken one's waker is spent */
		else
			fz_complete(h, 0);
		M.woken[h] = false;
		return;
	}
	M.locked = false;
	m_wake_head();
}

static void step_end(void)
{
	fz_step_check_wakers();
	/* A free mutex with futures queued has woken the oldest (fair mode). */
	FZ_ASSERT_MODEL(M.locked || M.q.len == 0 || (!M.fifo && M.woken[M.q.q[0]]));
	FZ_EXPECT("sb_mutex_is_locked", M.locked, sb_mutex_is_locked(mtx));
}

static void lock_init(void *f, int s)
{
	sb_mutex_lock_init(f, mtx);
	M.woken[s] = false;
}

static int first_poll(int s)
{
	if (!M.locked) {
		M.locked = true;
		return 0;
	}
	fz_q_push(&M.q, s);
	M.passed_since[s] = 0;
	return SB_PENDING;
}

static int queued_poll(int s, fz_wid w)
{
	if (!M.woken[s]) {
		fz_reregister(s, w);
		return SB_PENDING;
	}
	M.woken[s] = false;
	if (!M.locked) { /* a woken head takes the free mutex */
		fz_q_remove(&M.q, s);
		M.locked = true;
		return 0;
	}
	if (!M.passed_since[s])
		m_time_passed(); /* lost to a barger: the queue was passed */
	fz_register(s, w); /* at the front again */
	return SB_PENDING;
}

static bool woken(int s)
{
	return M.woken[s];
}

/* Left the queue: a woken head's wake goes on to the next. */
static void cancel_queued(int s)
{
	if (M.q.len == 0)
		M.phase = 0; /* the phase ends with the queue */
	if (!M.woken[s])
		return;
	M.woken[s] = false;
	if (!M.locked && M.q.len > 0)
		m_wake_head();
}

/* Handed the mutex but never observed it: pass it on.  (Done: the caller
 * holds the mutex, and its cancel does nothing.) */
static void cancel_detached(int s)
{
	(void)s;
	m_pass();
}

static const fz_model model = {
	.future = "lock",
	.poll_name = "sb_mutex_lock_poll",
	.ops = &sb_mutex_lock_ops,
	.size = sizeof(sb_mutex_lock),
	.queue = &M.q,
	.init = lock_init,
	.first_poll = first_poll,
	.queued_poll = queued_poll,
	.woken = woken,
	.cancel_queued = cancel_queued,
	.cancel_detached = cancel_detached,
	.step_end = step_end,
};

/* ---------------------------------------------------------------- the ops */

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
	M.q.len = 0;
	M.phase = 0;
}

static const fz_slot_ops slot_ops = { .model = &model };

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
	return fz_any_slot(FS_DETACHED);
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
	if (M.locked || M.q.len > 0) {
		fz_step_begin("destroy() while locked or waited on, %d future(s) queued", M.q.len);
		FZ_EXPECT_RES("sb_mutex_destroy", -EBUSY, sb_mutex_destroy(mtx));
		step_end();
		return;
	}
	fz_step_begin("destroy(), then %s%s", static_init ? "SB_MUTEX_INIT" : "sb_mutex_init",
		      M.fifo ? " (FIFO)" : "");
	FZ_EXPECT_RES("sb_mutex_destroy", 0, sb_mutex_destroy(mtx));
	FZ_ASSERT_MODEL(!fz_any_slot(FS_DETACHED));
	fz_forget_slots();
	free(mtx);
	new_mutex(static_init);
	step_end();
}

/* ------------------------------------------------------------- the driver */

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_TRY, OP_UNLOCK, OP_DESTROY, OP_CROWD, OP_TIME,
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
	fz_reset_slots();

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
		int kind = ops[op % 16];
		switch (kind) {
		case OP_INIT:
			fz_init(&model, fz_byte(&in) % FZ_NSLOTS);
			break;
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
			fz_crowd(&slot_ops, 1 + k % FZ_NCROWD, 0, fz_byte(&in));
			break;
		}
		default:
			fz_shared_op(&slot_ops, &in, kind);
			break;
		case OP_TIME:
			op_time(fz_byte(&in));
			break;
		}
	}

	fz_cancel_all(&slot_ops);
	FZ_ASSERT_MODEL(M.q.len == 0);
	if (M.locked)
		op_unlock(); /* the last holder lets go: nobody waits now */
	op_unlock();         /* and again: -EPERM, nothing changes */
	fz_step_begin("final: destroy");
	FZ_EXPECT_RES("sb_mutex_destroy", 0, sb_mutex_destroy(mtx));
	free(mtx);
	mtx = NULL;
	return 0;
}
