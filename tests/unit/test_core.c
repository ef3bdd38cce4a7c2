// SPDX-License-Identifier: GPL-2.0
/* Unit tests: JSON writer and parser, histograms, the hash table, mountinfo, the summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hist.h"
#include "base/htab.h"
#include "base/json.h"
#include "collector/cgroup.h"
#include "collector/hostread.h"
#include "harness.h"
#include "model/hostctx.h"
#include "model/metric_descs.h"
#include "model/phases.h"
#include "model/rules.h"
#include "model/task.h"
#include "model/task_json.h"
#include "model/user_metrics.h"
#include "testutil.h"
#include "view/report.h"
#include "view/summary.h"

/* The BPF side's bucketing, compiled here as plain C (glibc defines __always_inline). */
#include "../bpf/bits.bpf.h"

TEST(TIER_UNIT, json_round_trip)
{
	char *buf = NULL, err[64];
	size_t len = 0;
	const struct json *v;
	struct json *j;
	struct jw w;
	FILE *f = open_memstream(&buf, &len);

	jw_init(&w, f, true);
	jw_obj_begin(&w);
	jw_kstr(&w, "s", "q\"b\\s\n\t\x01 é");
	jw_ku64(&w, "big", 18446744073709551615ULL);
	jw_key(&w, "arr");
	jw_arr_begin(&w);
	jw_i64(&w, -5);
	jw_bool(&w, true);
	jw_null(&w);
	jw_obj_begin(&w);
	jw_obj_end(&w);
	jw_arr_end(&w);
	jw_kdouble(&w, "nan", 0.0 / 0.0);
	jw_kdouble(&w, "whole", 9920512.0);
	jw_kdouble(&w, "frac", 0.1);
	jw_obj_end(&w);
	fclose(f);

	j = json_parse(buf, len, err, sizeof(err));
	if (!ASSERT_NOT_NULL(j, "parse what the writer wrote"))
		goto out;
	ASSERT_STREQ(json_get(j, "s")->str, "q\"b\\s\n\t\x01 é", "escaped string");
	ASSERT_TRUE(json_get(j, "big")->num > 1.8e19, "u64 max");
	v = json_get(j, "arr");
	ASSERT_EQ(json_len(v), 4, "array length");
	ASSERT_EQ(json_at(v, 0)->num, -5, "negative");
	ASSERT_EQ(json_at(v, 1)->type, JSON_BOOL, "bool");
	ASSERT_EQ(json_at(v, 2)->type, JSON_NULL, "null");
	ASSERT_EQ(json_get(j, "nan")->type, JSON_NULL, "non-finite becomes null");
	ASSERT_TRUE(json_get(j, "whole")->num == 9920512.0, "whole numbers exact");
	ASSERT_TRUE(json_get(j, "frac")->num == 0.1, "fractions round-trip");
	json_free(j);
out:
	free(buf);
}

TEST(TIER_UNIT, json_rejects_malformed)
{
	static const char *const bad[] = {
		"",
		"{",
		"{\"a\"}",
		"{\"a\":}",
		"[1,]",
		"[1 2]",
		"\"abc",
		"\"\\x\"",
		"\"\\u12\"",
		"tru",
		"01x",
		"1e999",
		"{} x",
		"{\"a\":1,}",
		"\"\x01\"",
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	};
	char err[64];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct json *j = json_parse(bad[i], strlen(bad[i]), err, sizeof(err));

		CHECK(!j, "accepted malformed '%s'", bad[i]);
		CHECK(!j && err[0], "no reason given for '%s'", bad[i]);
		json_free(j);
	}
}

TEST(TIER_UNIT, log2_buckets)
{
	static const struct {
		__u64 v;
		__u32 slot;
	} cases[] = { { 0, 0 },	    { 1, 1 },	  { 2, 2 },	      { 3, 2 },	    { 4, 3 },
		      { 1023, 10 }, { 1024, 11 }, { 1ULL << 40, 41 }, { ~0ULL, 63 } };

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		__u32 s = tp_log2_slot(cases[i].v);

		CHECK(s == cases[i].slot, "slot of %llu: got %u, expected %u",
		      (unsigned long long)cases[i].v, s, cases[i].slot);
		if (cases[i].v && cases[i].slot < 63)
			CHECK(cases[i].v >= hist_slot_low(s) && cases[i].v <= hist_slot_high(s),
			      "%llu outside its slot's bounds", (unsigned long long)cases[i].v);
	}
}

