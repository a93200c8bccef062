/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Systematic interleavings of syncband/rwlock.h (sched.c, README.md in this
 * folder): reads, writes, downgrade, upgrade and cancels racing each other,
 * every schedule with up to four preemptions under sequential consistency
 * and three preemptions and two stale reads under the weak model, then
 * random schedules under both.  A future that goes pending waits for its
 * wake and re-polls, so a lost wake or a lost grant leaves it pending and
 * fails the check; every check also ends with the lock free, every waker
 * clone woken or dropped, and destroy() succeeding.  Under the weak model,
 * what a holder writes before it unlocks or downgrades must happen-before
 * what the next holder reads.  Every scenario runs in both modes: strict
 * FIFO, and eventually fair with the model's clock standing still (nobody
 * overdue: wakes, retries and barging), and two more run the fair mode's
 * handoff phase (one with a cancel after its grant), the clock moved past
 * the bound in their setups, and two more the hints that let readers pass a
 * woken head without the queue lock.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <syncband/rwlock.h>

#include "clock.h"
#include "sched.h"

/* Under the weak model: a clone happens-before every use of that clone. */
#define COUNTING_WAKER_CLONED(c) MODEL_PLAIN_WRITE(c)
#define COUNTING_WAKER_USED(c) MODEL_PLAIN_READ(c)
#define COUNTING_WAKER_WOKEN(c) sb_model_signal(&(c)->wakes)
#include "counting_waker.h"

enum { PREEMPTIONS = 4, LIMIT = 2000000, RANDOM_RUNS = 3000, SEED = 20261201 };
enum { WEAK_PREEMPTIONS = 3, STALE_READS = 2, WEAK_RANDOM_STALE_READS = 4 };

/* The mode every scenario's lock starts in (set by each test). */
static bool fifo_mode;

/* The model's clock (src/clock.h), installed in main: only setups move it. */
static uint64_t model_now = 1000;
static uint64_t model_clock(void)
{
	return model_now;
}

typedef struct rw_ctx {
	sb_rwlock rw;
	sb_rwlock_lock f[4];
	counting_waker w[4];
	int r[4];          /* each future's final result */
	int payload;       /* written by a holder before it lets the next one in */
	int published;     /* whether `payload` was written */
	int writer_in;     /* a writer holds the lock (plain, under the lock) */
} rw_ctx;

static void publish(rw_ctx *c)
{
	c->payload = 1;
	MODEL_PLAIN_WRITE(&c->payload);
	c->published = 1;
}

/* A holder that came after the publisher's unlock reads what it wrote. */
static void consume(rw_ctx *c)
{
	MODEL_PLAIN_READ(&c->payload);
	MODEL_CHECK(c->payload == 1);
}

static int poll_rw(rw_ctx *c, int i)
{
	sb_waker w = counting_waker_ref(&c->w[i]);
	return sb_rwlock_lock_poll(&c->f[i], &w);
}

/*
 * Drives future i to completion in its own logical thread: poll; while
 * pending, wait for a wake that came after the poll began, and poll again.
 * A wake that never comes leaves it SB_PENDING, which the checks catch.
 */
static int drive(rw_ctx *c, int i)
{
	int r;
	for (;;) {
		int seen = atomic_load(&c->w[i].wakes);
		r = poll_rw(c, i);
		if (r != SB_PENDING || !sb_model_await_change(&c->w[i].wakes, seen))
			break;
	}
	return c->r[i] = r;
}

/* The same for a future that setup polled (pending, not yet woken). */
static int drive_queued(rw_ctx *c, int i)
{
	int r = SB_PENDING;
	int seen = 0;
	while (sb_model_await_change(&c->w[i].wakes, seen)) {
		seen = atomic_load(&c->w[i].wakes);
		r = poll_rw(c, i);
		if (r != SB_PENDING)
			break;
	}
	return c->r[i] = r;
}

/* A writer's critical section, and a reader's look that it is not inside one. */
static void writer_section(rw_ctx *c)
{
	c->writer_in = 1;
	MODEL_PLAIN_WRITE(&c->writer_in);
	c->writer_in = 0;
	MODEL_PLAIN_WRITE(&c->writer_in);
}

static void reader_section(rw_ctx *c)
{
	MODEL_PLAIN_READ(&c->writer_in);
	MODEL_CHECK(c->writer_in == 0);
}

