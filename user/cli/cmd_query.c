// SPDX-License-Identifier: GPL-2.0
/* Queries over stored tasks: `list`, `show`, `hist`, `series` and `count`. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "model/config.h"
#include "model/series.h"
#include "model/task_json.h"
#include "store/query.h"
#include "store/store.h"
#include "view/summary.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define MAX_FILTERS 16
#define SERIES_POINTS_MAX 10000

const char list_usage[] =
	"usage: taskprobe list [--since DUR] [--label K=V]... [--status S] [--limit N]\n"
	"Stored tasks, newest first.\n"
	"  --since DUR     only tasks started within DUR (90s, 30m, 12h, 7d, 2w)\n"
	"  --label K=V     only tasks with this label (repeatable; host labels too)\n"
	"  --status S      running, exited, signaled, lost, not_found, exec_failed,\n"
	"                  ended or interrupted\n"
	"  --limit N       at most N tasks (default 50)\n";
#define HOST_HELP                                                                                  \
	"  --host NAME     the task of this worker host (a glob), where hosts reuse ids\n"         \
	"                  (a fleet's --db postgresql://...)\n"
const char show_usage[] = "usage: taskprobe show ID [--host NAME]\n"
			  "One stored task's summary (the newest with that id).\n" HOST_HELP;
const char hist_usage[] =
	"usage: taskprobe hist ID [NAME] [--host NAME]\nA stored task's histograms as text bars: "
	"cpu.runq_latency (runq),\nio.latency (io), net.tcp.connect_latency (tcp_connect).\n" HOST_HELP;
const char series_usage[] =
	"usage: taskprobe series ID [--points N] [--host NAME]\n"
	"A stored task's time series in N buckets over its life (default 20), each with\n"
	"min, mean and max, so that a one-sample spike survives.\n" HOST_HELP;
const char count_usage[] =
	"usage: taskprobe count METRIC [--since DUR] [--label K=V]... [--by LABEL]\n"
	"                       [--host GLOB]\n"
	"A metric summed over stored tasks, grouped by a label (host labels included:\n"
	"host, kernel, cpu_model, ncpu, mem_total, instance_type, worker_pool).\n"
	"  --host GLOB     for net.tcp.*, net.tx/rx_bytes and http.* metrics: only remote\n"
	"                  hosts whose name (as the task resolved it, or the HTTP Host)\n"
	"                  or address matches, e.g. '*.s3.amazonaws.com', '10.0.*';\n"
	"                  for other metrics: the worker host's name\n";

/* Options every query takes, plus the ones a command allows. */
struct qopts {
	const char *cmd;
	const char *db;
	const char *config;
	bool json;
	__u64 since_ns;
	bool have_since;
	struct label filters[MAX_FILTERS];
	int nfilters;
	const char *status;
	long limit;
	const char *by;
	const char *host;
	long points;
	char *args[2];
	int nargs;
};

enum { Q_SINCE = 0x200, Q_LABEL, Q_STATUS, Q_LIMIT, Q_BY, Q_POINTS };

static int query_opt(void *ctx, int opt, char *arg)
{
	struct qopts *q = ctx;
	const char *cmd = q->cmd, *why;
	__u64 n;

	switch (opt) {
	case Q_SINCE:
		if (tp_parse_duration(arg, &q->since_ns)) {
			tp_err("%s: invalid --since '%.32s': use 90s, 30m, 12h, 7d or 2w", cmd,
			       arg);
			return -EINVAL;
		}
		q->have_since = true;
		return 0;
	case Q_LABEL:
		if (q->nfilters >= MAX_FILTERS) {
			tp_err("%s: at most %d --label filters", cmd, MAX_FILTERS);
			return -EINVAL;
		}
		if (tp_parse_label(arg, &q->filters[q->nfilters].key, &q->filters[q->nfilters].val,
				   &why)) {
			tp_err("%s: invalid label '%.64s': %s", cmd, arg, why);
			return -EINVAL;
		}
		q->nfilters++;
		return 0;
	case Q_STATUS:
		if (!store_status_known(arg)) {
			tp_err("%s: invalid --status '%.32s': %s", cmd, arg, store_status_list());
			return -EINVAL;
		}
		q->status = arg;
		return 0;
	case Q_LIMIT:
		if (tp_parse_u64(arg, 1000000, &n) || !n) {
			tp_err("%s: invalid --limit '%.32s': 1 to 1000000", cmd, arg);
			return -EINVAL;
		}
		q->limit = (long)n;
		return 0;
	case Q_POINTS:
		if (tp_parse_u64(arg, SERIES_POINTS_MAX, &n) || !n) {
			tp_err("%s: invalid --points '%.32s': 1 to %d", cmd, arg,
			       SERIES_POINTS_MAX);
			return -EINVAL;
		}
		q->points = (long)n;
		return 0;
	default: /* Q_BY */
		q->by = arg;
		return 0;
	}
}

