/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task's figures as the model holds them: what the collector reads from the BPF
 * maps and events, and what the cgroup's own files say. No code: the collector
 * fills them, the record, the phases, the store and the views read them.
 */
#ifndef TP_FIGURES_H
#define TP_FIGURES_H

#include <linux/types.h>

#include "hist.h"
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

/* One task's figures, read from the maps (BPF) and the drained events (programs). */
struct task_figures {
	__u64 cpu_ns;
	__u64 forks;
	__u64 execs;
	__u64 exits;
	__u64 failed_exits;
	__u64 threads;
	__u64 exec_failures; /* execve calls that failed (through libc) */
	__u64 left_task;     /* processes moved out of the task while alive */
	__s64 alive;
	__s64 max_alive;
	__u64 lost_events;     /* events the ring buffer had no room for */
	__u64 events_received; /* events drained so far */
	__u64 runq_wait_ns;    /* sched_info.run_delay: runnable, waiting for a CPU */
	struct tp_hist runq;   /* each wait, when collect has runq */
	/* block layer: requests the task's threads submitted, completed */
	__u64 io_read_ops;
	__u64 io_write_ops;
	__u64 io_blk_read_bytes;
	__u64 io_blk_write_bytes;
	__u64 io_merged_bios; /* bios merged into existing requests (their bytes counted) */
	struct tp_hist io_latency;
	/* task->ioac of exited threads (/proc/PID/io): bytes charged to their causer */
	struct tp_ioac_stats ioac;
	/* resident memory of the task's address spaces, from rss_stat */
	__s64 rss_bytes;
	__s64 peak_rss_bytes;
	__u64 oom_kills;
	/* TCP payload received and acked by the peer (net_stats), for the series' rates */
	__u64 net_rx_bytes;
	__u64 net_tx_bytes;
};

#endif /* TP_FIGURES_H */
