// SPDX-License-Identifier: GPL-2.0
/*
 * The fleet queries: the store's read API over PostgreSQL, written for its planner.
 * A metric over a time range is one range of the (name, start_ns) index, joined to
 * its tasks only when a label is grouped by or filtered on (labels @> jsonb, GIN).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/json.h"
#include "base/util.h"
#include "store/pgstore.h"
#include "store/sink.h"

/* Parameters in text form: up to 8, numbers formatted into bufs. */
struct params {
	const char *v[8];
	char bufs[8][32];
	int n;
};

static void p_text(struct params *p, const char *s)
{
	p->v[p->n++] = s;
}

static void p_num(struct params *p, long long v)
{
	snprintf(p->bufs[p->n], sizeof(p->bufs[0]), "%lld", v);
	p->v[p->n] = p->bufs[p->n];
	p->n++;
}

static PGresult *query(struct sink *k, const char *sql, const struct params *p, int binary)
{
	PGresult *r = sink__run(k, sql, p->n, p->v, binary);

	if (r && PQresultStatus(r) == PGRES_TUPLES_OK)
		return r;
	if (!r) {
		tp_err("fleet %s: reading: no answer within %d s", k->name, k->timeout_s);
		return NULL;
	}
	{
		char line[400];
		const char *m = PQresultErrorMessage(r);
		size_t o = 0;

		/* One line: libpq's messages end in newlines and may hold several. */
		for (; m && *m && o + 1 < sizeof(line); m++)
			line[o++] = *m == '\n' || *m == '\t' ? ' ' : *m;
		while (o && line[o - 1] == ' ')
			o--;
		line[o] = '\0';
		tp_err("fleet %s: reading: %s", k->name, o ? line : "unknown error");
	}
	PQclear(r);
	return NULL;
}

