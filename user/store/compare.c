// SPDX-License-Identifier: GPL-2.0
/*
 * compare.h: the task's own figures from its record, its history's from the store
 * (the metrics table, the rows' wall time, the records' phases), the bands computed
 * with base/quantile.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/quantile.h"
#include "base/util.h"
#include "store/compare.h"

/* A phase's figures in its record (docs/task-record.md), those compared. */
static const char *const phase_keys[COMPARE_PHASE_FIGS] = {
	"wall_ns", "cpu_ns", "runq_wait_ns", "read_bytes", "write_bytes", "execs", "peak_mem_bytes",
};

struct build {
	struct compare *c;
	long cap; /* values each figure can hold: the history's size */
	__s64 *tids;
	size_t ntids;
	int err;
};

static struct compare_figure *find_fig(struct compare_figure *f, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

static int fig_init(struct compare_figure *f, const char *name, double value, long cap)
{
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->value = value;
	f->vals = calloc((size_t)cap, sizeof(*f->vals));
	return f->vals ? 0 : -ENOMEM;
}

static void fig_add(struct compare_figure *f, long cap, double v)
{
	if (f && f->n < cap)
		f->vals[f->n++] = v;
}

/* The band of the values gathered, and where the task's value falls. */
static void fig_finish(struct compare_figure *f)
{
	quantile_sort(f->vals, (size_t)f->n);
	f->p10 = quantile_cont(f->vals, (size_t)f->n, 0.1);
	f->p50 = quantile_cont(f->vals, (size_t)f->n, 0.5);
	f->p90 = quantile_cont(f->vals, (size_t)f->n, 0.9);
	f->flag = !f->n ? 0 : f->value < f->p10 ? -1 : f->value > f->p90 ? 1 : 0;
	free(f->vals);
	f->vals = NULL;
}

/* Phase i's key among a record's phases: its name, NAME.2 for its second run, ... */
static void phase_key(const struct json *phases, size_t i, char *buf, size_t len)
{
	const char *name = json_str(json_at(phases, i), "name");
	int seen = 1;

	for (size_t j = 0; j < i; j++)
		seen += !strcmp(json_str(json_at(phases, j), "name"), name);
	if (seen > 1)
		snprintf(buf, len, "%s.%d", name, seen);
	else
		snprintf(buf, len, "%s", name);
}

/* A phase that never ended has figures of part of it only: not compared. */
static bool phase_ended(const struct json *p)
{
	const struct json *u = json_get(p, "unfinished");

	return !(u && u->type == JSON_BOOL && u->b);
}

/* The task's own figures: its wall time, every number of its metrics, its phases'. */
static int own_figures(struct build *b, const struct json *rec)
{
	struct compare *c = b->c;
	const struct json *m = json_get(rec, "metrics"), *phases = json_get(rec, "phases");
	size_t n = 1;
	int err;

	for (const struct json *v = m ? m->child : NULL; v; v = v->next)
		n++;
	c->figs = calloc(n, sizeof(*c->figs));
	c->phases = calloc(json_len(phases) + 1, sizeof(*c->phases));
	if (!c->figs || !c->phases)
		return -ENOMEM;
	err = fig_init(&c->figs[c->nfigs++], STORE_WALL, (double)json_u64(rec, "wall_ns"), b->cap);
	for (const struct json *v = m ? m->child : NULL; v && !err; v = v->next)
		if (v->type == JSON_NUM && strcmp(v->key, STORE_WALL))
			err = fig_init(&c->figs[c->nfigs++], v->key, v->num, b->cap);
	for (size_t i = 0; i < json_len(phases) && !err; i++) {
		const struct json *p = json_at(phases, i);
		struct compare_phase *cp = &c->phases[c->nphases];

		if (!phase_ended(p))
			continue;
		phase_key(phases, i, cp->name, sizeof(cp->name));
		c->nphases++;
		for (int k = 0; k < COMPARE_PHASE_FIGS && !err; k++) {
			const struct json *v = json_get(p, phase_keys[k]);

			if (v && v->type == JSON_NUM)
				err = fig_init(&cp->figs[cp->nfigs++], phase_keys[k], v->num,
					       b->cap);
		}
	}
	return err;
}

/* One task of the history: its wall time, and its phases that the task ran too. */
static int on_history(void *ctx, const struct store_history_row *r)
{
	struct build *b = ctx;
	struct compare *c = b->c;
	struct json *rec;
	const struct json *phases;
	char key[COMPARE_NAME_MAX];

	if ((long)b->ntids >= b->cap)
		return 1;
	b->tids[b->ntids++] = r->tid;
	fig_add(&c->figs[0], b->cap, (double)r->wall_ns);
	rec = r->record ? json_parse(r->record, strlen(r->record), NULL, 0) : NULL;
	phases = json_get(rec, "phases");
	for (size_t i = 0; i < json_len(phases); i++) {
		const struct json *p = json_at(phases, i);
		struct compare_phase *cp = NULL;

		if (!phase_ended(p))
			continue;
		phase_key(phases, i, key, sizeof(key));
		for (size_t j = 0; j < c->nphases && !cp; j++)
			if (!strcmp(c->phases[j].name, key))
				cp = &c->phases[j];
		if (!cp)
			continue;
		cp->n++;
		for (int k = 0; k < cp->nfigs; k++) {
			const struct json *v = json_get(p, cp->figs[k].name);

			if (v && v->type == JSON_NUM)
				fig_add(&cp->figs[k], b->cap, v->num);
		}
	}
	json_free(rec);
	return 0;
}

/* A metric of a task of the history: one value of the figure of that name, if any. */
static int on_metric(void *ctx, const struct store_metric_row *r)
{
	struct build *b = ctx;
	struct compare *c = b->c;

	/* The wall time is the row's (on_history), never a metric's of that name. */
	if (r->name && strcmp(r->name, STORE_WALL))
		fig_add(find_fig(c->figs + 1, c->nfigs - 1, r->name), b->cap, r->value);
	return 0;
}

/* Finishes every figure, keeping only those that the history has. */
static void finish(struct compare *c)
{
	size_t kept = 0, pk = 0;

	for (size_t i = 0; i < c->nfigs; i++) {
		fig_finish(&c->figs[i]);
		if (c->figs[i].n)
			c->figs[kept++] = c->figs[i];
	}
	c->nfigs = kept;
	for (size_t i = 0; i < c->nphases; i++) {
		struct compare_phase *p = &c->phases[i];
		int fk = 0;

		for (int k = 0; k < p->nfigs; k++) {
			fig_finish(&p->figs[k]);
			if (p->figs[k].n)
				p->figs[fk++] = p->figs[k];
		}
		p->nfigs = fk;
		if (p->n && p->nfigs)
			c->phases[pk++] = *p;
	}
	c->nphases = pk;
}

int compare__build(struct compare *c, struct store *s, const struct json *rec, const char *by,
		   const char *value, long last)
{
	struct build b = { .c = c, .cap = last };
	struct store_history h = { 0 };
	int err;

	memset(c, 0, sizeof(*c));
	snprintf(c->id, sizeof(c->id), "%s", json_str(rec, "id"));
	snprintf(c->host, sizeof(c->host), "%s", json_str(rec, "host"));
	snprintf(c->by, sizeof(c->by), "%s", by);
	snprintf(c->value, sizeof(c->value), "%s", value ? value : "");
	c->last = last;
	if (last < 1 || last > STORE_TIDS_MAX)
		return -EINVAL;
	err = own_figures(&b, rec);
	if (err) {
		tp_err("compare: out of memory");
		return err;
	}
	if (!value) {
		c->why = "the task has no such label";
		return 0;
	}
	b.tids = calloc((size_t)last, sizeof(*b.tids));
	if (!b.tids) {
		tp_err("compare: out of memory");
		return -ENOMEM;
	}
	h.key = by;
	h.value = value;
	/* Tasks that started before it ended: earlier ones and its neighbours, no later. */
	h.start_ns = json_u64(rec, "start_ns");
	h.before_ns = h.start_ns + json_u64(rec, "wall_ns");
	h.id = c->id;
	h.host = c->host;
	h.limit = last;
	err = store__history(s, &h, on_history, &b);
	if (!err)
		err = store__metrics(s, b.tids, b.ntids, on_metric, &b);
	c->history = (long)b.ntids;
	free(b.tids);
	if (err)
		return err;
	finish(c);
	if (!c->history)
		c->why = "no earlier task has that label value";
	return 0;
}

void compare__free(struct compare *c)
{
	for (size_t i = 0; c->figs && i < c->nfigs; i++)
		free(c->figs[i].vals);
	for (size_t i = 0; c->phases && i < c->nphases; i++)
		for (int k = 0; k < c->phases[i].nfigs; k++)
			free(c->phases[i].figs[k].vals);
	free(c->figs);
	free(c->phases);
	memset(c, 0, sizeof(*c));
}
