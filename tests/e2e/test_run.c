// SPDX-License-Identifier: GPL-2.0
/* End-to-end tests: the taskprobe binary on real workloads, checked against ground truth. */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "collector/cgroup.h"
#include "harness.h"
#include "testutil.h"

static bool gone(const char *path)
{
	return access(path, F_OK) != 0;
}

static const char *str(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	return v && v->type == JSON_STR ? v->str : "";
}

static void check_cgroup_removed(const struct json *rec)
{
	const char *cg = str(rec, "cgroup");

	CHECK(cg[0] && gone(cg), "task cgroup '%s' was not removed", cg);
}

TEST(TIER_E2E, cpu_time_matches_getrusage)
{
	const char *json = tu_tmp("task.json"), *truth = tu_tmp("truth");
	double children, self;
	const struct json *rec;
	struct tu_result r;

	tu_tp(&r, 60, "run", "--quiet", "--json", json, "--", tu_helper("burn"), "2", "750", truth,
	      NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	ASSERT_EQ(strlen(r.err), 0, "--quiet prints nothing");
	rec = tu_load_json(json);
	if (!rec || !ASSERT_OK(tu_read_truth(truth, &children, &self), "truth file"))
		return;
	ASSERT_NEAR(tu_metric(rec, "cpu.time_ns"), children + self, 0.02,
		    "cpu.time_ns vs getrusage of waited children + self");
	ASSERT_NEAR(tu_metric(rec, "cpu.time_ns"),
		    tu_num(json_get(rec, "cgroup_cpu_stat"), "usage_usec") * 1000, 0.01,
		    "cpu.time_ns vs cgroup cpu.stat");
	ASSERT_EQ(tu_metric(rec, "proc.forks"), 3, "main process and two burners");
	ASSERT_EQ(tu_metric(rec, "proc.max_alive"), 3, "all three alive at once");
	ASSERT_TRUE(tu_metric(rec, "cpu.avg_cores") > 1.0, "two burners use more than a core");
	check_cgroup_removed(rec);
}

TEST(TIER_E2E, five_hundred_short_execs_exact)
{
	const char *json = tu_tmp("task.json");
	const struct json *rec, *prog;
	struct tu_result r;

	tu_tp(&r, 120, "run", "--quiet", "--json", json, "--", "sh", "-c",
	      "i=0; while [ $i -lt 500 ]; do /bin/true; i=$((i+1)); done", NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	if (!rec)
		return;
	prog = tu_program(rec, "/bin/true");
	ASSERT_EQ(tu_num(prog, "execs"), 500, "execs of /bin/true");
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 501, "execs (the shell too)");
	ASSERT_EQ(tu_metric(rec, "proc.forks"), 501, "processes started");
	ASSERT_EQ(tu_metric(rec, "proc.exits"), 501, "exits");
	ASSERT_EQ(tu_metric(rec, "proc.failed_exits"), 0, "failed exits");
	ASSERT_EQ(tu_metric(rec, "lost_events"), 0, "lost events");
}

/*
 * Kernels before 6.16, whose sched_process_exit has no group_dead argument: the
 * collector puts the other exit work (tracked_exit_live) in tail_exit and, before 6.11
 * and 6.6, loads no tcp_sendmsg_locked and plain uprobes. It tells them by uname, so
 * this kernel run under a 2.6 uname (setarch --uname-2.6) takes every one of those
 * paths: the same counts, exact. The task itself says which exit work was put there.
 */
TEST(TIER_E2E, a_kernel_before_6_16_gets_the_same_exact_counts)
{
	const char *json = tu_tmp("task.json"), *slot = tu_tmp("tail-exit"), *prog = tu_tmp("body");
	char script[768], *argv[16], id[32];
	const struct json *rec;
	struct tu_result r;
	struct utsname u;
	int n = 0, body;
	FILE *f;

	ASSERT_EQ(uname(&u), 0, "uname");
	/* The shell's last command is a builtin (:), so that each bpftool is a fork of its own. */
	snprintf(script, sizeof(script),
		 "i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done; "
		 "bpftool map dump name tail_exit > '%s'; "
		 "bpftool prog show name tracked_exit_live > '%s'; :",
		 slot, prog);
	argv[n++] = "setarch";
	argv[n++] = u.machine;
	argv[n++] = "--uname-2.6";
	argv[n++] = (char *)tu_bin();
	argv[n++] = "run";
	argv[n++] = "--quiet";
	argv[n++] = "--json";
	argv[n++] = (char *)json;
	argv[n++] = "--";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = script;
	argv[n] = NULL;
	tu_run(argv, &r, 120);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	if (!rec)
		return;
	ASSERT_EQ(tu_num(tu_program(rec, "/bin/true"), "execs"), 200, "execs of /bin/true");
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 203, "execs (the shell and two bpftool too)");
	ASSERT_EQ(tu_metric(rec, "proc.forks"), 203, "processes started");
	ASSERT_EQ(tu_metric(rec, "proc.exits"), 203, "exits");
	ASSERT_EQ(tu_metric(rec, "proc.failed_exits"), 0, "failed exits");
	ASSERT_EQ(tu_metric(rec, "lost_events"), 0, "lost events");
	/* The exit hook's array holds the pre-6.16 work: its program's id ("ID: tracing ..."). */
	f = fopen(prog, "r");
	if (!f || fscanf(f, "%d:", &body) != 1)
		body = 0;
	if (f)
		fclose(f);
	ASSERT_TRUE(body > 0, "tracked_exit_live was loaded");
	snprintf(id, sizeof(id), "\"value\": %d", body);
	tu_run((char *[]){ "grep", "-c", id, (char *)slot, NULL }, &r, 10);
	ASSERT_TRUE(r.status == 0 && atoi(r.out) == 1, "and it is what tail_exit holds");
}

