// SPDX-License-Identifier: Apache-2.0
//
// bench/rwlock_contention.cc - contention/rwlock-{read-mostly,mixed,
// write-heavy}-N-threads: the shape of contention/mutex-N-threads
// (bench/contention.cc, bench/executor.cc) on a read-write lock.  Each
// operation takes the lock for reading or for writing, does its critical
// section and unlocks:
//
//   read   checks that the two words the lock guards are equal (a writer
//          changes them one after the other, so a reader let in beside a
//          writer can see them differ)
//   write  increments both words
//
// Which operations write is fixed, the same on every side (bench/peers'
// rwlock_contention.rs too): operation i of worker k (a thread here, a task
// on an executor) writes iff (7 i + k) mod 20 < W, with W = 1 (read-mostly,
// 95 % reads), 10 (mixed, 50 %) or 19 (write-heavy, 5 %).  Every run of 20
// operations of a worker holds exactly W writes; 7 is prime to 20, so they
// are spread, not bunched.  After the segment both words must equal the
// number of writes.
//
// The work equals the mutex rows': N workers x 64 x R operations (64 tasks
// of R operations per executor thread, or threads of 64 R operations), and
// the time is ns per operation over all of them.
//
//   syncband           N executor threads x 64 floating tasks (SB_GROUP_FLOATING)
//   syncband-pinned    the same with each task on its own thread (SB_GROUP_ANY)
//   syncband-blocking  N plain threads, sb_rwlock_{read,write}_blocking
//   pthread            N plain threads, pthread_rwlock_t (default attributes:
//                      glibc's reader preference, PTHREAD_RWLOCK_PREFER_READER_NP)
//
// --waits: every lock is timed (from the call, or the future's first poll,
// until it holds) into a read or a write histogram per worker, made before
// the segment and merged after it into the meter's three (all, reads,
// writes): the WAITS line's read_* and write_* fields.
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <syncband/rwlock.h>
#ifdef SBB_HAVE_URING
#include <syncband/executor.h>
#endif

#include "harness.h"