TEST(TIER_UNIT, hist_quantiles)
{
	struct tp_hist h = { 0 };
	__u64 p50, p99;

	ASSERT_EQ(tp_hist__quantile(&h, 0.5), 0, "empty");
	/* 99 values in [1024, 2047], one in [1 Mi, 2 Mi). */
	h.slots[11] = 99;
	h.slots[21] = 1;
	h.count = 100;
	p50 = tp_hist__quantile(&h, 0.50);
	p99 = tp_hist__quantile(&h, 0.99);
	ASSERT_TRUE(p50 >= 1024 && p50 <= 2047, "p50 in the busy slot");
	ASSERT_TRUE(p99 >= 1024 && p99 <= 2047, "p99 is the 99th value");
	ASSERT_TRUE(tp_hist__quantile(&h, 1.0) >= 1 << 20, "p100 is the outlier");
}

TEST(TIER_UNIT, htab_against_reference)
{
	enum { N = 5000 };
	static __u64 ref[N];
	static bool present[N];
	struct htab h;
	unsigned seed = 42;

	ASSERT_OK(htab__init(&h, sizeof(__u64)), "init");
	for (int op = 0; op < 200000; op++) {
		int k = rand_r(&seed) % N;

		if (rand_r(&seed) % 3) {
			__u64 *v = htab__put(&h, (__u64)k * 0x100000000ULL);

			if (!v)
				break;
			*v = ref[k] = (__u64)op;
			present[k] = true;
		} else {
			htab__del(&h, (__u64)k * 0x100000000ULL);
			present[k] = false;
		}
	}
	for (int k = 0; k < N; k++) {
		__u64 *v = htab__get(&h, (__u64)k * 0x100000000ULL);

		if (!CHECK(!v == !present[k], "key %d presence", k))
			break;
		if (v && !CHECK(*v == ref[k], "key %d value", k))
			break;
	}
	htab__fini(&h);
}

TEST(TIER_UNIT, cgroup2_mount_parsing)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{ "30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
		  "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
		  "/sys/fs/cgroup/unified" },
		{ "25 1 0:22 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
		  "/sys/fs/cgroup" },
		{ "25 1 0:22 / /mnt/my\\040cg rw - cgroup2 none rw\n", "/mnt/my cg" },
		{ "31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", NULL },
	};
	char buf[256];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		FILE *f = fmemopen((void *)cases[i].text, strlen(cases[i].text), "r");
		int err = cgroup2_mount_from(f, buf, sizeof(buf));

		fclose(f);
		if (cases[i].want) {
			ASSERT_OK(err, "found");
			ASSERT_STREQ(buf, cases[i].want, "mount point");
		} else {
			ASSERT_EQ(err, -ENOENT, "none");
		}
	}
}

static void fake_record(struct task_record *t, char **argv, int argc)
{
	static struct program_stat progs[8];

	memset(t, 0, sizeof(*t));
	snprintf(t->id, sizeof(t->id), "%s",
		 "a-rather-long-task-identifier-from-a-ci-system-0123456789");
	t->argv = argv;
	t->argc = argc;
	t->wall_ns = 123456789012ULL;
	t->fig.cpu.cpu_ns = 98765432109ULL;
	t->fig.proc.forks = t->fig.proc.execs = 123456789;
	t->fig.proc.max_alive = 4096;
	t->fig.cpu.runq.slots[10] = 5;
	t->fig.cpu.runq.slots[40] = 123456789012ULL;
	t->fig.cpu.runq.count = 123456789017ULL;
	t->have_cpu_stat = true;
	t->cpu_stat.user_us = 98000000;
	for (int i = 0; i < 8; i++) {
		memset(progs[i].path, 'p', TP_PATH_LEN - 1);
		progs[i].path[0] = '/';
		progs[i].execs = 99999999;
		progs[i].cpu_ns = (__u64)i * 1000000000000ULL;
	}
	task_record__set_programs(t, progs, 8);
	t->leftovers = 12;
	t->leftover_action = LEFTOVER_KILLED;
	t->lost_total = 7;
	t->fig.proc.lost_events = 7;
}

