// SPDX-License-Identifier: GPL-2.0
/* End-to-end tests: stored tasks, queries across them, lost collectors, damaged databases. */
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/util.h"
#include "collector/cgroup.h"
#include "harness.h"
#include "testutil.h"

/* A task of n /bin/true on a worker of this instance type (a host label, from the env). */
static void run_n_true(const char *db, const char *id, const char *instance_type, int n)
{
	char script[128];
	struct tu_result r;

	snprintf(script, sizeof(script), "i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done",
		 n);
	setenv("TASKPROBE_INSTANCE_TYPE", instance_type, 1);
	tu_tp(&r, 60, "run", "--quiet", "--db", db, "--id", id, "--label", "job=build", "--", "sh",
	      "-c", script, NULL);
	unsetenv("TASKPROBE_INSTANCE_TYPE");
	CHECK(r.status == 0, "task %s: %d %s", id, r.status, r.err);
}

static const struct json *group(const struct json *res, const char *value)
{
	return tu_find(json_get(res, "groups"), "value", value);
}

TEST(TIER_E2E, count_groups_and_sums)
{
	char db[512];
	const struct json *res;
	struct tu_result r;

	snprintf(db, sizeof(db), "%s", tu_tmp("tp.db"));
	run_n_true(db, "t-1", "m5.large", 3);
	run_n_true(db, "t-2", "m5.large", 4);
	run_n_true(db, "t-3", "c5.xlarge", 5);
	/* Each task also execs its shell: 4 + 5 on m5.large, 6 on c5.xlarge. */
	tu_tp(&r, 30, "count", "proc.execs", "--db", db, "--by", "instance_type", "--json", NULL);
	ASSERT_EQ(r.status, 0, "count");
	res = tu_parse_json(r.out);
	if (!res)
		return;
	ASSERT_EQ(tu_num(group(res, "m5.large"), "tasks"), 2, "m5.large tasks");
	ASSERT_EQ(tu_num(group(res, "m5.large"), "sum"), 9, "m5.large execs");
	ASSERT_EQ(tu_num(group(res, "c5.xlarge"), "tasks"), 1, "c5.xlarge tasks");
	ASSERT_EQ(tu_num(group(res, "c5.xlarge"), "sum"), 6, "c5.xlarge execs");
	ASSERT_EQ(tu_num(res, "sum"), 15, "total");

	tu_tp(&r, 30, "count", "proc.execs", "--db", db, "--label", "instance_type=c5.xlarge",
	      "--json", NULL);
	res = tu_parse_json(r.out);
	ASSERT_EQ(tu_num(res, "sum"), 6, "--label filter");
	tu_tp(&r, 30, "count", "proc.execs", "--db", db, "--by", "host", "--host", "no-such-*",
	      "--json", NULL);
	res = tu_parse_json(r.out);
	ASSERT_EQ(tu_num(res, "tasks"), 0, "--host glob that matches nothing");
	tu_tp(&r, 30, "count", "proc.execs", "--db", db, "--since", "1h", "--json", NULL);
	res = tu_parse_json(r.out);
	ASSERT_EQ(tu_num(res, "tasks"), 3, "--since 1h");

	tu_tp(&r, 30, "count", "no.such.metric", "--db", db, NULL);
	ASSERT_EQ(r.status, 1, "unknown metric");
	ASSERT_TRUE(!strncmp(r.err, "taskprobe: ", 11), "one error line");
	tu_tp(&r, 30, "count", "proc.execs", "--db", db, "--since", "soon", NULL);
	ASSERT_EQ(r.status, 2, "bad duration");
	tu_tp(&r, 30, "count", "proc.execs", "--db", db, "--host", "worker-[ab", NULL);
	ASSERT_EQ(r.status, 2, "an unclosed set in --host");
	ASSERT_STREQ(r.err,
		     "taskprobe: count: invalid --host 'worker-[ab': a '[' without its ']'\n",
		     "--host: one line naming the glob");
	tu_tp(&r, 30, "show", "no-such-task", "--db", db, NULL);
	ASSERT_EQ(r.status, 1, "unknown task");

	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	res = tu_parse_json(r.out);
	ASSERT_EQ(json_len(res), 3, "list");
	ASSERT_STREQ(json_get(json_at(res, 0), "id")->str, "t-3", "newest first");
	{
		struct utsname u;

		uname(&u);
		ASSERT_STREQ(json_str(json_at(res, 0), "host"), u.nodename,
			     "list: the task's host");
	}
	tu_tp(&r, 30, "show", "t-2", "--db", db, NULL);
	ASSERT_TRUE(strstr(r.out, "4 execs") || strstr(r.out, "5 execs"),
		    "show prints the summary");
	ASSERT_EQ(tu_count_long_lines(r.out, 80), 0, "show fits 80 columns");
}

