// SPDX-License-Identifier: Apache-2.0
//
// syncband/syncband.hpp: the C++20 awaitables, guards, tasks and loop.
// Built with the project's C++ compiler (g++) and again with clang++
// (run_clang.sh).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <tuple>
#include <variant>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <syncband/syncband.hpp>

// Last: cmocka defines macros (fail) that the standard headers use as names.
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <csetjmp>

extern "C" {
#include <cmocka.h>
}

namespace {

// ------------------------------------------------------------ doorbells

std::atomic<unsigned> rings{ 0 };

void count_ring(void *)
{
	rings.fetch_add(1);
}

// A doorbell the loop's thread sleeps on, for the cross-thread tests.
struct doorbell {
	std::mutex mu;
	std::condition_variable cv;
	bool rung = false;

	static void ring(void *ctx)
	{
		auto *d = static_cast<doorbell *>(ctx);
		std::lock_guard<std::mutex> g(d->mu);
		d->rung = true;
		d->cv.notify_one();
	}
	void wait()
	{
		std::unique_lock<std::mutex> g(mu);
		cv.wait(g, [this] { return rung; });
		rung = false;
	}
};

// Runs the loop on this thread until `done` holds, sleeping on `d`.
template <class Done>
void run_until(sb::loop &l, doorbell &d, Done done)
{
	for (;;) {
		l.run_ready();
		if (done())
			return;
		d.wait();
	}
}

// Runs the loop by hand until it is idle: every task finished and released.
void drain(sb::loop &l)
{
	for (int i = 0; i < 1000 && !l.idle(); i++)
		l.run_ready();
	assert_true(l.idle());
}

// ------------------------------------------------------------ fast paths

void a_free_permit_is_taken_in_await_ready_without_suspending(void **)
{
	sb_semaphore sem = SB_SEMAPHORE_INIT(2);
	{
		auto a = sb::acquire(sem, 2);
		assert_true(a.await_ready());
		assert_int_equal(sb_semaphore_available(&sem), 0);
		sb::permit p = a.await_resume();
		assert_true(static_cast<bool>(p));
		assert_int_equal(p.count(), 2);
	}
	assert_int_equal(sb_semaphore_available(&sem), 2);
	auto b = sb::acquire(sem, 3);
	assert_false(b.await_ready()); // not enough: it must suspend
	assert_int_equal(sb_semaphore_available(&sem), 2);
}

void a_moved_acquire_awaits_its_semaphore_and_count_and_suspends_when_short(void **)
{
	sb_semaphore sem = SB_SEMAPHORE_INIT(3);
	{
		auto a = sb::acquire(sem, 2);
		auto b = std::move(a); // before its first await: allowed
		assert_true(b.await_ready());
		sb::permit p = b.await_resume();
		assert_ptr_equal(p.semaphore(), &sem);
		assert_int_equal(p.count(), 2);
		assert_int_equal(sb_semaphore_available(&sem), 1);
	}
	assert_int_equal(sb_semaphore_available(&sem), 3);
	// Too few: the moved awaiter suspends, and its future, polled by the
	// loop, takes them once released.
	sb_semaphore short_sem = SB_SEMAPHORE_INIT(0);
	sb::loop l(count_ring, nullptr);
	std::size_t got = 0;
	l.spawn([](sb_semaphore &s, std::size_t &n) -> sb::task<> {
		auto a = sb::acquire(s, 2);
		auto b = std::move(a);
		sb::permit p = co_await std::move(b);
		n = p.count();
	}(short_sem, got));
	l.run_ready();
	assert_int_equal(got, 0);
	assert_int_equal(sb_semaphore_release(&short_sem, 2), 0);
	drain(l);
	assert_int_equal(got, 2);
	assert_int_equal(sb_semaphore_available(&short_sem), 2); // the guard gave them back
}

void a_free_mutex_and_a_set_event_are_taken_in_await_ready(void **)
{
	sb_mutex m = SB_MUTEX_INIT;
	auto l = sb::lock(m);
	assert_true(l.await_ready());
	{
		sb::mutex_guard g = l.await_resume();
		assert_true(sb_mutex_is_locked(&m));
		assert_false(sb::lock(m).await_ready());
	}
	assert_false(sb_mutex_is_locked(&m));
	sb_event e = SB_EVENT_INIT(1);
	assert_true(sb::wait(e).await_ready());
	sb_auto_event ae = SB_AUTO_EVENT_INIT(1);
	assert_true(sb::wait(ae).await_ready());
	assert_false(sb::wait(ae).await_ready()); // the signal was taken
}

sb::task<> take_two(sb_semaphore &s, int &steps)
{
	sb::permit p = co_await sb::acquire(s, 1);
	steps++;
	sb::permit q = co_await sb::acquire(s, 1);
	steps++;
}

void a_task_with_free_permits_finishes_in_its_first_poll(void **)
{
	sb_semaphore sem = SB_SEMAPHORE_INIT(2);
	sb::loop l(count_ring, nullptr);
	int steps = 0;
	l.spawn(take_two(sem, steps));
	assert_int_equal(steps, 0); // spawn does not run it
	assert_int_equal(l.run_ready(), 1);
	assert_int_equal(steps, 2);
	assert_true(l.idle());
	assert_int_equal(sb_semaphore_available(&sem), 2); // the guards gave them back
}

// ------------------------------------------------------------ wakes

struct acquire_record {
	bool resumed = false;
	std::thread::id resumed_on;
};

sb::task<> acquire_one(sb_semaphore &s, acquire_record &r)
{
	sb::permit p = co_await sb::acquire(s, 1);
	r.resumed = static_cast<bool>(p);
	r.resumed_on = std::this_thread::get_id();
}

void a_release_on_another_thread_resumes_the_task_only_on_the_loop(void **)
{
	doorbell d;
	sb::loop l(doorbell::ring, &d);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	acquire_record r;
	l.spawn(acquire_one(sem, r));
	l.run_ready();
	assert_false(r.resumed);
	std::thread releaser([&sem] { sb_semaphore_release(&sem, 1); });
	releaser.join();
	assert_false(r.resumed); // not inside the release, nor inline
	run_until(l, d, [&] { return l.idle(); });
	assert_true(r.resumed);
	assert_true(r.resumed_on == std::this_thread::get_id());
	assert_int_equal(sb_semaphore_available(&sem), 1);
}

// Takes a permit on its awaiter's strand and keeps it (the count stays 0).
sb::task<int> take_and_keep(sb_semaphore &s)
{
	sb::permit p = co_await sb::acquire(s);
	co_return static_cast<int>(p.release());
}

// Waits at the semaphore between suspensions of every other kind: the task's
// poll is the awaiter's direct one while the top-level strand waits at a
// future, and task_poll again after each resume.  Keeps every permit.
sb::task<> wait_between_other_suspensions(sb_semaphore &s, sb_mutex &m, int &steps)
{
	sb::permit p = co_await sb::acquire(s); // the direct poll
	static_cast<void>(p.release());
	steps++;
	co_await sb::yield(); // task_poll: no future
	steps++;
	auto both = co_await sb::when_all(sb::acquire(s), sb::lock(m)); // on branches
	static_cast<void>(std::get<0>(both).release());
	steps++;
	steps += co_await take_and_keep(s); // a nested task on the top-level strand
	sb::permit last = co_await sb::acquire(s);
	static_cast<void>(last.release());
	steps++;
}

void a_task_waits_at_futures_between_yields_combinators_and_nested_tasks(void **)
{
	doorbell d;
	sb::loop l(doorbell::ring, &d);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_mutex m = SB_MUTEX_INIT;
	int steps = 0;
	l.spawn(wait_between_other_suspensions(sem, m, steps));
	l.run_ready();
	assert_int_equal(steps, 0);
	const int after_release[] = { 2, 3, 4, 5 }; // one wait served per release
	for (int expected : after_release) {
		assert_false(l.idle());
		sb_semaphore_release(&sem, 1);
		l.run_ready();
		assert_int_equal(steps, expected);
	}
	assert_true(l.idle());
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_semaphore_available(&sem), 0);
}

struct cv_state {
	sb_mutex m = SB_MUTEX_INIT;
	sb_condvar cv = SB_CONDVAR_INIT;
	bool ready = false;
	int resumes = 0;
	bool held_at_end = false;
	int wait_result = 1;
};

sb::task<> wait_ready(cv_state &s)
{
	sb::mutex_guard g = co_await sb::lock(s.m);
	while (!s.ready) {
		s.wait_result = co_await sb::wait(s.cv, g);
		s.resumes++;
	}
	s.held_at_end = g.owns_lock() && sb_mutex_is_locked(&s.m);
}

