// SPDX-License-Identifier: GPL-2.0
/*
 * `taskprobe export ID --format F`: a stored task as other tools open it. Every figure
 * is the record's or the stored series' own: nothing is computed again differently.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "base/util.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "model/config.h"
#include "model/series.h"
#include "model/task.h"
#include "model/task_json.h"
#include "store/query.h"
#include "store/store.h"
#include "view/fxprofile.h"
#include "view/openmetrics.h"
#include "view/otlp.h"
#include "view/perfherder.h"

const char export_usage[] =
	"usage: taskprobe export ID --format FORMAT [-o FILE] [--db PATH] [--config PATH]\n"
	"                        [--host NAME]  (the task of this worker host, a glob)\n"
	"A stored task in a format other tools open:\n"
	"  chrome-trace  Trace Event JSON (Perfetto, chrome://tracing): the task and its\n"
	"                phases as durations, each process as a duration on its own\n"
	"                track, notable events as instants, CPU, memory,\n"
	"                disk, processes and network as counters (timestamps: us since\n"
	"                the start)\n"
	"  csv           the series, one row a sample: t_ms, cpu_millicores, mem_bytes,\n"
	"                read_bytes_per_s, write_bytes_per_s, procs, phase,\n"
	"                net_rx_bytes_per_s, net_tx_bytes_per_s, host_other_millicores\n"
	"  json          the task record (docs/task-record.md)\n"
	"  perfherder    Perfherder data, the task and each phase a suite (the same as\n"
	"                run --perfherder's line, without its prefix)\n"
	"  firefox-profiler  a processed profile (version 70) that profiler.firefox.com\n"
	"                opens: phases, processes and notable events as markers, a CPU\n"
	"                graph, memory, disk and network as counters\n"
	"  otlp          the task as an OpenTelemetry trace, OTLP/JSON (an\n"
	"                ExportTraceServiceRequest: POST it to a collector's /v1/traces)\n"
	"  otlp-metrics  the task's figures as OTLP metrics, OTLP/JSON (an\n"
	"                ExportMetricsServiceRequest, for a collector's /v1/metrics)\n"
	"  openmetrics   the task's figures as an OpenMetrics text file, one gauge a line,\n"
	"                each phase's labelled by phase (GitLab's artifacts:reports:metrics)\n"
	"  -o FILE       write FILE (whole, or not at all) instead of standard output\n";

enum export_format {
	EXPORT_CHROME,
	EXPORT_CSV,
	EXPORT_JSON,
	EXPORT_PERFHERDER,
	EXPORT_FIREFOX,
	EXPORT_OPENMETRICS,
	EXPORT_OTLP,
	EXPORT_OTLP_METRICS,
};

static const char *const format_names[] = {
	"chrome-trace",	    "csv",	   "json", "perfherder",
	"firefox-profiler", "openmetrics", "otlp", "otlp-metrics",
};

struct export
{
	enum export_format fmt;
	const char *id;
	const struct json *rec; /* NULL while the task runs */
	const struct series_point *pts;
	size_t n;
	const char *record_text;
	const struct query_task *q;
};

static void trace_event_on(struct jw *w, const char *name, const char *cat, const char *ph,
			   __u64 ts_us, __u64 tid)
{
	jw_obj_begin(w);
	jw_kstr(w, "name", name);
	if (cat)
		jw_kstr(w, "cat", cat);
	jw_kstr(w, "ph", ph);
	jw_ku64(w, "ts", ts_us);
	jw_ku64(w, "pid", 1);
	jw_ku64(w, "tid", tid);
}

/* An event on the task's own track (tid 1). */
static void trace_event(struct jw *w, const char *name, const char *cat, const char *ph,
			__u64 ts_us)
{
	trace_event_on(w, name, cat, ph, ts_us, 1);
}

/* Each process on a track of its own (tid: its pid), named by its command. */
static void trace_processes(struct jw *w, const struct json *ps)
{
	for (size_t i = 0; i < json_len(ps); i++) {
		const struct json *p = json_at(ps, i);
		__u64 pid = (__u64)json_num(p, "pid");
		__u64 t0 = (__u64)(json_num(p, "start_ms") * 1000 + 0.5);
		__u64 t1 = (__u64)(json_num(p, "end_ms") * 1000 + 0.5);
		const char *cmd = json_str(p, "command");
		char name[160];

		snprintf(name, sizeof(name), "%s %llu", tp_base_name(cmd), (unsigned long long)pid);
		trace_event_on(w, "thread_name", NULL, "M", 0, pid);
		jw_key(w, "args");
		jw_obj_begin(w);
		jw_kstr(w, "name", name);
		jw_obj_end(w);
		jw_obj_end(w);
		trace_event_on(w, tp_base_name(cmd), "process", "X", t0, pid);
		jw_ku64(w, "dur", t1 > t0 ? t1 - t0 : 0);
		jw_key(w, "args");
		jw_obj_begin(w);
		jw_ku64(w, "pid", pid);
		jw_ku64(w, "ppid", (__u64)json_num(p, "ppid"));
		jw_kstr(w, "command", cmd);
		jw_ku64(w, "cpu_ns", (__u64)json_num(p, "cpu_ns"));
		jw_kstr(w, "end", json_str(p, "end"));
		if (json_get(p, "exit")) {
			jw_key(w, "exit");
			jw_i64(w, (__s64)json_num(p, "exit"));
		}
		jw_obj_end(w);
		jw_obj_end(w);
	}
}

