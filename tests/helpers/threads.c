// SPDX-License-Identifier: GPL-2.0
/*
 * Test workload: NTHREADS threads spin while the main thread burns MSEC ms of the
 * process's CPU, then exits the whole process (exit_group) with the threads still
 * spinning: their exits race, and the last to leave is not the main thread's.
 *   threads NTHREADS MSEC
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "spin.h"

static void *spin(void *arg)
{
	volatile unsigned long x = 0;

	(void)arg;
	for (;;)
		x++;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int n;

	if (argc < 3) {
		fprintf(stderr, "usage: threads NTHREADS MSEC\n");
		return 2;
	}
	n = atoi(argv[1]);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t, NULL, spin, NULL))
			return 1;
	burn(atoi(argv[2]) / 1000.0);
	exit(0);
}