static const char *val(PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static void cat(char *sql, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void cat(char *sql, size_t len, const char *fmt, ...)
{
	size_t used = strlen(sql);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sql + used, len - used, fmt, ap);
	va_end(ap);
}

/*
 * The filter's labels as a condition on t.labels (jsonb containment, GIN-indexed):
 * *labels holds its parameter until the query has run (NULL without labels).
 */
static int where_labels(struct params *p, const struct store_filter *f, char *sql, size_t len,
			char **labels)
{
	size_t n = 0;
	FILE *m;
	struct jw w;

	*labels = NULL;
	if (!f->nlabels)
		return 0;
	m = open_memstream(labels, &n);
	if (!m)
		return -ENOMEM;
	jw_init(&w, m, false);
	jw_obj_begin(&w);
	for (int i = 0; i < f->nlabels; i++)
		jw_kstr(&w, f->labels[i].key, f->labels[i].val);
	jw_obj_end(&w);
	if (fclose(m)) {
		free(*labels);
		*labels = NULL;
		return -ENOMEM;
	}
	p_text(p, *labels);
	cat(sql, len, " AND t.labels @> $%d::jsonb", p->n);
	return 0;
}

int pgstore_glob_regex(const char *glob, char *out, size_t len)
{
	size_t o = 0;

	if (len < 3)
		return -ENOSPC;
	out[o++] = '^';
	for (const char *g = glob; *g; g++) {
		if (o + 6 >= len)
			return -ENOSPC;
		if (*g == '*') {
			out[o++] = '.';
			out[o++] = '*';
		} else if (*g == '?') {
			out[o++] = '.';
		} else if (*g == '[' && strchr(g + 1, ']')) {
			/* A set, as GLOB has it: [abc], [a-z], [^abc]; ']' first is a member. */
			const char *end = strchr(g + (g[1] == '^' ? 3 : 2), ']');

			if (!end)
				end = strchr(g + 1, ']');
			for (; g <= end; g++) {
				if (o + 3 >= len)
					return -ENOSPC;
				if (*g == '\\')
					out[o++] = '\\';
				out[o++] = *g;
			}
			g--;
		} else {
			if (strchr(".^$|()[]{}+\\*?", *g))
				out[o++] = '\\';
			out[o++] = *g;
		}
	}
	out[o++] = '$';
	out[o] = '\0';
	return 0;
}

int pgstore_glob_like(const char *glob, char *out, size_t len)
{
	size_t o = 0;

	if (strchr(glob, '['))
		return -EINVAL;
	for (const char *g = glob; *g; g++) {
		if (o + 3 >= len)
			return -ENOSPC;
		if (*g == '%' || *g == '_' || *g == '\\')
			out[o++] = '\\';
		out[o++] = *g == '*' ? '%' : *g == '?' ? '_' : *g;
	}
	out[o] = '\0';
	return 0;
}

/*
 * A --host glob for PostgreSQL: a LIKE pattern (the index-friendly, cheaper test), or
 * with a [set] an anchored regular expression; *op says which ("LIKE" or "~").
 */
static int host_pattern(struct sink *k, const char *glob, char *pat, size_t len, const char **op)
{
	*op = "LIKE";
	if (!pgstore_glob_like(glob, pat, len))
		return 0;
	*op = "~";
	if (!pgstore_glob_regex(glob, pat, len))
		return 0;
	tp_err("fleet %s: --host: the glob is too long", k->name);
	return -EINVAL;
}

static int pg_list(void *be, const struct store_filter *f, long limit, store_task_fn fn, void *ctx)
{
	struct sink *k = be;
	char sql[1024], *labels;
	struct params p = { 0 };
	PGresult *r;

	if (limit <= 0)
		return 0;
	snprintf(
		sql, sizeof(sql),
		"SELECT t.id, t.status, t.start_ns, t.wall_ns, t.exit_status, t.command,"
		" (SELECT value FROM taskprobe.metrics WHERE task = t.tid AND name = 'cpu.time_ns'),"
		" (SELECT value FROM taskprobe.metrics WHERE task = t.tid"
		" AND name = 'mem.peak_bytes'), t.host"
		" FROM taskprobe.tasks t WHERE t.start_ns >= $1");
	p_num(&p, f->since_ns);
	if (where_labels(&p, f, sql, sizeof(sql), &labels))
		return -ENOMEM;
	/* Only ended and lost tasks are shipped: the stored status is the live one. */
	if (f->status) {
		p_text(&p, f->status);
		cat(sql, sizeof(sql), " AND t.status = $%d", p.n);
	}
	p_num(&p, limit);
	cat(sql, sizeof(sql), " ORDER BY t.start_ns DESC, t.tid DESC LIMIT $%d", p.n);
	r = query(k, sql, &p, 0);
	free(labels);
	if (!r)
		return -EIO;
	for (int i = 0; i < PQntuples(r); i++) {
		struct store_task_row row = {
			.id = val(r, i, 0),
			.status = val(r, i, 1),
			.start_ns = strtoull(PQgetvalue(r, i, 2), NULL, 10),
			.ended = val(r, i, 3) != NULL,
			.wall_ns = strtoull(PQgetvalue(r, i, 3), NULL, 10),
			.exit_status = strtoll(PQgetvalue(r, i, 4), NULL, 10),
			.command = val(r, i, 5),
			.cpu_ns = strtod(PQgetvalue(r, i, 6), NULL),
			.peak_mem_bytes = strtod(PQgetvalue(r, i, 7), NULL),
			.host = val(r, i, 8),
		};

		if (fn(ctx, &row))
			break;
	}
	PQclear(r);
	return 0;
}

static int pg_find(void *be, const char *id, const char *host, struct store_task *t)
{
	struct sink *k = be;
	const char *op = "LIKE";
	struct params p = { 0 };
	char sql[512], pat[520];
	PGresult *r;
	int err = -ENOENT;

	memset(t, 0, sizeof(*t));
	if (host && host_pattern(k, host, pat, sizeof(pat), &op))
		return -EIO;
	p_text(&p, id);
	snprintf(sql, sizeof(sql),
		 "SELECT tid, status, record, wall_ns, start_ns, host,"
		 " (SELECT count(DISTINCT host) FROM taskprobe.tasks WHERE id = $1)"
		 " FROM taskprobe.tasks WHERE id = $1");
	if (host) {
		p_text(&p, pat);
		cat(sql, sizeof(sql), " AND host %s $%d", op, p.n);
	}
	cat(sql, sizeof(sql), " ORDER BY start_ns DESC, tid DESC LIMIT 1");
	r = query(k, sql, &p, 0);
	if (!r)
		return -EIO;
	if (PQntuples(r) == 1) {
		const char *rec = val(r, 0, 2);

		t->tid = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		snprintf(t->status, sizeof(t->status), "%s", PQgetvalue(r, 0, 1));
		t->record = rec ? strdup(rec) : NULL;
		t->wall_ns = val(r, 0, 3)
				     ? strtoull(PQgetvalue(r, 0, 3), NULL, 10)
				     : tp_realtime_ns() - strtoull(PQgetvalue(r, 0, 4), NULL, 10);
		snprintf(t->host, sizeof(t->host), "%s", PQgetvalue(r, 0, 5));
		t->hosts = strtol(PQgetvalue(r, 0, 6), NULL, 10);
		err = rec && !t->record ? -ENOMEM : 0;
	}
	PQclear(r);
	return err;
}

/* "{1,2,3}" into slots; a short or long array leaves the rest 0. */
static void parse_slots(const char *s, __u64 *slots, int n)
{
	int i = 0;

	if (!s || *s++ != '{')
		return;
	while (*s && *s != '}' && i < n) {
		char *end;

		slots[i++] = strtoull(s, &end, 10);
		if (end == s)
			break;
		s = *end == ',' ? end + 1 : end;
	}
}

static int pg_histograms(void *be, __s64 tid, const char *name, store_hist_fn fn, void *ctx)
{
	struct sink *k = be;
	struct params p = { 0 };
	PGresult *r;

	p_num(&p, tid);
	p_text(&p, name);
	r = query(k,
		  "SELECT name, unit, count, sum, slots FROM taskprobe.histograms WHERE task = $1"
		  " AND ($2::text IS NULL OR name = $2) ORDER BY name",
		  &p, 0);
	if (!r)
		return -EIO;
	for (int i = 0; i < PQntuples(r); i++) {
		struct store_hist_row row = { .name = val(r, i, 0), .unit = val(r, i, 1) };

		row.h.count = strtoull(PQgetvalue(r, i, 2), NULL, 10);
		row.h.sum = strtoull(PQgetvalue(r, i, 3), NULL, 10);
		parse_slots(val(r, i, 4), row.h.slots, TP_HIST_SLOTS);
		if (fn(ctx, &row))
			break;
	}
	PQclear(r);
	return 0;
}

static int pg_series(void *be, __s64 tid, struct series_point **pts, size_t *n, int *damaged)
{
	struct sink *k = be;
	struct params p = { 0 };
	PGresult *r;

	*damaged = 0;
	p_num(&p, tid);
	/* Binary results: the blocks' bytes as they were stored. */
	r = query(k, "SELECT data FROM taskprobe.series WHERE task = $1 ORDER BY seq", &p, 1);
	if (!r)
		return -EIO;
	for (int i = 0; i < PQntuples(r); i++)
		if (series_decode(PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), pts, n))
			(*damaged)++;
	PQclear(r);
	return 0;
}

