// SPDX-License-Identifier: Apache-2.0
//
// syncband/syncband.hpp - C++20 coroutines on syncband, header only.
//
//   sb::task<int> worker(sb_semaphore &slots, sb_mutex &m)
//   {
//           sb::permit p = co_await sb::acquire(slots);    // RAII guards
//           sb::mutex_guard g = co_await sb::lock(m);
//           co_return 42;
//   }
//   sb::loop loop(ring, &async, &timers);   // any loop's doorbell (and timers)
//   loop.spawn(handler());                  // doorbell: loop.run_ready()
//   int v = sb::sync_wait(worker(slots, m)); // or on a plain thread
//
// sb::task<T> is lazy: it starts when co_awaited, is awaited once, and hands
// its value (or rethrows its exception) to its awaiter.  A spawned task runs
// on its sb::loop's thread; an exception that leaves it calls std::terminate.
// Coroutines resume only from run_ready on the loop's thread (or at once when
// the first poll completes), never inside another thread's release.
// Awaitables (sb::acquire, lock, read_lock, write_lock, wait, arrive_and_wait,
// call_once, channel / broadcast / watch operations, sb::poll of any future)
// may be moved until first awaited; destroying a suspended coroutine cancels
// its future, handing on any grant, as the C cancel does.
// Combinators: sb::when_all (a tuple of results once all are done),
// sb::when_any (the first to complete, the others cancelled; a std::variant),
// sb::timeout(a, duration) and sb::stoppable(a, std::stop_token) (an empty
// optional when cut short).  Completion wins ties with a cancel.  Guards
// (sb::permit, sb::mutex_guard, sb::rwlock_guard) are move-only and give back
// what they hold at scope exit.  Other coroutine types can await these by
// providing `promise().syncband_state()`.  docs/integration.md states each
// awaitable's and combinator's guarantees in full.
// Thread safety: tasks, awaitables and run_ready belong to the loop's thread;
// the primitives awaited may be released, and stops requested, from any.
#ifndef SYNCBAND_SYNCBAND_HPP
#define SYNCBAND_SYNCBAND_HPP

#if !defined(__cplusplus) || __cplusplus < 202002L || !defined(__cpp_impl_coroutine)
#error "syncband.hpp needs C++20 coroutines: compile with -std=c++20 (CMake: link syncband::cxx); from C or older C++, use syncband/syncband.h"
#else

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include <syncband/syncband.h>

namespace sb {

class loop;
template <class T = void>
class task;

namespace detail {

struct pending_op;

// How a pending_op is polled and cancelled.
struct pending_ops {
	// SB_PENDING, or 0 once the coroutine may resume.
	int (*poll)(pending_op *op, const sb_waker *w) noexcept;
	// Cancels the wait: true when the operation was done anyway (the
	// coroutine is resumed and sees its result), false when it was undone
	// (the coroutine must not be resumed, only destroyed).
	bool (*cancel)(pending_op *op) noexcept;
};

// The one table of poll P and cancel C: a suspension stores one pointer.
template <int (*P)(pending_op *, const sb_waker *) noexcept, bool (*C)(pending_op *) noexcept>
inline constexpr pending_ops ops_for{ P, C };

// What a suspended coroutine waits on: polled again on every wake of its
// task, cancelled when what awaits it is cut short.
struct pending_op {
	const pending_ops *ops;
};

struct task_state;
struct deadline_trigger;
struct task_access;

// One line of execution within a task: the top-level coroutine and the
// tasks it awaits, or one branch of a combinator.  At most one coroutine on
// it is suspended at an awaiter at a time.
struct strand {
	task_state *task;                  // the spawned task: its waker, its loop
	pending_op *waiting;               // what the strand is suspended at, or null
	// Where a future awaiter that suspends the strand stores its direct
	// poll (see resume_main): the task's lt.poll for its top-level
	// strand, `unused` below for a combinator's branch, which its
	// combinator polls.  One store, so that suspending need not ask which.
	// Between `waiting` and `resume_at`, which g++ would otherwise store
	// together through a vector register, in four instructions for two.
	sb_loop_poll_fn *poll_slot;
	std::coroutine_handle<> resume_at; // the coroutine suspended there
	sb_loop_poll_fn unused;
};

// Polls what the strand waits on and, once that completes, resumes the
// coroutine suspended there, which runs to its next suspension or its end.
// True while the strand still waits (nothing was resumed).
inline bool step(strand *s, const sb_waker *w) noexcept
{
	pending_op *op = s->waiting;
	if (op) {
		if (op->ops->poll(op, w) == SB_PENDING)
			return true;
		s->waiting = nullptr;
	}
	s->resume_at.resume();
	return false;
}

// Stops the strand whose outermost coroutine is `h`: cancels what it waits
// on, resuming it while a cancel finds the operation done.  True when `h`
// finished that way (its result stands); false when it was cut off (the
// caller destroys `h`, whose awaiters have handed on what they held).
inline bool cut(strand *s, std::coroutine_handle<> h) noexcept
{
	while (!h.done()) {
		pending_op *op = std::exchange(s->waiting, nullptr);
		if (!op || !op->ops->cancel(op))
			return false;
		s->resume_at.resume();
	}
	return true;
}

// What every sb::task promise shares, whatever it returns.
class promise_base {
public:
	struct final_awaiter {
		bool await_ready() noexcept { return false; }
		template <class Promise>
		std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> h) noexcept
		{
			std::coroutine_handle<> next = h.promise().continuation_;
			return next ? next : std::noop_coroutine();
		}
		void await_resume() noexcept {}
	};

	promise_base() noexcept = default;
	promise_base(const promise_base &) = delete;
	promise_base &operator=(const promise_base &) = delete;
	inline ~promise_base();

	std::suspend_always initial_suspend() noexcept { return {}; }
	final_awaiter final_suspend() noexcept { return {}; }
	void unhandled_exception() noexcept
	{
		if (root_)
			std::terminate(); // nobody awaits a spawned task
		error_ = std::current_exception();
	}
	strand *syncband_state() noexcept { return strand_; }

	// The awaiting coroutine: runs on `s`, resumed when this one finishes
	// (null: return to whoever resumed it, a loop or a combinator).
	void bind(strand *s, std::coroutine_handle<> continuation) noexcept
	{
		strand_ = s;
		continuation_ = continuation;
	}
	void rethrow_if_failed() const
	{
		if (error_)
			std::rethrow_exception(error_);
	}

private:
	friend class sb::loop;
	strand *strand_ = nullptr;
	std::coroutine_handle<> continuation_;
	std::exception_ptr error_;
	task_state *root_ = nullptr; // set when spawned: the frame's owner
};

template <class T>
class result_slot {
public:
	template <class U = T>
	void return_value(U &&v) noexcept(std::is_nothrow_constructible_v<T, U &&>)
	{
		value_.emplace(std::forward<U>(v));
	}
	T take() { return std::move(*value_); }

private:
	std::optional<T> value_;
};

template <>
class result_slot<void> {
public:
	void return_void() noexcept {}
	void take() noexcept {}
};

// The part of a spawned task that waker clones reach; refcounted through
// `lt` and freed by the loop (release) when the last reference is gone.
struct task_state {
	sb_loop_task lt;
	sb_waker waker;                  // lt's, borrowed by every first poll
	strand main;                     // the top-level coroutine's strand
	std::coroutine_handle<> frame;   // null once the coroutine frame is gone
	loop *owner;
	task_state *prev;                // the owner's list of unfinished tasks
	task_state *next;
};

inline task_state *state_of(sb_loop_task *lt) noexcept
{
	return SB_CONTAINER_OF(lt, task_state, lt);
}

inline int task_poll(sb_loop_task *lt, const sb_waker *w) noexcept;
inline int resume_main(task_state *t) noexcept;

inline void task_release(sb_loop_task *lt) noexcept
{
	delete state_of(lt);
}

} // namespace detail

// A lazy coroutine returning T: `sb::task<int> f() { ... co_return 1; }`.
// It starts when co_awaited (by a task, or any coroutine with
// syncband_state()), or when an sb::task<> is spawned on an sb::loop.  A
// task destroyed before it finishes is destroyed where it is suspended: its
// awaiters cancel their futures.  T is void or a move-constructible object
// type.  Awaiting a moved-from task is undefined.
template <class T>
class task {
	static_assert(std::is_void_v<T> || (std::is_object_v<T> && std::is_move_constructible_v<T>),
		      "sb::task<T>: T is void or a move-constructible object type");

public:
	struct promise_type : detail::promise_base, detail::result_slot<T> {
		task get_return_object() noexcept
		{
			return task(std::coroutine_handle<promise_type>::from_promise(*this));
		}
	};

	// co_await: runs the task on the awaiting coroutine's strand; its
	// co_return value, or its exception rethrown.
	class awaiter {
	public:
		explicit awaiter(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
		bool await_ready() noexcept { return false; }
		// Runs the task until it suspends or finishes.  Finished: the
		// parent goes on without suspending, on this stack (gcc makes
		// symmetric transfer a tail call only when optimising, so a loop
		// of such awaits would otherwise grow the stack).  Suspended: its
		// end resumes the parent by symmetric transfer.
		template <class Promise>
		bool await_suspend(std::coroutine_handle<Promise> parent) noexcept
		{
			h_.promise().bind(parent.promise().syncband_state(), nullptr);
			h_.resume();
			if (h_.done())
				return false;
			h_.promise().bind(parent.promise().syncband_state(), parent);
			return true;
		}
		T await_resume()
		{
			h_.promise().rethrow_if_failed();
			return h_.promise().take();
		}

	private:
		std::coroutine_handle<promise_type> h_;
	};

