// SPDX-License-Identifier: GPL-2.0
/* End-to-end tests: phases, the metrics socket and its limits, against known truth. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "harness.h"
#include "testutil.h"

#define MIB (1024.0 * 1024.0)

static const struct json *phase(const struct json *rec, const char *name)
{
	const struct json *p = tu_find(json_get(rec, "phases"), "name", name);

	CHECK(p != NULL, "no phase '%s'", name);
	return p;
}

static const struct json *user_metric(const struct json *rec, const char *name)
{
	return tu_find(json_get(rec, "user_metrics"), "name", name);
}

static double rejected(const struct json *rec, const char *reason)
{
	return tu_num(json_get(json_get(rec, "metrics_socket"), "rejected_by_reason"), reason);
}

TEST(TIER_E2E, phases_get_their_own_figures)
{
	const char *json = tu_tmp("task.json"), *truth = tu_tmp("truth"), *data = tu_tmp("data");
	char script[4096];
	const struct json *rec, *co, *build, *inner, *up, *open_;
	double children, self;
	struct tu_result r;

	/*
	 * checkout is marked with the `taskprobe phase` command; the others with the plain
	 * sendlines helper, whose own CPU is negligible next to the burner's truth.
	 */
	snprintf(script, sizeof(script),
		 "T=%s; S=%s; $T phase begin checkout && sleep 0.5 && $T phase end checkout &&"
		 " $S 1 phase:begin:build && %s 1 1000 %s && $S 1 phase:begin:inner && /bin/true &&"
		 " $S 1 phase:end:inner && $S 1 phase:end:build &&"
		 " $S 1 phase:begin:upload &&"
		 " dd if=/dev/zero of=%s bs=1M count=32 oflag=direct status=none &&"
		 " $S 1 phase:end:upload && $S 1 phase:begin:left-open",
		 tu_bin(), tu_helper("sendlines"), tu_helper("burn"), truth, data);
	tu_tp(&r, 60, "run", "--quiet", "--id", "phases-e2e", "--json", json, "--", "sh", "-c",
	      script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	if (!rec || !ASSERT_OK(tu_read_truth(truth, &children, &self), "truth"))
		return;
	tu_tp(&r, 30, "show", "phases-e2e", NULL);
	ASSERT_TRUE(strstr(r.out, "  checkout") && strstr(r.out, "    inner") &&
			    strstr(r.out, "left-open*"),
		    "show lists the stored phases, nested and unfinished");
	co = phase(rec, "checkout");
	build = phase(rec, "build");
	inner = phase(rec, "inner");
	up = phase(rec, "upload");
	open_ = phase(rec, "left-open");
	ASSERT_GE(tu_num(co, "wall_ns"), 500e6, "checkout's wall time covers its sleep");
	/*
	 * Checkout ran the marker commands and sleep only: none of the burner's CPU (its
	 * getrusage, within the 2 % CPU accuracy and a margin). An absolute bound was
	 * flaky: the sanitized taskprobe's own start-up is ~70 ms of CPU.
	 */
	ASSERT_LE(tu_num(co, "cpu_ns"),
		  tu_num(json_get(rec, "metrics"), "cpu.time_ns") - (children + self) * 0.97,
		  "checkout holds none of the burner's CPU");
	/* The burner's own rusage, plus the tiny inner phase inside build. */
	ASSERT_NEAR(tu_num(build, "cpu_ns"), children + self + tu_num(inner, "cpu_ns"), 0.05,
		    "build's CPU vs the burner's getrusage");
	/* Phase bytes are block-layer bytes, counted at submission: dd's, exactly. */
	ASSERT_EQ(tu_num(up, "write_bytes"), 32 * MIB, "upload's direct writes");
	ASSERT_LE(tu_num(build, "write_bytes"), 1 * MIB, "build wrote nothing much");
	ASSERT_EQ(tu_num(inner, "depth"), 1, "inner nests in build");
	ASSERT_TRUE(tu_num(inner, "start_ms") >= tu_num(build, "start_ms") &&
			    tu_num(inner, "start_ms") * 1e6 + tu_num(inner, "wall_ns") <=
				    tu_num(build, "start_ms") * 1e6 + tu_num(build, "wall_ns") +
					    1e6,
		    "inner lies within build");
	/* /bin/true, and the sendlines that ended it (it execs before it sends). */
	ASSERT_EQ(tu_num(inner, "execs"), 2, "inner's execs");
	ASSERT_TRUE(json_get(open_, "unfinished")->b, "a phase open at the end is flagged");
	ASSERT_FALSE(json_get(build, "unfinished")->b, "build ended normally");
}

