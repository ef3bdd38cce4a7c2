/* SPDX-License-Identifier: GPL-2.0 */
/* A task's record: its identity, its figures, how it ended; printed by summary.h, as JSON by task_json.h. */
#ifndef TP_TASK_H
#define TP_TASK_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/json.h"
#include "base/util.h"
#include "model/figures.h"
#include "model/hostctx.h"
#include "model/net_figures.h"
#include "model/notes.h"
#include "model/phases.h"
#include "model/procs.h"
#include "model/rules.h"
#include "model/user_metrics.h"

#define TASK_RECORD_SCHEMA 1
#define TASK_FAULTS_MAX 8
#define TASK_FAULT_LEN 400

enum task_end {
	TASK_EXITED,
	TASK_SIGNALED,
	TASK_NOT_FOUND,	  /* CMD was not found: exit status 127 */
	TASK_EXEC_FAILED, /* CMD could not be executed (permissions, format): 126 */
	TASK_ENDED,	  /* a cgroup tracked by `task start`, ended by `task end` */
	TASK_INTERRUPTED, /* the daemon stopped before `task end`: the figures so far */
	TASK_RUNNING,	  /* not ended: a running task's record so far (never stored) */
	TASK_END_KINDS,
};

/* The record's and the store's "status" of an ended task: "exited", "signaled", ... */
extern const char *const task_status_names[TASK_END_KINDS];

enum leftover_action {
	LEFTOVER_NONE,	 /* nothing outlived the main process */
	LEFTOVER_EXITED, /* leftovers ended by themselves within the grace period */
	LEFTOVER_KILLED, /* killed through cgroup.kill */
	LEFTOVER_KEPT,	 /* --keep-leftovers: left running, no longer counted */
};

struct label {
	char *key;
	char *val;
};

struct task_record {
	char id[TP_ID_MAX + 1];
	char *const *argv;
	int argc;
	struct label labels[TP_LABELS_MAX];
	int nlabels;
	char cgroup[PATH_MAX];
	char host[256];
	__u64 start_real_ns;
	__u64 wall_ns;	    /* start to the last process gone (or given up on) */
	__u64 main_wall_ns; /* start to the main process's exit */
	enum task_end end;
	int exit_code; /* TASK_EXITED */
	int signal;    /* TASK_SIGNALED */
	struct task_figures fig;
	struct net_figures net; /* owned: freed by task_record__fini */
	bool all_endpoints;	/* the summary lists every endpoint (show), not the failing */
	bool have_cpu_stat;
	struct cg_cpu_stat cpu_stat;
	const char *cpu_stat_note; /* why cpu.stat is old or missing (cgroup removed), or NULL */
	bool have_memory_peak;	   /* the kernel's charge, preferred to BPF's resident pages */
	__u64 memory_peak;
	const char *memory_peak_source; /* cgroup:memory.peak, cgroup1:memory.max_usage_in_bytes */
	struct program_stat *progs;	/* sorted by CPU, most first */
	size_t nprogs;
	double peak_cores;	     /* most cores in use over one series interval */
	const struct phases *phases; /* may be NULL */
	const struct um_table *um;   /* the metrics socket's harvest; may be NULL */
	const struct rules *rules;   /* for log anchors; may be NULL */
	__u64 exec_args_truncated;
	char **argv_owned;	     /* set by task_record__from_json */
	struct phases *phases_owned; /* set by task_record__from_json */
	struct um_table *um_owned;   /* set by task_record__from_json */
	struct rules
		*rules_owned; /* set by task_record__from_json: rule names of the anchors only */
	int leftovers;
	enum leftover_action leftover_action;
	__u64 lost_total;
	__u64 skipped_runs;	  /* BPF program runs the kernel skipped (recursion), host-wide */
	bool by_daemon;		  /* the host daemon's collector, not one embedded in `run` */
	struct notes notes;	  /* notable moments, times since the start; owned */
	struct procs procs;	  /* processes, the longest-lived, times since the start; owned */
	struct host_context hctx; /* the host around the task while it ran */
	unsigned collect;	  /* what was collected (collect.h); 0: everything */
	/*
	 * What went wrong on taskprobe's side while the task ran (no BPF, a store that
	 * failed, a daemon that refused): each said once as a warning, kept in the record.
	 */
	char faults[TASK_FAULTS_MAX][TASK_FAULT_LEN];
	int nfaults;
};

/* A fault of the collector's side, into the record (printf-style; extra ones dropped). */
void task_record__add_fault(struct task_record *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* mem.peak_bytes and where it came from. */
__u64 task_record__mem_peak(const struct task_record *t, const char **source);
/* Whether the figure name (a metric or histogram) was collected for t (collect.h). */
bool task_record__collected(const struct task_record *t, const char *name);
/* The shell-style status: the code, or 128 + signal. */
/* How the main process ended: its wait status, or the errno of its failed exec. */
void task_record__set_end(struct task_record *t, int wstatus, int exec_err);
int task_record__exit_status(const struct task_record *t);
/* Copies and sorts the program table into t (owned by t; free with task_record__fini). */
int task_record__set_programs(struct task_record *t, const struct program_stat *p, size_t n);
void task_record__fini(struct task_record *t);

#endif /* TP_TASK_H */
