// SPDX-License-Identifier: Apache-2.0
//
// bench/baseline.cc - baseline/cas-acquire+store-release: the physical floor
// of an uncontended lock+unlock, one compare-and-swap (acquire) and one
// release store, measured by this harness (impl "c-atomic"; bench/peers
// measures the same two instructions as "rust-std").  std::atomic compiles
// to the same instructions as C11 atomic_compare_exchange_strong_explicit /
// atomic_store_explicit (lock cmpxchg; mov on x86-64).
// baseline/reads-first-cas+cas and baseline/blind-cas+cas (impl "c-atomic"):
// two CASes a round, with and without a load before each (below).
//
// baseline/futex-wake-to-run (impl "c-futex"): what waking a sleeping thread
// costs on this machine, the floor under every wait that sleeps.  Two
// threads take turns on one futex word; each, when its turn comes, hands the
// turn to the other (a release store, then FUTEX_WAKE) and sleeps
// (FUTEX_WAIT) until the turn comes back.  A round is a turn of each, so two
// wakes.  --waits times every wake, from the clock read just before the
// waker's store until the woken thread sees its turn: the kernel's wake-up
// and, on a virtual machine whose idle vCPUs halt, the host's time to run
// the vCPU again.  A blocking lock that hands its mutex to a sleeping thread
// (the contention rows) waits at least that long, so this row's maximum,
// measured in the same run, is the floor under theirs.  Nothing of syncband
// runs here, and no target reads it.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "harness.h"

namespace {

struct CasAcquireStoreRelease {
	struct Storage {
		std::atomic<size_t> word{0};
	};
	std::atomic<size_t> *word;
	CasAcquireStoreRelease(const sbb::Params &, Storage &st) : word(&st.word) {}
	void round()
	{
		size_t expected = 0;
		if (!word->compare_exchange_strong(expected, 1, std::memory_order_acquire,
						   std::memory_order_relaxed))
			sbb::wrong_result("cas 0 -> 1", 0, (long)expected);
		word->store(0, std::memory_order_release);
	}
	void finish() { sbb::expect((long)word->load(), 0, "the word is 0 at the end"); }
};
SBB_ROUNDS(CasAcquireStoreRelease, "baseline/cas-acquire+store-release", sbb::C_ATOMIC, 24000000);

// Two more floors, the shapes real locks give their uncontended lock and
// unlock: a CAS (acquire) 0 -> 1, then a CAS (release) 1 -> 0.  Reads first
// (baseline/reads-first-cas+cas): a relaxed load before each CAS, which
// expects the value read, as syncband's inline semaphore acquire and release
// and mutex lock and unlock do (a semaphore needs the count it reads; the
// mutex reads so that a lock that must wait, or an unlock that must wake,
// pays no failed CAS).  Blind (baseline/blind-cas+cas): each CAS expects the
// constant, as parking_lot's and the Linux mutex's fast paths do.  Where a
// load right after an atomic read-modify-write on the same word is slow, the
// first costs more than the second; the pair shows how much on this machine.
template <bool ReadFirst> struct TwoCas {
	struct Storage {
		std::atomic<size_t> word{0};
	};
	std::atomic<size_t> *word;
	TwoCas(const sbb::Params &, Storage &st) : word(&st.word) {}
	void cas(size_t from, size_t to, std::memory_order order, const char *what)
	{
		size_t expected = ReadFirst ? word->load(std::memory_order_relaxed) : from;
		if (expected != from || !word->compare_exchange_strong(expected, to, order, std::memory_order_relaxed))
			sbb::wrong_result(what, (long)from, (long)expected);
	}
	void round()
	{
		cas(0, 1, std::memory_order_acquire, "cas 0 -> 1");
		cas(1, 0, std::memory_order_release, "cas 1 -> 0");
	}
	void finish() { sbb::expect((long)word->load(), 0, "the word is 0 at the end"); }
};
SBB_ROUNDS(TwoCas<true>, "baseline/reads-first-cas+cas", sbb::C_ATOMIC, 24000000);
SBB_ROUNDS(TwoCas<false>, "baseline/blind-cas+cas", sbb::C_ATOMIC, 24000000);

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex word is 32 bits");

void futex(std::atomic<uint32_t> *word, int op, uint32_t value)
{
	// (EAGAIN, the word changed before the sleep, and EINTR just mean: look again.)
	syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), op, value, nullptr, nullptr, 0);
}

template <bool Waits> uint64_t futex_wake_on(const sbb::Params &p, sbb::Meter &m)
{
	std::atomic<uint32_t> turn{0}; // whose turn: thread 0 or 1
	// Written by the waker before its release store of `turn`, read by the
	// woken thread after its acquire load of it: relaxed is enough.
	std::atomic<uint64_t> handed_at{0};
	sbb::WaitHistogram waits[2];
	auto play = [&](uint32_t me) {
		for (uint64_t i = 0; i < p.rounds; i++) {
			uint32_t seen;
			while ((seen = turn.load(std::memory_order_acquire)) != me)
				futex(&turn, FUTEX_WAIT_PRIVATE, seen);
			// (Thread 0's first turn was never handed to it.)
			if (Waits && (i > 0 || me == 1))
				waits[me].record(sbb::now_ns() - handed_at.load(std::memory_order_relaxed));
			if (Waits)
				handed_at.store(sbb::now_ns(), std::memory_order_relaxed);
			turn.store(1 - me, std::memory_order_release);
			futex(&turn, FUTEX_WAKE_PRIVATE, 1);
		}
	};
	// Thread 1 sleeps until thread 0 hands it the first turn, in the segment.
	std::thread other(play, 1);
	m.start();
	play(0);
	other.join();
	m.stop();
	sbb::expect((long)turn.load(), 0, "thread 1 handed back the last turn");
	if (Waits) {
		m.waits()->merge(waits[0]);
		m.waits()->merge(waits[1]);
	}
	return p.rounds;
}

uint64_t futex_wake(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? futex_wake_on<true>(p, m) : futex_wake_on<false>(p, m);
}
SBB_BATCH(futex_wake, "baseline/futex-wake-to-run", sbb::C_FUTEX, 20000);

} // namespace