	task() noexcept = default;
	task(task &&other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
	task &operator=(task &&other) noexcept
	{
		if (this != &other) {
			reset();
			h_ = std::exchange(other.h_, nullptr);
		}
		return *this;
	}
	task(const task &) = delete;
	task &operator=(const task &) = delete;
	~task() { reset(); }

	awaiter operator co_await() & noexcept { return awaiter(h_); }
	awaiter operator co_await() && noexcept { return awaiter(h_); }

	// True while the task holds a coroutine (not moved from, not reset).
	explicit operator bool() const noexcept { return static_cast<bool>(h_); }
	// Destroys the coroutine now, wherever it is suspended.
	void reset() noexcept
	{
		if (h_)
			std::exchange(h_, nullptr).destroy();
	}

private:
	friend class loop;
	friend struct detail::task_access;
	explicit task(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
	std::coroutine_handle<promise_type> h_;
};

namespace detail {
// The combinators' view of a task: its coroutine.
struct task_access {
	template <class T>
	static std::coroutine_handle<typename sb::task<T>::promise_type> handle(sb::task<T> &t) noexcept
	{
		return t.h_;
	}
};
} // namespace detail

// ------------------------------------------------------------------ timers

// A deadline that the loop's sb::timer_service keeps for sb::timeout:
// intrusive, it lives in the awaiting coroutine's frame, so arming one
// allocates nothing.
class timer {
public:
	timer() noexcept = default;
	timer(const timer &) = delete;
	timer &operator=(const timer &) = delete;

	// When it expires, on the service's now_ns() clock.
	std::uint64_t deadline_ns() const noexcept { return deadline_; }
	// For the service, once the deadline has passed: the awaiting task is
	// woken, and its next poll cuts the wait short.  The loop's thread; at
	// most once per arm, never after disarm.
	inline void fire() noexcept;
	bool fired() const noexcept { return fired_; }

	// Free for the service while the timer is armed: its list links.
	timer *prev = nullptr;
	timer *next = nullptr;

private:
	friend struct detail::deadline_trigger;
	std::uint64_t deadline_ = 0;
	detail::task_state *task_ = nullptr;
	bool fired_ = false;
};

// The timers of a loop, supplied by whoever drives it (the loop's own timer
// wheel, a uv_timer_t, a timerfd; sb::run_loop has one).  Every call comes
// from the loop's thread, and fire() must be called there too.
class timer_service {
public:
	// The clock the deadlines are on, in nanoseconds.
	virtual std::uint64_t now_ns() noexcept = 0;
	// Keeps `t` until its deadline_ns() passes, then calls t.fire(); must
	// not fail (an armed timer that cannot be kept should fire at once).
	virtual void arm(timer &t) noexcept = 0;
	// Forgets an armed timer that has not fired.
	virtual void disarm(timer &t) noexcept = 0;

protected:
	timer_service() = default;
	timer_service(const timer_service &) = default;
	timer_service &operator=(const timer_service &) = default;
	~timer_service() = default;
};

// ------------------------------------------------------------------ loop

// Runs sb::task<> coroutines on any event loop: `ring(ctx)` is the loop's
// doorbell (syncband/loop.h), called from any thread when tasks are queued
// and the loop should call run_ready() on its thread; `timers` (may be null)
// keeps sb::timeout's deadlines.  Every member but the ring runs on the
// loop's thread.
class loop {
public:
	loop(sb_loop_ring_fn ring, void *ctx, timer_service *timers = nullptr) noexcept
		: timers_(timers)
	{
		sb_loop_init(&l_, ring, ctx);
	}
	loop(const loop &) = delete;
	loop &operator=(const loop &) = delete;
	// Call shutdown() and run_ready() until idle() before destroying it.
	~loop() = default;

	// Queues the coroutine's first step; it runs at the next run_ready().
	// A moved-from task is ignored.  Allocates the task's wake target:
	// throws std::bad_alloc, and the task is destroyed unrun, if it cannot.
	void spawn(task<> t)
	{
		if (!t.h_)
			return;
		auto *s = new detail::task_state{};
		sb_loop_task_init(&s->lt, detail::task_poll, detail::task_release);
		s->waker = sb_loop_task_waker(&s->lt);
		detail::promise_base &p = t.h_.promise();
		p.bind(&s->main, nullptr);
		p.root_ = s;
		s->main = detail::strand{ s, nullptr, &s->lt.poll, t.h_, nullptr };
		s->frame = std::exchange(t.h_, nullptr);
		s->owner = this;
		s->prev = nullptr;
		s->next = live_;
		if (live_)
			live_->prev = s;
		live_ = s;
		sb_loop_spawn(&l_, &s->lt); // a fresh task: cannot fail
	}

	// Polls every queued task once (sb_loop_run_ready): returns how many.
	std::size_t run_ready() noexcept { return sb_loop_run_ready(&l_); }

	// True once every task has finished and every waker clone of them has
	// been dropped: the doorbell will not ring again (sb_loop_idle).
	bool idle() noexcept { return sb_loop_idle(&l_); }

	// Destroys every unfinished task: the awaiter each is suspended at
	// cancels its future, handing on what it was granted; then queues them,
	// so that the next run_ready finishes them.  Not from inside a task.
	void shutdown() noexcept
	{
		while (live_) {
			detail::task_state *s = live_;
			s->frame.destroy(); // unlinks s (promise_base's destructor)
			sb_loop_wake(&s->lt);
		}
	}

	timer_service *timers() const noexcept { return timers_; }
	sb_loop *native() noexcept { return &l_; }
	// The seed of the next sb::when_any select on this loop: a round
	// counter, so that ready cases take turns winning.
	std::uint32_t next_select_seed() noexcept { return select_seed_++; }

private:
	friend class detail::promise_base;
	void unlink(detail::task_state *s) noexcept
	{
		if (s->prev)
			s->prev->next = s->next;
		else
			live_ = s->next;
		if (s->next)
			s->next->prev = s->prev;
		s->prev = s->next = nullptr;
	}

	sb_loop l_;
	timer_service *timers_;
	detail::task_state *live_ = nullptr;
	std::uint32_t select_seed_ = 0;
};

inline detail::promise_base::~promise_base()
{
	if (!root_)
		return;
	root_->frame = nullptr;
	root_->main.waiting = nullptr;
	root_->lt.poll = task_poll; // which finds the frame gone
	root_->owner->unlink(root_);
}

inline int detail::task_poll(sb_loop_task *lt, const sb_waker *w) noexcept
{
	task_state *s = state_of(lt);
	if (!s->frame)
		return 0; // destroyed by loop::shutdown
	if (step(&s->main, w) || !s->frame.done())
		return SB_PENDING; // suspended at an awaiter, registered with `w`
	s->frame.destroy();
	return 0;
}

// A future awaiter that suspends the top-level strand makes its own
// poll_task the task's poll (lt.poll, which the loop reads before each poll
// on its thread, the only one that writes it): that polls the future and
// calls this, one indirect call where task_poll makes two (step's re-poll
// and the resume), and without task_poll's checks, which cannot fail there
// (a frame destroyed meanwhile set task_poll back).  Every other
// suspension finds task_poll, set back here before the resume.
inline int detail::resume_main(task_state *t) noexcept
{
	t->main.waiting = nullptr;
	t->lt.poll = task_poll;
	t->main.resume_at.resume();
	if (!t->frame.done())
		return SB_PENDING;
	t->frame.destroy();
	return 0;
}

inline void timer::fire() noexcept
{
	fired_ = true;
	sb_loop_wake(&task_->lt); // the task is unfinished while its timer is armed
}

// ------------------------------------------------------------------ guards

// Permits of an sb_semaphore, returned when it goes out of scope.  An
// acquire that failed gives an empty permit whose error() says why.
class permit {
public:
	permit() noexcept = default;
	// Adopts `n` permits the caller acquired from `s`.
	permit(sb_semaphore &s, std::size_t n) noexcept : sem_(&s), n_(n) {}
	explicit permit(int error) noexcept : error_(error) {}
	permit(permit &&o) noexcept
		: sem_(std::exchange(o.sem_, nullptr)), n_(std::exchange(o.n_, 0)), error_(o.error_)
	{
	}
	permit &operator=(permit &&o) noexcept
	{
		if (this != &o) {
			reset();
			sem_ = std::exchange(o.sem_, nullptr);
			n_ = std::exchange(o.n_, 0);
			error_ = o.error_;
		}
		return *this;
	}
	permit(const permit &) = delete;
	permit &operator=(const permit &) = delete;
	~permit() { reset(); }

	explicit operator bool() const noexcept { return sem_ != nullptr; }
	// 0, or the acquire's negative errno (-ESHUTDOWN, -EINVAL).
	int error() const noexcept { return error_; }
	std::size_t count() const noexcept { return n_; }
	sb_semaphore *semaphore() const noexcept { return sem_; }
	// Returns the permits to the semaphore now.
	void reset() noexcept
	{
		// One permit, the usual count, takes a release whose range checks
		// fold for the constant.
		if (sem_ && n_ == 1)
			sb_semaphore_release(sem_, 1);
		else if (sem_)
			sb_semaphore_release(sem_, n_);
		sem_ = nullptr;
		n_ = 0;
	}
	// Gives up ownership without returning the permits: returns how many
	// it held (the caller now owes them to semaphore(), read first).
	[[nodiscard]] std::size_t release() noexcept
	{
		sem_ = nullptr;
		return std::exchange(n_, 0);
	}

private:
	sb_semaphore *sem_ = nullptr;
	std::size_t n_ = 0;
	int error_ = 0;
};

// A locked sb_mutex, unlocked when it goes out of scope.
class mutex_guard {
public:
	mutex_guard() noexcept = default;
	// Adopts a mutex the caller has locked.
	explicit mutex_guard(sb_mutex &m) noexcept : m_(&m) {}
	mutex_guard(mutex_guard &&o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
	mutex_guard &operator=(mutex_guard &&o) noexcept
	{
		if (this != &o) {
			unlock();
			m_ = std::exchange(o.m_, nullptr);
		}
		return *this;
	}
	mutex_guard(const mutex_guard &) = delete;
	mutex_guard &operator=(const mutex_guard &) = delete;
	~mutex_guard() { unlock(); }

	bool owns_lock() const noexcept { return m_ != nullptr; }
	explicit operator bool() const noexcept { return owns_lock(); }
	sb_mutex *mutex() const noexcept { return m_; }
	void unlock() noexcept
	{
		if (m_)
			sb_mutex_unlock(m_);
		m_ = nullptr;
	}
	// Gives up ownership without unlocking; returns the mutex (or null).
	[[nodiscard]] sb_mutex *release() noexcept { return std::exchange(m_, nullptr); }

private:
	friend class condvar_wait_awaiter;
	sb_mutex *m_ = nullptr;
};

// A read or write hold of an sb_rwlock, released when it goes out of scope.
// A read lock that failed (-EOVERFLOW) gives an empty guard.
class rwlock_guard {
public:
	enum kind { shared, exclusive };
	rwlock_guard() noexcept = default;
	// Adopts a hold the caller took: a read (shared) or the write lock.
	rwlock_guard(sb_rwlock &rw, kind k) noexcept : rw_(&rw), k_(k) {}
	rwlock_guard(rwlock_guard &&o) noexcept : rw_(std::exchange(o.rw_, nullptr)), k_(o.k_) {}
	rwlock_guard &operator=(rwlock_guard &&o) noexcept
	{
		if (this != &o) {
			unlock();
			rw_ = std::exchange(o.rw_, nullptr);
			k_ = o.k_;
		}
		return *this;
	}
	rwlock_guard(const rwlock_guard &) = delete;
	rwlock_guard &operator=(const rwlock_guard &) = delete;
	~rwlock_guard() { unlock(); }

	bool owns_lock() const noexcept { return rw_ != nullptr; }
	explicit operator bool() const noexcept { return owns_lock(); }
	bool exclusive_hold() const noexcept { return rw_ && k_ == exclusive; }
	void unlock() noexcept
	{
		if (rw_)
			(k_ == exclusive ? sb_rwlock_write_unlock : sb_rwlock_read_unlock)(rw_);
		rw_ = nullptr;
	}
	// Gives up ownership without unlocking; returns the lock (or null).
	[[nodiscard]] sb_rwlock *release() noexcept { return std::exchange(rw_, nullptr); }
	// The write lock becomes a read lock, atomically (sb_rwlock_downgrade).
	void downgrade() noexcept
	{
		if (exclusive_hold() && sb_rwlock_downgrade(rw_) == 0)
			k_ = shared;
	}

private:
	sb_rwlock *rw_ = nullptr;
	kind k_ = shared;
};

// ------------------------------------------------------------------ awaiters

namespace detail {

// Each future type's poll and cancel, called directly (inline where the C
// header has them inline) rather than through its sb_future_ops.
inline int poll_future(sb_semaphore_acquire *f, const sb_waker *w) noexcept
{
	return sb_semaphore_acquire_poll(f, w);
}
inline void cancel_future(sb_semaphore_acquire *f) noexcept
{
	sb_semaphore_acquire_cancel(f);
}
inline int poll_future(sb_mutex_lock *f, const sb_waker *w) noexcept
{
	return sb_mutex_lock_poll(f, w);
}
inline void cancel_future(sb_mutex_lock *f) noexcept
{
	sb_mutex_lock_cancel(f);
}
inline int poll_future(sb_rwlock_lock *f, const sb_waker *w) noexcept
{
	return sb_rwlock_lock_poll(f, w);
}
inline void cancel_future(sb_rwlock_lock *f) noexcept
{
	sb_rwlock_lock_cancel(f);
}
inline int poll_future(sb_condvar_wait *f, const sb_waker *w) noexcept
{
	return sb_condvar_wait_poll(f, w);
}
inline void cancel_future(sb_condvar_wait *f) noexcept
{
	sb_condvar_wait_cancel(f);
}
inline int poll_future(sb_event_wait *f, const sb_waker *w) noexcept
{
	return sb_event_wait_poll(f, w);
}
inline void cancel_future(sb_event_wait *f) noexcept
{
	sb_event_wait_cancel(f);
}
inline int poll_future(sb_auto_event_wait *f, const sb_waker *w) noexcept
{
	return sb_auto_event_wait_poll(f, w);
}
inline void cancel_future(sb_auto_event_wait *f) noexcept
{
	sb_auto_event_wait_cancel(f);
}
inline int poll_future(sb_barrier_wait *f, const sb_waker *w) noexcept
{
	return sb_barrier_wait_poll(f, w);
}
inline void cancel_future(sb_barrier_wait *f) noexcept
{
	sb_barrier_wait_cancel(f);
}
inline int poll_future(sb_latch_wait *f, const sb_waker *w) noexcept
{
	return sb_latch_wait_poll(f, w);
}
inline void cancel_future(sb_latch_wait *f) noexcept
{
	sb_latch_wait_cancel(f);
}
inline int poll_future(sb_once_wait *f, const sb_waker *w) noexcept
{
	return sb_once_wait_poll(f, w);
}
inline void cancel_future(sb_once_wait *f) noexcept
{
	sb_once_wait_cancel(f);
}
inline int poll_future(sb_channel_send *f, const sb_waker *w) noexcept
{
	return sb_channel_send_poll(f, w);
}
inline void cancel_future(sb_channel_send *f) noexcept
{
	static_cast<void>(sb_channel_send_cancel(f));
}
inline int poll_future(sb_channel_recv *f, const sb_waker *w) noexcept
{
	return sb_channel_recv_poll(f, w);
}
inline void cancel_future(sb_channel_recv *f) noexcept
{
	static_cast<void>(sb_channel_recv_cancel(f));
}
inline int poll_future(sb_broadcast_send *f, const sb_waker *w) noexcept
{
	return sb_broadcast_send_poll(f, w);
}
inline void cancel_future(sb_broadcast_send *f) noexcept
{
	static_cast<void>(sb_broadcast_send_cancel(f));
}
inline int poll_future(sb_broadcast_recv *f, const sb_waker *w) noexcept
{
	return sb_broadcast_recv_poll(f, w);
}
inline void cancel_future(sb_broadcast_recv *f) noexcept
{
	static_cast<void>(sb_broadcast_recv_cancel(f));
}
inline int poll_future(sb_watch_changed *f, const sb_waker *w) noexcept
{
	return sb_watch_changed_poll(f, w);
}
inline void cancel_future(sb_watch_changed *f) noexcept
{
	sb_watch_changed_cancel(f);
}

// Each future type's sb_future_ops, for a when_any's select.
inline const sb_future_ops *ops_of(sb_semaphore_acquire *) noexcept
{
	return &sb_semaphore_acquire_ops;
}
inline const sb_future_ops *ops_of(sb_mutex_lock *) noexcept
{
	return &sb_mutex_lock_ops;
}
inline const sb_future_ops *ops_of(sb_rwlock_lock *) noexcept
{
	return &sb_rwlock_lock_ops;
}
inline const sb_future_ops *ops_of(sb_condvar_wait *) noexcept
{
	return &sb_condvar_wait_ops;
}
inline const sb_future_ops *ops_of(sb_event_wait *) noexcept
{
	return &sb_event_wait_ops;
}
inline const sb_future_ops *ops_of(sb_auto_event_wait *) noexcept
{
	return &sb_auto_event_wait_ops;
}
inline const sb_future_ops *ops_of(sb_barrier_wait *) noexcept
{
	return &sb_barrier_wait_ops;
}
inline const sb_future_ops *ops_of(sb_latch_wait *) noexcept
{
	return &sb_latch_wait_ops;
}
inline const sb_future_ops *ops_of(sb_once_wait *) noexcept
{
	return &sb_once_wait_ops;
}
inline const sb_future_ops *ops_of(sb_channel_send *) noexcept
{
	return &sb_channel_send_ops;
}
inline const sb_future_ops *ops_of(sb_channel_recv *) noexcept
{
	return &sb_channel_recv_ops;
}
inline const sb_future_ops *ops_of(sb_broadcast_send *) noexcept
{
	return &sb_broadcast_send_ops;
}
inline const sb_future_ops *ops_of(sb_broadcast_recv *) noexcept
{
	return &sb_broadcast_recv_ops;
}
inline const sb_future_ops *ops_of(sb_watch_changed *) noexcept
{
	return &sb_watch_changed_ops;
}

struct select_access;

// A syncband future awaited by a task: registered by await_suspend, polled
// again on every wake.  Not copyable, and movable only before it is first
// awaited: the future must stay where it is while pending.  Nothing but
// result_ is stored until an await suspends, so an await that completes in
// await_ready costs no more than the C call it makes.
class awaiter_core : protected pending_op {
public:
	awaiter_core(const awaiter_core &) = delete;
	awaiter_core &operator=(const awaiter_core &) = delete;

protected:
	awaiter_core() noexcept {} // pending_op: filled in by suspend()
	~awaiter_core() = default;

	// Makes the future's first poll, first(waker), with the task's waker
	// (the future is initialised): true when the coroutine must suspend
	// until it completes; `o` then re-polls it on each wake (settling
	// it) and cancels it.  `direct`, if given, becomes the task's poll
	// while its top-level strand waits here (see resume_main).
	template <class Promise, class FirstPoll>
	bool suspend(std::coroutine_handle<Promise> h, const pending_ops *o,
		     FirstPoll first, sb_loop_poll_fn direct = nullptr) noexcept
	{
		strand *s = h.promise().syncband_state();
		int r = first(&s->task->waker);
		result_ = r;
		if (r != SB_PENDING)
			return false;
		ops = o;
		if (direct)
			*s->poll_slot = direct;
		s->resume_at = h;
		s->waiting = this;
		return true;
	}

	// A poll's result: 0 (and the result kept) once it completed.
	int settle(int r) noexcept
	{
		if (r == SB_PENDING)
			return SB_PENDING;
		result_ = r;
		return 0;
	}
	// The poll after a cancel returns the final result without registering
	// (future.h): -ECANCELED when the cancel undid the operation, else what
	// it completed with (a channel's item that had been handed over).
	bool settle_cancelled(int r) noexcept
	{
		result_ = r;
		return r != -ECANCELED;
	}

	bool pending() const noexcept { return result_ == SB_PENDING; }
	// Pending, or cancelled by a combinator: the operation did not happen.
	bool unfinished() const noexcept
	{
		return result_ == SB_PENDING || result_ == -ECANCELED;
	}

	// The await's state and result in one word: 0 until awaited (or what
	// await_ready settled), SB_PENDING while suspended, -ECANCELED once a
	// combinator's cancel undid it, else what the future completed with (a
	// poll never completes with SB_PENDING, nor with -ECANCELED uncancelled).
	int result_ = 0;
};

// An awaiter that holds its future.
template <class Future>
class future_awaiter : public awaiter_core {
protected:
	// User-provided, so that `future_awaiter()` leaves the future alone
	// rather than zeroing it (its init does that job).
	future_awaiter() noexcept {}
	future_awaiter(future_awaiter &&) noexcept : awaiter_core() {}
	// A pending future is cancelled, handing on what it was granted.
	~future_awaiter()
	{
		if (pending())
			cancel_future(&future_);
	}

	// Polls the initialised future for the first time (see
	// awaiter_core::suspend).
	template <class Promise>
	bool suspend(std::coroutine_handle<Promise> h) noexcept
	{
		return awaiter_core::suspend(
			h, &ops_for<&poll_again, &cancel_wait>,
			[this](const sb_waker *w) { return poll_future(&future_, w); },
			&poll_task);
	}
	// The same, when await_ready has just made the C poll's inline attempt
	// and it failed: `slow` is that poll's out-of-line rest, which a first
	// poll whose attempt fails calls anyway, so the attempt is not made
	// twice.
	template <class Promise>
	bool suspend_slow(std::coroutine_handle<Promise> h,
			  int (*slow)(Future *, const sb_waker *)) noexcept
	{
		return awaiter_core::suspend(
			h, &ops_for<&poll_again, &cancel_wait>,
			[this, slow](const sb_waker *w) { return slow(&future_, w); },
			&poll_task);
	}

	// A union member, so that no awaiter constructs the future: a C
	// struct, whose std::atomic fields C++20 would zero on construction
	// (a store before every await, which the future's init makes moot).
	// Only its init and the C functions give it values.
	union {
		Future future_;
	};

private:
	friend struct select_access;
	static int poll_again(pending_op *op, const sb_waker *w) noexcept
	{
		auto *a = static_cast<future_awaiter *>(op);
		return a->settle(poll_future(&a->future_, w));
	}
	// The task's poll while its top-level strand waits here: the loop
	// calls it instead of task_poll, which would call poll_again.
	static int poll_task(sb_loop_task *lt, const sb_waker *w) noexcept
	{
		task_state *t = state_of(lt);
		int r = poll_future(&static_cast<future_awaiter *>(t->main.waiting)->future_, w);
		if (r == SB_PENDING)
			return SB_PENDING;
		// Found again rather than kept across the poll's call: one
		// callee-saved register fewer to push.
		static_cast<future_awaiter *>(t->main.waiting)->result_ = r;
		return resume_main(t);
	}
	static bool cancel_wait(pending_op *op) noexcept
	{
		auto *a = static_cast<future_awaiter *>(op);
		cancel_future(&a->future_);
		sb_waker noop = sb_waker_noop();
		return a->settle_cancelled(poll_future(&a->future_, &noop));
	}
};

} // namespace detail

class acquire_awaiter : public detail::future_awaiter<sb_semaphore_acquire> {
public:
	// The semaphore and the count go straight into the future's fields,
	// which its init (prepare) then stores again unchanged, so the compiler
	// drops those stores: a suspending await adds only the status.
	acquire_awaiter(sb_semaphore &s, std::size_t n) noexcept : future_awaiter()
	{
		future_.sem = &s;
		future_.permits = n;
	}
	acquire_awaiter(acquire_awaiter &&o) noexcept
		: acquire_awaiter(*o.future_.sem, o.future_.permits)
	{
	}
	// The inline attempt of try_acquire only (one CAS): whatever it cannot
	// settle, the future's first poll does.
	bool await_ready() noexcept
	{
		sb_semaphore *s = future_.sem;
		// relaxed: a guess that the CAS confirms; acquire: as try_acquire.
		std::size_t state = sb__state_load_relaxed(&s->q), next;
		if (!sb__semaphore_may_take(state, future_.permits, &next) ||
		    !sb__state_cas_acquire(&s->q, &state, next))
			return false;
		result_ = 0; // again: stored after the CAS, it need not be reloaded
		return true;
	}
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend_slow(h, &sb_semaphore_acquire_poll_slow);
	}
	permit await_resume() noexcept
	{
		return result_ == 0 ? permit(*future_.sem, future_.permits) : permit(result_);
	}

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_semaphore_acquire_init(&future_, future_.sem, future_.permits);
	}
};

// co_await sb::acquire(sem, n): an sb::permit holding `n` permits, or an
// empty one whose error() is -ESHUTDOWN (closed) or -EINVAL (n too large).
inline acquire_awaiter acquire(sb_semaphore &s, std::size_t n = 1) noexcept
{
	return acquire_awaiter(s, n);
}

class lock_awaiter : public detail::future_awaiter<sb_mutex_lock> {
public:
	explicit lock_awaiter(sb_mutex &m) noexcept : future_awaiter(), m_(&m) {}
	// The inline attempt of try_lock only (one CAS): whatever it cannot
	// settle, the future's first poll does.
	bool await_ready() noexcept { return sb__mutex_take_if_free(m_); }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend_slow(h, &sb_mutex_lock_poll_slow);
	}
	mutex_guard await_resume() noexcept
	{
		result_ = 0; // settled, whichever way it came
		return mutex_guard(*m_);
	}

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_mutex_lock_init(&future_, m_);
	}

