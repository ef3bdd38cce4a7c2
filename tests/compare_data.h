/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tasks that the stats and compare tests store (compare_data.c), and the figures
 * they expect, worked out from the same table without the store.
 */
#ifndef TP_COMPARE_DATA_H
#define TP_COMPARE_DATA_H

#include <stdbool.h>
#include <stddef.h>

struct store;

#define CD_TASKS 12
/* The task compared: build, with a phase no earlier task ran. */
#define CD_TARGET "b-target"

enum cd_field { CD_CPU, CD_WALL, CD_CORES, CD_PHASE_CPU };

/* A new store at path with the table's tasks in it (NULL and a failed check when not). */
struct store *cd_store(const char *path);
/*
 * The field of the tasks that ran to their end, in order of start, with label job
 * (NULL: any task); history: only those compare reads for CD_TARGET (started before
 * it ended, itself left out; for CD_PHASE_CPU those that ran its phase compile).
 */
size_t cd_values(double *out, const char *job, enum cd_field field, bool history);
/* Sorted copy (the caller frees it). */
double *cd_sorted(const double *v, size_t n);
/* The q-quantile as PostgreSQL's documentation defines percentile_cont, done here apart. */
double cd_pct(const double *sorted, size_t n, double q);

#endif /* TP_COMPARE_DATA_H */
