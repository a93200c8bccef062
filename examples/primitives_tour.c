/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tour (primitives_tour.h): five kinds of loop task and the plain
 * threads they meet.  Each task is a small state machine in its poll
 * function, driving its futures with the waker the loop gives it.
 */
#include "primitives_tour.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static atomic_int failures;

#define EXPECT(cond)                                                                       \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
			atomic_fetch_add(&failures, 1);                                    \
		}                                                                          \
	} while (0)

/* --- 1. a gate: permits released by another thread, taken in FIFO order --- */

enum { GATE_TASKS = 8 };

static sb_semaphore gate = SB_SEMAPHORE_INIT(0);
static sb_event gate_open = SB_EVENT_INIT(0); /* set once every permit is out */

struct gate_task {
	sb_loop_task task;
	sb_semaphore_acquire acquire;
	int index;
};

static struct gate_task gate_tasks[GATE_TASKS];
static int gate_order[GATE_TASKS];
static int gate_passed;

static int gate_poll(sb_loop_task *t, const sb_waker *w)
{
	struct gate_task *g = SB_CONTAINER_OF(t, struct gate_task, task);
	int r = sb_semaphore_acquire_poll(&g->acquire, w);
	if (r == SB_PENDING)
		return SB_PENDING;
	EXPECT(r == 0);
	gate_order[gate_passed++] = g->index;
	return 0;
}

static void *gate_keeper(void *arg)
{
	(void)arg;
	for (int i = 0; i < GATE_TASKS; i++)
		EXPECT(sb_semaphore_release(&gate, 1) == 0);
	sb_event_set(&gate_open);
	return NULL;
}

/* --- 2. a bounded queue a thread fills, under a mutex and two condvars --- */

enum { ITEMS = 200, SLOTS = 4 };

static sb_mutex queue_mutex = SB_MUTEX_INIT;
static sb_condvar not_empty = SB_CONDVAR_INIT, not_full = SB_CONDVAR_INIT;
static int queue[SLOTS], queue_head, queue_len; /* under queue_mutex */

static void *producer(void *arg)
{
	(void)arg;
	for (int item = 1; item <= ITEMS; item++) {
		EXPECT(sb_mutex_lock_blocking(&queue_mutex, SB_TIMEOUT_INFINITE) == 0);
		while (queue_len == SLOTS)
			sb_condvar_wait_blocking(&not_full, &queue_mutex, SB_TIMEOUT_INFINITE);
		queue[(queue_head + queue_len++) % SLOTS] = item;
		sb_condvar_notify_one(&not_empty);
		sb_mutex_unlock(&queue_mutex);
	}
	return NULL;
}

enum consumer_step { UNLOCKED, LOCKING, LOCKED, WAITING };

static struct consumer {
	sb_loop_task task;
	enum consumer_step step;
	sb_mutex_lock lock;
	sb_condvar_wait wait;
	int last; /* the last item taken: items come in order */
} consumer;

static int consumer_poll(sb_loop_task *t, const sb_waker *w)
{
	struct consumer *c = SB_CONTAINER_OF(t, struct consumer, task);
	for (;;) {
		switch (c->step) {
		case UNLOCKED:
			if (c->last == ITEMS)
				return 0;
			sb_mutex_lock_init(&c->lock, &queue_mutex);
			c->step = LOCKING;
			/* fall through */
		case LOCKING:
			if (sb_mutex_lock_poll(&c->lock, w) == SB_PENDING)
				return SB_PENDING;
			c->step = LOCKED;
			/* fall through */
		case LOCKED:
			if (queue_len == 0) {
				/* Gives the mutex up while it waits, and has it back after. */
				sb_condvar_wait_init(&c->wait, &not_empty, &queue_mutex);
				c->step = WAITING;
				break;
			}
			EXPECT(queue[queue_head] == c->last + 1);
			c->last = queue[queue_head];
			queue_head = (queue_head + 1) % SLOTS;
			queue_len--;
			sb_condvar_notify_one(&not_full);
			sb_mutex_unlock(&queue_mutex);
			c->step = UNLOCKED;
			break;
		case WAITING: {
			int r = sb_condvar_wait_poll(&c->wait, w);
			if (r == SB_PENDING)
				return SB_PENDING; /* also after a notify, until the mutex is ours */
			EXPECT(r == 0);
			c->step = LOCKED;
			break;
		}
		}
	}
}

/* --- 3. ping-pong with a thread through two auto-reset events ------------ */

enum { ROUNDS = 200 };

static sb_auto_event ping = SB_AUTO_EVENT_INIT(0), pong = SB_AUTO_EVENT_INIT(0);

static struct ponger {
	sb_loop_task task;
	sb_auto_event_wait wait;
	bool waiting;
	int rounds;
} ponger;

static int ponger_poll(sb_loop_task *t, const sb_waker *w)
{
	struct ponger *p = SB_CONTAINER_OF(t, struct ponger, task);
	while (p->rounds < ROUNDS) {
		if (!p->waiting) {
			sb_auto_event_wait_init(&p->wait, &ping);
			p->waiting = true;
		}
		if (sb_auto_event_wait_poll(&p->wait, w) == SB_PENDING)
			return SB_PENDING;
		p->waiting = false;
		p->rounds++;
		sb_auto_event_set(&pong);
	}
	return 0;
}

static sb_semaphore race = SB_SEMAPHORE_INIT(0);

static void *pinger(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		sb_auto_event_set(&ping);
		EXPECT(sb_auto_event_wait_blocking(&pong, SB_TIMEOUT_INFINITE) == 0);
	}
	/* The permit a deadline races for (below): granted, or too late. */
	EXPECT(sb_semaphore_release(&race, 1) == 0);
	return NULL;
}