	sb_mutex *m_;
};

// co_await sb::lock(m): an sb::mutex_guard holding `m`.
inline lock_awaiter lock(sb_mutex &m) noexcept
{
	return lock_awaiter(m);
}

class rwlock_awaiter : public detail::future_awaiter<sb_rwlock_lock> {
public:
	rwlock_awaiter(sb_rwlock &rw, rwlock_guard::kind k) noexcept
		: future_awaiter(), rw_(&rw), k_(k)
	{
	}
	bool await_ready() noexcept
	{
		result_ = k_ == rwlock_guard::exclusive ? sb_rwlock_try_write(rw_)
							: sb_rwlock_try_read(rw_);
		return result_ != -EAGAIN;
	}
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend(h);
	}
	rwlock_guard await_resume() noexcept
	{
		return result_ == 0 ? rwlock_guard(*rw_, k_) : rwlock_guard();
	}

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		if (k_ == rwlock_guard::exclusive)
			sb_rwlock_write_init(&future_, rw_);
		else
			sb_rwlock_read_init(&future_, rw_);
	}

	sb_rwlock *rw_;
	rwlock_guard::kind k_;
};

// co_await sb::read_lock(rw) / sb::write_lock(rw): an sb::rwlock_guard
// holding a read of `rw` / its write lock, in the lock's order (its mode's).
inline rwlock_awaiter read_lock(sb_rwlock &rw) noexcept
{
	return rwlock_awaiter(rw, rwlock_guard::shared);
}

