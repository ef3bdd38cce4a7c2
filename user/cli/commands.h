/* SPDX-License-Identifier: GPL-2.0 */
/* Subcommands of the taskprobe binary, one file each (cmd_*.c), and their parsed options. */
#ifndef TP_COMMANDS_H
#define TP_COMMANDS_H

#include <stdbool.h>
#include <linux/types.h>

#include "model/task.h"
#include "session/session.h"

struct run_opts {
	char id[TP_ID_MAX + 1];
	struct label labels[TP_LABELS_MAX];
	int nlabels;
	const char *json_path;
	__u64 grace_s;
	bool keep_leftovers;
	bool quiet;
	bool help;
	const char *db_path; /* NULL: the config's */
	bool no_db;
	bool no_daemon; /* embed the collector even when a daemon runs */
	bool perfherder;
	const char *perfherder_path; /* --perfherder-file: the artifact written there */
	const char *summary_path;    /* --summary-file: the Markdown report appended there */
	const char *rules_path;
	const char *config_path;
	__u64 interval_ms;
	unsigned collect; /* --collect (collect.h), 0: the config's */
	bool strict;	  /* --strict: a collector that cannot work is 125, CMD not run */
	char **argv;	  /* CMD [ARG...] */
	int argc;
};

/* Exit statuses of `run` that are not the command's own (README.md, `taskprobe run`). */
#define EXIT_TP_FAILED 125
#define EXIT_NOT_EXECUTABLE 126
#define EXIT_NOT_FOUND 127

/* Parses `run` arguments (argv[0] is "run"); prints one error line and returns -EINVAL. */
int run_parse_args(int argc, char **argv, struct run_opts *o);
int cmd_run(int argc, char **argv);
extern const char run_usage[];

int cmd_list(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_hist(int argc, char **argv);
int cmd_series(int argc, char **argv);
int cmd_count(int argc, char **argv);
extern const char list_usage[], show_usage[], hist_usage[], series_usage[], count_usage[];

int cmd_ship(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_daemon(int argc, char **argv);
int cmd_task(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);
extern const char export_usage[], report_usage[];
extern const char daemon_usage[], task_usage[], top_usage[];
extern const char doctor_usage[];

int cmd_compare(int argc, char **argv);
int cmd_stats(int argc, char **argv);
extern const char compare_usage[], stats_usage[];

int cmd_phase(int argc, char **argv);
int cmd_emit(int argc, char **argv);
extern const char phase_usage[], emit_usage[];

#endif /* TP_COMMANDS_H */
