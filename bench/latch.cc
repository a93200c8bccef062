// SPDX-License-Identifier: Apache-2.0
//
// bench/latch.cc - the latch row of bench/README.md, single thread, polled by
// hand with the no-op waker.  Every step checks its result.  No peer has a
// latch or wait group, so the row runs alone (no ratio, no target).
#include <errno.h>

#include <syncband/latch.h>

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

constexpr int WAITERS = 16;

// One latch made per batch, reused as a wait group: add(1) closes it; 16
// waits -> pending; count_down(1) takes it to zero, releasing all 16 at once;
// the 16 polled again -> ready.
struct CountDown16Waiters {
	struct Storage {
		sb_latch latch;
	};
	sb_latch *l;
	CountDown16Waiters(const sbb::Params &, Storage &st) : l(&st.latch)
	{
		expect(sb_latch_init(l, 0), 0, "init an open latch");
	}
	void round()
	{
		expect(sb_latch_add(l, 1), 0, "add(1) closes the latch");
		sb_latch_wait w[WAITERS];
		for (int i = 0; i < WAITERS; i++) {
			sb_latch_wait_init(&w[i], l);
			expect(sb_latch_wait_poll(&w[i], noop()), SB_PENDING, "wait before count_down");
		}
		expect(sb_latch_count_down(l, 1), 0, "count_down(1) to zero");
		for (int i = 0; i < WAITERS; i++)
			expect(sb_latch_wait_poll(&w[i], noop()), 0, "wait after count_down");
	}
	void finish()
	{
		expect(sb_latch_try_wait(l), 0, "open at the end");
		expect(sb_latch_destroy(l), 0, "destroy");
	}
};
SBB_ROUNDS(CountDown16Waiters, "latch/count-down-16-waiters", sbb::SYNCBAND, 200000);

} // namespace
