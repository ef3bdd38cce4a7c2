// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end tests: load the host side must carry. An exec storm as fast as this
 * machine goes, a ring buffer overflow forced by a tiny ring, and two hundred tasks
 * through one daemon: every count exact against what the test made.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "harness.h"
#include "testutil.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A shell line that runs loops chains of execloop N at once and waits for them. */
static void storm_script(char *buf, size_t len, int loops, long n)
{
	snprintf(buf, len, "i=0; while [ $i -lt %d ]; do '%s' %ld & i=$((i+1)); done; wait", loops,
		 getenv("TASKPROBE_EXECLOOP"), n);
}

/*
 * As many execs as this machine makes in about 10 s, in one task (2 chains a CPU of
 * execloop, an exec of itself with no fork): counted exactly, nothing lost. The size
 * is set from a run of the same storm without taskprobe; the rate is printed.
 */
TEST(TIER_E2E, an_exec_storm_is_counted_exactly)
{
	const char *json = tu_tmp("storm.json");
	int loops = 2 * (int)sysconf(_SC_NPROCESSORS_ONLN);
	const struct json *rec;
	struct tu_result r;
	char script[8192];
	double t0, rate;
	long n = 2000;

	if (!ASSERT_TRUE(getenv("TASKPROBE_EXECLOOP") != NULL, "TASKPROBE_EXECLOOP (make test)"))
		return;
	storm_script(script, sizeof(script), loops, n);
	t0 = now_s();
	tu_run((char *[]){ "sh", "-c", script, NULL }, &r, 60);
	ASSERT_EQ(r.status, 0, "the storm alone");
	rate = (double)loops * (double)n / (now_s() - t0);
	n = (long)(rate * 10.0 / loops);
	n = n < 2000 ? 2000 : n > 400000 ? 400000 : n;
	storm_script(script, sizeof(script), loops, n);
	t0 = now_s();
	tu_tp(&r, 120, "run", "--quiet", "--no-db", "--json", json, "--", "sh", "-c", script, NULL);
	fprintf(stderr, "    %d chains of %ld execs: %.0f execs/s alone, %.0f in the task\n", loops,
		n, rate, (double)loops * (double)(n + 1) / (now_s() - t0));
	ASSERT_EQ(r.status, 0, "the storm in a task");
	rec = tu_load_json(json);
	/* sh, then each chain's first exec and its n more */
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 1 + (double)loops * (double)(n + 1),
		  "every exec counted");
	ASSERT_EQ(tu_metric(rec, "lost_events"), 0, "no event lost for the task");
	ASSERT_EQ(tu_num(json_get(rec, "collector"), "lost_events_total"), 0,
		  "none lost by the collector");
}

/*
 * A ring buffer of one page (TASKPROBE_RINGBUF_BYTES, the test's knob) under four
 * chains of 1000 execs at once: it overflows, the loss is counted for the task and
 * said in the summary, and the counts kept in maps (execs, forks, exits) stay exact.
 */
TEST(TIER_E2E, a_forced_overflow_is_counted_and_the_counts_stay_exact)
{
	const char *json = tu_tmp("overflow.json");
	const struct json *rec;
	struct tu_result r;
	char page[32], script[8192];

	if (!ASSERT_TRUE(getenv("TASKPROBE_EXECLOOP") != NULL, "TASKPROBE_EXECLOOP (make test)"))
		return;
	storm_script(script, sizeof(script), 4, 1000);
	snprintf(page, sizeof(page), "%ld", sysconf(_SC_PAGESIZE));
	setenv("TASKPROBE_RINGBUF_BYTES", page, 1);
	tu_tp(&r, 120, "run", "--no-db", "--json", json, "--", "sh", "-c", script, NULL);
	unsetenv("TASKPROBE_RINGBUF_BYTES");
	ASSERT_EQ(r.status, 0, "the task");
	rec = tu_load_json(json);
	/* sh and the four chains: 1 + 4 * 1001 execs, 5 processes */
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 4005, "execs exact despite the overflow");
	ASSERT_EQ(tu_metric(rec, "proc.forks"), 5, "processes started, exact");
	ASSERT_EQ(tu_metric(rec, "proc.exits"), 5, "exits exact");
	ASSERT_GE(tu_metric(rec, "lost_events"), 1, "the overflow is counted for the task");
	ASSERT_GE(tu_num(json_get(rec, "collector"), "lost_events_total"),
		  tu_metric(rec, "lost_events"), "and by the collector");
	CHECK(r.err && strstr(r.err, "events lost (ring buffer full)"), "the summary says so: %s",
	      r.err ? r.err : "");
}

