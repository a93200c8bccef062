/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The torture of the broadcast: every contender sends (blocking, try_send,
 * futures) into the current broadcast and receives (blocking, try_recv,
 * futures) through its own receiver, which it subscribes to the current
 * broadcast when it has none and unsubscribes at random or once its
 * broadcast says -EPIPE.  Every ~50 ms the controller opens a fresh
 * broadcast for newcomers (lagging or back-pressure, capacity 1 or 4, in
 * turn) and closes the current one; a broadcast is destroyed once nobody
 * sends into it or is subscribed to it.
 *
 * Every receive checks the item (not torn, sent by a contender) and that
 * each sender's items reach the receiver in order, none doubled, none
 * skipped unless a lag was reported since (-EOVERFLOW, lagging broadcasts
 * only, with a missed count of at least one).  Every unsubscribe checks
 * that the subscription accounted for what was sent while it lasted: what
 * it received, plus what its lags said it missed, plus what was left unread
 * lies between the sends that surely happened while it was subscribed and
 * those that may have (the sends in flight at either end).
 *
 * A lost receive wake is caught without timing by the controller's own
 * receiver on each lagging broadcast (the wake watch below): its receive
 * future waits, queued, nearly all the time, and every send that returns 0
 * checks that it is no longer owed anything, provided it was queued before
 * the send began and the controller has not touched it since.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "torture.h"

enum { BC_MAX_CAPACITY = 4, BC_CONFIGS = 4 };
static const struct {
	int policy;
	size_t capacity;
} bc_configs[BC_CONFIGS] = {
	{ SB_BROADCAST_LAGGING, 1 },
	{ SB_BROADCAST_BACKPRESSURE, 1 },
	{ SB_BROADCAST_LAGGING, BC_MAX_CAPACITY },
	{ SB_BROADCAST_BACKPRESSURE, BC_MAX_CAPACITY },
};

static struct {
	sb_broadcast bc;
	_Alignas(16) torture_item storage[BC_MAX_CAPACITY]; /* as init asks of a 16-byte item */
	int policy;
	/* sends that took their item, and send attempts under way */
	atomic_long sent, inflight;
} bcs[TORTURE_SLOTS];
static torture_slots bc_slots;

/* A contender's receiver, and what its subscription saw (its owner's only,
 * or the controller's once every contender has finished). */
static struct bc_sub {
	sb_broadcast_receiver rx;
	int slot; /* -1: not subscribed */
	long received, missed, lags;
	long sent_before, sent_upper_after; /* the window's ends at subscribe */
	bool lagged[TORTURE_MAX];           /* a lag since this sender's last item */
} subs[TORTURE_MAX];

/*
 * The wake watch of a lagging broadcast: the controller's receiver and its
 * receive future (polled with the no-op waker, so nothing but a send's
 * release of the queue can complete it).  `gen` is even while the future
 * waits queued and the controller leaves it alone, odd while it drives it
 * (or while it is not armed).  A send that read an even `gen` before it
 * began, and reads the same `gen` after it returned 0, must find the
 * future released (its `remaining` no longer 1, the one receive owed): the
 * send published an item past the receiver's cursor while the future was
 * queued, so it released the queue, or an earlier send had.  Back-pressure
 * broadcasts have none (a receiver read once a tick would throttle every
 * sender).
 */
static struct bc_watch {
	sb_broadcast_receiver rx;
	sb_broadcast_recv f;
	torture_item item;
	atomic_ulong gen;
	bool armed;
} bc_watches[TORTURE_SLOTS];
static unsigned long bc_watch_gen_at_send[TORTURE_MAX];
static atomic_long bc_watch_checks;

static atomic_long bc_rounds, bc_sent, bc_received, bc_missed, bc_lags, bc_epipe, bc_subscribes;
static unsigned bc_ticks;

enum { ROLE_SEND, ROLE_RECV };

static uint64_t item_check(uint32_t sender, uint32_t seq)
{
	uint64_t x = ((uint64_t)sender << 32 | seq) * 0xc2b2ae3d27d4eb4fu;
	return x ^ (x >> 31) ^ 0x27d4eb2f165667c5u;
}

static void bc_watch_arm(int i);

