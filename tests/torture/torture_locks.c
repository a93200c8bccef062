/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The torture of the locks: semaphore and semaphore-fifo (permits in use
 * never above the count, all back at the end of each round; the semaphore
 * is closed and replaced every 100 ms), mutex and mutex-fifo (mutual
 * exclusion), rwlock and rwlock-fifo
 * (writers alone, readers never with a writer, the upgradable read alone,
 * upgrades and downgrades), condvar (mutual exclusion under its mutex, a
 * notified wait holds the mutex again, a cancelled or timed-out one does not).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "torture.h"

static void no_release(torture_contender *c)
{
	VIOLATION(c, "released without a hold");
}

static void nothing(void)
{
}

/* --------------------------------------------------------------- semaphore */

enum { SEM_PERMITS = 3 };

static struct {
	sb_semaphore s;
	atomic_long in_use;
} sems[TORTURE_SLOTS];
static torture_slots sem_slots;
static atomic_long sem_shutdowns, sem_rounds;
static unsigned sem_ticks;
static bool sem_fifo; /* semaphore-fifo: strict FIFO; semaphore: eventually fair */

static void sem_init_slot(int i)
{
	if (sem_fifo)
		sb_semaphore_init_fifo(&sems[i].s, SEM_PERMITS);
	else
		sb_semaphore_init(&sems[i].s, SEM_PERMITS);
}

static void sem_setup(void)
{
	memset(&sem_slots, 0, sizeof sem_slots);
	for (int i = 0; i < TORTURE_SLOTS; i++) {
		sem_init_slot(i);
		atomic_store(&sems[i].in_use, 0);
	}
	atomic_store(&sem_shutdowns, 0);
	atomic_store(&sem_rounds, 0);
	sem_ticks = 0;
}

static void sem_hold(torture_contender *c)
{
	long in_use = atomic_fetch_add(&sems[c->slot].in_use, (long)c->n) + (long)c->n;
	if (in_use > SEM_PERMITS)
		VIOLATION(c, "%ld permits in use of %d", in_use, SEM_PERMITS);
}

static void sem_release(torture_contender *c)
{
	atomic_fetch_sub(&sems[c->slot].in_use, (long)c->n);
	int r = sb_semaphore_release(&sems[c->slot].s, c->n);
	if (r != 0)
		VIOLATION(c, "release of %zu permits: %d", c->n, r);
	torture_slot_leave(&sem_slots, c->slot);
	torture_op(c);
}

/* An acquire that did not complete: why. */
static void sem_failed(torture_contender *c, int r)
{
	if (r == -ESHUTDOWN)
		atomic_fetch_add(&sem_shutdowns, 1);
	else if (r != -ETIMEDOUT && r != -ECANCELED && r != -EAGAIN)
		VIOLATION(c, "acquire of %zu permits: %d", c->n, r);
	torture_slot_leave(&sem_slots, c->slot);
}

static void sem_blocking(torture_contender *c, uint64_t to)
{
	c->slot = torture_slot_enter(&sem_slots);
	c->n = 1 + torture_rand(&c->seed) % 2;
	int r = sb_semaphore_acquire_blocking(&sems[c->slot].s, c->n, to);
	if (r == 0) {
		sem_hold(c);
		torture_crit(c);
		sem_release(c);
		return;
	}
	if (r == -ETIMEDOUT)
		torture_timeout(c);
	sem_failed(c, r);
}

static int sem_begin(torture_contender *c)
{
	c->slot = torture_slot_enter(&sem_slots);
	c->n = 1 + torture_rand(&c->seed) % 2;
	if (torture_rand(&c->seed) % 4 == 0) {
		int r = sb_semaphore_try_acquire(&sems[c->slot].s, c->n);
		if (r == 0) {
			sem_hold(c);
			torture_crit(c);
			sem_release(c);
		} else {
			sem_failed(c, r);
		}
		return 1;
	}
	sb_semaphore_acquire_init(&c->f.sem, &sems[c->slot].s, c->n);
	c->fut = &c->f.sem;
	c->fops = &sb_semaphore_acquire_ops;
	return 0;
}

static int sem_done(torture_contender *c, int r)
{
	if (r == 0) {
		sem_hold(c);
		return T_HOLD;
	}
	sem_failed(c, r);
	return T_DONE;
}

