/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/loop.h: the wake target, the ready queue and its doorbell, the
 * waker, release on the loop's thread, and the shutdown answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <syncband/loop.h>
#include <syncband/semaphore.h>

#include "check.h"
#include "watchdog.h"

/* ------------------------------------------------------------ doorbells */

/* Counts rings; for single-threaded tests that run the loop by hand. */
static void count_ring(void *ctx)
{
	atomic_fetch_add((atomic_uint *)ctx, 1);
}

/* A doorbell a loop thread sleeps on, for the multi-threaded tests. */
typedef struct doorbell {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool rung;
	atomic_uint rings;
} doorbell;

static void doorbell_init(doorbell *d)
{
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	d->rung = false;
	atomic_init(&d->rings, 0);
}

static void doorbell_ring(void *ctx)
{
	doorbell *d = ctx;
	atomic_fetch_add(&d->rings, 1);
	pthread_mutex_lock(&d->mu);
	d->rung = true;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
}

/* Sleeps until rung, and clears the ring before the loop runs. */
static void doorbell_wait(doorbell *d)
{
	pthread_mutex_lock(&d->mu);
	while (!d->rung)
		pthread_cond_wait(&d->cv, &d->mu);
	d->rung = false;
	pthread_mutex_unlock(&d->mu);
}

static void doorbell_destroy(doorbell *d)
{
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
}

/* Runs `l` on this thread until it is idle, sleeping on its doorbell. */
static void run_until_idle(sb_loop *l, doorbell *d)
{
	for (;;) {
		sb_loop_run_ready(l);
		if (sb_loop_idle(l))
			return;
		doorbell_wait(d);
	}
}

/* ------------------------------------------------------------ tasks */

/*
 * A scripted task: counts its polls, records the order in which tasks were
 * polled, and does what its fields say.
 */
typedef struct script_task {
	sb_loop_task task;
	int label;              /* recorded in `order` at each poll */
	int polls;
	int finish_after;       /* finish at this poll (1 = the first) */
	bool wake_self_once;    /* the first poll wakes its own task */
	sb_loop_task *wake_other; /* the first poll wakes this task */
	unsigned rings_seen;    /* the ring count during that first poll */
	atomic_uint *rings;
	sb_waker kept;          /* a clone the poll keeps past completion */
	bool keep_clone;
	atomic_int released;
	pthread_t released_on;
} script_task;

static int order[16];
static int order_len;

static int script_poll(sb_loop_task *t, const sb_waker *w)
{
	script_task *s = SB_CONTAINER_OF(t, script_task, task);
	s->polls++;
	if (order_len < 16)
		order[order_len++] = s->label;
	if (s->polls == 1) {
		if (s->wake_self_once)
			sb_loop_wake(t);
		if (s->wake_other)
			sb_loop_wake(s->wake_other);
		if (s->rings)
			s->rings_seen = atomic_load(s->rings);
		if (s->keep_clone)
			s->kept = sb_waker_clone(w);
	}
	return s->polls >= s->finish_after ? 0 : SB_PENDING;
}

static void script_release(sb_loop_task *t)
{
	script_task *s = SB_CONTAINER_OF(t, script_task, task);
	s->released_on = pthread_self();
	atomic_fetch_add(&s->released, 1);
}

static void script_init(script_task *s, int finish_after)
{
	*s = (script_task){ .finish_after = finish_after };
	atomic_init(&s->released, 0);
	sb_loop_task_init(&s->task, script_poll, script_release);
}

/* ------------------------------------------------------------ basics */

static void spawn_queues_the_first_poll_and_rings_once(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task a, b;
	script_init(&a, 1);
	script_init(&b, 1);
	assert_int_equal(sb_loop_spawn(&loop, &a.task), 0);
	assert_int_equal(sb_loop_spawn(&loop, &b.task), 0);
	assert_int_equal(atomic_load(&rings), 1);
	assert_int_equal(a.polls, 0); /* spawn does not poll */
	assert_false(sb_loop_idle(&loop));
	assert_int_equal(sb_loop_run_ready(&loop), 2);
	assert_int_equal(a.polls, 1);
	assert_int_equal(b.polls, 1);
	assert_int_equal(atomic_load(&a.released), 1);
	assert_int_equal(atomic_load(&b.released), 1);
	assert_true(sb_loop_idle(&loop));
	assert_int_equal(atomic_load(&rings), 1); /* nothing was left for later */
}

