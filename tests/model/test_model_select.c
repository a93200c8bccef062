/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of syncband/select.h (sched.c, README.md in this
 * folder): a select over two channels (capacity 1 or 0; the lock's, or
 * stamped rings), a semaphore or a deadline, raced by sends, releases,
 * expiries, a close, its own re-polls and its cancel, each explored over
 * every schedule within the bounds, then over random ones, under
 * sequential consistency and under the weak (release/acquire) model.
 *
 * Items are ints: item i has the value i + 1 while its sender owns it;
 * item 0 goes to channel 0, item 1 to channel 1.  Each check says that
 * exactly one case won; that every item a sender saw sent was received
 * exactly once - by the select's winning case, or by check's drain of the
 * ring - and that no losing case received anything; that a permit granted
 * to a losing case was handed back; that every waker clone was woken or
 * dropped; and that the channels destroy.
 *
 * Item memory is watched as in test_model_channel.c: the library's copies
 * (memcpy, wrapped at link time for this program) are reported to the
 * explorer as plain accesses, so under the weak model the select's read of
 * its winning buffer must happen-after the copy that filled it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/channel.h>
#include <syncband/deadline.h>
#include <syncband/select.h>
#include <syncband/semaphore.h>

#include "sched.h"

/*
 * A wake happens-before the poll it causes.  Clones are not watched as
 * plain writes (test_model_channel.c does): a case that a claim sent back
 * clones the task's waker again at its next poll while the sender may still
 * be waking the earlier clone - both legal, a waker may be used from any
 * thread - and a check keyed by the waker's address would call that a race.
 */
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

/* The bounds of model_common.h (README.md in this folder). */
enum { PREEMPTIONS = 4, LIMIT = 2000000, RANDOM_RUNS = 3000, SEED = 20261205 };
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum { NCH = 2, NITEMS = 2 };

/* What the sender of an item saw. */
enum { UNSENT = 0, SENT, KEPT };

typedef struct sel_mem {
	int item[NITEMS];  /* the senders' items */
	int slots[NCH];    /* the rings, one slot each */
	/* or, for stamped rings (sel_ctx.rings), their storage */
	_Alignas(64) unsigned char ring[NCH][SB_CHANNEL_RING_STORAGE_SIZE(sizeof(int), 1)];
	int buf[NCH];      /* the receive cases' memory */
	int drain;         /* check's try_recv */
} sel_mem;

typedef struct sel_ctx {
	sb_channel ch[NCH];
	size_t capacity;
	sb_channel_recv recv[NCH];
	sb_semaphore sem;
	sb_semaphore_acquire acquire;
	sb_deadline deadline;
	sb_select_case cases[2];
	sb_select select;
	counting_waker w;
	sel_mem mem;
	int fate[NITEMS];
	int got[NITEMS];    /* times each item was received */
	int result;         /* the select's poll or cancel result */
	bool has_sem;       /* case 0 is a semaphore acquire, not channel 0 */
	bool has_deadline;  /* case 1 is channel 1's receive under a deadline */
	bool released;      /* a thread released one permit */
	bool rings;         /* the channels are stamped rings (sb_channel_init_ring) */
	bool closed1;       /* a thread closes channel 1 */
} sel_ctx;

/* ------------------------------------------------------- watched memory */

static sel_mem *watched;

static bool is_watched(const void *p)
{
	const char *c = p, *lo = (const char *)watched;
	return watched && c >= lo && c < lo + sizeof *watched;
}

void *__real_memcpy(void *dst, const void *src, size_t n);
void *__wrap_memcpy(void *dst, const void *src, size_t n);
void *__wrap_memcpy(void *dst, const void *src, size_t n)
{
	for (size_t i = 0; i + sizeof(int) <= n; i += sizeof(int)) {
		if (is_watched((const char *)src + i))
			sb_model_plain_access((const char *)src + i, false);
		if (is_watched((char *)dst + i))
			sb_model_plain_access((char *)dst + i, true);
	}
	return __real_memcpy(dst, src, n);
}