/* The slot a round left behind: every permit back, nobody waiting. */
static void sem_check_idle(int i)
{
	long in_use = atomic_load(&sems[i].in_use);
	size_t avail = sb_semaphore_available(&sems[i].s);
	if (in_use != 0 || avail != SEM_PERMITS)
		VIOLATION(NULL, "a semaphore of round %ld ended with %ld permits in use, %zu of %d "
			  "available", sem_slots.rounds, in_use, avail, SEM_PERMITS);
	int r = sb_semaphore_destroy(&sems[i].s);
	if (r != 0)
		VIOLATION(NULL, "destroy of an idle semaphore: %d", r);
}

/* Every 100 ms: a fresh semaphore for newcomers, and the current one closed. */
static void sem_tick(void)
{
	if (++sem_ticks % 100)
		return;
	int next = torture_slot_next_free(&sem_slots);
	if (next < 0)
		return;
	sem_check_idle(next);
	sem_init_slot(next);
	int old = atomic_load(&sem_slots.cur);
	atomic_store(&sem_slots.cur, next);
	sb_semaphore_close(&sems[old].s);
	sem_slots.rounds++;
	atomic_fetch_add(&sem_rounds, 1);
}

static void sem_stop_tick(void)
{
	sb_semaphore_close(&sems[atomic_load(&sem_slots.cur)].s);
}

static void sem_teardown(void)
{
	for (int i = 0; i < TORTURE_SLOTS; i++) {
		if (atomic_load(&sem_slots.users[i]) != 0)
			VIOLATION(NULL, "a semaphore still has users after the run");
		sem_check_idle(i);
	}
}

static void sem_describe(char *buf, size_t size)
{
	snprintf(buf, size, "closed and replaced %ld times, %ld acquires failed -ESHUTDOWN",
		 atomic_load(&sem_rounds), atomic_load(&sem_shutdowns));
}

static void sem_setup_fair(void)
{
	sem_fifo = false;
	sem_setup();
}

static void sem_setup_fifo(void)
{
	sem_fifo = true;
	sem_setup();
}

const torture_prim torture_semaphore = {
	"semaphore", sem_setup_fair, sem_blocking, sem_begin, sem_done, sem_release,
	sem_tick, sem_stop_tick, sem_teardown, sem_describe, 800,
};

const torture_prim torture_semaphore_fifo = {
	"semaphore-fifo", sem_setup_fifo, sem_blocking, sem_begin, sem_done, sem_release,
	sem_tick, sem_stop_tick, sem_teardown, sem_describe, 950,
};

/* ------------------------------------------------------------------ mutex */

static sb_mutex mx;
static atomic_int mx_holders;

static void mx_enter(torture_contender *c, atomic_int *holders)
{
	int h = atomic_fetch_add(holders, 1);
	if (h != 0)
		VIOLATION(c, "mutual exclusion: %d others hold the mutex", h);
}

static void mx_unlock(torture_contender *c)
{
	atomic_fetch_sub(&mx_holders, 1);
	int r = sb_mutex_unlock(&mx);
	if (r != 0)
		VIOLATION(c, "unlock: %d", r);
	torture_op(c);
}

static void mx_setup_fair(void)
{
	sb_mutex_init(&mx);
	atomic_store(&mx_holders, 0);
}

static void mx_setup_fifo(void)
{
	sb_mutex_init_fifo(&mx);
	atomic_store(&mx_holders, 0);
}

static void mx_blocking(torture_contender *c, uint64_t to)
{
	int r = sb_mutex_lock_blocking(&mx, to);
	if (r == -ETIMEDOUT) {
		torture_timeout(c);
		return;
	}
	if (r != 0)
		VIOLATION(c, "lock_blocking: %d", r);
	mx_enter(c, &mx_holders);
	torture_crit(c);
	mx_unlock(c);
}

static int mx_begin(torture_contender *c)
{
	if (torture_rand(&c->seed) % 4 == 0) {
		int r = sb_mutex_try_lock(&mx);
		if (r == 0) {
			mx_enter(c, &mx_holders);
			torture_crit(c);
			mx_unlock(c);
		} else if (r != -EBUSY) {
			VIOLATION(c, "try_lock: %d", r);
		}
		return 1;
	}
	sb_mutex_lock_init(&c->f.mutex, &mx);
	c->fut = &c->f.mutex;
	c->fops = &sb_mutex_lock_ops;
	return 0;
}

