// SPDX-License-Identifier: Apache-2.0
//
// bench/harness.h - the small harness every syncband benchmark binary shares.
//
// A benchmark binary is one .cc file that registers (scenario, impl) rows and
// links harness.cc, which provides main().  main() has two faces:
//
//   bench_x --list                         "<scenario> <impl> <default rounds>" a line
//   bench_x --run <scenario> [<impl>] [--batches B] [--rounds R]
//           [--threads N] [--permits K] [--once | --waits]
//       one untimed warm-up batch (allocations are counted in it, and only
//       in it), then B timed batches (default 1) of R rounds (default: the
//       row's count from bench/README.md); prints, exactly like bench/peers,
//         BATCH <scenario> <impl> <ns_per_round>            one per batch
//         RESULT <scenario> <impl> <median_ns> allocs_per_round=<x>
//       --once: exactly one batch of R rounds and no warm-up (it counts the
//       allocations and is timed), so that two runs of R and 2R rounds
//       differ by R rounds and nothing else (the instruction counts of
//       bench/run.py, under callgrind).
//       --waits (the rows that time their waits: the contention rows and
//       baseline/futex-wake-to-run): exactly one batch of R rounds, no
//       warm-up, in which every acquire (every wake) is timed; prints only
//         WAITS <scenario> <impl> p50_ns=<x> p99_ns=<y> max_ns=<z> acquires=<n>
//       (that batch's time is not reported: the clock reads slow it down);
//       a row that times its read and write locks apart (the rwlock
//       contention rows) appends, on the same line,
//         read_p50_ns=.. read_p99_ns=.. read_max_ns=.. reads=..
//         write_p50_ns=.. write_p99_ns=.. write_max_ns=.. writes=..
//       (the first six fields stay the totals of both sides).
//   bench_x [--benchmark_filter=...]      google-benchmark's own runner: every
//       row is registered with ->Iterations(rounds) (round rows) or as one
//       manually timed batch (thread rows), so its own output works too.
//
// A wrong Pending/Ready (or any failed check) prints what went wrong and
// calls abort(): checks hold in Release builds too (no assert()).
#ifndef SYNCBAND_BENCH_HARNESS_H
#define SYNCBAND_BENCH_HARNESS_H

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <syncband/future.h>

namespace sbb {

// Impl names, as printed in the BATCH/RESULT lines.
constexpr const char *SYNCBAND = "syncband";
// contention rows on plain threads with the blocking waits (contention.cc)
constexpr const char *SYNCBAND_BLOCKING = "syncband-blocking";
// contention rows on executor threads with tasks pinned to their thread
constexpr const char *SYNCBAND_PINNED = "syncband-pinned";
// the mutex rows above with a strict-FIFO mutex (sb_mutex_init_fifo); the
// names without "-fifo" are the default, eventually fair mutex
constexpr const char *SYNCBAND_FIFO = "syncband-fifo";
constexpr const char *SYNCBAND_BLOCKING_FIFO = "syncband-blocking-fifo";
constexpr const char *PTHREAD = "pthread";
constexpr const char *SEM_T = "sem_t";
constexpr const char *C_ATOMIC = "c-atomic";
constexpr const char *C_FUTEX = "c-futex";

// What one batch is asked to do.
struct Params {
	uint64_t rounds;   // rounds in the batch (contention rows: ops per task)
	unsigned threads;  // threads of the thread rows
	unsigned permits;  // permits of the contention semaphore
};

// Default threads and permits, the same as bench/peers.
constexpr unsigned DEFAULT_THREADS = 2;
constexpr unsigned DEFAULT_PERMITS = 5;

// ---------------------------------------------------------------- allocations

// Allocations counted so far (malloc, calloc, realloc, posix_memalign,
// aligned_alloc, memalign; harness.cc interposes them).  Counting is on only
// while set_counting(true): in the warm-up batch.
uint64_t allocations();
void set_counting(bool on);

// ---------------------------------------------------------------- the meter

inline uint64_t now_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// ---------------------------------------------------------------- acquire waits

// How long acquires waited, from the lock/acquire call (or a lock future's
// first poll) until the caller held the mutex or permit.  Log-linear: exact
// below 32 ns, then 32 buckets per power of two, so a percentile is reported
// as its bucket's upper edge, at most 1/32 (3.1%) above the true value; the
// maximum is exact.  Fixed size (no allocation when recording): one per
// thread or task, allocated before the timed segment, merged after it.
class WaitHistogram {
public:
	void record(uint64_t ns)
	{
		counts_[bucket(ns)]++;
		if (ns > max_)
			max_ = ns;
	}
	void merge(const WaitHistogram &o)
	{
		for (size_t i = 0; i < BUCKETS; i++)
			counts_[i] += o.counts_[i];
		if (o.max_ > max_)
			max_ = o.max_;
	}
	uint64_t count() const
	{
		uint64_t n = 0;
		for (uint64_t c : counts_)
			n += c;
		return n;
	}
	uint64_t max() const { return max_; }
	// The smallest recorded value v such that a fraction q of the records
	// are <= v, rounded up to its bucket's upper edge (never above max()).
	uint64_t percentile(double q) const
	{
		uint64_t n = count();
		if (n == 0)
			return 0;
		double want = q * (double)n;
		uint64_t rank = (uint64_t)want < want ? (uint64_t)want + 1 : (uint64_t)want;
		if (rank == 0)
			rank = 1;
		uint64_t seen = 0;
		for (size_t i = 0; i < BUCKETS; i++) {
			seen += counts_[i];
			if (seen >= rank)
				return i + 1 < BUCKETS && upper_edge(i) < max_ ? upper_edge(i) : max_;
		}
		return max_;
	}

private:
	static constexpr unsigned SUB_BITS = 5; // 32 buckets per power of two
	// Waits of 2^41 ns (37 minutes) and longer share the last bucket.
	static constexpr unsigned TOP_BIT = 40;
	static constexpr size_t BUCKETS = (size_t)(TOP_BIT - SUB_BITS + 2) << SUB_BITS;

