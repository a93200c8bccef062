/* SPDX-License-Identifier: Apache-2.0 */
#include <syncband/version.h>

const char *sb_version(void)
{
	return SYNCBAND_VERSION_STRING;
}
