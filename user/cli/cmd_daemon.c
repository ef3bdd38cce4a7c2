// SPDX-License-Identifier: GPL-2.0
/*
 * `taskprobe daemon`: its options, the service (session/daemon.c) and its HTTP API.
 */
#include <getopt.h>
#include <string.h>

#include "base/util.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "model/config.h"
#include "session/control.h"
#include "session/daemon.h"
#include "view/api.h"

const char daemon_usage[] =
	"usage: taskprobe daemon [--config PATH] [--db PATH] [--socket PATH]\n"
	"                        [--listen ADDR:PORT|off]\n"
	"One collector for the host: tracks the cgroups that 'taskprobe task start' names\n"
	"until 'taskprobe task end', and stores their records.\n"
	"  --config PATH   config file (default /etc/taskprobe/taskprobe.conf)\n"
	"  --db PATH       the task database (default: the config's db)\n"
	"  --socket PATH   the control socket (default " CONTROL_SOCKET ")\n"
	"  --listen A:P    the HTTP API (default: the config's listen, " API_LISTEN_DEFAULT ");\n"
	"                  off: none. Not loopback: needs api_token in the config\n"
	"  --keep-tasks    SIGTERM hands the tasks over to the next daemon (an upgrade)\n"
	"                  instead of ending them (also keep_tasks = true in the config)\n"
	"SIGTERM or SIGINT ends every task still tracked as 'interrupted', then exits 0;\n"
	"SIGHUP reads the config and its rules again, for tasks started from then on.\n"
	"A daemon that starts where one died or handed over adopts its running tasks: the\n"
	"counters its pinned maps hold stay exact, and `run` clients reconnect.\n";

struct daemon_args {
	const char *sock;
	const char *listen_at;
	bool keep_tasks;
};

static int daemon_opt(void *ctx, int opt, char *arg)
{
	struct daemon_args *a = ctx;

	if (opt == 's')
		a->sock = arg;
	else if (opt == 'L')
		a->listen_at = arg;
	else
		a->keep_tasks = true;
	return 0;
}

int cmd_daemon(int argc, char **argv)
{
	static const struct option own[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'L' },
		{ "keep-tasks", no_argument, NULL, 'k' },
		{ 0 },
	};
	struct daemon_args a = { 0 };
	const struct cli_cmd cmd = {
		.name = "daemon",
		.usage = daemon_usage,
		.shared = SHARED_DB | SHARED_CONFIG,
		.own = own,
		.own_opt = daemon_opt,
		.ctx = &a,
	};
	const struct config *cfg;
	struct shared_opts so;
	struct api *api = NULL;
	struct daemon *d;
	const char *listen_at;
	int err;

	err = cli_parse(argc, argv, &cmd, &so);
	if (err)
		return err > 0 ? 0 : 2;
	if (optind < argc) {
		tp_err("daemon: unexpected argument '%.64s'", argv[optind]);
		return 2;
	}
	d = daemon__open(&(struct daemon_opts){ so.config, so.db, a.sock, a.keep_tasks });
	if (!d)
		return 1;
	cfg = daemon__config(d);
	listen_at = a.listen_at ? a.listen_at : cfg->listen;
	if (strcmp(listen_at, "off")) {
		struct api_source src = { daemon__store(d),	 daemon__collector(d),
					  daemon__tasks_running, d,
					  cfg->metrics_label,	 daemon__live_record,
					  daemon__db(d) };

		api = api__open(listen_at, cfg->api_token, &src, daemon__loop(d));
		if (!api) {
			daemon__close(d);
			return 1;
		}
	}
	err = daemon__serve(d, api ? listen_at : NULL);
	api__close(api);
	daemon__close(d);
	return err;
}
