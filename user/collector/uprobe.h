/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Uprobes on shared libraries: function offsets from the ELF file, and one
 * uprobe_multi link per program and library (kernel 6.6+), so that detaching costs
 * one grace period per link instead of one per probe under a global lock.
 */
#ifndef TP_UPROBE_H
#define TP_UPROBE_H

#include <stdbool.h>
#include <stddef.h>

struct bpf_program;

/*
 * The file offsets of the n functions names in the ELF file path, in one read of its
 * symbol tables: out[i] is the offset, or -ENOENT. Returns 0 or -errno.
 */
int uprobe_func_offsets(const char *path, const char *const *names, size_t n, long *out);

/* Does this kernel take uprobe_multi links (BPF_TRACE_UPROBE_MULTI)? */
bool uprobe_multi_supported(void);

/*
 * Attaches prog (loaded for BPF_TRACE_UPROBE_MULTI) to the n functions of path, at
 * entry or at return, in every process. Returns the link's fd, or -errno.
 */
int uprobe_multi_attach(const struct bpf_program *prog, const char *path,
			const unsigned long *offsets, size_t n, bool retprobe);

#endif /* TP_UPROBE_H */
