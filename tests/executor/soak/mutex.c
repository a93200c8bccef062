/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The soak's mutex tasks: a plain counter the mutex protects, against a
 * count of the critical sections kept with atomics.
 */
#include <errno.h>

#include "soak.h"

/* ------------------------------------------------------------ mutex */

int mutex_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	for (;;) {
		switch (t->stage) {
		case 0:
			if (t->budget <= 0)
				return 0;
			op(t);
			if (below(t, 100) < 10) {
				int r = sb_mutex_try_lock(&s->m);
				if (r == -EBUSY) {
					stat_add(t, ST_TRY_FAILED, 1);
					continue;
				}
				CHECK(r == 0);
				set_stage(t, 2);
				continue;
			}
			await_lock(t, &s->m);
			set_stage(t, 1);
			/* fallthrough */
		case 1: {
			int r = aw_poll(t, w);
			if (r == SB_PENDING)
				return r;
			set_stage(t, r == 0 ? 2 : 0);
			continue;
		}
		case 2: /* holding the mutex */
			CHECK(atomic_fetch_add(&s->m_holders, 1) == 0);
			t->value = s->counter;
			start_hold(t, 1);
			set_stage(t, 3);
			/* fallthrough */
		case 3:
			if (!hold_done(t, w))
				return SB_PENDING;
			s->counter = t->value + 1;
			atomic_fetch_sub(&s->m_holders, 1);
			atomic_fetch_add(&s->sections, 1);
			stat_add(t, ST_DONE, 1);
			op(t);
			CHECK(sb_mutex_unlock(&s->m) == 0);
			set_stage(t, 0);
			continue;
		}
	}
}
