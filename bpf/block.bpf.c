// SPDX-License-Identifier: GPL-2.0
/*
 * Block-layer programs: I/O operations, bytes and latency, charged to the task whose
 * thread submitted the request. block_io_start runs in the submitter's context
 * (request allocated from its bio), so the request is tagged there and never at
 * completion, whose context is unrelated.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "bits.bpf.h"

#define REQ_OP_BITS 8
#define REQ_OP_MASK ((1u << REQ_OP_BITS) - 1)
#define REQ_OP_READ 0
#define REQ_OP_WRITE 1

struct tp_request {
	__u64 issue_ns;
	__u32 slot;
	__u32 gen;
};

/* In-flight requests of tracked tasks; LRU so that requests never completed age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct tp_request);
} requests SEC(".maps");

SEC("tp_btf/block_io_start")
int BPF_PROG(tp_block_io_start, struct request *rq)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct tp_request r = {};
	struct tp_thread *th;
	__u64 key = (__u64)rq;

	th = tp_thread_get(cur);
	if (!th)
		return 0;
	r.slot = th->slot;
	r.gen = th->gen;
	bpf_map_update_elem(&requests, &key, &r, BPF_ANY);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_block_rq_issue, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct tp_request *r = bpf_map_lookup_elem(&requests, &key);

	if (r)
		r->issue_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(tp_block_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, delta;
	struct tp_io_stats *st;
	struct tp_request *r;
	__u32 op, slot, *gen;

	r = bpf_map_lookup_elem(&requests, &key);
	if (!r)
		return 0;
	slot = r->slot;
	gen = bpf_map_lookup_elem(&slot_gen, &slot);
	st = bpf_map_lookup_elem(&io_stats, &slot);
	if (!gen || *gen != r->gen || !st)
		goto out;
	op = rq->cmd_flags & REQ_OP_MASK;
	if (op == REQ_OP_READ) {
		st->read_ops++;
		st->read_bytes += nr_bytes;
	} else if (op == REQ_OP_WRITE) {
		st->write_ops++;
		st->write_bytes += nr_bytes;
	}
	if (r->issue_ns) {
		delta = bpf_ktime_get_ns() - r->issue_ns;
		st->lat_count++;
		st->lat_sum_ns += delta;
		st->lat_hist[tp_log2_slot(delta)]++;
	}
out:
	bpf_map_delete_elem(&requests, &key);
	return 0;
}
