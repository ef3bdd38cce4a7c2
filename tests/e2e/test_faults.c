// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end tests: faults of taskprobe's own side, injected as they happen (a full
 * disk on a tmpfs of the test's own, no BPF permission, a dead run's cgroup, a store
 * that fails under the daemon). The measured command always runs and keeps its exit
 * status; each fault is one warning line and a note in the record; nothing collected
 * is lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/util.h"
#include "collector/cgroup.h"
#include "harness.h"
#include "store/spool.h"
#include "testutil.h"

/* A mount namespace of the test's own, with a tmpfs of size at dir and at the spool's fallback. */
static bool private_tmpfs(const char *dir, const char *size)
{
	char opts[64];

	snprintf(opts, sizeof(opts), "size=%s,mode=0755", size);
	return ASSERT_OK(unshare(CLONE_NEWNS), "a mount namespace") &&
	       ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "private mounts") &&
	       ASSERT_OK(mkdir(dir, 0755), "the small filesystem's directory") &&
	       ASSERT_OK(mount("tmpfs", dir, "tmpfs", 0, opts), "a small tmpfs") &&
	       (mkdir("/run/taskprobe", 0755) || true) &&
	       ASSERT_OK(mount("tmpfs", "/run/taskprobe", "tmpfs", 0, "size=8m,mode=0755"),
			 "the spool's fallback, this test's own");
}

/* Fills the filesystem of dir with one file until it takes no more; its path. */
static const char *fill(const char *dir)
{
	static char path[4200];
	char block[65536] = { 1 };
	int fd;

	snprintf(path, sizeof(path), "%s/filler", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	while (fd >= 0 && write(fd, block, sizeof(block)) > 0)
		;
	/* The last pages, a byte at a time. */
	while (fd >= 0 && write(fd, block, 1) > 0)
		;
	if (fd >= 0)
		close(fd);
	return path;
}

/* Lines of text (each ends in a newline), and how many start with prefix. */
static int lines(const char *text, const char *prefix, int *with)
{
	int n = 0;

	*with = 0;
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');

		n++;
		*with += !strncmp(p, prefix, strlen(prefix));
		p = nl ? nl + 1 : NULL;
	}
	return n;
}

static int integrity(const char *db, char *out, size_t len)
{
	sqlite3_stmt *st;
	sqlite3 *h;
	int rc = -1;

	out[0] = '\0';
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW) {
			snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
			rc = 0;
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(h);
	return rc;
}

