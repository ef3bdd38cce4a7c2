// SPDX-License-Identifier: GPL-2.0
/* The SQLite store's upkeep: tasks of dead collectors marked lost, old tasks dropped. */
#include <errno.h>
#include <string.h>

#include <sqlite3.h>

#include "base/util.h"
#include "store/store.h"
#include "store/store_int.h"

int store__mark_lost(struct store *s)
{
	sqlite3_stmt *st;
	__s64 dead[256];
	int n = 0, err = 0;

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	if (sqlite3_prepare_v2(s->db, "SELECT tid, lock FROM tasks WHERE status = 'running'", -1,
			       &st, NULL) != SQLITE_OK)
		return sqlite__error(s, "finding running tasks");
	while (n < (int)ARRAY_SIZE(dead) && (err = sqlite__step(s, st)) == SQLITE_ROW) {
		const char *lock = (const char *)sqlite3_column_text(st, 1);

		if (!strcmp(store__live_status("running", lock), "lost"))
			dead[n++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	if (err < 0)
		return err;
	err = 0;
	for (int i = 0; i < n && !err; i++)
		err = sqlite__run(
			s,
			"UPDATE tasks SET status = 'lost', ship = CASE WHEN ? THEN 1 END, "
			"otlp = CASE WHEN ? THEN 1 END WHERE tid = ?",
			"iii", (long long)s->outbox[STORE_Q_FLEET],
			(long long)s->outbox[STORE_Q_OTLP], (long long)dead[i]);
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

	if (s->ops->read_only)
		return -EOPNOTSUPP; /* the fleet's: written by shippers only */
	/* With a sink or an OTLP endpoint, a task waiting for its shipper is never deleted. */
	err = sqlite__run(s,
			  "DELETE FROM tasks WHERE start_ns < ? AND status != 'running' AND "
			  "(NOT ? OR ship IS NOT 1) AND (NOT ? OR otlp IS NOT 1)",
			  "iii", (long long)cutoff, (long long)s->outbox[STORE_Q_FLEET],
			  (long long)s->outbox[STORE_Q_OTLP]);
	/* Oldest first, a hundred at a time, until the data fits or nothing more may go. */
	for (int round = 0; !err && round < 1000 && used_bytes(s) > (__s64)max_mb << 20; round++) {
		err = sqlite__run(s,
				  "DELETE FROM tasks WHERE tid IN (SELECT tid FROM tasks WHERE "
				  "status != 'running' AND (NOT ? OR ship IS NOT 1) "
				  "AND (NOT ? OR otlp IS NOT 1) ORDER BY start_ns LIMIT 100)",
				  "ii", (long long)s->outbox[STORE_Q_FLEET],
				  (long long)s->outbox[STORE_Q_OTLP]);
		if (!err && !sqlite3_changes(s->db))
			break;
	}
	return err;
}
