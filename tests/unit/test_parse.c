// SPDX-License-Identifier: GPL-2.0
/* Unit tests: ids, labels, numbers and `run` option parsing (bad input gets one error). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/util.h"
#include "cli/commands.h"
#include "harness.h"
#include "model/collect_kinds.h"
#include "session/control.h"
#include "testutil.h"

TEST(TIER_UNIT, valid_ids)
{
	static const char *const good[] = { "a", "build-42", "A.b_c:d@e-f", "0" };
	static const char *const bad[] = { "", ".", "..", "a/b", "a b", "x\n", "é", "a;b" };
	char longest[TP_ID_MAX + 2];

	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		CHECK(tp_valid_id(good[i]), "'%s' should be valid", good[i]);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!tp_valid_id(bad[i]), "'%s' should be invalid", bad[i]);
	memset(longest, 'x', TP_ID_MAX);
	longest[TP_ID_MAX] = '\0';
	ASSERT_TRUE(tp_valid_id(longest), "128 characters");
	longest[TP_ID_MAX] = 'x';
	longest[TP_ID_MAX + 1] = '\0';
	ASSERT_FALSE(tp_valid_id(longest), "129 characters");
}

TEST(TIER_UNIT, labels)
{
	char ok[] = "instance_type=m5.large", empty_val[] = "k=", noeq[] = "novalue";
	char badkey[] = "a b=c", nokey[] = "=v", ctl[] = "k=a\tb";
	char *k, *v;
	const char *why;

	ASSERT_OK(tp_parse_label(ok, &k, &v, &why), "K=V");
	ASSERT_STREQ(k, "instance_type", "key");
	ASSERT_STREQ(v, "m5.large", "value");
	ASSERT_OK(tp_parse_label(empty_val, &k, &v, &why), "empty value is allowed");
	ASSERT_EQ(tp_parse_label(noeq, &k, &v, &why), -EINVAL, "no '='");
	ASSERT_EQ(tp_parse_label(badkey, &k, &v, &why), -EINVAL, "space in key");
	ASSERT_EQ(tp_parse_label(nokey, &k, &v, &why), -EINVAL, "empty key");
	ASSERT_EQ(tp_parse_label(ctl, &k, &v, &why), -EINVAL, "control character");
}

TEST(TIER_UNIT, parse_u64)
{
	__u64 v;

	ASSERT_OK(tp_parse_u64("0", 10, &v), "0");
	ASSERT_EQ(v, 0, "0");
	ASSERT_OK(tp_parse_u64("86400", 86400, &v), "max");
	ASSERT_EQ(v, 86400, "max");
	ASSERT_EQ(tp_parse_u64("86401", 86400, &v), -ERANGE, "over max");
	ASSERT_EQ(tp_parse_u64("99999999999999999999999", ~0ULL, &v), -ERANGE, "overflow");
	ASSERT_EQ(tp_parse_u64("", 10, &v), -EINVAL, "empty");
	ASSERT_EQ(tp_parse_u64("-1", 10, &v), -EINVAL, "negative");
	ASSERT_EQ(tp_parse_u64("1.5", 10, &v), -EINVAL, "fraction");
	ASSERT_EQ(tp_parse_u64("5s", 10, &v), -EINVAL, "suffix");
}

/* Parses a copy of args (argv must be writable: labels are split in place). */
static int parse(struct run_opts *o, int n, ...)
{
	static char store[80][300];
	static char *argv[80];
	va_list ap;

	argv[0] = "run";
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		snprintf(store[i], sizeof(store[i]), "%s", va_arg(ap, const char *));
		argv[i + 1] = store[i];
	}
	va_end(ap);
	argv[n + 1] = NULL;
	return run_parse_args(n + 1, argv, o);
}

TEST(TIER_UNIT, run_options)
{
	struct run_opts o;

	ASSERT_OK(parse(&o, 9, "--id", "job-1", "--label", "pool=ci", "--grace", "0", "--quiet",
			"--", "sh"),
		  "full option set");
	ASSERT_STREQ(o.id, "job-1", "id");
	ASSERT_EQ(o.nlabels, 1, "labels");
	ASSERT_EQ(o.grace_s, 0, "grace");
	ASSERT_TRUE(o.quiet, "quiet");
	ASSERT_EQ(o.argc, 1, "command argc");
	ASSERT_STREQ(o.argv[0], "sh", "command");

	ASSERT_OK(parse(&o, 3, "echo", "--id", "x"), "options after CMD belong to CMD");
	ASSERT_EQ(o.argc, 3, "CMD keeps its own options");
	ASSERT_EQ(o.grace_s, RUN_GRACE_DEFAULT, "default grace");

	ASSERT_EQ(parse(&o, 2, "--bogus", "true"), -EINVAL, "unknown option");
	ASSERT_EQ(parse(&o, 1, "--id"), -EINVAL, "missing value");
	ASSERT_EQ(parse(&o, 0), -EINVAL, "no command");
	ASSERT_EQ(parse(&o, 1, "--"), -EINVAL, "no command after --");
	ASSERT_EQ(parse(&o, 3, "--id", "a/b", "true"), -EINVAL, "bad id");
	ASSERT_EQ(parse(&o, 3, "--label", "nokv", "true"), -EINVAL, "bad label");
	ASSERT_EQ(parse(&o, 5, "--label", "a=1", "--label", "a=2", "true"), -EINVAL,
		  "duplicate label");
	ASSERT_EQ(parse(&o, 3, "--grace", "-1", "true"), -EINVAL, "negative grace");
	ASSERT_EQ(parse(&o, 3, "--grace", "1e9", "true"), -EINVAL, "bad grace");
}

