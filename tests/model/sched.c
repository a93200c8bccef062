/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The explorer: coroutine scheduler, schedule enumeration, and the two
 * memory models (sched.h; README.md in this folder says how they work).
 * This file is force-included with model_hooks.h too, but uses gcc's
 * __atomic builtins directly for the real memory: one OS thread runs
 * everything, so they only keep the accesses whole.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* program_invocation_short_name, for the replay line */
#endif
#include "sched.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

enum {
	STACK_SIZE = 256 * 1024,
	MAX_CHOICES = 1 << 16,
	MAX_STEPS = 1 << 20, /* scheduling points in one execution: livelock */
	CTX_MAX = 4096,
	NT = SB_MODEL_MAX_THREADS,
	HISTORY = 6,        /* stores remembered per atomic location */
	MAX_LOCATIONS = 64, /* atomic locations one execution may touch */
	MAX_PLAIN = 64,     /* plain data addresses one execution may mark */
	SETUP = -1,         /* the "thread" of setup, check and unseen writes */
};

/* ------------------------------------------------------------ weak memory */

typedef struct vclock {
	uint32_t c[NT];
} vclock;

/* A store in a location's history. */
typedef struct mstore {
	uint64_t value;
	vclock rel;     /* what an acquire that reads it joins */
	uint32_t stamp; /* the storing thread's own clock entry at the store */
	int thread;     /* SETUP: happens-before everything */
} mstore;

/* An atomic location: the last HISTORY stores in modification order. */
typedef struct location {
	const void *addr;
	size_t size;
	uint32_t next;     /* modification-order index of the next store */
	uint32_t count;    /* stores held: indices next - count .. next - 1 */
	uint32_t seen[NT]; /* latest index each thread read or wrote (coherence) */
	mstore h[HISTORY]; /* index i at h[i % HISTORY] */
	/* Each thread's last access: covered once its stamp happens-before */
	uint32_t access[NT];
	const sb_model_site *access_site[NT];
	int dead_owner; /* 1 + the thread whose returned frame held it; 0: live */
} location;

typedef struct plain {
	const void *addr;
	int thread; /* the last write's */
	uint32_t stamp;
	const char *file;
	int line;
	uint32_t read[NT]; /* sb_model_plain_access: reads since, as location.access */
} plain;

/* What sb_model_signal() published at an address, for sb_model_await_change(). */
typedef struct signal_clock {
	const void *addr;
	vclock clock;
} signal_clock;

static struct {
	const sb_model_scenario *scenario;
	ucontext_t main_ctx;
	ucontext_t ctx[NT];
	bool done[NT];
	_Atomic uint32_t *wait_word[NT];
	uint32_t wait_value[NT];
	bool optional[NT]; /* a scenario's await: may give up */
	bool gave_up[NT];
	int current; /* -1: outside the threads (setup, check) */
	long steps;
	/* the schedule: choice points only (where more than one option existed) */
	int depth;
	int prefix;
	unsigned char choice[MAX_CHOICES];
	unsigned char options[MAX_CHOICES];
	int preemptions;
	int bound;
	bool random;
	unsigned seed;
	unsigned run_seed;
	long execution;
	/* the weak model */
	bool weak;
	int stale_bound;
	int stale_reads;
	int spurious_bound; /* sb_model_allow_spurious_failures */
	int spurious;
	vclock clock[NT];
	vclock acquire_pending[NT]; /* release clocks read by relaxed loads */
	vclock release_fence[NT];   /* the clock at the last release fence */
	int nlocations;
	location loc[MAX_LOCATIONS];
	int nplain;
	plain plain[MAX_PLAIN];
	int nsignals;
	signal_clock signals[MAX_PLAIN];
	/* debugging (environment, see README.md) */
	bool trace;
	bool replaying;
	bool failing;
	/* sb_model_catch_failures: a failure ends the exploration, reported */
	bool catching;
	bool caught;
	ucontext_t caught_ctx;
	char failure[320];
	_Alignas(16) unsigned char user[CTX_MAX];
} M = { .current = -1 };

static char stacks[NT][STACK_SIZE];

