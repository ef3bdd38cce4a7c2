// SPDX-License-Identifier: GPL-2.0
/* A task's notable moments: kept in order, bounded, written to and read from records. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/notes.h"

const char *const note_kind_names[NOTE_KINDS] = {
	[NOTE_FAILED_EXIT] = "failed_exit",
	[NOTE_OOM_KILL] = "oom_kill",
	[NOTE_CONNECT_FAILED] = "connect_failed",
	[NOTE_HTTP_FAILURE] = "http_failure",
};

void notes__add(struct notes *ns, const struct note *n)
{
	if (ns->n >= NOTES_MAX) {
		ns->dropped++;
		return;
	}
	if (!ns->v) {
		ns->v = calloc(NOTES_MAX, sizeof(*ns->v));
		if (!ns->v) {
			ns->dropped++;
			return;
		}
	}
	ns->v[ns->n++] = *n;
}

int notes__rebase(struct notes *dst, const struct notes *src, __u64 start_ns)
{
	memset(dst, 0, sizeof(*dst));
	dst->dropped = src->dropped;
	if (!src->n)
		return 0;
	dst->v = calloc(src->n, sizeof(*dst->v));
	if (!dst->v) {
		dst->dropped += src->n;
		return -ENOMEM;
	}
	for (size_t i = 0; i < src->n; i++) {
		dst->v[i] = src->v[i];
		dst->v[i].t_ns = src->v[i].t_ns > start_ns ? src->v[i].t_ns - start_ns : 0;
	}
	dst->n = src->n;
	return 0;
}

void notes__fini(struct notes *ns)
{
	free(ns->v);
	memset(ns, 0, sizeof(*ns));
}

void notes__write_json(struct jw *w, const struct notes *ns)
{
	jw_key(w, "events");
	jw_arr_begin(w);
	for (size_t i = 0; i < ns->n; i++) {
		const struct note *n = &ns->v[i];

		jw_obj_begin(w);
		jw_ku64(w, "t_ms", n->t_ns / 1000000);
		jw_kstr(w, "kind", note_kind_names[n->kind]);
		jw_ku64(w, "pid", n->pid);
		jw_key(w, "code");
		jw_i64(w, n->code);
		jw_kstr(w, "detail", n->detail);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "events_dropped", ns->dropped);
}

int notes__from_json(struct notes *ns, const struct json *arr, __u64 dropped)
{
	size_t len = json_len(arr);

	memset(ns, 0, sizeof(*ns));
	ns->dropped = dropped;
	if (!arr)
		return 0;
	if (arr->type != JSON_ARR || len > NOTES_MAX)
		return -EINVAL;
	if (!len)
		return 0;
	ns->v = calloc(len, sizeof(*ns->v));
	if (!ns->v)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		const struct json *e = json_at(arr, i);
		const char *kind = json_str(e, "kind");
		struct note *n = &ns->v[i];
		int k = 0;

		while (k < NOTE_KINDS && strcmp(kind, note_kind_names[k]))
			k++;
		if (k == NOTE_KINDS) {
			notes__fini(ns);
			return -EINVAL;
		}
		n->kind = (enum note_kind)k;
		n->t_ns = (__u64)json_num(e, "t_ms") * 1000000ULL;
		n->pid = (__u32)json_num(e, "pid");
		n->code = (__s32)json_num(e, "code");
		snprintf(n->detail, sizeof(n->detail), "%s", json_str(e, "detail"));
		ns->n++;
	}
	return 0;
}
