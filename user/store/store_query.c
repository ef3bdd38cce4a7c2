// SPDX-License-Identifier: GPL-2.0
/* The queries over the SQLite store: sqlite_ops, its table of operations for store.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "base/quantile.h"
#include "base/util.h"
#include "model/series.h"
#include "store/store.h"
#include "store/store_int.h"

/* Adds " AND EXISTS(label = value)" for each filter label, to be bound in order. */
static void filter_sql(char *sql, size_t len, const char *task_col, int n)
{
	for (int k = 0; k < n; k++) {
		size_t used = strlen(sql);

		snprintf(sql + used, len - used,
			 " AND EXISTS (SELECT 1 FROM labels f WHERE f.task = %s AND f.key = ? AND "
			 "f.value = ?)",
			 task_col);
	}
}

/* Binds the filter labels from index i on; returns the next index. */
static int bind_filters(sqlite3_stmt *st, int i, const struct store_filter *f)
{
	for (int k = 0; k < f->nlabels; k++) {
		sqlite3_bind_text(st, i++, f->labels[k].key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, i++, f->labels[k].val, -1, SQLITE_STATIC);
	}
	return i;
}

/* The rows of st, each made by fn from the statement; stops at fn's non-zero. */
static int each_row(struct store *s, sqlite3_stmt *st, int (*row)(sqlite3_stmt *, void *),
		    void *ctx)
{
	int step;

	while ((step = sqlite__step(s, st)) == SQLITE_ROW)
		if (row(st, ctx))
			break;
	sqlite3_finalize(st);
	return step < 0 ? step : 0;
}

struct list_ctx {
	const struct store_filter *f;
	long left;
	store_task_fn fn;
	void *ctx;
};

static int list_row(sqlite3_stmt *st, void *ctx)
{
	struct list_ctx *lc = ctx;
	struct store_task_row r = {
		.id = (const char *)sqlite3_column_text(st, 0),
		.status = store__live_status((const char *)sqlite3_column_text(st, 1),
					     (const char *)sqlite3_column_text(st, 2)),
		.start_ns = (__u64)sqlite3_column_int64(st, 3),
		.ended = sqlite3_column_type(st, 4) != SQLITE_NULL,
		.wall_ns = (__u64)sqlite3_column_int64(st, 4),
		.exit_status = sqlite3_column_int64(st, 5),
		.command = (const char *)sqlite3_column_text(st, 6),
		.cpu_ns = sqlite3_column_double(st, 7),
		.peak_mem_bytes = sqlite3_column_double(st, 8),
		.host = (const char *)sqlite3_column_text(st, 9),
	};

	/* The live status is known only once the row is read: filtered here. */
	if (lc->f->status && strcmp(lc->f->status, r.status))
		return 0;
	if (lc->fn(lc->ctx, &r))
		return 1;
	return --lc->left <= 0;
}

static int sqlite_list(void *be, const struct store_filter *f, long limit, store_task_fn fn,
		       void *ctx)
{
	struct store *s = be;
	struct list_ctx lc = { f, limit, fn, ctx };
	sqlite3_stmt *st;
	char sql[4096];
	snprintf(sql, sizeof(sql),
		 "SELECT t.id, t.status, t.lock, t.start_ns, t.wall_ns, t.exit_status, t.command,"
		 " (SELECT value FROM metrics WHERE task = t.tid AND name = 'cpu.time_ns'),"
		 " (SELECT value FROM metrics WHERE task = t.tid AND name = 'mem.peak_bytes'),"
		 " t.host FROM tasks t WHERE t.start_ns >= ?");
	filter_sql(sql, sizeof(sql), "t.tid", f->nlabels);
	strncat(sql, " ORDER BY t.start_ns DESC, t.tid DESC", sizeof(sql) - strlen(sql) - 1);
	if (limit <= 0)
		return 0;
	if (sqlite__prepare(s, sql, &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, f->since_ns);
	bind_filters(st, 2, f);
	return each_row(s, st, list_row, &lc);
}

static int sqlite_find(void *be, const char *id, const char *host, struct store_task *t)
{
	struct store *s = be;
	sqlite3_stmt *st;
	int err = -ENOENT;
	memset(t, 0, sizeof(*t));
	if (sqlite__prepare(
		    s,
		    "SELECT tid, status, lock, record, wall_ns, start_ns, host,"
		    " (SELECT COUNT(DISTINCT host) FROM tasks WHERE id = ?1) FROM tasks"
		    " WHERE id = ?1 AND host GLOB ?2 ORDER BY start_ns DESC, tid DESC LIMIT 1",
		    &st))
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, host ? host : "*", -1, SQLITE_STATIC);
	switch (sqlite__step(s, st)) {
	case SQLITE_DONE:
		break;
	case SQLITE_ROW: {
		const char *rec = (const char *)sqlite3_column_text(st, 3);

		t->tid = sqlite3_column_int64(st, 0);
		snprintf(t->status, sizeof(t->status), "%s",
			 store__live_status((const char *)sqlite3_column_text(st, 1),
					    (const char *)sqlite3_column_text(st, 2)));
		t->record = rec ? strdup(rec) : NULL;
		t->wall_ns = sqlite3_column_type(st, 4) != SQLITE_NULL
				     ? (__u64)sqlite3_column_int64(st, 4)
				     : tp_realtime_ns() - (__u64)sqlite3_column_int64(st, 5);
		snprintf(t->host, sizeof(t->host), "%s", sqlite__col_text(st, 6));
		t->hosts = sqlite3_column_int64(st, 7);
		err = rec && !t->record ? -ENOMEM : 0;
		break;
	}
	default:
		err = -EIO;
	}
	sqlite3_finalize(st);
	return err;
}

