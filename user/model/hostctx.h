/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host around a task while it ran: the CPU the rest of the host used, its largest
 * consumers by name (other tasks, cgroups, programs), and pressure stall figures (PSI)
 * of the task's cgroup and of the host over the same time (docs/task-record.md, "host").
 */
#ifndef TP_HOSTCTX_H
#define TP_HOSTCTX_H

#include <stdbool.h>
#include <linux/types.h>

#include "base/json.h"

/* PSI's resources, in the order of their files: cpu, memory, io. */
#define PSI_RESOURCES 3
extern const char *const psi_resource_names[PSI_RESOURCES];

/* A pressure file's "some" and "full" totals, in us since the cgroup (or boot) began. */
struct psi_totals {
	__u64 some_us[PSI_RESOURCES];
	__u64 full_us[PSI_RESOURCES];
	unsigned have; /* bit r: resource r was read */
};

/*
 * One pressure file's text ("some avg10=... total=N\nfull ... total=N"): its totals,
 * 0; -EINVAL when it has no "some" total ("full" is absent before Linux 5.13's cpu).
 */
int psi_parse(const char *text, __u64 *some_us, __u64 *full_us);
/* b - a for each resource both have (what one read to the next stalled). */
struct psi_totals psi_totals__delta(const struct psi_totals *a, const struct psi_totals *b);
/* {"cpu_some_ns": ..., "cpu_full_ns": ..., ...} of the resources read. */
void psi_totals__write_json(struct jw *w, const struct psi_totals *p);
void psi_totals__from_json(struct psi_totals *p, const struct json *o);

enum host_other_kind { HOST_OTHER_TASK, HOST_OTHER_CGROUP, HOST_OTHER_PROGRAM };
extern const char *const host_other_kinds[3];

#define HOST_OTHERS_MAX 12
#define HOST_OTHER_NAME 256

/* One of the largest other consumers of CPU while the task ran. */
struct host_other {
	enum host_other_kind kind;
	char name[HOST_OTHER_NAME]; /* a task's id, a cgroup's path, a program's name */
	__u64 cpu_ns;
	int processes; /* a program's: how many of its processes were seen */
};

struct host_context {
	bool have_cpu;	    /* host_cpu_ns and other_cpu_ns were measured */
	__u64 host_cpu_ns;  /* every CPU of the host, busy, over the task's life */
	__u64 other_cpu_ns; /* of which not the task's */
	struct host_other others[HOST_OTHERS_MAX]; /* tasks and cgroups, then programs */
	int nothers;
	struct psi_totals psi;	    /* the task's cgroup's stalls over its life */
	struct psi_totals host_psi; /* the host's over the same time */
	char note[160];		    /* why a part is missing or partial, or "" */
};

/* The "host" object of the record (nothing when nothing was measured). */
void host_context__write_json(struct jw *w, const struct host_context *h);
void host_context__from_json(struct host_context *h, const struct json *o);

#endif /* TP_HOSTCTX_H */