TEST(TIER_UNIT, summary_fits_80_columns)
{
	char arg[600], *argv[] = { "/usr/bin/some-very-long-program-name", arg, "x\ny" };
	struct task_record t;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	memset(arg, 'a', sizeof(arg) - 1);
	arg[sizeof(arg) - 1] = '\0';
	fake_record(&t, argv, 3);
	f = open_memstream(&buf, &len);
	task_record__print_summary(f, &t);
	fclose(f);
	ASSERT_EQ(tu_count_long_lines(buf, 80), 0, "lines over 80 columns");
	ASSERT_TRUE(strstr(buf, "WARNING") != NULL, "lost events are shouted");
	ASSERT_TRUE(strstr(buf, "killed") != NULL, "leftovers' fate");
	task_record__fini(&t);
	free(buf);
}

/*
 * The HTML report's time axis keeps its labels inside its 960-px chart: a task whose
 * span is a whole number of steps (10 s: ticks each second) has its last tick at the
 * plot's right end, 12 px from the edge, where a centred "hh:mm:ss" (about 45 px)
 * would cross it. Each label is checked by its anchor: centred ones need 28 px of room
 * to their right, those that end at x need x inside. The e2e report test found this
 * once in Chromium, when its task happened to take 10.1 s.
 */
TEST(TIER_UNIT, report_time_axis_labels_stay_inside_the_chart)
{
	static const char rec_text[] =
		"{\"id\":\"axis\",\"start_ns\":1796000000000000000,\"wall_ns\":10000000000}";
	struct json *rec = json_parse(rec_text, sizeof(rec_text) - 1, NULL, 0);
	struct report_input in = { .rec = rec };
	const char *axis, *end, *p;
	int labels = 0, ends = 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!ASSERT_TRUE(rec != NULL, "the record parses"))
		return;
	f = open_memstream(&buf, &len);
	ASSERT_EQ(report_html(f, &in), 0, "report_html");
	fclose(f);
	/* The axis is the chart whose texts sit at y 16 and 30. */
	axis = buf ? strstr(buf, "<svg class=\"chart\" width=\"960\" height=\"34\"") : NULL;
	if (!ASSERT_TRUE(axis != NULL, "the time axis"))
		goto out;
	end = strstr(axis, "</svg>");
	for (p = axis; (p = strstr(p, "<text class=\"tick\" x=\"")) && p < end; p++) {
		char anchor[16] = "";
		double x = 0;
		int y = 0;

		if (sscanf(p, "<text class=\"tick\" x=\"%lf\" y=\"%d\" text-anchor=\"%15[a-z]\"",
			   &x, &y, anchor) != 3)
			continue;
		labels++;
		if (!strcmp(anchor, "middle"))
			CHECK(x + 28 <= 960, "a centred label at x %.1f crosses the edge", x);
		else if (!strcmp(anchor, "end")) {
			ends++;
			CHECK(x <= 960, "a label ending at x %.1f crosses the edge", x);
		}
	}
	/* 0 to 10 s: eleven ticks of two labels; the last tick's pair ends at the edge. */
	ASSERT_EQ(labels, 22, "two labels a tick");
	ASSERT_EQ(ends, 2, "the last tick's labels end at the edge");
out:
	free(buf);
	json_free(rec);
}

TEST(TIER_UNIT, task_json_fields)
{
	char *argv[] = { "make", "-j2" };
	struct task_record t;
	const struct json *j;
	const char *path = tu_tmp("task.json");

	fake_record(&t, argv, 2);
	t.labels[0].key = "pool";
	t.labels[0].val = "ci";
	t.nlabels = 1;
	t.end = TASK_SIGNALED;
	t.signal = 9;
	ASSERT_OK(task_save_json(path, &t), "save");
	task_record__fini(&t);
	j = tu_load_json(path);
	if (!j)
		return;
	ASSERT_EQ(tu_metric(j, "cpu.time_ns"), 98765432109ULL, "cpu.time_ns");
	ASSERT_EQ(tu_metric(j, "proc.execs"), 123456789, "proc.execs");
	ASSERT_EQ(tu_num(j, "exit_status"), 137, "exit_status");
	ASSERT_EQ(tu_num(j, "signal"), 9, "signal");
	ASSERT_EQ(json_get(j, "exit_code")->type, JSON_NULL, "no exit code when signaled");
	ASSERT_STREQ(json_get(json_get(j, "labels"), "pool")->str, "ci", "label");
	ASSERT_EQ(json_len(json_get(j, "programs")), 8, "programs");
	ASSERT_STREQ(json_get(json_get(j, "leftovers"), "action")->str, "killed", "leftovers");
	ASSERT_EQ(tu_num(json_get(json_get(j, "histograms"), "cpu.runq_latency"), "count"),
		  123456789017ULL, "runq count");
}