namespace {

using sbb::expect;

constexpr uint64_t TASKS_PER_THREAD = 64;

// Rounds per task at 2 threads (run.py scales them by 2/N): 2 x 64 x 1,000
// = 128,000 operations a batch, a tenth of the mutex rows', so that a row
// that convoys (5-15 us an operation with more threads than cores, the
// strict phases' handoffs) ends its batch within 2 s, and the rows' 72
// pairs add about 5 minutes, not 10, to a full 8-repetition ./x bench.
constexpr uint64_t ROUNDS = 1000;

// Writes per 20 operations of each mix.
constexpr unsigned READ_MOSTLY = 1, MIXED = 10, WRITE_HEAVY = 19;

template <unsigned W> inline bool is_write(uint64_t i, uint64_t k)
{
	return (i * 7 + k) % 20 < W;
}

// Writes that worker k makes in n operations.
template <unsigned W> uint64_t writes_of(uint64_t n, uint64_t k)
{
	uint64_t w = 0;
	for (uint64_t i = 0; i < n; i++)
		w += is_write<W>(i, k);
	return w;
}

// The two words a row's lock guards, beside it (as GuardedCounter).
template <class Lock> struct GuardedPair {
	Lock lock;
	uint64_t a, b;
};

// Times one lock into the read or the write histogram; empty, and its calls
// nothing, without --waits.
template <bool On> struct SideClock {
	void begin() {}
	void end(bool) {}
};

template <> struct SideClock<true> {
	sbb::WaitHistogram *reads = nullptr, *writes = nullptr;
	uint64_t started = 0;
	void begin() { started = sbb::now_ns(); }
	void end(bool write) { (write ? writes : reads)->record(sbb::now_ns() - started); }
};

// One read and one write histogram per worker under --waits (none
// otherwise), made and zeroed before the segment.
template <bool Waits> struct SideWaits {
	std::unique_ptr<sbb::WaitHistogram[]> reads, writes;
	explicit SideWaits(size_t n)
	{
		if constexpr (Waits) {
			reads.reset(new sbb::WaitHistogram[n]());
			writes.reset(new sbb::WaitHistogram[n]());
		}
	}
	void attach(SideClock<Waits> &clock, size_t k)
	{
		if constexpr (Waits) {
			clock.reads = &reads[k];
			clock.writes = &writes[k];
		} else {
			(void)clock;
			(void)k;
		}
	}
	void merge(sbb::Meter &m, size_t n) const
	{
		if constexpr (Waits)
			for (size_t k = 0; k < n; k++) {
				m.waits()->merge(reads[k]);
				m.waits()->merge(writes[k]);
				m.read_waits()->merge(reads[k]);
				m.write_waits()->merge(writes[k]);
			}
	}
};

// ------------------------------------------------------------ plain threads

// Runs body(k, ops_per_thread, clock) on p.threads threads, timing from the
// start flag to the last join (as contention.cc's run_threads).
template <bool Waits, class Body> void run_threads(const sbb::Params &p, sbb::Meter &m, Body body)
{
	// release/acquire on `go`: the setup the main thread did is visible to
	// the workers; `ready` only counts (relaxed is enough, the workers'
	// own work is ordered by the joins).
	std::atomic<unsigned> ready{0};
	std::atomic<bool> go{false};
	const uint64_t ops = TASKS_PER_THREAD * p.rounds;
	SideWaits<Waits> waits(p.threads);
	std::vector<std::thread> threads;
	threads.reserve(p.threads);
	for (unsigned i = 0; i < p.threads; i++)
		threads.emplace_back([&, i] {
			SideClock<Waits> clock;
			waits.attach(clock, i);
			ready.fetch_add(1, std::memory_order_relaxed);
			while (!go.load(std::memory_order_acquire))
				sched_yield();
			body(i, ops, clock);
		});
	while (ready.load(std::memory_order_relaxed) < p.threads)
		sched_yield();
	m.start();
	go.store(true, std::memory_order_release);
	for (std::thread &t : threads)
		t.join();
	m.stop();
	waits.merge(m, p.threads);
}

template <unsigned W> uint64_t thread_writes(const sbb::Params &p)
{
	uint64_t w = 0;
	for (unsigned k = 0; k < p.threads; k++)
		w += writes_of<W>(TASKS_PER_THREAD * p.rounds, k);
	return w;
}

uint64_t operations(const sbb::Params &p)
{
	return (uint64_t)p.threads * TASKS_PER_THREAD * p.rounds;
}

template <unsigned W, bool Waits> uint64_t blocking_on(const sbb::Params &p, sbb::Meter &m)
{
	sbb::CachePadded<GuardedPair<sb_rwlock>> shared{}; // the words start at 0
	sb_rwlock *rw = sbb::escape(&shared.value.lock);
	expect(sb_rwlock_init(rw), 0, "init");
	uint64_t &a = shared.value.a, &b = shared.value.b; // guarded by the lock
	run_threads<Waits>(p, m, [&](unsigned k, uint64_t ops, SideClock<Waits> &clock) {
		for (uint64_t i = 0; i < ops; i++) {
			bool write = is_write<W>(i, k);
			clock.begin();
			if (write)
				expect(sb_rwlock_write_blocking(rw, SB_TIMEOUT_INFINITE), 0, "write_blocking");
			else
				expect(sb_rwlock_read_blocking(rw, SB_TIMEOUT_INFINITE), 0, "read_blocking");
			clock.end(write);
			if (write) {
				a++;
				b++;
				expect(sb_rwlock_write_unlock(rw), 0, "write_unlock");
			} else {
				expect((long)a, (long)b, "a reader sees no write half done");
				expect(sb_rwlock_read_unlock(rw), 0, "read_unlock");
			}
		}
	});
	expect((long)a, (long)thread_writes<W>(p), "no write lost under the lock");
	expect((long)b, (long)a, "both words written");
	expect(sb_rwlock_destroy(rw), 0, "destroy");
	return operations(p);
}

template <unsigned W> uint64_t blocking(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? blocking_on<W, true>(p, m) : blocking_on<W, false>(p, m);
}
SBB_BATCH(blocking<READ_MOSTLY>, "contention/rwlock-read-mostly-N-threads", sbb::SYNCBAND_BLOCKING,
	  ROUNDS);
SBB_BATCH(blocking<MIXED>, "contention/rwlock-mixed-N-threads", sbb::SYNCBAND_BLOCKING, ROUNDS);
SBB_BATCH(blocking<WRITE_HEAVY>, "contention/rwlock-write-heavy-N-threads", sbb::SYNCBAND_BLOCKING,
	  ROUNDS);

template <unsigned W, bool Waits> uint64_t pthread_on(const sbb::Params &p, sbb::Meter &m)
{
	sbb::CachePadded<GuardedPair<pthread_rwlock_t>> shared{{PTHREAD_RWLOCK_INITIALIZER, 0, 0}};
	pthread_rwlock_t *rw = sbb::escape(&shared.value.lock);
	uint64_t &a = shared.value.a, &b = shared.value.b; // guarded by the lock
	run_threads<Waits>(p, m, [&](unsigned k, uint64_t ops, SideClock<Waits> &clock) {
		for (uint64_t i = 0; i < ops; i++) {
			bool write = is_write<W>(i, k);
			clock.begin();
			if (write)
				expect(pthread_rwlock_wrlock(rw), 0, "pthread_rwlock_wrlock");
			else
				expect(pthread_rwlock_rdlock(rw), 0, "pthread_rwlock_rdlock");
			clock.end(write);
			if (write) {
				a++;
				b++;
			} else {
				expect((long)a, (long)b, "a reader sees no write half done");
			}
			expect(pthread_rwlock_unlock(rw), 0, "pthread_rwlock_unlock");
		}
	});
	expect((long)a, (long)thread_writes<W>(p), "no write lost under the lock");
	expect((long)b, (long)a, "both words written");
	expect(pthread_rwlock_destroy(rw), 0, "pthread_rwlock_destroy");
	return operations(p);
}

template <unsigned W> uint64_t pthread_rw(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? pthread_on<W, true>(p, m) : pthread_on<W, false>(p, m);
}
SBB_BATCH(pthread_rw<READ_MOSTLY>, "contention/rwlock-read-mostly-N-threads", sbb::PTHREAD, ROUNDS);
SBB_BATCH(pthread_rw<MIXED>, "contention/rwlock-mixed-N-threads", sbb::PTHREAD, ROUNDS);
SBB_BATCH(pthread_rw<WRITE_HEAVY>, "contention/rwlock-write-heavy-N-threads", sbb::PTHREAD, ROUNDS);

// ------------------------------------------------------------ executor threads

#ifdef SBB_HAVE_URING

template <class T> T *of(sb_task *t)
{
	return SB_CONTAINER_OF(t, T, task);
}

// One task: R operations, each a read or write lock future polled until it
// holds, the critical section, the unlock.  Its clock is its last member
// (empty on the throughput rows), as executor.cc's tasks.
template <unsigned W, bool Waits> struct RwTask {
	sb_task task;
	sb_rwlock *rw;
	GuardedPair<sb_rwlock> *shared;
	sb_rwlock_lock lock;
	uint64_t i, n, k;
	bool locking, writing;
	SideClock<Waits> clock;
	static int poll(sb_task *t, const sb_waker *w)
	{
		RwTask *x = of<RwTask>(t);
		while (x->i < x->n) {
			if (!x->locking) {
				x->writing = is_write<W>(x->i, x->k);
				if (x->writing)
					sb_rwlock_write_init(&x->lock, x->rw);
				else
					sb_rwlock_read_init(&x->lock, x->rw);
				x->locking = true;
				x->clock.begin();
			}
			int r = sb_rwlock_lock_poll(&x->lock, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "lock");
			x->clock.end(x->writing);
			x->locking = false;
			if (x->writing) {
				x->shared->a++;
				x->shared->b++;
				expect(sb_rwlock_write_unlock(x->rw), 0, "write_unlock");
			} else {
				expect((long)x->shared->a, (long)x->shared->b,
				       "a reader sees no write half done");
				expect(sb_rwlock_read_unlock(x->rw), 0, "read_unlock");
			}
			x->i++;
		}
		return 0;
	}
};

template <unsigned W, size_t Where, bool Waits>
uint64_t group_on(const sbb::Params &p, sbb::Meter &m)
{
	sbb::CachePadded<GuardedPair<sb_rwlock>> padded{}; // the words start at 0
	GuardedPair<sb_rwlock> *shared = &padded.value;
	expect(sb_rwlock_init(&shared->lock), 0, "init");
	size_t n = p.threads * TASKS_PER_THREAD;
	std::unique_ptr<RwTask<W, Waits>[]> tasks(new RwTask<W, Waits>[n]);
	SideWaits<Waits> waits(n);
	uint64_t writes = 0;
	for (size_t k = 0; k < n; k++) {
		sb_task_init(&tasks[k].task, RwTask<W, Waits>::poll, nullptr, nullptr);
		tasks[k].rw = &shared->lock;
		tasks[k].shared = shared;
		tasks[k].i = 0;
		tasks[k].n = p.rounds;
		tasks[k].k = k;
		tasks[k].locking = false;
		waits.attach(tasks[k].clock, k);
		writes += writes_of<W>(p.rounds, k);
	}
	sb_executor_group g;
	expect(sb_executor_group_init(&g, p.threads, nullptr), 0, "sb_executor_group_init");
	std::unique_ptr<sb_join[]> joins(new sb_join[n]);
	m.start();
	for (size_t k = 0; k < n; k++)
		expect(sb_executor_group_spawn(&g, Where, &tasks[k].task, &joins[k]), 0,
		       "sb_executor_group_spawn");
	for (size_t k = 0; k < n; k++)
		expect(sb_join_wait(&joins[k]), 0, "sb_join_wait");
	m.stop();
	size_t cancelled = 99;
	expect(sb_executor_group_shutdown(&g, &cancelled), 0, "sb_executor_group_shutdown");
	expect((long)cancelled, 0, "nothing cancelled");
	waits.merge(m, n);
	expect((long)shared->a, (long)writes, "no write lost under the lock");
	expect((long)shared->b, (long)shared->a, "both words written");
	expect(sb_rwlock_destroy(&shared->lock), 0, "destroy");
	return n * p.rounds;
}

template <unsigned W, size_t Where> uint64_t group(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? group_on<W, Where, true>(p, m) : group_on<W, Where, false>(p, m);
}
// (Named: a template's comma would split the macro's arguments.)
uint64_t floating_read_mostly(const sbb::Params &p, sbb::Meter &m)
{
	return group<READ_MOSTLY, SB_GROUP_FLOATING>(p, m);
}
uint64_t floating_mixed(const sbb::Params &p, sbb::Meter &m)
{
	return group<MIXED, SB_GROUP_FLOATING>(p, m);
}
uint64_t floating_write_heavy(const sbb::Params &p, sbb::Meter &m)
{
	return group<WRITE_HEAVY, SB_GROUP_FLOATING>(p, m);
}
uint64_t pinned_read_mostly(const sbb::Params &p, sbb::Meter &m)
{
	return group<READ_MOSTLY, SB_GROUP_ANY>(p, m);
}
uint64_t pinned_mixed(const sbb::Params &p, sbb::Meter &m)
{
	return group<MIXED, SB_GROUP_ANY>(p, m);
}
uint64_t pinned_write_heavy(const sbb::Params &p, sbb::Meter &m)
{
	return group<WRITE_HEAVY, SB_GROUP_ANY>(p, m);
}
SBB_BATCH(floating_read_mostly, "contention/rwlock-read-mostly-N-threads", sbb::SYNCBAND, ROUNDS);
SBB_BATCH(floating_mixed, "contention/rwlock-mixed-N-threads", sbb::SYNCBAND, ROUNDS);
SBB_BATCH(floating_write_heavy, "contention/rwlock-write-heavy-N-threads", sbb::SYNCBAND, ROUNDS);
SBB_BATCH(pinned_read_mostly, "contention/rwlock-read-mostly-N-threads", sbb::SYNCBAND_PINNED,
	  ROUNDS);
SBB_BATCH(pinned_mixed, "contention/rwlock-mixed-N-threads", sbb::SYNCBAND_PINNED, ROUNDS);
SBB_BATCH(pinned_write_heavy, "contention/rwlock-write-heavy-N-threads", sbb::SYNCBAND_PINNED,
	  ROUNDS);

#endif // SBB_HAVE_URING

} // namespace