static void setup_wakers(rw_ctx *c)
{
	if (fifo_mode)
		sb_rwlock_init_fifo(&c->rw);
	else
		sb_rwlock_init(&c->rw);
	model_now = 1000;
	for (int i = 0; i < 4; i++)
		counting_waker_init(&c->w[i]);
}

/* What every check ends with: the lock free, every clone gone. */
static void check_free(rw_ctx *c)
{
	MODEL_CHECK(sb_rwlock_readers(&c->rw) == 0);
	MODEL_CHECK(!sb_rwlock_is_write_locked(&c->rw));
	for (int i = 0; i < 4; i++)
		MODEL_CHECK(atomic_load(&c->w[i].live) == 0);
	MODEL_CHECK(sb_rwlock_destroy(&c->rw) == 0);
}

/* --- read vs write vs cancel ----------------------------------------------
 * A reader holds; a writer's future is queued.  The reader leaves (handing
 * the lock to the writer), the writer's owner cancels (a grant it never saw
 * is passed on: it unlocks), and a new reader arrives (queued behind the
 * writer, or entering once it is gone).
 */
static void rwc_setup(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	MODEL_CHECK(sb_rwlock_try_read(&c->rw) == 0);
	sb_rwlock_write_init(&c->f[0], &c->rw);
	MODEL_CHECK(poll_rw(c, 0) == SB_PENDING);
}
static void rwc_cancel_writer(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_lock_cancel(&c->f[0]);
}
static void rwc_reader_leaves(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
}
static void rwc_reader_arrives(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_read_init(&c->f[1], &c->rw);
	if (drive(c, 1) == 0)
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
}
static void rwc_check(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(c->r[1] == 0);
	check_free(c);
}

/* --- write unlock vs a reader arriving ------------------------------------
 * A writer holds and publishes, then unlocks; a reader's future arrives
 * meanwhile (it takes the lock lock-free, or queues and is granted by the
 * unlock), and a try_read too: whoever gets in sees the writer's write.
 */
static void wur_setup(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	MODEL_CHECK(sb_rwlock_try_write(&c->rw) == 0);
}
static void wur_writer(void *p)
{
	rw_ctx *c = p;
	publish(c);
	MODEL_CHECK(sb_rwlock_write_unlock(&c->rw) == 0);
}
static void wur_reader(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_read_init(&c->f[0], &c->rw);
	if (drive(c, 0) == 0) {
		consume(c);
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	}
}
static void wur_try_reader(void *p)
{
	rw_ctx *c = p;
	c->r[1] = sb_rwlock_try_read(&c->rw);
	if (c->r[1] == 0) {
		consume(c);
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	}
}
static void wur_check(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(c->r[0] == 0);
	MODEL_CHECK(c->r[1] == 0 || c->r[1] == -EAGAIN);
	check_free(c);
}

/* --- downgrade vs a queued reader and an arriving writer ------------------
 * A writer holds; a reader is queued (setup).  The writer publishes and
 * downgrades, then leaves; the queued reader must be let in by the
 * downgrade (while the downgrader still reads) and see the write; a writer
 * that arrives meanwhile queues behind the reader, gets the lock once both
 * readers left, and sees the write too.
 */
static void dg_setup(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	MODEL_CHECK(sb_rwlock_try_write(&c->rw) == 0);
	sb_rwlock_read_init(&c->f[0], &c->rw);
	MODEL_CHECK(poll_rw(c, 0) == SB_PENDING);
}
static void dg_downgrader(void *p)
{
	rw_ctx *c = p;
	publish(c);
	MODEL_CHECK(sb_rwlock_downgrade(&c->rw) == 0);
	MODEL_CHECK(!sb_rwlock_is_write_locked(&c->rw)); /* no writer came between */
	MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
}
static void dg_queued_reader(void *p)
{
	rw_ctx *c = p;
	if (drive_queued(c, 0) == 0) {
		consume(c);
		reader_section(c);
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	}
}
static void dg_writer(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_write_init(&c->f[1], &c->rw);
	if (drive(c, 1) == 0) {
		consume(c);
		writer_section(c);
		MODEL_CHECK(sb_rwlock_write_unlock(&c->rw) == 0);
	}
}
static void dg_check(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(c->r[0] == 0 && c->r[1] == 0);
	check_free(c);
}

