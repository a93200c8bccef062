/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The torture of the signalling primitives: event (manual-reset: waits end
 * as the controller and some contenders set and reset it; a wait left
 * pending across sets is a lost wake), auto-event (used as a lock: one
 * signal circulates, so at most one contender holds it, and it is stored
 * again at the end), barrier (3 parties: exactly one leader per generation,
 * checked by counting parties against leaders as it runs and exactly at the
 * end), latch (a fresh latch each round: a released wait saw every
 * count_down of its round, count_down past the count is refused), once (a
 * fresh once each round: one runner at a time, failures retried, the
 * initialiser's value seen by everyone told it is done, a report by a caller
 * that holds nothing refused while nobody holds the job).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "torture.h"

static void nothing(void)
{
}

static void no_release(torture_contender *c)
{
	VIOLATION(c, "released without a hold");
}

/* ------------------------------------------------------------------ event */

static sb_event ev;
static atomic_long ev_sets, ev_resets, ev_released;
static unsigned ev_ticks;

static void ev_setup(void)
{
	sb_event_init(&ev, false);
	atomic_store(&ev_sets, 0);
	atomic_store(&ev_resets, 0);
	atomic_store(&ev_released, 0);
	ev_ticks = 0;
}

/* A toggler's operation: set or reset. */
static bool ev_toggle(torture_contender *c)
{
	if (torture_rand(&c->seed) % 4)
		return false;
	if (torture_rand(&c->seed) % 2) {
		atomic_fetch_add(&ev_sets, 1);
		sb_event_set(&ev);
	} else {
		atomic_fetch_add(&ev_resets, 1);
		sb_event_reset(&ev);
	}
	torture_op(c);
	return true;
}

static void ev_released_wait(torture_contender *c)
{
	atomic_fetch_add(&ev_released, 1);
	torture_op(c);
}

static void ev_blocking(torture_contender *c, uint64_t to)
{
	if (ev_toggle(c))
		return;
	int r = sb_event_wait_blocking(&ev, to);
	if (r == 0)
		ev_released_wait(c);
	else if (r == -ETIMEDOUT)
		torture_timeout(c);
	else
		VIOLATION(c, "wait_blocking: %d", r);
}

static int ev_begin(torture_contender *c)
{
	if (ev_toggle(c))
		return 1;
	if (torture_rand(&c->seed) % 5 == 0) {
		if (sb_event_try_wait(&ev) == 0)
			ev_released_wait(c);
		return 1;
	}
	sb_event_wait_init(&c->f.ev, &ev);
	c->fut = &c->f.ev;
	c->fops = &sb_event_wait_ops;
	return 0;
}

static int ev_done(torture_contender *c, int r)
{
	if (r == 0)
		ev_released_wait(c);
	else if (r != -ETIMEDOUT && r != -ECANCELED)
		VIOLATION(c, "wait: %d", r);
	return T_DONE;
}

/* Set every other millisecond, reset every fifth. */
static void ev_tick(void)
{
	ev_ticks++;
	if (ev_ticks % 2 == 0) {
		atomic_fetch_add(&ev_sets, 1);
		sb_event_set(&ev);
	} else if (ev_ticks % 5 == 0) {
		atomic_fetch_add(&ev_resets, 1);
		sb_event_reset(&ev);
	}
}

static void ev_stop_tick(void)
{
	sb_event_set(&ev);
}

static void ev_teardown(void)
{
	int r = sb_event_destroy(&ev);
	if (r != 0)
		VIOLATION(NULL, "destroy: %d", r);
}

static void ev_describe(char *buf, size_t size)
{
	snprintf(buf, size, "sets %ld, resets %ld, released waits %ld", atomic_load(&ev_sets),
		 atomic_load(&ev_resets), atomic_load(&ev_released));
}

const torture_prim torture_event = {
	"event", ev_setup, ev_blocking, ev_begin, ev_done, no_release,
	ev_tick, ev_stop_tick, ev_teardown, ev_describe, 0,
};

/* ------------------------------------------------------------- auto-event */

static sb_auto_event aev;
static atomic_int aev_holders;

static void aev_setup(void)
{
	sb_auto_event_init(&aev, true); /* the one signal */
	atomic_store(&aev_holders, 0);
}

