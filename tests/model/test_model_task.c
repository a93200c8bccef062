/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of the executor's task state machine (task.c)
 * and the scheduler it hands tasks to (scheduler.c), both compiled with the
 * model hooks (sched.c): wakes racing the poll that finishes a task, a
 * joiner racing the completion, a wake racing destroy's cancel, and a
 * floating task moved by one waker while another sends it home and a timer
 * lets go of it.  Explored over every schedule with up to four preemptions,
 * then over random ones.
 *
 * Below the scheduler there is no ring: executors here are an sb_executor
 * with its owner-thread state and no io_uring, the doorbell is a counter,
 * and an executor thread's loop is the test draining the inbox and running
 * the run queue (task_loop.c's run_queued, compiled with the hooks too).  Each check then finishes what the threads
 * left, as the owner's loop would (settle), and looks at the outcome: every
 * wake seen, the result published once, each task on the thread of its
 * executor, the release run exactly once, every reference back.
 *
 * Logical threads share the OS thread's thread-locals, so the executor's
 * "which executor does this thread run, and who is it" (internal.h's
 * sb_model_exec_current/thread) is answered here: each scenario thread
 * names its role on entry, and a call finds its logical thread by the stack
 * it runs on.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "counting_waker.h"
#include "internal.h"
#include "sched.h"

enum { PREEMPTIONS = 4, LIMIT = 2000000, RANDOM_RUNS = 3000, SEED = 20261201 };

/* ------------------------------------------------------------ executors */

/*
 * Executors a and b (of one group, when a scenario has floating tasks) and
 * c, never in the group; `none` is a thread that runs no executor.
 */
static sb_executor exec_a, exec_b, exec_c;
static struct sb_executor_impl impl_a, impl_b, impl_c;
static struct sb_sched_group group;
static char tag_a, tag_b, tag_c, tag_none;
static int rings;

struct role {
	sb_executor *ex;  /* the executor it runs, or NULL */
	const void *tag;  /* its identity, as sb_executor.owner names it */
};
static const struct role role_a = { &exec_a, &tag_a }, role_b = { &exec_b, &tag_b },
			 role_c = { &exec_c, &tag_c }, role_none = { NULL, &tag_none };

static struct role main_role;  /* setup's and check's */
static struct role thread_role[SB_MODEL_MAX_THREADS];
static const char *thread_anchor[SB_MODEL_MAX_THREADS];
static int threads_playing;

/* The model stacks are 256 KiB each (sched.c); a frame within that below a
 * thread's entry frame is that thread's. */
enum { MODEL_STACK = 256 * 1024 };

static const struct role *current_role(void)
{
	const char *frame = __builtin_frame_address(0);
	int best = -1;
	for (int k = 0; k < SB_MODEL_MAX_THREADS; k++) {
		const char *a = thread_anchor[k];
		if (a && a >= frame && a - frame < MODEL_STACK &&
		    (best < 0 || a < thread_anchor[best]))
			best = k;
	}
	return best < 0 ? &main_role : &thread_role[best];
}

sb_executor *sb_model_exec_current(void)
{
	return current_role()->ex;
}

const void *sb_model_exec_thread(void)
{
	return current_role()->tag;
}

/*
 * A scenario thread's first call: who it is.  Every later frame of the
 * thread lies below this one's, give or take the thread function's own
 * frame: a page of slack covers it.  (No atomic in here, so no other
 * logical thread runs meanwhile.)
 */
__attribute__((noinline)) static void play(const struct role *r)
{
	int k = threads_playing++;
	thread_role[k] = *r;
	thread_anchor[k] = (const char *)__builtin_frame_address(0) + 4096;
	MODEL_CHECK(current_role() == &thread_role[k]);
}

/* The ring's one call the scheduler makes: count it, consume the reference. */
void sb__ring_doorbell(sb_executor *src, sb_executor *target)
{
	(void)src;
	rings++;
	exec_unref(target);
}

static void exec_setup(sb_executor *ex, struct sb_executor_impl *impl, const void *tag,
		       bool in_group)
{
	memset(ex, 0, sizeof *ex);
	memset(impl, 0, sizeof *impl);
	atomic_init(&ex->inbox, NULL);
	atomic_init(&ex->sleeping, 0);
	atomic_init(&ex->flags, EX_LIVE);
	atomic_init(&ex->refs, 0);
	ex->owner = tag;
	ex->impl = impl;
	impl->group = in_group ? &group : NULL;
	impl->takes_floating = in_group; /* a live group loop */
}

static void world_setup(bool in_group)
{
	exec_setup(&exec_a, &impl_a, &tag_a, in_group);
	exec_setup(&exec_b, &impl_b, &tag_b, in_group);
	exec_setup(&exec_c, &impl_c, &tag_c, false);
	memset(&group, 0, sizeof group);
	pthread_mutex_init(&group.mu, NULL);
	memset(thread_anchor, 0, sizeof thread_anchor);
	threads_playing = 0;
	rings = 0;
	main_role = role_a;
}

/* task_loop.c, compiled with the hooks like the library. */
void run_queued(sb_executor *ex);
size_t cancel_unfinished(sb_executor *ex);

static bool idle(sb_executor *ex)
{
	return task_queue_empty(&ex->impl->runq) && !atomic_load(&ex->inbox);
}

/* The check's loops: each executor's owner runs it until nothing is left. */
static void settle(void)
{
	while (!idle(&exec_a) || !idle(&exec_b) || !idle(&exec_c)) {
		main_role = role_a;
		run_queued(&exec_a);
		main_role = role_b;
		run_queued(&exec_b);
		main_role = role_c;
		run_queued(&exec_c);
	}
	main_role = role_a;
}

/* Nothing holds a reference on an executor any more. */
static bool no_pushers(void)
{
	return atomic_load(&exec_a.refs) == 0 && atomic_load(&exec_b.refs) == 0 &&
	       atomic_load(&exec_c.refs) == 0;
}

/* ------------------------------------------------------------ tasks */

typedef struct mtask {
	sb_task task;
	int polls;
	int seen;          /* `posted` as the last poll saw it */
	int finish_at;     /* finish once `seen` reaches it (0: never by itself) */
	int cancels;
	int released;
	int misplaced;     /* polls on a thread not its executor's */
	int strays;        /* polls of a floating task outside its group */
	int pinned_moves;  /* polls away from exec_a while a timer pinned it */
	sb_join join;
	sb_waker kept[2];  /* clones handed to the racing threads */
} mtask;

static _Atomic int posted;

static int mtask_poll(sb_task *t, const sb_waker *w)
{
	(void)w;
	mtask *m = SB_CONTAINER_OF(t, mtask, task);
	m->polls++;
	if (sb_model_exec_current() != t->exec || sb_model_exec_thread() != t->owner)
		m->misplaced++;
	if (t->group && t->exec->impl->group != t->group)
		m->strays++;
	if (t->exec != &exec_a && atomic_load(&t->pins) != 0)
		m->pinned_moves++;
	m->seen = atomic_load(&posted);
	return m->finish_at && m->seen >= m->finish_at ? 0 : SB_PENDING;
}

static void mtask_cancel(sb_task *t)
{
	SB_CONTAINER_OF(t, mtask, task)->cancels++;
}

static void mtask_release(sb_task *t)
{
	SB_CONTAINER_OF(t, mtask, task)->released++;
}

/*
 * Spawns `m` on exec_a from its owner (floating in the group when asked),
 * runs its first poll (it waits), and keeps `clones` clones of its waker.
 */
static void spawn_waiting(mtask *m, int finish_at, int clones, bool floating)
{
	atomic_store(&posted, 0);
	sb_task_init(&m->task, mtask_poll, mtask_cancel, mtask_release);
	m->finish_at = finish_at;
	MODEL_CHECK(sb__spawn(&exec_a, &m->task, &m->join, floating ? &group : NULL) == 0);
	run_queued(&exec_a);
	MODEL_CHECK(m->polls == 1);
	sb_waker w = { &sb__task_waker_vtable, &m->task };
	for (int i = 0; i < clones; i++)
		m->kept[i] = sb_waker_clone(&w);
}

/* The join, polled from the check (which never waits): the result, once done. */
static int join_now(mtask *m)
{
	sb_waker noop = sb_waker_noop();
	return sb_join_poll(&m->join, &noop);
}

/* What every scenario ends with: placed right, released once, nothing held. */
static void check_done(mtask *m, int result)
{
	MODEL_CHECK(m->misplaced == 0);
	MODEL_CHECK(m->strays == 0);
	MODEL_CHECK(join_now(m) == result);
	MODEL_CHECK(m->released == 1);
	MODEL_CHECK(sb_task_is_released(&m->task));
	MODEL_CHECK(no_pushers());
	MODEL_CHECK(!impl_a.live.head && !impl_b.live.head && !impl_c.live.head);
	MODEL_CHECK(!group.floating.head);
}

typedef struct task_ctx {
	mtask t;
	counting_waker joiner;
	int join_first;    /* the joiner's first poll */
	size_t cancelled;
} task_ctx;

/*
 * Thread order: the explorer always starts a scenario with its first
 * thread, and a thread's own code between the library's atomics runs
 * without a switch.  So the first thread is one whose first step is an
 * atomic (a loop's, a joiner's), and a waker that posts before it wakes
 * comes later: then both orders are explored.
 */

/* An executor thread of a, running what is queued once. */
static void loop_a(void *p)
{
	(void)p;
	play(&role_a);
	run_queued(&exec_a);
}

/* --- a remote wake racing the poll that reads what it posted ------------- */

static void wake_setup(void *p)
{
	task_ctx *c = p;
	world_setup(false);
	spawn_waiting(&c->t, 1, 1, false);
	sb_waker w = { &sb__task_waker_vtable, &c->t.task };
	sb_waker_wake_by_ref(&w); /* queued: the owner polls it as the wake comes */
}
static void post_and_wake(void *p)
{
	task_ctx *c = p;
	play(&role_none);
	atomic_store(&posted, 1);
	sb_waker_wake(c->t.kept[0]);
}
static void wake_check(void *p)
{
	task_ctx *c = p;
	settle();
	MODEL_CHECK(c->t.seen == 1); /* polled after the post: no lost wake */
	MODEL_CHECK(c->t.polls <= 3);
	check_done(&c->t, 0);
}

/* --- two wakes, by value and by reference, racing the completing poll ---- */

static void late_setup(void *p)
{
	world_setup(false);
	spawn_waiting(&((task_ctx *)p)->t, 1, 2, false);
}
static void post_and_wake_by_ref(void *p)
{
	task_ctx *c = p;
	play(&role_none);
	atomic_store(&posted, 1);
	sb_waker_wake_by_ref(&c->t.kept[0]);
	sb_waker_drop(c->t.kept[0]);
}
static void late_wake_from_b(void *p)
{
	task_ctx *c = p;
	play(&role_b);
	sb_waker_wake(c->t.kept[1]); /* maybe after the task finished */
}
static void late_check(void *p)
{
	task_ctx *c = p;
	settle();
	MODEL_CHECK(c->t.seen == 1);
	MODEL_CHECK(c->t.polls <= 3); /* the first poll, then at most one per wake */
	check_done(&c->t, 0);
}

/* --- a joiner racing the completion ------------------------------------- */

static void join_setup(void *p)
{
	task_ctx *c = p;
	world_setup(false);
	spawn_waiting(&c->t, 1, 1, false);
	counting_waker_init(&c->joiner);
	atomic_store(&posted, 1);
	sb_waker_wake(c->t.kept[0]); /* queued: the owner's next run finishes it */
}
static void joiner(void *p)
{
	task_ctx *c = p;
	play(&role_none);
	sb_waker w = counting_waker_ref(&c->joiner);
	c->join_first = sb_join_poll(&c->t.join, &w);
	if (c->join_first == SB_PENDING)
		(void)sb_join_poll(&c->t.join, &w); /* again, with the same waker */
}
static void join_check(void *p)
{
	task_ctx *c = p;
	settle();
	if (c->t.join.status == SB_PENDING) /* the joiner saw it unfinished: it must have been told */
		MODEL_CHECK(atomic_load(&c->joiner.wakes) >= 1);
	else
		MODEL_CHECK(c->t.join.status == 0);
	MODEL_CHECK(atomic_load(&c->joiner.live) == 0); /* every clone woken or dropped */
	check_done(&c->t, 0);
}

/* --- a remote wake racing destroy's cancel ------------------------------ */

static void cancel_setup(void *p)
{
	world_setup(false);
	spawn_waiting(&((task_ctx *)p)->t, 0, 1, false); /* never finishes by itself */
}
static void destroy_a(void *p)
{
	task_ctx *c = p;
	play(&role_a);
	c->cancelled = cancel_unfinished(&exec_a);
}
static void remote_wake(void *p)
{
	task_ctx *c = p;
	play(&role_none);
	sb_waker_wake(c->t.kept[0]);
}
static void cancel_check(void *p)
{
	task_ctx *c = p;
	/* destroy goes on until the task it found on its way has come home */
	while (!(atomic_load(&c->t.task.state) & T_DONE) || !no_pushers())
		c->cancelled += cancel_unfinished(&exec_a);
	MODEL_CHECK(c->cancelled == 1);
	MODEL_CHECK(c->t.cancels == 1);
	MODEL_CHECK(c->t.polls == 1); /* never polled again */
	MODEL_CHECK(atomic_load(&c->t.task.state) & T_CANCELLED);
	check_done(&c->t, -ECANCELED);
}

/* --- a floating task: a move to the waker's loop racing a wake home ------ */

static void float_setup(void *p)
{
	world_setup(true);
	spawn_waiting(&((task_ctx *)p)->t, 1, 2, true);
}
static void post_wake_and_loop_b(void *p)
{
	task_ctx *c = p;
	play(&role_b); /* a live loop of the group: takes the task */
	atomic_store(&posted, 1);
	sb_waker_wake(c->t.kept[0]);
	run_queued(&exec_b);
}
static void wake_from_c(void *p)
{
	task_ctx *c = p;
	play(&role_c); /* a loop outside the group: sends it to where it last ran */
	sb_waker_wake(c->t.kept[1]);
}
static void float_check(void *p)
{
	task_ctx *c = p;
	settle();
	MODEL_CHECK(c->t.seen == 1);
	MODEL_CHECK(c->t.polls <= 3);
	check_done(&c->t, 0);
}

/* --- a floating task pinned by a timer that fires as a waker takes it ---- */

static void pin_setup(void *p)
{
	task_ctx *c = p;
	world_setup(true);
	spawn_waiting(&c->t, 1, 2, true);
	/* its first poll armed a sleep on exec_a */
	atomic_store(&c->t.task.pins, 1);
}
static void timer_fires_on_a(void *p)
{
	task_ctx *c = p;
	play(&role_a);
	sb__sched_unpin(&c->t.task); /* as sb__timers_fire: unpin, then wake */
	sb_waker_wake(c->t.kept[1]);
	run_queued(&exec_a);
}
static void pin_check(void *p)
{
	task_ctx *c = p;
	settle();
	MODEL_CHECK(c->t.pinned_moves == 0);
	MODEL_CHECK(c->t.seen == 1);
	check_done(&c->t, 0);
}

static const sb_model_scenario scenarios[] = {
	{ "task: a remote wake racing the poll that reads what it posted", 2, sizeof(task_ctx),
	  wake_setup, { loop_a, post_and_wake }, wake_check },
	{ "task: wakes by value and by reference racing the completing poll", 3,
	  sizeof(task_ctx), late_setup, { loop_a, post_and_wake_by_ref, late_wake_from_b },
	  late_check },
	{ "task: a joiner racing the completion", 2, sizeof(task_ctx), join_setup,
	  { joiner, loop_a }, join_check },
	{ "task: a remote wake racing destroy's cancel", 2, sizeof(task_ctx), cancel_setup,
	  { destroy_a, remote_wake }, cancel_check },
	{ "task: a floating move racing a wake home and the old loop", 3, sizeof(task_ctx),
	  float_setup, { loop_a, post_wake_and_loop_b, wake_from_c }, float_check },
	{ "task: a floating move racing the timer that pins it", 2, sizeof(task_ctx),
	  pin_setup, { timer_fires_on_a, post_wake_and_loop_b }, pin_check },
};

static void every_task_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	assert_true(sb_model_explore_all(scenarios, sizeof(scenarios) / sizeof(scenarios[0]),
					 PREEMPTIONS, -1, LIMIT));
}

static void every_task_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	assert_true(sb_model_random_all(scenarios, sizeof(scenarios) / sizeof(scenarios[0]), SEED,
					RANDOM_RUNS, -1));
	printf("random: %d schedules per scenario from seed %d\n", RANDOM_RUNS, SEED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_task_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_task_scenario_holds_over_random_schedules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
