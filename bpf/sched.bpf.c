// SPDX-License-Identifier: GPL-2.0
/*
 * Scheduler programs: exact on-CPU time and run-queue wait per task, with no work on
 * the context switch but a dead thread's last one, unless the run-queue histogram is
 * asked for.
 *
 * A thread's CPU time is the growth of se.sum_exec_runtime, its wait for a CPU the
 * growth of sched_info.run_delay: the kernel's own figures (what getrusage, cpu.stat
 * and schedstat report). They are charged at the thread's last switch-out (below),
 * and for threads still alive by the task iterator, which userspace runs before it
 * reads; not at its exit (proc.bpf.c), where the runtime is stale.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "bits.bpf.h"

#define TASK_RUNNING 0
#define TASK_DEAD 0x80
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
 * A dead thread's last switch-out: its runtime is final here, what it ran since its
 * exit (exit_mm, files, and for a short process most of its life) included. It is
 * charged, and the thread's exit event sent, dated at its exit. Once per thread, never
 * on the hot path.
 */
static __always_inline void exit_fill(struct tp_exit_event *e, struct task_struct *prev,
				      const struct tp_thread *th)
{
	/* Dated at the exit it follows: a process's span ends there. */
	e->hdr.ts_ns = th->exit_ns;
	e->hdr.ppid = prev->real_parent->tgid;
	e->runtime_ns = prev->se.sum_exec_runtime;
	e->start_ns = prev->group_leader->start_time;
	e->exit_code = prev->exit_code;
	e->flags = th->exit_flags;
	if (!tp_off(TP_OFF_COMM))
		tp_copy_comm(e->comm, prev);
}

static __noinline void final_switch(struct task_struct *prev)
{
	struct tp_cgroup_info ci;
	struct tp_exit_event *e;
	struct tp_thread *th;
	struct tp_staged st;

	th = tp_thread_get(prev);
	if (!th || !th->exit_ns)
		return;
	tp_charge_cpu(prev, th);
	ci.slot = th->slot;
	ci.gen = th->gen;
	if (tp_off(TP_OFF_RING))
		return;
	e = tp_stage_reserve(&st);
	if (e) {
		/* Dated at its exit: no clock read here. */
		tp_event_hdr_fill(&e->hdr, TP_EV_EXIT, &ci, prev, th->exit_ns);
		exit_fill(e, prev, th);
		tp_stage_commit(&st, sizeof(*e));
		return;
	}
	e = tp_event_reserve(sizeof(*e), TP_EV_EXIT, &ci, prev);
	if (!e)
		return;
	exit_fill(e, prev, th);
	/* The reader drains on its timer: no wakeup from inside the scheduler. */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/*
 * Every context switch of the host runs this, so it returns at once unless the
 * outgoing thread is dead (its last slice, above): one compare of an argument, no
 * load. The loader loads this program, or tp_sched_switch_runq below in its place when
 * the run-queue histogram is collected: never both.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (prev_state == TASK_DEAD && prev->bpf_storage)
		final_switch(prev);
	return 0;
}

/*
 * The same with the run-queue histogram (collect runq): each wait of a task's thread,
 * wakeup or preemption to running, is taken at its switch-in; untracked threads cost
 * one load of next->bpf_storage.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(tp_sched_switch_runq, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct tp_cpu_stats *cs;
	struct tp_thread *th;
	__u64 delta, queued;
	__u32 slot;

	if (prev_state == TASK_DEAD && prev->bpf_storage)
		final_switch(prev);
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
		cs->runq.count++;
		cs->runq.sum += delta;
		cs->runq.slots[tp_log2_slot(delta)]++;
	}
	return 0;
}

/*
 * Run by userspace before it reads (coll__refresh() in user/collector/read.c): every live thread of a task
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
	/* A thread that exited is charged at its last switch-out, not here. */
	th = tp_thread_get(t);
	if (th && !th->exit_ns)
		tp_charge_cpu(t, th);
	return 0;
}
