// SPDX-License-Identifier: Apache-2.0
//
// bench/baseline.cc - baseline/cas-acquire+store-release: the physical floor
// of an uncontended lock+unlock, one compare-and-swap (acquire) and one
// release store, measured by this harness (impl "c-atomic"; bench/peers
// measures the same two instructions as "rust-std").  std::atomic compiles
// to the same instructions as C11 atomic_compare_exchange_strong_explicit /
// atomic_store_explicit (lock cmpxchg; mov on x86-64).
#include <atomic>

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

} // namespace