static int mx_done(torture_contender *c, int r)
{
	if (r == 0) {
		mx_enter(c, &mx_holders);
		return T_HOLD;
	}
	if (r != -ETIMEDOUT && r != -ECANCELED)
		VIOLATION(c, "lock: %d", r);
	return T_DONE;
}

static void mx_teardown(void)
{
	if (sb_mutex_is_locked(&mx) || atomic_load(&mx_holders))
		VIOLATION(NULL, "the mutex is locked after the run");
	int r = sb_mutex_destroy(&mx);
	if (r != 0)
		VIOLATION(NULL, "destroy: %d", r);
}

const torture_prim torture_mutex = {
	"mutex", mx_setup_fair, mx_blocking, mx_begin, mx_done, mx_unlock,
	nothing, nothing, mx_teardown, NULL, 800,
};

const torture_prim torture_mutex_fifo = {
	"mutex-fifo", mx_setup_fifo, mx_blocking, mx_begin, mx_done, mx_unlock,
	nothing, nothing, mx_teardown, NULL, 950,
};

/* ----------------------------------------------------------------- rwlock */

static sb_rwlock rw;
static atomic_long rw_readers, rw_writers, rw_upgradable;
static atomic_long rw_upgrades, rw_downgrades;

enum { K_READ = 1, K_WRITE, K_UPGRADABLE, K_UPGRADE, K_UPGRADED };

static void rw_reader_enter(torture_contender *c)
{
	atomic_fetch_add(&rw_readers, 1);
	long w = atomic_load(&rw_writers);
	if (w != 0)
		VIOLATION(c, "a reader holds the rwlock with %ld writers", w);
}

static void rw_reader_exit(void)
{
	atomic_fetch_sub(&rw_readers, 1);
}

static void rw_writer_enter(torture_contender *c)
{
	long w = atomic_fetch_add(&rw_writers, 1);
	long r = atomic_load(&rw_readers);
	if (w != 0 || r != 0)
		VIOLATION(c, "a writer holds the rwlock with %ld other writers and %ld readers", w,
			  r);
}

static void rw_upgradable_enter(torture_contender *c)
{
	long u = atomic_fetch_add(&rw_upgradable, 1);
	if (u != 0)
		VIOLATION(c, "two hold the upgradable read");
	rw_reader_enter(c);
}

static void rw_check(torture_contender *c, int r, const char *what)
{
	if (r != 0)
		VIOLATION(c, "%s: %d", what, r);
}

/* Releases what c->kind says is held. */
static void rw_release(torture_contender *c)
{
	switch (c->kind) {
	case K_READ:
		rw_reader_exit();
		rw_check(c, sb_rwlock_read_unlock(&rw), "read_unlock");
		break;
	case K_WRITE:
		if (torture_rand(&c->seed) % 3 == 0) {
			atomic_fetch_sub(&rw_writers, 1);
			rw_reader_enter(c);
			rw_check(c, sb_rwlock_downgrade(&rw), "downgrade");
			atomic_fetch_add(&rw_downgrades, 1);
			torture_crit(c);
			rw_reader_exit();
			rw_check(c, sb_rwlock_read_unlock(&rw), "read_unlock after downgrade");
		} else {
			atomic_fetch_sub(&rw_writers, 1);
			rw_check(c, sb_rwlock_write_unlock(&rw), "write_unlock");
		}
		break;
	case K_UPGRADABLE:
		rw_reader_exit();
		atomic_fetch_sub(&rw_upgradable, 1);
		rw_check(c, sb_rwlock_upgradable_unlock(&rw), "upgradable_unlock");
		break;
	case K_UPGRADED:
		atomic_fetch_sub(&rw_writers, 1);
		atomic_fetch_sub(&rw_upgradable, 1);
		rw_check(c, sb_rwlock_write_unlock(&rw), "write_unlock after upgrade");
		break;
	default:
		VIOLATION(c, "release of kind %d", c->kind);
	}
	c->kind = 0;
	torture_op(c);
}

