// SPDX-License-Identifier: GPL-2.0
/* The queries' JSON rows, shared by the CLI and the HTTP API. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/conninfo.h"
#include "base/hist.h"
#include "base/util.h"
#include "model/config.h"
#include "model/metric_descs.h"
#include "store/query.h"

struct store *query_open_store(const char *db, const char *config)
{
	struct config cfg;

	return query_open_store_cfg(db, config, &cfg);
}

struct store *query_open_store_cfg(const char *db, const char *config, struct config *cfg)
{
	const char *env = getenv("TASKPROBE_DB"), *path;

	if (config__read(cfg, config))
		return NULL;
	path = db ? db : env && *env ? env : cfg->db;
	/* A fleet's PostgreSQL: its password from the config's passfile or PGPASSFILE. */
	if (conninfo_is(path))
		return store__open_fleet(path, cfg->sink_passfile);
	return store__open(path, false, cfg->db_gid);
}

static int on_label(void *ctx, const char *key, const char *value)
{
	struct query_task *q = ctx;
	struct query_label *l = &q->labels[q->nlabels];

	if (q->nlabels >= QUERY_LABELS_MAX)
		return 0;
	l->key = strdup(key ? key : "");
	l->val = strdup(value ? value : "");
	if (l->key && l->val) {
		q->nlabels++;
	} else {
		free(l->key);
		free(l->val);
	}
	return 0;
}

const char *query_label(const struct query_label *l, int n, const char *key)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(l[i].key, key))
			return l[i].val;
	return NULL;
}

int query_find_task(struct store *s, const char *id, const char *host, struct store_task *t,
		    const char *who)
{
	const char *sep = who ? ": " : "";
	int err = store__find(s, id, host, t);

	who = who ? who : "";
	if (err == -ENOENT && host)
		tp_err("%s%sno stored task '%s' of a host '%s'; 'taskprobe list --json' shows each "
		       "task's host",
		       who, sep, id, host);
	else if (err == -ENOENT)
		tp_err("%s%sno stored task '%s'; 'taskprobe list' shows them", who, sep, id);
	else if (!err && !host && t->hosts > 1)
		tp_note("%s%s%ld hosts have a task '%s': this is %s's, the newest; --host NAME "
			"picks another",
			who, sep, t->hosts, id, t->host);
	return err;
}

int query_task__load(struct query_task *q, const char *db, const char *config, const char *id,
		     const char *host, bool need_record, const char *who)
{
	int damaged;

	memset(q, 0, sizeof(*q));
	if (!tp_valid_id(id)) {
		tp_err("%s: invalid task id: use " TP_ID_RULE, who);
		return -1;
	}
	q->s = query_open_store_cfg(db, config, &q->cfg);
	if (!q->s)
		return -1;
	if (query_find_task(q->s, id, host, &q->st, who))
		return -1;
	q->rec = q->st.record ? json_parse(q->st.record, strlen(q->st.record), NULL, 0) : NULL;
	if (!q->rec && (need_record || q->st.record)) {
		tp_err("%s: task '%s' is %s: its record comes at its end", who, id,
		       q->st.record ? "damaged" : q->st.status);
		return -1;
	}
	if (store__series(q->s, q->st.tid, &q->pts, &q->n, &damaged) ||
	    store__labels(q->s, q->st.tid, on_label, q))
		return -1;
	if (damaged)
		tp_err("%s: %d series block%s of '%s' damaged; going on without them", who, damaged,
		       damaged > 1 ? "s" : "", id);
	return 0;
}

int query_task__of(struct query_task *q, struct store *s, __s64 tid)
{
	int err;

	memset(q, 0, sizeof(*q));
	q->st.tid = tid;
	err = store__task_record(s, tid, &q->st.record);
	if (err)
		return err;
	q->rec = json_parse(q->st.record, strlen(q->st.record), NULL, 0);
	if (!q->rec)
		return -EINVAL;
	return store__labels(s, tid, on_label, q) ? -EIO : 0;
}

void query_task__free(struct query_task *q)
{
	for (int i = 0; i < q->nlabels; i++) {
		free(q->labels[i].key);
		free(q->labels[i].val);
	}
	free(q->pts);
	json_free(q->rec);
	free(q->st.record);
	store__close(q->s);
	memset(q, 0, sizeof(*q));
}

void query_json_task(struct jw *w, const struct store_task_row *r)
{
	char when[40];

	tp_fmt_time(when, sizeof(when), r->start_ns);
	jw_obj_begin(w);
	jw_kstr(w, "id", r->id);
	jw_kstr(w, "host", r->host ? r->host : "");
	jw_kstr(w, "status", r->status);
	jw_kstr(w, "start", when);
	jw_ku64(w, "start_ns", r->start_ns);
	jw_key(w, "wall_ns");
	r->ended ? jw_u64(w, r->wall_ns) : jw_null(w);
	jw_key(w, "exit_status");
	r->ended ? jw_i64(w, r->exit_status) : jw_null(w);
	jw_key(w, "cpu.time_ns");
	r->ended ? jw_u64(w, (__u64)r->cpu_ns) : jw_null(w);
	jw_kstr(w, "command", r->command);
	jw_obj_end(w);
}

