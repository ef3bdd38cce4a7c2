// SPDX-License-Identifier: GPL-2.0
/* Unit tests: series encoding and buckets, durations, the config file, the store's schema. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sqlite3.h>

#include "base/util.h"
#include "harness.h"
#include "model/config.h"
#include "model/rules.h"
#include "model/series.h"
#include "store/otlp_sink.h"
#include "store/store.h"
#include "testutil.h"

TEST(TIER_UNIT, series_round_trip_and_size)
{
	enum { N = 3600 };
	static struct series_point in[N];
	struct series_point *out = NULL;
	size_t n = 0, len = 0;
	void *blob = NULL;
	unsigned seed = 7;

	/* An hour of 1 s samples of a busy build: noisy CPU, growing memory. */
	for (int i = 0; i < N; i++) {
		in[i].t_ms = (__u64)i * 1000 + (__u64)(rand_r(&seed) % 3);
		in[i].v[0] = 1500 + rand_r(&seed) % 500;
		in[i].v[1] = (300LL << 20) + (__s64)i * 4096;
		/* Whole KiB: what the format keeps of a rate. */
		in[i].v[2] = rand_r(&seed) % 4 ? 0 : (rand_r(&seed) % (50 << 10)) * 1024LL;
		in[i].v[3] = 0;
		in[i].v[4] = 3 + rand_r(&seed) % 2;
	}
	ASSERT_OK(series_encode(in, N, &blob, &len), "encode");
	ASSERT_OK(series_decode(blob, len, &out, &n), "decode");
	ASSERT_EQ(n, N, "points");
	CHECK(n == N && !memcmp(in, out, sizeof(in)), "decoded points differ");
	/* At most 16 KiB per task-hour of 1 s series (the target in docs/PERFORMANCE.md). */
	printf("    an hour of noisy 1 s samples encodes to %zu bytes\n", len);
	ASSERT_LE(len, 16 * 1024, "bytes per task-hour");
	((unsigned char *)blob)[len / 2] ^= 0x55;
	n = 0;
	CHECK(series_decode(blob, len, &out, &n) != 0 || n == N, "a damaged block is refused");
	ASSERT_EQ(series_decode(blob, 3, &out, &n), -EINVAL, "a truncated block is refused");
	free(blob);
	free(out);
}

TEST(TIER_UNIT, series_buckets_keep_spikes)
{
	struct series_point p[100] = { 0 };
	struct series_bucket b[7];
	size_t total = 0;

	for (int i = 0; i < 100; i++) {
		p[i].t_ms = (__u64)i * 100;
		p[i].v[0] = i == 42 ? 2000 : 100;
	}
	ASSERT_OK(series_buckets(p, 100, 10000, 7, b), "buckets");
	for (int i = 0; i < 7; i++)
		total += b[i].count;
	ASSERT_EQ(total, 100, "every sample lands in a bucket");
	ASSERT_EQ(b[42 * 7 / 100].max[0], 2000, "the spike's bucket keeps its max");
	ASSERT_EQ(b[0].max[0], 100, "other buckets do not");
	ASSERT_EQ(series_buckets(p, 0, 0, 3, b), 0, "no samples: empty buckets");
	ASSERT_EQ(b[2].count, 0, "empty");
}