static void aev_enter(torture_contender *c)
{
	int h = atomic_fetch_add(&aev_holders, 1);
	if (h != 0)
		VIOLATION(c, "the one signal taken by %d contenders at once", h + 1);
}

static void aev_release(torture_contender *c)
{
	atomic_fetch_sub(&aev_holders, 1);
	sb_auto_event_set(&aev);
	torture_op(c);
}

static void aev_blocking(torture_contender *c, uint64_t to)
{
	int r = sb_auto_event_wait_blocking(&aev, to);
	if (r == -ETIMEDOUT) {
		torture_timeout(c);
		return;
	}
	if (r != 0)
		VIOLATION(c, "wait_blocking: %d", r);
	aev_enter(c);
	torture_crit(c);
	aev_release(c);
}

static int aev_begin(torture_contender *c)
{
	if (torture_rand(&c->seed) % 4 == 0) {
		int r = sb_auto_event_try_wait(&aev);
		if (r == 0) {
			aev_enter(c);
			torture_crit(c);
			aev_release(c);
		} else if (r != -EAGAIN) {
			VIOLATION(c, "try_wait: %d", r);
		}
		return 1;
	}
	sb_auto_event_wait_init(&c->f.aev, &aev);
	c->fut = &c->f.aev;
	c->fops = &sb_auto_event_wait_ops;
	return 0;
}

static int aev_done(torture_contender *c, int r)
{
	if (r == 0) {
		aev_enter(c);
		return T_HOLD;
	}
	if (r != -ETIMEDOUT && r != -ECANCELED)
		VIOLATION(c, "wait: %d", r);
	return T_DONE;
}

static void aev_teardown(void)
{
	/* The signal is stored again, and only one. */
	if (atomic_load(&aev_holders) != 0)
		VIOLATION(NULL, "the signal is held after the run");
	if (sb_auto_event_try_wait(&aev) != 0)
		VIOLATION(NULL, "the one signal was lost");
	if (sb_auto_event_try_wait(&aev) != -EAGAIN)
		VIOLATION(NULL, "a second signal appeared");
	int r = sb_auto_event_destroy(&aev);
	if (r != 0)
		VIOLATION(NULL, "destroy: %d", r);
}

const torture_prim torture_auto_event = {
	"auto-event", aev_setup, aev_blocking, aev_begin, aev_done, aev_release,
	nothing, nothing, aev_teardown, NULL, 950,
};

/* ---------------------------------------------------------------- barrier */

enum { BAR_PARTIES = 3 };

static sb_barrier bar;
static atomic_long bar_leaders, bar_followers, bar_withdrawn;
/* the controller's own parties once the time is up */
static sb_barrier_wait bar_main[BAR_PARTIES - 1];
static bool bar_main_busy[BAR_PARTIES - 1];

static void bar_setup(void)
{
	sb_barrier_init(&bar, BAR_PARTIES);
	atomic_store(&bar_leaders, 0);
	atomic_store(&bar_followers, 0);
	atomic_store(&bar_withdrawn, 0);
	memset(bar_main_busy, 0, sizeof bar_main_busy);
}

static void bar_completed(torture_contender *c, bool leader)
{
	atomic_fetch_add(leader ? &bar_leaders : &bar_followers, 1);
	if (c)
		torture_op(c);
}

static void bar_blocking(torture_contender *c, uint64_t to)
{
	int r = sb_barrier_wait_blocking(&bar, to);
	if (r == SB_BARRIER_LEADER || r == 0) {
		bar_completed(c, r == SB_BARRIER_LEADER);
	} else if (r == -ETIMEDOUT) {
		torture_timeout(c);
		atomic_fetch_add(&bar_withdrawn, 1);
	} else {
		VIOLATION(c, "wait_blocking: %d", r);
	}
}

static int bar_begin(torture_contender *c)
{
	sb_barrier_wait_init(&c->f.bar, &bar);
	c->fut = &c->f.bar;
	c->fops = &sb_barrier_wait_ops;
	return 0;
}

/* A wait that ended with r: completed (as the leader or not), completed
 * before its cancel (the cancel found its generation released: it belongs
 * to that generation), or withdrawn. */
