/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The soak's world and its tasks, shared by its files:
 *
 *   soak.h        the world, the task record, its statistics (this file)
 *   await.c       awaiting a future by a random plan, maybe with a deadline
 *   semaphore.c   multi-permit acquires held across yields
 *   mutex.c       a plain counter the mutex protects
 *   condvar.c     the bounded queue, and the one-ticket handshake
 *   event.c       the phaser (manual events) and the one signal (auto event)
 *   pending.c     the tasks left waiting for the shutdown to cancel
 *   test_soak.c   the test: the world, the run, the checks, the summary
 *
 * test_soak.c's header comment says what the soak does.
 */
#ifndef SYNCBAND_TEST_SOAK_H
#define SYNCBAND_TEST_SOAK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <syncband/condvar.h>
#include <syncband/event.h>
#include <syncband/executor.h>
#include <syncband/mutex.h>
#include <syncband/semaphore.h>

#include "check.h"
#include "counting_waker.h"

#define DEFAULT_OPS 1000000L
#define DEFAULT_SEED UINT64_C(0x5eed)

enum {
	SEM_PERMITS = 6,
	QUEUE_CAP = 4,
	SEM_TASKS = 8,
	MUTEX_TASKS = 6,
	PRODUCERS = 3,
	CONSUMERS = 3,
	DEALERS = 1,
	TAKERS = 2,
	QUITTERS = 4,
	HANDS = TAKERS + QUITTERS,
	PHASERS = 6,
	AUTO_TASKS = 5,
	WORKERS = SEM_TASKS + MUTEX_TASKS + PRODUCERS + CONSUMERS + DEALERS + HANDS + PHASERS +
		  AUTO_TASKS,
};

/* The tasks deliberately left waiting at shutdown. */
enum {
	PEND_SEM_PARTIAL, /* acquire(SEM_PERMITS + 1): holds every permit, owes one */
	PEND_SEM_TIMEOUT, /* acquire(1) behind it, with a deadline an hour away */
	PEND_MUTEX,       /* lock of a mutex the test's main thread holds */
	PEND_CONDVAR,     /* wait on not_empty of the (empty) queue */
	PEND_EVENT,       /* wait on a manual event nobody sets */
	PEND_AUTO,        /* wait on the auto event whose signal main took */
	PENDERS,
};

enum kind { K_SEM, K_MUTEX, K_PROD, K_CONS, K_DEALER, K_HAND, K_PHASE, K_AUTO, K_PEND, KINDS };
extern const char *const kind_name[KINDS];

/* ------------------------------------------------------------ the world */

struct soak {
	uint64_t seed;
	size_t threads;
	sb_executor_group g;

	sb_semaphore sem;
	atomic_int sem_in_use;       /* permits held by completed acquires */

	sb_mutex m;
	long counter;                /* plain: only the mutex orders it */
	atomic_int m_holders;
	atomic_long sections;        /* critical sections completed */

	sb_mutex qm;
	sb_condvar not_empty, not_full;
	long items[QUEUE_CAP];       /* the queue; plain, under qm */
	int q_head, q_count;
	unsigned char *seen;         /* deliveries per item, under qm */
	long total_items, per_producer, per_consumer;
	long popped, popped_sum;     /* under qm */
	atomic_int q_holders;

	sb_mutex hm;                 /* the handshake */
	sb_condvar ticket_cv, taken_cv;
	int slot;                    /* 1: a ticket is on the table; plain, under hm */
	long per_taker;              /* tickets each taker takes */
	long quitter_rounds;         /* waits each quitter walks away from */
	long tickets;                /* dealt, all told */
	atomic_long tickets_taken;
	atomic_int h_holders;

	sb_event ev[2];              /* phase p waits on ev[p & 1] */
	atomic_int arrived[2];
	int mode[2];                 /* KEEP or PULSE for the phase using that slot; plain,
				      * ordered by the phaser's arrivals and sets */
	atomic_long published;       /* the last phase whose set was made */
	long phases;

	sb_auto_event ae;
	atomic_int token_holders;
	atomic_long token_takes, token_sets;

	sb_event gate;               /* never set: PEND_EVENT waits on it */
	sb_semaphore started;        /* penders release one once registered */
};

enum { MODE_KEEP, MODE_PULSE };

/* ------------------------------------------------------------ tasks */

/* What the task does with a pending future. */
enum plan {
	PLAN_WAIT,           /* poll until it completes */
	PLAN_CANCEL_NOW,     /* cancel right after the first SB_PENDING */
	PLAN_CANCEL_LATER,   /* yield 1-3 times without polling it, then cancel */
	PLAN_CANCEL_ON_WAKE, /* cancel, without polling, on the 1st (or 2nd) wake */
	PLANS,
};

extern const char *const plan_name[PLANS];

enum aw_state { AW_DELAY, AW_IDLE, AW_PENDING, AW_DONE };
extern const char *const aw_state_name[];

