// SPDX-License-Identifier: GPL-2.0
/*
 * A task's writes to the SQLite store: its row and labels at the start, its series,
 * its figures at the end or from the spool, and the liveness lock held meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/json.h"
#include "base/util.h"
#include "model/metric_descs.h"
#include "model/net_figures.h"
#include "model/task.h"
#include "model/task_json.h"
#include "store/store.h"
#include "store/store_int.h"

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

/* The task's row, running, with its host's and its own labels; *tid set. No transaction. */
static int insert_task(struct store *s, const struct task_record *t,
		       const struct label *host_labels, int nhost, __s64 *tid)
{
	char *cmd = command_json(t);
	int err;

	if (!cmd)
		return -ENOMEM;
	err = sqlite__run(s,
			  "INSERT INTO tasks (id, host, command, status, start_ns) "
			  "VALUES (?, ?, ?, 'running', ?)",
			  "ttti", t->id, t->host, cmd, (long long)t->start_real_ns);
	free(cmd);
	if (err)
		return err;
	*tid = sqlite3_last_insert_rowid(s->db);
	for (int i = 0; i < nhost && !err; i++)
		err = sqlite__run(s, "INSERT OR REPLACE INTO labels VALUES (?, ?, ?)", "itt",
				  (long long)*tid, host_labels[i].key, host_labels[i].val);
	/* No task label names a host label: run refuses those (hostinfo_is_label). */
	for (int i = 0; i < t->nlabels && !err; i++)
		err = sqlite__run(s, "INSERT OR REPLACE INTO labels VALUES (?, ?, ?)", "itt",
				  (long long)*tid, t->labels[i].key, t->labels[i].val);
	return err;
}

