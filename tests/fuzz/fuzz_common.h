/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_common.h - the harness shared by the model-based fuzzers.
 *
 * Each fuzzer decodes its input into a sequence of API calls on one
 * primitive and a set of future slots, runs every call against the library
 * AND against a small reference model of the documented semantics (written
 * in the fuzzer, independent of src/), and compares every return value,
 * every query, and the waker traffic of every step.  Single-threaded, so the
 * model is exact.
 *
 * What this header provides:
 *   - input decoding (fz_byte), a step history, and fz_fail() which prints
 *     the step, the call, expected vs actual, the whole call sequence, and
 *     abort()s so libFuzzer saves the input;
 *   - counting wakers: one per slot (reachable through two distinct vtables,
 *     so "same counter, different waker" is exercised) and two shared ones;
 *   - waker accounting: the model announces, per step, which registrations it
 *     expects (clone), which completions (wake) and which cancellations or
 *     replacements (drop); fz_step_end() compares those with the counters and
 *     checks that every counter's live references (clones - wakes - drops)
 *     equal the registered pending futures that hold it.  Wakes and drops
 *     must also happen with the primitive's internal lock(s) released.
 *
 * Set SB_FUZZ_TRACE=1 to print every step as it runs (to replay a crash
 * input in readable form: ./fuzz_x crash-file).
 */
#ifndef SYNCBAND_FUZZ_COMMON_H
#define SYNCBAND_FUZZ_COMMON_H

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syncband/syncband.h>

/* src/lock.h: the queue lock's bits (the low bits of every primitive's
 * state word, sb_waitq.state), for the check that wakers are woken and
 * dropped outside the primitive's internal lock.  The only private detail
 * the fuzzers read. */
#include "lock.h"

typedef _Atomic size_t fz_lockword;
#define FZ_LOCKWORD(p) (&(p)->q.state)
#define FZ_LOCK_HELD(v) (((v) & SB_QLOCK_HELD) != 0)

/* Slots addressed directly by one byte, and a crowd that only the bulk
 * operations use (more than one wake batch of 32). */
#define FZ_NSLOTS 8
#define FZ_NCROWD 34
#define FZ_NALL (FZ_NSLOTS + FZ_NCROWD)

/* Counters: one per slot, then two shared. */
#define FZ_SHARED1 FZ_NALL
#define FZ_SHARED2 (FZ_NALL + 1)
#define FZ_NCTR (FZ_NALL + 2)

/* Generic slot states (the condvar fuzzer has its own finer ones). */
enum {
	FS_UNUSED,    /* no future in the slot */
	FS_IDLE,      /* initialised, never polled */
	FS_QUEUED,    /* registered, waiting */
	FS_DETACHED,  /* completed by the primitive, not yet observed by poll */
	FS_DONE,      /* poll returned 0 or an error */
	FS_CANCELLED, /* cancel was called (memory kept) */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The harness's own bookkeeping needs no coverage feedback (and its
 * comparison tracing would dominate the run time). */
#define FZ_NOCOV __attribute__((no_sanitize("coverage"), noinline))

/* ------------------------------------------------------------------ input */

typedef struct fz_input {
	const uint8_t *p;
	size_t n;
} fz_input;

static inline bool fz_more(const fz_input *in)
{
	return in->n > 0;
}

