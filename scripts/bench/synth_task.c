// SPDX-License-Identifier: GPL-2.0
/*
 * Writes a synthetic long task into a store, as a real one would have been stored:
 * its record (three equal phases, the second named "a:b #1") and a 1 s series.
 * For the report benchmark and the report test.
 *   synth-task DB ID HOURS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/phases.h"
#include "model/series.h"
#include "model/task.h"
#include "store/store.h"

int main(int argc, char **argv)
{
	static const char *const names[] = { "checkout", "a:b #1", "test" };
	struct series_point *pts;
	struct phase_snap at = { 0 };
	struct task_record t;
	struct phases ph;
	struct store *s;
	size_t n, len;
	void *blob;
	__s64 tid;
	double hours;

	if (argc != 4 || (hours = atof(argv[3])) <= 0 || hours > 48) {
		fprintf(stderr, "usage: synth-task DB ID HOURS (0 < HOURS <= 48)\n");
		return 2;
	}
	n = (size_t)(hours * 3600);
	pts = calloc(n, sizeof(*pts));
	if (!pts)
		return 1;
	memset(&t, 0, sizeof(t));
	snprintf(t.id, sizeof(t.id), "%s", argv[2]);
	snprintf(t.host, sizeof(t.host), "worker-1");
	t.start_real_ns = tp_realtime_ns() - n * 1000000000ULL;
	t.wall_ns = n * 1000000000ULL;
	t.fig.cpu.cpu_ns = n * 400000000ULL;
	t.fig.proc.execs = n / 10;
	phases__init(&ph, 0);
	for (int i = 0; i < 3; i++) {
		at.t_ns = (__u64)i * (n / 3) * 1000000000ULL;
		phases__begin(&ph, names[i], &at, 0);
		at.t_ns += (n / 3 - 1) * 1000000000ULL;
		phases__end(&ph, names[i], &at, 0);
	}
	t.phases = &ph;
	/* A busy minute every ten, a memory ramp each hour, some disk reads. */
	for (size_t i = 0; i < n; i++) {
		pts[i].t_ms = i * 1000;
		pts[i].v[0] = i % 600 < 60 ? 1800 : 200 + (__s64)((i * 37) % 100);
		pts[i].v[1] = 100000000 + (__s64)(i % 3600) * 20000;
		pts[i].v[2] = (__s64)(i % 97) * 1024;
		pts[i].v[4] = 3;
		pts[i].v[5] = 1 + (__s64)(i / (n / 3 + 1));
	}
	s = store__open(argv[1], true, (gid_t)-1);
	if (!s || store__task_begin(s, &t, NULL, 0, &tid) || series_encode(pts, n, &blob, &len) ||
	    store__append_series(s, tid, 0, blob, len, n) || store__task_end(s, tid, &t)) {
		fprintf(stderr, "synth-task: cannot write %s\n", argv[1]);
		return 1;
	}
	store__close(s);
	free(blob);
	free(pts);
	phases__fini(&ph);
	return 0;
}
