// SPDX-License-Identifier: GPL-2.0
/* End-to-end tests: the daemon, and cgroups that a worker starts and ends as tasks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <pty.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/util.h"
#include "collector/cgroup.h"
#include "harness.h"
#include "model/config.h"
#include "testutil.h"

/* Exit status of pid within 10 s, or -1. */
static int wait_exit(pid_t pid)
{
	int st;

	for (int i = 0; i < 1000; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	return -1;
}

/* Runs script in cgroup cg (it moves itself in first), waits for it. */
static int run_in(const char *cg, const char *script)
{
	char procs[4200];
	pid_t pid;
	int st;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	pid = fork();
	if (pid == 0) {
		FILE *f = fopen(procs, "w");

		if (!f || fprintf(f, "0\n") < 0 || fclose(f))
			_exit(126);
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* GET url with curl: the body in r->out (the status code cut off), the code returned. */
static int http_get(struct tu_result *r, const char *url, const char *token)
{
	char auth[320];
	char *nl;
	int code;

	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token ? token : "");
	if (token)
		tu_run((char *[]){ "curl", "-s", "-H", auth, "-w", "\n%{http_code}", (char *)url,
				   NULL },
		       r, 30);
	else
		tu_run((char *[]){ "curl", "-s", "-w", "\n%{http_code}", (char *)url, NULL }, r,
		       30);
	nl = r->out ? strrchr(r->out, '\n') : NULL;
	if (!nl)
		return -1;
	code = atoi(nl + 1);
	*nl = '\0';
	return code;
}

/*
 * The exposition format, checked line by line: every sample's family has its TYPE
 * before it; returns the sum of the samples of family (all label sets), or -1.
 */
static double prom_sum(const char *text, const char *family, int *bad)
{
	char typed[64][128], line[1024];
	int ntyped = 0;
	double sum = -1;

	*bad = 0;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char name[128], *brace, *space;
		bool known = false;

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		p += n + (nl != NULL);
		if (!strncmp(line, "# TYPE ", 7)) {
			if (ntyped < 64 && sscanf(line + 7, "%127s", typed[ntyped]) == 1)
				ntyped++;
			continue;
		}
		if (line[0] == '#' || !line[0])
			continue;
		space = strrchr(line, ' ');
		if (!space) {
			(*bad)++;
			continue;
		}
		brace = strchr(line, '{');
		snprintf(name, sizeof(name), "%.*s",
			 (int)((brace && brace < space ? brace : space) - line), line);
		for (int i = 0; i < ntyped; i++)
			known |= !strcmp(typed[i], name);
		if (!known || (brace && !strchr(brace, '}')))
			(*bad)++;
		if (!strcmp(name, family))
			sum = (sum < 0 ? 0 : sum) + atof(space + 1);
	}
	return sum;
}

/*
 * A worker's cgroup, tracked from `task start` to `task end` by a daemon: the counts
 * are the processes the test made there, the CPU is the cgroup's own cpu.stat, and a
 * task still tracked when the daemon is stopped is stored as interrupted.
 */
TEST(TIER_E2E, daemon_tracks_a_workers_cgroup)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *json = tu_tmp("t1.json");
	const char *truth = tu_tmp("truth"), *perf = tu_tmp("perfherder-data.json");
	char cg[4096], script[1024], sock_opt[4200], listen[64], base[64], url[256];
	const struct json *rec;
	struct cg_cpu_stat cs;
	struct tu_result r, pr;
	double children, self;
	pid_t d;

	if (!ASSERT_OK(tu_cgroup_make(cg, sizeof(cg)), "a worker's cgroup"))
		return;
	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	/* A port of this test's own on loopback. */
	snprintf(listen, sizeof(listen), "--listen=127.0.0.1:%d", 20000 + getpid() % 20000);
	snprintf(base, sizeof(base), "http://%s", listen + 9);
	setenv("TASKPROBE_INSTANCE_TYPE", "test.large", 1);
	d = tu_spawn((char *[]){ (char *)tu_bin(), "daemon", "--db", (char *)db, sock_opt, listen,
				 NULL });
	unsetenv("TASKPROBE_INSTANCE_TYPE");
	if (!ASSERT_TRUE(d > 0 && tu_wait_socket(sock, d), "the daemon listens"))
		return;
	/* A second daemon on the same socket refuses to start. */
	tu_tp(&r, 30, "daemon", "--db", db, sock_opt, NULL);
	ASSERT_EQ(r.status, 1, "a second daemon");
	ASSERT_TRUE(strstr(r.err, "a daemon is running already") != NULL, "says why");

	tu_tp(&r, 30, "task", "start", "t1", "--cgroup", cg, "--label", "job=build", sock_opt,
	      NULL);
	ASSERT_EQ(r.status, 0, "task start");
	ASSERT_TRUE(strstr(r.out, "TASKPROBE_SOCKET=/run/taskprobe/") != NULL,
		    "its metrics socket is said");
	tu_tp(&r, 30, "task", "start", "t1", "--cgroup", cg, sock_opt, NULL);
	ASSERT_EQ(r.status, 1, "the same id again");
	ASSERT_TRUE(strstr(r.err, "tracked already") != NULL, "says why");
	tu_tp(&r, 30, "task", "start", "t9", "--cgroup", "/nonexistent", sock_opt, NULL);
	ASSERT_EQ(r.status, 1, "a cgroup that does not exist");
	tu_tp(&r, 30, "task", "start", "t9", "--cgroup", cg, "--label", "host=x", sock_opt, NULL);
	ASSERT_EQ(r.status, 2, "a task label naming a host label");

	/* sh, 20 /bin/true, burn and its 2 children: 22 execs, 23 forks. */
	snprintf(script, sizeof(script),
		 "i=0; while [ $i -lt 20 ]; do /bin/true; i=$((i+1)); done; %s 2 150 %s",
		 tu_helper("burn"), truth);
	ASSERT_EQ(run_in(cg, script), 0, "the workload");
	if (!ASSERT_OK(cgroup_read_cpu_stat(cg, &cs), "the cgroup's cpu.stat") ||
	    !ASSERT_OK(tu_read_truth(truth, &children, &self), "truth"))
		return;
	tu_tp(&r, 30, "task", "end", "t1", "--json", json, "--perfherder-file", perf, sock_opt,
	      NULL);
	ASSERT_EQ(r.status, 0, "task end");
	ASSERT_TRUE(strstr(r.err, "task ended after") != NULL, "the summary");
	rec = tu_load_json(json);
	if (!rec)
		return;
	/* Treeherder's performance artifact of the task, as its own schema takes it. */
	tu_run((char *[]){ "python3", "tests/helpers/check_perfherder.py",
			   "tests/helpers/perfherder-ref.json", (char *)perf, (char *)json,
			   "build_metrics", NULL },
	       &pr, 60);
	ASSERT_EQ(pr.status, 0, "check_perfherder.py on task end's artifact");
	if (pr.status)
		fprintf(stderr, "    %s", pr.out);
	ASSERT_STREQ(json_str(rec, "status"), "ended", "status");
	ASSERT_STREQ(json_str(json_get(rec, "labels"), "job"), "build", "its label");
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 22, "execs");
	ASSERT_EQ(tu_metric(rec, "proc.forks"), 23, "forks");
	ASSERT_NEAR(tu_metric(rec, "cpu.time_ns"), cs.usage_us * 1000.0, 0.02,
		    "CPU vs the cgroup's cpu.stat");
	ASSERT_GE(tu_metric(rec, "cpu.time_ns"), children + self, "at least burn's rusage");
	/* The HTTP API answers from the store what the CLI does. */
	snprintf(url, sizeof(url), "%s/api/v1/tasks/t1", base);
	ASSERT_EQ(http_get(&r, url, NULL), 200, "GET the task");
	ASSERT_EQ(tu_metric(tu_parse_json(r.out), "proc.execs"), 22, "its execs, over HTTP");
	ASSERT_EQ(tu_metric(tu_parse_json(r.out), "cpu.time_ns"), tu_metric(rec, "cpu.time_ns"),
		  "its CPU, the record's");
	snprintf(url, sizeof(url), "%s/api/v1/count?metric=proc.execs&label=job=build&by=job",
		 base);
	ASSERT_EQ(http_get(&r, url, NULL), 200, "GET count");
	ASSERT_EQ(tu_num(tu_parse_json(r.out), "sum"), 22, "count over HTTP");
	snprintf(url, sizeof(url), "%s/api/v1/tasks?status=ended&label=job=build", base);
	ASSERT_EQ(http_get(&r, url, NULL), 200, "GET tasks");
	ASSERT_STREQ(json_str(json_at(tu_parse_json(r.out), 0), "id"), "t1", "the ended task");
	snprintf(url, sizeof(url), "%s/api/v1/tasks/t1/histograms", base);
	ASSERT_EQ(http_get(&r, url, NULL), 200, "GET histograms");
	ASSERT_EQ(tu_num(json_get(tu_parse_json(r.out), "io.latency"), "count"),
		  tu_num(json_get(json_get(rec, "histograms"), "io.latency"), "count"),
		  "the I/O latency histogram, the record's");
	ASSERT_TRUE(!json_get(tu_parse_json(r.out), "cpu.runq_latency"),
		    "no run-queue histogram unless collected");
	/* The series at N buckets: what `series --json` says, bounded 10..5000. */
	snprintf(url, sizeof(url), "%s/api/v1/tasks/t1/series?points=10", base);
	ASSERT_EQ(http_get(&r, url, NULL), 200, "GET series");
	{
		const struct json *api = tu_parse_json(r.out), *cli;

		ASSERT_EQ(json_len(json_get(api, "buckets")), 10, "10 buckets");
		tu_tp(&r, 30, "series", "t1", "--db", db, "--points", "10", "--json", NULL);
		cli = tu_parse_json(r.out);
		ASSERT_TRUE(tu_num(api, "samples") >= 1, "a sample at least (the final one)");
		ASSERT_EQ(tu_num(api, "samples"), tu_num(cli, "samples"), "samples, the CLI's");
		double in_buckets = 0;
		bool same = true;

		/* Every sample in one bucket, and each bucket the CLI's, to the sample. */
		for (size_t b = 0; b < 10; b++) {
			const struct json *x = json_at(json_get(api, "buckets"), b);
			const struct json *y = json_at(json_get(cli, "buckets"), b);

			in_buckets += tu_num(x, "samples");
			same &= tu_num(x, "samples") == tu_num(y, "samples") &&
				tu_num(json_get(x, "max"), "procs") ==
					tu_num(json_get(y, "max"), "procs");
		}
		ASSERT_EQ(in_buckets, tu_num(api, "samples"), "the buckets hold every sample");
		ASSERT_TRUE(same, "each bucket, the CLI's");
	}
	snprintf(url, sizeof(url), "%s/api/v1/tasks/t1/series?points=5", base);
	ASSERT_EQ(http_get(&r, url, NULL), 400, "points below 10");
	snprintf(url, sizeof(url), "%s/api/v1/tasks/t1/series?points=5001", base);
	ASSERT_EQ(http_get(&r, url, NULL), 400, "points above 5000");

	/* /metrics: the execs summed over tasks, no task id among the labels. */
	snprintf(url, sizeof(url), "%s/metrics", base);
	ASSERT_EQ(http_get(&r, url, NULL), 200, "GET /metrics");
	{
		int bad;

		ASSERT_EQ(prom_sum(r.out, "taskprobe_proc_execs_total", &bad), 22,
			  "proc.execs in /metrics");
		ASSERT_EQ(bad, 0, "every sample well formed and typed");
		ASSERT_EQ(prom_sum(r.out, "taskprobe_tasks_running", &bad), 0, "none running");
		ASSERT_TRUE(strstr(r.out, "instance_type=\"test.large\"") != NULL,
			    "the host's instance type as a label");
		ASSERT_TRUE(strstr(r.out, "\"t1\"") == NULL, "never the task id");
	}
	snprintf(url, sizeof(url), "%s/api/v1/tasks?since=bogus", base);
	ASSERT_EQ(http_get(&r, url, NULL), 400, "a bad parameter");
	ASSERT_TRUE(json_str(tu_parse_json(r.out), "error")[0] != '\0', "says why, in JSON");
	snprintf(url, sizeof(url), "%s/api/v1/tasks/nosuch", base);
	ASSERT_EQ(http_get(&r, url, NULL), 404, "an unknown id");
	snprintf(url, sizeof(url), "%s/api/v1/count?metric=no.such", base);
	ASSERT_EQ(http_get(&r, url, NULL), 404, "an unknown metric");
	snprintf(url, sizeof(url), "%s/api/v1/count?metric=proc.execs&host=worker-%%5Bab", base);
	ASSERT_EQ(http_get(&r, url, NULL), 400, "an unclosed set in host");
	ASSERT_STREQ(json_str(tu_parse_json(r.out), "error"),
		     "invalid host glob: a '[' without its ']'", "says why, in JSON");

	tu_tp(&r, 30, "task", "end", "t1", sock_opt, NULL);
	ASSERT_EQ(r.status, 1, "ended already");
	ASSERT_TRUE(strstr(r.err, "no task 't1' is tracked") != NULL, "says why");
	ASSERT_OK(access(cg, F_OK), "the worker's cgroup is left to the worker");

	/* Still tracked when the daemon stops: kept, as interrupted; the daemon exits 0. */
	tu_tp(&r, 30, "task", "start", "t2", "--cgroup", cg, sock_opt, NULL);
	ASSERT_EQ(r.status, 0, "task start t2");
	ASSERT_EQ(run_in(cg, "/bin/true"), 0, "t2's workload");
	snprintf(url, sizeof(url), "%s/metrics", base);
	if (ASSERT_EQ(http_get(&r, url, NULL), 200, "GET /metrics")) {
		int bad;

		ASSERT_EQ(prom_sum(r.out, "taskprobe_tasks_running", &bad), 1, "t2 running");
	}
	/* A running task's record: its figures so far, from the collector. */
	snprintf(url, sizeof(url), "%s/api/v1/tasks/t2", base);
	ASSERT_EQ(http_get(&r, url, NULL), 200, "GET a running task");
	const struct json *live = tu_parse_json(r.out);
	double live_execs = tu_metric(live, "proc.execs");

	ASSERT_STREQ(json_str(live, "status"), "running", "it says running");
	ASSERT_TRUE(json_get(live, "exit_status") &&
			    json_get(live, "exit_status")->type == JSON_NULL,
		    "no exit status yet");
	ASSERT_GE(live_execs, 1, "t2's exec so far");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status after SIGTERM");
	ASSERT_TRUE(access(sock, F_OK) != 0, "its socket is gone");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	ASSERT_EQ(r.status, 0, "list");
	rec = tu_parse_json(r.out);
	ASSERT_STREQ(json_str(tu_find(rec, "id", "t2"), "status"), "interrupted", "t2");
	ASSERT_STREQ(json_str(tu_find(rec, "id", "t1"), "status"), "ended", "t1");
	tu_tp(&r, 30, "count", "proc.execs", "--db", db, "--label", "job=build", "--json", NULL);
	ASSERT_EQ(tu_num(tu_parse_json(r.out), "sum"), 22, "the store's count of t1's execs");
	tu_tp(&r, 30, "show", "t2", "--db", db, "--json", NULL);
	ASSERT_EQ(tu_metric(tu_parse_json(r.out), "proc.execs"), live_execs,
		  "t2's stored execs, what the running record said");
	/* Nothing ran in t2 after its workload: its CPU then is its CPU at the end. */
	ASSERT_NEAR(tu_metric(tu_parse_json(r.out), "cpu.time_ns"), tu_metric(live, "cpu.time_ns"),
		    0.02, "t2's stored CPU, what the running record said");
	tu_tp(&r, 30, "task", "end", "t2", sock_opt, NULL);
	ASSERT_EQ(r.status, 1, "no daemon");
	ASSERT_TRUE(strstr(r.err, "no daemon answers") != NULL, "says why");
	ASSERT_TRUE(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "in one line");
}

