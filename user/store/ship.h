/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The shipper: sends each of the local store's outboxes to its destination, the
 * config's sink (the fleet's PostgreSQL, a task per transaction) and its otlp_endpoint
 * (an OpenTelemetry collector, a task per request), oldest first, and marks each task
 * shipped once the destination has it. A failed round backs off (1 s, doubling to
 * 60 s), recorded in the store so that every shipper of the host (the daemon's, each
 * embedded run's) waits alike.
 */
#ifndef TP_SHIP_H
#define TP_SHIP_H

#include <pthread.h>
#include <stdbool.h>
#include <linux/types.h>

#include "model/config.h"
#include "store/store.h"

#define SHIP_BACKOFF_MAX_S 60

struct ship_result {
	long shipped; /* new in the fleet */
	long resent;  /* the fleet had them already */
	long refused; /* the fleet refused their data: kept locally, not retried */
	long waiting; /* the backlog after the round */
	bool skipped; /* backing off: no attempt made */
	char sink[256];
	char error[512];   /* the round's error ("" if none) */
	char refusal[512]; /* why the fleet refused the last task it refused */
};

/*
 * One round of queue q: at most max tasks (0: all) within budget_ns (0: no limit);
 * force ignores the backoff. 0 when the outbox emptied or the budget ran out, -1 when
 * the destination failed (res->error).
 */
int ship_round(struct store *local, enum store_queue q, const struct config *cfg, long max,
	       __u64 budget_ns, bool force, struct ship_result *res);

/* Names q's destination in the local store before any round: 0, or -1 if it is not one. */
int ship_name_sink(struct store *local, enum store_queue q, const struct config *cfg);
/* Whether cfg has q's destination (a sink, an otlp_endpoint). */
bool ship_configured(enum store_queue q, const struct config *cfg);
/* The config key of q's destination, as messages name it: "sink", "otlp_endpoint". */
const char *ship_queue_key(enum store_queue q);

/*
 * A task's OTLP/JSON documents from the local store: its trace, and its metrics when
 * metrics is not NULL (otlp_metrics). 0, or -errno. The view layer builds them; the
 * command line gives the builder to the shipper before any round.
 */
typedef int (*ship_otlp_doc_fn)(struct store *local, __s64 tid, const struct config *cfg,
				char **traces, char **metrics);
void ship_set_otlp_doc(ship_otlp_doc_fn fn);

struct prune_result {
	long pruned; /* tasks deleted from the fleet */
	bool busy;   /* another host prunes now: nothing done */
	bool more;   /* the budget ran out with more to go */
	char sink[256];
	char error[512];
};

/*
 * The fleet's tasks that started over cfg's sink_retain_days ago go, with their rows,
 * in batches, for budget_ns at most (0: no limit); one host at a time. 0 (also when
 * sink_retain_days is 0 or the fleet has no tables yet), or -1 with res->error set.
 */
int ship_prune(const struct config *cfg, __u64 budget_ns, struct prune_result *res);

/* The daemon's shipper of every configured queue: a thread with its own connection to the store. */
struct shipper {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool started, stop, kick;
	char db[4096];
	struct config cfg;
};

int shipper__start(struct shipper *sh, const char *db, const struct config *cfg);
/* A task ended: ship it now (unless backing off). */
void shipper__kick(struct shipper *sh);
/* Stops after the task in flight; what is unshipped stays in the outbox. */
void shipper__stop(struct shipper *sh);

#endif /* TP_SHIP_H */
