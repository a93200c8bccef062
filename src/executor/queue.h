/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The executor's intrusive task lists, written once: the FIFO run queue
 * (through sb_task.next) and the doubly-linked list of unfinished tasks
 * (through live_prev / live_next, with `linked` saying a task is on one).
 *
 * Plain structures: no atomics and no locks; each user says who may touch
 * its lists (an executor's: its owner thread; a group's floating list: under
 * the group's lock).  The inbox, the one list other threads push onto, is
 * an atomic stack in scheduler.c; what it holds comes here through
 * task_queue_push_lifo.  Depends on nothing but struct sb_task.
 */
#ifndef SYNCBAND_SRC_EXECUTOR_QUEUE_H
#define SYNCBAND_SRC_EXECUTOR_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

#include <syncband/executor.h>

/* First in, first out. */
typedef struct task_queue {
	sb_task *head;
	sb_task *tail;
} task_queue;

static inline bool task_queue_empty(const task_queue *q)
{
	return q->head == NULL;
}

static inline void task_queue_push(task_queue *q, sb_task *t)
{
	t->next = NULL;
	if (q->tail)
		q->tail->next = t;
	else
		q->head = t;
	q->tail = t;
}

static inline sb_task *task_queue_pop(task_queue *q)
{
	sb_task *t = q->head;
	if (t) {
		q->head = t->next;
		if (!q->head)
			q->tail = NULL;
	}
	return t;
}

/* Appends a chain linked newest first (as a stack holds it), oldest first. */
static inline void task_queue_push_lifo(task_queue *q, sb_task *newest)
{
	sb_task *oldest = NULL;
	while (newest) {
		sb_task *next = newest->next;
		newest->next = oldest;
		oldest = newest;
		newest = next;
	}
	while (oldest) {
		sb_task *next = oldest->next;
		task_queue_push(q, oldest);
		oldest = next;
	}
}

/* Unordered, with O(1) removal of any member. */
typedef struct task_list {
	sb_task *head;
	size_t count;
} task_list;

static inline void task_list_push(task_list *l, sb_task *t)
{
	t->live_prev = NULL;
	t->live_next = l->head;
	if (l->head)
		l->head->live_prev = t;
	l->head = t;
	l->count++;
	t->linked = 1;
}

static inline void task_list_remove(task_list *l, sb_task *t)
{
	if (t->live_prev)
		t->live_prev->live_next = t->live_next;
	else
		l->head = t->live_next;
	if (t->live_next)
		t->live_next->live_prev = t->live_prev;
	t->live_prev = t->live_next = NULL;
	l->count--;
	t->linked = 0;
}

#endif
