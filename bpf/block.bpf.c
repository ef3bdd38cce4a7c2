// SPDX-License-Identifier: GPL-2.0
/*
 * Block-layer programs: I/O operations, bytes and latency, charged to the task whose
 * thread submitted the request.
 *
 * Bytes and operations are counted where the I/O is submitted, in the submitter's
 * context: block_io_start for a new request (its first bio), block_bio_{back,front}merge
 * for a bio joining a request that exists. Completion only measures latency and takes
 * back the bytes of a request that failed. A completion runs in whatever context the
 * softirq found (on this machine a few in a thousand were never delivered to the
 * program, see docs/ARCHITECTURE.md), so nothing that must add up depends on seeing it.
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
	__u64 start_ns; /* when the request began, if the kernel did not stamp it */
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

static __always_inline void count_bytes(struct tp_io_stats *st, __u32 op, __s64 bytes)
{
	if (op == REQ_OP_READ)
		st->read_bytes += bytes;
	else if (op == REQ_OP_WRITE)
		st->write_bytes += bytes;
}

/*
 * Bytes of I/O the current thread submits, charged to its task: the task's figures, or
 * NULL when it is not a task's (one load) or carries no data of one (flushes,
 * discards).
 */
static __always_inline struct tp_io_stats *charge_submitter(__u32 op, __u32 bytes, __u32 *slot,
							    __u32 *gen)
{
	struct tp_io_stats *st;
	struct tp_thread *th;

	if (!bytes || (op != REQ_OP_READ && op != REQ_OP_WRITE))
		return NULL;
	th = tp_current_thread();
	if (!th)
		return NULL;
	*slot = th->slot;
	*gen = th->gen;
	st = bpf_map_lookup_elem(&io_stats, slot);
	if (st)
		count_bytes(st, op, bytes);
	return st;
}

/*
 * A bio joining a request that already exists (plugged, or queued in the scheduler,
 * maybe another task's): its bytes are its submitter's. It is no operation of its own.
 */
static __always_inline int bio_merged(struct bio *bio)
{
	struct tp_io_stats *st;
	__u32 slot, gen;

	st = charge_submitter(bio->bi_opf & REQ_OP_MASK, bio->bi_iter.bi_size, &slot, &gen);
	if (st)
		st->merged_bios++;
	return 0;
}

SEC("tp_btf/block_bio_backmerge")
int BPF_PROG(tp_block_bio_backmerge, struct bio *bio)
{
	return bio_merged(bio);
}

SEC("tp_btf/block_bio_frontmerge")
int BPF_PROG(tp_block_bio_frontmerge, struct bio *bio)
{
	return bio_merged(bio);
}

/*
 * A request merged into another is freed with no completion of its own; what it
 * carried was counted when it started. Forget it, or its address, reused, would be
 * taken for it.
 */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(tp_block_rq_merge, struct request *next)
{
	__u64 key = (__u64)next;

	bpf_map_delete_elem(&requests, &key);
	return 0;
}

/* A new request from its first bio, in the submitter's context. */
SEC("tp_btf/block_io_start")
int BPF_PROG(tp_block_io_start, struct request *rq)
{
	__u32 op = rq->cmd_flags & REQ_OP_MASK, bytes = rq->__data_len, slot, gen;
	struct tp_request r = {};
	struct tp_io_stats *st;
	__u64 key = (__u64)rq;

	st = charge_submitter(op, bytes, &slot, &gen);
	if (!st)
		return 0;
	if (op == REQ_OP_READ)
		st->read_ops++;
	else
		st->write_ops++;
	r.slot = slot;
	r.gen = gen;
	/* Requests are stamped when made, unless the queue keeps no statistics at all. */
	if (!rq->start_time_ns)
		r.start_ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&requests, &key, &r, BPF_ANY);
	return 0;
}

/*
 * A request may complete in parts (blk_update_request with fewer bytes than remain);
 * it is done at its last part or at an error, whose bytes never moved. Latency runs
 * from the request's making (its first bio, the kernel's own stamp) to its last part:
 * the wait the submitter sees, queueing included, as iostat's await.
 */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(tp_block_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, delta, start;
	struct tp_io_stats *st;
	struct tp_request *r;
	__u32 slot;

	r = bpf_map_lookup_elem(&requests, &key);
	if (!r)
		return 0;
	if (!error && nr_bytes < rq->__data_len)
		return 0;
	slot = r->slot;
	st = bpf_map_lookup_elem(&io_stats, &slot);
	if (!st || !tp_slot_current(slot, r->gen))
		goto out;
	if (error) {
		count_bytes(st, rq->cmd_flags & REQ_OP_MASK, -(__s64)rq->__data_len);
	} else {
		/* Values, not pointers, are chosen between: the verifier wants one kind. */
		start = rq->start_time_ns;
		if (!start)
			start = r->start_ns;
		delta = bpf_ktime_get_ns();
		delta = delta > start ? delta - start : 0;
		st->lat.count++;
		st->lat.sum += delta;
		st->lat.slots[tp_log2_slot(delta)]++;
	}
out:
	bpf_map_delete_elem(&requests, &key);
	return 0;
}