static void bc_open(int i, int config)
{
	int r = sb_broadcast_init(&bcs[i].bc, bcs[i].storage, sizeof(torture_item),
				  bc_configs[config].capacity, bc_configs[config].policy);
	if (r != 0)
		VIOLATION(NULL, "broadcast init: %d", r);
	bcs[i].policy = bc_configs[config].policy;
	atomic_store(&bcs[i].sent, 0);
	atomic_store(&bcs[i].inflight, 0);
	if (bcs[i].policy == SB_BROADCAST_LAGGING)
		bc_watch_arm(i);
}

/* ------------------------------------------------------------ wake watch */

/* The controller's: polls the watch's future until it waits (items there
 * are read: each whole, lags counted as nothing), then lets senders check. */
static void bc_watch_wait(int i)
{
	struct bc_watch *w = &bc_watches[i];
	sb_waker noop = sb_waker_noop();
	for (;;) {
		int r = sb_broadcast_recv_poll(&w->f, &noop);
		if (r == SB_PENDING)
			break;
		if (r == 0 && (int)w->item.sender < torture_ncontenders &&
		    w->item.check != item_check(w->item.sender, w->item.seq))
			VIOLATION(NULL, "the wake watch received a torn item");
		if (r != 0 && r != -EOVERFLOW)
			VIOLATION(NULL, "the wake watch's receive: %d", r);
		sb_broadcast_recv_init(&w->f, &w->rx, &w->item);
	}
	/* seq_cst: a sender that reads the even value sees the queued future
	 * (the poll's lock happens-before its send). */
	atomic_fetch_add(&w->gen, 1);
}

static void bc_watch_arm(int i)
{
	struct bc_watch *w = &bc_watches[i];
	w->rx = (sb_broadcast_receiver){ 0 };
	if (sb_broadcast_subscribe(&bcs[i].bc, &w->rx) != 0)
		VIOLATION(NULL, "the wake watch's subscribe failed");
	sb_broadcast_recv_init(&w->f, &w->rx, &w->item);
	w->armed = true;
	bc_watch_wait(i); /* gen was odd: now even */
}

/* Each tick: a future that a send released is read, and waits again. */
static void bc_watch_service(int i)
{
	struct bc_watch *w = &bc_watches[i];
	if (!w->armed || atomic_load(&w->f.waiter.remaining) == 1)
		return;
	atomic_fetch_add(&w->gen, 1); /* odd: senders leave it alone */
	bc_watch_wait(i);
}

static void bc_watch_disarm(int i)
{
	struct bc_watch *w = &bc_watches[i];
	if (!w->armed)
		return;
	atomic_fetch_add(&w->gen, 1); /* odd until armed again */
	int r = sb_broadcast_recv_cancel(&w->f);
	if (r != -ECANCELED && r != 0 && r != -EOVERFLOW)
		VIOLATION(NULL, "the wake watch's cancel: %d", r);
	if (sb_broadcast_unsubscribe(&w->rx) != 0)
		VIOLATION(NULL, "the wake watch's unsubscribe failed");
	w->armed = false;
}

/* A sender's, before its send begins: the watch's gen. */
static void bc_watch_before_send(torture_contender *c, int i)
{
	bc_watch_gen_at_send[c->id] = atomic_load(&bc_watches[i].gen);
}

/* A sender's, after its send returned 0: the watch's future was released,
 * if it waited queued and untouched all along. */
static void bc_watch_after_send(torture_contender *c, int i)
{
	unsigned long g = bc_watch_gen_at_send[c->id];
	if (g % 2 != 0 || bcs[i].policy != SB_BROADCAST_LAGGING)
		return;
	size_t remaining = atomic_load(&bc_watches[i].f.waiter.remaining);
	if (atomic_load(&bc_watches[i].gen) != g)
		return;
	atomic_fetch_add(&bc_watch_checks, 1);
	if (remaining == 1)
		VIOLATION(c, "a send into a lagging broadcast returned 0 while a receive that "
			  "waited before it began is still queued: a lost wake");
}