/* Holding the upgradable read: the upgrade succeeded. */
static void rw_upgraded(torture_contender *c)
{
	rw_reader_exit();
	rw_writer_enter(c);
	atomic_fetch_add(&rw_upgrades, 1);
	c->kind = K_UPGRADED;
}

static void rw_setup_with(int (*init)(sb_rwlock *))
{
	init(&rw);
	atomic_store(&rw_readers, 0);
	atomic_store(&rw_writers, 0);
	atomic_store(&rw_upgradable, 0);
	atomic_store(&rw_upgrades, 0);
	atomic_store(&rw_downgrades, 0);
}

static void rw_setup_fair(void)
{
	rw_setup_with(sb_rwlock_init);
}

static void rw_setup_fifo(void)
{
	rw_setup_with(sb_rwlock_init_fifo);
}

static int rw_pick(torture_contender *c)
{
	unsigned k = torture_rand(&c->seed) % 10;
	return k < 5 ? K_READ : k < 8 ? K_WRITE : K_UPGRADABLE;
}

static void rw_blocking(torture_contender *c, uint64_t to)
{
	c->kind = rw_pick(c);
	int r = c->kind == K_READ    ? sb_rwlock_read_blocking(&rw, to)
		: c->kind == K_WRITE ? sb_rwlock_write_blocking(&rw, to)
				     : sb_rwlock_upgradable_read_blocking(&rw, to);
	if (r == -ETIMEDOUT) {
		torture_timeout(c);
		c->kind = 0;
		return;
	}
	rw_check(c, r, "blocking lock");
	if (c->kind == K_READ)
		rw_reader_enter(c);
	else if (c->kind == K_WRITE)
		rw_writer_enter(c);
	else
		rw_upgradable_enter(c);
	torture_crit(c);
	if (c->kind == K_UPGRADABLE && torture_rand(&c->seed) % 2) {
		r = sb_rwlock_upgrade_blocking(&rw, torture_pick_timeout(&c->seed));
		if (r == 0) {
			rw_upgraded(c);
			torture_crit(c);
		} else if (r == -ETIMEDOUT) {
			torture_timeout(c);
		} else {
			VIOLATION(c, "upgrade_blocking: %d", r);
		}
	}
	rw_release(c);
}

static int rw_begin(torture_contender *c)
{
	if (c->kind == K_UPGRADE) {
		sb_rwlock_upgrade_init(&c->f.rw, &rw);
	} else {
		c->kind = rw_pick(c);
		if (torture_rand(&c->seed) % 5 == 0) {
			int r = c->kind == K_READ    ? sb_rwlock_try_read(&rw)
				: c->kind == K_WRITE ? sb_rwlock_try_write(&rw)
						     : sb_rwlock_try_upgradable_read(&rw);
			if (r != 0) {
				if (r != -EAGAIN)
					VIOLATION(c, "try lock: %d", r);
				c->kind = 0;
				return 1;
			}
			if (c->kind == K_READ)
				rw_reader_enter(c);
			else if (c->kind == K_WRITE)
				rw_writer_enter(c);
			else
				rw_upgradable_enter(c);
			torture_crit(c);
			if (c->kind == K_UPGRADABLE) {
				r = sb_rwlock_try_upgrade(&rw);
				if (r == 0)
					rw_upgraded(c);
				else if (r != -EAGAIN)
					VIOLATION(c, "try_upgrade: %d", r);
			}
			rw_release(c);
			return 1;
		}
		if (c->kind == K_READ)
			sb_rwlock_read_init(&c->f.rw, &rw);
		else if (c->kind == K_WRITE)
			sb_rwlock_write_init(&c->f.rw, &rw);
		else
			sb_rwlock_upgradable_read_init(&c->f.rw, &rw);
	}
	c->fut = &c->f.rw;
	c->fops = &sb_rwlock_lock_ops;
	return 0;
}

