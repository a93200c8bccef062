/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of syncband/loop.h (sched.c): wakes, drops and
 * spawns racing the loop's run, each explored over every schedule with up to
 * four preemptions and then over random ones.  The doorbell is a counter;
 * each check then plays the loop: while a ring is unanswered it runs the
 * ready tasks again.  So a lost wake (a push that neither rang nor was seen)
 * leaves a task unpolled and fails the check, and so does a missing or
 * double release.  Under the weak model, what a thread writes before it
 * wakes or spawns a task (its payload) must happen-before the task's poll
 * on the loop's thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include <errno.h>

#include <syncband/loop.h>
#include <syncband/semaphore.h>

#include "sched.h"

enum { PREEMPTIONS = 4, LIMIT = 2000000, RANDOM_RUNS = 3000, SEED = 20261130 };
/* The weak model (README.md in this folder), with the bounds of model_common.h. */
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

typedef struct mtask {
	sb_loop_task task;
	int polls;
	int seen;          /* `posted` as the last poll saw it */
	int finish_at;     /* finish once `seen` reaches it (0: never by itself) */
	int released;
	sb_waker kept[2];  /* clones handed to the racing threads */
	bool published;    /* one thread wrote `payload` before waking or spawning it */
	int payload;
	int touched[3];    /* by each thread before it gives up its reference */
} mtask;

typedef struct loop_ctx {
	sb_loop loop;
	sb_loop loop2;     /* where a respawn goes: run only by check */
	int rings;         /* the doorbell: rings not yet answered */
	int answered;
	_Atomic int posted;
	mtask t;
	mtask u;
	mtask v;
	sb_semaphore sem;
	sb_semaphore_acquire acq;
	int acq_result;
	bool respawned;
	bool idle;
	int spawn_result;
	unsigned run_rings;                /* rings made during the loop thread's run */
	int run_polls;                     /* v's polls when that run returned */
	atomic_int first_run_over;         /* the loop's thread found it idle */
} loop_ctx;

/* The execution's context, for the poll functions. */
static loop_ctx *cur;

static void model_ring(void *ctx)
{
	loop_ctx *c = ctx;
	c->rings++;
	MODEL_PLAIN_WRITE(&c->rings); /* the doorbell: closed once the loop is idle */
}

/* Before the one wake or spawn of `m` by this thread. */
static void publish(mtask *m)
{
	m->payload = 1;
	MODEL_PLAIN_WRITE(&m->payload);
	m->published = true;
}

static int mtask_poll(sb_loop_task *lt, const sb_waker *w)
{
	(void)w;
	mtask *m = SB_CONTAINER_OF(lt, mtask, task);
	loop_ctx *c = cur;
	m->polls++;
	MODEL_PLAIN_WRITE(&m->polls); /* this life's touch: a respawn comes after it */
	if (m->published) /* polled after that wake or spawn, so ordered after it */
		MODEL_PLAIN_READ(&m->payload);
	m->seen = atomic_load(&c->posted);
	return m->finish_at && m->seen >= m->finish_at ? 0 : SB_PENDING;
}

/* What thread `t` does to the task before its wake or drop of a clone. */
static void touch(mtask *m, int t)
{
	m->touched[t] = 1;
	MODEL_PLAIN_WRITE(&m->touched[t]);
}

/* The release function comes after every reference holder's touches. */
static void mtask_release(sb_loop_task *lt)
{
	mtask *m = SB_CONTAINER_OF(lt, mtask, task);
	for (int t = 0; t < 3; t++)
		MODEL_PLAIN_READ(&m->touched[t]);
	m->released++;
}

/* Answers every ring, as the loop's doorbell callback would. */
static void answer_rings(loop_ctx *c)
{
	while (c->answered < c->rings) {
		c->answered = c->rings;
		sb_loop_run_ready(&c->loop);
	}
}

static void setup_one_waiting_task(loop_ctx *c, int finish_at, int clones)
{
	cur = c;
	sb_loop_init(&c->loop, model_ring, c);
	sb_loop_task_init(&c->t.task, mtask_poll, mtask_release);
	c->t.finish_at = finish_at;
	sb_loop_spawn(&c->loop, &c->t.task);
	answer_rings(c); /* polled once: waiting */
	sb_waker w = sb_loop_task_waker(&c->t.task);
	for (int i = 0; i < clones; i++)
		c->t.kept[i] = sb_waker_clone(&w);
}

/* --- a wake from another thread racing the loop's run ------------------- */

