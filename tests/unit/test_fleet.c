// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the fleet store's pieces: connection strings, globs, base64, the outbox. */
#include <fnmatch.h>
#include <regex.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/conninfo.h"
#include "base/conninfo.h"
#include "base/json.h"
#include "base/util.h"
#include "harness.h"
#include "model/config.h"
#include "store/pgstore.h"
#include "store/query.h"
#include "store/sink.h"
#include "store/store.h"
#include "testutil.h"

TEST(TIER_UNIT, base64_rfc4648_vectors)
{
	static const char *const in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const out[] = { "",	       "Zg==",	   "Zm8=",    "Zm9v",
					   "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
	char buf[16];

	for (size_t i = 0; i < ARRAY_SIZE(in); i++) {
		ASSERT_EQ(tp_base64_len(strlen(in[i])), strlen(out[i]) + 1, "length");
		tp_base64(in[i], strlen(in[i]), buf);
		ASSERT_STREQ(buf, out[i], in[i]);
	}
}

/* The regular expression a glob becomes matches what glibc's fnmatch says it matches. */
TEST(TIER_UNIT, glob_regex_agrees_with_fnmatch)
{
	static const char *const globs[] = { "*.s3.amazonaws.com",
					     "10.0.*",
					     "worker-[ab]",
					     "worker-[^a]",
					     "a+b(c)",
					     "?",
					     "*",
					     "h.x",
					     "[a-c]*z",
					     "s3.*.amazonaws.com",
					     "*[.]*",
					     "^$|" };
	static const char *const names[] = { "b.s3.amazonaws.com",
					     "s3.amazonaws.com",
					     "10.0.1.2",
					     "10.1.0.2",
					     "worker-a",
					     "worker-b",
					     "worker-c",
					     "a+b(c)",
					     "aab(c)",
					     "x",
					     "",
					     "hax",
					     "h.x",
					     "bz",
					     "dz",
					     "s3.eu.amazonaws.com",
					     "^$|",
					     "a.b" };
	char re[256];

	for (size_t g = 0; g < ARRAY_SIZE(globs); g++) {
		regex_t rx;

		ASSERT_OK(pgstore_glob_regex(globs[g], re, sizeof(re)), globs[g]);
		if (!CHECK(!regcomp(&rx, re, REG_EXTENDED | REG_NOSUB), "regcomp '%s'", re))
			continue;
		for (size_t n = 0; n < ARRAY_SIZE(names); n++) {
			bool want = !fnmatch(globs[g], names[n], 0);
			bool got = !regexec(&rx, names[n], 0, NULL, 0);

			CHECK(want == got, "glob '%s' (regex '%s') on '%s': %d, fnmatch %d",
			      globs[g], re, names[n], got, want);
		}
		regfree(&rx);
	}
	ASSERT_EQ(pgstore_glob_regex("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", re, 16), -ENOSPC,
		  "too long for the buffer");
}

/* --host globs: an unclosed set is refused (SQLite's GLOB would match nothing). */
TEST(TIER_UNIT, host_globs_checked_before_any_store)
{
	static const char *const good[] = {
		"*.s3.amazonaws.com", "worker-[ab]", "[]]", "[^]]x", "a]b", "[a-z]*[0-9]", "?"
	};
	static const char *const bad[] = { "", "[", "a[b", "[^", "[]", "[^]", "x[a-z]*[0-9" };
	char re[600], long_glob[QUERY_GLOB_MAX + 2];
	const char *why;

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		regex_t rx;

		if (!CHECK(query_valid_glob(good[i], &why), "'%s' refused", good[i]))
			continue;
		/* Whatever passes becomes a regular expression that compiles. */
		ASSERT_OK(pgstore_glob_regex(good[i], re, sizeof(re)), good[i]);
		if (CHECK(!regcomp(&rx, re, REG_EXTENDED | REG_NOSUB), "regcomp '%s'", re))
			regfree(&rx);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!query_valid_glob(bad[i], &why) && why && *why, "'%s' taken", bad[i]);
	memset(long_glob, 'a', sizeof(long_glob) - 1);
	long_glob[QUERY_GLOB_MAX] = '\0';
	ASSERT_TRUE(query_valid_glob(long_glob, &why), "253 characters");
	ASSERT_OK(pgstore_glob_regex(long_glob, re, sizeof(re)), "the longest as a regex");
	long_glob[QUERY_GLOB_MAX] = 'a';
	long_glob[QUERY_GLOB_MAX + 1] = '\0';
	ASSERT_FALSE(query_valid_glob(long_glob, &why), "254 characters");
}

