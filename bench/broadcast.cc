// SPDX-License-Identifier: Apache-2.0
//
// bench/broadcast.cc - the broadcast rows (sb_broadcast, lagging policy as
// tokio::sync::broadcast, items of 8 bytes: a uint64_t).
//
//   broadcast/fan-out-N             single thread (N = 4, 16, 64):
//                                   capacity 16, N subscribers; a round is
//                                   one try_send and N try_recvs that each
//                                   get the item
//   broadcast/fan-out-16-threads    one sender thread, 16 receiver threads
//                                   (blocking receives), capacity 64; the
//                                   sender never waits (lagging): each
//                                   receiver's items plus the items its lags
//                                   counted must be every item sent; ns per
//                                   item DELIVERED: the batch's time divided
//                                   by (items received by all 16 receivers
//                                   together / 16), so that a receiver that
//                                   skips items (lags) makes the row slower,
//                                   never faster; each batch also prints on
//                                   stderr
//                                     DELIVERED <scenario> <impl> sent=S
//                                       received=R fraction=F min=A max=B
//                                   (F = R / (16 S); A and B: the least and
//                                   the most one receiver read, / S)
//   broadcast/fan-out-16-threads-backpressure
//                                   as fan-out-16-threads with
//                                   back-pressure: the sender (blocking
//                                   sends) waits for the slowest of the 16
//                                   receivers, so each reads every item, in
//                                   order; ns per item sent
//   broadcast/lagging-receiver      single thread: capacity 16, a receiver
//                                   that reads every item and one that reads
//                                   once every 64 rounds (a lag of 48, then
//                                   the oldest item held); ns per round
#include <errno.h>
#include <sched.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include <syncband/broadcast.h>

#include "harness.h"

