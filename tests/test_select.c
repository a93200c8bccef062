/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/blocking.h>
#include <syncband/channel.h>
#include <syncband/deadline.h>
#include <syncband/event.h>
#include <syncband/select.h>
#include <syncband/semaphore.h>

#include "check.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

#define UNTOUCHED (-1)

static int sel_poll(sb_select *s, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_select_poll(s, &w);
}

/* Two channels of capacity 1 and a receive case on each (test_select_ring:
 * stamped rings, whose slow polls the lock's hand a select's probe over to). */
typedef struct two_channels {
	sb_channel ch[2];
#ifdef TEST_SELECT_RING
	_Alignas(64) unsigned char slots[2][SB_CHANNEL_RING_STORAGE_SIZE(sizeof(int), 1)];
#else
	int slots[2][1];
#endif
	sb_channel_recv recv[2];
	int got[2];
	sb_select_case cases[2];
	sb_select select;
	counting_waker w;
} two_channels;

static void two_channels_init(two_channels *t, size_t capacity, unsigned flags)
{
	counting_waker_init(&t->w);
	for (int i = 0; i < 2; i++) {
#ifdef TEST_SELECT_RING
		assert_int_equal(sb_channel_init_ring(&t->ch[i], capacity ? t->slots[i] : NULL,
						      sizeof(int), capacity), 0);
#else
		assert_int_equal(sb_channel_init(&t->ch[i], capacity ? t->slots[i] : NULL,
						 sizeof(int), capacity), 0);
#endif
		t->got[i] = UNTOUCHED;
		sb_channel_recv_init(&t->recv[i], &t->ch[i], &t->got[i]);
		t->cases[i] = (sb_select_case)SB_SELECT_CASE(&t->recv[i], &sb_channel_recv_ops);
	}
	assert_int_equal(sb_select_init(&t->select, t->cases, 2, 0, flags), 0);
}

static void two_channels_destroy(two_channels *t)
{
	for (int i = 0; i < 2; i++)
		assert_int_equal(sb_channel_destroy(&t->ch[i]), 0);
	assert_int_equal(atomic_load(&t->w.live), 0); /* every clone woken or dropped */
}

static void send_int(sb_channel *ch, int v)
{
	assert_int_equal(sb_channel_try_send(ch, &v), 0);
}

static int recv_int(sb_channel *ch)
{
	int v = UNTOUCHED;
	assert_int_equal(sb_channel_try_recv(ch, &v), 0);
	return v;
}

/* ------------------------------------------------------------ basics */

static void a_select_is_at_most_64_bytes_and_a_case_32_on_64_bit_targets(void **state)
{
	(void)state;
	if (sizeof(void *) == 8) {
		assert_true(sizeof(sb_select) <= 64);
		assert_int_equal(sizeof(sb_select_case), 32);
	}
}