struct hist_ctx {
	store_hist_fn fn;
	void *ctx;
};

static int hist_row(sqlite3_stmt *st, void *ctx)
{
	struct hist_ctx *hc = ctx;
	struct store_hist_row r = {
		.name = (const char *)sqlite3_column_text(st, 0),
		.unit = (const char *)sqlite3_column_text(st, 1),
	};

	r.h.count = (__u64)sqlite3_column_int64(st, 2);
	r.h.sum = (__u64)sqlite3_column_int64(st, 3);
	if (sqlite3_column_bytes(st, 4) == (int)sizeof(r.h.slots))
		memcpy(r.h.slots, sqlite3_column_blob(st, 4), sizeof(r.h.slots));
	return hc->fn(hc->ctx, &r);
}

static int sqlite_histograms(void *be, __s64 tid, const char *name, store_hist_fn fn, void *ctx)
{
	struct store *s = be;
	struct hist_ctx hc = { fn, ctx };
	sqlite3_stmt *st;
	if (sqlite__prepare(
		    s,
		    "SELECT name, unit, count, sum, slots FROM histograms WHERE task = ? AND "
		    "(? IS NULL OR name = ?) ORDER BY name",
		    &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	return each_row(s, st, hist_row, &hc);
}

struct series_ctx {
	struct series_point **pts;
	size_t *n;
	int *damaged;
};

static int series_row(sqlite3_stmt *st, void *ctx)
{
	struct series_ctx *sc = ctx;

	if (series_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), sc->pts,
			  sc->n))
		(*sc->damaged)++;
	return 0;
}

