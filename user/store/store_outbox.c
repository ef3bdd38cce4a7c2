// SPDX-License-Identifier: GPL-2.0
/*
 * The SQLite store's side of the shippers: the outboxes of tasks waiting for the fleet
 * and for an OTLP collector, a task's document as shipped, and each shipper's state
 * kept for doctor and /metrics.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "base/hist.h"
#include "base/json.h"
#include "base/util.h"
#include "store/store.h"
#include "store/store_int.h"

/* Each queue's column in tasks and its shipper's one-row table. */
static const struct {
	const char *col, *state;
} queues[STORE_QUEUES] = {
	[STORE_Q_FLEET] = { "ship", "sink_state" },
	[STORE_Q_OTLP] = { "otlp", "otlp_state" },
};

int store__outbox(struct store *s, enum store_queue q, __s64 after, __s64 *tids, int n)
{
	sqlite3_stmt *st;
	int got = 0, step = SQLITE_DONE;
	char sql[128];

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	snprintf(sql, sizeof(sql),
		 "SELECT tid FROM tasks WHERE %s = 1 AND tid > ? ORDER BY tid LIMIT ?",
		 queues[q].col);
	if (sqlite__prepare(s, sql, &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, after);
	sqlite3_bind_int(st, 2, n);
	while (got < n && (step = sqlite__step(s, st)) == SQLITE_ROW)
		tids[got++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return step < 0 ? step : got;
}

int store__outbox_backfill(struct store *s, enum store_queue q, bool refused)
{
	const char *c = queues[q].col;
	char sql[128];
	int err;

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	if (refused)
		snprintf(sql, sizeof(sql), "UPDATE tasks SET %s = 1 WHERE %s = 2", c, c);
	else
		snprintf(sql, sizeof(sql),
			 "UPDATE tasks SET %s = 1 WHERE %s IS NULL AND status != 'running'", c, c);
	err = sqlite__run(s, sql, "");
	return err ? err : sqlite3_changes(s->db);
}

int store__outbox_done(struct store *s, enum store_queue q, __s64 tid, bool refused)
{
	char sql[192];
	int err;

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	/*
	 * The mark and the shipper's count in one transaction: /metrics never sees a task
	 * gone from the backlog and not yet in shipped_total.
	 */
	err = sqlite__exec(s, "BEGIN IMMEDIATE") ? sqlite__error(s, "starting a transaction") : 0;
	snprintf(sql, sizeof(sql), "UPDATE tasks SET %s = ? WHERE tid = ? AND %s = 1",
		 queues[q].col, queues[q].col);
	if (!err)
		err = sqlite__run(s, sql, "ii", (long long)(refused ? 2 : 0), (long long)tid);
	if (!err && !refused && sqlite3_changes(s->db) > 0) {
		snprintf(sql, sizeof(sql), "UPDATE %s SET shipped = shipped + 1, shipped_ns = ?",
			 queues[q].state);
		err = sqlite__run(s, sql, "i", (long long)tp_realtime_ns());
	}
	if (!err && sqlite__exec(s, "COMMIT"))
		err = sqlite__error(s, "committing a shipped task");
	if (err)
		sqlite__exec(s, "ROLLBACK");
	return err;
}

int store__task_record(struct store *s, __s64 tid, char **record)
{
	sqlite3_stmt *st;
	int step;

	*record = NULL;
	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the shippers' read: the local store's */
	if (sqlite__prepare(s, "SELECT record FROM tasks WHERE tid = ? AND record IS NOT NULL",
			    &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	step = sqlite__step(s, st);
	if (step == SQLITE_ROW) {
		*record = strdup(sqlite__col_text(st, 0));
		if (!*record)
			step = -ENOMEM;
	}
	sqlite3_finalize(st);
	return step == SQLITE_ROW ? 0 : step < 0 ? step : -ENOENT;
}

/* Writes the rows of sql (bound to tid) as JSON through row, into an open object or array. */
static int doc_rows(struct store *s, __s64 tid, const char *sql, struct jw *w,
		    void (*row)(struct jw *w, sqlite3_stmt *st))
{
	sqlite3_stmt *st;
	int step;

	if (sqlite__prepare(s, sql, &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	while ((step = sqlite__step(s, st)) == SQLITE_ROW)
		row(w, st);
	sqlite3_finalize(st);
	return step < 0 ? step : 0;
}

static void doc_label(struct jw *w, sqlite3_stmt *st)
{
	jw_kstr(w, sqlite__col_text(st, 0), sqlite__col_text(st, 1));
}

static void doc_metric(struct jw *w, sqlite3_stmt *st)
{
	jw_kdouble(w, sqlite__col_text(st, 0), sqlite3_column_double(st, 1));
}

static void doc_hist(struct jw *w, sqlite3_stmt *st)
{
	const __u64 *slots = sqlite3_column_blob(st, 4);
	bool whole = sqlite3_column_bytes(st, 4) == (int)(sizeof(__u64) * TP_HIST_SLOTS);

	jw_obj_begin(w);
	jw_kstr(w, "name", sqlite__col_text(st, 0));
	jw_kstr(w, "unit", sqlite__col_text(st, 1));
	jw_key(w, "count");
	jw_i64(w, sqlite3_column_int64(st, 2));
	jw_key(w, "sum");
	jw_i64(w, sqlite3_column_int64(st, 3));
	jw_key(w, "slots");
	jw_arr_begin(w);
	for (int i = 0; i < TP_HIST_SLOTS; i++) {
		__u64 v = 0;

		if (whole)
			memcpy(&v, &slots[i], sizeof(v));
		jw_i64(w, v > (__u64)INT64_MAX ? INT64_MAX : (long long)v);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static void doc_net(struct jw *w, sqlite3_stmt *st)
{
	jw_obj_begin(w);
	jw_kstr(w, "host", sqlite__col_text(st, 0));
	jw_kstr(w, "address", sqlite__col_text(st, 1));
	jw_key(w, "port");
	jw_i64(w, sqlite3_column_int64(st, 2));
	jw_kstr(w, "name", sqlite__col_text(st, 3));
	jw_kdouble(w, "value", sqlite3_column_double(st, 4));
	jw_obj_end(w);
}

static void doc_series(struct jw *w, sqlite3_stmt *st)
{
	size_t len = (size_t)sqlite3_column_bytes(st, 2);
	char *b64 = malloc(tp_base64_len(len));

	jw_obj_begin(w);
	jw_key(w, "seq");
	jw_i64(w, sqlite3_column_int64(st, 0));
	jw_key(w, "points");
	jw_i64(w, sqlite3_column_int64(st, 1));
	jw_key(w, "data");
	if (b64) {
		tp_base64(sqlite3_column_blob(st, 2), len, b64);
		jw_str(w, b64);
	} else {
		jw_null(w);
	}
	jw_obj_end(w);
	free(b64);
}

int store__ship_doc(struct store *s, __s64 tid, char **doc)
{
	sqlite3_stmt *st;
	size_t len = 0;
	struct jw w;
	FILE *f;
	int err;

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	*doc = NULL;
	if (sqlite__prepare(
		    s,
		    "SELECT id, host, command, status, exit_status, start_ns, wall_ns, record"
		    " FROM tasks WHERE tid = ?",
		    &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	err = sqlite__step(s, st);
	if (err != SQLITE_ROW) {
		sqlite3_finalize(st);
		return err < 0 ? err : -ENOENT;
	}
	f = open_memstream(doc, &len);
	if (!f) {
		sqlite3_finalize(st);
		return -ENOMEM;
	}
	jw_init(&w, f, false);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", sqlite__col_text(st, 0));
	jw_kstr(&w, "host", sqlite__col_text(st, 1));
	jw_kstr(&w, "command", sqlite__col_text(st, 2));
	jw_kstr(&w, "status", sqlite__col_text(st, 3));
	jw_key(&w, "exit_status");
	if (sqlite3_column_type(st, 4) == SQLITE_NULL)
		jw_null(&w);
	else
		jw_i64(&w, sqlite3_column_int64(st, 4));
	jw_key(&w, "start_ns");
	jw_i64(&w, sqlite3_column_int64(st, 5));
	jw_key(&w, "wall_ns");
	if (sqlite3_column_type(st, 6) == SQLITE_NULL)
		jw_null(&w);
	else
		jw_i64(&w, sqlite3_column_int64(st, 6));
	jw_key(&w, "record");
	if (sqlite3_column_type(st, 7) == SQLITE_NULL)
		jw_null(&w);
	else
		jw_str(&w, sqlite__col_text(st, 7));
	sqlite3_finalize(st);
	jw_key(&w, "labels");
	jw_obj_begin(&w);
	err = doc_rows(s, tid, "SELECT key, value FROM labels WHERE task = ? ORDER BY key", &w,
		       doc_label);
	jw_obj_end(&w);
	jw_key(&w, "metrics");
	jw_obj_begin(&w);
	if (!err)
		err = doc_rows(s, tid, "SELECT name, value FROM metrics WHERE task = ?", &w,
			       doc_metric);
	jw_obj_end(&w);
	jw_key(&w, "hists");
	jw_arr_begin(&w);
	if (!err)
		err = doc_rows(
			s, tid,
			"SELECT name, unit, count, sum, slots FROM histograms WHERE task = ?", &w,
			doc_hist);
	jw_arr_end(&w);
	jw_key(&w, "net");
	jw_arr_begin(&w);
	if (!err)
		err = doc_rows(s, tid,
			       "SELECT host, address, port, name, value FROM net WHERE task = ?",
			       &w, doc_net);
	jw_arr_end(&w);
	jw_key(&w, "series");
	jw_arr_begin(&w);
	if (!err)
		err = doc_rows(s, tid,
			       "SELECT seq, points, data FROM series WHERE task = ? ORDER BY seq",
			       &w, doc_series);
	jw_arr_end(&w);
	jw_obj_end(&w);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(*doc);
		*doc = NULL;
	}
	return err;
}

int store__sink_state(struct store *s, enum store_queue q, struct store_sink_state *ss)
{
	const char *c = queues[q].col;
	sqlite3_stmt *st;
	char sql[320];
	int step;

	memset(ss, 0, sizeof(*ss));
	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: it has no outbox */
	snprintf(sql, sizeof(sql),
		 "SELECT sink, error, error_ns, shipped_ns, next_try_ns, failures, shipped,"
		 " (SELECT COUNT(*) FROM tasks WHERE %s = 1),"
		 " (SELECT COUNT(*) FROM tasks WHERE %s = 2) FROM %s",
		 c, c, queues[q].state);
	if (sqlite__prepare(s, sql, &st))
		return -EIO;
	step = sqlite__step(s, st);
	if (step == SQLITE_ROW) {
		snprintf(ss->sink, sizeof(ss->sink), "%s", sqlite__col_text(st, 0));
		snprintf(ss->error, sizeof(ss->error), "%s", sqlite__col_text(st, 1));
		ss->error_ns = (__u64)sqlite3_column_int64(st, 2);
		ss->shipped_ns = (__u64)sqlite3_column_int64(st, 3);
		ss->next_try_ns = (__u64)sqlite3_column_int64(st, 4);
		ss->failures = (long)sqlite3_column_int64(st, 5);
		ss->shipped = (long)sqlite3_column_int64(st, 6);
		ss->waiting = (long)sqlite3_column_int64(st, 7);
		ss->refused = (long)sqlite3_column_int64(st, 8);
	}
	sqlite3_finalize(st);
	return step < 0 ? step : 0;
}

int store__sink_name(struct store *s, enum store_queue q, const char *sink)
{
	char sql[160];

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	snprintf(sql, sizeof(sql),
		 "UPDATE %s SET sink = ?1, error = NULL, next_try_ns = 0, failures = 0"
		 " WHERE sink IS NOT ?1",
		 queues[q].state);
	return sqlite__run(s, sql, "t", sink);
}

int store__sink_note(struct store *s, enum store_queue q, const char *sink, const char *error,
		     __u64 next_try_ns)
{
	__u64 now = tp_realtime_ns();
	char sql[320];

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	/*
	 * An error with no retry time (a refused task) is said, without a backoff. The
	 * count of shipped tasks is store__outbox_done's, task by task.
	 */
	snprintf(sql, sizeof(sql),
		 "UPDATE %s SET sink = ?1, error = ?2,"
		 " error_ns = CASE WHEN ?2 IS NULL THEN error_ns ELSE ?3 END,"
		 " next_try_ns = ?4, failures = CASE WHEN ?4 > 0 THEN failures + 1 ELSE 0 END",
		 queues[q].state);
	return sqlite__run(s, sql, "ttii", sink, error, (long long)now, (long long)next_try_ns);
}
