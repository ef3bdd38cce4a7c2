/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the host daemon: struct daemon and its tasks, shared by the daemon's own files
 * (daemon.c, daemon_tasks.c, daemon_adopt.c) and by no other.
 *
 * What is declared here starts with daemon_: daemon__verb for what acts on a struct
 * daemon (daemon__ is also the public interface's), daemon_name for the rest.
 */
#ifndef TP_DAEMON_INT_H
#define TP_DAEMON_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "base/loop.h"
#include "base/util.h"
#include "model/config.h"
#include "model/task.h"
#include "session/output.h"
#include "session/session.h"
#include "store/ship.h"

/*
 * daemon.h's forward declaration, repeated: including daemon.h here would make it and
 * this header include each other, a circle for scripts/check-layers.py. For the same
 * reason struct daemon keeps the one field of struct daemon_opts it needs later (sock).
 */
struct collector;
struct daemon;
struct handover_task;

/* What a `run` client may have sent and not yet ended by a newline. */
#define RUN_IN_MAX (OUTPUT_LINE_MAX + 64)

/* Requests being read at once. */
#define PENDING_MAX 64

/* A control connection whose request line is still coming. */
struct pending {
	struct daemon *d;
	struct loop_handler h;
	char *buf;
	size_t len;
	size_t cap;
	__u64 deadline_ns;
};

/* A task of the daemon's: its session, and the strings its parameters point to. */
struct dtask {
	struct session s;
	struct config cfg; /* the config when it started: a reload is for new tasks */
	struct daemon *d;
	char id[TP_ID_MAX + 1];
	char cgroup[PATH_MAX];
	char kv[TP_LABELS_MAX][TP_LABEL_KEY_MAX + TP_LABEL_VAL_MAX + 2];
	struct label labels[TP_LABELS_MAX];
	char **argv; /* a run's command and rules (owned) */
	int argc;
	char *rules_text;
	/* A `run` client's connection, open for the task's life; -1 for `task start`. */
	int conn;
	struct loop_handler conn_h;
	char *in; /* what it sent, short of a newline */
	size_t in_len;
	int wstatus;
	int exec_err;
	bool exited; /* its main process ended ("x") */
	/* Adopted from the daemon before us: its `run` client may come back until then. */
	bool orphan;
	__u64 reattach_until_ns;
	bool lost;   /* the client went away before "f": the task is interrupted */
	bool finish; /* to be finished after this batch of events */
};

struct daemon {
	const char *sock; /* daemon_opts.sock: NULL for control_path()'s */
	struct config cfg;
	const char *config_path;
	char root[PATH_MAX];
	struct collector *c;
	struct store *store;
	struct loop loop;
	int lfd;
	int sfd;
	struct loop_handler listen_h, sig_h;
	struct pending *pending[PENDING_MAX];
	int npending;
	bool listen_paused;   /* pending is full: new clients wait in the listen backlog */
	struct dtask **tasks; /* max_tasks of them: the collector's slot table */
	int ntasks;
	int max_tasks;
	int exit_code;
	char *config_text; /* the config file as last loaded: new tasks' rules */
	char db[PATH_MAX];
	struct shipper ship;	 /* with a sink: the outbox to the fleet, on a thread of its own */
	__u64 spool_next_ns;	 /* the next look into the store's spool */
	char handover[PATH_MAX]; /* DB.tasks: the tasks described for the daemon after us */
	bool keep_tasks;	 /* a stop hands the tasks over instead of ending them */
	bool handing_over;	 /* stopping so: tasks are let go, not ended */
	struct handover_task *left; /* the tasks the daemon before us left */
	int nleft;
	int held;	       /* the store's .daemon.lock, -1 if none */
	char pinned[PATH_MAX]; /* where the maps and links are pinned, "" if nowhere */
	/* The tasks ended lately, for naming them in the others' host context. */
	struct ended_task *ended; /* ENDED_MAX of them, a ring; NULL until one ends */
	int ended_next;
	struct host_tasks host_tasks;
};

#define ENDED_MAX 256

/* A task that ended: its cgroup (below the mount), id and CPU as last read. */
struct ended_task {
	char rel[512];
	char id[TP_ID_MAX + 1];
	__u64 usage_us;
	__u64 end_ns; /* CLOCK_MONOTONIC; 0: an empty entry */
};

/* daemon_tasks.c: the task table, the `run` clients, the requests. */
/* One line to a control client (cut to fit 1 KiB); a client gone is nobody to tell. */
void daemon_answer(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct dtask *daemon__find_task(struct daemon *d, const char *id);
/* t out of the table and freed; its session ended, or let go when handing_over. */
void daemon__drop_task(struct daemon *d, struct dtask *t);
/* The session parameters every task of the daemon's shares. */
void daemon__params(struct daemon *d, struct dtask *t, struct session_params *p, int nlabels);
/* The record of a task, written to fd and stored; end is how it ended. */
void daemon__end_task(struct daemon *d, struct dtask *t, enum task_end end, int fd);
/* A run's task is over (main process ended, cgroup empty): its client drains, then "f". */
void daemon_on_run_done(void *ctx, struct session *s);
/* The task described again for the daemon after us (its v1 memory peak changed). */
void daemon_redescribe(void *ctx, struct session *s);
/* A run's client is gone for good: its task ends as interrupted, once its cgroup is empty. */
void daemon_run_is_lost(struct dtask *t);
/* After each batch of events: the runs' tasks that are over get their records. */
void daemon__finish_runs(struct loop *l, void *ctx);
/* One request line (its newline cut off): answered; true when fd is kept (a run's). */
bool daemon__on_request(struct daemon *d, int fd, char *line);

/* daemon_adopt.c: the tasks a daemon before us left. */
/*
 * The tasks the daemon before us left (it died, or handed over): adopted when its maps
 * were (adopted), else ended with what is left. Said in one line.
 */
void daemon__adopt_tasks(struct daemon *d, struct handover_task *h, int n, bool adopted,
			 const char *why);
/*
 * An adopted run's task whose client did not come back in time: it ends as a run's
 * whose client went away (interrupted, once its cgroup is empty).
 */
void daemon__expire_orphans(struct loop *l, void *ctx, __u64 now);

#endif /* TP_DAEMON_INT_H */
