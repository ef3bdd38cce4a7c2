// SPDX-License-Identifier: GPL-2.0
/* `taskprobe compare ID`: a stored task against its history (store/compare.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "store/compare.h"
#include "store/query.h"
#include "view/compare.h"

const char compare_usage[] =
	"usage: taskprobe compare ID [--by LABEL] [--last N] [--format text|json|markdown]\n"
	"                         [--db PATH] [--config PATH] [--host NAME]\n"
	"A stored task's figures, and its phases', beside the median and the 10th to 90th\n"
	"percentiles of the last N tasks with the same value of a label that ran to their\n"
	"end and started before this one ended (the task itself left out); a figure\n"
	"outside that band is flagged (the exit status stays 0).\n"
	"  --by LABEL     the label (default job; host labels too: instance_type, ...)\n"
	"  --last N       how many tasks, 1 to 500 (default 20)\n"
	"  --format F     text (default), json, or markdown (a CI job summary's table)\n"
	"  --host NAME    the task of this worker host (a glob), where hosts reuse ids\n";

enum { C_BY = 0x200, C_LAST, C_FORMAT };

struct compare_opts {
	const char *by;
	long last;
	char format; /* 't', 'j', 'm' */
};

static int compare_opt(void *ctx, int opt, char *arg)
{
	struct compare_opts *o = ctx;
	__u64 n;

	switch (opt) {
	case C_BY:
		if (!query_valid_name(arg)) {
			tp_err("compare: invalid --by '%.64s': use A-Z a-z 0-9 _ . -", arg);
			return -EINVAL;
		}
		o->by = arg;
		return 0;
	case C_LAST:
		if (tp_parse_u64(arg, STORE_TIDS_MAX, &n) || !n) {
			tp_err("compare: invalid --last '%.32s': 1 to %d", arg, STORE_TIDS_MAX);
			return -EINVAL;
		}
		o->last = (long)n;
		return 0;
	default: /* C_FORMAT */
		if (strcmp(arg, "text") && strcmp(arg, "json") && strcmp(arg, "markdown")) {
			tp_err("compare: --format is text, json or markdown, not '%.32s'", arg);
			return -EINVAL;
		}
		o->format = arg[0];
		return 0;
	}
}

int cmd_compare(int argc, char **argv)
{
	static const struct option own[] = {
		{ "by", required_argument, NULL, C_BY },
		{ "last", required_argument, NULL, C_LAST },
		{ "format", required_argument, NULL, C_FORMAT },
		{ 0 },
	};
	struct compare_opts o = { "job", COMPARE_LAST_DEFAULT, 't' };
	const struct cli_cmd cmd = {
		.name = "compare",
		.usage = compare_usage,
		.shared = SHARED_DB | SHARED_CONFIG | SHARED_HOST | SHARED_JSON | SHARED_VERBOSE,
		.own = own,
		.own_opt = compare_opt,
		.ctx = &o,
	};
	struct shared_opts so;
	struct query_task q;
	struct compare c = { 0 };
	int ret, err;

	ret = cli_parse(argc, argv, &cmd, &so);
	if (ret)
		return ret > 0 ? 0 : 2;
	if (so.json)
		o.format = 'j';
	if (optind != argc - 1) {
		tp_err("compare: one task id, please; see 'taskprobe compare --help'");
		return 2;
	}
	ret = 1;
	if (query_task__load(&q, so.db, so.config, argv[optind], so.host, true, "compare"))
		goto out;
	err = compare__build(&c, q.s, q.rec, o.by, query_label(q.labels, q.nlabels, o.by), o.last);
	if (err)
		goto out;
	if (o.format == 'j')
		err = compare_json(stdout, &c);
	else if (o.format == 'm')
		err = compare_markdown(stdout, &c);
	else
		err = compare_text(stdout, &c);
	ret = err || fflush(stdout) ? 1 : 0;
out:
	compare__free(&c);
	query_task__free(&q);
	return ret;
}
