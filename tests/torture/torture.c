/* SPDX-License-Identifier: Apache-2.0 */
/*
 * torture [SECONDS] [PRIMITIVE...] - the torture suite of issue 38, in the
 * manner of Linux's locktorture (see torture.h for how a run is built).
 *
 * For every selected primitive (all of them by default: semaphore,
 * semaphore-fifo, mutex, mutex-fifo, condvar, event, auto-event, rwlock,
 * rwlock-fifo, barrier, latch, once, channel, broadcast, watch), SECONDS
 * seconds (default 10) of twice as many threads as cores (8 at least) and
 * TORTURE_TASKS floating executor tasks contending, with
 * invariants checked as they go (torture_*.c), a statistics line every 5 s
 * and at the end:
 * operations, cancels, timeouts, the starvation ratio, the longest a
 * contender went without completing an operation (max gap).  In the plain
 * build (SB_TEST_COUNT_ALLOCATIONS) the allocator is interposed and must not
 * be called while the contenders run.
 *
 * The starvation ratio compares contenders that behave alike and get the
 * same time to run: the threads, the fewest operations one completed over
 * the most.  They draw from one random mix (blocking waits with every kind
 * of timeout, futures, cancels, try_*), so within a run the timeouts of 0,
 * the cancels and the try_* come in the same proportions, and the kernel
 * gives them equal shares of the cores: only an unfair primitive keeps
 * their shares of the operations apart.  The tasks' range is printed beside
 * it but not compared: they behave differently on purpose (futures only,
 * never asleep: a task completes several times a thread's operations under
 * the fair mutex, which lets whoever runs take it), and floating tasks
 * move to the thread that wakes them, with no stealing (executor.h), so
 * their shares of the two executor threads need not be equal: in a 10 s
 * rwlock run one task completed 30% more operations than another, while
 * the threads' ratio read 0.978.
 *
 * A run of TORTURE_FAIR_SECONDS or more holds the ratio to the primitive's
 * target: 0.8 for the eventually fair mutex, semaphore and rwlock and the
 * condvar (whose waits re-acquire a mutex), 0.95 for the strict FIFO ones
 * (mutex-fifo, semaphore-fifo, rwlock-fifo, auto-event, channel).  Shorter
 * runs print it: a few seconds on a loaded machine are too few for the
 * shares to even out (the fair mutex
 * reads 0.7-0.9 at 5-10 s, 0.95 at 60 s on two cores).  For event, barrier,
 * latch and once it is printed only: their operations are not turns at
 * something scarce (a set event, an open latch, a done once let everyone
 * through at once, and a barrier generation needs three parties), so who
 * completes more is who comes back more often; nor for broadcast and watch,
 * where every receiver gets every item or value.  Any run of 5 s or more
 * fails if a contender completed nothing.
 *
 * TORTURE_SEED (environment) fixes the seed, and so every contender's
 * choices (not the interleavings); by default it comes from the clock and
 * is printed.  TORTURE_VERBOSE adds each contender's counts to the end of
 * each primitive.  Exits 0 when every primitive passed, 1 at the first
 * violation (after printing what and where), 2 on bad arguments.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "torture.h"
#include "count_allocations.h"

/* ----------------------------------------------------------------- output */

/* Formats into a static buffer and writes it: no stdio buffer to allocate
 * while the allocator is watched. */
static void out(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(int fd, const char *fmt, ...)
{
	static char buf[1024];
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&mu);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 1)
		n = (int)sizeof buf - 1;
	for (int off = 0; n > 0;) {
		ssize_t w = write(fd, buf + off, (size_t)n);
		if (w <= 0)
			break;
		off += (int)w;
		n -= (int)w;
	}
	pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------------ state */

torture_contender torture_contenders[TORTURE_MAX];
int torture_ncontenders;
atomic_bool torture_stopping;
atomic_long torture_total_ops;

static const torture_prim *prim;
static atomic_bool go;
static atomic_int finished;
static int nthreads, ntasks;
static unsigned run_seed;