/* allowed: which of since/label/status/limit/by/host/points this command takes. */
static int parse_query(int argc, char **argv, const char *allowed, int min_args, int max_args,
		       const char *usage, struct qopts *q)
{
	static const struct option all[] = {
		{ "since", required_argument, NULL, Q_SINCE },
		{ "label", required_argument, NULL, Q_LABEL },
		{ "status", required_argument, NULL, Q_STATUS },
		{ "limit", required_argument, NULL, Q_LIMIT },
		{ "by", required_argument, NULL, Q_BY },
		{ "points", required_argument, NULL, Q_POINTS },
	};
	struct option own[ARRAY_SIZE(all) + 1];
	struct cli_cmd cmd = {
		.name = argv[0],
		.usage = usage,
		.shared = SHARED_DB | SHARED_CONFIG | SHARED_JSON | SHARED_VERBOSE,
		.own = own,
		.own_opt = query_opt,
		.ctx = q,
	};
	struct shared_opts so;
	size_t n = 0;
	int rc;

	memset(q, 0, sizeof(*q));
	q->cmd = argv[0];
	q->limit = 50;
	q->points = 20;
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if (strstr(allowed, all[i].name))
			own[n++] = all[i];
	memset(&own[n], 0, sizeof(own[n]));
	if (strstr(allowed, "host"))
		cmd.shared |= SHARED_HOST;
	rc = cli_parse(argc, argv, &cmd, &so);
	if (rc)
		return rc;
	q->db = so.db;
	q->config = so.config;
	q->json = so.json;
	q->host = so.host;
	while (optind < argc && q->nargs < 2)
		q->args[q->nargs++] = argv[optind++];
	if (optind < argc || q->nargs < min_args || q->nargs > max_args) {
		tp_err("%s: wrong number of arguments; %.*s", q->cmd, (int)strcspn(usage, "\n"),
		       usage);
		return -EINVAL;
	}
	if (q->nargs && strcmp(q->cmd, "count") && !tp_valid_id(q->args[0])) {
		tp_err("%s: invalid task id '%.64s': use " TP_ID_RULE, q->cmd, q->args[0]);
		return -EINVAL;
	}
	return 0;
}

static struct store *open_db(const struct qopts *q)
{
	return query_open_store(q->db, q->config);
}

static void to_filter(const struct qopts *q, struct store_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->since_ns = q->have_since ? (__s64)(tp_realtime_ns() - q->since_ns) : 0;
	f->labels = q->filters;
	f->nlabels = q->nfilters;
	f->status = q->status;
}

struct list_out {
	bool json;
	bool hosts; /* a fleet's list: each task's host too */
	struct jw w;
};

static int list_task(void *ctx, const struct store_task_row *r)
{
	struct list_out *lo = ctx;
	char when[40], wall[32], cpu[32], mem[32];
	struct jw *w = &lo->w;

	if (lo->json) {
		query_json_task(w, r);
		return 0;
	}
	tp_fmt_time(when, sizeof(when), r->start_ns);
	/* "MM-DD HH:MM:SS": the year is rarely news, and the line stays in 80 columns. */
	when[10] = ' ';
	when[19] = '\0';
	if (lo->hosts)
		printf("%-20.20s ", r->host ? r->host : "");
	printf("%-25.25s %-11s %-14s %8s %8s %9s\n", r->id, r->status, when + 5,
	       r->ended ? tp_fmt_dur(wall, sizeof(wall), r->wall_ns) : "-",
	       r->ended ? tp_fmt_dur(cpu, sizeof(cpu), (__u64)r->cpu_ns) : "-",
	       r->ended ? tp_fmt_bytes(mem, sizeof(mem), (__u64)r->peak_mem_bytes) : "-");
	return 0;
}

int cmd_list(int argc, char **argv)
{
	struct list_out lo = { 0 };
	struct store_filter f;
	struct qopts q;
	struct store *s;
	int rc = parse_query(argc, argv, "since label status limit", 0, 0, list_usage, &q);

	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	s = open_db(&q);
	if (!s)
		return EXIT_RUNTIME;
	lo.json = q.json;
	lo.hosts = store__is_fleet(s);
	if (q.json) {
		jw_init(&lo.w, stdout, true);
		jw_arr_begin(&lo.w);
	} else {
		if (lo.hosts)
			printf("%-20s ", "HOST");
		printf("%-25s %-11s %-14s %8s %8s %9s\n", "ID", "STATUS", "START (UTC)", "WALL",
		       "CPU", "PEAK MEM");
	}
	to_filter(&q, &f);
	rc = store__list(s, &f, q.limit, list_task, &lo);
	if (q.json)
		jw_arr_end(&lo.w);
	store__close(s);
	return rc < 0 ? EXIT_RUNTIME : 0;
}

