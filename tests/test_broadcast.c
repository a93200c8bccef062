/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/blocking.h>
#include <syncband/broadcast.h>

#include "check.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

/* What a receive buffer holds before anything is received into it. */
#define UNTOUCHED (-1)

static int send_poll(sb_broadcast_send *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_broadcast_send_poll(f, &w);
}

static int recv_poll(sb_broadcast_recv *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_broadcast_recv_poll(f, &w);
}

/* A receive into `*into` that waits: polled once, pending, one clone held. */
static void start_recv(sb_broadcast_recv *f, sb_broadcast_receiver *rx, int *into,
		       counting_waker *c)
{
	counting_waker_init(c);
	*into = UNTOUCHED;
	sb_broadcast_recv_init(f, rx, into);
	assert_int_equal(recv_poll(f, c), SB_PENDING);
	assert_int_equal(atomic_load(&c->clones), 1);
}

/* A send of `*item` that waits: polled once, pending, one clone held. */
static void start_send(sb_broadcast_send *f, sb_broadcast *bc, const int *item,
		       counting_waker *c)
{
	counting_waker_init(c);
	sb_broadcast_send_init(f, bc, item);
	assert_int_equal(send_poll(f, c), SB_PENDING);
	assert_int_equal(atomic_load(&c->clones), 1);
}

static void send_int(sb_broadcast *bc, int v)
{
	assert_int_equal(sb_broadcast_try_send(bc, &v), 0);
}

static int recv_int(sb_broadcast_receiver *rx)
{
	int v = UNTOUCHED;
	assert_int_equal(sb_broadcast_try_recv(rx, &v), 0);
	return v;
}

static void assert_nothing_new(sb_broadcast_receiver *rx)
{
	int v = UNTOUCHED;
	assert_int_equal(sb_broadcast_try_recv(rx, &v), -EAGAIN);
	assert_int_equal(v, UNTOUCHED);
}

static void subscribe(sb_broadcast *bc, sb_broadcast_receiver *rx)
{
	*rx = (sb_broadcast_receiver)SB_BROADCAST_RECEIVER_INIT;
	assert_int_equal(sb_broadcast_subscribe(bc, rx), 0);
}

/* ---- layout and initialisation ---- */

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	assert_int_equal(sizeof(sb_broadcast), 80);
	assert_int_equal(sizeof(sb_broadcast_receiver), 64);
	assert_true(sizeof(sb_broadcast_send) <= 64);
	assert_true(sizeof(sb_broadcast_recv) <= 64);
}

static void the_static_initialiser_gives_an_open_broadcast_without_subscribers(void **state)
{
	(void)state;
	static int slots[4];
	static sb_broadcast bc = SB_BROADCAST_INIT(slots, sizeof(int), 4, SB_BROADCAST_BACKPRESSURE);
	static sb_broadcast_receiver rx = SB_BROADCAST_RECEIVER_INIT;
	assert_false(sb_broadcast_is_closed(&bc));
	assert_int_equal(sb_broadcast_capacity(&bc), 4);
	assert_int_equal(sb_broadcast_subscribers(&bc), 0);
	assert_int_equal(sb_broadcast_subscribe(&bc, &rx), 0);
	for (int i = 0; i < 4; i++)
		send_int(&bc, i);
	int v = 9;
	assert_int_equal(sb_broadcast_try_send(&bc, &v), -EAGAIN); /* back-pressure */
	for (int i = 0; i < 4; i++)
		assert_int_equal(recv_int(&rx), i);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void init_refuses_bad_arguments_and_leaves_the_broadcast_unchanged(void **state)
{
	(void)state;
	int slots[2];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_LAGGING), 0);
	sb_broadcast before = bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, 0, 2, SB_BROADCAST_LAGGING), -EINVAL);
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 0, SB_BROADCAST_LAGGING),
			 -EINVAL);
	assert_int_equal(sb_broadcast_init(&bc, NULL, sizeof(int), 2, SB_BROADCAST_LAGGING),
			 -EINVAL);
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, 2), -EINVAL);
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, -1), -EINVAL);
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int),
					   (size_t)SB_BROADCAST_MAX_CAPACITY + 1,
					   SB_BROADCAST_LAGGING),
			 -EINVAL);
	if (SIZE_MAX > UINT32_MAX)
		assert_int_equal(sb_broadcast_init(&bc, slots, (size_t)UINT32_MAX + 1, 1,
						   SB_BROADCAST_LAGGING),
				 -EINVAL);
	assert_int_equal(sb_broadcast_init(&bc, (char *)slots + 1, sizeof(int), 2,
					   SB_BROADCAST_LAGGING),
			 -EINVAL);
	assert_int_equal(sb_broadcast_init(&bc, slots, SIZE_MAX / 2, 3, SB_BROADCAST_LAGGING),
			 -EOVERFLOW);
	assert_memory_equal(&bc, &before, sizeof bc);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

/* ---- subscribing ---- */

