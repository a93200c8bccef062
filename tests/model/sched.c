/* SPDX-License-Identifier: Apache-2.0 */
#include "sched.h"

#include <stdatomic.h>
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
};

static struct {
	const sb_model_scenario *scenario;
	ucontext_t main_ctx;
	ucontext_t ctx[SB_MODEL_MAX_THREADS];
	bool done[SB_MODEL_MAX_THREADS];
	_Atomic uint32_t *wait_word[SB_MODEL_MAX_THREADS];
	uint32_t wait_value[SB_MODEL_MAX_THREADS];
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
	_Alignas(16) unsigned char user[CTX_MAX];
} M = { .current = -1 };

static char stacks[SB_MODEL_MAX_THREADS][STACK_SIZE];

static bool runnable(int t)
{
	if (M.done[t])
		return false;
	if (M.wait_word[t] == NULL)
		return true;
	return __atomic_load_n((uint32_t *)M.wait_word[t], __ATOMIC_RELAXED) != M.wait_value[t];
}

void sb_model_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "\nMODEL FAILURE in scenario '%s', execution %ld: %s:%d: %s\n",
		M.scenario ? M.scenario->name : "?", M.execution, file, line, what);
	if (M.random)
		fprintf(stderr, "random schedule: replay with sb_model_random(s, %u, 1)\n",
			M.run_seed);
	fprintf(stderr, "schedule (choice index at each choice point):");
	for (int i = 0; i < M.depth; i++)
		fprintf(stderr, " %d", M.choice[i]);
	fprintf(stderr, "\n");
	abort();
}

static unsigned next_random(void)
{
	M.seed = M.seed * 1103515245u + 12345u;
	return M.seed >> 16;
}

/*
 * Picks the next thread.  Options are ordered: the current thread first
 * (when it can go on), then the others from cur + 1 round.  Taking a later
 * option while the current thread could go on is a preemption.
 */
static int decide(int cur, bool cur_can_continue)
{
	int cand[SB_MODEL_MAX_THREADS];
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
	int pick;
	if (M.random)
		pick = (int)(next_random() % (unsigned)allowed);
	else if (M.depth < M.prefix)
		pick = M.choice[M.depth];
	else
		pick = 0;
	if (M.depth >= MAX_CHOICES)
		sb_model_fail(__FILE__, __LINE__, "schedule too deep");
	M.choice[M.depth] = (unsigned char)pick;
	M.options[M.depth] = (unsigned char)allowed;
	M.depth++;
	if (cur_can_continue && pick != 0)
		M.preemptions++;
	return cand[pick];
}

static void switch_to(int next)
{
	int cur = M.current;
	if (next == cur)
		return;
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

void sb_model_point_rmw(void);
void sb_model_point_rmw(void)
{
	rmws_seen++;
	sb_model_point();
}

void sb_model_point(void)
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

static void trampoline(int t)
{
	M.scenario->thread[t](M.user);
	M.done[t] = true;
	/* back to main_ctx through uc_link, which picks the next thread */
}

static void run_once(void)
{
	const sb_model_scenario *s = M.scenario;
	memset(M.user, 0, sizeof(M.user));
	memset(M.done, 0, sizeof(M.done));
	memset(M.wait_word, 0, sizeof(M.wait_word));
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
		M.current = next;
		swapcontext(&M.main_ctx, &M.ctx[next]);
		last = M.current;
		M.current = -1;
	}
	if (s->check)
		s->check(M.user);
}

static void begin(const sb_model_scenario *s)
{
	if (s->ctx_size > CTX_MAX || s->threads > SB_MODEL_MAX_THREADS)
		sb_model_fail(__FILE__, __LINE__, "scenario too large");
	M.scenario = s;
	M.execution = 0;
	M.prefix = 0;
}

sb_model_result sb_model_explore(const sb_model_scenario *s, int preemptions, long limit)
{
	sb_model_result r = { 0, 0, false };
	begin(s);
	M.random = false;
	M.bound = preemptions;
	for (;;) {
		run_once();
		M.execution++;
		r.executions++;
		if (M.depth > r.max_choices)
			r.max_choices = M.depth;
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

sb_model_result sb_model_random(const sb_model_scenario *s, unsigned seed, long runs)
{
	sb_model_result r = { 0, 0, false };
	begin(s);
	M.random = true;
	for (long i = 0; i < runs; i++) {
		M.seed = M.run_seed = seed + (unsigned)i;
		run_once();
		M.execution++;
		r.executions++;
		if (M.depth > r.max_choices)
			r.max_choices = M.depth;
	}
	M.scenario = NULL;
	return r;
}