/* --- upgrade vs a reader leaving ------------------------------------------
 * The upgradable read and a plain read are held.  The upgrader's upgrade
 * races the plain reader's leaving (it publishes first) and a new reader
 * arriving (which enters before the upgrade is pending, or waits for the
 * upgraded writer to finish).
 */
static void up_setup(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	MODEL_CHECK(sb_rwlock_try_upgradable_read(&c->rw) == 0);
	MODEL_CHECK(sb_rwlock_try_read(&c->rw) == 0);
}
static void up_upgrader(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_upgrade_init(&c->f[0], &c->rw);
	if (drive(c, 0) == 0) {
		consume(c);
		MODEL_CHECK(sb_rwlock_readers(&c->rw) == 0);
		writer_section(c);
		MODEL_CHECK(sb_rwlock_write_unlock(&c->rw) == 0);
	}
}
static void up_reader_leaves(void *p)
{
	rw_ctx *c = p;
	publish(c);
	MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
}
static void up_reader_arrives(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_read_init(&c->f[1], &c->rw);
	if (drive(c, 1) == 0) {
		reader_section(c); /* ordered against the upgraded writer's section */
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	}
}
static void up_check(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(c->r[0] == 0 && c->r[1] == 0);
	check_free(c);
}

/* --- cancel of a just-granted writer --------------------------------------
 * A reader holds; a writer and a reader are queued behind it (setup).  The
 * reader leaves, granting the writer; the writer's owner cancels, which
 * passes the lock on to the reader behind it (or, cancelling first, lets
 * it in beside the first reader); that reader, woken, enters.  Eventually
 * fair mode (where the reader would pass the queued writer): a writer
 * holds, and its unlock wakes the queued writer, whose cancel passes the
 * wake on (or, cancelling first, leaves the reader first).
 */
static void cgw_setup(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	if (fifo_mode)
		MODEL_CHECK(sb_rwlock_try_read(&c->rw) == 0);
	else
		MODEL_CHECK(sb_rwlock_try_write(&c->rw) == 0);
	sb_rwlock_write_init(&c->f[0], &c->rw);
	MODEL_CHECK(poll_rw(c, 0) == SB_PENDING);
	sb_rwlock_read_init(&c->f[1], &c->rw);
	MODEL_CHECK(poll_rw(c, 1) == SB_PENDING);
}
static void cgw_reader_leaves(void *p)
{
	rw_ctx *c = p;
	if (fifo_mode)
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	else
		MODEL_CHECK(sb_rwlock_write_unlock(&c->rw) == 0);
}
static void cgw_cancel_writer(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_lock_cancel(&c->f[0]);
}
static void cgw_queued_reader(void *p)
{
	rw_ctx *c = p;
	/* Enters beside the first reader if the cancel came first, or after
	 * the cancel's unlock of the writer's grant: no payload to check. */
	if (drive_queued(c, 1) == 0)
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
}
static void cgw_check(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(c->r[1] == 0);
	check_free(c);
}

/* --- a run of readers past a wake batch vs a cancel of its last one -------
 * A writer holds; three readers are queued (the model's wake batch holds
 * two).  The write unlock grants the run all at once: it counts all three,
 * detaches two, drops the lock to wake them and detaches the third after.
 * The third's owner cancels meanwhile (before the unlock, before or after
 * its detach: its read is given back whenever it had one), and the first
 * two, woken, enter.
 */
static void run_setup(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	MODEL_CHECK(sb_rwlock_try_write(&c->rw) == 0);
	for (int i = 0; i < 3; i++) {
		sb_rwlock_read_init(&c->f[i], &c->rw);
		MODEL_CHECK(poll_rw(c, i) == SB_PENDING);
	}
}
static void run_writer(void *p)
{
	rw_ctx *c = p;
	publish(c);
	MODEL_CHECK(sb_rwlock_write_unlock(&c->rw) == 0);
}
static void run_cancel_last(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_lock_cancel(&c->f[2]);
}
static void run_check(void *p)
{
	rw_ctx *c = p;
	/* granted with the run: woken once, ready, after the write */
	for (int i = 0; i < 2; i++) {
		MODEL_CHECK(atomic_load(&c->w[i].wakes) == 1);
		MODEL_CHECK(poll_rw(c, i) == 0);
	}
	consume(c);
	MODEL_CHECK(sb_rwlock_readers(&c->rw) == 2);
	for (int i = 0; i < 2; i++)
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	check_free(c);
}

