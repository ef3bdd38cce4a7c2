// SPDX-License-Identifier: GPL-2.0
/*
 * `taskprobe stats METRIC`: a metric's spread over the stored tasks, by a label; and
 * `stats --sizing`: each job's peak cores and memory against its hosts'.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "store/query.h"
#include "store/store.h"
#include "view/compare.h"

#define MAX_FILTERS 16

const char stats_usage[] =
	"usage: taskprobe stats METRIC [--by LABEL] [--since DUR] [--label K=V]...\n"
	"                       [--format text|json] [--db PATH] [--config PATH]\n"
	"       taskprobe stats --sizing [--by LABEL] [--since DUR] [--label K=V]...\n"
	"A metric over the stored tasks that ran to their end: count, min, p50, p90, p99\n"
	"and max (percentile_cont's: linear between the closest ranks), locally or over a\n"
	"fleet (--db postgresql://...), the same figures either way. METRIC: a name of\n"
	"'taskprobe show --json ID' metrics, or wall_ns (the task's wall time).\n"
	"  --by LABEL     one row per value of the label (host labels too: host, ncpu,\n"
	"                 instance_type, worker_pool, ...)\n"
	"  --since DUR    only tasks started within DUR (90s, 30m, 12h, 7d, 2w)\n"
	"  --label K=V    only tasks with this label (repeatable)\n"
	"  --format F     text (default) or json\n"
	"  --sizing       per value of --by (default job) and host size (ncpu, mem_total):\n"
	"                 the p90 of cpu.peak_cores and of mem.peak_bytes against the\n"
	"                 host's cores and memory (\"1.2 of its 8 cores at p90\")\n";

enum { S_BY = 0x200, S_SINCE, S_LABEL, S_FORMAT, S_SIZING };

struct stats_opts {
	const char *by;
	__u64 since_ns;
	bool have_since;
	struct label filters[MAX_FILTERS];
	int nfilters;
	bool json;
	bool sizing;
};

static int stats_opt(void *ctx, int opt, char *arg)
{
	struct stats_opts *o = ctx;
	const char *why;

	switch (opt) {
	case S_BY:
		if (!query_valid_name(arg)) {
			tp_err("stats: invalid --by '%.64s': use A-Z a-z 0-9 _ . -", arg);
			return -EINVAL;
		}
		o->by = arg;
		return 0;
	case S_SINCE:
		if (tp_parse_duration(arg, &o->since_ns)) {
			tp_err("stats: invalid --since '%.32s': use 90s, 30m, 12h, 7d or 2w", arg);
			return -EINVAL;
		}
		o->have_since = true;
		return 0;
	case S_LABEL:
		if (o->nfilters >= MAX_FILTERS) {
			tp_err("stats: at most %d --label filters", MAX_FILTERS);
			return -EINVAL;
		}
		if (tp_parse_label(arg, &o->filters[o->nfilters].key, &o->filters[o->nfilters].val,
				   &why)) {
			tp_err("stats: invalid label '%.64s': %s", arg, why);
			return -EINVAL;
		}
		o->nfilters++;
		return 0;
	case S_FORMAT:
		if (strcmp(arg, "text") && strcmp(arg, "json")) {
			tp_err("stats: --format is text or json, not '%.32s'", arg);
			return -EINVAL;
		}
		o->json = !strcmp(arg, "json");
		return 0;
	default: /* S_SIZING */
		o->sizing = true;
		return 0;
	}
}

struct stats_out {
	const char *metric;
	bool json;
	struct jw w;
	long groups;
};

static int stats_group(void *ctx, const struct store_stats_row *r)
{
	struct stats_out *so = ctx;
	const char *m = so->metric;
	char a[32], b[32], c[32], d[32], e[32];

	so->groups++;
	if (so->json) {
		jw_obj_begin(&so->w);
		jw_kstr(&so->w, "value", r->group[0]);
		jw_ku64(&so->w, "tasks", (__u64)r->tasks);
		jw_kdouble(&so->w, "min", r->min);
		jw_kdouble(&so->w, "p50", r->p50);
		jw_kdouble(&so->w, "p90", r->p90);
		jw_kdouble(&so->w, "p99", r->p99);
		jw_kdouble(&so->w, "max", r->max);
		jw_obj_end(&so->w);
		return 0;
	}
	printf("%-24.24s %7ld %10s %10s %10s %10s %10s\n", r->group[0], r->tasks,
	       compare_fmt(a, sizeof(a), m, r->min), compare_fmt(b, sizeof(b), m, r->p50),
	       compare_fmt(c, sizeof(c), m, r->p90), compare_fmt(d, sizeof(d), m, r->p99),
	       compare_fmt(e, sizeof(e), m, r->max));
	return 0;
}