/* Item i's sender tries to send it without waiting; it owns it again after. */
static int try_send_item(sel_ctx *c, int i)
{
	c->mem.item[i] = i + 1;
	sb_model_plain_access(&c->mem.item[i], true);
	int r = sb_channel_try_send(&c->ch[i], &c->mem.item[i]);
	MODEL_CHECK(r == 0 || r == -EAGAIN);
	c->fate[i] = r == 0 ? SENT : KEPT;
	c->mem.item[i] = 0;
	sb_model_plain_access(&c->mem.item[i], true);
	return r;
}

/* An item arrived at `p`. */
static void took(sel_ctx *c, const int *p)
{
	MODEL_PLAIN_READ(p);
	int v = *p;
	MODEL_CHECK(v >= 1 && v <= NITEMS); /* 0: copied after its sender reused it */
	c->got[v - 1]++;
}

/* ---------------------------------------------------------------- setup */

/* Channel i, of the lock's kind or (c->rings) a stamped ring. */
static int init_channel(sel_ctx *c, int i, size_t capacity)
{
	if (c->rings)
		return sb_channel_init_ring(&c->ch[i], capacity ? c->mem.ring[i] : NULL, sizeof(int),
					    capacity);
	return sb_channel_init(&c->ch[i], capacity ? &c->mem.slots[i] : NULL, sizeof(int),
			       capacity);
}

static void setup_select(sel_ctx *c, size_t capacity, bool sem, bool deadline)
{
	watched = &c->mem;
	c->capacity = capacity;
	c->has_sem = sem;
	c->has_deadline = deadline;
	counting_waker_init(&c->w);
	for (int i = 0; i < NCH; i++) {
		MODEL_CHECK(init_channel(c, i, capacity) == 0);
		sb_channel_recv_init(&c->recv[i], &c->ch[i], &c->mem.buf[i]);
	}
	c->cases[0] = (sb_select_case)SB_SELECT_CASE(&c->recv[0], &sb_channel_recv_ops);
	c->cases[1] = (sb_select_case)SB_SELECT_CASE(&c->recv[1], &sb_channel_recv_ops);
	MODEL_CHECK(sb_semaphore_init(&c->sem, 0) == 0);
	if (sem) {
		sb_semaphore_acquire_init(&c->acquire, &c->sem, 1);
		c->cases[0] = (sb_select_case)SB_SELECT_CASE(&c->acquire, &sb_semaphore_acquire_ops);
	}
	if (deadline) {
		sb_deadline_init(&c->deadline, &c->recv[1], &sb_channel_recv_ops);
		c->cases[1] = (sb_select_case)SB_SELECT_CASE(&c->deadline, &sb_deadline_ops);
	}
	MODEL_CHECK(sb_select_init(&c->select, c->cases, 2, 0, 0) == 0);
}

static int poll_select(sel_ctx *c)
{
	sb_waker w = counting_waker_ref(&c->w);
	return sb_select_poll(&c->select, &w);
}

/* In setup: the select waits on both cases. */
static void setup_waiting(sel_ctx *c)
{
	MODEL_CHECK(poll_select(c) == SB_PENDING);
}

static int wake_count(const counting_waker *cw)
{
	return __atomic_load_n((const int *)&cw->wakes, __ATOMIC_SEQ_CST);
}

/* Polls until done, waiting for a wake after each pending poll; SB_PENDING
 * when nobody is left to wake it. */
static int drive_select(sel_ctx *c)
{
	int wakes = wake_count(&c->w);
	int r;
	while ((r = poll_select(c)) == SB_PENDING) {
		if (!sb_model_await_change(&c->w.wakes, wakes))
			return SB_PENDING;
		wakes = wake_count(&c->w);
	}
	return r;
}

/* ---------------------------------------------------------------- check */

/* Whether case `k` receives on a channel, and which. */
static int case_channel(const sel_ctx *c, int k)
{
	return k == 0 && c->has_sem ? -1 : k;
}