/* With api_token set, a request without the token gets 401; off loopback needs one. */
TEST(TIER_E2E, api_token_is_required)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *conf = tu_tmp("tp.conf");
	char sock_opt[4200], conf_opt[4200], listen[64], url[128];
	static const char token[] = "s3cret-token-0123456789";
	struct tu_result r;
	pid_t d;

	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	snprintf(conf_opt, sizeof(conf_opt), "--config=%s", conf);
	tu_tp(&r, 30, "daemon", "--db", db, sock_opt, "--listen=0.0.0.0:1", NULL);
	ASSERT_EQ(r.status, 1, "not loopback, no token");
	ASSERT_TRUE(strstr(r.err, "set api_token") != NULL, "says what to do");
	tu_write_file(conf, "api_token = s3cret-token-0123456789\n");
	snprintf(listen, sizeof(listen), "--listen=127.0.0.1:%d", 20000 + (getpid() + 7) % 20000);
	d = tu_spawn((char *[]){ (char *)tu_bin(), "daemon", conf_opt, "--db", (char *)db, sock_opt,
				 listen, NULL });
	if (!ASSERT_TRUE(d > 0 && tu_wait_socket(sock, d), "the daemon listens"))
		return;
	snprintf(url, sizeof(url), "http://%s/healthz", listen + 9);
	ASSERT_EQ(http_get(&r, url, NULL), 401, "no token");
	ASSERT_EQ(http_get(&r, url, "wrong-token-0123456789"), 401, "a wrong token");
	ASSERT_EQ(http_get(&r, url, token), 200, "the token");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}

