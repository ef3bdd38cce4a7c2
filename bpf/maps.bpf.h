/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Maps shared by every BPF unit in bpf/. They are __weak so that the static linker
 * (bpftool gen object) merges the copies each unit sees into one map.
 */
#ifndef TP_MAPS_BPF_H
#define TP_MAPS_BPF_H

#include <bpf/bpf_core_read.h>
#include "taskprobe.h"

/*
 * Benchmark variants only (scripts/bench/pieces.sh builds them with -DTP_OFF=bits):
 * each bit switches one piece of the lifecycle programs off, to measure what it costs.
 * The shipped build has TP_OFF 0, where every test below is false at compile time.
 */
#ifndef TP_OFF
#define TP_OFF 0
#endif
#define TP_OFF_RING 0x01      /* no ring-buffer reserve/submit: exec and exit events */
#define TP_OFF_ADOPT 0x02     /* fork: no task storage for the child */
#define TP_OFF_PATH 0x04      /* exec: no filename copy */
#define TP_OFF_COMM 0x08      /* exec and exit events: no comm copy */
#define TP_OFF_STATS 0x10     /* fork, exec, exit: no proc_stats counters */
#define TP_OFF_CHARGE 0x20    /* exit: no I/O charge */
#define TP_OFF_QUERY 0x40     /* exec: submit without the ring-buffer query */
#define TP_OFF_STORAGE 0x80   /* exit: no storage writes (then no exit event) */
#define TP_OFF_FILL 0x100     /* exec: a staged record with no header or body */
#define TP_OFF_FIELDS 0x200   /* exec: a staged record with its header's clock read only */
#define TP_OFF_RQ_TABLE 0x400 /* block_io_start: bytes and ops only, no entry (no latency) */
#define TP_OFF_RQ_GATE 0x800  /* block: no count of entries in use (completions read a bucket) */
#define TP_OFF_RQ_CAS 0x1000  /* block: entries claimed and freed by plain stores (racy) */

/* A function, not a macro, so that the compiler folds it without a constant-operand warning. */
static __always_inline bool tp_off(__u32 piece)
{
	return TP_OFF & piece;
}

/* cgroup v2 id (kernfs node id) -> task slot; holds task roots and their descendants. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TP_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct tp_cgroup_info);
} cgroups SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TP_MAX_TASKS);
	__type(key, __u32);
	__type(value, struct tp_cpu_stats);
} cpu_stats SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_MAX_TASKS);
	__type(key, __u32);
	__type(value, struct tp_proc_stats);
} proc_stats SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_global_stats);
} global_stats SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TP_MAX_TASKS);
	__type(key, __u32);
	__type(value, struct tp_io_stats);
} io_stats SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_MAX_TASKS);
	__type(key, __u32);
	__type(value, struct tp_ioac_stats);
} ioac_stats SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_MAX_TASKS);
	__type(key, __u32);
	__type(value, struct tp_mem_stats);
} mem_stats SEC(".maps") __weak;

/*
 * Per-slot peak of resident memory since userspace last reset it (at each phase
 * boundary): apart from mem_stats so that a reset never clobbers the live counters.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_MAX_TASKS);
	__type(key, __u32);
	__type(value, __s64);
} phase_peak SEC(".maps") __weak;

/* Size is set by the loader before load (collector_opts.ringbuf_bytes). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 21);
} events SEC(".maps") __weak;

/* Which use of each slot is current (0: free); stale thread state is ignored by it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_MAX_TASKS);
	__type(key, __u32);
	__type(value, __u32);
} slot_gen SEC(".maps") __weak;

/*
 * Per-thread state of threads that belong to a task. Its presence is what marks a
 * thread as tracked on the hot paths (one load of task->bpf_storage), so untracked
 * threads' events need no hash lookup.
 */
struct tp_thread {
	__u64 runtime_base; /* se.sum_exec_runtime already charged */
	__u64 delay_base;   /* sched_info.run_delay already charged */
	/* task->ioac when adopted: a thread born in the task starts at 0 */
	__u64 rchar_base;
	__u64 wchar_base;
	__u64 read_base;
	__u64 write_base;
	__u64 cancelled_base;
	__u64 runnable_since; /* histogram without sched_info: when it last became runnable */
	__u32 slot;
	__u32 gen;
	/* when it exited (0: not yet), and TP_EXIT_GROUP_DEAD: its event is sent at its last
	 * switch-out */
	__u64 exit_ns;
	__u32 exit_flags;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tp_thread);
} threads SEC(".maps") __weak;

/* Which task a cgroup belongs to, or NULL. */
static __always_inline struct tp_cgroup_info *tp_cgroup_lookup(__u64 cgid)
{
	return bpf_map_lookup_elem(&cgroups, &cgid);
}

/* The cgroup v2 id of any task, read through its css_set (tp_btf pointers). */
static __always_inline __u64 tp_task_cgroup_id(struct task_struct *t)
{
	return t->cgroups->dfl_cgrp->kn->id;
}