static void wake_setup(void *p)
{
	setup_one_waiting_task(p, 1, 1);
}
static void wake_t0(void *p)
{
	loop_ctx *c = p;
	publish(&c->t);
	atomic_store(&c->posted, 1);
	touch(&c->t, 0);
	sb_waker_wake(c->t.kept[0]);
}
static void loop_t1(void *p)
{
	loop_ctx *c = p;
	c->answered = c->rings; /* the doorbell callback clears, then runs */
	sb_loop_run_ready(&c->loop);
}
static void wake_check(void *p)
{
	loop_ctx *c = p;
	answer_rings(c);
	MODEL_CHECK(c->t.seen == 1); /* polled after the post: no lost wake */
	MODEL_CHECK(c->t.released == 1);
	MODEL_CHECK(sb_loop_idle(&c->loop));
}

/* --- two wakers, one by value and one by reference, and the loop -------- */

static void two_setup(void *p)
{
	setup_one_waiting_task(p, 2, 2);
}
static void two_t0(void *p)
{
	loop_ctx *c = p;
	atomic_fetch_add(&c->posted, 1);
	sb_waker_wake_by_ref(&c->t.kept[0]);
	touch(&c->t, 0); /* after the wake: ordered before release by the drop alone */
	sb_waker_drop(c->t.kept[0]);
}
static void two_t2(void *p)
{
	loop_ctx *c = p;
	atomic_fetch_add(&c->posted, 1);
	touch(&c->t, 2);
	sb_waker_wake(c->t.kept[1]);
}
static void two_check(void *p)
{
	loop_ctx *c = p;
	answer_rings(c);
	MODEL_CHECK(c->t.seen == 2);
	MODEL_CHECK(c->t.polls <= 3); /* the first poll, then at most one per wake */
	MODEL_CHECK(c->t.released == 1);
	MODEL_CHECK(sb_loop_idle(&c->loop));
}

/* --- the last reference dropped elsewhere while the loop runs ------------ */

static void drop_setup(void *p)
{
	loop_ctx *c = p;
	setup_one_waiting_task(c, 1, 1);
	atomic_store(&c->posted, 1);
	sb_loop_wake(&c->t.task);
	answer_rings(c); /* finished; the clone keeps it */
}
static void drop_t0(void *p)
{
	loop_ctx *c = p;
	touch(&c->t, 0);
	sb_waker_wake(c->t.kept[0]); /* late: finished, and the last reference */
}
static void drop_check(void *p)
{
	loop_ctx *c = p;
	answer_rings(c);
	MODEL_CHECK(c->t.polls == 2);
	MODEL_CHECK(c->t.released == 1);
	MODEL_CHECK(sb_loop_idle(&c->loop));
}

/* --- a spawn from another thread racing a wake of a queued task and the loop */

static void spawn_setup(void *p)
{
	loop_ctx *c = p;
	setup_one_waiting_task(c, 1, 1);
	sb_loop_task_init(&c->u.task, mtask_poll, mtask_release);
	c->u.finish_at = 1;
}
static void spawn_t0(void *p)
{
	loop_ctx *c = p;
	publish(&c->u);
	atomic_store(&c->posted, 1);
	sb_loop_spawn(&c->loop, &c->u.task);
}
static void spawn_t2(void *p)
{
	loop_ctx *c = p;
	publish(&c->t);
	atomic_store(&c->posted, 1);
	touch(&c->t, 2);
	sb_waker_wake(c->t.kept[0]);
}
static void spawn_check(void *p)
{
	loop_ctx *c = p;
	answer_rings(c);
	MODEL_CHECK(c->t.seen == 1 && c->u.seen == 1);
	MODEL_CHECK(c->t.released == 1 && c->u.released == 1);
	MODEL_CHECK(sb_loop_idle(&c->loop));
}

/* --- a respawn racing the loop's run of the task's last poll ------------ */

/*
 * No release function: the caller reuses the task once a spawn of it
 * succeeds, which must come after everything its previous life did on the
 * loop's thread (its last poll).  The new life goes to a second loop, which
 * only check runs, so that reading the old life's polls does not race the
 * new life's first poll.
 */
static void respawn_setup(void *p)
{
	loop_ctx *c = p;
	setup_one_waiting_task(c, 1, 1);
	sb_loop_init(&c->loop2, model_ring, c);
	c->t.task.release = NULL;
}
static void respawn_t2(void *p)
{
	loop_ctx *c = p;
	if (sb_loop_spawn(&c->loop2, &c->t.task) != 0)
		return; /* still alive */
	c->respawned = true;
	MODEL_PLAIN_READ(&c->t.polls);
}
static void respawn_check(void *p)
{
	loop_ctx *c = p;
	answer_rings(c);
	sb_loop_run_ready(&c->loop2);
	MODEL_CHECK(sb_loop_idle(&c->loop2));
	MODEL_CHECK(c->t.seen == 1);
	MODEL_CHECK(c->t.polls == 2 + c->respawned); /* setup's, the woken one, the new life's */
	MODEL_CHECK(sb_loop_idle(&c->loop));
}

