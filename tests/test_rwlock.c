/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/rwlock.h>

#include "check.h"
#include "clock.h"
#include "counting_waker.h"
#include "watchdog.h"
#include "zeroed_future.h"

/* Polls `f` with a counting waker, so the waker contract is checked too. */
static int poll_with(sb_rwlock_lock *f, counting_waker *c)
{
	sb_waker w = counting_waker_ref(c);
	return sb_rwlock_lock_poll(f, &w);
}

static int poll_noop(sb_rwlock_lock *f)
{
	sb_waker w = sb_waker_noop();
	return sb_rwlock_lock_poll(f, &w);
}

/* A future of `kind` on `rw`, polled once with `c`; returns the poll's result. */
static int start(sb_rwlock_lock *f, sb_rwlock *rw, int kind, counting_waker *c)
{
	switch (kind) {
	case SB_RWLOCK_READ:
		sb_rwlock_read_init(f, rw);
		break;
	case SB_RWLOCK_WRITE:
		sb_rwlock_write_init(f, rw);
		break;
	case SB_RWLOCK_UPGRADABLE:
		sb_rwlock_upgradable_read_init(f, rw);
		break;
	default:
		sb_rwlock_upgrade_init(f, rw);
		break;
	}
	counting_waker_init(c);
	return poll_with(f, c);
}