/* Every field a record holds, distinct, so that a field read into another shows. */
static void full_record(struct task_record *t, char **argv, int argc, struct phases *ph,
			struct um_table *um, struct rules *rs)
{
	struct um_line l;
	static struct http_host host = { .host = "\u2026s3.amazonaws.com", .requests = 9 };
	static struct net_endpoint ep = { .address = "10.0.0.1:443", .names = "a.example,b" };
	struct phase_snap a = { .t_ns = 1000000, .cpu_ns = 5 },
			  b = { .t_ns = 9000000, .cpu_ns = 77 };
	__u64 *u = (__u64 *)&t->fig;
	int r0 = 0, r1 = 0;

	fake_record(t, argv, argc);
	/* Each figure its own value: a field read into its neighbour cannot pass. */
	for (size_t i = 0; i < sizeof(t->fig) / sizeof(__u64); i++)
		u[i] = 1000 + i * 7;
	t->fig.proc.max_alive = 33;
	t->fig.mem.peak_rss_bytes = 123456789;
	for (int k = 0; k < NOTE_KINDS; k++) {
		struct note n = { .t_ns = (__u64)(k + 1) * 1500000000ULL,
				  .kind = (enum note_kind)k,
				  .pid = 4000 + (__u32)k,
				  .code = k == 0 ? 137 : k * 100 };

		snprintf(n.detail, sizeof(n.detail), "moment \"%d\"", k);
		notes__add(&t->notes, &n);
	}
	t->notes.dropped = 12;
	t->main_wall_ns = 100000000000ULL;
	t->start_real_ns = 1800000000000000000ULL;
	t->end = TASK_EXITED;
	t->exit_code = 3;
	t->cpu_stat.usage_us = 97000000;
	t->cpu_stat.system_us = 1500000;
	t->peak_cores = 1.75;
	t->skipped_runs = 4;
	t->exec_args_truncated = 5;
	snprintf(t->host, sizeof(t->host), "worker-7");
	snprintf(t->cgroup, sizeof(t->cgroup), "/sys/fs/cgroup/taskprobe/x");
	host.classes[2] = 5;
	host.classes[1] = 1;
	host.failures[HTTP_FAIL_RESET] = 2;
	host.unanswered = 1;
	ep.c.attempts = 4;
	ep.c.connects = 3;
	t->net.tcp.attempts = 4;
	t->net.tcp.connects = 3;
	t->net.dns_lookups = 6;
	t->net.dns_failures = 1;
	t->net.connect_latency.count = 3;
	t->net.connect_latency.slots[20] = 3;
	t->net.hosts = &host;
	t->net.nhosts = 1;
	t->net.eps = &ep;
	t->net.neps = 1;
	phases__init(ph, 0);
	phases__begin(ph, "checkout", &a, 1000);
	phases__end(ph, "checkout", &b, 2000);
	t->phases = ph;
	um_table__init(um);
	um_parse_line("builds:3|c", strlen("builds:3|c"), &l);
	um_table__add(um, &l);
	um_parse_line("queue:7.5|g", strlen("queue:7.5|g"), &l);
	um_table__add(um, &l);
	um_parse_line("fetch:120|ms", strlen("fetch:120|ms"), &l);
	um_table__add(um, &l);
	um->accepted = 3;
	um->rejected[UM_BAD_TYPE] = 2;
	t->um = um;
	rules__init(rs);
	rules__named(rs, "compile_error", &r0);
	rules__named(rs, "link_error", &r1);
	rules__anchor(rs, r1, 42);
	rules__anchor(rs, r0, 99);
	rules__anchor(rs, r1, 100);
	t->rules = rs;
}