static void bar_settle(torture_contender *c, sb_barrier_wait *f, int r)
{
	if (r == 0) {
		bar_completed(c, sb_barrier_wait_is_leader(f));
	} else if (r == -ETIMEDOUT || r == -ECANCELED) {
		if (f->released)
			bar_completed(c, false);
		else
			atomic_fetch_add(&bar_withdrawn, 1);
	} else {
		VIOLATION(c, "wait: %d", r);
	}
}

static int bar_done(torture_contender *c, int r)
{
	bar_settle(c, &c->f.bar, r);
	return T_DONE;
}

/* Each generation has one leader and BAR_PARTIES - 1 others: counted as the
 * parties observe it, up to those still about to (a contender, or the
 * controller's parties, each at most one). */
static void bar_tick(void)
{
	long l1 = atomic_load(&bar_leaders);
	long f = atomic_load(&bar_followers);
	long l2 = atomic_load(&bar_leaders);
	long slack = TORTURE_MAX + BAR_PARTIES;
	if (f < l1 * (BAR_PARTIES - 1) - slack || f > (l2 + slack) * (BAR_PARTIES - 1))
		VIOLATION(NULL, "%ld parties released besides %ld-%ld leaders: not %d per generation",
			  f, l1, l2, BAR_PARTIES - 1);
}

/* Once the time is up, the controller arrives too (BAR_PARTIES - 1 parties),
 * so that contenders waiting for ever are released. */
static void bar_stop_tick(void)
{
	sb_waker w = sb_waker_noop();
	for (int i = 0; i < BAR_PARTIES - 1; i++) {
		if (!bar_main_busy[i]) {
			sb_barrier_wait_init(&bar_main[i], &bar);
			bar_main_busy[i] = true;
		}
		int r = sb_barrier_wait_poll(&bar_main[i], &w);
		if (r == SB_PENDING)
			continue;
		bar_settle(NULL, &bar_main[i], r);
		bar_main_busy[i] = false;
	}
	bar_tick();
}

static void bar_teardown(void)
{
	sb_waker w = sb_waker_noop();
	for (int i = 0; i < BAR_PARTIES - 1; i++) {
		if (!bar_main_busy[i])
			continue;
		sb_barrier_wait_cancel(&bar_main[i]);
		bar_settle(NULL, &bar_main[i], sb_barrier_wait_poll(&bar_main[i], &w));
	}
	long l = atomic_load(&bar_leaders), f = atomic_load(&bar_followers);
	if (f != l * (BAR_PARTIES - 1))
		VIOLATION(NULL, "%ld generations (leaders) but %ld other parties released, not %ld",
			  l, f, l * (BAR_PARTIES - 1));
	int r = sb_barrier_destroy(&bar);
	if (r != 0)
		VIOLATION(NULL, "destroy: %d", r);
}

static void bar_describe(char *buf, size_t size)
{
	snprintf(buf, size, "generations %ld, other parties %ld, withdrawn %ld",
		 atomic_load(&bar_leaders), atomic_load(&bar_followers),
		 atomic_load(&bar_withdrawn));
}

const torture_prim torture_barrier = {
	"barrier", bar_setup, bar_blocking, bar_begin, bar_done, no_release,
	bar_tick, bar_stop_tick, bar_teardown, bar_describe, 0,
};

/* ------------------------------------------------------------------ latch */

static struct {
	sb_latch l;
	atomic_long tokens; /* count_downs not yet taken by anyone */
	atomic_long downs;  /* count_downs made (counted just before) */
	long k;
	uint64_t started;
} latches[TORTURE_SLOTS];
static torture_slots latch_slots;
static atomic_long latch_rounds, latch_released, latch_adds;
static uint64_t latch_seed;

static void latch_round(int i)
{
	long k = 3 + (long)(torture_rand(&latch_seed) % 6);
	sb_latch_init(&latches[i].l, (size_t)k);
	atomic_store(&latches[i].tokens, k);
	atomic_store(&latches[i].downs, 0);
	latches[i].k = k;
	latches[i].started = sb_now_ns();
}

static void latch_setup(void)
{
	memset(&latch_slots, 0, sizeof latch_slots);
	latch_seed = 12345;
	for (int i = 0; i < TORTURE_SLOTS; i++)
		latch_round(i);
	atomic_store(&latch_rounds, 0);
	atomic_store(&latch_released, 0);
	atomic_store(&latch_adds, 0);
}