/*
 * The select is done (or check finishes it): exactly one case won, it alone
 * received; a select still pending is cancelled, with nothing received.
 * Then check drains the rings and balances the ledger.
 */
static void check_all(sel_ctx *c, int r)
{
	if (r == SB_PENDING)
		r = sb_select_cancel(&c->select);
	if (r == 0) {
		int k = sb_select_index(&c->select);
		MODEL_CHECK(k == 0 || k == 1);
		int res = sb_select_result(&c->select);
		int ch = case_channel(c, k);
		if (ch >= 0 && res == 0)
			took(c, &c->mem.buf[ch]);
		else if (ch >= 0) /* expired, or the end of a closed stream */
			MODEL_CHECK(k == 1 && ((res == -ETIMEDOUT && c->has_deadline) ||
					       (res == -EPIPE && c->closed1)));
		/* the loser received nothing */
		int other = case_channel(c, 1 - k);
		if (other >= 0)
			MODEL_CHECK(c->mem.buf[other] == 0);
		if (c->has_sem)
			MODEL_CHECK(sb_semaphore_available(&c->sem) ==
				    (c->released && k != 0 ? 1u : 0u));
	} else {
		MODEL_CHECK(r == -ECANCELED);
		MODEL_CHECK(c->mem.buf[0] == 0 && c->mem.buf[1] == 0);
		if (c->has_sem)
			MODEL_CHECK(sb_semaphore_available(&c->sem) == (c->released ? 1u : 0u));
	}
	for (int i = 0; i < NCH; i++) {
		int d;
		while ((d = sb_channel_try_recv(&c->ch[i], &c->mem.drain)) == 0) {
			took(c, &c->mem.drain);
			c->mem.drain = 0;
		}
		MODEL_CHECK(d == (i == 1 && c->closed1 ? -EPIPE : -EAGAIN));
		MODEL_CHECK(sb_channel_destroy(&c->ch[i]) == 0);
	}
	for (int i = 0; i < NITEMS; i++)
		MODEL_CHECK(c->got[i] == (c->fate[i] == SENT));
	MODEL_CHECK(atomic_load(&c->w.live) == 0);
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

static void send0_t(void *p)
{
	try_send_item(p, 0);
}

static void send1_t(void *p)
{
	try_send_item(p, 1);
}

/* --- two cases granted at once ------------------------------------------ */

/*
 * The select waits on channels 0 and 1; t0 and t1 send one item each.  At
 * most one send may reach a case; the other goes to its ring (capacity 1)
 * or is refused (capacity 0).  Check polls the select: the first send
 * claimed its case.
 */
static void both1_setup(void *p)
{
	setup_select(p, 1, false, false);
	setup_waiting(p);
}
static void both0_setup(void *p)
{
	setup_select(p, 0, false, false);
	setup_waiting(p);
}
static void both_check(void *p)
{
	sel_ctx *c = p;
	int r = poll_select(c);
	MODEL_CHECK(r == 0 || (c->fate[0] == KEPT && c->fate[1] == KEPT));
	if (c->capacity == 0)
		MODEL_CHECK(!(c->fate[0] == SENT && c->fate[1] == SENT));
	check_all(c, r);
}

/* --- a send racing the select's own poll (its claim) -------------------- */

/*
 * t1 drives the select from its first poll (the select decides alone
 * while it tries the cases) while t0 sends on channel 0 and then on
 * channel 1: a send that meets the select deciding sends the case back,
 * and the select's next poll takes the item from the ring.
 */
static void own_setup(void *p)
{
	setup_select(p, 1, false, false);
}
static void own_t0(void *p)
{
	try_send_item(p, 0);
	try_send_item(p, 1);
}
static void own_t1(void *p)
{
	sel_ctx *c = p;
	c->result = drive_select(c);
	MODEL_CHECK(c->result == 0); /* both items were sent into rings or cases */
}
static void own_check(void *p)
{
	sel_ctx *c = p;
	check_all(c, c->result);
}

/* The same on rendezvous channels: the select's receive takes the item
 * from the sender only if it waited; t0's sends may find nobody. */
static void own0_setup(void *p)
{
	setup_select(p, 0, false, false);
}
static void own0_t1(void *p)
{
	sel_ctx *c = p;
	c->result = drive_select(c);
	MODEL_CHECK(c->result == 0 || c->result == SB_PENDING);
}

/* --- a permit and an item racing ---------------------------------------- */

/*
 * Case 0 acquires a permit, case 1 receives on channel 1; both wait.  t0
 * releases a permit, t1 sends on channel 1.  Whichever case check finds
 * the winner, the other's grant is handed back: the permit to the
 * semaphore, the item to the ring.
 */
static void sem_setup(void *p)
{
	sel_ctx *c = p;
	setup_select(c, 1, true, false);
	setup_waiting(c);
}
static void release_t(void *p)
{
	sel_ctx *c = p;
	c->released = true;
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
}
static void sem_check(void *p)
{
	sel_ctx *c = p;
	MODEL_CHECK(poll_select(c) == 0);
	check_all(c, 0);
}

/* --- the select's cancel vs a send vs a deadline ------------------------ */

/*
 * Case 0 receives on channel 0, case 1 on channel 1 under a deadline; the
 * select waits.  t0 sends on channel 0; t1 expires the deadline and wakes
 * the task; t2 polls the select once and cancels it.  A cancel that finds
 * case 0 claimed reports it done (0) with the item; otherwise the item is
 * in the ring.
 */
static void cancel_setup(void *p)
{
	sel_ctx *c = p;
	setup_select(c, 1, false, true);
	setup_waiting(c);
}
static void expire_t(void *p)
{
	sel_ctx *c = p;
	sb_deadline_expire(&c->deadline);
	sb_waker w = counting_waker_ref(&c->w);
	sb_waker_wake_by_ref(&w);
}
static void cancel_t(void *p)
{
	sel_ctx *c = p;
	int r = poll_select(c);
	if (r == SB_PENDING)
		r = sb_select_cancel(&c->select);
	MODEL_CHECK(r == 0 || r == -ECANCELED);
	MODEL_CHECK(poll_select(c) == r);
	c->result = r;
}
static void cancel_check(void *p)
{
	sel_ctx *c = p;
	check_all(c, c->result);
}

/* --- the deadline racing a send under it -------------------------------- */

/*
 * Case 1 is channel 1's receive under a deadline, case 0 channel 0's; the
 * select waits.  t0 sends on channel 1 (it reaches the case through the
 * deadline, and must win the claim); t1 expires the deadline and drives
 * the select to its end: the item, or -ETIMEDOUT with the item in the ring.
 */
static void dl_setup(void *p)
{
	sel_ctx *c = p;
	setup_select(c, 1, false, true);
	setup_waiting(c);
}
static void dl_t1(void *p)
{
	sel_ctx *c = p;
	sb_deadline_expire(&c->deadline);
	c->result = drive_select(c); /* pending while a claimed item is in flight */
	MODEL_CHECK(c->result == 0);
}
static void dl_check(void *p)
{
	sel_ctx *c = p;
	check_all(c, c->result);
}

/* --- a send on one ring racing a close of the other --------------------- */

/*
 * The select waits on two stamped rings (capacity 1): its cases' waiting
 * set RECEIVERS in the rings' tails, so a send takes the lock and must win
 * the claim.  t0 sends item 0 on ring 0; t1 closes ring 1, which completes
 * case 1 with -EPIPE and wakes the task, without a claim (an end of stream
 * takes no effect).  Nobody polls the select meanwhile, so the send claims
 * case 0 whenever it comes: check's poll finds case 0 the winner with item
 * 0, and item 0 nowhere else.
 */
static void rings_setup(void *p)
{
	sel_ctx *c = p;
	c->rings = true;
	c->closed1 = true;
	setup_select(c, 1, false, false);
	setup_waiting(c);
}
static void close1_t(void *p)
{
	sel_ctx *c = p;
	sb_channel_close(&c->ch[1]);
}
static void rings_check(void *p)
{
	sel_ctx *c = p;
	MODEL_CHECK(poll_select(c) == 0);
	MODEL_CHECK(sb_select_index(&c->select) == 0 && sb_select_result(&c->select) == 0);
	MODEL_CHECK(c->fate[0] == SENT);
	check_all(c, 0);
}

/*
 * The same with the select's own polls racing both: t2 drives it from
 * waiting.  Either case may win - case 0 with item 0 (claimed, or taken
 * from the ring at a poll), case 1 with the end of its stream, item 0 then
 * left in ring 0 for check's drain - and the select always completes: the
 * close's wake, or the send's, reaches it.
 */
static void drive_t(void *p)
{
	sel_ctx *c = p;
	c->result = drive_select(c);
	MODEL_CHECK(c->result == 0);
}

/* Two threads: explored within the bounds of model_common.h. */
static const sb_model_scenario pairs[] = {
	{ "select: two cases granted at once (capacity 1)", 2, sizeof(sel_ctx), both1_setup,
	  { send0_t, send1_t }, both_check },
	{ "select: two cases granted at once (capacity 0)", 2, sizeof(sel_ctx), both0_setup,
	  { send0_t, send1_t }, both_check },
	{ "select: sends racing the select's own polls (capacity 1)", 2, sizeof(sel_ctx),
	  own_setup, { own_t0, own_t1 }, own_check },
	{ "select: sends racing the select's own polls (capacity 0)", 2, sizeof(sel_ctx),
	  own0_setup, { own_t0, own0_t1 }, own_check },
	{ "select: a permit and an item granted at once", 2, sizeof(sel_ctx), sem_setup,
	  { release_t, send1_t }, sem_check },
	{ "select: a deadline's expiry racing a send under it", 2, sizeof(sel_ctx), dl_setup,
	  { send1_t, dl_t1 }, dl_check },
	{ "select: a send on one ring racing a close of the other", 2, sizeof(sel_ctx),
	  rings_setup, { send0_t, close1_t }, rings_check },
};

/* Three threads: one preemption and one stale read fewer (see main). */
static const sb_model_scenario trios[] = {
	{ "select: its cancel racing a send and a deadline's expiry", 3, sizeof(sel_ctx),
	  cancel_setup, { send0_t, expire_t, cancel_t }, cancel_check },
	{ "select: its polls racing a send on one ring and a close of the other", 3,
	  sizeof(sel_ctx), rings_setup, { send0_t, close1_t, drive_t }, own_check },
};

static int bound_from_env(const char *name, int fallback)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : fallback;
}