static int pg_labels(void *be, __s64 tid, store_label_fn fn, void *ctx)
{
	struct sink *k = be;
	struct params p = { 0 };
	PGresult *r;

	p_num(&p, tid);
	r = query(k,
		  "SELECT e.key, e.value FROM taskprobe.tasks t, jsonb_each_text(t.labels) e"
		  " WHERE t.tid = $1 ORDER BY e.key",
		  &p, 0);
	if (!r)
		return -EIO;
	for (int i = 0; i < PQntuples(r); i++)
		if (fn(ctx, val(r, i, 0), val(r, i, 1)))
			break;
	PQclear(r);
	return 0;
}

static int pg_has_metric(void *be, const char *metric)
{
	struct sink *k = be;
	struct params p = { 0 };
	PGresult *r;
	int has;

	p_text(&p, metric);
	r = query(k, "SELECT 1 FROM taskprobe.metrics WHERE name = $1 LIMIT 1", &p, 0);
	if (!r)
		return -EIO;
	has = PQntuples(r) > 0;
	PQclear(r);
	return has;
}

static int pg_count(void *be, const char *metric, const struct store_filter *f, const char *by,
		    const char *host, store_count_fn fn, void *ctx)
{
	struct sink *k = be;
	bool remote = host && store_remote_metric(metric);
	bool join = by || f->nlabels || (host && !remote);
	char sql[2048], pat[520], names[530], *labels;
	const char *op = "LIKE";
	struct params p = { 0 };
	PGresult *r;

	/*
	 * An endpoint's names are comma-separated: ",NAMES," is searched for ",GLOB,", as
	 * the local store's GLOB does it.
	 */
	if (host && host_pattern(k, host, pat, sizeof(pat), &op))
		return -EIO;
	if (host && *op == '~') {
		pat[strlen(pat) - 1] = '\0';
		snprintf(names, sizeof(names), ",%s,", pat + 1);
		pat[strlen(pat)] = '$';
	} else if (host) {
		snprintf(names, sizeof(names), "%%,%s,%%", pat);
	}
	p_text(&p, metric);
	p_num(&p, f->since_ns);
	snprintf(sql, sizeof(sql), "SELECT %s, count(*), sum(m.value) FROM ",
		 by ? "COALESCE(t.labels->>$3, '(none)')" : "'all'");
	if (by)
		p_text(&p, by);
	if (remote) {
		/*
		 * The task's rows for the remote hosts that match, summed per task first so
		 * that tasks counts tasks; an endpoint matches by any of its names.
		 */
		p_text(&p, pat);
		p_text(&p, names);
		cat(sql, sizeof(sql),
		    "(SELECT n.task, sum(n.value) AS value FROM taskprobe.net n"
		    " WHERE n.name = $1 AND n.start_ns >= $2 AND (n.address %s $%d OR"
		    " (',' || n.host || ',') %s $%d) GROUP BY n.task) m",
		    op, p.n - 1, op, p.n);
	} else {
		cat(sql, sizeof(sql), "taskprobe.metrics m");
	}
	/* The task's start bounds the join too: the planner then reads half the tasks. */
	if (join)
		cat(sql, sizeof(sql),
		    " JOIN taskprobe.tasks t ON t.tid = m.task AND t.start_ns >= $2");
	cat(sql, sizeof(sql), remote ? " WHERE true" : " WHERE m.name = $1 AND m.start_ns >= $2");
	if (where_labels(&p, f, sql, sizeof(sql), &labels))
		return -ENOMEM;
	if (host && !remote) {
		p_text(&p, pat);
		cat(sql, sizeof(sql), " AND t.host %s $%d", op, p.n);
	}
	cat(sql, sizeof(sql), " GROUP BY 1 ORDER BY 3 DESC, 1");
	r = query(k, sql, &p, 0);
	free(labels);
	if (!r)
		return -EIO;
	for (int i = 0; i < PQntuples(r); i++) {
		struct store_count_row row = {
			.group = val(r, i, 0),
			.tasks = strtol(PQgetvalue(r, i, 1), NULL, 10),
			.sum = strtod(PQgetvalue(r, i, 2), NULL),
		};

		if (fn(ctx, &row))
			break;
	}
	PQclear(r);
	return 0;
}

