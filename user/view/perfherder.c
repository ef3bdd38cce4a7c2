// SPDX-License-Identifier: GPL-2.0
/* A task's figures as a Perfherder performance artifact (Treeherder's schema). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "view/perfherder.h"

/* The schema's range of a value: a figure beyond it is left out, not clamped. */
#define PERF_VALUE_MAX 1e12

static void perf_subtests(struct jw *w, __u64 cpu_ns, __u64 wall_ns, __u64 rd, __u64 wr, __s64 peak,
			  __u64 execs)
{
	static const char *const names[] = { "cpu_time",       "cpu_avg_cores",	 "io_read_bytes",
					     "io_write_bytes", "peak_mem_bytes", "execs" };
	static const char *const units[] = { "s", "cores", "bytes", "bytes", "bytes", "count" };
	double v[] = { cpu_ns / 1e9,
		       wall_ns ? (double)cpu_ns / (double)wall_ns : 0,
		       (double)rd,
		       (double)wr,
		       peak > 0 ? (double)peak : 0,
		       (double)execs };

	jw_key(w, "subtests");
	jw_arr_begin(w);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		if (v[i] > PERF_VALUE_MAX)
			continue;
		jw_obj_begin(w);
		jw_kstr(w, "name", names[i]);
		jw_kdouble(w, "value", v[i]);
		jw_kstr(w, "unit", units[i]);
		jw_key(w, "lowerIsBetter");
		jw_bool(w, true);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void task_record__print_perfherder(FILE *f, const struct task_record *t, const char *framework)
{
	fputs(PERFHERDER_PREFIX, f);
	task_record__write_perfherder(f, t, framework);
	fputc('\n', f);
	fflush(f);
}

void task_record__write_perfherder(FILE *f, const struct task_record *t, const char *framework)
{
	const struct task_figures *g = &t->fig;
	const char *src;
	char name[UM_NAME_MAX + 24];
	struct jw w;

	jw_init(&w, f, false);
	jw_obj_begin(&w);
	jw_key(&w, "framework");
	jw_obj_begin(&w);
	jw_kstr(&w, "name", framework);
	jw_obj_end(&w);
	jw_key(&w, "suites");
	jw_arr_begin(&w);
	/* The suite's value is its wall time in seconds. */
	jw_obj_begin(&w);
	jw_kstr(&w, "name", "task");
	jw_kdouble(&w, "value", t->wall_ns / 1e9); /* seconds: never near the schema's 1e12 */
	jw_kstr(&w, "unit", "s");
	perf_subtests(&w, g->cpu.cpu_ns, t->wall_ns, g->ioac.read_bytes, g->ioac.write_bytes,
		      (__s64)task_record__mem_peak(t, &src), g->proc.execs);
	jw_obj_end(&w);
	for (size_t i = 0; t->phases && i < t->phases->n; i++) {
		const struct phase *p = &t->phases->p[i];

		int seen = 1;

		/* A phase run again is a suite of its own: Treeherder keeps one of a name. */
		for (size_t k = 0; k < i; k++)
			seen += !strcmp(t->phases->p[k].name, p->name);
		if (seen > 1)
			snprintf(name, sizeof(name), "phase.%s.%d", p->name, seen);
		else
			snprintf(name, sizeof(name), "phase.%s", p->name);
		jw_obj_begin(&w);
		jw_kstr(&w, "name", name);
		jw_kdouble(&w, "value", p->wall_ns / 1e9);
		jw_kstr(&w, "unit", "s");
		perf_subtests(&w, p->cpu_ns, p->wall_ns, p->read_bytes, p->write_bytes,
			      p->peak_mem_bytes, p->execs);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
}

struct perf_file {
	const struct task_record *t;
	const char *framework;
};

static int write_file(FILE *f, void *ctx)
{
	const struct perf_file *p = ctx;

	task_record__write_perfherder(f, p->t, p->framework);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}

int task_record__save_perfherder(const char *path, const struct task_record *t,
				 const char *framework)
{
	struct perf_file p = { t, framework };
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(base);

	if (!strstr(base, "perfherder-data") || n < 5 || strcmp(base + n - 5, ".json"))
		tp_err("warning: Treeherder ingests only artifacts named *perfherder-data*.json, "
		       "not %s",
		       base);
	return tp_write_whole(path, write_file, &p);
}
