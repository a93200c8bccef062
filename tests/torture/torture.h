/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The torture suite (issue 38, in the manner of Linux's locktorture): what
 * the driver (torture.c) and the primitives' files (torture_*.c) share.
 *
 * Every primitive is run by more contenders than cores: twice as many plain
 * threads as cores (TORTURE_THREADS at least, TORTURE_MAX_THREADS at most),
 * which use the blocking waits with random timeouts (0, short, longer,
 * infinite) and futures they drive themselves (some under an
 * sb_deadline they expire by hand), and TORTURE_TASKS floating tasks of an
 * executor group, whose futures are sometimes under an sb_timeout.  A random
 * share of the futures is cancelled at a random moment: before the first
 * poll, right after it, when woken, or a few wakes (or a little while) later.
 *
 * A primitive is described by a torture_prim: its blocking operation, and its
 * future operation as a small state machine (begin, done, release) that the
 * driver runs on threads and on tasks alike.  The driver keeps the
 * statistics, the progress watchdog (a never-cancelled wait pending for more
 * than TORTURE_LOST_WAKE_NS while the primitive keeps completing operations
 * is a lost wake), the allocation count, and calls the primitive's tick (on
 * the controlling thread, about every millisecond) and, once the time is up,
 * its stop tick until every contender has finished.
 */
#ifndef SYNCBAND_TESTS_TORTURE_H
#define SYNCBAND_TESTS_TORTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <syncband/syncband.h>
#ifdef TORTURE_WITH_EXECUTOR
#include <syncband/executor.h>
#endif

enum {
	TORTURE_THREADS = 8,
	TORTURE_MAX_THREADS = 64,
	TORTURE_TASKS = 6,
	TORTURE_GROUP_THREADS = 2,
	TORTURE_MAX = TORTURE_MAX_THREADS + TORTURE_TASKS,
	TORTURE_MAX_BATCH = 4,
};

/* A never-cancelled wait pending this long while others progress: a lost wake. */
#define TORTURE_LOST_WAKE_NS (5 * SB_NSEC_PER_SEC)

/* What a channel carries: who sent it, its place in that sender's stream, a checksum. */
typedef struct torture_item {
	uint32_t sender;
	uint32_t seq;
	uint64_t check;
} torture_item;

/* Every future a contender may have in flight. */
typedef union torture_future {
	sb_semaphore_acquire sem;
	sb_mutex_lock mutex;
	sb_condvar_wait cv;
	sb_event_wait ev;
	sb_auto_event_wait aev;
	sb_rwlock_lock rw;
	sb_barrier_wait bar;
	sb_latch_wait latch;
	sb_once_wait once;
	sb_channel_send send;
	sb_channel_recv recv;
	sb_broadcast_send bsend;
	sb_broadcast_recv brecv;
	sb_watch_changed changed;
} torture_future;

typedef struct torture_contender {
	int id;
	bool is_task;
	uint64_t seed;
	/* statistics (read by the controller while it runs) */
	atomic_long ops, cancels, timeouts;
	atomic_ullong last_done_ns, max_gap_ns;
	/* the lost-wake watchdog: when a never-cancelled wait began (0: none),
	 * and the primitive's operations then */
	atomic_ullong waiting_since;
	atomic_long ops_at_wait;
	/* the future in flight: the primitive's begin sets fut and fops */
	torture_future f;
	void *fut;
	const sb_future_ops *fops;
	/* the primitive's own state for the operation in flight */
	int stage;
	int kind;
	int slot;
	size_t n;
	uint64_t tag;
	torture_item item;
	torture_item items[TORTURE_MAX_BATCH];
	uint32_t send_seq;
	int64_t last_seq[TORTURE_MAX];
	/* a thread's waker: a futex word; clones live (woken or dropped at the end) */
	atomic_uint wake_seq;
	atomic_int live_clones;
#ifdef TORTURE_WITH_EXECUTOR
	/* a task's state */
	sb_task task;
	sb_join join;
	int ts;
	int plan;
	int polls_left;
	bool timed;
	bool never;
	sb_timeout timeout;
#endif
	bool finished;
} torture_contender;

/* What a primitive's done step says. */
enum {
	T_DONE,  /* the operation is over: nothing held */
	T_HOLD,  /* the caller holds something: release it (a task may yield first) */
	T_AGAIN, /* begin the next stage (a new future) */
};

