/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the collector: struct collector and its slots, shared by the collector's own
 * files (collector.c, events.c, libraries.c, pins.c, read.c) and by no other.
 *
 * What is declared here starts with coll_: coll__verb for what acts on a struct
 * collector (obj__verb; collector__ is the public interface's), coll_name for the rest.
 */
#ifndef TP_COLLECTOR_INT_H
#define TP_COLLECTOR_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <linux/types.h>

#include "base/htab.h"
#include "base/loop.h"
#include "model/net_figures.h"
#include "model/notes.h"
#include "model/procs.h"

/* Library copies probed at once (a container brings its own), and scans queued. */
#define MAX_LIBS 64
#define MAX_SCANS 1024

/*
 * collector.h's typedef, repeated (C11 takes an identical typedef twice, and the
 * compiler checks that the two agree): including collector.h here would make the two
 * headers include each other, a circle for scripts/check-layers.py.
 */
typedef void (*collector_exec_fn)(void *ctx, const char *path, const char *args, size_t args_len,
				  bool truncated);

struct bpf_link;
struct program_stat;
struct ring_buffer;
struct taskprobe_bpf;

/*
 * Which program a live process runs, how much of its CPU was already attributed, and
 * its span so far (the record's processes).
 */
struct proc_info {
	__u32 prog;  /* index + 1 into slot.progs; 0: not known yet */
	__u32 execd; /* it exec'd in the task */
	__u64 base_runtime;
	__u64 start_ns; /* when it began (its leader's start_time; else when first seen) */
	__u64 cpu_ns;
	__u32 ppid;
	__s32 exit; /* the shell-style status its group exit gave, or -1 */
	/*
	 * When its process ended (its span is in slot.done), or 0: kept a moment for its
	 * other threads' exit events, which may come after the last one's (each is sent
	 * at its thread's last switch-out), then dropped (events.c).
	 */
	__u64 ended_ns;
};

struct slot {
	bool used;
	__u32 gen;
	__u64 cgid;
	struct program_stat *progs;
	size_t nprogs;
	size_t cap;
	struct htab prog_index; /* hash of path -> index + 1 */
	struct htab procs;	/* tgid -> struct proc_info */
	__u64 events;
	struct net_acc net;
	struct notes notes;
	struct procs done;	       /* the processes that ended or left */
	struct bpf_link *skb_links[2]; /* plaintext HTTP: the task cgroup's packets */
	collector_exec_fn exec_fn;     /* the task's own subscriber, or NULL */
	void *exec_ctx;
};

enum lib_kind { LIB_C, LIB_SSL, LIB_GNUTLS, LIB_KINDS };

struct lib_copy {
	dev_t dev;
	ino_t ino;
	enum lib_kind kind;
};

/* A process whose mappings are looked at for library copies, once due. */
struct lib_scan {
	__u64 due_ns;
	int tgid;
	int left; /* scans still to do */
};

/* An event copied for the drain (stage.c): its time, its arrival, where its bytes are. */
struct coll_pend_ev {
	__u64 ts;
	size_t ord;
	size_t off;
	size_t size;
};

struct coll_pending {
	struct coll_pend_ev *v;
	size_t n, cap;
	char *bytes;
	size_t used, bytes_cap;
};

struct collector {
	struct taskprobe_bpf *skel;
	struct ring_buffer *rb;
	struct tp_stage_pos *stage_pos;			/* stage_pos's memory, ncpus of them */
	const volatile struct tp_stage_rec *stage_recs; /* stage_recs's memory */
	__u32 stage_nrecs;				/* records per CPU (0: no stages) */
	struct coll_pending pend;			/* events of the drain under way */
	int ncpus;
	void *percpu_buf; /* ncpus values of the largest per-CPU map */
	__u32 next_gen;
	__u64 stale_events;
	struct lib_copy libs[MAX_LIBS];
	int nlibs;
	struct bpf_link **links; /* uprobes, one per function (perf events) */
	size_t nlinks;
	int *ufds; /* or uprobe_multi links, one per program and library copy */
	size_t nufds;
	bool uprobe_multi;
	struct lib_scan scans[MAX_SCANS];
	int nscans;
	__u64 lib_attach_errors;
	char pin_dir[PATH_MAX]; /* where the maps and links are pinned, or "" */
	struct slot *slots;	/* max_tasks of them, one per slot of the per-task maps */
	int max_tasks;
	unsigned collect; /* collect.h */
	struct loop_handler ring_h;
	__u64 refreshed_ns;  /* when the task iterator last charged live threads */
	bool adopted;	     /* the maps and links of a collector before us (opts.adopt_dir) */
	bool keep_pins;	     /* freed without unpinning: the next daemon adopts them */
	char adopt_why[256]; /* why they could not be adopted, or "" */
};

/* A slot of a task tracked now; none without a collector (no BPF: c is NULL). */
static inline bool coll__slot_ok(const struct collector *c, int slot)
{
	return c && slot >= 0 && slot < c->max_tasks && c->slots[slot].used;
}

static inline __u64 coll_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static inline bool coll_grow(void **arr, size_t n, size_t size)
{
	void *p = realloc(*arr, (n + 1) * size);

	if (p)
		*arr = p;
	return p != NULL;
}

/* events.c: the ring buffer's callback, each event into its slot's aggregates. */
int coll__handle_event(void *ctx, void *data, size_t size);
/* stage.c */
__u32 coll__stage_size(int ncpus, __u32 bytes);
int coll__stage_map(struct collector *c);
void coll__stage_unmap(struct collector *c);
int coll__collect_event(void *ctx, void *data, size_t size);
int coll__drain(struct collector *c);

/* libraries.c */
/* The host's library copies, probed at open. */
void coll__attach_host_libs(struct collector *c);
/* A process that just exec'd: its libraries are looked for as they load. */
void coll__queue_lib_scan(struct collector *c, int tgid);
/* The library probes detached (in the background) and their links freed. */
void coll__release_libs(struct collector *c);

/* pins.c: adopting what a collector before us pinned under dir. */
int coll__reuse_pins(struct collector *c, const char *dir);
void coll__adopt_links(struct collector *c, const char *dir);
/* A link attached after collector__pin: pinned with the others (0 when nothing is pinned). */
int coll__pin_late_link(struct collector *c, const char *name, struct bpf_link *l);

/* read.c */
/* Live threads charged now (the task iterator); 0 or -errno. */
int coll__refresh(struct collector *c);
/* The endpoint rows of one use of a slot, deleted when it is untracked. */
void coll__delete_endpoints(struct collector *c, __u32 slot, __u32 gen);

#endif /* TP_COLLECTOR_INT_H */
