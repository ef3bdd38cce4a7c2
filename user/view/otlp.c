// SPDX-License-Identifier: GPL-2.0
/* A task as an OpenTelemetry trace in OTLP/JSON (otlp.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/metric_descs.h"
#include "session/hostinfo.h"
#include "view/otlp.h"

/* OTLP's enums, as OTLP/JSON writes them: integers. */
#define SPAN_KIND_INTERNAL 1
#define STATUS_OK 1
#define STATUS_ERROR 2

/*
 * FNV-1a over the task's key (host, id, start): its trace is the same document each
 * time it is sent, so a retry after a lost answer is the same trace, not a second one.
 */
static __u64 fnv(__u64 h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1; /* an all-zero id is invalid */
}

static void hex_id(char *out, const __u64 *w, int nwords)
{
	for (int i = 0; i < nwords; i++)
		snprintf(out + 16 * i, 17, "%016llx", (unsigned long long)w[i]);
}

static void attr_str(struct jw *w, const char *key, const char *v)
{
	jw_obj_begin(w);
	jw_kstr(w, "key", key);
	jw_key(w, "value");
	jw_obj_begin(w);
	jw_kstr(w, "stringValue", v);
	jw_obj_end(w);
	jw_obj_end(w);
}

/* A number: a whole one under int_key (a decimal string, as OTLP/JSON has int64). */
static void number(struct jw *w, const char *int_key, const char *double_key, const struct json *v)
{
	char num[32];

	if (v->exact) {
		snprintf(num, sizeof(num), "%lld", (long long)v->u);
		jw_kstr(w, int_key, num);
	} else {
		jw_kdouble(w, double_key, v->num);
	}
}

/* A figure as an attribute. */
static void attr_num(struct jw *w, const char *key, const struct json *v)
{
	jw_obj_begin(w);
	jw_kstr(w, "key", key);
	jw_key(w, "value");
	jw_obj_begin(w);
	number(w, "intValue", "doubleValue", v);
	jw_obj_end(w);
	jw_obj_end(w);
}

static void ns_key(struct jw *w, const char *key, __u64 ns)
{
	char num[32];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)ns);
	jw_kstr(w, key, num);
}

/* The semantic conventions' cicd.pipeline.task.run.result of a task's end. */
static const char *run_result(const struct json *rec)
{
	const char *st = json_str(rec, "status");

	if (!strcmp(st, "exited") || !strcmp(st, "ended"))
		return json_num(rec, "exit_status") == 0 ? "success" : "failure";
	if (!strcmp(st, "signaled") || !strcmp(st, "interrupted"))
		return "cancellation";
	return "error"; /* not_found, exec_failed: the task could not run */
}

