/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_condvar - model-based fuzzing of sb_condvar over sb_mutex (see
 * fuzz_common.h).  Its waits have finer states than fuzz_lifecycle.h's
 * lifecycle; they share its queues and bulk operations.  Slots hold condvar waits or plain mutex lock futures, so
 * waits re-acquiring the mutex interleave with ordinary lockers.
 *
 * Reference model (include/syncband/condvar.h and mutex.h), over a strict
 * FIFO mutex (the eventually fair mode's own rules are fuzz_mutex.c's; the
 * condvar re-acquires through the same lock future either way):
 *   mutex     locked, and the FIFO of futures queued for it (lock futures and
 *             notified waits re-acquiring it); unlock hands it to the oldest
 *   cvq       the waits registered at the condvar, in order
 *   wait first poll   mutex not locked: -EPERM, and nothing changes; else
 *                     register, then unlock the mutex (which may hand it to
 *                     a queued locker), SB_PENDING
 *   notify_one        the oldest registered wait is notified (woken)
 *   notify_all        every registered wait is notified (woken)
 *   notified wait's poll   takes the mutex if it is free (0), else queues
 *                     for it (SB_PENDING) and completes (0) once handed it
 *   a completed wait returns its result (0 or -EPERM) again on every later
 *   poll, and its cancel does nothing; poll after cancel: -ECANCELED
 *   wait cancel  never polled: unlock the mutex (the caller held it);
 *                registered: unregister; notified by notify_one (before it
 *                re-polled, while queued for the mutex, or handed the mutex
 *                unobserved): pass the notification on with notify_one, and
 *                pass the mutex on if it was handed over; notified by
 *                notify_all: the same, minus the notification
 *   lock futures, try_lock, unlock: as in fuzz_mutex.c
 *   condvar destroy   -EBUSY while waits are registered (keeps working)
 * The driving task unlocks the mutex (unlock, a wait's first poll, a
 * never-polled wait's cancel) only when it is unlocked or held by the task
 * itself, never while it is handed to a future that has not observed it
 * (that would release it twice: caller misuse, see fuzz_mutex.c).
 *
 * Input: a sequence of operations, one opcode byte (see `ops` below) and its
 * argument bytes each.  tests/fuzz/make_seeds.py writes the seed corpus.
 */
#include "fuzz_lifecycle.h"

enum {
	K_WAIT, /* sb_condvar_wait */
	K_LOCK, /* sb_mutex_lock */
};

enum {
	U_UNUSED,
	U_IDLE,      /* never polled */
	U_CVQ,       /* registered at the condvar */
	U_NOTIFIED,  /* detached from the condvar, not yet re-polled */
	U_MQ,        /* queued for the mutex */
	U_HANDED,    /* handed the mutex, not yet observed */
	U_DONE,      /* poll returned 0 (holding the mutex) or -EPERM */
	U_CANCELLED,
};

static const char *const ustate[] = {
	"unused", "idle", "registered", "notified", "queued-for-mutex", "handed-mutex", "done",
	"cancelled",
};

typedef struct slot {
	int kind;
	int st;
	bool by_one; /* notified by notify_one (waits) */
	int result;  /* U_DONE */
	union {
		sb_condvar_wait *w;
		sb_mutex_lock *l;
		void *p;
	} f;
} slot;

static slot S[FZ_NALL];
static sb_mutex *mtx;
static sb_condvar *cv;

static struct {
	bool locked;
	fz_queue mq;  /* queued for the mutex */
	fz_queue cvq; /* registered at the condvar */
} M;

/* ------------------------------------------------------------- the model */

/* The holder lets go of the mutex: hand it to the oldest locker, or unlock. */
static void m_pass(void)
{
	FZ_ASSERT_MODEL(M.locked);
	if (M.mq.len == 0) {
		M.locked = false;
		return;
	}
	int h = fz_q_pop(&M.mq);
	S[h].st = U_HANDED;
	fz_wake_registered(h);
}

static void m_notify_one(void)
{
	if (M.cvq.len == 0)
		return;
	int h = fz_q_pop(&M.cvq);
	S[h].st = U_NOTIFIED;
	S[h].by_one = true;
	fz_wake_registered(h);
}

static void m_notify_all(void)
{
	while (M.cvq.len > 0) {
		int h = fz_q_pop(&M.cvq);
		S[h].st = U_NOTIFIED;
		S[h].by_one = false;
		fz_wake_registered(h);
	}
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(M.locked || M.mq.len == 0);
	FZ_EXPECT("sb_mutex_is_locked", M.locked, sb_mutex_is_locked(mtx));
}

/* True while the mutex was handed to a future that has not observed it: it
 * is that future's, and only its poll or cancel may act on it. */
static bool handed_to_a_future(void)
{
	for (int s = 0; s < FZ_NALL; s++)
		if (S[s].st == U_HANDED)
			return true;
	return false;
}

/* ---------------------------------------------------------------- the ops */

static void op_cancel(int s, bool free_it);

static void new_condvar(bool static_init)
{
	cv = fz_xmalloc(sizeof *cv);
	if (static_init)
		*cv = (sb_condvar)SB_CONDVAR_INIT;
	else
		FZ_EXPECT_RES("sb_condvar_init", 0, sb_condvar_init(cv));
	fz_locks[1] = FZ_LOCKWORD(cv);
	M.cvq.len = 0;
}

static bool slot_active(int s)
{
	int st = S[s].st;
	return st == U_CVQ || st == U_NOTIFIED || st == U_MQ || st == U_HANDED;
}

static void op_init(int s, int kind)
{
	if (slot_active(s))
		op_cancel(s, true);
	fz_step_begin("%s_init(slot %d)", kind == K_WAIT ? "wait" : "lock", s);
	free(S[s].f.p);
	if (kind == K_WAIT) {
		S[s].f.w = fz_xmalloc(sizeof *S[s].f.w);
		sb_condvar_wait_init(S[s].f.w, cv, mtx);
	} else {
		S[s].f.l = fz_xmalloc(sizeof *S[s].f.l);
		sb_mutex_lock_init(S[s].f.l, mtx);
	}
	S[s].kind = kind;
	S[s].st = U_IDLE;
	S[s].by_one = false;
	step_end();
}

/* A future (lock, or a notified wait) asks for the mutex. */
static int m_lock_or_queue(int s, fz_wid w)
{
	if (!M.locked) {
		M.locked = true;
		S[s].st = U_DONE;
		S[s].result = 0;
		return 0;
	}
	fz_q_push(&M.mq, s);
	fz_register(s, w);
	S[s].st = U_MQ;
	return SB_PENDING;
}

static void op_poll(int s, fz_wid w)
{
	slot *x = &S[s];
	if (x->st == U_UNUSED)
		return;
	bool wait = x->kind == K_WAIT;
	if (wait && x->st == U_IDLE && handed_to_a_future())
		return; /* would unlock a mutex that a future holds: misuse */
	fz_step_begin("%s_poll(slot %d [%s%s], waker %s)", wait ? "wait" : "lock", s, ustate[x->st],
		      x->st >= U_NOTIFIED && x->st <= U_HANDED && wait
			      ? (x->by_one ? " by notify_one" : " by notify_all")
			      : "",
		      fz_wname(w));
	int exp;
	switch (x->st) {
	case U_IDLE:
		if (!wait) {
			exp = m_lock_or_queue(s, w);
		} else if (!M.locked) {
			exp = -EPERM; /* nothing changes; the wait completed with an error */
			x->st = U_DONE;
			x->result = -EPERM;
		} else {
			fz_q_push(&M.cvq, s);
			fz_register(s, w);
			x->st = U_CVQ;
			m_pass(); /* registered first, then the mutex is released */
			exp = SB_PENDING;
		}
		break;
	case U_CVQ:
	case U_MQ:
		fz_reregister(s, w);
		exp = SB_PENDING;
		break;
	case U_NOTIFIED:
		exp = m_lock_or_queue(s, w);
		break;
	case U_HANDED:
		x->st = U_DONE;
		x->result = 0;
		exp = 0;
		break;
	case U_DONE:
		exp = x->result;
		break;
	default:
		exp = -ECANCELED;
		break;
	}
	sb_waker wk = fz_waker(w);
	if (wait)
		FZ_EXPECT_RES("sb_condvar_wait_poll", exp, sb_condvar_wait_poll(x->f.w, &wk));
	else
		FZ_EXPECT_RES("sb_mutex_lock_poll", exp, sb_mutex_lock_poll(x->f.l, &wk));
	step_end();
}

static void op_cancel(int s, bool free_it)
{
	slot *x = &S[s];
	if (x->st == U_UNUSED)
		return;
	bool wait = x->kind == K_WAIT;
	if (wait && x->st == U_IDLE && handed_to_a_future()) {
		/* Its cancel would unlock a mutex that a future holds (misuse):
		 * let that future observe the mutex first. */
		for (int h = 0; h < FZ_NALL; h++)
			if (S[h].st == U_HANDED)
				op_poll(h, fz_waker_choice(h, 0));
	}
	fz_step_begin("%s_cancel(slot %d [%s%s])%s", wait ? "wait" : "lock", s, ustate[x->st],
		      x->st >= U_NOTIFIED && x->st <= U_HANDED && wait
			      ? (x->by_one ? " by notify_one" : " by notify_all")
			      : "",
		      free_it ? " + free" : "");
	bool pass_notification = wait && x->by_one;
	switch (x->st) {
	case U_IDLE:
		/* A never-polled wait: the caller held the mutex, cancel unlocks
		 * it (an unlocked mutex stays unlocked).  A lock: nothing. */
		if (wait && M.locked)
			m_pass();
		x->st = U_CANCELLED;
		break;
	case U_CVQ:
		fz_q_remove(&M.cvq, s);
		fz_drop_registered(s);
		x->st = U_CANCELLED;
		break;
	case U_NOTIFIED:
		if (pass_notification)
			m_notify_one();
		x->st = U_CANCELLED;
		break;
	case U_MQ:
		fz_q_remove(&M.mq, s);
		fz_drop_registered(s);
		if (pass_notification)
			m_notify_one();
		x->st = U_CANCELLED;
		break;
	case U_HANDED:
		m_pass();
		if (pass_notification)
			m_notify_one();
		x->st = U_CANCELLED;
		break;
	default: /* done, cancelled: nothing */
		break;
	}
	if (wait)
		sb_condvar_wait_cancel(x->f.w);
	else
		sb_mutex_lock_cancel(x->f.l);
	if (free_it) {
		free(x->f.p);
		x->f.p = NULL;
		x->st = U_UNUSED;
	}
	step_end();
}

static void op_notify_one(void)
{
	fz_step_begin("notify_one() [%d registered]", M.cvq.len);
	m_notify_one();
	sb_condvar_notify_one(cv);
	step_end();
}

static void op_notify_all(void)
{
	fz_step_begin("notify_all() [%d registered]", M.cvq.len);
	m_notify_all();
	sb_condvar_notify_all(cv);
	step_end();
}

static void op_try_lock(void)
{
	fz_step_begin("mutex try_lock()");
	int exp = M.locked ? -EBUSY : 0;
	M.locked = true;
	FZ_EXPECT_RES("sb_mutex_try_lock", exp, sb_mutex_try_lock(mtx));
	step_end();
}

static void op_unlock(void)
{
	if (handed_to_a_future())
		return; /* a task unlocking what it does not hold: misuse, not modelled */
	fz_step_begin("mutex unlock()%s", M.locked ? "" : " of an unlocked mutex");
	int exp = 0;
	if (M.locked)
		m_pass();
	else
		exp = -EPERM;
	FZ_EXPECT_RES("sb_mutex_unlock", exp, sb_mutex_unlock(mtx));
	step_end();
}

static void op_destroy(bool static_init)
{
	if (M.cvq.len > 0) {
		fz_step_begin("condvar destroy() while %d wait(s) registered", M.cvq.len);
		FZ_EXPECT_RES("sb_condvar_destroy", -EBUSY, sb_condvar_destroy(cv));
		step_end();
		return;
	}
	/* Waits still on their way to the mutex refer to the condvar. */
	for (int s = 0; s < FZ_NALL; s++)
		if (S[s].kind == K_WAIT && slot_active(s))
			return;
	fz_step_begin("condvar destroy(), then %s", static_init ? "SB_CONDVAR_INIT" : "sb_condvar_init");
	FZ_EXPECT_RES("sb_condvar_destroy", 0, sb_condvar_destroy(cv));
	for (int s = 0; s < FZ_NALL; s++) {
		if (S[s].kind != K_WAIT)
			continue;
		free(S[s].f.p);
		S[s] = (slot){ .st = U_UNUSED };
	}
	free(cv);
	new_condvar(static_init);
	step_end();
}

/* A crowd slot's init: a wait's first poll needs the mutex held, so lock it first. */
static void op_crowd_init(int s, uint8_t kind)
{
	if (kind == K_WAIT && !M.locked)
		op_try_lock();
	op_init(s, kind);
}

static const fz_slot_ops slot_ops = { NULL, slot_active, op_crowd_init, op_poll, op_cancel };

/* ------------------------------------------------------------- the driver */

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_NOTIFY_ONE, OP_NOTIFY_ALL, OP_TRY_LOCK, OP_UNLOCK,
	OP_DESTROY, OP_CROWD,
};

