/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task's notable moments, each with its time: failed exits, OOM kills, failed
 * connects, HTTP failures. The counters say how many; these say when, and which.
 * At most NOTES_MAX are kept, the first ones; the rest are counted as dropped.
 */
#ifndef TP_NOTES_H
#define TP_NOTES_H

#include <stddef.h>
#include <linux/types.h>

#include "base/json.h"

#define NOTES_MAX 256
#define NOTE_DETAIL_LEN 96

enum note_kind {
	NOTE_FAILED_EXIT,    /* code: the shell-style status (code, or 128 + signal) */
	NOTE_OOM_KILL,	     /* code: 0 */
	NOTE_CONNECT_FAILED, /* code: enum tp_conn_failure */
	NOTE_HTTP_FAILURE,   /* code: the status, 0 for a reset or a truncated body */
	NOTE_KINDS,
};

extern const char *const note_kind_names[NOTE_KINDS];

struct note {
	__u64 t_ns; /* the collector's: CLOCK_MONOTONIC; a record's: since the task started */
	enum note_kind kind;
	__u32 pid;
	__s32 code;
	char detail[NOTE_DETAIL_LEN]; /* "sh exited 3", "127.0.0.1:9 refused", ... */
};

struct notes {
	struct note *v;
	size_t n;
	__u64 dropped;
};

/* Appends n (copied), or counts it dropped when NOTES_MAX are kept or memory is short. */
void notes__add(struct notes *ns, const struct note *n);
/* dst = src with times made relative to start_ns; 0, or -ENOMEM: all counted dropped. */
int notes__rebase(struct notes *dst, const struct notes *src, __u64 start_ns);
void notes__fini(struct notes *ns);
/* "events": [{t_ms, kind, pid, code, detail}] and "events_dropped", as record members. */
void notes__write_json(struct jw *w, const struct notes *ns);
/* The record's "events" array back; 0, -EINVAL for a malformed one, or -ENOMEM. */
int notes__from_json(struct notes *ns, const struct json *arr, __u64 dropped);

#endif /* TP_NOTES_H */
