/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/select.h - wait for the first of several operations (Go's select,
 * tokio::select!, C#'s WhenAny): a permit or a shutdown event or a deadline,
 * a job from either queue.
 *
 *   sb_semaphore_acquire_init(&r->acquire, &permits, 1);
 *   sb_auto_event_wait_init(&r->shutdown, &stop);
 *   r->cases[0] = (sb_select_case)SB_SELECT_CASE(&r->acquire, &sb_semaphore_acquire_ops);
 *   r->cases[1] = (sb_select_case)SB_SELECT_CASE(&r->shutdown, &sb_auto_event_wait_ops);
 *   sb_select_init(&r->select, r->cases, 2, r->round++, 0);
 *   ... in the task's poll:
 *   if (sb_select_poll(&r->select, w) == 0)
 *           switch (sb_select_index(&r->select)) ...   the one that happened
 *
 * The cases are a caller-owned array: each names a future (initialised, not
 * yet polled) and its sb_future_ops.  The select is one future: it completes
 * (poll returns 0) as soon as one case's future completes, with that case's
 * index (sb_select_index) and its result (sb_select_result: 0 or the
 * future's negative errno, e.g. -ETIMEDOUT from a deadline, -EPIPE from a
 * closed channel).  Every other case is cancelled before poll returns, so
 * that, as the caller sees it, exactly one case took effect:
 *
 *   - what a losing case was granted is handed on by its cancel - a permit,
 *     a lock, a notification (each primitive's cancel already does that);
 *   - a channel never hands an item to a losing case: the cases of one
 *     select share a claim word, which a thread that would move an item into
 *     a waiting receive, or out of a waiting send, must win first.  One that
 *     loses moves on to the next waiter (or the ring), as if the case had
 *     not been waiting.
 *
 * Cancellation, in Tokio's three kinds: every case here is *safe* - a case
 * that loses, and a select that is cancelled, loses no item and no grant,
 * and a losing case's cancel does not make it lose data.  A waiting case
 * does lose its place in its queue when it loses (it is cancelled), as it
 * would without the select.
 *
 * A select's first poll looks at every case before any channel case
 * waits: the first look completes at once when a case is ready, and only
 * then do the cases register.
 *
 * Fair: each poll tries the cases in turn from a start that rotates: the
 * first poll starts at `seed` % n, each later one a case further; pass a
 * value that changes every round (a round counter) and, when several cases
 * are ready, each is chosen within n rounds.  With SB_SELECT_BIASED the
 * cases are tried in declaration order every time (the first ready wins).
 *
 * Every future of the library may be a case, deadlines (deadline.h)
 * included, from any loop; the select allocates nothing.  It polls each case
 * with a waker of its own ("branch waker") that stands for the caller's: a
 * case that waits holds a clone of the caller's waker, as it would without
 * the select, and wakes the caller's task directly.  The branch waker exists
 * only during sb_select_poll: a future that would keep the borrowed waker
 * without cloning it breaks the future.h contract anyway.
 *
 * Limits: a select nested as a case of another select keeps exactly-one
 * within itself only (a channel claims the inner select's word).  Two
 * cases of one select on one channel never meet each other (its send is not
 * handed to its own receive).
 *
 * Thread safety: one thread at a time drives a select (poll and cancel must
 * not race), as for any future; the cases' primitives may be used by any
 * thread meanwhile.  The cases array and the case futures must stay where
 * they are, untouched by the caller, until the select is done or cancelled.
 *
 * Errors: -EINVAL from init (no cases, more than SB_SELECT_MAX_CASES, a NULL
 * future or ops), and from poll of a never-initialised (zeroed) select;
 * -ECANCELED from poll or cancel of a select cancelled before a case won.
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
