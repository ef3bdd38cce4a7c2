// SPDX-License-Identifier: GPL-2.0
/* The fleet's PostgreSQL: the connection, the schema and its migrations, shipping. */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libpq-fe.h>

#include "base/conninfo.h"
#include "base/util.h"
#include "store/sink.h"

/* pg_advisory_xact_lock's key for migrations: "taskprob" in ASCII. */
#define SINK_MIGRATION_LOCK "8386112019568947810"
#define SINK_PRUNE_LOCK "8386112019568947811"

/*
 * Each entry moves the fleet schema one version forward; never edit a shipped one.
 * Labels are a jsonb column (GIN: --label filters; ->> for --by), the figures that
 * count sums carry their task's start, so that a metric over a week is one range
 * of its (name, start) index.
 */
static const char *const migrations[SINK_SCHEMA] = {
	/* 1: tasks with their labels, figures, histograms, remote hosts, series */
	"CREATE TABLE taskprobe.tasks (tid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
	" host text NOT NULL, id text NOT NULL, start_ns bigint NOT NULL,"
	" command text NOT NULL, status text NOT NULL, exit_status bigint, wall_ns bigint,"
	" record text, labels jsonb NOT NULL, shipped_at timestamptz NOT NULL DEFAULT now(),"
	" UNIQUE (host, id, start_ns));"
	"CREATE INDEX tasks_start ON taskprobe.tasks (start_ns);"
	"CREATE INDEX tasks_id ON taskprobe.tasks (id, start_ns DESC);"
	"CREATE INDEX tasks_labels ON taskprobe.tasks USING gin (labels jsonb_path_ops);"
	"CREATE TABLE taskprobe.metrics (task bigint NOT NULL"
	" REFERENCES taskprobe.tasks ON DELETE CASCADE, name text NOT NULL,"
	" start_ns bigint NOT NULL, value double precision NOT NULL, PRIMARY KEY (task, name));"
	"CREATE INDEX metrics_name ON taskprobe.metrics (name, start_ns) INCLUDE (task, value);"
	"CREATE TABLE taskprobe.histograms (task bigint NOT NULL"
	" REFERENCES taskprobe.tasks ON DELETE CASCADE, name text NOT NULL, unit text NOT NULL,"
	" count bigint NOT NULL, sum bigint NOT NULL, slots bigint[] NOT NULL,"
	" PRIMARY KEY (task, name));"
	"CREATE TABLE taskprobe.net (task bigint NOT NULL"
	" REFERENCES taskprobe.tasks ON DELETE CASCADE, host text NOT NULL,"
	" address text NOT NULL, port integer NOT NULL, name text NOT NULL,"
	" start_ns bigint NOT NULL, value double precision NOT NULL,"
	" PRIMARY KEY (task, host, address, port, name));"
	"CREATE INDEX net_name ON taskprobe.net (name, start_ns) INCLUDE (task, value);"
	"CREATE TABLE taskprobe.series (task bigint NOT NULL"
	" REFERENCES taskprobe.tasks ON DELETE CASCADE, seq integer NOT NULL,"
	" points integer NOT NULL, data bytea NOT NULL, PRIMARY KEY (task, seq));",
};

static void quiet_notice(void *arg, const char *message)
{
}

static void set_err(struct sink *k, const char *what, const char *msg)
{
	char line[400];

	pg_message_line(line, sizeof(line), msg, false);
	snprintf(k->err, sizeof(k->err), "%s: %s", what, line[0] ? line : "unknown error");
}

/* Until a result can be read without blocking: 0, or -1 at the deadline. */
static int wait_ready(struct sink *k, __u64 deadline)
{
	while (PQisBusy(k->conn)) {
		struct pollfd p = { .fd = PQsocket(k->conn), .events = POLLIN };
		__u64 now = tp_now_ns();

		if (now >= deadline)
			return -1;
		if (poll(&p, 1, (int)((deadline - now) / 1000000) + 1) < 0 && errno != EINTR)
			return 0;
		/* A broken connection: PQgetResult now says why. */
		if (!PQconsumeInput(k->conn))
			return 0;
	}
	return 0;
}

