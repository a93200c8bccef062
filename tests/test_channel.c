/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/blocking.h>
#include <syncband/channel.h>

#include "check.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

/* What a receive buffer holds before anything is received into it. */
#define UNTOUCHED (-1)

#ifdef TEST_CHANNEL_RING
/*
 * test_channel_ring: every test again over stamped rings.  Each
 * sb_channel_init that succeeds with a capacity is redone as
 * sb_channel_init_ring over storage of its own, taken in turn from a pool
 * (the caller's slots, sized for the items alone, stay unused), so the
 * errors are init's and the rest runs on the ring.
 */
enum { RING_POOL = 16, RING_POOL_BYTES = 4096 };
static _Alignas(64) unsigned char ring_pool[RING_POOL][RING_POOL_BYTES];

static int init_as_ring(sb_channel *ch, void *storage, size_t item_size, size_t capacity)
{
	static unsigned next;
	int r = sb_channel_init(ch, storage, item_size, capacity);
	if (r != 0 || capacity == 0)
		return r;
	assert_true(SB_CHANNEL_RING_STORAGE_SIZE(item_size, capacity) <= RING_POOL_BYTES);
	return sb_channel_init_ring(ch, ring_pool[next++ % RING_POOL], item_size, capacity);
}
#define sb_channel_init init_as_ring
#endif

/* Polls with a counting waker, so the waker contract is checked too. */
static int send_poll(sb_channel_send *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_channel_send_poll(f, &w);
}

static int recv_poll(sb_channel_recv *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_channel_recv_poll(f, &w);
}

static int send_poll_noop(sb_channel_send *f)
{
	sb_waker w = sb_waker_noop();
	return sb_channel_send_poll(f, &w);
}

static int recv_poll_noop(sb_channel_recv *f)
{
	sb_waker w = sb_waker_noop();
	return sb_channel_recv_poll(f, &w);
}

/* A send of `*item` that waits: polled once, pending, one clone held. */
static void start_send(sb_channel_send *f, sb_channel *ch, const int *item, counting_waker *c)
{
	counting_waker_init(c);
	sb_channel_send_init(f, ch, item);
	assert_int_equal(send_poll(f, c), SB_PENDING);
	assert_int_equal(atomic_load(&c->clones), 1);
}

/* A receive into `*into` that waits: polled once, pending, one clone held. */
static void start_recv(sb_channel_recv *f, sb_channel *ch, int *into, counting_waker *c)
{
	counting_waker_init(c);
	*into = UNTOUCHED;
	sb_channel_recv_init(f, ch, into);
	assert_int_equal(recv_poll(f, c), SB_PENDING);
	assert_int_equal(atomic_load(&c->clones), 1);
}

static void send_int(sb_channel *ch, int v)
{
	assert_int_equal(sb_channel_try_send(ch, &v), 0);
}

/* try_recv must succeed; returns the item. */
static int recv_int(sb_channel *ch)
{
	int v = UNTOUCHED;
	assert_int_equal(sb_channel_try_recv(ch, &v), 0);
	return v;
}

static void assert_empty_and_open(sb_channel *ch)
{
	int v = UNTOUCHED;
	assert_int_equal(sb_channel_try_recv(ch, &v), -EAGAIN);
	assert_int_equal(v, UNTOUCHED);
	assert_int_equal(sb_channel_len(ch), 0);
}

static void assert_drained_and_closed(sb_channel *ch)
{
	int v = UNTOUCHED;
	assert_true(sb_channel_is_closed(ch));
	assert_int_equal(sb_channel_try_recv(ch, &v), -EPIPE);
	assert_int_equal(v, UNTOUCHED);
	assert_int_equal(sb_channel_len(ch), 0);
}

/* ---- layout and initialisation ---- */

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	assert_int_equal(sizeof(sb_channel), 64);
	assert_true(sizeof(sb_channel_send) <= 64);
	assert_true(sizeof(sb_channel_recv) <= 64);
}