static bool latch_take_token(int i)
{
	long t = atomic_load(&latches[i].tokens);
	while (t > 0)
		if (atomic_compare_exchange_weak(&latches[i].tokens, &t, t - 1))
			return true;
	return false;
}

/* One count_down of slot i's round, which the caller took a token for. */
static void latch_down(torture_contender *c, int i)
{
	sb_latch *l = &latches[i].l;
	if (c && torture_rand(&c->seed) % 4 == 0) {
		/* as a wait group: our token keeps the count above zero */
		int r = sb_latch_add(l, 1);
		if (r != 0)
			VIOLATION(c, "add: %d", r);
		atomic_fetch_add(&latch_adds, 1);
		r = sb_latch_count_down(l, 1);
		if (r != 0)
			VIOLATION(c, "count_down of an add: %d", r);
	}
	if (c && torture_rand(&c->seed) % 8 == 0) {
		int r = sb_latch_count_down(l, 1000);
		if (r != -ERANGE)
			VIOLATION(c, "count_down past the count: %d, not -ERANGE", r);
	}
	atomic_fetch_add(&latches[i].downs, 1);
	int r = sb_latch_count_down(l, 1);
	if (r != 0)
		VIOLATION(c, "count_down with a token: %d", r);
}

/* A wait of slot i's round completed: every count_down of the round came first. */
static void latch_released_wait(torture_contender *c, int i)
{
	long downs = atomic_load(&latches[i].downs);
	if (downs != latches[i].k)
		VIOLATION(c, "a wait released after %ld of %ld count_downs", downs, latches[i].k);
	if (sb_latch_try_wait(&latches[i].l) != 0)
		VIOLATION(c, "try_wait fails on a latch that released a wait");
	atomic_fetch_add(&latch_released, 1);
	torture_op(c);
}

/* An operation that never waits: a count_down, or a try_wait. */
static bool latch_immediate(torture_contender *c)
{
	unsigned r = torture_rand(&c->seed) % 4;
	if (r == 0 && latch_take_token(c->slot)) {
		latch_down(c, c->slot);
		torture_op(c);
		return true;
	}
	if (r == 1) {
		if (sb_latch_try_wait(&latches[c->slot].l) == 0)
			latch_released_wait(c, c->slot);
		return true;
	}
	return false;
}

static void latch_blocking(torture_contender *c, uint64_t to)
{
	c->slot = torture_slot_enter(&latch_slots);
	if (!latch_immediate(c)) {
		int r = sb_latch_wait_blocking(&latches[c->slot].l, to);
		if (r == 0)
			latch_released_wait(c, c->slot);
		else if (r == -ETIMEDOUT)
			torture_timeout(c);
		else
			VIOLATION(c, "wait_blocking: %d", r);
	}
	torture_slot_leave(&latch_slots, c->slot);
}

static int latch_begin(torture_contender *c)
{
	c->slot = torture_slot_enter(&latch_slots);
	if (latch_immediate(c)) {
		torture_slot_leave(&latch_slots, c->slot);
		return 1;
	}
	sb_latch_wait_init(&c->f.latch, &latches[c->slot].l);
	c->fut = &c->f.latch;
	c->fops = &sb_latch_wait_ops;
	return 0;
}

static int latch_done(torture_contender *c, int r)
{
	if (r == 0)
		latch_released_wait(c, c->slot);
	else if (r != -ETIMEDOUT && r != -ECANCELED)
		VIOLATION(c, "wait: %d", r);
	torture_slot_leave(&latch_slots, c->slot);
	return T_DONE;
}

static void latch_finish_round(int i)
{
	while (latch_take_token(i))
		latch_down(NULL, i);
}

static void latch_check_idle(int i)
{
	if (sb_latch_count(&latches[i].l) != (size_t)atomic_load(&latches[i].tokens))
		VIOLATION(NULL, "a latch's count %zu is not the %ld count_downs left",
			  sb_latch_count(&latches[i].l), atomic_load(&latches[i].tokens));
	int r = sb_latch_destroy(&latches[i].l);
	if (r != 0)
		VIOLATION(NULL, "destroy of an idle latch: %d", r);
}

/* A new round once the current latch is open; a round's last count_downs
 * after 20 ms, so that waits never wait long for contenders to take them. */