static int wait_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

TEST(TIER_E2E, concurrent_tasks_attributed_separately)
{
	char busy_json[256], idle_json[256], truth[256];
	double children, self;
	const struct json *busy, *idle;
	pid_t a, b;

	snprintf(busy_json, sizeof(busy_json), "%s", tu_tmp("busy.json"));
	snprintf(idle_json, sizeof(idle_json), "%s", tu_tmp("idle.json"));
	snprintf(truth, sizeof(truth), "%s", tu_tmp("truth"));
	{
		char *busy_args[] = { (char *)tu_bin(),		 "run", "--json", busy_json, "--",
				      (char *)tu_helper("burn"), "1",	"1000",	  truth,     NULL };
		char *idle_args[] = { (char *)tu_bin(),
				      "run",
				      "--json",
				      idle_json,
				      "--",
				      "sh",
				      "-c",
				      "sleep 1; for i in 1 2 3 4 5 6 7; do /bin/true; done",
				      NULL };

		a = tu_spawn(busy_args);
		b = tu_spawn(idle_args);
	}
	ASSERT_EQ(wait_status(a), 0, "busy task");
	ASSERT_EQ(wait_status(b), 0, "idle task");
	busy = tu_load_json(busy_json);
	idle = tu_load_json(idle_json);
	if (!busy || !idle || !ASSERT_OK(tu_read_truth(truth, &children, &self), "truth"))
		return;
	ASSERT_NEAR(tu_metric(busy, "cpu.time_ns"), children + self, 0.02, "busy task's CPU");
	/* The kernel's own per-cgroup figure is the idle task's truth; none of the busy one's. */
	ASSERT_NEAR(tu_metric(idle, "cpu.time_ns"),
		    tu_num(json_get(idle, "cgroup_cpu_stat"), "usage_usec") * 1000, 0.01,
		    "idle task's CPU vs its cgroup's cpu.stat");
	ASSERT_LE(tu_metric(idle, "cpu.time_ns"), 150000000, "idle task's CPU (ns)");
	ASSERT_EQ(tu_num(tu_program(idle, "/bin/true"), "execs"), 7, "idle task's /bin/true");
	ASSERT_EQ(tu_metric(busy, "proc.execs"), 1, "busy task's execs");
	ASSERT_TRUE(tu_program(busy, "/bin/true") == NULL, "no /bin/true in the busy task");
	ASSERT_EQ(tu_metric(busy, "proc.forks"), 2, "busy task's processes");
}

