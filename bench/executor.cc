// SPDX-License-Identifier: Apache-2.0
//
// bench/executor.cc - the executor and cross-thread rows of bench/README.md on
// syncband_uring, with real wakers.  Sizes follow smol's async-executor
// benches, as bench/peers does; one round is one iteration of the table, so
// executor/spawn-many-local reports ns per 25,000 spawns.
//
// Tasks are intrusive (a struct embeds sb_task and names a poll function), so
// the task structs a batch needs are allocated before its timed segment and
// reused round after round; spawning never allocates.  That is the library's
// design, not a harness shortcut: the peers allocate per spawn because their
// executors do.
//
// The executor (or executor group) is created before the timed segment and
// destroyed after it, except in executor/create, where that is the work.
// Every poll result that the scenario determines is checked; a wrong one
// aborts the run.
#include <errno.h>

#include <memory>
#include <vector>

#include <syncband/event.h>
#include <syncband/executor.h>
#include <syncband/mutex.h>
#include <syncband/semaphore.h>

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

constexpr int SPAWN_BATCH = 250;     // executor/spawn-batch
constexpr int LIGHT_TASKS = 25000;   // executor/spawn-many-local
constexpr int TASKS = 300;           // chains, yielding tasks, ring size
constexpr int STEPS = 300;           // depth, yields per task, laps of the token
constexpr uint64_t TASKS_PER_THREAD = 64; // contention rows

template <class T> T *of(sb_task *t)
{
	return SB_CONTAINER_OF(t, T, task);
}

// An executor for the length of one batch.
struct Executor {
	sb_executor ex;
	Executor() { expect(sb_executor_init(&ex, nullptr), 0, "sb_executor_init"); }
	~Executor()
	{
		size_t cancelled = 99;
		expect(sb_executor_destroy(&ex, &cancelled), 0, "sb_executor_destroy");
		expect((long)cancelled, 0, "no task left unfinished");
	}
	void run() { expect(sb_executor_run(&ex), 0, "sb_executor_run"); }
};

int empty_poll(sb_task *, const sb_waker *)
{
	return 0;
}

// Awaits joins[*next .. n) in order; SB_PENDING while one is unfinished.
int await_in_order(sb_join *joins, int n, int *next, const sb_waker *w)
{
	while (*next < n) {
		int r = sb_join_poll(&joins[*next], w);
		if (r == SB_PENDING)
			return SB_PENDING;
		expect(r, 0, "the joined task's result");
		++*next;
	}
	return 0;
}

// Spawns `t` with `j` onto `ex`, checking the result.
void spawn(sb_executor *ex, sb_task *t, sb_join *j)
{
	expect(sb_spawn(ex, t, j), 0, "sb_spawn");
}

// ------------------------------------------------------------ executor/create

// Create an executor, spawn one empty task, run it, await its join, destroy.
uint64_t create(const sbb::Params &p, sbb::Meter &m)
{
	sb_task t;
	sb_task_init(&t, empty_poll, nullptr, nullptr);
	m.start();
	for (uint64_t i = 0; i < p.rounds; i++) {
		sb_executor ex;
		expect(sb_executor_init(&ex, nullptr), 0, "sb_executor_init");
		sb_join j;
		spawn(&ex, &t, &j);
		expect(sb_executor_run(&ex), 0, "sb_executor_run");
		expect(sb_join_poll(&j, noop()), 0, "join after run");
		size_t cancelled = 99;
		expect(sb_executor_destroy(&ex, &cancelled), 0, "sb_executor_destroy");
		expect((long)cancelled, 0, "nothing cancelled");
	}
	m.stop();
	return p.rounds;
}
// 0.1-0.5 ms a round on the 2-core machine (an io_uring and an eventfd are
// created and torn down each round, mostly kernel time), so 1,000 rounds, not
// the peers' 100,000, keep a batch near their 0.1-0.5 s.
SBB_BATCH(create, "executor/create", sbb::SYNCBAND, 1000);

// ------------------------------------------------------------ executor/spawn-one

struct SpawnOneDriver {
	sb_task task;
	sb_task child;
	sb_join join;
	sb_executor *ex;
	uint64_t left;
	bool spawned;

