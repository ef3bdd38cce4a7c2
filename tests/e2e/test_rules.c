// SPDX-License-Identifier: GPL-2.0
/* End-to-end tests: exec and output rules count exactly; bad rules are clear errors. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"
#include "harness.h"
#include "testutil.h"

TEST(TIER_E2E, exec_rules_count_clones_and_fetches)
{
	const char *rules = tu_tmp("rules"), *json = tu_tmp("task.json"), *dir = tu_tmp("git");
	char script[2048];
	const struct json *rec;
	struct tu_result r;

	tu_write_file(rules, "# VCS operations by kind\n"
			     "exec vcs.clone{kind=full} ^\\S*/git clone\\b\n"
			     "exec vcs.clone{kind=incremental} ^\\S*/git (?:fetch|pull)\\b\n"
			     "exec vcs.op{verb=x} ^\\S*/git (?<verb>clone|fetch)\\b\n");
	/*
	 * Local repositories only: no network. 2 clones and 3 fetches. (A pull would run
	 * an internal /usr/lib/git-core/git fetch too, which this regex also counts.)
	 */
	snprintf(script, sizeof(script),
		 "set -e; mkdir -p %s && cd %s && export HOME=%s GIT_CONFIG_NOSYSTEM=1;"
		 " git init -q -b main src && git -C src -c user.name=t -c user.email=t@t"
		 " commit -q --allow-empty -m one;"
		 " git clone -q src c1; git clone -q src c2;"
		 " (cd c1 && git fetch -q); (cd c1 && git fetch -q); (cd c2 && git fetch -q)",
		 dir, dir, dir);
	tu_tp(&r, 60, "run", "--quiet", "--no-db", "--rules", rules, "--json", json, "--", "sh",
	      "-c", script, NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	ASSERT_EQ(tu_metric(rec, "vcs.clone{kind=full}"), 2, "full clones");
	ASSERT_EQ(tu_metric(rec, "vcs.clone{kind=incremental}"), 3, "fetches");
	ASSERT_EQ(tu_metric(rec, "vcs.op{verb=clone}"), 2, "a named group as a label");
	ASSERT_EQ(tu_metric(rec, "vcs.op{verb=fetch}"), 3, "a named group as a label");
	ASSERT_EQ(tu_metric(rec, "vcs.op{verb=x}"), -1, "a group overrides the name's label");
	/* The task's own shell: its script is longer than the 256 bytes captured. */
	ASSERT_EQ(tu_num(rec, "exec_args_truncated"), 1, "argv cut once, and said so");
}