/* The results of what was just sent (sent: whether it was), the last or the first error. */
static PGresult *collect(struct sink *k, int sent)
{
	__u64 deadline = tp_now_ns() + (__u64)k->timeout_s * 1000000000ULL;
	PGresult *r, *keep = NULL;

	if (!sent)
		return PQmakeEmptyPGresult(k->conn, PGRES_FATAL_ERROR);
	for (;;) {
		if (wait_ready(k, deadline)) {
			/* A server that answers nothing: the connection goes, the caller retries. */
			PQclear(keep);
			PQfinish(k->conn);
			k->conn = NULL;
			k->conn_lost = true;
			return NULL;
		}
		r = PQgetResult(k->conn);
		if (!r)
			break;
		/* The last result, unless an earlier one was an error. */
		if (keep && PQresultStatus(keep) == PGRES_FATAL_ERROR) {
			PQclear(r);
		} else {
			PQclear(keep);
			keep = r;
		}
	}
	return keep ? keep : PQmakeEmptyPGresult(k->conn, PGRES_FATAL_ERROR);
}

PGresult *sink__run(struct sink *k, const char *sql, int n, const char *const *params, int binary)
{
	if (!k->conn)
		return NULL;
	/* Several statements in one string go by the simple protocol. */
	return collect(k, n || binary ? PQsendQueryParams(k->conn, sql, n, NULL, params, NULL, NULL,
							  binary)
				      : PQsendQuery(k->conn, sql));
}

/* A failed or unanswered statement said in k->err as "what: why". */
static void result_err(struct sink *k, PGresult *r, const char *what)
{
	if (r)
		set_err(k, what, PQresultErrorMessage(r));
	else
		snprintf(k->err, sizeof(k->err), "%s: no answer within %d s", what, k->timeout_s);
}