static void static_initialiser_gives_an_unlocked_rwlock(void **state)
{
	(void)state;
	static sb_rwlock rw = SB_RWLOCK_INIT;
	assert_int_equal(sb_rwlock_readers(&rw), 0);
	assert_false(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_true(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void sizes_fit_the_contract(void **state)
{
	(void)state;
	if (sizeof(void *) != 8)
		skip();
	assert_int_equal(sizeof(sb_rwlock), 40);
	assert_int_equal(sizeof(sb_rwlock_lock), 72);
}

static void readers_share_the_lock_and_a_writer_holds_it_alone(void **state)
{
	(void)state;
	sb_rwlock rw;
	assert_int_equal(sb_rwlock_init(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_readers(&rw), 2);
	assert_int_equal(sb_rwlock_try_write(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_write(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_try_write(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void unlocking_what_is_not_held_fails_with_eperm_and_changes_nothing(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	assert_int_equal(sb_rwlock_read_unlock(&rw), -EPERM);
	assert_int_equal(sb_rwlock_write_unlock(&rw), -EPERM);
	assert_int_equal(sb_rwlock_downgrade(&rw), -EPERM);
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), -EPERM);
	assert_int_equal(sb_rwlock_try_upgrade(&rw), -EPERM);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), -EPERM);
	assert_int_equal(sb_rwlock_downgrade(&rw), -EPERM);
	assert_int_equal(sb_rwlock_readers(&rw), 1);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), -EPERM);
	assert_true(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void a_writer_queues_behind_the_readers_that_came_before_it(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock r1, r2, w;
	counting_waker c1, c2, cw;
	assert_int_equal(start(&r1, &rw, SB_RWLOCK_READ, &c1), 0);
	assert_int_equal(start(&r2, &rw, SB_RWLOCK_READ, &c2), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.wakes), 0);
	assert_int_equal(poll_with(&w, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0); /* the last reader hands over */
	assert_int_equal(atomic_load(&cw.wakes), 1);
	assert_true(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void readers_that_arrive_after_a_queued_writer_wait_for_it(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock w, late;
	counting_waker cw, cl;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	/* the lock is read-held, but a writer is queued: nobody passes it */
	assert_int_equal(sb_rwlock_try_read(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), -EAGAIN);
	assert_int_equal(start(&late, &rw, SB_RWLOCK_READ, &cl), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(poll_with(&late, &cl), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cl.wakes), 1);
	assert_int_equal(poll_with(&late, &cl), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.live) + atomic_load(&cl.live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

/* 40 readers: more than a wake batch, so the run is granted past one. */
static void a_write_unlock_grants_the_whole_run_of_queued_readers_up_to_the_next_writer(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	enum { N = 40 };
	sb_rwlock_lock r[N], w2;
	counting_waker c[N], c2;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(start(&r[i], &rw, SB_RWLOCK_READ, &c[i]), SB_PENDING);
	assert_int_equal(start(&w2, &rw, SB_RWLOCK_WRITE, &c2), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_readers(&rw), N);
	for (int i = 0; i < N; i++) {
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(poll_with(&r[i], &c[i]), 0);
	}
	assert_int_equal(atomic_load(&c2.wakes), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(poll_with(&w2, &c2), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&c[i].live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void phases_alternate_in_arrival_order_so_nobody_starves(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	/* held by a writer; queued: R R W R W */
	static const int kinds[] = { SB_RWLOCK_READ, SB_RWLOCK_READ, SB_RWLOCK_WRITE,
				     SB_RWLOCK_READ, SB_RWLOCK_WRITE };
	enum { N = 5 };
	sb_rwlock_lock f[N];
	counting_waker c[N];
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(start(&f[i], &rw, kinds[i], &c[i]), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	/* phase 1: both readers */
	assert_int_equal(poll_with(&f[0], &c[0]), 0);
	assert_int_equal(poll_with(&f[1], &c[1]), 0);
	assert_int_equal(poll_with(&f[2], &c[2]), SB_PENDING);
	assert_int_equal(poll_with(&f[3], &c[3]), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	/* phase 2: the writer */
	assert_int_equal(poll_with(&f[2], &c[2]), 0);
	assert_int_equal(poll_with(&f[3], &c[3]), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	/* phase 3: the reader; phase 4: the last writer */
	assert_int_equal(poll_with(&f[3], &c[3]), 0);
	assert_int_equal(poll_with(&f[4], &c[4]), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(poll_with(&f[4], &c[4]), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(atomic_load(&c[i].wakes), 1);
		assert_int_equal(atomic_load(&c[i].live), 0);
	}
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void downgrade_keeps_a_read_and_lets_in_the_readers_queued_up_to_the_next_writer(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock r1, r2, w, r3;
	counting_waker c1, c2, cw, c3;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(start(&r1, &rw, SB_RWLOCK_READ, &c1), SB_PENDING);
	assert_int_equal(start(&r2, &rw, SB_RWLOCK_READ, &c2), SB_PENDING);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(start(&r3, &rw, SB_RWLOCK_READ, &c3), SB_PENDING);
	assert_int_equal(sb_rwlock_downgrade(&rw), 0);
	assert_false(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(sb_rwlock_readers(&rw), 3);
	assert_int_equal(poll_with(&r1, &c1), 0);
	assert_int_equal(poll_with(&r2, &c2), 0);
	assert_int_equal(poll_with(&w, &cw), SB_PENDING);
	assert_int_equal(poll_with(&r3, &c3), SB_PENDING);
	assert_int_equal(atomic_load(&c3.wakes), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(poll_with(&r3, &c3), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void downgrade_with_nobody_waiting_is_a_read_lock(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(sb_rwlock_downgrade(&rw), 0);
	assert_int_equal(sb_rwlock_readers(&rw), 1);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_write(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_downgrade(&rw), -EPERM);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void the_upgradable_read_shares_with_readers_and_excludes_a_second_one_and_writers(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0); /* new readers still enter */
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_readers(&rw), 2); /* the upgradable one is not counted */
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_write(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_read_unlock(&rw), -EPERM);
	sb_rwlock_lock u2;
	counting_waker c;
	assert_int_equal(start(&u2, &rw, SB_RWLOCK_UPGRADABLE, &c), SB_PENDING);
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), 0);
	assert_int_equal(atomic_load(&c.wakes), 1);
	assert_int_equal(poll_with(&u2, &c), 0);
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), -EPERM);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void no_reader_enters_beside_the_upgradable_read_once_a_writer_is_queued(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock w, r;
	counting_waker cw, cr;
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_try_read(&rw), -EAGAIN);
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &cr), SB_PENDING);
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), 0);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(poll_with(&r, &cr), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(poll_with(&r, &cr), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void upgrade_waits_for_the_other_readers_and_goes_ahead_of_queued_writers(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock w, up, r;
	counting_waker cw, cu, cr;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(start(&up, &rw, SB_RWLOCK_UPGRADE, &cu), SB_PENDING);
	/* one upgrade at a time; the upgradable read cannot end under it */
	assert_int_equal(sb_rwlock_try_upgrade(&rw), -EBUSY);
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), -EBUSY);
	sb_rwlock_lock second;
	assert_int_equal(start(&second, &rw, SB_RWLOCK_UPGRADE, &cr), -EBUSY);
	/* a pending upgrade keeps new readers out, the queue empty or not */
	assert_int_equal(sb_rwlock_try_read(&rw), -EAGAIN);
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &cr), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0); /* the last other reader */
	assert_int_equal(atomic_load(&cu.wakes), 1);
	assert_int_equal(atomic_load(&cw.wakes), 0);
	assert_int_equal(poll_with(&up, &cu), 0);
	assert_true(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), -EPERM);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(poll_with(&r, &cr), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.live) + atomic_load(&cu.live) + atomic_load(&cr.live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void try_upgrade_succeeds_only_without_plain_readers(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_upgrade(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_upgrade(&rw), 0);
	assert_true(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(sb_rwlock_try_upgrade(&rw), -EPERM);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	/* an uncontended upgrade future completes on its first poll */
	sb_rwlock_lock up;
	counting_waker c;
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(start(&up, &rw, SB_RWLOCK_UPGRADE, &c), 0);
	assert_int_equal(atomic_load(&c.clones), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void an_upgrade_without_the_upgradable_read_fails_with_eperm(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock up;
	counting_waker c;
	assert_int_equal(start(&up, &rw, SB_RWLOCK_UPGRADE, &c), -EPERM);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	sb_rwlock_lock up2;
	assert_int_equal(start(&up2, &rw, SB_RWLOCK_UPGRADE, &c), -EPERM);
	assert_int_equal(sb_rwlock_readers(&rw), 1);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void cancelling_a_granted_reader_releases_its_read(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock r, w;
	counting_waker cr, cw;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &cr), SB_PENDING);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0); /* grants r */
	assert_int_equal(sb_rwlock_readers(&rw), 1);
	sb_rwlock_lock_cancel(&r); /* never saw it: the read goes, the writer enters */
	assert_int_equal(sb_rwlock_readers(&rw), 0);
	assert_int_equal(atomic_load(&cw.wakes), 1);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(poll_with(&r, &cr), -ECANCELED);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cr.live) + atomic_load(&cw.live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void cancelling_a_granted_writer_unlocks_and_passes_the_lock_on(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock w, r1, r2;
	counting_waker cw, c1, c2;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(start(&r1, &rw, SB_RWLOCK_READ, &c1), SB_PENDING);
	assert_int_equal(start(&r2, &rw, SB_RWLOCK_READ, &c2), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0); /* grants w */
	assert_true(sb_rwlock_is_write_locked(&rw));
	sb_rwlock_lock_cancel(&w);
	assert_false(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(sb_rwlock_readers(&rw), 2);
	assert_int_equal(poll_with(&r1, &c1), 0);
	assert_int_equal(poll_with(&r2, &c2), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.live) + atomic_load(&c1.live) + atomic_load(&c2.live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void cancelling_a_granted_upgradable_read_releases_it(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock u, w;
	counting_waker cu, cw;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(start(&u, &rw, SB_RWLOCK_UPGRADABLE, &cu), SB_PENDING);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), -EAGAIN);
	sb_rwlock_lock_cancel(&u);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cu.live) + atomic_load(&cw.live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void cancelling_a_granted_upgrade_gives_back_the_upgradable_read(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock up, r;
	counting_waker cu, cr;
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&up, &rw, SB_RWLOCK_UPGRADE, &cu), SB_PENDING);
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &cr), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0); /* grants the upgrade */
	assert_true(sb_rwlock_is_write_locked(&rw));
	sb_rwlock_lock_cancel(&up);
	/* upgradable read again, and the reader queued behind the upgrade enters */
	assert_false(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(poll_with(&r, &cr), 0);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cu.live) + atomic_load(&cr.live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void cancelling_a_pending_upgrade_keeps_the_upgradable_read_and_lets_readers_in(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock up, r;
	counting_waker cu, cr;
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&up, &rw, SB_RWLOCK_UPGRADE, &cu), SB_PENDING);
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &cr), SB_PENDING);
	sb_rwlock_lock_cancel(&up);
	assert_int_equal(atomic_load(&cr.wakes), 1);
	assert_int_equal(poll_with(&r, &cr), 0);
	assert_int_equal(sb_rwlock_readers(&rw), 2);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_upgrade(&rw), 0); /* it still held the upgradable read */
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cu.live) + atomic_load(&cr.live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void cancelling_the_queued_writer_at_the_head_lets_the_readers_behind_it_in(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock w, r;
	counting_waker cw, cr;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &cr), SB_PENDING);
	sb_rwlock_lock_cancel(&w);
	assert_int_equal(atomic_load(&cw.drops), 1);
	assert_int_equal(atomic_load(&cr.wakes), 1);
	assert_int_equal(poll_with(&r, &cr), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0); /* nobody queued any more */
	for (int i = 0; i < 3; i++)
		assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.live) + atomic_load(&cr.live), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

/* --- a run longer than a wake batch, seen from a wake in its middle --- */

typedef struct cancel_hook {
	sb_rwlock_lock *victim;
	sb_rwlock *rw;
	size_t readers_seen;
} cancel_hook;

static void cancel_the_victim(void *p)
{
	cancel_hook *h = p;
	if (h->victim == NULL)
		return;
	/* the whole run was counted before its first wake ran */
	h->readers_seen = sb_rwlock_readers(h->rw);
	sb_rwlock_lock_cancel(h->victim);
	h->victim = NULL;
}

static void a_reader_of_a_long_run_cancelled_before_it_was_detached_gives_its_read_back(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	enum { N = 40 };
	sb_rwlock_lock r[N], w;
	counting_waker c[N], cw;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(start(&r[i], &rw, SB_RWLOCK_READ, &c[i]), SB_PENDING);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	cancel_hook h = { &r[N - 1], &rw, 0 };
	c[0].on_wake = cancel_the_victim;
	c[0].hook_arg = &h;
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(h.readers_seen, N);
	assert_int_equal(sb_rwlock_readers(&rw), N - 1);
	assert_int_equal(atomic_load(&c[N - 1].wakes), 0);
	assert_int_equal(atomic_load(&c[N - 1].live), 0);
	for (int i = 0; i < N - 1; i++)
		assert_int_equal(poll_with(&r[i], &c[i]), 0);
	for (int i = 0; i < N - 1; i++)
		assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void an_upgrade_that_comes_during_a_long_run_waits_for_all_of_it(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	enum { N = 40 };
	sb_rwlock_lock r[N], up;
	counting_waker c[N], cu;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	sb_rwlock_lock u;
	counting_waker cuu;
	assert_int_equal(start(&u, &rw, SB_RWLOCK_UPGRADABLE, &cuu), SB_PENDING);
	for (int i = 0; i < N; i++)
		assert_int_equal(start(&r[i], &rw, SB_RWLOCK_READ, &c[i]), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(poll_with(&u, &cuu), 0);
	assert_int_equal(sb_rwlock_readers(&rw), N);
	assert_int_equal(start(&up, &rw, SB_RWLOCK_UPGRADE, &cu), SB_PENDING);
	for (int i = 0; i < N; i++) {
		assert_int_equal(poll_with(&r[i], &c[i]), 0);
		assert_int_equal(atomic_load(&cu.wakes), 0);
		assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	}
	assert_int_equal(poll_with(&up, &cu), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void cancel_of_a_completed_or_unpolled_future_changes_nothing(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock r, idle;
	counting_waker c;
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &c), 0);
	sb_rwlock_lock_cancel(&r); /* completed: the caller holds the read */
	assert_int_equal(sb_rwlock_readers(&rw), 1);
	assert_int_equal(poll_with(&r, &c), 0);
	sb_rwlock_write_init(&idle, &rw);
	sb_rwlock_lock_cancel(&idle);
	assert_int_equal(poll_noop(&idle), -ECANCELED);
	sb_rwlock_lock_cancel(&idle);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void cancel_twice_is_harmless(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock w;
	counting_waker c;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &c), SB_PENDING);
	sb_rwlock_lock_cancel(&w);
	sb_rwlock_lock_cancel(&w);
	assert_int_equal(atomic_load(&c.drops), 1);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void destroy_while_held_or_waited_on_is_busy_and_keeps_the_lock_usable(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), -EBUSY);
	sb_rwlock_lock w;
	counting_waker c;
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &c), SB_PENDING);
	assert_int_equal(sb_rwlock_destroy(&rw), -EBUSY);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), -EBUSY);
	assert_int_equal(poll_with(&w, &c), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), -EBUSY);
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void a_future_of_no_known_kind_fails_with_einval(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock f;
	sb_rwlock_read_init(&f, &rw);
	f.kind = 0; /* as if never initialised by one of the *_init */
	assert_int_equal(poll_noop(&f), -EINVAL);
	assert_int_equal(sb_rwlock_readers(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void a_full_reader_count_refuses_another_reader_with_eoverflow(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	/* white box: the count field (ABI, rwlock.h) at its maximum */
	size_t full = SB_RWLOCK_MAX_READERS * SB_RWLOCK_STATE_READER_ONE;
	atomic_store(&rw.q.state, full);
	assert_int_equal(sb_rwlock_try_read(&rw), -EOVERFLOW);
	sb_rwlock_lock r;
	counting_waker c;
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &c), -EOVERFLOW);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_rwlock_readers(&rw), SB_RWLOCK_MAX_READERS);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0); /* not counted */
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(atomic_load(&rw.q.state), full);
}

static void repolling_with_the_same_waker_does_not_clone_again(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock w;
	counting_waker c;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &c), SB_PENDING);
	for (int i = 0; i < 3; i++)
		assert_int_equal(poll_with(&w, &c), SB_PENDING);
	assert_int_equal(atomic_load(&c.clones), 1);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(poll_with(&w, &c), 0);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
}

static void a_different_waker_replaces_the_old_one_which_is_dropped(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock up;
	counting_waker old, fresh;
	counting_waker_init(&fresh);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&up, &rw, SB_RWLOCK_UPGRADE, &old), SB_PENDING);
	assert_int_equal(poll_with(&up, &fresh), SB_PENDING);
	assert_int_equal(atomic_load(&old.drops), 1);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&old.wakes), 0);
	assert_int_equal(atomic_load(&fresh.wakes), 1);
	assert_int_equal(poll_with(&up, &fresh), 0);
	assert_int_equal(atomic_load(&old.live) + atomic_load(&fresh.live), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
}

