// SPDX-License-Identifier: GPL-2.0
/* `taskprobe task start|end`: a worker's own cgroup as a task of the daemon's. */
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
#include "model/config.h"
#include "model/task.h"
#include "model/task_json.h"
#include "session/control.h"
#include "session/hostinfo.h"
#include "view/perfherder.h"
#include "view/summary.h"

const char task_usage[] =
	"usage: taskprobe task start ID --cgroup PATH [--label K=V]... [--socket PATH]\n"
	"       taskprobe task end ID [--json FILE] [--perfherder-file FILE] [--quiet]\n"
	"                             [--socket PATH] [--config PATH]\n"
	"A cgroup that a worker manages (a container's, a systemd unit's) as a task of the\n"
	"running daemon: everything in it from start to end is the task's.\n"
	"  --cgroup PATH   the cgroup (below the cgroup2 mount)\n"
	"  --label K=V     label the task (repeatable, at most 64)\n"
	"  --json FILE     end: write the task's record to FILE ('-': stdout)\n"
	"  --perfherder-file FILE  end: write Treeherder's performance artifact to FILE\n"
	"                  (Treeherder reads artifacts named *perfherder-data*.json)\n"
	"  --config PATH   end: the config whose perfherder_framework to write\n"
	"  --quiet         end: print no summary\n"
	"  --socket PATH   the daemon's control socket (default " CONTROL_SOCKET ",\n"
	"                  or TASKPROBE_CONTROL)\n"
	"start prints TASKPROBE_SOCKET=PATH: the task's metrics socket, for its processes.\n";

static int task_start(const char *id, const char *cgroup, char **labels, int nlabels,
		      const char *sock)
{
	char req[CONTROL_LINE_MAX], *ans, *nl;
	size_t len, used;

	used = (size_t)snprintf(req, sizeof(req), "start\t%s\t%s", id, cgroup);
	for (int i = 0; i < nlabels && used < sizeof(req); i++)
		used += (size_t)snprintf(req + used, sizeof(req) - used, "\t%s", labels[i]);
	if (used + 2 > sizeof(req)) {
		tp_err("task: the request is too long");
		return 1;
	}
	strcat(req, "\n");
	ans = control_ask(control_path(sock), req, &len, "task");
	if (!ans)
		return 1;
	nl = strchr(ans, '\n');
	if (nl)
		*nl = '\0';
	if (ans[2] == '\t' && ans[3])
		printf("TASKPROBE_SOCKET=%s\n", ans + 3);
	free(ans);
	return 0;
}

struct end_opts {
	const char *json_path;
	const char *perfherder_path;
	const char *config;
	bool quiet;
};

static int task_end(const char *id, const struct end_opts *e, const char *sock)
{
	const char *json_path = e->json_path;
	char req[256], *ans, *rec;
	struct task_record t;
	struct json *j;
	size_t len;
	int ret = 1;

	snprintf(req, sizeof(req), "end\t%s\n", id);
	ans = control_ask(control_path(sock), req, &len, "task");
	if (!ans)
		return 1;
	rec = strchr(ans, '\n');
	rec = rec ? rec + 1 : ans + len;
	if (json_path) {
		FILE *f = strcmp(json_path, "-") ? fopen(json_path, "w") : stdout;

		if (!f) {
			tp_err("task: cannot write %s: %s", json_path, strerror(errno));
		} else {
			fputs(rec, f);
			if (f != stdout)
				fclose(f);
		}
	}
	j = json_parse(rec, strlen(rec), NULL, 0);
	if (!j || task_record__from_json(&t, j)) {
		tp_err("task: the daemon's record of '%s' is damaged", id);
		goto out;
	}
	if (!e->quiet)
		task_record__print_summary(stderr, &t);
	if (e->perfherder_path) {
		struct config cfg;
		int err = config__read(&cfg, e->config);

		err = err ? err
			  : task_record__save_perfherder(e->perfherder_path, &t,
							 cfg.perfherder_framework);
		if (err)
			tp_err("task: cannot write %s: %s", e->perfherder_path, strerror(-err));
	}
	task_record__fini(&t);
	ret = 0;
out:
	json_free(j);
	free(ans);
	return ret;
}