/*
 * SIGHUP reads the config and its rules again for tasks started after it; a file
 * saved without it changes nothing, and a bad one is not taken.
 */
TEST(TIER_E2E, daemon_reload_is_for_new_tasks)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *conf = tu_tmp("tp.conf");
	static const char *const ids[4] = { "r1", "r1b", "r2", "r3" };
	static const char *const files[4] = {
		"worker_pool = pool-a\n[rules]\nexec trues ^/bin/true\n",
		"worker_pool = pool-b\n[rules]\nexec trues ^/bin/true\nexec shs ^/bin/sh\n",
		NULL, /* the same file, now with SIGHUP */
		"worker_pool = pool-c\nretain_days = 0\n",
	};
	char cg[4096], sock_opt[4200], conf_opt[4200], json[4200];
	const struct json *groups, *rec;
	struct tu_result r;
	pid_t d;

	if (!ASSERT_OK(tu_cgroup_make(cg, sizeof(cg)), "a worker's cgroup"))
		return;
	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	snprintf(conf_opt, sizeof(conf_opt), "--config=%s", conf);
	tu_write_file(conf, files[0]);
	d = tu_spawn((char *[]){ (char *)tu_bin(), "daemon", conf_opt, "--db", (char *)db, sock_opt,
				 "--listen=off", NULL });
	if (!ASSERT_TRUE(d > 0 && tu_wait_socket(sock, d), "the daemon listens"))
		return;
	for (int i = 0; i < 4; i++) {
		if (i && files[i])
			tu_write_file(conf, files[i]);
		if (i >= 2) {
			kill(d, SIGHUP);
			/* The signal is the loop's next event; give it that turn. */
			usleep(300000);
		}
		tu_tp(&r, 30, "task", "start", ids[i], "--cgroup", cg, sock_opt, NULL);
		ASSERT_EQ(r.status, 0, "task start");
		ASSERT_EQ(run_in(cg, "/bin/true"), 0, "the workload");
		snprintf(json, sizeof(json), "%s.%s.json", conf, ids[i]);
		tu_tp(&r, 30, "task", "end", ids[i], "--quiet", "--json", json, sock_opt, NULL);
		ASSERT_EQ(r.status, 0, "task end");
		rec = tu_load_json(json);
		/* sh, then /bin/true: each rule matches one exec of each task it is in. */
		ASSERT_EQ(tu_metric(rec, "trues"), 1, "the exec rule of the first file");
		ASSERT_EQ(tu_metric(rec, "shs"), i == 2 || i == 3 ? 1 : -1,
			  "the rule added, only after the SIGHUP");
	}
	ASSERT_EQ(waitpid(d, NULL, WNOHANG), 0, "a bad config on SIGHUP does not stop the daemon");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
	/* 2 execs a task; r1 and r1b (saved, no SIGHUP) in pool-a, r2 and r3 in pool-b. */
	tu_tp(&r, 30, "count", "proc.execs", "--db", db, "--by", "worker_pool", "--json", NULL);
	groups = json_get(tu_parse_json(r.out), "groups");
	ASSERT_EQ(tu_num(tu_find(groups, "value", "pool-a"), "tasks"), 2, "before the reload");
	ASSERT_EQ(tu_num(tu_find(groups, "value", "pool-b"), "tasks"), 2, "after it");
	ASSERT_EQ(tu_num(tu_find(groups, "value", "pool-b"), "sum"), 4, "their execs");
	ASSERT_TRUE(tu_find(groups, "value", "pool-c") == NULL, "the bad file was not taken");
}

/*
 * `taskprobe run --id ID --quiet --json JSON [OPT] -- sh -c SCRIPT`, not waited for; its
 * stderr is the test's, so a run that fails says why in the test's output.
 */
static pid_t spawn_run(const char *id, const char *json, const char *opt, const char *script)
{
	char *argv[16];
	int n = 0;

	argv[n++] = (char *)tu_bin();
	argv[n++] = "run";
	argv[n++] = "--id";
	argv[n++] = (char *)id;
	argv[n++] = "--quiet";
	argv[n++] = "--json";
	argv[n++] = (char *)json;
	if (opt)
		argv[n++] = (char *)opt;
	argv[n++] = "--";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = (char *)script;
	argv[n] = NULL;
	return tu_spawn_fds(argv, -1, STDERR_FILENO);
}

/* Exit status of pid within 60 s, or -1. */
static int wait_run(pid_t pid)
{
	for (int i = 0; i < 6; i++) {
		int st = wait_exit(pid);

		if (st >= 0)
			return st;
	}
	return -1;
}

/*
 * Three concurrent runs through one daemon, then the same three embedded: both equal
 * burn's own rusage (CPU within 2 %) and the processes each made, exactly.
 */
TEST(TIER_E2E, runs_through_the_daemon_equal_embedded)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *edb = tu_tmp("e.db");
	char edb_opt[4200];
	pid_t d, pids[3];

	snprintf(edb_opt, sizeof(edb_opt), "--db=%s", edb);
	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	for (int mode = 0; mode < 2; mode++) {
		char script[3][1024], json[3][4200], truth[3][4200], id[3][32];

		for (int i = 0; i < 3; i++) {
			snprintf(id[i], sizeof(id[i]), "%s%d", mode ? "e" : "d", i);
			snprintf(json[i], sizeof(json[i]), "%s", tu_tmp(id[i]));
			snprintf(truth[i], sizeof(truth[i]), "%s.truth", json[i]);
			/* sh, 5i /bin/true, burn and its i+1 children: 5i+2 execs, 5i+i+2 forks. */
			snprintf(script[i], sizeof(script[i]),
				 "i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done; "
				 "exec %s %d 300 %s",
				 5 * i, tu_helper("burn"), i + 1, truth[i]);
			pids[i] = spawn_run(id[i], json[i], mode ? edb_opt : NULL, script[i]);
		}
		for (int i = 0; i < 3; i++) {
			const struct json *rec;
			double children, self;

			ASSERT_EQ(wait_run(pids[i]), 0, "the run's exit status");
			rec = tu_load_json(json[i]);
			if (!rec || !ASSERT_OK(tu_read_truth(truth[i], &children, &self), "truth"))
				continue;
			ASSERT_STREQ(json_str(json_get(rec, "collector"), "mode"),
				     mode ? "embedded" : "daemon", "which collector");
			ASSERT_EQ(tu_metric(rec, "proc.execs"), 5 * i + 2, "execs");
			ASSERT_EQ(tu_metric(rec, "proc.forks"), 6 * i + 2, "forks");
			ASSERT_NEAR(tu_metric(rec, "cpu.time_ns"), children + self, 0.02,
				    "CPU vs burn's rusage");
		}
	}
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
	{
		struct tu_result r;
		const struct json *l;

		tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
		l = tu_parse_json(r.out);
		ASSERT_EQ(json_len(l), 3, "the daemon stored its three");
		ASSERT_STREQ(json_str(tu_find(l, "id", "d2"), "status"), "exited", "as exited");
		tu_tp(&r, 30, "list", "--db", edb, "--json", NULL);
		ASSERT_EQ(json_len(tu_parse_json(r.out)), 3, "the embedded three, in their own");
	}
}

