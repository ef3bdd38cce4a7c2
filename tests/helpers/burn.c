// SPDX-License-Identifier: GPL-2.0
/*
 * Test workload: burns CPU in N child processes, waits for them, and writes the
 * ground truth (getrusage of the waited children plus its own) to a file.
 *   burn NPROCS MSEC_EACH [TRUTH_FILE] [--nested CGROUP_DIR]
 * With --nested, each child first moves itself into CGROUP_DIR (made by us).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spin.h"

static double tv(struct timeval t)
{
	return t.tv_sec + t.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	const char *truth = argc > 3 ? argv[3] : NULL, *nested = NULL;
	int n, ms;
	struct rusage ch, self;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: burn NPROCS MSEC_EACH [TRUTH_FILE] [--nested DIR]\n");
		return 2;
	}
	n = atoi(argv[1]);
	ms = atoi(argv[2]);
	if (argc > 5 && !strcmp(argv[4], "--nested"))
		nested = argv[5];
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			if (nested) {
				char path[4096];

				snprintf(path, sizeof(path), "%s/cgroup.procs", nested);
				f = fopen(path, "w");
				if (!f || fprintf(f, "0\n") < 0 || fclose(f)) {
					perror("join nested cgroup");
					_exit(3);
				}
			}
			burn(ms / 1000.0);
			_exit(0);
		}
	}
	for (int i = 0; i < n; i++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	getrusage(RUSAGE_CHILDREN, &ch);
	getrusage(RUSAGE_SELF, &self);
	if (truth) {
		f = fopen(truth, "w");
		if (!f)
			return 1;
		/* Nanoseconds: children's user+system, then our own. */
		fprintf(f, "%.0f %.0f\n", (tv(ch.ru_utime) + tv(ch.ru_stime)) * 1e9,
			(tv(self.ru_utime) + tv(self.ru_stime)) * 1e9);
		fclose(f);
	}
	return 0;
}
