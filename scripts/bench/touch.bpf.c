// SPDX-License-Identifier: GPL-2.0
/*
 * What a program pays for the first touch of something on a hook, against the same
 * touch once it has been made (scripts/bench/touch.sh). On each lifecycle hook, four
 * programs run in this order for each event: empty, one clock read, one clock read,
 * empty. The first program pays for being first, the first clock read for the first
 * read of the clock's memory since the last context switch.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u64 sink;

#define TOUCH(hook)                                                                                \
	SEC("tp_btf/" #hook)                                                                       \
	int BPF_PROG(t1_##hook)                                                                    \
	{                                                                                          \
		return 0;                                                                          \
	}                                                                                          \
	SEC("tp_btf/" #hook)                                                                       \
	int BPF_PROG(t2_##hook)                                                                    \
	{                                                                                          \
		sink += bpf_ktime_get_ns();                                                        \
		return 0;                                                                          \
	}                                                                                          \
	SEC("tp_btf/" #hook)                                                                       \
	int BPF_PROG(t3_##hook)                                                                    \
	{                                                                                          \
		sink += bpf_ktime_get_ns();                                                        \
		return 0;                                                                          \
	}                                                                                          \
	SEC("tp_btf/" #hook)                                                                       \
	int BPF_PROG(t4_##hook)                                                                    \
	{                                                                                          \
		return 0;                                                                          \
	}

TOUCH(sched_process_fork)
TOUCH(sched_process_exec)
TOUCH(sched_process_exit)
