// SPDX-License-Identifier: GPL-2.0
/*
 * What the host context costs a task (collector/hostread.c): the full reading at its
 * start and end (every cgroup's cpu.stat, every process's stat and cgroup), the
 * series' reading each sample (the root's and its children's cpu.stat) and a phase
 * boundary's pressure files. Medians of RUNS, in microseconds:
 *   hostctx CGROUP2_MOUNT [RUNS]
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/util.h"
#include "collector/hostread.h"

static int cmp(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

static double median_us(__u64 *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2] / 1e3;
}

int main(int argc, char **argv)
{
	const char *root = argc > 1 ? argv[1] : "/sys/fs/cgroup";
	int runs = argc > 2 ? atoi(argv[2]) : 51;
	__u64 *full = calloc((size_t)runs, sizeof(__u64)), *sample = calloc((size_t)runs, 8);
	__u64 *phase = calloc((size_t)runs, sizeof(__u64));
	size_t ncgs = 0, nprocs = 0;

	if (runs < 1 || !full || !sample || !phase)
		return 2;
	for (int i = 0; i < runs; i++) {
		struct host_snap s;
		struct psi_totals p, h;
		__u64 t0 = tp_now_ns(), a, b;

		host_snap__take(&s, root, true, NULL);
		full[i] = tp_now_ns() - t0;
		ncgs = s.ncgs;
		nprocs = s.nprocs;
		host_snap__free(&s);
		t0 = tp_now_ns();
		host_read_usage(root, &a, &b);
		sample[i] = tp_now_ns() - t0;
		t0 = tp_now_ns();
		psi_read(root, &p);
		psi_read(NULL, &h);
		phase[i] = tp_now_ns() - t0;
	}
	printf("host context over %zu cgroups and %zu processes, median of %d:\n", ncgs, nprocs,
	       runs);
	printf("  at the task's start and end: %.0f us each\n", median_us(full, runs));
	printf("  each series sample:          %.1f us\n", median_us(sample, runs));
	printf("  each phase boundary (PSI):   %.1f us\n", median_us(phase, runs));
	free(full);
	free(sample);
	free(phase);
	return 0;
}