struct task_args {
	const char *cgroup;
	const char *sock;
	struct end_opts e;
	char *labels[TP_LABELS_MAX];
	int nlabels;
};

static int task_opt(void *ctx, int opt, char *arg)
{
	struct task_args *a = ctx;
	char copy[TP_LABEL_KEY_MAX + TP_LABEL_VAL_MAX + 2], *k, *v;
	const char *why;

	switch (opt) {
	case 'g':
		a->cgroup = arg;
		return 0;
	case 'j':
		a->e.json_path = arg;
		return 0;
	case 'q':
		a->e.quiet = true;
		return 0;
	case 'p':
		a->e.perfherder_path = arg;
		return 0;
	case 's':
		a->sock = arg;
		return 0;
	}
	/* --label K=V, checked here: the daemon is told labels it can take. */
	if (a->nlabels >= TP_LABELS_MAX) {
		tp_err("task: at most %d labels", TP_LABELS_MAX);
		return -EINVAL;
	}
	snprintf(copy, sizeof(copy), "%s", arg);
	if (strlen(arg) >= sizeof(copy) || tp_parse_label(copy, &k, &v, &why)) {
		tp_err("task: invalid label '%.64s': %s", arg,
		       strlen(arg) >= sizeof(copy) ? "too long" : why);
		return -EINVAL;
	}
	if (hostinfo_is_label(k)) {
		tp_err("task: label '%s' names a host label", k);
		return -EINVAL;
	}
	a->labels[a->nlabels++] = arg;
	return 0;
}

int cmd_task(int argc, char **argv)
{
	static const struct option own[] = {
		{ "cgroup", required_argument, NULL, 'g' },
		{ "label", required_argument, NULL, 'l' },
		{ "json", required_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "perfherder-file", required_argument, NULL, 'p' },
		{ "socket", required_argument, NULL, 's' },
		{ 0 },
	};
	struct task_args a = { 0 };
	const struct cli_cmd cmd = {
		.name = "task",
		.usage = task_usage,
		.shared = SHARED_CONFIG,
		.own = own,
		.own_opt = task_opt,
		.ctx = &a,
	};
	const char *cgroup, *sock;
	struct shared_opts so;
	struct end_opts e;
	char **labels = a.labels;
	int nlabels, rc;
	bool start;

	rc = cli_parse(argc, argv, &cmd, &so);
	if (rc)
		return rc > 0 ? 0 : 2;
	cgroup = a.cgroup;
	sock = a.sock;
	e = a.e;
	e.config = so.config;
	nlabels = a.nlabels;
	if (argc - optind != 2 || (strcmp(argv[optind], "start") && strcmp(argv[optind], "end"))) {
		tp_err("task: use 'task start ID --cgroup PATH' or 'task end ID'");
		return 2;
	}
	start = !strcmp(argv[optind], "start");
	if (!tp_valid_id(argv[optind + 1])) {
		tp_err("task: invalid task id '%.64s': use " TP_ID_RULE, argv[optind + 1]);
		return 2;
	}
	if (start && !cgroup) {
		tp_err("task: start needs --cgroup PATH");
		return 2;
	}
	if (start && (strchr(cgroup, '\t') || strchr(cgroup, '\n'))) {
		tp_err("task: the cgroup path holds a tab or a newline");
		return 2;
	}
	if (start && (e.json_path || e.perfherder_path || e.quiet || e.config)) {
		tp_err("task: --json, --perfherder-file, --quiet and --config are end's");
		return 2;
	}
	if (!start && (cgroup || nlabels)) {
		tp_err("task: end takes no --cgroup or --label");
		return 2;
	}
	return start ? task_start(argv[optind + 1], cgroup, labels, nlabels, sock)
		     : task_end(argv[optind + 1], &e, sock);
}
