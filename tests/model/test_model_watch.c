/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of syncband/watch.h (sched.c, README.md in this
 * folder): sends, send_if, reads, changed futures (first polls, re-polls
 * with a new waker, cancels) and close racing on one watch, each explored
 * over every schedule within the bounds, then over random ones, under
 * sequential consistency and under the weak (release/acquire) model.
 *
 * The value is NW ints, all equal to the version that wrote them (version
 * k: every int is k), so a torn copy shows as unequal ints and an old one
 * as a smaller k than the receiver's version.  Its memory (the storage, the
 * senders' buffers, the readers' buffers) is watched: the library's copies
 * of it (memcpy, wrapped at link time for this program) and send_if's
 * callback report each int to the explorer as a plain access
 * (sb_model_plain_access).  So under the weak model a read that copies the
 * storage while a send writes it, without the lock ordering the two, fails
 * the run as a data race even when the values it copied happen to match.
 *
 * A one-word value (sizeof(size_t)) is read without the lock, from the
 * watch's atomic copy of it: its scenarios check that the version a read
 * marks seen is the one that wrote the value it returns, under the weak
 * model too.
 *
 * Each check says that no wake was lost (a future whose receiver is behind
 * the version completes), that every waker clone was woken or dropped, that
 * a receiver told -EPIPE had read the last value, and that the watch
 * destroys.
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

#include <syncband/watch.h>

#include "sched.h"

/* Under the weak model: a clone happens-before every use of that clone. */
#define COUNTING_WAKER_CLONED(c) MODEL_PLAIN_WRITE(c)
#define COUNTING_WAKER_USED(c) MODEL_PLAIN_READ(c)
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

/* The bounds of model_common.h (README.md in this folder). */
enum { PREEMPTIONS = 4, LIMIT = 2000000, RANDOM_RUNS = 3000, SEED = 20261205 };
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum { NW = 3, NRX = 2, NFUT = 2, NWAKERS = 3, NBUF = 3 };

typedef struct watch_mem {
	int storage[NW];      /* the watch's value */
	int in[NBUF][NW];     /* the senders' buffers, per thread */
	int out[NBUF][NW];    /* the readers' buffers, per thread */
} watch_mem;

typedef struct watch_ctx {
	sb_watch w;
	sb_watch_receiver rx[NRX];
	sb_watch_changed f[NFUT];
	counting_waker cw[NWAKERS];
	watch_mem mem;
	int sends;            /* sends that returned 0 */
	int res[4];           /* results the checks look at */
	int last[NRX];        /* the version of each receiver's last read */
	int payload;          /* what a sender writes before it sends, outside the value */
} watch_ctx;

/* ------------------------------------------------------- watched memory */

/* The current execution's value memory, for the wrapped memcpy. */
static watch_mem *watched;

/* The ints of the current execution's value: NW, or one word's worth (a
 * one-word watch, read without the lock). */
static int value_ints = NW;

static bool is_watched(const void *p)
{
	const char *c = p, *lo = (const char *)watched;
	return watched && c >= lo && c < lo + sizeof *watched;
}

/* The library's copies: each int of watched memory read or written is reported. */
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

/* Thread t fills its send buffer with version k's value. */
static void put(watch_ctx *c, int t, int k)
{
	for (int i = 0; i < value_ints; i++) {
		c->mem.in[t][i] = k;
		sb_model_plain_access(&c->mem.in[t][i], true);
	}
}

/* Thread t sends version k's value: 0 or -EPIPE. */
static int send_k(watch_ctx *c, int t, int k)
{
	put(c, t, k);
	int r = sb_watch_send(&c->w, c->mem.in[t]);
	MODEL_CHECK(r == 0 || r == -EPIPE);
	if (r == 0)
		c->sends++;
	return r;
}

/*
 * Thread t reads through receiver r: the value is untorn, its ints are the
 * version the receiver now has seen, and never older than the last read.
 */
static int read_rx(watch_ctx *c, int t, int r)
{
	MODEL_CHECK(sb_watch_read(&c->rx[r], c->mem.out[t]) == 0);
	int k = c->mem.out[t][0];
	for (int i = 0; i < value_ints; i++) {
		MODEL_PLAIN_READ(&c->mem.out[t][i]);
		MODEL_CHECK(c->mem.out[t][i] == k);
	}
	MODEL_CHECK((size_t)k == sb_watch_seen(&c->rx[r]));
	MODEL_CHECK(k >= c->last[r]);
	c->last[r] = k;
	return k;
}

/* -------------------------------------------------------------- futures */

