/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The torture of the watch: every contender sends into the current watch
 * (sb_watch_send, or sb_watch_send_if whose callback changes the value or
 * declines) and watches through its own receiver, which it subscribes to
 * the current watch when it has none and unsubscribes at random or once its
 * watch says -EPIPE: try_changed, blocking changed waits, changed futures,
 * reads.  Every ~50 ms the controller opens a fresh watch for newcomers,
 * leaves the current one quiet for ~25 ms and then closes it; a watch is
 * destroyed once nobody uses it.
 *
 * The value is 64 bytes: who sent it, its place in that sender's stream,
 * words derived from both and a checksum.  Every read checks that the value
 * is not torn, that the receiver's seen version never goes back, that a
 * read of the same version reads the same value, and that no sender's value
 * is older than one of its values the receiver read before.  A changed wait
 * that completes with 0 must find a newer version; one that ends with
 * -EPIPE must find the watch closed and nothing newer than the receiver has
 * read (so a send that left a waiter asleep shows, as close then wakes it).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "torture.h"

enum { WV_WORDS = 6, WV_INITIAL = TORTURE_MAX };

typedef struct watch_value {
	uint32_t sender; /* WV_INITIAL: the value the watch was opened with */
	uint32_t seq;
	uint64_t words[WV_WORDS];
	uint64_t check;
} watch_value;

static struct {
	sb_watch w;
	watch_value value;
} ws[TORTURE_SLOTS];
static torture_slots w_slots;

/* A contender's receiver, and what it read (its owner's only, or the
 * controller's once every contender has finished). */
static struct w_sub {
	sb_watch_receiver rx;
	int slot; /* -1: not subscribed */
	bool have_read;
	size_t read_version;
	watch_value last;
} wsubs[TORTURE_MAX];

static atomic_long w_rounds, w_sends, w_told, w_declined, w_reads, w_changed, w_epipe;
static unsigned w_ticks;
static int w_quiet = -1; /* the watch left quiet before its close (w_tick) */

enum { ROLE_SEND, ROLE_RECV };

static uint64_t wv_word(uint32_t sender, uint32_t seq, int i)
{
	uint64_t x = ((uint64_t)sender << 32 | seq) + (uint64_t)i * 0x9e3779b97f4a7c15u;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
	return x ^ (x >> 27);
}

static watch_value wv_make(uint32_t sender, uint32_t seq)
{
	watch_value v = { sender, seq, { 0 }, 0 };
	uint64_t check = 0x51ed270b2f3e1a35u;
	for (int i = 0; i < WV_WORDS; i++) {
		v.words[i] = wv_word(sender, seq, i);
		check = (check ^ v.words[i]) * 0x100000001b3u;
	}
	v.check = check;
	return v;
}

static bool wv_equal(const watch_value *a, const watch_value *b)
{
	return memcmp(a, b, sizeof *a) == 0;
}

static void wv_valid(const torture_contender *c, const watch_value *v)
{
	bool known = (int)v->sender < torture_ncontenders || v->sender == WV_INITIAL;
	watch_value want = wv_make(v->sender, v->seq);
	if (!known || !wv_equal(v, &want))
		VIOLATION(c, "a torn or unknown value (sender %u, seq %u, check %llx)", v->sender,
			  v->seq, (unsigned long long)v->check);
}

static void w_open(int i, long round)
{
	ws[i].value = wv_make(WV_INITIAL, (uint32_t)round);
	int r = sb_watch_init(&ws[i].w, &ws[i].value, sizeof ws[i].value);
	if (r != 0)
		VIOLATION(NULL, "watch init: %d", r);
}

static void w_setup(void)
{
	memset(&w_slots, 0, sizeof w_slots);
	for (int i = 0; i < TORTURE_SLOTS; i++)
		w_open(i, i);
	for (int i = 0; i < TORTURE_MAX; i++) {
		memset(&wsubs[i], 0, sizeof wsubs[i]);
		wsubs[i].slot = -1;
	}
	atomic_store(&w_rounds, 0);
	atomic_store(&w_sends, 0);
	atomic_store(&w_told, 0);
	atomic_store(&w_declined, 0);
	atomic_store(&w_reads, 0);
	atomic_store(&w_changed, 0);
	atomic_store(&w_epipe, 0);
	w_ticks = 0;
	w_quiet = -1;
}

/* ------------------------------------------------------------------- send */

/* What send_if's callback is given. */
typedef struct w_modify {
	const torture_contender *c;
	watch_value v;
	bool change;
	bool called;
} w_modify;

