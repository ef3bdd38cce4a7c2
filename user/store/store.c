// SPDX-License-Identifier: GPL-2.0
/* The task store: SQLite schema, migrations, task writes, liveness locks and retention. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/conninfo.h"
#include "base/util.h"
#include "model/metric_descs.h"
#include "model/task_json.h"
#include "store/pgstore.h"
#include "store/sink.h"
#include "store/store.h"

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
	bool outbox;		     /* a sink is configured: ended tasks wait for the shipper */
	const struct store_ops *ops; /* SQLite's, or a fleet PostgreSQL's (queries only) */
	void *be;		     /* the backend's state: this store for SQLite */
};

static const struct store_ops sqlite_ops;

/* Each entry moves the schema one version forward; never edit a shipped one. */
static const char *const migrations[STORE_SCHEMA] = {
	/* 1: tasks, labels, metrics */
	"CREATE TABLE tasks (tid INTEGER PRIMARY KEY, id TEXT NOT NULL, host TEXT NOT NULL,"
	" command TEXT NOT NULL, status TEXT NOT NULL, exit_status INTEGER,"
	" start_ns INTEGER NOT NULL, wall_ns INTEGER, record TEXT);"
	"CREATE INDEX tasks_id ON tasks(id);"
	"CREATE INDEX tasks_start ON tasks(start_ns);"
	"CREATE TABLE labels (task INTEGER NOT NULL REFERENCES tasks(tid) ON DELETE CASCADE,"
	" key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (task, key)) WITHOUT ROWID;"
	"CREATE INDEX labels_kv ON labels(key, value);"
	"CREATE TABLE metrics (task INTEGER NOT NULL REFERENCES tasks(tid) ON DELETE CASCADE,"
	" name TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (task, name)) WITHOUT ROWID;"
	"CREATE INDEX metrics_name ON metrics(name, task);",
	/* 2: liveness locks, series blocks, histograms */
	"ALTER TABLE tasks ADD COLUMN lock TEXT;"
	"CREATE TABLE series (task INTEGER NOT NULL REFERENCES tasks(tid) ON DELETE CASCADE,"
	" seq INTEGER NOT NULL, points INTEGER NOT NULL, data BLOB NOT NULL,"
	" PRIMARY KEY (task, seq)) WITHOUT ROWID;"
	"CREATE TABLE histograms (task INTEGER NOT NULL REFERENCES tasks(tid) ON DELETE CASCADE,"
	" name TEXT NOT NULL, unit TEXT NOT NULL, count INTEGER NOT NULL, sum INTEGER NOT NULL,"
	" slots BLOB NOT NULL, PRIMARY KEY (task, name)) WITHOUT ROWID;",
	/* 3: network and HTTP figures by remote host (names resolved, address, port) */
	"CREATE TABLE net (task INTEGER NOT NULL REFERENCES tasks(tid) ON DELETE CASCADE,"
	" host TEXT NOT NULL, address TEXT NOT NULL, port INTEGER NOT NULL, name TEXT NOT NULL,"
	" value REAL NOT NULL, PRIMARY KEY (task, host, address, port, name)) WITHOUT ROWID;"
	"CREATE INDEX net_name ON net(name, task);",
	/*
	 * 4: the outbox (ship: NULL no sink, 1 waiting, 0 shipped, 2 refused by the
	 * fleet) and the shipper's state, one row
	 */
	"ALTER TABLE tasks ADD COLUMN ship INTEGER;"
	"CREATE INDEX tasks_ship ON tasks(ship, tid) WHERE ship IS NOT NULL;"
	"CREATE TABLE sink_state (one INTEGER PRIMARY KEY CHECK (one = 1), sink TEXT,"
	" error TEXT, error_ns INTEGER NOT NULL DEFAULT 0, shipped_ns INTEGER NOT NULL DEFAULT 0,"
	" next_try_ns INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,"
	" shipped INTEGER NOT NULL DEFAULT 0);"
	"INSERT INTO sink_state (one) VALUES (1);",
};

