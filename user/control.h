/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The daemon's control socket: one request per connection, one line of tab-separated
 * fields (ids, label keys and values hold no tab or control character), then the
 * answer: "ok" and its fields, or "error" and one line saying why; `end` follows its
 * "ok" line with the task's JSON record, until the daemon closes the connection.
 *
 *   start ID CGROUP [K=V ...]  ->  ok METRICS_SOCKET
 *   end ID                     ->  ok, then the record
 */
#ifndef TP_CONTROL_H
#define TP_CONTROL_H

#define CONTROL_SOCKET "/run/taskprobe/control.sock"
#define CONTROL_LINE_MAX 32768

/* The daemon's socket: --socket, else TASKPROBE_CONTROL, else CONTROL_SOCKET. */
const char *control_path(const char *opt);

#endif /* TP_CONTROL_H */