/* --- lock-free hand-overs: a downgrade and an upgradable unlock -----------
 * With nobody waiting, a downgrade and an upgradable read's unlock are one
 * CAS each; what the holder wrote before must reach whoever takes the lock
 * after them lock-free (a try_read beside the downgraded read; a try_write
 * once the upgradable read is gone).
 */
static void lf_setup_writer(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	MODEL_CHECK(sb_rwlock_try_write(&c->rw) == 0);
}
static void lf_downgrader(void *p)
{
	rw_ctx *c = p;
	publish(c);
	MODEL_CHECK(sb_rwlock_downgrade(&c->rw) == 0);
	MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
}
static void lf_try_reader(void *p)
{
	rw_ctx *c = p;
	if ((c->r[0] = sb_rwlock_try_read(&c->rw)) == 0) {
		consume(c);
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	}
}
static void lf_setup_upgradable(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	MODEL_CHECK(sb_rwlock_try_upgradable_read(&c->rw) == 0);
}
static void lf_upgradable_leaves(void *p)
{
	rw_ctx *c = p;
	publish(c);
	MODEL_CHECK(sb_rwlock_upgradable_unlock(&c->rw) == 0);
}
static void lf_try_writer(void *p)
{
	rw_ctx *c = p;
	if ((c->r[0] = sb_rwlock_try_write(&c->rw)) == 0) {
		consume(c);
		MODEL_CHECK(sb_rwlock_write_unlock(&c->rw) == 0);
	}
}
static void lf_check(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(c->r[0] == 0 || c->r[0] == -EAGAIN);
	check_free(c);
}

/* --- a handoff phase vs the last reader leaving and a reader arriving ----
 * Eventually fair mode (FIFO mode: the reader queues behind the writer at
 * once).  A reader holds; a writer is queued; setup lets readers pass it,
 * one at a time, the clock moved past the bound after the first, until one
 * is refused: a handoff phase covers the writer.  The last reader leaves,
 * handing the writer the lock; a new reader arrives, refused by the phase
 * until the writer is done, and sees its write.
 */
static void ph_setup(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	MODEL_CHECK(sb_rwlock_try_read(&c->rw) == 0);
	sb_rwlock_write_init(&c->f[0], &c->rw);
	MODEL_CHECK(poll_rw(c, 0) == SB_PENDING);
	int passes = 0;
	while (sb_rwlock_try_read(&c->rw) == 0) {
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
		model_now += SB_FAIRNESS_BOUND_NS + 1; /* overdue from the first */
		MODEL_CHECK(++passes <= 17);
	}
}
static void ph_reader_leaves(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
}
static void ph_writer(void *p)
{
	rw_ctx *c = p;
	if (drive_queued(c, 0) == 0) {
		publish(c);
		writer_section(c);
		MODEL_CHECK(sb_rwlock_write_unlock(&c->rw) == 0);
	}
}
static void ph_reader_arrives(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_read_init(&c->f[1], &c->rw);
	if (drive(c, 1) == 0) {
		consume(c); /* the writer was handed the lock first */
		reader_section(c);
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	}
}
static void ph_check(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(c->r[0] == 0 && c->r[1] == 0);
	check_free(c);
}

/* --- cancel of a writer that a handoff phase granted -----------------------
 * Eventually fair mode.  As ph_setup, and then a reader queues behind the
 * writer (refused by the phase, which covers the writer alone).  The last
 * reader leaves, handing the writer the lock; the writer's owner cancels,
 * which passes the grant on (or, cancelling first, lets the phase go on to
 * the reader); the queued reader, woken, enters.
 */
static void pc_setup(void *p)
{
	rw_ctx *c = p;
	ph_setup(c);
	sb_rwlock_read_init(&c->f[1], &c->rw);
	MODEL_CHECK(poll_rw(c, 1) == SB_PENDING);
}
static void pc_cancel_writer(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_lock_cancel(&c->f[0]);
}
static void pc_queued_reader(void *p)
{
	rw_ctx *c = p;
	if (drive_queued(c, 1) == 0)
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
}
static void pc_check(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(c->r[1] == 0);
	check_free(c);
}