static void a_new_subscriber_sees_only_what_is_sent_after_it_subscribed(void **state)
{
	(void)state;
	int slots[4];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 4, SB_BROADCAST_LAGGING), 0);
	send_int(&bc, 1); /* nobody's */
	sb_broadcast_receiver a, b;
	subscribe(&bc, &a);
	send_int(&bc, 2);
	subscribe(&bc, &b);
	send_int(&bc, 3);
	assert_int_equal(sb_broadcast_subscribers(&bc), 2);
	assert_int_equal(sb_broadcast_receiver_unread(&a), 2);
	assert_int_equal(sb_broadcast_receiver_unread(&b), 1);
	assert_int_equal(recv_int(&a), 2);
	assert_int_equal(recv_int(&a), 3);
	assert_int_equal(recv_int(&b), 3);
	assert_nothing_new(&a);
	assert_nothing_new(&b);
	assert_int_equal(sb_broadcast_unsubscribe(&a), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&b), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void every_subscriber_receives_every_item_in_order(void **state)
{
	(void)state;
	for (int policy = 0; policy <= 1; policy++) {
		int slots[3];
		sb_broadcast bc;
		assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 3, policy), 0);
		sb_broadcast_receiver rx[3];
		for (int i = 0; i < 3; i++)
			subscribe(&bc, &rx[i]);
		for (int round = 0; round < 5; round++) {
			for (int i = 0; i < 3; i++)
				send_int(&bc, round * 3 + i);
			for (int r = 0; r < 3; r++)
				for (int i = 0; i < 3; i++)
					assert_int_equal(recv_int(&rx[r]), round * 3 + i);
		}
		for (int r = 0; r < 3; r++) {
			assert_nothing_new(&rx[r]);
			assert_int_equal(sb_broadcast_unsubscribe(&rx[r]), 0);
		}
		assert_int_equal(sb_broadcast_destroy(&bc), 0);
	}
}

/*
 * Lagging rings of items up to 64 bytes are read without the lock, in units
 * of 8, 4 or 1 bytes; larger ones under it; a power-of-two capacity is
 * indexed with a mask, any other with a division.  Every size comes out
 * whole, lags are counted, and a receive that does not return 0 leaves the
 * caller's buffer untouched.
 */
static void every_item_size_is_received_whole_and_a_failed_receive_copies_nothing(void **state)
{
	(void)state;
	static const size_t sizes[] = { 1, 2, 3, 4, 6, 8, 12, 16, 24, 40, 64, 65, 72, 100 };
	enum { MAXSIZE = 100, MAXCAP = 4 };
	_Alignas(16) unsigned char slots[MAXSIZE * MAXCAP];
	unsigned char item[MAXSIZE], out[MAXSIZE];
	for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
		for (size_t cap = 3; cap <= MAXCAP; cap++) {
			size_t size = sizes[z];
			sb_broadcast bc;
			assert_int_equal(sb_broadcast_init(&bc, slots, size, cap, SB_BROADCAST_LAGGING),
					 0);
			sb_broadcast_receiver rx;
			subscribe(&bc, &rx);
			memset(out, 0xee, sizeof out);
			assert_int_equal(sb_broadcast_try_recv(&rx, out), -EAGAIN);
			for (size_t v = 1; v <= cap + 2; v++) { /* the first two are overwritten */
				for (size_t k = 0; k < size; k++)
					item[k] = (unsigned char)(v * 16 + k);
				assert_int_equal(sb_broadcast_try_send(&bc, item), 0);
			}
			assert_int_equal(sb_broadcast_try_recv(&rx, out), -EOVERFLOW);
			assert_int_equal(sb_broadcast_receiver_missed(&rx), 2);
			for (size_t k = 0; k < sizeof out; k++)
				assert_int_equal(out[k], 0xee); /* nothing copied */
			for (size_t v = 3; v <= cap + 2; v++) {
				assert_int_equal(sb_broadcast_try_recv(&rx, out), 0);
				for (size_t k = 0; k < size; k++)
					assert_int_equal(out[k], (unsigned char)(v * 16 + k));
				if (size < MAXSIZE)
					assert_int_equal(out[size], 0xee); /* no more than the item */
			}
			memset(out, 0xee, sizeof out);
			assert_int_equal(sb_broadcast_try_recv(&rx, out), -EAGAIN);
			for (size_t k = 0; k < sizeof out; k++)
				assert_int_equal(out[k], 0xee);
			assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
			assert_int_equal(sb_broadcast_destroy(&bc), 0);
		}
	}
}

static void a_receiver_used_after_unsubscribe_is_refused_with_einval(void **state)
{
	(void)state;
	int slots[2], v = UNTOUCHED;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	assert_int_equal(sb_broadcast_subscribe(&bc, &rx), -EINVAL); /* twice */
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	send_int(&bc, 1);
	assert_int_equal(sb_broadcast_try_recv(&rx, &v), -EINVAL);
	assert_int_equal(v, UNTOUCHED);
	assert_int_equal(sb_broadcast_recv_blocking(&rx, &v, 0), -EINVAL);
	sb_broadcast_recv f;
	sb_broadcast_recv_init(&f, &rx, &v);
	sb_waker w = sb_waker_noop();
	assert_int_equal(sb_broadcast_recv_poll(&f, &w), -EINVAL);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), -EINVAL);
	assert_int_equal(sb_broadcast_receiver_unread(&rx), 0);
	assert_int_equal(sb_broadcast_subscribers(&bc), 0);
	/* and it may subscribe again, from now on */
	assert_int_equal(sb_broadcast_subscribe(&bc, &rx), 0);
	assert_nothing_new(&rx);
	send_int(&bc, 2);
	assert_int_equal(recv_int(&rx), 2);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