static void resource(struct jw *w, const struct otlp_input *in)
{
	char key[96];

	jw_key(w, "resource");
	jw_obj_begin(w);
	jw_key(w, "attributes");
	jw_arr_begin(w);
	attr_str(w, "host.name", json_str(in->rec, "host"));
	attr_str(w, "cicd.worker.name", json_str(in->rec, "host"));
	attr_str(w, "service.name", "taskprobe");
	for (int i = 0; i < in->nlabels; i++) {
		if (!hostinfo_is_label(in->labels[i].key) || !strcmp(in->labels[i].key, "host"))
			continue;
		snprintf(key, sizeof(key), "taskprobe.host.%s", in->labels[i].key);
		attr_str(w, key, in->labels[i].val);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

/* The run: its id, result and the labels the config maps to cicd.* attributes. */
static void run_attributes(struct jw *w, const struct otlp_input *in)
{
	const struct json *labels = json_get(in->rec, "labels");

	attr_str(w, "cicd.pipeline.task.run.id", json_str(in->rec, "id"));
	attr_str(w, "cicd.pipeline.task.run.result", run_result(in->rec));
	for (int i = 0; in->cfg && i < in->cfg->notlp_attrs; i++) {
		const struct json *v = json_get(labels, in->cfg->otlp_attrs[i].label);

		if (v && v->type == JSON_STR)
			attr_str(w, in->cfg->otlp_attrs[i].attr, v->str);
	}
}

/*
 * An export request's nesting down to its list of items: {"resourceX": [{resource,
 * "scopeX": [{scope, "items": [ ... (envelope_end closes it).
 */
static void envelope_begin(struct jw *w, const struct otlp_input *in, const char *resources,
			   const char *scopes, const char *items)
{
	jw_obj_begin(w);
	jw_key(w, resources);
	jw_arr_begin(w);
	jw_obj_begin(w);
	resource(w, in);
	jw_key(w, scopes);
	jw_arr_begin(w);
	jw_obj_begin(w);
	jw_key(w, "scope");
	jw_obj_begin(w);
	jw_kstr(w, "name", "taskprobe");
	jw_kstr(w, "version", TP_VERSION);
	jw_obj_end(w);
	jw_key(w, items);
	jw_arr_begin(w);
}

static void envelope_end(struct jw *w)
{
	jw_arr_end(w);
	jw_obj_end(w);
	jw_arr_end(w);
	jw_obj_end(w);
	jw_arr_end(w);
	jw_obj_end(w);
}

/* The task span's attributes: the run, the mapped labels, every label, every figure. */
static void task_attributes(struct jw *w, const struct otlp_input *in)
{
	const struct json *labels = json_get(in->rec, "labels"), *m = json_get(in->rec, "metrics");
	char key[160];

	jw_key(w, "attributes");
	jw_arr_begin(w);
	run_attributes(w, in);
	for (const struct json *l = labels ? labels->child : NULL; l; l = l->next) {
		snprintf(key, sizeof(key), "taskprobe.label.%s", l->key);
		if (l->type == JSON_STR)
			attr_str(w, key, l->str);
	}
	attr_str(w, "taskprobe.status", json_str(in->rec, "status"));
	attr_num(w, "taskprobe.exit_status", json_get(in->rec, "exit_status"));
	for (const struct json *v = m ? m->child : NULL; v; v = v->next) {
		if (v->type != JSON_NUM || !metric_is_builtin(v->key))
			continue;
		snprintf(key, sizeof(key), "taskprobe.%s", v->key);
		attr_num(w, key, v);
	}
	jw_arr_end(w);
}

static void task_events(struct jw *w, const struct json *rec, __u64 start_ns)
{
	const struct json *ev = json_get(rec, "events");

	jw_key(w, "events");
	jw_arr_begin(w);
	for (size_t i = 0; i < json_len(ev); i++) {
		const struct json *e = json_at(ev, i);

		jw_obj_begin(w);
		ns_key(w, "timeUnixNano", start_ns + json_u64(e, "t_ms") * 1000000ULL);
		jw_kstr(w, "name", json_str(e, "kind"));
		jw_key(w, "attributes");
		jw_arr_begin(w);
		attr_num(w, "taskprobe.event.code", json_get(e, "code"));
		attr_num(w, "process.pid", json_get(e, "pid"));
		attr_str(w, "taskprobe.event.detail", json_str(e, "detail"));
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static const char *const phase_figures[] = { "cpu_ns",	    "runq_wait_ns", "read_bytes",
					     "write_bytes", "execs",	    "peak_mem_bytes" };

static void phase_span(struct jw *w, const struct json *p, const char *trace, const char *id,
		       const char *parent, __u64 start_ns)
{
	__u64 s = start_ns + json_u64(p, "start_ms") * 1000000ULL;
	char key[64];

	jw_obj_begin(w);
	jw_kstr(w, "traceId", trace);
	jw_kstr(w, "spanId", id);
	jw_kstr(w, "parentSpanId", parent);
	jw_kstr(w, "name", json_str(p, "name"));
	jw_key(w, "kind");
	jw_u64(w, SPAN_KIND_INTERNAL);
	ns_key(w, "startTimeUnixNano", s);
	ns_key(w, "endTimeUnixNano", s + json_u64(p, "wall_ns"));
	jw_key(w, "attributes");
	jw_arr_begin(w);
	attr_str(w, "taskprobe.phase.name", json_str(p, "name"));
	for (size_t k = 0; k < ARRAY_SIZE(phase_figures); k++) {
		const struct json *v = json_get(p, phase_figures[k]);

		snprintf(key, sizeof(key), "taskprobe.phase.%s", phase_figures[k]);
		if (v && v->type == JSON_NUM)
			attr_num(w, key, v);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

int otlp_write_traces(FILE *f, const struct otlp_input *in)
{
	const struct json *rec = in->rec, *phases = json_get(rec, "phases");
	__u64 start_ns = json_u64(rec, "start_ns"), tw[2], sw;
	const char *host = json_str(rec, "host"), *id = json_str(rec, "id");
	char trace[33], task_span[17], (*ids)[17], seed[64];
	size_t np = json_len(phases);
	struct jw w;
	int len;

	ids = calloc(np ? np : 1, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	len = snprintf(seed, sizeof(seed), "%llu", (unsigned long long)start_ns);
	tw[0] = fnv(fnv(fnv(0xcbf29ce484222325ULL, host, strlen(host)), "/", 1), id, strlen(id));
	tw[1] = fnv(tw[0], seed, (size_t)len);
	hex_id(trace, tw, 2);
	sw = fnv(tw[1], "task", 4);
	hex_id(task_span, &sw, 1);
	for (size_t i = 0; i < np; i++) {
		sw = fnv(sw, "phase", 5);
		hex_id(ids[i], &sw, 1);
	}
	jw_init(&w, f, false);
	envelope_begin(&w, in, "resourceSpans", "scopeSpans", "spans");
	/* The task's span. */
	jw_obj_begin(&w);
	jw_kstr(&w, "traceId", trace);
	jw_kstr(&w, "spanId", task_span);
	jw_kstr(&w, "name", "cicd.pipeline.task.run");
	jw_key(&w, "kind");
	jw_u64(&w, SPAN_KIND_INTERNAL);
	ns_key(&w, "startTimeUnixNano", start_ns);
	ns_key(&w, "endTimeUnixNano", start_ns + json_u64(rec, "wall_ns"));
	task_attributes(&w, in);
	task_events(&w, rec, start_ns);
	jw_key(&w, "status");
	jw_obj_begin(&w);
	if (!strcmp(run_result(rec), "success")) {
		jw_key(&w, "code");
		jw_u64(&w, STATUS_OK);
	} else {
		char msg[96];

		snprintf(msg, sizeof(msg), "%s, exit status %.0f", json_str(rec, "status"),
			 json_num(rec, "exit_status"));
		jw_kstr(&w, "message", msg);
		jw_key(&w, "code");
		jw_u64(&w, STATUS_ERROR);
	}
	jw_obj_end(&w);
	jw_obj_end(&w);
	/* Each phase: a child of the task, or of the phase it is nested in (depth). */
	for (size_t i = 0; i < np; i++) {
		const struct json *p = json_at(phases, i);
		int depth = (int)json_num(p, "depth");
		const char *parent = task_span;

		for (size_t j = i; depth > 0 && j-- > 0;)
			if ((int)json_num(json_at(phases, j), "depth") == depth - 1) {
				parent = ids[j];
				break;
			}
		phase_span(&w, p, trace, ids[i], parent, start_ns);
	}
	envelope_end(&w);
	fputc('\n', f);
	free(ids);
	return ferror(f) ? -EIO : 0;
}

/* OTLP's metric enums, as OTLP/JSON writes them. */
#define TEMPORALITY_CUMULATIVE 2

/* A record unit as UCUM, as OTLP's metric units are. */
static const char *ucum(const char *unit)
{
	return !strcmp(unit, "ns")	? "ns"
	       : !strcmp(unit, "bytes") ? "By"
	       : !strcmp(unit, "cores") ? "{cpu}"
					: "1";
}

/* One figure: a counter a cumulative sum since the task's start, a level a gauge. */
static void metric(struct jw *w, const struct otlp_input *in, const struct json *v, __u64 start_ns,
		   __u64 end_ns)
{
	const struct metric_desc *d = NULL;
	char name[160];

	for (size_t i = 0; i < metric_descs_n && !d; i++)
		if (!strcmp(metric_descs[i].name, v->key))
			d = &metric_descs[i];
	snprintf(name, sizeof(name), "taskprobe.%s", v->key);
	jw_obj_begin(w);
	jw_kstr(w, "name", name);
	/* net.* and http.*: counts of connections and requests */
	jw_kstr(w, "unit", ucum(d ? d->unit : "count"));
	jw_key(w, !d || d->kind == METRIC_COUNTER ? "sum" : "gauge");
	jw_obj_begin(w);
	jw_key(w, "dataPoints");
	jw_arr_begin(w);
	jw_obj_begin(w);
	jw_key(w, "attributes");
	jw_arr_begin(w);
	run_attributes(w, in);
	jw_arr_end(w);
	ns_key(w, "startTimeUnixNano", start_ns);
	ns_key(w, "timeUnixNano", end_ns);
	number(w, "asInt", "asDouble", v);
	jw_obj_end(w);
	jw_arr_end(w);
	if (!d || d->kind == METRIC_COUNTER) {
		jw_key(w, "aggregationTemporality");
		jw_u64(w, TEMPORALITY_CUMULATIVE);
		jw_key(w, "isMonotonic");
		jw_bool(w, true);
	}
	jw_obj_end(w);
	jw_obj_end(w);
}

int otlp_write_metrics(FILE *f, const struct otlp_input *in)
{
	const struct json *m = json_get(in->rec, "metrics");
	__u64 start_ns = json_u64(in->rec, "start_ns");
	__u64 end_ns = start_ns + json_u64(in->rec, "wall_ns");
	struct jw w;

	jw_init(&w, f, false);
	envelope_begin(&w, in, "resourceMetrics", "scopeMetrics", "metrics");
	for (const struct json *v = m ? m->child : NULL; v; v = v->next)
		if (v->type == JSON_NUM && metric_is_builtin(v->key))
			metric(&w, in, v, start_ns, end_ns);
	envelope_end(&w);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}

/* One document of q into a string the caller frees. */
static int doc_string(const struct otlp_input *in, int (*write)(FILE *, const struct otlp_input *),
		      char **out)
{
	size_t len = 0;
	FILE *f = open_memstream(out, &len);
	int err;

	if (!f)
		return -ENOMEM;
	err = write(f, in);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(*out);
		*out = NULL;
	}
	return err;
}

int otlp_task_docs(struct store *local, __s64 tid, const struct config *cfg, char **traces,
		   char **metrics)
{
	struct query_task q;
	struct otlp_input in;
	int err;

	*traces = NULL;
	if (metrics)
		*metrics = NULL;
	err = query_task__of(&q, local, tid);
	in = (struct otlp_input){ q.rec, q.labels, q.nlabels, cfg };
	if (!err)
		err = doc_string(&in, otlp_write_traces, traces);
	if (!err && metrics)
		err = doc_string(&in, otlp_write_metrics, metrics);
	query_task__free(&q);
	if (err) {
		free(*traces);
		*traces = NULL;
	}
	return err;
}
