/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The task's built-in figures, described once: name, unit, kind, where the value is
 * measured and where it lives in the record. The record's writer and reader, its
 * "sources", the store's histograms and the queries' names all read these tables.
 * Network and HTTP figures, per remote host, are net.c's (net_figures__write_metrics).
 */
#ifndef TP_METRICS_H
#define TP_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "model/task.h"

enum metric_kind {
	METRIC_COUNTER, /* only grows over the task's life */
	METRIC_GAUGE,	/* a level: a peak, an average */
};

struct metric_desc {
	const char *name;
	const char *unit; /* ns, count, bytes, cores */
	enum metric_kind kind;
	/* Its line in the record's "sources", or NULL when a metric above shares it. */
	const char *source_key;
	const char *source; /* NULL: the record's own (mem.peak_bytes says which) */
	/* The value: a __u64 of struct task_figures at fig_off, or through get/set. */
	ptrdiff_t fig_off;
	/* false when the record has no value (cpu.user_ns without cpu.stat). */
	bool (*get)(const struct task_record *t, double *v);
	void (*set)(struct task_record *t, double v); /* NULL: derived, nothing to set */
	bool real;				      /* written as a fraction, not an integer */
};

extern const struct metric_desc metric_descs[];
extern const size_t metric_descs_n;

struct hist_desc {
	const char *name;
	const char *alias; /* what a user may type for it (`taskprobe hist ID runq`) */
	const char *unit;
	const char *source; /* NULL: listed with its metrics' source */
	struct tp_hist *(*at)(struct task_record *t);
};

extern const struct hist_desc hist_descs[];
extern const size_t hist_descs_n;

/* The figure of a metric kept in struct task_figures (fig_off >= 0), exactly. */
__u64 metric_desc__fig(const struct metric_desc *d, const struct task_record *t);
/* The value of d in t: false when the record has none. */
bool metric_desc__get(const struct metric_desc *d, const struct task_record *t, double *v);
void metric_desc__set(const struct metric_desc *d, struct task_record *t, double v);
/* The histogram named name or its alias; NULL if none. */
const struct hist_desc *hist_desc_find(const char *name);

/* A figure taskprobe measures (a descriptor's, or net.* and http.*), not the task's own. */
bool metric_is_builtin(const char *name);

#endif /* TP_METRICS_H */