inline rwlock_awaiter write_lock(sb_rwlock &rw) noexcept
{
	return rwlock_awaiter(rw, rwlock_guard::exclusive);
}

class condvar_wait_awaiter : public detail::future_awaiter<sb_condvar_wait> {
public:
	condvar_wait_awaiter(sb_condvar &cv, mutex_guard &g) noexcept
		: future_awaiter(), cv_(&cv), guard_(&g)
	{
	}
	condvar_wait_awaiter(condvar_wait_awaiter &&) noexcept = default;
	// Cancelled while waiting: the mutex is not held (condvar.h).
	~condvar_wait_awaiter()
	{
		if (unfinished())
			guard_->m_ = nullptr;
	}
	bool await_ready() noexcept
	{
		if (guard_->owns_lock())
			return false;
		result_ = -EPERM;
		return true;
	}
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend(h);
	}
	// 0: notified, and the guard holds the mutex again.  -EPERM: the guard
	// held no mutex.
	int await_resume() noexcept { return result_; }

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_condvar_wait_init(&future_, cv_, guard_->mutex());
	}

	sb_condvar *cv_;
	mutex_guard *guard_;
};

// co_await sb::wait(cv, guard): gives up the guard's mutex until notified,
// and resumes holding it again (0); -EPERM when the guard holds nothing.
inline condvar_wait_awaiter wait(sb_condvar &cv, mutex_guard &g) noexcept
{
	return condvar_wait_awaiter(cv, g);
}

class event_wait_awaiter : public detail::future_awaiter<sb_event_wait> {
public:
	explicit event_wait_awaiter(sb_event &e) noexcept : future_awaiter(), e_(&e)
	{
	}
	bool await_ready() noexcept { return sb_event_try_wait(e_) == 0; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend(h);
	}
	void await_resume() noexcept {}

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_event_wait_init(&future_, e_);
	}

	sb_event *e_;
};

// co_await sb::wait(event): resumes once the event is set.
inline event_wait_awaiter wait(sb_event &e) noexcept
{
	return event_wait_awaiter(e);
}

class auto_event_wait_awaiter : public detail::future_awaiter<sb_auto_event_wait> {
public:
	explicit auto_event_wait_awaiter(sb_auto_event &e) noexcept
		: future_awaiter(), e_(&e)
	{
	}
	bool await_ready() noexcept { return sb_auto_event_try_wait(e_) == 0; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend(h);
	}
	void await_resume() noexcept {}

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_auto_event_wait_init(&future_, e_);
	}

	sb_auto_event *e_;
};

// co_await sb::wait(auto_event): resumes holding one signal.
inline auto_event_wait_awaiter wait(sb_auto_event &e) noexcept
{
	return auto_event_wait_awaiter(e);
}

class barrier_wait_awaiter : public detail::future_awaiter<sb_barrier_wait> {
public:
	explicit barrier_wait_awaiter(sb_barrier &b) noexcept
		: future_awaiter(), b_(&b)
	{
	}
	// Arriving changes the barrier, so it is done by the future's first poll.
	bool await_ready() noexcept { return false; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend(h);
	}
	// SB_BARRIER_LEADER for the generation's leader, 0 for the others,
	// -EINVAL for a barrier of 0 parties.
	int await_resume() noexcept
	{
		return result_ == 0 && sb_barrier_wait_is_leader(&future_) ? SB_BARRIER_LEADER
									   : result_;
	}

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_barrier_wait_init(&future_, b_);
	}

	sb_barrier *b_;
};

// co_await sb::arrive_and_wait(barrier): arrives and resumes once the
// generation is complete; the leader (the last to arrive, which never
// suspends) gets SB_BARRIER_LEADER, the others 0.  A coroutine destroyed
// while it waits withdraws its arrival.
inline barrier_wait_awaiter arrive_and_wait(sb_barrier &b) noexcept
{
	return barrier_wait_awaiter(b);
}

class latch_wait_awaiter : public detail::future_awaiter<sb_latch_wait> {
public:
	explicit latch_wait_awaiter(sb_latch &l) noexcept : future_awaiter(), l_(&l)
	{
	}
	bool await_ready() noexcept { return sb_latch_try_wait(l_) == 0; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend(h);
	}
	void await_resume() noexcept {}

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_latch_wait_init(&future_, l_);
	}

	sb_latch *l_;
};

// co_await sb::wait(latch): resumes once the latch's count is zero.
inline latch_wait_awaiter wait(sb_latch &l) noexcept
{
	return latch_wait_awaiter(l);
}

// The job of running a once's initialiser, held by the coroutine that was
// told to run it: complete() reports success; fail(), or going out of scope
// without either, reports failure, and the job passes to the next waiter.
// Empty (false) when the once was done.  Move-only.
class once_job {
public:
	once_job() noexcept = default;
	// Adopts the job the caller holds on `o` (told SB_ONCE_RUN).
	explicit once_job(sb_once &o) noexcept : o_(&o) {}
	once_job(once_job &&other) noexcept : o_(std::exchange(other.o_, nullptr)) {}
	once_job &operator=(once_job &&other) noexcept
	{
		if (this != &other) {
			fail();
			o_ = std::exchange(other.o_, nullptr);
		}
		return *this;
	}
	once_job(const once_job &) = delete;
	once_job &operator=(const once_job &) = delete;
	~once_job() { fail(); }

	// True when this coroutine must run the initialiser.
	explicit operator bool() const noexcept { return o_ != nullptr; }
	// The initialiser succeeded: every waiter and later caller sees it done.
	void complete() noexcept
	{
		if (o_)
			sb_once_complete(std::exchange(o_, nullptr));
	}
	void fail() noexcept
	{
		if (o_)
			sb_once_fail(std::exchange(o_, nullptr));
	}

private:
	sb_once *o_ = nullptr;
};

class once_wait_awaiter : public detail::future_awaiter<sb_once_wait> {
public:
	explicit once_wait_awaiter(sb_once &o) noexcept : future_awaiter(), o_(&o) {}
	// Done already: one acquire load, and the initialiser's writes are
	// visible.
	bool await_ready() noexcept { return sb_once_is_done(o_); }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend(h);
	}
	once_job await_resume() noexcept
	{
		return result_ == SB_ONCE_RUN ? once_job(*o_) : once_job();
	}

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_once_wait_init(&future_, o_);
	}

	sb_once *o_;
};

// co_await sb::call_once(once): an empty sb::once_job once the initialiser
// has succeeded (now or earlier), or a job that this coroutine must run and
// then complete() (or fail, passing it on).  A coroutine destroyed while it
// waits leaves the queue, passing on a job it was handed but never saw.
inline once_wait_awaiter call_once(sb_once &o) noexcept
{
	return once_wait_awaiter(o);
}

// ---------------------------------------------------------------- channel

template <class T>
class channel;

namespace detail {

// A channel's and a broadcast's send, for send_awaiter_base.  Always
// inlined, so that each C call is made (and inlined) as if named there.
struct channel_send_ops {
	using target = sb_channel;
	using future = sb_channel_send;
	[[gnu::always_inline]] static int try_send(sb_channel *ch, const void *item) noexcept
	{
		return sb_channel_try_send(ch, item);
	}
	[[gnu::always_inline]] static void init(sb_channel_send *f, sb_channel *ch,
						const void *item) noexcept
	{
		sb_channel_send_init(f, ch, item);
	}
};
struct broadcast_send_ops {
	using target = sb_broadcast;
	using future = sb_broadcast_send;
	[[gnu::always_inline]] static int try_send(sb_broadcast *bc, const void *item) noexcept
	{
		return sb_broadcast_try_send(bc, item);
	}
	[[gnu::always_inline]] static void init(sb_broadcast_send *f, sb_broadcast *bc,
						const void *item) noexcept
	{
		sb_broadcast_send_init(f, bc, item);
	}
};

// An awaiter that sends a copy of one item through Ops (channel_send_ops
// or broadcast_send_ops): its try_send in await_ready, else its future.
// co_await gives 0 (sent) or -EPIPE (closed; the item was not sent).
template <class Ops, class T>
class send_awaiter_base : public future_awaiter<typename Ops::future> {
public:
	bool await_ready() noexcept
	{
		this->result_ = Ops::try_send(to_, &item_);
		return this->result_ != -EAGAIN;
	}
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return this->suspend(h);
	}
	int await_resume() noexcept { return this->result_; }

protected:
	send_awaiter_base(typename Ops::target &to, const T &item) noexcept : to_(&to), item_(item)
	{
	}

private:
	friend struct select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		Ops::init(&this->future_, to_, &item_);
	}

	typename Ops::target *to_;
	T item_; // the future sends from here: it stays put while pending
};

} // namespace detail

// co_await of ch.send(item): 0 (sent) or -EPIPE (closed; not sent).
template <class T>
class send_awaiter : public detail::send_awaiter_base<detail::channel_send_ops, T> {
public:
	send_awaiter(sb_channel &ch, const T &item) noexcept
		: detail::send_awaiter_base<detail::channel_send_ops, T>(ch, item)
	{
	}
};

template <class T>
class recv_awaiter : public detail::future_awaiter<sb_channel_recv> {
public:
	explicit recv_awaiter(sb_channel &ch) noexcept
		: future_awaiter(), ch_(&ch)
	{
	}
	bool await_ready() noexcept
	{
		result_ = sb_channel_try_recv(ch_, &item_);
		return result_ != -EAGAIN;
	}
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend(h);
	}
	// The item, or empty once the channel is closed and drained.
	std::optional<T> await_resume() noexcept
	{
		if (result_ != 0)
			return std::nullopt;
		return item_;
	}

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_channel_recv_init(&future_, ch_, &item_);
	}

	sb_channel *ch_;
	T item_{};
};