static const char *status_of(const struct json *list, const char *id)
{
	const struct json *t = tu_find(list, "id", id);

	return t ? json_get(t, "status")->str : "(absent)";
}

TEST(TIER_E2E, dead_collector_shows_lost_live_one_does_not)
{
	char db[512], lost_cg[4096], live_cg[4096];
	char *lost_args[] = { (char *)tu_bin(), "run", "--db", db,	"--id", "e2e-lost",
			      "--interval",	"100", "--",   "sleep", "60",	NULL };
	char *live_args[] = { (char *)tu_bin(), "run", "--db",	db,   "--id",
			      "e2e-live",	"--",  "sleep", "60", NULL };
	const struct json *list, *series;
	struct tu_result r;
	pid_t lost, live;
	int st;

	snprintf(db, sizeof(db), "%s", tu_tmp("tp.db"));
	snprintf(lost_cg, sizeof(lost_cg), "%s/taskprobe/e2e-lost", tu_cgroup_root());
	snprintf(live_cg, sizeof(live_cg), "%s/taskprobe/e2e-live", tu_cgroup_root());
	lost = tu_spawn(lost_args);
	live = tu_spawn(live_args);
	for (int i = 0;
	     i < 500 && (cgroup_populated(lost_cg) <= 0 || cgroup_populated(live_cg) <= 0); i++)
		usleep(10000);
	/* Past one flush of the series (every 5 s), then the collector dies. */
	sleep(6);
	kill(lost, SIGKILL);
	waitpid(lost, &st, 0);
	/* The dead collector's socket: ours to remove (the next run would sweep it too). */
	{
		char sock[128];

		snprintf(sock, sizeof(sock), "/run/taskprobe/run-%d.sock", (int)lost);
		ASSERT_OK(access(sock, F_OK) ? -errno : 0, "the dead collector left its socket");
		unlink(sock);
	}
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	list = tu_parse_json(r.out);
	ASSERT_STREQ(status_of(list, "e2e-lost"), "lost", "the killed collector's task");
	ASSERT_STREQ(status_of(list, "e2e-live"), "running", "the live one's");
	tu_tp(&r, 30, "series", "e2e-lost", "--db", db, "--points", "4", "--json", NULL);
	series = tu_parse_json(r.out);
	ASSERT_EQ(json_len(json_get(series, "buckets")), 4, "--points 4 gives 4 buckets");
	ASSERT_GE(tu_num(series, "samples"), 40, "the series flushed before the kill is kept");

	/* The live task ends normally; its leftover-free end is stored. */
	kill(live, SIGTERM);
	ASSERT_TRUE(waitpid(live, &st, 0) == live && WIFEXITED(st) && WEXITSTATUS(st) == 143,
		    "live task ends on SIGTERM");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	list = tu_parse_json(r.out);
	ASSERT_STREQ(status_of(list, "e2e-live"), "signaled", "stored end");
	ASSERT_STREQ(status_of(list, "e2e-lost"), "lost", "still lost");
	/* The orphaned task's processes are ours to end: through its cgroup. */
	cgroup_kill(lost_cg);
	for (int i = 0; i < 200 && cgroup_populated(lost_cg) > 0; i++)
		usleep(10000);
	ASSERT_OK(cgroup_remove_task(lost_cg), "remove the orphaned task's cgroup");
}