void a_condvar_wait_is_polled_on_every_wake_and_resumes_holding_the_mutex(void **)
{
	rings = 0;
	sb::loop l(count_ring, nullptr);
	cv_state s;
	l.spawn(wait_ready(s));
	l.run_ready();
	assert_false(sb_mutex_is_locked(&s.m)); // the wait gave it up
	assert_int_equal(sb_mutex_try_lock(&s.m), 0);
	s.ready = true;
	sb_condvar_notify_one(&s.cv);
	unsigned before = rings.load();
	assert_int_equal(l.run_ready(), 1); // polled: notified, but the mutex is ours
	assert_int_equal(s.resumes, 0);     // so it stays suspended
	assert_int_equal(rings.load(), before);
	assert_int_equal(sb_mutex_unlock(&s.m), 0); // hands it over: a second wake
	assert_int_equal(rings.load(), before + 1);
	assert_int_equal(l.run_ready(), 1);
	assert_int_equal(s.resumes, 1);
	assert_int_equal(s.wait_result, 0);
	assert_true(s.held_at_end);
	assert_false(sb_mutex_is_locked(&s.m)); // the guard unlocked at the end
	assert_true(l.idle());
}

sb::task<> wait_event(sb_event &e, sb_auto_event &ae, int &phase)
{
	co_await sb::wait(e);
	phase = 1;
	co_await sb::wait(ae);
	phase = 2;
}

void event_waits_resume_after_sets_from_another_thread(void **)
{
	doorbell d;
	sb::loop l(doorbell::ring, &d);
	sb_event e = SB_EVENT_INIT(0);
	sb_auto_event ae = SB_AUTO_EVENT_INIT(0);
	int phase = 0;
	l.spawn(wait_event(e, ae, phase));
	l.run_ready();
	std::thread setter([&] {
		sb_event_set(&e);
		sb_auto_event_set(&ae);
	});
	run_until(l, d, [&] { return l.idle(); });
	setter.join();
	assert_int_equal(phase, 2);
	assert_int_equal(sb_auto_event_try_wait(&ae), -EAGAIN); // the task took it
}

sb::task<> wait_latch(sb_latch &l, int &resumed)
{
	co_await sb::wait(l);
	resumed++;
}

void a_latch_wait_resumes_once_counters_on_other_threads_reach_zero(void **)
{
	doorbell d;
	sb::loop l(doorbell::ring, &d);
	sb_latch latch = SB_LATCH_INIT(2);
	sb_latch open = SB_LATCH_INIT(0);
	int resumed = 0;
	l.spawn(wait_latch(open, resumed)); // ready in await_ready
	l.spawn(wait_latch(latch, resumed));
	l.run_ready();
	assert_int_equal(resumed, 1); // the second suspended: the count is 2
	int ra = 1, rb = 1;
	std::thread a([&] { ra = sb_latch_count_down(&latch, 1); });
	std::thread b([&] { rb = sb_latch_count_down(&latch, 1); });
	run_until(l, d, [&] { return l.idle(); });
	a.join();
	b.join();
	assert_int_equal(ra, 0);
	assert_int_equal(rb, 0);
	assert_int_equal(resumed, 2);
	assert_int_equal(sb_latch_destroy(&latch), 0);
}

// Runs the initialiser when told to: `succeed` says whether it works.
sb::task<> run_once(sb_once &o, int &payload, bool succeed, int &ran, int &saw)
{
	sb::once_job job = co_await sb::call_once(o);
	if (job) {
		ran++;
		co_await sb::yield(); // the others queue meanwhile
		if (!succeed)
			co_return; // the job's destructor reports the failure
		payload = 42;
		job.complete();
	}
	saw = payload;
}

void a_once_runs_its_initialiser_in_one_coroutine_and_passes_the_job_on_when_it_fails(void **)
{
	doorbell d;
	sb::loop l(doorbell::ring, &d);
	sb_once o = SB_ONCE_INIT;
	int payload = 0, ran = 0;
	int saw[3] = { -1, -1, -1 };
	l.spawn(run_once(o, payload, false, ran, saw[0])); // fails: the job moves on
	l.spawn(run_once(o, payload, true, ran, saw[1]));
	l.spawn(run_once(o, payload, true, ran, saw[2]));
	run_until(l, d, [&] { return l.idle(); });
	assert_int_equal(ran, 2); // the failed runner, then the next waiter
	assert_int_equal(saw[0], -1); // the failed one saw nothing
	assert_int_equal(saw[1], 42);
	assert_int_equal(saw[2], 42);
	assert_true(sb_once_is_done(&o));
	int late = -1;
	l.spawn(run_once(o, payload, true, ran, late)); // done: ready at once
	run_until(l, d, [&] { return l.idle(); });
	assert_int_equal(ran, 2);
	assert_int_equal(late, 42);
	assert_int_equal(sb_once_destroy(&o), 0);
}

sb::task<> meet(sb_barrier &b, int &result, int &resumed)
{
	result = co_await sb::arrive_and_wait(b);
	resumed++;
}

