// SPDX-License-Identifier: GPL-2.0
/*
 * The task store's handle: a SQLite file opened (directory, file modes, WAL, schema
 * brought forward) or a fleet's PostgreSQL, closed, and each query dispatched to its
 * backend, beside what every backend shares (the statuses, the per-remote metrics).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/conninfo.h"
#include "base/util.h"
#include "model/task.h"
#include "store/pgstore.h"
#include "store/store.h"
#include "store/store_int.h"

/*
 * Switching a new database to WAL takes an exclusive lock that SQLite does not wait
 * for (no busy handler): two runs that make the database at once retry here, as
 * long as the busy timeout would have waited.
 */
static int set_wal(struct store *s)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < 500; i++) {
		if (!sqlite__exec(s, "PRAGMA journal_mode = WAL"))
			return 0;
		if (sqlite3_errcode(s->db) != SQLITE_BUSY)
			return -EIO;
		nanosleep(&ts, NULL);
	}
	return -EIO;
}

/*
 * The database's directory: parents that are missing are made 0755, the directory
 * itself 0700 (0750 for the readers' group), since it holds every task's command line.
 */
static int make_dirs(const struct store *s)
{
	char buf[PATH_MAX];
	char *last;

	snprintf(buf, sizeof(buf), "%s", s->path);
	last = strrchr(buf, '/');
	if (!last || last == buf)
		return 0;
	*last = '\0';
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (!mkdir(buf, s->gid != (gid_t)-1 ? 0750 : 0700)) {
		if (s->gid != (gid_t)-1 && chown(buf, (uid_t)-1, s->gid))
			return -errno;
		return 0;
	}
	return errno == EEXIST ? 0 : -errno;
}

/*
 * The database file and its -wal and -shm (SQLite gives those the database's own
 * mode and owner): 0600, or 0640 and the readers' group. Made before SQLite opens
 * it, and tightened on files of ours that an older taskprobe made 0644.
 */
static int secure_files(const struct store *s)
{
	static const char *const sfx[] = { "", "-wal", "-shm" };
	char file[PATH_MAX + 8];
	struct stat st;
	int fd;

	fd = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, s->mode);
	if (fd >= 0)
		close(fd);
	else if (errno != EEXIST)
		return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(sfx); i++) {
		snprintf(file, sizeof(file), "%s%s", s->path, sfx[i]);
		if (stat(file, &st) || st.st_uid != geteuid())
			continue;
		if (s->gid != (gid_t)-1 && st.st_gid != s->gid && chown(file, (uid_t)-1, s->gid))
			return -errno;
		if ((st.st_mode & 07777) != s->mode && chmod(file, s->mode))
			return -errno;
	}
	return 0;
}

static struct store *open_at(const char *path, bool create, gid_t gid, int target)
{
	struct store *s = calloc(1, sizeof(*s));

	if (s) {
		s->ops = &sqlite_ops;
		s->be = s;
	}
	int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), v = 0, err;
	bool writer = true;

	if (!s)
		return NULL;
	s->gid = gid;
	s->mode = gid != (gid_t)-1 ? 0640 : 0600;
	snprintf(s->path, sizeof(s->path), "%s", path);
	snprintf(s->lockdir, sizeof(s->lockdir), "%s.locks", path);
	if (!create && access(path, F_OK) && errno != EACCES) {
		tp_err("no database at %s; 'taskprobe run' makes it (or pass --db PATH)", path);
		goto fail;
	}
	if (!create && access(path, R_OK)) {
		tp_err("cannot read DB: %s (%s); it is readable by root and by the config's "
		       "db_group",
		       errno == EACCES ? "permission denied" : strerror(errno), path);
		goto fail;
	}
	/*
	 * A query by a user who may not write (the readers' group) opens it read-only;
	 * one who may (root) also migrates an older schema forward, as a run would.
	 */
	if (!create && access(path, W_OK)) {
		writer = false;
		flags = SQLITE_OPEN_READONLY;
	}
	if (create) {
		err = make_dirs(s);
		if (!err)
			err = secure_files(s);
		if (err) {
			tp_err("cannot create database %s: %s", path, strerror(-err));
			goto fail;
		}
	}
	if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
		tp_err("cannot open database %s: %s", path,
		       s->db ? sqlite3_errmsg(s->db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(s->db, 5000);
	sqlite3_extended_result_codes(s->db, 0);
	/* The version first: a newer or foreign file must be left exactly as it is. */
	if (sqlite__schema_version(s, &v)) {
		sqlite__error(s, "reading the schema version");
		goto fail;
	}
	if (v > STORE_SCHEMA) {
		tp_err("database %s has schema %d, newer than this taskprobe's %d; upgrade "
		       "taskprobe",
		       path, v, STORE_SCHEMA);
		goto fail;
	}
	if (!writer) {
		/* A reader: the writer set WAL mode; queries change nothing. */
		if (v < target) {
			tp_err("database %s has schema %d; the next 'taskprobe run' upgrades it to %d",
			       path, v, target);
			goto fail;
		}
		return s;
	}
	/*
	 * The -wal and -shm files stay when the last writer closes: a reader without
	 * write access to the directory (the readers' group) cannot make them itself.
	 */
	sqlite3_file_control(s->db, "main", SQLITE_FCNTL_PERSIST_WAL, &(int){ 1 });
	if (set_wal(s) || sqlite__exec(s, "PRAGMA synchronous = NORMAL") ||
	    sqlite__exec(s, "PRAGMA journal_size_limit = 8388608") ||
	    sqlite__exec(s, "PRAGMA foreign_keys = ON")) {
		sqlite__error(s, "setting up");
		goto fail;
	}
	if (v < target && sqlite__migrate(s, target))
		goto fail;
	/* WAL mode made the -wal and -shm files: give them the database's mode. */
	if (create && secure_files(s)) {
		tp_err("cannot set the mode of %s-wal/-shm: %s", path, strerror(errno));
		goto fail;
	}
	return s;
fail:
	store__close(s);
	return NULL;
}

struct store *store__open(const char *path, bool create, gid_t gid)
{
	if (conninfo_is(path)) {
		tp_err("the task store is a local file; a fleet's PostgreSQL is the config's "
		       "'sink =', and the queries' --db");
		return NULL;
	}
	return open_at(path, create, gid, STORE_SCHEMA);
}

struct store *store__open_fleet(const char *conninfo, const char *passfile)
{
	struct store *s = calloc(1, sizeof(*s));

	if (!s) {
		tp_err("out of memory");
		return NULL;
	}
	s->ops = &pgstore_ops;
	s->be = pgstore_open(conninfo, passfile, s->path, sizeof(s->path));
	if (!s->be) {
		free(s);
		return NULL;
	}
	return s;
}

bool store__is_fleet(const struct store *s)
{
	return s->ops->read_only;
}

void store__set_outbox(struct store *s, enum store_queue q, bool on)
{
	s->outbox[q] = on;
}

int store__create_at_version(const char *path, int n)
{
	struct store *s = open_at(path, true, (gid_t)-1, n);

	if (!s)
		return -EIO;
	store__close(s);
	return 0;
}

void store__close(struct store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nlocks; i++)
		close(s->locks[i].fd);
	free(s->locks);
	if (s->ops && s->ops->close)
		s->ops->close(s->be);
	sqlite3_close(s->db);
	free(s);
}

