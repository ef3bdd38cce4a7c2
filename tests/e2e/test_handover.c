// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end tests: a daemon that dies (kill -9) or hands over (--keep-tasks) while
 * tasks run, and the daemon after it, which adopts them from the pinned maps and the
 * tasks' descriptions. Each task's execs are exact and its CPU is its workload's own
 * getrusage, though half of the workload ran while no daemon did.
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/util.h"
#include "harness.h"
#include "testutil.h"

enum { WORKERS = 3, RUNS = 3, JOBS = WORKERS + RUNS, EXECS = 20, BURN_MS = 300 };
#define MIB (1024.0 * 1024.0)

struct job {
	char id[32];
	char cg[4096]; /* a worker's cgroup */
	char ready[4200], truth[4200], json[4200];
	pid_t pid; /* the worker's workload, or the run */
};

/*
 * The daemons' pins (TASKPROBE_PIN_DIR) on a bpffs of this test's own at fs, in a mount
 * namespace of its own: the host's daemon, if any, is never touched.
 */
static bool own_bpffs(const char *fs, const char *pins)
{
	if (!ASSERT_OK(unshare(CLONE_NEWNS), "a mount namespace") ||
	    !ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "private mounts") ||
	    !ASSERT_OK(mkdir(fs, 0700), "the bpffs mount point") ||
	    !ASSERT_OK(mount("bpf", fs, "bpf", 0, "mode=0700"), "a bpffs of the test's own"))
		return false;
	setenv("TASKPROBE_PIN_DIR", pins, 1);
	return true;
}

/* The last daemon stopped (its pins removed), the test's bpffs unmounted. */
static void leave_bpffs(pid_t d, const char *fs)
{
	int st;

	if (d > 0) {
		kill(d, SIGTERM);
		waitpid(d, &st, 0);
	}
	unsetenv("TASKPROBE_PIN_DIR");
	umount2(fs, MNT_DETACH);
}

static pid_t start_daemon(const char *db, const char *sock, bool keep)
{
	char sock_opt[4200];
	pid_t d;

	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	d = tu_spawn_fds((char *[]){ (char *)tu_bin(), "daemon", "--db", (char *)db, sock_opt,
				     "--listen=off", keep ? "--keep-tasks" : "--listen=off", NULL },
			 -1, STDERR_FILENO);
	return d > 0 && tu_wait_socket(sock, d) ? d : -1;
}

/*
 * A daemon with config conf on the same store and socket, its stderr to efd: or -1.
 * With old_uname, under the uname of a kernel before 6.16 (setarch --uname-2.6): its
 * collector then chooses the programs of older kernels (the exit program without
 * group_dead).
 */
static pid_t spawn_daemon(bool old_uname, const char *conf, const char *db, const char *sock,
			  int efd)
{
	char sock_opt[4200], conf_opt[4200], *argv[16];
	struct utsname u;
	int n = 0;
	pid_t d;

	snprintf(sock_opt, sizeof(sock_opt), "--socket=%s", sock);
	snprintf(conf_opt, sizeof(conf_opt), "--config=%s", conf);
	if (old_uname) {
		if (uname(&u))
			return -1;
		argv[n++] = "setarch";
		argv[n++] = u.machine;
		argv[n++] = "--uname-2.6";
	}
	argv[n++] = (char *)tu_bin();
	argv[n++] = "daemon";
	argv[n++] = conf_opt;
	argv[n++] = "--db";
	argv[n++] = (char *)db;
	argv[n++] = sock_opt;
	argv[n++] = "--listen=off";
	argv[n] = NULL;
	d = tu_spawn_fds(argv, -1, efd);
	return d > 0 && tu_wait_socket(sock, d) ? d : -1;
}

/* The same, under this kernel's own uname. */
static pid_t start_daemon_with(const char *conf, const char *db, const char *sock, int efd)
{
	return spawn_daemon(false, conf, db, sock, efd);
}