TEST(TIER_UNIT, sink_strings_never_hold_a_password)
{
	static const char *const good[] = { "postgresql://tp@db.example/fleet",
					    "postgres://tp@10.0.0.1:5433/fleet?sslmode=require",
					    "host=/run/pg port=5432 user=tp dbname=fleet",
					    "postgresql:///fleet" };
	static const char *const with_pw[] = {
		"postgresql://tp:hunter2secret@db/fleet",
		"postgresql://tp@db/fleet?password=hunter2secret",
		"host=db user=tp password=hunter2secret dbname=fleet",
		"host=db password = 'hunter2secret'",
	};
	static const char *const broken[] = { "host=db password=hunter2secret junk",
					      "postgresql://tp:hunter2secret@[::1/fleet",
					      "host='hunter2secret" };
	static const char *const not_pg[] = { "/var/lib/taskprobe/taskprobe.db", "fleet.db",
					      "mysql://db/fleet", "" };
	char name[256], why[512];

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		ASSERT_TRUE(conninfo_is(good[i]), good[i]);
		CHECK(!conninfo_check(good[i], name, sizeof(name), why, sizeof(why)), "%s: %s",
		      good[i], why);
	}
	ASSERT_STREQ((conninfo_check(good[1], name, sizeof(name), why, sizeof(why)), name),
		     "postgresql://tp@10.0.0.1:5433/fleet", "the display name");
	for (size_t i = 0; i < ARRAY_SIZE(with_pw); i++) {
		ASSERT_EQ(conninfo_check(with_pw[i], name, sizeof(name), why, sizeof(why)), -EINVAL,
			  with_pw[i]);
		CHECK(strstr(why, "holds a password") && !strstr(why, "hunter2"), "%s: %s",
		      with_pw[i], why);
	}
	for (size_t i = 0; i < ARRAY_SIZE(broken); i++) {
		ASSERT_EQ(conninfo_check(broken[i], name, sizeof(name), why, sizeof(why)), -EINVAL,
			  broken[i]);
		CHECK(!strstr(why, "hunter2") && !strchr(why, '\n'), "%s: %s", broken[i], why);
	}
	for (size_t i = 0; i < ARRAY_SIZE(not_pg); i++)
		ASSERT_FALSE(conninfo_is(not_pg[i]), not_pg[i]);
}

TEST(TIER_UNIT, config_sink_lines)
{
	struct config c;

	config__defaults(&c);
	ASSERT_STREQ(c.sink, "", "off by default");
	ASSERT_OK(
		config__parse(&c, "t.conf",
			      "sink = postgresql://tp@db/fleet\nsink_passfile = /etc/tp.pgpass\n"),
		"a sink");
	ASSERT_STREQ(c.sink, "postgresql://tp@db/fleet", "sink");
	ASSERT_STREQ(c.sink_passfile, "/etc/tp.pgpass", "sink_passfile");
	ASSERT_OK(config__parse(&c, "t.conf", "sink = off\n"), "off");
	ASSERT_STREQ(c.sink, "", "sink = off");
	ASSERT_EQ(config__parse(&c, "t.conf", "sink = postgresql://tp:pw@db/fleet\n"), -EINVAL,
		  "a password in the sink");
	ASSERT_EQ(config__parse(&c, "t.conf", "sink = /var/fleet.db\n"), -EINVAL, "a path");
	ASSERT_EQ(config__parse(&c, "t.conf", "sink_passfile = relative\n"), -EINVAL,
		  "a relative passfile");
	ASSERT_EQ(c.sink_retain_days, 0, "the fleet keeps every task by default");
	ASSERT_OK(config__parse(&c, "t.conf", "sink_retain_days = 90\n"), "sink_retain_days");
	ASSERT_EQ(c.sink_retain_days, 90, "90 days");
	ASSERT_EQ(config__parse(&c, "t.conf", "sink_retain_days = -1\n"), -EINVAL, "negative");
	ASSERT_EQ(config__parse(&c, "t.conf", "sink_retain_days = 36501\n"), -EINVAL, "too many");
	ASSERT_EQ(config__parse(&c, "t.conf", "sink_retain_days = 7d\n"), -EINVAL, "a suffix");
	ASSERT_EQ(c.sink_retain_days, 90, "a bad line changes nothing");
}

