/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a collector collects (config collect, run --collect): cpu (CPU time and
 * run-queue wait, at thread exit and by the task iterator), io (the block layer), mem
 * (resident memory, OOM kills), net (TCP, DNS), http (TLS and plaintext HTTP; needs
 * net), runq (the run-queue histogram, the only one with a program on every context
 * switch: not collected unless asked for; the default is all but runq).
 * Processes (fork, exec, exit) and cgroups are always followed: they make the task.
 * The programs of what is not collected are neither loaded nor attached, and a
 * record leaves out the figures it did not collect.
 */
#ifndef TP_COLLECT_H
#define TP_COLLECT_H

#include <stdbool.h>
#include <stddef.h>

enum collect_bit {
	COLLECT_CPU = 1 << 0,
	COLLECT_IO = 1 << 1,
	COLLECT_MEM = 1 << 2,
	COLLECT_NET = 1 << 3,
	COLLECT_HTTP = 1 << 4,
	/* the run-queue histogram: a program on every context switch, so asked for */
	COLLECT_RUNQ = 1 << 5,
	COLLECT_ALL = (1 << 6) - 1,
	COLLECT_DEFAULT = COLLECT_ALL & ~COLLECT_RUNQ,
	/*
	 * No BPF at all (it could not be loaded): a record of the cgroup's own files only,
	 * CPU from cpu.stat and the kernel's peak memory. Never asked for; "cgroup" in
	 * the record.
	 */
	COLLECT_CGROUP_ONLY = 1 << 6,
};

/* "cpu,io,mem,net,http,runq" (any of them) or "all": 0 and *mask, or -EINVAL and *why. */
int collect_parse(const char *s, unsigned *mask, const char **why);
/*
 * The names in mask, comma-separated, into buf ("all" for every one, "none"; "cgroup"
 * for COLLECT_CGROUP_ONLY).
 */
const char *collect_format(unsigned mask, char *buf, size_t len);
/*
 * Whether the figure name (a metric or a histogram of the record) is collected under
 * mask; mem.peak_bytes read from the cgroup (mem_from_cgroup) needs no program.
 * Under COLLECT_CGROUP_ONLY, only the figures of the cgroup's files are.
 */
bool collect_has(unsigned mask, const char *name, bool mem_from_cgroup);

#endif /* TP_COLLECT_H */
