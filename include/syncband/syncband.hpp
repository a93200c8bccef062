// SPDX-License-Identifier: Apache-2.0
//
// syncband/syncband.hpp - C++20 coroutines on syncband, header only.
//
//   sb::task worker(sb_semaphore &slots, sb_mutex &m)
//   {
//           sb::permit p = co_await sb::acquire(slots);    // a permit, RAII
//           sb::mutex_guard g = co_await sb::lock(m);      // the mutex, RAII
//           sb::rwlock_guard r = co_await sb::read_lock(rw); // a read, RAII
//           ...
//   }                                                      // unlocked, released
//
//   static void ring(void *ctx) { uv_async_send(static_cast<uv_async_t *>(ctx)); }
//   sb::loop loop(ring, &async);          // any loop's doorbell
//   loop.spawn(worker(slots, m));
//   ... on the doorbell, on the loop's thread:  loop.run_ready();
//
// How the awaitables behave (sb::acquire, sb::lock, sb::read_lock,
// sb::write_lock, sb::wait on a condvar,
// an event, an auto-reset event or a latch, sb::arrive_and_wait on a barrier,
// sb::call_once on a once, ch.send / ch.recv on an sb::channel, sb::poll
// on any syncband future):
//   - await_ready tries the uncontended path (try_acquire, try_lock,
//     try_wait), so a free permit or mutex never suspends the coroutine.
//   - Otherwise await_suspend polls the future once with the task's waker;
//     if it is still pending the coroutine suspends.  Every wake queues the
//     task on its sb::loop, and the loop's run_ready polls the future again:
//     the coroutine resumes only once the future has completed (a condvar
//     wait that is notified and then waits for its mutex stays suspended).
//   - A coroutine is never resumed from inside a release, unlock, set or
//     notify on another thread, nor inline in the caller's: only by
//     run_ready, on the loop's thread (or at once, by await_suspend, when its
//     first poll completes).
//   - Destroying a suspended coroutine (loop::shutdown) cancels the future
//     it waits on: a permit, a mutex or a signal granted to it but not yet
//     resumed into goes back (to the next waiter), as the C cancel promises.
//   - sb::permit, sb::mutex_guard and sb::rwlock_guard release what they
//     hold when they go out of scope (or on release()/unlock()); all are
//     move-only.
//
// Tasks: an sb::task coroutine runs on the sb::loop it is spawned on, one
// poll at a time, on the loop's thread.  It may co_await only the awaitables
// here.  Its wake target (syncband/loop.h) is allocated apart from the
// coroutine frame, so a wake that arrives after the coroutine finished
// touches live memory; the loop frees it when the last waker clone goes.
// An exception that leaves a task calls std::terminate.
//
// The hook for other coroutine types: the awaitables call
// `h.promise().syncband_state()`, which returns the task's
// sb::detail::task_state; a promise that provides it (and resumes the
// coroutine from the state's poll, as sb::task's does) can await them too.
#ifndef SYNCBAND_SYNCBAND_HPP
#define SYNCBAND_SYNCBAND_HPP

#include <cerrno>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include <syncband/syncband.h>

namespace sb {

class loop;

namespace detail {

// What a suspended task waits on: polled again on every wake of the task.
struct pending_op {
	int (*poll)(pending_op *op, const sb_waker *w) noexcept;
};

// The part of a task that waker clones reach; refcounted through `lt` and
// freed by the loop (release) when the last reference is gone.
struct task_state {
	sb_loop_task lt;
	std::coroutine_handle<> frame;  // null once the coroutine frame is gone
	pending_op *waiting;            // the awaiter the coroutine is suspended at
	loop *owner;                    // null until spawned
	task_state *prev;               // the owner's list of unfinished tasks
	task_state *next;
};

inline task_state *state_of(sb_loop_task *lt) noexcept
{
	return SB_CONTAINER_OF(lt, task_state, lt);
}

inline int task_poll(sb_loop_task *lt, const sb_waker *w) noexcept;

inline void task_release(sb_loop_task *lt) noexcept
{
	delete state_of(lt);
}

inline task_state *new_task_state()
{
	task_state *s = new task_state{};
	sb_loop_task_init(&s->lt, task_poll, task_release);
	return s;
}

} // namespace detail

// A coroutine run by an sb::loop: `sb::task f() { ... co_return; }`.
class task {
public:
	struct promise_type {
		detail::task_state *state = detail::new_task_state();