static int sqlite_series(void *be, __s64 tid, struct series_point **pts, size_t *n, int *damaged)
{
	struct store *s = be;
	struct series_ctx sc = { pts, n, damaged };
	sqlite3_stmt *st;
	*damaged = 0;
	if (sqlite__prepare(s, "SELECT data FROM series WHERE task = ? ORDER BY seq", &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	return each_row(s, st, series_row, &sc);
}

static int sqlite_has_metric(void *be, const char *metric)
{
	struct store *s = be;
	sqlite3_stmt *st;
	int rc;
	if (sqlite__prepare(s, "SELECT 1 FROM metrics WHERE name = ? LIMIT 1", &st))
		return -EIO;
	sqlite3_bind_text(st, 1, metric, -1, SQLITE_STATIC);
	rc = sqlite__step(s, st);
	sqlite3_finalize(st);
	return rc < 0 ? rc : rc == SQLITE_ROW;
}

struct count_ctx {
	store_count_fn fn;
	void *ctx;
};

static int count_row(sqlite3_stmt *st, void *ctx)
{
	struct count_ctx *cc = ctx;
	struct store_count_row r = {
		.group = (const char *)sqlite3_column_text(st, 0),
		.tasks = (long)sqlite3_column_int64(st, 1),
		.sum = sqlite3_column_double(st, 2),
	};

	return cc->fn(cc->ctx, &r);
}

static int sqlite_count(void *be, const char *metric, const struct store_filter *f, const char *by,
			const char *host, store_count_fn fn, void *ctx)
{
	struct store *s = be;
	bool remote = host && store_remote_metric(metric);
	struct count_ctx cc = { fn, ctx };
	sqlite3_stmt *st;
	char sql[4096];
	int i;
	/*
	 * By remote host: the task's rows for matching hosts, summed per task first so
	 * that TASKS counts tasks. An endpoint's names are comma-separated.
	 */
	snprintf(sql, sizeof(sql),
		 "SELECT %s, COUNT(*), SUM(m.value) FROM %s m JOIN tasks t ON t.tid = m.task"
		 "%s WHERE m.name = ?1 AND t.start_ns >= ?4",
		 by ? "COALESCE(g.value, '(none)')" : "'all'",
		 remote ? "(SELECT task, name, SUM(value) AS value FROM net WHERE name = ?1 AND"
			  " ((',' || host || ',') GLOB ('*,' || ?2 || ',*') OR address GLOB ?2)"
			  " GROUP BY task)"
			: "metrics",
		 by ? " LEFT JOIN labels g ON g.task = m.task AND g.key = ?3" : "");
	filter_sql(sql, sizeof(sql), "m.task", f->nlabels);
	if (host && !remote)
		strncat(sql,
			" AND EXISTS (SELECT 1 FROM labels h WHERE h.task = m.task AND h.key = "
			"'host' AND h.value GLOB ?)",
			sizeof(sql) - strlen(sql) - 1);
	strncat(sql, " GROUP BY 1 ORDER BY 3 DESC", sizeof(sql) - strlen(sql) - 1);
	if (sqlite__prepare(s, sql, &st))
		return -EIO;
	/* ?1 metric, ?2 host glob, ?3 --by label, ?4 since; then the filters' own. */
	sqlite3_bind_text(st, 1, metric, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, host ? host : "*", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, by ? by : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, f->since_ns);
	i = bind_filters(st, 5, f);
	if (host && !remote)
		sqlite3_bind_text(st, i, host, -1, SQLITE_STATIC);
	return each_row(s, st, count_row, &cc);
}

struct total_ctx {
	store_total_fn fn;
	void *ctx;
};

static int total_row(sqlite3_stmt *st, void *ctx)
{
	struct total_ctx *tc = ctx;
	const char *pool = (const char *)sqlite3_column_text(st, 1);
	const char *type = (const char *)sqlite3_column_text(st, 2);
	const char *label = (const char *)sqlite3_column_text(st, 3);
	struct store_total_row r = {
		.metric = (const char *)sqlite3_column_text(st, 0),
		.worker_pool = pool ? pool : "",
		.instance_type = type ? type : "",
		.label = label ? label : "",
		.sum = sqlite3_column_double(st, 4),
		.tasks = (long)sqlite3_column_int64(st, 5),
	};

	return tc->fn(tc->ctx, &r);
}

static int sqlite_totals(void *be, const char *label, store_total_fn fn, void *ctx)
{
	struct store *s = be;
	struct total_ctx tc = { fn, ctx };
	sqlite3_stmt *st;

	if (sqlite__prepare(s,
			    "SELECT m.name, p.value, i.value, j.value, SUM(m.value), COUNT(*)"
			    " FROM metrics m"
			    " LEFT JOIN labels p ON p.task = m.task AND p.key = 'worker_pool'"
			    " LEFT JOIN labels i ON i.task = m.task AND i.key = 'instance_type'"
			    " LEFT JOIN labels j ON j.task = m.task AND j.key = ?1"
			    " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
			    &st))
		return -EIO;
	/* No label: a key no task has (label keys are never empty). */
	sqlite3_bind_text(st, 1, label ? label : "", -1, SQLITE_STATIC);
	return each_row(s, st, total_row, &tc);
}

struct label_ctx {
	store_label_fn fn;
	void *ctx;
};

static int label_row(sqlite3_stmt *st, void *ctx)
{
	struct label_ctx *lc = ctx;

	return lc->fn(lc->ctx, (const char *)sqlite3_column_text(st, 0),
		      (const char *)sqlite3_column_text(st, 1));
}

static int sqlite_labels(void *be, __s64 tid, store_label_fn fn, void *ctx)
{
	struct store *s = be;
	struct label_ctx lc = { fn, ctx };
	sqlite3_stmt *st;
	if (sqlite__prepare(s, "SELECT key, value FROM labels WHERE task = ? ORDER BY key", &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	return each_row(s, st, label_row, &lc);
}

/* Statuses are live (a dead collector's "running" is "lost"): counted here, by row. */
struct status_ctx {
	char names[16][32]; /* copied: a row's text lives until the next step */
	long counts[16];
	int n;
};

static int status_row(sqlite3_stmt *st, void *ctx)
{
	struct status_ctx *sc = ctx;
	const char *status = store__live_status((const char *)sqlite3_column_text(st, 0),
						(const char *)sqlite3_column_text(st, 1));
	long n = (long)sqlite3_column_int64(st, 2);
	int i = 0;

	while (i < sc->n && strcmp(sc->names[i], status))
		i++;
	if (i == sc->n) {
		if (sc->n == (int)ARRAY_SIZE(sc->names))
			return 0;
		snprintf(sc->names[sc->n++], sizeof(sc->names[0]), "%s", status);
	}
	sc->counts[i] += n;
	return 0;
}

static int sqlite_statuses(void *be, store_status_fn fn, void *ctx)
{
	struct store *s = be;
	struct status_ctx sc = { 0 };
	sqlite3_stmt *st;
	int err;

	/* Ended rows by status in one group each; running rows one by one, for their lock. */
	if (sqlite__prepare(s,
			    "SELECT status, lock, COUNT(*) FROM tasks WHERE status != 'running'"
			    " GROUP BY status UNION ALL"
			    " SELECT status, lock, 1 FROM tasks WHERE status = 'running'",
			    &st))
		return -EIO;
	err = each_row(s, st, status_row, &sc);
	for (int i = 0; i < sc.n && !err; i++) {
		struct store_status_row r = { sc.names[i], sc.counts[i] };

		if (fn(ctx, &r))
			break;
	}
	return err;
}

/* A stats query's rows, ordered by group: one group's values gathered, then its row. */
struct stats_ctx {
	int nby, ncols;
	char *group[STORE_BY_MAX]; /* the group being gathered (copies) */
	double *v;
	size_t n, cap;
	store_stats_fn fn;
	void *ctx;
	int err;
};

static int stats_flush(struct stats_ctx *sc)
{
	struct store_stats_row r = { .tasks = (long)sc->n };
	int stop;

	if (!sc->n)
		return 0;
	quantile_sort(sc->v, sc->n);
	for (int i = 0; i < sc->ncols; i++)
		r.group[i] = sc->group[i];
	r.min = sc->v[0];
	r.p50 = quantile_cont(sc->v, sc->n, 0.5);
	r.p90 = quantile_cont(sc->v, sc->n, 0.9);
	r.p99 = quantile_cont(sc->v, sc->n, 0.99);
	r.max = sc->v[sc->n - 1];
	stop = sc->fn(sc->ctx, &r);
	sc->n = 0;
	return stop;
}

static int stats_row(sqlite3_stmt *st, void *ctx)
{
	struct stats_ctx *sc = ctx;
	bool same = sc->n > 0;

	for (int i = 0; i < sc->ncols && same; i++)
		same = !strcmp(sc->group[i], sqlite__col_text(st, i));
	if (!same) {
		if (stats_flush(sc))
			return 1;
		for (int i = 0; i < sc->ncols; i++) {
			free(sc->group[i]);
			sc->group[i] = strdup(sqlite__col_text(st, i));
			if (!sc->group[i]) {
				sc->err = -ENOMEM;
				return 1;
			}
		}
	}
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 256;
		double *v = realloc(sc->v, cap * sizeof(*v));

		if (!v) {
			sc->err = -ENOMEM;
			return 1;
		}
		sc->v = v;
		sc->cap = cap;
	}
	sc->v[sc->n++] = sqlite3_column_double(st, sc->ncols);
	return 0;
}

/*
 * Every value of the metric, by group and in order, the quantiles computed here as
 * PostgreSQL's percentile_cont computes them (the fleet's stats are its own SQL).
 */
static int sqlite_stats(void *be, const char *metric, const struct store_filter *f,
			const char *const *by, int nby, store_stats_fn fn, void *ctx)
{
	struct store *s = be;
	struct stats_ctx sc = { .nby = nby, .ncols = nby ? nby : 1, .fn = fn, .ctx = ctx };
	sqlite3_stmt *st;
	char sql[4096];
	int err;

	sql[0] = '\0';
	for (int i = 0; i < nby; i++)
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
			 "%sCOALESCE(g%d.value, '(none)')", i ? ", " : "SELECT ", i);
	if (!nby)
		strncat(sql, "SELECT 'all'", sizeof(sql) - strlen(sql) - 1);
	snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
		 ", m.value FROM %s m JOIN tasks t ON t.tid = m.task",
		 strcmp(metric, STORE_WALL)
			 ? "metrics"
			 : "(SELECT tid AS task, '" STORE_WALL "' AS name,"
			   " wall_ns AS value FROM tasks WHERE wall_ns IS NOT NULL)");
	for (int i = 0; i < nby; i++)
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
			 " LEFT JOIN labels g%d ON g%d.task = t.tid AND g%d.key = ?%d", i, i, i,
			 3 + i);
	strncat(sql, " WHERE m.name = ?1 AND t.start_ns >= ?2 AND t.status IN " STORE_RAN_SQL,
		sizeof(sql) - strlen(sql) - 1);
	filter_sql(sql, sizeof(sql), "t.tid", f->nlabels);
	strncat(sql, " ORDER BY 1", sizeof(sql) - strlen(sql) - 1);
	for (int i = 1; i < nby; i++)
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), ", %d", i + 1);
	strncat(sql, ", m.value", sizeof(sql) - strlen(sql) - 1);
	if (sqlite__prepare(s, sql, &st))
		return -EIO;
	/* ?1 metric, ?2 since, ?3... the --by labels; then the filters' own. */
	sqlite3_bind_text(st, 1, metric, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, f->since_ns);
	for (int i = 0; i < nby; i++)
		sqlite3_bind_text(st, 3 + i, by[i], -1, SQLITE_STATIC);
	bind_filters(st, 3 + nby, f);
	err = each_row(s, st, stats_row, &sc);
	if (!err && !sc.err)
		stats_flush(&sc);
	for (int i = 0; i < sc.ncols; i++)
		free(sc.group[i]);
	free(sc.v);
	return err ? err : sc.err;
}

