/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The soak's semaphore tasks: random multi-permit acquires (try, plain,
 * with a deadline), held across yields; the permits held never exceed the
 * semaphore's.
 */
#include <errno.h>

#include "soak.h"

/* ------------------------------------------------------------ semaphore */

static size_t pick_permits(soak_task *t)
{
	unsigned r = below(t, 100);
	if (r < 70)
		return 1 + below(t, 2);
	if (r < 95)
		return 3 + below(t, 3);
	return SEM_PERMITS;
}

int sem_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		switch (t->stage) {
		case 0: /* the next acquire */
			if (t->budget <= 0)
				return 0;
			t->n = pick_permits(t);
			op(t);
			if (below(t, 100) < 15) {
				int r = sb_semaphore_try_acquire(&s->sem, t->n);
				if (r == -EAGAIN) {
					stat_add(t, ST_TRY_FAILED, 1);
					continue;
				}
				CHECK(r == 0);
				set_stage(t, 2);
				continue;
			}
			sb_semaphore_acquire_init(&t->acq, &s->sem, t->n);
			aw_start(t, &t->acq, &sb_semaphore_acquire_ops, &t->acq.waiter, t->n,
				 ANY_PLAN, MAYBE_DEADLINE);
			set_stage(t, 1);
			/* fallthrough */
		case 1: {
			int r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			set_stage(t, r == 0 ? 2 : 0);
			continue;
		}
		case 2: { /* acquired t->n */
			int now = atomic_fetch_add(&s->sem_in_use, (int)t->n) + (int)t->n;
			CHECK(now <= SEM_PERMITS);
			stat_add(t, ST_DONE, 1);
			start_hold(t, 2);
			set_stage(t, 3);
		}
			/* fallthrough */
		case 3:
			if (!hold_done(t, w))
				return SB_PENDING;
			atomic_fetch_sub(&s->sem_in_use, (int)t->n);
			if (t->n > 1 && below(t, 4) == 0) { /* give them back in two parts */
				op(t);
				CHECK(sb_semaphore_release(&s->sem, 1) == 0);
				t->n--;
			}
			op(t);
			CHECK(sb_semaphore_release(&s->sem, t->n) == 0);
			set_stage(t, 0);
			continue;
		}
	}
}