/*
 * The preamble of every per-task command: options, database, task. NULL when the
 * command ends here, with its exit status in *ret (0 after --help).
 */
static struct store *open_task(int argc, char **argv, const char *allowed, int max_args,
			       const char *usage, struct qopts *q, struct store_task *t, int *ret)
{
	int rc = parse_query(argc, argv, allowed, 1, max_args, usage, q);
	struct store *s;

	memset(t, 0, sizeof(*t));
	*ret = rc > 0 ? 0 : rc < 0 ? EXIT_USAGE : EXIT_RUNTIME;
	if (rc)
		return NULL;
	s = open_db(q);
	if (!s)
		return NULL;
	rc = query_find_task(s, q->args[0], q->host, t, NULL);
	if (rc) {
		store__close(s);
		s = NULL;
	}
	return s;
}

int cmd_show(int argc, char **argv)
{
	struct task_record t;
	struct json *j = NULL;
	struct store_task ref;
	struct qopts q;
	struct store *s;
	int ret;

	s = open_task(argc, argv, "host", 1, show_usage, &q, &ref, &ret);
	if (!s)
		return ret;
	ret = EXIT_RUNTIME;
	if (!ref.record) {
		/* Still running, or lost: no figures were written, its series may have been. */
		if (q.json) {
			struct jw w;

			jw_init(&w, stdout, true);
			jw_obj_begin(&w);
			jw_kstr(&w, "id", q.args[0]);
			jw_kstr(&w, "status", ref.status);
			jw_ku64(&w, "wall_ns", ref.wall_ns);
			jw_obj_end(&w);
		} else {
			printf("task %s: %s for %.1f s; no figures yet ('taskprobe series %s' shows "
			       "what was flushed)\n",
			       q.args[0], ref.status, ref.wall_ns / 1e9, q.args[0]);
		}
		ret = 0;
		goto out;
	}
	if (q.json) {
		fputs(ref.record, stdout);
		fputc('\n', stdout);
		ret = 0;
		goto out;
	}
	j = json_parse(ref.record, strlen(ref.record), NULL, 0);
	if (!j || task_record__from_json(&t, j)) {
		tp_err("the stored record of '%s' is damaged", q.args[0]);
		goto out;
	}
	t.all_endpoints = true;
	task_record__print_summary(stdout, &t);
	task_record__fini(&t);
	ret = 0;
out:
	json_free(j);
	free(ref.record);
	store__close(s);
	return ret;
}

struct hist_out {
	bool json;
	struct jw w;
	int found;
};

static int hist_one(void *ctx, const struct store_hist_row *r)
{
	struct hist_out *ho = ctx;
	struct jw *w = &ho->w;
	char a[32], b[32];

	ho->found++;
	if (ho->json) {
		query_json_hist(w, r);
		return 0;
	}
	printf("%s: %llu values, p50 %s, p99 %s\n", r->name, (unsigned long long)r->h.count,
	       tp_fmt_dur(a, sizeof(a), tp_hist__quantile(&r->h, 0.5)),
	       tp_fmt_dur(b, sizeof(b), tp_hist__quantile(&r->h, 0.99)));
	tp_hist__print(stdout, &r->h, 1, "nsecs");
	return 0;
}

int cmd_hist(int argc, char **argv)
{
	struct hist_out ho = { 0 };
	struct store_task ref;
	struct qopts q;
	struct store *s;
	int ret, err;

	s = open_task(argc, argv, "host", 2, hist_usage, &q, &ref, &ret);
	if (!s)
		return ret;
	ret = EXIT_RUNTIME;
	ho.json = q.json;
	if (q.json) {
		jw_init(&ho.w, stdout, true);
		jw_obj_begin(&ho.w);
	}
	err = store__histograms(s, ref.tid, query_hist_name(q.nargs > 1 ? q.args[1] : NULL),
				hist_one, &ho);
	if (q.json)
		jw_obj_end(&ho.w);
	if (err)
		goto out;
	if (!ho.found && q.nargs > 1) {
		tp_err("task '%s' has no histogram '%s' (cpu.runq_latency or runq, io.latency or io, "
		       "net.tcp.connect_latency or tcp_connect; runq is collected with collect "
		       "= all or ...,runq)",
		       q.args[0], q.args[1]);
		goto out;
	}
	ret = 0;
out:
	free(ref.record);
	store__close(s);
	return ret;
}

