// SPDX-License-Identifier: GPL-2.0
/* PostgreSQL connection strings: told from paths, checked, shown without a password. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/conninfo.h"

bool conninfo_is(const char *s)
{
	const char *p = s;

	if (!strncmp(s, "postgresql://", 13) || !strncmp(s, "postgres://", 11))
		return true;
	/* "host=... dbname=...": a keyword, then '='; a path has a '/' or '.' first. */
	while (islower((unsigned char)*p) || *p == '_')
		p++;
	while (*p == ' ')
		p++;
	return p > s && *p == '=';
}

/*
 * libpq's message as one line, with what it quotes of the string left out: a string
 * it could not parse may hold a password that the refusal below never got to see.
 */
void pg_message_line(char *out, size_t len, const char *msg, bool unquote)
{
	size_t o = 0;
	bool quoted = false, space = false;

	for (const char *p = msg ? msg : ""; *p && o + 4 < len; p++) {
		if (unquote && *p == '"') {
			quoted = !quoted;
			if (quoted && o + 7 < len) {
				if (space)
					out[o++] = ' ';
				memcpy(out + o, "\"...\"", 5);
				o += 5;
				space = false;
			}
			continue;
		}
		if (quoted)
			continue;
		if (isspace((unsigned char)*p)) {
			space = o > 0;
			continue;
		}
		if (space && o + 2 < len)
			out[o++] = ' ';
		space = false;
		out[o++] = *p;
	}
	while (o && (out[o - 1] == '.' || out[o - 1] == ' '))
		o--;
	out[o < len ? o : len - 1] = '\0';
}

static const char *opt(const PQconninfoOption *o, const char *kw)
{
	for (; o && o->keyword; o++)
		if (!strcmp(o->keyword, kw))
			return o->val && *o->val ? o->val : NULL;
	return NULL;
}

int conninfo_check(const char *conninfo, char *name, size_t nlen, char *why, size_t wlen)
{
	PQconninfoOption *o;
	const char *host, *port, *user, *db;
	char *msg = NULL;

	if (!conninfo_is(conninfo)) {
		snprintf(why, wlen,
			 "not a PostgreSQL connection string: use postgresql://USER@HOST/DB "
			 "or 'host=... dbname=...'");
		return -EINVAL;
	}
	o = PQconninfoParse(conninfo, &msg);
	if (!o) {
		char line[256];

		pg_message_line(line, sizeof(line), msg ? msg : "out of memory", true);
		snprintf(why, wlen, "not a valid connection string: %s", line);
		PQfreemem(msg);
		return -EINVAL;
	}
	if (opt(o, "password")) {
		PQconninfoFree(o);
		snprintf(why, wlen,
			 "the connection string holds a password, which would show in ps and "
			 "logs; put it in a .pgpass file (sink_passfile or PGPASSFILE)");
		return -EINVAL;
	}
	host = opt(o, "host") ? opt(o, "host") : opt(o, "hostaddr");
	port = opt(o, "port");
	user = opt(o, "user");
	db = opt(o, "dbname");
	if (name)
		snprintf(name, nlen, "postgresql://%s%s%s%s%s/%s", user ? user : "",
			 user ? "@" : "", host ? host : "", port ? ":" : "", port ? port : "",
			 db ? db : "");
	PQconninfoFree(o);
	return 0;
}
