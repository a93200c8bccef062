/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The soak's event tasks: a phaser (a reusable barrier) over two manual
 * events, and one signal passed from task to task through an auto-reset
 * event.
 */
#include <errno.h>

#include "soak.h"

/* ------------------------------------------------------------ phaser (manual events) */

/*
 * Every phaser takes part in every phase p: it registers a wait on
 * ev[p & 1], then arrives.  The last to arrive leads: it resets the other
 * event (everybody has left the previous phase), picks the next phase's
 * mode, publishes p and sets ev[p & 1]; in PULSE mode it resets it at once,
 * so the waits the set released must complete although the event is clear.
 * Stage 0 registers and arrives, 1 waits.
 */
int phase_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		long p = t->phase;
		int slot = (int)(p & 1);
		int r;
		switch (t->stage) {
		case 0: {
			if (p == s->phases)
				return 0;
			op(t);
			sb_event_wait_init(&t->ew, &s->ev[slot]);
			/* Nobody sets ev[slot] before we arrive, and the previous
			 * phase's leader reset it before releasing us. */
			CHECK(sb_event_wait_poll(&t->ew, w) == SB_PENDING);
			if (below(t, 100) < 10) {
				/* Cancel before any set, and register again. */
				stat_add(t, ST_CANCEL_QUEUED, 1);
				sb_event_wait_cancel(&t->ew);
				op(t);
				sb_event_wait_init(&t->ew, &s->ev[slot]);
				CHECK(sb_event_wait_poll(&t->ew, w) == SB_PENDING);
			}
			/* acq_rel: the leader (the last to arrive) sees every
			 * registration, and its own later writes are ordered after
			 * every participant's use of the previous phase. */
			int a = atomic_fetch_add(&s->arrived[slot], 1) + 1;
			int mode = s->mode[slot];
			if (a < PHASERS) {
				int plan = ANY_PLAN;
				if (mode == MODE_PULSE) /* a cancelled wait would miss the pulse */
					plan = PLAN_WAIT;
				aw_start(t, &t->ew, &sb_event_wait_ops, &t->ew.waiter, 0, plan,
					 mode == MODE_KEEP ? MAYBE_DEADLINE : NO_DEADLINE);
				/* Often: poll it again only after the pulse. */
				if (mode == MODE_PULSE && below(t, 2))
					aw_delay(t, 1 + (int)below(t, 3));
				set_stage(t, 1);
				continue;
			}
			/* The leader. */
			CHECK(a == PHASERS);
			CHECK(atomic_load(&s->published) == p - 1);
			/* relaxed: the next arrival on this slot (phase p + 2) comes
			 * after ev[slot]'s set below and the next phase's arrivals. */
			atomic_store_explicit(&s->arrived[slot], 0, memory_order_relaxed);
			op(t);
			sb_event_reset(&s->ev[slot ^ 1]);
			s->mode[slot ^ 1] = below(t, 100) < 35 ? MODE_PULSE : MODE_KEEP;
			atomic_store(&s->published, p);
			op(t);
			sb_event_set(&s->ev[slot]);
			if (mode == MODE_PULSE) {
				op(t);
				sb_event_reset(&s->ev[slot]);
				stat_add(t, ST_PULSES, 1);
			}
			/* Our own wait was registered before the set: released. */
			CHECK(sb_event_wait_poll(&t->ew, w) == 0);
			stat_add(t, ST_DONE, 1);
			t->phase++;
			continue;
		}
		case 1:
			r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			if (r == 0) {
				CHECK(atomic_load(&s->published) >= p);
				stat_add(t, ST_DONE, 1);
				t->phase++;
				set_stage(t, 0);
				continue;
			}
			/* Cancelled or timed out (KEEP mode only): wait again.  If the
			 * set had already released the cancelled wait, the event is
			 * still set (only the next phase's leader resets it), so the
			 * new wait completes at once. */
			CHECK(s->mode[slot] == MODE_KEEP);
			op(t);
			sb_event_wait_init(&t->ew, &s->ev[slot]);
			if (r == -ECANCELED && t->aw.cancelled_granted) {
				CHECK(sb_event_wait_poll(&t->ew, w) == 0);
				CHECK(atomic_load(&s->published) >= p);
				stat_add(t, ST_DONE, 1);
				t->phase++;
				set_stage(t, 0);
				continue;
			}
			aw_start(t, &t->ew, &sb_event_wait_ops, &t->ew.waiter, 0, ANY_PLAN,
				 MAYBE_DEADLINE);
			continue;
		}
	}
}

/* ------------------------------------------------------------ auto event */

int auto_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		switch (t->stage) {
		case 0:
			if (t->budget <= 0)
				return 0;
			op(t);
			if (below(t, 100) < 15) {
				int r = sb_auto_event_try_wait(&s->ae);
				if (r == 0) {
					set_stage(t, 2);
					continue;
				}
				CHECK(r == -EAGAIN);
				stat_add(t, ST_TRY_FAILED, 1);
				op(t);
			}
			sb_auto_event_wait_init(&t->aew, &s->ae);
			aw_start(t, &t->aew, &sb_auto_event_wait_ops, &t->aew.waiter, 0, ANY_PLAN,
				 MAYBE_DEADLINE);
			set_stage(t, 1);
			/* fallthrough */
		case 1: {
			int r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			set_stage(t, r == 0 ? 2 : 0);
			continue;
		}
		case 2: /* holding the signal */
			CHECK(atomic_fetch_add(&s->token_holders, 1) == 0);
			atomic_fetch_add(&s->token_takes, 1);
			stat_add(t, ST_DONE, 1);
			start_hold(t, 1);
			set_stage(t, 3);
			/* fallthrough */
		case 3:
			if (!hold_done(t, w))
				return SB_PENDING;
			atomic_fetch_sub(&s->token_holders, 1);
			atomic_fetch_add(&s->token_sets, 1);
			op(t);
			sb_auto_event_set(&s->ae);
			set_stage(t, 0);
			continue;
		}
	}
}
