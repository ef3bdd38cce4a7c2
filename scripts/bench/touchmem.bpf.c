// SPDX-License-Identifier: GPL-2.0
/*
 * What the first touch of each kind of memory costs a program on sched_process_exec
 * (scripts/bench/touch.sh, second table). For each exec, these programs run in this
 * order, each touching one thing, most of them twice in a row: the first of a pair
 * pays for the touch since the last context switch, the second for the same work with
 * that memory at hand. The kinds are those the collector's lifecycle programs use:
 * the clock, a global (.bss), a hash map's value, an array map's, a per-CPU array's,
 * the thread's task storage (made for each child at its fork, as the collector's), and
 * a task storage the thread has none of; before it, the thread's storage pointer alone
 * (the collector's test for an untracked thread). Last, a read of the thread's name by
 * loads and by a helper call.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u64 touch_bss;
__u64 touch_data SEC(".data.touch");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} touch_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} touch_array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} touch_pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} touch_task SEC(".maps");

/* Never made for any thread: a lookup that finds none, as for an untracked thread. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} touch_none SEC(".maps");

static __always_inline int clock_read(void)
{
	return bpf_ktime_get_ns() == 1;
}

static __always_inline int bump(void *map)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(map, &k);

	if (v)
		(*v)++;
	return 0;
}

static __always_inline int bump_task(void *map)
{
	__u64 *v = bpf_task_storage_get(map, bpf_get_current_task_btf(), 0, 0);

	if (v)
		(*v)++;
	return 0;
}

/* Names: m<order>_<what>; touch.sh prints them in order. */
#define M(n, what, body)                                                                           \
	SEC("tp_btf/sched_process_exec")                                                           \
	int BPF_PROG(m##n##_##what)                                                                \
	{                                                                                          \
		body;                                                                              \
	}

M(01, empty, return 0)
M(02, clock, return clock_read())
M(03, clock, return clock_read())
M(04, bss, touch_bss++; return 0)
M(05, bss, touch_bss++; return 0)
M(06, hash, return bump(&touch_hash))
M(07, hash, return bump(&touch_hash))
M(08, array, return bump(&touch_array))
M(09, array, return bump(&touch_array))
M(10, pcpu, return bump(&touch_pcpu))
M(11, pcpu, return bump(&touch_pcpu))
M(12, ptr, return bpf_get_current_task_btf()->bpf_storage != 0)
M(13, none, return bump_task(&touch_none))
M(14, task, return bump_task(&touch_task))
M(15, task, return bump_task(&touch_task))
M(16, data, touch_data++; return 0)

/*
 * The thread's name read three times, its line warm after the first: through the
 * BTF pointer (two loads, as the collector's lifecycle events since 2026-12-07), then
 * with bpf_probe_read_kernel() (a helper call, as they did before), then loads again.
 */
static __always_inline int comm_loads(struct task_struct *p)
{
	const __u64 *c = (const __u64 *)p->comm;

	return (c[0] ^ c[1]) == 1;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(m17_comm_load, struct task_struct *p)
{
	return comm_loads(p);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(m18_comm_helper, struct task_struct *p)
{
	char c[16];

	bpf_probe_read_kernel(c, sizeof(c), p->comm);
	return c[0] == 1;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(m19_comm_load, struct task_struct *p)
{
	return comm_loads(p);
}

M(20, empty, return 0)

/*
 * A page or a line: two arrays of 1024 values of 64 bytes (64 KiB each, vmalloc'ed, as
 * the collector's per-slot arrays of 8192), touched at one value of the first (m21),
 * one of the second (m22: a new page and a new line), a value 512 bytes on in the
 * first (m23: the same page, a new line), and one 4096 bytes on in the first (m24: a
 * new page of the same map). What m22 and m24 pay over m23 is the page's; what the
 * collector would save by keeping a slot's figures of several maps in one value.
 */
struct touch_slot {
	__u64 v[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct touch_slot);
} touch_big SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct touch_slot);
} touch_big2 SEC(".maps");

static __always_inline int bump_slot(void *map, __u32 k)
{
	struct touch_slot *v = bpf_map_lookup_elem(map, &k);

	if (v)
		v->v[0]++;
	return 0;
}

M(21, page, return bump_slot(&touch_big, 0))
M(22, newpage, return bump_slot(&touch_big2, 0))
M(23, sameline, return bump_slot(&touch_big, 8))
M(24, samemap, return bump_slot(&touch_big, 64))

SEC("tp_btf/sched_process_fork")
int BPF_PROG(m00_fork, struct task_struct *parent, struct task_struct *child)
{
	bpf_task_storage_get(&touch_task, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	return 0;
}