static void init_refuses_bad_arguments_with_einval_and_the_select_polls_to_einval(void **state)
{
	(void)state;
	sb_semaphore sem;
	assert_int_equal(sb_semaphore_init(&sem, 1), 0);
	sb_semaphore_acquire a;
	sb_semaphore_acquire_init(&a, &sem, 1);
	sb_select_case good[1] = { SB_SELECT_CASE(&a, &sb_semaphore_acquire_ops) };
	sb_select_case no_future[1] = { SB_SELECT_CASE(NULL, &sb_semaphore_acquire_ops) };
	sb_select_case no_ops[1] = { SB_SELECT_CASE(&a, NULL) };
	sb_select s;
	sb_waker w = sb_waker_noop();
	assert_int_equal(sb_select_init(&s, NULL, 1, 0, 0), -EINVAL);
	assert_int_equal(sb_select_init(&s, good, 0, 0, 0), -EINVAL);
	assert_int_equal(sb_select_init(&s, good, SB_SELECT_MAX_CASES + 1, 0, 0), -EINVAL);
	assert_int_equal(sb_select_init(&s, good, 1, 0, 2), -EINVAL);
	assert_int_equal(sb_select_init(&s, no_future, 1, 0, 0), -EINVAL);
	assert_int_equal(sb_select_init(&s, no_ops, 1, 0, 0), -EINVAL);
	assert_int_equal(sb_select_poll(&s, &w), -EINVAL);
	assert_int_equal(sb_semaphore_available(&sem), 1); /* nothing was polled */
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

static int select_poll_untyped(void *f, const sb_waker *w)
{
	return sb_select_poll(f, w);
}

static void a_zeroed_select_polls_to_einval(void **state)
{
	(void)state;
	sb_select s;
	assert_zeroed_future_is_refused(&s, sizeof s, &sb_select_ops, select_poll_untyped);
	assert_int_equal(sb_select_index(&s), -1);
}

static void a_ready_case_wins_at_the_first_poll_and_the_others_never_take_effect(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, SB_SELECT_BIASED);
	send_int(&t.ch[0], 10);
	send_int(&t.ch[1], 20);
	assert_int_equal(sel_poll(&t.select, &t.w), 0);
	assert_int_equal(sb_select_index(&t.select), 0);
	assert_int_equal(sb_select_result(&t.select), 0);
	assert_int_equal(t.got[0], 10);
	assert_int_equal(t.got[1], UNTOUCHED);
	assert_int_equal(recv_int(&t.ch[1]), 20); /* still there */
	assert_int_equal(atomic_load(&t.w.clones), 0);
	/* done: the same again, the cases untouched */
	assert_int_equal(sel_poll(&t.select, &t.w), 0);
	assert_int_equal(sb_select_cancel(&t.select), 0);
	assert_int_equal(sb_select_index(&t.select), 0);
	two_channels_destroy(&t);
}

static void the_first_poll_looks_at_every_case_before_any_channel_case_waits(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, SB_SELECT_BIASED); /* tries the empty channel 0 first */
	send_int(&t.ch[1], 4);
	assert_int_equal(sel_poll(&t.select, &t.w), 0);
	assert_int_equal(sb_select_index(&t.select), 1);
	assert_int_equal(atomic_load(&t.w.clones), 0); /* case 0 never waited */
	send_int(&t.ch[0], 5); /* nobody waits on channel 0: into the ring */
	assert_int_equal(recv_int(&t.ch[0]), 5);
	two_channels_destroy(&t);
}

static void the_first_case_to_complete_wins_and_wakes_the_caller_once(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, 0);
	assert_int_equal(sel_poll(&t.select, &t.w), SB_PENDING);
	assert_int_equal(atomic_load(&t.w.clones), 2); /* one per waiting case */
	send_int(&t.ch[1], 7);
	assert_int_equal(atomic_load(&t.w.wakes), 1);
	assert_int_equal(sel_poll(&t.select, &t.w), 0);
	assert_int_equal(sb_select_index(&t.select), 1);
	assert_int_equal(t.got[1], 7);
	assert_int_equal(t.got[0], UNTOUCHED);
	two_channels_destroy(&t);
}

static void a_waiting_case_keeps_its_clone_across_re_polls(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sel_poll(&t.select, &t.w), SB_PENDING);
	assert_int_equal(atomic_load(&t.w.clones), 2);
	assert_int_equal(atomic_load(&t.w.drops), 0);
	assert_int_equal(sb_select_cancel(&t.select), -ECANCELED);
	assert_int_equal(atomic_load(&t.w.drops), 2);
	two_channels_destroy(&t);
}

static void a_re_poll_with_a_new_waker_moves_every_waiting_case_to_it(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, 0);
	counting_waker other;
	counting_waker_init(&other);
	assert_int_equal(sel_poll(&t.select, &t.w), SB_PENDING);
	assert_int_equal(sel_poll(&t.select, &other), SB_PENDING);
	assert_int_equal(atomic_load(&t.w.live), 0);
	assert_int_equal(atomic_load(&other.live), 2);
	send_int(&t.ch[0], 3);
	assert_int_equal(atomic_load(&other.wakes), 1);
	assert_int_equal(atomic_load(&t.w.wakes), 0);
	assert_int_equal(sel_poll(&t.select, &other), 0);
	assert_int_equal(sb_select_index(&t.select), 0);
	assert_int_equal(atomic_load(&other.live), 0);
	two_channels_destroy(&t);
}