/* Fifty concurrent short runs through one daemon: all stored, each its own execs. */
TEST(TIER_E2E, fifty_concurrent_runs_through_one_daemon)
{
	enum { N = 50 };
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock");
	static char json[N][4200], script[N][128];
	const struct json *l;
	struct tu_result r;
	int exact = 0, daemon_mode = 0, ok = 0;
	pid_t d, pids[N];

	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	for (int i = 0; i < N; i++) {
		char id[16];

		snprintf(id, sizeof(id), "f%d", i);
		snprintf(json[i], sizeof(json[i]), "%s", tu_tmp(id));
		/* sh, seq and i /bin/true: i+2 execs. */
		snprintf(script[i], sizeof(script[i]), "for x in $(seq 1 %d); do /bin/true; done",
			 i);
		pids[i] = spawn_run(id, json[i], "--grace=1", script[i]);
	}
	for (int i = 0; i < N; i++) {
		const struct json *rec;

		ok += wait_run(pids[i]) == 0;
		rec = tu_load_json(json[i]);
		exact += rec && tu_metric(rec, "proc.execs") == i + 2;
		daemon_mode += rec && !strcmp(json_str(json_get(rec, "collector"), "mode") ?: "",
					      "daemon");
		if (rec && tu_metric(rec, "proc.execs") != i + 2)
			CHECK(false, "f%d: %.0f execs, expected %d", i,
			      tu_metric(rec, "proc.execs"), i + 2);
	}
	ASSERT_EQ(ok, N, "runs that exited 0");
	ASSERT_EQ(daemon_mode, N, "runs the daemon held");
	ASSERT_EQ(exact, N, "runs with exactly their own execs");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
	tu_tp(&r, 30, "list", "--db", db, "--json", "--limit", "100", NULL);
	l = tu_parse_json(r.out);
	ASSERT_EQ(json_len(l), N, "all stored");
	tu_tp(&r, 30, "count", "proc.execs", "--db", db, "--json", NULL);
	/* sum over i of i+2 */
	ASSERT_EQ(tu_num(tu_parse_json(r.out), "sum"), N * (N - 1) / 2 + 2 * N,
		  "the store's execs, summed");
}

/*
 * The daemon stopped while a run's command runs: the task is stored as interrupted,
 * with what it counted, and the run still waits for its command and exits with its code.
 */
TEST(TIER_E2E, daemon_stopped_under_a_run)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *json = tu_tmp("s.json");
	const char *started = tu_tmp("started");
	const struct json *rec;
	struct tu_result r;
	char script[4200];
	pid_t d, run;

	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	/* sh, 3 /bin/true, touch, then sleep: 6 execs before the stop. */
	snprintf(script, sizeof(script),
		 "/bin/true; /bin/true; /bin/true; touch %s; sleep 1; exit 4", started);
	run = spawn_run("s1", json, NULL, script);
	for (int i = 0; i < 1000 && access(started, F_OK); i++)
		usleep(10000);
	ASSERT_OK(access(started, F_OK), "the command started");
	/* Time for sh to start sleep; the stop drains its exec event before the record. */
	usleep(200000);
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
	ASSERT_EQ(wait_run(run), 4, "the run exits with its command's code");
	rec = tu_load_json(json);
	ASSERT_STREQ(json_str(rec, "status"), "interrupted", "the record run got");
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 6, "what it counted until the stop");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	ASSERT_STREQ(json_str(tu_find(tu_parse_json(r.out), "id", "s1"), "status"), "interrupted",
		     "stored as interrupted");
	tu_tp(&r, 30, "show", "s1", "--db", db, "--json", NULL);
	ASSERT_EQ(tu_metric(tu_parse_json(r.out), "proc.execs"), tu_metric(rec, "proc.execs"),
		  "the stored figures, the record's");
}

/*
 * --no-daemon embeds the collector with the daemon running; without it the same run
 * goes to the daemon. The summary says which. The host's store is hidden behind a
 * tmpfs in a mount namespace of this test's own: a run without --db writes there.
 */
TEST(TIER_E2E, no_daemon_embeds)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock");
	const char *j1 = tu_tmp("n1.json"), *j2 = tu_tmp("n2.json");
	struct tu_result r;
	pid_t d;

	if (!ASSERT_OK(unshare(CLONE_NEWNS), "a mount namespace") ||
	    !ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "private mounts") ||
	    !ASSERT_OK(mount("tmpfs", "/var/lib", "tmpfs", 0, "mode=0755"), "/var/lib hidden"))
		return;
	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	tu_tp(&r, 60, "run", "--id", "n1", "--no-daemon", "--json", j1, "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "run --no-daemon");
	ASSERT_TRUE(strstr(r.err, "embedded (no daemon was used)") != NULL, "the summary says");
	ASSERT_STREQ(json_str(json_get(tu_load_json(j1), "collector"), "mode"), "embedded",
		     "the record says");
	tu_tp(&r, 60, "run", "--id", "n2", "--json", j2, "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "run");
	ASSERT_TRUE(strstr(r.err, "the host daemon's") != NULL, "the summary says");
	ASSERT_STREQ(json_str(json_get(tu_load_json(j2), "collector"), "mode"), "daemon",
		     "the record says");
	ASSERT_EQ(tu_metric(tu_load_json(j1), "proc.execs"), 1, "embedded: /bin/true");
	ASSERT_EQ(tu_metric(tu_load_json(j2), "proc.execs"), 1, "the daemon's: /bin/true");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	ASSERT_EQ(json_len(tu_parse_json(r.out)), 1, "the daemon stored one");
	ASSERT_TRUE(tu_find(tu_parse_json(r.out), "id", "n2") != NULL, "n2");
	tu_tp(&r, 30, "list", "--db", TP_DEFAULT_DB, "--json", NULL);
	ASSERT_TRUE(tu_find(tu_parse_json(r.out), "id", "n1") != NULL,
		    "n1, in the default store (this namespace's)");
	umount2("/var/lib", MNT_DETACH);
}

/*
 * max_tasks = 2: a third task is refused in one line for `task start` (exit 1); a
 * `run` is never stopped by it: it embeds a collector of its own, says so in one
 * warning line, and its record counts its command exactly and notes the fault; with
 * --strict it exits 125 and its command never runs. The two tracked keep exactly
 * their own counts; once one ends there is room.
 */
TEST(TIER_E2E, full_task_table_refuses_the_new_task)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *conf = tu_tmp("tp.conf");
	const char *m4 = tu_tmp("m4.json"), *mark = tu_tmp("ran");
	char cg[3][4096], sock_opt[4200], conf_opt[4200], json[3][4200], script[4200];
	const struct json *rec, *faults;
	static const char *const ids[3] = { "m1", "m2", "m3" };
	struct tu_result r;
	pid_t d;

	for (int i = 0; i < 3; i++)
		if (!ASSERT_OK(tu_cgroup_make(cg[i], sizeof(cg[i])), "a worker's cgroup"))
			return;
	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	snprintf(conf_opt, sizeof(conf_opt), "--config=%s", conf);
	tu_write_file(conf, "max_tasks = 2\n");
	d = tu_spawn((char *[]){ (char *)tu_bin(), "daemon", conf_opt, "--db", (char *)db, sock_opt,
				 "--listen=off", NULL });
	if (!ASSERT_TRUE(d > 0 && tu_wait_socket(sock, d), "the daemon listens"))
		return;
	for (int i = 0; i < 3; i++) {
		tu_tp(&r, 30, "task", "start", ids[i], "--cgroup", cg[i], sock_opt, NULL);
		ASSERT_EQ(r.status, i < 2 ? 0 : 1, "task start");
	}
	ASSERT_TRUE(strstr(r.err, "task table is full: 2 tasks") != NULL, "says why");
	ASSERT_TRUE(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "in one line");
	unsetenv("TASKPROBE_DB");
	setenv("TASKPROBE_CONTROL", sock, 1);
	/* The embedded collector stores in the default store: this namespace's tmpfs. */
	if (!ASSERT_OK(unshare(CLONE_NEWNS), "a mount namespace") ||
	    !ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "private mounts") ||
	    !ASSERT_OK(mount("tmpfs", "/var/lib", "tmpfs", 0, "mode=0755"), "/var/lib hidden"))
		return;
	tu_tp(&r, 60, "run", "--id", "m4", "--quiet", "--json", m4, "--", "sh", "-c",
	      "/bin/true; /bin/true; exit 3", NULL);
	ASSERT_EQ(r.status, 3, "a run the daemon refused runs, with its command's status");
	CHECK(r.err && strstr(r.err, "task table is full") &&
		      strstr(r.err, "this run embeds a collector of its own") &&
		      strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
	      "one warning line says why and what was done: %s", r.err ? r.err : "(none)");
	rec = tu_load_json(m4);
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 3, "its execs, counted by its own collector");
	ASSERT_STREQ(json_str(json_get(rec, "collector"), "mode"), "embedded", "the record says");
	faults = json_get(json_get(rec, "collector"), "faults");
	ASSERT_TRUE(json_len(faults) == 1 && strstr(json_at(faults, 0)->str, "task table is full"),
		    "the fault is noted in the record");
	tu_tp(&r, 30, "list", "--db", TP_DEFAULT_DB, "--json", NULL);
	ASSERT_TRUE(tu_find(tu_parse_json(r.out), "id", "m4") != NULL, "and stored");
	snprintf(script, sizeof(script), "touch %s", mark);
	tu_tp(&r, 60, "run", "--strict", "--id", "m5", "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 125, "--strict: the refusal fails the run");
	ASSERT_TRUE(access(mark, F_OK) != 0, "--strict: its command never ran");
	CHECK(r.err && strstr(r.err, "--strict: the command is not run"), "says so: %s",
	      r.err ? r.err : "(none)");

	/* m1: 1+3 execs, m2: 1+5; then m1 ends, m3 gets its slot: 1+7. */
	ASSERT_EQ(run_in(cg[0], "/bin/true; /bin/true; /bin/true"), 0, "m1's workload");
	ASSERT_EQ(run_in(cg[1], "/bin/true; /bin/true; /bin/true; /bin/true; /bin/true"), 0,
		  "m2's workload");
	snprintf(json[0], sizeof(json[0]), "%s", tu_tmp("m1.json"));
	tu_tp(&r, 30, "task", "end", "m1", "--quiet", "--json", json[0], sock_opt, NULL);
	ASSERT_EQ(r.status, 0, "task end m1");
	tu_tp(&r, 30, "task", "start", "m3", "--cgroup", cg[2], sock_opt, NULL);
	ASSERT_EQ(r.status, 0, "m3, once m1 ended");
	ASSERT_EQ(run_in(cg[2], "/bin/true; /bin/true; /bin/true; /bin/true; /bin/true; "
				"/bin/true; /bin/true"),
		  0, "m3's workload");
	for (int i = 1; i < 3; i++) {
		snprintf(json[i], sizeof(json[i]), "%s", tu_tmp(i == 1 ? "m2.json" : "m3.json"));
		tu_tp(&r, 30, "task", "end", ids[i], "--quiet", "--json", json[i], sock_opt, NULL);
		ASSERT_EQ(r.status, 0, "task end");
	}
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(tu_metric(tu_load_json(json[i]), "proc.execs"), 2 * i + 4,
			  "each task's own execs");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}

