/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every receiver of a broadcast sees every item, in order, or a counted
 * lag: both policies, capacities 1 and 8, more threads than cores, and a
 * close while they all run.
 *
 * Producers send items (producer, sequence number, checksum), each retried
 * until it is sent, so producer p sends exactly 0, 1, 2, ... : by blocking
 * sends with random timeouts, try_send, and send futures polled by hand
 * through a counting waker and cancelled at random moments (a cancel that
 * returns 0 counts as sent).  Steady receivers subscribe before the start
 * and receive by blocking waits with random timeouts, try_recv, and
 * futures cancelled at random moments.  A churning receiver subscribes and
 * unsubscribes over and over (with back-pressure, each unsubscribe lets
 * waiting senders in).  Once the producers are done the main thread closes
 * the broadcast; receivers drain until -EPIPE.
 *
 * At the end, for each steady receiver: no item torn; each producer's
 * sequence numbers arrive in order - with back-pressure with no gap, and
 * lagging with gaps only where a -EOVERFLOW counted them; the items it got
 * plus the ones it was told it missed are exactly the items sent.  The
 * churning receiver saw each producer's items in increasing order.  Every
 * waker clone was woken or dropped, and the broadcast is destroyable.
 *
 * SB_STRESS_OPS (environment), read as the channel stress reads it, sets
 * the number of items sent over the four runs to a tenth of it (each item
 * is received four times over): the default is 2 * 10^5 items, a few
 * seconds in the debug build.  The one-word test below sends a thirtieth
 * of it through each of its three rings.
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

#include <cmocka.h>

#include <syncband/broadcast.h>

#include "check.h"
#include "counting_waker.h"
#include "stress.h"
#include "watchdog.h"

enum { PRODUCERS = 2, STEADY = 3, THREADS = PRODUCERS + STEADY + 1 };

typedef struct item {
	uint32_t producer;
	uint32_t seq;
	uint64_t check;
} item;

static uint64_t item_check(uint32_t producer, uint32_t seq)
{
	return ((uint64_t)producer << 32 | seq) * 0x9e3779b97f4a7c15u;
}

typedef struct worker {
	int index;
	sb_broadcast *bc;
	long items;                 /* producer: how many to send */
	sb_broadcast_receiver rx;
	/* receiver: what it saw */
	long got, missed, torn, disorder, gaps;
	int64_t last[PRODUCERS];    /* the last sequence number of each producer */
	counting_waker waker;
	int wakes;
	unsigned seed;
} worker;

static atomic_int producers_done;

/* A short random pause: nothing, a yield, or a few. */
static void jitter(unsigned *seed)
{
	unsigned r = stress_next_random(seed) % 8;
	for (unsigned i = 0; i < r / 3; i++)
		sched_yield();
}

static uint64_t random_timeout(unsigned *seed)
{
	switch (stress_next_random(seed) % 4) {
	case 0: return 0;
	case 1: return 2000;
	case 2: return 200000;
	default: return SB_TIMEOUT_INFINITE;
	}
}

/* A send future polled by hand: 0 once the item went in, else not sent. */
static int send_by_future(worker *w, const item *it)
{
	sb_broadcast_send f;
	sb_broadcast_send_init(&f, w->bc, it);
	sb_waker k = counting_waker_ref(&w->waker);
	w->wakes = atomic_load(&w->waker.wakes);
	unsigned how = stress_next_random(&w->seed) % 4;
	if (how == 0)
		return sb_broadcast_send_cancel(&f) == 0 ? 0 : -EAGAIN;
	int r = sb_broadcast_send_poll(&f, &k);
	if (r != SB_PENDING)
		return r;
	if (how == 1) {
		jitter(&w->seed);
		return sb_broadcast_send_cancel(&f) == 0 ? 0 : -EAGAIN;
	}
	stress_await_wake(&w->waker, &w->wakes);
	if (how == 2)
		return sb_broadcast_send_cancel(&f) == 0 ? 0 : -EAGAIN;
	/* A wake may be a late one of this worker's previous future (a wake
	 * may come after the poll that completed it): wait for the next. */
	while ((r = sb_broadcast_send_poll(&f, &k)) == SB_PENDING)
		stress_await_wake(&w->waker, &w->wakes);
	return r;
}

static void *producer_main(void *p)
{
	worker *w = p;
	for (long n = 0; n < w->items;) {
		item it = { (uint32_t)w->index, (uint32_t)n, item_check((uint32_t)w->index, (uint32_t)n) };
		int r;
		switch (stress_next_random(&w->seed) % 3) {
		case 0: r = sb_broadcast_send_blocking(w->bc, &it, random_timeout(&w->seed)); break;
		case 1: r = sb_broadcast_try_send(w->bc, &it); break;
		default: r = send_by_future(w, &it); break;
		}
		CHECK(r == 0 || r == -EAGAIN || r == -ETIMEDOUT);
		if (r == 0)
			n++;
		else
			sched_yield();
	}
	atomic_fetch_add(&producers_done, 1);
	return NULL;
}

