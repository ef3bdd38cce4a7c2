// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of stats and compare: quantile_cont against values worked out by hand,
 * and the store's answers against percentiles this file computes from the figures it
 * stored itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/quantile.h"
#include "harness.h"
#include "store/compare.h"
#include "store/store.h"
#include "testutil.h"
#include "compare_data.h"

/* Within 1e-9 of want: the same operations give the same double, a rounding apart at worst. */
#define NEAR(got, want, name)                                                                      \
	({                                                                                         \
		double _g = (got), _w = (want);                                                    \
		CHECK(fabs(_g - _w) <= 1e-9 * fabs(_w), "%s: got %.17g, expected %.17g", name, _g, \
		      _w);                                                                         \
	})

TEST(TIER_UNIT, quantile_cont_hand_computed)
{
	double v[] = { 40, 15, 50, 35, 20 }; /* sorted: 15 20 35 40 50 */
	double one = 7, two[] = { 1, 2 };

	quantile_sort(v, 5);
	ASSERT_TRUE(v[0] == 15 && v[4] == 50, "sorted");
	/* rank q * (n - 1) = q * 4 */
	CHECK(quantile_cont(v, 5, 0) == 15, "q 0: the least");
	CHECK(quantile_cont(v, 5, 1) == 50, "q 1: the most");
	CHECK(quantile_cont(v, 5, 0.5) == 35, "q 0.5: rank 2 exactly, 35");
	CHECK(quantile_cont(v, 5, 0.25) == 20, "q 0.25: rank 1 exactly, 20");
	NEAR(quantile_cont(v, 5, 0.4), 29, "q 0.4: rank 1.6, 20 + 0.6 * 15");
	NEAR(quantile_cont(v, 5, 0.9), 46, "q 0.9: rank 3.6, 40 + 0.6 * 10");
	NEAR(quantile_cont(v, 5, 0.99), 49.6, "q 0.99: rank 3.96, 40 + 0.96 * 10");
	NEAR(quantile_cont(v, 5, 0.1), 17, "q 0.1: rank 0.4, 15 + 0.4 * 5");
	CHECK(quantile_cont(&one, 1, 0.9) == 7, "one value is every quantile");
	NEAR(quantile_cont(two, 2, 0.1), 1.1, "two values, q 0.1: 1 + 0.1 * 1");
	CHECK(isnan(quantile_cont(v, 0, 0.5)), "no values: NAN");
}

struct rows {
	struct store_stats_row r[8];
	char groups[8][3][32];
	int n;
};

static int keep_row(void *ctx, const struct store_stats_row *r)
{
	struct rows *rs = ctx;

	if (rs->n == 8)
		return 1;
	rs->r[rs->n] = *r;
	for (int i = 0; i < 3; i++) {
		snprintf(rs->groups[rs->n][i], sizeof(rs->groups[0][0]), "%s",
			 r->group[i] ? r->group[i] : "");
		rs->r[rs->n].group[i] = rs->groups[rs->n][i];
	}
	rs->n++;
	return 0;
}

static const struct store_stats_row *group(const struct rows *rs, const char *value)
{
	for (int i = 0; i < rs->n; i++)
		if (!strcmp(rs->r[i].group[0], value))
			return &rs->r[i];
	return NULL;
}

static void check_row(const struct store_stats_row *r, const double *vals, size_t n,
		      const char *what)
{
	char name[96];
	double *v;

	if (!CHECK(r != NULL, "%s: no such group", what))
		return;
	v = cd_sorted(vals, n);
	ASSERT_EQ(r->tasks, n, what);
	snprintf(name, sizeof(name), "%s min", what);
	NEAR(r->min, v[0], name);
	snprintf(name, sizeof(name), "%s p50", what);
	NEAR(r->p50, cd_pct(v, n, 0.5), name);
	snprintf(name, sizeof(name), "%s p90", what);
	NEAR(r->p90, cd_pct(v, n, 0.9), name);
	snprintf(name, sizeof(name), "%s p99", what);
	NEAR(r->p99, cd_pct(v, n, 0.99), name);
	snprintf(name, sizeof(name), "%s max", what);
	NEAR(r->max, v[n - 1], name);
	free(v);
}

/* store__stats over SQLite: each group's figures are those of the tasks that ran. */
TEST(TIER_UNIT, stats_are_percentile_cont_of_the_stored_tasks)
{
	struct store *s = cd_store(tu_tmp("stats.db"));
	struct store_filter f = { 0 };
	struct label only_build = { "job", "build" };
	const char *by[3] = { "job", "ncpu", "mem_total" };
	double vals[CD_TASKS];
	struct rows rs = { 0 };
	size_t n;

	if (!s)
		return;
	ASSERT_OK(store__stats(s, "cpu.time_ns", &f, by, 1, keep_row, &rs), "by job");
	ASSERT_EQ(rs.n, 3, "build, lint and (none): the not_found task has no group of its own");
	ASSERT_STREQ(rs.r[0].group[0], "(none)", "groups in byte order: (none) first");
	ASSERT_STREQ(rs.r[1].group[0], "build", "then build");
	n = cd_values(vals, "build", CD_CPU, false);
	check_row(group(&rs, "build"), vals, n, "build cpu.time_ns");
	n = cd_values(vals, "lint", CD_CPU, false);
	check_row(group(&rs, "lint"), vals, n, "lint cpu.time_ns");

	memset(&rs, 0, sizeof(rs));
	ASSERT_OK(store__stats(s, STORE_WALL, &f, by, 0, keep_row, &rs), "wall_ns, one group");
	ASSERT_EQ(rs.n, 1, "one group");
	ASSERT_STREQ(rs.r[0].group[0], "all", "named all");
	n = cd_values(vals, NULL, CD_WALL, false);
	check_row(&rs.r[0], vals, n, "every task's wall_ns");

	memset(&rs, 0, sizeof(rs));
	f.labels = &only_build;
	f.nlabels = 1;
	ASSERT_OK(store__stats(s, "cpu.peak_cores", &f, by, 3, keep_row, &rs), "sizing's query");
	ASSERT_EQ(rs.n, 1, "the build tasks ran on one size of host");
	ASSERT_STREQ(rs.r[0].group[1], "8", "ncpu");
	ASSERT_STREQ(rs.r[0].group[2], "17179869184", "mem_total");
	n = cd_values(vals, "build", CD_CORES, false);
	check_row(&rs.r[0], vals, n, "build cpu.peak_cores");
	store__close(s);
}

