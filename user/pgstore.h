/* SPDX-License-Identifier: GPL-2.0 */
/* The store's queries over a fleet's PostgreSQL (sink.h): store.c calls these for it. */
#ifndef TP_PGSTORE_H
#define TP_PGSTORE_H

#include "sink.h"
#include "store.h"

int pgstore__list(struct sink *k, const struct store_filter *f, long limit, store_task_fn fn,
		  void *ctx);
int pgstore__find(struct sink *k, const char *id, const char *host, struct store_task *t);
int pgstore__histograms(struct sink *k, __s64 tid, const char *name, store_hist_fn fn, void *ctx);
int pgstore__series(struct sink *k, __s64 tid, struct series_point **pts, size_t *n, int *damaged);
int pgstore__labels(struct sink *k, __s64 tid, store_label_fn fn, void *ctx);
int pgstore__has_metric(struct sink *k, const char *metric);
int pgstore__count(struct sink *k, const char *metric, const struct store_filter *f, const char *by,
		   const char *host, store_count_fn fn, void *ctx);
/* A glob (* ? [...], as SQLite's GLOB) as an anchored POSIX regular expression. */
int pgstore_glob_regex(const char *glob, char *out, size_t len);
/* A glob without a [set] as a LIKE pattern (escape \\); -EINVAL for one with a set. */
int pgstore_glob_like(const char *glob, char *out, size_t len);

#endif /* TP_PGSTORE_H */