/* One future being awaited by a task, with its plan and optional deadline. */
typedef struct awaiter {
	void *fut;
	const sb_future_ops *ops;
	const sb_waiter *node;       /* the future's queue node, for the statistics */
	size_t permits;              /* semaphore acquires: the request; else 0 */
	sb_timeout to;
	bool timed;
	bool saw_partial;            /* a timed acquire was seen partly granted */
	bool cancelled_granted;      /* aw_cancel found it detached (granted) */
	int plan;
	int state;
	int yields;                  /* PLAN_CANCEL_LATER: yields left; AW_DELAY: too */
	int wake_target;             /* PLAN_CANCEL_ON_WAKE: which wake */
	int wakes_seen;
	long wakes_at;
	sb_yield y;
} awaiter;

/*
 * Per-task counters.  Each is written only by the task's owner thread and
 * read by the watchdog and, after the joins, by main: relaxed atomics, so
 * the watchdog's reads are not races.
 */
enum stat {
	ST_OPS,
	ST_DONE,            /* completed units: acquires held, sections, items, phases, signals */
	ST_TRY_FAILED,
	ST_CANCEL_QUEUED,   /* cancelled with nothing granted */
	ST_CANCEL_PARTIAL,  /* cancelled while partly granted (semaphore) */
	ST_CANCEL_GRANTED,  /* cancelled after the grant or notification, before observing it */
	ST_CANCEL_IDLE,     /* a condvar wait cancelled before its first poll */
	ST_TIMEOUTS,
	ST_TIMEOUT_PARTIAL, /* timed out after being seen partly granted */
	ST_PULSES,
	ST_QUITS,           /* handshake rounds that walked away */
	ST_PLAN0,           /* futures started with each plan */
	ST_TIMED = ST_PLAN0 + PLANS,
	STATS,
};

typedef struct soak_task {
	sb_task task;
	struct soak *s;
	int kind;
	int index;
	uint64_t rng;
	long budget;                 /* ops left (semaphore, mutex, auto), items left (queue) */
	int stage;
	atomic_int where;            /* a copy of `stage` for the watchdog's report */
	atomic_int awaiting;         /* and of the awaiter: plan | timed << 4 | state << 8 */
	bool fwd_ready;
	counting_waker fw;           /* polls go through it, forwarding to the task's waker */
	awaiter aw;
	sb_semaphore_acquire acq;
	sb_mutex_lock lock;
	sb_condvar_wait cw;
	sb_event_wait ew;
	sb_auto_event_wait aew;
	sb_timeout pend_to;
	sb_yield y;
	size_t n;                    /* semaphore: permits of this round */
	int holds;                   /* yields left while holding */
	long value;                  /* mutex: the counter read; producer: next item;
				      * hand: rounds done */
	long phase;                  /* phaser: current phase */
	sb_join join;
	atomic_long st[STATS];
} soak_task;

static inline void stat_add(soak_task *t, enum stat s, long n)
{
	/* relaxed: a statistic with one writer; see enum stat. */
	atomic_fetch_add_explicit(&t->st[s], n, memory_order_relaxed);
}

static inline long stat_get(soak_task *t, enum stat s)
{
	return atomic_load_explicit(&t->st[s], memory_order_relaxed);
}

/* relaxed (both): copies for the watchdog's report, which orders nothing. */
static inline void set_stage(soak_task *t, int stage)
{
	t->stage = stage;
	atomic_store_explicit(&t->where, stage, memory_order_relaxed);
}

static inline void aw_set_state(soak_task *t, int state)
{
	t->aw.state = state;
	atomic_store_explicit(&t->awaiting, t->aw.plan | (int)t->aw.timed << 4 | state << 8,
			      memory_order_relaxed);
}

/* One primitive operation; budgets in ops count down here. */
static inline void op(soak_task *t)
{
	stat_add(t, ST_OPS, 1);
	t->budget -= t->kind == K_SEM || t->kind == K_MUTEX || t->kind == K_AUTO;
}

/* ------------------------------------------------------------ randomness */

static inline uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline unsigned below(soak_task *t, unsigned n)
{
	return (unsigned)(splitmix64(&t->rng) % n);
}

/* ------------------------------------------------------------ awaiting (await.c) */

enum timing { NO_DEADLINE, MAYBE_DEADLINE, DEADLINE };
#define ANY_PLAN (-1)

size_t peek_remaining(const sb_waiter *node);
void aw_start(soak_task *t, void *fut, const sb_future_ops *ops, const sb_waiter *node,
	      size_t permits, int plan, enum timing timing);
void await_lock(soak_task *t, sb_mutex *m);
void await_cv(soak_task *t);
void aw_delay(soak_task *t, int yields);
int aw_poll(soak_task *t, const sb_waker *w);
void aw_abandon(soak_task *t);
bool hold_done(soak_task *t, const sb_waker *w);
void start_hold(soak_task *t, unsigned max);

/* ------------------------------------------------------------ the tasks' polls */

int sem_poll(soak_task *t, const sb_waker *w);    /* semaphore.c */
int mutex_poll(soak_task *t, const sb_waker *w);  /* mutex.c */
int queue_poll(soak_task *t, const sb_waker *w);  /* condvar.c: producers, consumers */
int dealer_poll(soak_task *t, const sb_waker *w); /* condvar.c: the handshake */
int hand_poll(soak_task *t, const sb_waker *w);
int phase_poll(soak_task *t, const sb_waker *w);  /* event.c */
int auto_poll(soak_task *t, const sb_waker *w);
int pend_poll(soak_task *t, const sb_waker *w);   /* pending.c */
void pend_cancel(soak_task *t);

#endif