	static int poll(sb_task *t, const sb_waker *w)
	{
		SpawnOneDriver *d = of<SpawnOneDriver>(t);
		while (d->left > 0) {
			if (!d->spawned) {
				spawn(d->ex, &d->child, &d->join);
				d->spawned = true;
			}
			int r = sb_join_poll(&d->join, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "join of the empty task");
			d->spawned = false;
			d->left--;
		}
		return 0;
	}
};

// Spawn one empty task and await its join future, from a driver task.
uint64_t spawn_one(const sbb::Params &p, sbb::Meter &m)
{
	Executor e;
	SpawnOneDriver d;
	sb_task_init(&d.task, SpawnOneDriver::poll, nullptr, nullptr);
	sb_task_init(&d.child, empty_poll, nullptr, nullptr);
	d.ex = &e.ex;
	d.left = p.rounds;
	d.spawned = false;
	m.start();
	spawn(&e.ex, &d.task, nullptr);
	e.run();
	m.stop();
	expect((long)d.left, 0, "every round ran");
	return p.rounds;
}
SBB_BATCH(spawn_one, "executor/spawn-one", sbb::SYNCBAND, 1000000);

// ------------------------------------------------------------ executor/spawn-batch

struct YieldOnce {
	sb_task task;
	sb_yield y;
	static int poll(sb_task *t, const sb_waker *w)
	{
		return sb_yield_poll(&of<YieldOnce>(t)->y, w);
	}
};

// Spawn 250 tasks that each yield once.  Only the spawns are timed; the
// tasks are then run and joined outside the segment.
uint64_t spawn_batch(const sbb::Params &p, sbb::Meter &m)
{
	Executor e;
	YieldOnce tasks[SPAWN_BATCH];
	sb_join joins[SPAWN_BATCH];
	for (YieldOnce &t : tasks)
		sb_task_init(&t.task, YieldOnce::poll, nullptr, nullptr);
	for (uint64_t i = 0; i < p.rounds; i++) {
		m.start();
		for (int k = 0; k < SPAWN_BATCH; k++) {
			sb_yield_init(&tasks[k].y);
			spawn(&e.ex, &tasks[k].task, &joins[k]);
		}
		m.stop();
		e.run();
		for (sb_join &j : joins)
			expect(sb_join_poll(&j, noop()), 0, "join of the yielding task");
	}
	return p.rounds;
}
SBB_BATCH(spawn_batch, "executor/spawn-batch", sbb::SYNCBAND, 10000);

// ------------------------------------------------------------ executor/spawn-many-local

struct ManyDriver {
	sb_task task;
	sb_executor *ex;
	sb_task *children;
	sb_join *joins;
	uint64_t left;
	int next;
	bool spawned;

	static int poll(sb_task *t, const sb_waker *w)
	{
		ManyDriver *d = of<ManyDriver>(t);
		while (d->left > 0) {
			if (!d->spawned) {
				for (int k = 0; k < LIGHT_TASKS; k++)
					spawn(d->ex, &d->children[k], &d->joins[k]);
				d->spawned = true;
				d->next = 0;
			}
			if (await_in_order(d->joins, LIGHT_TASKS, &d->next, w) == SB_PENDING)
				return SB_PENDING;
			d->spawned = false;
			d->left--;
		}
		return 0;
	}
};

// Spawn 25,000 empty tasks, then await them in order.
uint64_t spawn_many_local(const sbb::Params &p, sbb::Meter &m)
{
	Executor e;
	std::unique_ptr<sb_task[]> children(new sb_task[LIGHT_TASKS]);
	std::unique_ptr<sb_join[]> joins(new sb_join[LIGHT_TASKS]);
	for (int k = 0; k < LIGHT_TASKS; k++)
		sb_task_init(&children[k], empty_poll, nullptr, nullptr);
	ManyDriver d;
	sb_task_init(&d.task, ManyDriver::poll, nullptr, nullptr);
	d.ex = &e.ex;
	d.children = children.get();
	d.joins = joins.get();
	d.left = p.rounds;
	d.next = 0;
	d.spawned = false;
	m.start();
	spawn(&e.ex, &d.task, nullptr);
	e.run();
	m.stop();
	expect((long)d.left, 0, "every round ran");
	return p.rounds;
}
SBB_BATCH(spawn_many_local, "executor/spawn-many-local", sbb::SYNCBAND, 30);

// ------------------------------------------------------------ executor/spawn-recursively

