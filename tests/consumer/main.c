/* An outside program: acquire, wait, hand off, using only the installed API. */
#include <stdio.h>
#include <string.h>

#include <syncband/syncband.h>

int main(void)
{
	static sb_semaphore sem = SB_SEMAPHORE_INIT(0);
	sb_waker waker = sb_waker_noop();
	sb_semaphore_acquire acquire;
	sb_semaphore_acquire_init(&acquire, &sem, 1);
	if (sb_semaphore_acquire_poll(&acquire, &waker) != SB_PENDING)
		return 1;
	if (sb_semaphore_release(&sem, 1) != 0)
		return 2;
	if (sb_semaphore_acquire_poll(&acquire, &waker) != 0)
		return 3;
	/* The headers and the library linked come from one release. */
	if (strcmp(sb_version(), SYNCBAND_VERSION_STRING) != 0)
		return 4;
	puts("consumer: handoff ok, version " SYNCBAND_VERSION_STRING);
	return 0;
}
