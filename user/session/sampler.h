/* SPDX-License-Identifier: GPL-2.0 */
/* A task's time series: samples its live figures every interval, flushes blocks to the store. */
#ifndef TP_SAMPLER_H
#define TP_SAMPLER_H

#include <linux/types.h>

#include "collector/collector.h"
#include "collector/memsrc.h"
#include "model/phases.h"
#include "model/series.h"
#include "store/store.h"

/* Series reach the store at least this often (every 5 s: docs/storage.md). */
#define SAMPLER_FLUSH_MS 5000

struct sampler {
	const char *cgroup; /* its cpu.stat is live to the tick; BPF charges at switch-out */
	const char *root;   /* the cgroup2 mount: the host's busy CPU, for the others' cores */
	__u64 last_host_us, last_kids_us; /* the root's ticks, its children's usage */
	__u64 last_usage_us;
	struct cg_cpu_stat last_cs; /* cpu.stat as last read: kept if the cgroup goes */
	bool have_cs;
	struct collector *c;
	int slot;
	__u64 start_ns;
	struct task_figures last;
	__u64 last_ns;
	struct series_point *pts;
	size_t n;
	size_t cap;
	size_t flushed;
	int seq;
	__s64 peak_millicores;
	struct store *store;	     /* NULL: keep in memory only */
	const struct phases *phases; /* each sample carries the phase open then; may be NULL */
	const struct memsrc *mem;    /* memory in use from the cgroup; NULL or MEMSRC_BPF: BPF's */
	__s64 tid;
	__u64 last_flush_ns;
};

void sampler__init(struct sampler *s, struct collector *c, int slot, const char *cgroup,
		   __u64 start_ns, struct store *store, __s64 tid);
/*
 * A task adopted from a daemon before us (sampler__init done): the samples it stored
 * are read back, and sampling goes on from now_ns (the gap has none).
 */
int sampler__resume(struct sampler *s, __u64 now_ns);
/* Takes one sample at now_ns (CLOCK_MONOTONIC) and flushes when SAMPLER_FLUSH_MS passed. */
int sampler__sample(struct sampler *s, __u64 now_ns);
/* Writes the samples not yet stored as one block. */
int sampler__flush(struct sampler *s);
/*
 * At the task's end: all samples as one block in place of the 5-second ones, which
 * were there for durability; per-block overhead would otherwise dominate storage.
 */
int sampler__compact(struct sampler *s);
void sampler__fini(struct sampler *s);

#endif /* TP_SAMPLER_H */