TEST(TIER_UNIT, run_too_many_labels)
{
	static char store[TP_LABELS_MAX + 2][32];
	char *argv[2 * (TP_LABELS_MAX + 1) + 3];
	struct run_opts o;
	int argc = 0;

	argv[argc++] = "run";
	for (int i = 0; i <= TP_LABELS_MAX; i++) {
		snprintf(store[i], sizeof(store[i]), "k%d=v", i);
		argv[argc++] = "--label";
		argv[argc++] = store[i];
	}
	argv[argc++] = "true";
	argv[argc] = NULL;
	ASSERT_EQ(run_parse_args(argc, argv, &o), -EINVAL, "65 labels");
}

/* STYLE: --help stays in step with the parser. */
TEST(TIER_UNIT, run_help_lists_every_option)
{
	static const char *const opts[] = { "--id",	 "--label",	     "--json",
					    "--grace",	 "--keep-leftovers", "--quiet",
					    "--verbose", "--help",	     "--strict" };

	for (size_t i = 0; i < ARRAY_SIZE(opts); i++)
		CHECK(strstr(run_usage, opts[i]), "run --help does not mention %s", opts[i]);
	CHECK(tu_count_long_lines(run_usage, 80) == 0, "run --help is wider than 80 columns");
}

/* STYLE: the README stays in step with the code (the tests run from the repository). */
TEST(TIER_UNIT, readme_lists_every_run_option)
{
	static const char *const opts[] = { "--id",	   "--label",	       "--json",
					    "--grace",	   "--keep-leftovers", "--quiet",
					    "--db",	   "--no-db",	       "--interval",
					    "--config",	   "--perfherder",     "--collect",
					    "--no-daemon", "--rules",	       "--strict" };
	static char readme[65536];

	if (!ASSERT_TRUE(tp_read_file("README.md", readme, sizeof(readme)) > 0, "README.md"))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++)
		CHECK(strstr(readme, opts[i]), "README.md does not mention run %s", opts[i]);
	CHECK(strstr(readme, "make demo") && strstr(readme, "make check"),
	      "README.md's quick start");
}

/* A control-socket field survives the escape and its undoing, tabs and newlines too. */
TEST(TIER_UNIT, control_field_round_trip)
{
	static const char *const fields[] = { "",	    "plain",	   "a\tb",
					      "line\nnext", "back\\slash", "\\t is not a tab",
					      "\t\n\\" };
	char *buf = NULL;
	size_t len;

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		FILE *f = open_memstream(&buf, &len);

		ASSERT_NOT_NULL(f, "memstream");
		control_put_field(f, fields[i]);
		fclose(f);
		CHECK(buf[0] == '\t', "field %zu starts with its tab", i);
		CHECK(!strchr(buf + 1, '\t') && !strchr(buf, '\n'),
		      "field %zu: no raw tab or newline", i);
		ASSERT_STREQ(control_unescape(buf + 1), fields[i], "round trip");
		free(buf);
		buf = NULL;
	}
}

/* collect lists: parsed, refused with a reason, and which figures each one gives. */
TEST(TIER_UNIT, collect_lists)
{
	static const char *const bad[] = { "", "cpu,", ",cpu", "cpu,,io", "disk", "http", "CPU" };
	const char *why;
	unsigned m;
	char buf[64];

	ASSERT_OK(collect_parse("cpu,mem", &m, &why), "cpu,mem");
	ASSERT_EQ(m, COLLECT_CPU | COLLECT_MEM, "its bits");
	ASSERT_STREQ(collect_format(m, buf, sizeof(buf)), "cpu,mem", "written back");
	ASSERT_OK(collect_parse("all", &m, &why), "all");
	ASSERT_STREQ(collect_format(m, buf, sizeof(buf)), "all", "all");
	ASSERT_OK(collect_parse("http,net,io,cpu,mem", &m, &why), "every default one, any order");
	ASSERT_EQ(m, COLLECT_DEFAULT, "is the default");
	ASSERT_STREQ(collect_format(m, buf, sizeof(buf)), "cpu,io,mem,net,http", "named");
	ASSERT_OK(collect_parse("http,net,runq,io,cpu,mem", &m, &why), "every one");
	ASSERT_EQ(m, COLLECT_ALL, "is all");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(collect_parse(bad[i], &m, &why) == -EINVAL, "refused: '%s'", bad[i]);
	ASSERT_TRUE(!collect_has(COLLECT_CPU, "io.blk_read_bytes", false), "block bytes need io");
	ASSERT_TRUE(collect_has(COLLECT_CPU, "io.read_bytes", false), "ioac needs no program");
	ASSERT_TRUE(!collect_has(COLLECT_CPU, "mem.peak_bytes", false), "rss peak needs mem");
	ASSERT_TRUE(collect_has(COLLECT_CPU, "mem.peak_bytes", true), "the cgroup's peak does not");
	ASSERT_TRUE(!collect_has(COLLECT_NET, "http.requests", false), "http needs http");
	ASSERT_TRUE(collect_has(COLLECT_NET, "net.tcp.connects", false), "net");
	ASSERT_TRUE(!collect_has(COLLECT_CPU, "cpu.runq_latency", false),
		    "the histogram needs runq");
	ASSERT_TRUE(collect_has(COLLECT_RUNQ, "cpu.runq_latency", false), "runq");
	ASSERT_TRUE(collect_has(COLLECT_CPU, "cpu.runq_wait_ns", false), "the wait total: cpu");
	ASSERT_TRUE(!collect_has(COLLECT_IO, "cpu.runq_wait_ns", false), "not io");
	ASSERT_TRUE(collect_has(COLLECT_IO, "proc.execs", false), "processes always");
}
