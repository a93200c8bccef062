/* SPDX-License-Identifier: Apache-2.0 */
/* The spin-wait hint shared by every spinning loop in the library. */
#ifndef SYNCBAND_SRC_CPU_H
#define SYNCBAND_SRC_CPU_H

static inline void sb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#endif