static int stats_metric(struct store *s, const char *metric, const struct stats_opts *o,
			const struct store_filter *f)
{
	struct stats_out so = { .metric = metric, .json = o->json };
	const char *by[1] = { o->by };
	int err;

	if (o->json) {
		jw_init(&so.w, stdout, true);
		jw_obj_begin(&so.w);
		jw_kstr(&so.w, "metric", metric);
		jw_key(&so.w, "by");
		o->by ? jw_str(&so.w, o->by) : jw_null(&so.w);
		jw_key(&so.w, "groups");
		jw_arr_begin(&so.w);
	} else {
		printf("%-24s %7s %10s %10s %10s %10s %10s\n", o->by ? o->by : "", "TASKS", "MIN",
		       "P50", "P90", "P99", "MAX");
	}
	err = store__stats(s, metric, f, by, o->by ? 1 : 0, stats_group, &so);
	if (o->json) {
		jw_arr_end(&so.w);
		jw_obj_end(&so.w);
	}
	return err;
}

/* A group of --sizing: a label value on one size of host, and its two figures. */
struct sizing_row {
	char *group[3]; /* the label's value, ncpu, mem_total */
	long tasks[2];	/* of cpu.peak_cores, mem.peak_bytes */
	double p90[2], max[2];
};

struct sizing {
	struct sizing_row *rows;
	size_t n, cap;
	int which; /* 0 cores, 1 memory: the query running */
	int err;
};

static int sizing_group(void *ctx, const struct store_stats_row *r)
{
	struct sizing *sz = ctx;
	struct sizing_row *row = NULL;

	for (size_t i = 0; i < sz->n && !row; i++)
		if (!strcmp(sz->rows[i].group[0], r->group[0]) &&
		    !strcmp(sz->rows[i].group[1], r->group[1]) &&
		    !strcmp(sz->rows[i].group[2], r->group[2]))
			row = &sz->rows[i];
	if (!row) {
		if (sz->n == sz->cap) {
			size_t cap = sz->cap ? sz->cap * 2 : 16;
			struct sizing_row *rows = realloc(sz->rows, cap * sizeof(*rows));

			if (!rows) {
				sz->err = -ENOMEM;
				return 1;
			}
			sz->rows = rows;
			sz->cap = cap;
		}
		row = &sz->rows[sz->n++];
		memset(row, 0, sizeof(*row));
		for (int i = 0; i < 3; i++)
			row->group[i] = strdup(r->group[i]);
		if (!row->group[0] || !row->group[1] || !row->group[2]) {
			sz->err = -ENOMEM;
			return 1;
		}
	}
	row->tasks[sz->which] = r->tasks;
	row->p90[sz->which] = r->p90;
	row->max[sz->which] = r->max;
	return 0;
}

/* "1.20 of 8 (15 %)": the figure against the host's, or the figure alone when unknown. */
static void share(char *buf, size_t len, const char *fig, const char *of, double v, double host)
{
	if (host > 0)
		snprintf(buf, len, "%s of %s (%.0f %%)", fig, of, v / host * 100);
	else
		snprintf(buf, len, "%s", fig);
}

static void sizing_print(const struct sizing *sz, const struct stats_opts *o)
{
	struct jw w;

	if (o->json) {
		jw_init(&w, stdout, true);
		jw_obj_begin(&w);
		jw_kstr(&w, "by", o->by);
		jw_key(&w, "groups");
		jw_arr_begin(&w);
	} else {
		printf("%-24s %5s %10s %6s %-24s %s\n", o->by, "NCPU", "MEMORY", "TASKS",
		       "P90 PEAK CORES", "P90 PEAK MEMORY");
	}
	for (size_t i = 0; i < sz->n; i++) {
		const struct sizing_row *r = &sz->rows[i];
		double ncpu = strtod(r->group[1], NULL), mem = strtod(r->group[2], NULL);
		char cores[64], memory[80], a[32], b[32], c[32];

		if (o->json) {
			jw_obj_begin(&w);
			jw_kstr(&w, "value", r->group[0]);
			jw_key(&w, "ncpu");
			ncpu > 0 ? jw_double(&w, ncpu) : jw_null(&w);
			jw_key(&w, "mem_total");
			mem > 0 ? jw_double(&w, mem) : jw_null(&w);
			jw_key(&w, "cpu.peak_cores");
			jw_obj_begin(&w);
			jw_ku64(&w, "tasks", (__u64)r->tasks[0]);
			jw_kdouble(&w, "p90", r->tasks[0] ? r->p90[0] : NAN);
			jw_kdouble(&w, "max", r->tasks[0] ? r->max[0] : NAN);
			jw_kdouble(&w, "p90_share",
				   r->tasks[0] && ncpu > 0 ? r->p90[0] / ncpu : NAN);
			jw_obj_end(&w);
			jw_key(&w, "mem.peak_bytes");
			jw_obj_begin(&w);
			jw_ku64(&w, "tasks", (__u64)r->tasks[1]);
			jw_kdouble(&w, "p90", r->tasks[1] ? r->p90[1] : NAN);
			jw_kdouble(&w, "max", r->tasks[1] ? r->max[1] : NAN);
			jw_kdouble(&w, "p90_share", r->tasks[1] && mem > 0 ? r->p90[1] / mem : NAN);
			jw_obj_end(&w);
			jw_obj_end(&w);
			continue;
		}
		snprintf(a, sizeof(a), "%.2f", r->p90[0]);
		share(cores, sizeof(cores), r->tasks[0] ? a : "-", r->group[1], r->p90[0],
		      r->tasks[0] ? ncpu : 0);
		share(memory, sizeof(memory),
		      r->tasks[1] ? compare_fmt(b, sizeof(b), "mem.peak_bytes", r->p90[1]) : "-",
		      compare_fmt(c, sizeof(c), "mem.peak_bytes", mem), r->p90[1],
		      r->tasks[1] ? mem : 0);
		printf("%-24.24s %5.5s %10s %6ld %-24s %s\n", r->group[0], r->group[1],
		       mem > 0 ? c : r->group[2],
		       r->tasks[0] > r->tasks[1] ? r->tasks[0] : r->tasks[1], cores, memory);
	}
	if (o->json) {
		jw_arr_end(&w);
		jw_obj_end(&w);
	}
}

