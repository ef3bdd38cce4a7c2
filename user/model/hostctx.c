// SPDX-License-Identifier: GPL-2.0
/* The host around a task: its figures, their JSON (hostctx.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/hostctx.h"

const char *const psi_resource_names[PSI_RESOURCES] = { "cpu", "memory", "io" };
const char *const host_other_kinds[3] = { "task", "cgroup", "program" };

/* The total=N of the line that starts with word, or -1. */
static int line_total(const char *text, const char *word, __u64 *out)
{
	size_t n = strlen(word);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *t;
		char *end;

		if (strncmp(l, word, n) || l[n] != ' ')
			continue;
		t = strstr(l, " total=");
		if (!t || (strchr(l, '\n') && t > strchr(l, '\n')))
			return -1;
		*out = strtoull(t + 7, &end, 10);
		return end == t + 7 ? -1 : 0;
	}
	return -1;
}

int psi_parse(const char *text, __u64 *some_us, __u64 *full_us)
{
	*some_us = *full_us = 0;
	if (line_total(text, "some", some_us))
		return -EINVAL;
	line_total(text, "full", full_us);
	return 0;
}

struct psi_totals psi_totals__delta(const struct psi_totals *a, const struct psi_totals *b)
{
	struct psi_totals d = { .have = a->have & b->have };

	for (int r = 0; r < PSI_RESOURCES; r++) {
		if (!(d.have & (1u << r)))
			continue;
		d.some_us[r] = b->some_us[r] > a->some_us[r] ? b->some_us[r] - a->some_us[r] : 0;
		d.full_us[r] = b->full_us[r] > a->full_us[r] ? b->full_us[r] - a->full_us[r] : 0;
	}
	return d;
}

void psi_totals__write_json(struct jw *w, const struct psi_totals *p)
{
	char key[32];

	jw_obj_begin(w);
	for (int r = 0; r < PSI_RESOURCES; r++) {
		if (!(p->have & (1u << r)))
			continue;
		snprintf(key, sizeof(key), "%s_some_ns", psi_resource_names[r]);
		jw_ku64(w, key, p->some_us[r] * 1000);
		snprintf(key, sizeof(key), "%s_full_ns", psi_resource_names[r]);
		jw_ku64(w, key, p->full_us[r] * 1000);
	}
	jw_obj_end(w);
}

void psi_totals__from_json(struct psi_totals *p, const struct json *o)
{
	char key[32];

	memset(p, 0, sizeof(*p));
	for (int r = 0; o && r < PSI_RESOURCES; r++) {
		snprintf(key, sizeof(key), "%s_some_ns", psi_resource_names[r]);
		if (!json_get(o, key))
			continue;
		p->have |= 1u << r;
		p->some_us[r] = json_u64(o, key) / 1000;
		snprintf(key, sizeof(key), "%s_full_ns", psi_resource_names[r]);
		p->full_us[r] = json_u64(o, key) / 1000;
	}
}

void host_context__write_json(struct jw *w, const struct host_context *h)
{
	jw_key(w, "host_context");
	if (!h->have_cpu && !h->psi.have && !h->host_psi.have) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	if (h->have_cpu) {
		jw_ku64(w, "host_cpu_ns", h->host_cpu_ns);
		jw_ku64(w, "other_cpu_ns", h->other_cpu_ns);
		jw_key(w, "others");
		jw_arr_begin(w);
		for (int i = 0; i < h->nothers; i++) {
			jw_obj_begin(w);
			jw_kstr(w, "kind", host_other_kinds[h->others[i].kind]);
			jw_kstr(w, "name", h->others[i].name);
			jw_ku64(w, "cpu_ns", h->others[i].cpu_ns);
			if (h->others[i].kind == HOST_OTHER_PROGRAM)
				jw_ku64(w, "processes", (__u64)h->others[i].processes);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	jw_key(w, "pressure");
	psi_totals__write_json(w, &h->psi);
	jw_key(w, "host_pressure");
	psi_totals__write_json(w, &h->host_psi);
	if (h->note[0])
		jw_kstr(w, "note", h->note);
	jw_obj_end(w);
}

void host_context__from_json(struct host_context *h, const struct json *o)
{
	const struct json *others = json_get(o, "others");

	memset(h, 0, sizeof(*h));
	if (!o || o->type != JSON_OBJ)
		return;
	h->have_cpu = json_get(o, "other_cpu_ns") != NULL;
	h->host_cpu_ns = json_u64(o, "host_cpu_ns");
	h->other_cpu_ns = json_u64(o, "other_cpu_ns");
	for (size_t i = 0; i < json_len(others) && h->nothers < HOST_OTHERS_MAX; i++) {
		const struct json *e = json_at(others, i);
		struct host_other *x = &h->others[h->nothers];
		const char *kind = json_str(e, "kind");

		x->kind = !strcmp(kind, "task")	     ? HOST_OTHER_TASK
			  : !strcmp(kind, "program") ? HOST_OTHER_PROGRAM
						     : HOST_OTHER_CGROUP;
		snprintf(x->name, sizeof(x->name), "%s", json_str(e, "name"));
		x->cpu_ns = json_u64(e, "cpu_ns");
		x->processes = (int)json_num(e, "processes");
		h->nothers++;
	}
	psi_totals__from_json(&h->psi, json_get(o, "pressure"));
	psi_totals__from_json(&h->host_psi, json_get(o, "host_pressure"));
	snprintf(h->note, sizeof(h->note), "%s", json_str(o, "note"));
}
