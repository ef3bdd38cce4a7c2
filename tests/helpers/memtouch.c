// SPDX-License-Identifier: GPL-2.0
/*
 * Test workload: touches MIB mebibytes of fresh anonymous memory, one write per page,
 * and writes its resident size before the allocation (its baseline, bytes) and after
 * it to a file; then holds the memory HOLD_MS milliseconds (0) before it exits.
 *   memtouch MIB TRUTH_FILE [HOLD_MS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

int main(int argc, char **argv)
{
	size_t len;
	long base;
	char *p;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: memtouch MIB TRUTH_FILE [HOLD_MS]\n");
		return 2;
	}
	len = (size_t)atol(argv[1]) << 20;
	base = rss_bytes();
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < len; i += (size_t)sysconf(_SC_PAGESIZE))
		p[i] = 1;
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "%ld %ld\n", base, rss_bytes());
	fclose(f);
	if (argc > 3) {
		long ms = atol(argv[3]);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts))
			;
	}
	return 0;
}
