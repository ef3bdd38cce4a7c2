// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup programs: a cgroup made inside a tracked task (a container, a nested
 * scope) is tracked as that task from the moment it exists, with no userspace
 * round trip; its entry goes when the cgroup does.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

/*
 * cgroup_mkdir/rmdir fire for v1 hierarchies too, whose ids are from another id
 * space: only the default (v2) hierarchy, the one every task belongs to, counts.
 */
static __always_inline bool on_dfl(struct cgroup *cgrp)
{
	struct task_struct *cur = bpf_get_current_task_btf();

	return cgrp->root == cur->cgroups->dfl_cgrp->root;
}

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(tp_cgroup_mkdir, struct cgroup *cgrp, const char *path)
{
	struct cgroup_subsys_state *parent_css = cgrp->self.parent;
	struct tp_cgroup_info *ci, copy;
	__u64 id;

	if (!parent_css || !on_dfl(cgrp))
		return 0;
	ci = tp_cgroup_lookup(parent_css->cgroup->kn->id);
	if (!ci)
		return 0;
	copy = *ci;
	id = cgrp->kn->id;
	bpf_map_update_elem(&cgroups, &id, &copy, BPF_NOEXIST);
	return 0;
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(tp_cgroup_rmdir, struct cgroup *cgrp, const char *path)
{
	struct cgroup_subsys_state *parent_css = cgrp->self.parent;
	__u64 id;

	/* A task's root is removed by its owner (collector__untrack), not here. */
	if (!parent_css || !on_dfl(cgrp) || !tp_cgroup_lookup(parent_css->cgroup->kn->id))
		return 0;
	id = cgrp->kn->id;
	bpf_map_delete_elem(&cgroups, &id);
	return 0;
}

/* Counted, and told to the program table as if it exited (TP_EV_LEFT). */
static __always_inline void left_task(struct task_struct *task, struct tp_thread *th)
{
	struct tp_cgroup_info ci = { .slot = th->slot, .gen = th->gen };
	struct tp_proc_stats *ps = bpf_map_lookup_elem(&proc_stats, &ci.slot);
	struct tp_exit_event *e;

	if (ps)
		__sync_fetch_and_add(&ps->left_task, 1);
	e = tp_event_reserve(sizeof(*e), TP_EV_LEFT, &ci, task);
	if (!e)
		return;
	e->runtime_ns = task->se.sum_exec_runtime;
	e->start_ns = 0;
	e->exit_code = 0;
	e->flags = TP_EXIT_GROUP_DEAD;
	tp_copy_comm(e->comm, task);
	bpf_ringbuf_submit(e, 0);
}

/*
 * A process moved into a task's cgroup from outside is the task's from now on; one
 * moved out is no longer. Only the leader is reported: its other threads are
 * adopted at their next wakeup (sched.bpf.c).
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(tp_cgroup_attach_task, struct cgroup *dst, const char *path, struct task_struct *task,
	     bool threadgroup)
{
	bool leader = task->pid == task->tgid;
	struct tp_cgroup_info *ci;
	struct tp_thread *th;

	if (!on_dfl(dst))
		return 0;
	th = tp_thread_get(task);
	ci = tp_cgroup_lookup(dst->kn->id);
	if (ci) {
		/* Moves inside one task (into a nested cgroup) change nothing. */
		if (th && th->slot == ci->slot && th->gen == ci->gen)
			return 0;
		if (th && leader)
			tp_alive_add(th->slot, -1);
		if (leader)
			tp_alive_add(ci->slot, 1);
		tp_thread_adopt(task, ci);
		return 0;
	}
	if (th) {
		/* What it did while in the task stays the task's: CPU, I/O, its program's. */
		tp_charge_cpu(task, th);
		tp_charge_ioac(task, th);
		if (leader) {
			tp_alive_add(th->slot, -1);
			left_task(task, th);
		}
		bpf_task_storage_delete(&threads, task);
	}
	return 0;
}
