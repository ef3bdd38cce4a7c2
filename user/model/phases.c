// SPDX-License-Identifier: GPL-2.0
/* Phases of a task: nestable intervals with figures taken as deltas at their boundaries. */
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/phases.h"

void phases__init(struct phases *ph, __u64 task_start_ns)
{
	memset(ph, 0, sizeof(*ph));
	ph->task_start_ns = task_start_ns;
}

void phases__fini(struct phases *ph)
{
	free(ph->p);
	ph->p = NULL;
	ph->n = 0;
}

static void fold_peak(struct phases *ph, __s64 peak)
{
	if (peak > ph->task_peak_mem)
		ph->task_peak_mem = peak;
	for (int i = 0; i < ph->depth; i++)
		if (peak > ph->p[ph->stack[i]].peak_mem_bytes)
			ph->p[ph->stack[i]].peak_mem_bytes = peak;
}

int phases__begin(struct phases *ph, const char *name, const struct phase_snap *now,
		  __s64 peak_since_last)
{
	struct phase *p;

	fold_peak(ph, peak_since_last);
	if (ph->depth >= PHASE_DEPTH_MAX || ph->n >= PHASES_MAX) {
		ph->rejected++;
		return -ENOSPC;
	}
	if (!ph->p) {
		ph->p = calloc(PHASES_MAX, sizeof(*ph->p));
		if (!ph->p)
			return -ENOMEM;
	}
	p = &ph->p[ph->n];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->depth = ph->depth;
	p->open = true;
	p->begin = *now;
	p->start_ms = (now->t_ns - ph->task_start_ns) / 1000000ULL;
	/* The memory in use when it begins is part of its peak. */
	p->peak_mem_bytes = 0;
	ph->stack[ph->depth++] = (int)ph->n++;
	return 0;
}

static void finish(struct phase *p, const struct phase_snap *now)
{
	struct tp_hist d = { 0 };

	p->open = false;
	p->wall_ns = now->t_ns - p->begin.t_ns;
	p->cpu_ns = now->cpu_ns > p->begin.cpu_ns ? now->cpu_ns - p->begin.cpu_ns : 0;
	p->execs = now->execs - p->begin.execs;
	p->read_bytes = now->read_bytes - p->begin.read_bytes;
	p->write_bytes = now->write_bytes - p->begin.write_bytes;
	p->runq_wait_ns = now->runq_wait_ns - p->begin.runq_wait_ns;
	for (int i = 0; i < TP_HIST_SLOTS; i++)
		d.slots[i] = now->runq.slots[i] - p->begin.runq.slots[i];
	p->runq_p99_ns = tp_hist__quantile(&d, 0.99);
	p->psi = psi_totals__delta(&p->begin.psi, &now->psi);
	p->host_psi = psi_totals__delta(&p->begin.host_psi, &now->host_psi);
}

int phases__end(struct phases *ph, const char *name, const struct phase_snap *now,
		__s64 peak_since_last)
{
	int at = -1;

	fold_peak(ph, peak_since_last);
	for (int i = ph->depth - 1; i >= 0 && at < 0; i--)
		if (!strcmp(ph->p[ph->stack[i]].name, name))
			at = i;
	if (at < 0) {
		ph->rejected++;
		return -ENOENT;
	}
	while (ph->depth > at) {
		struct phase *p = &ph->p[ph->stack[--ph->depth]];

		p->unfinished = ph->depth > at;
		finish(p, now);
	}
	return 0;
}

void phases__close_all(struct phases *ph, const struct phase_snap *now, __s64 peak_since_last)
{
	fold_peak(ph, peak_since_last);
	while (ph->depth > 0) {
		struct phase *p = &ph->p[ph->stack[--ph->depth]];

		p->unfinished = true;
		finish(p, now);
	}
}

const char *phases__current(const struct phases *ph)
{
	return ph->depth ? ph->p[ph->stack[ph->depth - 1]].name : "";
}

/* A phase's own figures, by their names in the record. */
static const struct {
	const char *name;
	size_t off;
} phase_fields[] = {
	{ "start_ms", offsetof(struct phase, start_ms) },
	{ "wall_ns", offsetof(struct phase, wall_ns) },
	{ "cpu_ns", offsetof(struct phase, cpu_ns) },
	{ "runq_p99_ns", offsetof(struct phase, runq_p99_ns) },
	{ "runq_wait_ns", offsetof(struct phase, runq_wait_ns) },
	{ "read_bytes", offsetof(struct phase, read_bytes) },
	{ "write_bytes", offsetof(struct phase, write_bytes) },
	{ "execs", offsetof(struct phase, execs) },
};

void phases__write_json(struct jw *w, const struct phases *ph)
{
	jw_arr_begin(w);
	for (size_t i = 0; i < ph->n; i++) {
		const struct phase *p = &ph->p[i];

		jw_obj_begin(w);
		jw_kstr(w, "name", p->name);
		jw_ku64(w, "depth", (__u64)p->depth);
		for (size_t f = 0; f < ARRAY_SIZE(phase_fields); f++)
			jw_ku64(w, phase_fields[f].name,
				*(const __u64 *)((const char *)p + phase_fields[f].off));
		jw_ku64(w, "peak_mem_bytes", p->peak_mem_bytes > 0 ? (__u64)p->peak_mem_bytes : 0);
		if (p->psi.have) {
			jw_key(w, "pressure");
			psi_totals__write_json(w, &p->psi);
		}
		if (p->host_psi.have) {
			jw_key(w, "host_pressure");
			psi_totals__write_json(w, &p->host_psi);
		}
		jw_key(w, "unfinished");
		jw_bool(w, p->unfinished);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

int phases__from_json(struct phases *ph, const struct json *arr)
{
	size_t n = json_len(arr);

	memset(ph, 0, sizeof(*ph));
	if (!n)
		return 0;
	ph->p = calloc(n < PHASES_MAX ? n : PHASES_MAX, sizeof(*ph->p));
	if (!ph->p)
		return -ENOMEM;
	for (size_t i = 0; i < n && i < PHASES_MAX; i++) {
		const struct json *e = json_at(arr, i), *u = json_get(e, "unfinished");
		struct phase *p = &ph->p[ph->n++];

		snprintf(p->name, sizeof(p->name), "%s", json_str(e, "name"));
		p->depth = (int)json_num(e, "depth");
		for (size_t f = 0; f < ARRAY_SIZE(phase_fields); f++)
			*(__u64 *)((char *)p + phase_fields[f].off) =
				(__u64)json_num(e, phase_fields[f].name);
		p->peak_mem_bytes = (__s64)json_num(e, "peak_mem_bytes");
		psi_totals__from_json(&p->psi, json_get(e, "pressure"));
		psi_totals__from_json(&p->host_psi, json_get(e, "host_pressure"));
		p->unfinished = u && u->type == JSON_BOOL && u->b;
	}
	return 0;
}
