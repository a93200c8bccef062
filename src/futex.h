/* SPDX-License-Identifier: Apache-2.0 */
/* Thin wrappers over the futex system call (private futexes only). */
#ifndef SYNCBAND_SRC_FUTEX_H
#define SYNCBAND_SRC_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The 32-bit half of a word that holds its low bits: what a futex can watch. */
static inline _Atomic uint32_t *sb_futex_low_half(_Atomic size_t *word)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (_Atomic uint32_t *)(void *)((char *)word + sizeof(size_t) - sizeof(uint32_t));
#else
	return (_Atomic uint32_t *)(void *)word;
#endif
}

#ifdef SB_MODEL_CHECK
/*
 * The model-check build (tests/model) runs logical threads under its own
 * scheduler: a futex wait blocks the logical thread until the word changes,
 * and a wake has nothing to do.
 */
void sb_model_futex_wait(_Atomic uint32_t *word, uint32_t expected);
static inline bool sb_futex_wait(_Atomic uint32_t *word, uint32_t expected,
				 const struct timespec *rel)
{
	(void)rel;
	sb_model_futex_wait(word, expected);
	return true;
}
#define sb_futex_wake(word, count) ((void)(word), (void)(count))
#else
/*
 * Sleeps while *word == expected, at most `rel` (NULL: no limit).  Returns
 * for any reason (woken, value changed, signal, timeout): callers re-check.
 * False if it returned without sleeping, the word no longer `expected`.
 */
static inline bool sb_futex_wait(_Atomic uint32_t *word, uint32_t expected,
				 const struct timespec *rel)
{
	return syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, rel, NULL, 0) == 0 ||
	       errno != EAGAIN;
}

/*
 * Wakes up to `count` sleepers on `word`.  Safe even if the memory holding
 * `word` was released meanwhile: a private futex wake only hashes the address
 * and never dereferences it, and every futex sleeper re-checks its condition.
 */
static inline void sb_futex_wake(_Atomic uint32_t *word, int count)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}
#endif

#endif
