// SPDX-License-Identifier: GPL-2.0
/* The shipper: the local outbox to the fleet's PostgreSQL, with backoff. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/conninfo.h"
#include "base/util.h"
#include "store/ship.h"
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

static void fail_round(struct store *local, struct ship_result *res, long failures)
{
	store__sink_note(local, res->sink, res->error, tp_realtime_ns() + backoff_ns(failures),
			 res->shipped + res->resent);
}

int ship_round(struct store *local, const struct config *cfg, long max, __u64 budget_ns, bool force,
	       struct ship_result *res)
{
	__u64 start = tp_now_ns();
	struct store_sink_state st;
	__s64 tids[SHIP_BATCH], after = 0;
	struct sink k;
	int n, err = 0;

	memset(res, 0, sizeof(*res));
	if (conninfo_check(cfg->sink, res->sink, sizeof(res->sink), res->error, sizeof(res->error)))
		return -1;
	if (store__sink_state(local, &st)) {
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
	/* A run's few seconds bound each statement too; else a minute. */
	if (sink__open(&k, cfg->sink, cfg->sink_passfile, true,
		       budget_ns ? (int)(budget_ns / NS_PER_S) + 1 : 60)) {
		snprintf(res->sink, sizeof(res->sink), "%s", k.name);
		snprintf(res->error, sizeof(res->error), "%s", k.err);
		sink__close(&k);
		fail_round(local, res, st.failures);
		return -1;
	}
	snprintf(res->sink, sizeof(res->sink), "%s", k.name);
	while (!err && (n = store__outbox(local, after, tids, SHIP_BATCH)) > 0) {
		for (int i = 0; i < n && !err; i++) {
			char *doc;
			int rc;

			if ((max && res->shipped + res->resent + res->refused >= max) ||
			    (budget_ns && tp_now_ns() - start > budget_ns)) {
				err = 1;
				break;
			}
			after = tids[i];
			/* A row unreadable here is refused like one the fleet refuses. */
			if (store__ship_doc(local, tids[i], &doc)) {
				snprintf(k.err, sizeof(k.err),
					 "task %lld unreadable in the local store",
					 (long long)tids[i]);
				k.conn_lost = false;
				rc = -1;
			} else {
				rc = sink__ship(&k, doc);
				free(doc);
			}
			if (rc < 0 && k.conn_lost) {
				snprintf(res->error, sizeof(res->error), "%s", k.err);
				err = -1;
				break;
			}
			if (rc < 0) {
				/* Its data, not the fleet: the others go on, it stays here. */
				snprintf(res->error, sizeof(res->error), "%s", k.err);
				snprintf(res->refusal, sizeof(res->refusal), "%s", k.err);
				res->refused++;
			} else if (rc == 1) {
				res->shipped++;
			} else {
				res->resent++;
			}
			if (store__outbox_done(local, tids[i], rc < 0)) {
				snprintf(res->error, sizeof(res->error),
					 "the local store: cannot mark a shipped task");
				err = -1;
			}
		}
	}
	sink__close(&k);
	if (n < 0 && !err) {
		snprintf(res->error, sizeof(res->error), "the local store: cannot read the outbox");
		err = -1;
	}
	if (err < 0)
		fail_round(local, res, st.failures);
	else
		store__sink_note(local, res->sink, res->refused ? res->error : NULL, 0,
				 res->shipped + res->resent);
	if (!store__sink_state(local, &st))
		res->waiting = st.waiting;
	/* Not retried on its own: said once, where the round ran. */
	if (res->refused)
		tp_err("sink %s: the fleet refused %ld task%s (%s); kept locally only, "
		       "'taskprobe ship --refused' sends %s again",
		       res->sink, res->refused, res->refused == 1 ? "" : "s", res->refusal,
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

int ship_name_sink(struct store *local, const struct config *cfg)
{
	char name[256], why[512];

	if (conninfo_check(cfg->sink, name, sizeof(name), why, sizeof(why)))
		return -1;
	return store__sink_name(local, name) ? -1 : 0;
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

static void *shipper_main(void *arg)
{
	struct shipper *sh = arg;
	struct store *s = store__open(sh->db, true, sh->cfg.db_gid);
	__u64 next_prune = 0;

	if (!s)
		return NULL;
	store__set_outbox(s, true);
	pthread_mutex_lock(&sh->mu);
	while (!sh->stop) {
		struct store_sink_state st = { 0 };
		struct ship_result res;
		struct timespec until;
		__u64 now = tp_realtime_ns(), next;

		sh->kick = false;
		pthread_mutex_unlock(&sh->mu);
		/* A bounded round, so that a stop waits for one task at most a while. */
		if (ship_round(s, &sh->cfg, 256, 0, false, &res) && res.error[0])
			tp_err("sink %s: %s; %ld task%s kept locally", res.sink, res.error,
			       res.waiting, res.waiting == 1 ? "" : "s");
		prune_due(sh, &next_prune);
		store__sink_state(s, &st);
		pthread_mutex_lock(&sh->mu);
		/* More waiting and no backoff: go on at once; else at the backoff or in 30 s. */
		next = st.waiting && st.next_try_ns <= now ? now
		       : st.waiting && st.next_try_ns	   ? st.next_try_ns
							   : now + 30 * NS_PER_S;
		/* Pruning left more to do: go on at once. */
		if (sh->cfg.sink_retain_days && next_prune <= tp_now_ns())
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
