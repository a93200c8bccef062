/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The soak's condvar tasks: a bounded producer/consumer queue that
 * delivers every item exactly once, and the one-ticket handshake where a
 * notification lost by a cancelled wait is a hang.
 */
#include <errno.h>

#include "soak.h"

/* ------------------------------------------------------------ condvar queue */

/* Producer and consumer: stage 0 lock, 1 locking, 2 holding, 3 waiting. */
int queue_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	bool producer = t->kind == K_PROD;
	for (;;) {
		int r;
		switch (t->stage) {
		case 0:
			if (t->budget == 0)
				return 0;
			op(t);
			if (below(t, 100) < 10) {
				r = sb_mutex_try_lock(&s->qm);
				if (r == -EBUSY) {
					stat_add(t, ST_TRY_FAILED, 1);
					continue;
				}
				CHECK(r == 0);
				set_stage(t, 2);
				CHECK(atomic_fetch_add(&s->q_holders, 1) == 0);
				continue;
			}
			await_lock(t, &s->qm);
			set_stage(t, 1);
			/* fallthrough */
		case 1:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r != 0) {
				set_stage(t, 0);
				continue;
			}
			CHECK(atomic_fetch_add(&s->q_holders, 1) == 0);
			set_stage(t, 2);
			/* fallthrough */
		case 2: /* holding qm */
			if (producer ? s->q_count == QUEUE_CAP : s->q_count == 0) {
				/* The wait gives the mutex up on its first poll. */
				atomic_fetch_sub(&s->q_holders, 1);
				op(t);
				sb_condvar_wait_init(&t->cw, producer ? &s->not_full : &s->not_empty,
						     &s->qm);
				if (below(t, 100) < 4) {
					/* Cancelling a never-polled wait unlocks the mutex. */
					sb_condvar_wait_cancel(&t->cw);
					stat_add(t, ST_CANCEL_IDLE, 1);
					set_stage(t, 0);
					continue;
				}
				await_cv(t);
				set_stage(t, 3);
				continue;
			}
			if (producer) {
				s->items[(s->q_head + s->q_count) % QUEUE_CAP] = t->value++;
				s->q_count++;
			} else {
				long v = s->items[s->q_head];
				CHECK(v >= 0 && v < s->total_items);
				CHECK(++s->seen[v] == 1);
				s->popped++;
				s->popped_sum += v;
				s->q_head = (s->q_head + 1) % QUEUE_CAP;
				s->q_count--;
			}
			t->budget--;
			stat_add(t, ST_DONE, 1);
			op(t);
			{
				sb_condvar *other = producer ? &s->not_empty : &s->not_full;
				if (below(t, 100) < 15)
					sb_condvar_notify_all(other);
				else
					sb_condvar_notify_one(other);
			}
			atomic_fetch_sub(&s->q_holders, 1);
			op(t);
			CHECK(sb_mutex_unlock(&s->qm) == 0);
			set_stage(t, 0);
			continue;
		case 3: /* waiting: 0 means notified and holding qm again */
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r != 0) {
				set_stage(t, 0); /* a cancelled or timed-out wait holds nothing */
				continue;
			}
			CHECK(atomic_fetch_add(&s->q_holders, 1) == 0);
			set_stage(t, 2);
			continue;
		}
	}
}

/* ------------------------------------------------------------ condvar handshake */

/*
 * One ticket at a time: the dealer puts it on the table under hm and
 * notify_one()s ticket_cv, then waits on taken_cv until it is gone.  A
 * taker waits, with no deadline and no cancel, until a ticket is there,
 * takes it and notifies the dealer.  A quitter never takes one: it waits on
 * ticket_cv with a cancel plan or a deadline and walks away (a quitter
 * whose wait completes was notified, so it passes the notification on
 * itself).  A quitter never rescues a notification the library drops, and
 * the takers spend their time asleep, so a cancelled wait that swallows one
 * leaves the ticket on the table: the quitters run out of rounds, and the
 * watchdog reports the hang.
 */
