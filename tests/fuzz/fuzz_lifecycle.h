/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_lifecycle.h - the future lifecycle every fuzzer models, written once
 * (include/syncband/future.h says it):
 *
 *   init        a fresh future in the slot (a new heap allocation)
 *   first poll  completes at once (DONE with its result), or registers the
 *               waker and waits in the primitive's queue (QUEUED)
 *   later poll  SB_PENDING while queued, cloning only a different waker
 *               (a primitive that wakes a future it still queues, as the
 *               fair mutex its head, gives its own rule); the result once
 *               the primitive completed it (DETACHED, then DONE), and again
 *               on every later poll; -ECANCELED after cancel
 *   cancel      queued: leave the queue and drop the waker (unless a wake
 *               spent it); completed but not observed: hand on what it was
 *               granted; else nothing.  The memory may be freed afterwards.
 *
 * A fuzzer describes its primitive in an fz_model: its future's ops and
 * size, its init, and the model's own rules (the first poll's outcome, a
 * queued future's poll where it differs, and what a cancelled future hands
 * on).  The waiter queue (fz_queue) and the bulk operations (a crowd of
 * futures, cancelling it, polling every slot) serve the condvar fuzzer too,
 * whose waits have finer states of their own.
 */
#ifndef SYNCBAND_FUZZ_LIFECYCLE_H
#define SYNCBAND_FUZZ_LIFECYCLE_H

#include "fuzz_common.h"

/* ---------------------------------------------------------------- queues */

/* The model's FIFO of slots waiting at a primitive. */
typedef struct fz_queue {
	int q[FZ_NALL];
	int len;
} fz_queue;

static inline void fz_q_push(fz_queue *q, int s)
{
	FZ_ASSERT_MODEL(q->len < FZ_NALL);
	q->q[q->len++] = s;
}

static inline void fz_q_remove(fz_queue *q, int s)
{
	int i = 0;
	while (i < q->len && q->q[i] != s)
		i++;
	FZ_ASSERT_MODEL(i < q->len);
	memmove(&q->q[i], &q->q[i + 1], (size_t)(q->len - i - 1) * sizeof q->q[0]);
	q->len--;
}

/* Takes the oldest slot off the queue (which must not be empty). */
static inline int fz_q_pop(fz_queue *q)
{
	FZ_ASSERT_MODEL(q->len > 0);
	int h = q->q[0];
	fz_q_remove(q, h);
	return h;
}

/* ---------------------------------------------------------------- slots */

typedef struct fz_slot {
	int st;        /* FS_* */
	int result;    /* FS_DETACHED, FS_DONE: what poll returns */
	void *f;       /* the future */
} fz_slot;

static fz_slot fz_slots[FZ_NALL];

typedef struct fz_model {
	const char *future;           /* for the step lines: "wait", "lock", "acquire" */
	const char *poll_name;        /* "sb_event_wait_poll": for the mismatch report */
	const sb_future_ops *ops;     /* the library's poll and cancel of the future */
	size_t size;                  /* of the future */
	fz_queue *queue;              /* where the model queues a waiting future */
	void (*init)(void *f, int s);
	/* FS_IDLE's poll: the result, or SB_PENDING after queueing the slot. */
	int (*first_poll)(int s);
	/* FS_QUEUED's poll with waker `w`: the result (after taking the slot off
	 * the queue), or SB_PENDING with `w` registered.  NULL: SB_PENDING, `w`
	 * replacing the registered waker. */
	int (*queued_poll)(int s, fz_wid w);
	/* Whether queued `s` was woken and stays queued (its waker is spent, so
	 * its cancel drops nothing).  NULL: a queued slot is only woken when it
	 * completes. */
	bool (*woken)(int s);
	/* After a queued slot left the queue (NULL: nothing to hand on). */
	void (*cancel_queued)(int s);
	/* A completed slot nobody observed hands on its grant (NULL: none). */
	void (*cancel_detached)(int s);
	void (*step_end)(void);
	const char *(*describe)(int s); /* " [n=3]" for the step lines; may be NULL */
} fz_model;

static inline const char *fz_describe(const fz_model *m, int s)
{
	return m->describe ? m->describe(s) : "";
}

