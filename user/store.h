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
#include <sqlite3.h>
#include <linux/types.h>

#include "task.h"

#define STORE_SCHEMA 3

struct store;

/*
 * Opens the database at path: create makes it (and its directory) for writing, with
 * files 0600, or 0640 for the group gid (-1: none); otherwise it is opened read-only
 * for queries. NULL on failure, with the reason already printed as one
 * "taskprobe:" line.
 */
struct store *store__open(const char *path, bool create, gid_t gid);
void store__close(struct store *s);
sqlite3 *store__db(struct store *s);
/*
 * A query's statement, and its steps: SQLITE_ROW or SQLITE_DONE, or -EIO after the
 * one-line error (a damaged page is "corrupt", never the end of the rows).
 */
int store__prepare(struct store *s, const char *sql, sqlite3_stmt **st);
int store__step(struct store *s, sqlite3_stmt *st);

/* Writes the task's row (status running) with its labels; takes its liveness lock. */
int store__task_begin(struct store *s, const struct task_record *t, const struct label *host_labels,
		      int nhost, __s64 *tid);
int store__append_series(struct store *s, __s64 tid, int seq, const void *blob, size_t len,
			 size_t points);
/* Replaces all of a task's series blocks with one (compaction at the task's end). */
int store__replace_series(struct store *s, __s64 tid, const void *blob, size_t len, size_t points);
/* Writes the figures and the JSON record, the final status, and drops the lock. */
int store__task_end(struct store *s, __s64 tid, const struct task_record *t);
/* Forgets a task that never started (its command could not be executed). */
int store__task_abort(struct store *s, __s64 tid);
/* Marks running tasks whose collector is gone as lost; returns how many. */
int store__mark_lost(struct store *s);
/* Drops tasks older than days, then the oldest while the file is over max_mb. */
int store__retain(struct store *s, int days, int max_mb);

/* The status to show: "lost" for a running row whose lock nobody holds. */
const char *store__live_status(const char *status, const char *lock);

/* Applies the first n migrations only: makes a database of an older schema (tests). */
int store__create_at_version(const char *path, int n);

#endif /* TP_STORE_H */
