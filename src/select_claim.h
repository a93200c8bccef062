/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the rest of the library knows of a select (src/select.c): its branch
 * waker, and the claim word that a channel must win before it moves an item
 * into or out of a waiting case.
 *
 * sb_select_poll polls each case with a branch waker: vtable
 * sb__select_branch_vtable, data the sb_select_case.  Its clone is a clone
 * of the caller's waker, so what a waiting future keeps is an ordinary task
 * waker; the branch waker itself lives only during the select's poll.  A
 * channel future whose first poll sees a branch waker (directly, or through
 * a deadline that passes its waker on) records its case in its waiter node,
 * in place of the owed count (`remaining` holds the case's address: a
 * channel's waiter is owed one operation whatever it holds there).
 */
#ifndef SYNCBAND_SRC_SELECT_CLAIM_H
#define SYNCBAND_SRC_SELECT_CLAIM_H

#include <syncband/select.h>

extern const sb_waker_vtable sb__select_branch_vtable;

/* The case whose branch waker `w` is, or NULL for any other waker. */
static inline sb_select_case *sb_select_case_of(const sb_waker *w)
{
	if (w->vtable != &sb__select_branch_vtable)
		return NULL;
	return (sb_select_case *)(uintptr_t)w->data;
}

/* The select a waker polls for, or NULL. */
static inline const sb_select *sb_select_of(const sb_waker *w)
{
	sb_select_case *c = sb_select_case_of(w);
	return c ? c->select : NULL;
}

/*
 * The waker `w` stands for: a branch waker stands for the caller's waker
 * of the select's poll in progress.  A re-poll compares its node's clone
 * with this one (sb_waker_will_wake), so that a waiting case re-polled
 * through its branch waker keeps its clone.
 */
static inline const sb_waker *sb_waker_resolve(const sb_waker *w)
{
	/* A loop: a select nested as a case of another polls with a branch
	 * waker of the outer one. */
	for (sb_select_case *c; (c = sb_select_case_of(w)) != NULL;)
		w = &c->select->task;
	return w;
}

/* sb_select.flags: the first poll's first pass, a look that registers no
 * channel case (src/select.c). */
#define SB__SELECT_PROBING (UINT32_C(1) << 31)

/*
 * Whether `w` polls for a select's first look: a channel case that cannot
 * happen now then answers SB_PENDING without waiting, its future left as
 * never polled, and the select's second pass polls it for real.  Go's and
 * crossbeam's selects look at every case before they register on any.
 */
static inline bool sb_select_probing(const sb_waker *w)
{
	sb_select_case *c = sb_select_case_of(w);
	return c && (c->select->flags & SB__SELECT_PROBING);
}

typedef enum sb_select_claim_result {
	SB_SELECT_CLAIM_WON,   /* the case wins: move the item */
	SB_SELECT_CLAIM_LOST,  /* another case won, or the select is polling or
				  cancelled: detach the waiter SB_WAITER_RETRY */
	SB_SELECT_CLAIM_SELF,  /* the case is of the granting operation's own
				  select: leave it, and stop looking */
} sb_select_claim_result;

/*
 * Under the channel's lock, whose waiter node names `c`: tries to make `c`
 * its select's winner.  `self` is the select the granting operation runs
 * for (its waker's, sb_select_of), or NULL.
 */
sb_select_claim_result sb_select_claim(sb_select_case *c, const sb_select *self);

#endif