/* The inline receive's own fields follow the ring it is subscribed to. */
static void a_word_receiver_moved_between_rings_of_each_kind_reads_each_in_order(void **state)
{
	(void)state;
	static const struct {
		size_t capacity;
		int policy;
	} rings[] = {
		{ 4, SB_BROADCAST_LAGGING },      /* the inline receive */
		{ 3, SB_BROADCAST_LAGGING },      /* without the lock, out of line */
		{ 1, SB_BROADCAST_LAGGING },      /* inline, one slot */
		{ 4, SB_BROADCAST_BACKPRESSURE }, /* the lock */
		{ 8, SB_BROADCAST_LAGGING },
	};
	uint64_t slots[8], v = 0, out;
	sb_broadcast_receiver rx = SB_BROADCAST_RECEIVER_INIT;
	assert_int_equal(sb_broadcast_try_recv(&rx, &out), -EINVAL); /* never subscribed */
	memset(&rx, 0, sizeof rx);
	assert_int_equal(sb_broadcast_try_recv(&rx, &out), -EINVAL); /* all-zero */
	for (size_t r = 0; r < sizeof rings / sizeof rings[0]; r++) {
		sb_broadcast bc;
		size_t cap = rings[r].capacity;
		assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(uint64_t), cap, rings[r].policy),
				 0);
		assert_int_equal(sb_broadcast_subscribe(&bc, &rx), 0);
		/* past several wraps, reading each item as it comes */
		for (size_t i = 0; i < 3 * cap + 2; i++) {
			v++;
			assert_int_equal(sb_broadcast_try_send(&bc, &v), 0);
			assert_int_equal(sb_broadcast_try_recv(&rx, &out), 0);
			assert_int_equal(out, v);
			assert_int_equal(sb_broadcast_try_recv(&rx, &out), -EAGAIN);
		}
		if (rings[r].policy == SB_BROADCAST_LAGGING) { /* then a lag of 2 */
			for (size_t i = 0; i < cap + 2; i++) {
				v++;
				assert_int_equal(sb_broadcast_try_send(&bc, &v), 0);
			}
			out = 0;
			assert_int_equal(sb_broadcast_try_recv(&rx, &out), -EOVERFLOW);
			assert_int_equal(out, 0);
			assert_int_equal(sb_broadcast_receiver_missed(&rx), 2);
			for (uint64_t w = v - cap + 1; w <= v; w++) {
				assert_int_equal(sb_broadcast_try_recv(&rx, &out), 0);
				assert_int_equal(out, w);
			}
		}
		assert_int_equal(sb_broadcast_try_recv(&rx, &out), -EAGAIN);
		assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
		v++;
		assert_int_equal(sb_broadcast_try_send(&bc, &v), 0); /* there, but not for it */
		assert_int_equal(sb_broadcast_try_recv(&rx, &out), -EINVAL);
		assert_int_equal(sb_broadcast_destroy(&bc), 0);
	}
}