// A bounded channel of T over storage the caller owns (syncband/channel.h):
//
//   int slots[64];
//   sb::channel<int> ch(slots);
//   co_await ch.send(42);                  // 0, or -EPIPE once closed
//   std::optional<int> v = co_await ch.recv(); // empty: closed and drained
//
// Items are copied as bytes, so T must be trivially copyable.  A coroutine
// destroyed while it waits cancels its future: an unsent item stays unsent,
// and an item already handed to a destroyed receiver is dropped with it.
template <class T>
class channel {
	static_assert(std::is_trivially_copyable<T>::value,
		      "sb::channel<T> copies items as bytes: T must be trivially copyable");

public:
	// `storage` holds `capacity` items (nullptr for a rendezvous channel,
	// capacity 0).  error() says whether init succeeded.
	channel(T *storage, std::size_t capacity) noexcept
		: error_(sb_channel_init(&ch_, storage, sizeof(T), capacity))
	{
	}
	template <std::size_t N>
	explicit channel(T (&storage)[N]) noexcept : channel(storage, N)
	{
	}
	channel(const channel &) = delete;
	channel &operator=(const channel &) = delete;
	// Every future on it must have completed or been cancelled.
	~channel()
	{
		if (error_ == 0)
			sb_channel_destroy(&ch_);
	}

	// 0, or init's negative errno (the channel is then unusable).
	int error() const noexcept { return error_; }

	int try_send(const T &item) noexcept { return sb_channel_try_send(&ch_, &item); }
	// Evicts the oldest item into `evicted` when full: 0, 1 (evicted), or -errno.
	int force_send(const T &item, T &evicted) noexcept
	{
		return sb_channel_force_send(&ch_, &item, &evicted);
	}
	int try_recv(T &item) noexcept { return sb_channel_try_recv(&ch_, &item); }
	int send_blocking(const T &item, std::uint64_t timeout_ns = SB_TIMEOUT_INFINITE) noexcept
	{
		return sb_channel_send_blocking(&ch_, &item, timeout_ns);
	}
	int recv_blocking(T &item, std::uint64_t timeout_ns = SB_TIMEOUT_INFINITE) noexcept
	{
		return sb_channel_recv_blocking(&ch_, &item, timeout_ns);
	}

	// co_await ch.send(item): 0, or -EPIPE (closed; not sent).
	send_awaiter<T> send(const T &item) noexcept { return send_awaiter<T>(ch_, item); }
	// co_await ch.recv(): the oldest item, or empty once closed and drained.
	recv_awaiter<T> recv() noexcept { return recv_awaiter<T>(ch_); }

	void close() noexcept { sb_channel_close(&ch_); }
	bool is_closed() const noexcept { return sb_channel_is_closed(&ch_); }
	std::size_t size() const noexcept { return sb_channel_len(&ch_); }
	std::size_t capacity() const noexcept { return sb_channel_capacity(&ch_); }
	sb_channel *native() noexcept { return &ch_; }

private:
	int error_;
	sb_channel ch_;
};

// -------------------------------------------------------------- broadcast

// What a broadcast receive gives (sb::broadcast_result<T>), one of:
//   T       the receiver's next item;
//   lagged  a lagging broadcast overwrote `missed` items before this
//           receiver read them; its next receive gets the oldest item held;
//   closed  the broadcast is closed and this receiver has read everything
//           (or it never subscribed: see broadcast_receiver::error()).
// A variant rather than an optional: a lag is neither an item nor the end,
// and a loop that stops on "no item" would stop on the first lag.
struct lagged {
	std::uint64_t missed;
};
struct closed {};

template <class T>
using broadcast_result = std::variant<T, lagged, closed>;

enum class overflow : int {
	lagging = SB_BROADCAST_LAGGING,           // sends never wait; slow receivers lag
	backpressure = SB_BROADCAST_BACKPRESSURE, // sends wait for the slowest receiver
};

template <class T, std::size_t Capacity>
class broadcast;
template <class T>
class broadcast_receiver;

namespace detail {
// A receive's C result as a broadcast_result (-EINVAL, not subscribed, ends
// the stream as -EPIPE does).
template <class T>
broadcast_result<T> broadcast_outcome(int r, const T &item,
				      const sb_broadcast_receiver *rx) noexcept
{
	if (r == 0)
		return broadcast_result<T>(std::in_place_index<0>, item);
	if (r == -EOVERFLOW)
		return broadcast_result<T>(std::in_place_index<1>,
					   lagged{ sb_broadcast_receiver_missed(rx) });
	return broadcast_result<T>(std::in_place_index<2>);
}
} // namespace detail

// co_await of bc.send(item): 0 (sent to every subscriber) or -EPIPE
// (closed; not sent).
template <class T>
class broadcast_send_awaiter
	: public detail::send_awaiter_base<detail::broadcast_send_ops, T> {
public:
	broadcast_send_awaiter(sb_broadcast &bc, const T &item) noexcept
		: detail::send_awaiter_base<detail::broadcast_send_ops, T>(bc, item)
	{
	}
};

template <class T>
class broadcast_recv_awaiter : public detail::future_awaiter<sb_broadcast_recv> {
public:
	explicit broadcast_recv_awaiter(sb_broadcast_receiver &rx) noexcept
		: future_awaiter(), rx_(&rx)
	{
	}
	bool await_ready() noexcept
	{
		result_ = sb_broadcast_try_recv(rx_, &item_);
		return result_ != -EAGAIN;
	}
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend(h);
	}
	broadcast_result<T> await_resume() noexcept
	{
		return detail::broadcast_outcome(result_, item_, rx_);
	}

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_broadcast_recv_init(&future_, rx_, &item_);
	}

	sb_broadcast_receiver *rx_;
	T item_{};
};

// A bounded broadcast of T (syncband/broadcast.h): every item sent goes to
// every subscribed sb::broadcast_receiver, through a ring of `Capacity`
// slots held in the object itself.
//
//   sb::broadcast<int, 64> bc(sb::overflow::backpressure);
//   sb::broadcast_receiver<int> rx(bc);     // subscribed while it lives
//   co_await bc.send(42);                   // 0, or -EPIPE once closed
//   sb::broadcast_result<int> r = co_await rx.recv(); // int, sb::lagged or sb::closed
//
// Items are copied as bytes, so T must be trivially copyable.  Not movable
// (receivers point at it); every receiver must be gone, and every send
// completed, before it is destroyed.
template <class T, std::size_t Capacity>
class broadcast {
	static_assert(std::is_trivially_copyable<T>::value,
		      "sb::broadcast<T> copies items as bytes: T must be trivially copyable");
	static_assert(!std::is_same_v<T, lagged> && !std::is_same_v<T, closed>,
		      "sb::broadcast<T>: T must differ from sb::lagged and sb::closed");
	static_assert(Capacity >= 1 && Capacity <= SB_BROADCAST_MAX_CAPACITY,
		      "sb::broadcast<T, Capacity>: Capacity is 1 to SB_BROADCAST_MAX_CAPACITY");
	static_assert(sizeof(T) <= UINT32_MAX, "sb::broadcast<T>: T is too large an item");

public:
	// The static_asserts rule out every error init reports: it cannot fail.
	explicit broadcast(overflow policy = overflow::lagging) noexcept
	{
		static_cast<void>(sb_broadcast_init(&bc_, slots_, sizeof(T), Capacity,
						    static_cast<int>(policy)));
	}
	broadcast(const broadcast &) = delete;
	broadcast &operator=(const broadcast &) = delete;
	~broadcast() { static_cast<void>(sb_broadcast_destroy(&bc_)); }

	// 0, -EAGAIN (back-pressure: the ring is full for some receiver, or
	// senders wait) or -EPIPE.
	int try_send(const T &item) noexcept { return sb_broadcast_try_send(&bc_, &item); }
	// 0, -ETIMEDOUT (not sent) or -EPIPE; blocks the calling thread.
	int send_blocking(const T &item, std::uint64_t timeout_ns = SB_TIMEOUT_INFINITE) noexcept
	{
		return sb_broadcast_send_blocking(&bc_, &item, timeout_ns);
	}
	// co_await bc.send(item): 0, or -EPIPE (closed; not sent).  With
	// back-pressure it waits for room, first come, first served.  Cut short
	// (sb::timeout, sb::when_any, sb::stoppable), it completes with 0 when
	// its item had gone in meanwhile, and is dropped (not sent) otherwise.
	broadcast_send_awaiter<T> send(const T &item) noexcept
	{
		return broadcast_send_awaiter<T>(bc_, item);
	}

	// Ends the stream: sends fail with -EPIPE, and each receiver gets what
	// it has not read, then sb::closed.  Idempotent.
	void close() noexcept { sb_broadcast_close(&bc_); }
	bool is_closed() const noexcept { return sb_broadcast_is_closed(&bc_); }
	static constexpr std::size_t capacity() noexcept { return Capacity; }
	std::size_t subscribers() const noexcept { return sb_broadcast_subscribers(&bc_); }
	sb_broadcast *native() noexcept { return &bc_; }

private:
	// What init requires: the largest power of two dividing the item size,
	// up to 16 (and T's own alignment, for the items as T).
	static constexpr std::size_t slot_align = (sizeof(T) & (~sizeof(T) + 1)) < 16
							  ? (sizeof(T) & (~sizeof(T) + 1))
							  : 16;
	alignas(T) alignas(slot_align) unsigned char slots_[sizeof(T) * Capacity];
	sb_broadcast bc_;
};

// A subscription to an sb::broadcast<T, N>: subscribed from its constructor
// to its destructor (or unsubscribe()), it receives every item sent
// meanwhile, in order.  Not movable: the broadcast links it into its
// subscriber list.  One reader's: at most one receive in flight, and its
// receives, unsubscribe and missed() never run concurrently.  Every receive
// of it must have completed or been cancelled before it is destroyed (a
// coroutine's receiver declared before its co_await always is).
template <class T>
class broadcast_receiver {
public:
	template <std::size_t N>
	explicit broadcast_receiver(broadcast<T, N> &bc) noexcept
		: error_(sb_broadcast_subscribe(bc.native(), &rx_))
	{
	}
	broadcast_receiver(const broadcast_receiver &) = delete;
	broadcast_receiver &operator=(const broadcast_receiver &) = delete;
	~broadcast_receiver() { static_cast<void>(unsubscribe()); }

	// 0, or -EPIPE: the broadcast was closed already, so the receiver is
	// not subscribed and every receive gives sb::closed.
	int error() const noexcept { return error_; }

	// co_await rx.recv(): the next item, sb::lagged or sb::closed.  A
	// cancelled receive (a destroyed coroutine, a timeout) takes nothing:
	// the item stays this receiver's next.
	broadcast_recv_awaiter<T> recv() noexcept { return broadcast_recv_awaiter<T>(rx_); }
	// As sb_broadcast_try_recv / _recv_blocking: 0, -EAGAIN (nothing new) or
	// -ETIMEDOUT, -EOVERFLOW (lagged: see missed()), -EPIPE, or -EINVAL
	// (not subscribed).
	int try_recv(T &item) noexcept { return sb_broadcast_try_recv(&rx_, &item); }
	int recv_blocking(T &item, std::uint64_t timeout_ns = SB_TIMEOUT_INFINITE) noexcept
	{
		return sb_broadcast_recv_blocking(&rx_, &item, timeout_ns);
	}

	// Items sent since its cursor (above the capacity once it lagged).
	std::uint64_t unread() const noexcept { return sb_broadcast_receiver_unread(&rx_); }
	// What the receive that last reported a lag missed.
	std::uint64_t missed() const noexcept { return sb_broadcast_receiver_missed(&rx_); }
	// Unsubscribes now: 0, -EINVAL (not subscribed) or -EBUSY (a receive
	// of it waits; it stays subscribed).  What it had not read is no longer
	// held for it, so back-pressured senders go on.
	int unsubscribe() noexcept { return sb_broadcast_unsubscribe(&rx_); }
	sb_broadcast_receiver *native() noexcept { return &rx_; }

private:
	sb_broadcast_receiver rx_{}; // zeroed: not subscribed; before error_
	int error_;
};

// ---------------------------------------------------------------- watch