// One level of a chain: spawns the next level and awaits it.
struct Chain {
	sb_task task;
	sb_join join;
	sb_executor *ex;
	Chain *child; // the next level's struct
	int remaining;
	bool spawned;

	static int poll(sb_task *t, const sb_waker *w)
	{
		Chain *c = of<Chain>(t);
		if (c->remaining == 0)
			return 0;
		if (!c->spawned) {
			c->child->remaining = c->remaining - 1;
			c->child->spawned = false;
			spawn(c->ex, &c->child->task, &c->join);
			c->spawned = true;
		}
		int r = sb_join_poll(&c->join, w);
		if (r == SB_PENDING)
			return SB_PENDING;
		expect(r, 0, "join of the next level");
		return 0;
	}
};

struct ChainsDriver {
	sb_task task;
	Chain *chains; // TASKS chains of STEPS levels
	sb_join joins[TASKS];
	sb_executor *ex;
	uint64_t left;
	int next;
	bool spawned;

	static int poll(sb_task *t, const sb_waker *w)
	{
		ChainsDriver *d = of<ChainsDriver>(t);
		while (d->left > 0) {
			if (!d->spawned) {
				for (int k = 0; k < TASKS; k++) {
					Chain *root = &d->chains[k * STEPS];
					root->remaining = STEPS - 1; // the root is the first spawn
					root->spawned = false;
					spawn(d->ex, &root->task, &d->joins[k]);
				}
				d->spawned = true;
				d->next = 0;
			}
			if (await_in_order(d->joins, TASKS, &d->next, w) == SB_PENDING)
				return SB_PENDING;
			d->spawned = false;
			d->left--;
		}
		return 0;
	}
};

// 300 chains, each 300 spawns deep (90,000 spawns a round).
uint64_t spawn_recursively(const sbb::Params &p, sbb::Meter &m)
{
	Executor e;
	std::unique_ptr<Chain[]> chains(new Chain[TASKS * STEPS]);
	for (int k = 0; k < TASKS * STEPS; k++) {
		Chain &c = chains[k];
		sb_task_init(&c.task, Chain::poll, nullptr, nullptr);
		c.ex = &e.ex;
		c.child = (k % STEPS == STEPS - 1) ? nullptr : &chains[k + 1];
		c.remaining = 0;
		c.spawned = false;
	}
	std::unique_ptr<ChainsDriver> d(new ChainsDriver);
	sb_task_init(&d->task, ChainsDriver::poll, nullptr, nullptr);
	d->chains = chains.get();
	d->ex = &e.ex;
	d->left = p.rounds;
	d->next = 0;
	d->spawned = false;
	m.start();
	spawn(&e.ex, &d->task, nullptr);
	e.run();
	m.stop();
	expect((long)d->left, 0, "every round ran");
	return p.rounds;
}
SBB_BATCH(spawn_recursively, "executor/spawn-recursively", sbb::SYNCBAND, 10);

// ------------------------------------------------------------ executor/yield-now

struct Yielder {
	sb_task task;
	sb_yield y;
	int left;
	static int poll(sb_task *t, const sb_waker *w)
	{
		Yielder *y = of<Yielder>(t);
		while (y->left > 0) {
			if (sb_yield_poll(&y->y, w) == SB_PENDING)
				return SB_PENDING;
			y->left--;
			sb_yield_init(&y->y);
		}
		return 0;
	}
};

struct YieldDriver {
	sb_task task;
	Yielder tasks[TASKS];
	sb_join joins[TASKS];
	sb_executor *ex;
	uint64_t left;
	int next;
	bool spawned;

	static int poll(sb_task *t, const sb_waker *w)
	{
		YieldDriver *d = of<YieldDriver>(t);
		while (d->left > 0) {
			if (!d->spawned) {
				for (int k = 0; k < TASKS; k++) {
					d->tasks[k].left = STEPS;
					sb_yield_init(&d->tasks[k].y);
					spawn(d->ex, &d->tasks[k].task, &d->joins[k]);
				}
				d->spawned = true;
				d->next = 0;
			}
			if (await_in_order(d->joins, TASKS, &d->next, w) == SB_PENDING)
				return SB_PENDING;
			d->spawned = false;
			d->left--;
		}
		return 0;
	}
};