/* A PromQL query to prom (HOST:PORT): the value of the series whose label key is val. */
static double prom_query(const char *prom, const char *query, const char *key, const char *val)
{
	char url[256], q[512];
	const struct json *res;
	struct tu_result r;

	snprintf(url, sizeof(url), "http://%s/api/v1/query", prom);
	snprintf(q, sizeof(q), "query=%s", query);
	tu_run((char *[]){ "curl", "-s", "-G", "--data-urlencode", q, url, NULL }, &r, 30);
	if (r.status || !r.out || r.out[0] != '{')
		return -1;
	res = json_get(json_get(tu_parse_json(r.out), "data"), "result");
	for (size_t i = 0; i < json_len(res); i++) {
		const struct json *e = json_at(res, i);
		const struct json *v = json_at(json_get(e, "value"), 1);

		if (!strcmp(json_str(json_get(e, "metric"), key), val))
			return v && v->type == JSON_STR ? atof(v->str) : -1;
	}
	return -1;
}

/*
 * A real Prometheus, the test's own on loopback, scrapes the daemon's /metrics: its
 * query API gives the execs of the tasks the test ran, summed by the task label that
 * metrics_label names (job: Prometheus keeps its own job and says exported_job).
 */
TEST(TIER_E2E, prometheus_scrapes_the_daemon)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *conf = tu_tmp("tp.conf");
	const char *pconf = tu_tmp("prometheus.yml"), *pdata = tu_tmp("prometheus-data");
	char sock_opt[4200], conf_opt[4200], listen[64], pconf_opt[4200], pdata_opt[4200];
	char prom[64], prom_opt[128], yml[512];
	double build = -1, test = -1, up = -1;
	struct tu_result r;
	pid_t d, p;

	if (access("/usr/bin/prometheus", X_OK)) {
		tp_skip("no /usr/bin/prometheus: scripts/deps.sh installs Debian's prometheus");
		return;
	}
	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	snprintf(conf_opt, sizeof(conf_opt), "--config=%s", conf);
	snprintf(listen, sizeof(listen), "--listen=127.0.0.1:%d", 20000 + (getpid() + 11) % 20000);
	snprintf(prom, sizeof(prom), "127.0.0.1:%d", 40000 + getpid() % 20000);
	tu_write_file(conf, "metrics_label = job\nworker_pool = pool-p\n");
	d = tu_spawn((char *[]){ (char *)tu_bin(), "daemon", conf_opt, "--db", (char *)db, sock_opt,
				 listen, NULL });
	if (!ASSERT_TRUE(d > 0 && tu_wait_socket(sock, d), "the daemon listens"))
		return;
	unsetenv("TASKPROBE_DB");
	setenv("TASKPROBE_CONTROL", sock, 1);
	/* build: 3 + 4 execs in two tasks; test: 2 in one; one task without the label. */
	tu_tp(&r, 60, "run", "--quiet", "--label", "job=build", "--", "sh", "-c",
	      "/bin/true; /bin/true", NULL);
	ASSERT_EQ(r.status, 0, "run 1");
	tu_tp(&r, 60, "run", "--quiet", "--label", "job=build", "--", "sh", "-c",
	      "/bin/true; /bin/true; /bin/true", NULL);
	ASSERT_EQ(r.status, 0, "run 2");
	tu_tp(&r, 60, "run", "--quiet", "--label", "job=test", "--", "sh", "-c", "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "run 3");
	tu_tp(&r, 60, "run", "--quiet", "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "run 4");

	snprintf(yml, sizeof(yml),
		 "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
		 "scrape_configs:\n  - job_name: taskprobe\n    static_configs:\n"
		 "      - targets: ['%s']\n",
		 listen + 9);
	tu_write_file(pconf, yml);
	snprintf(pconf_opt, sizeof(pconf_opt), "--config.file=%s", pconf);
	snprintf(pdata_opt, sizeof(pdata_opt), "--storage.tsdb.path=%s", pdata);
	snprintf(prom_opt, sizeof(prom_opt), "--web.listen-address=%s", prom);
	p = tu_spawn((char *[]){ "/usr/bin/prometheus", pconf_opt, pdata_opt, prom_opt, NULL });
	ASSERT_TRUE(p > 0, "prometheus started");
	/*
	 * Its first scrape within a few seconds of start-up; 30 s at most. All three are
	 * asked until all three answer: a scrape may land between two of the queries.
	 */
	for (int i = 0; i < 60 && (build < 0 || test < 0 || up < 0); i++) {
		usleep(500000);
		up = prom_query(prom, "up", "job", "taskprobe");
		build = prom_query(prom, "sum by (exported_job) (taskprobe_proc_execs_total)",
				   "exported_job", "build");
		test = prom_query(prom, "sum by (exported_job) (taskprobe_proc_execs_total)",
				  "exported_job", "test");
	}
	ASSERT_EQ(up, 1, "the target is up");
	ASSERT_EQ(build, 7, "job=build's execs, from Prometheus");
	ASSERT_EQ(test, 2, "job=test's execs, from Prometheus");
	ASSERT_EQ(prom_query(prom, "sum by (worker_pool) (taskprobe_proc_execs_total)",
			     "worker_pool", "pool-p"),
		  10, "every task's execs, by the host's pool");
	ASSERT_EQ(prom_query(prom, "taskprobe_tasks_running", "job", "taskprobe"), 0,
		  "no task running");
	ASSERT_EQ(prom_query(prom, "count(taskprobe_proc_execs_total)", "", ""), 3,
		  "three series: build, test and the task without the label");
	kill(p, SIGTERM);
	ASSERT_TRUE(wait_run(p) >= 0, "prometheus stopped");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}

/* The events of a series or record answer of kind. */
static int events_of(const struct json *ans, const char *kind, const char *detail_has)
{
	const struct json *ev = json_get(ans, "events");
	int n = 0;

	for (size_t i = 0; i < json_len(ev); i++)
		n += !strcmp(json_str(json_at(ev, i), "kind"), kind) &&
		     strstr(json_str(json_at(ev, i), "detail"), detail_has);
	return n;
}

/*
 * The series answer at 100 buckets of a 100 ms-interval task: a one-second CPU spike
 * (burn's, its rusage the truth) survives as its buckets' max, the quiet buckets stay
 * low, and the notable events (a refused connect, two failed exits) come with their
 * times, while the task runs and after.
 */
TEST(TIER_E2E, series_keeps_a_spike_and_lists_events)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *truth = tu_tmp("truth");
	const char *json = tu_tmp("s.json");
	char sock_opt[4200], listen[64], url[256], script[4200];
	const struct json *ans, *bk;
	double children, self, spike = 0, quiet = 0;
	struct tu_result r;
	pid_t d, run;

	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	snprintf(listen, sizeof(listen), "--listen=127.0.0.1:%d", 20000 + (getpid() + 23) % 20000);
	d = tu_spawn((char *[]){ (char *)tu_bin(), "daemon", "--db", (char *)db, sock_opt, listen,
				 NULL });
	if (!ASSERT_TRUE(d > 0 && tu_wait_socket(sock, d), "the daemon listens"))
		return;
	unsetenv("TASKPROBE_DB");
	setenv("TASKPROBE_CONTROL", sock, 1);
	/* Port 1 on loopback: refused. curl exits 7, the task 3. */
	snprintf(script, sizeof(script),
		 "curl -s http://127.0.0.1:1/; sleep 4; %s 1 1000 %s; sleep 5; exit 3",
		 tu_helper("burn"), truth);
	run = spawn_run("sp", json, "--interval=100", script);
	for (int i = 0; i < 1500 && access(truth, F_OK); i++)
		usleep(10000);
	ASSERT_OK(access(truth, F_OK), "the spike is over");
	/* While it runs: the events so far, from the daemon's collector. */
	snprintf(url, sizeof(url), "http://%s/api/v1/tasks/sp/series?points=100", listen + 9);
	ASSERT_EQ(http_get(&r, url, NULL), 200, "GET the series of a running task");
	ans = tu_parse_json(r.out);
	ASSERT_STREQ(json_str(ans, "status"), "running", "running");
	ASSERT_EQ(events_of(ans, "connect_failed", "curl: connect to 127.0.0.1:1 refused"), 1,
		  "the refused connect, so far");
	ASSERT_EQ(events_of(ans, "failed_exit", "curl exited 7"), 1, "curl's exit, so far");
	ASSERT_EQ(wait_run(run), 3, "the task's exit status");

	ASSERT_EQ(http_get(&r, url, NULL), 200, "GET the series");
	ans = tu_parse_json(r.out);
	bk = json_get(ans, "buckets");
	ASSERT_EQ(json_len(bk), 100, "exactly 100 buckets");
	for (size_t b = 0; b < json_len(bk); b++) {
		const struct json *x = json_at(bk, b);
		double mc = tu_num(json_get(x, "max"), "cpu_millicores");

		spike = mc > spike ? mc : spike;
		/* The first three seconds: curl, then sleep. */
		if (tu_num(x, "t_ms") + 200 < 3000 && tu_num(x, "t_ms") > 500)
			quiet = mc > quiet ? mc : quiet;
	}
	if (ASSERT_OK(tu_read_truth(truth, &children, &self), "burn's rusage"))
		ASSERT_GE(children, 0.95e9, "burn used a second of CPU");
	/* One core busy for a second: a 100 ms sample of it is ~1000 millicores. */
	ASSERT_NEAR(spike, 1000, 0.15, "the spike, as its buckets' max");
	ASSERT_LE(quiet, 150, "the quiet seconds stay low");
	ASSERT_EQ(events_of(ans, "connect_failed", "refused"), 1, "the refused connect");
	ASSERT_EQ(events_of(ans, "failed_exit", "curl exited 7"), 1, "curl's exit");
	ASSERT_EQ(events_of(ans, "failed_exit", "sh exited 3"), 1, "the task's own exit");
	ASSERT_EQ(json_len(json_get(ans, "events")), 3, "nothing else notable");
	{
		const struct json *ev = json_get(ans, "events");
		double first = json_num(json_at(ev, 0), "t_ms"),
		       last = json_num(json_at(ev, 2), "t_ms");

		ASSERT_LE(first, 1500, "curl's moments come first");
		ASSERT_GE(last, 9000, "the task's exit at its end");
		ASSERT_LE(last, tu_num(ans, "span_ms"), "within the task's span");
	}
	tu_tp(&r, 30, "series", "sp", "--db", db, "--points", "100", "--json", NULL);
	ASSERT_EQ(json_len(json_get(tu_parse_json(r.out), "events")), 3, "the CLI lists them too");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}