/* A receive future polled by hand: its result, or -EAGAIN when cancelled. */
static int recv_by_future(worker *w, item *it)
{
	sb_broadcast_recv f;
	sb_broadcast_recv_init(&f, &w->rx, it);
	sb_waker k = counting_waker_ref(&w->waker);
	w->wakes = atomic_load(&w->waker.wakes);
	unsigned how = stress_next_random(&w->seed) % 6;
	int r = sb_broadcast_recv_poll(&f, &k);
	if (r != SB_PENDING)
		return r;
	if (how == 0) {
		jitter(&w->seed);
		CHECK(sb_broadcast_recv_cancel(&f) == -ECANCELED); /* nothing taken */
		return -EAGAIN;
	}
	stress_await_wake(&w->waker, &w->wakes);
	if (how == 1) {
		CHECK(sb_broadcast_recv_cancel(&f) == -ECANCELED);
		return -EAGAIN;
	}
	while ((r = sb_broadcast_recv_poll(&f, &k)) == SB_PENDING)
		stress_await_wake(&w->waker, &w->wakes); /* a late wake, as in the send */
	return r;
}

static void account(worker *w, const item *it, bool lagging)
{
	if (it->producer >= PRODUCERS || it->check != item_check(it->producer, it->seq)) {
		w->torn++;
		return;
	}
	int64_t want = w->last[it->producer] + 1;
	if ((int64_t)it->seq < want)
		w->disorder++;
	else if ((int64_t)it->seq > want && !lagging)
		w->gaps++;
	w->last[it->producer] = it->seq;
	w->got++;
}

static int receive_one(worker *w, item *it)
{
	switch (stress_next_random(&w->seed) % 3) {
	case 0: return sb_broadcast_recv_blocking(&w->rx, it, random_timeout(&w->seed));
	case 1: return sb_broadcast_try_recv(&w->rx, it);
	default: return recv_by_future(w, it);
	}
}

static bool lagging_of(const worker *w)
{
	return !(atomic_load(&w->bc->q.state) & SB_BROADCAST_STATE_BACKPRESSURE);
}

static void *steady_main(void *p)
{
	worker *w = p;
	bool lagging = lagging_of(w);
	for (;;) {
		item it;
		int r = receive_one(w, &it);
		if (r == -EPIPE)
			break;
		if (r == 0)
			account(w, &it, lagging);
		else if (r == -EOVERFLOW)
			w->missed += (long)sb_broadcast_receiver_missed(&w->rx);
		else
			CHECK(r == -EAGAIN || r == -ETIMEDOUT);
		if (stress_next_random(&w->seed) % 16 == 0)
			jitter(&w->seed); /* fall behind now and then */
	}
	return NULL;
}

/* Subscribes, reads a little, unsubscribes; until the broadcast closes. */
static void *churn_main(void *p)
{
	worker *w = p;
	for (;;) {
		w->rx = (sb_broadcast_receiver)SB_BROADCAST_RECEIVER_INIT;
		if (sb_broadcast_subscribe(w->bc, &w->rx) == -EPIPE)
			return NULL;
		unsigned reads = stress_next_random(&w->seed) % 8;
		for (unsigned i = 0; i < reads; i++) {
			item it;
			int r = receive_one(w, &it);
			if (r == 0)
				account(w, &it, true); /* a new subscriber starts anywhere */
			else
				CHECK(r == -EAGAIN || r == -ETIMEDOUT || r == -EOVERFLOW || r == -EPIPE);
		}
		CHECK(sb_broadcast_unsubscribe(&w->rx) == 0);
	}
}

