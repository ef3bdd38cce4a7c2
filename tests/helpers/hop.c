// SPDX-License-Identifier: GPL-2.0
/*
 * Test workload: moves itself to one CPU, runs there a moment, and exits with a code.
 *   hop CPU CODE
 * Started on another CPU, its exec and its exit happen on two CPUs.
 */
#include <sched.h>
#include <stdlib.h>

#include "spin.h"

int main(int argc, char **argv)
{
	cpu_set_t set;

	if (argc != 3)
		return 2;
	CPU_ZERO(&set);
	CPU_SET(atoi(argv[1]), &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return 3;
	burn(0.002);
	return atoi(argv[2]);
}
