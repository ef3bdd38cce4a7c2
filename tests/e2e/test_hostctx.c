// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end tests of the task in its context: the CPU the rest of the host used while
 * a task ran, who used it (named), and pressure stall figures, against a burner the
 * test runs outside the task and measures by its own getrusage.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "harness.h"
#include "testutil.h"

#define TASK_MS "3000"
#define OUTSIDE_MS "1500"

/* The record's others entry named name, or NULL. */
static const struct json *other_named(const struct json *rec, const char *name)
{
	return tu_find(json_get(json_get(rec, "host_context"), "others"), "name", name);
}

/*
 * A task burning one core for 3 s, sampled every 250 ms; with outside_cg, a burner of
 * procs cores for 1.5 s runs meanwhile in that cgroup of the test's own (joined before
 * it burns), its getrusage into truth. The task's record, or NULL.
 */
static const struct json *burn_task(const char *id, const char *outside_cg, const char *procs,
				    const char *truth)
{
	const char *rec = tu_tmp(id), *ready = tu_tmp("ready");
	char script[4096];
	struct tu_result r;
	pid_t run;
	int st;

	unlink(ready);
	snprintf(script, sizeof(script),
		 "touch %s; echo BEGIN_PHASE burn; %s 1 " TASK_MS "; echo END_PHASE burn", ready,
		 tu_helper("burn"));
	run = tu_spawn((char *[]){ (char *)tu_bin(), "run", "--quiet", "--id", (char *)id,
				   "--interval", "250", "--json", (char *)rec, "--", "sh", "-c",
				   script, NULL });
	if (run <= 0)
		return NULL;
	tu_track_pid(run);
	for (int i = 0; i < 1000 && access(ready, F_OK); i++)
		usleep(10000);
	if (outside_cg) {
		/* Clear of the task's start: the burner's own CPU is all in its cgroup. */
		usleep(300000);
		tu_run((char *[]){ (char *)tu_helper("burn"), (char *)procs, OUTSIDE_MS,
				   (char *)truth, "--nested", (char *)outside_cg, NULL },
		       &r, 60);
		CHECK(r.status == 0, "the outside burner: %s", r.err ? r.err : "");
	}
	if (waitpid(run, &st, 0) != run || !WIFEXITED(st) || WEXITSTATUS(st))
		return NULL;
	return tu_load_json(rec);
}

/*
 * Injected: a burner of one core outside the task, in a cgroup of the test's own, on
 * this 2-core machine, while the task burns one core; then one of two cores (the CPUs
 * oversubscribed); then nothing.
 * Measured against: the burner's getrusage (children's user + system).
 * Expected: the burner named by its cgroup's path with its CPU within 2%; the rest of
 * the host's CPU at least that; the task's CPU pressure above zero; the series has the
 * others' cores. Beside two cores, the task waits: its CPU pressure is over 200 ms.
 * The same task alone: the burner not named, the others' CPU a small part of the busy
 * run's, and a tenth of the oversubscribed run's CPU pressure at most.
 */
