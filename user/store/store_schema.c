// SPDX-License-Identifier: GPL-2.0
/* The SQLite store's schema: the migrations that make it and move it forward. */
#include <errno.h>
#include <stdio.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_int.h"

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
	/* 5: the OTLP outbox (otlp: as ship, for otlp_endpoint) and its shipper's state */
	"ALTER TABLE tasks ADD COLUMN otlp INTEGER;"
	"CREATE INDEX tasks_otlp ON tasks(otlp, tid) WHERE otlp IS NOT NULL;"
	"CREATE TABLE otlp_state (one INTEGER PRIMARY KEY CHECK (one = 1), sink TEXT,"
	" error TEXT, error_ns INTEGER NOT NULL DEFAULT 0, shipped_ns INTEGER NOT NULL DEFAULT 0,"
	" next_try_ns INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,"
	" shipped INTEGER NOT NULL DEFAULT 0);"
	"INSERT INTO otlp_state (one) VALUES (1);",
};

int sqlite__schema_version(struct store *s, int *v)
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
int sqlite__migrate(struct store *s, int target)
{
	char sql[64];
	int v;

	for (;;) {
		if (sqlite__exec(s, "BEGIN IMMEDIATE") || sqlite__schema_version(s, &v)) {
			sqlite__exec(s, "ROLLBACK");
			return sqlite__error(s, "schema migration");
		}
		if (v >= target)
			return sqlite__exec(s, "COMMIT") ? sqlite__error(s, "schema migration") : 0;
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
		if (sqlite__exec(s, migrations[v]) || sqlite__exec(s, sql) ||
		    sqlite__exec(s, "COMMIT")) {
			sqlite__error(s, "schema migration");
			sqlite__exec(s, "ROLLBACK");
			return -EIO;
		}
	}
}
