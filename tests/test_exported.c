/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exported entry points of the headers' inline functions, seen as a
 * caller that cannot inline sees them: looked up by name in the shared
 * library with dlsym (as an FFI binding would) and called through the
 * pointer.  Each behaves like the inline function of the same name, fast
 * path and slow path alike; so do the *_slow functions they fall through to.
 */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <syncband/syncband.h>

/* The library's symbol `name`, as a function pointer of the type of *fn. */
#define LOOKUP(fn, name) lookup((void *)&(fn), sizeof(fn), (name))

static void lookup(void *fn, size_t size, const char *name)
{
	void *sym = dlsym(RTLD_DEFAULT, name);
	if (sym == NULL)
		fail_msg("libsyncband exports no %s", name);
	/* POSIX: a function's address from dlsym, copied into the pointer. */
	memcpy(fn, &sym, size);
}

static void every_inline_function_and_its_slow_path_is_exported_by_name(void **state)
{
	(void)state;
	static const char *const names[] = {
		"sb_semaphore_try_acquire", "sb_semaphore_release",
		"sb_semaphore_acquire_init", "sb_semaphore_acquire_poll",
		"sb_semaphore_try_acquire_slow", "sb_semaphore_release_slow",
		"sb_semaphore_acquire_poll_slow",
		"sb_mutex_try_lock", "sb_mutex_unlock", "sb_mutex_lock_init", "sb_mutex_lock_poll",
		"sb_mutex_try_lock_slow", "sb_mutex_unlock_slow", "sb_mutex_lock_poll_slow",
		"sb_event_set", "sb_event_is_set", "sb_event_try_wait", "sb_event_wait_init",
		"sb_event_wait_poll", "sb_event_set_slow", "sb_event_is_set_slow",
		"sb_event_wait_poll_slow",
		"sb_auto_event_set", "sb_auto_event_try_wait", "sb_auto_event_wait_init",
		"sb_auto_event_wait_poll", "sb_auto_event_set_slow", "sb_auto_event_try_wait_slow",
		"sb_auto_event_wait_poll_slow",
		"sb_barrier_wait_init", "sb_barrier_wait_poll", "sb_barrier_wait_is_leader",
		"sb_barrier_wait_poll_slow",
		"sb_once_is_done", "sb_once_try", "sb_once_wait_init", "sb_once_wait_poll",
		"sb_once_is_done_slow", "sb_once_try_slow", "sb_once_wait_poll_slow",
		"sb_rwlock_try_read", "sb_rwlock_read_unlock", "sb_rwlock_try_write",
		"sb_rwlock_write_unlock", "sb_rwlock_read_init", "sb_rwlock_write_init",
		"sb_rwlock_lock_poll", "sb_rwlock_try_read_slow", "sb_rwlock_read_unlock_slow",
		"sb_rwlock_try_write_slow", "sb_rwlock_write_unlock_slow",
		"sb_rwlock_lock_poll_slow",
		"sb_latch_count_down", "sb_latch_try_wait", "sb_latch_wait_init",
		"sb_latch_wait_poll", "sb_latch_count_down_slow", "sb_latch_wait_poll_slow",
		"sb_broadcast_send_init", "sb_broadcast_recv_init",
		"sb_watch_send", "sb_watch_read", "sb_watch_try_changed", "sb_watch_changed_init",
		"sb_watch_changed_poll", "sb_watch_send_slow", "sb_watch_read_slow",
		"sb_watch_changed_poll_slow", "sb_watch_unlock_slow",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_non_null(dlsym(RTLD_DEFAULT, names[i]));
}

static void exported_semaphore_functions_take_wait_and_hand_over_like_the_inline_ones(void **state)
{
	(void)state;
	int (*try_acquire)(sb_semaphore *, size_t);
	int (*release)(sb_semaphore *, size_t);
	void (*acquire_init)(sb_semaphore_acquire *, sb_semaphore *, size_t);
	int (*acquire_poll)(sb_semaphore_acquire *, const sb_waker *);
	LOOKUP(try_acquire, "sb_semaphore_try_acquire");
	LOOKUP(release, "sb_semaphore_release");
	LOOKUP(acquire_init, "sb_semaphore_acquire_init");
	LOOKUP(acquire_poll, "sb_semaphore_acquire_poll");
	sb_waker noop = sb_waker_noop();
	sb_semaphore s;
	assert_int_equal(sb_semaphore_init(&s, 1), 0);

	assert_int_equal(try_acquire(&s, 1), 0);
	assert_int_equal(try_acquire(&s, 1), -EAGAIN);
	assert_int_equal(try_acquire(&s, SB_SEMAPHORE_MAX_PERMITS + 1), -EINVAL);
	sb_semaphore_acquire a;
	acquire_init(&a, &s, 1);
	assert_int_equal(acquire_poll(&a, &noop), SB_PENDING);
	assert_int_equal(release(&s, 1), 0); /* handed to the waiter */
	assert_int_equal(sb_semaphore_available(&s), 0);
	assert_int_equal(acquire_poll(&a, &noop), 0);
	assert_int_equal(release(&s, 1), 0);
	acquire_init(&a, &s, 1);
	assert_int_equal(acquire_poll(&a, &noop), 0); /* taken on the first poll */
	assert_int_equal(release(&s, 1), 0);
	assert_int_equal(release(&s, SB_SEMAPHORE_MAX_PERMITS), -EOVERFLOW);
	assert_int_equal(sb_semaphore_available(&s), 1);
	sb_semaphore_close(&s);
	assert_int_equal(try_acquire(&s, 1), -ESHUTDOWN);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

static void exported_mutex_functions_lock_queue_and_hand_over_like_the_inline_ones(void **state)
{
	(void)state;
	int (*try_lock)(sb_mutex *);
	int (*unlock)(sb_mutex *);
	void (*lock_init)(sb_mutex_lock *, sb_mutex *);
	int (*lock_poll)(sb_mutex_lock *, const sb_waker *);
	LOOKUP(try_lock, "sb_mutex_try_lock");
	LOOKUP(unlock, "sb_mutex_unlock");
	LOOKUP(lock_init, "sb_mutex_lock_init");
	LOOKUP(lock_poll, "sb_mutex_lock_poll");
	sb_waker noop = sb_waker_noop();
	sb_mutex m;
	assert_int_equal(sb_mutex_init_fifo(&m), 0); /* an unlock hands it over */

	assert_int_equal(try_lock(&m), 0);
	assert_int_equal(try_lock(&m), -EBUSY);
	sb_mutex_lock l;
	lock_init(&l, &m);
	assert_int_equal(lock_poll(&l, &noop), SB_PENDING);
	assert_int_equal(unlock(&m), 0); /* handed to the waiter */
	assert_true(sb_mutex_is_locked(&m));
	assert_int_equal(lock_poll(&l, &noop), 0);
	assert_int_equal(unlock(&m), 0);
	assert_int_equal(unlock(&m), -EPERM);
	lock_init(&l, &m);
	assert_int_equal(lock_poll(&l, &noop), 0); /* taken on the first poll */
	assert_int_equal(unlock(&m), 0);
	assert_int_equal(sb_mutex_destroy(&m), 0);
}

static void exported_event_functions_set_test_and_release_like_the_inline_ones(void **state)
{
	(void)state;
	void (*set)(sb_event *);
	bool (*is_set)(const sb_event *);
	int (*try_wait)(const sb_event *);
	void (*wait_init)(sb_event_wait *, sb_event *);
	int (*wait_poll)(sb_event_wait *, const sb_waker *);
	LOOKUP(set, "sb_event_set");
	LOOKUP(is_set, "sb_event_is_set");
	LOOKUP(try_wait, "sb_event_try_wait");
	LOOKUP(wait_init, "sb_event_wait_init");
	LOOKUP(wait_poll, "sb_event_wait_poll");
	sb_waker noop = sb_waker_noop();
	sb_event e;
	assert_int_equal(sb_event_init(&e, false), 0);

	assert_false(is_set(&e));
	assert_int_equal(try_wait(&e), -EAGAIN);
	sb_event_wait f;
	wait_init(&f, &e);
	assert_int_equal(wait_poll(&f, &noop), SB_PENDING);
	set(&e); /* releases the wait */
	assert_true(is_set(&e));
	assert_int_equal(try_wait(&e), 0);
	assert_int_equal(wait_poll(&f, &noop), 0);
	wait_init(&f, &e);
	assert_int_equal(wait_poll(&f, &noop), 0); /* set: ready on the first poll */
	sb_event_reset(&e);
	set(&e); /* nobody waits */
	assert_true(is_set(&e));
	assert_int_equal(sb_event_destroy(&e), 0);
}

static void exported_auto_event_functions_store_and_hand_over_like_the_inline_ones(void **state)
{
	(void)state;
	void (*set)(sb_auto_event *);
	int (*try_wait)(sb_auto_event *);
	void (*wait_init)(sb_auto_event_wait *, sb_auto_event *);
	int (*wait_poll)(sb_auto_event_wait *, const sb_waker *);
	LOOKUP(set, "sb_auto_event_set");
	LOOKUP(try_wait, "sb_auto_event_try_wait");
	LOOKUP(wait_init, "sb_auto_event_wait_init");
	LOOKUP(wait_poll, "sb_auto_event_wait_poll");
	sb_waker noop = sb_waker_noop();
	sb_auto_event e;
	assert_int_equal(sb_auto_event_init(&e, false), 0);

	assert_int_equal(try_wait(&e), -EAGAIN);
	set(&e);
	set(&e); /* coalesces */
	assert_int_equal(try_wait(&e), 0);
	assert_int_equal(try_wait(&e), -EAGAIN);
	sb_auto_event_wait f;
	wait_init(&f, &e);
	assert_int_equal(wait_poll(&f, &noop), SB_PENDING);
	set(&e); /* handed to the wait, not stored */
	assert_int_equal(try_wait(&e), -EAGAIN);
	assert_int_equal(wait_poll(&f, &noop), 0);
	set(&e);
	wait_init(&f, &e);
	assert_int_equal(wait_poll(&f, &noop), 0); /* takes the stored signal */
	assert_int_equal(sb_auto_event_destroy(&e), 0);
}

static void exported_barrier_functions_arrive_release_and_lead_like_the_inline_ones(void **state)
{
	(void)state;
	void (*wait_init)(sb_barrier_wait *, sb_barrier *);
	int (*wait_poll)(sb_barrier_wait *, const sb_waker *);
	bool (*is_leader)(const sb_barrier_wait *);
	int (*poll_slow)(sb_barrier_wait *, const sb_waker *);
	LOOKUP(wait_init, "sb_barrier_wait_init");
	LOOKUP(wait_poll, "sb_barrier_wait_poll");
	LOOKUP(is_leader, "sb_barrier_wait_is_leader");
	LOOKUP(poll_slow, "sb_barrier_wait_poll_slow");
	sb_waker noop = sb_waker_noop();
	sb_barrier b;
	assert_int_equal(sb_barrier_init(&b, 3), 0);

	sb_barrier_wait f[3];
	wait_init(&f[0], &b);
	assert_int_equal(wait_poll(&f[0], &noop), SB_PENDING);
	wait_init(&f[1], &b);
	assert_int_equal(poll_slow(&f[1], &noop), SB_PENDING); /* the slow path arrives too */
	wait_init(&f[2], &b);
	assert_false(is_leader(&f[2]));
	assert_int_equal(wait_poll(&f[2], &noop), 0); /* the last arrival leads */
	assert_true(is_leader(&f[2]));
	assert_int_equal(wait_poll(&f[0], &noop), 0); /* released: one load */
	assert_int_equal(poll_slow(&f[1], &noop), 0);
	assert_false(is_leader(&f[0]));
	assert_false(is_leader(&f[1]));
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

static void exported_once_functions_run_wait_and_complete_like_the_inline_ones(void **state)
{
	(void)state;
	bool (*is_done)(const sb_once *);
	int (*try_run)(sb_once *);
	void (*wait_init)(sb_once_wait *, sb_once *);
	int (*wait_poll)(sb_once_wait *, const sb_waker *);
	bool (*is_done_slow)(const sb_once *);
	int (*try_slow)(sb_once *);
	LOOKUP(is_done, "sb_once_is_done");
	LOOKUP(try_run, "sb_once_try");
	LOOKUP(wait_init, "sb_once_wait_init");
	LOOKUP(wait_poll, "sb_once_wait_poll");
	LOOKUP(is_done_slow, "sb_once_is_done_slow");
	LOOKUP(try_slow, "sb_once_try_slow");
	sb_waker noop = sb_waker_noop();
	sb_once o;
	assert_int_equal(sb_once_init(&o), 0);

	assert_false(is_done(&o));
	assert_false(is_done_slow(&o));
	sb_once_wait f, g;
	wait_init(&f, &o);
	assert_int_equal(wait_poll(&f, &noop), SB_ONCE_RUN);
	assert_int_equal(try_run(&o), -EAGAIN);
	assert_int_equal(try_slow(&o), -EAGAIN);
	wait_init(&g, &o);
	assert_int_equal(wait_poll(&g, &noop), SB_PENDING);
	assert_int_equal(sb_once_fail(&o), 0); /* handed to g */
	assert_int_equal(wait_poll(&g, &noop), SB_ONCE_RUN);
	assert_int_equal(sb_once_fail(&o), 0); /* nobody waits: free */
	assert_int_equal(try_slow(&o), SB_ONCE_RUN);
	assert_int_equal(sb_once_complete(&o), 0);
	assert_true(is_done(&o));
	assert_true(is_done_slow(&o));
	assert_int_equal(try_run(&o), 0);
	wait_init(&f, &o);
	assert_int_equal(wait_poll(&f, &noop), 0);
	assert_int_equal(sb_once_destroy(&o), 0);
}

static void exported_rwlock_functions_share_exclude_and_hand_over_like_the_inline_ones(void **state)
{
	(void)state;
	int (*try_read)(sb_rwlock *);
	int (*read_unlock)(sb_rwlock *);
	int (*try_write)(sb_rwlock *);
	int (*write_unlock)(sb_rwlock *);
	void (*read_init)(sb_rwlock_lock *, sb_rwlock *);
	void (*write_init)(sb_rwlock_lock *, sb_rwlock *);
	int (*lock_poll)(sb_rwlock_lock *, const sb_waker *);
	int (*try_read_slow)(sb_rwlock *);
	int (*read_unlock_slow)(sb_rwlock *);
	int (*try_write_slow)(sb_rwlock *);
	int (*write_unlock_slow)(sb_rwlock *);
	int (*lock_poll_slow)(sb_rwlock_lock *, const sb_waker *);
	LOOKUP(try_read, "sb_rwlock_try_read");
	LOOKUP(read_unlock, "sb_rwlock_read_unlock");
	LOOKUP(try_write, "sb_rwlock_try_write");
	LOOKUP(write_unlock, "sb_rwlock_write_unlock");
	LOOKUP(read_init, "sb_rwlock_read_init");
	LOOKUP(write_init, "sb_rwlock_write_init");
	LOOKUP(lock_poll, "sb_rwlock_lock_poll");
	LOOKUP(try_read_slow, "sb_rwlock_try_read_slow");
	LOOKUP(read_unlock_slow, "sb_rwlock_read_unlock_slow");
	LOOKUP(try_write_slow, "sb_rwlock_try_write_slow");
	LOOKUP(write_unlock_slow, "sb_rwlock_write_unlock_slow");
	LOOKUP(lock_poll_slow, "sb_rwlock_lock_poll_slow");

	sb_waker noop = sb_waker_noop();
	sb_rwlock rw; /* strict FIFO: the queued reader waits behind the writer */
	assert_int_equal(sb_rwlock_init_fifo(&rw), 0);
	assert_int_equal(try_read(&rw), 0);
	assert_int_equal(try_write(&rw), -EAGAIN);
	sb_rwlock_lock w, r;
	write_init(&w, &rw);
	assert_int_equal(lock_poll(&w, &noop), SB_PENDING);
	read_init(&r, &rw);
	assert_int_equal(lock_poll(&r, &noop), SB_PENDING); /* behind the writer */
	assert_int_equal(read_unlock(&rw), 0);
	assert_int_equal(lock_poll(&w, &noop), 0);
	assert_int_equal(write_unlock(&rw), 0);
	assert_int_equal(lock_poll(&r, &noop), 0);
	assert_int_equal(read_unlock(&rw), 0);
	assert_int_equal(read_unlock(&rw), -EPERM);
	assert_int_equal(write_unlock(&rw), -EPERM);

	/* the slow paths decide the uncontended case too */
	assert_int_equal(try_read_slow(&rw), 0);
	assert_int_equal(try_write_slow(&rw), -EAGAIN);
	assert_int_equal(read_unlock_slow(&rw), 0);
	assert_int_equal(read_unlock_slow(&rw), -EPERM);
	assert_int_equal(try_write_slow(&rw), 0);
	assert_int_equal(try_read_slow(&rw), -EAGAIN);
	assert_int_equal(write_unlock_slow(&rw), 0);
	assert_int_equal(write_unlock_slow(&rw), -EPERM);
	sb_rwlock_lock f;
	read_init(&f, &rw);
	assert_int_equal(lock_poll_slow(&f, &noop), 0);
	assert_int_equal(read_unlock(&rw), 0);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

static void exported_latch_functions_count_down_test_and_release_like_the_inline_ones(void **state)
{
	(void)state;
	int (*count_down)(sb_latch *, size_t);
	int (*try_wait)(const sb_latch *);
	void (*wait_init)(sb_latch_wait *, sb_latch *);
	int (*wait_poll)(sb_latch_wait *, const sb_waker *);
	LOOKUP(count_down, "sb_latch_count_down");
	LOOKUP(try_wait, "sb_latch_try_wait");
	LOOKUP(wait_init, "sb_latch_wait_init");
	LOOKUP(wait_poll, "sb_latch_wait_poll");
	sb_waker noop = sb_waker_noop();
	sb_latch l;
	assert_int_equal(sb_latch_init(&l, 2), 0);

	assert_int_equal(try_wait(&l), -EAGAIN);
	sb_latch_wait f;
	wait_init(&f, &l);
	assert_int_equal(wait_poll(&f, &noop), SB_PENDING);
	assert_int_equal(count_down(&l, 3), -ERANGE);
	assert_int_equal(count_down(&l, 1), 0); /* lock-free: stays above zero */
	assert_int_equal(wait_poll(&f, &noop), SB_PENDING);
	assert_int_equal(count_down(&l, 1), 0); /* releases the wait */
	assert_int_equal(try_wait(&l), 0);
	assert_int_equal(wait_poll(&f, &noop), 0);
	wait_init(&f, &l);
	assert_int_equal(wait_poll(&f, &noop), 0); /* open: ready on the first poll */
	assert_int_equal(sb_latch_add(&l, 1), 0);
	assert_int_equal(count_down(&l, 1), 0); /* nobody waits */
	assert_int_equal(try_wait(&l), 0);
	assert_int_equal(sb_latch_destroy(&l), 0);
}

static void exported_watch_functions_send_read_and_wait_like_the_inline_ones(void **state)
{
	(void)state;
	int (*send)(sb_watch *, const void *);
	int (*read)(sb_watch_receiver *, void *);
	int (*try_changed)(const sb_watch_receiver *);
	void (*changed_init)(sb_watch_changed *, sb_watch_receiver *);
	int (*changed_poll)(sb_watch_changed *, const sb_waker *);
	int (*send_slow)(sb_watch *, const void *);
	int (*read_slow)(sb_watch_receiver *, void *);
	LOOKUP(send, "sb_watch_send");
	LOOKUP(read, "sb_watch_read");
	LOOKUP(try_changed, "sb_watch_try_changed");
	LOOKUP(changed_init, "sb_watch_changed_init");
	LOOKUP(changed_poll, "sb_watch_changed_poll");
	LOOKUP(send_slow, "sb_watch_send_slow");
	LOOKUP(read_slow, "sb_watch_read_slow");
	sb_waker noop = sb_waker_noop();
	int storage = 1, v = 2, out = 0;
	sb_watch w;
	sb_watch_receiver rx = SB_WATCH_RECEIVER_INIT;
	assert_int_equal(sb_watch_init(&w, &storage, sizeof storage), 0);
	assert_int_equal(sb_watch_subscribe(&w, &rx), 0);

	assert_int_equal(try_changed(&rx), -EAGAIN);
	sb_watch_changed f;
	changed_init(&f, &rx);
	assert_int_equal(changed_poll(&f, &noop), SB_PENDING);
	assert_int_equal(send(&w, &v), 0); /* a waiter: the slow path wakes it */
	assert_int_equal(changed_poll(&f, &noop), 0);
	assert_int_equal(try_changed(&rx), 0);
	assert_int_equal(read(&rx, &out), 0);
	assert_int_equal(out, 2);
	assert_int_equal(try_changed(&rx), -EAGAIN);
	v = 3;
	assert_int_equal(send(&w, &v), 0); /* nobody waits: inline */
	assert_int_equal(send_slow(&w, &v), 0);
	assert_int_equal(sb_watch_version(&w), 3);
	assert_int_equal(read_slow(&rx, &out), 0);
	assert_int_equal(out, 3);
	assert_int_equal(sb_watch_seen(&rx), 3);
	assert_int_equal(send(&w, NULL), -EINVAL);
	sb_watch_close(&w);
	assert_int_equal(send_slow(&w, &v), -EPIPE);
	assert_int_equal(try_changed(&rx), -EPIPE);
	assert_int_equal(sb_watch_unsubscribe(&rx), 0);
	assert_int_equal(read(&rx, &out), -EINVAL);
	assert_int_equal(sb_watch_destroy(&w), 0);
}

static void slow_paths_called_directly_still_decide_rightly(void **state)
{
	(void)state;
	int (*sem_try_slow)(sb_semaphore *, size_t);
	int (*sem_release_slow)(sb_semaphore *, size_t);
	int (*mutex_try_slow)(sb_mutex *);
	int (*mutex_unlock_slow)(sb_mutex *);
	void (*event_set_slow)(sb_event *);
	bool (*event_is_set_slow)(const sb_event *);
	void (*auto_set_slow)(sb_auto_event *);
	int (*auto_try_slow)(sb_auto_event *);
	LOOKUP(sem_try_slow, "sb_semaphore_try_acquire_slow");
	LOOKUP(sem_release_slow, "sb_semaphore_release_slow");
	LOOKUP(mutex_try_slow, "sb_mutex_try_lock_slow");
	LOOKUP(mutex_unlock_slow, "sb_mutex_unlock_slow");
	LOOKUP(event_set_slow, "sb_event_set_slow");
	LOOKUP(event_is_set_slow, "sb_event_is_set_slow");
	LOOKUP(auto_set_slow, "sb_auto_event_set_slow");
	LOOKUP(auto_try_slow, "sb_auto_event_try_wait_slow");
	int (*latch_count_down_slow)(sb_latch *, size_t);
	LOOKUP(latch_count_down_slow, "sb_latch_count_down_slow");

	/* An inline fast path may give up for any reason (a weak CAS fails
	 * spuriously), so each slow path handles the uncontended case too. */
	sb_semaphore s;
	assert_int_equal(sb_semaphore_init(&s, 1), 0);
	assert_int_equal(sem_try_slow(&s, 1), 0);
	assert_int_equal(sem_try_slow(&s, 1), -EAGAIN);
	assert_int_equal(sem_release_slow(&s, 1), 0);
	assert_int_equal(sb_semaphore_available(&s), 1);
	sb_mutex m;
	assert_int_equal(sb_mutex_init(&m), 0);
	assert_int_equal(mutex_try_slow(&m), 0);
	assert_int_equal(mutex_try_slow(&m), -EBUSY);
	assert_int_equal(mutex_unlock_slow(&m), 0);
	assert_int_equal(mutex_unlock_slow(&m), -EPERM);
	sb_event e;
	assert_int_equal(sb_event_init(&e, false), 0);
	assert_false(event_is_set_slow(&e));
	event_set_slow(&e);
	assert_true(event_is_set_slow(&e));
	sb_auto_event ae;
	assert_int_equal(sb_auto_event_init(&ae, false), 0);
	assert_int_equal(auto_try_slow(&ae), -EAGAIN);
	auto_set_slow(&ae);
	assert_int_equal(auto_try_slow(&ae), 0);
	sb_latch l;
	assert_int_equal(sb_latch_init(&l, 2), 0);
	assert_int_equal(latch_count_down_slow(&l, 0), 0);
	assert_int_equal(latch_count_down_slow(&l, 3), -ERANGE);
	assert_int_equal(latch_count_down_slow(&l, 1), 0);
	assert_int_equal(latch_count_down_slow(&l, 1), 0);
	assert_int_equal(sb_latch_try_wait(&l), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_inline_function_and_its_slow_path_is_exported_by_name),
		cmocka_unit_test(exported_semaphore_functions_take_wait_and_hand_over_like_the_inline_ones),
		cmocka_unit_test(exported_mutex_functions_lock_queue_and_hand_over_like_the_inline_ones),
		cmocka_unit_test(exported_event_functions_set_test_and_release_like_the_inline_ones),
		cmocka_unit_test(exported_auto_event_functions_store_and_hand_over_like_the_inline_ones),
		cmocka_unit_test(exported_barrier_functions_arrive_release_and_lead_like_the_inline_ones),
		cmocka_unit_test(exported_once_functions_run_wait_and_complete_like_the_inline_ones),
		cmocka_unit_test(exported_rwlock_functions_share_exclude_and_hand_over_like_the_inline_ones),
		cmocka_unit_test(exported_latch_functions_count_down_test_and_release_like_the_inline_ones),
		cmocka_unit_test(exported_watch_functions_send_read_and_wait_like_the_inline_ones),
		cmocka_unit_test(slow_paths_called_directly_still_decide_rightly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
