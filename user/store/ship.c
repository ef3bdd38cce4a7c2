// SPDX-License-Identifier: GPL-2.0
/* The shipper: the local outboxes to the fleet's PostgreSQL and an OTLP collector. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/conninfo.h"
#include "base/util.h"
#include "store/ship.h"
#include "store/otlp_sink.h"
#include "store/sink.h"

#define SHIP_BATCH 64
/* Tasks a pruning statement deletes: about 70 rows each, a second or so. */
#define PRUNE_BATCH 1000
/* The daemon prunes the fleet hourly, for 10 s at most a time (sooner if more wait). */
#define PRUNE_EVERY_NS (3600 * NS_PER_S)
#define PRUNE_RETRY_NS (300 * NS_PER_S)
#define PRUNE_BUDGET_NS (10 * NS_PER_S)
#define NS_PER_S 1000000000ULL

static __u64 backoff_ns(long failures)
{
	__u64 s = failures >= 6 ? SHIP_BACKOFF_MAX_S : 1ULL << failures;

	return (s > SHIP_BACKOFF_MAX_S ? SHIP_BACKOFF_MAX_S : s) * NS_PER_S;
}

static ship_otlp_doc_fn otlp_doc;

void ship_set_otlp_doc(ship_otlp_doc_fn fn)
{
	otlp_doc = fn;
}

/* A queue's destination, as a round talks to it. */
struct dest {
	enum store_queue q;
	const struct config *cfg;
	struct sink pg;
	struct otlp_sink otlp;
	char name[256];
	char err[512];
	bool conn_lost; /* the last error was the destination's, not one task's */
};

/* The destination's name, or -1 with why it is not one (unset, or a bad sink). */
static int dest_check(enum store_queue q, const struct config *cfg, char *name, size_t nlen,
		      char *why, size_t wlen)
{
	if (q == STORE_Q_FLEET)
		return conninfo_check(cfg->sink, name, nlen, why, wlen);
	if (!cfg->otlp_endpoint[0]) {
		snprintf(name, nlen, "(none)");
		snprintf(why, wlen, "no otlp_endpoint configured");
		return -1;
	}
	snprintf(name, nlen, "%s", cfg->otlp_endpoint);
	return 0;
}

static int dest_open(struct dest *d, int timeout_s)
{
	int rc;

	if (d->q == STORE_Q_FLEET) {
		rc = sink__open(&d->pg, d->cfg->sink, d->cfg->sink_passfile, true, timeout_s);
		snprintf(d->name, sizeof(d->name), "%s", d->pg.name);
		snprintf(d->err, sizeof(d->err), "%s", d->pg.err);
	} else {
		rc = otlp_sink__open(&d->otlp, d->cfg->otlp_endpoint, d->cfg->otlp_headers_file,
				     d->cfg->otlp_ca_file, timeout_s);
		snprintf(d->name, sizeof(d->name), "%s", d->otlp.name);
		snprintf(d->err, sizeof(d->err), "%s", d->otlp.err);
	}
	return rc;
}

static void dest_close(struct dest *d)
{
	if (d->q == STORE_Q_FLEET)
		sink__close(&d->pg);
	else
		otlp_sink__close(&d->otlp);
}

/* The task's trace (and metrics, opt-in) to the collector: 1, or -1. */
static int otlp_send(struct dest *d, char *traces, char *metrics)
{
	int rc = otlp_sink__post(&d->otlp, "/v1/traces", traces);

	if (!rc && metrics)
		rc = otlp_sink__post(&d->otlp, "/v1/metrics", metrics);
	snprintf(d->err, sizeof(d->err), "%s", d->otlp.err);
	d->conn_lost = rc && d->otlp.conn_lost;
	return rc ? -1 : 1;
}

/*
 * One task to the destination: 1 when new there, 0 when it had it already, -1 with
 * d->err (d->conn_lost when the destination failed rather than the task).
 */
static int dest_send(struct dest *d, struct store *local, __s64 tid)
{
	char *doc = NULL, *more = NULL;
	int rc;

	d->conn_lost = false;
	/* A row unreadable here is refused like one the destination refuses. */
	if (d->q == STORE_Q_FLEET ? store__ship_doc(local, tid, &doc)
	    : !otlp_doc		  ? -ENOSYS
			: otlp_doc(local, tid, d->cfg, &doc, d->cfg->otlp_metrics ? &more : NULL)) {
		snprintf(d->err, sizeof(d->err), "task %lld unreadable in the local store",
			 (long long)tid);
		return -1;
	}
	if (d->q == STORE_Q_FLEET) {
		rc = sink__ship(&d->pg, doc);
		snprintf(d->err, sizeof(d->err), "%s", d->pg.err);
		d->conn_lost = rc < 0 && d->pg.conn_lost;
	} else {
		rc = otlp_send(d, doc, more);
	}
	free(doc);
	free(more);
	return rc;
}

static void fail_round(struct store *local, enum store_queue q, struct ship_result *res,
		       long failures)
{
	store__sink_note(local, q, res->sink, res->error, tp_realtime_ns() + backoff_ns(failures));
}