/* --- a wake during the last poll, the queued run after it, and a drop ---- */

/*
 * The task is queued (setup) and finishes in the loop's next poll; a wake
 * during that poll queues it again, and the loop's next run finds it done
 * and drops the queue's reference.  The waker touches the task after its
 * wake, so only its drop orders that touch before the release function;
 * when the loop's drop is the last, it must acquire it.
 */
static void late_setup(void *p)
{
	loop_ctx *c = p;
	setup_one_waiting_task(c, 1, 1);
	atomic_store(&c->posted, 1);
	sb_loop_wake(&c->t.task); /* queued, not yet run */
}
static void late_t0(void *p)
{
	loop_ctx *c = p;
	sb_waker_wake_by_ref(&c->t.kept[0]);
	touch(&c->t, 0);
	/* Drops once the loop's first run is over (a relaxed flag: it orders
	 * nothing), so that the drop can fall between the two runs. */
	sb_model_await_change(&c->first_run_over, 0);
	sb_waker_drop(c->t.kept[0]);
}
static void loop_twice_t1(void *p)
{
	loop_ctx *c = p;
	c->answered = c->rings;
	sb_loop_run_ready(&c->loop);
	atomic_store_explicit(&c->first_run_over, 1, memory_order_relaxed);
	c->answered = c->rings;
	sb_loop_run_ready(&c->loop);
}
static void late_check(void *p)
{
	loop_ctx *c = p;
	answer_rings(c);
	MODEL_CHECK(c->t.seen == 1 && c->t.polls == 2); /* never polled once done */
	MODEL_CHECK(c->t.released == 1);
	MODEL_CHECK(sb_loop_idle(&c->loop));
}

/* --- idle racing the ring of a last-reference drop ---------------------- */

/*
 * The last reference is dropped off the loop's thread (drop_setup), which
 * pushes the task and rings; the loop releases it and asks whether it is
 * idle.  True means the doorbell may be closed: every ring happened-before.
 */
static void idle_t1(void *p)
{
	loop_ctx *c = p;
	c->answered = c->rings;
	sb_loop_run_ready(&c->loop);
	if (sb_loop_idle(&c->loop))
		MODEL_PLAIN_READ(&c->rings); /* closing the doorbell */
}
static void idle_check(void *p)
{
	loop_ctx *c = p;
	answer_rings(c);
	MODEL_CHECK(c->t.polls == 2);
	MODEL_CHECK(c->t.released == 1);
	MODEL_CHECK(sb_loop_idle(&c->loop));
}

/* --- a same-thread wake and a cross-thread wake racing the run's end ---- */

/*
 * u's poll wakes v on the loop's thread, while another thread posts and
 * wakes t.  The run must poll v again itself, without a ring for u's wake
 * (at most one ring: the other thread's, when its push finds the run over),
 * and the other thread's wake must not be lost however it meets the end of
 * the run.
 */
static int wakes_v_poll(sb_loop_task *lt, const sb_waker *w)
{
	(void)w;
	mtask *m = SB_CONTAINER_OF(lt, mtask, task);
	m->polls++;
	sb_loop_wake(&cur->v.task);
	return 0;
}
static int second_poll_finishes(sb_loop_task *lt, const sb_waker *w)
{
	(void)w;
	mtask *m = SB_CONTAINER_OF(lt, mtask, task);
	return ++m->polls == 2 ? 0 : SB_PENDING;
}
static void same_setup(void *p)
{
	loop_ctx *c = p;
	setup_one_waiting_task(c, 1, 1);
	sb_loop_task_init(&c->v.task, second_poll_finishes, mtask_release);
	sb_loop_spawn(&c->loop, &c->v.task);
	answer_rings(c); /* v waits */
	sb_loop_task_init(&c->u.task, wakes_v_poll, mtask_release);
	sb_loop_spawn(&c->loop, &c->u.task); /* queued, rung: the run below answers */
}
static void same_t0(void *p)
{
	loop_ctx *c = p;
	publish(&c->t);
	atomic_store(&c->posted, 1);
	touch(&c->t, 0);
	sb_waker_wake(c->t.kept[0]);
}
static void same_loop_t1(void *p)
{
	loop_ctx *c = p;
	c->answered = c->rings;
	unsigned before = c->rings;
	sb_loop_run_ready(&c->loop);
	c->run_rings = c->rings - before;
	c->run_polls = c->v.polls;
}
static void same_check(void *p)
{
	loop_ctx *c = p;
	MODEL_CHECK(c->u.polls == 1);
	MODEL_CHECK(c->run_polls == 2); /* u's wake of v: polled in that run */
	MODEL_CHECK(c->run_rings <= 1); /* and it did not ring */
	answer_rings(c);
	MODEL_CHECK(c->t.seen == 1); /* the other thread's wake was not lost */
	MODEL_CHECK(c->t.released == 1 && c->u.released == 1 && c->v.released == 1);
	MODEL_CHECK(sb_loop_idle(&c->loop));
}