bool store_status_known(const char *status)
{
	for (int e = 0; e < TASK_END_KINDS; e++)
		if (!strcmp(status, task_status_names[e]))
			return true;
	return !strcmp(status, STORE_LOST);
}

const char *store_status_list(void)
{
	static char list[256];
	size_t used = 0;

	if (list[0])
		return list;
	for (int e = 0; e < TASK_END_KINDS; e++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s, ",
					 task_status_names[e]);
	snprintf(list + used, sizeof(list) - used, "or %s", STORE_LOST);
	return list;
}

bool store_remote_metric(const char *m)
{
	return !strncmp(m, "http.", 5) || !strncmp(m, "net.tcp.", 8) ||
	       !strcmp(m, "net.tx_bytes") || !strcmp(m, "net.rx_bytes");
}

/* An operation the store's backend has not: one line, -EOPNOTSUPP. */
static int unanswered(const struct store *s, const char *what)
{
	tp_err("%s: the %s store does not answer %s", s->path, s->ops->name, what);
	return -EOPNOTSUPP;
}

int store__list(struct store *s, const struct store_filter *f, long limit, store_task_fn fn,
		void *ctx)
{
	return s->ops->list ? s->ops->list(s->be, f, limit, fn, ctx) : unanswered(s, "list");
}

int store__find(struct store *s, const char *id, const char *host, struct store_task *t)
{
	return s->ops->find ? s->ops->find(s->be, id, host, t) : unanswered(s, "find");
}

int store__histograms(struct store *s, __s64 tid, const char *name, store_hist_fn fn, void *ctx)
{
	return s->ops->histograms ? s->ops->histograms(s->be, tid, name, fn, ctx)
				  : unanswered(s, "histograms");
}

int store__series(struct store *s, __s64 tid, struct series_point **pts, size_t *n, int *damaged)
{
	return s->ops->series ? s->ops->series(s->be, tid, pts, n, damaged)
			      : unanswered(s, "series");
}

int store__labels(struct store *s, __s64 tid, store_label_fn fn, void *ctx)
{
	return s->ops->labels ? s->ops->labels(s->be, tid, fn, ctx) : unanswered(s, "labels");
}

int store__has_metric(struct store *s, const char *metric)
{
	return s->ops->has_metric ? s->ops->has_metric(s->be, metric)
				  : unanswered(s, "metric names");
}

int store__count(struct store *s, const char *metric, const struct store_filter *f, const char *by,
		 const char *host, store_count_fn fn, void *ctx)
{
	return s->ops->count ? s->ops->count(s->be, metric, f, by, host, fn, ctx)
			     : unanswered(s, "count");
}

int store__totals(struct store *s, const char *label, store_total_fn fn, void *ctx)
{
	return s->ops->totals ? s->ops->totals(s->be, label, fn, ctx) : unanswered(s, "totals");
}

int store__statuses(struct store *s, store_status_fn fn, void *ctx)
{
	return s->ops->statuses ? s->ops->statuses(s->be, fn, ctx) : unanswered(s, "statuses");
}

int store__stats(struct store *s, const char *metric, const struct store_filter *f,
		 const char *const *by, int nby, store_stats_fn fn, void *ctx)
{
	if (nby < 0 || nby > STORE_BY_MAX)
		return -EINVAL;
	return s->ops->stats ? s->ops->stats(s->be, metric, f, by, nby, fn, ctx)
			     : unanswered(s, "stats");
}

int store__history(struct store *s, const struct store_history *h, store_history_fn fn, void *ctx)
{
	return s->ops->history ? s->ops->history(s->be, h, fn, ctx) : unanswered(s, "history");
}

int store__metrics(struct store *s, const __s64 *tids, size_t n, store_metric_fn fn, void *ctx)
{
	if (n > STORE_TIDS_MAX)
		return -EINVAL;
	if (!n)
		return 0;
	return s->ops->metrics ? s->ops->metrics(s->be, tids, n, fn, ctx)
			       : unanswered(s, "metrics");
}
