/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syncband/version.h - the version of the headers being compiled, and of the
 * library linked at run time.
 *
 * These three numbers are the one place the version is set: CMake reads them
 * for the library's SONAME, the package files and pkg-config.  Within a major
 * version a newer library runs programs built against older headers.
 */
#ifndef SYNCBAND_VERSION_H
#define SYNCBAND_VERSION_H

#include <syncband/future.h>

#define SYNCBAND_VERSION_MAJOR 0
#define SYNCBAND_VERSION_MINOR 2
#define SYNCBAND_VERSION_PATCH 0

#define SB__VERSION_STR(x) #x
#define SB__VERSION_XSTR(x) SB__VERSION_STR(x)
/* "MAJOR.MINOR.PATCH" */
#define SYNCBAND_VERSION_STRING                                                             \
	SB__VERSION_XSTR(SYNCBAND_VERSION_MAJOR)                                            \
	"." SB__VERSION_XSTR(SYNCBAND_VERSION_MINOR) "." SB__VERSION_XSTR(SYNCBAND_VERSION_PATCH)
/* MAJOR * 10000 + MINOR * 100 + PATCH: for #if comparisons. */
#define SYNCBAND_VERSION_NUMBER                                                             \
	(SYNCBAND_VERSION_MAJOR * 10000 + SYNCBAND_VERSION_MINOR * 100 + SYNCBAND_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version of the library linked at run time, "MAJOR.MINOR.PATCH": equal
 * to SYNCBAND_VERSION_STRING when headers and library come from one release.
 * Thread-safe; the string is static.
 */
SB_API const char *sb_version(void);

#ifdef __cplusplus
}
#endif

#endif
