/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A task that acquires a semaphore with a 5 ms deadline, on the io_uring
 * executor.  The first attempt times out (nobody releases); the second
 * finds a permit.  Build: cc -std=c11 x.c $(pkg-config --cflags --libs syncband-uring)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <syncband/executor.h>
#include <syncband/semaphore.h>

struct acquire_task {
	sb_task task; /* intrusive: the executor links this, never allocates */
	sb_semaphore *sem;
	sb_semaphore_acquire acquire;
	sb_timeout deadline;
	int started;
};

static int acquire_task_poll(sb_task *t, const sb_waker *waker)
{
	struct acquire_task *a = SB_CONTAINER_OF(t, struct acquire_task, task);
	if (!a->started) {
		a->started = 1;
		sb_semaphore_acquire_init(&a->acquire, a->sem, 1);
		/* The one line: this acquire, but for at most 5 ms. */
		sb_timeout_init(&a->deadline, &a->acquire, &sb_semaphore_acquire_ops,
				5 * SB_NSEC_PER_MSEC);
	}
	return sb_timeout_poll(&a->deadline, waker); /* SB_PENDING, 0 or -ETIMEDOUT */
}

static void acquire_task_cancel(sb_task *t)
{
	struct acquire_task *a = SB_CONTAINER_OF(t, struct acquire_task, task);
	if (a->started)
		sb_timeout_cancel(&a->deadline);
}

static int run_once(sb_executor *ex, sb_semaphore *sem)
{
	struct acquire_task a = { .sem = sem };
	sb_task_init(&a.task, acquire_task_poll, acquire_task_cancel, NULL);
	sb_join join;
	int rc = sb_spawn(ex, &a.task, &join);
	if (rc)
		return rc;
	return sb_block_on(ex, &join, &sb_join_ops); /* the task's result */
}

int main(void)
{
	sb_executor ex;
	int rc = sb_executor_init(&ex, NULL);
	if (rc) {
		fprintf(stderr, "skipped: no io_uring here: %s\n", strerror(-rc));
		return 77;
	}
	sb_semaphore sem = SB_SEMAPHORE_INIT(0);

	uint64_t start = sb_now_ns();
	int first = run_once(&ex, &sem);
	printf("first acquire: %s after %.1f ms\n", first == -ETIMEDOUT ? "timed out" : strerror(-first),
	       (double)(sb_now_ns() - start) / 1e6);

	sb_semaphore_release(&sem, 1);
	int second = run_once(&ex, &sem);
	printf("second acquire: %s\n", second == 0 ? "got the permit" : strerror(-second));
	if (second == 0)
		sb_semaphore_release(&sem, 1);

	sb_executor_destroy(&ex, NULL);
	return first == -ETIMEDOUT && second == 0 ? 0 : 1;
}
