/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fleet store: one PostgreSQL that every host's shipper sends its ended tasks to
 * (schema "taskprobe", versioned, migrated under an advisory lock), and that the
 * queries read with --db postgresql://... A connection string never holds a password
 * (libpq reads it from a .pgpass file), and no message shows one.
 */
#ifndef TP_SINK_H
#define TP_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define SINK_SCHEMA 1

struct pg_conn; /* libpq's PGconn */

struct sink {
	struct pg_conn *conn;
	char name[256];	    /* postgresql://user@host:port/db: what messages call it */
	char err[512];	    /* the last error, one line, without the name */
	bool conn_lost;	    /* the last error was the connection's, not one task's */
	bool ship_prepared; /* this connection has the shipping statement */
	int timeout_s;	    /* what a statement may take, client and server side */
	long schema;	    /* the fleet's schema version once read (0: no tables yet), else -1 */
};

struct pg_result; /* libpq's PGresult */

/*
 * Connects (passfile: a .pgpass file, "" or NULL for libpq's own PGPASSFILE or
 * ~/.pgpass), then brings the schema to SINK_SCHEMA when migrate, else checks it;
 * every statement after has timeout_s (0: 60) to answer, or the connection goes.
 * 0, or -1 with k->err set; k->name is set either way.
 */
int sink__open(struct sink *k, const char *conninfo, const char *passfile, bool migrate,
	       int timeout_s);
void sink__close(struct sink *k);
/*
 * Ships one task's document (store__ship_doc) in a transaction of its own: 1 when it
 * was new, 0 when the fleet already had it (host, id and start are its key), -1 with
 * k->err set (k->conn_lost when the connection failed rather than the task).
 */
int sink__ship(struct sink *k, const char *doc);
/*
 * Deletes the fleet's tasks that started before before_ns (with their rows), oldest
 * first, up to n of them, in one statement under an advisory lock that another host
 * pruning holds: how many went, -EBUSY when another host prunes now, or -1 with k->err.
 */
long sink__prune(struct sink *k, __s64 before_ns, int n);
/*
 * One statement (or several without parameters), answered within k->timeout_s: its
 * result (an error one too), or NULL when none came (k->conn is then closed).
 */
struct pg_result *sink__run(struct sink *k, const char *sql, int n, const char *const *params,
			    int binary);

#endif /* TP_SINK_H */