template <class T>
class watch;

class watch_changed_awaiter : public detail::future_awaiter<sb_watch_changed> {
public:
	explicit watch_changed_awaiter(sb_watch_receiver &rx) noexcept
		: future_awaiter(), rx_(&rx)
	{
	}
	// One acquire load.
	bool await_ready() noexcept
	{
		result_ = sb_watch_try_changed(rx_);
		return result_ != -EAGAIN;
	}
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		prepare();
		return suspend(h);
	}
	// True: a newer value exists.  False: closed and the last value read
	// (or the receiver is not subscribed).
	bool await_resume() noexcept { return result_ == 0; }

private:
	friend struct detail::select_access;
	// Initialises the future, for this await or a when_any's select.
	void prepare() noexcept
	{
		sb_watch_changed_init(&future_, rx_);
	}

	sb_watch_receiver *rx_;
};

// One value of T with a version (syncband/watch.h), held in the object
// itself; receivers wait for it to change and read the latest.
//
//   sb::watch<config> cfg(initial);
//   sb::watch_receiver<config> rx(cfg);
//   for (;;) {
//           bool more = co_await rx.changed(); // false once closed and read
//           if (!more)
//                   break;
//           apply(rx.read());               // the latest value, never torn
//   }
//   cfg.send(next);                         // elsewhere: 0, or -EPIPE once closed
//
// T must be trivially copyable (copied as bytes).  Not movable (receivers
// point at it); every receiver must be gone before it is destroyed.
template <class T>
class watch {
	static_assert(std::is_trivially_copyable<T>::value,
		      "sb::watch<T> copies the value as bytes: T must be trivially copyable");

public:
	// Init cannot fail: the storage is here and sizeof(T) is in range.
	explicit watch(const T &initial) noexcept : value_(initial)
	{
		static_cast<void>(sb_watch_init(&w_, &value_, sizeof(T)));
	}
	watch(const watch &) = delete;
	watch &operator=(const watch &) = delete;
	~watch() { static_cast<void>(sb_watch_destroy(&w_)); }

	// Replaces the value and wakes every waiting changed(): 0 or -EPIPE.
	int send(const T &value) noexcept { return sb_watch_send(&w_, &value); }
	// Calls modify(T &value) under the watch's lock: it may change the value
	// in place and returns whether receivers are told (the version grows).
	// 1 (told), 0 (not told) or -EPIPE (closed: not called).  modify must
	// be noexcept, short, and must not touch this watch or its receivers.
	template <class F>
	int send_if(F &&modify) noexcept
	{
		using Fn = std::remove_reference_t<F>;
		static_assert(std::is_nothrow_invocable_r_v<bool, Fn &, T &>,
			      "sb::watch::send_if: modify is a noexcept callable bool(T &)");
		void *arg = const_cast<void *>(static_cast<const void *>(std::addressof(modify)));
		return sb_watch_send_if(&w_, &trampoline<Fn>, arg);
	}
	// Ends the stream: waiting changed() resume with false once their
	// receiver has read the last value.  Idempotent.
	void close() noexcept { sb_watch_close(&w_); }
	bool is_closed() const noexcept { return sb_watch_is_closed(&w_); }
	std::size_t version() const noexcept { return sb_watch_version(&w_); }
	sb_watch *native() noexcept { return &w_; }

private:
	template <class Fn>
	static bool trampoline(void *value, void *arg) noexcept
	{
		return (*static_cast<Fn *>(arg))(*static_cast<T *>(value));
	}

	T value_; // the watch's storage: written under its lock only
	sb_watch w_;
};

// A subscription to an sb::watch<T>, from its constructor to its destructor
// (or unsubscribe()): it has seen the version current at subscribe.  One
// thread at a time uses it.  Movable while no changed() of it is pending
// (a pending one holds its address); a moved-from receiver is not
// subscribed.  Every changed() must have completed or been cancelled
// before it is destroyed.
template <class T>
class watch_receiver {
public:
	// Subscribes: cannot fail on a live watch, closed or not.
	explicit watch_receiver(watch<T> &w) noexcept
	{
		static_cast<void>(sb_watch_subscribe(w.native(), &rx_));
	}
	watch_receiver(watch_receiver &&o) noexcept
		: rx_(std::exchange(o.rx_, sb_watch_receiver{}))
	{
	}
	watch_receiver &operator=(watch_receiver &&o) noexcept
	{
		if (this != &o) {
			static_cast<void>(unsubscribe());
			rx_ = std::exchange(o.rx_, sb_watch_receiver{});
		}
		return *this;
	}
	watch_receiver(const watch_receiver &) = delete;
	watch_receiver &operator=(const watch_receiver &) = delete;
	~watch_receiver() { static_cast<void>(unsubscribe()); }

	// The current value, never torn; its version is now seen.  A receiver
	// that is not subscribed reads T{}.
	T read() noexcept
	{
		T value{};
		static_cast<void>(sb_watch_read(&rx_, &value));
		return value;
	}
	// co_await rx.changed(): true once a version newer than the one it last
	// read exists (at once if one does), false once the watch is closed
	// and it has read the last value.  Marks nothing seen: read() does.
	// Cancelled (a destroyed coroutine, a timeout), it loses nothing.
	watch_changed_awaiter changed() noexcept { return watch_changed_awaiter(rx_); }
	// As sb_watch_try_changed / _changed_blocking: 0 (changed), -EAGAIN or
	// -ETIMEDOUT, -EPIPE, -EINVAL (not subscribed).
	int try_changed() const noexcept { return sb_watch_try_changed(&rx_); }
	int changed_blocking(std::uint64_t timeout_ns = SB_TIMEOUT_INFINITE) noexcept
	{
		return sb_watch_changed_blocking(&rx_, timeout_ns);
	}
	// The version it last read (or saw at subscribe).
	std::size_t seen() const noexcept { return sb_watch_seen(&rx_); }
	// Unsubscribes now: 0, -EINVAL (not subscribed) or -EBUSY (a changed()
	// of it is pending; it stays subscribed).
	int unsubscribe() noexcept { return sb_watch_unsubscribe(&rx_); }
	sb_watch_receiver *native() noexcept { return &rx_; }

private:
	sb_watch_receiver rx_{}; // zeroed: not subscribed
};

// Any syncband future the caller initialised (an sb_deadline, say), through
// its sb_future_ops: co_await sb::poll(&f, &ops) gives its result.  If the
// coroutine is destroyed while it waits, the future is cancelled.
class poll_awaiter : public detail::awaiter_core {
public:
	poll_awaiter(void *future, const sb_future_ops *ops) noexcept : fut_(future), ops_(ops) {}
	poll_awaiter(poll_awaiter &&o) noexcept : awaiter_core(), fut_(o.fut_), ops_(o.ops_) {}
	~poll_awaiter()
	{
		if (pending())
			ops_->cancel(fut_);
	}
	bool await_ready() noexcept { return false; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		return suspend(h, &detail::ops_for<&poll_again, &cancel_wait>,
			       [this](const sb_waker *w) { return ops_->poll(fut_, w); });
	}
	int await_resume() noexcept { return result_; }

private:
	static int poll_again(pending_op *op, const sb_waker *w) noexcept
	{
		auto *a = static_cast<poll_awaiter *>(op);
		return a->settle(a->ops_->poll(a->fut_, w));
	}
	static bool cancel_wait(pending_op *op) noexcept
	{
		auto *a = static_cast<poll_awaiter *>(op);
		a->ops_->cancel(a->fut_);
		sb_waker noop = sb_waker_noop();
		return a->settle_cancelled(a->ops_->poll(a->fut_, &noop));
	}

	friend struct detail::select_access;
	void *fut_;
	const sb_future_ops *ops_;
};

inline poll_awaiter poll(void *future, const sb_future_ops *ops) noexcept
{
	return poll_awaiter(future, ops);
}

// A reference on the current task, for the loop's own timers and events:
// wake() queues a poll of the task, as its waker does (syncband/loop.h).
// Movable; dropping it releases the reference.
class waker {
public:
	waker() noexcept : w_{ nullptr, nullptr } {}
	explicit waker(const sb_waker &borrowed) noexcept : w_(sb_waker_clone(&borrowed)) {}
	waker(waker &&o) noexcept : w_(std::exchange(o.w_, sb_waker{ nullptr, nullptr })) {}
	waker &operator=(waker &&o) noexcept
	{
		if (this != &o) {
			reset();
			w_ = std::exchange(o.w_, sb_waker{ nullptr, nullptr });
		}
		return *this;
	}
	waker(const waker &) = delete;
	waker &operator=(const waker &) = delete;
	~waker() { reset(); }

	explicit operator bool() const noexcept { return w_.vtable != nullptr; }
	// Wakes the task, keeping the reference.  Any thread.
	void wake() const noexcept
	{
		if (w_.vtable)
			sb_waker_wake_by_ref(&w_);
	}
	void reset() noexcept
	{
		if (w_.vtable)
			sb_waker_drop(std::exchange(w_, sb_waker{ nullptr, nullptr }));
	}

private:
	sb_waker w_;
};

// co_await sb::current_waker(): a waker of the running task; never suspends.
struct current_waker_awaiter {
	detail::task_state *t = nullptr;
	bool await_ready() noexcept { return false; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		t = h.promise().syncband_state()->task;
		return false;
	}
	waker await_resume() noexcept
	{
		sb_waker w = sb_loop_task_waker(&t->lt);
		return waker(w);
	}
};

inline current_waker_awaiter current_waker() noexcept
{
	return {};
}

// co_await sb::yield(): lets every other queued task run first.
class yield_awaiter : detail::pending_op {
public:
	yield_awaiter() noexcept : pending_op{ &detail::ops_for<&done, &undo> } {}
	yield_awaiter(yield_awaiter &&) noexcept : yield_awaiter() {}
	bool await_ready() noexcept { return false; }
	template <class Promise>
	void await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		detail::strand *s = h.promise().syncband_state();
		s->waiting = this;
		s->resume_at = h;
		sb_loop_wake(&s->task->lt);
	}
	void await_resume() noexcept {}

private:
	static int done(pending_op *, const sb_waker *) noexcept { return 0; }
	// A cut-short yield is not resumed: a loop of yields would never end.
	static bool undo(pending_op *) noexcept { return false; }
};

inline yield_awaiter yield() noexcept
{
	return {};
}


// ------------------------------------------------------------- combinators

