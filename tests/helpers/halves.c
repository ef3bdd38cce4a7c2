// SPDX-License-Identifier: GPL-2.0
/*
 * Test workload in two halves: each runs /bin/true N times (waited) and burns MSEC of
 * CPU; between them it writes READY_FILE and waits for GO_FILE (sleeping, not
 * spinning), so that a test can do something in the middle (kill a daemon). At the
 * end it writes the ground truth, getrusage of the waited children plus its own, as
 * burn does.
 *   halves N MSEC READY_FILE GO_FILE TRUTH_FILE
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spin.h"

static int run_true(int n)
{
	for (int i = 0; i < n; i++) {
		int st;
		pid_t pid = fork();

		if (pid < 0)
			return -1;
		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return -1;
	}
	return 0;
}

static double tv(struct timeval t)
{
	return t.tv_sec + t.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	struct rusage ch, self;
	int n, ms, fd;
	FILE *f;

	if (argc != 6) {
		fprintf(stderr, "usage: halves N MSEC READY_FILE GO_FILE TRUTH_FILE\n");
		return 2;
	}
	n = atoi(argv[1]);
	ms = atoi(argv[2]);
	if (run_true(n))
		return 1;
	burn(ms / 1000.0);
	fd = open(argv[3], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return 1;
	close(fd);
	/* At most 60 s: a test that never says go fails, it does not hang. */
	for (int i = 0; i < 3000 && access(argv[4], F_OK); i++)
		nanosleep(&nap, NULL);
	if (run_true(n))
		return 1;
	burn(ms / 1000.0);
	getrusage(RUSAGE_CHILDREN, &ch);
	getrusage(RUSAGE_SELF, &self);
	f = fopen(argv[5], "w");
	if (!f)
		return 1;
	fprintf(f, "%.0f %.0f\n", (tv(ch.ru_utime) + tv(ch.ru_stime)) * 1e9,
		(tv(self.ru_utime) + tv(self.ru_stime)) * 1e9);
	return fclose(f) ? 1 : 0;
}