		promise_type() = default;
		promise_type(const promise_type &) = delete;
		promise_type &operator=(const promise_type &) = delete;
		~promise_type();

		task get_return_object() noexcept
		{
			return task(std::coroutine_handle<promise_type>::from_promise(*this));
		}
		std::suspend_always initial_suspend() noexcept { return {}; }
		std::suspend_always final_suspend() noexcept { return {}; }
		void return_void() noexcept {}
		void unhandled_exception() noexcept { std::terminate(); }
		detail::task_state *syncband_state() noexcept { return state; }
	};

	task(task &&other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
	task &operator=(task &&other) noexcept
	{
		if (this != &other) {
			if (h_)
				h_.destroy();
			h_ = std::exchange(other.h_, nullptr);
		}
		return *this;
	}
	task(const task &) = delete;
	task &operator=(const task &) = delete;
	// A task never spawned is destroyed without having run.
	~task()
	{
		if (h_)
			h_.destroy();
	}

private:
	friend class loop;
	explicit task(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
	std::coroutine_handle<promise_type> h_;
};

// Runs sb::task coroutines on any event loop: `ring(ctx)` is the loop's
// doorbell (syncband/loop.h), called from any thread when tasks are queued
// and the loop should call run_ready() on its thread.  Every member but the
// ring runs on the loop's thread.
class loop {
public:
	loop(sb_loop_ring_fn ring, void *ctx) noexcept { sb_loop_init(&l_, ring, ctx); }
	loop(const loop &) = delete;
	loop &operator=(const loop &) = delete;
	// Call shutdown() and run_ready() until idle() before destroying it.
	~loop() = default;

	// Queues the coroutine's first step; it runs at the next run_ready().
	// A moved-from task is ignored.
	void spawn(task t) noexcept
	{
		if (!t.h_)
			return;
		detail::task_state *s = t.h_.promise().state;
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
			s->frame.destroy(); // unlinks s (promise_type's destructor)
			sb_loop_wake(&s->lt);
		}
	}

	sb_loop *native() noexcept { return &l_; }

private:
	friend struct task::promise_type;
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
	detail::task_state *live_ = nullptr;
};

inline task::promise_type::~promise_type()
{
	if (!state->owner) {
		delete state; // never spawned: nothing else references it
		return;
	}
	state->frame = nullptr;
	state->waiting = nullptr;
	state->owner->unlink(state);
}

inline int detail::task_poll(sb_loop_task *lt, const sb_waker *w) noexcept
{
	task_state *s = state_of(lt);
	if (!s->frame)
		return 0; // destroyed by loop::shutdown
	if (s->waiting) {
		if (s->waiting->poll(s->waiting, w) == SB_PENDING)
			return SB_PENDING;
		s->waiting = nullptr;
	}
	s->frame.resume();
	if (!s->frame.done())
		return SB_PENDING; // suspended at an awaiter, registered with `w`
	s->frame.destroy();
	return 0;
}

// ------------------------------------------------------------------ guards

// Permits of an sb_semaphore, released when it goes out of scope.  An
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
			release();
			sem_ = std::exchange(o.sem_, nullptr);
			n_ = std::exchange(o.n_, 0);
			error_ = o.error_;
		}
		return *this;
	}
	permit(const permit &) = delete;
	permit &operator=(const permit &) = delete;
	~permit() { release(); }

	explicit operator bool() const noexcept { return sem_ != nullptr; }
	// 0, or the acquire's negative errno (-ESHUTDOWN, -EINVAL).
	int error() const noexcept { return error_; }
	std::size_t count() const noexcept { return n_; }
	// Returns the permits now.
	void release() noexcept
	{
		if (sem_)
			sb_semaphore_release(sem_, n_);
		sem_ = nullptr;
		n_ = 0;
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
	// Gives up ownership without unlocking; returns the mutex.
	sb_mutex *release() noexcept { return std::exchange(m_, nullptr); }

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

// A syncband future awaited by a task: registered by await_suspend, polled
// again on every wake.  Neither copyable nor movable: the future must stay
// where it is while pending.
class awaiter_core : protected pending_op {
public:
	awaiter_core(const awaiter_core &) = delete;
	awaiter_core &operator=(const awaiter_core &) = delete;

protected:
	awaiter_core(void *future, const sb_future_ops *ops) noexcept
		: pending_op{ &poll_again }, fut_(future), ops_(ops)
	{
	}
	~awaiter_core() = default;

	// Polls the (initialised) future with the task's waker: true when the
	// coroutine must suspend until it completes.
	template <class Promise>
	bool suspend(std::coroutine_handle<Promise> h) noexcept
	{
		task_state *t = h.promise().syncband_state();
		pending_ = true;
		sb_waker w = sb_loop_task_waker(&t->lt);
		if (poll_once(&w))
			return false;
		t->waiting = this;
		return true;
	}

	// For the destructors: a pending future is cancelled, handing on what it
	// was granted.
	void cancel_if_pending() noexcept
	{
		if (pending_)
			ops_->cancel(fut_);
		pending_ = false;
	}

	bool pending() const noexcept { return pending_; }

	int result_ = 0;

private:
	bool poll_once(const sb_waker *w) noexcept
	{
		int r = ops_->poll(fut_, w);
		if (r == SB_PENDING)
			return false;
		result_ = r;
		pending_ = false;
		return true;
	}
	static int poll_again(pending_op *op, const sb_waker *w) noexcept
	{
		return static_cast<awaiter_core *>(op)->poll_once(w) ? 0 : SB_PENDING;
	}

	void *fut_;
	const sb_future_ops *ops_;
	bool pending_ = false;
};

// An awaiter that holds its future.
template <class Future>
class future_awaiter : public awaiter_core {
protected:
	explicit future_awaiter(const sb_future_ops *ops) noexcept : awaiter_core(&future_, ops) {}
	~future_awaiter() { cancel_if_pending(); }

	Future future_;
};

} // namespace detail