/* --------------------------------------------------------- exactly one */

static void an_item_never_reaches_a_losing_channel_case(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, 0);
	assert_int_equal(sel_poll(&t.select, &t.w), SB_PENDING);
	send_int(&t.ch[0], 1); /* claims case 0 */
	send_int(&t.ch[1], 2); /* loses the claim: into the ring instead */
	assert_int_equal(t.got[1], UNTOUCHED);
	assert_int_equal(sb_channel_len(&t.ch[1]), 1);
	assert_int_equal(sel_poll(&t.select, &t.w), 0);
	assert_int_equal(sb_select_index(&t.select), 0);
	assert_int_equal(t.got[0], 1);
	assert_int_equal(recv_int(&t.ch[1]), 2);
	two_channels_destroy(&t);
}

static void a_rendezvous_send_to_a_losing_case_waits_for_another_receiver(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 0, 0);
	assert_int_equal(sel_poll(&t.select, &t.w), SB_PENDING);
	send_int(&t.ch[1], 5); /* straight into case 1: it wins */
	int v = 6;
	assert_int_equal(sb_channel_try_send(&t.ch[0], &v), -EAGAIN); /* case 0 lost */
	assert_int_equal(sel_poll(&t.select, &t.w), 0);
	assert_int_equal(sb_select_index(&t.select), 1);
	assert_int_equal(t.got[1], 5);
	assert_int_equal(t.got[0], UNTOUCHED);
	two_channels_destroy(&t);
}

/* The hook: a send into channel 0 while the select's poll is trying the cases. */
static void send_into_channel_0(void *arg)
{
	two_channels *t = arg;
	if (atomic_load(&t->w.clones) == 2)
		send_int(&t->ch[0], 42);
}

static void a_send_during_the_select_poll_is_sent_back_and_taken_at_the_next_poll(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, SB_SELECT_BIASED);
	t.w.on_clone = send_into_channel_0;
	t.w.hook_arg = &t;
	/* Case 0 waits; case 1's clone sends into channel 0 while the select
	 * decides alone: case 0 is sent back (woken) and the item waits in the
	 * ring. */
	assert_int_equal(sel_poll(&t.select, &t.w), SB_PENDING);
	assert_int_equal(t.got[0], UNTOUCHED);
	assert_int_equal(sb_channel_len(&t.ch[0]), 1);
	assert_int_equal(atomic_load(&t.w.wakes), 1);
	t.w.on_clone = NULL;
	assert_int_equal(sel_poll(&t.select, &t.w), 0);
	assert_int_equal(sb_select_index(&t.select), 0);
	assert_int_equal(t.got[0], 42);
	assert_int_equal(sb_channel_len(&t.ch[0]), 0);
	two_channels_destroy(&t);
}