void barrier_parties_resume_once_the_last_arrives_and_one_is_told_it_leads(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_barrier b = SB_BARRIER_INIT(3);
	int results[3] = { -1, -1, -1 }, resumed = 0;
	l.spawn(meet(b, results[0], resumed));
	l.spawn(meet(b, results[1], resumed));
	l.run_ready();
	assert_int_equal(resumed, 0); // two of three arrived: both suspended
	l.spawn(meet(b, results[2], resumed));
	drain(l);
	assert_int_equal(resumed, 3);
	assert_int_equal(results[0], 0);
	assert_int_equal(results[1], 0);
	assert_int_equal(results[2], SB_BARRIER_LEADER); // the last never suspended
	assert_true(l.idle());
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

void destroying_a_task_waiting_at_a_barrier_withdraws_its_arrival(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_barrier b = SB_BARRIER_INIT(2);
	int first = -1, second = -1, third = -1, resumed = 0;
	l.spawn(meet(b, first, resumed));
	l.run_ready();
	assert_int_equal(sb_barrier_destroy(&b), -EBUSY);
	l.shutdown(); // cancels its wait: the arrival is withdrawn
	drain(l);
	assert_int_equal(resumed, 0);
	l.spawn(meet(b, second, resumed));
	l.run_ready();
	assert_int_equal(resumed, 0); // the first of two again
	l.spawn(meet(b, third, resumed));
	drain(l);
	assert_int_equal(resumed, 2);
	assert_int_equal(second, 0);
	assert_int_equal(third, SB_BARRIER_LEADER);
	assert_int_equal(sb_barrier_destroy(&b), 0);
}

// ------------------------------------------------------------ cancellation

void destroying_a_suspended_task_returns_a_granted_permit(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	acquire_record r;
	l.spawn(acquire_one(sem, r));
	l.run_ready();
	sb_semaphore_release(&sem, 1); // granted to the waiting task, not yet resumed
	assert_int_equal(sb_semaphore_available(&sem), 0);
	l.shutdown();
	assert_int_equal(sb_semaphore_available(&sem), 1); // came back
	assert_false(r.resumed);
	drain(l);
	assert_true(l.idle());
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

void destroying_a_condvar_waiter_that_waits_for_its_mutex_leaves_nothing_queued(void **)
{
	sb::loop l(count_ring, nullptr);
	cv_state s;
	l.spawn(wait_ready(s));
	l.run_ready(); // waiting on the condvar
	assert_int_equal(sb_mutex_try_lock(&s.m), 0);
	s.ready = true;
	sb_condvar_notify_one(&s.cv);
	l.run_ready(); // notified; now queued for the mutex we hold
	assert_int_equal(s.resumes, 0);
	l.shutdown();
	assert_int_equal(sb_mutex_unlock(&s.m), 0); // nobody to hand it to
	assert_false(sb_mutex_is_locked(&s.m));
	assert_int_equal(s.resumes, 0);
	drain(l);
	assert_int_equal(sb_condvar_destroy(&s.cv), 0);
	assert_int_equal(sb_mutex_destroy(&s.m), 0);
}

sb::task<> lock_and_hold(sb_mutex &m, sb_event &release, int &held)
{
	sb::mutex_guard g = co_await sb::lock(m);
	held++;
	co_await sb::wait(release);
}

void destroying_a_task_handed_a_fifo_mutex_passes_the_mutex_on(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_mutex m = SB_MUTEX_INIT_FIFO; /* unlock hands it to the oldest waiter */
	sb_event go = SB_EVENT_INIT(0);
	int held = 0;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	l.spawn(lock_and_hold(m, go, held));
	l.run_ready();
	assert_int_equal(sb_mutex_unlock(&m), 0); // handed to the queued task
	assert_true(sb_mutex_is_locked(&m));
	l.shutdown(); // before it resumed: the handoff is undone
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(held, 0);
	drain(l);
}

sb::task<> write_then_read(sb_rwlock &rw, int &steps)
{
	sb::rwlock_guard w = co_await sb::write_lock(rw);
	steps++;
	w.downgrade(); // readers queued behind may enter now
	steps += sb_rwlock_readers(&rw) == 1 && !sb_rwlock_is_write_locked(&rw);
	w.unlock();
	sb::rwlock_guard r = co_await sb::read_lock(rw);
	steps += r.owns_lock() && !r.exclusive_hold();
}

void a_writer_task_waits_for_the_readers_and_its_guards_release_on_scope_exit(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_rwlock rw = SB_RWLOCK_INIT;
	{
		auto a = sb::read_lock(rw);
		assert_true(a.await_ready());
		sb::rwlock_guard g = a.await_resume();
		assert_int_equal(sb_rwlock_readers(&rw), 1);
		assert_false(sb::write_lock(rw).await_ready());
	}
	assert_int_equal(sb_rwlock_readers(&rw), 0);
	int steps = 0;
	assert_int_equal(sb_rwlock_try_read(&rw), 0);
	l.spawn(write_then_read(rw, steps));
	l.run_ready();
	assert_int_equal(steps, 0); // suspended behind the reader
	assert_int_equal(sb_rwlock_read_unlock(&rw), 0); // hands it the write lock
	assert_int_equal(steps, 0);  // resumed only by the loop
	l.run_ready();
	assert_int_equal(steps, 3);
	assert_int_equal(sb_rwlock_readers(&rw), 0);
	assert_false(sb_rwlock_is_write_locked(&rw));
	drain(l);
	assert_int_equal(sb_rwlock_destroy(&rw), 0);
}

void an_acquire_of_a_closed_semaphore_gives_an_empty_permit(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb::permit got;
	auto t = [](sb_semaphore &s, sb::permit &out) -> sb::task<> {
		out = co_await sb::acquire(s, 1);
	};
	l.spawn(t(sem, got));
	l.run_ready();
	sb_semaphore_close(&sem);
	l.run_ready();
	assert_false(static_cast<bool>(got));
	assert_int_equal(got.error(), -ESHUTDOWN);
	assert_true(l.idle());
}

// ------------------------------------------------------------ guards

void guards_release_once_on_scope_exit_and_move_ownership(void **)
{
	sb_semaphore sem = SB_SEMAPHORE_INIT(3);
	assert_int_equal(sb_semaphore_try_acquire(&sem, 2), 0);
	{
		sb::permit a(sem, 2);
		sb::permit b(std::move(a));
		assert_false(static_cast<bool>(a));
		assert_int_equal(b.count(), 2);
		sb::permit c;
		c = std::move(b);
		assert_int_equal(sb_semaphore_available(&sem), 1);
	}
	assert_int_equal(sb_semaphore_available(&sem), 3);

	sb_mutex m = SB_MUTEX_INIT;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	{
		sb::mutex_guard g(m);
		sb::mutex_guard h(std::move(g));
		assert_false(g.owns_lock());
		assert_true(h.owns_lock());
		h.unlock();
		assert_false(sb_mutex_is_locked(&m));
	} // nothing left to unlock: no -EPERM, no double unlock
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	{
		sb::mutex_guard g(m);
		assert_ptr_equal(g.release(), &m);
	}
	assert_true(sb_mutex_is_locked(&m)); // released, not unlocked
	sb_mutex_unlock(&m);
}

// ------------------------------------------------------------ many tasks

struct section {
	sb_mutex m = SB_MUTEX_INIT;
	int inside = 0;
	int max_inside = 0;
	int entries = 0;
};

sb::task<> enter_often(section &s, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		sb::mutex_guard g = co_await sb::lock(s.m);
		s.inside++;
		if (s.inside > s.max_inside)
			s.max_inside = s.inside;
		co_await sb::yield(); // hold it while the others run
		s.inside--;
		s.entries++;
	}
}

void tasks_holding_a_mutex_across_yields_never_overlap(void **)
{
	sb::loop l(count_ring, nullptr);
	section s;
	for (int i = 0; i < 8; i++)
		l.spawn(enter_often(s, 50));
	drain(l);
	assert_int_equal(s.entries, 400);
	assert_int_equal(s.max_inside, 1);
	assert_false(sb_mutex_is_locked(&s.m));
}

struct pool {
	sb_semaphore slots = SB_SEMAPHORE_INIT(3);
	std::atomic<int> inside{ 0 };
	std::atomic<int> max_inside{ 0 };
	std::atomic<int> done{ 0 };
};

sb::task<> use_slot(pool &p, sb_auto_event &work_done)
{
	for (int i = 0; i < 100; i++) {
		sb::permit slot = co_await sb::acquire(p.slots, 1);
		int now = p.inside.fetch_add(1) + 1;
		int seen = p.max_inside.load();
		while (now > seen && !p.max_inside.compare_exchange_weak(seen, now)) {
		}
		co_await sb::wait(work_done); // finished by another thread
		p.inside.fetch_sub(1);
	}
	p.done.fetch_add(1);
}

void permits_limit_tasks_whose_work_finishes_on_another_thread(void **)
{
	doorbell d;
	sb::loop l(doorbell::ring, &d);
	pool p;
	sb_auto_event work_done = SB_AUTO_EVENT_INIT(0);
	for (int i = 0; i < 6; i++)
		l.spawn(use_slot(p, work_done));
	std::atomic<bool> stop{ false };
	std::thread worker([&] {
		// Signals one finished piece of work whenever one is waited on.
		while (!stop.load()) {
			if (p.inside.load() > 0)
				sb_auto_event_set(&work_done);
			std::this_thread::yield();
		}
	});
	run_until(l, d, [&] { return p.done.load() == 6; });
	stop = true;
	worker.join();
	drain(l);
	assert_int_equal(p.max_inside.load() <= 3, 1);
	assert_int_equal(sb_semaphore_available(&p.slots), 3);
}

// ------------------------------------------------------------ deadlines

struct deadline_state {
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_semaphore_acquire acq;
	sb_deadline deadline;
	sb::waker timer; // what the loop's timer would hold
	int result = 1;
};

sb::task<> acquire_with_deadline(deadline_state &s)
{
	sb_semaphore_acquire_init(&s.acq, &s.sem, 1);
	sb_deadline_init(&s.deadline, &s.acq, &sb_semaphore_acquire_ops);
	s.timer = co_await sb::current_waker();
	s.result = co_await sb::poll(&s.deadline, &sb_deadline_ops);
}

void a_deadline_expired_by_the_loop_completes_the_await_with_etimedout(void **)
{
	sb::loop l(count_ring, nullptr);
	deadline_state s;
	l.spawn(acquire_with_deadline(s));
	l.run_ready();
	assert_int_equal(s.result, 1);
	// The timer fires: expire, then wake the task with the waker it holds.
	sb_deadline_expire(&s.deadline);
	s.timer.wake();
	s.timer.reset();
	l.run_ready();
	assert_int_equal(s.result, -ETIMEDOUT);
	assert_int_equal(sb_semaphore_destroy(&s.sem), 0); // it left the queue
	drain(l);
}

sb::task<> keep_waker(sb::waker &out)
{
	out = co_await sb::current_waker();
}

void a_wake_after_the_task_finished_is_harmless(void **)
{
	sb::loop l(count_ring, nullptr);
	sb::waker late;
	l.spawn(keep_waker(late));
	l.run_ready();
	assert_false(l.idle()); // the waker still references the task's state
	late.wake();            // after completion: nothing to resume
	assert_int_equal(l.run_ready(), 0);
	late.reset();
	drain(l);
	assert_true(l.idle());
}

} // namespace

// ------------------------------------------------------------ channel

sb::task<> produce(sb::channel<int> &ch, int n, int &refused)
{
	for (int i = 0; i < n; i++)
		co_await ch.send(i);
	ch.close();
	refused = co_await ch.send(n); // closed: -EPIPE, not sent
}

sb::task<> consume(sb::channel<int> &ch, std::vector<int> &got, bool &ended)
{
	for (;;) {
		std::optional<int> v = co_await ch.recv();
		if (!v)
			break;
		got.push_back(*v);
	}
	ended = true;
}