static void bc_setup(void)
{
	memset(&bc_slots, 0, sizeof bc_slots);
	for (int i = 0; i < TORTURE_SLOTS; i++) {
		bc_watches[i].armed = false;
		atomic_store(&bc_watches[i].gen, 1);
		bc_open(i, i % BC_CONFIGS);
	}
	atomic_store(&bc_watch_checks, 0);
	for (int i = 0; i < TORTURE_MAX; i++) {
		memset(&subs[i], 0, sizeof subs[i]);
		subs[i].slot = -1;
	}
	atomic_store(&bc_rounds, 0);
	atomic_store(&bc_sent, 0);
	atomic_store(&bc_received, 0);
	atomic_store(&bc_missed, 0);
	atomic_store(&bc_lags, 0);
	atomic_store(&bc_epipe, 0);
	atomic_store(&bc_subscribes, 0);
	bc_ticks = 0;
}

/* Sends that took their item, or may have: in flight are read first, so
 * that a send completing between the two loads is counted once at least. */
static long bc_sent_upper(int i)
{
	long inflight = atomic_load(&bcs[i].inflight);
	return inflight + atomic_load(&bcs[i].sent);
}

/* ---------------------------------------------------------------- receive */

static bool bc_subscribe(torture_contender *c)
{
	struct bc_sub *s = &subs[c->id];
	if (s->slot >= 0)
		return true;
	int i = torture_slot_enter(&bc_slots);
	long before = atomic_load(&bcs[i].sent);
	int r = sb_broadcast_subscribe(&bcs[i].bc, &s->rx);
	if (r == -EPIPE) {
		torture_slot_leave(&bc_slots, i);
		atomic_fetch_add(&bc_epipe, 1);
		return false;
	}
	if (r != 0)
		VIOLATION(c, "subscribe: %d", r);
	s->slot = i;
	s->received = s->missed = s->lags = 0;
	s->sent_before = before;
	s->sent_upper_after = bc_sent_upper(i);
	for (int j = 0; j < TORTURE_MAX; j++)
		c->last_seq[j] = -1;
	memset(s->lagged, 0, sizeof s->lagged);
	atomic_fetch_add(&bc_subscribes, 1);
	return true;
}

/* Ends the subscription: what it received, missed and left unread accounts
 * for what was sent while it lasted. */
static void bc_unsubscribe(torture_contender *c, struct bc_sub *s)
{
	int i = s->slot;
	long sure = atomic_load(&bcs[i].sent) - s->sent_upper_after;
	long unread = (long)sb_broadcast_receiver_unread(&s->rx);
	int r = sb_broadcast_unsubscribe(&s->rx);
	if (r != 0)
		VIOLATION(c, "unsubscribe: %d", r);
	long maybe = bc_sent_upper(i) - s->sent_before;
	long accounted = s->received + s->missed + unread;
	if (accounted < sure || accounted > maybe)
		VIOLATION(c, "a %s subscription received %ld, missed %ld in %ld lags and left %ld "
			  "unread, while between %ld and %ld items were sent",
			  bcs[i].policy == SB_BROADCAST_LAGGING ? "lagging" : "back-pressure",
			  s->received, s->missed, s->lags, unread, sure, maybe);
	if (bcs[i].policy == SB_BROADCAST_BACKPRESSURE &&
	    unread > (long)sb_broadcast_capacity(&bcs[i].bc))
		VIOLATION(c, "a back-pressure receiver had %ld items unread", unread);
	s->slot = -1;
	torture_slot_leave(&bc_slots, i);
}

static void bc_valid(const torture_contender *c, const torture_item *it)
{
	if ((int)it->sender >= torture_ncontenders || it->check != item_check(it->sender, it->seq))
		VIOLATION(c, "a torn or unknown item (sender %u, seq %u, check %llx)", it->sender,
			  it->seq, (unsigned long long)it->check);
}

static void bc_received_item(torture_contender *c, const torture_item *it)
{
	struct bc_sub *s = &subs[c->id];
	bc_valid(c, it);
	int64_t last = c->last_seq[it->sender];
	if ((int64_t)it->seq <= last)
		VIOLATION(c, "sender %u's item %u received after its item %lld", it->sender, it->seq,
			  (long long)last);
	if (last >= 0 && !s->lagged[it->sender] && (int64_t)it->seq != last + 1)
		VIOLATION(c, "sender %u's items %lld to %u skipped with no lag reported (a %s "
			  "broadcast)", it->sender, (long long)last + 1, it->seq - 1,
			  bcs[s->slot].policy == SB_BROADCAST_LAGGING ? "lagging" : "back-pressure");
	c->last_seq[it->sender] = it->seq;
	s->lagged[it->sender] = false;
	s->received++;
	atomic_fetch_add(&bc_received, 1);
}