	static size_t bucket(uint64_t ns)
	{
		if (ns < (1u << SUB_BITS))
			return (size_t)ns;
		unsigned top = 63u - (unsigned)__builtin_clzll(ns);
		if (top > TOP_BIT)
			return BUCKETS - 1;
		unsigned shift = top - SUB_BITS;
		return ((size_t)(shift + 1) << SUB_BITS) |
		       (size_t)((ns >> shift) & ((1u << SUB_BITS) - 1));
	}
	static uint64_t upper_edge(size_t i)
	{
		size_t group = i >> SUB_BITS, sub = i & ((1u << SUB_BITS) - 1);
		if (group == 0)
			return sub;
		unsigned shift = (unsigned)group - 1;
		return ((((uint64_t)1 << SUB_BITS) + sub + 1) << shift) - 1;
	}

	uint64_t counts_[BUCKETS] = {};
	uint64_t max_ = 0;
};

// Times one acquire into a histogram: begin() before the lock/acquire call
// or the future's first poll, end() once it holds.  WaitClock<false> is
// empty and its calls compile to nothing, so a throughput batch runs exactly
// the code it ran before waits were measured.
template <bool On> struct WaitClock {
	void begin() {}
	void end() {}
};

template <> struct WaitClock<true> {
	WaitHistogram *histogram = nullptr;
	uint64_t started = 0;
	void begin() { started = now_ns(); }
	void end() { histogram->record(now_ns() - started); }
};

// Times the measured segments of a batch and counts the allocations made in
// them.  Setup and teardown stay outside the segments.  With waits() set
// (--waits), a contention batch also times every acquire into it; a row
// with two kinds of acquire (read and write locks) also adds each kind into
// read_waits() or write_waits(), set together with waits().
class Meter {
public:
	explicit Meter(WaitHistogram *waits = nullptr, WaitHistogram *read_waits = nullptr,
		       WaitHistogram *write_waits = nullptr)
		: waits_(waits), read_waits_(read_waits), write_waits_(write_waits)
	{
	}
	WaitHistogram *waits() const { return waits_; }
	WaitHistogram *read_waits() const { return read_waits_; }
	WaitHistogram *write_waits() const { return write_waits_; }