// Two tasks on one loop through a channel of `cap` slots: every item once,
// in order, then the end of the stream.
void pass_items_through(int *storage, std::size_t cap)
{
	sb::channel<int> ch(storage, cap);
	assert_int_equal(ch.error(), 0);
	assert_int_equal(ch.capacity(), cap);
	std::vector<int> got;
	bool ended = false;
	int refused = 0;
	sb::loop l(count_ring, nullptr);
	l.spawn(consume(ch, got, ended));
	l.spawn(produce(ch, 100, refused));
	drain(l);
	assert_true(ended);
	assert_int_equal(refused, -EPIPE);
	assert_int_equal(got.size(), 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(got[static_cast<std::size_t>(i)], i);
	assert_true(ch.is_closed());
}

void a_channel_carries_every_item_in_order_between_tasks_then_ends(void **)
{
	int slots[1];
	pass_items_through(slots, 1);
	int more[8];
	pass_items_through(more, 8);
}

void a_rendezvous_channel_hands_each_item_from_task_to_task(void **)
{
	pass_items_through(nullptr, 0);
}

sb::task<> receive_one(sb::channel<int> &ch, bool &resumed)
{
	std::optional<int> v = co_await ch.recv();
	(void)v;
	resumed = true;
}

void a_destroyed_receiver_leaves_the_queue_and_the_next_item_waits_in_the_ring(void **)
{
	int slots[2];
	sb::channel<int> ch(slots);
	bool resumed = false;
	sb::loop l(count_ring, nullptr);
	l.spawn(receive_one(ch, resumed));
	l.run_ready(); // suspended in recv: it waits
	l.shutdown();  // its awaiter cancels the receive
	drain(l);
	assert_false(resumed);
	assert_int_equal(ch.try_send(7), 0); // nobody waits: into the ring
	assert_int_equal(ch.size(), 1);
	int v = 0;
	assert_int_equal(ch.try_recv(v), 0);
	assert_int_equal(v, 7);
}

void channel_init_errors_are_reported(void **)
{
	sb::channel<int> bad(nullptr, 4); // storage missing
	assert_int_equal(bad.error(), -EINVAL);
}

// ------------------------------------------------------------ task<T>

namespace {

sb::task<int> add_after_permit(sb_semaphore &s, int a, int b, int &started)
{
	started++;
	sb::permit p = co_await sb::acquire(s, 1);
	co_return a + b;
}

sb::task<> sum_twice(sb_semaphore &s, int &started, int &sum, int &created_before_await)
{
	sb::task<int> first = add_after_permit(s, 1, 2, started);
	created_before_await = started; // lazy: not started by the call
	sum = co_await std::move(first);
	sum += co_await add_after_permit(s, 3, 4, started);
}

void an_awaited_task_starts_lazily_and_resumes_its_awaiter_with_its_value(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	int started = 0, sum = 0, before = -1;
	l.spawn(sum_twice(sem, started, sum, before));
	l.run_ready();
	assert_int_equal(before, 0);
	assert_int_equal(started, 1); // suspended inside the first nested task
	sb_semaphore_release(&sem, 1);
	l.run_ready(); // the nested task resumes, finishes, and hands over
	assert_int_equal(started, 2);
	sb_semaphore_release(&sem, 1);
	drain(l);
	assert_int_equal(sum, 10);
	assert_int_equal(sb_semaphore_available(&sem), 2); // each nested permit went back
}

sb::task<int> fail_after_yield()
{
	co_await sb::yield();
	throw std::runtime_error("nested");
}

sb::task<> catch_nested(bool &caught)
{
	try {
		co_await fail_after_yield();
	} catch (const std::runtime_error &) {
		caught = true;
	}
}

void an_exception_in_an_awaited_task_is_rethrown_in_its_awaiter(void **)
{
	sb::loop l(count_ring, nullptr);
	bool caught = false;
	l.spawn(catch_nested(caught));
	drain(l);
	assert_true(caught);
}

sb::task<int> one_at_once()
{
	co_return 1;
}

sb::task<> many_nested(int rounds, long &total)
{
	for (int i = 0; i < rounds; i++)
		total += co_await one_at_once();
}

void a_million_tasks_that_finish_at_once_resume_their_awaiter_without_growing_the_stack(void **)
{
	// Without symmetric transfer every round would nest one more resume
	// on the stack: a million of them overflow it.
	sb::loop l(count_ring, nullptr);
	long total = 0;
	l.spawn(many_nested(1000000, total));
	drain(l);
	assert_int_equal(total, 1000000);
}

sb::task<> hold_inner_permit(sb_semaphore &s, acquire_record &r)
{
	co_await acquire_one(s, r);
}

void destroying_a_task_suspended_in_a_nested_task_returns_the_nested_grant(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	acquire_record r;
	l.spawn(hold_inner_permit(sem, r));
	l.run_ready();
	sb_semaphore_release(&sem, 1); // granted to the nested task's future
	l.shutdown();
	assert_int_equal(sb_semaphore_available(&sem), 1);
	assert_false(r.resumed);
	drain(l);
	assert_int_equal(sb_semaphore_destroy(&sem), 0);
}

// ------------------------------------------------------------ when_all / when_any

sb::task<int> value_after_event(sb_event &e, int v)
{
	co_await sb::wait(e);
	co_return v;
}

sb::task<> gather(sb_event &e, sb_mutex &m, sb_semaphore &s,
		  std::optional<std::tuple<int, sb::mutex_guard, std::monostate>> &out)
{
	out.emplace(co_await sb::when_all(value_after_event(e, 7), sb::lock(m), sb::wait(e)));
	(void)s;
}

void when_all_runs_its_awaitables_concurrently_and_resumes_once_all_are_done(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_event e = SB_EVENT_INIT(0);
	sb_mutex m = SB_MUTEX_INIT;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	std::optional<std::tuple<int, sb::mutex_guard, std::monostate>> out;
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	l.spawn(gather(e, m, s, out));
	l.run_ready();
	assert_false(out.has_value()); // both the event and the mutex are awaited at once
	sb_event_set(&e);
	l.run_ready();
	assert_false(out.has_value()); // the mutex is still ours
	assert_int_equal(sb_mutex_unlock(&m), 0);
	l.run_ready();
	assert_true(out.has_value());
	assert_int_equal(std::get<0>(*out), 7);
	assert_true(std::get<1>(*out).owns_lock());
	out.reset();
	assert_false(sb_mutex_is_locked(&m));
	drain(l);
}

sb::task<int> throw_at_once()
{
	throw std::runtime_error("branch");
	co_return 0;
}

sb::task<> gather_failing(sb_event &e, bool &caught, bool &other_finished)
{
	try {
		auto other = [](sb_event &ev, bool &done) -> sb::task<> {
			co_await sb::wait(ev);
			done = true;
		};
		co_await sb::when_all(throw_at_once(), other(e, other_finished));
	} catch (const std::runtime_error &) {
		caught = true;
	}
}

void when_all_rethrows_a_branch_exception_once_every_branch_is_done(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_event e = SB_EVENT_INIT(0);
	bool caught = false, other = false;
	l.spawn(gather_failing(e, caught, other));
	l.run_ready();
	assert_false(caught); // the other branch still waits
	sb_event_set(&e);
	drain(l);
	assert_true(other);
	assert_true(caught);
}

sb::task<> race(sb_semaphore &a, sb_semaphore &b, std::optional<std::variant<sb::permit, sb::permit>> &out)
{
	out.emplace(co_await sb::when_any(sb::acquire(a), sb::acquire(b)));
}

void when_any_resumes_with_the_first_to_complete_and_hands_the_losers_grants_on(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_semaphore a = SB_SEMAPHORE_INIT(0), b = SB_SEMAPHORE_INIT(0);
	std::optional<std::variant<sb::permit, sb::permit>> out;
	l.spawn(race(a, b, out));
	l.run_ready(); // both pending; the next poll looks at the second first
	sb_semaphore_release(&a, 1);
	sb_semaphore_release(&b, 1); // both granted before the task runs
	l.run_ready();
	assert_true(out.has_value());
	assert_int_equal(out->index(), 1); // rotated: the second branch is polled first
	assert_true(static_cast<bool>(std::get<1>(*out)));
	assert_int_equal(sb_semaphore_available(&a), 1); // the loser's grant went back
	assert_int_equal(sb_semaphore_available(&b), 0); // the winner holds it
	out.reset();
	assert_int_equal(sb_semaphore_available(&b), 1);
	drain(l);
	assert_int_equal(sb_semaphore_destroy(&a), 0);
	assert_int_equal(sb_semaphore_destroy(&b), 0);
}

sb::task<> lock_then_wait(sb_mutex &m, sb_event &e, bool &finished)
{
	sb::mutex_guard g = co_await sb::lock(m);
	co_await sb::wait(e);
	finished = true;
}

sb::task<> race_task_against_event(sb_mutex &m, sb_event &hold, sb_event &go, bool &finished,
				   bool &mutex_free_at_resume, std::size_t &winner)
{
	// Looked at within the co_await's full expression, while the when_any
	// awaiter (and the tasks it owns) still lives.
	mutex_free_at_resume = (winner = (co_await sb::when_any(lock_then_wait(m, hold, finished),
								  sb::wait(go)))
						  .index(),
				!sb_mutex_is_locked(&m));
}

void a_losing_task_is_destroyed_and_releases_its_guards_before_the_winner_resumes(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_mutex m = SB_MUTEX_INIT;
	sb_event hold = SB_EVENT_INIT(0), go = SB_EVENT_INIT(0);
	bool finished = false, mutex_free = false;
	std::size_t winner = 9;
	l.spawn(race_task_against_event(m, hold, go, finished, mutex_free, winner));
	l.run_ready();
	assert_true(sb_mutex_is_locked(&m)); // the first branch holds it, waiting
	sb_event_set(&go);
	drain(l);
	assert_int_equal(winner, 1);
	assert_false(finished);
	assert_true(mutex_free);
	assert_int_equal(sb_event_destroy(&hold), 0); // its wait left the queue
}

// ------------------------------------------------------------ when_any as a select

using two_items = std::variant<std::optional<int>, std::optional<int>>;

sb::task<> recv_either(sb::channel<int> &a, sb::channel<int> &b, std::optional<two_items> &out)
{
	out.emplace(co_await sb::when_any(a.recv(), b.recv()));
}

void when_any_over_two_ready_channels_takes_exactly_one_item(void **)
{
	sb::loop l(count_ring, nullptr);
	int sa[1], sb_[1];
	sb::channel<int> a(sa), b(sb_);
	assert_int_equal(a.try_send(1), 0);
	assert_int_equal(b.try_send(2), 0);
	std::optional<two_items> out;
	l.spawn(recv_either(a, b, out));
	l.run_ready();
	assert_true(out.has_value());
	const std::optional<int> &got = out->index() == 0 ? std::get<0>(*out) : std::get<1>(*out);
	assert_true(got.has_value());
	assert_int_equal(*got, out->index() == 0 ? 1 : 2);
	assert_int_equal(a.size() + b.size(), 1); // the loser's item stays in its channel
	drain(l);
}

void a_receive_handed_an_item_as_its_rival_channel_closes_keeps_the_item(void **)
{
	sb::loop l(count_ring, nullptr);
	sb::channel<int> a(nullptr, 0), b(nullptr, 0); // rendezvous: items go to waiters
	std::optional<two_items> out;
	l.spawn(recv_either(a, b, out));
	l.run_ready(); // both receives wait
	assert_false(out.has_value());
	assert_int_equal(a.try_send(7), 0); // handed to the waiting receive
	b.close(); // the other receive would now complete, closed
	l.run_ready(); // this poll looks at b first (rotated): b lost the claim
	assert_true(out.has_value());
	assert_int_equal(out->index(), 0);
	assert_true(std::get<0>(*out).has_value());
	assert_int_equal(*std::get<0>(*out), 7);
	drain(l);
}

sb::task<> count_wins(sb::channel<int> &a, sb::channel<int> &b, int rounds, int (&wins)[2], bool &lost)
{
	for (int i = 0; i < rounds; i++) {
		two_items r = co_await sb::when_any(a.recv(), b.recv());
		wins[r.index()]++;
		sb::channel<int> &drained = r.index() == 0 ? a : b;
		lost = lost || drained.try_send(i) != 0 || a.size() + b.size() != 2;
	}
}

void when_any_over_always_ready_channels_lets_each_win_in_turn(void **)
{
	sb::loop l(count_ring, nullptr);
	int sa[1], sb_[1];
	sb::channel<int> a(sa), b(sb_);
	assert_int_equal(a.try_send(0), 0);
	assert_int_equal(b.try_send(0), 0);
	int wins[2] = { 0, 0 };
	bool lost = false;
	l.spawn(count_wins(a, b, 1000, wins, lost));
	drain(l);
	assert_int_equal(wins[0], 500); // the loop's seed rotates every round
	assert_int_equal(wins[1], 500);
	assert_false(lost);
}

using lock_or_permit = std::variant<sb::mutex_guard, sb::permit>;

sb::task<> lock_or_acquire(sb_mutex &m, sb_semaphore &s, std::optional<lock_or_permit> &out)
{
	out.emplace(co_await sb::when_any(sb::lock(m), sb::acquire(s)));
}

void a_losing_lock_or_permit_case_hands_its_grant_to_the_next_waiter(void **)
{
	sb::loop l(count_ring, nullptr);
	sb_mutex m = SB_MUTEX_INIT;
	sb_semaphore s = SB_SEMAPHORE_INIT(0);
	assert_int_equal(sb_mutex_try_lock(&m), 0);
	std::optional<lock_or_permit> out;
	std::optional<sb::mutex_guard> next;
	l.spawn(lock_or_acquire(m, s, out));
	l.spawn([](sb_mutex &mu, std::optional<sb::mutex_guard> &g) -> sb::task<> {
		g.emplace(co_await sb::lock(mu));
	}(m, next));
	l.run_ready(); // the select waits on both; the second task queues on m behind it
	sb_semaphore_release(&s, 1);
	assert_int_equal(sb_mutex_unlock(&m), 0); // handed to the select's lock case
	l.run_ready();
	l.run_ready();
	assert_true(out.has_value());
	if (out->index() == 0) { // the lock won: the permit went back
		assert_true(std::get<0>(*out).owns_lock());
		assert_int_equal(sb_semaphore_available(&s), 1);
		assert_false(next.has_value());
		out.reset(); // unlocks: the next waiter gets it
		drain(l);
	} else { // the permit won: the lock went on to the next waiter
		assert_true(static_cast<bool>(std::get<1>(*out)));
		assert_true(next.has_value());
		assert_true(next->owns_lock());
		out.reset();
	}
	next.reset();
	drain(l);
	assert_false(sb_mutex_is_locked(&m));
	assert_int_equal(sb_semaphore_available(&s), 1);
	assert_int_equal(sb_semaphore_destroy(&s), 0);
}

using item_or_deadline = std::variant<std::optional<int>, int>;

sb::task<> recv_until(sb::channel<int> &ch, sb_deadline &d, sb::waker &timer,
		      std::optional<item_or_deadline> &out)
{
	timer = co_await sb::current_waker(); // what the loop's timer would wake
	out.emplace(co_await sb::when_any(ch.recv(), sb::poll(&d, &sb_deadline_ops)));
}

void a_deadline_case_that_expires_first_leaves_later_items_in_the_channel(void **)
{
	sb::loop l(count_ring, nullptr);
	int slots[2];
	sb::channel<int> ch(slots);
	sb_event never = SB_EVENT_INIT(0);
	sb_event_wait inner;
	sb_event_wait_init(&inner, &never);
	sb_deadline d;
	sb_deadline_init(&d, &inner, &sb_event_wait_ops);
	std::optional<item_or_deadline> out;
	sb::waker timer;
	l.spawn(recv_until(ch, d, timer, out));
	l.run_ready();
	assert_false(out.has_value());
	sb_deadline_expire(&d); // as a loop's timer does: expire, then wake
	timer.wake();
	timer.reset();
	l.run_ready();
	assert_true(out.has_value());
	assert_int_equal(out->index(), 1);
	assert_int_equal(std::get<1>(*out), -ETIMEDOUT);
	assert_int_equal(ch.try_send(5), 0);
	assert_int_equal(ch.size(), 1); // the receive case was cancelled, not left waiting
	drain(l);
	assert_int_equal(sb_event_destroy(&never), 0);
}

// ------------------------------------------------------------ timeout

// The loop's timers, on a clock the test moves.
struct manual_timers final : sb::timer_service {
	std::uint64_t now = 0;
	std::vector<sb::timer *> armed;

	std::uint64_t now_ns() noexcept override { return now; }
	void arm(sb::timer &t) noexcept override { armed.push_back(&t); }
	void disarm(sb::timer &t) noexcept override
	{
		armed.erase(std::find(armed.begin(), armed.end(), &t));
	}
	void advance(std::chrono::nanoseconds d)
	{
		now += static_cast<std::uint64_t>(d.count());
		for (std::size_t i = 0; i < armed.size();) {
			sb::timer *t = armed[i];
			if (t->deadline_ns() > now) {
				i++;
				continue;
			}
			armed.erase(armed.begin() + static_cast<std::ptrdiff_t>(i));
			t->fire();
		}
	}
};

struct timed_acquire {
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	std::optional<sb::permit> got;
	bool done = false;
};

sb::task<> acquire_within(timed_acquire &s, std::chrono::milliseconds d)
{
	s.got = co_await sb::timeout(sb::acquire(s.sem), d);
	s.done = true;
}

void a_timeout_that_passes_first_cancels_the_wait_and_gives_nothing(void **)
{
	manual_timers timers;
	sb::loop l(count_ring, nullptr, &timers);
	timed_acquire s;
	using namespace std::chrono_literals;
	l.spawn(acquire_within(s, 50ms));
	l.run_ready();
	assert_int_equal(timers.armed.size(), 1);
	timers.advance(49ms);
	l.run_ready();
	assert_false(s.done);
	timers.advance(1ms);
	l.run_ready();
	assert_true(s.done);
	assert_false(s.got.has_value());
	assert_int_equal(sb_semaphore_destroy(&s.sem), 0); // nobody queued
	drain(l);
}

void an_await_that_completes_before_its_timeout_gives_its_result_and_disarms_the_timer(void **)
{
	manual_timers timers;
	sb::loop l(count_ring, nullptr, &timers);
	timed_acquire s;
	using namespace std::chrono_literals;
	l.spawn(acquire_within(s, 50ms));
	l.run_ready();
	sb_semaphore_release(&s.sem, 1);
	l.run_ready();
	assert_true(s.done);
	assert_true(s.got.has_value() && static_cast<bool>(*s.got));
	assert_true(timers.armed.empty());
	drain(l);
}

void a_grant_that_arrives_with_the_timeout_wins(void **)
{
	manual_timers timers;
	sb::loop l(count_ring, nullptr, &timers);
	timed_acquire s;
	using namespace std::chrono_literals;
	l.spawn(acquire_within(s, 50ms));
	l.run_ready();
	sb_semaphore_release(&s.sem, 1);
	timers.advance(50ms); // both before the next poll
	l.run_ready();
	assert_true(s.got.has_value() && static_cast<bool>(*s.got));
	s.got.reset();
	assert_int_equal(sb_semaphore_available(&s.sem), 1);
	drain(l);
}

void a_timeout_on_a_loop_without_timers_gives_up_at_once(void **)
{
	sb::loop l(count_ring, nullptr);
	timed_acquire s;
	using namespace std::chrono_literals;
	sb_semaphore_release(&s.sem, 1); // even a free permit is not taken
	l.spawn(acquire_within(s, 50ms));
	l.run_ready();
	assert_true(s.done);
	assert_false(s.got.has_value());
	assert_int_equal(sb_semaphore_available(&s.sem), 1);
	drain(l);
}

sb::task<> lock_with_deadline_over_task(sb_mutex &m, sb_event &hold, bool &finished,
					bool &timed_out, bool &mutex_free)
{
	using namespace std::chrono_literals;
	// Looked at within the co_await's full expression, while the timeout's
	// awaiter (and the task it owns) still lives.
	mutex_free = (timed_out = !co_await sb::timeout(lock_then_wait(m, hold, finished), 10ms),
		      !sb_mutex_is_locked(&m));
}

void a_timeout_over_a_task_destroys_it_and_its_guards_when_it_passes(void **)
{
	manual_timers timers;
	sb::loop l(count_ring, nullptr, &timers);
	sb_mutex m = SB_MUTEX_INIT;
	sb_event hold = SB_EVENT_INIT(0);
	bool finished = false, timed_out = false, mutex_free = false;
	l.spawn(lock_with_deadline_over_task(m, hold, finished, timed_out, mutex_free));
	l.run_ready();
	assert_true(sb_mutex_is_locked(&m));
	using namespace std::chrono_literals;
	timers.advance(10ms);
	drain(l);
	assert_true(timed_out);
	assert_false(finished);
	assert_true(mutex_free);
	assert_int_equal(sb_event_destroy(&hold), 0);
}

sb::task<> receive_within(sb::channel<int> &ch, std::optional<std::optional<int>> &out)
{
	using namespace std::chrono_literals;
	out = co_await sb::timeout(ch.recv(), 5ms);
}

void an_item_handed_to_a_receive_as_its_timeout_passes_is_received_not_lost(void **)
{
	manual_timers timers;
	sb::loop l(count_ring, nullptr, &timers);
	sb::channel<int> ch(nullptr, 0); // rendezvous: the item goes to the waiter
	std::optional<std::optional<int>> out;
	l.spawn(receive_within(ch, out));
	l.run_ready();
	assert_int_equal(ch.try_send(5), 0);
	using namespace std::chrono_literals;
	timers.advance(5ms);
	drain(l);
	assert_true(out.has_value() && out->has_value());
	assert_int_equal(**out, 5);
}

// ------------------------------------------------------------ stop_token

struct stopped_acquire {
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	std::optional<sb::permit> got;
	bool done = false;
	bool body_ran = false;
	std::thread::id resumed_on;
};

sb::task<sb::permit> acquire_noting(stopped_acquire &s)
{
	s.body_ran = true;
	co_return co_await sb::acquire(s.sem);
}

sb::task<> acquire_until_stopped(stopped_acquire &s, std::stop_token tok)
{
	s.got = co_await sb::stoppable(acquire_noting(s), std::move(tok));
	s.done = true;
	s.resumed_on = std::this_thread::get_id();
}

void a_stop_requested_on_another_thread_cancels_the_pending_await_on_the_loop(void **)
{
	doorbell d;
	sb::loop l(doorbell::ring, &d);
	stopped_acquire s;
	std::stop_source src;
	l.spawn(acquire_until_stopped(s, src.get_token()));
	l.run_ready();
	assert_false(s.done);
	std::thread stopper([&src] { src.request_stop(); });
	stopper.join();
	assert_false(s.done); // the stop only woke the task
	run_until(l, d, [&] { return l.idle(); });
	assert_true(s.done);
	assert_false(s.got.has_value());
	assert_true(s.resumed_on == std::this_thread::get_id());
	assert_int_equal(sb_semaphore_destroy(&s.sem), 0); // cancelled: not queued
}

void an_await_whose_token_is_stopped_already_never_starts(void **)
{
	sb::loop l(count_ring, nullptr);
	stopped_acquire s;
	sb_semaphore_release(&s.sem, 1);
	std::stop_source src;
	src.request_stop();
	l.spawn(acquire_until_stopped(s, src.get_token()));
	drain(l);
	assert_true(s.done);
	assert_false(s.body_ran);
	assert_false(s.got.has_value());
	assert_int_equal(sb_semaphore_available(&s.sem), 1);
}

// ------------------------------------------------------------ broadcast

// Receives until the end of the stream: every item, and the lags seen.
sb::task<> collect(sb::broadcast_receiver<int> &rx, std::vector<int> &got, std::uint64_t &missed,
		   bool &ended)
{
	for (;;) {
		sb::broadcast_result<int> r = co_await rx.recv();
		if (const int *v = std::get_if<int>(&r))
			got.push_back(*v);
		else if (const sb::lagged *lag = std::get_if<sb::lagged>(&r))
			missed += lag->missed;
		else
			break;
	}
	ended = true;
}

template <std::size_t N>
sb::task<> publish(sb::broadcast<int, N> &bc, int n, int &refused)
{
	for (int i = 0; i < n; i++)
		co_await bc.send(i);
	bc.close();
	refused = co_await bc.send(n); // closed: -EPIPE, not sent
}

void a_broadcast_gives_every_item_to_every_receiver_in_order_then_closed(void **)
{
	sb::broadcast<int, 2> bc(sb::overflow::backpressure); // the sender waits for both
	sb::broadcast_receiver<int> a(bc), b(bc);
	assert_int_equal(a.error(), 0);
	assert_int_equal(bc.subscribers(), 2);
	std::vector<int> got_a, got_b;
	std::uint64_t missed = 0;
	bool ended_a = false, ended_b = false;
	int refused = 0;
	sb::loop l(count_ring, nullptr);
	l.spawn(collect(a, got_a, missed, ended_a));
	l.spawn(collect(b, got_b, missed, ended_b));
	l.spawn(publish(bc, 50, refused));
	drain(l);
	assert_true(ended_a && ended_b);
	assert_int_equal(missed, 0);
	assert_int_equal(refused, -EPIPE);
	assert_int_equal(got_a.size(), 50);
	assert_true(got_a == got_b);
	for (int i = 0; i < 50; i++)
		assert_int_equal(got_a[static_cast<std::size_t>(i)], i);
}

void a_lagging_receiver_is_told_how_many_items_it_missed_then_gets_the_oldest_held(void **)
{
	sb::broadcast<int, 4> bc; // lagging: sends never wait
	sb::broadcast_receiver<int> rx(bc);
	for (int i = 0; i < 10; i++)
		assert_int_equal(bc.try_send(i), 0);
	assert_int_equal(rx.unread(), 10);
	auto first = rx.recv();
	assert_true(first.await_ready()); // settled without suspending
	sb::broadcast_result<int> r = first.await_resume();
	assert_int_equal(r.index(), 1);
	assert_int_equal(std::get<sb::lagged>(r).missed, 6);
	assert_int_equal(rx.missed(), 6);
	bc.close();
	std::vector<int> got;
	std::uint64_t missed = 0;
	bool ended = false;
	sb::loop l(count_ring, nullptr);
	l.spawn(collect(rx, got, missed, ended));
	drain(l);
	assert_true(ended);
	assert_int_equal(missed, 0);
	assert_true(got == (std::vector<int>{ 6, 7, 8, 9 }));
}

void a_broadcast_receiver_is_subscribed_for_its_lifetime_and_sees_only_later_items(void **)
{
	sb::broadcast<int, 4> bc;
	assert_int_equal(bc.try_send(1), 0); // nobody subscribed: nobody's
	{
		sb::broadcast_receiver<int> rx(bc);
		assert_int_equal(bc.subscribers(), 1);
		int v = 0;
		assert_int_equal(rx.try_recv(v), -EAGAIN);
		assert_int_equal(bc.try_send(2), 0);
		assert_int_equal(rx.try_recv(v), 0);
		assert_int_equal(v, 2);
	}
	assert_int_equal(bc.subscribers(), 0);
	bc.close();
	sb::broadcast_receiver late(bc); // deduced: broadcast_receiver<int>
	assert_int_equal(late.error(), -EPIPE);
	assert_int_equal(bc.subscribers(), 0);
	auto r = late.recv();
	assert_true(r.await_ready());
	assert_true(std::holds_alternative<sb::closed>(r.await_resume()));
}

sb::task<> receive_once(sb::broadcast_receiver<int> &rx, bool &resumed)
{
	sb::broadcast_result<int> r = co_await rx.recv();
	(void)r;
	resumed = true;
}

void destroying_a_task_waiting_to_receive_cancels_the_receive_without_losing_the_item(void **)
{
	sb::broadcast<int, 4> bc;
	sb::broadcast_receiver<int> rx(bc);
	bool resumed = false;
	sb::loop l(count_ring, nullptr);
	l.spawn(receive_once(rx, resumed));
	l.run_ready(); // suspended in recv
	assert_int_equal(rx.unsubscribe(), -EBUSY); // its receive waits
	assert_int_equal(bc.try_send(7), 0);         // wakes it; not yet resumed
	l.shutdown();                                // cancels the receive
	drain(l);
	assert_false(resumed);
	int v = 0;
	assert_int_equal(rx.try_recv(v), 0); // still the receiver's next
	assert_int_equal(v, 7);
	assert_int_equal(rx.unsubscribe(), 0);
	assert_int_equal(rx.unsubscribe(), -EINVAL);
}

sb::task<> send_within(sb::broadcast<int, 1> &bc, int item, std::optional<int> &out, bool &done)
{
	using namespace std::chrono_literals;
	out = co_await sb::timeout(bc.send(item), 10ms);
	done = true;
}

void a_send_cut_short_says_whether_its_item_went_in(void **)
{
	using namespace std::chrono_literals;
	manual_timers timers;
	sb::loop l(count_ring, nullptr, &timers);
	sb::broadcast<int, 1> bc(sb::overflow::backpressure);
	sb::broadcast_receiver<int> rx(bc);
	assert_int_equal(bc.try_send(1), 0); // the ring is full for rx
	std::optional<int> out;
	bool done = false;
	l.spawn(send_within(bc, 2, out, done));
	l.run_ready();
	assert_false(done); // waits for room
	timers.advance(10ms);
	l.run_ready();
	assert_true(done);
	assert_false(out.has_value()); // not sent
	int v = 0;
	assert_int_equal(rx.try_recv(v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(rx.try_recv(v), -EAGAIN); // 2 never went in

	assert_int_equal(bc.try_send(3), 0);
	done = false;
	l.spawn(send_within(bc, 4, out, done));
	l.run_ready();
	assert_false(done);
	assert_int_equal(rx.try_recv(v), 0); // room: the waiting item goes in
	assert_int_equal(v, 3);
	timers.advance(10ms); // before the sender's next poll
	l.run_ready();
	assert_true(done);
	assert_true(out.has_value());
	assert_int_equal(*out, 0); // sent after all
	assert_int_equal(rx.try_recv(v), 0);
	assert_int_equal(v, 4);
	drain(l);
}

void items_sent_on_another_thread_reach_a_receiving_task_on_the_loop(void **)
{
	doorbell d;
	sb::loop l(doorbell::ring, &d);
	sb::broadcast<int, 4> bc(sb::overflow::backpressure);
	sb::broadcast_receiver<int> rx(bc);
	std::vector<int> got;
	std::uint64_t missed = 0;
	bool ended = false;
	l.spawn(collect(rx, got, missed, ended));
	l.run_ready();
	int failed = 0;
	std::thread sender([&] {
		for (int i = 0; i < 1000; i++)
			failed += bc.send_blocking(i) != 0;
		bc.close();
	});
	run_until(l, d, [&] { return l.idle(); });
	sender.join();
	assert_int_equal(failed, 0);
	assert_true(ended);
	assert_int_equal(got.size(), 1000);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(got[static_cast<std::size_t>(i)], i);
}

// ------------------------------------------------------------ watch

struct point {
	int x;
	int y;
};

void a_watch_receiver_reads_the_latest_value_after_a_burst_of_sends(void **)
{
	sb::watch<point> w(point{ 0, 0 });
	sb::watch_receiver<point> rx(w);
	assert_int_equal(rx.try_changed(), -EAGAIN); // has seen the initial value
	assert_int_equal(w.send(point{ 1, 1 }), 0);
	assert_int_equal(w.send(point{ 2, 4 }), 0);
	auto c = rx.changed();
	assert_true(c.await_ready()); // a newer version: no suspension
	assert_true(c.await_resume());
	point p = rx.read();
	assert_int_equal(p.x, 2);
	assert_int_equal(p.y, 4);
	assert_int_equal(rx.seen(), w.version());
	assert_int_equal(w.version(), 2);
	assert_int_equal(rx.try_changed(), -EAGAIN); // the read marked it seen
}

sb::task<> follow(sb::watch_receiver<int> &rx, std::vector<int> &got, bool &ended)
{
	for (;;) {
		// Not `while (co_await ...)`: g++ 12 miscompiles a co_await of a
		// temporary in a condition (docs/integration.md).
		bool more = co_await rx.changed();
		if (!more)
			break;
		got.push_back(rx.read());
	}
	ended = true;
}

void a_changed_wait_resumes_on_sends_from_another_thread_and_ends_false_once_closed(void **)
{
	doorbell d;
	sb::loop l(doorbell::ring, &d);
	sb::watch<int> w(0);
	sb::watch_receiver<int> rx(w);
	std::vector<int> got;
	bool ended = false;
	l.spawn(follow(rx, got, ended));
	l.run_ready();
	assert_false(ended);
	int failed = 0, refused = 0;
	std::thread sender([&] {
		for (int i = 1; i <= 1000; i++)
			failed += w.send(i) != 0;
		w.close();
		refused = w.send(-1);
	});
	run_until(l, d, [&] { return l.idle(); });
	sender.join();
	assert_int_equal(failed, 0);
	assert_int_equal(refused, -EPIPE);
	assert_true(ended);
	assert_false(got.empty());
	assert_int_equal(got.back(), 1000); // the last value is never skipped
	assert_true(std::is_sorted(got.begin(), got.end()));
	assert_true(std::adjacent_find(got.begin(), got.end()) == got.end()); // no value twice
}

void send_if_tells_receivers_only_when_its_callback_says_so(void **)
{
	sb::watch<int> w(5);
	sb::watch_receiver<int> rx(w);
	int calls = 0;
	assert_int_equal(w.send_if([&](int &v) noexcept {
		calls++;
		v = 6; // changed in place, but receivers are not told
		return false;
	}), 0);
	assert_int_equal(w.version(), 0);
	assert_int_equal(rx.try_changed(), -EAGAIN);
	assert_int_equal(w.send_if([&](int &v) noexcept {
		calls++;
		v++;
		return true;
	}), 1);
	assert_int_equal(w.version(), 1);
	assert_int_equal(rx.try_changed(), 0);
	assert_int_equal(rx.read(), 7);
	w.close();
	assert_int_equal(w.send_if([&](int &) noexcept {
		calls++;
		return true;
	}), -EPIPE);
	assert_int_equal(calls, 2); // not called once closed
	assert_int_equal(rx.try_changed(), -EPIPE);
}

sb::task<> wait_change(sb::watch_receiver<int> &rx, bool &resumed)
{
	resumed = co_await rx.changed();
}

void destroying_a_task_waiting_for_a_change_cancels_the_wait_so_its_receiver_can_unsubscribe(void **)
{
	sb::watch<int> w(0);
	sb::watch_receiver<int> rx(w);
	bool resumed = false;
	sb::loop l(count_ring, nullptr);
	l.spawn(wait_change(rx, resumed));
	l.run_ready(); // suspended: nothing newer yet
	assert_int_equal(rx.unsubscribe(), -EBUSY); // its wait is pending
	assert_int_equal(w.send(1), 0);              // wakes it; not yet resumed
	l.shutdown();
	drain(l);
	assert_false(resumed);
	assert_int_equal(rx.try_changed(), 0); // the change is still there to see
	assert_int_equal(rx.unsubscribe(), 0);
	assert_int_equal(rx.try_changed(), -EINVAL);
}

void a_watch_receiver_moves_while_nothing_waits_and_keeps_what_it_has_seen(void **)
{
	sb::watch<int> w(0);
	sb::watch_receiver<int> a(w);
	assert_int_equal(w.send(1), 0);
	assert_int_equal(a.read(), 1);
	assert_int_equal(w.send(2), 0);
	sb::watch_receiver<int> b(std::move(a));
	assert_int_equal(a.try_changed(), -EINVAL); // moved from: not subscribed
	assert_int_equal(a.unsubscribe(), -EINVAL);
	assert_int_equal(b.seen(), 1);
	assert_int_equal(b.try_changed(), 0);
	assert_int_equal(b.read(), 2);
	sb::watch_receiver c(w); // deduced: watch_receiver<int>
	c = std::move(b); // c's own subscription ends
	assert_int_equal(c.seen(), 2);
	assert_int_equal(c.unsubscribe(), 0);
}

// ------------------------------------------------------------ sync_wait / run_loop

void sync_wait_blocks_a_plain_thread_until_a_task_completes_and_gives_its_value(void **)
{
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	int started = 0;
	std::thread releaser([&sem] { sb_semaphore_release(&sem, 1); });
	int v = sb::sync_wait(add_after_permit(sem, 20, 22, started));
	releaser.join();
	assert_int_equal(v, 42);
	assert_int_equal(sb_semaphore_available(&sem), 1);
	sb::permit p = sb::sync_wait(sb::acquire(sem)); // any awaitable
	assert_int_equal(p.count(), 1);
}

void sync_wait_rethrows_the_exception_of_what_it_waits_on(void **)
{
	bool caught = false;
	try {
		sb::sync_wait(fail_after_yield());
	} catch (const std::runtime_error &) {
		caught = true;
	}
	assert_true(caught);
}

void a_run_loop_keeps_timeout_deadlines_and_runs_until_its_tasks_are_done(void **)
{
	using namespace std::chrono_literals;
	sb::run_loop l;
	timed_acquire expired, granted;
	l.spawn(acquire_within(expired, 0ms)); // its deadline has passed
	l.spawn(acquire_within(granted, std::chrono::milliseconds(3600 * 1000)));
	std::thread releaser([&granted] { sb_semaphore_release(&granted.sem, 1); });
	l.run();
	releaser.join();
	assert_true(expired.done && !expired.got.has_value());
	assert_true(granted.done && granted.got.has_value());
	assert_true(l.idle());
}

// ------------------------------------------------------------ release

void release_gives_up_ownership_without_giving_back_on_every_guard(void **)
{
	sb_semaphore sem = SB_SEMAPHORE_INIT(3);
	assert_int_equal(sb_semaphore_try_acquire(&sem, 2), 0);
	{
		sb::permit p(sem, 2);
		assert_ptr_equal(p.semaphore(), &sem);
		assert_int_equal(p.release(), 2);
		assert_false(static_cast<bool>(p));
	}
	assert_int_equal(sb_semaphore_available(&sem), 1); // still taken
	sb_semaphore_release(&sem, 2);
	{
		assert_int_equal(sb_semaphore_try_acquire(&sem, 1), 0);
		sb::permit p(sem, 1);
		p.reset(); // gives them back now
		assert_int_equal(sb_semaphore_available(&sem), 3);
	}
	sb_rwlock rw = SB_RWLOCK_INIT;
	assert_int_equal(sb_rwlock_try_write(&rw), 0);
	{
		sb::rwlock_guard g(rw, sb::rwlock_guard::exclusive);
		assert_ptr_equal(g.release(), &rw);
	}
	assert_true(sb_rwlock_is_write_locked(&rw)); // released, not unlocked
	assert_int_equal(sb_rwlock_write_unlock(&rw), 0);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_free_permit_is_taken_in_await_ready_without_suspending),
		cmocka_unit_test(a_moved_acquire_awaits_its_semaphore_and_count_and_suspends_when_short),
		cmocka_unit_test(a_free_mutex_and_a_set_event_are_taken_in_await_ready),
		cmocka_unit_test(a_task_with_free_permits_finishes_in_its_first_poll),
		cmocka_unit_test(a_release_on_another_thread_resumes_the_task_only_on_the_loop),
		cmocka_unit_test(a_task_waits_at_futures_between_yields_combinators_and_nested_tasks),
		cmocka_unit_test(a_condvar_wait_is_polled_on_every_wake_and_resumes_holding_the_mutex),
		cmocka_unit_test(event_waits_resume_after_sets_from_another_thread),
		cmocka_unit_test(barrier_parties_resume_once_the_last_arrives_and_one_is_told_it_leads),
		cmocka_unit_test(destroying_a_task_waiting_at_a_barrier_withdraws_its_arrival),
		cmocka_unit_test(a_latch_wait_resumes_once_counters_on_other_threads_reach_zero),
		cmocka_unit_test(a_once_runs_its_initialiser_in_one_coroutine_and_passes_the_job_on_when_it_fails),
		cmocka_unit_test(destroying_a_suspended_task_returns_a_granted_permit),
		cmocka_unit_test(destroying_a_condvar_waiter_that_waits_for_its_mutex_leaves_nothing_queued),
		cmocka_unit_test(destroying_a_task_handed_a_fifo_mutex_passes_the_mutex_on),
		cmocka_unit_test(a_writer_task_waits_for_the_readers_and_its_guards_release_on_scope_exit),
		cmocka_unit_test(an_acquire_of_a_closed_semaphore_gives_an_empty_permit),
		cmocka_unit_test(guards_release_once_on_scope_exit_and_move_ownership),
		cmocka_unit_test(tasks_holding_a_mutex_across_yields_never_overlap),
		cmocka_unit_test(permits_limit_tasks_whose_work_finishes_on_another_thread),
		cmocka_unit_test(a_deadline_expired_by_the_loop_completes_the_await_with_etimedout),
		cmocka_unit_test(a_wake_after_the_task_finished_is_harmless),
		cmocka_unit_test(a_channel_carries_every_item_in_order_between_tasks_then_ends),
		cmocka_unit_test(a_rendezvous_channel_hands_each_item_from_task_to_task),
		cmocka_unit_test(a_destroyed_receiver_leaves_the_queue_and_the_next_item_waits_in_the_ring),
		cmocka_unit_test(channel_init_errors_are_reported),
		cmocka_unit_test(an_awaited_task_starts_lazily_and_resumes_its_awaiter_with_its_value),
		cmocka_unit_test(an_exception_in_an_awaited_task_is_rethrown_in_its_awaiter),
		cmocka_unit_test(a_million_tasks_that_finish_at_once_resume_their_awaiter_without_growing_the_stack),
		cmocka_unit_test(destroying_a_task_suspended_in_a_nested_task_returns_the_nested_grant),
		cmocka_unit_test(when_all_runs_its_awaitables_concurrently_and_resumes_once_all_are_done),
		cmocka_unit_test(when_all_rethrows_a_branch_exception_once_every_branch_is_done),
		cmocka_unit_test(when_any_resumes_with_the_first_to_complete_and_hands_the_losers_grants_on),
		cmocka_unit_test(a_losing_task_is_destroyed_and_releases_its_guards_before_the_winner_resumes),
		cmocka_unit_test(when_any_over_two_ready_channels_takes_exactly_one_item),
		cmocka_unit_test(a_receive_handed_an_item_as_its_rival_channel_closes_keeps_the_item),
		cmocka_unit_test(when_any_over_always_ready_channels_lets_each_win_in_turn),
		cmocka_unit_test(a_losing_lock_or_permit_case_hands_its_grant_to_the_next_waiter),
		cmocka_unit_test(a_deadline_case_that_expires_first_leaves_later_items_in_the_channel),
		cmocka_unit_test(a_timeout_that_passes_first_cancels_the_wait_and_gives_nothing),
		cmocka_unit_test(an_await_that_completes_before_its_timeout_gives_its_result_and_disarms_the_timer),
		cmocka_unit_test(a_grant_that_arrives_with_the_timeout_wins),
		cmocka_unit_test(a_timeout_on_a_loop_without_timers_gives_up_at_once),
		cmocka_unit_test(a_timeout_over_a_task_destroys_it_and_its_guards_when_it_passes),
		cmocka_unit_test(an_item_handed_to_a_receive_as_its_timeout_passes_is_received_not_lost),
		cmocka_unit_test(a_stop_requested_on_another_thread_cancels_the_pending_await_on_the_loop),
		cmocka_unit_test(an_await_whose_token_is_stopped_already_never_starts),
		cmocka_unit_test(a_broadcast_gives_every_item_to_every_receiver_in_order_then_closed),
		cmocka_unit_test(a_lagging_receiver_is_told_how_many_items_it_missed_then_gets_the_oldest_held),
		cmocka_unit_test(a_broadcast_receiver_is_subscribed_for_its_lifetime_and_sees_only_later_items),
		cmocka_unit_test(destroying_a_task_waiting_to_receive_cancels_the_receive_without_losing_the_item),
		cmocka_unit_test(a_send_cut_short_says_whether_its_item_went_in),
		cmocka_unit_test(items_sent_on_another_thread_reach_a_receiving_task_on_the_loop),
		cmocka_unit_test(a_watch_receiver_reads_the_latest_value_after_a_burst_of_sends),
		cmocka_unit_test(a_changed_wait_resumes_on_sends_from_another_thread_and_ends_false_once_closed),
		cmocka_unit_test(send_if_tells_receivers_only_when_its_callback_says_so),
		cmocka_unit_test(destroying_a_task_waiting_for_a_change_cancels_the_wait_so_its_receiver_can_unsubscribe),
		cmocka_unit_test(a_watch_receiver_moves_while_nothing_waits_and_keeps_what_it_has_seen),
		cmocka_unit_test(sync_wait_blocks_a_plain_thread_until_a_task_completes_and_gives_its_value),
		cmocka_unit_test(sync_wait_rethrows_the_exception_of_what_it_waits_on),
		cmocka_unit_test(a_run_loop_keeps_timeout_deadlines_and_runs_until_its_tasks_are_done),
		cmocka_unit_test(release_gives_up_ownership_without_giving_back_on_every_guard),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
