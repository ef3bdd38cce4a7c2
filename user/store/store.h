/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The task store: SQLite (WAL, schema version in PRAGMA user_version, forward
 * migrations, prepared statements only). A task's row is written at its start, its
 * series appended while it runs, its figures at its end. A running task's collector
 * holds a lock file for the task's life: a row still "running" whose lock is free
 * belongs to a dead collector and reads as "lost".
 */
#ifndef TP_STORE_H
#define TP_STORE_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "store/store_api.h"

#define STORE_SCHEMA 5
/* The status of a running task whose collector is gone (it holds no lock). */
#define STORE_LOST "lost"

struct store;

/*
 * Opens the database at path: create makes it (and its directory) for writing, with
 * files 0600, or 0640 for the group gid (-1: none); otherwise it is opened read-only
 * for queries. NULL on failure, with the reason already printed as one
 * "taskprobe:" line.
 */
struct store *store__open(const char *path, bool create, gid_t gid);
void store__close(struct store *s);
/*
 * A fleet's PostgreSQL (sink.h) for the queries: list, find, histograms, series,
 * labels, has_metric and count answer over every host's tasks. NULL with the
 * reason said ("fleet NAME: why").
 */
struct store *store__open_fleet(const char *conninfo, const char *passfile);
/* True for a fleet's store: its tasks come from many hosts. */
bool store__is_fleet(const struct store *s);
/*
 * With q's destination configured: every task that ends, or is found lost, waits in
 * q's outbox for the shipper, and retention never deletes a waiting one.
 */
void store__set_outbox(struct store *s, enum store_queue q, bool on);
/* Writes the task's row (status running) with its labels; takes its liveness lock. */
int store__task_begin(struct store *s, const struct task_record *t, const struct label *host_labels,
		      int nhost, __s64 *tid);
/*
 * A task adopted from a daemon that died: its row (running, or marked lost since) is
 * running again, its liveness lock this process's. -ENOENT: no such row; -EALREADY:
 * it ended.
 */
int store__task_resume(struct store *s, __s64 tid);
/* The task's liveness lock let go, its row left as it is (lost, for the spool to complete). */
void store__task_release(struct store *s, __s64 tid);
/* The block number after the task's last stored one (0: none), or -errno. */
int store__series_next(struct store *s, __s64 tid);
int store__append_series(struct store *s, __s64 tid, int seq, const void *blob, size_t len,
			 size_t points);
/* Replaces all of a task's series blocks with one (compaction at the task's end). */
int store__replace_series(struct store *s, __s64 tid, const void *blob, size_t len, size_t points);
/* Writes the figures and the JSON record, the final status, and drops the lock. */
int store__task_end(struct store *s, __s64 tid, const struct task_record *t);
/* Forgets a task that never started (its command could not be executed). */
int store__task_abort(struct store *s, __s64 tid);
/*
 * A spooled task, ended, with its series (blob of points samples, or NULL), in one
 * transaction: its row completed where its start was stored (running or lost), else
 * made; nothing when it is stored already (same id, host and start). 0 or -errno.
 */
int store__restore(struct store *s, const struct task_record *t, const struct label *host_labels,
		   int nhost, const void *blob, size_t len, size_t points);
/* Marks running tasks whose collector is gone as lost; returns how many. */
int store__mark_lost(struct store *s);
/* Drops tasks older than days, then the oldest while the file is over max_mb. */
int store__retain(struct store *s, int days, int max_mb);

/* The status to show: "lost" for a running row whose lock nobody holds. */
const char *store__live_status(const char *status, const char *lock);
/* A status a stored task can have: task_status_names' and STORE_LOST. */
bool store_status_known(const char *status);
/* Those statuses, for messages: "exited, signaled, ... or lost". */
const char *store_status_list(void);

/* Tasks, newest first, at most limit of them. */
int store__list(struct store *s, const struct store_filter *f, long limit, store_task_fn fn,
		void *ctx);
/*
 * The newest stored task with this id, of a host that matches the glob host (NULL:
 * any host): 0, -ENOENT (not said) or -EIO.
 */
int store__find(struct store *s, const char *id, const char *host, struct store_task *t);
/* A task's histograms by name (NULL: all of them). */
int store__histograms(struct store *s, __s64 tid, const char *name, store_hist_fn fn, void *ctx);
/*
 * A task's series samples, every block decoded in order into *pts (grown, the caller
 * frees it); a damaged block is skipped and counted in *damaged.
 */