static char *record_json(const struct task_record *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct jw w;

	jw_init(&w, f, false);
	task_record__write_json(&w, t);
	fclose(f);
	return buf;
}

/* record -> JSON -> record -> JSON: what the writer writes, the reader reads. */
TEST(TIER_UNIT, task_record_round_trip)
{
	char *argv[] = { "make", "-j2", "all" };
	struct task_record t, back;
	struct um_table um;
	struct rules rs;
	struct phases ph;
	struct json *j;
	char *first, *second;

	full_record(&t, argv, 3, &ph, &um, &rs);
	first = record_json(&t);
	ASSERT_TRUE(strstr(first, "\"kind\":\"oom_kill\"") &&
			    strstr(first, "\"events_dropped\":12"),
		    "notable moments are in the record");
	ASSERT_TRUE(strstr(first, "\"name\":\"fetch\",\"type\":\"timer\"") &&
			    strstr(first, "\"bad_type\":2") && strstr(first, "\"link_error\""),
		    "user metrics, refusals and anchors are in the record");
	j = json_parse(first, strlen(first), NULL, 0);
	if (!ASSERT_TRUE(j != NULL, "the record parses"))
		goto out;
	if (!ASSERT_OK(task_record__from_json(&back, j), "read back"))
		goto out;
	second = record_json(&back);
	if (strcmp(first, second)) {
		size_t i = 0;

		while (first[i] && first[i] == second[i])
			i++;
		fprintf(stderr, "    first difference at %zu:\n    %.160s\n    %.160s\n", i,
			first + (i > 60 ? i - 60 : 0), second + (i > 60 ? i - 60 : 0));
	}
	ASSERT_TRUE(!strcmp(second, first), "the record written again is the same");
	free(second);
	task_record__fini(&back);
out:
	json_free(j);
	free(first);
	t.net.hosts = NULL;
	t.net.eps = NULL;
	t.net.nhosts = t.net.neps = 0;
	task_record__fini(&t);
	phases__fini(&ph);
	um_table__fini(&um);
	rules__fini(&rs);
}

/* Every built-in metric and histogram has its line in the record's documentation. */
TEST(TIER_UNIT, task_record_doc_lists_every_metric)
{
	static char doc[131072];
	char want[128];

	if (!ASSERT_TRUE(tp_read_file("docs/task-record.md", doc, sizeof(doc)) > 0, "the doc"))
		return;
	for (size_t i = 0; i < metric_descs_n; i++) {
		snprintf(want, sizeof(want), "`%s`", metric_descs[i].name);
		CHECK(strstr(doc, want), "docs/task-record.md does not list %s", want);
	}
	for (size_t i = 0; i < hist_descs_n; i++) {
		snprintf(want, sizeof(want), "`%s`", hist_descs[i].name);
		CHECK(strstr(doc, want), "docs/task-record.md does not list %s", want);
	}
}

/* A pressure file's totals; one without "full" (cpu before Linux 5.13) still counts. */
TEST(TIER_UNIT, psi_files_parse)
{
	__u64 some, full;

	ASSERT_OK(psi_parse("some avg10=0.20 avg60=7.51 avg300=7.90 total=52705502\n"
			    "full avg10=0.00 avg60=0.00 avg300=0.00 total=17\n",
			    &some, &full),
		  "both lines");
	ASSERT_EQ(some, 52705502, "some");
	ASSERT_EQ(full, 17, "full");
	ASSERT_OK(psi_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=9\n", &some, &full),
		  "no full line");
	ASSERT_EQ(some, 9, "some");
	ASSERT_EQ(full, 0, "no full: 0");
	ASSERT_EQ(psi_parse("full avg10=0.00 total=3\n", &some, &full), -EINVAL, "no some line");
	ASSERT_EQ(psi_parse("some avg10=0.00\nfull total=3\n", &some, &full), -EINVAL,
		  "some without its total");
	ASSERT_EQ(psi_parse("", &some, &full), -EINVAL, "empty");
}

static struct cg_usage cg(const char *rel, __u64 us)
{
	return (struct cg_usage){ (char *)rel, us };
}