/* A slot that must be cancelled before it is reused: queued, or holding a
 * grant nobody has observed. */
static inline bool fz_slot_busy(const fz_model *m, int s)
{
	int st = fz_slots[s].st;
	return st == FS_QUEUED || (st == FS_DETACHED && m->cancel_detached);
}

/* The primitive completes a queued slot it has woken already with `result`
 * (its waker is spent: nothing to wake). */
static inline void fz_complete_woken(int s, int result)
{
	fz_slots[s].st = FS_DETACHED;
	fz_slots[s].result = result;
}

/* The primitive completes a queued slot with `result` (its clone is woken). */
static inline void fz_complete(int s, int result)
{
	fz_complete_woken(s, result);
	fz_wake_registered(s);
}

static inline void fz_cancel(const fz_model *m, int s, bool free_it)
{
	fz_slot *x = &fz_slots[s];
	if (x->st == FS_UNUSED)
		return;
	fz_step_begin("%s_cancel(slot %d%s)%s", m->future, s, fz_describe(m, s),
		      free_it ? " + free" : "");
	switch (x->st) {
	case FS_IDLE:
		x->st = FS_CANCELLED;
		break;
	case FS_QUEUED:
		fz_q_remove(m->queue, s);
		if (!m->woken || !m->woken(s))
			fz_drop_registered(s);
		if (m->cancel_queued)
			m->cancel_queued(s);
		x->st = FS_CANCELLED;
		break;
	case FS_DETACHED:
		if (m->cancel_detached)
			m->cancel_detached(s);
		x->st = FS_CANCELLED;
		break;
	default: /* FS_DONE, FS_CANCELLED: nothing */
		break;
	}
	m->ops->cancel(x->f);
	if (free_it) {
		free(x->f);
		x->f = NULL;
		x->st = FS_UNUSED;
	}
	m->step_end();
}

static inline void fz_init(const fz_model *m, int s)
{
	if (fz_slot_busy(m, s))
		fz_cancel(m, s, true);
	fz_step_begin("%s_init(slot %d%s)", m->future, s, fz_describe(m, s));
	fz_slot *x = &fz_slots[s];
	free(x->f);
	x->f = fz_xmalloc(m->size);
	m->init(x->f, s);
	x->st = FS_IDLE;
	x->result = 0;
	m->step_end();
}

