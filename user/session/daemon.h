/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host daemon's service (`taskprobe daemon`): one collector for the host, a
 * session per task that a worker starts and ends over the control socket, `run`
 * clients' tasks, the tasks of a daemon before it adopted, the spool drained, the
 * shipper run. Its HTTP API is wired by the command (view/api.h), over the getters.
 */
#ifndef TP_DAEMON_H
#define TP_DAEMON_H

#include <stdbool.h>

struct daemon;
struct jw;

struct daemon_opts {
	const char *config_path; /* NULL: TP_DEFAULT_CONFIG */
	const char *db;		 /* NULL: TASKPROBE_DB, else the config's */
	const char *sock;	 /* NULL: control_path()'s */
	bool keep_tasks;	 /* a stop hands the tasks over (also keep_tasks in the config) */
};

/*
 * Loads the config, takes the store (one daemon a store), loads or adopts the
 * collector, adopts the tasks a daemon before left, listens on the control socket.
 * NULL once one line has said why.
 */
struct daemon *daemon__open(const struct daemon_opts *o);
/*
 * Runs the loop until SIGTERM or SIGINT (SIGHUP reloads the config); then ends the
 * tasks as interrupted, or hands them over. http: where its API listens, for the
 * line that says the daemon is up (NULL: none). 0, or 1.
 */
int daemon__serve(struct daemon *d, const char *http);
void daemon__close(struct daemon *d);

const struct config *daemon__config(const struct daemon *d);
struct store *daemon__store(struct daemon *d);
struct collector *daemon__collector(struct daemon *d);
struct loop *daemon__loop(struct daemon *d);
const char *daemon__db(const struct daemon *d);
/* For the API (ctx: the daemon): tasks running; a running task's record so far. */
int daemon__tasks_running(void *ctx);
int daemon__live_record(void *ctx, const char *id, struct jw *w);

#endif /* TP_DAEMON_H */
