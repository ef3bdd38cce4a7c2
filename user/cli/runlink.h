/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A `run` whose task is the host daemon's: the daemon makes and tracks the cgroup,
 * `run` spawns into it, passes the output through (and each line on to the daemon),
 * says when the command ended, and gets the record back (control.h has the messages).
 */
#ifndef TP_RUNLINK_H
#define TP_RUNLINK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/un.h>

struct run_opts;

struct runlink {
	int fd; /* the connection, or -1 */
	char cgroup[PATH_MAX];
	char memcg[PATH_MAX];
	char msock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *buf; /* what the daemon sent since its "ok" */
	size_t len;
	size_t cap;
	bool empty;  /* "e": the task's cgroup is empty */
	bool closed; /* the daemon closed the connection */
	bool broken; /* a send failed: nothing more is sent */
};

#define RUNLINK_CLOSED                                                                             \
	{                                                                                          \
		.fd = -1                                                                           \
	}

/* Whether o lets the daemon hold the task: no store, config or --no-daemon of its own. */
bool runlink__wanted(const struct run_opts *o);
/*
 * Asks the daemon to start o's task: 1 when it did (paths filled), 0 when no daemon
 * listens (embed the collector), -EINVAL for a bad --rules file, or -1 when the daemon
 * refused, is stuck or went away (the reason said in one line).
 */
int runlink__open(struct runlink *rl, const struct run_opts *o);
/*
 * The daemon went away (rl->closed): asks the daemon now on the socket, if any, for the
 * task it adopted. 1 when it has it (the link goes on as before), 0 when no daemon
 * answers yet, -1 when the one answering has no such task.
 */
int runlink__reattach(struct runlink *rl, const char *id);
/* Whether what the daemon sent holds the record ("ok", then the JSON). */
bool runlink__has_record(const struct runlink *rl);
/* A line of the task's output, on to the daemon (the output module's callback). */
void runlink__line(void *ctx, const char *line, size_t len);
void runlink__exited(struct runlink *rl, int wstatus, int exec_err);
void runlink__interrupt(struct runlink *rl);
/* Reads what the daemon sent, without waiting: empty and closed are set from it. */
void runlink__read(struct runlink *rl);
/* How long the record is waited for once the task ended ("f" sent). */
#define RUNLINK_FINISH_S 30

/*
 * The output is drained: the record's JSON text from the daemon, or NULL: the daemon
 * went away before it sent it (closed or broken), or is stuck (neither; the caller says).
 */
const char *runlink__finish(struct runlink *rl);
void runlink__close(struct runlink *rl);

#endif /* TP_RUNLINK_H */