int dealer_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		int r;
		switch (t->stage) {
		case 0:
			if (t->budget == 0)
				return 0;
			op(t);
			await_lock(t, &s->hm);
			set_stage(t, 1);
			/* fallthrough */
		case 1:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r != 0) {
				set_stage(t, 0);
				continue;
			}
			CHECK(atomic_fetch_add(&s->h_holders, 1) == 0);
			set_stage(t, 2);
			/* fallthrough */
		case 2: /* holding hm */
			if (s->slot) {
				atomic_fetch_sub(&s->h_holders, 1);
				op(t);
				sb_condvar_wait_init(&t->cw, &s->taken_cv, &s->hm);
				await_cv(t);
				set_stage(t, 3);
				continue;
			}
			s->slot = 1;
			t->budget--;
			stat_add(t, ST_DONE, 1);
			op(t);
			sb_condvar_notify_one(&s->ticket_cv);
			atomic_fetch_sub(&s->h_holders, 1);
			op(t);
			CHECK(sb_mutex_unlock(&s->hm) == 0);
			set_stage(t, 0);
			continue;
		case 3:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r != 0) {
				set_stage(t, 0); /* the dealer does come back */
				continue;
			}
			CHECK(atomic_fetch_add(&s->h_holders, 1) == 0);
			set_stage(t, 2);
			continue;
		}
	}
}

int hand_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		bool taker = t->index < TAKERS;
		int r;
		switch (t->stage) {
		case 0:
			if (t->value == (taker ? s->per_taker : s->quitter_rounds))
				return 0;
			op(t);
			await_lock(t, &s->hm);
			set_stage(t, 1);
			/* fallthrough */
		case 1:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r != 0) {
				set_stage(t, 0); /* not waiting on ticket_cv yet: lock again */
				continue;
			}
			CHECK(atomic_fetch_add(&s->h_holders, 1) == 0);
			set_stage(t, 2);
			/* fallthrough */
		case 2: /* holding hm */
			if (s->slot && taker) {
				s->slot = 0;
				atomic_fetch_add(&s->tickets_taken, 1);
				stat_add(t, ST_DONE, 1);
				op(t);
				sb_condvar_notify_one(&s->taken_cv);
			} else if (!s->slot || !taker) {
				atomic_fetch_sub(&s->h_holders, 1);
				op(t);
				sb_condvar_wait_init(&t->cw, &s->ticket_cv, &s->hm);
				if (taker) {
					aw_start(t, &t->cw, &sb_condvar_wait_ops, &t->cw.lock.waiter, 0,
						 PLAN_WAIT, NO_DEADLINE);
				} else {
					/*
					 * A quitter: a cancel plan, or a deadline.  A
					 * wait cancelled when woken also has a deadline:
					 * it must leave even if no notification comes.
					 */
					int plan = PLAN_CANCEL_NOW + (int)below(t, 4);
					if (plan > PLAN_CANCEL_ON_WAKE)
						plan = PLAN_WAIT;
					aw_start(t, &t->cw, &sb_condvar_wait_ops, &t->cw.lock.waiter, 0, plan,
						 plan == PLAN_CANCEL_NOW || plan == PLAN_CANCEL_LATER
							 ? NO_DEADLINE : DEADLINE);
				}
				set_stage(t, 3);
				continue;
			}
			atomic_fetch_sub(&s->h_holders, 1);
			op(t);
			CHECK(sb_mutex_unlock(&s->hm) == 0);
			t->value++;
			set_stage(t, 0);
			continue;
		case 3:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (taker) {
				CHECK(r == 0);
				CHECK(atomic_fetch_add(&s->h_holders, 1) == 0);
				set_stage(t, 2); /* re-check: another taker may have been first */
				continue;
			}
			stat_add(t, ST_QUITS, 1);
			if (r == 0) {
				/* Notified, and holding hm: hand the notification on. */
				CHECK(atomic_fetch_add(&s->h_holders, 1) == 0);
				op(t);
				sb_condvar_notify_one(&s->ticket_cv);
				atomic_fetch_sub(&s->h_holders, 1);
				op(t);
				CHECK(sb_mutex_unlock(&s->hm) == 0);
			}
			t->value++;
			set_stage(t, 0);
			continue;
		}
	}
}