static long count_rows(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long n = -1;

	if (sqlite3_open(path, &db) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return n;
}

/* Retention keeps a waiting task while a sink is configured, and not after. */
TEST(TIER_UNIT, outbox_survives_retention_and_ships_whole)
{
	const char *path = tu_tmp("outbox.db");
	struct store *s = store__open(path, true, (gid_t)-1);
	__s64 tids[8];
	char *doc = NULL;
	sqlite3 *db;
	struct json *j;

	if (!ASSERT_NOT_NULL(s, "a store"))
		return;
	ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK, "open");
	ASSERT_EQ(
		sqlite3_exec(
			db,
			"INSERT INTO tasks (id, host, command, status, exit_status, start_ns,"
			" wall_ns, record, ship) VALUES"
			" ('old-waiting', 'h1', '[\"true\"]', 'exited', 0, 1, 5, '{}', 1),"
			" ('old-shipped', 'h1', '[\"true\"]', 'exited', 0, 2, 5, '{}', 0),"
			" ('old-no-sink', 'h1', '[\"true\"]', 'exited', 0, 3, 5, '{}', NULL);"
			"INSERT INTO metrics VALUES (1, 'proc.execs', 3), (1, 'cpu.time_ns', 1.5);"
			"INSERT INTO labels VALUES (1, 'host', 'h1'), (1, 'job', 'a\"b');"
			"INSERT INTO net VALUES (1, 'a.example,b.example', '10.0.0.1', 443,"
			" 'net.tcp.connect_failures', 2);"
			"INSERT INTO series VALUES (1, 0, 2, x'00ff10');",
			NULL, NULL, NULL),
		SQLITE_OK, "three old tasks");
	sqlite3_close(db);
	ASSERT_EQ(store__outbox(s, STORE_Q_FLEET, 0, tids, 8), 1, "one waits");
	ASSERT_OK(store__ship_doc(s, tids[0], &doc), "its document");
	j = doc ? json_parse(doc, strlen(doc), NULL, 0) : NULL;
	if (ASSERT_NOT_NULL(j, "the document is JSON")) {
		ASSERT_STREQ(json_str(j, "id"), "old-waiting", "id");
		ASSERT_STREQ(json_str(j, "host"), "h1", "host");
		ASSERT_EQ(json_num(j, "start_ns"), 1, "start_ns");
		ASSERT_EQ(json_num(json_get(j, "metrics"), "proc.execs"), 3, "a metric");
		ASSERT_TRUE(json_num(json_get(j, "metrics"), "cpu.time_ns") == 1.5, "a fraction");
		ASSERT_STREQ(json_str(json_get(j, "labels"), "job"), "a\"b", "a quoted label");
		ASSERT_STREQ(json_str(json_at(json_get(j, "net"), 0), "host"),
			     "a.example,b.example", "an endpoint's names");
		ASSERT_STREQ(json_str(json_at(json_get(j, "series"), 0), "data"), "AP8Q",
			     "a series block in base64");
		ASSERT_EQ(json_len(json_get(j, "hists")), 0, "no histograms");
	}
	json_free(j);
	free(doc);

	store__set_outbox(s, STORE_Q_FLEET, true);
	ASSERT_OK(store__retain(s, 1, 1024), "retention with a sink");
	ASSERT_EQ(count_rows(path, "SELECT COUNT(*) FROM tasks"), 1, "only the waiting one stays");
	ASSERT_OK(store__outbox_done(s, STORE_Q_FLEET, tids[0], false), "shipped");
	ASSERT_EQ(store__outbox(s, STORE_Q_FLEET, 0, tids, 8), 0, "none waits");
	/* Waiting for the OTLP collector only: kept too, while an endpoint is set. */
	ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK, "open");
	sqlite3_exec(db, "UPDATE tasks SET otlp = 1 WHERE tid = 1", NULL, NULL, NULL);
	sqlite3_close(db);
	store__set_outbox(s, STORE_Q_OTLP, true);
	ASSERT_OK(store__retain(s, 1, 1024), "retention with an endpoint");
	ASSERT_EQ(count_rows(path, "SELECT COUNT(*) FROM tasks"), 1, "kept for the collector");
	ASSERT_EQ(store__outbox(s, STORE_Q_OTLP, 0, tids, 8), 1, "it waits for the collector");
	ASSERT_OK(store__outbox_done(s, STORE_Q_OTLP, tids[0], false), "sent");
	ASSERT_OK(store__retain(s, 1, 1024), "retention again");
	ASSERT_EQ(count_rows(path, "SELECT COUNT(*) FROM tasks"), 0, "then it goes too");
	store__close(s);
}

