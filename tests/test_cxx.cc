// SPDX-License-Identifier: Apache-2.0
//
// The public headers in a C++ program (built once per standard, C++11 to
// C++20, with -Wall -Wextra -Wpedantic -Werror): their inline fast paths
// compile against std::atomic and behave as they do in C, falling through
// to the library where they must.
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <syncband/syncband.h>

namespace {

int failures = 0;

void check(bool ok, const char *what, int line)
{
	if (!ok) {
		std::fprintf(stderr, "test_cxx.cc:%d: check failed: %s\n", line, what);
		failures++;
	}
}

#define CHECK(cond) check((cond), #cond, __LINE__)

void semaphore_fast_and_slow_paths()
{
	sb_waker noop = sb_waker_noop();
	sb_semaphore s;
	CHECK(sb_semaphore_init(&s, 1) == 0);
	CHECK(sb_semaphore_try_acquire(&s, 1) == 0);
	CHECK(sb_semaphore_try_acquire(&s, 1) == -EAGAIN);
	sb_semaphore_acquire a;
	sb_semaphore_acquire_init(&a, &s, 1);
	CHECK(sb_semaphore_acquire_poll(&a, &noop) == SB_PENDING);
	CHECK(sb_semaphore_release(&s, 1) == 0);
	CHECK(sb_semaphore_acquire_poll(&a, &noop) == 0);
	CHECK(sb_semaphore_release(&s, 1) == 0);
	sb_semaphore_acquire_init(&a, &s, 1);
	CHECK(sb_semaphore_acquire_poll(&a, &noop) == 0);
	CHECK(sb_semaphore_release(&s, 1) == 0);
	CHECK(sb_semaphore_available(&s) == 1);
	CHECK(sb_semaphore_destroy(&s) == 0);
}

void mutex_fast_and_slow_paths()
{
	sb_waker noop = sb_waker_noop();
	sb_mutex m;
	CHECK(sb_mutex_init(&m) == 0);
	CHECK(sb_mutex_try_lock(&m) == 0);
	CHECK(sb_mutex_try_lock(&m) == -EBUSY);
	sb_mutex_lock l;
	sb_mutex_lock_init(&l, &m);
	CHECK(sb_mutex_lock_poll(&l, &noop) == SB_PENDING);
	CHECK(sb_mutex_unlock(&m) == 0);
	CHECK(sb_mutex_lock_poll(&l, &noop) == 0);
	CHECK(sb_mutex_unlock(&m) == 0);
	CHECK(sb_mutex_unlock(&m) == -EPERM);
	CHECK(sb_mutex_destroy(&m) == 0);
}

void event_fast_and_slow_paths()
{
	sb_waker noop = sb_waker_noop();
	sb_event e;
	CHECK(sb_event_init(&e, false) == 0);
	CHECK(!sb_event_is_set(&e));
	CHECK(sb_event_try_wait(&e) == -EAGAIN);
	sb_event_wait f;
	sb_event_wait_init(&f, &e);
	CHECK(sb_event_wait_poll(&f, &noop) == SB_PENDING);
	sb_event_set(&e);
	CHECK(sb_event_wait_poll(&f, &noop) == 0);
	CHECK(sb_event_is_set(&e));
	CHECK(sb_event_try_wait(&e) == 0);
	CHECK(sb_event_destroy(&e) == 0);

	sb_auto_event ae;
	CHECK(sb_auto_event_init(&ae, true) == 0);
	CHECK(sb_auto_event_try_wait(&ae) == 0);
	CHECK(sb_auto_event_try_wait(&ae) == -EAGAIN);
	sb_auto_event_wait g;
	sb_auto_event_wait_init(&g, &ae);
	CHECK(sb_auto_event_wait_poll(&g, &noop) == SB_PENDING);
	sb_auto_event_set(&ae);
	CHECK(sb_auto_event_wait_poll(&g, &noop) == 0);
	sb_auto_event_set(&ae);
	CHECK(sb_auto_event_try_wait(&ae) == 0);
	CHECK(sb_auto_event_destroy(&ae) == 0);
}

void barrier_fast_and_slow_paths()
{
	sb_waker noop = sb_waker_noop();
	sb_barrier b;
	CHECK(sb_barrier_init(&b, 2) == 0);
	sb_barrier_wait f, g;
	sb_barrier_wait_init(&f, &b);
	CHECK(sb_barrier_wait_poll(&f, &noop) == SB_PENDING);
	sb_barrier_wait_init(&g, &b);
	CHECK(sb_barrier_wait_poll(&g, &noop) == 0);
	CHECK(sb_barrier_wait_is_leader(&g));
	CHECK(sb_barrier_wait_poll(&f, &noop) == 0);
	CHECK(!sb_barrier_wait_is_leader(&f));
	CHECK(sb_barrier_destroy(&b) == 0);
}

void once_fast_and_slow_paths()
{
	sb_waker noop = sb_waker_noop();
	sb_once o;
	CHECK(sb_once_init(&o) == 0);
	CHECK(!sb_once_is_done(&o));
	sb_once_wait f, g;
	sb_once_wait_init(&f, &o);
	CHECK(sb_once_wait_poll(&f, &noop) == SB_ONCE_RUN);
	CHECK(sb_once_try(&o) == -EAGAIN);
	sb_once_wait_init(&g, &o);
	CHECK(sb_once_wait_poll(&g, &noop) == SB_PENDING);
	CHECK(sb_once_complete(&o) == 0);
	CHECK(sb_once_wait_poll(&g, &noop) == 0);
	CHECK(sb_once_is_done(&o));
	CHECK(sb_once_try(&o) == 0);
	CHECK(sb_once_destroy(&o) == 0);
}

} // namespace