/* Sends what waits, a batch at a time: 0, 1 when max or the budget stopped it, or -1. */
static int send_outbox(struct dest *d, struct store *local, long max, __u64 start, __u64 budget_ns,
		       struct ship_result *res)
{
	__s64 tids[SHIP_BATCH], after = 0;
	int n, err = 0;

	while (!err && (n = store__outbox(local, d->q, after, tids, SHIP_BATCH)) > 0) {
		for (int i = 0; i < n && !err; i++) {
			int rc;

			if ((max && res->shipped + res->resent + res->refused >= max) ||
			    (budget_ns && tp_now_ns() - start > budget_ns))
				return 1;
			after = tids[i];
			rc = dest_send(d, local, tids[i]);
			if (rc < 0 && d->conn_lost) {
				snprintf(res->error, sizeof(res->error), "%s", d->err);
				return -1;
			}
			if (rc < 0) {
				/* Its data, not the destination: the others go on, it stays here. */
				snprintf(res->error, sizeof(res->error), "%s", d->err);
				snprintf(res->refusal, sizeof(res->refusal), "%s", d->err);
				res->refused++;
			} else if (rc == 1) {
				res->shipped++;
			} else {
				res->resent++;
			}
			if (store__outbox_done(local, d->q, tids[i], rc < 0)) {
				snprintf(res->error, sizeof(res->error),
					 "the local store: cannot mark a shipped task");
				err = -1;
			}
		}
	}
	if (n < 0 && !err) {
		snprintf(res->error, sizeof(res->error), "the local store: cannot read the outbox");
		err = -1;
	}
	return err;
}

const char *ship_queue_key(enum store_queue q)
{
	return q == STORE_Q_FLEET ? "sink" : "otlp_endpoint";
}

int ship_round(struct store *local, enum store_queue q, const struct config *cfg, long max,
	       __u64 budget_ns, bool force, struct ship_result *res)
{
	__u64 start = tp_now_ns();
	struct store_sink_state st;
	struct dest d = { .q = q, .cfg = cfg };
	int err;

	memset(res, 0, sizeof(*res));
	if (dest_check(q, cfg, res->sink, sizeof(res->sink), res->error, sizeof(res->error)))
		return -1;
	if (store__sink_state(local, q, &st)) {
		snprintf(res->error, sizeof(res->error), "the local store: cannot read the outbox");
		return -1;
	}
	res->waiting = st.waiting;
	if (!force && st.next_try_ns > tp_realtime_ns()) {
		res->skipped = true;
		snprintf(res->error, sizeof(res->error), "%s", st.error);
		return 0;
	}
	if (!st.waiting && !force)
		return 0;
	/* A run's few seconds bound each statement or request too; else a minute. */
	if (dest_open(&d, budget_ns ? (int)(budget_ns / NS_PER_S) + 1 : 60)) {
		snprintf(res->sink, sizeof(res->sink), "%s", d.name);
		snprintf(res->error, sizeof(res->error), "%s", d.err);
		dest_close(&d);
		fail_round(local, q, res, st.failures);
		return -1;
	}
	snprintf(res->sink, sizeof(res->sink), "%s", d.name);
	err = send_outbox(&d, local, max, start, budget_ns, res);
	dest_close(&d);
	if (err < 0)
		fail_round(local, q, res, st.failures);
	else
		store__sink_note(local, q, res->sink, res->refused ? res->error : NULL, 0);
	if (!store__sink_state(local, q, &st))
		res->waiting = st.waiting;
	/* Not retried on its own: said once, where the round ran. */
	if (res->refused)
		tp_err("%s %s: %s refused %ld task%s (%s); kept locally only, "
		       "'taskprobe ship --refused' sends %s again",
		       ship_queue_key(q), res->sink,
		       q == STORE_Q_FLEET ? "the fleet" : "the collector", res->refused,
		       res->refused == 1 ? "" : "s", res->refusal,
		       res->refused == 1 ? "it" : "them");
	return err < 0 ? -1 : 0;
}

int ship_prune(const struct config *cfg, __u64 budget_ns, struct prune_result *res)
{
	__u64 start = tp_now_ns();
	__s64 before =
		(__s64)tp_realtime_ns() - (__s64)cfg->sink_retain_days * 86400 * (__s64)NS_PER_S;
	struct sink k;
	long n;

	memset(res, 0, sizeof(*res));
	if (!cfg->sink[0] || cfg->sink_retain_days <= 0)
		return 0;
	if (sink__open(&k, cfg->sink, cfg->sink_passfile, false,
		       budget_ns ? (int)(budget_ns / NS_PER_S) + 1 : 0)) {
		snprintf(res->sink, sizeof(res->sink), "%s", k.name);
		snprintf(res->error, sizeof(res->error), "%s", k.err);
		sink__close(&k);
		/* No tables yet: nothing to prune. */
		return k.schema == 0 ? 0 : -1;
	}
	snprintf(res->sink, sizeof(res->sink), "%s", k.name);
	for (;;) {
		n = sink__prune(&k, before, PRUNE_BATCH);
		if (n == -EBUSY) {
			res->busy = true;
			break;
		}
		if (n < 0) {
			snprintf(res->error, sizeof(res->error), "%s", k.err);
			break;
		}
		res->pruned += n;
		if (n < PRUNE_BATCH)
			break;
		if (budget_ns && tp_now_ns() - start > budget_ns) {
			res->more = true;
			break;
		}
	}
	sink__close(&k);
	return n < 0 && n != -EBUSY ? -1 : 0;
}

