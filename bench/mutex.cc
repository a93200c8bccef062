// SPDX-License-Identifier: Apache-2.0
//
// bench/mutex.cc - the mutex rows of bench/README.md, single thread, polled by
// hand with the no-op waker, plus the pthread_mutex_t lock+unlock that the
// uncontended target is measured against.  Every step checks its result.
#include <errno.h>
#include <pthread.h>

#include <syncband/mutex.h>

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

constexpr int QUEUED_WAITERS = 4;

// One mutex; the lock future is ready on its first poll; unlock.
struct UncontendedReuse {
	struct Storage {
		sb_mutex mutex;
	};
	sb_mutex *m;
	UncontendedReuse(const sbb::Params &, Storage &st) : m(&st.mutex)
	{
		expect(sb_mutex_init(m), 0, "init");
	}
	void round()
	{
		sb_mutex_lock l;
		sb_mutex_lock_init(&l, m);
		expect(sb_mutex_lock_poll(&l, noop()), 0, "lock on a free mutex");
		expect(sb_mutex_unlock(m), 0, "unlock");
	}
	void finish() { expect(sb_mutex_destroy(m), 0, "destroy an unlocked mutex"); }
};
SBB_ROUNDS(UncontendedReuse, "mutex/uncontended-reuse", sbb::SYNCBAND, 24000000);

// The floor the target names: pthread_mutex_lock + pthread_mutex_unlock on a
// default (normal) mutex, in a process that has created a thread (main()).
struct PthreadUncontendedReuse {
	struct Storage {
		pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
	};
	pthread_mutex_t *m;
	PthreadUncontendedReuse(const sbb::Params &, Storage &st) : m(&st.mutex) {}
	void round()
	{
		expect(pthread_mutex_lock(m), 0, "pthread_mutex_lock on a free mutex");
		expect(pthread_mutex_unlock(m), 0, "pthread_mutex_unlock");
	}
	void finish() { expect(pthread_mutex_destroy(m), 0, "pthread_mutex_destroy"); }
};
SBB_ROUNDS(PthreadUncontendedReuse, "mutex/uncontended-reuse", sbb::PTHREAD, 24000000);

// Lock; four lock futures -> pending; unlock; each waiter in FIFO order is
// ready on its next poll (it was handed the mutex) and unlocks, handing the
// mutex to the next.
struct FourQueuedWaiters {
	struct Storage {
		sb_mutex mutex;
	};
	sb_mutex *m;
	FourQueuedWaiters(const sbb::Params &, Storage &st) : m(&st.mutex)
	{
		expect(sb_mutex_init(m), 0, "init");
	}
	void round()
	{
		sb_mutex_lock holder;
		sb_mutex_lock_init(&holder, m);
		expect(sb_mutex_lock_poll(&holder, noop()), 0, "lock on a free mutex");
		sb_mutex_lock w[QUEUED_WAITERS];
		for (int i = 0; i < QUEUED_WAITERS; i++) {
			sb_mutex_lock_init(&w[i], m);
			expect(sb_mutex_lock_poll(&w[i], noop()), SB_PENDING, "lock on a held mutex");
		}
		expect(sb_mutex_unlock(m), 0, "unlock by the holder");
		for (int i = 0; i < QUEUED_WAITERS; i++) {
			expect(sb_mutex_lock_poll(&w[i], noop()), 0, "queued lock after unlock");
			expect(sb_mutex_unlock(m), 0, "unlock by the waiter");
		}
	}
	void finish()
	{
		expect(sb_mutex_is_locked(m), 0, "the mutex is free at the end");
		expect(sb_mutex_destroy(m), 0, "destroy");
	}
};
SBB_ROUNDS(FourQueuedWaiters, "mutex/four-queued-waiters", sbb::SYNCBAND, 1250000);

} // namespace