/* top's line for task id in its plain output: its fields split on blanks, or 0. */
static int top_fields(const char *out, const char *id, char f[11][32])
{
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char line[512];
		int n;

		snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
		/* ID PHASE CORES MEM(2) READ(2) WRITE(2) RX(2) TX(2) PROCS FAIL AGE(2) */
		n = sscanf(line,
			   "%31s %31s %31s %*s %*s %31s %*s %31s %*s %31s %*s %31s %*s %31s %31s",
			   f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]);
		if (n == 9 && !strcmp(f[0], id))
			return n;
	}
	return 0;
}

/*
 * top through the daemon: a task burning one core shows about 1.00 cores (burn's own
 * rate), its phase and its one failed exit; an idle one shows ~0 and none. On a
 * terminal, q quits and so does Ctrl-C, with the terminal's mode given back.
 */
TEST(TIER_E2E, top_shows_the_daemons_running_tasks)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock");
	char script[4200], f[11][32];
	struct tu_result r;
	pid_t d, busy, idle;

	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	snprintf(script, sizeof(script), "echo BEGIN_PHASE build; sh -c 'exit 2'; exec %s 1 6000",
		 tu_helper("burn"));
	busy = spawn_run("busy", tu_tmp("busy.json"), NULL, script);
	idle = spawn_run("idle", tu_tmp("idle.json"), NULL, "sleep 6");
	usleep(1500000);
	tu_tp(&r, 30, "top", "--once", NULL);
	ASSERT_EQ(r.status, 0, "top --once");
	ASSERT_TRUE(strstr(r.out, "2 running tasks (the daemon's)") != NULL, "two tasks, live");
	ASSERT_TRUE(strstr(r.out, "\033[") == NULL, "plain lines: no terminal codes");
	if (ASSERT_EQ(top_fields(r.out, "busy", f), 9, "busy's line")) {
		ASSERT_STREQ(f[1], "build", "its phase");
		ASSERT_NEAR(atof(f[2]), 1.0, 0.15, "one core, over the last second");
		ASSERT_STREQ(f[8], "1", "its failed exit");
	}
	if (ASSERT_EQ(top_fields(r.out, "idle", f), 9, "idle's line")) {
		ASSERT_STREQ(f[1], "-", "no phase");
		ASSERT_LE(atof(f[2]) * 100, 5, "no CPU");
		ASSERT_STREQ(f[8], "0", "no failure");
		ASSERT_STREQ(f[7], "2", "two processes: sh and its sleep");
	}
	/* On a terminal: q, then Ctrl-C, each ends it at once with status 0. */
	for (int k = 0; k < 2; k++) {
		struct termios before, after;
		char buf[8192];
		size_t got = 0;
		int m, st = -1;
		pid_t top = forkpty(&m, NULL, NULL, NULL);

		if (top == 0) {
			execl(tu_bin(), tu_bin(), "top", (char *)NULL);
			_exit(127);
		}
		if (!ASSERT_TRUE(top > 0, "top on a pseudo-terminal"))
			break;
		tu_track_pid(top);
		tcgetattr(m, &before);
		usleep(1300000);
		ASSERT_EQ(write(m, k ? "\003" : "q", 1), 1, k ? "Ctrl-C" : "q");
		fcntl(m, F_SETFL, O_NONBLOCK);
		for (int i = 0; i < 200; i++) {
			ssize_t n = read(m, buf + got, sizeof(buf) - 1 - got);
			bool gone = waitpid(top, &st, WNOHANG) == top;

			if (n > 0)
				got += (size_t)n;
			if (gone)
				break;
			usleep(10000);
		}
		buf[got] = '\0';
		ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0, "top ended, status 0");
		ASSERT_TRUE(strstr(buf, "\033[H") && strstr(buf, "CORES"), "it drew the table");
		tcgetattr(m, &after);
		ASSERT_EQ(after.c_lflag & (ICANON | ECHO), before.c_lflag & (ICANON | ECHO),
			  "the terminal's mode given back");
		close(m);
	}
	ASSERT_EQ(wait_run(busy), 0, "busy's run");
	ASSERT_EQ(wait_run(idle), 0, "idle's run");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}

