/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/watch.h - one value with a version number, which receivers watch
 * for changes.
 *
 *   - The value is `size` bytes in the caller's storage (the initial value
 *     at init); its version starts at 0 and grows by one with every send
 *     (and every send_if whose callback says it changed the value).  Send
 *     wakes every changed future waiting then.  Nothing allocates.
 *   - A receiver (sb_watch_receiver, the caller's) holds the version it last
 *     read.  sb_watch_read() copies the value and marks its version seen in
 *     one step: never torn, and never older than a value it read before.
 *   - "Changed" (try_changed, a changed future, a blocking wait) means a
 *     newer version exists; it marks nothing seen, the next read does.
 *     Intermediate values may be skipped: a watch keeps one value.
 *   - Close is end-of-stream: sends fail with -EPIPE; a receiver that has
 *     not read the last value finds it changed, then -EPIPE.  read() keeps
 *     working after close.
 *   - A value of one word (size == sizeof(size_t)) is read without the
 *     lock, so a read never delays a send; any other size is read under the
 *     internal lock, for one copy, so it delays a send by at most that copy
 *     (the lock is not FIFO; docs/design.md).
 *
 * Ordering: a send happens-before a read that returns its value (or a later
 * one) and every changed it lets return 0; close() happens-before its -EPIPE.
 *
 * Thread safety: any thread, concurrently, except init/destroy.  A receiver
 * and its futures are one thread's at a time; many receivers may read at
 * once.  A pending future must not move.  send_if's callback runs under the
 * lock: short, no wait, no call into the same watch.
 *
 * Errors (negative errno; the watch and receiver stay unchanged): -EINVAL
 * bad arguments or unsubscribed receiver or zeroed future; -EOVERFLOW size
 * above PTRDIFF_MAX; -EAGAIN try_changed; -EPIPE after close; -EBUSY
 * destroy/unsubscribe while in use; -ETIMEDOUT; -ECANCELED.
 */
#ifndef SYNCBAND_WATCH_H
#define SYNCBAND_WATCH_H

#include <errno.h>
#include <string.h>

#include <syncband/future.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 56 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_watch {
	sb_waitq q;         /* the lock, CLOSED and the version (its word); changed futures */
	void *value;        /* the caller's storage */
	size_t size;        /* its bytes */
	size_t receivers;   /* subscribed receivers, under the lock */
	SB_ATOMIC(size_t) word; /* a one-word value's copy, read without the lock */
} sb_watch;

/*
 * The state word (ABI; the queue's bits are in future.h):
 *
 *   bit 3     SB_WATCH_STATE_CLOSED   close() was called; final
 *   bit 4     SB_WATCH_STATE_NO_WORD  `word` does not hold the value: reads
 *                                     take the lock (every size but one
 *                                     word; a one-word watch until its first
 *                                     locked operation after SB_WATCH_INIT)
 *   bits 5-   the version (wraps: 2^59 sends on 64-bit targets, 2^27 on
 *             32-bit ones, where a receiver that reads nothing for exactly
 *             that many sends would take the value as unchanged)
 *
 * The version and CLOSED are read together in one load, so a changed check
 * is one acquire load.  The version, NO_WORD and `word` change only under
 * the lock, and with release order.
 */
#define SB_WATCH_STATE_CLOSED (SB_CAST(size_t, 1) << SB_WAITQ_STATE_SHIFT)
#define SB_WATCH_STATE_NO_WORD (SB_CAST(size_t, 1) << (SB_WAITQ_STATE_SHIFT + 1))
#define SB_WATCH_VERSION_SHIFT (SB_WAITQ_STATE_SHIFT + 2)
#define SB_WATCH_VERSION_ONE (SB_CAST(size_t, 1) << SB_WATCH_VERSION_SHIFT)

/*
 * Static initialiser: an open watch over `storage` (`size` bytes, holding
 * the initial value), version 0.  Nothing is checked: the arguments must be
 * what sb_watch_init() would accept.
 */
#ifdef __cplusplus
#define SB_WATCH_INIT(storage, size) \
	{ SB_WAITQ_INIT(SB_WATCH_STATE_NO_WORD), (storage), (size), 0, { 0 } }