/* --- readers passing a woken writer vs its retry ------------------------
 * Eventually fair mode.  A reader holds; a writer is queued; the reader
 * leaves, waking it, and setup's reader passes it (timing it: the word gets
 * QUIET and a budget, the hints of src/rwlock.c).  The writer retries (and
 * re-arms while a reader holds, ending QUIET), setup's reader leaves
 * (without the queue lock while QUIET holds), and a new reader arrives
 * (passing the writer without the lock within the budget) and leaves: the
 * last of them must wake the writer if it re-armed, no reader may see the
 * writer's section, and the writer sees what setup's reader wrote before
 * its unlock (under the weak model: that unlock happens-before its entry).
 */
static void qw_setup(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	MODEL_CHECK(sb_rwlock_try_read(&c->rw) == 0);
	sb_rwlock_write_init(&c->f[0], &c->rw);
	MODEL_CHECK(poll_rw(c, 0) == SB_PENDING);
	MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(sb_rwlock_try_read(&c->rw) == 0); /* the first pass */
}
static void qw_writer(void *p)
{
	rw_ctx *c = p;
	if (drive_queued(c, 0) == 0) {
		consume(c); /* setup's reader left before we entered */
		writer_section(c);
		MODEL_CHECK(sb_rwlock_write_unlock(&c->rw) == 0);
	}
}
static void qw_reader_leaves(void *p)
{
	rw_ctx *c = p;
	reader_section(c);
	publish(c); /* what a reader did, seen by the next writer */
	MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
}
static void qw_reader_arrives(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_read_init(&c->f[1], &c->rw);
	if (drive(c, 1) == 0) {
		reader_section(c);
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	}
}
static void qw_check(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(c->r[0] == 0 && c->r[1] == 0);
	check_free(c);
}

/* --- readers beside a woken reader vs its retry and an arriving writer ----
 * Eventually fair mode.  A writer holds; a reader is queued; the write
 * unlock wakes it, and setup's reader enters beside it (the word gets
 * SHARED).  The woken reader retries (leaving the queue, which ends SHARED),
 * setup's reader leaves (without the queue lock while SHARED holds), and a
 * writer arrives, queueing behind the woken reader or passing it: whoever
 * of the readers leaves last must wake it if it queued.
 */
static void sr_setup(void *p)
{
	rw_ctx *c = p;
	setup_wakers(c);
	MODEL_CHECK(sb_rwlock_try_write(&c->rw) == 0);
	sb_rwlock_read_init(&c->f[0], &c->rw);
	MODEL_CHECK(poll_rw(c, 0) == SB_PENDING);
	MODEL_CHECK(sb_rwlock_write_unlock(&c->rw) == 0);
	MODEL_CHECK(atomic_load(&c->w[0].wakes) == 1);
	MODEL_CHECK(sb_rwlock_try_read(&c->rw) == 0); /* beside it */
}
static void sr_woken_reader(void *p)
{
	rw_ctx *c = p;
	if (drive_queued(c, 0) == 0) {
		reader_section(c);
		MODEL_CHECK(sb_rwlock_read_unlock(&c->rw) == 0);
	}
}
static void sr_writer(void *p)
{
	rw_ctx *c = p;
	sb_rwlock_write_init(&c->f[1], &c->rw);
	if (drive(c, 1) == 0) {
		consume(c); /* setup's reader left before we entered */
		writer_section(c);
		MODEL_CHECK(sb_rwlock_write_unlock(&c->rw) == 0);
	}
}
static void sr_check(void *p)
{
	rw_ctx *c = p;
	MODEL_CHECK(c->r[0] == 0 && c->r[1] == 0);
	check_free(c);
}