TEST(TIER_E2E, nested_cgroup_work_is_charged)
{
	const char *json = tu_tmp("task.json"), *truth = tu_tmp("truth");
	char script[1024];
	double children, self;
	const struct json *rec;
	struct tu_result r;

	/* The task makes a cgroup inside its own and runs its burner there. */
	snprintf(script, sizeof(script),
		 "cg=%s$(sed -n 's/^0:://p' /proc/self/cgroup) && mkdir \"$cg/sub\" && "
		 "exec %s 1 400 %s --nested \"$cg/sub\"",
		 tu_cgroup_root(), tu_helper("burn"), truth);
	tu_tp(&r, 60, "run", "--quiet", "--json", json, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	if (!rec || !ASSERT_OK(tu_read_truth(truth, &children, &self), "truth"))
		return;
	ASSERT_GE(children, 390e6, "the nested burner ran");
	ASSERT_NEAR(tu_metric(rec, "cpu.time_ns"), children + self, 0.02,
		    "CPU including the nested cgroup");
	check_cgroup_removed(rec);
}

/* `ip netns exec` remounts /sys without cgroup2: the run still finds the hierarchy. */
TEST(TIER_E2E, run_inside_ip_netns_exec)
{
	const char *json = tu_tmp("task.json"), *truth = tu_tmp("truth");
	char ns[32], want[4096];
	double children, self;
	const struct json *rec;
	struct tu_result r;

	snprintf(ns, sizeof(ns), "tp-e2e-%d", (int)getpid());
	tu_run((char *[]){ "ip", "netns", "add", ns, NULL }, &r, 10);
	if (!ASSERT_EQ(r.status, 0, "ip netns add"))
		return;
	tu_run((char *[]){ "ip", "netns", "exec", ns, (char *)tu_bin(), "run", "--quiet", "--json",
			   (char *)json, "--", (char *)tu_helper("burn"), "1", "300", (char *)truth,
			   NULL },
	       &r, 60);
	tu_run((char *[]){ "ip", "netns", "del", ns, NULL }, &r, 10);
	rec = tu_load_json(json);
	if (!rec || !ASSERT_OK(tu_read_truth(truth, &children, &self), "truth"))
		return;
	ASSERT_NEAR(tu_metric(rec, "cpu.time_ns"), children + self, 0.02,
		    "CPU inside the netns vs getrusage");
	snprintf(want, sizeof(want), "%s/taskprobe/", tu_cgroup_root());
	ASSERT_TRUE(!strncmp(str(rec, "cgroup"), want, strlen(want)),
		    "the record names the host's path of the cgroup");
	check_cgroup_removed(rec);
}

/*
 * The program table charges each program all of its processes' CPU, the last slice
 * of short ones included: rows against the rusage that wait4 returns for each child
 * (and the spawner's own), their sum against cpu.time_ns.
 */
TEST(TIER_E2E, program_table_adds_up_for_short_processes)
{
	static const char py[] =
		"import json, os, resource, sys\n"
		"def run(argv, n):\n"
		"    t = 0\n"
		"    for _ in range(n):\n"
		"        pid = os.posix_spawn(argv[0], argv, os.environ)\n"
		"        ru = os.wait4(pid, 0)[2]\n"
		"        t += ru.ru_utime + ru.ru_stime\n"
		"    return int(t * 1e9)\n"
		"truth = {'/bin/true': run(['/bin/true'], 200),\n"
		"         '/bin/ln': run(['/bin/ln', '-sf', '/nonexistent', sys.argv[2]], 20),\n"
		"         '/bin/rm': run(['/bin/rm', '-f', sys.argv[2]], 20),\n"
		"         '/bin/sh': run(['/bin/sh', '-c', 'kill -9 $$'], 20)}\n"
		"ru = resource.getrusage(resource.RUSAGE_SELF)\n"
		"truth['self'] = int((ru.ru_utime + ru.ru_stime) * 1e9)\n"
		"open(sys.argv[1], 'w').write(json.dumps(truth))\n"
		"sys.stdout.flush()\n"
		"os._exit(0)\n";
	static const char *const progs[] = { "/bin/true", "/bin/ln", "/bin/rm", "/bin/sh" };
	const char *json = tu_tmp("task.json"), *truth = tu_tmp("truth.json");
	const struct json *rec, *want, *p;
	double sum = 0, self_row = 0;
	struct tu_result r;

	tu_tp(&r, 60, "run", "--quiet", "--json", json, "--", "/usr/bin/python3", "-c", py, truth,
	      tu_tmp("link"), NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	want = tu_load_json(truth);
	if (!rec || !want)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(progs); i++) {
		p = tu_program(rec, progs[i]);
		ASSERT_TRUE(p != NULL, progs[i]);
		double got = tu_num(p, "cpu_ns"), exp = tu_num(want, progs[i]);

		printf("# %s: the program table %.0f ns, wait4's rusage %.0f ns\n", progs[i], got,
		       exp);
		/*
		 * Within 5 %, or one scheduler tick (4 ms at HZ=250): they agree to 0.01 % as a
		 * rule, but once in a CI run /bin/rm's 20 processes were 4.1 ms apart (53.2 vs
		 * 49.1 ms), one tick of runtime that wait4's read and the last switch-out split
		 * differently. Short processes make 5 % smaller than that tick.
		 */
		CHECK(fabs(got - exp) <= fmax(0.05 * exp, 4.5e6),
		      "%s: the program table %.0f ns, wait4's rusage %.0f ns", progs[i], got, exp);
	}
	ASSERT_EQ(tu_num(tu_program(rec, "/bin/true"), "execs"), 200, "200 execs of /bin/true");
	for (const struct json *e = json_get(rec, "programs")->child; e; e = e->next) {
		sum += tu_num(e, "cpu_ns");
		if (strstr(str(e, "path"), "python"))
			self_row += tu_num(e, "cpu_ns");
	}
	ASSERT_NEAR(self_row, tu_num(want, "self"), 0.05, "python's own row");
	ASSERT_NEAR(sum, tu_metric(rec, "cpu.time_ns"), 0.01, "the rows add up to cpu.time_ns");
}

TEST(TIER_E2E, exit_status_passed_through)
{
	const char *noexec = tu_tmp("not-executable");
	struct tu_result r;
	int fd = open(noexec, O_CREAT | O_WRONLY, 0644);

	if (fd >= 0)
		close(fd);
	tu_tp(&r, 30, "run", "--quiet", "--", "sh", "-c", "exit 3", NULL);
	ASSERT_EQ(r.status, 3, "exit 3");
	tu_tp(&r, 30, "run", "--quiet", "--", "sh", "-c", "kill -9 $$", NULL);
	ASSERT_EQ(r.status, 137, "SIGKILL");
	tu_tp(&r, 30, "run", "--quiet", "--", "sh", "-c", "kill -TERM $$", NULL);
	ASSERT_EQ(r.status, 143, "SIGTERM");
	tu_tp(&r, 30, "run", "--", "/nonexistent/command", NULL);
	ASSERT_EQ(r.status, 127, "command not found");
	ASSERT_TRUE(!strncmp(r.err, "taskprobe: ", 11), "one 'taskprobe:' line");
	tu_tp(&r, 30, "run", "--", "no-such-command-anywhere", NULL);
	ASSERT_EQ(r.status, 127, "command not found in PATH");
	tu_tp(&r, 30, "run", "--", noexec, NULL);
	ASSERT_EQ(r.status, 126, "not executable");
}

/*
 * A process moved out of the task midway keeps what it did inside (I/O, CPU, its
 * program row) and is counted as having left; what it does outside is not the task's.
 */
TEST(TIER_E2E, process_that_leaves_keeps_what_it_did)
{
	static const char py[] =
		"import mmap, os, sys, time\n"
		"fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)\n"
		"buf = mmap.mmap(-1, 1 << 20)\n"
		"for i in range(10):\n"
		"    os.preadv(fd, [buf], i << 20)\n"
		"def burn(s):\n"
		"    t = time.process_time() + s\n"
		"    while time.process_time() < t: pass\n"
		"burn(0.3)\n"
		"rb = [l for l in open('/proc/self/io') if l.startswith('read_bytes')]\n"
		"open(sys.argv[2], 'w').write('%d %s' % (time.process_time_ns(),\n"
		"                                        rb[0].split()[1]))\n"
		"os.kill(os.getppid(), 10)\n"
		"while os.path.exists(sys.argv[3]): time.sleep(0.01)\n"
		"burn(0.3)\n";
	const char *json = tu_tmp("task.json"), *data = tu_tmp("data"), *truth = tu_tmp("cpu");
	const char *wait_file = tu_tmp("wait"), *pyf = tu_tmp("worker.py");
	char other[4096], script[8192], buf[64];
	const struct json *rec, *prog;
	double before, read_before;
	struct tu_result r;

	if (!ASSERT_OK(tu_cgroup_make(other, sizeof(other)), "a cgroup outside the task"))
		return;
	tu_write_file(pyf, py);
	snprintf(script, sizeof(script), "dd if=/dev/urandom of=%s bs=1M count=10 status=none",
		 data);
	tu_run((char *[]){ "sh", "-c", script, NULL }, &r, 30);
	/* The shell waits for the worker's signal, moves it out, then lets it go on. */
	snprintf(script, sizeof(script),
		 "touch %s; trap 'echo $pid > %s/cgroup.procs; rm %s' USR1;"
		 " /usr/bin/python3 %s %s %s %s & pid=$!; wait $pid; wait $pid",
		 wait_file, other, wait_file, pyf, data, truth, wait_file);
	tu_tp(&r, 60, "run", "--json", json, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	if (!rec || !ASSERT_TRUE(tp_read_file(truth, buf, sizeof(buf)) > 0, "truth"))
		return;
	if (!ASSERT_EQ(sscanf(buf, "%lf %lf", &before, &read_before), 2, "truth"))
		return;
	ASSERT_EQ(tu_metric(rec, "proc.left_task"), 1, "one process left the task");
	ASSERT_STREQ(json_str(json_get(rec, "sources"), "proc.left_task"), "bpf:cgroup_attach_task",
		     "credited to cgroup_attach_task");
	ASSERT_TRUE(strstr(r.err, "1 left the task") != NULL, "the summary says so");
	/*
	 * Its 10 MiB of direct reads and whatever python read to start (its /proc/PID/io
	 * when it left), plus the shell's own few pages from disk when they are not cached.
	 */
	ASSERT_GE(read_before, 10 * 1048576, "python read its 10 MiB");
	ASSERT_GE(tu_metric(rec, "io.read_bytes"), read_before, "its reads stay the task's");
	ASSERT_LE(tu_metric(rec, "io.read_bytes"), read_before + 2 * 1048576,
		  "its reads stay the task's, with the shell's");
	ASSERT_GE(tu_metric(rec, "io.read_ops"), 10, "the block layer saw them");
	prog = tu_program(rec, "/usr/bin/python3");
	ASSERT_NEAR(tu_num(prog, "cpu_ns"), before, 0.05, "its CPU in the task, in its row");
	ASSERT_LE(tu_metric(rec, "cpu.time_ns"), before + 150e6,
		  "the 300 ms it burned outside are not the task's");
}

/* Its cgroup removed from outside: the task's cpu.stat is the last one read, and said. */
TEST(TIER_E2E, removed_cgroup_keeps_its_last_cpu_stat)
{
	const char *json = tu_tmp("task.json");
	char other[4096], script[8192];
	const struct json *rec, *cs;
	struct tu_result r;

	if (!ASSERT_OK(tu_cgroup_make(other, sizeof(other)), "a cgroup outside the task"))
		return;
	snprintf(script, sizeof(script),
		 "cg=%s$(sed -n 's/^0:://p' /proc/self/cgroup); i=0;"
		 " while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.3;"
		 " echo $$ > %s/cgroup.procs && rmdir \"$cg\"",
		 tu_cgroup_root(), other);
	tu_tp(&r, 60, "run", "--interval", "100", "--json", json, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	cs = json_get(rec, "cgroup_cpu_stat");
	ASSERT_TRUE(cs && cs->type == JSON_OBJ, "cpu.stat as last read is kept");
	ASSERT_GE(tu_num(cs, "usage_usec"), 1000, "with the loop's CPU in it");
	ASSERT_STREQ(str(cs, "note"), "last read before the task's cgroup was removed",
		     "and why it is old");
	ASSERT_TRUE(strstr(r.err, "cpu.stat last read before the task's cgroup was removed"),
		    "the summary says it");
}

/* A command that never ran is a task too: its record, its row, its JSON file. */
TEST(TIER_E2E, command_not_found_still_gets_a_record)
{
	const char *json = tu_tmp("nf.json"), *db = tu_tmp("tp.db"), *noexec = tu_tmp("noexec");
	const struct json *rec, *list;
	struct tu_result r;

	tu_write_file(noexec, "#!/bin/sh\n");
	tu_tp(&r, 30, "run", "--db", db, "--id", "nf-1", "--json", json, "--",
	      "no-such-command-anywhere", NULL);
	ASSERT_EQ(r.status, 127, "exit status 127");
	ASSERT_STREQ(r.err, "taskprobe: no-such-command-anywhere: command not found\n",
		     "one line, no summary");
	rec = tu_load_json(json);
	ASSERT_STREQ(str(rec, "status"), "not_found", "the record says not_found");
	ASSERT_EQ(tu_num(rec, "exit_status"), 127, "with its exit status");
	ASSERT_EQ(tu_metric(rec, "proc.exec_failures"), 0,
		  "taskprobe's own search makes no execve");
	tu_tp(&r, 30, "run", "--db", db, "--id", "nf-2", "--json", json, "--", noexec, NULL);
	ASSERT_EQ(r.status, 126, "exit status 126");
	rec = tu_load_json(json);
	ASSERT_STREQ(str(rec, "status"), "exec_failed", "the record says exec_failed");
	ASSERT_EQ(tu_metric(rec, "proc.exec_failures"), 1, "its one failed execve");
	ASSERT_STREQ(json_str(json_get(rec, "sources"), "proc.exec_failures"),
		     "bpf:uretprobe libc execve", "credited to the execve uretprobe");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	list = tu_parse_json(r.out);
	ASSERT_STREQ(str(tu_find(list, "id", "nf-1"), "status"), "not_found", "stored");
	ASSERT_STREQ(str(tu_find(list, "id", "nf-2"), "status"), "exec_failed", "stored");
	tu_tp(&r, 30, "list", "--db", db, NULL);
	ASSERT_EQ(tu_count_long_lines(r.out, 80), 0, "list fits 80 columns");
}

/* Failed execve calls (not found along PATH, not executable), counted one by one. */
TEST(TIER_E2E, failed_execs_are_counted)
{
	static const char py[] =
		"import os, sys\n"
		"for i in range(7):\n"
		"    try: os.execv('/nonexistent/x%d' % i, ['x'])\n"
		"    except OSError: pass\n"
		"for i in range(3):\n"
		"    try: os.execv(sys.argv[1], ['x'])\n"
		"    except PermissionError: pass\n"
		"os.environ['PATH'] = '/nonexistent/a:/nonexistent/b:/nonexistent/c'\n"
		"for i in range(2):\n"
		"    try: os.execvp('no-such-command', ['x'])\n"
		"    except OSError: pass\n";
	const char *json = tu_tmp("task.json"), *noexec = tu_tmp("noexec");
	const struct json *rec;
	struct tu_result r;

	tu_write_file(noexec, "#!/bin/sh\n");
	/* A PATH with missing directories first: the run itself adds no failure. */
	setenv("PATH", "/nonexistent/1:/nonexistent/2:/usr/bin:/bin", 1);
	tu_tp(&r, 30, "run", "--json", json, "--", "python3", "-c", py, noexec, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	ASSERT_EQ(tu_metric(rec, "proc.exec_failures"), 7 + 3 + 2 * 3,
		  "7 not found, 3 not executable, 2 searches of 3 directories");
	ASSERT_TRUE(strstr(r.err, "16 execs failed") != NULL, "the summary says so");
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 1, "one exec that worked");
}

/* Each bad invocation: exit 125 (run) or 2 (usage), exactly one "taskprobe: " line. */
TEST(TIER_E2E, bad_input_one_line_errors)
{
	static const struct {
		const char *args[6];
		int status;
		const char *says; /* in the message, as printed (escaped) */
	} cases[] = {
		{ { "run", "--bogus", "--", "true" }, 125, "unknown option '--bogus'" },
		{ { "run", "--id", "a/b", "--", "true" }, 125, "invalid task id 'a/b'" },
		{ { "run", "--id", "..", "--", "true" }, 125, "(not . or ..)" },
		{ { "run", "--id", ".", "--", "true" }, 125, "'.': use 1 to 128 of" },
		{ { "run", "--id", "a\nb\x1b[2J", "--", "true" }, 125, "'a\\nb\\x1b[2J'" },
		{ { "run", "--label", "novalue", "--", "true" }, 125, "expected K=V" },
		{ { "run", "--label", "k=a\tb\r", "--", "true" }, 125, "'k=a\\tb\\r'" },
		{ { "run", "--label", "host=ci-7", "--", "true" }, 125, "'host' is a host label" },
		{ { "run", "--label", "instance_type=x", "--", "true" }, 125, "is a host label" },
		{ { "run", "--grace", "soon", "--", "true" }, 125, "invalid --grace 'soon'" },
		{ { "run", "--" }, 125, "no command given" },
		{ { "run" }, 125, "no command given" },
		{ { "show", "x\ny" }, 2, "invalid task id 'x\\ny'" },
		{ { "list", "--label", "k\x7f=v" }, 2, "'k\\x7f=v'" },
		{ { "frobnicate\n" }, 2, "unknown command 'frobnicate\\n'" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *argv[8] = { (char *)tu_bin() };
		struct tu_result r;
		bool raw = false;
		int n = 1;

		for (int k = 0; k < 6 && cases[i].args[k]; k++)
			argv[n++] = (char *)cases[i].args[k];
		argv[n] = NULL;
		tu_run(argv, &r, 30);
		CHECK(r.status == cases[i].status, "case %zu (%s %s): status %d, expected %d", i,
		      cases[i].args[0], cases[i].args[1] ? cases[i].args[1] : "", r.status,
		      cases[i].status);
		CHECK(!strncmp(r.err, "taskprobe: ", 11) && strchr(r.err, '\n') &&
			      strchr(r.err, '\n')[1] == '\0',
		      "case %zu: not one 'taskprobe:' line: '%s'", i, r.err);
		for (const char *p = r.err; *p; p++)
			raw |= ((unsigned char)*p < 0x20 && p[1]) || *p == 0x7f;
		CHECK(!raw, "case %zu: a raw control character in the message", i);
		CHECK(strstr(r.err, cases[i].says), "case %zu: '%s' does not say '%s'", i, r.err,
		      cases[i].says);
	}
}

TEST(TIER_E2E, killed_task_still_reported)
{
	const char *json = tu_tmp("task.json");
	const struct json *rec;
	struct tu_result r;

	tu_tp(&r, 30, "run", "--json", json, "--", "sh", "-c", "/bin/true; /bin/true; kill -9 $$",
	      NULL);
	ASSERT_EQ(r.status, 137, "exit status");
	ASSERT_TRUE(strstr(r.err, "killed by signal 9") != NULL, "summary printed");
	rec = tu_load_json(json);
	if (!rec)
		return;
	ASSERT_STREQ(str(rec, "status"), "signaled", "status");
	ASSERT_EQ(tu_num(rec, "signal"), 9, "signal");
	ASSERT_EQ(tu_num(tu_program(rec, "/bin/true"), "execs"), 2, "execs before the kill");
	ASSERT_EQ(tu_metric(rec, "proc.failed_exits"), 1, "the killed shell failed");
}

static pid_t read_pid(const char *path)
{
	char buf[32];

	return tp_read_file(path, buf, sizeof(buf)) > 0 ? (pid_t)atoi(buf) : -1;
}

TEST(TIER_E2E, leftovers_killed_after_grace)
{
	const char *json = tu_tmp("task.json"), *pidfile = tu_tmp("pid");
	char script[512];
	const struct json *rec;
	struct tu_result r;
	pid_t pid;

	snprintf(script, sizeof(script), "sleep 60 & echo $! > %s; exit 0", pidfile);
	tu_tp(&r, 30, "run", "--grace", "1", "--json", json, "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "the main process's status");
	ASSERT_LE(r.wall_ns, 10000000000ULL, "did not wait for the 60 s sleep");
	ASSERT_GE(r.wall_ns, 1000000000ULL, "waited the grace period");
	rec = tu_load_json(json);
	if (!rec)
		return;
	ASSERT_EQ(tu_num(json_get(rec, "leftovers"), "count"), 1, "leftovers");
	ASSERT_STREQ(str(json_get(rec, "leftovers"), "action"), "killed", "action");
	pid = read_pid(pidfile);
	ASSERT_TRUE(pid > 0 && kill(pid, 0) && errno == ESRCH, "the leftover is gone");
	ASSERT_TRUE(strstr(r.err, "killed after the grace period") != NULL, "summary says so");
	check_cgroup_removed(rec);

	tu_tp(&r, 30, "run", "--grace", "0", "--json", json, "--", "sh", "-c", script, NULL);
	ASSERT_LE(r.wall_ns, 5000000000ULL, "--grace 0 kills at once");
	rec = tu_load_json(json);
	ASSERT_STREQ(str(json_get(rec, "leftovers"), "action"), "killed", "--grace 0 action");
}

TEST(TIER_E2E, leftovers_that_exit_are_waited_for)
{
	const char *json = tu_tmp("task.json");
	const struct json *rec;
	struct tu_result r;

	tu_tp(&r, 30, "run", "--quiet", "--json", json, "--", "sh", "-c",
	      "(sleep 0.5; /bin/true) & exit 0", NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	if (!rec)
		return;
	ASSERT_STREQ(str(json_get(rec, "leftovers"), "action"), "exited", "action");
	ASSERT_GE(tu_num(rec, "wall_ns"), 500000000, "wall time covers the leftover");
	ASSERT_EQ(tu_num(tu_program(rec, "/bin/true"), "execs"), 1, "the leftover's exec");
}

TEST(TIER_E2E, keep_leftovers_leaves_them_running)
{
	const char *json = tu_tmp("task.json"), *pidfile = tu_tmp("pid");
	char script[512];
	const struct json *rec;
	struct tu_result r;
	pid_t pid;

	snprintf(script, sizeof(script), "sleep 60 & echo $! > %s", pidfile);
	tu_tp(&r, 30, "run", "--quiet", "--keep-leftovers", "--json", json, "--", "sh", "-c",
	      script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	pid = read_pid(pidfile);
	ASSERT_TRUE(pid > 0 && kill(pid, 0) == 0, "the leftover still runs");
	if (rec) {
		const char *cg = str(rec, "cgroup");

		ASSERT_STREQ(str(json_get(rec, "leftovers"), "action"), "kept", "action");
		/* Our own leftover: end it by pid, then remove the cgroup it kept. */
		if (pid > 0)
			kill(pid, SIGKILL);
		for (int i = 0; i < 200 && cg[0] && cgroup_populated(cg) > 0; i++)
			usleep(10000);
		if (cg[0])
			ASSERT_OK(cgroup_remove_task(cg), "remove the kept cgroup");
	}
}

TEST(TIER_E2E, signals_are_forwarded)
{
	char json[256], cg[4096];
	const struct json *rec;
	char *args[] = { (char *)tu_bin(), "run", "--id", "e2e-forward", "--json", json, "--",
			 "sleep",	   "60",  NULL };
	pid_t pid;

	snprintf(json, sizeof(json), "%s", tu_tmp("task.json"));
	snprintf(cg, sizeof(cg), "%s/taskprobe/e2e-forward", tu_cgroup_root());
	pid = tu_spawn(args);
	for (int i = 0; i < 500 && cgroup_populated(cg) <= 0; i++)
		usleep(10000);
	ASSERT_TRUE(cgroup_populated(cg) > 0, "the task started");
	kill(pid, SIGTERM);
	ASSERT_EQ(wait_status(pid), 143, "SIGTERM reached the task");
	rec = tu_load_json(json);
	ASSERT_EQ(tu_num(rec, "signal"), 15, "recorded signal");
	ASSERT_TRUE(gone(cg), "cgroup removed");
}

TEST(TIER_E2E, summary_fits_80_columns)
{
	char id[TP_ID_MAX + 1], arg[400];
	struct tu_result r;

	memset(id, 'i', TP_ID_MAX);
	id[TP_ID_MAX] = '\0';
	memset(arg, 'a', sizeof(arg) - 1);
	arg[sizeof(arg) - 1] = '\0';
	tu_tp(&r, 30, "run", "--id", id, "--", "sh", "-c", "/bin/true; : $0", arg, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	ASSERT_TRUE(strstr(r.err, "run queue") != NULL, "summary printed");
	ASSERT_EQ(tu_count_long_lines(r.err, 80), 0, "lines over 80 columns");
}

/*
 * As nobody: no BPF, no cgroup of its own, no database. The command still runs with
 * its exit status, unmeasured, each fault one warning line; with --strict, 125 in one
 * line that names the problem and the fix, and the command never runs.
 */
TEST(TIER_E2E, no_permission_runs_the_command_unmeasured)
{
	const char *errf = tu_tmp("err"), *mark = tu_tmp("ran");
	char buf[4096], script[4200];
	int status, warnings = 0;
	pid_t pid;

	snprintf(script, sizeof(script), "touch %s; exit 5", mark);
	chmod(tu_tmp(""), 0777);
	for (int strict = 0; strict < 2; strict++) {
		pid = fork();
		if (pid == 0) {
			int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0666);

			if (fd < 0 || dup2(fd, 2) < 0 || setgid(65534) || setuid(65534))
				_exit(99);
			execl(tu_bin(), tu_bin(), "run", "--quiet", strict ? "--strict" : "--quiet",
			      "--", "sh", "-c", script, (char *)NULL);
			_exit(98);
		}
		tu_track_pid(pid);
		ASSERT_EQ(waitpid(pid, &status, 0), pid, "wait");
		ASSERT_TRUE(WIFEXITED(status), "exited");
		ASSERT_EQ(WEXITSTATUS(status), strict ? 125 : 5, "exit status");
		ASSERT_TRUE(tp_read_file(errf, buf, sizeof(buf)) > 0, "error output");
		ASSERT_EQ(access(mark, F_OK) == 0, !strict, "the command ran, unless --strict");
		unlink(mark);
		if (strict) {
			ASSERT_TRUE(!strncmp(buf, "taskprobe: no BPF collector (no permission", 42),
				    "names the problem");
			ASSERT_TRUE(strstr(buf, "root") != NULL, "names the fix");
			ASSERT_EQ(strchr(buf, '\n') - buf + 1, (long)strlen(buf), "one line");
			continue;
		}
		for (char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
			warnings += !strncmp(p, "taskprobe: warning: ", 20) ? 1 : 1000;
		CHECK(warnings == 2 && strstr(buf, "no permission to load BPF") &&
			      strstr(buf, "runs unmeasured"),
		      "a warning line for the BPF and the cgroup: %s", buf);
	}
}

/*
 * doctor in a mount namespace of its own, with tracefs and bpffs both unmounted (as
 * on a fresh machine) or both mounted: the host's own mounts are never touched.
 */
static void doctor_in(struct tu_result *r, bool mounted)
{
	static const char unmount[] = "umount -l /sys/kernel/tracing 2>/dev/null; "
				      "umount -l /sys/fs/bpf 2>/dev/null; exec \"$0\" doctor";
	static const char mount[] =
		"mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing;"
		" mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf; exec \"$0\" doctor";
	char *argv[] = { "unshare",
			 "-m",
			 "--propagation",
			 "private",
			 "sh",
			 "-c",
			 (char *)(mounted ? mount : unmount),
			 (char *)tu_bin(),
			 NULL };

	tu_run(argv, r, 30);
}

TEST(TIER_E2E, doctor_reports_this_host)
{
	const char *json = tu_tmp("doctor.json");
	const struct json *d;
	struct tu_result r;
	char want[4200];
	int status;
	pid_t pid;

	for (int mounted = 0; mounted < 2; mounted++) {
		doctor_in(&r, mounted);
		ASSERT_EQ(r.status, 0, "taskprobe can run here");
		snprintf(want, sizeof(want), "ok   cgroup2    %s\n", tu_cgroup_root());
		ASSERT_TRUE(strstr(r.out, want) != NULL, "finds the cgroup2 mount this test found");
		ASSERT_TRUE(strstr(r.out, "ok   bpf") != NULL, "BPF loads");
		/* This host has one copy of each (/lib is /usr/lib): each probed once, by inode. */
		ASSERT_TRUE(strstr(r.out, "libssl.so.3 x1, libgnutls.so.30 x1, libc.so.6 x1") !=
				    NULL,
			    "the TLS libraries and libc are found and probed");
		if (mounted) {
			ASSERT_TRUE(strstr(r.out, "ok   tracefs    /sys/kernel/tracing\n") &&
					    strstr(r.out, "ok   bpffs      /sys/fs/bpf\n"),
				    "tracefs and bpffs seen mounted");
			ASSERT_TRUE(!strstr(r.out, "fix:"), "nothing to fix");
		} else {
			ASSERT_TRUE(strstr(r.out, "--   tracefs    not mounted") &&
					    strstr(r.out, "fix: mount -t tracefs nodev "
							  "/sys/kernel/tracing\n") &&
					    strstr(r.out, "--   bpffs      not mounted") &&
					    strstr(r.out, "fix: mount -t bpf bpf /sys/fs/bpf\n"),
				    "tracefs and bpffs seen unmounted, with the fix");
		}
		if (!ASSERT_EQ(tu_count_long_lines(r.out, 80), 0, "fits 80 columns"))
			fprintf(stderr, "    (%s)\n%s", mounted ? "mounted" : "unmounted", r.out);
	}
	tu_tp(&r, 30, "doctor", "--json", NULL);
	d = tu_parse_json(r.out);
	ASSERT_TRUE(json_get(d, "ok") && json_get(d, "ok")->b, "--json says ok");
	/* As nobody: BPF is refused, and doctor says so and how to fix it. */
	pid = fork();
	if (pid == 0) {
		int fd = open(json, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || dup2(fd, 1) < 0 || setgid(65534) || setuid(65534))
			_exit(99);
		execl(tu_bin(), tu_bin(), "doctor", (char *)NULL);
		_exit(98);
	}
	tu_track_pid(pid);
	ASSERT_EQ(waitpid(pid, &status, 0), pid, "wait");
	ASSERT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 1, "cannot run as nobody");
	ASSERT_TRUE(tp_read_file(json, want, sizeof(want)) > 0 &&
			    strstr(want, "FAIL bpf        no permission: run as root"),
		    "the missing permission and its fix");
	ASSERT_EQ(tu_count_long_lines(want, 80), 0, "fits 80 columns as nobody too");
}
