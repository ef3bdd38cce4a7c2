/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One task from its start to its record: its cgroup and the collector's slot for it,
 * its metrics socket, phases, counting rules, time series, store row and what happens
 * to processes that outlive its main one. `run` has one (embedded); a daemon has many
 * on one collector and one event loop. Starting the processes is the caller's.
 */
#ifndef TP_SESSION_H
#define TP_SESSION_H

#include <limits.h>
#include <stdbool.h>
#include <linux/types.h>

#include "base/loop.h"
#include "collector/hostread.h"
#include "collector/memsrc.h"
#include "collector/metrics_socket.h"
#include "model/phases.h"
#include "model/rules.h"
#include "model/task.h"
#include "model/user_metrics.h"
#include "session/sampler.h"

struct collector;
struct config;
struct store;
struct session;

/* The task is over: its main process ended and its cgroup is empty (or left running). */
typedef void (*session_done_fn)(void *ctx, struct session *s);

/* A task's leftovers' grace period and its series' interval, in s and ms (run, daemon). */
#define RUN_GRACE_DEFAULT 5
#define RUN_GRACE_MAX 86400
#define RUN_INTERVAL_DEFAULT 1000
#define RUN_INTERVAL_MIN 100
#define RUN_INTERVAL_MAX 60000

struct session_params {
	const char *id;
	char **argv; /* the command, for the record */
	int argc;
	const struct label *labels;
	int nlabels;
	const struct config *cfg;
	const char *config_path; /* its counting rules, NULL: the default config's */
	const char *config_text; /* or that file as it was read before (the daemon's) */
	const char *rules_path;	 /* more rules, or NULL */
	const char *rules_text;	 /* or their text, read before (from `run`, by the daemon) */
	const char *root;	 /* the cgroup2 mount */
	const char *cgroup;	 /* track this cgroup (task start), never removed; NULL: make one */
	__u64 interval_ms;	 /* series sampling */
	__u64 grace_s;		 /* leftovers' time before cgroup.kill */
	bool keep_leftovers;
	bool by_daemon;	     /* for the record: whose collector */
	const char *db_path; /* the store's, for its spool; NULL: not stored (--no-db) */
	unsigned collect; /* what the task asks collected (collect.h), 0: all the collector does */
	session_done_fn done_fn;
	void *done_ctx;
	/*
	 * A phase boundary reset the v1 memory watermark (memsrc.h): the task's peak so far
	 * is in s->mem.v1_peak, for whoever takes the task over (the daemon's handover).
	 * Called with done_ctx; may be NULL.
	 */
	session_done_fn mem_reset_fn;
	/* Other tasks named by their ids in the host context (the daemon's), or NULL. */
	const struct host_tasks *tasks;
};

struct session {
	struct session_params p;
	char cgroup[PATH_MAX];
	char memcg[PATH_MAX]; /* v1 memory mirror on hybrid hosts, or "" */
	struct memsrc mem;    /* where memory in use and its peaks are read */
	const char *cg_rel;   /* the task's cgroup below the cgroup2 mount */
	struct collector *c;
	int slot;
	struct store *store;
	__s64 tid; /* its store row, or -1 */
	struct msock msock;
	struct um_table um;
	struct phases phases;
	struct rules rules;
	struct sampler sampler;
	struct task_record rec;
	__u64 args_truncated; /* execs whose argv was cut before the rules saw it */
	__u64 start_ns;
	__u64 next_sample_ns;
	__u64 main_end_ns;
	__u64 grace_end_ns; /* 0: no grace period running */
	int events_fd;	    /* cgroup.events: EPOLLPRI when populated changes */
	int cg_lock;	    /* our hold on the cgroup we made (cgroup_make_task), or -1 */
	struct loop_handler events_h;
	struct loop_handler msock_h;
	struct loop *loop;
	bool adopted;	  /* the cgroup is someone else's: tracked, not made or removed */
	bool handed_over; /* freed for the daemon after us: not untracked, nothing removed */
	bool main_done;
	bool done;
	int leftovers;
	enum leftover_action action;
	struct host_snap host_start; /* the host at the task's start (or its adoption) */
	struct psi_totals psi_start; /* the task's cgroup's pressure totals then */
};

/* Nothing open yet: session__fini may be called on it. */
void session__clear(struct session *s);
/* Parameters kept, config rules and rules_path loaded: a bad line is -EINVAL (said). */
int session__init(struct session *s, const struct session_params *p);
/* Whether a rule needs each exec's argv (the collector copies it only then). */
bool session__needs_args(const struct session *s);
/*
 * Makes the task's cgroup, tracks it, opens its metrics socket, its series and its
 * store row (store may be NULL), and registers its fds and tick on loop. 0 or -errno,
 * the reason said in one line.
 */
int session__start(struct session *s, struct collector *c, struct store *store, struct loop *loop);
/*
 * The host around the task from now (every cgroup's and process's CPU: a few ms, up to
 * tens on a host of a thousand processes): the caller calls it once the task's command
 * runs, so that the job never waits for it. Without it, the record has the task's
 * pressure but not the rest of the host.
 */
void session__host_begin(struct session *s);
/* What a daemon before us left of a task (handover.h), for session__resume. */
struct session_resume {
	int slot;
	bool run; /* its cgroup was the daemon's (a run's), else a worker's */
	const char *cgroup;
	const char *memcg;
	const char *msock;
	__u64 start_ns;
	__u64 start_real_ns;
	__s64 tid;
	__u64 mem_v1_peak; /* its memsrc's v1_peak when it was last described */
};
/*
 * session__start for a task a daemon before us tracked (session__init done): its slot
 * taken over with its counts (collector__retrack), its cgroup, metrics socket and store
 * row its own again, its stored series read back; the record notes the change of
 * hands. 0, or -errno (-ENOENT: that daemon had freed the slot; -EALREADY: it stored the
 * task whole already).
 */
int session__resume(struct session *s, struct collector *c, struct store *store, struct loop *loop,
		    const struct session_resume *r);
/* Frees what is ours of it and leaves the rest to the daemon after us. */
void session__hand_over(struct session *s);
/* A line of the task's output (the output module's callback, ctx the session). */
void session__output_line(void *ctx, const char *line, size_t len);
/* The main process ended at now: leftovers get their grace period, or are killed. */
void session__main_exited(struct session *s);
/* A signal came during the grace period: the leftovers are killed now. */
void session__interrupt(struct session *s);
/*
 * The task's record, once it is over (the collector synced): open phases closed, the
 * socket drained, every figure read. The caller adds how the main process ended.
 */
struct task_record *session__finish(struct session *s);
/*
 * A running task's record so far, status "running", into out (task_record__fini frees
 * it): the figures now, open phases as if they ended now. -ENOENT once it is over.
 * Nothing of the session changes. The caller drains the collector's events first
 * (collector__poll), once for any number of tasks.
 */
int session__live(struct session *s, struct task_record *out);
/*
 * The record into the store row, then the store's housekeeping; where the store fails
 * (or never opened), into the spool of p.db_path. 0, or -errno (said as a warning).
 */
int session__store(struct session *s);
/* A fault of taskprobe's side: one warning line, and a note in the record. */
void session__fault(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Untracks, removes the cgroups (unless the leftovers were kept), frees. */
void session__fini(struct session *s);

#endif /* TP_SESSION_H */