static const sb_model_scenario scenarios[] = {
	{ "rwlock: read vs write vs cancel", 3, sizeof(rw_ctx), rwc_setup,
	  { rwc_cancel_writer, rwc_reader_leaves, rwc_reader_arrives }, rwc_check },
	{ "rwlock: write unlock vs a reader arriving and a try_read", 3, sizeof(rw_ctx),
	  wur_setup, { wur_writer, wur_reader, wur_try_reader }, wur_check },
	{ "rwlock: downgrade vs a queued reader and an arriving writer", 3, sizeof(rw_ctx),
	  dg_setup, { dg_downgrader, dg_queued_reader, dg_writer }, dg_check },
	{ "rwlock: upgrade vs a reader leaving and a reader arriving", 3, sizeof(rw_ctx),
	  up_setup, { up_upgrader, up_reader_leaves, up_reader_arrives }, up_check },
	{ "rwlock: cancel of a just-granted writer", 3, sizeof(rw_ctx), cgw_setup,
	  { cgw_reader_leaves, cgw_cancel_writer, cgw_queued_reader }, cgw_check },
	{ "rwlock: a run past a wake batch vs a cancel of its last reader", 2, sizeof(rw_ctx),
	  run_setup, { run_writer, run_cancel_last }, run_check },
	{ "rwlock: a downgrade with nobody waiting vs a try_read", 2, sizeof(rw_ctx),
	  lf_setup_writer, { lf_downgrader, lf_try_reader }, lf_check },
	{ "rwlock: an upgradable unlock with nobody waiting vs a try_write", 2, sizeof(rw_ctx),
	  lf_setup_upgradable, { lf_upgradable_leaves, lf_try_writer }, lf_check },
	/* the fair mode's alone (the last ones, see COUNT_IN) */
	{ "rwlock: a handoff phase vs the last reader leaving and a reader arriving", 3,
	  sizeof(rw_ctx), ph_setup, { ph_reader_leaves, ph_writer, ph_reader_arrives },
	  ph_check },
	{ "rwlock: cancel of a writer a handoff phase granted", 3, sizeof(rw_ctx), pc_setup,
	  { ph_reader_leaves, pc_cancel_writer, pc_queued_reader }, pc_check },
	{ "rwlock: readers passing a woken writer vs its retry", 3, sizeof(rw_ctx), qw_setup,
	  { qw_writer, qw_reader_leaves, qw_reader_arrives }, qw_check },
	{ "rwlock: readers beside a woken reader vs its retry and a writer", 3, sizeof(rw_ctx),
	  sr_setup, { sr_woken_reader, qw_reader_leaves, sr_writer }, sr_check },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The scenarios of the mode fifo_mode names: all but the fair ones in FIFO. */
#define COUNT_IN() (COUNT(scenarios) - (fifo_mode ? 4 : 0))

/* The downgrade scenario (scenarios[2]) and the woken writer's (scenarios[10]). */
enum { DOWNGRADE_SCENARIO = 2, WOKEN_WRITER_SCENARIO = 10 };

/*
 * Under sequential consistency when stale_reads < 0, else the weak model.
 * The downgrade scenario in the fair mode under the weak model runs one
 * preemption fewer: its queued reader's wake and retry and the writer's
 * barging take it past LIMIT schedules with three (5.2 million in all).
 * So does the woken writer's: its retry, two readers' barges and unlocks
 * take it past LIMIT with three (987,304 schedules under SC with four).
 */
static void explore_all(int preemptions, int stale_reads)
{
	for (size_t i = 0; i < COUNT_IN(); i++) {
		int p = preemptions;
		if (!fifo_mode && stale_reads >= 0 &&
		    (i == DOWNGRADE_SCENARIO || i == WOKEN_WRITER_SCENARIO))
			p--;
		assert_true(sb_model_explore_all(&scenarios[i], 1, p, stale_reads, LIMIT));
	}
}

static void random_all(int stale_reads)
{
	assert_true(sb_model_random_all(scenarios, COUNT_IN(), SEED, RANDOM_RUNS, stale_reads));
}

static void every_fair_rwlock_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	fifo_mode = false;
	explore_all(PREEMPTIONS, -1);
}

static void every_fair_rwlock_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	fifo_mode = false;
	random_all(-1);
}

static void every_fair_rwlock_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	fifo_mode = false;
	explore_all(WEAK_PREEMPTIONS, STALE_READS);
}

static void every_fair_rwlock_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	fifo_mode = false;
	random_all(WEAK_RANDOM_STALE_READS);
}

static void every_fifo_rwlock_scenario_holds_over_all_schedules_with_four_preemptions(void **state)
{
	(void)state;
	fifo_mode = true;
	explore_all(PREEMPTIONS, -1);
}

static void every_fifo_rwlock_scenario_holds_over_random_schedules(void **state)
{
	(void)state;
	fifo_mode = true;
	random_all(-1);
}

static void every_fifo_rwlock_scenario_holds_under_the_weak_model_with_bounded_stale_reads(void **state)
{
	(void)state;
	fifo_mode = true;
	explore_all(WEAK_PREEMPTIONS, STALE_READS);
}

