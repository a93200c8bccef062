// SPDX-License-Identifier: Apache-2.0
//
// bench/notify.cc - the notify, event and condvar rows of bench/README.md,
// single thread, polled by hand with the no-op waker.  "notify" is
// syncband's auto-reset event (Tokio's counterpart is Notify); the fan-out
// row is the manual-reset event.  Every step checks its result.
#include <errno.h>

#include <syncband/condvar.h>
#include <syncband/event.h>
#include <syncband/mutex.h>

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

constexpr int FAN_OUT = 16;

// A fresh auto-reset event each round; wait -> pending; set; poll -> ready.
// Creating and destroying the fresh event is part of the round.
struct FreshOneWaiter {
	using Storage = sbb::NoStorage;
	FreshOneWaiter(const sbb::Params &, Storage &) {}
	void round()
	{
		sb_auto_event event;
		sb_auto_event *e = sbb::escape(&event);
		expect(sb_auto_event_init(e, false), 0, "init");
		sb_auto_event_wait w;
		sb_auto_event_wait_init(&w, e);
		expect(sb_auto_event_wait_poll(&w, noop()), SB_PENDING, "wait before set");
		sb_auto_event_set(e);
		expect(sb_auto_event_wait_poll(&w, noop()), 0, "wait after set");
		expect(sb_auto_event_destroy(e), 0, "destroy the fresh event");
	}
	void finish() {}
};
SBB_ROUNDS(FreshOneWaiter, "notify/fresh-one-waiter", sbb::SYNCBAND, 2000000);

// The same on one auto-reset event.
struct ReusedOneWaiter {
	struct Storage {
		sb_auto_event event;
	};
	sb_auto_event *e;
	ReusedOneWaiter(const sbb::Params &, Storage &st) : e(&st.event)
	{
		expect(sb_auto_event_init(e, false), 0, "init");
	}
	void round()
	{
		sb_auto_event_wait w;
		sb_auto_event_wait_init(&w, e);
		expect(sb_auto_event_wait_poll(&w, noop()), SB_PENDING, "wait before set");
		sb_auto_event_set(e);
		expect(sb_auto_event_wait_poll(&w, noop()), 0, "wait after set");
	}
	void finish()
	{
		// The signal went to the waiter each time, so none is stored.
		expect(sb_auto_event_try_wait(e), -EAGAIN, "no signal left stored");
		expect(sb_auto_event_destroy(e), 0, "destroy");
	}
};
SBB_ROUNDS(ReusedOneWaiter, "notify/reused-one-waiter", sbb::SYNCBAND, 2000000);

// One manual-reset event; 16 waits -> pending; set; all 16 ready; reset.
struct FanOut16 {
	struct Storage {
		sb_event event;
	};
	sb_event *e;
	FanOut16(const sbb::Params &, Storage &st) : e(&st.event)
	{
		expect(sb_event_init(e, false), 0, "init");
	}
	void round()
	{
		sb_event_wait w[FAN_OUT];
		for (int i = 0; i < FAN_OUT; i++) {
			sb_event_wait_init(&w[i], e);
			expect(sb_event_wait_poll(&w[i], noop()), SB_PENDING, "wait before set");
		}
		sb_event_set(e);
		for (int i = 0; i < FAN_OUT; i++)
			expect(sb_event_wait_poll(&w[i], noop()), 0, "wait after set");
		sb_event_reset(e);
	}
	void finish()
	{
		expect(sb_event_is_set(e), 0, "reset at the end");
		expect(sb_event_destroy(e), 0, "destroy");
	}
};
SBB_ROUNDS(FanOut16, "event/fan-out-16", sbb::SYNCBAND, 200000);

// Take the mutex (try_lock: one CAS); wait -> pending (registered, mutex
// released); notify_one; poll -> ready, holding the mutex again; unlock.
struct CondvarNotifyOne {
	struct Storage {
		sb_mutex mutex;
		sb_condvar condvar;
	};
	sb_mutex *m;
	sb_condvar *cv;
	CondvarNotifyOne(const sbb::Params &, Storage &st) : m(&st.mutex), cv(&st.condvar)
	{
		expect(sb_mutex_init(m), 0, "init mutex");
		expect(sb_condvar_init(cv), 0, "init condvar");
	}
	void round()
	{
		expect(sb_mutex_try_lock(m), 0, "take the free mutex");
		sb_condvar_wait w;
		sb_condvar_wait_init(&w, cv, m);
		expect(sb_condvar_wait_poll(&w, noop()), SB_PENDING, "wait before notify");
		sb_condvar_notify_one(cv);
		expect(sb_condvar_wait_poll(&w, noop()), 0, "wait after notify_one");
		expect(sb_mutex_unlock(m), 0, "unlock after the wait");
	}
	void finish()
	{
		expect(sb_condvar_destroy(cv), 0, "destroy condvar");
		expect(sb_mutex_destroy(m), 0, "destroy mutex");
	}
};
SBB_ROUNDS(CondvarNotifyOne, "condvar/notify-one-waiter", sbb::SYNCBAND, 2000000);

} // namespace