/* "{a,b,c}", a float8[] as text, into up to n doubles: how many. */
static int parse_doubles(const char *s, double *v, int n)
{
	int i = 0;

	if (!s || *s++ != '{')
		return 0;
	while (*s && *s != '}' && i < n) {
		char *end;

		v[i++] = strtod(s, &end);
		if (end == s)
			return i - 1;
		s = *end == ',' ? end + 1 : end;
	}
	return i;
}

/*
 * The quantiles are PostgreSQL's own percentile_cont, over one sort per group; groups
 * in byte order (COLLATE "C"), as SQLite orders them, whatever the database's locale.
 */
static int pg_stats(void *be, const char *metric, const struct store_filter *f,
		    const char *const *by, int nby, store_stats_fn fn, void *ctx)
{
	struct sink *k = be;
	bool wall = !strcmp(metric, STORE_WALL);
	int ncols = nby ? nby : 1, first;
	char sql[2048], *labels;
	struct params p = { 0 };
	PGresult *r;

	p_text(&p, metric);
	p_num(&p, f->since_ns);
	sql[0] = '\0';
	for (int i = 0; i < nby; i++) {
		p_text(&p, by[i]);
		cat(sql, sizeof(sql), "%sCOALESCE(t.labels->>$%d, '(none)')", i ? ", " : "SELECT ",
		    p.n);
	}
	if (!nby)
		cat(sql, sizeof(sql), "SELECT 'all'");
	cat(sql, sizeof(sql),
	    ", count(*), min(m.value), max(m.value), percentile_cont(ARRAY[0.5, 0.9, 0.99]"
	    "::float8[]) WITHIN GROUP (ORDER BY m.value) FROM %s m JOIN taskprobe.tasks t"
	    " ON t.tid = m.task AND t.start_ns >= $2 WHERE t.status IN " STORE_RAN_SQL,
	    wall ? "(SELECT tid AS task, $1::text AS name, start_ns, wall_ns::float8 AS value"
		   " FROM taskprobe.tasks WHERE wall_ns IS NOT NULL)"
		 : "taskprobe.metrics");
	cat(sql, sizeof(sql), " AND m.name = $1 AND m.start_ns >= $2");
	if (where_labels(&p, f, sql, sizeof(sql), &labels))
		return -ENOMEM;
	cat(sql, sizeof(sql), " GROUP BY 1");
	for (int i = 1; i < nby; i++)
		cat(sql, sizeof(sql), ", %d", i + 1);
	/* An output column's number is no expression to collate: each label again. */
	for (int i = 0; i < nby; i++)
		cat(sql, sizeof(sql), "%sCOALESCE(t.labels->>$%d, '(none)') COLLATE \"C\"",
		    i ? ", " : " ORDER BY ", 3 + i);
	r = query(k, sql, &p, 0);
	free(labels);
	if (!r)
		return -EIO;
	first = ncols;
	for (int i = 0; i < PQntuples(r); i++) {
		struct store_stats_row row = { 0 };
		double q[3] = { 0 };

		for (int c = 0; c < ncols; c++)
			row.group[c] = val(r, i, c);
		row.tasks = strtol(PQgetvalue(r, i, first), NULL, 10);
		row.min = strtod(PQgetvalue(r, i, first + 1), NULL);
		row.max = strtod(PQgetvalue(r, i, first + 2), NULL);
		parse_doubles(val(r, i, first + 3), q, 3);
		row.p50 = q[0];
		row.p90 = q[1];
		row.p99 = q[2];
		if (fn(ctx, &row))
			break;
	}
	PQclear(r);
	return 0;
}