/* --- close racing a spawn from another thread ---------------------------- */

/*
 * The spawn either comes first (its task runs and is released) or fails with
 * -ESHUTDOWN, leaving the task free to spawn elsewhere.  The loop closes,
 * runs, and when it finds itself idle closes its doorbell (a plain read):
 * no ring may follow that.
 */
static void close_setup(void *p)
{
	loop_ctx *c = p;
	cur = c;
	sb_loop_init(&c->loop, model_ring, c);
	sb_loop_init(&c->loop2, model_ring, c);
	sb_loop_task_init(&c->u.task, mtask_poll, mtask_release);
	c->u.finish_at = 1;
	atomic_store(&c->posted, 1);
}
static void close_t0(void *p)
{
	loop_ctx *c = p;
	publish(&c->u);
	c->spawn_result = sb_loop_spawn(&c->loop, &c->u.task);
}
static void close_loop_t1(void *p)
{
	loop_ctx *c = p;
	sb_loop_close(&c->loop);
	c->answered = c->rings;
	sb_loop_run_ready(&c->loop);
	if (sb_loop_idle(&c->loop)) {
		c->idle = true;
		MODEL_PLAIN_READ(&c->rings); /* closing the doorbell */
	}
}
static void close_check(void *p)
{
	loop_ctx *c = p;
	answer_rings(c);
	MODEL_CHECK(sb_loop_idle(&c->loop));
	if (c->spawn_result == 0) {
		MODEL_CHECK(c->u.polls == 1 && c->u.released == 1);
		return;
	}
	MODEL_CHECK(c->spawn_result == -ESHUTDOWN);
	MODEL_CHECK(c->u.polls == 0 && c->u.released == 0);
	MODEL_CHECK(sb_loop_spawn(&c->loop2, &c->u.task) == 0); /* left free */
	sb_loop_run_ready(&c->loop2);
	MODEL_CHECK(c->u.released == 1 && sb_loop_idle(&c->loop2));
}

/* --- a release function that respawns its task, racing a late drop ------- */

/*
 * The task finished (drop_setup); a clone's late wake drops the last
 * reference off the loop's thread.  Its release function (on the loop's
 * thread) reuses it at once: the respawn must succeed, and the new life is
 * polled and released in turn, after every touch of the old one.
 */
static void respawning_release(sb_loop_task *lt)
{
	mtask *m = SB_CONTAINER_OF(lt, mtask, task);
	mtask_release(lt);
	if (m->released == 1)
		MODEL_CHECK(sb_loop_spawn(&cur->loop, lt) == 0);
}
static void rerelease_setup(void *p)
{
	loop_ctx *c = p;
	drop_setup(c);
	c->t.task.release = respawning_release;
}
static void rerelease_check(void *p)
{
	loop_ctx *c = p;
	answer_rings(c);
	MODEL_CHECK(c->t.polls == 3); /* the old life's two, the new life's one */
	MODEL_CHECK(c->t.released == 2);
	MODEL_CHECK(sb_loop_idle(&c->loop));
}

/* --- the last unref elsewhere racing the loop's idle --------------------- */

/*
 * A handle's reference keeps the finished task; another thread drops it
 * (sb_loop_task_unref) while the loop runs and asks whether it is idle.
 */
static void unref_setup(void *p)
{
	loop_ctx *c = p;
	setup_one_waiting_task(c, 1, 0);
	MODEL_CHECK(sb_loop_task_ref(&c->t.task) == 0);
	atomic_store(&c->posted, 1);
	sb_loop_wake(&c->t.task);
	answer_rings(c); /* finished; the reference keeps it */
}
static void unref_t0(void *p)
{
	loop_ctx *c = p;
	touch(&c->t, 0);
	sb_loop_task_unref(&c->t.task);
}

/* --- a semaphore release on another thread, polled through the loop ------ */