static int wait_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The samples stored for task id, or -1. */
static long series_points(const char *db, const char *id)
{
	sqlite3_stmt *st;
	sqlite3 *h;
	long n = -1;

	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(h,
			       "SELECT total(points) FROM series JOIN tasks ON task = tid "
			       "WHERE id = ?",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW)
			n = (long)sqlite3_column_double(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(h);
	return n;
}

/*
 * The database's filesystem full (a 2 MiB tmpfs of the test's own, filled by a file):
 * two tasks run, keep their exit status, say so in one warning line each, write their
 * --json, and their records (with the series) go to the spool, beside the database
 * where it has room, else in memory. Once space returns, the next run stores them:
 * each once, with its figures and series, and the database is whole.
 */
TEST(TIER_E2E, a_full_disk_never_stops_the_job)
{
	const char *dir = tu_tmp("small"), *ja = tu_tmp("a.json"), *jb = tu_tmp("b.json");
	const char *mark = tu_tmp("mid-started");
	double b_execs;
	pid_t run;
	char db[4200], ok[64];
	const struct json *a, *b, *list, *faults, *stored;
	struct spool_stats sp;
	struct tu_result r;
	int warn;

	if (!private_tmpfs(dir, "2m"))
		return;
	snprintf(db, sizeof(db), "%s/tp.db", dir);
	tu_tp(&r, 60, "run", "--quiet", "--db", db, "--id", "before", "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "a first task, stored");
	fill(dir);

	tu_tp(&r, 60, "run", "--quiet", "--db", db, "--id", "full-a", "--json", ja, "--", "sh",
	      "-c", "/bin/true; /bin/true; exit 3", NULL);
	ASSERT_EQ(r.status, 3, "the command ran and kept its exit status");
	ASSERT_EQ(lines(r.err, "taskprobe: warning: ", &warn), 1, "one line on stderr");
	CHECK(warn == 1 && strstr(r.err, "disk full"), "a warning saying why: %s", r.err);
	a = tu_load_json(ja);
	ASSERT_EQ(tu_metric(a, "proc.execs"), 3, "its --json has its execs");
	faults = json_get(json_get(a, "collector"), "faults");
	ASSERT_TRUE(json_len(faults) == 1 && strstr(json_at(faults, 0)->str, "disk full"),
		    "the record notes the fault");
	tu_tp(&r, 60, "run", "--quiet", "--db", db, "--id", "full-b", "--interval", "100", "--json",
	      jb, "--", "sh", "-c", "sleep 0.6; /bin/true", NULL);
	ASSERT_EQ(r.status, 0, "a second task ran");
	b = tu_load_json(jb);
	b_execs = tu_metric(b, "proc.execs");
	ASSERT_OK(spool__stat(db, &sp), "the spool");
	ASSERT_EQ(sp.files, 2, "both records are spooled");

	/* A task whose start was stored, and whose end met the full disk: its row completed. */
	unlink(fill(dir));
	run = tu_spawn((char *[]){ (char *)tu_bin(), "run", "--quiet", "--db", db, "--id", "mid",
				   "--", "sh", "-c", "touch \"$0\"; sleep 1; /bin/true",
				   (char *)mark, NULL });
	for (int i = 0; i < 500 && access(mark, F_OK); i++)
		usleep(10000);
	fill(dir);
	ASSERT_EQ(wait_status(run), 0, "the task whose end met the full disk");
	ASSERT_OK(spool__stat(db, &sp), "the spool");
	ASSERT_EQ(sp.files, 3, "its record is spooled too");

	unlink(fill(dir)); /* space returns */
	tu_tp(&r, 60, "run", "--quiet", "--db", db, "--id", "after", "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "a task once space returned");
	ASSERT_OK(spool__stat(db, &sp), "the spool");
	ASSERT_EQ(sp.files, 0, "the spool was stored and emptied");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	list = tu_parse_json(r.out);
	ASSERT_EQ(json_len(list), 5, "five tasks, none doubled, none lost");
	tu_tp(&r, 30, "show", "full-a", "--db", db, "--json", NULL);
	stored = tu_parse_json(r.out);
	ASSERT_STREQ(json_str(stored, "status"), "exited", "full-a's status");
	ASSERT_EQ(tu_num(stored, "exit_status"), 3, "full-a's exit status");
	ASSERT_EQ(tu_metric(stored, "proc.execs"), tu_metric(a, "proc.execs"), "its figures");
	ASSERT_EQ(tu_metric(stored, "cpu.time_ns"), tu_metric(a, "cpu.time_ns"), "its CPU");
	tu_tp(&r, 30, "count", "proc.execs", "--db", db, "--json", NULL);
	ASSERT_EQ(tu_num(tu_parse_json(r.out), "sum"), 1 + 3 + b_execs + 4 + 1,
		  "count sums every task once (mid: sh, touch, sleep, true)");
	tu_tp(&r, 30, "show", "mid", "--db", db, "--json", NULL);
	ASSERT_STREQ(json_str(tu_parse_json(r.out), "status"), "exited", "mid's row, completed");
	ASSERT_GE(series_points(db, "full-b"), 5, "full-b's series (0.6 s at 100 ms) came with it");
	ASSERT_OK(integrity(db, ok, sizeof(ok)), "integrity_check ran");
	ASSERT_STREQ(ok, "ok", "integrity_check");
	umount2("/run/taskprobe", MNT_DETACH);
	umount2(dir, MNT_DETACH);
}

/*
 * No BPF (CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN dropped from root by setpriv): the
 * command runs with its exit status, one warning says what is missing, and its record
 * holds the cgroup's own CPU (compared with the workload's getrusage) and says so in
 * its sources. With --strict: 125, and the command never runs.
 */
TEST(TIER_E2E, no_bpf_measures_from_the_cgroups_files)
{
	const char *json = tu_tmp("t.json"), *truth = tu_tmp("truth"), *db = tu_tmp("t.db");
	const char *mark = tu_tmp("ran");
	char script[8400];
	double children, self;
	const struct json *rec;
	struct tu_result r;
	int warn;

	snprintf(script, sizeof(script), "%s 1 600 %s; exit 4", tu_helper("burn"), truth);
	tu_run((char *[]){ "setpriv", "--inh-caps=-bpf,-sys_admin,-perfmon",
			   "--bounding-set=-bpf,-sys_admin,-perfmon", (char *)tu_bin(), "run",
			   "--quiet", "--db", (char *)db, "--json", (char *)json, "--", "sh", "-c",
			   script, NULL },
	       &r, 60);
	ASSERT_EQ(r.status, 4, "the command's own status");
	ASSERT_EQ(lines(r.err, "taskprobe: warning: no BPF collector (no permission", &warn), 1,
		  "one line");
	CHECK(warn == 1, "the warning names the fault: %s", r.err);
	rec = tu_load_json(json);
	if (!rec || !ASSERT_OK(tu_read_truth(truth, &children, &self), "truth file"))
		return;
	ASSERT_STREQ(json_str(json_get(rec, "collector"), "collect"), "cgroup", "collected");
	ASSERT_STREQ(json_str(json_get(rec, "sources"), "cpu.time_ns"),
		     "cgroup:cpu.stat usage_usec", "its source");
	ASSERT_NEAR(tu_metric(rec, "cpu.time_ns"), children + self, 0.03,
		    "cpu.time_ns (cpu.stat) vs the burner's getrusage");
	ASSERT_TRUE(json_get(json_get(rec, "metrics"), "proc.execs") == NULL,
		    "no exec count is made up");
	ASSERT_EQ(json_len(json_get(json_get(rec, "collector"), "faults")), 1, "the fault noted");
	tu_tp(&r, 30, "show", json_str(rec, "id"), "--db", db, "--json", NULL);
	ASSERT_EQ(tu_metric(tu_parse_json(r.out), "cpu.time_ns"), tu_metric(rec, "cpu.time_ns"),
		  "stored as recorded");

	snprintf(script, sizeof(script), "touch %s", mark);
	tu_run((char *[]){ "setpriv", "--inh-caps=-bpf,-sys_admin,-perfmon",
			   "--bounding-set=-bpf,-sys_admin,-perfmon", (char *)tu_bin(), "run",
			   "--strict", "--db", (char *)db, "--", "sh", "-c", script, NULL },
	       &r, 60);
	ASSERT_EQ(r.status, 125, "--strict: taskprobe's failure");
	ASSERT_TRUE(access(mark, F_OK) != 0, "--strict: the command never ran");
	ASSERT_EQ(lines(r.err, "taskprobe: no BPF collector (no permission", &warn), 1,
		  "--strict: one line");
	CHECK(warn == 1 && strstr(r.err, "--strict"), "--strict: says why: %s", r.err);
}

/*
 * What killed runs leave: a task cgroup whose run was killed by SIGKILL (its command
 * ended later), and an empty one of a daemon that died, are swept by the next run; a
 * cgroup a live owner holds (the test's flock, as a run holds its own) is not, even
 * empty.
 */
TEST(TIER_E2E, dead_runs_cgroups_are_swept)
{
	char dead[4200], held[4200], killed[4200], id[64], pidf[4200];
	struct tu_result r;
	pid_t run;
	int fd, st;

	snprintf(id, sizeof(id), "swept-killed-%d", (int)getpid());
	snprintf(killed, sizeof(killed), "%s/taskprobe/%s", tu_cgroup_root(), id);
	snprintf(pidf, sizeof(pidf), "%s", tu_tmp("started"));
	run = tu_spawn((char *[]){ (char *)tu_bin(), "run", "--quiet", "--no-db", "--id", id, "--",
				   "sh", "-c", "touch \"$0\"; sleep 1", pidf, NULL });
	for (int i = 0; i < 1000 && access(pidf, F_OK); i++)
		usleep(10000);
	ASSERT_OK(access(pidf, F_OK), "the run's command started");
	kill(run, SIGKILL);
	waitpid(run, &st, 0);
	ASSERT_TRUE(access(killed, F_OK) == 0, "the killed run left its cgroup");
	for (int i = 0; i < 300 && cgroup_populated(killed) != 0; i++)
		usleep(10000);
	ASSERT_EQ(cgroup_populated(killed), 0, "and its command ended");

	snprintf(dead, sizeof(dead), "%s/taskprobe/swept-dead-%d", tu_cgroup_root(), (int)getpid());
	snprintf(held, sizeof(held), "%s/taskprobe/swept-held-%d", tu_cgroup_root(), (int)getpid());
	ASSERT_OK(mkdir(dead, 0755), "an empty cgroup nobody holds");
	ASSERT_OK(mkdir(held, 0755), "an empty cgroup held");
	fd = open(held, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_OK(flock(fd, LOCK_SH), "held as a live run holds its own");

	tu_tp(&r, 60, "run", "--quiet", "--no-db", "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "the next run");
	ASSERT_TRUE(access(killed, F_OK) != 0, "the killed run's cgroup was swept");
	ASSERT_TRUE(access(dead, F_OK) != 0, "the dead daemon's cgroup was swept");
	ASSERT_TRUE(access(held, F_OK) == 0, "the held one stays");
	close(fd);
	rmdir(held);
	/* A hybrid host's v1 memory mirror of the killed run: swept only when a minute old. */
	if (!cgroup_v1_memory_make(id, killed, sizeof(killed)))
		rmdir(killed);
}

/*
 * The daemon's store full (a 2 MiB tmpfs of the test's own): a run through the daemon
 * runs, keeps its status, gets its record with the fault noted, and the daemon spools
 * it; once space returns, the daemon stores it by itself (it looks every 10 s), once,
 * and /metrics-style figures of the spool (doctor) go back to empty.
 */
TEST(TIER_E2E, a_full_disk_under_the_daemon_never_stops_the_job)
{
	const char *dir = tu_tmp("small"), *sock = tu_tmp("control.sock"), *json = tu_tmp("d.json");
	char db[4200];
	const struct json *rec, *faults;
	struct spool_stats sp = { 0 };
	struct tu_result r;
	pid_t d;

	if (!private_tmpfs(dir, "2m"))
		return;
	snprintf(db, sizeof(db), "%s/d.db", dir);
	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	fill(dir);
	tu_tp(&r, 60, "run", "--quiet", "--id", "dfull", "--json", json, "--", "sh", "-c",
	      "/bin/true; exit 6", NULL);
	ASSERT_EQ(r.status, 6, "the command ran through the daemon, its status kept");
	rec = tu_load_json(json);
	ASSERT_STREQ(json_str(json_get(rec, "collector"), "mode"), "daemon", "the daemon's task");
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 2, "its execs");
	faults = json_get(json_get(rec, "collector"), "faults");
	ASSERT_TRUE(json_len(faults) == 1 && strstr(json_at(faults, 0)->str, "disk full"),
		    "the record notes the fault");
	for (int i = 0; i < 100 && (spool__stat(db, &sp) || sp.files != 1); i++)
		usleep(50000);
	ASSERT_EQ(sp.files, 1, "the daemon spooled it");
	setenv("TASKPROBE_DB", db, 1);
	tu_tp(&r, 30, "doctor", NULL);
	CHECK(r.out && strstr(r.out, "1 task (") && strstr(r.out, "waiting to be stored"),
	      "doctor shows the spool: %s", r.out ? r.out : "");
	unsetenv("TASKPROBE_DB");

	unlink(fill(dir));
	for (int i = 0; i < 300 && (spool__stat(db, &sp) || sp.files); i++)
		usleep(100000);
	ASSERT_EQ(sp.files, 0, "the daemon stored what it spooled, by itself");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	ASSERT_EQ(json_len(tu_parse_json(r.out)), 1, "one task, once");
	tu_tp(&r, 30, "show", "dfull", "--db", db, "--json", NULL);
	ASSERT_EQ(tu_num(tu_parse_json(r.out), "exit_status"), 6, "its status");
	ASSERT_EQ(tu_metric(tu_parse_json(r.out), "proc.execs"), 2, "its execs");
	kill(d, SIGTERM);
	waitpid(d, NULL, 0);
	umount2("/run/taskprobe", MNT_DETACH);
	umount2(dir, MNT_DETACH);
}
