/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PostgreSQL connection strings, as the settings and --db give them: told from a path,
 * checked, named for messages. A connection string never holds a password (libpq
 * reads it from a .pgpass file), and no message shows one.
 */
#ifndef TP_CONNINFO_H
#define TP_CONNINFO_H

#include <stdbool.h>
#include <stddef.h>

/* A libpq URI (postgresql://, postgres://) or "keyword=value ..." string. */
bool conninfo_is(const char *s);
/*
 * Parses a connection string and refuses one that holds a password. Its display name
 * (never a password) goes to name unless NULL. 0, or -EINVAL with why said in why.
 */
int conninfo_check(const char *conninfo, char *name, size_t nlen, char *why, size_t wlen);
/*
 * libpq's message msg as one line in out; unquote leaves out what it quotes of a
 * string (a string it could not parse may hold a password).
 */
void pg_message_line(char *out, size_t len, const char *msg, bool unquote);

#endif /* TP_CONNINFO_H */