void query_json_hist(struct jw *w, const struct store_hist_row *r)
{
	jw_key(w, r->name);
	jw_obj_begin(w);
	jw_kstr(w, "unit", r->unit);
	jw_ku64(w, "count", r->h.count);
	jw_ku64(w, "sum", r->h.sum);
	jw_ku64(w, "p50", tp_hist__quantile(&r->h, 0.5));
	jw_ku64(w, "p99", tp_hist__quantile(&r->h, 0.99));
	jw_key(w, "slots");
	jw_arr_begin(w);
	for (int i = 0; i < TP_HIST_SLOTS; i++)
		jw_u64(w, r->h.slots[i]);
	jw_arr_end(w);
	jw_obj_end(w);
}

void query_json_group(struct jw *w, const struct store_count_row *r)
{
	jw_obj_begin(w);
	jw_kstr(w, "value", r->group);
	jw_ku64(w, "tasks", (__u64)r->tasks);
	jw_kdouble(w, "sum", r->sum);
	jw_obj_end(w);
}

bool query_valid_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 200)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-'))
			return false;
	return true;
}

bool query_valid_glob(const char *g, const char **why)
{
	size_t n = strlen(g);

	if (!n || n > QUERY_GLOB_MAX) {
		*why = "1 to 253 characters";
		return false;
	}
	/* An unclosed set matches nothing locally: refused rather than a silent zero. */
	for (; *g; g++) {
		if (*g != '[')
			continue;
		g += g[1] == '^' ? 2 : 1;
		if (*g == ']')
			g++;
		g = strchr(g, ']');
		if (!g) {
			*why = "a '[' without its ']'";
			return false;
		}
	}
	return true;
}

bool query_host_option(const char *who, const char *g)
{
	const char *why;

	if (query_valid_glob(g, &why))
		return true;
	tp_err("%s: invalid --host '%.64s': %s", who, g, why);
	return false;
}

const char *query_hist_name(const char *name)
{
	const struct hist_desc *d = hist_desc_find(name);

	return d ? d->name : name;
}

const char *query_phase_at(const struct json *phases, size_t i, char *buf, size_t len)
{
	const struct json *n = json_get(json_at(phases, i - 1), "name");

	if (n && n->type == JSON_STR)
		return n->str;
	snprintf(buf, len, "#%zu", i);
	return buf;
}

void query_json_series(struct jw *w, const char *id, const struct store_task *t,
		       const struct json *rec, size_t samples, const struct series_bucket *bk,
		       int points)
{
	static const char *const stat[3] = { "min", "mean", "max" };
	const struct json *phases = json_get(rec, "phases"), *ev = json_get(rec, "events");
	char pbuf[32];

	jw_obj_begin(w);
	jw_kstr(w, "id", id);
	jw_kstr(w, "status", t->status);
	jw_ku64(w, "span_ms", t->wall_ns / 1000000);
	jw_ku64(w, "samples", samples);
	jw_key(w, "buckets");
	jw_arr_begin(w);
	for (int b = 0; b < points; b++) {
		jw_obj_begin(w);
		jw_ku64(w, "t_ms", bk[b].t_ms);
		jw_ku64(w, "samples", bk[b].count);
		for (int k = 0; k < 3; k++) {
			const double *v = k == 0 ? bk[b].min : k == 1 ? bk[b].mean : bk[b].max;

			jw_key(w, stat[k]);
			jw_obj_begin(w);
			for (int f = 0; f < SERIES_FIELDS; f++) {
				if (f == SERIES_PHASE)
					continue;
				jw_key(w, series_field_names[f]);
				bk[b].count ? jw_double(w, v[f]) : jw_null(w);
			}
			jw_obj_end(w);
		}
		/* The latest phase begun among the bucket's samples. */
		jw_key(w, "phase");
		if (bk[b].count && bk[b].max[SERIES_PHASE] > 0)
			jw_str(w, query_phase_at(phases, (size_t)bk[b].max[SERIES_PHASE], pbuf,
						 sizeof(pbuf)));
		else
			jw_null(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	/* The phases' intervals, for bands across every series (ended tasks: the record's). */
	jw_key(w, "phases");
	jw_arr_begin(w);
	for (size_t i = 0; i < json_len(phases); i++) {
		const struct json *p = json_at(phases, i);

		jw_obj_begin(w);
		jw_kstr(w, "name", json_str(p, "name"));
		jw_ku64(w, "depth", (__u64)json_num(p, "depth"));
		jw_ku64(w, "start_ms", (__u64)json_num(p, "start_ms"));
		jw_ku64(w, "end_ms",
			(__u64)json_num(p, "start_ms") + (__u64)json_num(p, "wall_ns") / 1000000);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	/* The notable moments, as the record lists them: bounded (NOTES_MAX), not per sample. */
	jw_key(w, "events");
	jw_arr_begin(w);
	for (size_t i = 0; i < json_len(ev); i++) {
		const struct json *e = json_at(ev, i);

		jw_obj_begin(w);
		jw_ku64(w, "t_ms", (__u64)json_num(e, "t_ms"));
		jw_kstr(w, "kind", json_str(e, "kind"));
		jw_ku64(w, "pid", (__u64)json_num(e, "pid"));
		jw_key(w, "code");
		jw_i64(w, (long long)json_num(e, "code"));
		jw_kstr(w, "detail", json_str(e, "detail"));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "events_dropped", (__u64)json_num(rec, "events_dropped"));
	jw_obj_end(w);
}
