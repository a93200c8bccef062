/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/select.h>

#include <assert.h>
#include <errno.h>
#include <stdint.h>

#include "future_ops.h"
#include "select_claim.h"

/*
 * The claim word says who may take effect:
 *
 *   SEL_OPEN       between polls: a channel that would hand an item to a
 *                  waiting case may claim it (CAS to that case)
 *   SEL_BUSY       the owner's poll is trying the cases: it alone decides,
 *                  and a granting channel detaches the case's waiter
 *                  SB_WAITER_RETRY instead (its wake makes the owner poll
 *                  again, and that case try again)
 *   SEL_CLOSED     cancelled with no winner: nothing may take effect
 *   SEL_WON + i    case i won: final
 *
 * Only the owner moves the word out of BUSY, and the granters only from
 * OPEN, so a case completes in the owner's poll only while nobody can
 * claim another.  That covers what a channel cannot give back - an item
 * moved - on both sides: a granter's claim (under the channel's lock,
 * before it copies) and the owner's own completions (while BUSY).  Every
 * other grant to a losing case (a permit, a lock, a notification) is handed
 * on by that case's cancel.
 *
 * Go's select locks every channel at once, crossbeam's selects register a
 * Context whose one word the granting thread must win; this is the second,
 * with the word in the caller's select future and the waiters in the
 * futures of its cases.
 */
enum { SEL_OPEN = 0, SEL_BUSY = 1, SEL_CLOSED = 2, SEL_WON = 3 };

/* ----------------------------------------------------------- branch waker */

static const sb_select_case *branch_case(const void *data)
{
	return data;
}

/* A clone is the caller's: it outlives the select. */
static sb_waker branch_clone(const void *data)
{
	return sb_waker_clone(&branch_case(data)->select->task);
}

static void branch_wake_by_ref(const void *data)
{
	sb_waker_wake_by_ref(&branch_case(data)->select->task);
}

/* The branch waker is only ever borrowed: nothing to consume or release. */
static void branch_drop(const void *data)
{
	(void)data;
}

const sb_waker_vtable sb__select_branch_vtable = {
	.clone = branch_clone,
	.wake = branch_wake_by_ref,
	.wake_by_ref = branch_wake_by_ref,
	.drop = branch_drop,
};

static sb_waker branch_waker(const sb_select_case *c)
{
	return (sb_waker){ &sb__select_branch_vtable, c };
}

/* ------------------------------------------------------------------ claim */

sb_select_claim_result sb_select_claim(sb_select_case *c, const sb_select *self)
{
	sb_select *s = c->select;
	if (s == self)
		return SB_SELECT_CLAIM_SELF;
	size_t open = SEL_OPEN;
	/* acq_rel: pairs with the owner's release stores of OPEN (what its
	 * poll did is behind us) and its acquire CAS that finds us the winner.
	 * Relaxed on failure: neither a loser nor one that finds its own case
	 * the winner reads anything behind the word. */
	if (atomic_compare_exchange_strong_explicit(&s->claim, &open, SEL_WON + c->index,
						    memory_order_acq_rel, memory_order_relaxed))
		return SB_SELECT_CLAIM_WON;
	/* A case whose future waits on several channels (a join, say) won
	 * already: the rest of it may go on. */
	return open == SEL_WON + c->index ? SB_SELECT_CLAIM_WON : SB_SELECT_CLAIM_LOST;
}

/* --------------------------------------------------------------- lifetime */

/* seed % n, without a division for the usual 2 or 4 cases. */
static uint32_t sel_reduce(uint32_t seed, uint32_t n)
{
	return (n & (n - 1)) == 0 ? seed & (n - 1) : seed % n;
}

int sb_select_init(sb_select *s, sb_select_case *cases, size_t n, uint32_t seed,
		   unsigned flags)
{
	s->cases = NULL; /* polls to -EINVAL until initialised */
	s->status = 0;
	if (cases == NULL || n == 0 || n > SB_SELECT_MAX_CASES || (flags & ~SB_SELECT_BIASED))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (cases[i].future == NULL || cases[i].ops == NULL)
			return -EINVAL; /* the private fields written so far are unused */
		cases[i].select = s;
		cases[i].index = i;
	}
	s->cases = cases;
	s->ncases = (uint32_t)n;
	s->flags = flags;
	s->start = flags & SB_SELECT_BIASED ? 0 : sel_reduce(seed, (uint32_t)n);
	atomic_init(&s->claim, SEL_OPEN);
	s->task = (sb_waker){ NULL, NULL };
	s->index = 0;
	s->result = 0;
	s->status = SB_FUTURE_IDLE;
	return 0;
}

static int case_poll(sb_select_case *c)
{
	sb_waker w = branch_waker(c);
	return c->ops->poll(c->future, &w);
}

/*
 * Cancels every case but `winner` (SIZE_MAX: all).  A loser cannot have
 * taken effect: no channel hands it an item without the claim, and every
 * other grant its cancel hands on (debug builds check that it polls to an
 * error afterwards, as a future that took effect would not).
 */
static void sel_cancel_losers(sb_select *s, size_t winner)
{
	for (size_t i = 0; i < s->ncases; i++) {
		if (i == winner)
			continue;
		sb_select_case *c = &s->cases[i];
		c->ops->cancel(c->future);
#ifndef NDEBUG
		sb_waker noop = sb_waker_noop();
		assert(c->ops->poll(c->future, &noop) != 0 && "a losing case took effect");
#endif
	}
}