static void the_static_initialiser_gives_an_open_empty_channel(void **state)
{
	(void)state;
	static int slots[4];
	static sb_channel ch = SB_CHANNEL_INIT(slots, sizeof(int), 4);
	assert_false(sb_channel_is_closed(&ch));
	assert_int_equal(sb_channel_capacity(&ch), 4);
	assert_empty_and_open(&ch);
	for (int i = 0; i < 4; i++)
		send_int(&ch, 10 + i);
	assert_int_equal(sb_channel_len(&ch), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(recv_int(&ch), 10 + i);
	assert_int_equal(sb_channel_destroy(&ch), 0);

	static sb_channel rv = SB_CHANNEL_INIT(NULL, sizeof(int), 0);
	int v = 1;
	assert_int_equal(sb_channel_capacity(&rv), 0);
	assert_false(sb_channel_is_closed(&rv));
	assert_int_equal(sb_channel_try_send(&rv, &v), -EAGAIN);
	assert_empty_and_open(&rv);
	assert_int_equal(sb_channel_destroy(&rv), 0);
}

static void the_ring_static_initialiser_gives_an_open_empty_channel(void **state)
{
	(void)state;
	static _Alignas(64) unsigned char storage[SB_CHANNEL_RING_STORAGE_SIZE(sizeof(int), 3)];
	static sb_channel ch = SB_CHANNEL_RING_INIT(storage, sizeof(int), 3);
	assert_false(sb_channel_is_closed(&ch));
	assert_int_equal(sb_channel_capacity(&ch), 3);
	assert_empty_and_open(&ch);
	for (int lap = 0; lap < 5; lap++) { /* the stamps wrap around the slots */
		for (int i = 0; i < 3; i++)
			send_int(&ch, 10 * lap + i);
		int v = 7;
		assert_int_equal(sb_channel_try_send(&ch, &v), -EAGAIN);
		assert_int_equal(sb_channel_len(&ch), 3);
		for (int i = 0; i < 3; i++)
			assert_int_equal(recv_int(&ch), 10 * lap + i);
		assert_empty_and_open(&ch);
	}
	send_int(&ch, 1);
	send_int(&ch, 2);
	sb_channel_close(&ch);
	assert_true(sb_channel_is_closed(&ch));
	assert_int_equal(recv_int(&ch), 1);
	assert_int_equal(recv_int(&ch), 2);
	int v;
	assert_int_equal(sb_channel_try_recv(&ch, &v), -EPIPE);
	assert_int_equal(sb_channel_try_send(&ch, &v), -EPIPE);
	assert_int_equal(sb_channel_destroy(&ch), 0);

	static sb_channel rv = SB_CHANNEL_RING_INIT(NULL, sizeof(int), 0);
	assert_int_equal(sb_channel_capacity(&rv), 0);
	assert_int_equal(sb_channel_try_send(&rv, &v), -EAGAIN);
	assert_empty_and_open(&rv);
	assert_int_equal(sb_channel_destroy(&rv), 0);
}

/*
 * The ring's positions wrap at 2^64 (after 2^29 laps): a ring set up a few
 * items before the wrap (its words and stamps written as the ring would
 * have left them) keeps its order and its count across it.
 */
static void a_ring_keeps_its_order_across_the_wrap_of_its_positions(void **state)
{
	(void)state;
	enum { CAP = 3 };
	static _Alignas(64) unsigned char storage[SB_CHANNEL_RING_STORAGE_SIZE(sizeof(int), CAP)];
	sb_channel ch;
	assert_int_equal(sb_channel_init_ring(&ch, storage, sizeof(int), CAP), 0);
	uint64_t last_lap = SB__CHANNEL_RING_LAP_BITS; /* every lap bit set */
	uint64_t pos = last_lap + 1 * SB__CHANNEL_RING_STEP; /* slot 1 of the last lap */
	atomic_store(sb__channel_ring_head(&ch), pos);
	atomic_store(sb__channel_ring_tail(&ch), pos);
	atomic_store(sb__channel_ring_stamp(&ch, 0), sb__channel_ring_free(0)); /* next lap: 0 */
	atomic_store(sb__channel_ring_stamp(&ch, 1), sb__channel_ring_free(last_lap));
	atomic_store(sb__channel_ring_stamp(&ch, 2), sb__channel_ring_free(last_lap));
	int next_in = 0, next_out = 0;
	for (int round = 0; round < 4; round++) {
		while (sb_channel_len(&ch) < CAP)
			send_int(&ch, next_in++);
		assert_int_equal(sb_channel_try_send(&ch, &next_in), -EAGAIN);
		for (int k = 0; k <= round % CAP; k++)
			assert_int_equal(recv_int(&ch), next_out++);
	}
	while (next_out < next_in)
		assert_int_equal(recv_int(&ch), next_out++);
	assert_empty_and_open(&ch);
	assert_true(atomic_load(sb__channel_ring_head(&ch)) < last_lap); /* it wrapped */
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void init_ring_checks_as_init_and_wants_words_aligned(void **state)
{
	(void)state;
	static _Alignas(64) unsigned char storage[SB_CHANNEL_RING_STORAGE_SIZE(4, 2) + 16];
	sb_channel ch;
	memset(storage, 0xff, sizeof storage); /* init clears what it needs */
	assert_int_equal(sb_channel_init_ring(&ch, storage, 0, 2), -EINVAL);
	assert_int_equal(sb_channel_init_ring(&ch, NULL, 4, 2), -EINVAL);
	assert_int_equal(sb_channel_init_ring(&ch, storage + 4, 4, 2), -EINVAL);
	assert_int_equal(sb_channel_init_ring(&ch, storage + 8, 16, 2), -EINVAL);
	assert_int_equal(sb_channel_init_ring(&ch, storage, 4, (size_t)SB_CHANNEL_MAX_CAPACITY + 1),
			 -EINVAL);
	assert_int_equal(sb_channel_init_ring(&ch, NULL, 4, 0), 0);
	assert_int_equal(sb_channel_capacity(&ch), 0);
	assert_int_equal(sb_channel_init_ring(&ch, storage + 8, 4, 2), 0);
	assert_int_equal(sb_channel_capacity(&ch), 2);
	assert_empty_and_open(&ch);
	send_int(&ch, 4);
	assert_int_equal(recv_int(&ch), 4);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void init_accepts_null_storage_for_a_rendezvous_channel(void **state)
{
	(void)state;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, NULL, 8, 0), 0);
	assert_int_equal(sb_channel_capacity(&ch), 0);
	assert_false(sb_channel_is_closed(&ch));
	assert_int_equal(sb_channel_len(&ch), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	int slots[1];
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 0), 0);
	assert_int_equal(sb_channel_capacity(&ch), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* One item (7) in a channel of capacity 2: what a refused init must keep. */
static void assert_still_holds_seven(sb_channel *ch)
{
	assert_int_equal(sb_channel_len(ch), 1);
	assert_int_equal(sb_channel_capacity(ch), 2);
	assert_false(sb_channel_is_closed(ch));
}

static void init_refuses_bad_arguments_and_leaves_the_channel_unchanged(void **state)
{
	(void)state;
	int slots[2];
	_Alignas(16) unsigned char buf[256];
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	send_int(&ch, 7);

	/* item_size 0 */
	assert_int_equal(sb_channel_init(&ch, buf, 0, 2), -EINVAL);
	assert_still_holds_seven(&ch);
	/* storage NULL with a capacity */
	assert_int_equal(sb_channel_init(&ch, NULL, sizeof(int), 2), -EINVAL);
	assert_still_holds_seven(&ch);
	/* capacity above the maximum */
	assert_int_equal(sb_channel_init(&ch, buf, 1, (size_t)SB_CHANNEL_MAX_CAPACITY + 1), -EINVAL);
	assert_still_holds_seven(&ch);
	/* item_size above UINT32_MAX (storage aligned to 16, the most asked) */
	if (SIZE_MAX > UINT32_MAX) {
		assert_int_equal(sb_channel_init(&ch, buf, (size_t)UINT32_MAX + 1, 1), -EINVAL);
		assert_still_holds_seven(&ch);
	}
	/* both absurd: refused, whichever error it names first */
	int r = sb_channel_init(&ch, buf, SIZE_MAX, SIZE_MAX);
	assert_true(r == -EINVAL || r == -EOVERFLOW);
	assert_still_holds_seven(&ch);
	/* misaligned storage: 8-byte items at an odd address and at 4 mod 8 */
	assert_int_equal(sb_channel_init(&ch, buf + 1, 8, 2), -EINVAL);
	assert_still_holds_seven(&ch);
	assert_int_equal(sb_channel_init(&ch, buf + 4, 8, 2), -EINVAL);
	assert_still_holds_seven(&ch);
	/* 16-byte items, and 32-byte ones (capped at 16), at 8 mod 16 */
	assert_int_equal(sb_channel_init(&ch, buf + 8, 16, 2), -EINVAL);
	assert_still_holds_seven(&ch);
	assert_int_equal(sb_channel_init(&ch, buf + 8, 32, 2), -EINVAL);
	assert_still_holds_seven(&ch);
	/* 2-byte items at an odd address */
	assert_int_equal(sb_channel_init(&ch, buf + 1, 2, 2), -EINVAL);
	assert_still_holds_seven(&ch);

	assert_int_equal(recv_int(&ch), 7);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/*
 * With item_size at most UINT32_MAX and capacity at most 2^30 the product
 * cannot overflow a 64-bit size_t: -EOVERFLOW can only be reached where
 * size_t is 32 bits.
 */
static void init_reports_a_storage_size_that_overflows_size_t(void **state)
{
	(void)state;
	if (SIZE_MAX > UINT32_MAX) {
		/* the largest valid product fits */
		assert_true((size_t)UINT32_MAX <= SIZE_MAX / SB_CHANNEL_MAX_CAPACITY);
		skip();
	}
	_Alignas(16) unsigned char buf[16];
	int slots[2];
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	send_int(&ch, 7);
	assert_int_equal(sb_channel_init(&ch, buf, (size_t)1 << 16, (size_t)1 << 16), -EOVERFLOW);
	assert_still_holds_seven(&ch);
	assert_int_equal(recv_int(&ch), 7);
}

static void init_accepts_storage_aligned_to_the_largest_power_of_two_dividing_the_item_size(void **state)
{
	(void)state;
	_Alignas(16) unsigned char buf[256];
	sb_channel ch;
	/* 3-byte items: any address */
	assert_int_equal(sb_channel_init(&ch, buf + 1, 3, 2), 0);
	assert_int_equal(sb_channel_try_send(&ch, "abc"), 0);
	assert_int_equal(sb_channel_try_send(&ch, "def"), 0);
	assert_int_equal(sb_channel_try_send(&ch, "ghi"), -EAGAIN);
	char out[4] = "xxx";
	assert_int_equal(sb_channel_try_recv(&ch, out), 0);
	assert_memory_equal(out, "abc", 4);
	assert_int_equal(sb_channel_try_send(&ch, "ghi"), 0); /* wraps */
	assert_int_equal(sb_channel_try_recv(&ch, out), 0);
	assert_memory_equal(out, "def", 4);
	assert_int_equal(sb_channel_try_recv(&ch, out), 0);
	assert_memory_equal(out, "ghi", 4);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	/* 12-byte items: 4-aligned is enough */
	assert_int_equal(sb_channel_init(&ch, buf + 4, 12, 2), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	/* 24-byte items: 8 */
	assert_int_equal(sb_channel_init(&ch, buf + 8, 24, 2), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	/* 32- and 64-byte items: 16, not more */
	assert_int_equal(sb_channel_init(&ch, buf + 16, 32, 2), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	assert_int_equal(sb_channel_init(&ch, buf + 16, 64, 2), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* ---- try_send / try_recv ---- */

static void try_send_and_try_recv_keep_fifo_order_and_report_full_and_empty(void **state)
{
	(void)state;
	int slots[3];
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 3), 0);
	assert_int_equal(sb_channel_capacity(&ch), 3);
	assert_empty_and_open(&ch);
	int next_in = 0, next_out = 0;
	/* many rounds, so the ring wraps */
	for (int round = 0; round < 10; round++) {
		while (sb_channel_len(&ch) < 3) {
			size_t before = sb_channel_len(&ch);
			send_int(&ch, next_in++);
			assert_int_equal(sb_channel_len(&ch), before + 1);
		}
		int v = 1000;
		assert_int_equal(sb_channel_try_send(&ch, &v), -EAGAIN);
		assert_int_equal(sb_channel_len(&ch), 3);
		/* take one or two, so the head moves round */
		for (int k = 0; k < 1 + round % 2; k++)
			assert_int_equal(recv_int(&ch), next_out++);
	}
	while (sb_channel_len(&ch) > 0)
		assert_int_equal(recv_int(&ch), next_out++);
	assert_int_equal(next_in, next_out);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_capacity(&ch), 3);
	assert_false(sb_channel_is_closed(&ch));
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void a_null_item_or_a_bad_batch_size_is_refused_and_changes_nothing(void **state)
{
	(void)state;
	int slots[2], ev = UNTOUCHED, buf[4] = { UNTOUCHED, UNTOUCHED, UNTOUCHED, UNTOUCHED };
	int items[2] = { 8, 9 };
	sb_channel ch;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	send_int(&ch, 5);

	assert_int_equal(sb_channel_try_send(&ch, NULL), -EINVAL);
	assert_int_equal(sb_channel_try_recv(&ch, NULL), -EINVAL);
	assert_int_equal(sb_channel_force_send(&ch, NULL, &ev), -EINVAL);
	assert_int_equal(sb_channel_try_send_many(&ch, NULL, 1), -EINVAL);
	assert_int_equal(sb_channel_try_recv_many(&ch, NULL, 1), -EINVAL);
	assert_int_equal(sb_channel_try_recv_many(&ch, buf, 0), -EINVAL);
	assert_int_equal(sb_channel_try_send_many(&ch, items, (size_t)INT_MAX + 1), -EINVAL);
	assert_int_equal(sb_channel_try_recv_many(&ch, buf, (size_t)INT_MAX + 1), -EINVAL);
	assert_int_equal(sb_channel_try_recv_many(&ch, buf, SIZE_MAX), -EINVAL);
	assert_int_equal(sb_channel_send_blocking(&ch, NULL, 0), -EINVAL);
	assert_int_equal(sb_channel_recv_blocking(&ch, NULL, 0), -EINVAL);

	sb_channel_send s;
	sb_channel_send_init(&s, &ch, NULL);
	assert_int_equal(send_poll(&s, &c), -EINVAL);
	sb_channel_recv r;
	sb_channel_recv_init(&r, &ch, NULL);
	assert_int_equal(recv_poll(&r, &c), -EINVAL);
	sb_channel_recv_many_init(&r, &ch, buf, 0);
	assert_int_equal(recv_poll(&r, &c), -EINVAL);
	sb_channel_recv_many_init(&r, &ch, buf, (size_t)INT_MAX + 1);
	assert_int_equal(recv_poll(&r, &c), -EINVAL);
	sb_channel_recv_many_init(&r, &ch, buf, SIZE_MAX);
	assert_int_equal(recv_poll(&r, &c), -EINVAL);
	assert_int_equal(sb_channel_recv_count(&r), 0);
	assert_int_equal(atomic_load(&c.clones), 0);

	assert_int_equal(ev, UNTOUCHED);
	for (int i = 0; i < 4; i++)
		assert_int_equal(buf[i], UNTOUCHED);
	assert_int_equal(sb_channel_len(&ch), 1);
	assert_int_equal(recv_int(&ch), 5);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* ---- futures that complete at once; wakers ---- */

static void a_ready_future_completes_on_its_first_poll_without_cloning(void **state)
{
	(void)state;
	int slots[1], item = 3, got = UNTOUCHED;
	sb_channel ch;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	sb_channel_send s;
	sb_channel_send_init(&s, &ch, &item);
	assert_int_equal(send_poll(&s, &c), 0);
	assert_int_equal(sb_channel_len(&ch), 1);
	assert_int_equal(send_poll(&s, &c), 0); /* its result again; nothing sent twice */
	assert_int_equal(sb_channel_len(&ch), 1);
	sb_channel_recv r;
	sb_channel_recv_init(&r, &ch, &got);
	assert_int_equal(sb_channel_recv_count(&r), 0);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(got, 3);
	assert_int_equal(sb_channel_recv_count(&r), 1);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(sb_channel_recv_count(&r), 1);
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void repolling_with_the_same_waker_does_not_clone_again(void **state)
{
	(void)state;
	int slots[1], got, item = 1, blocked = 2;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	sb_channel_recv r;
	counting_waker cr;
	start_recv(&r, &ch, &got, &cr);
	for (int i = 0; i < 5; i++)
		assert_int_equal(recv_poll(&r, &cr), SB_PENDING);
	assert_int_equal(atomic_load(&cr.clones), 1);
	send_int(&ch, item);
	assert_int_equal(atomic_load(&cr.woken), 1);
	assert_int_equal(recv_poll(&r, &cr), 0);
	assert_int_equal(got, 1);
	assert_int_equal(atomic_load(&cr.clones), 1);
	assert_int_equal(atomic_load(&cr.live), 0);

	send_int(&ch, item);
	sb_channel_send s;
	counting_waker cs;
	start_send(&s, &ch, &blocked, &cs);
	for (int i = 0; i < 5; i++)
		assert_int_equal(send_poll(&s, &cs), SB_PENDING);
	assert_int_equal(atomic_load(&cs.clones), 1);
	assert_int_equal(recv_int(&ch), 1);
	assert_int_equal(atomic_load(&cs.woken), 1);
	assert_int_equal(send_poll(&s, &cs), 0);
	assert_int_equal(atomic_load(&cs.live), 0);
	assert_int_equal(recv_int(&ch), 2);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void a_different_waker_replaces_the_old_one_which_is_dropped(void **state)
{
	(void)state;
	int slots[1], got, blocked = 2;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	counting_waker first, second;
	sb_channel_recv r;
	start_recv(&r, &ch, &got, &first);
	counting_waker_init(&second);
	assert_int_equal(recv_poll(&r, &second), SB_PENDING);
	assert_int_equal(atomic_load(&first.drops), 1);
	assert_int_equal(atomic_load(&first.live), 0);
	send_int(&ch, 1);
	assert_int_equal(atomic_load(&first.wakes), 0);
	assert_int_equal(atomic_load(&second.woken), 1);
	assert_int_equal(recv_poll(&r, &second), 0);
	assert_int_equal(got, 1);
	assert_int_equal(atomic_load(&second.live), 0);

	send_int(&ch, 1);
	sb_channel_send s;
	start_send(&s, &ch, &blocked, &first);
	counting_waker_init(&second);
	assert_int_equal(send_poll(&s, &second), SB_PENDING);
	assert_int_equal(atomic_load(&first.drops), 1);
	assert_int_equal(recv_int(&ch), 1);
	assert_int_equal(atomic_load(&first.wakes), 0);
	assert_int_equal(atomic_load(&second.woken), 1);
	assert_int_equal(send_poll(&s, &second), 0);
	assert_int_equal(atomic_load(&first.live) + atomic_load(&second.live), 0);
	assert_int_equal(recv_int(&ch), 2);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* ---- rendezvous ---- */

static void a_rendezvous_try_send_fails_with_no_receiver_waiting(void **state)
{
	(void)state;
	sb_channel ch;
	int v = 4, items[2] = { 1, 2 };
	assert_int_equal(sb_channel_init(&ch, NULL, sizeof(int), 0), 0);
	assert_int_equal(sb_channel_try_send(&ch, &v), -EAGAIN);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 2), -EAGAIN);
	assert_int_equal(sb_channel_send_blocking(&ch, &v, 0), -ETIMEDOUT);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_recv_blocking(&ch, &v, 0), -ETIMEDOUT);
	assert_int_equal(v, 4);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

typedef struct big_item {
	uint64_t a, b, c;
	unsigned char tail[13];
} big_item;

static void fill_pattern(void *p, size_t n, unsigned seed)
{
	unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed + i * 7);
}

/* A rendezvous of 37-byte items: the bytes go straight across, intact, and
 * nothing past the item is written. */
static void a_waiting_receiver_gets_the_item_straight_from_the_sender(void **state)
{
	(void)state;
	enum { SIZE = offsetof(big_item, tail) + 13 };
	for (int cap = 0; cap <= 2; cap += 2) {
		_Alignas(16) unsigned char slots[2 * SIZE];
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, SIZE, (size_t)cap), 0);
		_Alignas(16) unsigned char item[SIZE], into[SIZE + 11], expect[SIZE];
		fill_pattern(item, SIZE, 3);
		memcpy(expect, item, SIZE);
		memset(into, 0xEE, sizeof into);
		counting_waker c;
		counting_waker_init(&c);
		sb_channel_recv r;
		sb_channel_recv_init(&r, &ch, into);
		assert_int_equal(recv_poll(&r, &c), SB_PENDING);
		assert_int_equal(sb_channel_try_send(&ch, item), 0);
		assert_int_equal(sb_channel_len(&ch), 0); /* not through the ring */
		memset(item, 0, SIZE);                    /* the sender's memory is its own again */
		assert_int_equal(atomic_load(&c.woken), 1);
		assert_int_equal(atomic_load(&c.live), 0);
		assert_int_equal(recv_poll(&r, &c), 0);
		assert_int_equal(sb_channel_recv_count(&r), 1);
		assert_memory_equal(into, expect, SIZE);
		for (size_t i = SIZE; i < sizeof into; i++)
			assert_int_equal(into[i], 0xEE);
		unsigned char other[SIZE];
		assert_int_equal(sb_channel_try_recv(&ch, other), -EAGAIN); /* not doubled */
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
}

static void a_waiting_rendezvous_sender_completes_when_try_recv_takes_its_item(void **state)
{
	(void)state;
	enum { SIZE = offsetof(big_item, tail) + 13 };
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, NULL, SIZE, 0), 0);
	_Alignas(16) unsigned char item[SIZE], into[SIZE + 5], other[SIZE];
	fill_pattern(item, SIZE, 11);
	fill_pattern(other, SIZE, 99);
	memset(into, 0xEE, sizeof into);
	counting_waker c;
	counting_waker_init(&c);
	sb_channel_send s;
	sb_channel_send_init(&s, &ch, item);
	assert_int_equal(send_poll(&s, &c), SB_PENDING);
	/* no receiver waits, a sender does: nobody barges past it */
	assert_int_equal(sb_channel_try_send(&ch, other), -EAGAIN);
	assert_int_equal(sb_channel_len(&ch), 0);
	assert_int_equal(sb_channel_try_recv(&ch, into), 0);
	assert_memory_equal(into, item, SIZE);
	for (size_t i = SIZE; i < sizeof into; i++)
		assert_int_equal(into[i], 0xEE);
	assert_int_equal(atomic_load(&c.woken), 1);
	assert_int_equal(send_poll(&s, &c), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_channel_try_recv(&ch, into), -EAGAIN); /* not doubled */
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* ---- waiting receivers ---- */

static void waiting_receivers_are_served_in_fifo_order(void **state)
{
	(void)state;
	enum { N = 6 };
	for (int cap = 0; cap <= 2; cap += 2) {
		int slots[2], got[N];
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		sb_channel_recv r[N];
		counting_waker c[N];
		for (int i = 0; i < N; i++)
			start_recv(&r[i], &ch, &got[i], &c[i]);
		for (int i = 0; i < N; i++) {
			send_int(&ch, 100 + i);
			assert_int_equal(sb_channel_len(&ch), 0);
			for (int j = 0; j < N; j++)
				assert_int_equal(atomic_load(&c[j].wakes), j <= i ? 1 : 0);
			if (i + 1 < N)
				assert_int_equal(recv_poll(&r[i + 1], &c[i + 1]), SB_PENDING);
		}
		for (int i = 0; i < N; i++) {
			assert_int_equal(recv_poll(&r[i], &c[i]), 0);
			assert_int_equal(got[i], 100 + i);
			assert_int_equal(atomic_load(&c[i].live), 0);
		}
		assert_empty_and_open(&ch);
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
}

static void a_send_to_a_channel_with_two_waiting_receivers_wakes_exactly_one(void **state)
{
	(void)state;
	int slots[2], g1, g2;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	sb_channel_recv r1, r2;
	counting_waker c1, c2;
	start_recv(&r1, &ch, &g1, &c1);
	start_recv(&r2, &ch, &g2, &c2);
	send_int(&ch, 1);
	assert_int_equal(atomic_load(&c1.wakes) + atomic_load(&c2.wakes), 1);
	assert_int_equal(atomic_load(&c1.woken), 1);
	assert_int_equal(recv_poll(&r2, &c2), SB_PENDING);
	assert_int_equal(g2, UNTOUCHED);
	assert_int_equal(recv_poll(&r1, &c1), 0);
	assert_int_equal(g1, 1);
	/* while a receiver waits, try_recv finds the channel empty */
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_recv_cancel(&r2), -ECANCELED);
	assert_int_equal(atomic_load(&c1.live) + atomic_load(&c2.live), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* async-std #452: the second send found the first receiver still queued
 * (woken, not yet re-polled) and the second receiver was never woken. */
static void two_receivers_and_two_sends_wake_both(void **state)
{
	(void)state;
	for (int cap = 0; cap <= 2; cap += 2) {
		int slots[2], g1, g2;
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		sb_channel_recv r1, r2;
		counting_waker c1, c2;
		start_recv(&r1, &ch, &g1, &c1);
		start_recv(&r2, &ch, &g2, &c2);
		send_int(&ch, 1);
		send_int(&ch, 2); /* neither receiver has re-polled */
		assert_int_equal(atomic_load(&c1.woken), 1);
		assert_int_equal(atomic_load(&c2.woken), 1);
		assert_int_equal(sb_channel_len(&ch), 0);
		assert_int_equal(recv_poll(&r2, &c2), 0);
		assert_int_equal(recv_poll(&r1, &c1), 0);
		assert_int_equal(g1, 1);
		assert_int_equal(g2, 2);
		assert_int_equal(atomic_load(&c1.live) + atomic_load(&c2.live), 0);
		assert_empty_and_open(&ch);
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
}

/* ---- waiting senders ---- */

static void waiting_senders_are_served_in_fifo_order_and_move_into_the_ring_in_order(void **state)
{
	(void)state;
	enum { N = 4 };
	int slots[2], items[N];
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	send_int(&ch, 0);
	send_int(&ch, 1);
	sb_channel_send s[N];
	counting_waker c[N];
	for (int i = 0; i < N; i++) {
		items[i] = 2 + i;
		start_send(&s[i], &ch, &items[i], &c[i]);
	}
	assert_int_equal(sb_channel_len(&ch), 2); /* waiting items are not in the ring */
	int v = 99;
	assert_int_equal(sb_channel_try_send(&ch, &v), -EAGAIN); /* no barging */
	for (int k = 0; k < N + 2; k++) {
		assert_int_equal(recv_int(&ch), k);
		/* the oldest waiting sender's item moved into the freed slot */
		for (int j = 0; j < N; j++)
			assert_int_equal(atomic_load(&c[j].wakes), j <= k ? 1 : 0);
		if (k < N) {
			assert_int_equal(sb_channel_len(&ch), 2);
			assert_int_equal(sb_channel_try_send(&ch, &v), -EAGAIN);
			assert_int_equal(send_poll(&s[k], &c[k]), 0);
			if (k + 1 < N)
				assert_int_equal(send_poll(&s[k + 1], &c[k + 1]), SB_PENDING);
		}
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void waiting_rendezvous_senders_are_served_in_fifo_order(void **state)
{
	(void)state;
	enum { N = 4 };
	int items[N];
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, NULL, sizeof(int), 0), 0);
	sb_channel_send s[N];
	counting_waker c[N];
	for (int i = 0; i < N; i++) {
		items[i] = 10 + i;
		start_send(&s[i], &ch, &items[i], &c[i]);
	}
	for (int k = 0; k < N; k++) {
		assert_int_equal(recv_int(&ch), 10 + k);
		for (int j = 0; j < N; j++)
			assert_int_equal(atomic_load(&c[j].wakes), j <= k ? 1 : 0);
		assert_int_equal(send_poll(&s[k], &c[k]), 0);
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* ---- close ---- */

static void close_fails_later_sends_and_delivers_earlier_items_in_order_then_epipe(void **state)
{
	(void)state;
	int slots[4], v = 50, ev = UNTOUCHED, buf[4];
	sb_channel ch;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 4), 0);
	send_int(&ch, 1);
	send_int(&ch, 2);
	send_int(&ch, 3);
	assert_false(sb_channel_is_closed(&ch));
	sb_channel_close(&ch);
	assert_true(sb_channel_is_closed(&ch));
	assert_int_equal(sb_channel_len(&ch), 3);
	assert_int_equal(sb_channel_try_send(&ch, &v), -EPIPE);
	assert_int_equal(sb_channel_try_send_many(&ch, &v, 1), -EPIPE);
	assert_int_equal(sb_channel_force_send(&ch, &v, &ev), -EPIPE);
	assert_int_equal(ev, UNTOUCHED);
	assert_int_equal(sb_channel_send_blocking(&ch, &v, SB_TIMEOUT_INFINITE), -EPIPE);
	sb_channel_send s;
	sb_channel_send_init(&s, &ch, &v);
	assert_int_equal(send_poll(&s, &c), -EPIPE);
	assert_int_equal(sb_channel_send_cancel(&s), -EPIPE);
	assert_int_equal(sb_channel_len(&ch), 3);

	assert_int_equal(recv_int(&ch), 1);
	int got = UNTOUCHED;
	sb_channel_recv r;
	sb_channel_recv_init(&r, &ch, &got);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(got, 2);
	assert_int_equal(sb_channel_recv_blocking(&ch, &got, SB_TIMEOUT_INFINITE), 0);
	assert_int_equal(got, 3);

	assert_drained_and_closed(&ch);
	assert_int_equal(sb_channel_try_recv_many(&ch, buf, 4), -EPIPE);
	sb_channel_recv_init(&r, &ch, &got);
	got = UNTOUCHED;
	assert_int_equal(recv_poll(&r, &c), -EPIPE);
	assert_int_equal(sb_channel_recv_count(&r), 0);
	assert_int_equal(sb_channel_recv_cancel(&r), -EPIPE);
	assert_int_equal(sb_channel_recv_blocking(&ch, &got, SB_TIMEOUT_INFINITE), -EPIPE);
	assert_int_equal(sb_channel_recv_blocking(&ch, &got, 0), -EPIPE);
	assert_int_equal(got, UNTOUCHED);
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void try_recv_tells_empty_from_closed_and_drained(void **state)
{
	(void)state;
	for (int cap = 0; cap <= 1; cap++) {
		int slots[1];
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		assert_empty_and_open(&ch);
		assert_false(sb_channel_is_closed(&ch));
		sb_channel_close(&ch);
		assert_drained_and_closed(&ch);
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
}

static void close_completes_waiting_senders_with_epipe_without_taking_their_items(void **state)
{
	(void)state;
	enum { N = 3 };
	for (int cap = 0; cap <= 1; cap++) {
		int slots[1], items[N];
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		if (cap)
			send_int(&ch, 1);
		sb_channel_send s[N];
		counting_waker c[N];
		for (int i = 0; i < N; i++) {
			items[i] = 20 + i;
			start_send(&s[i], &ch, &items[i], &c[i]);
		}
		sb_channel_close(&ch);
		for (int i = 0; i < N; i++) {
			assert_int_equal(atomic_load(&c[i].woken), 1);
			assert_int_equal(atomic_load(&c[i].live), 0);
			assert_int_equal(send_poll(&s[i], &c[i]), -EPIPE);
			assert_int_equal(sb_channel_send_cancel(&s[i]), -EPIPE);
			assert_int_equal(send_poll(&s[i], &c[i]), -EPIPE);
			assert_int_equal(items[i], 20 + i);
		}
		if (cap)
			assert_int_equal(recv_int(&ch), 1);
		assert_drained_and_closed(&ch); /* 20, 21, 22 were never taken */
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
}

static void close_completes_waiting_receivers_with_epipe(void **state)
{
	(void)state;
	enum { N = 3 };
	for (int cap = 0; cap <= 2; cap += 2) {
		int slots[2], got[N];
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		sb_channel_recv r[N];
		counting_waker c[N];
		for (int i = 0; i < N; i++)
			start_recv(&r[i], &ch, &got[i], &c[i]);
		sb_channel_close(&ch);
		for (int i = 0; i < N; i++) {
			assert_int_equal(atomic_load(&c[i].woken), 1);
			assert_int_equal(atomic_load(&c[i].live), 0);
			assert_int_equal(recv_poll(&r[i], &c[i]), -EPIPE);
			assert_int_equal(sb_channel_recv_count(&r[i]), 0);
			assert_int_equal(got[i], UNTOUCHED);
			assert_int_equal(sb_channel_recv_cancel(&r[i]), -EPIPE);
		}
		assert_drained_and_closed(&ch);
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
}

/* A receive handed its item, and a send whose item was taken, before the
 * close: both completed, and close does not undo them. */
static void close_keeps_the_handoffs_that_completed_before_it(void **state)
{
	(void)state;
	int slots[1], g1, g2, item = 5;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	sb_channel_recv r1, r2;
	counting_waker c1, c2;
	start_recv(&r1, &ch, &g1, &c1);
	start_recv(&r2, &ch, &g2, &c2);
	send_int(&ch, 4); /* to r1, not yet re-polled */
	sb_channel_close(&ch);
	assert_int_equal(recv_poll(&r1, &c1), 0);
	assert_int_equal(g1, 4);
	assert_int_equal(recv_poll(&r2, &c2), -EPIPE);
	assert_int_equal(g2, UNTOUCHED);
	assert_int_equal(atomic_load(&c1.live) + atomic_load(&c2.live), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);

	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	send_int(&ch, 1);
	sb_channel_send s;
	counting_waker cs;
	start_send(&s, &ch, &item, &cs);
	assert_int_equal(recv_int(&ch), 1); /* 5 moves into the ring */
	sb_channel_close(&ch);
	assert_int_equal(send_poll(&s, &cs), 0);
	assert_int_equal(recv_int(&ch), 5);
	assert_drained_and_closed(&ch);
	assert_int_equal(atomic_load(&cs.live), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void close_is_idempotent(void **state)
{
	(void)state;
	int slots[2], got;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	sb_channel_recv r;
	counting_waker c;
	start_recv(&r, &ch, &got, &c);
	sb_channel_close(&ch);
	sb_channel_close(&ch);
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(recv_poll(&r, &c), -EPIPE);
	assert_true(sb_channel_is_closed(&ch));
	assert_int_equal(sb_channel_destroy(&ch), 0);

	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	send_int(&ch, 1);
	send_int(&ch, 2);
	sb_channel_close(&ch);
	assert_int_equal(recv_int(&ch), 1);
	sb_channel_close(&ch); /* the rest stays receivable */
	assert_true(sb_channel_is_closed(&ch));
	assert_int_equal(sb_channel_len(&ch), 1);
	assert_int_equal(recv_int(&ch), 2);
	assert_drained_and_closed(&ch);
	sb_channel_close(&ch);
	assert_drained_and_closed(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void close_with_more_waiters_than_a_wake_batch_completes_them_all(void **state)
{
	(void)state;
	enum { N = 70 };
	static sb_channel_recv r[N];
	static sb_channel_send s[N];
	static int got[N], items[N];
	int slots[1];
	counting_waker c;
	sb_channel ch;

	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	counting_waker_init(&c);
	for (int i = 0; i < N; i++) {
		got[i] = UNTOUCHED;
		sb_channel_recv_init(&r[i], &ch, &got[i]);
		assert_int_equal(recv_poll(&r[i], &c), SB_PENDING);
	}
	assert_int_equal(atomic_load(&c.live), N);
	sb_channel_close(&ch);
	assert_int_equal(atomic_load(&c.woken), N);
	assert_int_equal(atomic_load(&c.live), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(recv_poll(&r[i], &c), -EPIPE);
		assert_int_equal(got[i], UNTOUCHED);
	}
	assert_int_equal(sb_channel_destroy(&ch), 0);

	for (int cap = 0; cap <= 1; cap++) {
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		if (cap)
			send_int(&ch, -5);
		counting_waker_init(&c);
		for (int i = 0; i < N; i++) {
			items[i] = i;
			sb_channel_send_init(&s[i], &ch, &items[i]);
			assert_int_equal(send_poll(&s[i], &c), SB_PENDING);
		}
		sb_channel_close(&ch);
		assert_int_equal(atomic_load(&c.woken), N);
		assert_int_equal(atomic_load(&c.live), 0);
		for (int i = 0; i < N; i++)
			assert_int_equal(send_poll(&s[i], &c), -EPIPE);
		if (cap)
			assert_int_equal(recv_int(&ch), -5);
		assert_drained_and_closed(&ch);
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
}

static void send_after_close(void *ch)
{
	int v = 1;
	CHECK(sb_channel_try_send(ch, &v) == -EPIPE);
	CHECK(sb_channel_is_closed(ch));
}

/* The wakes of close run after its lock is released: a waker that sends
 * to the channel from its wake must not deadlock. */
static void close_runs_the_wakes_after_releasing_the_lock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant wake from close");
	int slots[2], got;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	sb_channel_recv r;
	counting_waker c;
	start_recv(&r, &ch, &got, &c);
	c.on_wake = send_after_close;
	c.hook_arg = &ch;
	sb_channel_close(&ch);
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(recv_poll(&r, &c), -EPIPE);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	sb_watchdog_stop(&wd);
}

static void send_from_the_clone(void *ch)
{
	int v = 77;
	CHECK(sb_channel_try_send(ch, &v) == 0);
}

/* A receive clones its waker before it takes the lock: a clone that sends
 * does not deadlock, and the receive finds that item. */
static void a_receive_whose_waker_clone_sends_gets_that_item_without_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on a receive");
	int slots[2], got = UNTOUCHED;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	counting_waker c;
	counting_waker_init(&c);
	c.on_clone = send_from_the_clone;
	c.hook_arg = &ch;
	sb_channel_recv r;
	sb_channel_recv_init(&r, &ch, &got);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(got, 77);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	sb_watchdog_stop(&wd);
}

/* ---- batches ---- */

static void try_send_many_sends_as_many_as_fit_in_order(void **state)
{
	(void)state;
	int slots[4], items[7], out[8];
	for (int i = 0; i < 7; i++)
		items[i] = i;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 4), 0);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 0), 0);
	assert_int_equal(sb_channel_len(&ch), 0);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 1), 1);
	assert_int_equal(recv_int(&ch), 0);
	/* n = capacity */
	assert_int_equal(sb_channel_try_send_many(&ch, items, 4), 4);
	assert_int_equal(sb_channel_len(&ch), 4);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 1), -EAGAIN);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 0), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(recv_int(&ch), i);
	/* more than capacity, across the wrap */
	send_int(&ch, -1);
	assert_int_equal(recv_int(&ch), -1);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 7), 4);
	assert_int_equal(sb_channel_len(&ch), 4);
	memset(out, 0xff, sizeof out);
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 8), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(out[i], i);
	assert_int_equal(out[4], UNTOUCHED);
	/* partly full: what fits */
	send_int(&ch, 100);
	send_int(&ch, 101);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 7), 2);
	assert_int_equal(recv_int(&ch), 100);
	assert_int_equal(recv_int(&ch), 101);
	assert_int_equal(recv_int(&ch), 0);
	assert_int_equal(recv_int(&ch), 1);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void try_recv_many_takes_up_to_n_of_the_oldest_items_in_order(void **state)
{
	(void)state;
	int slots[4], out[8];
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 4), 0);
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 4), -EAGAIN);
	for (int i = 0; i < 4; i++)
		send_int(&ch, i);
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 0), -EINVAL);
	assert_int_equal(sb_channel_len(&ch), 4);
	memset(out, 0xff, sizeof out);
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 1), 1);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], UNTOUCHED);
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 2), 2);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 2);
	send_int(&ch, 4);
	send_int(&ch, 5);
	send_int(&ch, 6); /* wrapped: 3 4 5 6 */
	memset(out, 0xff, sizeof out);
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 4), 4); /* n = capacity */
	for (int i = 0; i < 4; i++)
		assert_int_equal(out[i], 3 + i);
	assert_int_equal(out[4], UNTOUCHED);
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 8), -EAGAIN);
	send_int(&ch, 7);
	memset(out, 0xff, sizeof out);
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 8), 1); /* more than there are */
	assert_int_equal(out[0], 7);
	assert_int_equal(out[1], UNTOUCHED);
	sb_channel_close(&ch);
	assert_int_equal(sb_channel_try_recv_many(&ch, out, 8), -EPIPE);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void try_send_many_serves_waiting_receivers_first_then_the_ring(void **state)
{
	(void)state;
	int slots[2], g0, g1, items[5] = { 10, 11, 12, 13, 14 };
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	sb_channel_recv r0, r1;
	counting_waker c0, c1;
	start_recv(&r0, &ch, &g0, &c0);
	start_recv(&r1, &ch, &g1, &c1);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 5), 4);
	assert_int_equal(atomic_load(&c0.woken), 1);
	assert_int_equal(atomic_load(&c1.woken), 1);
	assert_int_equal(sb_channel_len(&ch), 2);
	assert_int_equal(recv_poll(&r0, &c0), 0);
	assert_int_equal(recv_poll(&r1, &c1), 0);
	assert_int_equal(g0, 10);
	assert_int_equal(g1, 11);
	assert_int_equal(recv_int(&ch), 12);
	assert_int_equal(recv_int(&ch), 13);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);

	/* rendezvous: only as many as there are receivers */
	assert_int_equal(sb_channel_init(&ch, NULL, sizeof(int), 0), 0);
	start_recv(&r0, &ch, &g0, &c0);
	start_recv(&r1, &ch, &g1, &c1);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 5), 2);
	assert_int_equal(recv_poll(&r0, &c0), 0);
	assert_int_equal(recv_poll(&r1, &c1), 0);
	assert_int_equal(g0, 10);
	assert_int_equal(g1, 11);
	assert_int_equal(sb_channel_try_send_many(&ch, items, 5), -EAGAIN);
	assert_int_equal(atomic_load(&c0.live) + atomic_load(&c1.live), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void a_waiting_receive_many_completes_with_one_to_n_items(void **state)
{
	(void)state;
	int slots[2], items[6] = { 0, 1, 2, 3, 4, 5 }, out[4];
	sb_channel ch;
	counting_waker c;
	sb_channel_recv r;

	/* one item sent: it completes with that one */
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	counting_waker_init(&c);
	memset(out, 0xff, sizeof out);
	sb_channel_recv_many_init(&r, &ch, out, 3);
	assert_int_equal(recv_poll(&r, &c), SB_PENDING);
	assert_int_equal(sb_channel_recv_count(&r), 0); /* 0 before */
	send_int(&ch, 7);
	assert_int_equal(atomic_load(&c.woken), 1);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(sb_channel_recv_count(&r), 1);
	assert_int_equal(out[0], 7);
	assert_int_equal(out[1], UNTOUCHED);
	assert_empty_and_open(&ch);

	/* a batch sent to it: 1..3 of them, the rest in the ring, all in order */
	counting_waker_init(&c);
	memset(out, 0xff, sizeof out);
	sb_channel_recv_many_init(&r, &ch, out, 3);
	assert_int_equal(recv_poll(&r, &c), SB_PENDING);
	int sent = sb_channel_try_send_many(&ch, items, 6);
	assert_int_equal(atomic_load(&c.woken), 1);
	assert_int_equal(recv_poll(&r, &c), 0);
	int k = (int)sb_channel_recv_count(&r);
	assert_in_range(k, 1, 3);
	for (int i = 0; i < k; i++)
		assert_int_equal(out[i], i);
	assert_int_equal(out[k], UNTOUCHED);
	assert_int_equal(sent, k + 2); /* and the ring filled */
	for (int i = k; i < sent; i++)
		assert_int_equal(recv_int(&ch), i);
	assert_empty_and_open(&ch);

	/* two single sends before it re-polls: nothing lost, nothing reordered */
	counting_waker_init(&c);
	memset(out, 0xff, sizeof out);
	sb_channel_recv_many_init(&r, &ch, out, 3);
	assert_int_equal(recv_poll(&r, &c), SB_PENDING);
	send_int(&ch, 40);
	send_int(&ch, 41);
	assert_int_equal(recv_poll(&r, &c), 0);
	k = (int)sb_channel_recv_count(&r);
	assert_in_range(k, 1, 2);
	assert_int_equal(out[0], 40);
	if (k == 2)
		assert_int_equal(out[1], 41);
	else
		assert_int_equal(recv_int(&ch), 41);
	assert_empty_and_open(&ch);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void try_recv_many_takes_waiting_senders_items_in_order(void **state)
{
	(void)state;
	enum { N = 3 };
	for (int cap = 0; cap <= 2; cap += 2) {
		int slots[2], items[N], out[8], next = 0;
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		for (int i = 0; i < cap; i++)
			send_int(&ch, i);
		sb_channel_send s[N];
		counting_waker c[N];
		for (int i = 0; i < N; i++) {
			items[i] = cap + i;
			start_send(&s[i], &ch, &items[i], &c[i]);
		}
		/* batches of two, in order, until every item came out once */
		while (next < cap + N) {
			memset(out, 0xff, sizeof out);
			int k = sb_channel_try_recv_many(&ch, out, 2);
			assert_in_range(k, 1, 2);
			for (int i = 0; i < k; i++)
				assert_int_equal(out[i], next++);
			assert_int_equal(out[k], UNTOUCHED);
		}
		assert_empty_and_open(&ch);
		for (int i = 0; i < N; i++) {
			assert_int_equal(atomic_load(&c[i].woken), 1);
			assert_int_equal(send_poll(&s[i], &c[i]), 0);
			assert_int_equal(atomic_load(&c[i].live), 0);
		}
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
}

/* ---- force_send ---- */

static void force_send_evicts_nothing_while_there_is_room(void **state)
{
	(void)state;
	int slots[2], ev = UNTOUCHED, v;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	v = 1;
	assert_int_equal(sb_channel_force_send(&ch, &v, &ev), 0);
	v = 2;
	assert_int_equal(sb_channel_force_send(&ch, &v, &ev), 0);
	assert_int_equal(ev, UNTOUCHED);
	assert_int_equal(sb_channel_len(&ch), 2);
	assert_int_equal(recv_int(&ch), 1);
	assert_int_equal(recv_int(&ch), 2);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void force_send_on_a_full_channel_evicts_the_oldest_and_appends(void **state)
{
	(void)state;
	int slots[3], ev = UNTOUCHED, v;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 3), 0);
	for (int i = 1; i <= 3; i++)
		send_int(&ch, i);
	for (int i = 4; i <= 8; i++) { /* round the ring and more */
		v = i;
		assert_int_equal(sb_channel_force_send(&ch, &v, &ev), 1);
		assert_int_equal(ev, i - 3);
		assert_int_equal(sb_channel_len(&ch), 3);
	}
	assert_int_equal(recv_int(&ch), 6);
	assert_int_equal(recv_int(&ch), 7);
	assert_int_equal(recv_int(&ch), 8);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void force_send_on_a_rendezvous_needs_a_waiting_receiver_and_hands_it_over(void **state)
{
	(void)state;
	int ev = UNTOUCHED, v = 9, got;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, NULL, sizeof(int), 0), 0);
	assert_int_equal(sb_channel_force_send(&ch, &v, &ev), -EAGAIN);
	assert_int_equal(ev, UNTOUCHED);
	sb_channel_recv r;
	counting_waker c;
	start_recv(&r, &ch, &got, &c);
	assert_int_equal(sb_channel_force_send(&ch, &v, &ev), 0);
	assert_int_equal(ev, UNTOUCHED);
	assert_int_equal(atomic_load(&c.woken), 1);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(got, 9);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);

	/* on a buffered channel too, a waiting receiver gets it directly */
	int slots[2];
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	start_recv(&r, &ch, &got, &c);
	assert_int_equal(sb_channel_force_send(&ch, &v, &ev), 0);
	assert_int_equal(sb_channel_len(&ch), 0);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(got, 9);
	assert_int_equal(ev, UNTOUCHED);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void force_send_leaves_waiting_senders_in_their_place(void **state)
{
	(void)state;
	int slots[2], ev = UNTOUCHED, v = 4, waiting = 3;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	send_int(&ch, 1);
	send_int(&ch, 2);
	sb_channel_send s;
	counting_waker c;
	start_send(&s, &ch, &waiting, &c);
	assert_int_equal(sb_channel_force_send(&ch, &v, &ev), 1);
	assert_int_equal(ev, 1);
	assert_int_equal(sb_channel_len(&ch), 2); /* still full */
	assert_int_equal(atomic_load(&c.wakes), 0);
	assert_int_equal(send_poll(&s, &c), SB_PENDING);
	assert_int_equal(recv_int(&ch), 2);
	assert_int_equal(atomic_load(&c.woken), 1); /* 3 moved in behind 4 */
	assert_int_equal(send_poll(&s, &c), 0);
	assert_int_equal(recv_int(&ch), 4);
	assert_int_equal(recv_int(&ch), 3);
	assert_empty_and_open(&ch);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* ---- cancellation ---- */

static void cancel_of_a_pending_send_returns_ecanceled_and_its_item_was_not_taken(void **state)
{
	(void)state;
	for (int cap = 0; cap <= 1; cap++) {
		int slots[1], a = 2, b = 3;
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		if (cap)
			send_int(&ch, 1);
		sb_channel_send s1, s2;
		counting_waker c1, c2;
		start_send(&s1, &ch, &a, &c1);
		start_send(&s2, &ch, &b, &c2);
		assert_int_equal(sb_channel_send_cancel(&s1), -ECANCELED);
		assert_int_equal(atomic_load(&c1.drops), 1);
		assert_int_equal(atomic_load(&c1.live), 0);
		assert_int_equal(send_poll(&s1, &c1), -ECANCELED);
		assert_int_equal(sb_channel_send_cancel(&s1), -ECANCELED);
		assert_int_equal(atomic_load(&c1.clones), 1);
		if (cap)
			assert_int_equal(recv_int(&ch), 1);
		/* s2 is next in line, not the cancelled s1 */
		if (!cap)
			assert_int_equal(recv_int(&ch), 3);
		assert_int_equal(atomic_load(&c2.woken), 1);
		assert_int_equal(send_poll(&s2, &c2), 0);
		if (cap)
			assert_int_equal(recv_int(&ch), 3);
		assert_empty_and_open(&ch); /* 2 never arrives */
		assert_int_equal(atomic_load(&c1.wakes), 0);
		assert_int_equal(atomic_load(&c2.live), 0);
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
}

static void cancel_of_a_send_whose_item_was_taken_returns_0_and_nothing_is_doubled(void **state)
{
	(void)state;
	for (int cap = 0; cap <= 1; cap++) {
		int slots[1], item = 5;
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		if (cap)
			send_int(&ch, 1);
		sb_channel_send s;
		counting_waker c;
		start_send(&s, &ch, &item, &c);
		if (cap)
			assert_int_equal(recv_int(&ch), 1); /* 5 moves into the ring */
		else
			assert_int_equal(recv_int(&ch), 5); /* 5 taken straight */
		assert_int_equal(atomic_load(&c.woken), 1);
		assert_int_equal(sb_channel_send_cancel(&s), 0); /* never re-polled */
		assert_int_equal(send_poll(&s, &c), 0);
		assert_int_equal(sb_channel_send_cancel(&s), 0);
		if (cap)
			assert_int_equal(recv_int(&ch), 5);
		assert_empty_and_open(&ch); /* once, not twice */
		assert_int_equal(atomic_load(&c.live), 0);
		assert_int_equal(atomic_load(&c.drops), 0);
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
}

/* A receive handed its item, then cancelled before it re-polled: the item is
 * in its buffer, and is the caller's; it is neither lost nor redelivered. */
static void cancel_mid_handoff_loses_nothing(void **state)
{
	(void)state;
	for (int cap = 0; cap <= 2; cap += 2) {
		int slots[2], g1, g2;
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		sb_channel_recv r1, r2;
		counting_waker c1, c2;
		start_recv(&r1, &ch, &g1, &c1);
		start_recv(&r2, &ch, &g2, &c2);
		send_int(&ch, 42);
		assert_int_equal(sb_channel_recv_cancel(&r1), 0);
		assert_int_equal(g1, 42);
		assert_int_equal(sb_channel_recv_count(&r1), 1);
		assert_int_equal(recv_poll(&r1, &c1), 0);
		assert_int_equal(sb_channel_recv_cancel(&r1), 0);
		assert_int_equal(sb_channel_recv_count(&r1), 1);
		assert_int_equal(g1, 42);
		/* not passed on to r2, nor back into the ring */
		assert_int_equal(atomic_load(&c2.wakes), 0);
		assert_int_equal(recv_poll(&r2, &c2), SB_PENDING);
		assert_int_equal(g2, UNTOUCHED);
		assert_int_equal(sb_channel_len(&ch), 0);
		/* and r2 is still in line for the next */
		send_int(&ch, 43);
		assert_int_equal(recv_poll(&r2, &c2), 0);
		assert_int_equal(g2, 43);
		assert_empty_and_open(&ch);
		assert_int_equal(atomic_load(&c1.live) + atomic_load(&c2.live), 0);
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}

	/* a receive-many handed a batch: what it was handed is the caller's */
	int slots[2], out[4], items[4] = { 0, 1, 2, 3 };
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	counting_waker c;
	counting_waker_init(&c);
	memset(out, 0xff, sizeof out);
	sb_channel_recv r;
	sb_channel_recv_many_init(&r, &ch, out, 3);
	assert_int_equal(recv_poll(&r, &c), SB_PENDING);
	int sent = sb_channel_try_send_many(&ch, items, 4);
	assert_int_equal(sb_channel_recv_cancel(&r), 0);
	int k = (int)sb_channel_recv_count(&r);
	assert_in_range(k, 1, 3);
	for (int i = 0; i < k; i++)
		assert_int_equal(out[i], i);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(sb_channel_recv_count(&r), (size_t)k);
	for (int i = k; i < sent; i++)
		assert_int_equal(recv_int(&ch), i);
	assert_empty_and_open(&ch);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void cancel_of_a_pending_receive_returns_ecanceled_and_the_next_receiver_is_served(void **state)
{
	(void)state;
	int slots[1], g1, g2;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	sb_channel_recv r1, r2;
	counting_waker c1, c2;
	start_recv(&r1, &ch, &g1, &c1);
	start_recv(&r2, &ch, &g2, &c2);
	assert_int_equal(sb_channel_recv_cancel(&r1), -ECANCELED);
	assert_int_equal(atomic_load(&c1.drops), 1);
	assert_int_equal(atomic_load(&c1.live), 0);
	assert_int_equal(sb_channel_recv_count(&r1), 0);
	assert_int_equal(recv_poll(&r1, &c1), -ECANCELED);
	assert_int_equal(sb_channel_recv_cancel(&r1), -ECANCELED);
	send_int(&ch, 8);
	assert_int_equal(g1, UNTOUCHED);
	assert_int_equal(atomic_load(&c1.wakes), 0);
	assert_int_equal(atomic_load(&c2.woken), 1);
	assert_int_equal(recv_poll(&r2, &c2), 0);
	assert_int_equal(g2, 8);
	assert_int_equal(atomic_load(&c2.live), 0);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void cancel_of_an_idle_future_returns_ecanceled_and_changes_nothing(void **state)
{
	(void)state;
	int slots[1], item = 6, got = UNTOUCHED;
	sb_channel ch;
	counting_waker c;
	counting_waker_init(&c);
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	sb_channel_send s;
	sb_channel_send_init(&s, &ch, &item);
	assert_int_equal(sb_channel_send_cancel(&s), -ECANCELED);
	assert_int_equal(send_poll(&s, &c), -ECANCELED);
	assert_int_equal(sb_channel_len(&ch), 0); /* nothing sent */
	send_int(&ch, 1);
	sb_channel_recv r;
	sb_channel_recv_init(&r, &ch, &got);
	assert_int_equal(sb_channel_recv_cancel(&r), -ECANCELED);
	assert_int_equal(recv_poll(&r, &c), -ECANCELED);
	assert_int_equal(sb_channel_recv_count(&r), 0);
	assert_int_equal(got, UNTOUCHED);
	assert_int_equal(sb_channel_len(&ch), 1); /* nothing received */
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(recv_int(&ch), 1);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void cancel_of_a_completed_future_returns_its_result(void **state)
{
	(void)state;
	int slots[1], item = 6, got = UNTOUCHED;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	sb_channel_send s;
	sb_channel_send_init(&s, &ch, &item);
	assert_int_equal(send_poll_noop(&s), 0);
	assert_int_equal(sb_channel_send_cancel(&s), 0);
	assert_int_equal(send_poll_noop(&s), 0);
	sb_channel_recv r;
	sb_channel_recv_init(&r, &ch, &got);
	assert_int_equal(recv_poll_noop(&r), 0);
	assert_int_equal(sb_channel_recv_cancel(&r), 0);
	assert_int_equal(sb_channel_recv_count(&r), 1);
	assert_int_equal(got, 6);
	assert_int_equal(recv_poll_noop(&r), 0);
	assert_empty_and_open(&ch); /* neither cancel undid anything */
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* ---- destroy ---- */

static void destroy_returns_ebusy_while_futures_wait_and_0_after(void **state)
{
	(void)state;
	int slots[1], got, item = 2;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	sb_channel_recv r;
	counting_waker cr;
	start_recv(&r, &ch, &got, &cr);
	assert_int_equal(sb_channel_destroy(&ch), -EBUSY);
	send_int(&ch, 1); /* still usable */
	assert_int_equal(recv_poll(&r, &cr), 0);
	assert_int_equal(got, 1);
	assert_int_equal(sb_channel_destroy(&ch), 0);

	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	send_int(&ch, 1);
	sb_channel_send s;
	counting_waker cs;
	start_send(&s, &ch, &item, &cs);
	assert_int_equal(sb_channel_destroy(&ch), -EBUSY);
	assert_int_equal(sb_channel_len(&ch), 1);
	assert_int_equal(sb_channel_send_cancel(&s), -ECANCELED);
	/* an item left in the ring is simply abandoned */
	assert_int_equal(sb_channel_destroy(&ch), 0);

	assert_int_equal(sb_channel_init(&ch, NULL, sizeof(int), 0), 0);
	start_send(&s, &ch, &item, &cs);
	assert_int_equal(sb_channel_destroy(&ch), -EBUSY);
	sb_channel_close(&ch);
	assert_int_equal(send_poll(&s, &cs), -EPIPE);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	assert_int_equal(atomic_load(&cr.live) + atomic_load(&cs.live), 0);
}

/* ---- the ops tables ---- */

static void the_ops_tables_drive_the_futures(void **state)
{
	(void)state;
	int slots[1], got = UNTOUCHED, item = 12, blocked = 13;
	sb_channel ch;
	counting_waker c;
	counting_waker_init(&c);
	sb_waker w = counting_waker_ref(&c);
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);

	sb_channel_recv r;
	sb_channel_recv_init(&r, &ch, &got);
	assert_int_equal(sb_channel_recv_ops.poll(&r, &w), SB_PENDING);
	sb_channel_send s;
	sb_channel_send_init(&s, &ch, &item);
	assert_int_equal(sb_channel_send_ops.poll(&s, &w), 0);
	assert_int_equal(atomic_load(&c.woken), 1);
	assert_int_equal(sb_channel_recv_ops.poll(&r, &w), 0);
	assert_int_equal(got, 12);
	assert_int_equal(sb_channel_recv_count(&r), 1);

	/* cancel through the table: the typed poll sees it */
	sb_channel_recv_init(&r, &ch, &got);
	assert_int_equal(sb_channel_recv_ops.poll(&r, &w), SB_PENDING);
	sb_channel_recv_ops.cancel(&r);
	assert_int_equal(sb_channel_recv_poll(&r, &w), -ECANCELED);
	send_int(&ch, 1);
	sb_channel_send_init(&s, &ch, &blocked);
	assert_int_equal(sb_channel_send_ops.poll(&s, &w), SB_PENDING);
	sb_channel_send_ops.cancel(&s);
	assert_int_equal(sb_channel_send_poll(&s, &w), -ECANCELED);
	assert_int_equal(atomic_load(&c.live), 0);

	/* and through the generic blocking wait */
	sb_channel_recv_init(&r, &ch, &got);
	assert_int_equal(sb_future_wait_blocking(&r, &sb_channel_recv_ops, 0), 0);
	assert_int_equal(got, 1);
	sb_channel_recv_init(&r, &ch, &got);
	assert_int_equal(sb_future_wait_blocking(&r, &sb_channel_recv_ops, 0), -ETIMEDOUT);
	sb_channel_send_init(&s, &ch, &blocked);
	assert_int_equal(sb_future_wait_blocking(&s, &sb_channel_send_ops, 0), 0);
	assert_int_equal(recv_int(&ch), 13);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* A never-initialised future is bad input, not a completed one. */
static int send_poll_typed(void *f, const sb_waker *w)
{
	return sb_channel_send_poll(f, w);
}

static int recv_poll_typed(void *f, const sb_waker *w)
{
	return sb_channel_recv_poll(f, w);
}

static void a_zeroed_future_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	int slots[2];
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 2), 0);
	send_int(&ch, 1);
	sb_channel_send s;
	assert_zeroed_future_is_refused(&s, sizeof s, &sb_channel_send_ops, send_poll_typed);
	sb_channel_recv r;
	assert_zeroed_future_is_refused(&r, sizeof r, &sb_channel_recv_ops, recv_poll_typed);
	assert_int_equal(sb_channel_len(&ch), 1);
	assert_int_equal(recv_int(&ch), 1);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

/* ---- blocking ---- */

static void blocking_send_and_recv_with_timeout_0_try_once(void **state)
{
	(void)state;
	int slots[1], v, got = UNTOUCHED;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	v = 1;
	assert_int_equal(sb_channel_send_blocking(&ch, &v, 0), 0);
	v = 2;
	assert_int_equal(sb_channel_send_blocking(&ch, &v, 0), -ETIMEDOUT);
	assert_int_equal(sb_channel_len(&ch), 1);
	assert_int_equal(sb_channel_recv_blocking(&ch, &got, 0), 0);
	assert_int_equal(got, 1);
	got = UNTOUCHED;
	assert_int_equal(sb_channel_recv_blocking(&ch, &got, 0), -ETIMEDOUT);
	assert_int_equal(got, UNTOUCHED);
	assert_int_equal(sb_channel_destroy(&ch), 0); /* nobody left waiting */

	/* rendezvous: timeout 0 succeeds only with the other side waiting */
	assert_int_equal(sb_channel_init(&ch, NULL, sizeof(int), 0), 0);
	sb_channel_recv r;
	counting_waker c;
	start_recv(&r, &ch, &got, &c);
	v = 3;
	assert_int_equal(sb_channel_send_blocking(&ch, &v, 0), 0);
	assert_int_equal(recv_poll(&r, &c), 0);
	assert_int_equal(got, 3);
	sb_channel_send s;
	v = 4;
	start_send(&s, &ch, &v, &c);
	assert_int_equal(sb_channel_recv_blocking(&ch, &got, 0), 0);
	assert_int_equal(got, 4);
	assert_int_equal(send_poll(&s, &c), 0);
	assert_int_equal(sb_channel_send_blocking(&ch, &v, 0), -ETIMEDOUT);
	assert_int_equal(sb_channel_recv_blocking(&ch, &got, 0), -ETIMEDOUT);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void a_blocking_recv_that_times_out_returns_etimedout_and_loses_nothing(void **state)
{
	(void)state;
	int slots[1], got = UNTOUCHED, v = 2;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	assert_int_equal(sb_channel_recv_blocking(&ch, &got, 2 * SB_NSEC_PER_MSEC), -ETIMEDOUT);
	assert_int_equal(got, UNTOUCHED);
	assert_int_equal(sb_channel_destroy(&ch), 0); /* it left the queue */
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	send_int(&ch, 1);
	assert_int_equal(sb_channel_send_blocking(&ch, &v, 2 * SB_NSEC_PER_MSEC), -ETIMEDOUT);
	assert_int_equal(sb_channel_len(&ch), 1);
	assert_int_equal(recv_int(&ch), 1);
	assert_empty_and_open(&ch); /* 2 was not taken */
	send_int(&ch, 3);
	assert_int_equal(sb_channel_recv_blocking(&ch, &got, 2 * SB_NSEC_PER_MSEC), 0);
	assert_int_equal(got, 3);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

typedef struct blocking_arg {
	sb_channel *ch;
	int n;         /* items to move */
	int result;
	int got[128];
} blocking_arg;

static void *blocking_receiver(void *p)
{
	blocking_arg *a = p;
	a->result = 0;
	for (int i = 0; i < a->n && a->result == 0; i++)
		a->result = sb_channel_recv_blocking(a->ch, &a->got[i], SB_TIMEOUT_INFINITE);
	if (a->n == 0)
		a->result = sb_channel_recv_blocking(a->ch, &a->got[0], SB_TIMEOUT_INFINITE);
	return NULL;
}

static void *blocking_sender(void *p)
{
	blocking_arg *a = p;
	a->result = 0;
	for (int i = 0; i < a->n && a->result == 0; i++)
		a->result = sb_channel_send_blocking(a->ch, &i, SB_TIMEOUT_INFINITE);
	return NULL;
}

static void blocking_send_and_recv_meet_across_threads(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "blocking send and recv across threads");
	for (int cap = 0; cap <= 2; cap++) {
		int slots[2];
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		/* a receiver thread, fed by this one */
		blocking_arg a = { .ch = &ch, .n = 100 };
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, blocking_receiver, &a), 0);
		for (int i = 0; i < 100; i++)
			assert_int_equal(sb_channel_send_blocking(&ch, &i, SB_TIMEOUT_INFINITE), 0);
		pthread_join(t, NULL);
		assert_int_equal(a.result, 0);
		for (int i = 0; i < 100; i++)
			assert_int_equal(a.got[i], i);
		/* a sender thread, drained by this one */
		blocking_arg b = { .ch = &ch, .n = 100 };
		assert_int_equal(pthread_create(&t, NULL, blocking_sender, &b), 0);
		for (int i = 0; i < 100; i++) {
			int got = UNTOUCHED;
			assert_int_equal(sb_channel_recv_blocking(&ch, &got, SB_TIMEOUT_INFINITE), 0);
			assert_int_equal(got, i);
		}
		pthread_join(t, NULL);
		assert_int_equal(b.result, 0);
		assert_empty_and_open(&ch);
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
	sb_watchdog_stop(&wd);
}

static void blocking_waits_are_ended_by_close(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "blocking waits ended by close");
	int slots[1];
	sb_channel ch;
	pthread_t t;
	/* a receiver on an empty channel: -EPIPE, whether it waited yet or not */
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	blocking_arg a = { .ch = &ch, .n = 0 };
	a.got[0] = UNTOUCHED;
	assert_int_equal(pthread_create(&t, NULL, blocking_receiver, &a), 0);
	sb_channel_close(&ch);
	pthread_join(t, NULL);
	assert_int_equal(a.result, -EPIPE);
	assert_int_equal(a.got[0], UNTOUCHED);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	/* a sender on a full one: -EPIPE, its item not taken */
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	send_int(&ch, -3);
	blocking_arg b = { .ch = &ch, .n = 1 }; /* sends 0 */
	assert_int_equal(pthread_create(&t, NULL, blocking_sender, &b), 0);
	sb_channel_close(&ch);
	pthread_join(t, NULL);
	assert_int_equal(b.result, -EPIPE);
	assert_int_equal(recv_int(&ch), -3);
	assert_drained_and_closed(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	sb_watchdog_stop(&wd);
}

/*
 * At capacity 1 every item is a hand-over, where a blocking wait looks
 * again a few pauses apart before it yields and queues (docs/design.md,
 * "Retrying before waiting"): many items between a sender thread and a
 * receiver thread each arrive once and in order.
 */
typedef struct counting_receiver {
	sb_channel *ch;
	int n;
	int result;
	int next; /* the item expected next: how many arrived in order */
} counting_receiver;

static void *receive_in_order(void *p)
{
	counting_receiver *a = p;
	a->result = 0;
	while (a->next < a->n) {
		int v = UNTOUCHED;
		a->result = sb_channel_recv_blocking(a->ch, &v, SB_TIMEOUT_INFINITE);
		if (a->result != 0 || v != a->next)
			break;
		a->next++;
	}
	return NULL;
}

static void capacity_1_hand_overs_between_blocking_threads_lose_and_double_nothing(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "capacity-1 hand-overs between blocking threads");
	enum { N = 20000 };
	int slots[1];
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, slots, sizeof(int), 1), 0);
	counting_receiver a = { .ch = &ch, .n = N };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, receive_in_order, &a), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(sb_channel_send_blocking(&ch, &i, SB_TIMEOUT_INFINITE), 0);
	pthread_join(t, NULL);
	assert_int_equal(a.result, 0);
	assert_int_equal(a.next, N);
	assert_empty_and_open(&ch);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	sb_watchdog_stop(&wd);
}

/*
 * Both sides wait with short timeouts, so a timeout often races the
 * handoff: a send that times out must not have been taken (else the receiver
 * sees an item twice) and a receive that times out must have received
 * nothing (else an item is lost, and the receiver sees `done` early).
 */
typedef struct timed_arg {
	sb_channel *ch;
	int n;
	atomic_int done; /* the sender saw its last item taken */
} timed_arg;

static void *timed_receiver(void *p)
{
	timed_arg *a = p;
	int next = 0;
	while (next < a->n) {
		int v = UNTOUCHED;
		int r = sb_channel_recv_blocking(a->ch, &v, 20 * SB_NSEC_PER_USEC);
		if (r != 0 ? v != UNTOUCHED : v != next)
			fprintf(stderr, "capacity %zu: expected item %d, the receive returned %d with %d\n",
				sb_channel_capacity(a->ch), next, r, v);
		if (r == 0) {
			CHECK(v == next); /* in order: none lost or doubled */
			next++;
		} else {
			CHECK(r == -ETIMEDOUT);
			CHECK(v == UNTOUCHED); /* a receive that timed out received nothing */
			CHECK(!atomic_load(&a->done)); /* its item was taken: it is lost */
		}
	}
	return NULL;
}

static void timed_out_blocking_sends_and_receives_lose_and_double_nothing(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "timed blocking sends and receives");
	enum { N = 3000 };
	for (int cap = 0; cap <= 1; cap++) {
		int slots[1];
		sb_channel ch;
		assert_int_equal(sb_channel_init(&ch, cap ? slots : NULL, sizeof(int), (size_t)cap), 0);
		timed_arg a = { .ch = &ch, .n = N };
		atomic_init(&a.done, 0);
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, timed_receiver, &a), 0);
		int timeouts = 0;
		for (int i = 0; i < N;) {
			int r = sb_channel_send_blocking(&ch, &i, 20 * SB_NSEC_PER_USEC);
			if (r == 0)
				i++;
			else {
				assert_int_equal(r, -ETIMEDOUT);
				timeouts++;
			}
		}
		atomic_store(&a.done, 1);
		pthread_join(t, NULL);
		(void)timeouts;
		assert_empty_and_open(&ch);
		assert_int_equal(sb_channel_destroy(&ch), 0);
	}
	sb_watchdog_stop(&wd);
}