/* The next byte, or 0 once the input is exhausted. */
static inline uint8_t fz_byte(fz_input *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

/* ---------------------------------------------------------------- history */

#define FZ_HIST 4096
#define FZ_LINE 120

static char fz_hist[FZ_HIST][FZ_LINE];
static unsigned fz_steps;
static bool fz_trace;
static bool fz_in_final;

static const char *fz_res_name(long long r)
{
	static char buf[4][32];
	static unsigned k;
	char *b = buf[k++ & 3];
	switch (r) {
	case 0: return "0";
	case SB_PENDING: return "SB_PENDING";
	case -EAGAIN: return "-EAGAIN";
	case -EBUSY: return "-EBUSY";
	case -EPERM: return "-EPERM";
	case -EPIPE: return "-EPIPE";
	case -EINVAL: return "-EINVAL";
	case -EOVERFLOW: return "-EOVERFLOW";
	case -ERANGE: return "-ERANGE";
	case -ESHUTDOWN: return "-ESHUTDOWN";
	case -ECANCELED: return "-ECANCELED";
	case -ETIMEDOUT: return "-ETIMEDOUT";
	default:
		snprintf(b, 32, "%lld", r);
		return b;
	}
}

static void fz_print_history(void)
{
	unsigned first = fz_steps > FZ_HIST ? fz_steps - FZ_HIST : 0;
	fprintf(stderr, "call sequence (%u steps%s):\n", fz_steps,
		first ? ", oldest omitted" : "");
	for (unsigned i = first; i < fz_steps; i++)
		fprintf(stderr, "  %4u  %s\n", i, fz_hist[i % FZ_HIST]);
}

__attribute__((noreturn, format(printf, 1, 2)))
static void fz_fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	unsigned step = fz_steps ? fz_steps - 1 : 0;
	fprintf(stderr, "\n*** syncband model mismatch at step %u%s\n    call:   %s\n    failed: %s\n",
		step, fz_in_final ? " (final cleanup)" : "", fz_hist[step % FZ_HIST], msg);
	fz_print_history();
	fflush(stderr);
	abort();
}

#define FZ_EXPECT(what, expected, actual)                                                  \
	do {                                                                               \
		long long e_ = (long long)(expected), a_ = (long long)(actual);           \
		if (e_ != a_)                                                              \
			fz_fail("%s: expected %lld, got %lld (%s:%d)", (what), e_, a_,     \
				__FILE__, __LINE__);                                       \
	} while (0)

#define FZ_EXPECT_SIZE(what, expected, actual)                                             \
	do {                                                                               \
		unsigned long long e_ = (expected), a_ = (actual);                         \
		if (e_ != a_)                                                              \
			fz_fail("%s: expected %llu, got %llu (%s:%d)", (what), e_, a_,     \
				__FILE__, __LINE__);                                       \
	} while (0)

#define FZ_EXPECT_RES(what, expected, actual)                                              \
	do {                                                                               \
		long long e_ = (expected), a_ = (actual);                                  \
		if (e_ != a_)                                                              \
			fz_fail("%s returned %s, expected %s (%s:%d)", (what),             \
				fz_res_name(a_), fz_res_name(e_), __FILE__, __LINE__);     \
	} while (0)

/* The model checking itself (a bug in the fuzzer, not the library). */
#define FZ_ASSERT_MODEL(cond)                                                              \
	do {                                                                               \
		if (!(cond))                                                               \
			fz_fail("model invariant broken: %s (%s:%d)", #cond, __FILE__,     \
				__LINE__);                                                 \
	} while (0)

/* ----------------------------------------------------------------- wakers */

typedef struct fz_counter {
	long clones;
	long wakes;
	long wake_by_refs;
	long drops;
} fz_counter;

static fz_counter fz_ctr[FZ_NCTR];
static fz_counter fz_snap[FZ_NCTR];
static long fz_exp_clones[FZ_NCTR];
static long fz_exp_wakes[FZ_NCTR];
static long fz_exp_drops[FZ_NCTR];

/* The internal lock words that must be free whenever a waker is woken or
 * dropped (the target points these at its primitive's sb_waitq.lock). */
static fz_lockword *fz_locks[2];

static fz_counter *fz_counter_of(const void *data, const char *what)
{
	const fz_counter *c = data;
	if (c < fz_ctr || c >= fz_ctr + FZ_NCTR)
		fz_fail("waker %s called with foreign data %p", what, data);
	return (fz_counter *)c;
}

static void fz_check_unlocked(const char *what)
{
	for (int i = 0; i < 2; i++)
		if (fz_locks[i] && FZ_LOCK_HELD(atomic_load_explicit(fz_locks[i], memory_order_relaxed)))
			fz_fail("waker %s ran while the primitive's internal lock was held", what);
}

