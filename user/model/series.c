// SPDX-License-Identifier: GPL-2.0
/* Time series of a task: samples, their compact encoding, and fixed-bucket downsampling. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "model/series.h"

#define SERIES_MAGIC 0x34535054u    /* "TPS4": nine fields */
#define SERIES_MAGIC_V3 0x33535054u /* "TPS3": eight, no host; still read */
#define SERIES_MAGIC_V2 0x32535054u /* "TPS2": six, no network; still read */
#define SERIES_MAGIC_V1 0x31535054u /* "TPS1": five, no phase; still read */
#define SERIES_MAX_POINTS (1u << 20)

/*
 * Stored precision per field: memory in 4 KiB pages, disk and network rates in KiB/s. Finer
 * digits are noise that costs bytes; decoding multiplies back.
 */
static const __s64 field_scale[SERIES_FIELDS] = { 1, 4096, 1024, 1024, 1, 1, 1024, 1024, 1 };

const char *const series_field_names[SERIES_FIELDS] = {
	"cpu_millicores",
	"mem_bytes",
	"read_bytes_per_s",
	"write_bytes_per_s",
	"procs",
	"phase",
	"net_rx_bytes_per_s",
	"net_tx_bytes_per_s",
	"host_other_millicores",
};

static size_t put_varint(unsigned char *o, __u64 v)
{
	size_t n = 0;

	while (v >= 0x80) {
		o[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	o[n++] = (unsigned char)v;
	return n;
}

static int get_varint(const unsigned char **p, const unsigned char *end, __u64 *v)
{
	__u64 r = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -EINVAL;
		r |= (__u64)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -EINVAL;
}

static __u64 zigzag(__s64 v)
{
	return ((__u64)v << 1) ^ (__u64)(v >> 63);
}

static __s64 unzigzag(__u64 v)
{
	return (__s64)(v >> 1) ^ -(__s64)(v & 1);
}

int series_encode(const struct series_point *p, size_t n, void **out, size_t *len)
{
	size_t raw_cap = 16 + n * (SERIES_FIELDS + 1) * 10, raw_len = 0;
	unsigned char *raw = malloc(raw_cap), *z;
	__u32 hdr[2];
	uLongf zlen;
	__s64 prev;

	if (!raw)
		return -ENOMEM;
	raw_len += put_varint(raw + raw_len, n);
	/* Times as the change of the step: a steady interval encodes as zeros. */
	prev = 0;
	for (size_t i = 0; i < n; i++) {
		__s64 step = (__s64)p[i].t_ms - (i ? (__s64)p[i - 1].t_ms : 0);

		raw_len += put_varint(raw + raw_len, zigzag(step - prev));
		prev = step;
	}
	for (int f = 0; f < SERIES_FIELDS; f++) {
		prev = 0;
		for (size_t i = 0; i < n; i++) {
			__s64 v = (p[i].v[f] + field_scale[f] / 2) / field_scale[f];

			raw_len += put_varint(raw + raw_len, zigzag(v - prev));
			prev = v;
		}
	}
	zlen = compressBound(raw_len) + 8;
	z = malloc(zlen);
	if (!z) {
		free(raw);
		return -ENOMEM;
	}
	/* 8-byte header: magic, raw length (host order); then the zlib stream. */
	hdr[0] = SERIES_MAGIC;
	hdr[1] = (__u32)raw_len;
	memcpy(z, hdr, sizeof(hdr));
	zlen -= 8;
	if (compress2(z + 8, &zlen, raw, raw_len, Z_BEST_COMPRESSION) != Z_OK) {
		free(raw);
		free(z);
		return -EIO;
	}
	free(raw);
	*out = z;
	*len = zlen + 8;
	return 0;
}

int series_decode(const void *blob, size_t len, struct series_point **pts, size_t *n)
{
	const unsigned char *b = blob, *p, *end;
	unsigned char *raw;
	struct series_point *np;
	uLongf raw_len;
	__u32 hdr[2];
	int fields;
	__u64 count, v;
	__s64 prev;
	int err = -EINVAL;

	if (len < 8)
		return -EINVAL;
	memcpy(hdr, b, sizeof(hdr));
	if (hdr[0] == SERIES_MAGIC)
		fields = SERIES_FIELDS;
	else if (hdr[0] == SERIES_MAGIC_V3)
		fields = 8;
	else if (hdr[0] == SERIES_MAGIC_V2)
		fields = 6;
	else if (hdr[0] == SERIES_MAGIC_V1)
		fields = 5;
	else
		return -EINVAL;
	raw_len = hdr[1];
	if (raw_len > (uLongf)SERIES_MAX_POINTS * (SERIES_FIELDS + 1) * 10 + 16)
		return -EINVAL;
	raw = malloc(raw_len ? raw_len : 1);
	if (!raw)
		return -ENOMEM;
	if (uncompress(raw, &raw_len, b + 8, len - 8) != Z_OK)
		goto out;
	p = raw;
	end = raw + raw_len;
	if (get_varint(&p, end, &count) || count > SERIES_MAX_POINTS)
		goto out;
	np = realloc(*pts, (*n + count) * sizeof(**pts) + 1);
	if (!np) {
		err = -ENOMEM;
		goto out;
	}
	*pts = np;
	np += *n;
	prev = 0;
	for (__u64 i = 0, t = 0; i < count; i++) {
		if (get_varint(&p, end, &v))
			goto out;
		prev += unzigzag(v);
		t += (__u64)prev;
		np[i].t_ms = t;
	}
	for (int f = 0; f < SERIES_FIELDS; f++) {
		prev = 0;
		for (__u64 i = 0; i < count; i++) {
			if (f >= fields) {
				np[i].v[f] = 0;
				continue;
			}
			if (get_varint(&p, end, &v))
				goto out;
			prev += unzigzag(v);
			np[i].v[f] = prev * field_scale[f];
		}
	}
	*n += count;
	err = 0;
out:
	free(raw);
	return err;
}

int series_buckets(const struct series_point *p, size_t n, __u64 span_ms, int npoints,
		   struct series_bucket *out)
{
	if (npoints <= 0)
		return -EINVAL;
	if (!span_ms)
		span_ms = 1;
	memset(out, 0, (size_t)npoints * sizeof(*out));
	for (int b = 0; b < npoints; b++)
		out[b].t_ms = span_ms * (__u64)b / (__u64)npoints;
	for (size_t i = 0; i < n; i++) {
		__u64 b = p[i].t_ms >= span_ms ? (__u64)npoints - 1
					       : p[i].t_ms * (__u64)npoints / span_ms;
		struct series_bucket *o = &out[b];

		for (int f = 0; f < SERIES_FIELDS; f++) {
			double v = (double)p[i].v[f];

			if (!o->count || v < o->min[f])
				o->min[f] = v;
			if (!o->count || v > o->max[f])
				o->max[f] = v;
			o->mean[f] += v;
		}
		o->count++;
	}
	for (int b = 0; b < npoints; b++)
		for (int f = 0; f < SERIES_FIELDS && out[b].count; f++)
			out[b].mean[f] /= (double)out[b].count;
	return 0;
}
