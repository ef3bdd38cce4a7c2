/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The queries' JSON, one writer per row kind: `list`, `hist`, `count --json` and the
 * daemon's HTTP API print the same objects from the same store rows.
 */
#ifndef TP_QUERY_H
#define TP_QUERY_H

#include <stdbool.h>

#include "base/json.h"
#include "model/config.h"
#include "model/series.h"
#include "store/store.h"

/*
 * The store the queries read, read-only: db, else TASKPROBE_DB, else the config's
 * (config, else the default file). NULL with the reason said.
 */
struct store *query_open_store(const char *db, const char *config);
/* The same, and the config it read (which --config names, or the default one). */
struct store *query_open_store_cfg(const char *db, const char *config, struct config *out);
/* A task's labels as the store has them (the host's too: host, ncpu, ...). */
struct query_label {
	char *key;
	char *val;
};

#define QUERY_LABELS_MAX 128

/* A stored task as the exports read it: its record parsed, its series decoded. */
struct query_task {
	struct store *s;
	struct store_task st;
	struct json *rec; /* NULL while the task runs */
	struct series_point *pts;
	size_t n;
	struct query_label labels[QUERY_LABELS_MAX]; /* the first QUERY_LABELS_MAX */
	int nlabels;
	struct config cfg; /* the config the store was opened by */
};

/* The value of the label key among n labels, or NULL. */
const char *query_label(const struct query_label *l, int n, const char *key);

/*
 * The newest stored task id of a host matching host (NULL: any; store opened as
 * query_open_store does), its series, and
 * its record unless need_record is false and it has none yet: 0, or -1 after one line
 * "WHO: why". query_task__free() in either case.
 */
int query_task__load(struct query_task *q, const char *db, const char *config, const char *id,
		     const char *host, bool need_record, const char *who);
/*
 * store__find, and the line a person needs: no such task ("WHO: ...", or without the
 * prefix when who is NULL), or which host's task this is when more than one host has
 * the id and host (a glob) did not choose.
 */
int query_find_task(struct store *s, const char *id, const char *host, struct store_task *t,
		    const char *who);
void query_task__free(struct query_task *q);
/*
 * The ended task tid of the open local store s, its record and labels (not its
 * series), as the shippers read it: 0, or -errno (-ENOENT: no record). q does not own
 * s; query_task__free() in either case.
 */
int query_task__of(struct query_task *q, struct store *s, __s64 tid);
/* One task of a list: id, host, status, start, start_ns, wall_ns, exit_status, cpu, command. */
void query_json_task(struct jw *w, const struct store_task_row *r);
/* A histogram as a member of an object (its name the key): unit, count, sum, p50, p99. */
void query_json_hist(struct jw *w, const struct store_hist_row *r);
/* One group of a count: value, tasks, sum. */
void query_json_group(struct jw *w, const struct store_count_row *r);
/* Metric and label names: 1 to 200 of A-Z a-z 0-9 _ . - */
bool query_valid_name(const char *s);
/*
 * A --host glob (* ? [...], as SQLite's GLOB): 1 to 253 characters, every '[' closed
 * (']' first in a set, or after '^', is a member). Else false with why said.
 */
#define QUERY_GLOB_MAX 253
bool query_valid_glob(const char *g, const char **why);
/* query_valid_glob for WHO's --host, said in one line when it is not: true if valid. */
bool query_host_option(const char *who, const char *g);
/* The name of phase number i (1-based) of a record's phases, or "#i" when not known. */
const char *query_phase_at(const struct json *phases, size_t i, char *buf, size_t len);
/*
 * A task's series at points buckets (bk, from series_buckets) over its life, each
 * with min, mean and max of every field and the phase open then; then its phases'
 * intervals and its notable events, from its record (NULL: none yet).
 */
void query_json_series(struct jw *w, const char *id, const struct store_task *t,
		       const struct json *rec, size_t samples, const struct series_bucket *bk,
		       int points);
/* A stored histogram's name, from its own or the short one a user may type. */
const char *query_hist_name(const char *name);

#endif /* TP_QUERY_H */