static void tasks_are_polled_in_the_order_they_were_queued(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task t[5];
	order_len = 0;
	for (int i = 0; i < 5; i++) {
		script_init(&t[i], 2);
		t[i].label = i;
	}
	for (int i = 0; i < 5; i++)
		assert_int_equal(sb_loop_spawn(&loop, &t[i].task), 0);
	assert_int_equal(sb_loop_run_ready(&loop), 5);
	/* Woken in another order than spawned: polled in the order woken. */
	static const int woken[5] = { 3, 0, 4, 1, 2 };
	for (int i = 0; i < 5; i++)
		sb_loop_wake(&t[woken[i]].task);
	assert_int_equal(sb_loop_run_ready(&loop), 5);
	assert_int_equal(order_len, 10);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(order[i], i);
		assert_int_equal(order[5 + i], woken[i]);
	}
	assert_true(sb_loop_idle(&loop));
}

static void spawn_refuses_a_task_without_poll_or_still_referenced(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	sb_loop_task bare;
	sb_loop_task_init(&bare, NULL, NULL);
	assert_int_equal(sb_loop_spawn(&loop, &bare), -EINVAL);
	script_task s;
	script_init(&s, 2);
	assert_int_equal(sb_loop_spawn(&loop, &s.task), 0);
	assert_int_equal(sb_loop_spawn(&loop, &s.task), -EBUSY); /* queued */
	sb_loop_run_ready(&loop);
	assert_int_equal(sb_loop_spawn(&loop, &s.task), -EBUSY); /* unfinished */
	sb_loop_wake(&s.task);
	sb_loop_run_ready(&loop);
	assert_int_equal(atomic_load(&s.released), 1);
	assert_true(sb_loop_idle(&loop));
	/* Released: it may be spawned again. */
	s.polls = 0;
	assert_int_equal(sb_loop_spawn(&loop, &s.task), 0);
	sb_loop_run_ready(&loop);
	sb_loop_wake(&s.task);
	sb_loop_run_ready(&loop);
	assert_int_equal(atomic_load(&s.released), 2);
	assert_true(sb_loop_idle(&loop));
}

static void wakes_of_a_queued_task_merge_into_one_poll(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task s;
	script_init(&s, 3);
	sb_loop_spawn(&loop, &s.task);
	sb_loop_run_ready(&loop);
	assert_int_equal(s.polls, 1);
	unsigned before = atomic_load(&rings);
	sb_waker w = sb_loop_task_waker(&s.task);
	sb_waker_wake_by_ref(&w);
	sb_waker_wake_by_ref(&w);
	sb_loop_wake(&s.task);
	assert_int_equal(atomic_load(&rings), before + 1); /* one ring for the three */
	assert_int_equal(sb_loop_run_ready(&loop), 1);
	assert_int_equal(s.polls, 2);
	assert_int_equal(sb_loop_run_ready(&loop), 0);
	sb_loop_wake(&s.task);
	sb_loop_run_ready(&loop);
	assert_true(sb_loop_idle(&loop));
}

static void a_wake_during_its_poll_polls_it_again_in_the_same_run_without_a_ring(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task s;
	script_init(&s, 2);
	s.wake_self_once = true;
	s.rings = &rings;
	sb_loop_spawn(&loop, &s.task);
	assert_int_equal(atomic_load(&rings), 1);
	assert_int_equal(sb_loop_run_ready(&loop), 2);
	assert_int_equal(s.polls, 2);       /* polled again before the run returned */
	assert_int_equal(s.rings_seen, 1);  /* the wake itself did not ring */
	assert_int_equal(atomic_load(&rings), 1); /* nor did the loop, after it */
	assert_int_equal(atomic_load(&s.released), 1);
	assert_true(sb_loop_idle(&loop));
}

static void a_wake_of_another_task_on_the_loop_thread_runs_it_in_the_same_run_without_a_ring(
	void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task a, b;
	script_init(&a, 1);
	script_init(&b, 2);
	a.label = 1;
	b.label = 2;
	sb_loop_spawn(&loop, &b.task);
	sb_loop_run_ready(&loop); /* b waits */
	a.wake_other = &b.task;
	a.rings = &rings;
	unsigned before = atomic_load(&rings);
	sb_loop_spawn(&loop, &a.task);
	assert_int_equal(atomic_load(&rings), before + 1);
	order_len = 0;
	assert_int_equal(sb_loop_run_ready(&loop), 2);
	assert_int_equal(a.rings_seen, before + 1);
	assert_int_equal(atomic_load(&rings), before + 1);
	assert_int_equal(b.polls, 2);
	assert_int_equal(order_len, 2); /* a, then the b it woke */
	assert_int_equal(order[0], a.label);
	assert_int_equal(order[1], b.label);
	assert_true(sb_loop_idle(&loop));
}

