// SPDX-License-Identifier: GPL-2.0
/* The HTTP API: routes, parameters, answers; libmicrohttpd driven by our event loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "base/loop.h"
#include "base/util.h"
#include "collector/collector.h"
#include "model/metric_descs.h"
#include "store/query.h"
#include "store/spool.h"
#include "store/store.h"
#include "view/api.h"
#include "view/openmetrics.h"

#define API_LABELS_MAX 16

struct api {
	struct MHD_Daemon *mhd;
	struct api_source src;
	struct store *store;
	struct loop *loop;
	struct loop_handler h;
	char token[257];
};

/* A GET request as the routes see it, whatever carried it: its query's arguments. */
struct api_req {
	const char *(*arg)(void *ctx, const char *key); /* the first value of key, or NULL */
	/* fn(fctx, value) for each value of key in order, until it returns false */
	void (*each)(void *ctx, const char *key, bool (*fn)(void *fctx, const char *value),
		     void *fctx);
	void *ctx;
};

static const char *arg(const struct api_req *rq, const char *key)
{
	return rq->arg(rq->ctx, key);
}

/* An answer being built: JSON into memory, then its status. */
struct answer {
	char *buf;
	size_t len;
	FILE *f;
	struct jw w;
	unsigned status;
	const char *type; /* NULL: JSON */
};

static int answer_begin(struct answer *a)
{
	a->buf = NULL;
	a->len = 0;
	a->status = MHD_HTTP_OK;
	a->type = NULL;
	a->f = open_memstream(&a->buf, &a->len);
	if (!a->f) {
		a->buf = NULL;
		return -ENOMEM;
	}
	jw_init(&a->w, a->f, false);
	return 0;
}