static int db_error(struct store *s, const char *what)
{
	int code = sqlite3_errcode(s->db);

	if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
		tp_err("database %s is locked by another process: %s; try again", s->path, what);
	else if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
		tp_err("database %s is corrupt or not a taskprobe database (%s); move it away",
		       s->path, sqlite3_errmsg(s->db));
	else if (code == SQLITE_FULL)
		tp_err("database %s: disk full (%s); free space or lower max_db_mb", s->path, what);
	else
		tp_err("database %s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
	return -EIO;
}

static int exec(struct store *s, const char *sql)
{
	return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

/*
 * Switching a new database to WAL takes an exclusive lock that SQLite does not wait
 * for (no busy handler): two runs that make the database at once retry here, as
 * long as the busy timeout would have waited.
 */
static int set_wal(struct store *s)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < 500; i++) {
		if (!exec(s, "PRAGMA journal_mode = WAL"))
			return 0;
		if (sqlite3_errcode(s->db) != SQLITE_BUSY)
			return -EIO;
		nanosleep(&ts, NULL);
	}
	return -EIO;
}

static int user_version(struct store *s, int *v)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

/*
 * Runs migrations up to target, each in a transaction of its own. The version is read
 * again under the write lock: another collector may have migrated meanwhile.
 */
static int migrate(struct store *s, int target)
{
	char sql[64];
	int v;

	for (;;) {
		if (exec(s, "BEGIN IMMEDIATE") || user_version(s, &v)) {
			exec(s, "ROLLBACK");
			return db_error(s, "schema migration");
		}
		if (v >= target)
			return exec(s, "COMMIT") ? db_error(s, "schema migration") : 0;
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
		if (exec(s, migrations[v]) || exec(s, sql) || exec(s, "COMMIT")) {
			db_error(s, "schema migration");
			exec(s, "ROLLBACK");
			return -EIO;
		}
	}
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
	if (user_version(s, &v)) {
		db_error(s, "reading the schema version");
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
	if (set_wal(s) || exec(s, "PRAGMA synchronous = NORMAL") ||
	    exec(s, "PRAGMA journal_size_limit = 8388608") || exec(s, "PRAGMA foreign_keys = ON")) {
		db_error(s, "setting up");
		goto fail;
	}
	if (v < target && migrate(s, target))
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

void store__set_outbox(struct store *s, bool on)
{
	s->outbox = on;
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

static int query_prepare(struct store *s, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK)
		return 0;
	*st = NULL;
	return db_error(s, "reading");
}

static int query_step(struct store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return rc;
	return db_error(s, "reading");
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

const char *store__live_status(const char *status, const char *lock)
{
	int fd, held;

	if (!status || strcmp(status, "running"))
		return status ? status : "unknown";
	if (!lock)
		return STORE_LOST;
	fd = open(lock, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return STORE_LOST;
	/* The collector holds LOCK_EX for the task's life; a dead one holds nothing. */
	held = flock(fd, LOCK_SH | LOCK_NB) && errno == EWOULDBLOCK;
	close(fd);
	return held ? "running" : STORE_LOST;
}

/* Prepares, binds by the format ('i' int64, 't' text, 'd' double, 'b' blob+len), steps. */
static int run_stmt(struct store *s, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int rc, i = 1;

	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db_error(s, "preparing a statement");
	va_start(ap, fmt);
	for (const char *f = fmt; *f; f++, i++) {
		if (*f == 'i') {
			sqlite3_bind_int64(st, i, va_arg(ap, long long));
		} else if (*f == 't') {
			const char *t = va_arg(ap, const char *);

			if (t)
				sqlite3_bind_text(st, i, t, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(st, i);
		} else if (*f == 'd') {
			sqlite3_bind_double(st, i, va_arg(ap, double));
		} else if (*f == 'b') {
			const void *b = va_arg(ap, const void *);
			int len = va_arg(ap, int);

			sqlite3_bind_blob(st, i, b, len, SQLITE_TRANSIENT);
		}
	}
	va_end(ap);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : db_error(s, "writing");
}

static char *command_json(const struct task_record *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct jw w;

	if (!f)
		return NULL;
	jw_init(&w, f, false);
	jw_arr_begin(&w);
	for (int i = 0; i < t->argc; i++)
		jw_str(&w, t->argv[i]);
	jw_arr_end(&w);
	fclose(f);
	return buf;
}

/* Readers (list, show) test the lock: the readers' group may open it, nobody else. */
static int take_lock(struct store *s, __s64 tid, char *path, size_t len)
{
	bool group = s->gid != (gid_t)-1;
	int fd;

	if (!mkdir(s->lockdir, group ? 0750 : 0700)) {
		if (group && chown(s->lockdir, (uid_t)-1, s->gid))
			return -errno;
	} else if (errno != EEXIST) {
		return -errno;
	}
	if (s->nlocks == s->cap_locks) {
		size_t cap = s->cap_locks * 2 + 8;
		struct task_lock *l = realloc(s->locks, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		s->locks = l;
		s->cap_locks = cap;
	}
	snprintf(path, len, "%s/%lld.lock", s->lockdir, (long long)tid);
	/* Close-on-exec: the task's processes must not keep a dead collector "alive". */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, s->mode);
	if (fd < 0)
		return -errno;
	if ((group && fchown(fd, (uid_t)-1, s->gid)) || flock(fd, LOCK_EX | LOCK_NB)) {
		int err = -errno;

		close(fd);
		return err;
	}
	s->locks[s->nlocks++] = (struct task_lock){ tid, fd };
	return 0;
}

/* The task's lock, once it is stored whole: removed and let go. */
static void drop_lock(struct store *s, __s64 tid)
{
	char lock[PATH_MAX];

	for (size_t i = 0; i < s->nlocks; i++) {
		if (s->locks[i].tid != tid)
			continue;
		snprintf(lock, sizeof(lock), "%s/%lld.lock", s->lockdir, (long long)tid);
		unlink(lock);
		close(s->locks[i].fd);
		s->locks[i] = s->locks[--s->nlocks];
		return;
	}
}

/* The task's row, running, with its host's and its own labels; *tid set. No transaction. */
static int insert_task(struct store *s, const struct task_record *t,
		       const struct label *host_labels, int nhost, __s64 *tid)
{
	char *cmd = command_json(t);
	int err;

	if (!cmd)
		return -ENOMEM;
	err = run_stmt(s,
		       "INSERT INTO tasks (id, host, command, status, start_ns) "
		       "VALUES (?, ?, ?, 'running', ?)",
		       "ttti", t->id, t->host, cmd, (long long)t->start_real_ns);
	free(cmd);
	if (err)
		return err;
	*tid = sqlite3_last_insert_rowid(s->db);
	for (int i = 0; i < nhost && !err; i++)
		err = run_stmt(s, "INSERT OR REPLACE INTO labels VALUES (?, ?, ?)", "itt",
			       (long long)*tid, host_labels[i].key, host_labels[i].val);
	/* No task label names a host label: run refuses those (hostinfo_is_label). */
	for (int i = 0; i < t->nlabels && !err; i++)
		err = run_stmt(s, "INSERT OR REPLACE INTO labels VALUES (?, ?, ?)", "itt",
			       (long long)*tid, t->labels[i].key, t->labels[i].val);
	return err;
}

int store__task_begin(struct store *s, const struct task_record *t, const struct label *host_labels,
		      int nhost, __s64 *tid)
{
	char lock[PATH_MAX];
	int err;

	*tid = -1;
	err = exec(s, "BEGIN IMMEDIATE") ? db_error(s, "starting a transaction") : 0;
	if (!err)
		err = insert_task(s, t, host_labels, nhost, tid);
	if (err)
		goto fail;
	if (take_lock(s, *tid, lock, sizeof(lock))) {
		tp_err("cannot take the task's lock %s: %s", lock, strerror(errno));
		err = -EIO;
	}
	if (!err)
		err = run_stmt(s, "UPDATE tasks SET lock = ? WHERE tid = ?", "ti", lock,
			       (long long)*tid);
	if (!err && exec(s, "COMMIT"))
		err = db_error(s, "committing the task's start");
	if (!err)
		return 0;
fail:
	exec(s, "ROLLBACK");
	/* Nothing of it stays: no row, and no lock (its tid may be given out again). */
	drop_lock(s, *tid);
	return err;
}

int store__task_resume(struct store *s, __s64 tid)
{
	char lock[PATH_MAX];
	sqlite3_stmt *st;
	int err, step;

	if (s->ops->read_only)
		return -EOPNOTSUPP;
	if (query_prepare(s, "SELECT status FROM tasks WHERE tid = ?", &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	step = query_step(s, st);
	err = step != SQLITE_ROW ? -ENOENT
	      : strcmp((const char *)sqlite3_column_text(st, 0), "running") &&
			      strcmp((const char *)sqlite3_column_text(st, 0), "lost")
		      ? -EALREADY
		      : 0;
	sqlite3_finalize(st);
	if (err)
		return err;
	err = take_lock(s, tid, lock, sizeof(lock));
	if (!err)
		err = run_stmt(s, "UPDATE tasks SET status = 'running', lock = ? WHERE tid = ?",
			       "ti", lock, (long long)tid);
	if (err)
		drop_lock(s, tid);
	return err;
}

int store__series_next(struct store *s, __s64 tid)
{
	sqlite3_stmt *st;
	int next = 0;

	if (s->ops->read_only ||
	    query_prepare(s, "SELECT COALESCE(MAX(seq) + 1, 0) FROM series WHERE task = ?", &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	if (query_step(s, st) == SQLITE_ROW)
		next = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return next;
}

void store__task_release(struct store *s, __s64 tid)
{
	if (s && !s->ops->read_only)
		drop_lock(s, tid);
}

int store__append_series(struct store *s, __s64 tid, int seq, const void *blob, size_t len,
			 size_t points)
{
	return run_stmt(s, "INSERT OR REPLACE INTO series VALUES (?, ?, ?, ?)", "iiib",
			(long long)tid, (long long)seq, (long long)points, blob, (int)len);
}

int store__replace_series(struct store *s, __s64 tid, const void *blob, size_t len, size_t points)
{
	int err = exec(s, "BEGIN IMMEDIATE") ? db_error(s, "starting a transaction") : 0;

	if (!err)
		err = run_stmt(s, "DELETE FROM series WHERE task = ?", "i", (long long)tid);
	if (!err)
		err = store__append_series(s, tid, 0, blob, len, points);
	if (err) {
		exec(s, "ROLLBACK");
		return err;
	}
	return exec(s, "COMMIT") ? db_error(s, "committing the series") : 0;
}

static int net_row(struct store *s, __s64 tid, const char *host, const char *addr, int port,
		   const char *name, __u64 v)
{
	if (!v)
		return 0;
	return run_stmt(s, "INSERT OR REPLACE INTO net VALUES (?, ?, ?, ?, ?, ?)", "ittitd",
			(long long)tid, host, addr, (long long)port, name, (double)v);
}

/* An endpoint's "10.0.0.1:443" or "[::1]:443" as address and port. */
static int split_address(const char *address, char *ip, size_t len)
{
	const char *colon = strrchr(address, ':');
	size_t n = colon ? (size_t)(colon - address) : strlen(address);

	if (address[0] == '[' && n >= 2 && address[n - 1] == ']') {
		address++;
		n -= 2;
	}
	snprintf(ip, len, "%.*s", (int)n, address);
	return colon ? atoi(colon + 1) : 0;
}

/* Every endpoint's and HTTP host's non-zero figures, queryable by host (count --host). */
static int write_net(struct store *s, __s64 tid, const struct net_figures *nf)
{
	static const char *const cls[6] = { "other", "1xx", "2xx", "3xx", "4xx", "5xx" };
	char name[96], ip[64];
	int err = 0;

	for (size_t i = 0; i < nf->neps && !err; i++) {
		const struct net_endpoint *e = &nf->eps[i];
		const struct tp_net_counters *c = &e->c;
		int port = split_address(e->address, ip, sizeof(ip));
		__u64 failed = 0;

		for (int r = 0; r < NET_COUNTERS && !err; r++) {
			snprintf(name, sizeof(name), "net.%s", net_counter_descs[r].name);
			err = net_row(s, tid, e->names, ip, port, name, net_counter(c, r));
		}
		for (int k = 0; k < TP_CONN_FAILURE_KINDS && !err; k++) {
			snprintf(name, sizeof(name), "net.tcp.connect_failures.%s",
				 connect_failure_names[k]);
			err = net_row(s, tid, e->names, ip, port, name, c->failures[k]);
			failed += c->failures[k];
		}
		if (!err)
			err = net_row(s, tid, e->names, ip, port, "net.tcp.connect_failures",
				      failed);
	}
	for (size_t i = 0; i < nf->nhosts && !err; i++) {
		const struct http_host *h = &nf->hosts[i];
		__u64 failed = 0;

		err = net_row(s, tid, h->host, "", 0, "http.requests", h->requests);
		for (int c = 0; c < 6 && !err; c++) {
			snprintf(name, sizeof(name), "http.requests.%s", cls[c]);
			err = net_row(s, tid, h->host, "", 0, name, h->classes[c]);
		}
		for (int k = 0; k < HTTP_FAIL_KINDS && !err; k++) {
			snprintf(name, sizeof(name), "http.failures.%s", http_failure_names[k]);
			err = net_row(s, tid, h->host, "", 0, name, h->failures[k]);
			failed += h->failures[k];
		}
		if (!err)
			err = net_row(s, tid, h->host, "", 0, "http.requests.unanswered",
				      h->unanswered);
		if (!err)
			err = net_row(s, tid, h->host, "", 0, "http.failures", failed);
	}
	return err;
}

static int write_hist(struct store *s, __s64 tid, const struct hist_desc *d,
		      const struct tp_hist *h)
{
	return run_stmt(s, "INSERT OR REPLACE INTO histograms VALUES (?, ?, ?, ?, ?, ?)", "ittiib",
			(long long)tid, d->name, d->unit, (long long)h->count, (long long)h->sum,
			h->slots, (int)sizeof(h->slots));
}

/* Every number under "metrics" in the JSON record becomes a metrics row. */
static int write_metrics(struct store *s, __s64 tid, const char *record)
{
	struct json *j = json_parse(record, strlen(record), NULL, 0);
	const struct json *m = json_get(j, "metrics");
	int err = 0;

	if (!m) {
		json_free(j);
		return -EINVAL;
	}
	for (const struct json *v = m->child; v && !err; v = v->next)
		if (v->type == JSON_NUM)
			err = run_stmt(s, "INSERT OR REPLACE INTO metrics VALUES (?, ?, ?)", "itd",
				       (long long)tid, v->key, v->num);
	json_free(j);
	return err;
}

/* The ended task's record, figures, histograms and endpoints into row tid. No transaction. */
static int write_end(struct store *s, __s64 tid, const struct task_record *t)
{
	char *record = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&record, &len);
	struct jw w;
	int err;

	if (!f)
		return -ENOMEM;
	jw_init(&w, f, false);
	task_record__write_json(&w, t);
	if (fclose(f)) {
		free(record);
		return -ENOMEM;
	}
	err = run_stmt(s,
		       "UPDATE tasks SET status = ?, exit_status = ?, wall_ns = ?, "
		       "record = ?, ship = CASE WHEN ? THEN 1 END WHERE tid = ?",
		       "tiitii", task_status_names[t->end], (long long)task_record__exit_status(t),
		       (long long)t->wall_ns, record, (long long)s->outbox, (long long)tid);
	if (!err)
		err = write_metrics(s, tid, record);
	for (size_t i = 0; i < hist_descs_n && !err; i++)
		if (task_record__collected(t, hist_descs[i].name))
			err = write_hist(s, tid, &hist_descs[i],
					 hist_descs[i].at((struct task_record *)t));
	if (!err)
		err = write_net(s, tid, &t->net);
	free(record);
	return err;
}

int store__task_end(struct store *s, __s64 tid, const struct task_record *t)
{
	int err;

	err = exec(s, "BEGIN IMMEDIATE") ? db_error(s, "starting a transaction") : 0;
	if (!err)
		err = write_end(s, tid, t);
	if (err) {
		exec(s, "ROLLBACK");
		return err;
	}
	if (exec(s, "COMMIT"))
		return db_error(s, "committing the task's figures");
	drop_lock(s, tid);
	return 0;
}

int store__restore(struct store *s, const struct task_record *t, const struct label *host_labels,
		   int nhost, const void *blob, size_t len, size_t points)
{
	sqlite3_stmt *st = NULL;
	__s64 tid = -1;
	int err, step;

	if (s->ops->read_only)
		return -EOPNOTSUPP;
	err = exec(s, "BEGIN IMMEDIATE") ? db_error(s, "starting a transaction") : 0;
	if (err)
		return err;
	/* Its start's row, where one was written (then marked lost): completed, not doubled. */
	if (sqlite3_prepare_v2(s->db,
			       "SELECT tid, status FROM tasks WHERE id = ? AND host = ? AND "
			       "start_ns = ?",
			       -1, &st, NULL) != SQLITE_OK) {
		err = db_error(s, "finding a spooled task");
		goto fail;
	}
	sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, t->host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)t->start_real_ns);
	step = query_step(s, st);
	if (step == SQLITE_ROW) {
		const char *status = (const char *)sqlite3_column_text(st, 1);

		tid = sqlite3_column_int64(st, 0);
		if (status && strcmp(status, "running") && strcmp(status, "lost")) {
			sqlite3_finalize(st);
			exec(s, "ROLLBACK");
			return 0; /* stored before: the file only was left */
		}
	}
	sqlite3_finalize(st);
	if (step < 0) {
		err = step;
		goto fail;
	}
	if (tid < 0)
		err = insert_task(s, t, host_labels, nhost, &tid);
	if (!err)
		err = run_stmt(s, "DELETE FROM series WHERE task = ?", "i", (long long)tid);
	if (!err && points)
		err = store__append_series(s, tid, 0, blob, len, points);
	if (!err)
		err = write_end(s, tid, t);
	if (err)
		goto fail;
	if (exec(s, "COMMIT")) {
		err = db_error(s, "committing a spooled task");
		goto fail;
	}
	drop_lock(s, tid); /* this process's, when it spooled the task itself */
	return 0;
fail:
	exec(s, "ROLLBACK");
	return err;
}

int store__task_abort(struct store *s, __s64 tid)
{
	drop_lock(s, tid);
	return run_stmt(s, "DELETE FROM tasks WHERE tid = ?", "i", (long long)tid);
}

int store__mark_lost(struct store *s)
{
	sqlite3_stmt *st;
	__s64 dead[256];
	int n = 0, err = 0;

	if (sqlite3_prepare_v2(s->db, "SELECT tid, lock FROM tasks WHERE status = 'running'", -1,
			       &st, NULL) != SQLITE_OK)
		return db_error(s, "finding running tasks");
	while (n < (int)ARRAY_SIZE(dead) && (err = query_step(s, st)) == SQLITE_ROW) {
		const char *lock = (const char *)sqlite3_column_text(st, 1);

		if (!strcmp(store__live_status("running", lock), "lost"))
			dead[n++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	if (err < 0)
		return err;
	err = 0;
	for (int i = 0; i < n && !err; i++)
		err = run_stmt(s,
			       "UPDATE tasks SET status = 'lost', ship = CASE WHEN ? THEN 1 END "
			       "WHERE tid = ?",
			       "ii", (long long)s->outbox, (long long)dead[i]);
	return err ? err : n;
}

static __s64 used_bytes(struct store *s)
{
	sqlite3_stmt *st;
	__s64 v = 0;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT (page_count - freelist_count) * page_size FROM "
			       "pragma_page_count, pragma_freelist_count, pragma_page_size",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

int store__retain(struct store *s, int days, int max_mb)
{
	__s64 cutoff = (__s64)tp_realtime_ns() - (__s64)days * 86400LL * 1000000000LL;
	int err;

	/* With a sink, a task waiting for the shipper is never deleted. */
	err = run_stmt(s,
		       "DELETE FROM tasks WHERE start_ns < ? AND status != 'running' AND "
		       "(NOT ? OR ship IS NOT 1)",
		       "ii", (long long)cutoff, (long long)s->outbox);
	/* Oldest first, a hundred at a time, until the data fits or nothing more may go. */
	for (int round = 0; !err && round < 1000 && used_bytes(s) > (__s64)max_mb << 20; round++) {
		err = run_stmt(s,
			       "DELETE FROM tasks WHERE tid IN (SELECT tid FROM tasks WHERE "
			       "status != 'running' AND (NOT ? OR ship IS NOT 1) "
			       "ORDER BY start_ns LIMIT 100)",
			       "i", (long long)s->outbox);
		if (!err && !sqlite3_changes(s->db))
			break;
	}
	return err;
}

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

	while ((step = query_step(s, st)) == SQLITE_ROW)
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

static const char *col_text(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);

	return t ? t : "";
}

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
	if (query_prepare(s, sql, &st))
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
	if (query_prepare(
		    s,
		    "SELECT tid, status, lock, record, wall_ns, start_ns, host,"
		    " (SELECT COUNT(DISTINCT host) FROM tasks WHERE id = ?1) FROM tasks"
		    " WHERE id = ?1 AND host GLOB ?2 ORDER BY start_ns DESC, tid DESC LIMIT 1",
		    &st))
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, host ? host : "*", -1, SQLITE_STATIC);
	switch (query_step(s, st)) {
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
		snprintf(t->host, sizeof(t->host), "%s", col_text(st, 6));
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
	if (query_prepare(s,
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
	if (query_prepare(s, "SELECT data FROM series WHERE task = ? ORDER BY seq", &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	return each_row(s, st, series_row, &sc);
}

static int sqlite_has_metric(void *be, const char *metric)
{
	struct store *s = be;
	sqlite3_stmt *st;
	int rc;
	if (query_prepare(s, "SELECT 1 FROM metrics WHERE name = ? LIMIT 1", &st))
		return -EIO;
	sqlite3_bind_text(st, 1, metric, -1, SQLITE_STATIC);
	rc = query_step(s, st);
	sqlite3_finalize(st);
	return rc < 0 ? rc : rc == SQLITE_ROW;
}

bool store_remote_metric(const char *m)
{
	return !strncmp(m, "http.", 5) || !strncmp(m, "net.tcp.", 8) ||
	       !strcmp(m, "net.tx_bytes") || !strcmp(m, "net.rx_bytes");
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
	if (query_prepare(s, sql, &st))
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

	if (query_prepare(s,
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
	if (query_prepare(s, "SELECT key, value FROM labels WHERE task = ? ORDER BY key", &st))
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
	if (query_prepare(s,
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

int store__outbox(struct store *s, __s64 after, __s64 *tids, int n)
{
	sqlite3_stmt *st;
	int got = 0, step;

	if (query_prepare(s,
			  "SELECT tid FROM tasks WHERE ship = 1 AND tid > ? ORDER BY tid LIMIT ?",
			  &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, after);
	sqlite3_bind_int(st, 2, n);
	while (got < n && (step = query_step(s, st)) == SQLITE_ROW)
		tids[got++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return step < 0 ? step : got;
}

int store__outbox_backfill(struct store *s, bool refused)
{
	int err = run_stmt(
		s,
		refused ? "UPDATE tasks SET ship = 1 WHERE ship = 2"
			: "UPDATE tasks SET ship = 1 WHERE ship IS NULL AND status != 'running'",
		"");

	return err ? err : sqlite3_changes(s->db);
}

int store__outbox_done(struct store *s, __s64 tid, bool refused)
{
	return run_stmt(s, "UPDATE tasks SET ship = ? WHERE tid = ? AND ship = 1", "ii",
			(long long)(refused ? 2 : 0), (long long)tid);
}

/* Writes the rows of sql (bound to tid) as JSON through row, into an open object or array. */
static int doc_rows(struct store *s, __s64 tid, const char *sql, struct jw *w,
		    void (*row)(struct jw *w, sqlite3_stmt *st))
{
	sqlite3_stmt *st;
	int step;

	if (query_prepare(s, sql, &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	while ((step = query_step(s, st)) == SQLITE_ROW)
		row(w, st);
	sqlite3_finalize(st);
	return step < 0 ? step : 0;
}

static void doc_label(struct jw *w, sqlite3_stmt *st)
{
	jw_kstr(w, col_text(st, 0), col_text(st, 1));
}

static void doc_metric(struct jw *w, sqlite3_stmt *st)
{
	jw_kdouble(w, col_text(st, 0), sqlite3_column_double(st, 1));
}

static void doc_hist(struct jw *w, sqlite3_stmt *st)
{
	const __u64 *slots = sqlite3_column_blob(st, 4);
	bool whole = sqlite3_column_bytes(st, 4) == (int)(sizeof(__u64) * TP_HIST_SLOTS);

	jw_obj_begin(w);
	jw_kstr(w, "name", col_text(st, 0));
	jw_kstr(w, "unit", col_text(st, 1));
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
	jw_kstr(w, "host", col_text(st, 0));
	jw_kstr(w, "address", col_text(st, 1));
	jw_key(w, "port");
	jw_i64(w, sqlite3_column_int64(st, 2));
	jw_kstr(w, "name", col_text(st, 3));
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

	*doc = NULL;
	if (query_prepare(s,
			  "SELECT id, host, command, status, exit_status, start_ns, wall_ns, record"
			  " FROM tasks WHERE tid = ?",
			  &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	err = query_step(s, st);
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
	jw_kstr(&w, "id", col_text(st, 0));
	jw_kstr(&w, "host", col_text(st, 1));
	jw_kstr(&w, "command", col_text(st, 2));
	jw_kstr(&w, "status", col_text(st, 3));
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
		jw_str(&w, col_text(st, 7));
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

int store__sink_state(struct store *s, struct store_sink_state *ss)
{
	sqlite3_stmt *st;
	int step;

	memset(ss, 0, sizeof(*ss));
	if (query_prepare(
		    s,
		    "SELECT sink, error, error_ns, shipped_ns, next_try_ns, failures, shipped,"
		    " (SELECT COUNT(*) FROM tasks WHERE ship = 1),"
		    " (SELECT COUNT(*) FROM tasks WHERE ship = 2) FROM sink_state",
		    &st))
		return -EIO;
	step = query_step(s, st);
	if (step == SQLITE_ROW) {
		snprintf(ss->sink, sizeof(ss->sink), "%s", col_text(st, 0));
		snprintf(ss->error, sizeof(ss->error), "%s", col_text(st, 1));
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

int store__sink_name(struct store *s, const char *sink)
{
	return run_stmt(
		s,
		"UPDATE sink_state SET sink = ?1, error = NULL, next_try_ns = 0, failures = 0"
		" WHERE sink IS NOT ?1",
		"t", sink);
}

int store__sink_note(struct store *s, const char *sink, const char *error, __u64 next_try_ns,
		     long shipped)
{
	__u64 now = tp_realtime_ns();

	/* An error with no retry time (a refused task) is said, without a backoff. */
	return run_stmt(
		s,
		"UPDATE sink_state SET sink = ?1, error = ?2,"
		" error_ns = CASE WHEN ?2 IS NULL THEN error_ns ELSE ?3 END,"
		" shipped_ns = CASE WHEN ?5 > 0 THEN ?3 ELSE shipped_ns END,"
		" next_try_ns = ?4, failures = CASE WHEN ?4 > 0 THEN failures + 1 ELSE 0 END,"
		" shipped = shipped + ?5",
		"ttiii", sink, error, (long long)now, (long long)next_try_ns, (long long)shipped);
}

static const struct store_ops sqlite_ops = {
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
};

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
