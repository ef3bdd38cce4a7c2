// SPDX-License-Identifier: GPL-2.0
/* Calibration: the cheapest programs possible on the hooks taskprobe uses. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(empty_sched_switch)
{
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(empty_sched_process_exec)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ktime_sched_switch)
{
	return bpf_ktime_get_ns() == 0;
}