static int stats_sizing(struct store *s, struct stats_opts *o, const struct store_filter *f)
{
	static const char *const metrics[2] = { "cpu.peak_cores", "mem.peak_bytes" };
	const char *by[3] = { o->by, "ncpu", "mem_total" };
	struct sizing sz = { 0 };
	int err = 0;

	for (int i = 0; i < 2 && !err; i++) {
		sz.which = i;
		err = store__stats(s, metrics[i], f, by, 3, sizing_group, &sz);
		if (!err)
			err = sz.err;
	}
	if (!err)
		sizing_print(&sz, o);
	else if (err == -ENOMEM)
		tp_err("stats: out of memory");
	for (size_t i = 0; i < sz.n; i++)
		for (int k = 0; k < 3; k++)
			free(sz.rows[i].group[k]);
	free(sz.rows);
	return err;
}

int cmd_stats(int argc, char **argv)
{
	static const struct option own[] = {
		{ "by", required_argument, NULL, S_BY },
		{ "since", required_argument, NULL, S_SINCE },
		{ "label", required_argument, NULL, S_LABEL },
		{ "format", required_argument, NULL, S_FORMAT },
		{ "sizing", no_argument, NULL, S_SIZING },
		{ 0 },
	};
	struct stats_opts o = { 0 };
	const struct cli_cmd cmd = {
		.name = "stats",
		.usage = stats_usage,
		.shared = SHARED_DB | SHARED_CONFIG | SHARED_JSON | SHARED_VERBOSE,
		.own = own,
		.own_opt = stats_opt,
		.ctx = &o,
	};
	const char *metric = NULL;
	struct store_filter f = { 0 };
	struct shared_opts so;
	struct store *s;
	int rc, ret = 1;

	rc = cli_parse(argc, argv, &cmd, &so);
	if (rc)
		return rc > 0 ? 0 : 2;
	o.json = o.json || so.json;
	if (optind < argc)
		metric = argv[optind++];
	if (optind < argc || !metric == !o.sizing) {
		tp_err("stats: one METRIC, or --sizing; see 'taskprobe stats --help'");
		return 2;
	}
	if (metric && !query_valid_name(metric)) {
		tp_err("stats: invalid metric '%.64s': use A-Z a-z 0-9 _ . -", metric);
		return 2;
	}
	if (o.sizing && !o.by)
		o.by = "job";
	s = query_open_store(so.db, so.config);
	if (!s)
		return 1;
	f.since_ns = o.have_since ? (__s64)(tp_realtime_ns() - o.since_ns) : 0;
	f.labels = o.filters;
	f.nlabels = o.nfilters;
	if (o.sizing) {
		ret = stats_sizing(s, &o, &f) ? 1 : 0;
		goto out;
	}
	rc = strcmp(metric, STORE_WALL) ? store__has_metric(s, metric) : 1;
	if (rc < 0)
		goto out;
	if (!rc) {
		tp_err("stats: no stored task has metric '%s'; 'taskprobe show --json ID' lists a "
		       "task's metrics",
		       metric);
		goto out;
	}
	ret = stats_metric(s, metric, &o, &f) ? 1 : 0;
out:
	store__close(s);
	return ret;
}