static bool w_modify_fn(void *value, void *arg)
{
	w_modify *m = arg;
	m->called = true;
	wv_valid(m->c, value);
	if (m->change)
		memcpy(value, &m->v, sizeof m->v);
	return m->change;
}

static void w_send(torture_contender *c)
{
	int i = torture_slot_enter(&w_slots);
	sb_watch *w = &ws[i].w;
	unsigned how = torture_rand(&c->seed) % 4;
	watch_value v = wv_make((uint32_t)c->id, c->send_seq);
	int r;
	if (how < 2) {
		r = sb_watch_send(w, &v);
		if (r == 0) {
			c->send_seq++;
			atomic_fetch_add(&w_sends, 1);
			torture_op(c);
		}
	} else {
		w_modify m = { c, v, how == 2, false };
		r = sb_watch_send_if(w, w_modify_fn, &m);
		if (r >= 0 && !m.called)
			VIOLATION(c, "send_if returned %d without calling its callback", r);
		if (r == -EPIPE && m.called)
			VIOLATION(c, "send_if on a closed watch called its callback");
		if (r >= 0 && r != (int)m.change)
			VIOLATION(c, "send_if returned %d after its callback returned %d", r,
				  (int)m.change);
		if (r == 1) {
			c->send_seq++;
			atomic_fetch_add(&w_told, 1);
		} else if (r == 0) {
			atomic_fetch_add(&w_declined, 1);
		}
		if (r >= 0)
			torture_op(c);
	}
	if (r == -EPIPE)
		atomic_fetch_add(&w_epipe, 1);
	else if (r < 0)
		VIOLATION(c, "send: %d", r);
	torture_slot_leave(&w_slots, i);
}

/* ---------------------------------------------------------------- receive */

static void w_subscribe(torture_contender *c)
{
	struct w_sub *s = &wsubs[c->id];
	int i = torture_slot_enter(&w_slots);
	int r = sb_watch_subscribe(&ws[i].w, &s->rx);
	if (r != 0)
		VIOLATION(c, "subscribe: %d", r);
	s->slot = i;
	s->have_read = false;
}

static void w_unsubscribe(torture_contender *c, struct w_sub *s)
{
	int r = sb_watch_unsubscribe(&s->rx);
	if (r != 0)
		VIOLATION(c, "unsubscribe: %d", r);
	torture_slot_leave(&w_slots, s->slot);
	s->slot = -1;
}

static void w_read(torture_contender *c)
{
	struct w_sub *s = &wsubs[c->id];
	size_t before = sb_watch_seen(&s->rx);
	watch_value v;
	int r = sb_watch_read(&s->rx, &v);
	if (r != 0)
		VIOLATION(c, "read: %d", r);
	wv_valid(c, &v);
	size_t seen = sb_watch_seen(&s->rx);
	if (seen < before)
		VIOLATION(c, "a read went back from version %zu to %zu", before, seen);
	if (seen > sb_watch_version(&ws[s->slot].w))
		VIOLATION(c, "a read saw version %zu, newer than the watch's %zu", seen,
			  sb_watch_version(&ws[s->slot].w));
	if (s->have_read && seen == s->read_version && !wv_equal(&v, &s->last))
		VIOLATION(c, "two reads of version %zu read different values (sender %u seq %u, "
			  "then sender %u seq %u)", seen, s->last.sender, s->last.seq, v.sender,
			  v.seq);
	if (v.sender != WV_INITIAL) {
		if ((int64_t)v.seq < c->last_seq[v.sender])
			VIOLATION(c, "read sender %u's value %u after its value %lld", v.sender,
				  v.seq, (long long)c->last_seq[v.sender]);
		c->last_seq[v.sender] = v.seq;
	}
	s->have_read = true;
	s->read_version = seen;
	s->last = v;
	atomic_fetch_add(&w_reads, 1);
}

/* A changed check (wait, future, try) ended with r. */
static void w_changed_result(torture_contender *c, int r)
{
	struct w_sub *s = &wsubs[c->id];
	sb_watch *w = &ws[s->slot].w;
	size_t seen = sb_watch_seen(&s->rx);
	if (r == 0) {
		if (sb_watch_version(w) == seen)
			VIOLATION(c, "changed, yet the version is still the one read (%zu)", seen);
		atomic_fetch_add(&w_changed, 1);
		if (torture_rand(&c->seed) % 4)
			w_read(c);
		torture_op(c);
	} else if (r == -EPIPE) {
		if (!sb_watch_is_closed(w))
			VIOLATION(c, "-EPIPE from a watch that is not closed");
		if (sb_watch_version(w) != seen)
			VIOLATION(c, "-EPIPE while version %zu was newer than the one read (%zu): "
				  "a send left the wait asleep", sb_watch_version(w), seen);
		atomic_fetch_add(&w_epipe, 1);
		w_unsubscribe(c, s);
	} else if (r == -ETIMEDOUT) {
		torture_timeout(c);
	} else if (r != -EAGAIN && r != -ECANCELED) {
		VIOLATION(c, "changed: %d", r);
	}
}