static const struct compare_figure *fig(const struct compare_figure *g, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(g[i].name, name))
			return &g[i];
	return NULL;
}

static void check_band(const struct compare_figure *g, const double *vals, size_t n,
		       const char *what)
{
	char name[96];
	double *v;

	if (!CHECK(g != NULL, "%s: not compared", what))
		return;
	v = cd_sorted(vals, n);
	ASSERT_EQ(g->n, n, what);
	snprintf(name, sizeof(name), "%s p10", what);
	NEAR(g->p10, cd_pct(v, n, 0.1), name);
	snprintf(name, sizeof(name), "%s p50", what);
	NEAR(g->p50, cd_pct(v, n, 0.5), name);
	snprintf(name, sizeof(name), "%s p90", what);
	NEAR(g->p90, cd_pct(v, n, 0.9), name);
	free(v);
}

/* A stored task's record, parsed: the caller frees it. */
static struct json *record_of(struct store *s, const char *id)
{
	struct store_task t;
	struct json *j;

	if (store__find(s, id, NULL, &t))
		return NULL;
	j = t.record ? json_parse(t.record, strlen(t.record), NULL, 0) : NULL;
	free(t.record);
	return j;
}

/*
 * compare__build: the history is the earlier build tasks that ran (not the task, not a
 * later one, not one that never ran, not another job's), the bands their percentiles.
 */
TEST(TIER_UNIT, compare_bands_are_the_historys_percentiles)
{
	struct store *s = cd_store(tu_tmp("compare.db"));
	struct json *rec = s ? record_of(s, CD_TARGET) : NULL;
	double vals[CD_TASKS];
	struct compare c;
	const struct compare_figure *g;
	size_t n;

	if (!ASSERT_NOT_NULL(rec, "the target's record"))
		goto out;
	ASSERT_OK(compare__build(&c, s, rec, "job", "build", 20), "compare");
	n = cd_values(vals, "build", CD_CPU, true);
	ASSERT_EQ(c.history, n, "the history: earlier build tasks that ran");
	ASSERT_EQ(n, 7, "seven of them (the test's own count)");
	check_band(fig(c.figs, c.nfigs, "cpu.time_ns"), vals, n, "cpu.time_ns");
	g = fig(c.figs, c.nfigs, "cpu.time_ns");
	ASSERT_EQ(g ? g->flag : 0, 1, "the target's CPU is above the band");
	n = cd_values(vals, "build", CD_WALL, true);
	check_band(fig(c.figs, c.nfigs, STORE_WALL), vals, n, "wall_ns");
	g = fig(c.figs, c.nfigs, STORE_WALL);
	ASSERT_EQ(g ? g->flag : 9, 0, "its wall time is within");
	n = cd_values(vals, "build", CD_PHASE_CPU, true);
	ASSERT_EQ(c.nphases, 1, "compile compared; package (only the target ran it) not");
	if (c.nphases) {
		ASSERT_STREQ(c.phases[0].name, "compile", "the phase");
		ASSERT_EQ(c.phases[0].n, n, "the tasks that ran compile");
		check_band(fig(c.phases[0].figs, (size_t)c.phases[0].nfigs, "cpu_ns"), vals, n,
			   "compile cpu_ns");
	}
	compare__free(&c);

	/* --last 3: the three newest of them. */
	ASSERT_OK(compare__build(&c, s, rec, "job", "build", 3), "compare --last 3");
	ASSERT_EQ(c.history, 3, "three");
	n = cd_values(vals, "build", CD_CPU, true);
	check_band(fig(c.figs, c.nfigs, "cpu.time_ns"), vals + n - 3, 3, "last 3 cpu.time_ns");
	compare__free(&c);

	/* No label, no history: no error, nothing compared, said why. */
	ASSERT_OK(compare__build(&c, s, rec, "team", NULL, 20), "a label the task lacks");
	CHECK(c.history == 0 && c.why, "no history, and why");
	compare__free(&c);
	ASSERT_OK(compare__build(&c, s, rec, "job", "nobody-runs-this", 20), "a lone value");
	CHECK(c.history == 0 && c.nfigs == 0 && c.why, "no history: no figure kept");
	compare__free(&c);
out:
	json_free(rec);
	store__close(s);
}