static int poll_changed(sb_watch_changed *f, counting_waker *cw)
{
	sb_waker w = counting_waker_ref(cw);
	return sb_watch_changed_poll(f, &w);
}

/* The test's own read of a wake count: not a scheduling point. */
static int wake_count(counting_waker *cw)
{
	return __atomic_load_n((int *)&cw->wakes, __ATOMIC_SEQ_CST);
}

/*
 * Polls with `cw` until done, waiting for a wake after each pending poll;
 * SB_PENDING when nobody is left to wake it (a lost wake, or nothing to
 * wait for).
 */
static int drive(sb_watch_changed *f, counting_waker *cw)
{
	int wakes = wake_count(cw);
	int r;
	while ((r = poll_changed(f, cw)) == SB_PENDING) {
		if (!sb_model_await_change(&cw->wakes, wakes))
			return SB_PENDING;
		wakes = wake_count(cw);
	}
	return r;
}

/* ---------------------------------------------------------------- setup */

static void setup_watch_of(watch_ctx *c, int ints)
{
	watched = &c->mem;
	value_ints = ints;
	MODEL_CHECK(sb_watch_init(&c->w, c->mem.storage, (size_t)ints * sizeof(int)) == 0);
	for (int r = 0; r < NRX; r++) {
		c->rx[r] = (sb_watch_receiver)SB_WATCH_RECEIVER_INIT; /* not subscribed */
		MODEL_CHECK(sb_watch_subscribe(&c->w, &c->rx[r]) == 0);
	}
	for (int i = 0; i < NWAKERS; i++)
		counting_waker_init(&c->cw[i]);
}

static void setup_watch(watch_ctx *c)
{
	setup_watch_of(c, NW);
}

/* A watch of one word (sizeof(size_t)): sb_watch_read copies it without
 * the lock. */
static void setup_word_watch(void *p)
{
	setup_watch_of(p, (int)(sizeof(size_t) / sizeof(int)));
}

/* In setup: future f of receiver r waits, with waker cw. */
static void setup_waiting(watch_ctx *c, int f, int r, int cw)
{
	sb_watch_changed_init(&c->f[f], &c->rx[r]);
	MODEL_CHECK(poll_changed(&c->f[f], &c->cw[cw]) == SB_PENDING);
}

/* ---------------------------------------------------------------- check */

/* Every clone woken or dropped; the receivers leave; the watch destroys. */
static void check_teardown(watch_ctx *c)
{
	for (int i = 0; i < NWAKERS; i++)
		MODEL_CHECK(atomic_load(&c->cw[i].live) == 0);
	MODEL_CHECK(sb_watch_version(&c->w) == (size_t)c->sends);
	for (int r = 0; r < NRX; r++)
		MODEL_CHECK(sb_watch_unsubscribe(&c->rx[r]) == 0);
	MODEL_CHECK(sb_watch_destroy(&c->w) == 0);
}

static void close_t(void *p)
{
	watch_ctx *c = p;
	sb_watch_close(&c->w);
}

/* --- a send racing a read of a multi-word value ------------------------- */

/* t0 sends versions 1 and 2; t1 reads twice: untorn, never older. */
static void sr_setup(void *p)
{
	setup_watch(p);
}
static void sr_t0(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(send_k(c, 0, 1) == 0);
	MODEL_CHECK(send_k(c, 0, 2) == 0);
}
static void sr_t1(void *p)
{
	watch_ctx *c = p;
	(void)read_rx(c, 1, 0);
	(void)read_rx(c, 1, 0);
}
static void sr_check(void *p)
{
	watch_ctx *c = p;
	check_teardown(c);
}

/* --- send_if changing the value in place racing a read ------------------ */

/* The callback writes every int of the storage (reported) with version 1. */
static bool to_version_1(void *value, void *arg)
{
	(void)arg;
	int *v = value;
	for (int i = 0; i < value_ints; i++) {
		v[i] = 1;
		sb_model_plain_access(&v[i], true);
	}
	return true;
}
static void sif_t0(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(sb_watch_send_if(&c->w, to_version_1, NULL) == 1);
	c->sends++;
}
static void sif_t1(void *p)
{
	watch_ctx *c = p;
	int k = read_rx(c, 1, 0);
	MODEL_CHECK(k == 0 || k == 1);
	int r = sb_watch_try_changed(&c->rx[0]);
	/* read before the send: told of it or not yet; after: nothing newer */
	MODEL_CHECK(k == 0 ? (r == 0 || r == -EAGAIN) : r == -EAGAIN);
}
static void sif_check(void *p)
{
	watch_ctx *c = p;
	/* whatever t1 saw, the change is not lost: read 1, or still told of it */
	if (c->last[0] == 0)
		MODEL_CHECK(sb_watch_try_changed(&c->rx[0]) == 0);
	check_teardown(c);
}