/* ------------------------------------------------------------- operations */

/* Picks the operation: a send, a read, a subscribe or an unsubscribe (all
 * done here: true), or a changed wait (false). */
static bool w_pick(torture_contender *c)
{
	struct w_sub *s = &wsubs[c->id];
	if (torture_rand(&c->seed) % 2) {
		w_send(c);
		return true;
	}
	if (s->slot < 0) {
		w_subscribe(c);
		if (torture_rand(&c->seed) % 2)
			w_read(c);
		torture_op(c);
		return true;
	}
	unsigned r = torture_rand(&c->seed) % 32;
	if (r == 0) {
		w_unsubscribe(c, s);
		torture_op(c);
		return true;
	}
	if (r < 4) {
		w_read(c);
		torture_op(c);
		return true;
	}
	return false;
}

static void w_blocking(torture_contender *c, uint64_t to)
{
	if (w_pick(c))
		return;
	w_changed_result(c, sb_watch_changed_blocking(&wsubs[c->id].rx, to));
}

static int w_begin(torture_contender *c)
{
	if (w_pick(c))
		return 1;
	if (torture_rand(&c->seed) % 4 == 0) {
		w_changed_result(c, sb_watch_try_changed(&wsubs[c->id].rx));
		return 1;
	}
	sb_watch_changed_init(&c->f.changed, &wsubs[c->id].rx);
	c->fut = &c->f.changed;
	c->fops = &sb_watch_changed_ops;
	return 0;
}

static int w_done(torture_contender *c, int r)
{
	/* the driver counts a deadline's -ETIMEDOUT itself */
	w_changed_result(c, r == -ETIMEDOUT ? -ECANCELED : r);
	return T_DONE;
}

static void w_no_release(torture_contender *c)
{
	VIOLATION(c, "released without a hold");
}

/* ------------------------------------------------------------- controller */

static void w_retire(int i)
{
	sb_watch_close(&ws[i].w);
	wv_valid(NULL, &ws[i].value);
	int r = sb_watch_destroy(&ws[i].w);
	if (r != 0)
		VIOLATION(NULL, "destroy of a watch nobody uses: %d", r);
}

/* Every 25 ms, in turn: a fresh watch for newcomers (the current one left
 * quiet: only the sends already in it still land); or the quiet one closed.
 * A send that left a waiter asleep has no later send to cover for it then,
 * and the close shows it (w_changed_result). */
static void w_tick(void)
{
	if (++w_ticks % 25)
		return;
	if (w_quiet >= 0) {
		sb_watch_close(&ws[w_quiet].w);
		w_quiet = -1;
		return;
	}
	int next = torture_slot_next_free(&w_slots);
	if (next < 0)
		return;
	w_retire(next);
	long round = atomic_fetch_add(&w_rounds, 1) + 1;
	w_open(next, round + TORTURE_SLOTS);
	w_quiet = atomic_load(&w_slots.cur);
	atomic_store(&w_slots.cur, next);
}

static void w_stop_tick(void)
{
	for (int i = 0; i < TORTURE_SLOTS; i++)
		sb_watch_close(&ws[i].w);
}

static void w_teardown(void)
{
	for (int i = 0; i < torture_ncontenders; i++)
		if (wsubs[i].slot >= 0)
			w_unsubscribe(&torture_contenders[i], &wsubs[i]);
	for (int i = 0; i < TORTURE_SLOTS; i++) {
		if (atomic_load(&w_slots.users[i]) != 0)
			VIOLATION(NULL, "a watch still has users after the run");
		w_retire(i);
	}
}

static void w_describe(char *buf, size_t size)
{
	snprintf(buf, size, "rounds %ld, sends %ld, send_if told %ld, declined %ld, reads %ld, "
		 "changed %ld, -EPIPE %ld", atomic_load(&w_rounds), atomic_load(&w_sends),
		 atomic_load(&w_told), atomic_load(&w_declined), atomic_load(&w_reads),
		 atomic_load(&w_changed), atomic_load(&w_epipe));
}

const torture_prim torture_watch = {
	"watch", w_setup, w_blocking, w_begin, w_done, w_no_release,
	w_tick, w_stop_tick, w_teardown, w_describe, 0,
};
