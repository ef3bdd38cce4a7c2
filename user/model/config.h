/* SPDX-License-Identifier: GPL-2.0 */
/* /etc/taskprobe/taskprobe.conf: "key = value" lines; a bad line is an error with its number. */
#ifndef TP_CONFIG_H
#define TP_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "model/net_figures.h"

#define TP_DEFAULT_CONFIG "/etc/taskprobe/taskprobe.conf"
#define TP_DEFAULT_DB "/var/lib/taskprobe/taskprobe.db"
#define TP_DEFAULT_PIN_DIR "/sys/fs/bpf/taskprobe"
/* Treeherder drops a performance artifact of a framework it has not registered: see
 * docs/metrics-language.md, "Treeherder". */
#define PERFHERDER_FRAMEWORK_DEFAULT "build_metrics"
#define TP_DEFAULT_SPOOL_MAX_MB 256
#define CONFIG_OTLP_ATTRS 16

struct config {
	char db[PATH_MAX];
	/* db_group: this group may read the database (files 0640); -1: root only (0600) */
	gid_t db_gid;
	int retain_days;
	int max_db_mb;
	char instance_type[128];
	char worker_pool[128];
	char phase_begin_marker[64]; /* an output line "MARKER name" begins a phase */
	char phase_end_marker[64];
	struct http_ports http_ports;  /* refused/timed-out connects there are HTTP failures */
	char listen[128];	       /* the daemon's HTTP API, ADDR:PORT, or "off" */
	char api_token[257];	       /* required of every API request when set */
	int max_tasks;		       /* the daemon's tasks at once (its BPF slot table) */
	char metrics_label[64];	       /* a task label /metrics sums by too ("": none) */
	char pin_dir[PATH_MAX];	       /* the daemon's BPF pins, on a bpffs, or "off" */
	char perfherder_framework[64]; /* the Perfherder artifact's framework (Treeherder's) */
	/* otlp_attribute ATTR = LABEL: the task label an OTLP span attribute takes */
	struct {
		char attr[64];
		char label[64];
	} otlp_attrs[CONFIG_OTLP_ATTRS];
	int notlp_attrs;
	/* an OpenTelemetry collector's OTLP/HTTP base URL (/v1/traces appended), "": off */
	char otlp_endpoint[1024];
	char otlp_headers_file[PATH_MAX]; /* "Name: value" lines sent with each export */
	char otlp_ca_file
		[PATH_MAX]; /* PEM CAs an https endpoint is checked against ("": the system's) */
	bool otlp_metrics;  /* the figures as OTLP metrics too (opt-in) */
	unsigned collect;   /* what the collector collects (collect.h) */
	char sink[1024];    /* the fleet's PostgreSQL (libpq URI or conninfo), "": off */
	char sink_passfile[PATH_MAX]; /* a .pgpass file for it ("": PGPASSFILE, ~/.pgpass) */
	int sink_retain_days;	      /* the fleet's tasks older than this go (0: all stay) */
	int spool_max_mb;	      /* each spool directory's bound (spool.h) */
	/* a collector that cannot work fails `run` (125) instead of running CMD unmeasured */
	bool strict;
	bool keep_tasks; /* the daemon's SIGTERM hands its tasks over (daemon --keep-tasks) */
};

void config__defaults(struct config *c);
/*
 * Reads path over the defaults. A missing file is fine unless required; a bad line
 * prints "taskprobe: FILE:LINE: problem" and returns -EINVAL.
 */
int config__load(struct config *c, const char *path, int required);
/*
 * The defaults, then the config a --config option names (required), or else
 * TP_DEFAULT_CONFIG if there is one: 0, or -EINVAL once its line is said.
 */
int config__read(struct config *c, const char *option);
/* Parses text as if it were the file path (for tests and the fuzzer). */
int config__parse(struct config *c, const char *path, const char *text);

#endif /* TP_CONFIG_H */
