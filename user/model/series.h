/* SPDX-License-Identifier: GPL-2.0 */
/* Time series of a task: samples, their compact encoding, and fixed-bucket downsampling. */
#ifndef TP_SERIES_H
#define TP_SERIES_H

#include <stddef.h>
#include <linux/types.h>

#define SERIES_FIELDS 9
#define SERIES_PHASE 5	    /* the field holding the phase open at the sample */
#define SERIES_HOST_OTHER 8 /* the rest of the host's CPU, millicores */

/* One sample: integers, so that blocks encode as small deltas. */
struct series_point {
	__u64 t_ms;		/* since the task started */
	__s64 v[SERIES_FIELDS]; /* see series_field_names */
};

/*
 * cpu millicores, resident bytes, disk read B/s, disk write B/s, processes alive, the
 * innermost phase open then (1 + its index in the record's phases; 0: none), TCP
 * payload received and sent, B/s, and the CPU the rest of the host used, millicores
 */
extern const char *const series_field_names[SERIES_FIELDS];

/*
 * Column-major zigzag-varint deltas, then zlib: *out is malloc'd. Memory is kept to
 * 4 KiB and disk and network rates to 1 KiB/s.
 */
int series_encode(const struct series_point *p, size_t n, void **out, size_t *len);
/* Appends the decoded points of one block to *pts (realloc'd), *n updated. */
int series_decode(const void *blob, size_t len, struct series_point **pts, size_t *n);

struct series_bucket {
	__u64 t_ms; /* start of the bucket */
	size_t count;
	double min[SERIES_FIELDS];
	double mean[SERIES_FIELDS];
	double max[SERIES_FIELDS];
};

/*
 * Always npoints buckets over [0, span_ms): each sample goes to the bucket of its
 * time, so a one-sample spike survives in max. Empty buckets have count 0.
 */
int series_buckets(const struct series_point *p, size_t n, __u64 span_ms, int npoints,
		   struct series_bucket *out);

#endif /* TP_SERIES_H */