/* Runs a statement of no parameters; 0, or -1 with k->err set. */
static int exec(struct sink *k, const char *sql, const char *what)
{
	PGresult *r = sink__run(k, sql, 0, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	int err = r && (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) ? 0 : -1;

	if (err) {
		result_err(k, r, what);
		k->conn_lost = true;
	}
	PQclear(r);
	return err;
}

/* The one value of a one-row query, or -1 with k->err set. */
static long long query_num(struct sink *k, const char *sql, const char *what)
{
	PGresult *r = sink__run(k, sql, 0, NULL, 0);
	long long v = -1;

	if (r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		v = PQgetisnull(r, 0, 0) ? 0 : atoll(PQgetvalue(r, 0, 0));
	else
		result_err(k, r, what);
	PQclear(r);
	return v;
}

static long long schema_version(struct sink *k)
{
	long long has =
		query_num(k, "SELECT (to_regclass('taskprobe.schema_version') IS NOT NULL)::int",
			  "reading the schema version");

	if (has <= 0)
		return has;
	return query_num(k, "SELECT max(version) FROM taskprobe.schema_version",
			 "reading the schema version");
}

/*
 * Migrates in one transaction under an advisory lock: a host migrating now is waited
 * for, and the version is read again once the lock is ours.
 */
static int migrate(struct sink *k)
{
	long long v;
	char sql[96];

	if (exec(k, "BEGIN", "starting the migration") ||
	    exec(k, "SELECT pg_advisory_xact_lock(" SINK_MIGRATION_LOCK ")",
		 "waiting for another host's migration") ||
	    exec(k,
		 "CREATE SCHEMA IF NOT EXISTS taskprobe;"
		 "CREATE TABLE IF NOT EXISTS taskprobe.schema_version (version integer NOT NULL);"
		 "INSERT INTO taskprobe.schema_version SELECT 0 WHERE NOT EXISTS"
		 " (SELECT 1 FROM taskprobe.schema_version)",
		 "creating the schema"))
		goto fail;
	v = schema_version(k);
	if (v < 0)
		goto fail;
	if (v > SINK_SCHEMA) {
		snprintf(k->err, sizeof(k->err),
			 "the fleet schema is version %lld, newer than this taskprobe's %d; "
			 "upgrade taskprobe",
			 v, SINK_SCHEMA);
		goto fail;
	}
	for (; v < SINK_SCHEMA; v++) {
		snprintf(sql, sizeof(sql), "UPDATE taskprobe.schema_version SET version = %lld",
			 v + 1);
		if (exec(k, migrations[v], "migrating the schema") ||
		    exec(k, sql, "migrating the schema"))
			goto fail;
	}
	return exec(k, "COMMIT", "committing the migration");
fail:
	PQclear(sink__run(k, "ROLLBACK", 0, NULL, 0));
	return -1;
}

int sink__open(struct sink *k, const char *conninfo, const char *passfile, bool migrate_it,
	       int timeout_s)
{
	/* Ours first: a setting in the string itself wins over them; the passfile last. */
	const char *kw[] = { "connect_timeout", "application_name", "dbname", "passfile", NULL };
	const char *val[] = { "5", "taskprobe", conninfo, passfile, NULL };
	char sql[64];
	long long v;

	memset(k, 0, sizeof(*k));
	k->schema = -1;
	k->timeout_s = timeout_s > 0 ? timeout_s : 60;
	if (!passfile || !*passfile)
		kw[3] = NULL;
	if (conninfo_check(conninfo, k->name, sizeof(k->name), k->err, sizeof(k->err)))
		return -1;
	/* libpq ignores a passfile others may read, with a warning of its own: said here. */
	if (passfile && *passfile) {
		struct stat st;

		if (stat(passfile, &st)) {
			snprintf(k->err, sizeof(k->err), "sink_passfile %s: %s", passfile,
				 strerror(errno));
			return -1;
		}
		if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
			snprintf(k->err, sizeof(k->err),
				 "sink_passfile %s: %s; libpq reads only a file of mode 0600",
				 passfile,
				 S_ISREG(st.st_mode) ? "others may read it" : "not a file");
			return -1;
		}
	}
	k->conn = PQconnectdbParams(kw, val, 1);
	if (!k->conn || PQstatus(k->conn) != CONNECTION_OK) {
		set_err(k, "cannot connect", k->conn ? PQerrorMessage(k->conn) : "out of memory");
		k->conn_lost = true;
		return -1;
	}
	PQsetNoticeProcessor(k->conn, quiet_notice, NULL);
	/* A server that takes a lock forever must not hold a shipper forever. */
	snprintf(sql, sizeof(sql), "SET statement_timeout = '%ds'", k->timeout_s);
	if (exec(k, sql, "setting up"))
		return -1;
	if (migrate_it)
		return migrate(k);
	v = schema_version(k);
	if (v < 0)
		return -1;
	k->schema = (long)v;
	if (v == 0)
		snprintf(k->err, sizeof(k->err),
			 "no taskprobe tables there yet: a host with 'sink =' in its config makes "
			 "them when it ships");
	else if (v != SINK_SCHEMA)
		snprintf(k->err, sizeof(k->err),
			 "the fleet schema is version %lld and this taskprobe reads %d; %s", v,
			 SINK_SCHEMA,
			 v > SINK_SCHEMA ? "upgrade taskprobe" : "a newer shipper upgrades it");
	return v == SINK_SCHEMA ? 0 : -1;
}

void sink__close(struct sink *k)
{
	if (k->conn)
		PQfinish(k->conn);
	k->conn = NULL;
}

/*
 * One statement, so one round trip and its own transaction: the task's row, then its
 * children, each joined to the tid that the row's RETURNING gives. A resend inserts
 * no row, so its children insert nothing either; the answer is how many rows were new.
 */
static const char ship_sql[] =
	"WITH d AS (SELECT $1::jsonb AS j),"
	" t AS (INSERT INTO taskprobe.tasks (host, id, start_ns, command, status, exit_status,"
	"  wall_ns, record, labels)"
	"  SELECT j->>'host', j->>'id', (j->>'start_ns')::bigint, j->>'command', j->>'status',"
	"  (j->>'exit_status')::bigint, (j->>'wall_ns')::bigint, j->>'record', j->'labels'"
	"  FROM d ON CONFLICT (host, id, start_ns) DO NOTHING RETURNING tid),"
	" m AS (INSERT INTO taskprobe.metrics (task, name, start_ns, value)"
	"  SELECT t.tid, e.key, (d.j->>'start_ns')::bigint, e.value::double precision"
	"  FROM t, d, jsonb_each_text(d.j->'metrics') e),"
	" h AS (INSERT INTO taskprobe.histograms (task, name, unit, count, sum, slots)"
	"  SELECT t.tid, x.name, x.unit, x.count, x.sum, x.slots FROM t, d,"
	"  jsonb_to_recordset(d.j->'hists') AS x(name text, unit text, count bigint,"
	"  sum bigint, slots bigint[])),"
	" n AS (INSERT INTO taskprobe.net (task, host, address, port, name, start_ns, value)"
	"  SELECT t.tid, x.host, x.address, x.port, x.name,"
	"  (d.j->>'start_ns')::bigint, x.value FROM t, d,"
	"  jsonb_to_recordset(d.j->'net') AS x(host text, address text, port integer,"
	"  name text, value double precision)),"
	" s AS (INSERT INTO taskprobe.series (task, seq, points, data)"
	"  SELECT t.tid, x.seq, x.points, decode(x.data, 'base64') FROM t, d,"
	"  jsonb_to_recordset(d.j->'series') AS x(seq integer, points integer, data text))"
	" SELECT count(*) FROM t";

/* A failed statement: a task's own fault (its data) or the fleet's (anything else). */
static int ship_failed(struct sink *k, PGresult *r, const char *what)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;

	result_err(k, r, what);
	/* Class 22 (data exception) and 23 (integrity): this task, not the connection. */
	k->conn_lost = PQstatus(k->conn) != CONNECTION_OK || !state ||
		       (strncmp(state, "22", 2) && strncmp(state, "23", 2));
	PQclear(r);
	return -1;
}