namespace detail {

template <class A>
struct is_task : std::false_type {};
template <class T>
struct is_task<task<T>> : std::true_type {};

// What co_await on an A gives.
template <class A>
struct awaited {
	using type = decltype(std::declval<A &>().await_resume());
};
template <class T>
struct awaited<task<T>> {
	using type = T;
};
template <class A>
using awaited_t = typename awaited<std::remove_cvref_t<A>>::type;

// A result as a combinator holds it: void becomes std::monostate.
template <class R>
using unit_or = std::conditional_t<std::is_void_v<R>, std::monostate, R>;
// A result that may not come: std::optional, or a bool for void.
template <class R>
using maybe = std::conditional_t<std::is_void_v<R>, bool, std::optional<R>>;

// An awaiter in a task of its own, so that a combinator can run it as a
// branch; a task is one already.
template <class A>
task<awaited_t<A>> await_one(A a)
{
	co_return co_await a;
}

template <class A>
auto as_task(A &&a)
{
	if constexpr (is_task<std::remove_cvref_t<A>>::value)
		return std::move(a);
	else
		return await_one<std::remove_cvref_t<A>>(std::move(a));
}

template <class T>
unit_or<T> take_result(task<T> &t)
{
	auto h = task_access::handle(t);
	h.promise().rethrow_if_failed();
	if constexpr (std::is_void_v<T>)
		return std::monostate{};
	else
		return h.promise().take();
}

// The branches of a combinator: N tasks, each on a strand of its own within
// the awaiting task, polled with the task's waker.
template <std::size_t N>
class branches {
public:
	template <class T>
	void bind(std::size_t i, task<T> &t, task_state *owner) noexcept
	{
		auto h = task_access::handle(t);
		strands_[i] = strand{ owner, nullptr, &strands_[i].unused, h, nullptr };
		h.promise().bind(&strands_[i], nullptr);
		handles_[i] = h;
	}
	// Finished, or destroyed (forget).
	bool done(std::size_t i) const noexcept { return !handles_[i] || handles_[i].done(); }
	// Polls branch i, resuming it once what it waits on completed: true
	// once it has finished.
	bool advance(std::size_t i, const sb_waker *w) noexcept
	{
		return !step(&strands_[i], w) && handles_[i].done();
	}
	// See detail::cut: true when the branch finished after all.
	bool cut(std::size_t i) noexcept { return detail::cut(&strands_[i], handles_[i]); }
	// Its task was destroyed.
	void forget(std::size_t i) noexcept { handles_[i] = nullptr; }

private:
	std::array<strand, N> strands_{};
	std::array<std::coroutine_handle<>, N> handles_{};
};

// Where an awaiter that polls branches suspends its coroutine.
template <class Promise>
strand *strand_of(std::coroutine_handle<Promise> h) noexcept
{
	return h.promise().syncband_state();
}

inline bool park(strand *s, pending_op *op, std::coroutine_handle<> h, int first_poll) noexcept
{
	if (first_poll != SB_PENDING)
		return false;
	s->waiting = op;
	s->resume_at = h;
	return true;
}

} // namespace detail

// co_await sb::when_all(a, b, ...): see the header comment.
template <class... Ts>
class when_all_awaiter : detail::pending_op {
	static constexpr std::size_t N = sizeof...(Ts);
	using indices = std::index_sequence_for<Ts...>;

public:
	explicit when_all_awaiter(task<Ts>... ts) noexcept
		: pending_op{ &detail::ops_for<&poll_all, &cancel_all> }, tasks_(std::move(ts)...)
	{
	}
	when_all_awaiter(when_all_awaiter &&o) noexcept
		: pending_op{ &detail::ops_for<&poll_all, &cancel_all> },
		  tasks_(std::move(o.tasks_))
	{
	}
	when_all_awaiter(const when_all_awaiter &) = delete;
	when_all_awaiter &operator=(const when_all_awaiter &) = delete;

	bool await_ready() noexcept { return N == 0; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		detail::strand *s = detail::strand_of(h);
		bind_all(s->task, indices{});
		left_ = N;
		return detail::park(s, this, h, poll_all(this, &s->task->waker));
	}
	// Every result in order; the first branch's exception, rethrown.
	std::tuple<detail::unit_or<Ts>...> await_resume() { return take_all(indices{}); }

private:
	template <std::size_t... I>
	void bind_all(detail::task_state *owner, std::index_sequence<I...>) noexcept
	{
		(b_.bind(I, std::get<I>(tasks_), owner), ...);
	}
	template <std::size_t... I>
	std::tuple<detail::unit_or<Ts>...> take_all(std::index_sequence<I...>)
	{
		// Braced: evaluated in order, so the first failure is rethrown.
		return std::tuple<detail::unit_or<Ts>...>{ detail::take_result(std::get<I>(tasks_))... };
	}
	template <std::size_t... I>
	void destroy(std::size_t i, std::index_sequence<I...>) noexcept
	{
		((I == i ? std::get<I>(tasks_).reset() : void()), ...);
		b_.forget(i);
	}

	static int poll_all(pending_op *op, const sb_waker *w) noexcept
	{
		auto *a = static_cast<when_all_awaiter *>(op);
		for (std::size_t i = 0; i < N; i++)
			if (!a->b_.done(i) && a->b_.advance(i, w))
				a->left_--;
		return a->left_ ? SB_PENDING : 0;
	}
	static bool cancel_all(pending_op *op) noexcept
	{
		auto *a = static_cast<when_all_awaiter *>(op);
		bool all = true;
		for (std::size_t i = 0; i < N; i++) {
			if (a->b_.done(i) || a->b_.cut(i))
				continue;
			a->destroy(i, indices{});
			all = false;
		}
		return all;
	}

	std::tuple<task<Ts>...> tasks_;
	detail::branches<N> b_;
	std::size_t left_ = 0;
};

// Runs every awaitable (an awaiter or an sb::task, moved in) concurrently
// within the awaiting task and resumes it once all have completed.
template <class... As>
when_all_awaiter<detail::awaited_t<As>...> when_all(As... as)
{
	return when_all_awaiter<detail::awaited_t<As>...>(detail::as_task(std::move(as))...);
}

// co_await sb::when_any(a, b, ...): see the header comment.
template <class... Ts>
class when_any_awaiter : detail::pending_op {
	static constexpr std::size_t N = sizeof...(Ts);
	static_assert(N > 0, "sb::when_any needs at least one awaitable");
	using indices = std::index_sequence_for<Ts...>;
	static constexpr std::size_t none = N;

public:
	explicit when_any_awaiter(task<Ts>... ts) noexcept
		: pending_op{ &detail::ops_for<&poll_any, &cancel_any> }, tasks_(std::move(ts)...)
	{
	}
	when_any_awaiter(when_any_awaiter &&o) noexcept
		: pending_op{ &detail::ops_for<&poll_any, &cancel_any> },
		  tasks_(std::move(o.tasks_))
	{
	}
	when_any_awaiter(const when_any_awaiter &) = delete;
	when_any_awaiter &operator=(const when_any_awaiter &) = delete;

	bool await_ready() noexcept { return false; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		detail::strand *s = detail::strand_of(h);
		bind_all(s->task, indices{});
		return detail::park(s, this, h, poll_any(this, &s->task->waker));
	}
	// The winner's result, at the winner's index; its exception, rethrown.
	std::variant<detail::unit_or<Ts>...> await_resume() { return take_winner(indices{}); }

private:
	using result = std::variant<detail::unit_or<Ts>...>;

	template <std::size_t... I>
	void bind_all(detail::task_state *owner, std::index_sequence<I...>) noexcept
	{
		(b_.bind(I, std::get<I>(tasks_), owner), ...);
	}
	template <std::size_t... I>
	result take_winner(std::index_sequence<I...>)
	{
		std::optional<result> r;
		((I == winner_ ? static_cast<void>(r.emplace(std::in_place_index<I>,
							       detail::take_result(std::get<I>(tasks_))))
			       : void()),
		 ...);
		return std::move(*r);
	}
	template <std::size_t... I>
	void destroy(std::size_t i, std::index_sequence<I...>) noexcept
	{
		((I == i ? std::get<I>(tasks_).reset() : void()), ...);
		b_.forget(i);
	}
	// Cuts every branch but the winner short and destroys it: a loser
	// whose cancel found it done is dropped with its result.
	void drop_losers() noexcept
	{
		for (std::size_t i = 0; i < N; i++) {
			if (i == winner_)
				continue;
			if (!b_.done(i))
				static_cast<void>(b_.cut(i));
			destroy(i, indices{});
		}
	}

	static int poll_any(pending_op *op, const sb_waker *w) noexcept
	{
		auto *a = static_cast<when_any_awaiter *>(op);
		std::size_t first = a->rotor_;
		a->rotor_ = (first + 1) % N;
		for (std::size_t k = 0; k < N; k++) {
			std::size_t i = (first + k) % N;
			if (a->b_.advance(i, w)) {
				a->winner_ = i;
				a->drop_losers();
				return 0;
			}
		}
		return SB_PENDING;
	}
	// The awaiting coroutine is cut short: the first branch whose cancel
	// finds it done wins after all.
	static bool cancel_any(pending_op *op) noexcept
	{
		auto *a = static_cast<when_any_awaiter *>(op);
		for (std::size_t i = 0; i < N && a->winner_ == none; i++)
			if (a->b_.cut(i))
				a->winner_ = i;
		if (a->winner_ == none) {
			for (std::size_t i = 0; i < N; i++)
				a->destroy(i, indices{});
			return false;
		}
		a->drop_losers();
		return true;
	}

	std::tuple<task<Ts>...> tasks_;
	detail::branches<N> b_;
	std::size_t rotor_ = 0;
	std::size_t winner_ = none;
};

namespace detail {

// What a when_any's select needs of a plain future awaiter of this header.
struct select_access {
	template <class A>
	static sb_select_case select_case(A &a) noexcept
	{
		if constexpr (std::is_same_v<A, poll_awaiter>) {
			return sb_select_case{ a.fut_, a.ops_, nullptr, 0 };
		} else {
			a.prepare();
			return sb_select_case{ &a.future_, ops_of(&a.future_), nullptr, 0 };
		}
	}
	// The winner: its result as a poll would have left it, then resumed.
	template <class A>
	static unit_or<awaited_t<A>> resume(A &a, int r) noexcept
	{
		a.result_ = r;
		if constexpr (std::is_void_v<awaited_t<A>>) {
			a.await_resume();
			return std::monostate{};
		} else {
			return a.await_resume();
		}
	}
};

template <class A>
struct is_broadcast_send : std::false_type {};
template <class T>
struct is_broadcast_send<broadcast_send_awaiter<T>> : std::true_type {};

// An awaiter that is one C future and nothing more, whose cancel undoes it
// or hands its grant on, so that a select can race it: every awaiter of
// this header but a condvar wait (a loser would leave its guard's mutex
// unheld) and a broadcast send (its item may have gone in), and no
// combinator.
template <class A>
inline constexpr bool selectable = std::is_base_of_v<awaiter_core, A> &&
				   !std::is_same_v<A, condvar_wait_awaiter> &&
				   !is_broadcast_send<A>::value;

} // namespace detail

// co_await sb::when_any(a, b, ...) over plain future awaiters: one C select
// (syncband/select.h) whose cases are their futures, held here.
template <class... As>
class select_awaiter : detail::pending_op {
	static constexpr std::size_t N = sizeof...(As);
	static_assert(N > 0 && N <= SB_SELECT_MAX_CASES, "sb::when_any: 1 to SB_SELECT_MAX_CASES");
	using indices = std::index_sequence_for<As...>;
	enum class phase : unsigned char { idle, pending, done, cancelled };

public:
	using result = std::variant<detail::unit_or<detail::awaited_t<As>>...>;

	explicit select_awaiter(As... as) noexcept
		: pending_op{ &detail::ops_for<&poll_select, &cancel_select> },
		  awaiters_(std::move(as)...)
	{
	}
	select_awaiter(select_awaiter &&o) noexcept
		: pending_op{ &detail::ops_for<&poll_select, &cancel_select> },
		  awaiters_(std::move(o.awaiters_))
	{
	}
	select_awaiter(const select_awaiter &) = delete;
	select_awaiter &operator=(const select_awaiter &) = delete;
	// A destroyed coroutine: every case is cancelled (each hands on what it
	// was granted); an item that moved meanwhile goes with the coroutine.
	~select_awaiter()
	{
		if (phase_ == phase::pending)
			static_cast<void>(sb_select_cancel(&sel_));
	}