/* --- 4. deadlines kept by the loop's timers ------------------------------ */

static sb_semaphore never = SB_SEMAPHORE_INIT(0);  /* nobody releases it */
static sb_mutex lonely_mutex = SB_MUTEX_INIT;
static sb_condvar lonely = SB_CONDVAR_INIT;       /* nobody notifies it */

struct timed_task {
	sb_loop_task task;
	const char *what;
	unsigned ms;
	void *inner;               /* initialised by tour_start */
	const sb_future_ops *ops;
	sb_deadline deadline;
	tour_timer *timer;
	int result;
	int expected;              /* 1: either 0 or -ETIMEDOUT (a race) */
};

static int timed_poll(sb_loop_task *t, const sb_waker *w)
{
	struct timed_task *tt = SB_CONTAINER_OF(t, struct timed_task, task);
	if (!tt->timer) {
		sb_deadline_init(&tt->deadline, tt->inner, tt->ops);
		tt->timer = tour_timer_start(tt->ms, &tt->deadline, t);
	}
	int r = sb_deadline_poll(&tt->deadline, w);
	if (r == SB_PENDING)
		return SB_PENDING;
	tour_timer_stop(tt->timer); /* done either way: the timer goes first */
	tt->result = r;
	return 0;
}

static sb_semaphore_acquire never_acquire, race_acquire;
static sb_condvar_wait lonely_wait;
static sb_event_wait gate_wait;

static struct timed_task timed[] = {
	{ .what = "acquire nobody grants, 20 ms", .ms = 20, .inner = &never_acquire,
	  .ops = &sb_semaphore_acquire_ops, .expected = -ETIMEDOUT },
	{ .what = "condvar wait nobody notifies, 10 ms", .ms = 10, .inner = &lonely_wait,
	  .ops = &sb_condvar_wait_ops, .expected = -ETIMEDOUT },
	{ .what = "event a thread sets, 10 s", .ms = 10000, .inner = &gate_wait,
	  .ops = &sb_event_wait_ops, .expected = 0 },
	{ .what = "acquire racing a release, 2 ms", .ms = 2, .inner = &race_acquire,
	  .ops = &sb_semaphore_acquire_ops, .expected = 1 },
};
enum { TIMED = sizeof(timed) / sizeof(timed[0]) };

/* --- start and finish ---------------------------------------------------- */

static pthread_t threads[3];

int tour_start(sb_loop *loop)
{
	for (int i = 0; i < GATE_TASKS; i++) {
		gate_tasks[i].index = i;
		sb_semaphore_acquire_init(&gate_tasks[i].acquire, &gate, 1);
		sb_loop_task_init(&gate_tasks[i].task, gate_poll, NULL);
		sb_loop_spawn(loop, &gate_tasks[i].task);
	}
	sb_loop_task_init(&consumer.task, consumer_poll, NULL);
	sb_loop_spawn(loop, &consumer.task);
	sb_loop_task_init(&ponger.task, ponger_poll, NULL);
	sb_loop_spawn(loop, &ponger.task);

	sb_semaphore_acquire_init(&never_acquire, &never, 1);
	sb_semaphore_acquire_init(&race_acquire, &race, 1);
	sb_event_wait_init(&gate_wait, &gate_open);
	if (sb_mutex_try_lock(&lonely_mutex) != 0) /* a condvar wait starts locked */
		return -1;
	sb_condvar_wait_init(&lonely_wait, &lonely, &lonely_mutex);
	for (int i = 0; i < TIMED; i++) {
		sb_loop_task_init(&timed[i].task, timed_poll, NULL);
		sb_loop_spawn(loop, &timed[i].task);
	}

	void *(*mains[3])(void *) = { gate_keeper, producer, pinger };
	for (int i = 0; i < 3; i++)
		if (pthread_create(&threads[i], NULL, mains[i], NULL) != 0)
			return -1;
	return 0;
}

int tour_finish(void)
{
	for (int i = 0; i < 3; i++)
		pthread_join(threads[i], NULL);

	EXPECT(gate_passed == GATE_TASKS);
	for (int i = 0; i < gate_passed; i++)
		EXPECT(gate_order[i] == i); /* strict FIFO */
	EXPECT(sb_semaphore_available(&gate) == 0);
	EXPECT(consumer.last == ITEMS && queue_len == 0);
	EXPECT(!sb_mutex_is_locked(&queue_mutex));
	EXPECT(ponger.rounds == ROUNDS);
	EXPECT(sb_auto_event_try_wait(&ping) == -EAGAIN);

	for (int i = 0; i < TIMED; i++) {
		int r = timed[i].result;
		printf("deadline: %-38s %s\n", timed[i].what,
		       r == 0 ? "completed" : r == -ETIMEDOUT ? "-ETIMEDOUT" : strerror(-r));
		if (timed[i].expected == 1)
			EXPECT(timed[i].result == 0 || timed[i].result == -ETIMEDOUT);
		else
			EXPECT(timed[i].result == timed[i].expected);
	}
	/* What the deadlines cancelled left nothing behind: */
	EXPECT(sb_semaphore_destroy(&never) == 0);  /* no waiter left queued */
	EXPECT(!sb_mutex_is_locked(&lonely_mutex)); /* the wait gave the mutex up */
	EXPECT(sb_condvar_destroy(&lonely) == 0);
	/* The raced permit: ours (give it back) or never granted; never lost. */
	if (timed[TIMED - 1].result == 0)
		sb_semaphore_release(&race, 1);
	EXPECT(sb_semaphore_available(&race) == 1);

	printf("gate: %d tasks in FIFO order; queue: %d items; ping-pong: %d rounds\n",
	       gate_passed, consumer.last, ponger.rounds);
	int failed = atomic_load(&failures);
	printf("%s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