TEST(TIER_UNIT, outbox_without_a_sink_is_retired_as_usual)
{
	const char *path = tu_tmp("nosink.db");
	struct store *s = store__open(path, true, (gid_t)-1);
	sqlite3 *db;

	if (!ASSERT_NOT_NULL(s, "a store"))
		return;
	ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK, "open");
	sqlite3_exec(db,
		     "INSERT INTO tasks (id, host, command, status, start_ns, ship) VALUES"
		     " ('w', 'h', '[]', 'exited', 1, 1)",
		     NULL, NULL, NULL);
	sqlite3_close(db);
	/* The sink was removed from the config: nothing would ever ship it. */
	ASSERT_OK(store__retain(s, 1, 1024), "retention without a sink");
	ASSERT_EQ(count_rows(path, "SELECT COUNT(*) FROM tasks"), 0, "retired");
	store__close(s);
}

/* A failing sink's backoff holds while it stays the sink; another sink starts afresh. */
TEST(TIER_UNIT, sink_backoff_is_the_sinks_own)
{
	struct store *s = store__open(tu_tmp("backoff.db"), true, (gid_t)-1);
	const char *a = "postgresql://tp@a:5432/fleet", *b = "postgresql://tp@b:5432/fleet";
	struct store_sink_state st;
	__s64 tids[8];
	sqlite3 *db;

	if (!ASSERT_NOT_NULL(s, "a store"))
		return;
	ASSERT_OK(store__sink_name(s, STORE_Q_FLEET, a), "named before any round");
	ASSERT_OK(store__sink_state(s, STORE_Q_FLEET, &st), "state");
	ASSERT_TRUE(!strcmp(st.sink, a) && !st.error[0] && !st.failures, "named, no error");
	ASSERT_OK(store__sink_note(s, STORE_Q_FLEET, a, "cannot connect", 4000000000000000000ULL),
		  "a failure");
	ASSERT_OK(store__sink_note(s, STORE_Q_FLEET, a, "cannot connect", 4000000000000000001ULL),
		  "another");
	ASSERT_OK(store__sink_name(s, STORE_Q_FLEET, a), "the same sink again (a reload)");
	ASSERT_OK(store__sink_state(s, STORE_Q_FLEET, &st), "state");
	ASSERT_EQ(st.failures, 2, "its failures kept");
	ASSERT_EQ(st.next_try_ns, 4000000000000000001ULL, "its backoff kept");
	ASSERT_TRUE(!strcmp(st.error, "cannot connect"), "its error kept");
	ASSERT_OK(store__sink_name(s, STORE_Q_FLEET, b), "another sink");
	ASSERT_OK(store__sink_state(s, STORE_Q_FLEET, &st), "state");
	ASSERT_TRUE(!strcmp(st.sink, b) && !st.error[0], "the new one, no error");
	ASSERT_EQ(st.failures, 0, "no failures");
	ASSERT_EQ(st.next_try_ns, 0, "no backoff");
	/* The OTLP collector's shipper keeps its own state: the fleet's failures are not its. */
	ASSERT_OK(store__sink_note(s, STORE_Q_FLEET, b, "down", 4000000000000000000ULL), "fleet");
	ASSERT_OK(store__sink_name(s, STORE_Q_OTLP, "http://127.0.0.1:4318"), "an endpoint");
	/* Counted as each task is marked, in the same transaction: refusals and repeats not. */
	ASSERT_EQ(sqlite3_open(tu_tmp("backoff.db"), &db), SQLITE_OK, "open");
	sqlite3_exec(db,
		     "INSERT INTO tasks (id, host, command, status, start_ns, otlp) VALUES"
		     " ('a', 'h', '[]', 'exited', 1, 1), ('b', 'h', '[]', 'exited', 2, 1),"
		     " ('c', 'h', '[]', 'exited', 3, 1), ('d', 'h', '[]', 'exited', 4, 1)",
		     NULL, NULL, NULL);
	sqlite3_close(db);
	ASSERT_EQ(store__outbox(s, STORE_Q_OTLP, 0, tids, 8), 4, "4 wait");
	for (int i = 0; i < 3; i++)
		ASSERT_OK(store__outbox_done(s, STORE_Q_OTLP, tids[i], false), "sent");
	ASSERT_OK(store__outbox_done(s, STORE_Q_OTLP, tids[0], false), "sent again: not waiting");
	ASSERT_OK(store__outbox_done(s, STORE_Q_OTLP, tids[3], true), "refused");
	ASSERT_OK(store__sink_note(s, STORE_Q_OTLP, "http://127.0.0.1:4318", NULL, 0), "the round");
	ASSERT_OK(store__sink_state(s, STORE_Q_OTLP, &st), "the collector's state");
	ASSERT_TRUE(!strcmp(st.sink, "http://127.0.0.1:4318") && !st.error[0], "its own name");
	ASSERT_EQ(st.failures, 0, "none of the fleet's failures");
	ASSERT_EQ(st.shipped, 3, "its own count");
	ASSERT_EQ(st.waiting, 0, "none waits");
	ASSERT_EQ(st.refused, 1, "one refused");
	ASSERT_TRUE(st.shipped_ns > 0, "a time of the last shipped task");
	ASSERT_OK(store__sink_state(s, STORE_Q_FLEET, &st), "the fleet's state");
	ASSERT_EQ(st.shipped, 0, "not the collector's count");
	ASSERT_EQ(st.failures, 1, "its own failure");
	store__close(s);
}

TEST(TIER_UNIT, glob_like_escapes_like_its_own)
{
	char out[64];

	ASSERT_OK(pgstore_glob_like("*.s3.amazonaws.com", out, sizeof(out)), "a suffix");
	ASSERT_STREQ(out, "%.s3.amazonaws.com", "a suffix");
	ASSERT_OK(pgstore_glob_like("a_b%c\\d?*", out, sizeof(out)), "LIKE's own characters");
	ASSERT_STREQ(out, "a\\_b\\%c\\\\d_%", "escaped");
	ASSERT_EQ(pgstore_glob_like("worker-[ab]", out, sizeof(out)), -EINVAL, "a set: regex");
	ASSERT_EQ(pgstore_glob_like("aaaaaaaaaaaaaaaaaaaa", out, 8), -ENOSPC, "too long");
}