/* --- waker callbacks that re-enter the rwlock --- */

static void read_unlock_hook(void *rw)
{
	assert_int_equal(sb_rwlock_read_unlock(rw), 0);
}

static void a_writer_whose_waker_clone_releases_the_last_read_takes_the_lock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on the queued path");
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock w;
	counting_waker c;
	counting_waker_init(&c);
	c.on_clone = read_unlock_hook;
	c.hook_arg = &rw;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	sb_rwlock_write_init(&w, &rw);
	/* the clone, made before the lock, frees the lock: the CAS then takes it */
	assert_int_equal(poll_with(&w, &c), 0);
	assert_int_equal(atomic_load(&c.clones), 1);
	assert_int_equal(atomic_load(&c.live), 0);
	assert_true(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	sb_watchdog_stop(&wd);
}

static void repolling_with_a_new_waker_whose_clone_releases_the_last_read_does_not_deadlock(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 30, "re-entrant clone on re-poll");
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock up;
	counting_waker old, fresh;
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&up, &rw, SB_RWLOCK_UPGRADE, &old), SB_PENDING);
	counting_waker_init(&fresh);
	fresh.on_clone = read_unlock_hook;
	fresh.hook_arg = &rw;
	/* the clone's unlock grants the upgrade, waking the old waker */
	assert_int_equal(poll_with(&up, &fresh), 0);
	assert_int_equal(atomic_load(&old.wakes), 1);
	assert_int_equal(atomic_load(&old.live) + atomic_load(&fresh.live), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	sb_watchdog_stop(&wd);
}