int store__series(struct store *s, __s64 tid, struct series_point **pts, size_t *n, int *damaged);
/* A task's labels, its own and the host's (host, ncpu, instance_type, ...), by key. */
int store__labels(struct store *s, __s64 tid, store_label_fn fn, void *ctx);
/* 1 if some stored task has the metric, 0 if none, or -EIO. */
int store__has_metric(struct store *s, const char *metric);
/*
 * A metric summed over the tasks of f, grouped by the label by (NULL: one group),
 * largest sum first. host (NULL: all) is a glob: for metrics kept per remote host
 * (store_remote_metric) the remote's names or address, else the worker host's name.
 */
int store__count(struct store *s, const char *metric, const struct store_filter *f, const char *by,
		 const char *host, store_count_fn fn, void *ctx);
/*
 * Every stored metric summed over all tasks by worker_pool and instance_type, and by
 * the task label named label too unless it is NULL.
 */
int store__totals(struct store *s, const char *label, store_total_fn fn, void *ctx);
/* How many stored tasks have each status. */
int store__statuses(struct store *s, store_status_fn fn, void *ctx);
/*
 * A metric (or STORE_WALL) over the tasks of f that ran to their end (STORE_RAN_SQL):
 * count, min, p50, p90, p99 and max, grouped by the nby labels of by (none: one group,
 * "all"), each label's values in byte order; quantiles as PostgreSQL's percentile_cont.
 */
int store__stats(struct store *s, const char *metric, const struct store_filter *f,
		 const char *const *by, int nby, store_stats_fn fn, void *ctx);
/* The last h->limit tasks of h that ran to their end, newest first. */
int store__history(struct store *s, const struct store_history *h, store_history_fn fn, void *ctx);
/* The metrics of the n tasks tids (at most STORE_TIDS_MAX), by task, then by name. */
#define STORE_TIDS_MAX 500
int store__metrics(struct store *s, const __s64 *tids, size_t n, store_metric_fn fn, void *ctx);

/* q's outbox: up to n waiting tasks after tid after, oldest first; how many, or -EIO. */
int store__outbox(struct store *s, enum store_queue q, __s64 after, __s64 *tids, int n);
/*
 * Every ended task stored before q's destination was configured waits too (refused:
 * every task it refused waits again instead): how many, or -EIO.
 */
int store__outbox_backfill(struct store *s, enum store_queue q, bool refused);
/*
 * A task is at q's destination now, counted as shipped with the time (or it refused
 * the data: it waits no more).
 */
int store__outbox_done(struct store *s, enum store_queue q, __s64 tid, bool refused);
/* An ended task's record as stored (JSON, the caller's to free): 0, -ENOENT or -EIO. */
int store__task_record(struct store *s, __s64 tid, char **record);
/*
 * One task whole, as the shipper sends it: a JSON object of its row (id, host,
 * command, status, exit_status, start_ns, wall_ns, record), labels, metrics,
 * hists, net and series (base64 blocks). *doc is the caller's to free.
 */
int store__ship_doc(struct store *s, __s64 tid, char **doc);

/* A shipper's state, one per queue, kept in the store for doctor and /metrics. */
struct store_sink_state {
	char sink[256];		    /* the destination's name (no password) */
	char error[512];	    /* the last error, "" after a success */
	__u64 error_ns, shipped_ns; /* realtime of the last error and the last shipped task */
	__u64 next_try_ns;	    /* realtime before which shippers wait (backoff) */
	long failures;		    /* consecutive failed rounds */
	long shipped;		    /* tasks shipped since the store was made */
	long waiting;		    /* the backlog */
	long refused;		    /* tasks it refused (their data), kept locally */
};

int store__sink_state(struct store *s, enum store_queue q, struct store_sink_state *st);
/*
 * After a round: error NULL for a success; else its message, with the time before
 * which shippers wait (0: none, as for a task the fleet refused).
 */
int store__sink_note(struct store *s, enum store_queue q, const char *sink, const char *error,
		     __u64 next_try_ns);

/*
 * q's configured destination, before its first round (so that doctor and /metrics show
 * it); one other than the last starts afresh, without the old one's error or backoff.
 */
int store__sink_name(struct store *s, enum store_queue q, const char *sink);

/* Applies the first n migrations only: makes a database of an older schema (tests). */
int store__create_at_version(const char *path, int n);

#endif /* TP_STORE_H */
