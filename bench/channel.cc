// SPDX-License-Identifier: Apache-2.0
//
// bench/channel.cc - the channel rows of bench/README.md (sb_channel, items
// of 8 bytes: a uint64_t).  try-send-try-recv and the thread and task rows
// use stamped rings (sb_channel_init_ring, storage 64-byte aligned); the
// ping-pong rows, where every round waits, keep sb_channel_init's channel
// (a ring's wait costs two more RMWs: docs/measurements.md).
//
//   channel/try-send-try-recv          single thread: try_send one item into
//                                      a capacity-16 channel, try_recv it
//   channel/ping-pong                  two tasks on one sb_loop (real wakers
//                                      that requeue) hand one item back and
//                                      forth through two capacity-1
//                                      channels; one round = one round trip
//   channel/rendezvous-ping-pong       the same at capacity 0
//   channel/spsc-cap-{1,64,1024}       one sender thread, one receiver thread,
//                                      blocking send/recv; ns per item
//   channel/{mpsc-4-to-1, mpsc-16-to-1, spmc-1-to-4, mpmc-4-to-4,
//            mpmc-16-to-16}            capacity 64, ns per item:
//       syncband-blocking  P + C plain threads, sb_channel_{send,recv}_blocking
//       syncband           P + C floating tasks (SB_GROUP_FLOATING) on an
//                          executor group of CHANNEL_WORKERS threads
//                          (syncband_uring; built when it exists)
//
// Items: producer p sends (p << 32) | seq, seq = 0, 1, ... A receiver checks
// that each producer's items reach it in increasing order (one sender's
// items arrive in the order sent) and adds up count, sum and sum of squares;
// after the joins those must equal what was sent: every item received once.
// The last producer to finish closes the channel; receivers run until a
// receive returns -EPIPE (closed and drained), as the peers' receivers run
// until every sender is dropped.
//
// --waits (the multi-producer/consumer rows): every receive that got an item
// is timed, from the recv call (a task: the future's first poll) until it
// returns it, into a histogram per receiver made before the segment.
#include <errno.h>
#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include <syncband/channel.h>
#include <syncband/loop.h>
#ifdef SBB_HAVE_URING
#include <syncband/executor.h>
#endif

#include "harness.h"

namespace {

using sbb::expect;
using sbb::noop;

// ------------------------------------------------------------ try-send-try-recv

// One capacity-16 channel: try_send(v) -> 0; try_recv -> 0 and v.
struct TrySendTryRecv {
	struct Storage {
		sb_channel ch;
		alignas(64) unsigned char ring[SB_CHANNEL_RING_STORAGE_SIZE(sizeof(uint64_t), 16)];
	};
	sb_channel *ch;
	uint64_t next = 0;
	TrySendTryRecv(const sbb::Params &, Storage &st) : ch(&st.ch)
	{
		expect(sb_channel_init_ring(ch, st.ring, sizeof(uint64_t), 16), 0, "init");
	}
	void round()
	{
		uint64_t v = next++, out;
		expect(sb_channel_try_send(ch, &v), 0, "try_send into an empty channel");
		expect(sb_channel_try_recv(ch, &out), 0, "try_recv of the item");
		expect(out, v, "the item received is the item sent");
	}
	void finish()
	{
		uint64_t out;
		expect(sb_channel_try_recv(ch, &out), -EAGAIN, "the channel is empty");
		expect(sb_channel_destroy(ch), 0, "destroy");
	}
};
SBB_ROUNDS(TrySendTryRecv, "channel/try-send-try-recv", sbb::SYNCBAND, 10000000);

// ------------------------------------------------------------ ping-pong on sb_loop

// Two tasks on one sb_loop: A sends i on ab and receives on ba (which must
// be i + 1); B receives on ab and sends the item + 1 on ba.  A round = one
// round trip.  The loop's doorbell is a no-op: the batch runs
// sb_loop_run_ready until both tasks finished.
struct PingPong {
	sb_loop_task a, b;
	sb_channel ab, ba;
	uint64_t ab_slot, ba_slot; // unused at capacity 0
	sb_channel_send send_a, send_b;
	sb_channel_recv recv_a, recv_b;
	uint64_t out_a, in_a, in_b, out_b;
	uint64_t left_a, left_b;
	int phase_a, phase_b; // 0: start a send, 1: sending, 2: receiving
	bool done_a, done_b;