#else
#define SB_WATCH_INIT(storage, size) \
	{ SB_WAITQ_INIT(SB_WATCH_STATE_NO_WORD), (storage), (size), 0, 0 }
#endif

/*
 * 24 bytes on 64-bit targets.  Fields are private; zeroed, it is a receiver
 * that is not subscribed (every use: -EINVAL).
 */
typedef struct sb_watch_receiver {
	sb_watch *watch;   /* NULL when not subscribed */
	size_t seen;       /* the state word as of the value it last read (its version bits) */
	size_t pending;    /* its changed futures that wait (its owner's count) */
} sb_watch_receiver;

/* A receiver that is not subscribed (as zeroed memory is). */
#define SB_WATCH_RECEIVER_INIT { NULL, 0, 0 }

/* The future of a changed wait.  56 bytes on 64-bit targets.  Fields are private. */
typedef struct sb_watch_changed {
	sb_waiter waiter;
	sb_watch_receiver *rx;
	int status;
} sb_watch_changed;

/*
 * The callback of sb_watch_send_if: may change the value (`value`, the
 * watch's storage) in place, and returns whether receivers are to be told
 * (the version grows and waiting futures wake only then).
 */
typedef bool (*sb_watch_modify_fn)(void *value, void *arg);

/*
 * Initialises an open watch over `storage`, which holds the initial value
 * (`size` bytes) and stays valid until destroy.  Returns 0, -EINVAL
 * (storage NULL or size 0) or -EOVERFLOW (size above PTRDIFF_MAX).
 */
SB_API int sb_watch_init(sb_watch *w, void *storage, size_t size);

/*
 * Returns 0, or -EBUSY while receivers are subscribed or futures wait (the
 * watch stays usable).  The watch must not be used after a successful
 * destroy.
 */
SB_API int sb_watch_destroy(sb_watch *w);

/*
 * Ends the stream: later sends fail with -EPIPE and every waiting changed
 * future completes with -EPIPE (the wakes run after the lock is released).
 * The value stays readable.  Idempotent.
 */
SB_API void sb_watch_close(sb_watch *w);

/* Snapshots: whether close() was called; the current version (acquire). */
SB_API bool sb_watch_is_closed(const sb_watch *w);
SB_API size_t sb_watch_version(const sb_watch *w);

/* The out-of-line rest of the inline functions below (see future.h). */
SB_API int sb_watch_send_slow(sb_watch *w, const void *value);
SB_API int sb_watch_read_slow(sb_watch_receiver *rx, void *out);
SB_API int sb_watch_changed_poll_slow(sb_watch_changed *f, const sb_waker *w);
SB_API void sb_watch_unlock_slow(sb_watch *w, size_t add);

/*
 * Takes the lock when the word has none of `busy` (nor the lock's bits):
 * one CAS.  False when it had (or the CAS lost).
 */
static inline bool sb__watch_lock_idle(sb_watch *w, size_t busy, size_t *state)
{
	/* relaxed: a guess that the CAS confirms. */
	*state = sb__state_load_relaxed(&w->q);
	/* acquire: the value as the last holder left it (pairs with the
	 * release of every unlock). */
	return !(*state & (busy | SB_QLOCK_HELD | SB_QLOCK_PARKED)) &&
	       sb__state_cas_acquire(&w->q, state, *state | SB_QLOCK_HELD);
}

/* Releases a lock taken by sb__watch_lock_idle from `state`, adding `add`. */
static inline void sb__watch_unlock_idle(sb_watch *w, size_t state, size_t add)
{
	size_t held = state | SB_QLOCK_HELD;
	/* release: publishes the value (and a send's version) to the next
	 * holder and to every acquire load of the word.  It fails when a thread
	 * waiting for the lock set PARKED: the slow unlock wakes it. */
	if (!sb__state_cas_release(&w->q, &held, state + add))
		sb_watch_unlock_slow(w, add);
}

/*
 * The copy of a one-word value: stored with release under the lock, before
 * the unlock that publishes its version; loaded with acquire without it.
 */
#ifdef __cplusplus
static inline size_t sb__watch_word_load_acquire(const sb_watch *w)
{
	return w->word.load(std::memory_order_acquire);
}

