/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Quantiles of a set of values, defined as PostgreSQL's percentile_cont defines them,
 * so that a local store and the fleet's give the same figures for the same tasks.
 */
#ifndef TP_QUANTILE_H
#define TP_QUANTILE_H

#include <stddef.h>

/* Sorts n values ascending. */
void quantile_sort(double *v, size_t n);
/*
 * The q-quantile (0 <= q <= 1) of n values sorted ascending: at rank q * (n - 1),
 * linear between the two closest ranks, computed as percentile_cont does it (the
 * same operations in the same order, so the same double). NAN when n is 0.
 */
double quantile_cont(const double *sorted, size_t n, double q);

#endif /* TP_QUANTILE_H */
