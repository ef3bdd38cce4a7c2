// SPDX-License-Identifier: GPL-2.0
/* Process lifecycle programs: forks, execs, exits, failures and the most alive at once. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"

/*
 * Bytes of pending events past which a submit wakes the reader. Below it, the reader
 * drains on its own timer (collector__poll): a wakeup per event is an irq_work and
 * an IPI, which cost microseconds on virtual machines (docs/PERFORMANCE.md).
 */
const volatile __u64 wakeup_bytes = 0;
/*
 * Slots whose exec rules need argv (collector__capture_args): set and cleared while
 * the collector runs, so that only those tasks' execs pay for the copy.
 */
__u8 capture_args[TP_MAX_TASKS_LIMIT];

static __always_inline void tp_event_submit(void *e)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (!tp_off(TP_OFF_QUERY) && bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, flags);
}

/*
 * Each lifecycle hook has two programs: the one attached, a few instructions that let
 * the rest of the host's events go, and for a task's thread a tail call into the
 * program that does the work (tracked_*, loaded, never attached; the collector puts
 * each in its hook's array below). For the same test, the rest of the host's exec,
 * exit and fork paid 154-162, 139-143 and 147-165 ns with the work in the same
 * program, and 104-117, 117-127 and 117-141 ns with it behind a tail call
 * (docs/PERFORMANCE.md, seventh pass). A tail call's run time is counted in the
 * attached program's bpf_stats. One array per hook: the kernel lets a program
 * tail-call only programs of its own hook.
 */
#define TP_TAIL_ARRAY(name)                                                                        \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PROG_ARRAY);                                             \
		__uint(max_entries, 1);                                                            \
		__type(key, __u32);                                                                \
		__type(value, __u32);                                                              \
	} name SEC(".maps")

TP_TAIL_ARRAY(tail_fork);
TP_TAIL_ARRAY(tail_exec);
TP_TAIL_ARRAY(tail_exit);

static __always_inline int fork_tracked(struct task_struct *parent, struct task_struct *child)
{
	struct tp_cgroup_info *ci, own;
	struct tp_proc_stats *ps;
	struct tp_thread *th;
	__u32 slot;

	th = parent->bpf_storage ? tp_thread_get(parent) : NULL;
	if (child->cgroups == parent->cgroups) {
		if (!th)
			return 0;
		own.slot = th->slot;
		own.gen = th->gen;
		ci = &own;
	} else {
		ci = tp_cgroup_lookup(tp_task_cgroup_id(child));
		if (!ci)
			return 0;
	}
	slot = ci->slot;
	/* Threads too: CPU time is charged per thread. */
	if (!tp_off(TP_OFF_ADOPT))
		tp_thread_adopt(child, ci);
	ps = bpf_map_lookup_elem(&proc_stats, &slot);
	if (!ps || tp_off(TP_OFF_STATS))
		return 0;
	if (child->pid != child->tgid) {
		__sync_fetch_and_add(&ps->threads, 1);
		return 0;
	}
	__sync_fetch_and_add(&ps->forks, 1);
	tp_alive_add(slot, 1);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(tp_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	/*
	 * Counted only: no event. The exec and exit events carry the parent and the
	 * process's start, which is all userspace took from a fork event (ABI 7).
	 * A child in its parent's cgroups (the same css_set) is in its parent's task,
	 * or in none: an untracked parent's fork costs three loads. Only a child made
	 * into another cgroup (CLONE_INTO_CGROUP) is looked up by its cgroup.
	 */
	if (!parent->bpf_storage && child->cgroups == parent->cgroups)
		return 0;
	bpf_tail_call(ctx, &tail_fork, 0);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(tracked_fork, struct task_struct *parent, struct task_struct *child)
{
	return fork_tracked(parent, child);
}

/*
 * The new program's argv, from its stack (set up before this tracepoint): its first
 * TP_ARGS_LEN bytes, flagged when cut. Userspace keeps TP_ARGS_MAX arguments of them.
 */
static __always_inline void read_args(struct task_struct *p, struct tp_exec_event *e)
{
	struct mm_struct *mm = p->mm;
	unsigned long start, end;
	__u32 len;

	e->args_flags = 0;
	e->args_len = 0;
	if (!mm)
		return;
	start = mm->arg_start;
	end = mm->arg_end;
	len = end > start ? (__u32)(end - start) : 0;
	if (len == 0)
		return;
	if (len > TP_ARGS_LEN) {
		len = TP_ARGS_LEN;
		e->args_flags = TP_EXEC_ARGS_TRUNCATED;
	}
	if (!bpf_probe_read_user(e->args, len, (void *)start))
		e->args_len = len;
}

/* The exec event's body, in a stage record or on the ring buffer. */
static __always_inline void exec_fill(struct tp_exec_event *e, struct task_struct *p,
				      struct linux_binprm *bprm, __u32 slot)
{
	e->hdr.ppid = p->real_parent->tgid;
	e->runtime_ns = p->se.sum_exec_runtime;
	e->start_ns = p->group_leader->start_time;
	if (!tp_off(TP_OFF_COMM))
		tp_copy_comm(e->comm, p);
	if (!tp_off(TP_OFF_PATH))
		bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), bprm->filename);
	e->args_len = 0;
	e->args_flags = 0;
	if (capture_args[slot & (TP_MAX_TASKS_LIMIT - 1)])
		read_args(p, e);
}

