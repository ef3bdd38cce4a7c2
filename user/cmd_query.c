// SPDX-License-Identifier: GPL-2.0
/* Queries over stored tasks: `list`, `show`, `hist`, `series` and `count`. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "series.h"
#include "store.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define MAX_FILTERS 16
#define SERIES_POINTS_MAX 10000

const char list_usage[] =
	"usage: taskprobe list [--since DUR] [--label K=V]... [--status S] [--limit N]\n"
	"Stored tasks, newest first.\n"
	"  --since DUR     only tasks started within DUR (90s, 30m, 12h, 7d, 2w)\n"
	"  --label K=V     only tasks with this label (repeatable; host labels too)\n"
	"  --status S      running, exited, signaled, lost, not_found or exec_failed\n"
	"  --limit N       at most N tasks (default 50)\n";
const char show_usage[] =
	"usage: taskprobe show ID\nOne stored task's summary (the newest with that id).\n";
const char hist_usage[] =
	"usage: taskprobe hist ID [NAME]\nA stored task's histograms as text bars: "
	"cpu.runq_latency (runq),\nio.latency (io), net.tcp.connect_latency (tcp_connect).\n";
const char series_usage[] =
	"usage: taskprobe series ID [--points N]\n"
	"A stored task's time series in N buckets over its life (default 20), each with\n"
	"min, mean and max, so that a one-sample spike survives.\n";
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

enum {
	Q_DB = 0x200,
	Q_CONFIG,
	Q_JSON,
	Q_SINCE,
	Q_LABEL,
	Q_STATUS,
	Q_LIMIT,
	Q_BY,
	Q_HOST,
	Q_POINTS
};

/* allowed: which of since/label/status/limit/by/host/points this command takes. */
static int parse_query(int argc, char **argv, const char *allowed, int min_args, int max_args,
		       const char *usage, struct qopts *q)
{
	static const struct option all[] = {
		{ "db", required_argument, NULL, Q_DB },
		{ "config", required_argument, NULL, Q_CONFIG },
		{ "json", no_argument, NULL, Q_JSON },
		{ "since", required_argument, NULL, Q_SINCE },
		{ "label", required_argument, NULL, Q_LABEL },
		{ "status", required_argument, NULL, Q_STATUS },
		{ "limit", required_argument, NULL, Q_LIMIT },
		{ "by", required_argument, NULL, Q_BY },
		{ "host", required_argument, NULL, Q_HOST },
		{ "points", required_argument, NULL, Q_POINTS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *cmd = argv[0], *why;
	__u64 n;
	int opt;

	memset(q, 0, sizeof(*q));
	q->limit = 50;
	/* Errors in JSON too when --json is anywhere on the line, even after a bad option. */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			tp_json_errors = 1;
	q->points = 20;
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hv", all, NULL)) != -1) {
		const char *name = opt >= Q_SINCE && opt <= Q_POINTS ? all[opt - Q_DB].name : NULL;

		if (name && !strstr(allowed, name)) {
			tp_err("%s: unknown option '--%s'; see 'taskprobe %s --help'", cmd, name,
			       cmd);
			return -EINVAL;
		}
		switch (opt) {
		case Q_DB:
			q->db = optarg;
			break;
		case Q_CONFIG:
			q->config = optarg;
			break;
		case Q_JSON:
			q->json = true;
			break;
		case Q_SINCE:
			if (tp_parse_duration(optarg, &q->since_ns)) {
				tp_err("%s: invalid --since '%.32s': use 90s, 30m, 12h, 7d or 2w",
				       cmd, optarg);
				return -EINVAL;
			}
			q->have_since = true;
			break;
		case Q_LABEL:
			if (q->nfilters >= MAX_FILTERS) {
				tp_err("%s: at most %d --label filters", cmd, MAX_FILTERS);
				return -EINVAL;
			}
			if (tp_parse_label(optarg, &q->filters[q->nfilters].key,
					   &q->filters[q->nfilters].val, &why)) {
				tp_err("%s: invalid label '%.64s': %s", cmd, optarg, why);
				return -EINVAL;
			}
			q->nfilters++;
			break;
		case Q_STATUS:
			if (strcmp(optarg, "running") && strcmp(optarg, "exited") &&
			    strcmp(optarg, "signaled") && strcmp(optarg, "lost") &&
			    strcmp(optarg, "not_found") && strcmp(optarg, "exec_failed")) {
				tp_err("%s: invalid --status '%.32s': running, exited, signaled, lost, "
				       "not_found or exec_failed",
				       cmd, optarg);
				return -EINVAL;
			}
			q->status = optarg;
			break;
		case Q_LIMIT:
			if (tp_parse_u64(optarg, 1000000, &n) || !n) {
				tp_err("%s: invalid --limit '%.32s': 1 to 1000000", cmd, optarg);
				return -EINVAL;
			}
			q->limit = (long)n;
			break;
		case Q_POINTS:
			if (tp_parse_u64(optarg, SERIES_POINTS_MAX, &n) || !n) {
				tp_err("%s: invalid --points '%.32s': 1 to %d", cmd, optarg,
				       SERIES_POINTS_MAX);
				return -EINVAL;
			}
			q->points = (long)n;
			break;
		case Q_BY:
			q->by = optarg;
			break;
		case Q_HOST:
			q->host = optarg;
			break;
		case 'v':
			tp_verbose = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		case ':':
			tp_err("%s: option '%s' needs a value", cmd, argv[optind - 1]);
			return -EINVAL;
		default:
			tp_err("%s: unknown option '%s'; see 'taskprobe %s --help'", cmd,
			       argv[optind - 1], cmd);
			return -EINVAL;
		}
	}
	while (optind < argc && q->nargs < 2)
		q->args[q->nargs++] = argv[optind++];
	if (optind < argc || q->nargs < min_args || q->nargs > max_args) {
		tp_err("%s: wrong number of arguments; %.*s", cmd, (int)strcspn(usage, "\n"),
		       usage);
		return -EINVAL;
	}
	if (q->nargs && strcmp(cmd, "count") && !tp_valid_id(q->args[0])) {
		tp_err("%s: invalid task id '%.64s': use " TP_ID_RULE, cmd, q->args[0]);
		return -EINVAL;
	}
	return 0;
}

static struct store *open_db(const struct qopts *q)
{
	const char *env = getenv("TASKPROBE_DB");
	struct config cfg;

	config_defaults(&cfg);
	if (config_load(&cfg, q->config ? q->config : TP_DEFAULT_CONFIG, q->config != NULL))
		return NULL;
	return store__open(q->db ? q->db : env && *env ? env : cfg.db, false, cfg.db_gid);
}

/* Adds " AND EXISTS(label = value)" for each filter; binds from index *i on. */
static void filter_sql(char *sql, size_t len, const char *task_col, int n)
{
	for (int k = 0; k < n; k++) {
		size_t used = strlen(sql);

		snprintf(sql + used, len - used,
			 " AND EXISTS (SELECT 1 FROM labels f WHERE f.task = %s AND f.key = ? AND "
			 "f.value = ?)",
			 task_col);
	}
}

static int bind_filters(sqlite3_stmt *st, int i, const struct qopts *q)
{
	for (int k = 0; k < q->nfilters; k++) {
		sqlite3_bind_text(st, i++, q->filters[k].key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, i++, q->filters[k].val, -1, SQLITE_STATIC);
	}
	return i;
}

static __s64 since_cutoff(const struct qopts *q)
{
	return q->have_since ? (__s64)(tp_realtime_ns() - q->since_ns) : 0;
}

int cmd_list(int argc, char **argv)
{
	char sql[4096], when[40], wall[32], cpu[32], mem[32];
	struct qopts q;
	sqlite3_stmt *st;
	struct store *s;
	struct jw w;
	long shown = 0;
	int rc = parse_query(argc, argv, "since label status limit", 0, 0, list_usage, &q), step;

	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	s = open_db(&q);
	if (!s)
		return EXIT_RUNTIME;
	snprintf(sql, sizeof(sql),
		 "SELECT t.id, t.status, t.lock, t.start_ns, t.wall_ns, t.exit_status, t.command,"
		 " (SELECT value FROM metrics WHERE task = t.tid AND name = 'cpu.time_ns'),"
		 " (SELECT value FROM metrics WHERE task = t.tid AND name = 'mem.peak_bytes')"
		 " FROM tasks t WHERE t.start_ns >= ?");
	filter_sql(sql, sizeof(sql), "t.tid", q.nfilters);
	strncat(sql, " ORDER BY t.start_ns DESC, t.tid DESC", sizeof(sql) - strlen(sql) - 1);
	if (store__prepare(s, sql, &st)) {
		store__close(s);
		return EXIT_RUNTIME;
	}
	sqlite3_bind_int64(st, 1, since_cutoff(&q));
	bind_filters(st, 2, &q);
	if (q.json) {
		jw_init(&w, stdout, true);
		jw_arr_begin(&w);
	} else {
		printf("%-25s %-11s %-14s %8s %8s %9s\n", "ID", "STATUS", "START (UTC)", "WALL",
		       "CPU", "PEAK MEM");
	}
	while (shown < q.limit && (step = store__step(s, st)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);
		const char *status = store__live_status((const char *)sqlite3_column_text(st, 1),
							(const char *)sqlite3_column_text(st, 2));
		__u64 start = (__u64)sqlite3_column_int64(st, 3);
		bool ended = sqlite3_column_type(st, 4) != SQLITE_NULL;

		if (q.status && strcmp(q.status, status))
			continue;
		shown++;
		tp_fmt_time(when, sizeof(when), start);
		if (q.json) {
			jw_obj_begin(&w);
			jw_kstr(&w, "id", id);
			jw_kstr(&w, "status", status);
			jw_kstr(&w, "start", when);
			jw_ku64(&w, "start_ns", start);
			jw_key(&w, "wall_ns");
			ended ? jw_u64(&w, (__u64)sqlite3_column_int64(st, 4)) : jw_null(&w);
			jw_key(&w, "exit_status");
			ended ? jw_i64(&w, sqlite3_column_int64(st, 5)) : jw_null(&w);
			jw_key(&w, "cpu.time_ns");
			ended ? jw_u64(&w, (__u64)sqlite3_column_double(st, 7)) : jw_null(&w);
			jw_kstr(&w, "command", (const char *)sqlite3_column_text(st, 6));
			jw_obj_end(&w);
			continue;
		}
		/* "MM-DD HH:MM:SS": the year is rarely news, and the line stays in 80 columns. */
		when[10] = ' ';
		when[19] = '\0';
		printf("%-25.25s %-11s %-14s %8s %8s %9s\n", id, status, when + 5,
		       ended ? tp_fmt_dur(wall, sizeof(wall), (__u64)sqlite3_column_int64(st, 4))
			     : "-",
		       ended ? tp_fmt_dur(cpu, sizeof(cpu), (__u64)sqlite3_column_double(st, 7))
			     : "-",
		       ended ? tp_fmt_bytes(mem, sizeof(mem), (__u64)sqlite3_column_double(st, 8))
			     : "-");
	}
	if (q.json)
		jw_arr_end(&w);
	sqlite3_finalize(st);
	store__close(s);
	return step < 0 ? EXIT_RUNTIME : 0;
}

/* The newest stored task with this id: its tid, status (live) and record, or -ENOENT. */
static int find_task(struct store *s, const char *id, __s64 *tid, char *status, size_t slen,
		     char **record, __u64 *wall_ns)
{
	sqlite3_stmt *st;
	int err = -ENOENT;

	if (store__prepare(
		    s,
		    "SELECT tid, status, lock, record, wall_ns, start_ns FROM tasks WHERE id = ? "
		    "ORDER BY start_ns DESC, tid DESC LIMIT 1",
		    &st))
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	switch (store__step(s, st)) {
	case SQLITE_DONE:
		break;
	case SQLITE_ROW: {
		const char *rec = (const char *)sqlite3_column_text(st, 3);

		*tid = sqlite3_column_int64(st, 0);
		snprintf(status, slen, "%s",
			 store__live_status((const char *)sqlite3_column_text(st, 1),
					    (const char *)sqlite3_column_text(st, 2)));
		*record = rec ? strdup(rec) : NULL;
		/* A task without an end: its life so far. */
		*wall_ns = sqlite3_column_type(st, 4) != SQLITE_NULL
				   ? (__u64)sqlite3_column_int64(st, 4)
				   : tp_realtime_ns() - (__u64)sqlite3_column_int64(st, 5);
		err = 0;
		break;
	}
	default:
		err = -EIO;
	}
	sqlite3_finalize(st);
	if (err == -ENOENT)
		tp_err("no stored task '%s'; 'taskprobe list' shows them", id);
	return err;
}

/* A stored task named on the command line. */
struct task_ref {
	__s64 tid;
	char status[32];
	char *record; /* NULL until the task ended */
	__u64 wall_ns;
};

/*
 * The preamble of every per-task command: options, database, task. NULL when the
 * command ends here, with its exit status in *ret (0 after --help).
 */
static struct store *open_task(int argc, char **argv, const char *allowed, int max_args,
			       const char *usage, struct qopts *q, struct task_ref *t, int *ret)
{
	int rc = parse_query(argc, argv, allowed, 1, max_args, usage, q);
	struct store *s;

	memset(t, 0, sizeof(*t));
	*ret = rc > 0 ? 0 : rc < 0 ? EXIT_USAGE : EXIT_RUNTIME;
	if (rc)
		return NULL;
	s = open_db(q);
	if (s && find_task(s, q->args[0], &t->tid, t->status, sizeof(t->status), &t->record,
			   &t->wall_ns)) {
		store__close(s);
		s = NULL;
	}
	return s;
}

int cmd_show(int argc, char **argv)
{
	struct task_record t;
	struct json *j = NULL;
	struct task_ref ref;
	struct qopts q;
	struct store *s;
	int ret;

	s = open_task(argc, argv, "", 1, show_usage, &q, &ref, &ret);
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
	if (!j || task_from_json(&t, j)) {
		tp_err("the stored record of '%s' is damaged", q.args[0]);
		goto out;
	}
	t.all_endpoints = true;
	task_print_summary(stdout, &t);
	task_record_fini(&t);
	ret = 0;
out:
	json_free(j);
	free(ref.record);
	store__close(s);
	return ret;
}

/* Short names a user may type for the stored histograms. */
static const char *hist_name(const char *name)
{
	static const char *const alias[][2] = { { "runq", "cpu.runq_latency" },
						{ "io", "io.latency" },
						{ "tcp_connect", "net.tcp.connect_latency" } };

	for (size_t i = 0; name && i < ARRAY_SIZE(alias); i++)
		if (!strcmp(name, alias[i][0]))
			return alias[i][1];
	return name;
}

int cmd_hist(int argc, char **argv)
{
	const char *want;
	char a[32], b[32];
	struct task_ref ref;
	struct qopts q;
	sqlite3_stmt *st;
	struct store *s;
	struct jw w;
	int ret, found = 0, step;

	s = open_task(argc, argv, "", 2, hist_usage, &q, &ref, &ret);
	if (!s)
		return ret;
	ret = EXIT_RUNTIME;
	if (store__prepare(
		    s,
		    "SELECT name, unit, count, sum, slots FROM histograms WHERE task = ? AND "
		    "(? IS NULL OR name = ?) ORDER BY name",
		    &st))
		goto out;
	want = hist_name(q.nargs > 1 ? q.args[1] : NULL);
	sqlite3_bind_int64(st, 1, ref.tid);
	sqlite3_bind_text(st, 2, want, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, want, -1, SQLITE_STATIC);
	if (q.json) {
		jw_init(&w, stdout, true);
		jw_obj_begin(&w);
	}
	while ((step = store__step(s, st)) == SQLITE_ROW) {
		struct tp_hist h = { 0 };
		const char *name = (const char *)sqlite3_column_text(st, 0);
		int len = sqlite3_column_bytes(st, 4);

		found++;
		h.count = (__u64)sqlite3_column_int64(st, 2);
		h.sum = (__u64)sqlite3_column_int64(st, 3);
		if (len == (int)sizeof(h.slots))
			memcpy(h.slots, sqlite3_column_blob(st, 4), sizeof(h.slots));
		if (q.json) {
			jw_key(&w, name);
			jw_obj_begin(&w);
			jw_kstr(&w, "unit", (const char *)sqlite3_column_text(st, 1));
			jw_ku64(&w, "count", h.count);
			jw_ku64(&w, "sum", h.sum);
			jw_ku64(&w, "p50", hist_quantile(&h, 0.5));
			jw_ku64(&w, "p99", hist_quantile(&h, 0.99));
			jw_key(&w, "slots");
			jw_arr_begin(&w);
			for (int i = 0; i < TP_HIST_SLOTS; i++)
				jw_u64(&w, h.slots[i]);
			jw_arr_end(&w);
			jw_obj_end(&w);
			continue;
		}
		printf("%s: %llu values, p50 %s, p99 %s\n", name, (unsigned long long)h.count,
		       tp_fmt_dur(a, sizeof(a), hist_quantile(&h, 0.5)),
		       tp_fmt_dur(b, sizeof(b), hist_quantile(&h, 0.99)));
		hist_print(stdout, &h, 1, "nsecs");
	}
	if (q.json)
		jw_obj_end(&w);
	sqlite3_finalize(st);
	if (step < 0)
		goto out;
	if (!found && q.nargs > 1) {
		tp_err("task '%s' has no histogram '%s' (cpu.runq_latency or runq, io.latency or io, "
		       "net.tcp.connect_latency or tcp_connect)",
		       q.args[0], q.args[1]);
		goto out;
	}
	ret = 0;
out:
	free(ref.record);
	store__close(s);
	return ret;
}

/* The name of phase number i (1-based) of a record, or "#i" when it is not known yet. */
static const char *phase_at(const struct json *phases, size_t i, char *buf, size_t len)
{
	const struct json *n = json_get(json_at(phases, i - 1), "name");

	if (n && n->type == JSON_STR)
		return n->str;
	snprintf(buf, len, "#%zu", i);
	return buf;
}

int cmd_series(int argc, char **argv)
{
	struct series_point *pts = NULL;
	struct series_bucket *bk = NULL;
	const struct json *phases;
	struct json *rec = NULL;
	char pbuf[32];
	struct task_ref ref;
	size_t n = 0;
	struct qopts q;
	sqlite3_stmt *st;
	struct store *s;
	struct jw w;
	int ret, step;

	s = open_task(argc, argv, "points", 1, series_usage, &q, &ref, &ret);
	if (!s)
		return ret;
	ret = EXIT_RUNTIME;
	rec = ref.record ? json_parse(ref.record, strlen(ref.record), NULL, 0) : NULL;
	phases = json_get(rec, "phases");
	if (store__prepare(s, "SELECT data FROM series WHERE task = ? ORDER BY seq", &st))
		goto out;
	sqlite3_bind_int64(st, 1, ref.tid);
	while ((step = store__step(s, st)) == SQLITE_ROW) {
		if (series_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
				  &pts, &n)) {
			tp_err("a series block of '%s' is damaged; showing the others", q.args[0]);
			continue;
		}
	}
	sqlite3_finalize(st);
	if (step < 0)
		goto out;
	bk = calloc((size_t)q.points, sizeof(*bk));
	if (!bk || series_buckets(pts, n, ref.wall_ns / 1000000, (int)q.points, bk))
		goto out;
	if (q.json) {
		jw_init(&w, stdout, true);
		jw_obj_begin(&w);
		jw_kstr(&w, "id", q.args[0]);
		jw_kstr(&w, "status", ref.status);
		jw_ku64(&w, "span_ms", ref.wall_ns / 1000000);
		jw_ku64(&w, "samples", n);
		jw_key(&w, "buckets");
		jw_arr_begin(&w);
		for (long b = 0; b < q.points; b++) {
			static const char *const stat[3] = { "min", "mean", "max" };

			jw_obj_begin(&w);
			jw_ku64(&w, "t_ms", bk[b].t_ms);
			jw_ku64(&w, "samples", bk[b].count);
			for (int k = 0; k < 3; k++) {
				const double *v = k == 0   ? bk[b].min
						  : k == 1 ? bk[b].mean
							   : bk[b].max;

				jw_key(&w, stat[k]);
				jw_obj_begin(&w);
				for (int f = 0; f < SERIES_FIELDS; f++) {
					if (f == SERIES_PHASE)
						continue;
					jw_key(&w, series_field_names[f]);
					bk[b].count ? jw_double(&w, v[f]) : jw_null(&w);
				}
				jw_obj_end(&w);
			}
			/* The latest phase begun among the bucket's samples. */
			jw_key(&w, "phase");
			if (bk[b].count && bk[b].max[SERIES_PHASE] > 0)
				jw_str(&w, phase_at(phases, (size_t)bk[b].max[SERIES_PHASE], pbuf,
						    sizeof(pbuf)));
			else
				jw_null(&w);
			jw_obj_end(&w);
		}
		jw_arr_end(&w);
		jw_obj_end(&w);
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
				       ? phase_at(phases, (size_t)bk[b].max[SERIES_PHASE], pbuf,
						  sizeof(pbuf))
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

static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 200)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-'))
			return false;
	return true;
}