static void a_finished_task_is_not_polled_again_and_a_late_wake_releases_it(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task s;
	script_init(&s, 1);
	s.keep_clone = true; /* as a primitive whose grant raced completion */
	sb_loop_spawn(&loop, &s.task);
	sb_loop_run_ready(&loop);
	assert_int_equal(s.polls, 1);
	assert_int_equal(atomic_load(&s.released), 0); /* the clone still holds it */
	assert_false(sb_loop_idle(&loop));
	unsigned before = atomic_load(&rings);
	sb_waker_wake(s.kept); /* the late wake, consuming the clone */
	assert_int_equal(atomic_load(&rings), before + 1); /* to release it */
	assert_int_equal(atomic_load(&s.released), 0);  /* not here: on the loop */
	assert_int_equal(sb_loop_run_ready(&loop), 0);
	assert_int_equal(s.polls, 1);
	assert_int_equal(atomic_load(&s.released), 1);
	assert_true(sb_loop_idle(&loop));
}

static void a_wake_by_reference_of_a_finished_task_neither_queues_it_nor_rings(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task s;
	script_init(&s, 1);
	s.keep_clone = true; /* a waker a primitive still holds after completion */
	sb_loop_spawn(&loop, &s.task);
	assert_int_equal(sb_loop_run_ready(&loop), 1);
	unsigned before = atomic_load(&rings);
	sb_waker_wake_by_ref(&s.kept); /* keeps the clone: nothing to release yet */
	sb_loop_wake(&s.task);
	assert_int_equal(atomic_load(&rings), before); /* nothing was queued */
	size_t polled = 99;
	assert_true(sb_loop_run(&loop, SB_LOOP_BUDGET, &polled));
	assert_int_equal(polled, 0);
	assert_int_equal(s.polls, 1);
	assert_int_equal(atomic_load(&s.released), 0); /* the clone still holds it */
	sb_waker_drop(s.kept);
	assert_int_equal(atomic_load(&rings), before + 1); /* the release's push */
	assert_int_equal(sb_loop_run_ready(&loop), 0);
	assert_int_equal(s.polls, 1);
	assert_int_equal(atomic_load(&s.released), 1);
	assert_true(sb_loop_idle(&loop));
}

static void a_wake_that_raced_the_last_poll_drops_its_queue_reference(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task s;
	script_init(&s, 1);
	s.wake_self_once = true; /* queued again by its own last poll */
	sb_loop_spawn(&loop, &s.task);
	/* The run takes the queued task again, finds it finished, drops the
	 * queue's reference and releases it, without polling it. */
	assert_int_equal(sb_loop_run_ready(&loop), 1);
	assert_int_equal(s.polls, 1);
	assert_int_equal(atomic_load(&s.released), 1);
	assert_int_equal(atomic_load(&rings), 1);
	assert_true(sb_loop_idle(&loop));
}

struct drop_later {
	sb_waker clone;
	bool wake;
};

static void *drop_clone_thread(void *arg)
{
	struct drop_later *d = arg;
	if (d->wake)
		sb_waker_wake(d->clone);
	else
		sb_waker_drop(d->clone);
	return NULL;
}

static void release_runs_on_the_loop_thread_when_the_last_clone_goes_elsewhere(void **state)
{
	(void)state;
	for (int wake = 0; wake < 2; wake++) {
		atomic_uint rings = 0;
		sb_loop loop;
		sb_loop_init(&loop, count_ring, &rings);
		script_task s;
		script_init(&s, 1);
		s.keep_clone = true;
		sb_loop_spawn(&loop, &s.task);
		sb_loop_run_ready(&loop);
		struct drop_later d = { s.kept, wake };
		pthread_t th;
		pthread_create(&th, NULL, drop_clone_thread, &d);
		pthread_join(th, NULL);
		assert_int_equal(atomic_load(&s.released), 0);
		assert_int_equal(atomic_load(&rings), 2);
		assert_false(sb_loop_idle(&loop));
		sb_loop_run_ready(&loop);
		assert_int_equal(atomic_load(&s.released), 1);
		assert_true(pthread_equal(s.released_on, pthread_self()));
		assert_true(sb_loop_idle(&loop));
	}
}

static void idle_is_false_while_any_clone_is_held(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	assert_true(sb_loop_idle(&loop)); /* nothing spawned */
	script_task s;
	script_init(&s, 2);
	sb_loop_spawn(&loop, &s.task);
	sb_loop_run_ready(&loop);
	sb_waker w = sb_loop_task_waker(&s.task);
	sb_waker c1 = sb_waker_clone(&w), c2 = sb_waker_clone(&c1);
	sb_loop_wake(&s.task);
	sb_loop_run_ready(&loop); /* finished; two clones remain */
	assert_int_equal(s.polls, 2);
	assert_false(sb_loop_idle(&loop));
	sb_waker_drop(c1);
	sb_loop_run_ready(&loop);
	assert_false(sb_loop_idle(&loop));
	assert_int_equal(atomic_load(&s.released), 0);
	sb_waker_wake_by_ref(&c2); /* finished: does not queue a poll */
	assert_int_equal(sb_loop_run_ready(&loop), 0);
	sb_waker_drop(c2);
	sb_loop_run_ready(&loop);
	assert_int_equal(atomic_load(&s.released), 1);
	assert_true(sb_loop_idle(&loop));
}