/* Time t has waited runnable for a CPU, all told (0 without CONFIG_SCHED_INFO). */
static __always_inline __u64 tp_run_delay(struct task_struct *t)
{
	if (bpf_core_field_exists(t->sched_info))
		return t->sched_info.run_delay;
	return 0;
}

static __always_inline void tp_count_lost(__u32 slot)
{
	struct tp_proc_stats *ps = bpf_map_lookup_elem(&proc_stats, &slot);
	struct tp_global_stats *gs;
	__u32 zero = 0;

	if (ps)
		__sync_fetch_and_add(&ps->lost_events, 1);
	gs = bpf_map_lookup_elem(&global_stats, &zero);
	if (gs)
		gs->lost_events++;
}

/*
 * The per-CPU stages (struct tp_stage_rec in taskprobe.h). Sized by the loader: stage_cpus
 * entries of stage_pos, stage_cpus * stage_recs of stage_recs (stage_recs a power of two;
 * 0: no stages, every event goes to the ring buffer).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_stage_pos);
} stage_pos SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_stage_rec);
} stage_recs SEC(".maps") __weak;

const volatile __u32 stage_cpus __weak = 0;
const volatile __u32 stage_nrecs __weak = 0;

/* A reserved record: where, and the seq that commits it. */
struct tp_staged {
	struct tp_stage_rec *rec;
	__u64 seq;
};

/*
 * A record of this CPU's stage, or NULL when it is full (or there are none): taken by
 * compare-and-swap of head, against a program that interrupts this one on this CPU.
 */
static __always_inline void *tp_stage_reserve(struct tp_staged *st)
{
	__u32 cpu = bpf_get_smp_processor_id(), nrecs = stage_nrecs, idx;
	struct tp_stage_pos *pos;
	__u64 h;

	if (!nrecs || cpu >= stage_cpus)
		return NULL;
	pos = bpf_map_lookup_elem(&stage_pos, &cpu);
	if (!pos)
		return NULL;
	for (int i = 0; i < 4; i++) {
		h = pos->head;
		if (h - *(volatile __u64 *)&pos->tail >= nrecs)
			return NULL;
		idx = cpu * nrecs + ((__u32)h & (nrecs - 1));
		st->rec = bpf_map_lookup_elem(&stage_recs, &idx);
		if (!st->rec)
			return NULL;
		if (__sync_val_compare_and_swap(&pos->head, h, h + 1) == h) {
			st->seq = h + 1;
			return &st->rec->ev;
		}
	}
	return NULL;
}

/* The record is complete: its seq, stored last, lets userspace read it. */
static __always_inline void tp_stage_commit(struct tp_staged *st, __u32 size)
{
	st->rec->size = size;
	/* An exchange: fully ordered (the stores above land first) on every architecture. */
	__sync_lock_test_and_set(&st->rec->seq, st->seq);
}

/* The header every event starts with, dated ts. */
static __always_inline void tp_event_hdr_fill(struct tp_event_hdr *hdr, __u32 type,
					      const struct tp_cgroup_info *ci,
					      struct task_struct *t, __u64 ts)
{
	hdr->type = type;
	hdr->slot = ci->slot;
	hdr->gen = ci->gen;
	hdr->pid = t->pid;
	hdr->tgid = t->tgid;
	hdr->ppid = 0;
	hdr->ts_ns = ts;
}

/* Reserve an event on the ring buffer; a failure is counted, never silent. */
static __always_inline void *
tp_event_reserve(__u64 size, __u32 type, const struct tp_cgroup_info *ci, struct task_struct *t)
{
	struct tp_event_hdr *hdr;

	if (tp_off(TP_OFF_RING))
		return NULL;
	hdr = bpf_ringbuf_reserve(&events, size, 0);
	if (!hdr) {
		tp_count_lost(ci->slot);
		return NULL;
	}
	tp_event_hdr_fill(hdr, type, ci, t, bpf_ktime_get_ns());
	return hdr;
}

/* *max = max(*max, n), atomically against other CPUs doing the same. */
static __always_inline void tp_raise_max(__s64 *max, __s64 n)
{
	__s64 cur = *max;

	/* Bounded retry: losing every race to a higher value is harmless. */
	for (int i = 0; i < 8 && n > cur; i++) {
		__s64 old = __sync_val_compare_and_swap(max, cur, n);

		if (old == cur)
			break;
		cur = old;
	}
}

/* Processes alive in a task, and the most at once. */
static __always_inline void tp_alive_add(__u32 slot, __s64 d)
{
	struct tp_proc_stats *ps = bpf_map_lookup_elem(&proc_stats, &slot);
	__s64 n;

	if (!ps)
		return;
	n = __sync_fetch_and_add(&ps->alive, d) + d;
	tp_raise_max(&ps->max_alive, n);
}