static void every_fifo_rwlock_scenario_holds_over_random_schedules_under_the_weak_model(void **state)
{
	(void)state;
	fifo_mode = true;
	random_all(WEAK_RANDOM_STALE_READS);
}

/* Single-threaded, outside the scheduler: the atomic RMWs of the fast paths. */
static long rmws_before;
#define RMWS(expr) (rmws_before = sb_model_rmws(), (expr), sb_model_rmws() - rmws_before)

static void uncontended_rmws(bool fifo)
{
	sb_waker noop = sb_waker_noop();
	sb_rwlock rw;
	if (fifo)
		sb_rwlock_init_fifo(&rw);
	else
		sb_rwlock_init(&rw);
	assert_int_equal(RMWS(sb_rwlock_try_read(&rw)), 1);
	assert_int_equal(RMWS(sb_rwlock_try_read(&rw)), 1);
	assert_int_equal(RMWS(sb_rwlock_read_unlock(&rw)), 1);
	assert_int_equal(RMWS(sb_rwlock_read_unlock(&rw)), 1);
	assert_int_equal(RMWS(sb_rwlock_try_write(&rw)), 1);
	assert_int_equal(RMWS(sb_rwlock_write_unlock(&rw)), 1);
	sb_rwlock_lock f;
	sb_rwlock_read_init(&f, &rw);
	assert_int_equal(RMWS(sb_rwlock_lock_poll(&f, &noop)), 1);
	assert_int_equal(RMWS(sb_rwlock_read_unlock(&rw)), 1);
	sb_rwlock_write_init(&f, &rw);
	assert_int_equal(RMWS(sb_rwlock_lock_poll(&f, &noop)), 1);
	assert_int_equal(RMWS(sb_rwlock_downgrade(&rw)), 1);
	assert_int_equal(RMWS(sb_rwlock_read_unlock(&rw)), 1);
	/* the upgradable read, and an upgrade with no other reader */
	assert_int_equal(RMWS(sb_rwlock_try_upgradable_read(&rw)), 1);
	sb_rwlock_upgrade_init(&f, &rw);
	assert_int_equal(RMWS(sb_rwlock_lock_poll(&f, &noop)), 1);
	assert_int_equal(RMWS(sb_rwlock_write_unlock(&rw)), 1);
	assert_int_equal(RMWS(sb_rwlock_try_upgradable_read(&rw)), 1);
	assert_int_equal(RMWS(sb_rwlock_upgradable_unlock(&rw)), 1);
	/* a reader that is not the last leaves lock-free while a writer waits */
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	sb_rwlock_write_init(&f, &rw);
	assert_int_equal(sb_rwlock_lock_poll(&f, &noop), SB_PENDING);
	assert_int_equal(RMWS(sb_rwlock_read_unlock(&rw)), 1);
	/* the last one hands over (FIFO: lock and unlock, and the poll finds
	 * it granted) or wakes the writer (fair: lock and unlock, and its
	 * retry takes the lock under the queue lock: lock and unlock) */
	assert_int_equal(RMWS(sb_rwlock_read_unlock(&rw)), 2);
	assert_int_equal(RMWS(sb_rwlock_lock_poll(&f, &noop)), fifo ? 0 : 2);
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
}

static void uncontended_read_and_write_lock_and_unlock_are_one_read_modify_write_each(void **state)
{
	(void)state;
	uncontended_rmws(false);
	uncontended_rmws(true);
}

/* test_model_rwlock [RUN-PATTERN]: cmocka's test name filter. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(uncontended_read_and_write_lock_and_unlock_are_one_read_modify_write_each),
		cmocka_unit_test(every_fair_rwlock_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_fair_rwlock_scenario_holds_over_random_schedules),
		cmocka_unit_test(every_fair_rwlock_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_fair_rwlock_scenario_holds_over_random_schedules_under_the_weak_model),
		cmocka_unit_test(every_fifo_rwlock_scenario_holds_over_all_schedules_with_four_preemptions),
		cmocka_unit_test(every_fifo_rwlock_scenario_holds_over_random_schedules),
		cmocka_unit_test(every_fifo_rwlock_scenario_holds_under_the_weak_model_with_bounded_stale_reads),
		cmocka_unit_test(every_fifo_rwlock_scenario_holds_over_random_schedules_under_the_weak_model),
	};
	sb__clock_set(model_clock);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
