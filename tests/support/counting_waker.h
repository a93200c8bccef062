/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A waker that counts what the library does with it: every clone must be
 * woken or dropped exactly once, so `live` returns to 0 when nothing waits.
 *
 * `on_clone` and `on_wake`, when set, run inside clone() and inside wake()
 * and wake_by_ref() (with `hook_arg`): tests use them to re-enter the library
 * from a waker callback, which the waker contract allows for all four.
 *
 * `forward`, when set, is a waker (an executor task's) that every clone,
 * wake and drop is also passed on to, counted first: the executor tests
 * poll through one to see every clone the library makes of a task's waker.
 * Its clones must all be alike (sb_waker_will_wake), as a task waker's are.
 *
 * COUNTING_WAKER_CLONED(c), COUNTING_WAKER_USED(c) and COUNTING_WAKER_WOKEN(c),
 * when the includer defines them, run in clone, in wake, wake_by_ref and
 * drop, and in the wakes before counting: the model checker's weak mode
 * (tests/model) uses them to check that a clone happens-before every use of
 * it (a waker stored in a node is published with release and read with
 * acquire), and to order a wake before the poll it causes.
 */
#ifndef SYNCBAND_TEST_COUNTING_WAKER_H
#define SYNCBAND_TEST_COUNTING_WAKER_H

#include <stdatomic.h>
#include <stdlib.h>

#include <syncband/future.h>

#ifndef COUNTING_WAKER_CLONED
#define COUNTING_WAKER_CLONED(c) ((void)(c))
#endif
#ifndef COUNTING_WAKER_USED
#define COUNTING_WAKER_USED(c) ((void)(c))
#endif
#ifndef COUNTING_WAKER_WOKEN
#define COUNTING_WAKER_WOKEN(c) ((void)(c))
#endif

typedef struct counting_waker {
	atomic_int clones;
	atomic_int wakes;       /* wake + wake_by_ref */
	atomic_int drops;
	atomic_int live;        /* clones not yet woken (by value) or dropped */
	atomic_int woken;       /* wake alone: the clones a wake consumed */
	void (*on_clone)(void *hook_arg);
	void (*on_wake)(void *hook_arg);
	void *hook_arg;
	sb_waker forward;       /* NULL vtable: none */
} counting_waker;

static sb_waker counting_clone(const void *data);
static void counting_wake(const void *data)
{
	counting_waker *c = (counting_waker *)data;
	COUNTING_WAKER_USED(c);
	COUNTING_WAKER_WOKEN(c);
	atomic_fetch_add(&c->wakes, 1);
	atomic_fetch_add(&c->woken, 1);
	if (c->on_wake)
		c->on_wake(c->hook_arg);
	sb_waker forward = c->forward; /* the forward wake may free c: read it first */
	atomic_fetch_sub(&c->live, 1);
	if (forward.vtable)
		sb_waker_wake(forward);
}
static void counting_wake_by_ref(const void *data)
{
	counting_waker *c = (counting_waker *)data;
	COUNTING_WAKER_USED(c);
	COUNTING_WAKER_WOKEN(c);
	atomic_fetch_add(&c->wakes, 1);
	if (c->on_wake)
		c->on_wake(c->hook_arg);
	if (c->forward.vtable)
		sb_waker_wake_by_ref(&c->forward);
}
static void counting_drop(const void *data)
{
	counting_waker *c = (counting_waker *)data;
	COUNTING_WAKER_USED(c);
	atomic_fetch_add(&c->drops, 1);
	sb_waker forward = c->forward;
	atomic_fetch_sub(&c->live, 1);
	if (forward.vtable)
		sb_waker_drop(forward);
}
static const sb_waker_vtable counting_vtable = {
	counting_clone, counting_wake, counting_wake_by_ref, counting_drop,
};
static sb_waker counting_clone(const void *data)
{
	counting_waker *c = (counting_waker *)data;
	COUNTING_WAKER_CLONED(c);
	if (c->forward.vtable) {
		sb_waker f = sb_waker_clone(&c->forward);
		if (!sb_waker_will_wake(&f, &c->forward))
			abort(); /* one forward stands for all its clones */
	}
	atomic_fetch_add(&c->clones, 1);
	atomic_fetch_add(&c->live, 1);
	if (c->on_clone)
		c->on_clone(c->hook_arg);
	return (sb_waker){ &counting_vtable, data };
}

static inline void counting_waker_init(counting_waker *c)
{
	atomic_init(&c->clones, 0);
	atomic_init(&c->wakes, 0);
	atomic_init(&c->drops, 0);
	atomic_init(&c->live, 0);
	atomic_init(&c->woken, 0);
	c->on_clone = c->on_wake = NULL;
	c->hook_arg = NULL;
	c->forward = (sb_waker){ NULL, NULL };
}

/* The borrowed waker a poll receives; not itself a counted reference. */
static inline sb_waker counting_waker_ref(counting_waker *c)
{
	return (sb_waker){ &counting_vtable, c };
}

#endif