static void latch_tick(void)
{
	int cur = atomic_load(&latch_slots.cur);
	if (sb_latch_try_wait(&latches[cur].l) != 0) {
		if (sb_now_ns() - latches[cur].started > 20 * SB_NSEC_PER_MSEC)
			latch_finish_round(cur);
		return;
	}
	int next = torture_slot_next_free(&latch_slots);
	if (next < 0)
		return;
	latch_check_idle(next);
	latch_round(next);
	atomic_store(&latch_slots.cur, next);
	atomic_fetch_add(&latch_rounds, 1);
}

static void latch_stop_tick(void)
{
	latch_finish_round(atomic_load(&latch_slots.cur));
}

static void latch_teardown(void)
{
	for (int i = 0; i < TORTURE_SLOTS; i++) {
		if (atomic_load(&latch_slots.users[i]) != 0)
			VIOLATION(NULL, "a latch still has users after the run");
		latch_check_idle(i);
	}
}

static void latch_describe(char *buf, size_t size)
{
	snprintf(buf, size, "rounds %ld, released waits %ld, adds %ld", atomic_load(&latch_rounds),
		 atomic_load(&latch_released), atomic_load(&latch_adds));
}

const torture_prim torture_latch = {
	"latch", latch_setup, latch_blocking, latch_begin, latch_done, no_release,
	latch_tick, latch_stop_tick, latch_teardown, latch_describe, 0,
};

/* ------------------------------------------------------------------- once */

static struct {
	sb_once o;
	atomic_int runners;  /* told SB_ONCE_RUN and not reported yet */
	atomic_int blocking; /* in sb_once_wait_blocking, which may tell */
	atomic_ullong value; /* the initialiser's: 0 until it succeeded */
	uint64_t magic;
} onces[TORTURE_SLOTS];
static torture_slots once_slots;
static atomic_long once_rounds, once_runs, once_failures, once_seen, once_strays;
static uint64_t once_magic;

/*
 * The stray reports.  A user may report twice, or from a caller that was
 * never told SB_ONCE_RUN; the once cannot tell who calls complete() or
 * fail(), so such a report steals the job whenever a runner holds it - but
 * whenever nobody holds it (the once is free, done, or handed to a future
 * that has not polled yet) it must be refused with -EPERM.  To know that
 * nobody holds it, every call that can tell SB_ONCE_RUN or report, and the
 * `runners` count that follows it, is made inside the gate (readers); a
 * blocking wait, which may tell at any time, counts itself in `blocking` and
 * enters the gate only to do so.  A stray report closes the gate (AUDIT),
 * waits for the calls inside to leave, and is made only if no runner holds
 * the job and no blocking wait is in flight in its slot.  The runner that
 * just failed makes it, so that it lands often right after a hand-over.
 */
enum { ONCE_GATE_AUDIT = 1 << 30 };
static atomic_int once_gate; /* calls inside, plus AUDIT while a stray report is checked */

static void once_gate_enter(void)
{
	int s = atomic_load(&once_gate);
	for (;;) {
		if (s & ONCE_GATE_AUDIT) {
			sched_yield();
			s = atomic_load(&once_gate);
		} else if (atomic_compare_exchange_weak(&once_gate, &s, s + 1)) {
			return;
		}
	}
}

static void once_gate_leave(void)
{
	atomic_fetch_sub(&once_gate, 1);
}

static void once_round(int i)
{
	sb_once_init(&onces[i].o);
	atomic_store(&onces[i].runners, 0);
	atomic_store(&onces[i].blocking, 0);
	atomic_store(&onces[i].value, 0);
	onces[i].magic = ++once_magic * 0x9e3779b97f4a7c15u | 1;
}

static void once_setup(void)
{
	memset(&once_slots, 0, sizeof once_slots);
	for (int i = 0; i < TORTURE_SLOTS; i++)
		once_round(i);
	atomic_store(&once_gate, 0);
	atomic_store(&once_rounds, 0);
	atomic_store(&once_runs, 0);
	atomic_store(&once_failures, 0);
	atomic_store(&once_seen, 0);
	atomic_store(&once_strays, 0);
}

