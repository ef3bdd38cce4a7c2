// SPDX-License-Identifier: GPL-2.0
/*
 * Memory programs: resident memory of a task's address spaces, summed, with its high
 * water mark (the fallback when the cgroup has no memory.peak), and OOM kills.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"

#define PAGE_SHIFT 12
#define NR_MM_COUNTERS 4
#define MM_SWAPENTS 2

/*
 * Growth or shrinkage of an address space, in pages, that is charged to its task at
 * once: smaller changes wait for more. A task's resident figure (and so its peak)
 * lags each of its address spaces by less than this, 256 KiB: the order of the
 * kernel's own per-CPU batching of these counters. The shared, atomically updated
 * figures are then touched once per 64 pages instead of at every page fault.
 */
#define RSS_BATCH_PAGES 64

/* What was last charged for one address space (pages: file + anon + shmem). */
struct tp_mm {
	__s64 charged;
	__u32 slot;
	__u32 gen;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct tp_mm);
} mms SEC(".maps");

static __always_inline __s64 nonneg(__s64 v)
{
	return v > 0 ? v : 0;
}

static __always_inline void mem_add(__u32 slot, __s64 bytes)
{
	struct tp_mem_stats *ms = bpf_map_lookup_elem(&mem_stats, &slot);
	__s64 *pp = bpf_map_lookup_elem(&phase_peak, &slot), n;

	if (!ms || !bytes)
		return;
	n = __sync_fetch_and_add(&ms->rss_bytes, bytes) + bytes;
	tp_raise_max(&ms->peak_rss_bytes, n);
	if (pp)
		tp_raise_max(pp, n);
}

/*
 * Fires whenever a counter of an address space changes, often from a context other
 * than its owner (fork copies the child's pages, reclaim, exit): the owner decides.
 * The first event of an address space charges everything it holds then. The
 * counters are read whole at each event, and what is charged moves by
 * compare-and-swap: events of one address space on two CPUs charge each page once.
 */
SEC("tp_btf/rss_stat")
int BPF_PROG(tp_rss_stat, struct mm_struct *mm, int member)
{
	__u64 key = (__u64)mm;
	struct tp_cgroup_info *ci;
	struct task_struct *owner;
	struct tp_mm *m, fresh = {};
	__u32 idx = (__u32)member, slot, *gen;
	__s64 pages, old, delta;

	if (idx >= NR_MM_COUNTERS || idx == MM_SWAPENTS)
		return 0;
	/*
	 * Page faults all over the host land here: an address space whose owner never
	 * had task storage is no task's, two loads and no lookup. One with no owner is
	 * being torn down (its last user exited): only the table knows whose it was.
	 * mm->owner is not a trusted pointer: its task is found by its cgroup.
	 */
	owner = mm->owner;
	if (owner && !owner->bpf_storage)
		return 0;
	m = bpf_map_lookup_elem(&mms, &key);
	if (!m) {
		if (!owner)
			return 0;
		ci = tp_cgroup_lookup(owner->cgroups->dfl_cgrp->kn->id);
		if (!ci)
			return 0;
		fresh.slot = ci->slot;
		fresh.gen = ci->gen;
		if (bpf_map_update_elem(&mms, &key, &fresh, BPF_NOEXIST))
			return 0;
		m = bpf_map_lookup_elem(&mms, &key);
		if (!m)
			return 0;
	}
	slot = m->slot;
	gen = bpf_map_lookup_elem(&slot_gen, &slot);
	if (!gen || *gen != m->gen) {
		/* Its task is over (or the address belongs to a new mm of no task). */
		bpf_map_delete_elem(&mms, &key);
		return 0;
	}
	/* file, anon and shmem pages (MM_SWAPENTS, index 2, is not resident) */
	pages = nonneg(mm->rss_stat[0].count) + nonneg(mm->rss_stat[1].count) +
		nonneg(mm->rss_stat[3].count);
	old = m->charged;
	delta = pages - old;
	if (pages && delta < RSS_BATCH_PAGES && delta > -RSS_BATCH_PAGES)
		return 0;
	if (__sync_val_compare_and_swap(&m->charged, old, pages) != old)
		return 0; /* another CPU charged it meanwhile; the next event catches up */
	mem_add(slot, delta << PAGE_SHIFT);
	/* Torn down: forget it, so that a new mm at this address starts afresh. */
	if (!pages)
		bpf_map_delete_elem(&mms, &key);
	return 0;
}

SEC("tp_btf/mark_victim")
int BPF_PROG(tp_mark_victim, struct task_struct *task, uid_t uid)
{
	struct tp_thread *th = tp_thread_get(task);
	struct tp_note_event *e;
	struct tp_mem_stats *ms;
	__u32 slot;

	if (!th)
		return 0;
	slot = th->slot;
	ms = bpf_map_lookup_elem(&mem_stats, &slot);
	if (ms)
		__sync_fetch_and_add(&ms->oom_kills, 1);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		tp_count_lost(slot);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->hdr.type = TP_EV_NOTE;
	e->hdr.slot = slot;
	e->hdr.gen = th->gen;
	e->hdr.pid = task->pid;
	e->hdr.tgid = task->tgid;
	e->hdr.ts_ns = bpf_ktime_get_ns();
	e->kind = TP_NOTE_OOM_KILL;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), task->comm);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
