/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/select.h - wait for the first of several futures (Go's select,
 * tokio::select!, C#'s WhenAny): exactly one case takes effect.
 *
 *   r->cases[0] = (sb_select_case)SB_SELECT_CASE(&r->acquire, &sb_semaphore_acquire_ops);
 *   r->cases[1] = (sb_select_case)SB_SELECT_CASE(&r->shutdown, &sb_auto_event_wait_ops);
 *   sb_select_init(&r->select, r->cases, 2, r->round++, 0);
 *   if (sb_select_poll(&r->select, w) == 0)        in the task's poll
 *           switch (sb_select_index(&r->select)) ...
 *
 *   - The cases are a caller-owned array, each an initialised, unpolled
 *     future of the library (deadlines included) and its ops.  The select
 *     completes as soon as one case does, with its index (sb_select_index)
 *     and result (sb_select_result: 0 or its negative errno); every other
 *     case is cancelled before poll returns.  A loser's grant is handed on
 *     by its cancel, and a channel never moves an item into or out of a
 *     losing case.  Every case is cancel-safe; a losing waiter loses its
 *     place in its queue, as its own cancel would.
 *   - Fair: each poll tries the cases from a start that rotates from
 *     `seed` % n; pass a round counter and, of several ready cases, each is
 *     chosen within n rounds.  SB_SELECT_BIASED: declaration order.
 *   - The select allocates nothing; a waiting case holds a clone of the
 *     caller's waker.  Limits: a nested select keeps exactly-one within
 *     itself only; two cases of one select on one channel never meet.
 *
 * Thread safety: one thread at a time drives a select; the cases'
 * primitives may be used by any thread.  The cases array and futures must
 * stay put, untouched, until the select is done or cancelled.
 *
 * Errors: -EINVAL from init (no cases, more than SB_SELECT_MAX_CASES, a NULL
 * future or ops) and from poll of a zeroed select; -ECANCELED from poll or
 * cancel of a select cancelled before a case won.
 */
#ifndef SYNCBAND_SELECT_H
#define SYNCBAND_SELECT_H

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most cases one select takes. */
#define SB_SELECT_MAX_CASES 65536

/* init flags: try the cases in declaration order, every time. */
#define SB_SELECT_BIASED 1u

typedef struct sb_select sb_select;

/* One case, 32 bytes on 64-bit targets.  The caller sets future and ops
 * (SB_SELECT_CASE); the rest is private, set by sb_select_init. */
typedef struct sb_select_case {
	void *future;
	const sb_future_ops *ops;
	sb_select *select;
	size_t index;
} sb_select_case;

/* Initialiser of a case from its future and ops. */
#define SB_SELECT_CASE(future, ops) { (future), (ops), NULL, 0 }

/* The select future, 64 bytes on 64-bit targets.  Fields are private. */
struct sb_select {
	sb_select_case *cases;
	uint32_t ncases;
	uint32_t start;          /* where the next poll starts trying */
	SB_ATOMIC(size_t) claim; /* who may take effect; see src/select.c */
	sb_waker task;           /* the caller's borrowed waker, during a poll */
	uint32_t flags;
	uint32_t index;          /* the winning case, once done */
	int result;              /* its result */
	int status;
};

/*
 * Prepares a select over the `n` cases at `cases` (each future initialised
 * and never polled).  `seed` picks the case the first poll tries first
 * (seed % n); flags: 0 or SB_SELECT_BIASED.  Does not poll anything.
 * Returns 0 or -EINVAL (n is 0 or above SB_SELECT_MAX_CASES, cases NULL, a
 * case's future or ops NULL, an unknown flag); on -EINVAL a poll of `s`
 * returns -EINVAL too.
 */
SB_API int sb_select_init(sb_select *s, sb_select_case *cases, size_t n, uint32_t seed,
			  unsigned flags);

/*
 * Polls the cases: 0 once one completed (sb_select_index, sb_select_result;
 * every other case has been cancelled), SB_PENDING while none has (every
 * case that waits holds a clone of `w`'s task), -EINVAL, -ECANCELED after
 * a cancel that found no case done.  A done select returns 0 again without
 * touching the cases.
 */
SB_API int sb_select_poll(sb_select *s, const sb_waker *w);

/*
 * Abandons the select: cancels every case (each hands on what it was
 * granted).  Returns -ECANCELED, or 0 when a case had taken effect before
 * the cancel could stop it (a channel case whose item moved): then the
 * select is done with that case, and sb_select_index/sb_select_result say
 * which, as after a poll.  A later poll returns the same.  After it the
 * select and its cases may be freed.
 */
SB_API int sb_select_cancel(sb_select *s);

/* The winning case's index, once done with 0; else -1. */
SB_API int sb_select_index(const sb_select *s);

/* The winning case's result (its poll's 0 or negative errno), once done
 * with 0; else the select's own status. */
SB_API int sb_select_result(const sb_select *s);

/* This future through sb_future_ops (a deadline around a select, sb_block_on). */
SB_API extern const sb_future_ops sb_select_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_SELECT_H */