/* The workload, in a worker's cgroup (it moves itself in first). */
static pid_t start_worker(struct job *j, const char *go)
{
	char procs[4200], n[16], ms[16];
	pid_t pid;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", j->cg);
	snprintf(n, sizeof(n), "%d", EXECS);
	snprintf(ms, sizeof(ms), "%d", BURN_MS);
	pid = fork();
	if (pid == 0) {
		if (tp_write_file(procs, "0"))
			_exit(126);
		execl(tu_helper("halves"), "halves", n, ms, j->ready, go, j->truth, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* sh -c '/bin/true' in cgroup cg (2 execs), waited: its exit status. */
static int run_in_cgroup(const char *cg)
{
	char procs[4200];
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
		if (tp_write_file(procs, "0"))
			_exit(126);
		execl("/bin/sh", "sh", "-c", "/bin/true", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool all_ready(struct job *jobs)
{
	for (int i = 0; i < 1000; i++) {
		int ready = 0;

		for (int k = 0; k < JOBS; k++)
			ready += !access(jobs[k].ready, F_OK);
		if (ready == JOBS)
			return true;
		usleep(20000);
	}
	return false;
}

static int wait_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Three worker-managed tasks and three runs through a daemon; each runs the first half
 * of its workload, then the daemon goes (SIGKILL, or SIGTERM with --keep-tasks), the
 * second halves run with no daemon at all for a second, and a new daemon (or two in a
 * row, the first also killed) takes over. Every task is then ended as usual: its
 * record has exactly its 41 execs (halves and its 40 /bin/true), its CPU within 1% of
 * the workload's getrusage, the change of hands noted, and each is stored once.
 */
static void handover(bool keep, int restarts)
{
	const char *fs = tu_tmp("bpffs"), *go = tu_tmp("go");
	static struct job jobs[JOBS];
	char db[4200], sock[4200], pins[4200], n[16], ms[16];
	struct tu_result r;
	pid_t d;

	snprintf(db, sizeof(db), "%s", tu_tmp("d.db"));
	snprintf(sock, sizeof(sock), "%s", tu_tmp("control.sock"));
	snprintf(pins, sizeof(pins), "%s/taskprobe", fs);
	snprintf(n, sizeof(n), "%d", EXECS);
	snprintf(ms, sizeof(ms), "%d", BURN_MS);
	if (!own_bpffs(fs, pins))
		return;
	d = start_daemon(db, sock, keep);
	if (!ASSERT_TRUE(d > 0, "the first daemon listens"))
		goto out;
	unsetenv("TASKPROBE_DB");
	setenv("TASKPROBE_CONTROL", sock, 1);
	for (int i = 0; i < JOBS; i++) {
		struct job *j = &jobs[i];

		snprintf(j->id, sizeof(j->id), "%s-%d", i < WORKERS ? "worker" : "run", i);
		snprintf(j->ready, sizeof(j->ready), "%s.ready", tu_tmp(j->id));
		snprintf(j->truth, sizeof(j->truth), "%s.truth", tu_tmp(j->id));
		snprintf(j->json, sizeof(j->json), "%s.json", tu_tmp(j->id));
		if (i < WORKERS) {
			if (!ASSERT_OK(tu_cgroup_make(j->cg, sizeof(j->cg)), "a worker's cgroup"))
				goto out;
			tu_tp(&r, 30, "task", "start", j->id, "--cgroup", j->cg, NULL);
			ASSERT_EQ(r.status, 0, "task start");
			j->pid = start_worker(j, go);
		} else {
			j->pid = tu_spawn_fds((char *[]){ (char *)tu_bin(), "run", "--id", j->id,
							  "--quiet", "--json", j->json, "--",
							  (char *)tu_helper("halves"), n, ms,
							  j->ready, (char *)go, j->truth, NULL },
					      -1, STDERR_FILENO);
		}
	}
	if (!ASSERT_TRUE(all_ready(jobs), "every first half ran"))
		goto out;
	for (int k = 0; k < restarts; k++) {
		kill(d, keep ? SIGTERM : SIGKILL);
		ASSERT_EQ(wait_status(d), keep ? 0 : 128 + SIGKILL, "the daemon went");
		/* The second halves run with no daemon at all: the pinned programs count. */
		if (k == 0)
			tu_write_file(go, "go");
		sleep(1);
		d = start_daemon(db, sock, keep);
		if (!ASSERT_TRUE(d > 0, "the next daemon listens"))
			goto out;
	}
	for (int i = 0; i < JOBS; i++) {
		struct job *j = &jobs[i];

		if (i < WORKERS) {
			ASSERT_EQ(wait_status(j->pid), 0, "a worker's workload");
			tu_tp(&r, 30, "task", "end", j->id, "--quiet", "--json", j->json, NULL);
			CHECK(r.status == 0, "task end %s: %s", j->id, r.err ? r.err : "");
		} else {
			CHECK(wait_status(j->pid) == 0, "run %s exited 0", j->id);
		}
	}
	for (int i = 0; i < JOBS; i++) {
		const struct json *rec = tu_load_json(jobs[i].json);
		const struct json *faults = json_get(json_get(rec, "collector"), "faults");
		double children, self;

		if (!rec || !ASSERT_OK(tu_read_truth(jobs[i].truth, &children, &self), "truth"))
			continue;
		CHECK(tu_metric(rec, "proc.execs") == 1 + 2 * EXECS, "%s: execs %.0f, expected %d",
		      jobs[i].id, tu_metric(rec, "proc.execs"), 1 + 2 * EXECS);
		ASSERT_NEAR(tu_metric(rec, "cpu.time_ns"), children + self, 0.01,
			    "cpu.time_ns vs the workload's getrusage");
		ASSERT_STREQ(json_str(rec, "status"), i < WORKERS ? "ended" : "exited", "status");
		CHECK(json_len(faults) == 1 && strstr(json_at(faults, 0)->str, "changed hands"),
		      "%s: the change of hands is noted", jobs[i].id);
	}
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	ASSERT_EQ(json_len(tu_parse_json(r.out)), JOBS, "each task stored once");
	for (int i = 0; i < JOBS; i++) {
		tu_tp(&r, 30, "show", jobs[i].id, "--db", db, "--json", NULL);
		CHECK(tu_metric(tu_parse_json(r.out), "proc.execs") == 1 + 2 * EXECS,
		      "%s stored with its execs: %.300s %.300s", jobs[i].id, r.out ? r.out : "",
		      r.err ? r.err : "");
	}
out:
	leave_bpffs(d, fs);
}

TEST(TIER_E2E, a_killed_daemons_tasks_are_adopted_exactly)
{
	handover(false, 1);
}

TEST(TIER_E2E, a_daemon_upgrade_hands_its_tasks_over)
{
	handover(true, 1);
}

TEST(TIER_E2E, two_restarts_in_a_row_lose_nothing)
{
	handover(false, 2);
}

/* Up to 20 s for path to exist. */
static bool wait_file(const char *path)
{
	for (int i = 0; i < 1000 && access(path, F_OK); i++)
		usleep(20000);
	return !access(path, F_OK);
}

/*
 * Injected: the daemon is killed (SIGKILL) while it ends a run's task, after the client
 * asked for the record ("f") and before it sent it: a write lock on the store, held by
 * the test, keeps the daemon in its store's busy wait (5 s) then. Recovered: the client
 * waits for the next daemon as it does during the run, that one adopts the task (its
 * description was still there), and the client gets the record from it: the command's
 * status, its exact execs, the change of hands noted, and the task stored once.
 */
TEST(TIER_E2E, a_daemon_killed_while_it_ends_a_task_loses_nothing)
{
	const char *fs = tu_tmp("bpffs"), *go = tu_tmp("go"), *ready = tu_tmp("ready"),
		   *done = tu_tmp("done"), *json = tu_tmp("run.json");
	char db[4200], sock[4200], pins[4200], script[8192];
	const struct json *rec, *faults;
	struct tu_result r;
	sqlite3 *h = NULL;
	pid_t d, run;

	snprintf(db, sizeof(db), "%s", tu_tmp("d.db"));
	snprintf(sock, sizeof(sock), "%s", tu_tmp("control.sock"));
	snprintf(pins, sizeof(pins), "%s/taskprobe", fs);
	/* Four execs: sh, its /bin/true, touch, and the last touch (read is the shell's). */
	snprintf(script, sizeof(script), "/bin/true; touch %s; read x < %s; touch %s; exit 3",
		 ready, go, done);
	if (!ASSERT_OK(mkfifo(go, 0600), "the command's go, a fifo") || !own_bpffs(fs, pins))
		return;
	d = start_daemon(db, sock, false);
	if (!ASSERT_TRUE(d > 0, "the first daemon listens"))
		goto out;
	unsetenv("TASKPROBE_DB");
	setenv("TASKPROBE_CONTROL", sock, 1);
	run = tu_spawn_fds((char *[]){ (char *)tu_bin(), "run", "--id", "ends-twice", "--quiet",
				       "--interval", "60000", "--json", (char *)json, "--", "sh",
				       "-c", script, NULL },
			   -1, STDERR_FILENO);
	if (!ASSERT_TRUE(wait_file(ready), "the command runs"))
		goto out;
	if (!ASSERT_EQ(sqlite3_open(db, &h), SQLITE_OK, "open the store") ||
	    !ASSERT_EQ(sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK,
		       "hold the store's write lock"))
		goto out;
	tu_write_file(go, "go");
	if (!ASSERT_TRUE(wait_file(done), "the command ended"))
		goto out;
	/* Its cgroup empties, "e", "f": the daemon waits on the lock from then on. */
	usleep(1500000);
	kill(d, SIGKILL);
	ASSERT_EQ(wait_status(d), 128 + SIGKILL, "the daemon was killed as it ended the task");
	sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(h);
	h = NULL;
	d = start_daemon(db, sock, false);
	if (!ASSERT_TRUE(d > 0, "the next daemon listens"))
		goto out;
	ASSERT_EQ(wait_status(run), 3, "the run exits with its command's status");
	rec = tu_load_json(json);
	if (!ASSERT_TRUE(rec != NULL, "the run wrote the record the next daemon sent"))
		goto out;
	faults = json_get(json_get(rec, "collector"), "faults");
	ASSERT_STREQ(json_str(rec, "status"), "exited", "status");
	ASSERT_EQ(tu_num(rec, "exit_status"), 3, "exit_status");
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 4, "its execs, exact");
	CHECK(json_len(faults) == 1 && strstr(json_at(faults, 0)->str, "changed hands"),
	      "the change of hands is noted");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	ASSERT_EQ(json_len(tu_parse_json(r.out)), 1, "the task stored once");
	tu_tp(&r, 30, "show", "ends-twice", "--db", db, "--json", NULL);
	ASSERT_STREQ(json_str(tu_parse_json(r.out), "status"), "exited", "stored as exited");
out:
	if (h) {
		sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(h);
	}
	leave_bpffs(d, fs);
}

/*
 * A run through a daemon that hands over (--keep-tasks) after a phase in which the task
 * held 96 MiB, and before the task's last 8 MiB: on hybrid hosts that phase boundary
 * reset the v1 memory cgroup's watermark, so the task's peak so far lives in the
 * description the daemon after it reads. The record's peak is still the 96 MiB phase's.
 */
TEST(TIER_E2E, the_memory_peak_before_a_handover_is_kept)
{
	const char *fs = tu_tmp("bpffs"), *go = tu_tmp("go"), *ready = tu_tmp("ready"),
		   *json = tu_tmp("run.json");
	char db[4200], sock[4200], pins[4200], script[8192];
	const struct json *rec, *big;
	pid_t d, run;

	snprintf(db, sizeof(db), "%s", tu_tmp("d.db"));
	snprintf(sock, sizeof(sock), "%s", tu_tmp("control.sock"));
	snprintf(pins, sizeof(pins), "%s/taskprobe", fs);
	snprintf(script, sizeof(script),
		 "S=%s; M=%s; $S 1 phase:begin:big && $M 96 %s 0 && $S 1 phase:end:big &&"
		 " touch %s && while [ ! -e %s ]; do sleep 0.05; done && $M 8 %s 0",
		 tu_helper("sendlines"), tu_helper("memtouch"), tu_tmp("t1"), ready, go,
		 tu_tmp("t2"));
	if (!own_bpffs(fs, pins))
		return;
	d = start_daemon(db, sock, true);
	if (!ASSERT_TRUE(d > 0, "the first daemon listens"))
		goto out;
	unsetenv("TASKPROBE_DB");
	setenv("TASKPROBE_CONTROL", sock, 1);
	run = tu_spawn_fds((char *[]){ (char *)tu_bin(), "run", "--id", "peak-kept", "--quiet",
				       "--json", (char *)json, "--", "sh", "-c", script, NULL },
			   -1, STDERR_FILENO);
	for (int i = 0; i < 1000 && access(ready, F_OK); i++)
		usleep(20000);
	if (!ASSERT_OK(access(ready, F_OK), "the big phase ran"))
		goto out;
	/* The phase's end reached the daemon before it goes: its line is read at once. */
	usleep(300000);
	kill(d, SIGTERM);
	ASSERT_EQ(wait_status(d), 0, "the first daemon handed over");
	d = start_daemon(db, sock, true);
	if (!ASSERT_TRUE(d > 0, "the next daemon listens"))
		goto out;
	tu_write_file(go, "go");
	ASSERT_EQ(wait_status(run), 0, "the run exited 0");
	rec = tu_load_json(json);
	big = rec ? tu_find(json_get(rec, "phases"), "name", "big") : NULL;
	printf("    the task's peak %.1f MiB (%s)\n", tu_metric(rec, "mem.peak_bytes") / MIB,
	       json_str(json_get(rec, "sources"), "mem.peak_bytes"));
	ASSERT_GE(tu_metric(rec, "mem.peak_bytes"), 96 * MIB, "the peak covers the 96 MiB phase");
	/* The phases before the change of hands are not in the record (it says so). */
	ASSERT_TRUE(big == NULL, "the phase before the change of hands is not in the record");
out:
	leave_bpffs(d, fs);
}

/*
 * A daemon whose maps cannot be those of the one before (max_tasks changed: the maps
 * are sized by it) does not adopt its tasks: it says so in one line and stores each as
 * interrupted with what is left to read, its cgroup's cpu.stat, and the reason.
 */
TEST(TIER_E2E, a_daemon_that_cannot_adopt_stores_the_tasks_as_interrupted)
{
	const char *fs = tu_tmp("bpffs"), *conf = tu_tmp("tp.conf"), *log = tu_tmp("d2.log");
	char db[4200], sock[4200], pins[4200], cg[4096];
	const struct json *rec, *faults;
	struct tu_result r;
	char *text = NULL;
	pid_t d, w;
	int efd;

	snprintf(db, sizeof(db), "%s", tu_tmp("d.db"));
	snprintf(sock, sizeof(sock), "%s", tu_tmp("control.sock"));
	snprintf(pins, sizeof(pins), "%s/taskprobe", fs);
	if (!own_bpffs(fs, pins) || !ASSERT_OK(tu_cgroup_make(cg, sizeof(cg)), "a worker's cgroup"))
		return;
	d = start_daemon(db, sock, false);
	if (!ASSERT_TRUE(d > 0, "the first daemon listens"))
		goto out;
	unsetenv("TASKPROBE_DB");
	setenv("TASKPROBE_CONTROL", sock, 1);
	tu_tp(&r, 30, "task", "start", "sized", "--cgroup", cg, NULL);
	ASSERT_EQ(r.status, 0, "task start");
	w = fork();
	if (w == 0) {
		char procs[4200];

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
		if (tp_write_file(procs, "0"))
			_exit(126);
		execl(tu_helper("burn"), "burn", "1", "300", (char *)NULL);
		_exit(127);
	}
	ASSERT_EQ(wait_status(w), 0, "the workload");
	kill(d, SIGKILL);
	wait_status(d);
	tu_write_file(conf, "max_tasks = 512\n");
	efd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	d = start_daemon_with(conf, db, sock, efd);
	close(efd);
	if (!ASSERT_TRUE(d > 0, "the second daemon listens"))
		goto out;
	if (tp_slurp(log, "the daemon's log", true, &text) < 0)
		text = NULL;
	CHECK(text && strstr(text, "warning: adopted 0 of the 1 running tasks") &&
		      strstr(text, "max_tasks"),
	      "one line says so: %s", text ? text : "");
	free(text);
	tu_tp(&r, 30, "task", "end", "sized", NULL);
	ASSERT_EQ(r.status, 1, "the task is not tracked");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	ASSERT_EQ(json_len(tu_parse_json(r.out)), 1, "its row completed, not another made");
	tu_tp(&r, 30, "show", "sized", "--db", db, "--json", NULL);
	rec = tu_parse_json(r.out);
	ASSERT_STREQ(json_str(rec, "status"), "interrupted", "stored as interrupted");
	ASSERT_NEAR(tu_metric(rec, "cpu.time_ns"), 300e6, 0.10,
		    "the cgroup's cpu.stat: its 300 ms");
	faults = json_get(json_get(rec, "collector"), "faults");
	CHECK(json_len(faults) == 1 && strstr(json_at(faults, 0)->str, "could not take"),
	      "the reason is noted");
out:
	leave_bpffs(d, fs);
}

/*
 * The switch program is one of two (with the run-queue histogram or without), chosen by
 * the config. A daemon whose config collects runq, after one that did not (killed),
 * adopts the switch program running, under the one pin name they share: no second
 * switch program is attached beside it (two would send a dead thread's exit event
 * twice). It also runs under a 2.6 uname, so the exit's work it puts in the adopted
 * tail_exit is the other one (without group_dead), which the adopted exit program then
 * calls. Injected: kill -9 of the first daemon, a config change, a 2.6 uname.
 * Recovered: the task's execs and exits, exact, with the adopted programs.
 */
TEST(TIER_E2E, a_daemon_collecting_runq_adopts_the_running_switch_program)
{
	const char *fs = tu_tmp("bpffs"), *conf = tu_tmp("runq.conf"), *json = tu_tmp("r.json");
	char db[4200], sock[4200], pins[4200], cg[4096], path[4400];
	struct tu_result r;
	pid_t d;

	snprintf(db, sizeof(db), "%s", tu_tmp("d.db"));
	snprintf(sock, sizeof(sock), "%s", tu_tmp("control.sock"));
	snprintf(pins, sizeof(pins), "%s/taskprobe", fs);
	if (!own_bpffs(fs, pins) || !ASSERT_OK(tu_cgroup_make(cg, sizeof(cg)), "a worker's cgroup"))
		return;
	d = start_daemon(db, sock, false);
	if (!ASSERT_TRUE(d > 0, "the first daemon listens"))
		goto out;
	unsetenv("TASKPROBE_DB");
	setenv("TASKPROBE_CONTROL", sock, 1);
	tu_tp(&r, 30, "task", "start", "switch", "--cgroup", cg, NULL);
	ASSERT_EQ(r.status, 0, "task start");
	ASSERT_EQ(run_in_cgroup(cg), 0, "a first process");
	kill(d, SIGKILL);
	wait_status(d);
	tu_write_file(conf, "collect = cpu,io,mem,net,http,runq\n");
	d = spawn_daemon(true, conf, db, sock, STDERR_FILENO);
	if (!ASSERT_TRUE(d > 0, "the second daemon listens"))
		goto out;
	snprintf(path, sizeof(path), "%s/links/tp_sched_switch_runq", pins);
	CHECK(access(path, F_OK) != 0, "no second switch program pinned (%s)", path);
	/* The pinned link's program, by its id */
	snprintf(path, sizeof(path),
		 "id=$(bpftool link show pinned %s/links/tp_sched_switch |"
		 " sed -n 's/.* prog \\([0-9]*\\).*/\\1/p'); bpftool prog show id \"$id\"",
		 pins);
	tu_run((char *[]){ "sh", "-c", path, NULL }, &r, 30);
	CHECK(r.status == 0 && r.out && strstr(r.out, "name tp_sched_switch ") &&
		      !strstr(r.out, "tp_sched_switch_runq"),
	      "the running switch program adopted: %s %s", r.out ? r.out : "", r.err ? r.err : "");
	ASSERT_EQ(run_in_cgroup(cg), 0, "a second process");
	tu_tp(&r, 30, "task", "end", "switch", "--quiet", "--json", json, NULL);
	ASSERT_EQ(r.status, 0, "task end");
	/* sh -c /bin/true twice: sh, which vforks, and true each time (strace says so) */
	ASSERT_EQ(tu_metric(tu_load_json(json), "proc.execs"), 4, "execs: exact");
	ASSERT_EQ(tu_metric(tu_load_json(json), "proc.exits"), 4, "exits: exact");
out:
	leave_bpffs(d, fs);
}

/*
 * A second daemon started on the store of a live one refuses in one line (exit 1), and
 * takes nothing of the live one's: its task, started before, still ends with its count.
 */
TEST(TIER_E2E, a_second_daemon_on_a_live_ones_store_refuses)
{
	const char *fs = tu_tmp("bpffs"), *json = tu_tmp("w.json");
	char db[4200], sock[4200], sock2[4200], pins[4200], cg[4096];
	struct tu_result r;
	pid_t d;

	snprintf(db, sizeof(db), "%s", tu_tmp("d.db"));
	snprintf(sock, sizeof(sock), "%s", tu_tmp("control.sock"));
	snprintf(sock2, sizeof(sock2), "--socket=%s", tu_tmp("second.sock"));
	snprintf(pins, sizeof(pins), "%s/taskprobe", fs);
	if (!own_bpffs(fs, pins) || !ASSERT_OK(tu_cgroup_make(cg, sizeof(cg)), "a worker's cgroup"))
		return;
	d = start_daemon(db, sock, false);
	if (!ASSERT_TRUE(d > 0, "the first daemon listens"))
		goto out;
	unsetenv("TASKPROBE_DB");
	setenv("TASKPROBE_CONTROL", sock, 1);
	tu_tp(&r, 30, "task", "start", "kept", "--cgroup", cg, NULL);
	ASSERT_EQ(r.status, 0, "task start");
	tu_tp(&r, 30, "daemon", "--db", db, sock2, "--listen=off", NULL);
	ASSERT_EQ(r.status, 1, "the second daemon refuses");
	CHECK(r.err && strstr(r.err, "a daemon is running already on the store") &&
		      strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
	      "in one line: %s", r.err ? r.err : "");
	ASSERT_EQ(run_in_cgroup(cg), 0, "the workload, after the refusal");
	tu_tp(&r, 30, "task", "end", "kept", "--quiet", "--json", json, NULL);
	ASSERT_EQ(r.status, 0, "task end on the first daemon");
	ASSERT_EQ(tu_metric(tu_load_json(json), "proc.execs"), 2, "its execs, still counted");
out:
	leave_bpffs(d, fs);
}