static void a_task_without_release_can_be_reused_once_idle(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task s;
	script_init(&s, 1);
	sb_loop_task_init(&s.task, script_poll, NULL);
	sb_loop_spawn(&loop, &s.task);
	sb_loop_run_ready(&loop);
	assert_true(sb_loop_idle(&loop));
	assert_int_equal(sb_loop_spawn(&loop, &s.task), 0);
	sb_loop_run_ready(&loop);
	assert_int_equal(s.polls, 2);
	assert_true(sb_loop_idle(&loop));
}

/* ------------------------------------------------------------ the budget */

/* A task that wakes itself at every poll until told to stop (a yield). */
typedef struct yield_task {
	sb_loop_task task;
	int polls;
	int stop_at;   /* finish at this poll */
	atomic_uint *rings;
	unsigned rings_at_last_poll;
} yield_task;

static int yield_poll(sb_loop_task *t, const sb_waker *w)
{
	yield_task *y = SB_CONTAINER_OF(t, yield_task, task);
	y->polls++;
	y->rings_at_last_poll = atomic_load(y->rings);
	if (y->polls == y->stop_at)
		return 0;
	sb_waker_wake_by_ref(w);
	return SB_PENDING;
}

static void run_ready_stops_after_its_budget_and_rings_for_the_tasks_left(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	yield_task y = { .stop_at = 3 * (int)SB_LOOP_BUDGET, .rings = &rings };
	sb_loop_task_init(&y.task, yield_poll, NULL);
	sb_loop_spawn(&loop, &y.task);
	assert_int_equal(atomic_load(&rings), 1);
	/* One task a batch: exactly the budget's polls. */
	assert_int_equal(sb_loop_run_ready(&loop), SB_LOOP_BUDGET);
	assert_int_equal(y.polls, SB_LOOP_BUDGET);
	assert_int_equal(y.rings_at_last_poll, 1); /* no ring while it ran */
	assert_int_equal(atomic_load(&rings), 2);  /* one when it stopped with y queued */
	assert_false(sb_loop_idle(&loop));
	size_t polled = 0;
	assert_false(sb_loop_run(&loop, SB_LOOP_BUDGET, &polled)); /* says: stopped for it */
	assert_int_equal(polled, SB_LOOP_BUDGET);
	assert_int_equal(atomic_load(&rings), 3);
	assert_true(sb_loop_run(&loop, SB_LOOP_BUDGET, &polled)); /* says: drained */
	assert_int_equal(polled, SB_LOOP_BUDGET);
	assert_int_equal(y.polls, 3 * SB_LOOP_BUDGET);
	assert_int_equal(atomic_load(&rings), 3);
	assert_true(sb_loop_idle(&loop));
}

static void run_says_it_drained_the_queue_when_the_work_ends_within_the_budget(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	yield_task y = { .stop_at = 10, .rings = &rings };
	sb_loop_task_init(&y.task, yield_poll, NULL);
	sb_loop_spawn(&loop, &y.task);
	size_t polled = 0;
	assert_true(sb_loop_run(&loop, 10, &polled)); /* the tenth poll finished it */
	assert_int_equal(polled, 10);
	assert_int_equal(atomic_load(&rings), 1);
	assert_true(sb_loop_idle(&loop));
	assert_true(sb_loop_run(&loop, 10, NULL)); /* nothing queued: nothing polled */
	assert_int_equal(atomic_load(&rings), 1);
}

static void a_budget_of_zero_polls_the_tasks_queued_at_the_call_once_each(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	yield_task y[3];
	for (int i = 0; i < 3; i++) {
		y[i] = (yield_task){ .stop_at = 2, .rings = &rings };
		sb_loop_task_init(&y[i].task, yield_poll, NULL);
		sb_loop_spawn(&loop, &y[i].task);
	}
	size_t polled = 0;
	assert_false(sb_loop_run(&loop, 0, &polled));
	assert_int_equal(polled, 3); /* the batch is run whole */
	for (int i = 0; i < 3; i++)
		assert_int_equal(y[i].polls, 1);
	assert_int_equal(atomic_load(&rings), 2); /* they woke themselves: rung once */
	assert_true(sb_loop_run(&loop, 0, &polled));
	assert_int_equal(polled, 3);
	assert_true(sb_loop_idle(&loop));
}

struct wake_from_thread {
	sb_loop_task task;
	sb_loop_task *other;
	int polls;
};

static void *wake_task_thread(void *arg)
{
	sb_loop_wake(arg);
	return NULL;
}