	// Not even the uncontended paths: taking one would be an effect that
	// the select could not undo.  The first poll looks at every case first.
	bool await_ready() noexcept { return false; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		detail::strand *s = detail::strand_of(h);
		prepare(indices{});
		loop *l = s->task->owner;
		// Cannot fail: 1 to SB_SELECT_MAX_CASES cases, each set, no flag.
		static_cast<void>(sb_select_init(&sel_, cases_.data(), N,
						 l ? l->next_select_seed() : 0, 0));
		phase_ = phase::pending;
		return detail::park(s, this, h, poll_select(this, &s->task->waker));
	}
	// The winner's result, at the winner's index.
	result await_resume() noexcept { return take(indices{}); }

private:
	template <std::size_t... I>
	void prepare(std::index_sequence<I...>) noexcept
	{
		((cases_[I] = detail::select_access::select_case(std::get<I>(awaiters_))), ...);
	}
	template <std::size_t... I>
	result take(std::index_sequence<I...>) noexcept
	{
		auto winner = static_cast<std::size_t>(sb_select_index(&sel_));
		int r = sb_select_result(&sel_);
		std::optional<result> out;
		((I == winner ? static_cast<void>(out.emplace(
					std::in_place_index<I>,
					detail::select_access::resume(std::get<I>(awaiters_), r)))
			      : void()),
		 ...);
		return std::move(*out);
	}

	static int poll_select(pending_op *op, const sb_waker *w) noexcept
	{
		auto *a = static_cast<select_awaiter *>(op);
		if (sb_select_poll(&a->sel_, w) == SB_PENDING)
			return SB_PENDING;
		a->phase_ = phase::done; // a case won; the others are cancelled
		return 0;
	}
	static bool cancel_select(pending_op *op) noexcept
	{
		auto *a = static_cast<select_awaiter *>(op);
		bool won = sb_select_cancel(&a->sel_) == 0;
		a->phase_ = won ? phase::done : phase::cancelled;
		return won;
	}

	std::tuple<As...> awaiters_;
	std::array<sb_select_case, N> cases_;
	sb_select sel_;
	phase phase_ = phase::idle;
};

// Runs every awaitable (an awaiter or an sb::task, moved in) concurrently
// within the awaiting task until one completes; the others are cancelled.
// When every one is a plain future awaiter (detail::selectable), that is
// one C select over their futures (select_awaiter): exactly one takes
// effect.  Otherwise the branches are coroutines raced in turn
// (when_any_awaiter): see the header comment for what a loser may lose.
template <class... As>
auto when_any(As... as)
{
	if constexpr ((detail::selectable<As> && ...))
		return select_awaiter<As...>(std::move(as)...);
	else
		return when_any_awaiter<detail::awaited_t<As>...>(detail::as_task(std::move(as))...);
}

namespace detail {

// sb::timeout's trigger: a timer on the loop's timer_service.
struct deadline_trigger {
	explicit deadline_trigger(std::uint64_t ns) noexcept : ns_(ns) {}
	deadline_trigger(deadline_trigger &&o) noexcept : ns_(o.ns_) {}

	// True when it counts as fired already: the loop has no timers.
	bool arm(task_state *t) noexcept
	{
		svc_ = t->owner ? t->owner->timers() : nullptr;
		if (!svc_)
			return true;
		std::uint64_t now = svc_->now_ns();
		t_.deadline_ = ns_ > UINT64_MAX - now ? UINT64_MAX : now + ns_;
		t_.task_ = t;
		svc_->arm(t_);
		return false;
	}
	bool fired() const noexcept { return t_.fired_; }
	void disarm() noexcept
	{
		if (svc_ && !t_.fired_)
			svc_->disarm(t_);
		svc_ = nullptr;
	}

private:
	std::uint64_t ns_;
	timer t_;
	timer_service *svc_ = nullptr;
};

// sb::stoppable's trigger: a std::stop_callback that wakes the task, whose
// next poll (on the loop's thread) does the cancelling.
struct stop_trigger {
	struct on_stop {
		stop_trigger *self;
		void operator()() const noexcept
		{
			// Release: pairs with fired()'s acquire (the wake orders it too).
			self->stopped_.store(true, std::memory_order_release);
			sb_loop_wake(&self->task_->lt); // unfinished: the callback is registered
		}
	};

	explicit stop_trigger(std::stop_token t) noexcept : token_(std::move(t)) {}
	stop_trigger(stop_trigger &&o) noexcept : token_(std::move(o.token_)) {}

	bool arm(task_state *t) noexcept
	{
		if (token_.stop_requested())
			return true;
		task_ = t;
		callback_.emplace(token_, on_stop{ this }); // runs it now if stopped meanwhile
		return false;
	}
	// Acquire: pairs with on_stop's release.
	bool fired() const noexcept { return stopped_.load(std::memory_order_acquire); }
	// Returns once an on_stop running on another thread has returned.
	void disarm() noexcept { callback_.reset(); }

private:
	std::stop_token token_;
	std::atomic<bool> stopped_{ false };
	task_state *task_ = nullptr;
	std::optional<std::stop_callback<on_stop>> callback_;
};

} // namespace detail

// co_await sb::timeout(a, d) / sb::stoppable(a, token): see the header
// comment.  Trigger is what cuts the wait short.
template <class T, class Trigger>
class cut_short_awaiter : detail::pending_op {
public:
	cut_short_awaiter(task<T> t, Trigger trigger) noexcept
		: pending_op{ &detail::ops_for<&poll_one, &cancel_one> },
		  task_(std::move(t)), trigger_(std::move(trigger))
	{
	}
	cut_short_awaiter(cut_short_awaiter &&o) noexcept
		: pending_op{ &detail::ops_for<&poll_one, &cancel_one> }, task_(std::move(o.task_)),
		  trigger_(std::move(o.trigger_))
	{
	}
	cut_short_awaiter(const cut_short_awaiter &) = delete;
	cut_short_awaiter &operator=(const cut_short_awaiter &) = delete;
	~cut_short_awaiter() { trigger_.disarm(); }

	bool await_ready() noexcept { return false; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		detail::strand *s = detail::strand_of(h);
		b_.bind(0, task_, s->task);
		if (trigger_.arm(s->task)) {
			drop(); // cut short before it started
			return false;
		}
		return detail::park(s, this, h, poll_one(this, &s->task->waker));
	}
	// The result, or empty (false) when cut short; its exception, rethrown.
	detail::maybe<T> await_resume()
	{
		if (!task_)
			return detail::maybe<T>{};
		auto h = detail::task_access::handle(task_);
		h.promise().rethrow_if_failed();
		if constexpr (std::is_void_v<T>)
			return true;
		else
			return detail::maybe<T>(h.promise().take());
	}

private:
	void drop() noexcept
	{
		task_.reset();
		b_.forget(0);
	}
	static int poll_one(pending_op *op, const sb_waker *w) noexcept
	{
		auto *a = static_cast<cut_short_awaiter *>(op);
		if (!a->b_.advance(0, w) && !a->trigger_.fired())
			return SB_PENDING;
		// Done, or cut short (unless the cancel finds it done).
		a->trigger_.disarm();
		if (!a->b_.done(0) && !a->b_.cut(0))
			a->drop();
		return 0;
	}
	static bool cancel_one(pending_op *op) noexcept
	{
		auto *a = static_cast<cut_short_awaiter *>(op);
		a->trigger_.disarm();
		if (a->b_.cut(0))
			return true;
		a->drop();
		return false;
	}

	task<T> task_;
	Trigger trigger_;
	detail::branches<1> b_;
};

// Awaits `a` (an awaiter or an sb::task, moved in) until the loop's
// timer_service says `d` has passed: its result in a std::optional (a bool
// for void), empty when the deadline came first.
template <class A, class Rep, class Period>
cut_short_awaiter<detail::awaited_t<A>, detail::deadline_trigger>
timeout(A a, std::chrono::duration<Rep, Period> d)
{
	using std::chrono::nanoseconds;
	std::uint64_t ns = 0;
	if (d >= std::chrono::duration_cast<std::chrono::duration<Rep, Period>>(nanoseconds::max()))
		ns = UINT64_MAX;
	else if (d > d.zero())
		ns = static_cast<std::uint64_t>(std::chrono::duration_cast<nanoseconds>(d).count());
	return { detail::as_task(std::move(a)), detail::deadline_trigger(ns) };
}

// Awaits `a` (an awaiter or an sb::task, moved in) until a stop is
// requested on `token` (from any thread): its result in a std::optional (a
// bool for void), empty when the stop came first.
template <class A>
cut_short_awaiter<detail::awaited_t<A>, detail::stop_trigger> stoppable(A a, std::stop_token token)
{
	return { detail::as_task(std::move(a)), detail::stop_trigger(std::move(token)) };
}

// ------------------------------------------------------------- drivers

// An sb::loop driven by the calling thread: run() polls its tasks, sleeps
// while they wait (on a condition variable the doorbell signals), and keeps
// their sb::timeout deadlines on sb_now_ns()'s clock.
class run_loop : private timer_service, public loop {
public:
	run_loop() noexcept : loop(&ring, this, this) {}

	// Runs until every spawned task has finished and been released
	// (idle()); returns at once when none was spawned.  One thread at a
	// time, which is the loop's thread meanwhile.
	void run()
	{
		for (;;) {
			{
				std::lock_guard<std::mutex> g(mu_);
				rung_ = false; // cleared before run_ready, so no ring is lost
			}
			run_ready();
			fire_due();
			if (idle())
				return;
			sleep();
		}
	}

private:
	static void ring(void *ctx)
	{
		auto *self = static_cast<run_loop *>(ctx);
		std::lock_guard<std::mutex> g(self->mu_);
		self->rung_ = true;
		self->cv_.notify_one();
	}
	void sleep()
	{
		std::unique_lock<std::mutex> g(mu_);
		if (rung_)
			return;
		if (!head_) {
			cv_.wait(g);
			return;
		}
		std::uint64_t now = now_ns(), at = head_->deadline_ns();
		if (at <= now)
			return;
		constexpr std::uint64_t day = 86400 * SB_NSEC_PER_SEC;
		cv_.wait_for(g, std::chrono::nanoseconds(at - now < day ? at - now : day));
	}
	void fire_due() noexcept
	{
		std::uint64_t now = now_ns();
		while (head_ && head_->deadline_ns() <= now) {
			timer *t = head_;
			disarm(*t);
			t->fire();
		}
	}

	std::uint64_t now_ns() noexcept override { return sb_now_ns(); }
	// A list in deadline order (equal deadlines first armed, first fired).
	void arm(timer &t) noexcept override
	{
		timer **at = &head_, *prev = nullptr;
		while (*at && (*at)->deadline_ns() <= t.deadline_ns()) {
			prev = *at;
			at = &(*at)->next;
		}
		t.prev = prev;
		t.next = *at;
		if (*at)
			(*at)->prev = &t;
		*at = &t;
	}
	void disarm(timer &t) noexcept override
	{
		(t.prev ? t.prev->next : head_) = t.next;
		if (t.next)
			t.next->prev = t.prev;
		t.prev = t.next = nullptr;
	}

	std::mutex mu_;
	std::condition_variable cv_;
	bool rung_ = false;
	timer *head_ = nullptr;
};

namespace detail {
template <class A, class R>
task<> sync_wait_root(A &a, std::optional<unit_or<R>> &out, std::exception_ptr &error)
{
	try {
		if constexpr (std::is_void_v<R>) {
			co_await static_cast<A &&>(a);
			out.emplace();
		} else {
			out.emplace(co_await static_cast<A &&>(a));
		}
	} catch (...) {
		error = std::current_exception();
	}
}
} // namespace detail

// Blocks the calling thread until `a` (an sb::task or any awaitable here)
// completes, running it on an sb::run_loop of its own: its result, or its
// exception rethrown.  Not from a loop's thread while that loop has tasks:
// they would not run meanwhile.
template <class A>
detail::awaited_t<A> sync_wait(A &&a)
{
	using R = detail::awaited_t<A>;
	std::optional<detail::unit_or<R>> out;
	std::exception_ptr error;
	run_loop l;
	l.spawn(detail::sync_wait_root<A, R>(a, out, error));
	l.run();
	if (error)
		std::rethrow_exception(error);
	if constexpr (!std::is_void_v<R>)
		return std::move(*out);
}

} // namespace sb

#endif // C++20
#endif // SYNCBAND_SYNCBAND_HPP