static void a_null_item_is_refused_and_changes_nothing(void **state)
{
	(void)state;
	int slots[2];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	assert_int_equal(sb_broadcast_try_send(&bc, NULL), -EINVAL);
	assert_int_equal(sb_broadcast_send_blocking(&bc, NULL, 0), -EINVAL);
	assert_int_equal(sb_broadcast_receiver_unread(&rx), 0);
	send_int(&bc, 5);
	assert_int_equal(sb_broadcast_try_recv(&rx, NULL), -EINVAL);
	sb_broadcast_close(&bc);
	assert_int_equal(sb_broadcast_try_send(&bc, NULL), -EINVAL); /* before -EPIPE */
	assert_int_equal(recv_int(&rx), 5);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

/* ---- lagging ---- */

static void a_lagging_receiver_is_told_how_many_it_missed_and_resumes_at_the_oldest(void **state)
{
	(void)state;
	int slots[3], v = UNTOUCHED;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 3, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver slow, fast;
	subscribe(&bc, &slow);
	subscribe(&bc, &fast);
	for (int i = 0; i < 8; i++) {
		send_int(&bc, i); /* never waits */
		assert_int_equal(recv_int(&fast), i);
	}
	assert_int_equal(sb_broadcast_receiver_unread(&slow), 8);
	assert_int_equal(sb_broadcast_try_recv(&slow, &v), -EOVERFLOW);
	assert_int_equal(v, UNTOUCHED);
	assert_int_equal(sb_broadcast_receiver_missed(&slow), 5);
	assert_int_equal(recv_int(&slow), 5);
	assert_int_equal(recv_int(&slow), 6);
	assert_int_equal(recv_int(&slow), 7);
	assert_nothing_new(&slow);
	assert_int_equal(sb_broadcast_receiver_missed(&slow), 5); /* the last report */
	assert_int_equal(sb_broadcast_unsubscribe(&slow), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&fast), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void a_receiver_exactly_capacity_behind_has_not_lagged(void **state)
{
	(void)state;
	int slots[2];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	send_int(&bc, 1);
	send_int(&bc, 2);
	assert_int_equal(recv_int(&rx), 1);
	assert_int_equal(recv_int(&rx), 2);
	assert_int_equal(sb_broadcast_receiver_missed(&rx), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

/* ---- back-pressure ---- */

static void a_backpressured_send_waits_for_the_slowest_receiver(void **state)
{
	(void)state;
	int slots[2], item = 3;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_BACKPRESSURE),
			 0);
	sb_broadcast_receiver slow, fast;
	subscribe(&bc, &slow);
	subscribe(&bc, &fast);
	send_int(&bc, 1);
	send_int(&bc, 2);
	assert_int_equal(recv_int(&fast), 1);
	assert_int_equal(recv_int(&fast), 2);
	assert_int_equal(sb_broadcast_try_send(&bc, &item), -EAGAIN);
	sb_broadcast_send s;
	counting_waker cs;
	start_send(&s, &bc, &item, &cs);
	/* the fast receiver waits for item 3 meanwhile */
	sb_broadcast_recv r;
	counting_waker cr;
	int got;
	start_recv(&r, &fast, &got, &cr);
	assert_int_equal(recv_int(&slow), 1); /* frees the slot item 3 needs */
	assert_int_equal(atomic_load(&cs.woken), 1);
	assert_int_equal(atomic_load(&cr.woken), 1);
	assert_int_equal(send_poll(&s, &cs), 0);
	assert_int_equal(recv_poll(&r, &cr), 0);
	assert_int_equal(got, 3);
	assert_int_equal(recv_int(&slow), 2);
	assert_int_equal(recv_int(&slow), 3);
	assert_int_equal(atomic_load(&cs.live) + atomic_load(&cr.live), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&slow), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&fast), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void unsubscribing_the_slowest_receiver_lets_waiting_senders_in(void **state)
{
	(void)state;
	int slots[1], a = 2, b = 3;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_BACKPRESSURE),
			 0);
	sb_broadcast_receiver gone, stays;
	subscribe(&bc, &gone);
	subscribe(&bc, &stays);
	send_int(&bc, 1);
	assert_int_equal(recv_int(&stays), 1);
	sb_broadcast_send s1, s2;
	counting_waker c1, c2;
	start_send(&s1, &bc, &a, &c1);
	start_send(&s2, &bc, &b, &c2);
	assert_int_equal(sb_broadcast_unsubscribe(&gone), 0); /* it never read item 1 */
	assert_int_equal(atomic_load(&c1.woken), 1);
	assert_int_equal(atomic_load(&c2.woken), 0); /* capacity 1: one at a time */
	assert_int_equal(send_poll(&s1, &c1), 0);
	assert_int_equal(send_poll(&s2, &c2), SB_PENDING);
	assert_int_equal(recv_int(&stays), 2);
	assert_int_equal(send_poll(&s2, &c2), 0);
	assert_int_equal(recv_int(&stays), 3);
	assert_int_equal(atomic_load(&c1.live) + atomic_load(&c2.live), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&stays), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void without_subscribers_a_backpressured_send_never_waits(void **state)
{
	(void)state;
	int slots[1];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_BACKPRESSURE),
			 0);
	for (int i = 0; i < 5; i++)
		send_int(&bc, i);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	send_int(&bc, 7);
	int v = 8;
	assert_int_equal(sb_broadcast_try_send(&bc, &v), -EAGAIN);
	assert_int_equal(recv_int(&rx), 7);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void waiting_senders_are_served_in_fifo_order_and_nobody_barges(void **state)
{
	(void)state;
	int slots[1], items[3] = { 10, 11, 12 }, late = 99;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_BACKPRESSURE),
			 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	send_int(&bc, 9);
	sb_broadcast_send s[3];
	counting_waker c[3];
	for (int i = 0; i < 3; i++)
		start_send(&s[i], &bc, &items[i], &c[i]);
	assert_int_equal(recv_int(&rx), 9);
	/* item 10 took the slot; a try_send finds the ring full */
	assert_int_equal(sb_broadcast_try_send(&bc, &late), -EAGAIN);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(send_poll(&s[i], &c[i]), 0);
		assert_int_equal(recv_int(&rx), items[i]);
	}
	assert_nothing_new(&rx);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

/* ---- futures and wakers ---- */