/* Told it is done: the initialiser's value is there. */
static void once_done_seen(torture_contender *c)
{
	uint64_t v = atomic_load_explicit(&onces[c->slot].value, memory_order_relaxed);
	if (v != onces[c->slot].magic)
		VIOLATION(c, "told done, but the initialiser's value is %llx, not %llx",
			  (unsigned long long)v, (unsigned long long)onces[c->slot].magic);
	atomic_fetch_add(&once_seen, 1);
	torture_op(c);
}

/* Told to run (inside the gate, or counted as a blocking wait). */
static void once_run_start(torture_contender *c)
{
	int others = atomic_fetch_add(&onces[c->slot].runners, 1);
	if (others != 0)
		VIOLATION(c, "told to run while %d other runners hold the job", others);
	if (atomic_load(&onces[c->slot].value) != 0)
		VIOLATION(c, "told to run a once that succeeded already");
	atomic_fetch_add(&once_runs, 1);
}

/* A report by a caller that holds nothing: refused, unless a runner holds
 * the job (then the once cannot know, and nothing is tried). */
static void once_stray_report(torture_contender *c)
{
	int s = 0;
	if (!atomic_compare_exchange_strong(&once_gate, &s, ONCE_GATE_AUDIT)) {
		/* calls inside: wait for them, unless another audit runs */
		if (atomic_fetch_or(&once_gate, ONCE_GATE_AUDIT) & ONCE_GATE_AUDIT)
			return;
		while (atomic_load(&once_gate) != ONCE_GATE_AUDIT)
			sched_yield();
	}
	sb_once *o = &onces[c->slot].o;
	/*
	 * `blocking` before `runners`: a blocking wait told SB_ONCE_RUN moves
	 * from the one count to the other (runners up, then blocking down)
	 * outside the gate, so read in the other order both could read 0 while
	 * it holds the job.  With the gate closed no blocking wait can start,
	 * so once `blocking` reads 0, `runners` no longer changes.
	 */
	if (atomic_load(&onces[c->slot].blocking) == 0 &&
	    atomic_load(&onces[c->slot].runners) == 0) {
		bool fail_first = torture_rand(&c->seed) % 2;
		int e1 = fail_first ? sb_once_fail(o) : sb_once_complete(o);
		int e2 = fail_first ? sb_once_complete(o) : sb_once_fail(o);
		if (e1 != -EPERM || e2 != -EPERM)
			VIOLATION(c, "a stray %s by a caller that holds nothing, nobody told to "
				  "run: %d, not -EPERM", e1 != -EPERM ? (fail_first ? "fail" : "complete")
				  : (fail_first ? "complete" : "fail"), e1 != -EPERM ? e1 : e2);
		atomic_fetch_add(&once_strays, 1);
	}
	atomic_fetch_and(&once_gate, ~ONCE_GATE_AUDIT);
}

/* The runner reports: a failure (retried by the next), or success. */
static void once_run_end(torture_contender *c, bool with_future)
{
	sb_once *o = &onces[c->slot].o;
	unsigned r = torture_rand(&c->seed) % 6;
	bool failed = r < 3;
	once_gate_enter();
	if (r < 2 || (r == 2 && !with_future)) {
		atomic_fetch_sub(&onces[c->slot].runners, 1);
		atomic_fetch_add(&once_failures, 1);
		int e = sb_once_fail(o);
		if (e != 0)
			VIOLATION(c, "fail: %d", e);
	} else if (r == 2) {
		/* the runner's cancel is a failure */
		atomic_fetch_sub(&onces[c->slot].runners, 1);
		atomic_fetch_add(&once_failures, 1);
		sb_once_wait_cancel(&c->f.once);
	} else {
		/* relaxed: the once's complete/wait must order it */
		atomic_store_explicit(&onces[c->slot].value, onces[c->slot].magic,
				      memory_order_relaxed);
		atomic_fetch_sub(&onces[c->slot].runners, 1);
		int e = sb_once_complete(o);
		if (e != 0)
			VIOLATION(c, "complete: %d", e);
	}
	once_gate_leave();
	if (failed)
		once_stray_report(c);
	torture_op(c);
}

/* The once's wait future, its tells counted inside the gate. */
static int once_gated_poll(void *fut, const sb_waker *w)
{
	torture_contender *c = SB_CONTAINER_OF(fut, torture_contender, f.once);
	once_gate_enter();
	int r = sb_once_wait_poll(fut, w);
	if (r == SB_ONCE_RUN)
		once_run_start(c);
	once_gate_leave();
	return r;
}

