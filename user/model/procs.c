// SPDX-License-Identifier: GPL-2.0
/* A task's processes: the longest-lived kept in a bounded heap, written to records. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/procs.h"

const char *const proc_end_names[PROC_END_KINDS] = {
	[PROC_EXITED] = "exited",
	[PROC_ALIVE] = "alive",
	[PROC_LEFT] = "left",
};

static __u64 span_of(const struct proc_span *p)
{
	return p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;
}

static void swap(struct proc_span *a, struct proc_span *b)
{
	struct proc_span t = *a;

	*a = *b;
	*b = t;
}

static void sift_down(struct procs *ps, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < ps->n && span_of(&ps->v[l]) < span_of(&ps->v[m]))
			m = l;
		if (r < ps->n && span_of(&ps->v[r]) < span_of(&ps->v[m]))
			m = r;
		if (m == i)
			return;
		swap(&ps->v[i], &ps->v[m]);
		i = m;
	}
}

void procs__add(struct procs *ps, const struct proc_span *p)
{
	size_t i;

	if (ps->n == PROCS_MAX) {
		/* Full: the shortest kept (the heap's root) gives way to a longer one. */
		ps->dropped++;
		if (span_of(p) > span_of(&ps->v[0])) {
			ps->v[0] = *p;
			sift_down(ps, 0);
		}
		return;
	}
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 16;
		struct proc_span *v = realloc(ps->v, cap * sizeof(*v));

		if (!v) {
			ps->dropped++;
			return;
		}
		ps->v = v;
		ps->cap = cap;
	}
	i = ps->n++;
	ps->v[i] = *p;
	while (i && span_of(&ps->v[(i - 1) / 2]) > span_of(&ps->v[i])) {
		swap(&ps->v[(i - 1) / 2], &ps->v[i]);
		i = (i - 1) / 2;
	}
}

static int by_start(const void *a, const void *b)
{
	const struct proc_span *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int procs__rebase(struct procs *dst, const struct procs *src, __u64 start_ns)
{
	memset(dst, 0, sizeof(*dst));
	dst->dropped = src->dropped;
	if (!src->n)
		return 0;
	dst->v = malloc(src->n * sizeof(*dst->v));
	if (!dst->v) {
		dst->dropped += src->n;
		return -ENOMEM;
	}
	for (size_t i = 0; i < src->n; i++) {
		struct proc_span *p = &dst->v[i];

		*p = src->v[i];
		p->start_ns = p->start_ns > start_ns ? p->start_ns - start_ns : 0;
		p->end_ns = p->end_ns > start_ns ? p->end_ns - start_ns : 0;
		if (p->end_ns < p->start_ns)
			p->end_ns = p->start_ns;
	}
	dst->n = dst->cap = src->n;
	qsort(dst->v, dst->n, sizeof(*dst->v), by_start);
	return 0;
}

void procs__fini(struct procs *ps)
{
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

void procs__write_json(struct jw *w, const struct procs *ps)
{
	jw_key(w, "processes");
	jw_arr_begin(w);
	for (size_t i = 0; i < ps->n; i++) {
		const struct proc_span *p = &ps->v[i];

		jw_obj_begin(w);
		jw_ku64(w, "pid", p->pid);
		jw_ku64(w, "ppid", p->ppid);
		jw_kstr(w, "command", p->command);
		jw_key(w, "start_ms");
		jw_double(w, (double)(p->start_ns / 1000) / 1000.0);
		jw_key(w, "end_ms");
		jw_double(w, (double)(p->end_ns / 1000) / 1000.0);
		jw_ku64(w, "cpu_ns", p->cpu_ns);
		jw_kstr(w, "end", proc_end_names[p->end]);
		if (p->end == PROC_EXITED) {
			jw_key(w, "exit");
			jw_i64(w, p->exit);
		}
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "processes_dropped", ps->dropped);
}

int procs__from_json(struct procs *ps, const struct json *arr, __u64 dropped)
{
	size_t len = json_len(arr);

	memset(ps, 0, sizeof(*ps));
	ps->dropped = dropped;
	if (!arr)
		return 0;
	if (arr->type != JSON_ARR || len > PROCS_MAX)
		return -EINVAL;
	if (!len)
		return 0;
	ps->v = calloc(len, sizeof(*ps->v));
	if (!ps->v)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		const struct json *e = json_at(arr, i);
		const char *end = json_str(e, "end");
		struct proc_span *p = &ps->v[i];
		int k = 0;

		while (k < PROC_END_KINDS && strcmp(end, proc_end_names[k]))
			k++;
		if (k == PROC_END_KINDS || json_num(e, "start_ms") < 0 ||
		    json_num(e, "end_ms") < json_num(e, "start_ms")) {
			procs__fini(ps);
			return -EINVAL;
		}
		p->end = (enum proc_end)k;
		p->pid = (__u32)json_num(e, "pid");
		p->ppid = (__u32)json_num(e, "ppid");
		p->start_ns = (__u64)(json_num(e, "start_ms") * 1e6 + 0.5);
		p->end_ns = (__u64)(json_num(e, "end_ms") * 1e6 + 0.5);
		p->cpu_ns = (__u64)json_num(e, "cpu_ns");
		p->exit = (__s32)json_num(e, "exit");
		snprintf(p->command, sizeof(p->command), "%s", json_str(e, "command"));
		ps->n++;
	}
	ps->cap = ps->n;
	return 0;
}