static void a_ready_future_completes_on_its_first_poll_without_cloning(void **state)
{
	(void)state;
	int slots[2], got = UNTOUCHED, item = 4;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_BACKPRESSURE),
			 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	counting_waker c;
	counting_waker_init(&c);
	sb_broadcast_send s;
	sb_broadcast_send_init(&s, &bc, &item);
	assert_int_equal(send_poll(&s, &c), 0);
	assert_int_equal(send_poll(&s, &c), 0); /* again */
	sb_broadcast_recv r;
	sb_broadcast_recv_init(&r, &rx, &got);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(got, 4);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void a_send_wakes_every_waiting_receiver_and_each_gets_the_item(void **state)
{
	(void)state;
	enum { N = 40 }; /* more than a wake batch */
	int slots[2];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_LAGGING), 0);
	static sb_broadcast_receiver rx[N];
	static sb_broadcast_recv r[N];
	static counting_waker c[N];
	static int got[N];
	for (int i = 0; i < N; i++) {
		subscribe(&bc, &rx[i]);
		start_recv(&r[i], &rx[i], &got[i], &c[i]);
	}
	send_int(&bc, 42);
	for (int i = 0; i < N; i++) {
		assert_int_equal(atomic_load(&c[i].woken), 1);
		assert_int_equal(recv_poll(&r[i], &c[i]), 0);
		assert_int_equal(got[i], 42);
		assert_int_equal(atomic_load(&c[i].live), 0);
		assert_int_equal(sb_broadcast_unsubscribe(&rx[i]), 0);
	}
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void repolling_with_the_same_waker_does_not_clone_and_a_new_one_replaces_it(void **state)
{
	(void)state;
	int slots[1], got;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	sb_broadcast_recv r;
	counting_waker a, b;
	start_recv(&r, &rx, &got, &a);
	assert_int_equal(recv_poll(&r, &a), SB_PENDING);
	assert_int_equal(atomic_load(&a.clones), 1);
	counting_waker_init(&b);
	assert_int_equal(recv_poll(&r, &b), SB_PENDING);
	assert_int_equal(atomic_load(&a.drops), 1);
	assert_int_equal(atomic_load(&b.clones), 1);
	send_int(&bc, 6);
	assert_int_equal(atomic_load(&b.woken), 1);
	assert_int_equal(atomic_load(&a.wakes), 0);
	assert_int_equal(recv_poll(&r, &b), 0);
	assert_int_equal(got, 6);
	assert_int_equal(atomic_load(&a.live) + atomic_load(&b.live), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void a_woken_receive_that_lagged_meanwhile_reports_the_lag(void **state)
{
	(void)state;
	int slots[2], got;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	sb_broadcast_recv r;
	counting_waker c;
	start_recv(&r, &rx, &got, &c);
	for (int i = 0; i < 5; i++)
		send_int(&bc, i);
	assert_int_equal(atomic_load(&c.woken), 1); /* once */
	assert_int_equal(recv_poll(&r, &c), -EOVERFLOW);
	assert_int_equal(got, UNTOUCHED);
	assert_int_equal(sb_broadcast_receiver_missed(&rx), 3);
	assert_int_equal(recv_poll(&r, &c), -EOVERFLOW); /* a done future's result again */
	assert_int_equal(recv_int(&rx), 3);
	assert_int_equal(recv_int(&rx), 4);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void a_cancelled_receive_took_nothing_even_after_its_wake(void **state)
{
	(void)state;
	int slots[2], got;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	sb_broadcast_recv r;
	counting_waker c;
	/* cancelled while queued */
	start_recv(&r, &rx, &got, &c);
	assert_int_equal(sb_broadcast_recv_cancel(&r), -ECANCELED);
	assert_int_equal(atomic_load(&c.drops), 1);
	assert_int_equal(recv_poll(&r, &c), -ECANCELED);
	/* cancelled after a send woke it */
	start_recv(&r, &rx, &got, &c);
	send_int(&bc, 1);
	assert_int_equal(atomic_load(&c.woken), 1);
	assert_int_equal(sb_broadcast_recv_cancel(&r), -ECANCELED);
	assert_int_equal(got, UNTOUCHED);
	assert_int_equal(recv_int(&rx), 1); /* still the receiver's next */
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void cancel_of_a_waiting_send_returns_ecanceled_or_0_once_its_item_went_in(void **state)
{
	(void)state;
	int slots[1], a = 2, b = 3;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_BACKPRESSURE),
			 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	send_int(&bc, 1);
	sb_broadcast_send s1, s2;
	counting_waker c1, c2;
	start_send(&s1, &bc, &a, &c1);
	start_send(&s2, &bc, &b, &c2);
	assert_int_equal(sb_broadcast_send_cancel(&s2), -ECANCELED);
	assert_int_equal(atomic_load(&c2.drops), 1);
	assert_int_equal(recv_int(&rx), 1); /* item 2 goes in */
	assert_int_equal(sb_broadcast_send_cancel(&s1), 0);
	assert_int_equal(send_poll(&s1, &c1), 0);
	assert_int_equal(recv_int(&rx), 2);
	assert_nothing_new(&rx); /* item 3 was never sent */
	assert_int_equal(atomic_load(&c1.live) + atomic_load(&c2.live), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void cancel_of_an_idle_future_returns_ecanceled_and_changes_nothing(void **state)
{
	(void)state;
	int slots[1], got = UNTOUCHED, item = 1;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	sb_broadcast_send s;
	sb_broadcast_send_init(&s, &bc, &item);
	assert_int_equal(sb_broadcast_send_cancel(&s), -ECANCELED);
	sb_broadcast_recv r;
	sb_broadcast_recv_init(&r, &rx, &got);
	assert_int_equal(sb_broadcast_recv_cancel(&r), -ECANCELED);
	assert_int_equal(sb_broadcast_receiver_unread(&rx), 0);
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(send_poll(&s, &c), -ECANCELED);
	assert_int_equal(recv_poll(&r, &c), -ECANCELED);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void a_receive_whose_waker_clone_sends_gets_that_item_without_deadlock_hook(void *bc)
{
	int v = 77;
	CHECK(sb_broadcast_try_send(bc, &v) == 0);
}

/* A receive clones its waker before it takes the lock: a clone that sends
 * does not deadlock, and the receive finds that item. */
static void a_receive_whose_waker_clone_sends_gets_that_item_without_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on a receive");
	int slots[2], got = UNTOUCHED;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	counting_waker c;
	counting_waker_init(&c);
	c.on_clone = a_receive_whose_waker_clone_sends_gets_that_item_without_deadlock_hook;
	c.hook_arg = &bc;
	sb_broadcast_recv r;
	sb_broadcast_recv_init(&r, &rx, &got);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(got, 77);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
	sb_watchdog_stop(&wd);
}

static void send_from_the_wake(void *bc)
{
	int v = 5;
	CHECK(sb_broadcast_try_send(bc, &v) == 0);
}

static void the_wakes_run_after_the_lock_is_released(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant wake from a send");
	int slots[4], got;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 4, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	sb_broadcast_recv r;
	counting_waker c;
	start_recv(&r, &rx, &got, &c);
	c.on_wake = send_from_the_wake;
	c.hook_arg = &bc;
	send_int(&bc, 4);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(got, 4);
	assert_int_equal(recv_int(&rx), 5);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
	sb_watchdog_stop(&wd);
}

/* ---- close ---- */

static void close_lets_each_receiver_drain_what_it_has_not_read_then_epipe(void **state)
{
	(void)state;
	int slots[4], v = 9, got;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 4, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver a, b, late;
	subscribe(&bc, &a);
	subscribe(&bc, &b);
	send_int(&bc, 1);
	send_int(&bc, 2);
	assert_int_equal(recv_int(&a), 1);
	sb_broadcast_close(&bc);
	sb_broadcast_close(&bc); /* idempotent */
	assert_true(sb_broadcast_is_closed(&bc));
	assert_int_equal(sb_broadcast_try_send(&bc, &v), -EPIPE);
	assert_int_equal(sb_broadcast_send_blocking(&bc, &v, SB_TIMEOUT_INFINITE), -EPIPE);
	late = (sb_broadcast_receiver)SB_BROADCAST_RECEIVER_INIT;
	assert_int_equal(sb_broadcast_subscribe(&bc, &late), -EPIPE);
	assert_int_equal(recv_int(&a), 2);
	assert_int_equal(sb_broadcast_try_recv(&a, &got), -EPIPE);
	assert_int_equal(recv_int(&b), 1);
	assert_int_equal(recv_int(&b), 2);
	assert_int_equal(sb_broadcast_recv_blocking(&b, &got, SB_TIMEOUT_INFINITE), -EPIPE);
	assert_int_equal(sb_broadcast_unsubscribe(&a), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&b), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void close_wakes_waiting_receivers_and_fails_waiting_senders(void **state)
{
	(void)state;
	int slots[1], item = 2, got;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_BACKPRESSURE),
			 0);
	sb_broadcast_receiver slow, fast;
	subscribe(&bc, &slow);
	subscribe(&bc, &fast);
	send_int(&bc, 1);
	assert_int_equal(recv_int(&fast), 1);
	sb_broadcast_send s;
	counting_waker cs;
	start_send(&s, &bc, &item, &cs);
	sb_broadcast_recv r;
	counting_waker cr;
	start_recv(&r, &fast, &got, &cr);
	sb_broadcast_close(&bc);
	assert_int_equal(atomic_load(&cs.woken), 1);
	assert_int_equal(atomic_load(&cr.woken), 1);
	assert_int_equal(send_poll(&s, &cs), -EPIPE);
	assert_int_equal(sb_broadcast_send_cancel(&s), -EPIPE);
	assert_int_equal(recv_poll(&r, &cr), -EPIPE);
	assert_int_equal(recv_int(&slow), 1);
	assert_int_equal(sb_broadcast_try_recv(&slow, &got), -EPIPE);
	assert_int_equal(atomic_load(&cs.live) + atomic_load(&cr.live), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&slow), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&fast), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void close_with_more_waiters_than_a_wake_batch_wakes_them_all(void **state)
{
	(void)state;
	enum { N = 70 };
	int slots[1], got[N], items[N];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_BACKPRESSURE),
			 0);
	static sb_broadcast_receiver rx[N];
	static sb_broadcast_recv r[N];
	static sb_broadcast_send s[N];
	static counting_waker cr[N], cs[N];
	sb_broadcast_receiver slow;
	subscribe(&bc, &slow);
	send_int(&bc, 0);
	for (int i = 0; i < N; i++) {
		subscribe(&bc, &rx[i]);
		start_recv(&r[i], &rx[i], &got[i], &cr[i]);
		items[i] = i;
		start_send(&s[i], &bc, &items[i], &cs[i]);
	}
	sb_broadcast_close(&bc);
	for (int i = 0; i < N; i++) {
		assert_int_equal(recv_poll(&r[i], &cr[i]), -EPIPE);
		assert_int_equal(send_poll(&s[i], &cs[i]), -EPIPE);
		assert_int_equal(atomic_load(&cr[i].live) + atomic_load(&cs[i].live), 0);
		assert_int_equal(sb_broadcast_unsubscribe(&rx[i]), 0);
	}
	assert_int_equal(recv_int(&slow), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&slow), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

/* ---- lifetime ---- */

static void destroy_and_unsubscribe_return_ebusy_while_in_use_and_change_nothing(void **state)
{
	(void)state;
	int slots[1], got, item = 2;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_BACKPRESSURE),
			 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	assert_int_equal(sb_broadcast_destroy(&bc), -EBUSY); /* a subscriber */
	sb_broadcast_recv r;
	counting_waker cr;
	start_recv(&r, &rx, &got, &cr);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), -EBUSY);
	assert_int_equal(sb_broadcast_destroy(&bc), -EBUSY);
	send_int(&bc, 1); /* still usable */
	assert_int_equal(recv_poll(&r, &cr), 0);
	assert_int_equal(got, 1);
	sb_broadcast_send s;
	counting_waker cs;
	send_int(&bc, 1);
	start_send(&s, &bc, &item, &cs);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0); /* lets the send in */
	assert_int_equal(send_poll(&s, &cs), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
	assert_int_equal(atomic_load(&cr.live) + atomic_load(&cs.live), 0);
}