namespace {

using sbb::expect;

// ------------------------------------------------------------ fan-out-N

template <int N> struct FanOut {
	struct Storage {
		sb_broadcast bc;
		uint64_t slots[16];
		sb_broadcast_receiver rx[N];
	};
	sb_broadcast *bc;
	sb_broadcast_receiver *rx;
	uint64_t next = 0;
	FanOut(const sbb::Params &, Storage &st) : bc(&st.bc), rx(st.rx)
	{
		expect(sb_broadcast_init(bc, st.slots, sizeof(uint64_t), 16, SB_BROADCAST_LAGGING), 0,
		       "init");
		for (int i = 0; i < N; i++) {
			rx[i] = sb_broadcast_receiver{};
			expect(sb_broadcast_subscribe(bc, &rx[i]), 0, "subscribe");
		}
	}
	void round()
	{
		uint64_t v = next++;
		expect(sb_broadcast_try_send(bc, &v), 0, "try_send");
		for (int i = 0; i < N; i++) {
			uint64_t out;
			expect(sb_broadcast_try_recv(&rx[i], &out), 0, "try_recv of the item");
			expect(out, v, "each receiver gets the item sent");
		}
	}
	void finish()
	{
		for (int i = 0; i < N; i++) {
			uint64_t out;
			expect(sb_broadcast_try_recv(&rx[i], &out), -EAGAIN, "nothing left");
			expect(sb_broadcast_unsubscribe(&rx[i]), 0, "unsubscribe");
		}
		expect(sb_broadcast_destroy(bc), 0, "destroy");
	}
};
using FanOut4 = FanOut<4>;
using FanOut16 = FanOut<16>;
using FanOut64 = FanOut<64>;
SBB_ROUNDS(FanOut4, "broadcast/fan-out-4", sbb::SYNCBAND, 4000000);
SBB_ROUNDS(FanOut16, "broadcast/fan-out-16", sbb::SYNCBAND, 1000000);
SBB_ROUNDS(FanOut64, "broadcast/fan-out-64", sbb::SYNCBAND, 250000);

// ------------------------------------------------------------ lagging-receiver

struct LaggingReceiver {
	struct Storage {
		sb_broadcast bc;
		uint64_t slots[16];
		sb_broadcast_receiver fast, slow;
	};
	sb_broadcast *bc;
	sb_broadcast_receiver *fast, *slow;
	uint64_t next = 0;
	LaggingReceiver(const sbb::Params &, Storage &st) : bc(&st.bc), fast(&st.fast), slow(&st.slow)
	{
		expect(sb_broadcast_init(bc, st.slots, sizeof(uint64_t), 16, SB_BROADCAST_LAGGING), 0,
		       "init");
		*fast = sb_broadcast_receiver{};
		*slow = sb_broadcast_receiver{};
		expect(sb_broadcast_subscribe(bc, fast), 0, "subscribe");
		expect(sb_broadcast_subscribe(bc, slow), 0, "subscribe");
	}
	void round()
	{
		uint64_t v = next++, out;
		expect(sb_broadcast_try_send(bc, &v), 0, "try_send");
		expect(sb_broadcast_try_recv(fast, &out), 0, "the fast receiver reads it");
		expect(out, v, "the item sent");
		if ((v & 63) == 63) {
			expect(sb_broadcast_try_recv(slow, &out), -EOVERFLOW, "the slow one lagged");
			expect(sb_broadcast_receiver_missed(slow), 48u, "by 48");
			expect(sb_broadcast_try_recv(slow, &out), 0, "then reads the oldest held");
			expect(out, v - 15, "the oldest held");
			for (int i = 0; i < 15; i++)
				expect(sb_broadcast_try_recv(slow, &out), 0, "and the rest");
		}
	}
	void finish()
	{
		expect(sb_broadcast_unsubscribe(fast), 0, "unsubscribe");
		expect(sb_broadcast_unsubscribe(slow), 0, "unsubscribe");
		expect(sb_broadcast_destroy(bc), 0, "destroy");
	}
};
SBB_ROUNDS(LaggingReceiver, "broadcast/lagging-receiver", sbb::SYNCBAND, 1000000);

// ------------------------------------------------------------ fan-out-16-threads

// The threaded fan-out rows' harness: N receivers on threads of their own,
// each handing every result of sb_broadcast_recv_blocking but -EPIPE to
// `on_recv` (its receiver, the result, the item), and one sender thread that
// sends items 1..rounds and closes; only the sending and receiving are timed.
// The caller checks its receivers after the join and destroys nothing.
constexpr unsigned FAN_OUT_THREADS = 16;

template <typename Receiver, typename OnRecv>
void fan_out_threads_run(const sbb::Params &p, sbb::Meter &m, sb_broadcast *bc,
			 std::vector<Receiver> &rs, OnRecv on_recv)
{
	for (Receiver &r : rs) {
		r.rx = sb_broadcast_receiver{};
		expect(sb_broadcast_subscribe(bc, &r.rx), 0, "subscribe");
	}
	std::atomic<unsigned> ready{0};
	std::atomic<bool> go{false};
	auto wait_go = [&] {
		ready.fetch_add(1, std::memory_order_relaxed);
		while (!go.load(std::memory_order_acquire))
			sched_yield();
	};
	std::vector<std::thread> threads;
	for (Receiver &r : rs)
		threads.emplace_back([&, rp = &r] {
			wait_go();
			for (;;) {
				uint64_t v = 0;
				int e = sb_broadcast_recv_blocking(&rp->rx, &v, SB_TIMEOUT_INFINITE);
				if (e == -EPIPE)
					break;
				on_recv(*rp, e, v);
			}
		});
	threads.emplace_back([&] {
		wait_go();
		for (uint64_t v = 1; v <= p.rounds; v++)
			expect(sb_broadcast_send_blocking(bc, &v, SB_TIMEOUT_INFINITE), 0, "send");
		sb_broadcast_close(bc);
	});
	while (ready.load(std::memory_order_relaxed) < rs.size() + 1)
		sched_yield();
	m.start();
	go.store(true, std::memory_order_release);
	for (std::thread &t : threads)
		t.join();
	m.stop();
}

uint64_t fan_out_threads(const sbb::Params &p, sbb::Meter &m)
{
	constexpr unsigned N = FAN_OUT_THREADS;
	struct alignas(64) Receiver {
		sb_broadcast_receiver rx;
		uint64_t got = 0, missed = 0, last = 0;
		bool ordered = true;
	};
	sbb::CachePadded<sb_broadcast> padded;
	sb_broadcast *bc = &padded.value;
	std::unique_ptr<uint64_t[]> slots(new uint64_t[64]());
	expect(sb_broadcast_init(bc, slots.get(), sizeof(uint64_t), 64, SB_BROADCAST_LAGGING), 0,
	       "init");
	std::vector<Receiver> rs(N);
	fan_out_threads_run(p, m, bc, rs, [](Receiver &r, int e, uint64_t v) {
		if (e == -EOVERFLOW) {
			r.missed += sb_broadcast_receiver_missed(&r.rx);
			return;
		}
		expect(e, 0, "recv_blocking");
		r.ordered &= r.got + r.missed == 0 || v > r.last;
		r.last = v;
		r.got++;
	});
	uint64_t received = 0, least = p.rounds, most = 0;
	for (Receiver &r : rs) {
		expect(r.ordered, true, "each receiver's items in order");
		expect(r.got + r.missed, p.rounds, "items received + items missed = items sent");
		expect(sb_broadcast_unsubscribe(&r.rx), 0, "unsubscribe");
		received += r.got;
		least = r.got < least ? r.got : least;
		most = r.got > most ? r.got : most;
	}
	expect(sb_broadcast_destroy(bc), 0, "destroy");
	// Items delivered to all receivers: what they read together, / N,
	// rounded to the nearest.  Each receiver reads at least the last item
	// sent (nothing is sent after it to overwrite it, and a lag skips only
	// to the oldest item held), so this is never 0.
	uint64_t delivered = (received + N / 2) / N;
	expect(delivered != 0, true, "some items delivered");
	fprintf(stderr, "DELIVERED broadcast/fan-out-16-threads %s sent=%llu received=%llu "
			"fraction=%.6f min=%.6f max=%.6f\n",
		sbb::SYNCBAND_BLOCKING, (unsigned long long)p.rounds,
		(unsigned long long)received, (double)received / (double)(N * p.rounds),
		(double)least / (double)p.rounds, (double)most / (double)p.rounds);
	return delivered;
}
SBB_BATCH(fan_out_threads, "broadcast/fan-out-16-threads", sbb::SYNCBAND_BLOCKING, 1000000);

// ------------------------------------------------------------ fan-out-16-threads-backpressure

uint64_t fan_out_threads_backpressure(const sbb::Params &p, sbb::Meter &m)
{
	struct alignas(64) Receiver {
		sb_broadcast_receiver rx;
		uint64_t got = 0;
		bool ordered = true;
	};
	sbb::CachePadded<sb_broadcast> padded;
	sb_broadcast *bc = &padded.value;
	std::unique_ptr<uint64_t[]> slots(new uint64_t[64]());
	expect(sb_broadcast_init(bc, slots.get(), sizeof(uint64_t), 64, SB_BROADCAST_BACKPRESSURE),
	       0, "init");
	std::vector<Receiver> rs(FAN_OUT_THREADS);
	fan_out_threads_run(p, m, bc, rs, [](Receiver &r, int e, uint64_t v) {
		expect(e, 0, "recv_blocking");
		r.got++;
		r.ordered &= v == r.got;
	});
	for (Receiver &r : rs) {
		expect(r.ordered, true, "each receiver reads every item, in order");
		expect(r.got, p.rounds, "each receiver reads every item sent");
		expect(sb_broadcast_unsubscribe(&r.rx), 0, "unsubscribe");
	}
	expect(sb_broadcast_destroy(bc), 0, "destroy");
	return p.rounds;
}
SBB_BATCH(fan_out_threads_backpressure, "broadcast/fan-out-16-threads-backpressure",
	  sbb::SYNCBAND_BLOCKING, 250000);

} // namespace
