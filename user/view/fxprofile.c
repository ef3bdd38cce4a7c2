// SPDX-License-Identifier: GPL-2.0
/*
 * A stored task as a Firefox Profiler processed profile (version FXPROFILE_VERSION).
 * There are no stacks: the task is one thread of markers (phases, processes, notable
 * events, and a CPU graph sample by sample), and memory, disk and network are
 * counters. Times are milliseconds since the task started (meta.startTime).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "base/json.h"
#include "base/util.h"
#include "store/query.h"
#include "view/fxprofile.h"

/* meta.categories, by index. */
enum fx_category { CAT_OTHER, CAT_PHASE, CAT_PROCESS, CAT_FAILURE, CAT_RESOURCE, CAT_N };

static const char *const cat_names[CAT_N] = { "Other", "Phase", "Process", "Failure", "Resource" };
static const char *const cat_colors[CAT_N] = { "grey", "blue", "green", "red", "orange" };

/* The marker phases of the profiler (src/app-logic/constants.ts). */
#define FX_INSTANT 0
#define FX_INTERVAL 1

enum marker_kind { MK_PHASE, MK_PROCESS, MK_FAILURE, MK_CPU };

struct marker {
	enum marker_kind kind;
	int name; /* index into the string array */
	double start;
	double end; /* < 0: none (an instant) */
	const struct json *src;
	size_t sample; /* MK_CPU: index into the series */
};

/* profile.shared.stringArray, each string once. */
struct strtab {
	const char **v;
	size_t n;
	size_t cap;
	struct htab index; /* hash, probed linearly -> index + 1 */
};

struct fx {
	const struct report_input *in;
	struct strtab st;
	struct marker *m;
	size_t nm;
	size_t cap;
	double ncpu;
	int err;
};

static int str_index(struct fx *x, const char *s)
{
	struct strtab *t = &x->st;
	__u64 key = tp_hash_str(s);
	__u32 *ref;

	for (;; key++) {
		ref = htab__get(&t->index, key);
		if (!ref)
			break;
		if (!strcmp(t->v[*ref - 1], s))
			return (int)*ref - 1;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		const char **v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			goto nomem;
		t->v = v;
		t->cap = cap;
	}
	ref = htab__put(&t->index, key);
	if (!ref)
		goto nomem;
	t->v[t->n] = s;
	*ref = (__u32)++t->n;
	return (int)t->n - 1;
nomem:
	x->err = -ENOMEM;
	return 0;
}

static void add_marker(struct fx *x, const struct marker *m)
{
	if (x->nm == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 256;
		struct marker *v = realloc(x->m, cap * sizeof(*v));

		if (!v) {
			x->err = -ENOMEM;
			return;
		}
		x->m = v;
		x->cap = cap;
	}
	x->m[x->nm++] = *m;
}

static void collect_markers(struct fx *x)
{
	const struct json *rec = x->in->rec;
	const struct json *phases = json_get(rec, "phases"), *ps = json_get(rec, "processes");
	const struct json *ev = json_get(rec, "events");
	struct marker m;

	for (size_t i = 0; i < json_len(phases); i++) {
		const struct json *p = json_at(phases, i);

		m = (struct marker){
			MK_PHASE, str_index(x, json_str(p, "name")), json_num(p, "start_ms"), 0, p,
			0
		};
		m.end = m.start + json_num(p, "wall_ns") / 1e6;
		add_marker(x, &m);
	}
	for (size_t i = 0; i < json_len(ps); i++) {
		const struct json *p = json_at(ps, i);

		m = (struct marker){ MK_PROCESS,
				     str_index(x, tp_base_name(json_str(p, "command"))),
				     json_num(p, "start_ms"),
				     json_num(p, "end_ms"),
				     p,
				     0 };
		add_marker(x, &m);
	}
	for (size_t i = 0; i < json_len(ev); i++) {
		const struct json *e = json_at(ev, i);

		m = (struct marker){
			MK_FAILURE, str_index(x, json_str(e, "kind")), json_num(e, "t_ms"), -1, e, 0
		};
		add_marker(x, &m);
	}
	/* CPU in use over each sample's interval: the interval ending at its time. */
	for (size_t i = 0; i < x->in->n; i++) {
		m = (struct marker){ MK_CPU,
				     str_index(x, "CPU"),
				     i ? (double)x->in->pts[i - 1].t_ms : 0,
				     (double)x->in->pts[i].t_ms,
				     NULL,
				     i };
		add_marker(x, &m);
	}
}

