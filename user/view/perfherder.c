// SPDX-License-Identifier: GPL-2.0
/* A task's figures as a Perfherder performance artifact (Treeherder's schema). */
#include <stdio.h>

#include "view/perfherder.h"

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

void task_record__print_perfherder(FILE *f, const struct task_record *t)
{
	fputs(PERFHERDER_PREFIX, f);
	task_record__write_perfherder(f, t);
	fputc('\n', f);
	fflush(f);
}

void task_record__write_perfherder(FILE *f, const struct task_record *t)
{
	const struct task_figures *g = &t->fig;
	const char *src;
	char name[UM_NAME_MAX + 8];
	struct jw w;

	jw_init(&w, f, false);
	jw_obj_begin(&w);
	jw_key(&w, "framework");
	jw_obj_begin(&w);
	jw_kstr(&w, "name", "job_resource_usage");
	jw_obj_end(&w);
	jw_key(&w, "suites");
	jw_arr_begin(&w);
	/* The suite's value is its wall time in seconds. */
	jw_obj_begin(&w);
	jw_kstr(&w, "name", "task");
	jw_kdouble(&w, "value", t->wall_ns / 1e9);
	jw_kstr(&w, "unit", "s");
	perf_subtests(&w, g->cpu.cpu_ns, t->wall_ns, g->ioac.read_bytes, g->ioac.write_bytes,
		      (__s64)task_record__mem_peak(t, &src), g->proc.execs);
	jw_obj_end(&w);
	for (size_t i = 0; t->phases && i < t->phases->n; i++) {
		const struct phase *p = &t->phases->p[i];

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
