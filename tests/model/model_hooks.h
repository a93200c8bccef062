/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Force-included (gcc -include) into the library sources of the model-check
 * build only.  Every C11 atomic operation the library performs becomes a
 * call into the explorer (sched.c), which first offers a scheduling point
 * (it may switch to another logical thread there), then performs the
 * operation on the real memory and, in the weak-memory mode, decides which
 * store a load reads and tracks happens-before (README.md in this folder).
 * With SB_MODEL_CHECK the internal lock never spins and its futex calls go
 * to the scheduler (src/futex.h, src/lock.c).
 *
 * Each call carries its site: a static sb_model_site per macro invocation,
 * holding __FILE__ and __LINE__ (gcc gives the line of the macro's name,
 * also for an invocation spread over several lines).  SB_MODEL_WEAKEN names
 * one site whose memory orders the explorer then treats as relaxed
 * (mutate.py).
 */
#ifndef SYNCBAND_MODEL_HOOKS_H
#define SYNCBAND_MODEL_HOOKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* One atomic operation in the source; filled in on its first execution. */
typedef struct sb_model_site {
	const char *file;
	int line;
	int kind;                   /* enum sb_model_op, 0 until first seen */
	int order, failure_order;   /* as written in the source */
	bool weakened;              /* SB_MODEL_WEAKEN names it */
	long reached;               /* executions by a scheduled logical thread */
	struct sb_model_site *next; /* every site seen, for SB_MODEL_SITES */
} sb_model_site;

enum sb_model_op {
	SB_MODEL_LOAD = 1,
	SB_MODEL_STORE,
	SB_MODEL_EXCHANGE,
	SB_MODEL_CAS,
	SB_MODEL_FETCH_ADD,
	SB_MODEL_FETCH_SUB,
	SB_MODEL_FETCH_OR,
	SB_MODEL_FETCH_AND,
	SB_MODEL_FENCE,
};

void sb_model_load(sb_model_site *site, const void *addr, size_t size, void *out, int order);
void sb_model_store(sb_model_site *site, void *addr, size_t size, const void *val, int order);
/* Exchange and fetch-ops: *old receives the previous value. */
void sb_model_rmw(sb_model_site *site, int op, void *addr, size_t size, const void *operand,
		  void *old, int order);
bool sb_model_cas(sb_model_site *site, void *addr, size_t size, void *expected,
		  const void *desired, bool weak, int success, int failure);
void sb_model_fence(sb_model_site *site, int order);

/*
 * A plain (non-atomic) field that the library hands between threads by its
 * atomics' orders (src/loop.c's links): under the weak model the access
 * fails the execution unless it happens-after the field's last write and,
 * for a write, every read since.
 */
void sb_model_plain_access(const void *addr, bool write);

/*
 * The channel copies every item through memcpy, also those of the sizes it
 * otherwise copies inline (include/syncband/channel.h): test_model_channel
 * and test_model_select watch item memory through __wrap_memcpy.
 */
#define SB__CHANNEL_COPY_BY_MEMCPY 1

#define SB_MODEL_SITE_()                                                             \
	__extension__({                                                              \
		static sb_model_site sb_site_ = { .file = __FILE__, .line = __LINE__ }; \
		&sb_site_;                                                           \
	})

#undef atomic_load_explicit
#undef atomic_store_explicit
#undef atomic_exchange_explicit
#undef atomic_compare_exchange_strong_explicit
#undef atomic_compare_exchange_weak_explicit
#undef atomic_fetch_add_explicit
#undef atomic_fetch_sub_explicit
#undef atomic_fetch_or_explicit
#undef atomic_fetch_and_explicit
#undef atomic_thread_fence

#define atomic_load_explicit(PTR, MO)                                                  \
	__extension__({                                                                \
		__auto_type sb_p_ = (PTR);                                             \
		__typeof__((void)0, *sb_p_) sb_t_;                                     \
		sb_model_load(SB_MODEL_SITE_(), (const void *)sb_p_, sizeof sb_t_, &sb_t_, \
			      (MO));                                                   \
		sb_t_;                                                                 \
	})

#define atomic_store_explicit(PTR, VAL, MO)                                            \
	__extension__({                                                                \
		__auto_type sb_p_ = (PTR);                                             \
		__typeof__((void)0, *sb_p_) sb_t_ = (VAL);                             \
		sb_model_store(SB_MODEL_SITE_(), (void *)sb_p_, sizeof sb_t_, &sb_t_, (MO)); \
	})

#define sb_model_rmw_(OP, PTR, VAL, MO)                                                \
	__extension__({                                                                \
		__auto_type sb_p_ = (PTR);                                             \
		__typeof__((void)0, *sb_p_) sb_v_ = (VAL);                             \
		__typeof__((void)0, *sb_p_) sb_t_;                                     \
		sb_model_rmw(SB_MODEL_SITE_(), (OP), (void *)sb_p_, sizeof sb_t_, &sb_v_, \
			     &sb_t_, (MO));                                            \
		sb_t_;                                                                 \
	})

#define atomic_exchange_explicit(PTR, VAL, MO) sb_model_rmw_(SB_MODEL_EXCHANGE, PTR, VAL, MO)
#define atomic_fetch_add_explicit(PTR, VAL, MO) sb_model_rmw_(SB_MODEL_FETCH_ADD, PTR, VAL, MO)
#define atomic_fetch_sub_explicit(PTR, VAL, MO) sb_model_rmw_(SB_MODEL_FETCH_SUB, PTR, VAL, MO)
#define atomic_fetch_or_explicit(PTR, VAL, MO) sb_model_rmw_(SB_MODEL_FETCH_OR, PTR, VAL, MO)
#define atomic_fetch_and_explicit(PTR, VAL, MO) sb_model_rmw_(SB_MODEL_FETCH_AND, PTR, VAL, MO)

#define sb_model_cas_(PTR, VAL, DES, WEAK, SUC, FAIL)                                  \
	__extension__({                                                                \
		__auto_type sb_p_ = (PTR);                                             \
		__auto_type sb_e_ = (VAL);                                             \
		__typeof__((void)0, *sb_p_) sb_d_ = (DES);                             \
		_Static_assert(sizeof *sb_e_ == sizeof sb_d_, "CAS operand sizes");    \
		sb_model_cas(SB_MODEL_SITE_(), (void *)sb_p_, sizeof sb_d_, (void *)sb_e_, \
			     &sb_d_, (WEAK), (SUC), (FAIL));                           \
	})

#define atomic_compare_exchange_strong_explicit(PTR, VAL, DES, SUC, FAIL) \
	sb_model_cas_(PTR, VAL, DES, false, SUC, FAIL)
#define atomic_compare_exchange_weak_explicit(PTR, VAL, DES, SUC, FAIL) \
	sb_model_cas_(PTR, VAL, DES, true, SUC, FAIL)

#define atomic_thread_fence(MO) sb_model_fence(SB_MODEL_SITE_(), (MO))

#endif
