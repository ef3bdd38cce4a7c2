// SPDX-License-Identifier: GPL-2.0
/* A task's time series: samples its live figures every interval, flushes blocks to the store. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cgroup.h"
#include "collector/hostread.h"
#include "session/sampler.h"

void sampler__init(struct sampler *s, struct collector *c, int slot, const char *cgroup,
		   __u64 start_ns, struct store *store, __s64 tid)
{
	struct cg_cpu_stat cs;

	memset(s, 0, sizeof(*s));
	s->cgroup = cgroup;
	if (!cgroup_read_cpu_stat(cgroup, &cs))
		s->last_usage_us = cs.usage_us;
	s->c = c;
	s->slot = slot;
	s->start_ns = start_ns;
	s->last_ns = start_ns;
	s->last_flush_ns = start_ns;
	s->store = store;
	s->tid = tid;
}

int sampler__resume(struct sampler *s, __u64 now_ns)
{
	struct series_point *pts = NULL;
	size_t n = 0;
	int damaged, err;

	s->last_ns = s->last_flush_ns = now_ns;
	collector__read(s->c, s->slot, &s->last);
	if (!s->store)
		return 0;
	/* Blocks appended from here on sort after the ones stored before (by any daemon). */
	s->seq = store__series_next(s->store, s->tid);
	if (s->seq < 0)
		s->seq = 0;
	err = store__series(s->store, s->tid, &pts, &n, &damaged);
	if (err) {
		free(pts);
		return err;
	}
	s->pts = pts;
	s->n = s->cap = s->flushed = n;
	for (size_t i = 0; i < n; i++)
		if (pts[i].v[0] > s->peak_millicores)
			s->peak_millicores = pts[i].v[0];
	return 0;
}

static __s64 rate(__u64 now, __u64 before, __u64 dt_ns)
{
	return now > before && dt_ns ? (__s64)((double)(now - before) * 1e9 / (double)dt_ns) : 0;
}

/*
 * The rest of the host's CPU over the interval, in thousandths of a core (0 unknown):
 * the root's children's (the task's among them) less the task's, and what the root's
 * ticks saw beyond its children (kernel threads, processes in no cgroup).
 */
static __s64 other_millicores(struct sampler *s, __s64 task_millicores, __u64 dt)
{
	__u64 root_us, kids_us, was_root = s->last_host_us, was_kids = s->last_kids_us;
	__s64 kids, own, other;

	if (!s->root || host_read_usage(s->root, &root_us, &kids_us))
		return 0;
	s->last_host_us = root_us;
	s->last_kids_us = kids_us;
	if (!was_root)
		return 0;
	/* A child removed since takes its usage away: the root's ticks still saw it. */
	kids = kids_us > was_kids ? (__s64)((kids_us - was_kids) * 1000000 / dt) : 0;
	own = root_us > was_root ? (__s64)((root_us - was_root) * 1000000 / dt) - kids : 0;
	other = kids - task_millicores + (own > 0 ? own : 0);
	return other > 0 ? other : 0;
}

int sampler__sample(struct sampler *s, __u64 now_ns)
{
	struct task_figures f;
	struct series_point *p;
	struct cg_cpu_stat cs;
	__u64 dt = now_ns - s->last_ns, mem_now;
	int err;

	if (dt == 0)
		return 0;
	/* Without a collector (no BPF) the series has what cpu.stat gives. */
	err = collector__read(s->c, s->slot, &f);
	if (err && s->c)
		return err;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct series_point *np = realloc(s->pts, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		s->pts = np;
		s->cap = cap;
	}
	p = &s->pts[s->n++];
	p->t_ms = (now_ns - s->start_ns) / 1000000ULL;
	/*
	 * CPU in use over the interval, in thousandths of a core. BPF charges a running
	 * thread at its switch-out, so a long slice would land in a later interval;
	 * cpu.stat is brought up to date at every tick.
	 */
	if (!cgroup_read_cpu_stat(s->cgroup, &cs)) {
		p->v[0] = cs.usage_us > s->last_usage_us
				  ? (__s64)((cs.usage_us - s->last_usage_us) * 1000000 / dt)
				  : 0;
		s->last_usage_us = cs.usage_us;
		s->last_cs = cs;
		s->have_cs = true;
	} else {
		p->v[0] = f.cpu.cpu_ns > s->last.cpu.cpu_ns
				  ? (__s64)((f.cpu.cpu_ns - s->last.cpu.cpu_ns) * 1000 / dt)
				  : 0;
	}
	if (s->mem && !memsrc__now(s->mem, &mem_now))
		p->v[1] = (__s64)mem_now;
	else
		p->v[1] = f.mem.rss_bytes > 0 ? f.mem.rss_bytes : 0;
	p->v[2] = rate(f.io.read_bytes, s->last.io.read_bytes, dt);
	p->v[3] = rate(f.io.write_bytes, s->last.io.write_bytes, dt);
	p->v[4] = f.proc.alive > 0 ? f.proc.alive : 0;
	p->v[6] = rate(f.net_rx_bytes, s->last.net_rx_bytes, dt);
	p->v[7] = rate(f.net_tx_bytes, s->last.net_tx_bytes, dt);
	p->v[SERIES_HOST_OTHER] = other_millicores(s, p->v[0], dt);
	p->v[SERIES_PHASE] =
		s->phases && s->phases->depth ? s->phases->stack[s->phases->depth - 1] + 1 : 0;
	if (p->v[0] > s->peak_millicores)
		s->peak_millicores = p->v[0];
	s->last = f;
	s->last_ns = now_ns;
	if (s->store && now_ns - s->last_flush_ns >= SAMPLER_FLUSH_MS * 1000000ULL)
		return sampler__flush(s);
	return 0;
}

int sampler__flush(struct sampler *s)
{
	size_t len = 0, n = s->n - s->flushed;
	void *blob = NULL;
	int err;

	s->last_flush_ns = s->last_ns;
	if (!s->store || !n)
		return 0;
	err = series_encode(s->pts + s->flushed, n, &blob, &len);
	if (!err)
		err = store__append_series(s->store, s->tid, s->seq, blob, len, n);
	free(blob);
	if (!err) {
		s->seq++;
		s->flushed = s->n;
	}
	return err;
}

int sampler__compact(struct sampler *s)
{
	size_t len = 0;
	void *blob = NULL;
	int err;

	if (!s->store || !s->n)
		return 0;
	err = series_encode(s->pts, s->n, &blob, &len);
	if (!err)
		err = store__replace_series(s->store, s->tid, blob, len, s->n);
	free(blob);
	if (!err) {
		s->flushed = s->n;
		s->seq = 1;
	}
	return err;
}

void sampler__fini(struct sampler *s)
{
	free(s->pts);
	s->pts = NULL;
	s->n = s->cap = s->flushed = 0;
}