typedef struct torture_prim {
	const char *name;
	void (*setup)(void);
	/* One operation through the blocking API (timeout_ns may be 0 or
	 * SB_TIMEOUT_INFINITE); it calls torture_op / torture_timeout itself. */
	void (*blocking_op)(torture_contender *c, uint64_t timeout_ns);
	/* Prepares the next future (sets c->fut, c->fops) and returns 0; or does
	 * an operation that never waits (a try_*) and returns 1; or returns -1
	 * when the contender should stop (nothing to do). */
	int (*fut_begin)(torture_contender *c);
	/* The future ended with r (its result, or after a cancel what a poll
	 * then says): T_DONE, T_HOLD or T_AGAIN. */
	int (*fut_done)(torture_contender *c, int r);
	/* Releases what T_HOLD said is held; calls torture_op. */
	void (*fut_release)(torture_contender *c);
	/* The controller, about every millisecond while the contenders run. */
	void (*tick)(void);
	/* The controller, repeatedly once the time is up, until every
	 * contender has finished: wake whoever waits for ever. */
	void (*stop_tick)(void);
	/* After every contender finished: the final checks. */
	void (*teardown)(void);
	/* Extra words for the statistics line (may be NULL). */
	void (*describe)(char *buf, size_t size);
	/* The starvation ratio (see torture.c) a run of TORTURE_FAIR_SECONDS
	 * or more must reach, in thousandths; 0 where it is printed only. */
	int fair_permille;
} torture_prim;

/* The shortest run whose starvation ratio is held to the primitive's target:
 * shorter runs (the ctest one) print it, as on a loaded machine a few
 * seconds are too few for the shares to even out. */
enum { TORTURE_FAIR_SECONDS = 30 };

extern const torture_prim torture_semaphore, torture_semaphore_fifo, torture_mutex,
	torture_mutex_fifo, torture_condvar, torture_event, torture_auto_event, torture_rwlock,
	torture_rwlock_fifo, torture_barrier,
	torture_latch, torture_once, torture_channel, torture_broadcast, torture_watch;

/* The run's contenders (threads first, then tasks) and how many there are. */
extern torture_contender torture_contenders[TORTURE_MAX];
extern int torture_ncontenders;
/* Set once the time is up: contenders finish their operation and leave. */
extern atomic_bool torture_stopping;
/* Completed operations of the primitive, all contenders. */
extern atomic_long torture_total_ops;

/*
 * Reproducible pseudo-random choices (splitmix64): every bit of a value is
 * well mixed, so that no contender's choices settle into a short cycle of
 * their own, as a 32-bit LCG's low bits allow (`% 2` read one that repeats
 * every 2^17 draws), which would set its share of the operations apart.
 */
static inline unsigned torture_rand(uint64_t *state)
{
	uint64_t z = *state += 0x9e3779b97f4a7c15u;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return (unsigned)((z ^ (z >> 31)) >> 32);
}

static inline bool torture_stop_requested(void)
{
	return atomic_load_explicit(&torture_stopping, memory_order_relaxed);
}

/* Accounting. */
void torture_op(torture_contender *c);
void torture_timeout(torture_contender *c);
/* A critical section: nothing, a short spin or (threads) a yield. */
void torture_crit(torture_contender *c);
/* A blocking timeout: 0, 10 us, 200 us, 2 ms, 20 ms or infinite. */
uint64_t torture_pick_timeout(uint64_t *seed);
/* Sleeps the controller for `us` microseconds. */
void torture_sleep_us(unsigned us);

/* Prints what went wrong, where, and exits 1. */
_Noreturn void torture_violation(const char *file, int line, const torture_contender *c,
				 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define VIOLATION(c, ...) torture_violation(__FILE__, __LINE__, (c), __VA_ARGS__)
/* An invariant: a violation unless it holds. */
#define TCHECK(c, cond)                                                          \
	do {                                                                     \
		if (!(cond))                                                     \
			VIOLATION((c), "invariant failed: %s", #cond);           \
	} while (0)

/* Slots for the primitives that are replaced round after round (semaphore,
 * latch, once, channel, broadcast, watch): contenders enter the current one and leave it; the
 * controller recycles a slot only once nobody is in it. */
enum { TORTURE_SLOTS = 3 };
typedef struct torture_slots {
	atomic_int cur;
	atomic_long users[TORTURE_SLOTS];
	long rounds;
} torture_slots;

static inline int torture_slot_enter(torture_slots *s)
{
	for (;;) {
		int i = atomic_load(&s->cur);
		atomic_fetch_add(&s->users[i], 1);
		if (atomic_load(&s->cur) == i)
			return i;
		atomic_fetch_sub(&s->users[i], 1);
	}
}

static inline void torture_slot_leave(torture_slots *s, int i)
{
	atomic_fetch_sub(&s->users[i], 1);
}

/* The controller: the slot after the current one, if nobody is in it (-1 otherwise). */
static inline int torture_slot_next_free(torture_slots *s)
{
	int next = (atomic_load(&s->cur) + 1) % TORTURE_SLOTS;
	return atomic_load(&s->users[next]) == 0 ? next : -1;
}

#endif