static __always_inline int exec_tracked(struct task_struct *p, struct linux_binprm *bprm)
{
	struct tp_thread *th = tp_thread_get(p);
	struct tp_proc_stats *ps;
	struct tp_exec_event *e;
	struct tp_cgroup_info ci;
	struct tp_staged st;
	__u32 slot;

	if (!th)
		return 0;
	ci.slot = slot = th->slot;
	ci.gen = th->gen;
	ps = bpf_map_lookup_elem(&proc_stats, &slot);
	if (ps && !tp_off(TP_OFF_STATS))
		__sync_fetch_and_add(&ps->execs, 1);

	if (tp_off(TP_OFF_RING))
		return 0;
	e = tp_stage_reserve(&st);
	if (e) {
		if (tp_off(TP_OFF_FIELDS))
			e->hdr.ts_ns = bpf_ktime_get_ns();
		if (!tp_off(TP_OFF_FILL | TP_OFF_FIELDS)) {
			tp_event_hdr_fill(&e->hdr, TP_EV_EXEC, &ci, p, bpf_ktime_get_ns());
			exec_fill(e, p, bprm, slot);
		}
		tp_stage_commit(&st, sizeof(*e));
		return 0;
	}
	/* This CPU's stage is full: the ring buffer, which wakes the reader. */
	e = tp_event_reserve(sizeof(*e), TP_EV_EXEC, &ci, p);
	if (!e)
		return 0;
	exec_fill(e, p, bprm, slot);
	tp_event_submit(e);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(tp_sched_process_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	/* p is the current thread: no helper call to find it (an untracked exec's cost). */
	if (!p->bpf_storage)
		return 0;
	bpf_tail_call(ctx, &tail_exec, 0);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(tracked_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return exec_tracked(p, bprm);
}

/*
 * A thread exits: its I/O is charged, and the last one of a process counts the exit.
 * Its event is sent from its last switch-out (sched.bpf.c), where its runtime is
 * final: one event a thread, not two (docs/PERFORMANCE.md).
 */
static __always_inline int process_exit(struct task_struct *p, bool group_dead)
{
	/* p is the current thread, exiting: no helper call to find it. */
	struct tp_thread *th = tp_thread_get(p);
	struct tp_proc_stats *ps;
	__u32 slot;

	if (!th)
		return 0;
	slot = th->slot;
	ps = bpf_map_lookup_elem(&proc_stats, &slot);
	/*
	 * Its CPU time is not charged here: its runtime is stale until its last
	 * switch-out (sched.bpf.c), which charges all of it since its last charge with
	 * the same work as it would charge the rest (one CPU charge a thread, not two).
	 */
	if (!tp_off(TP_OFF_CHARGE))
		tp_charge_ioac(p, th);
	if (!tp_off(TP_OFF_STORAGE)) {
		th->exit_ns = bpf_ktime_get_ns();
		th->exit_flags = group_dead ? TP_EXIT_GROUP_DEAD : 0;
	}
	if (group_dead && ps && !tp_off(TP_OFF_STATS)) {
		__sync_fetch_and_add(&ps->exits, 1);
		tp_alive_add(slot, -1);
		if (p->exit_code)
			__sync_fetch_and_add(&ps->failed_exits, 1);
	}
	return 0;
}

/*
 * One attached exit program for every kernel: it reads only the thread, which the
 * tracepoint has always passed. Its work is one of two, which the collector loads
 * and puts in tail_exit by the kernel's version.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(tp_sched_process_exit, struct task_struct *p)
{
	if (!p->bpf_storage)
		return 0;
	bpf_tail_call(ctx, &tail_exit, 0);
	return 0;
}

/* Linux 6.16 on: the tracepoint says whether this thread's exit ended its process. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(tracked_exit, struct task_struct *p, bool group_dead)
{
	return process_exit(p, group_dead);
}

/*
 * Before 6.16: signal->live, which do_exit() decremented just before. Two threads
 * exiting at once may both read 0 there, and their process's exit then counts twice.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(tracked_exit_live, struct task_struct *p)
{
	return process_exit(p, p->signal->live.counter == 0);
}

/*
 * libc's execve returns only when the exec failed (ENOENT along PATH, EACCES, ...):
 * every return is a failure, counted for the task of the caller. Programs that make
 * the system call without libc (static Go binaries) are not seen.
 */
SEC("uretprobe")
int BPF_KRETPROBE(tp_execve_ret, int ret)
{
	struct tp_cgroup_info *ci = tp_cgroup_lookup(bpf_get_current_cgroup_id());
	struct tp_proc_stats *ps;
	__u32 slot;

	if (!ci || ret >= 0)
		return 0;
	slot = ci->slot;
	ps = bpf_map_lookup_elem(&proc_stats, &slot);
	if (ps)
		__sync_fetch_and_add(&ps->exec_failures, 1);
	return 0;
}
