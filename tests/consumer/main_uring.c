/* An outside program using the installed executor library. */
#include <stdio.h>
#include <string.h>

#include <syncband/executor.h>

int main(void)
{
	sb_executor ex;
	int rc = sb_executor_init(&ex, NULL);
	if (rc) {
		/* linked and ran: a machine without io_uring still counts */
		printf("consumer_uring: linked; no io_uring here (%s)\n", strerror(-rc));
		return 0;
	}
	rc = sb_executor_run(&ex); /* no task: returns at once */
	sb_executor_destroy(&ex, NULL);
	puts("consumer_uring: executor ok");
	return rc;
}