/* A phase name too long for the summary's column is cut, and shows it: it ends in "…". */
TEST(TIER_E2E, long_phase_name_cut_with_an_ellipsis)
{
	static const char name[] = "upload-artifacts-to-the-bucket", shrt[] = "short-one";
	char script[1024], want[64];
	struct tu_result r;

	snprintf(
		script, sizeof(script),
		"T=%s; $T phase begin %s && $T phase end %s && $T phase begin %s && $T phase end %s",
		tu_bin(), name, name, shrt, shrt);
	tu_tp(&r, 60, "run", "--id", "cut-phase", "--no-db", "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	/* Two spaces of indent for a top-level phase, 18 of its 30 characters, the mark. */
	snprintf(want, sizeof(want), "  %.18s\u2026 ", name);
	ASSERT_TRUE(strstr(r.err, want) != NULL, "the cut name ends in an ellipsis");
	ASSERT_TRUE(strstr(r.err, name) == NULL, "the whole name does not fit");
	snprintf(want, sizeof(want), "  %s ", shrt);
	ASSERT_TRUE(strstr(r.err, want) != NULL, "a name that fits is whole");
	ASSERT_TRUE(strstr(r.err, "short-one\u2026") == NULL, "and has no mark");
}

TEST(TIER_E2E, socket_counts_10000_exactly)
{
	const char *json = tu_tmp("task.json");
	const struct json *rec;
	struct tu_result r;

	tu_tp(&r, 60, "run", "--quiet", "--json", json, "--", tu_helper("sendlines"), "10000",
	      "hits:1|c", NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	ASSERT_EQ(tu_num(user_metric(rec, "hits"), "sum"), 10000, "10 000 counters");
	ASSERT_EQ(tu_metric(rec, "hits"), 10000, "stored like a built-in metric");
	ASSERT_EQ(tu_num(json_get(rec, "metrics_socket"), "rejected"), 0, "nothing refused");
}

TEST(TIER_E2E, socket_refuses_other_tasks)
{
	char b_json[512], a_json[512], b_sock[128], script[512];
	const struct json *a, *b;
	struct tu_result r;
	pid_t tp_b;
	int st;

	snprintf(b_json, sizeof(b_json), "%s", tu_tmp("b.json"));
	snprintf(a_json, sizeof(a_json), "%s", tu_tmp("a.json"));
	{
		char *args[] = { (char *)tu_bin(), "run", "--quiet", "--json", b_json, "--",
				 "sleep",	   "3",	  NULL };

		tp_b = tu_spawn(args);
	}
	snprintf(b_sock, sizeof(b_sock), "/run/taskprobe/run-%d.sock", (int)tp_b);
	for (int i = 0; i < 300 && access(b_sock, F_OK); i++)
		usleep(10000);
	/* Task A writes into B's socket: B must refuse all of it. */
	snprintf(script, sizeof(script), "%s -s %s 5 'stolen:1|c'", tu_helper("sendlines"), b_sock);
	tu_tp(&r, 30, "run", "--quiet", "--json", a_json, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "task A ran");
	ASSERT_TRUE(waitpid(tp_b, &st, 0) == tp_b && WIFEXITED(st) && !WEXITSTATUS(st), "task B");
	b = tu_load_json(b_json);
	a = tu_load_json(a_json);
	if (!a || !b)
		return;
	ASSERT_TRUE(user_metric(b, "stolen") == NULL, "no metric of A in B");
	ASSERT_EQ(rejected(b, "not_in_task"), 6, "5 datagrams and the closing one, refused");
	ASSERT_TRUE(user_metric(a, "stolen") == NULL, "nor in A (sent elsewhere)");
}

/* emit and phase say what the collector did with the line: taken, or refused and why. */
TEST(TIER_E2E, emit_and_phase_report_the_collectors_answer)
{
	const char *json = tu_tmp("task.json"), *db = tu_tmp("tp.db"), *out = tu_tmp("answers");
	char b_json[512], b_sock[128], script[2048];
	const struct json *rec, *big;
	struct tu_result r;
	pid_t tp_b;
	int st;

	snprintf(script, sizeof(script),
		 "T=%s; exec 2>%s;"
		 " $T emit x 1; echo \"counter $?\" >&2;"
		 " $T emit x 5 --type gauge; echo \"gauge $?\" >&2;"
		 " $T emit big 1e308; $T emit big 1e308; echo \"big $?\" >&2;"
		 " $T phase end nope; echo \"phase $?\" >&2",
		 tu_bin(), out);
	tu_tp(&r, 30, "run", "--quiet", "--db", db, "--json", json, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "the task");
	ASSERT_EQ(tp_read_file(out, script, sizeof(script)) > 0, 1, "the answers");
	ASSERT_TRUE(strstr(script, "counter 0\n") != NULL, "a counter is taken: exit 0");
	ASSERT_TRUE(strstr(script, "taskprobe: emit: the collector refused 'x:5|g': bad_type\n"
				   "gauge 1\n") != NULL,
		    "a gauge of a counter's name: refused, one line, exit 1");
	ASSERT_TRUE(strstr(script, "refused 'big:1e308|c': overflow\nbig 1\n") != NULL,
		    "a total past a double's range: refused");
	ASSERT_TRUE(strstr(script, "refused 'phase:end:nope': unknown_phase\nphase 1\n") != NULL,
		    "ending a phase never begun: refused");
	rec = tu_load_json(json);
	big = user_metric(rec, "big");
	ASSERT_TRUE(big && json_get(big, "sum") && json_get(big, "sum")->type == JSON_NUM,
		    "the total stays a number in the record");
	ASSERT_EQ(tu_num(big, "sum") == 1e308, 1, "the first value kept");
	ASSERT_EQ(rejected(rec, "overflow"), 1, "the refusal counted");
	ASSERT_EQ(rejected(rec, "bad_type"), 1, "bad_type counted");
	tu_tp(&r, 30, "count", "big", "--db", db, "--json", NULL);
	ASSERT_EQ(tu_num(tu_parse_json(r.out), "sum") == 1e308, 1, "and in the store");

	/* From outside any task, pointed at a running task's socket. */
	snprintf(b_json, sizeof(b_json), "%s", tu_tmp("b.json"));
	tp_b = tu_spawn((char *[]){ (char *)tu_bin(), "run", "--quiet", "--json", b_json, "--",
				    "sleep", "2", NULL });
	snprintf(b_sock, sizeof(b_sock), "/run/taskprobe/run-%d.sock", (int)tp_b);
	for (int i = 0; i < 300 && access(b_sock, F_OK); i++)
		usleep(10000);
	snprintf(script, sizeof(script), "TASKPROBE_SOCKET=%s exec %s emit stolen 1", b_sock,
		 tu_bin());
	tu_run((char *[]){ "sh", "-c", script, NULL }, &r, 10);
	ASSERT_EQ(r.status, 1, "emit from outside the task fails");
	ASSERT_STREQ(r.err, "taskprobe: emit: the collector refused 'stolen:1|c': not_in_task\n",
		     "and says why");
	ASSERT_TRUE(waitpid(tp_b, &st, 0) == tp_b, "task B");
	ASSERT_EQ(rejected(tu_load_json(b_json), "not_in_task"), 1, "B counted the refusal");
}

TEST(TIER_E2E, socket_bad_lines_counted_collector_goes_on)
{
	const char *json = tu_tmp("task.json");
	char longline[4200], script[16384], tags[1024] = "";
	const struct json *rec;
	struct tu_result r;
	size_t len;

	memset(longline, 'a', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	memcpy(longline + 4100, ":1|c", 4);
	for (int i = 0; i < 65; i++) {
		len = strlen(tags);
		snprintf(tags + len, sizeof(tags) - len, "%sk%d:v", i ? "," : "", i);
	}
	/* One datagram of bad lines, each refused for its own reason, then a good one. */
	snprintf(
		script, sizeof(script),
		"S=%s; N=%s; $S 1 'nocolon\\nx:abc|c\\nx:1|q\\nx:nan|c\\nx:1|c|#a\\nx:1|c|#%s\\n%s\\n"
		"cpu.time_ns:5|c\\nphase:end:nope\\nbad name:1|c' &&"
		" i=0; while [ $i -lt 1001 ]; do echo \"n$i:1|c\"; i=$((i+1)); done > \"$N\" &&"
		" $S 1 \"$(cat \"$N\" | tr '\\n' '|' | sed 's/|c|/|c\\\\n/g')\" &&"
		" $S 1 'good:2|c'",
		tu_helper("sendlines"), tu_tmp("names"), tags, longline);
	tu_tp(&r, 60, "run", "--quiet", "--json", json, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	if (!rec)
		return;
	ASSERT_EQ(rejected(rec, "bad_name"), 3, "no colon, reserved name, space in name");
	ASSERT_EQ(rejected(rec, "bad_value"), 2, "not a number, not finite");
	ASSERT_EQ(rejected(rec, "bad_type"), 1, "|q");
	ASSERT_EQ(rejected(rec, "bad_tag"), 1, "a tag without a value");
	ASSERT_EQ(rejected(rec, "too_many_tags"), 1, "65 tags");
	ASSERT_EQ(rejected(rec, "too_long"), 1, "a line over 4 KiB");
	ASSERT_EQ(rejected(rec, "unknown_phase"), 1, "the end of a phase never begun");
	/* 1000 names fit: sendlines.done (first) and n0..n998; n999, n1000, good are refused. */
	ASSERT_EQ(rejected(rec, "too_many_names"), 3, "names past 1000");
	ASSERT_EQ(tu_num(user_metric(rec, "n998"), "sum"), 1, "names before the limit are kept");
	ASSERT_TRUE(user_metric(rec, "good") == NULL, "a new name past the limit is not");
	/* Known names still count after the limit: the collector went on. */
	ASSERT_EQ(tu_num(user_metric(rec, "sendlines.done"), "count"), 3, "three senders closed");
}

static void shell(const char *cmd)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	struct tu_result r;

	tu_run(argv, &r, 120);
	CHECK(r.status == 0, "'%.200s': exit %d", cmd, r.status);
}

/*
 * Runs script twice, its output sent on by redirect (a format taking the output file):
 * through taskprobe (record in json) and alone. The record shows taskprobe really read
 * the output (the script's phase "seen").
 */
static void with_and_without(const char *script, const char *redirect, const char *json,
			     const char *out_with, const char *out_without)
{
	char cmd[2048], to[600];
	const struct json *rec;

	snprintf(to, sizeof(to), redirect, out_with);
	snprintf(cmd, sizeof(cmd), "%s run --quiet --no-db --json %s -- sh -c '%s' %s", tu_bin(),
		 json, script, to);
	shell(cmd);
	snprintf(to, sizeof(to), redirect, out_without);
	snprintf(cmd, sizeof(cmd), "sh -c '%s' %s", script, to);
	shell(cmd);
	rec = tu_load_json(json);
	CHECK(tu_find(json_get(rec, "phases"), "name", "seen") != NULL,
	      "the output did not go through taskprobe's reader");
}

TEST(TIER_E2E, output_passes_through_byte_for_byte)
{
	const char *a = tu_tmp("with.sum"), *b = tu_tmp("without.sum");
	char with[128], without[128];

	/* ~100 MiB: lines, binary bytes, a 100 KiB line, markers, no final newline. */
	with_and_without("seq 1 12500000; head -c 4000000 /dev/zero | tr \"\\\\000\" \"\\\\377\";"
			 " head -c 102400 /dev/zero | tr \"\\\\000\" x; echo;"
			 " echo BEGIN_PHASE seen; echo END_PHASE seen; printf tail",
			 "| sha256sum > %s", tu_tmp("task.json"), a, b);
	ASSERT_TRUE(tp_read_file(a, with, sizeof(with)) > 64 &&
			    tp_read_file(b, without, sizeof(without)) > 64,
		    "checksums taken");
	ASSERT_STREQ(with, without, "100 MiB of mixed output, byte for byte");
}

TEST(TIER_E2E, merged_stdout_stderr_keep_their_order)
{
	const char *with = tu_tmp("with.txt"), *without = tu_tmp("without.txt");
	char a[16384], b[16384];

	/* The markers go to stderr: the one pipe carries both streams. */
	with_and_without("echo BEGIN_PHASE seen >&2; i=0; while [ $i -lt 300 ]; do echo out$i;"
			 " echo err$i >&2; i=$((i+1)); done; echo END_PHASE seen >&2",
			 "> %s 2>&1", tu_tmp("task.json"), with, without);
	ASSERT_TRUE(tp_read_file(with, a, sizeof(a)) > 1000, "output with taskprobe");
	ASSERT_TRUE(tp_read_file(without, b, sizeof(b)) > 1000, "output without");
	ASSERT_STREQ(a, b, "stdout and stderr interleaved as without taskprobe");
}

TEST(TIER_E2E, output_markers_begin_and_end_phases)
{
	const char *json = tu_tmp("task.json"), *conf = tu_tmp("tp.conf");
	const struct json *rec, *outer, *inner;
	struct tu_result r;

	tu_write_file(conf, "phase_begin_marker = ##START\nphase_end_marker = ##STOP\n");
	tu_tp(&r, 30, "run", "--quiet", "--no-db", "--json", json, "--", "sh", "-c",
	      "echo BEGIN_PHASE outer; echo 'BEGIN_PHASE inner  '; sleep 0.2;"
	      " echo END_PHASE inner >&2; echo END_PHASE outer; echo BEGIN_PHASE 'bad name';"
	      " printf 'BEGIN_PHASE partial'",
	      NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	outer = phase(rec, "outer");
	inner = phase(rec, "inner");
	ASSERT_EQ(tu_num(inner, "depth"), 1, "nested from output lines, stderr included");
	/* Less a marker's read lag (docs/metrics-language.md). */
	ASSERT_GE(tu_num(inner, "wall_ns"), 150e6, "inner covers its sleep");
	ASSERT_GE(tu_num(outer, "wall_ns"), tu_num(inner, "wall_ns"), "outer covers inner");
	ASSERT_EQ(json_len(json_get(rec, "phases")), 2,
		  "no phase from a bad name or a partial line");
	ASSERT_EQ(rejected(rec, "bad_name"), 1, "the bad name is counted");
	ASSERT_STREQ(r.out,
		     "BEGIN_PHASE outer\nBEGIN_PHASE inner  \nEND_PHASE outer\nBEGIN_PHASE bad "
		     "name\nBEGIN_PHASE partial",
		     "output passed on");

	tu_tp(&r, 30, "run", "--quiet", "--no-db", "--config", conf, "--json", json, "--", "sh",
	      "-c", "echo '##START cfg'; echo BEGIN_PHASE ignored; echo '##STOP cfg'", NULL);
	rec = tu_load_json(json);
	ASSERT_EQ(json_len(json_get(rec, "phases")), 1, "configured markers only");
	ASSERT_FALSE(json_get(phase(rec, "cfg"), "unfinished")->b, "begun and ended");
}

TEST(TIER_E2E, perfherder_line_round_trips)
{
	const char *line_file = tu_tmp("perfherder.txt"), *json = tu_tmp("task.json");
	char cmd[1024], line[16384], script[256];
	const struct json *rec, *j, *task, *ph;
	struct tu_result r;
	const char *payload;
	double execs;

	snprintf(cmd, sizeof(cmd),
		 "%s run --quiet --no-db --perfherder -- sh -c 'echo BEGIN_PHASE b; sleep 0.2;"
		 " /bin/true; sleep 0.2; echo END_PHASE b' | tail -n 1 > %s",
		 tu_bin(), line_file);
	{
		char *argv[] = { "sh", "-c", cmd, NULL };

		tu_run(argv, &r, 30);
	}
	if (!ASSERT_TRUE(tp_read_file(line_file, line, sizeof(line)) > 20, "a line printed"))
		return;
	ASSERT_TRUE(!strncmp(line, "PERFHERDER_DATA: ", 17), "Treeherder's prefix");
	payload = line + 17;
	j = json_parse(payload, strlen(payload) - 1, NULL, 0);
	if (!ASSERT_NOT_NULL(j, "its JSON parses"))
		return;
	ASSERT_STREQ(json_get(json_get(j, "framework"), "name")->str, "build_metrics",
		     "framework: one Treeherder registers (docs/metrics-language.md)");
	task = tu_find(json_get(j, "suites"), "name", "task");
	ph = tu_find(json_get(j, "suites"), "name", "phase.b");
	ASSERT_TRUE(task && ph, "a suite for the task and one per phase");
	/* Markers take effect when read: the first sleep may start before (2 or 3). */
	execs = tu_num(tu_find(json_get(ph, "subtests"), "name", "execs"), "value");
	ASSERT_TRUE(execs == 2 || execs == 3, "the phase's execs");
	/* Fed back through a task's output, it becomes metrics with the same values. */
	snprintf(script, sizeof(script), "cat %s; echo 'PERFHERDER_DATA: {\"no\": 1}'", line_file);
	tu_tp(&r, 30, "run", "--quiet", "--no-db", "--json", json, "--", "sh", "-c", script, NULL);
	rec = tu_load_json(json);
	ASSERT_EQ(tu_metric(rec, "perfherder.build_metrics.phase_b.execs"), execs,
		  "subtest value as a metric");
	ASSERT_TRUE(tu_metric(rec, "perfherder.build_metrics.task") == tu_num(task, "value"),
		    "suite value as a metric, exactly");
	ASSERT_EQ(tu_num(json_get(json_get(rec, "metrics_socket"), "rejected_by_reason"),
			 "bad_perfherder"),
		  1, "a line that is not an artifact is counted, and passed on");
	ASSERT_TRUE(strstr(r.out, "{\"no\": 1}") != NULL, "passed on");
	json_free((struct json *)j);
}

TEST(TIER_E2E, series_points_carry_their_phase)
{
	char script[1024];
	const struct json *s, *bk;
	struct tu_result r;
	int first_build = -1, last_fetch = -1;

	snprintf(script, sizeof(script),
		 "T=%s; $T phase begin fetch; sleep 0.6; $T phase end fetch;"
		 " $T phase begin build; sleep 0.6; $T phase end build",
		 tu_bin());
	tu_tp(&r, 30, "run", "--quiet", "--id", "series-phases", "--interval", "100", "--", "sh",
	      "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	tu_tp(&r, 30, "series", "series-phases", "--points", "10", "--json", NULL);
	s = tu_parse_json(r.out);
	bk = json_get(s, "buckets");
	ASSERT_EQ(json_len(bk), 10, "10 buckets");
	for (size_t i = 0; i < json_len(bk); i++) {
		const struct json *p = json_get(json_at(bk, i), "phase");

		if (p && p->type == JSON_STR && !strcmp(p->str, "fetch"))
			last_fetch = (int)i;
		if (p && p->type == JSON_STR && !strcmp(p->str, "build") && first_build < 0)
			first_build = (int)i;
	}
	ASSERT_GE(last_fetch, 1, "fetch spans the first buckets");
	ASSERT_GE(first_build, last_fetch, "build comes after fetch");
	ASSERT_LE(first_build, 7, "and fills the later buckets");
}

TEST(TIER_E2E, socket_keeps_datagrams_of_senders_gone)
{
	const char *json = tu_tmp("task.json");
	const struct json *rec;
	struct tu_result r;

	/*
	 * A fire-and-forget sender exits right after its last datagram: it was checked
	 * while alive (its first datagram) and is remembered by its pidfd's identity.
	 */
	char script[512];

	/* Its shell reaps it at once: /proc knows nothing of it when the rest is read. */
	snprintf(script, sizeof(script), "%s -f 200 'ff:1|c' & wait; sleep 0.2",
		 tu_helper("sendlines"));
	tu_tp(&r, 30, "run", "--quiet", "--no-db", "--json", json, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	ASSERT_EQ(tu_num(user_metric(rec, "ff"), "sum"), 200, "every datagram counted");
	ASSERT_EQ(tu_num(json_get(rec, "metrics_socket"), "rejected"), 0, "none refused");
}