static void write_unlock_hook(void *rw)
{
	assert_int_equal(sb_rwlock_write_unlock(rw), 0);
	assert_int_equal(sb_rwlock_try_read(rw), -EAGAIN); /* the next writer has it */
}

static void a_wake_that_unlocks_what_it_was_granted_hands_the_lock_on(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	sb_rwlock_lock w1, w2;
	counting_waker c1, c2;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w1, &rw, SB_RWLOCK_WRITE, &c1), SB_PENDING);
	assert_int_equal(start(&w2, &rw, SB_RWLOCK_WRITE, &c2), SB_PENDING);
	c1.on_wake = write_unlock_hook; /* wakes run after the internal lock is released */
	c1.hook_arg = &rw;
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&c2.wakes), 1);
	assert_int_equal(poll_with(&w2, &c2), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	/* w1 observed nothing, but what it was granted it gave back by hand */
	assert_int_equal(poll_with(&w1, &c1), 0);
	assert_int_equal(atomic_load(&c1.live) + atomic_load(&c2.live), 0);
}

/* --- blocking waits --- */

static void blocking_waits_return_at_once_when_free(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	assert_int_equal(sb_rwlock_read_blocking(&rw, SB_TIMEOUT_INFINITE), 0);
	assert_int_equal(sb_rwlock_upgradable_read_blocking(&rw, SB_TIMEOUT_INFINITE), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_upgrade_blocking(&rw, 0), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_write_blocking(&rw, 0), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void blocking_waits_time_out_and_change_nothing(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_write_blocking(&rw, 0), -ETIMEDOUT);
	assert_int_equal(sb_rwlock_write_blocking(&rw, 2000000), -ETIMEDOUT);
	assert_int_equal(sb_rwlock_try_read(&rw), 0); /* nobody left queued */
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(sb_rwlock_upgrade_blocking(&rw, 2000000), -ETIMEDOUT);
	assert_int_equal(sb_rwlock_upgrade_blocking(&rw, 0), -ETIMEDOUT);
	assert_int_equal(sb_rwlock_try_read(&rw), 0); /* no upgrade left pending */
	assert_int_equal(sb_rwlock_readers(&rw), 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), 0); /* still held */
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(sb_rwlock_read_blocking(&rw, 1000000), -ETIMEDOUT);
	assert_int_equal(sb_rwlock_upgradable_read_blocking(&rw, 0), -ETIMEDOUT);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void *blocking_writer(void *p)
{
	sb_rwlock *rw = p;
	CHECK(sb_rwlock_write_blocking(rw, SB_TIMEOUT_INFINITE) == 0);
	CHECK(sb_rwlock_write_unlock(rw) == 0);
	return NULL;
}

static void a_blocking_writer_is_woken_by_the_last_reader_on_another_thread(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 60, "blocking writer woken by the last reader");
	sb_rwlock rw = SB_RWLOCK_INIT_FIFO;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, blocking_writer, &rw), 0);
	/* white box: NONEMPTY (bit 2) once the writer has queued */
	while (!(atomic_load(&rw.q.state) & SB_WAITQ_NONEMPTY))
		sched_yield();
	assert_int_equal(sb_rwlock_try_read(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	pthread_join(t, NULL);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
	sb_watchdog_stop(&wd);
}

/* --- threads: writers exclude everyone, readers see whole writes --- */

typedef struct shared_data {
	sb_rwlock rw;
	long a, b;          /* a writer keeps a == b; a reader must see them equal */
	atomic_int readers_in;
} shared_data;

enum { ROUNDS = 2000 };

static void *reader_thread(void *p)
{
	shared_data *d = p;
	for (int i = 0; i < ROUNDS; i++) {
		CHECK(sb_rwlock_read_blocking(&d->rw, SB_TIMEOUT_INFINITE) == 0);
		atomic_fetch_add(&d->readers_in, 1);
		CHECK(d->a == d->b);
		atomic_fetch_sub(&d->readers_in, 1);
		CHECK(sb_rwlock_read_unlock(&d->rw) == 0);
	}
	return NULL;
}

static void *writer_thread(void *p)
{
	shared_data *d = p;
	for (int i = 0; i < ROUNDS; i++) {
		if (i % 3 == 0) {
			CHECK(sb_rwlock_upgradable_read_blocking(&d->rw, SB_TIMEOUT_INFINITE) == 0);
			CHECK(sb_rwlock_upgrade_blocking(&d->rw, SB_TIMEOUT_INFINITE) == 0);
		} else {
			CHECK(sb_rwlock_write_blocking(&d->rw, SB_TIMEOUT_INFINITE) == 0);
		}
		CHECK(atomic_load(&d->readers_in) == 0);
		d->a++;
		d->b++;
		if (i % 2 == 0) {
			CHECK(sb_rwlock_downgrade(&d->rw) == 0);
			CHECK(d->a == d->b);
			CHECK(sb_rwlock_read_unlock(&d->rw) == 0);
		} else {
			CHECK(sb_rwlock_write_unlock(&d->rw) == 0);
		}
	}
	return NULL;
}

static void readers_and_writers_on_threads_never_overlap(void **state)
{
	(void)state;
	sb_watchdog wd;
	sb_watchdog_start(&wd, 120, "rwlock threads");
	shared_data d = { .rw = SB_RWLOCK_INIT, .a = 0, .b = 0 };
	atomic_init(&d.readers_in, 0);
	pthread_t t[4];
	assert_int_equal(pthread_create(&t[0], NULL, reader_thread, &d), 0);
	assert_int_equal(pthread_create(&t[1], NULL, reader_thread, &d), 0);
	assert_int_equal(pthread_create(&t[2], NULL, writer_thread, &d), 0);
	assert_int_equal(pthread_create(&t[3], NULL, writer_thread, &d), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(d.a, 2 * ROUNDS);
	assert_int_equal(d.b, 2 * ROUNDS);
	assert_int_equal(sb_rwlock_destroy(&d.rw), 0);
	sb_watchdog_stop(&wd);
}

/* A never-initialised future is bad input, not a completed one. */
static int rwlock_lock_poll_typed(void *f, const sb_waker *w)
{
	return sb_rwlock_lock_poll(f, w);
}

static void a_zeroed_future_polls_to_einval_and_changes_nothing(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock f;
	assert_zeroed_future_is_refused(&f, sizeof f, &sb_rwlock_lock_ops, rwlock_lock_poll_typed);
	assert_int_equal(sb_rwlock_readers(&rw), 0);
	assert_false(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

/* --- eventually fair mode (the default) --- */

/*
 * The library's clock, moved by hand (src/clock.h), installed for every test
 * (main); clock_reads counts its reads.
 */
static uint64_t fake_now = 1000;
static int clock_reads;
static uint64_t fake_clock(void)
{
	clock_reads++;
	return fake_now;
}

/* How often a pass compares the head with the bound (src/fairness.h). */
enum { PASSES_PER_CHECK = 16 };
static const uint64_t BOUND = SB_FAIRNESS_BOUND_NS;

static void a_write_unlock_wakes_the_queued_readers_without_granting_and_a_writer_may_barge(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock r[2], w;
	counting_waker cr[2], cw;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(start(&r[0], &rw, SB_RWLOCK_READ, &cr[0]), SB_PENDING);
	assert_int_equal(start(&r[1], &rw, SB_RWLOCK_READ, &cr[1]), SB_PENDING);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	/* woken, not granted: the lock is free */
	assert_int_equal(atomic_load(&cr[0].wakes), 1);
	assert_int_equal(atomic_load(&cr[1].wakes), 1);
	assert_int_equal(atomic_load(&cw.wakes), 0);
	assert_int_equal(sb_rwlock_readers(&rw), 0);
	assert_false(sb_rwlock_is_write_locked(&rw));
	/* a newcomer takes it past them (within the bound) */
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(poll_with(&r[0], &cr[0]), SB_PENDING); /* lost its retry */
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cr[0].wakes), 2); /* re-armed, woken again */
	assert_int_equal(atomic_load(&cr[1].wakes), 1); /* still woken: not again */
	assert_int_equal(poll_with(&r[0], &cr[0]), 0);
	assert_int_equal(poll_with(&r[1], &cr[1]), 0);
	assert_int_equal(sb_rwlock_readers(&rw), 2);
	assert_int_equal(poll_with(&w, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.wakes), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.wakes), 1); /* the last reader wakes it */
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_true(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

/*
 * The last reader's unlock leaves a woken run at the head alone (it lets in
 * no reader that could not enter before); a reader that queues behind that
 * run while a writer holds, and one whose retry lost to that writer, are
 * woken by the writer's unlock.
 */
static void a_reader_that_queues_behind_a_woken_run_is_woken_by_the_next_write_unlock(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock r[3];
	counting_waker cr[3];
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(start(&r[0], &rw, SB_RWLOCK_READ, &cr[0]), SB_PENDING);
	assert_int_equal(start(&r[1], &rw, SB_RWLOCK_READ, &cr[1]), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cr[0].wakes), 1);
	assert_int_equal(atomic_load(&cr[1].wakes), 1);
	/* a newcomer shares the lock with the woken run, and leaves last */
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cr[0].wakes), 1);
	assert_int_equal(atomic_load(&cr[1].wakes), 1);
	/* a writer passes the run; a reader queues behind it, and the head's
	 * retry loses */
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(start(&r[2], &rw, SB_RWLOCK_READ, &cr[2]), SB_PENDING);
	assert_int_equal(poll_with(&r[0], &cr[0]), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cr[0].wakes), 2); /* re-armed, woken again */
	assert_int_equal(atomic_load(&cr[1].wakes), 1); /* still woken: not again */
	assert_int_equal(atomic_load(&cr[2].wakes), 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(poll_with(&r[i], &cr[i]), 0);
	assert_int_equal(sb_rwlock_readers(&rw), 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void try_read_passes_a_queued_writer_within_the_bound(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock w;
	counting_waker cw;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0);
	assert_int_equal(sb_rwlock_readers(&rw), 2);
	assert_int_equal(sb_rwlock_try_write(&rw), -EAGAIN); /* held: no pass */
	assert_int_equal(sb_rwlock_upgradable_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

/*
 * Readers pass a woken writer (the barge budget: without the queue lock
 * between the checks), and it is compared with the bound at the same passes
 * as without a budget: timed at the first, checked at every 16th, caught at
 * the first check past the bound; the last reader's unlocks wake nobody.
 */
static void readers_pass_a_woken_writer_until_a_check_finds_it_overdue(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock w;
	counting_waker cw;
	const uint64_t step = BOUND / 64;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.wakes), 1); /* woken; it has not retried */
	int before = clock_reads;
	int passes = 0;
	for (; passes < 1000; passes++) {
		fake_now += step;
		if (sb_rwlock_try_read(&rw) != 0)
			break;
		assert_int_equal(sb_rwlock_read_unlock(&rw), 0); /* the last reader */
	}
	/* passes 0, 16, ..., 64 read the clock, 80 finds it overdue and starts
	 * a phase, whose end (the writer's grant) reads it once more */
	assert_int_equal(passes, 5 * PASSES_PER_CHECK);
	assert_int_equal(clock_reads - before, 7);
	assert_int_equal(atomic_load(&cw.wakes), 1);
	assert_true(sb_rwlock_is_write_locked(&rw)); /* handed to it */
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

/*
 * A woken writer whose retry loses to barging readers waits again, and the
 * last of them wakes it again: its retry ended the budget those readers
 * passed it with.
 */
static void a_woken_writer_that_loses_its_retry_is_woken_by_the_last_reader(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock w;
	counting_waker cw;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.wakes), 1);
	assert_int_equal(sb_rwlock_try_read(&rw), 0); /* passes it, timing it */
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(poll_with(&w, &cw), SB_PENDING); /* lost: re-armed */
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.wakes), 1);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0); /* the last one */
	assert_int_equal(atomic_load(&cw.wakes), 2);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