static void a_permit_granted_to_a_losing_case_is_handed_back(void **state)
{
	(void)state;
	sb_semaphore sem;
	assert_int_equal(sb_semaphore_init(&sem, 0), 0);
	sb_channel ch;
	int slot[1], got = UNTOUCHED;
	assert_int_equal(sb_channel_init(&ch, slot, sizeof(int), 1), 0);
	sb_semaphore_acquire a;
	sb_channel_recv r;
	sb_semaphore_acquire_init(&a, &sem, 1);
	sb_channel_recv_init(&r, &ch, &got);
	sb_select_case cases[2] = { SB_SELECT_CASE(&a, &sb_semaphore_acquire_ops),
				    SB_SELECT_CASE(&r, &sb_channel_recv_ops) };
	sb_select s;
	counting_waker w;
	counting_waker_init(&w);
	assert_int_equal(sb_select_init(&s, cases, 2, 0, 0), 0);
	assert_int_equal(sel_poll(&s, &w), SB_PENDING);
	send_int(&ch, 9);                                 /* claims case 1 */
	assert_int_equal(sb_semaphore_release(&sem, 1), 0); /* granted to case 0 */
	assert_int_equal(sel_poll(&s, &w), 0);
	assert_int_equal(sb_select_index(&s), 1);
	assert_int_equal(got, 9);
	assert_int_equal(sb_semaphore_available(&sem), 1); /* handed back by the cancel */
	assert_int_equal(atomic_load(&w.live), 0);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void a_notification_to_a_losing_case_is_passed_on(void **state)
{
	(void)state;
	sb_auto_event ev;
	assert_int_equal(sb_auto_event_init(&ev, false), 0);
	sb_semaphore sem;
	assert_int_equal(sb_semaphore_init(&sem, 0), 0);
	sb_auto_event_wait e;
	sb_semaphore_acquire a;
	sb_auto_event_wait_init(&e, &ev);
	sb_semaphore_acquire_init(&a, &sem, 1);
	sb_select_case cases[2] = { SB_SELECT_CASE(&a, &sb_semaphore_acquire_ops),
				    SB_SELECT_CASE(&e, &sb_auto_event_wait_ops) };
	sb_select s;
	counting_waker w;
	counting_waker_init(&w);
	assert_int_equal(sb_select_init(&s, cases, 2, 0, SB_SELECT_BIASED), 0);
	assert_int_equal(sel_poll(&s, &w), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&sem, 1), 0);
	sb_auto_event_set(&ev);
	/* both granted: declaration order picks case 0; the event stays signalled */
	assert_int_equal(sel_poll(&s, &w), 0);
	assert_int_equal(sb_select_index(&s), 0);
	assert_int_equal(sb_auto_event_try_wait(&ev), 0);
	assert_int_equal(sb_semaphore_available(&sem), 0); /* the winner's permit */
	assert_int_equal(atomic_load(&w.live), 0);
	assert_int_equal(sb_auto_event_destroy(&ev), 0);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

/* --------------------------------------------------------- deadlines */

static void an_expired_deadline_case_wins_with_etimedout(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, 0);
	sb_deadline d;
	sb_deadline_init(&d, &t.recv[1], &sb_channel_recv_ops);
	t.cases[1] = (sb_select_case)SB_SELECT_CASE(&d, &sb_deadline_ops);
	assert_int_equal(sb_select_init(&t.select, t.cases, 2, 0, 0), 0);
	assert_int_equal(sel_poll(&t.select, &t.w), SB_PENDING);
	sb_deadline_expire(&d);
	assert_int_equal(sel_poll(&t.select, &t.w), 0);
	assert_int_equal(sb_select_index(&t.select), 1);
	assert_int_equal(sb_select_result(&t.select), -ETIMEDOUT);
	send_int(&t.ch[0], 1); /* case 0 was cancelled: into the ring */
	assert_int_equal(t.got[0], UNTOUCHED);
	assert_int_equal(recv_int(&t.ch[0]), 1);
	two_channels_destroy(&t);
}

static void a_channel_case_under_a_deadline_still_needs_the_claim(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, 0);
	sb_deadline d[2];
	for (int i = 0; i < 2; i++) {
		sb_deadline_init(&d[i], &t.recv[i], &sb_channel_recv_ops);
		t.cases[i] = (sb_select_case)SB_SELECT_CASE(&d[i], &sb_deadline_ops);
	}
	assert_int_equal(sb_select_init(&t.select, t.cases, 2, 0, 0), 0);
	assert_int_equal(sel_poll(&t.select, &t.w), SB_PENDING);
	send_int(&t.ch[1], 4);
	send_int(&t.ch[0], 3); /* lost: into the ring */
	sb_deadline_expire(&d[1]); /* too late: its inner completed */
	assert_int_equal(sel_poll(&t.select, &t.w), 0);
	assert_int_equal(sb_select_index(&t.select), 1);
	assert_int_equal(sb_select_result(&t.select), 0);
	assert_int_equal(t.got[1], 4);
	assert_int_equal(recv_int(&t.ch[0]), 3);
	two_channels_destroy(&t);
}

