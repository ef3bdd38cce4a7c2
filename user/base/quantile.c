// SPDX-License-Identifier: GPL-2.0
/* percentile_cont's quantiles in C (quantile.h). */
#include <math.h>
#include <stdlib.h>

#include "base/quantile.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void quantile_sort(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_double);
}

/*
 * PostgreSQL's percentile_cont_final_common: first and second row are the floor and
 * ceiling of q * (n - 1); equal rows give that row's value, else
 * first + proportion * (second - first) (float8_lerp).
 */
double quantile_cont(const double *sorted, size_t n, double q)
{
	double pos, lo, hi, a;
	/* Rounded apart, never fused into one multiply-add (as some targets would). */
	volatile double step;

	if (!n)
		return NAN;
	pos = q * (double)(n - 1);
	lo = floor(pos);
	hi = ceil(pos);
	a = sorted[(size_t)lo];
	if (lo == hi)
		return a;
	step = (pos - lo) * (sorted[(size_t)hi] - a);
	return a + step;
}