struct schema_field {
	const char *key;
	const char *label;
	const char *format;
};

/* One entry of meta.markerSchema (src/types/markers.ts: MarkerSchema). */
struct schema {
	const char *name;
	const char *tooltip;
	const char *table; /* NULL: none */
	const char *chart; /* NULL: none */
	const char *description;
	const char *const *display;
	const struct schema_field *fields; /* ends with a NULL key */
	bool stack_based;
	const char *graph; /* the field drawn as a track of its own, or NULL */
};

static const char *const on_chart[] = { "marker-chart", "marker-table", "timeline-overview", NULL };
static const char *const on_table[] = { "marker-chart", "marker-table", NULL };
static const char *const nowhere[] = { NULL };

static const struct schema_field phase_fields[] = {
	{ "name", "Phase", "string" },
	{ "depth", "Depth", "integer" },
	{ "cpu", "CPU time", "duration" },
	{ "cpuPercent", "CPU (of one core)", "percentage" },
	{ "execs", "Execs", "integer" },
	{ "readBytes", "Disk read", "bytes" },
	{ "writeBytes", "Disk written", "bytes" },
	{ "peakMemory", "Peak memory", "bytes" },
	{ NULL },
};

/* command: file-path, so that a public upload can strip it */
static const struct schema_field process_fields[] = {
	{ "pid", "PID", "integer" },
	{ "ppid", "Parent PID", "integer" },
	{ "command", "Command", "file-path" },
	{ "cpu", "CPU time", "duration" },
	{ "cpuPercent", "CPU (of one core)", "percentage" },
	{ "end", "Ended", "string" },
	{ "exit", "Exit status", "integer" },
	{ NULL },
};

static const struct schema_field failure_fields[] = {
	{ "kind", "Kind", "string" },
	{ "detail", "Detail", "string" },
	{ "pid", "PID", "integer" },
	{ "code", "Code", "integer" },
	{ NULL },
};

static const struct schema_field cpu_fields[] = {
	{ "cores", "Cores in use", "decimal" },
	{ "hostShare", "Of the host's cores", "percentage" },
	{ "processes", "Processes alive", "integer" },
	{ NULL },
};

static const struct schema schemas[] = {
	{ "Phase", "phase {marker.data.name}", "{marker.data.name}: {marker.data.cpu} CPU",
	  "{marker.data.name}", "A phase the task marked (BEGIN_PHASE/END_PHASE, emit)", on_chart,
	  phase_fields, true, NULL },
	{ "Process", "{marker.data.command} ({marker.data.pid})",
	  "{marker.data.command} pid {marker.data.pid}", "{marker.name} {marker.data.pid}",
	  "A process of the task, from its start to its exit", on_table, process_fields, false,
	  NULL },
	{ "Failure", "{marker.data.detail}", "{marker.data.detail}", "{marker.data.detail}",
	  "A failed exit, OOM kill, failed connect or HTTP failure", on_chart, failure_fields,
	  false, NULL },
	{ "CPU", "{marker.data.cores} cores in use", NULL, NULL,
	  "CPU in use over a sample's interval (the cgroup's cpu.stat)", nowhere, cpu_fields, false,
	  "cores" },
};

