/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every store backend answers (store.h's SQLite file, pgstore.h's fleet
 * PostgreSQL): the filters, the rows, and the table of operations store.c dispatches to.
 */
#ifndef TP_STORE_API_H
#define TP_STORE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "base/hist.h"
#include "model/series.h"
#include "model/task.h"

/*
 * Queries: every one returns its rows through a callback (a row's strings live until
 * the callback returns; a non-zero return stops the rows), and 0, or -EIO after the
 * one-line error: a damaged page is "corrupt", never the end of the rows.
 */

/* Which tasks a query is over. */
struct store_filter {
	__s64 since_ns;		    /* started at or after (realtime ns); 0: all */
	const struct label *labels; /* every one must match, task or host label */
	int nlabels;
	const char *status; /* list only: this live status ("lost" included) */
};

struct store_task_row {
	const char *id;
	const char *host;   /* the worker host it ran on */
	const char *status; /* live: a running row whose collector is gone is "lost" */
	const char *command;
	__u64 start_ns;
	bool ended;
	__u64 wall_ns;
	__s64 exit_status;
	double cpu_ns;
	double peak_mem_bytes;
};

typedef int (*store_task_fn)(void *ctx, const struct store_task_row *row);

struct store_task {
	__s64 tid;
	char status[32];
	char *record;  /* the JSON record, NULL until the task ended; the caller frees it */
	__u64 wall_ns; /* a task without an end: its life so far */
	char host[256];
	long hosts; /* how many hosts have a task with this id (a fleet's hosts may reuse one) */
};

struct store_hist_row {
	const char *name;
	const char *unit;
	struct tp_hist h;
};

typedef int (*store_hist_fn)(void *ctx, const struct store_hist_row *row);

typedef int (*store_label_fn)(void *ctx, const char *key, const char *value);

struct store_count_row {
	const char *group; /* the --by label's value, "(none)", or "all" */
	long tasks;
	double sum;
};

typedef int (*store_count_fn)(void *ctx, const struct store_count_row *row);
struct store_total_row {
	const char *metric;
	const char *worker_pool; /* the host labels, "" when a task has none */
	const char *instance_type;
	const char *label; /* the task label asked for, "" when a task has none */
	double sum;
	long tasks;
};

typedef int (*store_total_fn)(void *ctx, const struct store_total_row *row);

struct store_status_row {
	const char *status; /* live: "lost" for a running row whose collector is gone */
	long tasks;
};

typedef int (*store_status_fn)(void *ctx, const struct store_status_row *row);

/*
 * The outboxes an ended task can wait in, each with its shipper's state: the fleet's
 * PostgreSQL (the config's sink) and an OpenTelemetry collector (otlp_endpoint).
 */
enum store_queue { STORE_Q_FLEET, STORE_Q_OTLP, STORE_QUEUES };

/*
 * The statuses of tasks that ran to their end, whose figures stats and compare read
 * (not_found, exec_failed: nothing ran; interrupted: part of a task), as SQL.
 */
#define STORE_RAN_SQL "('exited', 'signaled', 'ended')"
/* The task's wall time: a figure of the tasks' rows, not of the metrics table. */
#define STORE_WALL "wall_ns"
/* How many labels stats groups by at most. */
#define STORE_BY_MAX 3

/* One group of a stats query: percentile_cont's quantiles (base/quantile.h). */
struct store_stats_row {
	const char *group[STORE_BY_MAX]; /* each --by label's value, or "(none)"; "all" */
	long tasks;
	double min, p50, p90, p99, max;
};

typedef int (*store_stats_fn)(void *ctx, const struct store_stats_row *row);

/* A task's history: the ended tasks a compare reads, newest first. */
struct store_history {
	const char *key, *value; /* the label each one has */
	__u64 before_ns;	 /* started before this (the compared task's end) */
	const char *id, *host;	 /* the compared task itself, left out */
	__u64 start_ns;
	long limit;
};

struct store_history_row {
	__s64 tid;
	const char *id;
	__u64 start_ns;
	__u64 wall_ns;
	const char *record; /* its JSON record (its phases) */
};

typedef int (*store_history_fn)(void *ctx, const struct store_history_row *row);

struct store_metric_row {
	__s64 tid;
	const char *name;
	double value;
};

typedef int (*store_metric_fn)(void *ctx, const struct store_metric_row *row);

/* Metrics stored per remote host too (http.*, net.tcp.*, net.tx/rx_bytes). */
bool store_remote_metric(const char *metric);

/*
 * A backend's queries, each on its own state be; a NULL entry is one the backend does
 * not answer (-EOPNOTSUPP, said once). A read-only backend refuses every write with
 * -EOPNOTSUPP: the writes are SQLite's alone.
 */
struct store_ops {
	const char *name;
	bool read_only;
	void (*close)(void *be);
	int (*list)(void *be, const struct store_filter *f, long limit, store_task_fn fn,
		    void *ctx);
	int (*find)(void *be, const char *id, const char *host, struct store_task *t);
	int (*histograms)(void *be, __s64 tid, const char *name, store_hist_fn fn, void *ctx);
	int (*series)(void *be, __s64 tid, struct series_point **pts, size_t *n, int *damaged);
	int (*labels)(void *be, __s64 tid, store_label_fn fn, void *ctx);
	int (*has_metric)(void *be, const char *metric);
	int (*count)(void *be, const char *metric, const struct store_filter *f, const char *by,
		     const char *host, store_count_fn fn, void *ctx);
	int (*totals)(void *be, const char *label, store_total_fn fn, void *ctx);
	int (*statuses)(void *be, store_status_fn fn, void *ctx);
	int (*stats)(void *be, const char *metric, const struct store_filter *f,
		     const char *const *by, int nby, store_stats_fn fn, void *ctx);
	int (*history)(void *be, const struct store_history *h, store_history_fn fn, void *ctx);
	int (*metrics)(void *be, const __s64 *tids, size_t n, store_metric_fn fn, void *ctx);
};

#endif /* TP_STORE_API_H */