_Noreturn void torture_violation(const char *file, int line, const torture_contender *c,
				 const char *fmt, ...)
{
	static char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (c)
		out(2, "torture: VIOLATION in %s (contender %d, a %s) at %s:%d: %s (seed %u)\n",
		    prim ? prim->name : "?", c->id, c->is_task ? "task" : "thread", file, line,
		    msg, run_seed);
	else
		out(2, "torture: VIOLATION in %s at %s:%d: %s (seed %u)\n",
		    prim ? prim->name : "?", file, line, msg, run_seed);
	_exit(1);
}

void torture_op(torture_contender *c)
{
	uint64_t now = sb_now_ns();
	uint64_t last = atomic_exchange_explicit(&c->last_done_ns, now, memory_order_relaxed);
	uint64_t gap = now > last ? now - last : 0;
	if (gap > atomic_load_explicit(&c->max_gap_ns, memory_order_relaxed))
		atomic_store_explicit(&c->max_gap_ns, gap, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->ops, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&torture_total_ops, 1, memory_order_relaxed);
}

void torture_timeout(torture_contender *c)
{
	atomic_fetch_add_explicit(&c->timeouts, 1, memory_order_relaxed);
}

static void torture_cancelled(torture_contender *c)
{
	atomic_fetch_add_explicit(&c->cancels, 1, memory_order_relaxed);
}

void torture_crit(torture_contender *c)
{
	unsigned r = torture_rand(&c->seed) % 16;
	if (r < 8)
		return;
	if (r < 15 || c->is_task) {
		for (volatile int i = 0; i < 64; i++)
			;
		return;
	}
	sched_yield();
}

uint64_t torture_pick_timeout(uint64_t *seed)
{
	static const uint64_t ns[] = {
		0, 10 * SB_NSEC_PER_USEC, 200 * SB_NSEC_PER_USEC, 2 * SB_NSEC_PER_MSEC,
		20 * SB_NSEC_PER_MSEC, SB_TIMEOUT_INFINITE, SB_TIMEOUT_INFINITE,
		SB_TIMEOUT_INFINITE,
	};
	return ns[torture_rand(seed) % 8];
}

/* A deadline for a future: 0, 20 us, 500 us or 5 ms. */
static uint64_t pick_deadline(uint64_t *seed)
{
	static const uint64_t ns[] = { 0, 20 * SB_NSEC_PER_USEC, 500 * SB_NSEC_PER_USEC,
				       5 * SB_NSEC_PER_MSEC };
	return ns[torture_rand(seed) % 4];
}

