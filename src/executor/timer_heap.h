/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An executor's armed timers: an intrusive binary min-heap of sb_sleep,
 * ordered by deadline and then by arming order (so equal deadlines fire
 * first come, first served).  Insert, remove and pop are O(log n) and never
 * allocate: the heap is a complete binary tree linked through each sleep's
 * parent/left/right.  Position k (the root is 1) has its children at 2k and
 * 2k + 1, so the bits of a position below its leading one spell the path to
 * it from the root (0: left, 1: right).  The owner thread's alone: no
 * atomics, no locks.  Depends on nothing but struct sb_sleep.
 */
#ifndef SYNCBAND_SRC_EXECUTOR_TIMER_HEAP_H
#define SYNCBAND_SRC_EXECUTOR_TIMER_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <syncband/executor.h>

typedef struct timer_heap {
	sb_sleep *root;
	size_t count;
	uint64_t next_seq;
} timer_heap;

static inline sb_sleep *timer_heap_min(const timer_heap *h)
{
	return h->root;
}

static inline bool timer_heap_before(const sb_sleep *a, const sb_sleep *b)
{
	return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

/* The link that holds (or will hold) position `pos`; its parent in *parent. */
static inline sb_sleep **timer_heap_slot(timer_heap *h, size_t pos, sb_sleep **parent)
{
	size_t bit = 1;
	while (bit <= pos / 2)
		bit <<= 1;
	sb_sleep **slot = &h->root;
	*parent = NULL;
	for (bit >>= 1; bit; bit >>= 1) {
		*parent = *slot;
		slot = (pos & bit) ? &(*parent)->right : &(*parent)->left;
	}
	return slot;
}

/* Points whatever linked to `old` (its parent, or the root) at `now`. */
static inline void timer_heap_relink(timer_heap *h, sb_sleep *parent, sb_sleep *old, sb_sleep *now)
{
	if (!parent)
		h->root = now;
	else if (parent->left == old)
		parent->left = now;
	else
		parent->right = now;
}

/* Swaps `c` with its parent p: c takes p's place, p takes c's. */
static inline void timer_heap_swap_up(timer_heap *h, sb_sleep *c)
{
	sb_sleep *p = c->parent;
	sb_sleep *c_left = c->left, *c_right = c->right;
	timer_heap_relink(h, p->parent, p, c);
	c->parent = p->parent;
	if (p->left == c) {
		c->left = p;
		c->right = p->right;
		if (c->right)
			c->right->parent = c;
	} else {
		c->right = p;
		c->left = p->left;
		if (c->left)
			c->left->parent = c;
	}
	p->parent = c;
	p->left = c_left;
	p->right = c_right;
	if (c_left)
		c_left->parent = p;
	if (c_right)
		c_right->parent = p;
}

static inline void timer_heap_sift_up(timer_heap *h, sb_sleep *s)
{
	while (s->parent && timer_heap_before(s, s->parent))
		timer_heap_swap_up(h, s);
}

static inline void timer_heap_sift_down(timer_heap *h, sb_sleep *s)
{
	for (;;) {
		sb_sleep *c = s->left;
		if (s->right && timer_heap_before(s->right, c))
			c = s->right;
		if (!c || !timer_heap_before(c, s))
			return;
		timer_heap_swap_up(h, c);
	}
}

static inline void timer_heap_insert(timer_heap *h, sb_sleep *s)
{
	s->seq = h->next_seq++;
	s->left = s->right = NULL;
	sb_sleep *parent;
	sb_sleep **slot = timer_heap_slot(h, ++h->count, &parent);
	*slot = s;
	s->parent = parent;
	timer_heap_sift_up(h, s);
}

/* Removes `s`, which is in the heap: the last node takes its place. */
static inline void timer_heap_remove(timer_heap *h, sb_sleep *s)
{
	sb_sleep *last_parent;
	sb_sleep **last_slot = timer_heap_slot(h, h->count--, &last_parent);
	sb_sleep *last = *last_slot;
	*last_slot = NULL;
	if (last != s) {
		last->parent = s->parent;
		last->left = s->left;
		last->right = s->right;
		timer_heap_relink(h, s->parent, s, last);
		if (last->left)
			last->left->parent = last;
		if (last->right)
			last->right->parent = last;
		timer_heap_sift_down(h, last);
		timer_heap_sift_up(h, last);
	}
	s->parent = s->left = s->right = NULL;
}

#endif