int ship_name_sink(struct store *local, enum store_queue q, const struct config *cfg)
{
	char name[256], why[512];

	if (dest_check(q, cfg, name, sizeof(name), why, sizeof(why)))
		return -1;
	return store__sink_name(local, q, name) ? -1 : 0;
}

bool ship_configured(enum store_queue q, const struct config *cfg)
{
	return q == STORE_Q_FLEET ? cfg->sink[0] != '\0' : cfg->otlp_endpoint[0] != '\0';
}

/* The daemon's pruning, when due (*next, monotonic): hourly, sooner while more wait. */
static void prune_due(struct shipper *sh, __u64 *next)
{
	struct prune_result pr;

	if (!sh->cfg.sink_retain_days || tp_now_ns() < *next)
		return;
	if (ship_prune(&sh->cfg, PRUNE_BUDGET_NS, &pr)) {
		tp_err("sink %s: %s; its tasks past sink_retain_days stay until the next try",
		       pr.sink, pr.error);
		*next = tp_now_ns() + PRUNE_RETRY_NS;
		return;
	}
	*next = pr.more ? 0 : tp_now_ns() + PRUNE_EVERY_NS;
}

/* When q's shipper goes next (realtime): at once, at its backoff, or in 30 s. */
static __u64 next_round(struct store *s, enum store_queue q, __u64 now)
{
	struct store_sink_state st = { 0 };

	store__sink_state(s, q, &st);
	return st.waiting && st.next_try_ns <= now ? now
	       : st.waiting && st.next_try_ns	   ? st.next_try_ns
						   : now + 30 * NS_PER_S;
}

static void *shipper_main(void *arg)
{
	struct shipper *sh = arg;
	struct store *s = store__open(sh->db, true, sh->cfg.db_gid);
	__u64 next_prune = 0;

	if (!s)
		return NULL;
	for (int q = 0; q < STORE_QUEUES; q++)
		store__set_outbox(s, q, ship_configured(q, &sh->cfg));
	pthread_mutex_lock(&sh->mu);
	while (!sh->stop) {
		struct ship_result res;
		struct timespec until;
		__u64 now = tp_realtime_ns(), next = UINT64_MAX;

		sh->kick = false;
		pthread_mutex_unlock(&sh->mu);
		/* Bounded rounds, so that a stop waits for one task at most a while. */
		for (int q = 0; q < STORE_QUEUES; q++) {
			if (!ship_configured(q, &sh->cfg))
				continue;
			if (ship_round(s, q, &sh->cfg, 256, 0, false, &res) && res.error[0])
				tp_err("%s %s: %s; %ld task%s kept locally", ship_queue_key(q),
				       res.sink, res.error, res.waiting,
				       res.waiting == 1 ? "" : "s");
		}
		if (sh->cfg.sink[0])
			prune_due(sh, &next_prune);
		now = tp_realtime_ns();
		for (int q = 0; q < STORE_QUEUES; q++)
			if (ship_configured(q, &sh->cfg)) {
				__u64 t = next_round(s, q, now);

				next = t < next ? t : next;
			}
		pthread_mutex_lock(&sh->mu);
		/* Pruning left more to do: go on at once. */
		if (sh->cfg.sink_retain_days && sh->cfg.sink[0] && next_prune <= tp_now_ns())
			next = now;
		next = next > now ? next : now;
		until.tv_sec = (time_t)(next / NS_PER_S);
		until.tv_nsec = (long)(next % NS_PER_S);
		while (!sh->stop && !sh->kick && next > now &&
		       pthread_cond_timedwait(&sh->cv, &sh->mu, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&sh->mu);
	store__close(s);
	return NULL;
}

int shipper__start(struct shipper *sh, const char *db, const struct config *cfg)
{
	memset(sh, 0, sizeof(*sh));
	snprintf(sh->db, sizeof(sh->db), "%s", db);
	sh->cfg = *cfg;
	pthread_mutex_init(&sh->mu, NULL);
	pthread_cond_init(&sh->cv, NULL);
	if (pthread_create(&sh->thread, NULL, shipper_main, sh))
		return -errno;
	sh->started = true;
	return 0;
}

void shipper__kick(struct shipper *sh)
{
	if (!sh->started)
		return;
	pthread_mutex_lock(&sh->mu);
	sh->kick = true;
	pthread_cond_signal(&sh->cv);
	pthread_mutex_unlock(&sh->mu);
}

void shipper__stop(struct shipper *sh)
{
	if (!sh->started)
		return;
	pthread_mutex_lock(&sh->mu);
	sh->stop = true;
	pthread_cond_signal(&sh->cv);
	pthread_mutex_unlock(&sh->mu);
	pthread_join(sh->thread, NULL);
	sh->started = false;
}
