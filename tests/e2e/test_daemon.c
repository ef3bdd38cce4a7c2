// SPDX-License-Identifier: GPL-2.0
/* End-to-end tests: the daemon, and cgroups that a worker starts and ends as tasks. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "harness.h"
#include "testutil.h"
#include "util.h"

/* The daemon answers on sock within 10 s. */
static bool wait_socket(const char *sock, pid_t daemon)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	for (int i = 0; i < 1000; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

		ok = fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a));
		if (fd >= 0)
			close(fd);
		if (ok)
			return true;
		if (waitpid(daemon, NULL, WNOHANG) == daemon)
			return false;
		usleep(10000);
	}
	return false;
}

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

/*
 * A worker's cgroup, tracked from `task start` to `task end` by a daemon: the counts
 * are the processes the test made there, the CPU is the cgroup's own cpu.stat, and a
 * task still tracked when the daemon is stopped is stored as interrupted.
 */
TEST(TIER_E2E, daemon_tracks_a_workers_cgroup)
{
	const char *db = tu_tmp("d.db"), *sock = tu_tmp("control.sock"), *json = tu_tmp("t1.json");
	const char *truth = tu_tmp("truth");
	char cg[4096], script[1024], sock_opt[4200];
	const struct json *rec;
	struct cg_cpu_stat cs;
	struct tu_result r;
	double children, self;
	pid_t d;

	if (!ASSERT_OK(tu_cgroup_make(cg, sizeof(cg)), "a worker's cgroup"))
		return;
	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	d = tu_spawn((char *[]){ (char *)tu_bin(), "daemon", "--db", (char *)db, sock_opt, NULL });
	if (!ASSERT_TRUE(d > 0 && wait_socket(sock, d), "the daemon listens"))
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
	tu_tp(&r, 30, "task", "end", "t1", "--json", json, sock_opt, NULL);
	ASSERT_EQ(r.status, 0, "task end");
	ASSERT_TRUE(strstr(r.err, "task ended after") != NULL, "the summary");
	rec = tu_load_json(json);
	if (!rec)
		return;
	ASSERT_STREQ(json_str(rec, "status"), "ended", "status");
	ASSERT_STREQ(json_str(json_get(rec, "labels"), "job"), "build", "its label");
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 22, "execs");
	ASSERT_EQ(tu_metric(rec, "proc.forks"), 23, "forks");
	ASSERT_NEAR(tu_metric(rec, "cpu.time_ns"), cs.usage_us * 1000.0, 0.02,
		    "CPU vs the cgroup's cpu.stat");
	ASSERT_GE(tu_metric(rec, "cpu.time_ns"), children + self, "at least burn's rusage");
	tu_tp(&r, 30, "task", "end", "t1", sock_opt, NULL);
	ASSERT_EQ(r.status, 1, "ended already");
	ASSERT_TRUE(strstr(r.err, "no task 't1' is tracked") != NULL, "says why");
	ASSERT_OK(access(cg, F_OK), "the worker's cgroup is left to the worker");

	/* Still tracked when the daemon stops: kept, as interrupted; the daemon exits 0. */
	tu_tp(&r, 30, "task", "start", "t2", "--cgroup", cg, sock_opt, NULL);
	ASSERT_EQ(r.status, 0, "task start t2");
	ASSERT_EQ(run_in(cg, "/bin/true"), 0, "t2's workload");
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
	tu_tp(&r, 30, "task", "end", "t2", sock_opt, NULL);
	ASSERT_EQ(r.status, 1, "no daemon");
	ASSERT_TRUE(strstr(r.err, "no daemon answers") != NULL, "says why");
	ASSERT_TRUE(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "in one line");
}
