// SPDX-License-Identifier: GPL-2.0
/* `taskprobe ship`: send the local outboxes to the config's sink and OTLP collector now. */
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
	"Sends the stored tasks that wait for the config's sink (a fleet PostgreSQL) and\n"
	"its otlp_endpoint (an OpenTelemetry collector) now, oldest first, whatever the\n"
	"backoff; the daemon and each run do it on their own. With sink_retain_days, the\n"
	"fleet's tasks older than that go after (as the daemon's do hourly).\n"
	"  --max N         at most N tasks to each (default: all)\n"
	"  --backfill      the tasks stored before the sink or endpoint was configured go too\n"
	"  --refused       the tasks the fleet or the collector refused go again (once fixed)\n";

/* --backfill or --refused: those tasks wait (again), and how many is said. */
static int requeue(struct store *s, enum store_queue q, bool refused)
{
	int n = store__outbox_backfill(s, q, refused);
	const char *who = q == STORE_Q_FLEET ? "the fleet" : "the collector";
	const char *key = ship_queue_key(q);

	if (n < 0)
		return -1;
	if (refused)
		printf("%d task%s %s refused wait%s again\n", n, n == 1 ? "" : "s", who,
		       n == 1 ? "s" : "");
	else
		printf("%d task%s stored before the %s now wait%s too\n", n, n == 1 ? "" : "s", key,
		       n == 1 ? "s" : "");
	return 0;
}

/* One queue's round, forced, and its line: 0, or 1 when it failed or refused any. */
static int ship_one(struct store *s, enum store_queue q, const struct config *cfg, long max,
		    bool backfill, bool refused)
{
	struct ship_result res;

	if ((backfill && requeue(s, q, false)) || (refused && requeue(s, q, true)))
		return 1;
	if (ship_round(s, q, cfg, max, 0, true, &res)) {
		tp_err("%s %s: %s; %ld task%s kept locally", ship_queue_key(q), res.sink, res.error,
		       res.waiting, res.waiting == 1 ? "" : "s");
		return 1;
	}
	if (q == STORE_Q_FLEET)
		printf("shipped %ld task%s to %s (%ld already there, %ld refused); %ld waiting\n",
		       res.shipped, res.shipped == 1 ? "" : "s", res.sink, res.resent, res.refused,
		       res.waiting);
	else
		printf("sent %ld task%s to the collector %s (%ld refused); %ld waiting\n",
		       res.shipped, res.shipped == 1 ? "" : "s", res.sink, res.refused,
		       res.waiting);
	return res.refused ? 1 : 0;
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
	if (!cfg.sink[0] && !cfg.otlp_endpoint[0]) {
		tp_err("ship: neither a sink nor an otlp_endpoint in %s: add 'sink = "
		       "postgresql://USER@HOST/DB' or 'otlp_endpoint = http://HOST:4318'",
		       config ? config : TP_DEFAULT_CONFIG);
		return 1;
	}
	s = store__open(db ? db : env && *env ? env : cfg.db, true, cfg.db_gid);
	if (!s)
		return 1;
	rc = 0;
	for (int q = 0; q < STORE_QUEUES; q++)
		store__set_outbox(s, q, ship_configured(q, &cfg));
	for (int q = 0; q < STORE_QUEUES; q++)
		if (ship_configured(q, &cfg))
			rc |= ship_one(s, q, &cfg, (long)max, backfill, refused);
	store__close(s);
	if (cfg.sink[0] && prune(&cfg))
		rc = 1;
	return rc;
}