/* Case `i` won with `r`: the others are cancelled, the select is done. */
static int sel_finish(sb_select *s, size_t i, int r)
{
	sel_cancel_losers(s, i);
	s->index = (uint32_t)i;
	s->result = r;
	s->task = (sb_waker){ NULL, NULL };
	return s->status = 0;
}

/*
 * A granter claimed case `i` for its item: its poll completes once the
 * granter published the move (until then it waits, woken by that granter).
 */
static int sel_collect(sb_select *s, size_t i)
{
	int r = case_poll(&s->cases[i]);
	if (r == SB_PENDING)
		return SB_PENDING;
	return sel_finish(s, i, r);
}

/* The case the k-th try of this poll looks at. */
static size_t sel_case_at(const sb_select *s, size_t k)
{
	size_t i = s->start + k;
	return i >= s->ncases ? i - s->ncases : i;
}

/* The owner, BUSY: tries every case in turn; the first done one wins. */
static int sel_pass(sb_select *s)
{
	for (size_t k = 0; k < s->ncases; k++) {
		size_t i = sel_case_at(s, k);
		int r = case_poll(&s->cases[i]);
		if (r == SB_PENDING)
			continue;
		/* release: pairs with sb_select_cancel's acquire (only the owner
		 * reads a final word; granters fail their CAS on it). */
		atomic_store_explicit(&s->claim, SEL_WON + i, memory_order_release);
		return sel_finish(s, i, r);
	}
	return SB_PENDING;
}

/*
 * The owner, BUSY: one pass over the cases (two at the first poll: a look
 * that registers no channel case, then the pass that waits), then OPEN.
 */
static int sel_try_all(sb_select *s, bool first)
{
	if (first) {
		s->flags |= SB__SELECT_PROBING;
		int r = sel_pass(s);
		s->flags &= ~SB__SELECT_PROBING;
		if (r != SB_PENDING)
			return r;
	}
	int r = sel_pass(s);
	if (r != SB_PENDING)
		return r;
	if (!(s->flags & SB_SELECT_BIASED))
		s->start = (uint32_t)sel_case_at(s, 1);
	/* release: a granter that claims the word next acts after this poll's
	 * registrations (pairs with its acq_rel CAS). */
	atomic_store_explicit(&s->claim, SEL_OPEN, memory_order_release);
	return SB_PENDING;
}

int sb_select_poll(sb_select *s, const sb_waker *w)
{
	if (s->status != SB_PENDING && s->status != SB_FUTURE_IDLE)
		return sb_future_done_result(s->status, s->cases);
	s->task = *w; /* borrowed: the branch wakers stand for it during this poll */
	int r;
	if (s->status == SB_FUTURE_IDLE) {
		/* No case waits yet, so nothing can reach the word: a plain
		 * store.  relaxed: a granter reaches it only through a waiter
		 * node, which the channel's lock publishes after this. */
		atomic_store_explicit(&s->claim, SEL_BUSY, memory_order_relaxed);
		s->status = SB_PENDING;
		r = sel_try_all(s, true);
	} else {
		size_t claim = SEL_OPEN;
		/* acquire: a granter's claim, if it won, is seen with what it
		 * did before; its item itself is published by the waiter node
		 * (the case's own poll reads that).  Strong: a spurious failure
		 * would read OPEN. */
		if (atomic_compare_exchange_strong_explicit(&s->claim, &claim, SEL_BUSY,
							    memory_order_acquire,
							    memory_order_acquire))
			r = sel_try_all(s, false);
		else
			r = sel_collect(s, claim - SEL_WON);
	}
	if (r == SB_PENDING)
		s->task = (sb_waker){ NULL, NULL };
	return r;
}

int sb_select_cancel(sb_select *s)
{
	if (s->status == SB_FUTURE_IDLE)
		return s->status = -ECANCELED;
	if (s->status != SB_PENDING)
		return sb_future_done_result(s->status, s->cases);
	size_t claim = SEL_OPEN;
	/* acquire: as in poll, a winner's claim is seen with what it did. */
	if (atomic_compare_exchange_strong_explicit(&s->claim, &claim, SEL_CLOSED,
						    memory_order_acquire, memory_order_acquire)) {
		sel_cancel_losers(s, SIZE_MAX);
		return s->status = -ECANCELED;
	}
	/* A channel moved an item for case i: that happened, whatever we do. */
	size_t i = claim - SEL_WON;
	sb_select_case *c = &s->cases[i];
	c->ops->cancel(c->future);
	sb_waker noop = sb_waker_noop();
	int r = c->ops->poll(c->future, &noop); /* its final result, not registering */
	if (r == -ECANCELED) {
		sel_cancel_losers(s, i);
		return s->status = -ECANCELED;
	}
	sel_cancel_losers(s, i);
	s->index = (uint32_t)i;
	s->result = r;
	return s->status = 0;
}

int sb_select_index(const sb_select *s)
{
	return s->status == 0 && s->cases ? (int)s->index : -1;
}

int sb_select_result(const sb_select *s)
{
	return s->status == 0 && s->cases ? s->result : sb_future_done_result(s->status, s->cases);
}

static void sel_cancel_op(sb_select *s)
{
	(void)sb_select_cancel(s);
}

SB_FUTURE_OPS(sb_select_ops, sb_select, sb_select_poll, sel_cancel_op);