static void a_deadline_around_a_select_cancels_it_and_hands_grants_on(void **state)
{
	(void)state;
	sb_semaphore sem;
	assert_int_equal(sb_semaphore_init(&sem, 0), 0);
	sb_semaphore_acquire a[2];
	sb_select_case cases[2];
	for (int i = 0; i < 2; i++) {
		sb_semaphore_acquire_init(&a[i], &sem, 2);
		cases[i] = (sb_select_case)SB_SELECT_CASE(&a[i], &sb_semaphore_acquire_ops);
	}
	sb_select s;
	assert_int_equal(sb_select_init(&s, cases, 2, 0, 0), 0);
	sb_deadline d;
	sb_deadline_init(&d, &s, &sb_select_ops);
	sb_waker w = sb_waker_noop();
	assert_int_equal(sb_deadline_poll(&d, &w), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&sem, 1), 0); /* a partial grant */
	sb_deadline_expire(&d);
	assert_int_equal(sb_deadline_poll(&d, &w), -ETIMEDOUT);
	assert_int_equal(sb_semaphore_available(&sem), 1);
	assert_int_equal(sb_select_poll(&s, &w), -ECANCELED);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

/* ------------------------------------------------------------- cancel */

static void cancel_hands_every_grant_on_and_polls_to_ecanceled(void **state)
{
	(void)state;
	sb_semaphore sem;
	assert_int_equal(sb_semaphore_init(&sem, 0), 0);
	sb_semaphore_acquire a[2];
	sb_select_case cases[2];
	for (int i = 0; i < 2; i++) {
		sb_semaphore_acquire_init(&a[i], &sem, 1);
		cases[i] = (sb_select_case)SB_SELECT_CASE(&a[i], &sb_semaphore_acquire_ops);
	}
	sb_select s;
	counting_waker w;
	counting_waker_init(&w);
	assert_int_equal(sb_select_init(&s, cases, 2, 0, 0), 0);
	assert_int_equal(sel_poll(&s, &w), SB_PENDING);
	assert_int_equal(sb_semaphore_release(&sem, 1), 0);
	assert_int_equal(sb_select_cancel(&s), -ECANCELED);
	assert_int_equal(sb_semaphore_available(&sem), 1);
	assert_int_equal(sel_poll(&s, &w), -ECANCELED);
	assert_int_equal(sb_select_index(&s), -1);
	assert_int_equal(atomic_load(&w.live), 0);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

static void cancel_after_a_channel_claimed_a_case_reports_that_case_done(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 0, 0);
	assert_int_equal(sel_poll(&t.select, &t.w), SB_PENDING);
	send_int(&t.ch[0], 8);
	assert_int_equal(sb_select_cancel(&t.select), 0);
	assert_int_equal(sb_select_index(&t.select), 0);
	assert_int_equal(t.got[0], 8);
	assert_int_equal(sel_poll(&t.select, &t.w), 0);
	int v = 1;
	assert_int_equal(sb_channel_try_send(&t.ch[1], &v), -EAGAIN); /* case 1 left */
	two_channels_destroy(&t);
}

static void cancel_of_a_never_polled_select_touches_no_case(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, 0);
	assert_int_equal(sb_select_cancel(&t.select), -ECANCELED);
	assert_int_equal(sel_poll(&t.select, &t.w), -ECANCELED);
	send_int(&t.ch[0], 1);
	assert_int_equal(recv_int(&t.ch[0]), 1);
	two_channels_destroy(&t);
}

/* ------------------------------------------------------------ fairness */

enum { FAIR_CASES = 3, FAIR_ROUNDS = 300 };

