// SPDX-License-Identifier: GPL-2.0
/* The stats and compare tests' tasks and their expected figures (compare_data.h). */
#include <stdlib.h>
#include <string.h>

#include "compare_data.h"
#include "harness.h"
#include "store/store.h"
#include "testutil.h"

#define S 1000000000ULL
#define T0 1700000000000000000ULL

static const struct {
	const char *id, *job, *status;
	double start_s, wall_s, cpu_s, cores;
	bool compile, package;
} tasks[CD_TASKS] = {
	{ "b-1", "build", NULL, 1000, 10, 5, 1.5, true, false },
	{ "b-2", "build", NULL, 1100, 12, 9, 2.0, true, false },
	{ "b-3", "build", NULL, 1200, 11, 2, 0.7, false, false },
	{ "b-4", "build", NULL, 1300, 14, 7, 3.1, true, false },
	{ "b-5", "build", "signaled", 1400, 9, 11, 2.2, true, false },
	{ "b-6", "build", NULL, 1500, 13, 3, 1.1, true, false },
	{ "b-7", "build", NULL, 1600, 12.5, 8, 2.9, true, false },
	/* Never ran: no history, no stats. */
	{ "b-nf", "build", "not_found", 1650, 0.001, 0, 0, false, false },
	{ CD_TARGET, "build", NULL, 1700, 12, 40, 4.0, true, true },
	/* Started after the target ended: stats, not its history. */
	{ "b-later", "build", NULL, 2000, 15, 6, 1.8, true, false },
	{ "l-1", "lint", NULL, 1050, 3, 1, 1.0, false, false },
	{ "n-1", NULL, NULL, 1060, 4, 2.5, 1.2, false, false },
};

struct store *cd_store(const char *path)
{
	struct store *s = store__open(path, true, (gid_t)-1);

	if (!ASSERT_NOT_NULL(s, "a store"))
		return NULL;
	for (int i = 0; i < CD_TASKS; i++) {
		struct tu_task t = {
			.id = tasks[i].id,
			.host = "worker-s",
			.job = tasks[i].job,
			.status = tasks[i].status,
			.ncpu = "8",
			.mem_total = "17179869184",
			.start_ns = T0 + (__u64)(tasks[i].start_s * S),
			.wall_ns = (__u64)(tasks[i].wall_s * S),
			.cpu_ns = (__u64)(tasks[i].cpu_s * S),
			.execs = (__u64)i + 1,
			.mem_bytes = (__s64)(i + 1) << 28,
			.peak_cores = tasks[i].cores,
		};

		if (tasks[i].compile) {
			t.phase[t.nphases] = "compile";
			t.phase_wall_ns[t.nphases] = t.wall_ns / 2;
			t.phase_cpu_ns[t.nphases++] = t.cpu_ns / 2;
		}
		if (tasks[i].package) {
			t.phase[t.nphases] = "package";
			t.phase_wall_ns[t.nphases] = t.wall_ns / 4;
			t.phase_cpu_ns[t.nphases++] = t.cpu_ns / 4;
		}
		if (!ASSERT_OK(tu_store_task(s, &t), tasks[i].id)) {
			store__close(s);
			return NULL;
		}
	}
	return s;
}

size_t cd_values(double *out, const char *job, enum cd_field field, bool history)
{
	double end_s = 0;
	size_t n = 0;

	for (int i = 0; i < CD_TASKS; i++)
		if (!strcmp(tasks[i].id, CD_TARGET))
			end_s = tasks[i].start_s + tasks[i].wall_s;
	for (int i = 0; i < CD_TASKS; i++) {
		__u64 wall = (__u64)(tasks[i].wall_s * S), cpu = (__u64)(tasks[i].cpu_s * S);

		if (tasks[i].status && !strcmp(tasks[i].status, "not_found"))
			continue;
		if (job && (!tasks[i].job || strcmp(job, tasks[i].job)))
			continue;
		if (history && (!strcmp(tasks[i].id, CD_TARGET) || tasks[i].start_s >= end_s))
			continue;
		if (field == CD_PHASE_CPU && !tasks[i].compile)
			continue;
		out[n++] = field == CD_CPU     ? (double)cpu
			   : field == CD_WALL  ? (double)wall
			   : field == CD_CORES ? tasks[i].cores
					       : (double)(cpu / 2);
	}
	return n;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double *cd_sorted(const double *v, size_t n)
{
	double *s = malloc((n ? n : 1) * sizeof(*s));

	if (!s)
		abort();
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), by_value);
	return s;
}

/* "the value at that fraction, interpolating between adjacent input items" */
double cd_pct(const double *sorted, size_t n, double q)
{
	double rank = q * (double)(n - 1);
	size_t k = (size_t)rank;

	if (k + 1 >= n)
		return sorted[n - 1];
	return sorted[k] + (rank - (double)k) * (sorted[k + 1] - sorted[k]);
}
