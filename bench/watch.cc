// SPDX-License-Identifier: Apache-2.0
//
// bench/watch.cc - the watch rows of bench/README.md: two single-thread rows
// polled by hand with the no-op waker, and one row on two threads.  Every
// step checks its result.  The peer is tokio::sync::watch
// (bench/peers/src/watch.rs).
#include <errno.h>
#include <sched.h>

#include <atomic>
#include <thread>

#include <syncband/watch.h>

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

constexpr int RECEIVERS = 16;

// One watch of a u64 and 16 receivers, made per batch.  A round: each
// receiver's changed future is polled -> pending; send(v) wakes all 16; each
// is polled again -> ready, and its receiver reads v (marking it seen).
struct Update16Receivers {
	struct Storage {
		sb_watch watch;
		uint64_t value;
		sb_watch_receiver rx[RECEIVERS];
	};
	sb_watch *w;
	sb_watch_receiver *rx;
	uint64_t v = 0;
	Update16Receivers(const sbb::Params &, Storage &st) : w(&st.watch), rx(st.rx)
	{
		st.value = 0;
		expect(sb_watch_init(w, &st.value, sizeof st.value), 0, "init");
		for (int i = 0; i < RECEIVERS; i++)
			expect(sb_watch_subscribe(w, &rx[i]), 0, "subscribe");
	}
	void round()
	{
		sb_watch_changed f[RECEIVERS];
		for (int i = 0; i < RECEIVERS; i++) {
			sb_watch_changed_init(&f[i], &rx[i]);
			expect(sb_watch_changed_poll(&f[i], noop()), SB_PENDING, "changed before send");
		}
		v++;
		expect(sb_watch_send(w, &v), 0, "send");
		for (int i = 0; i < RECEIVERS; i++) {
			expect(sb_watch_changed_poll(&f[i], noop()), 0, "changed after send");
			uint64_t got;
			expect(sb_watch_read(&rx[i], &got), 0, "read");
			expect(got, v, "read the value sent");
		}
	}
	void finish()
	{
		for (int i = 0; i < RECEIVERS; i++)
			expect(sb_watch_unsubscribe(&rx[i]), 0, "unsubscribe");
		expect(sb_watch_destroy(w), 0, "destroy");
	}
};
SBB_ROUNDS(Update16Receivers, "watch/update-16-receivers", sbb::SYNCBAND, 200000);

// One watch of a u64 holding 42, one receiver.  A round: read the value.
struct ReadLatest {
	struct Storage {
		sb_watch watch;
		uint64_t value;
		sb_watch_receiver rx;
	};
	sb_watch *w;
	sb_watch_receiver *rx;
	ReadLatest(const sbb::Params &, Storage &st) : w(&st.watch), rx(&st.rx)
	{
		st.value = 42;
		expect(sb_watch_init(w, &st.value, sizeof st.value), 0, "init");
		expect(sb_watch_subscribe(w, rx), 0, "subscribe");
	}
	void round()
	{
		uint64_t got;
		expect(sb_watch_read(rx, &got), 0, "read");
		expect(got, (uint64_t)42, "read the value");
	}
	void finish()
	{
		expect(sb_watch_try_changed(rx), -EAGAIN, "nothing new");
		expect(sb_watch_unsubscribe(rx), 0, "unsubscribe");
		expect(sb_watch_destroy(w), 0, "destroy");
	}
};
SBB_ROUNDS(ReadLatest, "watch/read-latest", sbb::SYNCBAND, 10000000);

// A value of 8 words, all equal: a torn read shows.
struct Value {
	uint64_t word[8];
};

// Two threads: one sends R values (each word k, k = 1..R), the other reads
// the latest value as fast as it can until it reads R, checking each read
// untorn and never older than the last.  Time per send.  With --waits every
// send is timed: how long a reader held it up.
template <bool Waits> uint64_t read_while_sending_on(const sbb::Params &p, sbb::Meter &m)
{
	sbb::CachePadded<sb_watch> padded;
	sb_watch *w = &padded.value;
	Value storage{};
	expect(sb_watch_init(w, &storage, sizeof storage), 0, "init");
	sb_watch_receiver rx;
	expect(sb_watch_subscribe(w, &rx), 0, "subscribe");
	std::atomic<bool> go{false};
	std::atomic<unsigned> ready{0};
	uint64_t reads = 0;
	std::thread reader([&] {
		ready.fetch_add(1, std::memory_order_relaxed);
		while (!go.load(std::memory_order_acquire))
			sched_yield();
		uint64_t last = 0;
		while (last < p.rounds) {
			Value v;
			expect(sb_watch_read(&rx, &v), 0, "read");
			for (int i = 1; i < 8; i++)
				expect(v.word[i], v.word[0], "an untorn value");
			if (v.word[0] < last)
				sbb::wrong_result("never older than the last read", (long)last, (long)v.word[0]);
			last = v.word[0];
			reads++;
		}
	});
	while (ready.load(std::memory_order_relaxed) < 1)
		sched_yield();
	sbb::WaitClock<Waits> clock;
	if constexpr (Waits)
		clock.histogram = m.waits();
	m.start();
	go.store(true, std::memory_order_release);
	Value v;
	for (uint64_t k = 1; k <= p.rounds; k++) {
		for (uint64_t &x : v.word)
			x = k;
		clock.begin();
		expect(sb_watch_send(w, &v), 0, "send");
		clock.end();
	}
	reader.join();
	m.stop();
	expect(reads > 0, true, "the reader read");
	expect(sb_watch_unsubscribe(&rx), 0, "unsubscribe");
	expect(sb_watch_destroy(w), 0, "destroy");
	return p.rounds;
}

uint64_t read_while_sending(const sbb::Params &p, sbb::Meter &m)
{
	return m.waits() ? read_while_sending_on<true>(p, m) : read_while_sending_on<false>(p, m);
}
SBB_BATCH(read_while_sending, "watch/read-while-sending", sbb::SYNCBAND, 1000000);

} // namespace
