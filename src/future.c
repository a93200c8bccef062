/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/future.h>

static sb_waker noop_clone(const void *data);
static void noop_wake(const void *data)
{
	(void)data;
}

static const sb_waker_vtable noop_vtable = {
	.clone = noop_clone,
	.wake = noop_wake,
	.wake_by_ref = noop_wake,
	.drop = noop_wake,
};

static sb_waker noop_clone(const void *data)
{
	return (sb_waker){ &noop_vtable, data };
}

sb_waker sb_waker_noop(void)
{
	return (sb_waker){ &noop_vtable, NULL };
}
