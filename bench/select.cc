// SPDX-License-Identifier: Apache-2.0
//
// bench/select.cc - the select rows of bench/README.md (sb_select), single
// thread, no-op waker, a fresh select every round (a server's loop makes
// one per wait):
//
//   select/two-channels            two capacity-16 channels of uint64_t;
//                                  a round sends one item into one of them
//                                  (channel (i >> 1) & 1 in round i) and
//                                  selects a receive on each, seed i: half
//                                  the rounds try the empty channel first,
//                                  which registers and is cancelled
//   select/semaphore-or-deadline   a semaphore acquire or a deadline: even
//                                  rounds release a permit first (the
//                                  acquire wins, the deadline's inner wait
//                                  is withdrawn), odd rounds expire the
//                                  deadline first (it wins with -ETIMEDOUT,
//                                  the acquire is withdrawn); seed i >> 1.
//                                  The deadline wraps a wait on an event
//                                  nobody sets: deadline.h keeps no clock, a
//                                  loop's timer expires it.
//
// The peers: tokio::select! (bench/peers/src/select.rs) and Go's select
// (bench/peers/go/select.go), the same rounds.
#include <errno.h>

#include <syncband/channel.h>
#include <syncband/deadline.h>
#include <syncband/event.h>
#include <syncband/select.h>
#include <syncband/semaphore.h>

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

struct TwoChannels {
	struct Storage {
		sb_channel ch[2];
		uint64_t slots[2][16];
	};
	sb_channel *ch;
	uint64_t next = 0;
	TwoChannels(const sbb::Params &, Storage &st) : ch(st.ch)
	{
		for (int i = 0; i < 2; i++)
			expect(sb_channel_init(&ch[i], st.slots[i], sizeof(uint64_t), 16), 0, "init");
	}
	void round()
	{
		uint64_t v = next++;
		int target = (int)((v >> 1) & 1);
		expect(sb_channel_try_send(&ch[target], &v), 0, "try_send into an empty channel");
		uint64_t got[2];
		sb_channel_recv recv[2];
		sb_select_case cases[2];
		for (int i = 0; i < 2; i++) {
			sb_channel_recv_init(&recv[i], &ch[i], &got[i]);
			cases[i] = sb_select_case SB_SELECT_CASE(&recv[i], &sb_channel_recv_ops);
		}
		sb_select s;
		sb_select_init(&s, cases, 2, (uint32_t)v, 0);
		expect(sb_select_poll(&s, noop()), 0, "the select completes at its first poll");
		expect(sb_select_index(&s), target, "the case of the channel with the item wins");
		expect(got[target], v, "the item received is the item sent");
	}
	void finish()
	{
		for (int i = 0; i < 2; i++) {
			expect(sb_channel_len(&ch[i]), (size_t)0, "the channels are empty");
			expect(sb_channel_destroy(&ch[i]), 0, "destroy");
		}
	}
};
SBB_ROUNDS(TwoChannels, "select/two-channels", sbb::SYNCBAND, 3000000);

struct SemaphoreOrDeadline {
	struct Storage {
		sb_semaphore sem;
		sb_event never;
	};
	Storage *st;
	uint64_t next = 0;
	SemaphoreOrDeadline(const sbb::Params &, Storage &s) : st(&s)
	{
		expect(sb_semaphore_init(&st->sem, 0), 0, "init");
		expect(sb_event_init(&st->never, false), 0, "init");
	}
	void round()
	{
		uint64_t v = next++;
		bool permit = (v & 1) == 0;
		if (permit)
			expect(sb_semaphore_release(&st->sem, 1), 0, "release a permit");
		sb_semaphore_acquire acquire;
		sb_event_wait wait;
		sb_deadline deadline;
		sb_semaphore_acquire_init(&acquire, &st->sem, 1);
		sb_event_wait_init(&wait, &st->never);
		sb_deadline_init(&deadline, &wait, &sb_event_wait_ops);
		if (!permit)
			sb_deadline_expire(&deadline);
		sb_select_case cases[2] = {
			SB_SELECT_CASE(&acquire, &sb_semaphore_acquire_ops),
			SB_SELECT_CASE(&deadline, &sb_deadline_ops),
		};
		sb_select s;
		sb_select_init(&s, cases, 2, (uint32_t)(v >> 1), 0);
		expect(sb_select_poll(&s, noop()), 0, "the select completes at its first poll");
		expect(sb_select_index(&s), permit ? 0 : 1, "the permit, else the deadline");
		expect(sb_select_result(&s), permit ? 0 : -ETIMEDOUT, "the winner's result");
	}
	void finish()
	{
		expect(sb_semaphore_available(&st->sem), (size_t)0, "every permit was taken");
		expect(sb_semaphore_destroy(&st->sem), 0, "destroy");
		expect(sb_event_destroy(&st->never), 0, "destroy");
	}
};
SBB_ROUNDS(SemaphoreOrDeadline, "select/semaphore-or-deadline", sbb::SYNCBAND, 3000000);

} // namespace
