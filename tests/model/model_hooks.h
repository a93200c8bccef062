/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Force-included (gcc -include) into the library sources of the model-check
 * build only.  Every C11 atomic operation the library performs first calls
 * sb_model_point(), where the controlled scheduler (sched.c) may switch to
 * another logical thread.  The operations themselves are unchanged (gcc's
 * __atomic builtins, as <stdatomic.h> expands them).  With SB_MODEL_CHECK
 * the internal lock never spins and its futex calls go to the scheduler
 * (src/futex.h, src/lock.c).
 *
 * The explorer runs one logical thread at a time, so it enumerates
 * interleavings under sequential consistency; weaker orderings are the
 * ThreadSanitizer runs' job.
 */
#ifndef SYNCBAND_MODEL_HOOKS_H
#define SYNCBAND_MODEL_HOOKS_H

#include <stdatomic.h>

void sb_model_point(void);
/* The same, for a read-modify-write: also counted apart (sb_model_rmws). */
void sb_model_point_rmw(void);

#undef atomic_load_explicit
#undef atomic_store_explicit
#undef atomic_exchange_explicit
#undef atomic_compare_exchange_strong_explicit
#undef atomic_compare_exchange_weak_explicit
#undef atomic_fetch_add_explicit
#undef atomic_fetch_sub_explicit
#undef atomic_fetch_or_explicit
#undef atomic_fetch_and_explicit

#define atomic_load_explicit(PTR, MO)                                                  \
	__extension__({                                                                \
		__auto_type sb_p_ = (PTR);                                             \
		__typeof__((void)0, *sb_p_) sb_t_;                                     \
		sb_model_point();                                                      \
		__atomic_load(sb_p_, &sb_t_, (MO));                                    \
		sb_t_;                                                                 \
	})

#define atomic_store_explicit(PTR, VAL, MO)                                            \
	__extension__({                                                                \
		__auto_type sb_p_ = (PTR);                                             \
		__typeof__((void)0, *sb_p_) sb_t_ = (VAL);                             \
		sb_model_point();                                                      \
		__atomic_store(sb_p_, &sb_t_, (MO));                                   \
	})

#define atomic_exchange_explicit(PTR, VAL, MO)                                         \
	__extension__({                                                                \
		__auto_type sb_p_ = (PTR);                                             \
		__typeof__((void)0, *sb_p_) sb_v_ = (VAL);                             \
		__typeof__((void)0, *sb_p_) sb_t_;                                     \
		sb_model_point_rmw();                                                      \
		__atomic_exchange(sb_p_, &sb_v_, &sb_t_, (MO));                        \
		sb_t_;                                                                 \
	})

#define sb_model_cas_(PTR, VAL, DES, WEAK, SUC, FAIL)                                  \
	__extension__({                                                                \
		__auto_type sb_p_ = (PTR);                                             \
		__typeof__((void)0, *sb_p_) sb_t_ = (DES);                             \
		sb_model_point_rmw();                                                      \
		__atomic_compare_exchange(sb_p_, (VAL), &sb_t_, (WEAK), (SUC), (FAIL)); \
	})

#define atomic_compare_exchange_strong_explicit(PTR, VAL, DES, SUC, FAIL) \
	sb_model_cas_(PTR, VAL, DES, 0, SUC, FAIL)
#define atomic_compare_exchange_weak_explicit(PTR, VAL, DES, SUC, FAIL) \
	sb_model_cas_(PTR, VAL, DES, 1, SUC, FAIL)

#define atomic_fetch_add_explicit(PTR, VAL, MO) \
	(sb_model_point_rmw(), __atomic_fetch_add((PTR), (VAL), (MO)))
#define atomic_fetch_sub_explicit(PTR, VAL, MO) \
	(sb_model_point_rmw(), __atomic_fetch_sub((PTR), (VAL), (MO)))
#define atomic_fetch_or_explicit(PTR, VAL, MO) \
	(sb_model_point_rmw(), __atomic_fetch_or((PTR), (VAL), (MO)))
#define atomic_fetch_and_explicit(PTR, VAL, MO) \
	(sb_model_point_rmw(), __atomic_fetch_and((PTR), (VAL), (MO)))

#endif