struct history_ctx {
	store_history_fn fn;
	void *ctx;
};

static int history_row(sqlite3_stmt *st, void *ctx)
{
	struct history_ctx *hc = ctx;
	struct store_history_row r = {
		.tid = sqlite3_column_int64(st, 0),
		.id = sqlite__col_text(st, 1),
		.start_ns = (__u64)sqlite3_column_int64(st, 2),
		.wall_ns = (__u64)sqlite3_column_int64(st, 3),
		.record = sqlite__col_text(st, 4),
	};

	return hc->fn(hc->ctx, &r);
}

static int sqlite_history(void *be, const struct store_history *h, store_history_fn fn, void *ctx)
{
	struct store *s = be;
	struct history_ctx hc = { fn, ctx };
	sqlite3_stmt *st;

	if (sqlite__prepare(s,
			    "SELECT t.tid, t.id, t.start_ns, t.wall_ns, t.record FROM labels l"
			    " JOIN tasks t ON t.tid = l.task WHERE l.key = ?1 AND l.value = ?2"
			    " AND t.status IN " STORE_RAN_SQL " AND t.record IS NOT NULL"
			    " AND t.wall_ns IS NOT NULL AND t.start_ns < ?3"
			    " AND NOT (t.id = ?4 AND t.host = ?5 AND t.start_ns = ?6)"
			    " ORDER BY t.start_ns DESC, t.tid DESC LIMIT ?7",
			    &st))
		return -EIO;
	sqlite3_bind_text(st, 1, h->key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, h->value, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)h->before_ns);
	sqlite3_bind_text(st, 4, h->id ? h->id : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, h->host ? h->host : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)h->start_ns);
	sqlite3_bind_int64(st, 7, h->limit);
	return each_row(s, st, history_row, &hc);
}