static inline void sb__watch_word_store_release(sb_watch *w, size_t v)
{
	w->word.store(v, std::memory_order_release);
}
#else
static inline size_t sb__watch_word_load_acquire(const sb_watch *w)
{
	return atomic_load_explicit((SB_ATOMIC(size_t) *)&w->word, memory_order_acquire);
}

static inline void sb__watch_word_store_release(sb_watch *w, size_t v)
{
	atomic_store_explicit(&w->word, v, memory_order_release);
}
#endif

/* A changed check's answer from a word: 0 (newer), -EPIPE or -EAGAIN. */
static inline int sb__watch_changed(size_t state, size_t seen)
{
	if ((state ^ seen) >> SB_WATCH_VERSION_SHIFT)
		return 0;
	return state & SB_WATCH_STATE_CLOSED ? -EPIPE : -EAGAIN;
}

/*
 * Replaces the value with the `size` bytes at `value` (not the watch's own
 * storage) and wakes every waiting changed future: 0, -EPIPE or -EINVAL.
 * Inline: with nobody waiting, one CAS to take the lock, the copy, one CAS
 * that releases it and publishes the new version.
 */
SB_INLINE int sb_watch_send(sb_watch *w, const void *value)
{
	size_t state;
	if (value && sb__watch_lock_idle(w, SB_WAITQ_NONEMPTY | SB_WATCH_STATE_CLOSED, &state)) {
		size_t add = SB_WATCH_VERSION_ONE;
		memcpy(w->value, value, w->size);
		if (w->size == sizeof(size_t)) {
			size_t v;
			memcpy(&v, w->value, sizeof v); /* the storage: `value`'s size is unknown here */
			/* release: a lock-free read that loads it (acquire) sees
			 * this send's lock, so its second look at the word tells
			 * that the version moved (sb_watch_read). */
			sb__watch_word_store_release(w, v);
			add -= state & SB_WATCH_STATE_NO_WORD; /* it holds the value now */
		}
		sb__watch_unlock_idle(w, state, add);
		return 0;
	}
	return sb_watch_send_slow(w, value);
}

/*
 * Calls `modify(storage, arg)` under the lock; when it returns true, the
 * version grows and every waiting changed future wakes.  Returns 1 (told),
 * 0 (it returned false: nobody told, version unchanged), -EPIPE (closed:
 * not called) or -EINVAL.  See "Thread safety" for what `modify` may do.
 */
SB_API int sb_watch_send_if(sb_watch *w, sb_watch_modify_fn modify, void *arg);

/*
 * Subscribes `rx` (caller's memory, not subscribed: zeroed, initialised with
 * SB_WATCH_RECEIVER_INIT, or unsubscribed):
 * it has seen the current version.  Also on a closed watch (it can read the
 * last value).  Returns 0, or -EINVAL (a NULL argument, or `rx` subscribed
 * already: nothing changes).
 */
SB_API int sb_watch_subscribe(sb_watch *w, sb_watch_receiver *rx);

/*
 * Unsubscribes `rx`: 0, -EBUSY while one of its changed futures waits
 * (cancel or complete it first), or -EINVAL (not subscribed).  Afterwards
 * every use of `rx` fails with -EINVAL until it subscribes again.
 */
SB_API int sb_watch_unsubscribe(sb_watch_receiver *rx);

/* The version of the value `rx` last read (or saw at subscribe). */
SB_API size_t sb_watch_seen(const sb_watch_receiver *rx);

/*
 * Copies the current value into `out` (`size` bytes) and marks its version
 * seen: 0 or -EINVAL.  Never torn.  Inline: a one-word value is two loads
 * when its version is the one `rx` last read, four and the store of `seen`
 * when it is newer, and no atomic read-modify-write either way (while
 * nobody holds the lock); any other size one CAS to take the lock when
 * nobody holds it, the copy, one CAS to release it.
 */