TEST(TIER_E2E, output_rules_count_and_anchor)
{
	const char *rules = tu_tmp("rules"), *json = tu_tmp("task.json");
	const struct json *rec, *anchors;
	struct tu_result r;

	tu_write_file(rules, "[rules]\noutput build.warning anchor ^warning: (?<what>\\w+)\n"
			     "output build.lines .\n");
	tu_tp(&r, 30, "run", "--quiet", "--no-db", "--rules", rules, "--json", json, "--", "sh",
	      "-c",
	      "exec 2>&1; echo start; echo 'warning: unused'; echo 'warning: unused' >&2;"
	      " echo note; echo 'warning: deprecated'; echo ' warning: indented'",
	      NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	ASSERT_EQ(tu_metric(rec, "build.warning{what=unused}"), 2, "unused warnings");
	ASSERT_EQ(tu_metric(rec, "build.warning{what=deprecated}"), 1, "deprecated warnings");
	ASSERT_EQ(tu_metric(rec, "build.lines"), 6, "every line");
	anchors = json_get(rec, "log_anchors");
	ASSERT_EQ(json_len(anchors), 3, "one anchor per warning");
	ASSERT_EQ(tu_num(json_at(anchors, 0), "line"), 2, "first warning's line");
	ASSERT_EQ(tu_num(json_at(anchors, 2), "line"), 5, "last warning's line");
}

TEST(TIER_E2E, bad_rule_names_file_and_line)
{
	const char *rules = tu_tmp("rules");
	char want[600];
	struct tu_result r;

	tu_write_file(rules, "output ok ^fine$\n\noutput broken (unclosed\n");
	tu_tp(&r, 30, "run", "--no-db", "--rules", rules, "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 125, "exit status");
	snprintf(want, sizeof(want), "taskprobe: %s:3: bad regex at offset", rules);
	ASSERT_TRUE(!strncmp(r.err, want, strlen(want)), "names the file, line 3 and the problem");
	ASSERT_TRUE(strchr(r.err, '\n') && !strchr(r.err, '\n')[1], "one line");
	tu_write_file(rules, "phase-begin - ^START (\\w+)\n");
	tu_tp(&r, 30, "run", "--no-db", "--rules", rules, "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 125, "a phase rule without (?<phase>...)");
	tu_write_file(rules, "input x ^a\n");
	tu_tp(&r, 30, "run", "--no-db", "--rules", rules, "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 125, "an unknown rule kind");
	tu_write_file(rules, "exec bad@name ^a\n");
	tu_tp(&r, 30, "run", "--no-db", "--rules", rules, "--", "/bin/true", NULL);
	ASSERT_EQ(r.status, 125, "a bad counter name");
}

TEST(TIER_E2E, mach_rules_make_tiers_phases)
{
	const char *json = tu_tmp("task.json");
	const struct json *rec, *ph;
	struct tu_result r;

	/* mach's lines, with and without the timestamp later versions print. */
	tu_tp(&r, 30, "run", "--quiet", "--no-db", "--rules", "scripts/integrations/mach.rules",
	      "--json", json, "--", "sh", "-c",
	      "echo 'BUILDSTATUS 1764680000 TIERS export compile';"
	      " echo 'BUILDSTATUS 1764680000 TIER_START export'; sleep 0.2;"
	      " echo 'BUILDSTATUS 1764680001 TIER_FINISH export';"
	      " echo 'BUILDSTATUS TIER_START compile'; sleep 0.3; /bin/true; sleep 0.1;"
	      " echo 'BUILDSTATUS TIER_FINISH compile'",
	      NULL);
	ASSERT_EQ(r.status, 0, "exit status");
	rec = tu_load_json(json);
	ph = json_get(rec, "phases");
	ASSERT_EQ(json_len(ph), 2, "a phase per tier");
	ASSERT_STREQ(json_get(json_at(ph, 0), "name")->str, "export", "first tier");
	ASSERT_GE(tu_num(tu_find(ph, "name", "compile"), "wall_ns"), 350e6, "compile's time");
	/*
	 * sleep, /bin/true, sleep: a marker takes effect when read, so the first sleep may
	 * start before it does (docs/metrics-language.md); the other two are inside.
	 */
	ASSERT_GE(tu_num(tu_find(ph, "name", "compile"), "execs"), 2, "compile's execs");
	ASSERT_LE(tu_num(tu_find(ph, "name", "compile"), "execs"), 3, "compile's execs");
	ASSERT_EQ(tu_metric(rec, "mach.tiers"), 2, "tiers counted");
}

TEST(TIER_E2E, ansible_tasks_become_phases)
{
	const char *json = tu_tmp("task.json"), *play = tu_tmp("site.yml"), *out = tu_tmp("out");
	char plugins[4096], script[8192];
	const struct json *rec, *ph;
	struct tu_result r;

	if (!getcwd(plugins, sizeof(plugins) - 64))
		return;
	strcat(plugins, "/scripts/integrations/ansible");
	snprintf(script, sizeof(script),
		 "- hosts: localhost\n"
		 "  gather_facts: false\n"
		 "  tasks:\n"
		 "    - name: Wait a little\n"
		 "      command: sleep 0.3\n"
		 "    - name: Burn CPU (2 s)\n"
		 "      command: %s 1 2000\n"
		 "    - name: Write a file\n"
		 "      copy:\n"
		 "        content: hello\n"
		 "        dest: %s\n",
		 tu_helper("burn"), out);
	tu_write_file(play, script);
	/* A real playbook on localhost, with the plugin as Ansible loads any callback. */
	snprintf(script, sizeof(script),
		 "ANSIBLE_CALLBACK_PLUGINS=%s ANSIBLE_CALLBACKS_ENABLED=taskprobe"
		 " ANSIBLE_LOCAL_TEMP=%s.tmp ANSIBLE_HOME=%s.home ANSIBLE_NOCOLOR=1"
		 " ansible-playbook -i localhost, -c local %s",
		 plugins, out, out, play);
	tu_tp(&r, 180, "run", "--quiet", "--no-db", "--json", json, "--", "sh", "-c", script, NULL);
	CHECK(r.status == 0, "ansible-playbook: %d\n%.2000s", r.status, r.out);
	rec = tu_load_json(json);
	ph = json_get(rec, "phases");
	ASSERT_EQ(json_len(ph), 3, "a phase per Ansible task");
	ASSERT_STREQ(json_get(json_at(ph, 0), "name")->str, "Wait_a_little", "first task");
	ASSERT_STREQ(json_get(json_at(ph, 1), "name")->str, "Burn_CPU_2_s", "second task");
	ASSERT_STREQ(json_get(json_at(ph, 2), "name")->str, "Write_a_file", "third task");
	ASSERT_GE(tu_num(json_at(ph, 0), "wall_ns"), 300e6, "the wait's time");
	/* Each Ansible task costs ~1.5 s of its own Python; the burn adds 2 s on top. */
	ASSERT_GE(tu_num(json_at(ph, 1), "cpu_ns"), 2000e6, "the burn's CPU lands in its phase");
	ASSERT_GE(tu_num(json_at(ph, 1), "cpu_ns") - tu_num(json_at(ph, 0), "cpu_ns"), 1000e6,
		  "and not in the wait's");
	ASSERT_FALSE(json_get(json_at(ph, 2), "unfinished")->b, "the last one ended with the play");
	ASSERT_EQ(tu_num(json_get(rec, "metrics_socket"), "rejected"), 0, "nothing refused");
}