struct metric_ctx {
	store_metric_fn fn;
	void *ctx;
};

static int metric_row(sqlite3_stmt *st, void *ctx)
{
	struct metric_ctx *mc = ctx;
	struct store_metric_row r = {
		.tid = sqlite3_column_int64(st, 0),
		.name = sqlite__col_text(st, 1),
		.value = sqlite3_column_double(st, 2),
	};

	return mc->fn(mc->ctx, &r);
}

static int sqlite_metrics(void *be, const __s64 *tids, size_t n, store_metric_fn fn, void *ctx)
{
	struct store *s = be;
	struct metric_ctx mc = { fn, ctx };
	char sql[128 + 2 * STORE_TIDS_MAX];
	sqlite3_stmt *st;

	snprintf(sql, sizeof(sql), "SELECT task, name, value FROM metrics WHERE task IN (");
	for (size_t i = 0; i < n; i++)
		strncat(sql, i ? ",?" : "?", sizeof(sql) - strlen(sql) - 1);
	strncat(sql, ") ORDER BY task, name", sizeof(sql) - strlen(sql) - 1);
	if (sqlite__prepare(s, sql, &st))
		return -EIO;
	for (size_t i = 0; i < n; i++)
		sqlite3_bind_int64(st, (int)i + 1, tids[i]);
	return each_row(s, st, metric_row, &mc);
}

const struct store_ops sqlite_ops = {
	.name = "sqlite",
	.list = sqlite_list,
	.find = sqlite_find,
	.histograms = sqlite_histograms,
	.series = sqlite_series,
	.labels = sqlite_labels,
	.has_metric = sqlite_has_metric,
	.count = sqlite_count,
	.totals = sqlite_totals,
	.statuses = sqlite_statuses,
	.stats = sqlite_stats,
	.history = sqlite_history,
	.metrics = sqlite_metrics,
};