class acquire_awaiter : public detail::future_awaiter<sb_semaphore_acquire> {
public:
	acquire_awaiter(sb_semaphore &s, std::size_t n) noexcept
		: future_awaiter(&sb_semaphore_acquire_ops), sem_(&s), n_(n)
	{
	}
	bool await_ready() noexcept
	{
		result_ = sb_semaphore_try_acquire(sem_, n_);
		return result_ != -EAGAIN;
	}
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		sb_semaphore_acquire_init(&future_, sem_, n_);
		return suspend(h);
	}
	permit await_resume() noexcept { return result_ == 0 ? permit(*sem_, n_) : permit(result_); }

private:
	sb_semaphore *sem_;
	std::size_t n_;
};

// co_await sb::acquire(sem, n): an sb::permit holding `n` permits, or an
// empty one whose error() is -ESHUTDOWN (closed) or -EINVAL (n too large).
inline acquire_awaiter acquire(sb_semaphore &s, std::size_t n = 1) noexcept
{
	return acquire_awaiter(s, n);
}

class lock_awaiter : public detail::future_awaiter<sb_mutex_lock> {
public:
	explicit lock_awaiter(sb_mutex &m) noexcept : future_awaiter(&sb_mutex_lock_ops), m_(&m) {}
	bool await_ready() noexcept { return sb_mutex_try_lock(m_) == 0; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		sb_mutex_lock_init(&future_, m_);
		return suspend(h);
	}
	mutex_guard await_resume() noexcept { return mutex_guard(*m_); }

private:
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
		: future_awaiter(&sb_rwlock_lock_ops), rw_(&rw), k_(k)
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
		if (k_ == rwlock_guard::exclusive)
			sb_rwlock_write_init(&future_, rw_);
		else
			sb_rwlock_read_init(&future_, rw_);
		return suspend(h);
	}
	rwlock_guard await_resume() noexcept
	{
		return result_ == 0 ? rwlock_guard(*rw_, k_) : rwlock_guard();
	}

private:
	sb_rwlock *rw_;
	rwlock_guard::kind k_;
};

// co_await sb::read_lock(rw) / sb::write_lock(rw): an sb::rwlock_guard
// holding a read of `rw` / its write lock, in the lock's FIFO phases.
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
		: future_awaiter(&sb_condvar_wait_ops), cv_(&cv), guard_(&g)
	{
	}
	// Cancelled while waiting: the mutex is not held (condvar.h).
	~condvar_wait_awaiter()
	{
		if (pending())
			guard_->release();
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
		sb_condvar_wait_init(&future_, cv_, guard_->mutex());
		return suspend(h);
	}
	// 0: notified, and the guard holds the mutex again.  -EPERM: the guard
	// held no mutex.
	int await_resume() noexcept { return result_; }

