/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Misuse that cannot be reported as an error - using a primitive after
 * destroy() - is caught by an assertion in debug builds.  Each case runs in
 * a child process, which must die of SIGABRT.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <syncband/syncband.h>

typedef void (*misuse_fn)(void);

static void expect_abort(misuse_fn misuse)
{
#ifdef NDEBUG
	(void)misuse;
	skip(); /* release builds do not check; ./x test builds with assertions */
#else
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* keep the expected assertion message out of the test log */
		if (freopen("/dev/null", "w", stderr) == NULL)
			_exit(2);
		misuse();
		_exit(0); /* survived: the misuse went unnoticed */
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
#endif
}

static void semaphore_release_after_destroy(void)
{
	sb_semaphore s = SB_SEMAPHORE_INIT(1);
	if (sb_semaphore_destroy(&s) == 0)
		sb_semaphore_release(&s, 1);
}

static void semaphore_acquire_after_destroy(void)
{
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	sb_waker w = sb_waker_noop();
	sb_semaphore_acquire f;
	if (sb_semaphore_destroy(&s) != 0)
		return;
	sb_semaphore_acquire_init(&f, &s, 1);
	sb_semaphore_acquire_poll(&f, &w);
}

static void mutex_lock_after_destroy(void)
{
	sb_mutex m = SB_MUTEX_INIT;
	if (sb_mutex_destroy(&m) == 0)
		sb_mutex_try_lock(&m);
}

static void mutex_unlock_after_destroy(void)
{
	sb_mutex m = SB_MUTEX_INIT;
	if (sb_mutex_destroy(&m) == 0)
		sb_mutex_unlock(&m);
}

static void condvar_notify_after_destroy(void)
{
	sb_condvar cv = SB_CONDVAR_INIT;
	if (sb_condvar_destroy(&cv) == 0)
		sb_condvar_notify_all(&cv);
}

static void event_wait_after_destroy(void)
{
	sb_event e = SB_EVENT_INIT(0);
	sb_waker w = sb_waker_noop();
	sb_event_wait f;
	if (sb_event_destroy(&e) != 0)
		return;
	sb_event_wait_init(&f, &e);
	sb_event_wait_poll(&f, &w);
}

static void auto_event_set_after_destroy(void)
{
	sb_auto_event e = SB_AUTO_EVENT_INIT(0);
	if (sb_auto_event_destroy(&e) == 0)
		sb_auto_event_set(&e);
}

static void barrier_wait_after_destroy(size_t parties)
{
	sb_barrier b;
	sb_waker w = sb_waker_noop();
	sb_barrier_wait f;
	if (sb_barrier_init(&b, parties) != 0 || sb_barrier_destroy(&b) != 0)
		return;
	sb_barrier_wait_init(&f, &b);
	sb_barrier_wait_poll(&f, &w);
}

static void barrier_of_two_waited_on_after_destroy(void)
{
	barrier_wait_after_destroy(2);
}

static void barrier_of_one_waited_on_after_destroy(void)
{
	barrier_wait_after_destroy(1);
}

static void once_complete_after_destroy(void)
{
	sb_once o = SB_ONCE_INIT;
	if (sb_once_try(&o) == SB_ONCE_RUN && sb_once_fail(&o) == 0 && sb_once_destroy(&o) == 0)
		sb_once_complete(&o);
}

static void once_is_done_after_destroy(void)
{
	sb_once o = SB_ONCE_INIT;
	if (sb_once_destroy(&o) == 0)
		(void)sb_once_is_done(&o); /* the poisoned word looks locked: the slow path checks */
}

static void watch_send_after_destroy(void)
{
	int value = 0;
	sb_watch w = SB_WATCH_INIT(&value, sizeof value);
	if (sb_watch_destroy(&w) == 0)
		(void)sb_watch_send(&w, &value); /* the poisoned word sends it to the slow path */
}

static void watch_subscribe_after_destroy(void)
{
	int value = 0;
	sb_watch w = SB_WATCH_INIT(&value, sizeof value);
	sb_watch_receiver rx;
	if (sb_watch_destroy(&w) == 0)
		(void)sb_watch_subscribe(&w, &rx);
}

static void a_semaphore_used_after_destroy_aborts(void **state)
{
	(void)state;
	expect_abort(semaphore_release_after_destroy);
	expect_abort(semaphore_acquire_after_destroy);
}

static void a_mutex_used_after_destroy_aborts(void **state)
{
	(void)state;
	expect_abort(mutex_lock_after_destroy);
	expect_abort(mutex_unlock_after_destroy);
}

static void a_condvar_used_after_destroy_aborts(void **state)
{
	(void)state;
	expect_abort(condvar_notify_after_destroy);
}

static void events_used_after_destroy_abort(void **state)
{
	(void)state;
	expect_abort(event_wait_after_destroy);
	expect_abort(auto_event_set_after_destroy);
}

static void a_barrier_used_after_destroy_aborts(void **state)
{
	(void)state;
	expect_abort(barrier_of_two_waited_on_after_destroy);
	expect_abort(barrier_of_one_waited_on_after_destroy);
}

static void a_once_used_after_destroy_aborts(void **state)
{
	(void)state;
	expect_abort(once_complete_after_destroy);
	expect_abort(once_is_done_after_destroy);
}

/* A receiver used after unsubscribe is not misuse of this kind: it is
 * refused with -EINVAL in every build (test_watch.c). */
static void a_watch_used_after_destroy_aborts(void **state)
{
	(void)state;
	expect_abort(watch_send_after_destroy);
	expect_abort(watch_subscribe_after_destroy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_semaphore_used_after_destroy_aborts),
		cmocka_unit_test(a_mutex_used_after_destroy_aborts),
		cmocka_unit_test(a_condvar_used_after_destroy_aborts),
		cmocka_unit_test(events_used_after_destroy_abort),
		cmocka_unit_test(a_barrier_used_after_destroy_aborts),
		cmocka_unit_test(a_once_used_after_destroy_aborts),
		cmocka_unit_test(a_watch_used_after_destroy_aborts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