static enum MHD_Result send_answer(struct MHD_Connection *conn, struct answer *a)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!a->f)
		return MHD_NO;
	fputc('\n', a->f);
	fclose(a->f);
	r = MHD_create_response_from_buffer(a->len, a->buf, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(a->buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", a->type ? a->type : "application/json");
	ret = MHD_queue_response(conn, a->status, r);
	MHD_destroy_response(r);
	return ret;
}

/* {"error": msg}, with its status. */
static void fail(struct answer *a, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct answer *a, unsigned status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Whatever was written goes: the answer is the error alone. */
	fclose(a->f);
	free(a->buf);
	if (answer_begin(a))
		return;
	jw_obj_begin(&a->w);
	jw_kstr(&a->w, "error", msg);
	jw_obj_end(&a->w);
	a->status = status;
}

/* The filters of /tasks and /count; false after fail(). */
struct params {
	struct store_filter f;
	struct label labels[API_LABELS_MAX];
	char kv[API_LABELS_MAX][TP_LABEL_KEY_MAX + TP_LABEL_VAL_MAX + 2];
	int bad_label;
};

static bool collect_label(void *ctx, const char *value)
{
	struct params *p = ctx;
	const char *why;
	int i = p->f.nlabels;

	if (i >= API_LABELS_MAX || !value || strlen(value) >= sizeof(p->kv[0])) {
		p->bad_label = 1;
		return false;
	}
	snprintf(p->kv[i], sizeof(p->kv[0]), "%s", value);
	if (tp_parse_label(p->kv[i], &p->labels[i].key, &p->labels[i].val, &why)) {
		p->bad_label = 1;
		return false;
	}
	p->f.nlabels++;
	return true;
}

static bool parse_filters(const struct api_req *rq, struct answer *a, struct params *p)
{
	const char *since = arg(rq, "since"), *status = arg(rq, "status");
	static const char *const statuses[] = { "running", "exited",	 "signaled",
						"lost",	   "not_found",	 "exec_failed",
						"ended",   "interrupted" };
	__u64 ns;

	memset(p, 0, sizeof(*p));
	p->f.labels = p->labels;
	if (since) {
		if (tp_parse_duration(since, &ns)) {
			fail(a, MHD_HTTP_BAD_REQUEST,
			     "invalid since '%.32s': use 90s, 30m, 12h, 7d or 2w", since);
			return false;
		}
		p->f.since_ns = (__s64)(tp_realtime_ns() - ns);
	}
	rq->each(rq->ctx, "label", collect_label, p);
	if (p->bad_label) {
		fail(a, MHD_HTTP_BAD_REQUEST, "invalid label: K=V, at most %d", API_LABELS_MAX);
		return false;
	}
	if (status) {
		bool known = false;

		for (size_t i = 0; i < ARRAY_SIZE(statuses); i++)
			known |= !strcmp(status, statuses[i]);
		if (!known) {
			fail(a, MHD_HTTP_BAD_REQUEST, "invalid status '%.32s'", status);
			return false;
		}
		p->f.status = status;
	}
	return true;
}

static int list_row(void *ctx, const struct store_task_row *r)
{
	query_json_task(ctx, r);
	return 0;
}

static void get_tasks(struct api *api, const struct api_req *rq, struct answer *a)
{
	const char *limit = arg(rq, "limit");
	struct params p;
	__u64 n = 50;

	if (!parse_filters(rq, a, &p))
		return;
	if (limit && (tp_parse_u64(limit, 1000000, &n) || !n)) {
		fail(a, MHD_HTTP_BAD_REQUEST, "invalid limit '%.32s': 1 to 1000000", limit);
		return;
	}
	jw_arr_begin(&a->w);
	if (store__list(api->store, &p.f, (long)n, list_row, &a->w)) {
		fail(a, MHD_HTTP_INTERNAL_SERVER_ERROR,
		     "the database failed; the daemon's log says how");
		return;
	}
	jw_arr_end(&a->w);
}

static int hist_row(void *ctx, const struct store_hist_row *r)
{
	query_json_hist(ctx, r);
	return 0;
}

/* The stored task with this id; false after fail() (bad id 400, unknown 404). */
static bool find_task(struct api *api, const char *id, struct store_task *t, struct answer *a)
{
	int err;

	if (!tp_valid_id(id)) {
		fail(a, MHD_HTTP_BAD_REQUEST, "invalid task id: use " TP_ID_RULE);
		return false;
	}
	err = store__find(api->store, id, NULL, t);
	if (err == -ENOENT)
		fail(a, MHD_HTTP_NOT_FOUND, "no stored task '%s'", id);
	else if (err)
		fail(a, MHD_HTTP_INTERNAL_SERVER_ERROR,
		     "the database failed; the daemon's log says how");
	return !err;
}

static void get_task(struct api *api, const char *id, bool hists, struct answer *a)
{
	struct store_task t;
	int err;

	if (!find_task(api, id, &t, a))
		return;
	if (hists) {
		jw_obj_begin(&a->w);
		err = store__histograms(api->store, t.tid, NULL, hist_row, &a->w);
		jw_obj_end(&a->w);
		if (err)
			fail(a, MHD_HTTP_INTERNAL_SERVER_ERROR, "the database failed");
	} else if (t.record) {
		fputs(t.record, a->f);
	} else if (api->src.live && !api->src.live(api->src.ctx, id, &a->w)) {
		/* Running here: its figures so far, from the collector. */
	} else {
		/* Running elsewhere (an embedded run), or lost: no figures stored yet. */
		jw_obj_begin(&a->w);
		jw_kstr(&a->w, "id", id);
		jw_kstr(&a->w, "status", t.status);
		jw_ku64(&a->w, "wall_ns", t.wall_ns);
		jw_obj_end(&a->w);
	}
	free(t.record);
}

/* A running task's record so far, parsed (its phases and events), or NULL. */
static struct json *live_json(struct api *api, const char *id)
{
	struct json *j = NULL;
	char *text = NULL;
	size_t len = 0;
	struct jw w;
	int err;
	FILE *f;

	if (!api->src.live || !(f = open_memstream(&text, &len)))
		return NULL;
	jw_init(&w, f, false);
	err = api->src.live(api->src.ctx, id, &w);
	if (fclose(f) == 0 && !err)
		j = json_parse(text, len, NULL, 0);
	free(text);
	return j;
}

/* Every series of a task at N buckets over its life, with its phases: 10 <= N <= 5000. */
static void get_series(struct api *api, const struct api_req *rq, const char *id, struct answer *a)
{
	const char *points = arg(rq, "points");
	struct series_point *pts = NULL;
	struct series_bucket *bk = NULL;
	struct json *rec = NULL;
	struct store_task t = { 0 };
	size_t n = 0;
	__u64 np = 100;
	int damaged;

	if (points && (tp_parse_u64(points, 5000, &np) || np < 10)) {
		fail(a, MHD_HTTP_BAD_REQUEST, "invalid points '%.32s': 10 to 5000", points);
		return;
	}
	if (!find_task(api, id, &t, a))
		return;
	rec = t.record ? json_parse(t.record, strlen(t.record), NULL, 0) : live_json(api, id);
	bk = calloc(np, sizeof(*bk));
	if (!bk || store__series(api->store, t.tid, &pts, &n, &damaged) ||
	    series_buckets(pts, n, t.wall_ns / 1000000, (int)np, bk))
		fail(a, MHD_HTTP_INTERNAL_SERVER_ERROR, "the series of '%s' could not be read", id);
	else
		query_json_series(&a->w, id, &t, rec, n, bk, (int)np);
	free(bk);
	free(pts);
	json_free(rec);
	free(t.record);
}

struct count_out {
	struct jw *w;
	__u64 tasks;
	double sum;
};

static int count_row(void *ctx, const struct store_count_row *r)
{
	struct count_out *co = ctx;

	co->tasks += (__u64)r->tasks;
	co->sum += r->sum;
	query_json_group(co->w, r);
	return 0;
}

static void get_count(struct api *api, const struct api_req *rq, struct answer *a)
{
	const char *metric = arg(rq, "metric"), *by = arg(rq, "by"), *host = arg(rq, "host"), *why;
	struct count_out co = { &a->w, 0, 0 };
	struct params p;
	int has;

	if (!metric || !query_valid_name(metric) || (by && !query_valid_name(by))) {
		fail(a, MHD_HTTP_BAD_REQUEST, "%s: use A-Z a-z 0-9 _ . -",
		     !metric ? "metric= is required" : "invalid metric or by");
		return;
	}
	if (host && !query_valid_glob(host, &why)) {
		fail(a, MHD_HTTP_BAD_REQUEST, "invalid host glob: %s", why);
		return;
	}
	if (!parse_filters(rq, a, &p))
		return;
	has = store__has_metric(api->store, metric);
	if (has <= 0) {
		fail(a, has ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_NOT_FOUND,
		     has ? "the database failed" : "no stored task has metric '%s'", metric);
		return;
	}
	jw_obj_begin(&a->w);
	jw_kstr(&a->w, "metric", metric);
	jw_key(&a->w, "by");
	by ? jw_str(&a->w, by) : jw_null(&a->w);
	jw_key(&a->w, "groups");
	jw_arr_begin(&a->w);
	if (store__count(api->store, metric, &p.f, by, host, count_row, &co)) {
		fail(a, MHD_HTTP_INTERNAL_SERVER_ERROR, "the database failed");
		return;
	}
	jw_arr_end(&a->w);
	jw_ku64(&a->w, "tasks", co.tasks);
	jw_kdouble(&a->w, "sum", co.sum);
	jw_obj_end(&a->w);
}

struct prom {
	FILE *f;
	char family[160];  /* the last one with HELP and TYPE written */
	const char *label; /* a task label on the summed counters (metrics_label), or NULL */
};

static void prom_family(struct prom *p, const char *name, const char *type, const char *help)
{
	if (!strcmp(p->family, name))
		return;
	snprintf(p->family, sizeof(p->family), "%s", name);
	fprintf(p->f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * A stored metric as a Prometheus family: built-in counters, network and HTTP ones;
 * a per-reason or per-kind figure gets its own family with that label. Gauges
 * (peaks, averages) and the tasks' own metrics are not summed over tasks.
 */
static bool prom_name(const char *metric, char *name, size_t len, const char **lkey,
		      const char **lval)
{
	static const struct {
		const char *prefix, *family, *label;
	} split[] = {
		{ "net.tcp.connect_failures.", "net.tcp.connect_failures.by_reason", "reason" },
		{ "http.failures.", "http.failures.by_kind", "kind" },
	};
	const char *base = metric;
	size_t n = 0;

	*lkey = *lval = NULL;
	if (strncmp(metric, "net.", 4) && strncmp(metric, "http.", 5)) {
		bool counter = false;

		for (size_t i = 0; i < metric_descs_n; i++)
			if (!strcmp(metric, metric_descs[i].name))
				counter = metric_descs[i].kind == METRIC_COUNTER;
		if (!counter)
			return false;
	}
	for (size_t i = 0; i < ARRAY_SIZE(split); i++) {
		if (!strncmp(metric, split[i].prefix, strlen(split[i].prefix))) {
			base = split[i].family;
			*lkey = split[i].label;
			*lval = metric + strlen(split[i].prefix);
		}
	}
	n = (size_t)snprintf(name, len, "taskprobe_");
	for (; *base && n + 8 < len; base++)
		name[n++] = *base == '.' || *base == '-' ? '_' : *base;
	snprintf(name + n, len - n, "_total");
	return true;
}

static int prom_total(void *ctx, const struct store_total_row *r)
{
	struct prom *p = ctx;
	const char *lkey, *lval;
	char name[160];

	if (!prom_name(r->metric, name, sizeof(name), &lkey, &lval))
		return 0;
	prom_family(p, name, "counter", "summed over the stored tasks (docs/task-record.md)");
	fprintf(p->f, "%s{", name);
	if (lkey) {
		fprintf(p->f, "%s=\"", lkey);
		om_label_value(p->f, lval);
		fputs("\",", p->f);
	}
	fputs("worker_pool=\"", p->f);
	om_label_value(p->f, r->worker_pool);
	fputs("\",instance_type=\"", p->f);
	om_label_value(p->f, r->instance_type);
	if (p->label && r->label[0]) {
		fprintf(p->f, "\",%s=\"", p->label);
		om_label_value(p->f, r->label);
	}
	fprintf(p->f, "\"} %.17g\n", r->sum);
	return 0;
}

static int prom_status(void *ctx, const struct store_status_row *r)
{
	struct prom *p = ctx;

	prom_family(p, "taskprobe_tasks_stored", "gauge", "tasks in the store, by status");
	fprintf(p->f, "taskprobe_tasks_stored{status=\"%s\"} %ld\n", r->status, r->tasks);
	return 0;
}

/* One family of the programs' figures per walk: their samples stay together. */
struct prom_progs {
	FILE *f;
	const char *family;
	int which; /* 0 run time, 1 runs, 2 skipped runs */
};

static void prom_prog(void *ctx, const struct collector_prog_stat *st)
{
	struct prom_progs *pp = ctx;
	__u64 v = pp->which == 0   ? st->run_time_ns
		  : pp->which == 1 ? st->run_cnt
				   : st->recursion_misses;

	fprintf(pp->f, "%s{program=\"%s\"} %llu\n", pp->family, st->name, (unsigned long long)v);
}

/*
 * A shipper's backlog and last error, once its destination has been configured:
 * taskprobe_sink_* for the fleet, taskprobe_otlp_* for the OpenTelemetry collector.
 */
static void prom_sink(struct prom *p, struct store *s, enum store_queue q)
{
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{ "backlog_tasks", "gauge", "stored tasks waiting to be shipped to the %s" },
		{ "refused_tasks", "gauge",
		  "tasks the %s refused (their data), kept locally only" },
		{ "shipped_total", "counter", "tasks shipped to the %s" },
		{ "failures", "gauge", "consecutive failed shipping rounds to the %s" },
		{ "last_success_timestamp_seconds", "gauge", "when the last task reached the %s" },
		{ "last_error_timestamp_seconds", "gauge", "when shipping to the %s last failed" },
	};
	const char *pre = q == STORE_Q_FLEET ? "sink" : "otlp";
	const char *dest = q == STORE_Q_FLEET ? "sink" : "OTLP collector";
	struct store_sink_state st;
	char name[96], help[128];
	double v[ARRAY_SIZE(fam)];

	if (store__sink_state(s, q, &st) || (!st.sink[0] && !st.waiting))
		return;
	v[0] = (double)st.waiting;
	v[1] = (double)st.refused;
	v[2] = (double)st.shipped;
	v[3] = (double)st.failures;
	v[4] = (double)st.shipped_ns / 1e9;
	v[5] = (double)st.error_ns / 1e9;
	for (size_t i = 0; i < ARRAY_SIZE(fam); i++) {
		snprintf(name, sizeof(name), "taskprobe_%s_%s", pre, fam[i].name);
		snprintf(help, sizeof(help), fam[i].help, dest);
		prom_family(p, name, fam[i].type, help);
		fprintf(p->f, "%s %.17g\n", name, v[i]);
	}
	if (st.error[0]) {
		snprintf(name, sizeof(name), "taskprobe_%s_last_error_info", pre);
		prom_family(p, name, "gauge", "the last shipping error, as a label");
		fprintf(p->f, "%s{%s=\"", name, pre);
		om_label_value(p->f, st.sink);
		fputs("\",error=\"", p->f);
		om_label_value(p->f, st.error);
		fputs("\"} 1\n", p->f);
	}
}

/* The records the store could not take, waiting in its spool (0 when all is well). */
static void prom_spool(struct prom *p, const char *db_path)
{
	struct spool_stats sp;

	if (!db_path || spool__stat(db_path, &sp))
		return;
	prom_family(p, "taskprobe_spool_tasks", "gauge",
		    "ended tasks the store could not take, waiting in its spool");
	fprintf(p->f, "taskprobe_spool_tasks %ld\n", sp.files);
	prom_family(p, "taskprobe_spool_bytes", "gauge", "the size of those records");
	fprintf(p->f, "taskprobe_spool_bytes %llu\n", (unsigned long long)sp.bytes);
}

/*
 * /metrics: never a task id; labels are the host's pool and type, a reason or kind, and
 * the one task label the config names (metrics_label).
 */
static void get_metrics(struct api *api, struct answer *a)
{
	const char *label = api->src.metrics_label;
	struct prom p = { .f = a->f, .label = label && *label ? label : NULL };

	a->type = "text/plain; version=0.0.4";
	prom_family(&p, "taskprobe_tasks_running", "gauge", "tasks the daemon tracks now");
	fprintf(a->f, "taskprobe_tasks_running %d\n",
		api->src.running ? api->src.running(api->src.ctx) : 0);
	if (api->src.c) {
		prom_family(&p, "taskprobe_events_lost_total", "counter",
			    "events the ring buffer had no room for, since the daemon started");
		fprintf(a->f, "taskprobe_events_lost_total %llu\n",
			(unsigned long long)collector__lost_total(api->src.c));
		static const char *const fam[3][2] = {
			{ "taskprobe_bpf_run_time_ns_total",
			  "time in each BPF program (counted with kernel.bpf_stats_enabled=1)" },
			{ "taskprobe_bpf_runs_total",
			  "runs of each BPF program (counted with kernel.bpf_stats_enabled=1)" },
			{ "taskprobe_bpf_skipped_runs_total",
			  "runs the kernel skipped: the program was running on that CPU already" },
		};

		for (int i = 0; i < 3; i++) {
			struct prom_progs pp = { a->f, fam[i][0], i };

			prom_family(&p, fam[i][0], "counter", fam[i][1]);
			collector__prog_stats(api->src.c, prom_prog, &pp);
		}
	}
	if (store__statuses(api->store, prom_status, &p) ||
	    store__totals(api->store, p.label, prom_total, &p)) {
		prom_family(&p, "taskprobe_store_errors", "gauge", "the store failed to answer");
		fputs("taskprobe_store_errors 1\n", a->f);
	}
	prom_sink(&p, api->store, STORE_Q_FLEET);
	prom_sink(&p, api->store, STORE_Q_OTLP);
	prom_spool(&p, api->src.db_path);
}

/* The bearer token, compared in constant time. */
static bool authorized(const struct api *api, struct MHD_Connection *conn)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	size_t n = strlen(api->token);
	unsigned char diff = 0;

	if (!api->token[0])
		return true;
	if (!h || strncmp(h, "Bearer ", 7) || strlen(h + 7) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(h[7 + i] ^ api->token[i]);
	return !diff;
}

/* Every GET route: the answer a, whatever carried the request. */
static void route(struct api *api, const char *url, const struct api_req *rq, struct answer *a)
{
	if (!strcmp(url, "/healthz")) {
		jw_obj_begin(&a->w);
		jw_kstr(&a->w, "status", "ok");
		jw_obj_end(&a->w);
	} else if (!strcmp(url, "/metrics")) {
		get_metrics(api, a);
	} else if (!strcmp(url, "/api/v1/tasks")) {
		get_tasks(api, rq, a);
	} else if (!strcmp(url, "/api/v1/count")) {
		get_count(api, rq, a);
	} else if (!strncmp(url, "/api/v1/tasks/", 14)) {
		const char *rest = url + 14, *slash = strchr(rest, '/');
		size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
		char id[TP_ID_MAX + 2];

		if (n >= sizeof(id) ||
		    (slash && strcmp(slash, "/histograms") && strcmp(slash, "/series"))) {
			fail(a, MHD_HTTP_NOT_FOUND, "no such resource");
		} else {
			memcpy(id, rest, n);
			id[n] = '\0';
			if (slash && !strcmp(slash, "/series"))
				get_series(api, rq, id, a);
			else
				get_task(api, id, slash != NULL, a);
		}
	} else {
		fail(a, MHD_HTTP_NOT_FOUND, "no such resource");
	}
}

static const char *mhd_arg(void *ctx, const char *key)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

struct mhd_each {
	const char *key;
	bool (*fn)(void *fctx, const char *value);
	void *fctx;
};

static enum MHD_Result mhd_each_value(void *ctx, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	struct mhd_each *e = ctx;

	(void)kind;
	if (strcmp(key, e->key))
		return MHD_YES;
	return e->fn(e->fctx, value) ? MHD_YES : MHD_NO;
}

static void mhd_each(void *ctx, const char *key, bool (*fn)(void *fctx, const char *value),
		     void *fctx)
{
	struct mhd_each e = { key, fn, fctx };

	MHD_get_connection_values(ctx, MHD_GET_ARGUMENT_KIND, mhd_each_value, &e);
}

static enum MHD_Result on_request(void *ctx, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	struct api_req rq = { mhd_arg, mhd_each, conn };
	struct api *api = ctx;
	struct answer a;

	(void)version, (void)upload, (void)upload_len, (void)state;
	if (answer_begin(&a))
		return MHD_NO;
	if (!authorized(api, conn))
		fail(&a, MHD_HTTP_UNAUTHORIZED, "a bearer token is required (api_token)");
	else if (strcmp(method, "GET"))
		fail(&a, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET");
	else
		route(api, url, &rq, &a);
	return send_answer(conn, &a);
}

/* A request's query, "k=v&k=v" already decoded (tests, the fuzzer): its arguments. */
struct query_args {
	char *k[64], *v[64];
	int n;
};

static const char *query_arg(void *ctx, const char *key)
{
	struct query_args *q = ctx;

	for (int i = 0; i < q->n; i++)
		if (!strcmp(q->k[i], key))
			return q->v[i];
	return NULL;
}

static void query_each(void *ctx, const char *key, bool (*fn)(void *fctx, const char *value),
		       void *fctx)
{
	struct query_args *q = ctx;

	for (int i = 0; i < q->n; i++)
		if (!strcmp(q->k[i], key) && !fn(fctx, q->v[i]))
			return;
}

unsigned api__answer(struct api *api, const char *url, const char *query, char **body, size_t *len)
{
	struct query_args q = { .n = 0 };
	struct api_req rq = { query_arg, query_each, &q };
	char *copy = strdup(query ? query : "");
	struct answer a;

	*body = NULL;
	*len = 0;
	if (!copy || answer_begin(&a)) {
		free(copy);
		return 500;
	}
	for (char *p = copy; *p && q.n < 64;) {
		char *amp = strchr(p, '&'), *eq;

		if (amp)
			*amp = '\0';
		eq = strchr(p, '=');
		if (eq)
			*eq++ = '\0';
		q.k[q.n] = p;
		q.v[q.n++] = eq ? eq : "";
		if (!amp)
			break;
		p = amp + 1;
	}
	route(api, url, &rq, &a);
	free(copy);
	fclose(a.f);
	*body = a.buf;
	*len = a.len;
	return a.status;
}

struct api *api__offline(const struct api_source *src)
{
	struct api *api = calloc(1, sizeof(*api));

	if (api) {
		api->src = *src;
		api->store = src->store;
	}
	return api;
}

static void on_ready(struct loop *l, void *ctx, int fd, uint32_t events)
{
	struct api *api = ctx;

	(void)l, (void)fd, (void)events;
	MHD_run(api->mhd);
}

/* Timeouts of idle connections: MHD_run does them when called. */
static void on_tick(struct loop *l, void *ctx, __u64 now)
{
	struct api *api = ctx;

	(void)l, (void)now;
	MHD_run(api->mhd);
}

static int parse_listen(const char *listen, struct sockaddr_storage *ss, bool *loopback)
{
	char host[128];
	const char *colon = strrchr(listen, ':');
	__u64 port;
	size_t n;

	if (!colon || tp_parse_u64(colon + 1, 65535, &port))
		return -EINVAL;
	n = (size_t)(colon - listen);
	if (n >= sizeof(host))
		return -EINVAL;
	memcpy(host, listen, n);
	host[n] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		host[n - 1] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
			return -EINVAL;
		*loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return -EINVAL;
		*loopback = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
	}
	return 0;
}

struct api *api__open(const char *listen, const char *token, const struct api_source *src,
		      struct loop *l)
{
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage ss;
	bool loopback;
	struct api *api;

	if (parse_listen(listen, &ss, &loopback)) {
		tp_err("invalid listen address '%.64s': use ADDR:PORT, e.g. " API_LISTEN_DEFAULT,
		       listen);
		errno = EINVAL;
		return NULL;
	}
	if (!loopback && !(token && *token)) {
		tp_err("listen %s is not loopback: set api_token in the config first", listen);
		errno = EPERM;
		return NULL;
	}
	api = calloc(1, sizeof(*api));
	if (!api)
		return NULL;
	api->src = *src;
	api->store = src->store;
	api->loop = l;
	snprintf(api->token, sizeof(api->token), "%s", token ? token : "");
	api->mhd = MHD_start_daemon(MHD_USE_EPOLL | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				    0, NULL, NULL, on_request, api, MHD_OPTION_SOCK_ADDR, &ss,
				    MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_LIMIT,
				    64u, MHD_OPTION_END);
	info = api->mhd ? MHD_get_daemon_info(api->mhd, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	if (!info) {
		tp_err("cannot serve HTTP on %s: %s", listen, strerror(errno ? errno : EADDRINUSE));
		api__close(api);
		return NULL;
	}
	api->h = (struct loop_handler){ info->epoll_fd, EPOLLIN, on_ready, api };
	if (loop__add(l, &api->h) || loop__on_tick(l, on_tick, api)) {
		tp_err("cannot add the HTTP server to the event loop");
		api__close(api);
		return NULL;
	}
	return api;
}

void api__close(struct api *a)
{
	if (!a)
		return;
	if (a->h.fn) {
		loop__del(a->loop, &a->h);
		loop__off_tick(a->loop, on_tick, a);
	}
	if (a->mhd)
		MHD_stop_daemon(a->mhd);
	free(a);
}