// 300 tasks x 300 yields.
uint64_t yield_now(const sbb::Params &p, sbb::Meter &m)
{
	Executor e;
	std::unique_ptr<YieldDriver> d(new YieldDriver);
	sb_task_init(&d->task, YieldDriver::poll, nullptr, nullptr);
	for (Yielder &y : d->tasks)
		sb_task_init(&y.task, Yielder::poll, nullptr, nullptr);
	d->ex = &e.ex;
	d->left = p.rounds;
	d->next = 0;
	d->spawned = false;
	m.start();
	spawn(&e.ex, &d->task, nullptr);
	e.run();
	m.stop();
	expect((long)d->left, 0, "every round ran");
	return p.rounds;
}
SBB_BATCH(yield_now, "executor/yield-now", sbb::SYNCBAND, 40);

// ------------------------------------------------------------ executor/channels

// A one-slot channel carrying a token, from two semaphores: `items` counts
// tokens in the slot, `slots` free slots.  send = acquire(slots), release(items);
// recv = acquire(items), release(slots).
struct Channel {
	sb_semaphore items;
	sb_semaphore slots;
	void init()
	{
		expect(sb_semaphore_init(&items, 0), 0, "channel init");
		expect(sb_semaphore_init(&slots, 1), 0, "channel init");
	}
	void destroy()
	{
		expect((long)sb_semaphore_available(&items), 0, "the channel is empty");
		expect(sb_semaphore_destroy(&items), 0, "channel destroy");
		expect(sb_semaphore_destroy(&slots), 0, "channel destroy");
	}
};

// Moves a token through a channel: one future at a time.
struct Mover {
	sb_semaphore_acquire acq;
	bool started = false;
	// Takes one unit of `take` (waiting), then gives one unit to `give`.
	int step(sb_semaphore *take, sb_semaphore *give, const sb_waker *w)
	{
		if (!started) {
			sb_semaphore_acquire_init(&acq, take, 1);
			started = true;
		}
		int r = sb_semaphore_acquire_poll(&acq, w);
		if (r == SB_PENDING)
			return SB_PENDING;
		expect(r, 0, "channel acquire");
		started = false;
		expect(sb_semaphore_release(give, 1), 0, "channel release");
		return 0;
	}
	int recv(Channel *c, const sb_waker *w) { return step(&c->items, &c->slots, w); }
	int send(Channel *c, const sb_waker *w) { return step(&c->slots, &c->items, w); }
};

// A ring member: receives from `in` and sends to `out`, STEPS times.
struct RingTask {
	sb_task task;
	Channel *in, *out;
	Mover mv;
	int left;
	bool sending;

	static int poll(sb_task *t, const sb_waker *w)
	{
		RingTask *r = of<RingTask>(t);
		while (r->left > 0) {
			if (!r->sending) {
				if (r->mv.recv(r->in, w) == SB_PENDING)
					return SB_PENDING;
				r->sending = true;
			}
			if (r->mv.send(r->out, w) == SB_PENDING)
				return SB_PENDING;
			r->sending = false;
			r->left--;
		}
		return 0;
	}
};

struct RingDriver {
	sb_task task;
	Channel channels[TASKS + 1]; // channels[0] feeds task 0; task k sends to k + 1
	RingTask ring[TASKS];
	sb_join joins[TASKS];
	sb_executor *ex;
	Mover mv;
	uint64_t left;
	int laps;
	int next;
	int phase; // 0: build, 1: send, 2: receive, 3: join

	static int poll(sb_task *t, const sb_waker *w)
	{
		RingDriver *d = of<RingDriver>(t);
		while (d->left > 0) {
			switch (d->phase) {
			case 0: // building the ring is part of the round
				for (Channel &c : d->channels)
					c.init();
				for (int k = 0; k < TASKS; k++) {
					RingTask &r = d->ring[k];
					r.in = &d->channels[k];
					r.out = &d->channels[k + 1];
					r.left = STEPS;
					r.sending = false;
					spawn(d->ex, &r.task, &d->joins[k]);
				}
				d->laps = 0;
				d->phase = 1;
				/* fall through */
			case 1:
				if (d->mv.send(&d->channels[0], w) == SB_PENDING)
					return SB_PENDING;
				d->phase = 2;
				/* fall through */
			case 2:
				if (d->mv.recv(&d->channels[TASKS], w) == SB_PENDING)
					return SB_PENDING;
				if (++d->laps < STEPS) {
					d->phase = 1;
					continue;
				}
				d->next = 0;
				d->phase = 3;
				/* fall through */
			case 3:
				if (await_in_order(d->joins, TASKS, &d->next, w) == SB_PENDING)
					return SB_PENDING;
				for (Channel &c : d->channels)
					c.destroy();
				d->phase = 0;
				d->left--;
			}
		}
		return 0;
	}
};

