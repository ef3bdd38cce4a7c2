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

/*
 * In-flight requests of tracked tasks: a table of buckets of TP_RQ_WAYS entries, each
 * entry claimed and freed by a compare-and-swap of one word, so that neither submission
 * nor completion takes a lock (the LRU hash map this replaced took its locks with
 * interrupts off at each update and delete: 340 and 360 ns a request, against 240 and
 * 200 now, docs/PERFORMANCE.md). A request always falls in the same bucket (its tag's,
 * rq_bucket), so a completion of any request of the host, tracked or not, reads one
 * while some tracked request is in flight (rq_inflight, below), and none otherwise.
 *
 * An entry's word is the request's address with the time of its claim in the top 16
 * bits (which a kernel address has all set) in units of 2^30 ns: a claim that finds an
 * entry stale (claimed TP_RQ_STALE units ago, a completion never delivered, see
 * docs/ARCHITECTURE.md) takes it over with the same compare-and-swap, and a completion
 * that finds its word changed under it takes no sample. A bucket full of requests in
 * flight loses the new one's latency sample, counted in lost_events.
 */
#define TP_RQ_BUCKETS 8192 /* a power of two: 1 MiB, of which a device touches its tags' */
#define TP_RQ_WAYS 4
#define TP_RQ_STALE 28 /* units of 2^30 ns: 30 s */
#define TP_RQ_ADDR 0x0000ffffffffffffull

struct tp_request {
	__u64 word;	/* address and claim time; 0: a free entry */
	__u64 start_ns; /* when it began, if the kernel does not stamp it */
	__u32 slot;
	__u32 gen;
	__u64 pad; /* 32 bytes: a bucket is two cache lines */
};

struct tp_rq_bucket {
	struct tp_request way[TP_RQ_WAYS];
};

/*
 * Entries in use in the table: +1 when a free one is claimed, -1 when one is freed
 * (a stale one taken over stays counted). While none is, a completion or merge of the
 * host reads this line only, not its bucket's two: the rest of the host's completions
 * cost 100 ns, not 200-270 (ABI 12, docs/PERFORMANCE.md). A line of its own in .bss,
 * which a hand-over shares: written only by the I/O of tracked tasks.
 */
__u64 rq_inflight __attribute__((aligned(64))) = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_RQ_BUCKETS);
	__type(key, __u32);
	__type(value, struct tp_rq_bucket);
} requests SEC(".maps");

/*
 * A request's address as a number: the verifier forbids arithmetic on a pointer, but
 * not storing one in a map and reading the word back. Per CPU and per program (a
 * program never runs nested in itself on one CPU), so nothing writes between the two.
 */
enum { RQ_AT_START, RQ_AT_COMPLETE, RQ_AT_MERGE, RQ_AT_KINDS };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RQ_AT_KINDS);
	__type(key, __u32);
	__type(value, __u64);
} rq_addr SEC(".maps");

static __always_inline __u64 rq_number(struct request *rq, __u32 at)
{
	__u64 *p = bpf_map_lookup_elem(&rq_addr, &at);

	if (!p)
		return 0;
	*p = (__u64)rq;
	return *(volatile __u64 *)p;
}

/*
 * The bucket of a request: by its tag (the scheduler's, or else the driver's, fixed
 * from its allocation to its completion), after its queue's and hardware queue's
 * offsets. A device's requests in flight then sit side by side in a few pages, where
 * buckets by a hash of the address spread them over the whole table: on this machine
 * each cold page cost the submission ~100 ns (docs/PERFORMANCE.md).
 */
static __always_inline struct tp_rq_bucket *rq_bucket(struct request *rq)
{
	int tag = rq->internal_tag >= 0 ? rq->internal_tag : rq->tag;
	__u32 b = ((__u32)rq->q->id * 0x9E3779B1u) >> 20;

	b += rq->mq_hctx->queue_num * 256 + (__u32)tag;
	b &= TP_RQ_BUCKETS - 1;
	return bpf_map_lookup_elem(&requests, &b);
}

static __always_inline bool rq_is(__u64 word, __u64 rq)
{
	return word && ((word ^ rq) & TP_RQ_ADDR) == 0;
}

/*
 * An entry's word from old to new, unless another CPU changed it first. Benchmark
 * variants (TP_OFF, bpf/maps.bpf.h) may store instead, and keep no count, to measure
 * what each costs.
 */
static __always_inline bool rq_swap(__u64 *word, __u64 old, __u64 new)
{
	if (tp_off(TP_OFF_RQ_CAS)) {
		*word = new;
		return true;
	}
	return __sync_val_compare_and_swap(word, old, new) == old;
}

static __always_inline void rq_inflight_add(__s64 n)
{
	if (!tp_off(TP_OFF_RQ_GATE))
		__sync_fetch_and_add(&rq_inflight, n);
}

