/* SPDX-License-Identifier: GPL-2.0 */
/* An open-addressing hash table from u64 keys to fixed-size values, for userspace aggregates. */
#ifndef TP_HTAB_H
#define TP_HTAB_H

#include <stddef.h>
#include <linux/types.h>

struct htab {
	__u64 *keys;
	unsigned char *used;
	char *vals;
	size_t val_size;
	size_t cap;
	size_t len;
};

int htab__init(struct htab *h, size_t val_size);
void htab__fini(struct htab *h);
void *htab__get(const struct htab *h, __u64 key);
/* The value for key, inserted zeroed when absent; NULL on ENOMEM. */
void *htab__put(struct htab *h, __u64 key);
void htab__del(struct htab *h, __u64 key);
/* The next entry from *pos on (start at 0), its key in *key; NULL past the last. */
void *htab__next(const struct htab *h, size_t *pos, __u64 *key);

__u64 tp_hash_str(const char *s);

#endif /* TP_HTAB_H */
