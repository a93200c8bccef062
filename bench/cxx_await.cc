// SPDX-License-Identifier: Apache-2.0
//
// bench/cxx_await.cc - what co_await (syncband.hpp) costs over the C future
// it wraps, in instructions per round; not a row of run.py (no peer, and
// C++20).  cxx_await.sh runs it under callgrind.  Usage: cxx_await MODE ROUNDS
//
//   c-ready / cxx-ready      a free permit: acquire it, return it.  C: an
//                            sb_loop task inits and polls an acquire future,
//                            then releases; C++: an sb::task<> co_awaits
//                            sb::acquire, and the sb::permit returns it.
//   c-pending / cxx-pending  every acquire waits: the driver releases one
//                            permit (the wake), run_ready polls the task,
//                            whose acquire completes and the next one waits.
//                            The permits are kept: the next release is the
//                            next round's.
//   c-lock-ready / ...       the same with an sb_mutex: a free mutex is
//   c-lock-pending / ...     locked and unlocked (C: sb_mutex_lock future,
//                            C++: sb::lock and its sb::mutex_guard); pending,
//                            the driver unlocks (the wake) and the task keeps
//                            the lock it then takes (the guard's release()).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <syncband/syncband.hpp>

namespace {

void no_ring(void *) {}

sb_semaphore sem = SB_SEMAPHORE_INIT(0);
sb_mutex mtx = SB_MUTEX_INIT;
long rounds;
long done_rounds;
bool pending;

struct c_task {
	sb_loop_task t;
	sb_semaphore_acquire f;
	bool armed;
};

int c_poll(sb_loop_task *lt, const sb_waker *w)
{
	c_task *c = SB_CONTAINER_OF(lt, c_task, t);
	for (;;) {
		if (!c->armed) {
			sb_semaphore_acquire_init(&c->f, &sem, 1);
			c->armed = true;
		}
		if (sb_semaphore_acquire_poll(&c->f, w) == SB_PENDING)
			return SB_PENDING;
		c->armed = false;
		if (!pending)
			sb_semaphore_release(&sem, 1);
		if (++done_rounds == rounds)
			return 0;
	}
}

struct c_lock_task {
	sb_loop_task t;
	sb_mutex_lock f;
	bool armed;
};

int c_lock_poll(sb_loop_task *lt, const sb_waker *w)
{
	c_lock_task *c = SB_CONTAINER_OF(lt, c_lock_task, t);
	for (;;) {
		if (!c->armed) {
			sb_mutex_lock_init(&c->f, &mtx);
			c->armed = true;
		}
		if (sb_mutex_lock_poll(&c->f, w) == SB_PENDING)
			return SB_PENDING;
		c->armed = false;
		if (!pending)
			sb_mutex_unlock(&mtx);
		if (++done_rounds == rounds)
			return 0;
	}
}

sb::task<> cxx_lock_task()
{
	for (long i = 0; i < rounds; i++) {
		sb::mutex_guard g = co_await sb::lock(mtx);
		if (pending)
			static_cast<void>(g.release());
		done_rounds++;
	}
}

sb::task<> cxx_task()
{
	for (long i = 0; i < rounds; i++) {
		sb::permit p = co_await sb::acquire(sem);
		if (pending)
			static_cast<void>(p.release());
		done_rounds++;
	}
}

// Polls until every round is done, releasing one permit (or unlocking the
// mutex) before each run in the pending modes.
template <bool Lock, class RunReady>
void drive(RunReady run_ready)
{
	run_ready();
	while (done_rounds < rounds) {
		if (Lock)
			sb_mutex_unlock(&mtx);
		else
			sb_semaphore_release(&sem, 1);
		run_ready();
	}
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: cxx_await [c|cxx]-[lock-]ready|pending ROUNDS\n");
		return 2;
	}
	const char *mode = argv[1];
	rounds = std::atol(argv[2]);
	pending = std::strstr(mode, "pending") != nullptr;
	bool lock = std::strstr(mode, "-lock-") != nullptr;
	if (!pending)
		sb_semaphore_release(&sem, 1);
	else if (lock && sb_mutex_try_lock(&mtx) != 0) // the driver's: every lock waits
		return 1;
	if (std::strncmp(mode, "c-", 2) == 0) {
		sb_loop l;
		sb_loop_init(&l, no_ring, nullptr);
		static c_task t;
		static c_lock_task lt;
		if (lock)
			sb_loop_task_init(&lt.t, c_lock_poll, nullptr);
		else
			sb_loop_task_init(&t.t, c_poll, nullptr);
		sb_loop_spawn(&l, lock ? &lt.t : &t.t);
		auto run = [&l] { sb_loop_run_ready(&l); };
		lock ? drive<true>(run) : drive<false>(run);
		if (!sb_loop_idle(&l))
			return 1;
	} else {
		sb::loop l(no_ring, nullptr);
		l.spawn(lock ? cxx_lock_task() : cxx_task());
		auto run = [&l] { l.run_ready(); };
		lock ? drive<true>(run) : drive<false>(run);
		while (!l.idle())
			l.run_ready();
	}
	// Pending, the task keeps the last lock it took.
	bool left_ok = lock ? sb_mutex_is_locked(&mtx) == pending
			    : sb_semaphore_available(&sem) == (pending ? 0u : 1u);
	if (done_rounds != rounds || !left_ok) {
		std::fprintf(stderr, "cxx_await %s: %ld of %ld rounds\n", mode, done_rounds, rounds);
		return 1;
	}
	return 0;
}