/* A counter track of the trace: one or two series fields (field 0, millicores, as cores). */
struct trace_counter {
	const char *name;
	const char *key[2];
	int field[2];
};

static const struct trace_counter counters[] = {
	{ "cpu", { "cores" }, { 0 } },
	{ "memory", { "bytes" }, { 1 } },
	{ "disk", { "read_bytes_per_s", "write_bytes_per_s" }, { 2, 3 } },
	{ "processes", { "alive" }, { 4 } },
	{ "network", { "rx_bytes_per_s", "tx_bytes_per_s" }, { 6, 7 } },
};

/* Trace Event Format: an object with traceEvents; ts and dur in microseconds. */
static void write_chrome(FILE *f, const struct export *x)
{
	const struct json *phases = json_get(x->rec, "phases"), *ev = json_get(x->rec, "events");
	const struct json *m = json_get(x->rec, "metrics");
	char title[TP_ID_MAX + 16];
	struct jw w;

	jw_init(&w, f, false);
	jw_obj_begin(&w);
	jw_kstr(&w, "displayTimeUnit", "ms");
	jw_key(&w, "otherData");
	jw_obj_begin(&w);
	jw_kstr(&w, "producer", "taskprobe " TP_VERSION);
	jw_kstr(&w, "id", x->id);
	jw_kstr(&w, "host", json_str(x->rec, "host"));
	jw_kstr(&w, "start", json_str(x->rec, "start"));
	jw_obj_end(&w);
	jw_key(&w, "traceEvents");
	jw_arr_begin(&w);
	snprintf(title, sizeof(title), "task %s", x->id);
	trace_event(&w, "process_name", NULL, "M", 0);
	jw_key(&w, "args");
	jw_obj_begin(&w);
	jw_kstr(&w, "name", title);
	jw_obj_end(&w);
	jw_obj_end(&w);
	/* The task, then its phases inside it on the same track: nesting is by time. */
	trace_event(&w, x->id, "task", "X", 0);
	jw_ku64(&w, "dur", (__u64)json_num(x->rec, "wall_ns") / 1000);
	jw_key(&w, "args");
	jw_obj_begin(&w);
	jw_kstr(&w, "status", json_str(x->rec, "status"));
	jw_ku64(&w, "exit_status", (__u64)json_num(x->rec, "exit_status"));
	jw_ku64(&w, "cpu_ns", (__u64)json_num(m, "cpu.time_ns"));
	jw_ku64(&w, "execs", (__u64)json_num(m, "proc.execs"));
	jw_obj_end(&w);
	jw_obj_end(&w);
	for (size_t i = 0; i < json_len(phases); i++) {
		const struct json *p = json_at(phases, i);

		trace_event(&w, json_str(p, "name"), "phase", "X",
			    (__u64)json_num(p, "start_ms") * 1000);
		jw_ku64(&w, "dur", (__u64)json_num(p, "wall_ns") / 1000);
		jw_key(&w, "args");
		jw_obj_begin(&w);
		jw_ku64(&w, "depth", (__u64)json_num(p, "depth"));
		jw_ku64(&w, "cpu_ns", (__u64)json_num(p, "cpu_ns"));
		jw_ku64(&w, "execs", (__u64)json_num(p, "execs"));
		jw_ku64(&w, "read_bytes", (__u64)json_num(p, "read_bytes"));
		jw_ku64(&w, "write_bytes", (__u64)json_num(p, "write_bytes"));
		jw_obj_end(&w);
		jw_obj_end(&w);
	}
	for (size_t i = 0; i < json_len(ev); i++) {
		const struct json *e = json_at(ev, i);

		trace_event(&w, json_str(e, "kind"), "event", "i",
			    (__u64)json_num(e, "t_ms") * 1000);
		jw_kstr(&w, "s", "p");
		jw_key(&w, "args");
		jw_obj_begin(&w);
		jw_kstr(&w, "detail", json_str(e, "detail"));
		jw_ku64(&w, "pid", (__u64)json_num(e, "pid"));
		jw_obj_end(&w);
		jw_obj_end(&w);
	}
	trace_processes(&w, json_get(x->rec, "processes"));
	/* The series as counters, a sample each: the stored values themselves. */
	for (size_t i = 0; i < x->n; i++) {
		const struct series_point *pt = &x->pts[i];

		for (size_t c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
			const struct trace_counter *tc = &counters[c];

			trace_event(&w, tc->name, "resource", "C", pt->t_ms * 1000);
			jw_key(&w, "args");
			jw_obj_begin(&w);
			for (int k = 0; k < 2 && tc->key[k]; k++) {
				jw_key(&w, tc->key[k]);
				if (tc->field[k] == 0)
					jw_double(&w, (double)pt->v[0] / 1000.0);
				else
					jw_i64(&w, pt->v[tc->field[k]]);
			}
			jw_obj_end(&w);
			jw_obj_end(&w);
		}
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
	fputc('\n', f);
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void write_csv(FILE *f, const struct export *x)
{
	const struct json *phases = json_get(x->rec, "phases");
	char pbuf[32];

	fputs("t_ms", f);
	for (int k = 0; k < SERIES_FIELDS; k++)
		fprintf(f, ",%s", series_field_names[k]);
	fputc('\n', f);
	for (size_t i = 0; i < x->n; i++) {
		const struct series_point *pt = &x->pts[i];

		fprintf(f, "%llu", (unsigned long long)pt->t_ms);
		for (int k = 0; k < SERIES_FIELDS; k++) {
			fputc(',', f);
			if (k != SERIES_PHASE)
				fprintf(f, "%lld", (long long)pt->v[k]);
			else if (pt->v[k] > 0)
				csv_field(f, query_phase_at(phases, (size_t)pt->v[k], pbuf,
							    sizeof(pbuf)));
		}
		fputc('\n', f);
	}
}

static int write_export(FILE *f, void *ctx)
{
	const struct export *x = ctx;
	struct task_record t;

	switch (x->fmt) {
	case EXPORT_CHROME:
		write_chrome(f, x);
		return 0;
	case EXPORT_CSV:
		write_csv(f, x);
		return 0;
	case EXPORT_JSON:
		fputs(x->record_text, f);
		if (!*x->record_text || x->record_text[strlen(x->record_text) - 1] != '\n')
			fputc('\n', f);
		return 0;
	case EXPORT_OPENMETRICS:
		return openmetrics_write(f, x->rec);
	case EXPORT_OTLP: {
		struct otlp_input in = { x->rec, x->q->labels, x->q->nlabels, &x->q->cfg };

		return otlp_write_traces(f, &in);
	}
	case EXPORT_OTLP_METRICS: {
		struct otlp_input in = { x->rec, x->q->labels, x->q->nlabels, &x->q->cfg };

		return otlp_write_metrics(f, &in);
	}
	case EXPORT_FIREFOX: {
		struct report_input in = { x->rec, x->pts, x->n, x->q->labels, x->q->nlabels };

		return fxprofile_write(f, &in);
	}
	case EXPORT_PERFHERDER: {
		if (task_record__from_json(&t, x->rec)) {
			task_record__fini(&t);
			tp_err("export: the record of '%s' cannot be read back", x->id);
			return -EINVAL;
		}
		task_record__write_perfherder(f, &t, x->q->cfg.perfherder_framework);
		fputc('\n', f);
		task_record__fini(&t);
		return 0;
	}
	}
	return -EINVAL;
}

static int export_opt(void *ctx, int opt, char *arg)
{
	*(const char **)ctx = arg; /* --format */
	return 0;
}

int cmd_export(int argc, char **argv)
{
	static const struct option own[] = {
		{ "format", required_argument, NULL, 'f' },
		{ 0 },
	};
	const char *format = NULL;
	const struct cli_cmd cmd = {
		.name = "export",
		.usage = export_usage,
		.shared = SHARED_DB | SHARED_CONFIG | SHARED_HOST | SHARED_OUTPUT,
		.own = own,
		.own_opt = export_opt,
		.ctx = &format,
	};
	const char *out;
	struct shared_opts so;
	struct export x = { 0 };
	struct query_task q;
	int fmt = -1, err, ret;

	ret = cli_parse(argc, argv, &cmd, &so);
	if (ret)
		return ret > 0 ? 0 : 2;
	out = so.output;
	for (size_t i = 0; format && i < ARRAY_SIZE(format_names); i++)
		if (!strcmp(format, format_names[i]))
			fmt = (int)i;
	if (optind != argc - 1 || fmt < 0) {
		tp_err("export: %s; see 'taskprobe export --help'",
		       optind != argc - 1 ? "one task id, please"
		       : format		  ? "--format is chrome-trace, csv, json, perfherder, "
					    "firefox-profiler, openmetrics, otlp or otlp-metrics"
					  : "--format FORMAT is required");
		return 2;
	}
	x.id = argv[optind];
	x.fmt = (enum export_format)fmt;
	ret = 1;
	if (query_task__load(&q, so.db, so.config, x.id, so.host, fmt != EXPORT_CSV, "export"))
		goto out;
	x.rec = q.rec;
	x.record_text = q.st.record;
	x.pts = q.pts;
	x.n = q.n;
	x.q = &q;
	if (!out)
		err = write_export(stdout, &x) || fflush(stdout) || ferror(stdout) ? -EIO : 0;
	else
		err = tp_write_whole(out, write_export, &x);
	if (err && out && err != -EINVAL)
		tp_err("export: cannot write %s: %s", out, strerror(-err));
	ret = err ? 1 : 0;
out:
	query_task__free(&q);
	return ret;
}
