// SPDX-License-Identifier: GPL-2.0
/*
 * Scheduler programs: exact on-CPU time and run-queue wait per task, with no program
 * on the context switch unless the run-queue histogram is asked for.
 *
 * A thread's CPU time is the growth of se.sum_exec_runtime, its wait for a CPU the
 * growth of sched_info.run_delay: the kernel's own figures (what getrusage, cpu.stat
 * and schedstat report). They are charged when the thread exits (proc.bpf.c), when
 * it is released after its last switch-out (sched_process_free, below), and for
 * threads still alive by the task iterator, which userspace runs before it reads.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "bits.bpf.h"

#define TASK_RUNNING 0
#define PF_EXITING 0x4

char LICENSE[] SEC("license") = "GPL";

/*
 * Set by the loader when task_struct has sched_info (CONFIG_SCHED_INFO): the kernel
 * then stamps each thread when it is queued, and the histogram reads a wait from that
 * stamp and the run queue's clock, with no clock read of our own and no wakeup
 * programs at all. The run queue is reached through the thread's cfs_rq
 * (CONFIG_FAIR_GROUP_SCHED, checked by CO-RE). Without sched_info, sched_wakeup
 * programs stamp threads themselves.
 */
const volatile bool use_sched_info = false;

static __always_inline int on_wakeup(struct task_struct *p)
{
	struct tp_thread *th;

	if (!p->bpf_storage)
		return 0;
	th = tp_thread_get(p);
	if (th)
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
 * The run-queue histogram (collect runq): each wait of a task's thread, wakeup or
 * preemption to running, at its switch-in. Switches of untracked threads cost one
 * load of next->bpf_storage.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct tp_cpu_stats *cs;
	struct tp_thread *th;
	__u64 delta, queued;
	__u32 slot;

	/* Preempted, still runnable: its wait for the CPU starts now. */
	if (!use_sched_info && prev_state == TASK_RUNNING && prev->bpf_storage) {
		th = tp_thread_get(prev);
		if (th)
			th->runnable_since = bpf_ktime_get_ns();
	}
	if (!next->bpf_storage)
		return 0;
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

/*
 * A thread is freed after both its release (reaped, or at once for a thread that is
 * not a leader) and its last switch-out, one RCU grace period later: its runtime is
 * final here. What it ran since its exit event (exit_mm, files, and for a short
 * process most of its life, as se.sum_exec_runtime was stale then) is charged and
 * sent to its program. Once per thread.
 */
SEC("tp_btf/sched_process_free")
int BPF_PROG(tp_sched_process_free, struct task_struct *p)
{
	struct tp_cgroup_info ci;
	struct tp_proc_stats *ps;
	struct tp_exit_event *e;
	struct tp_thread *th;
	__u64 rt;

	if (!p->bpf_storage)
		return 0;
	th = tp_thread_get(p);
	if (!th || !th->exited)
		return 0;
	tp_charge_cpu(p, th);
	ci.slot = th->slot;
	ci.gen = th->gen;
	rt = p->se.sum_exec_runtime;
	e = tp_event_reserve(sizeof(*e), TP_EV_FINAL, &ci, p);
	if (e) {
		/* Dated at the exit it follows: a process's span ends there. */
		e->hdr.ts_ns = th->exit_ns;
		e->runtime_ns = rt > th->exit_runtime ? rt - th->exit_runtime : 0;
		e->start_ns = 0;
		e->exit_code = 0;
		e->flags = th->exit_flags;
		bpf_probe_read_kernel(e->comm, sizeof(e->comm), p->comm);
		/* The reader drains on its timer. */
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
	/* Counted once its event is in the ring (or counted lost): a sync waits for it. */
	ps = bpf_map_lookup_elem(&proc_stats, &ci.slot);
	if (ps)
		__sync_fetch_and_add(&ps->thread_frees, 1);
	return 0;
}

/*
 * Run by userspace before it reads (collector__refresh): every live thread of a task
 * is charged what it ran and waited since it was last charged. A thread in a task's
 * cgroup with no state yet (there before the task was tracked, or a thread of a
 * process moved in) is adopted: from now on it is the task's.
 */
SEC("iter/task")
int tp_iter_charge(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct tp_cgroup_info *ci;
	struct tp_thread *th;

	if (!t)
		return 0;
	if (!t->bpf_storage) {
		if (t->flags & PF_EXITING)
			return 0;
		ci = tp_cgroup_lookup(tp_task_cgroup_id(t));
		if (ci && tp_slot_current(ci->slot, ci->gen))
			tp_thread_adopt(t, ci);
		return 0;
	}
	th = tp_thread_get(t);
	if (th && !th->exited)
		tp_charge_cpu(t, th);
	return 0;
}
