// SPDX-License-Identifier: Apache-2.0
//
// bench/once.cc - the once row of bench/README.md, single thread, polled by
// hand with the no-op waker.  Every step checks its result.
#include <errno.h>

#include <syncband/once.h>

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

constexpr int CALLERS = 16;        // the runner included, as on the peers
constexpr uint64_t VALUE = 0x5eed; // what the initialiser stores

// A fresh once per round (made and destroyed inside it): 16 wait futures;
// the first poll of the first is told to run the initialiser, the other 15
// poll pending; the runner stores the value and reports success; the 15
// polled again complete and read the value.
struct SixteenWaiters {
	struct Storage {
		uint64_t value;
		uint64_t runs;
	};
	Storage *st;
	uint64_t rounds;
	SixteenWaiters(const sbb::Params &p, Storage &s) : st(&s), rounds(p.rounds)
	{
		st->runs = 0;
	}
	void round()
	{
		sb_once once;
		sb_once *o = sbb::escape(&once);
		expect(sb_once_init(o), 0, "init a fresh once");
		st->value = 0;
		sb_once_wait w[CALLERS];
		sb_once_wait_init(&w[0], o);
		expect(sb_once_wait_poll(&w[0], noop()), SB_ONCE_RUN, "the first poll runs it");
		for (int i = 1; i < CALLERS; i++) {
			sb_once_wait_init(&w[i], o);
			expect(sb_once_wait_poll(&w[i], noop()), SB_PENDING, "a poll while it runs");
		}
		st->value = VALUE; // the initialiser
		st->runs++;
		expect(sb_once_complete(o), 0, "the runner reports success");
		for (int i = 1; i < CALLERS; i++) {
			expect(sb_once_wait_poll(&w[i], noop()), 0, "a waiter after the success");
			expect(st->value, VALUE, "the initialiser's value");
		}
		expect(sb_once_destroy(o), 0, "destroy the fresh once");
	}
	void finish() { expect(st->runs, rounds, "the initialiser ran once a round"); }
};
SBB_ROUNDS(SixteenWaiters, "once/16-waiters", sbb::SYNCBAND, 200000);

} // namespace
