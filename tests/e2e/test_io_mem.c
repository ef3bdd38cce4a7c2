// SPDX-License-Identifier: GPL-2.0
/* End-to-end tests: disk bytes charged to their causer, and peak memory, against truth. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <errno.h>

#include "base/util.h"
#include "harness.h"
#include "testutil.h"

#define MIB (1024.0 * 1024.0)

static const struct json *run_task(const char *name, const char *script)
{
	const char *json = tu_tmp(name);
	struct tu_result r;

	tu_tp(&r, 120, "run", "--quiet", "--json", json, "--", "sh", "-c", script, NULL);
	if (!CHECK(r.status == 0, "%s: status %d: %s", name, r.status, r.err))
		return NULL;
	return tu_load_json(json);
}

TEST(TIER_E2E, direct_io_block_bytes_exact)
{
	char file[512], script[1024];
	const struct json *w, *r;

	snprintf(file, sizeof(file), "%s", tu_tmp("data"));
	snprintf(script, sizeof(script),
		 "dd if=/dev/zero of=%s bs=1M count=64 oflag=direct status=none", file);
	w = run_task("write.json", script);
	snprintf(script, sizeof(script), "dd if=%s of=/dev/null bs=1M iflag=direct status=none",
		 file);
	r = run_task("read.json", script);
	if (!w || !r)
		return;
	ASSERT_NEAR(tu_metric(w, "io.write_bytes"), 64 * MIB, 0.02, "direct write bytes");
	/* Block requests, counted at submission: exactly dd's, and every byte read. */
	ASSERT_EQ(tu_metric(w, "io.blk_write_bytes"), 64 * MIB, "block-layer write bytes");
	ASSERT_EQ(tu_metric(r, "io.blk_read_bytes"), tu_metric(r, "io.read_bytes"),
		  "block-layer read bytes = the task's ioac");
	ASSERT_NEAR(tu_metric(r, "io.blk_read_bytes"), 64 * MIB, 0.02, "block-layer read bytes");
	ASSERT_GE(tu_metric(w, "io.write_ops"), 64, "write requests (at most 1 MiB each)");
	ASSERT_GE(tu_metric(r, "io.read_ops"), 64, "read requests");
	/* A completion may never reach the program (docs/ARCHITECTURE.md): latency only. */
	ASSERT_LE(tu_num(json_get(json_get(w, "histograms"), "io.latency"), "count"),
		  tu_metric(w, "io.write_ops") + tu_metric(w, "io.read_ops"),
		  "at most one latency per request");
	ASSERT_GE(tu_num(json_get(json_get(w, "histograms"), "io.latency"), "count"),
		  tu_metric(w, "io.write_ops") / 2, "latency samples");
}

TEST(TIER_E2E, buffered_write_charged_to_writer)
{
	char file[512], script[1024], idle_json[512], busy_json[512];
	const struct json *busy, *idle;
	pid_t a, b;
	int st;

	snprintf(file, sizeof(file), "%s", tu_tmp("data"));
	snprintf(busy_json, sizeof(busy_json), "%s", tu_tmp("busy.json"));
	snprintf(idle_json, sizeof(idle_json), "%s", tu_tmp("idle.json"));
	/* Buffered: the flusher may write the pages back; fsync makes it this task's. */
	snprintf(script, sizeof(script),
		 "dd if=/dev/zero of=%s bs=1M count=64 conv=fsync status=none", file);
	a = fork();
	if (a == 0) {
		execl(tu_bin(), tu_bin(), "run", "--quiet", "--json", busy_json, "--", "sh", "-c",
		      script, (char *)NULL);
		_exit(127);
	}
	b = fork();
	if (b == 0) {
		execl(tu_bin(), tu_bin(), "run", "--quiet", "--json", idle_json, "--", "sleep", "1",
		      (char *)NULL);
		_exit(127);
	}
	tu_track_pid(a);
	tu_track_pid(b);
	ASSERT_TRUE(waitpid(a, &st, 0) == a && WIFEXITED(st) && !WEXITSTATUS(st), "writer");
	ASSERT_TRUE(waitpid(b, &st, 0) == b && WIFEXITED(st) && !WEXITSTATUS(st), "idle");
	busy = tu_load_json(busy_json);
	idle = tu_load_json(idle_json);
	if (!busy || !idle)
		return;
	ASSERT_NEAR(tu_metric(busy, "io.write_bytes"), 64 * MIB, 0.05, "buffered write bytes");
	ASSERT_NEAR(tu_metric(busy, "io.wchar"), 64 * MIB, 0.01, "write() bytes");
	ASSERT_EQ(tu_metric(idle, "io.write_bytes"), 0, "the idle task wrote nothing");
	ASSERT_EQ(tu_metric(idle, "io.write_ops"), 0, "the idle task's write requests");
	ASSERT_EQ(tu_metric(idle, "io.blk_write_bytes"), 0, "the idle task's block writes");
}