// A ring of 300 tasks joined by one-slot channels; a token goes round 300
// times.
uint64_t channels(const sbb::Params &p, sbb::Meter &m)
{
	Executor e;
	std::unique_ptr<RingDriver> d(new RingDriver);
	sb_task_init(&d->task, RingDriver::poll, nullptr, nullptr);
	for (RingTask &r : d->ring)
		sb_task_init(&r.task, RingTask::poll, nullptr, nullptr);
	d->ex = &e.ex;
	d->left = p.rounds;
	d->phase = 0;
	m.start();
	spawn(&e.ex, &d->task, nullptr);
	e.run();
	m.stop();
	expect((long)d->left, 0, "every round ran");
	return p.rounds;
}
SBB_BATCH(channels, "executor/channels", sbb::SYNCBAND, 20);

// ------------------------------------------------------------ executor/queued-handoff

// Task A: acquires the one permit (ready on its first poll), yields, releases.
struct HolderA {
	sb_task task;
	sb_semaphore *sem;
	sb_semaphore_acquire acq;
	sb_yield y;
	int phase;
	int polls; // polls of the acquire future
	static int poll(sb_task *t, const sb_waker *w)
	{
		HolderA *a = of<HolderA>(t);
		if (a->phase == 0) {
			sb_semaphore_acquire_init(&a->acq, a->sem, 1);
			a->polls = 0;
			a->phase = 1;
		}
		if (a->phase == 1) {
			a->polls++;
			int r = sb_semaphore_acquire_poll(&a->acq, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "A acquires");
			sb_yield_init(&a->y);
			a->phase = 2;
		}
		if (sb_yield_poll(&a->y, w) == SB_PENDING)
			return SB_PENDING;
		expect(sb_semaphore_release(a->sem, 1), 0, "A releases");
		return 0;
	}
};

// Task B: queues behind A, is handed the permit, releases it.
struct QueuedB {
	sb_task task;
	sb_semaphore *sem;
	sb_semaphore_acquire acq;
	int phase;
	int polls;
	static int poll(sb_task *t, const sb_waker *w)
	{
		QueuedB *b = of<QueuedB>(t);
		if (b->phase == 0) {
			sb_semaphore_acquire_init(&b->acq, b->sem, 1);
			b->polls = 0;
			b->phase = 1;
		}
		b->polls++;
		int r = sb_semaphore_acquire_poll(&b->acq, w);
		if (r == SB_PENDING)
			return SB_PENDING;
		expect(r, 0, "B acquires");
		expect(sb_semaphore_release(b->sem, 1), 0, "B releases");
		return 0;
	}
};

struct HandoffDriver {
	sb_task task;
	HolderA a;
	QueuedB b;
	sb_join joins[2];
	sb_executor *ex;
	uint64_t left;
	int next;
	bool spawned;
	static int poll(sb_task *t, const sb_waker *w)
	{
		HandoffDriver *d = of<HandoffDriver>(t);
		while (d->left > 0) {
			if (!d->spawned) {
				d->a.phase = 0;
				d->b.phase = 0;
				spawn(d->ex, &d->a.task, &d->joins[0]);
				spawn(d->ex, &d->b.task, &d->joins[1]);
				d->spawned = true;
				d->next = 0;
			}
			if (await_in_order(d->joins, 2, &d->next, w) == SB_PENDING)
				return SB_PENDING;
			expect(d->a.polls, 1, "A acquires on its first poll");
			if (d->b.polls < 2)
				sbb::wrong_result("B queues (polls of B's acquire >= 2)", 2, d->b.polls);
			d->spawned = false;
			d->left--;
		}
		return 0;
	}
};