static void bc_lagged(torture_contender *c)
{
	struct bc_sub *s = &subs[c->id];
	if (bcs[s->slot].policy != SB_BROADCAST_LAGGING)
		VIOLATION(c, "a back-pressure receiver was told it lagged");
	uint64_t missed = sb_broadcast_receiver_missed(&s->rx);
	if (missed == 0)
		VIOLATION(c, "-EOVERFLOW with nothing missed");
	s->missed += (long)missed;
	s->lags++;
	for (int j = 0; j < TORTURE_MAX; j++)
		s->lagged[j] = true;
	atomic_fetch_add(&bc_missed, (long)missed);
	atomic_fetch_add(&bc_lags, 1);
}

/* A receive ended with r. */
static void bc_recv_result(torture_contender *c, int r)
{
	if (r == 0) {
		bc_received_item(c, &c->item);
		torture_op(c);
	} else if (r == -EOVERFLOW) {
		bc_lagged(c);
		torture_op(c);
	} else if (r == -EPIPE) {
		atomic_fetch_add(&bc_epipe, 1);
		bc_unsubscribe(c, &subs[c->id]);
	} else if (r == -ETIMEDOUT) {
		torture_timeout(c);
	} else if (r != -EAGAIN && r != -ECANCELED) {
		VIOLATION(c, "receive: %d", r);
	}
}

/* ------------------------------------------------------------------- send */

static void bc_send_start(torture_contender *c)
{
	c->slot = torture_slot_enter(&bc_slots);
	c->item = (torture_item){ (uint32_t)c->id, c->send_seq,
				  item_check((uint32_t)c->id, c->send_seq) };
	atomic_fetch_add(&bcs[c->slot].inflight, 1);
	bc_watch_before_send(c, c->slot);
}

/* A send ended with r. */
static void bc_send_result(torture_contender *c, int r)
{
	int i = c->slot;
	if (r == 0) {
		bc_watch_after_send(c, i);
		c->send_seq++;
		atomic_fetch_add(&bcs[i].sent, 1);
		atomic_fetch_add(&bc_sent, 1);
	}
	atomic_fetch_sub(&bcs[i].inflight, 1);
	if (r == 0)
		torture_op(c);
	else if (r == -EPIPE)
		atomic_fetch_add(&bc_epipe, 1);
	else if (r == -EAGAIN && bcs[i].policy == SB_BROADCAST_LAGGING)
		VIOLATION(c, "a lagging broadcast's try_send said -EAGAIN");
	else if (r != -ETIMEDOUT && r != -ECANCELED && r != -EAGAIN)
		VIOLATION(c, "send: %d", r);
	torture_slot_leave(&bc_slots, i);
}

/* ------------------------------------------------------------- operations */

/* Picks the operation's role; a receiver may unsubscribe instead (true). */
static bool bc_pick(torture_contender *c)
{
	c->kind = torture_rand(&c->seed) % 2 ? ROLE_SEND : ROLE_RECV;
	if (c->kind == ROLE_SEND)
		return false;
	struct bc_sub *s = &subs[c->id];
	if (s->slot >= 0 && torture_rand(&c->seed) % 32 == 0) {
		bc_unsubscribe(c, s);
		return true;
	}
	return !bc_subscribe(c);
}

static void bc_blocking(torture_contender *c, uint64_t to)
{
	if (bc_pick(c))
		return;
	if (c->kind == ROLE_SEND) {
		bc_send_start(c);
		int r = sb_broadcast_send_blocking(&bcs[c->slot].bc, &c->item, to);
		if (r == -ETIMEDOUT)
			torture_timeout(c);
		bc_send_result(c, r == -ETIMEDOUT ? -ECANCELED : r);
		return;
	}
	bc_recv_result(c, sb_broadcast_recv_blocking(&subs[c->id].rx, &c->item, to));
}