/* Metrics stored per remote host too (the net table), which --host filters. */
static bool is_remote_metric(const char *m)
{
	return !strncmp(m, "http.", 5) || !strncmp(m, "net.tcp.", 8) ||
	       !strcmp(m, "net.tx_bytes") || !strcmp(m, "net.rx_bytes");
}

int cmd_count(int argc, char **argv)
{
	char sql[4096];
	sqlite3_stmt *st;
	struct qopts q;
	struct store *s;
	struct jw w;
	double total = 0;
	long tasks = 0;
	int rc = parse_query(argc, argv, "since label by host", 1, 1, count_usage, &q), i,
	    ret = EXIT_RUNTIME;
	bool remote;

	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	if (!valid_name(q.args[0]) || (q.by && !valid_name(q.by))) {
		tp_err("count: invalid %s '%.64s': use A-Z a-z 0-9 _ . -",
		       valid_name(q.args[0]) ? "label" : "metric",
		       valid_name(q.args[0]) ? q.by : q.args[0]);
		return EXIT_USAGE;
	}
	remote = q.host && is_remote_metric(q.args[0]);
	s = open_db(&q);
	if (!s)
		return EXIT_RUNTIME;
	if (store__prepare(s, "SELECT 1 FROM metrics WHERE name = ? LIMIT 1", &st))
		goto out;
	sqlite3_bind_text(st, 1, q.args[0], -1, SQLITE_STATIC);
	rc = store__step(s, st);
	sqlite3_finalize(st);
	if (rc < 0)
		goto out;
	if (rc != SQLITE_ROW) {
		tp_err("no stored task has metric '%s'; 'taskprobe show --json ID' lists a task's "
		       "metrics",
		       q.args[0]);
		goto out;
	}
	/*
	 * By remote host: the task's rows for matching hosts, summed per task first so
	 * that TASKS counts tasks. An endpoint's names are comma-separated.
	 */
	snprintf(sql, sizeof(sql),
		 "SELECT %s, COUNT(*), SUM(m.value) FROM %s m JOIN tasks t ON t.tid = m.task"
		 "%s WHERE m.name = ?1 AND t.start_ns >= ?4",
		 q.by ? "COALESCE(g.value, '(none)')" : "'all'",
		 remote ? "(SELECT task, name, SUM(value) AS value FROM net WHERE name = ?1 AND"
			  " ((',' || host || ',') GLOB ('*,' || ?2 || ',*') OR address GLOB ?2)"
			  " GROUP BY task)"
			: "metrics",
		 q.by ? " LEFT JOIN labels g ON g.task = m.task AND g.key = ?3" : "");
	filter_sql(sql, sizeof(sql), "m.task", q.nfilters);
	if (q.host && !remote)
		strncat(sql,
			" AND EXISTS (SELECT 1 FROM labels h WHERE h.task = m.task AND h.key = "
			"'host' AND h.value GLOB ?)",
			sizeof(sql) - strlen(sql) - 1);
	strncat(sql, " GROUP BY 1 ORDER BY 3 DESC", sizeof(sql) - strlen(sql) - 1);
	if (store__prepare(s, sql, &st))
		goto out;
	/* ?1 metric, ?2 host glob, ?3 --by label, ?4 since; then the filters' own. */
	sqlite3_bind_text(st, 1, q.args[0], -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, q.host ? q.host : "*", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, q.by ? q.by : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, since_cutoff(&q));
	i = bind_filters(st, 5, &q);
	if (q.host && !remote)
		sqlite3_bind_text(st, i++, q.host, -1, SQLITE_STATIC);
	if (q.json) {
		jw_init(&w, stdout, true);
		jw_obj_begin(&w);
		jw_kstr(&w, "metric", q.args[0]);
		jw_key(&w, "by");
		q.by ? jw_str(&w, q.by) : jw_null(&w);
		jw_key(&w, "groups");
		jw_arr_begin(&w);
	} else {
		printf("%-32s %8s %20s\n", q.by ? q.by : "", "TASKS", q.args[0]);
	}
	while ((rc = store__step(s, st)) == SQLITE_ROW) {
		const char *g = (const char *)sqlite3_column_text(st, 0);
		long n = (long)sqlite3_column_int64(st, 1);
		double sum = sqlite3_column_double(st, 2);

		tasks += n;
		total += sum;
		if (q.json) {
			jw_obj_begin(&w);
			jw_kstr(&w, "value", g);
			jw_ku64(&w, "tasks", (__u64)n);
			jw_kdouble(&w, "sum", sum);
			jw_obj_end(&w);
		} else {
			printf("%-32.32s %8ld %20.10g\n", g, n, sum);
		}
	}
	sqlite3_finalize(st);
	if (rc < 0)
		goto out;
	if (q.json) {
		jw_arr_end(&w);
		jw_ku64(&w, "tasks", (__u64)tasks);
		jw_kdouble(&w, "sum", total);
		jw_obj_end(&w);
	} else if (q.by) {
		printf("%-32s %8ld %20.10g\n", "total", tasks, total);
	}
	ret = 0;
out:
	store__close(s);
	return ret;
}