static int send_poll_typed(void *f, const sb_waker *w)
{
	return sb_broadcast_send_poll(f, w);
}

static int recv_poll_typed(void *f, const sb_waker *w)
{
	return sb_broadcast_recv_poll(f, w);
}

static void a_zeroed_future_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	int slots[2];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_LAGGING), 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	send_int(&bc, 1);
	sb_broadcast_send s;
	assert_zeroed_future_is_refused(&s, sizeof s, &sb_broadcast_send_ops, send_poll_typed);
	sb_broadcast_recv r;
	assert_zeroed_future_is_refused(&r, sizeof r, &sb_broadcast_recv_ops, recv_poll_typed);
	sb_broadcast_receiver zero;
	memset(&zero, 0, sizeof zero);
	int v = UNTOUCHED;
	assert_int_equal(sb_broadcast_try_recv(&zero, &v), -EINVAL);
	assert_int_equal(recv_int(&rx), 1);
	assert_nothing_new(&rx);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

static void the_ops_tables_and_the_generic_blocking_wait_drive_the_futures(void **state)
{
	(void)state;
	int slots[1], got = UNTOUCHED, item = 12;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_BACKPRESSURE),
			 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	sb_broadcast_recv r;
	sb_broadcast_recv_init(&r, &rx, &got);
	assert_int_equal(sb_broadcast_recv_ops.poll(&r, &w), SB_PENDING);
	sb_broadcast_send s;
	sb_broadcast_send_init(&s, &bc, &item);
	assert_int_equal(sb_broadcast_send_ops.poll(&s, &w), 0);
	assert_int_equal(sb_broadcast_recv_ops.poll(&r, &w), 0);
	assert_int_equal(got, 12);
	sb_broadcast_recv_init(&r, &rx, &got);
	assert_int_equal(sb_future_wait_blocking(&r, &sb_broadcast_recv_ops, 0), -ETIMEDOUT);
	send_int(&bc, 13);
	sb_broadcast_send_init(&s, &bc, &item);
	assert_int_equal(sb_future_wait_blocking(&s, &sb_broadcast_send_ops, 0), -ETIMEDOUT);
	sb_broadcast_recv_init(&r, &rx, &got);
	assert_int_equal(sb_future_wait_blocking(&r, &sb_broadcast_recv_ops, 0), 0);
	assert_int_equal(got, 13);
	sb_broadcast_send_init(&s, &bc, &item);
	sb_broadcast_send_ops.poll(&s, &w);
	sb_broadcast_send_ops.cancel(&s);
	assert_int_equal(sb_broadcast_send_poll(&s, &w), 0); /* it had gone in */
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