	void start()
	{
		start_allocs_ = allocations();
		start_ns_ = now_ns();
	}
	void stop()
	{
		uint64_t t = now_ns();
		elapsed_ns_ += t - start_ns_;
		allocs_ += allocations() - start_allocs_;
	}
	uint64_t elapsed_ns() const { return elapsed_ns_; }
	uint64_t allocs() const { return allocs_; }

private:
	WaitHistogram *waits_, *read_waits_, *write_waits_;
	uint64_t start_ns_ = 0, start_allocs_ = 0, elapsed_ns_ = 0, allocs_ = 0;
};

// ---------------------------------------------------------------- checks

[[noreturn]] void wrong_result(const char *step, long expected, long got);

// Aborts the run unless `got == want`.  Inlined; the failure path is cold.
// Compared in the result's own type (int for the API's results), so that a
// check is one test and one branch, with no widening first.
template <class T, class U> inline void expect(T got, U want, const char *step)
{
	if (__builtin_expect(got != (T)want, 0))
		wrong_result(step, (long)want, (long)got);
}

// A primitive that threads contend for, kept alone on its cache lines:
// 128-byte aligned and padded to a multiple of 128 (x86's prefetcher pulls
// lines in pairs), so that nothing else the threads touch - a local the
// compiler placed beside it on the stack - shares its line.  A pointer that
// two threads only read, in the same 64-byte line as a contended
// semaphore's word, made each acquire and release 30 ns slower here (100
// against 72 ns, 2 threads); before this, the blocking semaphore row
// measured where address-space randomisation had put the stack that run.
// Its baselines (sem_t, pthread_mutex_t) get the same, and the peers' Tokio
// rows keep theirs in an allocation of its own (an Arc).
template <class T> struct alignas(128) CachePadded {
	T value;
};

// A contention row's mutex and the counter it guards, side by side (in a
// CachePadded): as a struct keeps its lock beside its data, and as the
// peers' Mutex<u64> holds its counter.
template <class Mutex> struct GuardedCounter {
	Mutex mutex;
	uint64_t counter;
};

// Makes the compiler forget what it knows about `p` (as Rust's black_box):
// the object is treated as escaped.
template <class T> inline T *escape(T *p)
{
	asm volatile("" : "+r"(p) : : "memory");
	return p;
}

// The no-op waker every single-thread scenario polls with (made once, before
// main(), so that fetching it costs nothing in the timed loops).
inline const sb_waker g_noop_waker = sb_waker_noop();
inline const sb_waker *noop()
{
	return &g_noop_waker;
}

// ---------------------------------------------------------------- registry

// One batch: does the work for `p`, timing it with `m`; returns how many
// units (rounds, or operations for thread rows) the time is divided by.
using BatchFn = uint64_t (*)(const Params &p, Meter &m);
using GbenchFn = void (*)(benchmark::State &st);

struct Row {
	const char *scenario;  // contention rows end in "-N-threads"
	const char *impl;
	uint64_t rounds;       // default rounds per batch
	BatchFn batch;
	GbenchFn gbench;       // google-benchmark body
	bool per_round;        // gbench: Iterations(rounds); else one manual batch
};

void add_row(const Row &row);

struct Register {
	explicit Register(const Row &row) { add_row(row); }
};

// A round scenario S keeps its primitives in an S::Storage (a struct of
// them, or sbb::NoStorage) that the harness owns and escapes, and holds only
// pointers into it: S(const Params &, S::Storage &) sets up (untimed);
// S::round() is one round (timed); S::finish() tears down and checks the
// final state (untimed).  S's own address never escapes, so its pointers
// stay in registers across the rounds, as a Rust closure's locals do on the
// peers' side (a pointer member of an escaped object would be reloaded after
// every atomic operation: harness cost counted against the library).
struct NoStorage {};

// Flattened, so that round() is inlined into the loop whatever the
// compiler's size estimate of it: out of line, it takes S's address and
// reloads S's pointers every round (the guard-drop and fan-out-16 rounds
// were past that estimate).  Only what this translation unit sees can be
// inlined: the library's functions stay calls.
template <class S> __attribute__((flatten)) uint64_t round_batch(const Params &p, Meter &m)
{
	typename S::Storage storage;
	S s(p, *escape(&storage));
	const uint64_t rounds = p.rounds;
	m.start();
	// Counting down: one decrement and one branch a round.
	for (uint64_t left = rounds; left != 0; left--)
		s.round();
	m.stop();
	s.finish();
	return rounds;
}

template <class S> void round_gbench(benchmark::State &st)
{
	Params p{(uint64_t)st.max_iterations, DEFAULT_THREADS, DEFAULT_PERMITS};
	typename S::Storage storage;
	S s(p, *escape(&storage));
	for (auto _ : st)
		s.round();
	s.finish();
}

// google-benchmark body of a row timed as whole batches (thread rows): one
// iteration is one batch of the default rounds, timed by its own meter.
template <BatchFn F, uint64_t Rounds> void batch_gbench(benchmark::State &st)
{
	Params p{Rounds, DEFAULT_THREADS, DEFAULT_PERMITS};
	double ns_per_unit = 0;
	for (auto _ : st) {
		Meter m;
		uint64_t units = F(p, m);
		st.SetIterationTime((double)m.elapsed_ns() / 1e9);
		ns_per_unit = (double)m.elapsed_ns() / (double)units;
	}
	st.counters["ns_per_round"] = ns_per_unit;
}

} // namespace sbb

#define SBB_CAT2(a, b) a##b
#define SBB_CAT(a, b) SBB_CAT2(a, b)

// Registers round scenario S as (scenario, impl) with `rounds` per batch.
#define SBB_ROUNDS(S, scenario, impl, rounds)                                          \
	static sbb::Register SBB_CAT(sbb_row_, __LINE__)(sbb::Row{                     \
		scenario, impl, rounds, &sbb::round_batch<S>, &sbb::round_gbench<S>, true})

// Registers batch function F (a thread row) with `rounds` per batch.
#define SBB_BATCH(F, scenario, impl, rounds)                                           \
	static sbb::Register SBB_CAT(sbb_row_, __LINE__)(sbb::Row{                     \
		scenario, impl, rounds, &F, &sbb::batch_gbench<&F, rounds>, false})

#endif // SYNCBAND_BENCH_HARNESS_H