int store__task_begin(struct store *s, const struct task_record *t, const struct label *host_labels,
		      int nhost, __s64 *tid)
{
	char lock[PATH_MAX];
	int err;

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	*tid = -1;
	err = sqlite__exec(s, "BEGIN IMMEDIATE") ? sqlite__error(s, "starting a transaction") : 0;
	if (!err)
		err = insert_task(s, t, host_labels, nhost, tid);
	if (err)
		goto fail;
	if (take_lock(s, *tid, lock, sizeof(lock))) {
		tp_err("cannot take the task's lock %s: %s", lock, strerror(errno));
		err = -EIO;
	}
	if (!err)
		err = sqlite__run(s, "UPDATE tasks SET lock = ? WHERE tid = ?", "ti", lock,
				  (long long)*tid);
	if (!err && sqlite__exec(s, "COMMIT"))
		err = sqlite__error(s, "committing the task's start");
	if (!err)
		return 0;
fail:
	sqlite__exec(s, "ROLLBACK");
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
	if (sqlite__prepare(s, "SELECT status FROM tasks WHERE tid = ?", &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	step = sqlite__step(s, st);
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
		err = sqlite__run(s, "UPDATE tasks SET status = 'running', lock = ? WHERE tid = ?",
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
	    sqlite__prepare(s, "SELECT COALESCE(MAX(seq) + 1, 0) FROM series WHERE task = ?", &st))
		return -EIO;
	sqlite3_bind_int64(st, 1, tid);
	if (sqlite__step(s, st) == SQLITE_ROW)
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
	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	return sqlite__run(s, "INSERT OR REPLACE INTO series VALUES (?, ?, ?, ?)", "iiib",
			   (long long)tid, (long long)seq, (long long)points, blob, (int)len);
}

int store__replace_series(struct store *s, __s64 tid, const void *blob, size_t len, size_t points)
{
	int err;

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	err = sqlite__exec(s, "BEGIN IMMEDIATE") ? sqlite__error(s, "starting a transaction") : 0;
	if (!err)
		err = sqlite__run(s, "DELETE FROM series WHERE task = ?", "i", (long long)tid);
	if (!err)
		err = store__append_series(s, tid, 0, blob, len, points);
	if (!err && sqlite__exec(s, "COMMIT"))
		err = sqlite__error(s, "committing the series");
	/*
	 * A COMMIT that failed (a full disk, a write error) may leave the transaction open,
	 * and every later BEGIN of this connection would fail: SQLite says to roll back.
	 */
	if (err)
		sqlite__exec(s, "ROLLBACK");
	return err;
}

static int net_row(struct store *s, __s64 tid, const char *host, const char *addr, int port,
		   const char *name, __u64 v)
{
	if (!v)
		return 0;
	return sqlite__run(s, "INSERT OR REPLACE INTO net VALUES (?, ?, ?, ?, ?, ?)", "ittitd",
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
	return sqlite__run(s, "INSERT OR REPLACE INTO histograms VALUES (?, ?, ?, ?, ?, ?)",
			   "ittiib", (long long)tid, d->name, d->unit, (long long)h->count,
			   (long long)h->sum, h->slots, (int)sizeof(h->slots));
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
			err = sqlite__run(s, "INSERT OR REPLACE INTO metrics VALUES (?, ?, ?)",
					  "itd", (long long)tid, v->key, v->num);
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
	err = sqlite__run(s,
			  "UPDATE tasks SET status = ?, exit_status = ?, wall_ns = ?, "
			  "record = ?, ship = CASE WHEN ? THEN 1 END, otlp = CASE WHEN ? THEN 1 END"
			  " WHERE tid = ?",
			  "tiitiii", task_status_names[t->end],
			  (long long)task_record__exit_status(t), (long long)t->wall_ns, record,
			  (long long)s->outbox[STORE_Q_FLEET], (long long)s->outbox[STORE_Q_OTLP],
			  (long long)tid);
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

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	err = sqlite__exec(s, "BEGIN IMMEDIATE") ? sqlite__error(s, "starting a transaction") : 0;
	if (!err)
		err = write_end(s, tid, t);
	if (!err && sqlite__exec(s, "COMMIT"))
		err = sqlite__error(s, "committing the task's figures");
	if (err) {
		/* Open still after a failed COMMIT, maybe (store__replace_series). */
		sqlite__exec(s, "ROLLBACK");
		return err;
	}
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
	err = sqlite__exec(s, "BEGIN IMMEDIATE") ? sqlite__error(s, "starting a transaction") : 0;
	if (err)
		return err;
	/* Its start's row, where one was written (then marked lost): completed, not doubled. */
	if (sqlite3_prepare_v2(s->db,
			       "SELECT tid, status FROM tasks WHERE id = ? AND host = ? AND "
			       "start_ns = ?",
			       -1, &st, NULL) != SQLITE_OK) {
		err = sqlite__error(s, "finding a spooled task");
		goto fail;
	}
	sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, t->host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)t->start_real_ns);
	step = sqlite__step(s, st);
	if (step == SQLITE_ROW) {
		const char *status = (const char *)sqlite3_column_text(st, 1);

		tid = sqlite3_column_int64(st, 0);
		if (status && strcmp(status, "running") && strcmp(status, "lost")) {
			sqlite3_finalize(st);
			sqlite__exec(s, "ROLLBACK");
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
		err = sqlite__run(s, "DELETE FROM series WHERE task = ?", "i", (long long)tid);
	if (!err && points)
		err = store__append_series(s, tid, 0, blob, len, points);
	if (!err)
		err = write_end(s, tid, t);
	if (err)
		goto fail;
	if (sqlite__exec(s, "COMMIT")) {
		err = sqlite__error(s, "committing a spooled task");
		goto fail;
	}
	drop_lock(s, tid); /* this process's, when it spooled the task itself */
	return 0;
fail:
	sqlite__exec(s, "ROLLBACK");
	return err;
}

int store__task_abort(struct store *s, __s64 tid)
{
	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	drop_lock(s, tid);
	return sqlite__run(s, "DELETE FROM tasks WHERE tid = ?", "i", (long long)tid);
}
