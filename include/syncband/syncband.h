/* SPDX-License-Identifier: Apache-2.0 */
/* syncband/syncband.h - every public header of the core library. */
#ifndef SYNCBAND_SYNCBAND_H
#define SYNCBAND_SYNCBAND_H

#include <syncband/version.h>
#include <syncband/future.h>
#include <syncband/blocking.h>
#include <syncband/semaphore.h>
#include <syncband/mutex.h>
#include <syncband/condvar.h>
#include <syncband/event.h>
#include <syncband/barrier.h>
#include <syncband/once.h>
#include <syncband/rwlock.h>
#include <syncband/latch.h>
#include <syncband/channel.h>
#include <syncband/broadcast.h>
#include <syncband/watch.h>
#include <syncband/select.h>
#include <syncband/deadline.h>
#include <syncband/loop.h>
#include <syncband/driver.h>

#endif