static int pg_history(void *be, const struct store_history *h, store_history_fn fn, void *ctx)
{
	struct sink *k = be;
	struct params p = { 0 };
	PGresult *r;

	p_text(&p, h->key);
	p_text(&p, h->value);
	p_num(&p, (long long)h->before_ns);
	p_text(&p, h->id ? h->id : "");
	p_text(&p, h->host ? h->host : "");
	p_num(&p, (long long)h->start_ns);
	p_num(&p, h->limit);
	/* The label as jsonb containment: the tasks' GIN index answers it. */
	r = query(k,
		  "SELECT t.tid, t.id, t.start_ns, t.wall_ns, t.record FROM taskprobe.tasks t"
		  " WHERE t.labels @> jsonb_build_object($1::text, $2::text)"
		  " AND t.status IN " STORE_RAN_SQL " AND t.record IS NOT NULL"
		  " AND t.wall_ns IS NOT NULL AND t.start_ns < $3"
		  " AND NOT (t.id = $4 AND t.host = $5 AND t.start_ns = $6)"
		  " ORDER BY t.start_ns DESC, t.tid DESC LIMIT $7",
		  &p, 0);
	if (!r)
		return -EIO;
	for (int i = 0; i < PQntuples(r); i++) {
		struct store_history_row row = {
			.tid = strtoll(PQgetvalue(r, i, 0), NULL, 10),
			.id = val(r, i, 1),
			.start_ns = strtoull(PQgetvalue(r, i, 2), NULL, 10),
			.wall_ns = strtoull(PQgetvalue(r, i, 3), NULL, 10),
			.record = val(r, i, 4),
		};

		if (fn(ctx, &row))
			break;
	}
	PQclear(r);
	return 0;
}

