// SPDX-License-Identifier: GPL-2.0
/* The SQLite store's statements: prepared, bound, stepped, and their failures said once. */
#include <errno.h>
#include <stdarg.h>

#include <sqlite3.h>

#include "base/util.h"
#include "store/store_int.h"

int sqlite__error(struct store *s, const char *what)
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

int sqlite__exec(struct store *s, const char *sql)
{
	return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

int sqlite__prepare(struct store *s, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK)
		return 0;
	*st = NULL;
	return sqlite__error(s, "reading");
}

int sqlite__step(struct store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return rc;
	return sqlite__error(s, "reading");
}

/* Prepares, binds by the format ('i' int64, 't' text, 'd' double, 'b' blob+len), steps. */
int sqlite__run(struct store *s, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int rc, i = 1;

	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return sqlite__error(s, "preparing a statement");
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
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sqlite__error(s, "writing");
}

const char *sqlite__col_text(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);

	return t ? t : "";
}