/* ---- many threads ---- */

/* A counting waker that a thread can sleep on until it is woken. */
typedef struct thread_waker {
	counting_waker c;
	pthread_mutex_t mu;
	pthread_cond_t cv;
} thread_waker;

static void thread_waker_signal(void *arg)
{
	thread_waker *t = arg;
	pthread_mutex_lock(&t->mu);
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

static void thread_waker_init(thread_waker *t)
{
	counting_waker_init(&t->c);
	t->c.on_wake = thread_waker_signal;
	t->c.hook_arg = t;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
}

static void thread_waker_destroy(thread_waker *t)
{
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
}

/* Drives a future by hand: poll, sleep until the waker is used, poll again. */
static int drive(void *f, const sb_future_ops *ops, thread_waker *t)
{
	for (;;) {
		int seen = atomic_load(&t->c.wakes);
		sb_waker w = counting_waker_ref(&t->c);
		int r = ops->poll(f, &w);
		if (r != SB_PENDING)
			return r;
		pthread_mutex_lock(&t->mu);
		while (atomic_load(&t->c.wakes) == seen)
			pthread_cond_wait(&t->cv, &t->mu);
		pthread_mutex_unlock(&t->mu);
	}
}

enum { MT_SENDERS = 4, MT_RECEIVERS = 4, MT_ITEMS = 2500 };

typedef struct mt_item {
	uint32_t sender;
	uint32_t seq;
} mt_item;

typedef struct mt_sender {
	sb_channel *ch;
	int id;
	thread_waker tw;
	mt_item items[MT_ITEMS];
} mt_sender;

typedef struct mt_receiver {
	sb_channel *ch;
	int id;
	thread_waker tw;
	size_t n;
	mt_item got[MT_SENDERS * MT_ITEMS + 3]; /* room for a last batch */
} mt_receiver;

static void *mt_send_main(void *p)
{
	mt_sender *s = p;
	for (int i = 0; i < MT_ITEMS;) {
		const mt_item *it = &s->items[i];
		int mode = s->id % 4;
		if (mode == 3)
			mode = i % 2 ? 1 : 0;
		if (mode == 0) { /* blocking */
			CHECK(sb_channel_send_blocking(s->ch, it, SB_TIMEOUT_INFINITE) == 0);
			i++;
		} else if (mode == 1) { /* a future driven by hand */
			sb_channel_send f;
			sb_channel_send_init(&f, s->ch, it);
			CHECK(drive(&f, &sb_channel_send_ops, &s->tw) == 0);
			i++;
		} else { /* batches of up to 3, blocking when none fit */
			size_t n = (size_t)(MT_ITEMS - i) < 3 ? (size_t)(MT_ITEMS - i) : 3;
			int r = sb_channel_try_send_many(s->ch, it, n);
			if (r > 0) {
				CHECK((size_t)r <= n);
				i += r;
			} else {
				CHECK(r == -EAGAIN);
				CHECK(sb_channel_send_blocking(s->ch, it, SB_TIMEOUT_INFINITE) == 0);
				i++;
			}
		}
	}
	return NULL;
}

static void *mt_recv_main(void *p)
{
	mt_receiver *rc = p;
	const size_t max = MT_SENDERS * MT_ITEMS;
	for (;;) {
		int r;
		switch (rc->id % 4) {
		case 0: /* blocking */
			r = sb_channel_recv_blocking(rc->ch, &rc->got[rc->n], SB_TIMEOUT_INFINITE);
			if (r == 0)
				rc->n++;
			break;
		case 1: { /* a future driven by hand */
			sb_channel_recv f;
			sb_channel_recv_init(&f, rc->ch, &rc->got[rc->n]);
			r = drive(&f, &sb_channel_recv_ops, &rc->tw);
			if (r == 0) {
				CHECK(sb_channel_recv_count(&f) == 1);
				rc->n++;
			}
			break;
		}
		case 2: { /* a receive-many future driven by hand */
			size_t room = 3;
			sb_channel_recv f;
			sb_channel_recv_many_init(&f, rc->ch, &rc->got[rc->n], room);
			r = drive(&f, &sb_channel_recv_ops, &rc->tw);
			if (r == 0) {
				size_t k = sb_channel_recv_count(&f);
				CHECK(k >= 1 && k <= room);
				rc->n += k;
			}
			break;
		}
		default: { /* batches, blocking when empty */
			size_t room = 2;
			r = sb_channel_try_recv_many(rc->ch, &rc->got[rc->n], room);
			if (r > 0) {
				CHECK((size_t)r <= room);
				rc->n += (size_t)r;
				r = 0;
			} else if (r == -EAGAIN) {
				r = sb_channel_recv_blocking(rc->ch, &rc->got[rc->n], SB_TIMEOUT_INFINITE);
				if (r == 0)
					rc->n++;
			}
			break;
		}
		}
		if (r != 0) {
			CHECK(r == -EPIPE);
			return NULL;
		}
		CHECK(rc->n <= max);
	}
}

static void run_conservation(size_t capacity)
{
	static mt_sender senders[MT_SENDERS];
	static mt_receiver receivers[MT_RECEIVERS];
	static unsigned char seen[MT_SENDERS][MT_ITEMS];
	mt_item slots[4];
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, capacity ? slots : NULL, sizeof(mt_item), capacity), 0);
	pthread_t st[MT_SENDERS], rt[MT_RECEIVERS];
	for (int r = 0; r < MT_RECEIVERS; r++) {
		receivers[r].ch = &ch;
		receivers[r].id = r;
		receivers[r].n = 0;
		thread_waker_init(&receivers[r].tw);
		assert_int_equal(pthread_create(&rt[r], NULL, mt_recv_main, &receivers[r]), 0);
	}
	for (int s = 0; s < MT_SENDERS; s++) {
		senders[s].ch = &ch;
		senders[s].id = s;
		thread_waker_init(&senders[s].tw);
		for (int i = 0; i < MT_ITEMS; i++)
			senders[s].items[i] = (mt_item){ (uint32_t)s, (uint32_t)i };
		assert_int_equal(pthread_create(&st[s], NULL, mt_send_main, &senders[s]), 0);
	}
	for (int s = 0; s < MT_SENDERS; s++)
		pthread_join(st[s], NULL);
	sb_channel_close(&ch);
	for (int r = 0; r < MT_RECEIVERS; r++)
		pthread_join(rt[r], NULL);

	memset(seen, 0, sizeof seen);
	size_t total = 0;
	for (int r = 0; r < MT_RECEIVERS; r++) {
		long last[MT_SENDERS];
		for (int s = 0; s < MT_SENDERS; s++)
			last[s] = -1;
		for (size_t k = 0; k < receivers[r].n; k++) {
			mt_item it = receivers[r].got[k];
			assert_true(it.sender < MT_SENDERS);
			assert_true(it.seq < MT_ITEMS);
			assert_true((long)it.seq > last[it.sender]); /* per-sender order */
			last[it.sender] = it.seq;
			assert_int_equal(seen[it.sender][it.seq]++, 0); /* at most once */
		}
		total += receivers[r].n;
		assert_int_equal(atomic_load(&receivers[r].tw.c.live), 0);
		thread_waker_destroy(&receivers[r].tw);
	}
	assert_int_equal(total, MT_SENDERS * MT_ITEMS); /* so every item exactly once */
	for (int s = 0; s < MT_SENDERS; s++) {
		assert_int_equal(atomic_load(&senders[s].tw.c.live), 0);
		thread_waker_destroy(&senders[s].tw);
	}
	assert_int_equal(sb_channel_len(&ch), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void many_senders_and_receivers_move_every_item_exactly_once_in_per_sender_order(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "conservation, capacity 4");
	run_conservation(4);
	sb_watchdog_phase(&wd, "conservation, capacity 1");
	run_conservation(1);
	sb_watchdog_phase(&wd, "conservation, rendezvous");
	run_conservation(0);
	sb_watchdog_stop(&wd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(the_static_initialiser_gives_an_open_empty_channel),
		cmocka_unit_test(the_ring_static_initialiser_gives_an_open_empty_channel),
		cmocka_unit_test(init_ring_checks_as_init_and_wants_words_aligned),
		cmocka_unit_test(a_ring_keeps_its_order_across_the_wrap_of_its_positions),
		cmocka_unit_test(init_accepts_null_storage_for_a_rendezvous_channel),
		cmocka_unit_test(init_refuses_bad_arguments_and_leaves_the_channel_unchanged),
		cmocka_unit_test(init_reports_a_storage_size_that_overflows_size_t),
		cmocka_unit_test(init_accepts_storage_aligned_to_the_largest_power_of_two_dividing_the_item_size),
		cmocka_unit_test(try_send_and_try_recv_keep_fifo_order_and_report_full_and_empty),
		cmocka_unit_test(a_null_item_or_a_bad_batch_size_is_refused_and_changes_nothing),
		cmocka_unit_test(a_zeroed_future_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(a_ready_future_completes_on_its_first_poll_without_cloning),
		cmocka_unit_test(repolling_with_the_same_waker_does_not_clone_again),
		cmocka_unit_test(a_different_waker_replaces_the_old_one_which_is_dropped),
		cmocka_unit_test(a_rendezvous_try_send_fails_with_no_receiver_waiting),
		cmocka_unit_test(a_waiting_receiver_gets_the_item_straight_from_the_sender),
		cmocka_unit_test(a_waiting_rendezvous_sender_completes_when_try_recv_takes_its_item),
		cmocka_unit_test(waiting_receivers_are_served_in_fifo_order),
		cmocka_unit_test(a_send_to_a_channel_with_two_waiting_receivers_wakes_exactly_one),
		cmocka_unit_test(two_receivers_and_two_sends_wake_both),
		cmocka_unit_test(waiting_senders_are_served_in_fifo_order_and_move_into_the_ring_in_order),
		cmocka_unit_test(waiting_rendezvous_senders_are_served_in_fifo_order),
		cmocka_unit_test(close_fails_later_sends_and_delivers_earlier_items_in_order_then_epipe),
		cmocka_unit_test(try_recv_tells_empty_from_closed_and_drained),
		cmocka_unit_test(close_completes_waiting_senders_with_epipe_without_taking_their_items),
		cmocka_unit_test(close_completes_waiting_receivers_with_epipe),
		cmocka_unit_test(close_keeps_the_handoffs_that_completed_before_it),
		cmocka_unit_test(close_is_idempotent),
		cmocka_unit_test(close_with_more_waiters_than_a_wake_batch_completes_them_all),
		cmocka_unit_test(close_runs_the_wakes_after_releasing_the_lock),
		cmocka_unit_test(a_receive_whose_waker_clone_sends_gets_that_item_without_deadlock),
		cmocka_unit_test(try_send_many_sends_as_many_as_fit_in_order),
		cmocka_unit_test(try_recv_many_takes_up_to_n_of_the_oldest_items_in_order),
		cmocka_unit_test(try_send_many_serves_waiting_receivers_first_then_the_ring),
		cmocka_unit_test(a_waiting_receive_many_completes_with_one_to_n_items),
		cmocka_unit_test(try_recv_many_takes_waiting_senders_items_in_order),
		cmocka_unit_test(force_send_evicts_nothing_while_there_is_room),
		cmocka_unit_test(force_send_on_a_full_channel_evicts_the_oldest_and_appends),
		cmocka_unit_test(force_send_on_a_rendezvous_needs_a_waiting_receiver_and_hands_it_over),
		cmocka_unit_test(force_send_leaves_waiting_senders_in_their_place),
		cmocka_unit_test(cancel_of_a_pending_send_returns_ecanceled_and_its_item_was_not_taken),
		cmocka_unit_test(cancel_of_a_send_whose_item_was_taken_returns_0_and_nothing_is_doubled),
		cmocka_unit_test(cancel_mid_handoff_loses_nothing),
		cmocka_unit_test(cancel_of_a_pending_receive_returns_ecanceled_and_the_next_receiver_is_served),
		cmocka_unit_test(cancel_of_an_idle_future_returns_ecanceled_and_changes_nothing),
		cmocka_unit_test(cancel_of_a_completed_future_returns_its_result),
		cmocka_unit_test(destroy_returns_ebusy_while_futures_wait_and_0_after),
		cmocka_unit_test(the_ops_tables_drive_the_futures),
		cmocka_unit_test(blocking_send_and_recv_with_timeout_0_try_once),
		cmocka_unit_test(a_blocking_recv_that_times_out_returns_etimedout_and_loses_nothing),
		cmocka_unit_test(blocking_send_and_recv_meet_across_threads),
		cmocka_unit_test(blocking_waits_are_ended_by_close),
		cmocka_unit_test(capacity_1_hand_overs_between_blocking_threads_lose_and_double_nothing),
		cmocka_unit_test(timed_out_blocking_sends_and_receives_lose_and_double_nothing),
		cmocka_unit_test(many_senders_and_receivers_move_every_item_exactly_once_in_per_sender_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
