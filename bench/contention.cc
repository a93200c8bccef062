// SPDX-License-Identifier: Apache-2.0
//
// bench/contention.cc - contention/{mutex,semaphore}-N-threads on plain
// threads: N threads hammer one mutex (lock, increment a shared counter,
// unlock) or one K-permit semaphore (acquire 1, release 1).  The work equals
// bench/peers' "N executor threads x 64 tasks x R operations": here each of
// the N threads does 64 x R operations itself, and the result is ns per
// operation over all threads, time / (N x 64 x R).
//
//   syncband-blocking       sb_mutex_lock_blocking / sb_semaphore_acquire_blocking
//                           (a waiting thread parks on a futex),
//                           sb_*_unlock/release; the default, eventually fair
//                           mutex and semaphore (sb_mutex_init, sb_semaphore_init)
//   syncband-blocking-fifo  the same on a strict-FIFO mutex or semaphore
//                           (sb_mutex_init_fifo, sb_semaphore_init_fifo)
//   pthread                 pthread_mutex_t (default type): the mutex row's baseline
//   sem_t                   POSIX sem_wait / sem_post: the semaphore row's baseline
//
// The row named plain "syncband" is in executor.cc: N executor threads x 64
// tasks polling the futures, the same work the peers do on their runtimes.
//
// The threads are created before the timed segment and wait for a start
// flag; the segment runs from the start flag until the last thread is
// joined.  Afterwards the counter must equal N x 64 x R (mutual exclusion
// held) and all K permits must be back.
//
// --waits: the same batch with every acquire timed (from the call until it
// returns holding the mutex or permit) into a histogram per thread, made
// before the start flag and merged after the joins.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>

#include <atomic>
#include <thread>
#include <vector>

#include <syncband/mutex.h>
#include <syncband/semaphore.h>

#include "harness.h"