TEST(TIER_E2E, host_context_names_the_outside_burner)
{
	const char *truth = tu_tmp("outside.truth");
	char cg[4096], rel[4096], csv_path[4200];
	const struct json *busy, *crowded, *alone, *named, *m;
	double children = 0, self = 0, busy_other, busy_psi, crowded_psi;
	struct tu_result r;

	if (!ASSERT_OK(tu_cgroup_make(cg, sizeof(cg)), "the burner's cgroup"))
		return;
	snprintf(rel, sizeof(rel), "%s", cg + strlen(tu_cgroup_root()));

	/* The three runs first, back to back; then what each says. */
	busy = burn_task("hc-busy", cg, "1", truth);
	if (!ASSERT_NOT_NULL(busy, "the task beside the burner"))
		return;
	ASSERT_OK(tu_read_truth(truth, &children, &self), "the burner's getrusage");
	alone = burn_task("hc-alone", NULL, NULL, NULL);
	crowded = burn_task("hc-crowded", cg, "2", tu_tmp("crowded.truth"));
	if (!ASSERT_NOT_NULL(alone, "the same task alone") ||
	    !ASSERT_NOT_NULL(crowded, "the task beside two burners"))
		return;
	m = json_get(busy, "metrics");
	named = other_named(busy, rel);
	CHECK(named != NULL, "the burner's cgroup %s is named among the others", rel);
	if (named) {
		double got = tu_num(named, "cpu_ns");

		printf("    burner: %.1f ms named, %.1f ms by its getrusage\n", got / 1e6,
		       children / 1e6);
		ASSERT_STREQ(json_str(named, "kind"), "cgroup", "named as a cgroup");
		CHECK(got >= children * 0.98 && got <= children * 1.02,
		      "its CPU %.1f ms within 2%% of its getrusage %.1f ms", got / 1e6,
		      children / 1e6);
	}
	busy_other = tu_num(m, "host.other_cpu_ns");
	CHECK(busy_other >= children * 0.98,
	      "the rest of the host's CPU %.1f ms holds the burner's", busy_other / 1e6);
	CHECK(tu_num(m, "host.other_avg_cores") > 0.4, "about half a core besides the task: %.3f",
	      tu_num(m, "host.other_avg_cores"));
	busy_psi = tu_num(m, "psi.cpu.some_ns");
	CHECK(busy_psi > 0, "the task's cpu pressure above zero: %.0f ns", busy_psi);
	CHECK(json_get(m, "host.psi.cpu.some_ns") && json_get(m, "psi.memory.some_ns") &&
		      json_get(m, "psi.io.full_ns"),
	      "every pressure figure, the task's and the host's");
	ASSERT_STREQ(json_str(json_get(busy, "sources"), "psi"),
		     "cgroup:cpu.pressure,memory.pressure,io.pressure", "the pressure's source");
	/* The series: the others' cores while the burner ran, about one. */
	snprintf(csv_path, sizeof(csv_path), "%s", tu_tmp("busy.csv"));
	tu_tp(&r, 30, "export", "hc-busy", "--format", "csv", "-o", csv_path, NULL);
	ASSERT_EQ(r.status, 0, "export csv");
	{
		char *csv = NULL, *line;
		double peak = 0;

		tp_slurp(csv_path, "csv", true, &csv);
		CHECK(csv && strstr(csv, ",host_other_millicores\n"), "the series' column");
		for (line = csv ? strchr(csv, '\n') : NULL; line && line[1];
		     line = strchr(line + 1, '\n')) {
			const char *last = line + 1;

			for (int k = 0; k < 9 && last; k++)
				last = strchr(last, ',') ? strchr(last, ',') + 1 : NULL;
			if (last && atof(last) > peak)
				peak = atof(last);
		}
		CHECK(peak > 800, "the others' cores reach about one in the series: %.0f", peak);
		free(csv);
	}
	tu_tp(&r, 30, "show", "hc-busy", NULL);
	CHECK(r.out && strstr(r.out, "  host       the rest used") && strstr(r.out, rel) &&
		      strstr(r.out, "  pressure   cpu "),
	      "the summary says it: %s", r.out ? r.out : "");
	ASSERT_EQ(tu_count_long_lines(r.out, 80), 0, "the summary fits 80 columns");
	/* The job page's summary: the host's cell, and a second line on the CPU chart. */
	{
		const char *md = tu_tmp("busy.md");
		struct tu_result c;

		tu_tp(&r, 30, "report", "hc-busy", "--format", "markdown", "-o", md, NULL);
		ASSERT_EQ(r.status, 0, "report --format markdown");
		tu_run((char *[]){ "python3", "tests/helpers/check_mermaid.py", (char *)md,
				   "xychart-beta", NULL },
		       &c, 180);
		ASSERT_EQ(c.status, 0, "check_mermaid.py: the two-line CPU chart renders");
		if (c.status)
			fprintf(stderr, "    %s", c.out);
		tu_tp(&r, 30, "report", "hc-busy", "--format", "markdown", NULL);
		CHECK(r.out && strstr(r.out, "the rest of it used") && strstr(r.out, rel) &&
			      strstr(r.out, "the rest of the host (the second line)"),
		      "the Markdown names the burner: %s", r.out ? r.out : "");
		tu_tp(&r, 30, "report", "hc-busy", NULL);
		CHECK(r.out && strstr(r.out, "<h2>The host around it</h2>") && strstr(r.out, rel) &&
			      strstr(r.out, "the rest of the host</span>"),
		      "the HTML report has the section and the chart's second line");
	}

	crowded_psi = tu_num(json_get(crowded, "metrics"), "psi.cpu.some_ns");
	CHECK(crowded_psi > 200e6, "beside two cores, the task waited for a CPU: %.1f ms",
	      crowded_psi / 1e6);
	CHECK(tu_num(json_get(crowded, "metrics"), "host.psi.cpu.some_ns") >= crowded_psi * 0.9,
	      "the host's cpu pressure holds the task's: %.1f ms",
	      tu_num(json_get(crowded, "metrics"), "host.psi.cpu.some_ns") / 1e6);
	{
		const struct json *ph = tu_find(json_get(crowded, "phases"), "name", "burn");
		double p = tu_num(json_get(ph, "pressure"), "cpu_some_ns");

		CHECK(p > 150e6 && p <= crowded_psi,
		      "the phase's own cpu pressure: %.1f ms of the task's %.1f ms", p / 1e6,
		      crowded_psi / 1e6);
		CHECK(tu_num(json_get(ph, "host_pressure"), "cpu_some_ns") >= p * 0.9,
		      "the host's over the phase: %.1f ms",
		      tu_num(json_get(ph, "host_pressure"), "cpu_some_ns") / 1e6);
	}

	m = json_get(alone, "metrics");
	CHECK(!other_named(alone, rel), "alone: the burner's cgroup is not named");
	CHECK(tu_num(m, "host.other_cpu_ns") < busy_other * 0.15,
	      "alone: the rest of the host %.1f ms, beside the burner %.1f ms",
	      tu_num(m, "host.other_cpu_ns") / 1e6, busy_other / 1e6);
	CHECK(tu_num(m, "psi.cpu.some_ns") < crowded_psi / 10,
	      "alone: cpu pressure %.2f ms, beside two cores %.1f ms",
	      tu_num(m, "psi.cpu.some_ns") / 1e6, crowded_psi / 1e6);
	printf("    others %.1f ms beside one core, %.1f ms alone; cpu pressure %.2f ms, "
	       "%.1f ms beside two cores, %.2f ms alone\n",
	       busy_other / 1e6, tu_num(m, "host.other_cpu_ns") / 1e6, busy_psi / 1e6,
	       crowded_psi / 1e6, tu_num(m, "psi.cpu.some_ns") / 1e6);
}

