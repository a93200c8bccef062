// SPDX-License-Identifier: Apache-2.0
// Every static initialiser and SB_CONTAINER_OF, used from C++: compiled by
// compile_headers.sh in C++11, 14, 17 and 20 with the strict warnings.
#include <syncband/syncband.h>

static sb_semaphore sem = SB_SEMAPHORE_INIT(4);
static sb_mutex mtx = SB_MUTEX_INIT;
static sb_mutex fifo_mtx = SB_MUTEX_INIT_FIFO;
static sb_condvar cv = SB_CONDVAR_INIT;
static sb_event ev = SB_EVENT_INIT(1);
static sb_auto_event aev = SB_AUTO_EVENT_INIT(0);
static sb_barrier bar = SB_BARRIER_INIT(3);
static sb_once once = SB_ONCE_INIT;
static sb_rwlock rwl = SB_RWLOCK_INIT;
static sb_latch lat = SB_LATCH_INIT(2);
static int chan_slots[4];
static sb_channel chan = SB_CHANNEL_INIT(chan_slots, sizeof(int), 4);
static sb_channel rendezvous = SB_CHANNEL_INIT(nullptr, sizeof(int), 0);
static int watched = 5;
static sb_watch watch = SB_WATCH_INIT(&watched, sizeof watched);

struct request {
	int id;
	sb_loop_task task;
};

static int request_id(const sb_loop_task *t)
{
	return SB_CONTAINER_OF(t, request, task)->id;
}

int main()
{
	sb_semaphore local_sem = SB_SEMAPHORE_INIT(0);
	sb_event local_ev = SB_EVENT_INIT(0);
	sb_barrier local_bar = SB_BARRIER_INIT(1);
	sb_latch local_lat = SB_LATCH_INIT(0);
	request r;
	r.id = 7;
	int ok = request_id(&r.task) == 7 && sb_semaphore_available(&sem) == 4 &&
		 !sb_mutex_is_locked(&mtx) && !sb_mutex_is_locked(&fifo_mtx) && sb_event_is_set(&ev) &&
		 sb_auto_event_try_wait(&aev) != 0 && sb_semaphore_available(&local_sem) == 0 &&
		 !sb_event_is_set(&local_ev) && sb_condvar_destroy(&cv) == 0 &&
		 sb_barrier_destroy(&bar) == 0 && sb_barrier_wait_blocking(&local_bar, 0) == SB_BARRIER_LEADER &&
		 !sb_once_is_done(&once) && sb_once_destroy(&once) == 0 &&
		 sb_rwlock_try_read(&rwl) == 0 && sb_rwlock_readers(&rwl) == 1 &&
		 sb_latch_count(&lat) == 2 && sb_latch_try_wait(&local_lat) == 0 &&
		 sb_channel_try_send(&chan, &r.id) == 0 && sb_channel_len(&chan) == 1 &&
		 sb_channel_try_send(&rendezvous, &r.id) == -EAGAIN &&
		 sb_watch_send(&watch, &r.id) == 0 && sb_watch_version(&watch) == 1;
	return ok ? 0 : 1;
}