static const uint8_t ops[20] = {
	OP_INIT, OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL,
	OP_NOTIFY_ONE, OP_NOTIFY_ONE, OP_NOTIFY_ALL, OP_TRY_LOCK, OP_TRY_LOCK, OP_UNLOCK,
	OP_UNLOCK, OP_DESTROY, OP_CROWD, OP_CANCEL_CROWD, OP_POLL_ALL,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	for (int s = 0; s < FZ_NALL; s++)
		S[s] = (slot){ .st = U_UNUSED };

	uint8_t b0 = fz_byte(&in);
	fz_step_begin("mutex %s, condvar %s", (b0 & 1) ? "SB_MUTEX_INIT_FIFO" : "sb_mutex_init_fifo",
		      (b0 & 2) ? "SB_CONDVAR_INIT" : "sb_condvar_init");
	mtx = fz_xmalloc(sizeof *mtx);
	if (b0 & 1)
		*mtx = (sb_mutex)SB_MUTEX_INIT_FIFO;
	else
		FZ_EXPECT_RES("sb_mutex_init_fifo", 0, sb_mutex_init_fifo(mtx));
	fz_locks[0] = FZ_LOCKWORD(mtx);
	new_condvar(b0 & 2);
	step_end();

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		int kind = ops[op % 20];
		switch (kind) {
		case OP_INIT: {
			uint8_t a = fz_byte(&in);
			op_init(a % FZ_NSLOTS, (a & 0x30) == 0x30 ? K_LOCK : K_WAIT);
			break;
		}
		case OP_NOTIFY_ONE:
			op_notify_one();
			break;
		case OP_NOTIFY_ALL:
			op_notify_all();
			break;
		case OP_TRY_LOCK:
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
			uint8_t kind = fz_byte(&in);
			fz_crowd(&slot_ops, 1 + k % FZ_NCROWD, (kind & 3) == 3 ? K_LOCK : K_WAIT,
				 fz_byte(&in));
			break;
		}
		default:
			fz_shared_op(&slot_ops, &in, kind);
			break;
		}
	}

	fz_cancel_all(&slot_ops);
	FZ_ASSERT_MODEL(M.mq.len == 0 && M.cvq.len == 0);
	if (M.locked)
		op_unlock();
	op_unlock(); /* -EPERM: nothing changes */
	fz_step_begin("final: condvar destroy, mutex destroy");
	FZ_EXPECT_RES("sb_condvar_destroy", 0, sb_condvar_destroy(cv));
	FZ_EXPECT_RES("sb_mutex_destroy", 0, sb_mutex_destroy(mtx));
	free(cv);
	free(mtx);
	cv = NULL;
	mtx = NULL;
	return 0;
}
