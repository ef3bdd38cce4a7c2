// SPDX-License-Identifier: GPL-2.0
/*
 * "The floor plus one lookup", as a program: on each hot hook, what the simplest
 * design that knows a task's events from the rest of the host would pay for every
 * event of the host. It takes the current thread's cgroup v2 id and looks it up in a
 * hash of the collector's kind and size (the cgroups map of bpf/maps.bpf.h), empty,
 * as that map is for nearly every cgroup of a host. SPEC §8's target for the rest of
 * the host's events is this program's ns/event: `UNTRACKED=1 bpf-cost.sh` attaches it
 * after the collector and measures both in the same run, on the same events.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "taskprobe.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TP_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct tp_cgroup_info);
} ref_cgroups SEC(".maps");

#define LOOKUP(hook)                                                                               \
	SEC("tp_btf/" #hook)                                                                       \
	int BPF_PROG(lookup_##hook)                                                                \
	{                                                                                          \
		__u64 id = bpf_get_current_cgroup_id();                                            \
                                                                                                   \
		return bpf_map_lookup_elem(&ref_cgroups, &id) != NULL;                             \
	}

LOOKUP(sched_switch)
LOOKUP(sched_process_fork)
LOOKUP(sched_process_exec)
LOOKUP(sched_process_exit)
LOOKUP(block_io_start)
LOOKUP(block_rq_complete)
LOOKUP(rss_stat)
LOOKUP(tcp_sendmsg_locked)
LOOKUP(inet_sock_set_state)