/* --- a first poll racing a send: no lost wake ---------------------------- */

/* t1's future starts at version 0: it completes, however the send falls. */
static void fp_t0(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(send_k(c, 0, 1) == 0);
}
static void fp_t1(void *p)
{
	watch_ctx *c = p;
	sb_watch_changed_init(&c->f[0], &c->rx[0]);
	c->res[0] = drive(&c->f[0], &c->cw[0]);
	MODEL_CHECK(c->res[0] == 0);
	MODEL_CHECK(read_rx(c, 1, 0) == 1);
}
static void fp_check(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->cw[0].wakes) <= 1);
	check_teardown(c);
}

/* t0 writes the payload, then sends version 1. */
static void payload_send_t0(void *p)
{
	watch_ctx *c = p;
	c->payload = 1;
	MODEL_PLAIN_WRITE(&c->payload);
	MODEL_CHECK(send_k(c, 0, 1) == 0);
}

/* --- a send racing a waiting future's re-poll with a new waker ---------- */

/*
 * Future 0 (receiver 0) waits with waker 0; t1 re-polls it with waker 1
 * and waits for that one; t0 writes a payload and sends.  It completes,
 * seeing the payload, and exactly one of the two wakers is woken: the one
 * registered when the send released it.
 */
static void rp_setup(void *p)
{
	watch_ctx *c = p;
	setup_watch(c);
	setup_waiting(c, 0, 0, 0);
}
static void rp_t1(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(drive(&c->f[0], &c->cw[1]) == 0);
	/* what the sender wrote before sending, though the re-poll may have
	 * found the future released before any wake (no wake to order it) */
	MODEL_PLAIN_READ(&c->payload);
	MODEL_CHECK(c->payload == 1);
	MODEL_CHECK(read_rx(c, 1, 0) == 1);
}
static void rp_check(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->cw[0].wakes) + atomic_load(&c->cw[1].wakes) == 1);
	check_teardown(c);
}

/* --- a send racing a waiting future's cancel ----------------------------- */

/* The cancel loses no change: nothing was marked seen, so it is still there. */
static void cs_t1(void *p)
{
	watch_ctx *c = p;
	sb_watch_changed_cancel(&c->f[0]);
	MODEL_CHECK(poll_changed(&c->f[0], &c->cw[1]) == -ECANCELED);
	c->res[0] = sb_watch_try_changed(&c->rx[0]);
	MODEL_CHECK(c->res[0] == 0 || c->res[0] == -EAGAIN);
}
static void cs_check(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(sb_watch_try_changed(&c->rx[0]) == 0);
	MODEL_CHECK(atomic_load(&c->cw[0].wakes) + atomic_load(&c->cw[0].drops) == 1);
	check_teardown(c);
}

/* --- close racing a waiting future's re-poll ----------------------------- */

static void cl_t1(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(drive(&c->f[0], &c->cw[1]) == -EPIPE);
	MODEL_CHECK(sb_watch_try_changed(&c->rx[0]) == -EPIPE);
}
static void cl_check(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->cw[0].wakes) + atomic_load(&c->cw[1].wakes) == 1);
	check_teardown(c);
}

/* --- close and a send racing a receiver that reads every change --------- */

/*
 * t2 waits for changes and reads each until -EPIPE: by then it has read
 * the last value (version 1 if the send came before the close).
 */
static void cr_setup(void *p)
{
	setup_watch(p);
}
static void cr_t0(void *p)
{
	watch_ctx *c = p;
	c->res[1] = send_k(c, 0, 1);
}
static void cr_t2(void *p)
{
	watch_ctx *c = p;
	int r;
	/* A fresh future and waker each round: a wake may still be on its way
	 * to the last one after its poll returned 0.  At most one change to
	 * read, then the end. */
	for (int round = 0;; round++) {
		MODEL_CHECK(round < NFUT);
		sb_watch_changed_init(&c->f[round], &c->rx[0]);
		r = drive(&c->f[round], &c->cw[round]);
		if (r != 0)
			break;
		(void)read_rx(c, 2, 0);
	}
	MODEL_CHECK(r == -EPIPE);
	c->res[0] = r;
}
static void cr_check(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(c->last[0] == c->sends);
	MODEL_CHECK(sb_watch_seen(&c->rx[0]) == (size_t)c->sends);
	check_teardown(c);
}

/* --- one send releasing two receivers' waiting futures ------------------ */