/* Its first poll has another thread wake `other`, and waits for that wake. */
static int wake_from_thread_poll(sb_loop_task *t, const sb_waker *w)
{
	(void)w;
	struct wake_from_thread *x = SB_CONTAINER_OF(t, struct wake_from_thread, task);
	if (x->polls++ == 0) {
		pthread_t th;
		pthread_create(&th, NULL, wake_task_thread, x->other);
		pthread_join(th, NULL);
	}
	return 0;
}

static void a_wake_from_another_thread_during_the_run_is_run_without_a_ring(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task b;
	script_init(&b, 2);
	sb_loop_spawn(&loop, &b.task);
	sb_loop_run_ready(&loop); /* b waits */
	struct wake_from_thread a = { .other = &b.task };
	sb_loop_task_init(&a.task, wake_from_thread_poll, NULL);
	sb_loop_spawn(&loop, &a.task);
	unsigned before = atomic_load(&rings);
	assert_int_equal(sb_loop_run_ready(&loop), 2);
	assert_int_equal(b.polls, 2);
	assert_int_equal(atomic_load(&rings), before);
	assert_true(sb_loop_idle(&loop));
}

/* ------------------------------------------------------------ close */

static void a_spawn_after_close_fails_with_eshutdown_and_leaves_the_task_free(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop, other;
	sb_loop_init(&loop, count_ring, &rings);
	sb_loop_init(&other, count_ring, &rings);
	sb_loop_close(&loop);
	sb_loop_close(&loop); /* idempotent */
	script_task s;
	script_init(&s, 1);
	assert_int_equal(sb_loop_spawn(&loop, &s.task), -ESHUTDOWN);
	assert_int_equal(atomic_load(&rings), 0);
	assert_true(sb_loop_idle(&loop));
	assert_int_equal(sb_loop_run_ready(&loop), 0);
	assert_int_equal(s.polls, 0);
	assert_int_equal(sb_loop_task_ref(&s.task), -EINVAL); /* holds no reference */
	/* Not spawned: it may go to another loop. */
	assert_int_equal(sb_loop_spawn(&other, &s.task), 0);
	assert_int_equal(sb_loop_run_ready(&other), 1);
	assert_int_equal(atomic_load(&s.released), 1);
	assert_true(sb_loop_idle(&other));
}

static void close_lets_spawned_tasks_finish_and_idle_then_means_closed_and_drained(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task s, late;
	script_init(&s, 2);
	script_init(&late, 1);
	sb_loop_spawn(&loop, &s.task);
	sb_loop_run_ready(&loop); /* waits */
	sb_loop_close(&loop);
	assert_false(sb_loop_idle(&loop)); /* close does not cancel it */
	sb_loop_wake(&s.task);
	assert_int_equal(sb_loop_run_ready(&loop), 1);
	assert_int_equal(s.polls, 2);
	assert_int_equal(atomic_load(&s.released), 1);
	assert_true(sb_loop_idle(&loop));
	unsigned rung = atomic_load(&rings);
	assert_int_equal(sb_loop_spawn(&loop, &late.task), -ESHUTDOWN);
	assert_int_equal(atomic_load(&rings), rung); /* no ring into a closed doorbell */
	assert_true(sb_loop_idle(&loop));
}

struct spawner {
	sb_loop *loop;
	script_task *tasks;
	int n;
	int spawned;
};

static void *spawn_many(void *arg)
{
	struct spawner *sp = arg;
	for (int i = 0; i < sp->n; i++)
		if (sb_loop_spawn(sp->loop, &sp->tasks[i].task) == 0)
			sp->spawned++;
		else
			CHECK(sb_loop_spawn(sp->loop, &sp->tasks[i].task) == -ESHUTDOWN);
	return NULL;
}

static void spawns_racing_close_either_run_to_release_or_fail(void **state)
{
	(void)state;
	enum { N = 2000 };
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "loop close vs spawn");
	doorbell d;
	doorbell_init(&d);
	sb_loop loop;
	sb_loop_init(&loop, doorbell_ring, &d);
	static script_task tasks[N];
	for (int i = 0; i < N; i++)
		script_init(&tasks[i], 1);
	struct spawner sp = { &loop, tasks, N, 0 };
	pthread_t th;
	pthread_create(&th, NULL, spawn_many, &sp);
	for (int i = 0; i < 50; i++)
		sb_loop_run_ready(&loop);
	sb_loop_close(&loop);
	run_until_idle(&loop, &d); /* idle after close: no spawn is still on its way */
	int released = 0;
	for (int i = 0; i < N; i++)
		released += atomic_load(&tasks[i].released);
	pthread_join(th, NULL);
	assert_int_equal(released, sp.spawned);
	for (int i = 0; i < N; i++)
		assert_int_equal(tasks[i].polls, atomic_load(&tasks[i].released));
	doorbell_destroy(&d);
	sb_watchdog_stop(&wd);
}

/* ------------------------------------------------------------ references */