static int pg_metrics(void *be, const __s64 *tids, size_t n, store_metric_fn fn, void *ctx)
{
	struct sink *k = be;
	struct params p = { 0 };
	char *arr = malloc(n * 24 + 3);
	size_t used = 0;
	PGresult *r;

	if (!arr)
		return -ENOMEM;
	/* The tasks as one bigint[] parameter: "{1,2,3}". */
	arr[used++] = '{';
	for (size_t i = 0; i < n; i++)
		used += (size_t)sprintf(arr + used, "%s%lld", i ? "," : "", (long long)tids[i]);
	arr[used++] = '}';
	arr[used] = '\0';
	p_text(&p, arr);
	r = query(k,
		  "SELECT task, name, value FROM taskprobe.metrics WHERE task = ANY($1::bigint[])"
		  " ORDER BY task, name COLLATE \"C\"",
		  &p, 0);
	free(arr);
	if (!r)
		return -EIO;
	for (int i = 0; i < PQntuples(r); i++) {
		struct store_metric_row row = {
			.tid = strtoll(PQgetvalue(r, i, 0), NULL, 10),
			.name = val(r, i, 1),
			.value = strtod(PQgetvalue(r, i, 2), NULL),
		};

		if (fn(ctx, &row))
			break;
	}
	PQclear(r);
	return 0;
}

static void pg_close(void *be)
{
	sink__close(be);
	free(be);
}

void *pgstore_open(const char *conninfo, const char *passfile, char *name, size_t len)
{
	struct sink *k = calloc(1, sizeof(*k));

	if (!k) {
		tp_err("out of memory");
		return NULL;
	}
	if (sink__open(k, conninfo, passfile, false, 60)) {
		if (k->name[0])
			tp_err("fleet %s: %s", k->name, k->err);
		else
			tp_err("--db: %s", k->err);
		pg_close(k);
		return NULL;
	}
	snprintf(name, len, "%s", k->name);
	return k;
}

/* The fleet answers the queries a worker's store does, but totals and statuses. */
const struct store_ops pgstore_ops = {
	.name = "fleet",
	.read_only = true,
	.close = pg_close,
	.list = pg_list,
	.find = pg_find,
	.histograms = pg_histograms,
	.series = pg_series,
	.labels = pg_labels,
	.has_metric = pg_has_metric,
	.count = pg_count,
	.stats = pg_stats,
	.history = pg_history,
	.metrics = pg_metrics,
};
