// SPDX-License-Identifier: GPL-2.0
/* Scheduler programs: exact on-CPU time and run-queue latency per task. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "bits.bpf.h"

#define TASK_RUNNING 0
#define TASK_DEAD 0x80

char LICENSE[] SEC("license") = "GPL";

/*
 * Set by the loader when task_struct has sched_info (CONFIG_SCHED_INFO): the kernel
 * then stamps each thread when it is queued, and run-queue latency is read from that
 * stamp and the run queue's clock, with no clock read of our own and no wakeup
 * programs at all. The run queue is reached through the thread's cfs_rq
 * (CONFIG_FAIR_GROUP_SCHED, checked by CO-RE). Without sched_info, sched_wakeup
 * programs stamp threads themselves.
 */
const volatile bool use_sched_info = false;

static __always_inline int on_wakeup(struct task_struct *p)
{
	struct tp_cgroup_info *ci;
	struct tp_thread *th;

	th = tp_thread_get(p);
	if (!th) {
		/* A thread that came into a task without fork (moved, or there before). */
		ci = tp_cgroup_lookup(tp_task_cgroup_id(p));
		if (!ci)
			return 0;
		th = tp_thread_adopt(p, ci);
		if (!th)
			return 0;
	}
	th->runnable_since = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(tp_sched_wakeup, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(tp_sched_wakeup_new, struct task_struct *p)
{
	return on_wakeup(p);
}

/*
 * A dead thread's last switch-out: what it ran since its exit event (exit_mm, files,
 * and for a short process most of its life, since se.sum_exec_runtime was stale at
 * sched_process_exit) goes to its program too. Once per thread, never on the hot path.
 */
static __noinline void final_switch(struct task_struct *prev, struct tp_thread *th)
{
	struct tp_cgroup_info ci = { .slot = th->slot, .gen = th->gen };
	__u64 rt = prev->se.sum_exec_runtime;
	struct tp_exit_event *e;

	/* Since the exit event, switches in between included (exit_mm may sleep). */
	if (rt < th->exit_runtime)
		return;
	e = tp_event_reserve(sizeof(*e), TP_EV_FINAL, &ci, prev);
	if (!e)
		return;
	e->runtime_ns = rt - th->exit_runtime;
	e->start_ns = 0;
	e->exit_code = 0;
	e->flags = th->exit_flags;
	bpf_probe_read_kernel(e->comm, sizeof(e->comm), prev->comm);
	/* The reader drains on its timer: no wakeup from inside the scheduler. */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/*
 * CPU time is the growth of se.sum_exec_runtime since the thread was last charged:
 * the kernel's own figure (what getrusage and cpu.stat report, steal excluded).
 * Charging the difference, rather than timing switch-in to switch-out, stays exact
 * when a switch-in is never traced (seen on 6.18 guests): the time is charged at
 * the next switch-out. The hot path is two task-storage lookups, no hash.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct tp_cpu_stats *cs;
	struct tp_thread *th;
	__u64 delta, queued;
	__u32 slot;

	/*
	 * Most switches on a host involve no task at all: threads that never had task
	 * storage have none to look up (one load each, no helper call).
	 */
	if (!prev->bpf_storage && !next->bpf_storage)
		return 0;
	th = tp_thread_get(prev);
	if (th) {
		if (prev_state == TASK_DEAD)
			final_switch(prev, th);
		tp_charge_cpu(prev, th);
		/* Preempted, still runnable: its wait for the CPU starts now. */
		if (!use_sched_info && prev_state == TASK_RUNNING)
			th->runnable_since = bpf_ktime_get_ns();
	}

	th = tp_thread_get(next);
	if (!th)
		return 0;
	if (use_sched_info && bpf_core_field_exists(next->se.cfs_rq->rq)) {
		/* What sched_info_arrive() adds to run_delay right after this tracepoint. */
		__u64 now = next->se.cfs_rq->rq->clock;

		queued = next->sched_info.last_queued;
		if (!queued || now < queued)
			return 0;
		delta = now - queued;
	} else {
		if (!th->runnable_since)
			return 0;
		delta = bpf_ktime_get_ns() - th->runnable_since;
		th->runnable_since = 0;
	}
	slot = th->slot;
	cs = bpf_map_lookup_elem(&cpu_stats, &slot);
	if (cs) {
		cs->runq_count++;
		cs->runq_sum_ns += delta;
		cs->runq_hist[tp_log2_slot(delta)]++;
	}
	return 0;
}