static bool name_worker(void *ctx, const char *rel, char *id, size_t len)
{
	if (strcmp(rel, "/workers/job7"))
		return false;
	snprintf(id, len, "job7");
	return true;
}

/*
 * Who used the host: each cgroup's own CPU (less its children's), a task's subtree as
 * one named by its id, the measured task's subtree left out, a cgroup made meanwhile
 * counted whole, the root's own from its usage less its children's (never below 0).
 */
TEST(TIER_UNIT, host_others_are_each_cgroups_own_cpu)
{
	/* Sorted as a walk sorts them: a subtree right after its root. */
	struct cg_usage a[] = {
		cg("", 1000000),
		cg("/system.slice", 100000),
		cg("/system.slice/db.service", 60000),
		cg("/taskprobe", 0),
		cg("/taskprobe/me", 0),
		cg("/taskprobe/other", 5000),
		cg("/taskprobe/other/sub", 1000),
		cg("/workers", 0),
		cg("/workers/job7", 0),
	};
	struct cg_usage b[] = {
		cg("", 5000000),
		cg("/system.slice", 900000), /* +800 ms, of which db +700 */
		cg("/system.slice/db.service", 760000),
		cg("/system.slice/new.service", 50000),
		cg("/taskprobe", 2300000), /* the task 2 s, other 300 ms */
		cg("/taskprobe/me", 2000000),
		cg("/taskprobe/me/nested", 500000),
		cg("/taskprobe/other", 305000),
		cg("/taskprobe/other/sub", 201000),
		cg("/workers", 40000),
		cg("/workers/job7", 40000),
	};
	struct host_snap sa = { .cgs = a, .ncgs = ARRAY_SIZE(a) };
	struct host_snap sb = { .cgs = b, .ncgs = ARRAY_SIZE(b) };
	struct host_context h = { 0 };
	const struct host_tasks workers = { name_worker, NULL, NULL };
	const struct host_other *o;

	host_context__compute(&h, &sa, &sb, "/taskprobe/me", 2000000000ULL, &workers);
	ASSERT_TRUE(h.have_cpu, "measured");
	/* root own: 4000 - (800 + 2300 + 40) = 860 ms; others: 860 + 800 + 300 + 40 */
	ASSERT_EQ(h.other_cpu_ns, 2000000000ULL, "the rest: every cgroup's own but the task's");
	ASSERT_EQ(h.host_cpu_ns, 4000000000ULL, "the host: the rest and the task");
	o = &h.others[0];
	ASSERT_TRUE(!strcmp(o->name, "/") && o->cpu_ns == 860000000ULL, "the root's own first");
	o = &h.others[1];
	ASSERT_TRUE(!strcmp(o->name, "/system.slice/db.service") && o->cpu_ns == 700000000ULL,
		    "a service by its own CPU");
	o = &h.others[2];
	ASSERT_TRUE(o->kind == HOST_OTHER_TASK && !strcmp(o->name, "other") &&
			    o->cpu_ns == 300000000ULL,
		    "another task of taskprobe's, its subtree as one, by its id");
	o = &h.others[3];
	ASSERT_TRUE(!strcmp(o->name, "/system.slice") && o->cpu_ns == 50000000ULL,
		    "the slice's own: 800 ms less its services' 750");
	o = &h.others[4];
	ASSERT_TRUE(!strcmp(o->name, "/system.slice/new.service") && o->cpu_ns == 50000000ULL,
		    "a cgroup made meanwhile: all of its CPU");
	o = &h.others[5];
	ASSERT_TRUE(o->kind == HOST_OTHER_TASK && !strcmp(o->name, "job7") &&
			    o->cpu_ns == 40000000ULL,
		    "a worker's task named by the daemon");
	ASSERT_EQ(h.nothers, 6, "nothing of the task, nor the empty ones");
	for (int i = 0; i < h.nothers; i++)
		CHECK(strncmp(h.others[i].name, "/taskprobe/me", 13), "the task itself: %s",
		      h.others[i].name);

	/* The root's ticks short of its children's clock: its own is 0, not negative. */
	b[0].usage_us = 2000000;
	host_context__compute(&h, &sa, &sb, "/taskprobe/me", 2000000000ULL, &workers);
	ASSERT_EQ(h.other_cpu_ns, 1140000000ULL, "the root's own clamped at 0");
}
