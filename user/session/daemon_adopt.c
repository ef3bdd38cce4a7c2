// SPDX-License-Identifier: GPL-2.0
/*
 * The tasks a daemon before this one left (it died, or handed over): adopted with their
 * counts when its pinned maps were, else stored as interrupted with what is left.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/loop.h"
#include "base/util.h"
#include "collector/cgroup.h"
#include "model/collect_kinds.h"
#include "model/task.h"
#include "session/daemon_int.h"
#include "session/handover.h"
#include "session/session.h"
#include "store/store.h"

/* How long an adopted run's task waits for its client to come back. */
#define REATTACH_WAIT_NS (30ULL * 1000 * 1000 * 1000)

void daemon__expire_orphans(struct loop *l, void *ctx, __u64 now)
{
	struct daemon *d = ctx;

	(void)l;
	for (int i = 0; i < d->ntasks; i++) {
		struct dtask *t = d->tasks[i];

		if (!t->orphan || now < t->reattach_until_ns)
			continue;
		/*
		 * Its command may still run (its client gone for good, or late): it is never
		 * killed for that. The task ends once its cgroup is empty.
		 */
		if (cgroup_populated(t->s.cgroup) > 0) {
			t->reattach_until_ns = now + 1000000000ULL;
			continue;
		}
		t->orphan = false;
		daemon_run_is_lost(t);
	}
}

/* A task the daemon before us described, ours now with its counts: 0, or -errno. */
static int adopt_one(struct daemon *d, struct handover_task *h)
{
	struct session_params p = { 0 };
	struct session_resume r = { h->slot,	      h->run,	h->cgroup,
				    h->memcg,	      h->msock, h->start_ns,
				    h->start_real_ns, h->tid,	h->mem_v1_peak };
	const char *why;
	struct dtask *t;
	int err;

	if (h->abi != TP_ABI_VERSION || daemon__find_task(d, h->id) || d->ntasks >= d->max_tasks)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->d = d;
	t->conn = -1;
	/* No slot, no fds: dropped before its session opens, it frees nothing of another's. */
	session__clear(&t->s);
	t->cfg = d->cfg;
	snprintf(t->id, sizeof(t->id), "%s", h->id);
	snprintf(t->cgroup, sizeof(t->cgroup), "%s", h->cgroup);
	for (int i = 0; i < h->nlabels; i++) {
		snprintf(t->kv[i], sizeof(t->kv[0]), "%s", h->kv[i]);
		if (tp_parse_label(t->kv[i], &t->labels[i].key, &t->labels[i].val, &why)) {
			free(t);
			return -EINVAL;
		}
	}
	if (h->run) {
		/* The command and rules move to the task; the client may come back for it. */
		t->argv = h->argv;
		t->argc = h->argc;
		t->rules_text = h->rules;
		h->argv = NULL;
		h->argc = 0;
		h->rules = NULL;
		t->in = malloc(RUN_IN_MAX);
		t->orphan = true;
		t->reattach_until_ns = tp_now_ns() + REATTACH_WAIT_NS;
		p.argv = t->argv;
		p.argc = t->argc;
		p.rules_text = t->rules_text;
		p.done_fn = daemon_on_run_done;
		p.done_ctx = t;
	} else {
		p.cgroup = t->cgroup;
	}
	p.interval_ms = h->interval_ms;
	p.grace_s = h->grace_s;
	p.keep_leftovers = h->keep_leftovers;
	p.collect = h->collect;
	daemon__params(d, t, &p, h->nlabels);
	err = h->run && !t->in ? -ENOMEM : session__init(&t->s, &p);
	if (!err)
		err = session__resume(&t->s, d->c, d->store, &d->loop, &r);
	if (err) {
		daemon__drop_task(d, t);
		return err;
	}
	d->tasks[d->ntasks++] = t;
	return 0;
}

/*
 * A task the daemon before us described that cannot be adopted (another version, a
 * slot it had freed): ended as interrupted with what is left to read, the cgroup's
 * cpu.stat, and the reason.
 */
static void end_unadopted(struct daemon *d, const struct handover_task *h, const char *why)
{
	struct task_record rec = { 0 };
	char kv[TP_LABELS_MAX][TP_LABEL_KEY_MAX + TP_LABEL_VAL_MAX + 2];
	const char *bad;

	snprintf(rec.id, sizeof(rec.id), "%s", h->id);
	rec.argv = h->argv;
	rec.argc = h->argc;
	memcpy(kv, h->kv, sizeof(kv));
	for (int i = 0; i < h->nlabels; i++)
		if (!tp_parse_label(kv[i], &rec.labels[rec.nlabels].key,
				    &rec.labels[rec.nlabels].val, &bad))
			rec.nlabels++;
	if (gethostname(rec.host, sizeof(rec.host) - 1))
		strcpy(rec.host, "unknown");
	snprintf(rec.cgroup, sizeof(rec.cgroup), "%s", h->cgroup);
	rec.start_real_ns = h->start_real_ns;
	rec.wall_ns = rec.main_wall_ns = tp_now_ns() - h->start_ns;
	rec.end = TASK_INTERRUPTED;
	rec.by_daemon = true;
	rec.collect = COLLECT_CGROUP_ONLY;
	rec.have_cpu_stat = !cgroup_read_cpu_stat(h->cgroup, &rec.cpu_stat);
	rec.fig.cpu.cpu_ns = rec.cpu_stat.usage_us * 1000;
	task_record__add_fault(
		&rec,
		"the daemon before died and this one could not take its counts over (%s): "
		"only the cgroup's cpu.stat is here",
		why);
	/* Its row completed, unless the daemon before stored the task already. */
	if (d->store && store__restore(d->store, &rec, NULL, 0, NULL, 0, 0))
		tp_err("warning: task '%s' could not be stored as interrupted", h->id);
	handover__remove(d->handover, h->slot);
}

void daemon__adopt_tasks(struct daemon *d, struct handover_task *h, int n, bool adopted,
			 const char *why)
{
	int ok = 0;

	if (!why)
		why = "no maps were pinned (pin_dir off, or no bpffs)";
	for (int i = 0; i < n; i++) {
		int err = adopted ? adopt_one(d, &h[i]) : -ENOENT;

		if (!err || err == -EALREADY) {
			/* Adopted; or stored whole by the daemon before, just before it went. */
			ok++;
			if (err)
				handover__remove(d->handover, h[i].slot);
			continue;
		}
		end_unadopted(d, &h[i], adopted ? "its slot was freed or taken" : why);
	}
	if (n && ok == n)
		tp_note("adopted the %d running task%s of the daemon before", n, n == 1 ? "" : "s");
	else if (n)
		tp_err("warning: adopted %d of the %d running tasks of the daemon before; the "
		       "rest are stored as interrupted (%s)",
		       ok, n,
		       adopted ? "their slots"
		       : why   ? why
			       : "its maps were not pinned");
}
