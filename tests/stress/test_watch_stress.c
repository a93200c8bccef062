/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch receivers never see a torn value nor one older than they have
 * seen, with more contenders than cores and a close while they all run.
 *
 * Two senders replace a value of 64 words (send) or change it in place
 * (send_if, which tells the receivers or not at random).  Every value is
 * written by one sender at one sequence number, and each of its words is
 * derived from both, so a copy mixing two values shows.  Five receivers on
 * plain threads wait for changes by every entry point - a blocking wait
 * with a random timeout (0, short, none), try_changed, and a changed
 * future polled by hand through a counting waker and cancelled at random
 * moments (before its first poll, after it, after its wake) - and read
 * after each.  One of them also unsubscribes and subscribes again now and
 * then.  Once the senders are done the main thread closes the watch, and
 * sends a last value and closes the watch, and every receiver waits until
 * -EPIPE.
 *
 * Checked as they run: every value read is untorn; a receiver's seen
 * version never goes back; for each sender, the sequence numbers a
 * receiver reads never go back; a changed that returned 0 had a newer
 * version.  At the end: each receiver got -EPIPE only after reading the
 * last value (its last read is the final value, its seen version the
 * final one); every waker clone was woken or dropped; the watch destroys.
 * In the plain build the allocator is interposed and the run must allocate
 * nothing.
 *
 * SB_STRESS_OPS (environment) sets the number of sends; the default is
 * 4 * 10^5, about a second in the debug build.
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

#include <syncband/blocking.h>
#include <syncband/watch.h>

#include "check.h"
#include "count_allocations.h"
#include "counting_waker.h"
#include "stress.h"
#include "watchdog.h"

/* ----------------------------------------------------------------- values */

enum { WORDS = 64, SENDERS = 2, RECEIVERS = 5 };

/* word[0]: the sender; word[1]: its sequence number; the rest derived. */
typedef struct value {
	uint64_t word[WORDS];
} value;

static uint64_t derived(uint64_t sender, uint64_t seq, int i)
{
	return (sender * 0x9e3779b97f4a7c15u) ^ (seq * 0xbf58476d1ce4e5b9u) ^ (uint64_t)i;
}

static void make_value(value *v, uint64_t sender, uint64_t seq)
{
	v->word[0] = sender;
	v->word[1] = seq;
	for (int i = 2; i < WORDS; i++)
		v->word[i] = derived(sender, seq, i);
}

static bool is_whole(const value *v)
{
	if (v->word[0] > SENDERS)
		return false;
	for (int i = 2; i < WORDS; i++)
		if (v->word[i] != derived(v->word[0], v->word[1], i))
			return false;
	return true;
}

/* ------------------------------------------------------------------ state */

typedef struct stats {
	atomic_long reads, changed, timed_out, futures_waited, cancels, quiet_send_ifs;
	atomic_long torn, went_back, resubscribes;
} stats;

typedef struct run {
	atomic_bool start;   /* the workers wait for it: thread creation is not counted */
	sb_watch w;
	value storage;
	long sends_each;
	atomic_int senders_left;
	stats st;
} run;

typedef struct sender {
	run *r;
	int id;          /* 1.. (0 is the initial value's) */
} sender;

typedef struct receiver {
	run *r;
	int id;
	sb_watch_receiver rx;
	counting_waker waker;
	uint64_t last_seq[SENDERS + 1];
	size_t last_seen;
	value last;          /* the last value read */
	int end;             /* what ended it: -EPIPE */
} receiver;

/* A send_if that writes the next value in place; tells receivers or not. */
typedef struct in_place {
	const value *next;
	bool tell;
} in_place;

static bool write_in_place(void *storage, void *arg)
{
	const in_place *p = arg;
	memcpy(storage, p->next, sizeof(value));
	return p->tell;
}

static void *sender_main(void *arg)
{
	sender *s = arg;
	run *r = s->r;
	unsigned seed = stress_seed(100 + s->id);
	value v;
	while (!atomic_load(&r->start))
		sched_yield();
	for (long k = 1; k <= r->sends_each; k++) {
		make_value(&v, (uint64_t)s->id, (uint64_t)k);
		unsigned how = stress_next_random(&seed) % 4;
		if (how == 0) {
			in_place p = { &v, stress_next_random(&seed) % 2 == 0 };
			int res = sb_watch_send_if(&r->w, write_in_place, &p);
			CHECK(res == (p.tell ? 1 : 0));
			if (!p.tell)
				atomic_fetch_add(&r->st.quiet_send_ifs, 1);
		} else {
			CHECK(sb_watch_send(&r->w, &v) == 0);
		}
		if (stress_next_random(&seed) % 64 == 0)
			sched_yield();
	}
	atomic_fetch_sub(&r->senders_left, 1);
	return NULL;
}

