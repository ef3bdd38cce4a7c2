// SPDX-License-Identifier: GPL-2.0
/* `taskprobe phase begin|end NAME` and `taskprobe emit NAME VALUE`: run inside a task. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "collector/metrics_socket.h"
#include "model/user_metrics.h"

const char phase_usage[] = "usage: taskprobe phase begin|end NAME\n"
			   "Begins or ends a phase of the task this runs in (phases nest).\n";
const char emit_usage[] =
	"usage: taskprobe emit NAME VALUE [--type counter|gauge|timer] [--tag K=V]...\n"
	"Sends a metric of the task this runs in (counter by default; timer in ms).\n";

/* Checks the line as the collector will, then sends it: errors show up here, at once. */
static int send_line(const char *cmd, const char *line)
{
	struct um_line parsed;
	enum um_reject r = um_parse_line(line, strlen(line), &parsed);
	char answer[128] = "";
	int err;

	if (r) {
		tp_err("%s: '%.80s' would be refused (%s)", cmd, line, um_reject_names[r]);
		return 2;
	}
	err = msock_send(line, strlen(line), answer, sizeof(answer));
	if (err == -ENOTCONN) {
		tp_err("%s: not inside a task (TASKPROBE_SOCKET is not set); run it under "
		       "'taskprobe run'",
		       cmd);
		return 1;
	}
	if (err) {
		tp_err("%s: the collector at %s did not take it: %s", cmd,
		       getenv("TASKPROBE_SOCKET"), strerror(-err));
		return 1;
	}
	/* Refused by the collector: the reason it counted the line under, in one line. */
	if (strcmp(answer, "ok")) {
		tp_err("%s: the collector refused '%.80s': %.64s", cmd, line,
		       strncmp(answer, "refused ", 8) ? answer : answer + 8);
		return 1;
	}
	return 0;
}

int cmd_phase(int argc, char **argv)
{
	char line[UM_LINE_MAX + 1];

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(phase_usage, stdout);
		return 0;
	}
	if (argc != 3 || (strcmp(argv[1], "begin") && strcmp(argv[1], "end"))) {
		tp_err("phase: usage: taskprobe phase begin|end NAME");
		return 2;
	}
	snprintf(line, sizeof(line), "phase:%s:%s", argv[1], argv[2]);
	return send_line("phase", line);
}

int cmd_emit(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "tag", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char line[UM_LINE_MAX + 1], tags[UM_LINE_MAX] = "", *end;
	const char *type = "c";
	size_t len;
	int opt, ntags = 0;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (opt) {
		case 't':
			if (!strcmp(optarg, "counter"))
				type = "c";
			else if (!strcmp(optarg, "gauge"))
				type = "g";
			else if (!strcmp(optarg, "timer"))
				type = "ms";
			else {
				tp_err("emit: invalid --type '%.32s': counter, gauge or timer",
				       optarg);
				return 2;
			}
			break;
		case 'g': {
			char *eq = strchr(optarg, '=');
			size_t used = strlen(tags);

			if (!eq || eq == optarg) {
				tp_err("emit: invalid --tag '%.64s': expected K=V", optarg);
				return 2;
			}
			*eq = ':';
			snprintf(tags + used, sizeof(tags) - used, "%s%s", ntags++ ? "," : "",
				 optarg);
			break;
		}
		case 'h':
			fputs(emit_usage, stdout);
			return 0;
		default:
			cli_option_error("emit", opt, argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind != 2) {
		tp_err("emit: usage: taskprobe emit NAME VALUE [--type T] [--tag K=V]...");
		return 2;
	}
	if (!isfinite(strtod(argv[optind + 1], &end)) || *end || end == argv[optind + 1]) {
		tp_err("emit: invalid value '%.32s': a finite number", argv[optind + 1]);
		return 2;
	}
	len = (size_t)snprintf(line, sizeof(line), "%s:%s|%s%s%s", argv[optind], argv[optind + 1],
			       type, ntags ? "|#" : "", tags);
	if (len >= sizeof(line)) {
		tp_err("emit: the line is longer than %d bytes", UM_LINE_MAX);
		return 2;
	}
	return send_line("emit", line);
}
