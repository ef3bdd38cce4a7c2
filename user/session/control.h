/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The daemon's control socket: one request per connection, one line of tab-separated
 * fields (ids, label keys and values hold no tab or control character; a command's
 * arguments and rules are escaped: \\ \t \n), then the answer: "ok" and its fields, or
 * "error" and one line saying why.
 *
 *   start ID CGROUP [K=V ...]        ->  ok METRICS_SOCKET
 *   end ID                           ->  ok, then the JSON record until the close
 *   tasks                            ->  ok, then a line per running task (cmd_daemon.c)
 *   run ID INTERVAL_MS GRACE_S KEEP COLLECT RULES ARGC ARG... [K=V ...]
 *                                    ->  ok CGROUP MEMCG METRICS_SOCKET
 *
 * After `run`'s "ok" the connection stays open for the task's life. `run` sends
 *   o LINE              a line of the task's output (raw, up to the newline)
 *   x WSTATUS EXEC_ERR  its main process ended (wait status; errno of a failed exec)
 *   i                   interrupted: kill the leftovers now
 *   f                   the output is drained: finish the task
 * and the daemon sends "e" once the cgroup is empty, and after `f` "ok" and the
 * JSON record, then closes.
 */
#ifndef TP_CONTROL_H
#define TP_CONTROL_H

#include <stdio.h>

#define CONTROL_SOCKET "/run/taskprobe/control.sock"
#define CONTROL_LINE_MAX (1 << 20)

/* The daemon's socket: --socket, else TASKPROBE_CONTROL, else CONTROL_SOCKET. */
const char *control_path(const char *opt);
/* How long connect waits for a daemon whose backlog is full. */
#define CONTROL_CONNECT_S 10
/* How long control_ask waits on each read of the daemon's answer (SO_RCVTIMEO). */
#define CONTROL_ANSWER_S 30
/*
 * A connected socket, or -errno (-ENOENT, -ECONNREFUSED: no daemon; -ETIMEDOUT: a
 * daemon that accepted nothing for CONTROL_CONNECT_S). No message.
 */
int control_connect(const char *path);
/*
 * One request, its whole answer (NUL-terminated, length in *len) when it begins "ok";
 * else NULL after one line "WHO: why" (no daemon, or the daemon's error line).
 */
char *control_ask(const char *path, const char *req, size_t *len, const char *who);
/* A tab, then s escaped (\\ \t \n), to f. */
void control_put_field(FILE *f, const char *s);
/* Undoes control_put_field's escapes in place; returns s. */
char *control_unescape(char *s);

#endif /* TP_CONTROL_H */