static sb_waker fz_clone_a(const void *data);
static sb_waker fz_clone_b(const void *data);

static void fz_wake(const void *data)
{
	fz_check_unlocked("wake");
	fz_counter_of(data, "wake")->wakes++;
}

static void fz_wake_by_ref(const void *data)
{
	fz_check_unlocked("wake_by_ref");
	fz_counter_of(data, "wake_by_ref")->wake_by_refs++;
}

static void fz_drop(const void *data)
{
	fz_check_unlocked("drop");
	fz_counter_of(data, "drop")->drops++;
}

/* Two vtables over the same counters: wakers that share a counter but not a
 * vtable are different wakers (sb_waker_will_wake is false). */
static const sb_waker_vtable fz_vt[2] = {
	{ fz_clone_a, fz_wake, fz_wake_by_ref, fz_drop },
	{ fz_clone_b, fz_wake, fz_wake_by_ref, fz_drop },
};

static sb_waker fz_clone_a(const void *data)
{
	fz_counter_of(data, "clone")->clones++;
	return (sb_waker){ &fz_vt[0], data };
}

static sb_waker fz_clone_b(const void *data)
{
	fz_counter_of(data, "clone")->clones++;
	return (sb_waker){ &fz_vt[1], data };
}

/* A waker identity: vtable index and counter; ctr < 0 means none. */
typedef struct fz_wid {
	int vt;
	int ctr;
} fz_wid;

static const fz_wid FZ_NO_WAKER = { 0, -1 };

/* The registered waker of each slot, per the model. */
static fz_wid fz_reg[FZ_NALL];

/* Waker choices for a poll of `slot`: its own (two vtables), or shared. */
static fz_wid fz_waker_choice(int slot, uint8_t c)
{
	switch (c % 5) {
	case 0: return (fz_wid){ 0, slot };
	case 1: return (fz_wid){ 1, slot };
	case 2: return (fz_wid){ 0, FZ_SHARED1 };
	case 3: return (fz_wid){ 0, FZ_SHARED2 };
	default: return (fz_wid){ 1, FZ_SHARED1 };
	}
}

static sb_waker fz_waker(fz_wid w)
{
	return (sb_waker){ &fz_vt[w.vt], &fz_ctr[w.ctr] };
}

static const char *fz_wname(fz_wid w)
{
	static char buf[4][24];
	static unsigned k;
	char *b = buf[k++ & 3];
	if (w.ctr == FZ_SHARED1)
		snprintf(b, 24, "shared1/%c", "AB"[w.vt]);
	else if (w.ctr == FZ_SHARED2)
		snprintf(b, 24, "shared2/%c", "AB"[w.vt]);
	else
		snprintf(b, 24, "own%d/%c", w.ctr, "AB"[w.vt]);
	return b;
}

/* Model: `slot` registers `w` (the library must clone it once). */
static void fz_register(int slot, fz_wid w)
{
	FZ_ASSERT_MODEL(fz_reg[slot].ctr < 0);
	fz_reg[slot] = w;
	fz_exp_clones[w.ctr]++;
}

/* Model: a registered `slot` is polled again with `w`. */
static void fz_reregister(int slot, fz_wid w)
{
	fz_wid o = fz_reg[slot];
	FZ_ASSERT_MODEL(o.ctr >= 0);
	if (o.vt == w.vt && o.ctr == w.ctr)
		return; /* will_wake: nothing cloned */
	fz_exp_clones[w.ctr]++;
	fz_exp_drops[o.ctr]++;
	fz_reg[slot] = w;
}

/* Model: the primitive completes registered `slot` (its clone is woken). */
static void fz_wake_registered(int slot)
{
	FZ_ASSERT_MODEL(fz_reg[slot].ctr >= 0);
	fz_exp_wakes[fz_reg[slot].ctr]++;
	fz_reg[slot] = FZ_NO_WAKER;
}

/* Model: registered `slot` is cancelled (its clone is dropped). */
static void fz_drop_registered(int slot)
{
	FZ_ASSERT_MODEL(fz_reg[slot].ctr >= 0);
	fz_exp_drops[fz_reg[slot].ctr]++;
	fz_reg[slot] = FZ_NO_WAKER;
}