	static int poll_a(sb_loop_task *t, const sb_waker *w)
	{
		PingPong *s = SB_CONTAINER_OF(t, PingPong, a);
		while (s->left_a > 0) {
			if (s->phase_a == 0) {
				sb_channel_send_init(&s->send_a, &s->ab, &s->out_a);
				s->phase_a = 1;
			}
			if (s->phase_a == 1) {
				int r = sb_channel_send_poll(&s->send_a, w);
				if (r == SB_PENDING)
					return SB_PENDING;
				expect(r, 0, "A sends the ping");
				sb_channel_recv_init(&s->recv_a, &s->ba, &s->in_a);
				s->phase_a = 2;
			}
			int r = sb_channel_recv_poll(&s->recv_a, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "A receives the pong");
			expect(s->in_a, s->out_a + 1, "the pong is the ping + 1");
			s->out_a += 2;
			s->left_a--;
			s->phase_a = 0;
		}
		s->done_a = true;
		return 0;
	}
	static int poll_b(sb_loop_task *t, const sb_waker *w)
	{
		PingPong *s = SB_CONTAINER_OF(t, PingPong, b);
		while (s->left_b > 0) {
			if (s->phase_b == 0) {
				sb_channel_recv_init(&s->recv_b, &s->ab, &s->in_b);
				s->phase_b = 2;
			}
			if (s->phase_b == 2) {
				int r = sb_channel_recv_poll(&s->recv_b, w);
				if (r == SB_PENDING)
					return SB_PENDING;
				expect(r, 0, "B receives the ping");
				s->out_b = s->in_b + 1;
				sb_channel_send_init(&s->send_b, &s->ba, &s->out_b);
				s->phase_b = 1;
			}
			int r = sb_channel_send_poll(&s->send_b, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "B sends the pong");
			s->left_b--;
			s->phase_b = 0;
		}
		s->done_b = true;
		return 0;
	}
};

void no_ring(void *) {}

template <size_t Capacity> uint64_t ping_pong(const sbb::Params &p, sbb::Meter &m)
{
	std::unique_ptr<PingPong> s(new PingPong());
	uint64_t *slot_ab = Capacity ? &s->ab_slot : nullptr, *slot_ba = Capacity ? &s->ba_slot : nullptr;
	expect(sb_channel_init(&s->ab, slot_ab, sizeof(uint64_t), Capacity), 0, "init ab");
	expect(sb_channel_init(&s->ba, slot_ba, sizeof(uint64_t), Capacity), 0, "init ba");
	s->left_a = s->left_b = p.rounds;
	sb_loop loop;
	sb_loop_init(&loop, no_ring, nullptr);
	sb_loop_task_init(&s->a, PingPong::poll_a, nullptr);
	sb_loop_task_init(&s->b, PingPong::poll_b, nullptr);
	m.start();
	expect(sb_loop_spawn(&loop, &s->a), 0, "spawn A");
	expect(sb_loop_spawn(&loop, &s->b), 0, "spawn B");
	while (!(s->done_a && s->done_b))
		if (sb_loop_run_ready(&loop) == 0)
			sbb::wrong_result("a task is polled while the round trips last", 1, 0);
	m.stop();
	for (int k = 0; k < 4 && !sb_loop_idle(&loop); k++)
		sb_loop_run_ready(&loop); // releases the finished tasks
	expect(sb_loop_idle(&loop), true, "the loop is idle");
	expect(s->out_a, 2 * p.rounds, "every round trip ran");
	expect(sb_channel_destroy(&s->ab), 0, "destroy ab");
	expect(sb_channel_destroy(&s->ba), 0, "destroy ba");
	return p.rounds;
}
SBB_BATCH(ping_pong<1>, "channel/ping-pong", sbb::SYNCBAND, 1000000);
SBB_BATCH(ping_pong<0>, "channel/rendezvous-ping-pong", sbb::SYNCBAND, 1000000);

// ------------------------------------------------------------ the checks of the threaded rows

constexpr unsigned MAX_PRODUCERS = 16;

// What one receiver got: count, sum and sum of squares (wrapping) of the
// items, and each producer's last sequence number (order check).
struct Received {
	uint64_t count = 0, sum = 0, squares = 0;
	uint64_t next_seq[MAX_PRODUCERS] = {};
	void take(uint64_t v)
	{
		uint64_t producer = v >> 32, seq = v & 0xffffffffu;
		if (__builtin_expect(producer >= MAX_PRODUCERS || seq < next_seq[producer], 0))
			sbb::wrong_result("one producer's items arrive in order", (long)next_seq[producer & 15],
					  (long)seq);
		next_seq[producer] = seq + 1;
		count++;
		sum += v;
		squares += v * v;
	}
};

// Items producer p of P sends, of `total`.
uint64_t items_of(uint64_t total, unsigned producers, unsigned p)
{
	return total / producers + (p < total % producers ? 1 : 0);
}

// Checks the receivers' totals against what the producers sent.
void check_received(const Received *r, unsigned consumers, uint64_t total, unsigned producers)
{
	uint64_t count = 0, sum = 0, squares = 0, want_sum = 0, want_squares = 0;
	for (unsigned c = 0; c < consumers; c++) {
		count += r[c].count;
		sum += r[c].sum;
		squares += r[c].squares;
	}
	for (unsigned p = 0; p < producers; p++)
		for (uint64_t i = 0, n = items_of(total, producers, p); i < n; i++) {
			uint64_t v = (uint64_t)p << 32 | i;
			want_sum += v;
			want_squares += v * v;
		}
	expect((long)count, (long)total, "every item received (count)");
	if (sum != want_sum || squares != want_squares)
		sbb::wrong_result("every item received once (sum, sum of squares)", (long)want_sum,
				  (long)sum);
}

struct Shape {
	unsigned producers, consumers, capacity;
};

// One channel of `capacity` items, alone on its cache lines, with its ring
// in an allocation of its own (64-byte aligned: head and tail on lines of
// their own).
struct Chan {
	struct Free {
		void operator()(unsigned char *p) const { std::free(p); }
	};
	sbb::CachePadded<sb_channel> padded;
	std::unique_ptr<unsigned char, Free> ring;
	std::atomic<unsigned> producers_left;
	explicit Chan(const Shape &s)
		: ring(static_cast<unsigned char *>(std::aligned_alloc(64, ring_bytes(s.capacity))))
	{
		expect(ring != nullptr, true, "ring storage");
		producers_left.store(s.producers, std::memory_order_relaxed);
		expect(sb_channel_init_ring(&padded.value, s.capacity ? ring.get() : nullptr,
					    sizeof(uint64_t), s.capacity),
		       0, "init");
	}
	static size_t ring_bytes(unsigned capacity)
	{
		return (SB_CHANNEL_RING_STORAGE_SIZE(sizeof(uint64_t), capacity) + 64) / 64 * 64;
	}
	sb_channel *ch() { return &padded.value; }
	// The last producer closes: end of stream.
	void producer_done()
	{
		if (producers_left.fetch_sub(1, std::memory_order_acq_rel) == 1)
			sb_channel_close(ch());
	}
	~Chan() { expect(sb_channel_destroy(ch()), 0, "destroy"); }
};

// ------------------------------------------------------------ blocking threads

template <bool Waits>
uint64_t blocking_on(const Shape &s, const sbb::Params &p, sbb::Meter &m)
{
	Chan chan(s);
	sb_channel *ch = chan.ch();
	std::vector<Received> received(s.consumers);
	std::vector<sbb::WaitHistogram> waits(Waits ? s.consumers : 0);
	std::atomic<unsigned> ready{0};
	std::atomic<bool> go{false};
	std::vector<std::thread> threads;
	threads.reserve(s.producers + s.consumers);
	auto wait_go = [&] {
		ready.fetch_add(1, std::memory_order_relaxed);
		while (!go.load(std::memory_order_acquire))
			sched_yield();
	};
	for (unsigned c = 0; c < s.consumers; c++)
		threads.emplace_back([&, c] {
			sbb::WaitClock<Waits> clock;
			if constexpr (Waits)
				clock.histogram = &waits[c];
			Received r;
			wait_go();
			for (;;) {
				uint64_t v;
				clock.begin();
				int e = sb_channel_recv_blocking(ch, &v, SB_TIMEOUT_INFINITE);
				if (e == -EPIPE)
					break;
				expect(e, 0, "recv_blocking");
				clock.end();
				r.take(v);
			}
			received[c] = r;
		});
	for (unsigned q = 0; q < s.producers; q++)
		threads.emplace_back([&, q] {
			uint64_t n = items_of(p.rounds, s.producers, q);
			wait_go();
			for (uint64_t i = 0; i < n; i++) {
				uint64_t v = (uint64_t)q << 32 | i;
				expect(sb_channel_send_blocking(ch, &v, SB_TIMEOUT_INFINITE), 0,
				       "send_blocking");
			}
			chan.producer_done();
		});
	while (ready.load(std::memory_order_relaxed) < s.producers + s.consumers)
		sched_yield();
	m.start();
	go.store(true, std::memory_order_release);
	for (std::thread &t : threads)
		t.join();
	m.stop();
	for (const sbb::WaitHistogram &h : waits)
		m.waits()->merge(h);
	check_received(received.data(), s.consumers, p.rounds, s.producers);
	return p.rounds;
}

template <unsigned P, unsigned C, unsigned Cap>
uint64_t blocking(const sbb::Params &p, sbb::Meter &m)
{
	constexpr Shape s{P, C, Cap};
	return m.waits() ? blocking_on<true>(s, p, m) : blocking_on<false>(s, p, m);
}

SBB_BATCH((blocking<1, 1, 1>), "channel/spsc-cap-1", sbb::SYNCBAND_BLOCKING, 1000000);
SBB_BATCH((blocking<1, 1, 64>), "channel/spsc-cap-64", sbb::SYNCBAND_BLOCKING, 1000000);
SBB_BATCH((blocking<1, 1, 1024>), "channel/spsc-cap-1024", sbb::SYNCBAND_BLOCKING, 1000000);
SBB_BATCH((blocking<4, 1, 64>), "channel/mpsc-4-to-1", sbb::SYNCBAND_BLOCKING, 200000);
SBB_BATCH((blocking<16, 1, 64>), "channel/mpsc-16-to-1", sbb::SYNCBAND_BLOCKING, 200000);
SBB_BATCH((blocking<1, 4, 64>), "channel/spmc-1-to-4", sbb::SYNCBAND_BLOCKING, 200000);
SBB_BATCH((blocking<4, 4, 64>), "channel/mpmc-4-to-4", sbb::SYNCBAND_BLOCKING, 200000);
SBB_BATCH((blocking<16, 16, 64>), "channel/mpmc-16-to-16", sbb::SYNCBAND_BLOCKING, 200000);

#ifdef SBB_HAVE_URING
// ------------------------------------------------------------ floating tasks

// Executor threads of the task rows, the same as bench/peers' runtimes.
constexpr unsigned CHANNEL_WORKERS = 2;

template <bool Waits> struct ProducerTask {
	sb_task task;
	Chan *chan;
	sb_channel_send send;
	uint64_t item;
	uint64_t next, end;
	bool sending;
	static int poll(sb_task *t, const sb_waker *w)
	{
		ProducerTask *x = SB_CONTAINER_OF(t, ProducerTask, task);
		while (x->next < x->end) {
			if (!x->sending) {
				x->item = x->next;
				sb_channel_send_init(&x->send, x->chan->ch(), &x->item);
				x->sending = true;
			}
			int r = sb_channel_send_poll(&x->send, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			expect(r, 0, "send");
			x->sending = false;
			x->next++;
		}
		x->chan->producer_done();
		return 0;
	}
};

template <bool Waits> struct ConsumerTask {
	sb_task task;
	Chan *chan;
	sb_channel_recv recv;
	uint64_t item;
	bool receiving;
	sbb::WaitClock<Waits> clock;
	Received got;
	static int poll(sb_task *t, const sb_waker *w)
	{
		ConsumerTask *x = SB_CONTAINER_OF(t, ConsumerTask, task);
		for (;;) {
			if (!x->receiving) {
				sb_channel_recv_init(&x->recv, x->chan->ch(), &x->item);
				x->receiving = true;
				x->clock.begin();
			}
			int r = sb_channel_recv_poll(&x->recv, w);
			if (r == SB_PENDING)
				return SB_PENDING;
			x->receiving = false;
			if (r == -EPIPE)
				return 0;
			expect(r, 0, "recv");
			x->clock.end();
			x->got.take(x->item);
		}
	}
};

template <bool Waits>
uint64_t tasks_on(const Shape &s, const sbb::Params &p, sbb::Meter &m)
{
	Chan chan(s);
	std::unique_ptr<ProducerTask<Waits>[]> producers(new ProducerTask<Waits>[s.producers]);
	std::unique_ptr<ConsumerTask<Waits>[]> consumers(new ConsumerTask<Waits>[s.consumers]);
	std::unique_ptr<sbb::WaitHistogram[]> waits(Waits ? new sbb::WaitHistogram[s.consumers]()
							   : nullptr);
	for (unsigned q = 0; q < s.producers; q++) {
		ProducerTask<Waits> &x = producers[q];
		sb_task_init(&x.task, ProducerTask<Waits>::poll, nullptr, nullptr);
		x.chan = &chan;
		x.next = (uint64_t)q << 32;
		x.end = x.next + items_of(p.rounds, s.producers, q);
		x.sending = false;
	}
	for (unsigned c = 0; c < s.consumers; c++) {
		ConsumerTask<Waits> &x = consumers[c];
		sb_task_init(&x.task, ConsumerTask<Waits>::poll, nullptr, nullptr);
		x.chan = &chan;
		x.receiving = false;
		if constexpr (Waits)
			x.clock.histogram = &waits[c];
	}
	size_t n = s.producers + s.consumers;
	std::unique_ptr<sb_join[]> joins(new sb_join[n]);
	sb_executor_group g;
	expect(sb_executor_group_init(&g, CHANNEL_WORKERS, nullptr), 0, "sb_executor_group_init");
	m.start();
	// Receivers first, so that they are waiting when the items come.
	for (unsigned c = 0; c < s.consumers; c++)
		expect(sb_executor_group_spawn(&g, SB_GROUP_FLOATING, &consumers[c].task, &joins[c]), 0,
		       "spawn a receiver");
	for (unsigned q = 0; q < s.producers; q++)
		expect(sb_executor_group_spawn(&g, SB_GROUP_FLOATING, &producers[q].task,
					       &joins[s.consumers + q]),
		       0, "spawn a sender");
	for (size_t k = 0; k < n; k++)
		expect(sb_join_wait(&joins[k]), 0, "sb_join_wait");
	m.stop();
	size_t cancelled = 99;
	expect(sb_executor_group_shutdown(&g, &cancelled), 0, "sb_executor_group_shutdown");
	expect((long)cancelled, 0, "nothing cancelled");
	std::vector<Received> received(s.consumers);
	for (unsigned c = 0; c < s.consumers; c++) {
		received[c] = consumers[c].got;
		if constexpr (Waits)
			m.waits()->merge(waits[c]);
	}
	check_received(received.data(), s.consumers, p.rounds, s.producers);
	return p.rounds;
}

template <unsigned P, unsigned C> uint64_t tasks(const sbb::Params &p, sbb::Meter &m)
{
	constexpr Shape s{P, C, 64};
	return m.waits() ? tasks_on<true>(s, p, m) : tasks_on<false>(s, p, m);
}

SBB_BATCH((tasks<4, 1>), "channel/mpsc-4-to-1", sbb::SYNCBAND, 200000);
SBB_BATCH((tasks<16, 1>), "channel/mpsc-16-to-1", sbb::SYNCBAND, 200000);
SBB_BATCH((tasks<1, 4>), "channel/spmc-1-to-4", sbb::SYNCBAND, 200000);
SBB_BATCH((tasks<4, 4>), "channel/mpmc-4-to-4", sbb::SYNCBAND, 200000);
SBB_BATCH((tasks<16, 16>), "channel/mpmc-16-to-16", sbb::SYNCBAND, 200000);
#endif

} // namespace
