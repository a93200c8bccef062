/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_rwlock - model-based fuzzing of sb_rwlock (see fuzz_common.h; the
 * future lifecycle is fuzz_lifecycle.h's).
 *
 * Reference model (include/syncband/rwlock.h):
 *   readers     plain read locks held (by the task, or granted to futures
 *               that have not observed them yet)
 *   writer      the write lock is held; upgradable: the upgradable read is
 *   queue       FIFO of queued futures, each of a kind (read, write,
 *               upgradable read); a pending upgrade waits at its front
 *   grant       after anything that frees something: the upgrade at the
 *               front gets the write lock once readers == 0 (the upgradable
 *               read becomes it), and nothing else moves while it waits; a
 *               writer at the front gets it once nothing is held; readers
 *               at the front enter while no writer holds, one after the
 *               other, an upgradable reader among them while the
 *               upgradable read is free; the first that may not stops it
 *   try_read      nobody queued, no writer: a read, 0; else -EAGAIN
 *   try_write     nobody queued, nothing held: the write lock; else -EAGAIN
 *   try_upgradable_read  nobody queued, no writer, no upgradable reader
 *   try_upgrade   no upgradable read: -EPERM; upgrade pending: -EBUSY;
 *                 readers: -EAGAIN; else the upgradable read becomes the
 *                 write lock
 *   read_unlock   no readers: -EPERM; else one fewer, grant
 *   write_unlock  no writer: -EPERM; else free, grant
 *   downgrade     no writer: -EPERM; else a read instead, grant
 *   upgradable_unlock  not held: -EPERM; upgrade pending: -EBUSY; else
 *                 free, grant
 *   first poll    as the try of its kind, else queue (an upgrade: its
 *                 errors, or wait at the front of the queue), SB_PENDING
 *   later poll    SB_PENDING while queued (waker replacement); 0 once
 *                 granted, and again on every later poll
 *   cancel        queued: leave the queue (drop the waker), grant; granted
 *                 but not observed: give back what it was granted (a read,
 *                 the write lock, the upgradable read; an upgrade: the write
 *                 lock turns back into the upgradable read), grant
 *   destroy       -EBUSY while anything is held or queued
 * The fuzzer releases only what the driving task holds (a try that
 * succeeded, or a future that returned 0): what was granted to a future
 * that has not observed it is that future's, and its cancel gives it back;
 * releasing it from outside as well would release it twice (misuse).  For
 * the same reason an upgrade is started only when the upgradable read is
 * the task's.
 *
 * Input: a sequence of operations, one opcode byte (see `ops` below) and its
 * argument bytes each.  tests/fuzz/make_seeds.py writes the seed corpus.
 */
#include "fuzz_lifecycle.h"

#include <syncband/rwlock.h>

#include "clock.h"

static sb_rwlock *rwl;

static struct {
	size_t readers;
	bool writer;
	bool upgradable;
	bool fifo;
	fz_queue q;
	int kind[FZ_NALL];
	bool woken[FZ_NALL];
	uint64_t passed_since[FZ_NALL]; /* 0: not timed */
	uint32_t passes[FZ_NALL];       /* passes that found it first, once timed */
	uint64_t now;
	uint32_t phase; /* grants left in a handoff phase, 0 if none */
} M;

/* The library's clock is the model's (src/clock.h). */
static uint64_t model_clock(void)
{
	return M.now;
}

static const char *const kind_names[] = { "?", "read", "write", "upgradable", "upgrade" };

/* ------------------------------------------------------------- the model */

/* The front of the queue is a pending upgrade. */
static bool m_upgrade_pending(void)
{
	return M.q.len > 0 && M.kind[M.q.q[0]] == SB_RWLOCK_UPGRADE;
}

/* Where the queue of the others starts (behind a pending upgrade). */
static int m_first(void)
{
	return m_upgrade_pending() ? 1 : 0;
}

/* Whether anyone but a pending upgrade waits (the library's NONEMPTY). */
static bool m_waiters(void)
{
	return M.q.len > m_first();
}

/* Whether the front of the queue, of `kind`, may have what it waits for. */
static bool m_may_grant(int kind)
{
	switch (kind) {
	case SB_RWLOCK_READ:
		return !M.writer;
	case SB_RWLOCK_WRITE:
		return !M.writer && !M.upgradable && M.readers == 0;
	case SB_RWLOCK_UPGRADABLE:
		return !M.writer && !M.upgradable;
	default: /* SB_RWLOCK_UPGRADE */
		return M.readers == 0;
	}
}

/* Whether the holders (and no pending upgrade) let `kind` in, queue aside. */
static bool m_allows(int kind)
{
	return !m_upgrade_pending() && m_may_grant(kind);
}

static void m_take(int kind)
{
	switch (kind) {
	case SB_RWLOCK_READ:
		M.readers++;
		break;
	case SB_RWLOCK_WRITE:
		M.writer = true;
		break;
	case SB_RWLOCK_UPGRADABLE:
		M.upgradable = true;
		break;
	default:
		M.upgradable = false;
		M.writer = true;
		break;
	}
}

/* Every queued waiter not yet timed (a run at the tail) is timed at `t`. */
static void m_time_passed_at(uint64_t t)
{
	for (int i = M.q.len - 1; i >= m_first() && !M.passed_since[M.q.q[i]]; i--) {
		M.passed_since[M.q.q[i]] = t ? t : 1;
		M.passes[M.q.q[i]] = 0;
	}
}

/* A handoff phase granted `n` waiters: it ends with the last it covers,
 * timing the waiters that queued during it half a bound back. */
static void m_phase_count(uint32_t n)
{
	const uint64_t credit = SB_FAIRNESS_BOUND_NS / 2;
	if (M.phase == 0)
		return;
	if (M.phase > n) {
		M.phase -= n;
		return;
	}
	M.phase = 0;
	m_time_passed_at(M.now > credit ? M.now - credit : 1);
}

/* The queue grants queued `s` (a woken one's waker is spent). */
static void m_complete(int s)
{
	fz_q_remove(&M.q, s);
	if (M.woken[s])
		fz_complete_woken(s, 0);
	else
		fz_complete(s, 0);
	M.woken[s] = false;
}

/*
 * Lets in what is free now: the pending upgrade first; then the front of the
 * queue, granted in FIFO mode or a handoff phase, otherwise woken (a writer,
 * or the run of readers up to the next writer), staying queued.
 */
static void m_grant(void)
{
	for (;;) {
		if (!m_waiters())
			M.phase = 0; /* the phase ends with the queue */
		if (m_upgrade_pending()) {
			if (M.readers == 0) {
				int u = M.q.q[0];
				m_take(SB_RWLOCK_UPGRADE);
				m_complete(u);
			}
			return;
		}
		if (M.q.len == 0)
			return;
		int h = M.q.q[0];
		int k = M.kind[h];
		if (!m_may_grant(k))
			return;
		if (!M.fifo && M.phase == 0) {
			bool upgradable = M.upgradable; /* one upgradable reader at most */
			for (int i = 0; i < M.q.len; i++) {
				int s = M.q.q[i];
				int ks = M.kind[s];
				if (ks == SB_RWLOCK_WRITE ? i > 0 || !m_may_grant(ks)
							   : M.writer || (ks == SB_RWLOCK_UPGRADABLE && upgradable))
					break;
				if (!M.woken[s]) {
					M.woken[s] = true;
					fz_wake_registered(s);
				}
				if (ks == SB_RWLOCK_WRITE)
					break;
				if (ks == SB_RWLOCK_UPGRADABLE)
					upgradable = true;
			}
			return;
		}
		if (k == SB_RWLOCK_WRITE) {
			m_take(k);
			m_phase_count(1);
			m_complete(h);
			if (M.q.len == 0)
				M.phase = 0; /* the phase ends with the queue */
			return;
		}
		uint32_t n = 0;
		while (M.q.len > 0 && M.kind[M.q.q[0]] != SB_RWLOCK_WRITE &&
		       m_may_grant(M.kind[M.q.q[0]])) {
			int s = M.q.q[0];
			m_take(M.kind[s]);
			m_complete(s);
			n++;
		}
		m_phase_count(n);
	}
}

/* What a newcomer that the holders let in does about the queue (fair mode). */
enum { M_BARGE, M_REFUSED, M_PHASE_STARTED };

static int m_barge(int kind)
{
	if (M.phase)
		return M_REFUSED;
	int h = M.q.q[0];
	/* the head could share what the newcomer takes: no pass */
	size_t readers = M.readers;
	bool writer = M.writer, upgradable = M.upgradable;
	m_take(kind);
	bool shares = m_may_grant(M.kind[h]);
	M.readers = readers;
	M.writer = writer;
	M.upgradable = upgradable;
	if (shares)
		return M_BARGE;
	bool first = !M.passed_since[h];
	if (first || M.passes[h]++ % 16 == 0) { /* checked every 16th (fairness.h) */
		m_time_passed_at(M.now);
		if (first)
			M.passes[h] = 1;
		else if (M.now - M.passed_since[h] > SB_FAIRNESS_BOUND_NS) {
			M.phase = (uint32_t)M.q.len;
			return M_PHASE_STARTED;
		}
	}
	return M_BARGE;
}

/* A read, write or upgradable read asked for now: true when taken. */
static bool m_try_take(int kind)
{
	for (;;) {
		if (!m_allows(kind))
			return false;
		if (!m_waiters()) {
			m_take(kind);
			return true;
		}
		if (M.fifo)
			return false;
		switch (m_barge(kind)) {
		case M_BARGE:
			m_take(kind);
			return true;
		case M_REFUSED:
			return false;
		default:
			m_grant(); /* then decide again */
			break;
		}
	}
}

/* What the task may release: not what a future was granted and never saw. */
static bool m_granted_to_a_future(int kind)
{
	for (int s = 0; s < FZ_NALL; s++)
		if (fz_slots[s].st == FS_DETACHED && M.kind[s] == kind)
			return true;
	return false;
}

static int m_detached_reads(void)
{
	int n = 0;
	for (int s = 0; s < FZ_NALL; s++)
		n += fz_slots[s].st == FS_DETACHED && M.kind[s] == SB_RWLOCK_READ;
	return n;
}

static bool m_task_holds_writer(void)
{
	return M.writer && !m_granted_to_a_future(SB_RWLOCK_WRITE) &&
	       !m_granted_to_a_future(SB_RWLOCK_UPGRADE);
}

static bool m_task_holds_upgradable(void)
{
	return M.upgradable && !m_granted_to_a_future(SB_RWLOCK_UPGRADABLE);
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_EXPECT_SIZE("sb_rwlock_readers", M.readers, sb_rwlock_readers(rwl));
	FZ_EXPECT("sb_rwlock_is_write_locked", M.writer, sb_rwlock_is_write_locked(rwl));
	FZ_ASSERT_MODEL(!(M.writer && (M.readers || M.upgradable)));
}

static void lock_init(void *f, int s)
{
	switch (M.kind[s]) {
	case SB_RWLOCK_READ:
		sb_rwlock_read_init(f, rwl);
		break;
	case SB_RWLOCK_WRITE:
		sb_rwlock_write_init(f, rwl);
		break;
	case SB_RWLOCK_UPGRADABLE:
		sb_rwlock_upgradable_read_init(f, rwl);
		break;
	default:
		sb_rwlock_upgrade_init(f, rwl);
		break;
	}
}

static int first_poll(int s)
{
	int k = M.kind[s];
	M.woken[s] = false;
	M.passed_since[s] = 0;
	if (k == SB_RWLOCK_UPGRADE) {
		if (!M.upgradable)
			return -EPERM;
		if (m_upgrade_pending())
			return -EBUSY;
		if (M.readers == 0) {
			m_take(k);
			return 0;
		}
		/* at the front: served before everyone queued */
		memmove(&M.q.q[1], &M.q.q[0], (size_t)M.q.len * sizeof M.q.q[0]);
		M.q.q[0] = s;
		M.q.len++;
		return SB_PENDING;
	}
	if (m_try_take(k))
		return 0;
	fz_q_push(&M.q, s);
	return SB_PENDING;
}

/* A woken waiter's poll tries again; others re-register. */
static int queued_poll(int s, fz_wid w)
{
	if (!M.woken[s]) {
		fz_reregister(s, w);
		return SB_PENDING;
	}
	M.woken[s] = false;
	if (M.phase == 0 && m_allows(M.kind[s])) {
		fz_q_remove(&M.q, s);
		m_take(M.kind[s]);
		return 0;
	}
	if (!M.passed_since[s])
		m_time_passed_at(M.now); /* lost to a newcomer: the queue was passed */
	fz_register(s, w); /* in its place again */
	return SB_PENDING;
}

static bool woken(int s)
{
	return M.woken[s];
}

/* Left the queue (a woken one's wake goes on): let in what may enter now. */
static void cancel_queued(int s)
{
	M.woken[s] = false;
	m_grant();
}

/* Granted but never observed: give it back. */
static void cancel_detached(int s)
{
	switch (M.kind[s]) {
	case SB_RWLOCK_READ:
		FZ_ASSERT_MODEL(M.readers > 0);
		M.readers--;
		break;
	case SB_RWLOCK_WRITE:
		M.writer = false;
		break;
	case SB_RWLOCK_UPGRADABLE:
		M.upgradable = false;
		break;
	default: /* back to the upgradable read */
		M.writer = false;
		M.upgradable = true;
		break;
	}
	m_grant();
}

static const char *describe(int s)
{
	static char buf[24];
	snprintf(buf, sizeof buf, " [%s]", kind_names[M.kind[s]]);
	return buf;
}

static const fz_model model = {
	.future = "lock",
	.poll_name = "sb_rwlock_lock_poll",
	.ops = &sb_rwlock_lock_ops,
	.size = sizeof(sb_rwlock_lock),
	.queue = &M.q,
	.init = lock_init,
	.first_poll = first_poll,
	.queued_poll = queued_poll,
	.woken = woken,
	.cancel_queued = cancel_queued,
	.cancel_detached = cancel_detached,
	.step_end = step_end,
	.describe = describe,
};

/* ---------------------------------------------------------------- the ops */

static void new_rwlock(bool static_init)
{
	rwl = fz_xmalloc(sizeof *rwl);
	if (static_init)
		*rwl = M.fifo ? (sb_rwlock)SB_RWLOCK_INIT_FIFO : (sb_rwlock)SB_RWLOCK_INIT;
	else if (M.fifo)
		FZ_EXPECT_RES("sb_rwlock_init_fifo", 0, sb_rwlock_init_fifo(rwl));
	else
		FZ_EXPECT_RES("sb_rwlock_init", 0, sb_rwlock_init(rwl));
	fz_locks[0] = FZ_LOCKWORD(rwl);
	M.readers = 0;
	M.writer = M.upgradable = false;
	M.q.len = 0;
	M.phase = 0;
}

static bool slot_busy(int s)
{
	return fz_slot_busy(&model, s);
}

/* `arg`: the kind, 1 to 4 from its low bits (a crowd passes its own). */
static void op_init(int s, uint8_t arg)
{
	if (slot_busy(s))
		fz_cancel(&model, s, true);
	M.kind[s] = 1 + arg % 4;
	fz_init(&model, s);
}

static void op_poll(int s, fz_wid w)
{
	/* an upgrade of an upgradable read that a future holds: misuse */
	if (fz_slots[s].st == FS_IDLE && M.kind[s] == SB_RWLOCK_UPGRADE &&
	    M.upgradable && !m_task_holds_upgradable())
		return;
	fz_poll(&model, s, w);
}

static void op_cancel(int s, bool free_it)
{
	fz_cancel(&model, s, free_it);
}

static const fz_slot_ops slot_ops = { NULL, slot_busy, op_init, op_poll, op_cancel };

static void op_try(int kind)
{
	int exp;
	if (kind == SB_RWLOCK_UPGRADE) {
		if (M.upgradable && !m_task_holds_upgradable())
			return;
		fz_step_begin("try_upgrade()");
		if (!M.upgradable)
			exp = -EPERM;
		else if (m_upgrade_pending())
			exp = -EBUSY;
		else if (M.readers)
			exp = -EAGAIN;
		else
			exp = 0;
	} else {
		fz_step_begin("try_%s()", kind_names[kind]);
		exp = m_try_take(kind) ? 0 : -EAGAIN;
	}
	if (exp == 0 && kind == SB_RWLOCK_UPGRADE)
		m_take(kind);
	int got = kind == SB_RWLOCK_READ	 ? sb_rwlock_try_read(rwl)
		  : kind == SB_RWLOCK_WRITE	 ? sb_rwlock_try_write(rwl)
		  : kind == SB_RWLOCK_UPGRADABLE ? sb_rwlock_try_upgradable_read(rwl)
						 : sb_rwlock_try_upgrade(rwl);
	FZ_EXPECT_RES("sb_rwlock_try_*", exp, got);
	step_end();
}

static void op_read_unlock(void)
{
	if (M.readers > 0 && (int)M.readers == m_detached_reads())
		return; /* every read is a future's */
	fz_step_begin("read_unlock()%s", M.readers ? "" : " with no reader");
	int exp = M.readers ? 0 : -EPERM;
	if (M.readers) {
		/* lock-free (nothing let in) unless the last reader with someone
		 * waiting */
		bool slow = M.readers == 1 && M.q.len > 0;
		M.readers--;
		if (slow)
			m_grant();
	}
	FZ_EXPECT_RES("sb_rwlock_read_unlock", exp, sb_rwlock_read_unlock(rwl));
	step_end();
}

/* write_unlock, or with `downgrade` a downgrade. */
static void op_write_unlock(bool downgrade)
{
	if (M.writer && !m_task_holds_writer())
		return;
	fz_step_begin("%s()%s", downgrade ? "downgrade" : "write_unlock",
		      M.writer ? "" : " with no writer");
	int exp = M.writer ? 0 : -EPERM;
	if (M.writer) {
		M.writer = false;
		if (downgrade)
			M.readers++;
		if (M.q.len > 0) /* lock-free with nobody waiting */
			m_grant();
	}
	FZ_EXPECT_RES(downgrade ? "sb_rwlock_downgrade" : "sb_rwlock_write_unlock", exp,
		      downgrade ? sb_rwlock_downgrade(rwl) : sb_rwlock_write_unlock(rwl));
	step_end();
}

static void op_upgradable_unlock(void)
{
	if (M.upgradable && !m_task_holds_upgradable())
		return;
	fz_step_begin("upgradable_unlock()");
	int exp = !M.upgradable ? -EPERM : m_upgrade_pending() ? -EBUSY : 0;
	if (exp == 0) {
		M.upgradable = false;
		if (M.q.len > 0) /* lock-free with nobody waiting */
			m_grant();
	}
	FZ_EXPECT_RES("sb_rwlock_upgradable_unlock", exp, sb_rwlock_upgradable_unlock(rwl));
	step_end();
}

static void op_destroy(bool static_init)
{
	if (M.readers || M.writer || M.upgradable || M.q.len > 0) {
		fz_step_begin("destroy() while held or waited on, %d future(s) queued", M.q.len);
		FZ_EXPECT_RES("sb_rwlock_destroy", -EBUSY, sb_rwlock_destroy(rwl));
		step_end();
		return;
	}
	fz_step_begin("destroy(), then %s%s", static_init ? "SB_RWLOCK_INIT" : "sb_rwlock_init",
		      M.fifo ? "_fifo" : "");
	FZ_EXPECT_RES("sb_rwlock_destroy", 0, sb_rwlock_destroy(rwl));
	FZ_ASSERT_MODEL(!fz_any_slot(FS_DETACHED));
	fz_forget_slots();
	free(rwl);
	new_rwlock(static_init);
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
	OP_INIT = FZ_OP_FIRST_OWN, OP_TRY, OP_READ_UNLOCK, OP_WRITE_UNLOCK, OP_DOWNGRADE,
	OP_UPGRADABLE_UNLOCK, OP_DESTROY, OP_CROWD, OP_TIME,
};

static const uint8_t ops[16] = {
	OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL_ALL, OP_CANCEL, OP_TRY, OP_TRY,
	OP_READ_UNLOCK, OP_TIME, OP_WRITE_UNLOCK, OP_DOWNGRADE, OP_UPGRADABLE_UNLOCK,
	OP_DESTROY, OP_CROWD, OP_CANCEL_CROWD,
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
	fz_step_begin("rwlock %s%s", (b0 & 1) ? "SB_RWLOCK_INIT" : "sb_rwlock_init",
		      M.fifo ? " (FIFO)" : " (eventually fair)");
	new_rwlock(b0 & 1);
	step_end();

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		int kind = ops[op % 16];
		switch (kind) {
		case OP_INIT: {
			uint8_t a = fz_byte(&in);
			op_init(a % FZ_NSLOTS, a >> 3);
			break;
		}
		case OP_TRY:
			op_try(1 + fz_byte(&in) % 4);
			break;
		case OP_READ_UNLOCK:
			op_read_unlock();
			break;
		case OP_WRITE_UNLOCK:
			op_write_unlock(false);
			break;
		case OP_DOWNGRADE:
			op_write_unlock(true);
			break;
		case OP_UPGRADABLE_UNLOCK:
			op_upgradable_unlock();
			break;
		case OP_DESTROY:
			op_destroy(fz_byte(&in) & 1);
			break;
		case OP_TIME:
			op_time(fz_byte(&in));
			break;
		case OP_CROWD: {
			uint8_t k = fz_byte(&in);
			/* readers, writers and upgradable readers (never upgrades) */
			fz_crowd(&slot_ops, 1 + k % FZ_NCROWD, (uint8_t)((k >> 6) % 3), fz_byte(&in));
			break;
		}
		default:
			fz_shared_op(&slot_ops, &in, kind);
			break;
		}
	}

	fz_cancel_all(&slot_ops);
	FZ_ASSERT_MODEL(M.q.len == 0);
	/* the task lets go of what it holds; then each unlock once more: -EPERM */
	while (M.readers)
		op_read_unlock();
	op_write_unlock(false);
	op_upgradable_unlock();
	op_read_unlock();
	op_write_unlock(false);
	op_upgradable_unlock();
	fz_step_begin("final: destroy");
	FZ_EXPECT_RES("sb_rwlock_destroy", 0, sb_rwlock_destroy(rwl));
	free(rwl);
	rwl = NULL;
	return 0;
}