/* With no daemon: the running tasks of embedded runs, from their last flushed sample. */
TEST(TIER_E2E, top_reads_embedded_runs_from_the_database)
{
	const char *db = tu_tmp("e.db");
	char db_opt[4200], script[4200], f[11][32];
	struct tu_result r;
	pid_t run;

	snprintf(db_opt, sizeof(db_opt), "--db=%s", db);
	snprintf(script, sizeof(script), "exec %s 1 8000", tu_helper("burn"));
	run = spawn_run("emb", tu_tmp("emb.json"), db_opt, script);
	/* The first series block is flushed 5 s into the task. */
	usleep(6500000);
	tu_tp(&r, 30, "top", "--once", "--db", db, NULL);
	ASSERT_EQ(r.status, 0, "top --once --db");
	ASSERT_TRUE(strstr(r.out, "1 running task (the database's last samples)") != NULL,
		    "one task, from the database");
	if (ASSERT_EQ(top_fields(r.out, "emb", f), 9, "its line"))
		ASSERT_NEAR(atof(f[2]), 1.0, 0.15, "one core, its last sample");
	ASSERT_EQ(wait_run(run), 0, "the run");
	tu_tp(&r, 30, "top", "--once", "--db", db, NULL);
	ASSERT_TRUE(strstr(r.out, "0 running tasks") != NULL, "none once it ended");
	tu_tp(&r, 30, "top", "--bogus", NULL);
	ASSERT_EQ(r.status, 2, "a bad option");
	ASSERT_TRUE(strstr(r.err, "taskprobe: top: unknown option '--bogus'") != NULL, "one line");
}

/* The ids of the links pinned under dir/links, and how many; names checked by prog. */
static int pinned_links(const char *dir, __u32 *ids, int max, int *named)
{
	char path[4200];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/links", dir);
	*named = 0;
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)) && n < max) {
		struct bpf_link_info li = { 0 };
		struct bpf_prog_info pi = { 0 };
		__u32 llen = sizeof(li), plen = sizeof(pi);
		int fd, pfd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/links/%s", dir, e->d_name);
		fd = bpf_obj_get(path);
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &li, &llen)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		ids[n++] = li.id;
		pfd = bpf_prog_get_fd_by_id(li.prog_id);
		/* The kernel keeps 15 characters of a program's name. */
		if (pfd >= 0 && !bpf_obj_get_info_by_fd(pfd, &pi, &plen) &&
		    !strncmp(pi.name, e->d_name, sizeof(pi.name) - 1))
			(*named)++;
		if (pfd >= 0)
			close(pfd);
		close(fd);
	}
	closedir(d);
	return n;
}

/*
 * Is the link with this id gone? The kernel may free a released link later, from a
 * work item: up to 3 s are given.
 */
static bool link_gone(__u32 id)
{
	for (int tries = 0; tries < 300; tries++) {
		int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0)
			return true;
		close(fd);
		usleep(10000);
	}
	return false;
}

/*
 * The daemon pins its maps and attached programs' links under its pin directory (a
 * bpffs of this test's own, in a mount namespace); SIGTERM removes them. A daemon
 * killed outright leaves them, programs attached: the next one replaces them, and
 * the old links are gone with their pins.
 */
TEST(TIER_E2E, daemon_pins_maps_and_links)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *fs = tu_tmp("bpffs");
	char dir[4200], path[4300];
	__u32 old_ids[256], ids[256];
	int n_old, n, named;
	pid_t d;

	snprintf(dir, sizeof(dir), "%s/taskprobe", fs);
	if (!ASSERT_OK(unshare(CLONE_NEWNS), "a mount namespace") ||
	    !ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "private mounts") ||
	    !ASSERT_OK(mkdir(fs, 0700), "the bpffs mount point") ||
	    !ASSERT_OK(mount("bpf", fs, "bpf", 0, "mode=0700"), "a bpffs of the test's own"))
		return;
	setenv("TASKPROBE_PIN_DIR", dir, 1);
	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		goto out;
	snprintf(path, sizeof(path), "%s/maps/cpu_stats", dir);
	ASSERT_OK(access(path, F_OK), "the per-task CPU map is pinned");
	snprintf(path, sizeof(path), "%s/maps/events", dir);
	ASSERT_OK(access(path, F_OK), "the ring buffer is pinned");
	n_old = pinned_links(dir, old_ids, 256, &named);
	ASSERT_GE(n_old, 10, "the attached programs' links");
	ASSERT_EQ(named, n_old, "each link's program by its pin's name");
	snprintf(path, sizeof(path), "%s/links/tp_sched_process_exec", dir);
	ASSERT_OK(access(path, F_OK), "sched_process_exec among them");
	/* Killed outright: its pins stay, and its programs with them. */
	kill(d, SIGKILL);
	ASSERT_EQ(wait_exit(d), 128 + SIGKILL, "killed");
	ASSERT_EQ(pinned_links(dir, ids, 256, &named), n_old, "its pins outlive it");
	unlink(sock);
	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "a new daemon listens"))
		goto out;
	n = pinned_links(dir, ids, 256, &named);
	ASSERT_EQ(n, n_old, "its own pins, as many");
	for (int i = 0; i < n_old; i++)
		CHECK(link_gone(old_ids[i]), "the dead daemon's link %u is gone", old_ids[i]);
	{
		struct tu_result r;
		char json[4200];

		snprintf(json, sizeof(json), "%s", tu_tmp("p.json"));
		tu_tp(&r, 60, "run", "--quiet", "--json", json, "--", "sh", "-c", "/bin/true",
		      NULL);
		ASSERT_EQ(tu_metric(tu_load_json(json), "proc.execs"), 2, "it counts as before");
	}
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
	ASSERT_TRUE(access(dir, F_OK) != 0, "SIGTERM removed the pins and their directory");
	for (int i = 0; i < n; i++)
		CHECK(link_gone(ids[i]), "link %u detached", ids[i]);
out:
	umount2(fs, MNT_DETACH);
}

/* A connection to sock with a receive timeout of ms, or -1. */
static int control_conn(const char *sock, int ms)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* What arrives on fd until it closes or times out. */
static void read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
}

/*
 * Clients that connect and send nothing do not hold the daemon: a request sent in two
 * pieces beside them is answered at once, and the silent ones are told after 2 s.
 */
TEST(TIER_E2E, slow_control_clients_do_not_stall_the_daemon)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock");
	int silent[3], fd;
	char buf[4096];
	pid_t d;

	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	for (int i = 0; i < 3; i++)
		silent[i] = control_conn(sock, 5000);
	fd = control_conn(sock, 1000);
	ASSERT_TRUE(fd >= 0 && silent[2] >= 0, "connected");
	ASSERT_EQ(write(fd, "tas", 3), 3, "half a request");
	usleep(200000);
	ASSERT_EQ(write(fd, "ks\n", 3), 3, "its end");
	/* Each silent client would have held a daemon that waits 2 s: 6 s in all. */
	read_all(fd, buf, sizeof(buf));
	ASSERT_STREQ(buf, "ok\n", "answered within a second, beside three silent clients");
	close(fd);
	for (int i = 0; i < 3; i++) {
		read_all(silent[i], buf, sizeof(buf));
		ASSERT_TRUE(strstr(buf, "error\tno whole request line within 2000 ms") != NULL,
			    "a silent client is told, then closed");
		close(silent[i]);
	}
	fd = control_conn(sock, 1000);
	ASSERT_EQ(write(fd, "bogus\n", 6), 6, "an unknown request");
	read_all(fd, buf, sizeof(buf));
	ASSERT_STREQ(buf, "error\tunknown request 'bogus'\n", "refused in one line");
	close(fd);
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}

/*
 * A request that came in time is answered even when the daemon reads it late: the
 * daemon is stopped past the 2 s deadline, its tick queued before the request's line,
 * and on waking it still reads the line before it would refuse (fifty concurrent
 * sanitized runs once kept the loop that busy, and a run was refused).
 */
TEST(TIER_E2E, a_request_in_time_is_answered_by_a_late_daemon)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock");
	char buf[4096];
	pid_t d;
	int fd;

	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	fd = control_conn(sock, 5000);
	if (!ASSERT_TRUE(fd >= 0, "connected"))
		goto out;
	/* Accepted (its 2 s start), then the daemon stops and its tick fires unread. */
	usleep(300000);
	ASSERT_OK(kill(d, SIGSTOP), "the daemon stopped");
	usleep(300000);
	ASSERT_EQ(write(fd, "tasks\n", 6), 6, "the whole request, sent in time");
	usleep(2500000);
	ASSERT_OK(kill(d, SIGCONT), "the daemon goes on, past the deadline");
	read_all(fd, buf, sizeof(buf));
	ASSERT_STREQ(buf, "ok\n", "answered, not refused as too slow");
	close(fd);
out:
	kill(d, SIGCONT);
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}