/*
 * Cancelling a woken writer that readers were passing lets the writer
 * behind it be woken by the last reader.
 */
static void cancel_of_a_passed_woken_writer_lets_the_last_reader_wake_the_next(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock w[2];
	counting_waker cw[2];
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w[0], &rw, SB_RWLOCK_WRITE, &cw[0]), SB_PENDING);
	assert_int_equal(start(&w[1], &rw, SB_RWLOCK_WRITE, &cw[1]), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw[0].wakes), 1);
	assert_int_equal(sb_rwlock_try_read(&rw), 0); /* passes it, timing it */
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	sb_rwlock_lock_cancel(&w[0]);
	assert_int_equal(atomic_load(&cw[1].wakes), 0); /* readers hold it */
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw[1].wakes), 1);
	assert_int_equal(poll_with(&w[1], &cw[1]), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

/*
 * With readers passing a woken writer, an upgrade queued meanwhile is still
 * granted by the last plain reader's unlock.
 */
static void the_last_reader_past_a_woken_writer_grants_a_pending_upgrade(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock w, up;
	counting_waker cw, cu;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw.wakes), 1);
	assert_int_equal(sb_rwlock_try_upgradable_read(&rw), 0); /* passes it */
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&up, &rw, SB_RWLOCK_UPGRADE, &cu), SB_PENDING);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cu.wakes), 1);
	assert_true(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(poll_with(&up, &cu), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void a_queue_served_in_order_with_nobody_passing_never_reads_the_clock(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock r, w;
	counting_waker cr, cw;
	int before = clock_reads;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &cr), SB_PENDING);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(poll_with(&r, &cr), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(clock_reads, before);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

/*
 * A stream of overlapping readers passing a queued writer, `step` ns apart,
 * one reader always holding: how many passes were let in before the first
 * refused one (at most max + 1).  The caller holds one read lock.
 */
static int readers_passing_until_refused(sb_rwlock *rw, uint64_t step, int max)
{
	for (int n = 0; n <= max; n++) {
		fake_now += step;
		if (sb_rwlock_try_read(rw) != 0)
			return n;
		assert_int_equal(sb_rwlock_read_unlock(rw), 0); /* one of the others */
	}
	return max + 1;
}

static void a_writer_is_not_starved_by_a_stream_of_readers(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock w, r;
	counting_waker cw, cr;
	const uint64_t step = BOUND / 64;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	int passes = readers_passing_until_refused(&rw, step, 1000);
	/* timed at the first pass, past the bound after 64 more steps, caught
	 * at the next check (every 16th pass) */
	assert_true(passes > 64);
	assert_true(passes <= 65 + PASSES_PER_CHECK);
	/* the handoff phase: readers queue now, behind the writer */
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &cr), SB_PENDING);
	assert_int_equal(sb_rwlock_try_read(&rw), -EAGAIN);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0); /* the last reader */
	assert_true(sb_rwlock_is_write_locked(&rw)); /* handed over */
	assert_int_equal(atomic_load(&cw.wakes), 1);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	/* the phase covered the writer alone: the reader is woken, the lock
	 * free again */
	assert_int_equal(atomic_load(&cr.wakes), 1);
	assert_int_equal(sb_rwlock_readers(&rw), 0);
	assert_int_equal(sb_rwlock_try_write(&rw), 0); /* passes it again */
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(poll_with(&r, &cr), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

/*
 * Writers passing the queue one after another, `step` ns apart: how many
 * took the lock before one was refused (at most max + 1).  The caller holds
 * the write lock, and holds it no more when this returns.
 */
static int writers_passing_until_refused(sb_rwlock *rw, uint64_t step, int max)
{
	for (int n = 0; n <= max; n++) {
		fake_now += step;
		assert_int_equal(sb_rwlock_write_unlock(rw), 0);
		if (sb_rwlock_try_write(rw) != 0)
			return n;
	}
	return max + 1;
}

static void readers_are_not_starved_by_a_stream_of_writers_and_a_woken_head_is_granted(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock r[2];
	counting_waker cr[2];
	const uint64_t step = BOUND / 64;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(start(&r[0], &rw, SB_RWLOCK_READ, &cr[0]), SB_PENDING);
	assert_int_equal(start(&r[1], &rw, SB_RWLOCK_READ, &cr[1]), SB_PENDING);
	int passes = writers_passing_until_refused(&rw, step, 1000);
	assert_true(passes > 64);
	assert_true(passes <= 65 + PASSES_PER_CHECK);
	/* both readers, woken and never polled, were granted at the refusal */
	assert_int_equal(sb_rwlock_readers(&rw), 2);
	assert_int_equal(atomic_load(&cr[0].wakes), 1);
	assert_int_equal(poll_with(&r[0], &cr[0]), 0);
	assert_int_equal(poll_with(&r[1], &cr[1]), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void cancel_of_a_reader_granted_by_a_phase_passes_the_grant_on(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock r, w;
	counting_waker cr, cw;
	const uint64_t step = BOUND / 64;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(start(&r, &rw, SB_RWLOCK_READ, &cr), SB_PENDING);
	assert_int_equal(start(&w, &rw, SB_RWLOCK_WRITE, &cw), SB_PENDING);
	assert_true(writers_passing_until_refused(&rw, step, 1000) <= 1000);
	assert_int_equal(sb_rwlock_readers(&rw), 1); /* granted to r */
	sb_rwlock_lock_cancel(&r); /* never saw it: the phase goes on to w */
	assert_int_equal(sb_rwlock_readers(&rw), 0);
	assert_true(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(atomic_load(&cw.wakes), 1);
	assert_int_equal(poll_with(&w, &cw), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void cancel_of_a_woken_writer_passes_the_wake_on(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock w[2];
	counting_waker cw[2];
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	assert_int_equal(start(&w[0], &rw, SB_RWLOCK_WRITE, &cw[0]), SB_PENDING);
	assert_int_equal(start(&w[1], &rw, SB_RWLOCK_WRITE, &cw[1]), SB_PENDING);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw[0].wakes), 1);
	assert_int_equal(atomic_load(&cw[1].wakes), 0);
	sb_rwlock_lock_cancel(&w[0]);
	assert_int_equal(atomic_load(&cw[1].wakes), 1);
	/* the woken waker was spent, and its stale copy is never dropped */
	assert_int_equal(atomic_load(&cw[0].live), 0);
	assert_int_equal(poll_with(&w[1], &cw[1]), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void a_writer_that_queued_during_a_phase_is_timed_half_a_bound_before_its_end(void **state)
{
	(void)state;
	sb_rwlock rw = SB_RWLOCK_INIT;
	sb_rwlock_lock w[2];
	counting_waker cw[2];
	const uint64_t step = BOUND / 64;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(start(&w[0], &rw, SB_RWLOCK_WRITE, &cw[0]), SB_PENDING);
	assert_true(readers_passing_until_refused(&rw, step, 1000) <= 1000);
	assert_int_equal(start(&w[1], &rw, SB_RWLOCK_WRITE, &cw[1]), SB_PENDING); /* in the phase */
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0); /* the phase's one handoff */
	assert_int_equal(poll_with(&w[0], &cw[0]), 0);
	/* w[1] timed as if passed half a bound ago: readers pass it for about
	 * half a bound more */
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(atomic_load(&cw[1].wakes), 1); /* woken, not handed */
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	int passes = readers_passing_until_refused(&rw, step, 1000);
	assert_true(passes >= 32 - 1);
	assert_true(passes <= 33 + PASSES_PER_CHECK);
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0);
	assert_true(sb_rwlock_is_write_locked(&rw));
	assert_int_equal(poll_with(&w[1], &cw[1]), 0);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(static_initialiser_gives_an_unlocked_rwlock),
		cmocka_unit_test(a_zeroed_future_polls_to_einval_and_changes_nothing),
		cmocka_unit_test(sizes_fit_the_contract),
		cmocka_unit_test(readers_share_the_lock_and_a_writer_holds_it_alone),
		cmocka_unit_test(unlocking_what_is_not_held_fails_with_eperm_and_changes_nothing),
		cmocka_unit_test(a_writer_queues_behind_the_readers_that_came_before_it),
		cmocka_unit_test(readers_that_arrive_after_a_queued_writer_wait_for_it),
		cmocka_unit_test(a_write_unlock_grants_the_whole_run_of_queued_readers_up_to_the_next_writer),
		cmocka_unit_test(phases_alternate_in_arrival_order_so_nobody_starves),
		cmocka_unit_test(downgrade_keeps_a_read_and_lets_in_the_readers_queued_up_to_the_next_writer),
		cmocka_unit_test(downgrade_with_nobody_waiting_is_a_read_lock),
		cmocka_unit_test(the_upgradable_read_shares_with_readers_and_excludes_a_second_one_and_writers),
		cmocka_unit_test(no_reader_enters_beside_the_upgradable_read_once_a_writer_is_queued),
		cmocka_unit_test(upgrade_waits_for_the_other_readers_and_goes_ahead_of_queued_writers),
		cmocka_unit_test(try_upgrade_succeeds_only_without_plain_readers),
		cmocka_unit_test(an_upgrade_without_the_upgradable_read_fails_with_eperm),
		cmocka_unit_test(cancelling_a_granted_reader_releases_its_read),
		cmocka_unit_test(cancelling_a_granted_writer_unlocks_and_passes_the_lock_on),
		cmocka_unit_test(cancelling_a_granted_upgradable_read_releases_it),
		cmocka_unit_test(cancelling_a_granted_upgrade_gives_back_the_upgradable_read),
		cmocka_unit_test(cancelling_a_pending_upgrade_keeps_the_upgradable_read_and_lets_readers_in),
		cmocka_unit_test(cancelling_the_queued_writer_at_the_head_lets_the_readers_behind_it_in),
		cmocka_unit_test(a_reader_of_a_long_run_cancelled_before_it_was_detached_gives_its_read_back),
		cmocka_unit_test(an_upgrade_that_comes_during_a_long_run_waits_for_all_of_it),
		cmocka_unit_test(cancel_of_a_completed_or_unpolled_future_changes_nothing),
		cmocka_unit_test(cancel_twice_is_harmless),
		cmocka_unit_test(destroy_while_held_or_waited_on_is_busy_and_keeps_the_lock_usable),
		cmocka_unit_test(a_future_of_no_known_kind_fails_with_einval),
		cmocka_unit_test(a_full_reader_count_refuses_another_reader_with_eoverflow),
		cmocka_unit_test(repolling_with_the_same_waker_does_not_clone_again),
		cmocka_unit_test(a_different_waker_replaces_the_old_one_which_is_dropped),
		cmocka_unit_test(a_writer_whose_waker_clone_releases_the_last_read_takes_the_lock),
		cmocka_unit_test(repolling_with_a_new_waker_whose_clone_releases_the_last_read_does_not_deadlock),
		cmocka_unit_test(a_wake_that_unlocks_what_it_was_granted_hands_the_lock_on),
		cmocka_unit_test(blocking_waits_return_at_once_when_free),
		cmocka_unit_test(blocking_waits_time_out_and_change_nothing),
		cmocka_unit_test(a_blocking_writer_is_woken_by_the_last_reader_on_another_thread),
		cmocka_unit_test(readers_and_writers_on_threads_never_overlap),
		cmocka_unit_test(a_write_unlock_wakes_the_queued_readers_without_granting_and_a_writer_may_barge),
		cmocka_unit_test(a_reader_that_queues_behind_a_woken_run_is_woken_by_the_next_write_unlock),
		cmocka_unit_test(try_read_passes_a_queued_writer_within_the_bound),
		cmocka_unit_test(readers_pass_a_woken_writer_until_a_check_finds_it_overdue),
		cmocka_unit_test(a_woken_writer_that_loses_its_retry_is_woken_by_the_last_reader),
		cmocka_unit_test(cancel_of_a_passed_woken_writer_lets_the_last_reader_wake_the_next),
		cmocka_unit_test(the_last_reader_past_a_woken_writer_grants_a_pending_upgrade),
		cmocka_unit_test(a_queue_served_in_order_with_nobody_passing_never_reads_the_clock),
		cmocka_unit_test(a_writer_is_not_starved_by_a_stream_of_readers),
		cmocka_unit_test(readers_are_not_starved_by_a_stream_of_writers_and_a_woken_head_is_granted),
		cmocka_unit_test(cancel_of_a_reader_granted_by_a_phase_passes_the_grant_on),
		cmocka_unit_test(cancel_of_a_woken_writer_passes_the_wake_on),
		cmocka_unit_test(a_writer_that_queued_during_a_phase_is_timed_half_a_bound_before_its_end),
	};
	sb__clock_set(fake_clock);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
