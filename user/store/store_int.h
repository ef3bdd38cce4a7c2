/* SPDX-License-Identifier: GPL-2.0 */
/* Inside the SQLite store: the handle and the helpers its files share; only they include it. */
#ifndef TP_STORE_INT_H
#define TP_STORE_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include <sqlite3.h>

#include "store/store_api.h"

struct store {
	sqlite3 *db;
	char path[PATH_MAX];
	char lockdir[PATH_MAX];
	/* The liveness lock of each task this process has running (a daemon's many). */
	struct task_lock {
		__s64 tid;
		int fd;
	} * locks;
	size_t nlocks, cap_locks;
	gid_t gid;		     /* the group that may read it, or -1 */
	mode_t mode;		     /* of its files: 0600, or 0640 with a group */
	bool outbox[STORE_QUEUES];   /* its destination is configured: ended tasks wait */
	const struct store_ops *ops; /* SQLite's, or a fleet PostgreSQL's (queries only) */
	void *be;		     /* the backend's state: this store for SQLite */
};

/* SQLite's queries (store_query.c), the backend of every store opened on a file. */
extern const struct store_ops sqlite_ops;

/* The failure of the last call on s->db said in one line, with what to do: -EIO. */
int sqlite__error(struct store *s, const char *what);
/* sql run whole, nothing said: 0 or -EIO (the caller decides what a failure means). */
int sqlite__exec(struct store *s, const char *sql);
/* A statement to read with (*st NULL on failure, said): 0 or -EIO. */
int sqlite__prepare(struct store *s, const char *sql, sqlite3_stmt **st);
/* SQLITE_ROW, SQLITE_DONE, or -EIO said: a damaged page is never the end of the rows. */
int sqlite__step(struct store *s, sqlite3_stmt *st);
/*
 * Prepares sql, binds the arguments by fmt ('i' long long, 't' text or NULL, 'd'
 * double, 'b' blob and int length), steps once and finalizes: 0 or -EIO said.
 */
int sqlite__run(struct store *s, const char *sql, const char *fmt, ...);
/* A text column, "" for NULL: for rows copied or written out as they are read. */
const char *sqlite__col_text(sqlite3_stmt *st, int i);

/* PRAGMA user_version: 0 or -EIO, not said (the caller knows what it was reading for). */
int sqlite__schema_version(struct store *s, int *v);
/* The schema moved forward to version target (store_schema.c): 0 or -EIO said. */
int sqlite__migrate(struct store *s, int target);

#endif /* TP_STORE_INT_H */
