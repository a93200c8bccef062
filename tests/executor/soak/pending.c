/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The soak's tasks left waiting on purpose: one on each primitive, for the
 * group shutdown to cancel, handing back what they hold.
 */
#include <errno.h>
#include <stdio.h>

#include "soak.h"

/* ------------------------------------------------------------ left pending */

int pend_poll(soak_task *t, const sb_waker *w)
{
	struct soak *s = t->s;
	int r;
	if (t->stage == 0) {
		switch (t->index) {
		case PEND_SEM_PARTIAL:
			sb_semaphore_acquire_init(&t->acq, &s->sem, SEM_PERMITS + 1);
			break;
		case PEND_SEM_TIMEOUT:
			sb_semaphore_acquire_init(&t->acq, &s->sem, 1);
			sb_timeout_init(&t->pend_to, &t->acq, &sb_semaphore_acquire_ops,
					3600 * SB_NSEC_PER_SEC);
			break;
		case PEND_MUTEX:
			sb_mutex_lock_init(&t->lock, &s->m);
			break;
		case PEND_CONDVAR:
			CHECK(sb_mutex_try_lock(&s->qm) == 0);
			sb_condvar_wait_init(&t->cw, &s->not_empty, &s->qm);
			break;
		case PEND_EVENT:
			sb_event_wait_init(&t->ew, &s->gate);
			break;
		case PEND_AUTO:
			sb_auto_event_wait_init(&t->aew, &s->ae);
			break;
		}
	}
	switch (t->index) {
	case PEND_SEM_PARTIAL:
		r = sb_semaphore_acquire_poll(&t->acq, w);
		break;
	case PEND_SEM_TIMEOUT:
		r = sb_timeout_poll(&t->pend_to, w);
		break;
	case PEND_MUTEX:
		r = sb_mutex_lock_poll(&t->lock, w);
		break;
	case PEND_CONDVAR:
		r = sb_condvar_wait_poll(&t->cw, w);
		break;
	case PEND_EVENT:
		r = sb_event_wait_poll(&t->ew, w);
		break;
	default:
		r = sb_auto_event_wait_poll(&t->aew, w);
		break;
	}
	if (r != SB_PENDING) {
		fprintf(stderr, "pending task %d (stage %d): poll returned %d\n", t->index,
			t->stage, r);
		CHECK(r == SB_PENDING);
	}
	if (t->stage == 0) {
		set_stage(t, 1);
		CHECK(sb_semaphore_release(&s->started, 1) == 0);
	}
	return SB_PENDING;
}

void pend_cancel(soak_task *t)
{
	switch (t->index) {
	case PEND_SEM_PARTIAL:
		sb_semaphore_acquire_cancel(&t->acq);
		break;
	case PEND_SEM_TIMEOUT:
		sb_timeout_cancel(&t->pend_to);
		break;
	case PEND_MUTEX:
		sb_mutex_lock_cancel(&t->lock);
		break;
	case PEND_CONDVAR:
		sb_condvar_wait_cancel(&t->cw); /* leaves qm unlocked */
		break;
	case PEND_EVENT:
		sb_event_wait_cancel(&t->ew);
		break;
	default:
		sb_auto_event_wait_cancel(&t->aew);
		break;
	}
}
