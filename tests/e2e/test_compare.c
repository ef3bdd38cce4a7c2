// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end tests of `stats` and `compare`: the binary over a store of tasks with
 * known figures (compare_data.c), its answers against the percentiles this test
 * computes, and its lines and exit statuses where there is nothing to compare.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "compare_data.h"
#include "harness.h"
#include "store/store.h"
#include "testutil.h"

#define NEAR(got, want, name)                                                                      \
	({                                                                                         \
		double _g = (got), _w = (want);                                                    \
		CHECK(fabs(_g - _w) <= 1e-9 * fabs(_w), "%s: got %.17g, expected %.17g", name, _g, \
		      _w);                                                                         \
	})

/* The store of the table's tasks at a path of this test's own. */
static const char *table_db(void)
{
	const char *db = tu_tmp("compare.db");
	struct store *s = cd_store(db);

	if (!s)
		return NULL;
	store__close(s);
	return db;
}

static void check_quantiles(const struct json *g, const double *vals, size_t n, const char *what)
{
	double *v;

	if (!CHECK(g != NULL, "%s: no such group", what))
		return;
	v = cd_sorted(vals, n);
	ASSERT_EQ(tu_num(g, "tasks"), n, what);
	NEAR(tu_num(g, "min"), v[0], what);
	NEAR(tu_num(g, "p50"), cd_pct(v, n, 0.5), what);
	NEAR(tu_num(g, "p90"), cd_pct(v, n, 0.9), what);
	NEAR(tu_num(g, "p99"), cd_pct(v, n, 0.99), what);
	NEAR(tu_num(g, "max"), v[n - 1], what);
	free(v);
}

TEST(TIER_E2E, stats_are_the_tasks_percentiles)
{
	const char *db = table_db();
	const struct json *j, *g;
	struct tu_result r, r2;
	double vals[CD_TASKS], *v;
	size_t n;

	if (!db)
		return;
	tu_tp(&r, 60, "stats", "cpu.time_ns", "--by", "job", "--json", "--db", db, NULL);
	ASSERT_EQ(r.status, 0, "stats cpu.time_ns --by job --json");
	j = tu_parse_json(r.out);
	ASSERT_STREQ(json_str(j, "metric"), "cpu.time_ns", "metric");
	ASSERT_EQ(json_len(json_get(j, "groups")), 3, "build, lint, (none): not_found is no group");
	n = cd_values(vals, "build", CD_CPU, false);
	check_quantiles(tu_find(json_get(j, "groups"), "value", "build"), vals, n, "build");
	n = cd_values(vals, NULL, CD_CPU, false);
	tu_tp(&r2, 60, "stats", "cpu.time_ns", "--format", "json", "--db", db, NULL);
	check_quantiles(json_at(json_get(tu_parse_json(r2.out), "groups"), 0), vals, n,
			"all tasks");
	tu_tp(&r2, 60, "stats", "cpu.time_ns", "--by", "job", "--format", "json", "--db", db, NULL);
	ASSERT_STREQ(r2.out, r.out, "--format json is --json");

	n = cd_values(vals, NULL, CD_WALL, false);
	tu_tp(&r, 60, "stats", "wall_ns", "--json", "--db", db, NULL);
	ASSERT_EQ(r.status, 0, "stats wall_ns: the tasks' rows");
	check_quantiles(json_at(json_get(tu_parse_json(r.out), "groups"), 0), vals, n, "wall_ns");

	tu_tp(&r, 60, "stats", "--sizing", "--json", "--db", db, NULL);
	ASSERT_EQ(r.status, 0, "stats --sizing");
	g = tu_find(json_get(tu_parse_json(r.out), "groups"), "value", "build");
	if (ASSERT_NOT_NULL(g, "the build group")) {
		n = cd_values(vals, "build", CD_CORES, false);
		v = cd_sorted(vals, n);
		ASSERT_EQ(tu_num(g, "ncpu"), 8, "its hosts' cores");
		NEAR(tu_num(json_get(g, "cpu.peak_cores"), "p90"), cd_pct(v, n, 0.9),
		     "p90 of peak cores");
		NEAR(tu_num(json_get(g, "cpu.peak_cores"), "p90_share"), cd_pct(v, n, 0.9) / 8,
		     "of 8 cores");
		free(v);
	}
	tu_tp(&r, 60, "stats", "--sizing", "--db", db, NULL);
	CHECK(r.status == 0 && strstr(r.out, " of 8 ("), "sizing in words: %s", r.out);

	tu_tp(&r, 60, "stats", "--db", db, NULL);
	ASSERT_EQ(r.status, 2, "no METRIC, no --sizing: usage");
	tu_tp(&r, 60, "stats", "no.such.metric", "--db", db, NULL);
	ASSERT_EQ(r.status, 1, "a metric no task has");
}