void rwlock_fast_and_slow_paths()
{
	sb_waker noop = sb_waker_noop();
	sb_rwlock rw = SB_RWLOCK_INIT;
	CHECK(sb_rwlock_try_read(&rw) == 0);
	CHECK(sb_rwlock_try_write(&rw) == -EAGAIN);
	sb_rwlock_lock w;
	sb_rwlock_write_init(&w, &rw);
	CHECK(sb_rwlock_lock_poll(&w, &noop) == SB_PENDING);
	CHECK(sb_rwlock_read_unlock(&rw) == 0);
	CHECK(sb_rwlock_lock_poll(&w, &noop) == 0);
	CHECK(sb_rwlock_write_unlock(&rw) == 0);
	sb_rwlock_read_init(&w, &rw);
	CHECK(sb_rwlock_lock_poll(&w, &noop) == 0);
	CHECK(sb_rwlock_read_unlock(&rw) == 0);
	CHECK(sb_rwlock_destroy(&rw) == 0);
}

void latch_fast_and_slow_paths()
{
	sb_waker noop = sb_waker_noop();
	sb_latch l;
	CHECK(sb_latch_init(&l, 2) == 0);
	CHECK(sb_latch_try_wait(&l) == -EAGAIN);
	sb_latch_wait f;
	sb_latch_wait_init(&f, &l);
	CHECK(sb_latch_wait_poll(&f, &noop) == SB_PENDING);
	CHECK(sb_latch_count_down(&l, 3) == -ERANGE);
	CHECK(sb_latch_count_down(&l, 1) == 0);
	CHECK(sb_latch_wait_poll(&f, &noop) == SB_PENDING);
	CHECK(sb_latch_count_down(&l, 1) == 0);
	CHECK(sb_latch_wait_poll(&f, &noop) == 0);
	CHECK(sb_latch_try_wait(&l) == 0);
	CHECK(sb_latch_add(&l, 1) == 0);
	CHECK(sb_latch_count_down(&l, 1) == 0);
	CHECK(sb_latch_count(&l) == 0);
	CHECK(sb_latch_destroy(&l) == 0);
}

int main()
{
	semaphore_fast_and_slow_paths();
	mutex_fast_and_slow_paths();
	event_fast_and_slow_paths();
	barrier_fast_and_slow_paths();
	once_fast_and_slow_paths();
	rwlock_fast_and_slow_paths();
	latch_fast_and_slow_paths();
	if (failures)
		std::fprintf(stderr, "%d check(s) failed (C++ %ld)\n", failures,
			     static_cast<long>(__cplusplus));
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
