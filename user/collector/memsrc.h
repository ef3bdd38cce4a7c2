/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a task's memory in use and its peaks come from: its cgroup's own files when it
 * has them (cgroup2's memory controller, or the task's v1 memory cgroup on hybrid
 * hosts), else BPF's sum of resident pages, for which the collector then attaches
 * rss_stat (collector__need_rss). The cgroup's figure is the kernel's charge, the
 * one mem.peak_bytes reports, so the series and the phases agree with it.
 */
#ifndef TP_MEMSRC_H
#define TP_MEMSRC_H

#include <limits.h>
#include <linux/types.h>

enum memsrc_kind {
	MEMSRC_BPF, /* no cgroup figures: the collector's resident-page sum */
	MEMSRC_V2,  /* memory.current; memory.peak reset through a descriptor of our own */
	MEMSRC_V1,  /* memory.usage_in_bytes; memory.max_usage_in_bytes, reset by a write */
};

struct memsrc {
	enum memsrc_kind kind;
	char dir[PATH_MAX];
	int peak_fd; /* v2: memory.peak, whose resets only this descriptor sees */
	/* v1: the highest watermark read before a reset (the task's peak is the larger) */
	__u64 v1_peak;
};

/*
 * Chooses the source of a task whose cgroup2 directory is cgroup and whose v1 memory
 * cgroup is memcg ("" or NULL: none). v2 needs a kernel whose memory.peak takes a
 * reset per descriptor (6.12): else, like a cgroup without figures, MEMSRC_BPF.
 */
void memsrc__open(struct memsrc *m, const char *cgroup, const char *memcg);
void memsrc__close(struct memsrc *m);
/* Bytes in use now; -errno (MEMSRC_BPF: -ENOTSUP, the collector has them). */
int memsrc__now(const struct memsrc *m, __u64 *bytes);
/* The peak since the last take (or the open), then a new one from the usage now. */
int memsrc__take_peak(struct memsrc *m, __u64 *bytes);
/*
 * v1: the task's peak, from the watermark now and those read before resets. The v1
 * watermark is the cgroup's, not a descriptor's: a phase boundary resets it.
 */
int memsrc__v1_task_peak(const struct memsrc *m, __u64 *bytes);

#endif /* TP_MEMSRC_H */