TEST(TIER_E2E, compare_bands_flags_and_no_history)
{
	const char *db = table_db();
	const struct json *j, *f;
	struct tu_result r;
	double vals[CD_TASKS], *v;
	size_t n;

	if (!db)
		return;
	tu_tp(&r, 60, "compare", CD_TARGET, "--format", "json", "--db", db, NULL);
	ASSERT_EQ(r.status, 0, "compare: 0, flagged or not");
	j = tu_parse_json(r.out);
	n = cd_values(vals, "build", CD_CPU, true);
	ASSERT_EQ(tu_num(j, "history"), n, "the earlier build tasks that ran");
	ASSERT_STREQ(json_str(j, "value"), "build", "its job");
	f = tu_find(json_get(j, "figures"), "name", "cpu.time_ns");
	if (ASSERT_NOT_NULL(f, "cpu.time_ns compared")) {
		v = cd_sorted(vals, n);
		NEAR(tu_num(f, "p10"), cd_pct(v, n, 0.1), "p10");
		NEAR(tu_num(f, "p50"), cd_pct(v, n, 0.5), "median");
		NEAR(tu_num(f, "p90"), cd_pct(v, n, 0.9), "p90");
		ASSERT_STREQ(json_str(f, "flag"), "above", "40 s of CPU is above the band");
		free(v);
	}
	f = tu_find(json_get(j, "phases"), "name", "compile");
	ASSERT_EQ(json_len(json_get(j, "phases")), 1, "compile only: package has no history");
	n = cd_values(vals, "build", CD_PHASE_CPU, true);
	ASSERT_EQ(f ? tu_num(f, "tasks") : 0, n, "the tasks that ran compile");

	tu_tp(&r, 60, "compare", CD_TARGET, "--format", "markdown", "--db", db, NULL);
	ASSERT_EQ(r.status, 0, "markdown");
	CHECK(strstr(r.out, "| figure | this task | median | p10 – p90 | tasks | |\n") &&
		      strstr(r.out, "| `cpu.time_ns` | **40.00 s** |") &&
		      strstr(r.out, "▲ above") && strstr(r.out, "<details><summary>1 phase "),
	      "a job-summary table: %s", r.out);
	tu_tp(&r, 60, "compare", CD_TARGET, "--db", db, NULL);
	CHECK(r.status == 0 && strstr(r.out, "\ncpu.time_ns ") && strstr(r.out, "above\n"),
	      "text: %s", r.out);

	tu_tp(&r, 60, "compare", "b-1", "--db", db, NULL);
	ASSERT_EQ(r.status, 0, "the first task: no history is no error");
	CHECK(!strncmp(r.out, "task b-1: no history", 20) && !strchr(r.out, '\n')[1],
	      "one line: %s", r.out);
	tu_tp(&r, 60, "compare", "b-1", "--by", "team", "--json", "--db", db, NULL);
	j = tu_parse_json(r.out);
	CHECK(r.status == 0 && tu_num(j, "history") == 0 && json_get(j, "value") &&
		      json_get(j, "value")->type == JSON_NULL &&
		      json_len(json_get(j, "figures")) == 0 && *json_str(j, "reason"),
	      "a label the task lacks: an empty comparison, and why: %s", r.out);
	tu_tp(&r, 60, "compare", CD_TARGET, "--last", "0", "--db", db, NULL);
	ASSERT_EQ(r.status, 2, "--last 0");
	tu_tp(&r, 60, "compare", "no-such-task", "--db", db, NULL);
	ASSERT_EQ(r.status, 1, "an unknown task");
}