private:
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
	explicit event_wait_awaiter(sb_event &e) noexcept : future_awaiter(&sb_event_wait_ops), e_(&e)
	{
	}
	bool await_ready() noexcept { return sb_event_try_wait(e_) == 0; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		sb_event_wait_init(&future_, e_);
		return suspend(h);
	}
	void await_resume() noexcept {}

private:
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
		: future_awaiter(&sb_auto_event_wait_ops), e_(&e)
	{
	}
	bool await_ready() noexcept { return sb_auto_event_try_wait(e_) == 0; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		sb_auto_event_wait_init(&future_, e_);
		return suspend(h);
	}
	void await_resume() noexcept {}

private:
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
		: future_awaiter(&sb_barrier_wait_ops), b_(&b)
	{
	}
	// Arriving changes the barrier, so it is done by the future's first poll.
	bool await_ready() noexcept { return false; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		sb_barrier_wait_init(&future_, b_);
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
	explicit latch_wait_awaiter(sb_latch &l) noexcept : future_awaiter(&sb_latch_wait_ops), l_(&l)
	{
	}
	bool await_ready() noexcept { return sb_latch_try_wait(l_) == 0; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		sb_latch_wait_init(&future_, l_);
		return suspend(h);
	}
	void await_resume() noexcept {}

private:
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
	explicit once_wait_awaiter(sb_once &o) noexcept : future_awaiter(&sb_once_wait_ops), o_(&o) {}
	// Done already: one acquire load, and the initialiser's writes are
	// visible.
	bool await_ready() noexcept { return sb_once_is_done(o_); }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		sb_once_wait_init(&future_, o_);
		return suspend(h);
	}
	once_job await_resume() noexcept
	{
		return result_ == SB_ONCE_RUN ? once_job(*o_) : once_job();
	}

private:
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

template <class T>
class send_awaiter : public detail::future_awaiter<sb_channel_send> {
public:
	send_awaiter(sb_channel &ch, const T &item) noexcept
		: future_awaiter(&sb_channel_send_ops), ch_(&ch), item_(item)
	{
	}
	bool await_ready() noexcept
	{
		result_ = sb_channel_try_send(ch_, &item_);
		return result_ != -EAGAIN;
	}
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		sb_channel_send_init(&future_, ch_, &item_);
		return suspend(h);
	}
	// 0 (sent) or -EPIPE (closed; the item was not sent).
	int await_resume() noexcept { return result_; }

private:
	sb_channel *ch_;
	T item_; // the future sends from here: it stays put while pending
};

template <class T>
class recv_awaiter : public detail::future_awaiter<sb_channel_recv> {
public:
	explicit recv_awaiter(sb_channel &ch) noexcept
		: future_awaiter(&sb_channel_recv_ops), ch_(&ch)
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
		sb_channel_recv_init(&future_, ch_, &item_);
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

// Any syncband future the caller initialised (an sb_deadline, say), through
// its sb_future_ops: co_await sb::poll(&f, &ops) gives its result.  If the
// coroutine is destroyed while it waits, the future is cancelled.
class poll_awaiter : public detail::awaiter_core {
public:
	poll_awaiter(void *future, const sb_future_ops *ops) noexcept : awaiter_core(future, ops) {}
	~poll_awaiter() { cancel_if_pending(); }
	bool await_ready() noexcept { return false; }
	template <class Promise>
	bool await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		return suspend(h);
	}
	int await_resume() noexcept { return result_; }
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
		t = h.promise().syncband_state();
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
	yield_awaiter() noexcept : pending_op{ &done } {}
	bool await_ready() noexcept { return false; }
	template <class Promise>
	void await_suspend(std::coroutine_handle<Promise> h) noexcept
	{
		detail::task_state *t = h.promise().syncband_state();
		t->waiting = this;
		sb_loop_wake(&t->lt);
	}
	void await_resume() noexcept {}

private:
	static int done(pending_op *, const sb_waker *) noexcept { return 0; }
};

inline yield_awaiter yield() noexcept
{
	return {};
}

} // namespace sb

#endif // SYNCBAND_SYNCBAND_HPP