static void a_referenced_task_is_released_once_after_it_finished_and_the_last_unref(
	void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task s;
	script_init(&s, 1);
	sb_loop_spawn(&loop, &s.task);
	/* Two handles (a socket watcher, a timer), taken by the spawner on the
	 * loop's thread before the loop runs. */
	assert_int_equal(sb_loop_task_ref(&s.task), 0);
	assert_int_equal(sb_loop_task_ref(&s.task), 0);
	sb_loop_run_ready(&loop);
	assert_int_equal(s.polls, 1); /* finished */
	assert_int_equal(atomic_load(&s.released), 0);
	assert_false(sb_loop_idle(&loop));
	sb_loop_task_unref(&s.task);
	sb_loop_run_ready(&loop);
	assert_int_equal(atomic_load(&s.released), 0);
	unsigned before = atomic_load(&rings);
	sb_loop_task_unref(&s.task); /* the last: queued to the loop, rung */
	assert_int_equal(atomic_load(&s.released), 0);
	assert_int_equal(atomic_load(&rings), before + 1);
	assert_int_equal(sb_loop_run_ready(&loop), 0);
	assert_int_equal(atomic_load(&s.released), 1);
	assert_int_equal(s.polls, 1);
	assert_true(sb_loop_idle(&loop));
}

struct unref_later {
	sb_loop_task *task;
};

static void *unref_thread(void *arg)
{
	sb_loop_task_unref(arg);
	return NULL;
}

static void the_last_unref_on_another_thread_releases_on_the_loop_thread(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task s;
	script_init(&s, 1);
	sb_loop_spawn(&loop, &s.task);
	assert_int_equal(sb_loop_task_ref(&s.task), 0);
	sb_loop_run_ready(&loop);
	pthread_t th;
	pthread_create(&th, NULL, unref_thread, &s.task);
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&s.released), 0);
	assert_false(sb_loop_idle(&loop));
	sb_loop_run_ready(&loop);
	assert_int_equal(atomic_load(&s.released), 1);
	assert_true(pthread_equal(s.released_on, pthread_self()));
	assert_true(sb_loop_idle(&loop));
}

/* Its poll drops the reference it holds on `held`. */
struct unrefs_other {
	sb_loop_task task;
	sb_loop_task *held;
};

static int unrefs_other_poll(sb_loop_task *t, const sb_waker *w)
{
	(void)w;
	struct unrefs_other *u = SB_CONTAINER_OF(t, struct unrefs_other, task);
	sb_loop_task_unref(u->held);
	return 0;
}

static void an_unref_inside_a_poll_releases_in_the_same_run_without_a_ring(void **state)
{
	(void)state;
	atomic_uint rings = 0;
	sb_loop loop;
	sb_loop_init(&loop, count_ring, &rings);
	script_task s;
	script_init(&s, 1);
	sb_loop_spawn(&loop, &s.task);
	assert_int_equal(sb_loop_task_ref(&s.task), 0);
	sb_loop_run_ready(&loop); /* finished; our reference keeps it */
	struct unrefs_other u = { .held = &s.task };
	sb_loop_task_init(&u.task, unrefs_other_poll, NULL);
	sb_loop_spawn(&loop, &u.task);
	unsigned before = atomic_load(&rings);
	assert_int_equal(sb_loop_run_ready(&loop), 1);
	assert_int_equal(atomic_load(&s.released), 1);
	assert_true(pthread_equal(s.released_on, pthread_self()));
	assert_int_equal(atomic_load(&rings), before);
	assert_true(sb_loop_idle(&loop));
}

/* ------------------------------------------------------ with a primitive */

typedef struct acquire_task {
	sb_loop_task task;
	sb_semaphore *sem;
	sb_semaphore_acquire acq;
	int polls;
	int result;
	pthread_t polled_on;
} acquire_task;

static int acquire_poll(sb_loop_task *t, const sb_waker *w)
{
	acquire_task *a = SB_CONTAINER_OF(t, acquire_task, task);
	if (a->polls++ == 0)
		sb_semaphore_acquire_init(&a->acq, a->sem, 1);
	a->polled_on = pthread_self();
	a->result = sb_semaphore_acquire_poll(&a->acq, w);
	return a->result;
}

static void *release_one(void *arg)
{
	CHECK(sb_semaphore_release(arg, 1) == 0);
	return NULL;
}

static void a_release_on_another_thread_queues_the_task_and_it_completes_on_the_loop(void **state)
{
	(void)state;
	doorbell d;
	doorbell_init(&d);
	sb_loop loop;
	sb_loop_init(&loop, doorbell_ring, &d);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	acquire_task a = { .sem = &sem };
	sb_loop_task_init(&a.task, acquire_poll, NULL);
	sb_loop_spawn(&loop, &a.task);
	doorbell_wait(&d);
	sb_loop_run_ready(&loop);
	assert_int_equal(a.result, SB_PENDING);
	pthread_t th;
	pthread_create(&th, NULL, release_one, &sem);
	run_until_idle(&loop, &d);
	pthread_join(th, NULL);
	assert_int_equal(a.result, 0);
	assert_int_equal(a.polls, 2);
	assert_true(pthread_equal(a.polled_on, pthread_self()));
	assert_int_equal(sb_semaphore_available(&sem), 0);
	sb_semaphore_release(&sem, 1);
	doorbell_destroy(&d);
}

