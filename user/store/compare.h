/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task against its history: each of its figures, and of each phase its history
 * ran too, beside the median and the 10th to 90th percentiles of the last N tasks
 * with the same value of a label (docs/storage.md, `compare`). The views draw it.
 */
#ifndef TP_COMPARE_H
#define TP_COMPARE_H

#include <stddef.h>

#include "base/json.h"
#include "store/store.h"

#define COMPARE_LAST_DEFAULT 20
#define COMPARE_NAME_MAX 160
/* A phase's figures compared (docs/task-record.md, phases). */
#define COMPARE_PHASE_FIGS 7

struct compare_figure {
	char name[COMPARE_NAME_MAX]; /* a metric or wall_ns; a phase's, its record key */
	double value;		     /* the task's */
	long n;			     /* tasks of the history that have it */
	double p10, p50, p90;	     /* theirs, as percentile_cont; NAN when n is 0 */
	int flag;		     /* -1 below p10, 1 above p90, else 0 */
	double *vals;		     /* while it is built */
};

struct compare_phase {
	char name[COMPARE_NAME_MAX]; /* its name; one run again NAME.2, NAME.3, ... */
	long n;			     /* tasks of the history that ran it */
	struct compare_figure figs[COMPARE_PHASE_FIGS];
	int nfigs;
};

struct compare {
	char id[COMPARE_NAME_MAX];
	char host[256];
	char by[COMPARE_NAME_MAX]; /* the label */
	char value[256];	   /* the task's value of it, "" when it has none */
	long last;		   /* the N asked for */
	long history;		   /* tasks found: 0 is "no history" */
	const char *why;	   /* with no history: why, for people */
	/* Figures every task of the history lacks are left out, as are such phases. */
	struct compare_figure *figs;
	size_t nfigs;
	struct compare_phase *phases;
	size_t nphases;
};

/*
 * The task of record rec (its id, host, start and end, metrics and phases, as
 * docs/task-record.md has them) against the last `last` tasks of store s (1 to
 * STORE_TIDS_MAX) whose label by is value (NULL: the task has no such label), that
 * ran to their end and started before the task ended, the task itself left out. 0
 * (no history is no error: c->history 0 and c->why) or -errno, said.
 * compare__free() in either case.
 */
int compare__build(struct compare *c, struct store *s, const struct json *rec, const char *by,
		   const char *value, long last);
void compare__free(struct compare *c);

#endif /* TP_COMPARE_H */