// A limiter of one permit: A holds and yields, B queues, A releases, B runs
// and finishes.  One round = one pair.
uint64_t queued_handoff(const sbb::Params &p, sbb::Meter &m)
{
	Executor e;
	sb_semaphore sem;
	expect(sb_semaphore_init(&sem, 1), 0, "init");
	HandoffDriver d;
	sb_task_init(&d.task, HandoffDriver::poll, nullptr, nullptr);
	sb_task_init(&d.a.task, HolderA::poll, nullptr, nullptr);
	sb_task_init(&d.b.task, QueuedB::poll, nullptr, nullptr);
	d.a.sem = d.b.sem = &sem;
	d.ex = &e.ex;
	d.left = p.rounds;
	d.spawned = false;
	m.start();
	spawn(&e.ex, &d.task, nullptr);
	e.run();
	m.stop();
	expect((long)d.left, 0, "every round ran");
	expect((long)sb_semaphore_available(&sem), 1, "the permit is back");
	expect(sb_semaphore_destroy(&sem), 0, "destroy");
	return p.rounds;
}
SBB_BATCH(queued_handoff, "executor/queued-handoff", sbb::SYNCBAND, 300000);

// ------------------------------------------------------------ notify/fan-out-N

// A long-lived waiter: `rounds` times, registers a wait on the manual-reset
// event (pending on its first poll) and waits to be released.
struct Waiter {
	sb_task task;
	sb_event *event;
	sb_event_wait wait;
	uint64_t *registered;
	uint64_t left;
	bool waiting;
	static int poll(sb_task *t, const sb_waker *w)
	{
		Waiter *x = of<Waiter>(t);
		while (x->left > 0) {
			if (!x->waiting) {
				sb_event_wait_init(&x->wait, x->event);
				expect(sb_event_wait_poll(&x->wait, w), SB_PENDING,
				       "a new wait registers (the event was reset)");
				x->waiting = true;
				++*x->registered; // one thread: no atomics needed
				return SB_PENDING;
			}
			int r = sb_event_wait_poll(&x->wait, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "wait after set");
			x->waiting = false;
			x->left--;
		}
		return 0;
	}
};

// Each round: yields until all N waiters are registered, then set + reset
// releases them all (a released wait stays ready after the reset).
struct FanOutDriver {
	sb_task task;
	sb_event *event;
	sb_yield y;
	uint64_t *registered;
	uint64_t n, rounds, round;
	sb_join *joins;
	int next;
	bool yielding;
	static int poll(sb_task *t, const sb_waker *w)
	{
		FanOutDriver *d = of<FanOutDriver>(t);
		for (;;) {
			if (d->yielding) {
				if (sb_yield_poll(&d->y, w) == SB_PENDING)
					return SB_PENDING;
				d->yielding = false;
			}
			if (d->round > d->rounds)
				break;
			if (*d->registered < d->round * d->n) {
				sb_yield_init(&d->y);
				d->yielding = true;
				continue;
			}
			sb_event_set(d->event);
			sb_event_reset(d->event);
			d->round++;
		}
		return await_in_order(d->joins, (int)d->n, &d->next, w);
	}
};

template <int N> uint64_t fan_out(const sbb::Params &p, sbb::Meter &m)
{
	Executor e;
	sb_event event;
	expect(sb_event_init(&event, false), 0, "init");
	uint64_t registered = 0;
	std::unique_ptr<Waiter[]> waiters(new Waiter[N]);
	std::unique_ptr<sb_join[]> joins(new sb_join[N]);
	for (int k = 0; k < N; k++) {
		Waiter &x = waiters[k];
		sb_task_init(&x.task, Waiter::poll, nullptr, nullptr);
		x.event = &event;
		x.registered = &registered;
		x.left = p.rounds;
		x.waiting = false;
		spawn(&e.ex, &x.task, &joins[k]);
	}
	FanOutDriver d;
	sb_task_init(&d.task, FanOutDriver::poll, nullptr, nullptr);
	d.event = &event;
	d.registered = &registered;
	d.n = N;
	d.rounds = p.rounds;
	d.round = 1;
	d.joins = joins.get();
	d.next = 0;
	d.yielding = false;
	spawn(&e.ex, &d.task, nullptr);
	m.start();
	e.run();
	m.stop();
	expect((long)registered, (long)(p.rounds * N), "every registration happened");
	expect(sb_event_destroy(&event), 0, "destroy");
	return p.rounds;
}
SBB_BATCH(fan_out<10>, "notify/fan-out-10", sbb::SYNCBAND, 100000);
SBB_BATCH(fan_out<100>, "notify/fan-out-100", sbb::SYNCBAND, 10000);
SBB_BATCH(fan_out<500>, "notify/fan-out-500", sbb::SYNCBAND, 2000);

