/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Conservation of items through a bounded MPMC channel (capacity 0, 1 and
 * 8), with more contenders than cores and a close while they all run.
 *
 * Producers and consumers on plain threads use every entry point: blocking
 * sends and receives with random timeouts (0, short, longer, none),
 * try_send/try_recv, try_send_many/try_recv_many, force_send (its evicted
 * item is accounted as removed) and futures polled by hand through a
 * counting waker, cancelled at random moments (before the first poll, right
 * after it, after a few yields, after the wake but before the re-poll).
 * Producers and consumers on floating tasks of an executor group do the
 * same through the task's waker (forwarded by a counting waker), some
 * under an sb_timeout deadline.  Once the producers have used their share
 * of attempts the main thread closes the channel; producers stop at
 * -EPIPE, consumers drain until -EPIPE.
 *
 * Every item carries (producer, sequence number, a checksum).  At the end:
 * every item sent (a send returned 0, a cancel returned 0, a try_* or
 * force_send took it) was received exactly once or evicted by a
 * force_send, never both; no item that was not sent was received or
 * evicted; each consumer saw each producer's sequence numbers increase; no
 * item was torn; every waker clone was woken or dropped; the channel is
 * empty, closed and destroyable.  In the plain build the allocator is
 * interposed and the run (from the start signal to the last worker's end:
 * not thread creation, nor the executor group's setup) must allocate
 * nothing.
 *
 * SB_STRESS_OPS (environment) sets the number of producer attempts (items
 * offered) over the three capacities; the default is 3 * 10^6, about a
 * second per capacity in the debug build (./x test sets 10^6 for TSan).
 * Without io_uring (or a build without the executor) the tasks are left out.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <syncband/channel.h>
#ifdef STRESS_WITH_EXECUTOR
#include <syncband/executor.h>
#endif

#include "check.h"
#include "count_allocations.h"
#include "counting_waker.h"
#include "stress.h"
#include "watchdog.h"

/* ------------------------------------------------------------- the world */

enum {
	THREAD_PRODUCERS = 3,
	THREAD_CONSUMERS = 3,
	GROUP_THREADS = 2,
	TASK_PRODUCERS = 4,
	TASK_CONSUMERS = 4,
	PRODUCERS = THREAD_PRODUCERS + TASK_PRODUCERS,
	CONSUMERS = THREAD_CONSUMERS + TASK_CONSUMERS,
	MAX_BATCH = 4,
	MAX_CAPACITY = 8,
	OPS_PER_TASK_POLL = 16, /* then the task yields its thread */
};

/* One item: who sent it, its place in that producer's stream, a checksum. */
typedef struct item {
	uint32_t producer;
	uint32_t seq;
	uint64_t check;
} item;

static uint64_t item_check(uint32_t producer, uint32_t seq)
{
	uint64_t x = ((uint64_t)producer << 32 | seq) * 0x9e3779b97f4a7c15u;
	return x ^ (x >> 29) ^ 0x5bd1e9955bd1e995u;
}

#define BITS_PER_WORD (8 * sizeof(unsigned long))

typedef struct stats {
	atomic_long sent;          /* items whose send completed */
	atomic_long received;      /* items consumers got */
	atomic_long evicted;       /* items a force_send moved out */
	atomic_long waited;        /* futures that went pending (both sides) */
	atomic_long send_waited;
	atomic_long recv_waited;
	atomic_long cancel_done;   /* cancels that found the operation done */
	atomic_long cancel_none;   /* cancels that undid it */
	atomic_long timed_out;     /* blocking timeouts and deadlines */
	atomic_long epipe_sends;   /* producers stopped by the close */
	atomic_long epipe_recvs;   /* consumers drained to the close */
	atomic_long task_polls;
} stats;

typedef struct world {
	sb_channel ch;
	item slots[MAX_CAPACITY];
	size_t capacity;
	uint32_t max_seq;          /* per producer; a producer stops there */
	long budget;               /* attempts before the close */
	atomic_bool go;
	atomic_long attempts;      /* items offered, all producers */
	atomic_long progress;      /* anything done, for the watchdog */
	atomic_int finished;       /* thread workers done */
	/* bitmaps, one row of `words` per producer */
	size_t words;
	atomic_ulong *sent, *received, *removed;
	/* for the failure report: how each item was offered and what the
	 * producer was told (path << 3 | outcome), one byte per item */
	unsigned char *how;
	/* violations found while running */
	atomic_long duplicates;    /* an item received twice */
	atomic_long out_of_order;  /* a consumer saw a producer's seq not increase */
	atomic_long corrupt;       /* a torn or unknown item */
	atomic_long removed_twice;
	atomic_long resent;        /* a producer's seq marked sent twice */
	stats st;
} world;

static atomic_ulong *bit_word(const world *wd, atomic_ulong *map, uint32_t p, uint32_t seq)
{
	return &map[(size_t)p * wd->words + seq / BITS_PER_WORD];
}

static unsigned long bit_mask(uint32_t seq)
{
	return 1ul << (seq % BITS_PER_WORD);
}

/* Sets the bit; returns whether it was set already. */
static bool bit_set(world *wd, atomic_ulong *map, uint32_t p, uint32_t seq)
{
	unsigned long m = bit_mask(seq);
	return atomic_fetch_or_explicit(bit_word(wd, map, p, seq), m, memory_order_relaxed) & m;
}

static bool item_valid(const world *wd, const item *it)
{
	return it->producer < PRODUCERS && it->seq < wd->max_seq &&
	       it->check == item_check(it->producer, it->seq);
}

/* ------------------------------------------------------------ producers */

/* The ways an item is offered, and what its producer was told. */
enum path {
	PATH_NONE, PATH_BLOCKING, PATH_TRY, PATH_TRY_MANY, PATH_FORCE, PATH_THREAD_FUTURE,
	PATH_TASK_FUTURE, PATH_TASK_TIMEOUT, PATHS
};
static const char *const path_name[PATHS] = {
	"?", "send_blocking", "try_send", "try_send_many", "force_send",
	"send future (thread)", "send future (task)", "send future under sb_timeout (task)",
};
enum outcome { OUT_TAKEN, OUT_TIMEDOUT, OUT_CANCELED, OUT_AGAIN, OUT_PIPE, OUTCOMES };
static const char *const outcome_name[OUTCOMES] = {
	"taken", "-ETIMEDOUT", "-ECANCELED", "-EAGAIN", "-EPIPE",
};

typedef struct producer {
	world *wd;
	uint32_t id;
	uint32_t next_seq;
	unsigned seed;
	bool stopped;              /* saw -EPIPE, or ran out of sequence numbers */
	enum path path;            /* of the operation in flight */
} producer;

/* Fills `n` items with the producer's next sequence numbers; false at the end. */
static bool produce(producer *p, item *items, size_t n)
{
	if (p->next_seq + n > p->wd->max_seq) {
		p->stopped = true;
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t seq = p->next_seq++;
		items[i] = (item){ p->id, seq, item_check(p->id, seq) };
	}
	atomic_fetch_add_explicit(&p->wd->attempts, (long)n, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->wd->progress, 1, memory_order_relaxed);
	return true;
}

/* The items the channel took: 0 to n of them (those not taken are never sent again). */
static void mark_sent(producer *p, const item *items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (bit_set(p->wd, p->wd->sent, items[i].producer, items[i].seq))
			atomic_fetch_add(&p->wd->resent, 1);
	atomic_fetch_add_explicit(&p->wd->st.sent, (long)n, memory_order_relaxed);
}

/* An item force_send moved out of the ring: removed, not lost. */
static void mark_evicted(world *wd, const item *it)
{
	if (!item_valid(wd, it)) {
		atomic_fetch_add(&wd->corrupt, 1);
		return;
	}
	if (bit_set(wd, wd->removed, it->producer, it->seq))
		atomic_fetch_add(&wd->removed_twice, 1);
	atomic_fetch_add_explicit(&wd->st.evicted, 1, memory_order_relaxed);
}

/* The outcome of one send of `n` items: how many were taken (r >= 0), or the error. */
static void after_send(producer *p, const item *items, int r)
{
	/* a batch: items[0..r) taken, the rest not; a single item: taken or not */
	size_t offered = r > 0 ? (size_t)r : 1;
	enum outcome out = r == -ETIMEDOUT ? OUT_TIMEDOUT : r == -ECANCELED ? OUT_CANCELED
			 : r == -EAGAIN ? OUT_AGAIN : r == -EPIPE ? OUT_PIPE : OUT_TAKEN;
	for (size_t i = 0; i < offered; i++)
		p->wd->how[(size_t)items[i].producer * p->wd->max_seq + items[i].seq] =
			(unsigned char)(p->path << 3 | out);
	if (r >= 0) {
		mark_sent(p, items, (size_t)r);
	} else if (r == -EPIPE) {
		p->stopped = true;
		atomic_fetch_add(&p->wd->st.epipe_sends, 1);
	} else if (r == -ETIMEDOUT) {
		atomic_fetch_add_explicit(&p->wd->st.timed_out, 1, memory_order_relaxed);
	} else {
		CHECK(r == -EAGAIN || r == -ECANCELED);
	}
}

/* ------------------------------------------------------------ consumers */

typedef struct consumer {
	world *wd;
	unsigned seed;
	bool stopped;              /* saw -EPIPE: closed and drained */
	int64_t last[PRODUCERS];   /* the last sequence number seen of each producer */
} consumer;

static void consumer_init(consumer *c, world *wd, unsigned seed)
{
	c->wd = wd;
	c->seed = seed;
	c->stopped = false;
	for (int i = 0; i < PRODUCERS; i++)
		c->last[i] = -1;
}

static void take(consumer *c, const item *items, size_t n)
{
	world *wd = c->wd;
	for (size_t i = 0; i < n; i++) {
		const item *it = &items[i];
		if (!item_valid(wd, it)) {
			atomic_fetch_add(&wd->corrupt, 1);
			continue;
		}
		if ((int64_t)it->seq <= c->last[it->producer])
			atomic_fetch_add(&wd->out_of_order, 1);
		c->last[it->producer] = it->seq;
		if (bit_set(wd, wd->received, it->producer, it->seq))
			atomic_fetch_add(&wd->duplicates, 1);
	}
	atomic_fetch_add_explicit(&wd->st.received, (long)n, memory_order_relaxed);
	atomic_fetch_add_explicit(&wd->progress, 1, memory_order_relaxed);
}

/* The outcome of one receive: how many items arrived (r >= 0), or the error. */
static void after_recv(consumer *c, const item *items, int r)
{
	if (r >= 0) {
		take(c, items, (size_t)r);
	} else if (r == -EPIPE) {
		c->stopped = true;
		atomic_fetch_add(&c->wd->st.epipe_recvs, 1);
	} else if (r == -ETIMEDOUT) {
		atomic_fetch_add_explicit(&c->wd->st.timed_out, 1, memory_order_relaxed);
	} else {
		CHECK(r == -EAGAIN || r == -ECANCELED);
	}
	atomic_fetch_add_explicit(&c->wd->progress, 1, memory_order_relaxed);
}

/* A cancel's outcome, counted: 0 (it had happened), -ECANCELED, or -EPIPE. */
static int counted_cancel(world *wd, int r)
{
	if (r == 0)
		atomic_fetch_add_explicit(&wd->st.cancel_done, 1, memory_order_relaxed);
	else if (r == -ECANCELED)
		atomic_fetch_add_explicit(&wd->st.cancel_none, 1, memory_order_relaxed);
	else
		CHECK(r == -EPIPE);
	return r;
}

/* --------------------------------------------------------- thread workers */

typedef struct thread_worker {
	world *wd;
	bool is_producer;
	producer p;
	consumer c;
	counting_waker waker;
	pthread_t thread;
} thread_worker;

static uint64_t pick_timeout(unsigned *seed)
{
	switch (stress_next_random(seed) % 8) {
	case 0:
	case 1:
		return 0;
	case 2:
	case 3:
		return 20 * 1000;           /* 20 us */
	case 4:
		return 300 * 1000;          /* 0.3 ms */
	default:
		return SB_TIMEOUT_INFINITE;
	}
}

/* How a hand-polled future ends, picked at random. */
enum plan {
	PLAN_CANCEL_IDLE,      /* cancelled before its first poll */
	PLAN_CANCEL_QUEUED,    /* right after a first poll that went pending */
	PLAN_CANCEL_LATER,     /* after a few yields, woken or not */
	PLAN_CANCEL_ON_WAKE,   /* woken, cancelled instead of polled */
	PLAN_WAIT,             /* polled until done (the rest) */
};

static enum plan pick_plan(unsigned *seed)
{
	unsigned x = stress_next_random(seed) % 16;
	return x < 1 ? PLAN_CANCEL_IDLE : x < 3 ? PLAN_CANCEL_QUEUED : x < 5 ? PLAN_CANCEL_LATER
	       : x < 7 ? PLAN_CANCEL_ON_WAKE : PLAN_WAIT;
}

/* Yields a few times, or until the waker counted a wake past `wakes`. */
static void yield_a_little(counting_waker *w, int wakes, unsigned n)
{
	for (unsigned i = 0; i < n && atomic_load(&w->wakes) == wakes; i++)
		sched_yield();
}

static int thread_send_future(thread_worker *tw, const item *it)
{
	world *wd = tw->wd;
	sb_waker waker = counting_waker_ref(&tw->waker);
	sb_channel_send f;
	sb_channel_send_init(&f, &wd->ch, it);
	enum plan plan = pick_plan(&tw->p.seed);
	unsigned spins = stress_next_random(&tw->p.seed) % 32;
	if (plan == PLAN_CANCEL_IDLE) {
		int r = sb_channel_send_cancel(&f);
		CHECK(r == -ECANCELED);
		return r;
	}
	int wakes = atomic_load(&tw->waker.wakes);
	int r = sb_channel_send_poll(&f, &waker);
	if (r == SB_PENDING) {
		atomic_fetch_add_explicit(&wd->st.waited, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&wd->st.send_waited, 1, memory_order_relaxed);
	}
	while (r == SB_PENDING) {
		if (plan == PLAN_CANCEL_QUEUED)
			return counted_cancel(wd, sb_channel_send_cancel(&f));
		if (plan == PLAN_CANCEL_LATER) {
			yield_a_little(&tw->waker, wakes, spins);
			return counted_cancel(wd, sb_channel_send_cancel(&f));
		}
		stress_await_wake(&tw->waker, &wakes);
		if (plan == PLAN_CANCEL_ON_WAKE)
			return counted_cancel(wd, sb_channel_send_cancel(&f));
		r = sb_channel_send_poll(&f, &waker);
	}
	CHECK(r == 0 || r == -EPIPE);
	return r;
}

static void *run_thread_producer(void *arg)
{
	thread_worker *tw = arg;
	producer *p = &tw->p;
	world *wd = tw->wd;
	while (!atomic_load(&wd->go))
		sched_yield();
	item items[MAX_BATCH], evicted;
	while (!p->stopped) {
		unsigned op = stress_next_random(&p->seed) % 32;
		if (op < 8) {
			if (!produce(p, items, 1))
				break;
			p->path = PATH_BLOCKING;
			int r = sb_channel_send_blocking(&wd->ch, &items[0], pick_timeout(&p->seed));
			after_send(p, items, r == 0 ? 1 : r);
		} else if (op < 11) {
			if (!produce(p, items, 1))
				break;
			p->path = PATH_TRY;
			int r = sb_channel_try_send(&wd->ch, &items[0]);
			after_send(p, items, r == 0 ? 1 : r);
		} else if (op < 14) {
			size_t n = 1 + stress_next_random(&p->seed) % MAX_BATCH;
			if (!produce(p, items, n))
				break;
			p->path = PATH_TRY_MANY;
			int r = sb_channel_try_send_many(&wd->ch, items, n);
			CHECK(r != 0 && r <= (int)n);
			after_send(p, items, r);
		} else if (op < 15) {
			if (!produce(p, items, 1))
				break;
			p->path = PATH_FORCE;
			int r = sb_channel_force_send(&wd->ch, &items[0], &evicted);
			if (r == 1)
				mark_evicted(wd, &evicted);
			CHECK(r != -EAGAIN || wd->capacity == 0);
			after_send(p, items, r >= 0 ? 1 : r);
		} else {
			if (!produce(p, items, 1))
				break;
			p->path = PATH_THREAD_FUTURE;
			int r = thread_send_future(tw, &items[0]);
			after_send(p, items, r == 0 ? 1 : r);
		}
	}
	atomic_fetch_add(&wd->finished, 1);
	return NULL;
}

/* 0 with `*got` items, or the error. */
static int thread_recv_future(thread_worker *tw, item *items, size_t n, size_t *got)
{
	world *wd = tw->wd;
	consumer *c = &tw->c;
	sb_waker waker = counting_waker_ref(&tw->waker);
	sb_channel_recv f;
	sb_channel_recv_many_init(&f, &wd->ch, items, n);
	enum plan plan = pick_plan(&c->seed);
	unsigned spins = stress_next_random(&c->seed) % 32;
	*got = 0;
	int r;
	if (plan == PLAN_CANCEL_IDLE) {
		r = sb_channel_recv_cancel(&f);
		CHECK(r == -ECANCELED);
		return r;
	}
	int wakes = atomic_load(&tw->waker.wakes);
	r = sb_channel_recv_poll(&f, &waker);
	if (r == SB_PENDING) {
		atomic_fetch_add_explicit(&wd->st.waited, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&wd->st.recv_waited, 1, memory_order_relaxed);
	}
	while (r == SB_PENDING) {
		if (plan == PLAN_CANCEL_QUEUED) {
			r = counted_cancel(wd, sb_channel_recv_cancel(&f));
			break;
		}
		if (plan == PLAN_CANCEL_LATER) {
			yield_a_little(&tw->waker, wakes, spins);
			r = counted_cancel(wd, sb_channel_recv_cancel(&f));
			break;
		}
		stress_await_wake(&tw->waker, &wakes);
		if (plan == PLAN_CANCEL_ON_WAKE) {
			r = counted_cancel(wd, sb_channel_recv_cancel(&f));
			break;
		}
		r = sb_channel_recv_poll(&f, &waker);
	}
	if (r == 0) {
		*got = sb_channel_recv_count(&f);
		CHECK(*got >= 1 && *got <= n);
	} else {
		CHECK(sb_channel_recv_count(&f) == 0);
	}
	return r;
}

static void *run_thread_consumer(void *arg)
{
	thread_worker *tw = arg;
	consumer *c = &tw->c;
	world *wd = tw->wd;
	while (!atomic_load(&wd->go))
		sched_yield();
	item items[MAX_BATCH];
	while (!c->stopped) {
		unsigned op = stress_next_random(&c->seed) % 32;
		if (op < 8) {
			int r = sb_channel_recv_blocking(&wd->ch, &items[0], pick_timeout(&c->seed));
			after_recv(c, items, r == 0 ? 1 : r);
		} else if (op < 11) {
			int r = sb_channel_try_recv(&wd->ch, &items[0]);
			after_recv(c, items, r == 0 ? 1 : r);
		} else if (op < 15) {
			size_t n = 1 + stress_next_random(&c->seed) % MAX_BATCH;
			int r = sb_channel_try_recv_many(&wd->ch, items, n);
			CHECK(r != 0 && r <= (int)n);
			after_recv(c, items, r);
		} else {
			size_t n = 1 + stress_next_random(&c->seed) % MAX_BATCH;
			size_t got;
			int r = thread_recv_future(tw, items, n, &got);
			after_recv(c, items, r == 0 ? (int)got : r);
		}
	}
	atomic_fetch_add(&wd->finished, 1);
	return NULL;
}

/* ----------------------------------------------------------- task workers */

#ifdef STRESS_WITH_EXECUTOR
typedef struct task_worker {
	sb_task task;
	world *wd;
	bool is_producer;
	producer p;
	consumer c;
	counting_waker fw;          /* forwards to the task's waker */
	bool fwd_ready;
	/* the operation in flight */
	bool pending;
	bool timed;
	enum plan plan;
	unsigned polls_left;        /* PLAN_CANCEL_LATER: polls before the cancel */
	size_t n;
	sb_channel_send send;
	sb_channel_recv recv;
	sb_timeout timeout;
	item items[MAX_BATCH];
	item evicted;
} task_worker;

static unsigned *task_seed(task_worker *t)
{
	return t->is_producer ? &t->p.seed : &t->c.seed;
}

static uint64_t pick_deadline(unsigned *seed)
{
	static const uint64_t ns[] = { 0, 5 * 1000, 50 * 1000, 1000 * 1000 };
	return ns[stress_next_random(seed) % 4];
}

static int task_poll_inner(task_worker *t, const sb_waker *w)
{
	if (t->timed)
		return sb_timeout_poll(&t->timeout, w);
	return t->is_producer ? sb_channel_send_poll(&t->send, w)
			      : sb_channel_recv_poll(&t->recv, w);
}

/* Cancels the future in flight; returns what happened to it (0, -ECANCELED, -EPIPE). */
static int task_cancel_inner(task_worker *t, const sb_waker *w)
{
	if (!t->timed)
		return t->is_producer ? sb_channel_send_cancel(&t->send)
				      : sb_channel_recv_cancel(&t->recv);
	sb_timeout_cancel(&t->timeout);
	/* The inner future is done now; its poll says how (without registering). */
	int r = t->is_producer ? sb_channel_send_poll(&t->send, w)
			       : sb_channel_recv_poll(&t->recv, w);
	CHECK(r != SB_PENDING);
	return r;
}

/* The future in flight ended with `r` (its own result, or a cancel's). */
static void task_settle(task_worker *t, int r)
{
	t->pending = false;
	if (t->is_producer) {
		after_send(&t->p, t->items, r == 0 ? 1 : r);
		return;
	}
	size_t got = r == 0 ? sb_channel_recv_count(&t->recv) : 0;
	if (r == 0)
		CHECK(got >= 1 && got <= t->n);
	after_recv(&t->c, t->items, r == 0 ? (int)got : r);
}

/* Starts a future: SB_PENDING when it waits (registered), else settled. */
static int task_start_future(task_worker *t, const sb_waker *w)
{
	world *wd = t->wd;
	unsigned *seed = task_seed(t);
	t->plan = pick_plan(seed);
	t->polls_left = 1 + stress_next_random(seed) % 3;
	t->timed = stress_next_random(seed) % 4 == 0;
	if (t->is_producer) {
		t->p.path = t->timed ? PATH_TASK_TIMEOUT : PATH_TASK_FUTURE;
		sb_channel_send_init(&t->send, &wd->ch, &t->items[0]);
		if (t->timed)
			sb_timeout_init(&t->timeout, &t->send, &sb_channel_send_ops,
					pick_deadline(seed));
	} else {
		t->n = 1 + stress_next_random(seed) % MAX_BATCH;
		sb_channel_recv_many_init(&t->recv, &wd->ch, t->items, t->n);
		if (t->timed)
			sb_timeout_init(&t->timeout, &t->recv, &sb_channel_recv_ops,
					pick_deadline(seed));
	}
	t->pending = true;
	if (t->plan == PLAN_CANCEL_IDLE && !t->timed) {
		int r = t->is_producer ? sb_channel_send_cancel(&t->send)
				       : sb_channel_recv_cancel(&t->recv);
		CHECK(r == -ECANCELED);
		task_settle(t, r);
		return 0;
	}
	int r = task_poll_inner(t, w);
	if (r != SB_PENDING) {
		task_settle(t, r);
		return 0;
	}
	atomic_fetch_add_explicit(&wd->st.waited, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(t->is_producer ? &wd->st.send_waited : &wd->st.recv_waited, 1,
				  memory_order_relaxed);
	if (t->plan == PLAN_CANCEL_QUEUED || t->plan == PLAN_CANCEL_IDLE) {
		task_settle(t, counted_cancel(wd, task_cancel_inner(t, w)));
		return 0;
	}
	return SB_PENDING;
}

/* The task was woken with a future in flight. */
static int task_resume_future(task_worker *t, const sb_waker *w)
{
	int r;
	if (t->plan == PLAN_CANCEL_ON_WAKE ||
	    (t->plan == PLAN_CANCEL_LATER && --t->polls_left == 0)) {
		r = counted_cancel(t->wd, task_cancel_inner(t, w));
	} else {
		r = task_poll_inner(t, w);
		if (r == SB_PENDING)
			return SB_PENDING;
	}
	task_settle(t, r);
	return 0;
}

/* One operation that does not wait. */
static void task_immediate(task_worker *t, unsigned op)
{
	world *wd = t->wd;
	if (t->is_producer) {
		producer *p = &t->p;
		if (op == 0) {
			if (!produce(p, t->items, 1))
				return;
			p->path = PATH_TRY;
			int r = sb_channel_try_send(&wd->ch, &t->items[0]);
			after_send(p, t->items, r == 0 ? 1 : r);
		} else if (op == 1) {
			size_t n = 1 + stress_next_random(&p->seed) % MAX_BATCH;
			if (!produce(p, t->items, n))
				return;
			p->path = PATH_TRY_MANY;
			int r = sb_channel_try_send_many(&wd->ch, t->items, n);
			CHECK(r != 0 && r <= (int)n);
			after_send(p, t->items, r);
		} else {
			if (!produce(p, t->items, 1))
				return;
			p->path = PATH_FORCE;
			int r = sb_channel_force_send(&wd->ch, &t->items[0], &t->evicted);
			if (r == 1)
				mark_evicted(wd, &t->evicted);
			CHECK(r != -EAGAIN || wd->capacity == 0);
			after_send(p, t->items, r >= 0 ? 1 : r);
		}
	} else {
		consumer *c = &t->c;
		if (op == 0) {
			int r = sb_channel_try_recv(&wd->ch, &t->items[0]);
			after_recv(c, t->items, r == 0 ? 1 : r);
		} else {
			size_t n = 1 + stress_next_random(&c->seed) % MAX_BATCH;
			int r = sb_channel_try_recv_many(&wd->ch, t->items, n);
			CHECK(r != 0 && r <= (int)n);
			after_recv(c, t->items, r);
		}
	}
}

static bool task_stopped(const task_worker *t)
{
	return t->is_producer ? t->p.stopped : t->c.stopped;
}

static int task_poll_ops(task_worker *t, const sb_waker *w)
{
	atomic_fetch_add_explicit(&t->wd->st.task_polls, 1, memory_order_relaxed);
	if (t->pending && task_resume_future(t, w) == SB_PENDING)
		return SB_PENDING;
	for (int i = 0; i < OPS_PER_TASK_POLL; i++) {
		if (task_stopped(t))
			return 0;
		unsigned op = stress_next_random(task_seed(t)) % 16;
		if (op < 3) {
			/* producers: try_send, try_send_many, force_send (1 in 16);
			 * consumers: try_recv, try_recv_many */
			task_immediate(t, t->is_producer ? op : op % 2);
			continue;
		}
		if (t->is_producer && !produce(&t->p, t->items, 1))
			return 0;
		if (task_start_future(t, w) == SB_PENDING)
			return SB_PENDING;
	}
	if (task_stopped(t))
		return 0;
	sb_waker_wake_by_ref(w); /* a yield: let the thread's other tasks run */
	return SB_PENDING;
}

static int task_poll(sb_task *task, const sb_waker *w)
{
	task_worker *t = SB_CONTAINER_OF(task, task_worker, task);
	if (!t->fwd_ready) {
		t->fw.forward = *w;
		t->fwd_ready = true;
	}
	CHECK(sb_waker_will_wake(&t->fw.forward, w));
	const sb_waker fw = counting_waker_ref(&t->fw);
	return task_poll_ops(t, &fw);
}

/* The run joins every task before the shutdown: this runs only on a failure path. */
static void task_cancel(sb_task *task)
{
	task_worker *t = SB_CONTAINER_OF(task, task_worker, task);
	if (!t->pending)
		return;
	if (t->timed)
		sb_timeout_cancel(&t->timeout);
	else if (t->is_producer)
		(void)sb_channel_send_cancel(&t->send);
	else
		(void)sb_channel_recv_cancel(&t->recv);
	t->pending = false;
}
#endif /* STRESS_WITH_EXECUTOR */

/* -------------------------------------------------------------- the run */

static long progress_count(void *arg)
{
	return atomic_load(&((world *)arg)->progress);
}

static void progress_report(void *arg)
{
	world *wd = arg;
	fprintf(stderr, "channel stress (capacity %zu): attempts %ld of %ld, sent %ld, received %ld, "
		"thread workers finished %d, closed %d\n", wd->capacity,
		atomic_load(&wd->attempts), wd->budget, atomic_load(&wd->st.sent),
		atomic_load(&wd->st.received), atomic_load(&wd->finished),
		(int)sb_channel_is_closed(&wd->ch));
}

static void sleep_briefly(void)
{
	struct timespec ts = { 0, 200 * 1000 };
	nanosleep(&ts, NULL);
}

static int popcount_word(unsigned long x)
{
	return __builtin_popcountl(x);
}

#ifdef STRESS_WITH_EXECUTOR
static bool have_executor = false;
#endif

/* On a failure: by how each mismatched item was offered and what its producer was told. */
static void report_mismatches(world *wd)
{
	static long lost_by[PATHS][OUTCOMES], unsent_by[PATHS][OUTCOMES];
	memset(lost_by, 0, sizeof lost_by);
	memset(unsent_by, 0, sizeof unsent_by);
	for (uint32_t p = 0; p < PRODUCERS; p++) {
		for (uint32_t seq = 0; seq < wd->max_seq; seq++) {
			unsigned long m = bit_mask(seq);
			bool s = atomic_load(bit_word(wd, wd->sent, p, seq)) & m;
			bool r = atomic_load(bit_word(wd, wd->received, p, seq)) & m;
			bool e = atomic_load(bit_word(wd, wd->removed, p, seq)) & m;
			unsigned h = wd->how[(size_t)p * wd->max_seq + seq];
			if (s && !r && !e)
				lost_by[h >> 3][h & 7]++;
			if (!s && r)
				unsent_by[h >> 3][h & 7]++;
		}
	}
	for (int i = 0; i < PATHS; i++) {
		for (int j = 0; j < OUTCOMES; j++) {
			if (lost_by[i][j])
				fprintf(stderr, "  %ld lost (never received) offered by %s, told %s\n",
					lost_by[i][j], path_name[i], outcome_name[j]);
			if (unsent_by[i][j])
				fprintf(stderr, "  %ld received although offered by %s, told %s\n",
					unsent_by[i][j], path_name[i], outcome_name[j]);
		}
	}
}

static void run_capacity(size_t capacity)
{
	long total = stress_total_ops(3000000);
	long budget = total / 3 > 100 ? total / 3 : 100;
	static char what[64]; /* an abandoned watchdog may still print it */
	snprintf(what, sizeof what, "channel stress, capacity %zu", capacity);

	static world wd;
	memset(&wd, 0, sizeof wd);
	wd.capacity = capacity;
	wd.budget = budget;
	/* room for one producer to offer everything and a little more */
	wd.max_seq = (uint32_t)(budget + 64);
	wd.words = (wd.max_seq + BITS_PER_WORD - 1) / BITS_PER_WORD;
	size_t cells = wd.words * PRODUCERS;
	wd.sent = calloc(cells, sizeof *wd.sent);
	wd.received = calloc(cells, sizeof *wd.received);
	wd.removed = calloc(cells, sizeof *wd.removed);
	wd.how = calloc((size_t)wd.max_seq * PRODUCERS, 1);
	assert_non_null(wd.how);
	assert_non_null(wd.sent);
	assert_non_null(wd.received);
	assert_non_null(wd.removed);
	assert_int_equal(sb_channel_init(&wd.ch, capacity ? wd.slots : NULL, sizeof(item), capacity),
			 0);

	sb_watchdog_progress prog = { progress_count, progress_report, &wd, 30 };
	sb_watchdog dog;
	sb_watchdog_start_progress(&dog, 280, what, &prog);

	/* Threads first (outside the counted window): they wait for `go`. */
	static thread_worker tw[THREAD_PRODUCERS + THREAD_CONSUMERS];
	for (int i = 0; i < THREAD_PRODUCERS + THREAD_CONSUMERS; i++) {
		thread_worker *w = &tw[i];
		memset(w, 0, sizeof *w);
		w->wd = &wd;
		w->is_producer = i < THREAD_PRODUCERS;
		counting_waker_init(&w->waker);
		unsigned seed = stress_seed(i + 100 * (int)capacity);
		if (w->is_producer)
			w->p = (producer){ &wd, (uint32_t)i, 0, seed, false, PATH_NONE };
		else
			consumer_init(&w->c, &wd, seed);
		assert_int_equal(pthread_create(&w->thread, NULL,
						w->is_producer ? run_thread_producer : run_thread_consumer,
						w), 0);
	}

#ifdef STRESS_WITH_EXECUTOR
	static sb_executor_group group;
	static task_worker kt[TASK_PRODUCERS + TASK_CONSUMERS];
	static sb_join joins[TASK_PRODUCERS + TASK_CONSUMERS];
	int ntasks = have_executor ? TASK_PRODUCERS + TASK_CONSUMERS : 0;
	if (have_executor)
		assert_int_equal(sb_executor_group_init(&group, GROUP_THREADS, NULL), 0);
	for (int i = 0; i < ntasks; i++) {
		task_worker *t = &kt[i];
		memset(t, 0, sizeof *t);
		sb_task_init(&t->task, task_poll, task_cancel, NULL);
		t->wd = &wd;
		t->is_producer = i < TASK_PRODUCERS;
		counting_waker_init(&t->fw);
		unsigned seed = stress_seed(50 + i + 100 * (int)capacity);
		if (t->is_producer)
			t->p = (producer){ &wd, (uint32_t)(THREAD_PRODUCERS + i), 0, seed, false,
					   PATH_NONE };
		else
			consumer_init(&t->c, &wd, seed);
	}
#else
	int ntasks = 0;
#endif

	/* The counted window: from the start signal to the last worker's end. */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long allocs_before = allocation_count();
	atomic_store(&wd.go, true);
#ifdef STRESS_WITH_EXECUTOR
	for (int i = 0; i < ntasks; i++)
		assert_int_equal(sb_executor_group_spawn(&group, SB_GROUP_FLOATING, &kt[i].task,
							 &joins[i]), 0);
#endif
	/* Close while everybody runs, once the producers have offered their share. */
	while (atomic_load(&wd.attempts) < budget)
		sleep_briefly();
	long attempts_at_close = atomic_load(&wd.attempts);
	sb_channel_close(&wd.ch);
	while (atomic_load(&wd.finished) < THREAD_PRODUCERS + THREAD_CONSUMERS)
		sleep_briefly();
#ifdef STRESS_WITH_EXECUTOR
	for (int i = 0; i < ntasks; i++)
		assert_int_equal(sb_join_wait(&joins[i]), 0);
#endif
	long allocs = allocation_count() - allocs_before;
	clock_gettime(CLOCK_MONOTONIC, &t1);

	for (int i = 0; i < THREAD_PRODUCERS + THREAD_CONSUMERS; i++)
		assert_int_equal(pthread_join(tw[i].thread, NULL), 0);
#ifdef STRESS_WITH_EXECUTOR
	if (have_executor) {
		size_t cancelled = 99;
		assert_int_equal(sb_executor_group_shutdown(&group, &cancelled), 0);
		assert_int_equal(cancelled, 0);
		for (int i = 0; i < ntasks; i++) {
			assert_true(sb_task_is_released(&kt[i].task));
			assert_false(kt[i].pending);
			assert_int_equal(atomic_load(&kt[i].fw.live), 0);
		}
	}
#endif
	sb_watchdog_stop(&dog);

	/* Every item sent was received once or evicted, never both; nothing else was. */
	long lost = 0, unsent_received = 0, unsent_removed = 0, both = 0;
	long n_sent = 0, n_received = 0, n_removed = 0;
	for (size_t i = 0; i < cells; i++) {
		unsigned long s = atomic_load(&wd.sent[i]), r = atomic_load(&wd.received[i]),
			      e = atomic_load(&wd.removed[i]);
		lost += popcount_word(s & ~(r | e));
		unsent_received += popcount_word(r & ~s);
		unsent_removed += popcount_word(e & ~s);
		both += popcount_word(r & e);
		n_sent += popcount_word(s);
		n_received += popcount_word(r);
		n_removed += popcount_word(e);
	}
	char allocs_text[64];
#ifdef SB_TEST_COUNT_ALLOCATIONS
	snprintf(allocs_text, sizeof allocs_text, "%ld", allocs);
#else
	snprintf(allocs_text, sizeof allocs_text, "not counted (the sanitizers own malloc)");
#endif
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("capacity %zu: %.2f s, %ld attempts (%ld at the close), %ld sent, %ld received, "
	       "%ld evicted; %ld futures waited (%ld sends, %ld receives), cancels: %ld done, "
	       "%ld undone; %ld timeouts; -EPIPE: %ld sends, %ld receives; %ld task polls; "
	       "allocations: %s\n", capacity, secs, atomic_load(&wd.attempts), attempts_at_close,
	       n_sent, n_received, n_removed, atomic_load(&wd.st.waited),
	       atomic_load(&wd.st.send_waited), atomic_load(&wd.st.recv_waited),
	       atomic_load(&wd.st.cancel_done), atomic_load(&wd.st.cancel_none),
	       atomic_load(&wd.st.timed_out), atomic_load(&wd.st.epipe_sends),
	       atomic_load(&wd.st.epipe_recvs), atomic_load(&wd.st.task_polls),
	       allocs_text);
	if (lost || unsent_received || unsent_removed || both) {
		fprintf(stderr, "capacity %zu: %ld lost, %ld received unsent, %ld evicted unsent, "
			"%ld received and evicted\n", capacity, lost, unsent_received,
			unsent_removed, both);
		report_mismatches(&wd);
	}
	/* Before the asserts, which leave by longjmp on a failure. */
	free(wd.sent);
	free(wd.received);
	free(wd.removed);
	free(wd.how);
	assert_int_equal(atomic_load(&wd.corrupt), 0);
	assert_int_equal(atomic_load(&wd.duplicates), 0);
	assert_int_equal(atomic_load(&wd.removed_twice), 0);
	assert_int_equal(atomic_load(&wd.resent), 0);
	assert_int_equal(atomic_load(&wd.out_of_order), 0);
	assert_int_equal(lost, 0);
	assert_int_equal(unsent_received, 0);
	assert_int_equal(unsent_removed, 0);
	assert_int_equal(both, 0);
	assert_int_equal(n_sent, atomic_load(&wd.st.sent));
	assert_int_equal(n_received, atomic_load(&wd.st.received));
	assert_int_equal(n_removed, atomic_load(&wd.st.evicted));
	assert_int_equal(n_received + n_removed, n_sent);
	if (capacity == 0)
		assert_int_equal(n_removed, 0);
	assert_int_equal(allocs, 0);

	/* Every waker clone was woken or dropped. */
	for (int i = 0; i < THREAD_PRODUCERS + THREAD_CONSUMERS; i++)
		assert_int_equal(atomic_load(&tw[i].waker.live), 0);

	/* The run got somewhere: items moved and (unless SB_STRESS_OPS made it
	 * tiny) both sides' futures waited. */
	assert_true(n_received > 0);
	if (budget >= 30000) {
		assert_true(atomic_load(&wd.st.send_waited) > 0);
		assert_true(atomic_load(&wd.st.recv_waited) > 0);
	}
	assert_true(atomic_load(&wd.st.epipe_recvs) == THREAD_CONSUMERS + (ntasks ? TASK_CONSUMERS : 0));

	/* Closed and drained. */
	assert_true(sb_channel_is_closed(&wd.ch));
	assert_int_equal(sb_channel_len(&wd.ch), 0);
	item x = { 0, 0, 0 };
	assert_int_equal(sb_channel_try_recv(&wd.ch, &x), -EPIPE);
	assert_int_equal(sb_channel_try_send(&wd.ch, &x), -EPIPE);
	assert_int_equal(sb_channel_destroy(&wd.ch), 0);
}

static void items_are_conserved_through_a_rendezvous_channel(void **state)
{
	(void)state;
	run_capacity(0);
}

static void items_are_conserved_through_a_channel_of_capacity_1(void **state)
{
	(void)state;
	run_capacity(1);
}

static void items_are_conserved_through_a_channel_of_capacity_8(void **state)
{
	(void)state;
	run_capacity(8);
}

int main(void)
{
#ifdef STRESS_WITH_EXECUTOR
	sb_executor ex;
	int rc = sb_executor_init(&ex, NULL);
	if (rc == 0) {
		have_executor = true;
		sb_executor_destroy(&ex, NULL);
	} else {
		fprintf(stderr, "channel stress: no io_uring executor (%s): plain threads only\n",
			strerror(-rc));
	}
#else
	fprintf(stderr, "channel stress: built without the executor: plain threads only\n");
#endif
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(items_are_conserved_through_a_rendezvous_channel),
		cmocka_unit_test(items_are_conserved_through_a_channel_of_capacity_1),
		cmocka_unit_test(items_are_conserved_through_a_channel_of_capacity_8),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
