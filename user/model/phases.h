/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Phases of a task (checkout, build, test, upload): named, nestable intervals whose
 * figures are deltas of the task's live aggregates taken at the boundaries.
 */
#ifndef TP_PHASES_H
#define TP_PHASES_H

#include <stdbool.h>
#include <linux/types.h>

#include "base/hist.h"
#include "base/json.h"
#include "model/hostctx.h"
#include "model/user_metrics.h"

#define PHASES_MAX 1000
#define PHASE_DEPTH_MAX 32

/* The task's figures at one instant. */
struct phase_snap {
	__u64 t_ns;
	__u64 cpu_ns;
	__u64 execs;
	__u64 read_bytes;
	__u64 write_bytes;
	__u64 runq_wait_ns;
	struct tp_hist runq;
	struct psi_totals psi;	    /* the task's cgroup's pressure totals */
	struct psi_totals host_psi; /* the host's */
};

struct phase {
	char name[UM_NAME_MAX + 1];
	int depth;
	bool open;
	bool unfinished; /* still open when the task ended */
	struct phase_snap begin;
	__u64 start_ms; /* since the task started */
	__u64 wall_ns;
	__u64 cpu_ns;
	__u64 runq_p99_ns;
	__u64 runq_wait_ns;
	__u64 read_bytes;
	__u64 write_bytes;
	__u64 execs;
	__s64 peak_mem_bytes;
	struct psi_totals psi;	    /* the task's stalls while it was open */
	struct psi_totals host_psi; /* the host's over the same time */
};

struct phases {
	struct phase *p;
	size_t n;
	int stack[PHASE_DEPTH_MAX]; /* indexes of open phases, innermost last */
	int depth;
	__u64 task_start_ns;
	__s64 task_peak_mem; /* the task's own peak survives the per-phase resets */
	__u64 rejected;	     /* ends of phases that are not open, too deep, too many */
};

void phases__init(struct phases *ph, __u64 task_start_ns);
void phases__fini(struct phases *ph);
/*
 * Every boundary folds the memory peak since the last one into the open phases and
 * the task, then restarts the peak from the current resident size.
 */
int phases__begin(struct phases *ph, const char *name, const struct phase_snap *now,
		  __s64 peak_since_last);
/* Ends the innermost open phase of that name, and any opened inside it (unfinished). */
int phases__end(struct phases *ph, const char *name, const struct phase_snap *now,
		__s64 peak_since_last);
/* The task ended: closes every open phase, flagged unfinished. */
void phases__close_all(struct phases *ph, const struct phase_snap *now, __s64 peak_since_last);
/* The phase open at t_ms (innermost), or NULL. */
const char *phases__current(const struct phases *ph);
void phases__write_json(struct jw *w, const struct phases *ph);
/* Phases as a record holds them (what phases__write_json wrote); 0 or -ENOMEM. */
int phases__from_json(struct phases *ph, const struct json *arr);

#endif /* TP_PHASES_H */