// ------------------------------------------------------------ contention on executor threads
//
// N executor threads (sb_executor_group, one ring each) x 64 tasks; each
// task locks and unlocks one mutex (or acquires and releases one permit of a
// K-permit semaphore) R times.  ns per operation over all threads:
// time / (N x 64 x R).  Row "syncband": floating tasks (SB_GROUP_FLOATING,
// a woken task runs on the waking thread, as on Tokio's multi-thread
// runtime); row "syncband-pinned": each task stays on its thread
// (SB_GROUP_ANY), so every handoff to another thread's task crosses
// threads; row "syncband-fifo": floating tasks on a strict-FIFO mutex
// (sb_mutex_init_fifo; the other mutex rows use the default, eventually fair
// one).  The segment covers spawning and joining all tasks (sb_join_wait on
// this thread, which runs none of them); the group is started before it and
// shut down after it.
//
// --waits: every acquire is timed from the future's first poll until the
// poll that completes it, into a histogram per task (made before the
// segment, merged after it).  A task's clock is its last member: on the
// throughput rows it is empty and sits in the padding after `locking`, so
// their tasks are laid out and run as without it.

template <bool Waits> struct MutexTask {
	sb_task task;
	sb_mutex *mutex;
	uint64_t *counter; // guarded by the mutex
	sb_mutex_lock lock;
	uint64_t left;
	bool locking;
	sbb::WaitClock<Waits> clock;
	static int poll(sb_task *t, const sb_waker *w)
	{
		MutexTask *x = of<MutexTask>(t);
		while (x->left > 0) {
			if (!x->locking) {
				sb_mutex_lock_init(&x->lock, x->mutex);
				x->locking = true;
				x->clock.begin();
			}
			int r = sb_mutex_lock_poll(&x->lock, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "lock");
			x->clock.end();
			x->locking = false;
			++*x->counter;
			expect(sb_mutex_unlock(x->mutex), 0, "unlock");
			x->left--;
		}
		return 0;
	}
};

template <bool Waits> struct SemaphoreTask {
	sb_task task;
	sb_semaphore *sem;
	sb_semaphore_acquire acq;
	uint64_t left;
	bool acquiring;
	sbb::WaitClock<Waits> clock;
	static int poll(sb_task *t, const sb_waker *w)
	{
		SemaphoreTask *x = of<SemaphoreTask>(t);
		while (x->left > 0) {
			if (!x->acquiring) {
				sb_semaphore_acquire_init(&x->acq, x->sem, 1);
				x->acquiring = true;
				x->clock.begin();
			}
			int r = sb_semaphore_acquire_poll(&x->acq, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "acquire(1)");
			x->clock.end();
			x->acquiring = false;
			expect(sb_semaphore_release(x->sem, 1), 0, "release(1)");
			x->left--;
		}
		return 0;
	}
};

// One histogram per task under --waits (none otherwise), made and zeroed
// before the segment; merge() adds them into the meter's after it.
template <bool Waits> struct TaskWaits {
	std::unique_ptr<sbb::WaitHistogram[]> histograms;
	template <class Task> TaskWaits(Task *tasks, size_t n)
	{
		if constexpr (Waits) {
			histograms.reset(new sbb::WaitHistogram[n]());
			for (size_t k = 0; k < n; k++)
				tasks[k].clock.histogram = &histograms[k];
		}
	}
	void merge(sbb::Meter &m, size_t n) const
	{
		if constexpr (Waits)
			for (size_t k = 0; k < n; k++)
				m.waits()->merge(histograms[k]);
	}
};

template <class Task>
void run_on_group(const sbb::Params &p, sbb::Meter &m, Task *tasks, size_t n, size_t where)
{
	sb_executor_group g;
	expect(sb_executor_group_init(&g, p.threads, nullptr), 0, "sb_executor_group_init");
	std::unique_ptr<sb_join[]> joins(new sb_join[n]);
	m.start();
	for (size_t k = 0; k < n; k++)
		expect(sb_executor_group_spawn(&g, where, &tasks[k].task, &joins[k]), 0,
		       "sb_executor_group_spawn");
	for (size_t k = 0; k < n; k++)
		expect(sb_join_wait(&joins[k]), 0, "sb_join_wait");
	m.stop();
	size_t cancelled = 99;
	expect(sb_executor_group_shutdown(&g, &cancelled), 0, "sb_executor_group_shutdown");
	expect((long)cancelled, 0, "nothing cancelled");
}

