/* SPDX-License-Identifier: GPL-2.0 */
/* What the workload helpers share: burning a known amount of their own CPU. */
#ifndef TP_HELPERS_SPIN_H
#define TP_HELPERS_SPIN_H

#include <time.h>

static inline double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Runs on the CPU for secs of this process's CPU time. */
static inline void burn(double secs)
{
	volatile unsigned long x = 0;
	double end = cpu_now() + secs;

	while (cpu_now() < end)
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i;
}

#endif /* TP_HELPERS_SPIN_H */
