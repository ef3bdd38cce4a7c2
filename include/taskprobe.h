/* SPDX-License-Identifier: GPL-2.0 */
/* The ABI shared by the BPF programs and the userspace collector: map values and events. */
#ifndef TASKPROBE_H
#define TASKPROBE_H

/* Bump whenever a struct below changes layout; task records name the version they used. */
#define TP_ABI_VERSION 2

/* Tasks tracked at once by one collector (slots in the per-task maps). */
#define TP_MAX_TASKS 1024
/* cgroups (task roots plus their descendants) tracked at once. */
#define TP_MAX_CGROUPS 16384
/* log2 buckets: slot i counts values v with 2^(i-1) <= v < 2^i (slot 0 is v == 0). */
#define TP_HIST_SLOTS 64
#define TP_COMM_LEN 16
#define TP_PATH_LEN 256
/* An exec's argv as captured: at most this many bytes and arguments (SPEC: 256, 16). */
#define TP_ARGS_LEN 256
#define TP_ARGS_MAX 16
#define TP_SLOT_NONE 0xffffffffu

/* Value of the cgroup-id -> task map: which slot, and which use of that slot. */
struct tp_cgroup_info {
	__u32 slot;
	__u32 gen;
};

/* Per-CPU, per-slot figures written on the scheduler hot path. */
struct tp_cpu_stats {
	__u64 cpu_ns;
	__u64 runq_count;
	__u64 runq_sum_ns;
	__u64 runq_hist[TP_HIST_SLOTS];
};

/* Per-slot process figures, shared by all CPUs and updated atomically. */
struct tp_proc_stats {
	__u64 forks;
	__u64 execs;
	__u64 exits;
	__u64 failed_exits;
	__s64 alive;
	__s64 max_alive;
	__u64 lost_events;
	__u64 threads;
};

/* Per-CPU, per-slot block-layer figures, charged to the task that submitted the I/O. */
struct tp_io_stats {
	__u64 read_ops;
	__u64 write_ops;
	__u64 read_bytes;  /* block layer, completed */
	__u64 write_bytes; /* block layer, completed */
	__u64 lat_count;
	__u64 lat_sum_ns;
	__u64 lat_hist[TP_HIST_SLOTS];
};

/*
 * Per-slot I/O accounting of the kernel's own (task->ioac, what /proc/PID/io shows),
 * summed over the task's exited threads; updated atomically at thread exit.
 */
struct tp_ioac_stats {
	__u64 rchar;
	__u64 wchar;
	__u64 read_bytes;
	__u64 write_bytes;
	__u64 cancelled_write_bytes;
};

/* Per-slot memory: resident bytes of the task's address spaces now, and the most. */
struct tp_mem_stats {
	__s64 rss_bytes;
	__s64 peak_rss_bytes;
	__u64 oom_kills;
};

/* Counters that belong to no task: health of the collector itself. */
struct tp_global_stats {
	__u64 lost_events;
	__u64 events;
};

enum tp_event_type {
	TP_EV_FORK = 1,
	TP_EV_EXEC = 2,
	TP_EV_EXIT = 3,
};

struct tp_event_hdr {
	__u32 type;
	__u32 slot;
	__u32 gen;
	__u32 pid;
	__u32 tgid;
	__u32 pad;
	__u64 ts_ns;
};

struct tp_fork_event {
	struct tp_event_hdr hdr;
	__u32 parent_tgid;
	__u32 pad;
};

#define TP_EXEC_ARGS_TRUNCATED 0x1

struct tp_exec_event {
	struct tp_event_hdr hdr;
	/* se.sum_exec_runtime of the thread at exec: CPU used before it goes to the old program. */
	__u64 runtime_ns;
	char comm[TP_COMM_LEN];
	char filename[TP_PATH_LEN];
	__u32 args_len; /* bytes of args used: NUL-separated argv, argv[0] first */
	__u32 args_flags;
	char args[TP_ARGS_LEN];
};

#define TP_EXIT_GROUP_DEAD 0x1

struct tp_exit_event {
	struct tp_event_hdr hdr;
	__u64 runtime_ns;
	__u32 exit_code;
	__u32 flags;
	char comm[TP_COMM_LEN];
};

#endif /* TASKPROBE_H */