int cmd_series(int argc, char **argv)
{
	struct series_point *pts = NULL;
	struct series_bucket *bk = NULL;
	const struct json *phases;
	struct json *rec = NULL;
	char pbuf[32];
	struct store_task ref;
	size_t n = 0;
	struct qopts q;
	struct store *s;
	struct jw w;
	int ret, damaged;

	s = open_task(argc, argv, "points host", 1, series_usage, &q, &ref, &ret);
	if (!s)
		return ret;
	ret = EXIT_RUNTIME;
	rec = ref.record ? json_parse(ref.record, strlen(ref.record), NULL, 0) : NULL;
	phases = json_get(rec, "phases");
	if (store__series(s, ref.tid, &pts, &n, &damaged))
		goto out;
	if (damaged)
		tp_err("%d series block%s of '%s' damaged; showing the others", damaged,
		       damaged > 1 ? "s are" : " is", q.args[0]);
	bk = calloc((size_t)q.points, sizeof(*bk));
	if (!bk || series_buckets(pts, n, ref.wall_ns / 1000000, (int)q.points, bk))
		goto out;
	if (q.json) {
		jw_init(&w, stdout, true);
		query_json_series(&w, q.args[0], &ref, rec, n, bk, (int)q.points);
	} else {
		char m[32], r[32], wr[32];

		printf("%8s %17s %10s %10s %10s %5s %s\n", "T", "CORES min/avg/max", "MEM max",
		       "READ/s", "WRITE/s", "PROCS", "PHASE");
		for (long b = 0; b < q.points; b++) {
			if (!bk[b].count) {
				printf("%7.1fs %17s\n", bk[b].t_ms / 1000.0, "-");
				continue;
			}
			printf("%7.1fs %5.2f/%5.2f/%5.2f %10s %10s %10s %5.0f %-.12s\n",
			       bk[b].t_ms / 1000.0, bk[b].min[0] / 1000, bk[b].mean[0] / 1000,
			       bk[b].max[0] / 1000, tp_fmt_bytes(m, sizeof(m), (__u64)bk[b].max[1]),
			       tp_fmt_bytes(r, sizeof(r), (__u64)bk[b].max[2]),
			       tp_fmt_bytes(wr, sizeof(wr), (__u64)bk[b].max[3]), bk[b].max[4],
			       bk[b].max[SERIES_PHASE] > 0
				       ? query_phase_at(phases, (size_t)bk[b].max[SERIES_PHASE],
							pbuf, sizeof(pbuf))
				       : "");
		}
	}
	ret = 0;
out:
	free(bk);
	free(pts);
	json_free(rec);
	free(ref.record);
	store__close(s);
	return ret;
}

struct count_out {
	bool json;
	struct jw w;
	long tasks;
	double total;
};

static int count_group(void *ctx, const struct store_count_row *r)
{
	struct count_out *co = ctx;

	co->tasks += r->tasks;
	co->total += r->sum;
	if (co->json)
		query_json_group(&co->w, r);
	else
		printf("%-32.32s %8ld %20.10g\n", r->group, r->tasks, r->sum);
	return 0;
}

int cmd_count(int argc, char **argv)
{
	struct count_out co = { 0 };
	struct store_filter f;
	struct qopts q;
	struct store *s;
	int rc = parse_query(argc, argv, "since label by host", 1, 1, count_usage, &q),
	    ret = EXIT_RUNTIME;

	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	if (!query_valid_name(q.args[0]) || (q.by && !query_valid_name(q.by))) {
		tp_err("count: invalid %s '%.64s': use A-Z a-z 0-9 _ . -",
		       query_valid_name(q.args[0]) ? "label" : "metric",
		       query_valid_name(q.args[0]) ? q.by : q.args[0]);
		return EXIT_USAGE;
	}
	s = open_db(&q);
	if (!s)
		return EXIT_RUNTIME;
	rc = store__has_metric(s, q.args[0]);
	if (rc < 0)
		goto out;
	if (!rc) {
		tp_err("no stored task has metric '%s'; 'taskprobe show --json ID' lists a task's "
		       "metrics",
		       q.args[0]);
		goto out;
	}
	co.json = q.json;
	if (q.json) {
		jw_init(&co.w, stdout, true);
		jw_obj_begin(&co.w);
		jw_kstr(&co.w, "metric", q.args[0]);
		jw_key(&co.w, "by");
		q.by ? jw_str(&co.w, q.by) : jw_null(&co.w);
		jw_key(&co.w, "groups");
		jw_arr_begin(&co.w);
	} else {
		printf("%-32s %8s %20s\n", q.by ? q.by : "", "TASKS", q.args[0]);
	}
	to_filter(&q, &f);
	if (store__count(s, q.args[0], &f, q.by, q.host, count_group, &co))
		goto out;
	if (q.json) {
		jw_arr_end(&co.w);
		jw_ku64(&co.w, "tasks", (__u64)co.tasks);
		jw_kdouble(&co.w, "sum", co.total);
		jw_obj_end(&co.w);
	} else if (q.by) {
		printf("%-32s %8ld %20.10g\n", "total", co.tasks, co.total);
	}
	ret = 0;
out:
	store__close(s);
	return ret;
}
