// SPDX-License-Identifier: GPL-2.0
/* `taskprobe report ID`: a stored task as one self-contained HTML file, or Markdown. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "base/json.h"
#include "store/query.h"
#include "view/report.h"
#include "store/store.h"
#include "model/task.h"
#include "base/util.h"

const char report_usage[] =
	"usage: taskprobe report ID [-o FILE] [--format html|markdown] [--db PATH]\n"
	"                        [--config PATH] [--host NAME]\n"
	"A stored task for people. html (default): one self-contained file (inline SVG and\n"
	"CSS, nothing fetched; opens offline): timelines of CPU, memory, disk and processes\n"
	"on one UTC time axis with the phases as bands and notable events as markers,\n"
	"latency histograms, programs by CPU, network, phases, labels and host.\n"
	"markdown: the same figures for a CI job page (a Mermaid gantt of the phases,\n"
	"tables, long ones in <details>).\n"
	"  -o FILE      write FILE (whole, or not at all) instead of standard output\n"
	"  --host NAME  the task of this worker host (a glob), where hosts reuse ids\n";

struct report_job {
	bool markdown;
	struct report_input in;
};

static int write_report(FILE *f, void *ctx)
{
	const struct report_job *j = ctx;

	return j->markdown ? report_markdown(f, j->in.rec) : report_html(f, &j->in);
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "db", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "host", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *out = NULL, *db = NULL, *config = NULL, *host = NULL, *id;
	struct report_job job;
	struct query_task q;
	bool markdown = false;
	int opt, ret = 1, err;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (strcmp(optarg, "html") && strcmp(optarg, "markdown")) {
				tp_err("report: --format is html or markdown, not '%.32s'", optarg);
				return 2;
			}
			markdown = !strcmp(optarg, "markdown");
			break;
		case 'o':
			out = optarg;
			break;
		case 'd':
			db = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'H':
			if (!query_host_option("report", optarg))
				return 2;
			host = optarg;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return 0;
		default:
			tp_err("report: %s option '%s'; see 'taskprobe report --help'",
			       opt == ':' ? "missing value for" : "unknown", argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		tp_err("report: one task id, please; see 'taskprobe report --help'");
		return 2;
	}
	id = argv[optind];
	if (!tp_valid_id(id)) {
		tp_err("report: invalid task id: use " TP_ID_RULE);
		return 2;
	}
	if (query_task__load(&q, db, config, id, host, true, "report"))
		goto out;
	job = (struct report_job){ markdown, { q.rec, q.pts, q.n, q.labels, q.nlabels } };
	if (!out)
		err = write_report(stdout, &job) || fflush(stdout) ? -EIO : 0;
	else
		err = tp_write_whole(out, write_report, &job);
	if (err && out)
		tp_err("report: cannot write %s: %s", out, strerror(-err));
	ret = err ? 1 : 0;
out:
	query_task__free(&q);
	return ret;
}
