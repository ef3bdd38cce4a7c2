// SPDX-License-Identifier: GPL-2.0
/* Unit tests: statsd lines and phase markers of the metrics socket, and their limits. */
#include <stdio.h>

#include "base/util.h"
#include "harness.h"
#include "model/user_metrics.h"

static enum um_reject parse(const char *s, struct um_line *l)
{
	return um_parse_line(s, strlen(s), l);
}

TEST(TIER_UNIT, statsd_lines)
{
	struct um_line l;

	ASSERT_EQ(parse("builds:1|c", &l), UM_OK, "counter");
	ASSERT_EQ(l.kind, UM_COUNTER, "kind");
	ASSERT_STREQ(l.key, "builds", "name");
	ASSERT_EQ(parse("queue.depth:-3.5|g", &l), UM_OK, "gauge");
	ASSERT_TRUE(l.value == -3.5, "gauge value");
	ASSERT_EQ(parse("link_ms:250|ms|@0.5", &l), UM_OK, "timer with a sample rate");
	ASSERT_EQ(l.kind, UM_TIMER, "timer");
	ASSERT_EQ(parse("req:1|c|#status:503,host:s3", &l), UM_OK, "tags");
	ASSERT_STREQ(l.key, "req{host=s3,status=503}", "tags sorted into the key");
	ASSERT_EQ(parse("req:1|c|#host:s3,status:503", &l), UM_OK, "same tags, other order");
	ASSERT_STREQ(l.key, "req{host=s3,status=503}", "one key whatever the order");
	ASSERT_EQ(parse("phase:begin:checkout", &l), UM_OK, "phase begin");
	ASSERT_EQ(l.kind, UM_PHASE_BEGIN, "begin");
	ASSERT_STREQ(l.key, "checkout", "phase name");
	ASSERT_EQ(parse("phase:end:checkout", &l), UM_OK, "phase end");
	ASSERT_EQ(l.kind, UM_PHASE_END, "end");
}

TEST(TIER_UNIT, statsd_refusals)
{
	static const struct {
		const char *line;
		enum um_reject why;
	} cases[] = {
		{ "nocolon", UM_BAD_NAME },	    { ":1|c", UM_BAD_NAME },
		{ "a b:1|c", UM_BAD_NAME },	    { "x:|c", UM_BAD_VALUE },
		{ "x:abc|c", UM_BAD_VALUE },	    { "x:inf|c", UM_BAD_VALUE },
		{ "x:nan|g", UM_BAD_VALUE },	    { "x:1", UM_BAD_VALUE },
		{ "x:1|h", UM_BAD_TYPE },	    { "x:1|c|x", UM_BAD_TYPE },
		{ "x:1|c|#", UM_BAD_TYPE },	    { "x:1|c|#k", UM_BAD_TAG },
		{ "x:1|c|#k:", UM_BAD_TAG },	    { "x:1|c|#:v", UM_BAD_TAG },
		{ "phase:start:x", UM_BAD_TYPE },   { "phase:begin:", UM_BAD_NAME },
		{ "phase:begin:a b", UM_BAD_NAME },
	};
	char big[UM_LINE_MAX + 8], tags[2048] = "x:1|c|#";
	struct um_line l;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		enum um_reject r = parse(cases[i].line, &l);

		CHECK(r == cases[i].why, "'%s': %s, expected %s", cases[i].line, um_reject_names[r],
		      um_reject_names[cases[i].why]);
	}
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ASSERT_EQ(parse(big, &l), UM_TOO_LONG, "over 4 KiB");
	memset(big, 'a', UM_NAME_MAX + 1);
	strcpy(big + UM_NAME_MAX + 1, ":1|c");
	ASSERT_EQ(parse(big, &l), UM_BAD_NAME, "a 201-character name");
	for (int i = 0; i < 65; i++) {
		size_t n = strlen(tags);

		snprintf(tags + n, sizeof(tags) - n, "%sk%d:v", i ? "," : "", i);
	}
	ASSERT_EQ(parse(tags, &l), UM_TOO_MANY_TAGS, "65 tags");
}

TEST(TIER_UNIT, user_metric_table)
{
	struct um_table t;
	struct um_line l;
	char line[64];

	ASSERT_OK(um_table__init(&t), "init");
	parse("a:2|c", &l);
	um_table__add(&t, &l);
	parse("a:3|c", &l);
	um_table__add(&t, &l);
	parse("g:5|g", &l);
	um_table__add(&t, &l);
	parse("g:1|g", &l);
	um_table__add(&t, &l);
	parse("a:1|g", &l);
	ASSERT_EQ(um_table__add(&t, &l), UM_BAD_TYPE, "a name keeps its first kind");
	ASSERT_TRUE(t.n == 2 && t.m[0].sum == 5 && t.m[1].last == 1 && t.m[1].max == 5,
		    "sums, last and max");
	for (int i = 0; i < UM_NAMES_MAX; i++) {
		snprintf(line, sizeof(line), "n%d:1|c", i);
		parse(line, &l);
		if (um_table__add(&t, &l) != UM_OK) {
			ASSERT_EQ(i, UM_NAMES_MAX - 2, "the 1001st distinct name is refused");
			break;
		}
	}
	ASSERT_EQ(t.n, UM_NAMES_MAX, "1000 names kept");
	parse("a:1|c", &l);
	ASSERT_EQ(um_table__add(&t, &l), UM_OK, "a known name still counts");
	um_table__fini(&t);
}