/* ---- blocking, across threads ---- */

typedef struct {
	sb_broadcast *bc;
	sb_broadcast_receiver rx;
	int n;
	int got[200];
	int result;
} reader_arg;

static void *blocking_reader(void *p)
{
	reader_arg *a = p;
	a->result = 0;
	for (int i = 0; i < a->n && a->result == 0; i++)
		a->result = sb_broadcast_recv_blocking(&a->rx, &a->got[i], SB_TIMEOUT_INFINITE);
	if (a->result == 0) {
		int extra;
		a->result = sb_broadcast_recv_blocking(&a->rx, &extra, SB_TIMEOUT_INFINITE);
	}
	return NULL;
}

static void blocking_send_and_recv_meet_across_threads_then_close_ends_them(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "blocking broadcast across threads");
	int slots[2];
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 2, SB_BROADCAST_BACKPRESSURE),
			 0);
	static reader_arg a[3];
	pthread_t t[3];
	for (int i = 0; i < 3; i++) {
		a[i].bc = &bc;
		a[i].n = 200;
		subscribe(&bc, &a[i].rx);
		assert_int_equal(pthread_create(&t[i], NULL, blocking_reader, &a[i]), 0);
	}
	for (int i = 0; i < 200; i++)
		assert_int_equal(sb_broadcast_send_blocking(&bc, &i, SB_TIMEOUT_INFINITE), 0);
	sb_broadcast_close(&bc);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].result, -EPIPE);
		for (int k = 0; k < 200; k++)
			assert_int_equal(a[i].got[k], k);
		assert_int_equal(sb_broadcast_unsubscribe(&a[i].rx), 0);
	}
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
	sb_watchdog_stop(&wd);
}