/* ------------------------------------------------------------ stress */

/*
 * No lost wake: producers bump a task's counter, then wake it; the task
 * finishes once it has seen every bump.  A lost wake leaves the loop asleep
 * and the watchdog fails the test.
 */
enum { PRODUCERS = 3, BUMPS = 20000, STRESS_TASKS = 4 };

typedef struct counter_task {
	sb_loop_task task;
	atomic_long bumps;
	long seen;
	long polls;
} counter_task;

static int counter_poll(sb_loop_task *t, const sb_waker *w)
{
	(void)w;
	counter_task *c = SB_CONTAINER_OF(t, counter_task, task);
	c->polls++;
	c->seen = atomic_load_explicit(&c->bumps, memory_order_relaxed);
	return c->seen == (long)PRODUCERS * BUMPS ? 0 : SB_PENDING;
}

struct producer {
	counter_task *tasks;
	sb_waker clones[STRESS_TASKS];
};

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	for (int i = 0; i < BUMPS; i++) {
		for (int k = 0; k < STRESS_TASKS; k++) {
			atomic_fetch_add_explicit(&p->tasks[k].bumps, 1, memory_order_relaxed);
			if (i + 1 == BUMPS)
				sb_waker_wake(p->clones[k]); /* the last: by value */
			else
				sb_waker_wake_by_ref(&p->clones[k]);
		}
	}
	return NULL;
}

static void wakes_from_many_threads_are_never_lost_and_rings_are_coalesced(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "loop wake stress");
	doorbell d;
	doorbell_init(&d);
	sb_loop loop;
	sb_loop_init(&loop, doorbell_ring, &d);
	counter_task tasks[STRESS_TASKS];
	struct producer prod[PRODUCERS];
	for (int k = 0; k < STRESS_TASKS; k++) {
		atomic_init(&tasks[k].bumps, 0);
		tasks[k].seen = tasks[k].polls = 0;
		sb_loop_task_init(&tasks[k].task, counter_poll, NULL);
		assert_int_equal(sb_loop_spawn(&loop, &tasks[k].task), 0);
	}
	for (int p = 0; p < PRODUCERS; p++) {
		prod[p].tasks = tasks;
		for (int k = 0; k < STRESS_TASKS; k++) {
			sb_waker w = sb_loop_task_waker(&tasks[k].task);
			prod[p].clones[k] = sb_waker_clone(&w);
		}
	}
	pthread_t th[PRODUCERS];
	for (int p = 0; p < PRODUCERS; p++)
		pthread_create(&th[p], NULL, producer_main, &prod[p]);
	run_until_idle(&loop, &d);
	for (int p = 0; p < PRODUCERS; p++)
		pthread_join(th[p], NULL);
	long polls = 0;
	for (int k = 0; k < STRESS_TASKS; k++) {
		assert_int_equal(tasks[k].seen, (long)PRODUCERS * BUMPS);
		polls += tasks[k].polls;
	}
	/* Merged: far fewer polls and rings than wakes. */
	long wakes = (long)PRODUCERS * BUMPS * STRESS_TASKS;
	assert_true(polls <= wakes);
	assert_true((long)atomic_load(&d.rings) <= polls + 1);
	print_message("# %ld wakes: %ld polls, %u rings\n", wakes, polls, atomic_load(&d.rings));
	doorbell_destroy(&d);
	sb_watchdog_stop(&wd);
}

/*
 * Permits handed across threads: loop tasks acquire from a semaphore that
 * plain threads release into, one permit at a time, and release back into a
 * second one the threads acquire from.  Every permit comes home.
 */
enum { PINGERS = 2, ROUNDS = 3000, PONG_TASKS = 4 };

typedef struct pong_task {
	sb_loop_task task;
	sb_semaphore *in, *out;
	sb_semaphore_acquire acq;
	bool acquiring;
	int rounds;
} pong_task;

static int pong_poll(sb_loop_task *t, const sb_waker *w)
{
	pong_task *p = SB_CONTAINER_OF(t, pong_task, task);
	for (;;) {
		if (p->rounds == ROUNDS * PINGERS / PONG_TASKS)
			return 0;
		if (!p->acquiring) {
			sb_semaphore_acquire_init(&p->acq, p->in, 1);
			p->acquiring = true;
		}
		int r = sb_semaphore_acquire_poll(&p->acq, w);
		if (r == SB_PENDING)
			return SB_PENDING;
		CHECK(r == 0);
		p->acquiring = false;
		p->rounds++;
		CHECK(sb_semaphore_release(p->out, 1) == 0);
	}
}

