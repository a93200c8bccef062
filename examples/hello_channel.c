/* Two worker threads drain a job queue; close ends the stream. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <syncband/syncband.h>

static int slots[16];                          /* the channel's storage: yours */
static sb_channel jobs = SB_CHANNEL_INIT(slots, sizeof slots[0], 16);
static atomic_int total;

static void *worker(void *arg)
{
	int job;
	while (sb_channel_recv_blocking(&jobs, &job, SB_TIMEOUT_INFINITE) == 0)
		atomic_fetch_add(&total, job);
	return arg;                            /* -EPIPE: closed and drained */
}

int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int job = 1; job <= 100; job++)
		sb_channel_send_blocking(&jobs, &job, SB_TIMEOUT_INFINITE);
	sb_channel_close(&jobs);               /* receivers drain, then -EPIPE */
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("total %d\n", atomic_load(&total));  /* total 5050 */
	return atomic_load(&total) == 5050 ? 0 : 1;
}