static char *file_bytes(const char *path, size_t *len)
{
	char *buf = malloc(1 << 20);
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, 1 << 20) : -1;

	if (fd >= 0)
		close(fd);
	*len = n > 0 ? (size_t)n : 0;
	return buf;
}

static void check_refused_unchanged(const char *db, const char *what, const char *expect)
{
	size_t before_len, after_len;
	char *before = file_bytes(db, &before_len), *after;
	struct tu_result r;

	tu_tp(&r, 30, "list", "--db", db, NULL);
	CHECK(r.status == 1, "%s: list exit %d, expected 1", what, r.status);
	CHECK(!strncmp(r.err, "taskprobe: ", 11) && strstr(r.err, expect), "%s: error '%s'", what,
	      r.err);
	CHECK(strchr(r.err, '\n') && !strchr(r.err, '\n')[1], "%s: one line", what);
	/* The collector never stops the job: the command runs, the record is spooled. */
	tu_tp(&r, 30, "run", "--quiet", "--db", db, "--", "sh", "-c", "exit 9", NULL);
	CHECK(r.status == 9, "%s: run exit %d, expected the command's 9", what, r.status);
	CHECK(!strncmp(r.err, "taskprobe: warning: the store cannot be used", 44) &&
		      strstr(r.err, expect) && strchr(r.err, '\n') && !strchr(r.err, '\n')[1],
	      "%s: one warning line: '%s'", what, r.err);
	after = file_bytes(db, &after_len);
	CHECK(before_len == after_len && !memcmp(before, after, before_len), "%s: file changed",
	      what);
	free(before);
	free(after);
}