/* VmHWM (kB) and utime + stime (s) of pid, from /proc. */
static void usage_of(pid_t pid, long *hwm_kb, double *cpu_s)
{
	char path[64], buf[4096], *p;
	unsigned long ut = 0, st = 0;

	*hwm_kb = -1;
	*cpu_s = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (tp_read_file(path, buf, sizeof(buf)) > 0 && (p = strstr(buf, "VmHWM:")))
		*hwm_kb = atol(p + 6);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (tp_read_file(path, buf, sizeof(buf)) > 0 && (p = strrchr(buf, ')')) &&
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
		*cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/*
 * 200 runs through one daemon, 40 at a time: each exits with its own status, its
 * record counts exactly the execs it made (1 to 5 /bin/true and its sh), and the
 * daemon stores all 200, once each. The daemon's peak RSS and CPU are printed.
 */
TEST(TIER_E2E, two_hundred_tasks_through_one_daemon_forty_at_a_time)
{
	enum { TASKS = 200, WAVE = 40 };
	static char id[TASKS][32], json[TASKS][4200], script[TASKS][128], db[4200], sock[4200];
	int bad_status = 0, bad_execs = 0;
	double t0 = now_s(), cpu;
	pid_t d, pids[WAVE];
	struct tu_result r;
	long hwm;

	/* tu_tmp's buffers are reused: the two hundred paths below would overwrite these. */
	snprintf(db, sizeof(db), "%s", tu_tmp("d.db"));
	snprintf(sock, sizeof(sock), "%s", tu_tmp("control.sock"));
	d = tu_daemon(db, sock);
	if (!ASSERT_TRUE(d > 0, "the daemon listens"))
		return;
	for (int w = 0; w < TASKS / WAVE; w++) {
		for (int k = 0; k < WAVE; k++) {
			int i = w * WAVE + k;

			snprintf(id[i], sizeof(id[i]), "wave-%03d", i);
			snprintf(json[i], sizeof(json[i]), "%s", tu_tmp(id[i]));
			snprintf(
				script[i], sizeof(script[i]),
				"i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done; exit %d",
				1 + i % 5, i % 3);
			pids[k] = tu_spawn_fds((char *[]){ (char *)tu_bin(), "run", "--id", id[i],
							   "--quiet", "--json", json[i], "--", "sh",
							   "-c", script[i], NULL },
					       -1, STDERR_FILENO);
		}
		for (int k = 0; k < WAVE; k++) {
			int i = w * WAVE + k, st = -1;

			if (pids[k] > 0 && waitpid(pids[k], &st, 0) == pids[k] && WIFEXITED(st))
				st = WEXITSTATUS(st);
			bad_status += st != i % 3;
			bad_execs += tu_metric(tu_load_json(json[i]), "proc.execs") != 2 + i % 5;
		}
	}
	usage_of(d, &hwm, &cpu);
	fprintf(stderr, "    200 tasks in %.1f s; the daemon: peak RSS %ld KiB, CPU %.2f s\n",
		now_s() - t0, hwm, cpu);
	ASSERT_EQ(bad_status, 0, "runs whose exit status was not their command's");
	ASSERT_EQ(bad_execs, 0, "records whose execs were not those their task made");
	tu_tp(&r, 30, "list", "--db", db, "--limit", "1000", "--json", NULL);
	CHECK(json_len(tu_parse_json(r.out)) == TASKS, "the daemon stored each once: %zu (%s)",
	      json_len(tu_parse_json(r.out)), r.err ? r.err : "");
	kill(d, SIGTERM);
	waitpid(d, NULL, 0);
}