void torture_sleep_us(unsigned us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* The lost-wake watchdog's marks around a wait that nothing but the
 * primitive can end. */
static void wait_begin(torture_contender *c)
{
	atomic_store(&c->ops_at_wait, atomic_load(&torture_total_ops));
	atomic_store(&c->waiting_since, sb_now_ns());
}

static void wait_end(torture_contender *c)
{
	atomic_store(&c->waiting_since, 0);
}

/* When a future is cancelled. */
enum plan {
	PLAN_NONE,          /* never: it runs to completion */
	PLAN_CANCEL_IDLE,   /* before its first poll */
	PLAN_CANCEL_QUEUED, /* right after a first poll that waits */
	PLAN_CANCEL_ON_WAKE,/* when woken, instead of polling */
	PLAN_CANCEL_LATER,  /* a few wakes (task) or up to 200 us (thread) later */
};

static int pick_plan(uint64_t *seed)
{
	unsigned r = torture_rand(seed) % 16;
	return r < 9 ? PLAN_NONE : r < 10 ? PLAN_CANCEL_IDLE : r < 12 ? PLAN_CANCEL_QUEUED
	       : r < 14 ? PLAN_CANCEL_ON_WAKE : PLAN_CANCEL_LATER;
}

/* ---------------------------------------------------- a thread's futures */

static long futex(atomic_uint *addr, int op, unsigned val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static const sb_waker_vtable thread_waker_vtable;

static sb_waker thread_waker_clone(const void *data)
{
	torture_contender *c = (torture_contender *)data;
	atomic_fetch_add(&c->live_clones, 1);
	return (sb_waker){ &thread_waker_vtable, data };
}

static void thread_waker_wake_by_ref(const void *data)
{
	torture_contender *c = (torture_contender *)data;
	atomic_fetch_add(&c->wake_seq, 1);
	futex(&c->wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

static void thread_waker_wake(const void *data)
{
	torture_contender *c = (torture_contender *)data;
	thread_waker_wake_by_ref(data);
	atomic_fetch_sub(&c->live_clones, 1);
}

static void thread_waker_drop(const void *data)
{
	torture_contender *c = (torture_contender *)data;
	atomic_fetch_sub(&c->live_clones, 1);
}

static const sb_waker_vtable thread_waker_vtable = {
	thread_waker_clone, thread_waker_wake, thread_waker_wake_by_ref, thread_waker_drop,
};

/* Waits for a wake past *seen, until `until` (sb_now_ns) at most: true when woken. */
static bool thread_await_wake(torture_contender *c, unsigned *seen, uint64_t until)
{
	for (;;) {
		unsigned now_seq = atomic_load(&c->wake_seq);
		if (now_seq != *seen) {
			*seen = now_seq;
			return true;
		}
		uint64_t now = sb_now_ns();
		if (now >= until)
			return false;
		uint64_t wait = until - now;
		if (wait > 50 * SB_NSEC_PER_MSEC)
			wait = 50 * SB_NSEC_PER_MSEC;
		struct timespec ts = { (time_t)(wait / SB_NSEC_PER_SEC),
				       (long)(wait % SB_NSEC_PER_SEC) };
		futex(&c->wake_seq, FUTEX_WAIT_PRIVATE, *seen, &ts);
	}
}

/* Cancels the future through `ops` (a deadline's or its own) and asks the
 * inner future what became of it. */
static int cancel_and_ask(torture_contender *c, void *fut, const sb_future_ops *ops,
			  const sb_waker *w)
{
	ops->cancel(fut);
	torture_cancelled(c);
	int r = c->fops->poll(c->fut, w);
	if (r == SB_PENDING)
		VIOLATION(c, "a cancelled future polled pending");
	return r;
}

/* Whatever the outcome of a future's stage, its done step and the rest. */
static bool settle(torture_contender *c, int r)
{
	if (r == -ETIMEDOUT)
		torture_timeout(c);
	int res = prim->fut_done(c, r);
	if (res == T_HOLD) {
		torture_crit(c);
		prim->fut_release(c);
		return false;
	}
	return res == T_AGAIN;
}

/* One operation through futures a thread drives, some under an sb_deadline
 * it expires itself, some cancelled. */
static void thread_future_op(torture_contender *c)
{
	sb_waker w = { &thread_waker_vtable, c };
	for (;;) {
		if (prim->fut_begin(c) != 0)
			return;
		int plan = pick_plan(&c->seed);
		bool with_deadline = torture_rand(&c->seed) % 4 == 0;
		uint64_t start = sb_now_ns();
		uint64_t expire_at = start + pick_deadline(&c->seed);
		uint64_t cancel_at = start + (torture_rand(&c->seed) % 200) * SB_NSEC_PER_USEC;
		sb_deadline d;
		void *fut = c->fut;
		const sb_future_ops *ops = c->fops;
		if (with_deadline) {
			sb_deadline_init(&d, c->fut, c->fops);
			fut = &d;
			ops = &sb_deadline_ops;
		}
		int r;
		if (plan == PLAN_CANCEL_IDLE) {
			/* a never-polled future: its cancel does nothing (a
			 * condvar wait's unlocks the mutex), and a poll would be
			 * a first poll */
			ops->cancel(fut);
			torture_cancelled(c);
			r = -ECANCELED;
		} else {
			bool never = plan == PLAN_NONE && !with_deadline;
			bool expired = false;
			unsigned seen = atomic_load(&c->wake_seq);
			r = ops->poll(fut, &w);
			if (r == SB_PENDING && never)
				wait_begin(c);
			while (r == SB_PENDING) {
				if (plan == PLAN_CANCEL_QUEUED) {
					r = cancel_and_ask(c, fut, ops, &w);
					break;
				}
				uint64_t now = sb_now_ns();
				if (with_deadline && !expired && now >= expire_at) {
					sb_deadline_expire(&d);
					expired = true;
					r = ops->poll(fut, &w);
					if (r == SB_PENDING)
						VIOLATION(c, "an expired deadline polled pending");
					break;
				}
				if (plan == PLAN_CANCEL_LATER && now >= cancel_at) {
					r = cancel_and_ask(c, fut, ops, &w);
					break;
				}
				uint64_t until = UINT64_MAX;
				if (with_deadline && !expired)
					until = expire_at;
				if (plan == PLAN_CANCEL_LATER && cancel_at < until)
					until = cancel_at;
				if (!thread_await_wake(c, &seen, until))
					continue;
				if (plan == PLAN_CANCEL_ON_WAKE) {
					r = cancel_and_ask(c, fut, ops, &w);
					break;
				}
				r = ops->poll(fut, &w);
			}
			if (never)
				wait_end(c);
		}
		if (!settle(c, r))
			return;
	}
}

static void *thread_main(void *arg)
{
	torture_contender *c = arg;
	while (!atomic_load(&go))
		sched_yield();
	while (!torture_stop_requested()) {
		if (torture_rand(&c->seed) % 8 < 4) {
			uint64_t to = torture_pick_timeout(&c->seed);
			if (to == SB_TIMEOUT_INFINITE)
				wait_begin(c);
			prim->blocking_op(c, to);
			if (to == SB_TIMEOUT_INFINITE)
				wait_end(c);
		} else {
			thread_future_op(c);
		}
	}
	c->finished = true;
	atomic_fetch_add(&finished, 1);
	return NULL;
}

/* ----------------------------------------------------------- task futures */

#ifdef TORTURE_WITH_EXECUTOR
enum { TS_IDLE, TS_PENDING, TS_HOLD };

static int task_fut_poll(torture_contender *c, const sb_waker *w)
{
	return c->timed ? sb_timeout_poll(&c->timeout, w) : c->fops->poll(c->fut, w);
}

static int task_fut_cancel(torture_contender *c, const sb_waker *w)
{
	if (c->timed)
		return cancel_and_ask(c, &c->timeout, &sb_timeout_ops, w);
	return cancel_and_ask(c, c->fut, c->fops, w);
}

/* Starts the future the primitive prepared: SB_PENDING when the task waits
 * for it (state TS_PENDING), else its result. */
static int task_start(torture_contender *c, const sb_waker *w)
{
	c->plan = pick_plan(&c->seed);
	c->polls_left = 1 + (int)(torture_rand(&c->seed) % 3);
	c->timed = torture_rand(&c->seed) % 4 == 0;
	c->never = c->plan == PLAN_NONE && !c->timed;
	if (c->timed)
		sb_timeout_init(&c->timeout, c->fut, c->fops, pick_deadline(&c->seed));
	if (c->plan == PLAN_CANCEL_IDLE) {
		if (c->timed)
			sb_timeout_cancel(&c->timeout);
		else
			c->fops->cancel(c->fut);
		torture_cancelled(c);
		return -ECANCELED;
	}
	int r = task_fut_poll(c, w);
	if (r != SB_PENDING)
		return r;
	if (c->plan == PLAN_CANCEL_QUEUED)
		return task_fut_cancel(c, w);
	c->ts = TS_PENDING;
	if (c->never)
		wait_begin(c);
	return SB_PENDING;
}

/* The future ended with r: the done step, then the next stage or a hold.
 * SB_PENDING when the task must return (waiting, or yielding while it
 * holds), 0 when it goes on. */
static int task_settle(torture_contender *c, const sb_waker *w, int r)
{
	for (;;) {
		if (r == -ETIMEDOUT)
			torture_timeout(c);
		int res = prim->fut_done(c, r);
		if (res == T_HOLD) {
			if (torture_rand(&c->seed) % 2) {
				c->ts = TS_HOLD;
				sb_waker_wake_by_ref(w);
				return SB_PENDING;
			}
			torture_crit(c);
			prim->fut_release(c);
			return 0;
		}
		if (res != T_AGAIN)
			return 0;
		if (prim->fut_begin(c) != 0)
			VIOLATION(c, "a next stage began no future");
		r = task_start(c, w);
		if (r == SB_PENDING)
			return SB_PENDING;
	}
}

static int task_poll(sb_task *task, const sb_waker *w)
{
	torture_contender *c = SB_CONTAINER_OF(task, torture_contender, task);
	if (!atomic_load(&go))
		VIOLATION(c, "a task polled before the start");
	for (int step = 0; step < 8; step++) {
		int r;
		if (c->ts == TS_HOLD) {
			c->ts = TS_IDLE;
			prim->fut_release(c);
			continue;
		}
		if (c->ts == TS_PENDING) {
			if (c->plan == PLAN_CANCEL_ON_WAKE ||
			    (c->plan == PLAN_CANCEL_LATER && --c->polls_left == 0)) {
				r = task_fut_cancel(c, w);
			} else {
				r = task_fut_poll(c, w);
				if (r == SB_PENDING)
					return SB_PENDING;
			}
			c->ts = TS_IDLE;
			if (c->never)
				wait_end(c);
		} else {
			if (torture_stop_requested()) {
				c->finished = true;
				atomic_fetch_add(&finished, 1);
				return 0;
			}
			int b = prim->fut_begin(c);
			if (b > 0)
				continue;
			if (b < 0) {
				c->finished = true;
				atomic_fetch_add(&finished, 1);
				return 0;
			}
			r = task_start(c, w);
			if (r == SB_PENDING)
				return SB_PENDING;
		}
		if (task_settle(c, w, r) == SB_PENDING)
			return SB_PENDING;
	}
	sb_waker_wake_by_ref(w); /* a yield: the thread's other tasks run */
	return SB_PENDING;
}

/* Only on a failure path: every task finishes before the group shuts down. */
static void task_cancel(sb_task *task)
{
	torture_contender *c = SB_CONTAINER_OF(task, torture_contender, task);
	if (c->ts == TS_PENDING) {
		if (c->timed)
			sb_timeout_cancel(&c->timeout);
		else
			c->fops->cancel(c->fut);
	}
}

static sb_executor_group group;
static bool have_group;
#endif

/* ------------------------------------------------------------- statistics */

enum { CLASS_THREADS, CLASS_TASKS, NCLASSES };

typedef struct summary {
	long ops, cancels, timeouts;
	/* per class: how many, the fewest and the most operations of one */
	int n[NCLASSES];
	long min_ops[NCLASSES], max_ops[NCLASSES];
	uint64_t max_gap;
} summary;

static summary summarise(uint64_t now)
{
	summary s;
	memset(&s, 0, sizeof s);
	for (int i = 0; i < torture_ncontenders; i++) {
		torture_contender *c = &torture_contenders[i];
		int k = c->is_task ? CLASS_TASKS : CLASS_THREADS;
		long ops = atomic_load(&c->ops);
		s.ops += ops;
		s.cancels += atomic_load(&c->cancels);
		s.timeouts += atomic_load(&c->timeouts);
		if (s.n[k]++ == 0 || ops < s.min_ops[k])
			s.min_ops[k] = ops;
		if (ops > s.max_ops[k])
			s.max_ops[k] = ops;
		uint64_t gap = atomic_load(&c->max_gap_ns);
		uint64_t last = atomic_load(&c->last_done_ns);
		if (now > last && now - last > gap)
			gap = now - last;
		if (gap > s.max_gap)
			s.max_gap = gap;
	}
	return s;
}

/* The starvation ratio in thousandths (see the top of the file): the threads'. */
static long starvation_permille(const summary *s)
{
	long max = s->max_ops[CLASS_THREADS];
	return max ? (long)((double)s->min_ops[CLASS_THREADS] * 1000.0 / (double)max) : 0;
}

static void print_stats(uint64_t t0, uint64_t now, long allocs, bool final)
{
	summary s = summarise(now);
	long permille = starvation_permille(&s);
	uint64_t ms10 = (now - t0) / (100 * SB_NSEC_PER_MSEC);
	char extra[256] = "";
	if (prim->describe)
		prim->describe(extra, sizeof extra);
	char target[32] = "";
	if (prim->fair_permille)
		snprintf(target, sizeof target, ", target %d.%03d", prim->fair_permille / 1000,
			 prim->fair_permille % 1000);
	char tasks[64] = "";
	if (s.n[CLASS_TASKS])
		snprintf(tasks, sizeof tasks, "; tasks %ld-%ld, not compared",
			 s.min_ops[CLASS_TASKS], s.max_ops[CLASS_TASKS]);
	char classes[160];
	snprintf(classes, sizeof classes, "threads %ld-%ld%s%s", s.min_ops[CLASS_THREADS],
		 s.max_ops[CLASS_THREADS], target, tasks);
	char alloc_text[64];
#ifdef SB_TEST_COUNT_ALLOCATIONS
	snprintf(alloc_text, sizeof alloc_text, "%ld", allocs);
#else
	(void)allocs;
	snprintf(alloc_text, sizeof alloc_text, "not counted (sanitizer build)");
#endif
	out(1, "torture: %-10s %4llu.%01llu s%s ops %ld  cancels %ld  timeouts %ld  "
	    "starvation %ld.%03ld (%s)  max gap %llu.%03llu ms  %s%sallocations %s\n",
	    prim->name, (unsigned long long)(ms10 / 10), (unsigned long long)(ms10 % 10),
	    final ? " (end)" : "      ", s.ops, s.cancels, s.timeouts, permille / 1000,
	    permille % 1000, classes, (unsigned long long)(s.max_gap / SB_NSEC_PER_MSEC),
	    (unsigned long long)(s.max_gap % SB_NSEC_PER_MSEC / SB_NSEC_PER_USEC), extra,
	    extra[0] ? "  " : "", alloc_text);
	if (final && getenv("TORTURE_VERBOSE"))
		for (int i = 0; i < torture_ncontenders; i++) {
			torture_contender *c = &torture_contenders[i];
			out(1, "torture:   contender %2d (%s): ops %ld  cancels %ld  timeouts %ld  "
			    "max gap %llu ms\n", c->id, c->is_task ? "task  " : "thread",
			    atomic_load(&c->ops), atomic_load(&c->cancels),
			    atomic_load(&c->timeouts),
			    (unsigned long long)(atomic_load(&c->max_gap_ns) / SB_NSEC_PER_MSEC));
		}
}

/* A long run's starvation ratio against the primitive's target. */
static void check_fairness(const torture_prim *p, unsigned seconds, uint64_t now)
{
	if (!p->fair_permille || seconds < TORTURE_FAIR_SECONDS)
		return;
	summary s = summarise(now);
	long permille = starvation_permille(&s);
	if (permille < p->fair_permille)
		VIOLATION(NULL, "starvation ratio %ld.%03ld, below the target %d.%03d", permille / 1000,
			  permille % 1000, p->fair_permille / 1000, p->fair_permille % 1000);
}

/* ------------------------------------------------------------- watchdogs */

static void watch(uint64_t now, uint64_t *last_change, long *last_progress, bool stopping)
{
	long total = atomic_load(&torture_total_ops);
	long progress = total;
	for (int i = 0; i < torture_ncontenders; i++) {
		torture_contender *c = &torture_contenders[i];
		progress += atomic_load(&c->cancels) + atomic_load(&c->timeouts);
		uint64_t since = atomic_load(&c->waiting_since);
		if (since && now > since && now - since > TORTURE_LOST_WAKE_NS) {
			long at = atomic_load(&c->ops_at_wait);
			if (since == atomic_load(&c->waiting_since) && total - at > 2 * TORTURE_MAX)
				VIOLATION(c, "lost wake: a wait that is never cancelled has been "
					  "pending for %llu ms while the other contenders completed "
					  "%ld operations",
					  (unsigned long long)((now - since) / SB_NSEC_PER_MSEC),
					  total - at);
		}
	}
	if (progress != *last_progress) {
		*last_progress = progress;
		*last_change = now;
	} else if (now - *last_change > 30 * SB_NSEC_PER_SEC) {
		for (int i = 0; i < torture_ncontenders; i++) {
			torture_contender *c = &torture_contenders[i];
			uint64_t since = atomic_load(&c->waiting_since);
			out(2, "torture:   contender %d (%s): %ld ops, %s%s\n", c->id,
			    c->is_task ? "task" : "thread", atomic_load(&c->ops),
			    c->finished ? "finished" : "running",
			    since ? ", in a wait that is never cancelled" : "");
		}
		VIOLATION(NULL, "no progress for 30 s%s: a hang",
			  stopping ? " after the stop" : "");
	}
}

/* ------------------------------------------------------------------- runs */

static const torture_prim *const all_prims[] = {
	&torture_semaphore, &torture_semaphore_fifo, &torture_mutex, &torture_mutex_fifo,
	&torture_condvar, &torture_event, &torture_auto_event, &torture_rwlock,
	&torture_rwlock_fifo, &torture_barrier,
	&torture_latch, &torture_once, &torture_channel, &torture_broadcast, &torture_watch,
};
enum { NPRIMS = sizeof all_prims / sizeof all_prims[0] };

static void run_prim(const torture_prim *p, int index, unsigned seconds)
{
	/* The previous run's tasks are released (no waker holds them) before
	 * their memory is reused. */
#ifdef TORTURE_WITH_EXECUTOR
	for (int i = nthreads; i < torture_ncontenders; i++)
		while (!sb_task_is_released(&torture_contenders[i].task))
			torture_sleep_us(100);
#endif
	prim = p;
	memset(torture_contenders, 0, sizeof torture_contenders);
	torture_ncontenders = nthreads + ntasks;
	for (int i = 0; i < torture_ncontenders; i++) {
		torture_contender *c = &torture_contenders[i];
		c->id = i;
		c->is_task = i >= nthreads;
		c->seed = (uint64_t)run_seed << 32 | (uint64_t)index << 16 | (uint64_t)i;
		for (int j = 0; j < TORTURE_MAX; j++)
			c->last_seq[j] = -1;
	}
	atomic_store(&torture_stopping, false);
	atomic_store(&torture_total_ops, 0);
	atomic_store(&finished, 0);
	atomic_store(&go, false);
	p->setup();

	pthread_t threads[TORTURE_MAX_THREADS];
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&threads[i], NULL, thread_main, &torture_contenders[i]) != 0) {
			out(2, "torture: pthread_create failed\n");
			exit(1);
		}
#ifdef TORTURE_WITH_EXECUTOR
	for (int i = nthreads; i < torture_ncontenders; i++)
		sb_task_init(&torture_contenders[i].task, task_poll, task_cancel, NULL);
#endif

	/* The counted window: from the start signal to the last contender's end. */
	long allocs0 = allocation_count();
	uint64_t t0 = sb_now_ns();
	for (int i = 0; i < torture_ncontenders; i++)
		atomic_store(&torture_contenders[i].last_done_ns, t0);
	atomic_store(&go, true);
#ifdef TORTURE_WITH_EXECUTOR
	for (int i = nthreads; i < torture_ncontenders; i++) {
		int rc = sb_executor_group_spawn(&group, SB_GROUP_FLOATING,
						 &torture_contenders[i].task,
						 &torture_contenders[i].join);
		if (rc != 0)
			VIOLATION(&torture_contenders[i], "spawn failed: %d", rc);
	}
#endif
	uint64_t end = t0 + (uint64_t)seconds * SB_NSEC_PER_SEC;
	uint64_t next_stats = t0 + 5 * SB_NSEC_PER_SEC;
	uint64_t last_change = t0;
	long last_progress = -1;
	for (uint64_t now = t0; now < end; now = sb_now_ns()) {
		torture_sleep_us(1000);
		p->tick();
		now = sb_now_ns();
		watch(now, &last_change, &last_progress, false);
		if (now >= next_stats && now + SB_NSEC_PER_SEC < end) {
			print_stats(t0, now, allocation_count() - allocs0, false);
			next_stats += 5 * SB_NSEC_PER_SEC;
		}
	}
	uint64_t t_stop = sb_now_ns();
	atomic_store(&torture_stopping, true);
	while (atomic_load(&finished) < torture_ncontenders) {
		p->stop_tick();
		torture_sleep_us(200);
		watch(sb_now_ns(), &last_change, &last_progress, true);
	}
	long allocs = allocation_count() - allocs0;

	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
#ifdef TORTURE_WITH_EXECUTOR
	for (int i = nthreads; i < torture_ncontenders; i++) {
		int rc = sb_join_wait(&torture_contenders[i].join);
		if (rc != 0)
			VIOLATION(&torture_contenders[i], "the task ended with %d", rc);
	}
#endif
	p->teardown();
	for (int i = 0; i < nthreads; i++)
		if (atomic_load(&torture_contenders[i].live_clones) != 0)
			VIOLATION(&torture_contenders[i],
				  "%d clones of the thread's waker were neither woken nor dropped",
				  atomic_load(&torture_contenders[i].live_clones));
	print_stats(t0, t_stop, allocs, true);
	check_fairness(p, seconds, t_stop);
	if (seconds >= 5)
		for (int i = 0; i < torture_ncontenders; i++)
			if (atomic_load(&torture_contenders[i].ops) == 0)
				VIOLATION(&torture_contenders[i],
					  "starvation: no operation completed in %u s", seconds);
#ifdef SB_TEST_COUNT_ALLOCATIONS
	if (allocs != 0)
		VIOLATION(NULL, "%ld allocations while the contenders ran", allocs);
#endif
}

static void usage(void)
{
	out(2, "usage: torture [SECONDS] [PRIMITIVE...]\n  primitives:");
	for (int i = 0; i < NPRIMS; i++)
		out(2, " %s", all_prims[i]->name);
	out(2, " (default: all)\n");
}

int main(int argc, char **argv)
{
	unsigned seconds = 10;
	const torture_prim *selected[NPRIMS];
	int nselected = 0;
	for (int a = 1; a < argc; a++) {
		const char *s = argv[a];
		if (s[0] >= '0' && s[0] <= '9') {
			char *endp;
			unsigned long v = strtoul(s, &endp, 10);
			if (*endp || v == 0 || v > 86400) {
				usage();
				return 2;
			}
			seconds = (unsigned)v;
			continue;
		}
		if (!strcmp(s, "all"))
			continue;
		int found = -1;
		for (int i = 0; i < NPRIMS; i++)
			if (!strcmp(s, all_prims[i]->name) ||
			    (!strcmp(s, "auto_event") && all_prims[i] == &torture_auto_event) ||
			    (!strcmp(s, "mutex_fifo") && all_prims[i] == &torture_mutex_fifo) ||
			    (!strcmp(s, "semaphore_fifo") && all_prims[i] == &torture_semaphore_fifo) ||
			    (!strcmp(s, "rwlock_fifo") && all_prims[i] == &torture_rwlock_fifo))
				found = i;
		if (found < 0) {
			out(2, "torture: unknown primitive '%s'\n", s);
			usage();
			return 2;
		}
		if (nselected == NPRIMS) {
			usage();
			return 2;
		}
		selected[nselected++] = all_prims[found];
	}
	if (nselected == 0)
		for (int i = 0; i < NPRIMS; i++)
			selected[nselected++] = all_prims[i];

	const char *env = getenv("TORTURE_SEED");
	run_seed = env ? (unsigned)strtoul(env, NULL, 0)
		       : (unsigned)(sb_now_ns() ^ (uint64_t)getpid() * 2654435761u);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	nthreads = cores > TORTURE_MAX_THREADS / 2 ? TORTURE_MAX_THREADS
		   : cores * 2 > TORTURE_THREADS    ? (int)cores * 2
						    : TORTURE_THREADS;
	ntasks = 0;
#ifdef TORTURE_WITH_EXECUTOR
	int rc = sb_executor_group_init(&group, TORTURE_GROUP_THREADS, NULL);
	if (rc == 0) {
		have_group = true;
		ntasks = TORTURE_TASKS;
	} else {
		out(2, "torture: no io_uring executor (%s): plain threads only\n", strerror(-rc));
	}
#else
	out(2, "torture: built without the executor: plain threads only\n");
#endif
	out(1, "torture: %u s per primitive, %d threads and %d floating tasks on %d executor "
	    "threads, %ld cores; seed %u (TORTURE_SEED=%u reproduces the choices)\n",
	    seconds, nthreads, ntasks, ntasks ? TORTURE_GROUP_THREADS : 0, cores, run_seed,
	    run_seed);
	for (int i = 0; i < nselected; i++)
		run_prim(selected[i], i, seconds);
#ifdef TORTURE_WITH_EXECUTOR
	if (have_group) {
		size_t cancelled = 0;
		sb_executor_group_shutdown(&group, &cancelled);
		if (cancelled)
			VIOLATION(NULL, "%zu tasks were left to the shutdown", cancelled);
	}
#endif
	prim = NULL;
	out(1, "torture: passed: %d primitives, no violation\n", nselected);
	return 0;
}