/* Whether some tracked request may be in flight: else a completion has nothing to find. */
static __always_inline bool rq_any_inflight(void)
{
	return tp_off(TP_OFF_RQ_GATE) || *(volatile __u64 *)&rq_inflight;
}

/* The entry of request rq in its bucket and its word, or NULL. */
static __always_inline struct tp_request *rq_find(struct tp_rq_bucket *bk, __u64 rq, __u64 *word)
{
	for (int i = 0; i < TP_RQ_WAYS; i++) {
		*word = bk->way[i].word;
		if (rq_is(*word, rq))
			return &bk->way[i];
	}
	return NULL;
}

/*
 * An entry for request rq begun at start: its own (left by a completion never seen),
 * else a free or stale one, each taken by compare-and-swap against another CPU doing
 * the same. NULL when every entry is another request in flight.
 */
static __always_inline struct tp_request *rq_claim(struct tp_rq_bucket *bk, __u64 rq, __u64 start)
{
	__u16 now = (__u16)(start >> 30);
	__u64 mine = (rq & TP_RQ_ADDR) | ((__u64)now << 48), w;
	struct tp_request *e = rq_find(bk, rq, &w);

	if (e)
		return rq_swap(&e->word, w, mine) ? e : NULL;
	for (int i = 0; i < TP_RQ_WAYS; i++) {
		w = bk->way[i].word;
		if (w && (__s16)(now - (__u16)(w >> 48)) < TP_RQ_STALE)
			continue;
		if (rq_swap(&bk->way[i].word, w, mine)) {
			if (!w)
				rq_inflight_add(1);
			return &bk->way[i];
		}
	}
	return NULL;
}

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
	struct tp_rq_bucket *bk;
	struct tp_request *e;
	__u64 a, w;

	if (!rq_any_inflight())
		return 0;
	a = rq_number(next, RQ_AT_MERGE);
	bk = rq_bucket(next);
	e = bk && a ? rq_find(bk, a, &w) : NULL;
	if (e && rq_swap(&e->word, w, 0))
		rq_inflight_add(-1);
	return 0;
}

/* A new request from its first bio, in the submitter's context. */
SEC("tp_btf/block_io_start")
int BPF_PROG(tp_block_io_start, struct request *rq)
{
	__u32 op = rq->cmd_flags & REQ_OP_MASK, bytes = rq->__data_len, slot, gen;
	struct tp_rq_bucket *bk;
	struct tp_io_stats *st;
	struct tp_request *e;
	__u64 start, own, a;

	st = charge_submitter(op, bytes, &slot, &gen);
	if (!st)
		return 0;
	if (op == REQ_OP_READ)
		st->read_ops++;
	else
		st->write_ops++;
	if (tp_off(TP_OFF_RQ_TABLE))
		return 0;
	/*
	 * The kernel stamps the request just after this tracepoint (blk_account_io_start),
	 * unless the queue keeps no statistics: then it is stamped here. The stamp it had
	 * from its allocation, older by microseconds, dates the claim.
	 */
	start = rq->start_time_ns;
	own = start ? 0 : bpf_ktime_get_ns();
	a = rq_number(rq, RQ_AT_START);
	bk = rq_bucket(rq);
	e = bk && a ? rq_claim(bk, a, start ? start : own) : NULL;
	if (!e) {
		/* Its bucket full of requests in flight: a latency sample lost, and said. */
		tp_count_lost(slot);
		return 0;
	}
	e->start_ns = own;
	e->slot = slot;
	e->gen = gen;
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
	struct tp_rq_bucket *bk;
	struct tp_io_stats *st;
	struct tp_request *e;
	__u64 a, delta, w;
	__u32 slot, gen;

	/* No tracked request in flight anywhere: nothing to find. */
	if (!rq_any_inflight())
		return 0;
	a = rq_number(rq, RQ_AT_COMPLETE);
	bk = rq_bucket(rq);
	e = bk && a ? rq_find(bk, a, &w) : NULL;
	if (!e)
		return 0;
	if (!error && nr_bytes < rq->__data_len)
		return 0;
	slot = e->slot;
	gen = e->gen;
	delta = e->start_ns;
	/* Read, then freed: unless taken over meanwhile, when what was read is not its. */
	if (!rq_swap(&e->word, w, 0))
		return 0;
	rq_inflight_add(-1);
	st = bpf_map_lookup_elem(&io_stats, &slot);
	if (!st || !tp_slot_current(slot, gen))
		return 0;
	if (error) {
		count_bytes(st, rq->cmd_flags & REQ_OP_MASK, -(__s64)rq->__data_len);
	} else {
		/* Values, not pointers, are chosen between: the verifier wants one kind. */
		__u64 now = bpf_ktime_get_ns(), start = rq->start_time_ns;

		if (!start)
			start = delta;
		delta = now > start ? now - start : 0;
		st->lat.count++;
		st->lat.sum += delta;
		st->lat.slots[tp_log2_slot(delta)]++;
	}
	return 0;
}