static int rw_done(torture_contender *c, int r)
{
	if (c->kind == K_UPGRADE) {
		/* a failed or cancelled upgrade keeps the upgradable read */
		if (r == 0) {
			rw_upgraded(c);
			return T_HOLD;
		}
		if (r != -ETIMEDOUT && r != -ECANCELED)
			VIOLATION(c, "upgrade: %d", r);
		c->kind = K_UPGRADABLE;
		return T_HOLD;
	}
	if (r != 0) {
		if (r != -ETIMEDOUT && r != -ECANCELED)
			VIOLATION(c, "lock of kind %d: %d", c->kind, r);
		c->kind = 0;
		return T_DONE;
	}
	if (c->kind == K_READ) {
		rw_reader_enter(c);
	} else if (c->kind == K_WRITE) {
		rw_writer_enter(c);
	} else {
		rw_upgradable_enter(c);
		if (torture_rand(&c->seed) % 2) {
			torture_crit(c);
			c->kind = K_UPGRADE;
			return T_AGAIN;
		}
	}
	return T_HOLD;
}

static void rw_teardown(void)
{
	if (sb_rwlock_readers(&rw) || sb_rwlock_is_write_locked(&rw) || atomic_load(&rw_readers) ||
	    atomic_load(&rw_writers) || atomic_load(&rw_upgradable))
		VIOLATION(NULL, "the rwlock is held after the run");
	int r = sb_rwlock_destroy(&rw);
	if (r != 0)
		VIOLATION(NULL, "destroy: %d", r);
}

static void rw_describe(char *buf, size_t size)
{
	snprintf(buf, size, "upgrades %ld, downgrades %ld", atomic_load(&rw_upgrades),
		 atomic_load(&rw_downgrades));
}

const torture_prim torture_rwlock = {
	"rwlock", rw_setup_fair, rw_blocking, rw_begin, rw_done, rw_release,
	nothing, nothing, rw_teardown, rw_describe, 800,
};

const torture_prim torture_rwlock_fifo = {
	"rwlock-fifo", rw_setup_fifo, rw_blocking, rw_begin, rw_done, rw_release,
	nothing, nothing, rw_teardown, rw_describe, 950,
};

/* ---------------------------------------------------------------- condvar */

static sb_mutex cvm;
static sb_condvar cv;
static atomic_int cv_holders;
static atomic_long cv_signals, cv_notifies, cv_woken;

enum { CV_LOCK, CV_WAIT };
enum { ROLE_WAITER, ROLE_NOTIFIER };

static void cv_setup(void)
{
	sb_mutex_init(&cvm);
	sb_condvar_init(&cv);
	atomic_store(&cv_holders, 0);
	atomic_store(&cv_signals, 0);
	atomic_store(&cv_notifies, 0);
	atomic_store(&cv_woken, 0);
}

static void cv_unlock(torture_contender *c)
{
	atomic_fetch_sub(&cv_holders, 1);
	int r = sb_mutex_unlock(&cvm);
	if (r != 0)
		VIOLATION(c, "unlock of the condvar's mutex: %d", r);
}

/* Holding the mutex: a notify (signals count under the mutex). */
static void cv_notify(torture_contender *c, long signals, bool all)
{
	atomic_store(&cv_signals, atomic_load(&cv_signals) + signals);
	if (all || (c && torture_rand(&c->seed) % 4 == 0))
		sb_condvar_notify_all(&cv);
	else
		sb_condvar_notify_one(&cv);
	atomic_fetch_add(&cv_notifies, 1);
}

/* Holding the mutex: takes a signal if there is one. */
static bool cv_consume(void)
{
	long s = atomic_load(&cv_signals);
	if (s <= 0)
		return false;
	atomic_store(&cv_signals, s - 1);
	return true;
}

/* Holding the mutex, as a waiter or a notifier: true when done (unlocked). */
static bool cv_locked_step(torture_contender *c)
{
	mx_enter(c, &cv_holders);
	torture_crit(c);
	if (c->kind == ROLE_NOTIFIER) {
		cv_notify(c, 1, false);
	} else if (!cv_consume()) {
		atomic_fetch_sub(&cv_holders, 1);
		return false;
	}
	cv_unlock(c);
	torture_op(c);
	return true;
}

/* A notified wait holds the mutex again. */
static void cv_notified(torture_contender *c)
{
	mx_enter(c, &cv_holders);
	atomic_fetch_add(&cv_woken, 1);
	cv_consume();
	torture_crit(c);
	cv_unlock(c);
	torture_op(c);
}

