/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/barrier.h>

#include "check.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

/* Polls `f` with a counting waker, so the waker contract is checked too. */
static int poll_with(sb_barrier_wait *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_barrier_wait_poll(f, &w);
}

/* Arrives at `b` with a fresh wait `f` polled once with `c`. */
static int arrive(sb_barrier_wait *f, sb_barrier *b, counting_waker *c)
{
	sb_barrier_wait_init(f, b);
	return poll_with(f, c);
}

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	assert_int_equal(sizeof(sb_barrier), 32);
	assert_int_equal(sizeof(sb_barrier_wait), 56);
}

static void static_initialiser_makes_a_barrier_of_n_parties(void **state)
{
	(void)state;
	static sb_barrier b = SB_BARRIER_INIT(2);
	counting_waker c;
	counting_waker_init(&c);
	sb_barrier_wait first, second;
	assert_int_equal(arrive(&first, &b, &c), SB_PENDING);
	assert_int_equal(arrive(&second, &b, &c), 0);
	assert_int_equal(poll_with(&first, &c), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void init_rejects_zero_parties_and_more_than_the_maximum_leaving_the_barrier_as_it_was(void **state)
{
	(void)state;
	sb_barrier b;
	assert_int_equal(sb_barrier_init(&b, 3), 0);
	counting_waker c;
	counting_waker_init(&c);
	sb_barrier_wait f[3];
	assert_int_equal(arrive(&f[0], &b, &c), SB_PENDING);
	assert_int_equal(sb_barrier_init(&b, 0), -EINVAL);
	if (SB_BARRIER_MAX_PARTIES < SIZE_MAX)
		assert_int_equal(sb_barrier_init(&b, SB_BARRIER_MAX_PARTIES + 1), -EINVAL);
	/* still the barrier of 3 with one arrival */
	assert_int_equal(arrive(&f[1], &b, &c), SB_PENDING);
	assert_int_equal(arrive(&f[2], &b, &c), 0);
	assert_int_equal(poll_with(&f[0], &c), 0);
	assert_int_equal(poll_with(&f[1], &c), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
	assert_int_equal(sb_barrier_init(&b, SB_BARRIER_MAX_PARTIES), 0);
	assert_int_equal(arrive(&f[0], &b, &c), SB_PENDING);
	sb_barrier_wait_cancel(&f[0]);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void a_wait_on_a_barrier_of_zero_parties_fails_with_einval(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(0);
	counting_waker c;
	counting_waker_init(&c);
	sb_barrier_wait f;
	assert_int_equal(arrive(&f, &b, &c), -EINVAL);
	assert_int_equal(poll_with(&f, &c), -EINVAL);
	assert_false(sb_barrier_wait_is_leader(&f));
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(sb_barrier_wait_blocking(&b, SB_TIMEOUT_INFINITE), -EINVAL);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void every_wait_on_a_barrier_of_one_party_leads_at_once_without_cloning(void **state)
{
	(void)state;
	sb_barrier b;
	assert_int_equal(sb_barrier_init(&b, 1), 0);
	counting_waker c;
	counting_waker_init(&c);
	for (int i = 0; i < 3; i++) {
		sb_barrier_wait f;
		assert_int_equal(arrive(&f, &b, &c), 0);
		assert_true(sb_barrier_wait_is_leader(&f));
	}
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(sb_barrier_wait_blocking(&b, 0), SB_BARRIER_LEADER);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void the_nth_arrival_completes_the_generation_and_is_its_only_leader(void **state)
{
	(void)state;
	enum { N = 4 };
	sb_barrier b;
	assert_int_equal(sb_barrier_init(&b, N), 0);
	sb_barrier_wait f[N];
	counting_waker c[N];
	for (int i = 0; i < N - 1; i++) {
		counting_waker_init(&c[i]);
		assert_int_equal(arrive(&f[i], &b, &c[i]), SB_PENDING);
		assert_false(sb_barrier_wait_is_leader(&f[i]));
		assert_int_equal(atomic_load(&c[i].clones), 1);
	}
	assert_int_equal(sb_barrier_destroy(&b), -EBUSY);
	for (int i = 0; i < N - 1; i++) /* still waiting, and not woken */
		assert_int_equal(poll_with(&f[i], &c[i]), SB_PENDING);
	counting_waker_init(&c[N - 1]);
	assert_int_equal(arrive(&f[N - 1], &b, &c[N - 1]), 0);
	assert_true(sb_barrier_wait_is_leader(&f[N - 1]));
	assert_int_equal(atomic_load(&c[N - 1].clones), 0); /* the leader makes no clone */
	for (int i = 0; i < N - 1; i++) {
		assert_int_equal(atomic_load(&c[i].woken), 1);
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
		assert_false(sb_barrier_wait_is_leader(&f[i]));
		assert_int_equal(atomic_load(&c[i].live), 0);
		/* a completed wait answers the same again */
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
	}
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

/* What a wake of one wait saw when it polled another wait of the same generation. */
typedef struct peek {
	sb_barrier_wait *other;
	counting_waker *other_waker;
	int seen;
} peek;

static void poll_the_other_wait(void *arg)
{
	peek *p = arg;
	if (p->seen == SB_PENDING + 1) /* first wake only */
		p->seen = poll_with(p->other, p->other_waker);
}

/*
 * The leader releases its generation atomically: a wait it has not woken yet
 * (past the first wake batch of 32) is complete when another's wake polls it.
 */
static void every_wait_of_a_generation_is_complete_once_the_leader_locks_even_past_a_wake_batch(void **state)
{
	(void)state;
	enum { N = 49 };
	sb_barrier b;
	assert_int_equal(sb_barrier_init(&b, N), 0);
	sb_barrier_wait f[N];
	counting_waker c[N];
	for (int i = 0; i < N - 1; i++) {
		counting_waker_init(&c[i]);
		assert_int_equal(arrive(&f[i], &b, &c[i]), SB_PENDING);
	}
	peek p = { &f[N - 2], &c[N - 2], SB_PENDING + 1 };
	c[0].on_wake = poll_the_other_wait;
	c[0].hook_arg = &p;
	counting_waker_init(&c[N - 1]);
	assert_int_equal(arrive(&f[N - 1], &b, &c[N - 1]), 0);
	assert_int_equal(p.seen, 0); /* not SB_PENDING */
	int leaders = 0;
	for (int i = 0; i < N; i++) {
		assert_int_equal(poll_with(&f[i], &c[i]), 0);
		leaders += sb_barrier_wait_is_leader(&f[i]);
		assert_int_equal(atomic_load(&c[i].live), 0);
	}
	assert_int_equal(leaders, 1);
	/* the last one completed by its own poll: the leader never woke it */
	assert_int_equal(atomic_load(&c[N - 2].wakes), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void the_barrier_is_reused_generation_after_generation_with_one_leader_each(void **state)
{
	(void)state;
	enum { N = 3, ROUNDS = 5 };
	sb_barrier b = SB_BARRIER_INIT(N);
	counting_waker c;
	counting_waker_init(&c);
	for (int r = 0; r < ROUNDS; r++) {
		sb_barrier_wait f[N];
		for (int i = 0; i < N; i++)
			assert_int_equal(arrive(&f[i], &b, &c), i < N - 1 ? SB_PENDING : 0);
		int leaders = 0;
		for (int i = 0; i < N; i++) {
			assert_int_equal(poll_with(&f[i], &c), 0);
			leaders += sb_barrier_wait_is_leader(&f[i]);
		}
		assert_int_equal(leaders, 1);
		assert_true(sb_barrier_wait_is_leader(&f[N - 1]));
	}
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

/* A released party arriving again before the others observed their release. */
static void a_wait_that_arrives_after_its_generation_completed_belongs_to_the_next(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(2);
	counting_waker ca, cb;
	counting_waker_init(&ca);
	counting_waker_init(&cb);
	sb_barrier_wait a1, b1, a2, b2;
	assert_int_equal(arrive(&a1, &b, &ca), SB_PENDING);
	assert_int_equal(arrive(&b1, &b, &cb), 0); /* leads the first generation */
	assert_int_equal(arrive(&b2, &b, &cb), SB_PENDING); /* the second's first */
	assert_int_equal(poll_with(&a1, &ca), 0);
	assert_int_equal(poll_with(&b2, &cb), SB_PENDING);
	assert_int_equal(arrive(&a2, &b, &ca), 0); /* leads the second */
	assert_int_equal(poll_with(&b2, &cb), 0);
	assert_true(sb_barrier_wait_is_leader(&b1));
	assert_true(sb_barrier_wait_is_leader(&a2));
	assert_false(sb_barrier_wait_is_leader(&a1));
	assert_false(sb_barrier_wait_is_leader(&b2));
	assert_int_equal(atomic_load(&ca.live) + atomic_load(&cb.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void cancelling_a_waiting_party_withdraws_its_arrival_and_the_leader_stays_the_last(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(3);
	counting_waker c[4];
	sb_barrier_wait f[4];
	for (int i = 0; i < 4; i++)
		counting_waker_init(&c[i]);
	assert_int_equal(arrive(&f[0], &b, &c[0]), SB_PENDING);
	assert_int_equal(arrive(&f[1], &b, &c[1]), SB_PENDING);
	sb_barrier_wait_cancel(&f[0]);
	assert_int_equal(atomic_load(&c[0].drops), 1);
	assert_int_equal(atomic_load(&c[0].live), 0);
	assert_int_equal(poll_with(&f[0], &c[0]), -ECANCELED);
	/* f[1] alone arrived: the third arrival is needed again */
	assert_int_equal(arrive(&f[2], &b, &c[2]), SB_PENDING);
	assert_int_equal(poll_with(&f[1], &c[1]), SB_PENDING);
	assert_int_equal(arrive(&f[3], &b, &c[3]), 0);
	assert_true(sb_barrier_wait_is_leader(&f[3]));
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(poll_with(&f[2], &c[2]), 0);
	assert_false(sb_barrier_wait_is_leader(&f[1]));
	assert_false(sb_barrier_wait_is_leader(&f[2]));
	assert_false(sb_barrier_wait_is_leader(&f[0]));
	assert_int_equal(atomic_load(&c[0].wakes), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

/* The barrier's "cancel of a granted waiter": its generation keeps its completion. */
static void cancelling_a_party_whose_generation_completed_changes_nothing(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(2);
	counting_waker c[4];
	sb_barrier_wait f[4];
	for (int i = 0; i < 4; i++)
		counting_waker_init(&c[i]);
	assert_int_equal(arrive(&f[0], &b, &c[0]), SB_PENDING);
	assert_int_equal(arrive(&f[1], &b, &c[1]), 0);
	sb_barrier_wait_cancel(&f[0]); /* released, never observed */
	assert_int_equal(atomic_load(&c[0].woken), 1);
	assert_int_equal(atomic_load(&c[0].drops), 0);
	assert_int_equal(poll_with(&f[0], &c[0]), -ECANCELED);
	assert_true(sb_barrier_wait_is_leader(&f[1]));
	/* the next generation starts from zero arrivals: two are needed */
	assert_int_equal(arrive(&f[2], &b, &c[2]), SB_PENDING);
	assert_int_equal(arrive(&f[3], &b, &c[3]), 0);
	assert_int_equal(poll_with(&f[2], &c[2]), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void cancel_of_an_idle_or_completed_wait_does_nothing(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(2);
	counting_waker c;
	counting_waker_init(&c);
	sb_barrier_wait idle, f, leader;
	sb_barrier_wait_init(&idle, &b);
	sb_barrier_wait_cancel(&idle); /* never arrived: counts nothing */
	assert_int_equal(poll_with(&idle, &c), -ECANCELED);
	assert_int_equal(arrive(&f, &b, &c), SB_PENDING);
	assert_int_equal(arrive(&leader, &b, &c), 0);
	assert_int_equal(poll_with(&f, &c), 0);
	sb_barrier_wait_cancel(&f);
	sb_barrier_wait_cancel(&leader);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(poll_with(&leader, &c), 0);
	assert_true(sb_barrier_wait_is_leader(&leader));
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void destroy_is_refused_while_a_wait_is_registered_and_the_barrier_keeps_working(void **state)
{
	(void)state;
	sb_barrier b;
	assert_int_equal(sb_barrier_init(&b, 2), 0);
	counting_waker c;
	counting_waker_init(&c);
	sb_barrier_wait f, g;
	assert_int_equal(arrive(&f, &b, &c), SB_PENDING);
	assert_int_equal(sb_barrier_destroy(&b), -EBUSY);
	assert_int_equal(arrive(&g, &b, &c), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
	/* the waiter completed before the destroy: its poll reads only its node */
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(atomic_load(&c.live), 0);
}

static void repolling_with_a_new_waker_swaps_the_clone_and_the_new_one_is_woken(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(2);
	counting_waker c, d, e;
	counting_waker_init(&c);
	counting_waker_init(&d);
	counting_waker_init(&e);
	sb_barrier_wait f, g;
	assert_int_equal(arrive(&f, &b, &c), SB_PENDING);
	assert_int_equal(poll_with(&f, &c), SB_PENDING);
	assert_int_equal(atomic_load(&c.clones), 1); /* the same waker clones nothing */
	assert_int_equal(poll_with(&f, &d), SB_PENDING);
	assert_int_equal(atomic_load(&c.drops), 1);
	assert_int_equal(atomic_load(&d.clones), 1);
	assert_int_equal(arrive(&g, &b, &e), 0);
	assert_int_equal(atomic_load(&d.woken), 1);
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(atomic_load(&c.live) + atomic_load(&d.live) + atomic_load(&e.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

/* A hook that arrives at the barrier with another wait, from inside a waker callback. */
typedef struct arrival {
	sb_barrier *barrier;
	sb_barrier_wait *f;
	counting_waker *c;
	int result;
	int calls;
} arrival;

static void arrive_from_a_callback(void *arg)
{
	arrival *a = arg;
	if (a->calls++ == 0)
		a->result = arrive(a->f, a->barrier, a->c);
}

static void a_wait_whose_waker_clone_arrives_at_the_same_barrier_completes_without_deadlock(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(2);
	counting_waker c, d;
	counting_waker_init(&c);
	counting_waker_init(&d);
	sb_barrier_wait first, inner;
	arrival a = { &b, &inner, &d, 99, 0 };
	c.on_clone = arrive_from_a_callback;
	c.hook_arg = &a;
	/* the clone, before the lock, arrives first: this poll is the second */
	assert_int_equal(arrive(&first, &b, &c), 0);
	assert_int_equal(a.result, SB_PENDING);
	assert_true(sb_barrier_wait_is_leader(&first));
	assert_int_equal(poll_with(&inner, &d), 0);
	assert_int_equal(atomic_load(&c.live) + atomic_load(&d.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void repolling_with_a_new_waker_whose_clone_arrives_does_not_deadlock(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(3);
	counting_waker c, d, e;
	counting_waker_init(&c);
	counting_waker_init(&d);
	counting_waker_init(&e);
	sb_barrier_wait f, inner, last;
	assert_int_equal(arrive(&f, &b, &c), SB_PENDING);
	arrival a = { &b, &inner, &e, 99, 0 };
	d.on_clone = arrive_from_a_callback;
	d.hook_arg = &a;
	assert_int_equal(poll_with(&f, &d), SB_PENDING);
	assert_int_equal(a.result, SB_PENDING);
	assert_int_equal(arrive(&last, &b, &e), 0);
	assert_int_equal(poll_with(&f, &d), 0);
	assert_int_equal(poll_with(&inner, &e), 0);
	assert_int_equal(atomic_load(&d.woken), 1);
	assert_int_equal(atomic_load(&c.live) + atomic_load(&d.live) + atomic_load(&e.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void a_waker_whose_wake_arrives_again_joins_the_next_generation(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(2);
	counting_waker c, d;
	counting_waker_init(&c);
	counting_waker_init(&d);
	sb_barrier_wait f, g, again, next;
	arrival a = { &b, &again, &d, 99, 0 };
	c.on_wake = arrive_from_a_callback;
	c.hook_arg = &a;
	assert_int_equal(arrive(&f, &b, &c), SB_PENDING);
	assert_int_equal(arrive(&g, &b, &d), 0); /* wakes f, whose wake arrives again */
	assert_int_equal(a.result, SB_PENDING);   /* in the next generation */
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(poll_with(&again, &d), SB_PENDING);
	assert_int_equal(arrive(&next, &b, &d), 0);
	assert_int_equal(poll_with(&again, &d), 0);
	assert_int_equal(atomic_load(&c.live) + atomic_load(&d.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void blocking_wait_times_out_and_withdraws_its_arrival(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(2);
	assert_int_equal(sb_barrier_wait_blocking(&b, 1000000), -ETIMEDOUT);
	assert_int_equal(sb_barrier_wait_blocking(&b, 0), -ETIMEDOUT);
	counting_waker c;
	counting_waker_init(&c);
	sb_barrier_wait f, g;
	assert_int_equal(arrive(&f, &b, &c), SB_PENDING); /* the first arrival again */
	assert_int_equal(arrive(&g, &b, &c), 0);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void blocking_wait_of_the_last_party_returns_the_leader_flag_at_once(void **state)
{
	(void)state;
	sb_barrier b = SB_BARRIER_INIT(3);
	counting_waker c;
	counting_waker_init(&c);
	sb_barrier_wait f, g;
	assert_int_equal(arrive(&f, &b, &c), SB_PENDING);
	assert_int_equal(arrive(&g, &b, &c), SB_PENDING);
	assert_int_equal(sb_barrier_wait_blocking(&b, 0), SB_BARRIER_LEADER);
	assert_int_equal(poll_with(&f, &c), 0);
	assert_int_equal(poll_with(&g, &c), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

/* --- threads --- */

enum { PARTIES = 4, ROUNDS = 3000 };

typedef struct party_run {
	sb_barrier b;
	atomic_int leaders[ROUNDS];
	int data[2][PARTIES]; /* round r writes row r % 2 before arriving */
} party_run;

static party_run run;

/* One party for ROUNDS rounds, by blocking wait (odd ids) or by future. */
static void *party(void *p)
{
	int id = (int)(intptr_t)p;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	for (int r = 0; r < ROUNDS; r++) {
		run.data[r % 2][id] = r;
		bool leader;
		if (id % 2) {
			int res = sb_barrier_wait_blocking(&run.b, SB_TIMEOUT_INFINITE);
			CHECK(res == 0 || res == SB_BARRIER_LEADER);
			leader = res == SB_BARRIER_LEADER;
		} else {
			sb_barrier_wait f;
			sb_barrier_wait_init(&f, &run.b);
			int wakes = atomic_load(&c.wakes);
			while (sb_barrier_wait_poll(&f, &w) == SB_PENDING) {
				while (atomic_load(&c.wakes) == wakes)
					sched_yield();
				wakes = atomic_load(&c.wakes);
			}
			leader = sb_barrier_wait_is_leader(&f);
		}
		if (leader)
			atomic_fetch_add(&run.leaders[r], 1);
		/* every party's write of this round happened-before our completion
		 * (a race ThreadSanitizer reports otherwise) */
		for (int j = 0; j < PARTIES; j++)
			CHECK(run.data[r % 2][j] == r);
	}
	/* The thread that woke us drops its clone after the wake: wait
	 * for it (a lost drop hangs here and the watchdog fails the test). */
	while (atomic_load(&c.live) != 0)
		sched_yield();
	return NULL;
}

static void parties_on_threads_meet_every_round_with_one_leader_and_see_each_others_writes(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "barrier parties across threads");
	assert_int_equal(sb_barrier_init(&run.b, PARTIES), 0);
	pthread_t t[PARTIES];
	for (int i = 0; i < PARTIES; i++)
		assert_int_equal(pthread_create(&t[i], NULL, party, (void *)(intptr_t)i), 0);
	for (int i = 0; i < PARTIES; i++)
		pthread_join(t[i], NULL);
	sb_watchdog_stop(&wd);
	for (int r = 0; r < ROUNDS; r++)
		assert_int_equal(atomic_load(&run.leaders[r]), 1);
	assert_int_equal(sb_barrier_destroy(&run.b), 0);
}

/*
 * A blocking wait with a short timeout, retried, racing another party's
 * arrival: -ETIMEDOUT always withdrew the arrival, so the pair completes
 * exactly once, with one leader, and leaves no arrival behind.
 */
typedef struct timed {
	sb_barrier b;
	atomic_int result;
} timed;

static void *timed_party(void *p)
{
	timed *t = p;
	int r;
	while ((r = sb_barrier_wait_blocking(&t->b, 2000)) == -ETIMEDOUT)
		;
	atomic_store(&t->result, r);
	return NULL;
}

static void a_blocking_wait_timing_out_as_its_generation_completes_returns_the_completion(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "barrier timeouts racing completion");
	counting_waker c;
	counting_waker_init(&c);
	for (int i = 0; i < 400; i++) {
		timed t = { SB_BARRIER_INIT(2), -1 };
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, timed_party, &t), 0);
		for (int spin = 0; spin < i % 50; spin++)
			sched_yield();
		sb_barrier_wait f;
		int first = arrive(&f, &t.b, &c);
		pthread_join(th, NULL);
		int r = atomic_load(&t.result);
		if (first == 0) { /* we led: the thread's arrival counted */
			assert_int_equal(r, 0);
		} else {          /* the thread arrived after us and led */
			assert_int_equal(first, SB_PENDING);
			assert_int_equal(r, SB_BARRIER_LEADER);
			assert_int_equal(poll_with(&f, &c), 0);
		}
		/* no arrival left behind: the next one is the first of two again */
		sb_barrier_wait g;
		assert_int_equal(arrive(&g, &t.b, &c), SB_PENDING);
		sb_barrier_wait_cancel(&g);
		assert_int_equal(sb_barrier_destroy(&t.b), 0);
	}
	sb_watchdog_stop(&wd);
	assert_int_equal(atomic_load(&c.live), 0);
}

/* A never-initialised future is bad input, not a completed one. */
static int barrier_wait_poll_typed(void *f, const sb_waker *w)
{
	return sb_barrier_wait_poll(f, w);
}

static void a_zeroed_future_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	sb_barrier b;
	assert_int_equal(sb_barrier_init(&b, 2), 0);
	sb_barrier_wait f;
	assert_zeroed_future_is_refused(&f, sizeof f, &sb_barrier_wait_ops, barrier_wait_poll_typed);
	assert_int_equal(sb_barrier_destroy(&b), 0); /* no arrival counted */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(a_zeroed_future_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(static_initialiser_makes_a_barrier_of_n_parties),
		cmocka_unit_test(init_rejects_zero_parties_and_more_than_the_maximum_leaving_the_barrier_as_it_was),
		cmocka_unit_test(a_wait_on_a_barrier_of_zero_parties_fails_with_einval),
		cmocka_unit_test(every_wait_on_a_barrier_of_one_party_leads_at_once_without_cloning),
		cmocka_unit_test(the_nth_arrival_completes_the_generation_and_is_its_only_leader),
		cmocka_unit_test(every_wait_of_a_generation_is_complete_once_the_leader_locks_even_past_a_wake_batch),
		cmocka_unit_test(the_barrier_is_reused_generation_after_generation_with_one_leader_each),
		cmocka_unit_test(a_wait_that_arrives_after_its_generation_completed_belongs_to_the_next),
		cmocka_unit_test(cancelling_a_waiting_party_withdraws_its_arrival_and_the_leader_stays_the_last),
		cmocka_unit_test(cancelling_a_party_whose_generation_completed_changes_nothing),
		cmocka_unit_test(cancel_of_an_idle_or_completed_wait_does_nothing),
		cmocka_unit_test(destroy_is_refused_while_a_wait_is_registered_and_the_barrier_keeps_working),
		cmocka_unit_test(repolling_with_a_new_waker_swaps_the_clone_and_the_new_one_is_woken),
		cmocka_unit_test(a_wait_whose_waker_clone_arrives_at_the_same_barrier_completes_without_deadlock),
		cmocka_unit_test(repolling_with_a_new_waker_whose_clone_arrives_does_not_deadlock),
		cmocka_unit_test(a_waker_whose_wake_arrives_again_joins_the_next_generation),
		cmocka_unit_test(blocking_wait_times_out_and_withdraws_its_arrival),
		cmocka_unit_test(blocking_wait_of_the_last_party_returns_the_leader_flag_at_once),
		cmocka_unit_test(parties_on_threads_meet_every_round_with_one_leader_and_see_each_others_writes),
		cmocka_unit_test(a_blocking_wait_timing_out_as_its_generation_completes_returns_the_completion),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