int sink__ship(struct sink *k, const char *doc)
{
	PGresult *r;
	int fresh;

	k->conn_lost = false;
	if (!k->conn)
		return ship_failed(k, NULL, "shipping a task");
	/* Parsed and planned once a connection: a task is then one Bind and Execute. */
	if (!k->ship_prepared) {
		r = collect(k, PQsendPrepare(k->conn, "taskprobe_ship", ship_sql, 1, NULL));
		if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
			return ship_failed(k, r, "preparing the shipment");
		PQclear(r);
		k->ship_prepared = true;
	}
	r = collect(k, PQsendQueryPrepared(k->conn, "taskprobe_ship", 1, &doc, NULL, NULL, 0));
	if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		return ship_failed(k, r, "shipping a task");
	/* 0: shipped before (a resend), and the fleet's copy is whole. */
	fresh = strcmp(PQgetvalue(r, 0, 0), "0") != 0;
	PQclear(r);
	return fresh;
}

/* The lock's CTE is materialized (read twice): taken once, before the delete. */
static const char prune_sql[] =
	"WITH l AS (SELECT pg_try_advisory_xact_lock(" SINK_PRUNE_LOCK ") AS ok),"
	" d AS (DELETE FROM taskprobe.tasks WHERE tid IN (SELECT tid FROM taskprobe.tasks"
	"  WHERE (SELECT ok FROM l) AND start_ns < $1::bigint ORDER BY start_ns LIMIT $2::int)"
	"  RETURNING 1)"
	" SELECT (SELECT ok FROM l)::int, count(*) FROM d";

long sink__prune(struct sink *k, __s64 before_ns, int n)
{
	char before[24], lim[16];
	const char *params[] = { before, lim };
	PGresult *r;
	long gone;

	snprintf(before, sizeof(before), "%lld", (long long)before_ns);
	snprintf(lim, sizeof(lim), "%d", n);
	k->conn_lost = false;
	r = sink__run(k, prune_sql, 2, params, 0);
	if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		result_err(k, r, "pruning the fleet");
		k->conn_lost = true;
		PQclear(r);
		return -1;
	}
	gone = strcmp(PQgetvalue(r, 0, 0), "1") ? -EBUSY : atol(PQgetvalue(r, 0, 1));
	PQclear(r);
	return gone;
}
