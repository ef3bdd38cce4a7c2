// SPDX-License-Identifier: GPL-2.0
/* The taskprobe binary: global options and the subcommand table. */
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "cli/commands.h"
#include "store/ship.h"
#include "view/otlp.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "run", cmd_run, "run a command as a task and print what it used" },
	{ "list", cmd_list, "stored tasks, newest first" },
	{ "show", cmd_show, "one stored task's summary" },
	{ "hist", cmd_hist, "a stored task's histograms as text bars" },
	{ "series", cmd_series, "a stored task's time series in fixed buckets" },
	{ "count", cmd_count, "a metric summed over stored tasks, grouped by a label" },
	{ "stats", cmd_stats, "a metric's count, min, p50, p90, p99, max over stored tasks" },
	{ "compare", cmd_compare, "a stored task beside the last N tasks with its label value" },
	{ "daemon", cmd_daemon, "one collector for the host, for tasks that workers start" },
	{ "task", cmd_task, "start or end a worker's own cgroup as a task of the daemon" },
	{ "top", cmd_top, "a live table of the running tasks" },
	{ "report", cmd_report, "a stored task as one self-contained HTML file, or Markdown" },
	{ "export", cmd_export, "a stored task for other tools: Perfetto, Treeherder, OTLP, ..." },
	{ "ship", cmd_ship, "send the stored tasks that wait for the fleet or the OTLP collector" },
	{ "doctor", cmd_doctor, "check what this host has and lacks for taskprobe" },
	{ "phase", cmd_phase, "inside a task: begin or end a phase" },
	{ "emit", cmd_emit, "inside a task: send a counter, gauge or timer" },
};

static void usage(FILE *f)
{
	fputs("usage: taskprobe [--version] [--help] COMMAND [ARGS]\n"
	      "Per-task CPU, process, disk and memory figures for CI tasks, from BPF.\n"
	      "\n"
	      "Commands:\n",
	      f);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n'taskprobe COMMAND --help' describes each command.\n", f);
}

/* An exact name, or an unambiguous prefix of one (bpftool-style). */
static const struct command *find_command(const char *name)
{
	const struct command *found = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (!strcmp(commands[i].name, name))
			return &commands[i];
		if (!strncmp(commands[i].name, name, strlen(name))) {
			if (found)
				return NULL;
			found = &commands[i];
		}
	}
	return found;
}

int main(int argc, char **argv)
{
	const struct command *cmd;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("taskprobe %s\n", TP_VERSION);
		return 0;
	}
	cmd = find_command(argv[1]);
	if (!cmd) {
		tp_err("unknown command '%.64s'; see 'taskprobe --help'", argv[1]);
		return 2;
	}
	/* The shippers of run, daemon and ship send the OTLP documents the view builds. */
	ship_set_otlp_doc(otlp_task_docs);
	return cmd->fn(argc - 1, argv + 1);
}