static inline void fz_poll(const fz_model *m, int s, fz_wid w)
{
	fz_slot *x = &fz_slots[s];
	if (x->st == FS_UNUSED)
		return;
	fz_step_begin("%s_poll(slot %d%s, waker %s)", m->future, s, fz_describe(m, s),
		      fz_wname(w));
	int exp;
	switch (x->st) {
	case FS_IDLE:
		exp = m->first_poll(s);
		if (exp == SB_PENDING) {
			fz_register(s, w);
			x->st = FS_QUEUED;
		} else {
			x->st = FS_DONE;
			x->result = exp;
		}
		break;
	case FS_QUEUED:
		if (!m->queued_poll) {
			fz_reregister(s, w);
			exp = SB_PENDING;
			break;
		}
		exp = m->queued_poll(s, w);
		if (exp != SB_PENDING) {
			x->st = FS_DONE;
			x->result = exp;
		}
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
	FZ_EXPECT_RES(m->poll_name, exp, m->ops->poll(x->f, &wk));
	m->step_end();
}

/* True when some slot is in state `st`. */
static inline bool fz_any_slot(int st)
{
	for (int s = 0; s < FZ_NALL; s++)
		if (fz_slots[s].st == st)
			return true;
	return false;
}

/* After the primitive was destroyed: every future's memory goes. */
static inline void fz_forget_slots(void)
{
	for (int s = 0; s < FZ_NALL; s++) {
		FZ_ASSERT_MODEL(fz_slots[s].st != FS_QUEUED);
		free(fz_slots[s].f);
		fz_slots[s] = (fz_slot){ .st = FS_UNUSED };
	}
}

/* A new input: every slot unused (their memory was freed by the last one). */
static inline void fz_reset_slots(void)
{
	for (int s = 0; s < FZ_NALL; s++)
		fz_slots[s] = (fz_slot){ .st = FS_UNUSED };
}

/* ---------------------------------------------------------------- bulk */

/* A fuzzer's own calls on one slot, for the bulk operations. */
typedef struct fz_slot_ops {
	const fz_model *model;               /* what the NULL steps below act on */
	bool (*busy)(int s);                 /* skip it in a crowd; NULL: fz_slot_busy */
	void (*init)(int s, uint8_t arg);    /* a fresh future; `arg` as the crowd's; NULL: fz_init */
	void (*poll)(int s, fz_wid w);       /* NULL: fz_poll */
	void (*cancel)(int s, bool free_it); /* NULL: fz_cancel */
} fz_slot_ops;

/* A driver whose slots need nothing beyond the lifecycle model leaves the
 * steps NULL: { .model = &model }. */
static inline bool fz_ops_busy(const fz_slot_ops *o, int s)
{
	return o->busy ? o->busy(s) : fz_slot_busy(o->model, s);
}

static inline void fz_ops_init(const fz_slot_ops *o, int s, uint8_t arg)
{
	if (o->init)
		o->init(s, arg);
	else
		fz_init(o->model, s);
}

static inline void fz_ops_poll(const fz_slot_ops *o, int s, fz_wid w)
{
	if (o->poll)
		o->poll(s, w);
	else
		fz_poll(o->model, s, w);
}

static inline void fz_ops_cancel(const fz_slot_ops *o, int s, bool free_it)
{
	if (o->cancel)
		o->cancel(s, free_it);
	else
		fz_cancel(o->model, s, free_it);
}

/* Initialises and polls crowd slots [0, k): enough of them to need more
 * than one wake batch. */
static inline void fz_crowd(const fz_slot_ops *o, int k, uint8_t arg, uint8_t wbyte)
{
	for (int i = 0; i < k; i++) {
		int s = FZ_NSLOTS + i;
		if (fz_ops_busy(o, s))
			continue;
		fz_ops_init(o, s, arg);
		fz_ops_poll(o, s, fz_waker_choice(s, wbyte));
	}
}

static inline void fz_cancel_crowd(const fz_slot_ops *o, uint8_t how)
{
	for (int i = 0; i < FZ_NCROWD; i++)
		fz_ops_cancel(o, (how & 1) ? FZ_NALL - 1 - i : FZ_NSLOTS + i, how & 2);
}

static inline void fz_poll_all(const fz_slot_ops *o, uint8_t wbyte)
{
	for (int s = 0; s < FZ_NALL; s++)
		fz_ops_poll(o, s, fz_waker_choice(s, wbyte));
}

/*
 * The operations every driver decodes from the same bytes, run on its slots
 * through `o`.  A driver's own operations are numbered from FZ_OP_FIRST_OWN,
 * and its switch hands these four to fz_shared_op.
 */
enum { OP_POLL, OP_CANCEL, OP_CANCEL_CROWD, OP_POLL_ALL, FZ_OP_FIRST_OWN };

static inline void fz_shared_op(const fz_slot_ops *o, fz_input *in, int op)
{
	switch (op) {
	case OP_POLL: {
		int s = fz_byte(in) % FZ_NSLOTS;
		fz_ops_poll(o, s, fz_waker_choice(s, fz_byte(in)));
		return;
	}
	case OP_CANCEL: {
		uint8_t a = fz_byte(in);
		fz_ops_cancel(o, a % FZ_NSLOTS, a & 0x80);
		return;
	}
	case OP_CANCEL_CROWD:
		fz_cancel_crowd(o, fz_byte(in));
		return;
	case OP_POLL_ALL:
		fz_poll_all(o, fz_byte(in));
		return;
	}
	abort(); /* a driver's own operation fell through to here */
}

/* The end of an input: every future cancelled and freed, no clone left. */
static inline void fz_cancel_all(const fz_slot_ops *o)
{
	fz_in_final = true;
	for (int s = 0; s < FZ_NALL; s++)
		fz_ops_cancel(o, s, true);
	fz_check_no_live_wakers();
}

#endif /* SYNCBAND_FUZZ_LIFECYCLE_H */
