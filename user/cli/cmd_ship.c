// SPDX-License-Identifier: GPL-2.0
/* `taskprobe ship`: send the local outbox to the config's sink now. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "model/config.h"
#include "store/ship.h"
#include "store/store.h"

static const char ship_usage[] =
	"usage: taskprobe ship [--config PATH] [--db PATH] [--max N] [--backfill] [--refused]\n"
	"Sends the stored tasks that wait for the config's sink (a fleet PostgreSQL) now,\n"
	"oldest first, whatever the backoff; the daemon and each run do it on their own.\n"
	"With sink_retain_days, the fleet's tasks older than that go after (as the daemon's\n"
	"do hourly).\n"
	"  --max N         at most N tasks (default: all)\n"
	"  --backfill      the tasks stored before the sink was configured go too\n"
	"  --refused       the tasks the fleet refused go again (once it is fixed)\n";

/* --backfill or --refused: those tasks wait (again), and how many is said. */
static int requeue(struct store *s, bool refused, const char *which, const char *when)
{
	int n = store__outbox_backfill(s, refused);

	if (n < 0)
		return -1;
	printf("%d task%s %s wait%s %s\n", n, n == 1 ? "" : "s", which, n == 1 ? "s" : "", when);
	return 0;
}

/* With sink_retain_days, the fleet's old tasks go too: said in one line. */
static int prune(const struct config *cfg)
{
	struct prune_result pr;

	if (!cfg->sink_retain_days)
		return 0;
	if (ship_prune(cfg, 0, &pr)) {
		tp_err("sink %s: %s; its tasks past sink_retain_days stay", pr.sink, pr.error);
		return -1;
	}
	if (pr.busy)
		printf("another host prunes the fleet now: its old tasks are left to it\n");
	else
		printf("pruned %ld task%s that started over %d day%s ago from the fleet\n",
		       pr.pruned, pr.pruned == 1 ? "" : "s", cfg->sink_retain_days,
		       cfg->sink_retain_days == 1 ? "" : "s");
	return 0;
}

struct ship_args {
	__u64 max;
	bool backfill;
	bool refused;
};

static int ship_opt(void *ctx, int opt, char *arg)
{
	struct ship_args *a = ctx;

	if (opt == 'b') {
		a->backfill = true;
	} else if (opt == 'r') {
		a->refused = true;
	} else if (tp_parse_u64(arg, 100000000, &a->max) || !a->max) {
		tp_err("ship: invalid --max '%.32s': a whole number from 1", arg);
		return -EINVAL;
	}
	return 0;
}

int cmd_ship(int argc, char **argv)
{
	static const struct option own[] = {
		{ "max", required_argument, NULL, 'm' },
		{ "backfill", no_argument, NULL, 'b' },
		{ "refused", no_argument, NULL, 'r' },
		{ 0 },
	};
	struct ship_args a = { 0 };
	const struct cli_cmd cmd = {
		.name = "ship",
		.usage = ship_usage,
		.shared = SHARED_DB | SHARED_CONFIG,
		.own = own,
		.own_opt = ship_opt,
		.ctx = &a,
	};
	const char *config, *db, *env = getenv("TASKPROBE_DB");
	struct ship_result res;
	struct shared_opts so;
	struct config cfg;
	struct store *s;
	bool backfill, refused;
	__u64 max;
	int rc;

	rc = cli_parse(argc, argv, &cmd, &so);
	if (rc)
		return rc > 0 ? 0 : 2;
	config = so.config;
	db = so.db;
	max = a.max;
	backfill = a.backfill;
	refused = a.refused;
	if (optind < argc) {
		tp_err("ship: unexpected argument '%.64s'; see 'taskprobe ship --help'",
		       argv[optind]);
		return 2;
	}
	if (config__read(&cfg, config))
		return 2;
	if (!cfg.sink[0]) {
		tp_err("ship: no sink in %s: add 'sink = postgresql://USER@HOST/DB'",
		       config ? config : TP_DEFAULT_CONFIG);
		return 1;
	}
	s = store__open(db ? db : env && *env ? env : cfg.db, true, cfg.db_gid);
	if (!s)
		return 1;
	store__set_outbox(s, true);
	if ((backfill && requeue(s, false, "stored before the sink now", "too")) ||
	    (refused && requeue(s, true, "the fleet refused", "again"))) {
		store__close(s);
		return 1;
	}
	rc = ship_round(s, &cfg, (long)max, 0, true, &res);
	if (rc)
		tp_err("sink %s: %s; %ld task%s kept locally", res.sink, res.error, res.waiting,
		       res.waiting == 1 ? "" : "s");
	else
		printf("shipped %ld task%s to %s (%ld already there, %ld refused); %ld waiting\n",
		       res.shipped, res.shipped == 1 ? "" : "s", res.sink, res.resent, res.refused,
		       res.waiting);
	store__close(s);
	if (!rc && prune(&cfg))
		rc = 1;
	return rc || res.refused ? 1 : 0;
}
