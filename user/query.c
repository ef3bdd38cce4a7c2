// SPDX-License-Identifier: GPL-2.0
/* The queries' JSON rows, shared by the CLI and the HTTP API. */
#include <string.h>

#include "hist.h"
#include "metrics.h"
#include "query.h"
#include "util.h"

void query_json_task(struct jw *w, const struct store_task_row *r)
{
	char when[40];

	tp_fmt_time(when, sizeof(when), r->start_ns);
	jw_obj_begin(w);
	jw_kstr(w, "id", r->id);
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
	jw_ku64(w, "p50", hist_quantile(&r->h, 0.5));
	jw_ku64(w, "p99", hist_quantile(&r->h, 0.99));
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

const char *query_hist_name(const char *name)
{
	const struct hist_desc *d = hist_desc_find(name);

	return d ? d->name : name;
}