/* Reads and checks: untorn, not older than anything this receiver saw. */
static void read_and_check(receiver *c)
{
	value v;
	CHECK(sb_watch_read(&c->rx, &v) == 0);
	atomic_fetch_add(&c->r->st.reads, 1);
	size_t seen = sb_watch_seen(&c->rx);
	if (!is_whole(&v)) {
		atomic_fetch_add(&c->r->st.torn, 1);
		return;
	}
	uint64_t from = v.word[0];
	if (seen < c->last_seen || v.word[1] < c->last_seq[from])
		atomic_fetch_add(&c->r->st.went_back, 1);
	c->last_seen = seen;
	c->last_seq[from] = v.word[1];
	c->last = v;
}

/* A changed future polled by hand, cancelled at a random moment. */
static int changed_by_future(receiver *c, unsigned *seed)
{
	sb_watch_changed f;
	sb_watch_changed_init(&f, &c->rx);
	unsigned when = stress_next_random(seed) % 8;
	if (when == 0) {
		sb_watch_changed_cancel(&f);
		atomic_fetch_add(&c->r->st.cancels, 1);
		return -ECANCELED;
	}
	sb_waker w = counting_waker_ref(&c->waker);
	int wakes = atomic_load(&c->waker.wakes);
	int res = sb_watch_changed_poll(&f, &w);
	if (res != SB_PENDING)
		return res;
	atomic_fetch_add(&c->r->st.futures_waited, 1);
	if (when == 1) {
		sb_watch_changed_cancel(&f);
		atomic_fetch_add(&c->r->st.cancels, 1);
		return -ECANCELED;
	}
	stress_await_wake(&c->waker, &wakes);
	if (when == 2) {
		sb_watch_changed_cancel(&f);
		atomic_fetch_add(&c->r->st.cancels, 1);
		return -ECANCELED;
	}
	/* A wake means "poll again" (future.h): one may be the late wake of an
	 * earlier future of this receiver that was cancelled after a send had
	 * taken its waker.  A wake that never comes hangs here, and the
	 * watchdog fails the run. */
	while ((res = sb_watch_changed_poll(&f, &w)) == SB_PENDING)
		stress_await_wake(&c->waker, &wakes);
	return res;
}

/* One wait for a change by a random entry point: 0, -EPIPE, or nothing yet. */
static int wait_for_change(receiver *c, unsigned *seed)
{
	switch (stress_next_random(seed) % 5) {
	case 0:
		return sb_watch_changed_blocking(&c->rx, 0);
	case 1:
		return sb_watch_changed_blocking(&c->rx, 20 * SB_NSEC_PER_USEC);
	case 2:
		return sb_watch_changed_blocking(&c->rx, SB_TIMEOUT_INFINITE);
	case 3: {
		int res = sb_watch_try_changed(&c->rx);
		if (res == -EAGAIN)
			sched_yield();
		return res;
	}
	default:
		return changed_by_future(c, seed);
	}
}

static void *receiver_main(void *arg)
{
	receiver *c = arg;
	unsigned seed = stress_seed(c->id);
	while (!atomic_load(&c->r->start))
		sched_yield();
	for (;;) {
		size_t before = c->last_seen;
		int res = wait_for_change(c, &seed);
		if (res == -EPIPE)
			break;
		if (res == -ETIMEDOUT || res == -EAGAIN || res == -ECANCELED) {
			if (res == -ETIMEDOUT)
				atomic_fetch_add(&c->r->st.timed_out, 1);
			continue;
		}
		CHECK(res == 0);
		/* told of a change: a version newer than the one it had read */
		CHECK(sb_watch_version(&c->r->w) != before);
		atomic_fetch_add(&c->r->st.changed, 1);
		read_and_check(c);
		if (c->id == 0 && stress_next_random(&seed) % 256 == 0) {
			CHECK(sb_watch_unsubscribe(&c->rx) == 0);
			CHECK(sb_watch_subscribe(&c->r->w, &c->rx) == 0);
			/* a new subscription has seen the current version: it may
			 * be past what this receiver read */
			c->last_seen = sb_watch_seen(&c->rx);
			read_and_check(c);
			atomic_fetch_add(&c->r->st.resubscribes, 1);
		}
	}
	c->end = -EPIPE;
	return NULL;
}

