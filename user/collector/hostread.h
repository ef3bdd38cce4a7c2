/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host's side of a task's context, read from the kernel's files, no BPF: the
 * host's busy CPU (the root cgroup's cpu.stat, else /proc/stat), pressure files, the
 * CPU of every cgroup and of every process at a moment; and from two such moments,
 * who else used the host's CPU in between (model/hostctx.h).
 */
#ifndef TP_HOSTREAD_H
#define TP_HOSTREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "model/hostctx.h"

/* The host's busy CPU time so far, every CPU summed, in us: 0, or -errno. */
int host_read_busy_us(const char *root, __u64 *us);
/*
 * For the others' cores between two reads: the root's busy CPU (its ticks) and the sum
 * of its children's cpu.stat usage (the scheduler's clock), in us: 0, or -errno.
 */
int host_read_usage(const char *root, __u64 *root_us, __u64 *level1_us);
/* The pressure files of cgroup dir (NULL: the host's /proc/pressure/): what was read. */
void psi_read(const char *dir, struct psi_totals *out);

struct cg_usage {
	char *rel;	/* below the cgroup2 mount: "" for the root, "/a/b" */
	__u64 usage_us; /* cpu.stat's usage_usec */
};

struct proc_cpu {
	int pid;
	__u64 start_ticks; /* since boot, with pid the process's identity */
	__u64 cpu_ticks;   /* utime + stime, USER_HZ */
	char comm[16];
};

/* The host at one moment. */
struct host_snap {
	__u64 t_ns; /* CLOCK_MONOTONIC */
	__u64 busy_us;
	bool have_busy;
	struct psi_totals psi;
	struct cg_usage *cgs; /* sorted by rel */
	size_t ncgs;
	struct proc_cpu *procs; /* sorted by pid */
	size_t nprocs;
};

/*
 * Reads the host now: busy CPU and pressure, and when full every cgroup's usage
 * under root (at most 16384) and every process's CPU but those in the subtree of the
 * cgroup dir task (NULL: none). 0, or -errno when nothing of it could be read; a
 * part that could not is left empty.
 */
int host_snap__take(struct host_snap *s, const char *root, bool full, const char *task);
void host_snap__free(struct host_snap *s);

/* What a daemon knows of its other tasks, for naming them. */
struct host_tasks {
	/* A cgroup below the mount named as a task's id (into id), or false: not a task's. */
	bool (*name)(void *ctx, const char *rel, char *id, size_t len);
	/*
	 * Tasks' cgroups removed since `since` (CLOCK_MONOTONIC ns), each with its usage
	 * as last read: up to max into out (rel owned by the caller), how many.
	 */
	size_t (*gone)(void *ctx, __u64 since, struct cg_usage *out, size_t max);
	void *ctx;
};

/*
 * From a to b: the CPU the rest of the host used (the sum of every cgroup's own but the
 * task's subtree; the root's own from its ticks), the host's (that and task_cpu_ns over
 * the same time), and the largest others: cgroups by their own CPU (a task's cgroup,
 * named by tasks or under a "taskprobe" parent, with all below it, also one removed
 * meanwhile that tasks remembers; the task's
 * own subtree, task_rel, left out) and programs by their processes' CPU.
 */
void host_context__compute(struct host_context *out, const struct host_snap *a,
			   const struct host_snap *b, const char *task_rel, __u64 task_cpu_ns,
			   const struct host_tasks *tasks);

#endif /* TP_HOSTREAD_H */