static const char *order_name(int order)
{
	switch (order) {
	case memory_order_relaxed: return "relaxed";
	case memory_order_consume: return "consume";
	case memory_order_acquire: return "acquire";
	case memory_order_release: return "release";
	case memory_order_acq_rel: return "acq_rel";
	case memory_order_seq_cst: return "seq_cst";
	}
	return "?";
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static void print_schedule(void)
{
	fprintf(stderr, "memory model: %s", M.weak ? "weak" : "sc");
	if (M.random)
		fprintf(stderr, ", random schedule: replay with sb_model_random%s(s, %u, 1%s)\n",
			M.weak ? "_weak" : "", M.run_seed, M.weak ? ", stale_reads" : "");
	else if (M.weak)
		fprintf(stderr, ", preemption bound %d, stale-read bound %d\n", M.bound,
			M.stale_bound);
	else
		fprintf(stderr, ", preemption bound %d\n", M.bound);
	fprintf(stderr, "schedule (choice index at each choice point):");
	for (int i = 0; i < M.depth; i++)
		fprintf(stderr, " %d", M.choice[i]);
	fprintf(stderr, "\n");
	if (M.random || !M.scenario)
		return;
	/* A line for the shell: the name quoted, its own quotes as '\'' */
	fprintf(stderr, "replay: SB_MODEL_SCENARIO='");
	for (const char *c = M.scenario->name; *c; c++) {
		if (*c == '\'')
			fputs("'\\''", stderr);
		else
			fputc(*c, stderr);
	}
	fprintf(stderr, "' SB_MODEL_MEMORY=%s SB_MODEL_REPLAY='", M.weak ? "weak" : "sc");
	for (int i = 0; i < M.depth; i++)
		fprintf(stderr, "%s%d", i ? " " : "", M.choice[i]);
	fprintf(stderr, "' tests/%s (in the build folder)\n", program_invocation_short_name);
}

void sb_model_catch_failures(bool on)
{
	M.catching = on;
}

void sb_model_fail(const char *file, int line, const char *what)
{
	if (M.catching && M.scenario) {
		snprintf(M.failure, sizeof M.failure, "%s:%d: %s", base_name(file), line, what);
		M.caught = true;
		M.current = -1;
		setcontext(&M.caught_ctx); /* back into explore(), off any thread's stack */
	}
	M.failing = true;
	fflush(stdout);
	fprintf(stderr, "\nMODEL FAILURE in scenario '%s', execution %ld: %s:%d: %s\n",
		M.scenario ? M.scenario->name : "?", M.execution, file, line, what);
	print_schedule();
	abort();
}

/* An assertion of the library (or a crash) inside a scenario: say where. */
static void on_fatal_signal(int sig)
{
	if (!M.failing && M.scenario) {
		M.failing = true;
		fflush(stdout);
		fprintf(stderr, "\nMODEL FAILURE in scenario '%s', execution %ld: signal %d%s\n",
			M.scenario->name, M.execution, sig,
			sig == SIGABRT ? " (an assertion failed?)" : "");
		print_schedule();
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static unsigned next_random(void)
{
	M.seed = M.seed * 1103515245u + 12345u;
	return M.seed >> 16;
}

/* A choice point with `options` (> 1) options; option 0 is the default. */
static int choose(int options)
{
	int pick;
	if (M.random)
		pick = (int)(next_random() % (unsigned)options);
	else if (M.depth < M.prefix)
		pick = M.choice[M.depth];
	else
		pick = 0;
	if (pick >= options) {
		if (!M.replaying)
			sb_model_fail(__FILE__, __LINE__, "schedule does not replay");
		fprintf(stderr, "replay: choice %d has only %d options\n", M.depth, options);
		pick = options - 1;
	}
	if (M.depth >= MAX_CHOICES)
		sb_model_fail(__FILE__, __LINE__, "schedule too deep");
	M.choice[M.depth] = (unsigned char)pick;
	M.options[M.depth] = (unsigned char)options;
	M.depth++;
	return pick;
}

/* ------------------------------------------------------------- scheduler */

static bool runnable(int t)
{
	if (M.done[t])
		return false;
	if (M.wait_word[t] == NULL || M.gave_up[t])
		return true;
	return __atomic_load_n((uint32_t *)M.wait_word[t], __ATOMIC_RELAXED) != M.wait_value[t];
}

/*
 * Picks the next thread.  Options are ordered: the current thread first
 * (when it can go on), then the others from cur + 1 round.  Taking a later
 * option while the current thread could go on is a preemption.  With every
 * thread blocked, a scenario's await gives up (the lowest thread first).
 */
static int decide(int cur, bool cur_can_continue)
{
	int cand[NT];
	int k = 0;
	int n = M.scenario->threads;
	if (cur_can_continue)
		cand[k++] = cur;
	for (int i = 1; i <= n; i++) {
		int t = (cur + i) % n;
		if (t != cur && runnable(t))
			cand[k++] = t;
	}
	if (k == 0) {
		for (int t = 0; t < n; t++) {
			if (M.done[t] || !M.optional[t])
				continue;
			M.gave_up[t] = true;
			return t;
		}
		for (int t = 0; t < n; t++)
			if (!M.done[t])
				sb_model_fail(__FILE__, __LINE__, "deadlock: every thread is blocked");
		return -1;
	}
	if (++M.steps > MAX_STEPS)
		sb_model_fail(__FILE__, __LINE__, "livelock: too many scheduling points");
	int allowed = k;
	if (cur_can_continue && !M.random && M.preemptions >= M.bound)
		allowed = 1;
	if (allowed == 1)
		return cand[0];
	int pick = choose(allowed);
	if (cur_can_continue && pick != 0)
		M.preemptions++;
	return cand[pick];
}

static void switch_to(int next)
{
	int cur = M.current;
	if (next == cur)
		return;
	if (M.trace)
		fprintf(stderr, "  -- switch to thread %d\n", next);
	M.current = next;
	swapcontext(&M.ctx[cur], &M.ctx[next]);
}

static long points_seen, rmws_seen;

long sb_model_points(void)
{
	return points_seen;
}

long sb_model_rmws(void)
{
	return rmws_seen;
}

static void point(void)
{
	points_seen++;
	if (M.current < 0)
		return;
	switch_to(decide(M.current, true));
}

void sb_model_futex_wait(_Atomic uint32_t *word, uint32_t expected);
void sb_model_futex_wait(_Atomic uint32_t *word, uint32_t expected)
{
	if (M.current < 0)
		sb_model_fail(__FILE__, __LINE__, "futex wait outside the scheduled threads");
	int cur = M.current;
	M.wait_word[cur] = word;
	M.wait_value[cur] = expected;
	while (!runnable(cur))
		switch_to(decide(cur, false));
	M.wait_word[cur] = NULL;
}

static bool tracked(void);
static void join(vclock *a, const vclock *b);

static signal_clock *signal_entry(const void *addr, bool add)
{
	for (int i = 0; i < M.nsignals; i++)
		if (M.signals[i].addr == addr)
			return &M.signals[i];
	if (!add)
		return NULL;
	if (M.nsignals == MAX_PLAIN)
		sb_model_fail(__FILE__, __LINE__, "too many signalled addresses");
	signal_clock *c = &M.signals[M.nsignals++];
	*c = (signal_clock){ .addr = addr };
	return c;
}

void sb_model_signal(const void *word)
{
	if (tracked())
		join(&signal_entry(word, true)->clock, &M.clock[M.current]);
}

bool sb_model_await_change(const atomic_int *word, int old)
{
	if (M.current < 0)
		sb_model_fail(__FILE__, __LINE__, "await outside the scheduled threads");
	int cur = M.current;
	M.wait_word[cur] = (_Atomic uint32_t *)(uintptr_t)word;
	M.wait_value[cur] = (uint32_t)old;
	M.optional[cur] = true;
	M.gave_up[cur] = false;
	while (!runnable(cur))
		switch_to(decide(cur, false));
	bool changed = !M.gave_up[cur];
	M.wait_word[cur] = NULL;
	M.optional[cur] = false;
	M.gave_up[cur] = false;
	const signal_clock *c = signal_entry(word, false);
	if (changed && c && tracked())
		join(&M.clock[cur], &c->clock);
	return changed;
}

/* ------------------------------------------------------------------ sites */

static const char *weaken_env;  /* SB_MODEL_WEAKEN: "file.c:line[,...]" */
static const char *sites_env;   /* SB_MODEL_SITES: where to list every site */
static sb_model_site *sites;
static long weakened_reached;
static bool weakened_seen;


static const char *op_name(int kind)
{
	static const char *const names[] = { "?",         "load",      "store",
					     "exchange",  "cas",       "fetch_add",
					     "fetch_sub", "fetch_or",  "fetch_and",
					     "fence" };
	return kind > 0 && kind <= SB_MODEL_FENCE ? names[kind] : "?";
}

/* Whether `spec`, "file:line[,file:line...]", names the site. */
static bool names_site(const char *spec, const sb_model_site *site)
{
	const char *base = base_name(site->file);
	size_t len = strlen(base);
	for (const char *p = spec; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (strncmp(p, base, len) == 0 && p[len] == ':' && atoi(p + len + 1) == site->line)
			return true;
	}
	return false;
}

/* Registers a site on first use; returns the orders to model (relaxed if weakened). */
static void site_use(sb_model_site *site, int kind, int *order, int *failure)
{
	if (site->kind == 0) {
		site->kind = kind;
		site->order = *order;
		site->failure_order = failure ? *failure : *order;
		site->weakened = weaken_env && names_site(weaken_env, site);
		weakened_seen |= site->weakened;
		site->next = sites;
		sites = site;
	}
	if (M.current >= 0) {
		site->reached++;
		if (site->weakened)
			weakened_reached++;
	}
	if (site->weakened) {
		*order = memory_order_relaxed;
		if (failure)
			*failure = memory_order_relaxed;
	}
}

static void report_sites(void)
{
	if (weaken_env)
		fprintf(stderr, "SB_MODEL_WEAKEN=%s: %s, reached %ld times by scheduled threads\n",
			weaken_env, weakened_seen ? "site found" : "no such site",
			weakened_reached);
	if (!sites_env)
		return;
	FILE *f = fopen(sites_env, "w");
	if (!f) {
		perror(sites_env);
		return;
	}
	for (const sb_model_site *s = sites; s; s = s->next)
		fprintf(f, "%s:%d %s %s %s %ld\n", base_name(s->file), s->line, op_name(s->kind),
			order_name(s->order), order_name(s->failure_order), s->reached);
	fclose(f);
}

__attribute__((constructor)) static void read_environment(void)
{
	weaken_env = getenv("SB_MODEL_WEAKEN");
	sites_env = getenv("SB_MODEL_SITES");
	if (weaken_env && !*weaken_env)
		weaken_env = NULL;
	if (weaken_env || sites_env)
		atexit(report_sites);
	signal(SIGABRT, on_fatal_signal);
	signal(SIGSEGV, on_fatal_signal);
}

/* ------------------------------------------------------------ weak model */

static bool is_acquire(int order)
{
	return order == memory_order_acquire || order == memory_order_consume ||
	       order == memory_order_acq_rel || order == memory_order_seq_cst;
}

static bool is_release(int order)
{
	return order == memory_order_release || order == memory_order_acq_rel ||
	       order == memory_order_seq_cst;
}

static void join(vclock *a, const vclock *b)
{
	for (int i = 0; i < NT; i++)
		if (b->c[i] > a->c[i])
			a->c[i] = b->c[i];
}

/* Whether an event of `thread` at `stamp` happens-before thread t's present. */
static bool happens_before(int thread, uint32_t stamp, int t)
{
	return thread == SETUP || thread == t || stamp <= M.clock[t].c[thread];
}

static uint64_t mem_read(const void *addr, size_t size)
{
	switch (size) {
	case 1: return __atomic_load_n((const uint8_t *)addr, __ATOMIC_RELAXED);
	case 2: return __atomic_load_n((const uint16_t *)addr, __ATOMIC_RELAXED);
	case 4: return __atomic_load_n((const uint32_t *)addr, __ATOMIC_RELAXED);
	case 8: return __atomic_load_n((const uint64_t *)addr, __ATOMIC_RELAXED);
	}
	sb_model_fail(__FILE__, __LINE__, "atomic of an unsupported size");
	return 0;
}

static void mem_write(void *addr, size_t size, uint64_t v)
{
	switch (size) {
	case 1: __atomic_store_n((uint8_t *)addr, (uint8_t)v, __ATOMIC_RELAXED); return;
	case 2: __atomic_store_n((uint16_t *)addr, (uint16_t)v, __ATOMIC_RELAXED); return;
	case 4: __atomic_store_n((uint32_t *)addr, (uint32_t)v, __ATOMIC_RELAXED); return;
	case 8: __atomic_store_n((uint64_t *)addr, v, __ATOMIC_RELAXED); return;
	}
	sb_model_fail(__FILE__, __LINE__, "atomic of an unsupported size");
}

static uint64_t value_of(const void *p, size_t size)
{
	uint64_t v = 0;
	memcpy(&v, p, size); /* little-endian: the low bytes */
	return v;
}

static mstore *store_at(location *l, uint32_t index)
{
	return &l->h[index % HISTORY];
}

static mstore *latest(location *l)
{
	return store_at(l, l->next - 1);
}

static mstore *push(location *l)
{
	mstore *s = store_at(l, l->next++);
	if (l->count < HISTORY)
		l->count++;
	return s;
}

/*
 * A location in a frame that returned (retire_stack): its own thread may
 * reuse the memory for a new object, anyone else's access is a use after
 * return.
 */
static void revive_or_fail(location *l)
{
	int owner = l->dead_owner - 1;
	if (M.current != owner) {
		char what[200];
		snprintf(what, sizeof what,
			 "use after return: thread %d accesses %p, in a frame of thread %d that "
			 "returned", M.current, l->addr, owner);
		sb_model_fail(__FILE__, __LINE__, what);
	}
	memset(l->access, 0, sizeof l->access);
	l->dead_owner = 0;
	l->count = 0; /* a new object: its history starts again */
}

/*
 * The location at `addr`, its history consistent with the real memory: a
 * location seen for the first time, or whose memory no longer holds its
 * latest store (a plain write the model did not see: an init, a struct
 * assignment), starts again from the real value, as if setup wrote it.
 */
static location *locate(const void *addr, size_t size)
{
	location *l = NULL;
	for (int i = 0; i < M.nlocations; i++)
		if (M.loc[i].addr == addr) {
			l = &M.loc[i];
			break;
		}
	if (!l) {
		if (M.nlocations == MAX_LOCATIONS)
			sb_model_fail(__FILE__, __LINE__, "too many atomic locations");
		l = &M.loc[M.nlocations++];
		memset(l, 0, sizeof *l);
		l->addr = addr;
	}
	if (l->dead_owner)
		revive_or_fail(l);
	uint64_t real = mem_read(addr, size);
	if (l->count == 0 || l->size != size || latest(l)->value != real) {
		l->size = size;
		l->count = 0;
		mstore *s = push(l);
		*s = (mstore){ .value = real, .thread = SETUP };
	}
	return l;
}

/* A new store by thread t at the end of the modification order. */
static void record_store(location *l, int t, uint64_t value, bool release, const vclock *carried)
{
	uint32_t stamp = ++M.clock[t].c[t];
	vclock rel = carried ? *carried : (vclock){ { 0 } };
	join(&rel, release ? &M.clock[t] : &M.release_fence[t]);
	mstore *s = push(l);
	*s = (mstore){ .value = value, .rel = rel, .stamp = stamp, .thread = t };
	l->seen[t] = l->next - 1;
}

/* Thread t reads store `index`: coherence, and synchronises if acquire. */
static void read_from(location *l, int t, uint32_t index, bool acquire)
{
	l->seen[t] = index;
	join(acquire ? &M.clock[t] : &M.acquire_pending[t], &store_at(l, index)->rel);
}

/*
 * Thread t accessed the location at its event `stamp` (a store's own stamp;
 * for a load, the thread's next one: whatever happens-after that event of t
 * comes after the load).
 */
static void accessed(location *l, int t, uint32_t stamp, const sb_model_site *site)
{
	if (stamp > l->access[t]) {
		l->access[t] = stamp;
		l->access_site[t] = site;
	}
}

static uint32_t load_stamp(int t)
{
	return M.clock[t].c[t] + 1;
}

/*
 * Which store a plain load reads: any from the latest back to the newest one
 * that this thread has read or written, or that happens-before it.
 */
static uint32_t pick_store(location *l, int t)
{
	uint32_t newest = l->next - 1;
	uint32_t floor = l->next - l->count;
	if (l->seen[t] > floor)
		floor = l->seen[t];
	for (uint32_t i = newest; i > floor; i--) {
		const mstore *s = store_at(l, i);
		if (happens_before(s->thread, s->stamp, t)) {
			floor = i;
			break;
		}
	}
	int options = (int)(newest - floor + 1);
	if (options == 1 || M.stale_reads >= M.stale_bound)
		return newest;
	int pick = choose(options);
	if (pick)
		M.stale_reads++;
	return newest - (uint32_t)pick;
}

static bool tracked(void)
{
	return M.weak && M.current >= 0;
}

static void trace_op(const sb_model_site *site, const void *addr, uint64_t value,
		     const char *note)
{
	if (M.trace && M.current >= 0)
		fprintf(stderr, "  t%d %s:%d %s %p = %#llx%s\n", M.current, base_name(site->file),
			site->line, op_name(site->kind), addr, (unsigned long long)value, note);
}

/* -------------------------------------------------------------- the hooks */

void sb_model_load(sb_model_site *site, const void *addr, size_t size, void *out, int order)
{
	site_use(site, SB_MODEL_LOAD, &order, NULL);
	point();
	uint64_t v = mem_read(addr, size);
	const char *note = "";
	if (tracked()) {
		int t = M.current;
		location *l = locate(addr, size);
		uint32_t index = pick_store(l, t);
		if (index != l->next - 1)
			note = " (stale)";
		read_from(l, t, index, is_acquire(order));
		accessed(l, t, load_stamp(t), site);
		v = store_at(l, index)->value;
	}
	memcpy(out, &v, size);
	trace_op(site, addr, v, note);
}

void sb_model_store(sb_model_site *site, void *addr, size_t size, const void *val, int order)
{
	site_use(site, SB_MODEL_STORE, &order, NULL);
	point();
	uint64_t v = value_of(val, size);
	if (tracked()) {
		location *l = locate(addr, size);
		record_store(l, M.current, v, is_release(order), NULL);
		accessed(l, M.current, latest(l)->stamp, site);
	}
	mem_write(addr, size, v);
	trace_op(site, addr, v, "");
}

/*
 * Every read-modify-write reads the latest store (atomicity), and its store
 * continues the release sequence of the one it read: it carries that
 * store's release clock, joined with its own if it is a release.
 */
static void record_rmw(location *l, uint64_t value, int order)
{
	int t = M.current;
	vclock carried = latest(l)->rel;
	read_from(l, t, l->next - 1, is_acquire(order));
	record_store(l, t, value, is_release(order), &carried);
}

void sb_model_rmw(sb_model_site *site, int op, void *addr, size_t size, const void *operand,
		  void *old, int order)
{
	site_use(site, op, &order, NULL);
	rmws_seen++;
	point();
	location *l = tracked() ? locate(addr, size) : NULL;
	uint64_t was = mem_read(addr, size);
	uint64_t arg = value_of(operand, size);
	uint64_t now = arg;
	switch (op) {
	case SB_MODEL_FETCH_ADD: now = was + arg; break;
	case SB_MODEL_FETCH_SUB: now = was - arg; break;
	case SB_MODEL_FETCH_OR: now = was | arg; break;
	case SB_MODEL_FETCH_AND: now = was & arg; break;
	}
	if (l) {
		record_rmw(l, now, order);
		accessed(l, M.current, latest(l)->stamp, site);
	}
	mem_write(addr, size, now);
	memcpy(old, &was, size);
	trace_op(site, addr, was, "");
}

void sb_model_allow_spurious_failures(int n)
{
	M.spurious_bound = n;
}

/*
 * A CAS reads the latest store, whether it succeeds or fails (C11 lets a
 * failed CAS read an older one; the model does not).  A weak CAS that would
 * succeed may fail spuriously, as C11 lets it, where the scenario's setup
 * allowed it (sb_model_allow_spurious_failures): a choice point, option 0
 * the success.  A failure is a load with the failure order.
 */
bool sb_model_cas(sb_model_site *site, void *addr, size_t size, void *expected,
		  const void *desired, bool weak, int success, int failure)
{
	site_use(site, SB_MODEL_CAS, &success, &failure);
	rmws_seen++;
	point();
	location *l = tracked() ? locate(addr, size) : NULL;
	uint64_t was = mem_read(addr, size);
	bool ok = was == value_of(expected, size);
	bool spurious = false;
	if (ok && weak && M.current >= 0 && M.spurious < M.spurious_bound && choose(2)) {
		M.spurious++;
		ok = false;
		spurious = true;
	}
	if (ok) {
		uint64_t now = value_of(desired, size);
		if (l) {
			record_rmw(l, now, success);
			accessed(l, M.current, latest(l)->stamp, site);
		}
		mem_write(addr, size, now);
	} else {
		if (l) {
			read_from(l, M.current, l->next - 1, is_acquire(failure));
			accessed(l, M.current, load_stamp(M.current), site);
		}
		memcpy(expected, &was, size);
	}
	trace_op(site, addr, was,
		 ok ? " (cas succeeded)" : spurious ? " (cas failed spuriously)" : " (cas failed)");
	return ok;
}

/*
 * An acquire fence makes the thread synchronise with the release clocks its
 * relaxed reads met; a release fence is carried by its later relaxed stores.
 * No scheduling point: a fence touches no location.
 */
void sb_model_fence(sb_model_site *site, int order)
{
	site_use(site, SB_MODEL_FENCE, &order, NULL);
	if (!tracked())
		return;
	int t = M.current;
	if (is_acquire(order))
		join(&M.clock[t], &M.acquire_pending[t]);
	if (is_release(order))
		M.release_fence[t] = M.clock[t];
}

/* ------------------------------------------------------------- plain data */

static plain *plain_entry(const void *addr, bool add)
{
	for (int i = 0; i < M.nplain; i++)
		if (M.plain[i].addr == addr)
			return &M.plain[i];
	if (!add)
		return NULL;
	if (M.nplain == MAX_PLAIN)
		sb_model_fail(__FILE__, __LINE__, "too many plain data addresses");
	plain *p = &M.plain[M.nplain++];
	*p = (plain){ .addr = addr, .thread = SETUP, .file = "setup" };
	return p;
}

void sb_model_plain_write(const void *addr, const char *file, int line)
{
	if (!M.weak)
		return;
	plain *p = plain_entry(addr, true);
	p->file = file;
	p->line = line;
	if (M.current < 0) {
		p->thread = SETUP;
		p->stamp = 0;
		return;
	}
	p->thread = M.current;
	p->stamp = ++M.clock[M.current].c[M.current];
}

void sb_model_plain_read(const void *addr, const char *file, int line)
{
	if (!tracked())
		return;
	const plain *p = plain_entry(addr, false);
	if (!p || happens_before(p->thread, p->stamp, M.current))
		return;
	char what[256];
	snprintf(what, sizeof what,
		 "data race: thread %d reads %p, written by thread %d at %s:%d, which does not "
		 "happen-before the read",
		 M.current, addr, p->thread, base_name(p->file), p->line);
	sb_model_fail(file, line, what);
}

/*
 * A plain field of the library's own (model_hooks.h): a read must come after
 * the last write, and a write after the last write and every read since.
 */
void sb_model_plain_access(const void *addr, bool write)
{
	if (!M.weak)
		return;
	plain *p = plain_entry(addr, true);
	if (M.current < 0) { /* setup or check: before or after everything */
		if (write)
			*p = (plain){ .addr = addr, .thread = SETUP, .file = "setup" };
		return;
	}
	int t = M.current;
	char what[256];
	if (!happens_before(p->thread, p->stamp, t)) {
		snprintf(what, sizeof what,
			 "data race: thread %d %s the library's field at %p, written by thread %d, "
			 "which does not happen-before",
			 t, write ? "writes" : "reads", addr, p->thread);
		sb_model_fail(__FILE__, __LINE__, what);
	}
	if (!write) {
		p->read[t] = M.clock[t].c[t] + 1;
		return;
	}
	for (int u = 0; u < NT; u++) {
		if (u == t || p->read[u] <= M.clock[t].c[u])
			continue;
		snprintf(what, sizeof what,
			 "data race: thread %d writes the library's field at %p, read by thread %d, "
			 "which does not happen-before the write",
			 t, addr, u);
		sb_model_fail(__FILE__, __LINE__, what);
	}
	/* Every earlier access happens-before this write, so it stands for them. */
	*p = (plain){ .addr = addr, .thread = t, .stamp = ++M.clock[t].c[t], .file = "the library" };
}

/* ------------------------------------------------------------- executions */

/*
 * Thread t has returned from every frame below `frame` on its stack: each
 * atomic location there is dead.  Every other thread's access to it must
 * happen-before this point (as before a free: the memory is reused), and
 * none may follow (locate).  Weak model only.
 */
static void retire_stack(int t, const void *frame)
{
	if (!M.weak)
		return;
	const char *lo = stacks[t];
	for (int i = 0; i < M.nlocations; i++) {
		location *l = &M.loc[i];
		const char *a = l->addr;
		if (a < lo || a >= (const char *)frame || l->dead_owner)
			continue;
		for (int u = 0; u < NT; u++) {
			if (u == t || l->access[u] <= M.clock[t].c[u])
				continue;
			char what[300];
			snprintf(what, sizeof what,
				 "data race: thread %d's access to %p at %s:%d does not happen-before "
				 "thread %d returns from the frame holding it",
				 u, l->addr, base_name(l->access_site[u]->file),
				 l->access_site[u]->line, t);
			sb_model_fail(__FILE__, __LINE__, what);
		}
		l->dead_owner = t + 1;
	}
}

static void trampoline(int t)
{
	M.scenario->thread[t](M.user);
	/* What the thread kept on its stack (a blocking call's future and
	 * parker) is gone now. */
	retire_stack(t, __builtin_frame_address(0));
	M.done[t] = true;
	/* back to main_ctx through uc_link, which picks the next thread */
}

static void run_once(void)
{
	const sb_model_scenario *s = M.scenario;
	memset(M.user, 0, sizeof(M.user));
	memset(M.done, 0, sizeof(M.done));
	memset(M.wait_word, 0, sizeof(M.wait_word));
	memset(M.optional, 0, sizeof(M.optional));
	memset(M.gave_up, 0, sizeof(M.gave_up));
	memset(M.clock, 0, sizeof(M.clock));
	memset(M.acquire_pending, 0, sizeof(M.acquire_pending));
	memset(M.release_fence, 0, sizeof(M.release_fence));
	M.nlocations = 0;
	M.nplain = 0;
	M.nsignals = 0;
	M.stale_reads = 0;
	M.spurious_bound = 0;
	M.spurious = 0;
	M.depth = 0;
	M.preemptions = 0;
	M.steps = 0;
	M.current = -1;
	if (s->setup)
		s->setup(M.user);
	for (int t = 0; t < s->threads; t++) {
		getcontext(&M.ctx[t]);
		M.ctx[t].uc_stack.ss_sp = stacks[t];
		M.ctx[t].uc_stack.ss_size = STACK_SIZE;
		M.ctx[t].uc_link = &M.main_ctx;
		makecontext(&M.ctx[t], (void (*)(void))trampoline, 1, t);
	}
	/* The first thread to run is a free choice, as is the next after an exit. */
	int last = s->threads - 1;
	for (;;) {
		int next = decide(last, false);
		if (next < 0)
			break;
		if (M.trace)
			fprintf(stderr, "  -- run thread %d\n", next);
		M.current = next;
		swapcontext(&M.main_ctx, &M.ctx[next]);
		last = M.current;
		M.current = -1;
	}
	M.current = -1;
	if (s->check)
		s->check(M.user);
}

/*
 * SB_MODEL_SCENARIO (a part of the name) and SB_MODEL_MEMORY (sc, weak)
 * select what runs; SB_MODEL_REPLAY (choice indices) runs one schedule,
 * traced (as SB_MODEL_TRACE=1 traces every run).
 */
static bool begin(const sb_model_scenario *s, bool weak)
{
	if (s->ctx_size > CTX_MAX || s->threads > NT)
		sb_model_fail(__FILE__, __LINE__, "scenario too large");
	const char *only = getenv("SB_MODEL_SCENARIO");
	const char *memory = getenv("SB_MODEL_MEMORY");
	if (only && *only && !strstr(s->name, only))
		return false;
	if (memory && *memory && strcmp(memory, weak ? "weak" : "sc") != 0)
		return false;
	M.scenario = s;
	M.weak = weak;
	M.execution = 0;
	M.prefix = 0;
	M.failing = false;
	const char *trace = getenv("SB_MODEL_TRACE");
	M.trace = trace && *trace && *trace != '0';
	const char *replay = getenv("SB_MODEL_REPLAY");
	M.replaying = replay != NULL;
	if (replay) {
		char *end;
		for (long c; M.prefix < MAX_CHOICES; M.prefix++, replay = end) {
			c = strtol(replay, &end, 10);
			if (end == replay)
				break;
			M.choice[M.prefix] = (unsigned char)c;
		}
		M.trace = true;
		fprintf(stderr, "replaying '%s' (%s), %d choices given\n", s->name,
			weak ? "weak" : "sc", M.prefix);
	}
	return true;
}

static void account(sb_model_result *r)
{
	M.execution++;
	r->executions++;
	if (M.depth > r->max_choices)
		r->max_choices = M.depth;
	if (M.stale_reads)
		r->stale++;
}

static sb_model_result explore(const sb_model_scenario *s, bool weak, int preemptions,
			       int stale_reads, long limit)
{
	sb_model_result r = { 0 };
	if (!begin(s, weak)) {
		r.filtered = true;
		return r;
	}
	M.random = false;
	M.bound = preemptions;
	M.stale_bound = stale_reads;
	for (;;) {
		M.caught = false;
		getcontext(&M.caught_ctx); /* returns again from sb_model_fail when catching */
		if (!M.caught)
			run_once();
		account(&r);
		if (M.caught) {
			r.failed = true;
			r.failure = M.failure;
			break;
		}
		if (M.replaying) {
			r.filtered = true;
			break;
		}
		int d = M.depth - 1;
		while (d >= 0 && M.choice[d] + 1 >= M.options[d])
			d--;
		if (d < 0) {
			r.complete = true;
			break;
		}
		if (r.executions >= limit)
			break;
		M.choice[d]++;
		M.prefix = d + 1;
	}
	M.scenario = NULL;
	return r;
}

sb_model_result sb_model_explore(const sb_model_scenario *s, int preemptions, long limit)
{
	return explore(s, false, preemptions, 0, limit);
}

sb_model_result sb_model_explore_weak(const sb_model_scenario *s, int preemptions,
				      int stale_reads, long limit)
{
	return explore(s, true, preemptions, stale_reads, limit);
}

static sb_model_result random_runs(const sb_model_scenario *s, bool weak, unsigned seed,
				   long runs, int stale_reads)
{
	sb_model_result r = { 0 };
	if (!begin(s, weak) || M.replaying) {
		r.filtered = true;
		M.scenario = NULL;
		return r;
	}
	M.random = true;
	M.stale_bound = stale_reads;
	for (long i = 0; i < runs; i++) {
		M.seed = M.run_seed = seed + (unsigned)i;
		run_once();
		account(&r);
	}
	r.complete = true;
	M.random = false;
	M.scenario = NULL;
	return r;
}

sb_model_result sb_model_random(const sb_model_scenario *s, unsigned seed, long runs)
{
	return random_runs(s, false, seed, runs, 0);
}

sb_model_result sb_model_random_weak(const sb_model_scenario *s, unsigned seed, long runs,
				     int stale_reads)
{
	return random_runs(s, true, seed, runs, stale_reads);
}

bool sb_model_explore_all(const sb_model_scenario *set, size_t n, int preemptions,
			  int stale_reads, long limit)
{
	bool weak = stale_reads >= 0;
	bool ok = true;
	long total = 0;
	int ran = 0;
	for (size_t i = 0; i < n; i++) {
		sb_model_result r = weak ? sb_model_explore_weak(&set[i], preemptions, stale_reads, limit)
					 : sb_model_explore(&set[i], preemptions, limit);
		if (r.filtered)
			continue;
		if (weak)
			printf("weak: %-79s %8ld schedules, %7ld read a stale value%s\n", set[i].name,
			       r.executions, r.stale, r.complete ? "" : " [limit reached]");
		else
			printf("explored %-76s %8ld schedules (deepest %ld choices)%s\n", set[i].name,
			       r.executions, r.max_choices, r.complete ? "" : " [limit reached]");
		if (!r.complete || r.executions <= 1) {
			printf("FAILED: %s: %s\n", set[i].name,
			       r.failed     ? r.failure
			       : r.complete ? "explored one schedule: nothing races"
					    : "did not finish within the limit");
			ok = false;
		}
		total += r.executions;
		ran++;
	}
	if (ran)
		printf("%s %ld schedules in all\n", weak ? "weak:" : "explored", total);
	return ok;
}

bool sb_model_random_all(const sb_model_scenario *set, size_t n, unsigned seed, long runs,
			 int stale_reads)
{
	bool ok = true;
	for (size_t i = 0; i < n; i++) {
		sb_model_result r = stale_reads >= 0
					    ? sb_model_random_weak(&set[i], seed, runs, stale_reads)
					    : sb_model_random(&set[i], seed, runs);
		if (!r.filtered && r.executions != runs) {
			printf("FAILED: %s ran %ld of %ld random schedules\n", set[i].name,
			       r.executions, runs);
			ok = false;
		}
	}
	return ok;
}