static long sender_progress(void *arg)
{
	run *r = arg;
	return (long)sb_watch_version(&r->w) + atomic_load(&r->st.reads);
}

static void report(void *arg)
{
	run *r = arg;
	fprintf(stderr, "watch stress: version %zu, %ld reads, senders left %d\n",
		sb_watch_version(&r->w), atomic_load(&r->st.reads),
		atomic_load(&r->senders_left));
}

static void receivers_never_see_a_torn_or_older_value_and_end_on_the_last_one(void **state)
{
	(void)state;
	static run r;
	static sender s[SENDERS];
	static receiver c[RECEIVERS];
	memset(&r, 0, sizeof r);
	make_value(&r.storage, 0, 0);
	r.sends_each = stress_total_ops(400000) / SENDERS;
	atomic_store(&r.senders_left, SENDERS);
	assert_int_equal(sb_watch_init(&r.w, &r.storage, sizeof r.storage), 0);
	for (int i = 0; i < RECEIVERS; i++) {
		memset(&c[i], 0, sizeof c[i]);
		c[i].r = &r;
		c[i].id = i;
		counting_waker_init(&c[i].waker);
		assert_int_equal(sb_watch_subscribe(&r.w, &c[i].rx), 0);
	}
	for (int i = 0; i < SENDERS; i++)
		s[i] = (sender){ &r, i + 1 };

	sb_watchdog wd;
	sb_watchdog_progress progress = { sender_progress, report, &r, 20 };
	sb_watchdog_start_progress(&wd, 240, "watch stress", &progress);
	pthread_t st[SENDERS], rt[RECEIVERS];
	for (int i = 0; i < RECEIVERS; i++)
		assert_int_equal(pthread_create(&rt[i], NULL, receiver_main, &c[i]), 0);
	for (int i = 0; i < SENDERS; i++)
		assert_int_equal(pthread_create(&st[i], NULL, sender_main, &s[i]), 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long allocs_before = allocation_count();
	atomic_store(&r.start, true);
	for (int i = 0; i < SENDERS; i++)
		assert_int_equal(pthread_join(st[i], NULL), 0);
	/* A last value that tells (a quiet send_if may have come last), then the end. */
	value last;
	make_value(&last, 0, 1);
	assert_int_equal(sb_watch_send(&r.w, &last), 0);
	sb_watch_close(&r.w);
	for (int i = 0; i < RECEIVERS; i++)
		assert_int_equal(pthread_join(rt[i], NULL), 0);

	long allocs = allocation_count() - allocs_before;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sb_watchdog_stop(&wd);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("watch: %.2f s, %ld sends (%ld quiet send_ifs), version %zu, %ld reads, "
	       "%ld changes, %ld futures waited, %ld cancels, %ld timeouts, %ld resubscribes, "
	       "allocations %ld\n", secs, 2 * r.sends_each, atomic_load(&r.st.quiet_send_ifs),
	       sb_watch_version(&r.w), atomic_load(&r.st.reads), atomic_load(&r.st.changed),
	       atomic_load(&r.st.futures_waited), atomic_load(&r.st.cancels),
	       atomic_load(&r.st.timed_out), atomic_load(&r.st.resubscribes), allocs);

	assert_int_equal(atomic_load(&r.st.torn), 0);
	assert_int_equal(atomic_load(&r.st.went_back), 0);
	assert_int_equal(allocs, 0);
	size_t final = sb_watch_version(&r.w);
	assert_int_equal(final,
			 2 * (size_t)r.sends_each - (size_t)atomic_load(&r.st.quiet_send_ifs) + 1);
	for (int i = 0; i < RECEIVERS; i++) {
		/* -EPIPE came only after it had read the last value */
		assert_int_equal(c[i].end, -EPIPE);
		assert_int_equal(sb_watch_seen(&c[i].rx), final);
		assert_memory_equal(&c[i].last, &last, sizeof last);
		assert_int_equal(atomic_load(&c[i].waker.live), 0);
		assert_int_equal(sb_watch_unsubscribe(&c[i].rx), 0);
	}
	assert_true(atomic_load(&r.st.reads) > 0);
	assert_int_equal(sb_watch_destroy(&r.w), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(receivers_never_see_a_torn_or_older_value_and_end_on_the_last_one),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