static int acq_poll(sb_loop_task *lt, const sb_waker *w)
{
	(void)lt;
	loop_ctx *c = cur;
	c->t.polls++;
	c->acq_result = sb_semaphore_acquire_poll(&c->acq, w);
	if (c->acq_result == 0) /* the permit of sem_t0's release */
		MODEL_PLAIN_READ(&c->t.payload);
	return c->acq_result;
}
static void sem_setup(void *p)
{
	loop_ctx *c = p;
	cur = c;
	sb_loop_init(&c->loop, model_ring, c);
	sb_semaphore_init(&c->sem, 0);
	sb_semaphore_acquire_init(&c->acq, &c->sem, 1);
	sb_loop_task_init(&c->t.task, acq_poll, mtask_release);
	sb_loop_spawn(&c->loop, &c->t.task);
	answer_rings(c);
}
static void sem_t0(void *p)
{
	loop_ctx *c = p;
	c->t.payload = 1;
	MODEL_PLAIN_WRITE(&c->t.payload);
	MODEL_CHECK(sb_semaphore_release(&c->sem, 1) == 0);
}
static void sem_check(void *p)
{
	loop_ctx *c = p;
	answer_rings(c);
	MODEL_CHECK(c->acq_result == 0);
	MODEL_CHECK(c->t.released == 1);
	MODEL_CHECK(sb_semaphore_available(&c->sem) == 0);
	MODEL_CHECK(sb_loop_idle(&c->loop));
	MODEL_CHECK(sb_semaphore_destroy(&c->sem) == 0);
}

static const sb_model_scenario scenarios[] = {
	{ "loop: a wake racing the loop's run", 2, sizeof(loop_ctx), wake_setup,
	  { wake_t0, loop_t1 }, wake_check },
	{ "loop: two wakers racing each other and the loop's run", 3, sizeof(loop_ctx),
	  two_setup, { two_t0, loop_t1, two_t2 }, two_check },
	{ "loop: the last reference dropped elsewhere racing the loop's run", 2,
	  sizeof(loop_ctx), drop_setup, { drop_t0, loop_t1 }, drop_check },
	{ "loop: a spawn and a wake from other threads racing the loop's run", 3,
	  sizeof(loop_ctx), spawn_setup, { spawn_t0, loop_t1, spawn_t2 }, spawn_check },
	{ "loop: a semaphore release racing the loop's run", 2, sizeof(loop_ctx), sem_setup,
	  { sem_t0, loop_t1 }, sem_check },
	{ "loop: a respawn racing the loop's run of the last poll", 3, sizeof(loop_ctx),
	  respawn_setup, { wake_t0, loop_t1, respawn_t2 }, respawn_check },
	{ "loop: a wake during the last poll and a drop racing two runs", 2, sizeof(loop_ctx),
	  late_setup, { late_t0, loop_twice_t1 }, late_check },
	{ "loop: idle racing the ring of a last-reference drop", 2, sizeof(loop_ctx),
	  drop_setup, { drop_t0, idle_t1 }, idle_check },
	{ "loop: a same-thread wake and a cross-thread wake racing the run's end", 2,
	  sizeof(loop_ctx), same_setup, { same_t0, same_loop_t1 }, same_check },
	{ "loop: close racing a spawn from another thread", 2, sizeof(loop_ctx), close_setup,
	  { close_t0, close_loop_t1 }, close_check },
	{ "loop: a release function's respawn racing a late drop", 2, sizeof(loop_ctx),
	  rerelease_setup, { drop_t0, loop_t1 }, rerelease_check },
	{ "loop: the last unref elsewhere racing the loop's idle", 2, sizeof(loop_ctx),
	  unref_setup, { unref_t0, idle_t1 }, idle_check },
};

/* Under sequential consistency when stale_reads < 0, else the weak model. */
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void explore_all(int preemptions, int stale_reads)
{
	assert_true(sb_model_explore_all(scenarios, COUNT(scenarios), preemptions, stale_reads,
					 LIMIT));
}

static void random_all(int stale_reads)
{
	assert_true(sb_model_random_all(scenarios, COUNT(scenarios), SEED, RANDOM_RUNS,
					stale_reads));
}

static void every_loop_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	explore_all(PREEMPTIONS, -1);
}

static void every_loop_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	random_all(-1);
}

static void every_loop_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	explore_all(WEAK_PREEMPTIONS, STALE_READS);
}

static void every_loop_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	random_all(WEAK_RANDOM_STALE_READS);
}

/* test_model_loop [RUN-PATTERN]: cmocka's test name filter. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_loop_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_loop_scenario_holds_over_random_schedules),
		cmocka_unit_test(every_loop_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_loop_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