/* ------------------------------------------------------------------ steps */

__attribute__((format(printf, 1, 2))) FZ_NOCOV
static void fz_step_begin(const char *fmt, ...)
{
	char *line = fz_hist[fz_steps % FZ_HIST];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, FZ_LINE, fmt, ap);
	va_end(ap);
	fz_steps++;
	if (fz_trace)
		fprintf(stderr, "%4u  %s\n", fz_steps - 1, line);
	memcpy(fz_snap, fz_ctr, sizeof fz_snap);
	memset(fz_exp_clones, 0, sizeof fz_exp_clones);
	memset(fz_exp_wakes, 0, sizeof fz_exp_wakes);
	memset(fz_exp_drops, 0, sizeof fz_exp_drops);
}

static const char *fz_ctr_name(int c)
{
	static char b[16];
	if (c == FZ_SHARED1)
		return "shared1";
	if (c == FZ_SHARED2)
		return "shared2";
	snprintf(b, sizeof b, "own%d", c);
	return b;
}

/* Compares the waker traffic of the step with the model's, and the live
 * references of every counter with the registrations the model holds. */
FZ_NOCOV static void fz_step_check_wakers(void)
{
	long holders[FZ_NCTR] = { 0 };
	for (int s = 0; s < FZ_NALL; s++)
		if (fz_reg[s].ctr >= 0)
			holders[fz_reg[s].ctr]++;
	for (int c = 0; c < FZ_NCTR; c++) {
		const fz_counter *now = &fz_ctr[c], *was = &fz_snap[c];
		long clones = now->clones - was->clones;
		long wakes = now->wakes - was->wakes;
		long wbr = now->wake_by_refs - was->wake_by_refs;
		long drops = now->drops - was->drops;
		if (wakes != fz_exp_wakes[c])
			fz_fail("waker %s: %ld wake(s) in this step, expected %ld "
				"(wakes must match the futures the model completed)",
				fz_ctr_name(c), wakes, fz_exp_wakes[c]);
		if (wbr != 0)
			fz_fail("waker %s: wake_by_ref called %ld time(s); a registered clone "
				"must be consumed by wake or drop", fz_ctr_name(c), wbr);
		if (clones != fz_exp_clones[c])
			fz_fail("waker %s: %ld clone(s) in this step, expected %ld",
				fz_ctr_name(c), clones, fz_exp_clones[c]);
		if (drops != fz_exp_drops[c])
			fz_fail("waker %s: %ld drop(s) in this step, expected %ld",
				fz_ctr_name(c), drops, fz_exp_drops[c]);
		long live = now->clones - now->wakes - now->drops;
		if (live != holders[c])
			fz_fail("waker %s: %ld live reference(s), but %ld registered pending "
				"future(s) hold it", fz_ctr_name(c), live, holders[c]);
	}
}

/* Resets the harness for a new input. */
static void fz_reset(void)
{
	fz_steps = 0;
	fz_in_final = false;
	memset(fz_ctr, 0, sizeof fz_ctr);
	for (int s = 0; s < FZ_NALL; s++)
		fz_reg[s] = FZ_NO_WAKER;
	fz_locks[0] = fz_locks[1] = NULL;
}

/* At the very end: no clone may survive. */
static void fz_check_no_live_wakers(void)
{
	for (int c = 0; c < FZ_NCTR; c++) {
		long live = fz_ctr[c].clones - fz_ctr[c].wakes - fz_ctr[c].drops;
		if (live != 0)
			fz_fail("waker %s: %ld clone(s) still live after every future was "
				"cancelled", fz_ctr_name(c), live);
	}
}

static void *fz_xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		abort();
	memset(p, 0xa5, n); /* garbage, so reliance on zeroed memory shows */
	return p;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *t = getenv("SB_FUZZ_TRACE");
	fz_trace = t && *t && *t != '0';
	return 0;
}

#endif /* SYNCBAND_FUZZ_COMMON_H */