static void explore_all(int preemptions, int stale_reads)
{
	bool ok = sb_model_explore_all(pairs, COUNT(pairs), preemptions, stale_reads, LIMIT);
	int trio_preemptions = bound_from_env("SB_MODEL_TRIO_PREEMPTIONS", preemptions - 1);
	int trio_stale = stale_reads < 0 ? -1
					 : bound_from_env("SB_MODEL_TRIO_STALE_READS", stale_reads - 1);
	ok &= sb_model_explore_all(trios, COUNT(trios), trio_preemptions, trio_stale, LIMIT);
	assert_true(ok);
}

static void random_all(int stale_reads)
{
	bool ok = sb_model_random_all(pairs, COUNT(pairs), SEED, RANDOM_RUNS, stale_reads);
	ok &= sb_model_random_all(trios, COUNT(trios), SEED, RANDOM_RUNS, stale_reads);
	assert_true(ok);
}

static void every_select_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	explore_all(PREEMPTIONS, -1);
}

static void every_select_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	random_all(-1);
}

static void every_select_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	explore_all(WEAK_PREEMPTIONS, STALE_READS);
}

static void every_select_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	random_all(WEAK_RANDOM_STALE_READS);
}

/* test_model_select [RUN-PATTERN]: cmocka's test name filter. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_select_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_select_scenario_holds_over_random_schedules),
		cmocka_unit_test(every_select_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_select_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