struct pinger {
	sb_semaphore *in, *out;
};

static void *pinger_main(void *arg)
{
	struct pinger *p = arg;
	for (int i = 0; i < ROUNDS; i++) {
		CHECK(sb_semaphore_release(p->out, 1) == 0);
		CHECK(sb_semaphore_acquire_blocking(p->in, 1, SB_TIMEOUT_INFINITE) == 0);
	}
	return NULL;
}

static void permits_released_on_other_threads_reach_loop_tasks_and_come_back(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "loop semaphore ping-pong");
	doorbell d;
	doorbell_init(&d);
	sb_loop loop;
	sb_loop_init(&loop, doorbell_ring, &d);
	sb_semaphore to_loop = SB_SEMAPHORE_INIT(0), to_threads = SB_SEMAPHORE_INIT(0);
	pong_task tasks[PONG_TASKS];
	for (int k = 0; k < PONG_TASKS; k++) {
		tasks[k] = (pong_task){ .in = &to_loop, .out = &to_threads };
		sb_loop_task_init(&tasks[k].task, pong_poll, NULL);
		sb_loop_spawn(&loop, &tasks[k].task);
	}
	struct pinger pg = { &to_threads, &to_loop };
	pthread_t th[PINGERS];
	for (int i = 0; i < PINGERS; i++)
		pthread_create(&th[i], NULL, pinger_main, &pg);
	run_until_idle(&loop, &d);
	for (int i = 0; i < PINGERS; i++)
		pthread_join(th[i], NULL);
	for (int k = 0; k < PONG_TASKS; k++)
		assert_int_equal(tasks[k].rounds, ROUNDS * PINGERS / PONG_TASKS);
	assert_int_equal(sb_semaphore_available(&to_loop), 0);
	assert_int_equal(sb_semaphore_available(&to_threads), 0);
	assert_int_equal(sb_semaphore_destroy(&to_loop), 0);
	assert_int_equal(sb_semaphore_destroy(&to_threads), 0);
	doorbell_destroy(&d);
	sb_watchdog_stop(&wd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spawn_queues_the_first_poll_and_rings_once),
		cmocka_unit_test(tasks_are_polled_in_the_order_they_were_queued),
		cmocka_unit_test(spawn_refuses_a_task_without_poll_or_still_referenced),
		cmocka_unit_test(wakes_of_a_queued_task_merge_into_one_poll),
		cmocka_unit_test(a_wake_during_its_poll_polls_it_again_in_the_same_run_without_a_ring),
		cmocka_unit_test(
			a_wake_of_another_task_on_the_loop_thread_runs_it_in_the_same_run_without_a_ring),
		cmocka_unit_test(a_finished_task_is_not_polled_again_and_a_late_wake_releases_it),
		cmocka_unit_test(a_wake_by_reference_of_a_finished_task_neither_queues_it_nor_rings),
		cmocka_unit_test(a_wake_that_raced_the_last_poll_drops_its_queue_reference),
		cmocka_unit_test(release_runs_on_the_loop_thread_when_the_last_clone_goes_elsewhere),
		cmocka_unit_test(idle_is_false_while_any_clone_is_held),
		cmocka_unit_test(a_task_without_release_can_be_reused_once_idle),
		cmocka_unit_test(run_ready_stops_after_its_budget_and_rings_for_the_tasks_left),
		cmocka_unit_test(run_says_it_drained_the_queue_when_the_work_ends_within_the_budget),
		cmocka_unit_test(a_budget_of_zero_polls_the_tasks_queued_at_the_call_once_each),
		cmocka_unit_test(a_wake_from_another_thread_during_the_run_is_run_without_a_ring),
		cmocka_unit_test(a_spawn_after_close_fails_with_eshutdown_and_leaves_the_task_free),
		cmocka_unit_test(close_lets_spawned_tasks_finish_and_idle_then_means_closed_and_drained),
		cmocka_unit_test(spawns_racing_close_either_run_to_release_or_fail),
		cmocka_unit_test(a_referenced_task_is_released_once_after_it_finished_and_the_last_unref),
		cmocka_unit_test(the_last_unref_on_another_thread_releases_on_the_loop_thread),
		cmocka_unit_test(an_unref_inside_a_poll_releases_in_the_same_run_without_a_ring),
		cmocka_unit_test(a_release_on_another_thread_queues_the_task_and_it_completes_on_the_loop),
		cmocka_unit_test(wakes_from_many_threads_are_never_lost_and_rings_are_coalesced),
		cmocka_unit_test(permits_released_on_other_threads_reach_loop_tasks_and_come_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
