// SPDX-License-Identifier: Apache-2.0
//
// bench/semaphore.cc - the semaphore rows of bench/README.md, single thread,
// polled by hand with the no-op waker.  Every step checks its result.
#include <errno.h>

#include <syncband/semaphore.h>

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

// A fresh zero-permit semaphore each round; acquire(1) -> pending; release(1);
// poll -> ready; the permit is kept (forgotten).  Creating and destroying the
// fresh semaphore is part of the round, as on the peers.
struct PendingHandoff {
	using Storage = sbb::NoStorage;
	PendingHandoff(const sbb::Params &, Storage &) {}
	void round()
	{
		sb_semaphore sem;
		sb_semaphore *s = sbb::escape(&sem);
		expect(sb_semaphore_init(s, 0), 0, "init a zero-permit semaphore");
		sb_semaphore_acquire a;
		sb_semaphore_acquire_init(&a, s, 1);
		expect(sb_semaphore_acquire_poll(&a, noop()), SB_PENDING,
		       "acquire on a zero-permit semaphore");
		expect(sb_semaphore_release(s, 1), 0, "release(1)");
		expect(sb_semaphore_acquire_poll(&a, noop()), 0, "acquire after release(1)");
		expect(sb_semaphore_destroy(s), 0, "destroy the fresh semaphore");
	}
	void finish() {}
};
SBB_ROUNDS(PendingHandoff, "semaphore/pending-handoff", sbb::SYNCBAND, 3000000);

// The same on one zero-permit semaphore created once per batch.
struct ReusedHandoff {
	struct Storage {
		sb_semaphore sem;
	};
	sb_semaphore *s;
	ReusedHandoff(const sbb::Params &, Storage &st) : s(&st.sem)
	{
		expect(sb_semaphore_init(s, 0), 0, "init a zero-permit semaphore");
	}
	void round()
	{
		sb_semaphore_acquire a;
		sb_semaphore_acquire_init(&a, s, 1);
		expect(sb_semaphore_acquire_poll(&a, noop()), SB_PENDING,
		       "acquire on a zero-permit semaphore");
		expect(sb_semaphore_release(s, 1), 0, "release(1)");
		expect(sb_semaphore_acquire_poll(&a, noop()), 0, "acquire after release(1)");
	}
	void finish()
	{
		expect((long)sb_semaphore_available(s), 0, "no permit leaked into the semaphore");
		expect(sb_semaphore_destroy(s), 0, "destroy");
	}
};
SBB_ROUNDS(ReusedHandoff, "semaphore/reused-handoff", sbb::SYNCBAND, 3000000);

// One 1-permit semaphore; try_acquire(1); acquire(1) -> pending; release(1)
// (the first permit, which the waiter is handed); poll -> ready; release(1).
struct ReusedHandoffGuardDrop {
	struct Storage {
		sb_semaphore sem;
	};
	sb_semaphore *s;
	ReusedHandoffGuardDrop(const sbb::Params &, Storage &st) : s(&st.sem)
	{
		expect(sb_semaphore_init(s, 1), 0, "init a 1-permit semaphore");
	}
	void round()
	{
		expect(sb_semaphore_try_acquire(s, 1), 0, "try_acquire on a free semaphore");
		sb_semaphore_acquire a;
		sb_semaphore_acquire_init(&a, s, 1);
		expect(sb_semaphore_acquire_poll(&a, noop()), SB_PENDING,
		       "acquire while the permit is held");
		expect(sb_semaphore_release(s, 1), 0, "release the held permit");
		expect(sb_semaphore_acquire_poll(&a, noop()), 0, "acquire after the release");
		expect(sb_semaphore_release(s, 1), 0, "release the second permit");
	}
	void finish()
	{
		expect((long)sb_semaphore_available(s), 1, "the permit is back");
		expect(sb_semaphore_destroy(s), 0, "destroy");
	}
};
SBB_ROUNDS(ReusedHandoffGuardDrop, "semaphore/reused-handoff-guard-drop", sbb::SYNCBAND, 3000000);

// 1-permit semaphore; try_acquire(1) succeeds; release(1).
struct TryOneAndReturn {
	struct Storage {
		sb_semaphore sem;
	};
	sb_semaphore *s;
	TryOneAndReturn(const sbb::Params &, Storage &st) : s(&st.sem)
	{
		expect(sb_semaphore_init(s, 1), 0, "init a 1-permit semaphore");
	}
	void round()
	{
		expect(sb_semaphore_try_acquire(s, 1), 0, "try_acquire on a free semaphore");
		expect(sb_semaphore_release(s, 1), 0, "release(1)");
	}
	void finish()
	{
		expect((long)sb_semaphore_available(s), 1, "the permit is back");
		expect(sb_semaphore_destroy(s), 0, "destroy");
	}
};
SBB_ROUNDS(TryOneAndReturn, "semaphore/try-one-and-return", sbb::SYNCBAND, 30000000);

} // namespace