static void schema_write(struct jw *w, const struct schema *sc)
{
	jw_obj_begin(w);
	jw_kstr(w, "name", sc->name);
	jw_kstr(w, "tooltipLabel", sc->tooltip);
	if (sc->table)
		jw_kstr(w, "tableLabel", sc->table);
	if (sc->chart)
		jw_kstr(w, "chartLabel", sc->chart);
	jw_kstr(w, "description", sc->description);
	jw_key(w, "display");
	jw_arr_begin(w);
	for (const char *const *d = sc->display; *d; d++)
		jw_str(w, *d);
	jw_arr_end(w);
	jw_key(w, "fields");
	jw_arr_begin(w);
	for (const struct schema_field *f = sc->fields; f->key; f++) {
		jw_obj_begin(w);
		jw_kstr(w, "key", f->key);
		jw_kstr(w, "label", f->label);
		jw_kstr(w, "format", f->format);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	if (sc->stack_based) {
		jw_key(w, "isStackBased");
		jw_bool(w, true);
	}
	if (sc->graph) {
		jw_key(w, "graphs");
		jw_arr_begin(w);
		jw_obj_begin(w);
		jw_kstr(w, "key", sc->graph);
		jw_kstr(w, "type", "line-filled");
		jw_kstr(w, "color", "blue");
		jw_obj_end(w);
		jw_arr_end(w);
	}
	jw_obj_end(w);
}

static void marker_schema(struct jw *w)
{
	jw_key(w, "markerSchema");
	jw_arr_begin(w);
	for (size_t i = 0; i < ARRAY_SIZE(schemas); i++)
		schema_write(w, &schemas[i]);
	jw_arr_end(w);
}

static void kdouble(struct jw *w, const char *key, double v)
{
	jw_key(w, key);
	jw_double(w, v);
}

static void ki64(struct jw *w, const char *key, long long v)
{
	jw_key(w, key);
	jw_i64(w, v);
}

static void marker_data(struct jw *w, const struct fx *x, const struct marker *m)
{
	const struct json *p = m->src;
	double span = m->end - m->start;

	jw_obj_begin(w);
	switch (m->kind) {
	case MK_PHASE:
		jw_kstr(w, "type", "Phase");
		jw_kstr(w, "name", json_str(p, "name"));
		ki64(w, "depth", (long long)json_num(p, "depth"));
		kdouble(w, "cpu", json_num(p, "cpu_ns") / 1e6);
		kdouble(w, "cpuPercent", span > 0 ? json_num(p, "cpu_ns") / 1e6 / span : 0);
		ki64(w, "execs", (long long)json_num(p, "execs"));
		ki64(w, "readBytes", (long long)json_num(p, "read_bytes"));
		ki64(w, "writeBytes", (long long)json_num(p, "write_bytes"));
		ki64(w, "peakMemory", (long long)json_num(p, "peak_mem_bytes"));
		break;
	case MK_PROCESS:
		jw_kstr(w, "type", "Process");
		ki64(w, "pid", (long long)json_num(p, "pid"));
		ki64(w, "ppid", (long long)json_num(p, "ppid"));
		jw_kstr(w, "command", json_str(p, "command"));
		kdouble(w, "cpu", json_num(p, "cpu_ns") / 1e6);
		kdouble(w, "cpuPercent", span > 0 ? json_num(p, "cpu_ns") / 1e6 / span : 0);
		jw_kstr(w, "end", json_str(p, "end"));
		if (json_get(p, "exit"))
			ki64(w, "exit", (long long)json_num(p, "exit"));
		break;
	case MK_FAILURE:
		jw_kstr(w, "type", "Failure");
		jw_kstr(w, "kind", json_str(p, "kind"));
		jw_kstr(w, "detail", json_str(p, "detail"));
		ki64(w, "pid", (long long)json_num(p, "pid"));
		ki64(w, "code", (long long)json_num(p, "code"));
		break;
	case MK_CPU: {
		const struct series_point *pt = &x->in->pts[m->sample];

		jw_kstr(w, "type", "CPU");
		kdouble(w, "cores", (double)pt->v[0] / 1000.0);
		kdouble(w, "hostShare", x->ncpu > 0 ? (double)pt->v[0] / 1000.0 / x->ncpu : 0);
		ki64(w, "processes", pt->v[4]);
		break;
	}
	}
	jw_obj_end(w);
}

static const enum fx_category marker_cat[] = {
	[MK_PHASE] = CAT_PHASE,
	[MK_PROCESS] = CAT_PROCESS,
	[MK_FAILURE] = CAT_FAILURE,
	[MK_CPU] = CAT_RESOURCE,
};

static void markers(struct jw *w, const struct fx *x)
{
	jw_key(w, "markers");
	jw_obj_begin(w);
	jw_key(w, "data");
	jw_arr_begin(w);
	for (size_t i = 0; i < x->nm; i++)
		marker_data(w, x, &x->m[i]);
	jw_arr_end(w);
	jw_key(w, "name");
	jw_arr_begin(w);
	for (size_t i = 0; i < x->nm; i++)
		jw_u64(w, (__u64)x->m[i].name);
	jw_arr_end(w);
	jw_key(w, "startTime");
	jw_arr_begin(w);
	for (size_t i = 0; i < x->nm; i++)
		jw_double(w, x->m[i].start);
	jw_arr_end(w);
	jw_key(w, "endTime");
	jw_arr_begin(w);
	for (size_t i = 0; i < x->nm; i++)
		x->m[i].end < 0 ? jw_null(w) : jw_double(w, x->m[i].end);
	jw_arr_end(w);
	jw_key(w, "phase");
	jw_arr_begin(w);
	for (size_t i = 0; i < x->nm; i++)
		jw_u64(w, x->m[i].end < 0 ? FX_INSTANT : FX_INTERVAL);
	jw_arr_end(w);
	jw_key(w, "category");
	jw_arr_begin(w);
	for (size_t i = 0; i < x->nm; i++)
		jw_u64(w, marker_cat[x->m[i].kind]);
	jw_arr_end(w);
	jw_ku64(w, "length", x->nm);
	jw_obj_end(w);
}

/* An empty table of the shared data: its columns, each [], and length 0. */
static void empty_table(struct jw *w, const char *key, const char *const *cols)
{
	jw_key(w, key);
	jw_obj_begin(w);
	for (; *cols; cols++) {
		jw_key(w, *cols);
		jw_arr_begin(w);
		jw_arr_end(w);
	}
	jw_ku64(w, "length", 0);
	jw_obj_end(w);
}

static void shared(struct jw *w, const struct fx *x)
{
	static const char *const stack[] = { "frame", "prefixOffset", NULL };
	static const char *const frame[] = {
		"address", "inlineDepth", "category",	      "subcategory",
		"func",	   "lib",	  "nativeSymbol",     "innerWindowID",
		"line",	   "column",	  "originalLocation", NULL
	};
	static const char *const func[] = { "isJS",	    "relevantForJS",	"name",
					    "resource",	    "source",		"lineNumber",
					    "columnNumber", "originalLocation", NULL };
	static const char *const resource[] = { "name", "host", "type", NULL };
	static const char *const natives[] = { "libIndex", "address", "name", "functionSize",
					       NULL };
	static const char *const sources[] = { "id",	      "filename",     "startLine",
					       "startColumn", "sourceMapURL", "content",
					       NULL };
	static const char *const locations[] = { "source", "line", "column", NULL };

	jw_key(w, "shared");
	jw_obj_begin(w);
	empty_table(w, "stackTable", stack);
	empty_table(w, "frameTable", frame);
	empty_table(w, "funcTable", func);
	empty_table(w, "resourceTable", resource);
	empty_table(w, "nativeSymbols", natives);
	empty_table(w, "sources", sources);
	empty_table(w, "sourceLocationTable", locations);
	jw_key(w, "stringArray");
	jw_arr_begin(w);
	for (size_t i = 0; i < x->st.n; i++)
		jw_str(w, x->st.v[i]);
	jw_arr_end(w);
	jw_obj_end(w);
}

/* A counter's tooltip row. */
static void tip(struct jw *w, const char *source, const char *unit, const char *label,
		bool selection)
{
	jw_obj_begin(w);
	jw_kstr(w, "type", "value");
	jw_kstr(w, "source", source);
	jw_key(w, "format");
	jw_obj_begin(w);
	jw_kstr(w, "unit", unit);
	jw_obj_end(w);
	jw_kstr(w, "label", label);
	if (selection) {
		jw_key(w, "requiresPreviewSelection");
		jw_bool(w, true);
	}
	jw_obj_end(w);
}

/*
 * A counter from series field f. Memory (accumulated): each sample's count is the
 * change since the one before, from 0 at time 0, so the graph is the resident bytes.
 * Rates: each sample's count is the bytes of its interval (rate times its length).
 */
static void counter(struct jw *w, const struct fx *x, const char *pid, int f, const char *name,
		    const char *color, int weight)
{
	const struct series_point *pts = x->in->pts;
	bool mem = f == 1;

	jw_obj_begin(w);
	jw_kstr(w, "name", name);
	jw_kstr(w, "category", mem ? "Memory" : "Bandwidth");
	jw_kstr(w, "description",
		mem ? "resident memory of the task, as sampled"
		    : "bytes per second over each sample's interval");
	jw_kstr(w, "pid", pid);
	jw_ku64(w, "mainThreadIndex", 0);
	jw_key(w, "samples");
	jw_obj_begin(w);
	jw_key(w, "time");
	jw_arr_begin(w);
	jw_u64(w, 0);
	for (size_t i = 0; i < x->in->n; i++)
		jw_u64(w, pts[i].t_ms);
	jw_arr_end(w);
	jw_key(w, "count");
	jw_arr_begin(w);
	jw_u64(w, 0);
	for (size_t i = 0; i < x->in->n; i++) {
		__u64 t0 = i ? pts[i - 1].t_ms : 0;

		if (mem)
			jw_i64(w, pts[i].v[1] - (i ? pts[i - 1].v[1] : 0));
		else
			jw_i64(w, (long long)((double)pts[i].v[f] * (double)(pts[i].t_ms - t0) /
						      1000.0 +
					      0.5));
	}
	jw_arr_end(w);
	jw_ku64(w, "length", x->in->n + 1);
	jw_obj_end(w);
	jw_key(w, "display");
	jw_obj_begin(w);
	jw_kstr(w, "graphType", mem ? "line-accumulated" : "line-rate");
	jw_kstr(w, "unit", "bytes");
	jw_kstr(w, "color", color);
	jw_key(w, "markerSchemaLocation");
	jw_null(w);
	jw_ku64(w, "sortWeight", (__u64)weight);
	jw_kstr(w, "label", name);
	jw_key(w, "tooltipRows");
	jw_arr_begin(w);
	if (mem) {
		tip(w, "accumulated", "bytes", "resident", false);
		tip(w, "count-range", "bytes", "range in the graph", false);
	} else {
		tip(w, "rate", "bytes-per-second", "rate over the sample", false);
		tip(w, "count-range", "bytes", "in the visible range", false);
		tip(w, "selection-total", "bytes", "in the selection", true);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	jw_obj_end(w);
}

static void extra(struct jw *w, const struct fx *x)
{
	const struct json *rec = x->in->rec, *cmd = json_get(rec, "command");
	char line[1024] = "";
	size_t used = 0;

	for (size_t i = 0; i < json_len(cmd) && used < sizeof(line) - 1; i++)
		used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s", i ? " " : "",
					 json_at(cmd, i)->str ? json_at(cmd, i)->str : "");
	jw_key(w, "extra");
	jw_arr_begin(w);
	jw_obj_begin(w);
	jw_kstr(w, "label", "Task");
	jw_key(w, "entries");
	jw_arr_begin(w);
#define ENTRY(l, v)                                                                                \
	do {                                                                                       \
		jw_obj_begin(w);                                                                   \
		jw_kstr(w, "label", l);                                                            \
		jw_kstr(w, "format", "string");                                                    \
		jw_kstr(w, "value", v);                                                            \
		jw_obj_end(w);                                                                     \
	} while (0)
	ENTRY("id", json_str(rec, "id"));
	ENTRY("command", line);
	ENTRY("status", json_str(rec, "status"));
	ENTRY("start (UTC)", json_str(rec, "start"));
	ENTRY("host", json_str(rec, "host"));
	for (int i = 0; i < x->in->nlabels; i++)
		ENTRY(x->in->labels[i].key, x->in->labels[i].val);
#undef ENTRY
	jw_arr_end(w);
	jw_obj_end(w);
	jw_arr_end(w);
}

static void meta(struct jw *w, const struct fx *x, double wall_ms)
{
	const struct json *rec = x->in->rec;
	double start_ms = json_num(rec, "start_ns") / 1e6;
	double interval = x->in->n > 1 ? (double)(x->in->pts[1].t_ms - x->in->pts[0].t_ms) : 1000;
	char product[TP_ID_MAX + 32];

	snprintf(product, sizeof(product), "taskprobe task %s", json_str(rec, "id"));
	jw_key(w, "meta");
	jw_obj_begin(w);
	kdouble(w, "interval", interval > 0 ? interval : 1000);
	kdouble(w, "startTime", start_ms);
	kdouble(w, "endTime", start_ms + wall_ms);
	kdouble(w, "profilingStartTime", 0);
	kdouble(w, "profilingEndTime", wall_ms);
	jw_ku64(w, "processType", 0);
	jw_kstr(w, "product", product);
	jw_ku64(w, "stackwalk", 0);
	jw_ku64(w, "version", FXPROFILE_GECKO_VERSION);
	jw_ku64(w, "preprocessedProfileVersion", FXPROFILE_VERSION);
	jw_kstr(w, "platform", "Linux");
	jw_kstr(w, "importedFrom", "taskprobe " TP_VERSION);
	if (x->ncpu > 0)
		jw_ku64(w, "logicalCPUs", (__u64)x->ncpu);
	jw_key(w, "symbolicated");
	jw_bool(w, true);
	jw_key(w, "usesOnlyOneStackType");
	jw_bool(w, true);
	jw_key(w, "keepProfileThreadOrder");
	jw_bool(w, true);
	jw_key(w, "initialVisibleThreads");
	jw_arr_begin(w);
	jw_u64(w, 0);
	jw_arr_end(w);
	jw_key(w, "initialSelectedThreads");
	jw_arr_begin(w);
	jw_u64(w, 0);
	jw_arr_end(w);
	jw_key(w, "categories");
	jw_arr_begin(w);
	for (int i = 0; i < CAT_N; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "name", cat_names[i]);
		jw_kstr(w, "color", cat_colors[i]);
		jw_key(w, "subcategories");
		jw_arr_begin(w);
		jw_str(w, "Other");
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "extensions");
	jw_obj_begin(w);
	jw_key(w, "baseURL");
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_key(w, "id");
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_key(w, "name");
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_ku64(w, "length", 0);
	jw_obj_end(w);
	marker_schema(w);
	extra(w, x);
	jw_obj_end(w);
}