static void cv_blocking(torture_contender *c, uint64_t to)
{
	c->kind = torture_rand(&c->seed) % 3 == 0 ? ROLE_NOTIFIER : ROLE_WAITER;
	int r = sb_mutex_lock_blocking(&cvm, to);
	if (r == -ETIMEDOUT) {
		torture_timeout(c);
		return;
	}
	if (r != 0)
		VIOLATION(c, "lock_blocking: %d", r);
	if (cv_locked_step(c))
		return;
	r = sb_condvar_wait_blocking(&cv, &cvm, to);
	if (r == 0) {
		cv_notified(c);
		return;
	}
	if (r != -ETIMEDOUT)
		VIOLATION(c, "wait_blocking: %d", r);
	torture_timeout(c);
	mx_enter(c, &cv_holders); /* a timed-out wait holds the mutex again */
	cv_unlock(c);
}

static int cv_begin(torture_contender *c)
{
	if (c->stage == CV_WAIT) {
		sb_condvar_wait_init(&c->f.cv, &cv, &cvm);
		c->fut = &c->f.cv;
		c->fops = &sb_condvar_wait_ops;
		return 0;
	}
	c->kind = torture_rand(&c->seed) % 3 == 0 ? ROLE_NOTIFIER : ROLE_WAITER;
	if (torture_rand(&c->seed) % 5 == 0) {
		int r = sb_mutex_try_lock(&cvm);
		if (r == 0 && !cv_locked_step(c)) {
			/* a waiter with no signal: nothing to wait for here */
			r = sb_mutex_unlock(&cvm);
			if (r != 0)
				VIOLATION(c, "unlock of the condvar's mutex: %d", r);
		} else if (r != 0 && r != -EBUSY) {
			VIOLATION(c, "try_lock: %d", r);
		}
		return 1;
	}
	sb_mutex_lock_init(&c->f.mutex, &cvm);
	c->fut = &c->f.mutex;
	c->fops = &sb_mutex_lock_ops;
	return 0;
}

static int cv_done(torture_contender *c, int r)
{
	if (c->stage == CV_LOCK) {
		if (r != 0) {
			if (r != -ETIMEDOUT && r != -ECANCELED)
				VIOLATION(c, "lock: %d", r);
			return T_DONE;
		}
		if (cv_locked_step(c))
			return T_DONE;
		c->stage = CV_WAIT; /* holding the mutex, which the wait gives up */
		return T_AGAIN;
	}
	c->stage = CV_LOCK;
	if (r == 0) {
		cv_notified(c);
		return T_DONE;
	}
	if (r != -ETIMEDOUT && r != -ECANCELED)
		VIOLATION(c, "wait: %d", r);
	/* cancelled or timed out: the mutex is not held */
	return T_DONE;
}

/* Every millisecond: a signal for everyone, and a notify_all. */
static void cv_kick(bool stopping)
{
	if (sb_mutex_lock_blocking(&cvm, 5 * SB_NSEC_PER_MSEC) != 0)
		return;
	mx_enter(NULL, &cv_holders);
	if (stopping || atomic_load(&cv_signals) < 4 * TORTURE_MAX)
		cv_notify(NULL, TORTURE_MAX, true);
	else
		sb_condvar_notify_all(&cv);
	cv_unlock(NULL);
}

static void cv_tick(void)
{
	cv_kick(false);
}

static void cv_stop_tick(void)
{
	cv_kick(true);
}

static void cv_teardown(void)
{
	if (atomic_load(&cv_holders) || sb_mutex_is_locked(&cvm))
		VIOLATION(NULL, "the condvar's mutex is held after the run");
	int r = sb_condvar_destroy(&cv);
	if (r != 0)
		VIOLATION(NULL, "condvar destroy: %d", r);
	r = sb_mutex_destroy(&cvm);
	if (r != 0)
		VIOLATION(NULL, "mutex destroy: %d", r);
}

static void cv_describe(char *buf, size_t size)
{
	snprintf(buf, size, "notifies %ld, notified waits %ld", atomic_load(&cv_notifies),
		 atomic_load(&cv_woken));
}

const torture_prim torture_condvar = {
	"condvar", cv_setup, cv_blocking, cv_begin, cv_done, no_release,
	cv_tick, cv_stop_tick, cv_teardown, cv_describe, 800,
};
