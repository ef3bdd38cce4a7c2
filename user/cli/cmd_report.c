// SPDX-License-Identifier: GPL-2.0
/* `taskprobe report ID`: a stored task as one self-contained HTML file, or Markdown. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "base/util.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "model/task.h"
#include "store/query.h"
#include "store/store.h"
#include "view/report.h"

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

	return j->markdown ? report_markdown(f, &j->in) : report_html(f, &j->in);
}

static int report_opt(void *ctx, int opt, char *arg)
{
	bool *markdown = ctx; /* --format */

	if (strcmp(arg, "html") && strcmp(arg, "markdown")) {
		tp_err("report: --format is html or markdown, not '%.32s'", arg);
		return -EINVAL;
	}
	*markdown = !strcmp(arg, "markdown");
	return 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct option own[] = {
		{ "format", required_argument, NULL, 'f' },
		{ 0 },
	};
	bool markdown = false;
	const struct cli_cmd cmd = {
		.name = "report",
		.usage = report_usage,
		.shared = SHARED_DB | SHARED_CONFIG | SHARED_HOST | SHARED_OUTPUT,
		.own = own,
		.own_opt = report_opt,
		.ctx = &markdown,
	};
	const char *out, *id;
	struct shared_opts so;
	struct report_job job;
	struct query_task q;
	int ret, err;

	ret = cli_parse(argc, argv, &cmd, &so);
	if (ret)
		return ret > 0 ? 0 : 2;
	out = so.output;
	ret = 1;
	if (optind != argc - 1) {
		tp_err("report: one task id, please; see 'taskprobe report --help'");
		return 2;
	}
	id = argv[optind];
	if (!tp_valid_id(id)) {
		tp_err("report: invalid task id: use " TP_ID_RULE);
		return 2;
	}
	if (query_task__load(&q, so.db, so.config, id, so.host, true, "report"))
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
