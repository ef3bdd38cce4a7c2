/* SPDX-License-Identifier: GPL-2.0 */
/* What tests share: temporary files, running commands, task records, test cgroups. */
#ifndef TP_TESTUTIL_H
#define TP_TESTUTIL_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "base/json.h"

struct store;

struct tu_result {
	int status; /* shell-style: code, or 128 + signal; -1 when it could not run */
	char *out;  /* stdout and stderr, whole */
	char *err;
	__u64 wall_ns;
};

/* A path in this test's temporary directory, on disk (/var/tmp), removed after the test. */
const char *tu_tmp(const char *name);
/* Runs argv (NULL-terminated) with output captured; killed after timeout_s. */
int tu_run(char *const argv[], struct tu_result *r, int timeout_s);
/* tu_run as another user (uid, gid, no supplementary groups): nobody is 65534. */
int tu_run_as(uid_t uid, gid_t gid, char *const argv[], struct tu_result *r, int timeout_s);
/* Runs the taskprobe binary under test with the NULL-terminated arguments after it. */
int tu_tp(struct tu_result *r, int timeout_s, ...) __attribute__((sentinel));
const char *tu_bin(void);
/* Starts argv (argv[0] a path) in the background, output to /dev/null; tracked. */
pid_t tu_spawn(char *const argv[]);
/* The same, its stdout and stderr to out and err (-1: /dev/null). */
pid_t tu_spawn_fds(char *const argv[], int out, int err);
const char *tu_helper(const char *name);
/* Parses a JSON file; freed after the test. NULL (and a failed check) when bad. */
const struct json *tu_load_json(const char *path);
/* The same for JSON text, such as a command's --json output. */
const struct json *tu_parse_json(const char *text);
/* Writes text to path (a failed check when it cannot). */
void tu_write_file(const char *path, const char *text);
/* A number member of rec.metrics, or -1 when absent. */
double tu_metric(const struct json *rec, const char *name);
double tu_num(const struct json *obj, const char *key);
/* The first object of an array whose string member key equals value, or NULL. */
/* The record's notable events of kind (whose detail holds detail_has, unless NULL). */
int tu_events(const struct json *rec, const char *kind, const char *detail_has);
const struct json *tu_find(const struct json *arr, const char *key, const char *value);
/* The program-table entry of a task record with this path, or NULL. */
const struct json *tu_program(const struct json *rec, const char *path);
/* Reads the truth file that tests/helpers/burn writes: children's and its own CPU in ns. */
int tu_read_truth(const char *path, double *children_ns, double *self_ns);
/* Where cgroup2 is mounted. */
const char *tu_cgroup_root(void);
/* Makes a cgroup of its own for this test; killed and removed after the test. */
int tu_cgroup_make(char *path, size_t len);
/* Remembers a pid this test started, to SIGKILL after the test if still there. */
void tu_track_pid(pid_t pid);
/* Runs after each test: kills its pids, removes its cgroups and files. */
void tu_cleanup(void);
/* After a test process died: removes the cgroups it made (named after its pid). */
void tu_cleanup_orphans(pid_t test_pid);
/*
 * A private test network (scripts/netlab/netlab.sh) whose https server answers
 * statuses ("200,503") in turn; torn down after the test. Returns its directory
 * (for netlab.sh exec) or NULL with a failed check.
 */
const char *tu_netlab(const char *statuses);
/*
 * A PostgreSQL 15 of this test's own (scripts/pglab/pglab.sh), run by nobody:
 * database "fleet", superuser "tp", socket in DIR/sock, *port on 127.0.0.1, the
 * password in DIR/pw and a .pgpass in DIR/pgpass. Its directory, or NULL with a
 * failed check; removed after the test.
 */
const char *tu_pglab(int *port);
/* The daemon answers on sock within 10 s (false: it exited, or did not). */
bool tu_wait_socket(const char *sock, pid_t daemon);
/*
 * A daemon of this test's own on sock and db, without HTTP, tracked; runs find it
 * (TASKPROBE_CONTROL set, TASKPROBE_DB unset). -1 when it does not answer.
 */
pid_t tu_daemon(const char *db, const char *sock);
/* GET http://127.0.0.1:port/metrics (a daemon's): the body, or "" (r holds it). */
const char *tu_metrics_of(int port, struct tu_result *r);
/* The value of an unlabelled sample "NAME V" in Prometheus text, or -1. */
double tu_prom_value(const char *text, const char *name);
/* A loopback TCP port free now (whoever binds it next, a moment later). */
int tu_free_port(void);
/* pglab.sh VERB DIR (stop, start): its exit status. */
int tu_pglab_ctl(const char *dir, const char *verb);
/* SQL in the lab's database as tp: rows as "a|b" lines in r->out. */
int tu_psql(const char *dir, const char *sql, struct tu_result *r);
/* Lines of s longer than width. */
int tu_count_long_lines(const char *s, size_t width);

/* A task as a run ends it, for tu_store_task: only the figures stats and compare read. */
struct tu_task {
	const char *id;
	const char *host;
	const char *job;    /* its label job, or NULL */
	const char *status; /* NULL: exited; else a task_status_names' one */
	const char *ncpu;   /* its host's labels, or NULL */
	const char *mem_total;
	__u64 start_ns, wall_ns, cpu_ns, execs;
	__s64 mem_bytes;
	double peak_cores;
	int nphases; /* back to back from its start, each cpu_ns[i] of CPU, wall_ns[i] long */
	const char *phase[4];
	__u64 phase_wall_ns[4], phase_cpu_ns[4];
};

/* Writes t into s (store__task_begin, then store__task_end): 0 or -errno. */
int tu_store_task(struct store *s, const struct tu_task *t);

#endif /* TP_TESTUTIL_H */