TEST(TIER_E2E, newer_or_corrupt_database_refused_untouched)
{
	char db[512], junk[512];
	struct tu_result r;
	sqlite3 *h;
	int fd;

	snprintf(db, sizeof(db), "%s", tu_tmp("tp.db"));
	tu_tp(&r, 30, "run", "--quiet", "--db", db, "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "a first task");
	/* Checkpoint so the whole database is in the one file compared below. */
	if (ASSERT_EQ(sqlite3_open(db, &h), SQLITE_OK, "open")) {
		sqlite3_exec(h,
			     "PRAGMA user_version = 99; PRAGMA wal_checkpoint(TRUNCATE);"
			     "PRAGMA journal_mode = DELETE;",
			     NULL, NULL, NULL);
		sqlite3_close(h);
	}
	check_refused_unchanged(db, "newer schema", "newer");

	snprintf(junk, sizeof(junk), "%s", tu_tmp("junk.db"));
	fd = open(junk, O_CREAT | O_WRONLY, 0644);
	for (int i = 0; i < 64 && fd >= 0; i++)
		if (write(fd, "this is not a database, just text that fills pages. ", 52) < 0)
			break;
	if (fd >= 0)
		close(fd);
	check_refused_unchanged(junk, "corrupt file", "corrupt");
}

TEST(TIER_E2E, signaled_task_stored)
{
	char db[512];
	const struct json *rec;
	struct tu_result r;

	snprintf(db, sizeof(db), "%s", tu_tmp("tp.db"));
	tu_tp(&r, 30, "run", "--quiet", "--db", db, "--id", "killed", "--", "sh", "-c",
	      "/bin/true; kill -9 $$", NULL);
	ASSERT_EQ(r.status, 137, "exit status");
	tu_tp(&r, 30, "show", "killed", "--db", db, "--json", NULL);
	rec = tu_parse_json(r.out);
	ASSERT_STREQ(json_get(rec, "status")->str, "signaled", "status");
	ASSERT_EQ(tu_num(rec, "exit_status"), 137, "exit_status");
	ASSERT_EQ(tu_num(tu_program(rec, "/bin/true"), "execs"), 1, "its program table");
	tu_tp(&r, 30, "hist", "killed", "io.latency", "--db", db, NULL);
	ASSERT_EQ(r.status, 0, "hist");
	ASSERT_TRUE(strstr(r.out, "io.latency") != NULL, "hist prints the histogram");
	tu_tp(&r, 30, "hist", "killed", "runq", "--db", db, NULL);
	ASSERT_EQ(r.status, 1, "a histogram not collected");
	ASSERT_TRUE(strstr(r.err, "collect = all") != NULL, "says how to collect it");
}

TEST(TIER_E2E, bad_config_line_names_file_and_line)
{
	const char *conf = tu_tmp("taskprobe.conf");
	struct tu_result r;
	char want[600];

	tu_write_file(conf, "retain_days = 7\nretain_days = soon\n");
	tu_tp(&r, 30, "run", "--config", conf, "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 125, "exit status");
	snprintf(want, sizeof(want), "taskprobe: %s:2: retain_days", conf);
	ASSERT_TRUE(!strncmp(r.err, want, strlen(want)), "names the file and line 2");
}

TEST(TIER_E2E, locked_database_is_one_warning_and_a_spooled_record)
{
	char db[512];
	struct tu_result r;
	sqlite3 *h;

	snprintf(db, sizeof(db), "%s", tu_tmp("tp.db"));
	tu_tp(&r, 30, "run", "--quiet", "--db", db, "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "a first task");
	if (!ASSERT_EQ(sqlite3_open(db, &h), SQLITE_OK, "open"))
		return;
	ASSERT_EQ(sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK, "hold the lock");
	tu_tp(&r, 30, "run", "--quiet", "--db", db, "--id", "while-locked", "--", "sh", "-c",
	      "/bin/true; exit 2", NULL);
	ASSERT_EQ(r.status, 2, "run against a locked database: its command's status");
	ASSERT_TRUE(strstr(r.err, "warning") && strstr(r.err, "locked"), "says it is locked");
	ASSERT_TRUE(strchr(r.err, '\n') && !strchr(r.err, '\n')[1], "in one line");
	/* Readers are not blocked by a writer (WAL). */
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	ASSERT_EQ(r.status, 0, "list while a writer holds the lock");
	sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(h);
	/* The lock is gone: the next run stores the spooled task, once. */
	tu_tp(&r, 30, "run", "--quiet", "--db", db, "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "a run once the lock is gone");
	tu_tp(&r, 30, "show", "while-locked", "--db", db, "--json", NULL);
	ASSERT_EQ(tu_num(tu_parse_json(r.out), "exit_status"), 2, "the spooled task, stored");
	ASSERT_EQ(tu_metric(tu_parse_json(r.out), "proc.execs"), 2, "with its execs");
	tu_tp(&r, 30, "list", "--db", db, "--json", NULL);
	ASSERT_EQ(json_len(tu_parse_json(r.out)), 3, "three tasks, none doubled");
	tu_tp(&r, 30, "show", "nope", "--db", db, "--json", NULL);
	ASSERT_STREQ(r.out, "{\"error\": \"no stored task 'nope'; 'taskprobe list' shows them\"}\n",
		     "--json errors are JSON on stdout");
}

static unsigned file_mode(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_mode & 07777;
}

static gid_t file_gid(const char *path)
{
	struct stat st;

	return stat(path, &st) ? (gid_t)-1 : st.st_gid;
}

/* The database's directory, file, -wal, -shm and lock directory have these modes. */
static void check_modes(const char *dir, const char *db, unsigned dmode, unsigned fmode)
{
	static const char *const sfx[] = { "", "-wal", "-shm" };
	char f[600];

	CHECK(file_mode(dir) == dmode, "%s: mode %o, expected %o", dir, file_mode(dir), dmode);
	for (size_t i = 0; i < ARRAY_SIZE(sfx); i++) {
		snprintf(f, sizeof(f), "%s%s", db, sfx[i]);
		CHECK(file_mode(f) == fmode, "%s: mode %o, expected %o", f, file_mode(f), fmode);
	}
	snprintf(f, sizeof(f), "%s.locks", db);
	CHECK(file_mode(f) == dmode, "%s: mode %o, expected %o", f, file_mode(f), dmode);
}

/* Only root, or the configured db_group, reads the tasks' command lines (docs/storage.md). */
TEST(TIER_E2E, database_is_root_only_or_its_group)
{
	char dir[512], db[600], gdir[512], gdb[600], conf[512];
	char *list[] = { (char *)tu_bin(), "list", "--db", db, NULL };
	char *glist[] = { (char *)tu_bin(), "list", "--db", gdb, NULL };
	char *cat[] = { "cat", db, NULL };
	struct tu_result r;

	/* Nobody may pass through the test's own directory, not into the db's. */
	chmod(tu_tmp(""), 0711);
	snprintf(dir, sizeof(dir), "%s", tu_tmp("private"));
	snprintf(db, sizeof(db), "%s/tp.db", dir);
	tu_tp(&r, 30, "run", "--quiet", "--db", db, "--id", "secret-cmd", "--", "/bin/true",
	      "hunter2", NULL);
	ASSERT_EQ(r.status, 0, "a task");
	check_modes(dir, db, 0700, 0600);
	tu_run_as(65534, 65534, cat, &r, 10);
	ASSERT_TRUE(r.status != 0 && !strstr(r.out, "hunter2"), "nobody cannot read the file");
	tu_run_as(65534, 65534, list, &r, 10);
	ASSERT_EQ(r.status, 1, "list as nobody fails");
	ASSERT_TRUE(strstr(r.err, "taskprobe: cannot read DB: permission denied (") == r.err,
		    "and says why, in one line");
	/* A database an older taskprobe made 0644 is closed up by the next run. */
	chmod(dir, 0755);
	chmod(db, 0644);
	tu_tp(&r, 30, "run", "--quiet", "--db", db, "--", "/bin/true", NULL);
	ASSERT_EQ(file_mode(db), 0600, "an existing 0644 database becomes 0600");

	/* db_group: that group reads (nobody's own group here), nobody else. */
	snprintf(conf, sizeof(conf), "%s", tu_tmp("tp.conf"));
	tu_write_file(conf, "db_group = nogroup\n");
	snprintf(gdir, sizeof(gdir), "%s", tu_tmp("shared"));
	snprintf(gdb, sizeof(gdb), "%s/tp.db", gdir);
	tu_tp(&r, 30, "run", "--quiet", "--config", conf, "--db", gdb, "--id", "shared-1", "--",
	      "/bin/true", NULL);
	ASSERT_EQ(r.status, 0, "a task with db_group");
	check_modes(gdir, gdb, 0750, 0640);
	ASSERT_EQ(file_gid(gdb), 65534, "owned by the group");
	tu_run_as(65534, 65534, glist, &r, 10);
	ASSERT_EQ(r.status, 0, "the group lists it");
	ASSERT_TRUE(strstr(r.out, "shared-1 ") != NULL, "and sees the task");
	tu_run_as(65533, 65533, glist, &r, 10);
	ASSERT_EQ(r.status, 1, "another user does not");
	ASSERT_TRUE(strstr(r.err, "permission denied") != NULL, "permission denied");
	tu_write_file(conf, "\ndb_group = no-such-group\n");
	tu_tp(&r, 30, "run", "--quiet", "--config", conf, "--db", gdb, "--", "true", NULL);
	ASSERT_EQ(r.status, 125, "an unknown group is a config error");
	ASSERT_TRUE(strstr(r.err, "tp.conf:2: db_group takes the name of an existing group"),
		    "with the file and line");
}

/* Copies a database file whole (its WAL checkpointed into it beforehand). */
static bool copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n = 0;

	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return in >= 0 && out >= 0 && n == 0;
}

/*
 * A database damaged anywhere is an error, never an empty answer (docs/storage.md). 8 KiB of
 * garbage over each page in turn: list and count either fail with the one-line
 * corrupt-database error, or answer exactly what the undamaged database answers
 * (the damage hit pages they do not read).
 */
TEST(TIER_E2E, damaged_database_is_an_error_never_empty)
{
	char db[512], bad[512], wal[600], shm[600], want_list[4096], want_count[4096];
	char *list[] = { (char *)tu_bin(), "list", "--db", bad, "--limit", "1000", "--json", NULL };
	char *count[] = { (char *)tu_bin(), "count", "proc.execs", "--db", bad, "--json", NULL };
	int tasks = 10, pages, detected = 0, listed_all = 0;
	unsigned char junk[8192];
	struct tu_result r;
	struct stat st;
	sqlite3 *h;

	snprintf(db, sizeof(db), "%s", tu_tmp("tp.db"));
	snprintf(bad, sizeof(bad), "%s", tu_tmp("bad.db"));
	snprintf(wal, sizeof(wal), "%s-wal", bad);
	snprintf(shm, sizeof(shm), "%s-shm", bad);
	for (int i = 0; i < tasks; i++) {
		tu_tp(&r, 30, "run", "--quiet", "--db", db, "--", "sh", "-c", "/bin/true", NULL);
		ASSERT_EQ(r.status, 0, "a task");
	}
	if (!ASSERT_EQ(sqlite3_open(db, &h), SQLITE_OK, "open"))
		return;
	sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	sqlite3_close(h);
	if (!ASSERT_TRUE(copy_file(db, bad), "copy") || stat(bad, &st))
		return;
	tu_run(list, &r, 30);
	snprintf(want_list, sizeof(want_list), "%s", r.out);
	ASSERT_EQ(json_len(tu_parse_json(r.out)), tasks, "undamaged: every task listed");
	tu_run(count, &r, 30);
	snprintf(want_count, sizeof(want_count), "%s", r.out);
	ASSERT_EQ(tu_num(tu_parse_json(r.out), "sum"), 2 * tasks, "undamaged: sh and true each");
	pages = (int)(st.st_size / 4096);
	ASSERT_GE(pages, 8, "a database of several pages");
	srand(42);
	for (int p = 0; p < pages; p++) {
		int fd;

		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (unsigned char)rand();
		unlink(wal);
		unlink(shm);
		if (!copy_file(db, bad) || (fd = open(bad, O_WRONLY)) < 0)
			return;
		if (pwrite(fd, junk, sizeof(junk), (off_t)p * 4096) != (ssize_t)sizeof(junk))
			CHECK(false, "damage page %d", p);
		close(fd);
		for (int c = 0; c < 2; c++) {
			const char *want = c ? want_count : want_list;

			tu_run(c ? count : list, &r, 30);
			if (r.status == 1 &&
			    strstr(r.err, "is corrupt or not a taskprobe database") &&
			    !strchr(r.err, '\n')[1]) {
				detected++;
				continue;
			}
			CHECK(r.status == 0 && !strcmp(r.out, want),
			      "page %d damaged: %s answered %d, '%.200s' '%.200s'", p,
			      c ? "count" : "list", r.status, r.out, r.err);
			listed_all += !c;
		}
	}
	fprintf(stderr, "    %d pages damaged: %d answers were the corrupt error, %d lists whole\n",
		pages, detected, listed_all);
	ASSERT_GE(detected, pages / 2, "most damage is seen");
}