static void blocking_waits_that_time_out_move_nothing(void **state)
{
	(void)state;
	int slots[1], got = UNTOUCHED, item = 3;
	sb_broadcast bc;
	assert_int_equal(sb_broadcast_init(&bc, slots, sizeof(int), 1, SB_BROADCAST_BACKPRESSURE),
			 0);
	sb_broadcast_receiver rx;
	subscribe(&bc, &rx);
	assert_int_equal(sb_broadcast_recv_blocking(&rx, &got, 1000), -ETIMEDOUT);
	assert_int_equal(got, UNTOUCHED);
	send_int(&bc, 1);
	assert_int_equal(sb_broadcast_send_blocking(&bc, &item, 1000), -ETIMEDOUT);
	assert_int_equal(sb_broadcast_send_blocking(&bc, &item, 0), -ETIMEDOUT);
	assert_int_equal(recv_int(&rx), 1);
	assert_nothing_new(&rx);
	assert_int_equal(sb_broadcast_unsubscribe(&rx), 0);
	assert_int_equal(sb_broadcast_destroy(&bc), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(the_static_initialiser_gives_an_open_broadcast_without_subscribers),
		cmocka_unit_test(init_refuses_bad_arguments_and_leaves_the_broadcast_unchanged),
		cmocka_unit_test(a_new_subscriber_sees_only_what_is_sent_after_it_subscribed),
		cmocka_unit_test(every_subscriber_receives_every_item_in_order),
		cmocka_unit_test(every_item_size_is_received_whole_and_a_failed_receive_copies_nothing),
		cmocka_unit_test(a_receiver_used_after_unsubscribe_is_refused_with_einval),
		cmocka_unit_test(a_word_receiver_moved_between_rings_of_each_kind_reads_each_in_order),
		cmocka_unit_test(a_null_item_is_refused_and_changes_nothing),
		cmocka_unit_test(a_lagging_receiver_is_told_how_many_it_missed_and_resumes_at_the_oldest),
		cmocka_unit_test(a_receiver_exactly_capacity_behind_has_not_lagged),
		cmocka_unit_test(a_backpressured_send_waits_for_the_slowest_receiver),
		cmocka_unit_test(unsubscribing_the_slowest_receiver_lets_waiting_senders_in),
		cmocka_unit_test(without_subscribers_a_backpressured_send_never_waits),
		cmocka_unit_test(waiting_senders_are_served_in_fifo_order_and_nobody_barges),
		cmocka_unit_test(a_ready_future_completes_on_its_first_poll_without_cloning),
		cmocka_unit_test(a_send_wakes_every_waiting_receiver_and_each_gets_the_item),
		cmocka_unit_test(repolling_with_the_same_waker_does_not_clone_and_a_new_one_replaces_it),
		cmocka_unit_test(a_woken_receive_that_lagged_meanwhile_reports_the_lag),
		cmocka_unit_test(a_cancelled_receive_took_nothing_even_after_its_wake),
		cmocka_unit_test(cancel_of_a_waiting_send_returns_ecanceled_or_0_once_its_item_went_in),
		cmocka_unit_test(cancel_of_an_idle_future_returns_ecanceled_and_changes_nothing),
		cmocka_unit_test(a_receive_whose_waker_clone_sends_gets_that_item_without_deadlock),
		cmocka_unit_test(the_wakes_run_after_the_lock_is_released),
		cmocka_unit_test(close_lets_each_receiver_drain_what_it_has_not_read_then_epipe),
		cmocka_unit_test(close_wakes_waiting_receivers_and_fails_waiting_senders),
		cmocka_unit_test(close_with_more_waiters_than_a_wake_batch_wakes_them_all),
		cmocka_unit_test(destroy_and_unsubscribe_return_ebusy_while_in_use_and_change_nothing),
		cmocka_unit_test(a_zeroed_future_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(the_ops_tables_and_the_generic_blocking_wait_drive_the_futures),
		cmocka_unit_test(blocking_send_and_recv_meet_across_threads_then_close_ends_them),
		cmocka_unit_test(blocking_waits_that_time_out_move_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