static int bc_begin(torture_contender *c)
{
	if (bc_pick(c))
		return 1;
	bool immediate = torture_rand(&c->seed) % 4 == 0;
	if (c->kind == ROLE_SEND) {
		bc_send_start(c);
		if (immediate) {
			bc_send_result(c, sb_broadcast_try_send(&bcs[c->slot].bc, &c->item));
			return 1;
		}
		sb_broadcast_send_init(&c->f.bsend, &bcs[c->slot].bc, &c->item);
		c->fut = &c->f.bsend;
		c->fops = &sb_broadcast_send_ops;
		return 0;
	}
	if (immediate) {
		bc_recv_result(c, sb_broadcast_try_recv(&subs[c->id].rx, &c->item));
		return 1;
	}
	sb_broadcast_recv_init(&c->f.brecv, &subs[c->id].rx, &c->item);
	c->fut = &c->f.brecv;
	c->fops = &sb_broadcast_recv_ops;
	return 0;
}

static int bc_done(torture_contender *c, int r)
{
	if (c->kind == ROLE_SEND)
		/* the driver counts a deadline's -ETIMEDOUT itself */
		bc_send_result(c, r == -ETIMEDOUT ? -ECANCELED : r);
	else if (r == -ETIMEDOUT)
		bc_recv_result(c, -ECANCELED);
	else
		bc_recv_result(c, r);
	return T_DONE;
}

static void bc_no_release(torture_contender *c)
{
	VIOLATION(c, "released without a hold");
}

/* ------------------------------------------------------------- controller */

/* A broadcast nobody sends into nor is subscribed to: closed and destroyed. */
static void bc_retire(int i)
{
	bc_watch_disarm(i);
	sb_broadcast_close(&bcs[i].bc);
	if (atomic_load(&bcs[i].inflight) != 0)
		VIOLATION(NULL, "a retired broadcast has sends in flight");
	int r = sb_broadcast_destroy(&bcs[i].bc);
	if (r != 0)
		VIOLATION(NULL, "destroy of a broadcast nobody uses: %d", r);
}

/* Every 50 ms: a fresh broadcast for newcomers; the current one closed. */
static void bc_tick(void)
{
	bc_watch_service(atomic_load(&bc_slots.cur));
	if (++bc_ticks % 50)
		return;
	int next = torture_slot_next_free(&bc_slots);
	if (next < 0)
		return;
	bc_retire(next);
	long round = atomic_fetch_add(&bc_rounds, 1) + 1;
	bc_open(next, (int)(round % BC_CONFIGS));
	int old = atomic_load(&bc_slots.cur);
	atomic_store(&bc_slots.cur, next);
	bc_watch_disarm(old);
	sb_broadcast_close(&bcs[old].bc);
}

static void bc_stop_tick(void)
{
	bc_watch_disarm(atomic_load(&bc_slots.cur));
	sb_broadcast_close(&bcs[atomic_load(&bc_slots.cur)].bc);
}

static void bc_teardown(void)
{
	for (int i = 0; i < torture_ncontenders; i++)
		if (subs[i].slot >= 0)
			bc_unsubscribe(&torture_contenders[i], &subs[i]);
	for (int i = 0; i < TORTURE_SLOTS; i++) {
		if (atomic_load(&bc_slots.users[i]) != 0)
			VIOLATION(NULL, "a broadcast still has users after the run");
		bc_retire(i);
	}
}

static void bc_describe(char *buf, size_t size)
{
	snprintf(buf, size, "rounds %ld, subscribes %ld, items sent %ld, received %ld, "
		 "missed %ld in %ld lags, -EPIPE %ld, wake checks %ld", atomic_load(&bc_rounds),
		 atomic_load(&bc_subscribes), atomic_load(&bc_sent), atomic_load(&bc_received),
		 atomic_load(&bc_missed), atomic_load(&bc_lags), atomic_load(&bc_epipe),
		 atomic_load(&bc_watch_checks));
}

const torture_prim torture_broadcast = {
	"broadcast", bc_setup, bc_blocking, bc_begin, bc_done, bc_no_release,
	bc_tick, bc_stop_tick, bc_teardown, bc_describe, 0,
};