/* Is gen still the current use of slot? */
static __always_inline bool tp_slot_current(__u32 slot, __u32 gen)
{
	__u32 *g = bpf_map_lookup_elem(&slot_gen, &slot);

	return g && *g == gen;
}

/* The thread's state if it belongs to a task whose slot is still in use. */
static __always_inline struct tp_thread *tp_thread_get(struct task_struct *t)
{
	struct tp_thread *th = bpf_task_storage_get(&threads, t, 0, 0);
	__u32 slot, *gen;

	if (!th)
		return NULL;
	slot = th->slot;
	gen = bpf_map_lookup_elem(&slot_gen, &slot);
	return gen && *gen == th->gen ? th : NULL;
}

/*
 * Thread t's state if it belongs to a task: one load of its storage pointer when it
 * does not. Every thread of a task has state: adopted at fork, at a move into the task
 * (cgroup_attach_task), or by the task iterator's next pass.
 */
static __always_inline struct tp_thread *tp_task_thread(struct task_struct *t)
{
	return t->bpf_storage ? tp_thread_get(t) : NULL;
}

/*
 * A thread's name into an event: two loads through the BTF pointer, where
 * bpf_probe_read_kernel() or bpf_get_current_comm() is a helper call (the lifecycle's
 * events pay it once each, docs/PERFORMANCE.md). comm is NUL-padded by the kernel.
 */
_Static_assert(TP_COMM_LEN == 2 * sizeof(__u64), "comm is copied as two words");
static __always_inline void tp_copy_comm(char *dst, struct task_struct *t)
{
	const __u64 *src = (const __u64 *)t->comm;

	((__u64 *)dst)[0] = src[0];
	((__u64 *)dst)[1] = src[1];
}

/* The same for the current thread, where no argument of the hook is it. */
static __always_inline struct tp_thread *tp_current_thread(void)
{
	return tp_task_thread(bpf_get_current_task_btf());
}

/*
 * Makes t a thread of the task ci: CPU it used before now is not the task's.
 * Returns the state, or NULL when storage could not be had.
 */
static __always_inline struct tp_thread *tp_thread_adopt(struct task_struct *t,
							 const struct tp_cgroup_info *ci)
{
	struct tp_thread *th = bpf_task_storage_get(&threads, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!th)
		return NULL;
	if (th->slot != ci->slot || th->gen != ci->gen) {
		th->slot = ci->slot;
		th->gen = ci->gen;
		th->runtime_base = t->se.sum_exec_runtime;
		th->delay_base = tp_run_delay(t);
		th->runnable_since = 0;
		th->exit_ns = 0;
		th->rchar_base = t->ioac.rchar;
		th->wchar_base = t->ioac.wchar;
		th->read_base = t->ioac.read_bytes;
		th->write_base = t->ioac.write_bytes;
		th->cancelled_base = t->ioac.cancelled_write_bytes;
	}
	return th;
}

/*
 * Moves *base up to now and returns by how much, or 0 when it was there already. The
 * exit, last-switch-out and task-iterator programs charge the same thread from
 * different CPUs: the compare-and-swap makes each nanosecond charged once.
 */
static __always_inline __u64 tp_take_growth(__u64 *base, __u64 now)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *base;

		if (now <= old)
			return 0;
		if (__sync_val_compare_and_swap(base, old, now) == old)
			return now - old;
	}
	return 0;
}

/* Charges t's CPU time and run-queue wait since they were last charged to its task. */
static __always_inline void tp_charge_cpu(struct task_struct *t, struct tp_thread *th)
{
	__u64 ran = tp_take_growth(&th->runtime_base, t->se.sum_exec_runtime);
	__u64 waited = tp_take_growth(&th->delay_base, tp_run_delay(t));
	struct tp_cpu_stats *cs;
	__u32 slot = th->slot;

	if (!ran && !waited)
		return;
	cs = bpf_map_lookup_elem(&cpu_stats, &slot);
	if (!cs)
		return;
	cs->cpu_ns += ran;
	cs->wait_ns += waited;
}

/* Adds what t's I/O counters grew by since adoption to its task (t is exiting). */
static __always_inline void tp_charge_ioac(struct task_struct *t, struct tp_thread *th)
{
	struct tp_ioac_stats *io;
	__u32 slot = th->slot;

	io = bpf_map_lookup_elem(&ioac_stats, &slot);
	if (!io)
		return;
	__sync_fetch_and_add(&io->rchar, t->ioac.rchar - th->rchar_base);
	__sync_fetch_and_add(&io->wchar, t->ioac.wchar - th->wchar_base);
	__sync_fetch_and_add(&io->read_bytes, t->ioac.read_bytes - th->read_base);
	__sync_fetch_and_add(&io->write_bytes, t->ioac.write_bytes - th->write_base);
	__sync_fetch_and_add(&io->cancelled_write_bytes,
			     t->ioac.cancelled_write_bytes - th->cancelled_base);
}

#endif /* TP_MAPS_BPF_H */
