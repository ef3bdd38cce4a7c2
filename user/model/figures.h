/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task's figures as the model holds them: what the collector reads from the BPF
 * maps and events, and what the cgroup's own files say. No code: the collector
 * fills them, the record, the phases, the store and the views read them.
 */
#ifndef TP_FIGURES_H
#define TP_FIGURES_H

#include <linux/types.h>

#include "taskprobe.h"

/* cpu.stat of the task's cgroup, in microseconds as the kernel writes it. */
struct cg_cpu_stat {
	__u64 usage_us;
	__u64 user_us;
	__u64 system_us;
};

struct program_stat {
	char path[TP_PATH_LEN];
	__u64 execs;
	/* CPU of the program's exited threads; what ran before an exec is the old program's. */
	__u64 cpu_ns;
};

/*
 * One task's figures. The ABI structs are held whole, as the maps give them: a read
 * is one copy (proc, ioac, mem) or one sum over the CPUs (cpu, io), never a field list.
 * A new BPF counter is a field of its ABI struct and a row of metric_descs (metrics.c).
 */
struct task_figures {
	struct tp_cpu_stats cpu;   /* summed over the CPUs; runq only when collect has runq */
	struct tp_proc_stats proc; /* forks, execs, exits, alive, exec failures, ... */
	struct tp_io_stats io;	   /* block layer, summed over the CPUs */
	struct tp_ioac_stats ioac; /* task->ioac of exited threads (/proc/PID/io) */
	struct tp_mem_stats mem;   /* resident memory of the task's address spaces, OOM kills */
	/* TCP payload received and acked by the peer (net_stats), for the series' rates */
	__u64 net_rx_bytes;
	__u64 net_tx_bytes;
	__u64 events_received; /* events drained so far */
};

#endif /* TP_FIGURES_H */
