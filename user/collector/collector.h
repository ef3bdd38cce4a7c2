/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The collector core: loads and attaches the BPF programs once, tracks task cgroups
 * in slots, drains the ring buffer into per-task aggregates and reads the figures.
 * It has no CLI in it: `taskprobe run` embeds it, the daemon reuses it unchanged.
 */
#ifndef TP_COLLECTOR_H
#define TP_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "model/figures.h"
#include "taskprobe.h"

struct collector;

struct collector_opts {
	/* Ring buffer size in bytes, a power of two >= the page size; 0 for the default. */
	__u32 ringbuf_bytes;
	/* Tasks tracked at once (slots), 1..TP_MAX_TASKS_LIMIT; 0 for TP_MAX_TASKS. */
	int max_tasks;
	/* What is collected (collect.h); 0 for everything. */
	unsigned collect;
	/*
	 * A pin directory where a collector that died (or handed over) left its maps and
	 * links: they are taken over, the maps reused and the links kept attached, when
	 * they are of this version and size (collector__adopted says whether); else, or
	 * NULL, a collector anew.
	 */
	const char *adopt_dir;
};

/* Called for each exec of a tracked task as events are drained (args: NUL-separated). */
typedef void (*collector_exec_fn)(void *ctx, const char *path, const char *args, size_t args_len,
				  bool truncated);
/* The task in slot gets its execs (one subscriber per task); 0 or -EINVAL. */
int collector__on_exec(struct collector *c, int slot, collector_exec_fn fn, void *ctx);

/*
 * Loads and attaches; NULL with errno set (EPERM: no BPF permission, ENOENT: no BTF).
 * A task may be run without one (the collector never stops the job): the reads below
 * take c NULL as a collector with no slots (nothing read, nothing drained), and
 * collector__collects(NULL) is COLLECT_CGROUP_ONLY.
 */
struct collector *collector__open(const struct collector_opts *opts);
void collector__free(struct collector *c);

/*
 * Pins the maps at DIR/maps/NAME and the attached programs' links at DIR/links/NAME
 * (DIR on a bpffs), replacing pins left by a collector that died; 0 or -errno.
 * collector__free (and unpin) removes them.
 */
int collector__pin(struct collector *c, const char *dir);
void collector__unpin(struct collector *c);

/*
 * Copy each exec's argv (256 bytes) into its event, for the task in slot only (its
 * exec rules read them: ~700 ns an exec); off again when it is untracked.
 */
int collector__capture_args(struct collector *c, int slot, bool on);
/*
 * Resident memory from BPF (rss_stat: every page fault of the host) is attached only
 * when a task needs it: one whose cgroup has no memory figures of its own (no memory
 * controller on cgroup2, no v1 memory cgroup). Once attached it stays. 0 or -errno;
 * 0 also when memory is not collected.
 */
int collector__need_rss(struct collector *c);
/* What this collector collects (collect.h): its programs loaded and attached. */
unsigned collector__collects(const struct collector *c);

struct procs;
/*
 * The slot's processes as a record lists them: those that ended or left, and those
 * alive (ending at now_ns), the PROCS_MAX longest, times since start_ns (CLOCK_MONOTONIC),
 * sorted by start. out is the caller's to free (procs__fini); 0 or -errno.
 */
int collector__processes(const struct collector *c, int slot, __u64 now_ns, __u64 start_ns,
			 struct procs *out);
struct notes;
/* The slot's notable moments so far (times CLOCK_MONOTONIC); empty for a free slot. */
const struct notes *collector__notes(const struct collector *c, int slot);
/* Starts counting the cgroup subtree at path as a new task; returns its slot or -errno. */
int collector__track(struct collector *c, const char *path);
/* Stops counting a slot and forgets its aggregates. */
int collector__untrack(struct collector *c, int slot);
/*
 * An adopted collector: the task a collector before us tracked in slot (its cgroup at
 * path) is ours now, its counts as they are. The slot, or -ENOENT when that collector
 * had freed it, -EINVAL when it is taken.
 */
int collector__retrack(struct collector *c, int slot, const char *path);
/* Whether opts.adopt_dir was taken over; else *why says why not (NULL: not asked). */
bool collector__adopted(const struct collector *c, const char **why);
/* Freed from now on without unpinning: a daemon handing over to the next one. */
void collector__keep_pins(struct collector *c);

/*
 * Events wake the reader only once a quarter of the ring buffer is full: callers
 * call collector__poll at least this often, whatever the fd says.
 */
#define COLLECTOR_DRAIN_MS 100

/* An fd that is readable when the ring buffer is filling up (for epoll). */
int collector__epoll_fd(const struct collector *c);
/* Drains waiting events into the aggregates; waits up to timeout_ms for the first. */
int collector__poll(struct collector *c, int timeout_ms);
/*
 * What is due by time (now: CLOCK_MONOTONIC ns): the library scans of processes that
 * just exec'd, repeated as their libraries load. The event loop's tick calls it.
 */
void collector__tick(struct collector *c, __u64 now);
struct loop;
/*
 * Registers the ring buffer's fd and the tick (drain, then collector__tick) on l:
 * before the sessions' ticks, so that a sample reads what was drained just then.
 */
int collector__watch(struct collector *c, struct loop *l);
/*
 * Makes every figure of threads that already exited final: each CPU is made to
 * switch once (a dying thread's last slice is counted at its last switch), live
 * threads are charged (the task iterator), then the ring buffer is drained.
 */
int collector__sync(struct collector *c);

int collector__read(struct collector *c, int slot, struct task_figures *out);
/*
 * The peak of resident memory since the last call (or since tracking), and a new
 * window that starts from what is resident now.
 */
__s64 collector__take_peak(struct collector *c, int slot);
/* The task's program table, in no particular order; valid until the next poll or untrack. */
const struct program_stat *collector__programs(const struct collector *c, int slot, size_t *n);
struct http_ports;
struct net_figures;
/*
 * The task's network figures (free with net_figures__fini). Refused and timed-out
 * connects to ports in ports count as HTTP failures.
 */
int collector__net(struct collector *c, int slot, const struct http_ports *ports,
		   struct net_figures *out);

/* Copies of a library (libc.so.6, libssl.so.3, libgnutls.so.30) probed so far. */
int collector__probed_libs(const struct collector *c, const char *name);

/* Events no task could take (full ring buffer), over the collector's life. */
__u64 collector__lost_total(struct collector *c);
/*
 * Runs of the collector's programs the kernel skipped since load (a program fired while
 * it was already running on that CPU, as a completion interrupting a completion).
 */
__u64 collector__skipped_runs(struct collector *c);

/* What the kernel says of each loaded program (run time and count need bpf_stats_enabled). */
struct collector_prog_stat {
	const char *name;
	__u64 run_time_ns;
	__u64 run_cnt;
	__u64 recursion_misses;
};

typedef void (*collector_prog_fn)(void *ctx, const struct collector_prog_stat *st);
void collector__prog_stats(struct collector *c, collector_prog_fn fn, void *ctx);

#endif /* TP_COLLECTOR_H */
