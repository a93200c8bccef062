/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counts heap allocations by interposing the allocator, for the programs
 * that check that nothing allocates (test_allocations, the stress tests, the
 * torture suite).  Include it in one translation unit of a program.  The
 * sanitizers own malloc, so CMake defines SB_TEST_COUNT_ALLOCATIONS only in
 * the plain build; without it allocation_count() reads 0.  The interposers
 * are exported (the build hides symbols by default), so that calls from
 * inside libc and liburing are counted too, not only the library's.
 */
#ifndef SYNCBAND_TESTS_COUNT_ALLOCATIONS_H
#define SYNCBAND_TESTS_COUNT_ALLOCATIONS_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#ifdef SB_TEST_COUNT_ALLOCATIONS
#define INTERPOSED __attribute__((visibility("default")))
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_long allocations;

INTERPOSED void *malloc(size_t n)
{
	atomic_fetch_add(&allocations, 1);
	return __libc_malloc(n);
}
INTERPOSED void *calloc(size_t n, size_t size)
{
	atomic_fetch_add(&allocations, 1);
	return __libc_calloc(n, size);
}
INTERPOSED void *realloc(void *p, size_t n)
{
	atomic_fetch_add(&allocations, 1);
	return __libc_realloc(p, n);
}
INTERPOSED int posix_memalign(void **out, size_t align, size_t n)
{
	atomic_fetch_add(&allocations, 1);
	*out = __libc_memalign(align, n);
	return *out ? 0 : ENOMEM;
}
INTERPOSED void *aligned_alloc(size_t align, size_t n)
{
	atomic_fetch_add(&allocations, 1);
	return __libc_memalign(align, n);
}
INTERPOSED void free(void *p)
{
	__libc_free(p);
}

static inline long allocation_count(void)
{
	return atomic_load(&allocations);
}
#else
static inline long allocation_count(void)
{
	return 0;
}
#endif

#endif