static void with_every_case_ready_each_wins_within_n_rounds(void **state)
{
	(void)state;
	sb_channel ch[FAIR_CASES];
	int slots[FAIR_CASES][FAIR_ROUNDS];
	for (int i = 0; i < FAIR_CASES; i++) {
		assert_int_equal(sb_channel_init(&ch[i], slots[i], sizeof(int), FAIR_ROUNDS), 0);
		for (int k = 0; k < FAIR_ROUNDS; k++)
			send_int(&ch[i], k);
	}
	int last_won[FAIR_CASES] = { -1, -1, -1 };
	for (uint32_t round = 0; round < FAIR_ROUNDS; round++) {
		sb_channel_recv r[FAIR_CASES];
		int got[FAIR_CASES];
		sb_select_case cases[FAIR_CASES];
		for (int i = 0; i < FAIR_CASES; i++) {
			sb_channel_recv_init(&r[i], &ch[i], &got[i]);
			cases[i] = (sb_select_case)SB_SELECT_CASE(&r[i], &sb_channel_recv_ops);
		}
		sb_select s;
		assert_int_equal(sb_select_init(&s, cases, FAIR_CASES, round, 0), 0);
		sb_waker w = sb_waker_noop();
		assert_int_equal(sb_select_poll(&s, &w), 0);
		last_won[sb_select_index(&s)] = (int)round;
		/* from round n-1 on, every case won within the last n rounds */
		for (int k = 0; k < FAIR_CASES && round + 1 >= FAIR_CASES; k++)
			assert_true(last_won[k] >= 0 && (int)round - last_won[k] < FAIR_CASES);
	}
	for (int i = 0; i < FAIR_CASES; i++)
		assert_int_equal(sb_channel_len(&ch[i]), FAIR_ROUNDS - FAIR_ROUNDS / FAIR_CASES);
}

static void biased_selects_try_the_cases_in_declaration_order(void **state)
{
	(void)state;
	for (uint32_t seed = 0; seed < 5; seed++) {
		two_channels t;
		two_channels_init(&t, 1, SB_SELECT_BIASED);
		assert_int_equal(sb_select_init(&t.select, t.cases, 2, seed, SB_SELECT_BIASED), 0);
		send_int(&t.ch[0], 1);
		send_int(&t.ch[1], 2);
		assert_int_equal(sel_poll(&t.select, &t.w), 0);
		assert_int_equal(sb_select_index(&t.select), 0);
		assert_int_equal(recv_int(&t.ch[1]), 2);
		two_channels_destroy(&t);
	}
}

static void the_seed_picks_the_case_tried_first(void **state)
{
	(void)state;
	for (uint32_t seed = 0; seed < 6; seed++) {
		two_channels t;
		two_channels_init(&t, 1, 0);
		assert_int_equal(sb_select_init(&t.select, t.cases, 2, seed, 0), 0);
		send_int(&t.ch[0], 1);
		send_int(&t.ch[1], 2);
		assert_int_equal(sel_poll(&t.select, &t.w), 0);
		assert_int_equal(sb_select_index(&t.select), (int)(seed % 2));
		(void)sb_channel_try_recv(&t.ch[0], &t.got[0]);
		(void)sb_channel_try_recv(&t.ch[1], &t.got[1]);
		two_channels_destroy(&t);
	}
}

/* ------------------------------------------------ two cases, one channel */