/*
 * More clients at once than the daemon holds pending (64), all of those silent: the
 * rest wait in the backlog, none is refused as busy. Once the silent ones are told
 * (2 s), the 36 waiting requests are answered and a run's task runs, its execs exact.
 */
TEST(TIER_E2E, a_burst_of_clients_waits_and_is_never_refused)
{
	enum { SILENT = 64, TALKING = 36 };
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *json = tu_tmp("b.json");
	int silent[SILENT], talking[TALKING], told = 0, answered = 0;
	char buf[4096];
	pid_t d, run;

	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	for (int i = 0; i < SILENT; i++)
		silent[i] = control_conn(sock, 10000);
	for (int i = 0; i < TALKING; i++) {
		talking[i] = control_conn(sock, 10000);
		/* A daemon that refused has closed it: no SIGPIPE for the test. */
		if (talking[i] >= 0 && send(talking[i], "tasks\n", 6, MSG_NOSIGNAL) != 6) {
			close(talking[i]);
			talking[i] = -1;
		}
	}
	/* sh and its two /bin/true: 3 execs. */
	run = spawn_run("b1", json, NULL, "/bin/true; /bin/true");
	for (int i = 0; i < TALKING; i++) {
		if (talking[i] < 0)
			continue;
		read_all(talking[i], buf, sizeof(buf));
		answered += !strncmp(buf, "ok\n", 3);
		if (strncmp(buf, "ok\n", 3))
			CHECK(false, "client %d: %.100s", i, buf);
		close(talking[i]);
	}
	for (int i = 0; i < SILENT; i++) {
		if (silent[i] < 0)
			continue;
		read_all(silent[i], buf, sizeof(buf));
		told += strstr(buf, "no whole request line") != NULL;
		close(silent[i]);
	}
	ASSERT_EQ(answered, TALKING, "requests answered past the full table, none refused");
	ASSERT_EQ(told, SILENT, "silent clients told they were too slow");
	ASSERT_EQ(wait_run(run), 0, "the run, waiting behind them, exits 0");
	ASSERT_EQ(tu_metric(tu_load_json(json), "proc.execs"), 3, "its execs, exact");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}

/*
 * A stuck daemon (stopped): `task end` does not hang for its answer (30 s). With its
 * listen backlog full, a run does not hang in connect: it gives up after 10 s with one
 * warning line, embeds a collector of its own, and its command runs (its marker file
 * made, its exit status kept). With --strict it exits 125 and its command never runs.
 */
TEST(TIER_E2E, a_stuck_daemon_fails_its_clients_in_one_line)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock");
	const char *mark = tu_tmp("ran"), *err = tu_tmp("run.err");
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char script[4200], *text;
	int fds[256], n = 0, efd;
	pid_t d, run;

	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	ASSERT_OK(kill(d, SIGSTOP), "the daemon stopped");
	/* Room in the backlog, but no answer: `task end` gives up after 30 s. */
	{
		struct tu_result r;

		tu_tp(&r, 60, "task", "end", "t1", NULL);
		ASSERT_EQ(r.status, 1, "task end gives up");
		CHECK(r.err && strstr(r.err, "did not answer within 30 s") &&
			      strchr(r.err, '\n') == strrchr(r.err, '\n'),
		      "one line says so: %s", r.err ? r.err : "(none)");
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	/* Connections nobody accepts, until the backlog refuses one at once. */
	while (n < (int)ARRAY_SIZE(fds)) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			if (fd >= 0)
				close(fd);
			break;
		}
		fds[n++] = fd;
	}
	CHECK(n > 0 && n < (int)ARRAY_SIZE(fds), "the backlog filled: %d connections", n);
	/* The embedded collector stores in the default store: this namespace's tmpfs. */
	if (!ASSERT_OK(unshare(CLONE_NEWNS), "a mount namespace") ||
	    !ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "private mounts") ||
	    !ASSERT_OK(mount("tmpfs", "/var/lib", "tmpfs", 0, "mode=0755"), "/var/lib hidden"))
		return;
	snprintf(script, sizeof(script), "touch %s; exit 7", mark);
	for (int strict = 0; strict < 2; strict++) {
		efd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		run = tu_spawn_fds((char *[]){ (char *)tu_bin(), "run", "--quiet",
					       strict ? "--strict" : "--quiet", "--", "sh", "-c",
					       script, NULL },
				   -1, efd);
		close(efd);
		if (strict) {
			ASSERT_EQ(wait_run(run), 125, "--strict: the run gave up");
			ASSERT_TRUE(access(mark, F_OK) != 0, "--strict: its command never ran");
		} else {
			ASSERT_EQ(wait_run(run), 7, "the run embedded, its command's status");
			ASSERT_OK(access(mark, F_OK), "its command ran");
			unlink(mark);
		}
		if (tp_slurp(err, "the run's stderr", true, &text) < 0)
			text = NULL;
		CHECK(text && strstr(text, "took no connection for 10 s") &&
			      strstr(text, strict ? "--strict: the command is not run"
						  : "warning: the daemon on") &&
			      strchr(text, '\n') == text + strlen(text) - 1,
		      "one line says so: %s", text ? text : "(none)");
		free(text);
	}
	while (n > 0)
		close(fds[--n]);
	kill(d, SIGCONT);
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}

/*
 * A run's own exec rules through a daemon whose config has none: the arguments are
 * copied for that task from its start (per slot, switched at run time), so its rule
 * counts exactly; a task beside it without rules has no such metric.
 */
TEST(TIER_E2E, a_runs_exec_rules_see_arguments_through_the_daemon)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *rules = tu_tmp("rules");
	const char *j1 = tu_tmp("r1.json"), *j2 = tu_tmp("r2.json");
	static const char script[] = "/bin/echo hello; /bin/echo hello there; /bin/echo bye";
	char rules_opt[4200];
	pid_t d, a, b;

	tu_write_file(rules, "exec greetings ^/bin/echo hello\\b\n");
	snprintf(rules_opt, sizeof(rules_opt), "--rules=%s", rules);
	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	a = spawn_run("r1", j1, rules_opt, script);
	b = spawn_run("r2", j2, NULL, script);
	ASSERT_EQ(wait_run(a), 0, "the run with rules");
	ASSERT_EQ(wait_run(b), 0, "the run without");
	ASSERT_STREQ(json_str(json_get(tu_load_json(j1), "collector"), "mode"), "daemon",
		     "held by the daemon");
	ASSERT_EQ(tu_metric(tu_load_json(j1), "greetings"), 2, "its rule, on the arguments");
	ASSERT_EQ(tu_metric(tu_load_json(j2), "greetings"), -1, "the other task has no rule");
	ASSERT_EQ(tu_metric(tu_load_json(j2), "proc.execs"), 4, "its execs, exact");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}

static int open_fds(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/*
 * Each running task of the daemon holds its own liveness lock: with two tracked, the
 * one started first ending leaves the other "running" (it read "lost" while one lock
 * served them all), and twenty tasks started and ended leave the daemon's open files
 * as they were (one leaked a descriptor per task).
 */
TEST(TIER_E2E, each_running_task_holds_its_own_lock)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock");
	char cg[2][4096], id[16];
	struct tu_result r;
	const struct json *t;
	int before;
	pid_t d;

	for (int i = 0; i < 2; i++)
		if (!ASSERT_OK(tu_cgroup_make(cg[i], sizeof(cg[i])), "a worker's cgroup"))
			return;
	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	tu_tp(&r, 30, "task", "start", "first", "--cgroup", cg[0], NULL);
	ASSERT_EQ(r.status, 0, "task start first");
	tu_tp(&r, 30, "task", "start", "second", "--cgroup", cg[1], NULL);
	ASSERT_EQ(r.status, 0, "task start second");
	tu_tp(&r, 30, "task", "end", "first", "--quiet", NULL);
	ASSERT_EQ(r.status, 0, "task end first");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	t = tu_find(tu_parse_json(r.out), "id", "second");
	ASSERT_STREQ(json_str(t, "status"), "running", "the second, still running");
	tu_tp(&r, 30, "task", "end", "second", "--quiet", NULL);
	before = open_fds(d);
	for (int i = 0; i < 20; i++) {
		snprintf(id, sizeof(id), "fd-%d", i);
		tu_tp(&r, 30, "task", "start", id, "--cgroup", cg[0], NULL);
		tu_tp(&r, 30, "task", "end", id, "--quiet", NULL);
		ASSERT_EQ(r.status, 0, "task end");
	}
	ASSERT_EQ(open_fds(d), before, "the daemon's open files after 20 tasks");
	kill(d, SIGTERM);
	ASSERT_EQ(wait_exit(d), 0, "the daemon's exit status");
}
