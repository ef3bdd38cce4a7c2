/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task's processes, each with its span: pid, parent, command, start and end, CPU,
 * exit status. At most PROCS_MAX are kept, the longest-lived; the rest are counted.
 */
#ifndef TP_PROCS_H
#define TP_PROCS_H

#include <stddef.h>
#include <linux/types.h>

#include "base/json.h"

#define PROCS_MAX 512
#define PROC_COMMAND_LEN 128

enum proc_end {
	PROC_EXITED, /* exit: its shell-style status */
	PROC_ALIVE,  /* still running when the record was made (end: then) */
	PROC_LEFT,   /* moved out of the task's cgroup while alive (end: then) */
	PROC_END_KINDS,
};

extern const char *const proc_end_names[PROC_END_KINDS];

struct proc_span {
	/* the collector's: CLOCK_MONOTONIC; a record's: since the task started */
	__u64 start_ns;
	__u64 end_ns;
	__u64 cpu_ns; /* all its threads' */
	__u32 pid;
	__u32 ppid; /* 0: not known (it was there before the task) */
	enum proc_end end;
	__s32 exit;			/* PROC_EXITED: the code, or 128 + signal */
	char command[PROC_COMMAND_LEN]; /* the program's path; "[comm]" if it never exec'd */
};

struct procs {
	struct proc_span *v; /* a min-heap by span while collected; by start in a record */
	size_t n;
	size_t cap;
	__u64 dropped;
};

/* Keeps p (copied) if it is among the PROCS_MAX longest so far; else counts one dropped. */
void procs__add(struct procs *ps, const struct proc_span *p);
/* dst = src with times made relative to start_ns, sorted by start then pid; 0 or -ENOMEM. */
int procs__rebase(struct procs *dst, const struct procs *src, __u64 start_ns);
void procs__fini(struct procs *ps);
/* "processes": [{pid, ppid, command, start_ms, end_ms, cpu_ns, end, exit}] and a count. */
void procs__write_json(struct jw *w, const struct procs *ps);
/* The record's "processes" back (absent: none); 0, -EINVAL if malformed, -ENOMEM. */
int procs__from_json(struct procs *ps, const struct json *arr, __u64 dropped);

#endif /* TP_PROCS_H */