TEST(TIER_UNIT, durations)
{
	__u64 ns;

	ASSERT_OK(tp_parse_duration("7d", &ns), "7d");
	ASSERT_EQ(ns, 7ULL * 86400 * 1000000000ULL, "7d");
	ASSERT_OK(tp_parse_duration("90", &ns), "bare seconds");
	ASSERT_EQ(ns, 90ULL * 1000000000ULL, "90");
	ASSERT_OK(tp_parse_duration("2w", &ns), "2w");
	static const char *const bad[] = { "", "d", "7x", "-1d", "1.5h", "99999999999999d" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(tp_parse_duration(bad[i], &ns) == -EINVAL, "'%s' accepted", bad[i]);
}

TEST(TIER_UNIT, config_lines)
{
	struct config c;

	config__defaults(&c);
	ASSERT_OK(config__parse(&c, "t.conf",
				"# comment\n\nretain_days = 7\nmax_db_mb=64\n"
				"instance_type = m5.large \nworker_pool = gecko-t\n"
				"[rules]\noutput build.errors ^error:\nretain_days = 9\n"),
		  "good file");
	ASSERT_EQ(c.retain_days, 7, "retain_days");
	ASSERT_EQ(c.max_db_mb, 64, "max_db_mb");
	ASSERT_STREQ(c.instance_type, "m5.large", "instance_type trimmed");
	ASSERT_STREQ(c.worker_pool, "gecko-t", "worker_pool");
	ASSERT_EQ(c.retain_days, 7, "lines under [rules] belong to the rules, not the keys");
	ASSERT_EQ(config__parse(&c, "t.conf", "retain_days = 0\n"), -EINVAL, "0 days");
	ASSERT_EQ(config__parse(&c, "t.conf", "ok = 1\n"), -EINVAL, "unknown key");
	ASSERT_EQ(config__parse(&c, "t.conf", "retain_days\n"), -EINVAL, "no '='");
	ASSERT_EQ(config__parse(&c, "t.conf", "db = relative.db\n"), -EINVAL, "relative db");
	ASSERT_STREQ(c.listen, "127.0.0.1:9464", "the API's default address");
	ASSERT_OK(
		config__parse(&c, "t.conf", "listen = [::1]:9000\napi_token = 0123456789abcdef\n"),
		"listen and api_token");
	ASSERT_STREQ(c.listen, "[::1]:9000", "listen");
	ASSERT_STREQ(c.api_token, "0123456789abcdef", "api_token");
	ASSERT_EQ(config__parse(&c, "t.conf", "api_token = short\n"), -EINVAL, "a short token");
	ASSERT_EQ(c.max_tasks, 1024, "max_tasks by default");
	ASSERT_OK(config__parse(&c, "t.conf", "max_tasks = 8192\n"), "max_tasks at its limit");
	ASSERT_EQ(c.max_tasks, 8192, "max_tasks");
	ASSERT_EQ(config__parse(&c, "t.conf", "max_tasks = 0\n"), -EINVAL, "no tasks");
	ASSERT_EQ(config__parse(&c, "t.conf", "max_tasks = 8193\n"), -EINVAL, "over the limit");
	ASSERT_OK(config__parse(&c, "t.conf", "metrics_label = job\n"), "metrics_label");
	ASSERT_STREQ(c.metrics_label, "job", "metrics_label");
	{
		static const char *const bad[] = { "metrics_label = a.b\n", "metrics_label = 1x\n",
						   "metrics_label = __x\n",
						   "metrics_label = reason\n",
						   "metrics_label = worker_pool\n" };

		for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
			CHECK(config__parse(&c, "t.conf", bad[i]) == -EINVAL, "refused: %s",
			      bad[i]);
	}
}

/* otlp_endpoint: an http(s) base URL without credentials or query; the header lines. */
TEST(TIER_UNIT, otlp_config_and_header_lines)
{
	static const char *const bad[] = {
		"otlp_endpoint = ftp://h:4318\n",
		"otlp_endpoint = http://\n",
		"otlp_endpoint = http://u:pw@h:4318\n",
		"otlp_endpoint = https://h/v1?x=1\n",
		"otlp_endpoint = h:4318\n",
		"otlp_metrics = yes\n",
		"otlp_headers_file = relative\n",
	};
	struct config c;
	char out[128];

	config__defaults(&c);
	ASSERT_STREQ(c.otlp_endpoint, "", "off by default");
	ASSERT_FALSE(c.otlp_metrics, "metrics opt-in");
	ASSERT_OK(config__parse(
			  &c, "t.conf",
			  "otlp_endpoint = https://otel.example:4318/base/\n"
			  "otlp_headers_file = /etc/taskprobe/otlp-headers\notlp_metrics = true\n"),
		  "an endpoint, a headers file, metrics on");
	ASSERT_STREQ(c.otlp_endpoint, "https://otel.example:4318/base/", "the endpoint");
	ASSERT_STREQ(c.otlp_headers_file, "/etc/taskprobe/otlp-headers", "the headers file");
	ASSERT_TRUE(c.otlp_metrics, "metrics on");
	ASSERT_OK(config__parse(&c, "t.conf", "otlp_endpoint = off\n"), "off");
	ASSERT_STREQ(c.otlp_endpoint, "", "off again");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(config__parse(&c, "t.conf", bad[i]) == -EINVAL, "refused: %s", bad[i]);

	ASSERT_OK(otlp_header_line("Authorization:  Bearer a b", out, sizeof(out)), "a header");
	ASSERT_STREQ(out, "Authorization: Bearer a b", "spaces after the colon dropped");
	ASSERT_EQ(otlp_header_line("No colon", out, sizeof(out)), -1, "no colon");
	ASSERT_EQ(otlp_header_line(": v", out, sizeof(out)), -1, "no name");
	ASSERT_EQ(otlp_header_line("Bad Name: v", out, sizeof(out)), -1, "a space in the name");
	ASSERT_EQ(otlp_header_line("X-Empty:", out, sizeof(out)), -1, "no value");
	ASSERT_EQ(otlp_header_line("X: a\x01b", out, sizeof(out)), -1, "a control character");
	ASSERT_EQ(otlp_header_line("X: 0123456789", out, 8), -1, "too long");
}

/* Config and rules files are read whole, with one size limit; a larger one is refused. */
TEST(TIER_UNIT, config_file_size_limit)
{
	const char *path = tu_tmp("big.conf");
	size_t n = TP_TEXT_FILE_MAX + 10;
	struct config c;
	struct rules rs;
	char *text = malloc(n + 1);

	ASSERT_NOT_NULL(text, "malloc");
	memset(text, '#', n);
	text[n] = '\0';
	for (size_t i = 79; i < n; i += 80)
		text[i] = '\n';
	tu_write_file(path, text);
	config__defaults(&c);
	ASSERT_EQ(config__load(&c, path, 1), -EFBIG, "config over the limit");
	rules__init(&rs);
	ASSERT_EQ(rules__load(&rs, path, true, true), -EFBIG, "rules over the limit");
	/* Just under it: all comment lines, read whole. */
	text[TP_TEXT_FILE_MAX - 2] = '\0';
	text[TP_TEXT_FILE_MAX - 3] = '\n';
	tu_write_file(path, text);
	ASSERT_OK(config__load(&c, path, 1), "config just under the limit");
	ASSERT_OK(rules__load(&rs, path, true, true), "rules just under the limit");
	ASSERT_OK(config__load(&c, tu_tmp("absent.conf"), 0), "a missing optional config");
	ASSERT_EQ(config__load(&c, tu_tmp("absent.conf"), 1), -ENOENT, "a missing --config");
	rules__fini(&rs);
	free(text);
}

static int user_version(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int v = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

TEST(TIER_UNIT, store_migrates_forward)
{
	const char *path = tu_tmp("old.db");
	struct store *s;
	sqlite3 *db;

	ASSERT_OK(store__create_at_version(path, 1), "a schema-1 database");
	ASSERT_EQ(user_version(path), 1, "version 1");
	ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK, "open");
	ASSERT_EQ(
		sqlite3_exec(db,
			     "INSERT INTO tasks (id, host, command, status, exit_status, start_ns,"
			     " wall_ns) VALUES ('old-1', 'h', '[\"true\"]', 'exited', 0, 1, 2);"
			     "INSERT INTO metrics VALUES (1, 'proc.execs', 3);",
			     NULL, NULL, NULL),
		SQLITE_OK, "a task written at schema 1");
	sqlite3_close(db);
	s = store__open(path, false, (gid_t)-1);
	if (!ASSERT_NOT_NULL(s, "open at the current schema"))
		return;
	store__close(s);
	ASSERT_EQ(user_version(path), STORE_SCHEMA, "migrated");
	ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK, "reopen");
	{
		sqlite3_stmt *st;

		sqlite3_prepare_v2(db,
				   "SELECT t.id, m.value, t.lock FROM tasks t JOIN metrics m ON "
				   "m.task = t.tid",
				   -1, &st, NULL);
		ASSERT_EQ(sqlite3_step(st), SQLITE_ROW, "the old task is still there");
		ASSERT_STREQ((const char *)sqlite3_column_text(st, 0), "old-1", "its id");
		ASSERT_EQ(sqlite3_column_double(st, 1), 3, "its metric");
		ASSERT_EQ(sqlite3_column_type(st, 2), SQLITE_NULL, "the new column");
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
}

/*
 * A COMMIT that fails (here the file-size limit, as a full disk would) leaves no
 * transaction open: the next write of the same store goes through. Injected: the
 * series of a task written under RLIMIT_FSIZE just above the files' sizes, with
 * SIGXFSZ ignored, so that the pages SQLite keeps until COMMIT cannot reach its WAL.
 * Recovered: the limit lifted, the same store writes the series and ends the task.
 */
TEST(TIER_UNIT, a_failed_commit_leaves_the_store_writable)
{
	const char *path = tu_tmp("commit.db");
	size_t big = 512 * 1024, limit = 0;
	struct rlimit was, low;
	struct store *s;
	struct stat st;
	char wal[4200];
	void (*old)(int);
	sqlite3 *db;
	char *blob;
	int err;

	s = store__open(path, true, (gid_t)-1);
	if (!ASSERT_NOT_NULL(s, "a store"))
		return;
	ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK, "open");
	sqlite3_exec(db,
		     "INSERT INTO tasks (id, host, command, status, start_ns) VALUES"
		     " ('c', 'h', '[]', 'running', 1)",
		     NULL, NULL, NULL);
	sqlite3_close(db);
	blob = malloc(big);
	if (!ASSERT_NOT_NULL(blob, "a series blob"))
		goto out;
	for (size_t i = 0; i < big; i++)
		blob[i] = (char)(i * 7919 >> 3);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (!stat(path, &st))
		limit = (size_t)st.st_size;
	if (!stat(wal, &st) && (size_t)st.st_size > limit)
		limit = (size_t)st.st_size;
	ASSERT_OK(getrlimit(RLIMIT_FSIZE, &was), "the file-size limit");
	low = was;
	low.rlim_cur = limit + 64 * 1024;
	old = signal(SIGXFSZ, SIG_IGN);
	ASSERT_OK(setrlimit(RLIMIT_FSIZE, &low), "a low file-size limit");
	err = store__replace_series(s, 1, blob, big, 100);
	setrlimit(RLIMIT_FSIZE, &was);
	signal(SIGXFSZ, old);
	ASSERT_TRUE(err < 0, "the series does not fit");
	ASSERT_OK(store__replace_series(s, 1, blob, 4096, 10), "the next write goes through");
	ASSERT_OK(store__replace_series(s, 1, blob, big, 100),
		  "and the whole series, once it fits");
	free(blob);
out:
	store__close(s);
}