static void two_cases_of_one_select_on_one_channel_never_meet(void **state)
{
	(void)state;
	sb_channel ch;
	assert_int_equal(sb_channel_init(&ch, NULL, sizeof(int), 0), 0);
	int out = 5, in = UNTOUCHED;
	sb_channel_send snd;
	sb_channel_recv rcv;
	sb_channel_recv_init(&rcv, &ch, &in);
	sb_channel_send_init(&snd, &ch, &out);
	sb_select_case cases[2] = { SB_SELECT_CASE(&rcv, &sb_channel_recv_ops),
				    SB_SELECT_CASE(&snd, &sb_channel_send_ops) };
	sb_select s;
	counting_waker w;
	counting_waker_init(&w);
	assert_int_equal(sb_select_init(&s, cases, 2, 0, SB_SELECT_BIASED), 0);
	assert_int_equal(sel_poll(&s, &w), SB_PENDING);
	assert_int_equal(in, UNTOUCHED);
	int v = UNTOUCHED;
	assert_int_equal(sb_channel_try_recv(&ch, &v), 0); /* another receiver takes case 1's item */
	assert_int_equal(v, 5);
	assert_int_equal(sel_poll(&s, &w), 0);
	assert_int_equal(sb_select_index(&s), 1);
	assert_int_equal(atomic_load(&w.live), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
}

static void a_select_nested_as_a_case_completes_with_its_inner_winner(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, 0);
	sb_channel ch;
	int slot[1], got = UNTOUCHED;
	assert_int_equal(sb_channel_init(&ch, slot, sizeof(int), 1), 0);
	sb_channel_recv r;
	sb_channel_recv_init(&r, &ch, &got);
	sb_select_case outer_cases[2] = { SB_SELECT_CASE(&t.select, &sb_select_ops),
					  SB_SELECT_CASE(&r, &sb_channel_recv_ops) };
	sb_select outer;
	assert_int_equal(sb_select_init(&outer, outer_cases, 2, 0, 0), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(sel_poll(&outer, &t.w), SB_PENDING);
	assert_int_equal(atomic_load(&t.w.clones), 3); /* kept across re-polls */
	send_int(&t.ch[1], 6);
	assert_int_equal(sel_poll(&outer, &t.w), 0);
	assert_int_equal(sb_select_index(&outer), 0);
	assert_int_equal(sb_select_index(&t.select), 1);
	assert_int_equal(t.got[1], 6);
	send_int(&ch, 1); /* the outer loser was cancelled: into the ring */
	assert_int_equal(got, UNTOUCHED);
	assert_int_equal(sb_channel_try_recv(&ch, &got), 0);
	assert_int_equal(sb_channel_destroy(&ch), 0);
	two_channels_destroy(&t);
}

/* A case of our own: both receives of a two_channels, joined. */
typedef struct join2 {
	two_channels *t;
	int done[2];
} join2;

static int join2_poll(void *f, const sb_waker *w)
{
	join2 *j = f;
	for (int i = 0; i < 2; i++)
		if (!j->done[i])
			j->done[i] = sb_channel_recv_poll(&j->t->recv[i], w) == 0;
	return j->done[0] && j->done[1] ? 0 : SB_PENDING;
}

static void join2_cancel(void *f)
{
	join2 *j = f;
	for (int i = 0; i < 2; i++)
		(void)sb_channel_recv_cancel(&j->t->recv[i]);
}

static const sb_future_ops join2_ops = { join2_poll, join2_cancel };

static void a_case_waiting_on_two_channels_takes_both_items_once_it_won(void **state)
{
	(void)state;
	two_channels t;
	two_channels_init(&t, 1, 0);
	join2 j = { &t, { 0, 0 } };
	sb_semaphore sem;
	assert_int_equal(sb_semaphore_init(&sem, 0), 0);
	sb_semaphore_acquire a;
	sb_semaphore_acquire_init(&a, &sem, 1);
	sb_select_case cases[2] = { SB_SELECT_CASE(&j, &join2_ops),
				    SB_SELECT_CASE(&a, &sb_semaphore_acquire_ops) };
	sb_select s;
	assert_int_equal(sb_select_init(&s, cases, 2, 0, 0), 0);
	assert_int_equal(sel_poll(&s, &t.w), SB_PENDING);
	send_int(&t.ch[0], 1); /* claims the join's case */
	send_int(&t.ch[1], 2); /* the same case: it may take this one too */
	assert_int_equal(t.got[1], 2);
	assert_int_equal(sel_poll(&s, &t.w), 0);
	assert_int_equal(sb_select_index(&s), 0);
	assert_int_equal(t.got[0], 1);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
	two_channels_destroy(&t);
}

/* -------------------------------------------------------------- threads */

enum { PER_PRODUCER = 20000 };

typedef struct race {
	sb_channel ch[2];
	int slots[2][4];
} race;

static void *producer(void *arg)
{
	sb_channel *ch = arg;
	for (int k = 1; k <= PER_PRODUCER; k++)
		CHECK(sb_channel_send_blocking(ch, &k, SB_TIMEOUT_INFINITE) == 0);
	return NULL;
}

static void items_racing_a_blocking_select_arrive_exactly_once_and_in_order(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "select racing two producers");
	race r;
	for (int i = 0; i < 2; i++)
		assert_int_equal(sb_channel_init(&r.ch[i], r.slots[i], sizeof(int), 4), 0);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, producer, &r.ch[i]), 0);
	int next[2] = { 1, 1 };
	for (uint32_t round = 0; next[0] <= PER_PRODUCER || next[1] <= PER_PRODUCER; round++) {
		int got[2] = { UNTOUCHED, UNTOUCHED };
		sb_channel_recv rc[2];
		sb_select_case cases[2];
		for (int i = 0; i < 2; i++) {
			sb_channel_recv_init(&rc[i], &r.ch[i], &got[i]);
			cases[i] = (sb_select_case)SB_SELECT_CASE(&rc[i], &sb_channel_recv_ops);
		}
		sb_select s;
		assert_int_equal(sb_select_init(&s, cases, 2, round, 0), 0);
		assert_int_equal(sb_future_wait_blocking(&s, &sb_select_ops, SB_TIMEOUT_INFINITE), 0);
		int i = sb_select_index(&s);
		assert_int_equal(got[i], next[i]); /* in order, none lost, none twice */
		assert_int_equal(got[1 - i], UNTOUCHED);
		next[i]++;
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(sb_channel_len(&r.ch[i]), 0);
		assert_int_equal(sb_channel_destroy(&r.ch[i]), 0);
	}
	sb_watchdog_stop(&wd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_select_is_at_most_64_bytes_and_a_case_32_on_64_bit_targets),
		cmocka_unit_test(init_refuses_bad_arguments_with_einval_and_the_select_polls_to_einval),
		cmocka_unit_test(a_zeroed_select_polls_to_einval),
		cmocka_unit_test(a_ready_case_wins_at_the_first_poll_and_the_others_never_take_effect),
		cmocka_unit_test(the_first_poll_looks_at_every_case_before_any_channel_case_waits),
		cmocka_unit_test(the_first_case_to_complete_wins_and_wakes_the_caller_once),
		cmocka_unit_test(a_waiting_case_keeps_its_clone_across_re_polls),
		cmocka_unit_test(a_re_poll_with_a_new_waker_moves_every_waiting_case_to_it),
		cmocka_unit_test(an_item_never_reaches_a_losing_channel_case),
		cmocka_unit_test(a_rendezvous_send_to_a_losing_case_waits_for_another_receiver),
		cmocka_unit_test(a_send_during_the_select_poll_is_sent_back_and_taken_at_the_next_poll),
		cmocka_unit_test(a_permit_granted_to_a_losing_case_is_handed_back),
		cmocka_unit_test(a_notification_to_a_losing_case_is_passed_on),
		cmocka_unit_test(an_expired_deadline_case_wins_with_etimedout),
		cmocka_unit_test(a_channel_case_under_a_deadline_still_needs_the_claim),
		cmocka_unit_test(a_deadline_around_a_select_cancels_it_and_hands_grants_on),
		cmocka_unit_test(cancel_hands_every_grant_on_and_polls_to_ecanceled),
		cmocka_unit_test(cancel_after_a_channel_claimed_a_case_reports_that_case_done),
		cmocka_unit_test(cancel_of_a_never_polled_select_touches_no_case),
		cmocka_unit_test(with_every_case_ready_each_wins_within_n_rounds),
		cmocka_unit_test(biased_selects_try_the_cases_in_declaration_order),
		cmocka_unit_test(the_seed_picks_the_case_tried_first),
		cmocka_unit_test(two_cases_of_one_select_on_one_channel_never_meet),
		cmocka_unit_test(a_select_nested_as_a_case_completes_with_its_inner_winner),
		cmocka_unit_test(a_case_waiting_on_two_channels_takes_both_items_once_it_won),
		cmocka_unit_test(items_racing_a_blocking_select_arrive_exactly_once_and_in_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
