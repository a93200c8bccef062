// SPDX-License-Identifier: Apache-2.0
//
// bench/barrier.cc - the barrier row of bench/README.md, single thread,
// polled by hand with the no-op waker.  Every step checks its result.
#include <errno.h>

#include <syncband/barrier.h>

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

constexpr int PARTIES = 8;

// One barrier of 8 parties made per batch and reused every round (one
// generation a round): 8 wait futures polled in turn, 7 pending, the 8th
// completes the generation; the 7 polled again complete.  Exactly one of
// the 8 is the leader, every round.
struct GenerationOf8 {
	struct Storage {
		sb_barrier barrier;
	};
	sb_barrier *b;
	GenerationOf8(const sbb::Params &, Storage &st) : b(&st.barrier)
	{
		expect(sb_barrier_init(b, PARTIES), 0, "init a barrier of 8 parties");
	}
	void round()
	{
		sb_barrier_wait w[PARTIES];
		for (int i = 0; i < PARTIES; i++)
			sb_barrier_wait_init(&w[i], b);
		for (int i = 0; i < PARTIES - 1; i++)
			expect(sb_barrier_wait_poll(&w[i], noop()), SB_PENDING,
			       "wait before the 8th arrival");
		expect(sb_barrier_wait_poll(&w[PARTIES - 1], noop()), 0, "the 8th wait");
		int leaders = sb_barrier_wait_is_leader(&w[PARTIES - 1]);
		for (int i = 0; i < PARTIES - 1; i++) {
			expect(sb_barrier_wait_poll(&w[i], noop()), 0,
			       "wait after the generation completed");
			leaders += sb_barrier_wait_is_leader(&w[i]);
		}
		expect(leaders, 1, "leaders in one generation");
	}
	void finish() { expect(sb_barrier_destroy(b), 0, "destroy"); }
};
SBB_ROUNDS(GenerationOf8, "barrier/generation-of-8", sbb::SYNCBAND, 500000);

} // namespace