static void two_setup(void *p)
{
	watch_ctx *c = p;
	setup_watch(c);
	setup_waiting(c, 0, 0, 0);
	setup_waiting(c, 1, 1, 1);
}
static void two_t1(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(drive(&c->f[0], &c->cw[0]) == 0);
	MODEL_CHECK(read_rx(c, 1, 0) == 1);
}
static void two_t2(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(drive(&c->f[1], &c->cw[1]) == 0);
	MODEL_CHECK(read_rx(c, 2, 1) == 1);
}
static void two_check(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(atomic_load(&c->cw[0].woken) == 1);
	MODEL_CHECK(atomic_load(&c->cw[1].woken) == 1);
	check_teardown(c);
}

/* --- a send with a future waiting racing another receiver's try_changed - */

/*
 * With future 0 (receiver 0) waiting, t0's send publishes its version
 * before the broadcast, not in its unlock; t1, told of the change through
 * receiver 1, reads what t0 wrote before sending (the header's ordering:
 * a send happens-before every changed it lets return 0).
 */
static void tc_t1(void *p)
{
	watch_ctx *c = p;
	c->res[0] = sb_watch_try_changed(&c->rx[1]);
	MODEL_CHECK(c->res[0] == 0 || c->res[0] == -EAGAIN);
	if (c->res[0] == 0) {
		MODEL_PLAIN_READ(&c->payload);
		MODEL_CHECK(c->payload == 1);
	}
}
static void tc_check(void *p)
{
	watch_ctx *c = p;
	MODEL_CHECK(poll_changed(&c->f[0], &c->cw[0]) == 0);
	MODEL_CHECK(atomic_load(&c->cw[0].wakes) == 1);
	check_teardown(c);
}

/* Two threads: explored within the bounds of model_common.h. */
static const sb_model_scenario pairs[] = {
	{ "watch: a send racing a read of a multi-word value", 2, sizeof(watch_ctx), sr_setup,
	  { sr_t0, sr_t1 }, sr_check },
	{ "watch: send_if changing the value in place racing a read", 2, sizeof(watch_ctx),
	  sr_setup, { sif_t0, sif_t1 }, sif_check },
	{ "watch: two sends racing lock-free reads of a one-word value", 2, sizeof(watch_ctx),
	  setup_word_watch, { sr_t0, sr_t1 }, sr_check },
	{ "watch: send_if changing a one-word value racing a lock-free read", 2,
	  sizeof(watch_ctx), setup_word_watch, { sif_t0, sif_t1 }, sif_check },
	{ "watch: a changed future's first poll racing a send", 2, sizeof(watch_ctx), sr_setup,
	  { fp_t0, fp_t1 }, fp_check },
	{ "watch: a send racing a waiting future's re-poll with a new waker", 2,
	  sizeof(watch_ctx), rp_setup, { payload_send_t0, rp_t1 }, rp_check },
	{ "watch: a send racing a waiting future's cancel", 2, sizeof(watch_ctx), rp_setup,
	  { fp_t0, cs_t1 }, cs_check },
	{ "watch: close racing a waiting future's re-poll with a new waker", 2,
	  sizeof(watch_ctx), rp_setup, { close_t, cl_t1 }, cl_check },
	{ "watch: a send with a future waiting racing another receiver's try_changed", 2,
	  sizeof(watch_ctx), rp_setup, { payload_send_t0, tc_t1 }, tc_check },
};

/* Three threads: one preemption and one stale read fewer (see main). */
static const sb_model_scenario trios[] = {
	{ "watch: close and a send racing a receiver that reads every change", 3,
	  sizeof(watch_ctx), cr_setup, { cr_t0, close_t, cr_t2 }, cr_check },
	{ "watch: one send releasing two receivers' waiting futures", 3, sizeof(watch_ctx),
	  two_setup, { fp_t0, two_t1, two_t2 }, two_check },
};

/*
 * Under sequential consistency when stale_reads < 0, else the weak model:
 * the pairs within the given bounds, the trios within one preemption and
 * one stale read fewer (SB_MODEL_TRIO_PREEMPTIONS and
 * SB_MODEL_TRIO_STALE_READS override those).
 */
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

static void every_watch_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	explore_all(PREEMPTIONS, -1);
}

static void every_watch_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	random_all(-1);
}

static void every_watch_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	explore_all(WEAK_PREEMPTIONS, STALE_READS);
}

static void every_watch_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	random_all(WEAK_RANDOM_STALE_READS);
}

/* test_model_watch [RUN-PATTERN]: cmocka's test name filter. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_watch_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_watch_scenario_holds_over_random_schedules),
		cmocka_unit_test(every_watch_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_watch_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