/*
 * Two tasks of one daemon side by side: a worker's (its own cgroup, `task start`)
 * burning one core for 2.5 s and a run burning one core for 1.5 s meanwhile.
 * Expected: each names the other as a task by its id (the worker's cgroup by the
 * daemon, the run's under taskprobe's), with at least the CPU their overlap held.
 */
TEST(TIER_E2E, host_context_names_the_daemons_other_tasks)
{
	const char *db = tu_tmp("hcd.db"), *sock = tu_tmp("hcd.sock"), *wj = tu_tmp("w1.json");
	const char *rj = tu_tmp("r1.json");
	const struct json *w, *run, *o;
	char cg[4096], sock_opt[4200];
	struct tu_result r;
	pid_t d, burner;
	int st;

	if (!ASSERT_OK(tu_cgroup_make(cg, sizeof(cg)), "a worker's cgroup"))
		return;
	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	tu_tp(&r, 30, "task", "start", "w1", "--cgroup", cg, sock_opt, NULL);
	ASSERT_EQ(r.status, 0, "task start");
	burner = tu_spawn((char *[]){ (char *)tu_helper("burn"), "1", "2500", "/dev/null",
				      "--nested", cg, NULL });
	tu_track_pid(burner);
	usleep(300000);
	tu_tp(&r, 60, "run", "--quiet", "--id", "r1", "--json", rj, "--", tu_helper("burn"), "1",
	      "1500", NULL);
	ASSERT_EQ(r.status, 0, "the run through the daemon");
	ASSERT_EQ(waitpid(burner, &st, 0), burner, "the worker's burner");
	tu_tp(&r, 30, "task", "end", "w1", "--json", wj, sock_opt, NULL);
	ASSERT_EQ(r.status, 0, "task end");
	kill(d, SIGTERM);
	waitpid(d, NULL, 0);
	w = tu_load_json(wj);
	run = tu_load_json(rj);
	if (!ASSERT_TRUE(w && run, "both records"))
		return;
	o = other_named(run, "w1");
	CHECK(o && !strcmp(json_str(o, "kind"), "task") && tu_num(o, "cpu_ns") > 1.2e9,
	      "the run names the worker's task w1 (its cgroup named by the daemon): %.0f ms",
	      o ? tu_num(o, "cpu_ns") / 1e6 : -1.0);
	/* r1 began and ended within w1: named with all of its CPU, as its own cgroup had it. */
	o = other_named(w, "r1");
	CHECK(o && !strcmp(json_str(o, "kind"), "task") &&
		      tu_num(o, "cpu_ns") ==
			      tu_num(json_get(run, "cgroup_cpu_stat"), "usage_usec") * 1000,
	      "the worker's task names the run r1 with its cgroup's usage: %.3f ms vs %.3f ms",
	      o ? tu_num(o, "cpu_ns") / 1e6 : -1.0,
	      tu_num(json_get(run, "cgroup_cpu_stat"), "usage_usec") / 1e3);
	CHECK(tu_num(json_get(w, "metrics"), "host.other_cpu_ns") >= 1.4e9,
	      "the rest of the host holds the run's CPU");
}
