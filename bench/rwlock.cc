// SPDX-License-Identifier: Apache-2.0
//
// bench/rwlock.cc - the rwlock rows of bench/README.md, single thread, polled
// by hand with the no-op waker.  Every step checks its result.
#include <errno.h>

#include <syncband/rwlock.h>

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

// One rwlock made per batch; a read lock future -> 0 on its first poll; the
// read released.
struct UncontendedRead {
	struct Storage {
		sb_rwlock rw;
	};
	sb_rwlock *rw;
	UncontendedRead(const sbb::Params &, Storage &st) : rw(&st.rw)
	{
		expect(sb_rwlock_init(rw), 0, "init");
	}
	void round()
	{
		sb_rwlock_lock f;
		sb_rwlock_read_init(&f, rw);
		expect(sb_rwlock_lock_poll(&f, noop()), 0, "read lock of a free rwlock");
		expect(sb_rwlock_read_unlock(rw), 0, "read unlock");
	}
	void finish()
	{
		expect(sb_rwlock_destroy(rw), 0, "destroy");
	}
};
SBB_ROUNDS(UncontendedRead, "rwlock/uncontended-read", sbb::SYNCBAND, 12000000);

// The same with the write lock.
struct UncontendedWrite {
	struct Storage {
		sb_rwlock rw;
	};
	sb_rwlock *rw;
	UncontendedWrite(const sbb::Params &, Storage &st) : rw(&st.rw)
	{
		expect(sb_rwlock_init(rw), 0, "init");
	}
	void round()
	{
		sb_rwlock_lock f;
		sb_rwlock_write_init(&f, rw);
		expect(sb_rwlock_lock_poll(&f, noop()), 0, "write lock of a free rwlock");
		expect(sb_rwlock_write_unlock(rw), 0, "write unlock");
	}
	void finish()
	{
		expect(sb_rwlock_destroy(rw), 0, "destroy");
	}
};
SBB_ROUNDS(UncontendedWrite, "rwlock/uncontended-write", sbb::SYNCBAND, 12000000);

// Four readers hold; a writer's future polls pending; the four released in
// order (the last hands the lock to the writer); the writer re-polled -> 0;
// the write released.
struct WriteQueuedBehindReaders {
	struct Storage {
		sb_rwlock rw;
	};
	sb_rwlock *rw;
	WriteQueuedBehindReaders(const sbb::Params &, Storage &st) : rw(&st.rw)
	{
		expect(sb_rwlock_init(rw), 0, "init");
	}
	void round()
	{
		sb_rwlock_lock r[4], w;
		for (auto &f : r) {
			sb_rwlock_read_init(&f, rw);
			expect(sb_rwlock_lock_poll(&f, noop()), 0, "read lock beside readers");
		}
		sb_rwlock_write_init(&w, rw);
		expect(sb_rwlock_lock_poll(&w, noop()), SB_PENDING, "write lock behind readers");
		for (int i = 0; i < 4; i++)
			expect(sb_rwlock_read_unlock(rw), 0, "read unlock");
		expect(sb_rwlock_lock_poll(&w, noop()), 0, "the writer, handed the lock");
		expect(sb_rwlock_write_unlock(rw), 0, "write unlock");
	}
	void finish()
	{
		expect((long)sb_rwlock_readers(rw), 0, "no reader left");
		expect(sb_rwlock_destroy(rw), 0, "destroy");
	}
};
SBB_ROUNDS(WriteQueuedBehindReaders, "rwlock/write-queued-behind-readers", sbb::SYNCBAND, 1250000);

} // namespace