static void run(int policy, size_t capacity, long items_each)
{
	item slots[8];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(item), capacity, policy), 0);
	static worker w[THREADS];
	memset(w, 0, sizeof w);
	atomic_store(&producers_done, 0);
	for (int i = 0; i < THREADS; i++) {
		w[i].index = i;
		w[i].bc = &bc;
		w[i].items = items_each;
		w[i].seed = stress_seed(i + (int)capacity * 16 + policy * 64);
		for (int p = 0; p < PRODUCERS; p++)
			w[i].last[p] = -1;
		counting_waker_init(&w[i].waker);
		if (i >= PRODUCERS && i < PRODUCERS + STEADY)
			assert_int_equal(sb_broadcast_subscribe(&bc, &w[i].rx), 0);
	}
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		void *(*fn)(void *) = i < PRODUCERS ? producer_main
				      : i < PRODUCERS + STEADY ? steady_main : churn_main;
		assert_int_equal(pthread_create(&t[i], NULL, fn, &w[i]), 0);
	}
	while (atomic_load(&producers_done) < PRODUCERS)
		sched_yield();
	sb_broadcast_close(&bc);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);

	long sent = items_each * PRODUCERS;
	for (int i = PRODUCERS; i < THREADS; i++) {
		worker *r = &w[i];
		assert_int_equal(r->torn, 0);
		assert_int_equal(r->disorder, 0);
		assert_int_equal(atomic_load(&r->waker.live), 0);
		if (i == THREADS - 1)
			continue; /* the churning receiver: order alone */
		assert_int_equal(r->gaps, 0);
		assert_int_equal(r->got + r->missed, sent);
		if (policy == SB_BROADCAST_BACKPRESSURE)
			assert_int_equal(r->missed, 0);
		for (int p = 0; p < PRODUCERS && policy == SB_BROADCAST_BACKPRESSURE; p++)
			assert_int_equal(r->last[p], items_each - 1);
		assert_int_equal(sb_broadcast_unsubscribe(&r->rx), 0);
	}
	for (int i = 0; i < PRODUCERS; i++)
		assert_int_equal(atomic_load(&w[i].waker.live), 0);
	assert_int_equal(sb_broadcast_subscribers(&bc), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void every_receiver_sees_every_item_in_order_or_a_counted_lag(void **state)
{
	(void)state;
	long each = stress_total_ops(2000000) / 10 / 4 / PRODUCERS;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "broadcast stress");
	for (int policy = 0; policy <= 1; policy++) {
		run(policy, 1, each);
		run(policy, 8, each);
	}
	sb_watchdog_stop(&wd);
}

/*
 * One-word items (the inline receive for a power-of-two capacity, the
 * out-of-line one without the lock otherwise): one sender sends 1, 2, 3,
 * ... with try_send, yielding after each, and closes; receivers read with
 * try_recv, yielding on -EAGAIN, until -EPIPE.  Each must get every value
 * it did not miss, in order: a value read from a slot being overwritten, or
 * a stale one, shows as a value that is not the next.
 */
typedef struct word_reader {
	sb_broadcast_receiver rx;
	long got, missed, disorder;
} word_reader;

static void *word_read(void *p)
{
	word_reader *w = p;
	uint64_t next = 1;
	for (;;) {
		uint64_t v;
		int r = sb_broadcast_try_recv(&w->rx, &v);
		if (r == 0) {
			w->disorder += v != next;
			next = v + 1;
			w->got++;
		} else if (r == -EOVERFLOW) {
			uint64_t m = sb_broadcast_receiver_missed(&w->rx);
			w->missed += (long)m;
			next += m;
		} else if (r == -EAGAIN) {
			sched_yield();
		} else {
			CHECK(r == -EPIPE);
			return NULL;
		}
	}
}

static void word_run(size_t capacity, long items)
{
	enum { READERS = 3 };
	uint64_t slots[4];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(uint64_t), capacity,
					   SB_BROADCAST_LAGGING), 0);
	word_reader w[READERS];
	pthread_t t[READERS];
	for (int i = 0; i < READERS; i++) {
		memset(&w[i], 0, sizeof w[i]);
		assert_int_equal(sb_broadcast_subscribe(&bc, &w[i].rx), 0);
		assert_int_equal(pthread_create(&t[i], NULL, word_read, &w[i]), 0);
	}
	for (uint64_t v = 1; v <= (uint64_t)items; v++) {
		assert_int_equal(sb_broadcast_try_send(&bc, &v), 0);
		sched_yield(); /* the readers keep up, often while it sends */
	}
	sb_broadcast_close(&bc);
	for (int i = 0; i < READERS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].disorder, 0);
		assert_int_equal(w[i].got + w[i].missed, items);
		assert_int_equal(sb_broadcast_unsubscribe(&w[i].rx), 0);
	}
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void one_word_receivers_racing_the_sender_get_each_value_in_order_or_a_counted_lag(
	void **state)
{
	(void)state;
	long items = stress_total_ops(2000000) / 10 / 3;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 240, "broadcast one-word stress");
	word_run(1, items);
	word_run(4, items);
	word_run(3, items);
	sb_watchdog_stop(&wd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_receiver_sees_every_item_in_order_or_a_counted_lag),
		cmocka_unit_test(one_word_receivers_racing_the_sender_get_each_value_in_order_or_a_counted_lag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