static void thread(struct jw *w, const struct fx *x, const char *pid, double wall_ms)
{
	const struct json *rec = x->in->rec;
	const struct json *cmd = json_at(json_get(rec, "command"), 0);
	char name[TP_ID_MAX + 16], pname[160];

	snprintf(name, sizeof(name), "task %s", json_str(rec, "id"));
	snprintf(pname, sizeof(pname), "%s", cmd && cmd->str ? tp_base_name(cmd->str) : "task");
	jw_obj_begin(w);
	jw_kstr(w, "processType", "default");
	jw_ku64(w, "processStartupTime", 0);
	kdouble(w, "processShutdownTime", wall_ms);
	jw_ku64(w, "registerTime", 0);
	jw_key(w, "unregisterTime");
	jw_null(w);
	jw_key(w, "pausedRanges");
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_key(w, "showMarkersInTimeline");
	jw_bool(w, true);
	jw_kstr(w, "name", name);
	jw_kstr(w, "processName", pname);
	jw_key(w, "isMainThread");
	jw_bool(w, true);
	jw_kstr(w, "pid", pid);
	jw_ku64(w, "tid", (__u64)atol(pid));
	jw_key(w, "samples");
	jw_obj_begin(w);
	jw_kstr(w, "weightType", "samples");
	jw_key(w, "weight");
	jw_null(w);
	jw_key(w, "eventDelay");
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_key(w, "stack");
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_key(w, "time");
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_ku64(w, "length", 0);
	jw_obj_end(w);
	markers(w, x);
	jw_obj_end(w);
}