TEST(TIER_E2E, peak_memory_within_5_percent)
{
	const char *json = tu_tmp("task.json"), *truth = tu_tmp("truth");
	const struct json *rec;
	struct tu_result r;
	double base = 0, after = 0, peak;
	FILE *f;

	tu_tp(&r, 60, "run", "--quiet", "--json", json, "--", tu_helper("memtouch"), "300", truth,
	      NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	f = fopen(truth, "r");
	if (!rec || !CHECK(f && fscanf(f, "%lf %lf", &base, &after) == 2, "truth file"))
		goto out;
	peak = tu_metric(rec, "mem.peak_bytes");
	ASSERT_GE(peak, 300 * MIB, "peak covers the 300 MiB touched");
	ASSERT_NEAR(peak, 300 * MIB + base, 0.05, "peak vs 300 MiB + baseline RSS");
	ASSERT_NEAR(peak, after, 0.05, "peak vs the RSS the process saw itself");
	ASSERT_EQ(tu_metric(rec, "proc.oom_kills"), 0, "no OOM kill");
out:
	if (f)
		fclose(f);
}

/*
 * A parent that touched 64 MiB and four children that share its pages: the peak is
 * the kernel's charge, not the pages counted once per process. Ground truth: the
 * same workload in a v1 memory cgroup of the test's own (hybrid hosts), or the
 * touched size where cgroup2 has memory.peak.
 */
TEST(TIER_E2E, peak_memory_of_forked_workers_is_the_kernels_charge)
{
	static const char py[] = "import os, time\n"
				 "b = bytearray(64 << 20)\n"
				 "for i in range(0, len(b), 4096): b[i] = 1\n"
				 "kids = [os.fork() for _ in range(4)]\n"
				 "if 0 in kids:\n"
				 "    time.sleep(0.5)\n"
				 "    os._exit(0)\n"
				 "for k in kids: os.waitpid(k, 0)\n";
	const char *json = tu_tmp("task.json"), *pyf = tu_tmp("fork.py");
	char own[4096], cg[4096], script[8192], buf[64];
	const struct json *rec, *src;
	bool v1 = !access("/sys/fs/cgroup/memory/memory.max_usage_in_bytes", R_OK);
	struct tu_result r;
	double truth = 64 * MIB;

	tu_write_file(pyf, py);
	/* Once first: page cache read in is charged to whoever reads it first. */
	tu_run((char *[]){ "/usr/bin/python3", (char *)pyf, NULL }, &r, 60);
	if (v1) {
		char *line, *save;

		tp_read_file("/proc/self/cgroup", own, sizeof(own));
		for (line = strtok_r(own, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (strstr(line, ":memory:"))
				break;
		if (!ASSERT_TRUE(line, "our v1 memory cgroup"))
			return;
		snprintf(cg, sizeof(cg), "/sys/fs/cgroup/memory%s/taskprobe-test-mem-%d",
			 strstr(line, ":memory:") + 8, (int)getpid());
		if (!ASSERT_OK(mkdir(cg, 0755) ? -errno : 0, "a v1 memory cgroup for the truth"))
			return;
		snprintf(script, sizeof(script),
			 "echo $$ > %s/cgroup.procs && exec /usr/bin/python3 %s", cg, pyf);
		tu_run((char *[]){ "sh", "-c", script, NULL }, &r, 60);
		snprintf(script, sizeof(script), "%s/memory.max_usage_in_bytes", cg);
		truth = tp_read_file(script, buf, sizeof(buf)) > 0 ? atof(buf) : 0;
		rmdir(cg);
		ASSERT_EQ(r.status, 0, "the truth run");
	}
	tu_tp(&r, 60, "run", "--json", json, "--", "/usr/bin/python3", pyf, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	src = json_get(json_get(rec, "sources"), "mem.peak_bytes");
	ASSERT_STREQ(src ? src->str : NULL,
		     v1 ? "cgroup1:memory.max_usage_in_bytes" : "cgroup:memory.peak",
		     "the kernel's charge is the source");
	ASSERT_NEAR(tu_metric(rec, "mem.peak_bytes"), truth, 0.05,
		    "peak vs the charge of the same workload");
	ASSERT_GE(tu_metric(rec, "mem.peak_bytes"), 64 * MIB, "at least what was touched");
	ASSERT_TRUE(
		strstr(r.err, v1 ? "(cgroup1:memory.max_usage_in_bytes)" : "(cgroup:memory.peak)"),
		"the summary names the source");
}

TEST(TIER_E2E, oom_kill_is_counted)
{
	const char *json = tu_tmp("task.json");
	char script[2048], v1[512];
	const struct json *rec;
	struct tu_result r;

	/* A memory limit the test owns: v1 memory cgroup here, memory.max on unified hosts. */
	snprintf(v1, sizeof(v1), "/sys/fs/cgroup/memory/taskprobe-test-oom-%d", (int)getpid());
	snprintf(script, sizeof(script),
		 "if [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then"
		 "  mkdir %s && echo 64M > %s/memory.limit_in_bytes && echo $$ > %s/cgroup.procs;"
		 " else"
		 "  echo 64M > %s$(sed -n 's/^0:://p' /proc/self/cgroup)/memory.max;"
		 " fi || exit 90;"
		 " %s 256 /dev/null; rc=$?;"
		 " if [ -d %s ]; then echo $$ > /sys/fs/cgroup/memory/cgroup.procs; fi;"
		 " [ $rc -eq 137 ]",
		 v1, v1, v1, tu_cgroup_root(), tu_helper("memtouch"), v1);
	tu_tp(&r, 60, "run", "--quiet", "--json", json, "--", "sh", "-c", script, NULL);
	if (!access(v1, F_OK))
		rmdir(v1);
	ASSERT_EQ(r.status, 0, "memtouch was killed by the OOM killer (137)");
	rec = tu_load_json(json);
	ASSERT_EQ(tu_metric(rec, "proc.oom_kills"), 1, "proc.oom_kills");
	ASSERT_STREQ(json_str(json_get(rec, "sources"), "proc.oom_kills"), "bpf:mark_victim",
		     "the OOM kill's source is mark_victim, not the fork/exec programs");
	ASSERT_EQ(tu_metric(rec, "proc.failed_exits"), 1, "the killed process failed");
	ASSERT_EQ(tu_events(rec, "oom_kill", "memtouch OOM-killed"), 1, "the OOM kill, listed");
	ASSERT_EQ(tu_events(rec, "failed_exit", "killed by signal 9"), 1, "its exit, listed");
	ASSERT_EQ(json_len(json_get(rec, "events")), 2, "nothing else notable");
}

/*
 * run --collect=cpu: the block, memory and network programs are not loaded (the
 * kernel's own list of programs says so, read from inside the task), the record
 * leaves their figures out and says what it collected, and what it did collect is
 * as exact as ever: dd's 16 MiB of direct writes are not counted as block I/O.
 */
TEST(TIER_E2E, collect_narrows_what_is_loaded_and_recorded)
{
	const char *json = tu_tmp("c.json"), *json_all = tu_tmp("all.json");
	char script[1024];
	const struct json *rec, *all;
	struct tu_result r;

	snprintf(script, sizeof(script),
		 "dd if=/dev/zero of=%s bs=1M count=16 oflag=direct status=none;"
		 " echo block=$(bpftool prog show | grep -c 'name tp_block_io_sta');"
		 " echo switch=$(bpftool prog show | grep -c 'name tp_sched_switc');"
		 " echo iter=$(bpftool prog show | grep -c 'name tp_iter_charge');"
		 " echo tcp=$(bpftool prog show | grep -c 'name tp_inet_sock_se')",
		 tu_tmp("data"));
	tu_tp(&r, 120, "run", "--quiet", "--collect=cpu", "--json", json, "--", "sh", "-c", script,
	      NULL);
	ASSERT_EQ(r.status, 0, "run --collect=cpu");
	ASSERT_TRUE(strstr(r.out, "block=0\n") != NULL, "no block program loaded");
	ASSERT_TRUE(strstr(r.out, "tcp=0\n") != NULL, "no TCP program loaded");
	ASSERT_TRUE(strstr(r.out, "iter=1\n") != NULL, "the task iterator, once");
	ASSERT_TRUE(strstr(r.out, "switch=1\n") != NULL, "the last switch-out's, once");
	rec = tu_load_json(json);
	ASSERT_STREQ(json_str(json_get(rec, "collector"), "collect"), "cpu", "the record says");
	ASSERT_TRUE(!json_get(json_get(rec, "metrics"), "io.blk_write_bytes") &&
			    !json_get(json_get(rec, "metrics"), "io.merged_bios") &&
			    !json_get(json_get(rec, "sources"), "proc.oom_kills") &&
			    !json_get(json_get(rec, "metrics"), "net.tcp.connect_attempts") &&
			    !json_get(json_get(rec, "metrics"), "http.requests") &&
			    !json_get(json_get(rec, "histograms"), "io.latency"),
		    "what was not collected is not in the record");
	/* sh, dd, and bpftool and grep four times */
	ASSERT_EQ(tu_metric(rec, "proc.execs"), 10, "execs: exact still");
	ASSERT_TRUE(json_get(json_get(rec, "metrics"), "cpu.runq_wait_ns") != NULL,
		    "the run-queue wait, collected");
	ASSERT_TRUE(!json_get(json_get(rec, "histograms"), "cpu.runq_latency"),
		    "the run-queue histogram is asked for");
	/* The same task with everything: the block program is there, once. */
	tu_tp(&r, 120, "run", "--quiet", "--json", json_all, "--", "sh", "-c", script, NULL);
	ASSERT_TRUE(strstr(r.out, "block=1\n") != NULL && strstr(r.out, "tcp=1\n") != NULL,
		    "every program, by default");
	all = tu_load_json(json_all);
	ASSERT_EQ(tu_metric(all, "io.blk_write_bytes"), 16 * MIB, "and the block bytes, exact");
	ASSERT_STREQ(json_str(json_get(all, "collector"), "collect"), "cpu,io,mem,net,http",
		     "the default");
	/* --collect=all adds the histogram (the same switch program does more). */
	tu_tp(&r, 120, "run", "--quiet", "--collect=all", "--json", json_all, "--", "sh", "-c",
	      script, NULL);
	all = tu_load_json(json_all);
	ASSERT_STREQ(json_str(json_get(all, "collector"), "collect"), "all", "all");
	ASSERT_TRUE(json_get(json_get(all, "histograms"), "cpu.runq_latency") != NULL,
		    "the run-queue histogram with all");
	tu_tp(&r, 30, "run", "--collect=http", "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 125, "http without net");
	ASSERT_TRUE(strstr(r.err, "http needs net") != NULL, "says why");
	tu_tp(&r, 30, "run", "--collect=cpu,,io", "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 125, "an empty name");
}

/*
 * Where the task's cgroup has memory figures of its own (cgroup2's memory controller,
 * or its v1 memory cgroup on hybrid hosts like this one), they are the series' memory
 * and the phases' peaks, and rss_stat, which every page fault of the host would pay
 * for, stays detached. Phase "big" holds 96 MiB, "small" 16 MiB after big freed its
 * memory: small's peak is small's (the watermark was reset between them), the task's
 * peak is still big's, and the series saw big's memory while it was held.
 */
TEST(TIER_E2E, memory_from_the_cgroup_leaves_rss_stat_detached)
{
	const char *json = tu_tmp("task.json"), *links = tu_tmp("links"), *t1 = tu_tmp("truth1"),
		   *t2 = tu_tmp("truth2");
	const struct json *rec, *big, *small, *series, *b;
	const char *src;
	static char text[1 << 17];
	char script[4096];
	double peak, seen = 0;
	struct tu_result r;

	snprintf(script, sizeof(script),
		 "S=%s; M=%s; $S 1 phase:begin:big && $M 96 %s 400 && $S 1 phase:end:big &&"
		 " $S 1 phase:begin:small && $M 16 %s 0 && $S 1 phase:end:small &&"
		 " bpftool link show > %s",
		 tu_helper("sendlines"), tu_helper("memtouch"), t1, t2, links);
	tu_tp(&r, 60, "run", "--quiet", "--id", "memsrc-e2e", "--interval", "100", "--json", json,
	      "--", "sh", "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	if (!rec)
		return;
	src = json_str(json_get(rec, "sources"), "mem.peak_bytes");
	if (!CHECK(src && strncmp(src, "bpf:", 4), "this host's cgroups give memory figures (%s)",
		   src ? src : "none"))
		return;
	CHECK(tp_read_file(links, text, sizeof(text)) > 0 && strstr(text, "mark_victim"),
	      "the links listed (mark_victim attached)");
	CHECK(!strstr(text, "rss_stat"), "rss_stat is not attached");

	big = tu_find(json_get(rec, "phases"), "name", "big");
	small = tu_find(json_get(rec, "phases"), "name", "small");
	if (!CHECK(big && small, "both phases recorded"))
		return;
	peak = tu_metric(rec, "mem.peak_bytes");
	printf("    peaks: big %.1f MiB, small %.1f MiB, task %.1f MiB (%s)\n",
	       tu_num(big, "peak_mem_bytes") / MIB, tu_num(small, "peak_mem_bytes") / MIB,
	       peak / MIB, src);
	ASSERT_GE(tu_num(big, "peak_mem_bytes"), 96 * MIB, "big's peak covers its 96 MiB");
	ASSERT_LE(tu_num(big, "peak_mem_bytes"), 96 * MIB + 32 * MIB, "big's peak, no more");
	ASSERT_GE(tu_num(small, "peak_mem_bytes"), 16 * MIB, "small's peak covers its 16 MiB");
	ASSERT_LE(tu_num(small, "peak_mem_bytes"), 16 * MIB + 32 * MIB,
		  "small's peak is its own, not big's");
	ASSERT_GE(peak, tu_num(big, "peak_mem_bytes"), "the task's peak is still big's");

	tu_tp(&r, 30, "series", "memsrc-e2e", "--points", "1000", "--json", NULL);
	series = json_get(tu_parse_json(r.out), "buckets");
	for (size_t i = 0; i < json_len(series); i++) {
		b = json_get(json_at(series, i), "max");
		if (b && json_get(b, "mem_bytes") && tu_num(b, "mem_bytes") > seen)
			seen = tu_num(b, "mem_bytes");
	}
	printf("    the series' most memory: %.1f MiB\n", seen / MIB);
	ASSERT_GE(seen, 96 * MIB, "the series saw big's memory held");
	ASSERT_LE(seen, peak, "the series' memory is within the kernel's peak");
}