namespace {

using sbb::expect;

// Operations per thread per round, after bench/peers' 64 tasks per thread.
constexpr uint64_t TASKS_PER_THREAD = 64;

uint64_t operations(const sbb::Params &p)
{
	return (uint64_t)p.threads * TASKS_PER_THREAD * p.rounds;
}

// Runs body(ops_per_thread, clock) on p.threads threads, timing from the
// start flag to the last join.  Thread creation, and the histograms of
// --waits, stay outside the segment.
template <bool Waits, class Body> void run_threads(const sbb::Params &p, sbb::Meter &m, Body body)
{
	// release/acquire on `go`: the setup the main thread did is visible to
	// the workers; `ready` only counts (relaxed is enough, the workers'
	// own work is ordered by the joins).
	std::atomic<unsigned> ready{0};
	std::atomic<bool> go{false};
	const uint64_t ops = TASKS_PER_THREAD * p.rounds;
	std::vector<sbb::WaitHistogram> waits(Waits ? p.threads : 0);
	std::vector<std::thread> threads;
	threads.reserve(p.threads);
	for (unsigned i = 0; i < p.threads; i++)
		threads.emplace_back([&, i] {
			sbb::WaitClock<Waits> clock;
			if constexpr (Waits)
				clock.histogram = &waits[i];
			ready.fetch_add(1, std::memory_order_relaxed);
			while (!go.load(std::memory_order_acquire))
				sched_yield();
			body(ops, clock);
		});
	while (ready.load(std::memory_order_relaxed) < p.threads)
		sched_yield();
	m.start();
	go.store(true, std::memory_order_release);
	for (std::thread &t : threads)
		t.join();
	m.stop();
	for (const sbb::WaitHistogram &h : waits)
		m.waits()->merge(h);
}

template <bool Fifo, bool Waits> uint64_t syncband_mutex_on(const sbb::Params &p, sbb::Meter &m)
{
	sbb::CachePadded<sbb::GuardedCounter<sb_mutex>> shared{}; // the counter starts at 0
	sb_mutex *mx = sbb::escape(&shared.value.mutex);
	expect(Fifo ? sb_mutex_init_fifo(mx) : sb_mutex_init(mx), 0, "init");
	uint64_t &counter = shared.value.counter; // guarded by the mutex
	run_threads<Waits>(p, m, [&](uint64_t ops, sbb::WaitClock<Waits> &clock) {
		for (uint64_t i = 0; i < ops; i++) {
			clock.begin();
			expect(sb_mutex_lock_blocking(mx, SB_TIMEOUT_INFINITE), 0, "lock_blocking");
			clock.end();
			counter++;
			expect(sb_mutex_unlock(mx), 0, "unlock");
		}
	});
	expect((long)counter, (long)operations(p), "no update lost under the mutex");
	expect(sb_mutex_destroy(mx), 0, "destroy");
	return operations(p);
}

template <bool Fifo> uint64_t syncband_mutex(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? syncband_mutex_on<Fifo, true>(p, m) : syncband_mutex_on<Fifo, false>(p, m);
}
SBB_BATCH(syncband_mutex<false>, "contention/mutex-N-threads", sbb::SYNCBAND_BLOCKING, 10000);
SBB_BATCH(syncband_mutex<true>, "contention/mutex-N-threads", sbb::SYNCBAND_BLOCKING_FIFO, 10000);

template <bool Waits> uint64_t pthread_mutex_on(const sbb::Params &p, sbb::Meter &m)
{
	sbb::CachePadded<sbb::GuardedCounter<pthread_mutex_t>> shared{{PTHREAD_MUTEX_INITIALIZER, 0}};
	pthread_mutex_t *mx = sbb::escape(&shared.value.mutex);
	uint64_t &counter = shared.value.counter; // guarded by the mutex
	run_threads<Waits>(p, m, [&](uint64_t ops, sbb::WaitClock<Waits> &clock) {
		for (uint64_t i = 0; i < ops; i++) {
			clock.begin();
			expect(pthread_mutex_lock(mx), 0, "pthread_mutex_lock");
			clock.end();
			counter++;
			expect(pthread_mutex_unlock(mx), 0, "pthread_mutex_unlock");
		}
	});
	expect((long)counter, (long)operations(p), "no update lost under the mutex");
	expect(pthread_mutex_destroy(mx), 0, "pthread_mutex_destroy");
	return operations(p);
}

uint64_t pthread_mutex(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? pthread_mutex_on<true>(p, m) : pthread_mutex_on<false>(p, m);
}
SBB_BATCH(pthread_mutex, "contention/mutex-N-threads", sbb::PTHREAD, 10000);

template <bool Fifo, bool Waits> uint64_t syncband_semaphore_on(const sbb::Params &p, sbb::Meter &m)
{
	sbb::CachePadded<sb_semaphore> sem;
	sb_semaphore *s = sbb::escape(&sem.value);
	expect(Fifo ? sb_semaphore_init_fifo(s, p.permits) : sb_semaphore_init(s, p.permits), 0, "init");
	run_threads<Waits>(p, m, [&](uint64_t ops, sbb::WaitClock<Waits> &clock) {
		for (uint64_t i = 0; i < ops; i++) {
			clock.begin();
			expect(sb_semaphore_acquire_blocking(s, 1, SB_TIMEOUT_INFINITE), 0,
			       "acquire_blocking(1)");
			clock.end();
			expect(sb_semaphore_release(s, 1), 0, "release(1)");
		}
	});
	expect((long)sb_semaphore_available(s), (long)p.permits, "every permit is back");
	expect(sb_semaphore_destroy(s), 0, "destroy");
	return operations(p);
}

template <bool Fifo> uint64_t syncband_semaphore(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? syncband_semaphore_on<Fifo, true>(p, m) : syncband_semaphore_on<Fifo, false>(p, m);
}
SBB_BATCH(syncband_semaphore<false>, "contention/semaphore-N-threads", sbb::SYNCBAND_BLOCKING, 10000);
SBB_BATCH(syncband_semaphore<true>, "contention/semaphore-N-threads", sbb::SYNCBAND_BLOCKING_FIFO,
	  10000);

template <bool Waits> uint64_t posix_semaphore_on(const sbb::Params &p, sbb::Meter &m)
{
	sbb::CachePadded<sem_t> sem;
	sem_t *s = sbb::escape(&sem.value);
	expect(sem_init(s, 0, p.permits), 0, "sem_init");
	run_threads<Waits>(p, m, [&](uint64_t ops, sbb::WaitClock<Waits> &clock) {
		for (uint64_t i = 0; i < ops; i++) {
			clock.begin();
			expect(sem_wait(s), 0, "sem_wait");
			clock.end();
			expect(sem_post(s), 0, "sem_post");
		}
	});
	int value = -1;
	expect(sem_getvalue(s, &value), 0, "sem_getvalue");
	expect(value, (long)p.permits, "every permit is back");
	expect(sem_destroy(s), 0, "sem_destroy");
	return operations(p);
}

uint64_t posix_semaphore(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? posix_semaphore_on<true>(p, m) : posix_semaphore_on<false>(p, m);
}
SBB_BATCH(posix_semaphore, "contention/semaphore-N-threads", sbb::SEM_T, 10000);

} // namespace
