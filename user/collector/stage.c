// SPDX-License-Identifier: GPL-2.0
/*
 * The per-CPU stages of the lifecycle's events (struct tp_stage_rec in taskprobe.h),
 * read through their maps' memory, and the drain that hands them and the ring
 * buffer's events to coll__handle_event in the order they happened.
 *
 * Why an order must be made: a process's exec may be staged on one CPU and its exit on
 * another, and a process that leaves the task sends its event on the ring buffer. Each
 * source alone is in order; together they are merged by their time stamps. The ring
 * buffer is read first: an event committed to it after that is read at the next drain,
 * and nothing staged can depend on it (a process's exec and exit are committed before
 * anything that follows them, such as its leaving the task, can happen).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/util.h"
#include "collector/collector.h"
#include "collector/collector_int.h"
#include "taskprobe.skel.h"

#define STAGE_RECS_MIN 4u
#define STAGE_RECS_MAX 1024u

/*
 * Records per CPU: the stages of all CPUs take at most what the ring buffer does
 * (bytes), each between STAGE_RECS_MIN and STAGE_RECS_MAX, a power of two. A test's
 * small ring buffer (TASKPROBE_RINGBUF_BYTES) makes small stages, which fill too.
 */
__u32 coll__stage_size(int ncpus, __u32 bytes)
{
	__u32 want = bytes / (__u32)sizeof(struct tp_stage_rec) / (__u32)ncpus, n = 1;

	while (n * 2 <= want && n * 2 <= STAGE_RECS_MAX)
		n *= 2;
	return n < STAGE_RECS_MIN ? STAGE_RECS_MIN : n;
}

static size_t map_bytes(const struct bpf_map *m)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = (((size_t)bpf_map__value_size(m) + 7) & ~(size_t)7) * bpf_map__max_entries(m);

	return (n + page - 1) / page * page;
}

int coll__stage_map(struct collector *c)
{
	struct bpf_map *pos = c->skel->maps.stage_pos, *recs = c->skel->maps.stage_recs;
	void *p, *r;

	p = mmap(NULL, map_bytes(pos), PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(pos), 0);
	if (p == MAP_FAILED)
		return -errno;
	r = mmap(NULL, map_bytes(recs), PROT_READ, MAP_SHARED, bpf_map__fd(recs), 0);
	if (r == MAP_FAILED) {
		int err = -errno;

		munmap(p, map_bytes(pos));
		return err;
	}
	c->stage_pos = p;
	c->stage_recs = r;
	return 0;
}

void coll__stage_unmap(struct collector *c)
{
	if (c->stage_pos)
		munmap(c->stage_pos, map_bytes(c->skel->maps.stage_pos));
	if (c->stage_recs)
		munmap((void *)c->stage_recs, map_bytes(c->skel->maps.stage_recs));
	c->stage_pos = NULL;
	c->stage_recs = NULL;
	free(c->pend.v);
	free(c->pend.bytes);
	memset(&c->pend, 0, sizeof(c->pend));
}

/* A copy of one event, to be handed on in order; false when memory ran out. */
static bool pend_add(struct coll_pending *p, const void *data, size_t size)
{
	const struct tp_event_hdr *h = data;

	if (size < sizeof(*h))
		return true;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct coll_pend_ev *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return false;
		p->v = v;
		p->cap = cap;
	}
	if (p->used + size > p->bytes_cap) {
		size_t cap = p->bytes_cap ? p->bytes_cap : 64 << 10;
		char *b;

		while (cap < p->used + size)
			cap *= 2;
		b = realloc(p->bytes, cap);
		if (!b)
			return false;
		p->bytes = b;
		p->bytes_cap = cap;
	}
	memcpy(p->bytes + p->used, data, size);
	p->v[p->n] = (struct coll_pend_ev){ h->ts_ns, p->n, p->used, size };
	p->used += size;
	p->n++;
	return true;
}

int coll__collect_event(void *ctx, void *data, size_t size)
{
	struct collector *c = ctx;

	/* Out of memory: handed on at once, out of order rather than lost. */
	if (!pend_add(&c->pend, data, size))
		coll__handle_event(c, data, size);
	return 0;
}

/* Every record committed on every CPU's stage, copied, and the stages advanced. */
static void stage_collect(struct collector *c)
{
	__u32 nrecs = c->stage_nrecs;

	if (!c->stage_pos || !nrecs)
		return;
	for (int cpu = 0; cpu < c->ncpus; cpu++) {
		struct tp_stage_pos *pos = &c->stage_pos[cpu];
		__u64 t = pos->tail;

		for (;;) {
			const volatile struct tp_stage_rec *r =
				&c->stage_recs[(size_t)cpu * nrecs + (t & (nrecs - 1))];
			__u32 size;

			if (__atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) != t + 1)
				break;
			size = r->size;
			if (size > sizeof(r->ev))
				size = sizeof(r->ev);
			if (!pend_add(&c->pend, (const void *)&r->ev, size))
				coll__handle_event(c, (void *)&r->ev, size);
			t++;
		}
		/* The records up to t are copied: the programs may write them again. */
		__atomic_store_n(&pos->tail, t, __ATOMIC_RELEASE);
	}
}

static int by_time(const void *a, const void *b)
{
	const struct coll_pend_ev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

int coll__drain(struct collector *c)
{
	struct coll_pending *p = &c->pend;
	int n = ring_buffer__consume(c->rb);

	stage_collect(c);
	if (p->n > 1)
		qsort(p->v, p->n, sizeof(*p->v), by_time);
	for (size_t i = 0; i < p->n; i++)
		coll__handle_event(c, p->bytes + p->v[i].off, p->v[i].size);
	p->n = 0;
	p->used = 0;
	return n < 0 ? n : 0;
}