/* GCC cannot tell that the word's copy runs only for one-word watches, and
 * warns when `out` is smaller (a 2-byte watch read into a short). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
SB_INLINE int sb_watch_read(sb_watch_receiver *rx, void *out)
{
	sb_watch *w = rx->watch;
	if (w && out) {
		/* acquire: the send that stored it happens-before the state
		 * load below, which therefore sees that send's lock (pairs with
		 * the word's release store). */
		size_t v = sb__watch_word_load_acquire(w);
		/* acquire: the word loaded below holds this version's value or
		 * a later one (pairs with the release of the unlock that
		 * published it). */
		size_t state = sb__state_load_acquire(&w->q);
		if (sb__likely(!(state & (SB_QLOCK_HELD | SB_WATCH_STATE_NO_WORD)))) {
			/* The version `rx` last read: its read's acquire made
			 * that version's word visible, so the word above is
			 * that one or later, and not later, as a later send's
			 * lock would show in this state (docs/design.md). */
			if (sb__likely(state == rx->seen)) {
				memcpy(out, &v, sizeof v);
				return 0;
			}
			/* acquire: as the first load of the word. */
			v = sb__watch_word_load_acquire(w);
			/* relaxed: a word stored by a later send comes after
			 * that send's lock in this thread's view (the acquire
			 * above), so the word is this version's exactly when
			 * the state is unchanged. */
			if (sb__likely(sb__state_load_relaxed(&w->q) == state)) {
				memcpy(out, &v, sizeof v);
				rx->seen = state;
				return 0;
			}
		} else if (w->size != sizeof(size_t) && sb__watch_lock_idle(w, 0, &state)) {
			memcpy(out, w->value, w->size);
			rx->seen = state;
			sb__watch_unlock_idle(w, state, 0);
			return 0;
		}
	}
	return sb_watch_read_slow(rx, out);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/*
 * Whether a version newer than the receiver's seen one exists, without
 * waiting or marking anything: 0 (yes), -EAGAIN (no), -EPIPE (no, and
 * closed), -EINVAL.  Inline: one acquire load.
 */
SB_INLINE int sb_watch_try_changed(const sb_watch_receiver *rx)
{
	if (!rx->watch)
		return -EINVAL;
	/* acquire: a caller told "changed" sees what the send wrote before it
	 * (pairs with the release that published the version). */
	return sb__watch_changed(sb__state_load_acquire(&rx->watch->q), rx->seen);
}

/*
 * Prepares a future that completes when a version newer than the receiver's
 * seen one exists (as its first poll finds it).  Does not register.
 */
SB_INLINE void sb_watch_changed_init(sb_watch_changed *f, sb_watch_receiver *rx)
{
	f->rx = rx;
	f->status = SB_FUTURE_IDLE;
}

/*
 * Drives the wait: 0 (changed), SB_PENDING while it waits (the waker will
 * be woken once), -EPIPE (closed and the last value read), -EINVAL.
 * Inline: a first poll that finds a newer version is one load, and so is a
 * later poll that finds its future woken by a send.
 */
SB_INLINE int sb_watch_changed_poll(sb_watch_changed *f, const sb_waker *w)
{
	if (f->status == SB_FUTURE_IDLE) {
		if (f->rx && sb_watch_try_changed(f->rx) == 0) {
			f->status = 0;
			return 0;
		}
	} else if (sb__future_granted(&f->status, &f->waiter)) {
		f->rx->pending--;
		f->status = 0;
		return 0;
	}
	return sb_watch_changed_poll_slow(f, w);
}

/*
 * Abandons the wait (a waiting future leaves the queue; nothing is marked
 * seen, so nothing is lost) and drops the registered waker.  Later polls
 * return -ECANCELED unless it had completed.  Afterwards it may be freed.
 */
SB_API void sb_watch_changed_cancel(sb_watch_changed *f);

/*
 * Blocks the calling thread until a version newer than the receiver's seen
 * one exists: 0, -ETIMEDOUT after `timeout_ns` nanoseconds
 * (SB_TIMEOUT_INFINITE waits forever; 0 tries once), -EPIPE or -EINVAL.
 */
SB_API int sb_watch_changed_blocking(sb_watch_receiver *rx, uint64_t timeout_ns);

/* The changed future through sb_future_ops (deadlines, executors, sb_block_on). */
SB_API extern const sb_future_ops sb_watch_changed_ops;

#ifdef __cplusplus
}
#endif

#endif /* SYNCBAND_WATCH_H */
