/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exported entry point of every inline function of the public headers.
 *
 * The headers define the uncontended operations SB_INLINE - static inline -
 * so that they compile into their callers (see <syncband/future.h>).  Here
 * SB_INLINE is SB_API instead, and the very same definitions compile once
 * more as ordinary exported functions of the same names, for callers that
 * cannot inline: FFI, dlsym, other languages.  The library's own sources
 * include the headers as every caller does, and inline them too.
 */
#define SB_INLINE SB_API

#include <syncband/syncband.h>
