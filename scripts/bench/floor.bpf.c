// SPDX-License-Identifier: GPL-2.0
/*
 * The dispatch floor: an empty program on each hook the collector's hot paths use.
 * Attached beside the collector in the same run, kernel.bpf_stats_enabled gives each
 * its ns per event: what any program on that hook costs (the trampoline, the stats'
 * own clock reads), against which the collector's programs are measured.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

#define FLOOR(hook)                                                                                \
	SEC("tp_btf/" #hook)                                                                       \
	int BPF_PROG(floor_##hook)                                                                 \
	{                                                                                          \
		return 0;                                                                          \
	}

FLOOR(sched_switch)
FLOOR(sched_process_fork)
FLOOR(sched_process_exec)
FLOOR(sched_process_exit)
FLOOR(block_io_start)
FLOOR(block_rq_issue)
FLOOR(block_rq_complete)
FLOOR(rss_stat)
FLOOR(sock_recv_length)
FLOOR(tcp_sendmsg_locked)
FLOOR(inet_sock_set_state)