int fxprofile_write(FILE *f, const struct report_input *in)
{
	const struct json *first = json_at(json_get(in->rec, "processes"), 0);
	const char *ncpu = query_label(in->labels, in->nlabels, "ncpu");
	double wall_ms = json_num(in->rec, "wall_ns") / 1e6;
	struct fx x = { .in = in, .ncpu = ncpu ? atof(ncpu) : 0 };
	char pid[24];
	struct jw w;
	int err;

	/* The task's process is its first (the one that started it), as a string. */
	snprintf(pid, sizeof(pid), "%llu", first ? (unsigned long long)json_num(first, "pid") : 1);
	if (htab__init(&x.st.index, sizeof(__u32)))
		return -ENOMEM;
	str_index(&x, "CPU");
	collect_markers(&x);
	if (x.err)
		goto out;
	jw_init(&w, f, false);
	jw_obj_begin(&w);
	meta(&w, &x, wall_ms);
	jw_key(&w, "libs");
	jw_arr_begin(&w);
	jw_arr_end(&w);
	jw_key(&w, "pages");
	jw_arr_begin(&w);
	jw_arr_end(&w);
	jw_key(&w, "counters");
	jw_arr_begin(&w);
	counter(&w, &x, pid, 1, "Memory", "orange", 20);
	counter(&w, &x, pid, 2, "Disk read", "purple", 21);
	counter(&w, &x, pid, 3, "Disk write", "magenta", 22);
	counter(&w, &x, pid, 6, "Network received", "teal", 23);
	counter(&w, &x, pid, 7, "Network sent", "green", 24);
	jw_arr_end(&w);
	shared(&w, &x);
	jw_key(&w, "threads");
	jw_arr_begin(&w);
	thread(&w, &x, pid, wall_ms);
	jw_arr_end(&w);
	jw_obj_end(&w);
	fputc('\n', f);
out:
	err = x.err;
	free(x.m);
	free(x.st.v);
	htab__fini(&x.st.index);
	return err;
}
