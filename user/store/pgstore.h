/* SPDX-License-Identifier: GPL-2.0 */
/* The store's queries over a fleet's PostgreSQL (sink.h): a backend of store.h's. */
#ifndef TP_PGSTORE_H
#define TP_PGSTORE_H

#include <stddef.h>

#include "store/store_api.h"

/* The fleet's queries, answered from its PostgreSQL: read-only, no totals or statuses. */
extern const struct store_ops pgstore_ops;
/*
 * Connects to the fleet's PostgreSQL: the state for pgstore_ops, its name in name; NULL
 * after one "taskprobe:" line.
 */
void *pgstore_open(const char *conninfo, const char *passfile, char *name, size_t len);
/* A glob (* ? [...], as SQLite's GLOB) as an anchored POSIX regular expression. */
int pgstore_glob_regex(const char *glob, char *out, size_t len);
/* A glob without a [set] as a LIKE pattern (escape \\); -EINVAL for one with a set. */
int pgstore_glob_like(const char *glob, char *out, size_t len);

#endif /* TP_PGSTORE_H */