static void once_gated_cancel(void *fut)
{
	once_gate_enter();
	sb_once_wait_cancel(fut);
	once_gate_leave();
}

static const sb_future_ops once_gated_ops = { once_gated_poll, once_gated_cancel };

static int once_gated_try(torture_contender *c)
{
	once_gate_enter();
	int r = sb_once_try(&onces[c->slot].o);
	if (r == SB_ONCE_RUN)
		once_run_start(c);
	once_gate_leave();
	return r;
}

static void once_blocking(torture_contender *c, uint64_t to)
{
	c->slot = torture_slot_enter(&once_slots);
	once_gate_enter();
	atomic_fetch_add(&onces[c->slot].blocking, 1);
	once_gate_leave();
	int r = sb_once_wait_blocking(&onces[c->slot].o, to);
	if (r == SB_ONCE_RUN)
		once_run_start(c);
	atomic_fetch_sub(&onces[c->slot].blocking, 1);
	if (r == 0) {
		once_done_seen(c);
	} else if (r == SB_ONCE_RUN) {
		torture_crit(c);
		once_run_end(c, false);
	} else if (r == -ETIMEDOUT) {
		torture_timeout(c);
	} else {
		VIOLATION(c, "wait_blocking: %d", r);
	}
	torture_slot_leave(&once_slots, c->slot);
}

static int once_begin(torture_contender *c)
{
	c->slot = torture_slot_enter(&once_slots);
	if (torture_rand(&c->seed) % 5 == 0) {
		int r = once_gated_try(c);
		if (r == 0) {
			once_done_seen(c);
		} else if (r == SB_ONCE_RUN) {
			torture_crit(c);
			once_run_end(c, false);
		} else if (r != -EAGAIN) {
			VIOLATION(c, "try: %d", r);
		}
		torture_slot_leave(&once_slots, c->slot);
		return 1;
	}
	sb_once_wait_init(&c->f.once, &onces[c->slot].o);
	c->fut = &c->f.once;
	c->fops = &once_gated_ops;
	return 0;
}

/* SB_ONCE_RUN was counted by the poll that told it. */
static int once_done(torture_contender *c, int r)
{
	if (r == SB_ONCE_RUN)
		return T_HOLD;
	if (r == 0)
		once_done_seen(c);
	else if (r != -ETIMEDOUT && r != -ECANCELED)
		VIOLATION(c, "wait: %d", r);
	torture_slot_leave(&once_slots, c->slot);
	return T_DONE;
}

static void once_release(torture_contender *c)
{
	once_run_end(c, true);
	torture_slot_leave(&once_slots, c->slot);
}

static void once_check_idle(int i)
{
	if (atomic_load(&onces[i].runners) != 0)
		VIOLATION(NULL, "a once has a runner after its round");
	int r = sb_once_destroy(&onces[i].o);
	if (r != 0)
		VIOLATION(NULL, "destroy of an idle once: %d", r);
}

/* A fresh once as soon as the current one is done. */
static void once_tick(void)
{
	if (!sb_once_is_done(&onces[atomic_load(&once_slots.cur)].o))
		return;
	int next = torture_slot_next_free(&once_slots);
	if (next < 0)
		return;
	once_check_idle(next);
	once_round(next);
	atomic_store(&once_slots.cur, next);
	atomic_fetch_add(&once_rounds, 1);
}

static void once_teardown(void)
{
	for (int i = 0; i < TORTURE_SLOTS; i++) {
		if (atomic_load(&once_slots.users[i]) != 0)
			VIOLATION(NULL, "a once still has users after the run");
		once_check_idle(i);
	}
}

static void once_describe(char *buf, size_t size)
{
	snprintf(buf, size, "rounds %ld, runs %ld (%ld failed), stray reports refused %ld, "
		 "told done %ld", atomic_load(&once_rounds), atomic_load(&once_runs),
		 atomic_load(&once_failures), atomic_load(&once_strays), atomic_load(&once_seen));
}

const torture_prim torture_once = {
	"once", once_setup, once_blocking, once_begin, once_done, once_release,
	once_tick, nothing, once_teardown, once_describe, 0,
};