template <size_t Where, bool Fifo, bool Waits>
uint64_t group_mutex_on(const sbb::Params &p, sbb::Meter &m)
{
	sbb::CachePadded<sbb::GuardedCounter<sb_mutex>> shared{}; // the counter starts at 0
	sb_mutex &mutex = shared.value.mutex;
	expect(Fifo ? sb_mutex_init_fifo(&mutex) : sb_mutex_init(&mutex), 0, "init");
	uint64_t &counter = shared.value.counter;
	size_t n = p.threads * TASKS_PER_THREAD;
	std::unique_ptr<MutexTask<Waits>[]> tasks(new MutexTask<Waits>[n]);
	for (size_t k = 0; k < n; k++) {
		sb_task_init(&tasks[k].task, MutexTask<Waits>::poll, nullptr, nullptr);
		tasks[k].mutex = &mutex;
		tasks[k].counter = &counter;
		tasks[k].left = p.rounds;
		tasks[k].locking = false;
	}
	TaskWaits<Waits> waits(tasks.get(), n);
	run_on_group(p, m, tasks.get(), n, Where);
	waits.merge(m, n);
	uint64_t ops = n * p.rounds;
	expect((long)counter, (long)ops, "no update lost under the mutex");
	expect(sb_mutex_destroy(&mutex), 0, "destroy");
	return ops;
}

template <size_t Where, bool Fifo> uint64_t group_mutex(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? group_mutex_on<Where, Fifo, true>(p, m)
			 : group_mutex_on<Where, Fifo, false>(p, m);
}

uint64_t floating_mutex(const sbb::Params &p, sbb::Meter &m)
{
	return group_mutex<SB_GROUP_FLOATING, false>(p, m);
}
uint64_t pinned_mutex(const sbb::Params &p, sbb::Meter &m)
{
	return group_mutex<SB_GROUP_ANY, false>(p, m);
}
uint64_t floating_fifo_mutex(const sbb::Params &p, sbb::Meter &m)
{
	return group_mutex<SB_GROUP_FLOATING, true>(p, m);
}
SBB_BATCH(floating_mutex, "contention/mutex-N-threads", sbb::SYNCBAND, 10000);
SBB_BATCH(pinned_mutex, "contention/mutex-N-threads", sbb::SYNCBAND_PINNED, 10000);
SBB_BATCH(floating_fifo_mutex, "contention/mutex-N-threads", sbb::SYNCBAND_FIFO, 10000);

template <size_t Where, bool Waits>
uint64_t group_semaphore_on(const sbb::Params &p, sbb::Meter &m)
{
	sbb::CachePadded<sb_semaphore> padded;
	sb_semaphore &sem = padded.value;
	expect(sb_semaphore_init(&sem, p.permits), 0, "init");
	size_t n = p.threads * TASKS_PER_THREAD;
	std::unique_ptr<SemaphoreTask<Waits>[]> tasks(new SemaphoreTask<Waits>[n]);
	for (size_t k = 0; k < n; k++) {
		sb_task_init(&tasks[k].task, SemaphoreTask<Waits>::poll, nullptr, nullptr);
		tasks[k].sem = &sem;
		tasks[k].left = p.rounds;
		tasks[k].acquiring = false;
	}
	TaskWaits<Waits> waits(tasks.get(), n);
	run_on_group(p, m, tasks.get(), n, Where);
	waits.merge(m, n);
	expect((long)sb_semaphore_available(&sem), (long)p.permits, "every permit is back");
	expect(sb_semaphore_destroy(&sem), 0, "destroy");
	return n * p.rounds;
}

template <size_t Where> uint64_t group_semaphore(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? group_semaphore_on<Where, true>(p, m)
			 : group_semaphore_on<Where, false>(p, m);
}
SBB_BATCH(group_semaphore<SB_GROUP_FLOATING>, "contention/semaphore-N-threads", sbb::SYNCBAND,
	  10000);
SBB_BATCH(group_semaphore<SB_GROUP_ANY>, "contention/semaphore-N-threads", sbb::SYNCBAND_PINNED,
	  10000);

} // namespace
